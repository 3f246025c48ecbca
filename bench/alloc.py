#!/usr/bin/env python3
"""What the application's own allocations pay under mpilens (malloc + free outside MPI calls).

Memory mode interposes the allocation calls (libmpilens-memory.so); the other modes must leave
them to the C library. This benchmark runs `bench/selfloop.c alloc` (64 malloc of 16-520 B then
64 free per iteration, one rank, a singleton) in four arms, in a random order each round:

    plain         no tool
    profile       the runtime preloaded, profile mode
    interposed    the interposer preloaded too, profile mode (memory mode off): what every mode
                  paid while the runtime library itself interposed malloc
    memory        memory mode (the interposer counting; these allocations are the application's)

and prints the median ns per malloc + free pair of each arm and its ratio to plain. With
`--lib-dir DIR --arms plain,profile` it measures a runtime built elsewhere (an earlier commit's,
built by bench/counters.py's build_base, which interposed malloc itself).

Usage: .venv/bin/python bench/alloc.py [--reps N] [--mpi openmpi,mpich] [--arms LIST] [--lib-dir DIR]
       [--json FILE]
"""
from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from overhead import MPI_NAMES, ROOT, BenchError, base_env, compile_program, log, sha256  # noqa: E402

ARMS = ("plain", "profile", "interposed", "memory")
PAIR_RE = re.compile(r"ns_per_pair=([\d.]+)")


def run_arm(exe: Path, arm: str, runtime: Path, interposer: Path, tmp: Path, iters: int) -> float:
    env = base_env()
    if arm != "plain":
        env["LD_PRELOAD"] = str(runtime) if arm == "profile" else f"{interposer}:{runtime}"
        env["MPILENS_MODE"] = "memory" if arm == "memory" else "profile"
        env["MPILENS_OUTPUT"] = tempfile.mkdtemp(dir=tmp) + "/run"
    r = subprocess.run([str(exe), "alloc", str(iters)], capture_output=True, text=True, env=env, timeout=600,
                       cwd=tmp)
    if r.returncode != 0:
        raise BenchError(f"selfloop alloc ({arm}) failed ({r.returncode}):\n{r.stdout}\n{r.stderr[-2000:]}")
    m = PAIR_RE.search(r.stdout)
    if m is None:
        raise BenchError(f"selfloop alloc ({arm}) printed no ns_per_pair:\n{r.stdout}")
    return float(m.group(1))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reps", type=int, default=15, help="rounds (each runs every arm once, in a random order)")
    p.add_argument("--iters", type=int, default=100000, help="selfloop iterations per batch (64 pairs each)")
    p.add_argument("--mpi", default="openmpi,mpich")
    p.add_argument("--lib-dir", type=Path, default=ROOT / "build" / "lib")
    p.add_argument("--arms", default=",".join(ARMS), help="which arms to run (default all)")
    p.add_argument("--json", type=Path, help="also write the raw times here")
    args = p.parse_args(argv)
    arms = tuple(a for a in args.arms.split(",") if a)
    if not arms or set(arms) - set(ARMS) or "plain" not in arms:
        raise BenchError(f"--arms {args.arms}: a list of {', '.join(ARMS)} with plain in it")
    rng = random.Random(0)
    tmp = Path(tempfile.mkdtemp(prefix="mpilens-alloc-"))
    raw: dict[str, dict[str, list[float]]] = {}
    try:
        interposer = tmp / "libmpilens-memory.so"
        if {"interposed", "memory"} & set(arms):  # a snapshot: builds may replace build/lib
            shutil.copy2(args.lib_dir / "libmpilens-memory.so", interposer)
        for mpi in [m.strip() for m in args.mpi.split(",") if m.strip()]:
            runtime = tmp / f"libmpilens-{mpi}.so"
            shutil.copy2(args.lib_dir / runtime.name, runtime)
            exe = compile_program(mpi, "selfloop")
            log(f"{MPI_NAMES[mpi]}: {len(arms)} arms x {args.reps} rounds ...")
            times: dict[str, list[float]] = {a: [] for a in arms}
            for _ in range(args.reps):
                for arm in rng.sample(arms, len(arms)):
                    times[arm].append(run_arm(exe, arm, runtime, interposer, tmp, args.iters))
            raw[mpi] = times
            plain = statistics.median(times["plain"])
            built = f"runtime sha256 {sha256(runtime)[:12]}" + (
                f", interposer {sha256(interposer)[:12]}" if interposer.exists() else "")
            print(f"### {MPI_NAMES[mpi]} ({built}, {args.reps} rounds)\n")
            print("| arm | ns per malloc + free (median) | ratio to plain | added ns |")
            print("|---|---|---|---|")
            for arm in arms:
                m = statistics.median(times[arm])
                print(f"| {arm} | {m:.2f} | {m / plain:.3f} | {m - plain:+.2f} |")
            print()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        args.json.write_text(json.dumps(raw, indent=1))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as e:
        print(f"alloc: {e}", file=sys.stderr)
        sys.exit(2)
