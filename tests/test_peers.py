"""mpilens beside mpiP (LLNL's PMPI profiler, built from ../shared/peers by bench/peers.py): the same
program measured by each, against what the program does. examples/c/ring 7 512 on 3 ranks: per
rank 7 MPI_Send of 512 bytes to the right, 7 MPI_Recv from the left, one MPI_Allreduce of a
double. Where the two differ, the test says who is right."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from conftest import MPIS, ROOT, example, fn, job_env, launcher, mpilens_run

sys.path.insert(0, str(ROOT / "bench"))
from peers import build_mpip, mpip_calls, mpip_rows  # noqa: E402

N, SIZE, NP = 7, 512, 3


def sent_rows(report: str, function: str) -> dict[str, str]:
    """Rank ("0", ..., "*") -> the Sum column, as printed, of mpiP's "Callsite Message Sent
    statistics" for a function."""
    return {f[2]: f[7] for f in mpip_rows(report, "Callsite Message Sent statistics") if len(f) == 8 and f[0] == function}


@pytest.mark.parametrize("mpi", MPIS)
def test_mpip_and_mpilens_count_the_ring(mpi, tmp_path):
    lib = build_mpip(mpi)
    flags = ["-x", f"LD_PRELOAD={lib}", "-x", "MPIP=-k 0"] if mpi == "openmpi" else \
        ["-genv", "LD_PRELOAD", str(lib), "-genv", "MPIP", "-k 0"]
    argv = [str(example(mpi, "ring")), str(N), str(SIZE)]
    p = subprocess.run(launcher(mpi, NP) + flags + argv, env=job_env(), capture_output=True, text=True,
                       cwd=tmp_path, timeout=120)
    assert p.returncode == 0, p.stderr
    (report,) = [f.read_text() for f in tmp_path.glob("*.mpiP")]
    # calls: both exact
    assert (mpip_calls(report, "Send"), mpip_calls(report, "Recv"), mpip_calls(report, "Allreduce")) == (N * NP,) * 2 + (NP,)
    job = mpilens_run(mpi, launcher(mpi, NP) + argv, tmp_path)
    prof = job.profile
    assert fn(prof, "MPI_Send", "calls") == [N] * NP and fn(prof, "MPI_Recv", "calls") == [N] * NP
    assert fn(prof, "MPI_Allreduce", "calls") == [1] * NP
    # bytes: per rank both exact; the total mpiP prints with four significant digits (1.075e+04 for
    # 10,752 bytes), where mpilens keeps every byte
    rows = sent_rows(report, "Send")
    assert [int(rows[str(r)]) for r in range(NP)] == [N * SIZE] * NP
    assert float(rows["*"]) != N * SIZE * NP and re.fullmatch(r"1\.075e\+04", rows["*"]), rows["*"]
    assert sum(fn(prof, "MPI_Send", "bytes_sent")) == N * SIZE * NP


def per_rank(report: str, section: str, function: str, column: int) -> dict[int, float]:
    """Per rank, the sum over call sites of one column of one of mpiP's per-call-site sections."""
    out: dict[int, float] = {}
    for f in mpip_rows(report, section):
        if len(f) > column and f[0] == function and f[2] != "*":
            out[int(f[2])] = out.get(int(f[2]), 0.0) + float(f[column])
    return out


