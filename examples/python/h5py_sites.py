"""Call sites of a real mixed stack: h5py (Debian's python3-h5py-mpi) writing one dataset
collectively; the MPI-IO calls happen inside the HDF5 C library. Its h5py calls are on known lines
(marker comments `site:NAME`), for tests/test_callsites.py.

usage: python3 h5py_sites.py FILE [rows per rank]
"""
import sys

import h5py
import numpy as np
from mpi4py import MPI


def write(path, rows):
    comm = MPI.COMM_WORLD
    f = h5py.File(path, "w", driver="mpio", comm=comm)  # site:h5-open
    dset = f.create_dataset("x", (comm.size * rows, 16), dtype="f8")
    block = np.full((rows, 16), float(comm.rank))
    with dset.collective:
        dset[comm.rank * rows:(comm.rank + 1) * rows] = block  # site:h5-write
    f.close()  # site:h5-close


write(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1000)
print(f"h5py_sites: rank {MPI.COMM_WORLD.rank} wrote")
