/* mpilens-merge: the profile of a run that did not reach MPI_Finalize, or of an MPI_Pcontrol
 * snapshot, from its per-rank payload files, by the merge rank 0 runs at MPI_Finalize (merge.c).
 * `mpilens report` calls it; it needs no MPI.
 *
 *   mpilens-merge [--nranks N] [--time-sample N] [--intervals] [--version V] [--mpi NAME] FILE...
 *
 * A file holds one payload or several in a row. Writes profile.json's document on stdout, and one line per file it cannot use on stderr
 * ("FILE: what is wrong"). Exit status: 0 when at least one file was merged, 2 when none could be,
 * 1 for a usage error. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "merge.h"
#include "ml_rundir.h"

static int usage(const char *why)
{
    fprintf(stderr, "mpilens-merge: %s\nusage: mpilens-merge [--nranks N] [--time-sample N] [--intervals] "
                    "[--version V] [--mpi NAME] FILE...\n", why);
    return 1;
}

/* The whole file in a growing buffer; NULL (errno set) when it cannot be read. Only a regular
 * file, never through a link (a FIFO would block, a device never end: EINVAL, ELOOP). */
static char *read_file(const char *path, size_t *len)
{
    const int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0) return NULL;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        errno = EINVAL;
        return NULL;
    }
    FILE *f = fdopen(fd, "rb");
    if (f == NULL) {
        close(fd);
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf != NULL) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) break;
        char *b = realloc(buf, cap *= 2);
        if (b == NULL) free(buf);
        buf = b;
    }
    const int err = ferror(f);
    fclose(f);
    if (buf == NULL || err) {
        free(buf);
        errno = buf == NULL ? ENOMEM : EIO;
        return NULL;
    }
    *len = n;
    return buf;
}

int main(int argc, char **argv)
{
    ml_merge_opts_t o = {.nranks = 0, .time_sample = 1, .gather_s = -1};
    int i = 1;
    for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (strcmp(a, "--intervals") == 0) {
            o.intervals = 1;
            continue;
        }
        if (i + 1 >= argc) return usage("an option lacks its value");
        char *end;
        if (strcmp(a, "--nranks") == 0) {
            o.nranks = (int)strtol(argv[++i], &end, 10);
            if (*end || o.nranks < 1) return usage("--nranks: not a positive integer");
        } else if (strcmp(a, "--time-sample") == 0) {
            o.time_sample = strtol(argv[++i], &end, 10);
            if (*end || o.time_sample < 1) return usage("--time-sample: not a positive integer");
        } else if (strcmp(a, "--version") == 0) {
            o.version = argv[++i];
        } else if (strcmp(a, "--mpi") == 0) {
            o.mpi = argv[++i];
        } else {
            return usage("unknown option");
        }
    }
    if (i == argc) return usage("no payload file given");

    char *all = NULL;
    size_t len = 0, cap = 0;
    int merged = 0, nranks = 0;
    for (; i < argc; i++) {
        size_t n = 0;
        char *data = read_file(argv[i], &n);
        if (data == NULL) {
            fprintf(stderr, "%s: cannot read (%s)\n", argv[i], strerror(errno));
            continue;
        }
        /* a file holds one payload, or several one after the other (as rank 0 gathers them) */
        size_t whole = 0;
        for (size_t at = 0, k; at < n; at += k) {
            char why[256];
            k = ml_payload_check(data + at, n - at, why, sizeof why);
            if (k == 0) {
                if (at == 0) fprintf(stderr, "%s: %s\n", argv[i], why);
                else fprintf(stderr, "%s: at byte %zu: %s\n", argv[i], at, why);
                break;
            }
            ml_payload_head_t head;
            memcpy(&head, data + at, sizeof head);
            if ((int)head.nranks > nranks) nranks = (int)head.nranks;
            whole = at + k;
        }
        if (whole == 0) {
            free(data);
            continue;
        }
        if (len + whole > cap) {
            cap = 2 * (len + whole);
            char *b = realloc(all, cap);
            if (b == NULL) {
                fprintf(stderr, "mpilens-merge: out of memory\n");
                return 2;
            }
            all = b;
        }
        memcpy(all + len, data, whole);
        len += whole;
        merged++;
        free(data);
    }
    if (merged == 0) return 2;
    if (o.nranks == 0) o.nranks = nranks;
    if (ml_merge_profile(stdout, all, len, &o) != 0 || fflush(stdout) != 0) {
        fprintf(stderr, "mpilens-merge: cannot write the profile (%s)\n", strerror(errno));
        return 2;
    }
    free(all);
    return 0;
}
