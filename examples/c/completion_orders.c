/* completion_orders: many outstanding receives of different sizes completed in a shuffled order, so
 * that a tool's table of outstanding requests sees its entries taken out in every order and every
 * completion function in turn; receives completed by a thread that did not post them; and blocking
 * receives whose longest and shortest times are known.
 *
 * Usage: completion_orders N M (2 ranks, MPI_THREAD_SERIALIZED: one thread at a time calls MPI)
 *  1. Rank 1 posts N MPI_Irecv (message i: size(i) = 1 + (i * 37) % 1000 bytes, tag i) and completes
 *     them in the order of a fixed permutation, in rounds: round r takes the next k = 1 + r % 5
 *     requests (the last round what is left): k = 1 with MPI_Wait, k = 2 with MPI_Test on each until
 *     it completes (the calls are counted), k >= 3 with one MPI_Waitall over 2k handles, the k
 *     requests at the odd slots and MPI_REQUEST_NULL at the even ones, statuses ignored. Rank 0
 *     sends message i with MPI_Isend and completes its sends with MPI_Waitall in groups of 7.
 *  2. On rank 1 a second thread posts M more MPI_Irecv (message N + j, size(N + j), tag N + j) and
 *     exits; the main thread completes all M with one MPI_Waitall, statuses ignored. Rank 0 sends
 *     them with MPI_Send.
 *  3. Rank 1 sends 8 messages of 64 bytes with MPI_Send (tag 99999), sleeping 300 ms before the
 *     fourth; rank 0 receives them with MPI_Recv.
 *  4. Rank 0 sends BIG bytes (1 MiB: past every eager limit, so MPI_Isend returns a request of its
 *     own) with MPI_Isend, tag 88888, and completes it with MPI_Wait, status ignored; rank 1
 *     receives it with MPI_Recv.
 *  5. On a duplicate of MPI_COMM_WORLD, rank 1 posts DUPS MPI_Irecv of 100 bytes (tag 5000 + j),
 *     each followed by an MPI_Comm_rank, and completes them with one MPI_Waitall; rank 0 sends
 *     them with MPI_Send.
 * Rank 1 prints "completion_orders: tests=T" (its MPI_Test calls); every rank prints
 * "completion_orders: ok" when every message had the size and the bytes it was sent with.
 */
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAXSIZE 1000
#define BIG (1 << 20)
#define DUPS 50

static int n_msgs, m_msgs;
static unsigned char (*rbuf)[MAXSIZE];
static MPI_Request *hand;

static int size_of(int i) { return 1 + (i * 37) % MAXSIZE; }
static unsigned char byte_of(int i, int j) { return (unsigned char)(i * 7 + j); }

static void fill(unsigned char *b, int i)
{
    for (int j = 0; j < size_of(i); j++) b[j] = byte_of(i, j);
}

static int check(const unsigned char *b, int i)
{
    for (int j = 0; j < size_of(i); j++)
        if (b[j] != byte_of(i, j)) return 1;
    return 0;
}

