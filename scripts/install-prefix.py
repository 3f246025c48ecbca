#!/usr/bin/env python3
"""`make install PREFIX=... [DESTDIR=...] [MPICC=...]`: mpilens in a prefix, the way a cluster's
software is installed, without root:

    bin/mpilens                              the command line (runs the prefix's own Python environment)
    lib/libmpilens-<family>.so               the runtime for MPICC's MPI (MPICC, else mpicc on PATH)
    lib/libmpilens-memory.so, libmpilens-annotate.so, pkgconfig/mpilens.pc
    libexec/mpilens/<family>/                the runtime's helper programs and its description
    include/mpilens.h, mpilens.f90, .mod     the annotation API (C; Fortran's module, source and compiled)
    lib/mpilens/python/                      a Python environment holding the mpilens package
    share/mpilens/src/                       the runtime's sources (`mpilens runtime add` builds from them)
    share/mpilens/examples/, share/doc/mpilens/
    share/modulefiles/mpilens/<version>.lua  Lmod's modulefile; <version> Environment Modules' (Tcl)

Nothing installed names the prefix or the sources: the prefix can be moved (bin/mpilens, the package
and the modulefiles find it relative to themselves). Installing again into the same prefix with
another MPICC adds that MPI's runtime (one per family: Open MPI, MPICH and its derivatives, the
MPI-5 standard ABI). PYTHON chooses the Python (3.11 or newer) the environment is made from.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("runtime_build", ROOT / "python" / "mpilens" / "runtime_build.py")
runtime_build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(runtime_build)

WRAPPER = """#!/bin/sh
# mpilens, installed in a prefix: the package runs in the prefix's own Python environment, found
# relative to this script (the prefix can be moved)
here=$(dirname "$(readlink -f "$0")")
exec "$here/../lib/mpilens/python/bin/python" -m mpilens "$@"
"""

PKGCONFIG = """# the annotation API (mpilens.h: regions, counters); the prefix is where this file is
prefix=${{pcfiledir}}/../..
includedir=${{prefix}}/include
libdir=${{prefix}}/lib

