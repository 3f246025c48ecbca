/* iofile: known MPI-IO on two files, for checking I/O per file (`mpilens io`).
 * Usage: iofile DIR. With P ranks, rank r of P:
 *
 * DIR/shared.dat, opened by all ranks on MPI_COMM_WORLD (MPI_MODE_CREATE | MPI_MODE_RDWR):
 *   4 x MPI_File_write_at of 256 bytes at (k*P + r) * 256, k = 0..3     independent, explicit offset
 *   MPI_File_write_at_all of 4096 bytes at 1024*P + 4096*r              collective
 *   MPI_File_set_view with displacement 5120*P + 2048*r (bytes)
 *   MPI_File_write of 1024 bytes (at the view's start: 5120*P + 2048*r)  individual file pointer
 *   MPI_File_iwrite of 1024 bytes (right after it), MPI_Wait            nonblocking
 *   MPI_File_sync
 *   MPI_File_set_view back to the whole file
 *   MPI_File_read_at_all of 4096 bytes at 1024*P + 4096*r               collective read
 *   MPI_File_read_at (MPI_File_read_at_c with MPI 4) of 256 bytes at r*256
 *   MPI_File_close
 *   The file ends up 7168*P bytes long; every byte is written once.
 * DIR/rank0.dat, opened by rank 0 alone on MPI_COMM_SELF:
 *   3 x MPI_File_write of 100 bytes (offsets 0, 100, 200), MPI_File_set_size(300), MPI_File_close
 * What is read back is checked; rank 0 prints "iofile: ok P" when every rank agrees. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check(const unsigned char *buf, int n, int rank, int k)
{
    for (int i = 0; i < n; i++)
        if (buf[i] != (unsigned char)(rank * 16 + k)) return 1;
    return 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *dir = argc > 1 ? argv[1] : ".";
    char name[4096];
    unsigned char small[256], big[4096], view[1024];
    const MPI_Offset p = size, r = rank;
    int bad = 0;

    snprintf(name, sizeof name, "%s/shared.dat", dir);
    MPI_File fh;
    MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    for (int k = 0; k < 4; k++) {
        memset(small, rank * 16 + k, sizeof small);
        MPI_File_write_at(fh, ((MPI_Offset)k * p + r) * 256, small, 256, MPI_BYTE, MPI_STATUS_IGNORE);
    }
    memset(big, rank * 16 + 4, sizeof big);
    MPI_File_write_at_all(fh, 1024 * p + 4096 * r, big, 4096, MPI_BYTE, MPI_STATUS_IGNORE);
    MPI_File_set_view(fh, 5120 * p + 2048 * r, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
    memset(view, rank * 16 + 5, sizeof view);
    MPI_File_write(fh, view, 1024, MPI_BYTE, MPI_STATUS_IGNORE);
    MPI_Request req;
    MPI_File_iwrite(fh, view, 1024, MPI_BYTE, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    MPI_File_sync(fh);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File_sync(fh);
    MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
    memset(big, 0, sizeof big);
    MPI_File_read_at_all(fh, 1024 * p + 4096 * r, big, 4096, MPI_BYTE, MPI_STATUS_IGNORE);
    bad |= check(big, 4096, rank, 4);
    memset(small, 0, sizeof small);
#if MPI_VERSION >= 4
    MPI_File_read_at_c(fh, r * 256, small, (MPI_Count)256, MPI_BYTE, MPI_STATUS_IGNORE);
#else
    MPI_File_read_at(fh, r * 256, small, 256, MPI_BYTE, MPI_STATUS_IGNORE);
#endif
    bad |= check(small, 256, rank, 0);
    MPI_File_close(&fh);

    if (rank == 0) {
        snprintf(name, sizeof name, "%s/rank0.dat", dir);
        MPI_File_open(MPI_COMM_SELF, name, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
        memset(small, 7, sizeof small);
        for (int k = 0; k < 3; k++) MPI_File_write(fh, small, 100, MPI_BYTE, MPI_STATUS_IGNORE);
        MPI_File_set_size(fh, 300);
        MPI_File_close(&fh);
    }
    int allbad = 0;
    MPI_Allreduce(&bad, &allbad, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    if (rank == 0) printf(allbad ? "iofile: BAD %d\n" : "iofile: ok %d\n", size);
    MPI_Finalize();
    return allbad;
}
