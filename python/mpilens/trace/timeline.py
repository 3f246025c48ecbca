"""The events of a whole run on one time axis, in seconds from the first event of any rank (rank
0's clock, offsets measured at MPI_Init and MPI_Finalize applied), with message arrows and
collective instances."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .. import claim, io, layout
from .. import meta as meta_file
from ..callsites import PYTHON, location, site_frame, symbolise
from ..errors import RunDirectoryError
from . import reader
from .filters import RecordFilters

COLUMNS = {"rank": np.uint32, "thread": np.uint32, "kind": np.uint16, "fn": np.uint16, "t0": np.float64,
           "t1": np.float64, "comm": np.uint32, "dst": np.int32, "src": np.int32, "stag": np.int32, "rtag": np.int32,
           "sent": np.int64, "recv": np.int64, "req": np.uint64, "site": np.uint32}


class Events:
    """The event table, one numpy array per column (fast to filter and sort at 10^7 events):
    ev["t0"] is a column, ev[indices] a subset, ev[i] one event as a dict."""

    def __init__(self, columns: dict[str, np.ndarray]) -> None:
        self.columns = columns

    @classmethod
    def empty(cls) -> Events:
        """A table of no events."""
        return cls({k: np.empty(0, dtype=t) for k, t in COLUMNS.items()})

    @classmethod
    def concatenate(cls, parts: list[Events], consume: bool = False) -> Events:
        """The events of several tables, one after the other. consume: the parts' columns are let go
        one column at a time as the table grows, so that a run's whole table is never held twice
        (the parts are left empty)."""
        if not parts:
            return cls.empty()
        columns = {}
        for k in COLUMNS:
            columns[k] = np.concatenate([p.columns[k] for p in parts])
            if consume:
                for p in parts:  # (an empty array of its own: a slice would keep the whole column)
                    p.columns[k] = np.empty(0, dtype=p.columns[k].dtype)
        return cls(columns)

    def __len__(self) -> int:
        return len(self.columns["t0"])

    def __getitem__(self, key):
        if isinstance(key, str):
            return self.columns[key]
        if isinstance(key, (int, np.integer)):
            return {k: v[key] for k, v in self.columns.items()}
        return Events({k: v[key] for k, v in self.columns.items()})

SEND_BLOCKING = {"MPI_Send", "MPI_Bsend", "MPI_Ssend", "MPI_Rsend", "MPI_Sendrecv", "MPI_Sendrecv_replace"}
SEND_NONBLOCKING = {"MPI_Isend", "MPI_Ibsend", "MPI_Issend", "MPI_Irsend", "MPI_Isendrecv", "MPI_Isendrecv_replace"}
SEND_PERSISTENT = {"MPI_Send_init", "MPI_Bsend_init", "MPI_Ssend_init", "MPI_Rsend_init", "MPI_Psend_init"}
RECV_BLOCKING = {"MPI_Recv", "MPI_Mrecv", "MPI_Sendrecv", "MPI_Sendrecv_replace"}
RECV_NONBLOCKING = {"MPI_Irecv", "MPI_Imrecv", "MPI_Isendrecv", "MPI_Isendrecv_replace"}
RECV_PERSISTENT = {"MPI_Recv_init", "MPI_Precv_init"}
STARTS = {"MPI_Start", "MPI_Startall"}


def _with_large(names: set[str]) -> set[str]:
    return names | {n + "_c" for n in names}


@dataclass
class Messages:
    """Point-to-point messages matched send -> receive: indices into Timeline.ev and times."""

    send_ev: np.ndarray  # event where the message leaves (send call, or the start of a persistent send)
    recv_ev: np.ndarray  # event where it is delivered (receive call, or the completion of a nonblocking one)
    send_t: np.ndarray  # time the send was started
    recv_post_t: np.ndarray  # time the receive was posted
    recv_t: np.ndarray  # time the receive completed
    src: np.ndarray
    dst: np.ndarray
    tag: np.ndarray
    bytes: np.ndarray
    unmatched_sends: int = 0
    unmatched_recvs: int = 0
    # ends whose other end the trace was told to leave out: a traced rank's sends to and receives
    # from untraced ranks (MPILENS_TRACE_RANKS), and receives of messages sent before the window or
    # phase they were received in (MPILENS_TRACE_WINDOW, _PCONTROL); not counted as unmatched
    outside: int = 0


@dataclass
class Collectives:
    """Instances of blocking collectives: one row per (instance, participating rank)."""

    instance: np.ndarray  # instance number (same for all participants)
    ev: np.ndarray  # event index
    rank: np.ndarray
    arrive: np.ndarray
    leave: np.ndarray
    last_arrival: np.ndarray  # latest arrival of the instance
    fn: np.ndarray


@dataclass
class Timeline:
    """All events of a run, sorted by rank, thread, start time."""

    nranks: int
    functions: list[str]
    classes: list[str]
    ev: Events
    regions: dict[int, list[tuple[int, str]]]  # per rank: path -> (parent, name)
    counters: dict[int, list[tuple[str, str]]]  # per rank: id -> (name, kind)
    complete: bool
    problems: list[str] = field(default_factory=list)
    file_bytes: int = 0  # the trace files' total size
    writer_cpu_s: float | None = None  # CPU time of the ranks' trace writer threads (None: not all recorded)
    # hosts other than rank 0's are aligned to its clock by measured offsets: {host name: error
    # bound in seconds, None when the trace recorded none}; empty when every rank is on one host
    clock_error_s: dict[str, float | None] = field(default_factory=dict)
    io_files: dict[int, list[str]] = field(default_factory=dict)  # per rank: file id of io events -> name
    _messages: Messages | None = None
    _collectives: Collectives | None = None
    # call sites (MPILENS_CALLSITE_DEPTH > 0): (rank, thread, number) -> (function id, frames as
    # (module path, address in the module)); the events' "site" column holds the numbers
    sites: dict[tuple[int, int, int], tuple[int, list[tuple[str | None, int]]]] = field(default_factory=dict)
    rundir: Path | None = None
    # the communicators the events name, by the uid the events hold: (world rank of each rank of
    # its group, world ranks of the remote group of an intercommunicator or (), as seen from the
    # lowest rank that lists it); empty for traces of versions that did not record them
    comms: dict[int, tuple[tuple[int, ...], tuple[int, ...]]] = field(default_factory=dict)
    world_uid: int | None = None  # MPI_COMM_WORLD's uid (None: not recorded)
    realtime_origin_ns: int | None = None  # calendar time (ns since 1970) of time 0; None: not recorded
    # per rank: the end of the MPI's own MPI_Init (the tool's set-up follows) on this time axis (s)
    # and the rank's CLOCK_MONOTONIC then (ns): what other modes measured on the rank's clock
    # (counters' snapshots, memory's samples) goes on the timeline from it
    init_end: dict[int, tuple[float, int]] = field(default_factory=dict)
    # what the runtime was told to leave out (meta.json's configuration; the window on this axis)
    filters: RecordFilters = field(default_factory=RecordFilters)
    traced: list[int] = field(default_factory=list)  # the ranks that wrote a trace
    # the part of a trace an export was asked for (select): {"ranks", "window", "functions",
    # "exclude"}, empty for the whole trace
    selection: dict[str, Any] = field(default_factory=dict)
    # the Timeline a selection was cut from (select): the run's findings are that one's
    whole: Timeline | None = field(default=None, repr=False, compare=False)
    _symbolised: dict[tuple[int, int, int], dict[str, Any]] | None = None

    def site(self, i: int) -> dict[str, Any] | None:
        """The call site of event i, symbolised ({"symbol", "file", "line", "module", "address"} of the
        caller of the MPI function), or None when the trace does not say."""
        e = self.ev[i]
        return self.site_of(int(e["rank"]), int(e["thread"]), int(e["site"]))

    def site_of(self, rank: int, thread: int, number: int) -> dict[str, Any] | None:
        """A call site by its number in a rank's thread (symbolised on first use, for all sites)."""
        if number == 0 or not self.sites:
            return None
        if self._symbolised is None:
            wanted = {f[site_frame(f)] for _, f in self.sites.values() if f}
            wanted = {(m, a) for m, a in wanted if m is not None and not m.startswith(PYTHON)}
            cache = layout.callsites_cache_file(self.rundir) if self.rundir is not None else None
            sym = symbolise(wanted, cache)
            out: dict[tuple[int, int, int], dict[str, Any]] = {}
            for key, (_, f) in self.sites.items():
                if not f:
                    continue
                m, a = f[site_frame(f)]
                if m is not None and m.startswith(PYTHON):
                    _, func, file = m.split("\t", 2)
                    out[key] = {"symbol": func, "file": file, "line": a, "module": file, "address": a}
                else:
                    r = sym.get((m, a), {}) if m is not None else {}
                    out[key] = {"symbol": r.get("symbol") or f"{a:#x}", "file": r.get("file"), "line": r.get("line"),
                                "module": m, "address": a}
            self._symbolised = out
        return self._symbolised.get((rank, thread, number))

    def site_text(self, i: int) -> str | None:
        """Where event i's call was made, as "file:line (function)" or the function; None: unknown."""
        e = self.ev[i]
        return self.site_text_of(int(e["rank"]), int(e["thread"]), int(e["site"]))

    def site_text_of(self, rank: int, thread: int, number: int) -> str | None:
        """A call site as "file:line (function)" or the function; None: unknown."""
        s = self.site_of(rank, thread, number)
        if s is None:
            return None

        return f"{location(s)} ({s['symbol']})" if s.get("line") else str(s["symbol"])

    def fn_ids(self, names: set[str]) -> np.ndarray:
        """Ids of the functions named, as the events' fn column holds them."""
        return np.array([i for i, n in enumerate(self.functions) if n in names], dtype=np.uint16)

    def name(self, i: int) -> str:
        """Name of the event at index i (function, region or counter)."""
        e = self.ev[i]
        if e["kind"] in (reader.REGION_BEGIN, reader.REGION_END):
            return self.region_name(int(e["rank"]), int(e["fn"]))
        if e["kind"] == reader.IO:
            return self.file_name(int(e["rank"]), int(e["fn"]))
        if e["kind"] == reader.COUNTER:
            names = self.counters.get(int(e["rank"]), [])
            return names[e["fn"]][0] if e["fn"] < len(names) else f"counter {e['fn']}"
        return self.functions[e["fn"]]

    def file_name(self, rank: int, file: int) -> str:
        """Name (as opened) of file id `file` of a rank's io events ("file N" without its io file)."""
        table = self.io_files.get(rank, [])
        return table[file] if file < len(table) else f"file {file}"

    def io_events(self) -> np.ndarray:
        """Indices of the io events: each gives the file (fn, see file_name) and byte offset (sent,
        -1 unknown) of the MPI-IO call event that follows it on its thread."""
        return np.flatnonzero(self.ev["kind"] == reader.IO)

    def region_name(self, rank: int, path: int) -> str:
        """Name of region path id `path` of a rank ("region N" when the rank's trailer does not say)."""
        table = self.regions.get(rank, [])
        return table[path][1] if path < len(table) else f"region {path}"

    def select(self, ranks: list[tuple[int, int]] | None = None, window: tuple[float, float] | None = None,
               functions: set[int] | None = None, exclude: set[int] | None = None) -> Timeline:
        """The timeline of some of its events, on the same time axis: those of the ranks listed
        (filters.parse_ranks), starting within the window (seconds on this axis), and, of the calls
        and completions, those of the functions given and not excluded (ids, filters.function_ids;
        I/O events go with their calls' class). Messages and collective instances are those of the
        whole timeline whose events are all kept: a message is never paired anew within a part."""
        ev = self.ev
        keep = selection_mask(ev, self.functions, self.classes, ranks, window, functions, exclude)
        idx = np.flatnonzero(keep)
        new_of = np.full(len(ev) + 1, -1, dtype=np.int64)
        new_of[idx] = np.arange(len(idx))
        m, c = self.messages, self.collectives
        mk = (new_of[m.send_ev] >= 0) & (new_of[m.recv_ev] >= 0)
        messages = Messages(new_of[m.send_ev[mk]], new_of[m.recv_ev[mk]], m.send_t[mk], m.recv_post_t[mk],
                            m.recv_t[mk], m.src[mk], m.dst[mk], m.tag[mk], m.bytes[mk])
        ck = new_of[c.ev] >= 0
        collectives = Collectives(c.instance[ck], new_of[c.ev[ck]], c.rank[ck], c.arrive[ck], c.leave[ck],
                                  c.last_arrival[ck], c.fn[ck])
        kept_ranks = [r for r in self.traced if not ranks or any(a <= r <= b for a, b in ranks)]
        return dataclasses.replace(
            self, ev=ev[idx], traced=kept_ranks, _messages=messages, _collectives=collectives,
            init_end={r: v for r, v in self.init_end.items() if r in kept_ranks},
            selection={"ranks": ranks or None, "window": window, "functions": functions, "exclude": exclude},
            whole=self.whole or self)

    @property
    def messages(self) -> Messages:
        """The messages matched send to receive (computed on first use)."""
        if self._messages is None:
            self._messages = match_messages(self)
        return self._messages

    @property
    def collectives(self) -> Collectives:
        """The collective calls grouped into instances (computed on first use)."""
        if self._collectives is None:
            self._collectives = collective_instances(self)
        return self._collectives


