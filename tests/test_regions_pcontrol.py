"""User regions and MPI_Pcontrol, exact per rank: examples/c/pcontrol.c runs under mpilens with
Open MPI and MPICH, and every expected visit count, call count and byte count is derived here from
the parameters passed on the command line.

Regions are a tree of nested paths; each node holds the MPI calls made while it was the innermost
open region (calls inside a child region belong to the child), so the calls of the whole tree plus
those made outside any region add up to the totals in "functions". MPI_Pcontrol has mpiP's
meaning: 0 stops measuring (calls made while stopped are not counted), 1 resumes, 2 resets the
statistics gathered so far.
"""

from __future__ import annotations

import re
import subprocess

import pytest

from conftest import MPILENS, TIMEOUT, fn, run_example
from mpilens import rundir

DOUBLE = 8


def per_rank(np, f):
    return [f(r) for r in range(np)]


def check_run(p: dict, np: int) -> None:
    assert p["nranks"] == np
    assert p["complete"] is True
    assert all(v == 0 for v in p["dropped"].values()), p["dropped"]


def by_name(nodes: list[dict]) -> dict[str, dict]:
    out = {}
    for n in nodes:
        assert n["name"] not in out, f"region {n['name']!r} listed twice at the same level"
        out[n["name"]] = n
    return out


def calls_of(node: dict) -> dict[str, list[int]]:
    return {name: f["calls"] for name, f in node["functions"].items()}


def matrix(p: dict) -> dict[tuple[int, int], tuple[int, int]]:
    out = {}
    for m in p["matrix"]:
        assert (m["src"], m["dst"]) not in out
        out[(m["src"], m["dst"])] = (m["messages"], m["bytes"])
    return out


def hist(p: dict, name: str) -> dict[int, list[int]]:
    return {e["bin"]: e["calls"] for e in p["message_sizes"].get(name, [])}


def test_nested_regions(mpi, tmp_path):
    np, iters, size = 3, 5, 64
    job = run_example(mpi, "pcontrol", np, tmp_path, ["regions", str(iters), str(size)])
    assert "pcontrol regions: done" in job.stdout
    p = job.profile
    check_run(p, np)
    evens = (iters + 1) // 2  # iterations 0, 2, 4, ...
    all_ = lambda v: [v] * np  # noqa: E731

    top = by_name(p["regions"])
    assert set(top) == {"step", "inner", "post", "complete", "solo"}
    step, inner_top, solo = top["step"], top["inner"], top["solo"]

    assert step["visits"] == all_(iters)
    assert calls_of(step) == {"MPI_Barrier": all_(iters)}
    kids = by_name(step["regions"])
    assert set(kids) == {"halo", "even"}
    halo, even = kids["halo"], kids["even"]

    assert halo["visits"] == all_(iters)
    assert calls_of(halo) == {"MPI_Sendrecv": all_(iters)}
    assert halo["functions"]["MPI_Sendrecv"]["bytes_sent"] == all_(iters * size)
    assert halo["functions"]["MPI_Sendrecv"]["bytes_recv"] == all_(iters * size)
    (inner,) = halo["regions"]
    assert inner["name"] == "inner" and inner["regions"] == []
    assert inner["visits"] == all_(iters)
    assert calls_of(inner) == {"MPI_Allreduce": all_(iters)}
    assert inner["functions"]["MPI_Allreduce"]["bytes_sent"] == all_(iters * DOUBLE)
    assert inner["functions"]["MPI_Allreduce"]["bytes_recv"] == all_(iters * DOUBLE)

    assert even["visits"] == all_(evens) and even["regions"] == []
    assert calls_of(even) == {"MPI_Bcast": all_(evens)}
    bcast = 4 * 4 * evens  # 4 ints from rank 0
    assert even["functions"]["MPI_Bcast"]["bytes_sent"] == [bcast] + [0] * (np - 1)
    assert even["functions"]["MPI_Bcast"]["bytes_recv"] == [0] + [bcast] * (np - 1)

    # same name, other parent: a region of its own
    assert inner_top["visits"] == all_(1) and inner_top["regions"] == []
    assert calls_of(inner_top) == {"MPI_Allreduce": all_(2)}

    # nonblocking bytes belong to the initiating calls, in the region where they were made,
    # even though the MPI_Waitall that completed them ran in another region
    post, complete = top["post"], top["complete"]
    assert post["visits"] == all_(1) and complete["visits"] == all_(1)
    assert calls_of(post) == {"MPI_Irecv": all_(1), "MPI_Isend": all_(1)}
    assert post["functions"]["MPI_Isend"]["bytes_sent"] == all_(size)
    assert post["functions"]["MPI_Irecv"]["bytes_recv"] == all_(size)
    assert calls_of(complete) == {"MPI_Waitall": all_(1)}
    assert complete["functions"]["MPI_Waitall"]["bytes_sent"] == all_(0)
    assert complete["functions"]["MPI_Waitall"]["bytes_recv"] == all_(0)

    # rank r enters "solo" r+1 times
    assert solo["visits"] == per_rank(np, lambda r: r + 1)
    assert calls_of(solo) == {"MPI_Comm_size": per_rank(np, lambda r: r + 1)}

    # totals: the tree plus the calls outside any region (1 MPI_Comm_size, 1 MPI_Barrier)
    assert fn(p, "MPI_Barrier", "calls") == all_(iters + 1)
    assert fn(p, "MPI_Allreduce", "calls") == all_(iters + 2)
    assert fn(p, "MPI_Sendrecv", "calls") == all_(iters)
    assert fn(p, "MPI_Bcast", "calls") == all_(evens)
    assert fn(p, "MPI_Comm_size", "calls") == per_rank(np, lambda r: r + 2)
    assert matrix(p) == {(r, (r + 1) % np): (iters + 1, (iters + 1) * size) for r in range(np)}


