/* I/O per file (MPILENS_IO, on by default): per file a rank opens with MPI_File_open, what it did
 * to it (opens, reads and writes by kind, bytes, access sizes, offset patterns, times, the file
 * system), and the rank's first MPILENS_IO_ACCESSES calls one by one with their offsets.
 *
 * Why per-rank files rather than the payload merged at MPI_Finalize: a file's record is keyed by
 * its name, which the ranks do not share in advance (file-per-process codes open one name per
 * rank), and users want the per-rank detail of shared files, so a merged record would be as large
 * as the per-rank ones together: merging inside the job would save nothing and cost rank 0 the
 * memory of all of them. The access list is raw per-rank data like a trace. And a rank that is
 * killed still writes its file (ml_io_emergency), which a merge at MPI_Finalize would lose.
 * Python reads io/rank-*.bin and joins the ranks by name (python/mpilens/io.py).
 *
 * Cost: only the MPI_File_ wrappers call this file, so a run without MPI-IO pays nothing. Per
 * access: for the individual file pointer two local MPI calls (MPI_File_get_position,
 * MPI_File_get_byte_offset) to know the offset, an explicit offset one; a lock-free look-up of the
 * handle; relaxed atomic additions. MPI_File_open and _close (rare, and slow themselves) take a
 * mutex, allocate the name and resolve the file system from /proc/self/mounts. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <mntent.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ml.h"
#include "ml_files.h"
#include "ml_io.h"
#include "ml_output.h"
#include "ml_stats.h"
#include "trace_event.h"

typedef struct ml_io_rec {
    ml_io_file_t r;   /* times in ticks while running (absolute ticks for first_*, last_*; 0: never) */
    int64_t prev_read_end, prev_write_end; /* where this rank's previous read / write ended */
    char *name, *path;
    char fs[32], mount[256];
} ml_io_rec_t;

#define ML_IO_HSLOTS 4096u /* open handles at once (power of two) */
#define ML_IO_TOMB ((uintptr_t)1)

/* The records and accesses live in the rank's statistics file when it has one (stats.c), so a rank
 * killed without a word keeps them: mapped from it, the pages reserved before they are written
 * (a chunk of records at a time, the accesses a chunk ahead), and the two counters a reader needs
 * kept there too. Otherwise in anonymous memory. */
static ml_io_rec_t *recs;
static uint32_t nrecs, max_recs;
static uint64_t dropped_own, *dropped_files = &dropped_own;
static ml_io_access_t *accesses; /* t0_ns and dur_ns hold ticks until written */
static uint64_t max_accesses, naccesses_own, *naccesses = &naccesses_own;
static int io_in_file;
#define ML_IO_REC_CHUNK 64u
#define ML_IO_ACCESS_CHUNK 4096u

/* the library is loaded with MPILENS_IO on: room for the records in the rank's statistics file */
int ml_io_load(char *err, size_t errlen)
{
    (void)err, (void)errlen;
    ml_stats_io_area(sizeof(ml_io_rec_t));
    return 0;
}
static struct { uintptr_t key; int32_t file; } handles[ML_IO_HSLOTS];
static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;
static char out_path[4300];
static int out_dir_made;
static uint16_t fn_used[ML_NFUNC];

/* mounts, read at the first open */
static struct ml_mount { char *dir, *type; size_t len; } *mounts;
static size_t nmounts;
static int mounts_read;

static uintptr_t handle_key(MPI_File fh)
{
    uintptr_t key = 0;
    memcpy(&key, &fh, sizeof fh < sizeof key ? sizeof fh : sizeof key);
    return key;
}

static uint32_t handle_hash(uintptr_t key)
{
    return (uint32_t)(ml_hash(key) >> 40) & (ML_IO_HSLOTS - 1);
}

static int32_t handle_find(uintptr_t key)
{
    if (key == 0 || key == ML_IO_TOMB) return -1;
    uint32_t i = handle_hash(key);
    for (uint32_t n = 0; n < ML_IO_HSLOTS; n++, i = (i + 1) & (ML_IO_HSLOTS - 1)) {
        const uintptr_t k = __atomic_load_n(&handles[i].key, __ATOMIC_ACQUIRE);
        if (k == key) return __atomic_load_n(&handles[i].file, __ATOMIC_RELAXED);
        if (k == 0) return -1;
    }
    return -1;
}

