"""The Intel MPI Benchmarks as Intel ships them (impi-rt's IMB-MPI1, IMB-NBC, IMB-RMA and IMB-MT,
binaries nobody here built) under mpilens, on Intel MPI and, the same binaries through the MPICH
ABI, on MPICH 5.

Oracles: IMB's own output (the message sizes and repetitions of each table it prints) and its
options, turned into calls by IMB's iteration schedule with `-iter_policy off` (the source of
IMB_2018.c, IMB_mem_manager.c and IMB_warm_up.c). For each message size a benchmark runs three
times: once to set up its buffers (n repetitions), a warm-up (n // 10 repetitions, at least
min(10, n)), then the measured run (n). Each size also costs one MPI_Allreduce of one int (IMB's
time-limit check). IMB-MT has no schedule: each thread sends `-warmup` + `-repeat` messages per
count, and its #bytes column is the count times the datatype's size times the threads.
"""

from __future__ import annotations

import re
from html import escape as html_escape

import pytest

from conftest import MATRIX, fn, launcher, matrix_env, matrix_prefix, mpilens_run, repeat_and_compare

pytestmark = [pytest.mark.mpi, pytest.mark.apps, pytest.mark.matrix]

INT = 4  # bytes of the MPI_INT of IMB's time-limit check and of IMB-MT's default datatype
MSGLOG = "2:4"  # message sizes 0, 4, 8 and 16 bytes
ITER = 20


def imb(name: str) -> str:
    """An IMB binary of Intel MPI's wheel, whichever MPI runs it (it links libmpi.so.12, the MPICH
    ABI's soname)."""
    return str(matrix_prefix("impi") / "bin" / name)


def imb_env(mpi: str, **extra: str) -> dict[str, str]:
    """The job's environment as the MPI's own setup script makes it: IMB has no rpath, so the
    library comes from LD_LIBRARY_PATH (Intel's vars.sh sets it; on MPICH a module would)."""
    return matrix_env(mpi, LD_LIBRARY_PATH=str(matrix_prefix(mpi) / "lib"), **extra)


def tables(stdout: str) -> dict[str, list[list[tuple[int, int]]]]:
    """Each benchmark's tables as IMB prints them: (#bytes, #repetitions) per row; a benchmark
    run in several modes (IMB-RMA's aggregate and non-aggregate) has a table per mode."""
    out: dict[str, list[list[tuple[int, int]]]] = {}
    name = None
    for block in re.split(r"\n(?=#-+\n# Benchmarking )", stdout):
        head = re.match(r"#-+\n# Benchmarking (\S+)", block)
        if head:
            name = head.group(1)
        if name is None:
            continue
        for table in re.findall(r"#bytes #repetitions.*\n((?:\s+\d+\s+\d+.*\n)+)", block):
            rows = [tuple(int(x) for x in line.split()[:2]) for line in table.strip().splitlines()]
            out.setdefault(name, []).append(rows)
    return out


