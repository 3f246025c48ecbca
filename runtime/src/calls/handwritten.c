/* The C wrappers whose semantics need code rather than an expression of semantics.yaml:
 * process lifetime (MPI_Init*, MPI_Finalize, MPI_Abort, MPI_Pcontrol) and request completion
 * (Wait/Test families, Start, Request_free, Cancel), where the requests must be looked up before
 * the call clears their handles. */
#include <stdarg.h>
#include <string.h>

#include "completion.h"
#include "lean.h"
#include "ml.h"
#include "ml_memory.h"
#include "ml_trace.h"

/* ------------------------------------------------------------------------------- lifetime */
ML_EXPORT int MPI_Init(int *argc, char ***argv)
{
    ml_mpi_init_enter(ML_FN_MPI_Init);
    const uint64_t t0 = ml_now();
    ml_before_mpi_init();
    const int rc = ml_next_MPI_Init(argc, argv);
    if (rc == MPI_SUCCESS) {
        int provided = MPI_THREAD_SINGLE;
        PMPI_Query_thread(&provided);
        ml_init_after_mpi_init(provided, t0);
    }
    ml_mpi_init_leave(ML_FN_MPI_Init);
    return rc;
}

ML_EXPORT int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    ml_mpi_init_enter(ML_FN_MPI_Init_thread);
    const uint64_t t0 = ml_now();
    ml_before_mpi_init();
    const int rc = ml_next_MPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS) ml_init_after_mpi_init(*provided, t0);
    ml_mpi_init_leave(ML_FN_MPI_Init_thread);
    return rc;
}

ML_EXPORT int MPI_Finalize(void)
{
    ml_mpi_finalize_enter();
    ml_finalize_before_mpi_finalize();
    const int rc = ml_next_MPI_Finalize();
    ml_mpi_finalize_leave();
    return rc;
}

ML_EXPORT int MPI_Abort(MPI_Comm comm, int errorcode)
{
    ml_thread_t *const t = ml_enter();
    if (t != NULL) {
        ML_CALLSITE(t);
        const uint64_t t0 = ml_now();
        if (ML_UNLIKELY(t->trace.on)) ml_trace_plain(t, ML_FN_MPI_Abort, t0, t0);
        ml_leave(t, ML_FN_MPI_Abort, t0, t0); /* counted; it does not return */
    }
    ml_abort_dump();
    return t != NULL ? ml_next_MPI_Abort(comm, errorcode) : ML_PASS(Abort)(comm, errorcode);
}

ML_EXPORT int MPI_Pcontrol(const int level, ...)
{
    ml_memory_mark(ML_MEM_MARK_PCONTROL, NULL, level);
    ml_pcontrol(level);
    return ML_PASS(Pcontrol)(level);
}

/* ------------------------------------------------------------------------------- completion */
/* Erroneous arguments the wrappers would dereference (a NULL request pointer, a NULL array of
 * requests for a positive count, a negative count) go straight to the MPI unmeasured: it answers
 * with an error code (or its error handler), which the application gets as it would without the
 * tool. One predictable branch per call. */
#define ML_BAD_ARRAY(count, reqs) ML_UNLIKELY((count) < 0 || ((count) > 0 && (reqs) == NULL))

/* MPI_Wait, MPI_Test and MPI_Waitall take the lean path (lean.h) when every request is null,
 * shared (accounted when it started) or an entry of the lean path in this thread's own table, and
 * the process has cancelled nothing; otherwise their general path. */
static inline int lean_cancels(void) { return __atomic_load_n(&ml_g.cancels, __ATOMIC_RELAXED) != 0; }

/* The end of a lean completion call, after its requests' completion events: counted at its site,
 * and its own event (trace mode), as the general path's ml_finish does. traced, sampled: as in the
 * generated wrappers, constants of each copy of the lean path. */
ML_HOT void lean_completion_call(ml_thread_t *t, int fn, uintptr_t ra, uint64_t t0, uint64_t t1, const int traced,
                                 const int sampled)
{
    ml_site_t *const site = ml_lean_site(t, ra, fn);
    ml_lean_count(&t->cur[fn], site, t0, t1, sampled);
    if (traced) ml_trace_plain_at(t, fn, t0, t1, site->id);
    ml_lean_leave(t, t1, sampled);
}