@dataclass
class RankPart:
    """What one rank's trace adds to a Timeline: its events (in time order per thread, times in
    seconds on rank 0's clock, before the run's origin is taken off) and what its head and trailer
    say. Made by rank_part, on its own for each rank (the out-of-core analysis makes them in
    worker processes, mpilens.trace.scan); joined by assemble."""

    rank: int
    cols: dict[str, np.ndarray] | None
    count: int
    functions: list[str]
    classes: list[str]
    nranks: int
    problems: list[str]
    complete: bool
    file_bytes: int
    writer_cpu_s: float | None
    host: str | None
    clock_error_s: float | None
    has_offsets: bool
    window: tuple[float, float] | None  # the recorded window, in s on this axis (before the origin)
    world_uid: int | None
    realtime_at: tuple[int, int] | None  # (rank 0's ns1, its calendar time)
    comms: list
    regions: list[tuple[int, str]] | None  # None: no trailer
    counters: list[tuple[str, str]] | None
    init_end: tuple[float, int] | None
    sites: dict[tuple[int, int, int], tuple[int, list[tuple[str | None, int]]]]
    t_min: float  # earliest t0 (inf: no events)
    t_max: float  # latest t1 (-inf: no events)
    has_io: bool
    chart_threads: list[int] = field(default_factory=list)  # the out-of-core analysis': its chart's rows
    threads: list[int] = field(default_factory=list)  # and the threads of its events


