# quo/: the libquo-compatible library, built once per MPI like the runtime. Included by the top
# Makefile, which builds $(QUO_TARGETS) as part of `all`.
#
#   build/lib/libquo-<mpi>.so             the C library (soname libquo-<mpi>.so)
#   build/lib/libquo-usequo-<mpi>.so      the Fortran module's code; quo.mod in build/<mpi>/quo/mod
#   build/<mpi>/lib/libquo.so             link name for -lquo (symlink), as libquo installs it
#   build/<mpi>/lib/pkgconfig/libquo.pc   `pkg-config libquo` with PKG_CONFIG_PATH=build/<mpi>/lib/pkgconfig
#   build/lib/pkgconfig/libquo-<mpi>.pc   the same under an MPI-specific name
#   build/<mpi>/bin/quo-info              build and link flags, build configuration
#   build/<mpi>/quo/*                     tests, examples and benchmarks

QUO_DIR := quo
QUO_CFLAGS := -std=c11 -D_GNU_SOURCE -O2 -g -fPIC -Wall -Wextra -I$(QUO_DIR)/include
QUO_LIB_SRC := $(QUO_DIR)/src/quo.c $(QUO_DIR)/src/quo-topo.c
QUO_LIB_HDR := $(QUO_DIR)/include/quo.h $(QUO_DIR)/src/quo-topo.h
QUO_PROGRAMS := quo-probe quo-demo coupled quo-time mem-trivial mem-quo
QUO_ABS_BUILD := $(abspath $(BUILD))
QUO_ABS_INC := $(abspath $(QUO_DIR)/include)

QUO_TARGETS := $(foreach m,$(MPIS),$(BUILD)/lib/libquo-$(m).so $(BUILD)/lib/libquo-usequo-$(m).so \
    $(BUILD)/$(m)/lib/libquo.so $(BUILD)/$(m)/lib/pkgconfig/libquo.pc $(BUILD)/lib/pkgconfig/libquo-$(m).pc \
    $(BUILD)/$(m)/bin/quo-info $(addprefix $(BUILD)/$(m)/quo/,$(QUO_PROGRAMS) quo-fortran)) \
    $(BUILD)/quo/test-topo

# link flags a program needs for one MPI's libquo (what the .pc file and quo-info --libs say)
quo_libs = -L$(QUO_ABS_BUILD)/$(1)/lib -Wl,-rpath,$(QUO_ABS_BUILD)/lib -lquo
quo_flibs = -L$(QUO_ABS_BUILD)/lib -Wl,-rpath,$(QUO_ABS_BUILD)/lib -lquo-usequo-$(1)

define quo_rules
$(BUILD)/lib/libquo-$(1).so: $(QUO_LIB_SRC) $(QUO_LIB_HDR) $(QUO_DIR)/quo.mk
	@mkdir -p $$(dir $$@)
	mpicc.$(1) $(QUO_CFLAGS) -fvisibility=hidden -shared -Wl,-soname,libquo-$(1).so -o $$@ $(QUO_LIB_SRC) -lhwloc -lpthread

$(BUILD)/$(1)/lib/libquo.so: $(BUILD)/lib/libquo-$(1).so
	@mkdir -p $$(dir $$@)
	ln -sf ../../lib/libquo-$(1).so $$@

$(BUILD)/lib/libquo-usequo-$(1).so: $(QUO_DIR)/fortran/quo.f90 $(BUILD)/lib/libquo-$(1).so
	@mkdir -p $(BUILD)/$(1)/quo/mod
	mpifort.$(1) -O2 -g -fPIC -Wall -shared -J $(BUILD)/$(1)/quo/mod -o $$@ $$< -L$(BUILD)/lib -Wl,-rpath,$(QUO_ABS_BUILD)/lib -lquo-$(1)

