"""Fortran (mpif.h and `use mpi`) applications under mpilens, both of Debian's MPIs (and the mpif.h
traffic on Intel MPI, built with its own mpif90).

The Fortran wrappers pass their arguments untouched to the MPI library's Fortran entry point and
account the call under its C name. These tests check, with exact numbers derived from the MPI
semantics of each call (runtime/spec/semantics.yaml, "buffer view"):
- every Fortran call is counted once (no second count when the MPI's Fortran library forwards to
  the C MPI_ symbol), under the C name, with the right bytes per rank and the right matrix;
- the sentinels MPI_STATUS_IGNORE, MPI_STATUSES_IGNORE and MPI_IN_PLACE are recognised, and
  receive sizes come from the status even when the application ignores it (larger buffers);
- the application's numbers do not change under the tool (MPI_IN_PLACE reductions printed with
  full precision, compared with a run without mpilens).
"""

from __future__ import annotations

import math
import re
import subprocess

import pytest

from conftest import BUILD, MPIS, example, fn, plain_run, run_example

NP = 4

# ----------------------------------------------------------------------------- ftraffic
# Bytes of each transfer in examples/fortran/ftraffic.f90 (INTEGER 4 B, DOUBLE PRECISION 8 B).
RING = 3 * [100 * 4]            # MPI_SEND/MPI_RECV to right / from left, MPI_STATUS_IGNORE
ANY = [37 * 8, 21 * 8]          # MPI_SEND to right, MPI_RECV(MPI_ANY_SOURCE) into 1000 doubles
ISEND_RIGHT = 123 * 4           # MPI_ISEND to right; matching MPI_IRECV has room for 500 INTEGER
ISEND_LEFT = 50 * 8             # MPI_ISEND to left; matching MPI_IRECV of exactly 50 doubles
SENDRECV = 16 * 4               # MPI_SENDRECV to right; receive count 32 INTEGER, 16 arrive
BCAST, BCAST_ROOT = 10 * 8, 1
ALLREDUCE = 3 * 4
ALLTOALL_PER_PEER = 2 * 4

P2P_FUNCTIONS = {
    # name: (calls, bytes_sent, bytes_recv) per rank
    "MPI_Send": (len(RING) + len(ANY), sum(RING) + sum(ANY), 0),
    "MPI_Recv": (len(RING) + len(ANY), 0, sum(RING) + sum(ANY)),
    "MPI_Isend": (2, ISEND_RIGHT + ISEND_LEFT, 0),
    "MPI_Irecv": (2, 0, ISEND_RIGHT + ISEND_LEFT),
    "MPI_Waitall": (1, 0, 0),
    "MPI_Sendrecv": (1, SENDRECV, SENDRECV),
    "MPI_Get_count": (1, 0, 0),
}


def coll_functions(np: int) -> dict[str, tuple[list[int], list[int], list[int]]]:
    """Per-rank (calls, bytes_sent, bytes_recv) of the collectives of region "coll"."""
    return {
        "MPI_Bcast": ([1] * np, [BCAST if r == BCAST_ROOT else 0 for r in range(np)],
                      [0 if r == BCAST_ROOT else BCAST for r in range(np)]),
        "MPI_Allreduce": ([1] * np, [ALLREDUCE] * np, [ALLREDUCE] * np),
        "MPI_Alltoall": ([1] * np, [ALLTOALL_PER_PEER * np] * np, [ALLTOALL_PER_PEER * np] * np),
    }


def per_rank(np: int, functions: dict[str, tuple[int, int, int]]) -> dict[str, tuple[list[int], ...]]:
    return {k: tuple([v] * np for v in vals) for k, vals in functions.items()}


def observed(functions: dict) -> dict[str, tuple[list[int], list[int], list[int]]]:
    return {k: (v["calls"], v["bytes_sent"], v["bytes_recv"]) for k, v in functions.items()}


