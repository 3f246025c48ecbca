/* counters: user counters and compute intervals with known values.
 * Each rank r does ITERS steps; in step i (region "step") it adds (r + 1) to counter "cells",
 * sets counter "efficiency" to 1 / (r + 1) + i (the last value is 1/(r+1) + ITERS - 1), sleeps
 * (r + 1) * SLEEP_US microseconds, then calls MPI_Barrier. Outside any region it adds 0.5 to
 * "setup" once. Intervals: ITERS barriers, each preceded by about (r + 1) * SLEEP_US of compute.
 * Each rank then prints "counters: rank R step I compute S left T" for each step from the second
 * on: S, the seconds from the return of its previous MPI_Barrier to its call of this one, and T,
 * when that barrier returned (CLOCK_MONOTONIC, one clock for the ranks of a host), by its own clock
 * (a sleep ends when the kernel wakes the rank, later on a busy machine).
 * Usage: counters [ITERS [SLEEP_US]] (defaults 5, 2000). */
#include <mpi.h>
#include <mpilens.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const int iters = argc > 1 ? atoi(argv[1]) : 5;
    const long sleep = argc > 2 ? atol(argv[2]) : 2000;
    mpilens_counter_add("setup", 0.5);
    double *compute = calloc(iters > 0 ? (size_t)iters : 1, sizeof *compute);
    double *left = calloc(iters > 0 ? (size_t)iters : 1, sizeof *left); /* left[i]: barrier i returned */
    for (int i = 0; i < iters; i++) {
        mpilens_region_begin("step");
        mpilens_counter_add("cells", rank + 1);
        mpilens_counter_set("efficiency", 1.0 / (rank + 1) + i);
        sleep_us((rank + 1) * sleep);
        const double entered = now_s();
        MPI_Barrier(MPI_COMM_WORLD);
        left[i] = now_s();
        if (i > 0) compute[i] = entered - left[i - 1];
        mpilens_region_end("step");
    }
    if (rank == 0) printf("counters: %d steps\n", iters);
    for (int i = 1; i < iters; i++)
        printf("counters: rank %d step %d compute %.9f left %.9f\n", rank, i, compute[i], left[i - 1]);
    free(compute);
    free(left);
    MPI_Finalize();
    return 0;
}
