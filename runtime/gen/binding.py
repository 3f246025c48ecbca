"""How the runtime reaches the MPI the process loaded, generated from the build's mpi.h.

The runtime links no MPI library (no DT_NEEDED on libmpi): one build serves every version of its
ABI family, and a program that opens its MPI itself (mpi4py's dlopen with RTLD_LOCAL) gets the
MPI it chose, not the one the runtime was built with. So every PMPI function of the header is
called through a pointer, and every variable the header declares (Open MPI's predefined handles,
MPI_F_STATUS_IGNORE, ...) is reached through a pointer; runtime/src/core/binding.c fills both from
the MPI library found in the process.

Other MPI tools in the same process (PMPI tools: Darshan, mpiP, Caliper) are composed with, not
skipped (docs/tools.md):
- a wrapper forwards the call it measures to `ml_next_Send`: the next tool's MPI_Send when a tool
  is loaded after the runtime, else the MPI's PMPI_Send. The runtime's own calls (its MPI_Init
  exchange, the merge at MPI_Finalize) keep calling PMPI_Send, which no tool sees;
- a tool loaded before the runtime calls PMPI_Send from its MPI_Send, so the runtime exports
  PMPI_Send too (for every C function it wraps): the entry runs the wrapper when an object before
  the runtime defines MPI_Send and the call comes from that MPI_Send (it passes on a call of the
  program, not measured yet; the tool's own calls are not the program's), else it passes the call on
  to whatever defines PMPI_Send after the runtime (a tool that wraps the PMPI_ names too, as
  Darshan does to see Fortran and other tools' calls, else the MPI).

Outputs:
  ml_pmpi.h   force-included into every runtime source after mpi.h: `PMPI_Send` names the pointer,
              `ompi_mpi_comm_world` the variable behind a pointer
  ml_pmpi.c   the pointers, each starting at a stub that binds the whole table on first use (a
              program may call MPI before the runtime could see its library), the stubs that stand
              for a function the running MPI lacks, and the name tables binding.c walks
  ml_pmpi_entries.c  the exported PMPI entries
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
             stamp: str, entries: set[str]) -> tuple[str, str, str]:
    """Return (ml_pmpi.h, ml_pmpi.c, ml_pmpi_entries.c) for the header's PMPI functions and extern
    variables; entries: the C functions whose wrapper is a plain export (not an ifunc), which get a
    PMPI entry."""
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
              f"extern ML_BIND_HIDDEN ml_pmpi_{p.name}_t ml_next_{p.name};",
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
          "/* a function of the table: PMPI name, its pointer, the stand-in for an MPI lacking it, the",
          " * pointer the wrapper forwards to (the next tool's MPI_ function, else the same as slot),",
          " * whether the runtime exports a PMPI entry for it */",
          "typedef struct ml_bind_slot { const char *name; void **slot; void *missing; void **next; int entry; } ml_bind_slot_t;",
          "/* per function of ml_bind_funcs: 1 when an object before the runtime defines its MPI_ name",
          " * (its PMPI entry then runs the wrapper); ml_bind_shadows() fills it */",
          "extern unsigned char ml_bind_shadow[];",
          "/* per function: what its PMPI entry calls when not shadowed (set at binding; NULL before) */",
          "extern void *ml_bind_pnext[];",
          "extern int ml_bind_shadow_known;",
          "void ml_bind_shadows(void);",
          "/* whether the call of shadowed function i made from return address ra passes on a call of the",
          " * program (the tool's MPI_ function is on the stack), not one of the tool's own */",
          "int ml_bind_forwarded(int i, const void *ra);",
          "/* whether a PMPI tool is loaded before the runtime; whether address p is in the code of one */",
          "int ml_bind_tool_before(void);",
          "int ml_bind_in_tool_before(const void *p);",
          "/* calls f for every function whose calls reach another tool: before (1: an object before the",
          " * runtime defines its MPI_ name) or after it (0: the wrapper forwards to it); object is its path */",
          "void ml_bind_tools(void (*f)(void *arg, const char *function, const char *object, int before), void *arg);",
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
        nxt = f"ml_next_{p.name}({args})"
        c += [f"static {ret} ml_lazy_{p.name}({decl});", f"static {ret} ml_lazynext_{p.name}({decl});",
              f"static {ret} ml_gone_{p.name}({decl});",
              f"ml_pmpi_{p.name}_t ml_pmpi_{p.name} = ml_lazy_{p.name};",
              f"ml_pmpi_{p.name}_t ml_next_{p.name} = ml_lazynext_{p.name};"]
        for stub, target in ((f"ml_lazy_{p.name}", call), (f"ml_lazynext_{p.name}", nxt)):
            # a varargs function (MPI_Pcontrol) is passed its fixed arguments only
            c += [f"static {ret} {stub}({decl})", "{",
                  *([f"    if (ml_bind_mpi() != 0) {gone};", f"    else {target};"] if ret == "void" else
                    [f"    if (ml_bind_mpi() != 0) return {gone};", f"    return {target};"]),
                  "}"]
        c += [f"static {ret} ml_gone_{p.name}({decl})", "{",
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
    index = {p.name: i for i, p in enumerate(fns)}
    c += ["", "/* the PMPI entries' state (ml_pmpi_entries.c), filled by binding.c */",
          f"unsigned char ml_bind_shadow[{max(len(fns), 1)}];", "int ml_bind_shadow_known;",
          f"void *ml_bind_pnext[{max(len(fns), 1)}];"]
    e = [stamp, '#include "ml_pmpi.h"', "",
         "/* PMPI entries: what a tool loaded before the runtime reaches from its MPI_ wrapper (the",
         " * wrapper runs then: the call was not measured yet); anything else calling PMPI_ directly (a",
         " * program, Open MPI's Fortran bindings, a tool after the runtime) goes on to what defines the",
         " * PMPI_ name after the runtime, one test and one jump on. Apart from ml_pmpi.c, which the C unit",
         " * tests link without the wrappers these entries call. */",
         "#pragma GCC diagnostic push", '#pragma GCC diagnostic ignored "-Wdeprecated-declarations"']
    for p in fns:
        if p.name not in entries:
            continue
        params = [cp.declare(f"a{i}") for i, cp in enumerate(p.params)]
        args = ", ".join(f"a{i}" for i in range(len(p.params)))
        decl = ", ".join(params) + (", ..." if p.varargs else "") if params else "void"
        ret = "" if p.ret == "void" else "return "
        e += [f"extern ML_BIND_HIDDEN __typeof__({p.name}) ml_self_{p.name};",
              f'__attribute__((visibility("default"))) {p.ret} ml_entry_{p.name}({decl}) __asm__("P{p.name}");',
              f"{p.ret} ml_entry_{p.name}({decl})", "{",
              "    if (__builtin_expect(!__atomic_load_n(&ml_bind_shadow_known, __ATOMIC_ACQUIRE), 0)) ml_bind_shadows();",
              f"    if (__builtin_expect(ml_bind_shadow[{index[p.name]}], 0) && "
              f"ml_bind_forwarded({index[p.name]}, __builtin_return_address(0))) {{",
              # not a tail call: the wrapper's return address must be here, not in the tool, whose
              # own calls the wrapper leaves out (core.c: ml_enter_after_reset)
              *([f"        ml_self_{p.name}({args});", '        __asm__ volatile("");', "        return;"]
                if p.ret == "void" else
                [f"        const {p.ret} ml_rc = ml_self_{p.name}({args});", '        __asm__ volatile("");',
                 "        return ml_rc;"]),
              "    }",
              "    {",
              f"        ml_pmpi_{p.name}_t ml_f = (ml_pmpi_{p.name}_t)__atomic_load_n(&ml_bind_pnext[{index[p.name]}], __ATOMIC_ACQUIRE);",
              f"        {ret}(ml_f != 0 ? ml_f : ml_pmpi_{p.name})({args});", "    }", "}"]
    e += ["#pragma GCC diagnostic pop", ""]
    c += ["", "/* variables: stand-ins until bound (pointers read as NULL, scalars as 0) */"]
    for ctype, name, suffix in variables:
        if _has_storage(ctype, suffix):
            c += [f"static ml_var_{name}_t ml_stand_in_{name};",
                  f"ml_var_{name}_t *ml_var_{name} = &ml_stand_in_{name};"]
        else:
            c.append(f"ml_var_{name}_t *ml_var_{name};")
    c += ["", "const ml_bind_slot_t ml_bind_funcs[ML_BIND_NFUNCS] = {"]
    c += [f'    {{"P{p.name}", (void **)&ml_pmpi_{p.name}, (void *)ml_gone_{p.name}, (void **)&ml_next_{p.name}, '
          f'{int(p.name in entries)}}},' for p in fns]
    c += ["};", "const ml_bind_slot_t ml_bind_vars[ML_BIND_NVARS > 0 ? ML_BIND_NVARS : 1] = {"]
    c += [f'    {{"{name}", (void **)&ml_var_{name}, 0, 0, 0}},' for _, name, _ in variables] or ["    {0, 0, 0, 0, 0}"]
    c += ["};", ""]
    return "\n".join(h), "\n".join(c), "\n".join(e)
