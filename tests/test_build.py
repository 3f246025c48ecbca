"""The build on machines that are not the developers': `make` without an MPI says what is missing,
one line each; the family of a runtime comes from the MPI compiler wrapper's own mpi.h, whatever
its name (runtime/gen/mpicc_probe.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import BUILD, MATRIX, ROOT, matrix_prefix

PROBE = ROOT / "runtime" / "gen" / "mpicc_probe.py"


def probe(mpicc: str, env: dict[str, str] | None = None, out: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(PROBE), mpicc, *(["--json", str(out)] if out else [])],
                          capture_output=True, text=True, env=env, timeout=60)


def test_make_without_the_mpis_says_what_is_missing(tmp_path):
    """A machine with a compiler, make and Python but no MPI: one line per missing thing with the
    Debian package that has it, then make stops; no traceback, nothing built."""
    bare = tmp_path / "bin"
    bare.mkdir()
    for tool in ("bash", "sh", "make", "cc", "gcc", "python3", "cat", "uname", "nproc", "gfortran", "as", "ld",
                 "cmp", "echo", "test", "mkdir", "cp"):
        found = shutil.which(tool)
        if found:
            (bare / tool).symlink_to(found)
    env = {"PATH": str(bare), "HOME": str(tmp_path), "LANG": "C.UTF-8"}
    p = subprocess.run(["make", "-n"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode != 0
    lines = [x for x in p.stderr.splitlines() if x.startswith("mpilens: missing")]
    assert any("mpicc.openmpi" in x and "libopenmpi-dev" in x for x in lines), p.stderr
    assert any("mpicc.mpich" in x and "libmpich-dev" in x for x in lines), p.stderr
    assert "make deps" in p.stderr and "docs/install.md" in p.stderr
    assert "Traceback" not in p.stderr + p.stdout and p.stdout == ""


@pytest.mark.parametrize("mpicc,family,name", [("mpicc.openmpi", "openmpi", "Open MPI 4.1"),
                                                ("mpicc.mpich", "mpich", "MPICH 4.0")])
def test_probe_names_debians_mpis(tmp_path, mpicc, family, name):
    p = probe(mpicc, out=tmp_path / "runtime.json")
    assert p.returncode == 0, p.stderr
    facts = json.loads((tmp_path / "runtime.json").read_text())
    assert facts["family"] == family and facts["mpi"].startswith(name)
    assert facts["mpicc"] == str(Path(shutil.which(mpicc)))


@pytest.mark.matrix
@pytest.mark.parametrize("mpi", [m for m in MATRIX if "installation" not in m] + ["mpich5abi"])
def test_probe_names_the_mpis_of_the_matrix(tmp_path, mpi):
    """Each MPI of the matrix, by the compiler a user of it has: the family its runtime is built
    for and the version its wheel has (scripts/mpis.toml)."""
    prefix = matrix_prefix(mpi)
    spec = MATRIX[mpi]
    mpicc = spec.get("cc", str(prefix / "bin" / "mpicc")).replace("{mpis}", str(BUILD / "mpis"))
    env = {**os.environ, **{k: v.replace("{prefix}", str(prefix)) for k, v in spec.get("env", {}).items()}}
    p = probe(mpicc, env=env, out=tmp_path / "runtime.json")
    assert p.returncode == 0, p.stderr
    facts = json.loads((tmp_path / "runtime.json").read_text())
    assert facts["family"] == spec["family"]
    if spec["family"] != "abi":
        version = spec["packages"][0].split("==")[1]  # the MPI's own wheel comes first (impi-rt's)
        assert facts["mpi"].endswith(version), facts


def test_probe_refuses_what_is_not_an_mpi_compiler(tmp_path):
    (tmp_path / "mpi.h").write_text("/* not an MPI */\n")
    fake = tmp_path / "fakecc"
    fake.write_text(f"#!/bin/sh\nexec cc -I{tmp_path} \"$@\"\n")
    fake.chmod(0o755)
    for mpicc, why in ((str(fake), "neither Open MPI's"), (str(tmp_path / "nothing"), "cannot run it"), ("cc", "mpi.h")):
        p = probe(mpicc)
        assert p.returncode == 1 and why in p.stderr and "Traceback" not in p.stderr, (mpicc, p.stderr)
