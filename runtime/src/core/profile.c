/* profile.json at MPI_Finalize: rank 0 writes the whole run's merge, which the ranks reduced up a
 * tree (core.c; merge.c, the same merge mpilens-merge runs on the payload files of partial runs and
 * snapshots). */
#include <stdio.h>
#include <stdlib.h>

#include "merge.h"
#include "ml.h"
#include "ml_files.h"
#include "ml_output.h"

#ifndef ML_VERSION
#define ML_VERSION "0"
#endif

static ml_merge_opts_t options(int nranks, double gather_s)
{
    return (ml_merge_opts_t){.nranks = nranks, .time_sample = ml_g.config.time_sample, .intervals = ml_g.intervals,
                             .version = ML_VERSION, .mpi = ML_MPI_FLAVOR, .gather_s = gather_s};
}

size_t ml_profile_bytes(ml_merge_t *merged, size_t gathered, int nranks, double gather_s)
{
    const ml_merge_opts_t o = options(nranks, gather_s);
    char *doc = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&doc, &n);
    if (f == NULL) return 0;
    const int rc = ml_merge_write(f, merged, &o, gathered);
    const int bad = ferror(f);
    fclose(f);
    free(doc);
    return rc == 0 && !bad ? n : 0;
}

int ml_profile_write(const char *path, ml_merge_t *merged, size_t gathered, int nranks, double gather_s)
{
    const ml_merge_opts_t o = options(nranks, gather_s);
    char tmp[4300];
    if (ml_file_temp_name(tmp, sizeof tmp, path) != 0) return -1;
    FILE *f = ml_file_fopen(tmp);
    if (f == NULL) return -1;
    const int rc = ml_merge_write(f, merged, &o, gathered);
    const int bad = ferror(f);
    if (fclose(f) != 0 || bad || rc != 0) {
        ml_file_unlink(tmp);
        return -1;
    }
    return ml_file_rename(tmp, path);
}
