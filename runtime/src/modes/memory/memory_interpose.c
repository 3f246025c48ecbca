/* libmpilens-memory.so: memory mode's interposer of the allocation and mapping calls (malloc
 * family, mmap/munmap/mremap, shm_open, shmat/shmdt). It only sees the calls; memory.c, in the
 * runtime library, decides whom they are charged to. `mpilens run --mode memory` preloads it with
 * the runtime; the other modes do not, so their processes allocate at the C library's speed.
 *
 * The real functions are found with dlsym(RTLD_NEXT); while dlsym itself allocates, a static
 * bootstrap arena serves it. The contract with the runtime is memory_interpose.h. */
#include <dlfcn.h>
#include <stdarg.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>

#include "memory_interpose.h"

#define EXPORT __attribute__((visibility("default")))
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

size_t malloc_usable_size(void *ptr);

EXPORT const int ml_memory_interpose_abi = ML_MEMORY_INTERPOSE_ABI;

static ml_real_alloc_t real;
static int resolving;
static int resolved;

/* What dlsym allocates before malloc is known: served from here, never freed. */
static _Alignas(64) char boot_arena[1 << 16];
static size_t boot_used;

static void *boot_alloc(size_t n)
{
    const size_t need = (n + 16 + 15) & ~(size_t)15;
    const size_t at = __atomic_fetch_add(&boot_used, need, __ATOMIC_RELAXED);
    if (at + need > sizeof boot_arena) return NULL;
    memcpy(boot_arena + at, &n, sizeof n); /* size in the first 16 bytes, for realloc */
    return boot_arena + at + 16;
}

static inline int in_boot(const void *p)
{
    return (const char *)p >= boot_arena && (const char *)p < boot_arena + sizeof boot_arena;
}

EXPORT int ml_memory_in_boot(const void *p)
{
    return in_boot(p);
}

static void resolve(void)
{
    if (__atomic_load_n(&resolved, __ATOMIC_ACQUIRE)) return;
    resolving = 1;
#define FIND(field, name) *(void **)&real.field = dlsym(RTLD_NEXT, name)
    FIND(malloc, "malloc");
    FIND(calloc, "calloc");
    FIND(realloc, "realloc");
    FIND(free, "free");
    FIND(posix_memalign, "posix_memalign");
    FIND(aligned_alloc, "aligned_alloc");
    FIND(memalign, "memalign");
    FIND(valloc, "valloc");
    FIND(pvalloc, "pvalloc");
    FIND(usable, "malloc_usable_size");
    FIND(mmap, "mmap");
    FIND(munmap, "munmap");
    FIND(mremap, "mremap");
    FIND(shm_open, "shm_open");
    FIND(shmat, "shmat");
    FIND(shmdt, "shmdt");
#undef FIND
    resolving = 0;
    __atomic_store_n(&resolved, 1, __ATOMIC_RELEASE);
}

__attribute__((constructor(101))) static void interposer_constructor(void)
{
    resolve();
}

EXPORT const ml_real_alloc_t *ml_memory_real(void)
{
    resolve();
    return &real;
}

static int counting_on; /* set by the runtime while memory mode counts */

EXPORT void ml_memory_count(int on)
{
    __atomic_store_n(&counting_on, on, __ATOMIC_RELEASE);
}

static inline int memory_mode_on(void)
{
    return UNLIKELY(__atomic_load_n(&counting_on, __ATOMIC_RELAXED));
}

/* Memory mode counts and the calling thread is inside an MPI call (and not the tool's). */
static inline int counting(void)
{
    return memory_mode_on() && ml_mem_fn > 0 && !ml_mem_tool;
}

static inline void heap_charge(void *p, int sign)
{
    if (p != NULL && !in_boot(p)) ml_memory_heap_changed(sign * (int64_t)real.usable(p));
}

/* ------------------------------------------------------------------------------- malloc family */
EXPORT void *malloc(size_t n)
{
    if (UNLIKELY(real.malloc == NULL)) {
        if (resolving) return boot_alloc(n);
        resolve();
    }
    void *p = real.malloc(n);
    if (counting()) heap_charge(p, 1);
    return p;
}

EXPORT void *calloc(size_t m, size_t n)
{
    if (UNLIKELY(real.calloc == NULL)) {
        if (resolving) return boot_alloc(m * n); /* static memory: already zero */
        resolve();
    }
    void *p = real.calloc(m, n);
    if (counting()) heap_charge(p, 1);
    return p;
}

EXPORT void free(void *p)
{
    if (p == NULL || in_boot(p)) return;
    if (UNLIKELY(real.free == NULL)) resolve();
    if (counting()) heap_charge(p, -1);
    real.free(p);
}

