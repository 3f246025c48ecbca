"""`mpilens counters`, `mpilens top` and `mpilens heatmap`: the counters mode (SPC-style counters).

  mpilens counters RUNDIR [--json] [--list]   totals per rank, eager limit, the MPI's pvars
  mpilens top RUNDIR [--interval S] [--once]  live per-rank table of a running job (live files)
  mpilens heatmap RUNDIR --counter NAME [--grid WxH] [-o FILE.png] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from ..cli import command
from ..errors import MpilensError

TOP_COLUMNS = ["MPI_CALLS", "BYTES_SENT_USER", "BYTES_RECEIVED_USER", "BYTES_SENT_MPI", "POSTED_RECVQ",
               "MAX_POSTED_RECVQ", "UNEXPECTED", "EAGER_MESSAGES", "NOT_EAGER_MESSAGES"]


# ------------------------------------------------------------------------------------ counters
def _setup_counters(p: argparse.ArgumentParser) -> None:
    p.add_argument("rundir", type=Path)
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.add_argument("--list", action="store_true", help="list every counter of the run (name, type, group)")
    p.add_argument("--rank", type=int, help="only this rank")


def counters_doc(c: Any) -> dict[str, Any]:
    """Everything `mpilens counters --json` prints."""
    from ..counters_spc import MAIN

    lay = c.layout
    ranks = sorted(c.totals) if c.totals else []
    doc: dict[str, Any] = {
        "run": str(c.path), "nranks": c.nranks, "mpi": lay.doc["mpi"], "transport": lay.doc.get("transport"),
        "groups": lay.groups, "eager": lay.doc.get("eager"), "snapshot_ms": lay.doc.get("snapshot_ms"),
        "snapshots": {str(r): int(len(s.t)) for r, s in c.series.items()},
        "mpit": lay.doc.get("mpit"), "pvars_absent": lay.doc.get("pvars_absent", []),
        "pvars": [x["pvar"] for x in lay.doc["counters"] if x["type"].startswith("pvar")],
        "counters": {}, "bins": {}, "calls": {}, "collective_bins": {}, "peers": {}, "comms": {},
        "problems": c.problems,
    }
    for name in MAIN:
        doc["counters"][name] = [c.value(name, r) for r in ranks]
    for x in lay.doc["counters"]:
        if x["type"].startswith("pvar"):
            doc["counters"][x["name"]] = [int(c.totals[r][x["offset"]]) for r in ranks]
    if lay.available("P2P_MESSAGE_SIZE"):
        doc["bins"]["P2P_MESSAGE_SIZE"] = {"rules": lay.by_name["P2P_MESSAGE_SIZE"]["rules"],
                                           "total": [c.value("P2P_MESSAGE_SIZE", r) for r in ranks],
                                           "bins": [c.bins("P2P_MESSAGE_SIZE", r) for r in ranks]}
    for x in lay.doc["counters"]:
        if x["group"] == "calls" and "function" in x and "calls" in lay.groups:
            v = [int(c.totals[r][x["offset"]]) for r in ranks]
            if any(v):
                doc["calls"][x["name"]] = v
        if x["type"] == "collective_bin" and "collectives" in lay.groups:
            tot = [int(c.totals[r][x["offset"]]) for r in ranks]
            if any(tot):
                doc["collective_bins"][x["name"]] = {"total": tot, "bins": [c.bins(x["name"], r) for r in ranks]}
    for r in ranks:
        d = c.ranks_doc.get(r, {})
        if d.get("peers") is not None:
            doc["peers"][str(r)] = d["peers"]
        if d.get("comms") is not None:
            doc["comms"][str(r)] = d["comms"]
    doc["ranks"] = ranks
    return doc


@command("counters", "low-level counters of a counters-mode run (per rank, bins, eager, pvars)", _setup_counters)
def cmd_counters(a: argparse.Namespace) -> int:
    """`mpilens counters`: print the counters of a counters-mode run (per rank, bins, eager, pvars)."""
    from ..counters_spc import load
    from ..units import counter as format_value

    c = load(a.rundir)
    if a.list:
        rows = [{"name": x["name"], "type": x["type"], "group": x["group"], "seed": x.get("seed"),
                 "description": x.get("description", "")} for x in c.layout.doc["counters"]]
        if a.json:
            json.dump(rows, sys.stdout, indent=1)
            print()
        else:
            for x in rows:
                print(f"{x['name']:<40} {x['type']:<15} {x['group']:<12} {x['description']}")
        return 0
    doc = counters_doc(c)
    if a.json:
        json.dump(doc, sys.stdout, indent=1)
        print()
        return 0
    ranks = doc["ranks"] if a.rank is None else [a.rank]
    idx = [doc["ranks"].index(r) for r in ranks if r in doc["ranks"]]
    e = doc["eager"] or {}
    print(f"mpilens counters: {a.rundir}: {c.nranks} ranks, {doc['mpi']} ({doc['transport']}), groups "
          f"{','.join(doc['groups'])}, snapshots every {doc['snapshot_ms']} ms")
    if e.get("shm_limit") is not None or e.get("net_limit") is not None:
        print(f"Eager limit: {e.get('shm_limit')} B on the node ({e.get('shm_source')}), "
              f"{e.get('net_limit')} B between nodes ({e.get('net_source')})")
    else:
        print("Eager limit: not available from this MPI's cvars: eager counters not measured")
    head = f"{'counter':<28}" + "".join(f"{'rank ' + str(doc['ranks'][i]):>14}" for i in idx)
    print(head)
    for name, vals in doc["counters"].items():
        if all(v is None for v in vals):
            print(f"{name:<28}" + "not measured".rjust(14))
            continue
        print(f"{name:<28}" + "".join(f"{format_value(name, vals[i]):>14}" for i in idx))
    if doc["bins"]:
        b = doc["bins"]["P2P_MESSAGE_SIZE"]
        labels = [f"<={x}" for x in b["rules"]] + [f">{b['rules'][-1]}" if b["rules"] else "all"]
        print("P2P_MESSAGE_SIZE bins (bytes): " + ", ".join(labels))
        for i in idx:
            print(f"  rank {doc['ranks'][i]}: " + " ".join(str(v) for v in b["bins"][i]))
    if doc["collective_bins"]:
        print("Collective bins (small msg/small comm, small/large, large/small, large/large):")
        for name, v in doc["collective_bins"].items():
            print(f"  {name:<28}" + "  ".join("/".join(str(x) for x in v["bins"][i]) for i in idx))
    print("MPI pvars read: " + (", ".join(doc["pvars"]) or "none"))
    for p in doc["pvars_absent"]:
        print(f"  absent: {p['name']} ({p['why']})")
    for p in c.problems:
        print(f"Note: {p}")
    return 0


# ------------------------------------------------------------------------------------ top
def _setup_top(p: argparse.ArgumentParser) -> None:
    p.add_argument("rundir", type=Path)
    p.add_argument("--interval", type=float, default=1.0, help="seconds between refreshes (default 1)")
    p.add_argument("--once", action="store_true", help="print the table once and exit")
    p.add_argument("--count", type=int, default=0, help="refresh this many times, then exit (0: until the job ends)")
    p.add_argument("--counters", default=",".join(TOP_COLUMNS), help="comma-separated counter names")
    p.add_argument("--json", action="store_true", help="with --once: one JSON document")


def top_doc(rundir: Path, names: list[str]) -> dict[str, Any]:
    """The live values of the named counters of every rank that published them, as one document."""
    from ..counters_spc import read_live

    layout, live = read_live(rundir)
    cols = [n for n in names if n in layout.by_name]
    rows = []
    for v in live:
        row: dict[str, Any] = {"rank": v["rank"], "state": v["state"], "t_s": round(v["t_s"], 3),
                               "updates": v["updates"]}
        for n in cols:
            x = layout.by_name[n]
            if not layout.available(n):
                row[n] = None
            elif x["type"] == "timer":
                row[n] = int(v["values"][x["offset"]]) / (v["ticks_per_ns"] or 1.0) * 1e-9
            else:
                row[n] = int(v["values"][x["offset"]])
        rows.append(row)
    return {"run": str(rundir), "live_dir": layout.doc["live_dir"], "nranks": layout.doc["nranks"],
            "columns": cols, "ranks": rows}


def _top_table(doc: dict[str, Any]) -> Any:
    from rich.table import Table

    from ..units import counter as format_value

    t = Table(title=f"mpilens top: {doc['run']} ({len(doc['ranks'])}/{doc['nranks']} ranks publishing)")
    for c in ["rank", "state", "t (s)"] + doc["columns"]:
        t.add_column(c, justify="right")
    for r in doc["ranks"]:
        t.add_row(str(r["rank"]), r["state"], f"{r['t_s']:.1f}", *[format_value(c, r[c]) for c in doc["columns"]])
    return t


def _plain_table(doc: dict[str, Any]) -> str:
    from ..units import counter as format_value

    cols = ["rank", "state", "t (s)"] + doc["columns"]
    rows = [[str(r["rank"]), r["state"], f"{r['t_s']:.1f}", *[format_value(c, r[c]) for c in doc["columns"]]]
            for r in doc["ranks"]]
    width = [max(len(c), *(len(r[i]) for r in rows)) if rows else len(c) for i, c in enumerate(cols)]
    lines = [f"mpilens top: {doc['run']} ({len(doc['ranks'])}/{doc['nranks']} ranks publishing)",
             "  ".join(c.rjust(w) for c, w in zip(cols, width))]
    lines += ["  ".join(v.rjust(w) for v, w in zip(r, width)) for r in rows]
    return "\n".join(lines)


@command("top", "live per-rank counters of a running counters-mode job", _setup_top)
def cmd_top(a: argparse.Namespace) -> int:
    """`mpilens top`: show the live per-rank counters of a running counters-mode job."""
    names = [n.strip().upper() for n in a.counters.split(",") if n.strip()]
    if a.once:
        doc = top_doc(a.rundir, names)
        if a.json:
            json.dump(doc, sys.stdout, indent=1)
            print()
        else:
            print(_plain_table(doc))
        return 0
    from rich.live import Live

    n = 0
    with Live(_top_table(top_doc(a.rundir, names)), refresh_per_second=4) as live:
        while True:
            doc = top_doc(a.rundir, names)
            live.update(_top_table(doc))
            n += 1
            if (a.count and n >= a.count) or (doc["ranks"] and all(r["state"] == "finished" for r in doc["ranks"])):
                break
            time.sleep(a.interval)
    return 0


# ------------------------------------------------------------------------------------ heatmap
def _setup_heatmap(p: argparse.ArgumentParser) -> None:
    p.add_argument("rundir", type=Path)
    p.add_argument("--counter", required=True, help="counter name, e.g. BYTES_SENT_USER")
    p.add_argument("--grid", help="also remap the per-rank totals onto a WxH process grid, e.g. 8x5")
    p.add_argument("-o", "--output", type=Path, help="PNG file (default: <counter>.png in the current directory)")
    p.add_argument("--json", action="store_true", help="print the matrix as JSON instead of drawing it")


@command("heatmap", "rank x time heatmap of a counter from the snapshots (counters mode)", _setup_heatmap)
def cmd_heatmap(a: argparse.Namespace) -> int:
    """`mpilens heatmap`: draw a rank x time heatmap of a counter from the snapshots."""
    import numpy as np

    from ..counters_spc import grid_remap, load, parse_grid, rank_totals
    from ..report.heatmap import draw_heatmap

    c = load(a.rundir)
    x = c.layout.counter(a.counter)
    if not c.layout.available(x["name"]):
        raise MpilensError(f"{x['name']} was not measured in this run (group {x['group']} off or not available)")
    grid = parse_grid(a.grid) if a.grid else None
    m, times = c.matrix(x["name"])
    if a.json:
        doc: dict[str, Any] = {"counter": x["name"], "type": x["type"], "times_s": [round(float(t), 4) for t in times],
                               "matrix": [[None if np.isnan(v) else float(v) for v in row] for row in m]}
        if grid:
            img = grid_remap(rank_totals(m), grid)
            doc["grid"] = [[None if np.isnan(v) else float(v) for v in row] for row in img]
        json.dump(doc, sys.stdout)
        print()
        return 0
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = a.output or Path(f"{x['name'].replace(':', '_')}.png")
    fig = plt.figure(figsize=(11 if grid else 7, 6))
    draw_heatmap(fig, m, times, x["name"], grid)
    fig.tight_layout()
    try:
        fig.savefig(out, dpi=150)
    except OSError as err:
        raise MpilensError(f"cannot write {out}: {err.strerror}") from err
    print(f"Wrote {out} ({m.shape[0]} ranks x {m.shape[1]} snapshots)")
    return 0
