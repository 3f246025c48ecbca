"""Damaged run directories never break the tool (fast tier: committed runs, no MPI job).

Every file of a committed run is damaged in turn (cut in half, emptied, garbled, given the wrong
JSON types, replaced by a FIFO, a link to /dev/zero or a directory) and every command that reads it runs
on it in this process. Each must end with a report (status 0) or one clear error (status 2), never
a traceback or a hang; and a report that differs from the undamaged run's must say that something
is wrong (`problems` not empty or `complete` false): damage is named, never silent."""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import shutil
import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import RUNS
from mpilens import cli

RUN_NAMES = ["ring-trace-openmpi", "aborted-openmpi", "aborted-mpich", "late_sender-mpich", "modes-openmpi",
             "files-openmpi", "snapshot-openmpi"]


def _half(p: Path) -> None:
    data = p.read_bytes()
    p.write_bytes(data[: len(data) // 2])


def _empty(p: Path) -> None:
    p.write_bytes(b"")


def _garble(p: Path) -> None:
    data = bytearray(p.read_bytes())
    rng = random.Random(len(data))
    for _ in range(max(1, len(data) // 50)):
        i = rng.randrange(len(data)) if data else 0
        if data:
            data[i] = rng.randrange(256)
    p.write_bytes(bytes(data))


def _wrong_types(p: Path) -> None:
    """JSON: every number a string and every list an object; binary: the first 64 bytes of another file."""
    try:
        doc = json.loads(p.read_text())
    except (ValueError, UnicodeDecodeError):
        p.write_bytes(b"MLTRACE?" + bytes(range(56)))
        return

    def twist(x):
        if isinstance(x, bool) or x is None:
            return x
        if isinstance(x, (int, float)):
            return str(x)
        if isinstance(x, list):
            return {str(i): twist(v) for i, v in enumerate(x)}
        if isinstance(x, dict):
            return {k: twist(v) for k, v in x.items()}
        return x

    p.write_text(json.dumps(twist(doc)))


def _array(p: Path) -> None:
    p.write_text("[1, 2, 3]\n")


def _fifo(p: Path) -> None:
    p.unlink()
    os.mkfifo(p)


def _dev_zero(p: Path) -> None:
    p.unlink()
    p.symlink_to("/dev/zero")


def _directory(p: Path) -> None:
    p.unlink()
    p.mkdir()


DAMAGE: dict[str, Callable[[Path], None]] = {
    "half": _half, "empty": _empty, "garbled": _garble, "types": _wrong_types, "array": _array, "fifo": _fifo,
    "dev-zero": _dev_zero, "directory": _directory,
}

COMMANDS = {
    "report": lambda d: ["report", str(d), "--json", "--quiet"],
    "trace": lambda d: ["trace", str(d), "--json"],
    "imbalance": lambda d: ["imbalance", str(d), "--json"],
    "counters": lambda d: ["counters", str(d), "--json"],
    "memory": lambda d: ["memory", str(d), "--json"],
    "mpit": lambda d: ["mpit", str(d), "--json"],
    # exports: a file, or one clear error (their output is not compared)
    "chrome": lambda d: ["export", "chrome", str(d), "-o", str(d.parent / "out.json"), "--quiet"],
    "hatchet": lambda d: ["export", "hatchet", str(d), "-o", str(d.parent / "out.hatchet.json"), "--quiet"],
    "perfetto": lambda d: ["export", "perfetto", str(d), "-o", str(d.parent / "out.perfetto-trace"), "--quiet"],
    "caliper": lambda d: ["export", "caliper", str(d), "-o", str(d.parent / "out.caliper.json"), "--quiet"],
    "otf2": lambda d: ["export", "otf2", str(d), "-o", str(d.parent / "out-otf2"), "--quiet"],
    "parquet": lambda d: ["export", "parquet", str(d), "-o", str(d.parent / "out.parquet"), "--quiet"],
    "estimate": lambda d: ["trace", str(d), "--estimate", "--under", "1K", "--json"],
    "io": lambda d: ["io", str(d), "--json"],
    "papi": lambda d: ["papi", str(d), "--json"],
    # one rank's intervals are too few for a model: its one clear error, or another one
    "variability": lambda d: ["model", "variability", str(d), "--json", "--quiet"],
    "snapshot": lambda d: ["report", str(d), "--snapshot", "2", "--json", "--quiet"],
}
COMPARED = {"report", "trace", "imbalance", "counters", "memory", "mpit", "io", "papi", "snapshot"}


def run_cli(args: list[str], seconds: int = 60) -> tuple[int, str, str]:
    """mpilens ARGS in this process: (status, stdout, stderr); a hang fails the test."""
    out, err = io.StringIO(), io.StringIO()

    def alarm(*_):
        raise TimeoutError(f"mpilens {' '.join(args)} did not end within {seconds} s")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = cli.main(args)
            except SystemExit as e:
                status = int(e.code or 0)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    return status, out.getvalue(), err.getvalue()


def _files(name: str) -> list[str]:
    return sorted(str(p.relative_to(RUNS / name)) for p in (RUNS / name).rglob("*") if p.is_file())


# the commands that read each run's data (the others end at once with one error, which the
# undamaged runs' tests check); the JSON damages only for JSON files (on a binary file they are
# one more garbling)
READERS = {"ring-trace-openmpi": ["report", "trace", "imbalance", "chrome", "hatchet", "perfetto", "estimate"],
           "aborted-openmpi": ["report", "imbalance", "hatchet", "caliper"],
           # two of its ranks killed by the launcher's SIGKILL: recovered from ranks/*.stats
           "aborted-mpich": ["report", "imbalance"],
           "late_sender-mpich": ["report", "trace", "chrome", "perfetto"],
           "modes-openmpi": ["report", "counters", "memory", "mpit"],
           # MPI-IO records and accesses, PAPI's files, the intervals
           "files-openmpi": ["report", "io", "papi", "variability"],
           # MPI_Pcontrol(3|4) snapshots
           "snapshot-openmpi": ["report", "snapshot"]}
JSON_ONLY = {"types", "array"}
CASES = [pytest.param(n, f, d, id=f"{n}:{f}:{d}") for n in RUN_NAMES for f in _files(n) for d in DAMAGE
         if d not in JSON_ONLY or f.endswith((".json", ".jsonl"))]
_pristine: dict[tuple[str, str], tuple[int, str, str]] = {}


def pristine(name: str, command: str, tmp: Path) -> tuple[int, str, str]:
    """The command's result on the undamaged run (a copy: a report may write its caches)."""
    if (name, command) not in _pristine:
        copy = tmp / "pristine" / name
        if not copy.exists():
            shutil.copytree(RUNS / name, copy, symlinks=True)
        _pristine[(name, command)] = run_cli(COMMANDS[command](copy))
    return _pristine[(name, command)]


def _comparable(doc: dict) -> dict:
    """A JSON document without what names the directory it was read from."""
    return {k: v for k, v in doc.items() if k not in ("run", "rundir", "path")}


@pytest.mark.parametrize("name,file,damage", CASES)
def test_damage_is_named_never_a_traceback(name, file, damage, tmp_path):
    run = tmp_path / name
    shutil.copytree(RUNS / name, run, symlinks=True)
    DAMAGE[damage](run / file)
    for command in READERS[name]:
        status, out, err = run_cli(COMMANDS[command](run))
        clean_status, clean_out, _ = pristine(name, command, tmp_path)
        assert "Traceback" not in err, err
        assert status in (0, 2) and "usage:" not in err, (command, status, err)
        if status == 2:
            lines = [x for x in err.splitlines() if x.startswith("mpilens")]
            assert len(lines) == 1, (command, err)
            continue
        if command not in COMPARED:
            continue
        doc = json.loads(out)
        if clean_status == 0 and _comparable(doc) != _comparable(json.loads(clean_out)):
            named = doc.get("problems") or doc.get("complete") is False
            assert named, f"{command}: a different result with nothing named as wrong"


# OTF2 and Parquet read the trace as the other exports do, through libraries of their own (otf2,
# pyarrow): each damage of the files they read, on one traced run
EXPORT_FILES = ["trace/rank-000000.bin", "meta.json", "profile.json", "maps/rank-000000.json"]


@pytest.mark.parametrize("file,damage", [pytest.param(f, d, id=f"{f}:{d}") for f in EXPORT_FILES for d in DAMAGE
                                         if d not in JSON_ONLY or f.endswith(".json")])
def test_otf2_and_parquet_exports_of_damaged_runs(file, damage, tmp_path):
    run = tmp_path / "late_sender-mpich"
    shutil.copytree(RUNS / "late_sender-mpich", run, symlinks=True)
    DAMAGE[damage](run / file)
    for command in ("otf2", "parquet"):
        status, _, err = run_cli(COMMANDS[command](run))
        assert "Traceback" not in err, err
        assert status in (0, 2) and "usage:" not in err, (command, status, err)
        if status == 2:
            assert len([x for x in err.splitlines() if x.startswith("mpilens")]) == 1, (command, err)
