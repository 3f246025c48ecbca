"""mpilens in one job with the PMPI tools users also run (docs/tools.md): Darshan, which many centres
preload into every job, and mpiP, both built from ../shared/peers by bench/peers.py. Each tool must
see every call of the program, checked against what the program does, read by the tool's own reader
(darshan-parser, mpiP's report) and by mpilens.

examples/c/iofile on P ranks writes, per rank, 4 MPI_File_write_at of 256 bytes, one
MPI_File_write_at_all of 4096, one MPI_File_write and one MPI_File_iwrite of 1024 into shared.dat,
reads back 4096 (MPI_File_read_at_all) and 256 (MPI_File_read_at); rank 0 also writes rank0.dat with
3 MPI_File_write of 100 bytes. So Darshan's MPI-IO module must find 7168 * P bytes written to and
4352 * P read from shared.dat, 5 * P independent writes (its count leaves out the nonblocking one),
and 300 bytes written to rank0.dat."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import BUILD, MPILENS, MPIS, ROOT, example, fn, job_env, lammps_indent, launcher, mpilens_run

sys.path.insert(0, str(ROOT / "bench"))
from peers import build_darshan, build_mpip, mpip_calls  # noqa: E402
from test_peers import per_rank  # noqa: E402

P = 2


def darshan_mpiio(parser: Path, logs: Path) -> dict[tuple[str, str], int]:
    """(counter, file name) -> value, summed over records, of the MPI-IO module of the one log in logs."""
    (log,) = logs.glob("*.darshan")
    out = subprocess.run([str(parser), str(log)], capture_output=True, text=True, check=True).stdout
    values: dict[tuple[str, str], int] = {}
    for line in out.splitlines():
        f = line.split("\t")
        if len(f) >= 6 and f[0] == "MPI-IO" and f[3].startswith("MPIIO_"):
            key = (f[3], Path(f[5]).name)
            values[key] = values.get(key, 0) + int(float(f[4]))
    return values


def check_darshan(home: Path, logs: Path) -> None:
    v = darshan_mpiio(home / "bin" / "darshan-parser", logs)
    assert v[("MPIIO_BYTES_WRITTEN", "shared.dat")] == 7168 * P
    assert v[("MPIIO_BYTES_READ", "shared.dat")] == 4352 * P
    assert v[("MPIIO_INDEP_WRITES", "shared.dat")] == 5 * P
    assert v[("MPIIO_COLL_WRITES", "shared.dat")] == P
    assert v[("MPIIO_BYTES_WRITTEN", "rank0.dat")] == 300


def check_program_calls(prof: dict) -> None:
    """The program's MPI-IO calls in the profile, exactly (iofile.c)."""
    assert fn(prof, "MPI_File_write", "calls") == [4] + [1] * (P - 1)
    assert fn(prof, "MPI_File_iwrite", "calls") == [1] * P
    read_at = [a + b for a, b in zip(fn(prof, "MPI_File_read_at", "calls"), fn(prof, "MPI_File_read_at_c", "calls"))]
    assert read_at == [1] * P  # MPI_File_read_at_c on an MPI 4 library (iofile.c)
    assert fn(prof, "MPI_File_read_at_all", "calls") == [1] * P
    assert sum(fn(prof, "MPI_File_write", "bytes_sent")) == 1024 * P + 300
    assert fn(prof, "MPI_File_write_at", "calls") == [4] * P
    assert fn(prof, "MPI_File_write_at_all", "calls") == [1] * P


def darshan_env(logs: Path) -> dict[str, str]:
    logs.mkdir()
    env = job_env()
    env["DARSHAN_LOGPATH"] = str(logs)
    env.pop("DARSHAN_ENABLE_NONMPI", None)  # only the MPI job writes a log
    return env


def preload_option(mpi: str, value: str) -> list[str]:
    return ["-x", f"LD_PRELOAD={value}"] if mpi == "openmpi" else ["-genv", "LD_PRELOAD", value]


