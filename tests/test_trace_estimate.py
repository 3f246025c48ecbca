"""`mpilens trace --estimate`: the trace a run would write, predicted from its profile
(mpilens.trace.estimate; bench/trace_size.py fits and checks its constants, tests/test_trace.py
holds it within 20 % of LAMMPS' real trace)."""

from __future__ import annotations

import json
import subprocess

import pytest

from conftest import MPILENS, RUNS, committed_run, launcher, mpilens_run, require
from mpilens import layout
from mpilens.trace import estimate, reader, synthetic

TRACED = sorted(p.name for p in RUNS.iterdir() if (p / "trace").is_dir())


@pytest.mark.parametrize("name", ["ring-trace-openmpi", "ring-trace-mpich"])
def test_estimate_of_a_ring(name, tmp_path):
    """ring N SIZE on P ranks (examples/c/ring.c): per rank N sends, N receives, one allreduce,
    MPI_Comm_rank and _size, regions "ring" and "check" visited once: that many events exactly,
    and bytes within 20 % of the files on disk."""
    run = committed_run(name, tmp_path)
    n = int(run.args[0]) if run.args else 10
    p = subprocess.run([str(MPILENS), "trace", str(run.rundir), "--estimate", "--profile-only", "--json"],
                       capture_output=True, text=True, check=True)
    est = json.loads(p.stdout)
    per_rank = 2 * n + 3 + 2 * 2
    assert [r["events"] for r in est["ranks"]] == [per_rank] * run.np
    real = sum(f.stat().st_size for f in (run.rundir / "trace").glob("rank-*.bin"))
    assert abs(est["bytes"] / real - 1) < 0.2, (est["bytes"], real)
    assert set(est["exports"]) >= {"chrome", "perfetto", "parquet", "otf2"}
    text = subprocess.run([str(MPILENS), "trace", str(run.rundir), "--estimate", "--profile-only"],
                          capture_output=True, text=True, check=True).stdout
    assert "would hold about" in text
    assert any(f"Most events come from: {f}" in text for f in ("MPI_Send", "MPI_Recv")), text


