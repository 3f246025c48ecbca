"""`mpilens papi`: the PAPI counts of a run made with `--mode papi`, per rank and per region, with
derived metrics and the compute-phase imbalance in work versus time."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..cli import command


def _setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("rundir", type=Path)
    p.add_argument("--json", action="store_true", help="print everything as one JSON document")


def _num(v: float | int | None) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, int) or float(v).is_integer():
        return f"{int(v):,}"
    return f"{v:.3g}"


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(head)]

    def fmt(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))
    return [fmt(head)] + [fmt(r) for r in rows]


@command("papi", "PAPI counters per rank and region, derived metrics, work vs time imbalance", _setup)
def cmd_papi(a: argparse.Namespace) -> int:
    """Print the PAPI counts of a run (text, or one JSON document with --json)."""
    from .. import papi

    run = papi.load(a.rundir)
    s = papi.summary(run)
    if a.json:
        json.dump(s, sys.stdout, indent=2)
        print()
        return 0
    ev = run.events
    print(f"mpilens papi: {a.rundir}: {run.nranks} ranks, events: {', '.join(ev) if ev else 'none'}"
          f" (read at {'MPI calls and region boundaries' if run.read == 'calls' else 'region boundaries only'}"
          f"{f', not for stretches under {run.min_us} us' if run.read == 'calls' and run.min_us else ''}"
          f"{', multiplexed' if run.multiplex else ''})")
    if run.refused:
        print(f"Not available here, left out: {run.refused}")
    if run.off_reason:
        print(f"Nothing counted: {run.off_reason}")
    for p in run.problems:
        print(f"Note: {p}")
    if not ev:
        return 0
    derived_names = sorted({k for r in s["ranks"] if r for k in r["derived"]} |
                           {k for g in s["regions"] for k in g["derived"]})
    scope = "compute between MPI calls" if run.read == "calls" else "everything (compute and MPI)"
    print(f"\nPer rank, {scope}:")
    rows = []
    for r in s["ranks"]:
        if r is None:
            continue
        time_s = "-" if r["compute_s"] is None else f"{r['compute_s']:.4f}"  # nothing read: not 0
        rows.append([str(r["rank"]), time_s] + [_num(r["compute"][e]) for e in ev]
                    + [_num(r["derived"].get(d)) for d in derived_names]
                    + [f"{r['read_cost_ns'] / 1000:.2f}"])
    for line in _table(["rank", "time s"] + ev + derived_names + ["read us"], rows):
        print("  " + line)
    print(f"\nPer region (sum over ranks), {scope}:")
    rows = [[g["path"], str(g["phases"]), f"{g['compute_s']:.4f}"] + [_num(g["compute"][e]) for e in ev]
            + [_num(g["derived"].get(d)) for d in derived_names] for g in s["regions"]]
    for line in _table(["region", "phases", "time s"] + ev + derived_names, rows):
        print("  " + line)
    if run.read == "calls" and s["functions"]:
        print("\nInside MPI calls (sum over ranks), top functions by time:")
        rows = [[name, f"{f['time_s']:.4f}"] + [_num(f["counts"][e]) for e in ev]
                for name, f in list(s["functions"].items())[:10]]
        for line in _table(["function", "time s"] + ev, rows):
            print("  " + line)
    print(f"\nCompute imbalance (work = {s['work_event'] or 'not counted'}):")
    print(f"  {s['imbalance']['message']}")
    for g in s["regions"]:
        if g["imbalance"] and g["imbalance"]["kind"] in ("work", "efficiency"):
            print(f"  {g['imbalance']['message']}")
    return 0