@pytest.mark.parametrize("mpi", MPIS)
@pytest.mark.parametrize("how", ["environment", "launcher"])
def test_darshan_and_mpilens_both_see_every_call(mpi, how, tmp_path):
    """The user preloads Darshan (in the environment of `mpilens run`, or through the launcher's own
    option) and runs the job under `mpilens run`: the runtime goes first, measures every call and
    passes it on to Darshan, whose log has every byte; mpilens' own calls (its exchange at MPI_Init,
    its merge at MPI_Finalize) reach neither Darshan nor the profile."""
    home = build_darshan(mpi)
    lib = str(home / "lib" / "libdarshan.so")
    env = darshan_env(tmp_path / "logs")
    (tmp_path / "io").mkdir()
    argv = [str(example(mpi, "iofile")), str(tmp_path / "io")]
    if how == "environment":
        env["LD_PRELOAD"] = lib
        cmd = launcher(mpi, P) + argv
    else:
        cmd = launcher(mpi, P) + preload_option(mpi, lib) + argv
    job = mpilens_run(mpi, cmd, tmp_path, env=env)
    check_darshan(home, tmp_path / "logs")
    check_program_calls(job.profile)
    meta = json.loads((job.rundir / "meta.json").read_text())
    (tool,) = meta["tools"]
    assert Path(tool["object"]).name == "libdarshan.so" and tool["position"] == "after"
    assert {"MPI_File_write_at_all", "MPI_File_open", "MPI_Init"} <= set(tool["functions"])
    report = subprocess.run([str(MPILENS), "report", str(job.rundir)],
                            capture_output=True, text=True, check=True).stdout
    assert "libdarshan.so was loaded after mpilens" in report


@pytest.mark.parametrize("mpi", MPIS)
def test_darshan_loaded_before_mpilens(mpi, tmp_path):
    """Preloaded by hand with Darshan first: Darshan's MPI_Init and MPI-IO wrappers call PMPI_, which
    reach the runtime's PMPI entries; mpilens still starts, and measures every call of the program
    exactly. Darshan's own calls are left out: its log, written at MPI_Finalize with
    MPI_File_write_at_all through its own wrapper, and the MPI_Info_* and MPI_File_get_position calls
    it makes for its records, straight into the runtime's wrappers."""
    home = build_darshan(mpi)
    env = darshan_env(tmp_path / "logs")
    (tmp_path / "io").mkdir()
    out = tmp_path / "run"
    preload = f"{home / 'lib' / 'libdarshan.so'}:{BUILD / 'lib' / f'libmpilens-{mpi}.so'}"
    cmd = launcher(mpi, P) + preload_option(mpi, preload) + (
        ["-x", f"MPILENS_OUTPUT={out}"] if mpi == "openmpi" else ["-genv", "MPILENS_OUTPUT", str(out)]) + [
        str(example(mpi, "iofile")), str(tmp_path / "io")]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    check_darshan(home, tmp_path / "logs")
    prof = json.loads((out / "profile.json").read_text())
    assert prof["complete"] and prof["nranks"] == P  # started at Darshan's PMPI_Init, merged at its PMPI_Finalize
    check_program_calls(prof)
    assert not {"MPI_Info_create", "MPI_Info_set", "MPI_Info_free", "MPI_File_get_position"} & set(prof["functions"])
    (tool,) = json.loads((out / "meta.json").read_text())["tools"]
    assert tool["position"] == "before" and "MPI_File_write_at_all" in tool["functions"]
    report = subprocess.run([str(MPILENS), "report", str(out)],
                            capture_output=True, text=True, check=True).stdout
    assert "libdarshan.so was loaded before mpilens" in report and "its own calls left out" in report


