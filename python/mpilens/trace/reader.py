"""Read the per-rank trace files of trace mode (trace/rank-NNNNNN.bin; layout in
runtime/spec/rundir.yaml, file `trace`, and docs/run-directory.md) into numpy arrays, one rank at
a time, without copying more than one rank's events. A block cut short (the process was killed
while writing it) is detected and skipped."""

from __future__ import annotations

import json
import mmap
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .. import _layout as L
from .. import layout
from .. import meta as meta_file
from ..errors import RunDirectoryError

# kinds of events
CALL, DONE, REGION_BEGIN, REGION_END, COUNTER = (L.TRACE_KIND_CALL, L.TRACE_KIND_DONE, L.TRACE_KIND_REGION_BEGIN,
                                                 L.TRACE_KIND_REGION_END, L.TRACE_KIND_COUNTER)
IO = L.TRACE_KIND_IO  # file (fn) and byte offset (sent) of the MPI-IO call whose event follows
# a call and the completion, within it, of the operation it started: read as a CALL and a DONE
CALL_DONE = L.TRACE_KIND_CALL_DONE
# a receive's call written with its completion (read as the CALL where the thread made the call
# and the DONE here), or alone (fn | ALONE: the call only)
LATE, ALONE = L.TRACE_KIND_LATE_CALL, L.TRACE_FN_ALONE

# an event with all of its fields: the 64-byte events of older traces as they are, and what the
# compact events are decoded into
EVENT = L.TRACE_EVENT_V1_DTYPE
BLOCK = L.TRACE_BLOCK_V1_DTYPE  # the blocks of older traces
# compact events: a fixed part each, then the blocks' words
BLOCK2 = L.TRACE_BLOCK_DTYPE
FIXED = L.TRACE_FIXED_DTYPE
LONG, COMM, DST, SRC, STAG, RTAG = (L.TRACE_EVENT_LONG, L.TRACE_EVENT_COMM, L.TRACE_EVENT_DST, L.TRACE_EVENT_SRC,
                                    L.TRACE_EVENT_STAG, L.TRACE_EVENT_RTAG)
SENT, RECV, REQ = L.TRACE_EVENT_SENT, L.TRACE_EVENT_RECV, L.TRACE_EVENT_REQ  # shifts of two-bit widths
SITE = L.TRACE_EVENT_SITE  # the call site's number in its thread's table follows


@dataclass
class _Block:
    """A block of compact events: where its parts are in the file."""

    thread: int
    version: int  # 4: this runtime's events; 3: no late_call events; 2: nothing repeated but the communicator
    filling: int
    first: int
    count: int
    fixed_at: int
    words_at: int
    words: int


@dataclass
class RankTrace:
    """One rank's events (in the order each thread recorded them) and what is needed to read them."""

    rank: int
    events: np.ndarray  # EVENT records
    thread: np.ndarray  # thread number of each event
    head: dict[str, Any]
    trailer: dict[str, Any] | None
    clock_points: list[tuple[int, int]]  # (tick, ns) pairs: head, every block, trailer
    problems: list[str] = field(default_factory=list)
    same_host_as_rank0: bool = False  # then its clock is rank 0's: the measured offsets are noise
    # rank 0's (tick, ns) pairs, for a rank of its host: the same time-stamp counter and
    # CLOCK_MONOTONIC, so one conversion for all of them keeps their order exact (each rank's own
    # pairs differ by the tens of ns of jitter between reading the counter and the clock)
    host_clock_points: list[tuple[int, int]] | None = None
    file_bytes: int = 0
    # a rank on another host than rank 0's: its host's offsets to rank 0's clock, [when, offset]
    # pairs in ns, taken from the measurement of the shortest round trip among the host's ranks
    # (they share the host's clocks), and their error bound (half that round trip); None when
    # the trace does not say (traces of earlier versions recorded no round trip)
    host_offsets: list[list[int]] | None = None
    clock_error_ns: int | None = None
    host: str | None = None  # its host's name (meta.json), None when unknown
    # call site of each event: its number in its thread's table (the trailer's "sites"), 0: unknown
    site: np.ndarray | None = None

    @property
    def writer_cpu_s(self) -> float | None:
        """CPU time of the rank's trace writer thread (None: not recorded, e.g. killed)."""
        ns = (self.trailer or {}).get("writer_cpu_ns")
        return None if ns is None else ns * 1e-9

    @property
    def functions(self) -> list[str]:
        """Names of the functions, by the id the events use."""
        return self.head["functions"]

    @property
    def complete(self) -> bool:
        """Whether the rank reached MPI_Finalize (its trailer says so)."""
        return bool(self.trailer and self.trailer.get("complete"))

    def to_seconds(self, ticks: np.ndarray) -> np.ndarray:
        """Convert ticks to seconds on rank 0's clock (CLOCK_MONOTONIC), aligned with the
        offsets measured at MPI_Init and MPI_Finalize (linear drift between them)."""
        pts = np.array(self.host_clock_points or self.clock_points, dtype=np.float64)
        if len(pts) >= 2 and pts[-1, 0] > pts[0, 0]:
            rate = (pts[-1, 1] - pts[0, 1]) / (pts[-1, 0] - pts[0, 0])  # ns per tick
        else:
            rate = 1.0
        return self.ns_to_seconds(pts[0, 1] + (ticks.astype(np.float64) - pts[0, 0]) * rate)

    def ns_to_seconds(self, ns: np.ndarray) -> np.ndarray:
        """Convert times of this rank's CLOCK_MONOTONIC (ns) to seconds on rank 0's clock."""
        if self.same_host_as_rank0:
            offsets = []
        else:
            offsets = self.host_offsets or (self.trailer or self.head).get("offset_ns", [])
        if len(offsets) >= 2 and offsets[1][0] > offsets[0][0]:
            (a0, o0), (a1, o1) = offsets[0][:2], offsets[1][:2]
            off = o0 + (ns - a0) * (o1 - o0) / (a1 - a0)
        elif offsets:
            off = offsets[0][1]
        else:
            off = 0.0
        return (ns - off) * 1e-9


