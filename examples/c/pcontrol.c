/* pcontrol: nested regions and MPI_Pcontrol with known calls, for tests/test_regions_pcontrol.py.
 * Rings go from rank r to r+1 (token order: rank 0 sends first), with MPI_Send/MPI_Recv.
 *
 * Usage:
 *   pcontrol regions ITERS SIZE
 *       ITERS times:
 *         region "step":      1 MPI_Barrier
 *           region "halo":    1 MPI_Sendrecv of SIZE bytes to r+1 (from r-1)
 *             region "inner": 1 MPI_Allreduce of one double
 *           region "even" (only when the iteration number is even): 1 MPI_Bcast of 4 ints from 0
 *       then region "inner" (top level, not the one inside step/halo): 2 MPI_Allreduce of one double
 *       then region "post": MPI_Irecv of SIZE bytes from r-1 + MPI_Isend to r+1, and region
 *       "complete": the MPI_Waitall that completes both
 *       then region "solo", entered r+1 times by rank r: 1 MPI_Comm_size each time
 *       then 1 MPI_Barrier outside any region
 *   pcontrol onoff A B C
 *       A x (MPI_Barrier + ring of 100 bytes); MPI_Pcontrol(0);
 *       B x (MPI_Bcast of 4 ints + ring of 200 bytes + MPI_Isend/MPI_Irecv of 50 bytes to r+1 /
 *            from r-1 + MPI_Waitall); MPI_Pcontrol(1);
 *       C x (MPI_Allreduce of one double + ring of 300 bytes)
 *   pcontrol reset A C
 *       region "pre": A x (MPI_Barrier + ring of 100 bytes); MPI_Pcontrol(2) (outside regions);
 *       region "post": C x (MPI_Allreduce of one double + ring of 300 bytes)
 *   pcontrol snapshot A C
 *       A x (MPI_Barrier + ring of 100 bytes); MPI_Pcontrol(3);
 *       C x (MPI_Allreduce of one double + ring of 300 bytes); MPI_Pcontrol(4);
 *       1 MPI_Barrier; rank 0 alone then calls MPI_Pcontrol(3) a third time
 *   pcontrol straddle SIZE
 *       MPI_Irecv from r-1 + MPI_Isend to r+1 of SIZE bytes; MPI_Pcontrol(0); MPI_Waitall of both;
 *       MPI_Pcontrol(1); 1 MPI_Barrier (every request is completed before MPI_Finalize)
 */
#include <mpi.h>
#include <mpilens.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, nprocs;