@pytest.mark.parametrize("start_enabled", [True, False], ids=["enabled", "MPILENS_ENABLED=0"])
def test_pcontrol_stop_and_resume(mpi, tmp_path, start_enabled):
    """A phase measured (unless the run starts disabled), MPI_Pcontrol(0), a phase not measured,
    MPI_Pcontrol(1), a phase measured."""
    np, a, b, c = 3, 2, 3, 4
    settings = None if start_enabled else {"MPILENS_ENABLED": "0"}
    job = run_example(mpi, "pcontrol", np, tmp_path, ["onoff", str(a), str(b), str(c)], settings=settings)
    assert "pcontrol onoff: done" in job.stdout
    p = job.profile
    check_run(p, np)
    a_seen = a if start_enabled else 0
    all_ = lambda v: [v] * np  # noqa: E731

    assert fn(p, "MPI_Barrier", "calls") == all_(a_seen)
    assert fn(p, "MPI_Allreduce", "calls") == all_(c)
    assert fn(p, "MPI_Allreduce", "bytes_sent") == all_(c * DOUBLE)
    assert fn(p, "MPI_Send", "calls") == all_(a_seen + c)
    assert fn(p, "MPI_Send", "bytes_sent") == all_(a_seen * 100 + c * 300)
    assert fn(p, "MPI_Recv", "calls") == all_(a_seen + c)
    assert fn(p, "MPI_Recv", "bytes_recv") == all_(a_seen * 100 + c * 300)
    for name in ("MPI_Bcast", "MPI_Isend", "MPI_Irecv", "MPI_Waitall"):  # only called while stopped
        for key in ("calls", "bytes_sent", "bytes_recv"):
            assert fn(p, name, key) == all_(0), f"{name}.{key} counted while measurement was stopped"
    # MPI_Comm_rank / MPI_Comm_size are called right after MPI_Init
    assert fn(p, "MPI_Comm_rank", "calls") == all_(1 if start_enabled else 0)
    assert matrix(p) == {(r, (r + 1) % np): (a_seen + c, a_seen * 100 + c * 300) for r in range(np)}
    want = {9: all_(c)}  # 300 bytes: [256, 512)
    if start_enabled:
        want[7] = all_(a)  # 100 bytes: [64, 128); the 200-byte messages ([128, 256), bin 8) were not measured
    assert hist(p, "MPI_Send") == want
    assert hist(p, "MPI_Recv") == want
    for name in ("MPI_Bcast", "MPI_Isend", "MPI_Irecv"):
        assert name not in p["message_sizes"]


