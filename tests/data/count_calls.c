/* A second, independent reader of an application's receives and sends, for tests that check
 * mpilens on programs nobody here wrote: preloaded instead of mpilens, it counts each rank's
 * MPI_Irecv and MPI_Wait calls and the bytes the waits received (from their statuses), and its
 * MPI_Send calls and their bytes (count x MPI_Type_size, asked of the MPI at every call), and
 * prints them at MPI_Finalize as
 *
 *     count_calls rank R MPI_Irecv N MPI_Wait N wait_bytes_recv B MPI_Send N send_bytes B
 *
 * It assumes, as the tests check, that every MPI_Wait of the program completes a receive. Built by
 * the tests with the application's MPI: mpicc -shared -fPIC -o libcount_calls.so count_calls.c */
#include <mpi.h>
#include <stdio.h>

static long irecv_calls, wait_calls, wait_bytes, send_calls, send_bytes;

int MPI_Send(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)
{
    int size = 0;
    if (dest != MPI_PROC_NULL && PMPI_Type_size(type, &size) == MPI_SUCCESS) send_bytes += (long)count * size;
    send_calls++;
    return PMPI_Send(buf, count, type, dest, tag, comm);
}

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
    printf("count_calls rank %d MPI_Irecv %ld MPI_Wait %ld wait_bytes_recv %ld MPI_Send %ld send_bytes %ld\n", rank,
           irecv_calls, wait_calls, wait_bytes, send_calls, send_bytes);
    fflush(stdout);
    return PMPI_Finalize();
}
