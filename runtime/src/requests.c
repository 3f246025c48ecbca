/* Table of outstanding requests. A nonblocking or persistent operation is entered when it starts
 * and accounted when a Wait/Test completes it, from whichever thread that is: one table for the
 * process, open addressing, slots claimed and released with compare-and-swap (no lock).
 *
 * Two facts of real MPIs shape it:
 *  - a handle is not unique: MPICH gives every operation that completes at once the same built-in
 *    handle, Open MPI one shared request for operations on MPI_PROC_NULL. So a handle may have
 *    several entries; completing it takes any one of them, and they are interchangeable.
 *  - a handle is reused as soon as MPI frees it, maybe by another thread. So completion calls take
 *    their nonblocking entries out of the table before calling MPI (ml_req_claim) and put back
 *    those that did not complete (ml_req_unclaim). */
#include <stdlib.h>
#include <string.h>

#include "ml.h"
#include "ml_spc.h"
#include "ml_trace.h"

#define ML_REQ_EMPTY ((uintptr_t)0)
#define ML_REQ_TOMB (~(uintptr_t)0)
#define ML_REQ_BUSY (~(uintptr_t)1) /* being filled: not yet visible to lookups */
#define MAX_PROBE 128u

static ml_req_t *slots;
static size_t mask;
static uint32_t longest_probe; /* lookups never look further than inserts went */

#if defined(OPEN_MPI)
extern char ompi_request_empty[]; /* libmpi's one request for operations complete at once */
#endif

/* A handle shared by operations that completed inside the call that started them: Open MPI's
 * "empty" request, MPICH's built-in handles. Such an operation is accounted at once. */
static inline int shared_handle(MPI_Request r)
{
#if defined(OPEN_MPI)
    return (void *)r == (void *)ompi_request_empty;
#elif defined(MPICH)
    return ((uint32_t)r >> 30) == 1u; /* HANDLE_KIND_BUILTIN */
#else
    return 0;
#endif
}

/* Slot ownership: compare-and-swap when threads may race (MPI_THREAD_MULTIPLE), plain stores
 * otherwise (one thread in MPI at a time). */
