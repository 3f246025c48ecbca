/* Trace mode (runtime/src/trace.c): every MPI call, request completion, region and user counter
 * update, with its times, in trace/rank-NNNNNN.bin. Internal header, never installed.
 *
 * This header holds the mode's per-thread state and its functions. It depends on nothing of the
 * runtime but the names of its types, so that ml.h can embed ml_trace_thread_t in ml_thread_t: the
 * inlined events (trace_event.h, included by the generated wrappers) reach it without a pointer to
 * follow. The event encoding itself is in trace_event.h. */
#ifndef ML_TRACE_H
#define ML_TRACE_H

#include <mpi.h>
#include <stdint.h>

typedef struct ml_thread ml_thread_t;
typedef struct ml_call ml_call_t;
typedef struct ml_req ml_req_t;
struct ml_tbuf;
typedef struct ml_comm ml_comm_t;
typedef struct ml_recv_slot ml_recv_slot_t;

/* A thread's trace state (ml_thread_t.trace), given at its first MPI call (ml_trace_thread). */
typedef struct ml_trace_thread {
    int on;                  /* write trace records: read by every wrapper that may emit an event */
    uint32_t index;          /* thread number within the process, in order of first MPI use */
    uint64_t req_base;       /* (index + 1) << 40: the high bits of this thread's operation numbers */
    struct ml_tbuf *cur;     /* buffer being filled */
    struct ml_tbuf *bufs[8];
    uint32_t fillings;       /* buffers this thread has begun to fill */
    /* bytes of the operation that the lean path's current call started and the MPI completed
     * within it: its call event carries them (a call_done event, ML_SEQ_DONE) */
    int64_t done_sent, done_recv;
    /* receives' call events wait for their completions (below MPI_THREAD_SERIALIZED, where the
     * thread that starts a receive completes it; ml_trace_defer) */
    int defer;
    /* the receive slot of the operation the lean path's current call started, beside which its
     * call event is to wait (ML_SEQ_LATER) */
    ml_recv_slot_t *later;
} ml_trace_thread_t;

/* The bit of an operation number that the lean path's ml_lean_post sets when the MPI
 * completed the operation within the call that started it: the call event is then written as a
 * call_done event (one event for the call and the completion). Never written into the trace. */
#define ML_SEQ_DONE (1ull << 63)
/* The bit of an operation number that ml_lean_post sets for a receive whose call event is to wait
 * beside its slot (t->trace.later) and be written with its completion, as one late_call event;
 * in the slot's seq, the mark that it waits (ml_trace_defer). Never written into the trace. */
#define ML_SEQ_LATER (1ull << 62)

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

#endif
