"""`mpilens runtime`: the runtimes of this installation: list them, or build one for another MPI."""

from __future__ import annotations

import argparse
import json
import shutil
import sys

from ..cli import command
from ..errors import MpilensError


def _setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("what", choices=["list", "add", "flags"],
                   help="list: the runtimes installed and the MPI each was built with; add MPICC: build the runtime "
                        "for the MPI of that compiler wrapper and install it here (replacing one of the same family); "
                        "flags: the compiler and linker flags of a program that calls the annotation API (mpilens.h)")
    p.add_argument("mpicc", nargs="?", help="add: the MPI's C compiler wrapper (a path, or a command on PATH)")
    p.add_argument("--json", action="store_true", help="list: print one JSON document")
    p.add_argument("-v", "--verbose", action="store_true", help="add: show the build's commands")


@command("runtime", "the runtimes of this installation: list them, add one for another MPI, the annotation API's flags",
         _setup)
def runtime_cmd(a: argparse.Namespace) -> int:
    """`mpilens runtime list|add MPICC|flags`."""
    from .. import build_info, runtime_build

    if a.what == "list":
        if a.json:
            json.dump({"home": str(build_info.home()) if build_info.home() else None, "runtimes": build_info.runtimes()},
                      sys.stdout, indent=1)
            print()
        else:
            print(build_info.describe())
        return 0
    if a.what == "flags":
        print(build_info.annotate_flags())
        return 0
    if not a.mpicc:
        raise MpilensError("runtime add: give the MPI's compiler wrapper, e.g. `mpilens runtime add $(which mpicc)`")
    mpicc = a.mpicc if "/" in a.mpicc else (shutil.which(a.mpicc) or a.mpicc)
    home, source = build_info.home(), build_info.source_dir()
    if home is None or source is None:
        raise MpilensError("this installation has no runtime sources to build from (an analysis-only install from a "
                           "wheel): install mpilens from its sources, `pip install mpilens-VERSION.tar.gz` or a clone")
    facts = runtime_build.build(source, mpicc, home, verbose=a.verbose)
    print(f"mpilens: runtime for {facts['family']} ({facts.get('mpi', '?')}) installed in {home}")
    return 0
