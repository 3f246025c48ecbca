/* erroneous: MPI calls with erroneous arguments that the MPI answers with an error code (under
 * MPI_ERRORS_RETURN), for tests/test_bad_input.py: under mpilens every call must return what the
 * MPI returns, and the process must live on. Prints one line per case: the rank, the case and the
 * error class returned (0: MPI_SUCCESS), then a correct exchange so that the run has something to
 * measure: each rank sends one int to the other (2 ranks). A case the MPI does not answer with an
 * error code (it aborts or asserts instead) can be left out by naming it on the command line.
 * Usage: erroneous [CASE...]   (CASE: a case's name as printed, e.g. "MPI_Bcast(root -5)") */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int rank, nskip;
static char **skip;

static int skipped(const char *name)
{
    for (int i = 0; i < nskip; i++)
        if (strcmp(skip[i], name) == 0) return 1;
    return 0;
}

/* the call is made only when its case is not left out */
#define CASE(name, call) (skipped(name) ? (void)0 : show(name, (call)))

static void show(const char *name, int rc)
{
    int cls = rc;
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
    printf("rank %d: %-40s %d\n", rank, name, cls);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    skip = argv + 1;
    nskip = argc - 1;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    int size, flag = 0, index = 0, outcount = 0, indices[1];
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int buf[4] = {rank, 0, 0, 0};
    MPI_Request req = MPI_REQUEST_NULL;

    if (rank == 0) {
        /* null request pointers and arrays */
        CASE("MPI_Wait(NULL)", MPI_Wait(NULL, MPI_STATUS_IGNORE));
        CASE("MPI_Test(NULL)", MPI_Test(NULL, &flag, MPI_STATUS_IGNORE));
        CASE("MPI_Waitall(1, NULL)", MPI_Waitall(1, NULL, MPI_STATUSES_IGNORE));
        CASE("MPI_Testall(1, NULL)", MPI_Testall(1, NULL, &flag, MPI_STATUSES_IGNORE));
        CASE("MPI_Waitany(1, NULL)", MPI_Waitany(1, NULL, &index, MPI_STATUS_IGNORE));
        CASE("MPI_Testany(1, NULL)", MPI_Testany(1, NULL, &index, &flag, MPI_STATUS_IGNORE));
        CASE("MPI_Waitsome(1, NULL)", MPI_Waitsome(1, NULL, &outcount, indices, MPI_STATUSES_IGNORE));
        CASE("MPI_Testsome(1, NULL)", MPI_Testsome(1, NULL, &outcount, indices, MPI_STATUSES_IGNORE));
        CASE("MPI_Request_free(NULL)", MPI_Request_free(NULL));
        CASE("MPI_Start(NULL)", MPI_Start(NULL));
        CASE("MPI_Startall(1, NULL)", MPI_Startall(1, NULL));
        CASE("MPI_Isend(request NULL)", MPI_Isend(buf, 1, MPI_INT, 1, 9, MPI_COMM_WORLD, NULL));
        CASE("MPI_Irecv(request NULL)", MPI_Irecv(buf, 1, MPI_INT, 1, 9, MPI_COMM_WORLD, NULL));
        /* counts, types, ranks, roots and operations out of range */
        CASE("MPI_Send(count -1)", MPI_Send(buf, -1, MPI_INT, 1, 9, MPI_COMM_WORLD));
        CASE("MPI_Send(MPI_DATATYPE_NULL)", MPI_Send(buf, 1, MPI_DATATYPE_NULL, 1, 9, MPI_COMM_WORLD));
        CASE("MPI_Send(dest = size)", MPI_Send(buf, 1, MPI_INT, size, 9, MPI_COMM_WORLD));
        CASE("MPI_Send(tag -5)", MPI_Send(buf, 1, MPI_INT, 1, -5, MPI_COMM_WORLD));
        CASE("MPI_Isend(MPI_DATATYPE_NULL)", MPI_Isend(buf, 1, MPI_DATATYPE_NULL, 1, 9, MPI_COMM_WORLD, &req));
        CASE("MPI_Irecv(source = size)", MPI_Irecv(buf, 1, MPI_INT, size, 9, MPI_COMM_WORLD, &req));
        CASE("MPI_Recv(count -1)", MPI_Recv(buf, -1, MPI_INT, 1, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CASE("MPI_Send_init(count -1)", MPI_Send_init(buf, -1, MPI_INT, 1, 9, MPI_COMM_WORLD, &req));
        CASE("MPI_Send(MPI_COMM_NULL)", MPI_Send(buf, 1, MPI_INT, 1, 9, MPI_COMM_NULL));
        CASE("MPI_Type_size(MPI_DATATYPE_NULL)", MPI_Type_size(MPI_DATATYPE_NULL, &index));
        CASE("MPI_Get_count(NULL type)", MPI_Get_count(&(MPI_Status){0}, MPI_DATATYPE_NULL, &index));
    }
    /* collectives with erroneous arguments: every rank makes the same erroneous call */
    CASE("MPI_Bcast(root -5)", MPI_Bcast(buf, 1, MPI_INT, -5, MPI_COMM_WORLD));
    CASE("MPI_Bcast(count -1)", MPI_Bcast(buf, -1, MPI_INT, 0, MPI_COMM_WORLD));
    CASE("MPI_Allreduce(MPI_OP_NULL)", MPI_Allreduce(buf, buf + 1, 1, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD));
    CASE("MPI_Allreduce(MPI_DATATYPE_NULL)", MPI_Allreduce(buf, buf + 1, 1, MPI_DATATYPE_NULL, MPI_SUM, MPI_COMM_WORLD));
    CASE("MPI_Alltoall(count -1)", MPI_Alltoall(buf, -1, MPI_INT, buf + 2, -1, MPI_INT, MPI_COMM_WORLD));

    /* and the correct exchange */
    const int other = (rank + 1) % size;
    CASE("MPI_Sendrecv", MPI_Sendrecv(buf, 1, MPI_INT, other, 1, buf + 3, 1, MPI_INT, other, 1, MPI_COMM_WORLD,
                                      MPI_STATUS_IGNORE));
    MPI_Finalize();
    return 0;
}
