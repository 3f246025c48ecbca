"""Calibration and measurement data of the variability model.

A sample is one run: per rank, the length of each bulk-synchronous interval (times[r, k]) and the
host of each rank. Two sources:

- a run directory recorded with MPILENS_INTERVALS=1 (any MPI program; mpilens.intervals): the
  compute time of each rank between consecutive synchronizing collectives on communicators of
  all ranks. The first interval runs from MPI_Init to the first such collective, i.e. it holds
  the program's setup, so `skip` defaults to 1 for run directories.
- a run directory recorded with `--mode trace` but without MPILENS_INTERVALS: the same intervals
  are derived from the trace (the blocking synchronizing collectives every rank took part in;
  from the end of MPI_Init to the first, then from the end of one to the start of the next).
- the JSON log the BSP harness (examples/c/bsp_harness.c) writes at the end of a run
  (schema "mpilens.bsp/1": per-rank interval times, rank-0 per-interval maxima, hosts). It holds
  only the work intervals: `skip` defaults to 0.

The runtime of a run is the sum over its intervals of the per-interval maximum over ranks (each
barrier-fenced step lasts as long as its slowest rank), the quantity the thesis predicts.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import intervals, layout, rundir
from .._layout import ProfileKeys, RankKeys
from ..errors import RunDirectoryError
from ..trace import timeline

BSP_SCHEMA = "mpilens.bsp/1"


@dataclass
class Sample:
    """One run's interval times (seconds) after skipping the first `skipped` intervals."""

    source: str
    kind: str  # "rundir", "trace" or "bsp-log"
    times: np.ndarray  # [ranks, intervals]
    hosts: list[str]
    skipped: int
    meta: dict

    @property
    def nranks(self) -> int:
        """Number of ranks (rows of times)."""
        return int(self.times.shape[0])

    @property
    def intervals(self) -> int:
        """Number of intervals kept (columns of times)."""
        return int(self.times.shape[1])

    @property
    def maxima(self) -> np.ndarray:
        """Per-interval maximum over ranks."""
        return self.times.max(axis=0)

    @property
    def runtime(self) -> float:
        """Sum of the per-interval maxima: the length of the run's bulk-synchronous steps."""
        return float(self.maxima.sum())

    def host_groups(self) -> dict[str, list[int]]:
        """Ranks per host, in rank order."""
        out: dict[str, list[int]] = {}
        for r, h in enumerate(self.hosts):
            out.setdefault(h, []).append(r)
        return out


def _from_rundir(path: Path, skip: int | None) -> Sample:
    iv = intervals.load(path)
    run = rundir.load(path)
    hosts = [str(r.get(RankKeys.HOST) or "?") for r in run.profile.get(ProfileKeys.RANKS, [])]
    if len(hosts) != iv.compute.shape[0]:
        hosts = ["?"] * iv.compute.shape[0]
    s = 1 if skip is None else skip
    meta = {"command": (run.meta or {}).get("command"), "dropped_intervals": iv.dropped, "problems": iv.problems}
    return Sample(str(path), "rundir", iv.compute[:, s:], hosts, s, meta)


# blocking collectives after which no process continues before all have entered (the "sync"
# entries of runtime/spec/semantics.yaml, as MPILENS_INTERVALS records them)
SYNC_COLLECTIVES = {"MPI_Barrier", "MPI_Allreduce", "MPI_Reduce_scatter", "MPI_Reduce_scatter_block", "MPI_Allgather",
                    "MPI_Allgatherv", "MPI_Alltoall", "MPI_Alltoallv", "MPI_Alltoallw"}


