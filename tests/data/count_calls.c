/* A second, independent reader of an application's receives, for tests that check mpilens on
 * programs nobody here wrote: preloaded instead of mpilens, it counts each rank's MPI_Irecv and
 * MPI_Wait calls and the bytes the waits received (from their statuses), and prints them at
 * MPI_Finalize as
 *
 *     count_calls rank R MPI_Irecv N MPI_Wait N wait_bytes_recv B
 *
 * It assumes, as the tests check, that every MPI_Wait of the program completes a receive. Built by
 * the tests with the application's MPI: mpicc -shared -fPIC -o libcount_calls.so count_calls.c */
#include <mpi.h>
#include <stdio.h>

static long irecv_calls, wait_calls, wait_bytes;

int MPI_Irecv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Request *req)
{
    irecv_calls++;
    return PMPI_Irecv(buf, count, type, source, tag, comm, req);
}

int MPI_Wait(MPI_Request *req, MPI_Status *status)
{
    MPI_Status local;
    if (status == MPI_STATUS_IGNORE) status = &local;
    const int rc = PMPI_Wait(req, status);
    int n = 0;
    if (rc == MPI_SUCCESS && PMPI_Get_count(status, MPI_BYTE, &n) == MPI_SUCCESS && n != MPI_UNDEFINED)
        wait_bytes += n;
    wait_calls++;
    return rc;
}

int MPI_Finalize(void)
{
    int rank = -1;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    printf("count_calls rank %d MPI_Irecv %ld MPI_Wait %ld wait_bytes_recv %ld\n", rank, irecv_calls, wait_calls,
           wait_bytes);
    fflush(stdout);
    return PMPI_Finalize();
}
