"""Nothing lost when a job dies: ranks killed without a chance to write (SIGKILL, the OOM killer,
a launcher ending the job) are reported from their statistics files (runtime/src/core/stats.c,
python/mpilens/recover.py), with counts exact up to their last completed call.

The oracle is the program: examples/c/sleeper.c does one MPI_Allreduce of 4 bytes and one
MPI_Sendrecv of 256 bytes each way per step, and keeps the number of steps each rank finished in a
file of its own (-p), which the kernel keeps like ours."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from test_bad_input import children, cli, kill_env, read_until

from conftest import MPILENS, MPIS, example, fn, job_env, launcher, matrix_params, mpilens_run
from mpilens import intervals, rundir


def progress(folder: Path, np: int) -> list[int]:
    """Steps each rank finished, as the program itself counted them."""
    return [int((folder / f"rank-{r}").read_text()) for r in range(np)]


def report_json(run: Path) -> dict:
    p = cli("report", "--json", str(run))
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    return json.loads(p.stdout)


def check_steps(run: rundir.Run, done: list[int]) -> None:
    """Each rank's counts against the steps it finished (done[r]): a step's MPI_Allreduce may have
    completed after the rank last wrote its count, and its MPI_Sendrecv too, but no more."""
    p = run.profile
    for r, d in enumerate(done):
        a, s = fn(p, "MPI_Allreduce", "calls")[r], fn(p, "MPI_Sendrecv", "calls")[r]
        assert d <= s <= a <= d + 1, (r, d, a, s)
        assert fn(p, "MPI_Allreduce", "bytes_sent")[r] == 4 * a
        assert fn(p, "MPI_Sendrecv", "bytes_sent")[r] == 256 * s
        assert fn(p, "MPI_Sendrecv", "bytes_recv")[r] == 256 * s


def killed_job(cmd: list[str], under_way, victims, signals=((signal.SIGKILL, 0.0),), env=None) -> None:
    """Start cmd (an `mpilens run`); once under_way(proc) returned, send the processes victims(proc)
    gives each signal in turn (signal, then seconds to wait), and wait for the run to end."""
    proc = subprocess.Popen(cmd, env=env or job_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        under_way(proc)
        pids = victims(proc)
        for signo, pause in signals:
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):  # its launcher was quicker
                    os.kill(pid, signo)
            time.sleep(pause)
        proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()


def step_printed(step: int):
    """under_way of killed_job: rank 0 of the sleeper printed `step N`."""
    return lambda proc: read_until(proc, rf"^step {step}$", timeout=120)


@pytest.mark.parametrize("mpi", matrix_params())
def test_a_rank_killed_by_sigkill_is_reported(mpi, tmp_path):
    """Rank 1 of 3 kills itself with SIGKILL after 5 steps; the launcher then ends the others (no
    rank writes anything at its end: MPILENS_SIGNALS=0). Every rank is in the report with exactly
    the 5 steps it finished (the others wait in the Allreduce of step 5, which is not counted).
    Rank 1 sleeps 200 ms after its fifth step before it kills itself: the others write their
    progress after their own fifth step within that (with 20 ms, a loaded machine once kept rank 0
    from it until the launcher ended it: its file said 4 steps, its statistics 5 calls)."""
    np, steps = 3, tmp_path / "steps"
    steps.mkdir()
    argv = launcher(mpi, np) + [str(example(mpi, "sleeper")), "-n", "1000", "-s", "200", "-k", "1:5", "-p", str(steps)]
    job = mpilens_run(mpi, argv, tmp_path, settings={"MPILENS_SIGNALS": "0"}, check=False)
    assert job.returncode != 0, job.stdout
    assert progress(steps, np) == [5] * np
    assert not list((job.rundir / "ranks").glob("*.partial"))
    run = rundir.load(job.rundir)
    assert run.source == "per-rank files" and not run.complete
    p = run.profile
    assert [r["ended_by"] for r in p["ranks"]] == ["killed"] * np
    for name in ("MPI_Allreduce", "MPI_Sendrecv"):
        assert fn(p, name, "calls") == [5] * np, name
    assert fn(p, "MPI_Allreduce", "bytes_sent") == [20] * np
    assert fn(p, "MPI_Sendrecv", "bytes_sent") == fn(p, "MPI_Sendrecv", "bytes_recv") == [5 * 256] * np
    # each rank's last call ended after its 4 sleeps of 200 ms at least (its wall time is up to then)
    assert all(r["wall_time_s"] >= 0.8 for r in p["ranks"]), p["ranks"]
    assert any("recovered from" in x and "ended without writing anything" in x for x in run.problems), run.problems
    assert not any("ended in MPI_Finalize" in x for x in run.problems), run.problems  # killed mid-run
    doc = report_json(job.rundir)
    assert doc["measured_ranks"] == np and doc["complete"] is False
    text = cli("report", str(job.rundir)).stdout
    assert "killed" in text and "recovered from" in text


@pytest.mark.parametrize("mpi", MPIS)
def test_every_rank_killed_at_once(mpi, tmp_path):
    """SIGKILL to every rank at once while the job runs (a node failure, the OOM killer taking the
    job's cgroup): nothing runs at their end, and every rank is reported up to where it was."""
    np = 4
    out, done = _kill_all_after(mpi, tmp_path, np, 8, [(signal.SIGKILL, 0.0)])
    assert all(d >= 8 for d in done), done
    run = rundir.load(out)
    # (mpirun may SIGTERM a rank whose SIGKILL is still to come: that one writes its own file)
    ended = [r["ended_by"] for r in run.profile["ranks"]]
    assert set(ended) <= {"killed", "signal 15"} and ended.count("killed") >= np - 1, ended
    check_steps(run, done)
    assert report_json(out)["measured_ranks"] == np


def _processes_with(text: str) -> list[int]:
    """Pids of the processes whose command line holds text (the ranks: their -p folder is this test's)."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if text in (d / "cmdline").read_bytes().decode(errors="replace") and \
                        "sleeper" in (d / "comm").read_text():
                    out.append(int(d.name))
            except OSError:
                continue
    return out


def test_a_finished_run_leaves_no_statistics_files(mpi, tmp_path):
    """The statistics files go once the profile is written (and a rank's once its partial file is)."""
    job = mpilens_run(mpi, launcher(mpi, 2) + [str(example(mpi, "sleeper")), "-n", "3"], tmp_path)
    left = sorted(f.name for f in job.rundir.rglob("*") if f.suffix in (".stats", ".names"))
    assert left == [] and rundir.load(job.rundir).complete


SMALL_FS = pytest.mark.skipif(shutil.which("unshare") is None or os.geteuid() != 0,
                              reason="a small file system of its own needs a mount namespace (root here)")


def on_small_file_systems(tmp_path: Path, sizes: tuple[int, ...], mode: str = "profile"):
    """examples/c/sleeper -n 20 on 2 ranks without mpilens, then under `mpilens run --mode MODE` with its run
    directory on a tmpfs of each size (KiB) in a mount namespace of its own: yields (size, the job's
    CompletedProcess, the run directory copied out), after checking the application's output is the
    run's without mpilens and no rank died of SIGBUS."""
    prog = [str(example("openmpi", "sleeper")), "-n", "20"]
    plain = subprocess.run(launcher("openmpi", 2) + prog, env=job_env(), capture_output=True, text=True, timeout=120)
    assert plain.returncode == 0, plain.stderr
    for size in sizes:
        mnt, copy = tmp_path / f"small{size}", tmp_path / f"copy{size}"
        mnt.mkdir()
        inner = (f"mount -t tmpfs -o size={size}k tmpfs {mnt} && {MPILENS} run --mode {mode} -o {mnt}/run -- "
                 + " ".join(launcher("openmpi", 2) + prog) + f"; rc=$?; cp -a {mnt}/run {copy}; exit $rc")
        p = subprocess.run(["unshare", "-m", "sh", "-c", inner], env=job_env(), capture_output=True, text=True,
                           timeout=180)
        assert p.stdout == plain.stdout and "Bus error" not in p.stderr, (size, p.stderr)
        yield size, p, copy


@pytest.mark.mpi
@SMALL_FS
def test_a_full_file_system_changes_nothing_for_the_application(tmp_path):
    """The run directory on a tmpfs with room for little more than the first thread sections, of
    five sizes (where it fills up varies with the ranks' timing): the application's output and exit
    status are those of a run without mpilens, the statistics that do not fit are kept in memory
    (said once) and the profile is still written. On tmpfs even a private mapping of the file takes
    a page of the file system at its first touch of a hole: before the sections went to anonymous
    memory, about one run in four ended in SIGBUS here."""
    for size, p, copy in on_small_file_systems(tmp_path, (1200, 1300, 1400, 1500, 1600)):
        assert p.returncode == 0, (size, p.stderr)
        assert "cannot hold more" in p.stderr or "cannot keep this rank's statistics" in p.stderr, p.stderr
        run = rundir.load(copy)
        assert run.complete, run.problems
        for name in ("MPI_Allreduce", "MPI_Sendrecv"):
            assert fn(run.profile, name, "calls") == [20, 20], (size, name)


@pytest.mark.mpi
@SMALL_FS
def test_the_statistics_files_make_room_for_the_profile(tmp_path):
    """The file system fills up while the job runs (another program takes all the room left once
    the ranks' statistics files are made): at MPI_Finalize rank 0 has no room for the profile, so
    the ranks' statistics files, whose contents it holds in the gathered payloads, give theirs
    back and the profile is written, with every call the program made. (Under load, a rank whose
    sections fill a small file system before the other writes anything comes to the same end.)"""
    mnt, copy, out = tmp_path / "small", tmp_path / "copy", tmp_path / "out"
    mnt.mkdir()
    job = " ".join([str(MPILENS), "run", "--mode", "profile", "-o", f"{mnt}/run", "--"] + launcher("openmpi", 2)
                   + [str(example("openmpi", "sleeper")), "-n", "30", "-s", "40"])
    inner = (f"mount -t tmpfs -o size=4096k tmpfs {mnt} || exit 99; {job} > {out} & pid=$!; "
             f"until grep -q 'step 3' {out}; do sleep 0.02; done; "
             f"dd if=/dev/zero of={mnt}/filler bs=4k 2>/dev/null; df -k {mnt} >&2; "
             f"wait $pid; rc=$?; cp -a {mnt}/run {copy}; exit $rc")
    p = subprocess.run(["unshare", "-m", "sh", "-c", inner], env=job_env(), capture_output=True, text=True,
                       timeout=180)
    assert p.returncode == 0, p.stderr
    assert "made room for" in p.stderr, p.stderr
    run = rundir.load(copy)
    assert run.complete, run.problems
    for name in ("MPI_Allreduce", "MPI_Sendrecv"):
        assert fn(run.profile, name, "calls") == [30, 30], name
    assert not list(copy.glob("ranks/*.stats"))


def descendants(pid: int) -> list[int]:
    """Every process below pid, from /proc."""
    out, todo = [], [pid]
    while todo:
        kids = children(todo.pop())
        out += kids
        todo += kids
    return out


@pytest.mark.parametrize("mpi", MPIS)
def test_regions_and_counters_of_killed_ranks(mpi, tmp_path):
    """examples/c/counters.c killed by SIGKILL in mid-run: each rank's region visits, its barriers
    in the region and its user counters, recovered, agree with one another as the program says
    (step i: begin "step", add r+1 to "cells", set "efficiency" to 1/(r+1) + i, sleep, barrier, end)."""
    np, out = 2, tmp_path / "run"
    argv = launcher(mpi, np) + [str(example(mpi, "counters")), "100000", "20000"]

    def under_way(_proc) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not list(out.glob("ranks/rank-*.stats"))[1:]:
            time.sleep(0.1)
        time.sleep(1.5)  # some steps

    def ranks(proc) -> list[int]:
        pids = [p for p in descendants(proc.pid) if _comm(p) == "counters"]
        assert len(pids) == np, pids
        return pids

    killed_job([str(MPILENS), "run", "-o", str(out), "--", *argv], under_way, ranks)
    run = rundir.load(out)
    p = run.profile
    assert [r["ended_by"] for r in p["ranks"]] == ["killed"] * np
    step = next(r for r in p["regions"] if r["name"] == "step")
    for r in range(np):
        begun = p["counters"]["cells"]["values"][r] / (r + 1)
        assert begun == int(begun) and begun >= 10, (r, begun)
        assert p["counters"]["efficiency"]["values"][r] == pytest.approx(1 / (r + 1) + begun - 1)
        assert p["counters"]["setup"]["values"][r] == 0.5
        barriers, visits = step["functions"]["MPI_Barrier"]["calls"][r], step["visits"][r]
        assert begun - 1 <= visits <= barriers <= begun, (r, begun, visits, barriers)
        assert step["counters"]["cells"]["values"][r] == (r + 1) * begun


def _comm(pid: int) -> str:
    try:
        return (Path("/proc") / str(pid) / "comm").read_text().strip()
    except OSError:
        return ""


@pytest.mark.mpi
def test_recovered_statistics_are_what_the_rank_itself_writes(tmp_path):
    """The same moment of a job seen twice: SIGTERM makes each rank write its own payload (the
    runtime's payload.c), and links made beforehand keep its statistics files, which the runtime
    removes then. The profile recovered from the files (python/mpilens/recover.py, written apart)
    has the same counts, bytes, sizes, peers and call sites, and the same times but for the clock
    rate (taken over MPI_Init by the recovery, over the whole run by the rank)."""
    np, out, keep = 2, tmp_path / "run", tmp_path / "kept"
    keep.mkdir()
    argv = launcher("openmpi", np) + [str(example("openmpi", "sleeper")), "-n", "100000", "-s", "30"]
    # (kill_env: mpirun's SIGKILL comes 3 s after its SIGTERM, time for each rank to write its file
    # and remove its statistics file on a busy machine)
    def under_way(proc) -> None:
        read_until(proc, r"^step 5$", timeout=120)
        for f in (out / "ranks").glob("rank-*.*"):
            if f.suffix in (".stats", ".names"):
                os.link(f, keep / f.name)
        assert len(list(keep.iterdir())) == 2 * np

    killed_job([str(MPILENS), "run", "-o", str(out), "--", *argv], under_way, lambda proc: children(proc.pid),
               [(signal.SIGTERM, 0.0)], env=kill_env())
    own = rundir.load(out)
    assert [r["ended_by"] for r in own.profile["ranks"]] == ["signal 15"] * np
    assert not list((out / "ranks").glob("*.stats"))  # removed once the partial file was written
    shutil.copytree(out, tmp_path / "recovered")
    for f in (tmp_path / "recovered" / "ranks").glob("*.partial"):
        f.unlink()
    for f in keep.iterdir():
        shutil.copy(f, tmp_path / "recovered" / "ranks" / f.name)
    rec = rundir.load(tmp_path / "recovered")
    assert [r["ended_by"] for r in rec.profile["ranks"]] == ["killed"] * np
    a, b = own.profile, rec.profile
    assert a["functions"].keys() == b["functions"].keys()
    for name, f in a["functions"].items():
        g = b["functions"][name]
        for key in ("calls", "bytes_sent", "bytes_recv"):
            assert f[key] == g[key], (name, key)
        assert g["time_s"] == pytest.approx(f["time_s"], rel=0.01, abs=1e-6), name
    assert a["message_sizes"] == b["message_sizes"] or _same_sizes(a["message_sizes"], b["message_sizes"])
    assert a["matrix"] == b["matrix"]
    def sites(p: dict) -> list:
        return sorted((s["function"], [(f["module"], f["address"]) for f in s["frames"]], s["calls"]) for s in p["callsites"])
    assert sites(a) == sites(b) and len(sites(a)) >= 2
    for ra, rb in zip(a["ranks"], b["ranks"]):
        assert rb["mpi_time_s"] == pytest.approx(ra["mpi_time_s"], rel=0.01, abs=1e-6)


def _same_sizes(x: object, y: object) -> bool:
    """Message-size tables equal but for their times (the clock rate)."""
    strip = lambda v: json.loads(json.dumps(v), object_hook=lambda d: {k: w for k, w in d.items() if "time" not in k})  # noqa: E731
    return strip(x) == strip(y)


def _kill_all_after(mpi: str, tmp_path: Path, np: int, step: int, signals: list[tuple[int, float]],
                    settings: dict[str, str] | None = None) -> tuple[Path, list[int]]:
    """Run the sleeper (30 ms per step), and once rank 0 printed `step`, send each rank the signals
    in turn (signal, then seconds to wait); the run directory and the steps each rank finished."""
    steps, out = tmp_path / "steps", tmp_path / "run"
    steps.mkdir()
    argv = launcher(mpi, np) + [str(example(mpi, "sleeper")), "-n", "100000", "-s", "30", "-p", str(steps)]
    cmd = [str(MPILENS), "run", "-o", str(out)] + [f"--set={k}={v}" for k, v in (settings or {}).items()]

    def ranks(_proc) -> list[int]:
        pids = _processes_with(str(steps))
        assert len(pids) == np, pids
        return pids

    killed_job([*cmd, "--", *argv], step_printed(step), ranks, signals)
    return out, progress(steps, np)


@pytest.mark.parametrize("mpi", MPIS)
def test_sigterm_then_sigkill(mpi, tmp_path):
    """A time limit with a short grace (Slurm's SIGTERM, then SIGKILL after KillWait): each rank's
    handler may or may not finish writing before SIGKILL; either way every rank is reported, from
    its partial file or its statistics file, up to where it was."""
    out, done = _kill_all_after(mpi, tmp_path, 3, 6, [(signal.SIGTERM, 0.002), (signal.SIGKILL, 0)])
    run = rundir.load(out)
    assert all(r["ended_by"] in ("signal 15", "killed") for r in run.profile["ranks"]), run.profile["ranks"]
    check_steps(run, done)
    assert report_json(out)["measured_ranks"] == 3


@pytest.mark.parametrize("how", ["sigkill", "sigterm"])
@pytest.mark.parametrize("mpi", MPIS)
def test_compute_intervals_outlive_the_job(mpi, how, tmp_path):
    """MPILENS_INTERVALS=1 (one interval per synchronizing collective: the sleeper's MPI_Allreduce
    per step, 30 ms of sleep between two): SIGKILL to every rank leaves the intervals in their
    statistics files, SIGTERM lets each rank write its intervals file; either way each rank has as
    many intervals as MPI_Allreduce calls it finished (the steps it counted itself, or one more),
    and each one after the first holds the program's 30 ms sleep."""
    signals = [(signal.SIGKILL, 0.0)] if how == "sigkill" else [(signal.SIGTERM, 0.0)]
    out, done = _kill_all_after(mpi, tmp_path, 3, 6, signals, settings={"MPILENS_INTERVALS": "1"})
    run = rundir.load(out)
    check_steps(run, done)
    allreduces = fn(run.profile, "MPI_Allreduce", "calls")
    assert run.profile["intervals"]["recorded"] == allreduces
    files = sorted(p.name for p in (out / "ranks").glob("intervals-*.bin"))
    iv = intervals.load(out)
    recovered = [p for p in iv.problems if "intervals recovered from" in p]
    if how == "sigkill":  # (mpirun may SIGTERM a rank whose SIGKILL is still to come: that one writes its own)
        assert len(recovered) + len(files) == 3 and len(recovered) >= 2, (iv.problems, files)
    else:  # each rank's handler writes its file (the launcher's SIGKILL comes later)
        ended = [r["ended_by"] for r in run.profile["ranks"]]
        assert len(files) == ended.count("signal 15") >= 2 and len(files) + len(recovered) == 3, (ended, files)
    assert iv.compute.shape == (3, min(allreduces)) and min(allreduces) >= 6
    assert (iv.compute[:, 1:] >= 0.030).all() and (iv.compute[:, 1:] < 5.0).all(), iv.compute
    assert (iv.collective >= 0).all()
    p = cli("model", "variability", str(out), "--predict", "6")
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    assert how == "sigterm" or "intervals recovered from" in p.stdout


@pytest.mark.parametrize("mpi", MPIS)
def test_a_rank_that_crashes(mpi, tmp_path):
    """A rank's segfault: its handler writes what it measured (ended by signal 11), the launcher
    ends the others, and every rank is reported with the 5 steps it finished."""
    np, steps = 3, tmp_path / "steps"
    steps.mkdir()
    argv = launcher(mpi, np) + [str(example(mpi, "sleeper")), "-n", "1000", "-s", "20", "-f", "1:5", "-p", str(steps)]
    job = mpilens_run(mpi, argv, tmp_path, check=False)
    assert job.returncode != 0 and progress(steps, np) == [5] * np
    run = rundir.load(job.rundir)
    assert run.profile["ranks"][1]["ended_by"] == "signal 11"
    assert all(r["ended_by"] in ("signal 15", "killed") for i, r in enumerate(run.profile["ranks"]) if i != 1)
    for name in ("MPI_Allreduce", "MPI_Sendrecv"):
        assert fn(run.profile, name, "calls") == [5] * np, name


def _memory_cgroup() -> Path | None:
    """A memory cgroup of this process's own that a test may make children in (v2 or v1), or None."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if controllers == "" and Path("/sys/fs/cgroup/cgroup.controllers").exists():
            base = Path("/sys/fs/cgroup") / path.lstrip("/")
        elif "memory" in controllers.split(","):
            base = Path("/sys/fs/cgroup/memory") / path.lstrip("/")
        else:
            continue
        probe = base / "mpilens-probe"
        try:
            probe.mkdir()
            probe.rmdir()
            return base
        except OSError:
            continue
    return None


@pytest.mark.mpi
@pytest.mark.parametrize("mpi", MPIS)
def test_the_oom_killer(mpi, tmp_path):
    """The job in a memory cgroup of 256 MiB; rank 1 allocates without end after 5 steps and the
    kernel's OOM killer ends it (SIGKILL). Every rank is reported with its 5 steps."""
    base = _memory_cgroup()
    if base is None:
        pytest.skip("no memory cgroup this test may make a child in")
    group = base / f"mpilens-oom-{os.getpid()}"
    group.mkdir()
    try:
        v2 = (group / "memory.max").exists()
        limit = str(256 << 20)
        (group / ("memory.max" if v2 else "memory.limit_in_bytes")).write_text(limit)
        if v2 and (group / "memory.swap.max").exists():
            (group / "memory.swap.max").write_text("0")
        elif (group / "memory.memsw.limit_in_bytes").exists():
            (group / "memory.memsw.limit_in_bytes").write_text(limit)
        np, steps = 3, tmp_path / "steps"
        steps.mkdir()
        argv = launcher(mpi, np) + [str(example(mpi, "sleeper")), "-n", "1000", "-s", "20", "-o", "1:5", "-p", str(steps)]
        out = tmp_path / "run"
        inner = f"echo $$ > {group}/cgroup.procs && exec {MPILENS} run -o {out} --set MPILENS_SIGNALS=0 -- " + \
            " ".join(argv)
        p = subprocess.run(["sh", "-c", inner], env=job_env(), capture_output=True, text=True, timeout=300)
        assert p.returncode != 0, p.stdout
        events = (group / ("memory.events" if v2 else "memory.oom_control")).read_text()
        kills = [int(x.split()[1]) for x in events.splitlines() if x.startswith("oom_kill ")]
        assert kills and kills[0] >= 1, events
    finally:
        for _ in range(50):
            try:
                group.rmdir()
                break
            except OSError:
                time.sleep(0.1)
    assert progress(steps, np) == [5] * np
    run = rundir.load(out)
    assert run.profile["ranks"][1]["ended_by"] == "killed"
    for name in ("MPI_Allreduce", "MPI_Sendrecv"):
        assert fn(run.profile, name, "calls") == [5] * np, name


@pytest.mark.parametrize("mpi", MPIS)
def test_a_run_directory_removed_while_the_job_runs(mpi, tmp_path):
    """The run directory disappears mid-run (a cleanup script, a scratch purge): the application's
    output and exit status are those of a run without mpilens; what could not be written is said."""
    np = 2
    prog = [str(example(mpi, "sleeper")), "-n", "40", "-s", "20"]
    plain = subprocess.run(launcher(mpi, np) + prog, env=job_env(), capture_output=True, text=True, timeout=120)
    out = tmp_path / "run"
    proc = subprocess.Popen([str(MPILENS), "run", "-o", str(out), "--", *launcher(mpi, np), *prog], env=job_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        seen = read_until(proc, r"^step 10$", timeout=120)
        shutil.rmtree(out)
        rest, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == plain.returncode == 0, err
    assert seen + rest == plain.stdout
    assert "Traceback" not in err and "mpilens: " in err, err


@pytest.mark.parametrize("mpi", MPIS)
def test_mpi_io_of_killed_ranks(mpi, tmp_path):
    """The MPI-IO records of ranks killed without a word come from their statistics files: each of
    the 3 ranks wrote its 256 bytes per step with MPI_File_write_at for the 5 steps it finished, as
    the file on disk says (its size, each block's bytes: the rank that wrote it)."""
    np, steps, data = 3, tmp_path / "steps", tmp_path / "data.bin"
    steps.mkdir()
    argv = launcher(mpi, np) + [str(example(mpi, "sleeper")), "-n", "1000", "-s", "20", "-k", "1:5", "-p", str(steps),
                                "-w", str(data)]
    job = mpilens_run(mpi, argv, tmp_path, settings={"MPILENS_SIGNALS": "0"}, check=False)
    assert job.returncode != 0 and progress(steps, np) == [5] * np
    written = data.read_bytes()
    assert len(written) == 5 * np * 256
    assert all(written[b * 256:(b + 1) * 256] == bytes([b % np]) * 256 for b in range(5 * np))
    assert not list((job.rundir / "io").glob("rank-*.bin"))  # no rank wrote its own
    p = cli("io", "--json", str(job.rundir))
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    (f,) = json.loads(p.stdout)["files"]
    assert Path(f["name"]).resolve() == data.resolve() and f["ranks"] == list(range(np))
    assert f["bytes_written"] == len(written) and f["writes"]["independent_blocking"] == 5 * np
    assert f["opens"] == np and f["closes"] == 0


@pytest.mark.parametrize("mpi", MPIS)
def test_killed_during_the_finalize_merge(mpi, tmp_path):
    """ring 7 512 on 3 ranks (7 MPI_Send and 7 MPI_Recv of 512 bytes per rank, one MPI_Allreduce):
    rank 0 is killed as it puts the merged profile in place (tests/data/die_at_profile.c, preloaded
    after the runtime), the others waiting for it in MPI_Finalize, then ended by the launcher. The
    half-done profile is not taken for one; every rank is reported with all of its calls, and as
    ended in MPI_Finalize."""
    shim = tmp_path / "libdie.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", str(shim), str(Path(__file__).parent / "data" /
                                                                             "die_at_profile.c"), "-ldl"], check=True)
    argv = launcher(mpi, 3) + [str(example(mpi, "ring")), "7", "512"]
    job = mpilens_run(mpi, argv, tmp_path, env=job_env(LD_PRELOAD=str(shim)), check=False)
    assert job.returncode != 0 and "ring: 7 messages of 512 bytes" in job.stdout, job.stderr
    assert not (job.rundir / "profile.json").exists() and any(job.rundir.glob("profile.json.tmp*"))
    run = rundir.load(job.rundir)
    assert run.source != "profile.json" and run.profile["ranks"][0]["ended_by"] == "killed"
    p = run.profile
    assert fn(p, "MPI_Send", "calls") == [7] * 3 and fn(p, "MPI_Recv", "bytes_recv") == [7 * 512] * 3
    assert fn(p, "MPI_Allreduce", "calls") == [1] * 3
    assert report_json(job.rundir)["measured_ranks"] == 3
    # the ranks recovered from their statistics files had stopped measuring in MPI_Finalize (the file's
    # state says so): rank 0 alone under Open MPI, whose other ranks wrote their partial files as the
    # launcher ended them; all three under Hydra, which kills them with SIGKILL
    assert re.search(r"rank(s 0-2| 0) ended in MPI_Finalize, while mpilens gathered and merged the profile",
                     " ".join(run.problems)), run.problems


@pytest.mark.mpi
@SMALL_FS
def test_a_file_system_too_full_for_the_profile(tmp_path):
    """Counters mode (more files) on tmpfs file systems of 300 to 900 KiB: the application runs as
    without mpilens at every size (no SIGBUS from a mapped file); where the profile cannot be
    written, `mpilens run` says the job reached MPI_Finalize and that the profile could not be
    written (not that the job ended early), and `mpilens report` ends with a report or one clear
    line (status 2, no traceback): a rank whose statistics never fitted in its file is named as
    lost, never reported as zeros."""
    unwritten = 0
    for size, p, copy in on_small_file_systems(tmp_path, (300, 450, 600, 750, 900), "profile,counters"):
        assert "ended before MPI_Finalize" not in p.stderr, (size, p.stderr)
        if not (copy / "profile.json").exists():
            unwritten += 1
            assert p.returncode == 1 and "the job reached MPI_Finalize but mpilens could not write the profile" \
                in p.stderr, (size, p.stderr)
        else:
            assert p.returncode == 0, (size, p.stderr)
        r = cli("report", str(copy))
        assert r.returncode in (0, 2) and "Traceback" not in r.stderr, (size, r.stderr)
        if r.returncode == 2:
            assert len(r.stderr.strip().splitlines()) == 1 and "nothing of the rank survives" in r.stderr, r.stderr
        elif not (copy / "profile.json").exists():
            assert "reached MPI_Finalize but no profile was written" in r.stdout, r.stdout
    assert unwritten, "no size was too small for the profile: the test does not test what it says"
