"""A run as a Hatchet GraphFrame (regions -> MPI functions, metrics per rank) and runs as a Thicket
ensemble, for analyses in LLNL's Hatchet/Thicket ecosystem:

    import mpilens
    gf = mpilens.to_hatchet("myrun")                 # needs llnl-hatchet
    print(gf.tree(metric_column="time (inc)"))
    tk = mpilens.to_thicket(["run1", "run2", ...])   # needs llnl-thicket

The tree has one root, ``main``: the whole run from the end of MPI_Init to MPI_Finalize. Under it,
the user regions as nested in the profile; under each region (and under ``main`` for calls made
outside any region) the MPI functions called directly there. Rows are indexed by (node, rank).

Metrics (seconds, counts, bytes; NaN for a rank that left no data):

- ``time (inc)``: the root's wall time, a region's time, an MPI function's time;
- ``time``: exclusive time: for a region (and the root), its time minus what its children took, that
  is the time spent outside MPI directly in it; for a function, its time;
- ``calls``, ``bytes_sent``, ``bytes_recv``: of MPI functions (0 on regions and the root), so that
  the sum over nodes of a rank equals the profile's totals; ``calls (inc)`` etc. sum them over a
  subtree;
- ``visits``: how often a region was entered (1 for the root, 0 for functions);
- ``counter:NAME``: user counters (mpilens_counter_add/set) recorded directly in a region; on the
  root, the sums recorded outside every region and the run's last value of counters that are set.

The file that `mpilens export hatchet` writes is Hatchet's own JSON serialization (the format of
``GraphFrame.to_json``): ``hatchet.GraphFrame.from_json(open(FILE).read())`` reads it. Writing it does
not need Hatchet. ``--format literal`` writes Hatchet's literal format (one value per node, the mean
over ranks), read with ``GraphFrame.from_literal(json.load(open(FILE)))``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .. import safefile
from .._layout import ProfileKeys, RankKeys, ToolKeys
from ..callsites import callsites, location
from ..errors import MpilensError
from ..rundir import Run
from . import Exporter, Option, exporter
from .common import ROOT_NAME, TreeNode, add, as_run, build_tree, fill_inclusive, measured_ranks, per_rank, sub

EXC_METRICS = ["time", "calls", "bytes_sent", "bytes_recv"]
INC_METRICS = ["time (inc)", "calls (inc)", "bytes_sent (inc)", "bytes_recv (inc)"]


def _columns(nodes: list[TreeNode]) -> list[str]:
    extra = sorted({k for node in nodes for k in node.metrics if k.startswith("counter:")})
    return EXC_METRICS + INC_METRICS + ["visits"] + extra


def _run_metadata(run: Run) -> dict[str, Any]:
    meta = run.meta or {}
    lib = (meta.get("mpi") or {}).get("library", "") if isinstance(meta.get("mpi"), dict) else ""
    cmd = meta.get("command")
    return {
        "mpilens.run": str(run.path), "mpi": (run.profile.get(ProfileKeys.TOOL) or {}).get(ToolKeys.MPI),
        "mpi.library": lib.splitlines()[0].strip() if lib else None, "nranks": run.profile[ProfileKeys.NRANKS],
        "wall_time_s": run.profile.get(ProfileKeys.WALL_TIME_S), "command": " ".join(cmd) if isinstance(cmd, list) else None,
        "complete": run.complete,
    }


def build_callpath_tree(run: Run) -> list[TreeNode]:
    """Return the nodes of the call-path tree of a run with call sites (MPILENS_CALLSITE_DEPTH):
    ``main`` -> the frames of each site from the outermost inwards ("symbol (file:line)") -> the
    MPI function, whose metrics are the site's. Sites that share their outer frames share those
    nodes; a frame's inclusive time is the time of the MPI calls made under it."""
    profile = run.profile
    n = profile[ProfileKeys.NRANKS]
    measured = measured_ranks(profile[ProfileKeys.RANKS])
    zeros: list[float | None] = [0.0 if m else None for m in measured]
    wall = [r.get(RankKeys.WALL_TIME_S) for r in profile[ProfileKeys.RANKS]]
    nodes = [TreeNode(0, ROOT_NAME, "program", None, {"time (inc)": per_rank(wall, n),
                                                      "visits": [1.0 if m else None for m in measured]})]
    index: dict[tuple[int, str], int] = {}
    mpi_total = list(zeros)
    for site in callsites(run):
        frames = site.get("path") or [{"symbol": site["symbol"], "file": site["file"], "line": site["line"]}]
        parent = 0
        for f in reversed(frames):
            name = f"{f['symbol']} ({location(f)})" if f.get("line") else str(f["symbol"])
            key = (parent, name)
            if key not in index:
                node = TreeNode(len(nodes), name, "callsite", parent, {"time (inc)": list(zeros), "time": list(zeros)})
                nodes.append(node)
                nodes[parent].children.append(node.nid)
                index[key] = node.nid
            parent = index[key]
        t = per_rank(site["time_s"], n)
        node = TreeNode(len(nodes), site["mpi_function"], "function", parent, {
            "time (inc)": t, "time": t, "calls": per_rank(site["calls"], n), "bytes_sent": per_rank(site["bytes_sent"], n),
            "bytes_recv": per_rank(site["bytes_recv"], n), "visits": list(zeros)})
        nodes.append(node)
        nodes[parent].children.append(node.nid)
        mpi_total = add(mpi_total, t)
        p = parent
        while p != 0:  # the frames above it include its time
            nodes[p].metrics["time (inc)"] = add(nodes[p].metrics["time (inc)"], t)
            p = nodes[p].parent or 0
    nodes[0].metrics["time"] = sub(nodes[0].metrics["time (inc)"], mpi_total)
    for node in nodes:
        for k in ("calls", "bytes_sent", "bytes_recv"):
            node.metrics.setdefault(k, list(zeros))
        node.metrics.setdefault("visits", list(zeros))
    # depth-first order (each node before its children), as the writers expect
    order: list[int] = []
    stack = [0]
    while stack:
        i = stack.pop()
        order.append(i)
        stack.extend(reversed(nodes[i].children))
    renum = {old: new for new, old in enumerate(order)}
    out = []
    for old in order:
        nd = nodes[old]
        out.append(TreeNode(renum[old], nd.name, nd.kind, None if nd.parent is None else renum[nd.parent], nd.metrics,
                            [renum[c] for c in nd.children]))
    fill_inclusive(out)
    return out


