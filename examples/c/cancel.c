/* cancel: cancelled requests move nothing. left = rank-1, right = rank+1 (periodic); tag 9 is
 * never sent, so a receive on it can only end cancelled.
 *
 *   1. MPI_Irecv of 100 int on tag 9, MPI_Cancel, MPI_Wait with a status (MPI_Test_cancelled true)
 *   2. MPI_Irecv of 100 int on tag 9, MPI_Cancel, MPI_Wait with MPI_STATUS_IGNORE
 *   3. MPI_Irecv of 100 int on tag 9 and MPI_Irecv of 10 int from left on tag 1 (10 arrive: 40 B),
 *      MPI_Cancel of the first, MPI_Send of 10 int to right, MPI_Waitall with MPI_STATUSES_IGNORE
 *   4. MPI_Irecv of 100 int on tag 9, MPI_Cancel, MPI_Test until it completes (MPI_STATUS_IGNORE)
 *   5. persistent: MPI_Recv_init of 8 int from left on tag 5; MPI_Start, MPI_Cancel, MPI_Wait
 *      (cancelled: nothing sent yet, the send comes after a barrier); then MPI_Start, MPI_Barrier,
 *      MPI_Send of 8 int to right on tag 5, MPI_Wait: 32 B received; MPI_Request_free
 *   6. a send: MPI_Isend of 6 int (24 B, sent eagerly) to right on tag 7, MPI_Cancel, MPI_Wait with
 *      a status. Neither Open MPI nor MPICH cancels a send: it completes. MPI_Sendrecv of 1 int (4 B
 *      each way, tag 8) tells the right neighbour whether it was cancelled; if not, the neighbour
 *      receives it: MPI_Recv of 6 int from left on tag 7 (24 B). Prints "cancel: send cancelled"
 *      when it was.
 *   7. a receive polled before its message exists: MPI_Irecv of 6 int from left on tag 10, MPI_Test
 *      (nothing sent on tag 10 yet: not complete), MPI_Barrier, MPI_Send of 6 int to right on tag
 *      10, MPI_Wait: 24 B received. (Once the process has cancelled anything, every completion
 *      takes mpilens' general path, which takes the receive's slot out for the MPI_Test and puts
 *      it back when the test fails.)
 *
 * Per rank (the send not cancelled): MPI_Irecv 6 calls, 40 + 24 B; MPI_Recv_init 1 call, 32 B;
 * MPI_Send 3 calls, 40 + 32 + 24 B; MPI_Isend 1 call, 24 B; MPI_Sendrecv 1 call, 4 B each way;
 * MPI_Recv 1 call, 24 B; MPI_Cancel 6; MPI_Wait 6; MPI_Waitall 1; MPI_Start 2; MPI_Barrier 2;
 * MPI_Request_free 1; MPI_Test at least 2.
 *
 * `cancel race N`: MPI_THREAD_MULTIPLE; N rounds in which the main thread posts a receive on tag 9
 * and waits for it while a second thread cancels it (the cancel races with the wait), and then
 * exchanges one real message of 64 int (256 B) with MPI_Irecv + MPI_Send + MPI_Wait. Per rank:
 * MPI_Irecv 2N calls and N*256 B, MPI_Send N calls and N*256 B, MPI_Cancel N, MPI_Wait 2N.
 * Prints "cancel: ok <nprocs>" when every status and payload is as expected. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, nprocs, left, right, nbad;

static void expect_cancelled(const MPI_Status *st, const char *what)
{
    int c = 0;
    MPI_Test_cancelled(st, &c);
    if (!c) {
        fprintf(stderr, "cancel: rank %d: %s not cancelled\n", rank, what);
        nbad++;
    }
}

static void sequence(void)
{
    int big[100], small[10], out[10], p[8], po[8];
    MPI_Request r, rs[2];
    MPI_Status st;

    MPI_Irecv(big, 100, MPI_INT, left, 9, MPI_COMM_WORLD, &r);
    MPI_Cancel(&r);
    MPI_Wait(&r, &st);
    expect_cancelled(&st, "1");

    MPI_Irecv(big, 100, MPI_INT, left, 9, MPI_COMM_WORLD, &r);
    MPI_Cancel(&r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);

    MPI_Irecv(big, 100, MPI_INT, left, 9, MPI_COMM_WORLD, &rs[0]);
    MPI_Irecv(small, 10, MPI_INT, left, 1, MPI_COMM_WORLD, &rs[1]);
    MPI_Cancel(&rs[0]);
    for (int i = 0; i < 10; i++) out[i] = rank * 10 + i;
    MPI_Send(out, 10, MPI_INT, right, 1, MPI_COMM_WORLD);
    MPI_Waitall(2, rs, MPI_STATUSES_IGNORE);
    for (int i = 0; i < 10; i++) nbad += small[i] != left * 10 + i;

    MPI_Irecv(big, 100, MPI_INT, left, 9, MPI_COMM_WORLD, &r);
    MPI_Cancel(&r);
    for (int flag = 0; !flag;) MPI_Test(&r, &flag, MPI_STATUS_IGNORE);

    MPI_Recv_init(p, 8, MPI_INT, left, 5, MPI_COMM_WORLD, &r);
    MPI_Start(&r);
    MPI_Cancel(&r);
    MPI_Wait(&r, &st);
    expect_cancelled(&st, "persistent");
    MPI_Start(&r);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < 8; i++) po[i] = rank * 8 + i;
    MPI_Send(po, 8, MPI_INT, right, 5, MPI_COMM_WORLD);
    MPI_Wait(&r, &st);
    int c = 1;
    MPI_Test_cancelled(&st, &c);
    nbad += c != 0;
    for (int i = 0; i < 8; i++) nbad += p[i] != left * 8 + i;
    MPI_Request_free(&r);

    int s6[6], r6[6];
    for (int i = 0; i < 6; i++) s6[i] = rank * 6 + i;
    MPI_Isend(s6, 6, MPI_INT, right, 7, MPI_COMM_WORLD, &r);
    MPI_Cancel(&r);
    MPI_Wait(&r, &st);
    int mine = 0, theirs = 0;
    MPI_Test_cancelled(&st, &mine);
    int flags[2] = {mine, 0};
    MPI_Sendrecv(&flags[0], 1, MPI_INT, right, 8, &flags[1], 1, MPI_INT, left, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    theirs = flags[1];
    if (!theirs) {
        MPI_Recv(r6, 6, MPI_INT, left, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = 0; i < 6; i++) nbad += r6[i] != left * 6 + i;
    }
    if (mine) printf("cancel: send cancelled\n");

    int s10[6], r10[6], flag = 1;
    MPI_Irecv(r10, 6, MPI_INT, left, 10, MPI_COMM_WORLD, &r);
    MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
    if (flag) {
        fprintf(stderr, "cancel: rank %d: step 7 received before anything was sent\n", rank);
        nbad++;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < 6; i++) s10[i] = rank * 100 + i;
    MPI_Send(s10, 6, MPI_INT, right, 10, MPI_COMM_WORLD);
    if (!flag) MPI_Wait(&r, MPI_STATUS_IGNORE);
    for (int i = 0; i < 6; i++) nbad += r10[i] != left * 100 + i;
}

/* ---- the race */
static MPI_Request shared;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int posted_round, done_round = -1;

