/* iosmall: MPI-IO done badly, for the I/O findings. Usage: iosmall DIR [N].
 * DIR/small.dat, opened by all ranks: each rank r of P writes N records of 100 bytes with
 * independent MPI_File_write_at at byte offsets (i*P + r) * 100, i = 0..N-1 (default N = 200):
 * small, unaligned, independent writes to a shared file that one collective write per rank
 * could do.
 * DIR/big.dat, opened by rank 0 alone: 4 MPI_File_write of 1 MiB (aligned), so that rank 0 moves
 * more than 90% of the bytes. Rank 0 prints "iosmall: ok P" at the end. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *dir = argc > 1 ? argv[1] : ".";
    const int n = argc > 2 ? atoi(argv[2]) : 200;
    char name[4096], rec[100];
    memset(rec, 'a' + rank % 26, sizeof rec);
    MPI_File fh;
    snprintf(name, sizeof name, "%s/small.dat", dir);
    MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
    for (int i = 0; i < n; i++)
        MPI_File_write_at(fh, ((MPI_Offset)i * size + rank) * 100, rec, 100, MPI_BYTE, MPI_STATUS_IGNORE);
    MPI_File_close(&fh);
    if (rank == 0) {
        char *mib = calloc(1 << 20, 1);
        snprintf(name, sizeof name, "%s/big.dat", dir);
        MPI_File_open(MPI_COMM_SELF, name, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
        for (int i = 0; i < 4; i++) MPI_File_write(fh, mib, 1 << 20, MPI_BYTE, MPI_STATUS_IGNORE);
        MPI_File_close(&fh);
        free(mib);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("iosmall: ok %d\n", size);
    MPI_Finalize();
    return 0;
}
