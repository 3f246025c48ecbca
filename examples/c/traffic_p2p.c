/* traffic_p2p: point-to-point traffic whose calls and bytes are known exactly, one phase per run,
 * so that tests/test_traffic.py can derive every expected count from the command line.
 *
 * Usage: traffic_p2p PHASE ARGS...
 *   blocking   REPS SIZE    token ring: rank r sends REPS messages of SIZE*(r+1) bytes to r+1
 *                           with MPI_Send; MPI_Recv from r-1 into a larger buffer (real status)
 *   wildcard   REPS SIZE    every rank r > 0 sends 2*REPS messages of SIZE*r+i bytes (tag i,
 *                           i = 0..REPS-1 in each batch) to rank 0, which receives them with
 *                           MPI_ANY_SOURCE/MPI_ANY_TAG into larger buffers: batch 1 with MPI_Recv
 *                           (first half with a status, the rest MPI_STATUS_IGNORE), batch 2 with
 *                           MPI_Irecv completed by MPI_Wait(MPI_STATUS_IGNORE) for the first half
 *                           and one MPI_Waitall(MPI_STATUSES_IGNORE) for the rest; one MPI_Barrier
 *                           separates the batches
 *   nb METHOD REPS SIZE     pairs r <-> r^1: per rep, MPI_Irecv (larger buffer) + MPI_Isend of
 *                           SIZE*(r+1)+rep bytes, completed with METHOD: wait | waitall | waitany |
 *                           waitsome | test | testall | testany | testsome; prints the number of
 *                           calls of the completion function ("completion_calls=")
 *   sendrecv   REPS SIZE    ring: MPI_Sendrecv of SIZE*(r+1)+rep bytes to r+1, from r-1
 *   persistent REPS SIZE    pairs r <-> r^1: MPI_Send_init (SIZE*(r+1) bytes) + MPI_Recv_init
 *                           (larger buffer); reps < REPS/2: MPI_Start x2 + MPI_Waitall, the
 *                           others: MPI_Startall + MPI_Wait x2; after each rep MPI_Test and
 *                           MPI_Testall of the inactive requests; then MPI_Request_free x2
 *   datatype   REPS K C     ring, MPI_Type_contiguous(K, MPI_DOUBLE) = T: per rep MPI_Irecv (C+3 of
 *                           T) + MPI_Send (C of T) + MPI_Wait; then token ring MPI_Send (C of T) /
 *                           MPI_Recv (C+3 of T); then MPI_Isend of one MPI_Type_vector(C, K, 2K,
 *                           MPI_DOUBLE) received as C*K+5 MPI_DOUBLE with MPI_Recv, MPI_Wait
 *   procnull   REPS SIZE    REPS x MPI_Send to MPI_PROC_NULL, REPS x MPI_Recv from MPI_PROC_NULL,
 *                           MPI_Isend + MPI_Irecv with MPI_PROC_NULL each completed by MPI_Wait,
 *                           one MPI_Sendrecv with MPI_PROC_NULL on both sides, one non-periodic
 *                           shift MPI_Sendrecv of SIZE bytes to r+1 from r-1 (MPI_PROC_NULL past
 *                           the ends), then one token ring MPI_Send/MPI_Recv of SIZE bytes
 *   split      REPS SIZE    A = MPI_Comm_split(world, 0, key size-1-r) (reversed order): token ring
 *                           over A ranks, REPS MPI_Send of SIZE*(r+1) bytes to A rank c+1;
 *                           B = MPI_Comm_split(world, r%2, key -r): REPS x MPI_Isend of 3*SIZE+r
 *                           bytes to the other B member (B rank c^1) + MPI_Irecv + MPI_Waitall;
 *                           both freed, then C = MPI_Comm_split(world, 0, key (r+1)%size): token
 *                           ring over C ranks, REPS MPI_Send of 5*SIZE+r bytes to C rank c+1
 *   sizes S1 S2 ...         rank 0 sends one message of each size to rank 1 (MPI_Send / MPI_Recv)
 *   big REPS MIB            each rank sends REPS messages of MIB MiB to itself (MPI_Irecv +
 *                           MPI_Send + MPI_Wait), for totals beyond 32 bits
 *   predefined REPS         ring, 14 predefined datatypes in turn (listed in predefined(), more
 *                           than the runtime keeps in its cache of them, so some share a slot): per
 *                           rep and type j, MPI_Isend of r+1+j elements to r+1 (alternate reps:
 *                           MPI_Send after MPI_Irecv), MPI_Recv / MPI_Wait of as many from r-1
 *   freedcomm REPS SIZE     pairs r <-> r^1 on D = MPI_Comm_split(world, r/2, key -r) (reversed
 *                           order): per rep MPI_Irecv (MPI_ANY_SOURCE, larger buffer) + MPI_Isend
 *                           of SIZE+r bytes on D, then D is freed and 4 communicators in world
 *                           order are created (they may reuse D's handle) before one MPI_Waitall
 *                           completes both requests; then the 4 are freed
 * Every phase ends with one MPI_Barrier on MPI_COMM_WORLD. Every rank checks what it receives
 * and aborts on a mismatch. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, nprocs;

static void die(const char *what)
{
    fprintf(stderr, "traffic_p2p: rank %d: %s\n", rank, what);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

static int arg(int argc, char **argv, int i)
{
    if (i >= argc) die("missing argument");
    return atoi(argv[i]);
}

static char *buffer(size_t n)
{
    char *b = malloc(n ? n : 1);
    if (b == NULL) die("out of memory");
    memset(b, 0, n ? n : 1);
    return b;
}

static void check_count(const MPI_Status *st, MPI_Datatype type, int expected)
{
    int n = -1;
    MPI_Get_count(st, type, &n);
    if (n != expected) {
        char msg[128];
        snprintf(msg, sizeof msg, "received %d elements, expected %d", n, expected);
        die(msg);
    }
}

/* ------------------------------------------------------------------------------------ phases */
static void predefined(int reps)
{
    const int right = (rank + 1) % nprocs, left = (rank + nprocs - 1) % nprocs;
    /* in tests/test_traffic.py's order */
    const MPI_Datatype types[] = {MPI_CHAR,     MPI_SHORT,   MPI_INT,     MPI_LONG, MPI_LONG_LONG,  MPI_FLOAT,
                                  MPI_DOUBLE,   MPI_LONG_DOUBLE, MPI_UNSIGNED, MPI_INT8_T, MPI_INT64_T, MPI_2INT,
                                  MPI_DOUBLE_INT, MPI_C_DOUBLE_COMPLEX};
    const int ntypes = (int)(sizeof types / sizeof types[0]);
    /* the largest type is 16 bytes (MPI_LONG_DOUBLE, MPI_C_DOUBLE_COMPLEX) */
    char *out = buffer((size_t)16 * (nprocs + ntypes)), *in = buffer((size_t)16 * (nprocs + ntypes));
    for (int i = 0; i < reps; i++)
        for (int j = 0; j < ntypes; j++) {
            MPI_Request rq;
            MPI_Status st;
            if (i % 2 == 0) {
                MPI_Isend(out, rank + 1 + j, types[j], right, j, MPI_COMM_WORLD, &rq);
                MPI_Recv(in, left + 1 + j, types[j], left, j, MPI_COMM_WORLD, &st);
                MPI_Wait(&rq, MPI_STATUS_IGNORE);
            } else {
                MPI_Irecv(in, left + 1 + j, types[j], left, j, MPI_COMM_WORLD, &rq);
                MPI_Send(out, rank + 1 + j, types[j], right, j, MPI_COMM_WORLD);
                MPI_Wait(&rq, &st);
            }
            check_count(&st, types[j], left + 1 + j);
        }
    free(out), free(in);
}

