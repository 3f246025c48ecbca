"""A synthetic trace of any size: the run directory of a halo exchange on a ring of ranks, with
problems planted where the caller says, written in the trace format the runtime writes (compact
events; runtime/spec/rundir.yaml), for the analysis' benchmarks and tests at sizes no test
machine can run (bench/trace_scale.py: 10^8 events of 64 ranks).

Each iteration of each rank: MPI_Irecv from its left and its right neighbour, MPI_Isend to its
right and its left (one message each way, `message_bytes`, tags 1 and 2), then MPI_Waitall, which
completes when both neighbours' messages have arrived (the four completions recorded in it), and
every `allreduce_every` iterations an MPI_Allreduce that ends when the last rank has arrived.
Iterations start together (the previous iteration's last rank sets the pace); a rank's compute
time before its calls varies by a few microseconds. Planted: `delays`, {(rank, iteration): ns},
a rank that computes that much longer before its calls in that iteration (a late sender for its
neighbours, a gap on that rank, waits at the next MPI_Allreduce).

Every value follows from the arguments (a seeded generator for the jitter), so the same
arguments write the same bytes. The events are those the generator means, which `events_of`
gives for a rank without writing anything: the tests read the files back against it.

The run directory also has the profile those events make (profile.json: each rank's calls, time
and bytes per function, its message sizes and its row of the matrix), so that `mpilens report`
takes it as it takes a real run's: each rank's statistics go into a payload in the runtime's
layout (runtime/spec/rundir.yaml) and the payloads are merged by mpilens.merge, the merge a run's
payloads go through when the job did not reach MPI_Finalize."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np

from .. import _layout as L
from .. import layout
from ..merge import merge_buffers

FUNCTIONS = ["MPI_Init", "MPI_Irecv", "MPI_Isend", "MPI_Waitall", "MPI_Allreduce", "MPI_Finalize"]
CLASSES = ["setup", "p2p", "p2p", "completion", "collective", "setup"]
INIT, IRECV, ISEND, WAITALL, ALLREDUCE, FINALIZE = range(6)
WORLD = 0x5EED  # the communicator's uid
T_START = 1_000_000_000  # ns (ticks run at 1 ns)
COMPUTE_NS = 50_000  # between iterations
LATENCY_NS = 2_000
FILLING = 1 << 16  # events per buffer filling (one block each)
ITER_CHUNK = 4096  # iterations generated at a time


def iterations_for(events: int, nranks: int, allreduce_every: int = 10) -> int:
    """The iterations that make about `events` events over all ranks."""
    per = 9 + 1 / allreduce_every
    return max(1, int(round(events / nranks / per)))


class Halo:
    """The schedule of the whole run: when each rank's iteration starts and ends (ns)."""

    def __init__(self, nranks: int, iterations: int, delays: dict[tuple[int, int], int] | None = None,
                 allreduce_every: int = 10, message_bytes: int = 4096, seed: int = 1) -> None:
        if nranks < 2:
            raise ValueError("a ring needs at least 2 ranks")
        self.nranks, self.iterations, self.every, self.bytes = nranks, iterations, allreduce_every, message_bytes
        self.delays = dict(delays or {})
        self.seed = seed
        # the iterations' starts: each starts COMPUTE_NS after the previous one's last rank ended
        self.base = np.empty(iterations + 1, dtype=np.int64)
        self.base[0] = T_START + 10_000
        for lo in range(0, iterations, ITER_CHUNK):
            hi = min(iterations, lo + ITER_CHUNK)
            rel = self._relative(lo, hi)["end"]  # (ranks, iterations): end minus the iteration's start
            step = rel.max(axis=0) + COMPUTE_NS
            self.base[lo + 1:hi + 1] = self.base[lo] + np.cumsum(step)
        self.end_ns = int(self.base[-1]) + 10_000

    def _relative(self, lo: int, hi: int) -> dict[str, np.ndarray]:
        """Times of iterations lo..hi-1 of every rank, from their iteration's start (ns)."""
        n, k = self.nranks, hi - lo
        it = np.arange(lo, hi)
        rng = np.random.default_rng([self.seed, lo])
        s = rng.integers(0, 5_000, size=(n, k), dtype=np.int64)  # each rank's own compute jitter
        for (r, i), d in self.delays.items():
            if lo <= i < hi and 0 <= r < n:
                s[r, i - lo] += d
        left, right = np.roll(s, 1, axis=0), np.roll(s, -1, axis=0)
        arr_l = np.maximum(s + 100, left + 1_000) + LATENCY_NS  # the left neighbour's send to the right
        arr_r = np.maximum(s + 500, right + 1_500) + LATENCY_NS
        w0 = s + 2_000
        w1 = np.maximum(w0, np.maximum(arr_l, arr_r)) + 500 + rng.integers(0, 300, size=(n, k), dtype=np.int64)
        red = ((it + 1) % self.every) == 0
        a0 = w1 + 1_000
        a1 = np.where(red, a0.max(axis=0) + 3_000, a0)
        end = np.where(red, a1, w1)
        return {"s": s, "w0": w0, "w1": w1, "a0": a0, "a1": a1, "end": end, "red": np.broadcast_to(red, (n, k))}

    def events_of(self, rank: int, lo: int, hi: int) -> dict[str, np.ndarray]:
        """Rank `rank`'s events of iterations lo..hi-1 in the order it records them (a call when it
        ends; the completions before the MPI_Waitall that made them): the trace's columns, times
        in ns, req the operation's number within the rank (0: none)."""
        rel = self._relative(lo, hi)
        base = self.base[lo:hi]
        s, w0, w1, a0, a1 = (rel[k][rank] + base for k in ("s", "w0", "w1", "a0", "a1"))
        red = rel["red"][rank]
        k = hi - lo
        n = self.nranks
        left, right = (rank - 1) % n, (rank + 1) % n
        per = 10  # slots per iteration: 4 posts, 4 completions, the wait, the allreduce (dropped when none)
        cols = {c: np.zeros((k, per), dtype=t) for c, t in (
            ("t0", np.int64), ("t1", np.int64), ("kind", np.uint16), ("fn", np.uint16), ("comm", np.uint32),
            ("dst", np.int32), ("src", np.int32), ("stag", np.int32), ("rtag", np.int32), ("sent", np.int64),
            ("recv", np.int64), ("req", np.uint64))}
        cols["dst"][:] = -1
        cols["src"][:] = -1
        req0 = (np.arange(lo, hi, dtype=np.uint64) * np.uint64(4) + np.uint64(1))[:, None]
        b = self.bytes
        # the posts: Irecv left (tag 1, the left's rightward message), Irecv right (tag 2), Isend right, left
        for j, (t, fn, peer, tag) in enumerate(((s + 100, IRECV, left, 1), (s + 500, IRECV, right, 2),
                                                (s + 1_000, ISEND, right, 1), (s + 1_500, ISEND, left, 2))):
            cols["t0"][:, j], cols["t1"][:, j] = t, t + (300 if fn == IRECV else 400)
            cols["kind"][:, j], cols["fn"][:, j], cols["comm"][:, j] = L.TRACE_KIND_CALL, fn, WORLD
            if fn == IRECV:
                cols["src"][:, j], cols["rtag"][:, j] = peer, tag
            else:
                cols["dst"][:, j], cols["stag"][:, j] = peer, tag
            cols["req"][:, j] = req0[:, 0] + np.uint64(j)
            # its completion, inside the MPI_Waitall
            d = 4 + j
            cols["t0"][:, d] = cols["t1"][:, d] = w1 - 100
            cols["kind"][:, d], cols["fn"][:, d], cols["comm"][:, d] = L.TRACE_KIND_DONE, fn, WORLD
            if fn == IRECV:
                cols["src"][:, d], cols["rtag"][:, d], cols["recv"][:, d] = peer, tag, b
            else:
                cols["dst"][:, d], cols["sent"][:, d] = peer, b
            cols["req"][:, d] = cols["req"][:, j]
        cols["t0"][:, 8], cols["t1"][:, 8], cols["kind"][:, 8], cols["fn"][:, 8] = w0, w1, L.TRACE_KIND_CALL, WAITALL
        cols["t0"][:, 9], cols["t1"][:, 9], cols["kind"][:, 9], cols["fn"][:, 9] = a0, a1, L.TRACE_KIND_CALL, ALLREDUCE
        cols["comm"][:, 9], cols["sent"][:, 9], cols["recv"][:, 9] = WORLD, 8, 8
        keep = np.ones((k, per), dtype=bool)
        keep[:, 9] = red
        return {c: v[keep] for c, v in cols.items()}


