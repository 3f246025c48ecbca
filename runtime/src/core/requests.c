/* Tables of outstanding requests. A nonblocking or persistent operation is entered when it starts
 * and accounted when a Wait/Test completes it.
 *
 * Which table holds an entry depends on the thread level:
 *  - below MPI_THREAD_MULTIPLE one thread at a time is inside MPI, so each thread keeps its own
 *    small table, read and written with plain loads and stores, that stays in its cache. A
 *    completion call looks its requests up before the call and settles the entries in place after
 *    it: no copy, nothing taken out and put back. An operation another thread started (a
 *    completion moved to another thread under MPI_THREAD_SERIALIZED) is found in that thread's
 *    table, which nobody else touches meanwhile.
 *  - under MPI_THREAD_MULTIPLE one table for the process, slots claimed with compare-and-swap
 *    (no lock). A handle is reused as soon as MPI frees it, maybe by another thread: completion
 *    calls take their nonblocking entries out of the table before calling MPI (ml_req_claim) and
 *    put back those that did not complete (ml_req_unclaim).
 *
 * A handle is not unique: MPICH gives every operation that completes at once the same built-in
 * handle, Open MPI one shared request for operations on MPI_PROC_NULL. So a handle may have several
 * entries; completing it takes any one of them, and they are interchangeable. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ml.h"
#include "ml_modes.h"

unsigned ml_req_watch; /* ML_WATCH_*: the modes that follow requests (ml.h) */

#define MAX_PROBE 128u
#define OWN_MIN 64u /* first size of a thread's table */

/* the process's table (MPI_THREAD_MULTIPLE only) */
static ml_req_t *slots;
static size_t mask;
static uint32_t longest_probe; /* lookups never look further than inserts went */
/* the most entries a thread's table may hold (MPILENS_MAX_REQUESTS) */
static uint32_t own_max;

/* n zeroed entries starting on a cache-line boundary, each entry one line (ml.h); *mem: what to
 * free. The tool's calloc is the C library's (16-byte alignment) below 64 KiB, mmap above. */
static ml_req_t *entries_alloc(size_t n, void **mem)
{
    unsigned char *p = calloc(n + 1, sizeof(ml_req_t));
    *mem = p;
    if (p == NULL) return NULL;
    return (ml_req_t *)(p + (-(uintptr_t)p & (ML_LINE - 1)));
}

static size_t home_of(uintptr_t k)
{
    return (size_t)(ml_hash(k) >> 20) & mask;
}

int ml_requests_init(size_t capacity)
{
    size_t cap = 64;
    while (cap < capacity) cap *= 2;
    own_max = cap > (1u << 30) ? 1u << 30 : (uint32_t)cap;
    if (!ml_g.multiple) return 0; /* the threads' tables are made at their first request */
    void *mem; /* the process's, never freed */
    slots = entries_alloc(cap, &mem);
    if (slots == NULL) return -1;
    mask = cap - 1;
    return 0;
}

size_t ml_requests_outstanding(void)
{
    int64_t n = 0;
    for (ml_thread_t *t = __atomic_load_n(&ml_g.threads, __ATOMIC_ACQUIRE); t; t = t->next)
        n += t->requests_open + (int64_t)t->rq_live + (int64_t)t->rr_live;
    return n > 0 ? (size_t)n : 0;
}

/* ------------------------------------------------------------------ a thread's own table */
/* Open addressing with linear probing over rq_cap = 2^k entries, kept at most three quarters full
 * of entries and tombstones (so every probe ends at an empty slot): rq_room counts the inserts into
 * empty slots left (ml.h: ml_req_insert, ml_req_remove_at). When none is left the table is rebuilt:
 * tombstones dropped, and the size doubled while more than a quarter would be live (an insert
 * stops at the first tombstone: its probes are those of the live entries' load). */
