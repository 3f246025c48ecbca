/* papi_kernel: compute kernels whose PAPI counts are known, in regions of two sizes, for the
 * attribution checks of papi mode (tests/test_papi.py, docs/papi.md).
 *
 * Usage: papi_kernel [ITERS [PAGES [MODE [FILE]]]]   (defaults: 20000000 iterations, 256 pages, "both")
 *
 * Regions, each split in two halves by an MPI_Allreduce (so each has two compute phases):
 *   "loop_small"  ITERS iterations of a fixed integer loop (the same instructions every iteration)
 *   "loop_large"  4 * ITERS iterations of the same loop
 *   "touch_small" writes one byte to each of PAGES fresh pages (one page fault each)
 *   "touch_large" the same on 4 * PAGES fresh pages
 * So loop_large / loop_small is 4 in instructions and about 4 in CPU time, and touch_large /
 * touch_small is 4 in page faults. Each rank prints the CPU time and the wall time of its two loop
 * regions' kernels ("papi_kernel: rank R region NAME cpu_ns N wall_ns W"), what this machine gave
 * them. The pages are mapped
 * with transparent huge pages off, so each is a fault.
 * MODE "work", "slow" or "oversub" (2 ranks or more) runs only the imbalance kernel instead, in
 * region "work": rank 1 runs 2 * ITERS iterations, the others ITERS ("work": more work on rank 1),
 * or every rank runs ITERS iterations but rank 1 gets a third of its CPU ("slow": the same work,
 * done slower). In "slow" rank 1 gives its CPU away after each slice of the loop for twice the time
 * the slice took, as when two other busy processes share its CPU, whatever else runs on the
 * machine; "oversub" really shares its CPU with spinning processes (a clear result on an idle
 * machine only: on a loaded one the scheduler slows the other ranks too). MODE "held" runs what
 * "both" runs, then (once every rank is done with them) every rank waits in an MPI_Barrier that
 * rank 0 enters only after sleeping for an hour, after it printed "papi_kernel: held" and created
 * FILE when given (a launcher may hold back the line; the file is there at once): a job to be
 * killed before MPI_Finalize
 * (tests/test_papi.py). Rank 0 prints "papi_kernel: done". */
#define _GNU_SOURCE
#include <mpi.h>
#include <mpilens.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t sink;

/* A loop the compiler keeps as it is: the asm barrier stops vectorization and folding. */
static void loop(long iters)
{
    uint64_t x = 1;
    for (long i = 0; i < iters; i++) {
        x = x * 6364136223846793005u + 1442695040888963407u;
        __asm__ volatile("" : "+r"(x));
    }
    sink += x;
}

