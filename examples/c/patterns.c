/* patterns: communication patterns with a known timeline, for the trace findings.
 * Usage: patterns MODE DELAY_MS [REPS]
 *   late_sender    rank 0 posts MPI_Recv at once; rank 1 computes DELAY_MS, then MPI_Send (4 KiB)
 *   late_receiver  rank 0 MPI_Ssend at once; rank 1 computes DELAY_MS, then MPI_Recv (4 KiB)
 *   late_burst     rank 0 posts 8 MPI_Irecv and waits in one MPI_Waitall; rank 1 computes DELAY_MS,
 *                  then sends the 8 messages (512 B each, tags 8 * rep + 0..7)
 *   late_barrier   the last rank computes DELAY_MS before MPI_Barrier; the others enter at once
 *   halo           all ranks exchange 4 KiB with both ring neighbours (Irecv/Isend/Waitall), the
 *                  same work everywhere: nothing is late
 * Each pattern is repeated REPS times (default 3), separated by barriers. Compute is a busy loop,
 * not a sleep, so the rank stays on its core as a real computation would.
 * At the end each rank prints, per repetition, when (CLOCK_MONOTONIC, the same clock for all ranks
 * of a host) it entered the pattern's MPI call: "patterns: rank R rep K enter T"; in halo also when
 * both its sends had started, in late_burst when its last send had returned: "patterns: rank R rep K
 * sent T". On a loaded machine a rank can start
 * late or be preempted, so the tests compare the tool's findings with these times rather than with
 * DELAY_MS. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static void compute(double ms)
{
    const double end = now() + ms * 1e-3;
    volatile double x = 0;
    while (now() < end) x += 1;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 3) {
        if (rank == 0) fprintf(stderr, "usage: patterns MODE DELAY_MS [REPS]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char *mode = argv[1];
    const double delay = atof(argv[2]);
    const int reps = argc > 3 ? atoi(argv[3]) : 3;
    char buf[4096], in[2 * 4096];
    double *enter = calloc((size_t)reps, sizeof *enter), *sent = calloc((size_t)reps, sizeof *sent);
    memset(buf, rank, sizeof buf);
    /* warm-up: every pair exchanges once, so connection setup is not part of the patterns */
    for (int peer = 0; peer < size; peer++)
        if (peer != rank)
            MPI_Sendrecv(buf, sizeof buf, MPI_BYTE, peer, 99, in, sizeof buf, MPI_BYTE, peer, 99, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
    for (int r = 0; r < reps; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (strcmp(mode, "late_sender") == 0) {
            if (rank == 0) {
                enter[r] = now();
                MPI_Recv(in, sizeof buf, MPI_BYTE, 1, r, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
            if (rank == 1) {
                compute(delay);
                enter[r] = now();
                MPI_Send(buf, sizeof buf, MPI_BYTE, 0, r, MPI_COMM_WORLD);
            }
        } else if (strcmp(mode, "late_receiver") == 0) {
            if (rank == 0) {
                enter[r] = now();
                MPI_Ssend(buf, sizeof buf, MPI_BYTE, 1, r, MPI_COMM_WORLD);
            }
            if (rank == 1) {
                compute(delay);
                enter[r] = now();
                MPI_Recv(in, sizeof buf, MPI_BYTE, 0, r, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
        } else if (strcmp(mode, "late_burst") == 0) {
            enum { BURST = 8, PIECE = 512 };
            if (rank == 0) {
                MPI_Request q[BURST];
                enter[r] = now();
                for (int k = 0; k < BURST; k++)
                    MPI_Irecv(in + k * PIECE, PIECE, MPI_BYTE, 1, BURST * r + k, MPI_COMM_WORLD, &q[k]);
                MPI_Waitall(BURST, q, MPI_STATUSES_IGNORE);
            }
            if (rank == 1) {
                compute(delay);
                enter[r] = now();
                for (int k = 0; k < BURST; k++)
                    MPI_Send(buf + k * PIECE, PIECE, MPI_BYTE, 0, BURST * r + k, MPI_COMM_WORLD);
                sent[r] = now(); /* every message sent by now, even if this rank was preempted among them */
            }
        } else if (strcmp(mode, "late_barrier") == 0) {
            if (rank == size - 1) compute(delay);
            enter[r] = now();
            MPI_Barrier(MPI_COMM_WORLD);
        } else if (strcmp(mode, "halo") == 0) {
            MPI_Request q[4];
            const int right = (rank + 1) % size, left = (rank + size - 1) % size;
            compute(delay);
            enter[r] = now();
            MPI_Irecv(in, sizeof buf, MPI_BYTE, left, 0, MPI_COMM_WORLD, &q[0]);
            MPI_Irecv(in + sizeof buf, sizeof buf, MPI_BYTE, right, 1, MPI_COMM_WORLD, &q[1]);
            MPI_Isend(buf, sizeof buf, MPI_BYTE, right, 0, MPI_COMM_WORLD, &q[2]);
            MPI_Isend(buf, sizeof buf, MPI_BYTE, left, 1, MPI_COMM_WORLD, &q[3]);
            sent[r] = now(); /* both sends started by now, even if this rank was preempted on its way */
            MPI_Waitall(4, q, MPI_STATUSES_IGNORE);
        } else {
            if (rank == 0) fprintf(stderr, "patterns: unknown mode %s\n", mode);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    for (int r = 0; r < reps; r++) {
        if (enter[r] > 0) printf("patterns: rank %d rep %d enter %.9f\n", rank, r, enter[r]);
        if (sent[r] > 0) printf("patterns: rank %d rep %d sent %.9f\n", rank, r, sent[r]);
    }
    fflush(stdout);
    free(enter);
    free(sent);
    if (rank == 0) printf("patterns: %s done\n", mode);
    MPI_Finalize();
    return 0;
}
