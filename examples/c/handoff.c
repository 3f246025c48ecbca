/* handoff: requests started by one thread and completed by another, and many outstanding at once.
 *
 * Usage: handoff N M (2 ranks, MPI_THREAD_SERIALIZED: one thread at a time calls MPI)
 *  1. many outstanding: rank 1 posts N MPI_Irecv of 8 bytes (tag 1), rank 0 N MPI_Isend of 8 bytes;
 *     both complete them with one MPI_Waitall.
 *  2. handed over: on each rank a second thread posts M MPI_Irecv of 16 bytes (tag 2) and
 *     M MPI_Isend of 16 bytes (tag 2) to the other rank, and exits; the main thread then
 *     completes the M receives with MPI_Waitany, one by one, and the M sends with MPI_Waitall.
 *  3. persistent, handed over: the second thread creates one MPI_Recv_init and one MPI_Send_init of
 *     32 bytes (tag 3); the main thread starts both 3 times (MPI_Startall), completes them
 *     (MPI_Waitall) and frees them (MPI_Request_free).
 * Prints "handoff: ok" when every message arrived with the content it was sent with.
 */
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, other, m_count;
static MPI_Request *hand_recv, *hand_send, persistent[2];
static char (*hbuf_in)[16], (*hbuf_out)[16];
static char pbuf_in[32], pbuf_out[32];

static void *poster(void *arg)
{
    (void)arg;
    for (int i = 0; i < m_count; i++) {
        memset(hbuf_out[i], 'a' + i % 26, 16);
        MPI_Irecv(hbuf_in[i], 16, MPI_BYTE, other, 2, MPI_COMM_WORLD, &hand_recv[i]);
        MPI_Isend(hbuf_out[i], 16, MPI_BYTE, other, 2, MPI_COMM_WORLD, &hand_send[i]);
    }
    MPI_Recv_init(pbuf_in, 32, MPI_BYTE, other, 3, MPI_COMM_WORLD, &persistent[0]);
    MPI_Send_init(pbuf_out, 32, MPI_BYTE, other, 3, MPI_COMM_WORLD, &persistent[1]);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided = MPI_THREAD_SINGLE, size = 0, bad = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2 || argc != 3) {
        if (rank == 0) fprintf(stderr, "usage: mpirun -np 2 handoff N M\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (provided < MPI_THREAD_SERIALIZED) {
        if (rank == 0) printf("handoff: MPI_THREAD_SERIALIZED not provided (level %d)\n", provided);
        MPI_Finalize();
        return 0;
    }
    const int n = atoi(argv[1]);
    m_count = atoi(argv[2]);
    other = 1 - rank;

    /* 1. many outstanding */
    MPI_Request *reqs = malloc((size_t)n * sizeof *reqs);
    uint64_t *buf = malloc((size_t)n * sizeof *buf);
    for (int i = 0; i < n; i++) {
        buf[i] = rank == 0 ? (uint64_t)i * 7u + 1u : 0u;
        if (rank == 0)
            MPI_Isend(&buf[i], 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD, &reqs[i]);
        else
            MPI_Irecv(&buf[i], 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &reqs[i]);
    }
    MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
    if (rank == 1)
        for (int i = 0; i < n; i++) bad += buf[i] != (uint64_t)i * 7u + 1u;

    /* 2. handed over: the other thread posts, this one completes */
    hand_recv = malloc((size_t)m_count * sizeof *hand_recv);
    hand_send = malloc((size_t)m_count * sizeof *hand_send);
    hbuf_in = malloc((size_t)m_count * sizeof *hbuf_in);
    hbuf_out = malloc((size_t)m_count * sizeof *hbuf_out);
    pthread_t th;
    pthread_create(&th, NULL, poster, NULL);
    pthread_join(th, NULL);
    for (int done = 0; done < m_count; done++) {
        int idx = -1;
        MPI_Status st;
        MPI_Waitany(m_count, hand_recv, &idx, &st);
        if (idx < 0 || idx >= m_count || hbuf_in[idx][0] != 'a' + idx % 26 || hbuf_in[idx][15] != 'a' + idx % 26) bad++;
    }
    MPI_Waitall(m_count, hand_send, MPI_STATUSES_IGNORE);

    /* 3. persistent requests created by the other thread */
    for (int round = 0; round < 3; round++) {
        memset(pbuf_out, 'A' + round, sizeof pbuf_out);
        MPI_Startall(2, persistent);
        MPI_Waitall(2, persistent, MPI_STATUSES_IGNORE);
        bad += pbuf_in[0] != 'A' + round || pbuf_in[31] != 'A' + round;
    }
    MPI_Request_free(&persistent[0]);
    MPI_Request_free(&persistent[1]);

    int all_bad = 0;
    MPI_Allreduce(&bad, &all_bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf(all_bad == 0 ? "handoff: ok\n" : "handoff: %d wrong messages\n", all_bad);
    free(reqs);
    free(buf);
    MPI_Finalize();
    return all_bad != 0;
}
