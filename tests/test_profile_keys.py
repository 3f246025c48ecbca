"""profile.json is stated once, in runtime/spec/rundir.yaml (profile_objects and the field lists),
and every key the writers write and the readers read comes from there.

- The documents follow the spec: every profile.json the runtime wrote (the committed runs of
  tests/data) and every document mpilens-merge writes from the committed payloads, with each option,
  has for each object exactly the spec's keys, in its order, those it always writes present, the
  time-sampled ones present exactly when the run sampled, and values of the spec's types. Oracle:
  the files on disk, walked with the spec's grammar.
- The writer spells no key: merge.c and the merge program hold no JSON key in a string literal
  (they write with the generated ML_PK_* macros).
- The Python readers spell no key: every key constant the spec generates (mpilens._layout's
  `*Keys` classes and field lists) is renamed here, and the Python merge, the profile's checks,
  `rundir.load` and the call sites' reader must then write and read the renamed document exactly
  as they did the real one. A reader that spelled a key itself would miss the renamed key or
  write the old one. Oracle: the C merge's document (build/bin/mpilens-merge), renamed by a walk
  of the spec of this test's own.
- The typed objects: every document above reads into the generated dataclasses and back into the
  same document; a value of the wrong type is named with its place; a field added to the spec's
  per-function list is a field of the dataclass generated from that spec.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from conftest import BUILD, ROOT
from mpilens import _layout as L
from mpilens import callsites, compare, frames, imbalance, merge, rundir, summary
from mpilens.model import data

DATA = ROOT / "tests" / "data"
MERGE = BUILD / "bin" / "mpilens-merge"
OBJECTS = dict(L.PROFILE_OBJECTS)  # taken before any renaming
SAMPLED = "MPILENS_TIME_SAMPLE > 1"
PAYLOAD_SETS = [DATA / "partial-regions" / "ranks", DATA / "partial-abort" / "ranks",
                DATA / "runs" / "aborted-openmpi" / "ranks", DATA / "runs" / "aborted-mpich" / "ranks"]
# (time_sample, intervals, version, mpi)
OPTIONS = [(1, False, None, None), (4, True, "0.9.1", "openmpi")]


def committed_profiles() -> list[Path]:
    return sorted(p for p in (DATA / "runs").glob("*/profile.json"))


def payloads(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.partial"))


def c_merge(files: list[Path], opts: tuple) -> dict[str, Any]:
    time_sample, intervals, version, mpi = opts
    cmd = [str(MERGE)] + (["--time-sample", str(time_sample)] if time_sample > 1 else [])
    cmd += (["--intervals"] if intervals else []) + (["--version", version] if version else [])
    cmd += (["--mpi", mpi] if mpi else []) + ["--"] + [str(f) for f in files]
    p = subprocess.run(cmd, capture_output=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


# ------------------------------------------------------------------ the spec's grammar, walked
def walk(value: Any, kind: str, where: str, errors: list[str], sampled: bool, rename: Any = None) -> Any:
    """Check value against a value of the spec (a scalar, an object, [T], {T}, then ?) and return it
    with each object's keys passed through rename (when given)."""
    if kind.endswith("?"):
        if value is None:
            return None
        kind = kind[:-1]
    if kind.startswith("["):
        if not isinstance(value, list):
            errors.append(f"{where}: {value!r:.60} is not a list")
            return value
        return [walk(v, kind[1:-1], f"{where}[{i}]", errors, sampled, rename) for i, v in enumerate(value)]
    if kind.startswith("{"):
        if not isinstance(value, dict):
            errors.append(f"{where}: {value!r:.60} is not an object")
            return value
        return {k: walk(v, kind[1:-1], f"{where}.{k}", errors, sampled, rename) for k, v in value.items()}
    if kind in OBJECTS:
        if not isinstance(value, dict):
            errors.append(f"{where}: {value!r:.60} is not a {kind}")
            return value
        spec = OBJECTS[kind]
        order = [k for k, _, _ in spec]
        unknown = [k for k in value if k not in order]
        if unknown:
            errors.append(f"{where}: keys {unknown} are not in the spec's {kind}")
        if [k for k in value if k in order] != [k for k in order if k in value]:
            errors.append(f"{where}: keys {list(value)} are not in the spec's order {order}")
        for k, _, when in spec:
            if when is None and k not in value:
                errors.append(f"{where}: {kind}'s {k} is missing")
            if when == SAMPLED and (k in value) != sampled:
                errors.append(f"{where}: {kind}'s {k} is {'there' if k in value else 'missing'} in a run "
                              f"{'with' if sampled else 'without'} MPILENS_TIME_SAMPLE > 1")
        types = {k: t for k, t, _ in spec}
        return {(rename(k) if rename else k): walk(v, types[k], f"{where}.{k}", errors, sampled, rename)
                if k in types else v for k, v in value.items()}
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    ok = {"string": isinstance(value, str), "bool": isinstance(value, bool),
          "integer": isinstance(value, int) and not isinstance(value, bool), "number": number,
          "seconds": number and value >= 0}[kind]
    if not ok:
        errors.append(f"{where}: {value!r:.60} is not a {kind}")
    return value


