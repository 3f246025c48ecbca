"""mpilens under a real Slurm (Debian's slurm-wlm and munge), started by scripts/slurm.sh with two
nodes on this host: a direct `srun` launch (Open MPI through PMIx, MPICH through PMI2), `salloc`
with `mpirun` inside, and `sbatch` scripts that call `mpilens run` with `srun` and with `mpirun`.
Each run must hold the exact traffic of examples/c/ring (per rank 10 MPI_Send and 10 MPI_Recv of
1024 bytes to and from its neighbours), the Slurm job's command, and one host.

Open MPI's direct launch stays on one node (-N 1): across two slurmds of one host its PMIx
plugins collide (scripts/slurm.sh says why); everything else spans both nodes.

A job that reaches its time limit (`sbatch --time`, test_time_limit): Slurm cancels it as it does
on a cluster (SIGTERM to every process of the job, SIGKILL after KillWait, 5 s here), `mpilens run`
inside the batch script dies with it, and `mpilens report` afterwards has every rank (ended by
SIGTERM, or recovered from its statistics file when SIGKILL came first) with exactly the steps each
rank counted itself (examples/c/sleeper -p: one MPI_Allreduce and one MPI_Sendrecv per step). Slurm
counts time limits in minutes and checks them every 30 s, so that job runs 60 to 95 s, waiting
more than it computes. One module, so that one Slurm serves every test (the fixture starts one per
module, under a lock of the machine's: a second module would wait for the first).
"""

from __future__ import annotations

import os
import socket
import subprocess
import time

import pytest

from conftest import MPILENS, NETPIPE, SLURM, check_netpipe_profile, example, fn, mpilens_run, netpipe_sizes
from mpilens import rundir

N, SIZE, NP = 10, 1024, 4

pytestmark = [pytest.mark.mpi, pytest.mark.slurm,
              pytest.mark.skipif(os.geteuid() != 0, reason="a Slurm of its own needs root (slurmd)")]


def check_ring(run: rundir.Run, command: list[str]) -> None:
    p = run.profile
    assert run.complete and p["nranks"] == NP
    assert fn(p, "MPI_Send", "calls") == [N] * NP and fn(p, "MPI_Recv", "calls") == [N] * NP
    assert fn(p, "MPI_Send", "bytes_sent") == [N * SIZE] * NP
    assert fn(p, "MPI_Recv", "bytes_recv") == [N * SIZE] * NP
    assert sorted((m["src"], m["dst"], m["messages"], m["bytes"]) for m in p["matrix"]) == [
        (r, (r + 1) % NP, N, N * SIZE) for r in range(NP)]
    assert run.meta["command"] == command
    assert {r["host"] for r in p["ranks"]} == {socket.gethostname()}


def job_end(job: str, env: dict[str, str], timeout: float = 300) -> tuple[str, str]:
    """A batch job's final state and exit code, once it has ended: asked of Slurm every 0.2 s
    (`sbatch --wait` asks at growing intervals, up to 10 s a test here)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        p = subprocess.run(["scontrol", "-o", "show", "job", job], env=env, capture_output=True, text=True)
        fields = dict(f.split("=", 1) for f in p.stdout.split() if "=" in f)
        if fields.get("JobState") not in (None, "PENDING", "CONFIGURING", "RUNNING", "COMPLETING"):
            return fields["JobState"], fields.get("ExitCode", "")
        time.sleep(0.2)
    raise AssertionError(f"job {job} still running after {timeout} s")


def ring(mpi: str) -> list[str]:
    return [str(example(mpi, "ring")), str(N), str(SIZE)]


@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_srun_direct_launch(slurm, mpi, tmp_path):
    plugin = ["-N", "1", "--mpi=pmix"] if mpi == "openmpi" else ["-N", "2", "--mpi=pmi2"]
    command = ["srun", "-n", str(NP), *plugin, *ring(mpi)]
    job = mpilens_run(None, command, tmp_path, env=slurm)
    assert f"mpilens: run directory {job.rundir}" in job.stderr.splitlines(), job.stderr
    assert "ring: 10 messages of 1024 bytes" in job.stdout  # the program's own output is passed on
    check_ring(job.load(), command)


@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_salloc_with_mpirun_inside(slurm, mpi, tmp_path):
    out = tmp_path / "run"
    command = [f"mpirun.{mpi}", "-np", str(NP), *ring(mpi)]
    p = subprocess.run(["salloc", "-N", "2", "-n", str(NP), str(MPILENS), "run", "-o", str(out), "--", *command],
                       env=slurm, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "Granted job allocation" in p.stderr
    check_ring(rundir.load(out), command)


@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_sbatch_script(slurm, mpi, tmp_path):
    """A batch script that measures two job steps: one launched with srun, one with mpirun."""
    a, b = tmp_path / "with-srun", tmp_path / "with-mpirun"
    plugin, nodes = ("--mpi=pmix", "1") if mpi == "openmpi" else ("--mpi=pmi2", "2")
    script = tmp_path / "job.sh"
    script.write_text(f"""#!/bin/bash
{MPILENS} run -o {a} -- srun {plugin} {' '.join(ring(mpi))}
{MPILENS} run -o {b} -- mpirun.{mpi} -np {NP} {' '.join(ring(mpi))}
""")
    script.chmod(0o755)
    log = tmp_path / "job.out"
    p = subprocess.run(["sbatch", "--parsable", "-N", nodes, "-n", str(NP), "-o", str(log), str(script)], env=slurm,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    state = job_end(p.stdout.strip().split(";")[0], slurm)
    assert state == ("COMPLETED", "0:0"), (state, log.read_text() if log.exists() else "")
    text = log.read_text()
    assert f"mpilens: run directory {a}" in text and f"mpilens: run directory {b}" in text, text
    check_ring(rundir.load(a), ["srun", *plugin.split(), *ring(mpi)])
    check_ring(rundir.load(b), [f"mpirun.{mpi}", "-np", str(NP), *ring(mpi)])


def test_down_without_a_cluster_is_harmless(tmp_path):
    env = dict(os.environ, MPILENS_SLURM_DIR=str(tmp_path / "none"))
    assert subprocess.run([str(SLURM), "down"], env=env, capture_output=True).returncode == 0
    p = subprocess.run([str(SLURM), "env"], env=env, capture_output=True, text=True)
    assert p.returncode == 1 and "no cluster is up" in p.stderr


@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_srun_netpipe(slurm, mpi, tmp_path):
    """NetPIPE (Debian's build) launched by srun under mpilens: its known traffic, exactly."""
    lo, hi, reps = 2, 4096, 8
    plugin = ["-N", "1", "--mpi=pmix"] if mpi == "openmpi" else ["-N", "2", "--mpi=pmi2"]
    r = mpilens_run(None, ["srun", "-n", "2", *plugin, NETPIPE[mpi], "-l", str(lo), "-u", str(hi), "-p", "0",
                           "-n", str(reps), "-o", str(tmp_path / "np.out")], tmp_path, env=slurm).load()
    assert r.complete and r.profile["nranks"] == 2
    check_netpipe_profile(r.profile, netpipe_sizes(tmp_path / "np.out"), lo, reps)


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
    # the job's own step says it was ended at its time limit. sbatch --wait's status is not
    # checked: it is the batch script's exit as the controller recorded it, and beside a second
    # suite it was 0 once for a job whose log ends "CANCELLED ... DUE TO TIME LIMIT"
    assert "DUE TO TIME LIMIT" in text and "Submitted batch job" in p.stdout, (p.returncode, p.stderr, text)
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
