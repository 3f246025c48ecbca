"""Shared helpers of the test suite: run real MPI jobs under mpilens, with Open MPI and MPICH.

Tests get the `mpi` fixture (parametrized over both MPIs) and call `mpirun(mpi, np, argv, tmp_path)`
or `run_example(mpi, name, np, tmp_path)`, which run `mpilens run` as a user would and return
the run directory as read by mpilens.rundir.load.

Tiers (pytest.ini lists the markers): a test is marked by what it needs, `mpi` (an MPI job), `apps`
(a real application), `slurm`, `hosts` (test hosts in network namespaces), `browser` (Chromium),
`matrix` (the MPIs of the test matrix). A test that uses the `mpi` or `browser` fixture is marked
so here; the others say it themselves. `make check` runs the unmarked ones with
MPILENS_TEST_TIER=check, under which starting an MPI job, a real application or a browser fails the
test: a test that needs one and is not marked cannot hide in the fast tier.
"""

from __future__ import annotations

import collections
import contextlib
import fcntl
import functools
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "build"
MPILENS = ROOT / ".venv" / "bin" / "mpilens"
MPIS = ["openmpi", "mpich"]
TIMEOUT = 300
# the matrix beyond Debian's two MPIs (scripts/mpis.toml, installed under build/mpis by `make mpis`)
MATRIX = {k: v for k, v in tomllib.loads((ROOT / "scripts" / "mpis.toml").read_text()).items() if k != "common"}
for _spec in MATRIX.values():  # an entry running another's installation has its packages
    if "installation" in _spec:
        _spec["packages"] = MATRIX[_spec["installation"]]["packages"]

sys.path.insert(0, str(ROOT / "python"))
from mpilens import _layout, rundir  # noqa: E402


def job_env(**extra: str) -> dict[str, str]:
    """Environment for MPI jobs on this machine: root allowed, oversubscription allowed, no
    stray MPILENS_* settings from the caller."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPILENS_")}
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1", OMPI_MCA_btl_vader_single_copy_mechanism="none",
               HYDRA_LAUNCHER="fork")
    env.update(extra)
    return env


def matrix_prefix(mpi: str) -> Path:
    """Where an MPI of the matrix is installed; fails the test when `make mpis` did not run."""
    prefix = BUILD / "mpis" / MATRIX[mpi].get("installation", mpi)
    if not (prefix / ".installed").exists():
        pytest.fail(f"{mpi} ({MATRIX[mpi]['title']}) is not installed under {prefix}: run `make mpis`")
    return prefix


def matrix_env(mpi: str, **extra: str) -> dict[str, str]:
    """job_env for an MPI of the matrix: its bin/ first on PATH, as a user's module would set it."""
    prefix = matrix_prefix(mpi)
    env = job_env(**{k: v.replace("{prefix}", str(prefix)) for k, v in MATRIX[mpi].get("env", {}).items()})
    env["PATH"] = f"{prefix / 'bin'}:{env.get('PATH', '')}"
    env.update(extra)
    return env


def launcher(mpi: str, np: int) -> list[str]:
    """The launcher command of an MPI, for np ranks on this machine."""
    if mpi in MATRIX:
        argv = [a.replace("{np}", str(np)) for a in MATRIX[mpi]["launcher"]]
        return [str(matrix_prefix(mpi) / "bin" / argv[0]), *argv[1:]]
    if mpi == "openmpi":
        return ["mpirun.openmpi", "--oversubscribe", "--bind-to", "none", "-np", str(np)]
    return ["mpirun.mpich", "-np", str(np)]


def example(mpi: str, name: str) -> Path:
    """Path of an example program built for an MPI (examples/c or examples/fortran); for an MPI of
    the matrix, built here with its own mpicc the first time."""
    exe = BUILD / mpi / "examples" / name
    if mpi in MATRIX:
        return matrix_example(mpi, name, exe)
    if not exe.exists():
        pytest.fail(f"{exe} is not built; run `make`")
    return exe


