#!/usr/bin/env bash
# Install the Debian packages mpilens builds and tests with, when they are missing.
# Used by `make deps` (and so by `make demo` and `make test`). Needs root or sudo.
set -euo pipefail

packages=(
  build-essential gfortran pkg-config binutils   # binutils: addr2line symbolises call sites
  libunwind8                        # call paths (MPILENS_CALLSITE_DEPTH > 1), opened at run time
  openmpi-bin libopenmpi-dev        # Open MPI 4.1
  mpich libmpich-dev                # MPICH 4.0
  hwloc libhwloc-dev                # topology (quo/, affinity)
  libpapi-dev papi-tools            # hardware counters
  python3 python3-venv python3-dev python3-mpi4py
  chromium fonts-dejavu-core        # headless browser for the HTML report tests
  lammps lammps-examples            # real applications run under the tool in the tests
  netpipe-openmpi netpipe-mpich2 hpcc
  slurm-wlm munge                   # a real Slurm on this machine (scripts/slurm.sh, tests/test_slurm.py)
  iproute2                          # test hosts in network namespaces (scripts/testhosts.sh)
  python3-h5py-mpi libhdf5-mpich-dev  # parallel HDF5 (Open MPI via h5py, MPICH via h5pcc) for the I/O tests
  otf2-tools                        # otf2-print reads the OTF2 exports back in the tests
  lmod                              # loads the modulefile of `make install` in tests/test_install.py
  autoconf automake libtool zlib1g-dev  # Darshan from ../shared/peers (bench/peers.py, tests/test_tools_together.py)
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "mpilens: installing Debian packages: ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "mpilens: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
