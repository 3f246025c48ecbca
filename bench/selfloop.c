/* Single-rank loops for measuring the cost the wrappers add per MPI call, without a partner
 * process (and its noise): run it with and without LD_PRELOAD of the runtime, or under
 * `valgrind --tool=callgrind`, and compare.
 *
 *   selfloop send   [ITERS]  MPI_Irecv + MPI_Send of 8 B to self + MPI_Wait
 *   selfloop recv   [ITERS]  MPI_Isend of 8 B to self + MPI_Recv + MPI_Wait
 *   selfloop isend  [ITERS]  MPI_Irecv + MPI_Isend of 8 B to self + MPI_Wait (recv) + MPI_Wait (send)
 *   selfloop window [ITERS]  64 MPI_Irecv + 64 MPI_Isend of 8 B to self + one MPI_Waitall of 128
 *   selfloop alloc  [ITERS]  64 malloc (16 to 520 B) then 64 free, outside MPI calls: what an
 *                            application's allocations pay for an interposed malloc
 *   selfloop pieces [ITERS]  what the building blocks of the hot path cost here (no MPI traffic):
 *                            rdtsc, clock_gettime, PMPI_Type_size, PMPI_Get_count, a locked add,
 *                            a compare-and-swap, a call through the PLT (PMPI_Comm_rank)
 *
 * A third argument "multiple" runs the loop under MPI_THREAD_MULTIPLE (thread_level.h).
 * Prints ns per iteration (median of 11 batches); for window, also ns per message, for alloc ns
 * per malloc + free pair.
 * Must run as one rank (a singleton: no mpirun needed).
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <x86intrin.h>

#include "thread_level.h"

#define WINDOW 64
#define BATCHES 11

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

static char sbuf[WINDOW][8], rbuf[WINDOW][8];

__attribute__((noinline)) static void loop_send(long n)
{
    MPI_Request r;
    for (long i = 0; i < n; i++) {
        MPI_Irecv(rbuf[0], 8, MPI_BYTE, 0, 7, MPI_COMM_WORLD, &r);
        MPI_Send(sbuf[0], 8, MPI_BYTE, 0, 7, MPI_COMM_WORLD);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
}

__attribute__((noinline)) static void loop_recv(long n)
{
    MPI_Request r;
    for (long i = 0; i < n; i++) {
        MPI_Isend(sbuf[0], 8, MPI_BYTE, 0, 7, MPI_COMM_WORLD, &r);
        MPI_Recv(rbuf[0], 8, MPI_BYTE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
}

__attribute__((noinline)) static void loop_isend(long n)
{
    MPI_Request r[2];
    for (long i = 0; i < n; i++) {
        MPI_Irecv(rbuf[0], 8, MPI_BYTE, 0, 7, MPI_COMM_WORLD, &r[0]);
        MPI_Isend(sbuf[0], 8, MPI_BYTE, 0, 7, MPI_COMM_WORLD, &r[1]);
        MPI_Wait(&r[0], MPI_STATUS_IGNORE);
        MPI_Wait(&r[1], MPI_STATUS_IGNORE);
    }
}

__attribute__((noinline)) static void loop_window(long n)
{
    MPI_Request r[2 * WINDOW];
    for (long i = 0; i < n; i++) {
        for (int k = 0; k < WINDOW; k++) MPI_Irecv(rbuf[k], 8, MPI_BYTE, 0, 7, MPI_COMM_WORLD, &r[k]);
        for (int k = 0; k < WINDOW; k++) MPI_Isend(sbuf[k], 8, MPI_BYTE, 0, 7, MPI_COMM_WORLD, &r[WINDOW + k]);
        MPI_Waitall(2 * WINDOW, r, MPI_STATUSES_IGNORE);
    }
}

static volatile uint64_t sink;

__attribute__((noinline)) static void loop_alloc(long n)
{
    void *p[WINDOW];
    for (long i = 0; i < n; i++) {
        for (int k = 0; k < WINDOW; k++) {
            p[k] = malloc(16 + 8 * (size_t)k);
            *(volatile char *)p[k] = (char)k; /* used: the compiler may not drop the pair */
        }
        for (int k = 0; k < WINDOW; k++) free(p[k]);
    }
}

