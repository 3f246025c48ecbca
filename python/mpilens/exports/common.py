"""What several exporters share: the region visits of a timeline (the trace formats), and the
regions -> MPI functions tree of a profile with per-rank metrics (hatchet, caliper)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._layout import CounterKeys, FunctionKeys, ProfileKeys, RankKeys, RegionKeys
from ..rundir import Run
from ..rundir import load as load_run
from ..summary import summed_function_fields
from ..trace import reader
from ..trace.timeline import Timeline


def region_visits(tl: Timeline) -> list[tuple[int, int, float, float, str]]:
    """Region visits as (rank, thread, start, end, name), from begin/end records."""
    ev = tl.ev
    out, stacks = [], {}
    for i in np.flatnonzero((ev["kind"] == reader.REGION_BEGIN) | (ev["kind"] == reader.REGION_END)):
        key = (int(ev["rank"][i]), int(ev["thread"][i]))
        if ev["kind"][i] == reader.REGION_BEGIN:
            stacks.setdefault(key, []).append((int(ev["fn"][i]), float(ev["t0"][i])))
        elif stacks.get(key):
            path, t0 = stacks[key].pop()
            out.append((key[0], key[1], t0, float(ev["t0"][i]), tl.region_name(key[0], path)))
    return out


# ------------------------------------------------------------------ the profile as a call tree
ROOT_NAME = "main"


def as_run(run: Run | str | Path) -> Run:
    """A Run as given, or the run directory at that path read."""
    return run if isinstance(run, Run) else load_run(run)


@dataclass
class TreeNode:
    """One node of the exported tree, with per-rank metric values (None: not measured)."""

    nid: int
    name: str
    kind: str  # "program" | "region" | "function"
    parent: int | None
    metrics: dict[str, list[float | None]]
    children: list[int] = field(default_factory=list)


def per_rank(values: list[Any] | None, n: int) -> list[float | None]:
    """A profile's per-rank array as floats (None where a rank was not measured; n Nones for none)."""
    if values is None:
        return [None] * n
    return [None if v is None else float(v) for v in values]


def sub(a: list[float | None], b: list[float | None]) -> list[float | None]:
    """a - b per rank (None where either is None)."""
    return [None if x is None or y is None else x - y for x, y in zip(a, b)]


def add(a: list[float | None], b: list[float | None]) -> list[float | None]:
    """a + b per rank (None where either is None)."""
    return [None if x is None or y is None else x + y for x, y in zip(a, b)]


def measured_ranks(run_ranks: list[dict[str, Any]]) -> list[bool]:
    """Per rank of the profile's "ranks", whether it left data (a wall time)."""
    return [r.get(RankKeys.WALL_TIME_S) is not None for r in run_ranks]


