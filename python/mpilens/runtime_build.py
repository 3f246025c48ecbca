"""Build a runtime for an MPI compiler wrapper and put it in an installation's home.

Used by pip's build (setup.py), by `make install` (scripts/install-prefix.py) and by `mpilens
runtime add`: all three run runtime/runtime.mk the same way, in a scratch directory, and keep the
same files (build_info.py's layout). Only the standard library here: setup.py loads this file
before any of the package's dependencies is installed.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

try:
    from .errors import MpilensError
except ImportError:  # setup.py loads this file alone, outside the package
    MpilensError = Exception  # type: ignore[misc,assignment]

# what of the source tree a runtime is built from (runtime/runtime.mk's inputs)
SOURCES = ("VERSION", "runtime/runtime.mk", "runtime/src", "runtime/include", "runtime/gen", "runtime/spec")


class BuildError(MpilensError):
    """The runtime could not be built; the message says why, with the build's last lines."""


def build(source: Path, mpicc: str, home: Path, python: str = sys.executable, verbose: bool = False,
          scratch: Path | None = None) -> dict:
    """Build the runtime MPICC's MPI needs from the source tree `source` and install it in `home`
    (replacing a runtime of the same family). Returns its description (runtime.json).

    The build happens in `scratch` when given (kept: a checkout's build/, where `make` may have
    built that runtime with the same compiler already), else in a temporary directory."""
    source = Path(source).resolve()
    if not (source / "runtime" / "runtime.mk").is_file():
        raise BuildError(f"{source} holds no runtime sources (runtime/runtime.mk)")
    make = shutil.which("make")
    if make is None:
        raise BuildError("`make` is not on PATH; it builds the runtime")
    with (tempfile.TemporaryDirectory(prefix="mpilens-runtime-") if scratch is None
          else contextlib.nullcontext(str(Path(scratch).resolve()))) as tmp:
        # the generator's bytecode is not written into the sources (an install's may be read-only)
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
        env.pop("MAKEFLAGS", None)
        env.pop("MFLAGS", None)
        argv = [make, "-f", "runtime/runtime.mk", f"-j{os.cpu_count() or 1}", f"MPICC={mpicc}", f"BUILD={tmp}",
                f"GEN_PYTHON={python}"]
        p = subprocess.run(argv, cwd=source, env=env, text=True, errors="replace",
                           stdout=None if verbose else subprocess.PIPE, stderr=subprocess.STDOUT, check=False)
        if p.returncode != 0:
            tail = "\n".join((p.stdout or "").strip().splitlines()[-15:])
            raise BuildError(f"building the runtime with MPICC={mpicc} failed:\n{tail}")
        built = Path(tmp)
        family = subprocess.run([python, str(source / "runtime" / "gen" / "mpicc_probe.py"), mpicc], env=env,
                                capture_output=True, text=True, check=True).stdout.strip()
        (home / "lib").mkdir(parents=True, exist_ok=True)
        for lib in (f"libmpilens-{family}.so", "libmpilens-memory.so", "libmpilens-annotate.so"):
            _install(built / "lib" / lib, home / "lib" / lib, 0o755)
        # the annotation API (regions, counters) for the programs to build with: C's header, and
        # Fortran's module as source and as made by the MPI's Fortran compiler (when it has one)
        (home / "include").mkdir(exist_ok=True)
        _install(source / "runtime" / "include" / "mpilens.h", home / "include" / "mpilens.h", 0o644)
        _install(source / "runtime" / "include" / "mpilens.f90", home / "include" / "mpilens.f90", 0o644)
        fortran_module(mpicc, home / "include", env)
        helpers = home / "libexec" / "mpilens" / family
        helpers.mkdir(parents=True, exist_ok=True)
        for f in (built / "libexec" / "mpilens" / family).iterdir():
            _install(f, helpers / f.name, 0o755 if os.access(f, os.X_OK) else 0o644)
        return json.loads((helpers / "runtime.json").read_text())


def ship_sources(source: Path, home: Path) -> Path:
    """Copy the runtime's sources into home/share/mpilens/src (what `mpilens runtime add` builds from)."""
    dest = home / "share" / "mpilens" / "src"
    for rel in SOURCES:
        src = Path(source) / rel
        if src.is_dir():
            shutil.copytree(src, dest / rel, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest


def _install(src: Path, dest: Path, mode: int) -> None:
    """Copy a file into place whole: a running job that has the old one mapped keeps it."""
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}")
    shutil.copyfile(src, tmp)
    os.chmod(tmp, mode)
    os.replace(tmp, dest)


def fortran_compiler(mpicc: str, env: dict[str, str] | None = None) -> str | None:
    """The Fortran compiler of the MPI that MPICC belongs to: FC, else the mpifort (or mpif90) beside
    MPICC under the same suffix (mpicc.openmpi: mpifort.openmpi), else gfortran on PATH; None when
    there is none."""
    env = env if env is not None else dict(os.environ)
    if env.get("FC"):
        return env["FC"]
    path = shutil.which(mpicc.split()[0], path=env.get("PATH"))
    if path:
        where, name = os.path.split(path)
        for fc in ("mpifort", "mpif90"):
            candidate = os.path.join(where, name.replace("mpicc", fc, 1))
            if "mpicc" in name and os.access(candidate, os.X_OK):
                return candidate
    return shutil.which("gfortran", path=env.get("PATH"))


def fortran_module(mpicc: str, include: Path, env: dict[str, str] | None = None) -> str:
    """Make include/mpilens.mod (`use mpilens`) from include/mpilens.f90 with the MPI's Fortran
    compiler; a module file is the compiler's own format, so one made by another compiler is
    removed. Returns what was done, for the install's messages."""
    (include / "mpilens.mod").unlink(missing_ok=True)
    fc = fortran_compiler(mpicc, env)
    if fc is None:
        return "no Fortran compiler: include/mpilens.f90 is there to compile with yours"
    with tempfile.TemporaryDirectory(prefix="mpilens-fmod.") as tmp:
        # every Fortran compiler writes the module into the directory it runs in (the option that
        # moves it differs: -J, -module, -module-dir)
        p = subprocess.run([*fc.split(), "-c", "-o", "mpilens.o", str((include / "mpilens.f90").resolve())], cwd=tmp,
                           env=env, capture_output=True, text=True, errors="replace", check=False)
        made = Path(tmp) / "mpilens.mod"
        if p.returncode != 0 or not made.is_file():
            return f"{fc} could not compile include/mpilens.f90; compile it with your Fortran compiler"
        _install(made, include / "mpilens.mod", 0o644)
    return f"include/mpilens.mod made with {fc}"


def find_mpicc() -> str | None:
    """The MPI compiler wrapper an install builds with: MPICC, else mpicc on PATH (mpi4py's rule)."""
    return os.environ.get("MPICC") or shutil.which("mpicc")
