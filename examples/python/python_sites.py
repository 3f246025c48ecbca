"""Call sites in Python: mpi4py calls on known lines (marker comments `site:NAME`), for
tests/test_callsites.py. usage: python3 python_sites.py [iterations]"""
import sys

import numpy as np
from mpi4py import MPI


def exchange(comm, buf, out):
    right, left = (comm.rank + 1) % comm.size, (comm.rank - 1) % comm.size
    comm.Sendrecv(buf, dest=right, recvbuf=out, source=left)  # site:py-sendrecv
    return out


def main():
    comm = MPI.COMM_WORLD
    iters = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    buf, out = np.ones(100), np.zeros(100)
    total = 0.0
    for _ in range(iters):
        exchange(comm, buf, out)
        total += comm.allreduce(out[0])  # site:py-allreduce
        comm.Barrier()  # site:py-barrier
    if comm.rank == 0:
        print(f"python_sites: {comm.size} ranks, total {total}")


main()
