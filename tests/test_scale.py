"""The in-job aggregation at 64 ranks (oversubscribed; 32 under MPICH), both MPIs: examples/c/a2a.c.

Every rank exchanges with every other rank with a size that depends on the pair, so all
P*(P-1) entries of the matrix and every rank's counts are distinct: any entry lost, duplicated or
attributed to the wrong rank by the tree reduction in MPI_Finalize shows up. The traffic is all
blocking (MPI_Sendrecv), so that this test checks the aggregation and nothing of the request
table.
"""

from __future__ import annotations

from conftest import fn, run_example

# MPICH's ranks poll: 64 of them on this machine's 2 cores take 10 s without mpilens (Open MPI's
# yield, 1 s); 32 keep the tree five levels deep
RANKS = {"openmpi": 64, "mpich": 32}


def msg_size(src: int, dst: int) -> int:
    """Bytes of one message from src to dst (a2a.c msg_size)."""
    return 1 + (7 * src + 3 * dst) % 61


def times(src: int, dst: int, np: int) -> int:
    """Messages from src to dst: rounds k = (dst - src) mod P with k % 3 == 0 run twice."""
    return 2 if (dst - src) % np % 3 == 0 else 1


def test_aggregation_exact_at_64_ranks(mpi, tmp_path):
    np = RANKS[mpi]
    job = run_example(mpi, "a2a", np, tmp_path)
    assert f"a2a: ok {np}" in job.stdout, job.stdout + job.stderr
    p = job.profile
    assert p["nranks"] == np and p["complete"] is True
    assert [r["rank"] for r in p["ranks"]] == list(range(np))
    assert all(r["wall_time_s"] > 0 for r in p["ranks"])

    peers = [[d for d in range(np) if d != r] for r in range(np)]
    sends = [sum(times(r, d, np) for d in peers[r]) for r in range(np)]
    assert sends == [(np - 1) + (np - 1) // 3] * np
    sent = [sum(times(r, d, np) * msg_size(r, d) for d in peers[r]) for r in range(np)]
    recv = [sum(times(s, r, np) * msg_size(s, r) for s in peers[r]) for r in range(np)]
    assert len(set(sent)) > np // 2  # the per-rank values really differ

    assert fn(p, "MPI_Sendrecv", "calls") == sends
    assert fn(p, "MPI_Sendrecv", "bytes_sent") == sent
    assert fn(p, "MPI_Sendrecv", "bytes_recv") == recv
    assert fn(p, "MPI_Get_count", "calls") == sends
    assert fn(p, "MPI_Alltoall", "calls") == [1] * np
    assert fn(p, "MPI_Alltoall", "bytes_sent") == [4 * np] * np
    assert fn(p, "MPI_Alltoall", "bytes_recv") == [4 * np] * np
    assert fn(p, "MPI_Allreduce", "bytes_sent") == [4] * np
    assert fn(p, "MPI_Comm_rank", "calls") == [1] * np
    assert sorted(p["functions"]) == ["MPI_Allreduce", "MPI_Alltoall", "MPI_Comm_rank", "MPI_Comm_size",
                                      "MPI_Get_count", "MPI_Sendrecv"]
    for f in p["functions"].values():
        for key in ("calls", "time_s", "bytes_sent", "bytes_recv"):
            assert len(f[key]) == np

    assert len(p["matrix"]) == np * (np - 1)
    got = {(m["src"], m["dst"]): (m["messages"], m["bytes"]) for m in p["matrix"]}
    assert len(got) == np * (np - 1)  # no pair twice
    assert got == {(s, d): (times(s, d, np), times(s, d, np) * msg_size(s, d))
                   for s in range(np) for d in peers[s]}
    assert p["tool_cost"]["finalize_gather_s"] >= 0
