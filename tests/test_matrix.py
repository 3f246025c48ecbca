"""Every MPI of the matrix: the runtime links no MPI, binds to the one the job really loads, and
says which it was.

Oracles: the ELF headers of the runtime libraries (readelf, nm), the library the dynamic loader
resolves for the program (ldd, with the MPI's own environment), the MPI's own version string as
the program prints it, the venv's files on disk for mpi4py, and the byte counts the programs send.
"""

from __future__ import annotations

import json
import os
import re
import subprocess

import pytest

from conftest import (
    BUILD,
    MATRIX,
    MPILENS,
    ROOT,
    example,
    job_env,
    launcher,
    matrix_env,
    matrix_params,
    matrix_prefix,
    mpilens_run,
    repeat_and_compare,
    trace_calls,
)
from mpilens import counters_spc, memory, rundir

FAMILIES = ["openmpi", "mpich"]


# ------------------------------------------------------------------------------ the runtime itself
@pytest.mark.parametrize("family", FAMILIES)
def test_runtime_links_no_mpi(family):
    """No DT_NEEDED on an MPI library and no undefined MPI symbol: everything of the MPI is bound at
    run time (runtime/src/core/binding.c), so one build serves every version of its family."""
    lib = BUILD / "lib" / f"libmpilens-{family}.so"
    dyn = subprocess.run(["readelf", "-d", str(lib)], capture_output=True, text=True, check=True).stdout
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]", dyn)
    assert needed, dyn
    assert not [n for n in needed if re.match(r"lib(mpi|mpich|pmpi|open-)", n)], needed
    undef = subprocess.run(["nm", "-D", "--undefined-only", str(lib)], capture_output=True, text=True,
                           check=True).stdout.split("\n")
    mpi_symbols = [line.split()[-1] for line in undef
                   if line.strip() and re.match(r"(P?MPI_|ompi_|MPIR_|pmpi_)", line.split()[-1])]
    assert mpi_symbols == [], mpi_symbols


@pytest.mark.parametrize("family", FAMILIES)
def test_runtime_does_not_answer_the_mpi_probe(family):
    """mpi4py looks MPI_Get_version up in the global scope to tell whether an MPI is loaded; the
    preloaded runtime must not answer in the MPI's stead (mpi4py would then pick the wrong ABI)."""
    lib = BUILD / "lib" / f"libmpilens-{family}.so"
    defined = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True, text=True,
                             check=True).stdout.split()
    assert "MPI_Send" in defined and "MPI_Init" in defined
    assert "MPI_Get_version" not in defined


# ------------------------------------------------------------------------------ jobs on every MPI
def env_of(mpi: str) -> dict[str, str] | None:
    return matrix_env(mpi) if mpi in MATRIX else None


def loaded_library(program: str, env: dict[str, str] | None) -> str:
    """The MPI library the dynamic loader gives the program, by ldd with the job's environment."""
    out = subprocess.run(["ldd", program], capture_output=True, text=True, env=env, check=True).stdout
    m = re.search(r"^\s*(?:libmpi|libmpich|libmpi_abi)\.so\.\d+\s+=>\s+(\S+)", out, re.M)
    assert m, out
    return os.path.realpath(m.group(1))


@pytest.mark.parametrize("mpi", matrix_params(every=True))
def test_meta_names_the_mpi_the_job_ran_on(mpi, tmp_path):
    exe = str(example(mpi, "ring"))
    job = mpilens_run(mpi, [*launcher(mpi, 2), exe], tmp_path)
    assert "ring: 10 messages of 1024 bytes" in job.stdout
    run = job.load()
    assert os.path.realpath(run.meta["mpi"]["path"]) == loaded_library(exe, env_of(mpi))
    p = job.profile
    assert p["functions"]["MPI_Send"]["bytes_sent"] == [10 * 1024, 10 * 1024]
    if mpi in MATRIX:
        version = re.search(r"==(\S+)", MATRIX[mpi]["packages"][0]).group(1)
        assert version in run.meta["mpi"]["library"], (version, run.meta["mpi"]["library"])


def library_defines(lib: str, symbol: str) -> bool:
    out = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True, check=True).stdout
    return re.search(rf"\s{symbol}$", out, re.M) is not None


