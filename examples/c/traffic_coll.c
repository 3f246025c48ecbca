/* traffic_coll: every common collective once (or twice), with counts given on the command line,
 * so that tests/test_traffic.py can derive the bytes of each call from runtime/spec/semantics.yaml
 * (the "buffer view": what each process reads from its send buffers and writes to its receive
 * buffers; rooted collectives count at the root the blocks of all processes, its own included).
 *
 * Usage: traffic_coll COUNT ROOT      (P = number of ranks, r = this rank, all on MPI_COMM_WORLD)
 *   MPI_Bcast      COUNT ints from ROOT
 *   MPI_Reduce     COUNT doubles to ROOT (MPI_SUM)
 *   MPI_Allreduce  COUNT doubles, then 2*COUNT+1 doubles with MPI_IN_PLACE
 *   MPI_Alltoall   COUNT ints to each rank
 *   MPI_Alltoallv  rank r sends COUNT*(1+r+2j) ints to rank j (so receives COUNT*(1+j+2r) from j)
 *   MPI_Gather     COUNT ints to ROOT, then COUNT+2 ints to ROOT with MPI_IN_PLACE at ROOT
 *   MPI_Gatherv    rank r sends (r+1)*COUNT ints to ROOT
 *   MPI_Scatter    COUNT ints from ROOT, then COUNT+1 ints with MPI_IN_PLACE at ROOT
 *   MPI_Scatterv   (P-r)*COUNT doubles from ROOT to rank r
 *   MPI_Allgather  COUNT ints on MPI_Comm_split(world, r%2, -r) (the ranks of r's parity)
 *   MPI_Barrier    twice
 *   MPI_Iallreduce COUNT doubles and MPI_Ibcast COUNT+5 ints from ROOT, both completed by one
 *                  MPI_Waitall(2, ..., MPI_STATUSES_IGNORE)
 * Every rank checks the results and aborts on a mismatch. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, nprocs;

static void die(const char *what)
{
    fprintf(stderr, "traffic_coll: rank %d: %s\n", rank, what);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

static void *alloc(size_t n)
{
    void *p = calloc(n ? n : 1, 1);
    if (p == NULL) die("out of memory");
    return p;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (argc < 3) die("usage: traffic_coll COUNT ROOT");
    const int count = atoi(argv[1]), root = atoi(argv[2]), P = nprocs;
    if (count < 1 || root < 0 || root >= P) die("bad COUNT or ROOT");
    const MPI_Comm w = MPI_COMM_WORLD;
    const size_t big = (size_t)(3 * count + 8) * (size_t)P * (size_t)(3 * P + 2);
    int *ia = alloc(big * sizeof(int)), *ib = alloc(big * sizeof(int));
    double *da = alloc(big * sizeof(double)), *db = alloc(big * sizeof(double));

    /* MPI_Bcast */
    for (int i = 0; i < count; i++) ia[i] = rank == root ? i + 1 : 0;
    MPI_Bcast(ia, count, MPI_INT, root, w);
    for (int i = 0; i < count; i++)
        if (ia[i] != i + 1) die("MPI_Bcast result");

    /* MPI_Reduce */
    for (int i = 0; i < count; i++) da[i] = rank + 1;
    MPI_Reduce(da, db, count, MPI_DOUBLE, MPI_SUM, root, w);
    if (rank == root && db[0] != P * (P + 1) / 2.0) die("MPI_Reduce result");

    /* MPI_Allreduce, out of place then in place */
    MPI_Allreduce(da, db, count, MPI_DOUBLE, MPI_SUM, w);
    if (db[count - 1] != P * (P + 1) / 2.0) die("MPI_Allreduce result");
    for (int i = 0; i < 2 * count + 1; i++) db[i] = 1.0;
    MPI_Allreduce(MPI_IN_PLACE, db, 2 * count + 1, MPI_DOUBLE, MPI_SUM, w);
    if (db[2 * count] != P) die("MPI_Allreduce(MPI_IN_PLACE) result");

    /* MPI_Alltoall */
    for (int j = 0; j < P; j++)
        for (int i = 0; i < count; i++) ia[j * count + i] = rank * 1000 + j;
    MPI_Alltoall(ia, count, MPI_INT, ib, count, MPI_INT, w);
    for (int j = 0; j < P; j++)
        if (ib[j * count] != j * 1000 + rank) die("MPI_Alltoall result");

    /* MPI_Alltoallv */
    {
        int *sc = alloc(sizeof(int) * P), *sd = alloc(sizeof(int) * P), *rc = alloc(sizeof(int) * P),
            *rd = alloc(sizeof(int) * P);
        int so = 0, ro = 0;
        for (int j = 0; j < P; j++) {
            sc[j] = count * (1 + rank + 2 * j);
            rc[j] = count * (1 + j + 2 * rank);
            sd[j] = so, rd[j] = ro;
            so += sc[j], ro += rc[j];
        }
        if ((size_t)so > big || (size_t)ro > big) die("buffers too small");
        for (int j = 0; j < P; j++)
            for (int i = 0; i < sc[j]; i++) ia[sd[j] + i] = rank * 1000 + j;
        MPI_Alltoallv(ia, sc, sd, MPI_INT, ib, rc, rd, MPI_INT, w);
        for (int j = 0; j < P; j++)
            if (ib[rd[j] + rc[j] - 1] != j * 1000 + rank) die("MPI_Alltoallv result");
        free(sc), free(sd), free(rc), free(rd);
    }

    /* MPI_Gather, out of place then in place at the root */
    for (int i = 0; i < count + 2; i++) ia[i] = rank;
    MPI_Gather(ia, count, MPI_INT, ib, count, MPI_INT, root, w);
    if (rank == root)
        for (int j = 0; j < P; j++)
            if (ib[j * count] != j) die("MPI_Gather result");
    if (rank == root) {
        for (int i = 0; i < count + 2; i++) ib[root * (count + 2) + i] = rank;
        MPI_Gather(MPI_IN_PLACE, count + 2, MPI_INT, ib, count + 2, MPI_INT, root, w);
        for (int j = 0; j < P; j++)
            if (ib[j * (count + 2) + count + 1] != j) die("MPI_Gather(MPI_IN_PLACE) result");
    } else {
        MPI_Gather(ia, count + 2, MPI_INT, NULL, 0, MPI_INT, root, w);
    }

    /* MPI_Gatherv */
    {
        int *rc = alloc(sizeof(int) * P), *rd = alloc(sizeof(int) * P), off = 0;
        for (int j = 0; j < P; j++) rc[j] = (j + 1) * count, rd[j] = off, off += rc[j];
        for (int i = 0; i < (rank + 1) * count; i++) ia[i] = rank;
        MPI_Gatherv(ia, (rank + 1) * count, MPI_INT, ib, rc, rd, MPI_INT, root, w);
        if (rank == root)
            for (int j = 0; j < P; j++)
                if (ib[rd[j] + rc[j] - 1] != j) die("MPI_Gatherv result");
        free(rc), free(rd);
    }

    /* MPI_Scatter */
    for (int j = 0; j < P; j++)
        for (int i = 0; i < count; i++) ia[j * count + i] = j;
    MPI_Scatter(ia, count, MPI_INT, ib, count, MPI_INT, root, w);
    if (ib[count - 1] != rank) die("MPI_Scatter result");
    for (int j = 0; j < P; j++)
        for (int i = 0; i < count + 1; i++) ia[j * (count + 1) + i] = j;
    if (rank == root) {
        MPI_Scatter(ia, count + 1, MPI_INT, MPI_IN_PLACE, count + 1, MPI_INT, root, w);
    } else {
        MPI_Scatter(NULL, 0, MPI_INT, ib, count + 1, MPI_INT, root, w);
        if (ib[count] != rank) die("MPI_Scatter(MPI_IN_PLACE) result");
    }

    /* MPI_Scatterv */
    {
        int *sc = alloc(sizeof(int) * P), *sd = alloc(sizeof(int) * P), off = 0;
        for (int j = 0; j < P; j++) sc[j] = (P - j) * count, sd[j] = off, off += sc[j];
        for (int j = 0; j < P; j++)
            for (int i = 0; i < sc[j]; i++) da[sd[j] + i] = j;
        MPI_Scatterv(da, sc, sd, MPI_DOUBLE, db, (P - rank) * count, MPI_DOUBLE, root, w);
        if (db[(P - rank) * count - 1] != rank) die("MPI_Scatterv result");
        free(sc), free(sd);
    }

    /* MPI_Allgather on a sub-communicator: the ranks of the same parity */
    {
        MPI_Comm sub;
        int subsize;
        MPI_Comm_split(w, rank % 2, -rank, &sub);
        MPI_Comm_size(sub, &subsize);
        for (int i = 0; i < count; i++) ia[i] = rank;
        MPI_Allgather(ia, count, MPI_INT, ib, count, MPI_INT, sub);
        for (int j = 0; j < subsize; j++)
            if (ib[j * count] % 2 != rank % 2) die("MPI_Allgather result");
        MPI_Comm_free(&sub);
    }

    /* MPI_Barrier */
    MPI_Barrier(w);
    MPI_Barrier(w);

    /* nonblocking collectives */
    {
        MPI_Request req[2];
        for (int i = 0; i < count; i++) da[i] = 2.0;
        for (int i = 0; i < count + 5; i++) ia[i] = rank == root ? 7 : 0;
        MPI_Iallreduce(da, db, count, MPI_DOUBLE, MPI_SUM, w, &req[0]);
        MPI_Ibcast(ia, count + 5, MPI_INT, root, w, &req[1]);
        MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
        if (db[0] != 2.0 * P || ia[count + 4] != 7) die("MPI_Iallreduce/MPI_Ibcast result");
    }

    if (rank == 0) printf("traffic_coll: %d ranks, count %d, root %d: done\n", P, count, root);
    free(ia), free(ib), free(da), free(db);
    MPI_Finalize();
    return 0;
}
