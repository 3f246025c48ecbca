#!/usr/bin/env bash
# Builds Open MPI with its software performance counters compiled in (configure --enable-spc), from
# the Debian source package of the Open MPI installed on this machine, into build/bench/ompi-spc/.
# Same version as Debian's library, so bench/spc.py runs the programs it built against Debian's
# headers on either library. Configured as Debian configures it where that matters for the shared-
# memory path (external hwloc, libevent and PMIx; optimised; no UCX, so pml ob1 with btl vader, as
# Debian's library uses on one host), without Fortran, Java and OpenSHMEM (not measured).
#
# The source comes through apt-get from the package sources this machine already uses (their
# deb-src twins, in a private list: the system's apt configuration is not changed). Takes 15-25
# minutes on 2 cores; does nothing when the build is there.
set -euo pipefail
cd "$(dirname "$0")/.."
prefix="$PWD/build/bench/ompi-spc"
if [[ -x "$prefix/bin/mpirun" && -e "$prefix/lib/libmpi.so.40" ]]; then
    echo "$prefix"
    exit 0
fi
version=$(dpkg-query -W -f='${source:Version}' libopenmpi3 2>/dev/null || true)
if [[ -z "$version" ]]; then
    echo "ompi_spc_build.sh: Debian's Open MPI (libopenmpi3) is not installed: make deps" >&2
    exit 1
fi
work=$(mktemp -d /tmp/mpilens-ompi-spc.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial"
# deb-src entries twinned from the deb entries this machine uses (deb822 and one-line formats)
for f in /etc/apt/sources.list.d/*.sources; do
    [[ -e "$f" ]] && sed -E 's/^Types:[[:space:]]*deb$/Types: deb-src/' "$f"
    echo
done > "$work/src.sources"
if [[ -e /etc/apt/sources.list ]]; then
    sed -nE 's/^deb[[:space:]]/deb-src /p' /etc/apt/sources.list > "$work/src.list"
fi
apt_opts=(-o "Dir::Etc::SourceParts=$work/parts" -o "Dir::State::Lists=$work/lists" -o "APT::Sandbox::User=root")
mkdir -p "$work/parts"
cp "$work/src.sources" "$work/parts/src.sources"
[[ -s "$work/src.list" ]] && cp "$work/src.list" "$work/parts/src.list"
apt_opts+=(-o "Dir::Etc::SourceList=/dev/null")
echo "ompi_spc_build.sh: fetching the source of openmpi $version" >&2
apt-get "${apt_opts[@]}" -qq update
(cd "$work" && apt-get "${apt_opts[@]}" -qq source --download-only "openmpi=$version")
tar -C "$work" -xf "$work"/openmpi_*.orig.tar.*
src=$(find "$work" -maxdepth 1 -type d -name 'openmpi-*' | head -1)
pmix=$(dirname "$(find /usr/lib -name 'libpmix.so' -path '*pmix2*' | head -1)")
echo "ompi_spc_build.sh: configuring and building in $src (log: $work/build.log)" >&2
(
    cd "$src"
    ./configure --prefix="$prefix" --enable-spc --with-pmix="${pmix%/lib}" --with-libevent=external \
        --with-hwloc=external --without-ucx --disable-mpi-fortran --disable-mpi-java --disable-oshmem \
        --disable-silent-rules
    make -j"$(nproc)"
    make install
) > "$work/build.log" 2>&1 || { tail -40 "$work/build.log" >&2; exit 1; }
echo "$prefix"
