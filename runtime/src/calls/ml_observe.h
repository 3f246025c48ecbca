/* The per-call dispatch to the modes: what the generated wrappers call besides the core, by the
 * meaning of the function (runtime/spec/semantics.yaml), never by a mode's name: the generator and
 * the specs name no mode, and this header is the one place that says which mode sees what.
 * Internal header, never installed.
 *
 * The observers' hook after a successful call is inlined by the wrappers of the frequent, short
 * functions and called through ml_observe_call (observe.c) by the others. A mode that sees calls
 * adds its line to ml_observe_call_inline here (and to observe.c's ml_observe_enter/leave for the
 * other two hooks), behind its ML_OBS_* bit or its own flag: one predictable branch when it is off.
 * (The lean path's traced copies, calls/lean.h, write trace events inline: trace_event.h.) */
#ifndef ML_OBSERVE_H
#define ML_OBSERVE_H

#include "ml.h"
#include "ml_counters.h"
#include "ml_intervals.h"
#include "ml_io.h"
#include "ml_mpit.h"
#include "trace_event.h"

/* ---- by the function's meaning (semantics.yaml's keys), around the call */
/* posts_receive: a receive is about to be posted (counters mode compares it with the messages
 * that arrived unexpected) */
ML_HOT int ml_observe_receives(void) { return (int)(ml_spc_on & ML_SPC_UNEXPECTED); }
ML_HOT void ml_observe_receive(ml_thread_t *t, int source, int tag, MPI_Comm comm)
{
    ml_spc_probe(t, source, tag, comm);
}
/* tool_pvars: the application's MPI_T pvar calls see the tool's own pvars (mpilens_*) beside the
 * MPI's: counters mode's exposure (modes/counters/mpit_expose.c) answers them */
#define ml_observe_T_pvar_get_num ml_exposed_T_pvar_get_num
#define ml_observe_T_pvar_get_info ml_exposed_T_pvar_get_info
#define ml_observe_T_pvar_get_index ml_exposed_T_pvar_get_index
#define ml_observe_T_pvar_handle_alloc ml_exposed_T_pvar_handle_alloc
#define ml_observe_T_pvar_handle_free ml_exposed_T_pvar_handle_free
#define ml_observe_T_pvar_start ml_exposed_T_pvar_start
#define ml_observe_T_pvar_stop ml_exposed_T_pvar_stop
#define ml_observe_T_pvar_read ml_exposed_T_pvar_read
#define ml_observe_T_pvar_readreset ml_exposed_T_pvar_readreset
#define ml_observe_T_pvar_reset ml_exposed_T_pvar_reset
#define ml_observe_T_pvar_write ml_exposed_T_pvar_write
/* names: comm was named (MPI_T's cvars set per communicator name) */
ML_HOT void ml_observe_comm_named(MPI_Comm comm)
{
    if (ML_UNLIKELY(ml_g.mpit_comms)) ml_mpit_comm_named(comm);
}
/* sync: a synchronizing collective from t0 to t1 (compute intervals) */
ML_HOT void ml_observe_sync(MPI_Comm comm, uint64_t t0, uint64_t t1)
{
    if (ML_UNLIKELY(ml_g.intervals)) ml_interval(comm, t0, t1);
}
/* class io: an MPI_File_ call (I/O per file): before it (kind: ML_IO_* flags), after a successful
 * one, and a file opened */
typedef ml_io_pre_t ml_observe_file_t;
ML_HOT void ml_observe_file_before(ml_observe_file_t *p, uint32_t kind, MPI_File fh, MPI_Offset offset)
{
    *p = (ml_observe_file_t){.file = -1};
    if (ML_UNLIKELY(ml_g.io)) ml_io_before(p, kind, fh, offset);
}
ML_HOT void ml_observe_file_after(ml_thread_t *t, const ml_observe_file_t *p, int fn, uint64_t t0, uint64_t t1,
                                  int64_t bytes)
{
    if (ML_UNLIKELY(p->file >= 0)) ml_io_after(t, p, fn, t0, t1, bytes);
}
ML_HOT void ml_observe_file_opened(ml_thread_t *t, MPI_Comm comm, const char *name, size_t len, int amode, MPI_File fh,
                                   uint64_t t0, uint64_t t1)
{
    if (ML_UNLIKELY(ml_g.io)) ml_io_opened(t, comm, name, len, amode, fh, t0, t1);
}

/* The observers of a successful call (ML_OBS_AT_CALL). */
ML_HOT void ml_observe_call_inline(ml_thread_t *t, const ml_call_t *c)
{
    if (t->trace.on) ml_trace_call_inline(t, c);
    if (t->observe & ML_OBS_COUNTERS) ml_spc_call(t, c);
}

#endif