static void die(const char *what)
{
    fprintf(stderr, "pcontrol: rank %d: %s\n", rank, what);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

static void ring(int bytes, int tag)
{
    static char buf[1024];
    if (bytes > (int)sizeof buf) die("ring message too large");
    const int right = (rank + 1) % nprocs, left = (rank + nprocs - 1) % nprocs;
    if (rank == 0) {
        MPI_Send(buf, bytes, MPI_BYTE, right, tag, MPI_COMM_WORLD);
        MPI_Recv(buf, bytes, MPI_BYTE, left, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        MPI_Recv(buf, bytes, MPI_BYTE, left, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buf, bytes, MPI_BYTE, right, tag, MPI_COMM_WORLD);
    }
}

static double allreduce(double x)
{
    double y = 0;
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return y;
}

static void regions(int iters, int size)
{
    char *out = calloc((size_t)size + 1, 1), *in = calloc((size_t)size + 1, 1);
    if (out == NULL || in == NULL) die("out of memory");
    const int right = (rank + 1) % nprocs, left = (rank + nprocs - 1) % nprocs;
    for (int i = 0; i < iters; i++) {
        mpilens_region_begin("step");
        MPI_Barrier(MPI_COMM_WORLD);
        mpilens_region_begin("halo");
        MPI_Sendrecv(out, size, MPI_BYTE, right, i, in, size, MPI_BYTE, left, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        mpilens_region_begin("inner");
        if (allreduce(1.0) != nprocs) die("MPI_Allreduce result");
        mpilens_region_end("inner");
        mpilens_region_end("halo");
        if (i % 2 == 0) {
            int v[4] = {rank, rank, rank, rank};
            mpilens_region_begin("even");
            MPI_Bcast(v, 4, MPI_INT, 0, MPI_COMM_WORLD);
            mpilens_region_end("even");
            if (v[3] != 0) die("MPI_Bcast result");
        }
        mpilens_region_end("step");
    }
    mpilens_region_begin("inner");
    allreduce(1.0);
    allreduce(2.0);
    mpilens_region_end("inner");
    {
        MPI_Request r[2];
        mpilens_region_begin("post");
        MPI_Irecv(in, size, MPI_BYTE, left, 500, MPI_COMM_WORLD, &r[0]);
        MPI_Isend(out, size, MPI_BYTE, right, 500, MPI_COMM_WORLD, &r[1]);
        mpilens_region_end("post");
        mpilens_region_begin("complete");
        MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
        mpilens_region_end("complete");
    }
    for (int k = 0; k <= rank; k++) {
        int n;
        mpilens_region_begin("solo");
        MPI_Comm_size(MPI_COMM_WORLD, &n);
        mpilens_region_end("solo");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    free(out), free(in);
}

static void onoff(int a, int b, int c)
{
    for (int i = 0; i < a; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        ring(100, i);
    }
    MPI_Pcontrol(0);
    const int right = (rank + 1) % nprocs, left = (rank + nprocs - 1) % nprocs;
    for (int i = 0; i < b; i++) {
        int v[4] = {0, 0, 0, 0};
        char sb[50], rb[50];
        MPI_Request r[2];
        MPI_Bcast(v, 4, MPI_INT, 0, MPI_COMM_WORLD);
        ring(200, i);
        MPI_Irecv(rb, 50, MPI_BYTE, left, 77, MPI_COMM_WORLD, &r[0]);
        MPI_Isend(sb, 50, MPI_BYTE, right, 77, MPI_COMM_WORLD, &r[1]);
        MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
    }
    MPI_Pcontrol(1);
    for (int i = 0; i < c; i++) {
        if (allreduce(1.0) != nprocs) die("MPI_Allreduce result");
        ring(300, i);
    }
}

static void reset(int a, int c)
{
    mpilens_region_begin("pre");
    for (int i = 0; i < a; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        ring(100, i);
    }
    mpilens_region_end("pre");
    MPI_Pcontrol(2);
    mpilens_region_begin("post");
    for (int i = 0; i < c; i++) {
        if (allreduce(1.0) != nprocs) die("MPI_Allreduce result");
        ring(300, i);
    }
    mpilens_region_end("post");
}

static void snapshots(int a, int c)
{
    for (int i = 0; i < a; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        ring(100, i);
    }
    MPI_Pcontrol(3);
    for (int i = 0; i < c; i++) {
        if (allreduce(1.0) != nprocs) die("MPI_Allreduce result");
        ring(300, i);
    }
    MPI_Pcontrol(4);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) MPI_Pcontrol(3);
}

static void straddle(int size)
{
    char *out = calloc((size_t)size + 1, 1), *in = calloc((size_t)size + 1, 1);
    if (out == NULL || in == NULL) die("out of memory");
    const int right = (rank + 1) % nprocs, left = (rank + nprocs - 1) % nprocs;
    MPI_Request r[2];
    MPI_Irecv(in, size, MPI_BYTE, left, 9, MPI_COMM_WORLD, &r[0]);
    MPI_Isend(out, size, MPI_BYTE, right, 9, MPI_COMM_WORLD, &r[1]);
    MPI_Pcontrol(0);
    MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
    MPI_Pcontrol(1);
    MPI_Barrier(MPI_COMM_WORLD);
    free(out), free(in);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "regions") == 0 && argc > 3)
        regions(atoi(argv[2]), atoi(argv[3]));
    else if (strcmp(mode, "onoff") == 0 && argc > 4)
        onoff(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]));
    else if (strcmp(mode, "reset") == 0 && argc > 3)
        reset(atoi(argv[2]), atoi(argv[3]));
    else if (strcmp(mode, "snapshot") == 0 && argc > 3)
        snapshots(atoi(argv[2]), atoi(argv[3]));
    else if (strcmp(mode, "straddle") == 0 && argc > 2)
        straddle(atoi(argv[2]));
    else
        die("usage: pcontrol regions ITERS SIZE | onoff A B C | reset A C | snapshot A C | straddle SIZE");
    if (rank == 0) printf("pcontrol %s: done\n", mode);
    MPI_Finalize();
    return 0;
}
