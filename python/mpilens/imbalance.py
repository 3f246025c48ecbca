"""Load imbalance per scope (whole run, each region, each MPI function), related to the work each
rank reports, with the efficiency-adjusted variant of seeds/000 (chapter 4).

Load of a rank (Eq. 4.2): its time outside MPI: wall - MPI time for the whole run; for a region,
the region's time minus the MPI time inside it (its subregions included). For an MPI function the
quantity is the time in that function. Over the ranks that measured it:

    imbalance  = (max - mean) / mean          (Eq. 4.1, a fraction: 1.0 is 100 %)
    max / mean
    slowest    = the rank with the max, and how much longer it took than the median of the others

Work: every user counter of kind "sum" (mpilens_counter_add, e.g. "atoms") is a work metric; per
scope the values recorded in it (for a region: in it and its subregions; for the whole run and
MPI functions: the whole run). The Pearson correlation r between load and work is given over the
ranks that have both.

Efficiency (Eqs. 4.3-4.5): a counter "efficiency" (mpilens_counter_set, a value in [0, 1] per rank,
e.g. SM efficiency x warp efficiency from the GPU vendor's profiler) scales each rank's load before
the imbalance is computed: adjusted load = load x efficiency. A region uses the efficiency set in
it, else the one of the nearest enclosing region that has one, else the last value of the run.
Ranks without a value are left out of the adjusted figures (said in `notes`); values outside [0, 1]
make the adjustment unavailable, with the reason.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Any

from . import units
from ._layout import CounterKeys, FunctionKeys, ProfileKeys, RankKeys, RegionKeys
from .rundir import Run

EFFICIENCY = "efficiency"
Vec = list[float | None]


@dataclass
class Spread:
    """Imbalance figures of one per-rank quantity."""

    values: Vec
    n: int
    mean: float
    median: float
    max: float
    max_rank: int
    min: float
    min_rank: int

    @property
    def imbalance(self) -> float | None:
        """(max - mean) / mean (None when the mean is 0)."""
        return (self.max - self.mean) / self.mean if self.mean > 0 else None

    @property
    def max_over_mean(self) -> float | None:
        """Slowest rank's value over the mean (None when the mean is 0)."""
        return self.max / self.mean if self.mean > 0 else None

    @property
    def excess(self) -> float | None:
        """How much longer the slowest rank took than the median of the other ranks, as a fraction
        (1.0: twice as long); None with a single rank or when the others took no time."""
        others = [v for r, v in enumerate(self.values) if v is not None and r != self.max_rank]
        if not others:
            return None
        med = statistics.median(others)
        return self.max / med - 1.0 if med > 0 else None

    def to_dict(self) -> dict[str, Any]:
        """The spread as a JSON object."""
        return {"values": self.values, "n": self.n, "mean": self.mean, "median": self.median, "max": self.max,
                "max_rank": self.max_rank, "min": self.min, "min_rank": self.min_rank, "imbalance": self.imbalance,
                "max_over_mean": self.max_over_mean, "slowest_rank": self.max_rank, "excess_over_others": self.excess}


def spread(values: Vec) -> Spread | None:
    """Return the imbalance figures of the measured (non-null) values, or None when there are none."""
    pairs = [(float(v), r) for r, v in enumerate(values) if v is not None]
    if not pairs:
        return None
    vals = [v for v, _ in pairs]
    hi = max(pairs, key=lambda p: (p[0], -p[1]))
    lo = min(pairs, key=lambda p: (p[0], p[1]))
    return Spread(list(values), len(vals), statistics.fmean(vals), statistics.median(vals), hi[0], hi[1], lo[0], lo[1])


def pearson(x: Vec, y: Vec) -> float | None:
    """Pearson correlation over the ranks where both are measured; None with fewer than 3 such ranks
    or when either is constant."""
    pairs = [(float(a), float(b)) for a, b in zip(x, y) if a is not None and b is not None]
    if len(pairs) < 3:
        return None
    xs, ys = [p[0] for p in pairs], [p[1] for p in pairs]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((a - mx) ** 2 for a in xs)
    syy = sum((b - my) ** 2 for b in ys)
    if sxx <= 0 or syy <= 0:
        return None
    r = sum((a - mx) * (b - my) for a, b in zip(xs, ys)) / math.sqrt(sxx * syy)
    return max(-1.0, min(1.0, r))


