"""The C unit tests of tests/c (built by `make units`, which `make check` and `make test` run first):
the merge of payloads on a real run's payload files, the request tables under each MPI, and the safe
files of a run directory with links planted in it."""

from __future__ import annotations

import re
import subprocess

import pytest

from conftest import BUILD, MPIS, RUNS

# tests/data/partial-regions: examples/c/imbalance.c (1000 steps of 5 ms) on 4 ranks of Debian's Open
# MPI with MPILENS_TIME_SAMPLE=4, its ranks sent SIGTERM after 2.5 s: regions, user counters, call
# sites, message sizes and the sampled times' fields, which the aborted run's payloads do not have
UNITS = {"merge": [BUILD / "tests" / "test_merge", *sorted((RUNS / "aborted-openmpi" / "ranks").glob("rank-*.partial"))],
         "merge-regions": [BUILD / "tests" / "test_merge",
                           *sorted((RUNS.parent / "partial-regions" / "ranks").glob("rank-*.partial"))],
         **{f"tables-{m}": [BUILD / m / "tests" / "test_tables"] for m in MPIS},
         "files": [BUILD / "openmpi" / "tests" / "test_files"]}


@pytest.mark.parametrize("name", sorted(UNITS))
def test_c_unit(name):
    exe, *args = UNITS[name]
    if not exe.exists():
        pytest.fail(f"{exe} is not built: `make units`")
    p = subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True, timeout=300)
    last = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else ""
    m = re.fullmatch(r"(\d+) passed, (\d+) failed", last)
    assert p.returncode == 0 and m and int(m[1]) > 0 and m[2] == "0", p.stdout[-2000:] + p.stderr[-4000:]
