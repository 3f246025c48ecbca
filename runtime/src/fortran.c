/* Fortran side of the runtime: finding the MPI library's own Fortran entry points and sentinels,
 * and the hand-written Fortran wrappers (process lifetime and request completion). */
#include <ctype.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "completion.h"
#include "ml_fortran.h"
#include "ml_trace.h"

void *ml_fortran_resolve(const char *name)
{
    char sym[128];
    const char *forms[] = {"p%s_", "p%s__", "p%s", "P%s"};
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        snprintf(sym, sizeof sym, forms[i], name);
        if (i == 3)
            for (char *c = sym; *c; c++) *c = (char)toupper((unsigned char)*c);
        void *f = dlsym(RTLD_NEXT, sym);
        if (f != NULL) return f;
    }
    /* The application called a Fortran MPI routine that no library after mpilens defines: it
     * could not have run without mpilens either. */
    ml_log(0, "the MPI library has no Fortran entry point for %s", name);
    abort();
}

/* ------------------------------------------------------------------------------- sentinels */
static const void *lookup_any(const char *const *names)
{
    for (; *names; names++) {
        void *p = dlsym(RTLD_DEFAULT, *names);
        if (p != NULL) return p;
    }
    return NULL;
}

#if defined(OPEN_MPI)
/* Open MPI: the sentinels are common blocks of libmpi. */
static const void *in_place_addr(void)
{
    static const void *p;
    static const char *const names[] = {"mpi_fortran_in_place_", "mpi_fortran_in_place__", "mpi_fortran_in_place",
                                        "MPI_FORTRAN_IN_PLACE", NULL};
    if (p == NULL) p = lookup_any(names);
    return p;
}
static const void *bottom_addr(void)
{
    static const void *p;
    static const char *const names[] = {"mpi_fortran_bottom_", "mpi_fortran_bottom__", "mpi_fortran_bottom",
                                        "MPI_FORTRAN_BOTTOM", NULL};
    if (p == NULL) p = lookup_any(names);
    return p;
}
#elif defined(MPICH)
/* MPICH: its Fortran library records the common-block addresses when Fortran MPI_Init runs. */
static const void *in_place_addr(void)
{
    static void *const *slot;
    static const char *const names[] = {"MPIR_F_MPI_IN_PLACE", NULL};
    if (slot == NULL) slot = lookup_any(names);
    return slot ? *slot : NULL;
}
static const void *bottom_addr(void)
{
    static void *const *slot;
    static const char *const names[] = {"MPIR_F_MPI_BOTTOM", NULL};
    if (slot == NULL) slot = lookup_any(names);
    return slot ? *slot : NULL;
}
#else
static const void *in_place_addr(void) { return NULL; }
static const void *bottom_addr(void) { return NULL; }
#endif

const void *ml_fbuf(const void *p)
{
    if (p != NULL && p == in_place_addr()) return MPI_IN_PLACE;
    if (p != NULL && p == bottom_addr()) return MPI_BOTTOM;
    return p;
}

int ml_f_status_ignore(const void *p) { return p == (const void *)MPI_F_STATUS_IGNORE; }
int ml_f_statuses_ignore(const void *p) { return p == (const void *)MPI_F_STATUSES_IGNORE; }

/* ------------------------------------------------------------------------------- lifetime */
#define REAL(name, type) \
    static type real;    \
    if (real == NULL) real = (type)ml_fortran_resolve(name)

typedef void (*f1_t)(void *);
typedef void (*f2_t)(void *, void *);
typedef void (*f3_t)(void *, void *, void *);
typedef void (*f4_t)(void *, void *, void *, void *);
typedef void (*f5_t)(void *, void *, void *, void *, void *);
typedef void (*f6_t)(void *, void *, void *, void *, void *, void *);

static void f_init(MPI_Fint *ierr)
{
    REAL("mpi_init", f1_t);
    ml_mpi_init_enter(ML_FN_MPI_Init);
    const uint64_t t0 = ml_now();
    real(ierr);
    if (*ierr == MPI_SUCCESS) {
        int provided = MPI_THREAD_SINGLE;
        PMPI_Query_thread(&provided);
        ml_init_after_mpi_init(provided, t0);
    }
    ml_mpi_init_leave(ML_FN_MPI_Init);
}
ML_FORTRAN_NAMES(f_init, mpi_init, MPI_INIT)

