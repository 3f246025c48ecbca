/* Trace mode's per-thread state (ml_thread_t.trace) and the marks it puts on operation numbers:
 * the one part of a mode that the core embeds (core/ml.h), because the trace events inlined into
 * the wrappers (trace_event.h) reach it without a pointer to follow, and the request tables keep
 * operation numbers beside their entries. Types only: the mode's functions are in ml_trace.h,
 * which no file of core/ includes. Internal header, never installed. */
#ifndef ML_TRACE_THREAD_H
#define ML_TRACE_THREAD_H

#include <stdint.h>

struct ml_tbuf;
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

#endif
