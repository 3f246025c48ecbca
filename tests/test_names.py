"""Names are the application's bytes: a region and a counter named in Latin-1 with a newline and a
terminal escape sequence, and a command line holding them, are carried through the run directory
and every command and export without loss, and shown safely (escaped, on one line).

The oracle is the bytes given to the program (examples/c/names.c) and its known traffic: N
MPI_Sendrecv of 64 bytes per rank inside the region, N additions of 1 to the counter."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from conftest import MPILENS, example, job_env, launcher
from mpilens import rundir, units

pytestmark = pytest.mark.mpi

REGION = b"r\xe9/gion\n\x1b[31mX"  # Latin-1, a slash, a newline, the start of a colour sequence
COUNTER = b"c\xf6unt"
N = 5


def cli(*args: str | bytes | Path, check: bool = True) -> subprocess.CompletedProcess:
    p = subprocess.run([str(MPILENS).encode(), *(a if isinstance(a, bytes) else os.fsencode(str(a)) for a in args)],
                       capture_output=True, env=job_env(), timeout=300)
    assert b"Traceback" not in p.stderr, p.stderr.decode(errors="replace")
    if check:
        assert p.returncode == 0, p.stderr.decode(errors="replace")
    return p


@pytest.fixture(scope="module", params=["openmpi", "mpich"])
def named_run(request, tmp_path_factory) -> Path:
    mpi = request.param
    out = tmp_path_factory.mktemp(f"names-{mpi}") / "run"
    cli("run", "--mpi", mpi, "-o", out, "--mode", "trace,counters", "--",
        *launcher(mpi, 2), example(mpi, "names"), REGION, COUNTER, str(N))
    return out


def test_the_names_bytes_survive_in_the_run_directory(named_run):
    run = rundir.load(named_run)
    regions = run.profile["regions"]
    assert [units.name_bytes(r["name"]) for r in regions] == [REGION]
    assert regions[0]["functions"]["MPI_Sendrecv"]["calls"] == [N, N]
    command = [units.name_bytes(a) for a in run.meta["command"]]
    assert command[-3:] == [REGION, COUNTER, str(N).encode()]
    # the JSON files stay UTF-8 text: the other bytes are escapes
    for f in ("profile.json", "meta.json"):
        (named_run / f).read_bytes().decode("utf-8")


def test_reports_show_names_escaped_on_one_line(named_run, tmp_path):
    text = cli("report", named_run).stdout.decode("utf-8")
    assert "\nr\\xe9/gion\\n\\x1b[31mX  " in text and "\x1b" not in text  # the whole name, one line
    doc = json.loads(cli("report", named_run, "--json").stdout)
    assert doc["problems"] == [] and doc["complete"] is True
    page = tmp_path / b"r\xe9port.html".decode("utf-8", "surrogateescape")
    cli("report", named_run, "--html", page)
    assert "r\\xe9/gion" in page.read_bytes().decode("utf-8")
    trace = json.loads(cli("trace", named_run, "--json").stdout)
    assert not any("damaged" in p or "killed" in p for p in trace.get("problems", [])), trace.get("problems")


def test_exports_carry_the_names(named_run, tmp_path):
    chrome = tmp_path / "t.json"
    cli("export", "chrome", named_run, "-o", chrome)
    events = json.loads(chrome.read_text())["traceEvents"]
    regions = {units.name_bytes(e["name"]) for e in events if e.get("cat") == "region"}
    assert regions == {REGION}
    counters = {units.name_bytes(e["name"]) for e in events if e.get("ph") == "C"}
    assert COUNTER in counters
    parquet = tmp_path / "t.parquet"
    cli("export", "parquet", named_run, "-o", parquet)
    names = set(pq.read_table(parquet).column("name").to_pylist())
    assert units.printable(REGION.decode("utf-8", "surrogateescape")) in names
    cli("export", "hatchet", named_run, "-o", tmp_path / "h.json")
    cli("export", "otf2", named_run, "-o", tmp_path / "otf2")
    assert (tmp_path / "otf2" / "traces.otf2").exists()
    for command in (["imbalance", named_run], ["counters", named_run]):
        cli(*command)