/* under open_lock */
static void handle_put(uintptr_t key, int32_t file)
{
    if (key == 0 || key == ML_IO_TOMB) return;
    uint32_t i = handle_hash(key), tomb = UINT32_MAX;
    for (uint32_t n = 0; n < ML_IO_HSLOTS; n++, i = (i + 1) & (ML_IO_HSLOTS - 1)) {
        const uintptr_t k = handles[i].key;
        if (k == key) {
            __atomic_store_n(&handles[i].file, file, __ATOMIC_RELAXED);
            return;
        }
        if (k == ML_IO_TOMB && tomb == UINT32_MAX) tomb = i;
        if (k == 0) break;
    }
    if (tomb != UINT32_MAX) i = tomb;
    if (handles[i].key != 0 && handles[i].key != ML_IO_TOMB) return; /* full: the file goes unrecorded */
    __atomic_store_n(&handles[i].file, file, __ATOMIC_RELAXED);
    __atomic_store_n(&handles[i].key, key, __ATOMIC_RELEASE);
}

/* under open_lock */
static void handle_forget(uintptr_t key)
{
    if (key == 0 || key == ML_IO_TOMB) return;
    uint32_t i = handle_hash(key);
    for (uint32_t n = 0; n < ML_IO_HSLOTS; n++, i = (i + 1) & (ML_IO_HSLOTS - 1)) {
        if (handles[i].key == key) {
            __atomic_store_n(&handles[i].key, ML_IO_TOMB, __ATOMIC_RELEASE);
            return;
        }
        if (handles[i].key == 0) return;
    }
}