EXPORT void *realloc(void *p, size_t n)
{
    if (UNLIKELY(real.realloc == NULL)) {
        if (resolving) {
            void *q = boot_alloc(n);
            if (q != NULL && p != NULL) {
                size_t old;
                memcpy(&old, (char *)p - 16, sizeof old);
                memcpy(q, p, old < n ? old : n);
            }
            return q;
        }
        resolve();
    }
    if (in_boot(p)) {
        size_t old;
        memcpy(&old, (char *)p - 16, sizeof old);
        void *q = malloc(n);
        if (q != NULL) memcpy(q, p, old < n ? old : n);
        return q;
    }
    if (!counting()) return real.realloc(p, n);
    const int64_t before = p != NULL ? (int64_t)real.usable(p) : 0;
    void *q = real.realloc(p, n);
    if (q != NULL) {
        ml_memory_heap_changed((int64_t)real.usable(q) - before);
    } else if (n == 0 && p != NULL) {
        ml_memory_heap_changed(-before); /* realloc(p, 0) freed p */
    }
    return q;
}

EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
    if (UNLIKELY(real.posix_memalign == NULL)) resolve();
    const int rc = real.posix_memalign(out, align, n);
    if (rc == 0 && counting()) heap_charge(*out, 1);
    return rc;
}

EXPORT void *aligned_alloc(size_t align, size_t n)
{
    if (UNLIKELY(real.aligned_alloc == NULL)) resolve();
    void *p = real.aligned_alloc(align, n);
    if (counting()) heap_charge(p, 1);
    return p;
}

EXPORT void *memalign(size_t align, size_t n)
{
    if (UNLIKELY(real.memalign == NULL)) resolve();
    void *p = real.memalign(align, n);
    if (counting()) heap_charge(p, 1);
    return p;
}

EXPORT void *valloc(size_t n)
{
    if (UNLIKELY(real.valloc == NULL)) resolve();
    void *p = real.valloc(n);
    if (counting()) heap_charge(p, 1);
    return p;
}

EXPORT void *pvalloc(size_t n)
{
    if (UNLIKELY(real.pvalloc == NULL)) resolve();
    void *p = real.pvalloc(n);
    if (counting()) heap_charge(p, 1);
    return p;
}

/* ------------------------------------------------------------------------------- mappings */
EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    if (UNLIKELY(real.mmap == NULL)) resolve();
    void *p = real.mmap(addr, len, prot, flags, fd, off);
    if (counting() && p != MAP_FAILED) ml_memory_mapped(p, len, flags);
    return p;
}

EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    return mmap(addr, len, prot, flags, fd, off);
}

EXPORT int munmap(void *addr, size_t len)
{
    if (UNLIKELY(real.munmap == NULL)) resolve();
    const int rc = real.munmap(addr, len);
    if (rc == 0 && memory_mode_on()) ml_memory_unmapped(addr, len);
    return rc;
}

EXPORT void *mremap(void *old, size_t oldlen, size_t newlen, int flags, ...)
{
    if (UNLIKELY(real.mremap == NULL)) resolve();
    void *target = NULL;
    if (flags & MREMAP_FIXED) {
        va_list ap;
        va_start(ap, flags);
        target = va_arg(ap, void *);
        va_end(ap);
    }
    void *p = (flags & MREMAP_FIXED) ? real.mremap(old, oldlen, newlen, flags, target)
                                     : real.mremap(old, oldlen, newlen, flags);
    if (p != MAP_FAILED && memory_mode_on()) ml_memory_remapped(old, p, newlen, oldlen);
    return p;
}

EXPORT int shm_open(const char *name, int oflag, mode_t mode)
{
    if (UNLIKELY(real.shm_open == NULL)) resolve();
    if (counting()) ml_memory_shm_opened();
    return real.shm_open(name, oflag, mode);
}

EXPORT void *shmat(int id, const void *addr, int flags)
{
    if (UNLIKELY(real.shmat == NULL)) resolve();
    void *p = real.shmat(id, addr, flags);
    if (counting() && p != (void *)-1) {
        struct shmid_ds ds;
        if (shmctl(id, IPC_STAT, &ds) == 0) ml_memory_attached(p, ds.shm_segsz);
    }
    return p;
}

EXPORT int shmdt(const void *addr)
{
    if (UNLIKELY(real.shmdt == NULL)) resolve();
    const size_t len = memory_mode_on() ? ml_memory_shm_len(addr) : 0;
    const int rc = real.shmdt(addr);
    if (rc == 0 && len > 0) ml_memory_unmapped((void *)addr, len);
    return rc;
}
