/* Statistics that outlive the process: every thread's statistics (the ml_thread_t and its arrays,
 * ml_thread_attach) are a shared mapping of a section of ranks/rank-NNNNNN.stats, so a rank
 * killed by SIGKILL, the OOM killer or a node's launcher leaves them, exact up to its last counted
 * call, in the page cache and then on disk. The hot path is unchanged: plain stores to memory.
 * The names the statistics refer to by number (functions, region paths, user counters, call-site
 * modules) are appended to ranks/rank-NNNNNN.names as they appear. Both files are removed once the
 * profile is written at MPI_Finalize; `mpilens report` recovers a rank from them when it left
 * neither a profile nor a partial file (python/mpilens/recover.py). Layouts: runtime/spec/rundir.yaml
 * (stats, stats_names).
 *
 * A full disk must never kill the application: a store to a page of a shared mapping that the file
 * system cannot back ends in SIGBUS. So every page a thread may write is reserved (fallocate)
 * before it is used: the fixed part of a section when the thread attaches, a region path's rows
 * when the thread first enters it (ml_stats_rows, off the hot path). When a reservation fails the
 * section is given up: its header says so (with the tick), and its pages are replaced, at the same
 * address and with the same contents, by anonymous memory (keep_in_memory: not a private mapping of the
 * file, whose first touch of a hole takes a page from a tmpfs all the same), so the thread goes on
 * counting in memory and its statistics are written at MPI_Finalize as always. A thread whose section cannot be made at all
 * counts in anonymous memory from the start.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ml.h"
#include "ml_callsite.h"
#include "ml_files.h"
#include "ml_stats.h"

#define PAGE 4096u

static int stats_fd = -1, names_fd = -1;
static ml_stats_head_t *head;    /* the file's first page, mapped */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int gave_up_said;
static char stats_path[4200], names_path[4200];

/* Where a section's parts start, from its start (the same for every thread of the process). */
static struct {
    size_t thread, hist, matrix, sites, mode, blocks, rstats, ucounts, bytes, fixed;
    /* in the file: the MPI-IO area (io.c's records, then its accesses), the compute intervals,
     * then the sections */
    size_t io_files, io_accesses, intervals, sections;
} L;
static char *io_area; /* mapped [L.io_files, L.intervals), NULL when not in the file */
static size_t io_rec_bytes; /* the stride of the MPI-IO records; 0: no MPI-IO area (ml_stats_io_area) */
static char *iv_area; /* mapped [L.intervals, L.sections), NULL when not in the file */
static size_t iv_max; /* pairs of the intervals area; 0: none (ml_stats_intervals_area) */

static size_t mode_bytes; /* the area of every section a mode asked for; 0: none (ml_stats_thread_area) */

void ml_stats_io_area(size_t rec_bytes) { io_rec_bytes = rec_bytes; }
void ml_stats_thread_area(size_t bytes) { mode_bytes = (bytes + 63) / 64 * 64; }
void ml_stats_intervals_area(size_t max) { iv_max = max; }

static size_t up(size_t n, size_t to) { return (n + to - 1) / to * to; }

void ml_stats_layout(size_t site_bytes)
{
    const size_t paths = ml_g.max_paths;
    L.thread = PAGE; /* the stats_section header has the first page */
    L.hist = up(L.thread + sizeof(ml_thread_t), 64);
    L.matrix = up(L.hist + (size_t)ML_NFUNC * ML_NBINS * sizeof(ml_hbin_t), 64);
    L.sites = up(L.matrix + (size_t)ml_g.size * sizeof(ml_peer_t), 64);
    L.mode = up(L.sites + site_bytes, 64);
    /* the per-path rows last: reserved one path at a time */
    L.fixed = up(L.mode + mode_bytes, PAGE);
    L.blocks = L.fixed;
    L.rstats = up(L.blocks + paths * ML_NFUNC * sizeof(ml_fstat_t), 64);
    L.ucounts = up(L.rstats + paths * sizeof(ml_rstat_t), 64);
    L.bytes = up(L.ucounts + paths * ML_MAX_COUNTERS * sizeof(ml_ucount_t), PAGE);
    L.io_files = L.io_accesses = L.intervals = PAGE;
    if (io_rec_bytes) {
        L.io_accesses = up(L.io_files + (size_t)ml_g.config.io_max_files * io_rec_bytes, PAGE);
        L.intervals = up(L.io_accesses + (size_t)ml_g.config.io_accesses * sizeof(ml_io_access_t), PAGE);
    }
    L.sections = up(L.intervals + iv_max * 2 * sizeof(uint64_t), PAGE);
}