@pytest.mark.parametrize("mpi", [*MPIS, pytest.param("impi", marks=pytest.mark.matrix)])
def test_ftraffic_exact(mpi, tmp_path):
    job = run_example(mpi, "ftraffic", NP, tmp_path)
    assert f"ftraffic: ok {NP}" in job.stdout, job.stdout + job.stderr
    assert "wrong values" not in job.stdout
    p = job.profile
    assert p["nranks"] == NP and p["complete"] is True
    assert p["dropped"]["requests_untracked"] == 0
    assert p["dropped"]["requests_outstanding_at_finalize"] == 0

    expected = {**per_rank(NP, P2P_FUNCTIONS), **coll_functions(NP),
                "MPI_Comm_rank": ([1] * NP, [0] * NP, [0] * NP),
                "MPI_Comm_size": ([1] * NP, [0] * NP, [0] * NP)}
    # The exact set of names: a Fortran call counted a second time (C symbol reached through the
    # MPI's Fortran library) or under another name would show up here.
    assert sorted(p["functions"]) == sorted(expected)
    for name, (calls, sent, recv) in expected.items():
        assert fn(p, name, "calls") == calls, name
        assert fn(p, name, "bytes_sent") == sent, name
        assert fn(p, name, "bytes_recv") == recv, name

    right = sum(RING) + sum(ANY) + ISEND_RIGHT + SENDRECV
    nright = len(RING) + len(ANY) + 1 + 1
    pairs = {(m["src"], m["dst"]): (m["messages"], m["bytes"]) for m in p["matrix"]}
    assert pairs == {**{(r, (r + 1) % NP): (nright, right) for r in range(NP)},
                     **{(r, (r - 1) % NP): (1, ISEND_LEFT) for r in range(NP)}}


@pytest.mark.parametrize("mpi", [*MPIS, pytest.param("impi", marks=pytest.mark.matrix)])
def test_ftraffic_regions(mpi, tmp_path):
    p = run_example(mpi, "ftraffic", NP, tmp_path).profile
    assert p["dropped"]["region_mismatches"] == 0
    assert [r["name"] for r in p["regions"]] == ["p2p", "coll"]
    p2p, coll = p["regions"]
    assert p2p["visits"] == [1] * NP and coll["visits"] == [1] * NP
    assert observed(p2p["functions"]) == per_rank(NP, P2P_FUNCTIONS)
    assert observed(coll["functions"]) == coll_functions(NP)
    assert p2p["regions"] == [] and coll["regions"] == []


# ----------------------------------------------------------------------------- inplace
def inplace_expected(np: int) -> tuple[list[float], list[int], list[list[float]]]:
    """What examples/fortran/inplace.f90 computes, in exact arithmetic (up to rounding)."""
    n, m = 5, 4
    x = [[1.0 / (3.0 * (r + 1) + i) + math.sqrt(r + i) * 1e-3 + (r + 1) * 10.0 ** (3 * i - 9)
          for i in range(1, n + 1)] for r in range(np)]
    total = [math.fsum(x[r][i] for r in range(np)) for i in range(n)]
    k = [sum((r + 1) * 1000003 + 7 for r in range(np)),
         sum(-(r * 31 + 2) for r in range(np)),
         sum(2 ** 20 + r * 3 for r in range(np))]
    g = [[total[i] / (r + 1) + 1.0 / (7.0 + r * m + i + 1) for i in range(m)] for r in range(np)]
    return total, k, g


def program_output(text: str) -> list[str]:
    return [line for line in text.splitlines() if not line.startswith("mpilens:")]


