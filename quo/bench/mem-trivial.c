/* mem-trivial: the baseline of the QUO footprint measurement (seed 001, Table 5.3): an MPI program
 * that does nothing, with the same sampling as mem-quo. It does not link libquo. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

/* Rss and Pss of this process, in kB, from /proc/self/smaps_rollup */
static void footprint(long *rss, long *pss)
{
    char line[256];
    *rss = *pss = -1;
    FILE *f = fopen("/proc/self/smaps_rollup", "r");
    if (!f) return;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "Rss:", 4) == 0) sscanf(line + 4, "%ld", rss);
        else if (strncmp(line, "Pss:", 4) == 0) sscanf(line + 4, "%ld", pss);
    }
    fclose(f);
}

int main(int argc, char **argv)
{
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Barrier(MPI_COMM_WORLD);
    long rss, pss;
    footprint(&rss, &pss);
    MPI_Barrier(MPI_COMM_WORLD); /* every rank sampled before anyone leaves (PSS shares move) */
    printf("mem program=trivial rank=%d rss_kb=%ld pss_kb=%ld\n", rank, rss, pss);
    MPI_Finalize();
    return 0;
}