static void pieces(long n)
{
    MPI_Status st;
    MPI_Request r;
    MPI_Irecv(rbuf[0], 8, MPI_BYTE, 0, 9, MPI_COMM_WORLD, &r);
    MPI_Send(sbuf[0], 8, MPI_BYTE, 0, 9, MPI_COMM_WORLD);
    MPI_Wait(&r, &st);
    static const char *names[] = {"empty loop", "rdtsc", "clock_gettime(MONOTONIC)", "PMPI_Type_size(MPI_BYTE)",
                                  "PMPI_Get_count(status, MPI_BYTE)", "PMPI_Comm_rank (PLT call)",
                                  "lock xadd (atomic fetch_add)", "lock cmpxchg (atomic CAS)"};
    const int npieces = (int)(sizeof names / sizeof names[0]);
    uint64_t counter = 0;
    for (int p = 0; p < npieces; p++) {
        double t[BATCHES];
        for (int b = 0; b < BATCHES; b++) {
            const double t0 = MPI_Wtime();
            uint64_t acc = 0;
            for (long i = 0; i < n; i++) {
                switch (p) {
                case 0: acc += (uint64_t)i; __asm__ volatile("" ::: "memory"); break;
                case 1: acc += __rdtsc(); break;
                case 2: {
                    struct timespec ts;
                    clock_gettime(CLOCK_MONOTONIC, &ts);
                    acc += (uint64_t)ts.tv_nsec;
                    break;
                }
                case 3: {
                    int s;
                    PMPI_Type_size(MPI_BYTE, &s);
                    acc += (uint64_t)s;
                    break;
                }
                case 4: {
                    int c;
                    PMPI_Get_count(&st, MPI_BYTE, &c);
                    acc += (uint64_t)c;
                    break;
                }
                case 5: {
                    int rk;
                    PMPI_Comm_rank(MPI_COMM_WORLD, &rk);
                    acc += (uint64_t)rk;
                    break;
                }
                case 6: acc += __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED); break;
                case 7: {
                    uint64_t e = counter;
                    __atomic_compare_exchange_n(&counter, &e, e + 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
                    acc += e;
                    break;
                }
                }
            }
            sink = acc;
            t[b] = (MPI_Wtime() - t0) / (double)n * 1e9;
        }
        printf("pieces %-34s %7.2f ns\n", names[p], median(t, BATCHES));
    }
}

int main(int argc, char **argv)
{
    bench_init(&argc, &argv, argc > 3 ? argv[3] : NULL);
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 1 || argc < 2) {
        fprintf(stderr, "usage: selfloop send|recv|isend|window|alloc|pieces [ITERS [multiple]] (one rank)\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char *mode = argv[1];
    long n = argc > 2 ? atol(argv[2]) : 0;
    void (*fn)(long) = NULL;
    int per = 1;
    const char *unit = "message";
    if (strcmp(mode, "send") == 0) fn = loop_send, n = n ? n : 200000;
    else if (strcmp(mode, "recv") == 0) fn = loop_recv, n = n ? n : 200000;
    else if (strcmp(mode, "isend") == 0) fn = loop_isend, n = n ? n : 200000;
    else if (strcmp(mode, "window") == 0) fn = loop_window, n = n ? n : 3000, per = WINDOW;
    else if (strcmp(mode, "alloc") == 0) fn = loop_alloc, n = n ? n : 100000, per = WINDOW, unit = "pair";
    else if (strcmp(mode, "pieces") == 0) {
        pieces(n ? n : 1000000);
        MPI_Finalize();
        return 0;
    } else {
        fprintf(stderr, "selfloop: unknown mode %s\n", mode);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    fn(n / 10 + 1); /* warm-up */
    double t[BATCHES];
    for (int b = 0; b < BATCHES; b++) {
        const double t0 = MPI_Wtime();
        fn(n);
        t[b] = (MPI_Wtime() - t0) / (double)n * 1e9;
    }
    const double m = median(t, BATCHES);
    printf("selfloop %s ns_per_iter=%.1f ns_per_%s=%.2f iters=%ld\n", mode, m, unit, m / per, n);
    MPI_Finalize();
    return 0;
}