def test_inplace_same_output(mpi, tmp_path):
    """The numbers printed under mpilens are bit for bit those of a plain run, and right."""
    exe = str(example(mpi, "inplace"))
    plain = plain_run(mpi, NP, [exe])
    assert plain.returncode == 0, plain.stderr
    job = run_example(mpi, "inplace", NP, tmp_path)
    assert program_output(job.stdout) == program_output(plain.stdout)
    out = program_output(job.stdout)
    assert out[-1] == f"inplace: done {NP}"

    values: dict[tuple[str, ...], str] = {}
    for line in out[:-1]:
        *key, value = line.split()
        values[tuple(key)] = value
    assert len(values) == 5 + 5 + 3 + 5 + 4 * NP
    total, k, g = inplace_expected(NP)
    for i in range(5):
        for what in (("allreduce", "oop"), ("allreduce", "in_place"), ("reduce", "in_place")):
            got = float(values[(*what, str(i + 1))])
            assert math.isclose(got, total[i], rel_tol=1e-14), (what, i, got, total[i])
            # 17 significant digits: the full precision of a double
            assert re.fullmatch(r"-?\d\.\d{16}E[+-]\d{3}", values[(*what, str(i + 1))])
    assert [int(values[("allreduce", "int", "in_place", str(i + 1))]) for i in range(3)] == k
    for r in range(NP):
        for i in range(4):
            got = float(values[("gather", "in_place", str(r), str(i + 1))])
            assert math.isclose(got, g[r][i], rel_tol=1e-14), (r, i, got, g[r][i])


def test_inplace_profile(mpi, tmp_path):
    """MPI_IN_PLACE moves the same bytes as the out-of-place call (semantics.yaml)."""
    p = run_example(mpi, "inplace", NP, tmp_path).profile
    n, m, root = 5, 4, 0
    expected_regions = {
        "oop": {"MPI_Allreduce": ([1] * NP, [n * 8] * NP, [n * 8] * NP)},
        "dp": {"MPI_Allreduce": ([1] * NP, [n * 8] * NP, [n * 8] * NP)},
        "int": {"MPI_Allreduce": ([1] * NP, [3 * 4] * NP, [3 * 4] * NP)},
        # every rank contributes its block, the root receives one
        "reduce": {"MPI_Reduce": ([1] * NP, [n * 8] * NP, [n * 8 if r == root else 0 for r in range(NP)])},
        # the root's own block counts as sent (recvcount*recvtype) and received with the others
        "gather": {"MPI_Gather": ([1] * NP, [m * 8] * NP, [m * 8 * NP if r == root else 0 for r in range(NP)])},
    }
    assert [r["name"] for r in p["regions"]] == list(expected_regions)
    for region in p["regions"]:
        assert region["visits"] == [1] * NP, region["name"]
        assert observed(region["functions"]) == expected_regions[region["name"]], region["name"]

    assert sorted(p["functions"]) == ["MPI_Allreduce", "MPI_Comm_rank", "MPI_Comm_size", "MPI_Gather",
                                      "MPI_Reduce"]
    assert fn(p, "MPI_Allreduce", "calls") == [3] * NP
    assert fn(p, "MPI_Allreduce", "bytes_sent") == [(n + n) * 8 + 3 * 4] * NP
    assert fn(p, "MPI_Allreduce", "bytes_recv") == [(n + n) * 8 + 3 * 4] * NP
    assert p["matrix"] == []


# ----------------------------------------------------------------------------- mpi_f08
# Bytes of each transfer in examples/fortran/f08traffic.f90 (use mpi_f08, IERROR mostly omitted).
F08_RING = 2 * [100 * 4]        # measured ring exchanges; a third one runs under MPI_Pcontrol(0)
F08_ANY = 37 * 8                # received with MPI_ANY_SOURCE / MPI_ANY_TAG into 1000 doubles
F08_NB = 123 * 4                # MPI_Irecv has room for 500 INTEGER, 123 arrive
F08_PERSISTENT = 4 * 10 * 8     # 3 x Startall + 1 x Start of each persistent request, 10 doubles
F08_INPLACE = 3 * 4             # MPI_Allreduce(MPI_IN_PLACE) of 3 INTEGER, then one of nbad (4 B)


