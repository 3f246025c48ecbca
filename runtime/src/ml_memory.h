/* Memory mode (runtime/src/memory.c): what MPI allocates and maps against the application, over
 * time, in memory/rank-NNNNNN.bin. Internal header, never installed.
 *
 * Its allocation counting needs libmpilens-memory.so (memory_interpose.c, whose interface to this
 * mode is memory_interpose.h) preloaded with the runtime; the runtime's own allocations are kept
 * apart by ml_alloc.h. The mode has no per-thread state in ml_thread_t: the thread-local flags of
 * the interposer (ml_mem_fn, ml_mem_tool) are in memory.c. */
#ifndef ML_MEMORY_H
#define ML_MEMORY_H

#include <stddef.h>
#include <stdint.h>

/* File memory/rank-NNNNNN.bin: one header, then 64-byte records (python/mpilens/memory.py). */
typedef struct ml_mem_header {
    char magic[8];            /* "MLMEM01\n" */
    uint32_t rank, nranks;
    uint32_t method;          /* ML_MEMORY_METHOD_FAST / _SMAPS */
    uint32_t period_ms;
    uint32_t record_size;     /* 64 */
    uint32_t pid;
    uint32_t rollup;          /* residency read from smaps_rollup (1) or the full smaps (0) */
    uint32_t page_size;
    uint64_t init_ns;         /* CLOCK_MONOTONIC at MPI_Init entry: t = 0 of the records */
    uint64_t pad[2];
} ml_mem_header_t;

enum {
    ML_MEM_SAMPLE = 1,     /* residency + allocation counters (timer; aux: mark that caused it) */
    ML_MEM_INIT_BEGIN = 2, /* the same, before MPI_Init */
    ML_MEM_INIT_END = 3,   /* the same, after MPI_Init */
    ML_MEM_FINAL = 4,      /* the same, after MPI_Finalize */
    ML_MEM_CALL = 5,       /* smaps method: residency before and after one MPI call */
    ML_MEM_MARK = 6,       /* region begin (aux 1) / end (aux 2) / MPI_Pcontrol (aux 3, fn = level) */
    ML_MEM_FUNC = 7,       /* trailer: what one MPI function allocated and freed */
    ML_MEM_END = 8,        /* trailer: aux = how the process ended (ML_END_*) */
    ML_MEM_FINI_BEGIN = 9, /* a SAMPLE before MPI_Finalize (ML_MEM_FINAL is the one after) */
};
enum { ML_MEM_MARK_BEGIN = 1, ML_MEM_MARK_END = 2, ML_MEM_MARK_PCONTROL = 3 };
#define ML_MEM_ESTIMATED 0x100u /* SAMPLE aux: residency carried forward from statm, not measured */

typedef struct ml_mem_rec {
    uint16_t kind, fn;
    uint32_t aux;
    uint64_t t_ns;           /* since MPI_Init entry (FUNC: allocations counted) */
    int64_t pss, rss;        /* bytes; -1 when unreadable (FUNC: PSS grown / shrunk in calls) */
    union {
        /* SAMPLE kinds: net bytes of MPI's heap blocks, resident bytes of MPI's private and shared
         * mappings, the tool's own memory */
        struct { int64_t mpi_heap, mpi_mapped, mpi_shared, tool; };
        struct { int64_t pss_before, rss_before; uint64_t t_before; int64_t pad_; };  /* CALL */
        struct { int64_t alloc, freed; uint64_t nfree; int64_t shared; };  /* FUNC */
        char name[32];                                                      /* MARK */
    };
} ml_mem_rec_t;

/* Per MPI function, what was allocated and freed while inside it (both methods), and the PSS
 * changes measured inside it (smaps method). */
typedef struct ml_mem_fstat {
    int64_t alloc, freed, shared;
    uint64_t nalloc, nfree, nshm;
    int64_t pss_grown, pss_shrunk;
} ml_mem_fstat_t;

/* the mode's entry in the table of modes (modes.c), in the order core.c calls them */
int ml_memory_load(char *err, size_t errlen); /* library load: refuse memory mode without libmpilens-memory.so */
int ml_memory_interposer_loaded(void);
void ml_memory_init_begin(int fn); /* MPI_Init wrapper entered: sample, charge what follows to MPI_Init */
int ml_memory_init(void);          /* MPI_Init, run directory ready: open this rank's file */
void ml_memory_init_end(int fn);   /* MPI_Init wrapper returns: second sample, the sampling timer starts */
void ml_memory_finalize_begin(void); /* MPI_Finalize wrapper entered */
void ml_memory_finish(void);       /* MPI_Finalize returned: last sample, the per-function trailer */
void ml_memory_emergency(int reason); /* the process ends without MPI_Finalize (ML_END_*) */
/* per call (observers, ML_OBS_MEMORY) and at region boundaries and MPI_Pcontrol */
void ml_memory_enter(int fn);
void ml_memory_leave(int fn);
void ml_memory_mark(int what, const char *name, int level);

#endif