static void touch(long pages)
{
    const long page = sysconf(_SC_PAGESIZE);
    if (pages <= 0) return;
    char *p = mmap(NULL, (size_t)(pages * page), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    madvise(p, (size_t)(pages * page), MADV_NOHUGEPAGE);
    for (long i = 0; i < pages; i++) p[i * page] = 1;
    munmap(p, (size_t)(pages * page));
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The loop with a third of the CPU: after each slice, off the CPU for twice its time. */
static void loop_third(long iters)
{
    const long slice = 200000;
    for (long done = 0; done < iters; done += slice) {
        const double t0 = now_s();
        loop(iters - done < slice ? iters - done : slice);
        const double off = 2 * (now_s() - t0);
        struct timespec ts = {(time_t)off, (long)((off - (double)(time_t)off) * 1e9)};
        while (nanosleep(&ts, &ts) != 0) {
        }
    }
}

/* A clock in ns: CLOCK_THREAD_CPUTIME_ID, the calling thread's CPU time (the scheduler's account of
 * it), or CLOCK_MONOTONIC, wall time. perf's task clock counts the same time on the CPU as the
 * thread's CPU time, and more on a virtual machine: with the kernel's paravirtual steal-time
 * accounting, time the host gave to another guest while this thread ran is left out of the thread's
 * CPU time but not out of the task clock, which is read from the scheduler clock. So the test bounds
 * papi mode's perf::TASK-CLOCK by the kernels' CPU time from below and their wall time from above. */
static int64_t clock_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The region, its kernel in two halves around an MPI_Allreduce. With print, the rank prints the CPU
 * and wall time its two halves took: "papi_kernel: rank R region NAME cpu_ns N wall_ns W". */
static void halves_timed(const char *region, void (*kernel)(long), long n, int print)
{
    double v = 1, s;
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    mpilens_region_begin(region);
    int64_t w0 = clock_ns(CLOCK_MONOTONIC), c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    kernel(n / 2);
    int64_t cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0, wall = clock_ns(CLOCK_MONOTONIC) - w0;
    MPI_Allreduce(&v, &s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    w0 = clock_ns(CLOCK_MONOTONIC);
    c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    kernel(n - n / 2);
    cpu += clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
    wall += clock_ns(CLOCK_MONOTONIC) - w0;
    mpilens_region_end(region);
    if (print)
        printf("papi_kernel: rank %d region %s cpu_ns %lld wall_ns %lld\n", rank, region, (long long)cpu,
               (long long)wall);
}

static void halves(const char *region, void (*kernel)(long), long n) { halves_timed(region, kernel, n, 0); }

/* "oversub" mode: rank 1's CPU is shared with HOGS spinning processes, each in its own session, so
 * the scheduler's per-session groups (autogroup) give them their own share of the CPU, as
 * another job's processes would have: rank 1 gets at most a ninth of its CPU while the others
 * compete only with what else runs on the machine. */
#define HOGS 8

static pid_t start_hog(int cpu)
{
    const pid_t pid = fork();
    if (pid == 0) {
        setsid();
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        sched_setaffinity(0, sizeof set, &set);
        for (;;) {
        }
    }
    return pid;
}

static void pin(pthread_t th, int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(th, sizeof set, &set);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const long iters = argc > 1 ? atol(argv[1]) : 20000000;
    const long pages = argc > 2 ? atol(argv[2]) : 256;
    const char *mode = argc > 3 ? argv[3] : "both";
    const int held = strcmp(mode, "held") == 0;
    if (strcmp(mode, "both") == 0 || held) {
        halves_timed("loop_small", loop, iters, 1);
        halves_timed("loop_large", loop, 4 * iters, 1);
        halves("touch_small", touch, pages);
        halves("touch_large", touch, 4 * pages);
        if (held) {
            MPI_Barrier(MPI_COMM_WORLD); /* every rank is done with its regions */
            if (rank == 0) {
                printf("papi_kernel: held\n");
                fflush(stdout);
                if (argc > 4) fclose(fopen(argv[4], "w"));
                sleep(3600);
            }
            MPI_Barrier(MPI_COMM_WORLD);
        }
    } else {
        const int slow = strcmp(mode, "oversub") == 0, third = strcmp(mode, "slow") == 0;
        pid_t hogs[HOGS] = {0};
        const long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        if (slow) {
            /* rank 1 and the spinning processes on the last CPU, the other ranks on the others */
            pin(pthread_self(), rank == 1 || ncpu == 1 ? (int)(ncpu - 1) : (int)(rank % (ncpu - 1)));
            if (rank == 1)
                for (int i = 0; i < HOGS; i++) hogs[i] = start_hog((int)(ncpu - 1));
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 1 && third)
            halves("work", loop_third, iters);
        else
            halves("work", loop, rank == 1 && strcmp(mode, "work") == 0 ? 2 * iters : iters);
        MPI_Barrier(MPI_COMM_WORLD);
        if (slow && rank == 1) {
            for (int i = 0; i < HOGS; i++)
                if (hogs[i] > 0) {
                    kill(hogs[i], SIGKILL);
                    waitpid(hogs[i], NULL, 0);
                }
        }
    }
    if (rank == 0) printf("papi_kernel: done\n");
    MPI_Finalize();
    return sink == 42; /* keeps the loop's result alive */
}