def f08_expected(np: int) -> dict[str, tuple[list[int], list[int], list[int]]]:
    root = min(1, np - 1)
    one = {
        "MPI_Send": (len(F08_RING) + 1, sum(F08_RING) + F08_ANY, 0),
        "MPI_Recv": (len(F08_RING) + 1, 0, sum(F08_RING) + F08_ANY),
        "MPI_Get_count": (1, 0, 0),
        "MPI_Isend": (3, 3 * F08_NB, 0),  # completed by MPI_Waitall, MPI_Testany, MPI_Testsome
        "MPI_Irecv": (3, 0, 3 * F08_NB),
        "MPI_Send_init": (1, F08_PERSISTENT, 0),
        "MPI_Recv_init": (1, 0, F08_PERSISTENT),
        "MPI_Startall": (3, 0, 0),
        "MPI_Start": (2, 0, 0),
        "MPI_Waitall": (1 + 3, 0, 0),
        "MPI_Wait": (2, 0, 0),
        "MPI_Request_free": (2, 0, 0),
        "MPI_Allreduce": (2, F08_INPLACE + 4, F08_INPLACE + 4),
        "MPI_Barrier": (1, 0, 0),
        "MPI_Comm_rank": (1, 0, 0),
        "MPI_Comm_size": (1, 0, 0),
    }
    out = per_rank(np, one)
    out["MPI_Bcast"] = ([1] * np, [80 if r == root else 0 for r in range(np)], [0 if r == root else 80 for r in range(np)])
    return out


def test_f08_exact(mpi, tmp_path):
    """Every mpi_f08 call is measured once, under its C name, with the bytes of the C binding:
    blocking, nonblocking and persistent point-to-point, MPI_STATUS(ES)_IGNORE, wildcard receives
    (bytes from the status), MPI_IN_PLACE, and nothing between MPI_Pcontrol(0) and (1)."""
    job = run_example(mpi, "f08traffic", NP, tmp_path)
    assert f"f08traffic: ok {NP}" in job.stdout, job.stdout + job.stderr
    p = job.profile
    assert p["nranks"] == NP and p["complete"] is True
    assert p["dropped"]["requests_untracked"] == 0
    assert p["dropped"]["requests_outstanding_at_finalize"] == 0
    expected = f08_expected(NP)
    polls = {name: p["functions"].pop(name) for name in ("MPI_Testany", "MPI_Testsome")}
    for name, least in (("MPI_Testany", 2), ("MPI_Testsome", 1)):  # polled until both completed
        f = polls[name]
        assert all(c >= least for c in f["calls"]), (name, f["calls"])
        assert f["bytes_sent"] == [0] * NP and f["bytes_recv"] == [0] * NP
    assert sorted(p["functions"]) == sorted(expected)
    assert observed(p["functions"]) == expected
    # to the right: 2 ring + 1 wildcard + 3 Isend + 4 persistent sends
    pairs = {(m["src"], m["dst"]): (m["messages"], m["bytes"]) for m in p["matrix"]}
    assert pairs == {(r, (r + 1) % NP): (2 + 1 + 3 + 4, sum(F08_RING) + F08_ANY + 3 * F08_NB + F08_PERSISTENT)
                     for r in range(NP)}


def test_f08_same_output(mpi, tmp_path):
    """The in-place reduction's result under mpilens is that of a plain run."""
    exe = str(example(mpi, "f08traffic"))
    plain = plain_run(mpi, NP, [exe])
    assert plain.returncode == 0, plain.stderr
    job = run_example(mpi, "f08traffic", NP, tmp_path)
    assert program_output(job.stdout) == program_output(plain.stdout)
    s = NP * (NP - 1) // 2
    assert f"f08traffic: in place {s:8d}{NP:8d}{NP * NP:8d}" in job.stdout


# ----------------------------------------------------------------------------- mpi_f08 any/some
F08_COMPLETE = 123 * 4  # each round's message; the MPI_Irecv has room for 500 INTEGER


