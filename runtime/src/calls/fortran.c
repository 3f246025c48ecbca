/* Fortran side of the runtime: finding the MPI library's own Fortran entry points and sentinels,
 * and the hand-written Fortran wrappers (process lifetime and request completion). */
#include <ctype.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "completion.h"
#include "ml_fortran.h"
#include "ml_memory.h"
#include "ml_trace.h"

#if ML_FORTRAN /* not with the standard ABI (ml.h) */

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

/* ------------------------------------------------------------------------------- mpi_f08 */
void *ml_f08_resolve(const char *sym)
{
    void *f = dlsym(RTLD_NEXT, sym);
    /* pmpi_xxx_f08_ (Open MPI), else the next mpi_xxx_f08_ (MPICH has no pmpi_ mpi_f08 names) */
    if (f == NULL && sym[0] == 'p') f = dlsym(RTLD_NEXT, sym + 1);
    if (f != NULL) return f;
    ml_log(0, "the MPI library has no mpi_f08 entry point %s", sym);
    abort();
}

#if defined(MPICH)
/* MPICH: TYPE(MPI_Status) of mpi_f08 is a C MPI_F08_status (the fields of MPI_Status in another
 * order); its MPI_STATUS(ES)_IGNORE are objects of their own. */
_Static_assert(sizeof(MPI_F08_status) == sizeof(MPI_Status), "MPICH: mpi_f08 status of unexpected size");
int ml_f08_status_ignore(const void *p) { return p == (const void *)MPI_F08_STATUS_IGNORE; }
int ml_f08_statuses_ignore(const void *p) { return p == (const void *)MPI_F08_STATUSES_IGNORE; }
void ml_f08_status_f2c(const void *f, MPI_Status *c)
{
    const MPI_F08_status *s = f;
    c->count_lo = s->count_lo;
    c->count_hi_and_cancelled = s->count_hi_and_cancelled;
    c->MPI_SOURCE = s->MPI_SOURCE;
    c->MPI_TAG = s->MPI_TAG;
    c->MPI_ERROR = s->MPI_ERROR;
}
#else
/* Open MPI: TYPE(MPI_Status) is laid out as the mpif.h status and the sentinels are the same
 * common blocks (its mpi_f08 procedures hand their arguments to the mpif.h implementation). */
int ml_f08_status_ignore(const void *p) { return ml_f_status_ignore(p); }
int ml_f08_statuses_ignore(const void *p) { return ml_f_statuses_ignore(p); }
void ml_f08_status_f2c(const void *f, MPI_Status *c) { PMPI_Status_f2c((const MPI_Fint *)f, c); }
#endif

/* ------------------------------------------------------------------------------- lifetime */
/* Each hand-written Fortran wrapper exists for both bindings: mpif.h / use mpi (the four manglings
 * of mpi_xxx) and mpi_f08 (mpi_xxx_f08_, whose IERROR is OPTIONAL: a NULL pointer when absent; the
 * wrapper then passes a local one, which changes nothing for the application). `b` says which. */
typedef struct binding {
    int f08;
    const char *f77, *sym08; /* the real entry point: ml_fortran_resolve(f77) or ml_f08_resolve(sym08) */
} binding_t;

static void *real_of(const binding_t *b, void **cache)
{
    if (*cache == NULL) *cache = b->f08 ? ml_f08_resolve(b->sym08) : ml_fortran_resolve(b->f77);
    return *cache;
}

/* The first index MPI_WAITANY/TESTANY/WAITSOME/TESTSOME return. Fortran's is 1; MPICH 4.0's mpi_f08
 * procedures return the C index (0-based) unchanged, and the application sees that: so does the
 * wrapper (seen with Debian's MPICH 4.0.2 for MPI_Testany and MPI_Testsome; later versions are
 * assumed to follow the standard). */
static int index_base(const binding_t *b)
{
#if defined(MPICH) && MPICH_NUMVERSION < 40100000
    return b->f08 ? 0 : 1;
#else
    (void)b;
    return 1;
#endif
}

static int status_ignore(const binding_t *b, const void *p)
{
    return b->f08 ? ml_f08_status_ignore(p) : ml_f_status_ignore(p);
}
static int statuses_ignore(const binding_t *b, const void *p)
{
    return b->f08 ? ml_f08_statuses_ignore(p) : ml_f_statuses_ignore(p);
}

