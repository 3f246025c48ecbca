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
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
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
        s->fd = ml_file_create(s->data_path, O_WRONLY | O_APPEND, 0666);
        return s->fd < 0 ? -1 : 0;
    }
    if (ml_files_container_path(s->data_path, sizeof s->data_path, kind, item, ML_CONTAINER_DATA_PATH) != 0 ||
        ml_files_container_path(s->index_path, sizeof s->index_path, kind, item, ML_CONTAINER_INDEX_PATH) != 0)
        return -1;
    /* never truncated: the group's other ranks write into it too */
    s->fd = ml_file_shared(s->data_path, O_WRONLY | O_CREAT | O_APPEND, 0666);
    if (s->fd < 0) return -1;
    s->index_fd = ml_file_shared(s->index_path, O_WRONLY | O_CREAT | O_APPEND, 0666);
    if (s->index_fd < 0) {
        const int e = errno;
        close(s->fd);
        s->fd = -1;
        errno = e;
        return -1;
    }
    return 0;
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
    rec.check = ml_fnv1a(ML_FNV1A_START, &rec, offsetof(ml_container_index_t, check));
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
            const int fd = ml_file_shared(s->data_path, O_WRONLY | O_APPEND, 0);
            const int ifd = ml_file_shared(s->index_path, O_WRONLY | O_APPEND, 0);
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
        return ml_file_fopen(path);
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
    if (!grouped) return ml_file_rename(tmp, path);
    int rc = -1;
    const int fd = ml_file_shared(tmp, O_RDONLY, 0);
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
    ml_file_unlink(tmp);
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
    if (ml_file_temp_name(w->tmp, sizeof w->tmp, w->path) != 0) return NULL;
    w->f = ml_file_fopen(w->tmp);
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
            ml_file_unlink(w->tmp);
            return -1;
        }
        return ml_file_rename(w->tmp, w->path);
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

/* ------------------------------------------------------------------------------- safe files
 * Every file the runtime writes lies under a folder the user named: the run directory or
 * MPILENS_LIVE_DIR (a base). Each base is opened once, at MPI_Init, and its files are reached from
 * that descriptor one component at a time with O_NOFOLLOW, so a symbolic link planted in a run
 * directory others can write into never redirects a write: the write fails, and the writer says
 * which file it could not write. New files are created exclusively (O_EXCL) under temporary names
 * nobody can guess, then renamed into place (a rename replaces a link; it never follows one). The
 * few files opened by several ranks (a host's containers and live slots) are opened without O_EXCL
 * and kept only when they are regular files of ours with a single link. Async-signal-safe: no
 * allocation, no stdio (the exit paths of killed ranks use it). */

typedef struct {
    int fd;
    dev_t dev;
    ino_t ino;
    size_t len; /* of path */
    char path[4096];
} base_t;

static base_t bases[ML_BASE_COUNT] = {{.fd = -1}, {.fd = -1}};

/* fd moved out of the way of applications that reuse the low descriptors they closed */
static int high_fd(int fd)
{
    if (fd < 0) return fd;
    const int high = fcntl(fd, F_DUPFD_CLOEXEC, 512);
    if (high < 0) return fd;
    close(fd);
    return high;
}

