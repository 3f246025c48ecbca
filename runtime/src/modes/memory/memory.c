/* Memory mode: how much memory MPI takes, when, and in which call (memnesia, made cheap).
 *
 * Two methods (MPILENS_MEMORY_METHOD):
 *   fast   the allocation and mapping calls (malloc family, mmap/munmap/mremap, shmat/shmdt) are
 *          seen by libmpilens-memory.so (memory_interpose.c), preloaded in memory mode only. A
 *          thread-local flag, set by the observer hooks while the thread is inside an MPI call,
 *          decides who is charged: bytes allocated or freed inside a call go to MPI and to that
 *          MPI function (here), the others to the application. Residency (PSS, RSS from
 *          /proc/self/smaps_rollup) is sampled by a timer thread and at region boundaries, never
 *          on the path of a call.
 *   smaps  memnesia's method, for validation: PSS and RSS before and after every MPI call; the
 *          MPI part is the running sum of the in-call changes (computed by the analysis).
 * MPI_Init is bracketed by two residency samples in both methods: the loader maps the MPI
 * library's components itself (not through mmap), so no interposer can see them.
 *
 * Records (72 bytes with their check, see ml_mem_rec_t) go through one small buffer to memory/rank-NNNNNN.bin;
 * the timer thread flushes it every period, so the tool's memory stays bounded and a killed
 * process keeps its samples up to the last period. The tool's own memory is counted apart: its
 * mappings (registered by ml_sys_mmap) are measured with mincore at every sample, its file and
 * static data in smaps at MPI_Init and MPI_Finalize, and its small heap blocks by size.
 */
#define ML_MEMORY_C /* the tool's allocations: ml_sys_* below, on the real functions */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "memory_interpose.h"
#include "ml.h"
#include "ml_files.h"
#include "ml_memory.h"

/* ------------------------------------------------------------------------------- real functions */
/* The interposer's, when it is loaded (it found them after itself: the C library's); else the
 * process's own (this library defines none), whichever allocator the application runs with. */
__attribute__((weak)) extern const int ml_memory_interpose_abi;
__attribute__((weak)) const ml_real_alloc_t *ml_memory_real(void);
__attribute__((weak)) int ml_memory_in_boot(const void *p);
__attribute__((weak)) void ml_memory_count(int on);

static ml_real_alloc_t real;
static int resolved;

static void resolve(void)
{
    if (__atomic_load_n(&resolved, __ATOMIC_ACQUIRE)) return;
    if (ml_memory_real != NULL) {
        real = *ml_memory_real();
    } else {
#define FIND(field, name) *(void **)&real.field = dlsym(RTLD_DEFAULT, name)
        FIND(malloc, "malloc");
        FIND(calloc, "calloc");
        FIND(realloc, "realloc");
        FIND(free, "free");
        FIND(usable, "malloc_usable_size");
        FIND(mmap, "mmap");
        FIND(munmap, "munmap");
#undef FIND
    }
    __atomic_store_n(&resolved, 1, __ATOMIC_RELEASE);
}

__attribute__((constructor(101))) static void memory_constructor(void)
{
    resolve();
}

/* Whether the interposer of this build is loaded (memory mode needs it). */
int ml_memory_interposer_loaded(void)
{
    return &ml_memory_interpose_abi != NULL && ml_memory_interpose_abi == ML_MEMORY_INTERPOSE_ABI;
}

/* The library is loaded (the table of modes, modes.c): without the interposer, MPI's heap would
 * be reported as zero, so memory mode refuses to run instead. */
int ml_memory_load(char *err, size_t errlen)
{
    if (ml_memory_interposer_loaded()) return 0;
    const char *mode = getenv("MPILENS_MODE");
    snprintf(err, errlen,
             "MPILENS_MODE=%s: memory mode needs libmpilens-memory.so in LD_PRELOAD with the runtime "
             "(mpilens run --mode memory puts both there)", mode ? mode : "");
    return -1;
}

static int counting_on; /* memory mode counts (the interposer keeps its own copy: ml_memory_count) */

static void set_counting(int on)
{
    __atomic_store_n(&counting_on, on, __ATOMIC_RELEASE);
    if (ml_memory_count != NULL) ml_memory_count(on);
}

static int in_boot(const void *p)
{
    return ml_memory_in_boot != NULL && ml_memory_in_boot(p);
}

/* ------------------------------------------------------------------------------- accounting state */
ML_EXPORT __thread int ml_mem_fn __attribute__((tls_model("initial-exec")));
ML_EXPORT __thread int ml_mem_tool __attribute__((tls_model("initial-exec")));

/* Net bytes of heap blocks allocated inside MPI calls, of the tool's own blocks. The application's
 * are not counted: its part is the rest of the process. Mappings are measured by residency. */
static int64_t heap_mpi, heap_tool;
static ml_mem_fstat_t fstats[ML_NFUNC];

