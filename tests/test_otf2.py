"""`mpilens export otf2`: the archive read back by two readers that are not ours, the otf2 Python
reader and Score-P's otf2-print (Debian's otf2-tools), with expectations from programs whose
traffic is known: examples/c/comm_traffic.c and NetPIPE."""

from __future__ import annotations

import collections
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import MPILENS, NETPIPE, launcher, mpilens_run, netpipe_sizes, run_example

TRACE = {"MPILENS_MODE": "profile,trace"}
UNDEFINED = 0xFFFFFFFF
# comm_traffic on 4 ranks: the halves (by parity) in reverse world order
HALVES = {0: (2, 0), 1: (3, 1)}


def export(rundir: Path, out: Path) -> dict:
    q = subprocess.run([str(MPILENS), "export", "otf2", str(rundir), "-o", str(out), "--json", "--quiet"],
                       capture_output=True, text=True)
    assert q.returncode == 0, q.stderr
    return json.loads(q.stdout)


def otf2_print(archive: Path, *args: str) -> str:
    exe = shutil.which("otf2-print")
    if exe is None:
        pytest.fail("otf2-print is missing: `make deps` installs otf2-tools")
    q = subprocess.run([exe, *args, str(archive / "traces.otf2")], capture_output=True, text=True, timeout=120)
    assert q.returncode == 0 and "error" not in q.stderr.lower(), q.stderr
    return q.stdout


def printed_events(text: str) -> list[tuple[str, int, int, str]]:
    """otf2-print's event lines: (record, location, time stamp, attributes)."""
    out = []
    for line in text.splitlines():
        m = re.match(r"^([A-Z_]+)\s+(\d+)\s+(\d+)\s+(.*)$", line)
        if m:
            out.append((m[1], int(m[2]), int(m[3]), m[4]))
    return out


def read_back(archive: Path):
    """The events per location name with the otf2 Python reader, and the definitions."""
    import otf2

    per: dict[str, list] = collections.defaultdict(list)
    with otf2.reader.open(str(archive / "traces.otf2")) as trace:
        defs = trace.definitions
        comms = {c.name: [m.name for m in c.group.members] for c in defs.comms}
        clock = defs.clock_properties
        clock = (clock.global_offset, clock.trace_length, clock.realtime_timestamp, clock.timer_resolution)
        for location, event in trace.events:
            per[location.name].append(event)
    return per, comms, clock


