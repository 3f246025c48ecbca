/* mem-trivial: the baseline of the QUO footprint measurement (seed 001, Table 5.3): an MPI program
 * that does nothing, with the same sampling as mem-quo. It does not link libquo. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

/* Rss, Pss and Anonymous (memory backed by no file: heap, copied-on-write library data) of this
 * process, in kB, from /proc/self/smaps_rollup */
static void footprint(long *rss, long *pss, long *anon)
{
    char line[256];
    *rss = *pss = *anon = -1;
    FILE *f = fopen("/proc/self/smaps_rollup", "r");
    if (!f) return;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "Rss:", 4) == 0) sscanf(line + 4, "%ld", rss);
        else if (strncmp(line, "Pss:", 4) == 0) sscanf(line + 4, "%ld", pss);
        else if (strncmp(line, "Anonymous:", 10) == 0) sscanf(line + 10, "%ld", anon);
    }
    fclose(f);
}

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
