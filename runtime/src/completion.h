/* Shared steps of the C and Fortran completion wrappers (Wait/Test families). */
#ifndef ML_COMPLETION_H
#define ML_COMPLETION_H

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

/* After an array completion call: put back every entry the call did not complete. */
static inline void ml_unclaim_rest(ml_thread_t *t, int n)
{
    for (int i = 0; i < n; i++) ml_req_unclaim(&t->scratch_claim[i]);
}

/* Request i of a Waitall/Testall that returned rc: complete, still pending, or failed. */
static inline void ml_settle(ml_thread_t *t, int i, const MPI_Status *s, int rc, int measuring)
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