def _json_block(data: memoryview, pos: int) -> tuple[dict[str, Any], int]:
    end = bytes(data[pos:pos + (1 << 24)]).find(L.MAGIC_TRACE_JSON_END)
    if end < 0:
        raise ValueError("a metadata block has no end")
    return json.loads(bytes(data[pos:pos + end])), pos + end + 8


@dataclass
class _Layout:
    """Where a trace file's parts are, found without decoding its events."""

    data: memoryview
    size: int
    head: dict[str, Any]
    trailer: dict[str, Any] | None
    chunks: list[tuple[int, int, int]]  # 64-byte events of older traces: (offset, count, thread)
    blocks: list[_Block]
    clock: list[tuple[int, int]]  # (tick, ns): head, every block, trailer; sorted
    problems: list[str]


def _layout_of(path: layout.RankFile) -> _Layout:
    """Find the head, the blocks and the trailer of a trace file (RunDirectoryError when it is
    not one)."""
    if isinstance(path, layout.Member):
        data = memoryview(path.read_bytes())
        size = len(data)
        if size < 16:
            raise RunDirectoryError(f"{path.name} is empty or truncated ({size} bytes)")
    else:
        fd = layout.open_regular(path)
        try:
            size = os.fstat(fd).st_size
            if size < 16:
                raise RunDirectoryError(f"{path.name} is empty or truncated ({size} bytes)")
            mm = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
        finally:
            os.close(fd)
        data = memoryview(mm)
    if bytes(data[:8]) != L.MAGIC_TRACE_HEAD:
        raise RunDirectoryError(f"{path.name} is not an mpilens trace file")
    try:
        head, pos = _json_block(data, 8)
    except (ValueError, json.JSONDecodeError) as err:
        raise RunDirectoryError(f"{path.name}: damaged head ({err})") from err
    trailer = None
    problems: list[str] = []
    chunks: list[tuple[int, int, int]] = []  # 64-byte events of older traces: (offset, count, thread)
    blocks: list[_Block] = []
    clock = [(head["tick0"], head["ns0"])]
    cut = f"{path.name}: last block cut short at byte {{}} (skipped)"
    while pos + 8 <= size:
        magic = bytes(data[pos:pos + 8])
        if magic in (L.MAGIC_TRACE_EVENTS, L.MAGIC_TRACE_EVENTS_V3, L.MAGIC_TRACE_EVENTS_V2):
            if pos + BLOCK2.itemsize > size:
                problems.append(cut.format(pos))
                break
            b = np.frombuffer(bytes(data[pos:pos + BLOCK2.itemsize]), dtype=BLOCK2)[0]
            count, words = int(b["count"]), int(b["words"])
            start = pos + BLOCK2.itemsize
            end = start + count * FIXED.itemsize + 4 * words
            if end > size:
                problems.append(cut.format(pos))
                break
            version = {L.MAGIC_TRACE_EVENTS: 4, L.MAGIC_TRACE_EVENTS_V3: 3}.get(magic, 2)
            blocks.append(_Block(int(b["thread"]), version, int(b["filling"]), int(b["first"]), count, start,
                                 start + count * FIXED.itemsize, words))
            clock.append((int(b["tick"]), int(b["ns"])))
            pos = end
        elif magic == L.MAGIC_TRACE_EVENTS_V1:
            if pos + BLOCK.itemsize > size:
                problems.append(cut.format(pos))
                break
            b = np.frombuffer(bytes(data[pos:pos + BLOCK.itemsize]), dtype=BLOCK)[0]
            start = pos + BLOCK.itemsize
            if start + int(b["count"]) * EVENT.itemsize > size:
                problems.append(cut.format(pos))
                break
            chunks.append((start, int(b["count"]), int(b["thread"])))
            clock.append((int(b["tick"]), int(b["ns"])))
            pos = start + int(b["count"]) * EVENT.itemsize
        elif magic == L.MAGIC_TRACE_TRAILER:
            try:
                trailer, pos = _json_block(data, pos + 8)
            except (ValueError, json.JSONDecodeError):
                problems.append(f"{path.name}: damaged trailer (skipped)")
                break
        else:
            problems.append(f"{path.name}: unknown data at byte {pos} (the rest is skipped)")
            break
    if trailer is not None:
        clock.append((trailer["tick1"], trailer["ns1"]))
    clock.sort()
    return _Layout(data, size, head, trailer, chunks, blocks, clock, problems)


