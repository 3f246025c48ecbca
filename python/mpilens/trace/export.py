"""Exports of a timeline: Chrome Trace Event Format (Perfetto, chrome://tracing), Parquet (an
event table for pandas, DuckDB, Spark) and OTF2 (Vampir, Score-P tools)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from . import reader
from .timeline import Timeline

Progress = Callable[[str], None] | None


def _regions(tl: Timeline) -> list[tuple[int, int, float, float, str]]:
    """Region visits as (rank, thread, start, end, name), from begin/end records."""
    ev = tl.ev
    out, stacks = [], {}
    for i in np.flatnonzero((ev["kind"] == reader.REGION_BEGIN) | (ev["kind"] == reader.REGION_END)):
        key = (int(ev["rank"][i]), int(ev["thread"][i]))
        if ev["kind"][i] == reader.REGION_BEGIN:
            stacks.setdefault(key, []).append((int(ev["fn"][i]), float(ev["t0"][i])))
        elif stacks.get(key):
            path, t0 = stacks[key].pop()
            out.append((key[0], key[1], t0, float(ev["t0"][i]), tl.region_name(key[0], path)))
    return out


# ------------------------------------------------------------------------------------- Chrome
# The records are built column-wise with Arrow's string kernels (one C++ pass per piece of text),
# not formatted one by one in Python: a 10^7-event trace has ~2 x 10^7 records.
def _text(pieces: list) -> pa.Array:
    """Element-wise concatenation of string arrays and literal strings."""
    return pc.binary_join_element_wise(*pieces, "")


def _ints(values) -> pa.Array:
    return pc.cast(pa.array(np.asarray(values, dtype=np.int64)), pa.string())


def _micros(t_s) -> pa.Array:
    """Seconds as microseconds with three decimals (nanoseconds), like f"{t * 1e6:.3f}"."""
    ns = np.rint(np.asarray(t_s, dtype=np.float64) * 1e9).astype(np.int64)
    a = np.abs(ns)
    text = [_ints(a // 1000), ".", pc.utf8_lpad(_ints(a % 1000), width=3, padding="0")]
    if (ns < 0).any():
        text.insert(0, pc.if_else(pa.array(ns < 0), "-", ""))
    return _text(text)


def _optional(cond, key: str, values: pa.Array) -> pa.Array:
    """'"key":value,' where cond holds, '' elsewhere."""
    return pc.if_else(pa.array(np.asarray(cond, dtype=bool)), _text([f'"{key}":', values, ","]), "")


class _Records:
    """Trace Event Format records with their sort key (pid, tid, ts), written in that order."""

    def __init__(self) -> None:
        self.text: list[pa.Array] = []
        self.pid: list[np.ndarray] = []
        self.tid: list[np.ndarray] = []
        self.ts: list[np.ndarray] = []

    def __len__(self) -> int:
        return sum(len(t) for t in self.text)

    def add(self, text, pid, tid, ts) -> None:
        text = text if isinstance(text, pa.Array) else pa.array(text, type=pa.string())
        n = len(text)
        self.text.append(text)
        self.pid.append(np.broadcast_to(np.asarray(pid, dtype=np.int64), n))
        self.tid.append(np.broadcast_to(np.asarray(tid, dtype=np.int64), n))
        self.ts.append(np.broadcast_to(np.asarray(ts, dtype=np.float64), n))

    def write_into(self, f, after: bool) -> None:
        """Append the records, sorted, to the open file f (after: records were written before)."""
        if not self.text:
            return
        order = np.lexsort((np.concatenate(self.ts), np.concatenate(self.tid), np.concatenate(self.pid)))
        text = pa.chunked_array([t.cast(pa.large_string()) for t in self.text]).combine_chunks()
        step = 1 << 20
        sep, empty = pa.scalar(",\n", pa.large_string()), pa.scalar("", pa.large_string())
        for a in range(0, len(order), step):  # in chunks: no second copy of the whole text
            if after or a:
                f.write(b",\n")
            chunk = pc.binary_join_element_wise(text.take(pa.array(order[a:a + step])), sep, empty)
            f.write(_bytes(chunk)[:-2])  # no separator after the chunk's last record


def _bytes(strings: pa.Array) -> memoryview:
    """The text of a large_string array, all its strings one after the other (its data buffer)."""
    _, offsets_buf, data_buf = strings.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=np.int64)
    first, last = int(offsets[strings.offset]), int(offsets[strings.offset + len(strings)])
    return memoryview(data_buf)[first:last] if data_buf is not None else memoryview(b"")


def _call_records(tl: Timeline, c: np.ndarray) -> pa.Array:
    """The complete ("X") records of MPI calls. Calls of one function by one thread with the same
    bytes and peers differ only in their times: their common text is made once per such group
    (a ping-pong has a handful) and the times are appended to it."""
    if len(c) == 0:
        return pa.array([], type=pa.string())
    keys = ("fn", "rank", "thread", "sent", "recv", "dst", "src")
    group = pd.DataFrame({k: c[k] for k in keys}).groupby(list(keys), sort=False).ngroup().to_numpy()
    _, first = np.unique(group, return_index=True)  # each group's first call
    u = c[first]
    names = pa.array([json.dumps(n) for n in tl.functions]).take(pa.array(u["fn"].astype(np.int64)))
    args = pc.utf8_rtrim(_text([_optional(u["sent"] != 0, "bytes_sent", _ints(u["sent"])),
                                _optional(u["recv"] != 0, "bytes_recv", _ints(u["recv"])),
                                _optional(u["dst"] >= 0, "dst", _ints(u["dst"])),
                                _optional(u["src"] >= 0, "src", _ints(u["src"]))]), characters=",")
    head = _text(['{"ph":"X","cat":"mpi","name":', names, ',"pid":', _ints(u["rank"]), ',"tid":', _ints(u["thread"]),
                  ',"args":{', args, '},"ts":'])
    return _text([head.take(pa.array(group)), _micros(c["t0"]), ',"dur":', _micros(np.maximum(c["t1"] - c["t0"], 0.0)),
                  "}"])


def _by_rank(ranks: np.ndarray, nranks: int) -> list[np.ndarray]:
    """Indices of ranks' entries, one array per rank (in their order)."""
    order = np.argsort(ranks, kind="stable")
    bounds = np.searchsorted(ranks[order], np.arange(nranks + 1))
    return [order[bounds[r]:bounds[r + 1]] for r in range(nranks)]


