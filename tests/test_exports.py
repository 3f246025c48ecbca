"""`mpilens export FORMAT RUN [-o OUT]`: every format of mpilens.exports behind one command, with
`mpilens trace --format` and the old import paths still working."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from conftest import ROOT
from mpilens import cli, exports

RUN = ROOT / "tests" / "data" / "trace-v1"


def test_registry_lists_every_format():
    assert exports.names() == ["caliper", "chrome", "hatchet", "otf2", "parquet", "perfetto"]
    assert exports.names("trace") == ["chrome", "otf2", "parquet", "perfetto"]
    assert exports.get("hatchet").source == exports.get("caliper").source == "profile"


@pytest.mark.parametrize("fmt", ["chrome", "parquet", "otf2", "hatchet", "perfetto", "caliper"])
def test_export_each_format_to_its_default_name(fmt, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["export", fmt, str(RUN), "--json", "--quiet"]) == 0
    doc = json.loads(capsys.readouterr().out)
    out = tmp_path / doc["output"]
    assert doc["format"] == fmt and out.name == "trace-v1" + exports.get(fmt).suffix and out.exists()
    if fmt == "chrome":
        events = json.loads(out.read_text())["traceEvents"]
        assert sum(e.get("ph") == "s" for e in events) == doc["written"]["messages"] == 6
    elif fmt == "parquet":
        assert pq.read_table(out).num_rows == doc["written"]["events"]
    elif fmt == "perfetto":  # read with perfetto's own protobuf classes
        from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import Trace

        packets = Trace.FromString(out.read_bytes()).packet
        assert sum(len(p.track_event.flow_ids) for p in packets) == doc["written"]["flows"] == 6
    elif fmt == "caliper":  # Caliper's json-split: a row per node and rank
        split = json.loads(out.read_text())
        assert len(split["nodes"]) == doc["written"]["nodes"] and len(split["data"]) == doc["written"]["rows"]
    elif fmt == "otf2":
        assert (out / "traces.otf2").exists()
        assert cli.main(["export", fmt, str(RUN), "--quiet"]) == 2  # a new directory only
    else:
        assert len(json.loads(out.read_text())["graph"][0]) == doc["written"]["nodes"]


def test_trace_command_and_old_imports_still_work(tmp_path, capsys):
    out = tmp_path / "t.json"
    assert cli.main(["trace", str(RUN), "--format", "chrome", "-o", str(out), "--quiet"]) == 0
    assert "Wrote" in capsys.readouterr().out and out.exists()
    from mpilens import export_hatchet
    from mpilens.trace import export

    assert export.chrome is exports.get("chrome").write
    assert export_hatchet.to_dict.__module__ == "mpilens.exports.hatchet"