static void f_init_thread(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr)
{
    REAL("mpi_init_thread", f3_t);
    ml_mpi_init_enter(ML_FN_MPI_Init_thread);
    const uint64_t t0 = ml_now();
    real(required, provided, ierr);
    if (*ierr == MPI_SUCCESS) ml_init_after_mpi_init(*provided, t0);
    ml_mpi_init_leave(ML_FN_MPI_Init_thread);
}
ML_FORTRAN_NAMES(f_init_thread, mpi_init_thread, MPI_INIT_THREAD)

static void f_finalize(MPI_Fint *ierr)
{
    REAL("mpi_finalize", f1_t);
    ml_mpi_finalize_enter();
    ml_finalize_before_mpi_finalize();
    real(ierr);
    ml_mpi_finalize_leave();
}
ML_FORTRAN_NAMES(f_finalize, mpi_finalize, MPI_FINALIZE)

static void f_abort(MPI_Fint *comm, MPI_Fint *errorcode, MPI_Fint *ierr)
{
    REAL("mpi_abort", f3_t);
    ml_thread_t *const t = ml_enter();
    if (t != NULL) {
        ML_CALLSITE(t);
        const uint64_t t0 = ml_now();
        ml_leave(t, ML_FN_MPI_Abort, t0, t0); /* counted; it does not return */
    }
    ml_abort_dump();
    real(comm, errorcode, ierr);
}
ML_FORTRAN_NAMES(f_abort, mpi_abort, MPI_ABORT)

static void f_pcontrol(MPI_Fint *level)
{
    ml_pcontrol(*level);
}
ML_FORTRAN_NAMES(f_pcontrol, mpi_pcontrol, MPI_PCONTROL)

/* ------------------------------------------------------------------------------- completion */
/* The C view of a Fortran status, or NULL for MPI_STATUS_IGNORE. */
static const MPI_Status *c_status(const MPI_Fint *fst, MPI_Status *out)
{
    if (ml_f_status_ignore(fst) || ml_f_statuses_ignore(fst)) return NULL;
    PMPI_Status_f2c(fst, out);
    return out;
}

/* Claim the entries of n Fortran requests; returns the status argument to pass on (the caller's
 * or scratch when it ignores statuses but an entry needs one). */
static MPI_Fint *claim_fortran(ml_thread_t *t, int n, const MPI_Fint *requests, MPI_Fint *statuses, int single)
{
    ml_scratch_reserve(t, (size_t)(n > 0 ? n : 1));
    for (int i = 0; i < n; i++) t->scratch_req[i] = PMPI_Request_f2c(requests[i]);
    const int need = ml_claim_all(t, n, t->scratch_req, MPI_STATUSES_IGNORE) != MPI_STATUSES_IGNORE;
    const int ignored = single ? ml_f_status_ignore(statuses) : ml_f_statuses_ignore(statuses);
    return need && ignored ? t->scratch_fstatus : statuses;
}

/* Settle request i whose status is slot `slot` of a Fortran statuses array. */
static void settle_fortran(ml_thread_t *t, int i, const MPI_Fint *statuses, int slot, MPI_Fint ierr, int measuring)
{
    MPI_Status cs;
    const MPI_Status *s = ml_f_statuses_ignore(statuses) ? NULL : c_status(statuses + slot * ML_F_STATUS_SIZE, &cs);
    ml_settle(t, i, s, ierr, measuring);
}

static void single(const char *name, int fn, void **cache, MPI_Fint *request, MPI_Fint *flag, MPI_Fint *status,
                   MPI_Fint *ierr)
{
    /* MPI_WAIT(request, status, ierr) and MPI_TEST(request, flag, status, ierr) */
    if (*cache == NULL) *cache = ml_fortran_resolve(name);
    int measuring;
    ml_thread_t *const t = ml_enter_completion(&measuring);
    if (ML_UNLIKELY(t == NULL)) {
        if (flag)
            ((f4_t)*cache)(request, flag, status, ierr);
        else
            ((f3_t)*cache)(request, status, ierr);
        return;
    }
    ML_CALLSITE(t);
    ml_claim_t c;
    ml_req_claim(PMPI_Request_f2c(*request), &c);
    MPI_Fint local[ML_F_STATUS_MAX];
    if (ml_claim_needs_status(&c) && ml_f_status_ignore(status)) status = local;
    const uint64_t t0 = ml_start(t, fn);
    if (flag)
        ((f4_t)*cache)(request, flag, status, ierr);
    else
        ((f3_t)*cache)(request, status, ierr);
    const uint64_t t1 = t->done_at = ml_stop(t0);
    if (*ierr == MPI_SUCCESS && (flag == NULL || *flag)) {
        MPI_Status cs;
        ml_req_done(t, &c, c_status(status, &cs), measuring);
    } else {
        ml_req_unclaim(&c);
    }
    ml_finish(t, fn, t0, t1, measuring);
}