def build_tree(profile: dict[str, Any]) -> list[TreeNode]:
    """Return the nodes of the regions -> MPI functions tree of a profile, root first, each node
    before its children (depth-first, regions in profile order, functions by name)."""
    P, F, R, C = ProfileKeys, FunctionKeys, RegionKeys, CounterKeys
    n = profile[P.NRANKS]
    measured = measured_ranks(profile[P.RANKS])
    zeros: list[float | None] = [0.0 if m else None for m in measured]
    nodes: list[TreeNode] = []

    def new(name: str, kind: str, parent: int | None, metrics: dict[str, list[float | None]]) -> TreeNode:
        node = TreeNode(len(nodes), name, kind, parent, metrics)
        nodes.append(node)
        if parent is not None:
            nodes[parent].children.append(node.nid)
        return node

    def add_functions(parent: int, funcs: dict[str, Any]) -> list[float | None]:
        """Add the function children; return their summed time per rank."""
        total = list(zeros)
        for name in sorted(funcs):
            f = funcs[name]
            t = per_rank(f.get(F.TIME_S), n)
            new(name, "function", parent, {  # the exports' metrics (Hatchet's, Caliper's columns)
                "time (inc)": t, "time": t, "calls": per_rank(f.get(F.CALLS), n),
                "bytes_sent": per_rank(f.get(F.BYTES_SENT), n), "bytes_recv": per_rank(f.get(F.BYTES_RECV), n),
                "visits": list(zeros)})
            total = add(total, t)
        return total

    def counters_of(raw: dict[str, Any] | None) -> dict[str, list[float | None]]:
        return {f"counter:{k}": per_rank(c.get(C.VALUES), n) for k, c in sorted((raw or {}).items())}

    def add_regions(parent: int, regions: list[dict[str, Any]]) -> list[float | None]:
        """Add the region children (recursively); return their summed time per rank."""
        total = list(zeros)
        for reg in regions:
            t = per_rank(reg.get(R.TIME_S), n)
            node = new(reg[R.NAME], "region", parent, {"time (inc)": t, "visits": per_rank(reg.get(R.VISITS), n),
                                                       **counters_of(reg.get(R.COUNTERS))})
            inner = add(add_functions(node.nid, reg.get(R.FUNCTIONS, {})), add_regions(node.nid, reg.get(R.REGIONS, [])))
            node.metrics["time"] = sub(t, inner)
            total = add(total, t)
        return total

    wall = [r.get(RankKeys.WALL_TIME_S) for r in profile[P.RANKS]]
    root = new(ROOT_NAME, "program", None, {"time (inc)": per_rank(wall, n), "visits": [1.0 if m else None for m in measured]})
    in_regions = _region_function_totals(profile.get(P.REGIONS, []))
    outside: dict[str, Any] = {}
    for name, f in profile.get(P.FUNCTIONS, {}).items():
        rest = {k: sub(per_rank(f.get(k), n), per_rank(in_regions.get(name, {}).get(k), n) if name in in_regions else zeros)
                for k in summed_function_fields()}
        if any(v for v in rest[F.CALLS] if v):
            outside[name] = rest
    # user counters outside every region: the whole-run sum minus what regions recorded
    counters: dict[str, Any] = {}
    region_counters = _region_counter_totals(profile.get(P.REGIONS, []))
    for name, c in (profile.get(P.COUNTERS) or {}).items():
        values = per_rank(c.get(C.VALUES), n)
        if c.get(C.KIND, "sum") == "sum" and name in region_counters:
            values = [None if v is None else v - (region_counters[name][r] or 0.0) for r, v in enumerate(values)]
        counters[name] = {C.VALUES: values}
    root.metrics.update(counters_of(counters))
    inner = add(add_functions(root.nid, outside), add_regions(root.nid, profile.get(P.REGIONS, [])))
    root.metrics["time"] = sub(root.metrics["time (inc)"], inner)
    for node in nodes:  # regions and the root move no bytes and make no calls themselves
        for k in ("calls", "bytes_sent", "bytes_recv"):
            node.metrics.setdefault(k, list(zeros))
        node.metrics.setdefault("visits", list(zeros))
    fill_inclusive(nodes)
    return nodes


def _region_function_totals(regions: list[dict[str, Any]]) -> dict[str, dict[str, list[float | None]]]:
    """Per function, the per-rank sums over every region node (calls made inside some region)."""
    out: dict[str, dict[str, list[float | None]]] = {}

    def walk(nodes: list[dict[str, Any]]) -> None:
        for reg in nodes:
            for name, f in reg.get(RegionKeys.FUNCTIONS, {}).items():
                n = len(f[FunctionKeys.CALLS])
                slot = out.setdefault(name, {k: [0.0] * n for k in summed_function_fields()})
                for k in slot:
                    slot[k] = add(slot[k], per_rank(f.get(k), n))
            walk(reg.get(RegionKeys.REGIONS, []))
    walk(regions)
    return out


def _region_counter_totals(regions: list[dict[str, Any]]) -> dict[str, list[float | None]]:
    out: dict[str, list[float | None]] = {}

    def walk(nodes: list[dict[str, Any]]) -> None:
        for reg in nodes:
            for name, c in (reg.get(RegionKeys.COUNTERS) or {}).items():
                vals = c.get(CounterKeys.VALUES, [])
                slot = out.setdefault(name, [0.0] * len(vals))
                out[name] = [(s or 0.0) + (v or 0.0) for s, v in zip(slot, vals)]
            walk(reg.get(RegionKeys.REGIONS, []))
    walk(regions)
    return out


def fill_inclusive(nodes: list[TreeNode]) -> None:
    """Fill calls/bytes (inc) as subtree sums (children come after their parents)."""
    for k in ("calls", "bytes_sent", "bytes_recv"):
        for node in nodes:
            node.metrics[f"{k} (inc)"] = list(node.metrics[k])
        for node in reversed(nodes):
            if node.parent is not None:
                parent = nodes[node.parent]
                parent.metrics[f"{k} (inc)"] = add(parent.metrics[f"{k} (inc)"], node.metrics[f"{k} (inc)"])
