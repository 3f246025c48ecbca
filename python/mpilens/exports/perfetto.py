"""Perfetto's own trace format of a trace: `mpilens export perfetto`.

A Perfetto `Trace` protobuf (ui.perfetto.dev, "Open trace file"; Perfetto's trace processor),
written here field by field (no protobuf library), column by column with numpy, one thread's
events at a time and its packets a chunk at a time: the writer holds no per-event Python objects,
and its memory beyond the timeline's is a few numbers per call of one thread and one chunk of
packets (under 300 MB for the 4.6 million calls of a LAMMPS trace, the findings included).

Tracks. Each rank is a process (pid rank + 1, since Perfetto keeps pid 0 for the kernel's idle
task; named "rank N (host)", with its host as a process label) and each of its threads a thread
of that process (thread 0 is the main thread, tid = pid; "rank N" or "rank N thread T"). We chose a
process per rank rather than a process per host with a thread per rank because a rank is a
process: its threads (MPI_THREAD_MULTIPLE, OpenMP) are its own tracks under it, and what belongs to
the whole rank, its memory and its counters, is a counter track of the process, in the same group;
a process per host would flatten the threads of all its ranks into one list. The host is in each
rank's name, so the ranks of a host are found together by searching for it (Perfetto's UI orders
processes by their activity and lets no trace choose that order; within a rank, threads come first,
then its counter tracks, in an explicit order).

Events. Every MPI call is a slice (TYPE_SLICE_BEGIN/TYPE_SLICE_END) on its thread's track, category
"mpi", with debug annotations as the Chrome export's args: bytes_sent, bytes_recv, dst and src
(world ranks), and send_tag/recv_tag beside a peer (left out when 0, like zero byte counts); with
--call-sites also its call site, as an interned source location (3 bytes a call: left out by
default, which keeps a trace of small calls within a fifth of the Chrome JSON's size); every
region visit a slice of category "region" around the calls it holds; the file and offset of an
MPI-IO call an instant of category "io" just before it. Names, categories, annotation names and
source locations are interned per sequence (one sequence per thread track,
SEQ_INCREMENTAL_STATE_CLEARED on its first packet, SEQ_NEEDS_INCREMENTAL_STATE on the others) and
times are deltas on the sequence's incremental clock (Perfetto's SDK does the same), in ns.

Messages. Every matched message (the pairs the Chrome export draws as arrows) is a flow: its id
(the message's number + 1) in flow_ids of the slice of the call that sent it and in
terminating_flow_ids of the slice of the call that completed its receive (the receive itself, or
the MPI_Wait... that completed a nonblocking one).

Counters. The trace's user counters (mpilens_counter_*), and when the run has them the snapshots of
counters mode (its main counters: the change in each snapshot interval, drawn from the interval's
start; levels at the snapshot) and memory mode's samples (the process's PSS, MPI's part, the
application's part), each a counter track of its rank, placed on the timeline by the rank's clock
point at the end of MPI_Init.

Findings. The trace analysis' findings (late sender, late receiver, wait at collective, irregular
duration, large gap; mpilens.trace.findings) are instant events of category "finding" on the main
thread of their rank, with the finding's text.

Times are the timeline's (rank 0's clock, other hosts aligned to it) in ns, shifted so that nothing
is before 0 (memory's first sample is inside MPI_Init, before the first traced event). The same run
gives the same bytes.

A whole run (`mpilens export perfetto RUN`, no selection) is streamed rank by rank (perfetto_run):
its ranks are decoded and its messages paired out of core (mpilens.trace.scan), then each rank's
events are read back and written in turn: the same bytes, with one rank's events in memory.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import counters_spc, layout, memory, safefile, units
from .. import meta as meta_file
from ..errors import RunDirectoryError
from ..trace import filters, reader, scan, timeline
from ..trace import findings as trace_findings
from ..trace.timeline import Timeline
from . import Exporter, Option, Progress, exporter
from .common import region_visits

CHUNK = 1 << 16  # packets encoded at a time (the bytes do not depend on it; 2^18 took 45 MB more)
CLOCK_BOOTTIME = 6  # the trace's clock (Perfetto's default)
CLOCK_INCREMENTAL = 64  # a clock of each sequence: every packet's timestamp is a delta from the previous one
SEQ_CLEARED, SEQ_NEEDS = 1, 2  # TracePacket.SequenceFlags
BEGIN, END, INSTANT, COUNTER = 1, 2, 3, 4  # TrackEvent.Type
UNIT_NS, UNIT_COUNT, UNIT_BYTES = 1, 2, 3  # CounterDescriptor.Unit
EXPLICIT = 3  # TrackDescriptor.ChildTracksOrdering

# field numbers (protos/perfetto/trace/perfetto_trace.proto)
F_PACKET = 1  # Trace.packet
F_CLOCK_SNAPSHOT, F_TIMESTAMP, F_SEQ_ID, F_TRACK_EVENT, F_INTERNED, F_FLAGS = 6, 8, 10, 11, 12, 13
F_DEFAULTS, F_TRACK_DESCRIPTOR, F_FIRST_ON_SEQUENCE = 59, 60, 87
F_CLOCKS, F_CLOCK_ID, F_CLOCK_TS, F_CLOCK_INCREMENTAL, F_CLOCK_UNIT = 1, 1, 2, 3, 4  # ClockSnapshot(.Clock)
F_DEFAULT_CLOCK, F_EVENT_DEFAULTS, F_DEFAULT_TRACK = 58, 11, 11  # TracePacketDefaults, TrackEventDefaults
# TrackDescriptor, ProcessDescriptor, ThreadDescriptor, CounterDescriptor
F_UUID, F_NAME, F_PROCESS, F_THREAD, F_PARENT, F_COUNTER, F_CHILD_ORDER, F_SIBLING_RANK, F_DESCRIPTION = (
    1, 2, 3, 4, 5, 8, 11, 12, 14)
F_PID, F_PROCESS_NAME, F_PROCESS_LABELS, F_TID, F_THREAD_NAME = 1, 6, 8, 2, 5
F_UNIT, F_UNIT_NAME = 3, 6
# TrackEvent
F_CATEGORIES, F_ANNOTATIONS, F_TYPE, F_NAME_IID, F_TRACK_UUID = 3, 4, 9, 10, 11
F_COUNTER_VALUE, F_SOURCE_LOCATION, F_DOUBLE_VALUE, F_FLOWS, F_TERMINATING_FLOWS = 30, 34, 44, 47, 48
F_ANN_NAME, F_ANN_INT, F_ANN_STRING, F_ANN_STRING_IID = 1, 4, 6, 17  # DebugAnnotation
# InternedData, and its entries (iid 1, name 2; SourceLocation: file 2, function 3, line 4)
F_CATEGORY_NAMES, F_EVENT_NAMES, F_ANN_NAMES, F_SOURCE_LOCATIONS, F_STRING_VALUES = 1, 2, 3, 4, 29

CATEGORIES = ("mpi", "region", "io", "finding")  # iids 1...
CAT_MPI, CAT_REGION, CAT_IO, CAT_FINDING = 1, 2, 3, 4
ANNOTATIONS = ("bytes_sent", "bytes_recv", "dst", "src", "send_tag", "recv_tag", "file", "offset", "message",
               "duration_ns", "bytes")
A = {name: i + 1 for i, name in enumerate(ANNOTATIONS)}  # annotation name -> iid
FINDING_NAMES = {"late_sender": "late sender", "late_receiver": "late receiver",
                 "collective_wait": "wait at collective", "irregular": "irregular duration", "gap": "large gap"}
MEMORY_SERIES = (("pss", "memory: process (PSS)", "the process's proportional set size, the tool's own left out"),
                 ("mpi", "memory: MPI", "MPI's part of the process's memory (docs/memory.md)"),
                 ("app", "memory: application", "the application's part: the process less MPI's part"))


# ------------------------------------------------------------------------------- protobuf, one value
def _uvarint(v: int) -> bytes:
    """A varint (a negative int64 as its two's complement, ten bytes, as protobuf writes it)."""
    v &= (1 << 64) - 1
    out = bytearray()
    while v >= 0x80:
        out.append(v & 0x7F | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _key(field: int, wire: int) -> bytes:
    return _uvarint(field << 3 | wire)


def _vf(field: int, v: int) -> bytes:
    """A varint field."""
    return _key(field, 0) + _uvarint(int(v))


def _lf(field: int, data: bytes | str) -> bytes:
    """A length-delimited field: bytes, a sub-message, or text (UTF-8; a name's bytes that were not
    UTF-8 written as \\xXX, so that every string field is valid UTF-8)."""
    if isinstance(data, str):
        data = data.encode("utf-8", units.ENCODING_ERRORS)
    return _key(field, 2) + _uvarint(len(data)) + data


def _packet(body: bytes) -> bytes:
    return _lf(F_PACKET, body)


# ------------------------------------------------------------------------------- protobuf, by columns
def _varint_len(v: np.ndarray) -> np.ndarray:
    """Bytes of the varint of each value (uint64)."""
    n = np.ones(len(v), dtype=np.int64)
    x = v >> np.uint64(7)
    while True:
        more = x != 0
        if not more.any():
            return n
        n += more
        x >>= np.uint64(7)


def _put_varints(buf: np.ndarray, pos: np.ndarray, v: np.ndarray, nbytes: np.ndarray) -> None:
    """Write the varint of each value v[i] (nbytes[i] long) at buf[pos[i]:]."""
    k = 0
    while len(v):
        more = nbytes > k + 1
        buf[pos + k] = (v & np.uint64(0x7F)).astype(np.uint8) | (more.astype(np.uint8) << np.uint8(7))
        if not more.any():
            return
        pos, v, nbytes = pos[more], v[more] >> np.uint64(7), nbytes[more]
        k += 1


def _put_const(buf: np.ndarray, pos: np.ndarray, data: bytes) -> None:
    """Write the same bytes at each position (byte by byte: faster than one 2-D scatter)."""
    for j, byte in enumerate(data):
        buf[pos + j if j else pos] = byte


class _Rows:
    """A protobuf message in n rows (one per packet, or per occurrence of a repeated sub-message),
    built field by field: each field is in every row or in the rows of an index array (increasing;
    a row repeated holds the field that many times), and all rows are written into one byte array,
    each at its own position."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.fields: list[tuple] = []
        self._lengths: np.ndarray | None = None

    def const(self, data: bytes, rows: np.ndarray | None = None) -> None:
        """Bytes already encoded (key and value), the same in every row they are in."""
        if rows is None or len(rows):
            self.fields.append(("const", data, rows))

    def varint(self, field: int, values, rows: np.ndarray | None = None) -> None:
        """A varint field (int64 values are written as their two's complement)."""
        if rows is None or len(rows):
            v = np.asarray(values).astype(np.int64).view(np.uint64)
            self.fields.append(("varint", _key(field, 0), rows, v, _varint_len(v)))

    def fixed64(self, field: int, values, rows: np.ndarray | None = None) -> None:
        """A fixed64 (uint64) or double field: its 8 bytes, little-endian."""
        if rows is None or len(rows):
            v = np.ascontiguousarray(values)
            raw = v.astype("<f8" if v.dtype.kind == "f" else "<u8").view(np.uint8).reshape(-1, 8)
            self.fields.append(("fixed64", _key(field, 1), rows, raw))

    def message(self, field: int, sub: _Rows, rows: np.ndarray | None = None) -> None:
        """A sub-message field: row i of sub goes into row rows[i] (into row i when rows is None)."""
        if rows is None or len(rows):
            n = sub.lengths()
            self.fields.append(("message", _key(field, 2), rows, sub, n, _varint_len(n.astype(np.uint64))))

    def _field_lengths(self, f: tuple) -> np.ndarray | int:
        kind, key = f[0], f[1]
        if kind == "const":
            return len(key)
        if kind == "varint":
            return len(key) + f[4]
        if kind == "fixed64":
            return len(key) + 8
        return len(key) + f[5] + f[4]

    def lengths(self) -> np.ndarray:
        """Bytes of each row."""
        if self._lengths is None:
            total = np.zeros(self.n, dtype=np.int64)
            for f in self.fields:
                size, rows = self._field_lengths(f), f[2]
                if rows is None:
                    total += size
                else:
                    total += np.bincount(rows, weights=np.broadcast_to(size, len(rows)),
                                         minlength=self.n).astype(np.int64)
            self._lengths = total
        return self._lengths

    def write(self, buf: np.ndarray, pos: np.ndarray) -> None:
        """Write row i at buf[pos[i]:] (pos is not changed)."""
        cur = pos.copy()
        for f in self.fields:
            kind, key, rows = f[0], f[1], f[2]
            size = self._field_lengths(f)
            if rows is None:
                at = cur
            else:
                at = cur[rows]
                if len(rows) > 1 and (rows[1:] == rows[:-1]).any():  # a repeated field: one after the other
                    sizes = np.broadcast_to(size, len(rows)).astype(np.int64)
                    first = np.r_[True, rows[1:] != rows[:-1]]
                    ends = np.cumsum(sizes)
                    group_start = np.maximum.accumulate(np.where(first, np.arange(len(rows)), 0))
                    at = at + (ends - sizes) - (ends - sizes)[group_start]
            if kind == "const":
                _put_const(buf, at, key)
            else:
                _put_const(buf, at, key)
                at = at + len(key)
                if kind == "varint":
                    _put_varints(buf, at, f[3], f[4])
                elif kind == "fixed64":
                    for j in range(8):
                        buf[at + j] = f[3][:, j]
                else:
                    n = f[4]
                    _put_varints(buf, at, n.astype(np.uint64), f[5])
                    f[3].write(buf, at + f[5])
            if rows is None:
                cur += size
            else:
                cur += np.bincount(rows, weights=np.broadcast_to(size, len(rows)), minlength=self.n).astype(np.int64)


def _encode_packets(packet: _Rows) -> bytes:
    """The rows of a TracePacket message as Trace.packet fields, one after the other."""
    outer = _Rows(packet.n)
    outer.message(F_PACKET, packet)
    n = outer.lengths()
    buf = np.empty(int(n.sum()), dtype=np.uint8)
    outer.write(buf, np.cumsum(n) - n)
    return buf.tobytes()


# ------------------------------------------------------------------------------- sequences
class _Sequences:
    """Packet sequences: their ids, the first packet of each (incremental state cleared, defaults,
    its incremental clock, interned data) and the timestamps of the others as deltas."""

    def __init__(self) -> None:
        self.next_id = 2  # 1: the track descriptors

    def start(self, track: int | None, t0: int, interned: bytes = b"") -> tuple[int, bytes]:
        """A new sequence whose clock starts at t0 (ns) and whose events go to track (None: each
        says its track): its id and its first packet."""
        seq = self.next_id
        self.next_id += 1
        clocks = (_lf(F_CLOCKS, _vf(F_CLOCK_ID, CLOCK_BOOTTIME) + _vf(F_CLOCK_TS, t0))
                  + _lf(F_CLOCKS, _vf(F_CLOCK_ID, CLOCK_INCREMENTAL) + _vf(F_CLOCK_TS, t0)
                        + _vf(F_CLOCK_INCREMENTAL, 1) + _vf(F_CLOCK_UNIT, 1)))
        defaults = _vf(F_DEFAULT_CLOCK, CLOCK_INCREMENTAL)
        if track is not None:
            defaults += _lf(F_EVENT_DEFAULTS, _vf(F_DEFAULT_TRACK, track))
        body = (_lf(F_CLOCK_SNAPSHOT, clocks) + _vf(F_TIMESTAMP, 0) + _vf(F_SEQ_ID, seq)
                + (_lf(F_INTERNED, interned) if interned else b"") + _vf(F_FLAGS, SEQ_CLEARED)
                + _lf(F_DEFAULTS, defaults) + _vf(F_FIRST_ON_SEQUENCE, 1))
        return seq, _packet(body)


def _packet_rows(seq: int, deltas: np.ndarray, event: _Rows) -> _Rows:
    """TracePackets of one sequence (after its first): timestamp deltas and track events."""
    p = _Rows(len(deltas))
    p.const(_vf(F_SEQ_ID, seq) + _vf(F_FLAGS, SEQ_NEEDS))
    p.varint(F_TIMESTAMP, deltas)
    p.message(F_TRACK_EVENT, event)
    return p


def _interned(kind: int, entries: list[tuple[int, str]]) -> bytes:
    return b"".join(_lf(kind, _vf(1, iid) + _lf(2, name)) for iid, name in entries)


def _ns(t_s) -> np.ndarray:
    return np.rint(np.asarray(t_s, dtype=np.float64) * 1e9).astype(np.int64)


# ------------------------------------------------------------------------------- tracks
def _hosts(tl: Timeline) -> list[str]:
    """The host of each rank (meta.json), "" when unknown."""
    meta = (meta_file.load(tl.rundir, []) or {}) if tl.rundir is not None else {}
    hosts = meta.get("hosts", [])
    names = [hosts[h] if isinstance(h, int) and 0 <= h < len(hosts) else "" for h in meta.get("rank_host", [])]
    return (names + [""] * tl.nranks)[:tl.nranks]


def _uuid(rank: int, k: int) -> int:
    """Track uuids: k = 0 the rank's process, 1 + t its thread t, 1 << 22 | j its counter track j."""
    return (rank + 1) << 24 | k


@dataclass
class _Counter:
    """A counter track of a rank: its samples on the timeline (s) and their values."""

    rank: int
    name: str
    description: str
    unit: int | None
    t: np.ndarray
    values: np.ndarray  # int64 (counter_value) or float64 (double_counter_value)


def _trace_counters(tl: Timeline) -> list[_Counter]:
    """The user counters of the trace (mpilens_counter_*), per rank and counter."""
    ev = tl.ev
    idx = np.flatnonzero(ev["kind"] == reader.COUNTER)
    out = []
    if not len(idx):
        return out
    key = ev["rank"][idx].astype(np.int64) << 16 | ev["fn"][idx]
    order = np.argsort(key, kind="stable")
    idx, key = idx[order], key[order]
    bounds = np.r_[0, np.flatnonzero(key[1:] != key[:-1]) + 1, len(key)]
    for a, b in zip(bounds[:-1], bounds[1:]):
        i = idx[a:b]
        i = i[np.argsort(ev["t0"][i], kind="stable")]
        rank, cid = int(ev["rank"][i[0]]), int(ev["fn"][i[0]])
        names = tl.counters.get(rank, [])
        name = names[cid][0] if cid < len(names) else f"counter {cid}"
        out.append(_Counter(rank, name, "a counter of the program (mpilens_counter_*), in the trace", None,
                            ev["t0"][i], ev["sent"][i].view(np.float64)))
    return out


def _spc_counters(tl: Timeline, notes: list[str]) -> list[_Counter]:
    """Counters mode's time series: its main counters that are not zero on every rank."""
    try:
        c = counters_spc.load(tl.rundir)
    except (RunDirectoryError, OSError) as err:
        notes.append(f"counters mode's snapshots left out: {err}")
        return []
    lay = c.layout
    period = lay.doc.get("snapshot_ms")
    out = []
    for name in counters_spc.MAIN:
        if not lay.available(name):
            continue
        info = lay.counter(name)
        off, kind = int(info["offset"]), info["type"]
        per_rank = []
        for r in sorted(c.series):
            s = c.series[r]
            if r not in tl.init_end or not len(s.t):
                continue
            v = s.values[:, off]
            start = tl.init_end[r][0]
            t = start + s.t
            whole = s.whole()  # a damaged snapshot's values and time are unknown: left out
            if kind in ("level",):  # the level at the snapshot
                what = "its level at each snapshot"
            else:  # the change (or the watermark) of each interval, from the interval's start
                t = start + np.r_[0.0, s.t[:-1]]
                whole = whole & np.r_[True, whole[:-1]]  # the start is the snapshot before
                what = ("its watermark in each snapshot interval" if "watermark" in kind
                        else "its change in each snapshot interval")
            t, v = t[whole], v[whole]
            if kind == "timer":  # ticks, in ns
                v = np.rint(v.astype(np.float64) / (s.ticks_per_ns or c.ticks_per_ns(r))).astype(np.int64)
            per_rank.append((r, t, v, what))
        if not any(np.any(v != 0) for _, _, v, _ in per_rank):
            continue
        for r, t, v, what in per_rank:
            every = f" (a snapshot every {period} ms)" if period else ""
            unit = UNIT_NS if kind == "timer" else UNIT_BYTES if name.startswith("BYTES_") else UNIT_COUNT
            out.append(_Counter(r, f"counters: {name}", f"counters mode's {name}: {what}{every}", unit, t,
                                v.astype(np.int64)))
    return out


def _memory_counters(tl: Timeline, notes: list[str]) -> list[_Counter]:
    """Memory mode's samples: the process, MPI's part and the application's, per rank."""
    try:
        run = memory.load(tl.rundir)
        starts = {}  # rank -> CLOCK_MONOTONIC (ns) at its MPI_Init entry, the records' time 0
        for f in layout.memory_files(tl.rundir):
            h = np.frombuffer(layout.read_regular(f)[:memory.HEADER.itemsize], memory.HEADER)[0]
            starts[int(h["rank"])] = int(h["init_ns"])
    except (RunDirectoryError, OSError, ValueError, IndexError) as err:
        notes.append(f"memory mode's samples left out: {err}")
        return []
    out = []
    for r in run.ranks:
        if r.rank not in tl.init_end or r.rank not in starts or not len(r.t):
            continue
        at, ns0 = tl.init_end[r.rank]
        t = at + (starts[r.rank] - ns0) * 1e-9 + r.t
        for series, name, description in MEMORY_SERIES:
            out.append(_Counter(r.rank, name, description + f" ({r.method} method)", UNIT_BYTES, t,
                                np.rint(np.nan_to_num(getattr(r, series))).astype(np.int64)))
    return out


def _descriptors(tl: Timeline, threads: dict[int, list[int]], counters: dict[int, list[_Counter]],
                 hosts: list[str]) -> tuple[bytes, dict[tuple[int, int], int]]:
    """The track descriptors (sequence 1): a process per rank, its threads and its counter tracks;
    and the tid of each (rank, thread)."""
    out, tids = [], {}
    extra = tl.nranks + 1  # tids of threads other than a rank's main thread: after every pid
    seq = _vf(F_SEQ_ID, 1)
    for r in range(tl.nranks):
        pid = r + 1
        name = f"rank {r}" + (f" ({hosts[r]})" if hosts[r] else "")
        process = _vf(F_PID, pid) + _lf(F_PROCESS_NAME, name) + (_lf(F_PROCESS_LABELS, f"host {hosts[r]}")
                                                                    if hosts[r] else b"")
        out.append(_packet(_vf(F_SEQ_ID, 1) + _lf(F_TRACK_DESCRIPTOR, _vf(F_UUID, _uuid(r, 0))
                                                    + _lf(F_PROCESS, process) + _vf(F_CHILD_ORDER, EXPLICIT))))
        order = 0
        for t in threads[r]:
            tid = pid if t == 0 else extra
            extra += t != 0
            tids[(r, t)] = tid
            thread = _vf(F_PID, pid) + _vf(F_TID, tid) + _lf(F_THREAD_NAME, f"rank {r}" + (f" thread {t}" if t else ""))
            out.append(_packet(seq + _lf(F_TRACK_DESCRIPTOR, _vf(F_UUID, _uuid(r, 1 + t)) + _vf(F_PARENT, _uuid(r, 0))
                                         + _lf(F_THREAD, thread) + _vf(F_SIBLING_RANK, order))))
            order += 1
        for j, c in enumerate(counters.get(r, [])):
            desc = (_vf(F_UNIT, c.unit) if c.unit is not None else b"")
            out.append(_packet(seq + _lf(F_TRACK_DESCRIPTOR, _vf(F_UUID, _uuid(r, 1 << 22 | j)) + _lf(F_NAME, c.name)
                                         + _vf(F_PARENT, _uuid(r, 0)) + _lf(F_COUNTER, desc)
                                         + _vf(F_SIBLING_RANK, order) + _lf(F_DESCRIPTION, c.description))))
            order += 1
    return b"".join(out), tids


# ------------------------------------------------------------------------------- a thread's events
@dataclass
class _Flows:
    """The messages as flows: per (rank, thread), the call events they leave and end in, and their
    numbers (a flow's id is its message's number + 1)."""

    send_call: np.ndarray  # event index of the call that sent each message
    recv_call: np.ndarray  # event index of the call that completed its receive (-1: none)
    send_id: np.ndarray  # the message's number, of each send
    recv_id: np.ndarray
    send_key: np.ndarray  # (rank << 32 | thread) of each, sorted, with the entries in that order
    send_order: np.ndarray
    recv_key: np.ndarray
    recv_order: np.ndarray

    def of(self, rank: int, thread: int, sending: bool) -> tuple[np.ndarray, np.ndarray]:
        """The numbers of the messages a thread sent (or received), and their calls."""
        key, order = (self.send_key, self.send_order) if sending else (self.recv_key, self.recv_order)
        k = rank << 32 | thread
        at = order[np.searchsorted(key, k, "left"):np.searchsorted(key, k, "right")]
        return (self.send_id[at], self.send_call[at]) if sending else (self.recv_id[at], self.recv_call[at])


def _flows(tl: Timeline) -> _Flows:
    m = tl.messages
    n = np.arange(len(m.send_ev), dtype=np.int64)
    return _flows_of(tl.ev, np.asarray(m.send_ev, dtype=np.int64), np.asarray(m.recv_ev, dtype=np.int64), n, n)


def _flows_of(ev, send_ev: np.ndarray, recv_ev: np.ndarray, send_id: np.ndarray, recv_id: np.ndarray) -> _Flows:
    """The flows of messages whose sends (receives) are events send_ev (recv_ev) of ev."""
    calls = np.flatnonzero(ev["kind"] == reader.CALL)

    def call_of(i: np.ndarray) -> np.ndarray:
        """The call event at or before each event on its thread: a completion's completing call."""
        at = np.searchsorted(calls, i, "right") - 1
        c = calls[np.maximum(at, 0)] if len(calls) else np.zeros(len(i), dtype=np.int64)
        same = (at >= 0) & (ev["rank"][c] == ev["rank"][i]) & (ev["thread"][c] == ev["thread"][i])
        return np.where(same, c, -1)

    send = call_of(send_ev)
    recv = call_of(recv_ev)

    def keyed(c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        ok = np.flatnonzero(c >= 0)
        key = ev["rank"][c[ok]].astype(np.int64) << 32 | ev["thread"][c[ok]].astype(np.int64)
        order = np.argsort(key, kind="stable")
        return key[order], ok[order]

    sk, so = keyed(send)
    rk, ro = keyed(recv)
    return _Flows(send, recv, send_id, recv_id, sk, so, rk, ro)


class _Names:
    """A sequence's interned event names: iids 1... for the MPI functions its calls name (in the
    order of their ids: a loop's few functions take one byte each), then the others as they come."""

    def __init__(self, functions: list[str], fns: np.ndarray) -> None:
        self.functions = functions
        self.fns = fns  # the function ids used, sorted
        self.of_fn = np.zeros(int(fns.max()) + 1 if len(fns) else 1, dtype=np.int64)  # function id -> iid
        self.of_fn[fns] = np.arange(1, len(fns) + 1)
        self.other: dict[str, int] = {}

    def iid(self, name: str) -> int:
        if name not in self.other:
            self.other[name] = len(self.fns) + 1 + len(self.other)
        return self.other[name]

    def entries(self) -> list[tuple[int, str]]:
        return [(i + 1, self.functions[int(f)]) for i, f in enumerate(self.fns)] + [(i, n) for n, i in self.other.items()]


def _thread_sequence(tl: Timeline, rank: int, thread: int, lo: int, hi: int, shift: int, flows: _Flows,
                     regions: list, seqs: _Sequences, write, counts: dict[str, int], call_sites: bool) -> None:
    """Write one thread's sequence: its calls and regions as slices, its MPI-IO instants."""
    ev = tl.ev
    kinds = ev["kind"][lo:hi]
    ci = lo + np.flatnonzero(kinds == reader.CALL)
    io = lo + np.flatnonzero(kinds == reader.IO)
    # calls: begin and end in ns; a call never overlaps the one before it (slices must nest)
    b = _ns(ev["t0"][ci]) + shift
    e = np.maximum(_ns(ev["t1"][ci]) + shift, b)
    if len(e):
        e = np.maximum.accumulate(e)
        b[1:] = np.maximum(b[1:], e[:-1])
    names = _Names(tl.functions, np.unique(ev["fn"][ci]))
    r_b = _ns([x[2] for x in regions]) + shift
    r_e = np.maximum(_ns([x[3] for x in regions]) + shift, r_b)
    r_name = np.array([names.iid(x[4]) for x in regions], dtype=np.int64)
    io_t = _ns(ev["t0"][io]) + shift
    io_file = [tl.file_name(rank, int(f)) for f in ev["fn"][io]]
    io_name = np.array([names.iid("file " + f) for f in io_file], dtype=np.int64)
    io_values = {f: i + 1 for i, f in enumerate(dict.fromkeys(io_file))}  # interned annotation strings
    io_value = np.array([io_values[f] for f in io_file], dtype=np.int64)
    # packets in time order: kind 0 call begin, 1 call end, 2 region begin, 3 region end, 4 io instant
    nc, nr = len(ci), len(regions)
    if nr == 0 and len(io) == 0:  # calls alone do not overlap: begin, end, begin, end...
        ts = np.column_stack([b, e]).ravel()
        kind = np.tile(np.array([0, 1], dtype=np.int8), nc)
        ref = np.repeat(np.arange(nc, dtype=np.int64), 2)
    else:
        ts = np.concatenate([b, e, r_b, r_e, io_t])
        kind = np.concatenate([np.zeros(nc, np.int8), np.ones(nc, np.int8), np.full(nr, 2, np.int8),
                               np.full(nr, 3, np.int8), np.full(len(io), 4, np.int8)])
        ref = np.concatenate([np.arange(nc), np.arange(nc), np.arange(nr), np.arange(nr), np.arange(len(io))])
        # at one time: ends first (the inner one, begun last, first; a call before its region), then
        # instants, then begins (the outer one, ending last, first; a region before its calls)
        phase = np.array([2, 0, 2, 0, 1], dtype=np.int8)[kind]
        other = np.concatenate([-e, -b, -r_e, -r_b, np.zeros(len(io), np.int64)])
        inner = np.array([1, 0, 0, 1, 0], dtype=np.int8)[kind]
        order = np.lexsort((inner, other, phase, ts))
        ts, kind, ref = ts[order], kind[order], ref[order]
        del order, phase, other, inner
    if not len(ts):
        return
    # the sequence's first packet: interned names, categories, annotation names, source locations
    sites = np.unique(ev["site"][ci]) if call_sites and tl.sites else np.zeros(0, dtype=np.uint32)
    loc = {}
    for s in sites.tolist():
        where = tl.site_of(rank, thread, s) if s else None
        if where is not None:
            loc[s] = where
    site_ok = np.zeros(int(sites.max()) + 1 if len(sites) else 1, dtype=bool)
    site_ok[list(loc)] = True
    interned = (_interned(F_EVENT_NAMES, names.entries())
                + _interned(F_CATEGORY_NAMES, [(i + 1, c) for i, c in enumerate(CATEGORIES)])
                + _interned(F_ANN_NAMES, [(i, n) for n, i in A.items()])
                + b"".join(_lf(F_SOURCE_LOCATIONS, _vf(1, s) + _lf(2, w.get("file") or w.get("module") or "")
                                + _lf(3, str(w.get("symbol") or "")) + (_vf(4, w["line"]) if w.get("line") else b""))
                           for s, w in loc.items())
                + b"".join(_lf(F_STRING_VALUES, _vf(1, i) + _lf(2, f)) for f, i in io_values.items()))
    seq, first = seqs.start(_uuid(rank, 1 + thread), int(ts[0]), interned)
    write(first)
    counts["packets"] += 1
    # flows: the message numbers on the begin packets of their calls
    begin_at = np.empty(nc, dtype=np.int64)
    begin_at[ref[kind == 0]] = np.flatnonzero(kind == 0)
    out_flow, out_call = flows.of(rank, thread, True)
    in_flow, in_call = flows.of(rank, thread, False)
    out_at = begin_at[np.searchsorted(ci, out_call)]
    in_at = begin_at[np.searchsorted(ci, in_call)]
    o = np.lexsort((out_flow, out_at))
    out_flow, out_at = out_flow[o], out_at[o]
    o = np.lexsort((in_flow, in_at))
    in_flow, in_at = in_flow[o], in_at[o]
    deltas = np.diff(ts, prepend=ts[0])
    for a in range(0, len(ts), CHUNK):
        z = min(a + CHUNK, len(ts))
        k, rf = kind[a:z], ref[a:z]
        te = _Rows(z - a)
        cb = np.flatnonzero(k == 0)
        rb = np.flatnonzero(k == 2)
        ib = np.flatnonzero(k == 4)
        i = ci[rf[cb]]  # the call events begun in this chunk
        begins = np.flatnonzero((k == 0) | (k == 2) | (k == 4))
        cat = np.where(k[begins] == 0, CAT_MPI, np.where(k[begins] == 2, CAT_REGION, CAT_IO))
        te.varint(F_CATEGORIES, cat, begins)
        io_i = rf[ib]
        rows, ann = _int_annotations(ev, i, cb, ib, ev["sent"][io[io_i]])
        # the io instants' file: an interned string, before their offset
        file_ann = _Rows(len(ib))
        file_ann.const(_vf(F_ANN_NAME, A["file"]))
        file_ann.varint(F_ANN_STRING_IID, io_value[io_i])
        te.message(F_ANNOTATIONS, file_ann, ib)
        te.message(F_ANNOTATIONS, ann, rows)
        te.const(_vf(F_TYPE, BEGIN), np.flatnonzero((k == 0) | (k == 2)))
        te.const(_vf(F_TYPE, END), np.flatnonzero((k == 1) | (k == 3)))
        te.const(_vf(F_TYPE, INSTANT), ib)
        name_iid = np.concatenate([names.of_fn[ev["fn"][i]], r_name[rf[rb]], io_name[io_i]])
        name_rows = np.concatenate([cb, rb, ib])
        o = np.argsort(name_rows, kind="stable")
        te.varint(F_NAME_IID, name_iid[o], name_rows[o])
        if loc:
            site = ev["site"][i]
            has = site_ok[np.minimum(site, len(site_ok) - 1)] & (site < len(site_ok))
            te.varint(F_SOURCE_LOCATION, site[has], cb[has])
        s0, s1 = np.searchsorted(out_at, [a, z])
        te.fixed64(F_FLOWS, out_flow[s0:s1].astype(np.uint64) + np.uint64(1), out_at[s0:s1] - a)
        r0, r1 = np.searchsorted(in_at, [a, z])
        te.fixed64(F_TERMINATING_FLOWS, in_flow[r0:r1].astype(np.uint64) + np.uint64(1), in_at[r0:r1] - a)
        write(_encode_packets(_packet_rows(seq, deltas[a:z], te)))
        counts["packets"] += z - a
    counts["calls"] += nc
    counts["regions"] += nr
    counts["io_events"] += len(io)
    counts["flows"] += len(out_flow)


def _int_annotations(ev, i: np.ndarray, calls: np.ndarray, ios: np.ndarray,
                     offsets: np.ndarray) -> tuple[np.ndarray, _Rows]:
    """The integer debug annotations of a chunk's packets (the rows they go into, and the
    annotations): of the calls begun (events i, in rows calls) their bytes, peers and tags (the
    Chrome export's args: zero bytes and tags left out), of the MPI-IO instants (rows ios) their
    offset. One sub-message each, in one order for every call."""
    rows, names, values = [], [], []
    for name, col, peer in (("bytes_sent", "sent", None), ("bytes_recv", "recv", None), ("dst", "dst", None),
                            ("src", "src", None), ("send_tag", "stag", "dst"), ("recv_tag", "rtag", "src")):
        v = ev[col][i]
        has = (v >= 0) if name in ("dst", "src") else (v != 0)
        if peer is not None:
            has &= ev[peer][i] >= 0
        rows.append(calls[has])
        names.append(np.full(int(has.sum()), A[name], dtype=np.int64))
        values.append(v[has].astype(np.int64))
    rows.append(ios)
    names.append(np.full(len(ios), A["offset"], dtype=np.int64))
    values.append(np.asarray(offsets, dtype=np.int64))
    at = np.concatenate(rows)
    order = np.argsort(at, kind="stable")
    ann = _Rows(len(at))
    ann.varint(F_ANN_NAME, np.concatenate(names)[order])
    ann.varint(F_ANN_INT, np.concatenate(values)[order])
    return at[order], ann


def _counter_sequence(c: _Counter, track: int, shift: int, seqs: _Sequences, write, counts: dict[str, int]) -> None:
    """Write one counter track's samples (a sequence of its own, whose default track it is)."""
    if not len(c.t):
        return
    ts = _ns(c.t) + shift
    order = np.argsort(ts, kind="stable")
    ts, values = ts[order], c.values[order]
    seq, first = seqs.start(track, int(ts[0]))
    write(first)
    counts["packets"] += 1
    deltas = np.diff(ts, prepend=ts[0])
    for a in range(0, len(ts), CHUNK):
        z = min(a + CHUNK, len(ts))
        te = _Rows(z - a)
        te.const(_vf(F_TYPE, COUNTER))
        if values.dtype.kind == "f":
            te.fixed64(F_DOUBLE_VALUE, values[a:z].astype(np.float64))
        else:
            te.varint(F_COUNTER_VALUE, values[a:z])
        write(_encode_packets(_packet_rows(seq, deltas[a:z], te)))
        counts["packets"] += z - a
    counts["counter_samples"] += len(ts)


def _findings_sequence(found: list, shift: int, seqs: _Sequences, write, counts: dict[str, int]) -> None:
    """The trace analysis' findings: instants on their rank's main thread (one sequence for all)."""
    if not found:
        return
    found = sorted(found, key=lambda f: (_ns(f.time_s) + shift, f.rank))
    kinds = sorted({f.kind for f in found})
    names = {k: i + 1 for i, k in enumerate(kinds)}
    interned = (_interned(F_EVENT_NAMES, [(i, FINDING_NAMES.get(k, k)) for k, i in names.items()])
                + _interned(F_CATEGORY_NAMES, [(CAT_FINDING, "finding")])
                + _interned(F_ANN_NAMES, [(A[n], n) for n in ("message", "duration_ns", "bytes")]))
    ts = [max(int(_ns(f.time_s)) + shift, 0) for f in found]
    seq, first = seqs.start(None, ts[0], interned)
    write(first)
    counts["packets"] += 1
    prev = ts[0]
    for f, t in zip(found, ts):
        ann = (_lf(F_ANNOTATIONS, _vf(F_ANN_NAME, A["message"]) + _lf(F_ANN_STRING, f.message))
               + _lf(F_ANNOTATIONS, _vf(F_ANN_NAME, A["duration_ns"]) + _vf(F_ANN_INT, int(_ns(f.duration_s)))))
        if f.bytes is not None:
            ann += _lf(F_ANNOTATIONS, _vf(F_ANN_NAME, A["bytes"]) + _vf(F_ANN_INT, f.bytes))
        event = (_vf(F_CATEGORIES, CAT_FINDING) + ann + _vf(F_TYPE, INSTANT) + _vf(F_NAME_IID, names[f.kind])
                 + _vf(F_TRACK_UUID, _uuid(f.rank, 1)))
        write(_packet(_vf(F_TIMESTAMP, t - prev) + _vf(F_SEQ_ID, seq) + _lf(F_TRACK_EVENT, event)
                      + _vf(F_FLAGS, SEQ_NEEDS)))
        prev = t
        counts["packets"] += 1
    counts["findings"] += len(found)


# ------------------------------------------------------------------------------- the export
@dataclass
class _RankEvents:
    """What the writer takes of one rank: a Timeline whose events ev[lo:hi] are the rank's, the
    flows of its messages and its region visits by thread."""

    tl: Timeline
    lo: int
    hi: int
    flows: _Flows
    regions: dict[tuple[int, int], list]


def _regions_by_thread(tl: Timeline) -> dict[tuple[int, int], list]:
    out: dict[tuple[int, int], list] = {}
    for reg in region_visits(tl):
        out.setdefault((reg[0], reg[1]), []).append(reg)
    return out


def _run_counters(tl: Timeline, counters: list[_Counter], notes: list[str]) -> list[_Counter]:
    """The trace's own counters (given), then counters mode's snapshots and memory mode's samples
    when the run has them."""
    if tl.rundir is not None:
        modes = layout.modes(tl.rundir)
        if "counters" in modes:
            counters += _spc_counters(tl, notes)
        if "memory" in modes:
            counters += _memory_counters(tl, notes)
    return counters


def _write(tl: Timeline, out: Path, counters: list[_Counter], threads: dict[int, list[int]], found: list,
           rank_events: Callable[[int], _RankEvents | None], progress: Progress, call_sites: bool,
           notes: list[str]) -> dict[str, int]:
    """Write the file: the descriptors, then rank by rank its threads' sequences (rank_events gives
    a rank's events, None without any) and its counter tracks, then the findings."""
    by_rank: dict[int, list[_Counter]] = {}
    for c in counters:
        by_rank.setdefault(c.rank, []).append(c)
    # nothing before 0: memory's first sample is inside MPI_Init, before the first traced event
    earliest = min([0] + [int(_ns(c.t).min()) for c in counters if len(c.t)])
    shift = -earliest
    counts = dict.fromkeys(("packets", "calls", "regions", "flows", "io_events", "findings", "counter_tracks",
                            "counter_samples"), 0)
    seqs = _Sequences()
    with safefile.replacing(out, binary=True) as f:
        write = f.write
        head, _ = _descriptors(tl, threads, by_rank, _hosts(tl))
        write(head)
        counts["packets"] += tl.nranks + sum(len(t) for t in threads.values()) + len(counters)
        for r in range(tl.nranks):
            if progress and (r == 0 or tl.nranks <= 64 or r % (tl.nranks // 64) == 0):
                progress(f"Perfetto trace: rank {r} of {tl.nranks}")
            one = rank_events(r)
            if one is not None:
                th = one.tl.ev["thread"][one.lo:one.hi]
                for t in threads[r]:
                    a = one.lo + int(np.searchsorted(th, t, "left"))
                    z = one.lo + int(np.searchsorted(th, t, "right"))
                    _thread_sequence(one.tl, r, t, a, z, shift, one.flows, one.regions.get((r, t), []), seqs, write,
                                     counts, call_sites)
                del one
            for j, c in enumerate(by_rank.get(r, [])):
                _counter_sequence(c, _uuid(r, 1 << 22 | j), shift, seqs, write, counts)
        counts["counter_tracks"] = len(counters)
        _findings_sequence(found, shift, seqs, write, counts)
    tl.problems.extend(notes)
    return counts


def perfetto(tl: Timeline, out: Path, progress: Progress = None, call_sites: bool = False) -> dict[str, int]:
    """Write the trace as a Perfetto protobuf trace (see the module's docstring): rank by rank,
    thread by thread, each in chunks of packets; call_sites: each call's site as its source
    location. Returns counts of what was written."""
    ev = tl.ev
    notes: list[str] = []
    counters = _run_counters(tl, _trace_counters(tl), notes)
    window = tl.selection.get("window")
    if window is not None:  # an export of a time window (--window): the samples within it
        for c in counters:
            inside = (c.t >= window[0]) & (c.t <= window[1])
            c.t, c.values = c.t[inside], c.values[inside]
    if progress:
        progress("Perfetto trace: the findings")
    if tl.whole is None:
        found = trace_findings.find(tl)
    else:  # a part of the trace (--ranks, --window, --functions): the run's findings within it
        found = trace_findings.within(trace_findings.find(tl.whole), tl.selection.get("ranks"), window)
    flows = _flows(tl)
    regions = _regions_by_thread(tl)
    bounds = np.searchsorted(ev["rank"], np.arange(tl.nranks + 1))
    threads: dict[int, list[int]] = {}
    for r in range(tl.nranks):
        th = ev["thread"][bounds[r]:bounds[r + 1]]
        threads[r] = sorted({0} | set(np.unique(th).tolist()))
    return _write(tl, out, counters, threads, found,
                  lambda r: _RankEvents(tl, int(bounds[r]), int(bounds[r + 1]), flows, regions), progress,
                  call_sites, notes)


def perfetto_run(rundir: Path, out: Path, progress: Progress = None, call_sites: bool = False,
                 selection: dict[str, str | None] | None = None) -> dict[str, int]:
    """perfetto()'s trace of a whole run, the same bytes, streamed rank by rank: the ranks are
    decoded and their messages paired out of core (mpilens.trace.scan, on this machine's worker
    processes), then each rank's events are read back from the scratch directory and written in
    turn, so that memory holds one rank's events and the messages' numbers, never the run's events.
    selection: a part of the trace (the command's --ranks, --window, --functions, --exclude, as
    given): the same bytes as perfetto() of the Timeline's select(), its messages paired in the
    whole run and its findings the run's within it."""
    def stream(r: scan.Rounds) -> dict[str, int]:
        chosen = filters.parse_selection(selection or {}, r.tl.functions, r.tl.classes, r.tl.traced)
        return _stream(r, out, progress, call_sites, chosen)

    return scan.scan(rundir, progress=progress, then=stream).then


def _stream(r: scan.Rounds, out: Path, progress: Progress, call_sites: bool,
            chosen: dict[str, Any] | None) -> dict[str, int]:
    whole = r.tl
    notes: list[str] = []
    where = {p.rank: k for k, p in enumerate(r.parts)}

    def part(k: int) -> tuple[Timeline, np.ndarray | None]:
        """The k-th rank's events, those of the selection only when there is one, and which of
        the rank's events those are (None: all)."""
        one = r.rank_timeline(k)
        if chosen is None:
            return one, None
        keep = timeline.selection_mask(one.ev, one.functions, one.classes, **chosen)
        return dataclasses.replace(one, ev=one.ev[keep]), keep

    def chosen_rank(x: int) -> bool:
        return not chosen["ranks"] or filters.in_ranks(chosen["ranks"], x)

    tl = whole if chosen is None else dataclasses.replace(
        whole, traced=[x for x in whole.traced if chosen_rank(x)],
        init_end={x: v for x, v in whole.init_end.items() if chosen_rank(x)}, selection=chosen)
    window = None if chosen is None else chosen["window"]
    own: list[_Counter] = []
    for k in range(len(r.parts)):  # the trace's own counters (a few ranks' user counters, if any)
        if (r.column(k, "kind") == reader.COUNTER).any():
            own += _trace_counters(part(k)[0])
    counters = _run_counters(tl, own, notes)
    if window is not None:  # as perfetto() cuts them: the samples within the window
        for c in counters:
            inside = (c.t >= window[0]) & (c.t <= window[1])
            c.t, c.values = c.t[inside], c.values[inside]
    # the messages by the rank that sent them, and by the rank that received them: per rank, its
    # events' indices (from its first) and the messages' numbers
    send_ev, recv_ev, ids = r.message_ids()
    bases = r.events.bases
    ends = []
    for ev_ in (send_ev, recv_ev):
        rank_of = np.searchsorted(bases, ev_, side="right") - 1
        order = np.argsort(rank_of, kind="stable")
        at = np.searchsorted(rank_of[order], np.arange(len(r.parts) + 1))
        ends.append([((ev_[order[at[k]:at[k + 1]]] - bases[k]).astype(np.int64), ids[order[at[k]:at[k + 1]]])
                     for k in range(len(r.parts))])
        del rank_of, order
    n_messages = len(ids)
    del send_ev, recv_ev, ids
    threads = {rank: [0] for rank in range(tl.nranks)}
    if chosen is None:
        for p in r.parts:
            threads[p.rank] = sorted({0} | set(p.threads))
        found = r.findings
    else:
        # what the selection keeps of each rank: its threads, and which ends of messages; a message
        # is kept when both its ends are, and numbered anew in the run's order (Timeline.select)
        kept_end = [np.zeros(n_messages, bool), np.zeros(n_messages, bool)]
        for k, p in enumerate(r.parts):
            one, keep = part(k)
            threads[p.rank] = sorted({0} | set(np.unique(one.ev["thread"]).tolist()))
            for side in (0, 1):
                local, num = ends[side][k]
                kept_end[side][num[keep[local]]] = True
            del one, keep
        both = kept_end[0] & kept_end[1]
        renumber = np.cumsum(both) - 1
        del kept_end
        found = trace_findings.within(r.findings, chosen["ranks"], window)

    def rank_events(rank: int) -> _RankEvents | None:
        k = where.get(rank)
        if k is None:
            return None
        (s_ev, s_id), (r_ev, r_id) = ends[0][k], ends[1][k]
        ends[0][k] = ends[1][k] = None  # let go of them once written
        one, keep = part(k)
        if keep is not None:  # the selected events renumbered, and the flows of the kept messages
            new_of = np.cumsum(keep) - 1
            s_ok, r_ok = both[s_id], both[r_id]
            s_ev, s_id = new_of[s_ev[s_ok]], renumber[s_id[s_ok]]
            r_ev, r_id = new_of[r_ev[r_ok]], renumber[r_id[r_ok]]
        return _RankEvents(one, 0, len(one.ev), _flows_of(one.ev, s_ev, r_ev, s_id, r_id), _regions_by_thread(one))

    return _write(tl, out, counters, threads, found, rank_events, progress, call_sites, notes)


exporter(Exporter("perfetto", "a trace as Perfetto's own protobuf trace (ui.perfetto.dev): slices, flows, counters",
                  "trace", ".perfetto-trace", perfetto, write_run=perfetto_run, streams_selection=True,
                  options=(Option(("--call-sites",), {"dest": "call_sites", "action": "store_true",
                                                      "help": "perfetto: each MPI call's site (file:line, function) "
                                                              "as its source location (about 3 bytes more a call)"}),)))
