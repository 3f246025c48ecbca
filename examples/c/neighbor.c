/* neighbor: neighbourhood collectives on a Cartesian grid with MPI_PROC_NULL neighbours and on a
 * distributed graph with different in- and out-degrees, so that tests/test_traffic.py can check
 * that only the slots of real neighbours count as bytes moved.
 *
 * Cartesian part: P ranks on a non-periodic 2-D grid from MPI_Dims_create. Buffer slot 2d is the
 * neighbour below in dimension d, slot 2d+1 the one above; at the edges of the grid that neighbour
 * is MPI_PROC_NULL. (Not periodic: with a periodic dimension of size 2 both slots are the same
 * rank, and MPIs differ in which message goes to which slot.) The counts of MPI_PROC_NULL slots are
 * set to 100 on purpose: MPI ignores them, and so must the profile.
 *   MPI_Neighbor_alltoall     3 ints per slot
 *   MPI_Neighbor_allgather    2 doubles
 *   MPI_Neighbor_allgatherv   rank r sends r+1 ints; it receives from slot i (neighbour n) n+1 ints
 *   MPI_Neighbor_alltoallv    slot i sends i+1 ints; slot 2d receives 2d+2 ints, slot 2d+1 2d+1
 *                             (what the neighbour sends from its opposite slot)
 *   MPI_Neighbor_alltoallw    as alltoallv, slot i sending MPI_INT when i is even, MPI_DOUBLE when odd
 *   MPI_Ineighbor_alltoall    1 int per slot, completed by MPI_Wait
 * Graph part: rank 0 sends to every other rank, which receive from rank 0 only
 * (MPI_Dist_graph_create_adjacent): MPI_Neighbor_allgather of 5 ints.
 * Every rank checks what it received and aborts on a mismatch; rank 0 prints "neighbor: ok". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int rank, nprocs;

static void die(const char *what)
{
    fprintf(stderr, "neighbor: rank %d: %s\n", rank, what);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);

    int dims[2] = {0, 0}, periods[2] = {0, 0};
    MPI_Dims_create(nprocs, 2, dims);
    MPI_Comm cart;
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
    int me;
    MPI_Comm_rank(cart, &me);
    int nbr[4];
    for (int d = 0; d < 2; d++) MPI_Cart_shift(cart, d, 1, &nbr[2 * d], &nbr[2 * d + 1]);

    /* alltoall: 3 ints per slot; slot i carries 1000*me + i */
    int sa[12], ra[12];
    for (int i = 0; i < 12; i++) {
        sa[i] = 1000 * me + i / 3;
        ra[i] = -1;
    }
    MPI_Neighbor_alltoall(sa, 3, MPI_INT, ra, 3, MPI_INT, cart);
    for (int i = 0; i < 4; i++) {
        if (nbr[i] == MPI_PROC_NULL) continue;
        const int from_slot = i ^ 1; /* the neighbour below sends to me from its "above" slot */
        if (ra[3 * i] != 1000 * nbr[i] + from_slot) die("MPI_Neighbor_alltoall data");
    }

    /* allgather: 2 doubles */
    double sg[2] = {me, me + 0.5}, rg[8];
    MPI_Neighbor_allgather(sg, 2, MPI_DOUBLE, rg, 2, MPI_DOUBLE, cart);
    for (int i = 0; i < 4; i++)
        if (nbr[i] != MPI_PROC_NULL && rg[2 * i] != nbr[i]) die("MPI_Neighbor_allgather data");

    /* allgatherv: r+1 ints from rank r */
    int sv[64], rv[4 * 64], rcounts[4], rdispls[4];
    for (int i = 0; i < me + 1; i++) sv[i] = me;
    for (int i = 0; i < 4; i++) {
        rcounts[i] = nbr[i] == MPI_PROC_NULL ? 100 : nbr[i] + 1;
        rdispls[i] = 64 * i;
    }
    if (nprocs > 63) die("at most 63 ranks");
    MPI_Neighbor_allgatherv(sv, me + 1, MPI_INT, rv, rcounts, rdispls, MPI_INT, cart);
    for (int i = 0; i < 4; i++)
        if (nbr[i] != MPI_PROC_NULL && rv[64 * i + nbr[i]] != nbr[i]) die("MPI_Neighbor_allgatherv data");

    /* alltoallv: slot i sends i+1 ints; receives what the opposite slot of the neighbour sends */
    int scv[4], sdv[4], rcv[4], rdv[4], buf_s[4 * 8], buf_r[4 * 8];
    for (int i = 0; i < 4; i++) {
        const int null = nbr[i] == MPI_PROC_NULL;
        scv[i] = null ? 100 : i + 1;
        rcv[i] = null ? 100 : (i ^ 1) + 1;
        sdv[i] = rdv[i] = 8 * i;
        for (int k = 0; k < 8; k++) buf_s[8 * i + k] = 10 * me + i;
    }
    /* MPI_PROC_NULL slots may be larger than the buffer: MPI never touches them */
    MPI_Neighbor_alltoallv(buf_s, scv, sdv, MPI_INT, buf_r, rcv, rdv, MPI_INT, cart);
    for (int i = 0; i < 4; i++)
        if (nbr[i] != MPI_PROC_NULL && buf_r[8 * i] != 10 * nbr[i] + (i ^ 1)) die("MPI_Neighbor_alltoallv data");

    /* alltoallw: the same counts, MPI_INT from even slots and MPI_DOUBLE from odd ones */
    char wbuf_s[4 * 64], wbuf_r[4 * 64];
    MPI_Datatype st[4], rt[4];
    MPI_Aint wsd[4], wrd[4];
    for (int i = 0; i < 4; i++) {
        st[i] = i % 2 ? MPI_DOUBLE : MPI_INT;
        rt[i] = (i ^ 1) % 2 ? MPI_DOUBLE : MPI_INT;
        wsd[i] = wrd[i] = 64 * i;
    }
    MPI_Neighbor_alltoallw(wbuf_s, scv, wsd, st, wbuf_r, rcv, wrd, rt, cart);

    /* nonblocking: 1 int per slot */
    int si[4] = {me, me, me, me}, ri[4] = {-1, -1, -1, -1};
    MPI_Request req;
    MPI_Ineighbor_alltoall(si, 1, MPI_INT, ri, 1, MPI_INT, cart, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    for (int i = 0; i < 4; i++)
        if (nbr[i] != MPI_PROC_NULL && ri[i] != nbr[i]) die("MPI_Ineighbor_alltoall data");
    MPI_Comm_free(&cart);

    /* graph: rank 0 sends to all others */
    /* unit weights rather than MPI_UNWEIGHTED, which GCC mistakes for a too small array */
    int *dst = malloc(sizeof(int) * (size_t)nprocs), *ones = malloc(sizeof(int) * (size_t)nprocs);
    int src0 = 0, outdeg = 0, indeg = 0;
    for (int r = 0; r < nprocs; r++) ones[r] = 1;
    if (rank == 0)
        for (int r = 1; r < nprocs; r++) dst[outdeg++] = r;
    else
        indeg = 1;
    MPI_Comm graph;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, indeg, &src0, ones, outdeg, dst, ones, MPI_INFO_NULL, 0, &graph);
    int g5[5] = {rank, rank, rank, rank, rank}, gr[5] = {-1, -1, -1, -1, -1};
    MPI_Neighbor_allgather(g5, 5, MPI_INT, gr, 5, MPI_INT, graph);
    if (rank != 0 && gr[4] != 0) die("graph MPI_Neighbor_allgather data");
    MPI_Comm_free(&graph);
    free(dst);
    free(ones);

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("neighbor: ok\n");
    MPI_Finalize();
    return 0;
}
