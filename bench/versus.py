#!/usr/bin/env python3
"""Two builds of the runtime against each other in the same hour: the 8-byte ping-pong and message
rate of bench/overhead.py, plain and under each runtime, all interleaved.

Each round runs, in a fresh random order, the plain programs and the programs under the runtime of
each --lib DIR (copied first, so a rebuild cannot change it mid-run), each with every --set of
MPILENS_* settings ("-" for none). Every configuration is compared with the plain run of the same
round, so they share the machine's drift; per configuration the table gives the median over rounds
of (with / without) for the 8-byte hop and the message rate, with bootstrap 95 % intervals.

Usage: .venv/bin/python bench/versus.py --lib before=/tmp/old/lib --lib after=build/lib
       [--set - --set MPILENS_TIME_SAMPLE=64] [--mode profile|trace] [--rounds N] [--mpi openmpi,mpich]
       [--thread single|multiple] [--json FILE]

--thread multiple runs every program (plain ones too) under MPI_THREAD_MULTIPLE, where the runtime
keeps requests in its process-wide table.
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from overhead import (  # noqa: E402
    MPI_NAMES,
    add_comparison_args,
    bootstrap_median_ci,
    compile_programs,
    copy_runtimes,
    log,
    parse_settings,
    run_comparison,
    run_once,
    sha256,
)


def bench(mpi: str, libs: dict[str, Path], sets: list[str], mode: str, rounds: int, batches: int,
          tmp: Path, thread: str = "single") -> dict:
    exe_dir = compile_programs(mpi)
    copies = copy_runtimes(mpi, libs, tmp)
    configs = [None] + [(name, s) for name in libs for s in sets]  # None: plain
    got: dict = {c: {"lat8": [], "rate": []} for c in configs}
    counter = [0]
    rng = random.Random(11)
    args = [str(batches), "1", *(["multiple"] if thread == "multiple" else [])]
    for r in range(rounds):
        order = configs[:]
        rng.shuffle(order)
        for c in order:
            lib = None if c is None else copies[c[0]]
            settings = {} if c is None else parse_settings(c[1])
            pp, _ = run_once(mpi, "pingpong", exe_dir, args, "core", lib, tmp, counter, 600, mode,
                             None, settings)
            mr, _ = run_once(mpi, "msgrate", exe_dir, args, "core", lib, tmp, counter, 600, mode,
                             None, settings)
            got[c]["lat8"].append(pp[8])
            got[c]["rate"].append(mr[8])
        log(f"  {mpi}: round {r + 1}/{rounds}: plain 8 B {got[None]['lat8'][-1]:.3f} µs, "
            f"rate {got[None]['rate'][-1] / 1e6:.2f} M/s")
    rows = []
    for c in configs[1:]:
        lat = [b / a for a, b in zip(got[None]["lat8"], got[c]["lat8"])]
        rate = [b / a for a, b in zip(got[None]["rate"], got[c]["rate"])]
        rows.append({"lib": c[0], "settings": c[1], "lat8_ratio": statistics.median(lat),
                     "lat8_ci": bootstrap_median_ci(lat), "rate_ratio": statistics.median(rate),
                     "rate_ci": bootstrap_median_ci(rate),
                     "lat8_added_ns": 1000 * (statistics.median(got[c]["lat8"]) - statistics.median(got[None]["lat8"]))})
    return {"mpi": mpi, "rounds": rounds, "mode": mode, "thread": thread, "plain_lat8_us": statistics.median(got[None]["lat8"]),
            "plain_rate": statistics.median(got[None]["rate"]), "rows": rows,
            "libs": {n: sha256(p)[:12] for n, p in copies.items()}}


def table(res: dict) -> str:
    multiple = ", MPI_THREAD_MULTIPLE" if res.get("thread") == "multiple" else ""
    out = [f"### {MPI_NAMES[res['mpi']]}: MPILENS_MODE={res['mode']}{multiple}, {res['rounds']} rounds; plain 8 B hop "
           f"{res['plain_lat8_us']:.3f} µs, plain rate {res['plain_rate'] / 1e6:.2f} M msgs/s",
           "", "| runtime | settings | 8 B hop, with / without (95 % CI) | added | message rate kept (95 % CI) |",
           "|---|---|---|---:|---|"]
    for r in res["rows"]:
        out.append(f"| {r['lib']} ({res['libs'][r['lib']]}) | {r['settings']} | **{r['lat8_ratio']:.3f}** "
                   f"({r['lat8_ci'][0]:.3f}–{r['lat8_ci'][1]:.3f}) | {r['lat8_added_ns']:+.0f} ns | "
                   f"**{r['rate_ratio']:.3f}** ({r['rate_ci'][0]:.3f}–{r['rate_ci'][1]:.3f}) |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_comparison_args(p, "NAME=DIR holding libmpilens-<mpi>.so", lib_required=True)
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--batches", type=int, default=15)
    p.add_argument("--thread", choices=("single", "multiple"), default="single",
                   help="multiple: every program under MPI_THREAD_MULTIPLE")
    args = p.parse_args(argv)
    return run_comparison("versus", args, [], lambda mpi, libs, sets, sub: bench(
        mpi, libs, sets, args.mode, args.rounds, args.batches, sub, args.thread), table)


if __name__ == "__main__":
    sys.exit(main())
