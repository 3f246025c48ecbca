"""Parquet export of a trace: an event table for pandas, DuckDB, Spark (`mpilens export parquet`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

from .. import safefile, units
from ..trace import reader
from ..trace.timeline import Timeline
from . import Exporter, Progress, exporter


def parquet(tl: Timeline, out: Path, progress: Progress = None) -> dict[str, int]:
    """Write the event table (one row per event, names resolved) and, next to it, the matched
    messages (<out stem>.messages.parquet). An "io" row names the file of the MPI-IO call in the
    next row of its thread, with the byte offset in bytes_sent (-1: not known)."""
    import pyarrow.parquet as pq

    ev = tl.ev
    # names as dictionary columns: one small table of strings and an index per event
    kinds = pa.DictionaryArray.from_arrays(
        pa.array(np.minimum(ev["kind"], 6).astype(np.int8)),
        pa.array(["", "call", "done", "region_begin", "region_end", "counter", "io"]))
    labels = list(tl.functions)
    index = ev["fn"].astype(np.int32)
    special = np.flatnonzero(ev["kind"] >= reader.REGION_BEGIN)
    if len(special):
        extra = {}
        for i in special.tolist():
            index[i] = extra.setdefault(tl.name(i), len(labels) + len(extra))
        labels += list(extra)
    # Arrow strings are UTF-8: a name's bytes that are not are shown escaped (units.printable)
    names = pa.DictionaryArray.from_arrays(pa.array(index), pa.array([units.printable(x) for x in labels]))
    table = pa.table({
        "rank": ev["rank"], "thread": ev["thread"], "kind": kinds, "name": names,
        "start_s": ev["t0"], "end_s": ev["t1"], "comm": ev["comm"], "dst": ev["dst"], "src": ev["src"],
        "send_tag": ev["stag"], "recv_tag": ev["rtag"], "bytes_sent": ev["sent"], "bytes_recv": ev["recv"],
        "request": ev["req"]})
    if progress:
        progress("Parquet: events")
    with safefile.replacing(out, binary=True) as f:
        pq.write_table(table, f)
    m = tl.messages
    with safefile.replacing(out.with_name(out.stem + ".messages.parquet"), binary=True) as f:
        pq.write_table(pa.table({"src": m.src, "dst": m.dst, "tag": m.tag, "bytes": m.bytes, "send_s": m.send_t,
                                 "recv_posted_s": m.recv_post_t, "recv_done_s": m.recv_t, "send_event": m.send_ev,
                                 "recv_event": m.recv_ev}), f)
    return {"events": len(ev), "messages": len(m.send_ev)}


exporter(Exporter("parquet", "a trace as Parquet tables: one row per event, and the matched messages next to it",
                  "trace", ".parquet", parquet))
