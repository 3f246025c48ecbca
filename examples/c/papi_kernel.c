/* papi_kernel: compute kernels whose PAPI counts are known, in regions of two sizes, for the
 * attribution checks of papi mode (tests/test_papi.py, docs/papi.md).
 *
 * Usage: papi_kernel [ITERS [PAGES [MODE]]]   (defaults: 20000000 iterations, 256 pages, "both")
 *
 * Regions, each split in two halves by an MPI_Allreduce (so each has two compute phases):
 *   "loop_small"  ITERS iterations of a fixed integer loop (the same instructions every iteration)
 *   "loop_large"  4 * ITERS iterations of the same loop
 *   "touch_small" writes one byte to each of PAGES fresh pages (one page fault each)
 *   "touch_large" the same on 4 * PAGES fresh pages
 * So loop_large / loop_small is 4 in instructions and in CPU time, and touch_large / touch_small is
 * 4 in page faults. The pages are mapped with transparent huge pages off, so each is a fault.
 * MODE "work" or "slow" (2 ranks or more) runs only the imbalance kernel instead, in region
 * "work": rank 1 runs 2 * ITERS iterations, the others ITERS ("work": more work on rank 1), or
 * every rank runs ITERS iterations but rank 1 shares its CPU with two spinning threads ("slow": the
 * same work, done slower). Rank 0 prints "papi_kernel: done". */
#define _GNU_SOURCE
#include <mpi.h>
#include <mpilens.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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
    char *p = mmap(NULL, (size_t)(pages * page), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    madvise(p, (size_t)(pages * page), MADV_NOHUGEPAGE);
    for (long i = 0; i < pages; i++) p[i * page] = 1;
    munmap(p, (size_t)(pages * page));
}

static void halves(const char *region, void (*kernel)(long), long n)
{
    double v = 1, s;
    mpilens_region_begin(region);
    kernel(n / 2);
    MPI_Allreduce(&v, &s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    kernel(n - n / 2);
    mpilens_region_end(region);
}

#define HOGS 2 /* spinning threads beside rank 1 in "slow" mode: it gets a third of its CPU */
static volatile int hog_stop;

static void *hog(void *arg)
{
    (void)arg;
    while (!hog_stop) {
    }
    return NULL;
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
    if (strcmp(mode, "both") == 0) {
        halves("loop_small", loop, iters);
        halves("loop_large", loop, 4 * iters);
        halves("touch_small", touch, pages);
        halves("touch_large", touch, 4 * pages);
    } else {
        const int slow = strcmp(mode, "slow") == 0;
        pthread_t th[HOGS];
        const long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        if (slow) {
            /* each rank on its own CPU; rank 1 shares its CPU with the spinning threads */
            pin(pthread_self(), (int)(rank % ncpu));
            if (rank == 1)
                for (int i = 0; i < HOGS; i++) {
                    pthread_create(&th[i], NULL, hog, NULL);
                    pin(th[i], (int)(rank % ncpu));
                }
        }
        MPI_Barrier(MPI_COMM_WORLD);
        halves("work", loop, rank == 1 && !slow ? 2 * iters : iters);
        MPI_Barrier(MPI_COMM_WORLD);
        if (slow && rank == 1) {
            hog_stop = 1;
            for (int i = 0; i < HOGS; i++) pthread_join(th[i], NULL);
        }
    }
    if (rank == 0) printf("papi_kernel: done\n");
    MPI_Finalize();
    return sink == 42; /* keeps the loop's result alive */
}
