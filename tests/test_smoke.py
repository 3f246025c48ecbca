"""The shortest path through the tool: a ring under both MPIs, exact counts per rank."""

from conftest import fn, run_example


def test_ring_exact(mpi, tmp_path):
    n, size, np = 7, 3000, 4
    job = run_example(mpi, "ring", np, tmp_path, [str(n), str(size)])
    p = job.profile
    assert p["nranks"] == np and p["complete"] is True
    assert fn(p, "MPI_Send", "calls") == [n] * np
    assert fn(p, "MPI_Send", "bytes_sent") == [n * size] * np
    assert fn(p, "MPI_Recv", "bytes_recv") == [n * size] * np
    assert fn(p, "MPI_Allreduce", "bytes_sent") == [8] * np
    pairs = {(m["src"], m["dst"]): (m["messages"], m["bytes"]) for m in p["matrix"]}
    assert pairs == {(r, (r + 1) % np): (n, n * size) for r in range(np)}
    ring, check = p["regions"]
    assert (ring["name"], check["name"]) == ("ring", "check")
    assert ring["visits"] == [1] * np
    assert ring["functions"]["MPI_Send"]["calls"] == [n] * np
    assert "MPI_Allreduce" not in ring["functions"]
    assert check["functions"]["MPI_Allreduce"]["calls"] == [1] * np
    assert "ring: 7 messages of 3000 bytes, sum of ranks 6" in job.stdout
