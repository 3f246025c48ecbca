"""Files written per mode at 1024 ranks on 64 hosts, per rank (MPILENS_FILES=rank) against per host
(MPILENS_FILES=host), and what reading them costs.

A real job of 1024 ranks does not fit this machine (a 64-rank ring under mpilens takes over three
minutes on its two cores), so the ranks are simulated: bench/files_sim.c runs the runtime's file
writing code (runtime/src/core/files.c, compiled in unchanged) in one process per simulated rank, each
with its world rank and, per host, the group MPI_Comm_split_type gives it with 16 ranks per host.
Each rank writes the streams its mode writes (the runtime's modes, default settings: call sites
at depth 1 write maps/ in every mode) as the modes do: series in pieces, whole files once. The
files a mode writes once per run (meta.json, profile.json, counters/layout.json, ...) and counters
mode's live files (spc.c maps them itself: one per rank, or one per host with a slot per rank) are
added from the spec. Every rank's file is then read back through mpilens.layout and compared with what
it wrote; the time to list a family's ranks and to read all of them is measured for both layouts.

Usage: .venv/bin/python bench/files.py [--ranks 1024] [--per-host 16] [--mpi mpich]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))

import numpy  # noqa: E402,F401  (imported here: the container index reader uses it, not timed)

from mpilens import _layout, layout  # noqa: E402

# mode -> (families written per rank, files written once per run besides meta.json and profile.json)
MODES = {
    "profile": (["maps"], []),
    "trace": (["maps", "trace"], []),
    "counters": (["maps", "counters_series", "counters_totals"], ["counters/layout.json", "live/layout.json"]),
    "memory": (["maps", "memory"], ["memory/functions.txt"]),
    "mpit": (["maps", "mpit"], []),
    "papi": (["maps", "papi"], []),
    "MPILENS_INTERVALS=1": (["maps", "intervals"], []),
    "MPI-IO (every rank opens a file)": (["maps", "io"], []),
    "ended early (partial payloads)": (["maps", "partial"], []),
    "one MPI_Pcontrol snapshot": (["maps", "snapshot"], []),
}
# files runtime/src/modes/counters/counters.c makes itself (not through files.c), added here: counters mode's live view,
# memory-mapped in place, live/rank-NNNNNN.spc per rank, or per host live/group-NNNNNN.spc (a slot per rank)
LIVE = {"counters": 1}


def build(mpi: str) -> Path:
    exe = ROOT / "build" / "bench" / "files_sim"
    exe.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([f"mpicc.{mpi}", "-std=c11", "-D_GNU_SOURCE", "-O2", "-Iruntime/src", "-Iruntime/include",
                    f"-Ibuild/{mpi}/gen", "-Ibuild/gen", "-o", str(exe), "bench/files_sim.c", "runtime/src/core/files.c"],
                   cwd=ROOT, check=True)
    return exe


def expected(rank: int, stream: int, pieces: int) -> bytes:
    return b"".join(bytes((rank * 131 + stream * 31 + k * 7 + i) & 0xFF for i in range(4096)) for k in range(pieces))


def count(run: Path) -> int:
    return sum(1 for p in run.rglob("*") if p.is_file())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=1024)
    ap.add_argument("--per-host", type=int, default=16)
    ap.add_argument("--mpi", default="mpich")
    ap.add_argument("--modes", default="", help="comma separated modes of the table (default: all)")
    a = ap.parse_args()
    exe = build(a.mpi)
    hosts = -(-a.ranks // a.per_host)
    print(f"{a.ranks} simulated ranks, {a.per_host} per host ({hosts} hosts)\n")
    print("| mode | files, `MPILENS_FILES=rank` | files, `MPILENS_FILES=host` | files per host | "
          "list + read every rank, rank | host |")
    print("|---|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory(prefix="mpilens-files-") as tmp:
        chosen = a.modes.split(",") if a.modes else list(MODES)
        for mode, (families, once) in ((m, MODES[m]) for m in chosen):
            counts, times = {}, {}
            for files in ("rank", "host"):
                run = Path(tmp) / f"{files}-{len(counts)}"
                streams = [str(_layout.FILES[f].stream) for f in families]
                subprocess.run([str(exe), str(run), str(a.ranks), str(a.per_host), files, *streams], check=True)
                t0 = time.perf_counter()
                found = {}
                for fam in families:  # every rank's file, listed and read through the readers' layout
                    found[fam] = layout.files(run, fam, **({"snapshot": 1} if fam == "snapshot" else {}))
                    for f in found[fam]:
                        f.read_bytes()
                times[files] = time.perf_counter() - t0
                for fam, got in found.items():
                    if [layout.rank_of(fam, f) for f in got] != list(range(a.ranks)):
                        raise SystemExit(f"{mode}/{files}: {fam}: ranks read back are not 0..{a.ranks - 1}")
                    stream = _layout.FILES[fam].stream
                    pieces = 8 if fam in ("trace", "memory", "counters_series", "mpit") else 2
                    for f in got[:: max(1, a.ranks // 64)]:  # a sample, compared byte for byte
                        if f.read_bytes() != expected(layout.rank_of(fam, f), stream, pieces):
                            raise SystemExit(f"{mode}/{files}: {f}: not what the rank wrote")
                n = count(run) + 2 + len(once)  # + meta.json, profile.json, the mode's shared files
                n += LIVE.get(mode, 0) * (a.ranks if files == "rank" else hosts)
                counts[files] = n
                shutil.rmtree(run)
            print(f"| {mode} | {counts['rank']} | {counts['host']} | {counts['host'] / hosts:.1f} | "
                  f"{times['rank']:.2f} s | {times['host']:.2f} s |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
