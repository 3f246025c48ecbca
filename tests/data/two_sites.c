/* Two call sites of each function bench/floor.c wraps, with known counts: the test of the floor's
 * call-site keys (paired.c calls each function from one line only). Two ranks; from line "a" rank 0
 * sends A messages of 8 bytes, from line "b" B messages of 4 bytes, half of them blocking and half
 * nonblocking; rank 1 receives each at a matching line. Each call site makes a known number of
 * calls:
 *
 *   MPI_Send, MPI_Recv: A at site a, B at site b      MPI_Isend, MPI_Irecv: A and B
 *   MPI_Waitall: 1 at site a, 1 at site b (one window each)
 *
 * Usage: two_sites A B (at most 64 each) */
#include <mpi.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const int a = argc > 2 ? atoi(argv[1]) : 0, b = argc > 2 ? atoi(argv[2]) : 0;
    if (a < 1 || a > 64 || b < 1 || b > 64) MPI_Abort(MPI_COMM_WORLD, 2);
    static char buf[8], bufs[64][8]; /* the nonblocking receives' buffers must not overlap */
    MPI_Request reqs[64];
    for (int i = 0; i < a; i++) {
        if (rank == 0) MPI_Send(buf, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD); /* site a */
        else MPI_Recv(buf, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* site a */
    }
    for (int i = 0; i < b; i++) {
        if (rank == 0) MPI_Send(buf, 4, MPI_BYTE, 1, 2, MPI_COMM_WORLD); /* site b */
        else MPI_Recv(buf, 4, MPI_BYTE, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* site b */
    }
    for (int i = 0; i < a; i++) {
        if (rank == 0) MPI_Isend(buf, 8, MPI_BYTE, 1, 3, MPI_COMM_WORLD, &reqs[i]); /* site a */
        else MPI_Irecv(bufs[i], 8, MPI_BYTE, 0, 3, MPI_COMM_WORLD, &reqs[i]); /* site a */
    }
    MPI_Waitall(a, reqs, MPI_STATUSES_IGNORE); /* site a */
    for (int i = 0; i < b; i++) {
        if (rank == 0) MPI_Isend(buf, 4, MPI_BYTE, 1, 4, MPI_COMM_WORLD, &reqs[i]); /* site b */
        else MPI_Irecv(bufs[i], 4, MPI_BYTE, 0, 4, MPI_COMM_WORLD, &reqs[i]); /* site b */
    }
    MPI_Waitall(b, reqs, MPI_STATUSES_IGNORE); /* site b */
    MPI_Finalize();
    return 0;
}
