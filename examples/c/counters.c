/* counters: user counters and compute intervals with known values.
 * Each rank r does ITERS steps; in step i (region "step") it adds (r + 1) to counter "cells",
 * sets counter "efficiency" to 1 / (r + 1) + i (the last value is 1/(r+1) + ITERS - 1), sleeps
 * (r + 1) * SLEEP_US microseconds, then calls MPI_Barrier. Outside any region it adds 0.5 to
 * "setup" once. Intervals: ITERS barriers, each preceded by about (r + 1) * SLEEP_US of compute.
 * Usage: counters [ITERS [SLEEP_US]] (defaults 5, 2000). */
#include <mpi.h>
#include <mpilens.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

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
    for (int i = 0; i < iters; i++) {
        mpilens_region_begin("step");
        mpilens_counter_add("cells", rank + 1);
        mpilens_counter_set("efficiency", 1.0 / (rank + 1) + i);
        sleep_us((rank + 1) * sleep);
        MPI_Barrier(MPI_COMM_WORLD);
        mpilens_region_end("step");
    }
    if (rank == 0) printf("counters: %d steps\n", iters);
    MPI_Finalize();
    return 0;
}
