"""`mpilens memory`: MPI's memory against the application's, per rank and for the job."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..cli import command


def _setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("rundir", type=Path)
    p.add_argument("--json", action="store_true", help="print everything as one JSON document")
    p.add_argument("--top", type=int, default=10, help="MPI functions listed (default 10)")
    p.add_argument("--minus", type=Path, metavar="BASELINE",
                   help="also print this run's peaks minus those of a baseline run (a program without the "
                        "library under study, e.g. QUO's footprint: a QUO program minus a trivial one)")


@command("memory", "memory of MPI against the application (run with --mode memory)", _setup)
def cmd_memory(a: argparse.Namespace) -> int:
    """Print the peak table, MPI memory by function, regions and per-rank summary of a memory run."""
    from .. import memory
    from ..units import mib as fmt_mib
    from ..units import mib_mean_std as fmt_pm

    run = memory.load(a.rundir)
    foot = memory.footprint(run, memory.load(a.minus)) if a.minus is not None else None
    if a.json:
        doc = run.to_dict()
        if foot is not None:
            doc["footprint"] = foot
        json.dump(doc, sys.stdout)
        print()
        return 0
    r0 = run.ranks[0]
    where = "smaps_rollup" if r0.rollup else "smaps"
    how = (f"allocations inside MPI calls, residency sampled every {r0.period_ms} ms, PSS from {where} "
           "carried forward with statm" if run.method == "fast" else f"{where} before and after every MPI call")
    print(f"mpilens memory: {a.rundir}: {len(run.ranks)} of {run.nranks} ranks, method {run.method} ({how})")
    for p in run.problems:
        print(f"Note: {p}")
    peaks = {row["series"]: row for row in run.peaks()}
    print(f"\nPeak memory per process, MiB (mean ± std over {len(run.ranks)} ranks)")
    print(f"  {'':<14}{'PSS':>18}{'RSS':>18}")
    print(f"  {'MPI':<14}{fmt_pm(peaks['mpi']):>18}{fmt_pm(peaks['mpi_rss']):>18}")
    print(f"  {'application':<14}{fmt_pm(peaks['app']):>18}{'':>18}")
    print(f"  {'total':<14}{fmt_pm(peaks['pss']):>18}{fmt_pm(peaks['rss']):>18}")
    print(f"  {'tool (apart)':<14}{fmt_pm(peaks['tool']):>18}")
    if foot is not None:
        _print_footprint(foot)
    rows = run.by_function()[: a.top]
    if rows:
        print("\nMPI memory by function (sum over ranks, MiB)")
        if run.method == "smaps":
            print(f"  {'function':<24}{'PSS grown':>11}{'shrunk':>9}{'net':>9}{'allocated':>11}{'freed':>9}")
            for r in rows:
                print(f"  {r['function']:<24}{fmt_mib(r['pss_grown']):>11}{fmt_mib(r['pss_shrunk']):>9}"
                      f"{fmt_mib(r['pss_net']):>9}{fmt_mib(r['allocated']):>11}{fmt_mib(r['freed']):>9}")
        else:
            print(f"  {'function':<24}{'allocated':>11}{'freed':>9}{'net':>9}{'blocks':>9}{'shared':>9}")
            for r in rows:
                print(f"  {r['function']:<24}{fmt_mib(r['allocated']):>11}{fmt_mib(r['freed']):>9}"
                      f"{fmt_mib(r['net']):>9}{r['allocations']:>9}{fmt_mib(r['shared']):>9}")
        print("  (MPI_Init's part of the timelines is its residency change; shared mappings are listed at full size)")
    ext = run.extents()
    if ext:
        print("\nRegions and MPI_Pcontrol extents (mean over ranks, MiB)")
        print(f"  {'extent':<28}{'count':>6}{'total':>9}{'MPI':>9}{'app':>9}{'MPI peak':>10}")
        for e in ext:
            label = e["name"] if e["kind"] == "region" else f"Pcontrol {e['name']}"
            print(f"  {label:<28}{e['instances']:>6}{fmt_mib(e['total_change']):>9}{fmt_mib(e['mpi_change']):>9}"
                  f"{fmt_mib(e['app_change']):>9}{fmt_mib(e['mpi_peak']):>10}")
    print("\nPer rank (MiB)")
    print(f"  {'rank':>5}{'samples':>9}{'MPI_Init':>10}{'MPI peak':>10}{'app peak':>10}{'PSS peak':>10}"
          f"{'RSS peak':>10}  ended")
    for r in run.ranks:
        print(f"  {r.rank:>5}{len(r.t):>9}{fmt_mib(r.init_pss):>10}{fmt_mib(r.peak('mpi')):>10}"
              f"{fmt_mib(r.peak('app')):>10}{fmt_mib(r.peak('pss')):>10}{fmt_mib(r.peak('rss')):>10}  "
              f"{r.ended or 'killed'}")
    return 0


def _print_footprint(foot: dict) -> None:
    """The peaks of this run minus the baseline's, in MiB with enough digits for sub-MiB libraries."""
    from ..units import mib as fmt_mib

    def mib(b: float | None) -> str:
        return fmt_mib(b, digits=3)

    print(f"\nFootprint: this run minus {foot['baseline']} (mean peak per process, MiB)")
    for note in foot["notes"]:
        print(f"Note: {note}")
    print(f"  {'':<20}{'this run':>10}{'baseline':>10}{'difference':>12}{'± s.e.':>9}")
    for r in foot["rows"]:
        print(f"  {r['metric']:<20}{mib(r['run']):>10}{mib(r['baseline']):>10}{mib(r['difference']):>12}"
              f"{mib(r['std_error']):>9}")