$(BUILD)/$(1)/lib/pkgconfig/libquo.pc $(BUILD)/lib/pkgconfig/libquo-$(1).pc: $(QUO_DIR)/quo.mk VERSION
	@mkdir -p $$(dir $$@)
	@printf '%s\n' 'prefix=$(QUO_ABS_BUILD)' 'includedir=$(QUO_ABS_INC)' '' \
	  'Name: libquo' 'Description: QUO API 1.4 (mpilens, built for $(1)): dynamic process affinity for MPI+threads' \
	  'Version: 1.4.1' 'Cflags: -I$$$${includedir}' 'Libs: $(call quo_libs,$(1))' 'Libs.private: -lhwloc -lpthread' > $$@

$(BUILD)/$(1)/bin/quo-info: $(QUO_DIR)/tools/quo-info.c $(BUILD)/$(1)/lib/libquo.so VERSION
	@mkdir -p $$(dir $$@)
	mpicc.$(1) $(QUO_CFLAGS) -o $$@ $$< \
	  -DQUO_INFO_PREFIX='"$(QUO_ABS_BUILD)"' -DQUO_INFO_CFLAGS='"-I$(QUO_ABS_INC)"' \
	  -DQUO_INFO_LIBS='"$(call quo_libs,$(1))"' -DQUO_INFO_FLIBS='"$(call quo_flibs,$(1))"' \
	  -DQUO_INFO_MODDIR='"$(QUO_ABS_BUILD)/$(1)/quo/mod"' -DQUO_INFO_MPI='"$(1)"' -DQUO_INFO_VERSION='"$(VERSION)"' \
	  -DQUO_INFO_CC='"mpicc.$(1)"' -DQUO_INFO_FC='"mpifort.$(1)"' -DQUO_INFO_BUILD_CFLAGS='"$(QUO_CFLAGS)"' \
	  $(call quo_libs,$(1)) -lhwloc

$(BUILD)/$(1)/quo/%: $(QUO_DIR)/tests/%.c $(BUILD)/$(1)/lib/libquo.so
	@mkdir -p $$(dir $$@)
	mpicc.$(1) $(QUO_CFLAGS) -o $$@ $$< $(call quo_libs,$(1))

$(BUILD)/$(1)/quo/%: $(QUO_DIR)/examples/%.c $(BUILD)/$(1)/lib/libquo.so
	@mkdir -p $$(dir $$@)
	mpicc.$(1) $(QUO_CFLAGS) -fopenmp -o $$@ $$< $(call quo_libs,$(1)) -lm

$(BUILD)/$(1)/quo/%: $(QUO_DIR)/bench/%.c $(QUO_DIR)/bench/footprint.h $(BUILD)/$(1)/lib/libquo.so
	@mkdir -p $$(dir $$@)
	mpicc.$(1) $(QUO_CFLAGS) -o $$@ $$< $(call quo_libs,$(1))

# the baseline of the footprint measurement must not load libquo at all
$(BUILD)/$(1)/quo/mem-trivial: $(QUO_DIR)/bench/mem-trivial.c $(QUO_DIR)/bench/footprint.h
	@mkdir -p $$(dir $$@)
	mpicc.$(1) $(QUO_CFLAGS) -o $$@ $$<

$(BUILD)/$(1)/quo/quo-fortran: $(QUO_DIR)/tests/quo-fortran.f90 $(BUILD)/lib/libquo-usequo-$(1).so $(BUILD)/$(1)/lib/libquo.so
	@mkdir -p $$(dir $$@)
	mpifort.$(1) -O2 -g -Wall -I$(BUILD)/$(1)/quo/mod -J $(BUILD)/$(1)/quo -o $$@ $$< $(call quo_flibs,$(1)) $(call quo_libs,$(1))
endef
$(foreach m,$(MPIS),$(eval $(call quo_rules,$(m))))

# topology and distribution unit tests: hwloc only, run on synthetic machines, no MPI launch
$(BUILD)/quo/test-topo: $(QUO_DIR)/tests/test-topo.c $(QUO_DIR)/src/quo-topo.c $(QUO_LIB_HDR)
	@mkdir -p $(dir $@)
	mpicc.openmpi $(QUO_CFLAGS) -I$(QUO_DIR)/src -o $@ $< $(QUO_DIR)/src/quo-topo.c -lhwloc