int ml_req_make_room(ml_thread_t *t)
{
    uint32_t cap = t->rq_cap ? t->rq_cap : OWN_MIN;
    while ((uint64_t)(t->rq_live + 1) * 4 > cap && cap < own_max) cap *= 2;
    if ((uint64_t)(t->rq_live + 1) * 4 > (uint64_t)cap * 3) return -1; /* full at MPILENS_MAX_REQUESTS */
    void *mem;
    ml_req_t *n = entries_alloc(cap, &mem);
    if (n == NULL) return -1;
    const uint32_t shift = (uint32_t)(64 - __builtin_ctzll(cap));
    for (uint32_t i = 0; i < t->rq_cap; i++) {
        const uintptr_t k = t->rq[i].key;
        if (k == ML_REQ_EMPTY || k == ML_REQ_TOMB) continue;
        uint32_t j = (uint32_t)(ml_hash(k) >> shift);
        while (n[j].key != ML_REQ_EMPTY) j = (j + 1) & (cap - 1);
        n[j] = t->rq[i];
    }
    free(t->rq_mem);
    t->rq_mem = mem;
    t->rq = n;
    t->rq_cap = cap;
    t->rq_shift = shift;
    t->rq_room = cap / 4 * 3 - t->rq_live;
    return 0;
}

static inline ml_req_t *own_find(ml_thread_t *t, uintptr_t k)
{
    if (t->rq == NULL) return NULL;
    const uint32_t m = t->rq_cap - 1;
    for (uint32_t i = (uint32_t)(ml_hash(k) >> t->rq_shift);; i = (i + 1) & m) {
        const uintptr_t have = t->rq[i].key;
        if (have == k) return &t->rq[i];
        if (have == ML_REQ_EMPTY) return NULL;
    }
}

/* The entry of a handle in t's table, else in another thread's (below MPI_THREAD_MULTIPLE no
 * other thread is inside MPI, so none is changing its table); *owner: whose table. */
static ml_req_t *own_lookup(ml_thread_t *t, uintptr_t k, ml_thread_t **owner)
{
    ml_req_t *e = t ? own_find(t, k) : NULL;
    if (ML_LIKELY(e != NULL)) {
        *owner = t;
        return e;
    }
    for (ml_thread_t *o = __atomic_load_n(&ml_g.threads, __ATOMIC_ACQUIRE); o; o = o->next) {
        if (o == t || o->rq_live == 0) continue;
        if ((e = own_find(o, k)) != NULL) {
            *owner = o;
            return e;
        }
    }
    return NULL;
}

/* ------------------------------------------------------------------ a thread's receive table */
/* ml.h says how it is kept. Grown to keep it at most a sixteenth full: a window of receives then
 * finds its slots at or next to their homes, and freeing one seldom moves another. Measured on
 * bench/hotpath.py's window of 64 receives (Open MPI, instructions added per send + receive pair,
 * every call timed): half full +370, an eighth +351, a sixteenth +343, a thirty-second +343; the
 * slots a window touches are one cache line each at any of these loads. Every slot is rehashed
 * when it grows (slots have no fixed place: freeing one moves others). It follows as many
 * receives at once as the table of entries follows requests (three quarters of
 * MPILENS_MAX_REQUESTS). */
