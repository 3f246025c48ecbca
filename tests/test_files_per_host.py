"""Files per host (MPILENS_FILES=host): the ranks of a host write each stream into one container
(group-NNNNNN.mlc and its index .mlx) instead of one file per rank, and every reader reads both
layouts the same.

Checked against the programs' known traffic (examples/c/ring: per rank N sends of SIZE bytes to
its right neighbour; examples/c/sleeper: one MPI_Allreduce per step), against a per-rank run of
the same program, against the files on disk (exactly the containers, no per-rank file), and with
a job whose ranks are killed with SIGKILL and containers damaged on purpose.
"""

from __future__ import annotations

import collections
import os
import signal
import struct
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import MPILENS, NETPIPE, check_netpipe_profile, example, fn, launcher, mpilens_run, netpipe_sizes, run_example
from mpilens import _layout, counters_spc, layout, memory, rundir
from mpilens.errors import RunDirectoryError
from mpilens.trace import timeline

N, SIZE, NP = 30, 100, 4
MODES = "trace,counters,memory,mpit"
SETTINGS = {"MPILENS_MODE": MODES, "MPILENS_INTERVALS": "1", "MPILENS_CALLSITE_DEPTH": "2"}
# the families a run of MODES with those settings leaves per rank, and their container's folder
PER_RANK = ["trace", "memory", "counters_series", "counters_totals", "mpit", "intervals", "maps"]
FOLDERS = sorted({layout.pattern(f).split("/")[0] for f in PER_RANK})


def ring_run(mpi: str, tmp_path: Path, files: str) -> rundir.Run:
    job = run_example(mpi, "ring", NP, tmp_path / files, [str(N), str(SIZE)],
                      settings={**SETTINGS, "MPILENS_FILES": files})
    return job.load()


def message_multiset(tl: timeline.Timeline) -> collections.Counter:
    m = tl.messages
    return collections.Counter(zip(m.src.tolist(), m.dst.tolist(), m.bytes.tolist()))


def event_multiset(tl: timeline.Timeline) -> collections.Counter:
    ev = tl.ev
    return collections.Counter(zip(*(ev[k].tolist() for k in ("rank", "fn", "kind", "dst", "src", "sent", "recv"))))


def test_per_host_files_read_as_per_rank_files(mpi, tmp_path):
    host, rank = ring_run(mpi, tmp_path, "host"), ring_run(mpi, tmp_path, "rank")
    # on disk: one container per folder (the group of rank 0 holds the 4 ranks of this host), no
    # per-rank file of any of those families
    for fam in PER_RANK:
        assert layout.files(host.path, fam) and all(isinstance(f, layout.Member) for f in layout.files(host.path, fam))
        assert not list(host.path.glob(layout.glob_pattern(fam)))
        assert [layout.rank_of(fam, f) for f in layout.files(rank.path, fam)] == list(range(NP))
    for folder in FOLDERS:
        names = sorted(p.name for p in (host.path / folder).iterdir() if p.name.startswith("group-"))
        assert names == ["group-000000.mlc", "group-000000.mlx"], (folder, names)
    # the trace: the ring's known messages, and the same events as the per-rank run
    expected = collections.Counter({(r, (r + 1) % NP, SIZE): N for r in range(NP)})
    tl_host, tl_rank = host.trace, rank.trace
    assert tl_host.complete and tl_host.problems == []
    assert message_multiset(tl_host) == message_multiset(tl_rank) == expected
    assert event_multiset(tl_host) == event_multiset(tl_rank)
    # the counters: the totals that do not depend on timing are the same, rank by rank
    for name, each in (("BYTES_SENT_USER", N * SIZE), ("MESSAGES_SENT_USER", N), ("MESSAGES_RECEIVED_USER", N)):
        assert [host.counters.value(name, r) for r in range(NP)] == [each] * NP, name
        assert [rank.counters.value(name, r) for r in range(NP)] == [each] * NP, name
    assert sorted(host.counters.series) == list(range(NP)) and host.counters.problems == []
    # the live view: one file of slots for the host, each rank's last values in its slot
    assert sorted(p.name for p in (host.path / "live").iterdir()) == ["group-000000.spc", "layout.json"]
    live = {v["rank"]: v for v in counters_spc.read_live(host.path)[1]}
    sent = host.counters.layout.counter("MESSAGES_SENT_USER")["offset"]
    assert {r: (v["state"], int(v["values"][sent])) for r, v in live.items()} == {r: ("finished", N) for r in range(NP)}
    # memory, intervals, mpit: every rank is there, with the same structure
    assert [m.rank for m in host.memory.ranks] == [m.rank for m in rank.memory.ranks] == list(range(NP))
    assert host.intervals.compute.shape == rank.intervals.compute.shape == (NP, 1)  # the one MPI_Allreduce
    assert host.mpit.problems == rank.mpit.problems == []
    assert sorted((s.rank, s.name, s.comm) for s in host.mpit.series) == \
        sorted((s.rank, s.name, s.comm) for s in rank.mpit.series)
    calls = {f: sum(v["calls"]) for f, v in host.profile["functions"].items()}
    assert calls == {f: sum(v["calls"]) for f, v in rank.profile["functions"].items()}