/* MPI_Wait and MPI_Test (test) on the lean path, its entry looked up before the call (slot e,
 * need: its status is needed). */
ML_HOT int lean_wait(ml_thread_t *l, MPI_Request *request, int *flag, MPI_Status *status, uint32_t e, int need,
                     uintptr_t ra, const int test, const int traced, const int sampled)
{
    const int fn = test ? ML_FN_MPI_Test : ML_FN_MPI_Wait;
    MPI_Status local;
    if (need && status == MPI_STATUS_IGNORE) status = &local;
    const uint64_t t0 = ml_lean_start(l, fn, sampled);
    const int rc = test ? ml_next_MPI_Test(request, flag, status) : ml_next_MPI_Wait(request, status);
    const uint64_t t1 = ml_lean_stop(t0, sampled);
    ml_counting(l);
    if (traced) l->done_at = t1;
    if (rc == MPI_SUCCESS && (!test || *flag) && e != ML_REQ_NONE) {
        if (e & ML_RECV_SLOT)
            ml_lean_recv_settle(l, e & ~ML_RECV_SLOT, status, traced);
        else
            ml_lean_settle(l, e, status != MPI_STATUS_IGNORE ? status : NULL, traced);
    }
    lean_completion_call(l, fn, ra, t0, t1, traced, sampled);
    return rc;
}

/* MPI_Wait (flag NULL) or MPI_Test on the lean path of thread l, in the copy of traced and sampled:
 * 1 and its result in *rc, else 0 (the thread leaves; the caller takes its general path). */
ML_HOT int lean_wait_claimed(ml_thread_t *l, MPI_Request *request, int *flag, MPI_Status *status, uintptr_t ra,
                             int *rc, const int traced, const int sampled)
{
    uint32_t e;
    int need = 0;
    if (ML_UNLIKELY(lean_cancels()) || !ml_lean_claim(l, *request, &e, &need)) {
        ml_lean_leave(l, 0, 1);
        return 0;
    }
    *rc = lean_wait(l, request, flag, status, e, need, ra, flag != NULL, traced, sampled);
    return 1;
}

/* MPI_Wait (flag NULL) or MPI_Test when it can take the lean path: 1 and its result in *rc, else 0
 * (the caller takes its general path). The copy is chosen right after the gate, which the compiler
 * can then fold into the gate's own comparisons. */
ML_HOT int lean_try_wait(MPI_Request *request, int *flag, MPI_Status *status, uintptr_t ra, int *rc)
{
    uint32_t v;
    ml_thread_t *const l = ml_lean_enter(&v);
    if (ML_UNLIKELY(l == NULL)) return 0;
    return ML_LEAN_COPY(v, lean_wait_claimed, l, request, flag, status, ra, rc);
}

ML_EXPORT int MPI_Wait(MPI_Request *request, MPI_Status *status)
{
    if (ML_UNLIKELY(request == NULL)) return ML_PASS(Wait)(request, status);
    int lean_rc;
    if (ML_LIKELY(lean_try_wait(request, NULL, status, ML_LEAN_RA(), &lean_rc))) return lean_rc;
    int measuring;
    ml_thread_t *const t = ml_enter_completion(&measuring);
    if (ML_UNLIKELY(t == NULL)) return ML_PASS(Wait)(request, status);
    ML_CALLSITE(t);
    ml_claim_t c;
    ml_req_claim(*request, &c);
    MPI_Status local;
    if (ml_claim_needs_status(&c) && status == MPI_STATUS_IGNORE) status = &local;
    const uint64_t t0 = ml_completion_start(t, ML_FN_MPI_Wait, measuring);
    const int rc = ml_next_MPI_Wait(request, status);
    const uint64_t t1 = t->done_at = ml_stop(t0);
    ml_counting(t);
    if (rc == MPI_SUCCESS)
        ml_req_done(t, &c, status == MPI_STATUS_IGNORE ? NULL : status, measuring);
    else
        ml_req_unclaim(&c);
    ml_finish(t, ML_FN_MPI_Wait, t0, t1, measuring);
    return rc;
}

