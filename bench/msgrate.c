/* Small-message rate between two ranks (in the manner of OSU's osu_mbw_mr with one pair).
 *
 * Rank 0 posts a window of WINDOW MPI_Isend of 8 bytes to rank 1, which has posted the matching
 * WINDOW MPI_Irecv; both complete the window with MPI_Waitall, then rank 1 sends a 4-byte
 * acknowledgement (MPI_Send / MPI_Recv) so that the sender cannot run ahead of the receiver.
 * A batch is WINDOWS windows timed with MPI_Wtime; rank 0 prints the median message rate over
 * BATCHES batches and their range:
 *
 *     msgrate bytes=8 window=64 median_msgs_per_s=4812345 min_msgs_per_s=... max_msgs_per_s=... batches=15
 *
 * Usage: msgrate [BATCHES [SCALE [multiple]]]   (SCALE multiplies the number of windows per batch;
 * multiple: MPI_THREAD_MULTIPLE, thread_level.h)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "thread_level.h"

#define WINDOW 64
#define BYTES 8

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

static void windows(int rank, char (*bufs)[BYTES], MPI_Request *reqs, int n)
{
    int ack = 0;
    for (int w = 0; w < n; w++) {
        if (rank == 0) {
            for (int i = 0; i < WINDOW; i++) MPI_Isend(bufs[i], BYTES, MPI_BYTE, 1, 100, MPI_COMM_WORLD, &reqs[i]);
            MPI_Waitall(WINDOW, reqs, MPI_STATUSES_IGNORE);
            MPI_Recv(&ack, 1, MPI_INT, 1, 101, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            for (int i = 0; i < WINDOW; i++) MPI_Irecv(bufs[i], BYTES, MPI_BYTE, 0, 100, MPI_COMM_WORLD, &reqs[i]);
            MPI_Waitall(WINDOW, reqs, MPI_STATUSES_IGNORE);
            MPI_Send(&ack, 1, MPI_INT, 0, 101, MPI_COMM_WORLD);
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
        if (rank == 0) fprintf(stderr, "msgrate: needs 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int batches = argc > 1 ? atoi(argv[1]) : 15;
    const double scale = argc > 2 ? atof(argv[2]) : 1.0;
    if (batches < 1) batches = 1;
    int nwin = (int)(500 * scale); /* 32000 messages, ~10-20 ms per batch on shared memory */
    if (nwin < 5) nwin = 5;

    static char bufs[WINDOW][BYTES];
    MPI_Request reqs[WINDOW];
    double *rate = malloc(sizeof(double) * (size_t)batches);
    if (rate == NULL) MPI_Abort(MPI_COMM_WORLD, 3);
    memset(bufs, 1, sizeof bufs);

    windows(rank, bufs, reqs, nwin / 5 + 5); /* warm-up */
    for (int b = 0; b < batches; b++) {
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        windows(rank, bufs, reqs, nwin);
        rate[b] = (double)nwin * WINDOW / (MPI_Wtime() - t0);
    }
    if (rank == 0) {
        double lo = rate[0], hi = rate[0];
        for (int b = 1; b < batches; b++) {
            if (rate[b] < lo) lo = rate[b];
            if (rate[b] > hi) hi = rate[b];
        }
        printf("msgrate bytes=%d window=%d median_msgs_per_s=%.0f min_msgs_per_s=%.0f max_msgs_per_s=%.0f "
               "batches=%d windows=%d\n",
               BYTES, WINDOW, median(rate, batches), lo, hi, batches, nwin);
        fflush(stdout);
    }
    free(rate);
    MPI_Finalize();
    return 0;
}
