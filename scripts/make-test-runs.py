#!/usr/bin/env python3
"""Make the run directories the fast tests read (tests/data/runs/), from real runs of our examples
under Debian's Open MPI and MPICH: `make test-runs`.

Each run is one row of RUNS below: the example, its ranks and arguments, and the mpilens settings.
The tests derive what they expect from those (and from what the program printed, kept beside the
run as NAME.out), never from another run of the tool. runs.json records the rows and the run
directory's format (every file's magic and schema tag, from runtime/spec/rundir.yaml);
tests/test_committed_runs.py fails when the format has changed since, and this script is run again.

Usage: scripts/make-test-runs.py [NAME ...]   (no name: every run)
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import conftest  # noqa: E402  (the suite's own way of running a job under mpilens)

OUT = ROOT / "tests" / "data" / "runs"
TRACE = {"MPILENS_MODE": "profile,trace"}

# name: (mpi, example, ranks, arguments, settings)
RUNS: dict[str, tuple[str, str, int, list[str], dict[str, str]]] = {}
for _mpi in conftest.MPIS:
    RUNS |= {
        # profile of a ring: 5 rounds of 2048 bytes around 4 ranks
        f"ring-{_mpi}": (_mpi, "ring", 4, ["5", "2048"], {}),
        # the same traced, on 3 ranks
        f"ring-trace-{_mpi}": (_mpi, "ring", 3, ["4", "1000"], TRACE),
        # timelines with known findings (examples/c/patterns.c): delays of 30 ms, 3 repetitions
        f"late_sender-{_mpi}": (_mpi, "patterns", 2, ["late_sender", "30", "3"], TRACE),
        f"late_receiver-{_mpi}": (_mpi, "patterns", 2, ["late_receiver", "30", "3"], TRACE),
        f"late_burst-{_mpi}": (_mpi, "patterns", 2, ["late_burst", "30", "3"], TRACE),
        f"late_barrier-{_mpi}": (_mpi, "patterns", 2, ["late_barrier", "40", "3"], TRACE),
        f"halo-{_mpi}": (_mpi, "patterns", 2, ["halo", "20", "5"], TRACE),
        # a job that ends in MPI_Abort: rank 1 aborts after 3 steps of known traffic
        # (examples/c/sleeper.c), so each rank's statistics are in its payload file (ranks/), or in
        # its statistics file when its launcher killed it with SIGKILL (MPICH's); few region paths
        # paths, call sites and MPI-IO records keep those files small
        f"aborted-{_mpi}": (_mpi, "sleeper", 3, ["-n", "10", "-s", "10", "-a", "1:3"],
                            {"MPILENS_MAX_REGIONS": "2", "MPILENS_CALLSITE_MAX": "64",
                             "MPILENS_IO_MAX_FILES": "4", "MPILENS_IO_ACCESSES": "64"}),
    }
RUNS |= {
    # an injected imbalance (examples/c/imbalance.c): the last rank does twice the work
    "imbalance-openmpi": ("openmpi", "imbalance", 4, ["8", "10000", "3"], {}),
    "imbalance-mpich": ("mpich", "imbalance", 2, ["8", "10000", "1"], {}),
    # rank 1 at efficiency 0.5, rank 3 with twice the work
    "imbalance_efficiency-openmpi": ("openmpi", "imbalance", 4, ["8", "10000", "3", "1", "0.5"], {}),
    # three runs of a small imbalance: an ensemble for Thicket
    **{f"ensemble{i}-openmpi": ("openmpi", "imbalance", 3, ["3", "1000"], {}) for i in (1, 2, 3)},
    # every mode's files at once (for the damaged-file tests of tests/test_fuzz.py)
    "modes-openmpi": ("openmpi", "ring", 2, ["5", "2048"], {"MPILENS_MODE": "profile,counters,memory,mpit"}),
    # the other files the readers take, for the same tests: MPI-IO records and accesses
    # (examples/c/iofile.c, in a directory of its own: {tmp}), PAPI counters and intervals
    "files-openmpi": ("openmpi", "iofile", 2, ["{tmp}"], {"MPILENS_MODE": "profile,papi", "MPILENS_INTERVALS": "1"}),
    # MPI_Pcontrol(3) and (4) snapshots (examples/c/pcontrol.c: snapshot 3 2)
    "snapshot-openmpi": ("openmpi", "pcontrol", 2, ["snapshot", "3", "2"], {}),
}


def make(name: str) -> dict:
    mpi, exe, np, args, settings = RUNS[name]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "work"
        work.mkdir()
        job = conftest.run_example(mpi, exe, np, Path(tmp), [a.replace("{tmp}", str(work)) for a in args],
                                   settings=settings, check=False)
        if job.returncode != 0 and "-a" not in args:  # only the aborted runs end so
            raise SystemExit(f"make-test-runs: {name} failed (exit {job.returncode}):\n{job.stderr}")
        dest = OUT / name
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(job.rundir, dest, symlinks=True)
    for d in sorted(dest.rglob("*"), reverse=True):  # git keeps no empty folder: neither do the tests
        if d.is_dir() and not any(d.iterdir()):
            d.rmdir()
    (OUT / f"{name}.out").write_text(job.stdout)
    return {"mpi": mpi, "example": exe, "np": np, "args": args, "settings": settings}


def main(argv: list[str]) -> int:
    names = argv or list(RUNS)
    unknown = [n for n in names if n not in RUNS]
    if unknown:
        print(f"make-test-runs: no such run: {', '.join(unknown)} (known: {', '.join(RUNS)})", file=sys.stderr)
        return 2
    OUT.mkdir(parents=True, exist_ok=True)
    index = OUT / "runs.json"
    doc = json.loads(index.read_text()) if index.exists() and argv else {"runs": {}}
    for name in names:
        print(f"make-test-runs: {name}", flush=True)
        doc["runs"][name] = make(name)
    doc["runs"] = {n: doc["runs"][n] for n in RUNS if n in doc["runs"]}
    doc["format"] = conftest.run_directory_format()
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    doc["made_at_commit"] = commit.stdout.strip() or None
    index.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    print(f"make-test-runs: {len(names)} run(s) in {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
