"""Exact traffic accounting: real MPI programs with known traffic (examples/c/traffic_*.c) run under
mpilens with Open MPI and MPICH; every expected call count, byte count, matrix entry and message-size
bin is derived here, from the parameters the test passes on the command line and from the byte
semantics of runtime/spec/semantics.yaml (the "buffer view"), never from what the tool printed.

Conventions checked throughout:
- receives are charged the size the status reports (receive buffers here are always larger);
- nonblocking and persistent transfers are charged to the initiating function (MPI_Isend sent,
  MPI_Irecv received, MPI_Send_init / MPI_Recv_init ...) when they complete; completion functions
  (MPI_Wait*, MPI_Test*, MPI_Start*) move no bytes themselves;
- any function the test does not list moves no bytes;
- the matrix holds point-to-point sends by world ranks, nothing for MPI_PROC_NULL or collectives;
- message_sizes bin k holds transfers of [2^(k-1), 2^k) bytes, bin 0 those of 0 bytes.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from conftest import fn, matrix_params, run_example

INT, DOUBLE = 4, 8
BYTE_KEYS = ("bytes_sent", "bytes_recv")


@pytest.fixture(params=matrix_params())
def mpi(request: pytest.FixtureRequest) -> str:
    """The exact-traffic core runs on every MPI: Debian's Open MPI 4.1 and MPICH 4.0, and the
    matrix's Open MPI 5, MPICH 5 and Intel MPI (their programs built with their own mpicc)."""
    return request.param


# ------------------------------------------------------------------------------------ helpers
def per_rank(np: int, f: Callable[[int], int]) -> list[int]:
    return [f(r) for r in range(np)]


def bin_of(nbytes: int) -> int:
    """Message-size bin of a transfer: 0 for 0 bytes, k for [2^(k-1), 2^k)."""
    return nbytes.bit_length()


def check_run(p: dict, np: int, unfilled: int = 0) -> None:
    """A complete profile of np ranks in which nothing was dropped (but `unfilled` receives whose
    status the MPI left unfilled)."""
    assert p["nranks"] == np
    assert p["complete"] is True
    assert [r["rank"] for r in p["ranks"]] == list(range(np))
    assert p["dropped"] == {"requests_untracked": 0, "region_paths": 0, "region_mismatches": 0,
                            "requests_outstanding_at_finalize": 0, "receive_sizes_unknown": unfilled}, p["dropped"]
    for r in range(np):  # time in MPI is the functions' time (computed from them at MPI_Finalize)
        total = sum(f["time_s"][r] for f in p["functions"].values())
        assert p["ranks"][r]["mpi_time_s"] == pytest.approx(total, rel=1e-6, abs=1e-6), (r, total)


def check_functions(p: dict, expected: dict[str, dict[str, list[int] | None]]) -> None:
    """Exact calls and bytes of the listed functions (bytes default to zero; None: not knowable,
    not checked); every function not listed must move no bytes (its calls are not checked:
    MPI_Comm_rank, MPI_Get_count, ...)."""
    np = p["nranks"]
    for name, want in expected.items():
        for key in ("calls", *BYTE_KEYS):
            exp = want.get(key, [0] * np)
            if exp is None:
                continue
            assert fn(p, name, key) == exp, f"{name}.{key}: {fn(p, name, key)} != expected {exp}"
    for name, f in p["functions"].items():
        if name in expected:
            continue
        for key in BYTE_KEYS:
            assert f[key] == [0] * np, f"{name}.{key} = {f[key]}: this function moves no bytes here"


def matrix(p: dict) -> dict[tuple[int, int], tuple[int, int]]:
    """The point-to-point matrix as {(src, dst): (messages, bytes)}; one entry per pair."""
    out: dict[tuple[int, int], tuple[int, int]] = {}
    for m in p["matrix"]:
        key = (m["src"], m["dst"])
        assert key not in out, f"matrix lists {key} twice"
        out[key] = (m["messages"], m["bytes"])
    return out


def hist(p: dict, name: str) -> dict[int, list[int]]:
    """message_sizes of one function as {bin: calls per rank}, checking each bin's bounds."""
    out: dict[int, list[int]] = {}
    for e in p["message_sizes"].get(name, []):
        k = e["bin"]
        lo, hi = (0, 0) if k == 0 else (1 << (k - 1), (1 << k) - 1)
        assert (e["min_bytes"], e["max_bytes"]) == (lo, hi), f"{name} bin {k} bounds"
        assert k not in out, f"{name} lists bin {k} twice"
        out[k] = e["calls"]
    return out


