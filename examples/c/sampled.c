/* sampled: known traffic and known waits, for the tests of MPILENS_TIME_SAMPLE (timing 1 in N
 * calls). Usage: sampled ITERS WAITS SLOW_US FAST_US
 *
 * Phase 1, every rank, ITERS times: MPI_Irecv from the left neighbour and MPI_Isend to the right
 * one of 8 * (1 + i % 7) bytes, then MPI_Waitall of the two; then one MPI_Barrier.
 * Phase 2, ranks 0 and 1 only, WAITS times: rank 0 spins for SLOW_US microseconds (the first 16
 * times) or FAST_US (the others), then MPI_Send of 8 bytes to rank 1, which waits in MPI_Recv.
 * Rank 1 times each of its MPI_Recv calls itself and prints their sum and the longest, then the
 * number, sum, shortest and longest of the calls after the first 16 (the fast ones):
 *   "sampled rank=1 recv_s=<s> max_s=<s> later_n=<calls> later_s=<s> later_min_s=<s> later_max_s=<s>"
 * so a test can compare the tool's estimate and longest call with what the program measured in
 * the same run, and know how far a sample of the later calls can stray from their sum (their
 * range: a loaded machine stretches some of them by whole time slices).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static void spin(double us)
{
    const double until = MPI_Wtime() + us * 1e-6;
    while (MPI_Wtime() < until) {}
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 5 || size < 2) {
        if (rank == 0) fprintf(stderr, "usage: sampled ITERS WAITS SLOW_US FAST_US (2 ranks or more)\n");
        MPI_Abort(MPI_COMM_WORLD, 64);
    }
    const int iters = atoi(argv[1]), waits = atoi(argv[2]);
    const double slow = atof(argv[3]), fast = atof(argv[4]);
    const int right = (rank + 1) % size, left = (rank + size - 1) % size;

    char out[64] = {0}, in[64];
    for (int i = 0; i < iters; i++) {
        MPI_Request r[2];
        MPI_Irecv(in, sizeof in, MPI_BYTE, left, 1, MPI_COMM_WORLD, &r[0]);
        MPI_Isend(out, 8 * (1 + i % 7), MPI_BYTE, right, 1, MPI_COMM_WORLD, &r[1]);
        MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    double recv_s = 0, max_s = 0, later_s = 0, later_min = 1e300, later_max = 0;
    int later_n = 0;
    for (int j = 0; j < waits && rank < 2; j++) {
        if (rank == 0) {
            spin(j < 16 ? slow : fast);
            MPI_Send(out, 8, MPI_BYTE, 1, 2, MPI_COMM_WORLD);
        } else {
            const double t0 = MPI_Wtime();
            MPI_Recv(in, sizeof in, MPI_BYTE, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            const double d = MPI_Wtime() - t0;
            recv_s += d;
            if (d > max_s) max_s = d;
            if (j >= 16) {
                later_n++, later_s += d;
                if (d < later_min) later_min = d;
                if (d > later_max) later_max = d;
            }
        }
    }
    if (rank == 1)
        printf("sampled rank=1 recv_s=%.9f max_s=%.9f later_n=%d later_s=%.9f later_min_s=%.9f later_max_s=%.9f\n",
               recv_s, max_s, later_n, later_s, later_n ? later_min : 0, later_max);
    MPI_Finalize();
    return 0;
}
