"""`mpilens export perfetto`: Perfetto's protobuf trace, read back with the perfetto package's own
generated protobuf classes (never with the writer's code), against what the programs did: their
calls, messages, regions, I/O, the counters and memory the run measured, and the late sender of a
program that makes one."""

from __future__ import annotations

import collections
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from conftest import ROOT, _layout, run_example, sources
from mpilens import cli

pb = pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2")

INCREMENTAL = 64  # the sequence-scoped clock the writer uses: each timestamp a delta from the previous
BOOTTIME = 6


@dataclass
class Event:
    """One TrackEvent as read back: absolute time (ns), its track, type, name, category, args, flows."""

    ts: int
    track: int
    type: int
    name: str | None
    category: str | None
    args: dict
    flows: list
    terminating: list
    source: tuple | None
    counter: float | None
    seq: int


@dataclass
class Decoded:
    tracks: dict = field(default_factory=dict)  # uuid -> TrackDescriptor
    events: list = field(default_factory=list)
    sequences: dict = field(default_factory=dict)  # id -> flags of its packets, in order

    def rank_of(self, track: int) -> int:
        """The rank of a track: its process's pid - 1."""
        d = self.tracks[track]
        while not d.HasField("process"):
            d = self.tracks[d.parent_uuid]
        return d.process.pid - 1

    def slices(self, track: int | None = None) -> list[tuple[int, int, Event]]:
        """(begin, end, begin event) of each slice, per track by nesting (checked)."""
        out, stacks = [], collections.defaultdict(list)
        for e in self.events:  # in file order: each sequence's packets are in time order
            if e.type == 1:
                stacks[e.track].append(e)
            elif e.type == 2:
                b = stacks[e.track].pop()
                assert e.ts >= b.ts
                out.append((b.ts, e.ts, b))
        assert not any(stacks.values()), "a slice without its end"
        return [s for s in out if track is None or s[2].track == track]


def decode(path: Path) -> Decoded:
    """Read a Perfetto trace with perfetto's generated classes and Perfetto's rules: interned data and
    defaults per sequence, the sequence's incremental clock set by its first packet's clock snapshot."""
    trace = pb.Trace.FromString(path.read_bytes())
    out = Decoded()
    state: dict[int, dict] = {}
    for p in trace.packet:
        seq = p.trusted_packet_sequence_id
        assert seq > 0
        if p.HasField("track_descriptor"):
            out.tracks[p.track_descriptor.uuid] = p.track_descriptor
            continue
        out.sequences.setdefault(seq, []).append(p.sequence_flags)
        if p.sequence_flags & pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED:
            assert seq not in state, "a sequence cleared twice"
            clocks = {c.clock_id: c for c in p.clock_snapshot.clocks}
            assert clocks[INCREMENTAL].is_incremental and clocks[INCREMENTAL].unit_multiplier_ns == 1
            assert clocks[BOOTTIME].timestamp == clocks[INCREMENTAL].timestamp
            assert p.trace_packet_defaults.timestamp_clock_id == INCREMENTAL
            defaults = p.trace_packet_defaults.track_event_defaults
            state[seq] = {"clock": clocks[INCREMENTAL].timestamp, "names": {}, "cats": {}, "ann": {}, "strings": {},
                          "locs": {}, "track": defaults.track_uuid if defaults.HasField("track_uuid") else None}
        else:
            assert seq in state and p.sequence_flags == pb.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE
        s = state[seq]
        i = p.interned_data
        s["names"].update({e.iid: e.name for e in i.event_names})
        s["cats"].update({e.iid: e.name for e in i.event_categories})
        s["ann"].update({e.iid: e.name for e in i.debug_annotation_names})
        s["strings"].update({e.iid: e.str.decode() for e in i.debug_annotation_string_values})
        s["locs"].update({e.iid: (e.file_name, e.function_name, e.line_number) for e in i.source_locations})
        assert not p.HasField("timestamp_clock_id")
        s["clock"] += p.timestamp  # deltas: never backwards (unsigned)
        if not p.HasField("track_event"):
            continue
        te = p.track_event
        args = {}
        for a in te.debug_annotations:
            which = a.WhichOneof("value")
            args[s["ann"][a.name_iid]] = s["strings"][a.string_value_iid] if which == "string_value_iid" \
                else getattr(a, which)
        counter = te.counter_value if te.HasField("counter_value") else \
            te.double_counter_value if te.HasField("double_counter_value") else None
        out.events.append(Event(
            s["clock"], te.track_uuid if te.HasField("track_uuid") else s["track"], te.type,
            s["names"][te.name_iid] if te.HasField("name_iid") else None,
            ",".join(s["cats"][c] for c in te.category_iids) or None, args, list(te.flow_ids),
            list(te.terminating_flow_ids), s["locs"].get(te.source_location_iid), counter, seq))
    assert all(e.track in out.tracks for e in out.events), "an event on a track no descriptor names"
    return out


