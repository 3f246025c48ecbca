/* comm_traffic: known traffic on a split communicator, for the OTF2 export's tests
 * (tests/test_otf2.py). Needs an even number of ranks (4 in the tests).
 *
 * MPI_COMM_WORLD is split by rank parity, key -rank: each half has 2 ranks in reverse world
 * order (of ranks 0 and 2, world rank 2 is rank 0 of the half). With s = the rank in the half
 * and p = 1 - s its partner:
 *   region "exchange":
 *     MPI_Irecv of 1000 bytes from p, tag 7; MPI_Isend of 1000 bytes to p, tag 7; MPI_Waitall
 *   3 x (MPI_Startall of a persistent receive of 200 bytes from p and a persistent send of 200
 *        bytes to p, tag 9; MPI_Waitall), then MPI_Request_free of both
 *   s = 0: MPI_Send of 300 bytes to p, tag 5; s = 1: MPI_Recv of them
 *   MPI_Bcast of 64 bytes from rank 1 of the half
 *   MPI_Reduce of one double (8 bytes) to world rank 0, on MPI_COMM_WORLD
 *   MPI_Barrier on MPI_COMM_WORLD
 *   MPI_Comm_free of the half
 * With the argument "inter", before freeing the half: MPI_Intercomm_create of the two halves
 * (leaders: rank 0 of each, world ranks 2 and 3, tag 11), then on it MPI_Send of 40 bytes to rank s
 * of the other half and MPI_Recv of 40 bytes from it (tag 12; the even half sends first), then
 * MPI_Comm_free of the intercommunicator.
 * With the argument "icoll", after MPI_Barrier: MPI_Ibcast of 64 bytes from rank 1 of the half,
 * MPI_Iallreduce of one double on MPI_COMM_WORLD, one MPI_Waitall of both.
 * With the argument "pcoll" (MPI-4), after MPI_Barrier: MPI_Bcast_init of the same broadcast and
 * MPI_Allreduce_init of the same reduction, 2 x (MPI_Startall of both, MPI_Waitall), then
 * MPI_Request_free of both; an MPI-3 library prints "comm_traffic: no persistent collectives". */
#include <mpi.h>
#include <mpilens.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size % 2) {
        if (rank == 0) fprintf(stderr, "comm_traffic: needs an even number of ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half);
    int s;
    MPI_Comm_rank(half, &s);
    const int p = 1 - s;

    static char in[1000], out[1000];
    memset(out, rank, sizeof out);
    MPI_Request req[2];
    mpilens_region_begin("exchange");
    MPI_Irecv(in, 1000, MPI_BYTE, p, 7, half, &req[0]);
    MPI_Isend(out, 1000, MPI_BYTE, p, 7, half, &req[1]);
    MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
    mpilens_region_end("exchange");

    MPI_Recv_init(in, 200, MPI_BYTE, p, 9, half, &req[0]);
    MPI_Send_init(out, 200, MPI_BYTE, p, 9, half, &req[1]);
    for (int i = 0; i < 3; i++) {
        MPI_Startall(2, req);
        MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
    }
    MPI_Request_free(&req[0]);
    MPI_Request_free(&req[1]);

    if (s == 0)
        MPI_Send(out, 300, MPI_BYTE, p, 5, half);
    else
        MPI_Recv(in, 300, MPI_BYTE, p, 5, half, MPI_STATUS_IGNORE);

    int values[16] = {0};
    MPI_Bcast(values, 16, MPI_INT, 1, half);
    double x = rank, sum = 0;
    MPI_Reduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    if (argc > 1 && strcmp(argv[1], "icoll") == 0) {
        MPI_Request coll[2];
        double y = rank, ysum = 0;
        for (int i = 0; i < 16; i++) values[i] = s == 1 ? i : -1;
        MPI_Ibcast(values, 16, MPI_INT, 1, half, &coll[0]);
        MPI_Iallreduce(&y, &ysum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &coll[1]);
        MPI_Waitall(2, coll, MPI_STATUSES_IGNORE);
        if (values[15] != 15 || ysum != size * (size - 1) / 2) fprintf(stderr, "comm_traffic: wrong icoll\n");
    }
    if (argc > 1 && strcmp(argv[1], "pcoll") == 0) {
#if MPI_VERSION >= 4
        MPI_Request coll[2];
        double y = rank, ysum = 0;
        MPI_Bcast_init(values, 16, MPI_INT, 1, half, MPI_INFO_NULL, &coll[0]);
        MPI_Allreduce_init(&y, &ysum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &coll[1]);
        for (int k = 0; k < 2; k++) {
            for (int i = 0; i < 16; i++) values[i] = s == 1 ? i + k : -1;
            MPI_Startall(2, coll);
            MPI_Waitall(2, coll, MPI_STATUSES_IGNORE);
            if (values[15] != 15 + k || ysum != size * (size - 1) / 2) fprintf(stderr, "comm_traffic: wrong pcoll\n");
        }
        MPI_Request_free(&coll[0]);
        MPI_Request_free(&coll[1]);
#else
        if (rank == 0) printf("comm_traffic: no persistent collectives (MPI_VERSION %d)\n", MPI_VERSION);
#endif
    }
    if (argc > 1 && strcmp(argv[1], "inter") == 0) {
        MPI_Comm inter;
        MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank % 2 ? 2 : 3, 11, &inter);
        if (rank % 2 == 0) {
            MPI_Send(out, 40, MPI_BYTE, s, 12, inter);
            MPI_Recv(in, 40, MPI_BYTE, s, 12, inter, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(in, 40, MPI_BYTE, s, 12, inter, MPI_STATUS_IGNORE);
            MPI_Send(out, 40, MPI_BYTE, s, 12, inter);
        }
        MPI_Comm_free(&inter);
    }
    MPI_Comm_free(&half);
    if (rank == 0) printf("sum %g\n", sum);
    MPI_Finalize();
    return 0;
}
