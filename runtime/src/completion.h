/* Shared steps of the C and Fortran completion wrappers. */
#ifndef ML_COMPLETION_H
#define ML_COMPLETION_H

#include "ml.h"

static inline int ml_needs_status(const ml_req_t *e)
{
    return e->sent == ML_BYTES_FROM_STATUS || e->recv == ML_BYTES_FROM_STATUS || (e->flags & ML_REQ_CANCELLED);
}

/* Look up the entries of n requests into t->scratch_ent before a completion call clears the
 * handles. Returns the statuses array to pass to MPI: the caller's, or the thread's scratch
 * array when the caller ignores statuses but an entry needs one. */
static inline MPI_Status *ml_lookup_all(ml_thread_t *t, int n, const MPI_Request *reqs, MPI_Status *statuses)
{
    ml_scratch_reserve(t, (size_t)(n > 0 ? n : 1));
    int need = 0;
    for (int i = 0; i < n; i++) {
        ml_req_t *e = ml_req_find(reqs[i]);
        t->scratch_ent[i] = e;
        need |= e != NULL && ml_needs_status(e);
    }
    return need && statuses == MPI_STATUSES_IGNORE ? t->scratch_status : statuses;
}

/* Account request i of a completed array call (Waitall/Testall). */
static inline void ml_complete_index(ml_thread_t *t, int i, MPI_Status *st, int rc)
{
    ml_req_t *e = t->scratch_ent[i];
    if (e == NULL) return;
    const MPI_Status *s = st == MPI_STATUSES_IGNORE ? NULL : &st[i];
    if (rc == MPI_ERR_IN_STATUS && s != NULL && s->MPI_ERROR != MPI_SUCCESS) return;
    ml_req_complete(t, e, s);
}

/* MPI_Request_free of a tracked request: a started send will complete, so its bytes count; the
 * size of a freed receive is never known and is not counted. */
static inline void ml_req_freed(ml_thread_t *t, ml_req_t *e)
{
    if ((e->flags & ML_REQ_ACTIVE) && e->sent > 0) {
        ml_fstat_t *s = &t->blocks[(size_t)e->path * ML_NFUNC + e->fn];
        s->sent += e->sent;
        t->hist[e->fn * ML_NBINS + ml_size_bin(e->sent)].calls++;
        if (e->peer >= 0) {
            t->matrix[e->peer].messages++;
            t->matrix[e->peer].bytes += e->sent;
        }
    }
    ml_req_release(e);
}

#endif