def test_pcontrol_reset(mpi, tmp_path):
    """MPI_Pcontrol(2) drops everything measured before it: functions, matrix, message sizes and
    region visits; what follows is measured as usual."""
    np, a, c = 3, 3, 2
    job = run_example(mpi, "pcontrol", np, tmp_path, ["reset", str(a), str(c)])
    assert "pcontrol reset: done" in job.stdout
    p = job.profile
    check_run(p, np)
    all_ = lambda v: [v] * np  # noqa: E731

    for name in ("MPI_Barrier", "MPI_Comm_rank", "MPI_Comm_size"):  # only called before the reset
        for key in ("calls", "bytes_sent", "bytes_recv"):
            assert fn(p, name, key) == all_(0), f"{name}.{key} survived MPI_Pcontrol(2)"
    assert fn(p, "MPI_Allreduce", "calls") == all_(c)
    assert fn(p, "MPI_Send", "calls") == all_(c)
    assert fn(p, "MPI_Send", "bytes_sent") == all_(c * 300)
    assert fn(p, "MPI_Recv", "calls") == all_(c)
    assert fn(p, "MPI_Recv", "bytes_recv") == all_(c * 300)
    assert matrix(p) == {(r, (r + 1) % np): (c, c * 300) for r in range(np)}
    assert hist(p, "MPI_Send") == {9: all_(c)}
    assert "MPI_Barrier" not in p["message_sizes"]

    top = by_name(p["regions"])
    assert set(top) <= {"pre", "post"} and "post" in top
    if "pre" in top:  # may be listed, but with nothing in it
        assert top["pre"]["visits"] == all_(0)
        assert all(all(v == 0 for v in f["calls"]) for f in top["pre"]["functions"].values())
    post = top["post"]
    assert post["visits"] == all_(1)
    assert calls_of(post) == {"MPI_Allreduce": all_(c), "MPI_Send": all_(c), "MPI_Recv": all_(c)}
    assert post["functions"]["MPI_Send"]["bytes_sent"] == all_(c * 300)



# examples/c/pcontrol_threads.c: 3 workers per rank; worker w's phase A (200 (w+1) MPI_Comm_size)
# before the first reset, phase B (MPI_Type_size) across the second, phase C (100 (w+1)
# MPI_Comm_rank) after both
PT_WORKERS = 3
# a thread's statistics: 514 region paths (MPILENS_MAX_REGIONS 512 + 2) x 381 functions x 72 bytes,
# 14 MB each, mapped but not backed until touched: zeroing the workers' from the main thread would
# commit 3 x 14 MB of it
PT_TOUCH_KB = 1024


