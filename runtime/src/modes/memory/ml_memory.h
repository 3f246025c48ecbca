/* Memory mode (runtime/src/modes/memory/memory.c): what MPI allocates and maps against the application, over
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

/* memory/rank-NNNNNN.bin: an ml_mem_header_t, then ml_mem_rec_t records (ML_MEM_* kinds), both
 * generated from runtime/spec/rundir.yaml into ml_rundir.h. */
#include "ml_config.h"
#include "ml_rundir.h"
_Static_assert(ML_MEM_METHOD_FAST == ML_MEMORY_METHOD_FAST && ML_MEM_METHOD_SMAPS == ML_MEMORY_METHOD_SMAPS,
               "memory files record the MPILENS_MEMORY_METHOD setting's value");

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
void ml_memory_on_region(ml_thread_t *t, int begin, uint32_t path, const char *name); /* the table's hook */

#endif
