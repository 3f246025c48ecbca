#!/usr/bin/env python3
"""Speed of call-site symbolisation (mpilens.callsites.symbolise): N distinct addresses inside the
functions of a real module, turned into function, file and line, first from scratch (binutils'
addr2line in batch mode), then again from the cache file a run directory keeps (callsites.json).

The addresses are drawn (fixed seed) inside the functions that the module's symbol table lists
(nm), so each one is a plausible return address. Default modules: LAMMPS' Debian library (8 MB of
code, symbols only) and mpilens' own runtime (DWARF from -g).

Usage: .venv/bin/python bench/symbolise.py [--n 10000] [--reps 3] [MODULE ...]
"""
from __future__ import annotations

import argparse
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
from mpilens.callsites import symbolise  # noqa: E402


def addresses(module: Path, n: int) -> list[int]:
    """n distinct addresses inside the module's functions (from nm: static symbols, else dynamic)."""
    funcs = []
    for dynamic in ([], ["-D"]):
        p = subprocess.run(["nm", *dynamic, "-S", "--defined-only", str(module)], capture_output=True, text=True)
        for line in p.stdout.splitlines():
            parts = line.split()
            if len(parts) == 4 and parts[2] in "tTwW" and int(parts[1], 16) > 1:
                funcs.append((int(parts[0], 16), int(parts[1], 16)))
        if funcs:
            break
    if not funcs:
        raise SystemExit(f"bench/symbolise.py: {module} has no function symbols")
    rng = random.Random(22)
    out: set[int] = set()
    while len(out) < n:
        start, size = rng.choice(funcs)
        out.add(start + 1 + rng.randrange(size - 1))
    return sorted(out)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=10000)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("modules", nargs="*", type=Path)
    args = p.parse_args()
    modules = args.modules or [Path("/usr/lib/x86_64-linux-gnu/liblammps.so.0"), ROOT / "build" / "lib" / "libmpilens-openmpi.so"]
    print(f"| module | addresses | from scratch (median of {args.reps}) | from the cache | with a line |")
    print("|---|---:|---:|---:|---:|")
    for module in modules:
        if not module.exists():
            print(f"bench/symbolise.py: {module} is missing, skipped", file=sys.stderr)
            continue
        addrs = addresses(module, args.n)
        frames = {(str(module), a) for a in addrs}
        cold, warm = [], []
        for _ in range(args.reps):
            tmp = Path(tempfile.mkdtemp(prefix="mpilens-symbolise-"))
            try:
                cache = tmp / "callsites.json"
                t0 = time.perf_counter()
                res = symbolise(frames, cache)
                cold.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                again = symbolise(frames, cache)
                warm.append(time.perf_counter() - t0)
                assert again == res
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
        lines = sum(1 for r in res.values() if r["line"])
        print(f"| `{module.name}` | {len(addrs)} | {statistics.median(cold):.2f} s | {statistics.median(warm):.2f} s "
              f"| {lines} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
