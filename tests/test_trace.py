"""Trace mode: known timelines give the right findings; every message has exactly one arrow;
exports are valid; a killed job leaves a readable trace."""

from __future__ import annotations

import collections
import json
import os
import re
import signal
import subprocess
from pathlib import Path

import numpy as np
import pytest

from conftest import MPILENS, example, fn, lammps_indent, launcher, mpilens_run, run_example, sources, trace_kinds
from mpilens.trace import findings, reader, timeline

TRACE = {"MPILENS_MODE": "profile,trace"}


def traced(mpi: str, name: str, np_: int, tmp_path: Path, args: list[str]) -> timeline.Timeline:
    job = run_example(mpi, name, np_, tmp_path, args, settings=TRACE)
    tl = timeline.load(job.rundir)
    assert tl.complete and tl.problems == []
    return tl


WARMUP_TAG = 99  # patterns.c: every pair exchanges once before the patterns (connection setup)


def by_kind(found, kind):
    """Findings of a kind, leaving out the warm-up exchange of patterns.c."""
    return [f for f in found if f.kind == kind and f.evidence.get("tag") != WARMUP_TAG]


def entries(job) -> dict[tuple[int, int], float]:
    """When each rank entered the pattern's MPI call, per repetition, as patterns.c prints it
    (CLOCK_MONOTONIC: one clock for the ranks of this host)."""
    found = re.findall(r"^patterns: rank (\d+) rep (\d+) enter ([\d.]+)$", job.stdout, re.M)
    return {(int(r), int(k)): float(t) for r, k, t in found}


def sent_times(job) -> dict[tuple[int, int], float]:
    """When each rank's sends of a repetition had started (halo) or returned (late_burst), as
    patterns.c prints it."""
    found = re.findall(r"^patterns: rank (\d+) rep (\d+) sent ([\d.]+)$", job.stdout, re.M)
    return {(int(r), int(k)): float(t) for r, k, t in found}


def expected_waits(job, waiting: int, late: int, reps: int) -> dict[int, float]:
    """Per repetition, how long `waiting` had to wait for `late`: the difference of their entry
    times. On an idle machine it is the program's delay; under load a rank may start late or be
    preempted, and the finding must show what really happened."""
    e = entries(job)
    assert len(e) >= 2 * reps, job.stdout
    return {k: e[(late, k)] - e[(waiting, k)] for k in range(reps)}


def check_late_pairs(found: dict[int, object], expected: dict[int, float]) -> None:
    """Each repetition where one rank really waited (> 2 ms) has its finding, with the duration
    within 10 % (0.5 ms at least); the others have none that is longer than their skew."""
    assert sum(w > 2e-3 for w in expected.values()) >= 1, expected  # the pattern happened at all
    for k, w in expected.items():
        if w > 2e-3:
            assert k in found, (k, w, {t: f.message for t, f in found.items()})
            assert found[k].duration_s == pytest.approx(w, rel=0.10, abs=5e-4), (w, found[k].message)
        elif k in found:
            assert found[k].duration_s <= max(w, 0.0) + 1e-3, (w, found[k].message)


def reps(job) -> int:
    """Repetitions of a patterns.c run (PATTERN DELAY_MS REPS)."""
    assert job.example == "patterns", job.example
    return int(job.args[2])


@pytest.mark.parametrize("src", sources())
def test_late_sender(src, tmp_path):
    job = src.run("late_sender", tmp_path)
    tl = timeline.load(job.rundir)
    late = by_kind(findings.find(tl), "late_sender")
    for f in late:
        assert (f.evidence["receiver"], f.evidence["sender"], f.bytes) == (0, 1, 4096)
    check_late_pairs({f.evidence["tag"]: f for f in late}, expected_waits(job, 0, 1, reps(job)))