def test_comm_traffic(mpi, tmp_path):
    import otf2

    job = run_example(mpi, "comm_traffic", 4, tmp_path, settings=TRACE)
    archive = tmp_path / "otf2"
    written = export(job.rundir, archive)["written"]
    per, comms, (offset, length, realtime, resolution) = read_back(archive)

    # communicators: MPI_COMM_WORLD and the two halves, each with its members in rank order
    assert written["communicators"] == 3
    halves = {tuple(m) for n, m in comms.items() if n != "MPI_COMM_WORLD"}
    assert comms["MPI_COMM_WORLD"] == [f"rank {r}" for r in range(4)]
    assert halves == {tuple(f"rank {w}" for w in h) for h in HALVES.values()}

    # clock: ns; the global offset is the first time stamp, the length the span of all of them;
    # the calendar time is the run's (meta.json, seconds)
    stamps = [e.time for events in per.values() for e in events]
    assert resolution == 10**9 and offset == min(stamps) and length == max(stamps) - min(stamps)
    started = json.loads((job.rundir / "meta.json").read_text())["started_unix_s"]
    assert started - 1 <= realtime / 1e9 <= started + 60

    assert sorted(per) == [f"rank {r}" for r in range(4)]
    for r in range(4):
        half = HALVES[r % 2]
        s = half.index(r)  # rank in the half
        partner = 1 - s
        events = per[f"rank {r}"]
        kinds = collections.Counter(type(e).__name__ for e in events)
        # 22 MPI calls after MPI_Init (MPI_Startall once per call) and the region "exchange"
        assert kinds["Enter"] == kinds["Leave"] == 23
        assert kinds["MpiIsend"] == kinds["MpiIsendComplete"] == kinds["MpiIrecvRequest"] == kinds["MpiIrecv"] == 4
        assert kinds["MpiSend"] == (s == 0) and kinds["MpiRecv"] == (s == 1)
        assert kinds["MpiCollectiveBegin"] == kinds["MpiCollectiveEnd"] == 3
        assert sum(kinds.values()) == 2 * 23 + 4 * 4 + 1 + 2 * 3

        # nesting: every record of a message or collective inside its MPI call; Leave matches Enter
        stack, open_requests, done_requests = [], {}, []
        regions = []
        for e in events:
            if isinstance(e, otf2.events.Enter):
                stack.append(e.region.name)
                regions.append((e.region.name, e.region.paradigm, e.region.region_role))
            elif isinstance(e, otf2.events.Leave):
                assert stack.pop() == e.region.name
            else:
                assert stack and stack[-1].startswith("MPI_"), (type(e).__name__, stack)
            if isinstance(e, (otf2.events.MpiIsend, otf2.events.MpiIrecvRequest)):
                key = (type(e).__name__, e.request_id)
                assert key not in open_requests  # a request is completed before it is started again
                open_requests[key] = e
            if isinstance(e, otf2.events.MpiIsendComplete):
                post = open_requests.pop(("MpiIsend", e.request_id))
                done_requests.append(("send", post.msg_tag, post.msg_length, post.receiver,
                                      [m.name for m in post.communicator.group.members], stack[-1]))
            if isinstance(e, otf2.events.MpiIrecv):
                open_requests.pop(("MpiIrecvRequest", e.request_id))
                done_requests.append(("recv", e.msg_tag, e.msg_length, e.sender,
                                      [m.name for m in e.communicator.group.members], stack[-1]))
        assert stack == [] and open_requests == {}
        members = [f"rank {w}" for w in half]
        expect = []
        # MPICH completes the 1000-byte MPI_Isend inside the call (its handle is a built-in one, complete
        # at once): its completion is in MPI_Isend; Open MPI's completes in the MPI_Waitall
        isend_done = "MPI_Isend" if mpi == "mpich" else "MPI_Waitall"
        for tag, size, waits in ((7, 1000, 1), (9, 200, 3)):
            for _ in range(waits):
                expect += [("recv", tag, size, partner, members, "MPI_Waitall"),
                           ("send", tag, size, partner, members, isend_done if tag == 7 else "MPI_Waitall")]
        assert sorted(done_requests, key=str) == sorted(expect, key=str)
        # the persistent operations keep their request across the three starts
        isend_ids = [e.request_id for e in events if isinstance(e, otf2.events.MpiIsend)]
        assert len(set(isend_ids)) == 2 and isend_ids[1] == isend_ids[2] == isend_ids[3]

        blocking = [(type(e).__name__, getattr(e, "receiver", getattr(e, "sender", None)), e.msg_tag, e.msg_length,
                     [m.name for m in e.communicator.group.members] == members)
                    for e in events if isinstance(e, (otf2.events.MpiSend, otf2.events.MpiRecv))]
        assert blocking == [("MpiSend" if s == 0 else "MpiRecv", partner, 5, 300, True)]

        ends = [(e.collective_op, [m.name for m in e.communicator.group.members], e.root, e.size_sent,
                 e.size_received) for e in events if isinstance(e, otf2.events.MpiCollectiveEnd)]
        world = [f"rank {w}" for w in range(4)]
        assert ends == [(otf2.CollectiveOp.BCAST, members, 1, 64 if s == 1 else 0, 64 if s == 0 else 0),
                        (otf2.CollectiveOp.REDUCE, world, 0, 8, 8 if r == 0 else 0),
                        (otf2.CollectiveOp.BARRIER, world, UNDEFINED, 0, 0)]
        roles = {name: (paradigm, role) for name, paradigm, role in regions}
        assert roles["exchange"] == (otf2.Paradigm.USER, otf2.RegionRole.CODE)
        assert roles["MPI_Isend"] == (otf2.Paradigm.MPI, otf2.RegionRole.POINT2POINT)
        assert roles["MPI_Bcast"] == (otf2.Paradigm.MPI, otf2.RegionRole.COLL_ONE2ALL)
        assert roles["MPI_Reduce"] == (otf2.Paradigm.MPI, otf2.RegionRole.COLL_ALL2ONE)
        assert roles["MPI_Barrier"] == (otf2.Paradigm.MPI, otf2.RegionRole.BARRIER)

    # the same archive through otf2-print: the same records per location, ranks within the halves
    printed = printed_events(otf2_print(archive))
    assert len(printed) == sum(len(v) for v in per.values()) == written["events"]
    by_loc = collections.Counter((rec, loc) for rec, loc, _, _ in printed)
    for loc in range(4):
        assert by_loc[("MPI_ISEND", loc)] == by_loc[("MPI_IRECV", loc)] == 4
        assert by_loc[("MPI_COLLECTIVE_END", loc)] == 3
    sends = [(loc, a) for rec, loc, _, a in printed if rec == "MPI_SEND"]
    # rank 0 of each half (world ranks 2 and 3) sends to rank 1 of its half (world ranks 0 and 1)
    assert sorted(loc for loc, _ in sends) == [2, 3]
    for loc, a in sends:
        assert re.match(rf'Receiver: 1 \("rank {loc - 2}" <\d+>\), Communicator: "communicator \d \(2 ranks\)" <\d+>, '
                        r"Tag: 5, Length: 300$", a), a
    bcast = [a for rec, _, _, a in printed if rec == "MPI_COLLECTIVE_END" and "BCAST" in a]
    assert len(bcast) == 4 and all(re.search(r'Root: 1 \("rank [01]"', a) for a in bcast)
    # its definitions: the clock as the Python reader read it, the halves' groups of world ranks
    defs = otf2_print(archive, "-G")
    m = re.search(r"CLOCK_PROPERTIES\s+Ticks per Seconds: (\d+), Global Offset: (\d+), Length: (\d+)", defs)
    assert m and tuple(map(int, m.groups())) == (resolution, offset, length)
    groups = re.findall(r'^GROUP\s+\d+\s+Name: "communicator \d \(world ranks ([\d, ]+)\)".*Type: COMM_GROUP', defs, re.M)
    assert sorted(groups) == ["2, 0", "3, 1"]


