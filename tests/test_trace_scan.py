"""The trace analysis out of core (mpilens.trace.scan): the same messages, collective instances
and findings as the in-memory analysis, in this process, on local worker processes and on a Dask
local cluster of worker processes; and the synthetic traces of its benchmark
(mpilens.trace.synthetic), read back against the events their generator means and analysed
against the problems planted in them."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from conftest import MPILENS, RUNS, committed_run
from mpilens.trace import findings, reader, scan, synthetic, timeline

TRACED = sorted(p.name for p in RUNS.iterdir() if (p / "trace").is_dir())


def in_memory(rundir: Path) -> tuple[dict, list[dict]]:
    tl = timeline.load(rundir)
    m, c = tl.messages, tl.collectives
    numbers = {"events": len(tl.ev), "messages": len(m.send_ev), "unmatched_sends": m.unmatched_sends,
               "unmatched_recvs": m.unmatched_recvs, "outside": m.outside,
               "collective_instances": int(c.instance.max()) + 1 if len(c.instance) else 0,
               "problems": tl.problems, "complete": tl.complete, "file_bytes": tl.file_bytes}
    return numbers, [f.to_dict() for f in findings.find(tl)]


def out_of_core(s: scan.Scan) -> tuple[dict, list[dict]]:
    numbers = {"events": s.events, "messages": s.messages, "unmatched_sends": s.unmatched_sends,
               "unmatched_recvs": s.unmatched_recvs, "outside": s.outside,
               "collective_instances": s.collective_instances, "problems": s.problems, "complete": s.complete,
               "file_bytes": s.file_bytes}
    return numbers, [f.to_dict() for f in s.findings]


# a ring of 12 ranks; rank 5 computes 30 ms longer in iteration 209 (an MPI_Allreduce follows it),
# rank 2 4 ms longer in iteration 400
DELAYS = {(5, 209): 30_000_000, (2, 400): 4_000_000}


@pytest.fixture(scope="module")
def halo(tmp_path_factory) -> tuple[synthetic.Halo, Path]:
    h = synthetic.Halo(12, 700, delays=DELAYS)
    d = tmp_path_factory.mktemp("synthetic") / "run"
    synthetic.write(d, h)
    return h, d


def test_synthetic_trace_reads_back_as_generated(halo):
    """Every rank's file decodes to the events the generator means, field by field."""
    h, d = halo
    for f in reader.trace_files(d):
        rt = reader.read_rank(f)
        want = h.events_of(rt.rank, 0, h.iterations)
        assert rt.problems == [] and rt.complete
        for name, col in want.items():
            got = rt.events[name]
            if name == "req":  # the decoder marks an operation number as this thread's
                got = np.where(got > 0, got - (np.uint64(1) << np.uint64(40)), got)
            assert np.array_equal(got.astype(np.int64), col.astype(np.int64)), (rt.rank, name)


def test_planted_problems_are_found(halo):
    """The generator's schedule says what happened: rank 5 sent its iteration-209 messages 30 ms
    late to ranks 4 and 6 (tags 2 and 1), which then arrived last at the MPI_Allreduce after it
    (the schedule says which of them), everyone else waiting about 30 ms there."""
    h, d = halo
    s = scan.scan(d, engine="serial")
    iters, n = h.iterations, h.nranks
    assert s.events == sum(len(h.events_of(r, 0, iters)["t0"]) for r in range(n))
    assert s.messages == 2 * n * iters and s.unmatched_sends == s.unmatched_recvs == 0
    assert s.collective_instances == iters // h.every
    late = [f for f in s.findings if f.kind == "late_sender"]
    assert {(f.evidence["sender"], f.evidence["receiver"], f.evidence["tag"]) for f in late[:2]} == {(5, 4, 2), (5, 6, 1)}
    assert all(abs(f.duration_s - 0.030) < 0.001 for f in late[:2])
    waits = [f for f in s.findings if f.kind == "collective_wait"]
    last = int(np.argmax(h._relative(209, 210)["a0"][:, 0]))
    assert last in (4, 6)
    assert waits[0].evidence["late_rank"] == last and waits[0].evidence["participants"] == n
    assert abs(waits[0].duration_s - 0.030) < 0.001
    gap = [f for f in s.findings if f.kind == "gap" and f.rank == 5]
    assert gap and abs(gap[0].duration_s - 0.030) < 0.001