def export(rundir: Path, out: Path, *more: str) -> Path:
    """`mpilens export perfetto RUN -o OUT`, twice: the same bytes both times."""
    assert cli.main(["export", "perfetto", str(rundir), "-o", str(out), "--quiet", *more]) == 0
    again = out.with_name(out.name + ".again")
    assert cli.main(["export", "perfetto", str(rundir), "-o", str(again), "--quiet", *more]) == 0
    assert again.read_bytes() == out.read_bytes()
    return out


def threads_of(d: Decoded) -> dict[int, int]:
    """rank -> uuid of its main thread's track (tid == pid), checking the process and thread names."""
    main = {}
    for uuid, t in d.tracks.items():
        if t.HasField("process"):
            assert re.fullmatch(rf"rank {t.process.pid - 1}( \(.+\))?", t.process.process_name)
        if t.HasField("thread"):
            parent = d.tracks[t.parent_uuid]
            assert parent.process.pid == t.thread.pid
            if t.thread.tid == t.thread.pid:
                assert t.thread.thread_name == f"rank {t.thread.pid - 1}"
                main[t.thread.pid - 1] = uuid
    return main


def check_ring(d: Decoded, np_: int, n: int, size: int, profile: dict) -> None:
    """ring.c: per rank n MPI_Send and n MPI_Recv of size bytes (tags 0..n-1) inside region "ring",
    one MPI_Allreduce inside region "check"; one flow per message, n per pair (r -> r + 1)."""
    main = threads_of(d)
    assert sorted(main) == list(range(np_))
    for seq_flags in d.sequences.values():
        assert seq_flags[0] == 1 and set(seq_flags[1:]) <= {2}
    sends, recvs = {}, {}  # flow id -> (rank, function)
    wall = {r["rank"]: r["wall_time_s"] for r in profile["ranks"]}
    for r in range(np_):
        right, left = (r + 1) % np_, (r - 1) % np_
        sl = d.slices(main[r])
        names = collections.Counter(e.name for _, _, e in sl)
        assert names["MPI_Send"] == names["MPI_Recv"] == n and names["MPI_Allreduce"] == 1, names
        assert names["ring"] == names["check"] == 1
        assert {e.category for _, _, e in sl if e.name.startswith("MPI_")} == {"mpi"}
        assert {e.category for _, _, e in sl if e.name in ("ring", "check")} == {"region"}
        ring = next((b, z) for b, z, e in sl if e.name == "ring")
        check = next((b, z) for b, z, e in sl if e.name == "check")
        tags = []
        for b, z, e in sl:
            if e.name in ("MPI_Send", "MPI_Recv"):
                assert ring[0] <= b <= z <= ring[1]  # nested in its region
            if e.name == "MPI_Send":
                assert e.args.get("bytes_sent") == size and e.args.get("dst") == right
                tags.append(e.args.get("send_tag", 0))  # left out when 0
                assert len(e.flows) == 1 and not e.terminating
                sends[e.flows[0]] = r
            elif e.name == "MPI_Recv":
                assert e.args.get("bytes_recv") == size and e.args.get("src") == left
                assert len(e.terminating) == 1 and not e.flows
                recvs[e.terminating[0]] = r
            elif e.name == "MPI_Allreduce":
                assert check[0] <= b <= z <= check[1]
        assert sorted(tags) == list(range(n))
        # the rank's slices lie within its run (MPI_Init to MPI_Finalize), in time order
        begins = [b for b, _, _ in sl]
        assert max(z for _, z, _ in sl) - min(begins) <= wall[r] * 1e9 + 1000
    assert sorted(sends) == sorted(recvs) and len(sends) == n * np_
    assert collections.Counter((sends[f], recvs[f]) for f in sends) == {(r, (r + 1) % np_): n for r in range(np_)}


