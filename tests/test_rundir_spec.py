"""The run directory's contract (runtime/spec/rundir.yaml) and its one merge (mpilens-merge).

- The generated C header and Python module describe the same bytes: a C program compiled against
  ml_rundir.h prints every record's size and field offsets, which must match the numpy dtypes.
- No magic string or record layout is written by hand outside the spec and what is generated from
  it (tests keep their own hand-written encoders on purpose: they are the independent oracle).
- docs/run-directory.md is what the spec says.
- The merge of a committed partial run (3 ranks of examples/c/sleeper under Open MPI, rank 1
  calling MPI_Abort after 3 steps) gives the traffic the program is known to make, and damaged or
  foreign payload files are named with what is wrong.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import BUILD, MPILENS, ROOT

sys.path.insert(0, str(ROOT / "runtime" / "gen"))
import rundir as spec_gen  # noqa: E402

from mpilens import _layout as L  # noqa: E402
from mpilens import rundir  # noqa: E402

SPEC = spec_gen.load()
FIXTURE = ROOT / "tests" / "data" / "partial-abort"
MERGE = BUILD / "bin" / "mpilens-merge"


# ------------------------------------------------------------------------------------- generated code
def test_c_and_python_layouts_agree(tmp_path):
    lines = ['#include <stdio.h>', '#include <stddef.h>', '#include "ml_rundir.h"', "int main(void) {"]
    expect = []
    for r in SPEC["_records"].values():
        t = f"{r.c_name}_t"
        lines.append(f'printf("{r.name} size %zu\\n", sizeof({t}));')
        dt = getattr(L, f"{r.name.upper()}_DTYPE")
        expect.append(f"{r.name} size {dt.itemsize}")
        for f in r.fields:
            lines.append(f'printf("{r.name} {f.name} %zu\\n", offsetof({t}, {f.name}));')
            py_name = f"{f.variant}_{f.name}" if f.variant else f.name
            expect.append(f"{r.name} {f.name} {dt.fields[py_name][1]}")
    lines += ["return 0;", "}"]
    (tmp_path / "t.c").write_text("\n".join(lines))
    subprocess.run(["cc", "-std=c11", "-Wall", "-Werror", f"-I{BUILD / 'gen'}", "-o", str(tmp_path / "t"),
                    str(tmp_path / "t.c")], check=True)
    out = subprocess.run([str(tmp_path / "t")], capture_output=True, text=True, check=True).stdout.splitlines()
    assert out == expect


def test_struct_formats_match_dtypes():
    for r in SPEC["_records"].values():
        if r.union:
            continue
        s, dt = getattr(L, r.name.upper()), getattr(L, f"{r.name.upper()}_DTYPE")
        assert s.size == dt.itemsize == r.size, r.name


def _sources() -> list[Path]:
    """What is written by hand: runtime, Python package, benchmarks and scripts (not tests)."""
    out = [p for p in (ROOT / "runtime" / "src").iterdir() if p.suffix in (".c", ".h")]
    # elf.py reads ELF's own layout (a program's symbols), not a run-directory file
    out += [p for p in (ROOT / "python" / "mpilens").rglob("*.py") if p.name not in ("_layout.py", "elf.py")]
    out += list((ROOT / "bench").glob("*.py")) + list((ROOT / "scripts").glob("*.py"))
    out += [p for p in (ROOT / "runtime" / "gen").glob("*.py")]
    return out


def test_no_magic_outside_the_spec():
    magics = set(spec_gen.magics(SPEC).values())
    pats = []
    for m in magics:
        text = m.rstrip(b"\0").decode("latin-1")
        pats.append(re.escape(text.replace("\n", "\\n")) if "\n" in text else re.escape(text))
    rx = re.compile("|".join(pats))
    hits = [f"{p.relative_to(ROOT)}:{i + 1}: {line.strip()}" for p in _sources()
            for i, line in enumerate(p.read_text(errors="replace").splitlines()) if rx.search(line)]
    assert not hits, "magic strings outside runtime/spec/rundir.yaml:\n" + "\n".join(hits)


def test_no_schema_tag_outside_the_spec():
    tags = [f["schema"] for f in SPEC["files"].values() if f.get("schema")]
    assert "mpilens.profile/1" in tags
    hits = [f"{p.relative_to(ROOT)}:{i + 1}: {line.strip()}" for p in _sources()
            for i, line in enumerate(p.read_text(errors="replace").splitlines()) if any(t in line for t in tags)]
    assert not hits, "schema tags outside runtime/spec/rundir.yaml:\n" + "\n".join(hits)


def test_no_record_layout_outside_the_spec():
    """A binary layout by hand looks like a numpy dtype or struct format of a file's fields, or a
    C struct with a magic; none is left outside the generated files."""
    rx = re.compile(r'np\.dtype\(\[\("(magic|kind|t0|dt)"|struct\.Struct\("[<=>]8s|char magic\[8\]|'
                    r'struct\.(un)?pack(_from)?\("[<=>]?(8s|[0-9]*[IQHBiqd]{3,})')
    hits = [f"{p.relative_to(ROOT)}:{i + 1}: {line.strip()}" for p in _sources()
            for i, line in enumerate(p.read_text(errors="replace").splitlines()) if rx.search(line)]
    assert not hits, "record layouts outside runtime/spec/rundir.yaml:\n" + "\n".join(hits)


def test_the_docs_are_what_the_spec_says():
    p = subprocess.run([sys.executable, str(ROOT / "runtime" / "gen" / "rundir.py"), "--check-doc",
                        str(ROOT / "docs" / "run-directory.md")], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    doc = (ROOT / "docs" / "run-directory.md").read_text()
    for name, f in SPEC["files"].items():
        assert f"`{f['path']}`" in doc, name


def test_paths_are_the_specs():
    """Every file a fixture and a real run hold matches one of the spec's path patterns."""
    patterns = [re.compile(re.escape(f.path).replace(r"\{rank:06d\}", r"\d{6}").replace(r"\{snapshot:04d\}", r"\d{4}"))
                for f in L.FILES.values()]
    for p in FIXTURE.rglob("*"):
        if p.is_file():
            rel = str(p.relative_to(FIXTURE))
            assert any(rx.fullmatch(rel) for rx in patterns), rel


