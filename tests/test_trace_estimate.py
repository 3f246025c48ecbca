"""`mpilens trace --estimate`: the trace a run would write, predicted from its profile
(mpilens.trace.estimate; bench/trace_size.py fits and checks its constants, tests/test_trace.py
holds it within 20 % of LAMMPS' real trace)."""

from __future__ import annotations

import json
import subprocess

import pytest

from conftest import MPILENS, committed_run


@pytest.mark.parametrize("name", ["ring-trace-openmpi", "ring-trace-mpich"])
def test_estimate_of_a_ring(name, tmp_path):
    """ring N SIZE on P ranks (examples/c/ring.c): per rank N sends, N receives, one allreduce,
    MPI_Comm_rank and _size, regions "ring" and "check" visited once: that many events exactly,
    and bytes within 20 % of the files on disk."""
    run = committed_run(name, tmp_path)
    n = int(run.args[0]) if run.args else 10
    p = subprocess.run([str(MPILENS), "trace", str(run.rundir), "--estimate", "--json"], capture_output=True,
                       text=True, check=True)
    est = json.loads(p.stdout)
    per_rank = 2 * n + 3 + 2 * 2
    assert [r["events"] for r in est["ranks"]] == [per_rank] * run.np
    real = sum(f.stat().st_size for f in (run.rundir / "trace").glob("rank-*.bin"))
    assert abs(est["bytes"] / real - 1) < 0.2, (est["bytes"], real)
    assert set(est["exports"]) >= {"chrome", "perfetto", "parquet", "otf2"}
    text = subprocess.run([str(MPILENS), "trace", str(run.rundir), "--estimate"], capture_output=True, text=True,
                          check=True).stdout
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