def _encode_filling(c: dict[str, np.ndarray], number: int, filling: int) -> bytes:
    """One buffer filling as a block of compact events (version 2: every field that is not its
    default, the communicator when it changes, deltas of time from the event before)."""
    n = len(c["t0"])
    t0, dur = c["t0"], c["t1"] - c["t0"]
    dt = np.diff(t0, prepend=t0[0])
    long = np.zeros(n, dtype=bool)
    long[0] = True
    long |= (dt < -2**31) | (dt >= 2**31) | (dur >= 2**32)
    prev_comm = np.r_[np.uint32(0), c["comm"][:-1]]
    has = {"comm": c["comm"] != prev_comm, "dst": c["dst"] != -1, "src": c["src"] != -1, "stag": c["stag"] != 0,
           "rtag": c["rtag"] != 0, "sent": c["sent"] != 0, "recv": c["recv"] != 0, "req": c["req"] != 0}
    if (c["sent"] >= 2**32).any() or (c["recv"] >= 2**32).any() or (c["req"] >= 2**32).any():
        raise ValueError("byte counts and operation numbers of synthetic traces stay under 2^32")
    flags = c["kind"].astype(np.uint16) | np.where(long, L.TRACE_EVENT_LONG, 0).astype(np.uint16)
    for name, bit in (("comm", L.TRACE_EVENT_COMM), ("dst", L.TRACE_EVENT_DST), ("src", L.TRACE_EVENT_SRC),
                      ("stag", L.TRACE_EVENT_STAG), ("rtag", L.TRACE_EVENT_RTAG)):
        flags |= np.where(has[name], bit, 0).astype(np.uint16)
    for name, shift in (("sent", L.TRACE_EVENT_SENT), ("recv", L.TRACE_EVENT_RECV), ("req", L.TRACE_EVENT_REQ)):
        flags |= (has[name].astype(np.uint16) << np.uint16(shift))  # width 1 (req: one word, this thread's)
    t0u, duru = t0.astype(np.uint64), dur.astype(np.uint64)
    lo32 = np.uint64(0xFFFFFFFF)
    words = np.stack([t0u & lo32, t0u >> np.uint64(32), duru & lo32, duru >> np.uint64(32),
                      c["comm"].astype(np.uint64), c["dst"].astype(np.int64).astype(np.uint64) & lo32,
                      c["src"].astype(np.int64).astype(np.uint64) & lo32,
                      c["stag"].astype(np.int64).astype(np.uint64) & lo32,
                      c["rtag"].astype(np.int64).astype(np.uint64) & lo32,
                      c["sent"].astype(np.uint64), c["recv"].astype(np.uint64), c["req"]], axis=1).astype(np.uint32)
    mask = np.stack([long, long, long, long] + [has[k] for k in ("comm", "dst", "src", "stag", "rtag", "sent",
                                                                  "recv", "req")], axis=1)
    flat = words[mask][::-1]  # the fields are stored downwards from the end of the buffer
    fixed = np.zeros(n, dtype=L.TRACE_FIXED_DTYPE)
    fixed["dt"] = np.where(long, 0, dt).astype(np.int32)
    fixed["dur"] = np.where(long, 0, dur).astype(np.uint32)
    fixed["fn"], fixed["flags"] = c["fn"], flags
    head = np.zeros(1, dtype=L.TRACE_BLOCK_DTYPE)
    head["magic"], head["thread"], head["count"], head["number"] = L.MAGIC_TRACE_EVENTS_V2, 0, n, number
    head["tick"] = head["ns"] = int(t0[0])
    head["filling"], head["first"], head["words"] = filling, 0, len(flat)
    return head.tobytes() + fixed.tobytes() + np.ascontiguousarray(flat).tobytes()


