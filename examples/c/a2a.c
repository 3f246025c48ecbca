/* a2a: every rank exchanges with every other rank, with a different size per pair, so that each
 * entry of the communication matrix is distinct: a check of the in-job aggregation at scale.
 *
 * Rounds k = 1 .. P-1: rank r sends to (r+k) % P and receives from (r-k) % P with one MPI_Sendrecv;
 * rounds with k % 3 == 0 are done twice. A message from src to dst has
 *     size(src, dst) = 1 + (7*src + 3*dst) % 61 bytes
 * (received into a buffer of 64 bytes, so the size comes from the status). Then one MPI_Alltoall
 * of one int per process and one MPI_Allreduce of one int (the number of wrong bytes).
 *
 * So per rank: MPI_Sendrecv (P-1) + (P-1)/3 calls, the matrix has P*(P-1) entries with
 * 1 + ((dst-src) mod P % 3 == 0) messages each. Rank 0 prints "a2a: ok P".
 * Usage: a2a (no arguments). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int msg_size(int src, int dst) { return 1 + (7 * src + 3 * dst) % 61; }
static unsigned char payload(int src, int dst, int j) { return (unsigned char)(src * 5 + dst * 11 + j); }

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    int bad = 0;
    unsigned char out[64], in[64];
    for (int k = 1; k < size; k++) {
        const int dst = (rank + k) % size, src = (rank + size - k) % size;
        const int times = k % 3 == 0 ? 2 : 1;
        for (int rep = 0; rep < times; rep++) {
            const int n = msg_size(rank, dst);
            for (int j = 0; j < n; j++) out[j] = payload(rank, dst, j);
            for (int j = 0; j < 64; j++) in[j] = 0;
            MPI_Status st;
            MPI_Sendrecv(out, n, MPI_BYTE, dst, k, in, 64, MPI_BYTE, src, k, MPI_COMM_WORLD, &st);
            int got = -1;
            MPI_Get_count(&st, MPI_BYTE, &got);
            if (got != msg_size(src, rank)) bad++;
            for (int j = 0; j < msg_size(src, rank); j++) bad += in[j] != payload(src, rank, j);
        }
    }

    int *sendv = malloc((size_t)size * sizeof *sendv), *recvv = malloc((size_t)size * sizeof *recvv);
    for (int i = 0; i < size; i++) sendv[i] = rank * size + i;
    MPI_Alltoall(sendv, 1, MPI_INT, recvv, 1, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < size; i++) bad += recvv[i] != i * size + rank;

    int total = 0;
    MPI_Allreduce(&bad, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        if (total == 0)
            printf("a2a: ok %d\n", size);
        else
            printf("a2a: FAILED %d %d wrong\n", size, total);
    }
    free(sendv);
    free(recvv);
    MPI_Finalize();
    return total == 0 ? 0 : 1;
}
