/* halo3d: a 3-D halo exchange (the 7-point stencil pattern of seed 003's 3Dstencil) on a
 * Cartesian grid of ranks. Every iteration each rank posts MPI_Irecv/MPI_Isend of one face to
 * each of its six neighbours and waits (MPI_Waitall), then computes a little. The face size is
 * chosen on the command line, so the messages can sit just below or above a protocol threshold
 * such as an eager limit. The Cartesian communicator is named "halo" (MPI_Comm_set_name), so
 * MPILENS_COMM_CVARS can address it. Region "exchange" covers the halo exchange.
 *
 * Usage: halo3d [BYTES [ITERS [COMPUTE_US]]]
 *   BYTES       bytes of one face message (default 163840 = 160 KiB)
 *   ITERS       iterations (default 200)
 *   COMPUTE_US  busy work per iteration in microseconds (default 50)
 */
#include <mpi.h>
#include <mpilens.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int size, rank;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const long bytes = argc > 1 ? atol(argv[1]) : 163840;
    const int iters = argc > 2 ? atoi(argv[2]) : 200;
    const double compute_s = (argc > 3 ? atof(argv[3]) : 50.0) * 1e-6;

    int dims[3] = {0, 0, 0}, periods[3] = {1, 1, 1};
    MPI_Dims_create(size, 3, dims);
    MPI_Comm cart;
    MPI_Cart_create(MPI_COMM_WORLD, 3, dims, periods, 0, &cart);
    MPI_Comm_set_name(cart, "halo");
    MPI_Comm_rank(cart, &rank);
    int nb[6];
    for (int d = 0; d < 3; d++) MPI_Cart_shift(cart, d, 1, &nb[2 * d], &nb[2 * d + 1]);

    char *sendbuf = malloc((size_t)bytes * 6), *recvbuf = malloc((size_t)bytes * 6);
    memset(sendbuf, rank & 0xff, (size_t)bytes * 6);
    MPI_Request req[12];
    MPI_Barrier(cart);
    const double t0 = MPI_Wtime();
    for (int it = 0; it < iters; it++) {
        mpilens_region_begin("exchange");
        for (int k = 0; k < 6; k++) {
            MPI_Irecv(recvbuf + k * bytes, (int)bytes, MPI_BYTE, nb[k], k, cart, &req[k]);
            MPI_Isend(sendbuf + (k ^ 1) * bytes, (int)bytes, MPI_BYTE, nb[k ^ 1], k, cart, &req[6 + k]);
        }
        MPI_Waitall(12, req, MPI_STATUSES_IGNORE);
        mpilens_region_end("exchange");
        const double c0 = MPI_Wtime();
        while (MPI_Wtime() - c0 < compute_s) {
        }
    }
    double local = MPI_Wtime() - t0, slowest = 0;
    MPI_Reduce(&local, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, cart);
    if (rank == 0)
        printf("halo3d: %d ranks (%dx%dx%d), %ld-byte faces, %d iterations: %.6f s, %.2f us per iteration\n", size,
               dims[0], dims[1], dims[2], bytes, iters, slowest, slowest / iters * 1e6);
    free(sendbuf);
    free(recvbuf);
    MPI_Comm_free(&cart);
    MPI_Finalize();
    return 0;
}
