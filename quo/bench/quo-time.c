/* quo-time: QUOBench-style latencies of QUO operations. Every rank runs each operation REPS times
 * (100 by default), timing each call with MPI_Wtime; rank 0 prints one JSON line per operation with
 * the median, mean and 90th percentile over all calls of all ranks, in microseconds.
 * Collective operations (create, free, auto_distrib, barrier) run on all ranks at once; the ranks
 * are aligned with MPI_Barrier before each call. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quo.h"

static int rank, nranks, reps = 100;

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* gather every rank's samples and print the statistics of the lot */
static void report(const char *op, double *samples)
{
    double *all = rank == 0 ? malloc(sizeof(double) * (size_t)(reps * nranks)) : NULL;
    MPI_Gather(samples, reps, MPI_DOUBLE, all, reps, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rank != 0) return;
    const int n = reps * nranks;
    qsort(all, (size_t)n, sizeof *all, cmp_double);
    double mean = 0;
    for (int i = 0; i < n; i++) mean += all[i];
    mean /= n;
    const double median = n % 2 ? all[n / 2] : 0.5 * (all[n / 2 - 1] + all[n / 2]);
    printf("{\"op\": \"%s\", \"np\": %d, \"reps\": %d, \"median_us\": %.3f, \"mean_us\": %.3f, \"p90_us\": %.3f}\n", op,
           nranks, reps, 1e6 * median, 1e6 * mean, 1e6 * all[(int)(0.9 * (n - 1))]);
    fflush(stdout);
    free(all);
}

#define TIME(op, call, collective)                                                   \
    do {                                                                             \
        for (int r_ = 0; r_ < reps; r_++) {                                          \
            if (collective) MPI_Barrier(MPI_COMM_WORLD);                             \
            const double t_ = MPI_Wtime();                                           \
            if ((call) != QUO_SUCCESS) fprintf(stderr, "quo-time: %s failed\n", op); \
            s[r_] = MPI_Wtime() - t_;                                                \
        }                                                                            \
        report(op, s);                                                               \
    } while (0)

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (argc > 1) reps = atoi(argv[1]);
    double *s = malloc(sizeof(double) * (size_t)reps), *s_free = malloc(sizeof(double) * (size_t)reps);

    QUO_context q = NULL;
    /* create and free alternate; each is timed on its own */
    for (int r = 0; r < reps; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t = MPI_Wtime();
        QUO_create(&q, MPI_COMM_WORLD);
        s[r] = MPI_Wtime() - t;
        MPI_Barrier(MPI_COMM_WORLD);
        t = MPI_Wtime();
        QUO_free(q);
        s_free[r] = MPI_Wtime() - t;
    }
    report("QUO_create", s);
    report("QUO_free", s_free);

    if (QUO_create(&q, MPI_COMM_WORLD) != QUO_SUCCESS) MPI_Abort(MPI_COMM_WORLD, 1);
    int n = 0, sel = 0, nq = 0, *qids = NULL;
    char *str = NULL;
    TIME("QUO_npus", QUO_npus(q, &n), 0);
    TIME("QUO_nobjs_in_type_by_type", QUO_nobjs_in_type_by_type(q, QUO_OBJ_SOCKET, 0, QUO_OBJ_CORE, &n), 0);
    TIME("QUO_cpuset_in_type", QUO_cpuset_in_type(q, QUO_OBJ_SOCKET, 0, &n), 0);
    TIME("QUO_qids_in_type", (QUO_qids_in_type(q, QUO_OBJ_MACHINE, 0, &nq, &qids) + (free(qids), 0)), 0);
    TIME("QUO_stringify_cbind", (QUO_stringify_cbind(q, &str) + (free(str), 0)), 0);
    /* push and pop alternate so the stack never fills */
    double *s_pop = malloc(sizeof(double) * (size_t)reps);
    for (int r = 0; r < reps; r++) {
        double t = MPI_Wtime();
        QUO_bind_push(q, QUO_BIND_PUSH_OBJ, QUO_OBJ_SOCKET, -1);
        s[r] = MPI_Wtime() - t;
        t = MPI_Wtime();
        QUO_bind_pop(q);
        s_pop[r] = MPI_Wtime() - t;
    }
    report("QUO_bind_push", s);
    report("QUO_bind_pop", s_pop);
    TIME("QUO_auto_distrib", QUO_auto_distrib(q, QUO_OBJ_SOCKET, 1, &sel), 1);
    TIME("QUO_barrier", QUO_barrier(q), 1);
    MPI_Comm node;
    QUO_get_mpi_comm_by_type(q, QUO_OBJ_MACHINE, &node);
    TIME("MPI_Barrier(node)", (MPI_Barrier(node) == MPI_SUCCESS ? QUO_SUCCESS : QUO_ERR), 1);
    MPI_Comm_free(&node);
    QUO_free(q);
    free(s), free(s_free), free(s_pop);
    MPI_Finalize();
    return 0;
}
