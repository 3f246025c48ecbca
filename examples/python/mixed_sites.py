"""Call sites of a mixed stack: Python calling a C extension (mixedext.c) that calls MPI, on known
lines (marker comments `site:NAME`), for tests/test_callsites.py.

usage: python3 mixed_sites.py EXTENSION_DIR [iterations] [mpi4py|plain]
  mpi4py: MPI is initialised by mpi4py, which also makes a call of its own (site:mx-barrier);
  plain:  the extension initialises and finalises MPI (for an MPI that mpi4py was not built for).
"""
import sys

sys.path.insert(0, sys.argv[1])
iters = int(sys.argv[2]) if len(sys.argv) > 2 else 10
use_mpi4py = (sys.argv[3] if len(sys.argv) > 3 else "mpi4py") == "mpi4py"
if use_mpi4py:
    from mpi4py import MPI
import mixedext  # noqa: E402


def reduce_step(i):
    return mixedext.allreduce(float(i))  # site:mx-allreduce


def main():
    if not use_mpi4py:
        mixedext.init()
    total = 0.0
    for i in range(iters):
        total += reduce_step(i)
        mixedext.ring(100)  # site:mx-ring
        if use_mpi4py:
            MPI.COMM_WORLD.Barrier()  # site:mx-barrier
    print(f"mixed_sites: total {total}")
    if not use_mpi4py:
        mixedext.finalize()


main()  # site:mx-main
