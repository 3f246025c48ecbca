"""The trace analysis out of core: a run's messages, collective instances and findings (what
`mpilens trace` prints) without holding its events in memory, rank by rank on worker processes:
those of this machine (the default), or the workers of a Dask distributed scheduler the user
points it at (`--engine tcp://host:8786`).

The ranks' traces are independent until their messages are matched, so the work is three rounds
of tasks, each of which holds one rank's events or one share of the messages, never the run's:

1. decode: each rank's trace file into its events (timeline.rank_part: the same columns, in the
   same order, as the in-memory Timeline), written to a scratch directory, one file per column.
   What comes back is small: the rank's head and trailer, its earliest and latest time.
2. rank: with the run's time origin (the earliest event of any rank, as the in-memory Timeline
   takes it off), each rank's message ends (timeline.message_ends) written to the scratch
   directory in shares by the hash of their key (communicator, source, destination, tag), its
   collective calls, and the findings that are one rank's own (irregular durations, gaps: its
   best few of each).
3. share: each share's ends paired (timeline.pair_ends: every end of a key is in one share), and
   the messages that can be a late sender or late receiver kept.

The coordinator then joins the collective calls (a few per rank and step) into instances and
runs the findings of mpilens.trace.findings on the kept messages and instances, reading the few
events it needs (call sites, the call that waited) from the scratch files. The findings are those
of the in-memory analysis, in the same order (tests/test_trace_scan.py holds them equal).

Memory: a worker holds one rank's events (about 80 bytes each, twice while it sorts them) or one
share of the message ends (SHARE_ENDS of them, about 60 bytes each); the coordinator the
collective calls (40 bytes each) and the kept messages. Scratch: about 80 bytes per event, on a
file system the workers share (the run directory's, for workers on other hosts), removed at the
end. Time grows with the events (each decoded once, its columns read once more); the shares
with the messages."""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np

from .. import layout
from .. import meta as meta_file
from ..errors import MpilensError, RunDirectoryError
from . import bins, findings, reader, timeline
from .filters import RecordFilters

IN_PROCESS_BYTES = 16 << 20  # a trace smaller than this is analysed in this process by default
SHARE_ENDS = 4_000_000  # message ends per share (about 250 MB of them and their pairing)
WORKER_BYTES = 1 << 30  # what a worker may hold (a rank of 5 M events): the workers a machine runs
SEND_DTYPE = np.dtype([("key", "<u8"), ("t", "<f8"), ("ev", "<i8"), ("src", "<i4"), ("dst", "<i4"), ("tag", "<i4"),
                       ("bytes", "<i8"), ("t1", "<f8"), ("call", "?")])
RECV_DTYPE = np.dtype([("key", "<u8"), ("post", "<f8"), ("done", "<f8"), ("ev", "<i8"), ("src", "<i4"), ("dst", "<i4")])


@dataclass
class Scan:
    """What the out-of-core analysis found: the numbers `mpilens trace` prints, and the findings."""

    nranks: int
    events: int
    messages: int
    unmatched_sends: int
    unmatched_recvs: int
    outside: int
    collective_instances: int
    file_bytes: int
    writer_cpu_s: float | None
    clock_error_s: dict[str, float | None]
    complete: bool
    problems: list[str]
    filters: RecordFilters
    findings: list[findings.TraceFinding]
    engine: str  # where it ran: "this process", "N local processes", a scheduler's address
    shares: int = 1
    timings: dict[str, float] = field(default_factory=dict)  # seconds per round
    # the timeline chart's parts when asked for (scan(chart=...)): "end" (s), "rows" ((rank, thread)),
    # "calls" (how many), "bins" (trace.bins.bin_shares of every row), "bars" ((rank, thread, t0, t1, function id) of the
    # longest calls, the longest first), "arrows" ((rank, thread, t) of the send and of the receive,
    # bytes) of the messages picked evenly in the order of matching, "sampled" (not all messages)
    chart: dict[str, Any] | None = None
    functions: list[str] = field(default_factory=list)
    classes: list[str] = field(default_factory=list)
    rundir: Path | None = None
    then: Any = None  # what scan's `then` returned
    # the blocking collective calls grouped into instances, and when each rank's program starts
    # (timeline.program_starts): what the variability model takes intervals from (mpilens.model.data)
    collectives: timeline.Collectives | None = None
    program_starts: dict[int, float] = field(default_factory=dict)