static void f_wait(MPI_Fint *request, MPI_Fint *status, MPI_Fint *ierr)
{
    static void *real;
    single("mpi_wait", ML_FN_MPI_Wait, &real, request, NULL, status, ierr);
}
ML_FORTRAN_NAMES(f_wait, mpi_wait, MPI_WAIT)

static void f_test(MPI_Fint *request, MPI_Fint *flag, MPI_Fint *status, MPI_Fint *ierr)
{
    static void *real;
    single("mpi_test", ML_FN_MPI_Test, &real, request, flag, status, ierr);
}
ML_FORTRAN_NAMES(f_test, mpi_test, MPI_TEST)

static void all_fortran(const char *name, int fn, void **cache, MPI_Fint *count, MPI_Fint *requests, MPI_Fint *flag,
                        MPI_Fint *statuses, MPI_Fint *ierr)
{
    /* MPI_WAITALL(count, requests, statuses, ierr) and MPI_TESTALL(count, requests, flag, statuses, ierr) */
    if (*cache == NULL) *cache = ml_fortran_resolve(name);
    int measuring;
    ml_thread_t *const t = ml_enter_completion(&measuring);
    if (ML_UNLIKELY(t == NULL)) {
        if (flag)
            ((f5_t)*cache)(count, requests, flag, statuses, ierr);
        else
            ((f4_t)*cache)(count, requests, statuses, ierr);
        return;
    }
    ML_CALLSITE(t);
    const int n = *count;
    statuses = claim_fortran(t, n, requests, statuses, 0);
    const uint64_t t0 = ml_start(t, fn);
    if (flag)
        ((f5_t)*cache)(count, requests, flag, statuses, ierr);
    else
        ((f4_t)*cache)(count, requests, statuses, ierr);
    const uint64_t t1 = t->done_at = ml_stop(t0);
    if ((*ierr == MPI_SUCCESS || *ierr == MPI_ERR_IN_STATUS) && (flag == NULL || *flag))
        for (int i = 0; i < n; i++) settle_fortran(t, i, statuses, i, *ierr, measuring);
    ml_unclaim_rest(t, n);
    ml_finish(t, fn, t0, t1, measuring);
}

static void f_waitall(MPI_Fint *count, MPI_Fint *requests, MPI_Fint *statuses, MPI_Fint *ierr)
{
    static void *real;
    all_fortran("mpi_waitall", ML_FN_MPI_Waitall, &real, count, requests, NULL, statuses, ierr);
}
ML_FORTRAN_NAMES(f_waitall, mpi_waitall, MPI_WAITALL)

static void f_testall(MPI_Fint *count, MPI_Fint *requests, MPI_Fint *flag, MPI_Fint *statuses, MPI_Fint *ierr)
{
    static void *real;
    all_fortran("mpi_testall", ML_FN_MPI_Testall, &real, count, requests, flag, statuses, ierr);
}
ML_FORTRAN_NAMES(f_testall, mpi_testall, MPI_TESTALL)