@pytest.mark.apps
def test_netpipe_messages(mpi, tmp_path):
    """A real application: every message of NetPIPE's ping-pong is one MpiSend and one MpiRecv."""
    exe = shutil.which(NETPIPE[mpi])
    if exe is None:
        pytest.fail(f"{NETPIPE[mpi]} is missing: `make deps` installs it")
    lo, hi, reps = 2, 1024, 4
    job = mpilens_run(None, launcher(mpi, 2) + [exe, "-l", str(lo), "-u", str(hi), "-p", "0", "-n", str(reps),
                                               "-o", str(tmp_path / "np.out")], tmp_path, settings=TRACE)
    sizes = netpipe_sizes(tmp_path / "np.out")
    k = len(sizes)
    archive = tmp_path / "otf2"
    export(job.rundir, archive)
    printed = printed_events(otf2_print(archive))
    sends = collections.Counter(loc for rec, loc, _, _ in printed if rec == "MPI_SEND")
    recvs = collections.Counter(loc for rec, loc, _, _ in printed if rec == "MPI_RECV")
    # per size 3 trials of reps round trips, a latency test of 100 round trips, and each size's
    # repetition count from rank 0 to rank 1 (conftest.check_netpipe_profile)
    assert sends == {0: 3 * reps * k + 100 + k, 1: 3 * reps * k + 100}
    assert recvs == {1: sends[0], 0: sends[1]}
    data = sum(int(re.search(r"Length: (\d+)", a)[1]) for rec, loc, _, a in printed if rec == "MPI_SEND" and loc == 1)
    assert data == 3 * reps * sum(sizes) + 100 * lo