def chrome(tl: Timeline, out: Path, progress: Progress = None) -> dict[str, int]:
    """Write the Trace Event Format JSON: one process per rank, one thread per thread, complete
    events for MPI calls and regions, flow arrows for messages, counter tracks; timestamps in
    microseconds. Rank by rank (records sorted by rank, thread and time), so that the text of
    one rank at a time is in memory. Returns counts of what was written."""
    ev = tl.ev
    m = tl.messages
    s_t = ev["t0"][m.send_ev]
    f_t = m.recv_t
    backwards = int((f_t < s_t).sum())
    f_t = np.maximum(f_t, s_t)  # clocks not aligned well enough: draw the arrow straight down
    sr, st = ev["rank"][m.send_ev], ev["thread"][m.send_ev]
    dr, dt = ev["rank"][m.recv_ev], ev["thread"][m.recv_ev]
    calls = np.flatnonzero(ev["kind"] == reader.CALL)
    counters = np.flatnonzero(ev["kind"] == reader.COUNTER)
    rank_calls = _by_rank(ev["rank"][calls], tl.nranks)
    rank_counters = _by_rank(ev["rank"][counters], tl.nranks)
    rank_sends, rank_recvs = _by_rank(sr, tl.nranks), _by_rank(dr, tl.nranks)
    regions: dict[int, list] = {}
    for reg in _regions(tl):
        regions.setdefault(reg[0], []).append(reg)
    keys = np.unique((ev["rank"].astype(np.int64) << 32) | ev["thread"].astype(np.int64))
    threads: dict[int, list[int]] = {}
    for r, t in zip((keys >> 32).tolist(), (keys & 0xFFFFFFFF).tolist()):
        threads.setdefault(r, []).append(t)
    written = 0
    with out.open("wb") as f:
        f.write(b'{"displayTimeUnit":"ns","otherData":{"tool":"mpilens"},"traceEvents":[\n')
        for r in range(tl.nranks):
            if progress and (r == 0 or tl.nranks <= 64 or r % (tl.nranks // 64) == 0):
                progress(f"Chrome trace: rank {r} of {tl.nranks}")
            rec = _Records()
            rec.add([f'{{"ph":"M","name":"process_name","pid":{r},"args":{{"name":"rank {r}"}}}}',
                     f'{{"ph":"M","name":"process_sort_index","pid":{r},"args":{{"sort_index":{r}}}}}'], r, -2, -1.0)
            rec.add([f'{{"ph":"M","name":"thread_name","pid":{r},"tid":{t},"args":{{"name":"thread {t}"}}}}'
                     for t in threads.get(r, [])], r, threads.get(r, []), -1.0)
            c = ev[calls[rank_calls[r]]]
            rec.add(_call_records(tl, c), r, c["thread"], c["t0"] * 1e6)
            regs = regions.get(r, [])
            rec.add([f'{{"ph":"X","cat":"region","name":{json.dumps(n)},"pid":{r},"tid":{th},"ts":{t0 * 1e6:.3f},'
                     f'"dur":{max(t1 - t0, 0) * 1e6:.3f}}}' for _, th, t0, t1, n in regs],
                    r, [x[1] for x in regs], [x[2] * 1e6 for x in regs])
            ci = counters[rank_counters[r]]
            values = ev["sent"][ci].view(np.float64)  # counters keep their value's bits in "sent"
            rec.add([f'{{"ph":"C","name":{json.dumps(tl.name(int(i)))},"pid":{r},'
                     f'"ts":{ev["t0"][i] * 1e6:.3f},"args":{{"value":{v!r}}}}}' for i, v in zip(ci.tolist(), values.tolist())],
                    r, ev["thread"][ci], ev["t0"][ci] * 1e6)
            # the arrow leaves the send call and lands at the end of the call that completed the receive
            k = rank_sends[r]
            rec.add(_text(['{"ph":"s","cat":"message","name":"message","id":', _ints(k), ',"pid":', str(r), ',"tid":',
                           _ints(st[k]), ',"ts":', _micros(s_t[k]), ',"args":{"bytes":', _ints(m.bytes[k]), ',"tag":',
                           _ints(m.tag[k]), "}}"]),
                    r, st[k], s_t[k] * 1e6)
            k = rank_recvs[r]
            rec.add(_text(['{"ph":"f","bp":"e","cat":"message","name":"message","id":', _ints(k), ',"pid":', str(r),
                           ',"tid":', _ints(dt[k]), ',"ts":', _micros(f_t[k]), "}"]),
                    r, dt[k], f_t[k] * 1e6)
            rec.write_into(f, after=r > 0)
            written += len(rec)
        f.write(b"\n]}\n")
    return {"events": written, "calls": len(calls), "messages": len(m.send_ev), "backwards_arrows": backwards}


# ------------------------------------------------------------------------------------- Parquet
def parquet(tl: Timeline, out: Path, progress: Progress = None) -> dict[str, int]:
    """Write the event table (one row per event, names resolved) and, next to it, the matched
    messages (<out stem>.messages.parquet)."""
    import pyarrow.parquet as pq

    ev = tl.ev
    # names as dictionary columns: one small table of strings and an index per event
    kinds = pa.DictionaryArray.from_arrays(
        pa.array(np.minimum(ev["kind"], 5).astype(np.int8)),
        pa.array(["", "call", "done", "region_begin", "region_end", "counter"]))
    labels = list(tl.functions)
    index = ev["fn"].astype(np.int32)
    special = np.flatnonzero(ev["kind"] >= reader.REGION_BEGIN)
    if len(special):
        extra = {}
        for i in special.tolist():
            index[i] = extra.setdefault(tl.name(i), len(labels) + len(extra))
        labels += list(extra)
    names = pa.DictionaryArray.from_arrays(pa.array(index), pa.array(labels))
    table = pa.table({
        "rank": ev["rank"], "thread": ev["thread"], "kind": kinds, "name": names,
        "start_s": ev["t0"], "end_s": ev["t1"], "comm": ev["comm"], "dst": ev["dst"], "src": ev["src"],
        "send_tag": ev["stag"], "recv_tag": ev["rtag"], "bytes_sent": ev["sent"], "bytes_recv": ev["recv"],
        "request": ev["req"]})
    if progress:
        progress("Parquet: events")
    pq.write_table(table, out)
    m = tl.messages
    pq.write_table(pa.table({"src": m.src, "dst": m.dst, "tag": m.tag, "bytes": m.bytes, "send_s": m.send_t,
                             "recv_posted_s": m.recv_post_t, "recv_done_s": m.recv_t, "send_event": m.send_ev,
                             "recv_event": m.recv_ev}), out.with_name(out.stem + ".messages.parquet"))
    return {"events": len(ev), "messages": len(m.send_ev)}


# ------------------------------------------------------------------------------------- OTF2
def otf2(tl: Timeline, out: Path, progress: Progress = None) -> dict[str, int]:
    """Write an OTF2 archive (out is the archive directory; out/traces.otf2 is its anchor):
    Enter/Leave for MPI calls and regions, MpiSend/MpiRecv for matched messages, collective
    begin/end. Ranks in message records are MPI_COMM_WORLD ranks (one communicator definition)."""
    import otf2 as o

    ev = tl.ev
    resolution = 1_000_000_000  # ns
    m = tl.messages
    sends = {int(s): k for k, s in enumerate(m.send_ev)}
    recvs = {int(r): k for k, r in enumerate(m.recv_ev)}
    coll_ids = {i for i, c in enumerate(tl.classes) if c == "collective"}
    with o.writer.open(str(out), timer_resolution=resolution) as trace:
        root = trace.definitions.system_tree_node("machine")
        groups = {r: trace.definitions.location_group(f"rank {r}", system_tree_parent=root) for r in range(tl.nranks)}
        regions: dict[str, object] = {}

        def region(name: str, paradigm: str) -> object:
            if name not in regions:
                regions[name] = trace.definitions.region(
                    name, paradigm=o.Paradigm.MPI if paradigm == "mpi" else o.Paradigm.USER,
                    region_role=o.RegionRole.FUNCTION)
            return regions[name]

        # locations: thread 0 of every rank first, so that rank r is location r of the MPI groups
        threads = sorted({(int(a), int(b)) for a, b in zip(ev["rank"], ev["thread"])} | {(r, 0) for r in range(tl.nranks)})
        locations = {key: trace.definitions.location(f"rank {key[0]} thread {key[1]}", group=groups[key[0]],
                                                     type=o.LocationType.CPU_THREAD) for key in threads}
        trace.definitions.group("MPI ranks", members=[locations[(r, 0)] for r in range(tl.nranks)],
                                group_type=o.GroupType.COMM_LOCATIONS, paradigm=o.Paradigm.MPI)
        world_group = trace.definitions.group("MPI_COMM_WORLD", members=list(range(tl.nranks)),
                                              group_type=o.GroupType.COMM_GROUP, paradigm=o.Paradigm.MPI)
        comm = trace.definitions.comm("MPI_COMM_WORLD (world ranks)", group=world_group)
        ops = {f: getattr(o.CollectiveOp, name[4:].upper(), None) for f, name in enumerate(tl.functions)}
        reg = _regions(tl)
        timeline: dict[tuple[int, int], list[tuple[float, int, object]]] = {}
        for r, th, t0, t1, name in reg:
            timeline.setdefault((r, th), []).append((t0, 0, ("enter", region(name, "user"))))
            timeline.setdefault((r, th), []).append((t1, 2, ("leave", region(name, "user"))))
        if progress:
            progress("OTF2: events")
        for i in np.flatnonzero(ev["kind"] == reader.CALL):
            e = ev[i]
            key = (int(e["rank"]), int(e["thread"]))
            reg_mpi = region(tl.functions[e["fn"]], "mpi")
            lst = timeline.setdefault(key, [])
            lst.append((float(e["t0"]), 0, ("enter", reg_mpi)))
            if int(i) in sends:
                k = sends[int(i)]
                lst.append((float(e["t0"]), 1, ("send", (int(m.dst[k]), int(m.tag[k]), int(m.bytes[k])))))
            if int(e["fn"]) in coll_ids and ops.get(int(e["fn"])) is not None:
                lst.append((float(e["t0"]), 1, ("coll_begin", None)))
                lst.append((float(e["t1"]), 1, ("coll_end", (ops[int(e["fn"])], max(int(e["dst"]), 0),
                                                               int(e["sent"]), int(e["recv"])))))
            if int(i) in recvs:
                k = recvs[int(i)]
                lst.append((float(e["t1"]), 1, ("recv", (int(m.src[k]), int(m.tag[k]), int(m.bytes[k])))))
            lst.append((float(e["t1"]), 2, ("leave", reg_mpi)))
        for i, k in recvs.items():  # receives completed by a Wait/Test: at the completion time
            if ev["kind"][i] == reader.DONE:
                key = (int(ev["rank"][i]), int(ev["thread"][i]))
                timeline.setdefault(key, []).append((float(ev["t0"][i]), 1, ("recv", (int(m.src[k]), int(m.tag[k]),
                                                                                        int(m.bytes[k])))))
        written = 0
        for (r, th), lst in sorted(timeline.items()):
            w = trace.event_writer_from_location(locations[(r, th)])
            lst.sort(key=lambda x: (x[0], x[1]))
            for t, _, (what, arg) in lst:
                time = int(max(t, 0.0) * resolution)
                if what == "enter":
                    w.enter(time, arg)
                elif what == "leave":
                    w.leave(time, arg)
                elif what == "send":
                    w.mpi_send(time, arg[0], comm, arg[1], arg[2])
                elif what == "recv":
                    w.mpi_recv(time, arg[0], comm, arg[1], arg[2])
                elif what == "coll_begin":
                    w.mpi_collective_begin(time)
                else:
                    w.mpi_collective_end(time, arg[0], comm, arg[1], arg[2], arg[3])
                written += 1
    return {"events": written, "messages": len(m.send_ev)}
