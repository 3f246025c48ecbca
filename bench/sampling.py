#!/usr/bin/env python3
"""What MPILENS_TIME_SAMPLE saves: the 8-byte ping-pong and message rate of bench/overhead.py,
without the tool and with it at several sampling settings, all interleaved.

Each round runs, in a fresh random order, the plain program and the program under the runtime
with MPILENS_TIME_SAMPLE=1 (every call timed, the default) and each N of --samples. Comparing
every configuration with the plain run *of the same round* lets them share the machine's drift,
which on a shared 2-core VM is larger than the differences measured. Per configuration the table
gives the median over rounds of (with / without) and a bootstrap 95 % confidence interval, and,
because the VM's timing can be bimodal from one launch to the next (an 8-byte hop of about 0.21 or
0.45-0.65 µs, whatever the tool), also the time added per hop within the fast mode: the median
8-byte hop of the runs below --fast-below µs, with the tool minus without it, and how many runs
that is.

Usage: .venv/bin/python bench/sampling.py [--rounds N] [--mpi openmpi,mpich] [--samples 16,64]
       [--fast-below US] [--json FILE]
"""
from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from overhead import MPI_NAMES, ROOT, BenchError, bootstrap_median_ci, compile_programs, log, run_once  # noqa: E402


def bench(mpi: str, rounds: int, samples: list[int], tmp: Path, batches: int, fast_below: float) -> dict:
    lib = tmp / f"libmpilens-{mpi}.so"
    shutil.copy2(ROOT / "build" / "lib" / lib.name, lib)
    exe_dir = compile_programs(mpi)
    configs = [None, 1, *samples]  # None: without the tool
    got: dict = {c: {"lat8": [], "rate": []} for c in configs}
    counter = [0]
    rng = random.Random(7)
    for k in range(rounds):
        order = configs[:]
        rng.shuffle(order)
        for c in order:
            use = lib if c is not None else None
            settings = {"MPILENS_TIME_SAMPLE": str(c)} if c is not None else {}
            pp, _ = run_once(mpi, "pingpong", exe_dir, [str(batches), "1"], "core", use, tmp, counter, 300,
                             settings=settings)
            mr, _ = run_once(mpi, "msgrate", exe_dir, [str(batches), "1"], "core", use, tmp, counter, 300,
                             settings=settings)
            got[c]["lat8"].append(pp[8])
            got[c]["rate"].append(mr[8])
        log(f"  {mpi}: round {k + 1}/{rounds}: 8 B " +
            ", ".join(f"{'plain' if c is None else c}={got[c]['lat8'][-1]:.3f}" for c in configs))
    out = {}

    def fast(c: int | None) -> list[float]:
        return [x for x in got[c]["lat8"] if x < fast_below]

    for c in configs[1:]:
        lat = [t / p for t, p in zip(got[c]["lat8"], got[None]["lat8"])]
        rate = [t / p for t, p in zip(got[c]["rate"], got[None]["rate"])]
        out[c] = {"lat8": (statistics.median(lat), *bootstrap_median_ci(lat)),
                  "rate": (statistics.median(rate), *bootstrap_median_ci(rate)),
                  "fast_added_ns": ((statistics.median(fast(c)) - statistics.median(fast(None))) * 1000
                                    if fast(c) and fast(None) else None),
                  "fast_runs": (len(fast(c)), len(fast(None))),
                  "lat8_us": statistics.median(got[c]["lat8"]), "rate_msgs": statistics.median(got[c]["rate"])}
    out["plain"] = {"lat8_us": statistics.median(got[None]["lat8"]), "rate_msgs": statistics.median(got[None]["rate"])}
    out["runs"] = {str(c): v for c, v in got.items()}
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--mpi", default="openmpi,mpich")
    p.add_argument("--samples", default="16,64", help="the N of MPILENS_TIME_SAMPLE to compare with 1")
    p.add_argument("--batches", type=int, default=15)
    p.add_argument("--fast-below", type=float, default=0.33, metavar="US",
                   help="8-byte hops (µs) below this are the fast mode of a bimodal machine (default 0.33)")
    p.add_argument("--json", type=Path)
    a = p.parse_args(argv)
    samples = [int(x) for x in a.samples.split(",") if x.strip()]
    tmp = Path(tempfile.mkdtemp(prefix="mpilens-sampling-"))
    results = {}
    try:
        for mpi in [m.strip() for m in a.mpi.split(",") if m.strip()]:
            log(f"{MPI_NAMES[mpi]}: {a.rounds} rounds of {2 + len(samples)} configurations ...")
            results[mpi] = bench(mpi, a.rounds, samples, tmp, a.batches, a.fast_below)
    except BenchError as e:
        log(f"sampling.py: {e}")
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for mpi, r in results.items():
        print(f"\n### {MPI_NAMES[mpi]}: {a.rounds} interleaved rounds (plain 8 B hop {r['plain']['lat8_us']:.3f} µs, "
              f"rate {r['plain']['rate_msgs'] / 1e6:.2f} M msg/s)\n")
        print(f"| MPILENS_TIME_SAMPLE | 8 B latency with / without | 95 % CI | added per hop, runs below "
              f"{a.fast_below} µs (runs with / without) | message rate kept | 95 % CI |")
        print("|---:|---:|---|---:|---:|---|")
        for c in [1, *samples]:
            (lat, llo, lhi), (m, mlo, mhi) = r[c]["lat8"], r[c]["rate"]
            label = "1 (every call)" if c == 1 else str(c)
            added = f"{r[c]['fast_added_ns']:+.0f} ns" if r[c]["fast_added_ns"] is not None else "n/a"
            print(f"| {label} | **{lat:.3f}** | {llo:.3f} – {lhi:.3f} | {added} ({r[c]['fast_runs'][0]} / "
                  f"{r[c]['fast_runs'][1]}) | **{m:.3f}** | {mlo:.3f} – {mhi:.3f} |")
    if a.json:
        a.json.write_text(json.dumps(results, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