def matrix_example(mpi: str, name: str, exe: Path) -> Path:
    """Build examples/c/<name>.c with the matrix MPI's mpicc, as the Makefile builds the others; or
    examples/fortran/<name>.f90 with its Fortran compiler wrapper (`fc` in scripts/mpis.toml: Intel
    MPI's mpif90; the other wheels have no Fortran)."""
    src = ROOT / "examples" / "c" / f"{name}.c"
    annotate = BUILD / "lib" / "libmpilens-annotate.so"
    fortran = not src.exists()
    if fortran:
        src = ROOT / "examples" / "fortran" / f"{name}.f90"
        if "fc" not in MATRIX[mpi]:
            pytest.fail(f"{mpi} ({MATRIX[mpi]['title']}) has no Fortran compiler wrapper for {src.name}")
    with machine_lock(f"build-{mpi}"):
        if exe.exists() and exe.stat().st_mtime >= max(src.stat().st_mtime, annotate.stat().st_mtime):
            return exe
        exe.parent.mkdir(parents=True, exist_ok=True)
        cc = MATRIX[mpi].get("cc", str(matrix_prefix(mpi) / "bin" / "mpicc")).replace("{mpis}", str(BUILD / "mpis"))
        link = [f"-L{annotate.parent}", f"-Wl,-rpath,{annotate.parent}", "-lmpilens-annotate"]
        if fortran:  # as the Makefile builds the Fortran examples of Debian's MPIs
            cmd = [str(matrix_prefix(mpi) / "bin" / MATRIX[mpi]["fc"]), "-O2", "-g", "-fallow-argument-mismatch",
                   "-fopenmp", "-J", str(exe.parent), "-o", str(exe), str(src), *link]
        else:
            cmd = [cc, "-std=c11", "-O2", "-g", "-Wall", "-Wno-stringop-overflow",
                   "-fopenmp", f"-I{ROOT / 'runtime' / 'include'}", "-o", str(exe), str(src), *link, "-lpthread", "-lm"]
        p = subprocess.run(cmd, env=matrix_env(mpi), capture_output=True, text=True)
        if p.returncode != 0:
            pytest.fail(f"building {name} with {mpi}'s mpicc failed:\n{' '.join(cmd)}\n{p.stderr}")
    return exe


class RunReader:
    """What a test reads of a job's run directory (self.rundir)."""

    rundir: Path

    def load(self) -> rundir.Run:
        return rundir.load(self.rundir)

    @property
    def profile(self) -> dict:
        run = self.load()
        assert run.source == "profile.json", run.problems
        return run.profile


@dataclass
class Job(RunReader):
    """A finished `mpilens run`."""

    returncode: int
    stdout: str
    stderr: str
    rundir: Path


def mpilens_run(mpi: str | None, argv: list[str], tmp_path: Path, *, settings: dict[str, str] | None = None,
                env: dict[str, str] | None = None, check: bool = True, outdir: Path | None = None,
                timeout: int = TIMEOUT) -> Job:
    """Run `mpilens run -o DIR [--mpi mpi] -- argv` and return the result."""
    out = outdir or tmp_path / "run"
    cmd = [str(MPILENS), "run", "-o", str(out)]
    if mpi in MATRIX:
        env = env or matrix_env(mpi)  # and mpilens finds the runtime from the program, as for a user
    elif mpi:
        cmd += ["--mpi", mpi]
    for k, v in (settings or {}).items():
        cmd += ["--set", f"{k}={v}"]
    cmd += ["--", *argv]
    p = subprocess.run(cmd, env=env or job_env(), capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} exited {p.returncode}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}")
    return Job(p.returncode, p.stdout, p.stderr, out)


@dataclass
class Comparison:
    """`mpilens repeat` of two commands and `mpilens compare` of their runs."""

    a: list[Path]  # the run directories of each side
    b: list[Path]
    text: str  # compare's text report
    html: str  # its HTML report


def repeat_and_compare(a: str, b: str, tmp_path: Path, env: dict[str, str], runs: int = 3) -> Comparison:
    """Run `mpilens repeat -n RUNS --a A --b B` (commands as one string each), then `mpilens compare`
    of the two sides in text and HTML, as a user does; every step must succeed."""
    out = tmp_path / "ab"
    rep = subprocess.run([str(MPILENS), "repeat", "-n", str(runs), "-o", str(out), "--a", a, "--b", b],
                         capture_output=True, text=True, env=env, timeout=900)
    assert rep.returncode == 0, rep.stderr
    sides = {s: sorted(out.glob(f"{s}-*")) for s in ("a", "b")}
    assert len(sides["a"]) == len(sides["b"]) == runs, sides
    html = tmp_path / "compare.html"
    cmp = subprocess.run([str(MPILENS), "compare", *map(str, sides["a"]), "--vs", *map(str, sides["b"]), "--html",
                          str(html)], capture_output=True, text=True, env=env, timeout=300)
    assert cmp.returncode == 0, cmp.stderr
    return Comparison(sides["a"], sides["b"], cmp.stdout, html.read_text())


