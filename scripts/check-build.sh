#!/usr/bin/env bash
# What `make` needs to build a checkout (both Debian MPIs, their Fortran and C++ compilers, hwloc,
# PAPI, Python): one line per missing thing and how to get it; exit status 1 if anything is.
# `make deps` installs all of it on Debian (as root); to build against another MPI without root,
# use the install routes instead (pip install ., make install PREFIX=...: docs/install.md).
missing=0
need() {  # need WHAT DEBIAN-PACKAGE TEST...
  local what=$1 pkg=$2
  shift 2
  if ! "$@" >/dev/null 2>&1; then
    echo "mpilens: missing $what (Debian package $pkg)" >&2
    missing=1
  fi
}
has() { command -v "$1"; }
header() { echo "#include <$1>" | ${CC:-cc} -E -x c - ; }
need "a C compiler (cc)" build-essential has "${CC:-cc}"
need "make" make has make
need "gfortran" gfortran has gfortran
need "Open MPI's compilers (mpicc.openmpi)" libopenmpi-dev has mpicc.openmpi
need "Open MPI's mpirun (mpirun.openmpi)" openmpi-bin has mpirun.openmpi
need "MPICH's compilers (mpicc.mpich)" libmpich-dev has mpicc.mpich
need "MPICH's mpirun (mpirun.mpich)" mpich has mpirun.mpich
need "hwloc's headers (hwloc.h)" libhwloc-dev header hwloc.h
need "PAPI's headers (papi.h)" libpapi-dev header papi.h
need "Python 3.11 or newer (python3)" python3 python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))'
need "Python's venv module" python3-venv python3 -c 'import ensurepip, venv'
if [ $missing -ne 0 ]; then
  echo "mpilens: \`make deps\` installs them (root or sudo); without root, build against your own MPI: docs/install.md" >&2
  exit 1
fi
