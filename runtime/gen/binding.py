"""How the runtime reaches the MPI the process loaded, generated from the build's mpi.h.

The runtime links no MPI library (no DT_NEEDED on libmpi): one build serves every version of its
ABI family, and a program that opens its MPI itself (mpi4py's dlopen with RTLD_LOCAL) gets the
MPI it chose, not the one the runtime was built with. So every PMPI function of the header is
called through a pointer, and every variable the header declares (Open MPI's predefined handles,
MPI_F_STATUS_IGNORE, ...) is reached through a pointer; runtime/src/binding.c fills both from
the MPI library found in the process.

Outputs:
  ml_pmpi.h   force-included into every runtime source after mpi.h: `PMPI_Send` names the pointer,
              `ompi_mpi_comm_world` the variable behind a pointer
  ml_pmpi.c   the pointers, each starting at a stub that binds the whole table on first use (a
              program may call MPI before the runtime could see its library), the stubs that stand
              for a function the running MPI lacks, and the name tables binding.c walks
"""

from __future__ import annotations

import re

import cheader

# declared by hand in the runtime, not in mpi.h: variables it reads all the same
EXTRA_VARIABLES = {"openmpi": [("char", "ompi_request_empty", "[]")]}


def extern_variables(preprocessed: str) -> list[tuple[str, str, str]]:
    """Return (type, name, array suffix) of every variable the header declares extern."""
    text = cheader.strip_attributes(preprocessed)
    out = []
    for stmt in text.split(";"):
        s = " ".join(stmt.split())
        if not s.startswith("extern ") or "(" in s or "{" in s:
            continue
        m = re.fullmatch(r"extern (.*?)\b([A-Za-z_]\w*)\s*((?:\[[^\]]*\])*)", s)
        if m:
            out.append((m.group(1).strip(), m.group(2), m.group(3)))
    return out


def _has_storage(ctype: str, suffix: str) -> bool:
    """Whether a stand-in of this type can be defined: pointers and scalars, whose value the
    runtime reads; a struct the header leaves incomplete is only ever addressed."""
    return "*" in ctype or (not suffix and "struct" not in ctype)


