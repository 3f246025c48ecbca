/* coupled: a coupled MPI+OpenMP program with an MPI-everywhere phase A and a threaded phase B,
 * the situation QUO was made for (seed 001, chapter 3).
 *
 *   coupled MODE ITERATIONS ELEMENTS [WORK]
 *
 * ELEMENTS doubles are spread in blocks over the ranks; each iteration runs phase A (every rank
 * transforms its block, one thread) then phase B (the same amount of work, with OpenMP threads).
 *   static      static under-subscription: launch cores/threads ranks, every rank runs phase B on
 *               its own block with OMP_NUM_THREADS threads; in phase A cores stay idle
 *   quo         launch one rank per core; in phase B QUO_auto_distrib picks one rank per socket,
 *               the others send it their blocks and wait in QUO_barrier (sleeping) while it widens
 *               its binding to the socket (QUO_bind_push OBJ) and runs as many threads as it now
 *               has PUs; then the blocks go back
 *   mpibarrier  as quo, but the waiting ranks wait in MPI_Barrier (polling MPI), the naive way
 *
 * Rank 0 prints one line: mode, ranks, phase B threads, median seconds per iteration of phase A,
 * phase B (threaded compute only), the remap (gather + scatter), the total, the CPU seconds the
 * waiting ranks burnt per iteration, and a checksum of the data, which every mode must reproduce.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity */
#endif
#include <math.h>
#include <mpi.h>
#include <omp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "quo.h"

enum mode { STATIC, QUO, MPIBARRIER };

static int work = 200; /* transcendental evaluations per element and phase */

/* element-wise, so the result does not depend on who computes which element */
static double transform(double x, int phase)
{
    for (int k = 0; k < work; k++) x = phase ? cos(x) * 0.5 + 0.25 : sin(x) * 0.5 + 0.5;
    return x;
}