static void *poster(void *arg)
{
    (void)arg;
    for (int j = 0; j < m_msgs; j++) {
        const int i = n_msgs + j;
        MPI_Irecv(rbuf[i], MAXSIZE, MPI_BYTE, 0, i, MPI_COMM_WORLD, &hand[j]); /* site:irecv-thread */
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int provided = MPI_THREAD_SINGLE, rank = 0, size = 0, bad = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2 || argc != 3 || provided < MPI_THREAD_SERIALIZED) {
        if (rank == 0) fprintf(stderr, "usage: mpirun -np 2 completion_orders N M (MPI_THREAD_SERIALIZED)\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    n_msgs = atoi(argv[1]);
    m_msgs = atoi(argv[2]);
    const int total = n_msgs + m_msgs;
    rbuf = malloc((size_t)total * sizeof *rbuf);
    MPI_Request *reqs = malloc((size_t)total * sizeof *reqs);
    hand = malloc((size_t)(m_msgs > 0 ? m_msgs : 1) * sizeof *hand);
    unsigned char *sbuf = malloc((size_t)total * MAXSIZE);

    if (rank == 0) {
        /* 1. */
        for (int i = 0; i < n_msgs; i++) {
            fill(sbuf + (size_t)i * MAXSIZE, i);
            MPI_Isend(sbuf + (size_t)i * MAXSIZE, size_of(i), MPI_BYTE, 1, i, MPI_COMM_WORLD, &reqs[i]);
        }
        for (int i = 0; i < n_msgs; i += 7) MPI_Waitall(n_msgs - i < 7 ? n_msgs - i : 7, &reqs[i], MPI_STATUSES_IGNORE);
        /* 2. */
        MPI_Barrier(MPI_COMM_WORLD); /* rank 1's thread has posted */
        for (int i = n_msgs; i < total; i++) {
            fill(sbuf + (size_t)i * MAXSIZE, i);
            MPI_Send(sbuf + (size_t)i * MAXSIZE, size_of(i), MPI_BYTE, 1, i, MPI_COMM_WORLD);
        }
        /* 3. */
        unsigned char b[64];
        for (int k = 0; k < 8; k++) {
            MPI_Status st;
            int got = 0;
            MPI_Recv(b, 64, MPI_BYTE, 1, 99999, MPI_COMM_WORLD, &st);
            MPI_Get_count(&st, MPI_BYTE, &got);
            bad |= got != 64 || b[0] != (unsigned char)k;
        }
        /* 4. */
        unsigned char *big = malloc(BIG);
        memset(big, 0x5a, BIG);
        MPI_Request r;
        MPI_Isend(big, BIG, MPI_BYTE, 1, 88888, MPI_COMM_WORLD, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        free(big);
    } else {
        /* 1. */
        for (int i = 0; i < n_msgs; i++) MPI_Irecv(rbuf[i], MAXSIZE, MPI_BYTE, 0, i, MPI_COMM_WORLD, &reqs[i]); /* site:irecv-main */
        int *order = malloc((size_t)(n_msgs > 0 ? n_msgs : 1) * sizeof *order);
        for (int i = 0; i < n_msgs; i++) order[i] = i;
        uint32_t x = 12345u; /* a fixed shuffle (Fisher-Yates with an LCG) */
        for (int i = n_msgs - 1; i > 0; i--) {
            x = x * 1103515245u + 12345u;
            const int j = (int)((x >> 8) % (uint32_t)(i + 1));
            const int t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        long tests = 0;
        MPI_Request group[2 * 5];
        for (int at = 0, round = 0; at < n_msgs; round++) {
            int k = 1 + round % 5;
            if (k > n_msgs - at) k = n_msgs - at;
            if (k == 1) {
                MPI_Wait(&reqs[order[at]], MPI_STATUS_IGNORE);
            } else if (k == 2) {
                for (int q = 0; q < 2; q++) {
                    int done = 0;
                    while (!done) {
                        MPI_Test(&reqs[order[at + q]], &done, MPI_STATUS_IGNORE); /* site:test */
                        tests++;
                    }
                }
            } else {
                for (int q = 0; q < k; q++) {
                    group[2 * q] = MPI_REQUEST_NULL;
                    group[2 * q + 1] = reqs[order[at + q]];
                }
                MPI_Waitall(2 * k, group, MPI_STATUSES_IGNORE); /* site:waitall-groups */
            }
            at += k;
        }
        for (int i = 0; i < n_msgs; i++) bad |= check(rbuf[i], i);
        free(order);
        printf("completion_orders: tests=%ld\n", tests);
        /* 2. */
        pthread_t th;
        pthread_create(&th, NULL, poster, NULL);
        pthread_join(th, NULL);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Waitall(m_msgs, hand, MPI_STATUSES_IGNORE);
        for (int i = n_msgs; i < total; i++) bad |= check(rbuf[i], i);
        /* 3. */
        unsigned char b[64];
        for (int k = 0; k < 8; k++) {
            if (k == 3) nanosleep(&(struct timespec){0, 300000000}, NULL);
            memset(b, k, sizeof b);
            MPI_Send(b, 64, MPI_BYTE, 0, 99999, MPI_COMM_WORLD);
        }
        /* 4. */
        unsigned char *big = malloc(BIG);
        MPI_Status st;
        int got = 0;
        MPI_Recv(big, BIG, MPI_BYTE, 0, 88888, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_BYTE, &got);
        bad |= got != BIG || big[0] != 0x5a || big[BIG - 1] != 0x5a;
        free(big);
    }
    /* 5. */
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    unsigned char dbuf[DUPS][100];
    if (rank == 0) {
        for (int j = 0; j < DUPS; j++) {
            memset(dbuf[j], j, 100);
            MPI_Send(dbuf[j], 100, MPI_BYTE, 1, 5000 + j, dup);
        }
    } else {
        MPI_Request dreq[DUPS];
        for (int j = 0; j < DUPS; j++) {
            int me;
            MPI_Irecv(dbuf[j], 100, MPI_BYTE, 0, 5000 + j, dup, &dreq[j]); /* site:irecv-dup */
            MPI_Comm_rank(dup, &me); /* a call of another kind, at another line, in between */
        }
        MPI_Waitall(DUPS, dreq, MPI_STATUSES_IGNORE);
        for (int j = 0; j < DUPS; j++) bad |= dbuf[j][0] != (unsigned char)j || dbuf[j][99] != (unsigned char)j;
    }
    MPI_Comm_free(&dup);
    printf("completion_orders: %s\n", bad ? "FAILED" : "ok");
    free(rbuf);
    free(reqs);
    free(hand);
    free(sbuf);
    MPI_Finalize();
    return bad;
}
