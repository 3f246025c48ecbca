/* Call sites: MPI calls on known lines, for the call-site tests (tests/test_callsites.py).
 *
 * Every measured call ends with a marker comment `site:NAME`: the tests find the line of each
 * site from these markers, never from numbers. The program also calls into a shared library
 * (lib/sites.c, built as PIC) that it opens with dlopen, so its code is wherever the loader put
 * it, and a three-level call path (outer -> middle -> inner) for MPILENS_CALLSITE_DEPTH=3.
 * The MPI calls are never in tail position: a tail call has no return address in its caller.
 *
 * usage: callsites [iterations] [many]   (default 20; "many": also 80 more call sites, all made
 * from the one line marked site:many, each call from its own instruction) */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double buf[1024];

__attribute__((noinline)) static int inner(int n)
{
    double x = n, y = 0;
    int rc = MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); /* site:inner */
    return rc + (int)y;
}

__attribute__((noinline)) static int middle(int n)
{
    int v = inner(n); /* site:middle */
    return v + 1;
}

__attribute__((noinline)) static int outer(int n)
{
    int v = middle(n); /* site:outer */
    return v + 2;
}

/* 80 calls of MPI_Comm_rank, each from its own return address: 80 call sites */
#define ML_C1 MPI_Comm_rank(MPI_COMM_WORLD, &r); s += r;
#define ML_C10 ML_C1 ML_C1 ML_C1 ML_C1 ML_C1 ML_C1 ML_C1 ML_C1 ML_C1 ML_C1
__attribute__((noinline)) static int many_sites(void)
{
    int r, s = 0;
    ML_C10 ML_C10 ML_C10 ML_C10 ML_C10 ML_C10 ML_C10 ML_C10 /* site:many */
    return s;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int iters = argc > 1 ? atoi(argv[1]) : 20;
    const int right = (rank + 1) % size, left = (rank + size - 1) % size;

    /* the shared library, from the folder of this program */
    char path[4096];
    snprintf(path, sizeof path, "%s", argv[0]);
    char *slash = strrchr(path, '/');
    snprintf(slash ? slash + 1 : path, sizeof path - (size_t)(slash ? slash + 1 - path : 0), "libsites.so");
    void *lib = dlopen(path, RTLD_NOW);
    if (lib == NULL) {
        fprintf(stderr, "callsites: %s\n", dlerror());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int (*lib_ring)(int) = (int (*)(int))dlsym(lib, "sites_lib_ring");

    long total = 0;
    for (int i = 0; i < iters; i++) {
        MPI_Request req;
        MPI_Isend(buf, 256, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &req); /* site:isend */
        MPI_Recv(buf + 512, 256, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* site:recv */
        MPI_Wait(&req, MPI_STATUS_IGNORE); /* site:wait */
        MPI_Barrier(MPI_COMM_WORLD); /* site:barrier */
        total += outer(i);
        total += lib_ring(i);
        if (argc > 2 && strcmp(argv[2], "many") == 0) total += many_sites();
    }
    /* the same function from two lines: two sites */
    MPI_Barrier(MPI_COMM_WORLD); /* site:barrier2 */
    if (rank == 0) printf("callsites: %d ranks, %d iterations, checksum %ld\n", size, iters, total);
    MPI_Finalize();
    return 0;
}
