"""The ELF reader behind imports.json (mpilens/imports.py), against readelf, and on damaged files.
No MPI job: the fast tier."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from conftest import BUILD
from mpilens import imports


def readelf_symbols(path: str) -> set[tuple[str, bool]]:
    out = subprocess.run(["readelf", "-W", "--dyn-syms", path], capture_output=True, text=True, check=True).stdout
    syms = set()
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 8 and f[0].endswith(":") and f[0][:-1].isdigit() and f[7]:
            syms.add((f[7].split("@")[0], f[6] != "UND"))
    return syms


@pytest.mark.parametrize("path", [shutil.which("ls"), str(BUILD / "lib" / "libmpilens-openmpi.so"),
                                  str(BUILD / "lib" / "libmpilens-mpich.so")])
def test_dynamic_symbols_as_readelf_reads_them(path):
    mine = imports._dyn_symbols(path)
    assert mine is not None
    assert {(n, d) for n, _, d in mine if n} == readelf_symbols(path)


def test_runtime_exports_its_wrappers():
    ours = imports.exported(str(BUILD / "lib" / "libmpilens-openmpi.so"))
    assert {"MPI_Send", "mpi_send_", "MPI_Isendrecv"} <= ours and "MPI_Wtime" not in ours


@pytest.mark.parametrize("content", [b"", b"\x7fELF", b"\x7fELF\x02\x01" + b"\xff" * 100, b"#!/bin/sh\n"])
def test_damaged_or_foreign_files_are_not_read(tmp_path, content):
    f = tmp_path / "prog"
    f.write_bytes(content)
    assert imports._dyn_symbols(str(f)) is None
    doc = imports.find(str(f), str(BUILD / "lib" / "libmpilens-openmpi.so"), "openmpi", BUILD / "libexec" / "mpilens" / "openmpi")
    assert doc["objects"] == []


def test_c_names_of_every_mangling():
    assert {imports._c_name(s) for s in ("MPI_Send", "mpi_send_", "mpi_send__", "PMPI_Send", "pmpi_send_",
                                         "mpi_send_f08", "MPI_SEND")} == {"mpi_send"}


@pytest.mark.parametrize("content", ['{"schema": "mpilens.imports/1", "objects": [{"path": 3}]}', "[1, 2", "\xff\xfe"])
def test_a_damaged_imports_file_is_a_problem_not_a_traceback(tmp_path, content):
    from conftest import MPILENS, committed_run

    run = committed_run("ring-openmpi", tmp_path).rundir
    (run / "imports.json").write_bytes(content.encode("latin-1"))
    r = subprocess.run([str(MPILENS), "report", str(run), "--quiet"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "Note      : imports.json" in r.stdout, r.stdout
    assert "Not measured" not in r.stdout


def test_fortran_procedures_the_mpi_implements_over_its_c_functions_are_measured():
    """MPICH's Fortran library implements mpi_f08's mpi_send_f08ts_ (and mpif.h's MPI_SESSION_INIT)
    over the C MPI_Send (MPI_Session_init), which it imports and the runtime wraps: such a call is
    measured (tests/test_fortran.py counts examples/fortran/fsessions.f90's sends exactly), so
    imports.json must not list it as unmeasured. The program does import names the runtime does not
    export, so the rule is what keeps them off the list."""
    helpers = BUILD / "libexec" / "mpilens" / "mpich"
    ours = imports.exported(str(BUILD / "lib" / "libmpilens-mpich.so"))
    for example in ("fsessions", "f08traffic"):
        exe = BUILD / "mpich" / "examples" / example
        called = {n for n, obj, defined in imports._dyn_symbols(str(exe)) if not defined and imports.MPI_NAME.match(n)}
        assert "mpi_send_f08ts_" in called and "mpi_send_f08ts_" not in ours
        doc = imports.find(str(exe), str(BUILD / "lib" / "libmpilens-mpich.so"), "mpich", helpers)
        (obj,) = doc["objects"]
        assert obj["unmeasured"] == [], obj