@pytest.mark.parametrize("mpi", MPIS)
def test_mpip_after_mpilens_counts_the_program_alone(mpi, tmp_path):
    """mpiP through the launcher's preload option, under `mpilens run`: both tools count the ring's
    calls exactly. mpiP sees no call of mpilens' own (its MPI_Init exchange and the merge at
    MPI_Finalize gather over MPI_COMM_WORLD), and mpilens none of mpiP's (its report is gathered
    with PMPI_ calls at MPI_Finalize)."""
    n, size, np_ = 7, 512, 3
    lib = build_mpip(mpi)
    opts = preload_option(mpi, str(lib)) + (["-x", "MPIP=-k 0"] if mpi == "openmpi" else ["-genv", "MPIP", "-k 0"])
    out = tmp_path / "run"
    p = subprocess.run([str(MPILENS), "run", "-o", str(out), "--", *launcher(mpi, np_), *opts, str(example(mpi, "ring")),
                        str(n), str(size)], env=job_env(), capture_output=True, text=True, timeout=120,
                       cwd=tmp_path)  # mpiP writes its report into the working directory
    assert p.returncode == 0, p.stderr
    (report,) = [f.read_text() for f in tmp_path.glob("*.mpiP")]
    assert (mpip_calls(report, "Send"), mpip_calls(report, "Recv"), mpip_calls(report, "Allreduce")) == \
        (n * np_, n * np_, np_)
    for name in ("Gather", "Allgather", "Bcast", "Gatherv", "Reduce"):
        assert mpip_calls(report, name) == 0, name  # none of mpilens' own
    prof = json.loads((out / "profile.json").read_text())
    assert fn(prof, "MPI_Send", "calls") == [n] * np_ and fn(prof, "MPI_Recv", "calls") == [n] * np_
    assert fn(prof, "MPI_Allreduce", "calls") == [1] * np_
    assert set(prof["functions"]) <= {"MPI_Init", "MPI_Finalize", "MPI_Comm_rank", "MPI_Comm_size", "MPI_Send",
                                      "MPI_Recv", "MPI_Allreduce", "MPI_Pcontrol"}, set(prof["functions"])


@pytest.mark.mpi
@pytest.mark.apps
def test_mpilens_and_mpip_in_one_lammps_job(tmp_path):
    """Debian's LAMMPS (in.indent, 4 ranks, 1000 steps) under `mpilens run` with mpiP preloaded through the
    launcher: in the same job, both see the same MPI_Send, MPI_Irecv and MPI_Wait calls per rank, and the
    same bytes sent per rank to mpiP's four significant digits; mpiP's report (its own reader) is the
    oracle."""
    mpi, args = lammps_indent(tmp_path / "indent", 1000)
    opts = preload_option(mpi, str(build_mpip(mpi))) + (["-x", "MPIP=-k 0"] if mpi == "openmpi" else
                                                         ["-genv", "MPIP", "-k 0"])
    work = tmp_path / "work"
    work.mkdir()
    out = tmp_path / "run"
    p = subprocess.run([str(MPILENS), "run", "-o", str(out), "--", *launcher(mpi, 4), *opts, *args, "-log", "none"],
                       env=job_env(), capture_output=True, text=True, timeout=300, cwd=work)
    assert p.returncode == 0, p.stderr
    (report,) = [f.read_text() for f in work.glob("*.mpiP")]
    prof = json.loads((out / "profile.json").read_text())
    for name in ("Send", "Irecv", "Wait"):
        calls = per_rank(report, "Callsite Time statistics", name, 3)
        assert [int(calls.get(r, 0)) for r in range(4)] == fn(prof, f"MPI_{name}", "calls"), name
        assert sum(calls.values()) > 1000, name  # LAMMPS communicates every step
    sent = per_rank(report, "Callsite Message Sent statistics", "Send", 7)
    for r, b in enumerate(fn(prof, "MPI_Send", "bytes_sent")):
        assert abs(sent[r] - b) <= 5e-4 * b, (r, sent[r], b)
    (tool,) = json.loads((out / "meta.json").read_text())["tools"]
    assert tool["position"] == "after" and {"MPI_Send", "MPI_Irecv", "MPI_Wait"} <= set(tool["functions"])


