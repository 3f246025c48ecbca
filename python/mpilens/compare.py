"""Comparison-based profiling (seeds/002, Shipley et al.): many runs of a baseline A and an
experimental B (two MPIs, two builds, before/after a change), compared node by node over the
tree "whole run; regions -> MPI functions".

For every node and every run, one number: the node's time per rank (mean over the ranks by
default; max or sum with `ranks=`), except the whole run's wall time, which is the slowest rank's.
Over the runs of each side: mean, median, min, max and the coefficient of variation (sample
standard deviation / mean). Then

    ratio = median(A) / median(B)        (> 1: B is faster, < 1: B is slower)

with a percentile bootstrap confidence interval (runs of each side resampled with replacement,
independently; seeded, so the same input gives the same interval) and a two-sided Mann-Whitney U
test of A against B (exact distribution without ties for up to 50 runs a side, else the normal
approximation with tie correction). A node is marked when its interval excludes 1. Children are
sorted by their impact on the total, |median(B) - median(A)| in seconds per rank.

The bootstrap is numpy; the Mann-Whitney test is scipy's (scipy.stats.mannwhitneyu), checked
against known values in tests/test_compare.py.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from . import units
from ._layout import FunctionKeys, ProfileKeys, RankKeys, RegionKeys
from .callsites import callsites, location
from .errors import MpilensError, RunDirectoryError
from .rundir import Run
from .rundir import load as load_run
from .summary import summed_function_fields

RANK_AGGREGATES = ("mean", "max", "sum")
EXACT_MAX = 50  # runs per side up to which the Mann-Whitney test uses the exact distribution
DEFAULT_RESAMPLES = 10000
DEFAULT_CONFIDENCE = 0.95
DEFAULT_SEED = 0


# ------------------------------------------------------------------------------------- statistics
@dataclass
class Describe:
    """A node's values over the runs of one side."""

    n: int
    mean: float
    median: float
    min: float
    max: float
    cv: float | None  # sample standard deviation / mean (None for fewer than 2 runs or a zero mean)

    def to_dict(self) -> dict[str, Any]:
        """The statistics as a JSON object."""
        return {"n": self.n, "mean": self.mean, "median": self.median, "min": self.min, "max": self.max, "cv": self.cv}


def describe(values: Sequence[float]) -> Describe:
    """Return mean, median, min, max and coefficient of variation of values (at least one)."""
    v = np.asarray(values, dtype=float)
    mean = float(v.mean())
    cv = float(v.std(ddof=1) / mean) if len(v) > 1 and mean > 0 else None
    return Describe(len(v), mean, float(np.median(v)), float(v.min()), float(v.max()), cv)