def generate(protos: dict[str, cheader.CPrototype], macros: set[str], preprocessed: str, mpi: str,
             stamp: str) -> tuple[str, str]:
    """Return (ml_pmpi.h, ml_pmpi.c) for the header's PMPI functions and extern variables."""
    fns = [p for name, p in sorted(protos.items()) if "P" + name not in macros]
    variables = extern_variables(preprocessed) + EXTRA_VARIABLES.get(mpi, [])
    h = [stamp, "#ifndef ML_PMPI_H", "#define ML_PMPI_H", "#include <mpi.h>",
         '#include "ml_standard.h" /* what this mpi.h lacks, from the standard (declare.py) */', "",
         "/* the pointers are the library's own: declared hidden, a call or a read is one instruction",
         " * relative to the program counter, not two through the GOT (bench/hotpath.py) */",
         '#define ML_BIND_HIDDEN __attribute__((visibility("hidden")))', "",
         "/* every PMPI function: a pointer into the MPI the process loaded (runtime/gen/binding.py);",
         " * deprecated functions too, as the wrappers are */",
         "#pragma GCC diagnostic push", '#pragma GCC diagnostic ignored "-Wdeprecated-declarations"']
    for p in fns:
        h += [f"typedef __typeof__(&P{p.name}) ml_pmpi_{p.name}_t;",
              f"extern ML_BIND_HIDDEN ml_pmpi_{p.name}_t ml_pmpi_{p.name};",
              f"#define P{p.name} ml_pmpi_{p.name}"]
    h += ["", "/* every variable the header declares: reached through a pointer bound likewise */"]
    for ctype, name, suffix in EXTRA_VARIABLES.get(mpi, []):
        h.append(f"extern {ctype} {name}{suffix};")
    for ctype, name, suffix in variables:
        h += [f"typedef __typeof__({name}) ml_var_{name}_t;",
              f"extern ML_BIND_HIDDEN ml_var_{name}_t *ml_var_{name};", f"#define {name} (*ml_var_{name})"]
    h += ["#pragma GCC diagnostic pop", "", "/* Binds the table to the MPI library loaded in this process; returns 0 when there is one.",
          " * Safe to call from any thread, any number of times (the first success binds). */",
          "int ml_bind_mpi(void);",
          "/* the path of the MPI library bound, or NULL before binding */",
          "const char *ml_bind_library(void);",
          "typedef struct ml_bind_slot { const char *name; void **slot; void *missing; } ml_bind_slot_t;",
          f"#define ML_BIND_NFUNCS {len(fns)}",
          f"#define ML_BIND_NVARS {len(variables)}",
          "extern const ml_bind_slot_t ml_bind_funcs[ML_BIND_NFUNCS];",
          "extern const ml_bind_slot_t ml_bind_vars[ML_BIND_NVARS > 0 ? ML_BIND_NVARS : 1];",
          "/* 1 when an MPI library is loaded and it does not define `name` (\"PMPI_Send\"); for the",
          " * wrappers' ifunc resolvers, which may run before any constructor */",
          "int ml_bind_mpi_lacks(const char *name);",
          "/* a function the running MPI lacks: one line on stderr, an error code to the caller */",
          "int ml_bind_missing(const char *name);",
          "", "#endif", ""]

    c = [stamp, '#include "ml_pmpi.h"', "", "/* stubs: bind on first use, then call the real function */"]
    for p in fns:
        params = [cp.declare(f"a{i}") for i, cp in enumerate(p.params)]
        args = ", ".join(f"a{i}" for i in range(len(p.params)))
        decl = ", ".join(params) + (", ..." if p.varargs else "") if params else "void"
        ret = p.ret
        call = f"ml_pmpi_{p.name}({args})"
        gone = f"ml_gone_{p.name}({args})"
        c += [f"static {ret} ml_lazy_{p.name}({decl});", f"static {ret} ml_gone_{p.name}({decl});",
              f"ml_pmpi_{p.name}_t ml_pmpi_{p.name} = ml_lazy_{p.name};",
              # a varargs function (MPI_Pcontrol) is passed its fixed arguments only
              f"static {ret} ml_lazy_{p.name}({decl})", "{",
              *([f"    if (ml_bind_mpi() != 0) {gone};", f"    else {call};"] if ret == "void" else
                [f"    if (ml_bind_mpi() != 0) return {gone};", f"    return {call};"]),
              "}",
              f"static {ret} ml_gone_{p.name}({decl})", "{",
              f'    const int ml_rc = ml_bind_missing("P{p.name}");',
              *(f"    (void)a{i};" for i in range(len(p.params)))]
        if ret == "void":
            c.append("    (void)ml_rc;")
        elif ret == "int":
            c.append("    return ml_rc;")
        else:
            c += ["    (void)ml_rc;", f"    {ret} ml_zero;", "    __builtin_memset(&ml_zero, 0, sizeof ml_zero);",
                  "    return ml_zero;"]
        c.append("}")
    c += ["", "/* variables: stand-ins until bound (pointers read as NULL, scalars as 0) */"]
    for ctype, name, suffix in variables:
        if _has_storage(ctype, suffix):
            c += [f"static ml_var_{name}_t ml_stand_in_{name};",
                  f"ml_var_{name}_t *ml_var_{name} = &ml_stand_in_{name};"]
        else:
            c.append(f"ml_var_{name}_t *ml_var_{name};")
    c += ["", "const ml_bind_slot_t ml_bind_funcs[ML_BIND_NFUNCS] = {"]
    c += [f'    {{"P{p.name}", (void **)&ml_pmpi_{p.name}, (void *)ml_gone_{p.name}}},' for p in fns]
    c += ["};", "const ml_bind_slot_t ml_bind_vars[ML_BIND_NVARS > 0 ? ML_BIND_NVARS : 1] = {"]
    c += [f'    {{"{name}", (void **)&ml_var_{name}, 0}},' for _, name, _ in variables] or ["    {0, 0, 0}"]
    c += ["};", ""]
    return "\n".join(h), "\n".join(c)
