"""Cancelled requests are never transfers, under both MPIs and from C and Fortran.

examples/c/cancel.c and examples/fortran/fcancel.f90 cancel posted receives (completed by
MPI_Wait with and without a status, MPI_Waitall with MPI_STATUSES_IGNORE next to a real receive,
MPI_Test) and a started persistent receive, which then completes a real message; cancel.c also
cancels an eager send, which neither MPI can cancel, so it is then received. MPI_Test_cancelled
decides: a cancelled request adds no bytes and no message-size entry; the real ones add exactly
their bytes, once. `cancel race N` cancels, from a second thread, the receive the main thread is
waiting for (MPI_THREAD_MULTIPLE), between real exchanges that must all be counted.
Expected numbers come from the programs' headers.
"""

from __future__ import annotations

import pytest

from conftest import fn, run_example

NP = 4


def sizes(profile: dict, name: str) -> dict[int, list[int]]:
    """Message-size bins of a function: {bin: calls per rank}."""
    return {b["bin"]: b["calls"] for b in profile["message_sizes"].get(name, [])}


def bin_of(nbytes: int) -> int:
    return nbytes.bit_length()


def check(p: dict, expected: dict[str, tuple[int, int, int]]) -> None:
    assert p["complete"] is True
    assert p["dropped"]["requests_untracked"] == 0
    assert p["dropped"]["requests_outstanding_at_finalize"] == 0
    for name, (calls, sent, recv) in expected.items():
        assert fn(p, name, "calls") == [calls] * NP, name
        assert fn(p, name, "bytes_sent") == [sent] * NP, name
        assert fn(p, name, "bytes_recv") == [recv] * NP, name


@pytest.mark.parametrize("program", ["cancel", "fcancel"])
def test_cancelled_receives_move_nothing(mpi, tmp_path, program):
    job = run_example(mpi, program, NP, tmp_path)
    assert f"{program}: ok {NP}" in job.stdout, job.stdout + job.stderr
    p = job.profile
    # cancel.c also completes a cancelled receive with MPI_Test (step 4), cancels a send (step 6)
    # and completes a receive polled in vain after the process cancelled (step 7): c counts them
    c = int(program == "cancel")
    # neither Open MPI nor MPICH cancels a send; if one did, every rank's would be cancelled
    sent6 = 0 if "send cancelled" in job.stdout else 24
    expected = {
        "MPI_Irecv": (4 + 2 * c, 0, 10 * 4 + 24 * c),
        "MPI_Recv_init": (1, 0, 8 * 4),
        "MPI_Send": (2 + c, 10 * 4 + 8 * 4 + 24 * c, 0),
        "MPI_Cancel": (4 + 2 * c, 0, 0),
        "MPI_Wait": (4 + 2 * c, 0, 0),
        "MPI_Waitall": (1, 0, 0),
        "MPI_Start": (2, 0, 0),
        "MPI_Request_free": (1, 0, 0),
    }
    if c:
        # a send whose cancel failed counts its 24 B once; a cancelled one none, and is not received
        expected |= {"MPI_Isend": (1, sent6, 0), "MPI_Sendrecv": (1, 4, 4)}
        if sent6:
            expected |= {"MPI_Recv": (1, 0, 24)}
    check(p, expected)
    # one real receive of each kind and size: one size entry each, none for the cancelled ones
    irecv_bins = {bin_of(40): [1] * NP} | ({bin_of(24): [1] * NP} if c else {})
    assert sizes(p, "MPI_Irecv") == irecv_bins
    assert sizes(p, "MPI_Recv_init") == {bin_of(32): [1] * NP}
    if c:
        assert sizes(p, "MPI_Isend") == ({bin_of(24): [1] * NP} if sent6 else {})
    pairs = {(m["src"], m["dst"]): (m["messages"], m["bytes"]) for m in p["matrix"]}
    # steps 6 and 7: the flag (4 B), the send unless it was cancelled, step 7's message (24 B)
    more = (2 + bool(sent6), 4 + sent6 + 24) if c else (0, 0)
    assert pairs == {(r, (r + 1) % NP): (2 + more[0], 72 + more[1]) for r in range(NP)}


def test_cancel_races_with_wait(mpi, tmp_path):
    rounds = 300
    job = run_example(mpi, "cancel", NP, tmp_path, args=["race", str(rounds)])
    if "MPI_THREAD_MULTIPLE not provided" in job.stdout:
        pytest.fail(f"{mpi} does not provide MPI_THREAD_MULTIPLE")
    assert f"cancel: ok {NP}" in job.stdout, job.stdout + job.stderr
    p = job.profile
    check(p, {
        "MPI_Irecv": (2 * rounds, 0, rounds * 256),
        "MPI_Send": (rounds, rounds * 256, 0),
        "MPI_Cancel": (rounds, 0, 0),
        "MPI_Wait": (2 * rounds, 0, 0),
    })
    assert sizes(p, "MPI_Irecv") == {bin_of(256): [rounds] * NP}
    pairs = {(m["src"], m["dst"]): (m["messages"], m["bytes"]) for m in p["matrix"]}
    assert pairs == {(r, (r + 1) % NP): (rounds, rounds * 256) for r in range(NP)}
