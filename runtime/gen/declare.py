"""Declarations the build's mpi.h lacks, taken from the MPI standard.

One runtime serves every MPI of its ABI family (binding.py), and the header it is built with may be
older than the MPI a job runs: Open MPI 4.1's header has no MPI_Isendrecv, Open MPI 5's library
has. So a standard function the header lacks is declared here from the standard's own C prototype
and wrapped like the others; its wrapper is exported only where the running MPI has the function
(the ifunc resolvers of generate.py). Types the header lacks get the family's representation: a
handle is a pointer to an incomplete struct in Open MPI and an int in MPICH, an enumeration an int,
a callback type the standard's typedef. The compiler says which types the header lacks and which
declarations still do not compile (those functions are not wrapped, and wrapped.txt says why).

Only for the Open MPI family (FAMILIES). A declared wrapper must be an ifunc, absent where the
running MPI lacks the function (a program probing for it with a weak reference must see the truth),
and an ifunc may only be bound by objects relocated after the runtime: glibc prints "Relink ... for
IFUNC symbol" on every run otherwise. Open MPI's own libraries call PMPI_ functions, never MPI_
ones; the MPICH family's Fortran library calls the MPI_ C functions and Intel MPI binds it at load
time (BIND_NOW), so every Fortran program of Intel MPI would print one such line per declared
function. There the functions newer than the header stay unwrapped, and `mpilens run` names any
the program calls (python/mpilens/imports.py).
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass, field

import cheader
import standard

# the runtimes whose header's missing functions are declared (see above)
FAMILIES = {"openmpi"}
# handle types of MPI-4.0 and later that an older header may lack
HANDLE_TYPES = {"MPI_Session", "MPI_T_event_registration", "MPI_T_event_instance"}
ENUM_TYPES = {"MPI_T_cb_safety", "MPI_T_source_order"}


@dataclass
class Declared:
    """What was declared from the standard for one build."""

    header: str  # ml_standard.h
    protos: dict[str, cheader.CPrototype] = field(default_factory=dict)  # by MPI name
    stand_ins: list[str] = field(default_factory=list)  # type names the header lacks, given a stand-in
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (function, why)


def _type_names(decl: str) -> set[str]:
    params = decl[decl.index("(") + 1:]
    return set(re.findall(r"\bMPI_\w+", params))


def _errors_by_line(cc: str, text: str) -> dict[int, str]:
    """Compile text (syntax only) and return the first error message of each line that has one."""
    env = dict(os.environ, LC_ALL="C")
    r = subprocess.run([cc, "-fsyntax-only", "-fmax-errors=0", "-x", "c", "-"], input=text, capture_output=True,
                       text=True, env=env)
    out: dict[int, str] = {}
    for m in re.finditer(r"^<stdin>:(\d+):\d+: error: (.*)$", r.stderr, flags=re.M):
        out.setdefault(int(m.group(1)), m.group(2))
    return out


def _missing_types(cc: str, names: set[str]) -> set[str]:
    names_sorted = sorted(names)
    lines = ["#include <mpi.h>"] + [f"{n} *ml_probe_{i};" for i, n in enumerate(names_sorted)]
    errors = _errors_by_line(cc, "\n".join(lines) + "\n")
    return {names_sorted[ln - 2] for ln in errors if 2 <= ln < len(lines) + 1}


def from_standard(cc: str, mpi: str, functions: list[standard.StdFunction]) -> Declared:
    """Declare `functions` (standard functions the header lacks) for the header of `cc`."""
    callbacks = standard.callbacks()
    wanted: set[str] = set()
    for f in functions:
        wanted |= _type_names(f.c_decl)
    for name in list(wanted):
        if name in callbacks:
            wanted |= _type_names(callbacks[name])
    missing = _missing_types(cc, wanted) if wanted else set()

    handles = [n for n in sorted(missing) if n in HANDLE_TYPES]
    enums = [n for n in sorted(missing) if n in ENUM_TYPES]
    cbs = [n for n in sorted(missing) if n in callbacks]
    unknown = missing - set(handles) - set(enums) - set(cbs)
    rep = "struct ml_std_{0} *" if mpi == "openmpi" else "int "
    head = ["/* the handle, enumeration and callback types of the standard this mpi.h lacks */"]
    head += [f"typedef {rep.format(n)}{n};" for n in handles]
    head += [f"typedef int {n};" for n in enums]
    head += [callbacks[n] + ";" for n in cbs]

    decls: list[tuple[standard.StdFunction, str]] = []
    out = Declared(header="", stand_ins=handles + enums + cbs)
    for f in functions:
        lacking = sorted(_type_names(f.c_decl) & unknown)
        if lacking:
            out.skipped.append((f.name, "mpi.h lacks " + ", ".join(lacking)))
            continue
        decls.append((f, f.c_decl))
    # one line per declaration (PMPI and MPI), so that an error names its function
    lines = ["#include <mpi.h>", *head]
    first = len(lines) + 1
    for f, d in decls:
        lines.append(f"{d.replace(f.name + '(', 'P' + f.name + '(', 1)}; {d};")
    errors = _errors_by_line(cc, "\n".join(lines) + "\n")
    kept = []
    for i, (f, d) in enumerate(decls):
        err = errors.get(first + i)
        if err:
            out.skipped.append((f.name, "the standard's prototype does not compile with this mpi.h: " + err))
        else:
            kept.append((f, d))
    body = [f"{d.replace(f.name + '(', 'P' + f.name + '(', 1)};\n{d};" for f, d in kept]
    out.protos = cheader.parse_prototypes("\n".join(body))
    out.header = "\n".join(["#ifndef ML_STANDARD_H", "#define ML_STANDARD_H", "",
                            "/* Standard functions this build's mpi.h lacks, declared from the MPI standard",
                            " * (runtime/gen/declare.py says why) */", "#include <mpi.h>", "", *head, "",
                            *body, "", "#endif", ""])
    return out