def test_pcontrol_reset_threads(mpi, tmp_path):
    """MPI_Pcontrol(2) while other threads measure (MPI_THREAD_MULTIPLE): what they did before is
    dropped, what they do after is counted exactly, a call racing with the reset is one or the
    other (never lost twice, never garbage), and the reset commits none of the other threads'
    lazily mapped statistics to memory (each drops its own, with madvise, at its next call)."""
    np = 2
    job = run_example(mpi, "pcontrol_threads", np, tmp_path, ["400000"])
    if "MPI_THREAD_MULTIPLE not provided" in job.stdout:
        pytest.skip(f"{mpi}: {job.stdout.strip()}")
    assert "pcontrol_threads: ok" in job.stdout, job.stdout + job.stderr
    p = job.profile
    check_run(p, np)
    assert [r["threads"] for r in p["ranks"]] == [PT_WORKERS + 1] * np
    assert fn(p, "MPI_Comm_size", "calls") == [0] * np  # phase A and the main thread's: before the resets
    assert fn(p, "MPI_Comm_rank", "calls") == [sum(100 * (w + 1) for w in range(PT_WORKERS))] * np
    bounds = {int(r): (int(lo), int(hi)) for r, lo, hi in
              re.findall(r"^pcontrol_threads: rank (\d+) type_size between (\d+) and (\d+)$", job.stdout, re.M)}
    rss = {int(r): tuple(map(int, v)) for r, *v in
           re.findall(r"^pcontrol_threads: rank (\d+) rss_kb (\d+) (\d+) (\d+)$", job.stdout, re.M)}
    assert sorted(bounds) == sorted(rss) == list(range(np))
    calls = fn(p, "MPI_Type_size", "calls")
    for r in range(np):
        lo, hi = bounds[r]
        assert lo <= calls[r] <= hi, (r, calls[r], bounds[r])
        before, after, end = rss[r]
        assert after - before < PT_TOUCH_KB, rss[r]  # the reset touched no other thread's statistics
        assert end - after < 4 * PT_TOUCH_KB, rss[r]  # nor did the workers' catching up
    # a profile lists no function that no rank called: on a loaded machine the workers of every rank
    # may be done before the main thread resets (the program's bounds above then allow 0)
    f = p["functions"].get("MPI_Type_size")
    for r in range(np):  # no garbage: the counted calls ran after the reset, on 3 threads at once
        if calls[r] == 0:  # the workers were done before the main thread got to reset
            assert f is None or f["time_s"][r] == 0, (r, f)
            continue
        assert 0 < f["time_s"][r] < PT_WORKERS * p["ranks"][r]["wall_time_s"] and f["min_s"][r] <= f["max_s"][r] < 0.1

def test_pcontrol_snapshots(mpi, tmp_path):
    """MPI_Pcontrol(3) and (4) write mpiP's intermediate reports: each rank's statistics as of its
    n-th such call, reported with `mpilens report --snapshot n`; measuring goes on, and a snapshot
    only some ranks took says which are missing."""
    np, a, c = 3, 4, 3
    job = run_example(mpi, "pcontrol", np, tmp_path, ["snapshot", str(a), str(c)])
    assert "pcontrol snapshot: done" in job.stdout
    all_ = lambda v: [v] * np  # noqa: E731
    assert rundir.snapshots(job.rundir) == [1, 2, 3]

    first = rundir.load_snapshot(job.rundir, 1).profile
    assert fn(first, "MPI_Barrier", "calls") == all_(a)
    assert fn(first, "MPI_Send", "bytes_sent") == all_(a * 100)
    assert fn(first, "MPI_Recv", "bytes_recv") == all_(a * 100)
    assert fn(first, "MPI_Allreduce", "calls") == all_(0)
    assert matrix(first) == {(r, (r + 1) % np): (a, a * 100) for r in range(np)}

    second = rundir.load_snapshot(job.rundir, 2).profile
    assert fn(second, "MPI_Barrier", "calls") == all_(a)
    assert fn(second, "MPI_Allreduce", "calls") == all_(c)
    assert fn(second, "MPI_Send", "bytes_sent") == all_(a * 100 + c * 300)
    walls = [[r["wall_time_s"] for r in snap["ranks"]] for snap in (first, second)]
    assert all(w2 > w1 for w1, w2 in zip(*walls)), walls

    third = rundir.load_snapshot(job.rundir, 3)  # rank 0 alone
    assert fn(third.profile, "MPI_Barrier", "calls") == [a + 1, None, None]  # unmeasured, not zero
    assert any("ranks 1-2 wrote no such snapshot" in p for p in third.problems), third.problems

    final = job.profile  # the whole run is unaffected
    check_run(final, np)
    assert fn(final, "MPI_Barrier", "calls") == all_(a + 1)
    assert fn(final, "MPI_Send", "bytes_sent") == all_(a * 100 + c * 300)

    text = subprocess.run([str(MPILENS), "report", str(job.rundir), "--snapshot", "2"], capture_output=True,
                          text=True, timeout=TIMEOUT)
    assert text.returncode == 0, text.stderr
    assert "MPI_Pcontrol snapshot 2" in text.stdout and "MPI_Allreduce" in text.stdout
    # a snapshot is a part of a run that went on, not a job that failed
    assert "INCOMPLETE" not in text.stdout and "did not reach MPI_Finalize" not in text.stdout, text.stdout
    bad = subprocess.run([str(MPILENS), "report", str(job.rundir), "--snapshot", "7"], capture_output=True,
                         text=True, timeout=TIMEOUT)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "it has 1, 2, 3" in bad.stderr, bad.stderr