# ------------------------------------------------------------------------------------- the merge
def fn(p: dict, name: str, key: str) -> list:
    return p["functions"][name][key]


def function_entries(doc: dict) -> list[dict]:
    """Every function entry of a profile.json: the whole run's and every region's, at any depth."""
    out = list(doc["functions"].values())
    todo = list(doc.get("regions") or [])
    while todo:
        r = todo.pop()
        out += list((r.get("functions") or {}).values())
        todo += r.get("regions") or []
    return out


def test_a_functions_fields_are_the_specs(tmp_path):
    """profile.json's fields of a function are rundir.yaml's profile_function_fields, in that order,
    as mpilens-merge writes them (with and without MPILENS_TIME_SAMPLE) and as the runs committed
    from real jobs have them; a rank's keys are profile_rank_fields and its "dropped" keys are
    profile_dropped_fields; and no hand-written merge or reader spells a field only functions have,
    nor a key of "dropped" or one only ranks have."""
    fields = [(f["name"], f.get("when")) for f in SPEC["profile_function_fields"]]
    assert [k for k, *_ in L.PROFILE_FUNCTION_FIELDS] == [k for k, _ in fields]
    files = sorted((FIXTURE / "ranks").glob("rank-*.partial"))
    for every in (1, 4):
        cmd = [str(MERGE), "--nranks", "3", *(["--time-sample", str(every)] if every > 1 else []), "--", *map(str, files)]
        doc = json.loads(subprocess.run(cmd, capture_output=True, check=True).stdout)
        want = ["class"] + [k for k, when in fields if when is None or every > 1]
        entries = function_entries(doc)
        assert entries and all(list(e) == want for e in entries), (every, list(entries[0]))
    runs = sorted(p for p in (ROOT / "tests" / "data" / "runs").glob("*/profile.json"))
    assert len(runs) >= 10
    for path in runs:
        doc = json.loads(path.read_text())
        want = ["class"] + [k for k, when in fields if when is None or doc.get("time_sample", 1) > 1]
        assert all(list(e) == want for e in function_entries(doc)), path
    # each rank's keys: "rank", then profile_rank_fields; all null for a rank that left no data
    for path in runs:
        doc = json.loads(path.read_text())
        want = ["rank"] + [f["name"] for f in SPEC["profile_rank_fields"]
                           if "when" not in f or doc.get("time_sample", 1) > 1]
        assert all(list(r) == want for r in doc["ranks"]), path
    cmd = [str(MERGE), "--nranks", "4", "--time-sample", "4", "--", *map(str, files)]
    ranks = json.loads(subprocess.run(cmd, capture_output=True, check=True).stdout)["ranks"]
    assert [list(r) for r in ranks] == [["rank"] + [f["name"] for f in SPEC["profile_rank_fields"]]] * 4
    assert [r["ended_by"] for r in ranks] == ["signal 15", "MPI_Abort", "signal 15", None]
    assert all(v is None for k, v in ranks[3].items() if k != "rank")
    dropped = [f["name"] for f in SPEC["profile_dropped_fields"]]
    for path in runs:
        assert list(json.loads(path.read_text())["dropped"]) == dropped, path  # every committed run is v4
    # the committed partial run's payloads are of version 2: what version 4 began to count is not said
    assert all(f.read_bytes()[:8] == L.MAGIC_PAYLOAD_V2 for f in files)
    cmd = [str(MERGE), "--nranks", "3", "--", *map(str, files)]
    assert list(json.loads(subprocess.run(cmd, capture_output=True, check=True).stdout)["dropped"]) == [
        f["name"] for f in SPEC["profile_dropped_fields"] if "since" not in f]
    only_functions = {k for k, _ in fields} - {"calls", "time_s", "bytes_sent", "bytes_recv"}  # others have these
    only_functions |= set(dropped) | {"init_time_s", "mpi_time_s", "mpi_time_s_se", "ended_by"}
    for source in (ROOT / "runtime" / "src" / "core" / "merge.c", ROOT / "python" / "mpilens" / "merge.py",
                   ROOT / "python" / "mpilens" / "rundir.py"):
        text = source.read_text()
        assert not [k for k in only_functions if f'"{k}"' in text or f'\\"{k}\\"' in text], source