def test_synthetic_profile_is_the_generated_calls(halo):
    """The run's profile.json: each rank's calls, time and bytes per function and its messages to
    each neighbour, as the generator's schedule makes them (counted here from the arithmetic of a
    ring: two receives and two sends per iteration, an MPI_Allreduce every tenth)."""
    h, d = halo
    prof = json.loads((d / "profile.json").read_text())
    n, iters, b = h.nranks, h.iterations, h.bytes
    assert prof["complete"] and prof["nranks"] == n and prof["tool"]["mpi"] == "synthetic"
    f = prof["functions"]
    assert f["MPI_Irecv"]["calls"] == f["MPI_Isend"]["calls"] == [2 * iters] * n
    assert f["MPI_Waitall"]["calls"] == [iters] * n and f["MPI_Allreduce"]["calls"] == [iters // h.every] * n
    assert f["MPI_Isend"]["bytes_sent"] == f["MPI_Irecv"]["bytes_recv"] == [2 * iters * b] * n
    assert f["MPI_Allreduce"]["bytes_sent"] == [8 * (iters // h.every)] * n
    for rank in range(n):
        ev = h.events_of(rank, 0, iters)
        calls = ev["kind"] == synthetic.L.TRACE_KIND_CALL
        for fn, name in enumerate(synthetic.FUNCTIONS):
            mine = calls & (ev["fn"] == fn)
            if mine.any():
                dur = (ev["t1"] - ev["t0"])[mine]
                assert f[name]["time_s"][rank] == pytest.approx(dur.sum() / 1e9, rel=1e-9)
                assert f[name]["max_s"][rank] == pytest.approx(dur.max() / 1e9, rel=1e-9)
        mpi = sum((ev["t1"] - ev["t0"])[calls]) / 1e9
        assert prof["ranks"][rank]["mpi_time_s"] == pytest.approx(mpi, rel=1e-9)
    assert sorted((m["src"], m["dst"], m["messages"], m["bytes"]) for m in prof["matrix"]) == sorted(
        (r, (r + k) % n, iters, iters * b) for r in range(n) for k in (1, -1))
    # a Waitall that waited for the planted 30 ms is the longest of its rank's neighbours
    assert f["MPI_Waitall"]["max_s"][4] == pytest.approx(0.030, abs=0.001)


def test_report_of_the_synthetic_halo_out_of_core(halo, tmp_path, monkeypatch):
    """`mpilens report --html` of the synthetic run, its trace taken out of core: the page names
    the planted late sender and draws the timeline per time bin."""
    from mpilens import cli
    from mpilens.report.sections import timeline as section

    _, d = halo
    monkeypatch.setattr(section, "OUT_OF_CORE_BYTES", 1)
    out = tmp_path / "report.html"
    assert cli.main(["report", str(d), "--html", str(out)]) == 0
    page = out.read_text()
    assert "Late sender" in page and "rank 5" in page and "per time bin" in page


@pytest.mark.parametrize("name", TRACED)
def test_committed_traces_as_in_memory(name, tmp_path):
    """The committed traces (every example with a trace, both MPIs, killed ones too): the same
    numbers and findings, with call sites, out of core as in memory."""
    run = committed_run(name, tmp_path)
    want = in_memory(run.rundir)
    assert out_of_core(scan.scan(run.rundir, engine="serial")) == want


def test_local_processes_as_in_memory(halo, tmp_path):
    """Two local worker processes, the shares of messages cut small: the same; the scratch
    directory is gone after."""
    _, d = halo
    old = scan.SHARE_ENDS
    scan.SHARE_ENDS = 5_000  # several shares of the messages
    try:
        s = scan.scan(d, engine="local", workers=2, scratch=tmp_path)
    finally:
        scan.SHARE_ENDS = old
    assert s.engine == "2 local processes" and s.shares > 5
    assert out_of_core(s) == in_memory(d)
    assert list(tmp_path.iterdir()) == []


def test_dask_local_cluster_as_in_memory(halo):
    """A Dask local cluster of three worker processes, given as a client and as its scheduler's
    address: the same numbers and findings as the in-memory analysis."""
    distributed = pytest.importorskip("distributed")
    _, d = halo
    want = in_memory(d)
    with distributed.LocalCluster(n_workers=3, threads_per_worker=1, processes=True, dashboard_address=None) as cl, \
            distributed.Client(cl) as client:
        assert out_of_core(scan.scan(d, engine=client)) == want
        s = scan.scan(d, engine=cl.scheduler_address)
        assert s.engine == f"Dask scheduler {cl.scheduler_address}"
        assert out_of_core(s) == want


def test_cli_prints_the_out_of_core_findings(halo):
    """`mpilens trace RUN --json` analyses out of core; --engine serial gives the same document."""
    _, d = halo
    docs = []
    for extra in ([], ["--engine", "serial"]):
        p = subprocess.run([str(MPILENS), "trace", str(d), "--json", *extra], capture_output=True, text=True,
                           check=True)
        docs.append(json.loads(p.stdout))
    numbers, found = in_memory(d)
    for doc in docs:
        assert doc["findings"] == json.loads(json.dumps(found))
        assert (doc["events"], doc["messages"]) == (numbers["events"], numbers["messages"])
    assert docs[0]["engine"].endswith("local processes") or docs[0]["engine"] == "this process"
    assert docs[1]["engine"] == "this process"


@pytest.mark.parametrize("args, says", [
    (["--engine", "nowhere"], "give local, serial or a Dask scheduler's address"),
    (["--workers", "0"], "--workers 0: give 1 or more"),
    (["--engine", "serial", "--ranks", "0"], "are for the analysis alone"),
    (["--scratch", "/nonexistent/scratch"], "cannot make the analysis' scratch directory in /nonexistent/scratch"),
])
def test_bad_engine_settings_are_one_clear_error(halo, args, says):
    _, d = halo
    p = subprocess.run([str(MPILENS), "trace", str(d), *args], capture_output=True, text=True)
    assert p.returncode != 0 and says in p.stderr and "Traceback" not in p.stderr, p.stderr


def test_a_rank_that_cannot_be_read_is_named(halo, tmp_path):
    """A rank file that is no trace: left out and named, as the in-memory analysis does."""
    _, d = halo
    copy = tmp_path / "run"
    subprocess.run(["cp", "-r", str(d), str(copy)], check=True)
    (copy / "trace" / "rank-000003.bin").write_bytes(b"not a trace at all")
    numbers, found = in_memory(copy)
    s = scan.scan(copy, engine="serial")
    assert any("rank 3's trace is left out" in p for p in s.problems)
    assert out_of_core(s) == (numbers, found)


def test_chart_as_in_memory(halo):
    """The report's timeline chart of a trace too large to draw call by call (its bins, longest
    calls and sampled arrows) from the out-of-core analysis' parts: what the in-memory chart is."""
    from mpilens.report.sections import timeline as section

    _, d = halo
    want = section.chart_data(timeline.load(d))
    assert want["bins"] is not None and want["sampled_arrows"]  # 42,840 calls, 16,800 messages
    for engine in ("serial", "local"):
        s = scan.scan(d, engine=engine, workers=2, chart=(section.MAX_BARS, section.MAX_ARROWS))
        assert section.chart_from_scan(s) == want


def test_report_of_a_large_trace_is_out_of_core(tmp_path, monkeypatch):
    """A trace past the report's threshold is analysed out of core: the same HTML report (its
    findings, its chart's data) as when it is read into memory."""
    from mpilens import cli
    from mpilens.report.sections import timeline as section

    run = committed_run("late_sender-openmpi", tmp_path)
    pages = []
    for limit in (1 << 40, 1):  # in memory, then out of core
        monkeypatch.setattr(section, "OUT_OF_CORE_BYTES", limit)
        out = tmp_path / f"report-{limit}.html"
        assert cli.main(["report", str(run.rundir), "--html", str(out)]) == 0
        pages.append(out.read_text())
    assert "Late sender" in pages[0] and pages[1] == pages[0]


@pytest.mark.parametrize("fmt", ["perfetto", "chrome"])
@pytest.mark.parametrize("name", TRACED)
def test_streamed_export_is_the_in_memory_export(name, fmt, tmp_path):
    """`mpilens export perfetto|chrome RUN` streams the run rank by rank (the exporters'
    write_run): the same bytes as the export of the whole Timeline in memory (which
    tests/test_perfetto.py reads with Perfetto's own protos, tests/test_trace.py as JSON)."""
    from mpilens import exports

    e = exports.get(fmt)
    run = committed_run(name, tmp_path)
    whole, streamed = tmp_path / f"whole{e.suffix}", tmp_path / f"streamed{e.suffix}"
    counts = e.write(timeline.load(run.rundir), whole)
    assert e.write_run(run.rundir, streamed) == counts
    assert streamed.read_bytes() == whole.read_bytes()


SELECTIONS = [{"ranks": "1", "functions": "MPI_Send,p2p"}, {"window": "0.0001:0.05"},
              {"ranks": "0", "window": "0.001:", "exclude": "completion"}]


@pytest.mark.parametrize("chosen", range(len(SELECTIONS)))
@pytest.mark.parametrize("name", TRACED)
def test_streamed_selection_is_the_in_memory_selection(name, chosen, tmp_path):
    """`mpilens export perfetto RUN --ranks/--window/--functions/--exclude` streams too: the same
    bytes as the export of the selected Timeline (Timeline.select: the messages paired in the
    whole run, kept when both their ends are; the run's findings within the part)."""
    from mpilens.commands.export import select
    from mpilens.exports import perfetto
    from mpilens.trace import filters

    run = committed_run(name, tmp_path)
    sel = {k: SELECTIONS[chosen].get(k) for k in filters.SELECTION}
    whole, streamed = tmp_path / "whole.perfetto-trace", tmp_path / "streamed.perfetto-trace"
    counts = perfetto.perfetto(select(timeline.load(run.rundir), sel), whole)
    assert perfetto.perfetto_run(run.rundir, streamed, selection=sel) == counts
    assert streamed.read_bytes() == whole.read_bytes()


def test_selection_of_the_synthetic_halo_streamed(halo, tmp_path):
    """A window of the halo on 2 local processes: its flows are the messages with both ends in it
    (counted here from the generator's events), its findings the run's within it, the same bytes
    as in memory; the command streams it."""
    from mpilens.commands.export import select
    from mpilens.exports import perfetto
    from mpilens.trace import filters

    h, d = halo
    lo, hi = 0.05, 0.25
    sel = {**dict.fromkeys(filters.SELECTION), "window": f"{lo}:{hi}"}
    # the generator's messages: the k-th MPI_Isend of a rank to a neighbour with a tag is the k-th
    # completion of that neighbour's MPI_Irecv from it with that tag; kept when both start in the window
    n, L = h.nranks, synthetic.L
    ev = {r: h.events_of(r, 0, h.iterations) for r in range(n)}
    origin = min(int(e["t0"].min()) for e in ev.values())
    want_flows = 0
    for r, e in ev.items():
        for tag, dst in ((1, (r + 1) % n), (2, (r - 1) % n)):
            o = ev[dst]
            sent = e["t0"][(e["kind"] == L.TRACE_KIND_CALL) & (e["fn"] == synthetic.ISEND) & (e["stag"] == tag)]
            done = o["t0"][(o["kind"] == L.TRACE_KIND_DONE) & (o["fn"] == synthetic.IRECV) & (o["src"] == r)
                           & (o["rtag"] == tag)]
            t_s, t_r = (sent - origin) / 1e9, (done - origin) / 1e9
            want_flows += int(((t_s >= lo) & (t_s <= hi) & (t_r >= lo) & (t_r <= hi)).sum())
    tl = timeline.load(d)
    whole, streamed, cli = (tmp_path / f"{name}.perfetto-trace" for name in ("whole", "streamed", "cli"))
    counts = perfetto.perfetto(select(tl, sel), whole)
    assert 0 < counts["flows"] == want_flows < 2 * n * h.iterations
    assert counts["findings"] == len(findings.within(findings.find(tl), None, (lo, hi))) > 0
    scan_ = scan.scan(d, engine="local", workers=2, then=lambda r: perfetto._stream(
        r, streamed, None, False, filters.parse_selection(sel, r.tl.functions, r.tl.classes, r.tl.traced)))
    assert scan_.then == counts and streamed.read_bytes() == whole.read_bytes()
    subprocess.run([str(MPILENS), "export", "perfetto", str(d), "-o", str(cli), "--window", f"{lo}:{hi}", "--quiet"],
                   check=True, capture_output=True)
    assert cli.read_bytes() == whole.read_bytes()


def test_perfetto_streamed_of_the_synthetic_halo(halo, tmp_path):
    """The halo's 16,800 messages as flows, the same bytes streamed as in memory; the command
    streams it (no selection) and writes those bytes too."""
    from mpilens.exports import perfetto

    _, d = halo
    whole, streamed, cli = (tmp_path / f"{n}.perfetto-trace" for n in ("whole", "streamed", "cli"))
    counts = perfetto.perfetto(timeline.load(d), whole)
    assert counts["flows"] == 16_800
    assert perfetto.perfetto_run(d, streamed) == counts
    subprocess.run([str(MPILENS), "export", "perfetto", str(d), "-o", str(cli), "--quiet"], check=True,
                   capture_output=True)
    assert streamed.read_bytes() == whole.read_bytes() == cli.read_bytes()
