/* Shared steps of the completion wrappers of every binding (C, mpif.h / use mpi, mpi_f08): the
 * Wait/Test families, Start/Startall, Request_free and Cancel. handwritten.c (C) and fortran.c
 * (both Fortran bindings) are thin shells around these, so the modes that watch calls (memory,
 * papi, counters, trace) see a Fortran completion exactly as they see a C one. */
#ifndef ML_COMPLETION_H
#define ML_COMPLETION_H

#include <string.h>

#include "ml.h"
#include "ml_trace.h"

/* Claim the entries of n requests into t->scratch_claim before the completion call. Returns the
 * statuses array to pass to MPI: the caller's, or the thread's scratch array when the caller
 * ignores statuses but an entry needs one. */
static inline MPI_Status *ml_claim_all(ml_thread_t *t, int n, const MPI_Request *reqs, MPI_Status *statuses)
{
    ml_scratch_reserve(t, (size_t)(n > 0 ? n : 1));
    int need = 0;
    for (int i = 0; i < n; i++) {
        ml_req_claim(reqs[i], &t->scratch_claim[i]);
        need |= ml_claim_needs_status(&t->scratch_claim[i]);
    }
    return need && statuses == MPI_STATUSES_IGNORE ? t->scratch_status : statuses;
}

/* Waitany, Testany, Testsome, Testall: usually few of the n requests complete (a polling loop
 * calls them again and again over the same array). Rather than claim n entries before the call
 * and put back n - k after it, the wrapper copies the n handles (MPI sets completed ones to
 * MPI_REQUEST_NULL) and claims after the call the entries of the k that completed: a memcpy plus
 * O(k) table work. Under MPI_THREAD_MULTIPLE another thread may get a freed handle's value for a
 * new operation before the entry is claimed, so the entries are claimed before the call there
 * (ml_claim_all). Returns whether the handles were copied (claim with ml_claim_completed). */
static inline int ml_remember_handles(ml_thread_t *t, int n, const MPI_Request *reqs)
{
    if (ML_UNLIKELY(ml_g.multiple)) {
        ml_claim_all(t, n, reqs, MPI_STATUSES_IGNORE);
        return 0;
    }
    ml_scratch_reserve(t, (size_t)(n > 0 ? n : 1));
    memcpy(t->scratch_req, reqs, (size_t)(n > 0 ? n : 0) * sizeof *reqs);
    return 1;
}

/* After the call: claim the entry of request i, which completed (copied handles only). */
static inline void ml_claim_completed(ml_thread_t *t, int copied, int i)
{
    if (copied) ml_req_claim(t->scratch_req[i], &t->scratch_claim[i]);
}

/* After the call: put back what ml_remember_handles claimed and the call did not complete. */
static inline void ml_release_rest(ml_thread_t *t, int copied, int n)
{
    if (!copied)
        for (int i = 0; i < n; i++) ml_req_unclaim(&t->scratch_claim[i]);
}

/* After an array completion call: put back every entry the call did not complete. */
static inline void ml_unclaim_rest(ml_thread_t *t, int n)
{
    for (int i = 0; i < n; i++) ml_req_unclaim(&t->scratch_claim[i]);
}

/* Request i of a Waitall/Testall that returned rc: complete, still pending, or failed. */
ML_HOT void ml_settle(ml_thread_t *t, int i, const MPI_Status *s, int rc, int measuring)
{
    ml_claim_t *c = &t->scratch_claim[i];
    if (rc == MPI_ERR_IN_STATUS && s != NULL && s->MPI_ERROR != MPI_SUCCESS) {
        if (s->MPI_ERROR == MPI_ERR_PENDING)
            ml_req_unclaim(c); /* not completed */
        else
            ml_req_done(t, c, s, 0); /* completed in error: nothing moved */
        return;
    }
    ml_req_done(t, c, s, measuring);
}

/* Start of a completion call, after its requests are claimed: the observers of call entries
 * (memory, papi: what came before is the application's), then the clock. */
static inline uint64_t ml_completion_start(ml_thread_t *t, int fn, int measuring)
{
    if (measuring && ML_UNLIKELY(t->observe & ML_OBS_AT_ENTER)) ml_observe_enter(t, fn);
    return ml_start(t, fn);
}

/* MPI_Start/MPI_Startall: request r started (rc: the call's result). Shows the start to the
 * observers: once per call for MPI_Start (one_record), once per started operation for Startall. */
static inline void ml_started(ml_thread_t *t, int fn, uint64_t t0, uint64_t t1, MPI_Request r, int one_record)
{
    ml_req_t *e = ml_req_find(r);
    const uint64_t seq = e != NULL ? ml_req_start(t, e) : 0;
    if (ML_UNLIKELY(t->observe & ML_OBS_AT_CALL) && (one_record || seq)) {
        const ml_call_t c = {.fn = fn, .t0 = t0, .t1 = t1, .comm = MPI_COMM_NULL, .dst = -1, .src = -1, .req = seq};
        ml_observe_call(t, &c);
    }
}

/* MPI_Cancel, before the call (measuring or not): from now on completions consult
 * MPI_Test_cancelled. Nothing is written into the request's entry, which another thread may be
 * completing at this moment. */
static inline void ml_cancel_noted(void)
{
    if (!__atomic_load_n(&ml_g.cancels, __ATOMIC_RELAXED)) __atomic_store_n(&ml_g.cancels, 1, __ATOMIC_SEQ_CST);
}

/* End of a completion wrapper: timing when measuring. */
static inline void ml_finish(ml_thread_t *t, int fn, uint64_t t0, uint64_t t1, int measuring)
{
    if (measuring) {
        if (ML_UNLIKELY(t->trace.on)) ml_trace_plain(t, fn, t0, t1);
        ml_leave(t, fn, t0, t1);
    } else {
        t->depth = 0;
    }
}

#endif