def test_committed_partial_run_merges_to_the_known_traffic(tmp_path):
    run = rundir.load(FIXTURE)
    p = run.profile
    assert run.source == "per-rank files" and not run.complete and p["complete"] is False
    assert p["schema"] == "mpilens.profile/1" and p["nranks"] == 3
    assert p["tool"] == {"name": "mpilens", "version": "0.1.0", "mpi": "openmpi"}  # from meta.json
    assert [r["ended_by"] for r in p["ranks"]] == ["signal 15", "MPI_Abort", "signal 15"]
    # each rank completed 3 steps: 3 MPI_Allreduce of one int and 3 MPI_Sendrecv of 256 bytes each way
    assert fn(p, "MPI_Allreduce", "calls") == [3, 3, 3]
    assert fn(p, "MPI_Sendrecv", "calls") == [3, 3, 3]
    assert fn(p, "MPI_Sendrecv", "bytes_sent") == [768, 768, 768]
    assert fn(p, "MPI_Sendrecv", "bytes_recv") == [768, 768, 768]
    assert fn(p, "MPI_Allreduce", "bytes_sent") == [12, 12, 12]
    assert p["functions"]["MPI_Sendrecv"]["class"] == "p2p"
    assert p["functions"]["MPI_Allreduce"]["class"] == "collective"
    assert sorted((m["src"], m["dst"], m["messages"], m["bytes"]) for m in p["matrix"]) == [
        (0, 1, 3, 768), (1, 2, 3, 768), (2, 0, 3, 768)]
    sizes = {b["bin"]: b["calls"] for b in p["message_sizes"]["MPI_Sendrecv"]}
    assert sizes == {9: [3, 3, 3]}  # 256 bytes: bin 9 holds [256, 511]
    assert all(r["host"] for r in p["ranks"]) and all(r["wall_time_s"] > 0.02 for r in p["ranks"])  # 10 ms steps
    assert "tool_cost" not in p  # only the finalize gather has one