static double cpu_seconds(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_utime.tv_sec + u.ru_stime.tv_sec + 1e-6 * (u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

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

#define CHECK_QUO(call)                                                                 \
    do {                                                                                \
        int rc_ = (call);                                                               \
        if (rc_ != QUO_SUCCESS) {                                                       \
            fprintf(stderr, "coupled: %s failed: %d\n", #call, rc_);                    \
            MPI_Abort(MPI_COMM_WORLD, 1);                                               \
        }                                                                               \
    } while (0)

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, nranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (argc < 4) {
        if (rank == 0) fprintf(stderr, "usage: coupled static|quo|mpibarrier ITERATIONS ELEMENTS [WORK]\n");
        MPI_Finalize();
        return 2;
    }
    const enum mode mode = strcmp(argv[1], "static") == 0 ? STATIC : strcmp(argv[1], "quo") == 0 ? QUO : MPIBARRIER;
    const int iterations = atoi(argv[2]);
    const long elements = atol(argv[3]);
    if (argc > 4) work = atoi(argv[4]);

    /* my block; blocks differ by at most one element */
    const long first = elements * rank / nranks, mine = elements * (rank + 1) / nranks - first;
    double *data = malloc(sizeof(double) * (size_t)(mode == STATIC ? mine : elements));
    for (long i = 0; i < mine; i++) data[i] = (double)((first + i) % 1000) / 1000.0;

    QUO_context quo = NULL;
    MPI_Comm node = MPI_COMM_NULL;
    int selected = 1, qid = 0, nqids = 1;
    int *workers = NULL, nworkers = 0;
    if (mode != STATIC) {
        CHECK_QUO(QUO_create(&quo, MPI_COMM_WORLD));
        CHECK_QUO(QUO_get_mpi_comm_by_type(quo, QUO_OBJ_MACHINE, &node));
        CHECK_QUO(QUO_id(quo, &qid));
        CHECK_QUO(QUO_nqids(quo, &nqids));
        /* who works in phase B does not change between iterations: decide once */
        CHECK_QUO(QUO_auto_distrib(quo, QUO_OBJ_SOCKET, 1, &selected));
        int *flags = malloc(sizeof(int) * (size_t)nqids);
        MPI_Allgather(&selected, 1, MPI_INT, flags, 1, MPI_INT, node);
        workers = malloc(sizeof(int) * (size_t)nqids);
        for (int i = 0; i < nqids; i++)
            if (flags[i]) workers[nworkers++] = i;
        free(flags);
        if (nworkers == 0) {
            fprintf(stderr, "coupled: no rank selected on the node\n");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    /* node peers' block sizes, for the remap to and from the workers */
    long *peer_len = calloc((size_t)nqids, sizeof(long));
    if (mode != STATIC) MPI_Allgather(&mine, 1, MPI_LONG, peer_len, 1, MPI_LONG, node);
    const int my_worker = mode == STATIC ? 0 : workers[qid % nworkers];

    double *t_a = calloc((size_t)iterations, sizeof(double)), *t_b = calloc((size_t)iterations, sizeof(double)),
           *t_remap = calloc((size_t)iterations, sizeof(double)), *t_total = calloc((size_t)iterations, sizeof(double)),
           *c_wait = calloc((size_t)iterations, sizeof(double));
    int threads_b = omp_get_max_threads();

    for (int it = 0; it < iterations; it++) {
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        /* phase A: MPI everywhere, one thread per rank */
        for (long i = 0; i < mine; i++) data[i] = transform(data[i], 0);
        MPI_Barrier(MPI_COMM_WORLD);
        const double t1 = MPI_Wtime();
        double remap = 0.0, tb = 0.0, waited_cpu = 0.0;
        if (mode == STATIC) {
            const double s = MPI_Wtime();
#pragma omp parallel for schedule(static)
            for (long i = 0; i < mine; i++) data[i] = transform(data[i], 1);
            tb = MPI_Wtime() - s;
        } else if (selected) {
            /* gather the blocks of the ranks I serve behind mine */
            double s = MPI_Wtime();
            long have = mine;
            for (int p = 0; p < nqids; p++) {
                if (p == qid || workers[p % nworkers] != qid || peer_len[p] == 0) continue;
                MPI_Recv(data + have, (int)peer_len[p], MPI_DOUBLE, p, it, node, MPI_STATUS_IGNORE);
                have += peer_len[p];
            }
            remap += MPI_Wtime() - s;
            CHECK_QUO(QUO_bind_push(quo, QUO_BIND_PUSH_OBJ, QUO_OBJ_SOCKET, -1));
            cpu_set_t set;
            if (sched_getaffinity(0, sizeof set, &set) == 0) threads_b = CPU_COUNT(&set);
            s = MPI_Wtime();
#pragma omp parallel for schedule(static) num_threads(threads_b)
            for (long i = 0; i < have; i++) data[i] = transform(data[i], 1);
            tb = MPI_Wtime() - s;
            CHECK_QUO(QUO_bind_pop(quo));
            if (mode == QUO) CHECK_QUO(QUO_barrier(quo));
            else MPI_Barrier(node);
            s = MPI_Wtime();
            have = mine;
            for (int p = 0; p < nqids; p++) {
                if (p == qid || workers[p % nworkers] != qid || peer_len[p] == 0) continue;
                MPI_Send(data + have, (int)peer_len[p], MPI_DOUBLE, p, it, node);
                have += peer_len[p];
            }
            remap += MPI_Wtime() - s;
        } else {
            double s = MPI_Wtime();
            if (mine > 0) MPI_Send(data, (int)mine, MPI_DOUBLE, my_worker, it, node);
            remap += MPI_Wtime() - s;
            /* quiesced: sleep (QUO) or poll (MPI) while the worker's threads use my core */
            const double c0 = cpu_seconds();
            if (mode == QUO) CHECK_QUO(QUO_barrier(quo));
            else MPI_Barrier(node);
            waited_cpu = cpu_seconds() - c0;
            s = MPI_Wtime();
            if (mine > 0) MPI_Recv(data, (int)mine, MPI_DOUBLE, my_worker, it, node, MPI_STATUS_IGNORE);
            remap += MPI_Wtime() - s;
        }
        MPI_Barrier(MPI_COMM_WORLD);
        const double t2 = MPI_Wtime();
        /* rank 0's view, except: phase B compute from the workers, waiting CPU from the waiters */
        double v[3] = {remap, tb, waited_cpu}, mx[3];
        MPI_Reduce(v, mx, 3, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        t_a[it] = t1 - t0;
        t_remap[it] = mx[0];
        t_b[it] = mx[1];
        c_wait[it] = mx[2];
        t_total[it] = t2 - t0;
    }

    /* checksum of the whole data set, identical in every mode */
    double local = 0.0, sum = 0.0;
    for (long i = 0; i < mine; i++) local += data[i];
    MPI_Reduce(&local, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    int max_threads = threads_b, threads_out = 0;
    MPI_Reduce(&max_threads, &threads_out, 1, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("coupled mode=%s ranks=%d workers=%d threads=%d iterations=%d elements=%ld phaseA_s=%.6f phaseB_s=%.6f "
               "remap_s=%.6f total_s=%.6f wait_cpu_s=%.6f checksum=%.9f\n",
               argv[1], nranks, mode == STATIC ? nranks : nworkers, threads_out, iterations, elements,
               median(t_a, iterations), median(t_b, iterations), median(t_remap, iterations),
               median(t_total, iterations), median(c_wait, iterations), sum);

    if (node != MPI_COMM_NULL) MPI_Comm_free(&node);
    if (quo) CHECK_QUO(QUO_free(quo));
    free(data), free(workers), free(peer_len), free(t_a), free(t_b), free(t_remap), free(t_total), free(c_wait);
    MPI_Finalize();
    return 0;
}
