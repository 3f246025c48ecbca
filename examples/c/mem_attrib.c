/* Memory whose owner is known, for checking memory attribution (tests/test_memory.py).
 *   app      100 MiB allocated and touched by the application between two MPI calls
 *   allocmem 32 MiB from MPI_Alloc_mem (the MPI library's), touched, then MPI_Free_mem
 *   bsend    a 16 MiB buffer of the application attached with MPI_Buffer_attach
 *   threads  while the main thread waits in MPI_Recv (rank 0) a second thread allocates and touches
 *            64 MiB, then tells rank 1 to send what ends that MPI_Recv: application memory, though
 *            an MPI call is under way in the process
 * Usage: mem_attrib [app|allocmem|bsend|threads]... (default: all four); each step is a region. */
#define _DEFAULT_SOURCE
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpilens.h"

#define MiB ((size_t)1 << 20)

static char *volatile keep[4];

/* Rank 0's second thread: the 64 MiB, then the word to rank 1 that releases the main thread's
 * MPI_Recv, so the whole allocation falls inside that call however slow the machine is. */
static void *helper(void *arg)
{
    (void)arg;
    usleep(200000); /* the main thread is inside MPI_Recv by now */
    char *p = malloc(64 * MiB);
    memset(p, 3, 64 * MiB);
    keep[3] = p;
    int done = 1;
    MPI_Send(&done, 1, MPI_INT, 1, 8, MPI_COMM_WORLD);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int a = 1; a < argc || a == 1; a++) {
        const char *step = argc > 1 ? argv[a] : NULL;
        int all = step == NULL;
        if (all || strcmp(step, "app") == 0) {
            mpilens_region_begin("app");
            MPI_Barrier(MPI_COMM_WORLD);
            char *p = malloc(100 * MiB);
            memset(p, 1, 100 * MiB);
            keep[0] = p;
            usleep(100000); /* a few residency samples with it */
            MPI_Barrier(MPI_COMM_WORLD);
            mpilens_region_end("app");
        }
        if (all || strcmp(step, "allocmem") == 0) {
            mpilens_region_begin("allocmem");
            void *p = NULL;
            MPI_Alloc_mem((MPI_Aint)(32 * MiB), MPI_INFO_NULL, &p);
            memset(p, 2, 32 * MiB);
            usleep(100000);
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_Free_mem(p);
            mpilens_region_end("allocmem");
        }
        if (all || strcmp(step, "bsend") == 0) {
            mpilens_region_begin("bsend");
            const int n = (int)(16 * MiB);
            char *buf = malloc((size_t)n);
            memset(buf, 4, (size_t)n);
            MPI_Buffer_attach(buf, n);
            int x = rank;
            MPI_Bsend(&x, 1, MPI_INT, (rank + 1) % size, 7, MPI_COMM_WORLD);
            MPI_Recv(&x, 1, MPI_INT, (rank + size - 1) % size, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            int got;
            void *back;
            MPI_Buffer_detach(&back, &got);
            keep[2] = buf;
            MPI_Barrier(MPI_COMM_WORLD);
            mpilens_region_end("bsend");
        }
        if (all || strcmp(step, "threads") == 0) {
            mpilens_region_begin("threads");
            int x = 0;
            if (rank == 0 && size > 1) {
                pthread_t t;
                pthread_create(&t, NULL, helper, NULL);
                MPI_Recv(&x, 1, MPI_INT, 1, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                pthread_join(t, NULL);
            } else if (rank == 1) { /* rank 0 waits inside MPI_Recv until its thread is done */
                MPI_Recv(&x, 1, MPI_INT, 0, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(&x, 1, MPI_INT, 0, 9, MPI_COMM_WORLD);
            }
            MPI_Barrier(MPI_COMM_WORLD);
            mpilens_region_end("threads");
        }
        if (all) break;
    }
    if (rank == 0) printf("mem_attrib: done on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