# ------------------------------------------------------------------------------- fast tier
@pytest.mark.parametrize("src", sources())
def test_ring(src, tmp_path):
    job = src.run("ring-trace", tmp_path)
    out = export(job.rundir, tmp_path / "ring.perfetto-trace")
    n, size = int(job.args[0]), int(job.args[1])
    check_ring(decode(out), job.np, n, size, job.profile)


@pytest.mark.parametrize("src", sources())
def test_call_sites_are_source_locations(src, tmp_path):
    """--call-sites: each call names the line of ring.c that made it."""
    job = src.run("ring-trace", tmp_path)
    d = decode(export(job.rundir, tmp_path / "ring.perfetto-trace", "--call-sites"))
    lines = (ROOT / "examples" / "c" / "ring.c").read_text().splitlines()
    calls = [e for _, _, e in d.slices() if e.category == "mpi"]
    assert calls and all(e.source is not None for e in calls)
    for e in calls:
        file, function, line = e.source
        assert file.endswith("ring.c") and function == "main" and e.name in lines[line - 1], (e.name, e.source)


@pytest.mark.parametrize("src", sources())
def test_late_sender_is_an_instant(src, tmp_path):
    """patterns late_sender: rank 0 waits in MPI_Recv for rank 1, which sends only after computing.
    Each repetition where it waited is a "late sender" instant on rank 0's main thread, within its
    MPI_Recv, as long as the program's own clock says; and the ranks' calls are as far apart as the
    program printed (the same clock on one host)."""
    job = src.run("late_sender", tmp_path)
    d = decode(export(job.rundir, tmp_path / "late.perfetto-trace"))
    main = threads_of(d)
    enter = {(int(r), int(k)): float(t) for r, k, t in
             re.findall(r"^patterns: rank (\d+) rep (\d+) enter ([\d.]+)$", job.stdout, re.M)}
    reps = int(job.args[2])
    wait = {k: enter[(1, k)] - enter[(0, k)] for k in range(reps)}
    recv = [(b, z) for b, z, e in d.slices(main[0]) if e.name == "MPI_Recv"]
    send = [(b, z) for b, z, e in d.slices(main[1]) if e.name == "MPI_Send"]
    assert len(recv) == len(send) == reps
    # rank 1 entered MPI_Send as long after rank 0 entered MPI_Recv as it printed, to 0.2 ms; but a
    # rank can lose its CPU between its clock and its call (0.35 ms once on a loaded machine): one
    # repetition may be off by up to 10 ms, not two
    off = sorted(abs((send[k][0] - recv[k][0]) * 1e-9 - wait[k]) for k in range(reps))
    assert off[-1] < 1e-2 and all(x < 2e-4 for x in off[:-1]), off
    instants = [e for e in d.events if e.type == 3 and e.category == "finding" and e.name == "late sender"
                and "(tag 99)" not in e.args["message"]]
    assert all(e.track == main[0] for e in instants)
    for k, w in wait.items():
        if w <= 2e-3:
            continue
        mine = [e for e in instants if recv[k][0] <= e.ts <= recv[k][1]]
        assert len(mine) == 1, (k, w, [e.args for e in instants])
        assert mine[0].args["duration_ns"] * 1e-9 == pytest.approx(w, rel=0.1, abs=5e-4)
        assert mine[0].args["bytes"] == 4096 and mine[0].args["message"].startswith("Late sender: rank 0 waited")


# ------------------------------------------------------------------------------- MPI tier
def test_ring_now(mpi, tmp_path):
    job = run_example(mpi, "ring", 4, tmp_path, ["6", "3000"], settings={"MPILENS_MODE": "profile,trace"})
    check_ring(decode(export(job.rundir, tmp_path / "r.perfetto-trace")), 4, 6, 3000, job.profile)


def series_records(rundir: Path, rank: int) -> int:
    """Snapshots in a rank's counters time series, from the file's layout (docs/run-directory.md):
    a 64-byte header, then per snapshot t_ns, final and nv int64."""
    import json

    nv = json.loads((rundir / "counters" / "layout.json").read_text())["nv"]
    raw = (rundir / "counters" / f"rank-{rank:06d}.bin").read_bytes()
    return (len(raw) - 64) // (16 + 8 * nv)