static void blocking(int reps, int size)
{
    const int right = (rank + 1) % nprocs, left = (rank + nprocs - 1) % nprocs;
    const int cap = size * (nprocs + 1);
    char *out = buffer((size_t)size * (rank + 1)), *in = buffer((size_t)cap);
    MPI_Status st;
    for (int i = 0; i < reps; i++) {
        if (rank == 0) {
            MPI_Send(out, size * (rank + 1), MPI_BYTE, right, i, MPI_COMM_WORLD);
            MPI_Recv(in, cap, MPI_BYTE, left, i, MPI_COMM_WORLD, &st);
        } else {
            MPI_Recv(in, cap, MPI_BYTE, left, i, MPI_COMM_WORLD, &st);
            MPI_Send(out, size * (rank + 1), MPI_BYTE, right, i, MPI_COMM_WORLD);
        }
        check_count(&st, MPI_BYTE, size * (left + 1));
    }
    free(out), free(in);
}

static void wildcard(int reps, int size)
{
    const int cap = size * nprocs + reps + 64;
    if (rank == 0) {
        const int n = reps * (nprocs - 1);
        if (n < 1 || n > 1000000) die("wildcard needs 1..1000000 messages");
        char *in = buffer((size_t)cap);
        for (int k = 0; k < n; k++) {
            if (k < n / 2) {
                MPI_Status st;
                MPI_Recv(in, cap, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
                check_count(&st, MPI_BYTE, size * st.MPI_SOURCE + st.MPI_TAG);
            } else {
                MPI_Recv(in, cap, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
        }
        MPI_Barrier(MPI_COMM_WORLD);
        char *ins = buffer((size_t)cap * n);
        MPI_Request *req = malloc(sizeof *req * (size_t)n);
        for (int k = 0; k < n; k++)
            MPI_Irecv(ins + (size_t)k * cap, cap, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &req[k]);
        for (int k = 0; k < n / 2; k++) MPI_Wait(&req[k], MPI_STATUS_IGNORE);
        MPI_Waitall(n - n / 2, req + n / 2, MPI_STATUSES_IGNORE);
        free(ins), free(in), free(req);
    } else {
        char *out = buffer((size_t)size * rank + reps);
        for (int i = 0; i < reps; i++) MPI_Send(out, size * rank + i, MPI_BYTE, 0, i, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        for (int i = 0; i < reps; i++) MPI_Send(out, size * rank + i, MPI_BYTE, 0, i, MPI_COMM_WORLD);
        free(out);
    }
}

static void nonblocking(const char *method, int reps, int size)
{
    if (nprocs % 2) die("nb needs an even number of ranks");
    const int partner = rank ^ 1, cap = size * (nprocs + 1) + reps + 16;
    char *out = buffer((size_t)size * (rank + 1) + reps), *in = buffer((size_t)cap);
    long calls = 0;
    for (int i = 0; i < reps; i++) {
        MPI_Request req[2];
        MPI_Status sts[2];
        const int expect = size * (partner + 1) + i;
        MPI_Irecv(in, cap, MPI_BYTE, partner, i, MPI_COMM_WORLD, &req[0]);
        MPI_Isend(out, size * (rank + 1) + i, MPI_BYTE, partner, i, MPI_COMM_WORLD, &req[1]);
        if (strcmp(method, "wait") == 0) {
            MPI_Status st;
            MPI_Wait(&req[0], &st);
            check_count(&st, MPI_BYTE, expect);
            MPI_Wait(&req[1], MPI_STATUS_IGNORE);
            calls += 2;
        } else if (strcmp(method, "waitall") == 0) {
            MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
            calls++;
        } else if (strcmp(method, "waitany") == 0) {
            for (int k = 0; k < 2; k++) {
                int idx = -1;
                MPI_Waitany(2, req, &idx, MPI_STATUS_IGNORE);
                calls++;
            }
        } else if (strcmp(method, "waitsome") == 0) {
            int done = 0;
            while (done < 2) {
                int outcount = 0, idx[2];
                MPI_Waitsome(2, req, &outcount, idx, sts);
                calls++;
                for (int k = 0; k < outcount; k++)
                    if (idx[k] == 0) check_count(&sts[k], MPI_BYTE, expect);
                done += outcount;
            }
        } else if (strcmp(method, "test") == 0) {
            int flags[2] = {0, 0};
            while (!flags[0] || !flags[1])
                for (int k = 0; k < 2; k++)
                    if (!flags[k]) {
                        MPI_Test(&req[k], &flags[k], MPI_STATUS_IGNORE);
                        calls++;
                    }
        } else if (strcmp(method, "testall") == 0) {
            int flag = 0;
            while (!flag) {
                MPI_Testall(2, req, &flag, MPI_STATUSES_IGNORE);
                calls++;
            }
        } else if (strcmp(method, "testany") == 0) {
            int done = 0;
            while (done < 2) {
                int idx = -1, flag = 0;
                MPI_Status st;
                MPI_Testany(2, req, &idx, &flag, &st);
                calls++;
                if (flag && idx != MPI_UNDEFINED) {
                    if (idx == 0) check_count(&st, MPI_BYTE, expect);
                    done++;
                }
            }
        } else if (strcmp(method, "testsome") == 0) {
            int done = 0;
            while (done < 2) {
                int outcount = 0, idx[2];
                MPI_Testsome(2, req, &outcount, idx, MPI_STATUSES_IGNORE);
                calls++;
                if (outcount != MPI_UNDEFINED) done += outcount;
            }
        } else {
            die("unknown completion method");
        }
        if (req[0] != MPI_REQUEST_NULL || req[1] != MPI_REQUEST_NULL) die("request not completed");
    }
    printf("nb rank=%d method=%s completion_calls=%ld\n", rank, method, calls);
    free(out), free(in);
}

static void sendrecv(int reps, int size)
{
    const int right = (rank + 1) % nprocs, left = (rank + nprocs - 1) % nprocs;
    const int cap = size * (nprocs + 1) + reps + 16;
    char *out = buffer((size_t)size * (rank + 1) + reps), *in = buffer((size_t)cap);
    for (int i = 0; i < reps; i++) {
        MPI_Status st;
        MPI_Sendrecv(out, size * (rank + 1) + i, MPI_BYTE, right, i, in, cap, MPI_BYTE, left, i, MPI_COMM_WORLD, &st);
        check_count(&st, MPI_BYTE, size * (left + 1) + i);
    }
    free(out), free(in);
}

static void persistent(int reps, int size)
{
    if (nprocs % 2) die("persistent needs an even number of ranks");
    const int partner = rank ^ 1, cap = size * (nprocs + 1) + 16;
    char *out = buffer((size_t)size * (rank + 1)), *in = buffer((size_t)cap);
    MPI_Request req[2];
    MPI_Recv_init(in, cap, MPI_BYTE, partner, 7, MPI_COMM_WORLD, &req[0]);
    MPI_Send_init(out, size * (rank + 1), MPI_BYTE, partner, 7, MPI_COMM_WORLD, &req[1]);
    for (int i = 0; i < reps; i++) {
        if (i < reps / 2) {
            MPI_Start(&req[0]);
            MPI_Start(&req[1]);
            MPI_Status sts[2];
            MPI_Waitall(2, req, sts);
            check_count(&sts[0], MPI_BYTE, size * (partner + 1));
        } else {
            MPI_Startall(2, req);
            MPI_Wait(&req[0], MPI_STATUS_IGNORE);
            MPI_Wait(&req[1], MPI_STATUS_IGNORE);
        }
        /* the requests are inactive now: testing them completes nothing */
        int flag = 0;
        MPI_Test(&req[0], &flag, MPI_STATUS_IGNORE);
        if (!flag) die("MPI_Test of an inactive request returned false");
        MPI_Testall(2, req, &flag, MPI_STATUSES_IGNORE);
        if (!flag) die("MPI_Testall of inactive requests returned false");
    }
    MPI_Request_free(&req[0]);
    MPI_Request_free(&req[1]);
    free(out), free(in);
}

static void datatype(int reps, int k, int c)
{
    const int right = (rank + 1) % nprocs, left = (rank + nprocs - 1) % nprocs;
    MPI_Datatype t, v;
    MPI_Type_contiguous(k, MPI_DOUBLE, &t);
    MPI_Type_commit(&t);
    MPI_Type_vector(c, k, 2 * k, MPI_DOUBLE, &v);
    MPI_Type_commit(&v);
    double *out = calloc((size_t)2 * k * c + 1, sizeof(double));
    double *in = calloc((size_t)k * (c + 3) + 8, sizeof(double));
    if (out == NULL || in == NULL) die("out of memory");
    for (int i = 0; i < reps; i++) {
        MPI_Request r;
        MPI_Status st;
        MPI_Irecv(in, c + 3, t, left, i, MPI_COMM_WORLD, &r);
        MPI_Send(out, c, t, right, i, MPI_COMM_WORLD);
        MPI_Wait(&r, &st);
        check_count(&st, t, c);
    }
    for (int i = 0; i < reps; i++) {
        MPI_Status st;
        if (rank == 0) {
            MPI_Send(out, c, t, right, 100 + i, MPI_COMM_WORLD);
            MPI_Recv(in, c + 3, t, left, 100 + i, MPI_COMM_WORLD, &st);
        } else {
            MPI_Recv(in, c + 3, t, left, 100 + i, MPI_COMM_WORLD, &st);
            MPI_Send(out, c, t, right, 100 + i, MPI_COMM_WORLD);
        }
        check_count(&st, MPI_BYTE, c * k * 8);
    }
    MPI_Request r;
    MPI_Status st;
    MPI_Isend(out, 1, v, right, 999, MPI_COMM_WORLD, &r);
    MPI_Recv(in, c * k + 5, MPI_DOUBLE, left, 999, MPI_COMM_WORLD, &st);
    check_count(&st, MPI_DOUBLE, c * k);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    MPI_Type_free(&t);
    MPI_Type_free(&v);
    free(out), free(in);
}

static void procnull(int reps, int size)
{
    char *out = buffer((size_t)size), *in = buffer((size_t)size);
    MPI_Status st;
    for (int i = 0; i < reps; i++) MPI_Send(out, size, MPI_BYTE, MPI_PROC_NULL, i, MPI_COMM_WORLD);
    for (int i = 0; i < reps; i++) {
        MPI_Recv(in, size, MPI_BYTE, MPI_PROC_NULL, i, MPI_COMM_WORLD, &st);
        check_count(&st, MPI_BYTE, 0);
    }
    MPI_Request r;
    MPI_Isend(out, size, MPI_BYTE, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    MPI_Irecv(in, size, MPI_BYTE, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &r);
    MPI_Wait(&r, &st);
    check_count(&st, MPI_BYTE, 0);
    MPI_Sendrecv(out, size, MPI_BYTE, MPI_PROC_NULL, 0, in, size, MPI_BYTE, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st);
    /* non-periodic shift: the last rank sends to MPI_PROC_NULL, rank 0 receives from it */
    const int up = rank + 1 < nprocs ? rank + 1 : MPI_PROC_NULL, down = rank > 0 ? rank - 1 : MPI_PROC_NULL;
    MPI_Sendrecv(out, size, MPI_BYTE, up, 2, in, size, MPI_BYTE, down, 2, MPI_COMM_WORLD, &st);
    check_count(&st, MPI_BYTE, rank > 0 ? size : 0);
    const int right = (rank + 1) % nprocs, left = (rank + nprocs - 1) % nprocs;
    if (rank == 0) {
        MPI_Send(out, size, MPI_BYTE, right, 1, MPI_COMM_WORLD);
        MPI_Recv(in, size, MPI_BYTE, left, 1, MPI_COMM_WORLD, &st);
    } else {
        MPI_Recv(in, size, MPI_BYTE, left, 1, MPI_COMM_WORLD, &st);
        MPI_Send(out, size, MPI_BYTE, right, 1, MPI_COMM_WORLD);
    }
    check_count(&st, MPI_BYTE, size);
    free(out), free(in);
}

static void split(int reps, int size)
{
    MPI_Comm a, b;
    MPI_Comm_split(MPI_COMM_WORLD, 0, nprocs - 1 - rank, &a);
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &b);
    int ca, na, cb, nb;
    MPI_Comm_rank(a, &ca);
    MPI_Comm_size(a, &na);
    MPI_Comm_rank(b, &cb);
    MPI_Comm_size(b, &nb);
    if (ca != nprocs - 1 - rank) die("unexpected rank in the reversed communicator");
    const int cap = size * (nprocs + 1) + 3 * size + nprocs;
    char *out = buffer((size_t)cap), *in = buffer((size_t)cap);
    const int right = (ca + 1) % na, left = (ca + na - 1) % na;
    for (int i = 0; i < reps; i++) {
        MPI_Status st;
        if (ca == 0) {
            MPI_Send(out, size * (rank + 1), MPI_BYTE, right, i, a);
            MPI_Recv(in, cap, MPI_BYTE, left, i, a, &st);
        } else {
            MPI_Recv(in, cap, MPI_BYTE, left, i, a, &st);
            MPI_Send(out, size * (rank + 1), MPI_BYTE, right, i, a);
        }
    }
    if (nb != 2) die("split needs 4 ranks");
    for (int i = 0; i < reps; i++) {
        MPI_Request r[2];
        MPI_Irecv(in, cap, MPI_BYTE, cb ^ 1, i, b, &r[0]);
        MPI_Isend(out, 3 * size + rank, MPI_BYTE, cb ^ 1, i, b, &r[1]);
        MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
    }
    MPI_Comm_free(&a);
    MPI_Comm_free(&b);
    /* a new communicator, likely with a recycled handle, in yet another order */
    MPI_Comm c;
    MPI_Comm_split(MPI_COMM_WORLD, 0, (rank + 1) % nprocs, &c);
    int cc;
    MPI_Comm_rank(c, &cc);
    for (int i = 0; i < reps; i++) {
        MPI_Status st;
        if (cc == 0) {
            MPI_Send(out, 5 * size + rank, MPI_BYTE, (cc + 1) % nprocs, i, c);
            MPI_Recv(in, cap, MPI_BYTE, (cc + nprocs - 1) % nprocs, i, c, &st);
        } else {
            MPI_Recv(in, cap, MPI_BYTE, (cc + nprocs - 1) % nprocs, i, c, &st);
            MPI_Send(out, 5 * size + rank, MPI_BYTE, (cc + 1) % nprocs, i, c);
        }
    }
    MPI_Comm_free(&c);
    free(out), free(in);
}

static void big(int reps, int mib)
{
    const size_t n = (size_t)mib << 20;
    char *out = buffer(n), *in = buffer(n);
    for (int i = 0; i < reps; i++) {
        MPI_Request r;
        MPI_Irecv(in, (int)n, MPI_BYTE, rank, i, MPI_COMM_WORLD, &r);
        MPI_Send(out, (int)n, MPI_BYTE, rank, i, MPI_COMM_WORLD);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
    free(out), free(in);
}

static void freedcomm(int reps, int size)
{
    if (nprocs % 2) die("freedcomm needs an even number of ranks");
    char *out = buffer((size_t)size + (size_t)nprocs), *in = buffer((size_t)size + (size_t)nprocs + 8);
    for (int i = 0; i < reps; i++) {
        MPI_Comm d, e[4];
        MPI_Comm_split(MPI_COMM_WORLD, rank / 2, -rank, &d);
        int cd;
        MPI_Comm_rank(d, &cd);
        MPI_Request r[2];
        MPI_Status st[2];
        MPI_Irecv(in, size + nprocs + 8, MPI_BYTE, MPI_ANY_SOURCE, i, d, &r[0]);
        MPI_Isend(out, size + rank, MPI_BYTE, cd ^ 1, i, d, &r[1]);
        MPI_Comm_free(&d); /* pending operations complete normally (MPI standard, MPI_Comm_free) */
        for (int k = 0; k < 4; k++) MPI_Comm_split(MPI_COMM_WORLD, 0, rank, &e[k]);
        MPI_Waitall(2, r, st);
        check_count(&st[0], MPI_BYTE, size + (rank ^ 1));
        if (st[0].MPI_SOURCE != (cd ^ 1)) die("freedcomm: unexpected source");
        for (int k = 0; k < 4; k++) MPI_Comm_free(&e[k]);
    }
    free(out), free(in);
}

static void sizes(int n, char **list)
{
    if (nprocs != 2) die("sizes needs 2 ranks");
    int max = 0;
    for (int i = 0; i < n; i++)
        if (atoi(list[i]) > max) max = atoi(list[i]);
    char *b = buffer((size_t)max + 1);
    for (int i = 0; i < n; i++) {
        const int s = atoi(list[i]);
        if (rank == 0) {
            MPI_Send(b, s, MPI_BYTE, 1, i, MPI_COMM_WORLD);
        } else {
            MPI_Status st;
            MPI_Recv(b, max + 1, MPI_BYTE, 0, i, MPI_COMM_WORLD, &st);
            check_count(&st, MPI_BYTE, s);
        }
    }
    free(b);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    const char *phase = argc > 1 ? argv[1] : "";
    if (strcmp(phase, "blocking") == 0) blocking(arg(argc, argv, 2), arg(argc, argv, 3));
    else if (strcmp(phase, "wildcard") == 0) wildcard(arg(argc, argv, 2), arg(argc, argv, 3));
    else if (strcmp(phase, "nb") == 0 && argc > 2) nonblocking(argv[2], arg(argc, argv, 3), arg(argc, argv, 4));
    else if (strcmp(phase, "sendrecv") == 0) sendrecv(arg(argc, argv, 2), arg(argc, argv, 3));
    else if (strcmp(phase, "persistent") == 0) persistent(arg(argc, argv, 2), arg(argc, argv, 3));
    else if (strcmp(phase, "datatype") == 0) datatype(arg(argc, argv, 2), arg(argc, argv, 3), arg(argc, argv, 4));
    else if (strcmp(phase, "procnull") == 0) procnull(arg(argc, argv, 2), arg(argc, argv, 3));
    else if (strcmp(phase, "split") == 0) split(arg(argc, argv, 2), arg(argc, argv, 3));
    else if (strcmp(phase, "sizes") == 0) sizes(argc - 2, argv + 2);
    else if (strcmp(phase, "big") == 0) big(arg(argc, argv, 2), arg(argc, argv, 3));
    else if (strcmp(phase, "freedcomm") == 0) freedcomm(arg(argc, argv, 2), arg(argc, argv, 3));
    else if (strcmp(phase, "predefined") == 0) predefined(arg(argc, argv, 2));
    else die("unknown phase (blocking|wildcard|nb|sendrecv|persistent|datatype|procnull|split|sizes|big|freedcomm|predefined)");
    fflush(stdout);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("traffic_p2p %s: done\n", phase);
    MPI_Finalize();
    return 0;
}
