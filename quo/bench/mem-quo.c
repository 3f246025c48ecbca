/* mem-quo: the QUO side of the footprint measurement (seed 001, Table 5.3): a context is created
 * and used as QUOBench uses it, then sampled like mem-trivial; the difference is QUO's footprint. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "footprint.h"

#include "quo.h"


int main(int argc, char **argv)
{
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    QUO_context q = NULL;
    int n = 0, selected = 0;
    if (QUO_create(&q, MPI_COMM_WORLD) != QUO_SUCCESS) MPI_Abort(MPI_COMM_WORLD, 1);
    QUO_npus(q, &n);
    QUO_auto_distrib(q, QUO_OBJ_SOCKET, 1, &selected);
    QUO_bind_push(q, QUO_BIND_PUSH_OBJ, QUO_OBJ_SOCKET, -1);
    QUO_bind_pop(q);
    QUO_barrier(q);
    MPI_Barrier(MPI_COMM_WORLD);
    long rss, pss, anon;
    footprint(&rss, &pss, &anon);
    MPI_Barrier(MPI_COMM_WORLD); /* every rank sampled before anyone leaves (PSS shares move) */
    printf("mem program=quo rank=%d rss_kb=%ld pss_kb=%ld anon_kb=%ld\n", rank, rss, pss, anon);
    QUO_free(q);
    MPI_Finalize();
    return 0;
}
