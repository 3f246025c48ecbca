/* pcontrol_threads: MPI_Pcontrol(2) under MPI_THREAD_MULTIPLE, for tests/test_regions_pcontrol.py.
 * Each rank runs NWORKERS pthreads; worker w (0-based):
 *
 *   phase A: 200*(w+1) MPI_Comm_size calls, then it waits (barrier) while the main thread reads
 *            its resident memory, calls MPI_Pcontrol(2) and reads it again: the workers' old
 *            statistics must be dropped without being written (or committed to memory) by the
 *            main thread
 *   phase B: C MPI_Type_size calls (argument, default 400000), publishing after each how many it
 *            made; when every worker has made at least C/2, the main thread notes their progress,
 *            calls MPI_Pcontrol(2) while they go on, and notes it again. A call that began before
 *            the reset is dropped, one that began after it is counted: worker w's counted calls
 *            are between C - (after_w + 1) and C - before_w
 *   phase C: 100*(w+1) MPI_Comm_rank calls (all counted: no reset after them)
 *
 * The main thread makes its own MPI_Comm_rank and MPI_Comm_size calls before phase A only, then
 * prints "pcontrol_threads: type_size between LO and HI", "pcontrol_threads: rss_kb BEFORE AFTER
 * END" (resident memory before and after the first MPI_Pcontrol(2), and after phase C), and "ok".
 * If the MPI does not provide MPI_THREAD_MULTIPLE it prints "... not provided" and exits 0. */
#define _POSIX_C_SOURCE 200809L /* pthread_barrier_t under -std=c11 */
#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define NWORKERS 3

static long calls_b = 400000;
static long progress[NWORKERS];
static pthread_barrier_t barrier;

static long rss_kb(void)
{
    long size = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f == NULL) return -1;
    if (fscanf(f, "%ld %ld", &size, &resident) != 2) resident = -1;
    fclose(f);
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

static void *worker(void *arg)
{
    const int w = (int)(long)arg;
    int n;
    for (int i = 0; i < 200 * (w + 1); i++) MPI_Comm_size(MPI_COMM_WORLD, &n);
    pthread_barrier_wait(&barrier); /* phase A done */
    pthread_barrier_wait(&barrier); /* the main thread has reset */
    for (long i = 0; i < calls_b; i++) {
        MPI_Type_size(MPI_INT, &n);
        __atomic_store_n(&progress[w], i + 1, __ATOMIC_RELEASE);
    }
    pthread_barrier_wait(&barrier); /* phase B done */
    for (int i = 0; i < 100 * (w + 1); i++) MPI_Comm_rank(MPI_COMM_WORLD, &n);
    pthread_barrier_wait(&barrier); /* phase C done */
    return NULL;
}

int main(int argc, char **argv)
{
    int provided, rank, size;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (provided < MPI_THREAD_MULTIPLE) {
        if (rank == 0) printf("pcontrol_threads: MPI_THREAD_MULTIPLE not provided (level %d)\n", provided);
        MPI_Finalize();
        return 0;
    }
    if (argc > 1) calls_b = atol(argv[1]);
    pthread_barrier_init(&barrier, NULL, NWORKERS + 1);
    pthread_t th[NWORKERS];
    for (long w = 0; w < NWORKERS; w++) pthread_create(&th[w], NULL, worker, (void *)w);

    pthread_barrier_wait(&barrier); /* phase A done: the workers wait */
    const long before = rss_kb();
    MPI_Pcontrol(2);
    const long after = rss_kb();
    pthread_barrier_wait(&barrier);

    long seen_before[NWORKERS], seen_after[NWORKERS];
    for (int w = 0; w < NWORKERS; w++)
        while (__atomic_load_n(&progress[w], __ATOMIC_ACQUIRE) < calls_b / 2) sched_yield();
    for (int w = 0; w < NWORKERS; w++) seen_before[w] = __atomic_load_n(&progress[w], __ATOMIC_ACQUIRE);
    MPI_Pcontrol(2);
    for (int w = 0; w < NWORKERS; w++) seen_after[w] = __atomic_load_n(&progress[w], __ATOMIC_ACQUIRE);
    pthread_barrier_wait(&barrier); /* phase B done */
    pthread_barrier_wait(&barrier); /* phase C done */
    const long end = rss_kb();
    for (int w = 0; w < NWORKERS; w++) pthread_join(th[w], NULL);

    long lo = 0, hi = 0;
    for (int w = 0; w < NWORKERS; w++) {
        lo += calls_b - (seen_after[w] + 1 < calls_b ? seen_after[w] + 1 : calls_b);
        hi += calls_b - seen_before[w];
    }
    printf("pcontrol_threads: rank %d type_size between %ld and %ld\n", rank, lo, hi);
    printf("pcontrol_threads: rank %d rss_kb %ld %ld %ld\n", rank, before, after, end);
    fflush(stdout);
    MPI_Finalize();
    if (rank == 0) printf("pcontrol_threads: ok\n");
    return 0;
}