@pytest.mark.mpi
@pytest.mark.apps
def test_mpip_and_mpilens_agree_on_lammps(tmp_path):
    """Debian's LAMMPS (in.indent, 4 ranks, 1000 steps), once under mpiP and once under mpilens (its
    calls are the same from run to run): the same MPI_Send, MPI_Irecv and MPI_Wait calls per rank,
    and the same bytes sent per rank to mpiP's four significant digits."""
    from conftest import lammps_indent

    mpi, args = lammps_indent(tmp_path / "indent", 1000)
    lib = build_mpip(mpi)
    flags = ["-x", f"LD_PRELOAD={lib}", "-x", "MPIP=-k 0"] if mpi == "openmpi" else \
        ["-genv", "LD_PRELOAD", str(lib), "-genv", "MPIP", "-k 0"]
    work = tmp_path / "mpip"
    work.mkdir()
    p = subprocess.run(launcher(mpi, 4) + flags + [*args, "-log", "none"], env=job_env(), capture_output=True,
                       text=True, cwd=work, timeout=300)
    assert p.returncode == 0, p.stderr
    (report,) = [f.read_text() for f in work.glob("*.mpiP")]
    prof = mpilens_run(None, launcher(mpi, 4) + [*args, "-log", "none"], tmp_path).profile
    for name in ("Send", "Irecv", "Wait"):
        calls = per_rank(report, "Callsite Time statistics", name, 3)
        assert [int(calls.get(r, 0)) for r in range(4)] == fn(prof, f"MPI_{name}", "calls"), name
    sent = per_rank(report, "Callsite Message Sent statistics", "Send", 7)
    for r, b in enumerate(fn(prof, "MPI_Send", "bytes_sent")):
        assert abs(sent[r] - b) <= 5e-4 * b, (r, sent[r], b)


@pytest.mark.mpi
def test_caliper_counts_its_own_communicator(tmp_path):
    """Caliper (built from ../shared/peers by bench/peers.py, started in the unmodified program by a
    preloaded library) on the ring: its MPI report has the program's calls, and an MPI_Comm_dup per
    rank the program never made (Caliper's own, for its aggregation). mpilens keeps its own
    communicator out of the application's profile."""
    from peers import build_caliper

    mpi = "openmpi"
    init = build_caliper(mpi)
    argv = [str(example(mpi, "ring")), str(N), str(SIZE)]
    p = subprocess.run(launcher(mpi, NP) + ["-x", f"LD_PRELOAD={init}", "-x", "CALI_CONFIG=mpi-report"] + argv,
                       env=job_env(), capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert p.returncode == 0, p.stderr
    counts = {m.group(1): (int(m.group(2)), int(m.group(3)))
              for m in re.finditer(r"^(MPI_\w+)\s+(\d+)\s+(\d+)\s", p.stdout + p.stderr, re.M)}
    assert counts["MPI_Send"] == (N, N) and counts["MPI_Recv"] == (N, N) and counts["MPI_Allreduce"] == (1, 1)
    assert counts.get("MPI_Comm_dup") == (1, 1), counts  # not the program's
    prof = mpilens_run(mpi, launcher(mpi, NP) + argv, tmp_path).profile
    assert "MPI_Comm_dup" not in prof["functions"] and fn(prof, "MPI_Send", "calls") == [N] * NP


def test_the_sitting_refuses_a_tool_that_measured_nothing(tmp_path):
    """bench/peers.py's sitting checks every tool's run: one whose record does not count the program's
    function stops the sitting (a tool that measured nothing would look free), one that counts it
    passes."""
    import peers
    hop = peers.Measure(["pingpong"], lambda o, c: 0.0, "MPI_Send")
    (tmp_path / "out").mkdir()
    for counted, fails in ((0, True), (2, False)):
        (tmp_path / "out" / "profile.json").write_text(f'{{"functions": {{"MPI_Send": {{"calls": [{counted}, 0]}}}}}}')
        if fails:
            with pytest.raises(peers.BenchError, match="counted no MPI_Send"):
                peers.check(peers.Tool(mpilens="profile"), hop, "", tmp_path, ["x"])
        else:
            peers.check(peers.Tool(mpilens="profile"), hop, "", tmp_path, ["x"])
    with pytest.raises(peers.BenchError, match="Caliper reported no MPI_Send"):
        peers.check(peers.Tool(caliper=True), hop, "MPI_Recv  3\n", tmp_path, ["x"])
    peers.check(peers.Tool(caliper=True), hop, "MPI_Send  3\n", tmp_path, ["x"])