def runs(n: int) -> int:
    """Repetitions IMB makes of a size whose table says n, with -iter_policy off: the set-up run,
    the warm-up and the measured run."""
    return n + max(n // 10, min(10, n)) + n


def run_imb(mpi: str, tmp_path, argv: list[str], np: int = 2, **env: str):
    job = mpilens_run(mpi, [*launcher(mpi, np), *argv], tmp_path, env=imb_env(mpi, **env))
    assert "# All processes entering MPI_Finalize" in job.stdout or "MT part" in job.stdout, job.stdout
    return job, tables(job.stdout)


@pytest.mark.parametrize("mpi", ["impi", "mpich5"])
def test_imb_mpi1_pingpong_and_allreduce(mpi, tmp_path):
    """IMB-MPI1 PingPong and Allreduce: every MPI_Send, MPI_Recv and MPI_Allreduce of IMB's schedule,
    their bytes per rank, and the ping-pong's messages in the matrix, exactly; the same binary on
    Intel MPI and on MPICH 5, each run naming the library it ran on."""
    job, t = run_imb(mpi, tmp_path, [imb("IMB-MPI1"), "PingPong", "Allreduce", "-msglog", MSGLOG,
                                     "-iter", str(ITER), "-iter_policy", "off"])
    (pingpong,), (allreduce,) = t["PingPong"], t["Allreduce"]
    assert [size for size, _ in pingpong] == [0, 4, 8, 16] and {n for _, n in pingpong} == {ITER}, t
    p = job.profile
    calls = sum(runs(n) for _, n in pingpong)
    sent = sum(size * runs(n) for size, n in pingpong)
    assert fn(p, "MPI_Send", "calls") == [calls, calls]
    assert fn(p, "MPI_Recv", "calls") == [calls, calls]
    assert fn(p, "MPI_Send", "bytes_sent") == [sent, sent]
    assert fn(p, "MPI_Recv", "bytes_recv") == [sent, sent]
    assert sorted((m["src"], m["dst"], m["messages"], m["bytes"]) for m in p["matrix"]) == [
        (0, 1, calls, sent), (1, 0, calls, sent)]
    checks = len(pingpong) + len(allreduce)  # IMB's time-limit check, one int per size
    reduce_calls = sum(runs(n) for _, n in allreduce) + checks
    reduce_bytes = sum(size * runs(n) for size, n in allreduce) + checks * INT
    assert fn(p, "MPI_Allreduce", "calls") == [reduce_calls] * 2
    assert fn(p, "MPI_Allreduce", "bytes_sent") == [reduce_bytes] * 2
    assert fn(p, "MPI_Allreduce", "bytes_recv") == [reduce_bytes] * 2
    library = job.load().meta["mpi"]["library"]
    assert library.startswith({"impi": "Intel(R) MPI Library 2021.19", "mpich5": "MPICH Version:      5.0"}[mpi])


def test_imb_nbc_iallreduce(tmp_path):
    """IMB-NBC Iallreduce on Intel MPI: each run of IMB's schedule times the operation alone and
    overlapped with computation, so twice the calls; each completed by one MPI_Wait."""
    job, t = run_imb("impi", tmp_path, [imb("IMB-NBC"), "Iallreduce", "-msglog", MSGLOG,
                                        "-iter", str(ITER), "-iter_policy", "off"])
    (rows,) = t["Iallreduce"]
    assert len(rows) == 4, t
    p = job.profile
    calls = sum(2 * runs(n) for _, n in rows)
    size = sum(s * 2 * runs(n) for s, n in rows)
    assert fn(p, "MPI_Iallreduce", "calls") == [calls] * 2
    assert fn(p, "MPI_Iallreduce", "bytes_sent") == [size] * 2
    assert fn(p, "MPI_Iallreduce", "bytes_recv") == [size] * 2
    assert fn(p, "MPI_Wait", "calls") == [calls] * 2
    assert fn(p, "MPI_Allreduce", "calls") == [len(rows)] * 2


def test_imb_rma_unidir_put(tmp_path):
    """IMB-RMA Unidir_put on Intel MPI, in both of IMB's modes (a table each): rank 0 puts into rank
    1's window, rank 1 makes no RMA call; the puts' bytes are rank 0's."""
    job, t = run_imb("impi", tmp_path, [imb("IMB-RMA"), "Unidir_put", "-msglog", MSGLOG,
                                        "-iter", str(ITER), "-iter_policy", "off"])
    modes = t["Unidir_put"]
    assert len(modes) == 2 and all(len(rows) == 4 for rows in modes), t
    p = job.profile
    puts = sum(runs(n) for rows in modes for _, n in rows)
    size = sum(s * runs(n) for rows in modes for s, n in rows)
    assert fn(p, "MPI_Put", "calls") == [puts, 0]
    assert fn(p, "MPI_Put", "bytes_sent") == [size, 0]
    windows = sum(len(rows) for rows in modes)  # IMB_init_transfer makes a window per size and mode
    assert fn(p, "MPI_Win_create", "calls") == [windows] * 2 and fn(p, "MPI_Win_free", "calls") == [windows] * 2
    assert fn(p, "MPI_Allreduce", "calls") == [windows] * 2  # IMB's time-limit check, once per size and mode


def test_imb_mt_pingpong_with_threads(tmp_path):
    """IMB-MT PingPongMT on Intel MPI with two OpenMP threads per rank under MPI_THREAD_MULTIPLE:
    every thread's sends and receives, counted per rank, and two threads per rank in the profile."""
    counts, repeat, warmup, threads = [1, 8], 50, 5, 2
    job, t = run_imb("impi", tmp_path, [imb("IMB-MT"), "PingPongMT", "-count", ",".join(map(str, counts)),
                                        "-repeat", str(repeat), "-warmup", str(warmup), "-thread_level", "multiple"],
                     OMP_NUM_THREADS=str(threads))
    (rows,) = t["PingPongMT"]
    assert rows == [(c * INT * threads, repeat) for c in counts], t
    p = job.profile
    calls = threads * len(counts) * (repeat + warmup)
    size = threads * (repeat + warmup) * sum(c * INT for c in counts)
    assert fn(p, "MPI_Send", "calls") == [calls] * 2 and fn(p, "MPI_Recv", "calls") == [calls] * 2
    assert fn(p, "MPI_Send", "bytes_sent") == [size] * 2 and fn(p, "MPI_Recv", "bytes_recv") == [size] * 2
    assert [r["threads"] for r in p["ranks"]] == [threads] * 2
    assert job.load().meta["mpi"]["thread_level"] == "MPI_THREAD_MULTIPLE"


def test_compare_intel_mpi_against_mpich_on_imb(tmp_path):
    """seeds/002's use case on a real application: the same IMB-MPI1 binary on MPICH 5 and on Intel
    MPI, interleaved by `mpilens repeat`; `mpilens compare` names each side by its MPI and version
    (the libraries' own version strings) in the text and the HTML report."""
    args = ["PingPong", "-msglog", "3:3", "-iter", "50", "-iter_policy", "off"]
    sides = {side: " ".join(["env", f"LD_LIBRARY_PATH={matrix_prefix(mpi) / 'lib'}",
                             f"PATH={matrix_prefix(mpi) / 'bin'}:/usr/bin:/bin", *launcher(mpi, 2),
                             imb("IMB-MPI1"), *args])
             for side, mpi in (("a", "mpich5"), ("b", "impi"))}
    c = repeat_and_compare(sides["a"], sides["b"], tmp_path, imb_env("impi"))
    versions = {mpi: MATRIX[mpi]["packages"][0].split("==")[1] for mpi in ("mpich5", "impi")}  # the pins
    names = {"mpich5": f"MPICH Version: {versions['mpich5']}", "impi": f"Intel(R) MPI Library {versions['impi']} "}
    assert re.search(rf"^  A: env .*/mpich5/bin/mpiexec .*; {re.escape(names['mpich5'])}$", c.text, re.M), c.text
    assert re.search(rf"^  B: env .*/impi/bin/mpirun .*; {re.escape(names['impi'])}", c.text, re.M), c.text
    assert all(html_escape(name) in c.html for name in names.values()), names