def memory_samples(rundir: Path, rank: int) -> int:
    """Residency samples in a rank's memory file (64-byte header, its record size at byte 24; records:
    kind u16 at 0, PSS i64 at 16), those a timeline has: samples and the marks of MPI_Init and
    MPI_Finalize, PSS read."""
    raw = (rundir / "memory" / f"rank-{rank:06d}.bin").read_bytes()
    kinds = {_layout.MEM_KIND_SAMPLE, _layout.MEM_KIND_INIT_BEGIN, _layout.MEM_KIND_INIT_END, _layout.MEM_KIND_FINAL,
             _layout.MEM_KIND_FINI_BEGIN}
    size, = struct.unpack_from("<I", raw, 24)
    n = 0
    for at in range(64, len(raw) - size + 1, size):
        kind, = struct.unpack_from("<H", raw, at)
        pss, = struct.unpack_from("<q", raw, at + 16)
        n += kind in kinds and pss >= 0
    return n


def test_counters_memory_and_io(mpi, tmp_path):
    """sleeper -n 10 -w FILE on 3 ranks, with counters and memory modes: per rank 10 MPI_Sendrecv of
    256 bytes to the right neighbour (10 flows per pair), 10 MPI_File_write_at at (step * 3 + rank) *
    256; counter tracks with one sample per snapshot (their bytes and messages adding up to the
    program's) and per memory sample, on the timeline of the run."""
    steps, np_ = 10, 3
    job = run_example(mpi, "sleeper", np_, tmp_path, ["-n", str(steps), "-s", "20", "-w", str(tmp_path / "io.dat")],
                      settings={"MPILENS_MODE": "profile,trace,counters,memory", "MPILENS_SNAPSHOT_MS": "20",
                                "MPILENS_MEMORY_PERIOD_MS": "10"})
    d = decode(export(job.rundir, tmp_path / "s.perfetto-trace"))
    main = threads_of(d)
    counters = {uuid: t for uuid, t in d.tracks.items() if t.HasField("counter")}
    samples = collections.defaultdict(list)
    for e in d.events:
        if e.type == 4:
            samples[e.track].append(e)
    sends, recvs = {}, {}
    for r in range(np_):
        sl = d.slices(main[r])
        span = (min(b for b, _, _ in sl), max(z for _, z, _ in sl))
        sr = [e for _, _, e in sl if e.name == "MPI_Sendrecv"]
        assert len(sr) == steps and all(e.args["bytes_sent"] == 256 and e.args["dst"] == (r + 1) % np_ for e in sr)
        sends.update({f: r for e in sr for f in e.flows})
        recvs.update({f: r for e in sr for f in e.terminating})
        io = [e for e in d.events if e.type == 3 and e.category == "io" and e.track == main[r]]
        assert {e.args["offset"] for e in io} >= {(k * np_ + r) * 256 for k in range(steps)}
        assert all(e.args["file"] == str(tmp_path / "io.dat") for e in io)
        mine = {t.name: uuid for uuid, t in counters.items() if d.rank_of(uuid) == r}
        for name in ("memory: process (PSS)", "memory: MPI", "memory: application"):
            assert len(samples[mine[name]]) == memory_samples(job.rundir, r), name
            assert counters[mine[name]].counter.unit == pb.CounterDescriptor.UNIT_SIZE_BYTES
        for name, total in (("BYTES_SENT_USER", 256 * steps), ("MESSAGES_SENT_USER", steps),
                            ("BYTES_RECEIVED_USER", 256 * steps)):
            s = samples[mine[f"counters: {name}"]]
            assert len(s) == series_records(job.rundir, r) and sum(e.counter for e in s) == total, name
        # every sample on the run's timeline. A snapshot's change is drawn from its interval's
        # start: the first at the end of the MPI's own MPI_Init (the tool's set-up follows, before
        # the rank's first call), the others until MPI_Finalize. Memory's first sample is at the
        # entry of MPI_Init, as long before as the profile says MPI_Init took; its last in MPI_Finalize.
        prof = next(x for x in job.profile["ranks"] if x["rank"] == r)
        init, wall = samples[mine["counters: MPI_CALLS"]][0].ts, prof["wall_time_s"] * 1e9
        assert init <= span[0] and span[1] <= init + wall + 1e6
        for name, uuid in mine.items():
            ts = [e.ts for e in samples[uuid]]
            assert ts == sorted(ts)
            if name.startswith("counters: "):
                assert ts[0] == init and ts[-1] <= init + wall + 1e6, name
            else:
                # within a tenth of MPI_Init's time (a sample placed at its end would be off by all
                # of it): the clock readings around MPI_Init are apart by a preemption under the
                # parallel tests' load (8 ms once, MPI_Init taking 196 ms)
                assert (init - ts[0]) * 1e-9 == pytest.approx(prof["init_time_s"],
                                                              abs=max(2e-3, 0.1 * prof["init_time_s"])), name
                assert span[1] <= ts[-1] < init + wall + 2e9, name
    assert collections.Counter((sends[f], recvs[f]) for f in sends) == {(r, (r + 1) % np_): steps for r in range(np_)}