def check(doc: dict[str, Any], where: str) -> list[str]:
    errors: list[str] = []
    walk(doc, "profile", where, errors, sampled=(doc.get("time_sample") or 1) > 1)
    return errors


def renamed(doc: dict[str, Any]) -> dict[str, Any]:
    errors: list[str] = []
    out = walk(copy.deepcopy(doc), "profile", "", errors, sampled=(doc.get("time_sample") or 1) > 1,
               rename=lambda k: "renamed." + k)
    assert not errors
    return out


# ------------------------------------------------------------------------------ the documents
@pytest.mark.parametrize("path", committed_profiles(), ids=lambda p: p.parent.name)
def test_committed_profiles_follow_the_spec(path: Path) -> None:
    assert check(json.loads(path.read_text()), path.parent.name) == []


def test_the_committed_runs_have_every_object() -> None:
    """The runs above are enough to see each object of the spec at least once."""
    seen: set[str] = set()

    def note(value: Any, kind: str) -> None:
        kind = kind.rstrip("?")
        if value is None:
            return
        if kind[:1] in "[{":
            for v in (value if kind[0] == "[" else value.values()):
                note(v, kind[1:-1])
        elif kind in OBJECTS:
            seen.add(kind)
            types = {k: t for k, t, _ in OBJECTS[kind]}
            for k, v in value.items():
                note(v, types[k])

    for path in committed_profiles():
        note(json.loads(path.read_text()), "profile")
    assert seen == set(OBJECTS)


@pytest.mark.skipif(not MERGE.is_file(), reason=f"{MERGE} is not built (`make`)")
@pytest.mark.parametrize("opts", OPTIONS, ids=["plain", "sampled"])
@pytest.mark.parametrize("folder", PAYLOAD_SETS, ids=lambda p: p.parent.name)
def test_merged_profiles_follow_the_spec(folder: Path, opts: tuple) -> None:
    doc = c_merge(payloads(folder), opts)
    assert check(doc, folder.parent.name) == []
    assert ("intervals" in doc) == opts[1] and ("time_sample" in doc) == (opts[0] > 1)


def test_the_writer_spells_no_key() -> None:
    """A JSON key in a C string literal is \\"key\\": ; the writer of profile.json has none."""
    for name in ("core/merge.c", "core/merge.h", "tools/merge_main.c"):
        text = (ROOT / "runtime" / "src" / name).read_text()
        assert re.findall(r'\\"\w+\\"\s*:', text) == [], name


# ------------------------------------------------------------------------------ the readers
def rename_keys(m: pytest.MonkeyPatch) -> None:
    """Every key constant of mpilens._layout renamed, as if the spec had renamed every key."""
    for name in dir(L):
        cls = getattr(L, name)
        if isinstance(cls, type) and name.endswith("Keys"):
            for attr, value in list(vars(cls).items()):
                if attr.isupper():
                    m.setattr(cls, attr, "renamed." + value)
    for name in ("PROFILE_FUNCTION_FIELDS", "PROFILE_RANK_FIELDS", "PROFILE_DROPPED_FIELDS"):
        m.setattr(L, name, tuple(("renamed." + f[0], *f[1:]) for f in getattr(L, name)))


