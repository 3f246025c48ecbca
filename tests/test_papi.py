"""PAPI mode: counts land in the right region and phase, the imbalance is told apart as more work or
slower work, unavailable events are one message, and the mpilens counters read back through PAPI's
software-defined events equal profile.json.

Kernels with known counts (examples/c/papi_kernel.c): "loop_large" runs 4x the iterations of
"loop_small" (4x the instructions and CPU time), "touch_large" touches 4x the fresh pages of
"touch_small" (4x the page faults). Each region is split in two compute phases by an MPI_Allreduce.

The instruction-count check needs PAPI_TOT_INS, which a virtual machine without a virtual PMU does
not have; it is skipped there with the reason PAPI gave, and the same attribution is checked with
the software events perf::PAGE-FAULTS (exact) and perf::TASK-CLOCK (against the program's own
thread CPU clock) that every Linux perf_event offers.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
from test_killed import killed_job

from conftest import BUILD, MPILENS, example, launcher, need_perf_events, papi_perf_event_off, run_example
from mpilens import layout, papi

PAPI = {"MPILENS_MODE": "profile,papi"}
SOFT = {**PAPI, "MPILENS_PAPI_EVENTS": "perf::TASK-CLOCK,perf::PAGE-FAULTS"}
PAGES = 256


def _region(run: papi.PapiRun, rank: int, path: str) -> papi.Region:
    r = run.ranks[rank]
    assert r is not None and path in r.regions, (rank, path, run.problems)
    return r.regions[path]


def test_software_events_attributed_per_region_and_phase(mpi, tmp_path):
    """Page faults of touch_large are 4x those of touch_small on each rank (5 %), the CPU time of
    each loop region between what the program's own clocks measured for its kernels (5 %: at least
    their thread CPU time, at most their wall time), and each region has its two compute phases;
    `mpilens papi --json` and the HTML report show the same run."""
    need_perf_events()
    job = run_example(mpi, "papi_kernel", 2, tmp_path, ["8000000", str(PAGES)], settings=SOFT)
    own_ns = {(int(r), name): (int(cpu), int(wall)) for r, name, cpu, wall in
              re.findall(r"papi_kernel: rank (\d+) region (\w+) cpu_ns (\d+) wall_ns (\d+)", job.stdout)}
    assert len(own_ns) == 4, job.stdout
    run = papi.load(job.rundir)
    assert run.refused == "", run.refused  # perf software events: every Linux perf_event has them
    assert run.events == ["perf::TASK-CLOCK", "perf::PAGE-FAULTS"]
    assert run.read == "calls"
    for rank in range(2):
        small, large = _region(run, rank, "touch_small"), _region(run, rank, "touch_large")
        pf_small, pf_large = run.value(small.compute, "perf::PAGE-FAULTS"), run.value(large.compute, "perf::PAGE-FAULTS")
        assert PAGES <= pf_small <= PAGES * 1.05, (rank, pf_small)
        assert pf_large / pf_small == pytest.approx(4.0, rel=0.05), (rank, pf_small, pf_large)
        # the CPU time of each loop region's compute phases is what the program's own clocks saw its
        # kernels take: at least their thread CPU time, at most their wall time. perf's task clock
        # also counts what this VM's host stole while the thread ran, which the thread's CPU time
        # leaves out (paravirtual steal-time accounting): 12.1 ms against 10.8 ms of CPU once.
        for path in ("loop_small", "loop_large"):
            task_clock = run.value(_region(run, rank, path).compute, "perf::TASK-CLOCK")
            cpu, wall = own_ns[(rank, path)]
            assert cpu * 0.95 - 1e6 <= task_clock <= wall * 1.05 + 1e6, (rank, path, task_clock, cpu, wall)
        for path in ("loop_small", "loop_large", "touch_small", "touch_large"):
            assert _region(run, rank, path).phases == 2
        assert "MPI_Allreduce" in run.ranks[rank].functions
        assert run.ranks[rank].reads > 0 and run.ranks[rank].read_cost_ns > 0

    p = subprocess.run([str(MPILENS), "papi", str(job.rundir), "--json"], capture_output=True, text=True, check=True)
    doc = json.loads(p.stdout)
    regions = {g["path"]: g for g in doc["regions"]}
    assert regions["touch_large"]["compute"]["perf::PAGE-FAULTS"] == sum(
        run.value(_region(run, r, "touch_large").compute, "perf::PAGE-FAULTS") for r in range(2))
    assert doc["work_event"] == "perf::TASK-CLOCK"
    assert "CPU share" in doc["ranks"][0]["derived"]
    text = subprocess.run([str(MPILENS), "papi", str(job.rundir)], capture_output=True, text=True, check=True).stdout
    assert "Per region" in text and "touch_large" in text
    html = tmp_path / "r.html"
    subprocess.run([str(MPILENS), "report", str(job.rundir), "--html", str(html)], capture_output=True, check=True)
    assert 'id="papi-regions"' in html.read_text()


@pytest.mark.parametrize("how", ["sigkill", "sigterm"])
def test_counts_of_a_killed_job_are_kept(mpi, how, tmp_path):
    """papi_kernel's four regions, then every rank waits before MPI_Finalize ("held") and is killed:
    by SIGKILL (nothing runs at its end) or by SIGTERM (its handler writes its partial profile).
    Either way each rank's PAPI counts come from its statistics file, as the program defines them:
    touch_large has 4x the page faults of touch_small (5 %), touch_small at least one per page,
    each region its two compute phases."""
    need_perf_events()
    token = str(8_000_000 + random.randrange(1, 100_000))  # the ranks' iterations: how the test finds them
    out, held = tmp_path / "run", tmp_path / "held"  # held: made by rank 0 once every rank is done
    settings = {**SOFT, "MPILENS_SIGNALS": "0" if how == "sigkill" else "1"}
    cmd = [str(MPILENS), "run", "-o", str(out), *(f"--set={k}={v}" for k, v in settings.items()), "--",
           *launcher(mpi, 2), str(example(mpi, "papi_kernel")), token, str(PAGES), "held", str(held)]

    def ranks(_proc) -> list[int]:
        pids = [int(d.name) for d in Path("/proc").iterdir() if d.name.isdigit() and _is_rank(d, token)]
        assert len(pids) == 2, pids
        return pids

    signo = signal.SIGKILL if how == "sigkill" else signal.SIGTERM
    try:
        killed_job(cmd, lambda proc: _wait_for(held, proc), ranks, [(signo, 0.0)])
    finally:  # a rank left behind would sleep for an hour
        for d in Path("/proc").iterdir():
            if d.name.isdigit() and _is_rank(d, token):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(d.name), signal.SIGKILL)
    assert not list(out.glob("papi/rank-*.json"))  # no rank reached MPI_Finalize, where they are written
    run = papi.load(out)
    assert sum("PAPI counts recovered from" in p for p in run.problems) == 2, run.problems
    assert run.events == ["perf::TASK-CLOCK", "perf::PAGE-FAULTS"] and run.read == "calls"
    for rank in range(2):
        small, large = _region(run, rank, "touch_small"), _region(run, rank, "touch_large")
        pf_small, pf_large = run.value(small.compute, "perf::PAGE-FAULTS"), run.value(large.compute, "perf::PAGE-FAULTS")
        assert PAGES <= pf_small <= PAGES * 1.05, (rank, pf_small)
        assert pf_large / pf_small == pytest.approx(4.0, rel=0.05), (rank, pf_small, pf_large)
        for path in ("loop_small", "loop_large", "touch_small", "touch_large"):
            assert _region(run, rank, path).phases == 2
        assert "MPI_Allreduce" in run.ranks[rank].functions and run.ranks[rank].reads > 0
    p = subprocess.run([str(MPILENS), "papi", str(out), "--json"], capture_output=True, text=True)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    assert any("recovered from" in x for x in json.loads(p.stdout)["problems"])


def _wait_for(path: Path, proc: subprocess.Popen, seconds: float = 120) -> None:
    """Wait until the job made path (its stdout may come later: Hydra held the line "papi_kernel:
    held" back for over 120 s once on a loaded machine, with rank 0 sleeping past it)."""
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert proc.poll() is None, f"the job ended before {path.name}: {proc.communicate()}"
        assert time.monotonic() < deadline, f"no {path} within {seconds} s"
        time.sleep(0.05)


def _is_rank(proc: Path, token: str) -> bool:
    """Whether /proc/PID is a rank of papi_kernel started with `token` iterations."""
    try:
        return (proc / "comm").read_text().strip() == "papi_kernel" and \
            token in (proc / "cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return False


def test_software_events_from_per_host_files(mpi, tmp_path):
    """MPILENS_FILES=host: the ranks' papi files are chunks of one container for the host (no file
    per rank) and read back with the same exact page faults."""
    need_perf_events()
    job = run_example(mpi, "papi_kernel", 2, tmp_path, ["2000000", str(PAGES)],
                      settings={**SOFT, "MPILENS_FILES": "host"})
    assert not list(job.rundir.glob(layout.glob_pattern("papi")))
    assert sorted(p.name for p in (job.rundir / "papi").iterdir()) == ["group-000000.mlc", "group-000000.mlx"]
    assert all(isinstance(f, layout.Member) for f in layout.files(job.rundir, "papi"))
    run = papi.load(job.rundir)
    assert run.refused == "" and run.problems == [], (run.refused, run.problems)
    for rank in range(2):
        small, large = _region(run, rank, "touch_small"), _region(run, rank, "touch_large")
        pf_small, pf_large = run.value(small.compute, "perf::PAGE-FAULTS"), run.value(large.compute, "perf::PAGE-FAULTS")
        assert PAGES <= pf_small <= PAGES * 1.05, (rank, pf_small)
        assert pf_large / pf_small == pytest.approx(4.0, rel=0.05), (rank, pf_small, pf_large)


def test_instruction_ratio_between_regions(mpi, tmp_path):
    """loop_large executes 4x the instructions of loop_small, within 5 %, on each rank (needs
    PAPI_TOT_INS: skipped with PAPI's reason where the machine has no hardware counters)."""
    job = run_example(mpi, "papi_kernel", 2, tmp_path, ["4000000", "1"],
                      settings={**PAPI, "MPILENS_PAPI_EVENTS": "PAPI_TOT_INS"})
    run = papi.load(job.rundir)
    if "PAPI_TOT_INS" not in run.events:
        pytest.skip(f"PAPI_TOT_INS cannot be counted on this machine: {run.refused or run.off_reason} "
                    "(no hardware performance counters, e.g. a virtual machine without a virtual PMU)")
    assert "PAPI events not available" not in job.stderr
    for rank in range(2):
        small = run.value(_region(run, rank, "loop_small").compute, "PAPI_TOT_INS")
        large = run.value(_region(run, rank, "loop_large").compute, "PAPI_TOT_INS")
        assert large / small == pytest.approx(4.0, rel=0.05), (rank, small, large)


@pytest.mark.parametrize("case,kind", [("work", "work"), ("slow", "efficiency")])
def test_imbalance_more_work_vs_slower_work(mpi, tmp_path, case, kind):
    """Rank 1 with twice the loop is a work imbalance; rank 1 with the same loop and a third of its
    CPU (off the CPU twice as long as it computes, as with two other busy processes on its CPU) is
    an efficiency imbalance. Default events: the work measure is PAPI_TOT_INS, or perf::TASK-CLOCK
    without hardware counters. (papi_kernel's "oversub" mode shares the CPU with real spinning
    processes, but on a loaded machine the scheduler slows the other ranks as well.)"""
    need_perf_events()
    # 2 x 10^8 iterations: half a second of compute on rank 0 here, so that the time another process
    # takes from a rank's CPU (a few time slices) is far less than the difference planted (with 2 x
    # 10^7, 50 ms against 100 ms, a loaded machine read the work case as balanced)
    job = run_example(mpi, "papi_kernel", 2, tmp_path, ["200000000", "0", case], settings=PAPI)
    run = papi.load(job.rundir)
    assert run.work_event() in ("PAPI_TOT_INS", "perf::TASK-CLOCK"), run.events
    v = run.imbalance("work")
    assert v.kind == kind, v.message
    assert v.slowest_rank == 1, v.message
    assert run.imbalance().kind == kind  # the kernel dominates the run
    text = subprocess.run([str(MPILENS), "papi", str(job.rundir)], capture_output=True, text=True, check=True).stdout
    assert f"{'work' if kind == 'work' else 'efficiency'} imbalance: rank 1" in text


@pytest.mark.mpi
def test_default_events_chosen_from_what_the_machine_accepts(tmp_path):
    """Without MPILENS_PAPI_EVENTS the hardware presets are used where they exist, otherwise the
    perf software events; nothing is reported as refused."""
    job = run_example("openmpi", "papi_kernel", 1, tmp_path, ["1000", "1"], settings=PAPI)
    run = papi.load(job.rundir)
    assert run.refused == ""
    if papi_perf_event_off():  # nothing to count here: the run says so, once, and goes on
        assert run.events == [] and run.off_reason, (run.events, run.off_reason)
        assert job.stderr.count("papi mode counts nothing") == 1, job.stderr
        assert "papi_kernel: done" in job.stdout
        return
    assert run.events[0] in ("PAPI_TOT_INS", "perf::TASK-CLOCK"), run.events
    if run.events[0] == "perf::TASK-CLOCK":
        assert run.events == ["perf::TASK-CLOCK", "perf::PAGE-FAULTS"]


def test_unavailable_events_are_one_message_and_the_run_goes_on(mpi, tmp_path):
    """A name PAPI does not know is named once on stderr; the others are counted."""
    need_perf_events()
    job = run_example(mpi, "papi_kernel", 2, tmp_path, ["1000", "4"],
                      settings={**PAPI, "MPILENS_PAPI_EVENTS": "NOT_AN_EVENT,perf::PAGE-FAULTS"})
    msgs = [line for line in job.stderr.splitlines() if "PAPI events not available" in line]
    assert len(msgs) == 1, job.stderr
    assert "NOT_AN_EVENT (" in msgs[0]
    assert "papi_kernel: done" in job.stdout
    run = papi.load(job.rundir)
    assert run.events == ["perf::PAGE-FAULTS"]
    assert run.refused.startswith("NOT_AN_EVENT (")
    reg = _region(run, 0, "touch_large")  # region total: its stretches are shorter than MPILENS_PAPI_MIN_US
    # 16 fresh pages; observed 18 in all (16 runs x 2 ranks, both MPIs): the 2 others are MPI's
    faults = run.value(reg.compute, "perf::PAGE-FAULTS") + run.value(reg.mpi, "perf::PAGE-FAULTS")
    assert 16 <= faults <= 24, faults


@pytest.mark.mpi
def test_read_at_region_boundaries_only(tmp_path):
    """MPILENS_PAPI_READ=regions: no read per MPI call; region totals (compute and MPI) still right."""
    need_perf_events()
    job = run_example("mpich", "papi_kernel", 2, tmp_path, ["1000", str(PAGES)],
                      settings={**SOFT, "MPILENS_PAPI_READ": "regions"})
    run = papi.load(job.rundir)
    assert run.read == "regions"
    for rank in range(2):
        r = run.ranks[rank]
        assert r is not None and r.functions == {}
        assert all(v == 0 for reg in r.regions.values() for v in reg.mpi)
        assert r.reads <= 10  # 4 regions x (begin + end) + MPI_Finalize, not one per MPI call
        small = run.value(_region(run, rank, "touch_small").compute, "perf::PAGE-FAULTS")
        large = run.value(_region(run, rank, "touch_large").compute, "perf::PAGE-FAULTS")
        assert large / small == pytest.approx(4.0, rel=0.05)


@pytest.mark.mpi
def test_short_stretches_left_unread_keep_region_totals(tmp_path):
    """MPILENS_PAPI_MIN_US=100000: the short stretches and calls are not read on their own (fewer
    reads), yet each region's total (compute + MPI) of page faults is still right."""
    need_perf_events()
    job = run_example("openmpi", "papi_kernel", 2, tmp_path, ["1000", str(PAGES)],
                      settings={**SOFT, "MPILENS_PAPI_MIN_US": "100000"})
    run = papi.load(job.rundir)
    assert run.min_us == 100000
    for rank in range(2):
        r = run.ranks[rank]
        assert r is not None and r.unread_calls >= 4  # the Allreduce of each region at least
        assert r.reads <= 12
        total = {p: run.value(reg.compute, "perf::PAGE-FAULTS") + run.value(reg.mpi, "perf::PAGE-FAULTS")
                 for p, reg in r.regions.items()}
        assert PAGES <= total["touch_small"] <= PAGES * 1.05
        assert total["touch_large"] / total["touch_small"] == pytest.approx(4.0, rel=0.05)


def _sde_lines(stdout: str) -> dict[int, dict[str, int]]:
    out = {}
    for line in stdout.splitlines():
        m = re.match(r"sde (\d+) (.*)", line)
        if m:
            out[int(m.group(1))] = {k: int(v) for k, v in (kv.split("=") for kv in m.group(2).split())}
    return out


def _check_sde(job) -> None:
    got = _sde_lines(job.stdout)
    assert sorted(got) == [0, 1, 2], job.stdout + job.stderr
    prof = job.profile["functions"]
    for rank, v in got.items():
        assert v["MPI_Send_calls"] == 10 == prof["MPI_Send"]["calls"][rank]
        assert v["MPI_Recv_calls"] == 10 == prof["MPI_Recv"]["calls"][rank]
        assert v["MPI_Send_bytes_sent"] == 10000 == prof["MPI_Send"]["bytes_sent"][rank]
        assert v["MPI_Recv_bytes_recv"] == 10000 == prof["MPI_Recv"]["bytes_recv"][rank]
        # the event set started after MPI_Comm_rank/size: 20 calls since
        assert v["calls"] == 20
        assert v["bytes_sent"] == v["bytes_recv"] == 10000


def test_sde_counters_read_through_papi_equal_the_profile(mpi, tmp_path):
    """papi_sde reads sde:::mpilens::* with PAPI_add_named_event/PAPI_read after a ring exchange of
    10 x 1000 bytes on 3 ranks: the values are the known ones and those of profile.json, per rank
    (mpilens counts its own PAPI events in the same processes)."""
    _check_sde(run_example(mpi, "papi_sde", 3, tmp_path, ["10", "1000"], settings=PAPI))


@pytest.mark.mpi
def test_counters_mode_counters_are_sde_too(tmp_path):
    """With the counters mode on as well, its counters are published as sde:::mpilens::spc_*."""
    job = run_example("mpich", "papi_sde", 3, tmp_path, ["10", "1000", "spc"],
                      settings={**PAPI, "MPILENS_MODE": "papi,counters"})
    _check_sde(job)
    for rank, v in _sde_lines(job.stdout).items():
        assert v["spc_bytes_sent_user"] == v["spc_bytes_received_user"] == 10000, (rank, v)


@pytest.mark.mpi
def test_sde_counters_without_counting(tmp_path):
    """MPILENS_PAPI_EVENTS=none: mpilens does not use PAPI itself, only publishes its counters; the
    application's own PAPI reads them."""
    job = run_example("openmpi", "papi_sde", 3, tmp_path, ["10", "1000"],
                      settings={**PAPI, "MPILENS_PAPI_EVENTS": "none"})
    _check_sde(job)
    assert not (job.rundir / "papi").exists()


def test_runtime_does_not_link_papi():
    """The preloaded runtime loads PAPI only in papi mode (dlopen): no libpapi/libsde dependency."""
    for m in ("openmpi", "mpich"):
        lib = BUILD / "lib" / f"libmpilens-{m}.so"
        needed = subprocess.run(["objdump", "-p", str(lib)], capture_output=True, text=True, check=True).stdout
        assert "libpapi" not in needed and "libsde" not in needed


def test_papi_command_on_a_run_without_papi(tmp_path):
    """`mpilens papi` on a run made without --mode papi: one line saying so, exit status 2."""
    p = subprocess.run([str(MPILENS), "papi", str(tmp_path)], capture_output=True, text=True)
    assert p.returncode == 2
    assert "no papi/ folder" in p.stderr and "--mode papi" in p.stderr
    assert "Traceback" not in p.stderr


@pytest.mark.mpi
def test_multiplex_where_possible_else_one_message(tmp_path):
    """MPILENS_PAPI_MULTIPLEX=1: multiplexed where PAPI can (its CPU component needs hardware
    counters); otherwise one message and the events are counted without it."""
    need_perf_events()
    job = run_example("openmpi", "papi_kernel", 2, tmp_path, ["1000", "4"],
                      settings={**SOFT, "MPILENS_PAPI_MULTIPLEX": "1"})
    run = papi.load(job.rundir)
    assert run.events == ["perf::TASK-CLOCK", "perf::PAGE-FAULTS"]
    msgs = [line for line in job.stderr.splitlines() if "multiplexing is not available" in line]
    assert (run.multiplex and not msgs) or (not run.multiplex and len(msgs) == 1), job.stderr


@pytest.mark.mpi
def test_each_thread_counts_with_its_own_event_set(tmp_path):
    """MPI_THREAD_MULTIPLE: the main thread and the 4 threads of examples/c/threads.c each start
    their own event set; their counts are summed in the rank's file."""
    need_perf_events()
    job = run_example("mpich", "threads", 2, tmp_path, settings={**SOFT, "MPILENS_PAPI_MIN_US": "0"})
    if "not provided" in job.stdout:
        pytest.skip(job.stdout.strip())
    run = papi.load(job.rundir)
    for r in run.ranks:
        assert r is not None and r.threads == 5
        assert r.reads >= 2 * 4 * 10  # every MPI call of the threads is read at entry and exit
        assert r.mpi()[0] > 0 and "MPI_Send" in r.functions
