/* Ping-pong latency between two ranks with MPI_Send / MPI_Recv.
 *
 * For each message size (8 B, 1 KiB, 64 KiB): a warm-up, then BATCHES timed batches of ITERS
 * round trips each (MPI_Wtime around the whole batch). The one-way latency of a batch is
 * elapsed / (2 * ITERS); rank 0 prints, per size, the median over the batches and their range:
 *
 *     pingpong bytes=8 median_us=0.412 min_us=0.398 max_us=0.530 batches=15 iters=20000
 *
 * Usage: pingpong [BATCHES [SCALE [multiple]]]   (SCALE multiplies the iteration counts, default
 * 1.0; multiple: MPI_THREAD_MULTIPLE, thread_level.h)
 * Exactly two ranks take part; further ranks only wait at the barriers.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "thread_level.h"

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void exchange(int rank, char *buf, int bytes, int iters)
{
    for (int i = 0; i < iters; i++) {
        if (rank == 0) {
            MPI_Send(buf, bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
            MPI_Recv(buf, bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Recv(buf, bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
        }
    }
}

int main(int argc, char **argv)
{
    bench_init(&argc, &argv, argc > 3 ? argv[3] : NULL);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        if (rank == 0) fprintf(stderr, "pingpong: needs 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int batches = argc > 1 ? atoi(argv[1]) : 15;
    const double scale = argc > 2 ? atof(argv[2]) : 1.0;
    if (batches < 1) batches = 1;

    static const int sizes[] = {8, 1024, 65536};
    static const int base_iters[] = {20000, 10000, 2000}; /* ~10-20 ms per batch on shared memory */
    char *buf = malloc(65536);
    double *lat = malloc(sizeof(double) * (size_t)batches);
    if (buf == NULL || lat == NULL) MPI_Abort(MPI_COMM_WORLD, 3);
    memset(buf, 1, 65536);

    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        int iters = (int)(base_iters[s] * scale);
        if (iters < 10) iters = 10;
        exchange(rank, buf, sizes[s], iters / 5 + 10); /* warm-up */
        for (int b = 0; b < batches; b++) {
            MPI_Barrier(MPI_COMM_WORLD);
            const double t0 = MPI_Wtime();
            exchange(rank, buf, sizes[s], iters);
            lat[b] = (MPI_Wtime() - t0) / (2.0 * iters) * 1e6;
        }
        if (rank == 0) {
            double lo = lat[0], hi = lat[0];
            for (int b = 1; b < batches; b++) {
                if (lat[b] < lo) lo = lat[b];
                if (lat[b] > hi) hi = lat[b];
            }
            printf("pingpong bytes=%d median_us=%.4f min_us=%.4f max_us=%.4f batches=%d iters=%d\n", sizes[s],
                   median(lat, batches), lo, hi, batches, iters);
            fflush(stdout);
        }
    }
    free(lat);
    free(buf);
    MPI_Finalize();
    return 0;
}
