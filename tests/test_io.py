"""I/O per file (MPILENS_IO, `mpilens io`): known MPI-IO from C and Fortran under both MPIs, and
parallel HDF5 from Debian (h5py with mpi4py under Open MPI, the HDF5 C library under MPICH)
writing a dataset collectively.

Expectations come from the programs (examples/c/iofile.c, examples/fortran/fio.f90 state their
I/O), from the files on disk (sizes, the mount table) and from HDF5 itself (the dataset's offset in
the file), never from mpilens' own output."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import MPILENS, example, job_env, launcher, mpilens_run, run_example
from mpilens import _layout as L

SIZES = ("0-100", "100-1K", "1K-10K", "10K-100K", "100K-1M", "1M-4M", "4M-10M", "10M-100M", "100M-1G", "1G+")
EDGES = (100, 1024, 10240, 102400, 1048576, 4194304, 10485760, 104857600, 1073741824)


def size_bin(n: int) -> str:
    """Darshan's access-size bin of n bytes (docs: IO_SIZE_BINS)."""
    return SIZES[sum(1 for e in EDGES if n >= e)]


def patterns(accesses: list[tuple[int, int]]) -> dict[str, int]:
    """The documented offset rule applied to (offset, bytes) in call order: consecutive when an
    access starts where the previous one ended (the file's start before the first), sequential
    after it, random before it."""
    out = {"consecutive": 0, "sequential": 0, "random": 0, "unknown": 0}
    prev = 0
    for off, n in accesses:
        out["consecutive" if off == prev else "sequential" if off > prev else "random"] += 1
        prev = off + n
    return out


def sizes(accesses: list[tuple[int, int]]) -> dict[str, int]:
    out = dict.fromkeys(SIZES, 0)
    for _, n in accesses:
        out[size_bin(n)] += 1
    return out


def mount_of(path: Path) -> tuple[str, str]:
    """(fs type, mount point) of a path from the system's mount table: the longest mount point
    containing it, the last one listed winning."""
    real = os.path.realpath(path)
    best = ("", "")
    for line in Path("/proc/self/mounts").read_text().splitlines():
        dev, mnt, fstype = line.split()[:3]
        mnt = mnt.replace("\\040", " ")
        if real == mnt or real.startswith(mnt.rstrip("/") + "/"):
            if len(mnt) >= len(best[1]):
                best = (fstype, mnt)
    return best