def test_estimate_needs_only_a_profile(tmp_path):
    """A profile-only run (no trace/ at all) is what the estimate is for."""
    run = committed_run("ring-openmpi", tmp_path)
    assert not (run.rundir / "trace").exists()
    p = subprocess.run([str(MPILENS), "trace", str(run.rundir), "--estimate", "--json"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    est = json.loads(p.stdout)
    n = int(run.args[0]) if run.args else 10
    assert [r["events"] for r in est["ranks"]] == [2 * n + 3 + 2 * 2] * run.np


@pytest.mark.parametrize("name", TRACED)
def test_composition_counts_what_the_profile_counts(name, tmp_path):
    """A trace file's Composition, read without decoding its events: the calls, completions and
    region events the rank's profile counts (the runtime's own counters), and its parts' bytes
    summing to the file's size."""
    run = committed_run(name, tmp_path)
    feats = estimate.features(json.loads((run.rundir / "profile.json").read_text()))
    for f in layout.trace_files(run.rundir):
        c = reader.composition(f)
        assert c.file_bytes == f.stat().st_size and 0 < c.event_bytes < c.file_bytes
        if reader.read_rank(f).complete:  # a killed rank's trace lacks its last buffer's events
            assert [c.calls, c.completions, c.region_events] == feats[c.rank][:3].tolist(), (c, feats[c.rank])


def test_calibrated_on_part_of_a_run(tmp_path):
    """A profile of a long run and the trace of a short one of the same program (the synthetic
    halo, whose events repeat their peers and sizes as NetPIPE's do): the estimate calibrated on
    the short trace is within 2 % of the long run's files on disk; from the profile alone it is
    further off."""
    long_run, short_run = tmp_path / "long", tmp_path / "short"
    synthetic.write(long_run, synthetic.Halo(6, 3_000))
    synthetic.write(short_run, synthetic.Halo(6, 300))
    profile = json.loads((long_run / "profile.json").read_text())
    real = sum(f.stat().st_size for f in layout.trace_files(long_run))
    sample = [reader.composition(f) for f in layout.trace_files(short_run)]
    est = estimate.estimate(profile, sample=sample)
    assert abs(est["bytes"] / real - 1) < 0.02, (est["bytes"], real)
    assert est["calibrated_on"]["events"] == sum(c.calls + c.completions for c in sample)
    fit = estimate.estimate(profile)
    assert fit["calibrated_on"] is None and abs(fit["bytes"] / real - 1) > abs(est["bytes"] / real - 1)
    # a rank missing from the sample takes the others' ratio
    part = estimate.estimate(profile, sample=sample[1:])
    assert abs(part["bytes"] / real - 1) < 0.02


def test_cli_says_what_it_calibrated_on(tmp_path):
    """`--estimate` of a traced run calibrates on its trace and says so; `--profile-only` does
    not; `--under` or `--profile-only` without `--estimate` is refused."""
    run = committed_run("ring-trace-openmpi", tmp_path)
    out = {}
    for extra in ([], ["--profile-only"]):
        out[bool(extra)] = subprocess.run([str(MPILENS), "trace", str(run.rundir), "--estimate", *extra],
                                          capture_output=True, text=True, check=True).stdout
    assert "Calibrated on its own trace" in out[False] and "From the profile alone" in out[True]
    for bad in (["--under", "1M"], ["--profile-only"]):
        p = subprocess.run([str(MPILENS), "trace", str(run.rundir), *bad], capture_output=True, text=True)
        assert p.returncode != 0 and "goes with --estimate" in p.stderr


@pytest.mark.mpi
@pytest.mark.apps
def test_netpipe_estimate_from_a_window(tmp_path):
    """NetPIPE with a fixed number of repeats (the same calls in every run), traced on rank 0 only
    (a part of the run that does not depend on how fast the machine is, as a time window would:
    a window of 0.1 s once held nothing on a loaded machine): the estimate of its whole trace,
    calibrated on that part (rank 1 taking rank 0's ratio), is within 20 % of the files a whole
    trace of it writes. Its every call repeats its peer, tag and size, which no profile can tell
    from a program whose calls change them (from the profile alone the estimate is about a third
    over). bench/trace_size.py measures the calibration on a window of a tenth of the run."""
    exe = require("NPopenmpi", "netpipe-openmpi")
    argv = launcher("openmpi", 2) + [exe, "-u", "8192", "-n", "3000", "-o", str(tmp_path / "np.out")]
    whole = mpilens_run(None, argv, tmp_path, outdir=tmp_path / "whole", settings={"MPILENS_MODE": "trace"})
    part = mpilens_run(None, argv, tmp_path, outdir=tmp_path / "part",
                       settings={"MPILENS_MODE": "trace", "MPILENS_TRACE_RANKS": "0"})
    calls = [{k: f["calls"] for k, f in json.loads((j.rundir / "profile.json").read_text())["functions"].items()}
             for j in (whole, part)]
    assert calls[0] == calls[1]
    real = sum(f.stat().st_size for f in layout.trace_files(whole.rundir))
    assert [f.name for f in layout.trace_files(part.rundir)] == ["rank-000000.bin"]
    est = json.loads(subprocess.run([str(MPILENS), "trace", str(part.rundir), "--estimate", "--json"],
                                    capture_output=True, text=True, check=True).stdout)
    assert est["calibrated_on"]["ranks"] == 1
    assert abs(est["bytes"] / real - 1) < 0.2, (est["bytes"], real)
    fit = json.loads(subprocess.run([str(MPILENS), "trace", str(part.rundir), "--estimate", "--profile-only",
                                     "--json"], capture_output=True, text=True, check=True).stdout)
    assert fit["bytes"] > 1.2 * real, (fit["bytes"], real)  # what the calibration is for
