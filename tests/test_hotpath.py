"""The per-message hot path (runtime/src/calls/lean.h): the wrappers of the frequent point-to-point calls
and of MPI_Wait, MPI_Test and MPI_Waitall take a lean path when only the profile watches calls.
These tests run programs whose traffic is known under both MPIs and check that path where it is
easiest to get wrong: entries of the request table taken out in every order, completions of
requests another thread posted, receive sizes when the caller ignores statuses, the shortest and
longest call, and which runs take the lean path at all. Expectations come from the programs'
parameters and source, never from the tool's output.
"""

from __future__ import annotations

import json
import re
import struct
import subprocess

import pytest
from test_callsites import markers, report_json, site
from test_traffic import check_functions, check_run, expected_hist, hist, matrix

from conftest import ROOT, fn, job_env, launcher, mpirun, require, run_example, trace_kinds
from mpilens.trace import timeline

MAXSIZE = 1000
BIG = 1 << 20  # examples/c/completion_orders.c's rendezvous message
DUPS = 50  # its receives on a duplicate of MPI_COMM_WORLD, 100 bytes each


def size_of(i: int) -> int:
    return 1 + (i * 37) % MAXSIZE


def rounds(n: int) -> tuple[int, int, int]:
    """How examples/c/completion_orders.c completes n requests on rank 1: (MPI_Wait calls, rounds
    completed by MPI_Test, MPI_Waitall calls)."""
    waits = test_rounds = waitalls = 0
    at = r = 0
    while at < n:
        k = min(1 + r % 5, n - at)
        if k == 1:
            waits += 1
        elif k == 2:
            test_rounds += 1
        else:
            waitalls += 1
        at += k
        r += 1
    return waits, test_rounds, waitalls