static inline int take_slot(uintptr_t *key, uintptr_t *have, uintptr_t to)
{
    if (ml_g.multiple) return __atomic_compare_exchange_n(key, have, to, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
    *key = to;
    return 1;
}

static uintptr_t key_of(MPI_Request r)
{
    uintptr_t k = (uintptr_t)r;
    return k == ML_REQ_EMPTY || k == ML_REQ_TOMB || k == ML_REQ_BUSY ? k ^ 2u : k;
}

static size_t home_of(uintptr_t k)
{
    return (size_t)(((uint64_t)k * 0x9E3779B97F4A7C15ull) >> 20) & mask;
}

int ml_requests_init(size_t capacity)
{
    size_t cap = 64;
    while (cap < capacity) cap *= 2;
    slots = calloc(cap, sizeof *slots);
    if (slots == NULL) return -1;
    mask = cap - 1;
    return 0;
}

size_t ml_requests_outstanding(void)
{
    int64_t n = 0;
    for (ml_thread_t *t = __atomic_load_n(&ml_g.threads, __ATOMIC_ACQUIRE); t; t = t->next) n += t->requests_open;
    return n > 0 ? (size_t)n : 0;
}

/* Claim a free slot for key k and store e's contents in it; NULL when none is free nearby. */
static ml_req_t *insert(ml_thread_t *t, uintptr_t k, const ml_req_t *e)
{
    const size_t home = home_of(k);
    for (uint32_t d = 0; d < MAX_PROBE; d++) {
        ml_req_t *s = &slots[(home + d) & mask];
        uintptr_t have = __atomic_load_n(&s->key, __ATOMIC_RELAXED);
        while (have == ML_REQ_EMPTY || have == ML_REQ_TOMB) {
            if (take_slot(&s->key, &have, ML_REQ_BUSY)) {
                s->fn = e->fn;
                s->flags = e->flags;
                s->path = e->path;
                s->peer = e->peer;
                s->sent = e->sent;
                s->recv = e->recv;
                s->seq = e->seq;
                s->t_post = e->t_post;
                s->comm = e->comm;
                s->site = e->site;
                __atomic_store_n(&s->key, k, __ATOMIC_RELEASE);
                uint32_t cur = __atomic_load_n(&longest_probe, __ATOMIC_RELAXED);
                while (d > cur && !__atomic_compare_exchange_n(&longest_probe, &cur, d, 1, __ATOMIC_RELAXED,
                                                               __ATOMIC_RELAXED)) {}
                t->requests_open++;
                return s;
            }
        }
    }
    return NULL;
}

static void account(ml_thread_t *t, const ml_req_t *e, int64_t sent, int64_t recv);

uint64_t ml_req_track(ml_thread_t *t, MPI_Request req, int fn, unsigned flags, int64_t sent, int64_t recv, int peer,
                      MPI_Comm comm)
{
    if (req == MPI_REQUEST_NULL) return 0;
    /* in traces, thread number and sequence name the operation, to link its start and its end */
    const uint64_t seq = t->trace.on ? ((uint64_t)(t->trace.index + 1) << 40) | ++t->req_seq : 0;
    /* nonblocking operations start active; persistent ones wait for MPI_Start */
    /* the communicator's facts: for the trace; for the counters when not MPI_COMM_WORLD (ranks of
     * received messages, communicator sizes of collectives) or per communicator */
    const ml_comm_t *facts = NULL;
    if (ML_UNLIKELY(ml_spc_on)) {
        if (comm == MPI_COMM_WORLD) flags |= ML_REQ_WORLD;
        if (comm != MPI_COMM_NULL && (comm != MPI_COMM_WORLD || (ml_spc_on & ML_SPC_COMMS))) facts = ml_comm_get(comm);
    }
    if (t->trace.on && facts == NULL && comm != MPI_COMM_NULL) facts = ml_comm_get(comm);
    ml_req_t e = {0, (uint16_t)fn, (uint16_t)(flags & ML_REQ_PERSISTENT ? flags : flags | ML_REQ_ACTIVE),
                  t->cur_path, peer, 0, sent, recv, seq, 0, facts, t->sites ? ml_site_early(t, fn) : NULL};
    if (ML_UNLIKELY(ml_spc_on) && !(flags & ML_REQ_PERSISTENT)) ml_spc_posted(t, &e);
    if (!(flags & ML_REQ_PERSISTENT) && shared_handle(req)) {
        /* complete already, and with no status worth reading */
        const int64_t s = sent == ML_BYTES_FROM_STATUS ? 0 : sent, r = recv == ML_BYTES_FROM_STATUS ? 0 : recv;
        account(t, &e, s, r);
        if (ML_UNLIKELY(ml_spc_on)) ml_spc_done(t, &e, NULL, s, r);
        if (t->trace.on) {
            t->done_at = ml_now();
            ml_trace_done(t, &e, NULL, s, r);
        }
        return seq;
    }
    /* the facts live until the operation completes or is freed, whatever happens to comm */
    if (facts != NULL) ml_comm_hold(facts);
    if (insert(t, key_of(req), &e) == NULL) {
        t->dropped_requests++;
        ml_comm_release(facts);
    }
    return seq;
}

ml_req_t *ml_req_find(MPI_Request req)
{
    if (req == MPI_REQUEST_NULL) return NULL;
    const uintptr_t k = key_of(req);
    const size_t home = home_of(k);
    const uint32_t reach = __atomic_load_n(&longest_probe, __ATOMIC_RELAXED);
    for (uint32_t d = 0; d <= reach; d++) {
        ml_req_t *e = &slots[(home + d) & mask];
        const uintptr_t have = __atomic_load_n(&e->key, __ATOMIC_ACQUIRE);
        if (have == k) return e;
        if (have == ML_REQ_EMPTY) return NULL;
    }
    return NULL;
}

void ml_req_claim(MPI_Request req, ml_claim_t *c)
{
    c->handle = req;
    c->live = NULL;
    c->held = 0;
    if (req == MPI_REQUEST_NULL || shared_handle(req)) return;
    const uintptr_t k = key_of(req);
    const size_t home = home_of(k);
    const uint32_t reach = __atomic_load_n(&longest_probe, __ATOMIC_RELAXED);
    for (uint32_t d = 0; d <= reach; d++) {
        ml_req_t *e = &slots[(home + d) & mask];
        uintptr_t have = __atomic_load_n(&e->key, __ATOMIC_ACQUIRE);
        if (have == ML_REQ_EMPTY) return;
        if (have != k) continue;
        if (e->flags & ML_REQ_PERSISTENT) {
            c->live = e;
            c->held = 1;
            return;
        }
        c->copy = *e;
        /* take it; if another thread took this one first, look for the next entry of the handle */
        if (take_slot(&e->key, &have, ML_REQ_TOMB)) {
            ml_thread_t *t = ml_tls;
            if (t) t->requests_open--;
            c->held = 1;
            return;
        }
    }
}

void ml_req_unclaim(ml_claim_t *c)
{
    ml_thread_t *t = ml_tls;
    if (c->held && c->live == NULL && (t == NULL || insert(t, key_of(c->handle), &c->copy) == NULL)) {
        if (t != NULL) t->dropped_requests++;
        ml_comm_release(c->copy.comm);
    }
    c->held = 0;
}

uint64_t ml_req_start(ml_thread_t *t, ml_req_t *e)
{
    e->flags |= ML_REQ_ACTIVE;
    e->path = t->cur_path;
    if (ML_UNLIKELY(ml_spc_on)) ml_spc_posted(t, e);
    /* in traces, the starts and completions of a persistent operation all carry the number its
     * MPI_*_init record got; the reader pairs them in order */
    return e->seq;
}

static void account(ml_thread_t *t, const ml_req_t *e, int64_t sent, int64_t recv)
{
    ml_fstat_t *s = &t->blocks[(size_t)e->path * ML_NFUNC + e->fn];
    s->sent += sent;
    s->recv += recv;
    if (e->site != NULL) {
        /* the site belongs to the thread that started the operation, maybe not this one */
        if (ml_g.multiple) {
            __atomic_fetch_add(&e->site->sent, sent, __ATOMIC_RELAXED);
            __atomic_fetch_add(&e->site->recv, recv, __ATOMIC_RELAXED);
        } else {
            e->site->sent += sent;
            e->site->recv += recv;
        }
    }
    /* the transfer's size class; its time is that of the calls that waited for it */
    t->hist[e->fn * ML_NBINS + ml_size_bin(sent > recv ? sent : recv)].calls++;
    if (e->peer >= 0) {
        t->matrix[e->peer].messages++;
        t->matrix[e->peer].bytes += sent;
    }
}

static void settle(ml_thread_t *t, ml_req_t *e, int live, const MPI_Status *st, int measuring)
{
    if (!(e->flags & ML_REQ_ACTIVE)) return; /* an inactive persistent request completes at once */
    if (live) e->flags &= (uint16_t)~ML_REQ_ACTIVE;
    /* a cancelled operation moved nothing: MPI_Test_cancelled on its status decides (every
     * completion asks for a status once the process has cancelled anything) */
    int cancelled = 0;
    if (ML_UNLIKELY(__atomic_load_n(&ml_g.cancels, __ATOMIC_RELAXED)) && st != NULL) PMPI_Test_cancelled(st, &cancelled);
    if (!measuring || cancelled) {
        if (ML_UNLIKELY(ml_spc_on)) ml_spc_done(t, e, NULL, -1, -1); /* it left the queue, nothing moved */
        return;
    }
    const int64_t sent = e->sent != ML_BYTES_FROM_STATUS ? e->sent : (st ? ml_status_bytes(st) : 0);
    const int64_t recv = e->recv != ML_BYTES_FROM_STATUS ? e->recv : (st ? ml_status_bytes(st) : 0);
    account(t, e, sent, recv);
    if (ML_UNLIKELY(ml_spc_on)) ml_spc_done(t, e, st, sent, recv);
    if (t->trace.on) ml_trace_done(t, e, st, sent, recv);
}

void ml_req_done(ml_thread_t *t, ml_claim_t *c, const MPI_Status *st, int measuring)
{
    if (!c->held) return;
    c->held = 0;
    if (c->live) {
        settle(t, c->live, 1, st, measuring); /* a persistent entry stays, with its reference */
        return;
    }
    settle(t, &c->copy, 0, st, measuring);
    if (c->copy.comm != NULL) ml_comm_release(c->copy.comm); /* the operation is over */
}

void ml_req_freed(ml_thread_t *t, ml_claim_t *c, int measuring)
{
    if (!c->held) return;
    ml_req_t *e = c->live ? c->live : &c->copy;
    c->held = 0;
    if (measuring && (e->flags & ML_REQ_ACTIVE) && e->sent > 0 && e->recv == 0) account(t, e, e->sent, 0);
    ml_comm_release(e->comm);
    if (c->live != NULL) {
        __atomic_store_n(&c->live->key, ML_REQ_TOMB, __ATOMIC_RELEASE);
        t->requests_open--;
    }
}