int ml_base_open(int which, const char *path)
{
    base_t *b = &bases[which];
    if (b->fd >= 0) close(b->fd);
    b->fd = -1;
    const size_t len = strlen(path);
    if (len == 0 || len >= sizeof b->path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    /* the user named this folder: its own path is resolved as the user meant it */
    const int fd = high_fd(open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    struct stat st;
    if (fd < 0) return -1;
    if (fstat(fd, &st) != 0) {
        close(fd);
        return -1;
    }
    b->fd = fd;
    b->dev = st.st_dev;
    b->ino = st.st_ino;
    memcpy(b->path, path, len + 1);
    size_t n = len;
    while (n > 1 && b->path[n - 1] == '/') b->path[--n] = 0;
    b->len = n;
    return 0;
}

/* The base's descriptor, still the folder opened at MPI_Init (an application may have closed or
 * reused it: then the folder is opened again, and refused if it is no longer the same one). */
static int base_fd(base_t *b)
{
    struct stat st;
    if (b->fd >= 0 && fstat(b->fd, &st) == 0 && S_ISDIR(st.st_mode) && st.st_dev == b->dev && st.st_ino == b->ino)
        return b->fd;
    const int fd = high_fd(open(b->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (fd < 0) return -1;
    if (fstat(fd, &st) != 0 || st.st_dev != b->dev || st.st_ino != b->ino) {
        close(fd);
        errno = ESTALE;
        return -1;
    }
    b->fd = fd;
    return fd;
}

/* The base path lies under, and path's part after it. */
static base_t *base_of(const char *path, const char **rel)
{
    for (int i = 0; i < ML_BASE_COUNT; i++) {
        base_t *b = &bases[i];
        if (b->fd < 0 || strncmp(path, b->path, b->len) != 0) continue;
        if (path[b->len] == '/' && path[b->len + 1] != 0) {
            *rel = path + b->len + 1;
            return b;
        }
    }
    errno = EXDEV;
    return NULL;
}

/* A descriptor of the folder path is in (its folders created when create), and path's last
 * component in name (at most 255 bytes). -1 with errno: ELOOP for a link on the way. */
static int folder_of(const char *path, int create, char name[256])
{
    const char *rel;
    base_t *b = base_of(path, &rel);
    if (b == NULL) return -1;
    const int top = base_fd(b);
    if (top < 0) return -1;
    int dir = openat(top, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    while (dir >= 0) {
        const char *slash = strchr(rel, '/');
        const size_t n = slash ? (size_t)(slash - rel) : strlen(rel);
        if (n == 0 || n > 255 || (n == 1 && rel[0] == '.') || (n == 2 && rel[0] == '.' && rel[1] == '.')) {
            close(dir);
            errno = EINVAL;
            return -1;
        }
        memcpy(name, rel, n);
        name[n] = 0;
        if (slash == NULL) return dir;
        int next = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (next < 0 && errno == ENOENT && create) {
            if (mkdirat(dir, name, 0777) != 0 && errno != EEXIST) next = -1;
            else next = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        }
        const int e = errno;
        close(dir);
        errno = e;
        dir = next;
        rel = slash + 1;
    }
    return -1;
}

int ml_file_folder(const char *path)
{
    char name[256];
    const int dir = folder_of(path, 1, name);
    if (dir < 0) return -1;
    close(dir);
    return 0;
}

int ml_file_create(const char *path, int flags, mode_t mode)
{
    char name[256];
    const int dir = folder_of(path, 1, name);
    if (dir < 0) return -1;
    const int fd = openat(dir, name, flags | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    const int e = errno;
    close(dir);
    errno = e;
    return fd;
}

int ml_file_shared(const char *path, int flags, mode_t mode)
{
    char name[256];
    const int dir = folder_of(path, 1, name);
    if (dir < 0) return -1;
    const int fd = openat(dir, name, flags | O_NOFOLLOW | O_CLOEXEC, mode);
    const int e = errno;
    close(dir);
    errno = e;
    if (fd < 0) return -1;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1 || st.st_uid != geteuid()) {
        close(fd);
        errno = EPERM; /* not a file this job made: someone else's file, or a hard link to one */
        return -1;
    }
    return fd;
}

int ml_file_rename(const char *from, const char *to)
{
    char a[256], b[256];
    const int dir = folder_of(to, 0, b);
    if (dir < 0) return -1;
    const char *slash_from = strrchr(from, '/'), *slash_to = strrchr(to, '/');
    int rc = -1;
    /* both in one folder (a temporary file sits beside its file) */
    if (slash_from != NULL && slash_to != NULL && slash_from - from == slash_to - to &&
        strncmp(from, to, (size_t)(slash_to - to)) == 0 && strlen(slash_from + 1) < sizeof a) {
        memcpy(a, slash_from + 1, strlen(slash_from + 1) + 1);
        rc = renameat(dir, a, dir, b);
    } else {
        errno = EXDEV;
    }
    const int e = errno;
    close(dir);
    errno = e;
    return rc;
}

int ml_file_unlink(const char *path)
{
    char name[256];
    const int dir = folder_of(path, 0, name);
    if (dir < 0) return -1;
    const int rc = unlinkat(dir, name, 0);
    const int e = errno;
    close(dir);
    errno = e;
    return rc;
}

int ml_file_temp_name(char *out, size_t n, const char *path)
{
    unsigned char r[8];
    if (getrandom(r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) {
        /* no entropy yet (early boot): the time and the process, still unknown to others beforehand */
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t x = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15u ^ (uint64_t)getpid() << 32 ^ (uint64_t)(uintptr_t)&x;
        memcpy(r, &x, sizeof r);
    }
    static const char hex[] = "0123456789abcdef";
    const size_t len = strlen(path);
    if (len + 5 + 16 + 1 > n) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(out, path, len);
    memcpy(out + len, ".tmp-", 5);
    for (int i = 0; i < 8; i++) {
        out[len + 5 + 2 * i] = hex[r[i] >> 4];
        out[len + 5 + 2 * i + 1] = hex[r[i] & 15];
    }
    out[len + 5 + 16] = 0;
    return 0;
}

FILE *ml_file_fopen(const char *path)
{
    const int fd = ml_file_create(path, O_WRONLY, 0666);
    if (fd < 0) return NULL;
    FILE *f = fdopen(fd, "w");
    if (f == NULL) close(fd);
    return f;
}
