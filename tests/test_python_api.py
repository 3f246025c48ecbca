"""The Python API users script against: mpilens.load and mpilens.frames."""

import mpilens
from conftest import run_example


def test_frames_match_profile(tmp_path):
    n, size, np = 3, 500, 3
    job = run_example("mpich", "ring", np, tmp_path, [str(n), str(size)])
    run = mpilens.load(job.rundir)
    df = mpilens.frames.functions(run)
    send = df[df.function == "MPI_Send"]
    assert list(send["rank"]) == list(range(np))
    assert list(send["calls"]) == [n] * np and list(send["bytes_sent"]) == [n * size] * np
    regions = mpilens.frames.functions(run, by_region=True)
    assert set(regions.region) == {"ring", "check"}
    assert regions[(regions.region == "ring") & (regions.function == "MPI_Recv")]["bytes_recv"].sum() == np * n * size
    m = mpilens.frames.matrix(run)
    assert sorted(zip(m.src, m.dst, m.messages, m.bytes)) == [(r, (r + 1) % np, n, n * size) for r in range(np)]
    assert list(mpilens.frames.ranks(run)["rank"]) == list(range(np))
    sizes = mpilens.frames.message_sizes(run)
    assert sizes[(sizes.function == "MPI_Send")]["bin"].unique().tolist() == [size.bit_length()]