/* Charge d bytes to the MPI function the calling thread is in (mapped: a mapping, not a block). */
static void charge(int64_t d, int mapped, int shared)
{
    const int fn = ml_mem_fn;
    if (fn > 0) {
        if (!mapped) __atomic_fetch_add(&heap_mpi, d, __ATOMIC_RELAXED);
        ml_mem_fstat_t *s = &fstats[fn - 1];
        if (d >= 0) {
            __atomic_fetch_add(&s->alloc, d, __ATOMIC_RELAXED);
            __atomic_fetch_add(&s->nalloc, 1, __ATOMIC_RELAXED);
        } else {
            __atomic_fetch_add(&s->freed, -d, __ATOMIC_RELAXED);
            __atomic_fetch_add(&s->nfree, 1, __ATOMIC_RELAXED);
        }
        if (shared) __atomic_fetch_add(&s->shared, d, __ATOMIC_RELAXED);
    }
}


/* A block allocated, freed or resized inside an MPI call (the interposer checked). */
ML_EXPORT void ml_memory_heap_changed(int64_t bytes)
{
    charge(bytes, 0, 0);
}

/* ------------------------------------------------------------------------------- mappings */
/* Mappings made through the interposer (and the tool's own), so that an unmap is charged only
 * for what a map charged, to whoever made it. A small array with a spin lock: mmap and munmap
 * are system calls, and memory allocators make large mappings rarely. */
#define ML_MAX_MAPS 4096
typedef struct ml_map {
    uintptr_t addr;
    size_t len;
    int owner; /* 1 MPI, 2 application, 3 tool; 0: free slot */
    int shared;
} ml_map_t;

static ml_map_t maps[ML_MAX_MAPS];
static int nmaps; /* slots in use at the front of maps[] (holes have owner 0) */
static int map_lock;
static uint64_t maps_dropped;

static void lock_maps(void)
{
    while (__atomic_exchange_n(&map_lock, 1, __ATOMIC_ACQUIRE)) __builtin_ia32_pause();
}

static void unlock_maps(void)
{
    __atomic_store_n(&map_lock, 0, __ATOMIC_RELEASE);
}

static void map_insert(void *p, size_t len, int owner, int shared)
{
    lock_maps();
    int slot = -1;
    for (int i = 0; i < nmaps; i++)
        if (maps[i].owner == 0) {
            slot = i;
            break;
        }
    if (slot < 0 && nmaps < ML_MAX_MAPS) slot = nmaps++;
    if (slot >= 0)
        maps[slot] = (ml_map_t){(uintptr_t)p, len, owner, shared};
    else
        maps_dropped++;
    unlock_maps();
}

/* A mapping of MPI's changed size: the function now running is charged (its residency is what
 * the timelines use, measured by the sampler). */
static void charge_owner(int owner, int64_t d, int shared)
{
    if (owner == 1 && ml_mem_fn > 0) charge(d, 1, shared);
}

/* Remove [p, p+len) from the table: charge back what was charged for it. */
static void map_remove(void *p, size_t len)
{
    const uintptr_t a = (uintptr_t)p, b = a + len;
    lock_maps();
    for (int i = 0; i < nmaps; i++) {
        ml_map_t *m = &maps[i];
        if (m->owner == 0) continue;
        const uintptr_t ma = m->addr, mb = m->addr + m->len;
        if (b <= ma || a >= mb) continue;
        const uintptr_t lo = a > ma ? a : ma, hi = b < mb ? b : mb;
        charge_owner(m->owner, -(int64_t)(hi - lo), m->shared);
        if (lo == ma && hi == mb) {
            m->owner = 0;
        } else if (lo == ma) {
            m->addr = hi;
            m->len = mb - hi;
        } else {
            m->len = lo - ma; /* a hole in the middle drops the tail too: rare, slightly under-counted */
        }
    }
    unlock_maps();
}

static int owner_now(void)
{
    return ml_mem_tool ? 3 : ml_mem_fn > 0 ? 1 : 2;
}

/* A new mapping made inside an MPI call: MPI's (the application's are not tracked). */
static void map_charge_new(void *p, size_t len, int flags)
{
    const int shared = (flags & MAP_SHARED) != 0;
    map_insert(p, len, owner_now(), shared);
    charge((int64_t)len, 1, shared);
}

ML_EXPORT void ml_memory_mapped(void *p, size_t len, int flags)
{
    if (flags & MAP_FIXED) map_remove(p, len); /* replaces what was there */
    map_charge_new(p, len, flags);
}

ML_EXPORT void ml_memory_unmapped(void *p, size_t len)
{
    map_remove(p, len);
}