def clock_points(path: layout.RankFile) -> list[tuple[int, int]]:
    """A rank's clock points (what read_rank gives as clock_points), from its blocks' heads alone."""
    return _layout_of(path).clock


@dataclass
class Composition:
    """What a rank's trace file is made of, counted without decoding its events: its events by
    kind (TRACE_KIND_*, as recorded: a call_done is one event), the bytes they take (their
    blocks, heads included) and the file's other bytes (its head, trailer and anything damaged)."""

    rank: int
    kinds: np.ndarray  # events per kind, indexed by TRACE_KIND_*
    late_with_completion: int  # late_call events that hold their operation's completion too
    event_bytes: int
    file_bytes: int

    @property
    def calls(self) -> int:
        """The MPI calls recorded (call, call_done and late_call events)."""
        return int(self.kinds[CALL] + self.kinds[CALL_DONE] + self.kinds[LATE])

    @property
    def completions(self) -> int:
        """The completions of operations recorded (done, call_done, and late_call events with theirs)."""
        return int(self.kinds[DONE] + self.kinds[CALL_DONE] + self.late_with_completion)

    @property
    def region_events(self) -> int:
        """Region begins and ends."""
        return int(self.kinds[REGION_BEGIN] + self.kinds[REGION_END])

    @property
    def other_bytes(self) -> int:
        """The file's bytes that are not events: the head (every function's name) and the trailer."""
        return self.file_bytes - self.event_bytes


def composition(path: layout.RankFile) -> Composition:
    """The Composition of one rank's trace file (RunDirectoryError when it is not one)."""
    lay = _layout_of(path)
    kinds = np.zeros(8, dtype=np.int64)
    late_with_completion = event_bytes = 0
    for start, count, _ in lay.chunks:
        kinds += np.bincount(np.frombuffer(lay.data, dtype=EVENT, count=count, offset=start)["kind"] & 7,
                             minlength=8)[:8]
        event_bytes += BLOCK.itemsize + count * EVENT.itemsize
    for b in lay.blocks:
        fix = np.frombuffer(lay.data, dtype=FIXED, count=b.count, offset=b.fixed_at)
        kinds += np.bincount(fix["flags"] & 7, minlength=8)
        if b.version >= 4:  # as _decode_block reads them
            late_with_completion += int((((fix["flags"] & 7) == LATE) & ((fix["fn"] & ALONE) == 0)).sum())
        event_bytes += BLOCK2.itemsize + b.count * FIXED.itemsize + 4 * b.words
    return Composition(int(lay.head["rank"]), kinds, late_with_completion, event_bytes, lay.size)


def read_rank(path: layout.RankFile) -> RankTrace:
    """Read one rank's trace file (its own, or its chunks in a container); raise
    RunDirectoryError when it is not one."""
    lay = _layout_of(path)
    data, size, head, trailer, chunks, blocks, clock, problems = (lay.data, lay.size, lay.head, lay.trailer,
                                                                  lay.chunks, lay.blocks, lay.clock, lay.problems)
    del lay
    blocks = _whole_fillings(blocks, path.name, problems)
    n_old = sum(c for _, c, _ in chunks)
    events = np.empty(n_old + sum(b.count for b in blocks), dtype=EVENT)
    thread = np.empty(len(events), dtype=np.uint32)
    site = np.zeros(len(events), dtype=np.uint32)
    to_done = np.zeros(len(events), dtype=np.uint64)  # late_call events: from the call to the completion
    i = 0
    for start, count, th in chunks:
        events[i:i + count] = np.frombuffer(data, dtype=EVENT, count=count, offset=start)
        thread[i:i + count] = th
        i += count
    try:
        nfunc, at = len(head.get("functions", [])), n_old
        for part in _decoding_chunks(blocks):  # fillings are independent: their temporaries stay small
            n = sum(b.count for b in part)
            _decode_compact(data, part, events[at:at + n], thread[at:at + n], site[at:at + n], nfunc,
                            to_done[at:at + n])
            at += n
        events, thread, site = _place_late_calls(events, thread, site, to_done, (trailer or {}).get("late_calls", []),
                                                 int(head.get("world_uid", 0)))
    except ValueError as err:
        raise RunDirectoryError(f"{path.name}: damaged events ({err})") from err
    del data  # the map closes when the last view of it is gone
    events, thread, site = _split_call_done(events, thread, site)
    return RankTrace(int(head["rank"]), events, thread, head, trailer, clock, problems, file_bytes=size, site=site)