class _Statistics:
    """One rank's profile statistics, summed over its events as they are generated: per function
    its calls, time (the calls' durations), shortest and longest call and bytes (a completion's
    bytes count for the function that started the operation, as the runtime counts them); per
    function and message-size bin its calls; per destination the messages sent and their bytes."""

    def __init__(self, nranks: int) -> None:
        nf = len(FUNCTIONS)
        self.calls, self.ns = np.zeros(nf, np.int64), np.zeros(nf, np.int64)
        self.min_ns, self.max_ns = np.full(nf, np.iinfo(np.int64).max), np.zeros(nf, np.int64)
        self.sent, self.recv = np.zeros(nf, np.int64), np.zeros(nf, np.int64)
        self.size_calls = np.zeros((nf, L.SIZE_BINS), np.int64)
        self.size_ns = np.zeros((nf, L.SIZE_BINS), np.int64)
        self.messages, self.bytes = np.zeros(nranks, np.int64), np.zeros(nranks, np.int64)

    def add(self, ev: dict[str, np.ndarray]) -> None:
        nf = len(FUNCTIONS)
        fn = ev["fn"].astype(np.int64)
        call = ev["kind"] == L.TRACE_KIND_CALL
        dur = ev["t1"] - ev["t0"]
        self.calls += np.bincount(fn[call], minlength=nf)
        self.ns += np.bincount(fn[call], weights=dur[call], minlength=nf).astype(np.int64)
        for f in np.unique(fn[call]):
            d = dur[call & (fn == f)]
            self.min_ns[f] = min(self.min_ns[f], int(d.min()))
            self.max_ns[f] = max(self.max_ns[f], int(d.max()))
        self.sent += np.bincount(fn, weights=ev["sent"], minlength=nf).astype(np.int64)
        self.recv += np.bincount(fn, weights=ev["recv"], minlength=nf).astype(np.int64)
        # a message's size is the call's (the post's peer, the completion's bytes: every message
        # of the generator has message_bytes, and the MPI_Allreduce its own 8)
        moved = np.maximum(ev["sent"], ev["recv"])
        sized = moved > 0
        bins = np.floor(np.log2(np.maximum(moved, 1))).astype(np.int64) + 1  # [2^(k-1), 2^k): bin k
        np.add.at(self.size_calls, (fn[sized], bins[sized]), 1)
        np.add.at(self.size_ns, (fn[sized], bins[sized]), dur[sized])
        sends = (ev["kind"] == L.TRACE_KIND_DONE) & (ev["sent"] > 0) & (ev["dst"] >= 0)
        np.add.at(self.messages, ev["dst"][sends], 1)
        np.add.at(self.bytes, ev["dst"][sends], ev["sent"][sends])

    def payload(self, rank: int, nranks: int, wall_ns: int, init_ns: int) -> bytes:
        """The rank's payload, in the runtime's layout (version 4)."""
        def string(b: bytes) -> bytes:
            return struct.pack("<H", len(b)) + b

        def table(s: struct.Struct, records: list[tuple], named: bool = False) -> bytes:
            out = [struct.pack("<I", len(records))]
            out += [s.pack(*r[:-1]) + string(r[-1]) if named else s.pack(*r) for r in records]
            return b"".join(out)

        called = [f for f in range(len(FUNCTIONS)) if self.calls[f]]
        classes = {name: code for code, name in L.FUNCTION_CLASS_NAMES.items()}
        functions = [(f, classes[CLASSES[f]], FUNCTIONS[f].encode()) for f in called]
        stats = [(0, f, int(self.calls[f]), int(self.ns[f]), int(self.min_ns[f]), int(self.max_ns[f]),
                  int(self.calls[f]), 0, int(self.sent[f]), int(self.recv[f])) for f in called]
        sizes = [(f, b, int(self.size_calls[f, b]), int(self.size_ns[f, b]))
                 for f, b in zip(*np.nonzero(self.size_calls))]
        matrix = [(d, int(self.messages[d]), int(self.bytes[d])) for d in np.nonzero(self.messages)[0]]
        body = b"".join([string(b"synthetic"), table(L.PAYLOAD_REGION, [], True),
                         table(L.PAYLOAD_FUNCTION, functions, True), table(L.PAYLOAD_STAT, stats),
                         table(L.PAYLOAD_SIZE, sizes), table(L.PAYLOAD_PEER, matrix),
                         table(L.PAYLOAD_COUNTER_NAME, [], True), table(L.PAYLOAD_COUNTER, []),
                         L.PAYLOAD_CALLSITES.pack(0), table(L.PAYLOAD_MODULE, [], True),
                         table(L.PAYLOAD_SITE, []), table(L.PAYLOAD_FRAME, []),
                         L.PAYLOAD_TAIL.pack(0, 0, L.MAGIC_PAYLOAD_END)])
        head = dict(magic=L.MAGIC_PAYLOAD, total_length=L.PAYLOAD_HEAD.size + len(body), rank=rank, nranks=nranks,
                    complete=1, reason=L.END_REASON_FINALIZE, signo=0, nthreads=1, wall_ns=wall_ns,
                    mpi_ns=int(self.ns.sum()), mpi_se_ns=0, init_ns=init_ns, dropped_requests=0, dropped_regions=0,
                    region_mismatch=0, requests_outstanding=0, recv_unknown=0)
        return L.PAYLOAD_HEAD.pack(*(head[f] for f in L.PAYLOAD_HEAD_FIELDS)) + body