size_t ml_stats_thread_offset(void) { return L.thread; }
size_t ml_stats_section_bytes(void) { return L.bytes; }

static int write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        const ssize_t k = write(fd, c, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        c += k;
        n -= (size_t)k;
    }
    return 0;
}

#define NAME_MAX_BYTES 4096 /* longer names are cut (the payload's strings hold 65535 bytes) */

/* A name record at buf (room for sizeof(ml_stats_name_t) + 2 + NAME_MAX_BYTES); its length. */
static size_t name_record(char *buf, int kind, uint32_t id, uint32_t aux, uint64_t aux64, const char *name)
{
    size_t len = strlen(name);
    if (len > NAME_MAX_BYTES) len = NAME_MAX_BYTES;
    const ml_stats_name_t r = {(uint8_t)kind, id, aux, aux64};
    memcpy(buf, &r, sizeof r);
    const uint16_t l16 = (uint16_t)len;
    memcpy(buf + sizeof r, &l16, 2);
    memcpy(buf + sizeof r + 2, name, len);
    return sizeof r + 2 + len;
}

static void names_write(const void *p, size_t n)
{
    if (names_fd >= 0 && write_all(names_fd, p, n) != 0) {
        close(names_fd); /* a name missing in the middle would misname the rest: no more */
        names_fd = -1;
    }
}

/* One name record, in one write (O_APPEND): a rank killed in the middle leaves at most a record
 * cut short at the end, which the reader leaves out. Called under the caller's lock. */
void ml_stats_name(int kind, uint32_t id, uint32_t aux, uint64_t aux64, const char *name)
{
    if (names_fd < 0 || name == NULL) return;
    char buf[sizeof(ml_stats_name_t) + 2 + NAME_MAX_BYTES];
    names_write(buf, name_record(buf, kind, id, aux, aux64, name));
}