def _whole_fillings(blocks: list[_Block], name: str, problems: list[str]) -> list[_Block]:
    """The blocks in event order (thread, filling, position), without those that cannot be
    decoded: a filling's events are deltas from its first one, so a missing block (cut short)
    makes the rest of that filling unreadable."""
    kept: list[_Block] = []
    expect: dict[tuple[int, int], int] = {}
    lost = 0
    for b in sorted(blocks, key=lambda b: (b.thread, b.filling, b.first)):
        key = (b.thread, b.filling)
        if b.first != expect.get(key, 0):
            lost += b.count
            continue
        expect[key] = b.first + b.count
        kept.append(b)
    if lost:
        problems.append(f"{name}: {lost} events after a missing block could not be decoded (skipped)")
    return kept


DECODE_CHUNK = 1 << 18  # events decoded at a time (at least one filling; about 60 MB of temporaries)


def _decoding_chunks(blocks: list[_Block]) -> Iterator[list[_Block]]:
    """The blocks (in event order, _whole_fillings) in runs of whole fillings of about DECODE_CHUNK
    events: what an event leaves out comes from the events before it in its filling only, so each
    run decodes on its own."""
    part: list[_Block] = []
    n = 0
    for b in blocks:
        if b.first == 0 and n >= DECODE_CHUNK:
            yield part
            part, n = [], 0
        part.append(b)
        n += b.count
    if part:
        yield part


