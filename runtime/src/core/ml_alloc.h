/* The runtime's own allocations (internal header, never installed).
 *
 * In memory mode libmpilens-memory.so (memory_interpose.c) interposes the allocation and mapping
 * calls of the process and memory.c charges them. The tool's own allocations must not be charged
 * to anyone: every runtime file sees this header (ml.h includes it, so no file can forget it), and
 * the macros below send its calls to ml_sys_* (the real functions, counted as the tool's).
 * memory.c itself defines ML_MEMORY_C and sees the plain names. */
#ifndef ML_ALLOC_H
#define ML_ALLOC_H

#include <stdlib.h>
#include <sys/mman.h>
#include <sys/types.h>

void *ml_sys_malloc(size_t n);
void *ml_sys_calloc(size_t m, size_t n);
void *ml_sys_realloc(void *p, size_t n);
void ml_sys_free(void *p);
void *ml_sys_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int ml_sys_munmap(void *addr, size_t len);
#ifndef ML_MEMORY_C
#define malloc(n) ml_sys_malloc(n)
#define calloc(m, n) ml_sys_calloc(m, n)
#define realloc(p, n) ml_sys_realloc(p, n)
#define free(p) ml_sys_free(p)
#define mmap(a, l, p, f, d, o) ml_sys_mmap(a, l, p, f, d, o)
#define munmap(a, l) ml_sys_munmap(a, l)
#endif

#endif
