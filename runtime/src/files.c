/* A rank's files: one per rank per stream, or (MPILENS_FILES=host) chunks in containers shared by
 * the ranks of a host, so that a parallel file system sees a few files per host and not one per
 * rank per stream.
 *
 * A container is two files in the folder of a stream's family (runtime/spec/rundir.yaml,
 * `container`): the data (group-NNNNNN.mlc), chunks each made of a head (rank, stream, length)
 * and a piece of the rank's file, and the index (group-NNNNNN.mlx), one 32-byte record per chunk
 * written after the chunk. Every rank of the group opens both for appending: O_APPEND gives each
 * write(2) a range of its own, so the ranks need no leader and no shared memory, and a rank
 * killed at any moment leaves the others' chunks intact. Where a chunk landed is the file
 * position of this process's descriptor after the write, read under a lock (the threads of a
 * process share the descriptor). A signal handler that finds the lock taken (the thread it
 * interrupted holds it) writes through descriptors of its own.
 *
 * Why an index after the data and not only the chunk heads: a write cut short (a process killed
 * in the middle, a full disk) leaves a torn chunk that the next rank's chunk follows; a reader
 * hopping from head to head would lose its way there. The index names only chunks written whole;
 * its records are 32 bytes written at multiples of 32, so within one page, whole or absent.
 */
#include "ml_files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ml.h"

static int grouped, group, slot;

int ml_files_grouped(void) { return grouped; }
int ml_files_group(void) { return group; }
int ml_files_slot(void) { return slot; }

/* auto: per host from this many ranks on (below it a directory of per-rank files is small) */
enum { AUTO_HOST_FROM = 64 };

void ml_files_init(void)
{
    group = ml_g.rank;
    int mode = (int)ml_g.config.files;
    if (mode == ML_FILES_AUTO) mode = ml_g.size >= AUTO_HOST_FROM ? ML_FILES_HOST : ML_FILES_RANK;
    if (mode != ML_FILES_HOST) return;
    MPI_Comm local;
    if (PMPI_Comm_split_type(ml_g.comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local) != MPI_SUCCESS) return;
    int lrank = 0, lsize = 1;
    PMPI_Comm_rank(local, &lrank);
    PMPI_Comm_size(local, &lsize);
    int *world = malloc((size_t)lsize * sizeof *world);
    /* every rank takes the same decision: a rank that cannot allocate still joins the gather */
    int dummy[1];
    PMPI_Allgather(&ml_g.rank, 1, MPI_INT, world ? world : dummy, world ? 1 : 0, MPI_INT, local);
    PMPI_Comm_free(&local);
    if (world == NULL) return;
    /* the split keeps the world order (key 0 for all): groups of consecutive ranks of the host */
    const long per = ml_g.config.files_group > 0 ? ml_g.config.files_group : lsize;
    const int first = world[(lrank / per) * per];
    free(world);
    ml_files_use_group(first, (int)(lrank % per));
}

void ml_files_use_group(int first_rank, int place)
{
    group = first_rank;
    slot = place;
    grouped = 1;
}

/* ------------------------------------------------------------------------------- paths */
static const char *const rank_paths[] = ML_STREAM_PATHS;
static const char *const folders[] = ML_STREAM_FOLDERS;

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
/* The rank's own file of a stream, its folder created. */
static int rank_path(char *out, size_t n, int kind, unsigned item)
{
    if (kind == ML_STREAM_SNAPSHOT) return ml_rundir_path(out, n, rank_paths[kind], item, ml_g.rank);
    return ml_rundir_path(out, n, rank_paths[kind], ml_g.rank);
}

/* A file of the group's container of a stream (name: ML_CONTAINER_DATA_PATH or _INDEX_PATH). */
int ml_files_container_path(char *out, size_t n, int kind, unsigned item, const char *name)
{
    char folder[256], file[64];
    if (kind == ML_STREAM_SNAPSHOT)
        snprintf(folder, sizeof folder, folders[kind], item);
    else
        snprintf(folder, sizeof folder, "%s", folders[kind]);
    snprintf(file, sizeof file, name, group);
    return ml_rundir_path(out, n, "%s/%s", folder, file);
}
#pragma GCC diagnostic pop