@dataclass
class Scope:
    """One scope of the analysis: the whole run, a region (path "a/b"), or an MPI function."""

    kind: str  # "run" | "region" | "function"
    name: str
    quantity: str  # "load" (time outside MPI) | "time" (in an MPI function)
    load: Spread
    work: dict[str, Vec]  # work counters of this scope
    correlation: dict[str, float | None]  # r(load, work) per work counter
    efficiency: Vec | None = None
    adjusted: Spread | None = None
    adjusted_correlation: dict[str, float | None] = field(default_factory=dict)
    work_imbalance: dict[str, float | None] = field(default_factory=dict)  # (max - mean) / mean of each counter

    def to_dict(self) -> dict[str, Any]:
        """The scope's analysis as a JSON object."""
        return {"kind": self.kind, "name": self.name, "quantity": self.quantity, "load": self.load.to_dict(),
                "work": self.work, "work_imbalance": self.work_imbalance, "correlation": self.correlation,
                "efficiency": self.efficiency, "adjusted": None if self.adjusted is None else self.adjusted.to_dict(),
                "adjusted_correlation": self.adjusted_correlation}


@dataclass
class Analysis:
    """The result of analyze()."""

    run: str
    nranks: int
    work_counters: list[str]
    efficiency_counter: str | None  # None when the run has no efficiency values
    scopes: list[Scope]
    notes: list[str] = field(default_factory=list)

    def scope(self, kind: str, name: str) -> Scope:
        """The scope of a kind ("run", "region", "function") and name; KeyError when there is none."""
        for s in self.scopes:
            if s.kind == kind and s.name == name:
                return s
        raise KeyError(f"{kind} {name}")

    def to_dict(self) -> dict[str, Any]:
        """The analysis as one JSON document, with the definitions of its quantities."""
        return {"run": self.run, "nranks": self.nranks, "work_counters": self.work_counters,
                "efficiency_counter": self.efficiency_counter, "notes": self.notes,
                "definitions": {
                    "load": "time outside MPI per rank (wall - MPI; a region: its time - MPI time inside it)",
                    "imbalance": "(max - mean) / mean over ranks",
                    "excess_over_others": "max / median of the other ranks - 1",
                    "adjusted": "load x efficiency per rank (seeds/000 Eq. 4.4), then the same figures",
                    "correlation": "Pearson r over ranks between load and each work counter"},
                "scopes": [s.to_dict() for s in self.scopes]}


def _vec(values: list[Any] | None, n: int) -> Vec:
    return [None] * n if values is None else [None if v is None else float(v) for v in values]


def _sum_vec(a: Vec, b: Vec) -> Vec:
    """Per-rank sum where a rank has at least one value."""
    return [None if x is None and y is None else (x or 0.0) + (y or 0.0) for x, y in zip(a, b)]


def _check_efficiency(values: Vec, where: str, notes: list[str]) -> Vec | None:
    bad = [(r, v) for r, v in enumerate(values) if v is not None and not 0.0 <= v <= 1.0]
    if bad:
        notes.append(f"efficiency of {where} is outside [0, 1] on rank {bad[0][0]} ({bad[0][1]:g}"
                     + (f", and {len(bad) - 1} more ranks" if len(bad) > 1 else "") + "): no adjusted figures")
        return None
    return values