def expected_hist(np: int, sizes: Callable[[int], list[int]]) -> dict[int, list[int]]:
    """{bin: calls per rank} of transfers whose sizes on rank r are sizes(r)."""
    out: dict[int, list[int]] = {}
    for r in range(np):
        for s in sizes(r):
            out.setdefault(bin_of(s), [0] * np)[r] += 1
    return out


def split_worlds(np: int, color: Callable[[int], int], key: Callable[[int], int]) -> dict[int, list[int]]:
    """MPI_Comm_split of MPI_COMM_WORLD: for each world rank, the world ranks of its new
    communicator in rank order (ordered by key, ties by world rank)."""
    out = {}
    for w in range(np):
        members = [v for v in range(np) if color(v) == color(w)]
        out[w] = sorted(members, key=lambda v: (key(v), v))
    return out


def p2p(mpi: str, np: int, args: list, tmp_path) -> tuple[dict, object]:
    job = run_example(mpi, "traffic_p2p", np, tmp_path, [str(a) for a in args])
    assert f"traffic_p2p {args[0]}: done" in job.stdout
    p = job.profile
    check_run(p, np)
    return p, job


# ------------------------------------------------------------------------------------ point to point
def test_blocking_send_recv(mpi, tmp_path):
    np, reps, size = 4, 5, 1000
    p, _ = p2p(mpi, np, ["blocking", reps, size], tmp_path)
    left = lambda r: (r - 1) % np  # noqa: E731
    sent = lambda r: size * (r + 1)  # noqa: E731
    check_functions(p, {
        "MPI_Send": {"calls": [reps] * np, "bytes_sent": per_rank(np, lambda r: reps * sent(r))},
        "MPI_Recv": {"calls": [reps] * np, "bytes_recv": per_rank(np, lambda r: reps * sent(left(r)))},
        "MPI_Barrier": {"calls": [1] * np},
    })
    assert matrix(p) == {(r, (r + 1) % np): (reps, reps * sent(r)) for r in range(np)}
    assert hist(p, "MPI_Send") == expected_hist(np, lambda r: [sent(r)] * reps)
    assert hist(p, "MPI_Recv") == expected_hist(np, lambda r: [sent(left(r))] * reps)