Name: mpilens
Description: mpilens annotation API (regions and counters, measured by mpilens' runtime)
Version: {version}
Cflags: -I${{includedir}}
Libs: -L${{libdir}} -Wl,-rpath,${{libdir}} -lmpilens-annotate
"""

LUA = """-- mpilens {version}: insight into the performance of MPI applications (Lmod)
-- the prefix is found relative to this file: the installation can be moved
local prefix = myFileName():gsub("/share/modulefiles/mpilens/[^/]*$", "")
whatis("Name: mpilens")
whatis("Version: {version}")
whatis("Description: performance of MPI applications through low-level metrics")
help([[mpilens {version}: `mpilens run -- mpirun ...` measures a job; `mpilens report RUNDIR` shows it.
Documentation: ]] .. prefix .. [[/share/doc/mpilens]])
setenv("MPILENS_ROOT", prefix)
prepend_path("PATH", pathJoin(prefix, "bin"))
prepend_path("PKG_CONFIG_PATH", pathJoin(prefix, "lib/pkgconfig"))
prepend_path("CPATH", pathJoin(prefix, "include"))
"""

TCL = """#%Module1.0
## mpilens {version}: insight into the performance of MPI applications (Environment Modules)
## the prefix is found relative to this file: the installation can be moved
set prefix [file dirname [file dirname [file dirname [file dirname [file normalize $ModulesCurrentModulefile]]]]]
module-whatis "mpilens {version}: performance of MPI applications through low-level metrics"
setenv MPILENS_ROOT $prefix
prepend-path PATH $prefix/bin
prepend-path PKG_CONFIG_PATH $prefix/lib/pkgconfig
prepend-path CPATH $prefix/include
"""


def say(msg: str) -> None:
    print(f"mpilens install: {msg}", flush=True)


def python_env(python: str, dest: Path, prefix_in_dest: Path) -> Path:
    """The prefix's Python environment with the package (the analysis; its runtime is the prefix's)."""
    venv = dest / "lib" / "mpilens" / "python"
    if not (venv / "bin" / "python").exists():
        say(f"Python environment in {venv} ({python})")
        subprocess.run([python, "-m", "venv", str(venv)], check=True)
    env = {**os.environ, "MPILENS_RUNTIME": "none", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    say("the mpilens package and its dependencies (pip)")
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-warn-script-location",
                    "-c", str(ROOT / "python" / "constraints.txt"), str(ROOT)], check=True, env=env)
    site = Path(subprocess.run([str(venv / "bin" / "python"), "-c", "import mpilens, os; print(os.path.dirname("
                                "mpilens.__file__))"], capture_output=True, text=True, check=True,
                               env={**env, "MPLBACKEND": "Agg"}).stdout.strip())
    # pip's record of where the package came from: the sources, which may be gone
    for f in site.parent.glob("mpilens-*.dist-info/direct_url.json"):
        f.unlink()
    # the package finds the prefix relative to itself
    home = os.path.relpath(prefix_in_dest, site)
    version = (ROOT / "VERSION").read_text().strip()
    (site / "_build.py").write_text('"""Generated by `make install`: the home of this installation\'s runtimes, relative to the '
                                    f'package (build_info.py). Do not edit."""\nHOME = "{home}"\nVERSION = "{version}"\n')
    return venv


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prefix", required=True, help="where mpilens will be used from (PREFIX)")
    ap.add_argument("--destdir", default="", help="a staging directory the prefix is written under (DESTDIR)")
    ap.add_argument("--mpicc", help="the MPI compiler wrapper to build the runtime with (default: MPICC, else mpicc)")
    ap.add_argument("--python", default=os.environ.get("PYTHON") or "python3", help="the Python of the environment")
    a = ap.parse_args()
    prefix = Path(a.prefix)
    if not prefix.is_absolute():
        ap.error(f"PREFIX={a.prefix}: give an absolute path")
    dest = Path(a.destdir + str(prefix)) if a.destdir else prefix
    dest.mkdir(parents=True, exist_ok=True)
    version = (ROOT / "VERSION").read_text().strip()

    venv = python_env(a.python, dest, dest)
    mpicc = a.mpicc or runtime_build.find_mpicc()
    if mpicc:
        say(f"the runtime for MPICC={mpicc}")
        # in the checkout's build/: what `make` built with the same compiler is not built again
        facts = runtime_build.build(ROOT, mpicc, dest, python=str(venv / "bin" / "python"), scratch=ROOT / "build")
        say(f"runtime for {facts['family']}: {facts['mpi']}")
    else:
        say("no MPI compiler wrapper (MPICC unset, no mpicc on PATH): the analysis alone; "
            "`mpilens runtime add MPICC` adds a runtime later")
    runtime_build.ship_sources(ROOT, dest)

    (dest / "bin").mkdir(exist_ok=True)
    (dest / "bin" / "mpilens").write_text(WRAPPER)
    os.chmod(dest / "bin" / "mpilens", 0o755)
    (dest / "include").mkdir(exist_ok=True)
    for api in ("mpilens.h", "mpilens.f90"):  # (the runtime's build made mpilens.mod beside them)
        shutil.copy2(ROOT / "runtime" / "include" / api, dest / "include" / api)
    (dest / "lib" / "pkgconfig").mkdir(parents=True, exist_ok=True)
    (dest / "lib" / "pkgconfig" / "mpilens.pc").write_text(PKGCONFIG.format(version=version))
    docs = dest / "share" / "doc" / "mpilens"
    shutil.copytree(ROOT / "docs", docs, dirs_exist_ok=True)
    shutil.copy2(ROOT / "README.md", docs / "README.md")
    for kind in ("c", "fortran", "cxx"):
        shutil.copytree(ROOT / "examples" / kind, dest / "share" / "mpilens" / "examples" / kind, dirs_exist_ok=True)
    modules = dest / "share" / "modulefiles" / "mpilens"
    modules.mkdir(parents=True, exist_ok=True)
    (modules / f"{version}.lua").write_text(LUA.format(version=version))
    (modules / version).write_text(TCL.format(version=version))
    say(f"done: {prefix}\n  module use {prefix}/share/modulefiles && module load mpilens\n"
        f"  or: export PATH={prefix}/bin:$PATH")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (runtime_build.BuildError, subprocess.CalledProcessError, OSError) as err:
        print(f"mpilens install: {err}", file=sys.stderr)
        sys.exit(1)
