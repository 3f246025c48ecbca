/* Call sites (callsite.c): MPILENS_CALLSITE_DEPTH. The hot path is ml_site_find/ml_site_count
 * in ml.h; these are the process's and threads' set-up and the output. */
#ifndef ML_CALLSITE_H
#define ML_CALLSITE_H

#include "ml.h"
#include "ml_output.h"

/* At MPI_Init, before any thread attaches: the depth, the code of MPI and mpilens, the unwinder. */
int ml_callsite_init(void);
/* The depth in effect (0: off). */
int ml_callsite_depth(void);
/* call-site entries per thread (0 when off) */
uint32_t ml_callsite_capacity(void);
/* Bytes of a thread's tables (0 when off), and their set-up in that much zeroed memory. */
size_t ml_callsite_thread_bytes(void);
void ml_callsite_thread(ml_thread_t *t, char *mem);
/* MPI_Pcontrol's reset: the counts go, the sites stay. */
void ml_callsite_reset(ml_thread_t *t);
/* The payload's tables modules, sites, frames (no allocation: also in signal handlers). */
void ml_callsite_payload(ml_sink_t *s, ml_thread_t *threads);
/* The trace trailer's `sites` and `site_modules` (JSON members, each preceded by a comma): the
 * sites of every thread, by thread number (no allocation: also in signal handlers). */
void ml_callsite_trace_json(ml_sink_t *s);
/* At MPI_Finalize: this rank's memory map (ML_PATH_MAPS). */
void ml_callsite_finish(void);

#endif