@pytest.fixture
def renamed_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    rename_keys(monkeypatch)


@pytest.mark.skipif(not MERGE.is_file(), reason=f"{MERGE} is not built (`make`)")
@pytest.mark.parametrize("opts", OPTIONS, ids=["plain", "sampled"])
@pytest.mark.parametrize("folder", PAYLOAD_SETS[:2], ids=lambda p: p.parent.name)
def test_the_python_merge_writes_every_key_from_the_spec(folder: Path, opts: tuple, renamed_keys: None) -> None:
    want = renamed(c_merge(payloads(folder), opts))
    doc, problems = merge.merge_payloads(payloads(folder), None, *opts)
    assert problems == []
    assert json.dumps(doc) == json.dumps(want)  # the same keys in the same order


def copy_run(src: Path, dst: Path, rename: bool, nest: bool = False) -> Path:
    """A copy of a committed run, its profile renamed; nest: its second region moved into its first
    (no committed run nests regions)."""
    shutil.copytree(src, dst, symlinks=True)
    profile = dst / "profile.json"
    if profile.exists():
        doc = json.loads(profile.read_text())
        if nest:
            doc["regions"][0]["regions"].append(doc["regions"].pop(1))
        profile.write_text(json.dumps(renamed(doc) if rename else doc))
    return dst