PROBED = ["MPI_Isendrecv", "MPI_Send_c", "MPI_Status_get_source"]


@pytest.mark.parametrize("mpi", matrix_params(every=True))
def test_weak_probes_see_what_the_mpi_has(mpi, tmp_path):
    """A program probing for functions with weak references (mpi4py's wheels do, for everything
    newer than MPI-3.1) sees under mpilens exactly what its MPI library defines, also for functions
    newer than the header the runtime was built with; those its MPI has are measured where the
    runtime wraps them, and named as calls past mpilens where it does not."""
    exe = str(example(mpi, "weak_probe"))
    lib = loaded_library(exe, env_of(mpi))
    has = {f: library_defines(lib, "P" + f) for f in PROBED}
    runtime = str(BUILD / "lib" / f"libmpilens-{MATRIX[mpi]['family'] if mpi in MATRIX else mpi}.so")
    wraps = {f: library_defines(runtime, f) for f in PROBED}
    plain = subprocess.run([*launcher(mpi, 2), exe], capture_output=True, text=True, timeout=120,
                           env=matrix_env(mpi) if mpi in MATRIX else job_env())
    assert plain.returncode == 0, plain.stderr
    job = mpilens_run(mpi, [*launcher(mpi, 2), exe], tmp_path)
    for out in (plain.stdout, job.stdout):
        for rank in (0, 1):
            line = re.search(rf"weak_probe: rank {rank} (.*)", out)
            assert line, out
            assert dict(kv.split("=") for kv in line.group(1).split()) == {f: str(int(h)) for f, h in has.items()}
        assert "weak_probe: source 0" in out
    p = job.profile
    past = {u["name"] for u in job.load().unmeasured}
    for f in PROBED:
        if not has[f] or not wraps[f]:
            assert f not in p["functions"], f
        assert (f in past) == (has[f] and not wraps[f]), (f, past)
    if has["MPI_Isendrecv"]:
        assert p["functions"]["MPI_Isendrecv"]["calls"] == [1, 1]
        assert p["functions"]["MPI_Isendrecv"]["bytes_sent"] == [100, 200]
    send = "MPI_Send_c" if has["MPI_Send_c"] else "MPI_Send"
    assert p["functions"][send]["bytes_sent"] == [24, 0]
    if has["MPI_Status_get_source"] and wraps["MPI_Status_get_source"]:
        assert p["functions"]["MPI_Status_get_source"]["calls"] == [0, 1]


@pytest.mark.parametrize("mpi", matrix_params())  # Intel's standard-ABI library aborts on every case
def test_erroneous_calls_return_what_the_mpi_returns(mpi, tmp_path):
    """Calls with erroneous arguments (NULL request pointers and arrays, negative counts, null
    datatypes and operations, ranks, tags and roots out of range) under MPI_ERRORS_RETURN: the
    error class each call returns under mpilens is the one the MPI returns without it (the oracle:
    the same program run plainly), and the process lives on to a measured correct exchange."""
    exe = str(example(mpi, "erroneous"))
    order = re.findall(r'CASE\("([^"]+)"', (ROOT / "examples" / "c" / "erroneous.c").read_text())
    skip: list[str] = []  # cases this MPI answers by aborting (MPICH 5's wheel asserts, Intel MPI aborts)
    for _ in range(len(order)):
        plain = subprocess.run([*launcher(mpi, 2), exe, *skip], capture_output=True, text=True, timeout=120,
                               env=matrix_env(mpi) if mpi in MATRIX else job_env())
        if plain.returncode == 0:
            break
        done = {m[1] for m in re.finditer(r"rank \d+: (.*?)\s+-?\d+$", plain.stdout, re.M)}
        skip.append(next(c for c in order if c not in done and c not in skip))
    assert plain.returncode == 0, plain.stderr
    lines = sorted(plain.stdout.splitlines())
    # the standard-ABI library checks less: MPICH 5's aborts on the NULL arrays
    assert (len(skip) <= 3 or mpi.endswith("abi")) and all(not ln.endswith(" 0") for ln in lines
                                                            if "Sendrecv" not in ln), (skip, lines)
    job = mpilens_run(mpi, [*launcher(mpi, 2), exe, *skip], tmp_path)
    assert sorted(job.stdout.splitlines()) == lines
    assert job.profile["functions"]["MPI_Sendrecv"]["calls"] == [1, 1]
    assert job.profile["functions"]["MPI_Sendrecv"]["bytes_sent"] == [4, 4]


