/* names: names that are bytes, not text, for tests/test_names.py. Region and counter names come
 * from the command line as given (any bytes: Latin-1, a newline, an escape sequence, 10 000 of
 * them), so that every place a name travels (regions, counters, the command line in meta.json,
 * the trace) carries it.
 * Inside region REGION, each rank sends N messages of 64 bytes to its right neighbour (receiving
 * as many from its left) and adds 1 to counter COUNTER per message.
 * Usage: names REGION COUNTER N */
#include <mpi.h>
#include <mpilens.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    if (argc != 4) {
        fprintf(stderr, "usage: names REGION COUNTER N\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int n = atoi(argv[3]);
    char out[64] = {0}, in[64];
    const int right = (rank + 1) % size, left = (rank + size - 1) % size;
    mpilens_region_begin(argv[1]);
    for (int i = 0; i < n; i++) {
        MPI_Sendrecv(out, 64, MPI_BYTE, right, i, in, 64, MPI_BYTE, left, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        mpilens_counter_add(argv[2], 1.0);
    }
    mpilens_region_end(argv[1]);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("names: %d messages per rank\n", n);
    MPI_Finalize();
    return 0;
}
