# The measuring runtime: one library per MPI family, its helper programs, and the two MPI-free
# libraries. The top Makefile includes this file for the checkout's own MPIs; the installs run it
# alone, from the source tree's root, for the MPI compiler a user has:
#
#   make -f runtime/runtime.mk MPICC=mpicc BUILD=DIR GEN_PYTHON=python3
#
# (pip's build, `make install`, and `mpilens runtime add`). GEN_PYTHON runs the generator
# (runtime/gen: PyYAML and pympistandard). What it makes under BUILD, the layout every install
# keeps (python/mpilens/build_info.py finds a runtime there):
#
#   lib/libmpilens-<family>.so                  the runtime preloaded into the job (family: openmpi,
#                                               mpich or abi, runtime/gen/mpicc_probe.py)
#   lib/libmpilens-memory.so                    memory mode's interposer of malloc & co
#   lib/libmpilens-annotate.so                  the annotation API's stubs, for programs to link
#   libexec/mpilens/<family>/mpilens-check      the settings' checker, built against that MPI
#   libexec/mpilens/<family>/mpilens-mpit       the MPI_T variables' lister
#   libexec/mpilens/<family>/runtime.json       which MPI and which compiler built it
#   libexec/mpilens/<family>/wrapped.txt        the generator's account of what it wrapped and why not
#   <family>/gen, <family>/obj, <family>/mpicc  the generated wrappers, the objects, the compiler
#                                               wrapper they were made with

BUILD ?= build
GEN_PYTHON ?= python3
# what the generator needs before it can run (the top Makefile: its venv)
GEN_DEPS ?=
VERSION ?= $(shell cat VERSION)

ifndef RUNTIMES
# alone: one runtime, for the family MPICC's mpi.h says (the top Makefile sets RUNTIMES itself)
MPICC ?= mpicc
RUNTIMES := $(shell $(GEN_PYTHON) runtime/gen/mpicc_probe.py '$(MPICC)')
ifeq ($(RUNTIMES),)
$(error mpilens: no runtime can be built with MPICC=$(MPICC) (the line above says why))
endif
CC_$(RUNTIMES) := $(MPICC)
ifeq ($(MAKELEVEL),0)
MAKEFLAGS += -j$(shell nproc)
endif
runtime-alone: runtime
endif

CFLAGS := -std=c11 -D_GNU_SOURCE -O2 -g -fPIC -fvisibility=hidden -Wall -Wextra -Wno-unused-parameter \
          -DML_VERSION='"$(VERSION)"'