def test_threads_locations(mpi, tmp_path):
    """MPI_THREAD_MULTIPLE (examples/c/threads.c, K=6: per thread 3 blocking and 3 nonblocking
    exchanges, then one whose requests the next thread completes): one location per thread, and
    every nonblocking operation's start and completion, also when another thread completed it."""
    import otf2

    threads, k = 4, 6
    job = run_example(mpi, "threads", 2, tmp_path, [str(k), "4096"], settings=TRACE)
    if "MPI_THREAD_MULTIPLE not provided" in job.stdout:
        pytest.skip(f"{mpi}: {job.stdout.strip()}")
    archive = tmp_path / "otf2"
    export(job.rundir, archive)
    per, _, _ = read_back(archive)
    assert sorted(per) == sorted([f"rank {r}" for r in range(2)] +
                                 [f"rank {r} thread {t}" for r in range(2) for t in range(1, threads + 1)])
    for r in range(2):
        workers = [per[f"rank {r} thread {t}"] for t in range(1, threads + 1)]
        for events in workers:
            kinds = collections.Counter(type(e).__name__ for e in events)
            assert kinds["MpiSend"] == kinds["MpiRecv"] == (k + 1) // 2
            assert kinds["MpiIsend"] == kinds["MpiIrecvRequest"] == k // 2 + 1
        every = [e for events in workers for e in events]
        started = sorted(e.request_id for e in every if isinstance(e, otf2.events.MpiIsend))
        completed = sorted(e.request_id for e in every if isinstance(e, otf2.events.MpiIsendComplete))
        assert started == completed and len(started) == threads * (k // 2 + 1)
        posted = sorted(e.request_id for e in every if isinstance(e, otf2.events.MpiIrecvRequest))
        received = sorted(e.request_id for e in every if isinstance(e, otf2.events.MpiIrecv))
        assert posted == received and len(posted) == threads * (k // 2 + 1)
        assert all(e.msg_length == 4096 for e in every if isinstance(e, (otf2.events.MpiIsend, otf2.events.MpiIrecv)))
    printed = printed_events(otf2_print(archive))
    assert collections.Counter(rec for rec, *_ in printed)["MPI_ISEND_COMPLETE"] == 2 * threads * (k // 2 + 1)


def test_intercommunicator(mpi, tmp_path):
    """The trace names both groups of an intercommunicator (comm_traffic inter: the two halves);
    the export writes its messages on MPI_COMM_WORLD with world ranks, which OTF2 can resolve."""
    from mpilens.trace import reader

    job = run_example(mpi, "comm_traffic", 4, tmp_path, ["inter"], settings=TRACE)
    for rt in reader.read_all(job.rundir):
        mine, theirs = HALVES[rt.rank % 2], HALVES[1 - rt.rank % 2]
        listed = sorted((tuple(ranks), tuple(remote)) for _, ranks, remote in rt.trailer["comms"])
        assert listed == sorted([(mine, theirs), (mine, ()), ((0, 1, 2, 3), ())]), rt.rank
    archive = tmp_path / "otf2"
    export(job.rundir, archive)
    printed = printed_events(otf2_print(archive))
    on_inter = collections.defaultdict(list)
    for rec, loc, _, a in printed:
        m = re.match(r'(?:Receiver|Sender): (\d+) \("rank (\d+)" <\d+>\), Communicator: "MPI_COMM_WORLD" <\d+>, '
                     r"Tag: 12, Length: 40$", a)
        if rec in ("MPI_SEND", "MPI_RECV") and m:
            assert m[1] == m[2]  # a world rank
            on_inter[loc].append((rec, int(m[1])))
    for r in range(4):
        s = HALVES[r % 2].index(r)
        partner = HALVES[1 - r % 2][s]
        assert sorted(on_inter[r]) == [("MPI_RECV", partner), ("MPI_SEND", partner)], r


@pytest.mark.parametrize("phase", ["icoll", "pcoll"])
def test_nonblocking_collectives(mpi, tmp_path, phase):
    """comm_traffic icoll: MPI_Ibcast from rank 1 of the half and MPI_Iallreduce on MPI_COMM_WORLD,
    completed by one MPI_Waitall; pcoll: the same as persistent collectives (MPI-4), started twice
    by MPI_Startall. A NonBlockingCollectiveRequest in each call (or start), the completions with
    operation, communicator, root and bytes in the MPI_Waitall."""
    import otf2

    job = run_example(mpi, "comm_traffic", 4, tmp_path, [phase], settings=TRACE)
    if "no persistent collectives" in job.stdout:
        assert mpi == "openmpi"
        pytest.skip("Open MPI 4.1 implements MPI 3.1: no persistent collectives")
    assert f"wrong {phase}" not in job.stderr
    archive = tmp_path / "otf2"
    export(job.rundir, archive)
    per, _, _ = read_back(archive)
    world = [f"rank {w}" for w in range(4)]
    for r in range(4):
        half = [f"rank {w}" for w in HALVES[r % 2]]
        s = HALVES[r % 2].index(r)
        stack, posted, done = [], {}, []
        for e in per[f"rank {r}"]:
            if isinstance(e, otf2.events.Enter):
                stack.append(e.region.name)
            elif isinstance(e, otf2.events.Leave):
                stack.pop()
            elif isinstance(e, otf2.events.NonBlockingCollectiveRequest):
                posted[e.request_id] = stack[-1]
            elif isinstance(e, otf2.events.NonBlockingCollectiveComplete):
                done.append((posted.pop(e.request_id), stack[-1], e.collective_op,
                             [m.name for m in e.communicator.group.members], e.root, e.size_sent, e.size_received))
        assert posted == {}
        bcast, allreduce = ("MPI_Ibcast", "MPI_Iallreduce") if phase == "icoll" else ("MPI_Startall",) * 2
        starts = 1 if phase == "icoll" else 2
        assert sorted(done, key=str) == sorted(starts * [
            (bcast, "MPI_Waitall", otf2.CollectiveOp.BCAST, half, 1, 64 if s == 1 else 0, 64 if s == 0 else 0),
            (allreduce, "MPI_Waitall", otf2.CollectiveOp.ALLREDUCE, world, UNDEFINED, 8, 8)], key=str)
    printed = printed_events(otf2_print(archive))
    assert collections.Counter(rec for rec, *_ in printed)["NON_BLOCKING_COLLECTIVE_COMPLETE"] == 4 * 2 * starts
