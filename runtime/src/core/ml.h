/* The core of the mpilens runtime: the profile's hot path (internal header, never installed).
 *
 * The runtime is loaded into every MPI process (LD_PRELOAD). Its hot path is the body of the
 * generated wrappers: ml_enter(), ml_now(), the MPI call, ml_now(), ml_leave*(). That path takes
 * no lock, allocates nothing and makes no system call: every thread updates its own statistics,
 * which are merged once, at MPI_Finalize.
 *
 * This header is the one the runtime's sources include: the hot path's parts, by topic (ml_base.h,
 * ml_clock.h, ml_thread.h, ml_timing.h, ml_comms.h, ml_requests.h), then the declarations of the
 * process's life, logging, regions and user counters. The other headers of core/: ml_alloc.h (the
 * tool's own allocations, included by ml_base.h), ml_modes.h (the table of modes: their lifecycle
 * and event hooks), ml_output.h (payload, profile.json, meta.json), ml_stats.h, ml_files.h,
 * ml_callsite.h. The modes' headers are in modes/<mode>/ and the wrappers' in calls/
 * (ml_observe.h: the per-call dispatch to the modes); no file of core/ includes a mode's header. A
 * mode's per-thread state is a group of ml_thread_t (ml_thread.h), a pointer the core never
 * follows; trace mode's is embedded from modes/trace/trace_thread.h (types only), which the inlined
 * trace events read on the hot path.
 */
#ifndef ML_H
#define ML_H

/* the hot path, by topic */
#include "ml_base.h"
#include "ml_clock.h"
#include "ml_thread.h"
#include "ml_timing.h"
#include "ml_comms.h"
#include "ml_requests.h"

/* ------------------------------------------------------------------------------- observers
 * Modes beyond the profile see the calls through two hooks the generated wrappers call only when
 * the thread's `observe` bits are set (one predictable branch otherwise):
 *   ml_observe_enter(t, fn)  before the MPI call (bits in ML_OBS_AT_ENTER only)
 *   ml_observe_call(t, c)    after a successful call, with its peers, tags and bytes
 * runtime/src/calls/observe.c dispatches them to each mode; the wrappers of the frequent, short
 * functions inline ml_observe_call's dispatch (ml_observe_call_inline, ml_observe.h). */
void ml_observe_enter(ml_thread_t *t, int fn);
void ml_observe_call(ml_thread_t *t, const ml_call_t *c);
/* Called once at the end of MPI_Init, when every mode has decided whether it is on. */
void ml_observers_start(void);

/* ------------------------------------------------------------------------------- lifecycle
 * core.c; the MPI_Init, MPI_Finalize and MPI_Abort wrappers (handwritten.c, fortran.c) call these,
 * and core.c calls the modes' hooks from them through the table of modes (ml_modes.h). */
void ml_mpi_init_enter(int fn);      /* the MPI_Init wrapper is entered, before its time starts */
void ml_before_mpi_init(void);       /* just before PMPI_Init */
void ml_init_after_mpi_init(int thread_level, uint64_t t_begin);
void ml_mpi_init_leave(int fn);      /* the MPI_Init wrapper returns */
void ml_mpi_finalize_enter(void);    /* the MPI_Finalize wrapper is entered */
void ml_finalize_before_mpi_finalize(void);
/* MPI_Session_init and MPI_Session_finalize (their C wrappers call these, `inner: ml_lifetime`):
 * a program that uses MPI Sessions only is measured from the first to the last (core.c) */
int ml_lifetime_Session_init(MPI_Info info, MPI_Errhandler errhandler, MPI_Session *session);
int ml_lifetime_Session_finalize(MPI_Session *session);
/* the same around any binding's call (the Fortran wrappers): begin before it, end after it */
int ml_session_init_begin(void);
void ml_session_init_end(int first, const MPI_Session *session, uint64_t t0); /* NULL: the call failed */
int ml_session_finalize_begin(void);
void ml_session_finalize_end(int ends);
void ml_mpi_finalize_leave(void);    /* PMPI_Finalize returned */
void ml_pcontrol(int level);
void ml_abort_dump(void);
/* the modes that are on in this process: exit paths (payload.c) */
void ml_modes_emergency(int reason);

/* how a rank's measurements end: ML_END_* (ml_rundir.h); ML_END_SNAPSHOT: still running, an
 * MPI_Pcontrol(3|4) snapshot */

/* ------------------------------------------------------------------------------- logging
 * One line on stderr, "mpilens: [rank R pid P] ...", R "?" before MPI_Init; written with one
 * write(2). Level 0: always (errors, and what the user must know); 1-3: MPILENS_VERBOSE at least
 * that. Not for signal handlers (it formats with vsnprintf): they use ml_log_safe. */
void ml_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Async-signal-safe: the line is the concatenation of the strings given (NULL ends the list);
 * ml_utoa formats a number into buf (at least 24 bytes) for it. */
void ml_log_safe(int level, const char *first, ...) __attribute__((sentinel));
const char *ml_utoa(char *buf, long long v);

/* The path of a run-directory file: an ML_PATH_* format (runtime/spec/rundir.yaml) and its numbers,
 * under the run directory; its folder is created (from the run directory's descriptor, no link
 * followed: ml_files.h). 0 when the folder exists. */
int ml_rundir_path(char *path, size_t n, const char *format, ...) __attribute__((format(printf, 3, 4)));

/* Make t's scratch arrays hold at least n entries. */
void ml_scratch_grow(ml_thread_t *t, size_t n);
static inline void ml_scratch_reserve(ml_thread_t *t, size_t n)
{
    if (ML_UNLIKELY(n > t->scratch_cap)) ml_scratch_grow(t, n);
}

/* ------------------------------------------------------------------------------- regions */
uint32_t ml_region_path(ml_thread_t *t, uint32_t parent, const char *name);
void ml_region_begin(ml_thread_t *t, const char *name);
void ml_region_end(ml_thread_t *t, const char *name);
const char *ml_region_name(uint32_t path);
uint32_t ml_region_parent(uint32_t path);
uint32_t ml_region_count(void);
int ml_regions_init(uint32_t max_paths);
void ml_categories_init(const char *disabled);

/* ------------------------------------------------------------------------------- user counters */
/* kinds: ML_COUNTER_SUM, ML_COUNTER_LAST (ml_rundir.h) */
uint32_t ml_counter_count(void);
const char *ml_counter_name(uint32_t id);
int ml_counter_kind(uint32_t id);

#endif