def _from_trace(path: Path, skip: int | None, load_trace: Callable[[], Any] | None = None) -> Sample:
    """The intervals of a trace: from its Timeline in memory, or from what the out-of-core
    analysis keeps of it (mpilens.trace.scan.Scan: the collective instances and when each rank's
    program starts), whichever load_trace gives."""
    tr = load_trace() if load_trace is not None else timeline.load(path)
    col, nranks = tr.collectives, tr.nranks
    starts = timeline.program_starts(tr) if isinstance(tr, timeline.Timeline) else tr.program_starts
    names = SYNC_COLLECTIVES | {n + "_c" for n in SYNC_COLLECTIVES}
    sync_ids = np.array([i for i, n in enumerate(tr.functions) if n in names], dtype=np.uint16)
    sync = np.isin(col.fn, sync_ids)
    counts = np.bincount(col.instance[sync], minlength=int(col.instance.max()) + 1 if len(col.instance) else 0)
    full = sync & (counts[col.instance] == nranks) if len(counts) else sync
    series = []
    for r in range(nranks):
        sel = full & (col.rank == r)
        order = np.argsort(col.arrive[sel], kind="stable")
        arrive, leave = col.arrive[sel][order], col.leave[sel][order]
        begins = np.r_[starts.get(r, 0.0), leave[:-1]] if len(arrive) else np.empty(0)
        series.append(np.maximum(arrive - begins, 0.0))
    n = min((len(x) for x in series), default=0)
    if n == 0:
        raise RunDirectoryError(f"{path}: the trace holds no synchronizing collective of all ranks, so no intervals")
    run = rundir.load(path)
    hosts = [str(r.get(RankKeys.HOST) or "?") for r in run.profile.get(ProfileKeys.RANKS, [])]
    if len(hosts) != nranks:
        hosts = ["?"] * nranks
    s = 1 if skip is None else skip
    times = np.stack([x[:n] for x in series])
    return Sample(str(path), "trace", times[:, s:], hosts, s, {"command": (run.meta or {}).get("command")})


def _from_log(path: Path, skip: int | None) -> Sample:
    try:
        doc = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise RunDirectoryError(f"{path}: cannot read the BSP harness log ({err})") from err
    if not isinstance(doc, dict) or doc.get("schema") != BSP_SCHEMA:
        raise RunDirectoryError(f"{path}: not a BSP harness log (expected schema {BSP_SCHEMA!r})")
    try:
        times = np.asarray(doc["times_s"], dtype=float)
    except (KeyError, ValueError) as err:
        raise RunDirectoryError(f"{path}: times_s is missing or not a rank x interval table") from err
    if times.ndim != 2 or times.shape[1] == 0:
        raise RunDirectoryError(f"{path}: times_s is not a rank x interval table")
    hosts = [str(h) for h in doc.get("hosts", [])]
    if len(hosts) != times.shape[0]:
        hosts = ["?"] * times.shape[0]
    s = 0 if skip is None else skip
    meta = {k: v for k, v in doc.items() if k not in ("times_s", "maxima_s", "hosts")}
    return Sample(str(path), "bsp-log", times[:, s:], hosts, s, meta)


def load(path: str | Path, skip: int | None = None, load_trace: Callable[[], Any] | None = None) -> Sample:
    """Load a run directory (MPILENS_INTERVALS, else its trace) or a BSP harness log; `skip` drops
    that many leading intervals (default: 1 for run directories, 0 for harness logs).
    `load_trace`: returns the run's trace as the caller has it analysed already (its Timeline, or
    for a large trace the out-of-core analysis' Scan)."""
    p = Path(path)
    if p.is_dir():
        has_intervals = bool(intervals.sources(p, []))  # its files, or what its statistics files hold
        has_trace = bool(layout.trace_files(p))
        if not has_intervals and has_trace:
            sample = _from_trace(p, skip, load_trace)
        elif not has_intervals:
            raise RunDirectoryError(f"{p}: no intervals recorded (run with --set MPILENS_INTERVALS=1, or --mode trace)")
        else:
            sample = _from_rundir(p, skip)
    elif p.is_file():
        sample = _from_log(p, skip)
    else:
        raise RunDirectoryError(f"{p}: no such run directory or BSP harness log")
    if sample.intervals < 3:
        raise RunDirectoryError(f"{p}: only {sample.intervals} intervals after skipping {sample.skipped}; "
                                "the model needs at least 3 (more than 30 for useful intervals)")
    if not np.isfinite(sample.times).all() or (sample.times < 0).any():
        raise RunDirectoryError(f"{p}: interval times contain negative or non-finite values")
    return sample