# ------------------------------------------------------------------------------- where tasks run
class _Engine:
    """Runs a round of tasks and returns their results in order."""

    def __init__(self, engine: Any, workers: int | None) -> None:
        self._pool = self._client = None
        self.own_client = False
        if engine in (None, "local"):
            n = workers or _local_workers()
            if n <= 1:
                self.name = "this process"
            else:
                # fork (quick, and sees what this process imported) unless threads run here, which a
                # forked child could find holding a lock
                how = "fork" if threading.active_count() == 1 else "forkserver"
                self._pool = ProcessPoolExecutor(n, mp_context=get_context(how))
                self.name = f"{n} local processes"
        elif engine == "serial":
            self.name = "this process"
        elif isinstance(engine, str) and "://" not in engine:
            raise MpilensError(f"--engine {engine}: give local, serial or a Dask scheduler's address "
                               "(tcp://host:port)")
        elif isinstance(engine, str):
            try:
                from distributed import Client  # optional: pip install 'mpilens[dask]'
            except ImportError:
                raise MpilensError(f"--engine {engine}: Dask's distributed scheduler is not installed "
                                   "(pip install 'mpilens[dask]')") from None
            try:
                self._client = Client(engine, timeout=20)
            except (OSError, TimeoutError, ValueError) as err:
                raise MpilensError(f"--engine {engine}: cannot reach the scheduler ({err})") from None
            self.own_client = True
            self.name = f"Dask scheduler {engine}"
        else:  # a distributed.Client the caller made
            self._client = engine
            self.name = f"Dask scheduler {getattr(engine.scheduler, 'address', '')}".strip()

    def map(self, fn: Callable, *args: list) -> list:
        if self._pool is not None:
            try:
                return list(self._pool.map(fn, *args))
            except BrokenProcessPool:
                raise MpilensError("a worker process of the analysis died (killed, or out of memory: fewer "
                                   "--workers hold less at once)") from None
        if self._client is not None:
            futures = self._client.map(fn, *args, pure=False)
            return self._client.gather(futures)
        return [fn(*a) for a in zip(*args)]

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()
        if self._client is not None and self.own_client:
            self._client.close()


def _size(f: layout.RankFile) -> int:
    try:
        return f.size if isinstance(f, layout.Member) else f.stat().st_size
    except OSError:
        return 0


