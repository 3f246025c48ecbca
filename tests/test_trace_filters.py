"""Trace only what is wanted (docs/trace.md): at record time, some ranks (MPILENS_TRACE_RANKS), a time
window (MPILENS_TRACE_WINDOW), MPI_Pcontrol phases (MPILENS_TRACE_PCONTROL) and functions left out
(MPILENS_TRACE_EXCLUDE), while the profile still covers every rank and call; at export time, a part of
a trace (--ranks, --window, --functions, --exclude). The expectations come from the programs (their
calls and phases), the files on disk (which ranks wrote one, the events written, read without
mpilens' reader) and, for exports, Perfetto's own protobuf classes."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from conftest import fn, matrix_params, run_example, trace_calls, trace_head
from mpilens import cli
from mpilens.errors import MpilensError
from mpilens.trace import filters, timeline


# ------------------------------------------------------------------------------------- the syntax
def test_parse_ranks():
    assert filters.parse_ranks("0-3,8, 12-15") == [(0, 3), (8, 8), (12, 15)]
    assert filters.parse_ranks("") == []
    for bad in ("3-1", "a", "1,", "-2", "1-", "1--2"):
        with pytest.raises(MpilensError, match="not a list of ranks"):
            filters.parse_ranks(bad)
    assert filters.in_ranks([(0, 3), (8, 8)], 8) and not filters.in_ranks([(0, 3)], 4) and filters.in_ranks([], 9)


def test_parse_window():
    assert filters.parse_window("5:20") == (5.0, 20.0)
    assert filters.parse_window("2.5:") == (2.5, math.inf)
    assert filters.parse_window(":20") == (0.0, 20.0)
    for bad in ("5", "5:3", ":", "a:b", "1:2:3", "-1:2", "nan:1", "1:nan"):
        with pytest.raises(MpilensError, match="not START:END"):
            filters.parse_window(bad)


def test_function_ids():
    functions = ["MPI_Send", "MPI_Recv", "MPI_Iprobe", "MPI_Test", "MPI_Barrier"]
    classes = ["p2p", "p2p", "probe", "completion", "collective"]
    assert filters.function_ids("mpi_send, probe", functions, classes) == {0, 2}
    assert filters.function_ids("p2p,MPI_Test", functions, classes) == {0, 1, 3}
    with pytest.raises(MpilensError, match="'MPI_Foo' is neither"):
        filters.function_ids("MPI_Send,MPI_Foo", functions, classes)


# ------------------------------------------------------------------------------------- at record time
def trace_files(job) -> dict[int, Path]:
    return {int(p.name[5:11]): p for p in sorted((job.rundir / "trace").glob("rank-*.bin"))}


@pytest.fixture(params=matrix_params())
def any_mpi(request):
    """Debian's MPIs and those of the matrix (Open MPI 5, MPICH 5, its standard ABI, Intel MPI)."""
    return request.param


@pytest.mark.mpi
def test_pcontrol_phases(any_mpi, tmp_path):
    """`pcontrol onoff 5 6 7`: 5 steps, MPI_Pcontrol(0), 6 steps, MPI_Pcontrol(1), 7 steps. With
    MPILENS_TRACE_PCONTROL the trace starts off and MPI_Pcontrol(1) opens it: the trace has the 7
    last steps and both MPI_Pcontrol calls, the profile all 18 steps (levels 0 and 1 switch the trace
    alone)."""
    job = run_example(any_mpi, "pcontrol", 4, tmp_path, ["onoff", "5", "6", "7"],
                      settings={"MPILENS_MODE": "trace", "MPILENS_TRACE_PCONTROL": "1"})
    files = trace_files(job)
    assert sorted(files) == [0, 1, 2, 3]
    for rank, path in files.items():
        calls = trace_calls(path)
        assert calls["MPI_Pcontrol"] == 2, (rank, calls)
        assert calls["MPI_Allreduce"] == 7 and calls["MPI_Send"] == 7 and calls["MPI_Recv"] == 7, (rank, calls)
        assert calls["MPI_Barrier"] == 0 and calls["MPI_Bcast"] == 0 and calls["MPI_Isend"] == 0, (rank, calls)
    p = job.profile
    assert fn(p, "MPI_Barrier", "calls") == [5] * 4
    assert fn(p, "MPI_Bcast", "calls") == [6] * 4
    assert fn(p, "MPI_Allreduce", "calls") == [7] * 4
    assert fn(p, "MPI_Send", "calls") == [18] * 4
    tl = timeline.load(job.rundir)
    assert tl.filters.pcontrol and tl.complete and not tl.problems
    m = tl.messages
    assert (len(m.send_ev), m.unmatched_sends, m.unmatched_recvs, m.outside) == (7 * 4, 0, 0, 0)
    assert set(m.bytes.tolist()) == {300}