def _decode_compact(data: memoryview, blocks: list[_Block], out: np.ndarray, thread: np.ndarray,
                    site: np.ndarray, nfunc: int, start: np.ndarray) -> None:
    """Decode compact events into EVENT records (and their call sites into site), block by block
    for the fields, then every filling at once for what follows from the events before (time
    stamps, communicator, operation numbers, and the peers, tags, bytes and sites a function's
    calls and completions repeat). nfunc: the functions the head names (calls and completions of
    the others repeat nothing).
    A late_call event stays one record, its fields where the file has them: t0 its time stamp, t1
    minus t0 the call's duration, dst and stag the call's source and tag, src, rtag and recv the
    completion's, site the call's, and in start the ticks from the call's start to its completion
    (0 alone); _place_late_calls makes the two events of it."""
    n = len(out)
    flags = np.empty(n, dtype=np.uint16)
    dt = np.empty(n, dtype=np.int64)
    starts = np.zeros(n, dtype=bool)  # first event of a filling
    v3 = np.zeros(n, dtype=bool)
    i = 0
    for b in blocks:
        fix = np.frombuffer(data, dtype=FIXED, count=b.count, offset=b.fixed_at)
        words = np.frombuffer(data, dtype="<u4", count=b.words, offset=b.words_at)
        ev = out[i:i + b.count]
        site[i:i + b.count], start[i:i + b.count] = _decode_block(fix, words, b.thread, ev, b.version)
        flags[i:i + b.count] = fix["flags"]
        dt[i:i + b.count] = fix["dt"]
        thread[i:i + b.count] = b.thread
        starts[i] = b.first == 0
        v3[i:i + b.count] = b.version >= 3
        i += b.count
    if n == 0:
        return
    is_long = (flags & LONG) != 0
    if (starts & ~is_long).any():
        raise ValueError("a buffer's first event has no full time stamp")
    # t0: the last full time stamp plus the deltas since (out["t0"] holds the full ones for now)
    at = np.arange(n)
    last = np.maximum.accumulate(np.where(is_long, at, 0))
    dt[is_long] = 0
    np.cumsum(dt, out=dt)
    t0 = out["t0"][last].astype(np.int64) + (dt - dt[last])
    out["t1"] += t0.astype(np.uint64)  # out["t1"] held the durations
    out["t0"] = t0.astype(np.uint64)
    # communicator: written when it changes within a filling (0 at its start)
    has_comm = ((flags & COMM) != 0) | starts
    out["comm"] = out["comm"][np.maximum.accumulate(np.where(has_comm, at, 0))]
    filling = np.cumsum(starts) - 1
    fl = flags.astype(np.int64)
    kind = out["kind"]
    late = kind == LATE
    alone = late & ((out["fn"] & ALONE) != 0)
    fused = late & ~alone
    fn = (out["fn"] & ~np.uint16(ALONE)).astype(np.int64)
    # operation numbers of width 3: one more than the previous one of the same class (a late_call
    # is a completion's; one alone has its number written and is in neither class)
    code = (fl >> REQ) & 3
    if (alone & (code == 3)).any():
        raise ValueError("a late call without its completion repeats an operation number")
    done = (kind == DONE) | fused
    for cls in (done, ~done & ~alone):
        _next_numbers(out["req"], code, filling, cls & (code > 0))
    # peers, tags, bytes and sites a call or a completion leaves out: those of the previous one of
    # its function in the filling (the defaults before the first). A late_call is two of them:
    # its call (part 1: source, tag and site) and its completion (part 2: source, tag and bytes).
    member = v3 & ((kind == CALL) | (kind == CALL_DONE) | (kind == DONE)) & (fn < nfunc)
    widths = {name: (fl >> shift) & 3 for name, shift in (("sent", SENT), ("recv", RECV))}
    if ((widths["sent"] != 0) & late).any() or ((widths["recv"] == 3) & alone).any():
        raise ValueError("a late call has a byte count it cannot have")
    late_m = late & (fn < nfunc)
    if any(((c == 3) & ~member & ~late_m).any() for c in widths.values()):
        raise ValueError("a byte count repeats in an event that is no call or completion")
    idx = [np.flatnonzero(member), np.flatnonzero(late_m), np.flatnonzero(fused & (fn < nfunc))]
    if sum(len(x) for x in idx) == 0:
        return
    part = np.concatenate([np.full(len(x), k) for k, x in enumerate(idx)])
    rec = np.concatenate(idx)
    by_rec = np.argsort(rec, kind="stable")  # the parts in the order of their events
    rec, part = rec[by_rec], part[by_rec]
    is_call, is_done = part == 1, part == 2
    normal = part == 0
    f = fl[rec]
    minus1, zero, true = np.int64(-1), np.int64(0), np.ones(len(rec), dtype=bool)

    def pick(normal_v, call_v, done_v):  # a field of each part
        return np.where(normal, normal_v, np.where(is_call, call_v, done_v))

    values = {"dst": pick(out["dst"][rec], minus1, minus1),
              "src": pick(out["src"][rec], out["dst"][rec], out["src"][rec]),
              "stag": pick(out["stag"][rec], zero, zero),
              "rtag": pick(out["rtag"][rec], out["stag"][rec], out["rtag"][rec]),
              "site": pick(site[rec], site[rec], zero),
              "sent": pick(out["sent"][rec], zero, zero),
              "recv": pick(out["recv"][rec], zero, out["recv"][rec])}
    known = {"dst": pick((f & DST) != 0, true, true),
             "src": pick((f & SRC) != 0, (f & DST) != 0, (f & SRC) != 0),
             "stag": pick((f & STAG) != 0, true, true),
             "rtag": pick((f & RTAG) != 0, (f & STAG) != 0, (f & RTAG) != 0),
             "site": pick((f & SITE) != 0, (f & SITE) != 0, true)}
    # the parts' own: no destination, no send tag, no site for the completion; given, but not what
    # the events after them repeat
    fixed = {"dst": ~normal, "stag": ~normal, "site": is_done}
    width = {"sent": np.where(normal, widths["sent"][rec], 0),
             "recv": np.where(is_call, 0, widths["recv"][rec])}
    part_done = np.where(normal, kind[rec] == DONE, is_done)
    key = (filling[rec] * 2 + part_done) * max(nfunc, 1) + fn[rec]
    order = np.argsort(key, kind="stable")  # each function's calls (completions) in their order
    key = key[order]
    first = np.ones(len(order), dtype=bool)
    first[1:] = key[1:] != key[:-1]
    for name, c in width.items():  # width 3: the function's last nonzero count (width 1 or 2)
        c = c[order]
        rep = c == 3
        if not rep.any():
            continue
        written = (c == 1) | (c == 2)
        src = _last_given(written, first)
        if (rep & ~written[src]).any():
            raise ValueError("a byte count repeats one before it, and there is none in its buffer filling")
        values[name][order[rep]] = values[name][order[src[rep]]]
    for name, kn in known.items():
        kn = kn[order]
        if kn.all():
            continue
        src = _last_given(kn & ~fixed[name][order] if name in fixed else kn, first)
        values[name][order[~kn]] = values[name][order[src[~kn]]]
    # back into the records
    r = rec[normal]
    for name in ("dst", "src", "stag", "rtag", "sent", "recv"):
        out[name][r] = values[name][normal]
    site[r] = values["site"][normal]
    r = rec[is_call]
    out["dst"][r] = values["src"][is_call]
    out["stag"][r] = values["rtag"][is_call]
    site[r] = values["site"][is_call]
    r = rec[is_done]
    for name in ("src", "rtag", "recv"):
        out[name][r] = values[name][is_done]


def _last_given(written: np.ndarray, first: np.ndarray) -> np.ndarray:
    """For each element of a sequence cut into groups (first: where each starts), the index of the
    last element at or before it that is written or starts its group: where a value left out
    comes from."""
    return np.maximum.accumulate(np.where(written | first, np.arange(len(written)), 0))


def _next_numbers(req: np.ndarray, code: np.ndarray, filling: np.ndarray, members: np.ndarray) -> None:
    """Fill in, in place, the operation numbers of the members whose code is 3 (no word): one more
    than the member's before them in the same filling. One of code 3 with no written member
    (code 1 or 2) before it in its filling is an error."""
    sel = np.flatnonzero(members)
    rep = code[sel] == 3
    if not rep.any():
        return
    k = np.arange(len(sel))
    first = np.ones(len(sel), dtype=bool)
    first[1:] = filling[sel][1:] != filling[sel][:-1]
    written = ~rep
    src = _last_given(written, first)
    if (rep & ~written[src]).any():
        raise ValueError("an operation number follows the one before it, and there is none in its buffer filling")
    v = req[sel]
    req[sel] = v[src] + (k - src).astype(np.uint64)


