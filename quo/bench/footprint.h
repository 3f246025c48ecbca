/* footprint: how mem-quo and mem-trivial sample their memory. One copy, because the difference of
 * the two programs is only meaningful when both measure the same way. */
#ifndef QUO_BENCH_FOOTPRINT_H
#define QUO_BENCH_FOOTPRINT_H

#include <stdio.h>
#include <string.h>

/* Rss, Pss and Anonymous (memory backed by no file: heap, copied-on-write library data) of this
 * process, in kB, from /proc/self/smaps_rollup (-1 when not readable) */
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

#endif
