"""A long name (the runtime keeps up to 65,535 bytes of a region's name) is shortened where a report
lays names out in tables, and whole where a reader can get it: the JSON, and the HTML tooltip
(fast tier: a committed run whose region is renamed in its profile.json, no MPI job)."""

from __future__ import annotations

import json
import re
import shutil
from html import unescape

from conftest import RUNS
from mpilens import cli

LONG = "phase-" + "x" * 70_000 + "\x1b-end"  # with a control character, shown escaped


def renamed_run(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(RUNS / "imbalance-openmpi", run)
    doc = json.loads((run / "profile.json").read_text())
    [region] = [r for r in doc["regions"] if r["name"] == "force"]
    region["name"] = LONG
    (run / "profile.json").write_text(json.dumps(doc))
    return run


def test_html_tables_shorten_a_long_name_and_keep_it_whole_in_the_tooltip(tmp_path, capsys):
    run = renamed_run(tmp_path)
    page = tmp_path / "report.html"
    assert cli.main(["report", str(run), "--html", str(page), "--quiet"]) == 0
    html = page.read_text()
    shown = LONG.replace("\x1b", "\\x1b")
    cells = re.findall(r'<td class="l"[^>]*><span title="([^"]*)">([^<]*)</span></td>', html)
    mine = [(unescape(t), unescape(s)) for t, s in cells if unescape(t) == shown]
    assert mine, "a table cell with the long name in its tooltip"
    for _, text in mine:
        assert len(text) <= 120 and text.startswith("phase-xxx") and text.endswith("\\x1b-end") and "…" in text
    # outside tooltips the name appears only shortened
    assert html.count("x" * 200) == sum(t.count("x" * 200) for t, _ in re.findall(r'title="([^"]*)"()', html))


def test_text_rows_stay_short_and_json_keeps_the_name(tmp_path, capsys):
    run = renamed_run(tmp_path)
    assert cli.main(["report", str(run)]) == 0
    text = capsys.readouterr().out
    assert "x" * 200 not in text and max(len(line) for line in text.splitlines()) < 250
    assert cli.main(["imbalance", str(run), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert LONG in {s["name"] for s in doc["scopes"]}