ML_EXPORT int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
    if (ML_UNLIKELY(request == NULL || flag == NULL)) return ML_PASS(Test)(request, flag, status);
    int lean_rc;
    if (ML_LIKELY(lean_try_wait(request, flag, status, ML_LEAN_RA(), &lean_rc))) return lean_rc;
    int measuring;
    ml_thread_t *const t = ml_enter_completion(&measuring);
    if (ML_UNLIKELY(t == NULL)) return ML_PASS(Test)(request, flag, status);
    ML_CALLSITE(t);
    ml_claim_t c;
    ml_req_claim(*request, &c);
    MPI_Status local;
    if (ml_claim_needs_status(&c) && status == MPI_STATUS_IGNORE) status = &local;
    const uint64_t t0 = ml_completion_start(t, ML_FN_MPI_Test, measuring);
    const int rc = ml_next_MPI_Test(request, flag, status);
    const uint64_t t1 = t->done_at = ml_stop(t0);
    ml_counting(t);
    if (rc == MPI_SUCCESS && *flag)
        ml_req_done(t, &c, status == MPI_STATUS_IGNORE ? NULL : status, measuring);
    else
        ml_req_unclaim(&c);
    ml_finish(t, ML_FN_MPI_Test, t0, t1, measuring);
    return rc;
}

/* The helpers of the array completion calls are inlined into each exported wrapper: their
 * ML_CALLSITE must read the application's return address, not the wrapper's (which would send
 * every call to the stack walk of callsite.c). */

/* Waitall and Testall: every request completes together (Testall: if flag). */
ML_HOT int all(int (*wait)(int, MPI_Request *, MPI_Status *), int (*test)(int, MPI_Request *, int *, MPI_Status *),
               int fn, int count, MPI_Request reqs[], int *flag, MPI_Status statuses[])
{
    int measuring;
    ml_thread_t *const t = ml_enter_completion(&measuring);
    if (ML_UNLIKELY(t == NULL))
        return wait ? ML_PASS(Waitall)(count, reqs, statuses) : ML_PASS(Testall)(count, reqs, flag, statuses);
    ML_CALLSITE(t);
    /* Waitall completes every request: claimed before the call. Testall, polled, mostly completes
     * none: the handles are copied and claimed only if it completes them. */
    int copied = 0;
    MPI_Status *st;
    if (wait) {
        st = ml_claim_all(t, count, reqs, statuses);
    } else {
        copied = ml_remember_handles(t, count, reqs);
        st = statuses == MPI_STATUSES_IGNORE && count > 0 ? t->scratch_status : statuses;
    }
    const uint64_t t0 = ml_completion_start(t, fn, measuring);
    const int rc = wait ? wait(count, reqs, st) : test(count, reqs, flag, st);
    const uint64_t t1 = t->done_at = ml_stop(t0);
    ml_counting(t);
    if ((rc == MPI_SUCCESS || rc == MPI_ERR_IN_STATUS) && (wait || *flag))
        for (int i = 0; i < count; i++) {
            ml_claim_completed(t, copied, i);
            ml_settle(t, i, st == MPI_STATUSES_IGNORE ? NULL : &st[i], rc, measuring);
        }
    if (!(wait && rc == MPI_SUCCESS)) ml_release_rest(t, copied, count); /* a successful Waitall completed all */
    ml_finish(t, fn, t0, t1, measuring);
    return rc;
}

/* The lean MPI_Waitall copies the handles (MPI sets them to MPI_REQUEST_NULL) and looks the entries
 * up after the call: below MPI_THREAD_MULTIPLE no other thread can be given a freed handle's value
 * meanwhile. It asks MPI for statuses (when the caller does not) whenever an entry may need one:
 * this thread has entries, or another thread exists whose entries it may complete. */
