"""Bad input gets one clear error and nothing is lost.

Each refusal is one line on stderr starting with "mpilens: ", exit status 2, no traceback, and the
job does not start (the example program `sleeper -m FILE` would create FILE before MPI_Init).
Jobs that end before MPI_Finalize (killed, MPI_Abort) keep their per-rank data, and `mpilens report`
shows it as an INCOMPLETE run. Damaged run directories give one line naming the file."""

from __future__ import annotations

import json
import os
import re
import selectors
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import BUILD, MPILENS, MPIS, committed_run, example, fn, job_env, launcher, mpilens_run, sources
from mpilens import rundir


# ------------------------------------------------------------------------------------- helpers
def cli(*args: str, env: dict[str, str] | None = None, timeout: int = 120) -> subprocess.CompletedProcess:
    """Run the mpilens command line as a user would."""
    return subprocess.run([str(MPILENS), *args], env=env or job_env(), capture_output=True, text=True, timeout=timeout)


def error_line(p, status: int | None = 2, only: bool = True) -> str:
    """The one `mpilens: ` line of a failed command; checks the exit status (None: any non-zero),
    that there is no traceback, and (only=True) that nothing else was printed on stderr."""
    assert "Traceback" not in p.stderr, p.stderr
    lines = [line for line in p.stderr.splitlines() if line.startswith("mpilens: ")]
    assert len(lines) == 1, f"expected one `mpilens: ` line on stderr, got:\n{p.stderr}"
    if only:
        assert p.stderr.strip() == lines[0], f"more than the error on stderr:\n{p.stderr}"
    if status is None:
        assert p.returncode != 0, p.stderr
    else:
        assert p.returncode == status, f"exit status {p.returncode}, expected {status}\n{p.stderr}"
    return lines[0]


def sleeper(mpi: str, marker: Path, *args: str) -> list[str]:
    """argv of the sleeper example: it creates `marker` (one pid per process) before MPI_Init."""
    return [str(example(mpi, "sleeper")), "-m", str(marker), *args]


def assert_not_started(marker: Path, outdir: Path) -> None:
    assert not marker.exists(), f"the program ran ({marker} exists)"
    assert not outdir.exists(), f"{outdir} was left behind by a refused run"


