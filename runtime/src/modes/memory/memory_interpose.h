/* The contract between libmpilens-memory.so (memory_interpose.c: it interposes the allocation and
 * mapping calls of the process) and libmpilens-<mpi>.so (memory.c: it decides who is charged).
 *
 * The interposer is preloaded only in memory mode, so the other modes leave malloc and mmap alone
 * (interposed, each malloc + free pair cost ~1.7 ns more, bench/RESULTS.md "Allocation calls").
 * It is never loaded alone: its references to the symbols below are resolved in the runtime
 * library at load time. The runtime refers to the interposer only through weak symbols, so it
 * loads without it and refuses memory mode then (core.c). */
#ifndef ML_MEMORY_INTERPOSE_H
#define ML_MEMORY_INTERPOSE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The real functions (the next definitions after the interposer: the C library's). */
typedef struct ml_real_alloc {
    void *(*malloc)(size_t);
    void *(*calloc)(size_t, size_t);
    void *(*realloc)(void *, size_t);
    void (*free)(void *);
    int (*posix_memalign)(void **, size_t, size_t);
    void *(*aligned_alloc)(size_t, size_t);
    void *(*memalign)(size_t, size_t);
    void *(*valloc)(size_t);
    void *(*pvalloc)(size_t);
    size_t (*usable)(void *);
    void *(*mmap)(void *, size_t, int, int, int, off_t);
    int (*munmap)(void *, size_t);
    void *(*mremap)(void *, size_t, size_t, int, ...);
    int (*shm_open)(const char *, int, mode_t);
    void *(*shmat)(int, const void *, int);
    int (*shmdt)(const void *);
} ml_real_alloc_t;

/* ---- defined by the interposer */
/* Its version of this contract: the runtime refuses memory mode when it differs. */
#define ML_MEMORY_INTERPOSE_ABI 1
extern const int ml_memory_interpose_abi;
/* The real functions, found on first use; the runtime's own allocations go straight to them. */
const ml_real_alloc_t *ml_memory_real(void);
/* Whether p was served by the interposer's bootstrap arena (while dlsym itself allocated). */
int ml_memory_in_boot(const void *p);
/* Memory mode starts (1) or ends (0) counting. The flag is the interposer's own, read at every
 * call: a load of its own data, not through another library's symbol. */
void ml_memory_count(int on);

/* ---- defined by the runtime (memory.c) */
extern __thread int ml_mem_fn __attribute__((tls_model("initial-exec")));   /* MPI function + 1 while inside it */
extern __thread int ml_mem_tool __attribute__((tls_model("initial-exec"))); /* the tool's own thread */

/* Called by the interposer only while counting() holds (counting on, the calling thread inside an
 * MPI call and not the tool's): */
void ml_memory_heap_changed(int64_t bytes);                  /* a block allocated (+), freed (-), resized */
void ml_memory_mapped(void *p, size_t len, int flags);       /* a new mapping (MAP_FIXED replaced what was there) */
void ml_memory_shm_opened(void);                             /* shm_open: counted, costs memory when mapped */
void ml_memory_attached(void *p, size_t len);                /* shmat */
/* ...and whenever counting is on (the mapping may be anyone's: charged back to its maker): */
void ml_memory_unmapped(void *p, size_t len);
void ml_memory_remapped(void *old, void *p, size_t newlen, size_t oldlen);
size_t ml_memory_shm_len(const void *addr);                  /* the length of an attached segment, 0 if unknown */

#endif
