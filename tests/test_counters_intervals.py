"""User counters (mpilens_counter_add/set) and compute intervals (MPILENS_INTERVALS)."""

import numpy
import pytest

import mpilens.intervals
from conftest import fn, run_example


def test_user_counters(mpi, tmp_path):
    iters, np = 4, 3
    p = run_example(mpi, "counters", np, tmp_path, [str(iters), "100"]).profile
    c = p["counters"]
    assert c["cells"] == {"kind": "sum", "values": [iters * (r + 1) for r in range(np)]}
    assert c["setup"] == {"kind": "sum", "values": [0.5] * np}
    assert c["efficiency"]["kind"] == "last"
    assert c["efficiency"]["values"] == pytest.approx([1 / (r + 1) + iters - 1 for r in range(np)])
    (step,) = p["regions"]
    assert step["counters"]["cells"]["values"] == [iters * (r + 1) for r in range(np)]
    assert "setup" not in step["counters"]
    assert step["functions"]["MPI_Barrier"]["calls"] == [iters] * np


def test_intervals(mpi, tmp_path):
    iters, sleep_us, np = 6, 20000, 2
    job = run_example(mpi, "counters", np, tmp_path, [str(iters), str(sleep_us)],
                      settings={"MPILENS_INTERVALS": "1"})
    p = job.profile
    assert p["intervals"]["recorded"] == [iters] * np and p["intervals"]["dropped"] == [0] * np
    iv = mpilens.intervals.load(job.rundir)
    assert iv.compute.shape == (np, iters)
    # each rank computes (sleeps) about (r + 1) * sleep_us before every barrier, and never less
    for r in range(np):
        assert (iv.compute[r] >= (r + 1) * sleep_us * 1e-6 * 0.95).all(), iv.compute[r]
    # the slowest rank sets every step: the maxima are its intervals
    assert (iv.maxima == iv.compute[np - 1]).all()
    # rank 0 waits in the barrier for rank 1's longer compute: over the steps, at least the
    # difference of the two ranks' compute times. Per step that difference is what a pause moves
    # (a paused sleep lengthens the compute and shortens the wait; a rank paused as it leaves the
    # barrier moves wait into the next step: once in CI a step waited 3.4 ms instead of ~20), and
    # MPICH lets rank 1 leave each barrier 4-12 ms after rank 0 here, which only adds to the waits.
    extra = iv.compute[1][1:] - iv.compute[0][1:]
    assert iv.collective[0][1:].sum() >= extra.sum() - 2e-3, (iv.collective[0], extra)
    assert numpy.median(extra) >= 0.5 * sleep_us * 1e-6, extra
    assert fn(p, "MPI_Barrier", "calls") == [iters] * np


@pytest.mark.mpi
def test_no_intervals_by_default(tmp_path):
    job = run_example("openmpi", "counters", 2, tmp_path, ["2", "10"])
    assert "intervals" not in job.profile
    with pytest.raises(mpilens.errors.RunDirectoryError, match="MPILENS_INTERVALS"):
        mpilens.intervals.load(job.rundir)