ML_HOT int lean_waitall(ml_thread_t *l, int count, MPI_Request reqs[], MPI_Status statuses[], uintptr_t ra,
                        const int traced, const int sampled)
{
    const size_t n = (size_t)(count > 0 ? count : 0);
    ml_scratch_reserve(l, n > 0 ? n : 1);
    MPI_Request *const handles = l->scratch_req;
    memcpy(handles, reqs, n * sizeof *handles);
    MPI_Status *st = statuses;
    if (st == MPI_STATUSES_IGNORE && (l->rq_live != 0 || l->rr_live != 0 || l->next != NULL || ml_g.threads != l))
        st = l->scratch_status;
    const uint64_t t0 = ml_lean_start(l, ML_FN_MPI_Waitall, sampled);
    /* MPICH's MPI_STATUSES_IGNORE is (MPI_Status *)1, which GCC takes for an array of size 0 on the
     * path where the caller passed it */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overflow"
    const int rc = ml_next_MPI_Waitall(count, reqs, st);
#pragma GCC diagnostic pop
    const uint64_t t1 = ml_lean_stop(t0, sampled);
    ml_counting(l);
    if (traced) l->done_at = t1;
    if (ML_LIKELY(rc == MPI_SUCCESS)) {
        for (size_t i = 0; i < n; i++) {
            const MPI_Request r = handles[i];
            if (r == MPI_REQUEST_NULL || ml_req_shared_handle(r)) continue; /* accounted at its start */
            const MPI_Status *const s = st != MPI_STATUSES_IGNORE ? &st[i] : NULL;
            const uint32_t rs = ml_recv_index(l, r);
            if (rs != ML_REQ_NONE) {
                ml_lean_recv_settle(l, rs, s, traced);
                continue;
            }
            const uint32_t e = ml_req_index(l, r);
            if (ML_LIKELY(e != ML_REQ_NONE) && ML_LIKELY(ml_lean_entry(&l->rq[e])))
                ml_lean_settle(l, e, s, traced);
            else
                ml_req_completed_slow(l, r, s, MPI_SUCCESS);
        }
    } else if (rc == MPI_ERR_IN_STATUS && st != MPI_STATUSES_IGNORE) {
        /* a request in error completed and moved nothing; MPI_ERR_PENDING: not completed. Any
         * other error: which requests completed is not known (the general path leaves their
         * entries too). */
        for (size_t i = 0; i < n; i++) {
            const MPI_Request r = handles[i];
            const int err = st[i].MPI_ERROR;
            if (r == MPI_REQUEST_NULL || ml_req_shared_handle(r) || err == MPI_ERR_PENDING) continue;
            const uint32_t rs = ml_recv_index(l, r);
            if (rs != ML_REQ_NONE) {
                ml_lean_recv_settle(l, rs, err == MPI_SUCCESS ? &st[i] : NULL, traced); /* in error: nothing moved */
                continue;
            }
            const uint32_t e = ml_req_index(l, r);
            if (e == ML_REQ_NONE || !ml_lean_entry(&l->rq[e]))
                ml_req_completed_slow(l, r, &st[i], err);
            else if (err == MPI_SUCCESS)
                ml_lean_settle(l, e, &st[i], traced);
            else
                ml_req_remove_at(l, e);
        }
    }
    lean_completion_call(l, ML_FN_MPI_Waitall, ra, t0, t1, traced, sampled);
    return rc;
}

ML_EXPORT int MPI_Waitall(int count, MPI_Request array_of_requests[], MPI_Status array_of_statuses[])
{
    if (ML_BAD_ARRAY(count, array_of_requests)) return ML_PASS(Waitall)(count, array_of_requests, array_of_statuses);
    uint32_t v;
    ml_thread_t *const l = ml_lean_enter(&v);
    if (ML_LIKELY(l != NULL)) {
        if (ML_LIKELY(!lean_cancels()))
            return ML_LEAN_COPY(v, lean_waitall, l, count, array_of_requests, array_of_statuses, ML_LEAN_RA());
        ml_lean_leave(l, 0, 1);
    }
    return all(ml_next_MPI_Waitall, NULL, ML_FN_MPI_Waitall, count, array_of_requests, NULL, array_of_statuses);
}

ML_EXPORT int MPI_Testall(int count, MPI_Request array_of_requests[], int *flag, MPI_Status array_of_statuses[])
{
    if (ML_BAD_ARRAY(count, array_of_requests) || flag == NULL)
        return ML_PASS(Testall)(count, array_of_requests, flag, array_of_statuses);
    return all(NULL, ml_next_MPI_Testall, ML_FN_MPI_Testall, count, array_of_requests, flag, array_of_statuses);
}

