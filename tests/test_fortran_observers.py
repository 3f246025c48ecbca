"""Memory and papi modes charge a Fortran code's work to the right place: the Fortran completion
wrappers show their calls to the modes exactly as the C ones do (the entry of the call ends the
application's stretch).

examples/fortran/fcompute.f90, per rank and twice: MPI_IRECV + MPI_ISEND, then the application
allocates and touches 32 MiB (8192 fresh pages), then MPI_WAITALL (round 1) or two MPI_WAIT
(round 2). The 64 MiB and 16384 page faults are the application's; a completion wrapper that did
not tell the modes it was entered charged each round's 32 MiB (memory, smaps method) and 8192
page faults (papi) to MPI_Waitall / MPI_Wait.
"""

from __future__ import annotations

from conftest import need_perf_events, run_example
from mpilens import memory, papi

MiB = 2**20
PAGES = 2 * 8192


def test_papi_charges_fortran_compute_to_the_application(mpi, tmp_path):
    need_perf_events()
    settings = {"MPILENS_MODE": "profile,papi", "MPILENS_PAPI_EVENTS": "perf::TASK-CLOCK,perf::PAGE-FAULTS"}
    job = run_example(mpi, "fcompute", 2, tmp_path, settings=settings)
    assert "fcompute: ok 2" in job.stdout, job.stdout + job.stderr
    run = papi.load(job.rundir)
    assert run.refused == "", run.refused
    for rank in range(2):
        r = run.ranks[rank]
        assert r is not None
        compute = sum(run.value(g.compute, "perf::PAGE-FAULTS") for g in r.regions.values())
        assert PAGES <= compute <= PAGES * 1.1, (rank, compute)
        for name in ("MPI_Waitall", "MPI_Wait"):
            faults = dict(zip(run.events, r.functions[name]["counts"]))["perf::PAGE-FAULTS"]
            assert faults < 1000, (rank, name, faults)


def test_memory_charges_fortran_allocations_to_the_application(mpi, tmp_path):
    settings = {"MPILENS_MODE": "memory", "MPILENS_MEMORY_METHOD": "smaps"}
    job = run_example(mpi, "fcompute", 2, tmp_path, settings=settings)
    assert "fcompute: ok 2" in job.stdout, job.stdout + job.stderr
    run = memory.load(job.rundir)
    assert not run.problems, run.problems
    for name in ("MPI_Waitall", "MPI_Wait"):
        f = run.function(name)  # None: nothing at all charged to it
        if f is None:
            continue
        assert f["pss_grown"] < 4 * MiB, (name, f)
        assert f["allocated"] < 1 * MiB, (name, f)
