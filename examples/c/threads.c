/* threads: MPI_THREAD_MULTIPLE traffic with known totals. Each rank runs NTHREADS pthreads; thread t
 * exchanges with the same thread t of the neighbour ranks, on its own tags, so threads never match
 * each other's messages. Inside a region "exchange" (opened by every thread), thread t:
 *
 *   for i in 0..K-1: one message of S bytes to the right rank and one from the left rank,
 *     i even: blocking MPI_Send + MPI_Recv (even ranks send first, odd ranks receive first)
 *     i odd:  MPI_Irecv (buffer of 2*S bytes, S arrive) + MPI_Isend, completed by one MPI_Waitall
 *   then one more message each way whose requests (MPI_Irecv from left, MPI_Isend to right) are
 *   handed to thread (t+1) % NTHREADS, which completes them with two MPI_Wait: a request started
 *   in one thread and completed in another.
 *
 * So per rank: MPI_Send and MPI_Recv NTHREADS*ceil(K/2) calls, MPI_Isend and MPI_Irecv
 * NTHREADS*(K/2 + 1), MPI_Waitall NTHREADS*(K/2), MPI_Wait 2*NTHREADS; S bytes each message; the
 * matrix has NTHREADS*(K+1) messages from every rank to its right neighbour. The main thread then
 * calls one MPI_Allreduce (of 2 ints) to check every payload arrived intact.
 *
 * Usage: threads [K [S]] (defaults 10, 4096). If the MPI does not provide MPI_THREAD_MULTIPLE the
 * program prints "threads: MPI_THREAD_MULTIPLE not provided (level L)" and exits 0. */
#define _POSIX_C_SOURCE 200809L /* pthread_barrier_t under -std=c11 */
#include <mpi.h>
#include <mpilens.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NTHREADS 4
#define TAG_BLOCKING 100
#define TAG_NONBLOCKING 200
#define TAG_HANDOFF 300

static int rank, nprocs, left, right, K, S;

/* requests handed from thread t to thread (t+1) % NTHREADS */
static MPI_Request handoff[NTHREADS][2];
static unsigned char *handoff_buf[NTHREADS];
static pthread_barrier_t posted;

typedef struct {
    int id;
    long bad;
} worker_t;

static unsigned char pattern(int src, int thread, int i, int j) { return (unsigned char)(src * 31 + thread * 7 + i * 3 + j); }

static void fill(unsigned char *buf, int thread, int i)
{
    for (int j = 0; j < S; j++) buf[j] = pattern(rank, thread, i, j);
}

static long check(const unsigned char *buf, int thread, int i)
{
    long bad = 0;
    for (int j = 0; j < S; j++) bad += buf[j] != pattern(left, thread, i, j);
    return bad;
}

static void *worker(void *arg)
{
    worker_t *w = arg;
    const int t = w->id;
    unsigned char *out = malloc((size_t)S), *in = malloc(2 * (size_t)S), *hout = malloc((size_t)S);
    handoff_buf[t] = malloc((size_t)S);

    mpilens_region_begin("exchange");
    for (int i = 0; i < K; i++) {
        fill(out, t, i);
        memset(in, 0, 2 * (size_t)S);
        if (i % 2 == 0) {
            if (rank % 2 == 0) {
                MPI_Send(out, S, MPI_BYTE, right, TAG_BLOCKING + t, MPI_COMM_WORLD);
                MPI_Recv(in, S, MPI_BYTE, left, TAG_BLOCKING + t, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(in, S, MPI_BYTE, left, TAG_BLOCKING + t, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(out, S, MPI_BYTE, right, TAG_BLOCKING + t, MPI_COMM_WORLD);
            }
        } else {
            MPI_Request r[2];
            MPI_Irecv(in, 2 * S, MPI_BYTE, left, TAG_NONBLOCKING + t, MPI_COMM_WORLD, &r[0]);
            MPI_Isend(out, S, MPI_BYTE, right, TAG_NONBLOCKING + t, MPI_COMM_WORLD, &r[1]);
            MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
        }
        w->bad += check(in, t, i);
    }

    /* start two requests here, let the next thread complete them */
    fill(hout, t, K);
    memset(handoff_buf[t], 0, (size_t)S);
    MPI_Irecv(handoff_buf[t], S, MPI_BYTE, left, TAG_HANDOFF + t, MPI_COMM_WORLD, &handoff[t][0]);
    MPI_Isend(hout, S, MPI_BYTE, right, TAG_HANDOFF + t, MPI_COMM_WORLD, &handoff[t][1]);
    pthread_barrier_wait(&posted);
    const int from = (t + NTHREADS - 1) % NTHREADS;
    MPI_Wait(&handoff[from][0], MPI_STATUS_IGNORE);
    MPI_Wait(&handoff[from][1], MPI_STATUS_IGNORE);
    w->bad += check(handoff_buf[from], from, K);
    mpilens_region_end("exchange");

    /* thread t's send buffer hout may be in use until thread t+1 completed it */
    pthread_barrier_wait(&posted);
    free(out);
    free(in);
    free(hout);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided = MPI_THREAD_SINGLE;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (provided < MPI_THREAD_MULTIPLE) {
        if (rank == 0) printf("threads: MPI_THREAD_MULTIPLE not provided (level %d)\n", provided);
        MPI_Finalize();
        return 0;
    }
    K = argc > 1 ? atoi(argv[1]) : 10;
    S = argc > 2 ? atoi(argv[2]) : 4096;
    right = (rank + 1) % nprocs;
    left = (rank + nprocs - 1) % nprocs;

    pthread_barrier_init(&posted, NULL, NTHREADS);
    pthread_t tid[NTHREADS];
    worker_t w[NTHREADS];
    for (int t = 0; t < NTHREADS; t++) {
        w[t] = (worker_t){t, 0};
        pthread_create(&tid[t], NULL, worker, &w[t]);
    }
    long bad = 0;
    for (int t = 0; t < NTHREADS; t++) {
        pthread_join(tid[t], NULL);
        bad += w[t].bad;
    }
    pthread_barrier_destroy(&posted);
    for (int t = 0; t < NTHREADS; t++) free(handoff_buf[t]);

    int mine[2] = {bad != 0, 1}, all[2];
    MPI_Allreduce(mine, all, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (bad) printf("threads: rank %d: %ld wrong bytes\n", rank, bad);
    if (rank == 0)
        printf("threads: %s, %d ranks x %d threads, %d messages of %d bytes each way\n",
               all[0] == 0 && all[1] == nprocs ? "ok" : "FAILED", nprocs, NTHREADS, K + 1, S);
    MPI_Finalize();
    return all[0] == 0 ? 0 : 1;
}
