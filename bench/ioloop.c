/* Single-rank loops of MPI-IO calls, for the cost of I/O per file (MPILENS_IO) per call: run it
 * plain, under the runtime with MPILENS_IO=0 and with MPILENS_IO=1, and compare.
 *
 *   ioloop at   FILE [ITERS]  MPI_File_write_at of 8 B at increasing explicit offsets
 *   ioloop ind  FILE [ITERS]  MPI_File_write of 8 B (individual file pointer)
 *   ioloop read FILE [ITERS]  MPI_File_read_at of 8 B at increasing explicit offsets
 *   ioloop all  FILE [ITERS]  MPI_File_write_at_all of 8 B (collective, on one rank)
 *
 * FILE should be on tmpfs (/dev/shm) so that the file system's own cost varies little. The file
 * is opened once; the calls are timed in BATCHES batches; prints the median ns per call.
 * Must run as one rank (a singleton: no mpirun needed). */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BATCHES 11

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    if (argc < 3) {
        fprintf(stderr, "usage: ioloop at|ind|read|all FILE [ITERS]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char *mode = argv[1];
    const long n = argc > 3 ? atol(argv[3]) : 20000;
    MPI_File fh;
    MPI_File_open(MPI_COMM_SELF, argv[2], MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL,
                  &fh);
    char buf[8] = "abcdefg";
    double t[BATCHES];
    MPI_Offset off = 0;
    if (strcmp(mode, "read") == 0) { /* something to read */
        MPI_File_set_size(fh, (MPI_Offset)n * BATCHES * 8);
    }
    for (int b = 0; b < BATCHES; b++) {
        const double t0 = now();
        for (long i = 0; i < n; i++, off += 8) {
            if (mode[0] == 'a' && mode[1] == 't') MPI_File_write_at(fh, off, buf, 8, MPI_BYTE, MPI_STATUS_IGNORE);
            else if (mode[0] == 'i') MPI_File_write(fh, buf, 8, MPI_BYTE, MPI_STATUS_IGNORE);
            else if (mode[0] == 'r') MPI_File_read_at(fh, off, buf, 8, MPI_BYTE, MPI_STATUS_IGNORE);
            else MPI_File_write_at_all(fh, off, buf, 8, MPI_BYTE, MPI_STATUS_IGNORE);
        }
        t[b] = (now() - t0) / (double)n;
    }
    MPI_File_close(&fh);
    qsort(t, BATCHES, sizeof t[0], cmp_double);
    printf("ioloop %s ns_per_call=%.1f iters=%ld\n", mode, t[BATCHES / 2], n);
    MPI_Finalize();
    return 0;
}