def test_wildcard_receives_count_actual_size(mpi, tmp_path):
    """MPI_ANY_SOURCE / MPI_ANY_TAG into buffers larger than the messages, with and without
    statuses (MPI_STATUS_IGNORE, MPI_STATUSES_IGNORE): bytes are what arrived."""
    np, reps, size = 3, 6, 300
    p, _ = p2p(mpi, np, ["wildcard", reps, size], tmp_path)
    msgs = lambda r: [size * r + i for i in range(reps)] if r > 0 else []  # noqa: E731  one batch
    batch = sum(sum(msgs(r)) for r in range(np))
    n = reps * (np - 1)
    zero_but_root = lambda v: [v] + [0] * (np - 1)  # noqa: E731
    check_functions(p, {
        "MPI_Send": {"calls": per_rank(np, lambda r: 2 * len(msgs(r))),
                     "bytes_sent": per_rank(np, lambda r: 2 * sum(msgs(r)))},
        "MPI_Recv": {"calls": zero_but_root(n), "bytes_recv": zero_but_root(batch)},
        "MPI_Irecv": {"calls": zero_but_root(n), "bytes_recv": zero_but_root(batch)},
        "MPI_Wait": {"calls": zero_but_root(n // 2)},
        "MPI_Waitall": {"calls": zero_but_root(1)},
        "MPI_Barrier": {"calls": [2] * np},
    })
    assert matrix(p) == {(r, 0): (2 * reps, 2 * sum(msgs(r))) for r in range(1, np)}
    every = [s for r in range(np) for s in msgs(r)]
    at_root = lambda r: every if r == 0 else []  # noqa: E731
    assert hist(p, "MPI_Recv") == expected_hist(np, at_root)
    assert hist(p, "MPI_Irecv") == expected_hist(np, at_root)
    assert hist(p, "MPI_Send") == expected_hist(np, lambda r: msgs(r) * 2)


COMPLETIONS = {  # method -> (function, calls per rep when deterministic)
    "wait": ("MPI_Wait", 2),
    "waitall": ("MPI_Waitall", 1),
    "waitany": ("MPI_Waitany", 2),
    "waitsome": ("MPI_Waitsome", None),
    "test": ("MPI_Test", None),
    "testall": ("MPI_Testall", None),
    "testany": ("MPI_Testany", None),
    "testsome": ("MPI_Testsome", None),
}


@pytest.mark.parametrize("method", list(COMPLETIONS))
def test_nonblocking_completion(mpi, tmp_path, method):
    """MPI_Isend / MPI_Irecv pairs completed by each Wait/Test function: the bytes go to the
    initiating calls when the completion function completes them."""
    np, reps, size = 2, 5, 400
    func, per_rep = COMPLETIONS[method]
    p, job = p2p(mpi, np, ["nb", method, reps, size], tmp_path)
    reported = {int(r): int(c) for r, c in re.findall(rf"nb rank=(\d+) method={method} completion_calls=(\d+)",
                                                      job.stdout)}
    assert sorted(reported) == list(range(np)), job.stdout
    calls = [reported[r] for r in range(np)]
    if per_rep is not None:
        assert calls == [per_rep * reps] * np
    out = lambda r: [size * (r + 1) + i for i in range(reps)]  # noqa: E731
    partner = lambda r: r ^ 1  # noqa: E731
    check_functions(p, {
        "MPI_Isend": {"calls": [reps] * np, "bytes_sent": per_rank(np, lambda r: sum(out(r)))},
        "MPI_Irecv": {"calls": [reps] * np, "bytes_recv": per_rank(np, lambda r: sum(out(partner(r))))},
        func: {"calls": calls},
        "MPI_Barrier": {"calls": [1] * np},
    })
    assert matrix(p) == {(r, partner(r)): (reps, sum(out(r))) for r in range(np)}
    assert hist(p, "MPI_Isend") == expected_hist(np, out)
    assert hist(p, "MPI_Irecv") == expected_hist(np, lambda r: out(partner(r)))
    assert func not in p["message_sizes"], "a completion function moves no bytes of its own"


def test_sendrecv(mpi, tmp_path):
    np, reps, size = 3, 4, 500
    p, _ = p2p(mpi, np, ["sendrecv", reps, size], tmp_path)
    out = lambda r: [size * (r + 1) + i for i in range(reps)]  # noqa: E731
    check_functions(p, {
        "MPI_Sendrecv": {"calls": [reps] * np, "bytes_sent": per_rank(np, lambda r: sum(out(r))),
                         "bytes_recv": per_rank(np, lambda r: sum(out((r - 1) % np)))},
        "MPI_Barrier": {"calls": [1] * np},
    })
    assert matrix(p) == {(r, (r + 1) % np): (reps, sum(out(r))) for r in range(np)}


def test_persistent_requests(mpi, tmp_path):
    """MPI_Send_init / MPI_Recv_init started with MPI_Start and MPI_Startall: each completion
    charges one transfer to the *_init function; testing an inactive request charges nothing."""
    np, reps, size = 4, 6, 700
    p, _ = p2p(mpi, np, ["persistent", reps, size], tmp_path)
    h1, h2 = reps // 2, reps - reps // 2
    out = lambda r: size * (r + 1)  # noqa: E731
    partner = lambda r: r ^ 1  # noqa: E731
    check_functions(p, {
        "MPI_Send_init": {"calls": [1] * np, "bytes_sent": per_rank(np, lambda r: reps * out(r))},
        "MPI_Recv_init": {"calls": [1] * np, "bytes_recv": per_rank(np, lambda r: reps * out(partner(r)))},
        "MPI_Start": {"calls": [2 * h1] * np},
        "MPI_Startall": {"calls": [h2] * np},
        "MPI_Waitall": {"calls": [h1] * np},
        "MPI_Wait": {"calls": [2 * h2] * np},
        "MPI_Request_free": {"calls": [2] * np},
        "MPI_Test": {"calls": [reps] * np},  # of inactive requests: nothing to account
        "MPI_Testall": {"calls": [reps] * np},
        "MPI_Barrier": {"calls": [1] * np},
    })
    assert matrix(p) == {(r, partner(r)): (reps, reps * out(r)) for r in range(np)}
    assert hist(p, "MPI_Send_init") == expected_hist(np, lambda r: [out(r)] * reps)
    assert hist(p, "MPI_Recv_init") == expected_hist(np, lambda r: [out(partner(r))] * reps)


def test_derived_datatypes(mpi, tmp_path):
    """Bytes are count x MPI_Type_size: MPI_Type_contiguous(K, MPI_DOUBLE), and an
    MPI_Type_vector whose extent is larger than its size."""
    np, reps, k, c = 3, 4, 5, 7
    p, _ = p2p(mpi, np, ["datatype", reps, k, c], tmp_path)
    msg = c * k * DOUBLE  # one message: C elements of K doubles, or one vector of C blocks of K doubles
    check_functions(p, {
        "MPI_Send": {"calls": [2 * reps] * np, "bytes_sent": [2 * reps * msg] * np},
        "MPI_Irecv": {"calls": [reps] * np, "bytes_recv": [reps * msg] * np},
        "MPI_Recv": {"calls": [reps + 1] * np, "bytes_recv": [(reps + 1) * msg] * np},
        "MPI_Isend": {"calls": [1] * np, "bytes_sent": [msg] * np},
        "MPI_Wait": {"calls": [reps + 1] * np},
        "MPI_Barrier": {"calls": [1] * np},
    })
    assert matrix(p) == {(r, (r + 1) % np): (2 * reps + 1, (2 * reps + 1) * msg) for r in range(np)}


# MPI_Type_size of traffic_p2p's predefined types, in its order, on x86_64 Linux (LP64): the C
# types' sizes; the pair types' sizes are the sums of their members' (not their extents)
PREDEFINED_SIZES = (1, 2, 4, 8, 8, 4, 8, 16, 4, 1, 8, 8, 12, 16)


def test_predefined_datatypes(mpi, tmp_path):
    """Fourteen predefined types in turn, more than the runtime's cache of them holds, so that some
    share its slots: every message's bytes are count x the type's size, alternating the lean
    path's MPI_Isend / MPI_Recv and MPI_Irecv / MPI_Send."""
    np, reps = 3, 6
    p, _ = p2p(mpi, np, ["predefined", reps], tmp_path)
    left = lambda r: (r - 1) % np  # noqa: E731
    sizes = lambda r: [(r + 1 + j) * b for j, b in enumerate(PREDEFINED_SIZES)]  # noqa: E731  one rep, sent by r
    half, n = reps // 2, len(PREDEFINED_SIZES)
    check_functions(p, {
        "MPI_Isend": {"calls": [half * n] * np, "bytes_sent": per_rank(np, lambda r: half * sum(sizes(r)))},
        "MPI_Send": {"calls": [half * n] * np, "bytes_sent": per_rank(np, lambda r: half * sum(sizes(r)))},
        "MPI_Recv": {"calls": [half * n] * np, "bytes_recv": per_rank(np, lambda r: half * sum(sizes(left(r))))},
        "MPI_Irecv": {"calls": [half * n] * np, "bytes_recv": per_rank(np, lambda r: half * sum(sizes(left(r))))},
        "MPI_Wait": {"calls": [reps * n] * np},
        "MPI_Barrier": {"calls": [1] * np},
    })
    assert matrix(p) == {(r, (r + 1) % np): (reps * n, reps * sum(sizes(r))) for r in range(np)}
    assert hist(p, "MPI_Isend") == expected_hist(np, lambda r: sizes(r) * half)
    assert hist(p, "MPI_Irecv") == expected_hist(np, lambda r: sizes(left(r)) * half)


def test_proc_null(mpi, tmp_path):
    """Transfers with MPI_PROC_NULL are counted calls that move 0 bytes, make no matrix entry and
    no message-size entry; one real ring message per rank is accounted normally."""
    np, reps, size = 3, 4, 256
    p, _ = p2p(mpi, np, ["procnull", reps, size], tmp_path)
    last = np - 1
    check_functions(p, {
        "MPI_Send": {"calls": [reps + 1] * np, "bytes_sent": [size] * np},
        "MPI_Recv": {"calls": [reps + 1] * np, "bytes_recv": [size] * np},
        "MPI_Isend": {"calls": [1] * np},
        "MPI_Irecv": {"calls": [1] * np},
        "MPI_Wait": {"calls": [2] * np},
        # one with MPI_PROC_NULL on both sides, one non-periodic shift (ends talk to MPI_PROC_NULL)
        "MPI_Sendrecv": {"calls": [2] * np, "bytes_sent": per_rank(np, lambda r: size if r < last else 0),
                         "bytes_recv": per_rank(np, lambda r: size if r > 0 else 0)},
        "MPI_Barrier": {"calls": [1] * np},
    })
    ring = {(r, (r + 1) % np): (1, size) for r in range(np)}
    shift = {(r, r + 1): (1, size) for r in range(last)}
    assert matrix(p) == {k: (ring[k][0] + shift.get(k, (0, 0))[0], ring[k][1] + shift.get(k, (0, 0))[1]) for k in ring}
    assert hist(p, "MPI_Send") == {bin_of(size): [1] * np}
    assert hist(p, "MPI_Recv") == {bin_of(size): [1] * np}
    # the shift moves `size` bytes in at least one direction on every rank; the other call is no transfer
    assert hist(p, "MPI_Sendrecv") == {bin_of(size): [1] * np}
    for name in ("MPI_Isend", "MPI_Irecv", "MPI_Wait"):
        assert name not in p["message_sizes"], f"{name} with MPI_PROC_NULL is not a transfer"


def test_subcommunicator_matrix_uses_world_ranks(mpi, tmp_path):
    """Sends on communicators from MPI_Comm_split (one in reversed order, one per parity, then,
    after both are freed, one in rotated order that may reuse a freed handle) land in the matrix
    under world ranks."""
    np, reps, size = 4, 3, 100
    p, _ = p2p(mpi, np, ["split", reps, size], tmp_path)
    a = split_worlds(np, lambda w: 0, lambda w: np - 1 - w)
    b = split_worlds(np, lambda w: w % 2, lambda w: -w)
    a_right = {w: a[w][(a[w].index(w) + 1) % np] for w in range(np)}
    a_left = {w: a[w][(a[w].index(w) - 1) % np] for w in range(np)}
    b_other = {w: b[w][b[w].index(w) ^ 1] for w in range(np)}
    assert a_right[0] != 1 and b_other[0] == 2  # the translation matters: comm ranks != world ranks
    c = split_worlds(np, lambda w: 0, lambda w: (w + 1) % np)
    c_right = {w: c[w][(c[w].index(w) + 1) % np] for w in range(np)}
    c_left = {w: c[w][(c[w].index(w) - 1) % np] for w in range(np)}
    a_msg = lambda w: size * (w + 1)  # noqa: E731
    b_msg = lambda w: 3 * size + w  # noqa: E731
    c_msg = lambda w: 5 * size + w  # noqa: E731
    check_functions(p, {
        "MPI_Send": {"calls": [2 * reps] * np, "bytes_sent": per_rank(np, lambda w: reps * (a_msg(w) + c_msg(w)))},
        "MPI_Recv": {"calls": [2 * reps] * np,
                     "bytes_recv": per_rank(np, lambda w: reps * (a_msg(a_left[w]) + c_msg(c_left[w])))},
        "MPI_Isend": {"calls": [reps] * np, "bytes_sent": per_rank(np, lambda w: reps * b_msg(w))},
        "MPI_Irecv": {"calls": [reps] * np, "bytes_recv": per_rank(np, lambda w: reps * b_msg(b_other[w]))},
        "MPI_Waitall": {"calls": [reps] * np},
        "MPI_Comm_split": {"calls": [3] * np},
        "MPI_Comm_free": {"calls": [3] * np},
        "MPI_Barrier": {"calls": [1] * np},
    })
    want: dict[tuple[int, int], tuple[int, int]] = {}
    for w in range(np):
        for dst, msg in ((a_right[w], a_msg(w)), (b_other[w], b_msg(w)), (c_right[w], c_msg(w))):
            m, b = want.get((w, dst), (0, 0))
            want[(w, dst)] = (m + reps, b + reps * msg)
    assert matrix(p) == want


def test_message_size_bins(mpi, tmp_path):
    sizes = [0, 1, 2, 3, 4, 7, 8, 1000, 1023, 1024, 1025, 65535, 65536, 100000]
    p, _ = p2p(mpi, 2, ["sizes", *sizes], tmp_path)
    check_functions(p, {
        "MPI_Send": {"calls": [len(sizes), 0], "bytes_sent": [sum(sizes), 0]},
        "MPI_Recv": {"calls": [0, len(sizes)], "bytes_recv": [0, sum(sizes)]},
        "MPI_Barrier": {"calls": [1, 1]},
    })
    assert matrix(p) == {(0, 1): (len(sizes), sum(sizes))}
    # by hand, not through bin_of: [2^(k-1), 2^k) -> bin k
    want = {0: 1, 1: 1, 2: 2, 3: 2, 4: 1, 10: 2, 11: 2, 16: 1, 17: 2}
    assert hist(p, "MPI_Send") == {k: [n, 0] for k, n in want.items()}
    assert hist(p, "MPI_Recv") == {k: [0, n] for k, n in want.items()}


def test_totals_beyond_32_bits(mpi, tmp_path):
    """Counts and bytes are 64-bit: 65 messages of 64 MiB (to the sending rank itself) add up to
    more than 2^32 bytes."""
    np, reps, mib = 1, 65, 64
    p, _ = p2p(mpi, np, ["big", reps, mib], tmp_path)
    total = reps * (mib << 20)
    assert total > 1 << 32
    check_functions(p, {
        "MPI_Send": {"calls": [reps], "bytes_sent": [total]},
        "MPI_Irecv": {"calls": [reps], "bytes_recv": [total]},
        "MPI_Wait": {"calls": [reps]},
        "MPI_Barrier": {"calls": [1]},
    })
    assert matrix(p) == {(0, 0): (reps, total)}
    assert hist(p, "MPI_Send") == {bin_of(mib << 20): [reps]}


# ------------------------------------------------------------------------------------ collectives
def test_collectives(mpi, tmp_path):
    np, count, root = 3, 5, 1
    job = run_example(mpi, "traffic_coll", np, tmp_path, [str(count), str(root)])
    assert f"traffic_coll: {np} ranks, count {count}, root {root}: done" in job.stdout
    p = job.profile
    check_run(p, np)
    P = np
    at_root = lambda v: per_rank(np, lambda r: v if r == root else 0)  # noqa: E731
    not_root = lambda v: per_rank(np, lambda r: 0 if r == root else v)  # noqa: E731
    all_ = lambda v: [v] * np  # noqa: E731
    ar = count + (2 * count + 1)  # MPI_Allreduce out of place, then in place
    g = count + (count + 2)  # MPI_Gather out of place, then in place at the root
    sc = count + (count + 1)  # MPI_Scatter out of place, then in place at the root
    parity = split_worlds(np, lambda w: w % 2, lambda w: -w)  # MPI_Allgather's communicator
    check_functions(p, {
        "MPI_Bcast": {"calls": all_(1), "bytes_sent": at_root(count * INT), "bytes_recv": not_root(count * INT)},
        "MPI_Reduce": {"calls": all_(1), "bytes_sent": all_(count * DOUBLE), "bytes_recv": at_root(count * DOUBLE)},
        "MPI_Allreduce": {"calls": all_(2), "bytes_sent": all_(ar * DOUBLE), "bytes_recv": all_(ar * DOUBLE)},
        "MPI_Alltoall": {"calls": all_(1), "bytes_sent": all_(count * INT * P), "bytes_recv": all_(count * INT * P)},
        "MPI_Alltoallv": {"calls": all_(1),
                          "bytes_sent": per_rank(np, lambda r: sum(count * (1 + r + 2 * j) for j in range(P)) * INT),
                          "bytes_recv": per_rank(np, lambda r: sum(count * (1 + j + 2 * r) for j in range(P)) * INT)},
        "MPI_Gather": {"calls": all_(2), "bytes_sent": all_(g * INT), "bytes_recv": at_root(g * INT * P)},
        "MPI_Gatherv": {"calls": all_(1), "bytes_sent": per_rank(np, lambda r: (r + 1) * count * INT),
                        "bytes_recv": at_root(sum((j + 1) * count for j in range(P)) * INT)},
        "MPI_Scatter": {"calls": all_(2), "bytes_sent": at_root(sc * INT * P), "bytes_recv": all_(sc * INT)},
        "MPI_Scatterv": {"calls": all_(1), "bytes_sent": at_root(sum((P - j) * count for j in range(P)) * DOUBLE),
                         "bytes_recv": per_rank(np, lambda r: (P - r) * count * DOUBLE)},
        "MPI_Allgather": {"calls": all_(1), "bytes_sent": all_(count * INT),
                          "bytes_recv": per_rank(np, lambda r: count * INT * len(parity[r]))},
        "MPI_Barrier": {"calls": all_(2)},
        "MPI_Iallreduce": {"calls": all_(1), "bytes_sent": all_(count * DOUBLE), "bytes_recv": all_(count * DOUBLE)},
        "MPI_Ibcast": {"calls": all_(1), "bytes_sent": at_root((count + 5) * INT),
                       "bytes_recv": not_root((count + 5) * INT)},
        "MPI_Waitall": {"calls": all_(1)},
    })
    assert p["matrix"] == [], "collectives are not point-to-point traffic"
    # one call per rank; its size class is the larger of what it sent and received
    assert hist(p, "MPI_Bcast") == {bin_of(count * INT): all_(1)}
    assert hist(p, "MPI_Alltoall") == {bin_of(count * INT * P): all_(1)}
    assert hist(p, "MPI_Ibcast") == {bin_of((count + 5) * INT): all_(1)}
    assert hist(p, "MPI_Iallreduce") == {bin_of(count * DOUBLE): all_(1)}


def cart_slots(r: int, dims: tuple[int, int]) -> list[int | None]:
    """Neighbours of rank r on a non-periodic row-major 2-D grid in MPI's slot order (per dimension
    the one below, then the one above); None where MPI has MPI_PROC_NULL."""
    c = divmod(r, dims[1])
    out: list[int | None] = []
    for d in range(2):
        for step in (-1, 1):
            n = list(c)
            n[d] += step
            out.append(n[0] * dims[1] + n[1] if 0 <= n[d] < dims[d] else None)
    return out


def test_neighborhood_collectives(mpi, tmp_path):
    """Bytes of neighbourhood collectives count only real neighbours: the MPI_PROC_NULL slots at
    the edges of a Cartesian grid (whose counts examples/c/neighbor.c sets to 100) move nothing;
    on a distributed graph the in- and out-degrees differ per rank."""
    np, dims = 4, (2, 2)  # MPI_Dims_create(4, 2)
    job = run_example(mpi, "neighbor", np, tmp_path)
    assert "neighbor: ok" in job.stdout
    p = job.profile
    check_run(p, np)
    slots = [cart_slots(r, dims) for r in range(np)]
    live = [[i for i, n in enumerate(s) if n is not None] for s in slots]
    assert [len(x) for x in live] == [2, 2, 2, 2]  # a 2 x 2 grid: every rank has two edges
    all_ = lambda v: [v] * np  # noqa: E731
    lv = lambda f: per_rank(np, lambda r: sum(f(r, i) for i in live[r]))  # noqa: E731
    graph_sent = per_rank(np, lambda r: 5 * INT * (np - 1) if r == 0 else 0)  # rank 0 to all others
    graph_recv = per_rank(np, lambda r: 0 if r == 0 else 5 * INT)
    size = lambda i: INT if i % 2 == 0 else DOUBLE  # noqa: E731  alltoallw: the type of slot i
    check_functions(p, {
        "MPI_Neighbor_alltoall": {"calls": all_(1), "bytes_sent": lv(lambda r, i: 3 * INT),
                                  "bytes_recv": lv(lambda r, i: 3 * INT)},
        "MPI_Neighbor_allgather": {"calls": all_(2),
                                   "bytes_sent": [a + b for a, b in zip(lv(lambda r, i: 2 * DOUBLE), graph_sent)],
                                   "bytes_recv": [a + b for a, b in zip(lv(lambda r, i: 2 * DOUBLE), graph_recv)]},
        "MPI_Neighbor_allgatherv": {"calls": all_(1), "bytes_sent": lv(lambda r, i: (r + 1) * INT),
                                    "bytes_recv": lv(lambda r, i: (slots[r][i] + 1) * INT)},
        "MPI_Neighbor_alltoallv": {"calls": all_(1), "bytes_sent": lv(lambda r, i: (i + 1) * INT),
                                   "bytes_recv": lv(lambda r, i: ((i ^ 1) + 1) * INT)},
        "MPI_Neighbor_alltoallw": {"calls": all_(1), "bytes_sent": lv(lambda r, i: (i + 1) * size(i)),
                                   "bytes_recv": lv(lambda r, i: ((i ^ 1) + 1) * size(i ^ 1))},
        "MPI_Ineighbor_alltoall": {"calls": all_(1), "bytes_sent": lv(lambda r, i: INT),
                                   "bytes_recv": lv(lambda r, i: INT)},
        "MPI_Wait": {"calls": all_(1)},
        "MPI_Barrier": {"calls": all_(1)},
    })
    assert p["matrix"] == [], "neighbourhood collectives are collectives, not point-to-point traffic"


# ------------------------------------------------------------------------------------ MPI-4
def test_mpi4_functions(mpi, tmp_path):
    """MPI_Isendrecv, large-count MPI_Send_c / MPI_Recv_c and partitioned communication
    (MPI_Psend_init / MPI_Precv_init / MPI_Pready / MPI_Parrived), where the MPI has them."""
    np, reps, size, parts, pcount = 2, 3, 40, 4, 6
    job = run_example(mpi, "traffic_mpi4", np, tmp_path, [str(reps), str(size), str(parts), str(pcount)])
    lacking = re.search(r"traffic_mpi4: no MPI-4 \((MPI_VERSION [\d.]+)\)", job.stdout)
    if lacking:
        pytest.skip(f"{mpi} does not implement MPI-4 ({lacking.group(1)}): no MPI_Isendrecv, MPI_Send_c, "
                    "partitioned communication")
    assert "traffic_mpi4: done" in job.stdout, job.stdout
    # the parts the program ran, by what its MPI's header has (Open MPI 5: no large-count functions)
    large_count = re.search(r"traffic_mpi4: parts isendrecv=1 large_count=([01]) partitioned=1", job.stdout)
    assert large_count, job.stdout
    large_count = large_count.group(1) == "1"
    parrived = re.search(r"mpi4 rank=1 parrived_calls=(\d+)", job.stdout)
    assert parrived, job.stdout
    bad = {int(r): int(n) for r, n in re.findall(r"mpi4 rank=(\d+) isendrecv_bad_status=(\d+)", job.stdout)}
    assert sorted(bad) == [0, 1], job.stdout
    # The received size of MPI_Isendrecv can only come from its completion status, which MPICH-family
    # MPIs (MPICH 4.0 and 5.0, Intel MPI) leave unfilled: the program checks the status of every other
    # completion itself and counts those that do not describe the receive. Where all it checked were
    # unfilled, none of the receives has a knowable size: mpilens must count none of their bytes and
    # say how many it could not count; where all were right, it counts them all exactly.
    checked = (reps + 1) // 2
    assert set(bad.values()) <= {0, checked} and len(set(bad.values())) == 1, job.stdout
    status_unfilled = bad[0] == checked
    p = job.profile
    check_run(p, np, unfilled=np * reps if status_unfilled else 0)
    isr = lambda r: [size * (r + 1) + i for i in range(reps)]  # noqa: E731
    send_c = [(size + i) * INT for i in range(reps)] if large_count else []
    part = parts * pcount * DOUBLE
    expected = {
        "MPI_Isendrecv": {"calls": [reps] * np, "bytes_sent": per_rank(np, lambda r: sum(isr(r))),
                          "bytes_recv": per_rank(np, lambda r: sum(isr(1 - r)))},
        "MPI_Send_c": {"calls": [len(send_c), 0], "bytes_sent": [sum(send_c), 0]},
        "MPI_Recv_c": {"calls": [0, len(send_c)], "bytes_recv": [0, sum(send_c)]},
        "MPI_Psend_init": {"calls": [1, 0], "bytes_sent": [reps * part, 0]},
        "MPI_Precv_init": {"calls": [0, 1], "bytes_recv": [0, reps * part]},
        "MPI_Pready": {"calls": [reps * parts, 0]},
        "MPI_Parrived": {"calls": [0, int(parrived.group(1))]},
        "MPI_Start": {"calls": [reps] * np},
        "MPI_Wait": {"calls": [2 * reps] * np},
        "MPI_Request_free": {"calls": [1] * np},
        "MPI_Barrier": {"calls": [1] * np},
    }
    if status_unfilled:
        expected["MPI_Isendrecv"]["bytes_recv"] = [0] * np
    check_functions(p, expected)
    assert matrix(p) == {
        (0, 1): (2 * reps + len(send_c), sum(isr(0)) + sum(send_c) + reps * part),
        (1, 0): (reps, sum(isr(1))),
    }
    assert hist(p, "MPI_Send_c") == expected_hist(np, lambda r: send_c if r == 0 else [])
    assert hist(p, "MPI_Recv_c") == expected_hist(np, lambda r: send_c if r == 1 else [])
    assert hist(p, "MPI_Psend_init") == expected_hist(np, lambda r: [part] * reps if r == 0 else [])
    assert hist(p, "MPI_Precv_init") == expected_hist(np, lambda r: [part] * reps if r == 1 else [])


# ------------------------------------------------------------------------------- MPI Sessions
def test_a_program_that_uses_sessions_only(mpi, tmp_path):
    """examples/c/sessions: MPI_Session_init, a communicator of mpi://WORLD, a token ring, one
    MPI_Allreduce, two sessions ended in another order than begun, no MPI_Init. Measured from the
    first MPI_Session_init to the last MPI_Session_finalize: every call in between, the bytes per
    rank and the matrix in world ranks, as the program's arguments fix them."""
    np, reps, size = 4, 6, 100
    job = run_example(mpi, "sessions", np, tmp_path, [str(reps), str(size)], check=False)
    lacking = re.search(r"sessions: no MPI Sessions \((MPI_VERSION [\d.]+)\)", job.stdout)
    if lacking:  # and no MPI call at all: mpilens says so
        assert job.returncode == 1 and "never called MPI_Init (nor MPI_Session_init)" in job.stderr, job.stderr
        pytest.skip(f"{mpi} has no MPI Sessions ({lacking.group(1)})")
    assert job.returncode == 0, job.stderr
    assert f"sessions: {reps} messages, sum of ranks {np * (np - 1) // 2}" in job.stdout, job.stdout
    p = job.profile
    check_run(p, np)
    sent = [reps * size * (r + 1) for r in range(np)]
    check_functions(p, {
        "MPI_Send": {"calls": [reps] * np, "bytes_sent": sent},
        "MPI_Recv": {"calls": [reps] * np, "bytes_recv": [sent[(r - 1) % np] for r in range(np)]},
        "MPI_Allreduce": {"calls": [1] * np, "bytes_sent": [INT] * np, "bytes_recv": [INT] * np},
        # the first MPI_Session_init starts the measurements, the last MPI_Session_finalize ends them
        "MPI_Session_init": {"calls": [1] * np},
        "MPI_Session_finalize": {"calls": [1] * np},
        "MPI_Comm_create_from_group": {"calls": [1] * np},
    })
    assert matrix(p) == {(r, (r + 1) % np): (reps, sent[r]) for r in range(np)}
    # every time is counted from MPI_Session_init, and the run says so (a killed rank's note too)
    assert job.load().meta["started_by"] == "MPI_Session_init"