static void atomic_max_u64(uint64_t *p, uint64_t v)
{
    uint64_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (v > cur && !__atomic_compare_exchange_n(p, &cur, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
}

static void atomic_max_i64(int64_t *p, int64_t v)
{
    int64_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (v > cur && !__atomic_compare_exchange_n(p, &cur, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
}

/* the earliest nonzero tick */
static void atomic_first(int64_t *p, int64_t v)
{
    int64_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);
    while ((cur == 0 || v < cur) && !__atomic_compare_exchange_n(p, &cur, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
}

static int size_bin(int64_t bytes)
{
    static const int64_t edges[ML_IO_SIZE_BINS - 1] = {100, 1024, 10240, 102400, 1048576, 4194304,
                                                        10485760, 104857600, 1073741824};
    int b = 0;
    while (b < ML_IO_SIZE_BINS - 1 && bytes >= edges[b]) b++;
    return b;
}

static void log_access(ml_thread_t *t, int32_t file, int fn, uint32_t kind, uint64_t t0, uint64_t t1, int64_t offset,
                       int64_t bytes)
{
    /* trace mode: the file and offset, just before the call's own event (not when that one is left out) */
    if (t != NULL && t->trace.on && !(ml_trace_gated && fn >= 0 && fn < ML_NFUNC && ml_trace_skip[fn])) {
        const ml_tev_t e = {.t0 = t0, .t1 = t1, .kind = ML_TEV_IO, .fn = (uint32_t)file,
                            .comm = t->trace.cur ? t->trace.cur->last_comm : 0, .dst = -1, .src = -1,
                            .sent = offset, .recv = kind};
        ml_trace_emit(t, &e);
    }
    if (fn >= 0 && fn < ML_NFUNC) fn_used[fn] = 1;
    const uint64_t i = __atomic_fetch_add(naccesses, 1, __ATOMIC_RELAXED);
    if (i >= max_accesses) return;
    if (io_in_file && i % ML_IO_ACCESS_CHUNK == 0) /* the chunk after this one, reserved ahead of its writers */
        ml_stats_io_reserve((const char *)&accesses[i + ML_IO_ACCESS_CHUNK] - (const char *)recs,
                            (const char *)&accesses[i + 2 * ML_IO_ACCESS_CHUNK] - (const char *)recs);
    accesses[i] = (ml_io_access_t){.t0_ns = t0, .dur_ns = t1 - t0, .file = (uint32_t)file, .fn = (uint16_t)fn,
                                   .kind = (uint16_t)kind, .offset = offset, .bytes = bytes};
}

/* ------------------------------------------------------------------------------- opens */
static void read_mounts(void)
{
    mounts_read = 1;
    FILE *f = setmntent("/proc/self/mounts", "r");
    if (f == NULL) return;
    size_t cap = 0;
    struct mntent *m;
    while ((m = getmntent(f)) != NULL) {
        if (nmounts == cap) {
            const size_t ncap = cap ? 2 * cap : 64;
            struct ml_mount *p = realloc(mounts, ncap * sizeof *p);
            if (p == NULL) break;
            mounts = p;
            cap = ncap;
        }
        char *dir = strdup(m->mnt_dir), *type = strdup(m->mnt_type);
        if (dir == NULL || type == NULL) {
            free(dir);
            free(type);
            break;
        }
        mounts[nmounts++] = (struct ml_mount){dir, type, strlen(dir)};
    }
    endmntent(f);
}

/* The file system of an absolute path: the longest mount point that contains it (the last such
 * mount wins, as later mounts hide earlier ones). */
static void find_mount(const char *path, ml_io_rec_t *r)
{
    if (!mounts_read) read_mounts();
    const struct ml_mount *best = NULL;
    for (size_t i = 0; i < nmounts; i++) {
        const struct ml_mount *m = &mounts[i];
        const int inside = strncmp(path, m->dir, m->len) == 0 &&
                           (m->len == 1 || path[m->len] == '/' || path[m->len] == 0);
        if (inside && (best == NULL || m->len >= best->len)) best = m;
    }
    if (best == NULL) return;
    snprintf(r->fs, sizeof r->fs, "%s", best->type);
    snprintf(r->mount, sizeof r->mount, "%s", best->dir);
}

/* The absolute path of a name as opened: without a ROMIO file-system prefix ("ufs:", "nfs:", ...),
 * relative to the working directory, resolved when it exists on this node. */
static char *absolute_path(const char *name)
{
    const char *colon = strchr(name, ':');
    if (colon != NULL && colon - name >= 2 && colon - name <= 8) {
        int plain = 1;
        for (const char *c = name; c < colon; c++)
            if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9'))) plain = 0;
        if (plain) name = colon + 1;
    }
    char *resolved = realpath(name, NULL);
    if (resolved != NULL) return resolved;
    if (name[0] == '/') return strdup(name);
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof cwd) == NULL) return strdup(name);
    const size_t n = strlen(cwd) + strlen(name) + 2;
    char *p = malloc(n);
    if (p != NULL) snprintf(p, n, "%s/%s", cwd, name);
    return p;
}

void ml_io_opened(ml_thread_t *t, MPI_Comm comm, const char *name, size_t len, int amode, MPI_File fh, uint64_t t0, uint64_t t1)
{
    if (name == NULL) return;
    if (len == SIZE_MAX) len = strlen(name);
    while (len > 0 && name[len - 1] == ' ') len--; /* a Fortran CHARACTER's padding */
    char *copy = malloc(len + 1);
    if (copy == NULL) return;
    memcpy(copy, name, len);
    copy[len] = 0;
    int size = 1;
    if (comm != MPI_COMM_NULL) PMPI_Comm_size(comm, &size);

    pthread_mutex_lock(&open_lock);
    int32_t id = -1;
    for (uint32_t i = 0; i < nrecs; i++)
        if (strcmp(recs[i].name, copy) == 0) {
            id = (int32_t)i;
            break;
        }
    if (id < 0 && nrecs >= max_recs) {
        __atomic_store_n(dropped_files, *dropped_files + 1, __ATOMIC_RELAXED);
    } else if (id < 0) {
        if (io_in_file && nrecs % ML_IO_REC_CHUNK == 0)
            ml_stats_io_reserve((size_t)nrecs * sizeof *recs, (size_t)(nrecs + ML_IO_REC_CHUNK) * sizeof *recs);
        if (!out_dir_made) {
            char probe[4300];
            out_dir_made = ml_rundir_path(probe, sizeof probe, ML_PATH_IO, ml_g.rank) == 0 ? 1 : -1;
        }
        ml_io_rec_t *r = &recs[nrecs];
        memset(r, 0, sizeof *r);
        r->r.id = nrecs;
        r->r.max_read_end = r->r.max_write_end = -1;
        r->name = copy;
        copy = NULL;
        r->path = absolute_path(r->name);
        if (r->path != NULL) find_mount(r->path, r);
        /* its names, for a reader of the statistics file (before the record counts) */
        ml_stats_name(ML_STATS_NAME_IO_FILE, nrecs, 0, 0, r->name);
        if (r->path != NULL) ml_stats_name(ML_STATS_NAME_IO_FILE, nrecs, 1, 0, r->path);
        ml_stats_name(ML_STATS_NAME_IO_FILE, nrecs, 2, 0, r->fs);
        ml_stats_name(ML_STATS_NAME_IO_FILE, nrecs, 3, 0, r->mount);
        id = (int32_t)nrecs;
        __atomic_store_n(&nrecs, nrecs + 1, __ATOMIC_RELEASE);
    }
    if (id >= 0) {
        ml_io_rec_t *r = &recs[id];
        r->r.comm_size = (uint32_t)size;
        r->r.amode = amode;
        r->prev_read_end = r->prev_write_end = 0; /* a new handle's pointers start at the file's start */
        __atomic_fetch_add(&r->r.opens, 1, __ATOMIC_RELAXED);
        __atomic_fetch_add(&r->r.open_ns, t1 - t0, __ATOMIC_RELAXED);
        atomic_first(&r->r.first_open_ns, (int64_t)t0);
        handle_put(handle_key(fh), id);
        log_access(t, id, ML_FN_MPI_File_open, ML_IO_OPEN, t0, t1, -1, 0);
    }
    pthread_mutex_unlock(&open_lock);
    free(copy);
}

/* ------------------------------------------------------------------------------- calls */
void ml_io_before(ml_io_pre_t *p, uint32_t kind, MPI_File fh, MPI_Offset offset)
{
    p->kind = kind;
    p->offset = -1;
    p->key = handle_key(fh);
    p->file = handle_find(p->key);
    if (p->file < 0 || !(kind & (ML_IO_READ | ML_IO_WRITE)) || (kind & (ML_IO_SHARED | ML_IO_END))) return;
    MPI_Offset at = offset, byte = 0;
    if (!(kind & ML_IO_EXPLICIT) && PMPI_File_get_position(fh, &at) != MPI_SUCCESS) return;
    if (PMPI_File_get_byte_offset(fh, at, &byte) != MPI_SUCCESS) return;
    p->offset = (int64_t)byte;
}

void ml_io_after(ml_thread_t *t, const ml_io_pre_t *p, int fn, uint64_t t0, uint64_t t1, int64_t bytes)
{
    if (p->file < 0) return;
    ml_io_rec_t *r = &recs[p->file];
    const uint32_t k = p->kind;
    const uint64_t d = t1 - t0;
    if (k & (ML_IO_READ | ML_IO_WRITE)) {
        const int w = (k & ML_IO_WRITE) != 0;
        __atomic_fetch_add(w ? &r->r.write_ns : &r->r.read_ns, d, __ATOMIC_RELAXED);
        atomic_first(&r->r.first_access_ns, (int64_t)t0);
        atomic_max_i64(&r->r.last_access_ns, (int64_t)t1);
        if (!(k & ML_IO_END)) {
            if (bytes < 0) bytes = 0;
            const int mode = ((k & ML_IO_COLLECTIVE) ? 2 : 0) | ((k & ML_IO_NONBLOCKING) ? 1 : 0);
            __atomic_fetch_add(w ? &r->r.writes[mode] : &r->r.reads[mode], 1, __ATOMIC_RELAXED);
            __atomic_fetch_add(w ? &r->r.bytes_written : &r->r.bytes_read, bytes, __ATOMIC_RELAXED);
            __atomic_fetch_add(w ? &r->r.write_sizes[size_bin(bytes)] : &r->r.read_sizes[size_bin(bytes)], 1,
                               __ATOMIC_RELAXED);
            atomic_max_u64(w ? &r->r.max_write_ns : &r->r.max_read_ns, d);
            int pattern = 3; /* unknown */
            if (p->offset >= 0) {
                int64_t *prev = w ? &r->prev_write_end : &r->prev_read_end;
                pattern = p->offset == *prev ? 0 : p->offset > *prev ? 1 : 2;
                *prev = p->offset + bytes;
                if (bytes > 0) atomic_max_i64(w ? &r->r.max_write_end : &r->r.max_read_end, p->offset + bytes);
            }
            __atomic_fetch_add(w ? &r->r.write_patterns[pattern] : &r->r.read_patterns[pattern], 1, __ATOMIC_RELAXED);
        }
    } else if (k & ML_IO_CLOSE) {
        __atomic_fetch_add(&r->r.closes, 1, __ATOMIC_RELAXED);
        __atomic_fetch_add(&r->r.close_ns, d, __ATOMIC_RELAXED);
        atomic_max_i64(&r->r.last_close_ns, (int64_t)t1);
        pthread_mutex_lock(&open_lock);
        handle_forget(p->key);
        pthread_mutex_unlock(&open_lock);
    } else if (k & ML_IO_SYNC) {
        __atomic_fetch_add(&r->r.syncs, 1, __ATOMIC_RELAXED);
        __atomic_fetch_add(&r->r.sync_ns, d, __ATOMIC_RELAXED);
    } else if (k & ML_IO_VIEW) {
        __atomic_fetch_add(&r->r.views, 1, __ATOMIC_RELAXED);
        __atomic_fetch_add(&r->r.view_ns, d, __ATOMIC_RELAXED);
    } else if (k & ML_IO_SIZE) {
        __atomic_fetch_add(&r->r.resizes, 1, __ATOMIC_RELAXED);
        __atomic_fetch_add(&r->r.resize_ns, d, __ATOMIC_RELAXED);
    }
    log_access(t, p->file, fn, k, t0, t1, p->offset, (k & (ML_IO_READ | ML_IO_WRITE)) ? bytes : 0);
}

/* ------------------------------------------------------------------------------- the file
 * Written through a sink with a static buffer into a temporary file, then committed (renamed, or
 * put into the host's container): the exit paths (maybe a signal handler) use the same code, with
 * no stdio and no allocation. */
static void out_string(ml_sink_t *o, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n > 65535) n = 65535;
    const uint16_t len = (uint16_t)n;
    ml_sink_put(o, &len, sizeof len);
    ml_sink_put(o, s, n);
}

static int64_t when_ns(int64_t ticks)
{
    if (ticks == 0) return -1;
    const uint64_t t = (uint64_t)ticks;
    return t > ml_g.t_init_end ? (int64_t)ml_ticks_to_ns(t - ml_g.t_init_end) : 0;
}

static int write_file(int reason)
{
    if (out_dir_made != 1) return -1;
    char tmp[4340];
    if (ml_file_temp_name(tmp, sizeof tmp, out_path) != 0) return -1;
    static char buffer[8192]; /* not on the stack of a signal handler */
    ml_sink_t o = {buffer, 0, sizeof buffer, ml_file_create(tmp, O_WRONLY, 0644), 0, NULL};
    if (o.fd < 0) return -1;
    const uint32_t files = __atomic_load_n(&nrecs, __ATOMIC_ACQUIRE);
    const uint64_t total = __atomic_load_n(naccesses, __ATOMIC_RELAXED);
    const uint64_t listed = total < max_accesses ? total : max_accesses;
    ml_io_header_t h = {.rank = (uint32_t)ml_g.rank, .nranks = (uint32_t)ml_g.size, .nfiles = files,
                        .dropped_files = (uint32_t)*dropped_files, .accesses = listed, .dropped_accesses = total - listed,
                        .complete = reason == ML_END_FINALIZE, .reason = (uint32_t)reason};
    memcpy(h.magic, ML_MAGIC_IO, ML_MAGIC_LEN);
    ml_sink_put(&o, &h, sizeof h);
    for (uint32_t i = 0; i < files; i++) {
        const ml_io_rec_t *r = &recs[i];
        ml_io_file_t f = r->r;
        f.read_ns = ml_ticks_to_ns(f.read_ns);
        f.write_ns = ml_ticks_to_ns(f.write_ns);
        f.open_ns = ml_ticks_to_ns(f.open_ns);
        f.close_ns = ml_ticks_to_ns(f.close_ns);
        f.sync_ns = ml_ticks_to_ns(f.sync_ns);
        f.view_ns = ml_ticks_to_ns(f.view_ns);
        f.resize_ns = ml_ticks_to_ns(f.resize_ns);
        f.max_read_ns = ml_ticks_to_ns(f.max_read_ns);
        f.max_write_ns = ml_ticks_to_ns(f.max_write_ns);
        f.first_open_ns = when_ns(f.first_open_ns);
        f.first_access_ns = when_ns(f.first_access_ns);
        f.last_access_ns = when_ns(f.last_access_ns);
        f.last_close_ns = when_ns(f.last_close_ns);
        ml_sink_put(&o, &f, sizeof f);
        out_string(&o, r->name);
        out_string(&o, r->path);
        out_string(&o, r->fs);
        out_string(&o, r->mount);
    }
    for (uint64_t i = 0; i < listed; i++) {
        ml_io_access_t a = accesses[i];
        a.t0_ns = (uint64_t)when_ns((int64_t)a.t0_ns);
        a.dur_ns = ml_ticks_to_ns(a.dur_ns);
        ml_sink_put(&o, &a, sizeof a);
    }
    /* the names of the function ids used: {"functions": {"12": "MPI_File_open", ...}} */
    const char *sep = "";
    ml_sink_text(&o, "{\"functions\": {");
    for (int fn = 0; fn < ML_NFUNC; fn++) {
        if (!fn_used[fn]) continue;
        ml_sink_text(&o, sep);
        ml_sink_text(&o, "\"");
        ml_sink_uint(&o, (uint64_t)fn);
        ml_sink_text(&o, "\": ");
        ml_sink_json_string(&o, ml_fn_name[fn]);
        sep = ", ";
    }
    ml_sink_text(&o, "}}\n");
    ml_sink_flush(&o);
    if (close(o.fd) != 0 || o.failed) {
        ml_file_unlink(tmp);
        return -1;
    }
    return ml_stream_commit(ML_STREAM_IO, 0, tmp, out_path);
}

/* ------------------------------------------------------------------------------- the table of modes */
int ml_io_wanted(void) { return ml_g.config.io; }

int ml_io_start(void)
{
    max_recs = (uint32_t)ml_g.config.io_max_files;
    max_accesses = (uint64_t)ml_g.config.io_accesses;
    void *in_file = NULL, *acc_in_file = NULL;
    if (ml_stats_io_map(&in_file, &acc_in_file, &naccesses, &dropped_files) == 0) {
        recs = in_file;
        accesses = max_accesses > 0 ? acc_in_file : NULL;
        io_in_file = 1;
        if (max_accesses > 0) /* the first chunk of accesses (each chunk reserves the one after it) */
            ml_stats_io_reserve((const char *)accesses - (const char *)recs,
                                (const char *)&accesses[ML_IO_ACCESS_CHUNK] - (const char *)recs);
        snprintf(out_path, sizeof out_path, "%s/" ML_PATH_IO, ml_g.outdir, ml_g.rank);
        ml_g.io = 1;
        return 0;
    }
    void *p = mmap(NULL, (size_t)max_recs * sizeof(ml_io_rec_t), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        ml_log(0, "no memory for MPILENS_IO_MAX_FILES=%ld files; MPI-IO is not recorded per file",
               ml_g.config.io_max_files);
        return -1;
    }
    recs = p;
    if (max_accesses > 0) {
        p = mmap(NULL, (size_t)max_accesses * sizeof(ml_io_access_t), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED) {
            ml_log(0, "no memory for MPILENS_IO_ACCESSES=%ld accesses; they are counted, not listed",
                   ml_g.config.io_accesses);
            max_accesses = 0;
        } else {
            accesses = p;
        }
    }
    snprintf(out_path, sizeof out_path, "%s/" ML_PATH_IO, ml_g.outdir, ml_g.rank);
    ml_g.io = 1;
    return 0;
}

void ml_io_finish(void)
{
    __atomic_store_n(&ml_g.io, 0, __ATOMIC_RELAXED);
    if (nrecs == 0 && *dropped_files == 0) return; /* no MPI-IO: no file */
    if (*dropped_files) ml_log(0, "%llu files opened beyond MPILENS_IO_MAX_FILES=%ld are not in io/",
                               (unsigned long long)*dropped_files, ml_g.config.io_max_files);
    if (write_file(ML_END_FINALIZE) != 0) ml_log(0, "could not write this rank's I/O file %s (%s)", out_path,
                                                 strerror(errno));
}

void ml_io_emergency(int reason)
{
    if (!ml_g.io || (nrecs == 0 && *dropped_files == 0)) return;
    ml_g.io = 0;
    if (write_file(reason) != 0) ml_log_safe(0, "could not write this rank's I/O file", NULL);
}