def _json_block(magic: bytes, obj: dict) -> bytes:
    return magic + json.dumps(obj).encode() + L.MAGIC_TRACE_JSON_END


def write(rundir: str | Path, halo: Halo, progress=None) -> int:
    """Write the run directory of `halo` (meta.json, trace/rank-NNNNNN.bin and profile.json; the
    directory must not exist); returns the events written."""
    out = Path(rundir)
    layout.folder(out, "trace").mkdir(parents=True)
    n = halo.nranks
    meta = {"schema": L.SCHEMA_META, "tool": {"name": "mpilens"}, "nranks": n, "hosts": ["synthetic"],
            "rank_host": [0] * n, "program": "synthetic halo exchange (mpilens.trace.synthetic)",
            "command": ["synthetic", str(n), str(halo.iterations)],
            "config": {"MPILENS_MODE": "trace", "MPILENS_TRACE_RANKS": "", "MPILENS_TRACE_WINDOW": "",
                       "MPILENS_TRACE_PCONTROL": "0", "MPILENS_TRACE_EXCLUDE": ""},
            "timer": "tsc", "started_by": "MPI_Init", "finalized": True}
    layout.meta_file(out).write_text(json.dumps(meta, indent=1))
    head = {"nranks": n, "mpi": "synthetic", "tick0": T_START, "ns0": T_START, "world_uid": WORLD,
            "realtime_ns1": 1_790_000_000_000_000_000 + T_START, "tick1": T_START + 1_000, "ns1": T_START + 1_000,
            "offset_ns": [], "functions": FUNCTIONS, "classes": CLASSES}
    total = 0
    payloads: list[tuple[int, bytes]] = []
    for rank in range(n):
        stats = _Statistics(n)
        if progress:
            progress(f"writing rank {rank}")
        path = layout.path(out, "trace", rank=rank)
        with open(path, "wb") as f:
            f.write(L.MAGIC_TRACE_HEAD[:8] + json.dumps({"rank": rank, **head}).encode() + L.MAGIC_TRACE_JSON_END)
            filling = number = 0
            pending: list[dict[str, np.ndarray]] = []
            queued = 0

            def flush(force: bool) -> None:
                nonlocal pending, queued, filling, number
                if not pending:
                    return
                cols = {k: np.concatenate([p[k] for p in pending]) for k in pending[0]}
                at = 0
                while len(cols["t0"]) - at >= FILLING or (force and at < len(cols["t0"])):
                    part = {k: v[at:at + FILLING] for k, v in cols.items()}
                    f.write(_encode_filling(part, number, filling))
                    filling += 1
                    number += 1
                    at += len(part["t0"])
                rest = {k: v[at:] for k, v in cols.items()}
                pending, queued = ([rest], len(rest["t0"])) if len(rest["t0"]) else ([], 0)

            for lo in range(0, halo.iterations, ITER_CHUNK):
                ev = halo.events_of(rank, lo, min(halo.iterations, lo + ITER_CHUNK))
                total += len(ev["t0"])
                stats.add(ev)
                pending.append(ev)
                queued += len(ev["t0"])
                if queued >= FILLING:
                    flush(False)
            flush(True)
            trailer = {"rank": rank, **head, "tick1": halo.end_ns, "ns1": halo.end_ns, "regions": [[-1, ""]],
                       "counters": [], "comms": [[WORLD, list(range(n)), []]], "comms_dropped": 0, "late_calls": [],
                       "sites": [], "site_modules": [], "threads": 1, "complete": True}
            f.write(_json_block(L.MAGIC_TRACE_TRAILER, trailer))
        payloads.append((rank, stats.payload(rank, n, halo.end_ns - T_START, 10_000)))
    profile, problems = merge_buffers(payloads, nranks=n, mpi="synthetic")
    if profile is None or problems:
        raise RuntimeError(f"the synthetic payloads do not merge: {problems}")
    layout.path(out, "profile").write_text(json.dumps(profile, indent=1))
    return total