def test_user_counters(mpi, tmp_path):
    """counters.c: rank r adds r + 1 to "cells" and sets "efficiency" to 1 / (r + 1) + i in step i of
    region "step", and adds 0.5 to "setup" once: counter tracks of each rank with those values."""
    iters = 5
    job = run_example(mpi, "counters", 2, tmp_path, [str(iters), "1000"], settings={"MPILENS_MODE": "profile,trace"})
    d = decode(export(job.rundir, tmp_path / "c.perfetto-trace"))
    main = threads_of(d)
    for r in range(2):
        values = {t.name: [e.counter for e in d.events if e.track == uuid]
                  for uuid, t in d.tracks.items() if t.HasField("counter") and d.rank_of(uuid) == r}
        assert values == {"cells": [(r + 1) * (i + 1) for i in range(iters)],
                          "efficiency": [pytest.approx(1 / (r + 1) + i) for i in range(iters)], "setup": [0.5]}
        steps = [e for _, _, e in d.slices(main[r]) if e.name == "step"]
        assert len(steps) == iters and {e.category for e in steps} == {"region"}


def test_threads(mpi, tmp_path):
    """threads.c on 2 ranks: 4 threads per rank, each in region "exchange", K = 10 messages each way
    plus one handed to the next thread; per rank 20 MPI_Send and MPI_Recv, 24 MPI_Isend and
    MPI_Irecv, 20 MPI_Waitall, 8 MPI_Wait; 4 * (K + 1) flows each way, from a send call to the call
    that completed the receive, on whichever thread completed it."""
    k = 10
    job = run_example(mpi, "threads", 2, tmp_path, [str(k), "2048"], settings={"MPILENS_MODE": "profile,trace"})
    if "MPI_THREAD_MULTIPLE not provided" in job.stdout:
        pytest.skip(job.stdout.strip())
    d = decode(export(job.rundir, tmp_path / "t.perfetto-trace"))
    threads = [t for t in d.tracks.values() if t.HasField("thread")]
    assert len({t.thread.tid for t in threads}) == len(threads)
    sends, ends = {}, {}
    for r in range(2):
        mine = [uuid for uuid, t in d.tracks.items() if t.HasField("thread") and t.thread.pid == r + 1]
        assert len(mine) == 5  # the main thread and 4 others
        sl = [s for uuid in mine for s in d.slices(uuid)]
        names = collections.Counter(e.name for _, _, e in sl)
        assert {n: names[n] for n in ("MPI_Send", "MPI_Recv", "MPI_Isend", "MPI_Irecv", "MPI_Waitall", "MPI_Wait",
                                      "exchange")} == {"MPI_Send": 20, "MPI_Recv": 20, "MPI_Isend": 24,
                                                       "MPI_Irecv": 24, "MPI_Waitall": 20, "MPI_Wait": 8,
                                                       "exchange": 4}
        assert len({e.track for _, _, e in sl if e.name == "exchange"}) == 4
        for _, _, e in sl:
            sends.update({f: (r, e.name) for f in e.flows})
            ends.update({f: (r, e.name) for f in e.terminating})
    assert sorted(sends) == sorted(ends)
    assert collections.Counter((sends[f][0], ends[f][0]) for f in sends) == {(0, 1): 4 * (k + 1), (1, 0): 4 * (k + 1)}
    assert {n for _, n in sends.values()} == {"MPI_Send", "MPI_Isend"}
    assert {n for _, n in ends.values()} == {"MPI_Recv", "MPI_Waitall", "MPI_Wait"}