/* Define impl for mpif.h (name_f77: ML_FORTRAN_NAMES) and impl08 for mpi_f08 (sym08), both
 * calling body(binding, args...). */
#define BOTH(impl, lower, upper, params, ...)                                                    \
    static void impl##_f77 params                                                                \
    {                                                                                            \
        static const binding_t b = {0, #lower, NULL};                                            \
        static void *real;                                                                       \
        impl(&b, &real, __VA_ARGS__);                                                                   \
    }                                                                                            \
    ML_FORTRAN_NAMES(impl##_f77, lower, upper)                                                   \
    static void impl##_f08 params                                                                \
    {                                                                                            \
        static const binding_t b = {1, NULL, "p" #lower "_f08_"};                                \
        static void *real;                                                                       \
        impl(&b, &real, __VA_ARGS__);                                                                   \
    }                                                                                            \
    ML_F08_NAME(impl##_f08, lower##_f08_)

typedef void (*f1_t)(void *);
typedef void (*f2_t)(void *, void *);
typedef void (*f3_t)(void *, void *, void *);
typedef void (*f4_t)(void *, void *, void *, void *);
typedef void (*f5_t)(void *, void *, void *, void *, void *);
typedef void (*f6_t)(void *, void *, void *, void *, void *, void *);

/* mpi_f08: the IERROR to pass (a local one when the application omitted it) */
#define IERR(ierr, local) ((ierr) != NULL ? (ierr) : (local))

static void init(const binding_t *b, void **cache, MPI_Fint *ierr)
{
    f1_t real = (f1_t)real_of(b, cache);
    MPI_Fint local;
    ierr = IERR(ierr, &local);
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
BOTH(init, mpi_init, MPI_INIT, (MPI_Fint *ierr), ierr)

static void init_thread(const binding_t *b, void **cache, MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr)
{
    f3_t real = (f3_t)real_of(b, cache);
    MPI_Fint local;
    ierr = IERR(ierr, &local);
    ml_mpi_init_enter(ML_FN_MPI_Init_thread);
    const uint64_t t0 = ml_now();
    real(required, provided, ierr);
    if (*ierr == MPI_SUCCESS) ml_init_after_mpi_init(*provided, t0);
    ml_mpi_init_leave(ML_FN_MPI_Init_thread);
}
BOTH(init_thread, mpi_init_thread, MPI_INIT_THREAD, (MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr),
     required, provided, ierr)

static void finalize(const binding_t *b, void **cache, MPI_Fint *ierr)
{
    f1_t real = (f1_t)real_of(b, cache);
    ml_mpi_finalize_enter();
    ml_finalize_before_mpi_finalize();
    real(ierr);
    ml_mpi_finalize_leave();
}
BOTH(finalize, mpi_finalize, MPI_FINALIZE, (MPI_Fint *ierr), ierr)

static void abort_(const binding_t *b, void **cache, MPI_Fint *comm, MPI_Fint *errorcode, MPI_Fint *ierr)
{
    f3_t real = (f3_t)real_of(b, cache);
    ml_thread_t *const t = ml_enter();
    if (t != NULL) {
        ML_CALLSITE(t);
        const uint64_t t0 = ml_now();
        if (ML_UNLIKELY(t->trace.on)) ml_trace_plain(t, ML_FN_MPI_Abort, t0, t0);
        ml_leave(t, ML_FN_MPI_Abort, t0, t0); /* counted; it does not return */
    }
    ml_abort_dump();
    real(comm, errorcode, ierr);
}
BOTH(abort_, mpi_abort, MPI_ABORT, (MPI_Fint *comm, MPI_Fint *errorcode, MPI_Fint *ierr), comm, errorcode, ierr)

static void pcontrol(const binding_t *b, void **cache, MPI_Fint *level)
{
    ml_memory_mark(ML_MEM_MARK_PCONTROL, NULL, *level);
    ml_pcontrol(*level);
}
BOTH(pcontrol, mpi_pcontrol, MPI_PCONTROL, (MPI_Fint *level), level)

/* ------------------------------------------------------------------------------- completion */
/* The C view of a Fortran status, or NULL for MPI_STATUS(ES)_IGNORE. */
static const MPI_Status *c_status(const binding_t *b, const MPI_Fint *fst, MPI_Status *out)
{
    if (status_ignore(b, fst) || statuses_ignore(b, fst)) return NULL;
    if (b->f08)
        ml_f08_status_f2c(fst, out);
    else
        PMPI_Status_f2c(fst, out);
    return out;
}

/* The C handles of n Fortran requests, into t->scratch_req (before the call: MPI forgets the
 * Fortran handle of a request it frees). With `claim`, their entries are claimed now (Waitall, and
 * every call under MPI_THREAD_MULTIPLE: see ml_remember_handles); otherwise after the call, those
 * of the requests that completed (ml_claim_completed). Returns whether they were only copied. */
static int handles_fortran(ml_thread_t *t, int n, const MPI_Fint *requests, int claim)
{
    ml_scratch_reserve(t, (size_t)(n > 0 ? n : 1));
    for (int i = 0; i < n; i++) t->scratch_req[i] = PMPI_Request_f2c(requests[i]);
    if (claim || ML_UNLIKELY(ml_g.multiple)) {
        ml_claim_all(t, n, t->scratch_req, MPI_STATUSES_IGNORE);
        return 0;
    }
    return 1;
}

/* The status argument to pass on: the caller's, or scratch when it ignores them (the completed
 * requests' statuses give receive sizes and cancellations). */
static MPI_Fint *statuses_fortran(const binding_t *b, ml_thread_t *t, MPI_Fint *statuses, int single)
{
    const int ignored = single ? status_ignore(b, statuses) : statuses_ignore(b, statuses);
    return ignored ? t->scratch_fstatus : statuses;
}

/* Settle request i whose status is slot `slot` of a Fortran statuses array. */
static void settle_fortran(const binding_t *b, ml_thread_t *t, int i, const MPI_Fint *statuses, int slot,
                           MPI_Fint ierr, int measuring)
{
    MPI_Status cs;
    const MPI_Status *s = statuses_ignore(b, statuses) ? NULL : c_status(b, statuses + slot * ML_F_STATUS_SIZE, &cs);
    ml_settle(t, i, s, ierr, measuring);
}

static void single(const binding_t *b, void **cache, int fn, MPI_Fint *request, MPI_Fint *flag, MPI_Fint *status,
                   MPI_Fint *ierr)
{
    /* MPI_WAIT(request, status, ierr) and MPI_TEST(request, flag, status, ierr) */
    void *const real = real_of(b, cache);
    int measuring;
    ml_thread_t *const t = ml_enter_completion(&measuring);
    if (ML_UNLIKELY(t == NULL)) {
        if (flag)
            ((f4_t)real)(request, flag, status, ierr);
        else
            ((f3_t)real)(request, status, ierr);
        return;
    }
    ML_CALLSITE(t);
    MPI_Fint lerr;
    ierr = IERR(ierr, &lerr);
    ml_claim_t c;
    ml_req_claim(PMPI_Request_f2c(*request), &c);
    MPI_Fint local[ML_F_STATUS_MAX];
    if (ml_claim_needs_status(&c) && status_ignore(b, status)) status = local;
    const uint64_t t0 = ml_completion_start(t, fn, measuring);
    if (flag)
        ((f4_t)real)(request, flag, status, ierr);
    else
        ((f3_t)real)(request, status, ierr);
    const uint64_t t1 = t->done_at = ml_stop(t0);
    ml_counting(t);
    if (*ierr == MPI_SUCCESS && (flag == NULL || *flag)) {
        MPI_Status cs;
        ml_req_done(t, &c, c_status(b, status, &cs), measuring);
    } else {
        ml_req_unclaim(&c);
    }
    ml_finish(t, fn, t0, t1, measuring);
}

static void wait_(const binding_t *b, void **cache, MPI_Fint *request, MPI_Fint *status, MPI_Fint *ierr)
{
    single(b, cache, ML_FN_MPI_Wait, request, NULL, status, ierr);
}
BOTH(wait_, mpi_wait, MPI_WAIT, (MPI_Fint *request, MPI_Fint *status, MPI_Fint *ierr), request, status, ierr)

static void test_(const binding_t *b, void **cache, MPI_Fint *request, MPI_Fint *flag, MPI_Fint *status,
                  MPI_Fint *ierr)
{
    single(b, cache, ML_FN_MPI_Test, request, flag, status, ierr);
}
BOTH(test_, mpi_test, MPI_TEST, (MPI_Fint *request, MPI_Fint *flag, MPI_Fint *status, MPI_Fint *ierr), request,
     flag, status, ierr)

static void all_fortran(const binding_t *b, void **cache, int fn, MPI_Fint *count, MPI_Fint *requests,
                        MPI_Fint *flag, MPI_Fint *statuses, MPI_Fint *ierr)
{
    /* MPI_WAITALL(count, requests, statuses, ierr) and MPI_TESTALL(count, requests, flag, statuses, ierr) */
    void *const real = real_of(b, cache);
    int measuring;
    ml_thread_t *const t = ml_enter_completion(&measuring);
    if (ML_UNLIKELY(t == NULL)) {
        if (flag)
            ((f5_t)real)(count, requests, flag, statuses, ierr);
        else
            ((f4_t)real)(count, requests, statuses, ierr);
        return;
    }
    ML_CALLSITE(t);
    MPI_Fint lerr;
    ierr = IERR(ierr, &lerr);
    const int n = *count;
    const int copied = handles_fortran(t, n, requests, flag == NULL);
    statuses = statuses_fortran(b, t, statuses, 0);
    const uint64_t t0 = ml_completion_start(t, fn, measuring);
    if (flag)
        ((f5_t)real)(count, requests, flag, statuses, ierr);
    else
        ((f4_t)real)(count, requests, statuses, ierr);
    const uint64_t t1 = t->done_at = ml_stop(t0);
    ml_counting(t);
    if ((*ierr == MPI_SUCCESS || *ierr == MPI_ERR_IN_STATUS) && (flag == NULL || *flag))
        for (int i = 0; i < n; i++) {
            ml_claim_completed(t, copied, i);
            settle_fortran(b, t, i, statuses, i, *ierr, measuring);
        }
    ml_release_rest(t, copied, n);
    ml_finish(t, fn, t0, t1, measuring);
}

static void waitall(const binding_t *b, void **cache, MPI_Fint *count, MPI_Fint *requests, MPI_Fint *statuses,
                    MPI_Fint *ierr)
{
    all_fortran(b, cache, ML_FN_MPI_Waitall, count, requests, NULL, statuses, ierr);
}
BOTH(waitall, mpi_waitall, MPI_WAITALL, (MPI_Fint *count, MPI_Fint *requests, MPI_Fint *statuses, MPI_Fint *ierr),
     count, requests, statuses, ierr)

static void testall(const binding_t *b, void **cache, MPI_Fint *count, MPI_Fint *requests, MPI_Fint *flag,
                    MPI_Fint *statuses, MPI_Fint *ierr)
{
    all_fortran(b, cache, ML_FN_MPI_Testall, count, requests, flag, statuses, ierr);
}
BOTH(testall, mpi_testall, MPI_TESTALL,
     (MPI_Fint *count, MPI_Fint *requests, MPI_Fint *flag, MPI_Fint *statuses, MPI_Fint *ierr), count, requests,
     flag, statuses, ierr)

static void any_fortran(const binding_t *b, void **cache, int fn, MPI_Fint *count, MPI_Fint *requests,
                        MPI_Fint *index, MPI_Fint *flag, MPI_Fint *status, MPI_Fint *ierr)
{
    /* MPI_WAITANY(count, requests, index, status, ierr), MPI_TESTANY(count, requests, index, flag, status, ierr) */
    void *const real = real_of(b, cache);
    int measuring;
    ml_thread_t *const t = ml_enter_completion(&measuring);
    if (ML_UNLIKELY(t == NULL)) {
        if (flag)
            ((f6_t)real)(count, requests, index, flag, status, ierr);
        else
            ((f5_t)real)(count, requests, index, status, ierr);
        return;
    }
    ML_CALLSITE(t);
    MPI_Fint lerr;
    ierr = IERR(ierr, &lerr);
    const int n = *count;
    const int copied = handles_fortran(t, n, requests, 0);
    status = statuses_fortran(b, t, status, 1);
    const uint64_t t0 = ml_completion_start(t, fn, measuring);
    if (flag)
        ((f6_t)real)(count, requests, index, flag, status, ierr);
    else
        ((f5_t)real)(count, requests, index, status, ierr);
    const uint64_t t1 = t->done_at = ml_stop(t0);
    ml_counting(t);
    const int i = *index - index_base(b); /* Fortran indices start at 1 (see index_base) */
    if (*ierr == MPI_SUCCESS && (flag == NULL || *flag) && *index != MPI_UNDEFINED && i >= 0 && i < n) {
        MPI_Status cs;
        ml_claim_completed(t, copied, i);
        ml_req_done(t, &t->scratch_claim[i], c_status(b, status, &cs), measuring);
    }
    ml_release_rest(t, copied, n);
    ml_finish(t, fn, t0, t1, measuring);
}

static void waitany(const binding_t *b, void **cache, MPI_Fint *count, MPI_Fint *requests, MPI_Fint *index,
                    MPI_Fint *status, MPI_Fint *ierr)
{
    any_fortran(b, cache, ML_FN_MPI_Waitany, count, requests, index, NULL, status, ierr);
}
BOTH(waitany, mpi_waitany, MPI_WAITANY,
     (MPI_Fint *count, MPI_Fint *requests, MPI_Fint *index, MPI_Fint *status, MPI_Fint *ierr), count, requests,
     index, status, ierr)

static void testany(const binding_t *b, void **cache, MPI_Fint *count, MPI_Fint *requests, MPI_Fint *index,
                    MPI_Fint *flag, MPI_Fint *status, MPI_Fint *ierr)
{
    any_fortran(b, cache, ML_FN_MPI_Testany, count, requests, index, flag, status, ierr);
}
BOTH(testany, mpi_testany, MPI_TESTANY,
     (MPI_Fint *count, MPI_Fint *requests, MPI_Fint *index, MPI_Fint *flag, MPI_Fint *status, MPI_Fint *ierr),
     count, requests, index, flag, status, ierr)

static void some_fortran(const binding_t *b, void **cache, int fn, MPI_Fint *incount, MPI_Fint *requests,
                         MPI_Fint *outcount, MPI_Fint *indices, MPI_Fint *statuses, MPI_Fint *ierr)
{
    void *const real = real_of(b, cache);
    int measuring;
    ml_thread_t *const t = ml_enter_completion(&measuring);
    if (ML_UNLIKELY(t == NULL)) {
        ((f6_t)real)(incount, requests, outcount, indices, statuses, ierr);
        return;
    }
    ML_CALLSITE(t);
    MPI_Fint lerr;
    ierr = IERR(ierr, &lerr);
    const int n = *incount;
    const int copied = handles_fortran(t, n, requests, 0);
    statuses = statuses_fortran(b, t, statuses, 0);
    const uint64_t t0 = ml_completion_start(t, fn, measuring);
    ((f6_t)real)(incount, requests, outcount, indices, statuses, ierr);
    const uint64_t t1 = t->done_at = ml_stop(t0);
    ml_counting(t);
    if ((*ierr == MPI_SUCCESS || *ierr == MPI_ERR_IN_STATUS) && *outcount != MPI_UNDEFINED)
        for (int j = 0; j < *outcount; j++) {
            const int i = indices[j] - index_base(b);
            if (i >= 0 && i < n) {
                ml_claim_completed(t, copied, i);
                settle_fortran(b, t, i, statuses, j, *ierr, measuring);
            }
        }
    ml_release_rest(t, copied, n);
    ml_finish(t, fn, t0, t1, measuring);
}

static void waitsome(const binding_t *b, void **cache, MPI_Fint *incount, MPI_Fint *requests, MPI_Fint *outcount,
                     MPI_Fint *indices, MPI_Fint *statuses, MPI_Fint *ierr)
{
    some_fortran(b, cache, ML_FN_MPI_Waitsome, incount, requests, outcount, indices, statuses, ierr);
}
BOTH(waitsome, mpi_waitsome, MPI_WAITSOME,
     (MPI_Fint *incount, MPI_Fint *requests, MPI_Fint *outcount, MPI_Fint *indices, MPI_Fint *statuses,
      MPI_Fint *ierr),
     incount, requests, outcount, indices, statuses, ierr)

static void testsome(const binding_t *b, void **cache, MPI_Fint *incount, MPI_Fint *requests, MPI_Fint *outcount,
                     MPI_Fint *indices, MPI_Fint *statuses, MPI_Fint *ierr)
{
    some_fortran(b, cache, ML_FN_MPI_Testsome, incount, requests, outcount, indices, statuses, ierr);
}
BOTH(testsome, mpi_testsome, MPI_TESTSOME,
     (MPI_Fint *incount, MPI_Fint *requests, MPI_Fint *outcount, MPI_Fint *indices, MPI_Fint *statuses,
      MPI_Fint *ierr),
     incount, requests, outcount, indices, statuses, ierr)

static void start(const binding_t *b, void **cache, MPI_Fint *request, MPI_Fint *ierr)
{
    f2_t real = (f2_t)real_of(b, cache);
    ml_thread_t *const t = ml_enter();
    if (ML_UNLIKELY(t == NULL)) {
        real(request, ierr);
        return;
    }
    ML_CALLSITE(t);
    MPI_Fint lerr;
    ierr = IERR(ierr, &lerr);
    const uint64_t t0 = ml_completion_start(t, ML_FN_MPI_Start, 1);
    real(request, ierr);
    const uint64_t t1 = t->done_at = ml_stop(t0);
    ml_counting(t);
    if (*ierr == MPI_SUCCESS) ml_started(t, ML_FN_MPI_Start, t0, t1, PMPI_Request_f2c(*request), 1);
    ml_leave(t, ML_FN_MPI_Start, t0, t1);
}
BOTH(start, mpi_start, MPI_START, (MPI_Fint *request, MPI_Fint *ierr), request, ierr)

static void startall(const binding_t *b, void **cache, MPI_Fint *count, MPI_Fint *requests, MPI_Fint *ierr)
{
    f3_t real = (f3_t)real_of(b, cache);
    ml_thread_t *const t = ml_enter();
    if (ML_UNLIKELY(t == NULL)) {
        real(count, requests, ierr);
        return;
    }
    ML_CALLSITE(t);
    MPI_Fint lerr;
    ierr = IERR(ierr, &lerr);
    const uint64_t t0 = ml_completion_start(t, ML_FN_MPI_Startall, 1);
    real(count, requests, ierr);
    const uint64_t t1 = t->done_at = ml_stop(t0);
    ml_counting(t);
    if (*ierr == MPI_SUCCESS)
        for (int i = 0; i < *count; i++)
            ml_started(t, ML_FN_MPI_Startall, t0, t1, PMPI_Request_f2c(requests[i]), 0);
    ml_leave(t, ML_FN_MPI_Startall, t0, t1);
}
BOTH(startall, mpi_startall, MPI_STARTALL, (MPI_Fint *count, MPI_Fint *requests, MPI_Fint *ierr), count, requests,
     ierr)

static void request_free(const binding_t *b, void **cache, MPI_Fint *request, MPI_Fint *ierr)
{
    f2_t real = (f2_t)real_of(b, cache);
    int measuring;
    ml_thread_t *const t = ml_enter_completion(&measuring);
    if (ML_UNLIKELY(t == NULL)) {
        real(request, ierr);
        return;
    }
    ML_CALLSITE(t);
    MPI_Fint lerr;
    ierr = IERR(ierr, &lerr);
    ml_claim_t c;
    ml_req_claim(PMPI_Request_f2c(*request), &c);
    const uint64_t t0 = ml_completion_start(t, ML_FN_MPI_Request_free, measuring);
    real(request, ierr);
    const uint64_t t1 = t->done_at = ml_stop(t0);
    ml_counting(t);
    if (*ierr == MPI_SUCCESS)
        ml_req_freed(t, &c, measuring);
    else
        ml_req_unclaim(&c);
    ml_finish(t, ML_FN_MPI_Request_free, t0, t1, measuring);
}
BOTH(request_free, mpi_request_free, MPI_REQUEST_FREE, (MPI_Fint *request, MPI_Fint *ierr), request, ierr)

static void cancel(const binding_t *b, void **cache, MPI_Fint *request, MPI_Fint *ierr)
{
    f2_t real = (f2_t)real_of(b, cache);
    ml_cancel_noted();
    ml_thread_t *const t = ml_enter();
    if (ML_UNLIKELY(t == NULL)) {
        real(request, ierr);
        return;
    }
    ML_CALLSITE(t);
    const uint64_t t0 = ml_completion_start(t, ML_FN_MPI_Cancel, 1);
    real(request, ierr);
    const uint64_t t1 = t->done_at = ml_stop(t0);
    ml_counting(t);
    ml_finish(t, ML_FN_MPI_Cancel, t0, t1, 1);
}
BOTH(cancel, mpi_cancel, MPI_CANCEL, (MPI_Fint *request, MPI_Fint *ierr), request, ierr)

#endif /* ML_FORTRAN */