@pytest.mark.mpi
def test_some_ranks_and_functions_left_out(any_mpi, tmp_path):
    """Ranks 1-2 of 4 trace the ring (N sends to the right, N receives from the left), without its
    MPI_Allreduce nor the setup calls: two trace files, with N sends and N receives each and nothing
    else; the profile has every rank and call. Of the traced ranks' messages, 1 -> 2 is matched and
    the ends towards untraced ranks are counted apart, not as unmatched."""
    n = 25
    job = run_example(any_mpi, "ring", 4, tmp_path, [str(n), "64"],
                      settings={"MPILENS_MODE": "trace", "MPILENS_TRACE_RANKS": "1-2",
                                "MPILENS_TRACE_EXCLUDE": "MPI_Allreduce,setup"})
    files = trace_files(job)
    assert sorted(files) == [1, 2]
    for rank, path in files.items():
        assert trace_calls(path) == {"MPI_Send": n, "MPI_Recv": n}, rank
    p = job.profile
    assert fn(p, "MPI_Send", "calls") == [n] * 4 and fn(p, "MPI_Allreduce", "calls") == [1] * 4
    assert fn(p, "MPI_Comm_rank", "calls") == [1] * 4
    tl = timeline.load(job.rundir)
    assert tl.traced == [1, 2] and tl.complete and not tl.problems
    m = tl.messages
    assert (len(m.send_ev), m.unmatched_sends, m.unmatched_recvs, m.outside) == (n, 0, 0, 2 * n)
    assert set(zip(m.src.tolist(), m.dst.tolist())) == {(1, 2)}
    out = cli_text(["trace", str(job.rundir)])
    assert "ranks 1-2 only (MPILENS_TRACE_RANKS)" in out and f"{2 * n} ends whose partner the trace left out" in out


# how long after the program's clock reading a call may reach the wrapper's (a preemption between
# the two): a call the program made this close to an edge of the window may fall either side of it
EDGE_NS = 50_000_000


