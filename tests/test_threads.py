"""MPI_THREAD_MULTIPLE under mpilens, both MPIs: examples/c/threads.c.

Four pthreads per rank each exchange K messages of S bytes with the same thread of the neighbour
ranks (blocking MPI_Send/MPI_Recv and MPI_Isend/MPI_Irecv + MPI_Waitall), then start one
MPI_Isend and one MPI_Irecv whose completion (MPI_Wait) is done by another thread. The per-thread
buffers of the runtime are merged at finalize: the totals per rank must be exact.
"""

from __future__ import annotations

import pytest

from conftest import fn, run_example

NP = 4
NTHREADS = 4  # threads.c NTHREADS


def expected_functions(k: int, s: int) -> dict[str, tuple[int, int, int]]:
    """Per-rank (calls, bytes_sent, bytes_recv) of the worker threads' MPI calls."""
    blocking, nonblocking = (k + 1) // 2, k // 2
    return {
        "MPI_Send": (NTHREADS * blocking, NTHREADS * blocking * s, 0),
        "MPI_Recv": (NTHREADS * blocking, 0, NTHREADS * blocking * s),
        # K/2 exchanges completed by MPI_Waitall + 1 handed to the next thread
        "MPI_Isend": (NTHREADS * (nonblocking + 1), NTHREADS * (nonblocking + 1) * s, 0),
        "MPI_Irecv": (NTHREADS * (nonblocking + 1), 0, NTHREADS * (nonblocking + 1) * s),
        "MPI_Waitall": (NTHREADS * nonblocking, 0, 0),
        "MPI_Wait": (2 * NTHREADS, 0, 0),
    }


def run_threads(mpi: str, tmp_path, k: int, s: int) -> dict:
    job = run_example(mpi, "threads", NP, tmp_path, [str(k), str(s)])
    if "MPI_THREAD_MULTIPLE not provided" in job.stdout:
        pytest.skip(f"{mpi}: {job.stdout.strip()}")
    assert f"threads: ok, {NP} ranks x {NTHREADS} threads, {k + 1} messages of {s} bytes each way" in job.stdout, \
        job.stdout + job.stderr
    return job.profile


@pytest.mark.parametrize("k,s", [(20, 4096), (6, 200_000)], ids=["eager", "large"])
def test_threads_exact_totals(mpi, tmp_path, k, s):
    p = run_threads(mpi, tmp_path, k, s)
    assert p["nranks"] == NP and p["complete"] is True
    assert p["dropped"]["requests_untracked"] == 0
    assert p["dropped"]["requests_outstanding_at_finalize"] == 0
    assert [r["threads"] for r in p["ranks"]] == [NTHREADS + 1] * NP  # main thread + workers

    expected = {name: tuple([v] * NP for v in vals) for name, vals in expected_functions(k, s).items()}
    expected["MPI_Allreduce"] = ([1] * NP, [8] * NP, [8] * NP)  # main thread: 2 ints
    communication = {name for name, f in p["functions"].items() if f["class"] != "setup"}
    assert communication == set(expected)
    for name, (calls, sent, recv) in expected.items():
        assert fn(p, name, "calls") == calls, name
        assert fn(p, name, "bytes_sent") == sent, name
        assert fn(p, name, "bytes_recv") == recv, name
    assert fn(p, "MPI_Comm_rank", "calls") == [1] * NP
    assert fn(p, "MPI_Comm_size", "calls") == [1] * NP

    pairs = {(m["src"], m["dst"]): (m["messages"], m["bytes"]) for m in p["matrix"]}
    n = NTHREADS * (k + 1)
    assert pairs == {(r, (r + 1) % NP): (n, n * s) for r in range(NP)}


def test_threads_region_per_thread(mpi, tmp_path):
    """Every thread opens region "exchange" once; the region holds all the workers' calls."""
    k, s = 10, 1000
    p = run_threads(mpi, tmp_path, k, s)
    assert p["dropped"]["region_mismatches"] == 0
    (exchange,) = p["regions"]
    assert exchange["name"] == "exchange"
    assert exchange["visits"] == [NTHREADS] * NP
    got = {name: (f["calls"], f["bytes_sent"], f["bytes_recv"]) for name, f in exchange["functions"].items()}
    assert got == {name: tuple([v] * NP for v in vals) for name, vals in expected_functions(k, s).items()}


def test_serialized_handoff_and_growth(mpi, tmp_path):
    """examples/c/handoff.c under MPI_THREAD_SERIALIZED: N = 5000 requests outstanding at once (the
    thread's request table grows several times), requests posted by a thread that then exits and
    completed by the main thread (Waitany one by one, Waitall), persistent requests created by that
    thread and started, completed and freed by the main one. Counts and bytes from the program."""
    n, m = 5000, 100
    job = run_example(mpi, "handoff", 2, tmp_path, [str(n), str(m)])
    if "not provided" in job.stdout:
        pytest.skip(f"{mpi}: {job.stdout.strip()}")
    assert "handoff: ok" in job.stdout, job.stdout + job.stderr
    p = job.profile
    assert p["dropped"]["requests_untracked"] == 0
    assert p["dropped"]["requests_outstanding_at_finalize"] == 0
    both = [1, 1]
    assert fn(p, "MPI_Isend", "calls") == [n + m, m] and fn(p, "MPI_Irecv", "calls") == [m, n + m]
    assert fn(p, "MPI_Isend", "bytes_sent") == [8 * n + 16 * m, 16 * m]
    assert fn(p, "MPI_Irecv", "bytes_recv") == [16 * m, 8 * n + 16 * m]
    assert fn(p, "MPI_Waitany", "calls") == [m, m]
    assert fn(p, "MPI_Waitall", "calls") == [1 + 1 + 3] * 2
    assert fn(p, "MPI_Startall", "calls") == [3, 3]
    assert fn(p, "MPI_Send_init", "calls") == both and fn(p, "MPI_Recv_init", "calls") == both
    assert fn(p, "MPI_Send_init", "bytes_sent") == [3 * 32] * 2
    assert fn(p, "MPI_Recv_init", "bytes_recv") == [3 * 32] * 2
    assert fn(p, "MPI_Request_free", "calls") == [2, 2]
    pairs = {(x["src"], x["dst"]): (x["messages"], x["bytes"]) for x in p["matrix"]}
    assert pairs == {(0, 1): (n + m + 3, 8 * n + 16 * m + 3 * 32), (1, 0): (m + 3, 16 * m + 3 * 32)}
