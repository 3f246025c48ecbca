"""The run directory's paths: mpilens.layout is the one module that knows them (every other module
asks it), Run knows which modes a directory holds and reads each family lazily."""

from __future__ import annotations

import ast
import re
import shutil
from pathlib import Path

import pytest

from conftest import ROOT
from mpilens import layout, rundir
from mpilens.errors import RunDirectoryError

PACKAGE = ROOT / "python" / "mpilens"
TRACE_V1 = ROOT / "tests" / "data" / "trace-v1"


def _names() -> tuple[set[str], set[str], list[re.Pattern[str]]]:
    """From the layout table: folder names, file names without fields, and expressions finding the
    fixed pieces of file names with fields ("rank-" before a field, ".partial" after one)."""
    folders, names, pieces = set(), set(), []
    for pattern in layout.PATTERNS.values():
        *dirs, name = pattern.split("/")
        folders |= {d for d in dirs if "{" not in d}
        if "{" not in name:
            names.add(name)
            continue
        parts = layout._fill(name, "\0", {}).split("\0")
        for i, part in enumerate(parts):
            if not part:
                continue
            before = "" if i == 0 else r"(?:^|(?<=[*\dN}]))"  # after a field: its value, a glob or a placeholder
            after = "" if i == len(parts) - 1 else r"(?=[*\dN{]|$)"
            pieces.append(re.compile(before + re.escape(part) + after))
    return folders, names, pieces


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def _path_patterns(source: str) -> list[str]:
    """Where a module builds a run-directory path itself: `x / "trace"`, Path(x, "memory"),
    .glob("rank-*.bin"), or a string holding a folder followed by "/" or a piece of a file pattern."""
    folders, names, pieces = _names()
    components = folders | names
    tree = ast.parse(source)
    docs = _docstrings(tree)
    found = []

    def strings(node: ast.AST) -> list[str]:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return [node.value]
        if isinstance(node, ast.JoinedStr):
            return [v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str)]
        return []

    for node in ast.walk(tree):
        where = f"line {getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            for s in strings(node.left) + strings(node.right):
                if s in components or any(p.search(s) for p in pieces):
                    found.append(f"{where}: / {s!r}")
        elif isinstance(node, ast.Call):
            fn = node.func
            name = fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(fn, ast.Name) else ""
            if name in ("Path", "joinpath", "join", "glob", "rglob"):
                for arg in node.args:
                    for s in strings(arg):
                        if s in components or any(p.search(s) for p in pieces) or name in ("glob", "rglob"):
                            found.append(f"{where}: {name}({s!r})")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            s = node.value
            if any(re.search(rf"(?<![\w.]){d}/", s) for d in folders) or any(p.search(s) for p in pieces):
                found.append(f"{where}: {s!r}")
    return found


def test_only_the_layout_module_builds_run_directory_paths():
    offenders = {}
    for f in sorted(PACKAGE.rglob("*.py")):
        if f in (PACKAGE / "layout.py", PACKAGE / "_layout.py"):  # the table, and the spec it comes from
            continue
        hits = _path_patterns(f.read_text())
        if hits:
            offenders[str(f.relative_to(PACKAGE))] = hits
    assert not offenders, f"run-directory paths built outside mpilens/layout.py: {offenders}"


def test_the_check_finds_what_it_looks_for():
    for src in ('p = run / "trace"\n', 'p = Path(run, "memory", "x")\n', 'fs = d.glob("rank-*.bin")\n',
                'p = d / f"rank-{r:06d}.partial"\n', 'msg = f"no counters/{name}"\n', 'p = run / "meta.json"\n',
                'msg = f"{d}/rank-{r:06d}.json is missing"\n', 'msg = "no memory/rank-*.bin"\n'):
        assert _path_patterns(src), src
    for src in ('"""Reads trace/rank-NNNNNN.bin."""\n', 'mode = "trace"\n', 'if "memory" in run.modes: pass\n',
                'SCHEMA = "mpilens.memory/1"\n', 'msg = "profile.json is damaged"\n', 'x = "rank-slot series"\n',
                'p = out / "repeat.json"\n'):
        assert not _path_patterns(src), src


def test_patterns_round_trip():
    assert layout.glob_pattern("trace") == "trace/rank-*.bin"
    assert layout.glob_pattern("snapshot", snapshot=3) == "pcontrol/0003/rank-*.bin"
    assert layout.relative("partial", rank=12) == "ranks/rank-000012.partial"
    assert layout.path("/r", "memory", rank=2) == Path("/r/memory/rank-000002.bin")
    assert layout.fields_of("snapshot", "/r/pcontrol/0003/rank-000002.bin") == {"snapshot": 3, "rank": 2}
    assert layout.rank_of("mpit", "mpit/rank-000005.jsonl") == 5
    assert layout.rank_of("trace", "trace/rank-x.bin") is None
    assert layout.live_file("/dev/shm/live", 7) == Path("/dev/shm/live/rank-000007.spc")
    assert set(layout.MODES.values()) <= set(layout.PATTERNS)


def test_run_modes_and_lazy_families(tmp_path):
    run = rundir.load(TRACE_V1)
    assert run.modes == {"profile", "trace"}
    assert run.configured_modes == {"profile", "trace"} and not run.missing_modes
    assert run.snapshots == []
    assert "trace" not in run.__dict__  # read on first use only
    tl = run.trace
    assert tl.nranks == 2 and run.trace is tl  # and once
    with pytest.raises(RunDirectoryError):
        _ = run.memory
    with pytest.raises(RunDirectoryError):
        _ = run.counters

    # the trace removed: the mode is gone, meta.json still says it was asked for
    copy = tmp_path / "run"
    shutil.copytree(TRACE_V1, copy)
    shutil.rmtree(copy / "trace")
    (copy / "ranks").mkdir()
    layout.path(copy, "intervals", rank=0).write_bytes(b"")
    (copy / "pcontrol" / "0002").mkdir(parents=True)
    run = rundir.load(copy)
    assert run.modes == {"profile", "intervals", "snapshots"}
    assert run.missing_modes == {"trace"}
    assert run.snapshots == [2]