def mpirun(mpi: str, np: int, argv: list[str], tmp_path: Path, **kw) -> Job:
    """Run argv on np ranks with the MPI's own launcher, under mpilens."""
    return mpilens_run(mpi, launcher(mpi, np) + argv, tmp_path, **kw)


def run_example(mpi: str, name: str, np: int, tmp_path: Path, args: list[str] | None = None, **kw) -> Job:
    """Run an example program on np ranks under mpilens."""
    return mpirun(mpi, np, [str(example(mpi, name)), *(args or [])], tmp_path, **kw)


def trace_kinds(path: Path) -> collections.Counter:
    """Events of each kind in a trace file as written, before the reader gives a call_done
    (kind 7) or a late_call (kind 0) as two events: read here from the blocks' heads and the
    events' fixed parts alone (docs/run-directory.md, file `trace`), independently of mpilens'
    reader. A late_call without its completion (fn with bit 0x8000) counts as "alone"."""
    raw, kinds, pos = path.read_bytes(), collections.Counter(), 0
    while (pos := raw.find(b"MLTB0004", pos)) >= 0:
        _, count, _, _, _, _, _, words, _ = struct.unpack_from("<IIQQQIIII", raw, pos + 8)
        fixed = pos + 56
        for i in range(count):
            fn, flags = struct.unpack_from("<iIHH", raw, fixed + 12 * i)[2:]
            kinds["alone" if flags & 7 == 0 and fn & 0x8000 else flags & 7] += 1
        pos = fixed + 12 * count + 4 * words
    return kinds


def trace_head(path: Path) -> dict:
    """The head block's JSON of a trace file as written (docs/run-directory.md, file `trace`),
    read without mpilens' reader."""
    raw = path.read_bytes()
    head = raw.find(b"MLTH0001")
    return json.loads(raw[head + 8:raw.find(b"MLTE0001", head)])


def trace_calls(path: Path) -> collections.Counter:
    """Events of each function in a trace file as written (call, call_done and late_call events,
    by function name), read as trace_kinds reads it: the functions' names from the head block's
    JSON, the events' fixed parts counted, independently of mpilens' reader."""
    raw, calls, pos = path.read_bytes(), collections.Counter(), 0
    names = trace_head(path)["functions"]
    while (pos := raw.find(b"MLTB0004", pos)) >= 0:
        _, count, _, _, _, _, _, words, _ = struct.unpack_from("<IIQQQIIII", raw, pos + 8)
        fixed = pos + 56
        for i in range(count):
            fn, flags = struct.unpack_from("<iIHH", raw, fixed + 12 * i)[2:]
            if flags & 7 in (0, 1, 7):  # late_call, call, call_done
                calls[names[fn & 0x7fff]] += 1
        pos = fixed + 12 * count + 4 * words
    return calls


def plain_run(mpi: str, np: int, argv: list[str], timeout: int = TIMEOUT) -> subprocess.CompletedProcess:
    """Run argv on np ranks without mpilens (for comparing outputs)."""
    return subprocess.run(launcher(mpi, np) + argv, env=job_env(), capture_output=True, text=True, timeout=timeout)


# ------------------------------------------------------------------------------------------ tiers
NEEDS = ("mpi", "apps", "slurm", "hosts", "browser", "matrix", "install")
FIXTURE_NEEDS = {"mpi": "mpi", "browser": "browser"}
# what a program started by a test needs, by the name of its executable
_LAUNCHERS = re.compile(r"^(mpirun|mpiexec|orterun|prterun|srun|sbatch|salloc)([.\w-]*)$")
_BROWSERS = re.compile(r"^(chromium|chrome|headless_shell)$")
_APPS = re.compile(r"^(lmp|lmp_\w+|NP\w+|hpcc|IMB-\w+)$")


# Every test runs beside the others: `make test` runs the whole suite on its parallel workers. The
# timing tests hold the expectations they take from the program's own clocks against this load
# (docs/testing.md, "Tests that bear a busy machine"); they used to run apart, after the others,
# until runs of them beside the whole parallel part (five workers on two cores) had passed, and
# the two that a one-part run had failed were made to bear it (2026-11-30). A test added must not
# depend on timing.
# The machine's single resources (Slurm, the test hosts) are taken under the machine's lock.