/* Find who made the mapping, move it, and charge the change of size to that owner. */
ML_EXPORT void ml_memory_remapped(void *old, void *p, size_t newlen, size_t oldlen)
{
    lock_maps();
    int owner = 0, shared = 0;
    for (int i = 0; i < nmaps; i++)
        if (maps[i].owner != 0 && maps[i].addr == (uintptr_t)old) {
            owner = maps[i].owner;
            shared = maps[i].shared;
            maps[i].addr = (uintptr_t)p;
            maps[i].len = newlen;
            break;
        }
    unlock_maps();
    if (owner != 0) charge_owner(owner, (int64_t)newlen - (int64_t)oldlen, shared);
}

/* The segment costs memory when it is mapped (shmat, or mmap with MAP_SHARED, counted there). */
ML_EXPORT void ml_memory_shm_opened(void)
{
    if (ml_mem_fn > 0) __atomic_fetch_add(&fstats[ml_mem_fn - 1].nshm, 1, __ATOMIC_RELAXED);
}

ML_EXPORT void ml_memory_attached(void *p, size_t len)
{
    if (ml_mem_fn > 0) __atomic_fetch_add(&fstats[ml_mem_fn - 1].nshm, 1, __ATOMIC_RELAXED);
    map_charge_new(p, len, MAP_SHARED);
}

ML_EXPORT size_t ml_memory_shm_len(const void *addr)
{
    size_t len = 0;
    lock_maps();
    for (int i = 0; i < nmaps; i++)
        if (maps[i].owner != 0 && maps[i].addr == (uintptr_t)addr) len = maps[i].len;
    unlock_maps();
    return len;
}

/* ------------------------------------------------------------------------------- the tool's own */
/* The tool's large blocks are mappings of their own (registered as the tool's, so the sampler
 * measures their residency: a large zeroed table costs only the pages touched); its small blocks
 * come from the heap and are counted by size. */
#define ML_SYS_BIG ((size_t)64 << 10)

static size_t tool_map_len(const void *p)
{
    size_t len = 0;
    lock_maps();
    for (int i = 0; i < nmaps; i++)
        if (maps[i].owner == 3 && maps[i].addr == (uintptr_t)p) {
            len = maps[i].len;
            break;
        }
    unlock_maps();
    return len;
}

static void *sys_big(size_t n)
{
    if (ML_UNLIKELY(real.mmap == NULL)) resolve();
    void *p = real.mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
    map_insert(p, n, 3, 0);
    return p;
}

void *ml_sys_malloc(size_t n)
{
    if (n >= ML_SYS_BIG) return sys_big(n);
    if (ML_UNLIKELY(real.malloc == NULL)) resolve();
    void *p = real.malloc(n);
    if (p != NULL) __atomic_fetch_add(&heap_tool, (int64_t)real.usable(p), __ATOMIC_RELAXED);
    return p;
}

void *ml_sys_calloc(size_t m, size_t n)
{
    if (n != 0 && m > SIZE_MAX / n) return NULL;
    if (m * n >= ML_SYS_BIG) return sys_big(m * n); /* fresh anonymous pages are zero */
    if (ML_UNLIKELY(real.calloc == NULL)) resolve();
    void *p = real.calloc(m, n);
    if (p != NULL) __atomic_fetch_add(&heap_tool, (int64_t)real.usable(p), __ATOMIC_RELAXED);
    return p;
}

void ml_sys_free(void *p)
{
    if (p == NULL || in_boot(p)) return;
    const size_t big = tool_map_len(p);
    if (big != 0) {
        ml_sys_munmap(p, big);
        return;
    }
    if (ML_UNLIKELY(real.free == NULL)) resolve();
    __atomic_fetch_sub(&heap_tool, (int64_t)real.usable(p), __ATOMIC_RELAXED);
    real.free(p);
}

void *ml_sys_realloc(void *p, size_t n)
{
    if (p == NULL) return ml_sys_malloc(n);
    const size_t big = tool_map_len(p);
    if (big == 0 && n < ML_SYS_BIG) {
        if (ML_UNLIKELY(real.realloc == NULL)) resolve();
        const int64_t before = (int64_t)real.usable(p);
        void *q = real.realloc(p, n);
        if (q != NULL) __atomic_fetch_add(&heap_tool, (int64_t)real.usable(q) - before, __ATOMIC_RELAXED);
        return q;
    }
    void *q = ml_sys_malloc(n);
    if (q == NULL) return NULL;
    const size_t old = big != 0 ? big : real.usable(p);
    memcpy(q, p, old < n ? old : n);
    ml_sys_free(p);
    return q;
}

void *ml_sys_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    if (ML_UNLIKELY(real.mmap == NULL)) resolve();
    void *p = real.mmap(addr, len, prot, flags, fd, off);
    if (p != MAP_FAILED) map_insert(p, len, 3, (flags & MAP_SHARED) != 0);
    return p;
}

int ml_sys_munmap(void *addr, size_t len)
{
    if (ML_UNLIKELY(real.munmap == NULL)) resolve();
    const int rc = real.munmap(addr, len);
    if (rc == 0) map_remove(addr, len);
    return rc;
}

