/* paused: what is created while measuring is paused (MPI_Pcontrol(0)) stays right after it resumes.
 * left = rank-1, right = rank+1 (periodic). Per rank:
 *
 *   measured: MPI_Type_contiguous(4, MPI_INT) t1 + commit; MPI_Sendrecv of 1 t1 (16 B) to right
 *             and from left
 *   MPI_Pcontrol(0), not measured:
 *             MPI_Send_init of 10 int to right and MPI_Recv_init of 10 int from left (tag 5);
 *             MPI_Comm_dup(MPI_COMM_WORLD) c1, MPI_Comm_free(c1); MPI_Comm_split of MPI_COMM_WORLD
 *             with the ranks reversed, c3 (MPI often hands c3 the handle c1 had);
 *             MPI_Type_free(t1), MPI_Type_contiguous(8, MPI_INT) t2 + commit (maybe t1's handle)
 *   MPI_Pcontrol(1), measured:
 *             3 x (MPI_Startall of the two persistent requests + MPI_Waitall): 3 x 40 B each way;
 *             on c3: MPI_Send of 1 t2 (32 B) to c3 rank (crank+1): world rank left; MPI_Recv from
 *             c3 rank (crank-1): world rank right; MPI_Request_free x2, MPI_Comm_free(c3),
 *             MPI_Type_free(t2)
 *
 * So: MPI_Sendrecv 1 call, 16 B each way; MPI_Send and MPI_Recv 1 call, 32 B (t2's size, not
 * t1's); MPI_Send_init / MPI_Recv_init no call (made while paused) but 120 B each, from the 3
 * measured starts; matrix: to right 1 + 3 messages
 * (16 + 120 B), to left 1 message (32 B). Rank 0 prints "paused: ok <nprocs>" when every value
 * arrived intact. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, nprocs, nbad = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    const int left = (rank + nprocs - 1) % nprocs, right = (rank + 1) % nprocs;

    MPI_Datatype t1, t2;
    MPI_Type_contiguous(4, MPI_INT, &t1);
    MPI_Type_commit(&t1);
    int a[4] = {rank, rank, rank, rank}, b[4];
    MPI_Sendrecv(a, 1, t1, right, 1, b, 1, t1, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    nbad += b[0] != left;

    MPI_Pcontrol(0);
    int ps[10], pr[10];
    MPI_Request preq[2];
    MPI_Send_init(ps, 10, MPI_INT, right, 5, MPI_COMM_WORLD, &preq[0]);
    MPI_Recv_init(pr, 10, MPI_INT, left, 5, MPI_COMM_WORLD, &preq[1]);
    MPI_Comm c1, c3;
    MPI_Comm_dup(MPI_COMM_WORLD, &c1);
    MPI_Comm_free(&c1);
    MPI_Comm_split(MPI_COMM_WORLD, 0, nprocs - 1 - rank, &c3);
    MPI_Type_free(&t1);
    MPI_Type_contiguous(8, MPI_INT, &t2);
    MPI_Type_commit(&t2);
    MPI_Pcontrol(1);

    for (int it = 0; it < 3; it++) {
        for (int i = 0; i < 10; i++) ps[i] = rank * 100 + it * 10 + i;
        MPI_Startall(2, preq);
        MPI_Waitall(2, preq, MPI_STATUSES_IGNORE);
        for (int i = 0; i < 10; i++) nbad += pr[i] != left * 100 + it * 10 + i;
    }
    int crank, c[8], d[8];
    MPI_Comm_rank(c3, &crank);
    for (int i = 0; i < 8; i++) c[i] = rank * 8 + i;
    const int cto = (crank + 1) % nprocs, cfrom = (crank + nprocs - 1) % nprocs;
    if (crank % 2 == 0) {
        MPI_Send(c, 1, t2, cto, 2, c3);
        MPI_Recv(d, 1, t2, cfrom, 2, c3, MPI_STATUS_IGNORE);
    } else {
        MPI_Recv(d, 1, t2, cfrom, 2, c3, MPI_STATUS_IGNORE);
        MPI_Send(c, 1, t2, cto, 2, c3);
    }
    for (int i = 0; i < 8; i++) nbad += d[i] != right * 8 + i; /* c3 rank crank-1 is world rank right */
    MPI_Request_free(&preq[0]);
    MPI_Request_free(&preq[1]);
    MPI_Comm_free(&c3);
    MPI_Type_free(&t2);

    int total = 0;
    MPI_Allreduce(&nbad, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf(total == 0 ? "paused: ok %d\n" : "paused: wrong %d\n", total == 0 ? nprocs : total);
    MPI_Finalize();
    return 0;
}
