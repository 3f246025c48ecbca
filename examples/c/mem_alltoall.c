/* Alltoall (memnesia's workload): MPI_Alltoall over MPI_COMM_WORLD in a loop, the per-process
 * message size alternating between 2 KiB and 4 MiB, the buffers allocated before and freed after
 * every iteration. Usage: mem_alltoall [iterations (default 40)] */
#include <malloc.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    /* A fixed mmap threshold: glibc would otherwise raise it after the first free of a 4 MiB block
     * and keep the freed memory in the heap, and the allocate/free cycle would not show in the
     * process's residency at all. */
    mallopt(M_MMAP_THRESHOLD, 1 << 20);
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int iters = argc > 1 ? atoi(argv[1]) : 40;
    double check = 0;
    for (int i = 0; i < iters; i++) {
        const size_t per_peer = (i % 2 == 0 ? (size_t)2 << 10 : (size_t)4 << 20) / (size_t)size;
        const size_t total = per_peer * (size_t)size;
        char *send = malloc(total), *recv = malloc(total);
        /* touch both buffers here: with memset(recv, 0) the compiler may make malloc + memset a
         * calloc, whose fresh pages are then first touched inside MPI_Alltoall */
        memset(send, 1 + rank + i, total);
        memset(recv, 0xff, total);
        MPI_Alltoall(send, (int)per_peer, MPI_BYTE, recv, (int)per_peer, MPI_BYTE, MPI_COMM_WORLD);
        check += recv[total - 1];
        free(send);
        free(recv);
    }
    double sum = 0;
    MPI_Reduce(&check, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("mem_alltoall: %d iterations on %d ranks, check %.0f\n", iters, size, sum);
    MPI_Finalize();
    return 0;
}