def test_time_window(mpi, tmp_path):
    """sleeper -n 8 -S 400: a step (MPI_Allreduce, MPI_Sendrecv around the ring) every 400 ms from
    the moment rank 0's MPI_Init returned to the program, on a schedule. The window counts from
    the end of rank 0's MPI_Init as the tool saw it, 0.17-0.25 s earlier here (the trace's clock
    offsets are measured in between), so steps come at about 0.2 + 0.4 i s of the window's axis:
    a window from 0.8 to 2.0 s holds 3 of them, its edges 100 ms or more from any. Each rank writes
    down when it made each call (-c: its CLOCK_MONOTONIC, the clock of the window's edges in the
    trace's head on the ranks of one host), and traces exactly the calls it made inside the
    window: on a quiet machine the same steps on every rank, every message matched; on a loaded
    one a step may drift across an edge (beside a second suite the ranks' MPI_Sendrecv of a step
    fell inside a window that their MPI_Allreduce had begun before), and what the program's clock
    says is still what the trace holds. The profile has all 8 steps."""
    job = run_example(mpi, "sleeper", 3, tmp_path, ["-n", "8", "-S", "400", "-c", str(tmp_path)],
                      settings={"MPILENS_MODE": "trace", "MPILENS_TRACE_WINDOW": "0.8:2.0"})
    assert fn(job.profile, "MPI_Allreduce", "calls") == [8] * 3
    lines = {r: [tuple(map(int, ln.split())) for ln in (tmp_path / f"calls-{r}").read_text().splitlines()]
             for r in range(3)}
    init, made = {r: lines[r][0] for r in range(3)}, {r: lines[r][1:] for r in range(3)}
    traced = {r: trace_calls(path) for r, path in trace_files(job).items()}
    assert sorted(traced) == [0, 1, 2] and all(len(made[r]) == 8 for r in range(3))
    inside: dict[tuple[int, str], set[int]] = {}
    unsure = 0
    for r in range(3):
        lo_ns, hi_ns = trace_head(job.rundir / "trace" / f"rank-{r:06d}.bin")["filter"]["window_ns"]
        assert hi_ns - lo_ns == pytest.approx(1.2e9, abs=1e4)
        # where the window lies, by the program's clock: 0.8 s after the end of rank 0's MPI_Init,
        # a moment inside that call as rank 0 timed it (the ranks share the host's clock; 1 ms
        # for the offset the tool measured between them)
        assert init[0][0] - 1e6 <= lo_ns - 0.8e9 <= init[0][1] + 1e6, (r, lo_ns, init[0])
        for k, name in enumerate(("MPI_Allreduce", "MPI_Sendrecv")):
            at = [step[k] for step in made[r]]
            sure = {i for i, t in enumerate(at) if lo_ns <= t <= hi_ns - EDGE_NS}
            either = {i for i, t in enumerate(at) if lo_ns - EDGE_NS <= t < lo_ns or hi_ns - EDGE_NS < t <= hi_ns}
            assert len(sure) <= traced[r][name] <= len(sure) + len(either), (r, name, at, lo_ns, traced[r])
            assert sure, (r, name, at, lo_ns)
            inside[r, name], unsure = sure, unsure + len(either)
    # the window on the trace's axis: 1.2 s long, from 0.8 s after rank 0's MPI_Init ended; every
    # event in it
    tl = timeline.load(job.rundir)
    lo, hi = tl.filters.window
    assert hi - lo == pytest.approx(1.2, abs=1e-3)
    assert ((tl.ev["t0"] >= lo - 1e-4) & (tl.ev["t0"] <= hi + 1e-4)).all()
    assert lo - tl.init_end[0][0] == pytest.approx(0.8, abs=1e-3)
    if unsure == 0:
        # rank r's MPI_Sendrecv of step i sends to rank r+1: a message both of whose ends are in
        # the window is matched, the others have an end the window left out
        sends = {(r, i) for r in range(3) for i in inside[r, "MPI_Sendrecv"]}
        matched = {(r, i) for r, i in sends if i in inside[(r + 1) % 3, "MPI_Sendrecv"]}
        m = tl.messages
        assert (len(m.send_ev), m.unmatched_sends) == (len(sends), len(sends) - len(matched))
        recvs = sum(len(inside[r, "MPI_Sendrecv"]) for r in range(3))
        assert m.unmatched_recvs == recvs - len(matched)


@pytest.mark.parametrize("name,value,why", [
    ("MPILENS_TRACE_RANKS", "0-3,x", "not a list of ranks and ranges"),
    ("MPILENS_TRACE_WINDOW", "5", "not START:END in seconds"),
    ("MPILENS_TRACE_EXCLUDE", "MPI_Test,prob", "'prob' is neither an MPI function"),
])
def test_bad_filter_refused(mpi, tmp_path, name, value, why):
    """A bad value: one line naming it, before any job starts (the runtime's own parser)."""
    out = tmp_path / "run"
    rc, text = cli_run(["run", "-o", str(out), "--mpi", mpi, "--mode", "trace", "--set", f"{name}={value}", "--",
                        "true"])
    assert rc != 0 and f"{name}={value}" in text and why in text, text
    assert not out.exists()


