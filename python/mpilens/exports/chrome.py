"""Chrome Trace Event Format export of a trace (Perfetto, chrome://tracing): `mpilens export chrome`."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .. import safefile
from ..trace import reader, scan
from ..trace.timeline import Timeline
from . import Exporter, Progress, exporter
from .common import region_visits


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
    keys = ("fn", "rank", "thread", "sent", "recv", "dst", "src", "site")
    group = pd.DataFrame({k: c[k] for k in keys}).groupby(list(keys), sort=False).ngroup().to_numpy()
    _, first = np.unique(group, return_index=True)  # each group's first call
    u = c[first]
    names = pa.array([json.dumps(n) for n in tl.functions]).take(pa.array(u["fn"].astype(np.int64)))
    # the call site (MPILENS_CALLSITE_DEPTH > 0): "file:line (function)" of the call
    where = [tl.site_text_of(int(r), int(t), int(s)) if s else None
             for r, t, s in zip(u["rank"], u["thread"], u["site"])]
    site_text = pa.array([json.dumps(w) if w else "" for w in where], type=pa.string())
    args = pc.utf8_rtrim(_text([_optional(np.array([w is not None for w in where], dtype=bool), "site", site_text),
                                _optional(u["sent"] != 0, "bytes_sent", _ints(u["sent"])),
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
    events for MPI calls and regions, flow arrows for messages, counter tracks, instant events with
    the file and offset of MPI-IO calls; timestamps in
    microseconds. Rank by rank (records sorted by rank, thread and time), so that the text of
    one rank at a time is in memory. Returns counts of what was written."""
    ev = tl.ev
    m = tl.messages
    s_t, f_t = m.send_t, m.recv_t
    backwards = int((f_t < s_t).sum())
    f_t = np.maximum(f_t, s_t)  # clocks not aligned well enough: draw the arrow straight down
    sr, st = ev["rank"][m.send_ev], ev["thread"][m.send_ev]
    dr, dt = ev["rank"][m.recv_ev], ev["thread"][m.recv_ev]
    calls = np.flatnonzero(ev["kind"] == reader.CALL)
    rank_calls = _by_rank(ev["rank"][calls], tl.nranks)
    rank_sends, rank_recvs = _by_rank(sr, tl.nranks), _by_rank(dr, tl.nranks)
    bounds = np.searchsorted(ev["rank"], np.arange(tl.nranks + 1))
    regions: dict[int, list] = {}
    for reg in region_visits(tl):
        regions.setdefault(reg[0], []).append(reg)
    written = 0
    with safefile.replacing(out, binary=True) as f:
        f.write(HEAD)
        for r in range(tl.nranks):
            if progress and (r == 0 or tl.nranks <= 64 or r % (tl.nranks // 64) == 0):
                progress(f"Chrome trace: rank {r} of {tl.nranks}")
            k, j = rank_sends[r], rank_recvs[r]
            rec = _rank_records(tl, r, int(bounds[r]), int(bounds[r + 1]), calls[rank_calls[r]], regions.get(r, []),
                                (k, st[k], s_t[k], m.bytes[k], m.tag[k]), (j, dt[j], f_t[j]))
            rec.write_into(f, after=r > 0)
            written += len(rec)
        f.write(TAIL)
    return {"events": written, "calls": len(calls), "messages": len(m.send_ev), "backwards_arrows": backwards}


HEAD = b'{"displayTimeUnit":"ns","otherData":{"tool":"mpilens"},"traceEvents":[\n'
TAIL = b"\n]}\n"


def _rank_records(tl: Timeline, r: int, lo: int, hi: int, calls: np.ndarray, regs: list, sends: tuple,
                  recvs: tuple) -> _Records:
    """One rank's records: its events are tl.ev[lo:hi] (calls: those of them that are calls), its
    region visits, the messages it sent (their numbers, threads, times, bytes and tags) and
    received (their numbers, threads and the arrows' ends)."""
    ev = tl.ev
    kind = ev["kind"][lo:hi]
    threads = np.unique(ev["thread"][lo:hi]).tolist()
    rec = _Records()
    rec.add([f'{{"ph":"M","name":"process_name","pid":{r},"args":{{"name":"rank {r}"}}}}',
             f'{{"ph":"M","name":"process_sort_index","pid":{r},"args":{{"sort_index":{r}}}}}'], r, -2, -1.0)
    rec.add([f'{{"ph":"M","name":"thread_name","pid":{r},"tid":{t},"args":{{"name":"thread {t}"}}}}'
             for t in threads], r, threads, -1.0)
    c = ev[calls]
    rec.add(_call_records(tl, c), r, c["thread"], c["t0"] * 1e6)
    rec.add([f'{{"ph":"X","cat":"region","name":{json.dumps(n)},"pid":{r},"tid":{th},"ts":{t0 * 1e6:.3f},'
             f'"dur":{max(t1 - t0, 0) * 1e6:.3f}}}' for _, th, t0, t1, n in regs],
            r, [x[1] for x in regs], [x[2] * 1e6 for x in regs])
    ii = lo + np.flatnonzero(kind == reader.IO)  # the file and offset of each MPI-IO call, an instant at its start
    rec.add([f'{{"ph":"i","s":"t","cat":"io","name":{json.dumps("file " + tl.name(int(i)))},"pid":{r},'
             f'"tid":{int(ev["thread"][i])},"ts":{ev["t0"][i] * 1e6:.3f},"args":{{"file":'
             f'{json.dumps(tl.name(int(i)))},"offset":{int(ev["sent"][i])}}}}}' for i in ii.tolist()],
            r, ev["thread"][ii], ev["t0"][ii] * 1e6)
    ci = lo + np.flatnonzero(kind == reader.COUNTER)
    values = ev["sent"][ci].view(np.float64)  # counters keep their value's bits in "sent"
    rec.add([f'{{"ph":"C","name":{json.dumps(tl.name(int(i)))},"pid":{r},'
             f'"ts":{ev["t0"][i] * 1e6:.3f},"args":{{"value":{v!r}}}}}' for i, v in zip(ci.tolist(), values.tolist())],
            r, ev["thread"][ci], ev["t0"][ci] * 1e6)
    # the arrow leaves the send call and lands at the end of the call that completed the receive
    k, st, s_t, nbytes, tag = sends
    rec.add(_text(['{"ph":"s","cat":"message","name":"message","id":', _ints(k), ',"pid":', str(r), ',"tid":',
                   _ints(st), ',"ts":', _micros(s_t), ',"args":{"bytes":', _ints(nbytes), ',"tag":', _ints(tag), "}}"]),
            r, st, s_t * 1e6)
    k, dt, f_t = recvs
    rec.add(_text(['{"ph":"f","bp":"e","cat":"message","name":"message","id":', _ints(k), ',"pid":', str(r),
                   ',"tid":', _ints(dt), ',"ts":', _micros(f_t), "}"]),
            r, dt, f_t * 1e6)
    return rec


def chrome_run(rundir: Path, out: Path, progress: Progress = None) -> dict[str, int]:
    """chrome()'s JSON of a whole run, the same bytes, streamed rank by rank as perfetto_run does:
    memory holds one rank's events and text, and the messages, never the run's events."""
    def stream(rounds: scan.Rounds) -> dict[str, int]:
        tl = rounds.tl
        send_ev, recv_ev, ids, s_t, f_t, nbytes, tag = rounds.message_ids("send_t", "recv_t", "bytes", "tag")
        backwards = int((f_t < s_t).sum())
        f_t = np.maximum(f_t, s_t)
        bases = rounds.events.bases
        where = {p.rank: k for k, p in enumerate(rounds.parts)}
        s_rank = np.searchsorted(bases, send_ev, side="right") - 1
        r_rank = np.searchsorted(bases, recv_ev, side="right") - 1
        # per rank, its messages in the order of their numbers (as chrome() takes them)
        s_by = _by_rank(s_rank, len(rounds.parts))
        r_by = _by_rank(r_rank, len(rounds.parts))
        del s_rank, r_rank
        written = ncalls = 0
        with safefile.replacing(out, binary=True) as f:
            f.write(HEAD)
            for r in range(tl.nranks):
                if progress and (r == 0 or tl.nranks <= 64 or r % (tl.nranks // 64) == 0):
                    progress(f"Chrome trace: rank {r} of {tl.nranks}")
                q = where.get(r)
                if q is None:  # no trace: its names alone
                    rec = _Records()
                    rec.add([f'{{"ph":"M","name":"process_name","pid":{r},"args":{{"name":"rank {r}"}}}}',
                             f'{{"ph":"M","name":"process_sort_index","pid":{r},"args":{{"sort_index":{r}}}}}'],
                            r, -2, -1.0)
                else:
                    one = rounds.rank_timeline(q)
                    base = int(bases[q])
                    k = s_by[q][np.argsort(ids[s_by[q]], kind="stable")]
                    j = r_by[q][np.argsort(ids[r_by[q]], kind="stable")]
                    calls = np.flatnonzero(one.ev["kind"] == reader.CALL)
                    ncalls += len(calls)
                    rec = _rank_records(one, r, 0, len(one.ev), calls, region_visits(one),
                                        (ids[k], one.ev["thread"][send_ev[k] - base], s_t[k], nbytes[k], tag[k]),
                                        (ids[j], one.ev["thread"][recv_ev[j] - base], f_t[j]))
                    del one
                rec.write_into(f, after=r > 0)
                written += len(rec)
            f.write(TAIL)
        return {"events": written, "calls": ncalls, "messages": len(ids), "backwards_arrows": backwards}

    return scan.scan(rundir, progress=progress, then=stream).then


exporter(Exporter("chrome", "a trace as Chrome Trace Event JSON (ui.perfetto.dev, chrome://tracing)", "trace",
                  ".trace.json", chrome, write_run=chrome_run))