def test_pcontrol_requests_completed_while_stopped(mpi, tmp_path):
    """Requests started while measuring and completed (by the application) while measurement is
    stopped: the completion call is not counted, and the application left no request outstanding
    at MPI_Finalize, so the profile must not say it did."""
    np, size = 2, 128
    job = run_example(mpi, "pcontrol", np, tmp_path, ["straddle", str(size)])
    assert "pcontrol straddle: done" in job.stdout
    p = job.profile
    assert p["nranks"] == np and p["complete"] is True
    all_ = lambda v: [v] * np  # noqa: E731
    assert fn(p, "MPI_Isend", "calls") == all_(1)
    assert fn(p, "MPI_Irecv", "calls") == all_(1)
    assert fn(p, "MPI_Waitall", "calls") == all_(0)
    assert fn(p, "MPI_Barrier", "calls") == all_(1)
    assert p["dropped"]["requests_outstanding_at_finalize"] == 0, (
        f"dropped = {p['dropped']}: every request was completed by MPI_Waitall before MPI_Finalize")


def test_made_while_paused_is_right_after_resuming(mpi, tmp_path):
    """examples/c/paused.c: persistent requests created under MPI_Pcontrol(0) and started after
    MPI_Pcontrol(1) are counted (bytes under their init function, which was not called while
    measuring); a communicator and a datatype freed while paused leave no stale facts behind for
    the new ones that may get their handles (c3's reversed ranks in the matrix, t2's 32 B)."""
    NP = 4  # noqa: N806
    job = run_example(mpi, "paused", NP, tmp_path)
    assert f"paused: ok {NP}" in job.stdout, job.stdout + job.stderr
    p = job.profile
    assert p["dropped"]["requests_untracked"] == 0
    assert p["dropped"]["requests_outstanding_at_finalize"] == 0
    expected = {
        "MPI_Sendrecv": (1, 16, 16), "MPI_Send": (1, 32, 0), "MPI_Recv": (1, 0, 32),
        "MPI_Send_init": (0, 3 * 40, 0), "MPI_Recv_init": (0, 0, 3 * 40),
        "MPI_Startall": (3, 0, 0), "MPI_Waitall": (3, 0, 0), "MPI_Request_free": (2, 0, 0),
        # made while paused: not counted
        "MPI_Comm_dup": (0, 0, 0), "MPI_Comm_split": (0, 0, 0), "MPI_Type_free": (1, 0, 0),
        "MPI_Comm_free": (1, 0, 0), "MPI_Type_contiguous": (1, 0, 0),
    }
    for name, (calls, sent, recv) in expected.items():
        assert fn(p, name, "calls") == [calls] * NP, name
        assert fn(p, name, "bytes_sent") == [sent] * NP, name
        assert fn(p, name, "bytes_recv") == [recv] * NP, name
    pairs = {(m["src"], m["dst"]): (m["messages"], m["bytes"]) for m in p["matrix"]}
    assert pairs == {**{(r, (r + 1) % NP): (1 + 3, 16 + 3 * 40) for r in range(NP)},
                     **{(r, (r - 1) % NP): (1, 32) for r in range(NP)}}
