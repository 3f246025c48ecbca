/* imbalance: a known, injected load imbalance with a work counter and an efficiency metric, for
 * `mpilens imbalance` (the metric-driven imbalance of seeds/000, chapter 4).
 *
 * Usage: imbalance [STEPS [UNIT_US [HEAVY [SLOW_RANK SLOW_EFF]]]]
 *        (defaults: 10 steps, 2000 us, HEAVY = the last rank, no slow rank)
 *
 * Each step has two regions:
 *   "force" rank r does w(r) units of work: 2 on rank HEAVY, 1 on the others. It adds
 *           1000 * w(r) to the user counter "atoms" (its work), sets the counter "efficiency" to
 *           e(r) (SLOW_EFF on rank SLOW_RANK, 1 elsewhere: how well the rank uses its hardware, the
 *           seed's SM x warp efficiency), and computes (sleeps) w(r) * UNIT_US / e(r) microseconds:
 *           an inefficient rank takes longer for the same work.
 *   "sync"  one MPI_Sendrecv of 1 KiB around a ring and one MPI_Allreduce: the ranks wait there
 *           for the slowest one.
 * So per rank, time outside MPI in "force" is w(r) * UNIT_US / e(r) per step, and the efficiency-
 * adjusted time (time * e(r)) is w(r) * UNIT_US, proportional to "atoms". With P ranks and no slow
 * rank, the imbalance (max - mean) / mean of the force time is (P - 1) / (P + 1) and rank HEAVY takes
 * twice as long as the others (+100 %). Rank 0 prints "imbalance: P ranks, heavy rank H", and each
 * rank "imbalance: rank R force S": the seconds it measured itself, with its own clock, between the
 * start and the end of its "force" work (inside the region, so the region's time is at least that).
 * A sleep ends when the kernel wakes the rank, later on a busy machine: the tests take the time the
 * rank slept from here, and the construction only as the least it can be. */
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
    while (nanosleep(&ts, &ts) != 0) {
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int steps = argc > 1 ? atoi(argv[1]) : 10;
    const long unit_us = argc > 2 ? atol(argv[2]) : 2000;
    const int heavy = argc > 3 ? atoi(argv[3]) : size - 1;
    const int slow = argc > 5 ? atoi(argv[4]) : -1;
    const double slow_eff = argc > 5 ? atof(argv[5]) : 1.0;
    if (slow_eff <= 0.0 || slow_eff > 1.0) {
        if (rank == 0) fprintf(stderr, "imbalance: SLOW_EFF must be in (0, 1]\n");
        MPI_Finalize();
        return 2;
    }

    const int work = rank == heavy ? 2 : 1;
    const double eff = rank == slow ? slow_eff : 1.0;
    char out[1024] = {0}, in[1024];
    double energy = 0.0, total = 0.0, force_s = 0.0;
    for (int step = 0; step < steps; step++) {
        mpilens_region_begin("force");
        const double t0 = now_s();
        mpilens_counter_add("atoms", 1000.0 * work);
        mpilens_counter_set("efficiency", eff);
        sleep_us((long)(work * unit_us / eff));
        energy += work;
        force_s += now_s() - t0;
        mpilens_region_end("force");

        mpilens_region_begin("sync");
        MPI_Sendrecv(out, sizeof out, MPI_CHAR, (rank + 1) % size, 0, in, sizeof in, MPI_CHAR,
                     (rank + size - 1) % size, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Allreduce(&energy, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        mpilens_region_end("sync");
    }
    if (rank == 0) printf("imbalance: %d ranks, heavy rank %d, total work %.0f\n", size, heavy, total);
    printf("imbalance: rank %d force %.9f\n", rank, force_s);
    MPI_Finalize();
    return 0;
}
