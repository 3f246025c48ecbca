/* A shared library (built as PIC, opened with dlopen by examples/c/callsites.c) that makes MPI
 * calls: its call sites are in a module loaded at an address chosen at run time. */
#include <mpi.h>

static int token[64];

int sites_lib_ring(int n)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    token[0] = n;
    int rc = MPI_Sendrecv_replace(token, 64, MPI_INT, (rank + 1) % size, 7, (rank + size - 1) % size, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* site:lib */
    return rc + token[0];
}
