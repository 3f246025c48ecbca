"""The trace file format (runtime/src/modes/trace/trace.c) and its reader: every field form of the compact
events, blocks of one buffer written apart, a lost block, long gaps in a real run, and the
64-byte events of older traces."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest

from conftest import lammps_indent, launcher, mpilens_run, run_example
from mpilens.errors import RunDirectoryError
from mpilens.trace import reader, timeline

TRACE = {"MPILENS_MODE": "profile,trace"}
DATA = Path(__file__).parent / "data"


# ------------------------------------------------------------------ a reference encoder
FIELDS = (("dst", reader.DST, -1), ("src", reader.SRC, -1), ("stag", reader.STAG, 0), ("rtag", reader.RTAG, 0),
          ("site", reader.SITE, 0))
BYTES = (("sent", reader.SENT), ("recv", reader.RECV))


def byte_count(v: int, shift: int, last: dict[str, int], name: str, repeat: bool) -> tuple[int, list[int]]:
    """The flags and words of a byte count (width 3: the function's last nonzero one)."""
    v &= 2**64 - 1
    if repeat and v != 0 and v == last[name]:
        return 3 << shift, []
    width = 0 if v == 0 else 1 if v < 2**32 else 2
    if v:  # the function's last nonzero count
        last[name] = v
    return width << shift, [v & 0xFFFFFFFF, v >> 32][:width]


def encode_late(e: np.ndarray, site: int, i: int, start: int, last_t0: int, last_comm: int, last_req: dict,
                last_of: dict, nfunc: int, thread: int) -> tuple[bytes, list[int]]:
    """A late_call record as _decode_compact leaves it (t0 its time stamp, t1 - t0 the call's
    duration, dst and stag the call's source and tag, src, rtag and recv the completion's, site
    the call's, start the ticks from the call to the completion),
    encoded as the spec's trace_kind late_call says."""
    alone = bool(int(e["fn"]) & reader.ALONE)
    fn = int(e["fn"]) & ~reader.ALONE
    t0, dur = int(e["t0"]), int(e["t1"]) - int(e["t0"])
    flags, w = reader.LATE, []
    dt = t0 - last_t0
    long = not (i > 0 and -2**31 <= dt < 2**31 and start < 2**32)
    if long:
        flags |= reader.LONG
        w += [t0 & 0xFFFFFFFF, t0 >> 32, dur & 0xFFFFFFFF, dur >> 32]
    if int(e["comm"]) != last_comm:
        flags |= reader.COMM
        w.append(int(e["comm"]))
    none = {"dst": -1, "src": -1, "stag": 0, "rtag": 0, "site": 0, "sent": 0, "recv": 0}
    call = last_of.setdefault((False, fn), dict(none)) if fn < nfunc else dict(none)
    fin = last_of.setdefault((True, fn), dict(none)) if fn < nfunc else dict(none)
    parts = [(reader.DST, int(e["dst"]), call, "src"), (reader.SRC, int(e["src"]), fin, "src"),
             (reader.STAG, int(e["stag"]), call, "rtag"), (reader.RTAG, int(e["rtag"]), fin, "rtag")]
    for bit, v, reg, name in parts:
        if (reg is fin and alone) or v == reg[name]:
            continue
        flags |= bit
        w.append(v & 0xFFFFFFFF)
        reg[name] = v
    if not alone:
        f, more = byte_count(int(e["recv"]), reader.RECV, fin, "recv", True)
        flags |= f
        w += more
    req = int(e["req"])
    own = (req >> 32) == (thread + 1) << 8
    if not alone and last_req[True] is not None and req == last_req[True] + 1:
        flags |= 3 << reader.REQ
    else:
        flags |= (1 if own else 2) << reader.REQ
        w += [req & 0xFFFFFFFF] if own else [req & 0xFFFFFFFF, req >> 32]
    if not alone:
        last_req[True] = req
    if site != call["site"]:
        flags |= reader.SITE
        w.append(site)
        call["site"] = site
    if not alone:
        w += [start & 0xFFFFFFFF, start >> 32][:2 if long else 1]
    return struct.pack("<iIHH", 0 if long else dt, 0 if long else dur, int(e["fn"]), flags), w


def encode(ev: np.ndarray, thread: int, version: int = 3, sites: list[int] | None = None,
           nfunc: int = 16, starts: list[int] | None = None) -> tuple[bytes, bytes]:
    """The fixed parts and the words of one buffer filling, written as the format says (the
    fields stored downwards from the end of the buffer). version 3 leaves out what the events
    before give (the next operation number; the peers, tags, byte counts and site of the previous
    call or completion of the same function, among the nfunc the head names);
    version 2 writes every field that is not its default. sites: each event's call site; starts:
    each late_call's ticks from its call to its completion (encode_late)."""
    fixed, words = [], []
    last_t0, last_comm = 0, 0
    last_req = {True: None, False: None}  # completions, other events
    last_of: dict[tuple[bool, int], dict[str, int]] = {}  # (completion, function): its fields
    for i, e in enumerate(ev):
        if int(e["kind"]) == reader.LATE:
            fix, w = encode_late(e, sites[i] if sites else 0, i, starts[i] if starts else 0, last_t0, last_comm,
                                 last_req, last_of, nfunc, thread)
            fixed.append(fix)
            words += w
            last_t0, last_comm = int(e["t0"]), int(e["comm"])
            continue
        t0, dur = int(e["t0"]), int(e["t1"]) - int(e["t0"])
        flags, w = int(e["kind"]), []
        dt = t0 - last_t0
        if i > 0 and -2**31 <= dt < 2**31 and dur < 2**32:
            fix_dt, fix_dur = dt, dur
        else:
            flags |= reader.LONG
            fix_dt = fix_dur = 0
            w += [t0 & 0xFFFFFFFF, t0 >> 32, dur & 0xFFFFFFFF, dur >> 32]
        last_t0 = t0
        if int(e["comm"]) != last_comm:
            flags |= reader.COMM
            w.append(int(e["comm"]))
            last_comm = int(e["comm"])
        done = int(e["kind"]) == reader.DONE
        values = {name: int(e[name]) for name, _, _ in FIELDS[:4]} | {"site": sites[i] if sites else 0}
        last = {name: absent for name, _, absent in FIELDS} | {name: 0 for name, _ in BYTES}
        if version >= 3 and int(e["kind"]) in (reader.CALL, reader.CALL_DONE, reader.DONE) and int(e["fn"]) < nfunc:
            last = last_of.setdefault((done, int(e["fn"])), last)
        fields = []
        for name, bit, _ in FIELDS:
            if values[name] != last[name]:
                flags |= bit
                fields.append(values[name] & 0xFFFFFFFF)
                last[name] = values[name]
        w += fields[:-1] if flags & reader.SITE else fields  # the site's word comes last
        for name, shift in BYTES:
            f, more = byte_count(int(e[name]), shift, last, name, version >= 3)
            flags |= f
            w += more
        req = int(e["req"])
        if req:
            own = (req >> 32) == (thread + 1) << 8
            if version >= 3 and last_req[done] is not None and req == last_req[done] + 1:
                flags |= 3 << reader.REQ
            else:
                flags |= (1 if own else 2) << reader.REQ
                w += [req & 0xFFFFFFFF] if own else [req & 0xFFFFFFFF, req >> 32]
            last_req[done] = req
        if flags & reader.SITE:
            w.append(fields[-1])
        fixed.append(struct.pack("<iIHH", fix_dt, fix_dur, int(e["fn"]), flags))
        words += w
    return b"".join(fixed), struct.pack(f"<{len(words)}I", *reversed(words))


def block(thread: int, filling: int, first: int, fixed: bytes, words: bytes, number: int, version: int = 3) -> bytes:
    head = struct.pack("<8sIIQQQIIII", b"MLTB000%d" % version, thread, len(fixed) // 12, number, 0, 0, filling, first,
                       len(words) // 4, 0)
    return head + fixed + words


def json_block(magic: bytes, obj: dict) -> bytes:
    return magic + json.dumps(obj).encode() + b"\nMLTE0001"


def events(rows: list[dict]) -> np.ndarray:
    ev = np.zeros(len(rows), dtype=reader.EVENT)
    ev["dst"] = ev["src"] = -1
    for i, r in enumerate(rows):
        for k, v in r.items():
            ev[i][k] = v
    return ev


@pytest.mark.parametrize("version", [3, 2])
def test_every_field_form_decodes_exactly(tmp_path, version):
    """Negative and long gaps, long calls, communicator changes (back to none), absent and
    present ranks and tags, 0-, 1- and 2-word byte counts (and a negative one), own and foreign
    requests, a counter's double; two threads; one filling split in two blocks written apart.
    In this runtime's blocks (3) and in those of earlier versions (2)."""
    big = 5 * 2**32
    counter = struct.unpack("<q", struct.pack("<d", -2.5))[0]
    own = (1 << 40) | 7  # thread 0's request 7
    a = events([
        dict(t0=10**12, t1=10**12 + 500, kind=1, fn=3, comm=5, dst=1, stag=9, sent=8, req=own),
        dict(t0=10**12 + 900, t1=10**12 + 900, kind=2, fn=3, comm=5, dst=1, sent=8, req=own),
        dict(t0=10**12 + 700, t1=10**12 + 1000, kind=1, fn=4, comm=0),  # before the previous: dt < 0
        dict(t0=10**12 + 3 * 2**31, t1=10**12 + 3 * 2**31 + 2**33, kind=1, fn=5, comm=6, src=0, rtag=-1,
             recv=big),  # long gap, long call
        dict(t0=10**12 + 3 * 2**31 + 2**33 + 5, t1=10**12 + 3 * 2**31 + 2**33 + 5, kind=5, fn=1, comm=0,
             sent=counter),
        dict(t0=10**12 + 3 * 2**31 + 2**33 + 9, t1=10**12 + 3 * 2**31 + 2**33 + 20, kind=2, fn=3, comm=6,
             dst=2, src=2, recv=-1, req=(3 << 40) | 2**33),  # another thread's request, past 2^32
        dict(t0=10**12 + 3 * 2**31 + 2**33 + 30, t1=10**12 + 3 * 2**31 + 2**33 + 30, kind=3, fn=2),
    ])
    b = events([dict(t0=2 * 10**12, t1=2 * 10**12 + 1, kind=1, fn=1, comm=5, dst=0, sent=1, req=(2 << 40) | 1),
                dict(t0=2 * 10**12 + 3, t1=2 * 10**12 + 3, kind=4, fn=2)])
    fa, wa = encode(a, 0, version)
    fb, wb = encode(b, 1, version)
    # filling 0 of thread 0 in two blocks, events 0-3 and 4-6: the words grow downwards, so the
    # second block's words come first in memory
    later = wa[:len(wa) - len(encode(a[:4], 0, version)[1])]
    earlier = wa[len(later):]
    head = {"rank": 0, "nranks": 1, "tick0": 0, "ns0": 0, "functions": ["f0", "f1", "f2", "f3", "f4", "f5"]}
    data = (json_block(b"MLTH0001", head)
            + block(0, 0, 4, fa[4 * 12:], later, 2, version)
            + block(1, 0, 0, fb, wb, 1, version)
            + block(0, 0, 0, fa[:4 * 12], earlier, 0, version))
    f = tmp_path / "rank-000000.bin"
    f.write_bytes(data)
    rt = reader.read_rank(f)
    assert rt.problems == []
    got = rt.events
    want = np.concatenate([a, b])
    assert got.tolist() == want.tolist()
    assert rt.thread.tolist() == [0] * len(a) + [1] * len(b)
    assert struct.unpack("<d", struct.pack("<q", int(got[4]["sent"])))[0] == -2.5

    # a lost block: the rest of its filling cannot be decoded, the other thread's events stay
    f.write_bytes(json_block(b"MLTH0001", head) + block(0, 0, 4, fa[4 * 12:], later, 2, version)
                  + block(1, 0, 0, fb, wb, 1, version))
    rt = reader.read_rank(f)
    assert rt.events.tolist() == b.tolist()
    assert any("3 events after a missing block" in p for p in rt.problems)


def test_call_done_reads_as_the_call_and_its_completion(tmp_path):
    """A call_done event (kind 7: a nonblocking call whose operation the MPI completed within it)
    reads as its call event, bytes 0, then the operation's done event at the call's end; the
    events around it keep their times (the next one's dt is from the call_done's t0)."""
    own = (1 << 40) | 3
    raw = events([
        dict(t0=5000, t1=5040, kind=1, fn=2, comm=9, dst=1, stag=4, req=(1 << 40) | 2),
        dict(t0=5100, t1=5130, kind=reader.CALL_DONE, fn=2, comm=9, dst=1, stag=4, sent=64, req=own),
        dict(t0=5200, t1=5260, kind=1, fn=3, comm=0),
    ])
    want = events([
        dict(t0=5000, t1=5040, kind=1, fn=2, comm=9, dst=1, stag=4, req=(1 << 40) | 2),
        dict(t0=5100, t1=5130, kind=1, fn=2, comm=9, dst=1, stag=4, req=own),
        dict(t0=5130, t1=5130, kind=2, fn=2, comm=9, dst=1, sent=64, req=own),
        dict(t0=5200, t1=5260, kind=1, fn=3, comm=0),
    ])
    fixed, words = encode(raw, 0)
    head = {"rank": 0, "nranks": 1, "tick0": 0, "ns0": 0, "functions": ["f0", "f1", "f2", "f3"]}
    f = tmp_path / "rank-000000.bin"
    f.write_bytes(json_block(b"MLTH0001", head) + block(0, 0, 0, fixed, words, 0))
    rt = reader.read_rank(f)
    assert rt.problems == []
    assert rt.events.tolist() == want.tolist()
    assert rt.thread.tolist() == [0] * 4 and rt.site.tolist() == [0] * 4


def test_late_calls_read_where_they_were_made(tmp_path):
    """late_call events (kind 0; a receive's call written with its completion, or alone) read as
    the call, put back among its thread's events by its start, and the completion in place; the
    trailer's late_calls (receives that never completed) likewise. Registers: a second receive
    with the same source, tag and site writes no word for them, nor for its bytes; one whose
    completion is 2^33 ticks after its call has a long time stamp. Every expected event is written
    out here, from the format's definition."""
    own = 1 << 40
    irecv, isend = 2, 1
    start = [0, 0, 0, 300, 0, 800 - 450, 0, 2**33 + 5]
    raw = events([  # as _decode_compact leaves them (encode_late)
        dict(t0=100, t1=110, kind=1, fn=isend, comm=9, dst=3, stag=7, sent=64, req=own | 1),
        dict(t0=250, t1=260, kind=reader.LATE, fn=irecv | reader.ALONE, comm=9, dst=4, stag=8, req=own | 3),
        dict(t0=300, t1=320, kind=1, fn=3, comm=9),
        dict(t0=500, t1=520, kind=reader.LATE, fn=irecv, comm=9, dst=3, stag=7, src=3, rtag=7, recv=64,
             req=own | 2),
        dict(t0=600, t1=610, kind=1, fn=3, comm=9),
        dict(t0=800, t1=812, kind=reader.LATE, fn=irecv, comm=9, dst=3, stag=7, src=3, rtag=7, recv=64,
             req=own | 4),
        dict(t0=900, t1=900, kind=2, fn=isend, comm=9, dst=3, sent=64, req=own | 1),
        dict(t0=2**33 + 1000, t1=2**33 + 1003, kind=reader.LATE, fn=irecv, comm=9, dst=-1, stag=0, src=5,
             rtag=1, recv=8, req=own | 5),
    ])
    sites = [0, 0, 0, 6, 0, 6, 0, 6]
    want = events([
        dict(t0=100, t1=110, kind=1, fn=isend, comm=9, dst=3, stag=7, sent=64, req=own | 1),
        dict(t0=200, t1=220, kind=1, fn=irecv, comm=9, src=3, rtag=7, req=own | 2),
        dict(t0=250, t1=260, kind=1, fn=irecv, comm=9, src=4, rtag=8, req=own | 3),
        dict(t0=270, t1=275, kind=1, fn=irecv, comm=9, src=6, rtag=2, req=own | 6),  # the trailer's
        dict(t0=300, t1=320, kind=1, fn=3, comm=9),
        dict(t0=450, t1=462, kind=1, fn=irecv, comm=9, src=3, rtag=7, req=own | 4),
        dict(t0=500, t1=500, kind=2, fn=irecv, comm=9, src=3, rtag=7, recv=64, req=own | 2),
        dict(t0=600, t1=610, kind=1, fn=3, comm=9),
        dict(t0=800, t1=800, kind=2, fn=irecv, comm=9, src=3, rtag=7, recv=64, req=own | 4),
        dict(t0=900, t1=900, kind=2, fn=isend, comm=9, dst=3, sent=64, req=own | 1),
        dict(t0=995, t1=998, kind=1, fn=irecv, comm=9, src=-1, rtag=0, req=own | 5),
        dict(t0=2**33 + 1000, t1=2**33 + 1000, kind=2, fn=irecv, comm=9, src=5, rtag=1, recv=8, req=own | 5),
    ])
    fixed, words = encode(raw, 0, sites=sites, nfunc=4, starts=start)
    flags = [struct.unpack_from("<iIHH", fixed, 12 * i)[3] for i in range(len(raw))]
    assert flags[5] & (reader.DST | reader.SRC | reader.STAG | reader.RTAG | reader.SITE) == 0
    assert (flags[5] >> reader.RECV) & 3 == 3 and (flags[5] >> reader.REQ) & 3 == 1
    assert flags[7] & reader.LONG
    head = {"rank": 0, "nranks": 1, "tick0": 0, "ns0": 0, "world_uid": 9, "functions": ["f0", "f1", "f2", "f3"]}
    trailer = {"tick1": 10**13, "ns1": 10**13, "complete": True, "late_calls": [[0, 270, 5, irecv, 6, 2, own | 6, 0]]}
    f = tmp_path / "rank-000000.bin"
    f.write_bytes(json_block(b"MLTH0001", head) + block(0, 0, 0, fixed, words, 0, 4) + json_block(b"MLTM0001", trailer))
    rt = reader.read_rank(f)
    assert rt.problems == []
    assert rt.events.tolist() == want.tolist()
    assert rt.site.tolist() == [0, 6, 0, 0, 0, 6, 0, 0, 0, 0, 6, 0]

    # a late call with a byte count sent is damage
    bad = bytearray(fixed)
    struct.pack_into("<H", bad, 12 * 3 + 10, flags[3] | (1 << reader.SENT))
    f.write_bytes(json_block(b"MLTH0001", head) + block(0, 0, 0, bytes(bad), words + b"\0" * 4, 0, 4))
    with pytest.raises(RunDirectoryError, match="damaged events"):
        reader.read_rank(f)


def test_repeats_follow_the_events_before(tmp_path):
    """What an event leaves out because the events before give it: the next operation number of
    the calls and, apart, of the completions (completions in between change nothing); the peers,
    tags and site of the previous call (completion) of the same function, and its last nonzero
    byte count (other functions' in between change nothing; an explicit 0 site after a known one,
    a count after a call of no bytes); nothing for a function the head does not name. Across two
    blocks of one filling, and again from nothing in the thread's next filling."""
    own = 1 << 40
    rows = [  # (event, site)
        (dict(kind=1, fn=3, comm=5, src=1, rtag=7, req=own | 10), 4),
        (dict(kind=1, fn=3, comm=5, src=1, rtag=7, req=own | 11), 4),
        (dict(kind=1, fn=2, comm=5, dst=1, stag=7, sent=8, req=own | 12), 9),
        (dict(kind=1, fn=6, comm=5), 5),  # a wait: no operation, no bytes
        (dict(kind=2, fn=3, comm=5, src=1, rtag=7, recv=8, req=own | 10), 0),
        (dict(kind=2, fn=3, comm=5, src=1, rtag=7, recv=8, req=own | 11), 0),
        (dict(kind=3, fn=1, comm=5), 0),  # a region: no site, between two calls of site 5
        (dict(kind=reader.CALL_DONE, fn=2, comm=5, dst=1, stag=7, sent=8, req=own | 13), 5),
        (dict(kind=2, fn=2, comm=5, dst=1, sent=8, req=own | 12), 0),
        (dict(kind=1, fn=2, comm=5, dst=1, stag=7, sent=2**40, req=(2 << 40) | 14), 0),  # another thread's
        (dict(kind=1, fn=2, comm=5, dst=1, stag=7, sent=2**40, req=(2 << 40) | 15), 0),
        (dict(kind=2, fn=2, comm=5, dst=1, sent=2**40, req=(2 << 40) | 15), 0),
        (dict(kind=1, fn=3, comm=5, src=2, rtag=7), 4),  # another source
        (dict(kind=1, fn=2, comm=5, dst=2, stag=7, sent=8), 9),  # its own function's previous: dst 1
        (dict(kind=1, fn=3, comm=5, src=2, rtag=7), 4),  # all as its function's previous call
        (dict(kind=1, fn=4, comm=5, dst=1, sent=100), 6),  # two functions' sizes alternate:
        (dict(kind=1, fn=2, comm=5, dst=2, stag=7, sent=8), 9),  # each repeats its own
        (dict(kind=1, fn=4, comm=5, dst=1), 6),  # no bytes: the next count repeats the 100
        (dict(kind=1, fn=4, comm=5, dst=1, sent=100), 6),
        (dict(kind=1, fn=9, comm=5, dst=1, stag=7, sent=8), 4),  # a function the head does not name:
        (dict(kind=1, fn=9, comm=5, sent=8), 0),  # every field written, the defaults left out
    ]
    ev = events([dict(t0=10**9 + 100 * i, t1=10**9 + 100 * i + (0 if r["kind"] == 2 else 30), **r)
                 for i, (r, _) in enumerate(rows)])
    sites = [st for _, st in rows]
    fixed, words = encode(ev, 0, 3, sites, nfunc=7)
    full = encode(ev, 0, 2, sites)[1]
    assert len(words) < len(full), "nothing was left out"
    nxt = ev[:3].copy()
    nxt["t0"] += 10**6
    nxt["t1"] += 10**6
    f2, w2 = encode(nxt, 0, 3, sites[:3], nfunc=7)
    # filling 0 in two blocks, events 0-5 (mid-chain of repeats) and 6-16; filling 1 in one
    later = words[:len(words) - len(encode(ev[:6], 0, 3, sites[:6], nfunc=7)[1])]
    head = {"rank": 0, "nranks": 1, "tick0": 0, "ns0": 0, "functions": [f"f{i}" for i in range(7)]}
    f = tmp_path / "rank-000000.bin"
    f.write_bytes(json_block(b"MLTH0001", head) + block(0, 0, 6, fixed[6 * 12:], later, 1)
                  + block(0, 1, 0, f2, w2, 2) + block(0, 0, 0, fixed[:6 * 12], words[len(later):], 0))
    rt = reader.read_rank(f)
    assert rt.problems == []
    # the reader gives a call_done as its call and its completion (no site)
    want = np.concatenate([ev[:7], ev[7:8], ev[7:], nxt])
    want[7]["kind"], want[7]["sent"] = reader.CALL, 0
    want[8]["kind"], want[8]["t0"], want[8]["stag"] = reader.DONE, want[8]["t1"], 0
    assert rt.events.tolist() == want.tolist()
    assert rt.site.tolist() == sites[:7] + [5, 0] + sites[8:] + sites[:3]


def test_a_repeat_with_nothing_before_it_is_damage(tmp_path):
    """A field that repeats the previous one at the start of a filling cannot be decoded: the
    block is damaged, one clear error."""
    ev = events([dict(t0=10**9, t1=10**9 + 5, kind=1, fn=1, comm=1, dst=0, sent=4)])
    fixed, words = encode(ev, 0)
    flags = struct.unpack_from("<H", fixed, 10)[0] | (3 << reader.SENT)
    fixed = fixed[:10] + struct.pack("<H", flags)
    words = words[4:]  # the sent word is the last one written: the first in memory
    head = {"rank": 0, "nranks": 1, "tick0": 0, "ns0": 0, "functions": ["f0", "f1"]}
    f = tmp_path / "rank-000000.bin"
    f.write_bytes(json_block(b"MLTH0001", head) + block(0, 0, 0, fixed, words, 0))
    with pytest.raises(reader.RunDirectoryError, match="damaged events.*none in its buffer filling"):
        reader.read_rank(f)
    f.write_bytes(json_block(b"MLTH0001", head) + block(0, 0, 0, fixed, words, 0, version=2))
    with pytest.raises(reader.RunDirectoryError, match="damaged events.*width 3"):
        reader.read_rank(f)


def test_a_byte_count_repeated_outside_calls_is_damage(tmp_path):
    """Only calls and completions of the functions the head names repeat byte counts: a region
    event or a call of another function whose count says "the same as before" is damage, even
    after a call of that count."""
    head = {"rank": 0, "nranks": 1, "tick0": 0, "ns0": 0, "functions": ["f0", "f1"]}
    for later in (dict(kind=3, fn=1), dict(kind=1, fn=5, comm=1)):
        ev = events([dict(t0=10**9, t1=10**9 + 5, kind=1, fn=1, comm=1, sent=4),
                     dict(t0=10**9 + 10, t1=10**9 + 10, sent=4, **later)])
        fixed, words = encode(ev, 0, nfunc=2)
        flags = struct.unpack_from("<H", fixed, 22)[0] | (3 << reader.SENT)
        fixed = fixed[:22] + struct.pack("<H", flags)
        words = words[4:]  # the second event's sent word: the last written, the first in memory
        f = tmp_path / "rank-000000.bin"
        f.write_bytes(json_block(b"MLTH0001", head) + block(0, 0, 0, fixed, words, 0))
        with pytest.raises(reader.RunDirectoryError, match="damaged events.*no call or completion"):
            reader.read_rank(f)


def test_a_loop_writes_only_what_changes(mpi, tmp_path):
    """ring sends and receives N messages of one size to and from its two neighbours from one
    call site each, with tag i: after the first of each, an MPI_Send event is its fixed part and
    the tag's word (flags read from the file, not through the reader), an MPI_Recv's the same
    with the receive tag; the reader gives every field back."""
    n = 30
    job = run_example(mpi, "ring", 2, tmp_path, [str(n), "100"], settings=TRACE)
    raw = (job.rundir / "trace" / "rank-000000.bin").read_bytes()
    head = json.loads(raw[8:raw.index(b"MLTE0001")])
    flags = {}
    pos = 0
    blocks = []
    while (pos := raw.find(b"MLTB0004", pos)) >= 0:
        _, count, _, _, _, filling, first, words, _ = struct.unpack_from("<IIQQQIIII", raw, pos + 8)
        fx = [struct.unpack_from("<iIHH", raw, pos + 56 + 12 * i) for i in range(count)]
        blocks.append((filling, first, fx))
        pos += 56 + 12 * count + 4 * words
    assert [b[0] for b in blocks] == [0] * len(blocks), "a short run fills one buffer"
    events = [f for _, _, fx in sorted(blocks) for f in fx]
    for name in ("MPI_Send", "MPI_Recv"):
        flags[name] = [fl for _, _, fn, fl in events if fn == head["functions"].index(name)]
        assert len(flags[name]) == n
    other = reader.LONG | reader.COMM | reader.DST | reader.SRC | reader.SITE | (3 << reader.REQ)
    for i, fl in enumerate(flags["MPI_Send"][1:], 1):
        assert fl & (other | reader.RTAG | (3 << reader.RECV)) == 0 and fl & reader.STAG, (i, hex(fl))
        assert (fl >> reader.SENT) & 3 == 3, (i, hex(fl))  # the same 100 bytes
    for i, fl in enumerate(flags["MPI_Recv"][1:], 1):
        assert fl & (other | reader.STAG | (3 << reader.SENT)) == 0 and fl & reader.RTAG, (i, hex(fl))
        assert (fl >> reader.RECV) & 3 == 3, (i, hex(fl))
    rt = reader.read_rank(job.rundir / "trace" / "rank-000000.bin")
    for name, peer, tag, size in (("MPI_Send", "dst", "stag", "sent"), ("MPI_Recv", "src", "rtag", "recv")):
        ev = rt.events[(rt.events["fn"] == head["functions"].index(name)) & (rt.events["kind"] == reader.CALL)]
        assert ev[peer].tolist() == [1] * n and ev[tag].tolist() == list(range(n)) and ev[size].tolist() == [100] * n
    sites = rt.site[(rt.events["kind"] == reader.CALL) & (rt.events["fn"] == head["functions"].index("MPI_Send"))]
    assert len(set(sites.tolist())) == 1 and sites[0] > 0


def reencode_fillings(path: Path) -> tuple[int, int]:
    """Decode each buffer filling of a rank's trace file and encode its events again with the
    reference encoder above: the file must hold exactly those bytes, fixed parts and words, in
    every filling (what the runtime leaves out is what the spec says to leave out, and nothing is
    misread). Returns the events and the fillings checked."""
    raw = path.read_bytes()
    head = json.loads(raw[8:raw.index(b"MLTE0001")])
    nfunc = len(head["functions"])
    fillings: dict[tuple[int, int], list] = {}
    pos = 0
    while (pos := raw.find(b"MLTB0004", pos)) >= 0:
        thread, count, _, _, _, filling, first, words, _ = struct.unpack_from("<IIQQQIIII", raw, pos + 8)
        start = pos + 56
        fillings.setdefault((thread, filling), []).append(
            reader._Block(thread, 4, filling, first, count, start, start + 12 * count, words))
        pos = start + 12 * count + 4 * words
    checked = 0
    for (thread, filling), blocks in sorted(fillings.items()):
        blocks.sort(key=lambda b: b.first)
        n = sum(b.count for b in blocks)
        ev = np.zeros(n, dtype=reader.EVENT)
        site = np.zeros(n, dtype=np.uint32)
        start = np.zeros(n, dtype=np.uint64)
        reader._decode_compact(memoryview(raw), blocks, ev, np.zeros(n, dtype=np.uint32), site, nfunc, start)
        fixed, words = encode(ev, thread, 3, site.tolist(), nfunc=nfunc, starts=[int(x) for x in start])
        assert fixed == b"".join(raw[b.fixed_at:b.fixed_at + 12 * b.count] for b in blocks), (thread, filling)
        # the words grow downwards: a later block's lie before an earlier one's
        assert words == b"".join(raw[b.words_at:b.words_at + 4 * b.words] for b in reversed(blocks)), (thread, filling)
        checked += n
    return checked, len(fillings)


@pytest.mark.mpi
@pytest.mark.apps
def test_lammps_trace_is_the_reference_encoding(tmp_path):
    """Debian's LAMMPS (indent, 2 ranks) traced with small buffers, so that many buffer
    fillings start over and periodic flushes split them into blocks: every filling of every rank
    is, byte for byte, what the reference encoder (written from the spec, not from the runtime)
    makes of its events."""
    mpi, args = lammps_indent(tmp_path / "indent", 1000)
    settings = {**TRACE, "MPILENS_TRACE_BUFFER_KB": "64", "MPILENS_TRACE_FLUSH_MS": "10"}
    run = mpilens_run(None, launcher(mpi, 2) + [*args, "-log", "none"], tmp_path, settings=settings).rundir
    for rank in range(2):
        events, fillings = reencode_fillings(run / "trace" / f"rank-{rank:06d}.bin")
        assert fillings >= 4 and events > 10000, (events, fillings)


def test_damaged_sizes_are_one_clear_error(tmp_path):
    a = events([dict(t0=10**9, t1=10**9 + 5, kind=1, fn=1, comm=1, dst=0, sent=4)])
    fa, wa = encode(a, 0)
    head = {"rank": 0, "nranks": 1, "tick0": 0, "ns0": 0, "functions": ["f0", "f1"]}
    f = tmp_path / "rank-000000.bin"
    f.write_bytes(json_block(b"MLTH0001", head) + block(0, 0, 0, fa, wa[:-4], 0))  # one word short
    try:
        reader.read_rank(f)
    except reader.RunDirectoryError as err:
        assert "damaged events" in str(err)
    else:
        raise AssertionError("a block whose words do not add up was read")


def test_blocks_written_while_filling_join_up(mpi, tmp_path):
    """With a 10 ms flush period the writer writes the buffer being filled many times (blocks
    of one filling); a lost middle block drops only the rest of that filling."""
    job = run_example(mpi, "sleeper", 2, tmp_path, ["-n", "40", "-s", "5"],
                      settings={**TRACE, "MPILENS_TRACE_FLUSH_MS": "10"})
    f = job.rundir / "trace" / "rank-000000.bin"
    whole = reader.read_rank(f)
    assert whole.problems == []
    raw = f.read_bytes()
    spans = []  # (start, end, filling, first, count) of each compact block
    pos = raw.index(b"MLTB0004")
    while raw.startswith(b"MLTB0004", pos):
        b = np.frombuffer(raw[pos:pos + reader.BLOCK2.itemsize], dtype=reader.BLOCK2)[0]
        end = pos + reader.BLOCK2.itemsize + 12 * int(b["count"]) + 4 * int(b["words"])
        spans.append((pos, end, int(b["filling"]), int(b["first"]), int(b["count"])))
        pos = end
    later = [s for s in spans if s[3] > 0]
    assert len(later) >= 3, f"the flushes wrote whole fillings only: {spans}"
    # the steps' allreduces are all there and in order
    allreduce = whole.functions.index("MPI_Allreduce")
    t0 = whole.events["t0"][whole.events["fn"] == allreduce]
    assert len(t0) == 40 and (np.diff(t0.astype(np.int64)) > 0).all()
    # a short run fills one buffer: every block is a piece of filling 0, in order
    assert {sp[2] for sp in spans} == {0} and [sp[3] for sp in spans] == sorted(sp[3] for sp in spans)
    # drop a middle block: what follows it cannot be decoded, what precedes it is exact
    s, e, _, first, count = later[len(later) // 2]
    f.write_bytes(raw[:s] + raw[e:])
    cut = reader.read_rank(f)
    assert cut.events.tolist() == whole.events[:first].tolist()
    assert any(f"{len(whole.events) - first - count} events after a missing block" in p for p in cut.problems)


def test_long_gaps_between_calls(mpi, tmp_path):
    """Sleeps of 1.5 s between steps: gaps longer than a 32-bit tick delta, mid-buffer."""
    job = run_example(mpi, "sleeper", 2, tmp_path, ["-n", "3", "-s", "1500"], settings=TRACE)
    tl = timeline.load(job.rundir)
    assert tl.problems == []
    r0 = tl.ev[(tl.ev["rank"] == 0) & (tl.ev["fn"] == tl.functions.index("MPI_Allreduce"))]
    gaps = np.diff(r0["t0"])
    assert len(gaps) == 2 and ((gaps > 1.45) & (gaps < 3.0)).all(), gaps
    assert ((r0["t1"] - r0["t0"]) < 1.0).all()
    m = tl.messages
    assert m.unmatched_sends == 0 and m.unmatched_recvs == 0 and len(m.send_ev) == 2 * 3


def test_older_traces_still_read():
    """A trace written with 64-byte events (\"MLTB0001\" blocks, ring 3 100, Open MPI, 2 ranks)."""
    run = DATA / "trace-v1"
    profile = json.loads((run / "profile.json").read_text())
    tl = timeline.load(run)
    assert tl.complete and tl.problems == []
    m = tl.messages
    assert m.unmatched_sends == 0 and m.unmatched_recvs == 0
    assert len(m.send_ev) == sum(e["messages"] for e in profile["matrix"]) == 6
    sends = tl.ev[tl.ev["fn"] == tl.functions.index("MPI_Send")]
    assert (sends["sent"] == 100).all() and len(sends) == 6