def _local_workers() -> int:
    """This machine's cores, as many as its available memory lets hold a rank each."""
    try:
        avail = next(int(line.split()[1]) * 1024 for line in Path("/proc/meminfo").read_text().splitlines()
                     if line.startswith("MemAvailable:"))
    except (OSError, StopIteration, ValueError):
        avail = 4 * WORKER_BYTES
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(cores, avail // WORKER_BYTES))


# ------------------------------------------------------------------------------- the tasks
def _decode(file: layout.RankFile, clocks: reader.Clocks, window_setting: bool, scratch: str) -> Any:
    """Round 1: one rank's events to the scratch directory; its part without them (or the error
    that kept it from being read, as text)."""
    try:
        rt = clocks.apply(reader.read_rank(file))
    except (RunDirectoryError, OSError) as err:
        return f"{err} (rank {layout.rank_of('trace', file)}'s trace is left out)"
    part = timeline.rank_part(rt, window_setting)
    del rt
    kind = part.cols["kind"]
    # the threads that make its rows in the timeline's chart: those with calls or completions
    part.chart_threads = np.unique(part.cols["thread"][(kind == reader.CALL) | (kind == reader.DONE)]).tolist()
    part.threads = np.unique(part.cols["thread"]).tolist()
    where = Path(scratch) / f"r{part.rank}"
    where.mkdir()
    for name, col in part.cols.items():
        np.save(where / f"{name}.npy", col)
    part.cols = None
    return part


def _columns(scratch: str, rank: int, origin: float) -> dict[str, np.ndarray]:
    """A rank's events from the scratch directory (memory-mapped; its times from the origin)."""
    where = Path(scratch) / f"r{rank}"
    cols = {name: np.load(where / f"{name}.npy", mmap_mode="r") for name in timeline.COLUMNS}
    cols["t0"] = cols["t0"] - origin  # as the in-memory Timeline takes it off: the same numbers
    cols["t1"] = cols["t1"] - origin
    return cols


def _rank(part: timeline.RankPart, base: int, origin: float, shell: dict[str, Any], scratch: str,
          shares: int) -> dict[str, Any]:
    """Round 2: one rank's message ends (to the scratch directory, by share), its collective
    calls, and its own findings (its best of each kind)."""
    ev = timeline.Events(_columns(scratch, part.rank, origin))
    tl = timeline.Timeline(shell["nranks"], part.functions, part.classes, ev,
                           {part.rank: part.regions or []}, {part.rank: part.counters or []}, part.complete,
                           sites=part.sites, filters=shell["filters"], traced=shell["traced"],
                           clock_error_s=shell["clock_error_s"], rundir=shell["rundir"])
    sends, recvs = timeline.message_ends(tl, base)
    for kind, ends, dtype in (("s", sends, SEND_DTYPE), ("r", recvs, RECV_DTYPE)):
        rows = np.empty(len(ends["key"]), dtype=dtype)
        for name in dtype.names:
            rows[name] = ends[name]
        share = (rows["key"] % np.uint64(shares)).astype(np.int64)
        order = np.argsort(share, kind="stable")
        bounds = np.searchsorted(share[order], np.arange(shares + 1))
        for s in range(shares):
            np.save(Path(scratch) / "ends" / f"{kind}-{s}-{part.rank}.npy", rows[order[bounds[s]:bounds[s + 1]]])
    calls, regions = findings.irregular_candidates(tl)
    top = findings.TOP
    out = {"collectives": timeline.collective_calls(tl, base), "starts": timeline.program_starts(tl),
           "irregular": (sorted(calls, key=lambda x: -x[0])[:top], sorted(regions, key=lambda x: -x[0])[:top]),
           "gaps": findings.large_gaps(tl, top)}
    chart = shell.get("chart")
    if chart is not None:
        out["chart"] = _rank_chart(tl, part, chart)
    return out


def _rank_chart(tl: timeline.Timeline, part: timeline.RankPart, chart: dict[str, Any]) -> dict[str, Any]:
    """One rank's part of the timeline chart: its rows' shares of each time bin per class of call
    (trace.bins), and its longest calls (the longest first, in event order among equals)."""
    ev = tl.ev
    calls = np.flatnonzero(ev["kind"] == reader.CALL)
    threads = np.asarray(part.chart_threads, dtype=np.int64)
    row = np.searchsorted(threads, ev["thread"][calls].astype(np.int64))
    classes = chart["classes"]
    cls_index = np.array([classes.index(c) for c in part.classes], dtype=np.int32)
    cls = cls_index[ev["fn"][calls]]
    t0, t1 = ev["t0"][calls], ev["t1"][calls]
    shares = bins.bin_shares(row, cls, t0, t1, len(threads), len(classes), chart["end"], chart["n"])
    dur = t1 - t0
    top = np.argsort(-dur, kind="stable")[:chart["max_bars"]]
    return {"shares": shares["shares"], "width": shares["width"], "calls": len(calls),
            "bars": {"dur": dur[top], "thread": ev["thread"][calls][top], "t0": t0[top], "t1": t1[top],
                     "fn": ev["fn"][calls][top], "i": calls[top]}}


def _share(share: int, ranks: list[int], scratch: str, shell: dict[str, Any]) -> dict[str, Any]:
    """Round 3: one share's messages; those that may be late senders or receivers kept."""
    ends = Path(scratch) / "ends"
    sends = np.concatenate([np.load(ends / f"s-{share}-{r}.npy") for r in ranks]) if ranks else \
        np.empty(0, SEND_DTYPE)
    recvs = np.concatenate([np.load(ends / f"r-{share}-{r}.npy") for r in ranks]) if ranks else \
        np.empty(0, RECV_DTYPE)
    s = {n: sends[n] for n in SEND_DTYPE.names}
    r = {n: recvs[n] for n in RECV_DTYPE.names}
    m, si, _ = timeline.pair_ends(s, r, shell["filters"], shell["traced"], shell["clock_error_s"])
    # what findings.late_senders and late_receivers look for (their first test, the same numbers)
    late_s = np.minimum(m.send_t - m.recv_post_t, m.recv_t - m.recv_post_t) > findings.MIN_WAIT_S
    send_end = s["t1"][si]
    late_r = s["call"][si] & (np.minimum(m.recv_post_t - m.send_t, send_end - m.send_t) > findings.MIN_WAIT_S) \
        & (send_end > m.recv_post_t)
    keep = np.flatnonzero(late_s | late_r)
    uniq = counts = None
    if shell.get("keep_messages"):  # every message: for the arrows the chart picks, for `then`
        keys = s["key"][si]
        uniq, counts = np.unique(keys, return_counts=True)
        np.savez(ends / f"messages-{share}.npz", send_ev=m.send_ev, recv_ev=m.recv_ev, send_t=m.send_t,
                 recv_t=m.recv_t, bytes=m.bytes, tag=m.tag)
    return {"keys": uniq, "counts": counts, "count": len(m.send_ev),
            "unmatched": (m.unmatched_sends, m.unmatched_recvs), "outside": m.outside,
            "key": s["key"][si][keep], "order": keep,
            "kept": {name: getattr(m, name)[keep] for name in ("send_ev", "recv_ev", "send_t", "recv_post_t",
                                                               "recv_t", "src", "dst", "tag", "bytes")}}


# ------------------------------------------------------------------------------- events on disk
class _DiskColumn:
    """One column of the run's events, read from the ranks' scratch files where indexed."""

    def __init__(self, events: _DiskEvents, name: str) -> None:
        self.events, self.name = events, name

    def __getitem__(self, idx: Any) -> Any:
        e = self.events
        if np.isscalar(idx):
            i = int(idx)
            k = int(np.searchsorted(e.bases, i, side="right")) - 1
            return e.column(k, self.name)[i - e.bases[k]]
        idx = np.asarray(idx, dtype=np.int64)
        which = np.searchsorted(e.bases, idx, side="right") - 1
        out = np.empty(len(idx), dtype=timeline.COLUMNS[self.name])
        for k in np.unique(which):
            at = which == k
            out[at] = e.column(int(k), self.name)[idx[at] - e.bases[k]]
        return out


class _DiskEvents:
    """The run's events as the Timeline numbers them (ranks in order), in the scratch files: what
    the findings read of a few events (the call that waited, its call site)."""

    def __init__(self, scratch: str, ranks: list[int], counts: list[int], origin: float) -> None:
        self.scratch, self.ranks, self.origin = scratch, ranks, origin
        self.bases = np.r_[0, np.cumsum(counts)[:-1]].astype(np.int64) if counts else np.zeros(0, np.int64)
        self.total = int(sum(counts))
        self._open: dict[tuple[int, str], np.ndarray] = {}

    def column(self, k: int, name: str) -> np.ndarray:
        key = (k, name)
        if key not in self._open:
            col = np.load(Path(self.scratch) / f"r{self.ranks[k]}" / f"{name}.npy", mmap_mode="r")
            self._open[key] = col
        col = self._open[key]
        return _Shifted(col, self.origin) if name in ("t0", "t1") else col

    def close(self) -> None:
        """Let go of the columns read so far (they are mapped again when read)."""
        self._open.clear()

    def __len__(self) -> int:
        return self.total

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return _DiskColumn(self, key)
        return {name: _DiskColumn(self, name)[key] for name in timeline.COLUMNS}


class _Shifted:
    """A time column read from the origin on."""

    def __init__(self, col: np.ndarray, origin: float) -> None:
        self.col, self.origin = col, origin

    def __getitem__(self, idx: Any) -> Any:
        return np.asarray(self.col[idx]) - self.origin


# ------------------------------------------------------------------------------- the chart
def _chart(spec: dict[str, Any], parts: list, per_rank: list, per_share: list, events: _DiskEvents, work: str,
           max_arrows: int) -> dict[str, Any]:
    """The timeline chart's parts from the ranks' (bins, longest calls) and the shares' messages:
    what the in-memory chart takes from the whole timeline (report.sections.timeline.chart_data)."""
    rows = [(p.rank, t) for p in parts for t in p.chart_threads]
    shares = [x for r in per_rank for x in r["chart"]["shares"]]
    width = per_rank[0]["chart"]["width"] if per_rank else 1.0
    bars = {k: np.concatenate([np.asarray(r["chart"]["bars"][k]) for r in per_rank]) for k in
            ("dur", "thread", "t0", "t1", "fn", "i")}
    bar_rank = np.concatenate([np.full(len(r["chart"]["bars"]["dur"]), p.rank) for p, r in zip(parts, per_rank)])
    if sum(r["chart"]["calls"] for r in per_rank) > spec["max_bars"]:  # the longest, in event order among equals
        top = np.argsort(-bars["dur"], kind="stable")[:spec["max_bars"]]
    else:  # every call, in event order
        top = np.lexsort((bars["i"], bar_rank))
    drawn = [(int(bar_rank[i]), int(bars["thread"][i]), float(bars["t0"][i]), float(bars["t1"][i]),
              int(bars["fn"][i])) for i in top]
    # the messages in the order of matching (by key, then in their key's order), picked evenly
    keys = [s["keys"] for s in per_share]
    all_keys = np.concatenate(keys)
    counts = np.concatenate([s["counts"] for s in per_share])
    share_of = np.concatenate([np.full(len(k), j) for j, k in enumerate(keys)])
    start_in_share = np.concatenate([np.cumsum(s["counts"]) - s["counts"] for s in per_share])
    order = np.argsort(all_keys)
    start = np.cumsum(counts[order]) - counts[order]
    total = int(counts.sum())
    pick = np.arange(total)
    if total > max_arrows:
        pick = np.linspace(0, total - 1, max_arrows).astype(np.int64)
    k = np.searchsorted(start, pick, side="right") - 1
    share = share_of[order[k]]
    local = start_in_share[order[k]] + (pick - start[k])
    # each share's messages read once (an NpzFile reads an array again at every access)
    sends = np.empty(len(pick), dtype=np.int64)
    recvs = np.empty(len(pick), dtype=np.int64)
    send_t, recv_t, nbytes = np.empty(len(pick)), np.empty(len(pick)), np.empty(len(pick), dtype=np.int64)
    for s_ in np.unique(share).tolist():
        at = np.flatnonzero(share == s_)
        i = local[at]
        with np.load(Path(work) / "ends" / f"messages-{s_}.npz") as m:
            sends[at], recvs[at], send_t[at] = m["send_ev"][i], m["recv_ev"][i], m["send_t"][i]
            recv_t[at], nbytes[at] = np.maximum(m["recv_t"][i], m["send_t"][i]), m["bytes"][i]
    arrows = [(int(a), float(ts), int(b), float(tr), int(n))
              for a, ts, b, tr, n in zip(sends, send_t, recvs, recv_t, nbytes)]
    ev_rank, ev_thread = events["rank"], events["thread"]
    sr, st, rr, rt = ev_rank[sends], ev_thread[sends], ev_rank[recvs], ev_thread[recvs]
    return {"end": spec["end"], "rows": rows, "classes": spec["classes"],
            "calls": sum(r["chart"]["calls"] for r in per_rank),
            "bins": {"n": spec["n"], "width": width, "shares": shares}, "bars": drawn,
            "arrows": [((int(sr[j]), int(st[j]), a[1]), (int(rr[j]), int(rt[j]), a[3]), a[4])
                       for j, a in enumerate(arrows)], "sampled": total > max_arrows}


# ------------------------------------------------------------------------------- the analysis
@dataclass
class Rounds:
    """What the rounds left for a caller that goes on from them (scan's `then`): the run's
    Timeline (its events on disk, its messages those that may be late), the ranks' parts, the
    rounds' results, the scratch directory (removed when `then` returns) and the engine."""

    tl: timeline.Timeline
    parts: list[timeline.RankPart]
    per_rank: list[dict[str, Any]]
    per_share: list[dict[str, Any]]
    events: _DiskEvents
    work: str
    origin: float
    findings: list[findings.TraceFinding]
    engine: _Engine

    def columns(self, k: int) -> timeline.Events:
        """The events of the k-th rank read (parts[k]), in memory, on the run's axis."""
        return timeline.Events(_columns(self.work, self.parts[k].rank, self.origin))

    def column(self, k: int, name: str) -> np.ndarray:
        """One column of the k-th rank's events, as written (memory-mapped; times before the
        origin is taken off)."""
        return np.load(Path(self.work) / f"r{self.parts[k].rank}" / f"{name}.npy", mmap_mode="r")

    def rank_timeline(self, k: int) -> timeline.Timeline:
        """The k-th rank's events (parts[k]) as a Timeline of that rank alone: what an export writes
        rank by rank."""
        tl, p = self.tl, self.parts[k]
        return timeline.Timeline(tl.nranks, tl.functions, tl.classes, self.columns(k),
                                 {p.rank: tl.regions.get(p.rank, [])}, {p.rank: tl.counters.get(p.rank, [])},
                                 tl.complete, sites=p.sites, rundir=tl.rundir,
                                 io_files={p.rank: tl.io_files.get(p.rank, [])}, init_end=tl.init_end,
                                 traced=tl.traced)

    def message_ids(self, *more: str) -> tuple[np.ndarray, ...]:
        """Every matched message (kept when scan has a `then`): its send and receive events, its
        number in the order of matching (the in-memory Timeline's messages' order), and the
        Messages fields named in `more` (send_t, recv_t, bytes, tag)."""
        keys = [s["keys"] for s in self.per_share]
        all_keys, counts = np.concatenate(keys), np.concatenate([s["counts"] for s in self.per_share])
        order = np.argsort(all_keys)
        gstart = np.empty(len(all_keys), dtype=np.int64)
        gstart[order] = np.cumsum(counts[order]) - counts[order]  # each key's first number
        names = ("send_ev", "recv_ev", *more)
        cols: dict[str, list[np.ndarray]] = {n: [] for n in names}
        ids = []
        at = 0
        for j, s in enumerate(self.per_share):
            m = np.load(Path(self.work) / "ends" / f"messages-{j}.npz")
            c = s["counts"]
            group = np.repeat(np.arange(len(c)), c)
            within = np.arange(int(c.sum())) - np.repeat(np.cumsum(c) - c, c)
            ids.append(gstart[at:at + len(c)][group] + within)
            for n in names:
                cols[n].append(m[n])
            at += len(c)
        if not ids:
            e = np.empty(0, dtype=np.int64)
            return (e,) * (3 + len(more))
        return (np.concatenate(cols["send_ev"]), np.concatenate(cols["recv_ev"]), np.concatenate(ids),
                *(np.concatenate(cols[n]) for n in more))


def scan(rundir: str | Path, engine: Any = None, workers: int | None = None, scratch: str | Path | None = None,
         progress: Callable[[str], None] | None = None, chart: tuple[int, int] | None = None,
         then: Callable[[Rounds], Any] | None = None) -> Scan:
    """Analyse a run's trace out of core. engine: "local" (processes of this machine, `workers` of
    them, else as many as its cores and memory allow), None (the same, or this process alone for a
    trace under IN_PROCESS_BYTES), "serial" (this process), a Dask
    scheduler's address, or a distributed.Client. scratch: where the events go meanwhile (a new
    directory under it; the system's temporary directory by default: with workers on other hosts,
    give one they share). chart: (longest calls, arrows) for the parts of the timeline chart of a
    trace drawn per time bin (Scan.chart). then: called with what the rounds left before the
    scratch directory goes (an export that streams the run rank by rank); its result is Scan.then."""
    say = progress or (lambda _: None)
    timings: dict[str, float] = {}
    problems: list[str] = []
    left_out: list[str] = []
    filters = RecordFilters.from_config((meta_file.load(rundir, []) or {}).get("config") or {})
    files = reader.plan(rundir, left_out, problems)
    if engine is None and workers is None and sum(_size(f) for f, _ in files) < IN_PROCESS_BYTES:
        engine = "serial"  # a small trace: quicker here than the workers take to start
    run = _Engine(engine, workers)
    try:
        work = tempfile.mkdtemp(prefix="mpilens-scan-", dir=str(scratch) if scratch is not None else None)
    except OSError as err:
        run.close()
        raise MpilensError(f"cannot make the analysis' scratch directory in {scratch or tempfile.gettempdir()}: "
                           f"{err.strerror}") from None
    try:
        return _rounds(rundir, run, work, files, filters, problems, left_out, say, timings, chart, then)
    except _ThenFailed as failed:  # the caller's own (an export's output): as it was raised
        raise failed.error from None
    except OSError as err:  # the scratch directory full, most often
        raise MpilensError(f"the analysis' scratch directory {work}: {err.strerror or err} (--scratch DIR: one "
                           "with about 80 bytes per event free)") from None
    finally:
        run.close()
        shutil.rmtree(work, ignore_errors=True)


class _ThenFailed(Exception):
    """An OSError of scan's `then`, told apart from the scratch directory's."""

    def __init__(self, error: OSError) -> None:
        super().__init__(str(error))
        self.error = error


def _rounds(rundir, run: _Engine, work: str, files: list, filters: RecordFilters, problems: list[str],
            left_out: list[str], say: Callable[[str], None], timings: dict[str, float],
            chart: tuple[int, int] | None, then: Callable[[Rounds], Any] | None) -> Scan:
    """scan's rounds, in the scratch directory `work` (scan removes it)."""
    (Path(work) / "ends").mkdir()
    t = time.monotonic()
    say(f"decoding {len(files)} ranks on {run.name}")
    parts = []
    for got in run.map(_decode, [f for f, _ in files], [c for _, c in files],
                       [bool(filters.window_setting)] * len(files), [work] * len(files)):
        if isinstance(got, str):
            left_out.append(got)
        else:
            parts.append(got)
    if not parts:
        raise RunDirectoryError(left_out[-1] if left_out else f"{rundir}: no trace")
    parts.sort(key=lambda p: p.rank)
    timings["decode"] = time.monotonic() - t
    counts = [p.count for p in parts]
    origin = min((p.t_min for p in parts if p.count), default=0.0)
    events = _DiskEvents(work, [p.rank for p in parts], counts, origin)
    tl = timeline.assemble(rundir, parts, events, origin, filters, problems, left_out)
    shares = max(1, -(-sum(counts) // SHARE_ENDS))
    shell = {"nranks": tl.nranks, "filters": tl.filters, "traced": tl.traced, "clock_error_s": tl.clock_error_s,
             "rundir": tl.rundir, "keep_messages": chart is not None or then is not None}
    if chart is not None:
        classes = sorted(set(tl.classes))
        rows = [(p.rank, t) for p in parts for t in p.chart_threads]
        end = max((p.t_max for p in parts if p.count), default=origin) - origin
        shell["chart"] = {"classes": classes, "end": end, "n": bins.bins_for(len(rows), len(classes)),
                          "max_bars": chart[0]}
    t = time.monotonic()
    say(f"the ranks' message ends, collectives and own findings ({shares} shares)")
    n = len(parts)
    per_rank = run.map(_rank, parts, list(events.bases), [origin] * n, [shell] * n, [work] * n, [shares] * n)
    timings["ranks"] = time.monotonic() - t
    t = time.monotonic()
    say("pairing the messages")
    ranks = [p.rank for p in parts]
    per_share = run.map(_share, list(range(shares)), [ranks] * shares, [work] * shares, [shell] * shares)
    timings["messages"] = time.monotonic() - t
    t = time.monotonic()
    say("findings")
    key = np.concatenate([s["key"] for s in per_share])
    order = np.concatenate([s["order"] for s in per_share])
    by = np.lexsort((order, key))  # the in-memory order of messages: by key, then within it
    kept = {name: np.concatenate([s["kept"][name] for s in per_share])[by] for name in per_share[0]["kept"]}
    tl._messages = timeline.Messages(**kept, unmatched_sends=sum(s["unmatched"][0] for s in per_share),
                                     unmatched_recvs=sum(s["unmatched"][1] for s in per_share),
                                     outside=sum(s["outside"] for s in per_share))
    calls = {name: np.concatenate([r["collectives"][name] for r in per_rank]) for name in
             per_rank[0]["collectives"]}
    tl._collectives = timeline.group_collectives(calls)
    del calls
    irregular = [x for r in per_rank for x in r["irregular"][0]] + [x for r in per_rank for x in r["irregular"][1]]
    irregular.sort(key=lambda x: -x[0])
    gaps = [g for r in per_rank for g in r["gaps"]]
    gaps.sort(key=lambda g: -g.duration_s)
    found = (findings.late_senders(tl) + findings.late_receivers(tl) + findings.collective_waits(tl)
             + [f for _, f in irregular[:findings.TOP]] + gaps[:findings.TOP])
    timings["findings"] = time.monotonic() - t
    events.close()  # the pages the findings read (scattered, but resident while mapped)
    drawn = None if chart is None else _chart(shell["chart"], parts, per_rank, per_share, events, work, chart[1])
    c = tl.collectives
    after = None
    if then is not None:
        try:
            after = then(Rounds(tl, parts, per_rank, per_share, events, work, origin, found, run))
        except OSError as err:
            raise _ThenFailed(err) from err
    return Scan(tl.nranks, len(events), sum(s["count"] for s in per_share), tl.messages.unmatched_sends,
                tl.messages.unmatched_recvs, tl.messages.outside,
                int(c.instance.max()) + 1 if len(c.instance) else 0, tl.file_bytes, tl.writer_cpu_s,
                tl.clock_error_s, tl.complete, tl.problems, tl.filters, found, run.name, shares, timings,
                drawn, tl.functions, tl.classes, tl.rundir, after, c,
                {r: t for part in per_rank for r, t in part["starts"].items()})