@pytest.mark.parametrize("mpi", matrix_params(every=True))
def test_calls_past_the_runtime_are_named(mpi, tmp_path):
    """Nothing silently missing: a program calling an extension of its MPI (MPIX_Query_cuda_support)
    and the profiling interface directly (PMPI_Barrier) is told so by `mpilens run`, and the report
    (text, JSON, HTML) names both; the MPI_Barrier it calls is measured, the PMPI_Barrier is not.
    Oracles: what the program says it called, and the runtime's dynamic symbols (nm)."""
    exe = str(example(mpi, "unwrapped"))
    job = mpilens_run(mpi, [*launcher(mpi, 2), exe], tmp_path)
    called = re.search(r"unwrapped: called (.*), then (MPI_Barrier)", job.stdout)
    assert called, job.stdout
    past = sorted(called.group(1).split())
    runtime = BUILD / "lib" / f"libmpilens-{MATRIX[mpi]['family'] if mpi in MATRIX else mpi}.so"
    exports = subprocess.run(["nm", "-D", "--defined-only", str(runtime)], capture_output=True, text=True,
                             check=True).stdout.split()
    # the runtime exports PMPI_ entries too (runtime/gen/binding.py), which pass a call like this one
    # straight on to the MPI: MPI_Barrier's one count per rank below says the PMPI_Barrier was not measured
    assert called.group(2) in exports and not {p for p in past if not p.startswith("PMPI_")} & set(exports)
    n = f"{len(past)} MPI function{'s' if len(past) > 1 else ''}"
    assert f"not measured ({n} the program or its libraries call past mpilens): {', '.join(past)}" in job.stderr
    doc = json.loads((job.rundir / "imports.json").read_text())
    mine = [o for o in doc["objects"] if o["path"] == exe]
    assert len(mine) == 1 and sorted(u["name"] for u in mine[0]["unmeasured"]) == past
    assert job.profile["functions"]["MPI_Barrier"]["calls"] == [1, 1]
    assert "PMPI_Barrier" not in job.profile["functions"]
    text = subprocess.run([str(MPILENS), "report", str(job.rundir), "--quiet"], capture_output=True, text=True)
    assert f"Not measured: {', '.join(past)} (called by unwrapped)" in text.stdout, text.stdout
    js = json.loads(subprocess.run([str(MPILENS), "report", str(job.rundir), "--json", "--quiet"],
                                   capture_output=True, text=True).stdout)
    assert sorted(u["name"] for u in js["unmeasured_functions"]) == past
    html = tmp_path / "r.html"
    subprocess.run([str(MPILENS), "report", str(job.rundir), "--html", str(html), "--quiet"], check=True,
                   capture_output=True)
    assert f"Not measured: {', '.join(past)} (called by unwrapped)" in html.read_text()


MPI4PY_PROGRAM = """
from mpi4py import MPI
N, SIZE = 6, 3000
comm = MPI.COMM_WORLD
buf = bytearray(SIZE)
for i in range(N):
    if comm.rank == 0:
        comm.Send([buf, MPI.BYTE], dest=1, tag=i)
    elif comm.rank == 1:
        comm.Recv([buf, MPI.BYTE], source=0, tag=i)
print("mpi4py done", MPI.Get_library_version().splitlines()[0])
"""