int ml_stats_open(uint64_t tick_begin, uint64_t ns_begin)
{
    char why[256] = "";
    if (ml_rundir_path(stats_path, sizeof stats_path, ML_PATH_STATS, ml_g.rank) != 0 ||
        ml_rundir_path(names_path, sizeof names_path, ML_PATH_STATS_NAMES, ml_g.rank) != 0)
        return -1;
    stats_fd = ml_file_create(stats_path, O_RDWR, 0666);
    if (stats_fd < 0) {
        snprintf(why, sizeof why, "%s", strerror(errno));
        goto fail;
    }
    const int rc = posix_fallocate(stats_fd, 0, PAGE);
    if (rc != 0) {
        snprintf(why, sizeof why, "cannot reserve its first page: %s", strerror(rc));
        goto fail;
    }
    void *p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, stats_fd, 0);
    if (p == MAP_FAILED) {
        snprintf(why, sizeof why, "mmap: %s", strerror(errno));
        goto fail;
    }
    head = p;
    head->rank = (uint32_t)ml_g.rank;
    head->nranks = (uint32_t)ml_g.size;
    head->pid = (uint32_t)getpid();
    head->nfunc = ML_NFUNC;
    head->max_paths = ml_g.max_paths;
    head->max_counters = ML_MAX_COUNTERS;
    head->nbins = ML_NBINS;
    head->callsite_depth = (uint32_t)ml_callsite_depth();
    head->site_cap = ml_callsite_capacity();
    head->time_sample = (uint32_t)ml_g.config.time_sample;
    head->clock_is_tsc = (uint32_t)ml_clock_is_tsc;
    head->state = 1;
    head->section_bytes = L.bytes;
    head->sections_at = L.sections;
    head->io_rec_bytes = (uint32_t)io_rec_bytes;
    head->io_files_at = L.io_files;
    head->io_max_files = io_rec_bytes ? (uint64_t)ml_g.config.io_max_files : 0;
    head->io_accesses_at = L.io_accesses;
    head->io_max_accesses = io_rec_bytes ? (uint64_t)ml_g.config.io_accesses : 0;
    head->intervals_at = L.intervals;
    head->intervals_max = iv_max;
    head->tick_begin = tick_begin;
    head->ns_begin = ns_begin;
    head->tick_end = ml_g.t_init_end;
    head->ns_end = ml_g.ns_init_end;
    if (gethostname(head->host, sizeof head->host - 1) != 0) head->host[0] = 0;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    memcpy(head->magic, ML_MAGIC_STATS, ML_MAGIC_LEN); /* last: a head without it is not whole */

    /* the magic and the function names in one write */
    names_fd = ml_file_create(names_path, O_WRONLY | O_APPEND, 0666);
    size_t cap = ML_MAGIC_LEN, len = ML_MAGIC_LEN;
    for (int f = 0; f < ML_NFUNC; f++) cap += sizeof(ml_stats_name_t) + 2 + strlen(ml_fn_name[f]);
    char *buf = malloc(cap + sizeof(ml_stats_name_t) + 2 + NAME_MAX_BYTES);
    if (buf != NULL) {
        memcpy(buf, ML_MAGIC_STATS_NAMES, ML_MAGIC_LEN);
        for (int f = 0; f < ML_NFUNC; f++)
            len += name_record(buf + len, ML_STATS_NAME_FUNCTION, (uint32_t)f, ml_fn_class[f], 0, ml_fn_name[f]);
        len += name_record(buf + len, ML_STATS_NAME_REGION, 1, 0, 0, "(overflow)");
        names_write(buf, len);
        free(buf);
    } else if (names_fd >= 0) {
        close(names_fd);
        names_fd = -1;
    }
    static int atfork;
    if (!atfork++) pthread_atfork(NULL, NULL, ml_stats_after_fork);
    return 0;
fail:
    ml_log(0, "cannot keep this rank's statistics in %s (%s): a rank killed before MPI_Finalize will not be reported",
           stats_path, why);
    if (stats_fd >= 0) close(stats_fd);
    stats_fd = -1;
    return -1;
}

static void say_given_up(void)
{
    if (__atomic_exchange_n(&gave_up_said, 1, __ATOMIC_RELAXED)) return;
    ml_log(0, "%s: the file system cannot hold more (%s); the statistics are kept in memory from now on "
              "(written at MPI_Finalize, lost if the rank is killed)", stats_path, strerror(errno));
}

static ml_stats_section_t *section_of(const ml_thread_t *t) { return (ml_stats_section_t *)((char *)t - L.thread); }

/* Anonymous memory in place of the range at `at` (len bytes, mapped from the file at off), holding
 * what the file holds (read with pread: a hole reads as zeros and takes nothing from the file
 * system). 0, or -1 with nothing changed when memory or the read fails. */
