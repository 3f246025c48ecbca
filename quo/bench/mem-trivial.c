/* mem-trivial: the baseline of the QUO footprint measurement (seed 001, Table 5.3): an MPI program
 * that does nothing, with the same sampling as mem-quo. It does not link libquo. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "footprint.h"

int main(int argc, char **argv)
{
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Barrier(MPI_COMM_WORLD);
    long rss, pss, anon;
    footprint(&rss, &pss, &anon);
    MPI_Barrier(MPI_COMM_WORLD); /* every rank sampled before anyone leaves (PSS shares move) */
    printf("mem program=trivial rank=%d rss_kb=%ld pss_kb=%ld anon_kb=%ld\n", rank, rss, pss, anon);
    MPI_Finalize();
    return 0;
}
