/* mem-trivial: the baseline of the QUO footprint measurement (seed 001, Table 5.3): an MPI program
 * that does nothing, with the same sampling as mem-quo. It does not link libquo. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

/* Rss, Pss and private memory (Private_Clean + Private_Dirty, pages no other process maps) of this
 * process, in kB, from /proc/self/smaps_rollup */
static void footprint(long *rss, long *pss, long *priv)
{
    char line[256];
    long clean = 0, dirty = 0;
    *rss = *pss = *priv = -1;
    FILE *f = fopen("/proc/self/smaps_rollup", "r");
    if (!f) return;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "Rss:", 4) == 0) sscanf(line + 4, "%ld", rss);
        else if (strncmp(line, "Pss:", 4) == 0) sscanf(line + 4, "%ld", pss);
        else if (strncmp(line, "Private_Clean:", 14) == 0) sscanf(line + 14, "%ld", &clean);
        else if (strncmp(line, "Private_Dirty:", 14) == 0) sscanf(line + 14, "%ld", &dirty);
    }
    *priv = clean + dirty;
    fclose(f);
}

int main(int argc, char **argv)
{
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Barrier(MPI_COMM_WORLD);
    long rss, pss, priv;
    footprint(&rss, &pss, &priv);
    MPI_Barrier(MPI_COMM_WORLD); /* every rank sampled before anyone leaves (PSS shares move) */
    printf("mem program=trivial rank=%d rss_kb=%ld pss_kb=%ld private_kb=%ld\n", rank, rss, pss, priv);
    MPI_Finalize();
    return 0;
}