@pytest.mark.parametrize("name", ["imbalance-openmpi", "late_receiver-mpich", "files-openmpi", "aborted-openmpi"])
def test_the_readers_take_every_key_from_the_spec(name: str, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """rundir.load and its checks, and the call sites' reader, read a renamed document as the
    real one, problems included: a complete run, one with call sites, one with intervals, and a
    run merged from its ranks' files."""
    real = rundir.load(copy_run(DATA / "runs" / name, tmp_path / "real", rename=False))
    want_sites = callsites.callsites(type("R", (), {"profile": real.profile})())
    want_complete = real.complete
    with monkeypatch.context() as m:
        rename_keys(m)
        run = rundir.load(copy_run(DATA / "runs" / name, tmp_path / "renamed", rename=True))
        assert [p.replace(str(tmp_path / "renamed"), "") for p in run.problems] == \
            [p.replace(str(tmp_path / "real"), "") for p in real.problems]
        assert run.complete == want_complete
        assert json.dumps(run.profile) == json.dumps(renamed(real.profile))
        assert callsites.callsites(type("R", (), {"profile": run.profile})()) == want_sites


def test_the_checks_name_the_renamed_keys(renamed_keys: None) -> None:
    """The profile's checks find the same damage in the renamed document: values no run writes."""
    doc = renamed(json.loads((DATA / "runs" / "imbalance-openmpi" / "profile.json").read_text()))
    assert rundir.validate_profile(doc) == []
    first = next(iter(doc["renamed.functions"].values()))
    first["renamed.calls"][0] = -1
    doc["renamed.ranks"][1]["renamed.mpi_time_s"] = "x"
    region = doc["renamed.regions"][0]
    region["renamed.visits"][0] = -5
    child = copy.deepcopy(doc["renamed.regions"][1])  # nested: "sync" inside "force"
    child["renamed.time_s"][1] = float("nan")
    region["renamed.regions"].append(child)
    doc["renamed.matrix"].append({"renamed.src": 99, "renamed.dst": 0, "renamed.messages": 1, "renamed.bytes": 1})
    problems: list[str] = []
    rundir.check_values(doc, problems)
    assert len(problems) == 5, problems
    assert first["renamed.calls"][0] is None and doc["renamed.ranks"][1]["renamed.mpi_time_s"] is None
    assert region["renamed.visits"][0] is None and child["renamed.time_s"][1] is None
    assert all(e["renamed.src"] < doc["renamed.nranks"] for e in doc["renamed.matrix"])
    del doc["renamed.nranks"]
    assert rundir.validate_profile(doc) == ["profile.json: renamed.nranks is missing or not a positive integer"]


def test_the_model_reads_the_hosts_by_the_spec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The variability model's reader takes each rank's host from the renamed document (a run with
    compute intervals)."""
    want = data._from_rundir(copy_run(DATA / "runs" / "files-openmpi", tmp_path / "real", rename=False), 0).hosts
    assert "?" not in want
    rename_keys(monkeypatch)
    assert data._from_rundir(copy_run(DATA / "runs" / "files-openmpi", tmp_path / "renamed", rename=True),
                             0).hosts == want


def test_the_summary_and_the_frames_take_every_key_from_the_spec(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The cross-rank summary, the DataFrames, the imbalance analysis (its work counters included)
    and the comparison's values read the renamed document as the real one: the
    same figures, and the frames' columns that are profile keys renamed with them (nested regions,
    message sizes and the matrix)."""
    def views(run: rundir.Run) -> tuple:
        s = summary.summarize(run.profile)
        a = imbalance.analyze(run)
        return (dataclasses.replace(s, dropped={}), s.talkers, s.dropped,
                [frames.functions(run), frames.functions(run, by_region=True), frames.ranks(run),
                 frames.matrix(run), frames.message_sizes(run)], dataclasses.replace(a, run=""),
                compare.run_values(run.profile, "max"))

    name = "imbalance-openmpi"
    real = views(rundir.load(copy_run(DATA / "runs" / name, tmp_path / "real", rename=False, nest=True)))
    rename_keys(monkeypatch)
    got = views(rundir.load(copy_run(DATA / "runs" / name, tmp_path / "renamed", rename=True, nest=True)))
    assert got[0] == real[0]
    assert got[2] == {"renamed." + k: v for k, v in real[2].items()}
    assert [r.depth for r in real[0].regions] == [0, 1] and real[0].sizes and real[1]
    assert got[4] == real[4] and real[4].work_counters and len(real[4].scopes) > 4
    assert got[5] == real[5] and len(real[5]) > 10
    for i, (want, df) in enumerate(zip(real[3], got[3])):
        own = set() if i == 2 else {"region", "function", "rank"}  # frames.ranks: the profile's own keys
        assert list(df.columns) == [c if c in own else "renamed." + c for c in want.columns]
        assert df.set_axis(want.columns, axis=1).equals(want)


# ------------------------------------------------------------------------- the typed objects
def written(doc: Any, kind: str = "profile") -> Any:
    """doc without the keys the spec writes only sometimes whose value is null (a typed object holds
    None for both), walked with this test's own reading of the spec's grammar."""
    kind = kind.removesuffix("?")
    if doc is None:
        return None
    if kind.startswith("["):
        return [written(v, kind[1:-1]) for v in doc]
    if kind.startswith("{"):
        return {k: written(v, kind[1:-1]) for k, v in doc.items()}
    if kind in OBJECTS:
        return {k: written(doc[k], t) for k, t, when in OBJECTS[kind] if k in doc and (when is None or doc[k] is not None)}
    return doc


def typed_documents() -> list[tuple[str, dict[str, Any]]]:
    docs = [(p.parent.name, json.loads(p.read_text())) for p in committed_profiles()]
    if MERGE.is_file():
        docs += [(f"{f.parent.name}-{o[0]}", c_merge(payloads(f), o)) for f in PAYLOAD_SETS for o in OPTIONS]
    return docs


def visit_typed(obj: Any, kind: str, name: str, seen: set[str]) -> None:
    """Each object of a typed document is its spec object's dataclass; each number of seconds a float."""
    kind = kind.removesuffix("?")
    if obj is None:
        return
    if kind.startswith("["):
        for v in obj:
            visit_typed(v, kind[1:-1], name, seen)
    elif kind.startswith("{"):
        for v in obj.values():
            visit_typed(v, kind[1:-1], name, seen)
    elif kind in OBJECTS:
        assert type(obj).__name__ == "".join(w.capitalize() for w in kind.split("_")), (name, kind)
        seen.add(kind)
        for k, t, _ in OBJECTS[kind]:
            visit_typed(getattr(obj, k + "_" if k == "class" else k), t, name, seen)
    elif kind == "seconds":
        assert type(obj) is float, (name, obj)


def test_every_document_reads_into_the_typed_objects_and_back() -> None:
    """profile_from_json then profile_to_json gives the document back (the committed runs and the C
    merge's documents); each object is its spec's dataclass, each number of seconds a float."""
    docs = typed_documents()
    assert len(docs) >= 23 + (8 if MERGE.is_file() else 0)
    seen: set[str] = set()
    for name, doc in docs:
        typed = L.profile_from_json(doc)
        assert L.profile_to_json(typed) == written(doc), name
        visit_typed(typed, "profile", name, seen)
    assert seen == set(OBJECTS)


def test_the_dataclasses_have_the_spec_keys_in_order() -> None:
    for kind, keys in OBJECTS.items():
        cls = L.PROFILE_CLASSES[kind]
        assert [f.name for f in dataclasses.fields(cls)] == [k + "_" if k == "class" else k for k, _, _ in keys]
        assert cls.__dataclass_params__.frozen


def test_a_value_of_the_wrong_type_is_named_with_its_place() -> None:
    doc = json.loads((DATA / "runs" / "ring-openmpi" / "profile.json").read_text())
    cases = [(("functions", "MPI_Send", "calls", 1), "5", "profile.json.functions.MPI_Send.calls[1]: integer"),
             (("ranks", 0, "wall_time_s"), True, "profile.json.ranks[0].wall_time_s: seconds"),
             (("matrix",), {}, "profile.json.matrix: a list"),
             (("tool", "name"), 3, "profile.json.tool.name: string")]
    for path, value, message in cases:
        bad = copy.deepcopy(doc)
        target = bad
        for p in path[:-1]:
            target = target[p]
        target[path[-1]] = value
        with pytest.raises(L.ProfileShapeError, match=re.escape(message)):
            L.profile_from_json(bad)
    missing = {k: v for k, v in doc.items() if k != "dropped"}
    with pytest.raises(L.ProfileShapeError, match="profile.json: no 'dropped'"):
        L.profile_from_json(missing)
    # a key of a later version of the spec is left out, not an error
    assert L.profile_from_json({**doc, "later": 1}) == L.profile_from_json(doc)


def test_a_new_function_field_is_one_spec_line(tmp_path: Path) -> None:
    """A field added to the spec's per-function list (what a new per-function statistic takes) is a
    field of the generated dataclass, read from the document with the others."""
    import importlib.util
    import sys

    sys.path.insert(0, str(ROOT / "runtime" / "gen"))
    try:
        import rundir as gen
    finally:
        sys.path.pop(0)
    spec_text = (ROOT / "runtime" / "spec" / "rundir.yaml").read_text()
    line = "  - {name: bytes_recv, from: recv, as: count,"
    assert line in spec_text
    new = "  - {name: waits, from: calls, as: count, doc: \"a new statistic\"}\n"
    spec_file = tmp_path / "rundir.yaml"
    spec_file.write_text(spec_text.replace(line, new + line))
    module = tmp_path / "layout_new.py"
    module.write_text(gen.gen_python(gen.load(spec_file)))
    # a module of the package, as the generated one is (it imports mpilens.errors)
    spec = importlib.util.spec_from_file_location("mpilens._layout_new", module)
    new_layout = importlib.util.module_from_spec(spec)
    sys.modules["mpilens._layout_new"] = new_layout  # the dataclasses resolve their module by name
    try:
        spec.loader.exec_module(new_layout)
    finally:
        sys.modules.pop("mpilens._layout_new", None)
    doc = json.loads((DATA / "runs" / "ring-openmpi" / "profile.json").read_text())

    def add(functions: dict[str, Any], regions: list[dict[str, Any]]) -> None:
        for f in functions.values():
            f["waits"] = [7] * doc["nranks"]
        for r in regions:
            add(r["functions"], r["regions"])

    add(doc["functions"], doc["regions"])
    typed = new_layout.profile_from_json(doc)
    assert typed.functions["MPI_Send"].waits == [7] * doc["nranks"]
    assert new_layout.FunctionKeys.WAITS == "waits"