def test_a_missing_rank_is_null_not_zero(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(FIXTURE, run)
    (run / "ranks" / "rank-000002.partial").unlink()
    r = rundir.load(run)
    p = r.profile
    assert p["ranks"][2] == {"rank": 2, "host": None, "wall_time_s": None, "mpi_time_s": None, "init_time_s": None,
                             "threads": None, "ended_by": None}
    assert fn(p, "MPI_Allreduce", "calls") == [3, 3, None]
    assert fn(p, "MPI_Allreduce", "min_s")[2] is None
    assert any("2 of 3 ranks" in x and "missing: 2" in x for x in r.problems), r.problems


def test_damaged_and_foreign_payloads_are_named(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(FIXTURE, run)
    ranks = run / "ranks"
    data = (ranks / "rank-000000.partial").read_bytes()
    (ranks / "rank-000000.partial").write_bytes(data[: len(data) // 2])
    (ranks / "rank-000002.partial").write_bytes(b"MLPAYLD1" + data[8:])  # a payload of another version
    r = rundir.load(run)
    why = {x.split(" is damaged: ")[0]: x.split(" is damaged: ")[1] for x in r.problems if " is damaged: " in x}
    assert why["ranks/rank-000000.partial"].startswith("truncated"), r.problems
    assert "another version" in why["ranks/rank-000002.partial"] and "MLPAYLD1" in why["ranks/rank-000002.partial"]
    assert fn(r.profile, "MPI_Sendrecv", "calls") == [None, 3, None]


def test_merge_program_usage_and_exit_status(tmp_path):
    files = sorted(str(f) for f in (FIXTURE / "ranks").glob("*.partial"))
    ok = subprocess.run([str(MERGE), *files], capture_output=True, text=True)
    assert ok.returncode == 0 and ok.stderr == ""
    assert json.loads(ok.stdout)["nranks"] == 3  # from the payloads when not given
    # one file of several payloads in a row (rank 0's gather buffer) is the same as one file each
    together = tmp_path / "all.payloads"
    together.write_bytes(b"".join(Path(f).read_bytes() for f in files))
    one = subprocess.run([str(MERGE), str(together)], capture_output=True, text=True)
    assert one.returncode == 0 and json.loads(one.stdout) == json.loads(ok.stdout)
    together.write_bytes(together.read_bytes()[:-5])  # the last one cut short: the others are merged
    cut = subprocess.run([str(MERGE), str(together)], capture_output=True, text=True)
    assert cut.returncode == 0 and "at byte" in cut.stderr and "truncated" in cut.stderr, cut.stderr
    assert json.loads(cut.stdout)["functions"]["MPI_Sendrecv"]["calls"] == [3, 3, None]
    bad = tmp_path / "x.partial"
    bad.write_bytes(b"not a payload at all")
    none = subprocess.run([str(MERGE), str(bad)], capture_output=True, text=True)
    assert none.returncode == 2 and none.stdout == ""
    assert none.stderr.strip() == f"{bad}: not an mpilens payload (bad magic)"
    usage = subprocess.run([str(MERGE), "--nranks", "x", *files], capture_output=True, text=True)
    assert usage.returncode == 1 and "--nranks" in usage.stderr


def test_report_of_the_committed_partial_run():
    p = subprocess.run([str(MPILENS), "report", "--json", str(FIXTURE)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["complete"] is False and doc["measured_ranks"] == 3
    by_name = {f["name"]: f for f in doc["functions"]}
    # 3 ranks, 3 completed steps each: 9 MPI_Sendrecv of 256 bytes each way, 9 MPI_Allreduce
    assert by_name["MPI_Sendrecv"]["calls"] == 9 and by_name["MPI_Sendrecv"]["bytes_sent"] == 9 * 256
    assert by_name["MPI_Allreduce"]["calls"] == 9
    assert any(f["kind"] == "incomplete" and "MPI_Abort" in f["message"] for f in doc["findings"]), doc["findings"]