#define RECV_LOAD 16u /* slots per receive followed, at least */
#define RECV_MIN 512u /* first size of a thread's receive table: 16 KiB (trace mode: and 16 KiB beside) */
int ml_recv_grow(ml_thread_t *t)
{
    const uint32_t most = own_max / 4 * 3;
    if (t->rr_live + 1 > most) return -1; /* full at MPILENS_MAX_REQUESTS */
    const uint32_t old = t->rr != NULL ? t->rr_mask + 1 : 0;
    uint32_t cap = old ? old : RECV_MIN;
    while ((uint64_t)(t->rr_live + 1) * RECV_LOAD > cap) cap *= 2; /* own_max <= 2^26: no overflow */
    ml_recv_slot_t *n = calloc(cap, sizeof *n);
    if (n == NULL) return -1;
    /* trace mode's waiting calls, beside the slots (ml_recv_call_t): there whenever the thread
     * defers calls (ml_trace_defer counts on it) */
    ml_recv_call_t *nc = t->trace.defer ? calloc(cap, sizeof *nc) : NULL;
    if (t->trace.defer && nc == NULL) {
        free(n);
        return -1;
    }
    ml_recv_slot_t *const was = t->rr;
    ml_recv_call_t *const was_c = t->rc;
    t->rr = n;
    t->rc = nc;
    t->rr_mask = cap - 1;
    t->rr_shift = (uint32_t)(64 - __builtin_ctzll(cap));
    t->rr_limit = cap / RECV_LOAD < most ? cap / RECV_LOAD : most;
    for (uint32_t i = 0; i < old; i++) { /* rehashed into the new table by the insert's own probe */
        if (was[i].key == 0) continue;
        ml_recv_slot_t *const to = ml_recv_free_slot(t, was[i].key);
        *to = was[i];
        if (nc != NULL && was_c != NULL) nc[to - n] = was_c[i];
    }
    free(was);
    free(was_c);
    return 0;
}

/* ml.h: the waiting call beside a slot moves with it */
void ml_recv_call_move(ml_thread_t *t, uint32_t i, uint32_t j)
{
    if (t->rc != NULL) t->rc[i] = t->rc[j];
}

/* The receive slot of key k in o's table taken out into *e (1), or 0: the entry ml_req_track would
 * have made for it. */
static int recv_take(ml_thread_t *o, uintptr_t k, ml_req_t *e)
{
    const uint32_t i = ml_recv_find(o, k);
    if (i == ML_REQ_NONE) return 0;
    const ml_recv_slot_t *r = &o->rr[i];
    /* its call event, if it waited for the completion, is written now: the general path writes
     * the completion (o is the calling thread: calls wait only below MPI_THREAD_SERIALIZED) */
    if (r->seq & ML_SEQ_LATER) ML_HOOKS(recv_taken, o, r);
    /* a traced one (an operation number) was started on MPI_COMM_WORLD, as the lean path's entries */
    *e = (ml_req_t){.key = k, .fn = (uint16_t)r->fn, .flags = r->seq ? ML_REQ_ACTIVE | ML_REQ_WORLD : ML_REQ_ACTIVE,
                    .stat = r->stat, .peer = -1, .sent = 0, .recv = ML_BYTES_FROM_STATUS,
                    .seq = r->seq & ~ML_SEQ_LATER,
                    .comm = NULL, .site = r->site};
    ml_recv_remove_at(o, i);
    return 1;
}

/* The receive slot of key k in any thread's receive table (t's first) taken out into the entry *e;
 * *owner: whose table held it. 0 when none has it. */
