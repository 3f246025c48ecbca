"""A job that reaches its Slurm time limit (`sbatch --time`), under the single-machine Slurm of
scripts/slurm.sh: Slurm cancels it as it does on a cluster (SIGTERM to every process of the job,
SIGKILL after KillWait, 5 s here), `mpilens run` inside the batch script dies with it, and
`mpilens report` afterwards has every rank (ended by SIGTERM, or recovered from its statistics
file when SIGKILL came first) with exactly the steps each rank counted itself
(examples/c/sleeper -p: one MPI_Allreduce and one MPI_Sendrecv per step).

Slurm counts time limits in minutes and checks them every 30 s, so the job runs 60 to 95 s; it
waits more than it computes, so this module runs beside the others (it is not `serial`)."""

from __future__ import annotations

import os
import subprocess

import pytest

from conftest import MPILENS, example, fn
from mpilens import rundir

pytestmark = [pytest.mark.mpi, pytest.mark.slurm,
              pytest.mark.skipif(os.geteuid() != 0, reason="a Slurm of its own needs root (slurmd)")]


def test_time_limit(slurm, tmp_path):
    np, steps, out = 3, tmp_path / "steps", tmp_path / "run"
    steps.mkdir()
    script = tmp_path / "job.sh"
    script.write_text(f"""#!/bin/bash
{MPILENS} run -o {out} -- srun --mpi=pmi2 {example("mpich", "sleeper")} -n 1000000 -s 50 -p {steps}
""")
    script.chmod(0o755)
    log = tmp_path / "job.out"
    p = subprocess.run(["sbatch", "--wait", "--time=1", "-N", "1", "-n", str(np), "-o", str(log), str(script)],
                       env=slurm, capture_output=True, text=True, timeout=300)
    text = log.read_text()
    assert p.returncode != 0 and "DUE TO TIME LIMIT" in text, (p.stderr, text)
    done = [int((steps / f"rank-{r}").read_text()) for r in range(np)]
    assert min(done) > 100, done  # a minute of 50 ms steps
    q = subprocess.run([str(MPILENS), "report", str(out), "--json"], capture_output=True, text=True, env=slurm)
    assert q.returncode == 0 and "Traceback" not in q.stderr, q.stderr
    run = rundir.load(out)
    # SIGTERM's handler writes the rank's file; a rank whose handler had not finished when SIGKILL
    # came is recovered from its statistics file instead: either way, all of its calls
    assert all(r["ended_by"] in ("signal 15", "killed") for r in run.profile["ranks"]), run.profile["ranks"]
    # a step's calls may have completed after the rank last wrote its count, but no more
    for r, d in enumerate(done):
        a, s = fn(run.profile, "MPI_Allreduce", "calls")[r], fn(run.profile, "MPI_Sendrecv", "calls")[r]
        assert d <= s <= a <= d + 1, (r, d, a, s)
        assert fn(run.profile, "MPI_Sendrecv", "bytes_sent")[r] == 256 * s
