"""Which MPI an MPI compiler wrapper builds for: the runtime family it needs and the MPI's version.

    mpicc_probe.py MPICC            prints the family: openmpi, mpich or abi
    mpicc_probe.py MPICC --json F   writes the runtime's description (family, MPI, version, MPICC) to F

The family is the ABI a runtime is built for, read from the macros of the wrapper's own mpi.h, so it
does not depend on the wrapper's name: Open MPI's (OPEN_MPI), MPICH's (MPICH_VERSION: MPICH and the
MPIs built on it, Intel MPI, MVAPICH, Cray MPICH) or the MPI-5 standard ABI (MPI_ABI_VERSION, the
header of `mpicc_abi` and of libmpi_abi). The build (runtime/runtime.mk) and `mpilens runtime add`
call it; `mpilens --version` shows the description.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# one line per fact the header defines; the order decides: the standard ABI's header also defines
# its implementation's macros in some MPIs, and Intel MPI's and MVAPICH's define MPICH_VERSION
_PROBE = """#include <mpi.h>
#if defined(MPI_ABI_VERSION)
mpilens_family abi
mpilens_name "MPI-5 standard ABI" MPI_ABI_VERSION.MPI_ABI_SUBVERSION
#elif defined(OPEN_MPI)
mpilens_family openmpi
#elif defined(MPICH_VERSION)
mpilens_family mpich
#endif
#if defined(MPI_ABI_VERSION)
#elif defined(I_MPI_VERSION)
mpilens_name "Intel MPI" I_MPI_VERSION
#elif defined(MVAPICH2_VERSION)
mpilens_name "MVAPICH" MVAPICH2_VERSION
#elif defined(MVAPICH_VERSION)
mpilens_name "MVAPICH" MVAPICH_VERSION
#elif defined(CRAY_MPICH_VERSION)
mpilens_name "Cray MPICH" CRAY_MPICH_VERSION
#elif defined(OPEN_MPI)
mpilens_name "Open MPI" OMPI_MAJOR_VERSION.OMPI_MINOR_VERSION.OMPI_RELEASE_VERSION
#elif defined(MPICH_VERSION)
mpilens_name "MPICH" MPICH_VERSION
#endif
mpilens_standard MPI_VERSION.MPI_SUBVERSION
"""


class ProbeError(Exception):
    """The wrapper is not an MPI C compiler this build can use; the message says why."""


def probe(mpicc: str) -> dict[str, str]:
    """Return {family, mpi, standard, mpicc} for an MPI C compiler wrapper (a command, possibly
    with arguments, as MPICC is given)."""
    argv = shlex.split(mpicc)
    if not argv:
        raise ProbeError("MPICC is empty")
    with tempfile.TemporaryDirectory(prefix="mpilens-probe-") as tmp:
        src = Path(tmp) / "probe.c"
        src.write_text(_PROBE)
        try:
            p = subprocess.run([*argv, "-E", "-P", str(src)], capture_output=True, text=True, errors="replace",
                               check=False)
        except OSError as err:
            raise ProbeError(f"{argv[0]}: cannot run it ({err.strerror})") from err
    if p.returncode != 0:
        last = (p.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise ProbeError(f"{mpicc} cannot compile a program that includes mpi.h: {last}")
    facts: dict[str, str] = {}
    for line in p.stdout.splitlines():
        key, _, value = line.strip().partition(" ")
        if key.startswith("mpilens_"):
            # the preprocessor spaces the tokens of "5 . 0 . 11" apart
            facts[key.removeprefix("mpilens_")] = re.sub(r"\s*\.\s*", ".", " ".join(value.replace('"', " ").split()))
    if "family" not in facts:
        raise ProbeError(f"{mpicc}: its mpi.h is neither Open MPI's, MPICH's (or a derivative's) nor the MPI-5 "
                         "standard ABI's; mpilens has no runtime for it")
    # the wrapper as a user would find it again: a relative path made absolute
    where = os.path.abspath(argv[0]) if "/" in argv[0] else (shutil.which(argv[0]) or argv[0])
    return {"family": facts["family"], "mpi": facts.get("name", "an MPI"), "standard": facts.get("standard", ""),
            "mpicc": " ".join([where, *argv[1:]])}


def main() -> int:
    args = sys.argv[1:]
    if len(args) not in (1, 3) or (len(args) == 3 and args[1] != "--json"):
        print(__doc__, file=sys.stderr)
        return 2
    try:
        facts = probe(args[0])
    except ProbeError as err:
        print(f"mpilens: {err}", file=sys.stderr)
        return 1
    if len(args) == 3:
        out = Path(args[2])
        tmp = out.with_name(out.name + f".{os.getpid()}")
        tmp.write_text(json.dumps(facts, indent=1) + "\n")
        tmp.replace(out)
    else:
        print(facts["family"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