def io_json(rundir: Path) -> dict:
    """`mpilens io RUN --json`, as a user runs it."""
    p = subprocess.run([str(MPILENS), "io", str(rundir), "--json"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def by_name(doc: dict) -> dict[str, dict]:
    names = [f["name"] for f in doc["files"]]
    assert len(names) == len(set(names)), f"a file listed twice: {names}"
    return {f["name"]: f for f in doc["files"]}


def accesses(rundir: Path, name: str, rank: int) -> list[tuple[str, str, int, int]]:
    """(function, kind label, offset, bytes) of one rank's listed calls on one file, in order."""
    from mpilens import rundir as rd
    from mpilens.report import io_text

    data = rd.load(rundir).io
    idx = data.names.index(name)
    return [(data.functions[rank][int(a["fn"])], io_text.kind_label(int(a["kind"])), int(a["offset"]), int(a["bytes"]))
            for a in data.accesses if a["rank"] == rank and a["file"] == idx]


# ------------------------------------------------------------------------------------- C
@pytest.mark.parametrize("np_", [3])
def test_known_io_per_file(mpi, tmp_path, np_):
    data = tmp_path / "data"
    data.mkdir()
    job = run_example(mpi, "iofile", np_, tmp_path, args=[str(data)])
    assert f"iofile: ok {np_}" in job.stdout
    shared, rank0 = str(data / "shared.dat"), str(data / "rank0.dat")
    assert os.path.getsize(shared) == 7168 * np_
    assert os.path.getsize(rank0) == 300

    doc = io_json(job.rundir)
    files = by_name(doc)
    assert set(files) == {shared, rank0}  # names as the program opened them
    s = files[shared]
    assert s["shared"] is True and s["ranks"] == list(range(np_))
    # every byte of shared.dat written once: the bytes written are the file's size on disk
    assert s["bytes_written"] == os.path.getsize(shared)
    assert s["end_of_writes"] == os.path.getsize(shared)
    assert s["bytes_read"] == np_ * (4096 + 256)
    assert (s["fs_type"], s["mount"]) == mount_of(data)
    assert s["opens"] == s["closes"] == np_
    assert s["syncs"] == 2 * np_ and s["set_views"] == 2 * np_ and s["set_sizes"] == 0
    assert s["writes"] == {"total": 7 * np_, "independent": 6 * np_, "collective": np_, "blocking": 6 * np_,
                           "nonblocking": np_, "independent_blocking": 5 * np_, "independent_nonblocking": np_,
                           "collective_blocking": np_, "collective_nonblocking": 0}
    assert s["reads"]["independent_blocking"] == np_ and s["reads"]["collective_blocking"] == np_
    assert s["reads"]["total"] == 2 * np_
    assert s["slowest_rank"] in range(np_)
    assert s["slowest_rank_time_s"] == max(p["time_s"] for p in s["per_rank"])
    assert s["time_s"]["meta"] > 0 and s["time_s"]["write"] > 0 and s["time_s"]["read"] > 0
    assert 0 <= s["first_open_s"] <= s["first_access_s"] <= s["last_access_s"] <= s["last_close_s"]

    read_fn = "MPI_File_read_at_c" if mpi == "mpich" else "MPI_File_read_at"  # MPI 4 (MPICH 4) has the _c binding
    write_sizes = dict.fromkeys(SIZES, 0)
    for r in range(np_):
        writes = [((k * np_ + r) * 256, 256) for k in range(4)] + [(1024 * np_ + 4096 * r, 4096),
                                                                    (5120 * np_ + 2048 * r, 1024),
                                                                    (5120 * np_ + 2048 * r + 1024, 1024)]
        reads = [(1024 * np_ + 4096 * r, 4096), (r * 256, 256)]
        p = s["per_rank"][r]
        assert p["rank"] == r and p["comm_size"] == np_
        assert p["bytes_written"] == sum(n for _, n in writes) and p["bytes_read"] == sum(n for _, n in reads)
        assert p["write_patterns"] == patterns(writes)
        assert p["read_patterns"] == patterns(reads)
        assert p["end_of_writes"] == max(o + n for o, n in writes)
        for k, v in sizes(writes).items():
            write_sizes[k] += v
        calls = accesses(job.rundir, shared, r)
        assert [c for c in calls if c[1].startswith(("write", "read"))] == [
            *[("MPI_File_write_at", "write independent", o, n) for o, n in writes[:4]],
            ("MPI_File_write_at_all", "write collective", *writes[4]),
            ("MPI_File_write", "write independent", *writes[5]),
            ("MPI_File_iwrite", "write independent nonblocking", *writes[6]),
            ("MPI_File_read_at_all", "read collective", *reads[0]),
            (read_fn, "read independent", *reads[1])]
        assert [c[0] for c in calls if not c[1].startswith(("write", "read"))] == [
            "MPI_File_open", "MPI_File_set_view", "MPI_File_sync", "MPI_File_sync", "MPI_File_set_view",
            "MPI_File_close"]
    assert s["write_sizes"] == write_sizes

    z = files[rank0]
    assert z["shared"] is False and z["ranks"] == [0]
    assert z["bytes_written"] == 300 == os.path.getsize(rank0) and z["bytes_read"] == 0
    assert z["writes"]["independent_blocking"] == 3 and z["writes"]["total"] == 3
    assert z["write_patterns"] == {"consecutive": 3, "sequential": 0, "random": 0, "unknown": 0}
    assert z["write_sizes"]["100-1K"] == 3
    assert z["set_sizes"] == 1 and z["per_rank"][0]["comm_size"] == 1

    # the profile's per-function counts agree with the per-file ones
    prof = job.profile["functions"]
    assert prof["MPI_File_write_at"]["calls"] == [4] * np_
    assert prof["MPI_File_write"]["calls"] == [4] + [1] * (np_ - 1)


@pytest.mark.mpi
def test_text_and_frames(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    job = run_example("openmpi", "iofile", 2, tmp_path, args=[str(data)])
    p = subprocess.run([str(MPILENS), "io", str(job.rundir)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert f"{data / 'shared.dat'}  (shared by 2 ranks; " in p.stdout
    assert f"{data / 'rank0.dat'}  (rank 0 only; " in p.stdout
    assert "(14336 B) in 14 calls (12 independent, 2 collective, 2 nonblocking)" in p.stdout

    import mpilens

    df = mpilens.frames.files(mpilens.load(job.rundir))
    assert sorted(zip(df["name"], df["rank"])) == sorted([(str(data / "rank0.dat"), 0),
                                                          (str(data / "shared.dat"), 0), (str(data / "shared.dat"), 1)])
    row = df[(df["name"] == str(data / "shared.dat")) & (df["rank"] == 1)].iloc[0]
    assert row["bytes_written"] == 7168 and row["bytes_read"] == 4352
    assert row["writes"] == 7 and row["collective_writes"] == 1


@pytest.mark.mpi
def test_report_sections(tmp_path):
    """The I/O section in the text, JSON and HTML reports: one table row per file, one timeline bar
    per call the program made (iofile: 13 calls on shared.dat per rank, 6 on rank0.dat)."""
    data = tmp_path / "data"
    data.mkdir()
    job = run_example("mpich", "iofile", 2, tmp_path, args=[str(data)])
    text = subprocess.run([str(MPILENS), "report", str(job.rundir)], capture_output=True, text=True, check=True).stdout
    block = text.split("@ I/O per file")[1].split("\n@ ")[0]
    assert f"{data / 'shared.dat'}  (shared by 2 ranks; " in block and f"{data / 'rank0.dat'}  (rank 0 only; " in block
    doc = json.loads(subprocess.run([str(MPILENS), "report", str(job.rundir), "--json"], capture_output=True,
                                    text=True, check=True).stdout)
    assert [f["name"] for f in doc["io"]["files"]] == [str(data / "shared.dat"), str(data / "rank0.dat")]
    html = tmp_path / "r.html"
    subprocess.run([str(MPILENS), "report", str(job.rundir), "--html", str(html)], check=True, capture_output=True)
    page = html.read_text()
    section = page.split('id="io-table"')[1].split("</table>")[0]
    assert section.count("<tr>") == 3  # the header and the two files
    timeline = page.split('id="io-timeline"')[1].split("</svg>")[0]
    # per rank on shared.dat: open, 4 write_at, write_at_all, set_view, write, iwrite, 2 syncs, set_view,
    # read_at_all, read_at, close; rank 0 on rank0.dat: open, 3 writes, set_size, close
    assert timeline.count("<rect") == 2 * 15 + 6
    assert timeline.count("MPI_File_write_at (write independent) on ") == 2 * 4


@pytest.mark.mpi
def test_findings(tmp_path):
    """iosmall's bad I/O gives the three I/O findings it was written for, with its numbers;
    iofile (8 small writes, 12 independent ones, 14 KiB) gives none of them."""
    np_, n = 3, 200
    data = tmp_path / "data"
    data.mkdir()
    job = run_example("openmpi", "iosmall", np_, tmp_path, args=[str(data), str(n)])
    assert f"iosmall: ok {np_}" in job.stdout
    doc = json.loads(subprocess.run([str(MPILENS), "report", str(job.rundir), "--json"], capture_output=True,
                                    text=True, check=True).stdout)
    found = {f["kind"]: f for f in doc["findings"]}
    small = str(data / "small.dat")
    assert found["io_small_unaligned_writes"]["evidence"]["file"] == small
    assert found["io_small_unaligned_writes"]["evidence"]["small_unaligned_writes"] == np_ * n
    assert found["io_independent_writes"]["evidence"] == {"file": small, "independent_writes": np_ * n,
                                                          "collective_writes": 0, "ranks": np_}
    one = found["io_one_rank"]["evidence"]
    assert one["rank"] == 0 and one["bytes"] == np_ * n * 100 + 4 * 2**20
    assert abs(one["share"] - (n * 100 + 4 * 2**20) / (np_ * n * 100 + 4 * 2**20)) < 1e-12

    other = tmp_path / "other"
    other.mkdir()
    (other / "data").mkdir()
    job = run_example("openmpi", "iofile", 2, other, args=[str(other / "data")])
    doc = json.loads(subprocess.run([str(MPILENS), "report", str(job.rundir), "--json"], capture_output=True,
                                    text=True, check=True).stdout)
    kinds = {f["kind"] for f in doc["findings"]}
    assert not kinds & {"io_small_unaligned_writes", "io_independent_writes", "io_one_rank"}


def test_trace_records_file_and_offset(mpi, tmp_path):
    """In trace mode each MPI-IO call's event is preceded by an io event with its file and byte
    offset: iofile's offsets, in its order, on the file it names."""
    from mpilens.trace import reader, timeline

    data = tmp_path / "data"
    data.mkdir()
    np_ = 2
    job = run_example(mpi, "iofile", np_, tmp_path, args=[str(data)], settings={"MPILENS_MODE": "profile,trace"})
    assert f"iofile: ok {np_}" in job.stdout
    tl = timeline.load(job.rundir)
    ev = tl.ev
    shared = str(data / "shared.dat")
    for r in range(np_):
        idx = [int(i) for i in tl.io_events() if ev["rank"][i] == r]
        got = []
        for i in idx:
            nxt = i + 1  # the call's own event, same thread, same start
            assert ev["kind"][nxt] == reader.CALL and ev["t0"][nxt] == ev["t0"][i]
            assert ev["thread"][nxt] == ev["thread"][i]
            got.append((tl.file_name(r, int(ev["fn"][i])), tl.name(nxt), int(ev["sent"][i])))
        read_fn = "MPI_File_read_at_c" if mpi == "mpich" else "MPI_File_read_at"
        expected = [(shared, "MPI_File_open", -1),
                    *[(shared, "MPI_File_write_at", (k * np_ + r) * 256) for k in range(4)],
                    (shared, "MPI_File_write_at_all", 1024 * np_ + 4096 * r), (shared, "MPI_File_set_view", -1),
                    (shared, "MPI_File_write", 5120 * np_ + 2048 * r),
                    (shared, "MPI_File_iwrite", 5120 * np_ + 2048 * r + 1024),
                    (shared, "MPI_File_sync", -1), (shared, "MPI_File_sync", -1), (shared, "MPI_File_set_view", -1),
                    (shared, "MPI_File_read_at_all", 1024 * np_ + 4096 * r), (shared, read_fn, r * 256),
                    (shared, "MPI_File_close", -1)]
        if r == 0:
            rank0 = str(data / "rank0.dat")
            expected += [(rank0, "MPI_File_open", -1), (rank0, "MPI_File_write", 0), (rank0, "MPI_File_write", 100),
                         (rank0, "MPI_File_write", 200), (rank0, "MPI_File_set_size", -1), (rank0, "MPI_File_close", -1)]
        assert got == expected
    out = tmp_path / "t.json"
    subprocess.run([str(MPILENS), "export", "chrome", str(job.rundir), "-o", str(out)], check=True, capture_output=True)
    instants = [e for e in json.loads(out.read_text())["traceEvents"] if e.get("cat") == "io"]
    assert len(instants) == len(tl.io_events())
    assert {(e["args"]["file"], e["args"]["offset"]) for e in instants if e["pid"] == 1} >= {
        (shared, 1024 * np_ + 4096), (shared, 256)}


# ------------------------------------------------------------------------------------- Fortran
def test_fortran_io(mpi, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    job = run_example(mpi, "fio", 2, tmp_path, args=[str(data)])
    assert "fio: ok 2" in job.stdout
    name = str(data / "fortran.dat")
    assert os.path.getsize(name) == 1088 * 2
    files = by_name(io_json(job.rundir))
    assert list(files) == [name]  # the CHARACTER's padding is not part of the name
    f = files[name]
    assert f["bytes_written"] == os.path.getsize(name) == f["end_of_writes"]
    assert f["bytes_read"] == 2 * 1024
    assert f["writes"]["collective_blocking"] == 2 and f["writes"]["independent_blocking"] == 2
    assert f["reads"]["independent_blocking"] == 2 and f["reads"]["total"] == 2
    for r in range(2):
        calls = accesses(job.rundir, name, r)
        assert [c for c in calls if c[1].startswith(("write", "read"))] == [
            ("MPI_File_write_at_all", "write collective", 1024 * r, 1024),
            ("MPI_File_write_at", "write independent", 1024 * 2 + 64 * r, 64),
            ("MPI_File_read_at", "read independent", 1024 * r, 1024)]


# ------------------------------------------------------------------------------------- no I/O
@pytest.mark.mpi
def test_no_io_no_files(tmp_path):
    """A run without MPI-IO leaves no io/ folder, and `mpilens io` says why."""
    job = run_example("openmpi", "ring", 2, tmp_path)
    assert not (job.rundir / "io").exists()
    p = subprocess.run([str(MPILENS), "io", str(job.rundir)], capture_output=True, text=True)
    assert p.returncode != 0 and "no I/O recorded" in p.stderr


@pytest.mark.mpi
def test_io_off(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    job = run_example("mpich", "iofile", 2, tmp_path, args=[str(data)], settings={"MPILENS_IO": "0"})
    assert "iofile: ok 2" in job.stdout
    assert not (job.rundir / "io").exists()
    assert job.profile["functions"]["MPI_File_write_at"]["calls"] == [4, 4]  # the profile still counts


@pytest.mark.mpi
@pytest.mark.apps
def test_killed_rank_keeps_its_io(tmp_path):
    """The file of a rank that ends without MPI_Finalize is written on its exit path."""
    data = tmp_path / "data"
    data.mkdir()
    src = tmp_path / "iokill.c"
    src.write_text(r'''
#include <mpi.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank; MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_File fh; char buf[1000] = {0};
    MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
    MPI_File_write_at(fh, rank * 1000, buf, 1000, MPI_BYTE, MPI_STATUS_IGNORE);
    MPI_File_close(&fh);
    MPI_Barrier(MPI_COMM_WORLD);
    exit(3);
}
''')
    exe = tmp_path / "iokill"
    subprocess.run(["mpicc.mpich", "-o", str(exe), str(src)], check=True)
    job = mpilens_run("mpich", launcher("mpich", 2) + [str(exe), str(data / "k.dat")], tmp_path, check=False)
    # Both ranks wrote and closed before the barrier, so both keep their I/O whatever the launcher
    # does to the rank that exits second: written on its exit path, or, killed before that, kept in
    # its statistics file's mapping (docs/profile.md, "When a job dies"). The first rank to exit
    # runs the whole path before the launcher reacts: some rank left its partial profile.
    left = sorted(int(p.name.split("-")[1].split(".")[0]) for p in (job.rundir / "ranks").glob("rank-*.partial"))
    assert left, "no rank reached its exit path"
    doc = io_json(job.rundir)
    with_io = doc["ranks_with_io"]
    assert doc["incomplete_ranks"] == with_io == [0, 1], (with_io, left)
    f = by_name(doc)[str(data / "k.dat")]
    assert [p["bytes_written"] for p in f["per_rank"]] == [1000] * len(with_io)
    assert f["closes"] == len(with_io)


# ------------------------------------------------------------------------------------- HDF5
H5PY_SCRIPT = '''\
import sys
import numpy as np
from mpi4py import MPI
import h5py

comm = MPI.COMM_WORLD
n = int(sys.argv[2])
with h5py.File(sys.argv[1], "w", driver="mpio", comm=comm) as f:
    d = f.create_dataset("x", (comm.size, n), dtype="f8")
    with d.collective:
        d[comm.rank] = np.arange(n, dtype="f8") + comm.rank
    offset = d.id.get_offset()
if comm.rank == 0:
    print("offset", offset)
'''

HDF5_C = r'''
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const hsize_t n = (hsize_t)atol(argv[2]);
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
    hid_t file = H5Fcreate(argv[1], H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    hsize_t dims[2] = {(hsize_t)size, n}, start[2] = {(hsize_t)rank, 0}, count[2] = {1, n};
    hid_t space = H5Screate_simple(2, dims, NULL);
    hid_t dset = H5Dcreate2(file, "x", H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, count, NULL);
    hid_t mem = H5Screate_simple(2, count, NULL);
    double *buf = malloc(n * sizeof *buf);
    for (hsize_t i = 0; i < n; i++) buf[i] = (double)(rank + i);
    hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE);
    H5Dwrite(dset, H5T_NATIVE_DOUBLE, mem, space, dxpl, buf);
    haddr_t offset = H5Dget_offset(dset);
    H5Pclose(dxpl); H5Sclose(mem); H5Sclose(space); H5Dclose(dset); H5Fclose(file); H5Pclose(fapl);
    if (rank == 0) printf("offset %llu\n", (unsigned long long)offset);
    free(buf);
    MPI_Finalize();
    return 0;
}
'''


def _hdf5_job(mpi: str, tmp_path: Path, np_: int, n: int) -> tuple[object, Path, int]:
    out = tmp_path / "data.h5"
    if mpi == "openmpi":
        python = "/usr/bin/python3"
        found = subprocess.run([python, "-c", "import mpi4py, h5py._debian_h5py_mpi"],
                               capture_output=True, text=True)
        if found.returncode != 0:
            pytest.fail(f"parallel h5py is not importable by {python}: `make deps` installs python3-h5py-mpi\n"
                        f"{found.stderr}")
        script = tmp_path / "h5write.py"
        script.write_text(H5PY_SCRIPT)
        argv = [python, str(script)]
    else:
        h5pcc = shutil.which("h5pcc.mpich")
        if h5pcc is None:
            pytest.fail("h5pcc.mpich is missing: `make deps` installs libhdf5-mpich-dev")
        src = tmp_path / "h5write.c"
        src.write_text(HDF5_C)
        exe = tmp_path / "h5write"
        # h5pcc leaves its object file in the working directory
        subprocess.run([h5pcc, "-o", str(exe), str(src)], check=True, capture_output=True, env=job_env(),
                       cwd=tmp_path)
        argv = [str(exe)]
    job = mpilens_run(mpi, launcher(mpi, np_) + argv + [str(out), str(n)], tmp_path, timeout=120)
    offset = int(job.stdout.split("offset")[1].split()[0])
    return job, out, offset


@pytest.mark.parametrize("mpi_", ["openmpi", "mpich"])
@pytest.mark.mpi
@pytest.mark.apps
def test_parallel_hdf5(mpi_, tmp_path):
    """Parallel HDF5 writing a (P, n) dataset of doubles collectively: the raw data arrives as one
    collective write per rank at the dataset's offset (HDF5's H5Dget_offset) + its row; every other
    write is HDF5's metadata, independent and outside the raw data; the file ends where the writes
    end, and the bytes written are the file's size up to the holes HDF5 leaves unwritten."""
    np_, n = 2, 50000
    job, out, offset = _hdf5_job(mpi_, tmp_path, np_, n)
    size = os.path.getsize(out)
    files = by_name(io_json(job.rundir))
    assert list(files) == [str(out)]
    f = files[str(out)]
    assert f["shared"] and f["ranks"] == list(range(np_))
    assert f["end_of_writes"] == size
    row = n * 8
    data_lo, data_hi = offset, offset + np_ * row
    written: list[tuple[int, int]] = []
    for r in range(np_):
        calls = [c for c in accesses(job.rundir, str(out), r) if c[1].startswith("write")]
        raw = [c for c in calls if "collective" in c[1]]
        meta = [c for c in calls if "collective" not in c[1]]
        assert [(c[2], c[3]) for c in raw] == [(offset + r * row, row)], calls
        for _, _, off, nb in meta:  # HDF5's metadata: small, independent, outside the raw data
            assert off + nb <= data_lo or off >= data_hi, (off, nb)
            assert nb < 4096
        written += [(c[2], c[3]) for c in calls]
    assert sum(1 for r in range(np_) for c in accesses(job.rundir, str(out), r) if "independent" in c[1]) > 0
    # the file on disk is exactly the union of the byte ranges written, plus the holes between them
    covered = sorted(written)
    assert covered[0][0] == 0 and max(o + b for o, b in covered) == size
    union = 0
    end = 0
    for o, b in covered:
        if o + b > end:
            union += o + b - max(o, end)
            end = o + b
    assert f["bytes_written"] >= union
    assert f["writes"]["collective"] == np_
    assert f["writes"]["independent"] == sum(
        1 for r in range(np_) for c in accesses(job.rundir, str(out), r) if c[1] == "write independent")
    assert f["time_s"]["open"] > 0 and f["time_s"]["close"] > 0


def test_io_kinds_of_every_file_function():
    """The kinds the generator gives the MPI_File_ functions: collective, nonblocking, explicit
    offset, shared pointer and split collectives from their names."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime" / "gen"))
    import generate
    import standard

    kinds = {f.name: generate.io_kind(f) for f in standard.load() if f.name.startswith("MPI_File_")}
    assert kinds["MPI_File_iwrite_at_all"] == "ML_IO_WRITE | ML_IO_COLLECTIVE | ML_IO_NONBLOCKING | ML_IO_EXPLICIT"
    assert kinds["MPI_File_read_ordered_begin"] == ("ML_IO_READ | ML_IO_COLLECTIVE | ML_IO_NONBLOCKING | "
                                                    "ML_IO_SHARED")
    assert kinds["MPI_File_write_all_end"] == "ML_IO_WRITE | ML_IO_COLLECTIVE | ML_IO_END"
    assert kinds["MPI_File_read_shared"] == "ML_IO_READ | ML_IO_SHARED"
    assert kinds["MPI_File_write_at_c"] == "ML_IO_WRITE | ML_IO_EXPLICIT"
    assert kinds["MPI_File_preallocate"] == "ML_IO_SIZE"
    assert kinds["MPI_File_get_size"] is None and kinds["MPI_File_delete"] is None
    assert L.IO_KIND_WRITE == 0x2  # the generated constants the reader uses


@pytest.mark.mpi
def test_damaged_io_file_is_named(tmp_path):
    """A truncated rank file is a problem naming it; the other ranks are still reported."""
    data = tmp_path / "data"
    data.mkdir()
    job = run_example("openmpi", "iofile", 2, tmp_path, args=[str(data)])
    f1 = job.rundir / "io" / "rank-000001.bin"
    f1.write_bytes(f1.read_bytes()[:L.IO_HEADER.size + 10])
    doc = io_json(job.rundir)
    assert doc["ranks_with_io"] == [0]
    assert len(doc["problems"]) == 1 and "rank-000001.bin" in doc["problems"][0] and "truncated" in doc["problems"][0]
    assert by_name(doc)[str(data / "shared.dat")]["per_rank"][0]["bytes_written"] == 7168
    (job.rundir / "io" / "rank-000000.bin").write_bytes(b"garbage!")
    p = subprocess.run([str(MPILENS), "io", str(job.rundir)], capture_output=True, text=True)
    assert p.returncode != 0 and "rank-000000.bin: not an mpilens I/O file" in p.stderr


def test_file_names_that_are_not_utf8(mpi, tmp_path):
    """iofile in two directories whose names differ in one byte that is not UTF-8 (Latin-1 é and è):
    two distinct files, each named with the bytes the file system has (read back from --json), shown
    as \\xXX in the text and HTML; before, both bytes became U+FFFD and the two files one."""
    root = os.fsencode(tmp_path)
    dirs = [root + b"/caf\xe9", root + b"/caf\xe8"]
    for d in dirs:
        os.mkdir(d)
    argv = launcher(mpi, 2) + [str(example(mpi, "iofile"))]
    for i, d in enumerate(dirs):
        mpilens_run(mpi, argv + [os.fsdecode(d)], tmp_path, outdir=tmp_path / f"run{i}")
    names = set()
    for i, d in enumerate(dirs):
        doc = json.loads(subprocess.run([str(MPILENS), "io", str(tmp_path / f"run{i}"), "--json"], capture_output=True,
                                        check=True).stdout)
        shared = [f for f in doc["files"] if f["name"].endswith("/shared.dat")]
        assert len(shared) == 1 and shared[0]["bytes_written"] == 7168 * 2
        name = shared[0]["name"].encode("utf-8", "surrogateescape")
        assert name == d + b"/shared.dat" and os.path.exists(name)  # the file on disk, byte for byte
        names.add(name)
        text = subprocess.run([str(MPILENS), "io", str(tmp_path / f"run{i}")], capture_output=True, check=True).stdout
        assert b"caf\\x%02x/shared.dat" % d[-1] in text
    assert len(names) == 2