def rank_part(rt: reader.RankTrace, window_setting: bool) -> RankPart:
    """One rank's part of the Timeline (window_setting: the run recorded a time window)."""
    window = (rt.head.get("filter") or {}).get("window_ns")
    win = None
    if window_setting and isinstance(window, list) and len(window) == 2:
        lo, hi = rt.ns_to_seconds(np.array([float(window[0]), float(max(window[1], 0))]))
        win = (float(lo), float(hi) if window[1] >= 0 else np.inf)
    realtime_at = world_uid = None
    if rt.rank == 0 and "realtime_ns1" in rt.head:
        world_uid = rt.head.get("world_uid")
        realtime_at = (rt.head["ns1"], rt.head["realtime_ns1"])
    t0, t1 = rt.to_seconds(rt.events["t0"]), rt.to_seconds(rt.events["t1"])
    init_end = None
    if "tick0" in rt.head and "ns0" in rt.head:  # the head's clock point: the end of MPI_Init
        init_end = (float(rt.to_seconds(np.array([rt.head["tick0"]], dtype=np.uint64))[0]), int(rt.head["ns0"]))
    # in time order per thread: records are written when a call ends, and a completion record
    # before the call that completed it; the data is nearly sorted, which a stable sort likes
    if len(np.unique(rt.thread)) > 1:
        order = np.lexsort((t0, rt.thread))
    else:
        order = np.argsort(t0, kind="stable")
    cols = {"rank": np.full(len(order), rt.rank, dtype=np.uint32), "thread": rt.thread[order],
            "t0": t0[order], "t1": t1[order]}
    for name in ("kind", "fn", "comm", "dst", "src", "stag", "rtag", "sent", "recv", "req"):
        cols[name] = np.ascontiguousarray(rt.events[name])[order]
    cols["site"] = (rt.site if rt.site is not None else np.zeros(len(order), dtype=np.uint32))[order]
    sites: dict[tuple[int, int, int], tuple[int, list[tuple[str | None, int]]]] = {}
    if rt.trailer and rt.trailer.get("sites"):
        mods = rt.trailer.get("site_modules", [])
        for th, number, fn, frames in rt.trailer["sites"]:
            sites[(rt.rank, int(th), int(number))] = (int(fn), [
                (mods[m] if m is not None and m < len(mods) else None, int(a)) for m, a in frames])
    return RankPart(
        rt.rank, cols, len(order), rt.functions, rt.head.get("classes", ["other"] * len(rt.functions)),
        int(rt.head["nranks"]), list(rt.problems), rt.complete, rt.file_bytes, rt.writer_cpu_s, rt.host,
        None if rt.clock_error_ns is None else rt.clock_error_ns * 1e-9, rt.host_offsets is not None, win,
        world_uid, realtime_at, list((rt.trailer or {}).get("comms", [])),
        [(p, n) for p, n in rt.trailer.get("regions", [])] if rt.trailer else None,
        [(n, k) for n, k in rt.trailer.get("counters", [])] if rt.trailer else None,
        init_end, sites, float(t0.min()) if len(t0) else np.inf, float(t1.max()) if len(t1) else -np.inf,
        bool((cols["kind"] == reader.IO).any()))