# The order in which `make test` hands whole modules to its workers (pytest-xdist's loadfile with
# --no-loadscope-reorder: collection order): the order xdist would take by default, the modules of
# most tests first, except for these, which run long on few tests and go first. By default
# test_install.py's three installs (230 s on one worker: compiling and installing, no MPI job) were
# handed out among the last modules and ran on while the other workers sat idle.
FIRST = ("test_install",)


def _module_name(item: pytest.Item) -> str:
    return item.module.__name__.rsplit(".", 1)[-1] if item.module is not None else ""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    counts = collections.Counter(_module_name(item) for item in items)
    order = {name: i for i, name in enumerate(FIRST)}
    # stable: each module's tests stay together and in their order
    items.sort(key=lambda item: (order.get(_module_name(item), len(order)), -counts[_module_name(item)],
                                 _module_name(item)))
    for item in items:
        for fixture, need in FIXTURE_NEEDS.items():
            if fixture in getattr(item, "fixturenames", ()):
                item.add_marker(need)


def started_job(args) -> str | None:
    """What a command started by a test is, when it is more than the fast tier allows: an MPI job
    (a launcher, an example run alone, `mpilens run` or `repeat`), a real application or a browser."""
    argv = args.split() if isinstance(args, str) else [str(a) for a in args]
    names = [os.path.basename(a) for a in argv]
    for i, name in enumerate(names):
        if _LAUNCHERS.match(name) or _APPS.match(name):
            return " ".join(argv[i:i + 3])
        if name == "mpilens" and i + 1 < len(names) and names[i + 1] in ("run", "repeat"):
            return " ".join(argv[i:i + 2])
        if i == 0 and _BROWSERS.match(name):
            return argv[0]
        if i == 0 and argv[0].startswith(str(BUILD)) and "/examples/" in argv[0]:
            return argv[0]  # an example run alone (a singleton MPI process)
    return None


@pytest.fixture(autouse=True, scope="session")
def _fast_tier_guard():
    """Under MPILENS_TEST_TIER=check, a test that starts an MPI job, an application or a browser fails."""
    if os.environ.get("MPILENS_TEST_TIER") != "check":
        yield
        return
    original = subprocess.Popen.__init__

    def guarded(self, args, *a, **kw):
        what = started_job(args)
        if what is not None:
            raise AssertionError(f"this test starts `{what}`, which the fast tier (make check) does not: mark it "
                                 f"with what it needs ({', '.join(NEEDS)})")
        original(self, args, *a, **kw)

    subprocess.Popen.__init__ = guarded
    try:
        yield
    finally:
        subprocess.Popen.__init__ = original


def matrix_params(every: bool = False) -> list:
    """Debian's two MPIs, then the matrix's (marked `matrix`): for the tests that run on every MPI.
    An entry marked `portability` (the same binaries as another, on another library) only when
    `every` (tests/test_matrix.py), not in the longer suites."""
    return [*MPIS, *(pytest.param(m, marks=pytest.mark.matrix) for m in MATRIX
                     if every or not MATRIX[m].get("portability"))]


@pytest.fixture(params=MPIS)
def mpi(request: pytest.FixtureRequest) -> str:
    """Each MPI in turn."""
    if shutil.which(f"mpirun.{request.param}") is None:
        pytest.fail(f"mpirun.{request.param} is missing: `make deps` installs it")
    return request.param


# NetPIPE (Debian's netpipe-openmpi / netpipe-mpich2): a real application whose traffic is known
NETPIPE = {"openmpi": "NPopenmpi", "mpich": "NPmpich2"}


def netpipe_sizes(path: Path) -> list[int]:
    """Message sizes of a NetPIPE output file (columns: bytes, Mbps, seconds)."""
    return [int(line.split()[0]) for line in path.read_text().splitlines() if line.strip()]


