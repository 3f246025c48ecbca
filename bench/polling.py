#!/usr/bin/env python3
"""Cost of polling completion calls over N outstanding requests, with and without mpilens.

Compiles bench/polling.c for each MPI and runs it on one rank, plain and with the runtime preloaded
(profile mode), interleaved, for N = 1, 100 and 10^4 requests. Loops (see polling.c): MPI_Testany,
MPI_Testsome and MPI_Testall that find nothing completed ("idle"), and rounds of one message sent
to self then MPI_Testany / MPI_Testsome until it completes, or MPI_Waitany ("complete").

Prints a Markdown table per MPI: median ns per call (per round for "complete") plain and with the
tool, the tool's added ns and the ratio. What matters is that the added ns do not grow with N:
MPI's own calls are O(N) (they scan the array), the tool's must be O(completed).

With --callgrind (valgrind needed) it also counts, for each loop alone, the instructions executed
inside the completion function per call (callgrind --toggle-collect on MPI_Testany, ...: MPI's own
function in the plain run, the wrapper with the MPI call it makes under the tool): a measure the
other jobs of a shared machine do not disturb.

Usage: .venv/bin/python bench/polling.py [--reps N] [--mpi openmpi,mpich] [--lib-dir DIR] [--callgrind]
"""
from __future__ import annotations

import argparse
import collections
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from overhead import MPI_NAMES, ROOT, base_env, compile_program, log  # noqa: E402

SIZES = (1, 100, 10000)
CALLS = {1: 20000, 100: 5000, 10000: 200}
LINE_RE = re.compile(r"^(\w+) n=(\d+) ns_per_call=([\d.]+)", re.M)


def run(mpi: str, exe: Path, n: int, lib: Path | None, out: Path) -> dict[str, float]:
    env = base_env()
    if lib is not None:
        env.update(LD_PRELOAD=str(lib), MPILENS_OUTPUT=str(out), MPILENS_MODE="profile")
    launcher = ["mpirun.openmpi", "-np", "1", "--bind-to", "none"] if mpi == "openmpi" else ["mpirun.mpich", "-np", "1"]
    if mpi == "openmpi" and lib is not None:
        launcher += [arg for k in ("LD_PRELOAD", "MPILENS_OUTPUT", "MPILENS_MODE") for arg in ("-x", k)]
    p = subprocess.run([*launcher, str(exe), str(n), str(CALLS[n])], env=env, capture_output=True, text=True,
                       timeout=600, check=True)
    return {m.group(1): float(m.group(3)) for m in LINE_RE.finditer(p.stdout)}


CG_CALLS = {1: 2000, 100: 200, 10000: 10}
CG_LOOPS = {"testany_idle": "MPI_Testany", "testsome_idle": "MPI_Testsome", "testall_idle": "MPI_Testall",
            "testany_complete": "MPI_Testany", "testsome_complete": "MPI_Testsome",
            "waitany_complete": "MPI_Waitany"}


def callgrind(mpi: str, exe: Path, n: int, loop: str, lib: Path | None, tmp: Path) -> float:
    """Instructions executed inside the loop's completion function, per call (per round for the
    "complete" loops): PMPI_xxx is MPI's own function in a plain run (MPI_xxx is an alias of it),
    MPI_xxx the wrapper under the tool (the MPI call it makes included)."""
    out = tmp / f"cg-{mpi}-{n}-{loop}-{'tool' if lib else 'plain'}.out"
    env = base_env()
    if lib is not None:
        env.update(LD_PRELOAD=str(lib), MPILENS_OUTPUT=str(tmp / f"cg-run-{n}-{loop}"), MPILENS_MODE="profile")
    fn = CG_LOOPS[loop] if lib is not None else "P" + CG_LOOPS[loop]
    cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", f"--toggle-collect={fn}",
           str(exe), str(n), str(CG_CALLS[n]), loop]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800, check=True)
    m = re.search(r"I\s+refs:\s+([\d,]+)", p.stderr)
    if m is None:
        raise RuntimeError(f"no instruction count from valgrind for {loop} N={n}:\n{p.stderr[-2000:]}")
    return int(m.group(1).replace(",", "")) / CG_CALLS[n]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=5, help="interleaved plain/tool pairs per N")
    ap.add_argument("--mpi", default="openmpi,mpich")
    ap.add_argument("--lib-dir", type=Path, default=ROOT / "build" / "lib")
    ap.add_argument("--callgrind", action="store_true", help="also count instructions per call with valgrind")
    args = ap.parse_args()
    if args.callgrind and shutil.which("valgrind") is None:
        ap.error("--callgrind needs valgrind")
    for mpi in args.mpi.split(","):
        exe = compile_program(mpi, "polling")
        lib = args.lib_dir / f"libmpilens-{mpi}.so"
        plain: dict[tuple[str, int], list[float]] = collections.defaultdict(list)
        tool: dict[tuple[str, int], list[float]] = collections.defaultdict(list)
        with tempfile.TemporaryDirectory() as tmp:
            for rep in range(args.reps):
                for n in SIZES:
                    log(f"{mpi}: N={n} pair {rep + 1}/{args.reps}")
                    for loop, v in run(mpi, exe, n, None, Path(tmp)).items():
                        plain[(loop, n)].append(v)
                    for loop, v in run(mpi, exe, n, lib, Path(tmp) / f"r{rep}-{n}").items():
                        tool[(loop, n)].append(v)
        print(f"\n### {MPI_NAMES[mpi]}: ns per call, medians of {args.reps} interleaved pairs\n")
        print("| loop | N | plain | mpilens | added | ratio |")
        print("|---|---:|---:|---:|---:|---:|")
        for loop in dict.fromkeys(k[0] for k in plain):
            for n in SIZES:
                a, b = statistics.median(plain[(loop, n)]), statistics.median(tool[(loop, n)])
                print(f"| {loop} | {n} | {a:.0f} | {b:.0f} | {b - a:+.0f} | {b / a:.2f} |")
        if args.callgrind:
            print(f"\n### {MPI_NAMES[mpi]}: instructions inside the completion function per call "
                  "(per round for the complete loops), callgrind\n")
            print("| loop | N | plain | mpilens | added |")
            print("|---|---:|---:|---:|---:|")
            with tempfile.TemporaryDirectory() as tmp:
                for loop in CG_LOOPS:
                    for n in SIZES:
                        log(f"{mpi}: callgrind {loop} N={n}")
                        a = callgrind(mpi, exe, n, loop, None, Path(tmp))
                        b = callgrind(mpi, exe, n, loop, lib, Path(tmp))
                        print(f"| {loop} | {n} | {a:.0f} | {b:.0f} | {b - a:+.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