def analyze(run: Run, work: list[str] | None = None, efficiency: str | None = EFFICIENCY) -> Analysis:
    """Compute the imbalance of every scope of a run. work: the work counters to relate load to
    (default: every counter of kind "sum"); efficiency: the name of the efficiency counter (None:
    no adjustment)."""
    p = run.profile
    P, K, R, F, C = ProfileKeys, RankKeys, RegionKeys, FunctionKeys, CounterKeys
    n = p[P.NRANKS]
    notes: list[str] = []
    counters = p.get(P.COUNTERS) or {}
    sums = [k for k, c in counters.items() if c.get(C.KIND, "sum") == "sum"]
    if work is None:
        work = sorted(sums)
    else:
        for w in work:
            if w not in counters:
                notes.append(f"work counter {w!r} was not recorded in this run"
                             + (f" (counters: {', '.join(sorted(counters))})" if counters else " (no user counters)"))
        work = [w for w in work if w in counters]
    eff_name = efficiency if efficiency and efficiency in counters else None
    if efficiency and efficiency in counters and counters[efficiency].get(C.KIND) != "last":
        notes.append(f"counter {efficiency!r} is summed (mpilens_counter_add); an efficiency should be set with "
                     "mpilens_counter_set: no adjusted figures")
        eff_name = None
    global_eff = _check_efficiency(_vec(counters[eff_name][C.VALUES], n), "the run", notes) if eff_name else None
    if global_eff is not None:
        missing = [r for r, v in enumerate(global_eff) if v is None]
        if missing:
            notes.append(f"{len(missing)} ranks set no efficiency (e.g. rank {missing[0]}); they are left out of the "
                         "adjusted figures")

    scopes: list[Scope] = []

    def make(kind: str, name: str, quantity: str, load: Vec, work_vals: dict[str, Vec], eff: Vec | None) -> None:
        sp = spread(load)
        if sp is None:
            return
        wv = {w: work_vals.get(w, [None] * n) for w in work}
        s = Scope(kind, name, quantity, sp, wv, {w: pearson(load, v) for w, v in wv.items()})
        for w, v in wv.items():
            ws = spread(v)
            s.work_imbalance[w] = ws.imbalance if ws else None
        if eff is not None and quantity == "load":
            adj = [None if x is None or e is None else x * e for x, e in zip(load, eff)]
            s.efficiency = eff
            s.adjusted = spread(adj)
            s.adjusted_correlation = {w: pearson(adj, v) for w, v in wv.items()}
        scopes.append(s)

    # whole run
    walls = [r.get(K.WALL_TIME_S) for r in p[P.RANKS]]
    mpis = [r.get(K.MPI_TIME_S) for r in p[P.RANKS]]
    load = [None if w is None or m is None else w - m for w, m in zip(walls, mpis)]
    global_work = {w: _vec(counters[w][C.VALUES], n) for w in work}
    make("run", "whole run", "load", load, global_work, global_eff)

    # regions (depth first); each returns its subtree's MPI time and work
    def walk(nodes: list[dict[str, Any]], prefix: str, inherited: Vec | None) -> tuple[Vec, dict[str, Vec]]:
        total_mpi: Vec = [None] * n
        total_work: dict[str, Vec] = {w: [None] * n for w in work}
        for reg in nodes:
            path = f"{prefix}/{reg[R.NAME]}" if prefix else reg[R.NAME]
            own = reg.get(R.COUNTERS) or {}
            eff = inherited
            if eff_name and eff_name in own and any(v is not None for v in own[eff_name].get(C.VALUES, [])):
                mine = _check_efficiency(_vec(own[eff_name][C.VALUES], n), f"region {path}", notes)
                # ranks that set none in this region keep the enclosing value
                eff = None if mine is None else [m if m is not None else (inherited[r] if inherited else None)
                                                 for r, m in enumerate(mine)]
            mpi: Vec = [0.0 if v is not None else None for v in _vec(reg.get(R.VISITS), n)]
            for f in reg.get(R.FUNCTIONS, {}).values():
                mpi = _sum_vec(mpi, _vec(f.get(F.TIME_S), n))
            wk = {w: _vec(own[w][C.VALUES], n) if w in own else [None] * n for w in work}
            sub_mpi, sub_work = walk(reg.get(R.REGIONS, []), path, eff)
            mpi = _sum_vec(mpi, sub_mpi)
            wk = {w: _sum_vec(wk[w], sub_work[w]) for w in work}
            t = _vec(reg.get(R.TIME_S), n)
            make("region", path, "load", [None if a is None or b is None else a - b for a, b in zip(t, mpi)], wk, eff)
            for fname, f in sorted(reg.get(R.FUNCTIONS, {}).items()):
                make("function", f"{path}/{fname}", "time", _vec(f.get(F.TIME_S), n), wk, None)
            total_mpi = _sum_vec(total_mpi, mpi)
            total_work = {w: _sum_vec(total_work[w], wk[w]) for w in work}
        return total_mpi, total_work
    walk(p.get(P.REGIONS, []), "", global_eff)

    # MPI functions, whole run
    for fname, f in sorted(p.get(P.FUNCTIONS, {}).items(), key=lambda kv: -sum(t or 0 for t in kv[1].get(F.TIME_S, []))):
        make("function", fname, "time", _vec(f.get(F.TIME_S), n), global_work, None)
    return Analysis(str(run.path), n, work, eff_name, scopes, notes)


