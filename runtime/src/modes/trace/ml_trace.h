/* Trace mode (runtime/src/modes/trace/trace.c): every MPI call, request completion, region and user counter
 * update, with its times, in trace/rank-NNNNNN.bin. Internal header, never installed.
 *
 * This header holds the mode's functions; its per-thread state, which ml.h embeds in ml_thread_t,
 * is in trace_thread.h. The event encoding itself is in trace_event.h. */
#ifndef ML_TRACE_H
#define ML_TRACE_H

#include <mpi.h>
#include <stdint.h>

#include "trace_thread.h"

typedef struct ml_thread ml_thread_t;
typedef struct ml_call ml_call_t;
typedef struct ml_req ml_req_t;
typedef struct ml_comm ml_comm_t;

/* The trace's gate (MPILENS_TRACE_WINDOW, _PCONTROL, _EXCLUDE; trace_filter.c): when
 * ml_trace_gated is set, an event is written only when its start t0 is in the window (t0 - from <
 * span, in ticks), tracing is not paused by MPI_Pcontrol(0), and a call's or completion's function
 * is not left out (ml_trace_skip, one byte per function). Unset, the gate costs one test. */
extern int ml_trace_gated;
extern int ml_trace_paused;
extern uint64_t ml_trace_from, ml_trace_span;
extern unsigned char ml_trace_skip[];
/* MPI_Pcontrol(level), 0 or 1 (the mode's pcontrol hook): with MPILENS_TRACE_PCONTROL, 1 opens the
 * trace and 0 closes it, and the call is written either way (the reader matches messages within
 * each phase); returns 1 then, 0 without the setting */
int ml_trace_pcontrol(int level);

/* the mode's entry in the table of modes (modes.c) */
int ml_trace_init(void);                /* MPI_Init: open the rank's file, start the writer; says why not */
void ml_trace_thread(ml_thread_t *t);   /* a thread's first MPI call: its buffers */
void ml_trace_finish(void);             /* MPI_Finalize: clock offsets (collective), last blocks */
void ml_trace_emergency(int reason);    /* the process ends without MPI_Finalize: what is in memory */

/* events not inlined in the wrappers (trace_event.h has the inlined ones) */
void ml_trace_call(ml_thread_t *t, const ml_call_t *c);
void ml_trace_plain(ml_thread_t *t, int fn, uint64_t t0, uint64_t t1);
void ml_trace_plain_at(ml_thread_t *t, int fn, uint64_t t0, uint64_t t1, uint32_t site);
void ml_trace_done(ml_thread_t *t, const ml_req_t *e, const MPI_Status *st, int64_t sent, int64_t recv);
/* the call event that waits in receive slot r, written alone (a late_call event without its
 * completion): the general path takes the receive over, or it failed */
void ml_trace_late_alone(ml_thread_t *t, const ml_recv_slot_t *r);
void ml_trace_region(ml_thread_t *t, int begin, uint32_t path);
void ml_trace_counter(ml_thread_t *t, uint32_t id, double value);
/* A communicator's members, for the trailer's list (at MPI_Comm_free, and for the living ones at
 * the end); the signature of ml_comm_each's callback. */
void ml_trace_comm_seen(MPI_Comm comm, const ml_comm_t *c, void *unused);
/* the table's event hooks (ml_modes.h; ml_trace_late_alone is its recv_taken) */
void ml_trace_on_region(ml_thread_t *t, int begin, uint32_t path, const char *name);
void ml_trace_on_counter(ml_thread_t *t, uint32_t id, double value);
void ml_trace_on_comm_freed(MPI_Comm comm, const ml_comm_t *c);
void ml_trace_on_req_done(ml_thread_t *t, const ml_req_t *e, const MPI_Status *st, int64_t sent, int64_t recv);

#endif