@pytest.mark.parametrize("src", sources())
def test_late_burst_is_one_finding(src, tmp_path):
    """Eight receives completed by one MPI_Waitall, all sent late: one wait, so one finding (the
    longest), which says how many late messages the call waited for."""
    job = src.run("late_burst", tmp_path)
    tl = timeline.load(job.rundir)
    late = [f for f in by_kind(findings.find(tl), "late_sender") if f.evidence["tag"] != WARMUP_TAG]
    assert all((f.evidence["receiver"], f.evidence["sender"], f.bytes) == (0, 1, 512) for f in late)
    by_rep = {}
    for f in late:
        by_rep.setdefault(f.evidence["tag"] // 8, []).append(f)
    assert all(len(v) == 1 for v in by_rep.values()), [f.message for f in late]
    # rank 0 waited from its entry until rank 1 had sent the last of the 8: at least until rank 1
    # entered its first send, at most until its last send had returned (a rank preempted among its
    # sends, as on a loaded machine, makes the wait longer than the entries' difference)
    expected = expected_waits(job, 0, 1, reps(job))
    e, sent = entries(job), sent_times(job)
    assert sum(w > 2e-3 for w in expected.values()) >= 1, expected  # the pattern happened at all
    for k, w in expected.items():
        if w <= 2e-3:
            continue
        assert k in by_rep, (k, w, [f.message for f in late])
        f, longest = by_rep[k][0], sent[(1, k)] - e[(0, k)]
        assert 0.9 * w - 5e-4 <= f.duration_s <= 1.1 * longest + 5e-4, (w, longest, f.message)
        assert f.evidence["late_messages_in_call"] == 8, f.message
        assert "waited for 7 more late messages" in f.message


@pytest.mark.parametrize("src", sources("openmpi"))
def test_report_names_the_late_sender(src, tmp_path):
    """`mpilens report` of a traced run lists the timeline's findings, in text and in --json."""
    job = src.run("late_sender", tmp_path)
    expected = expected_waits(job, 0, 1, reps(job))
    text = subprocess.run([str(MPILENS), "report", str(job.rundir), "--quiet"], capture_output=True, text=True,
                          timeout=120)
    assert text.returncode == 0, text.stderr
    section = text.stdout.split("@ Timeline findings (trace)")[1]
    assert section.count("[late_sender] Late sender: rank 0 waited") >= sum(w > 2e-3 for w in expected.values())
    doc = json.loads(subprocess.run([str(MPILENS), "report", str(job.rundir), "--json", "--quiet"],
                                    capture_output=True, text=True, timeout=120, check=True).stdout)
    late = {f["tag"]: f for f in doc["timeline_findings"] if f["kind"] == "late_sender" and f.get("tag") != WARMUP_TAG}
    assert all(f["rank"] == 0 and f["bytes"] == 4096 for f in late.values()), late
    for k, w in expected.items():
        if w > 2e-3:
            assert late[k]["duration_s"] == pytest.approx(w, rel=0.10, abs=5e-4), (w, late[k])
    plain = src.run("ring", tmp_path / "plain")
    doc = json.loads(subprocess.run([str(MPILENS), "report", str(plain.rundir), "--json", "--quiet"],
                                    capture_output=True, text=True, timeout=120, check=True).stdout)
    assert doc["timeline_findings"] is None  # no trace: not measured, not "nothing found"


@pytest.mark.parametrize("src", sources())
def test_late_receiver(src, tmp_path):
    job = src.run("late_receiver", tmp_path)
    tl = timeline.load(job.rundir)
    late = by_kind(findings.find(tl), "late_receiver")
    for f in late:
        assert (f.evidence["sender"], f.evidence["receiver"], f.bytes) == (0, 1, 4096)
    check_late_pairs({f.evidence["tag"]: f for f in late}, expected_waits(job, 0, 1, reps(job)))


@pytest.mark.parametrize("src", sources())
def test_late_barrier(src, tmp_path):
    # two ranks on the two cores (scripts/make-test-runs.py): a third would share a core with the
    # late one and slow its work
    job = src.run("late_barrier", tmp_path)
    np_ = job.np
    tl = timeline.load(job.rundir)
    waits = [f for f in by_kind(findings.find(tl), "collective_wait")
             if f.evidence["function"] == "MPI_Barrier" and f.rank == 0 and f.evidence["late_rank"] == np_ - 1]
    expected = expected_waits(job, 0, np_ - 1, reps(job))
    assert sum(w > 2e-3 for w in expected.values()) >= 1, expected
    for k, w in expected.items():
        if w > 2e-3:  # one of rank 0's barrier waits is this one
            assert any(f.duration_s == pytest.approx(w, rel=0.10, abs=5e-4) for f in waits), \
                (k, w, [f.message for f in waits])


@pytest.mark.parametrize("src", sources())
def test_balanced_halo_has_no_late_partner(src, tmp_path):
    """Same work everywhere: a late partner is reported only as late as the ranks really were. How
    late that is comes from the program: from a rank's entry into the exchange to the moment both
    of its partner's sends had started (a rank preempted between the two, as on a loaded 2-core
    machine where each rank's trace writer competes for the cores, really is a late sender)."""
    job = src.run("halo", tmp_path)
    n = reps(job)
    tl = timeline.load(job.rundir)
    e, sent = entries(job), sent_times(job)
    assert len(sent) == 2 * n, job.stdout
    # per rank, the longest it could have waited for its partner (the other rank): its sends and,
    # posted before them, its receives
    lag = {r: max(0.0, *(sent[(1 - r, k)] - e[(r, k)] for k in range(n))) for r in (0, 1)}
    found = findings.find(tl)
    late = [f for f in found if f.kind in ("late_sender", "late_receiver") and f.evidence.get("tag") != WARMUP_TAG]
    assert all(f.duration_s <= lag[f.rank] + 1e-3 for f in late), (lag, [f.message for f in late])
    # two sends per rank and repetition, and the warm-up exchange, all matched
    assert len(tl.messages.send_ev) == 2 * 2 * n + 2


def check_chrome(path: Path) -> dict:
    """Structure of a Trace Event Format file; returns counts per phase."""
    doc = json.loads(path.read_text())
    events = doc["traceEvents"]
    phases: dict[str, int] = {}
    last_ts: dict[tuple[int, int], float] = {}
    flows: dict[int, list[str]] = {}
    for e in events:
        phases[e["ph"]] = phases.get(e["ph"], 0) + 1
        assert e["ph"] in ("M", "X", "s", "f", "C"), e
        assert isinstance(e["pid"], int)
        if e["ph"] == "M":
            continue
        assert e["ts"] >= 0
        if e["ph"] == "X":
            assert e["dur"] >= 0 and isinstance(e["tid"], int) and e["name"]
        if e["ph"] in ("X", "s", "f"):
            key = (e["pid"], e["tid"])
            assert e["ts"] >= last_ts.get(key, 0.0), f"timestamps go back on {key}: {e}"
            last_ts[key] = e["ts"]
        if e["ph"] in ("s", "f"):
            flows.setdefault(e["id"], []).append(e["ph"])
    assert all(v == ["s", "f"] or v == ["f", "s"] for v in flows.values()), "each arrow has one start and one end"
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    for e in events:
        if e["ph"] == "f":
            assert e["ts"] >= starts[e["id"]]["ts"], "an arrow points backwards"
    return phases


@pytest.mark.parametrize("src", sources())
def test_every_send_has_one_arrow(src, tmp_path):
    job = src.run("ring-trace", tmp_path)
    (n, size), np_ = map(int, job.args), job.np
    tl = timeline.load(job.rundir)
    m = tl.messages
    assert len(m.send_ev) == n * np_ and m.unmatched_sends == 0 and m.unmatched_recvs == 0
    assert sorted(zip(m.src.tolist(), m.dst.tolist())) == sorted((r, (r + 1) % np_) for r in range(np_) for _ in range(n))
    assert set(m.bytes.tolist()) == {size}
    # the profile's point-to-point matrix counts the same messages
    assert sum(e["messages"] for e in job.profile["matrix"]) == len(m.send_ev)
    out = tmp_path / "ring.json"
    p = subprocess.run([str(MPILENS), "trace", str(job.rundir), "--format", "chrome", "-o", str(out), "--quiet"],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    phases = check_chrome(out)
    assert phases["s"] == phases["f"] == n * np_
    calls = sum(sum(c for c in f["calls"]) for f in job.profile["functions"].values())
    assert phases["X"] == calls + 2 * np_  # every MPI call, and the two regions of each rank
    # each call's arguments: its bytes and world peer, only those it has, and where in ring.c it was made
    mpi_events = [e for e in json.loads(out.read_text())["traceEvents"] if e.get("cat") == "mpi"]
    sites = [e["args"].pop("site", None) for e in mpi_events]
    if src.live:  # symbolised from the program's binary at analysis time: a committed run's binary was
        # built in the checkout that made it, which another machine does not have
        assert all(s is not None and s.startswith("ring.c:") for s in sites), set(sites)
    args = collections.Counter((e["name"], e["pid"], json.dumps(e["args"], sort_keys=True)) for e in mpi_events)
    for r in range(np_):
        assert args[("MPI_Send", r, json.dumps({"bytes_sent": size, "dst": (r + 1) % np_}))] == n
        assert args[("MPI_Recv", r, json.dumps({"bytes_recv": size, "src": (r - 1) % np_}))] == n
        assert args[("MPI_Allreduce", r, json.dumps({"bytes_recv": 8, "bytes_sent": 8}))] == 1


def test_chrome_times_in_microseconds():
    """The Chrome export's times: seconds to microseconds with nanosecond digits, rounded, signed."""
    from mpilens.trace.export import _micros

    t = np.array([0.0, 1e-9, 1.2345678e-3, -2.5e-6, 3.0, 4.9994e-10, 7.0000005e-6])
    assert _micros(t).to_pylist() == ["0.000", "0.001", "1234.568", "-2.500", "3000000.000", "0.000", "7.000"]


def test_small_buffers_lose_nothing(mpi, tmp_path):
    """With the smallest buffers (2 x 64 KiB = 2,048 events per thread) the application waits for
    the writer instead of dropping events: 2 ranks x 6,000 messages (about 6 buffer hand-overs a
    rank), every send still matched to its receive."""
    n, np_ = 6000, 2
    settings = {**TRACE, "MPILENS_TRACE_BUFFER_KB": "64", "MPILENS_TRACE_BUFFERS": "2"}
    job = run_example(mpi, "ring", np_, tmp_path, [str(n), "8"], settings=settings)
    tl = timeline.load(job.rundir)
    assert tl.complete and tl.problems == []
    m = tl.messages
    assert len(m.send_ev) == n * np_ and m.unmatched_sends == 0 and m.unmatched_recvs == 0
    calls = sum(sum(c for c in f["calls"]) for f in job.profile["functions"].values())
    assert int((tl.ev["kind"] == 1).sum()) == calls  # one call record (TEV_CALL) per MPI call
    assert all(int((tl.ev["rank"] == r).sum()) > 3 * 2048 for r in range(np_))  # both buffers refilled


@pytest.mark.parametrize("src", sources())
def test_ranks_of_one_host_share_one_clock(src, tmp_path):
    """Ranks on one host read the same time-stamp counter: a tick is the same time on all of them
    (converted with rank 0's clock points; each rank's own differ by tens of ns of read jitter,
    enough to turn a fast message's arrow backwards)."""
    job = src.run("ring-trace", tmp_path)
    ranks = list(reader.read_all(job.rundir))
    assert [rt.rank for rt in ranks] == list(range(job.np)) and all(rt.same_host_as_rank0 for rt in ranks)
    ticks = np.array([ranks[0].clock_points[0][0], ranks[0].clock_points[-1][0]], dtype=np.uint64)
    for rt in ranks[1:]:
        assert rt.host_clock_points == ranks[0].clock_points
        assert np.array_equal(rt.to_seconds(ticks), ranks[0].to_seconds(ticks))


def test_nonblocking_arrows(mpi, tmp_path):
    """The stencil's Isend/Irecv/Waitall halo (a 2 x 2 grid, not periodic: 2 neighbours per rank,
    one message each way per iteration) is matched message by message."""
    tl = traced(mpi, "stencil", 4, tmp_path, ["32", "12"])
    m = tl.messages
    assert len(m.send_ev) == 4 * 2 * 12 and m.unmatched_sends == 0 and m.unmatched_recvs == 0
    assert (m.recv_t >= m.send_t).all()


@pytest.mark.parametrize("phase,per_pair", [("persistent", 6), ("wildcard", None), ("split", None)])
def test_persistent_wildcard_and_subcommunicator_arrows(mpi, tmp_path, phase, per_pair):
    """Persistent sends (each MPI_Start is a message), wildcard receives (source and tag from the
    status), and sends on split communicators (world ranks) are all matched, as many as the
    profile counts."""
    job = run_example(mpi, "traffic_p2p", 4, tmp_path, [phase, "6", "100"], settings=TRACE)
    tl = timeline.load(job.rundir)
    m = tl.messages
    assert m.unmatched_sends == 0 and m.unmatched_recvs == 0
    assert len(m.send_ev) == sum(e["messages"] for e in job.profile["matrix"])
    if per_pair:
        assert len(m.send_ev) == 4 * per_pair


def test_completion_after_the_communicator_was_freed(mpi, tmp_path):
    """MPI_Comm_free while an MPI_Irecv(MPI_ANY_SOURCE) and an MPI_Isend on the communicator are
    pending (allowed), then new communicators in another rank order that may reuse its handle:
    the completions still translate the source with the freed communicator's ranks."""
    reps, size, np_ = 5, 100, 4
    job = run_example(mpi, "traffic_p2p", np_, tmp_path, ["freedcomm", str(reps), str(size)], settings=TRACE)
    tl = timeline.load(job.rundir)
    m = tl.messages
    assert m.unmatched_sends == 0 and m.unmatched_recvs == 0
    assert sorted(zip(m.src.tolist(), m.dst.tolist())) == sorted((r, r ^ 1) for r in range(np_) for _ in range(reps))
    assert sorted(m.bytes.tolist()) == sorted(size + r for r in range(np_) for _ in range(reps))
    assert fn(job.profile, "MPI_Irecv", "bytes_recv") == [reps * (size + (r ^ 1)) for r in range(np_)]


@pytest.mark.mpi
@pytest.mark.apps
def test_lammps_trace(tmp_path):
    """LAMMPS indent on 4 ranks (Open MPI): the Chrome export is valid and its arrows are the
    profile's point-to-point messages."""
    mpi, args = lammps_indent(tmp_path / "indent", 1000)
    run = mpilens_run(None, launcher(mpi, 4) + [*args, "-log", "none"], tmp_path, settings=TRACE).rundir
    out = tmp_path / "lammps.json"
    q = subprocess.run([str(MPILENS), "trace", str(run), "--format", "chrome", "-o", str(out), "--json", "--quiet"],
                       capture_output=True, text=True)
    assert q.returncode == 0, q.stderr
    summary = json.loads(q.stdout)
    profile = json.loads((run / "profile.json").read_text())
    p2p = sum(e["messages"] for e in profile["matrix"])
    assert summary["messages"] == p2p and summary["unmatched_sends"] == 0 and summary["unmatched_receives"] == 0
    phases = check_chrome(out)
    assert phases["s"] == phases["f"] == p2p
    assert summary["collective_instances"] > 0
    # the size `mpilens trace --estimate` predicts from the profile (what a profile-only run of the
    # same input has: the same calls and visits), against the files on disk: within 20 %
    est = subprocess.run([str(MPILENS), "trace", str(run), "--estimate", "--profile-only", "--json"],
                         capture_output=True, text=True)
    real = sum(f.stat().st_size for f in (run / "trace").glob("rank-*.bin"))
    assert abs(json.loads(est.stdout)["bytes"] / real - 1) < 0.2, (json.loads(est.stdout)["bytes"], real)
    # asked for a trace under 60 % of that, it suggests the first ranks only: traced so, the files on
    # disk are those ranks' and within 20 % of the size asked for
    under = int(real * 0.6)
    est = subprocess.run([str(MPILENS), "trace", str(run), "--estimate", "--profile-only", "--under", str(under), "--json"],
                         capture_output=True, text=True)
    ranks = next(x for x in json.loads(est.stdout)["suggestions"] if x["setting"] == "MPILENS_TRACE_RANKS")
    assert ranks["value"] == "0-1", ranks
    part = mpilens_run(None, launcher(mpi, 4) + [*args, "-log", "none"], tmp_path, outdir=tmp_path / "part",
                       settings={**TRACE, "MPILENS_TRACE_RANKS": ranks["value"]}).rundir
    files = sorted((part / "trace").glob("rank-*.bin"))
    assert [f.name for f in files] == ["rank-000000.bin", "rank-000001.bin"]
    assert sum(f.stat().st_size for f in files) < under * 1.2


@pytest.mark.parametrize("src", sources("mpich"))
def test_exports(src, tmp_path):
    job = src.run("halo", tmp_path)
    n = reps(job)
    tl = timeline.load(job.rundir)
    # what the trace took: the files' size and the writer threads' CPU time, in the command's summary
    # and the HTML report
    q = subprocess.run([str(MPILENS), "trace", str(job.rundir), "--json", "--quiet"], capture_output=True, text=True)
    summary = json.loads(q.stdout)
    assert summary["trace_bytes"] == sum(f.stat().st_size for f in (job.rundir / "trace").glob("rank-*.bin"))
    assert 0 < summary["writer_cpu_s"] < max(r["wall_time_s"] for r in job.profile["ranks"]) * 2
    html = tmp_path / "r.html"
    assert subprocess.run([str(MPILENS), "report", str(job.rundir), "--html", str(html), "--quiet"],
                          capture_output=True).returncode == 0
    per_event = summary["trace_bytes"] / len(tl.ev)
    assert f"({per_event:.1f} bytes per event); writing it took the ranks' writer threads" in html.read_text()
    out = tmp_path / "t.parquet"
    assert subprocess.run([str(MPILENS), "trace", str(job.rundir), "--format", "parquet", "-o", str(out), "--quiet"],
                          capture_output=True).returncode == 0
    import pyarrow.parquet as pq

    t = pq.read_table(out)
    assert t.num_rows == len(tl.ev)
    assert set(t.column("name").to_pylist()) >= {"MPI_Isend", "MPI_Irecv", "MPI_Waitall", "MPI_Barrier"}
    assert pq.read_table(tmp_path / "t.messages.parquet").num_rows == 2 * 2 * n + 2  # with the warm-up
    archive = tmp_path / "otf2"
    q = subprocess.run([str(MPILENS), "trace", str(job.rundir), "--format", "otf2", "-o", str(archive), "--quiet"],
                       capture_output=True, text=True)
    assert q.returncode == 0, q.stderr
    import otf2

    sends = recvs = enters = 0
    with otf2.reader.open(str(archive / "traces.otf2")) as trace:
        assert len(list(trace.definitions.location_groups)) == 2
        for _, event in trace.events:
            sends += isinstance(event, (otf2.events.MpiSend, otf2.events.MpiIsend))
            recvs += isinstance(event, (otf2.events.MpiRecv, otf2.events.MpiIrecv))
            enters += isinstance(event, otf2.events.Enter)
    assert sends == recvs == 2 * 2 * n + 2
    calls = sum(sum(f["calls"]) for f in job.profile["functions"].values())
    assert enters == calls


def test_killed_job_leaves_a_readable_trace(mpi, tmp_path):
    """SIGTERM to the launcher: each rank writes what it has from its signal handler, and the writer
    thread has written the filling buffers every 10 ms before (MPICH's launcher follows SIGTERM
    with SIGKILL at once, which a rank of a loaded machine may receive before its handler ran)."""
    from test_bad_input import children, kill_env, read_until

    out = tmp_path / "run"
    cmd = [str(MPILENS), "run", "-o", str(out), "--mode", "trace", "--set", "MPILENS_TRACE_FLUSH_MS=10", "--",
           *launcher(mpi, 2), str(example(mpi, "sleeper")),
           "-n", "100000", "-s", "10"]
    proc = subprocess.Popen(cmd, env=kill_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        read_until(proc, r"^step 20$", timeout=120)
        os.kill(children(proc.pid)[0], signal.SIGTERM)
        proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    files = sorted((out / "trace").glob("rank-*.bin"))
    assert files
    tl = timeline.load(out)
    assert not tl.complete
    r0 = tl.ev[tl.ev["rank"] == 0]
    allreduce = tl.functions.index("MPI_Allreduce")
    assert (r0["fn"] == allreduce).sum() >= 6
    assert (np.diff(r0["t0"]) >= 0).all()


METHODS = ["wait", "waitall", "waitany", "waitsome", "test", "testall", "testany", "testsome"]
COMPLETION_FN = {"wait": "MPI_Wait", "waitall": "MPI_Waitall", "waitany": "MPI_Waitany", "waitsome": "MPI_Waitsome",
                 "test": "MPI_Test", "testall": "MPI_Testall", "testany": "MPI_Testany", "testsome": "MPI_Testsome"}


@pytest.mark.parametrize("method", METHODS)
def test_receive_calls_are_read_where_they_were_made(mpi, tmp_path, method):
    """A receive's call event waits for its completion and is written with it (one late_call
    event), or alone when the general path takes the receive over (MPI_Waitany, MPI_Testsome,
    ...). traffic_p2p nb: per rep i, each rank r posts MPI_Irecv from r^1 with tag i, then
    MPI_Isend of 100*(r+1)+i bytes to r^1 with tag i, then completes both with the method. From
    the program: the calls come back in this order, the receive's call with its source and tag,
    and each receive has one completion with the sender's size, after its call. From the file's
    fixed parts alone: every receive was written late (kind 0), with its completion when the
    lean path completed it."""
    reps, size = 6, 100
    job = run_example(mpi, "traffic_p2p", 2, tmp_path, ["nb", method, str(reps), str(size)], settings=TRACE)
    printed = {int(r): int(c) for r, c in re.findall(r"nb rank=(\d+) method=\w+ completion_calls=(\d+)", job.stdout)}
    tl = timeline.load(job.rundir)
    assert tl.complete and tl.problems == []
    irecv, isend, comp = (tl.functions.index(n) for n in ("MPI_Irecv", "MPI_Isend", COMPLETION_FN[method]))
    for r in range(2):
        mine = tl.ev[tl.ev["rank"] == r]
        calls = mine[(mine["kind"] == reader.CALL) & np.isin(mine["fn"], [irecv, isend, comp])]
        letters = "".join({irecv: "r", isend: "s", comp: "c"}[int(f)] for f in calls["fn"])
        assert re.fullmatch(f"(rsc+){{{reps}}}", letters), letters
        assert letters.count("c") == printed[r]
        posted = calls[calls["fn"] == irecv]
        assert posted["src"].tolist() == [r ^ 1] * reps and posted["rtag"].tolist() == list(range(reps))
        sends = calls[calls["fn"] == isend]
        assert (posted["t1"] <= sends["t0"]).all()
        at = {int(q): k for k, q in enumerate(mine["req"]) if mine["kind"][k] == reader.CALL and q}
        for i, q in enumerate(posted["req"].tolist()):
            done = np.flatnonzero((mine["kind"] == reader.DONE) & (mine["req"] == q))
            assert len(done) == 1 and done[0] > at[q], (i, done)
            d = mine[done[0]]
            assert (int(d["src"]), int(d["rtag"]), int(d["recv"])) == (r ^ 1, i, size * ((r ^ 1) + 1) + i)
            assert d["t0"] >= posted["t1"][i]
        raw = trace_kinds(job.rundir / "trace" / f"rank-{r:06d}.bin")
        assert raw[reader.LATE] + raw["alone"] == reps, raw
        if method in ("wait", "waitall", "test"):  # the lean path's completions (handwritten.c)
            assert raw[reader.LATE] == reps, raw


@pytest.mark.parametrize("end", ["cancelled", "abort"])
def test_a_pending_receive_call_is_kept(mpi, tmp_path, end):
    """sleeper -r 77: each rank first posts an MPI_Irecv that nothing matches. Cancelled at the
    end (the general path writes its call alone; a cancelled receive has no completion), or
    pending when rank 0 calls MPI_Abort at step 3 (its call is in the trailer): either way the
    reader gives it as the rank's call after MPI_Comm_size, from its left neighbour with tag 77,
    and no completion."""
    args = ["-n", "5", "-r", "77"] + (["-s", "10", "-a", "0:3"] if end == "abort" else [])
    job = mpilens_run(None, launcher(mpi, 2) + [str(example(mpi, "sleeper")), *args], tmp_path,
                      settings={"MPILENS_MODE": "trace"}, check=end == "cancelled")
    rt = reader.read_rank(job.rundir / "trace" / "rank-000000.bin")
    assert rt.complete == (end == "cancelled")
    if end == "abort":
        assert rt.trailer["late_calls"], rt.trailer
    ev = rt.events
    calls = ev[ev["kind"] == reader.CALL]
    names = [rt.functions[int(f)] for f in calls["fn"]]
    first = names.index("MPI_Comm_size") + 1  # sleeper's calls before it: rank and size
    assert names[first:first + 2] == ["MPI_Irecv", "MPI_Allreduce"], names[:8]
    rcv = calls[first]
    assert (int(rcv["src"]), int(rcv["rtag"])) == (1, 77)
    assert not ((ev["kind"] == reader.DONE) & (ev["req"] == rcv["req"])).any()
    assert rcv["t1"] <= calls[first + 1]["t0"]
    if end == "cancelled":
        assert names.count("MPI_Cancel") == 1


@pytest.mark.mpi
def test_torn_block_is_skipped(tmp_path):
    job = run_example("openmpi", "ring", 2, tmp_path, ["50", "100"], settings=TRACE)
    f = job.rundir / "trace" / "rank-000000.bin"
    whole = reader.read_rank(f)
    data = f.read_bytes()
    # cut inside the first event block: the head stays, the block is dropped, no exception
    cut = data.index(b"MLTB0004") + reader.BLOCK2.itemsize + 12 * 3 + 10
    f.write_bytes(data[:cut])
    torn = reader.read_rank(f)
    assert len(torn.events) < len(whole.events)
    assert any("cut short" in p for p in torn.problems)
    assert torn.trailer is None


@pytest.mark.parametrize("name,args", [("threads", ["10", "2048"]), ("ftraffic", [])])
def test_threads_and_fortran_are_traced(mpi, tmp_path, name, args):
    """Four threads per rank sending at once (MPI_THREAD_MULTIPLE), and Fortran calls: every
    message the profile counts has its arrow."""
    job = run_example(mpi, name, 2 if name == "threads" else 4, tmp_path, args, settings=TRACE)
    tl = timeline.load(job.rundir)
    m = tl.messages
    assert m.unmatched_sends == 0 and m.unmatched_recvs == 0
    assert len(m.send_ev) == sum(e["messages"] for e in job.profile["matrix"])
    if name == "threads":
        assert len(set(tl.ev["thread"].tolist())) >= 4