def _decode_block(fix: np.ndarray, words: np.ndarray, thread: int, ev: np.ndarray,
                  version: int) -> tuple[np.ndarray, np.ndarray]:
    """The fields of one block's events (the block's words read backwards are the events' fields
    in order). Leaves the full time stamp of LONG events in t0, the duration in t1, the
    communicator (or 0) in comm, and 0 in the fields of width 3 (the events before give them).
    Returns the call sites (0: none) and the late_call events' times from call to completion."""
    fl = fix["flags"].astype(np.int64)
    width = {bit: ((fl & bit) != 0).astype(np.int64) for bit in (COMM, DST, SRC, STAG, RTAG)}
    long_w = 4 * ((fl & LONG) != 0)
    sent_c, recv_c, req_c = (fl >> SENT) & 3, (fl >> RECV) & 3, (fl >> REQ) & 3
    if version < 3 and ((sent_c == 3) | (recv_c == 3) | (req_c == 3)).any():
        raise ValueError("a field of width 3 in a block of an earlier version")
    if version < 4 and ((fl & 7) == LATE).any():
        raise ValueError("an event of no kind in a block of an earlier version")
    sent_w, recv_w, req_w = (np.where(c == 3, 0, c) for c in (sent_c, recv_c, req_c))
    site_w = ((fl & SITE) != 0).astype(np.int64)
    # a late_call with its completion: the time from the call's start to it, in 1 word (2 if LONG)
    with_done = ((fl & 7) == LATE) & ((fix["fn"] & ALONE) == 0) if version >= 4 else np.zeros(len(fl), dtype=bool)
    start_w = np.where(with_done, 1 + (long_w > 0), 0)
    size = long_w + sum(width.values()) + sent_w + recv_w + req_w + site_w + start_w
    m = len(words)
    if int(size.sum()) != m:
        raise ValueError("the sizes of a block's fields do not add up")
    w = np.append(words[::-1], np.uint32(0)).astype(np.uint64)  # w[m] = 0 is read for absent fields
    pos = np.cumsum(size) - size

    def take(nwords: np.ndarray) -> np.ndarray:
        nonlocal pos
        v = w[np.where(nwords >= 1, pos, m)] | (w[np.where(nwords >= 2, pos + 1, m)] << np.uint64(32))
        pos = pos + nwords
        return v

    t0 = take(np.minimum(long_w, 2))
    dur = take(np.minimum(long_w, 2))
    is_long = long_w > 0
    ev["t0"] = t0
    ev["t1"] = np.where(is_long, dur, fix["dur"])
    ev["kind"] = fl & 7
    ev["fn"] = fix["fn"]
    ev["comm"] = take(width[COMM]).astype(np.uint32)
    for name, bit, absent in (("dst", DST, -1), ("src", SRC, -1), ("stag", STAG, 0), ("rtag", RTAG, 0)):
        v = take(width[bit]).astype(np.uint32).view(np.int32)
        ev[name] = np.where(width[bit] > 0, v, absent)
    ev["sent"] = take(sent_w).view(np.int64)
    ev["recv"] = take(recv_w).view(np.int64)
    req = take(req_w)
    own = np.uint64(thread + 1) << np.uint64(40)  # one word: a request this thread started
    ev["req"] = np.where(req_w == 1, own | req, req)
    site = take(site_w).astype(np.uint32)  # the call sites (0: none)
    return site, take(start_w)