def load(rundir: str | Path, progress: Callable[[str], None] | None = None) -> Timeline:
    """Read every rank's trace of a run into one Timeline."""
    problems: list[str] = []
    left_out: list[str] = []  # ranks whose trace file cannot be read
    filters = RecordFilters.from_config((meta_file.load(rundir, []) or {}).get("config") or {})
    parts = []
    for rt in reader.read_all(rundir, left_out, problems):
        if progress:
            progress(f"reading the trace of rank {rt.rank}")
        parts.append(rank_part(rt, bool(filters.window_setting)))
        del rt
    parts.sort(key=lambda p: p.rank)
    ev = Events.concatenate([Events(p.cols) for p in parts], consume=True)
    for p in parts:
        p.cols = None
    origin = float(ev["t0"].min()) if len(ev) else 0.0
    if len(ev):
        ev["t0"][:] -= origin
        ev["t1"][:] -= origin
    return assemble(rundir, parts, ev, origin, filters, problems, left_out)


def assemble(rundir: str | Path, parts: list[RankPart], ev: Any, origin: float, filters: RecordFilters,
             problems: list[str], left_out: list[str]) -> Timeline:
    """The Timeline of the ranks' parts (sorted by rank), whose events `ev` are on the run's axis
    (their origin, the earliest t0, taken off). problems: what was found before (meta.json);
    left_out: the ranks whose trace could not be read."""
    regions, counters, sites, comms, clock_error, init_end = {}, {}, {}, {}, {}, {}
    functions: list[str] = []
    classes: list[str] = []
    complete, nranks, file_bytes, writer_cpu_s = True, 0, 0, 0.0
    world_uid = realtime_at = None
    window_ns = None
    running = claim.still_running(rundir)
    ended = "the job is still running" if running is not None else "the process was killed"
    for p in parts:
        functions, classes = p.functions, p.classes
        if window_ns is None and p.window is not None:
            window_ns = p.window
        nranks = max(nranks, p.nranks)
        problems += p.problems
        complete &= p.complete
        file_bytes += p.file_bytes
        if p.has_offsets:
            clock_error[p.host or f"rank {p.rank}'s host"] = p.clock_error_s
        cpu = p.writer_cpu_s
        writer_cpu_s = None if cpu is None or writer_cpu_s is None else writer_cpu_s + cpu
        if p.realtime_at is not None:
            world_uid, realtime_at = p.world_uid, p.realtime_at
        for uid, ranks, remote in p.comms:
            comms.setdefault(int(uid), (tuple(ranks), tuple(remote)))
        if p.regions is not None:
            regions[p.rank] = p.regions
            counters[p.rank] = p.counters
        else:
            problems.append(f"rank {p.rank}: the trace has no trailer ({ended}): region and counter names are "
                            "unknown")
        if p.init_end is not None:
            init_end[p.rank] = p.init_end
        sites.update(p.sites)
    traced = [p.rank for p in parts]
    # rank 0's times are its CLOCK_MONOTONIC: its head gives the calendar time of one of them
    init_end = {r: (float(s - origin), ns) for r, (s, ns) in init_end.items()}
    realtime = None if realtime_at is None else int(realtime_at[1] + (origin * 1e9 - realtime_at[0]))
    if not complete:  # of the ranks read: those left out are named on their own
        problems.append("the job is still running: the trace ends where the ranks are now" if running is not None
                        else "some ranks did not reach MPI_Finalize: the trace ends where they stopped")
    problems += left_out
    complete &= not left_out
    unread = {layout.rank_of("trace", f) for f in reader.trace_files(rundir)} - set(traced) if left_out else set()
    silent = [r for r in range(nranks) if r not in traced and r not in unread and filters.traced(r)]
    if silent:
        problems.append(f"{_ranks_text(silent)} wrote no trace (killed before MPI_Init, or its trace could not be "
                        "created)")
        complete = False
    if window_ns is not None:
        filters.window = (window_ns[0] - origin, window_ns[1] - origin)
    io_files: dict[int, list[str]] = {}
    if any(p.has_io for p in parts):  # names of the files the io events refer to
        for path in layout.io_files(rundir):
            try:
                one = io.read_file(path)
            except (RunDirectoryError, OSError) as err:
                problems.append(str(err))
                continue
            io_files[one["rank"]] = [r.name for r in sorted(one["records"], key=lambda r: r.rec["id"])]
    return Timeline(nranks, functions, classes, ev, regions, counters, complete, problems, file_bytes, writer_cpu_s,
                    clock_error, io_files, sites=sites, rundir=Path(rundir), comms=comms, world_uid=world_uid,
                    realtime_origin_ns=realtime, init_end=init_end, filters=filters, traced=sorted(traced))