@pytest.mark.matrix
@pytest.mark.parametrize("mpi", list(MATRIX))
def test_mpi4py_binds_to_the_venvs_mpi(mpi, tmp_path):
    """mpi4py's wheels open the MPI of their venv themselves (dlopen, RTLD_LOCAL): the runtime binds
    to that library, not to one of Debian's, and measures the traffic exactly."""
    prefix = matrix_prefix(mpi)
    script = tmp_path / "p2p.py"
    script.write_text(MPI4PY_PROGRAM)
    job = mpilens_run(mpi, [*launcher(mpi, 2), str(prefix / "bin" / "python"), str(script)], tmp_path)
    assert job.stdout.count("mpi4py done") == 2, job.stdout
    path = os.path.realpath(job.load().meta["mpi"]["path"])
    assert path.startswith(os.path.realpath(prefix) + "/"), path
    p = job.profile
    send = p["functions"].get("MPI_Send") or p["functions"]["MPI_Send_c"]
    recv = p["functions"].get("MPI_Recv") or p["functions"]["MPI_Recv_c"]
    assert send["bytes_sent"] == [6 * 3000, 0]
    assert recv["bytes_recv"] == [0, 6 * 3000]


FORTRAN_RING = """
program fring
  implicit none
  include 'mpif.h'
  integer :: ierr, rank, total
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Allreduce(rank, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(a,i0)', 'fring sum ', total
  call MPI_Finalize(ierr)
end program
"""


@pytest.mark.matrix
def test_intel_fortran_runs_quietly_and_measured(tmp_path):
    """Intel MPI's Fortran library is bound at load time (BIND_NOW) and calls the MPI_ C functions:
    a Fortran program built with its mpif90 (mpif.h) runs under mpilens without a word from the
    dynamic linker (an ifunc among the runtime's exports would make glibc print a "Relink" line per
    function), and its calls are measured."""
    src = tmp_path / "fring.f90"
    src.write_text(FORTRAN_RING)
    exe = tmp_path / "fring"
    env = matrix_env("impi")
    fortran = subprocess.run([str(matrix_prefix("impi") / "bin" / "mpif90"), "-o", str(exe), str(src)], env=env,
                             capture_output=True, text=True)
    assert fortran.returncode == 0, fortran.stderr
    dyn = subprocess.run(["readelf", "-d", str(loaded_library(str(exe), env).replace("libmpi.so", "libmpifort.so"))],
                         capture_output=True, text=True).stdout
    assert "NOW" in dyn, "Intel MPI's Fortran library is no longer bound at load time: this test tests nothing"
    job = mpilens_run("impi", [*launcher("impi", 2), str(exe)], tmp_path)
    assert "fring sum 1" in job.stdout
    assert "Relink" not in job.stderr and "IFUNC" not in job.stderr, job.stderr
    assert job.profile["functions"]["MPI_Allreduce"]["calls"] == [1, 1]


# mpi4py's tests of communication: point-to-point (buffers and objects), collectives (blocking,
# nonblocking, persistent), RMA, requests, statuses, partitioned
MPI4PY_SUITE = r"test_(p2p_buf|p2p_obj|cco_buf|cco_nb_buf|cco_pr_buf|rma|request|status|part)"


def unittest_result(out: str) -> tuple[str, str]:
    """("Ran N tests", "OK (skipped=K)" or "FAILED (...)") of unittest's summary, the same on each rank."""
    ran = set(re.findall(r"^(Ran \d+ tests?) in", out, re.M))
    verdict = set(re.findall(r"^((?:OK|FAILED)\b.*)$", out, re.M))
    assert len(ran) == 1 and len(verdict) == 1, out[-3000:]
    return ran.pop(), verdict.pop()


@pytest.mark.apps
@pytest.mark.matrix
@pytest.mark.parametrize("mpi", ["openmpi5"])  # the runtime with ifunc exports (MPICH's has none)
def test_mpi4py_own_tests_pass_under_mpilens(mpi, tmp_path):
    """mpi4py's own tests of communication (about 600 on 2 ranks, from its source distribution)
    gives under mpilens what it gives without: as many tests run, as many skipped (mpi4py skips what
    its MPI lacks, found with weak symbols: the runtime's wrappers of functions newer than its
    header must not make it think otherwise), none failing; and the run is measured."""
    suite = BUILD / "mpis" / "mpi4py-tests"
    if not (suite / "runtests.py").exists():
        pytest.fail(f"{suite} is missing: run `make mpis`")
    argv = [*launcher(mpi, 2), str(matrix_prefix(mpi) / "bin" / "python"), str(suite / "runtests.py"), "-q",
            "-i", MPI4PY_SUITE]
    plain = subprocess.run(argv, env=matrix_env(mpi), capture_output=True, text=True, timeout=600)
    assert plain.returncode == 0, plain.stderr[-3000:]
    ran, verdict = unittest_result(plain.stderr + plain.stdout)
    assert verdict.startswith("OK"), verdict
    job = mpilens_run(mpi, argv, tmp_path, timeout=600)
    assert unittest_result(job.stderr + job.stdout) == (ran, verdict)
    p = job.profile
    assert p["nranks"] == 2
    assert sum(f["calls"][0] for f in p["functions"].values()) > 10000
    for fn in ("MPI_Win_create", "MPI_Ibcast", "MPI_Sendrecv"):  # or their large-count forms
        assert sum(f["calls"][0] for name, f in p["functions"].items() if name in (fn, fn + "_c")) > 0, fn