def test_filter_without_trace_mode_refused(mpi, tmp_path):
    out = tmp_path / "run"
    rc, text = cli_run(["run", "-o", str(out), "--mpi", mpi, "--set", "MPILENS_TRACE_RANKS=0", "--", "true"])
    assert rc != 0 and "without trace mode" in text, text


# ------------------------------------------------------------------------------------- at export time
def test_export_part_of_a_trace(committed, tmp_path):
    """ring 4 1000 on 3 ranks (4 MPI_Send and 4 MPI_Recv per rank in region "ring", then one
    MPI_Allreduce in region "check"): the Perfetto export of rank 1's MPI_Send calls has those 4
    slices and the regions, nothing of the other ranks, no flow (no message has both ends); a window
    keeps exactly the slices of the whole export that start in it."""
    from test_perfetto import decode

    run = committed.run("ring-trace", tmp_path).rundir
    whole = decode(export(run, tmp_path / "whole.pftrace"))
    part = decode(export(run, tmp_path / "part.pftrace", "--ranks", "1", "--functions", "MPI_Send"))
    names = sorted((part.rank_of(b.track), b.name) for _, _, b in part.slices())
    assert names == sorted([(1, "MPI_Send")] * 4 + [(1, "ring"), (1, "check")])
    assert not any(e.flows or e.terminating for e in part.events)
    # a window: from the start of rank 0's second MPI_Send to that of its fourth, on the export's clock
    sends = sorted(b for b, _, e in whole.slices() if e.name == "MPI_Send" and whole.rank_of(e.track) == 0)
    origin = min(e.ts for e in whole.events if e.type in (1, 2, 3))
    lo, hi = (sends[1] - origin) * 1e-9, (sends[3] - origin) * 1e-9
    cut = decode(export(run, tmp_path / "cut.pftrace", "--window", f"{lo - 1e-9!r}:{hi + 1e-9!r}"))
    mpi_calls = {(whole.rank_of(e.track), e.name, b) for b, _, e in whole.slices() if e.name.startswith("MPI_")}
    inside = {s for s in mpi_calls if sends[1] <= s[2] <= sends[3]}
    got = {(cut.rank_of(e.track), e.name, b - min(x.ts for x in cut.events if x.type in (1, 2, 3)) + sends[1])
           for b, _, e in cut.slices() if e.name.startswith("MPI_")}
    assert {(r, n) for r, n, _ in got} == {(r, n) for r, n, _ in inside}
    assert len(got) == len(inside) >= 3


def test_export_selection_errors(committed, tmp_path):
    run = committed.run("ring-trace", tmp_path).rundir
    rc, text = cli_run(["export", "perfetto", str(run), "-o", str(tmp_path / "x"), "--ranks", "7"])
    assert rc != 0 and "has none of these ranks" in text
    rc, text = cli_run(["export", "perfetto", str(run), "-o", str(tmp_path / "x"), "--functions", "MPI_Foo"])
    assert rc != 0 and "'MPI_Foo' is neither" in text
    rc, text = cli_run(["export", "caliper", str(run), "-o", str(tmp_path / "x"), "--ranks", "0"])
    assert rc != 0 and "written from the profile" in text


# ------------------------------------------------------------------------------------- helpers
@pytest.fixture(params=["openmpi"])
def committed(request):
    from conftest import Source

    return Source(request.param, False)


def export(rundir: Path, out: Path, *more: str) -> Path:
    assert cli.main(["export", "perfetto", str(rundir), "-o", str(out), "--quiet", *more]) == 0
    return out


def cli_run(argv: list[str]) -> tuple[int, str]:
    import subprocess

    from conftest import MPILENS, job_env

    p = subprocess.run([str(MPILENS), *argv], capture_output=True, text=True, env=job_env(), timeout=120)
    return p.returncode, p.stdout + p.stderr


def cli_text(argv: list[str]) -> str:
    rc, text = cli_run(argv)
    assert rc == 0, text
    return text