def _tree(run: Run, tree: str) -> list[TreeNode]:
    if tree == "callpaths":
        if not run.profile.get(ProfileKeys.CALLSITES):
            raise MpilensError("the run has no call sites (MPILENS_CALLSITE_DEPTH=0, or made by an earlier mpilens)")
        return build_callpath_tree(run)
    if tree != "regions":
        raise MpilensError(f"unknown Hatchet tree {tree!r} (regions, callpaths)")
    return build_tree(run.profile)


def to_dict(run: Run | str | Path, tree: str = "regions") -> dict[str, Any]:
    """Return Hatchet's JSON serialization of a run (the structure GraphFrame.to_dict makes);
    tree "callpaths": the call-path tree of the call sites (build_callpath_tree)."""
    run = as_run(run)
    nodes = _tree(run, tree)
    cols = _columns(nodes)
    graph = {str(nd.nid): {"data": {"name": nd.name, "type": nd.kind}, "children": nd.children} for nd in nodes}
    rows = []
    for nd in nodes:
        for r in range(run.profile[ProfileKeys.NRANKS]):
            row: dict[str, Any] = {"node": nd.nid, "rank": r, "name": nd.name}
            for c in cols:
                v = nd.metrics.get(c, [None] * run.profile[ProfileKeys.NRANKS])[r]
                row[c] = None if v is None or (isinstance(v, float) and math.isnan(v)) else v
            rows.append(row)
    return {"graph": [graph], "dataframe_indices": ["node", "rank"], "dataframe": rows,
            "inclusive_metrics": INC_METRICS, "exclusive_metrics": EXC_METRICS, "metadata": _run_metadata(run)}


def to_literal(run: Run | str | Path, tree: str = "regions") -> list[dict[str, Any]]:
    """Return the tree in Hatchet's literal format, each metric as the mean over measured ranks."""
    run = as_run(run)
    nodes = _tree(run, tree)
    cols = [c for c in _columns(nodes) if not c.startswith("counter:")]

    def mean(vals: list[float | None]) -> float:
        got = [v for v in vals if v is not None]
        return sum(got) / len(got) if got else 0.0

    def lit(nd: TreeNode) -> dict[str, Any]:
        out: dict[str, Any] = {"frame": {"name": nd.name, "type": nd.kind},
                               "metrics": {c: mean(nd.metrics[c]) for c in cols}}
        if nd.children:
            out["children"] = [lit(nodes[c]) for c in nd.children]
        return out
    return [lit(nodes[0])]


def _import_hatchet() -> Any:
    try:
        from hatchet.frame import Frame
        from hatchet.graph import Graph
        from hatchet.graphframe import GraphFrame
        from hatchet.node import Node
    except ImportError as err:
        raise MpilensError("Hatchet is not installed: pip install llnl-hatchet (or mpilens[hatchet]); "
                           "`mpilens export hatchet` writes a file Hatchet reads without it") from err
    return Frame, Graph, GraphFrame, Node


