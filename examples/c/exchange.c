/* exchange: two variants of one program that differ in one known place, for `mpilens compare`.
 *
 * Usage: exchange MODE [STEPS [COMPUTE_US [INTS [EXTRA_US]]]]   (defaults: 20 steps, 1000 us, 64 ints, 0)
 *
 * Each of STEPS steps has three regions:
 *   "compute"  sleeps COMPUTE_US microseconds (no MPI), the same in both variants;
 *   "exchange" every rank sends INTS ints to every other rank:
 *              MODE alltoall: one MPI_Alltoall (INTS ints per peer);
 *              MODE pairwise: the same data one int per message, with MPI_Sendrecv: for each
 *              distance k = 1 .. P-1 and each of the INTS ints, one MPI_Sendrecv to (r+k) % P from
 *              (r-k) % P, that is (P-1) * INTS messages per rank and step instead of one call;
 *              and then sleeps EXTRA_US more (a cost injected into the changed region, for tests
 *              that need the difference far above what a busy machine does to a run);
 *              then, in both variants, one MPI_Barrier, so that the ranks leave the region together
 *              whatever the variant (the skew one variant leaves would otherwise show up as waiting
 *              time in the next collective);
 *   "check"    one MPI_Allreduce of the number of wrong ints received (one long), the same in both.
 * So only the "exchange" region differs: the pairwise variant pays one message latency per int
 * and is the slower one by construction; "compute" and "check" are unchanged.
 * Rank 0 prints "exchange MODE: ok P" (or FAILED with the count of wrong ints). */
#include <mpi.h>
#include <mpilens.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int value(int src, int dst, int i, int step) { return src * 1000003 + dst * 1009 + i * 7 + step; }

static void sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 2 || (strcmp(argv[1], "alltoall") != 0 && strcmp(argv[1], "pairwise") != 0)) {
        if (rank == 0) fprintf(stderr, "usage: exchange alltoall|pairwise [STEPS [COMPUTE_US [INTS [EXTRA_US]]]]\n");
        MPI_Finalize();
        return 2;
    }
    const int pairwise = strcmp(argv[1], "pairwise") == 0;
    const int steps = argc > 2 ? atoi(argv[2]) : 20;
    const long compute_us = argc > 3 ? atol(argv[3]) : 1000;
    const int ints = argc > 4 ? atoi(argv[4]) : 64;
    const long extra_us = argc > 5 ? atol(argv[5]) : 0;

    int *out = malloc((size_t)size * ints * sizeof *out), *in = malloc((size_t)size * ints * sizeof *in);
    long wrong = 0, total = 0;
    for (int step = 0; step < steps; step++) {
        mpilens_region_begin("compute");
        sleep_us(compute_us);
        mpilens_region_end("compute");

        mpilens_region_begin("exchange");
        for (int p = 0; p < size; p++)
            for (int i = 0; i < ints; i++) out[p * ints + i] = value(rank, p, i, step);
        memset(in, 0, (size_t)size * ints * sizeof *in);
        if (pairwise) {
            for (int i = 0; i < ints; i++) in[rank * ints + i] = out[rank * ints + i];
            for (int k = 1; k < size; k++) {
                const int dst = (rank + k) % size, src = (rank + size - k) % size;
                for (int i = 0; i < ints; i++)
                    MPI_Sendrecv(&out[dst * ints + i], 1, MPI_INT, dst, i, &in[src * ints + i], 1, MPI_INT, src, i,
                                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
            sleep_us(extra_us);
        } else {
            MPI_Alltoall(out, ints, MPI_INT, in, ints, MPI_INT, MPI_COMM_WORLD);
        }
        for (int p = 0; p < size; p++)
            for (int i = 0; i < ints; i++) wrong += in[p * ints + i] != value(p, rank, i, step);
        MPI_Barrier(MPI_COMM_WORLD);
        mpilens_region_end("exchange");

        mpilens_region_begin("check");
        MPI_Allreduce(&wrong, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
        mpilens_region_end("check");
    }
    if (rank == 0) {
        if (total == 0)
            printf("exchange %s: ok %d\n", argv[1], size);
        else
            printf("exchange %s: FAILED %ld wrong\n", argv[1], total);
    }
    free(out);
    free(in);
    MPI_Finalize();
    return total == 0 ? 0 : 1;
}
