/* traffic_mpi4: MPI-4 point-to-point functions with known traffic, on 2 ranks.
 * Built everywhere, each part where the MPI's header has its functions: MPI_Isendrecv and
 * partitioned communication with MPI-4.0, and with Open MPI 5 (which has them, says MPI 3.1, and
 * has no large-count functions); the large-count part with MPI-4.0. It prints the parts it runs
 * ("traffic_mpi4: parts isendrecv=1 large_count=0 partitioned=1"); with none of them it prints
 * "traffic_mpi4: no MPI-4 (MPI_VERSION V.S)" and does nothing else.
 *
 * Usage: traffic_mpi4 REPS SIZE PARTS PCOUNT
 *   MPI_Isendrecv  REPS times: rank r sends SIZE*(r+1)+i bytes to the other rank and receives
 *                  into a larger buffer; completed by MPI_Wait with a status (even i, checked:
 *                  "isendrecv_bad_status=" counts statuses that do not describe the receive) or
 *                  MPI_STATUS_IGNORE (odd i)
 *   MPI_Send_c / MPI_Recv_c (large-count variants)  REPS times: rank 0 sends SIZE+i ints
 *                  (MPI_Count count) to rank 1, which receives into a buffer of 2*SIZE+REPS ints
 *   partitioned    rank 0 MPI_Psend_init(PARTS partitions of PCOUNT doubles) to rank 1, rank 1
 *                  MPI_Precv_init of the same; REPS rounds of MPI_Start, then the sender calls
 *                  MPI_Pready for each partition and the receiver polls MPI_Parrived until every
 *                  partition arrived, then MPI_Wait(MPI_STATUS_IGNORE); finally MPI_Request_free.
 *                  The receiver prints the number of MPI_Parrived calls ("parrived_calls=").
 * Every rank checks what it receives and aborts on a mismatch. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#if MPI_VERSION >= 4 || (defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
#define HAVE_P2P4 1 /* MPI_Isendrecv, partitioned communication */
#else
#define HAVE_P2P4 0
#endif
#if MPI_VERSION >= 4
#define HAVE_LARGE_COUNT 1
#else
#define HAVE_LARGE_COUNT 0
#endif

static int rank, nprocs;

static void die(const char *what)
{
    fprintf(stderr, "traffic_mpi4: rank %d: %s\n", rank, what);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
#if HAVE_P2P4
    if (rank == 0)
        printf("traffic_mpi4: parts isendrecv=1 large_count=%d partitioned=1\n", HAVE_LARGE_COUNT);
    if (argc < 5) die("usage: traffic_mpi4 REPS SIZE PARTS PCOUNT");
    if (nprocs != 2) die("needs 2 ranks");
    const int reps = atoi(argv[1]), size = atoi(argv[2]), parts = atoi(argv[3]), pcount = atoi(argv[4]);
    const int other = 1 - rank;
    const int cap = 2 * size + reps + 16;

    /* MPI_Isendrecv */
    char *out = calloc((size_t)cap, 1), *in = calloc((size_t)cap, 1);
    if (out == NULL || in == NULL) die("out of memory");
    int bad_status = 0;
    for (int i = 0; i < reps; i++) {
        MPI_Request r;
        MPI_Status st;
        MPI_Isendrecv(out, size * (rank + 1) + i, MPI_BYTE, other, i, in, cap, MPI_BYTE, other, i, MPI_COMM_WORLD,
                      &r);
        if (i % 2 == 0) {
            MPI_Wait(&r, &st);
            int n = -1;
            MPI_Get_count(&st, MPI_BYTE, &n);
            if (n != size * (other + 1) + i || st.MPI_SOURCE != other || st.MPI_TAG != i) {
                if (bad_status++ == 0)
                    printf("mpi4 rank=%d: MPI_Isendrecv status says %d bytes from %d tag %d, "
                           "expected %d from %d tag %d\n",
                           rank, n, st.MPI_SOURCE, st.MPI_TAG, size * (other + 1) + i, other, i);
            }
        } else {
            MPI_Wait(&r, MPI_STATUS_IGNORE);
        }
    }
    printf("mpi4 rank=%d isendrecv_bad_status=%d\n", rank, bad_status);

    /* MPI_Send_c / MPI_Recv_c */
    int *ib = calloc((size_t)cap, sizeof(int));
    if (ib == NULL) die("out of memory");
#if HAVE_LARGE_COUNT
    for (int i = 0; i < reps; i++) {
        if (rank == 0) {
            for (int k = 0; k < size + i; k++) ib[k] = i;
            MPI_Send_c(ib, (MPI_Count)(size + i), MPI_INT, 1, 100 + i, MPI_COMM_WORLD);
        } else {
            MPI_Status st;
            MPI_Recv_c(ib, (MPI_Count)cap, MPI_INT, 0, 100 + i, MPI_COMM_WORLD, &st);
            MPI_Count n = -1;
            MPI_Get_count_c(&st, MPI_INT, &n);
            if (n != size + i || ib[size + i - 1] != i) die("MPI_Recv_c result");
        }
    }
#endif

    /* partitioned communication */
    double *pb = calloc((size_t)parts * (size_t)pcount + 1, sizeof(double));
    if (pb == NULL) die("out of memory");
    MPI_Request pr;
    if (rank == 0)
        MPI_Psend_init(pb, parts, pcount, MPI_DOUBLE, 1, 555, MPI_COMM_WORLD, MPI_INFO_NULL, &pr);
    else
        MPI_Precv_init(pb, parts, pcount, MPI_DOUBLE, 0, 555, MPI_COMM_WORLD, MPI_INFO_NULL, &pr);
    long parrived = 0;
    for (int i = 0; i < reps; i++) {
        MPI_Start(&pr);
        if (rank == 0) {
            for (int p = 0; p < parts; p++) {
                for (int k = 0; k < pcount; k++) pb[(size_t)p * pcount + k] = i * 1000 + p;
                MPI_Pready(p, pr);
            }
        } else {
            for (int p = 0; p < parts; p++) {
                int flag = 0;
                while (!flag) {
                    MPI_Parrived(pr, p, &flag);
                    parrived++;
                }
            }
        }
        MPI_Wait(&pr, MPI_STATUS_IGNORE);
        if (rank == 1)
            for (int p = 0; p < parts; p++)
                if (pb[(size_t)p * pcount + pcount - 1] != i * 1000 + p) die("partitioned result");
    }
    MPI_Request_free(&pr);
    if (rank == 1) printf("mpi4 rank=1 parrived_calls=%ld\n", parrived);
    free(out), free(in), free(ib), free(pb);
    fflush(stdout);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("traffic_mpi4: done\n");
#else
    if (rank == 0) printf("traffic_mpi4: no MPI-4 (MPI_VERSION %d.%d)\n", MPI_VERSION, MPI_SUBVERSION);
    (void)argc, (void)argv, (void)nprocs, (void)die;
#endif
    MPI_Finalize();
    return 0;
}
