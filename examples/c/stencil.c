/* stencil: a 2-D Jacobi solver on a Cartesian grid of ranks, the shape of many HPC codes.
 * Each iteration exchanges halos with the four neighbours (MPI_Isend/MPI_Irecv/MPI_Waitall),
 * relaxes the local block, and every few iterations reduces the residual (MPI_Allreduce).
 * Regions "halo", "compute" and "residual" (mpilens.h) show where the time goes.
 *
 * Usage: stencil [N [ITERS [IMBALANCE]]]
 *   N          local block is N x N doubles (default 256)
 *   ITERS      iterations (default 200)
 *   IMBALANCE  extra relaxation sweeps done by the last rank only (default 0), to show what a
 *              load imbalance looks like in the report
 */
#include <math.h>
#include <mpi.h>
#include <mpilens.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IDX(i, j) ((size_t)(i) * (size_t)(n + 2) + (size_t)(j))

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int n = argc > 1 ? atoi(argv[1]) : 256;
    const int iters = argc > 2 ? atoi(argv[2]) : 200;
    const int extra = argc > 3 ? atoi(argv[3]) : 0;

    int dims[2] = {0, 0}, periods[2] = {0, 0}, coords[2];
    MPI_Dims_create(size, 2, dims);
    MPI_Comm grid;
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 1, &grid);
    MPI_Comm_rank(grid, &rank);
    MPI_Cart_coords(grid, rank, 2, coords);
    int up, down, left, right;
    MPI_Cart_shift(grid, 0, 1, &up, &down);
    MPI_Cart_shift(grid, 1, 1, &left, &right);

    double *a = calloc((size_t)(n + 2) * (size_t)(n + 2), sizeof(double));
    double *b = calloc((size_t)(n + 2) * (size_t)(n + 2), sizeof(double));
    double *sendl = malloc((size_t)n * sizeof(double)), *sendr = malloc((size_t)n * sizeof(double));
    double *recvl = malloc((size_t)n * sizeof(double)), *recvr = malloc((size_t)n * sizeof(double));
    if (coords[0] == 0)
        for (int j = 0; j < n + 2; j++) a[IDX(0, j)] = b[IDX(0, j)] = 1.0; /* hot top boundary */

    MPI_Datatype row;
    MPI_Type_contiguous(n, MPI_DOUBLE, &row);
    MPI_Type_commit(&row);
    const int sweeps = rank == size - 1 ? 1 + extra : 1;
    double residual = 0;
    for (int it = 0; it < iters; it++) {
        mpilens_region_begin("halo");
        MPI_Request req[8];
        for (int i = 0; i < n; i++) {
            sendl[i] = a[IDX(i + 1, 1)];
            sendr[i] = a[IDX(i + 1, n)];
        }
        MPI_Irecv(&a[IDX(0, 1)], 1, row, up, 0, grid, &req[0]);
        MPI_Irecv(&a[IDX(n + 1, 1)], 1, row, down, 1, grid, &req[1]);
        MPI_Irecv(recvl, n, MPI_DOUBLE, left, 2, grid, &req[2]);
        MPI_Irecv(recvr, n, MPI_DOUBLE, right, 3, grid, &req[3]);
        MPI_Isend(&a[IDX(1, 1)], 1, row, up, 1, grid, &req[4]);
        MPI_Isend(&a[IDX(n, 1)], 1, row, down, 0, grid, &req[5]);
        MPI_Isend(sendl, n, MPI_DOUBLE, left, 3, grid, &req[6]);
        MPI_Isend(sendr, n, MPI_DOUBLE, right, 2, grid, &req[7]);
        MPI_Waitall(8, req, MPI_STATUSES_IGNORE);
        if (left != MPI_PROC_NULL)
            for (int i = 0; i < n; i++) a[IDX(i + 1, 0)] = recvl[i];
        if (right != MPI_PROC_NULL)
            for (int i = 0; i < n; i++) a[IDX(i + 1, n + 1)] = recvr[i];
        mpilens_region_end("halo");

        mpilens_region_begin("compute");
        double local = 0;
        for (int s = 0; s < sweeps; s++) {
            local = 0;
            for (int i = 1; i <= n; i++)
                for (int j = 1; j <= n; j++) {
                    b[IDX(i, j)] = 0.25 * (a[IDX(i - 1, j)] + a[IDX(i + 1, j)] + a[IDX(i, j - 1)] + a[IDX(i, j + 1)]);
                    local += fabs(b[IDX(i, j)] - a[IDX(i, j)]);
                }
        }
        for (int i = 1; i <= n; i++) memcpy(&a[IDX(i, 1)], &b[IDX(i, 1)], (size_t)n * sizeof(double));
        mpilens_region_end("compute");

        if (it % 10 == 9) {
            mpilens_region_begin("residual");
            MPI_Allreduce(&local, &residual, 1, MPI_DOUBLE, MPI_SUM, grid);
            mpilens_region_end("residual");
        }
    }
    if (rank == 0) printf("stencil: %d ranks (%d x %d), %d x %d per rank, %d iterations, residual %.6e\n", size,
                          dims[0], dims[1], n, n, iters, residual);
    MPI_Type_free(&row);
    MPI_Comm_free(&grid);
    free(a), free(b), free(sendl), free(sendr), free(recvl), free(recvr);
    MPI_Finalize();
    return 0;
}
