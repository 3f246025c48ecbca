"""The Python package's layers: imports go downwards only, no module imports itself back through
others, and the readers neither draw nor format.

Layers, top down: the command line (mpilens.cli, mpilens.commands.*), then the reports
(mpilens.report.*) and the exports (mpilens.exports.*, mpilens.trace.export, mpilens.export_hatchet),
then everything they use (readers and analyses). Imports inside functions count as much as those at
the top of a module: they are how the command line stays quick to start, not a way around a cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import ROOT

PACKAGE = ROOT / "python" / "mpilens"
TOP = ("mpilens.cli", "mpilens.__main__", "mpilens.commands")
MIDDLE = ("mpilens.report", "mpilens.exports", "mpilens.trace.export", "mpilens.export_hatchet")
# the readers: run directory -> objects; they neither draw nor word what they read
READERS = ("mpilens.rundir", "mpilens.payload", "mpilens.layout", "mpilens.trace.reader", "mpilens.memory",
           "mpilens.counters_spc", "mpilens.mpit", "mpilens.papi", "mpilens.intervals", "mpilens.io")


def _name(f: Path) -> str:
    parts = f.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(("mpilens",) + (parts[:-1] if parts[-1] == "__init__" else parts))


MODULES = {_name(f): f for f in PACKAGE.rglob("*.py")}


def _imports(module: str) -> set[str]:
    """The package's modules that `module` imports, anywhere in it."""
    f = MODULES[module]
    package = module.split(".") if f.name == "__init__.py" else module.split(".")[:-1]
    out = set()
    for node in ast.walk(ast.parse(f.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name in MODULES}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else []))
            for a in node.names:
                target = f"{base}.{a.name}"
                out.add(target if target in MODULES else base)
    return {m for m in out if m in MODULES and m != module}


GRAPH = {m: _imports(m) for m in MODULES}


def _layer(module: str) -> int:
    if any(module == p or module.startswith(p + ".") for p in TOP):
        return 2
    if any(module == p or module.startswith(p + ".") for p in MIDDLE):
        return 1
    return 0


def test_imports_go_downwards():
    up = sorted(f"{m} -> {t}" for m, ts in GRAPH.items() for t in ts if _layer(t) > _layer(m))
    assert not up, f"imports of a higher layer: {up}"


def test_no_import_cycle():
    """Tarjan's strongly connected components of the import graph: all of one module each."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for m in sorted(GRAPH):
        if m not in index:
            visit(m)
    assert not cycles, f"modules that import each other: {cycles}"


def test_readers_neither_draw_nor_format():
    """A reader imports no plotting or terminal library and has no function that draws or words
    (draw_*, plot_*, render_*, fmt_*, format_*): that is the reports' and the commands' work."""
    wrong = []
    for m in READERS:
        tree = ast.parse(MODULES[m].read_text())
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                wrong += [f"{m} imports {n}" for n in names if n.split(".")[0] in ("matplotlib", "rich")]
            elif isinstance(node, ast.FunctionDef) and node.name.startswith(("draw_", "plot_", "render_", "fmt_",
                                                                              "format_")):
                wrong.append(f"{m}.{node.name}")
    assert not wrong, wrong


def test_the_checks_see_the_package():
    """The graph is the package's: the reader of runs, its analyses and the command line are in it,
    and a known import is found (a check that saw no edges would pass vacuously)."""
    assert {"mpilens.rundir", "mpilens.recommend", "mpilens.cli", "mpilens.report.sections.mpit"} <= set(GRAPH)
    assert set(READERS) <= set(GRAPH)
    assert "mpilens.recommend" in GRAPH["mpilens.report.sections.mpit"]
    assert "mpilens.rundir" in GRAPH["mpilens.recommend"]
