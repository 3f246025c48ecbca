"""The Python package by layer (docs/architecture.md): data flows one way, from the run directory's
readers to the analyses, then to the reports and exports, and the command line on top. A module
imports only from its own layer or the layers below, no module imports itself back through others,
the readers neither draw nor format, and below the command line a function imports no module of
mpilens: a module's dependencies are all at its top. Two exceptions keep `mpilens run` light (it
waits beside the job and must not load numpy, tests/test_python_api.py): the command line imports
what a command runs inside that command (importing every analysis takes 0.67 s, the command line
0.09 s), and rundir.Run loads a mode's reader when its data is first asked for. Any function may
import a heavy or optional third-party package (numpy, matplotlib, scipy, ...).

Oracle: the package's source, parsed (ast), not imported."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from conftest import ROOT

PACKAGE = ROOT / "python" / "mpilens"

# lowest first; a module's layer is that of its longest prefix listed here
LAYERS: list[tuple[str, list[str]]] = [
    ("base", ["errors", "units", "_layout", "_build", "build_info", "layout", "safefile", "settings", "elf",
              "progress", "trace", "trace.filters"]),
    # trace.synthetic writes what the readers read (its profile goes through the merge)
    ("readers", ["meta", "claim", "payload", "merge", "recover", "rundir", "mpit", "io", "papi", "memory", "intervals",
                 "counters_spc", "callsites", "trace.reader", "trace.timeline", "trace.synthetic", "model.data"]),
    ("analyses", ["summary", "findings", "imbalance", "compare", "recommend", "model", "trace.findings",
                  "trace.estimate", "trace.bins", "trace.scan", "frames"]),
    ("reports", ["report"]),
    ("exports", ["exports", "export_hatchet", "trace.export"]),
    ("commands", ["commands", "cli", "__main__", "launch", "imports", "runtime_build", "__init__"]),
]
# the command line: it imports a command's modules when the command runs
COMMAND_LINE = ("cli", "__main__", "commands")
# a module generated into an installation (absent from a bare checkout): imported where it is needed
OPTIONAL_MODULES = {"_build"}
# rundir.Run loads a mode's reader when its data is first asked for: the readers import numpy, whose
# OpenBLAS threads would spin on the ranks' cores while `mpilens run` waits beside the job
# (tests/test_python_api.py::test_command_line_loads_no_numerical_stack)
LOADS_READERS_LAZILY = {"rundir"}
# the readers: run directory -> objects; they neither draw nor word what they read
READERS = ("rundir", "payload", "layout", "trace.reader", "memory", "counters_spc", "mpit", "papi", "intervals", "io")
# what a function may import: optional dependencies and the heavy ones a command may never need
EXT = "ext:"  # a package that is not mpilens (the standard library's io is not mpilens.io)
LAZY_OK = {"numpy", "scipy", "matplotlib", "pandas", "pyarrow", "otf2", "hatchet", "thicket", "rich", "perfetto", "distributed"}


def modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" and len(parts) > 1 else parts)
        out[name] = path
    return out


def layer_of(name: str) -> int:
    best, index = -1, None
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (name == p or name.startswith(p + ".")) and len(p) > best:
                best, index = len(p), i
    assert index is not None, f"mpilens.{name} is in no layer: add it to tests/test_layers.py LAYERS"
    return index


def imports_of(name: str, path: Path, known: dict[str, Path]) -> list[tuple[str, bool, int]]:
    """(mpilens module or top-level third-party package, inside a function, line) per import."""
    tree = ast.parse(path.read_text())
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    inner: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            inner |= {id(n) for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom))}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                mod = a.name
                local = mod.startswith("mpilens.")
                out.append((mod[len("mpilens."):] if local else EXT + mod.split(".")[0], id(node) in inner, node.lineno))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                mod = ".".join([*base, *([node.module] if node.module else [])])
                for a in node.names:
                    cand = f"{mod}.{a.name}" if mod else a.name
                    out.append((cand if cand in known else mod, id(node) in inner, node.lineno))
            elif node.module and (node.module == "mpilens" or node.module.startswith("mpilens.")):
                mod = node.module[len("mpilens."):] if node.module != "mpilens" else ""
                for a in node.names:
                    cand = f"{mod}.{a.name}".strip(".")
                    out.append((cand if cand in known else mod, id(node) in inner, node.lineno))
            else:
                out.append((EXT + (node.module or "").split(".")[0], id(node) in inner, node.lineno))
    return out


def graph() -> dict[str, list[tuple[str, bool, int]]]:
    known = modules()
    return {name: imports_of(name, path, known) for name, path in known.items()}


def test_every_module_imports_only_its_layer_and_below():
    known, bad = modules(), []
    for name, deps in graph().items():
        for dep, _, line in deps:
            if dep in known and dep != name and dep != "" and layer_of(dep) > layer_of(name):
                bad.append(f"{known[name].relative_to(ROOT)}:{line}: {LAYERS[layer_of(name)][0]} mpilens.{name} "
                           f"imports {LAYERS[layer_of(dep)][0]} mpilens.{dep}")
    assert not bad, "\n".join(bad)


def test_no_import_cycle():
    known = modules()
    edges = {n: sorted({d for d, _, _ in deps if d in known and d != n and d != ""}) for n, deps in graph().items()}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        stack.append(n)
        for d in edges[n]:
            if state.get(d) == 1:
                return stack[stack.index(d):] + [d]
            if d not in state and (cycle := visit(d)):
                return cycle
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(edges):
        if n not in state and (cycle := visit(n)):
            pytest.fail("import cycle: " + " -> ".join(f"mpilens.{m}" for m in cycle))


def test_functions_import_no_mpilens_module_and_only_heavy_packages():
    known, bad = modules(), []
    stdlib = sys.stdlib_module_names
    for name, deps in graph().items():
        for dep, inner, line in deps:
            if not inner or any(name == c or name.startswith(c + ".") for c in COMMAND_LINE):
                continue
            if name in LOADS_READERS_LAZILY and not dep.startswith(EXT) and layer_of(dep) <= layer_of(name):
                continue
            if not dep.startswith(EXT):
                if dep not in OPTIONAL_MODULES:
                    bad.append(f"{known[name].relative_to(ROOT)}:{line}: imports mpilens.{dep} inside a function")
            elif dep[len(EXT):] in stdlib or dep[len(EXT):] not in LAZY_OK:
                bad.append(f"{known[name].relative_to(ROOT)}:{line}: imports {dep[len(EXT):]} inside a function")
    assert not bad, f"{len(bad)} imports inside functions:\n" + "\n".join(bad)


def test_readers_neither_draw_nor_format():
    """A reader imports no plotting or terminal library and has no function that draws or words
    (draw_*, plot_*, render_*, fmt_*, format_*): that is the reports' and the commands' work."""
    known, wrong = modules(), []
    for m in READERS:
        for node in ast.walk(ast.parse(known[m].read_text())):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                wrong += [f"mpilens.{m} imports {n}" for n in names if n.split(".")[0] in ("matplotlib", "rich")]
            elif isinstance(node, ast.FunctionDef) and node.name.startswith(("draw_", "plot_", "render_", "fmt_",
                                                                              "format_")):
                wrong.append(f"mpilens.{m}.{node.name}")
    assert not wrong, wrong


def test_the_checks_see_the_package():
    """The graph is the package's: its readers, analyses and command line are in it, every module has
    a layer, and known imports are found (a check that saw no edges would pass vacuously)."""
    g = graph()
    assert {"rundir", "recommend", "cli", "report.sections.mpit"} <= set(g) and set(READERS) <= set(g)
    assert all(layer_of(m) >= 0 for m in g)
    assert ("recommend", False) in {(d, inner) for d, inner, _ in g["report.sections.mpit"]}
    assert ("rundir", False) in {(d, inner) for d, inner, _ in g["recommend"]}
    assert ("io", False) not in {(d, inner) for d, inner, _ in g["layout"]}  # the standard library's io
    assert ("trace.timeline", True) in {(d, inner) for d, inner, _ in g["rundir"]}