def _place_late_calls(events: np.ndarray, thread: np.ndarray, site: np.ndarray, start: np.ndarray,
                      pending: list[list[int]], world_uid: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each late_call event as the two it stands for: its completion, in its place (none when
    alone), and its call, put back where its thread made it. That place follows from the call's
    start: the events a thread wrote before the call started before it, those it wrote after
    started after its end (late calls aside), so the call goes after exactly the thread's events
    that started before it. pending: the trailer's late_calls, calls of receives that had not
    completed (thread, t0, duration, function, source, tag, operation number, site), put back the
    same way. Each thread's events are together, the threads in order (read_rank)."""
    late = events["kind"] == LATE
    if not late.any() and not pending:
        return events, thread, site
    li = np.flatnonzero(late)
    alone = (events["fn"][li] & ALONE) != 0
    calls = events[li].copy()
    calls["kind"] = CALL
    calls["fn"] &= ~np.uint16(ALONE)
    calls["t0"] = events["t0"][li] - start[li]
    calls["t1"] = calls["t0"] + (events["t1"][li] - events["t0"][li])
    calls["src"], calls["rtag"] = events["dst"][li], events["stag"][li]
    calls["dst"], calls["stag"], calls["sent"], calls["recv"] = -1, 0, 0, 0
    call_thread, call_site = thread[li], site[li]
    done = events[li[~alone]].copy()
    done["kind"] = DONE
    done["t1"] = done["t0"]
    done["dst"], done["stag"], done["sent"] = -1, 0, 0
    if pending:
        p = np.array(pending, dtype=np.int64).reshape(-1, 8)
        more = np.zeros(len(p), dtype=EVENT)
        more["kind"], more["fn"], more["comm"] = CALL, p[:, 3], world_uid
        more["t0"] = p[:, 1]
        more["t1"] = p[:, 1] + p[:, 2]
        more["dst"], more["src"], more["rtag"], more["req"] = -1, p[:, 4], p[:, 5], p[:, 6]
        calls = np.concatenate([calls, more])
        call_thread = np.concatenate([call_thread, p[:, 0]]).astype(np.uint32)
        call_site = np.concatenate([call_site, p[:, 7]]).astype(np.uint32)
    # the events in place, in their order: those not late, and the completions of the late ones
    # (in place in `events` when no late call is alone: no copy of the rank's events)
    if alone.any():
        keep = np.sort(np.concatenate([np.flatnonzero(~late), li[~alone]]))
        placed, placed_thread, placed_site, is_done = events[keep], thread[keep], site[keep], late[keep]
    else:
        placed, placed_thread, placed_site, is_done = events, thread, site, late
    placed[is_done] = done
    placed_site[is_done] = 0
    # each call: before the first event of its thread, in their order, that did not start before it
    where = np.empty(len(calls), dtype=np.int64)
    runs = np.flatnonzero(np.r_[True, placed_thread[1:] != placed_thread[:-1]]) if len(placed) else np.zeros(0, int)
    ends = np.r_[runs[1:], len(placed)]
    for th in np.unique(call_thread):
        mine = call_thread == th
        k = np.flatnonzero(placed_thread[runs] == th) if len(runs) else []
        if len(k):
            lo, hi = runs[k[0]], ends[k[0]]
            where[mine] = lo + np.searchsorted(np.sort(placed["t0"][lo:hi]), calls["t0"][mine], side="left")
        else:  # a thread with no other event: after the threads before it
            where[mine] = np.searchsorted(placed_thread, th)
    # the calls in their order (those before one event by their start), each written into its place
    # among the others: the k-th call before placed event `where` lands at where + k, and placed
    # event i at i + the calls before it (one output array, written once)
    order = np.lexsort((calls["t0"], where))
    where = where[order]
    call_at = where + np.arange(len(where), dtype=np.int64)
    placed_at = np.arange(len(placed), dtype=np.int64)
    placed_at += np.searchsorted(where, placed_at, side="right")
    out = np.empty(len(placed) + len(calls), dtype=EVENT)
    out_thread = np.empty(len(out), dtype=np.uint32)
    out_site = np.empty(len(out), dtype=np.uint32)
    out[placed_at], out_thread[placed_at], out_site[placed_at] = placed, placed_thread, placed_site
    out[call_at], out_thread[call_at], out_site[call_at] = calls[order], call_thread[order], call_site[order]
    return out, out_thread, out_site


def _split_call_done(events: np.ndarray, thread: np.ndarray,
                     site: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each call_done event as the two it stands for, in its place: the call (bytes 0), then
    the completion of its operation at the call's end (the event's function, communicator,
    destination, bytes and operation number; no source, tags or call site)."""
    both = events["kind"] == CALL_DONE
    if not both.any():
        return events, thread, site
    at = np.repeat(np.arange(len(events)), np.where(both, 2, 1))
    events, thread, site = events[at], thread[at], site[at]
    second = np.zeros(len(at), dtype=bool)
    second[1:] = at[1:] == at[:-1]
    first = np.append(second[1:], False)
    events["kind"][first] = CALL
    events["sent"][first] = 0
    events["recv"][first] = 0
    done = events[second]
    done["kind"] = DONE
    done["t0"] = done["t1"]
    done["src"] = -1
    done["stag"] = 0
    done["rtag"] = 0
    events[second] = done
    site[second] = 0
    return events, thread, site


def trace_files(rundir: str | Path) -> list[layout.RankFile]:
    """The trace files of a run directory, by rank; RunDirectoryError when there are none."""
    files = layout.trace_files(rundir)
    if not files:
        raise RunDirectoryError(f"{rundir}: no trace (run with `mpilens run --mode trace`)")
    return files


def _offsets(path: layout.RankFile) -> list[list[int]]:
    """A rank's measured offsets to rank 0's clock ([when, offset, round trip] in ns), from its
    trailer (or its head, for a rank killed before the trailer), without reading its events."""
    with path.open("rb") as f:
        size = f.seek(0, 2)
        f.seek(max(0, size - (4 << 20)))
        tail = f.read()
        f.seek(0)
        head = f.read(1 << 20)
    for data, at in ((tail, tail.rfind(L.MAGIC_TRACE_TRAILER)), (head, 0 if head.startswith(L.MAGIC_TRACE_HEAD) else -1)):
        if at >= 0:
            try:
                return list(_json_block(memoryview(data), at + 8)[0].get("offset_ns", []))
            except ValueError:  # json.JSONDecodeError too
                continue
    return []


def host_alignment(files: list[layout.RankFile], host_of: list[int]) -> dict[int, tuple[list[list[int]], int | None]]:
    """Per host other than rank 0's: its offsets to rank 0's clock at MPI_Init and MPI_Finalize,
    each the one of the shortest round trip among the host's ranks, and the error bound of the
    pair (half the longer of the two round trips; None when a trace recorded none)."""
    best: dict[int, list[list[int] | None]] = {}
    for f in files:
        rank = layout.rank_of("trace", f)
        if rank is None or rank >= len(host_of) or host_of[rank] == host_of[0]:
            continue
        slots = best.setdefault(host_of[rank], [None, None])
        for i, o in enumerate(_offsets(f)[:2]):
            rtt = o[2] if len(o) > 2 else None
            cur = slots[i]
            if cur is None or (rtt is not None and (len(cur) < 3 or rtt < cur[2])):
                slots[i] = list(o)
    out = {}
    for host, slots in best.items():
        chosen = [s for s in slots if s is not None]
        rtts = [s[2] for s in chosen if len(s) > 2]
        out[host] = ([s[:2] for s in chosen], max(rtts) // 2 if rtts and len(rtts) == len(chosen) else None)
    return out


@dataclass
class Clocks:
    """How a rank's ticks become times on rank 0's clock: what read_all sets on each RankTrace
    (its host's, from the ranks of that host and rank 0's host; host_alignment)."""

    same_host_as_rank0: bool = False
    host: str | None = None
    host_clock_points: list[tuple[int, int]] | None = None
    host_offsets: list[list[int]] | None = None
    clock_error_ns: int | None = None

    def apply(self, rt: RankTrace) -> RankTrace:
        """Set these on rt (returned)."""
        rt.same_host_as_rank0, rt.host = self.same_host_as_rank0, self.host
        if self.host_clock_points is not None:
            rt.host_clock_points = self.host_clock_points
        if self.host_offsets is not None:
            rt.host_offsets, rt.clock_error_ns = self.host_offsets, self.clock_error_ns
        return rt


def plan(rundir: str | Path, problems: list[str] | None = None,
         notes: list[str] | None = None) -> list[tuple[layout.RankFile, Clocks]]:
    """The trace files of a run, each with how its ticks are converted (read_all reads them so;
    the out-of-core analysis, mpilens.trace.scan, hands each to a worker). A host's clock points
    are those of its first rank whose file can be read, found from its blocks' heads alone."""
    wrong: list[str] = []
    meta = meta_file.load(rundir, wrong)
    host_of, host_names = (meta.get("rank_host"), meta.get("hosts", [])) if meta else (None, [])
    if host_of is None and notes is not None:  # every rank then counts as on rank 0's host
        notes += [f"{n}: the ranks' hosts are unknown, their clocks taken as one host's" for n in wrong] or \
            ["meta.json names no hosts: the ranks' clocks taken as one host's"]
    elif notes is not None:
        notes += wrong
    files = trace_files(rundir)
    aligned = host_alignment(files, host_of) if host_of else {}
    host_clock: dict[int, list[tuple[int, int]]] = {}  # each host's first rank's clock points
    out = []
    for f in files:
        rank = layout.rank_of("trace", f)
        host = host_of[rank] if host_of and rank is not None and rank < len(host_of) else None
        c = Clocks(same_host_as_rank0=host is not None and host == host_of[0])
        if host is not None:
            c.host = host_names[host] if host < len(host_names) else None
            if host not in host_clock:
                try:
                    host_clock[host] = clock_points(f)
                except (RunDirectoryError, OSError):
                    pass  # read_rank names it; the host's next rank gives the points
                # (the host's first rank converts with its own points, as read_rank finds them)
            elif host_clock[host]:
                c.host_clock_points = host_clock[host]
            if host in aligned:
                c.host_offsets, c.clock_error_ns = aligned[host]
        out.append((f, c))
    return out


def read_all(rundir: str | Path, problems: list[str] | None = None,
             notes: list[str] | None = None) -> Iterator[RankTrace]:
    """Read the ranks of a run one after the other; a rank whose file cannot be read is left out
    and named in problems (RunDirectoryError when none can be read, or problems is None); what
    else is wrong (a damaged meta.json) goes to notes. The ranks of one host share its clocks
    (CLOCK_MONOTONIC and the time-stamp counter): their ticks are converted with the clock points
    of the host's first rank. Rank 0's host is the reference; every other host is aligned to it by
    the offsets measured at MPI_Init and MPI_Finalize, the best of its ranks' (host_alignment)."""
    files = plan(rundir, problems, notes)
    read = 0
    for f, clocks in files:
        try:
            rt = read_rank(f)
        except (RunDirectoryError, OSError) as err:
            if problems is None or (read == 0 and f is files[-1][0]):
                raise RunDirectoryError(str(err)) from None
            problems.append(f"{err} (rank {layout.rank_of('trace', f)}'s trace is left out)")
            continue
        read += 1
        yield clocks.apply(rt)