def check_netpipe_profile(p: dict, sizes: list[int], lo: int, reps: int) -> None:
    """The traffic of NetPIPE 3.7's MPI protocol between ranks 0 and 1, from its own output file's
    sizes: per size 3 trials (TRIALS) of `reps` round trips, after a latency test of 100 round trips
    at the lower bound; rank 0 also tells rank 1 each size's repetition count (one int per size)."""
    send, recv = p["functions"]["MPI_Send"], p["functions"]["MPI_Recv"]
    assert recv["calls"] == send["calls"][::-1]  # a ping-pong: what one sends the other receives
    assert recv["bytes_recv"] == send["bytes_sent"][::-1]
    assert {(m["src"], m["dst"]): (m["messages"], m["bytes"]) for m in p["matrix"]} == {
        (0, 1): (send["calls"][0], send["bytes_sent"][0]), (1, 0): (send["calls"][1], send["bytes_sent"][1])}
    data, k = 3 * reps * sum(sizes), len(sizes)
    assert send["bytes_sent"] == [data + 100 * lo + 4 * k, data + 100 * lo]
    assert send["calls"] == [3 * reps * k + 100 + k, 3 * reps * k + 100]
    assert fn(p, "MPI_Barrier", "calls")[0] == fn(p, "MPI_Barrier", "calls")[1] > 0


def fn(profile: dict, name: str, key: str) -> list:
    """Per-rank values of one function's metric (zeros when the function was never called)."""
    f = profile["functions"].get(name)
    return f[key] if f else [0] * profile["nranks"]