@pytest.mark.matrix
@pytest.mark.parametrize("mpi,cvar,old,new", [
    ("openmpi5", "coll_tuned_priority", "30", "31"),
    ("mpich5", "MPIR_CVAR_POLLS_BEFORE_YIELD", "1000", "1001"),
])
def test_mpit_mode_and_cvars_on_todays_mpis(mpi, cvar, old, new, tmp_path):
    """mpit mode with a cvar set: Open MPI 5 crashed in MPI_Init when MPI_T was opened and closed
    before it; the runtime now checks the cvars in a child process and opens MPI_T after MPI_Init.
    The old value is the MPI's documented default, the new one what the job ran with."""
    exe = str(example(mpi, "ring"))
    job = mpilens_run(mpi, [*launcher(mpi, 2), exe], tmp_path,
                      settings={"MPILENS_MODE": "mpit", "MPILENS_CVARS": f"{cvar}={new}"})
    assert "ring: 10 messages of 1024 bytes" in job.stdout
    meta = job.load().meta
    (c,) = [c for c in meta["cvars_set"] if c["name"] == cvar]
    assert (c["old"], c["new"]) == (old, new)
    assert job.profile["functions"]["MPI_Send"]["bytes_sent"] == [10 * 1024, 10 * 1024]
    assert any((job.rundir / "mpit").iterdir())