static int to_memory(void *at, size_t len, off_t off)
{
    char *copy = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (copy == MAP_FAILED) return -1;
    for (size_t done = 0; done < len;) {
        const ssize_t n = pread(stats_fd, copy + done, len - done, off + (off_t)done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            if (n == 0) break; /* past the end of the file: zeros, as in the mapping */
            munmap(copy, len);
            return -1;
        }
        done += (size_t)n;
    }
    if (mmap(at, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED) {
        munmap(copy, len);
        return -1;
    }
    memcpy(at, copy, len);
    munmap(copy, len);
    return 0;
}

/* The range at `at` goes on in memory that the file does not back, at the same address and with
 * the same contents (to_memory). Not a private mapping of the file: on tmpfs a page of a hole is
 * taken from the file system at its first touch even through a private mapping, so a full one
 * raised SIGBUS there. That only when memory or the read fails, as the best left. */
static void keep_in_memory(void *at, size_t len, off_t off)
{
    if (to_memory(at, len, off) != 0) mmap(at, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, stats_fd, off);
}

/* A section the file system cannot hold: the thread goes on in memory (keep_in_memory) and the file says
 * since when. */
static void give_up(ml_thread_t *t)
{
    ml_stats_section_t *h = section_of(t);
    const uint64_t now = ml_now();
    say_given_up();
    h->tick_given_up = now;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    h->state = 2;
    keep_in_memory(h, L.bytes, (off_t)t->stats_offset);
    t->stats_kept = 0;
}

/* The pages of [at, at + len) of a mapping, just reserved, faulted in writable now (Linux 5.14's
 * MADV_POPULATE_WRITE; nothing on older kernels): on a journaling file system such as ext4 the first
 * store to a page of a reserved but unwritten extent converts it through the journal, which took
 * 1.4-8 ms on ext4 here, and would otherwise land inside the application's first
 * region or call. Once per range, where it is reserved: a thread's section, a region path's rows
 * (before the region's time starts), a chunk of MPI-IO records. */
static void populate(void *at, size_t len)
{
#ifdef MADV_POPULATE_WRITE
    const uintptr_t a = (uintptr_t)at & ~(uintptr_t)(PAGE - 1);
    madvise((void *)a, up((uintptr_t)at + len, PAGE) - a, MADV_POPULATE_WRITE);
#else
    (void)at;
    (void)len;
#endif
}

/* posix_fallocate: the blocks of [off, off + len) allocated, or -1 with errno (it returns the error) */
static int allocate(off_t off, off_t len)
{
    const int rc = posix_fallocate(stats_fd, off, len);
    if (rc != 0) errno = rc;
    return rc ? -1 : 0;
}

/* [from, to) of a mapping at `base` of the file from `off`: its blocks allocated (allocate), then its
 * pages faulted in (populate); -1 with errno when the file system cannot hold it */
static int reserve_mapped(char *base, off_t off, size_t from, size_t to)
{
    from &= ~(size_t)(PAGE - 1);
    to = up(to, PAGE);
    if (allocate(off + (off_t)from, (off_t)(to - from)) != 0) return -1;
    populate(base + from, to - from);
    return 0;
}

static int reserve(const ml_thread_t *t, size_t from, size_t to)
{
    return reserve_mapped((char *)section_of(t), (off_t)t->stats_offset, from, to);
}

void ml_stats_rows(ml_thread_t *t, uint32_t path)
{
    t->rows_used[path] = 1;
    if (!t->stats_kept) return;
    const size_t p = path;
    const size_t b = L.blocks + p * ML_NFUNC * sizeof(ml_fstat_t);
    const size_t u = L.ucounts + p * ML_MAX_COUNTERS * sizeof(ml_ucount_t);
    const size_t r = L.rstats + p * sizeof(ml_rstat_t);
    if (reserve(t, b, b + ML_NFUNC * sizeof(ml_fstat_t)) != 0 ||
        reserve(t, u, u + ML_MAX_COUNTERS * sizeof(ml_ucount_t)) != 0 || reserve(t, r, r + sizeof(ml_rstat_t)) != 0)
        give_up(t);
}

char *ml_stats_section(uint64_t *offset, int *kept)
{
    *kept = 0;
    *offset = 0;
    if (stats_fd >= 0) {
        pthread_mutex_lock(&lock);
        const uint32_t n = head->nthreads;
        const off_t off = (off_t)L.sections + (off_t)n * (off_t)L.bytes;
        char *p = NULL;
        /* the fixed part reserved, the rest a hole until its rows are (ml_stats_rows) */
        if (ftruncate(stats_fd, off + (off_t)L.bytes) == 0 && allocate(off, (off_t)L.fixed) == 0) {
            void *m = mmap(NULL, L.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, stats_fd, off);
            if (m != MAP_FAILED) {
                p = m;
                populate(p, L.hist); /* its header and the thread's state; the rest as it is used */
                if (mode_bytes) populate(p + L.mode, mode_bytes); /* a mode's area: written from the start */
            }
        }
        if (p != NULL) {
            ml_stats_section_t *h = (ml_stats_section_t *)p;
            h->thread = n;
            h->state = 1;
            head->nthreads = n + 1;
            *offset = (uint64_t)off;
            *kept = 1;
            pthread_mutex_unlock(&lock);
            return p;
        }
        say_given_up();
        head->threads_unkept++; /* a reader says this thread's statistics are not in the file */
        pthread_mutex_unlock(&lock);
    }
    void *m = mmap(NULL, L.bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return m == MAP_FAILED ? NULL : m;
}

/* The section's header, once the thread's state in it is set up: the offsets of what a reader
 * needs, and the magic last. */
void ml_stats_section_ready(ml_thread_t *t)
{
    ml_stats_section_t *h = section_of(t);
    const size_t base = L.thread;
    h->at_depth = base + offsetof(ml_thread_t, depth);
    h->at_last = base + offsetof(ml_thread_t, last);
    h->at_reset_gen = base + offsetof(ml_thread_t, reset_gen);
    h->at_dropped_requests = base + offsetof(ml_thread_t, dropped_requests);
    h->at_region_mismatch = base + offsetof(ml_thread_t, region_mismatch);
    h->at_recv_unknown = base + offsetof(ml_thread_t, recv_unknown);
    h->at_sampling = base + offsetof(ml_thread_t, sampling);
    h->at_requests_open = base + offsetof(ml_thread_t, requests_open);
    h->at_rq_live = base + offsetof(ml_thread_t, rq_live);
    h->at_rr_live = base + offsetof(ml_thread_t, rr_live);
    h->blocks = L.blocks;
    h->hist = L.hist;
    h->matrix = L.matrix;
    h->rstats = L.rstats;
    h->ucounts = L.ucounts;
    h->sites = t->sites ? (uint64_t)((char *)t->sites - (char *)h) : 0;
    h->site_other = t->sites ? (uint64_t)((char *)t->site_other - (char *)h) : 0;
    h->site_frames = t->sites ? (uint64_t)((char *)t->site_frames - (char *)h) : 0;
    h->mode = mode_bytes ? L.mode : 0;
    h->mode_bytes = mode_bytes;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    memcpy(h->magic, ML_MAGIC_STATS_SECTION, ML_MAGIC_LEN);
}

char *ml_stats_part(ml_thread_t *t, int which)
{
    char *s = (char *)section_of(t);
    switch (which) {
    case ML_STATS_HIST: return s + L.hist;
    case ML_STATS_MATRIX: return s + L.matrix;
    case ML_STATS_SITES: return s + L.sites;
    case ML_STATS_BLOCKS: return s + L.blocks;
    case ML_STATS_RSTATS: return s + L.rstats;
    case ML_STATS_MODE: return mode_bytes ? s + L.mode : NULL;
    default: return s + L.ucounts;
    }
}

/* ------------------------------------------------------------------------------- areas of the file */
/* The areas before the sections (the MPI-IO records, the compute intervals): each mapped shared from
 * `at`, `len` bytes, once its mode starts; its state in the head (1 kept, 2 given up at *given_up). */

/* [at, at + len) mapped, the file's length first made to cover it (the sections come after the
 * areas); NULL when it cannot be */
static char *map_area(size_t at, size_t len)
{
    pthread_mutex_lock(&lock);
    void *m = MAP_FAILED;
    struct stat st;
    if (fstat(stats_fd, &st) == 0 && (st.st_size >= (off_t)L.sections || ftruncate(stats_fd, (off_t)L.sections) == 0))
        m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, stats_fd, (off_t)at);
    pthread_mutex_unlock(&lock);
    return m == MAP_FAILED ? NULL : m;
}

/* [from, to) of an area (offsets from its start) reserved before it is written; when the file system
 * cannot, the area goes on in memory at the same address and the head says since when: -1 */
static int reserve_area(char *area, size_t at, size_t len, size_t from, size_t to, uint32_t *state,
                        uint64_t *given_up)
{
    if (area == NULL || *state != 1) return -1;
    if (to > len) to = len;
    if (from >= to || reserve_mapped(area, (off_t)at, from, to) == 0) return 0;
    say_given_up();
    *given_up = ml_now();
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    *state = 2;
    keep_in_memory(area, len, (off_t)at);
    return -1;
}

int ml_stats_io_map(void **files, void **accesses, uint64_t **count_accesses, uint64_t **count_dropped)
{
    if (stats_fd < 0 || L.intervals == L.io_files) return -1;
    io_area = map_area(L.io_files, L.intervals - L.io_files);
    if (io_area == NULL) return -1;
    *files = io_area;
    *accesses = io_area + (L.io_accesses - L.io_files);
    *count_accesses = &head->io_accesses;
    *count_dropped = &head->io_dropped_files;
    __atomic_store_n(&head->io_state, 1, __ATOMIC_RELEASE);
    return 0;
}

void ml_stats_io_reserve(size_t from, size_t to)
{
    (void)reserve_area(io_area, L.io_files, L.intervals - L.io_files, from, to, &head->io_state,
                       &head->io_tick_given_up);
}

uint64_t *ml_stats_intervals_map(size_t first, uint64_t **count, uint64_t **dropped, int *kept)
{
    if (stats_fd < 0 || iv_max == 0) return NULL;
    iv_area = map_area(L.intervals, L.sections - L.intervals);
    if (iv_area == NULL) return NULL;
    *count = &head->intervals_count;
    *dropped = &head->intervals_dropped;
    __atomic_store_n(&head->intervals_state, 1, __ATOMIC_RELEASE);
    *kept = ml_stats_intervals_reserve(0, first) == 0;
    return (uint64_t *)iv_area;
}

int ml_stats_intervals_reserve(size_t from, size_t to)
{
    return reserve_area(iv_area, L.intervals, L.sections - L.intervals, from, to, &head->intervals_state,
                        &head->intervals_tick_given_up);
}

/* MPI_Pcontrol(2): the thread's statistics zeroed by the thread itself. Pages given back would be
 * read again from the file (a shared or a private file mapping keeps its contents), so the parts
 * in use are written: the fixed ones and the rows of the paths the thread entered. */
void ml_stats_zero(ml_thread_t *t)
{
    char *s = (char *)section_of(t);
    memset(s + L.hist, 0, L.sites - L.hist); /* hist and matrix; the call sites reset their counts */
    for (uint32_t p = 0; p < ml_g.max_paths; p++) {
        if (!t->rows_used[p]) continue;
        memset(s + L.blocks + (size_t)p * ML_NFUNC * sizeof(ml_fstat_t), 0, ML_NFUNC * sizeof(ml_fstat_t));
        memset(s + L.rstats + (size_t)p * sizeof(ml_rstat_t), 0, sizeof(ml_rstat_t));
        memset(s + L.ucounts + (size_t)p * ML_MAX_COUNTERS * sizeof(ml_ucount_t), 0, ML_MAX_COUNTERS * sizeof(ml_ucount_t));
    }
}

void ml_stats_reset_gen(uint32_t gen)
{
    if (head != NULL) __atomic_store_n(&head->reset_gen, gen, __ATOMIC_RELEASE);
}

void ml_stats_dropped_regions(uint64_t n)
{
    if (head != NULL) head->dropped_regions = n;
}

/* The rank's measurements are whole elsewhere: the file says so. */
static void stats_written(void)
{
    if (head != NULL) __atomic_store_n(&head->state, 2, __ATOMIC_RELEASE);
}

/* MPI_Finalize began: measuring stopped, the profile is being gathered and merged. A rank killed
 * from here on is reported as ended in MPI_Finalize, with every call it made before. */
void ml_stats_finalizing(void)
{
    if (head != NULL) __atomic_store_n(&head->state, 3, __ATOMIC_RELEASE);
}

/* The profile is written: the files go (the mappings stay valid until the process ends). */
void ml_stats_remove(void)
{
    stats_written();
    if (stats_fd < 0) return;
    ml_file_unlink(stats_path);
    ml_file_unlink(names_path);
}

/* The bytes of the file system the rank's statistics files take (their allocated blocks). */
uint64_t ml_stats_allocated(void)
{
    uint64_t bytes = 0;
    struct stat st;
    if (stats_fd >= 0 && fstat(stats_fd, &st) == 0) bytes += (uint64_t)st.st_blocks * 512u;
    if (stats_fd >= 0 && stat(names_path, &st) == 0) bytes += (uint64_t)st.st_blocks * 512u;
    return bytes;
}

/* The room of the statistics files is given back now, for the profile (a file system full at
 * MPI_Finalize; the statistics are in the gathered payloads already). Removing a file gives its
 * pages back only once nothing maps it any more, so every part of it this process maps first goes
 * to memory (to_memory, the contents kept), then the file is emptied and removed. A part that
 * cannot go to memory keeps the file whole (a store to a truncated mapping would raise SIGBUS): it
 * is removed, its pages given back when the process ends. */
void ml_stats_release(void)
{
    if (stats_fd < 0) return;
    int whole = 1;
    for (ml_thread_t *t = __atomic_load_n(&ml_g.threads, __ATOMIC_ACQUIRE); t; t = t->next)
        if (t->stats_kept) {
            if (to_memory(section_of(t), L.bytes, (off_t)t->stats_offset) != 0) whole = 0;
            else t->stats_kept = 0;
        }
    if (io_area != NULL && to_memory(io_area, L.intervals - L.io_files, (off_t)L.io_files) != 0) whole = 0;
    if (iv_area != NULL && to_memory(iv_area, L.sections - L.intervals, (off_t)L.intervals) != 0) whole = 0;
    if (head != NULL && to_memory(head, PAGE, 0) != 0) whole = 0;
    if (whole) {
        io_area = iv_area = NULL;
        if (ftruncate(stats_fd, 0) != 0) { /* the pages come back when the process ends */ }
    }
    ml_stats_remove();
    if (names_fd >= 0) close(names_fd);
    names_fd = -1;
    close(stats_fd);
    stats_fd = -1;
}

/* The rank's partial profile is written (it ends without MPI_Finalize): the files go, unless a
 * mode's area holds what the mode writes only at MPI_Finalize (papi mode's counts); the file then
 * stays, saying that its profile is whole elsewhere. */
void ml_stats_partial_written(void)
{
    if (mode_bytes) stats_written();
    else ml_stats_remove();
}

/* A child made by fork() shares the parent's mappings: its stores must not land in the parent's
 * file, so every section is mapped privately in the child (the contents kept). */
void ml_stats_after_fork(void)
{
    if (stats_fd < 0) return;
    for (ml_thread_t *t = __atomic_load_n(&ml_g.threads, __ATOMIC_ACQUIRE); t; t = t->next)
        if (t->stats_kept) {
            keep_in_memory(section_of(t), L.bytes, (off_t)t->stats_offset);
            t->stats_kept = 0;
        }
    if (io_area != NULL) keep_in_memory(io_area, L.intervals - L.io_files, (off_t)L.io_files);
    if (iv_area != NULL) keep_in_memory(iv_area, L.sections - L.intervals, (off_t)L.intervals);
    if (head != NULL) mmap(head, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, stats_fd, 0);
    if (names_fd >= 0) close(names_fd);
    names_fd = -1;
}
