#!/usr/bin/env bash
# `make demo`: run a real MPI program under mpilens and show its report.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -eq 0 ]; then
  # Open MPI refuses to run as root unless told so; containers often run as root.
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
out="$PWD/demo-run"
rm -rf "$out"
echo "== mpilens run: a 2-D stencil on 4 ranks (Open MPI), the last rank given extra work"
.venv/bin/mpilens run -o "$out" -- mpirun.openmpi --oversubscribe -np 4 build/openmpi/examples/stencil 192 200 2
echo
.venv/bin/mpilens report "$out" --html "$out/report.html" --quiet
echo "== run directory: $out (meta.json, profile.json)"
echo "== HTML report:   $out/report.html (one file; open it in any browser, no network needed)"
