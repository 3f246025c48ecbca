"""Files of a run directory that are not what they should be (fast tier: committed runs, no MPI job).

A reader reads only regular files of a run directory: a FIFO would hang it, a device such as
/dev/zero never ends, a symbolic link may point at anybody's file. Each gives one problem naming
the file, and whatever else is readable is reported. The oracle is what was planted."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time

import pytest

from conftest import MPILENS, committed_run, job_env
from mpilens import rundir


def report(rundir, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(MPILENS), "report", str(rundir), *args], capture_output=True, text=True, timeout=60,
                          env=job_env())


PLANTS = {
    "profile-fifo": ("profile.json", lambda p: os.mkfifo(p), "not a regular file"),
    "profile-link": ("profile.json", lambda p: p.symlink_to(p.parent / "meta.json"), "symbolic link"),
    "profile-dir": ("profile.json", lambda p: p.mkdir(), "not a regular file"),
    "meta-dev-zero": ("meta.json", lambda p: p.symlink_to("/dev/zero"), "symbolic link"),
    "meta-fifo": ("meta.json", lambda p: os.mkfifo(p), "not a regular file"),
}


@pytest.mark.parametrize("case", sorted(PLANTS))
def test_a_file_that_is_not_a_regular_file_is_named_never_read(case, tmp_path):
    name, plant, why = PLANTS[case]
    run = committed_run("ring-openmpi", tmp_path).rundir
    (run / name).unlink()
    plant(run / name)
    p = report(run, "--json")
    assert "Traceback" not in p.stderr
    if name == "meta.json":  # the profile is still there: reported, with the problem named
        assert p.returncode == 0, p.stderr
        doc = json.loads(p.stdout)
        assert any(name in x and why in x for x in doc["problems"]), doc["problems"]
    else:  # no profile and no per-rank data: one line naming the file
        lines = [x for x in p.stderr.splitlines() if x.startswith("mpilens: ")]
        assert p.returncode == 2 and len(lines) == 1 and name in lines[0] and why in lines[0], p.stderr


def test_a_running_job_is_called_running_not_killed(tmp_path):
    """claim.json names a process of this host that started before the claim and still runs (here:
    this test's own process): the report of the partial data says the job is still running."""
    run = committed_run("aborted-openmpi", tmp_path).rundir
    (run / "claim.json").write_text(json.dumps({"schema": "mpilens.claim/1", "token": "", "by": "runtime",
                                                "pid": os.getpid(), "host": socket.gethostname(),
                                                "created": int(time.time())}) + "\n")
    p = report(run, "--json")
    assert p.returncode == 0, p.stderr
    problems = json.loads(p.stdout)["problems"]
    assert any(f"still running (pid {os.getpid()}" in x for x in problems), problems
    assert not any("did not reach MPI_Finalize" in x for x in problems), problems
    # a claim by a process that is gone (or started after the claim: another process with its pid)
    claim = json.loads((run / "claim.json").read_text())
    claim["created"] = int(time.time()) - 10 ** 6
    (run / "claim.json").write_text(json.dumps(claim))
    problems = json.loads(report(run, "--json").stdout)["problems"]
    assert any("did not reach MPI_Finalize" in x for x in problems), problems


@pytest.mark.mpi  # it starts mpilens run (refused before any job)
def test_mode_given_twice_differently_is_refused(tmp_path):
    p = subprocess.run([str(MPILENS), "run", "-o", str(tmp_path / "r"), "--mode", "trace", "--set",
                        "MPILENS_MODE=bogus", "--", "true"], capture_output=True, text=True, timeout=60, env=job_env())
    lines = [x for x in p.stderr.splitlines() if x.startswith("mpilens: ")]
    assert p.returncode == 2 and len(lines) == 1 and "--mode trace" in lines[0] and "MPILENS_MODE=bogus" in lines[0]
    assert not (tmp_path / "r").exists()


def test_hostile_names_in_text_tables_stay_on_one_line_and_short():
    """A name with a newline, a terminal escape sequence or 100 KB of characters: one line per row,
    escaped, shortened in the middle; the other rows keep their width."""
    from mpilens.report.sections import CELL_MAX, text_table

    names = ["plain", "two\nlines", "\x1b[2Jcleared", "x" * 100_000 + "END"]
    lines = text_table(["Region", "Calls"], [[n, "1"] for n in names])
    assert len(lines) == 2 + len(names)
    assert all("\n" not in x and "\x1b" not in x for x in lines)
    assert "two\\nlines" in lines[3] and "\\x1b[2Jcleared" in lines[4]
    assert lines[5].rstrip().endswith("END  1") or lines[5].split()[-1] == "1"
    assert max(len(x) for x in lines) <= CELL_MAX + 2 + len("Calls")


def test_values_no_run_writes_are_named_and_left_out(tmp_path):
    """A negative time, a string for a count, a message between ranks the run does not have: each is
    left out of the report and named, never reported as it is."""
    run = committed_run("ring-openmpi", tmp_path).rundir
    doc = json.loads((run / "profile.json").read_text())
    n = doc["nranks"]
    doc["functions"]["MPI_Send"]["time_s"][1] = -3.0
    doc["functions"]["MPI_Send"]["calls"][0] = "many"
    doc["matrix"].append({"src": 99, "dst": -5, "messages": 1, "bytes": 8})
    doc["ranks"][0]["wall_time_s"] = -1
    (run / "profile.json").write_text(json.dumps(doc))
    p = report(run, "--json")
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    out = json.loads(p.stdout)
    problems = " | ".join(out["problems"])
    for what in ("functions.MPI_Send.time_s", "functions.MPI_Send.calls", "matrix entry", "wall_time_s"):
        assert what in problems, problems
    send = rundir.load(run).profile["functions"]["MPI_Send"]
    assert send["calls"][0] is None and send["time_s"][1] is None and send["calls"][1] == 5
    assert n == out["nranks"] and all(e["src"] < n for e in rundir.load(run).profile["matrix"])


def test_where_the_measurements_started_is_read_and_checked(tmp_path):
    """meta.json's started_by (MPI_Init, or MPI_Session_init in a program of Sessions only) is kept
    when well formed and says where a recovered rank's times count from; anything else is dropped
    and named."""
    from mpilens import meta as meta_file
    from mpilens import recover

    run = committed_run("ring-openmpi", tmp_path).rundir
    doc = json.loads((run / "meta.json").read_text())
    for value, kept in (("MPI_Session_init", True), ("MPI_Init", True), ("MPI_Init_thread", False), (3, False)):
        doc["started_by"] = value
        (run / "meta.json").write_text(json.dumps(doc))
        problems: list[str] = []
        got = meta_file.load(run, problems)
        assert (got.get("started_by") == value) is kept and (not problems) is kept, (value, problems)
    note = rundir._recovered_note([recover.Recovered("ranks/stats-000001", 1, b"", last_s=2.5)], False,
                                  "MPI_Session_init")
    assert "rank 1 ended without writing anything" in note[0] and "(at 2.5 s after MPI_Session_init)" in note[0]