def copy_run(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def cut_in_half(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


# ------------------------------------------------------------------------------------- not an MPI program
def test_non_mpi_program_under_launcher(mpi, tmp_path):
    job = mpilens_run(None, launcher(mpi, 1) + ["/bin/true"], tmp_path, check=False)
    line = error_line(job)
    assert "/bin/true" in line and "does not use MPI" in line
    assert not job.rundir.exists()


@pytest.mark.mpi
def test_non_mpi_program_alone(tmp_path):
    job = mpilens_run(None, ["/bin/true"], tmp_path, check=False)
    line = error_line(job)
    assert "/bin/true" in line and "does not use MPI" in line
    assert not job.rundir.exists()


def test_non_mpi_program_forced_mpi(mpi, tmp_path):
    """--mpi skips the ldd check: the job runs, never calls MPI_Init, and mpilens says so."""
    job = mpilens_run(mpi, launcher(mpi, 1) + ["/bin/true"], tmp_path, check=False)
    line = error_line(job, status=None)
    assert "never called MPI_Init" in line
    assert not job.rundir.exists()


# ------------------------------------------------------------------------------------- missing launcher / program
@pytest.mark.mpi
def test_missing_launcher(tmp_path):
    job = mpilens_run(None, ["no-such-mpirun", "-np", "2", "./x"], tmp_path, check=False)
    line = error_line(job)
    assert "no-such-mpirun" in line and "not found" in line
    assert not job.rundir.exists()


@pytest.mark.mpi
def test_missing_program_alone(tmp_path):
    job = mpilens_run(None, ["./no-such-program", "arg"], tmp_path, check=False)
    line = error_line(job)
    assert "no-such-program" in line and "not found" in line
    assert not job.rundir.exists()


def test_missing_program_under_launcher(mpi, tmp_path):
    """The launcher prints its own complaint; mpilens adds one line that names the program."""
    missing = str(tmp_path / "no-such-program")
    job = mpilens_run(None, launcher(mpi, 2) + [missing], tmp_path, check=False)
    line = error_line(job, status=None, only=False)
    assert not job.rundir.exists()
    assert "no-such-program" in line, f"the error does not name the missing program: {line!r}"


# ------------------------------------------------------------------------------------- output directory
BAD_OUTDIRS = {
    "parent-is-a-file": lambda t: t / "afile" / "run",
    "is-a-file": lambda t: t / "afile",
    "under-proc": lambda _: Path("/proc/self/mpilens-run"),
    "under-dev-null": lambda _: Path("/dev/null/run"),
}


@pytest.mark.parametrize("case", sorted(BAD_OUTDIRS))
def test_impossible_outdir(mpi, tmp_path, case):
    (tmp_path / "afile").write_text("a regular file\n")
    out = BAD_OUTDIRS[case](tmp_path)
    marker = tmp_path / "started"
    job = mpilens_run(None, launcher(mpi, 2) + sleeper(mpi, marker, "-n", "1"), tmp_path, outdir=out, check=False)
    line = error_line(job)
    assert str(out) in line
    assert not marker.exists()
    assert (tmp_path / "afile").read_text() == "a regular file\n"


def test_nonempty_outdir_refused_and_untouched(mpi, tmp_path):
    out = tmp_path / "previous"
    (out / "ranks").mkdir(parents=True)
    (out / "profile.json").write_text('{"an": "earlier run"}\n')
    (out / "ranks" / "rank-000000.partial").write_bytes(bytes(range(64)))
    before = {p: (p.read_bytes() if p.is_file() else None, p.stat().st_mtime_ns) for p in out.rglob("*")}
    marker = tmp_path / "started"
    job = mpilens_run(None, launcher(mpi, 2) + sleeper(mpi, marker, "-n", "1"), tmp_path, outdir=out, check=False)
    line = error_line(job)
    assert str(out) in line and "not empty" in line
    assert not marker.exists()
    assert {p: (p.read_bytes() if p.is_file() else None, p.stat().st_mtime_ns) for p in out.rglob("*")} == before


def test_existing_empty_outdir_kept_when_refused_then_used(mpi, tmp_path):
    """An empty directory the user made for -o is accepted; a refused run must not delete it."""
    out = tmp_path / "mine"
    out.mkdir()
    marker = tmp_path / "started"
    argv = launcher(mpi, 2) + sleeper(mpi, marker, "-n", "2")
    refused = mpilens_run(None, argv, tmp_path, outdir=out, settings={"MPILENS_VERBOSE": "9"}, check=False)
    error_line(refused)
    assert not marker.exists()
    assert out.is_dir(), f"the refused run deleted the user's empty directory {out}"
    job = mpilens_run(None, argv, tmp_path, outdir=out)
    assert fn(job.profile, "MPI_Allreduce", "calls") == [2, 2]


# ------------------------------------------------------------------------------------- bad MPILENS_* settings
BAD_SETTINGS = [
    pytest.param("set", "MPILENS_MAX_REQUESTS", "abc", "not an integer", id="set-int-abc"),
    pytest.param("env", "MPILENS_MODE", "tracee", "not one of", id="env-mode-typo"),
    pytest.param("env", "MPILENS_VERBOSE", "9", "out of range", id="env-verbose-9"),
    pytest.param("env", "MPILENS_MODDE", "profile", "not an mpilens setting", id="env-misspelled-name"),
    pytest.param("env", "MPILENS_SIGNALS", "maybe", "not a boolean", id="env-bool"),
    pytest.param("set", "MPILENS_TIME_SAMPLE", "0", "out of range", id="set-time-sample-0"),
    pytest.param("set", "MPILENS_P2P_BINS", "", "not a list of 1 to 15", id="set-p2p-bins-empty"),
]
# No case for "'X' is not available in this version of mpilens" (runtime/src/core/config.c): every list
# choice in runtime/spec/config.yaml is available (MPILENS_MODE's `available` names all its choices,
# MPILENS_COUNTERS has none), and the mask is compiled into the runtime, so no real run reaches it.


@pytest.mark.parametrize("how,name,value,why", BAD_SETTINGS)
def test_bad_setting_refused_before_start(mpi, tmp_path, how, name, value, why):
    marker, out = tmp_path / "started", tmp_path / "run"
    argv = launcher(mpi, 2) + sleeper(mpi, marker, "-n", "1")
    opts = ["--set", f"{name}={value}"] if how == "set" else ["--mode", value] if how == "option" else []
    env = job_env(**({name: value} if how == "env" else {}))
    p = cli("run", "-o", str(out), *opts, "--", *argv, env=env)
    line = error_line(p)
    assert name in line and why in line
    if why != "not an mpilens setting":
        assert f"{name}={value}" in line
    assert_not_started(marker, out)


@pytest.mark.parametrize("name,value", [("MPILENS_MAX_REGIONS", "0"), ("MPILENS_MODE", "tracee"),
                                        ("MPILENS_MODE", "profile,memory")])
def test_preloaded_by_hand_with_bad_setting(mpi, tmp_path, name, value):
    """The runtime meets the bad value itself: one line naming the variable, from one rank, then
    the application runs unprofiled with its normal output and exit status. Memory mode without its
    interposer (libmpilens-memory.so) preloaded is such a value: MPI's heap would read as zero."""
    lib = BUILD / "lib" / f"libmpilens-{mpi}.so"
    out = tmp_path / "run"
    forwarded = {"LD_PRELOAD": str(lib), name: value, "MPILENS_OUTPUT": str(out)}
    if mpi == "openmpi":
        flags = [x for k, v in forwarded.items() for x in ("-x", f"{k}={v}")]
    else:
        flags = [x for k, v in forwarded.items() for x in ("-genv", k, v)]
    prog = sleeper(mpi, tmp_path / "started", "-n", "3", "-x", "5")
    plain = subprocess.run(launcher(mpi, 2) + prog, env=job_env(), capture_output=True, text=True, timeout=120)
    tool = subprocess.run(launcher(mpi, 2) + flags + prog, env=job_env(), capture_output=True, text=True, timeout=120)
    assert plain.returncode == 5 and "sleeper: 3 steps on 2 ranks" in plain.stdout
    assert tool.returncode == plain.returncode
    assert tool.stdout == plain.stdout
    assert "Traceback" not in tool.stderr
    ours = [line for line in tool.stderr.splitlines() if "mpilens" in line.lower()]
    assert len(ours) == 1, tool.stderr
    assert ours[0].startswith("mpilens: ") and f"{name}={value}" in ours[0] and "without mpilens" in ours[0]
    assert not (out / "profile.json").exists()


@pytest.mark.mpi
def test_run_without_command():
    line = error_line(cli("run", "--"))
    assert "no command" in line


# ------------------------------------------------------------------------------------- damaged run directories
_ABORTED: dict[str, object] = {}


@pytest.fixture(params=MPIS)
def complete_run(request, tmp_path) -> Path:
    """A finished ring run of each MPI (the committed one: what is checked here is the reader's, and
    the MPI tier checks that jobs write such directories); tests copy it before damaging it."""
    job = committed_run(f"ring-{request.param}", tmp_path / "committed")
    assert job.profile["complete"] is True
    return job.rundir


DAMAGED_PROFILES = {
    "cut-in-half": (cut_in_half, ["damaged"]),
    "empty": (lambda p: p.write_bytes(b""), ["damaged"]),
    "not-an-object": (lambda p: p.write_text("[1, 2, 3]\n"), ["not a JSON object"]),
}


@pytest.mark.parametrize("case", sorted(DAMAGED_PROFILES))
def test_report_damaged_profile(complete_run, tmp_path, case):
    run = copy_run(complete_run, tmp_path / "run")
    damage, words = DAMAGED_PROFILES[case]
    damage(run / "profile.json")
    for args in (["report", str(run)], ["report", "--json", str(run)]):
        p = cli(*args)
        line = error_line(p)
        assert "profile.json" in line and all(w in line for w in words), line
        assert p.stdout == ""


def test_report_profile_cut_inside_a_string(complete_run, tmp_path):
    """A profile.json cut short in the middle of a name is a truncated file, and the message says so."""
    run = copy_run(complete_run, tmp_path / "run")
    text = (run / "profile.json").read_text()
    (run / "profile.json").write_text(text[: text.index('"MPI_Send"') + 6])
    line = error_line(cli("report", str(run)))
    assert "profile.json" in line and "damaged" in line
    assert "at at" not in line, line
    assert "truncated" in line, f"a truncated profile.json is not called truncated: {line!r}"


def test_report_damaged_meta_still_reports_profile(complete_run, tmp_path):
    run = copy_run(complete_run, tmp_path / "run")
    cut_in_half(run / "meta.json")
    p = cli("report", str(run))
    assert p.returncode == 0 and p.stderr == "", p.stderr
    assert re.search(r"^Note +: meta\.json is damaged", p.stdout, re.M), p.stdout
    assert "MPI_Send" in p.stdout and "INCOMPLETE" not in p.stdout


def test_report_missing_directory(tmp_path):
    line = error_line(cli("report", str(tmp_path / "nowhere")))
    assert str(tmp_path / "nowhere") in line and "no such" in line


def test_report_regular_file(tmp_path):
    f = tmp_path / "profile.json"
    f.write_text("{}\n")
    line = error_line(cli("report", str(f)))
    assert str(f) in line and "not a run directory" in line


def test_report_unrelated_directory(tmp_path):
    (tmp_path / "notes.txt").write_text("not a run\n")
    line = error_line(cli("report", str(tmp_path)))
    assert str(tmp_path) in line and ("not a run directory" in line or "meta.json" in line)


# ------------------------------------------------------------------------------------- killed before MPI_Finalize
def kill_env() -> dict[str, str]:
    """Environment of the jobs that are killed: Open MPI's mpirun sends SIGKILL 1 s after SIGTERM by
    default, which a rank of an oversubscribed, busy test machine may not get the CPU soon enough to
    write its data (the handler itself takes microseconds)."""
    return job_env(OMPI_MCA_odls_base_sigkill_timeout="3")


def children(pid: int) -> list[int]:
    """Direct children of a process, from /proc."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            out.append(int(d.name))
    return out


def read_until(proc: subprocess.Popen, pattern: str, timeout: float) -> str:
    """Read the job's stdout until a line matches pattern; return what was read."""
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    text, deadline = "", time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not sel.select(timeout=1):
            continue
        line = proc.stdout.readline()
        if not line:
            break
        text += line
        if re.search(pattern, line):
            return text
    proc.kill()
    raise AssertionError(f"no line matching {pattern!r} within {timeout} s; stdout so far:\n{text}")


def steps_done(stdout: str) -> int:
    """How many steps rank 0 reported as finished."""
    return len(re.findall(r"^step \d+$", stdout, re.M))


def check_partial_profile(run: rundir.Run, min_allreduce: list[int]) -> None:
    """Per-rank counts of the sleeper: Allreduce of 4 bytes and Sendrecv of 256 bytes per step."""
    p = run.profile
    for r, least in enumerate(min_allreduce):
        if p["ranks"][r]["host"] is None:
            continue
        a, s = fn(p, "MPI_Allreduce", "calls")[r], fn(p, "MPI_Sendrecv", "calls")[r]
        assert a >= least, (r, a, least)
        assert s in (a - 1, a), (r, a, s)
        assert fn(p, "MPI_Allreduce", "bytes_sent")[r] == 4 * a
        assert fn(p, "MPI_Sendrecv", "bytes_sent")[r] == 256 * s
        assert fn(p, "MPI_Sendrecv", "bytes_recv")[r] == 256 * s


def check_incomplete_report(out: Path, nranks: int) -> dict:
    text = cli("report", str(out))
    assert text.returncode == 0 and "Traceback" not in text.stderr, text.stderr
    assert "INCOMPLETE" in text.stdout
    assert re.search(r"^MPI_Allreduce\s", text.stdout, re.M) and re.search(r"^MPI_Sendrecv\s", text.stdout, re.M)
    js = cli("report", "--json", str(out))
    assert js.returncode == 0, js.stderr
    doc = json.loads(js.stdout)
    assert doc["complete"] is False and doc["nranks"] == nranks
    assert any(f["name"] == "MPI_Allreduce" and f["calls"] > 0 for f in doc["functions"])
    return doc


def test_killed_job_keeps_partial_data(mpi, tmp_path):
    """SIGTERM to the launcher while the job sleeps between MPI calls."""
    out, np = tmp_path / "run", 2
    cmd = [str(MPILENS), "run", "-o", str(out), "--", *launcher(mpi, np),
           *sleeper(mpi, tmp_path / "started", "-n", "100000", "-s", "20")]
    proc = subprocess.Popen(cmd, env=kill_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        seen = read_until(proc, r"^step 5$", timeout=120)
        kids = children(proc.pid)
        assert len(kids) == 1, f"expected the launcher as the only child of mpilens: {kids}"
        os.kill(kids[0], signal.SIGTERM)
        rest, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    stdout = seen + rest
    k = steps_done(stdout)
    assert 6 <= k < 100000
    # (the exit status is the launcher's: MPICH's mpiexec sometimes exits 0 after SIGTERM)
    assert "Traceback" not in err, err
    ours = [x for x in err.splitlines() if x.startswith("mpilens: ")]
    assert len(ours) == 1 and "before MPI_Finalize" in ours[0] and "partial data" in ours[0], err

    partials = sorted((out / "ranks").glob("rank-*.partial"))
    assert partials and any(f.stat().st_size > 0 for f in partials), partials
    if mpi == "openmpi":  # mpirun passes SIGTERM on to every rank
        assert [f.name for f in partials] == [f"rank-{r:06d}.partial" for r in range(np)]
    run = rundir.load(out)
    assert run.source == "per-rank files" and not run.complete
    measured = [r for r in run.profile["ranks"] if r["host"] is not None]
    assert measured and all(r["ended_by"] == "signal 15" for r in measured), run.profile["ranks"]
    # rank 0 printed k steps: it finished k Allreduces, and every other rank at least k - 1
    check_partial_profile(run, [k] + [k - 1] * (np - 1))
    doc = check_incomplete_report(out, np)
    assert doc["measured_ranks"] == len(measured)


# ------------------------------------------------------------------------------------- MPI_Abort
def aborted_job(mpi: str, tmp_path_factory) -> object:
    """3 ranks; rank 1 calls MPI_Abort(MPI_COMM_WORLD, 3) after 3 steps, run now (read only)."""
    if mpi not in _ABORTED:
        base = tmp_path_factory.mktemp(f"abort-{mpi}")
        argv = launcher(mpi, 3) + sleeper(mpi, base / "started", "-n", "1000", "-s", "10", "-a", "1:3")
        _ABORTED[mpi] = mpilens_run(None, argv, base, check=False, env=kill_env())
    return _ABORTED[mpi]


@pytest.fixture(params=sources())
def aborted(request, tmp_path_factory):
    """The same job as aborted_job: committed (scripts/make-test-runs.py) or run now; (its MPI, its run
    directory)."""
    src = request.param
    if src.live:
        return src.mpi, aborted_job(src.mpi, tmp_path_factory).rundir
    job = committed_run(f"aborted-{src.mpi}", tmp_path_factory.mktemp(f"abort-{src.mpi}"))
    assert job.args[-2:] == ["-a", "1:3"] and job.np == 3
    return src.mpi, job.rundir


def test_abort_passes_the_status_on_and_says_what_is_kept(mpi, tmp_path_factory):
    job = aborted_job(mpi, tmp_path_factory)
    assert job.returncode == 3, job.stderr  # the job's status is passed on
    if mpi == "openmpi":  # MPICH's launcher may drop the aborting rank's last output line when
        # MPI_Abort tears the job down before it forwarded it (seen in CI); the data below is ours
        assert "sleeper: rank 1 aborts at step 3" in job.stdout
    line = error_line(job, status=3, only=False)
    assert "before MPI_Finalize" in line and "partial data" in line


def test_abort_keeps_partial_data(aborted):
    mpi, rundir_ = aborted
    assert (rundir_ / "ranks" / "rank-000001.partial").stat().st_size > 0
    run = rundir.load(rundir_)
    p = run.profile
    assert not run.complete and p["nranks"] == 3
    assert p["ranks"][1]["ended_by"] == "MPI_Abort"
    assert fn(p, "MPI_Allreduce", "calls")[1] == 3 and fn(p, "MPI_Sendrecv", "calls")[1] == 3
    assert fn(p, "MPI_Sendrecv", "bytes_sent")[1] == 3 * 256
    if mpi == "openmpi":  # mpirun ends the other ranks with SIGTERM: they keep their data too
        assert [r["ended_by"] for r in p["ranks"]] == ["signal 15", "MPI_Abort", "signal 15"]
        assert fn(p, "MPI_Allreduce", "calls") == [3, 3, 3]
    check_partial_profile(run, [3, 3, 3])
    check_incomplete_report(rundir_, 3)


def test_abort_is_named_in_report(aborted):
    """The one fact a user needs first about an aborted job: which rank called MPI_Abort."""
    p = cli("report", str(aborted[1]))
    assert p.returncode == 0
    assert "MPI_Abort" in p.stdout, "the report does not say that rank 1 called MPI_Abort"


# ------------------------------------------------------------------------------------- damaged per-rank files
def test_report_truncated_partials(aborted, tmp_path):
    """All per-rank files cut in half: one line naming a damaged file; one of several cut: the
    others are still reported, with a note naming the damaged one."""
    src = aborted[1]
    partials = sorted(f.name for f in (src / "ranks").glob("rank-*.partial") if f.stat().st_size > 0)
    assert partials

    run = copy_run(src, tmp_path / "all")
    for name in partials:
        cut_in_half(run / "ranks" / name)
    recovered = sorted(f.name for f in (src / "ranks").glob("rank-*.stats"))
    for args in (["report", str(run)], ["report", "--json", str(run)]):
        p = cli(*args)
        if recovered:  # MPICH's launcher SIGKILLed the others: they are recovered from their statistics
            assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
            assert f"ranks/{partials[0]} is damaged" in p.stdout and "truncated" in p.stdout, p.stdout
            continue
        line = error_line(p)
        assert f"ranks/{partials[0]}" in line and "damaged" in line and "truncated" in line, line
        assert p.stdout == ""

    if len(partials) < 2:
        return  # MPICH's launcher SIGKILLs the others: only the aborting rank left a partial file
    run = copy_run(src, tmp_path / "one")
    cut_in_half(run / "ranks" / partials[0])
    p = cli("report", str(run))
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    assert re.search(rf"^Note +: ranks/{partials[0]} is damaged", p.stdout, re.M), p.stdout
    assert "INCOMPLETE" in p.stdout and re.search(r"^MPI_Allreduce\s", p.stdout, re.M)
    doc = json.loads(cli("report", "--json", str(run)).stdout)
    assert doc["complete"] is False and doc["measured_ranks"] == len(partials) - 1