/* ------------------------------------------------------------------------------- streams */
int ml_stream_open(ml_stream_t *s, int kind, unsigned item)
{
    s->kind = kind;
    s->item = item;
    s->fd = s->index_fd = -1;
    pthread_mutex_init(&s->lock, NULL);
    if (kind < 1 || kind > ML_STREAM_COUNT) {
        errno = EINVAL;
        return -1;
    }
    if (!grouped) {
        if (rank_path(s->data_path, sizeof s->data_path, kind, item) != 0) return -1;
        s->fd = open(s->data_path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0666);
        return s->fd < 0 ? -1 : 0;
    }
    if (ml_files_container_path(s->data_path, sizeof s->data_path, kind, item, ML_CONTAINER_DATA_PATH) != 0 ||
        ml_files_container_path(s->index_path, sizeof s->index_path, kind, item, ML_CONTAINER_INDEX_PATH) != 0)
        return -1;
    /* never truncated: the group's other ranks write into it too */
    s->fd = open(s->data_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
    if (s->fd < 0) return -1;
    s->index_fd = open(s->index_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
    if (s->index_fd < 0) {
        const int e = errno;
        close(s->fd);
        s->fd = -1;
        errno = e;
        return -1;
    }
    return 0;
}

static uint32_t fnv1a(const void *p, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ ((const unsigned char *)p)[i]) * 16777619u;
    return h;
}

/* One chunk through descriptors fd and ifd; the caller makes sure no other thread of the process
 * uses them meanwhile. */
static int put_chunk(ml_stream_t *s, int fd, int ifd, const struct iovec *v, int n, size_t total, uint32_t thread)
{
    ml_container_chunk_t head = {.rank = (uint32_t)ml_g.rank, .stream = (uint16_t)s->kind,
                                 .item = (uint16_t)s->item, .length = total, .thread = thread, .zero = 0};
    memcpy(head.magic, ML_MAGIC_CONTAINER, ML_MAGIC_LEN);
    struct iovec all[8] = {{&head, sizeof head}};
    for (int i = 0; i < n; i++) all[i + 1] = v[i];
    const ssize_t w = writev(fd, all, n + 1);
    if (w != (ssize_t)(sizeof head + total)) return -1; /* torn: no index record, never read */
    const off_t end = lseek(fd, 0, SEEK_CUR);
    if (end < w) return -1;
    ml_container_index_t rec = {.offset = (uint64_t)(end - w), .length = total, .rank = head.rank,
                                .stream = head.stream, .item = head.item, .thread = thread};
    rec.check = fnv1a(&rec, offsetof(ml_container_index_t, check));
    return write(ifd, &rec, sizeof rec) == (ssize_t)sizeof rec ? 0 : -1;
}

/* A file of its own (per rank): all of v, resumed after a short write or a signal. (A container's
 * chunk is one writev or nothing: resuming it could interleave with another rank's chunk.) */
static int write_all(int fd, const struct iovec *v, int n)
{
    struct iovec left[7];
    memcpy(left, v, (size_t)n * sizeof *v);
    struct iovec *p = left;
    while (n > 0) {
        const ssize_t w = writev(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        size_t done = (size_t)w;
        for (; n > 0 && done >= p->iov_len; n--, p++) done -= p->iov_len;
        if (n > 0) {
            p->iov_base = (char *)p->iov_base + done;
            p->iov_len -= done;
        }
    }
    return 0;
}

int ml_stream_writev(ml_stream_t *s, const struct iovec *v, int n, uint32_t thread)
{
    if (s->fd < 0 || n < 0 || n > 7) return -1;
    size_t total = 0;
    for (int i = 0; i < n; i++) total += v[i].iov_len;
    if (s->index_fd < 0) return write_all(s->fd, v, n);
    if (total == 0) return 0;
    if (pthread_mutex_trylock(&s->lock) != 0) {
        /* another thread writes, or this thread was interrupted while writing (a signal handler):
         * wait a little for the first, then go around the second through descriptors of our own */
        int taken = 0;
        for (int i = 0; i < 2000 && !(taken = pthread_mutex_trylock(&s->lock) == 0); i++) usleep(100);
        if (!taken) {
            const int fd = open(s->data_path, O_WRONLY | O_APPEND | O_CLOEXEC);
            const int ifd = open(s->index_path, O_WRONLY | O_APPEND | O_CLOEXEC);
            const int rc = fd >= 0 && ifd >= 0 ? put_chunk(s, fd, ifd, v, n, total, thread) : -1;
            if (fd >= 0) close(fd);
            if (ifd >= 0) close(ifd);
            return rc;
        }
    }
    const int rc = put_chunk(s, s->fd, s->index_fd, v, n, total, thread);
    pthread_mutex_unlock(&s->lock);
    return rc;
}

int ml_stream_write(ml_stream_t *s, const void *p, size_t n)
{
    struct iovec v = {(void *)p, n};
    return ml_stream_writev(s, &v, 1, 0);
}

void ml_stream_close(ml_stream_t *s)
{
    if (s->fd >= 0) close(s->fd);
    if (s->index_fd >= 0) close(s->index_fd);
    s->fd = s->index_fd = -1;
}

/* ------------------------------------------------------------------------------- stdio */
static ssize_t cookie_write(void *c, const char *p, size_t n)
{
    return ml_stream_write(c, p, n) == 0 ? (ssize_t)n : -1;
}

static int cookie_close(void *c)
{
    ml_stream_close(c);
    free(c);
    return 0;
}

FILE *ml_stream_fopen(int kind, unsigned item)
{
    if (!grouped) {
        char path[4352];
        if (kind < 1 || kind > ML_STREAM_COUNT || rank_path(path, sizeof path, kind, item) != 0) return NULL;
        return fopen(path, "w");
    }
    ml_stream_t *s = malloc(sizeof *s);
    if (s == NULL) return NULL;
    if (ml_stream_open(s, kind, item) != 0) {
        free(s);
        return NULL;
    }
    FILE *f = fopencookie(s, "w", (cookie_io_functions_t){.write = cookie_write, .close = cookie_close});
    if (f == NULL) cookie_close(s);
    return f;
}

int ml_stream_commit(int kind, unsigned item, const char *tmp, const char *path)
{
    if (!grouped) return rename(tmp, path);
    int rc = -1;
    const int fd = open(tmp, O_RDONLY | O_CLOEXEC);
    const off_t n = fd >= 0 ? lseek(fd, 0, SEEK_END) : -1;
    void *m = n > 0 ? mmap(NULL, (size_t)n, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
    if (m != MAP_FAILED) {
        static ml_stream_t s; /* its paths take 8 KiB: not on a signal handler's stack */
        if (ml_stream_open(&s, kind, item) == 0) {
            rc = ml_stream_write(&s, m, (size_t)n);
            ml_stream_close(&s);
        }
        munmap(m, (size_t)n);
    }
    if (fd >= 0) close(fd);
    unlink(tmp);
    return rc;
}

/* ------------------------------------------------------------------------------- whole files */
FILE *ml_whole_open(ml_whole_t *w, int kind, unsigned item)
{
    w->kind = kind;
    w->item = item;
    w->buf = NULL;
    w->len = 0;
    w->f = NULL;
    w->tmp[0] = 0;
    if (kind < 1 || kind > ML_STREAM_COUNT) {
        errno = EINVAL;
        return NULL;
    }
    if (grouped) {
        if (ml_files_container_path(w->path, sizeof w->path, kind, item, ML_CONTAINER_DATA_PATH) != 0) return NULL;
        w->f = open_memstream(&w->buf, &w->len);
        return w->f;
    }
    if (rank_path(w->path, sizeof w->path, kind, item) != 0) return NULL;
    snprintf(w->tmp, sizeof w->tmp, "%s.tmp", w->path);
    w->f = fopen(w->tmp, "w");
    return w->f;
}

const char *ml_whole_where(const ml_whole_t *w) { return w->path; }

int ml_whole_close(ml_whole_t *w)
{
    if (w->f == NULL) return -1;
    const int bad = ferror(w->f);
    const int closed = fclose(w->f);
    w->f = NULL;
    if (!grouped) {
        if (closed != 0 || bad) {
            unlink(w->tmp);
            return -1;
        }
        return rename(w->tmp, w->path);
    }
    int rc = -1;
    if (closed == 0 && !bad) {
        ml_stream_t s;
        if (ml_stream_open(&s, w->kind, w->item) == 0) {
            rc = ml_stream_write(&s, w->buf, w->len);
            ml_stream_close(&s);
        }
    }
    free(w->buf); /* open_memstream's buffer, allocated by the C library: ml_sys_free, as the tool's */
    w->buf = NULL;
    return rc;
}