static void any_fortran(const char *name, int fn, void **cache, MPI_Fint *count, MPI_Fint *requests, MPI_Fint *index,
                        MPI_Fint *flag, MPI_Fint *status, MPI_Fint *ierr)
{
    /* MPI_WAITANY(count, requests, index, status, ierr), MPI_TESTANY(count, requests, index, flag, status, ierr) */
    if (*cache == NULL) *cache = ml_fortran_resolve(name);
    int measuring;
    ml_thread_t *const t = ml_enter_completion(&measuring);
    if (ML_UNLIKELY(t == NULL)) {
        if (flag)
            ((f6_t)*cache)(count, requests, index, flag, status, ierr);
        else
            ((f5_t)*cache)(count, requests, index, status, ierr);
        return;
    }
    ML_CALLSITE(t);
    const int n = *count;
    status = claim_fortran(t, n, requests, status, 1);
    const uint64_t t0 = ml_start(t, fn);
    if (flag)
        ((f6_t)*cache)(count, requests, index, flag, status, ierr);
    else
        ((f5_t)*cache)(count, requests, index, status, ierr);
    const uint64_t t1 = t->done_at = ml_stop(t0);
    const int i = *index - 1; /* Fortran indices start at 1 */
    if (*ierr == MPI_SUCCESS && (flag == NULL || *flag) && *index != MPI_UNDEFINED && i >= 0 && i < n) {
        MPI_Status cs;
        ml_req_done(t, &t->scratch_claim[i], c_status(status, &cs), measuring);
    }
    ml_unclaim_rest(t, n);
    ml_finish(t, fn, t0, t1, measuring);
}

static void f_waitany(MPI_Fint *count, MPI_Fint *requests, MPI_Fint *index, MPI_Fint *status, MPI_Fint *ierr)
{
    static void *real;
    any_fortran("mpi_waitany", ML_FN_MPI_Waitany, &real, count, requests, index, NULL, status, ierr);
}
ML_FORTRAN_NAMES(f_waitany, mpi_waitany, MPI_WAITANY)

static void f_testany(MPI_Fint *count, MPI_Fint *requests, MPI_Fint *index, MPI_Fint *flag, MPI_Fint *status,
                      MPI_Fint *ierr)
{
    static void *real;
    any_fortran("mpi_testany", ML_FN_MPI_Testany, &real, count, requests, index, flag, status, ierr);
}
ML_FORTRAN_NAMES(f_testany, mpi_testany, MPI_TESTANY)

static void some_fortran(const char *name, int fn, void **cache, MPI_Fint *incount, MPI_Fint *requests,
                         MPI_Fint *outcount, MPI_Fint *indices, MPI_Fint *statuses, MPI_Fint *ierr)
{
    if (*cache == NULL) *cache = ml_fortran_resolve(name);
    int measuring;
    ml_thread_t *const t = ml_enter_completion(&measuring);
    if (ML_UNLIKELY(t == NULL)) {
        ((f6_t)*cache)(incount, requests, outcount, indices, statuses, ierr);
        return;
    }
    ML_CALLSITE(t);
    const int n = *incount;
    statuses = claim_fortran(t, n, requests, statuses, 0);
    const uint64_t t0 = ml_start(t, fn);
    ((f6_t)*cache)(incount, requests, outcount, indices, statuses, ierr);
    const uint64_t t1 = t->done_at = ml_stop(t0);
    if ((*ierr == MPI_SUCCESS || *ierr == MPI_ERR_IN_STATUS) && *outcount != MPI_UNDEFINED)
        for (int j = 0; j < *outcount; j++) {
            const int i = indices[j] - 1;
            if (i >= 0 && i < n) settle_fortran(t, i, statuses, j, *ierr, measuring);
        }
    ml_unclaim_rest(t, n);
    ml_finish(t, fn, t0, t1, measuring);
}

static void f_waitsome(MPI_Fint *incount, MPI_Fint *requests, MPI_Fint *outcount, MPI_Fint *indices,
                       MPI_Fint *statuses, MPI_Fint *ierr)
{
    static void *real;
    some_fortran("mpi_waitsome", ML_FN_MPI_Waitsome, &real, incount, requests, outcount, indices, statuses, ierr);
}
ML_FORTRAN_NAMES(f_waitsome, mpi_waitsome, MPI_WAITSOME)

static void f_testsome(MPI_Fint *incount, MPI_Fint *requests, MPI_Fint *outcount, MPI_Fint *indices,
                       MPI_Fint *statuses, MPI_Fint *ierr)
{
    static void *real;
    some_fortran("mpi_testsome", ML_FN_MPI_Testsome, &real, incount, requests, outcount, indices, statuses, ierr);
}
ML_FORTRAN_NAMES(f_testsome, mpi_testsome, MPI_TESTSOME)

