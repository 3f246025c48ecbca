"""A run as a Caliper region profile, the file Thicket and Hatchet read natively:

    mpilens export caliper myrun -o myrun.json    # Caliper's json-split (hatchet-region-profile's format)
    mpilens export caliper myrun -o myrun.cali    # Caliper's .cali format (read with caliper-reader)

    import thicket as th
    tk = th.Thicket.from_caliper(["run1.json", "run2.json", "run3.json"])       # json-split files
    tk = th.Thicket.from_caliperreader(["run1.cali", "run2.cali", "run3.cali"]) # .cali files
    gf = hatchet.GraphFrame.from_caliper("run1.json")                           # one run

The json-split file is what Caliper's ``hatchet-region-profile`` config (and ``cali-query -q
"... format json-split"``) writes: ``data`` (one row per node and rank), ``columns``,
``column_metadata``, ``nodes`` (``label``, ``column`` "path", ``parent``) and the run's metadata as
top-level keys, which Hatchet's reader (hatchet/readers/caliper_reader.py) keeps as the profile's
metadata and Thicket as one row of ``tk.metadata``. The .cali file holds the same records in
Caliper's own stream format: the tree as nested ``region`` and ``mpi.function`` attributes (as
Caliper's mpi service records an MPI call inside a region), one snapshot record per node and rank,
the metadata as globals (hatchet/readers/caliper_native_reader.py).

The tree is the one of `mpilens export hatchet` (mpilens.exports.common.build_tree): the root
``main`` (the run from MPI_Init to MPI_Finalize), the user regions as nested, and under each region
(and under ``main`` for calls outside every region) the MPI functions called directly there.
Metrics per node and rank, named as Caliper's region profiles and Hatchet's Caliper readers name
them (NaN where a rank left no data):

- ``time``: exclusive time in seconds (Caliper's ``sum#time.duration``): an MPI function's time; a
  region's time outside its children (regions and MPI functions), so the ``time`` of all nodes of a
  rank adds up to its wall time;
- ``time (inc)``: inclusive time (``inclusive#sum#time.duration``): the wall time of ``main``, a
  region's time, an MPI function's time;
- ``Calls``: how often the node was entered (Caliper's ``region.count``): the calls of an MPI
  function, the visits of a region, 1 for ``main``;
- ``Bytes sent``, ``Bytes recv``: the bytes an MPI function's calls sent and received (the buffer
  view of runtime/spec/semantics.yaml; 0 on regions), and their sums over a subtree,
  ``Bytes sent (inc)``, ``Bytes recv (inc)``;
- ``counter:NAME``: user counters recorded directly in a region (on ``main``, outside every region).

The rank is the column ``mpi.rank`` (``rank`` in Hatchet's and Thicket's index). The metadata are
Adiak's names (``launchdate``, ``executable``, ``executablepath``, ``cmdline``,
``working_directory``, ``hostname``, ``hostlist``, ``numhosts``, ``jobsize``, ``mpi_library``,
``mpi_version``, ``walltime``), Caliper's ``mpi.world.size``, and mpilens' own: ``mpilens.version``,
``mpilens.mpi``, ``mpilens.run`` (the run directory's name), ``mpilens.complete`` and
``mpilens.profile``, an integer that identifies the run (a hash of its meta.json): distinct for
every run, the same for every export of one run, so that runs of one program load as one Thicket
ensemble of distinct profiles.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

from .. import safefile
from .._layout import ProfileKeys, RankKeys, ToolKeys
from ..rundir import Run
from . import Exporter, exporter
from .common import TreeNode, as_run, build_tree

# (column, unit, where its per-rank values come from: a TreeNode metric, or "Calls")
METRICS = [("time", "sec", "time"), ("time (inc)", "sec", "time (inc)"), ("Calls", "count", "Calls"),
           ("Bytes sent", "Byte", "bytes_sent"), ("Bytes recv", "Byte", "bytes_recv"),
           ("Bytes sent (inc)", "Byte", "bytes_sent (inc)"), ("Bytes recv (inc)", "Byte", "bytes_recv (inc)")]
SUFFIX_CALI = ".cali"


def profile_id(run: Run) -> int:
    """An integer identifying the run: a hash of its meta.json (of its profile when it has none);
    the same for every export of one run, distinct between runs."""
    what = {"meta": run.meta, "snapshot": run.snapshot} if run.meta else {"profile": run.profile,
                                                                         "snapshot": run.snapshot}
    digest = hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()
    return int(digest[:11], 16)  # as long as Thicket's own profile hashes


def _listed(values: list[Any]) -> str:
    """A list as Adiak hands it to Caliper: "[a,b,c]"."""
    return "[" + ",".join(str(v) for v in values) + "]"


def run_globals(run: Run) -> dict[str, Any]:
    """The run's metadata as Caliper globals: Adiak's names where Adiak has one, mpilens.* else."""
    meta = run.meta or {}
    profile = run.profile
    mpi = meta.get("mpi") if isinstance(meta.get("mpi"), dict) else {}
    library = str(mpi.get("library") or "").strip()
    hosts = meta.get("hosts") or list(dict.fromkeys(r[RankKeys.HOST] for r in profile[ProfileKeys.RANKS]
                                                          if r.get(RankKeys.HOST)))
    rank_host = meta.get("rank_host") or []
    cmd = meta.get("command")
    program = meta.get("program")
    out: dict[str, Any] = {
        "mpilens.version": (profile.get(ProfileKeys.TOOL) or {}).get(ToolKeys.VERSION)
        or (meta.get("tool") or {}).get("version"),
        "mpilens.mpi": (profile.get(ProfileKeys.TOOL) or {}).get(ToolKeys.MPI) or mpi.get("flavor"),
        "mpilens.run": Path(run.path).resolve().name,
        "mpilens.profile": profile_id(run),
        "mpilens.complete": run.complete,
        "mpi.world.size": profile[ProfileKeys.NRANKS],
        "jobsize": profile[ProfileKeys.NRANKS],
        "launchdate": meta.get("started_unix_s"),
        "executable": Path(program).name if isinstance(program, str) else None,
        "executablepath": program if isinstance(program, str) else None,
        "cmdline": _listed(cmd) if isinstance(cmd, list) else None,
        "working_directory": meta.get("cwd") if isinstance(meta.get("cwd"), str) else None,
        "hostname": hosts[rank_host[0]] if hosts and rank_host else (hosts[0] if hosts else None),
        "hostlist": _listed(hosts) if hosts else None,
        "numhosts": len(hosts) if hosts else None,
        "mpi_library": library.splitlines()[0].strip() if library else None,
        "mpi_version": mpi.get("standard"),
        "walltime": profile.get(ProfileKeys.WALL_TIME_S),
    }
    return {k: v for k, v in out.items() if v is not None}


def _value(v: float | None, unit: str) -> float | int | None:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    if unit in ("count", "Byte") and float(v).is_integer():
        return int(v)
    return v


def _metrics(nodes: list[TreeNode]) -> list[tuple[str, str, str]]:
    counters = sorted({k for nd in nodes for k in nd.metrics if k.startswith("counter:")})
    return METRICS + [(c, "", c) for c in counters]


def _column(nd: TreeNode, source: str, n: int) -> list[float | None]:
    if source == "Calls":  # Caliper's region.count: calls of a function, visits of a region
        return nd.metrics["calls" if nd.kind == "function" else "visits"]
    return nd.metrics.get(source, [None] * n)


def to_json_split(run: Run | str | Path) -> dict[str, Any]:
    """Return the run as Caliper's json-split document (what hatchet-region-profile writes): rows
    ordered by rank then node; the last column "path" is the node (an index into "nodes"), the
    first "Node order" too, which Hatchet's reader needs (Thicket.from_caliper reads with node
    ordering) and takes from row i for node i. "Node order" is a reference column (is_value false),
    not a value: Hatchet's reader lists every value column among the metrics, "Node order"
    included although it drops that column, and its filter, squash and update_inclusive_columns
    then fail on the missing column."""
    run = as_run(run)
    return _json_split(run, build_tree(run.profile))


def _json_split(run: Run, nodes: list[TreeNode]) -> dict[str, Any]:
    n = run.profile[ProfileKeys.NRANKS]
    metrics = _metrics(nodes)
    columns = ["Node order", "mpi.rank"] + [m[0] for m in metrics] + ["path"]
    column_metadata: list[dict[str, Any]] = [{"is_value": False, "attribute.alias": "Node order"}, {"is_value": True}]
    column_metadata += [{"is_value": True, **({"attribute.unit": unit} if unit else {})} for _, unit, _ in metrics]
    column_metadata.append({"is_value": False})
    values = {nd.nid: [_column(nd, source, n) for _, _, source in metrics] for nd in nodes}
    data = [[nd.nid, r] + [_value(vals[r], unit) for vals, (_, unit, _) in zip(values[nd.nid], metrics)] + [nd.nid]
            for r in range(n) for nd in nodes]
    tree = [{"label": nd.name, "column": "path", **({"parent": nd.parent} if nd.parent is not None else {})}
            for nd in nodes]
    return {"data": data, "columns": columns, "column_metadata": column_metadata, "nodes": tree, **run_globals(run)}


# ----------------------------------------------------------------------------- the .cali format
# caliper-reader's bootstrap nodes: the type nodes, and the attributes naming attributes
_TYPE_NODE = {"int": 1, "string": 3, "double": 5, "bool": 6}
_ATTR_NAME, _ATTR_PROP = 8, 10
_ASVALUE, _NESTED, _GLOBAL, _SCOPE_PROCESS = 1, 256, 512, 12


def _escape(text: str) -> str:
    """A value in a .cali record: ',', '=' and '\\' escaped with a backslash, newlines as \\n."""
    return text.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=").replace("\n", "\\n")


def _cali_type(v: Any) -> str:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    return "double" if isinstance(v, float) else "string"


def _cali_text(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return repr(v) if isinstance(v, float) else str(v)


def to_cali(run: Run | str | Path) -> str:
    """Return the run in Caliper's .cali stream format (what caliper-reader and Hatchet's and
    Thicket's from_caliperreader read): the tree as nested "region" and "mpi.function" nodes,
    one snapshot record per node and rank, the metadata as globals."""
    run = as_run(run)
    return _cali(run, build_tree(run.profile))


def _cali(run: Run, nodes: list[TreeNode]) -> str:
    n = run.profile[ProfileKeys.NRANKS]
    metrics = _metrics(nodes)
    lines: list[str] = []
    next_id = 12  # after caliper-reader's bootstrap nodes 0-11

    def node(attr: int, data: str, parent: int | None) -> int:
        nonlocal next_id
        nid, next_id = next_id, next_id + 1
        lines.append(f"__rec=node,id={nid},attr={attr},data={_escape(data)}"
                     + (f",parent={parent}" if parent is not None else ""))
        return nid

    def attribute(name: str, typ: str, prop: int, unit: str = "") -> int:
        parent = node(_ATTR_PROP, str(prop), _TYPE_NODE[typ])
        if unit:
            parent = node(unit_attr, unit, parent)
        return node(_ATTR_NAME, name, parent)

    unit_attr = attribute("attribute.unit", "string", _SCOPE_PROCESS)
    region = attribute("region", "string", _NESTED | _SCOPE_PROCESS)
    function = attribute("mpi.function", "string", _NESTED | _SCOPE_PROCESS)
    rank = attribute("mpi.rank", "int", _ASVALUE | _SCOPE_PROCESS)
    # Hatchet's native reader (hatchet 2025.2.0, caliper_native_reader.create_graph) registers a
    # root it reaches through a nested path twice and then adds a second row per rank for it; a
    # root record whose "path" is a plain string takes its branch for roots instead
    root_path = attribute("path", "string", _ASVALUE | _SCOPE_PROCESS)
    metric_attrs = [attribute(name, "double" if unit in ("sec", "") else "int", _ASVALUE | _SCOPE_PROCESS, unit)
                    for name, unit, _ in metrics]
    glob = run_globals(run)
    global_attrs = [attribute(k, _cali_type(v), _ASVALUE | _GLOBAL | _SCOPE_PROCESS) for k, v in glob.items()]
    path: dict[int, int] = {}
    for nd in nodes:
        path[nd.nid] = node(function if nd.kind == "function" else region, nd.name,
                            None if nd.parent is None else path[nd.parent])
    for nd in nodes:
        cols = [_column(nd, source, n) for _, _, source in metrics]
        for r in range(n):
            attrs, data = ([rank, root_path], [str(r), _escape(nd.name)]) if nd.parent is None else ([rank], [str(r)])
            for a, vals, (_, unit, _) in zip(metric_attrs, cols, metrics):
                v = _value(vals[r], unit)
                if v is not None:
                    attrs.append(a)
                    data.append(_cali_text(v))
            lines.append(f"__rec=ctx,ref={path[nd.nid]},attr={'='.join(map(str, attrs))},data={'='.join(data)}")
    lines.append("__rec=globals,attr=" + "=".join(map(str, global_attrs))
                 + ",data=" + "=".join(_escape(_cali_text(v)) for v in glob.values()))
    return "\n".join(lines) + "\n"


def write(run: Run | str | Path, output: Path, progress: Any = None) -> dict[str, int]:
    """Write the run into output: Caliper's .cali format when its name ends in .cali, json-split
    otherwise; return what was written (nodes, rows: one per node and rank)."""
    run = as_run(run)
    nodes = build_tree(run.profile)
    if Path(output).suffix == SUFFIX_CALI:
        text = _cali(run, nodes)
    else:
        text = json.dumps(_json_split(run, nodes), allow_nan=False)
    safefile.write_text(output, text)
    return {"nodes": len(nodes), "rows": len(nodes) * run.profile[ProfileKeys.NRANKS]}


def _describe(output: Path, written: dict[str, int], options: dict[str, Any]) -> str:
    if Path(output).suffix == SUFFIX_CALI:
        how = "Caliper .cali; read it with thicket.Thicket.from_caliperreader([FILE, ...]) or " \
              "hatchet.GraphFrame.from_caliperreader(FILE)"
    else:
        how = "Caliper json-split; read it with thicket.Thicket.from_caliper([FILE, ...]) or " \
              "hatchet.GraphFrame.from_caliper(FILE)"
    return f"Wrote {output}: {written['nodes']} nodes, {written['rows']} rows ({how})"


exporter(Exporter(
    "caliper", "a profile as a Caliper region profile, json-split (.cali format when OUT ends in .cali), read by "
               "Thicket's and Hatchet's from_caliper / from_caliperreader",
    "profile", ".caliper.json", write, describe=_describe))
