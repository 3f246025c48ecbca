"""Statistics across ranks of a profile: what the text report, the HTML report and the findings
show. Unmeasured values (null: ranks that left no data) are left out of every statistic, never
counted as zero."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Any

from . import units
from ._layout import FunctionKeys, MatrixEntryKeys, ProfileKeys, RankKeys, RegionKeys, SizeBinKeys


@dataclass
class Spread:
    """A per-rank metric across the ranks that measured it."""

    total: float
    mean: float
    min: float
    max: float
    min_rank: int
    max_rank: int
    n: int
    stdev: float

    @property
    def imbalance(self) -> float:
        """(max - mean) / mean, the usual load-imbalance percentage as a fraction (0 when mean is 0)."""
        return (self.max - self.mean) / self.mean if self.mean > 0 else 0.0

    @property
    def max_over_mean(self) -> float:
        """max / mean (1 is perfect balance)."""
        return self.max / self.mean if self.mean > 0 else 1.0

    @property
    def cov(self) -> float:
        """Coefficient of variation across ranks (population standard deviation / mean)."""
        return self.stdev / self.mean if self.mean > 0 else 0.0


def spread(values: list[Any]) -> Spread | None:
    """Return the spread of the measured (non-null) values, or None when none was measured."""
    pairs = [(v, r) for r, v in enumerate(values) if v is not None]
    if not pairs:
        return None
    vals = [v for v, _ in pairs]
    lo = min(pairs, key=lambda p: (p[0], p[1]))
    hi = max(pairs, key=lambda p: (p[0], -p[1]))
    return Spread(sum(vals), statistics.fmean(vals), lo[0], hi[0], lo[1], hi[1], len(vals), statistics.pstdev(vals))


@dataclass
class FunctionSummary:
    """One MPI function over the whole run."""

    name: str
    cls: str
    calls: Spread
    time: Spread
    sent: Spread
    recv: Spread
    share_of_mpi: float  # of the summed MPI time of all ranks
    share_of_wall: float  # of the summed wall time of all ranks

    @property
    def bytes_total(self) -> float:
        """Bytes sent and received, summed over ranks."""
        return self.sent.total + self.recv.total

    @property
    def bytes_per_call(self) -> float:
        """Bytes (sent + received) per call (0 without calls)."""
        return self.bytes_total / self.calls.total if self.calls.total else 0.0


def summed_function_fields() -> tuple[str, ...]:
    """A function's fields that add up over the regions it was called in (profile.json's keys)."""
    F = FunctionKeys
    return (F.CALLS, F.TIME_S, F.BYTES_SENT, F.BYTES_RECV)


@dataclass
class Talker:
    """A point-to-point pair of the traffic matrix: what src sent to dst (world ranks)."""

    src: int
    dst: int
    messages: int
    bytes: int


@dataclass
class RankSummary:
    """One rank: host, wall and MPI time, how it ended."""
    rank: int
    host: str | None
    wall: float | None
    mpi: float | None
    ended_by: str | None = None  # incomplete runs: "MPI_Abort", "signal 15", ...; None: no data
    mpi_se: float | None = None  # standard error of mpi when it is estimated (MPILENS_TIME_SAMPLE)

    @property
    def mpi_share(self) -> float | None:
        """MPI time over wall time (None when either is missing)."""
        return self.mpi / self.wall if self.wall and self.mpi is not None else None


@dataclass
class RegionSummary:
    """One user region (path "outer/inner"): visits, time and MPI time across ranks, its MPI functions."""
    path: str
    depth: int
    visits: Spread | None
    time: Spread | None
    mpi_time: Spread | None
    functions: list[FunctionSummary]
    name: str = ""  # the region's own name (it may hold "/": the path alone cannot say where it starts)


@dataclass
class Summary:
    """The cross-rank statistics of a profile, which the reports show."""
    nranks: int
    measured_ranks: int
    wall: Spread | None
    mpi: Spread | None
    ranks: list[RankSummary]
    functions: list[FunctionSummary]  # by time, descending
    sizes: list[tuple[int, int, int, float]]  # (min_bytes, max_bytes, calls, time_s) over all functions
    talkers: list[Talker]  # the matrix's pairs by bytes, descending
    sent_by_rank: list[float]
    recv_by_rank: list[float]
    regions: list[RegionSummary]
    dropped: dict[str, int] = field(default_factory=dict)
    sampling: Sampling | None = None  # MPILENS_TIME_SAMPLE > 1


@dataclass
class Sampling:
    """MPILENS_TIME_SAMPLE=every: 1 in `every` calls of the short, frequent functions were timed;
    their times are estimates from `timed` of `calls` calls (over all ranks)."""

    every: int
    timed: int
    calls: int
    mpi_se: float | None  # standard error of the MPI time summed over ranks, seconds

    def sentence(self) -> str:
        """How the calls were timed, in one sentence for the reports."""
        every = f"1 in {self.every} calls"
        se = f" (MPI time summed over ranks: ± {units.seconds(self.mpi_se)} standard error)" if self.mpi_se else ""
        return (f"{every} of point-to-point, completion, probe and one-sided functions timed "
                f"(MPILENS_TIME_SAMPLE): their times are estimates from {self.timed:,} of {self.calls:,} calls{se}, "
                "min and max those of the timed calls; counts and bytes are exact")


def sampling(profile: dict[str, Any], ranks: list[RankSummary]) -> Sampling | None:
    """How the calls were timed, when not every call was (profile.json "time_sample")."""
    every = profile.get(ProfileKeys.TIME_SAMPLE)
    if (every or 1) <= 1:
        return None
    timed = calls = 0
    for f in profile.get(ProfileKeys.FUNCTIONS, {}).values():
        for c, t in zip(f.get(FunctionKeys.CALLS, []), f.get(FunctionKeys.TIMED_CALLS) or []):
            if c is not None and t is not None and t < c:
                timed, calls = timed + t, calls + c
    ses = [r.mpi_se for r in ranks if r.mpi_se is not None]
    return Sampling(every, timed, calls, math.sqrt(sum(x * x for x in ses)) if ses else None)


def _functions(funcs: dict[str, Any], mpi_total: float, wall_total: float) -> list[FunctionSummary]:
    out = []
    F = FunctionKeys
    for name, f in funcs.items():
        calls, time = spread(f[F.CALLS]), spread(f[F.TIME_S])
        if calls is None or time is None:
            continue
        out.append(FunctionSummary(
            name, f.get(F.CLASS, "other"), calls, time, spread(f[F.BYTES_SENT]) or calls, spread(f[F.BYTES_RECV]) or calls,
            time.total / mpi_total if mpi_total else 0.0, time.total / wall_total if wall_total else 0.0))
    out.sort(key=lambda s: (-s.time.total, s.name))
    return out


def _regions(nodes: list[dict[str, Any]], prefix: str, depth: int, mpi_total: float, wall_total: float,
             out: list[RegionSummary]) -> None:
    R = RegionKeys
    for node in nodes:
        path = f"{prefix}/{node[R.NAME]}" if prefix else node[R.NAME]
        funcs = _functions(node.get(R.FUNCTIONS, {}), mpi_total, wall_total)
        # MPI time inside the region: zero, not unknown, on ranks that visited it without MPI calls
        per_rank_mpi: list[Any] = [None if v is None else 0.0 for v in node.get(R.VISITS, [])]
        for f in node.get(R.FUNCTIONS, {}).values():
            for r, v in enumerate(f[FunctionKeys.TIME_S]):
                if v is not None:
                    per_rank_mpi[r] = (per_rank_mpi[r] or 0.0) + v
        out.append(RegionSummary(path, depth, spread(node.get(R.VISITS, [])), spread(node.get(R.TIME_S, [])),
                                 spread(per_rank_mpi), funcs, node[R.NAME]))
        _regions(node.get(R.REGIONS, []), path, depth + 1, mpi_total, wall_total, out)


def summarize(profile: dict[str, Any]) -> Summary:
    """Compute the cross-rank statistics of a profile (profile.json structure)."""
    P, K, M = ProfileKeys, RankKeys, MatrixEntryKeys
    n = profile[P.NRANKS]
    ranks = [RankSummary(r[K.RANK], r.get(K.HOST), r.get(K.WALL_TIME_S), r.get(K.MPI_TIME_S), r.get(K.ENDED_BY),
                         r.get(K.MPI_TIME_S_SE))
             for r in profile[P.RANKS]]
    wall = spread([r.wall for r in ranks])
    mpi = spread([r.mpi for r in ranks])
    wall_total = wall.total if wall else 0.0
    mpi_total = mpi.total if mpi else 0.0
    functions = _functions(profile[P.FUNCTIONS], mpi_total, wall_total)

    bins: dict[int, list[Any]] = {}
    B = SizeBinKeys
    for entries in profile.get(P.MESSAGE_SIZES, {}).values():
        for e in entries:
            slot = bins.setdefault(e[B.BIN], [e[B.MIN_BYTES], e[B.MAX_BYTES], 0, 0.0])
            slot[2] += sum(c for c in e[B.CALLS] if c is not None)
            slot[3] += sum(t for t in e[B.TIME_S] if t is not None)
    sizes = [tuple(bins[b]) for b in sorted(bins)]

    talkers = sorted((Talker(m[M.SRC], m[M.DST], m[M.MESSAGES], m[M.BYTES]) for m in profile.get(P.MATRIX, [])),
                     key=lambda t: (-t.bytes, t.src, t.dst))
    sent = [0.0] * n
    recv = [0.0] * n
    for m in profile.get(P.MATRIX, []):
        if 0 <= m[M.SRC] < n:
            sent[m[M.SRC]] += m[M.BYTES]
        if 0 <= m[M.DST] < n:
            recv[m[M.DST]] += m[M.BYTES]
    regions: list[RegionSummary] = []
    _regions(profile.get(P.REGIONS, []), "", 0, mpi_total, wall_total, regions)
    return Summary(n, sum(1 for r in ranks if r.wall is not None), wall, mpi, ranks, functions,
                   sizes, talkers, sent, recv, regions, dict(profile.get(P.DROPPED, {})), sampling(profile, ranks))
