"""Where this installation's runtimes are, and which MPI each was built with.

An installation's home holds what runtime/runtime.mk builds, in the same layout everywhere:

    lib/libmpilens-<family>.so                 the runtime preloaded into a job of that MPI family
    lib/libmpilens-memory.so                   memory mode's interposer of the allocation calls
    lib/libmpilens-annotate.so, include/mpilens.h   the annotation API, for programs to build with
    libexec/mpilens/<family>/mpilens-check     the settings' checker, built against that MPI
    libexec/mpilens/<family>/mpilens-mpit      the MPI_T variables' lister
    libexec/mpilens/<family>/runtime.json      which MPI and which compiler wrapper built it
    share/mpilens/src                          the runtime's sources (`mpilens runtime add`), installs only

The home is named by the generated _build.py: the checkout's build/ (`make`), the package's own
_runtime/ (`pip install`), or the prefix (`make install`), the last two relative to this package so
that an installation still works when moved. An installation without _build.py, or whose home holds
no runtime, reads and reports runs but cannot measure one (an analysis-only install).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from .errors import LaunchError

# the runtimes: one per ABI family (Open MPI's, MPICH's, which Intel MPI, MVAPICH and Cray MPICH
# share) and the MPI-5 standard ABI (a program linking libmpi_abi, on any MPI that provides it)
MPI_FLAVORS = ("openmpi", "mpich", "abi")
PACKAGE = Path(__file__).resolve().parent


def home() -> Path | None:
    """Return this installation's home (see the module's docstring), None when it has none."""
    try:
        from . import _build  # generated: by the Makefile, pip's build or `make install`
    except ImportError:
        return None
    return (PACKAGE / _build.HOME).resolve()


def source_dir() -> Path | None:
    """Return the runtime's sources this installation can build another runtime from."""
    h = home()
    if h is None:
        return None
    shipped = h / "share" / "mpilens" / "src"
    if (shipped / "runtime" / "runtime.mk").is_file():
        return shipped
    checkout = h.parent  # a checkout: build/ beside runtime/
    return checkout if (checkout / "runtime" / "runtime.mk").is_file() else None


def helper_dir(mpi: str) -> Path | None:
    """Return the directory of one family's helper programs and description, None without a home."""
    h = home()
    return None if h is None else h / "libexec" / "mpilens" / mpi


def runtimes() -> list[dict[str, Any]]:
    """Return the runtimes installed, one dict per family: family, mpi, standard, mpicc, library
    (the description runtime/gen/mpicc_probe.py wrote when it was built)."""
    out = []
    for family in MPI_FLAVORS:
        d = helper_dir(family)
        if d is None or not (home() / "lib" / f"libmpilens-{family}.so").is_file():
            continue
        try:
            facts = json.loads((d / "runtime.json").read_text())
        except (OSError, ValueError):
            facts = {"family": family, "mpi": "an MPI (its description is missing)"}
        facts["library"] = str(home() / "lib" / f"libmpilens-{family}.so")
        out.append(facts)
    return out


def describe() -> str:
    """The runtimes, one line each, as `mpilens --version` lists them."""
    found = runtimes()
    if not found:
        return ("runtimes: none: this installation reads and reports runs but cannot measure one "
                "(add a runtime: mpilens runtime add MPICC)")
    lines = ["runtimes:"]
    for r in found:
        lines.append(f"  {r['family']:8} {r.get('mpi', '?')} (MPI {r.get('standard', '?')}), built with {r.get('mpicc', '?')}")
    return "\n".join(lines)


def annotate_flags() -> str:
    """The compiler and linker flags of a program that uses the annotation API (mpilens.h, or
    Fortran's `use mpilens`: the same -I finds mpilens.mod)."""
    h = home()
    inc = h / "include" if h is not None and (h / "include" / "mpilens.h").is_file() else None
    if h is None or not (h / "lib" / "libmpilens-annotate.so").is_file():
        raise LaunchError("this installation has no annotation library (it has no runtime: `mpilens runtime add MPICC`)")
    more = ""
    if inc is None:  # a checkout: the header is in the sources, Fortran's module in build/include
        inc = h.parent / "runtime" / "include"
        more = f" -I{h / 'include'}" if (h / "include" / "mpilens.mod").is_file() else ""
    return f"-I{inc}{more} -L{h / 'lib'} -Wl,-rpath,{h / 'lib'} -lmpilens-annotate"


def _missing(what: str, mpi: str) -> LaunchError:
    h = home()
    if h is None:
        return LaunchError(f"this mpilens installation has no runtime (it reads and reports runs only); {what} needs "
                           f"one for {mpi}: `mpilens runtime add MPICC` builds it with that MPI's compiler wrapper")
    return LaunchError(f"this mpilens installation has no runtime for {mpi} (in {h}); build one with that MPI's "
                       f"compiler wrapper: `mpilens runtime add MPICC`")


def runtime_library(mpi: str) -> Path:
    """Return the measuring runtime built for an MPI flavor."""
    h = home()
    lib = None if h is None else h / "lib" / f"libmpilens-{mpi}.so"
    if lib is None or not lib.is_file():
        raise _missing("a measured run", mpi)
    return lib


def memory_interposer() -> Path:
    """Return memory mode's interposer of the allocation calls (preloaded in memory mode only)."""
    h = home()
    lib = None if h is None else h / "lib" / "libmpilens-memory.so"
    if lib is None or not lib.is_file():
        raise LaunchError(f"the mpilens memory interposer is missing ({lib}); reinstall mpilens")
    return lib


def preload_libraries(mpi: str, mode: str) -> list[Path]:
    """Return what LD_PRELOAD must hold for a run in MODE (the MPILENS_MODE list)."""
    libs = [runtime_library(mpi)]
    if "memory" in mode.split(","):
        libs.insert(0, memory_interposer())
    return libs


def helper_program(mpi: str, name: str) -> Path:
    """Return one of a family's helper programs (mpilens-check, mpilens-mpit)."""
    d = helper_dir(mpi)
    exe = None if d is None else d / name
    if exe is None or not exe.is_file():
        raise _missing(name, mpi)
    return exe


def helper_env(env: dict[str, str], library: str | None) -> dict[str, str]:
    """The environment to run a helper program (mpilens-check, mpilens-mpit) in, bound to the job's
    MPI library: preloaded, its directory first on the loader's path. A helper is built against one
    MPI of its family (Debian's Open MPI 4.1, say); the job's (Open MPI 5) has the same ABI, and its
    MPI_T knows the job's variables."""
    if not library:
        return env
    # the library itself is preloaded too: MPICH's derivatives name it libmpi.so.12 where Debian's
    # MPICH, which the helper may be built with, names it libmpich.so.12
    return {**env, "LD_LIBRARY_PATH": ":".join(x for x in (os.path.dirname(library), env.get("LD_LIBRARY_PATH")) if x),
            "LD_PRELOAD": ":".join(x for x in (library, env.get("LD_PRELOAD")) if x)}


def check_program(mpi: str) -> Path:
    """Return the settings checker built for an MPI flavor."""
    return helper_program(mpi, "mpilens-check")

