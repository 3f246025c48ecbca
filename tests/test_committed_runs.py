"""The committed run directories of the fast tier (tests/data/runs) are current: made from the rows
of scripts/make-test-runs.py in the run directory's format of today's spec, every file of them in
that format. When the format changes, `make test-runs` makes them again."""

from __future__ import annotations

import json
import runpy

import pytest

from conftest import ROOT, RUNS, run_directory_format
from mpilens import _layout, layout

INDEX = json.loads((RUNS / "runs.json").read_text())
REMAKE = "the committed runs are out of date: `make test-runs` makes them again (scripts/make-test-runs.py)"


def test_made_in_todays_format():
    made, now = INDEX["format"], run_directory_format()
    changed = sorted(k for k in made.keys() | now.keys() if made.get(k) != now.get(k))
    assert not changed, f"{REMAKE}; changed since: {', '.join(changed)}"


def test_every_row_of_the_script_is_made_as_it_reads():
    rows = runpy.run_path(str(ROOT / "scripts" / "make-test-runs.py"))["RUNS"]
    made = {name: (r["mpi"], r["example"], r["np"], r["args"], r["settings"]) for name, r in INDEX["runs"].items()}
    assert made == {name: (mpi, exe, np, args, settings) for name, (mpi, exe, np, args, settings) in rows.items()}, REMAKE
    for name in rows:
        assert (RUNS / name / "meta.json").is_file() and (RUNS / f"{name}.out").is_file(), (name, REMAKE)


@pytest.mark.parametrize("name", sorted(INDEX["runs"]))
def test_every_file_is_in_todays_format(name):
    """Each file the spec knows starts with its current magic or carries its current schema tag."""
    run = RUNS / name
    seen = 0
    for spec in _layout.FILES.values():
        for f in sorted(run.glob(spec.glob)):
            seen += 1
            if spec.magic is not None:
                assert f.read_bytes()[:len(spec.magic)] == spec.magic, (f, REMAKE)
            elif spec.schema is not None:
                first = f.read_text().splitlines()[0] if spec.format == "jsonl" else f.read_text()
                assert json.loads(first).get("schema") == spec.schema, (f, REMAKE)
    files = [f for f in run.rglob("*") if f.is_file()]
    assert seen == len(files), ("files the spec does not know", sorted(set(files)))
    assert layout.modes(run) & {"profile", "partial"}, "neither a profile nor the ranks' payloads"