def render_text(a: Analysis, min_share: float = 0.01) -> str:
    """Return the analysis as text: one table of scopes."""
    out = [f"mpilens imbalance: {a.run} ({a.nranks} ranks)",
           "Load = time outside MPI per rank (region: its time minus the MPI time inside it); for MPI functions, "
           "the time in the function.",
           "Imbalance = (max - mean) / mean; Max rank = the rank with the max (the slowest one for a load), +x% = "
           "how much more than the median of the other ranks; r(C) = Pearson correlation over ranks with work counter C."]
    if a.work_counters:
        out.append(f"Work counters: {', '.join(a.work_counters)}")
    else:
        out.append("Work counters: none (report work with mpilens_counter_add(\"atoms\", n) to correlate it with time)")
    if a.efficiency_counter:
        out.append(f"Efficiency: counter {a.efficiency_counter!r}; adjusted load = load x efficiency (seeds/000 Eq. 4.4)")
    for note in a.notes:
        out.append(f"Note: {note}")
    adjusted = any(s.adjusted is not None for s in a.scopes)
    headers = ["Scope", "Mean", "Max", "Imbalance", "Max/mean", "Max rank"]
    headers += [f"r({w})" for w in a.work_counters]
    if adjusted:
        headers += ["Adj. imbalance", "Adj. max rank"] + [f"adj. r({w})" for w in a.work_counters]
    rows = []
    mpi_total = sum(s.load.mean for s in a.scopes if s.kind == "function" and "/" not in s.name) or 0.0
    hidden = 0

    def fmt_r(r: float | None) -> str:
        return "n/a" if r is None else f"{r:.3f}"

    for s in a.scopes:
        if s.kind == "function" and "/" not in s.name and mpi_total and s.load.mean < min_share * mpi_total:
            hidden += 1
            continue
        if s.kind == "function" and "/" in s.name:
            continue  # per-region functions: in --json
        label = {"run": "whole run (load)", "region": f"region {s.name} (load)", "function": f"{s.name} (time)"}[s.kind]
        ex = s.load.excess
        row = [label, units.seconds(s.load.mean), units.seconds(s.load.max), units.percent(s.load.imbalance),
               "n/a" if s.load.max_over_mean is None else f"{s.load.max_over_mean:.2f}",
               f"{s.load.max_rank}" + ("" if ex is None else f" (+{units.percent(ex)})")]
        row += [fmt_r(s.correlation.get(w)) for w in a.work_counters]
        if adjusted:
            if s.adjusted is not None:
                aex = s.adjusted.excess
                row += [units.percent(s.adjusted.imbalance),
                        f"{s.adjusted.max_rank}" + ("" if aex is None else f" (+{units.percent(aex)})")]
                row += [fmt_r(s.adjusted_correlation.get(w)) for w in a.work_counters]
            else:
                row += [""] * (2 + len(a.work_counters))
        rows.append(row)
    widths = [max(len(r[i]) for r in rows + [headers]) for i in range(len(headers))]

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    out += ["", line(headers), line(["-" * w for w in widths])] + [line(r) for r in rows]
    if hidden:
        out.append(f"({hidden} MPI functions under {min_share:.0%} of the MPI time are not shown; --json lists all)")
    for w in a.work_counters:
        s = next((s for s in a.scopes if s.kind == "run"), None)
        if s and s.work_imbalance.get(w) is not None:
            out.append(f"Work {w}: imbalance {units.percent(s.work_imbalance[w])} over ranks (the load imbalance "
                       "should match it when time follows work)")
    return "\n".join(out) + "\n"