def test_f08_any_some(mpi, tmp_path):
    """MPI_Waitany, MPI_Waitsome, MPI_Testany and MPI_Testsome through mpi_f08 (examples/fortran/
    f08complete.f90): each call counted once under its C name, as many as the program made, and
    the receives' bytes from the statuses the program ignores."""
    job = run_example(mpi, "f08complete", NP, tmp_path)
    assert f"f08complete: ok {NP}" in job.stdout, job.stdout + job.stderr
    made = {int(m[0]): tuple(map(int, m[1:])) for m in
            re.findall(r"^f08complete: rank (\d+) waitsome (\d+) testany (\d+) testsome (\d+)$", job.stdout, re.M)}
    assert sorted(made) == list(range(NP))
    p = job.profile
    assert p["complete"] is True and p["dropped"]["requests_untracked"] == 0
    assert p["dropped"]["requests_outstanding_at_finalize"] == 0
    expected = per_rank(NP, {
        "MPI_Irecv": (4, 0, 4 * F08_COMPLETE),
        "MPI_Isend": (4, 4 * F08_COMPLETE, 0),
        "MPI_Waitany": (3, 0, 0),
        "MPI_Allreduce": (1, 4, 4),
        "MPI_Comm_rank": (1, 0, 0),
        "MPI_Comm_size": (1, 0, 0),
    })
    for k, name in enumerate(("MPI_Waitsome", "MPI_Testany", "MPI_Testsome")):
        expected[name] = ([made[r][k] for r in range(NP)], [0] * NP, [0] * NP)
    assert observed(p["functions"]) == expected
    assert {(m["src"], m["dst"]): (m["messages"], m["bytes"]) for m in p["matrix"]} == {
        (r, (r + 1) % NP): (4, 4 * F08_COMPLETE) for r in range(NP)}


# ----------------------------------------------------------------------------- mpi_f08 large counts
def test_f08_large_count(mpi, tmp_path):
    """Counts of kind MPI_COUNT_KIND through mpi_f08 reach the large-count procedures, measured
    under their C names (MPI_Send_c, ...) with the bytes of the C binding (examples/fortran/
    f08large.f90); Open MPI 4.1 has none."""
    job = run_example(mpi, "f08large", 2, tmp_path)
    if "f08large: no large-count procedures" in job.stdout:
        assert mpi == "openmpi"
        pytest.skip("Open MPI 4.1 implements MPI 3.1: no large-count procedures")
    assert "f08large: ok" in job.stdout, job.stdout + job.stderr
    p = job.profile
    assert p["complete"] is True and p["dropped"]["requests_untracked"] == 0
    assert observed(p["functions"]) == {
        "MPI_Send_c": ([1, 0], [400, 0], [0, 0]),
        "MPI_Recv_c": ([0, 1], [0, 0], [0, 400]),
        "MPI_Irecv_c": ([1, 1], [0, 0], [200, 200]),
        "MPI_Isend_c": ([1, 1], [200, 200], [0, 0]),
        "MPI_Waitall": ([1, 1], [0, 0], [0, 0]),
        "MPI_Bcast_c": ([1, 1], [80, 0], [0, 80]),
        "MPI_Allreduce": ([1, 1], [4, 4], [4, 4]),
        "MPI_Comm_rank": ([1, 1], [0, 0], [0, 0]),
    }
    assert {(m["src"], m["dst"]): (m["messages"], m["bytes"]) for m in p["matrix"]} == {(0, 1): (2, 600),
                                                                                        (1, 0): (1, 200)}