/* ------------------------------------------------------------------------------- residency */
static int rollup_fd = -1;
static int have_rollup;
static char self_path[4096];       /* the tool library's own file: its mappings are the tool's */
static char interposer_path[4096]; /* and the interposer's */

/* Value in bytes of the "Key:  N kB" line of an smaps text starting at line. */
static int64_t kb_field(const char *line, const char *key, size_t keylen, int *hit)
{
    if (strncmp(line, key, keylen) != 0) return 0;
    *hit = 1;
    return strtoll(line + keylen, NULL, 10) * 1024;
}

/* Walk /proc/self/smaps: total PSS and RSS (when tool is NULL) or the PSS of the tool's own
 * mappings (into *tool). Reads in blocks; no allocation. */
static int smaps_walk(int64_t *pss, int64_t *rss, int64_t *tool)
{
    const int fd = open("/proc/self/smaps", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    static char buf[1 << 16]; /* one thread at a time: callers hold sample_lock */
    size_t have = 0;
    int mine = 0;
    int64_t p = 0, r = 0, t = 0;
    for (;;) {
        const ssize_t n = read(fd, buf + have, sizeof buf - 1 - have);
        if (n <= 0) break;
        have += (size_t)n;
        buf[have] = 0;
        char *line = buf, *nl;
        while ((nl = memchr(line, '\n', have - (size_t)(line - buf))) != NULL) {
            *nl = 0;
            if ((line[0] >= '0' && line[0] <= '9') || (line[0] >= 'a' && line[0] <= 'f')) {
                /* a mapping header: "start-end perms offset dev inode path" */
                char *end = NULL;
                const uintptr_t a = (uintptr_t)strtoull(line, &end, 16);
                if (end != NULL && *end == '-') {
                    const uintptr_t b = (uintptr_t)strtoull(end + 1, NULL, 16);
                    /* the library's zero-initialized data has no path: find it by an address in it */
                    mine = (uintptr_t)maps >= a && (uintptr_t)maps < b;
                    const char *path = strchr(line, '/');
                    if (!mine && path != NULL && ((self_path[0] && strcmp(path, self_path) == 0) ||
                                                  (interposer_path[0] && strcmp(path, interposer_path) == 0)))
                        mine = 1;
                }
            } else {
                int hit = 0;
                const int64_t v = kb_field(line, "Pss:", 4, &hit);
                if (hit) {
                    p += v;
                    if (mine) t += v;
                } else {
                    r += kb_field(line, "Rss:", 4, &hit);
                }
            }
            line = nl + 1;
        }
        have -= (size_t)(line - buf);
        memmove(buf, line, have);
    }
    close(fd);
    if (pss) *pss = p;
    if (rss) *rss = r;
    if (tool) *tool = t;
    return 0;
}

/* PSS and RSS of the whole process now: smaps_rollup when the kernel has it (one pass over the
 * page tables, no per-mapping text), else the full smaps. A pass over the page tables is not
 * cheap: ~1-5 ms for an MPI process here. */
static int64_t rollup_pss_anon = -1;
static int read_residency(int64_t *pss, int64_t *rss)
{
    if (!have_rollup) return smaps_walk(pss, rss, NULL);
    char buf[2048];
    const ssize_t n = pread(rollup_fd, buf, sizeof buf - 1, 0);
    if (n <= 0) return -1;
    buf[n] = 0;
    int64_t p = -1, r = -1;
    for (char *line = buf; line != NULL && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
        int hit = 0;
        const int64_t v = kb_field(line, "Pss:", 4, &hit);
        if (hit) p = v;
        hit = 0;
        const int64_t w = kb_field(line, "Rss:", 4, &hit);
        if (hit) r = w;
        hit = 0;
        const int64_t an = kb_field(line, "Pss_Anon:", 9, &hit);
        if (hit) rollup_pss_anon = an;
    }
    *pss = p;
    *rss = r;
    return p >= 0 ? 0 : -1;
}

/* The timer's residency: exact (smaps_rollup) every MPILENS_MEMORY_ROLLUP_MS, and in between
 * carried forward with /proc/self/statm, which reads the kernel's counters (microseconds): the
 * change of anonymous resident memory is the change of its PSS (private pages), and the change of
 * file and shmem resident memory counts with the PSS/RSS ratio of the last exact sample. */
static int method; /* ML_MEMORY_METHOD_* */
static int statm_fd = -1;
static struct { int64_t pss, rss, anon, shared; double ratio; uint64_t at; int valid; } anchor;

static int read_statm(int64_t *resident, int64_t *shared)
{
    char buf[256];
    const ssize_t n = pread(statm_fd, buf, sizeof buf - 1, 0);
    if (n <= 0) return -1;
    buf[n] = 0;
    char *end;
    strtoll(buf, &end, 10); /* size */
    const long long res = strtoll(end, &end, 10), shr = strtoll(end, &end, 10);
    const int64_t page = (int64_t)sysconf(_SC_PAGESIZE);
    *resident = res * page;
    *shared = shr * page;
    return 0;
}

/* Exact residency, and a new anchor for the estimates. */
static int residency_exact(int64_t *pss, int64_t *rss)
{
    rollup_pss_anon = -1;
    if (read_residency(pss, rss) != 0) return -1;
    int64_t res, shr;
    if (statm_fd >= 0 && read_statm(&res, &shr) == 0) {
        anchor.pss = *pss;
        anchor.rss = *rss;
        anchor.anon = res - shr;
        anchor.shared = shr;
        /* PSS of the file and shmem pages per resident byte of them */
        const int64_t pss_nonanon = rollup_pss_anon >= 0 ? *pss - rollup_pss_anon : -1;
        anchor.ratio = pss_nonanon >= 0 && shr > 0 ? (double)pss_nonanon / (double)shr : 1.0;
        anchor.at = ml_clock_ns();
        anchor.valid = 1;
    }
    return 0;
}

/* Residency for the timer and the marks: *exact says whether it was measured or carried forward. */
static int residency_sampled(int64_t *pss, int64_t *rss, int *exact)
{
    const uint64_t every = (uint64_t)ml_g.config.memory_rollup_ms * 1000000u;
    int64_t res, shr;
    if (!anchor.valid || method == ML_MEMORY_METHOD_SMAPS || ml_clock_ns() - anchor.at >= every ||
        read_statm(&res, &shr) != 0) {
        *exact = 1;
        return residency_exact(pss, rss);
    }
    *exact = 0;
    *pss = anchor.pss + ((res - shr) - anchor.anon) + (int64_t)((double)(shr - anchor.shared) * anchor.ratio);
    *rss = anchor.rss + (res - anchor.anon - anchor.shared);
    return 0;
}

/* ------------------------------------------------------------------------------- records */
static int out_fd = -1; /* >= 0: the rank's stream is open (its file, or its chunks in a container) */
static ml_stream_t out_stream;
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;
static ml_mem_rec_t outbuf[1024]; /* 72 KiB */
static size_t outn;
static uint64_t records_written, write_errors;
static ml_mem_rec_t early[4]; /* records made before the file is open (MPI_Init) */
static int nearly;
static int64_t tool_pss; /* PSS of the library's file and static data: measured at MPI_Init and MPI_Finalize */
static pthread_t timer;
static int timer_running, timer_stop;
static uint64_t init_ns; /* CLOCK_MONOTONIC at MPI_Init entry: time origin of this rank's records */

static void flush_locked(void)
{
    if (outn == 0 || out_fd < 0) return;
    /* every record leaves with its check, whichever path made it */
    for (size_t i = 0; i < outn; i++) {
        outbuf[i].zero = 0;
        outbuf[i].check = ml_fnv1a(ML_FNV1A_START, &outbuf[i], offsetof(ml_mem_rec_t, check));
    }
    if (ml_stream_write(&out_stream, outbuf, outn * sizeof outbuf[0]) != 0) write_errors++;
    records_written += outn;
    outn = 0;
}

static void emit(const ml_mem_rec_t *r)
{
    pthread_mutex_lock(&out_lock);
    if (out_fd < 0) {
        if (nearly < (int)(sizeof early / sizeof early[0])) early[nearly++] = *r;
    } else {
        outbuf[outn++] = *r;
        if (outn == sizeof outbuf / sizeof outbuf[0]) flush_locked();
    }
    pthread_mutex_unlock(&out_lock);
}

static uint64_t since_init(void)
{
    return ml_clock_ns() - init_ns;
}

/* Resident bytes of the mappings MPI made (private ones, shared ones), from mincore(): a mapping
 * is charged when its pages are touched, not when it is made. Shared mappings report the pages
 * resident in the shared object; the analysis divides them among the ranks of the host. */
static ml_map_t snap[ML_MAX_MAPS];
static unsigned char vec[1 << 16];
static uint64_t pagemap_vec[1 << 13];
static int pagemap_fd = -2; /* -2: not opened yet; -1: cannot be read */

/* Pages of [at, at + pages) mapped into this process, from /proc/self/pagemap (bit 63: present),
 * or -1 when it cannot be read. For a shared file mapping, mincore() says which pages of the file
 * are in the page cache, mapped here or not (read ahead, reserved): more than the process holds. */
static int64_t mapped_pages(uintptr_t at, size_t pages, size_t page)
{
    if (pagemap_fd == -2) pagemap_fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    if (pagemap_fd < 0) return -1;
    int64_t n = 0;
    while (pages > 0) {
        const size_t k = pages < sizeof pagemap_vec / 8 ? pages : sizeof pagemap_vec / 8;
        const ssize_t got = pread(pagemap_fd, pagemap_vec, k * 8, (off_t)(at / page * 8));
        if (got != (ssize_t)(k * 8)) return -1;
        for (size_t i = 0; i < k; i++) n += (int64_t)(pagemap_vec[i] >> 63);
        pages -= k;
        at += k * page;
    }
    return n;
}

static void mapped_resident(int owner, int64_t *priv, int64_t *shared)
{
    int n = 0;
    lock_maps();
    for (int i = 0; i < nmaps; i++)
        if (maps[i].owner == owner) snap[n++] = maps[i];
    unlock_maps();
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    int64_t p = 0, s = 0;
    for (int i = 0; i < n; i++) {
        const uintptr_t a = snap[i].addr & ~(uintptr_t)(page - 1), b = snap[i].addr + snap[i].len;
        /* the tool's shared mappings are its statistics files (stats.c): only the pages it touched */
        if (owner == 3 && snap[i].shared) {
            const int64_t res = mapped_pages(a, (b - a + page - 1) / page, page);
            if (res >= 0) {
                s += res * (int64_t)page;
                continue;
            }
        }
        for (uintptr_t at = a; at < b; at += sizeof vec * page) {
            const size_t len = b - at < sizeof vec * page ? b - at : sizeof vec * page;
            if (mincore((void *)at, len, vec) != 0) break; /* unmapped meanwhile */
            const size_t pages = (len + page - 1) / page;
            int64_t res = 0;
            for (size_t k = 0; k < pages; k++) res += vec[k] & 1;
            *(snap[i].shared ? &s : &p) += res * (int64_t)page;
        }
    }
    *priv = p;
    *shared = s;
}

/* Held around every residency read: smaps_walk has one static buffer and read_residency sets
 * rollup_pss_anon, and the timer thread, region boundaries and (smaps method) the application's
 * threads in their MPI calls all read residency. */
static pthread_mutex_t sample_lock = PTHREAD_MUTEX_INITIALIZER;

static int read_residency_locked(int64_t *pss, int64_t *rss)
{
    pthread_mutex_lock(&sample_lock);
    const int rc = read_residency(pss, rss);
    pthread_mutex_unlock(&sample_lock);
    return rc;
}

/* A residency sample with MPI's allocation counters of the moment. */
static void sample(int kind, int fn, uint32_t aux)
{
    ml_mem_rec_t r = {0};
    r.kind = (uint16_t)kind;
    r.fn = (uint16_t)fn;
    r.aux = aux;
    pthread_mutex_lock(&sample_lock);
    int exact = 1;
    const int rc = kind == ML_MEM_SAMPLE ? residency_sampled(&r.pss, &r.rss, &exact) : residency_exact(&r.pss, &r.rss);
    if (rc != 0) r.pss = r.rss = -1;
    if (!exact) r.aux |= ML_MEM_ESTIMATED;
    r.t_ns = since_init();
    r.mpi_heap = __atomic_load_n(&heap_mpi, __ATOMIC_RELAXED);
    mapped_resident(1, &r.mpi_mapped, &r.mpi_shared);
    int64_t tool_priv = 0, tool_shared = 0;
    mapped_resident(3, &tool_priv, &tool_shared); /* the tool's own mappings: private, PSS = resident */
    r.tool = tool_pss + tool_priv + tool_shared + __atomic_load_n(&heap_tool, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&sample_lock);
    emit(&r);
}

static void refresh_tool_pss(void)
{
    int64_t t = 0;
    pthread_mutex_lock(&sample_lock); /* smaps_walk's buffer */
    if (smaps_walk(NULL, NULL, &t) == 0) tool_pss = t;
    pthread_mutex_unlock(&sample_lock);
}

/* ------------------------------------------------------------------------------- call hooks */
static __thread int64_t before_pss, before_rss;
static __thread uint64_t before_t;

void ml_memory_enter(int fn)
{
    ml_mem_fn = fn + 1;
    if (method == ML_MEMORY_METHOD_SMAPS) {
        before_t = since_init();
        if (read_residency_locked(&before_pss, &before_rss) != 0) before_pss = before_rss = -1;
    }
}

void ml_memory_leave(int fn)
{
    if (method == ML_MEMORY_METHOD_SMAPS) {
        ml_mem_rec_t r = {0};
        r.kind = ML_MEM_CALL;
        r.fn = (uint16_t)fn;
        if (read_residency_locked(&r.pss, &r.rss) != 0) r.pss = r.rss = -1;
        r.t_ns = since_init();
        r.pss_before = before_pss;
        r.rss_before = before_rss;
        r.t_before = before_t;
        if (r.pss >= 0 && before_pss >= 0) {
            ml_mem_fstat_t *s = &fstats[fn];
            const int64_t d = r.pss - before_pss;
            __atomic_fetch_add(d >= 0 ? &s->pss_grown : &s->pss_shrunk, d >= 0 ? d : -d, __ATOMIC_RELAXED);
        }
        emit(&r);
    }
    ml_mem_fn = 0;
}

/* ------------------------------------------------------------------------------- lifetime */
static void *timer_main(void *arg)
{
    (void)arg;
    ml_mem_tool = 1;
    const uint64_t period = (uint64_t)ml_g.config.memory_period_ms * 1000000u;
    uint64_t next = ml_clock_ns() + period;
    while (!__atomic_load_n(&timer_stop, __ATOMIC_ACQUIRE)) {
        const struct timespec ts = {(time_t)(next / 1000000000u), (long)(next % 1000000000u)};
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
        if (__atomic_load_n(&timer_stop, __ATOMIC_ACQUIRE)) break;
        sample(ML_MEM_SAMPLE, 0, 0);
        pthread_mutex_lock(&out_lock);
        flush_locked();
        pthread_mutex_unlock(&out_lock);
        next += period;
        const uint64_t now = ml_clock_ns();
        if (next < now) next = now + period; /* fell behind (an overloaded node): skip, do not burst */
    }
    return NULL;
}

/* The file of the library holding addr, as smaps names it (before counting begins: realpath
 * allocates). */
static void library_file(const void *addr, char *out, size_t n)
{
    Dl_info info;
    if (dladdr(addr, &info) == 0 || info.dli_fname == NULL) return;
    char *abs = realpath(info.dli_fname, NULL);
    snprintf(out, n, "%s", abs ? abs : info.dli_fname);
    real.free(abs);
}

/* MPI_Init and MPI_Init_thread, before the MPI call: sample, and charge what follows to it. */
void ml_memory_init_begin(int fn)
{
    if (!ml_g.config_ok || !(ml_g.config.mode & ML_MODE_MEMORY) || init_ns != 0) return; /* once */
    init_ns = ml_clock_ns();
    method = ml_g.config.memory_method;
    rollup_fd = open("/proc/self/smaps_rollup", O_RDONLY | O_CLOEXEC);
    have_rollup = rollup_fd >= 0;
    statm_fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    library_file((const void *)&ml_memory_init_begin, self_path, sizeof self_path);
    library_file((const void *)&ml_memory_interpose_abi, interposer_path, sizeof interposer_path);
    set_counting(1);
    refresh_tool_pss(); /* the library's own pages are resident already */
    sample(ML_MEM_INIT_BEGIN, fn, 0);
    ml_mem_fn = fn + 1;
}

/* In ml_init_after_mpi_init, once the run directory is known: open this rank's file. */
static int open_file(void)
{
    char path[4300];
    if (ml_stream_open(&out_stream, ML_STREAM_MEMORY, 0) != 0) return -1;
    const int fd = out_stream.fd;
    ml_mem_header_t h = {0};
    memcpy(h.magic, ML_MAGIC_MEMORY, ML_MAGIC_LEN);
    h.rank = (uint32_t)ml_g.rank;
    h.nranks = (uint32_t)ml_g.size;
    h.method = (uint32_t)method;
    h.period_ms = (uint32_t)ml_g.config.memory_period_ms;
    h.record_size = sizeof(ml_mem_rec_t);
    h.pid = (uint32_t)getpid();
    h.rollup = (uint32_t)have_rollup;
    h.page_size = (uint32_t)sysconf(_SC_PAGESIZE);
    h.init_ns = init_ns;
    if (ml_stream_write(&out_stream, &h, sizeof h) != 0) {
        ml_stream_close(&out_stream);
        return -1;
    }
    if (ml_g.rank == 0) { /* function numbers of this build, for the analysis */
        snprintf(path, sizeof path, "%s/" ML_PATH_MEMORY_FUNCTIONS, ml_g.outdir);
        FILE *f = ml_file_fopen(path);
        if (f != NULL) {
            for (int i = 0; i < ML_NFUNC; i++) fprintf(f, "%s\n", ml_fn_name[i]);
            fclose(f);
        }
    }
    pthread_mutex_lock(&out_lock);
    out_fd = fd;
    for (int i = 0; i < nearly; i++) outbuf[outn++] = early[i];
    pthread_mutex_unlock(&out_lock);
    ml_g.observers |= ML_OBS_MEMORY;
    return 0;
}

int ml_memory_init(void)
{
    if (open_file() == 0) return 0;
    ml_log(0, "cannot write this rank's memory samples into %s/memory (%s); memory mode is off", ml_g.outdir,
           strerror(errno));
    return -1;
}

/* End of the MPI_Init wrapper: the second residency sample; then the timer starts. */
void ml_memory_init_end(int fn)
{
    static int ended;
    if (!__atomic_load_n(&counting_on, __ATOMIC_RELAXED) || ended++) return;
    ml_mem_fn = 0;
    if (out_fd < 0) { /* no run directory: memory mode is off */
        set_counting(0);
        return;
    }
    refresh_tool_pss();
    sample(ML_MEM_INIT_END, fn, 0);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 1 << 17);
    ml_mem_tool = 1; /* the new thread's stack and TLS are the tool's */
    timer_running = pthread_create(&timer, &attr, timer_main, NULL) == 0;
    ml_mem_tool = 0;
    pthread_attr_destroy(&attr);
}

