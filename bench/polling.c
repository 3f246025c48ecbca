/* polling: the cost of one MPI_Testany / MPI_Testsome / MPI_Testall / MPI_Waitany call over N
 * outstanding requests, on one rank, for bench/polling.py (plain run against the tool).
 *
 * Usage: polling N CALLS [LOOP]   (LOOP: run only that loop, e.g. testany_idle)
 *   "idle"     N receives posted on a tag nobody sends; CALLS calls of each of MPI_Testany,
 *              MPI_Testsome and MPI_Testall, every one returning "nothing completed"
 *   "complete" N receives posted; CALLS rounds of: a message sent to self (MPI_Send, eager) for
 *              one of them, MPI_Testany (or MPI_Testsome, or MPI_Waitany) until it completes, the
 *              receive posted again in the same slot: one completion per round
 * Prints one line per loop: "<loop> n=<N> ns_per_call=<ns>" (the complete loops: per round). */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *only;
static int wanted(const char *loop) { return only == NULL || strcmp(only, loop) == 0; }

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    const int n = argc > 1 ? atoi(argv[1]) : 100;
    const int calls = argc > 2 ? atoi(argv[2]) : 1000;
    only = argc > 3 ? argv[3] : NULL;
    MPI_Request *reqs = malloc(sizeof *reqs * (size_t)n);
    int *idx = malloc(sizeof *idx * (size_t)n), *bufs = malloc(sizeof *bufs * (size_t)n);
    int index, flag, outcount;

    for (int i = 0; i < n; i++) MPI_Irecv(&bufs[i], 1, MPI_INT, 0, 1000000 + i, MPI_COMM_SELF, &reqs[i]);
    /* ---- idle polling */
    double t0;
    if (wanted("testany_idle")) {
        t0 = now_ns();
        for (int c = 0; c < calls; c++) MPI_Testany(n, reqs, &index, &flag, MPI_STATUS_IGNORE);
        printf("testany_idle n=%d ns_per_call=%.1f\n", n, (now_ns() - t0) / calls);
    }
    if (wanted("testsome_idle")) {
        t0 = now_ns();
        for (int c = 0; c < calls; c++) MPI_Testsome(n, reqs, &outcount, idx, MPI_STATUSES_IGNORE);
        printf("testsome_idle n=%d ns_per_call=%.1f\n", n, (now_ns() - t0) / calls);
    }
    if (wanted("testall_idle")) {
        t0 = now_ns();
        for (int c = 0; c < calls; c++) MPI_Testall(n, reqs, &flag, MPI_STATUSES_IGNORE);
        printf("testall_idle n=%d ns_per_call=%.1f\n", n, (now_ns() - t0) / calls);
    }

    /* ---- one completion per round */
    const char *names[] = {"testany_complete", "testsome_complete", "waitany_complete"};
    for (int kind = 0; kind < 3; kind++) {
        if (!wanted(names[kind])) continue;
        t0 = now_ns();
        for (int c = 0; c < calls; c++) {
            const int i = (int)(((long)c * 7919) % n);
            int v = c;
            MPI_Send(&v, 1, MPI_INT, 0, 1000000 + i, MPI_COMM_SELF);
            int done = -1;
            while (done < 0) {
                if (kind == 0) {
                    MPI_Testany(n, reqs, &index, &flag, MPI_STATUS_IGNORE);
                    if (flag) done = index;
                } else if (kind == 1) {
                    MPI_Testsome(n, reqs, &outcount, idx, MPI_STATUSES_IGNORE);
                    if (outcount > 0) done = idx[0];
                } else {
                    MPI_Waitany(n, reqs, &index, MPI_STATUS_IGNORE);
                    done = index;
                }
            }
            MPI_Irecv(&bufs[done], 1, MPI_INT, 0, 1000000 + done, MPI_COMM_SELF, &reqs[done]);
        }
        printf("%s n=%d ns_per_call=%.1f\n", names[kind], n, (now_ns() - t0) / calls);
    }
    for (int i = 0; i < n; i++) {
        MPI_Cancel(&reqs[i]);
        MPI_Wait(&reqs[i], MPI_STATUS_IGNORE);
    }
    free(reqs);
    free(idx);
    free(bufs);
    MPI_Finalize();
    return 0;
}