# ----------------------------------------------------------------------------- MPI Sessions
def test_f08_sessions_only(mpi, tmp_path):
    """examples/fortran/fsessions.f90 starts MPI with MPI_Session_init from mpi_f08 and never calls
    MPI_Init: measured from its MPI_Session_init to its MPI_Session_finalize, every call with its
    bytes, the matrix in the ranks of mpi://WORLD. Open MPI 4.1 has no Sessions: the program makes
    no MPI call, and mpilens says nothing was measured."""
    job = run_example(mpi, "fsessions", NP, tmp_path, check=False)
    if "fsessions: no MPI Sessions" in job.stdout:
        assert mpi == "openmpi" and job.returncode == 1 and "nor MPI_Session_init" in job.stderr, job.stderr
        pytest.skip("Open MPI 4.1 implements MPI 3.1: no Sessions")
    assert job.returncode == 0 and f"fsessions: ok {NP}" in job.stdout, job.stdout + job.stderr
    p = job.profile
    assert p["complete"] is True and p["nranks"] == NP
    msg = 100 * 4
    # its one session's MPI_Session_init and MPI_Session_finalize bound the measurements
    assert observed(p["functions"]) == per_rank(NP, {
        "MPI_Send": (5, 5 * msg, 0), "MPI_Recv": (5, 0, 5 * msg), "MPI_Allreduce": (1, 4, 4),
        "MPI_Group_from_session_pset": (1, 0, 0), "MPI_Comm_create_from_group": (1, 0, 0),
        "MPI_Group_free": (1, 0, 0), "MPI_Comm_rank": (1, 0, 0), "MPI_Comm_size": (1, 0, 0),
        "MPI_Comm_free": (1, 0, 0)})
    assert {(m["src"], m["dst"]): (m["messages"], m["bytes"]) for m in p["matrix"]} == {
        (r, (r + 1) % NP): (5, 5 * msg) for r in range(NP)}


# ----------------------------------------------------------------------------- fmodule
@pytest.mark.parametrize("mpi", MPIS)
def test_annotations_through_the_fortran_module(mpi, tmp_path):
    """examples/fortran/fmodule.f90 annotates through `use mpilens` (runtime/include/mpilens.f90):
    `steps` visits of "step" each holding one of "halo" with its one MPI_SENDRECV, rank+1 cells
    added per step inside "step", "efficiency" set to 1/(rank+1) at the end; the names reach the
    runtime without the blanks Fortran pads them with."""
    steps = 7
    job = run_example(mpi, "fmodule", NP, tmp_path, [str(steps)])
    assert f"fmodule: ok {NP} ranks {steps}" in job.stdout, job.stdout
    p = job.profile
    assert p["dropped"]["region_mismatches"] == 0
    (step,) = p["regions"]
    (halo,) = step["regions"]
    assert (step["name"], halo["name"]) == ("step", "halo")
    assert step["visits"] == [steps] * NP and halo["visits"] == [steps] * NP
    assert fn({"functions": halo["functions"]}, "MPI_Sendrecv", "calls") == [steps] * NP
    assert fn({"functions": halo["functions"]}, "MPI_Sendrecv", "bytes_sent") == [steps * 4] * NP
    assert "MPI_Sendrecv" not in step["functions"]
    assert step["counters"]["cells"] == {"kind": "sum", "values": [steps * (r + 1) for r in range(NP)]}
    assert p["counters"]["cells"]["values"] == [steps * (r + 1) for r in range(NP)]
    assert p["counters"]["efficiency"]["kind"] == "last"
    assert p["counters"]["efficiency"]["values"] == pytest.approx([1 / (r + 1) for r in range(NP)])


def test_the_fortran_module_makes_the_compiler_check_each_call(tmp_path):
    """Without the module a default REAL passed as a counter's value compiles (and the runtime
    reads 8 bytes of a 4-byte value); with it, gfortran refuses the call. No MPI job: the module
    has no code to link."""
    def compile_calls(calls: str) -> subprocess.CompletedProcess:
        src = tmp_path / "p.f90"
        src.write_text(f"program p\n  use mpilens\n{calls}end program\n")
        return subprocess.run(["gfortran", "-c", f"-I{BUILD / 'include'}", "-o", str(tmp_path / "p.o"), str(src)],
                              capture_output=True, text=True, cwd=tmp_path)

    wrong = compile_calls("  call mpilens_counter_add('x', 1.0)\n")
    assert wrong.returncode != 0 and "Type mismatch in argument" in wrong.stderr, wrong.stderr
    right = compile_calls("  call mpilens_counter_add('x', 1.0d0)\n  call mpilens_region_begin('r')\n"
                          "  call mpilens_region_end('r')\n")
    assert right.returncode == 0, right.stderr