static void write_trailer(int reason)
{
    for (int f = 0; f < ML_NFUNC; f++) {
        const ml_mem_fstat_t *s = &fstats[f];
        if (s->nalloc == 0 && s->nfree == 0 && s->pss_grown == 0 && s->pss_shrunk == 0 && s->nshm == 0) continue;
        ml_mem_rec_t r = {0};
        r.kind = ML_MEM_FUNC;
        r.fn = (uint16_t)f;
        r.aux = (uint32_t)s->nshm;
        r.pss = s->pss_grown;
        r.rss = s->pss_shrunk;
        r.t_ns = s->nalloc;
        r.alloc = s->alloc;
        r.freed = s->freed;
        r.nfree = s->nfree;
        r.shared = s->shared;
        outbuf[outn++] = r;
        if (outn == sizeof outbuf / sizeof outbuf[0]) flush_locked();
    }
    ml_mem_rec_t e = {0};
    e.kind = ML_MEM_END;
    e.aux = (uint32_t)reason;
    e.t_ns = since_init();
    e.pss = (int64_t)maps_dropped;
    e.rss = (int64_t)write_errors;
    outbuf[outn++] = e;
    flush_locked();
}

/* MPI_Finalize: what the tool does before the MPI call is charged to MPI_Finalize. */
void ml_memory_finalize_begin(void)
{
    if (out_fd < 0) return;
    /* like MPI_Init, MPI_Finalize is measured by residency: the loader unmaps what it mapped */
    refresh_tool_pss();
    sample(ML_MEM_FINI_BEGIN, ML_FN_MPI_Finalize, 0);
    ml_mem_fn = ML_FN_MPI_Finalize + 1;
}