def rank_pids(marker: Path, n: int, timeout: float = 60) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pids = [int(x) for x in marker.read_text().split()] if marker.exists() else []
        if len(pids) == n:
            return pids
        time.sleep(0.1)
    raise AssertionError(f"{marker}: {n} ranks did not start")


def test_sigkill_leaves_containers_readable(mpi, tmp_path):
    """Every rank killed with SIGKILL mid-run (no handler runs): what the writer threads wrote up to
    then reads back, rank by rank, from the containers; nothing is misread."""
    out, marker = tmp_path / "run", tmp_path / "pids"
    cmd = [str(MPILENS), "run", "-o", str(out), "--mode", "trace,memory", "--set", "MPILENS_FILES=host",
           "--set", "MPILENS_TRACE_FLUSH_MS=10", "--", *launcher(mpi, 2), str(example(mpi, "sleeper")),
           "-n", "100000", "-s", "5", "-m", str(marker)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
                                 "OMPI_MCA_rmaps_base_oversubscribe": "1", "HYDRA_LAUNCHER": "fork"})
    try:
        pids = rank_pids(marker, 2)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:  # about 30 steps written
            sizes = [p.stat().st_size for p in (out / "trace").glob("group-*.mlx")] if (out / "trace").is_dir() else []
            if sum(sizes) >= 8 * _layout.CONTAINER_INDEX.size:
                break
            time.sleep(0.05)
        time.sleep(0.3)
        assert proc.poll() is None, proc.communicate()
        # stopped first, then killed: once one rank is dead its launcher ends the others, and on a
        # loaded machine it did so between two kills (the second found no process), with a signal
        # whose handler would run; a stopped rank runs nothing until SIGKILL ends it
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
        proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert sorted(p.name for p in (out / "trace").iterdir()) == ["group-000000.mlc", "group-000000.mlx"]
    tl = timeline.load(out)
    assert not tl.complete
    allreduce = tl.functions.index("MPI_Allreduce")
    for r in (0, 1):
        ev = tl.ev[tl.ev["rank"] == r]
        assert (ev["fn"] == allreduce).sum() >= 5, r
        assert (np.diff(ev["t0"].astype(np.int64)) >= 0).all()
    # both ranks did the same steps up to a few at the end: counts within the flush period
    steps = [int((tl.ev[tl.ev["rank"] == r]["fn"] == allreduce).sum()) for r in (0, 1)]
    assert abs(steps[0] - steps[1]) <= 10, steps
    mem = memory.load(out)  # no profile and no payload (SIGKILL runs no handler): the modes' files alone
    assert [m.rank for m in mem.ranks] == [0, 1]
    assert all(len(m.t) >= 5 for m in mem.ranks)