/* Waitany and Testany: at most one request completes, the one at *index. */
ML_HOT int any(int (*wait)(int, MPI_Request *, int *, MPI_Status *),
               int (*test)(int, MPI_Request *, int *, int *, MPI_Status *), int fn, int count, MPI_Request reqs[],
               int *index, int *flag, MPI_Status *status)
{
    int measuring;
    ml_thread_t *const t = ml_enter_completion(&measuring);
    if (ML_UNLIKELY(t == NULL))
        return wait ? ML_PASS(Waitany)(count, reqs, index, status) : ML_PASS(Testany)(count, reqs, index, flag, status);
    ML_CALLSITE(t);
    MPI_Status local;
    if (status == MPI_STATUS_IGNORE) status = &local;
    const int copied = ml_remember_handles(t, count, reqs);
    const uint64_t t0 = ml_completion_start(t, fn, measuring);
    const int rc = wait ? wait(count, reqs, index, status) : test(count, reqs, index, flag, status);
    const uint64_t t1 = t->done_at = ml_stop(t0);
    ml_counting(t);
    if (rc == MPI_SUCCESS && (wait || *flag) && *index != MPI_UNDEFINED && *index >= 0 && *index < count) {
        ml_claim_completed(t, copied, *index);
        ml_req_done(t, &t->scratch_claim[*index], status, measuring);
    }
    ml_release_rest(t, copied, count);
    ml_finish(t, fn, t0, t1, measuring);
    return rc;
}

ML_EXPORT int MPI_Waitany(int count, MPI_Request array_of_requests[], int *index, MPI_Status *status)
{
    if (ML_BAD_ARRAY(count, array_of_requests) || index == NULL)
        return ML_PASS(Waitany)(count, array_of_requests, index, status);
    return any(ml_next_MPI_Waitany, NULL, ML_FN_MPI_Waitany, count, array_of_requests, index, NULL, status);
}

ML_EXPORT int MPI_Testany(int count, MPI_Request array_of_requests[], int *index, int *flag, MPI_Status *status)
{
    if (ML_BAD_ARRAY(count, array_of_requests) || index == NULL || flag == NULL)
        return ML_PASS(Testany)(count, array_of_requests, index, flag, status);
    return any(NULL, ml_next_MPI_Testany, ML_FN_MPI_Testany, count, array_of_requests, index, flag, status);
}

/* Waitsome and Testsome: the requests listed in indices completed; their statuses are packed. */
ML_HOT int some(int (*call)(int, MPI_Request *, int *, int *, MPI_Status *), int fn, int incount,
                MPI_Request reqs[], int *outcount, int indices[], MPI_Status statuses[])
{
    int measuring;
    ml_thread_t *const t = ml_enter_completion(&measuring);
    if (ML_UNLIKELY(t == NULL))
        return (fn == ML_FN_MPI_Waitsome ? ML_PASS(Waitsome) : ML_PASS(Testsome))(incount, reqs, outcount, indices, statuses);
    ML_CALLSITE(t);
    const int copied = ml_remember_handles(t, incount, reqs);
    MPI_Status *st = statuses == MPI_STATUSES_IGNORE && incount > 0 ? t->scratch_status : statuses;
    const uint64_t t0 = ml_completion_start(t, fn, measuring);
    const int rc = call(incount, reqs, outcount, indices, st);
    const uint64_t t1 = t->done_at = ml_stop(t0);
    ml_counting(t);
    if ((rc == MPI_SUCCESS || rc == MPI_ERR_IN_STATUS) && *outcount != MPI_UNDEFINED)
        for (int j = 0; j < *outcount; j++)
            if (indices[j] >= 0 && indices[j] < incount) {
                ml_claim_completed(t, copied, indices[j]);
                ml_settle(t, indices[j], st == MPI_STATUSES_IGNORE ? NULL : &st[j], rc, measuring);
            }
    ml_release_rest(t, copied, incount);
    ml_finish(t, fn, t0, t1, measuring);
    return rc;
}

ML_EXPORT int MPI_Waitsome(int incount, MPI_Request array_of_requests[], int *outcount, int array_of_indices[],
                           MPI_Status array_of_statuses[])
{
    if (ML_BAD_ARRAY(incount, array_of_requests) || outcount == NULL || (incount > 0 && array_of_indices == NULL))
        return ML_PASS(Waitsome)(incount, array_of_requests, outcount, array_of_indices, array_of_statuses);
    return some(ml_next_MPI_Waitsome, ML_FN_MPI_Waitsome, incount, array_of_requests, outcount, array_of_indices,
                array_of_statuses);
}

ML_EXPORT int MPI_Testsome(int incount, MPI_Request array_of_requests[], int *outcount, int array_of_indices[],
                           MPI_Status array_of_statuses[])
{
    if (ML_BAD_ARRAY(incount, array_of_requests) || outcount == NULL || (incount > 0 && array_of_indices == NULL))
        return ML_PASS(Testsome)(incount, array_of_requests, outcount, array_of_indices, array_of_statuses);
    return some(ml_next_MPI_Testsome, ML_FN_MPI_Testsome, incount, array_of_requests, outcount, array_of_indices,
                array_of_statuses);
}