static void f_start(MPI_Fint *request, MPI_Fint *ierr)
{
    REAL("mpi_start", f2_t);
    ml_thread_t *const t = ml_enter();
    if (ML_UNLIKELY(t == NULL)) {
        real(request, ierr);
        return;
    }
    ML_CALLSITE(t);
    const uint64_t t0 = ml_start(t, ML_FN_MPI_Start);
    real(request, ierr);
    const uint64_t t1 = t->done_at = ml_stop(t0);
    uint64_t seq = 0;
    if (*ierr == MPI_SUCCESS) {
        ml_req_t *e = ml_req_find(PMPI_Request_f2c(*request));
        if (e != NULL) seq = ml_req_start(t, e);
    }
    if (ML_UNLIKELY(t->trace.on)) {
        const ml_call_t c = {.fn = ML_FN_MPI_Start, .t0 = t0, .t1 = t1, .comm = MPI_COMM_NULL, .dst = -1, .src = -1,
                             .req = seq};
        ml_trace_call(t, &c);
    }
    ml_leave(t, ML_FN_MPI_Start, t0, t1);
}
ML_FORTRAN_NAMES(f_start, mpi_start, MPI_START)

static void f_startall(MPI_Fint *count, MPI_Fint *requests, MPI_Fint *ierr)
{
    REAL("mpi_startall", f3_t);
    ml_thread_t *const t = ml_enter();
    if (ML_UNLIKELY(t == NULL)) {
        real(count, requests, ierr);
        return;
    }
    ML_CALLSITE(t);
    const uint64_t t0 = ml_start(t, ML_FN_MPI_Startall);
    real(count, requests, ierr);
    const uint64_t t1 = t->done_at = ml_stop(t0);
    if (*ierr == MPI_SUCCESS)
        for (int i = 0; i < *count; i++) {
            ml_req_t *e = ml_req_find(PMPI_Request_f2c(requests[i]));
            const uint64_t seq = e != NULL ? ml_req_start(t, e) : 0;
            if (ML_UNLIKELY(t->trace.on) && seq) {
                const ml_call_t c = {.fn = ML_FN_MPI_Startall, .t0 = t0, .t1 = t1, .comm = MPI_COMM_NULL,
                                     .dst = -1, .src = -1, .req = seq};
                ml_trace_call(t, &c);
            }
        }
    ml_leave(t, ML_FN_MPI_Startall, t0, t1);
}
ML_FORTRAN_NAMES(f_startall, mpi_startall, MPI_STARTALL)

static void f_request_free(MPI_Fint *request, MPI_Fint *ierr)
{
    REAL("mpi_request_free", f2_t);
    int measuring;
    ml_thread_t *const t = ml_enter_completion(&measuring);
    if (ML_UNLIKELY(t == NULL)) {
        real(request, ierr);
        return;
    }
    ML_CALLSITE(t);
    ml_claim_t c;
    ml_req_claim(PMPI_Request_f2c(*request), &c);
    const uint64_t t0 = ml_start(t, ML_FN_MPI_Request_free);
    real(request, ierr);
    const uint64_t t1 = t->done_at = ml_stop(t0);
    if (*ierr == MPI_SUCCESS)
        ml_req_freed(t, &c, measuring);
    else
        ml_req_unclaim(&c);
    ml_finish(t, ML_FN_MPI_Request_free, t0, t1, measuring);
}
ML_FORTRAN_NAMES(f_request_free, mpi_request_free, MPI_REQUEST_FREE)

static void f_cancel(MPI_Fint *request, MPI_Fint *ierr)
{
    REAL("mpi_cancel", f2_t);
    ml_thread_t *const t = ml_enter();
    if (ML_UNLIKELY(t == NULL)) {
        real(request, ierr);
        return;
    }
    ML_CALLSITE(t);
    ml_req_t *const e = ml_req_find(PMPI_Request_f2c(*request));
    const uint64_t t0 = ml_start(t, ML_FN_MPI_Cancel);
    real(request, ierr);
    const uint64_t t1 = t->done_at = ml_stop(t0);
    if (*ierr == MPI_SUCCESS && e != NULL) e->flags |= ML_REQ_CANCELLED;
    if (ML_UNLIKELY(t->trace.on)) ml_trace_plain(t, ML_FN_MPI_Cancel, t0, t1);
    ml_leave(t, ML_FN_MPI_Cancel, t0, t1);
}
ML_FORTRAN_NAMES(f_cancel, mpi_cancel, MPI_CANCEL)