static int recv_take_any(ml_thread_t *t, uintptr_t k, ml_req_t *e, ml_thread_t **owner)
{
    if (t != NULL && recv_take(t, k, e)) {
        *owner = t;
        return 1;
    }
    for (ml_thread_t *o = __atomic_load_n(&ml_g.threads, __ATOMIC_ACQUIRE); o; o = o->next) {
        if (o != t && recv_take(o, k, e)) {
            *owner = o;
            return 1;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------ the process's table */
/* Slot ownership: compare-and-swap (threads race under MPI_THREAD_MULTIPLE). */
static inline int take_slot(uintptr_t *key, uintptr_t *have, uintptr_t to)
{
    return __atomic_compare_exchange_n(key, have, to, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}

/* Claim a free slot for key k and store e's contents in it; NULL when none is free nearby. */
static ml_req_t *shared_insert(ml_thread_t *t, uintptr_t k, const ml_req_t *e)
{
    const size_t home = home_of(k);
    for (uint32_t d = 0; d < MAX_PROBE; d++) {
        ml_req_t *s = &slots[(home + d) & mask];
        uintptr_t have = __atomic_load_n(&s->key, __ATOMIC_RELAXED);
        while (have == ML_REQ_EMPTY || have == ML_REQ_TOMB) {
            if (take_slot(&s->key, &have, ML_REQ_BUSY)) {
                s->fn = e->fn;
                s->flags = e->flags;
                s->stat = e->stat;
                s->peer = e->peer;
                s->sent = e->sent; /* or t_post */
                s->recv = e->recv;
                s->seq = e->seq;
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

/* Enter e under key k in the table of this thread level; NULL when full. */
static ml_req_t *insert(ml_thread_t *t, uintptr_t k, const ml_req_t *e)
{
    if (ml_g.multiple) return shared_insert(t, k, e);
    ml_req_t *s = ml_req_insert(t, k);
    if (s != NULL) {
        *s = *e;
        s->key = k;
    }
    return s;
}

uint64_t ml_req_track_slow(ml_thread_t *t, MPI_Request req, int fn, unsigned flags, int64_t sent, int64_t recv,
                           int peer, MPI_Comm comm, ml_site_t *site)
{
    if (req == MPI_REQUEST_NULL) return 0;
    /* a mode watches requests or numbers operations, or MPI_THREAD_MULTIPLE (ml_req_track has
     * the profile's own case) */
    /* a thread that numbers its operations (trace mode) names each by thread number and sequence,
     * to link its start and its end */
    const uint64_t seq = t->trace.on ? ml_op_number(t) : 0;
    /* the communicator's facts: for numbered operations; for the watching modes when not
     * MPI_COMM_WORLD (ranks of received messages, communicator sizes of collectives), and on the
     * world too when they ask (per communicator) */
    const ml_comm_t *facts = NULL;
    if (ML_UNLIKELY(ml_req_watch)) {
        if (comm == MPI_COMM_WORLD) flags |= ML_REQ_WORLD;
        if (comm != MPI_COMM_NULL && (comm != MPI_COMM_WORLD || (ml_req_watch & ML_WATCH_WORLD_FACTS)))
            facts = ml_comm_get(comm);
    }
    if (t->trace.on && facts == NULL && comm != MPI_COMM_NULL) facts = ml_comm_get(comm);
    flags |= ML_REQ_FULL;
    ml_req_t e = {.fn = (uint16_t)fn,
                  .flags = (uint16_t)(flags & ML_REQ_PERSISTENT ? flags : flags | ML_REQ_ACTIVE),
                  .stat = ml_stat_index(t, fn),
                  .peer = peer,
                  .sent = sent,
                  .recv = recv,
                  .seq = seq,
                  .comm = facts,
                  .site = site != NULL ? site : t->sites ? ml_site_early(t, fn) : NULL};
    if (!(flags & ML_REQ_PERSISTENT)) ML_HOOKS(req_posted, t, &e);
    if (!(flags & ML_REQ_PERSISTENT) && ml_req_shared_handle(req)) {
        /* complete already, and with no status worth reading */
        if (flags & ML_REQ_SIZE_UNKNOWN) t->recv_unknown++;
        const int64_t s = sent == ML_BYTES_FROM_STATUS ? 0 : sent, r = recv == ML_BYTES_FROM_STATUS ? 0 : recv;
        ml_req_account(t, &e, s, r);
        if (ml_hooks.n_req_done) {
            t->done_at = ml_now(); /* the completion's time: the call that started it returns */
            ML_HOOKS(req_done, t, &e, NULL, s, r);
        }
        return seq;
    }
    /* the facts live until the operation completes or is freed, whatever happens to comm */
    if (facts != NULL) ml_comm_hold(facts);
    if (insert(t, ml_req_key(req), &e) == NULL) {
        t->dropped_requests++;
        ml_comm_release(facts);
    }
    return seq;
}

ml_req_t *ml_req_find(MPI_Request req)
{
    if (req == MPI_REQUEST_NULL) return NULL;
    const uintptr_t k = ml_req_key(req);
    if (!ml_g.multiple) {
        ml_thread_t *owner;
        return own_lookup(ml_tls, k, &owner);
    }
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

/* ml_req_claim_slow below MPI_THREAD_MULTIPLE (a function of its own, so that the process table's
 * claim below saves no registers for it). */
__attribute__((noinline)) static void claim_own(ml_claim_t *c, uintptr_t k)
{
    /* looked up only: the entry stays where it is until the call has completed it */
    c->live = own_lookup(ml_tls, k, &c->owner);
    c->held = c->live != NULL;
    /* a receive of the lean path: taken out of its receive table into an entry (its slot may move
     * while the call completes other requests); put back if not completed */
    if (c->live == NULL) c->held = recv_take_any(ml_tls, k, &c->copy, &c->owner);
}

void ml_req_claim_slow(MPI_Request req, ml_claim_t *c)
{
    c->handle = req;
    c->live = NULL;
    c->held = 0;
    if (req == MPI_REQUEST_NULL || ml_req_shared_handle(req)) return;
    const uintptr_t k = ml_req_key(req);
    if (ML_LIKELY(!ml_g.multiple)) {
        claim_own(c, k);
        return;
    }
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

void ml_req_putback(ml_claim_t *c)
{
    ml_thread_t *t = ml_tls;
    c->held = 0;
    if (c->live != NULL) return; /* still in its table */
    if (!ml_g.multiple) {
        /* a receive taken out of a receive table: back into it (not into the table of entries,
         * whose entries other claims of the same call may point to) */
        if (ml_recv_insert(c->owner, ml_req_key(c->handle), c->copy.site, c->copy.stat, c->copy.fn, c->copy.seq) == NULL)
            c->owner->dropped_requests++;
        return;
    }
    if (t == NULL || shared_insert(t, ml_req_key(c->handle), &c->copy) == NULL) {
        if (t != NULL) t->dropped_requests++;
        ml_comm_release(c->copy.comm);
    }
}

uint64_t ml_req_start(ml_thread_t *t, ml_req_t *e)
{
    e->flags |= ML_REQ_ACTIVE;
    e->stat = ml_stat_index(t, e->fn);
    ML_HOOKS(req_posted, t, e);
    /* in traces, the starts and completions of a persistent operation all carry the number its
     * MPI_*_init record got; the reader pairs them in order */
    return e->seq;
}

static void settle(ml_thread_t *t, ml_req_t *e, int persistent, const MPI_Status *st, int measuring)
{
    if (!(e->flags & ML_REQ_ACTIVE)) return; /* an inactive persistent request completes at once */
    if (persistent) e->flags &= (uint16_t)~ML_REQ_ACTIVE;
    /* a cancelled operation moved nothing: MPI_Test_cancelled on its status decides (every
     * completion asks for a status once the process has cancelled anything) */
    int cancelled = 0;
    if (ML_UNLIKELY(__atomic_load_n(&ml_g.cancels, __ATOMIC_RELAXED)) && st != NULL) PMPI_Test_cancelled(st, &cancelled);
    if (!measuring || cancelled) {
        ML_HOOKS(req_done, t, e, NULL, -1, -1); /* it left the queue, nothing moved */
        return;
    }
    /* a status that is not the operation's says nothing of its receive: its bytes are not counted,
     * and the completion has no status (no source, for the trace and the counters) */
    if (e->flags & ML_REQ_SIZE_UNKNOWN) {
        t->recv_unknown++;
        st = NULL;
    }
    const int64_t posted_sent = ml_req_sent(e);
    const int64_t sent = posted_sent != ML_BYTES_FROM_STATUS ? posted_sent : (st ? ml_status_bytes(st) : 0);
    const int64_t recv = e->recv != ML_BYTES_FROM_STATUS ? e->recv : (st ? ml_status_bytes(st) : 0);
    ml_req_account(t, e, sent, recv);
    ML_HOOKS(req_done, t, e, st, sent, recv);
}

/* The operation of a claim is over: its entry leaves the table it is in. */
static void drop_entry(ml_claim_t *c, ml_req_t *e)
{
    if (e->comm != NULL) ml_comm_release(e->comm);
    if (c->live == NULL) return; /* taken out at the claim */
    if (!ml_g.multiple) {
        ml_req_remove(c->owner, c->live);
    } else {
        __atomic_store_n(&c->live->key, ML_REQ_TOMB, __ATOMIC_RELEASE);
        ml_thread_t *t = ml_tls;
        if (t) t->requests_open--;
    }
}

void ml_req_done_slow(ml_thread_t *t, ml_claim_t *c, const MPI_Status *st, int measuring)
{
    if (!c->held) return;
    c->held = 0;
    ml_req_t *e = c->live ? c->live : &c->copy;
    if (e->flags & ML_REQ_PERSISTENT) {
        settle(t, e, 1, st, measuring); /* a persistent entry stays, with its reference */
        return;
    }
    settle(t, e, 0, st, measuring);
    drop_entry(c, e); /* the operation is over */
}

void ml_req_freed(ml_thread_t *t, ml_claim_t *c, int measuring)
{
    if (!c->held) return;
    ml_req_t *e = c->live ? c->live : &c->copy;
    c->held = 0;
    const int64_t sent = ml_req_sent(e);
    if (measuring && (e->flags & ML_REQ_ACTIVE) && sent > 0 && e->recv == 0) ml_req_account(t, e, sent, 0);
    drop_entry(c, e);
}

void ml_req_completed_slow(ml_thread_t *t, MPI_Request req, const MPI_Status *st, int err)
{
    ml_claim_t c;
    ml_req_claim_slow(req, &c);
    ml_req_done(t, &c, st, err == MPI_SUCCESS); /* completed in error: nothing moved */
}

/* ------------------------------------------------------------------ whose status is it */
/* MPICH-family MPIs (MPICH 4.0 and 5.0, Intel MPI 2021) complete MPI_Isendrecv and
 * MPI_Isendrecv_replace with a status that is not the operation's: what a recycled request held
 * (another message's source, tag and size), or nothing. Nothing in that status tells it apart, so
 * the MPI is asked once per process and function: a message of 3 bytes to itself, on the tool's own
 * communicator (no application receive can match it), whose status must say so. */
#define PROBE_TAG 0x4d4c /* under the least MPI_TAG_UB the standard allows (32767) */
static pthread_once_t probe_once[2] = {PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT};
static int probe_own[2]; /* 1: the status is the operation's */

static void probe(int replace)
{
    int me = -1;
    if (PMPI_Comm_rank(ml_g.comm, &me) != MPI_SUCCESS) return;
    char buf[8] = {1, 2, 3};
    MPI_Request r = MPI_REQUEST_NULL;
    MPI_Status st;
    memset(&st, 0, sizeof st);
    st.MPI_SOURCE = st.MPI_TAG = -7; /* neither a rank nor a tag, nor a wildcard */
    const int rc = replace ? PMPI_Isendrecv_replace(buf, 3, MPI_BYTE, me, PROBE_TAG, me, PROBE_TAG, ml_g.comm, &r)
                           : PMPI_Isendrecv(buf, 3, MPI_BYTE, me, PROBE_TAG, buf + 4, 4, MPI_BYTE, me, PROBE_TAG,
                                            ml_g.comm, &r);
    if (rc != MPI_SUCCESS || PMPI_Wait(&r, &st) != MPI_SUCCESS) return;
    int n = -1;
    PMPI_Get_count(&st, MPI_BYTE, &n);
    probe_own[replace] = st.MPI_SOURCE == me && st.MPI_TAG == PROBE_TAG && n == 3;
    ml_log(1, "MPI_Isendrecv%s: the MPI's completion status %s the operation's (said %d bytes from %d, tag %d)",
           replace ? "_replace" : "", probe_own[replace] ? "is" : "is not", n, st.MPI_SOURCE, st.MPI_TAG);
}
static void probe_plain(void) { probe(0); }
static void probe_replace(void) { probe(1); }

int ml_status_probe(int fn)
{
    const int replace = fn == ML_FN_MPI_Isendrecv_replace || fn == ML_FN_MPI_Isendrecv_replace_c;
    pthread_once(&probe_once[replace], replace ? probe_replace : probe_plain);
    return probe_own[replace];
}