@pytest.fixture(scope="module")
def ring_host(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("ring")
    return run_example("openmpi", "ring", 2, tmp, [str(N), str(SIZE)],
                       settings={"MPILENS_MODE": "trace", "MPILENS_FILES": "host"}).rundir


def copy_run(src: Path, dst: Path) -> Path:
    subprocess.run(["cp", "-a", str(src), str(dst)], check=True)
    return dst


def events(run: Path) -> collections.Counter:
    return event_multiset(timeline.load(run))


@pytest.mark.mpi
def test_torn_tails_are_ignored(ring_host, tmp_path):
    """A chunk without its index record (a rank killed mid-write) and an index record cut short
    are the tail of a killed run: ignored, the rest reads the same."""
    whole = events(ring_host)
    run = copy_run(ring_host, tmp_path / "torn")
    data, index = run / "trace" / "group-000000.mlc", run / "trace" / "group-000000.mlx"
    head = _layout.CONTAINER_CHUNK.pack(_layout.MAGIC_CONTAINER, 0, _layout.STREAM_TRACE, 0, 5000, 0, 0)
    with data.open("ab") as f:
        f.write(head + b"\x07" * 100)  # announces 5000 bytes, has 100
    with index.open("ab") as f:
        f.write(b"\x01" * 20)  # 20 of a record's 32 bytes
    assert events(run) == whole


@pytest.mark.mpi
def test_damaged_index_is_named(ring_host, tmp_path):
    run = copy_run(ring_host, tmp_path / "bad")
    index = run / "trace" / "group-000000.mlx"
    raw = bytearray(index.read_bytes())
    assert len(raw) % 32 == 0 and len(raw) >= 3 * 32
    raw[32 + 3] ^= 0xFF  # record 1's offset, not its check
    index.write_bytes(bytes(raw))
    with pytest.raises(RunDirectoryError, match=r"group-000000.mlx: index record 1 of \d+ is damaged"):
        timeline.load(run)
    # a valid record that names bytes the data file does not have
    run2 = copy_run(ring_host, tmp_path / "beyond")
    index2, data2 = run2 / "trace" / "group-000000.mlx", run2 / "trace" / "group-000000.mlc"
    rec = struct.pack("<QQIHHI", data2.stat().st_size, 64, 0, _layout.STREAM_TRACE, 0, 0)
    with index2.open("ab") as f:
        f.write(rec + struct.pack("<I", _fnv(rec)))
    beyond = r"index record \d+ names bytes \d+-\d+ of group-000000.mlc, which has \d+ \(damaged container\)"
    with pytest.raises(RunDirectoryError, match=beyond):
        timeline.load(run2)
    # a record that points at the wrong place of the data: the chunk head there does not match
    run3 = copy_run(ring_host, tmp_path / "moved")
    index3 = run3 / "trace" / "group-000000.mlx"
    raw = bytearray(index3.read_bytes())
    offset, length, rank_, stream, item, thread, _ = _layout.CONTAINER_INDEX.unpack_from(raw, 0)
    moved = struct.pack("<QQIHHI", offset + 8, length, rank_, stream, item, thread)
    raw[:32] = moved + struct.pack("<I", _fnv(moved))
    index3.write_bytes(bytes(raw))
    # only that rank's chunks are lost: it is left out and named, the other rank is read
    tl = timeline.load(run3)
    named = [p for p in tl.problems if "the data holds something else there" in p]
    assert len(named) == 1 and f"rank {rank_}'s trace is left out" in named[0], tl.problems
    assert not tl.complete and set(np.unique(tl.ev["rank"]).tolist()) == {1 - rank_}


def _fnv(b: bytes) -> int:
    h = 2166136261
    for c in b:
        h = ((h ^ c) * 16777619) & 0xFFFFFFFF
    return h


def test_snapshots_and_partial_payloads_in_containers(mpi, tmp_path):
    """MPI_Pcontrol snapshots go into the containers of pcontrol/NNNN/, the payloads of ranks that
    end early (here an MPI_Abort) into the one of ranks/; `mpilens report` merges them as it merges
    per-rank files (examples/c/pcontrol.c snapshot A C: A barriers and rings of 100 bytes first)."""
    a, c = 3, 2
    job = run_example(mpi, "pcontrol", 2, tmp_path, ["snapshot", str(a), str(c)], settings={"MPILENS_FILES": "host"})
    assert rundir.snapshots(job.rundir) == [1, 2, 3]
    for s in (1, 2):
        files = layout.snapshot_files(job.rundir, s)
        assert [layout.rank_of("snapshot", f) for f in files] == [0, 1]
        assert all(isinstance(f, layout.Member) for f in files)
        assert sorted(p.name for p in layout.snapshot_dir(job.rundir, s).iterdir()) == \
            ["group-000000.mlc", "group-000000.mlx"]
    first = rundir.load_snapshot(job.rundir, 1)
    # the one note of a snapshot, nothing else (a damaged or missing chunk would add its own)
    assert first.problems == ["MPI_Pcontrol snapshot 1: each rank's statistics as of its MPI_Pcontrol(3|4) call "
                              "number 1; the run went on"], first.problems
    assert fn(first.profile, "MPI_Barrier", "calls") == [a, a]
    assert fn(first.profile, "MPI_Send", "bytes_sent") == [a * 100, a * 100]
    third = rundir.load_snapshot(job.rundir, 3)  # rank 0 alone
    assert fn(third.profile, "MPI_Barrier", "calls") == [a + 1, None]

    aborted = run_example(mpi, "sleeper", 2, tmp_path / "abort", ["-n", "20", "-a", "1:4"],
                          settings={"MPILENS_FILES": "host"}, check=False)
    assert aborted.returncode != 0
    partial = layout.partial_files(aborted.rundir)
    assert partial and all(isinstance(f, layout.Member) for f in partial)
    # per rank: only the statistics files of ranks killed without a word (MPICH's launcher's SIGKILL)
    assert not [f for f in aborted.rundir.glob("ranks/rank-*") if f.suffix not in (".stats", ".names")]
    run = aborted.load()
    assert run.source != "profile.json"
    allreduce = fn(run.profile, "MPI_Allreduce", "calls")
    assert allreduce[1] == 4  # rank 1 aborts after 4 steps


@pytest.mark.mpi
def test_io_per_file_from_containers(tmp_path):
    """`mpilens io` on a run with per-host files: examples/c/iofile.c's known accesses (as
    tests/test_io.py checks them per rank), read from io/group-000000.mlc."""
    from test_io import by_name, io_json

    np_ = 3
    data = tmp_path / "data"
    data.mkdir()
    job = run_example("openmpi", "iofile", np_, tmp_path, [str(data)], settings={"MPILENS_FILES": "host"})
    assert sorted(p.name for p in (job.rundir / "io").iterdir()) == ["group-000000.mlc", "group-000000.mlx"]
    files = by_name(io_json(job.rundir))
    shared, rank0 = str(data / "shared.dat"), str(data / "rank0.dat")
    assert set(files) == {shared, rank0}
    assert files[shared]["ranks"] == list(range(np_))
    assert files[shared]["bytes_written"] == os.path.getsize(shared) == 7168 * np_
    assert files[shared]["bytes_read"] == np_ * (4096 + 256)
    assert files[rank0]["bytes_written"] == os.path.getsize(rank0) == 300


@pytest.mark.apps
def test_netpipe_from_per_host_files(mpi, tmp_path):
    """A real application: Debian's NetPIPE in trace, counters and memory modes with
    MPILENS_FILES=host. Its traffic, known from its own output file, comes back from the containers:
    the profile, the trace's matched messages and the counters' bytes."""
    lo, hi, reps = 2, 4096, 8
    out_file = tmp_path / "np.out"
    job = mpilens_run(None, launcher(mpi, 2) + [NETPIPE[mpi], "-l", str(lo), "-u", str(hi), "-p", "0", "-n", str(reps),
                                               "-o", str(out_file)], tmp_path,
                      settings={"MPILENS_MODE": "trace,counters,memory", "MPILENS_FILES": "host"})
    run = job.load()
    for fam in ("trace", "memory", "counters_series", "counters_totals"):
        assert not list(run.path.glob(layout.glob_pattern(fam))), fam  # no file per rank
        assert [layout.rank_of(fam, f) for f in layout.files(run.path, fam)] == [0, 1], fam
    sizes = netpipe_sizes(out_file)
    check_netpipe_profile(run.profile, sizes, lo, reps)
    m = run.trace.messages
    assert m.unmatched_sends == 0 and m.unmatched_recvs == 0
    data, k = 3 * reps * sum(sizes), len(sizes)
    sent = {0: data + 100 * lo + 4 * k, 1: data + 100 * lo}  # NetPIPE's traffic (check_netpipe_profile)
    assert {r: int(m.bytes[m.src == r].sum()) for r in (0, 1)} == sent
    assert [run.counters.value("BYTES_SENT_USER", r) for r in (0, 1)] == [sent[0], sent[1]]
    assert [x.rank for x in run.memory.ranks] == [0, 1]
