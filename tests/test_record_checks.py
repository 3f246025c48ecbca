"""The checks of the binary records written as a run goes (fast tier, committed runs, no MPI job):
memory mode's records and counters mode's snapshots each end with an FNV-1a check, so that a value
changed on disk is named as damage instead of read as a measurement (runtime/spec/rundir.yaml,
files `memory` and `counters_series`). The checks are recomputed here byte by byte, apart from
the reader's own code; files of the earlier version (no checks) are still read."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import numpy as np

from conftest import ROOT, RUNS
from mpilens import cli, counters_spc, memory

RUN = RUNS / "modes-openmpi"
V1 = ROOT / "tests" / "data" / "formats-v1"  # made by the runtime before the checks (MLMEM01, series version 1)
MEM_HEAD, MEM_REC, MEM_CHECKED = 64, 72, 64  # the header, a record, the bytes its check covers
SERIES_HEAD = 64


def fnv1a(data: bytes) -> int:
    """FNV-1a, 32 bits, one byte at a time as its definition says."""
    h = 2166136261
    for b in data:
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return h


def series_layout(path: Path) -> tuple[int, int, int]:
    """(version, nv, bytes per record) of a counters time series, from its header."""
    version, nv = struct.unpack_from("<II", path.read_bytes(), 8)
    return version, nv, 16 + 8 * nv


def cli_json(args: list[str], capsys) -> dict:
    assert cli.main(args) == 0
    return json.loads(capsys.readouterr().out)


def test_every_record_carries_its_check():
    files = sorted((RUN / "memory").glob("rank-*.bin"))
    assert files
    for f in files:
        raw = f.read_bytes()
        assert raw[:8] == b"MLMEM02\n" and (len(raw) - MEM_HEAD) % MEM_REC == 0
        for at in range(MEM_HEAD, len(raw), MEM_REC):
            check, zero = struct.unpack_from("<II", raw, at + MEM_CHECKED)
            assert (check, zero) == (fnv1a(raw[at:at + MEM_CHECKED]), 0), (f, at)
    for f in sorted((RUN / "counters").glob("rank-*.bin")):
        raw = f.read_bytes()
        version, _, size = series_layout(f)
        assert version == 2 and (len(raw) - SERIES_HEAD) % size == 0 and len(raw) > SERIES_HEAD
        for at in range(SERIES_HEAD, len(raw), size):
            rec = bytearray(raw[at:at + size])
            check = struct.unpack_from("<I", rec, 12)[0]
            rec[12:16] = bytes(4)
            assert check == fnv1a(bytes(rec)), (f, at)


def _samples(raw: bytes) -> list[int]:
    """Offsets of the residency samples (kind SAMPLE) of a memory file."""
    return [at for at in range(MEM_HEAD, len(raw), MEM_REC)
            if struct.unpack_from("<H", raw, at)[0] == memory.SAMPLE]


def test_a_changed_memory_sample_is_named_and_left_out(tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(RUN, run)
    f = run / "memory" / "rank-000000.bin"
    raw = bytearray(f.read_bytes())
    samples = _samples(bytes(raw))
    assert samples, "the committed run has residency samples"
    at = samples[len(samples) // 2]
    pss = struct.unpack_from("<q", raw, at + 16)[0]
    struct.pack_into("<q", raw, at + 16, pss + (1 << 20))  # one MiB more: a value a run could write
    f.write_bytes(bytes(raw))
    total = (len(raw) - MEM_HEAD) // MEM_REC
    doc = cli_json(["memory", str(run), "--json"], capsys)
    assert f"rank-000000.bin: 1 of {total} records fail their check (damaged; left out)" in " ".join(doc["problems"])
    clean = cli_json(["memory", str(RUN), "--json"], capsys)
    assert not clean["problems"]
    names = (run / "memory" / "functions.txt").read_text().splitlines()
    r = memory.read_rank(f, names, 2)
    assert len(r.t) == len(memory.read_rank(RUN / "memory" / "rank-000000.bin", names, 2).t) - 1


def test_a_changed_counters_snapshot_is_named_and_unknown(tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(RUN, run)
    f = run / "counters" / "rank-000000.bin"
    raw = bytearray(f.read_bytes())
    _, nv, size = series_layout(f)
    lay = counters_spc.load_layout(run)
    off = lay.counter("MPI_CALLS")["offset"]
    last = len(raw) - size  # the snapshot at MPI_Finalize
    value_at = last + 16 + 8 * off
    calls = struct.unpack_from("<q", raw, value_at)[0]
    assert calls > 0
    struct.pack_into("<q", raw, value_at, calls + 1)
    f.write_bytes(bytes(raw))
    doc = cli_json(["counters", str(run), "--json"], capsys)
    snapshots = (len(raw) - SERIES_HEAD) // size
    assert f"rank-000000.bin: 1 of {snapshots} snapshots fail their check (damaged): their intervals are unknown" \
        in doc["problems"]
    m, _ = counters_spc.load(run).matrix("MPI_CALLS")
    assert np.isnan(m[0, snapshots - 1]) and not np.isnan(m[1, snapshots - 1])
    clean, _ = counters_spc.load(RUN).matrix("MPI_CALLS")
    assert np.array_equal(m[1], clean[1]) and np.array_equal(m[0, :-1], clean[0, :-1])


def test_files_of_the_earlier_version_are_read_without_checks():
    f = V1 / "memory-rank-000000.bin"
    raw = f.read_bytes()
    assert raw[:8] == b"MLMEM01\n"
    r = memory.read_rank(f, [], 2)
    assert not r.problems
    kinds = [struct.unpack_from("<H", raw, at)[0] for at in range(MEM_HEAD, len(raw), 64)]
    assert len(r.t) >= kinds.count(memory.SAMPLE) > 0
    s = V1 / "counters-rank-000000.bin"
    version, nv, size = series_layout(s)
    assert version == 1
    problems: list[str] = []
    series = counters_spc.read_series(s, nv, problems)
    assert not problems and series.damaged is None and series.whole().all()
    assert len(series.t) == (s.stat().st_size - SERIES_HEAD) // size and series.final[-1]