ML_EXPORT int MPI_Start(MPI_Request *request)
{
    ml_thread_t *const t = request != NULL ? ml_enter() : NULL;
    if (ML_UNLIKELY(t == NULL)) return ML_PASS(Start)(request);
    ML_CALLSITE(t);
    const uint64_t t0 = ml_completion_start(t, ML_FN_MPI_Start, 1);
    const int rc = ml_next_MPI_Start(request);
    const uint64_t t1 = t->done_at = ml_stop(t0);
    ml_counting(t);
    if (rc == MPI_SUCCESS) ml_started(t, ML_FN_MPI_Start, t0, t1, *request, 1);
    ml_leave(t, ML_FN_MPI_Start, t0, t1);
    return rc;
}

ML_EXPORT int MPI_Startall(int count, MPI_Request array_of_requests[])
{
    ml_thread_t *const t = !ML_BAD_ARRAY(count, array_of_requests) ? ml_enter() : NULL;
    if (ML_UNLIKELY(t == NULL)) return ML_PASS(Startall)(count, array_of_requests);
    ML_CALLSITE(t);
    const uint64_t t0 = ml_completion_start(t, ML_FN_MPI_Startall, 1);
    const int rc = ml_next_MPI_Startall(count, array_of_requests);
    const uint64_t t1 = t->done_at = ml_stop(t0);
    ml_counting(t);
    if (rc == MPI_SUCCESS)
        for (int i = 0; i < count; i++) ml_started(t, ML_FN_MPI_Startall, t0, t1, array_of_requests[i], 0);
    ml_leave(t, ML_FN_MPI_Startall, t0, t1);
    return rc;
}

ML_EXPORT int MPI_Request_free(MPI_Request *request)
{
    if (ML_UNLIKELY(request == NULL)) return ML_PASS(Request_free)(request);
    int measuring;
    ml_thread_t *const t = ml_enter_completion(&measuring);
    if (ML_UNLIKELY(t == NULL)) return ML_PASS(Request_free)(request);
    ML_CALLSITE(t);
    ml_claim_t c;
    ml_req_claim(*request, &c);
    const uint64_t t0 = ml_completion_start(t, ML_FN_MPI_Request_free, measuring);
    const int rc = ml_next_MPI_Request_free(request);
    const uint64_t t1 = t->done_at = ml_stop(t0);
    ml_counting(t);
    if (rc == MPI_SUCCESS)
        ml_req_freed(t, &c, measuring);
    else
        ml_req_unclaim(&c);
    ml_finish(t, ML_FN_MPI_Request_free, t0, t1, measuring);
    return rc;
}

ML_EXPORT int MPI_Cancel(MPI_Request *request)
{
    ml_cancel_noted();
    ml_thread_t *const t = ml_enter();
    if (ML_UNLIKELY(t == NULL)) return ML_PASS(Cancel)(request);
    ML_CALLSITE(t);
    const uint64_t t0 = ml_completion_start(t, ML_FN_MPI_Cancel, 1);
    const int rc = ml_next_MPI_Cancel(request);
    const uint64_t t1 = t->done_at = ml_stop(t0);
    ml_counting(t);
    ml_finish(t, ML_FN_MPI_Cancel, t0, t1, 1);
    return rc;
}

/* the wrappers above, for the PMPI entries (binding.py): called by a tool loaded before the runtime */
ML_SELF(MPI_Init)
ML_SELF(MPI_Init_thread)
ML_SELF(MPI_Finalize)
ML_SELF(MPI_Abort)
ML_SELF(MPI_Pcontrol)
ML_SELF(MPI_Wait)
ML_SELF(MPI_Test)
ML_SELF(MPI_Waitall)
ML_SELF(MPI_Testall)
ML_SELF(MPI_Waitany)
ML_SELF(MPI_Testany)
ML_SELF(MPI_Waitsome)
ML_SELF(MPI_Testsome)
ML_SELF(MPI_Start)
ML_SELF(MPI_Startall)
ML_SELF(MPI_Request_free)
ML_SELF(MPI_Cancel)
