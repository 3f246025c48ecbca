"""Call sites: which line of the application makes each MPI call.

The runtime counts every measured call at its call site (MPILENS_CALLSITE_DEPTH: the caller
outside MPI, or a call path of N frames) and writes each site's frames as (module, address in
the module's ELF file) into profile.json's ``callsites``, merged across ranks by that key. This
module turns them into function, file and line, at analysis time:

- **Symbolisation** uses binutils' ``addr2line`` in batch mode, one process per module for all of
  its addresses (``-a -f -C``: the address, the demangled function, file:line; separate debug
  files found by build id or debug link are used as binutils finds them). Measured on 10^4
  random addresses (docs/callsites.md): 0.11 s on a library with DWARF where elfutils'
  ``eu-addr2line`` took 64 s, and 1.6 s against 6.3 s on LAMMPS' stripped 12 MB library.
  The address looked up is the return address minus one: the call instruction, so the line is
  the call's even when the next statement starts right after it. A binary without debug
  information gives the function from its symbol table; without symbols, ``module+0xoffset``.
- **Python.** A Python frame's module is ``python\t<function>\t<file>`` and its address the line.
  A call made under Python is named by its innermost Python frame: with depth N > 1 a call from
  a C extension has the extension's native frames first (from the MPI call outwards), then the
  Python frames; the site's file, line and symbol are the Python frame's.
- **Cache.** The result is kept in the run directory (``callsites.json``), keyed by module path,
  its size and modification time, and the address; it is reused while the modules are unchanged.

``callsites(run)`` returns the sites as dicts (the report's JSON contract), sorted by total time.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections import defaultdict
from pathlib import Path
from typing import Any

from . import _layout, layout, safefile
from ._layout import CallsiteKeys, FrameKeys, ProfileKeys
from .errors import RunDirectoryError

SCHEMA = _layout.SCHEMA_CALLSITES
OTHER = "(other sites)"
PYTHON = "python\t"  # module of a Python frame (mpi4py): "python\t<function>\t<file>", address = line


def _module_key(module: str) -> str:
    try:
        st = os.stat(module)
    except OSError:
        return f"{module}|missing"
    return f"{module}|{st.st_size}|{int(st.st_mtime)}"


def _addr2line(module: str, addresses: list[int]) -> dict[int, dict[str, Any]]:
    """{address: {"symbol", "file", "line"}} for addresses (ELF virtual addresses) of one module."""
    out: dict[int, dict[str, Any]] = {}
    tool = shutil.which("addr2line")
    if tool is None or not os.path.exists(module):
        return out
    queries = [a - 1 if a > 0 else a for a in addresses]  # the call instruction, not the one after it
    p = subprocess.run([tool, "-a", "-f", "-C", "-e", module], input="\n".join(f"{q:#x}" for q in queries) + "\n",
                       capture_output=True, text=True, timeout=600)
    lines = p.stdout.splitlines()
    i = 0
    by_query = dict(zip(queries, addresses))
    while i + 2 < len(lines):
        if not lines[i].startswith("0x"):
            i += 1
            continue
        q = int(lines[i], 16)
        fn, loc = lines[i + 1], lines[i + 2]
        i += 3
        file, _, line = loc.partition(" (")[0].rpartition(":")
        a = by_query.get(q)
        if a is None:
            continue
        file = None if file in ("??", "") else file
        out[a] = {"symbol": None if fn == "??" else demangle_fortran(fn, file), "file": file,
                  "line": int(line) if line.isdigit() and int(line) > 0 else None}
    return out


_FORTRAN_SUFFIXES = (".f", ".f90", ".f95", ".f03", ".f08", ".for", ".ftn")
_FORTRAN_MODULE = re.compile(r"^__(\w+?)_MOD_(\w+)$")


def demangle_fortran(symbol: str | None, file: str | None) -> str | None:
    """gfortran's names as the source spells them: module procedures `__mod_MOD_proc` as
    `mod::proc`, external procedures `proc_` as `proc`, the main program `MAIN__` as
    `(main program)`. C++ names are demangled by addr2line -C."""
    if symbol is None:
        return None
    m = _FORTRAN_MODULE.match(symbol)
    if m:
        return f"{m.group(1)}::{m.group(2)}"
    if symbol == "MAIN__":
        return "(main program)"
    if file and file.lower().endswith(_FORTRAN_SUFFIXES) and symbol.endswith("_") and not symbol.endswith("__"):
        return symbol[:-1]
    return symbol


def _well_formed(modules: Any) -> bool:
    """Whether a cache's modules are what symbolise writes: {module: {key, addresses: {address:
    {symbol, file, line}}}}."""
    def entry(e: Any) -> bool:
        return (isinstance(e, dict) and isinstance(e.get("addresses"), dict)
                and all(isinstance(a, dict) and isinstance(a.get("symbol"), (str, type(None)))
                        and isinstance(a.get("file"), (str, type(None)))
                        and isinstance(a.get("line"), (int, type(None))) for a in e["addresses"].values()))
    return isinstance(modules, dict) and all(entry(e) for e in modules.values())


def symbolise(frames: set[tuple[str, int]], cache_file: Path | None = None) -> dict[tuple[str, int], dict[str, Any]]:
    """Function, file and line of each (module, address); cached in cache_file when given."""
    cache: dict[str, dict[str, Any]] = {}
    if cache_file is not None and cache_file.exists():
        try:  # mpilens' own cache: one that is not well formed is made again, never trusted
            doc = json.loads(layout.read_regular(cache_file, limit=256 << 20))
            if isinstance(doc, dict) and doc.get("schema") == SCHEMA and _well_formed(doc.get("modules")):
                cache = doc["modules"]
        except (OSError, ValueError, RunDirectoryError):
            cache = {}
    by_module: dict[str, list[int]] = defaultdict(list)
    for module, addr in frames:
        by_module[module].append(addr)
    result: dict[tuple[str, int], dict[str, Any]] = {}
    changed = False
    for module, addrs in by_module.items():
        key = _module_key(module)
        entry = cache.get(module)
        if entry is None or entry.get("key") != key:
            entry = cache[module] = {"key": key, "addresses": {}}
        known = entry["addresses"]
        missing = sorted({a for a in addrs if str(a) not in known})
        if missing:
            found = _addr2line(module, missing)
            for a in missing:
                known[str(a)] = found.get(a, {"symbol": None, "file": None, "line": None})
            changed = True
        for a in addrs:
            r = dict(known[str(a)])
            if r["symbol"] is None:  # stripped: module+offset
                r["symbol"] = f"{os.path.basename(module)}+{a:#x}"
            result[(module, a)] = r
    if changed and cache_file is not None:
        try:
            safefile.write_text(cache_file, json.dumps({"schema": SCHEMA, "symboliser": "binutils addr2line",
                                                        "modules": cache}))
        except OSError:
            pass  # a read-only run directory: symbolised again next time
    return result


def callsites(run: Any) -> list[dict[str, Any]]:
    """The run's call sites, symbolised, by total time: each {"mpi_function", "file", "line",
    "symbol", "module", "address", "calls", "time_s", "bytes_sent", "bytes_recv"} (per-rank lists,
    null for a rank without data) and, when the sites have more than one frame, "path": the frames
    from the MPI call outwards, each {"symbol", "file", "line", "module", "address"}. Empty when the
    run has no call sites (MPILENS_CALLSITE_DEPTH=0, or a run of an earlier version)."""
    C, F = CallsiteKeys, FrameKeys
    sites = (run.profile or {}).get(ProfileKeys.CALLSITES)
    if not sites:
        return []
    frames = {(f[F.MODULE], f[F.ADDRESS]) for s in sites for f in s[C.FRAMES]
              if f.get(F.MODULE) and not f[F.MODULE].startswith(PYTHON)}
    cache_file = layout.callsites_cache_file(run.path) if getattr(run, "path", None) else None
    sym = symbolise(frames, cache_file)
    depth = max((len(s[C.FRAMES]) for s in sites), default=0)
    out = []
    for s in sites:
        path = []
        first_python = None
        for f in s[C.FRAMES]:
            m, address = f.get(F.MODULE), f[F.ADDRESS]
            if m and m.startswith(PYTHON):  # a Python frame: "python\t<function>\t<file>", the line as address
                _, func, file = m.split("\t", 2)
                if first_python is None:
                    first_python = len(path)
                path.append({"symbol": func, "file": file, "line": address, "module": file, "address": address})
                continue
            r = sym.get((m, address)) if m else None
            path.append({"symbol": (r or {}).get("symbol") or f"{address:#x}", "file": (r or {}).get("file"),
                         "line": (r or {}).get("line"), "module": m, "address": address})
        # a call made under Python is named by its Python line, also when a C extension made it
        # (the path then has the extension's frames first)
        top = path[first_python or 0] if path else {"symbol": OTHER, "file": None, "line": None, "module": None,
                                                     "address": None}
        entry = {"mpi_function": s[C.FUNCTION], "file": top["file"], "line": top["line"], "symbol": top["symbol"],
                 "module": top["module"], "address": top["address"], "calls": s[C.CALLS], "time_s": s[C.TIME_S],
                 "bytes_sent": s[C.BYTES_SENT], "bytes_recv": s[C.BYTES_RECV]}
        if depth > 1:
            entry["path"] = [{k: f[k] for k in ("symbol", "file", "line", "module", "address")} for f in path]
        out.append(entry)
    out.sort(key=lambda e: -sum(v or 0 for v in e["time_s"]))
    return out


def site_frame(frames: list[tuple[str | None, int]]) -> int:
    """Index of the frame that names a site among its (module, address) frames, from the MPI call
    outwards: the first Python frame when there is one (a C extension's frames come before it
    in a mixed stack), else the first."""
    return next((i for i, (m, _) in enumerate(frames) if m is not None and m.startswith(PYTHON)), 0)


def location(site: dict[str, Any]) -> str:
    """file:line of a site (the file's name only), or its symbol when the line is unknown."""
    if site.get("file") and site.get("line"):
        return f"{os.path.basename(site['file'])}:{site['line']}"
    return site.get("symbol") or OTHER
