"""Cost per call of MPI calls made from Python, for bench/callsites.py --python: one rank, a loop of
calls through the C extension examples/python/mixedext.c (MPI_Allreduce of one double, the GIL
held) and, with mpi4py, of mpi4py's MPI_Barrier. Prints the median over batches of the time per
call in ns.

usage: python3 bench/pysites.py EXTENSION_DIR CALLS_PER_BATCH mpi4py|plain
"""
import statistics
import sys
import time

sys.path.insert(0, sys.argv[1])
n = int(sys.argv[2])
use_mpi4py = sys.argv[3] == "mpi4py"
if use_mpi4py:
    from mpi4py import MPI
import mixedext  # noqa: E402

if not use_mpi4py:
    mixedext.init()


def per_call(fn, batches=7):
    fn(n // 10)  # warm-up: the sites are made here
    out = []
    for _ in range(batches):
        t = time.perf_counter_ns()
        fn(n)
        out.append((time.perf_counter_ns() - t) / n)
    return statistics.median(out)


def ext(k):
    allreduce = mixedext.allreduce
    for _ in range(k):
        allreduce(1.0)


def barrier(k):
    comm = MPI.COMM_WORLD
    for _ in range(k):
        comm.Barrier()


print(f"ext_ns={per_call(ext):.1f}" + (f" mpi4py_ns={per_call(barrier):.1f}" if use_mpi4py else ""))
if not use_mpi4py:
    mixedext.finalize()