def mann_whitney(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Two-sided p-value of the Mann-Whitney U test that x and y come from the same distribution
    (None when a side is empty): exact without ties up to EXACT_MAX runs per side, else the normal
    approximation with tie and continuity corrections."""
    from scipy.stats import mannwhitneyu  # imported here: the CLI does not load scipy to start

    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(a) == 0 or len(b) == 0:
        return None
    ties = len(np.unique(np.concatenate([a, b]))) < len(a) + len(b)
    exact = not ties and len(a) <= EXACT_MAX and len(b) <= EXACT_MAX
    if not exact and np.ptp(np.concatenate([a, b])) == 0:
        return 1.0  # every value equal: nothing tells the sides apart
    p = mannwhitneyu(a, b, alternative="two-sided", method="exact" if exact else "asymptotic").pvalue
    return float(min(1.0, p))


def bootstrap_ratio_ci(a: np.ndarray, b: np.ndarray, confidence: float = DEFAULT_CONFIDENCE,
                       resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED) -> np.ndarray:
    """Percentile bootstrap interval of median(A) / median(B) for each row of a (nodes x runs of A)
    and b (nodes x runs of B); returns nodes x 2 (low, high), NaN where undefined. The same
    resampled run indices are used for every node (they are resamples of runs, not of nodes)."""
    a = np.atleast_2d(np.asarray(a, dtype=float))
    b = np.atleast_2d(np.asarray(b, dtype=float))
    rng = np.random.default_rng(seed)
    ia = rng.integers(0, a.shape[1], size=(resamples, a.shape[1]))
    ib = rng.integers(0, b.shape[1], size=(resamples, b.shape[1]))
    q = [(1 - confidence) / 2, 1 - (1 - confidence) / 2]
    out = np.full((a.shape[0], 2), np.nan)
    chunk = max(1, 4_000_000 // (resamples * max(a.shape[1], b.shape[1])))
    for s in range(0, a.shape[0], chunk):
        ma = np.median(a[s:s + chunk][:, ia], axis=2)
        mb = np.median(b[s:s + chunk][:, ib], axis=2)
        with np.errstate(divide="ignore", invalid="ignore"):
            r = ma / mb
            r[(ma == 0) & (mb == 0)] = 1.0  # neither side spent time in this resample: no difference
            out[s:s + chunk] = np.quantile(r, q, axis=1).T
    return out


# ------------------------------------------------------------------------------------- per-run values
# Node keys are tuples of (kind, name) steps from the top:
#   (("run", "wall"),)                      wall time of the slowest rank
#   (("run", "mpi"),) / + (("function", F),) MPI time, and per MPI function, whole run
#   (("run", "compute"),)                   time outside MPI
#   (("region", R1), ("region", R2), ...)   region paths; + (("function", F),) MPI calls made directly in
#   (("region", OUTSIDE),)                  time and MPI calls outside every region
Key = tuple[tuple[str, str], ...]
OUTSIDE = "(outside regions)"
WALL, MPI, COMPUTE = (("run", "wall"),), (("run", "mpi"),), (("run", "compute"),)


def _agg(values: Iterable[Any], how: str) -> float | None:
    got = [float(v) for v in values if v is not None]
    if not got:
        return None
    if how == "max":
        return max(got)
    if how == "sum":
        return sum(got)
    return sum(got) / len(got)


@dataclass
class NodeValue:
    """One node in one run: time (rank-aggregated seconds), calls and bytes (the same aggregate)."""

    time: float
    calls: float | None = None
    bytes: float | None = None


def run_values(profile: dict[str, Any], ranks: str = "mean",
               sites: list[dict[str, Any]] | None = None) -> dict[Key, NodeValue]:
    """Return the value of every node of one run; with `sites` (mpilens.callsites.callsites of the
    run), each MPI function of the whole run also has its call sites as children, named by
    file:line and function (so that runs of different builds match by source line)."""
    if ranks not in RANK_AGGREGATES:
        raise MpilensError(f"ranks={ranks!r}: not one of {', '.join(RANK_AGGREGATES)}")
    out: dict[Key, NodeValue] = {}
    P, K, R, F = ProfileKeys, RankKeys, RegionKeys, FunctionKeys
    rk = profile[P.RANKS]
    walls = [r.get(K.WALL_TIME_S) for r in rk]
    mpis = [r.get(K.MPI_TIME_S) for r in rk]
    out[WALL] = NodeValue(_agg(walls, "max") or 0.0)
    out[MPI] = NodeValue(_agg(mpis, ranks) or 0.0)
    out[COMPUTE] = NodeValue(_agg([None if w is None or m is None else w - m for w, m in zip(walls, mpis)], ranks) or 0.0)

    def values(time: list[Any], calls: list[Any], sent: list[Any], recv: list[Any]) -> NodeValue:
        moved = [None if s is None else s + (r or 0) for s, r in zip(sent, recv)]
        return NodeValue(_agg(time, ranks) or 0.0, _agg(calls, ranks), _agg(moved, ranks))

    def fn_value(f: dict[str, Any]) -> NodeValue:
        return values(f.get(F.TIME_S, []), f.get(F.CALLS, []), f.get(F.BYTES_SENT, []), f.get(F.BYTES_RECV, []))

    def site_value(s: dict[str, Any]) -> NodeValue:  # an entry of mpilens.callsites.callsites
        return values(s["time_s"], s["calls"], s["bytes_sent"], s["bytes_recv"])

    for name, f in profile.get(P.FUNCTIONS, {}).items():
        out[MPI + (("function", name),)] = fn_value(f)
    for site in sites or []:
        where = site_name(site)
        key = MPI + (("function", site["mpi_function"]), ("site", where))
        v = site_value(site)
        if key in out:  # two sites that symbolise alike (e.g. two calls on one line): one node
            v = NodeValue(out[key].time + v.time, (out[key].calls or 0) + (v.calls or 0), (out[key].bytes or 0) + (v.bytes or 0))
        out[key] = v

    regions = profile.get(P.REGIONS, [])
    n = profile[P.NRANKS]
    in_regions: dict[str, dict[str, list[float]]] = {}
    summed = summed_function_fields()
    top_time = [0.0] * n

    def walk(nodes: list[dict[str, Any]], prefix: Key, depth: int) -> None:
        for reg in nodes:
            key = prefix + (("region", reg[R.NAME]),)
            out[key] = NodeValue(_agg(reg.get(R.TIME_S, []), ranks) or 0.0, _agg(reg.get(R.VISITS, []), ranks))
            if depth == 0:
                for r, t in enumerate(reg.get(R.TIME_S, [])):
                    top_time[r] += t or 0.0
            for fname, f in reg.get(R.FUNCTIONS, {}).items():
                out[key + (("function", fname),)] = fn_value(f)
                slot = in_regions.setdefault(fname, {k: [0.0] * n for k in summed})
                for k, vals in slot.items():
                    for r, v in enumerate(f.get(k, [])):
                        vals[r] += v or 0.0
            walk(reg.get(R.REGIONS, []), key, depth + 1)
    walk(regions, (), 0)
    outside = (("region", OUTSIDE),)
    out[outside] = NodeValue(_agg([None if w is None else max(w - top_time[r], 0.0) for r, w in enumerate(walls)],
                                  ranks) or 0.0)
    for name, f in profile.get(P.FUNCTIONS, {}).items():
        inside = in_regions.get(name)
        rest = {k: [None if v is None else v - (inside[k][r] if inside else 0.0) for r, v in enumerate(f.get(k, []))]
                for k in summed}
        if any(c for c in rest[F.CALLS] if c):
            out[outside + (("function", name),)] = fn_value(rest)
    return out


def site_name(site: dict[str, Any]) -> str:
    """How a call site is named in a comparison: "file:line in function" (or the function)."""
    where = location(site)
    return f"{where} in {site['symbol']}" if site.get("line") else where


# ------------------------------------------------------------------------------------- comparison
@dataclass
class Side:
    """The runs of one side of a comparison."""

    label: str
    runs: list[Run]
    excluded: list[tuple[str, str]] = field(default_factory=list)  # (path, why)

    @property
    def paths(self) -> list[str]:
        """The run directories of this side."""
        return [str(r.path) for r in self.runs]

    def description(self) -> str:
        """The commands and MPI of the side's runs, in a few words."""
        cmds = {" ".join(r.meta["command"]) for r in self.runs
                if r.meta and isinstance(r.meta.get("command"), list)}
        libs = {" ".join(((r.meta or {}).get("mpi") or {}).get("library", "").splitlines()[0].split())
                for r in self.runs if ((r.meta or {}).get("mpi") or {}).get("library")}
        parts = []
        if len(cmds) == 1:
            parts.append(next(iter(cmds)))
        elif cmds:
            parts.append(f"{len(cmds)} different commands")
        if len(libs) == 1:
            parts.append(next(iter(libs)).split(",")[0])
        return "; ".join(parts)


@dataclass
class CompareNode:
    """One node of the comparison tree."""

    key: Key
    name: str
    kind: str  # "run" | "region" | "function"
    a_values: list[float]
    b_values: list[float]
    a: Describe
    b: Describe
    calls_a: float | None = None  # median over runs of the rank-aggregated calls (functions) or visits (regions)
    calls_b: float | None = None
    ratio: float | None = None
    ci: tuple[float, float] | None = None
    p: float | None = None
    children: list[CompareNode] = field(default_factory=list)

    @property
    def impact(self) -> float:
        """median(B) - median(A), seconds (per rank): > 0 B takes longer."""
        return self.b.median - self.a.median

    @property
    def only(self) -> str | None:
        """"A" or "B" when the node took time on one side only."""
        if self.a.max == 0 and self.b.max > 0:
            return "B"
        if self.b.max == 0 and self.a.max > 0:
            return "A"
        return None

    @property
    def significant(self) -> bool:
        """Whether the confidence interval of the ratio excludes 1 (or the node exists on one side only)."""
        if self.only:
            return True
        return self.ci is not None and not (self.ci[0] <= 1.0 <= self.ci[1])

    @property
    def verdict(self) -> str:
        """The comparison in words: "only in <side>", "B faster" or "B slower" when the interval of the
        ratio excludes 1, "no difference", or "" without an interval."""
        if self.only:
            return f"only in {self.only}"
        if self.ci is None:
            return ""
        if self.ci[0] > 1.0:
            return "B faster"
        if self.ci[1] < 1.0:
            return "B slower"
        return "no difference"

    def walk(self, depth: int = 0) -> Iterable[tuple[int, CompareNode]]:
        """This node and every node under it, depth first, with their depths."""
        yield depth, self
        for c in self.children:
            yield from c.walk(depth + 1)

    def to_dict(self) -> dict[str, Any]:
        """The node as a JSON object (its children nested)."""
        return {
            "path": [list(step) for step in self.key], "name": self.name, "kind": self.kind,
            "a": self.a.to_dict(), "b": self.b.to_dict(), "a_values": self.a_values, "b_values": self.b_values,
            "calls_a": self.calls_a, "calls_b": self.calls_b, "ratio": _finite(self.ratio),
            "ci": None if self.ci is None else [_finite(self.ci[0]), _finite(self.ci[1])], "p": self.p,
            "impact_s": self.impact, "significant": self.significant, "verdict": self.verdict,
            "children": [c.to_dict() for c in self.children],
        }


def _finite(x: float | None) -> float | str | None:
    if x is None or math.isnan(x):
        return None
    if math.isinf(x):
        return "inf"
    return x


@dataclass
class Comparison:
    """The result of compare()."""

    a: Side
    b: Side
    ranks: str
    confidence: float
    resamples: int
    seed: int
    whole: list[CompareNode]  # wall time, MPI time (with functions), time outside MPI
    regions: list[CompareNode]  # top-level regions, then "(outside regions)"; empty without regions

    def nodes(self) -> Iterable[tuple[int, CompareNode]]:
        """Every node of the comparison (whole-run ones, then regions), depth first, with their depths."""
        for n in self.whole + self.regions:
            yield from n.walk()

    def find(self, *names: str) -> CompareNode:
        """The node at a path of names, e.g. find("exchange", "MPI_Alltoall") or find("MPI time")."""
        level = self.whole + self.regions
        node = None
        for name in names:
            node = next((n for n in level if n.name == name), None)
            if node is None:
                raise KeyError("/".join(names))
            level = node.children
        assert node is not None
        return node

    def to_dict(self) -> dict[str, Any]:
        """The comparison as one JSON document."""
        return {
            "a": {"label": self.a.label, "runs": self.a.paths, "excluded": [list(x) for x in self.a.excluded],
                  "description": self.a.description()},
            "b": {"label": self.b.label, "runs": self.b.paths, "excluded": [list(x) for x in self.b.excluded],
                  "description": self.b.description()},
            "method": {
                "value": f"time per node and run: {self.ranks} over ranks (wall time: slowest rank)",
                "ratio": "median(A) / median(B); > 1: B faster",
                "ci": f"{self.confidence:.0%} percentile bootstrap over runs, {self.resamples} resamples, seed {self.seed}",
                "test": "Mann-Whitney U, two-sided",
                "ranks": self.ranks, "confidence": self.confidence, "resamples": self.resamples, "seed": self.seed,
            },
            "whole": [n.to_dict() for n in self.whole],
            "regions": [n.to_dict() for n in self.regions],
        }


NAMES = {WALL: "wall time (slowest rank)", MPI: "MPI time", COMPUTE: "time outside MPI"}


def load_side(paths: Sequence[str | Path], label: str) -> Side:
    """Read the run directories of one side; incomplete or unreadable ones are excluded, with why."""
    side = Side(label, [])
    for p in paths:
        try:
            run = load_run(p)
        except RunDirectoryError as err:
            side.excluded.append((str(p), str(err)))
            continue
        if not run.complete:
            side.excluded.append((str(p), "incomplete run (the job did not reach MPI_Finalize)"))
            continue
        side.runs.append(run)
    return side


def compare(a: Side | Sequence[str | Path], b: Side | Sequence[str | Path], *, ranks: str = "mean",
            confidence: float = DEFAULT_CONFIDENCE, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
            step: Callable[[str], None] | None = None, by_site: bool = False) -> Comparison:
    """Compare the runs of side a (baseline) with those of side b (experimental); with by_site,
    each MPI function of the whole run is also compared per call site (runs with call sites)."""
    sa = a if isinstance(a, Side) else load_side(a, "A")
    sb = b if isinstance(b, Side) else load_side(b, "B")
    for s in (sa, sb):
        if not s.runs:
            why = f" ({'; '.join(f'{p}: {w}' for p, w in s.excluded)})" if s.excluded else ""
            raise MpilensError(f"side {s.label} has no complete run to compare{why}")
    if not 0.5 <= confidence < 1.0:
        raise MpilensError(f"confidence {confidence}: expected a value in [0.5, 1), e.g. 0.95")
    if resamples < 100:
        raise MpilensError(f"resamples {resamples}: use at least 100 (default {DEFAULT_RESAMPLES})")
    if step:
        step("values per run")
    def sites_of(run: Run) -> list[dict[str, Any]] | None:
        if not by_site:
            return None
        return callsites(run)

    va = [run_values(r.profile, ranks, sites_of(r)) for r in sa.runs]
    vb = [run_values(r.profile, ranks, sites_of(r)) for r in sb.runs]
    keys: list[Key] = []
    seen: set[Key] = set()
    for values in va + vb:
        for k in values:
            if k not in seen:
                seen.add(k)
                keys.append(k)
    if not any(k[0][0] == "region" and k[0][1] != OUTSIDE for k in keys):
        keys = [k for k in keys if k[0][0] != "region"]  # no run has regions: no region part
    # a node missing from a complete run took no time there (function not called, region not entered)
    ma = np.array([[v[k].time if k in v else 0.0 for v in va] for k in keys])
    mb = np.array([[v[k].time if k in v else 0.0 for v in vb] for k in keys])
    if step:
        step(f"bootstrap ({resamples} resamples) and tests")
    cis = bootstrap_ratio_ci(ma, mb, confidence, resamples, seed) if len(keys) else np.zeros((0, 2))

    def med_calls(values: list[dict[Key, NodeValue]], k: Key) -> float | None:
        got = [v[k].calls if k in v else 0.0 for v in values]
        got = [c for c in got if c is not None]
        return float(np.median(got)) if got else None

    nodes: dict[Key, CompareNode] = {}
    for i, k in enumerate(keys):
        kind = k[-1][0]
        node = CompareNode(k, NAMES.get(k, k[-1][1]), kind, [float(x) for x in ma[i]], [float(x) for x in mb[i]],
                           describe(ma[i]), describe(mb[i]), med_calls(va, k), med_calls(vb, k))
        if node.a.median > 0 and node.b.median > 0:
            node.ratio = node.a.median / node.b.median
        elif node.a.median == 0 and node.b.median > 0:
            node.ratio = 0.0
        elif node.a.median > 0 and node.b.median == 0:
            node.ratio = math.inf
        if node.a.max > 0 or node.b.max > 0:
            if not np.isnan(cis[i]).any() and not node.only:
                node.ci = (float(cis[i, 0]), float(cis[i, 1]))
            node.p = mann_whitney(ma[i], mb[i])
        nodes[k] = node
    roots: list[CompareNode] = []
    for k in keys:
        parent = nodes.get(k[:-1]) if len(k) > 1 else None
        (parent.children if parent is not None else roots).append(nodes[k])
    for n in nodes.values():
        n.children.sort(key=_impact_order)
    whole = [nodes[k] for k in (WALL, MPI, COMPUTE) if k in nodes]
    regions = sorted((n for n in roots if n.kind == "region"), key=_impact_order)
    return Comparison(sa, sb, ranks, confidence, resamples, seed, whole, regions)


def _impact_order(n: CompareNode) -> tuple[int, float, str]:
    # "(outside regions)" last among regions, then by impact, largest first
    return (1 if n.name == OUTSIDE else 0, -abs(n.impact), n.name)


# ------------------------------------------------------------------------------------- text
def _fmt_ratio(x: float | None) -> str:
    if x is None:
        return "n/a"
    if math.isinf(x):
        return "inf"
    if x != 1.0 and 0.99 < x < 1.01:
        return f"{x:.4f}"  # an interval bound just off 1 must not read as 1
    return f"{x:.3g}"


def _fmt_p(p: float | None) -> str:
    if p is None:
        return "n/a"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def render_text(c: Comparison, show_all: bool = False, min_share: float = 0.001, stats: bool = False) -> str:
    """Return the comparison as text: header, then the tree as a table."""
    out = [f"mpilens compare: A (baseline) {len(c.a.runs)} runs vs B (experimental) {len(c.b.runs)} runs"]
    for s in (c.a, c.b):
        desc = s.description()
        out.append(f"  {s.label}: {desc}" if desc
                   else f"  {s.label}: {', '.join(s.paths[:3])}" + (" ..." if len(s.paths) > 3 else ""))
        for p, why in s.excluded:
            out.append(f"  {s.label}: left out {p}: {why}")
    out.append(f"Value: time per {'rank (mean over ranks)' if c.ranks == 'mean' else c.ranks + ' over ranks'} of each "
               f"node and run (wall time: slowest rank). Ratio = median(A) / median(B): > 1 B faster, < 1 B slower.")
    out.append(f"CI: {c.confidence:.0%} percentile bootstrap over runs ({c.resamples} resamples, seed {c.seed}); "
               "p: Mann-Whitney U, two-sided. '*' marks a CI that excludes 1.")
    if len(c.a.runs) < 5 or len(c.b.runs) < 5:
        out.append("Note: fewer than 5 runs on a side; intervals and tests are weak (10 or more are advisable).")
    total = c.whole[0].a.median if c.whole else 0.0
    threshold = total * min_share
    headers = ["Node", "A median", "B median", "A cv", "B cv"]
    if stats:
        headers += ["A min", "A max", "B min", "B max"]
    headers += ["B-A", "A/B", "CI", "p", ""]
    rows: list[list[str]] = []
    hidden = 0

    def add(depth: int, n: CompareNode) -> None:
        nonlocal hidden
        if not show_all and depth > 1 and max(n.a.median, n.b.median, abs(n.impact)) < threshold:
            hidden += 1
            return
        calls = ""
        if n.kind == "function" and n.calls_a is not None and n.calls_b is not None and n.calls_a != n.calls_b:
            calls = f" [calls {units.count(n.calls_a)} -> {units.count(n.calls_b)}]"
        row = ["  " * depth + n.name + calls, units.seconds(n.a.median), units.seconds(n.b.median),
               units.percent(n.a.cv), units.percent(n.b.cv)]
        if stats:
            row += [units.seconds(n.a.min), units.seconds(n.a.max), units.seconds(n.b.min), units.seconds(n.b.max)]
        ci = "" if n.ci is None else f"[{_fmt_ratio(n.ci[0])}, {_fmt_ratio(n.ci[1])}]"
        row += [("+" if n.impact > 0 else "") + units.seconds(n.impact), _fmt_ratio(n.ratio) + (" *" if n.significant else "  "),
                ci, _fmt_p(n.p), n.verdict if n.significant else ""]
        rows.append(row)
        for ch in n.children:
            add(depth + 1, ch)

    rows.append(["Whole run"] + [""] * (len(headers) - 1))
    for n in c.whole:
        add(1, n)
    if c.regions:
        rows.append(["Regions -> MPI functions"] + [""] * (len(headers) - 1))
        for n in c.regions:
            add(1, n)
    out.append("")
    widths = [max(len(r[i]) for r in rows + [headers]) for i in range(len(headers))]
    left = {0, len(headers) - 1, len(headers) - 3}

    def line(cells: list[str]) -> str:
        return "  ".join(x.ljust(w) if i in left else x.rjust(w) for i, (x, w) in enumerate(zip(cells, widths))).rstrip()

    out.append(line(headers))
    out.append(line(["-" * w for w in widths]))
    out += [line(r) for r in rows]
    if hidden:
        out.append(f"({hidden} nodes that take less than {min_share:.1%} of A's wall time on both sides are hidden; "
                   "--all shows them)")
    return "\n".join(out) + "\n"
