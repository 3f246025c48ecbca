/* files_sim: the runtime's file writing (runtime/src/core/files.c, compiled in unchanged) for many
 * simulated ranks on simulated hosts, to count the files each mode leaves at a scale this
 * machine cannot run as a real job (bench/files.py drives it; bench/RESULTS.md, "Files per mode").
 *
 * Usage: files_sim OUTDIR RANKS PER_HOST LAYOUT STREAM...
 *   LAYOUT rank | host; STREAM: a stream id of runtime/spec/rundir.yaml (enum stream).
 * Each simulated rank is a process of its own (forked), with its world rank, and with LAYOUT host
 * the group MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) gives it when PER_HOST consecutive ranks
 * share a host. The ranks of one host run at the same time (their chunks interleave in the
 * containers as on a real host); hosts run one after the other. Each rank writes each stream as
 * the modes do: a series of pieces (a trace: 8 blocks), or one whole file (ml_whole_*). A piece's
 * bytes are a function of (rank, stream, piece), so bench/files.py checks every rank's file read
 * back through mpilens.layout against what was written. */
#define ML_MEMORY_C /* the real allocation functions (ml_alloc.h): this program is not measured */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ml.h"
#include "ml_files.h"

ml_global_t ml_g; /* what files.c reads: rank, outdir, config */

/* core.c's, for files.c (the same code) */
int ml_make_dirs(const char *path)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(tmp, 0777) != 0 && errno != EEXIST) return -1;
            *p = '/';
        }
    return mkdir(tmp, 0777) != 0 && errno != EEXIST ? -1 : 0;
}

int ml_rundir_path(char *path, size_t n, const char *format, ...)
{
    const int k = snprintf(path, n, "%s/", ml_g.outdir);
    va_list ap;
    va_start(ap, format);
    const int m = vsnprintf(path + k, n - (size_t)k, format, ap);
    va_end(ap);
    if (m < 0 || (size_t)(k + m) >= n) return -1;
    char *slash = strrchr(path, '/');
    *slash = 0;
    const int rc = ml_make_dirs(path);
    *slash = '/';
    return rc;
}

void *ml_sys_malloc(size_t n) { return malloc(n); }
void ml_sys_free(void *p) { free(p); }
void *ml_sys_calloc(size_t m, size_t n) { return calloc(m, n); }
void *ml_sys_realloc(void *p, size_t n) { return realloc(p, n); }
void *ml_sys_mmap(void *a, size_t l, int p, int f, int d, off_t o) { return mmap(a, l, p, f, d, o); }
int ml_sys_munmap(void *a, size_t l) { return munmap(a, l); }

/* piece k of a rank's stream: bytes that tell rank, stream and piece apart */
static void fill(char *buf, size_t n, int rank, int stream, int k)
{
    for (size_t i = 0; i < n; i++) buf[i] = (char)((rank * 131 + stream * 31 + k * 7 + (int)i) & 0xff);
}

enum { PIECES = 8, PIECE = 4096 };

static int write_rank(int stream)
{
    static char buf[PIECE];
    if (stream == ML_STREAM_TRACE || stream == ML_STREAM_MEMORY || stream == ML_STREAM_COUNTERS_SERIES ||
        stream == ML_STREAM_MPIT) { /* written as it goes */
        ml_stream_t s;
        if (ml_stream_open(&s, stream, 0) != 0) return -1;
        for (int k = 0; k < PIECES; k++) {
            fill(buf, sizeof buf, ml_g.rank, stream, k);
            if (ml_stream_write(&s, buf, sizeof buf) != 0) return -1;
        }
        ml_stream_close(&s);
        return 0;
    }
    ml_whole_t w; /* written once, at MPI_Finalize */
    FILE *f = ml_whole_open(&w, stream, stream == ML_STREAM_SNAPSHOT ? 1 : 0);
    if (f == NULL) return -1;
    for (int k = 0; k < 2; k++) {
        fill(buf, sizeof buf, ml_g.rank, stream, k);
        fwrite(buf, 1, sizeof buf, f);
    }
    return ml_whole_close(&w);
}

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: files_sim OUTDIR RANKS PER_HOST rank|host STREAM...\n");
        return 2;
    }
    snprintf(ml_g.outdir, sizeof ml_g.outdir, "%s", argv[1]);
    const int ranks = atoi(argv[2]), per_host = atoi(argv[3]), host = strcmp(argv[4], "host") == 0;
    for (int first = 0; first < ranks; first += per_host) {
        for (int r = first; r < first + per_host && r < ranks; r++) {
            const pid_t pid = fork();
            if (pid < 0) return 1;
            if (pid == 0) {
                ml_g.rank = r;
                ml_g.size = ranks;
                if (host) ml_files_use_group(first, r - first);
                for (int i = 5; i < argc; i++)
                    if (write_rank(atoi(argv[i])) != 0) _exit(1);
                _exit(0);
            }
        }
        int status, bad = 0;
        while (wait(&status) > 0) bad |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
        if (bad) {
            fprintf(stderr, "files_sim: a simulated rank of host %d failed\n", first / per_host);
            return 1;
        }
    }
    return 0;
}