/* After MPI_Finalize returned: the last sample, the table of functions, and the end. */
void ml_memory_finish(void)
{
    if (out_fd < 0) return;
    ml_mem_fn = 0;
    if (timer_running) {
        __atomic_store_n(&timer_stop, 1, __ATOMIC_RELEASE);
        pthread_join(timer, NULL);
        timer_running = 0;
    }
    refresh_tool_pss();
    sample(ML_MEM_FINAL, ML_FN_MPI_Finalize, 0);
    pthread_mutex_lock(&out_lock);
    write_trailer(ML_END_FINALIZE);
    ml_stream_close(&out_stream);
    out_fd = -1;
    pthread_mutex_unlock(&out_lock);
    set_counting(0);
}

/* A process ending without MPI_Finalize (signal, exit, abort): what is buffered, and the end. */
void ml_memory_emergency(int reason)
{
    if (out_fd < 0) return;
    __atomic_store_n(&timer_stop, 1, __ATOMIC_RELEASE); /* the timer takes no new sample */
    /* The lock's holder is most likely the timer thread in a flush, done within milliseconds: wait
     * for it (up to 100 ms). The interrupted thread itself may hold it (a signal in the middle of
     * emit): then write anyway, a record may be torn at worst. */
    int locked = 0;
    for (int i = 0; i < 100 && !(locked = pthread_mutex_trylock(&out_lock) == 0); i++) {
        const struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    write_trailer(reason);
    out_fd = -1; /* the end is written: a sample the timer was taking goes nowhere */
    if (locked) pthread_mutex_unlock(&out_lock);
}

/* Region boundaries and MPI_Pcontrol: a residency sample marked with what happened. */
void ml_memory_mark(int what, const char *name, int level)
{
    if (out_fd < 0 || !__atomic_load_n(&ml_g.ready, __ATOMIC_RELAXED)) return;
    ml_mem_rec_t r = {0};
    r.kind = ML_MEM_MARK;
    r.aux = (uint32_t)what;
    r.fn = (uint16_t)level;
    r.t_ns = since_init();
    r.pss = r.rss = -1; /* the sample that follows has the residency */
    if (name != NULL) strncpy(r.name, name, sizeof r.name - 1);
    emit(&r);
    sample(ML_MEM_SAMPLE, 0, (uint32_t)what);
}

/* the table's region hook (modes.c): a region's boundary marks the samples of the threads observed */
void ml_memory_on_region(ml_thread_t *t, int begin, uint32_t path, const char *name)
{
    (void)path;
    if (ML_UNLIKELY(t->observe & ML_OBS_MEMORY)) ml_memory_mark(begin ? ML_MEM_MARK_BEGIN : ML_MEM_MARK_END, name, 0);
}