@pytest.mark.matrix
@pytest.mark.parametrize("mpi,cvar,default,new", [
    ("openmpi5", "btl_sm_eager_limit", "4096", "8192"),  # Open MPI 5's shared memory (4.1: btl_vader_*)
    ("mpich5", "MPIR_CVAR_ALLGATHER_RECEXCH_KVAL", "2", "4"),  # not in MPICH 4.0
])
def test_cvars_are_checked_and_listed_by_the_jobs_own_mpi(mpi, cvar, default, new, tmp_path):
    """A cvar only today's MPI has: `mpilens run` checks it with the job's MPI library (the helper
    built with Debian's MPI of the family refused it), the job runs with it, and `mpilens mpit list
    --program` lists the job's MPI's variables (with the default its MPI_T reports) where `--mpi`
    lists the helper's own MPI's."""
    exe = str(example(mpi, "ring"))
    env = matrix_env(mpi)
    listed = subprocess.run([str(MPILENS), "mpit", "list", "--program", exe, "--match", f"^{cvar}$", "--json"], env=env,
                            capture_output=True, text=True, timeout=120, check=True)
    doc = json.loads(listed.stdout)
    version = MATRIX[mpi]["packages"][0].split("==")[1]
    assert version in doc["library"] and [v["name"] for v in doc["cvars"]] == [cvar]
    assert doc["cvars"][0]["value"] == default
    family = MATRIX[mpi]["family"]
    own = subprocess.run([str(MPILENS), "mpit", "list", "--mpi", family, "--match", f"^{cvar}$", "--json"], env=env,
                         capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(own.stdout)["cvars"] == []  # Debian's MPI of the family has no such variable
    job = mpilens_run(mpi, [*launcher(mpi, 2), exe], tmp_path, settings={"MPILENS_CVARS": f"{cvar}={new}"})
    assert "ring: 10 messages of 1024 bytes" in job.stdout
    (c,) = [c for c in job.load().meta["cvars_set"] if c["name"] == cvar]
    assert (c["old"], c["new"]) == (default, new)


@pytest.mark.matrix
def test_intel_mpis_variables_are_listed_with_its_own_encoding():
    """Intel MPI's MPI_T, through `mpit list --program` on a program built with its mpicc: no decoding
    error on its Latin-1 strings, and its two pvars named `idle` (a timer and a counter) kept apart."""
    exe = str(example("impi", "ring"))
    p = subprocess.run([str(MPILENS), "mpit", "list", "--program", exe, "--json"], env=matrix_env("impi"),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    doc = json.loads(p.stdout)
    assert doc["library"].startswith("Intel(R) MPI Library " + MATRIX["impi"]["packages"][0].split("==")[1])
    assert sorted((v["name"], v["class"]) for v in doc["pvars"] if v["name"] == "idle") == [("idle", "counter"),
                                                                                           ("idle", "timer")]


@pytest.mark.matrix
def test_repeat_and_compare_across_two_mpis(tmp_path):
    """seeds/002's use case: one program on two MPIs (Debian's Open MPI 4.1 and Open MPI 5.0, each
    its own build of ring.c), interleaved by `mpilens repeat`; `mpilens compare` names each side by
    its MPI and version in the text and the HTML report (the versions the MPIs' own mpirun print)."""
    versions = {}
    for mpi in ("openmpi", "openmpi5"):
        out = subprocess.run([launcher(mpi, 1)[0], "--version"], capture_output=True, text=True,
                             env=env_of(mpi) or job_env()).stdout
        versions[mpi] = re.search(r"\((?:Open MPI|OpenRTE)\) (\S+)", out).group(1)
    sides = {side: " ".join([*launcher(mpi, 2), str(example(mpi, "ring"))])
             for side, mpi in (("a", "openmpi"), ("b", "openmpi5"))}
    c = repeat_and_compare(sides["a"], sides["b"], tmp_path, job_env())
    assert re.search(rf"^  A: .*; Open MPI v{re.escape(versions['openmpi'])}$", c.text, re.M), c.text
    assert re.search(rf"^  B: .*; Open MPI v{re.escape(versions['openmpi5'])}$", c.text, re.M), c.text
    assert f"Open MPI v{versions['openmpi']}" in c.html and f"Open MPI v{versions['openmpi5']}" in c.html


@pytest.mark.matrix
def test_a_program_whose_mpi_ldd_cannot_find_is_known_by_its_soname(monkeypatch):
    """Intel MPI's own IMB-MPI1 has no rpath: outside the MPI's environment ldd finds no libmpi for
    it, yet it links libmpi.so.12 (readelf), the MPICH ABI's soname, and mpilens says so instead
    of "does not use MPI"."""
    from mpilens import launch

    exe = str(matrix_prefix("impi") / "bin" / "IMB-MPI1")
    dyn = subprocess.run(["readelf", "-d", exe], capture_output=True, text=True, check=True).stdout
    assert "[libmpi.so.12]" in dyn and "RPATH" not in dyn and "RUNPATH" not in dyn
    monkeypatch.delenv("LD_LIBRARY_PATH", raising=False)
    assert "libmpi.so.12 => not found" in subprocess.run(["ldd", exe], capture_output=True, text=True).stdout
    assert launch.program_mpi(exe) == ("mpich", "links libmpi.so.12 (not found by ldd here)")


@pytest.mark.matrix
@pytest.mark.parametrize("mpi,cvar", [("openmpi5", "btl_sm_eager_limit"),
                                      ("mpich5", "MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_CELL_SIZE")])
def test_recommendation_quotes_the_jobs_own_mpi(mpi, cvar, tmp_path):
    """halo3d with 160 KiB faces, above every eager limit: `mpilens mpit recommend` names the cvar the
    job's MPI has (Open MPI 5 calls vader sm) and, as its current value, the default that MPI's own
    MPI_T reports (`mpit list --program`), not the one of Debian's MPI of the family."""
    exe = str(example(mpi, "halo3d"))
    env = matrix_env(mpi)
    listed = subprocess.run([str(MPILENS), "mpit", "list", "--program", exe, "--match", f"^{cvar}$", "--json"], env=env,
                            capture_output=True, text=True, timeout=120, check=True)
    (own,) = json.loads(listed.stdout)["cvars"]
    job = mpilens_run(mpi, [*launcher(mpi, 4), exe, "163840", "30", "10"], tmp_path)
    rec = subprocess.run([str(MPILENS), "mpit", "recommend", str(job.rundir), "--rule", "eager", "--json"], env=env,
                         capture_output=True, text=True, timeout=120)
    assert rec.returncode == 0, rec.stderr
    (r,) = json.loads(rec.stdout)["recommendations"]
    assert r["status"] == "fired", r
    (one,) = r["recommendations"]
    assert one["setting"] == cvar and one["current"] == own["value"], (one, own)
    assert f"{cvar} = {own['value']} bytes" in r["evidence"][0]


# ------------------------------------------------------------------------- every mode, every MPI
@pytest.mark.mpi
@pytest.mark.parametrize("mpi", [pytest.param(m, marks=pytest.mark.matrix) for m in MATRIX
                                 if not MATRIX[m].get("portability")])
def test_every_mode_on_every_mpi(mpi, tmp_path):
    """The modes beyond the profile on each MPI of the matrix, in one job (`--mode
    profile,trace,counters,memory`) of a token ring whose traffic the program fixes (traffic_p2p
    blocking: rank r sends REPS messages of SIZE*(r+1) bytes to r+1): the profile's calls and bytes,
    the trace's events per function (read from the trace files by the tests' own reader), the counters'
    bytes and messages per rank, memory samples from MPI_Init to MPI_Finalize on every rank, and an
    HTML report with each mode's section."""
    reps, size, np_ = 40, 1000, 2
    job = mpilens_run(mpi, [*launcher(mpi, np_), str(example(mpi, "traffic_p2p")), "blocking", str(reps), str(size)],
                      tmp_path, settings={"MPILENS_MODE": "profile,trace,counters,memory"})
    sent = [reps * size * (r + 1) for r in range(np_)]
    p = job.profile
    assert p["functions"]["MPI_Send"]["calls"] == [reps] * np_ and p["functions"]["MPI_Send"]["bytes_sent"] == sent
    assert p["functions"]["MPI_Recv"]["bytes_recv"] == [sent[(r - 1) % np_] for r in range(np_)]
    files = {int(f.name[5:11]): f for f in sorted((job.rundir / "trace").glob("rank-*.bin"))}
    assert sorted(files) == list(range(np_))
    for r, f in files.items():
        calls = trace_calls(f)
        assert calls["MPI_Send"] == reps and calls["MPI_Recv"] == reps, (r, calls)
    c = counters_spc.load(job.rundir)
    for r in range(np_):
        assert c.value("BYTES_SENT_USER", r) == sent[r] and c.value("MESSAGES_SENT_USER", r) == reps, r
        assert c.value("BYTES_RECEIVED_USER", r) == sent[(r - 1) % np_], r
    m = memory.load(job.rundir)
    assert not m.problems, m.problems
    assert [x.rank for x in m.ranks] == list(range(np_)) and all(x.ended == "MPI_Finalize" for x in m.ranks)
    assert all(x.init_pss > 0 for x in m.ranks)
    html = tmp_path / "r.html"
    rep = subprocess.run([str(MPILENS), "report", str(job.rundir), "--html", str(html)], capture_output=True,
                         text=True, env=matrix_env(mpi), timeout=300)
    assert rep.returncode == 0, rep.stderr
    page = html.read_text()
    assert all(f'id="{s}"' in page for s in ("timeline", "counters", "memory")), [
        s for s in ("timeline", "counters", "memory") if f'id="{s}"' not in page]


@pytest.mark.apps
@pytest.mark.parametrize("a,b", [("openmpi", "openmpi5"), ("openmpi5", "mpich5")])
def test_repeat_and_compare_two_mpis_on_mpi4py_ringtest(a, b, tmp_path):
    """seeds/002's use case on a program nobody here wrote: mpi4py's own ring benchmark (`python -m
    mpi4py.bench ringtest`, the same code in Debian's mpi4py 3.1 and the wheels' 4.1) on Debian's
    Open MPI 4.1 against Open MPI 5.0, and on Open MPI 5.0 against MPICH 5.0, each side with its own
    MPI's environment (`env PATH=...`), interleaved by `mpilens repeat`. Every run counts what the
    benchmark's source says it does (each rank SKIP + LOOP sends and receives of SIZE bytes), and
    `mpilens compare` names each side by its MPI and version, in the text and the HTML report."""
    size, skip, loop = 64, 10, 200
    bench = ["-m", "mpi4py.bench", "ringtest", "-n", str(size), "-s", str(skip), "-l", str(loop)]
    names = {"openmpi": "Open MPI v4.1", "openmpi5": f"Open MPI v{MATRIX['openmpi5']['packages'][0].split('==')[1]}",
             "mpich5": f"MPICH Version: {MATRIX['mpich5']['packages'][0].split('==')[1]}"}

    def side(mpi: str) -> str:
        if mpi not in MATRIX:  # Debian's MPI and Debian's mpi4py
            return " ".join([*launcher(mpi, 2), "/usr/bin/python3", *bench])
        prefix = matrix_prefix(mpi)
        return " ".join(["env", f"PATH={prefix / 'bin'}:/usr/bin:/bin", *launcher(mpi, 2), "python", *bench])

    c = repeat_and_compare(side(a), side(b), tmp_path, job_env())
    n = skip + loop

    def per_rank(p: dict, name: str, key: str) -> list[int]:
        # mpi4py 4 calls the large-count functions (MPI_Send_c) where the MPI has them (MPICH 5)
        found = [p["functions"][f][key] for f in (name, f"{name}_c") if f in p["functions"]]
        return [sum(v) for v in zip(*found)]

    for d in c.a + c.b:
        p = rundir.load(d).profile
        assert per_rank(p, "MPI_Send", "calls") == [n, n] and per_rank(p, "MPI_Recv", "calls") == [n, n], d
        assert per_rank(p, "MPI_Send", "bytes_sent") == [n * size] * 2, d
        assert per_rank(p, "MPI_Recv", "bytes_recv") == [n * size] * 2, d
    assert re.search(rf"^  A: .*; {re.escape(names[a])}", c.text, re.M), c.text
    assert re.search(rf"^  B: .*; {re.escape(names[b])}", c.text, re.M), c.text
    assert names[a] in c.html and names[b] in c.html


@pytest.mark.mpi
@pytest.mark.parametrize("mpi", [pytest.param(m, marks=pytest.mark.matrix) for m in MATRIX
                                 if not MATRIX[m].get("portability")])
def test_io_per_file_on_every_mpi(mpi, tmp_path):
    """MPI-IO per file (on by default) on each MPI of the matrix: examples/c/iofile's two files, as
    the file system has them (every byte of shared.dat written once, rank0.dat 300 bytes) and as the
    program reads them back, per file and per rank."""
    np_ = 3
    data = tmp_path / "data"
    data.mkdir()
    job = mpilens_run(mpi, [*launcher(mpi, np_), str(example(mpi, "iofile")), str(data)], tmp_path)
    assert f"iofile: ok {np_}" in job.stdout, job.stdout
    shared, rank0 = data / "shared.dat", data / "rank0.dat"
    p = subprocess.run([str(MPILENS), "io", str(job.rundir), "--json"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    files = {f["name"]: f for f in json.loads(p.stdout)["files"]}
    assert set(files) == {str(shared), str(rank0)}
    s, z = files[str(shared)], files[str(rank0)]
    assert s["bytes_written"] == shared.stat().st_size == 7168 * np_ and s["bytes_read"] == np_ * (4096 + 256)
    assert [r["bytes_written"] for r in s["per_rank"]] == [4 * 256 + 4096 + 2 * 1024] * np_
    assert [r["bytes_read"] for r in s["per_rank"]] == [4096 + 256] * np_
    assert s["opens"] == s["closes"] == np_ and s["ranks"] == list(range(np_))
    assert z["bytes_written"] == rank0.stat().st_size == 300 and z["ranks"] == [0] and z["bytes_read"] == 0
