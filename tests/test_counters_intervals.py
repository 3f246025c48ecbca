"""User counters (mpilens_counter_add/set) and compute intervals (MPILENS_INTERVALS)."""

import re

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
    # from the second step on, each compute interval is what the rank measured itself from the
    # return of its previous MPI_Barrier to its call of the next (the program prints it): at least
    # that (0.1 ms for the two clocks' rates), and more only by the wrappers' own moments and the
    # CPU taken from the rank within them. A loaded machine stretches the sleeps themselves (a 20 ms
    # sleep took 210 ms beside two other test suites), which both clocks see.
    own, left = numpy.zeros((np, iters)), numpy.zeros((np, iters))
    for r, k, t, t_left in re.findall(r"^counters: rank (\d+) step (\d+) compute ([\d.]+) left ([\d.]+)$",
                                      job.stdout, re.M):
        own[int(r), int(k)], left[int(r), int(k)] = float(t), float(t_left)
    assert (own[:, 1:] > 0).all(), job.stdout
    assert (iv.compute[:, 1:] >= own[:, 1:] - 1e-4).all() and (iv.compute[:, 1:] <= own[:, 1:] + 0.02).all(), (
        iv.compute, own)
    # the maxima are the slowest rank's interval of each step
    assert (iv.maxima == iv.compute.max(axis=0)).all()
    # rank 0 waits in the barrier for rank 1's longer compute: each step, at least the difference of
    # the two ranks' compute times, less what rank 0 left the previous barrier after rank 1 (the
    # ranks' own clocks say when: a rank paused as it leaves a barrier starts the step late, which
    # shortens its wait; MPICH lets rank 1 leave each barrier 4-12 ms after rank 0 here, which
    # only adds to the waits)
    extra = iv.compute[1][1:] - iv.compute[0][1:]
    late = numpy.maximum(0.0, left[0][1:] - left[1][1:])
    assert (iv.collective[0][1:] >= extra - late - 5e-4).all(), (iv.collective[0], extra, late)
    assert fn(p, "MPI_Barrier", "calls") == [iters] * np


@pytest.mark.mpi
def test_no_intervals_by_default(tmp_path):
    job = run_example("openmpi", "counters", 2, tmp_path, ["2", "10"])
    assert "intervals" not in job.profile
    with pytest.raises(mpilens.errors.RunDirectoryError, match="MPILENS_INTERVALS"):
        mpilens.intervals.load(job.rundir)
