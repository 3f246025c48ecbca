"""The MPI functions a program calls that the runtime does not measure.

`mpilens run` reads, before the job starts, the dynamic symbols the program and the libraries it
loads import (an MPI call is an undefined symbol there) and the symbols the runtime exports (its
wrappers). An imported MPI function the runtime does not export is called past mpilens: the run
directory's imports.json lists it with the object that imports it, and the report names it. The
functions the runtime leaves out on purpose (no communication: MPI_Wtime, handle conversions;
runtime/spec/semantics.yaml says why) are listed apart, and a direct PMPI_ call (another tool, or a
library calling the profiling interface itself) is listed as unmeasured too.

The libraries of the MPI itself (any object that defines an MPI function) are not read: their
calls into each other are the MPI's own business.
"""

from __future__ import annotations

import functools
import json
import re
import subprocess
from pathlib import Path
from typing import Any

from . import _layout, safefile
from .elf import dynamic_symbols as _dyn_symbols

SCHEMA = _layout.SCHEMA_IMPORTS
# C, Fortran (any mangling) and profiling-interface names of MPI functions and extensions
MPI_NAME = re.compile(r"^(P?MPIX?_[A-Za-z]\w*|p?mpix?_[a-z0-9_]+)$")


def _dependencies(program: str, env: dict[str, str] | None = None) -> list[str]:
    """The shared libraries the program loads, by ldd with the job's environment (paths that exist)."""
    try:
        out = subprocess.run(["ldd", program], capture_output=True, text=True, timeout=60, errors="replace",
                             env=env).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    paths = re.findall(r"=>\s+(/\S+)\s+\(0x", out)
    return [p for p in paths if Path(p).is_file()]


@functools.lru_cache(maxsize=8)
def exported(runtime: str) -> frozenset[str]:
    """The MPI names the runtime library defines (its wrappers)."""
    syms = _dyn_symbols(runtime) or []
    return frozenset(n for n, _, defined in syms if defined and MPI_NAME.match(n))


def _excluded(helpers: Path | None) -> dict[str, str]:
    """{lowercase C name: why} of the functions the runtime leaves out on purpose (the generator's
    wrapped.txt, installed beside the family's helper programs)."""
    out: dict[str, str] = {}
    if helpers is None:
        return out
    try:
        text = (helpers / "wrapped.txt").read_text(errors="replace")
    except OSError:
        return out
    for m in re.finditer(r"^skipped (MPI_\w+): excluded: (.*)$", text, re.M):
        out[m.group(1).lower()] = m.group(2)
    return out


def _c_name(symbol: str) -> str:
    """The lowercase C name of an MPI symbol in any mangling: pmpi_send__ -> mpi_send."""
    s = symbol.lower()
    if s.startswith("pmpi"):
        s = s[1:]
    s = re.sub(r"(_f08ts|_f08|_f)?_*$", "", s)
    return s


def find(program: str, runtime: str, mpi: str, helpers: Path | None,
         env: dict[str, str] | None = None) -> dict[str, Any]:
    """The imports.json document for a program run with the runtime library `runtime`."""
    ours = exported(runtime)
    excluded = _excluded(helpers)
    users, mpi_defines = [], set()
    # the C functions (lowercase) that each Fortran name of the MPI's libraries may call: those the
    # library defining it imports (MPICH's libmpichfort implements mpi_send_ and mpi_send_f08ts_
    # over MPI_Send), so that the runtime's C wrapper measures the call
    c_entries: dict[str, set[str]] = {}
    for path in [program, *_dependencies(program, env)]:
        syms = _dyn_symbols(path)
        if syms is None:
            continue
        defines = {n for n, _, defined in syms if defined and MPI_NAME.match(n)}
        if path != program and defines:
            mpi_defines |= defines  # a library of the MPI itself
            calls_c = {n.lower() for n, _, defined in syms if not defined and n.startswith("MPI_") and n in ours}
            for n in defines:
                if n[0].islower() and _c_name(n) in calls_c:
                    c_entries.setdefault(n, set()).add(_c_name(n))
        else:
            users.append((path, syms))
    objects = []
    for path, syms in users:
        # a weak reference to a function the MPI lacks (a probe: mpi4py's, weak_probe.c) is no call
        calls = sorted({n for n, obj, defined in syms if not defined and not obj and MPI_NAME.match(n)
                        and (not mpi_defines or n in mpi_defines or n in ours)})
        if not calls:
            continue
        unmeasured, by_design = [], []
        # a tool linked into this object (its own MPI_Send exported, calling PMPI_Send): the runtime's
        # PMPI entries measure what it passes on (runtime/gen/binding.py)
        wraps = {n for n, _, defined in syms if defined and MPI_NAME.match(n)}
        for n in calls:
            if n in ours and not n.lower().startswith("pmpi"):
                continue
            if n in c_entries:
                continue  # the MPI's Fortran library calls the C function the runtime wraps
            if n.startswith("PMPI_") and n in ours and n[1:] in wraps:
                continue
            why = excluded.get(_c_name(n))
            if why and not n.lower().startswith("pmpi"):
                by_design.append({"name": n, "why": why})
            else:
                unmeasured.append({"name": n, "why": "called through the profiling interface, which no tool sees"
                                   if n.lower().startswith("pmpi") else "the runtime has no wrapper for it"})
        objects.append({"path": path, "imports": len(calls), "unmeasured": unmeasured, "left_out": by_design})
    return {"schema": SCHEMA, "runtime": runtime, "objects": objects}


def write(doc: dict[str, Any], path: Path) -> None:
    """Write the imports.json document to path."""
    safefile.write_text(path, json.dumps(doc, indent=1) + "\n")


def unmeasured_names(doc: dict[str, Any]) -> list[tuple[str, str]]:
    """(function, object) of every unmeasured import, in order."""
    return [(u["name"], o["path"]) for o in doc.get("objects", []) for u in o.get("unmeasured", [])]