def _ranks_text(ranks: list[int]) -> str:
    """'rank 3', 'ranks 1, 4-6'."""
    parts, start = [], None
    for i, r in enumerate(ranks):
        if start is None:
            start = r
        if i + 1 == len(ranks) or ranks[i + 1] != r + 1:
            parts.append(str(start) if start == r else f"{start}-{r}")
            start = None
    return ("rank " if len(ranks) == 1 else "ranks ") + ", ".join(parts)


# ------------------------------------------------------------------------------------- messages
def _pair(keys_s: np.ndarray, order_s: np.ndarray, keys_r: np.ndarray, order_r: np.ndarray) -> tuple:
    """Pair the k-th send with the k-th receive of each key (MPI's non-overtaking order).
    Returns (send indices, receive indices, unmatched sends, unmatched receives)."""
    def groups(keys: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        idx = np.lexsort((order, keys))
        uniq, start, count = np.unique(keys[idx], return_index=True, return_counts=True)
        return idx, uniq, start, count

    si, su, ss, sc = groups(keys_s, order_s)
    ri, ru, rs, rc = groups(keys_r, order_r)
    # the keys of both sides (few: one per communicator, pair of ranks and tag)
    _, a, b = np.intersect1d(su, ru, assume_unique=True, return_indices=True)
    n = np.minimum(sc[a], rc[b])
    total = int(n.sum())
    # positions 0..n-1 of every common key, laid out one key after the other
    offset = np.repeat(np.cumsum(n) - n, n)
    pos = np.arange(total) - offset
    send = si[np.repeat(ss[a], n) + pos]
    recv = ri[np.repeat(rs[b], n) + pos]
    return send, recv, len(keys_s) - total, len(keys_r) - total


def _key(comm: np.ndarray, src: np.ndarray, dst: np.ndarray, tag: np.ndarray) -> np.ndarray:
    """A 64-bit hash of (communicator, source, destination, tag)."""
    k = comm.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    for v in (src, dst, tag):
        k = (k ^ v.astype(np.int64).astype(np.uint64)) * np.uint64(0xff51afd7ed558ccd)
        k ^= k >> np.uint64(29)
    return k


def _op_key(ev: Events, idx: np.ndarray) -> np.ndarray:
    """Identity of an operation across its records: (rank, request number)."""
    return (ev["rank"][idx].astype(np.uint64) << np.uint64(48)) | (ev["req"][idx] & np.uint64((1 << 48) - 1))


def _nth(keys: np.ndarray, times: np.ndarray) -> np.ndarray:
    """For each element, how many elements with the same key come before it in time."""
    if len(keys) == 0:
        return np.empty(0, dtype=np.int64)
    order = np.lexsort((times, keys))
    k = keys[order]
    start = np.r_[0, np.flatnonzero(k[1:] != k[:-1]) + 1]
    pos = np.empty(len(k), dtype=np.int64)
    pos[order] = np.arange(len(k)) - np.repeat(start, np.diff(np.r_[start, len(k)]))
    return pos


def _join(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Index into right of the element equal to each element of left, or -1."""
    out = np.full(len(left), -1, dtype=np.int64)
    if len(right) == 0 or len(left) == 0:
        return out
    ro = np.argsort(right, kind="stable")
    rs = right[ro]
    lo = np.argsort(left, kind="stable")  # sorted queries: searchsorted walks memory in order
    pos = np.minimum(np.searchsorted(rs, left[lo]), len(rs) - 1)
    hit = rs[pos] == left[lo]
    out[lo[hit]] = ro[pos[hit]]
    return out


def _combine(key: np.ndarray, nth: np.ndarray) -> np.ndarray:
    """One 64-bit number for (key, n-th of that key)."""
    k = (key ^ (nth.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15))) * np.uint64(0xff51afd7ed558ccd)
    return k ^ (k >> np.uint64(31))


def match_messages(tl: Timeline) -> Messages:
    """Find every point-to-point message: its send and its receive."""
    sends, recvs = message_ends(tl)
    return pair_ends(sends, recvs, tl.filters, tl.traced, tl.clock_error_s)[0]


def message_ends(tl: Timeline, base: int = 0) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The ends of the messages of tl's events: sends (where each message leaves: ev, its time t,
    src, dst, tag, bytes, and t1 and call, the end and whether it is a blocking call of that
    event) and receives (where each is delivered: ev, post and done times, src, dst), each with
    its key (communicator, source, destination, tag; and the phase of a trace recorded in
    phases). What one rank's events give is its own ends: the out-of-core analysis takes them rank
    by rank (mpilens.trace.scan). base: added to the event indices."""
    ev = tl.ev
    calls = ev["kind"] == reader.CALL
    done = np.flatnonzero(ev["kind"] == reader.DONE)
    fn = ev["fn"]

    def isin(names: set[str]) -> np.ndarray:
        return np.isin(fn, tl.fn_ids(_with_large(names)))

    # completions, numbered per operation in time order (a persistent operation completes once
    # per start)
    done_key = _op_key(ev, done)
    done_k = _combine(done_key, _nth(done_key, ev["t0"][done]))
    starts = np.flatnonzero(calls & isin(STARTS) & (ev["req"] > 0))
    start_key = _op_key(ev, starts)

    # --- sends: where the message leaves, and the record that says where it goes
    s_block = np.flatnonzero(calls & isin(SEND_BLOCKING) & (ev["dst"] >= 0))
    s_nb = np.flatnonzero(calls & isin(SEND_NONBLOCKING) & (ev["dst"] >= 0))
    init = np.flatnonzero(calls & isin(SEND_PERSISTENT) & (ev["dst"] >= 0))
    at = _join(start_key, _op_key(ev, init))
    s_pers, s_pers_init = starts[at >= 0], init[at[at >= 0]]
    s_ev = np.r_[s_block, s_nb, s_pers].astype(np.int64)
    s_def = np.r_[s_block, s_nb, s_pers_init].astype(np.int64)
    s_time = ev["t0"][s_ev]
    s_src = ev["rank"][s_ev].astype(np.int32)
    s_dst, s_tag, s_comm = ev["dst"][s_def], ev["stag"][s_def], ev["comm"][s_def]
    # bytes of nonblocking and persistent sends are known at their completion
    s_bytes = ev["sent"][s_def].copy()
    nb = np.r_[np.zeros(len(s_block), bool), np.ones(len(s_nb) + len(s_pers), bool)]
    nb_idx = np.flatnonzero(nb)
    nb_key = _op_key(ev, s_def[nb_idx])
    nb_k = _combine(nb_key, _nth(nb_key, s_time[nb_idx]))
    hit = _join(nb_k, done_k)
    s_bytes[nb_idx[hit >= 0]] = ev["sent"][done[hit[hit >= 0]]]

    # --- receives: blocking ones are one record; nonblocking ones a post (or a start) and a
    # completion, which has the actual source and tag
    r_block = np.flatnonzero(calls & isin(RECV_BLOCKING) & (ev["src"] >= 0))
    recv_done = done[np.isin(ev["fn"][done], tl.fn_ids(_with_large(RECV_NONBLOCKING | RECV_PERSISTENT)))
                     & (ev["src"][done] >= 0)]
    rd_key = _op_key(ev, recv_done)
    rd_nth = _nth(rd_key, ev["t0"][recv_done])
    posts = np.flatnonzero(calls & (isin(RECV_NONBLOCKING) | isin(RECV_PERSISTENT)))
    post = _join(rd_key, _op_key(ev, posts))
    ok = post >= 0
    recv_done, rd_key, rd_nth, post = recv_done[ok], rd_key[ok], rd_nth[ok], posts[post[ok]]
    post_t = ev["t0"][post].copy()
    st = _join(_combine(rd_key, rd_nth), _combine(start_key, _nth(start_key, ev["t0"][starts])))
    post_t[st >= 0] = ev["t0"][starts[st[st >= 0]]]  # persistent: its k-th start
    r_ev = np.r_[r_block, recv_done].astype(np.int64)
    r_post = np.r_[ev["t0"][r_block], post_t]
    r_done = np.r_[ev["t1"][r_block], ev["t0"][recv_done]]
    r_comm = np.r_[ev["comm"][r_block], np.where(ev["comm"][recv_done] > 0, ev["comm"][recv_done], ev["comm"][post])]
    r_src = np.r_[ev["src"][r_block], ev["src"][recv_done]]
    r_tag = np.r_[ev["rtag"][r_block], ev["rtag"][recv_done]]
    r_dst = ev["rank"][r_ev].astype(np.int32)
    ks = _key(s_comm, s_src, s_dst, s_tag)
    kr = _key(r_comm.astype(np.uint32), r_src.astype(np.int32), r_dst, r_tag.astype(np.int32))
    if tl.filters.cut:  # within a phase (MPI_Pcontrol(1) to (0)) only
        ks = _combine(ks, _phase(tl, s_src, s_time))
        kr = _combine(kr, _phase(tl, r_dst, r_post))
    sends = {"key": ks, "t": s_time, "ev": s_ev + base, "src": s_src, "dst": s_dst.astype(np.int32),
             "tag": s_tag.astype(np.int32), "bytes": s_bytes.astype(np.int64), "t1": ev["t1"][s_ev],
             "call": ev["kind"][s_ev] == reader.CALL}
    recvs = {"key": kr, "post": r_post, "done": r_done, "ev": r_ev + base, "src": r_src.astype(np.int32),
             "dst": r_dst}
    return sends, recvs


def pair_ends(sends: dict[str, np.ndarray], recvs: dict[str, np.ndarray], filters: RecordFilters,
              traced: list[int], clock_error_s: dict[str, float | None]) -> tuple[Messages, np.ndarray, np.ndarray]:
    """The messages of the ends (message_ends; every end of a key must be there): the k-th send
    of each key with its k-th receive, in the order of their keys. Also returns, for each message,
    the index of its send in sends and of its receive in recvs."""
    ks, kr, s_time, r_post, r_done = sends["key"], recvs["key"], sends["t"], recvs["post"], recvs["done"]
    # a filtered trace: ends whose partner the trace left out do not take part (MPILENS_TRACE_*)
    keep_s, keep_r = np.ones(len(ks), bool), np.ones(len(kr), bool)
    if filters.ranks:
        keep = np.asarray(traced, dtype=np.int64)
        keep_s &= np.isin(sends["dst"], keep)
        keep_r &= np.isin(recvs["src"], keep)
    if filters.cut:
        # a receive completed before the first send of its key in its phase was started must be a
        # message sent before the trace began; and a send started after the last receive of its
        # key in its phase completed must be received after the trace ended
        before = _per_key(ks[keep_s], s_time[keep_s], np.minimum, kr, np.inf)  # each key's first send
        after = _per_key(kr[keep_r], r_done[keep_r], np.maximum, ks, -np.inf)  # each key's last completion
        slack = max([e for e in clock_error_s.values() if e is not None], default=0.0) + 1e-6
        keep_r &= ~(r_done < before - slack)
        keep_s &= ~(s_time > after + slack)
    outside = int((~keep_s).sum() + (~keep_r).sum())
    s_idx, r_idx = np.flatnonzero(keep_s), np.flatnonzero(keep_r)
    si, ri, us, ur = _pair(ks[s_idx], s_time[s_idx], kr[r_idx], r_post[r_idx])
    si, ri = s_idx[si], r_idx[ri]
    return (Messages(sends["ev"][si], recvs["ev"][ri], s_time[si], r_post[ri], r_done[ri], sends["src"][si],
                     sends["dst"][si], sends["tag"][si], sends["bytes"][si], us, ur, outside), si, ri)


def _per_key(keys: np.ndarray, values: np.ndarray, reduce: np.ufunc, queries: np.ndarray,
             missing: float) -> np.ndarray:
    """For each query key, reduce (np.minimum, np.maximum) over the values of that key; missing
    where the key has none."""
    out = np.full(len(queries), missing)
    if len(keys) == 0 or len(queries) == 0:
        return out
    uniq, inverse = np.unique(keys, return_inverse=True)
    per = np.full(len(uniq), missing)
    reduce.at(per, inverse, values)
    pos = np.minimum(np.searchsorted(uniq, queries), len(uniq) - 1)
    hit = uniq[pos] == queries
    out[hit] = per[pos[hit]]
    return out


def _phase(tl: Timeline, ranks: np.ndarray, times: np.ndarray) -> np.ndarray:
    """Per (rank, time): how many MPI_Pcontrol(1) calls its rank made up to that time (the phase of
    a trace recorded with MPILENS_TRACE_PCONTROL; 0 for a window)."""
    out = np.zeros(len(ranks), dtype=np.int64)
    if not tl.filters.pcontrol or "MPI_Pcontrol" not in tl.functions:
        return out
    ev = tl.ev
    opens = np.flatnonzero((ev["kind"] == reader.CALL) & (ev["fn"] == tl.functions.index("MPI_Pcontrol"))
                           & (ev["stag"] == 1))
    for r in np.unique(ranks):
        at = ranks == r
        t = np.sort(ev["t0"][opens[ev["rank"][opens] == r]])
        out[at] = np.searchsorted(t, times[at], side="right")
    return out


def selection_mask(ev: Any, names: list[str], classes: list[str], ranks: list[tuple[int, int]] | None = None,
                   window: tuple[float, float] | None = None, functions: set[int] | None = None,
                   exclude: set[int] | None = None) -> np.ndarray:
    """Which of the events (columns of a Timeline's, or of one rank's) a selection keeps
    (Timeline.select says which); names and classes: the trace's functions'."""
    keep = np.ones(len(ev["kind"]), bool)
    if ranks:
        r = np.asarray(ev["rank"]).astype(np.int64)
        keep &= np.logical_or.reduce([(r >= a) & (r <= b) for a, b in ranks])
    kind = np.asarray(ev["kind"])
    if window is not None:
        t0 = np.asarray(ev["t0"])
        keep &= (t0 >= window[0]) & (t0 <= window[1])
    fn_events = (kind == reader.CALL) | (kind == reader.DONE)
    if functions is not None or exclude:
        wanted = np.ones(len(names), bool)
        if functions is not None:
            wanted[:] = False
            wanted[sorted(functions)] = True
        if exclude:
            wanted[sorted(exclude)] = False
        fn = np.minimum(np.asarray(ev["fn"]), len(names) - 1)
        keep &= ~fn_events | wanted[fn]
        io_ids = [i for i, c in enumerate(classes) if c == "io"]
        if io_ids and not wanted[io_ids].any():
            keep &= kind != reader.IO
    return keep


def program_starts(tl: Timeline) -> dict[int, float]:
    """Per rank with events: when its program's own work starts, the end of its MPI_Init (or
    MPI_Init_thread), else its first event (seconds, the Timeline's)."""
    ev = tl.ev
    init = np.isin(ev["fn"], tl.fn_ids({"MPI_Init", "MPI_Init_thread"})) & (ev["kind"] == reader.CALL)
    out = {}
    for r in np.unique(ev["rank"]):
        mine = ev["rank"] == r
        out[int(r)] = float(ev["t1"][init & mine].max()) if (init & mine).any() else float(ev["t0"][mine].min())
    return out


# ------------------------------------------------------------------------------------- collectives
def collective_instances(tl: Timeline) -> Collectives:
    """Group blocking collective calls into instances: the k-th call on a communicator of every
    member is the same instance (MPI requires the same order on all members)."""
    return group_collectives(collective_calls(tl))


def collective_calls(tl: Timeline, base: int = 0) -> dict[str, np.ndarray]:
    """The blocking collective calls of tl's events: ev (plus base), comm, rank, arrive, leave, fn."""
    ev = tl.ev
    coll_ids = np.array([i for i, (n, c) in enumerate(zip(tl.functions, tl.classes))
                         if c == "collective" and not n.startswith("MPI_I") and not n.endswith("_init")],
                        dtype=np.uint16)
    idx = np.flatnonzero((ev["kind"] == reader.CALL) & np.isin(ev["fn"], coll_ids))
    return {"ev": idx.astype(np.int64) + base, "comm": ev["comm"][idx], "rank": ev["rank"][idx].astype(np.int32),
            "arrive": ev["t0"][idx], "leave": ev["t1"][idx], "fn": ev["fn"][idx]}


def group_collectives(calls: dict[str, np.ndarray]) -> Collectives:
    """The instances of the collective calls (collective_calls, of one rank or of all, joined)."""
    if len(calls["ev"]) == 0:
        e = np.empty(0)
        return Collectives(e.astype(np.int64), e.astype(np.int64), e.astype(np.int32), e, e, e, e.astype(np.uint16))
    order = np.lexsort((calls["arrive"], calls["rank"], calls["comm"]))
    comm, rank = calls["comm"][order], calls["rank"][order]
    first = np.r_[True, (comm[1:] != comm[:-1]) | (rank[1:] != rank[:-1])]
    group_start = np.flatnonzero(first)
    n = len(order)
    k = np.arange(n) - np.repeat(group_start, np.diff(np.r_[group_start, n]))
    key = (comm.astype(np.uint64) << np.uint64(32)) | k.astype(np.uint64)
    uniq, inst = np.unique(key, return_inverse=True)
    arrive, leave = calls["arrive"][order], calls["leave"][order]
    last = np.full(len(uniq), -np.inf)
    np.maximum.at(last, inst, arrive)
    return Collectives(inst, calls["ev"][order], rank, arrive, leave, last[inst], calls["fn"][order])
