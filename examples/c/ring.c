/* ring: each rank sends N messages of SIZE bytes to its right neighbour and receives as many from
 * its left one, inside a region "ring", then one MPI_Allreduce of a double in region "check".
 * Known traffic: per rank N x MPI_Send of SIZE bytes and N x MPI_Recv of SIZE bytes.
 * Usage: ring [N [SIZE]] (defaults 10, 1024). */
#include <mpi.h>
#include <mpilens.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int n = argc > 1 ? atoi(argv[1]) : 10;
    const int bytes = argc > 2 ? atoi(argv[2]) : 1024;
    char *out = calloc((size_t)bytes, 1), *in = calloc((size_t)bytes, 1);
    const int right = (rank + 1) % size, left = (rank + size - 1) % size;

    mpilens_region_begin("ring");
    for (int i = 0; i < n; i++) {
        if (rank % 2 == 0) {
            MPI_Send(out, bytes, MPI_BYTE, right, i, MPI_COMM_WORLD);
            MPI_Recv(in, bytes, MPI_BYTE, left, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(in, bytes, MPI_BYTE, left, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(out, bytes, MPI_BYTE, right, i, MPI_COMM_WORLD);
        }
    }
    mpilens_region_end("ring");

    mpilens_region_begin("check");
    double x = rank, sum = 0;
    MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    mpilens_region_end("check");
    if (rank == 0) printf("ring: %d messages of %d bytes, sum of ranks %.0f\n", n, bytes, sum);
    free(out);
    free(in);
    MPI_Finalize();
    return 0;
}