@pytest.mark.parametrize("mpi", MPIS)
def test_mpip_loaded_before_mpilens(mpi, tmp_path):
    """mpiP preloaded by hand before the runtime: its wrappers pass each call on through a helper that
    calls PMPI_, which the runtime's entries measure; mpiP's own calls (its report, gathered at
    MPI_Finalize with PMPI_ calls) are left out. Both count the ring exactly."""
    n, size, np_ = 7, 512, 3
    out = tmp_path / "run"
    preload = f"{build_mpip(mpi)}:{BUILD / 'lib' / f'libmpilens-{mpi}.so'}"
    opts = (["-x", f"LD_PRELOAD={preload}", "-x", "MPIP=-k 0", "-x", f"MPILENS_OUTPUT={out}"] if mpi == "openmpi" else
            ["-genv", "LD_PRELOAD", preload, "-genv", "MPIP", "-k 0", "-genv", "MPILENS_OUTPUT", str(out)])
    p = subprocess.run(launcher(mpi, np_) + opts + [str(example(mpi, "ring")), str(n), str(size)], env=job_env(),
                       capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    (report,) = [f.read_text() for f in tmp_path.glob("*.mpiP")]
    assert (mpip_calls(report, "Send"), mpip_calls(report, "Recv"), mpip_calls(report, "Allreduce")) == \
        (n * np_, n * np_, np_)
    prof = json.loads((out / "profile.json").read_text())
    assert fn(prof, "MPI_Send", "calls") == [n] * np_ and fn(prof, "MPI_Recv", "calls") == [n] * np_
    assert fn(prof, "MPI_Allreduce", "calls") == [1] * np_
    assert sum(fn(prof, "MPI_Send", "bytes_sent")) == n * size * np_
    assert set(prof["functions"]) <= {"MPI_Comm_rank", "MPI_Comm_size", "MPI_Send", "MPI_Recv", "MPI_Allreduce"}, \
        set(prof["functions"])
    (tool,) = json.loads((out / "meta.json").read_text())["tools"]
    assert tool["position"] == "before" and Path(tool["object"]).name == "libmpiP.so"


@pytest.mark.parametrize("mpi", MPIS)
def test_request_completed_with_call_sites_off(mpi, tmp_path):
    """A request started by a general-path wrapper (MPI_File_iwrite) and completed on the lean path
    (MPI_Wait) with call sites off (MPILENS_CALLSITE_DEPTH=0): its bytes are counted, and the job does
    not crash (the entry had no call site, which the lean completion added bytes to)."""
    (tmp_path / "io").mkdir()
    job = mpilens_run(mpi, launcher(mpi, P) + [str(example(mpi, "iofile")), str(tmp_path / "io")], tmp_path,
                      settings={"MPILENS_CALLSITE_DEPTH": "0"})
    prof = job.profile
    assert fn(prof, "MPI_File_iwrite", "bytes_sent") == [1024] * P
    assert fn(prof, "MPI_Wait", "calls") == [1] * P
    assert os.path.isfile(job.rundir / "profile.json")


@pytest.mark.parametrize("kind,argv,expected", [
    ("openmpi", ["mpirun", "-x", "LD_PRELOAD=/d.so", "-np", "2", "a"],
     ["mpirun", "-x", "LD_PRELOAD=/ml.so:/d.so", "-np", "2", "a"]),
    ("openmpi", ["mpirun", "-x", "LD_PRELOAD", "a"], ["mpirun", "-x", "LD_PRELOAD=/ml.so:/env.so", "a"]),
    ("openmpi", ["mpirun", "-x", "OTHER=1", "a"], None),
    ("mpich", ["mpiexec", "-genv", "LD_PRELOAD", "/d.so", "-n", "2", "a"],
     ["mpiexec", "-genv", "LD_PRELOAD", "/ml.so:/d.so", "-n", "2", "a"]),
    ("mpich", ["mpiexec", "-n", "1", "-env", "LD_PRELOAD", "/d.so", "a"],
     ["mpiexec", "-n", "1", "-env", "LD_PRELOAD", "/ml.so:/d.so", "a"]),
    ("srun", ["srun", "--export=ALL,LD_PRELOAD=/d.so", "a"], ["srun", "--export=ALL,LD_PRELOAD=/ml.so:/d.so", "a"]),
    ("mpich", ["mpiexec", "-x", "LD_PRELOAD=/d.so", "a"], None),  # not Hydra's option: left alone
])
def test_the_runtime_goes_first_in_the_launchers_preload(kind, argv, expected):
    """`mpilens run` puts the runtime first in an LD_PRELOAD set by the launcher's own option (the
    user's value would replace the runtime's); other options are left as they are."""
    from mpilens import launch

    out, found = launch.merge_preload(argv, kind, "/ml.so", "/env.so")
    assert (out, found) == ((expected, True) if expected else (argv, False))


@pytest.mark.parametrize("command,expected", [
    (["mpirun", "-np", "2", "a.out"], (["mpirun", "-np", "2", "a.out"], {})),
    (["env", "LD_LIBRARY_PATH=/x/lib", "PATH=/x/bin:/usr/bin", "mpiexec", "-np", "2", "a.out"],
     (["mpiexec", "-np", "2", "a.out"], {"LD_LIBRARY_PATH": "/x/lib", "PATH": "/x/bin:/usr/bin"})),
    (["/usr/bin/env", "A=1=2", "--", "B=3", "a.out"], (["B=3", "a.out"], {"A": "1=2"})),
    (["env", "mpirun", "a.out"], (["mpirun", "a.out"], {})),
])
def test_an_env_prefix_sets_the_jobs_environment(command, expected):
    """`env NAME=VALUE ... LAUNCHER ...` (one side of `mpilens repeat` on another MPI): the assignments
    become the job's environment, in which mpilens also finds the launcher and the program's MPI."""
    from mpilens import launch

    assert launch.split_env_prefix(command) == expected


@pytest.mark.parametrize("command,why", [
    (["env", "-i", "mpirun", "a.out"], "env -i: mpilens run takes only NAME=VALUE assignments"),
    (["env", "A-B=1", "mpirun"], "'A-B' is not an environment variable's name"),
    (["env", "A=1"], "env with no command after its assignments"),
])
def test_an_env_prefix_that_does_more_is_refused(command, why):
    from mpilens import launch
    from mpilens.errors import LaunchError

    with pytest.raises(LaunchError, match=re.escape(why)):
        launch.split_env_prefix(command)


@pytest.mark.mpi
@pytest.mark.matrix
def test_a_users_preload_through_every_launcher(tmp_path):
    """A library of the user's own, preloaded through the launcher's option, and the runtime both load in
    every rank, on every MPI of the matrix (Open MPI's -x, Hydra's -genv for MPICH and Intel MPI): the
    library marks each process it loads in, and the profile is exact."""
    from conftest import MATRIX, matrix_env

    shim = tmp_path / "libmark.so"
    src = tmp_path / "mark.c"
    src.write_text('#include <stdio.h>\n#include <stdlib.h>\n#include <unistd.h>\n'
                   '__attribute__((constructor)) static void mark(void) {\n'
                   '    const char *d = getenv("MARK_DIR"); if (!d) return;\n'
                   '    char p[4096]; snprintf(p, sizeof p, "%s/%d", d, (int)getpid());\n'
                   '    FILE *f = fopen(p, "w"); if (f) fclose(f);\n}\n')
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(shim), str(src)], check=True)
    for mpi in [*MPIS, *(m for m in MATRIX if not MATRIX[m].get("portability"))]:
        marks = tmp_path / f"marks-{mpi}"
        marks.mkdir()
        env = (matrix_env(mpi) if mpi in MATRIX else job_env())
        env = dict(env, MARK_DIR=str(marks))
        family = MATRIX[mpi]["family"] if mpi in MATRIX else mpi
        opt = ["-x", f"LD_PRELOAD={shim}", "-x", "MARK_DIR"] if family == "openmpi" else \
            ["-genv", "LD_PRELOAD", str(shim)]
        job = mpilens_run(mpi, launcher(mpi, 2) + opt + [str(example(mpi, "ring")), "3", "64"], tmp_path / mpi,
                          env=env)
        assert fn(job.profile, "MPI_Send", "calls") == [3, 3], mpi
        assert len(list(marks.iterdir())) == 2, mpi  # the two ranks
