/* spc_traffic: traffic whose low-level counters are known exactly, for tests/test_spc.py and
 * docs/counters.md (counters mode). Ranks 0 and 1 talk; other ranks only join the barriers.
 *
 * Usage: spc_traffic PHASE ARGS...
 *   queue N        rank 0 posts N MPI_Irecv (8 bytes, from rank 1), holds them QUEUE_HOLD_MS, then
 *                  tells rank 1 (one 4-byte MPI_Send, tag 1) to send; rank 1 sends N x 8 bytes
 *                  (tag 0); rank 0 MPI_Waitall. Rank 0: POSTED_RECVQ high watermark N, N receives
 *                  posted and completed, no unexpected message (nothing can arrive before its
 *                  receive is posted), and each receive posted for at least QUEUE_HOLD_MS and at
 *                  most the time from before the first MPI_Irecv to after MPI_Waitall, which rank 0
 *                  prints: "spc_traffic: queue hold_ms H window_s W".
 *   unexpected N   rank 1 sends N x 8 bytes (tag 0) then one 4-byte "go" (tag 1); rank 0 waits
 *                  for "go" with MPI_Probe, receives it with MPI_Recv, then receives the N with
 *                  MPI_Recv: all N + 1 receives find their message already arrived.
 *   flood K MS     like unexpected with K messages, but rank 0 sleeps MS milliseconds between
 *                  receiving "go" and the K receives: the MPI's unexpected queue holds K messages
 *                  while it sleeps (Open MPI's pml_ob1_unexpected_msgq_length shows it).
 *   slow SECONDS   ring of 8-byte MPI_Sendrecv, one every 10 ms, for SECONDS (for `mpilens top`).
 * Every phase ends with one MPI_Barrier on MPI_COMM_WORLD. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define QUEUE_HOLD_MS 20

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void die(int rank, const char *what)
{
    fprintf(stderr, "spc_traffic: rank %d: %s\n", rank, what);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 3 || size < 2) die(rank, "usage: spc_traffic queue|unexpected|flood|slow N [MS] (2+ ranks)");
    const char *phase = argv[1];
    const int n = atoi(argv[2]);
    double *buf = calloc((size_t)(n > 0 ? n : 1), sizeof *buf);
    int go = 7;
    if (strcmp(phase, "queue") == 0) {
        if (rank == 0) {
            MPI_Request *req = malloc((size_t)n * sizeof *req);
            const double t0 = MPI_Wtime();
            for (int i = 0; i < n; i++) MPI_Irecv(&buf[i], 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD, &req[i]);
            sleep_ms(QUEUE_HOLD_MS);
            MPI_Send(&go, 1, MPI_INT, 1, 1, MPI_COMM_WORLD);
            MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
            printf("spc_traffic: queue hold_ms %d window_s %.9f\n", QUEUE_HOLD_MS, MPI_Wtime() - t0);
            for (int i = 0; i < n; i++)
                if (buf[i] != i) die(rank, "wrong data");
            free(req);
        } else if (rank == 1) {
            MPI_Recv(&go, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            for (int i = 0; i < n; i++) {
                double v = i;
                MPI_Send(&v, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD);
            }
        }
    } else if (strcmp(phase, "unexpected") == 0 || strcmp(phase, "flood") == 0) {
        const long ms = strcmp(phase, "flood") == 0 && argc > 3 ? atol(argv[3]) : 0;
        if (rank == 1) {
            for (int i = 0; i < n; i++) {
                double v = i;
                MPI_Send(&v, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD);
            }
            MPI_Send(&go, 1, MPI_INT, 0, 1, MPI_COMM_WORLD);
        } else if (rank == 0) {
            MPI_Probe(1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Recv(&go, 1, MPI_INT, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (ms > 0) sleep_ms(ms);
            for (int i = 0; i < n; i++) {
                MPI_Recv(&buf[i], 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                if (buf[i] != i) die(rank, "wrong data");
            }
        }
    } else if (strcmp(phase, "slow") == 0) {
        const double end = MPI_Wtime() + n;
        double v = rank, w;
        int stop = 0;
        while (!stop) {
            MPI_Sendrecv(&v, 1, MPI_DOUBLE, (rank + 1) % size, 0, &w, 1, MPI_DOUBLE, (rank + size - 1) % size, 0,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            sleep_ms(10);
            int mine = MPI_Wtime() > end;
            MPI_Allreduce(&mine, &stop, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
        }
    } else {
        die(rank, "unknown phase");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    free(buf);
    MPI_Finalize();
    return 0;
}