static void *canceller(void *arg)
{
    const int rounds = *(int *)arg;
    for (int i = 0; i < rounds; i++) {
        pthread_mutex_lock(&mu);
        while (posted_round <= i) pthread_cond_wait(&cv, &mu);
        MPI_Request r = shared;
        pthread_mutex_unlock(&mu);
        MPI_Cancel(&r); /* while the main thread waits on the same request */
    }
    return NULL;
}

static void race(int rounds)
{
    pthread_t th;
    pthread_create(&th, NULL, canceller, &rounds);
    int big[100], in[64], out[64];
    for (int i = 0; i < rounds; i++) {
        MPI_Request r;
        MPI_Status st;
        MPI_Irecv(big, 100, MPI_INT, left, 9, MPI_COMM_WORLD, &r);
        pthread_mutex_lock(&mu);
        shared = r;
        posted_round = i + 1;
        pthread_cond_signal(&cv);
        pthread_mutex_unlock(&mu);
        MPI_Wait(&r, &st);
        expect_cancelled(&st, "race");
        for (int k = 0; k < 64; k++) out[k] = rank * 1000 + i + k;
        MPI_Irecv(in, 64, MPI_INT, left, 2, MPI_COMM_WORLD, &r);
        MPI_Send(out, 64, MPI_INT, right, 2, MPI_COMM_WORLD);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        for (int k = 0; k < 64; k++) nbad += in[k] != left * 1000 + i + k;
    }
    (void)done_round;
    pthread_join(th, NULL);
}

int main(int argc, char **argv)
{
    const int racing = argc > 1 && strcmp(argv[1], "race") == 0;
    int provided = MPI_THREAD_SINGLE;
    if (racing) {
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    } else {
        MPI_Init(&argc, &argv);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    left = (rank + nprocs - 1) % nprocs;
    right = (rank + 1) % nprocs;
    if (racing && provided < MPI_THREAD_MULTIPLE) {
        if (rank == 0) printf("cancel: MPI_THREAD_MULTIPLE not provided (level %d)\n", provided);
        MPI_Finalize();
        return 0;
    }
    if (racing)
        race(argc > 2 ? atoi(argv[2]) : 200);
    else
        sequence();
    int total = 0;
    MPI_Allreduce(&nbad, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf(total == 0 ? "cancel: ok %d\n" : "cancel: wrong %d\n", total == 0 ? nprocs : total);
    MPI_Finalize();
    return 0;
}
