#!/usr/bin/env python3
"""Cost of I/O per file (MPILENS_IO) per MPI-IO call, and what it costs a run without MPI-IO.

For each MPI it compiles bench/ioloop.c and bench/selfloop.c (build/bench/<mpi>/) and runs, as
singletons (one rank), interleaved in a rotating order, `reps` times each:
- ioloop at|ind|read|all on a file in /dev/shm: plain, under the runtime with MPILENS_IO=0 (the
  profile's wrapper only) and with MPILENS_IO=1 (the default: the per-file record, the offset, the
  access list). The cost of I/O per file per call is the median of the paired differences
  (IO=1 - IO=0); the whole tool's, (IO=1 - plain).
- selfloop send (MPI_Irecv + MPI_Send + MPI_Wait to self, no MPI-IO) with MPILENS_IO=1 and =0:
  the wrappers of a run without MPI-IO do not touch the I/O code, so the difference must be noise.

Usage: .venv/bin/python bench/io.py [--reps N] [--mpi openmpi,mpich] [--iters N]
"""
from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hotpath  # noqa: E402
from hotpath import run  # noqa: E402
from overhead import MPI_NAMES, ROOT, BenchError, compile_program, log  # noqa: E402

IO_RE = re.compile(r"ns_per_call=([\d.]+)")
SELF_RE = re.compile(r"ns_per_iter=([\d.]+)")
IO_MODES = ("at", "ind", "read", "all")
CONFIGS = ("plain", "io0", "io1")


def one(exe: Path, args: list[str], config: str, tmp: Path, rx: re.Pattern[str]) -> float:
    lib = None if config == "plain" else ROOT / "build" / "lib" / f"libmpilens-{MPI_NAME}.so"
    hotpath.SETTINGS.clear()
    if config != "plain":
        hotpath.SETTINGS["MPILENS_IO"] = "1" if config == "io1" else "0"
    out = run(exe, args, lib, tmp)
    m = rx.search(out)
    if m is None:
        raise BenchError(f"unexpected output: {out}")
    return float(m.group(1))


MPI_NAME = ""


def main() -> int:
    global MPI_NAME
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--mpi", default="openmpi,mpich")
    ap.add_argument("--iters", type=int, default=5000, help="calls per batch of ioloop (11 batches)")
    a = ap.parse_args()
    for mpi in a.mpi.split(","):
        MPI_NAME = mpi
        ioloop, selfloop = compile_program(mpi, "ioloop"), compile_program(mpi, "selfloop")
        with tempfile.TemporaryDirectory(dir="/dev/shm") as shm, tempfile.TemporaryDirectory() as tmp:
            res: dict[str, dict[str, list[float]]] = {m: {c: [] for c in CONFIGS} for m in IO_MODES}
            send: dict[str, list[float]] = {"io0": [], "io1": []}
            for rep in range(a.reps):
                order = CONFIGS[rep % 3:] + CONFIGS[:rep % 3]
                for m in IO_MODES:
                    for c in order:
                        res[m][c].append(one(ioloop, [m, f"{shm}/f-{m}", str(a.iters)], c, Path(tmp), IO_RE))
                for c in (("io0", "io1") if rep % 2 else ("io1", "io0")):
                    send[c].append(one(selfloop, ["send", "200000"], c, Path(tmp), SELF_RE))
            log(f"{MPI_NAMES.get(mpi, mpi)}: ns per call, median of {a.reps} interleaved runs "
                f"(each the median of 11 batches of {a.iters} calls)")
            print(f"| {mpi} | call | plain | MPILENS_IO=0 | MPILENS_IO=1 | IO=1 - IO=0 (median of pairs) | "
                  "IO=1 - plain |")
            print("|---|---|---:|---:|---:|---:|---:|")
            names = {"at": "MPI_File_write_at 8 B", "ind": "MPI_File_write 8 B (individual pointer)",
                     "read": "MPI_File_read_at 8 B", "all": "MPI_File_write_at_all 8 B (1 rank)"}
            for m in IO_MODES:
                r = res[m]
                d_io = statistics.median(b - x for x, b in zip(r["io0"], r["io1"]))
                d_all = statistics.median(b - x for x, b in zip(r["plain"], r["io1"]))
                print(f"| | {names[m]} | {statistics.median(r['plain']):.0f} | {statistics.median(r['io0']):.0f} | "
                      f"{statistics.median(r['io1']):.0f} | {d_io:+.0f} | {d_all:+.0f} |")
            d = [b - x for x, b in zip(send["io0"], send["io1"])]
            print(f"| | no MPI-IO: selfloop send (Irecv+Send+Wait) | | {statistics.median(send['io0']):.1f} | "
                  f"{statistics.median(send['io1']):.1f} | {statistics.median(d):+.1f} "
                  f"(paired differences from {min(d):+.1f} to {max(d):+.1f}) | |")
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