@contextlib.contextmanager
def machine_lock(name: str):
    """Hold a lock of this machine's while a test uses a resource the machine has once (the test
    hosts' network namespaces and addresses, Slurm's daemons): a second test suite running beside
    this one (another `make test`) waits for it instead of taking the same resource."""
    with open(Path(tempfile.gettempdir()) / f"mpilens-tests-{name}.lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


# ------------------------------------------------------------------------------ committed runs
RUNS = ROOT / "tests" / "data" / "runs"


def run_directory_format() -> dict[str, str]:
    """The run directory's format as the spec states it today: every file's magic and schema tag
    (not the packed merge's: it goes between the ranks of a job, never into a file)."""
    return {k: v.decode("latin-1") if isinstance(v, bytes) else v for k, v in sorted(vars(_layout).items())
            if k.startswith(("MAGIC_", "SCHEMA_")) and not k.startswith("MAGIC_MERGE_PACK")}


@dataclass
class ExampleRun(RunReader):
    """A run of an example as a row of scripts/make-test-runs.py states it (program, ranks,
    arguments, settings): its run directory, committed (tests/data/runs) or made now, and what the
    program printed. What the program was asked to do and what it printed are the oracle."""

    name: str
    rundir: Path
    mpi: str
    example: str
    np: int
    args: list[str]
    settings: dict[str, str]
    stdout: str


@functools.cache
def _runs_index() -> dict:
    return json.loads((RUNS / "runs.json").read_text())


def _row(name: str) -> dict:
    row = _runs_index()["runs"].get(name)
    if row is None:
        pytest.fail(f"tests/data/runs has no run {name}: add it to scripts/make-test-runs.py and `make test-runs`")
    return row


def committed_run(name: str, tmp_path: Path) -> ExampleRun:
    """A copy of the committed run NAME in tmp_path (tests never change tests/data)."""
    row = _row(name)
    dest = tmp_path / name
    shutil.copytree(RUNS / name, dest, symlinks=True)
    return ExampleRun(name, dest, row["mpi"], row["example"], row["np"], row["args"], row["settings"],
                        (RUNS / f"{name}.out").read_text())


def live_run(name: str, tmp_path: Path) -> ExampleRun:
    """The job of the committed run NAME run now, under the mpilens of this checkout."""
    row = _row(name)
    job = run_example(row["mpi"], row["example"], row["np"], tmp_path, row["args"], settings=row["settings"])
    return ExampleRun(name, job.rundir, row["mpi"], row["example"], row["np"], row["args"], row["settings"],
                        job.stdout)


@dataclass(frozen=True)
class Source:
    """Where a test's run comes from: the committed run of an MPI (fast tier), or its job run now."""

    mpi: str
    live: bool

    def run(self, name: str, tmp_path: Path) -> ExampleRun:
        """The run NAME-<mpi> (tests/data/runs/runs.json says what it runs)."""
        full = f"{name}-{self.mpi}"
        return live_run(full, tmp_path) if self.live else committed_run(full, tmp_path)


def sources(*mpis: str) -> list:
    """Parameters of a test that checks the committed runs of each MPI and, in the MPI tier, the
    same jobs run now: ids `committed-openmpi`, `openmpi`, ..."""
    mpis = mpis or tuple(MPIS)
    return ([pytest.param(Source(m, False), id=f"committed-{m}") for m in mpis]
            + [pytest.param(Source(m, True), id=m, marks=pytest.mark.mpi) for m in mpis])


# ------------------------------------------------------------------------------------- PAPI
@functools.cache
def papi_perf_event_off() -> str:
    """'' when PAPI can count perf_event events on this machine, else the reason PAPI itself gives
    (papi_component_avail: a virtual machine without a virtual PMU disables the whole perf_event
    component, software events such as perf::PAGE-FAULTS included)."""
    exe = require("papi_component_avail", "papi-tools")
    out = subprocess.run([exe], capture_output=True, text=True, timeout=60).stdout.splitlines()
    for i, line in enumerate(out):
        if line.split()[:2] == ["Name:", "perf_event"]:
            nxt = out[i + 1] if i + 1 < len(out) else ""
            return nxt.split("Disabled:", 1)[1].strip() if "Disabled:" in nxt else ""
    return "PAPI lists no perf_event component"


def need_perf_events() -> None:
    """Skip, with PAPI's reason, a test whose events need PAPI's perf_event component."""
    off = papi_perf_event_off()
    if off:
        pytest.skip(f"PAPI's perf_event component is disabled on this machine: {off}")


# ------------------------------------------------------------------------------------- applications
LAMMPS_INDENT = Path("/usr/share/lammps/examples/indent")


def require(exe: str, package: str) -> str:
    """Full path of a program from a Debian package; fail (not skip) when it is missing."""
    path = shutil.which(exe)
    if path is None:
        pytest.fail(f"{exe} is missing: `make deps` installs the Debian package {package}")
    return path


def linked_mpi(path: str) -> str | None:
    """Which MPI an executable or shared object links, from ldd (independent of mpilens' own detection)."""
    out = subprocess.run(["ldd", path], capture_output=True, text=True).stdout
    if re.search(r"^\s*libmpich\.so", out, re.M):
        return "mpich"
    if re.search(r"^\s*libmpi\.so\.4\d", out, re.M):
        return "openmpi"
    return None


def lammps_indent(work: Path, steps: int) -> tuple[str, list[str]]:
    """LAMMPS' indent example copied into work, its two runs shortened from 30000 to steps steps
    (thermo every 500): (the MPI lmp links, its arguments)."""
    exe = require("lmp", "lammps")
    if not (LAMMPS_INDENT / "in.indent").exists():
        pytest.fail(f"{LAMMPS_INDENT}/in.indent is missing: `make deps` installs lammps-examples")
    mpi = linked_mpi(exe)
    assert mpi in MPIS, f"{exe} links no known MPI"
    shutil.copytree(LAMMPS_INDENT, work)
    text = (work / "in.indent").read_text()
    assert text.count("run\t\t30000") == 2 and "thermo\t\t1000" in text
    (work / "in.indent").write_text(text.replace("run\t\t30000", f"run\t\t{steps}")
                                    .replace("thermo\t\t1000", "thermo\t\t500"))
    return mpi, [exe, "-in", str(work / "in.indent")]


# ------------------------------------------------------------------------------------------ Slurm
SLURM = ROOT / "scripts" / "slurm.sh"


def free_port_pair() -> int:
    """A port p such that p..p+2 are free (slurmctld and two slurmds)."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            p = s.getsockname()[1]
        if p + 2 >= 65535:
            continue
        ok = True
        for q in (p + 1, p + 2):
            with socket.socket() as s:
                try:
                    s.bind(("0.0.0.0", q))
                except OSError:
                    ok = False
        if ok:
            return p
    raise RuntimeError("no free ports")


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    """The cluster's environment: SLURM_CONF and the job environment of the tests."""
    d = tmp_path_factory.mktemp("slurm") / "cluster"
    env = dict(os.environ, MPILENS_SLURM_DIR=str(d), MPILENS_SLURM_NODES="2", MPILENS_SLURM_PORT=str(free_port_pair()))
    with machine_lock("slurm"):  # munge and Slurm's daemons: one suite at a time
        up = subprocess.run([str(SLURM), "up"], env=env, capture_output=True, text=True, timeout=300)
        assert up.returncode == 0, up.stderr + up.stdout
        line = up.stdout.strip().splitlines()[-1]
        assert line == f"export SLURM_CONF={d}/slurm.conf", up.stdout
        try:
            yield job_env(SLURM_CONF=f"{d}/slurm.conf")
        finally:
            subprocess.run([str(SLURM), "down"], env=env, capture_output=True, timeout=120)
            assert not d.exists()