# the runtime loaded into MPI processes, on x86-64: a call's arguments past the sixth stored into the
# frame instead of pushed and popped, 3 instructions fewer around each wrapped MPI_Isend or
# MPI_Irecv (7 arguments; bench/hotpath.py: 6 per send + receive pair)
LIB_CFLAGS := $(if $(filter x86_64,$(shell uname -m)),-maccumulate-outgoing-args)
# runtime/src: core/ (the process's life, settings, statistics, requests, the profile's files),
# calls/ (the hand-written wrappers and the per-call dispatch), modes/<mode>/ (one folder per mode,
# and modes.c, their table), tools/ (the helper programs). Sources include headers by name, from
# any of these folders.
RUNTIME_DIRS := $(sort $(dir $(wildcard runtime/src/*/*.[ch] runtime/src/*/*/*.[ch])))
RUNTIME_INC := $(patsubst %/,-I%,$(RUNTIME_DIRS))
RUNTIME_SRC := $(wildcard runtime/src/*/*.c runtime/src/*/*/*.c)
RUNTIME_HDR := $(wildcard runtime/src/*/*.h runtime/src/*/*/*.h) runtime/include/mpilens.h
LIB_SRC := $(filter-out runtime/src/tools/% runtime/src/modes/memory/memory_interpose.c,$(RUNTIME_SRC))
GEN_INPUT := runtime/spec/semantics.yaml runtime/spec/config.yaml runtime/spec/rundir.yaml \
             $(filter-out runtime/gen/mpicc_probe.py,$(wildcard runtime/gen/*.py))
# the run directory's layouts, generated from runtime/spec/rundir.yaml for C, Python and the docs
RUNDIR_GEN := runtime/spec/rundir.yaml runtime/gen/rundir.py
RUNDIR_H := $(BUILD)/gen/ml_rundir.h
HELPERS := $(BUILD)/libexec/mpilens

.PHONY: runtime runtime-alone FORCE
.DELETE_ON_ERROR:
.SECONDARY:

runtime: $(foreach m,$(RUNTIMES),$(BUILD)/lib/libmpilens-$(m).so $(addprefix $(HELPERS)/$(m)/,mpilens-check mpilens-mpit runtime.json wrapped.txt)) \
         $(BUILD)/lib/libmpilens-annotate.so $(BUILD)/lib/libmpilens-memory.so

$(RUNDIR_H): $(RUNDIR_GEN) $(GEN_DEPS)
	@mkdir -p $(dir $@)
	$(GEN_PYTHON) runtime/gen/rundir.py --c $@

# each family's build remembers the compiler wrapper it was made with (resolved): another one, even
# of the same family, makes everything of that family again
$(BUILD)/%/mpicc: FORCE
	@mkdir -p $(dir $@)
	@echo '$(realpath $(firstword $(shell command -v $(firstword $(CC_$*)))))' $(wordlist 2,99,$(CC_$*)) | cmp -s - $@ \
	  || echo '$(realpath $(firstword $(shell command -v $(firstword $(CC_$*)))))' $(wordlist 2,99,$(CC_$*)) > $@

$(BUILD)/%/gen/wrappers_c.c: $(GEN_INPUT) $(GEN_DEPS) $(RUNDIR_H) $(BUILD)/%/mpicc
	@mkdir -p $(dir $@)
	$(GEN_PYTHON) runtime/gen/generate.py --mpi $* --cc '$(CC_$*)' --spec runtime/spec --out $(dir $@)

# The runtime links no MPI library (runtime/gen/binding.py): every PMPI function and mpi.h variable
# is reached through ml_pmpi.h's pointers, bound to the MPI the process loaded. --as-needed drops
# the library mpicc adds; tests/test_binding.py checks none is left.
BIND = -include $(BUILD)/$*/gen/ml_pmpi.h
# one object per source (the generated wrappers take most of the build: compiled side by side);
# the generated ones with line tables only (-g1: a fifth less compile time, and a debugger still
# shows where a wrapper is)
GEN_CFLAGS := -g1
GEN_SRC := wrappers_c wrappers_c_hot wrappers_f wrappers_f_hot ml_functions ml_config_table ml_pmpi ml_pmpi_entries
# the wrappers off the hot path (runtime/gen/generate.py HOT_CLASSES: all but point-to-point,
# completion and probe) at -O1: 28 s of compiling per runtime instead of 44 here, for a few
# instructions more in a call that costs microseconds; the hot path's keep -O2 and its
# instruction counts (bench/hotpath.py --compare)
GEN_OPT_wrappers_c := -O1
GEN_OPT_wrappers_f := -O1
lib_objects = $(patsubst runtime/src/%.c,$(BUILD)/$(1)/obj/%.o,$(LIB_SRC)) $(foreach g,$(GEN_SRC),$(BUILD)/$(1)/obj/gen-$(g).o)
define runtime_rules
$(BUILD)/$(1)/obj/%.o: runtime/src/%.c $(RUNTIME_HDR) $(RUNDIR_H) $(BUILD)/$(1)/gen/wrappers_c.c
	@mkdir -p $$(dir $$@)
	$(CC_$(1)) $(CFLAGS) $(LIB_CFLAGS) -include $(BUILD)/$(1)/gen/ml_pmpi.h $(RUNTIME_INC) -Iruntime/include \
	  -I$(BUILD)/$(1)/gen -I$(BUILD)/gen -c -o $$@ $$<
$(BUILD)/$(1)/obj/gen-%.o: $(BUILD)/$(1)/gen/wrappers_c.c $(RUNTIME_HDR) $(RUNDIR_H)
	@mkdir -p $$(dir $$@)
	$(CC_$(1)) $(CFLAGS) $(GEN_CFLAGS) $$(GEN_OPT_$$*) $(LIB_CFLAGS) -include $(BUILD)/$(1)/gen/ml_pmpi.h $(RUNTIME_INC) -Iruntime/include \
	  -I$(BUILD)/$(1)/gen -I$(BUILD)/gen -c -o $$@ $(BUILD)/$(1)/gen/$$*.c
$(BUILD)/lib/libmpilens-$(1).so: $(call lib_objects,$(1))
	@mkdir -p $$(dir $$@)
	$(CC_$(1)) -shared -Wl,--as-needed -o $$@ $$^ -ldl -lpthread -lm

$(HELPERS)/$(1)/mpilens-check: runtime/src/tools/check.c runtime/src/core/config.c runtime/src/modes/settings_checks.c \
                               runtime/src/modes/trace/trace_filter.c runtime/src/modes/trace/ml_trace_filter.h runtime/src/modes/mpit/mpit_common.c \
                               runtime/src/modes/mpit/mpit_common.h $(BUILD)/$(1)/gen/wrappers_c.c $(RUNDIR_H)
	@mkdir -p $$(dir $$@)
	$(CC_$(1)) $(CFLAGS) $(RUNTIME_INC) -I$(BUILD)/$(1)/gen -I$(BUILD)/gen -o $$@ runtime/src/tools/check.c runtime/src/core/config.c \
	  runtime/src/modes/settings_checks.c runtime/src/modes/trace/trace_filter.c runtime/src/modes/mpit/mpit_common.c $(BUILD)/$(1)/gen/ml_config_table.c \
	  $(BUILD)/$(1)/gen/ml_functions.c -lm

# mpilens-mpit: lists the MPI_T variables of one MPI as JSON (`mpilens mpit list`)
$(HELPERS)/$(1)/mpilens-mpit: runtime/src/tools/mpit_list.c runtime/src/modes/mpit/mpit_common.c \
                               runtime/src/modes/mpit/mpit_common.h
	@mkdir -p $$(dir $$@)
	$(CC_$(1)) $(CFLAGS) $(RUNTIME_INC) -o $$@ runtime/src/tools/mpit_list.c runtime/src/modes/mpit/mpit_common.c

$(HELPERS)/$(1)/runtime.json: runtime/gen/mpicc_probe.py $(BUILD)/lib/libmpilens-$(1).so
	@mkdir -p $$(dir $$@)
	$(GEN_PYTHON) runtime/gen/mpicc_probe.py '$(CC_$(1))' --json $$@

$(HELPERS)/$(1)/wrapped.txt: $(BUILD)/$(1)/gen/wrappers_c.c
	@mkdir -p $$(dir $$@)
	cp $(BUILD)/$(1)/gen/wrapped.txt $$@
endef
$(foreach m,$(RUNTIMES),$(eval $(call runtime_rules,$(m))))

# memory mode's interposer of malloc & co (no MPI in it): preloaded with the runtime in memory mode
# only; its references to the runtime's symbols are resolved when both are loaded
$(BUILD)/lib/libmpilens-memory.so: runtime/src/modes/memory/memory_interpose.c runtime/src/modes/memory/memory_interpose.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -shared -o $@ $< -ldl

$(BUILD)/lib/libmpilens-annotate.so: runtime/src/tools/annotate_stub.c runtime/include/mpilens.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -fvisibility=default -Iruntime/include -shared -o $@ $<