def to_hatchet(run: Run | str | Path, tree: str = "regions") -> Any:
    """Return the run (a Run or a run directory path) as a hatchet GraphFrame indexed by (node, rank),
    with the run's metadata in gf.metadata; tree "callpaths": main -> call-path frames -> MPI
    functions, from the call sites."""
    import pandas as pd

    Frame, Graph, GraphFrame, Node = _import_hatchet()
    run = as_run(run)
    nodes = _tree(run, tree)
    cols = _columns(nodes)
    hn: list[Any] = []
    for nd in nodes:
        node = Node(Frame({"name": nd.name, "type": nd.kind}), parent=None, hnid=nd.nid,
                    depth=0 if nd.parent is None else hn[nd.parent]._depth + 1)
        if nd.parent is not None:
            hn[nd.parent].add_child(node)
            node.add_parent(hn[nd.parent])
        hn.append(node)
    graph = Graph([hn[0]])
    graph.enumerate_traverse()
    n = run.profile[ProfileKeys.NRANKS]
    records: dict[str, list[Any]] = {"node": [], "rank": [], "name": []}
    for c in cols:
        records[c] = []
    for nd in nodes:
        for r in range(n):
            records["node"].append(hn[nd.nid])
            records["rank"].append(r)
            records["name"].append(nd.name)
            for c in cols:
                v = nd.metrics.get(c, [None] * n)[r]
                records[c].append(float("nan") if v is None else v)
    df = pd.DataFrame(records).set_index(["node", "rank"]).sort_index()
    return GraphFrame(graph, df, list(EXC_METRICS), list(INC_METRICS), default_metric="time (inc)",
                      metadata=_run_metadata(run))


def to_thicket(runs: Iterable[Run | str | Path]) -> Any:
    """Return several runs as one Thicket ensemble (index: node, profile, rank); the profile of a
    run is a hash of its directory path, and tk.metadata holds each run's MPI, ranks, command."""
    try:
        from thicket import Thicket
    except ImportError as err:
        raise MpilensError("Thicket is not installed: pip install llnl-thicket (or mpilens[hatchet])") from err
    parts = []
    for r in runs:
        run = as_run(r)
        parts.append(Thicket.thicketize_graphframe(to_hatchet(run), str(run.path)))
    if not parts:
        raise MpilensError("to_thicket needs at least one run directory")
    if len(parts) == 1:
        return parts[0]
    return Thicket.concat_thickets(parts, axis="index", disable_tqdm=True)


def write(run: Run | str | Path, output: Path, fmt: str = "json", tree: str = "regions") -> dict[str, int]:
    """Write the run for Hatchet into output; return what was written (nodes, rows)."""
    run = as_run(run)
    if fmt == "json":
        doc: Any = to_dict(run, tree)
        rows = len(doc["dataframe"])
        nodes = len(doc["graph"][0])
    elif fmt == "literal":
        doc = to_literal(run, tree)
        nodes = len(_tree(run, tree))
        rows = nodes
    else:
        raise MpilensError(f"unknown Hatchet format {fmt!r} (json, literal)")
    safefile.write_text(output, json.dumps(doc, allow_nan=False))
    return {"nodes": nodes, "rows": rows}


def _export(run: Run, output: Path, progress: Any = None, format: str = "json", tree: str = "regions") -> dict[str, int]:
    return write(run, output, format, tree)


def _describe(output: Path, written: dict[str, int], options: dict[str, Any]) -> str:
    reader = "GraphFrame.from_json(open(FILE).read())" if options.get("format", "json") == "json" else \
        "GraphFrame.from_literal(json.load(open(FILE)))"
    return f"Wrote {output}: {written['nodes']} nodes, {written['rows']} rows; read it with hatchet's {reader}"


exporter(Exporter(
    "hatchet", "a profile as a Hatchet GraphFrame file (regions -> MPI functions, per rank; Hatchet/Thicket)",
    "profile", ".hatchet.json", _export, describe=_describe,
    options=(Option(("--format",), {"dest": "format", "choices": ["json", "literal"], "default": "json",
                                    "help": "hatchet: json: Hatchet's GraphFrame serialization, all ranks "
                                            "(GraphFrame.from_json); literal: Hatchet's literal format, mean over "
                                            "ranks (GraphFrame.from_literal); default json"}),
             Option(("--tree",), {"dest": "tree", "choices": ["regions", "callpaths"], "default": "regions",
                                  "help": "hatchet: regions: regions -> MPI functions (default); callpaths: "
                                          "main -> call-path frames -> MPI functions, from the call sites "
                                          "(MPILENS_CALLSITE_DEPTH > 1 for paths)"}))))
