/* sessions: an MPI program that never calls MPI_Init: it starts MPI with MPI_Session_init, makes
 * its communicator from the process set mpi://WORLD and ends with MPI_Session_finalize (MPI-4's
 * Sessions model). Its traffic is known, so that a tool's profile of it can be checked.
 *
 * Usage: sessions REPS SIZE
 *   a token ring on the session's communicator: rank r sends REPS messages of SIZE*(r+1) bytes to
 *   r+1 with MPI_Send and receives REPS from r-1 with MPI_Recv (into a larger buffer); then one
 *   MPI_Allreduce of an int. A second session is opened and closed around the ring, so that the
 *   program's last MPI_Session_finalize is not that of its first session.
 * Prints "sessions: REPS messages, sum of ranks S"; without MPI Sessions in the MPI's header it
 * prints "sessions: no MPI Sessions (MPI_VERSION V.S)" and does nothing else. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#if MPI_VERSION >= 4 || (defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
static void die(MPI_Comm comm, int rank, const char *what)
{
    fprintf(stderr, "sessions: rank %d: %s\n", rank, what);
    MPI_Abort(comm, 2);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: sessions REPS SIZE\n");
        return 2;
    }
    const int reps = atoi(argv[1]), size = atoi(argv[2]);
    MPI_Session first, second;
    MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_ARE_FATAL, &first);
    MPI_Group group;
    MPI_Group_from_session_pset(first, "mpi://WORLD", &group);
    MPI_Comm comm;
    MPI_Comm_create_from_group(group, "org.mpilens.examples.sessions", MPI_INFO_NULL, MPI_ERRORS_ARE_FATAL, &comm);
    MPI_Group_free(&group);
    MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_ARE_FATAL, &second);

    int rank, nprocs;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &nprocs);
    const int next = (rank + 1) % nprocs, prev = (rank + nprocs - 1) % nprocs;
    const int out = size * (rank + 1), in = size * (prev + 1);
    char *sendbuf = calloc((size_t)out + 1, 1), *recvbuf = calloc((size_t)in + 64, 1);
    if (sendbuf == NULL || recvbuf == NULL) die(comm, rank, "out of memory");
    for (int i = 0; i < reps; i++) {
        MPI_Status st;
        if (rank % 2 == 0) {
            MPI_Send(sendbuf, out, MPI_BYTE, next, i, comm);
            MPI_Recv(recvbuf, in + 64, MPI_BYTE, prev, i, comm, &st);
        } else {
            MPI_Recv(recvbuf, in + 64, MPI_BYTE, prev, i, comm, &st);
            MPI_Send(sendbuf, out, MPI_BYTE, next, i, comm);
        }
        int n = -1;
        MPI_Get_count(&st, MPI_BYTE, &n);
        if (n != in) die(comm, rank, "received a message of the wrong size");
    }
    int sum = 0;
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, comm);
    if (rank == 0) printf("sessions: %d messages, sum of ranks %d\n", reps, sum);
    free(sendbuf);
    free(recvbuf);

    MPI_Comm_free(&comm);
    MPI_Session_finalize(&first);
    MPI_Session_finalize(&second);
    return 0;
}
#else
int main(void)
{
    printf("sessions: no MPI Sessions (MPI_VERSION %d.%d)\n", MPI_VERSION, MPI_SUBVERSION);
    return 0;
}
#endif