@pytest.mark.parametrize("mode", ["profile", "profile,trace", "profile,counters"])
def test_completion_orders_are_exact(mpi, mode, tmp_path):
    """3000 receives of 1-1000 bytes outstanding at once, completed in a shuffled order by MPI_Wait,
    MPI_Test and MPI_Waitall over arrays with null holes (statuses ignored); 400 more posted by a
    thread that exits, completed by the main thread in one MPI_Waitall; a 1 MiB MPI_Isend (a request
    of its own) completed by MPI_Wait with its status ignored; 50 receives on a duplicate of
    MPI_COMM_WORLD (trace mode keeps their communicator's facts). Exact calls, bytes, size
    bins, matrix and call sites, on the lean path, alone and with the trace, and on the general
    path (with the counters)."""
    n, m = 3000, 400
    job = run_example(mpi, "completion_orders", 2, tmp_path, [str(n), str(m)], settings={"MPILENS_MODE": mode})
    assert job.stdout.count("completion_orders: ok") == 2, job.stdout + job.stderr
    tests = int(re.search(r"tests=(\d+)", job.stdout).group(1))
    p = job.profile
    check_run(p, 2)
    waits, test_rounds, waitalls = rounds(n)
    assert tests >= 2 * test_rounds
    first, handed = sum(size_of(i) for i in range(n)), sum(size_of(i) for i in range(n, n + m))
    dups = 100 * DUPS
    check_functions(p, {
        "MPI_Isend": {"calls": [n + 1, 0], "bytes_sent": [first + BIG, 0]},
        "MPI_Irecv": {"calls": [0, n + m + DUPS], "bytes_recv": [0, first + handed + dups]},
        "MPI_Send": {"calls": [m + DUPS, 8], "bytes_sent": [handed + dups, 8 * 64]},
        "MPI_Recv": {"calls": [8, 1], "bytes_recv": [8 * 64, BIG]},
        "MPI_Wait": {"calls": [1, waits]},
        "MPI_Test": {"calls": [0, tests]},
        "MPI_Waitall": {"calls": [-(-n // 7), waitalls + 2]},
        "MPI_Barrier": {"calls": [1, 1]},
        "MPI_Comm_dup": {"calls": [1, 1]},
        "MPI_Comm_free": {"calls": [1, 1]},
    })
    assert matrix(p) == {(0, 1): (n + m + 1 + DUPS, first + handed + BIG + dups), (1, 0): (8, 8 * 64)}
    assert hist(p, "MPI_Irecv") == expected_hist(
        2, lambda r: [size_of(i) for i in range(n + m)] + [100] * DUPS if r else [])
    assert hist(p, "MPI_Isend") == expected_hist(2, lambda r: [] if r else [size_of(i) for i in range(n)] + [BIG])
    # rank 1 sent the fourth of its eight messages 300 ms late: rank 0 waited in one MPI_Recv for
    # most of it (less the time rank 0 itself spent between its third and fourth call: beside a
    # second suite, with 30 ms, it waited only 18 ms), and far less in another
    rmin, rmax = fn(p, "MPI_Recv", "min_s")[0], fn(p, "MPI_Recv", "max_s")[0]
    assert 0 < rmin < 0.02 and 0.1 <= rmax < 5, (rmin, rmax)
    assert fn(p, "MPI_Recv", "time_s")[0] >= rmax + 7 * rmin - 1e-9

    if "trace" in mode:
        # every request's start and completion in the trace, paired: one arrow per message with
        # the size it was sent with, and one call event per call the profile counts
        tl = timeline.load(job.rundir)
        assert tl.complete and tl.problems == []
        msgs = tl.messages
        assert msgs.unmatched_sends == 0 and msgs.unmatched_recvs == 0
        assert sorted(msgs.bytes.tolist()) == sorted([size_of(i) for i in range(n + m)] + [64] * 8 + [BIG] + [100] * DUPS)
        calls = sum(sum(f["calls"]) for f in p["functions"].values())
        assert int((tl.ev["kind"] == 1).sum()) == calls
        # one completion per request (rank 0: its Isends; rank 1: its Irecvs). A send the MPI
        # completed within MPI_Isend is written as one call_done event, read as its call and
        # its completion; the program's small sends have some on both MPIs.
        raw = [trace_kinds(job.rundir / "trace" / f"rank-00000{r}.bin") for r in (0, 1)]
        for r, want_done in ((0, n + 1), (1, n + m + DUPS)):
            mine = tl.ev[tl.ev["rank"] == r]
            assert int((mine["kind"] == 2).sum()) == raw[r][2] + raw[r][7] + raw[r][0] == want_done
            assert int((mine["kind"] == 1).sum()) == raw[r][1] + raw[r][7] + raw[r][0] + raw[r]["alone"]
        assert raw[0][7] > 0 and raw[1][7] == 0, raw
        # each operation the program started (rank 0: its Isends; rank 1: its Irecvs) has a number
        # of its own in its call's event, and exactly one completion with that number: the
        # receives posted by the thread and completed by the main thread (the general path) too
        for r, ops in ((0, n + 1), (1, n + m + DUPS)):
            mine = tl.ev[tl.ev["rank"] == r]
            started = mine["req"][(mine["kind"] == 1) & (mine["req"] != 0)]
            assert len(started) == len(set(started.tolist())) == ops
            assert sorted(mine["req"][mine["kind"] == 2].tolist()) == sorted(started.tolist())

    src = markers(ROOT / "examples" / "c" / "completion_orders.c")
    sites = report_json(job.rundir)["callsites"]
    main = site(sites, "MPI_Irecv", "completion_orders.c", src["irecv-main"])
    thread = site(sites, "MPI_Irecv", "completion_orders.c", src["irecv-thread"])
    assert (main["calls"], main["bytes_recv"]) == ([0, n], [0, first])
    assert (thread["calls"], thread["bytes_recv"]) == ([0, m], [0, handed])
    dup = site(sites, "MPI_Irecv", "completion_orders.c", src["irecv-dup"])  # another communicator
    assert (dup["calls"], dup["bytes_recv"]) == ([0, DUPS], [0, dups])
    assert site(sites, "MPI_Test", "completion_orders.c", src["test"])["calls"] == [0, tests]
    assert site(sites, "MPI_Waitall", "completion_orders.c", src["waitall-groups"])["calls"] == [0, waitalls]


@pytest.mark.parametrize("settings, lean", [
    ({}, "on"),
    ({"MPILENS_MODE": "profile,trace"}, "on"),
    ({"MPILENS_TIME_SAMPLE": "64"}, "on"),
    ({"MPILENS_MODE": "profile,counters"}, "off, a mode watches calls or requests the lean path does not serve"),
    ({"MPILENS_MODE": "profile,trace,memory"}, "off, a mode watches calls or requests the lean path does not serve"),
    ({"MPILENS_CALLSITE_DEPTH": "0"}, "on"),
    ({"MPILENS_CALLSITE_DEPTH": "4"}, "off, call sites deeper than 1"),
    ({"MPILENS_TIMER": "clock"}, "off, no tick counter"),
])
@pytest.mark.mpi
def test_which_runs_take_the_lean_path(settings, lean, tmp_path):
    """The profile, alone or with the trace, timing every call or 1 in N, with call sites off or at
    depth 1 and the tick counter, takes the lean path; another mode that watches calls, deeper call
    paths or the clock fallback keep the general one (the runtime says which at MPI_Init with
    MPILENS_VERBOSE=2)."""
    job = run_example("openmpi", "ring", 2, tmp_path, ["3"], settings={"MPILENS_VERBOSE": "2", **settings})
    said = set(re.findall(r"lean path: ([^\n]+)", job.stderr))
    assert said == {lean}, job.stderr


@pytest.mark.mpi
def test_thread_multiple_takes_the_general_path(tmp_path):
    """MPI_THREAD_MULTIPLE keeps the process-wide request table (several threads in MPI at once)."""
    job = run_example("mpich", "threads", 2, tmp_path, ["4", "50"], settings={"MPILENS_VERBOSE": "2"})
    assert set(re.findall(r"lean path: ([^\n]+)", job.stderr)) == {"off, MPI_THREAD_MULTIPLE"}, job.stderr


def mpicc_build(mpi: str, src: str, out, *flags: str):
    """<src> (a path from the repository's root) built with the MPI's compiler wrapper into out
    (-Wno-stringop-overflow: GCC's false positive on MPICH's MPI_STATUSES_IGNORE)."""
    subprocess.run([f"mpicc.{mpi}", "-O2", "-std=c11", "-Wno-stringop-overflow", *flags, "-o", str(out),
                    str(ROOT / src)], check=True, capture_output=True)
    return out


def test_benchmarks_under_thread_multiple(mpi, tmp_path):
    """bench/msgrate.c with its thread-level argument "multiple" (bench/versus.py --thread multiple,
    bench/hotpath.py --thread multiple) runs where it says: MPI_THREAD_MULTIPLE provided, the lean
    path off for it, and every message counted exactly on the process-wide table. The counts come
    from msgrate.c: per window rank 0 posts 64 MPI_Isend of 8 bytes and receives a 4-byte ack,
    rank 1 posts 64 MPI_Irecv and sends the ack; a warm-up of nwin / 5 + 5 windows, then nwin =
    max(5, 500 * scale) per batch. A level the program does not know stops it before MPI_Init."""
    exe = mpicc_build(mpi, "bench/msgrate.c", tmp_path / "msgrate")
    batches, nwin = 2, 5
    job = mpirun(mpi, 2, [str(exe), str(batches), "0.01", "multiple"], tmp_path,
                 settings={"MPILENS_VERBOSE": "2"})
    assert set(re.findall(r"lean path: ([^\n]+)", job.stderr)) == {"off, MPI_THREAD_MULTIPLE"}, job.stderr
    windows = nwin // 5 + 5 + batches * nwin
    profile = job.profile
    assert fn(profile, "MPI_Isend", "calls") == [windows * 64, 0]
    assert fn(profile, "MPI_Isend", "bytes_sent") == [windows * 64 * 8, 0]
    assert fn(profile, "MPI_Irecv", "calls") == [0, windows * 64]
    assert fn(profile, "MPI_Irecv", "bytes_recv") == [0, windows * 64 * 8]
    assert fn(profile, "MPI_Waitall", "calls") == [windows, windows]
    assert fn(profile, "MPI_Recv", "bytes_recv")[0] == fn(profile, "MPI_Send", "bytes_sent")[1] == windows * 4
    bad = subprocess.run([str(exe), "1", "1", "serialized"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "unknown thread level 'serialized'" in bad.stderr, bad


@pytest.mark.parametrize("mode, settings, verdict", [
    ("profile", {}, ("every call timed", "<= 1.08", "MISSED", ">= 0.85", "met")),
    ("profile", {"MPILENS_TIME_SAMPLE": "1"}, ("MPILENS_TIME_SAMPLE=1", "<= 1.08", "MISSED", ">= 0.85", "met")),
    ("profile", {"MPILENS_TIME_SAMPLE": "64"}, ("MPILENS_TIME_SAMPLE=64", "<= 1.03", "MISSED", ">= 0.90", "MISSED")),
    ("trace", {}, ("trace mode", "<= 1.15", "met", ">= 0.60", "met")),
    ("profile", {"MPILENS_TIME_SAMPLE": "16"}, None),
])
def test_overhead_benchmark_judges_by_the_targets_of_its_setting(mode, settings, verdict):
    """bench/overhead.py's verdict uses the targets of the hot path (bench/RESULTS.md) for the mode
    and timing it ran: a hop of 1.10 and a rate of 0.86 of plain meet trace mode's targets (<= 1.15,
    >= 0.60) and the rate target timing every call (>= 0.85), miss the hop target timing every call
    (<= 1.08) and both timing 1 call in 64 (<= 1.03, >= 0.90); other timings have none."""
    import sys
    sys.path.insert(0, str(ROOT / "bench"))
    import overhead

    def series(name: str, unit: str, ratio: float) -> overhead.Series:
        return overhead.Series(name, unit, unit != "us", plain=[1.0, 2.0, 4.0], tool=[ratio, 2 * ratio, 4 * ratio])

    text, summary = overhead.table("openmpi", [series("latency 8 B", "us", 1.10),
                                               series("msg rate 8 B", "msgs/s", 0.86)],
                                   "### test", mode, None, settings)
    line = text.splitlines()[-1]
    if verdict is None:
        assert line.startswith("No target for profile mode, MPILENS_TIME_SAMPLE=16") and summary["target"] is None
        return
    timing, lat, lat_ok, rate, rate_ok = verdict
    assert timing in line, line
    assert re.search(rf"latency with/without {lat}: 1\.100 -> \*\*{lat_ok}\*\*", line), line
    assert re.search(rf"rate with/without {rate}: 0\.860 -> \*\*{rate_ok}\*\*", line), line
    assert summary["target"]["latency_8B_ok"] == (lat_ok == "met")
    assert summary["target"]["msgrate_ok"] == (rate_ok == "met")


@pytest.mark.mpi
@pytest.mark.apps
def test_lammps_benchmark_runs_a_setting_in_the_mode_it_names(tmp_path):
    """bench/lammps.py times Debian's LAMMPS plain and under each --set; a --set naming
    MPILENS_MODE=trace runs in trace mode, which the script checks by the rank files of the trace
    it must have written (the profile alone writes none), and a profile whose receives LAMMPS did
    not complete one by one fails the run. One round of in.indent as shipped."""
    require("lmp", "lammps")
    out = tmp_path / "lammps.json"
    r = subprocess.run([str(ROOT / ".venv" / "bin" / "python"), str(ROOT / "bench" / "lammps.py"), "--rounds", "1",
                        "--set", "-", "--set", "MPILENS_MODE=trace", "--json", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    data = json.loads(out.read_text())
    assert [row["settings"] for row in data["rows"]] == ["-", "MPILENS_MODE=trace"]
    assert {k: len(v) for k, v in data["times"].items()} == {"plain": 1, "-": 1, "MPILENS_MODE=trace": 1}
    assert len(data["receives"]) == 2 and all(n > 0 for n in data["receives"]), data["receives"]
    assert all(t > 0 for ts in data["times"].values() for t in ts)
    bad = subprocess.run([str(ROOT / ".venv" / "bin" / "python"), str(ROOT / "bench" / "lammps.py"), "--rounds", "1",
                          "--set", "MODE=trace"], capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0 and "--set wants MPILENS_K=V" in bad.stderr, bad


@pytest.mark.parametrize("kind", ["hop", "rate"])
def test_paired_benchmark_counts_only_the_wrapped_batches(mpi, kind, tmp_path):
    """bench/paired.c, which bench/paired.py times, alternates batches of MPI_* calls and of PMPI_*
    calls in one pair of processes: the profile must hold exactly the MPI_* ones (the PMPI_* entry
    points are the MPI's own and nothing wraps them), with their bytes, on both ranks. The counts
    are the program's own tally of what its wrapped batches called."""
    exe = mpicc_build(mpi, "bench/paired.c", tmp_path / "paired")
    job = mpirun(mpi, 2, [str(exe), kind, "7", "0.05", "3"], tmp_path)
    assert len(re.findall(r"^pair \d+ plain \S+ wrapped \S+$", job.stdout, re.M)) == 7, job.stdout
    per = {"hop": {"MPI_Send": 8, "MPI_Recv": 8},
           "rate": {"MPI_Isend": 8, "MPI_Irecv": 8, "MPI_Send": 4, "MPI_Recv": 4}}[kind]
    # the program's own count: a warm-up batch and 7 wrapped batches of n units
    n = max(1, int((5000 if kind == "hop" else 60) * 0.05))
    profile = job.profile
    for rank, rest in re.findall(r"^wrapped_calls rank (\d) (.*)$", job.stdout, re.M):
        r, words = int(rank), rest.split()
        calls = {words[i]: int(words[i + 1]) for i in range(0, len(words), 2)}
        if kind == "hop":
            assert calls["MPI_Send"] == calls["MPI_Recv"] == 8 * n
        else:
            assert calls["MPI_Isend" if r == 0 else "MPI_Irecv"] == 8 * n * 64
            assert calls["MPI_Waitall"] == 8 * n
        for name, count in calls.items():
            got = fn(profile, name, "calls")[r] if name in profile["functions"] else 0
            assert got == count, (r, name, got, count)
            if name in per and count:
                key = "bytes_sent" if name in ("MPI_Send", "MPI_Isend") else "bytes_recv"
                assert fn(profile, name, key)[r] == count * per[name], (r, name)


@pytest.mark.parametrize("kind", [0, 1, 2, 3, 4, 5])
def test_floor_shim_sees_exactly_the_wrapped_calls(mpi, kind, tmp_path):
    """bench/floor.c, the least a tool can do per call (bench/paired.py --floor), must see every
    call paired.c makes through MPI_* and none of its PMPI_* ones, or its cost would be understated;
    from kind 2 on it must count every byte, and from kind 3 on keep what the profile keeps: each
    call and byte at its call site, each transfer in its size bin, each send in its destination's
    row (kinds 4 and 5 also timed); kind 5 must write a record of each call and completion, in the
    program's order. The counts come from paired.c's loops: a warm-up and 5 wrapped batches of n
    windows of 64 8-byte messages, each window completed by one MPI_Waitall and acknowledged by one
    4-byte message, from one line of the program per call."""
    exe = mpicc_build(mpi, "bench/paired.c", tmp_path / "paired")
    shim = mpicc_build(mpi, "bench/floor.c", tmp_path / "floor.so", "-Wall", "-Werror", "-shared", "-fPIC",
                       f"-DFLOOR_KIND={kind}")
    out = tmp_path / "out"
    job = subprocess.run(launcher(mpi, 2) + [str(exe), "rate", "5", "0.05", "3"], capture_output=True, text=True,
                         timeout=120, env=job_env(LD_PRELOAD=str(shim), MPILENS_OUTPUT=str(out)))
    assert job.returncode == 0, job.stderr
    n = max(1, int(60 * 0.05)) * 6  # windows: the warm-up batch and 5 wrapped ones
    want = {0: {"MPI_Send": 0, "MPI_Recv": n, "MPI_Isend": 64 * n, "MPI_Irecv": 0, "MPI_Waitall": n},
            1: {"MPI_Send": n, "MPI_Recv": 0, "MPI_Isend": 0, "MPI_Irecv": 64 * n, "MPI_Waitall": n}}
    moved = {0: (64 * n * 8, n * 4), 1: (n * 4, 64 * n * 8)}  # (sent, received)
    # kinds 3 and 4, per rank: (calls, sent, received) at each function's one call site; transfers per
    # (function, size bin: 4 bytes in bin 3, 8 in bin 4); (messages, bytes) to each peer
    want_sites = {0: {"MPI_Recv": (n, 0, 4 * n), "MPI_Isend": (64 * n, 512 * n, 0), "MPI_Waitall": (n, 0, 0)},
                  1: {"MPI_Irecv": (64 * n, 0, 512 * n), "MPI_Send": (n, 4 * n, 0), "MPI_Waitall": (n, 0, 0)}}
    want_hist = {0: {("MPI_Recv", 3): n, ("MPI_Isend", 4): 64 * n}, 1: {("MPI_Send", 3): n, ("MPI_Irecv", 4): 64 * n}}
    want_matrix = {0: {1: (64 * n, 512 * n)}, 1: {0: (n, 4 * n)}}
    for rank in (0, 1):
        lines = (out / f"floor.{rank}").read_text().splitlines()
        words = lines[0].split()
        assert words[:3] == ["floor_calls", "rank", str(rank)], words
        got = {words[i]: int(words[i + 1]) for i in range(3, len(words) - 6, 2)}
        assert got == want[rank], (rank, got)
        tail = dict(zip(words[-6::2], map(int, words[-5::2])))
        assert (tail["ticks"] > 0) == (kind in (1, 4, 5)), words
        assert (tail["sent"], tail["recv"]) == (moved[rank] if kind >= 2 else (0, 0)), words
        rows = [line.split() for line in lines[1:]]
        if kind < 3:
            assert rows == [], lines
            continue
        assert all(r[1:3] == ["rank", str(rank)] for r in rows), lines
        if kind == 5:
            assert rows[-1][0] == "floor_trace", lines
            check_floor_records(out / f"floor-trace.{rank}", int(rows.pop()[-1]), rank, n)
        sites = {r[3]: dict(zip(r[4::2], map(int, r[5::2]))) for r in rows if r[0] == "floor_site"}
        hist = {(r[3], int(r[5])): dict(zip(r[6::2], map(int, r[7::2]))) for r in rows if r[0] == "floor_hist"}
        matrix = {int(r[4]): (int(r[6]), int(r[8])) for r in rows if r[0] == "floor_matrix"}
        assert len(sites) + len(hist) + len(matrix) == len(rows), lines  # one line per site: no function twice
        assert {f: (s["calls"], s["sent"], s["recv"]) for f, s in sites.items()} == want_sites[rank], lines
        assert {k: h["calls"] for k, h in hist.items()} == want_hist[rank], lines
        assert matrix == want_matrix[rank], lines
        for f, s in sites.items():
            if kind == 3:
                assert s["ticks"] == s["shortest"] == s["longest"] == 0, (f, s)
            else:
                assert 0 < s["shortest"] <= s["longest"], (f, s)
                assert s["shortest"] * s["calls"] <= s["ticks"] <= s["longest"] * s["calls"], (f, s)
        for (f, _), h in hist.items():  # a blocking call's time is in its bin; a completion's is not
            assert h["ticks"] == (sites[f]["ticks"] if f in ("MPI_Send", "MPI_Recv") else 0), (f, h)


def check_floor_records(path, told: int, rank: int, n: int) -> None:
    """The trace floor's file (bench/floor.c, struct record: 24 bytes), read with struct. In each of
    paired.c's n windows rank 0 records its 64 MPI_Isend of 8 bytes with tag 100 to rank 1, its
    MPI_Waitall, the completions of the sends the MPI did not complete within their call, and the
    4-byte MPI_Recv of the acknowledgement (tag 101); rank 1 its 64 MPI_Irecv from rank 0, its
    MPI_Waitall, the 64 receives' completions of 8 bytes and the MPI_Send of the acknowledgement.
    Operations are numbered 1, 2, ... in the order of their calls, on the call and its completion."""
    send, recv, isend, irecv, waitall, done, both = 0, 1, 2, 3, 4, 0x80, 0x40  # floor.c's numbers
    data = path.read_bytes()
    records = [struct.unpack_from("<IIIiIHBB", data, i) for i in range(0, len(data), 24)]
    assert len(records) == told
    got = [(fn, nbytes, tag, op, peer) for _, _, nbytes, tag, op, peer, _, fn in records]
    pos = 0
    for w in range(n):
        ops = range(64 * w + 1, 64 * w + 65)
        if rank == 0:
            calls = got[pos:pos + 64]
            assert [(fn & ~both, *rest) for fn, *rest in calls] == [(isend, 8, 100, k, 1) for k in ops], w
            pending = [op for fn, _, _, op, _ in calls if not fn & both]
            tail = [(waitall, 0, 0, 0, 0xFFFF)] + [(isend | done, 0, 0, op, 0xFFFF) for op in pending]
            tail.append((recv, 4, 101, 0, 1))
        else:
            assert got[pos:pos + 64] == [(irecv, 0, 100, k, 0) for k in ops], w
            tail = [(waitall, 0, 0, 0, 0xFFFF)] + [(irecv | done, 8, 100, k, 0) for k in ops] + [(send, 4, 101, 0, 0)]
        assert got[pos + 64:pos + 64 + len(tail)] == tail, w
        pos += 64 + len(tail)
    assert pos == len(got)
    assert all(dur == 0 for _, dur, *_, fn in records if fn & done)


@pytest.mark.parametrize("kind", [3, 4, 5])
def test_floor_shim_keeps_each_call_site(mpi, kind, tmp_path):
    """The attribution floors key every count by call site, as the profile does: tests/data/two_sites.c
    calls each wrapped function from two lines, a times with 8 bytes and b times with 4 (paired.c, the
    benchmark, calls each from one). Each line's counts, bins and the matrix come from its loops."""
    exe = mpicc_build(mpi, "tests/data/two_sites.c", tmp_path / "two_sites")
    shim = mpicc_build(mpi, "bench/floor.c", tmp_path / "floor.so", "-shared", "-fPIC", f"-DFLOOR_KIND={kind}")
    out, a, b = tmp_path / "out", 5, 3
    job = subprocess.run(launcher(mpi, 2) + [str(exe), str(a), str(b)], capture_output=True, text=True,
                         timeout=120, env=job_env(LD_PRELOAD=str(shim), MPILENS_OUTPUT=str(out)))
    assert job.returncode == 0, job.stderr
    send, recv = [(a, 8 * a, 0), (b, 4 * b, 0)], [(a, 0, 8 * a), (b, 0, 4 * b)]  # (calls, sent, received)
    want_sites = {0: {"MPI_Send": send, "MPI_Isend": send, "MPI_Waitall": [(1, 0, 0), (1, 0, 0)]},
                  1: {"MPI_Recv": recv, "MPI_Irecv": recv, "MPI_Waitall": [(1, 0, 0), (1, 0, 0)]}}
    for rank in (0, 1):
        rows = [line.split() for line in (out / f"floor.{rank}").read_text().splitlines()[1:]]
        sites: dict[str, list[tuple[int, ...]]] = {}
        for r in rows:
            if r[0] == "floor_site":
                sites.setdefault(r[3], []).append((int(r[5]), int(r[7]), int(r[9])))
        assert {f: sorted(v) for f, v in sites.items()} == {f: sorted(v) for f, v in want_sites[rank].items()}, rows
        hist = {(r[3], int(r[5])): int(r[7]) for r in rows if r[0] == "floor_hist"}
        fns = ("MPI_Send", "MPI_Isend") if rank == 0 else ("MPI_Recv", "MPI_Irecv")
        assert hist == {(f, bin_): n for f in fns for bin_, n in ((4, a), (3, b))}, rows  # 8 B: bin 4; 4 B: bin 3
        matrix = [r for r in rows if r[0] == "floor_matrix"]
        assert matrix == ([["floor_matrix", "rank", "0", "peer", "1", "messages", str(2 * (a + b)), "bytes",
                            str(2 * (8 * a + 4 * b))]] if rank == 0 else []), rows
