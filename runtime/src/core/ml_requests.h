/* The tables of outstanding requests (requests.c) and a call as the observers see it.
 * Part of the core's hot path (ml.h includes every part, in order; a part includes the one before
 * it). Internal header, never installed. */
#ifndef ML_REQUESTS_H
#define ML_REQUESTS_H

#include "ml_comms.h"

/* ------------------------------------------------------------------------------- requests */
#define ML_BYTES_FROM_STATUS (-1)
#define ML_REQ_PERSISTENT 1u
#define ML_REQ_ACTIVE 2u
#define ML_REQ_WORLD 8u /* started on MPI_COMM_WORLD (counters mode: ranks are world ranks) */
#define ML_REQ_FULL 16u /* entered while trace or counters mode watch requests: completed by requests.c */
#define ML_REQ_POSTED_AT 32u /* a receive counters mode watches: t_post holds when it was posted */
/* a receive whose size the MPI does not report: its completion status is not the operation's
 * (MPICH-family MPIs complete MPI_Isendrecv with a status left from another request; the first such
 * call of a process finds out, ml_status_probe) */
#define ML_REQ_SIZE_UNKNOWN 64u

/* An outstanding nonblocking or persistent operation: its bytes are accounted at completion.
 * One cache line: a window of outstanding receives touches a line per entry, not two (the tables
 * are allocated on line boundaries). */
typedef struct ml_req {
    uintptr_t key;      /* request handle; ML_REQ_EMPTY / ML_REQ_TOMB when free (atomic) */
    uint16_t fn;        /* function that created it */
    uint16_t flags;
    uint32_t stat;      /* statistics of its function in the region where it started: blocks[stat] */
    int32_t peer;       /* destination world rank for the matrix, or -1 */
    int32_t pad;
    /* bytes sent, or ML_BYTES_FROM_STATUS (read it with ml_req_sent); a receive sends nothing, so
     * one that counters mode watches keeps there the tick it was posted (ML_REQ_POSTED_AT) */
    union {
        int64_t sent;
        uint64_t t_post;
    };
    int64_t recv;       /* bytes received, or ML_BYTES_FROM_STATUS */
    uint64_t seq;       /* number of the operation in its thread's trace (trace mode) */
    /* trace and counters modes: to give the source of a completed receive as a world rank; the
     * entry holds a reference (ml_comm_hold) from ml_req_track until it completes or is freed */
    const struct ml_comm *comm;
    ml_site_t *site;    /* call site that started it: its bytes are counted there at completion */
} ml_req_t;
_Static_assert(sizeof(ml_req_t) == 64, "a request entry is one cache line");
#define ML_LINE 64 /* bytes: what the request tables are aligned to */

/* An entry's bytes sent (or ML_BYTES_FROM_STATUS): none for a receive whose word holds t_post. */
ML_HOT int64_t ml_req_sent(const ml_req_t *e) { return e->flags & ML_REQ_POSTED_AT ? 0 : e->sent; }

#define ML_REQ_EMPTY ((uintptr_t)0)
#define ML_REQ_TOMB (~(uintptr_t)0)
#define ML_REQ_BUSY (~(uintptr_t)1) /* being filled: not yet visible to lookups */

int ml_requests_init(size_t capacity);
/* Whether the completion status of fn (MPI_Isendrecv, MPI_Isendrecv_replace and their _c forms)
 * describes its receive in this MPI: asked once per process and function, with a message to
 * itself on the tool's own communicator. MPICH 4.0 and 5.0 and Intel MPI 2021 answer no. */
int ml_status_probe(int fn);
/* Enter a new operation: the function that started it, flags, its bytes (or ML_BYTES_FROM_STATUS)
 * and destination world rank (-1: none), its call site (NULL: looked up here, from t->ra);
 * returns its trace sequence number (0 outside trace mode). A full table counts it as dropped.
 * One handle may have several entries: MPICH hands out one shared handle for all operations that
 * complete at once. */
uint64_t ml_req_track_slow(ml_thread_t *t, MPI_Request req, int fn, unsigned flags, int64_t sent, int64_t recv,
                           int peer, MPI_Comm comm, ml_site_t *site);
/* Rebuild t's own table (grown, tombstones dropped) so that one more entry fits; -1 when it is full
 * at MPILENS_MAX_REQUESTS or memory is short. */
int ml_req_make_room(ml_thread_t *t);
/* The first entry of a handle, left in the table (persistent requests, MPI_Cancel). */
ml_req_t *ml_req_find(MPI_Request req);
/* A completion call completed req (measuring, below MPI_THREAD_MULTIPLE; handles copied before the
 * call): the general case of the lean MPI_Waitall, an entry of another kind or of another thread.
 * err: the request's error (MPI_ERR_IN_STATUS), MPI_SUCCESS otherwise. */
void ml_req_completed_slow(ml_thread_t *t, MPI_Request req, const MPI_Status *st, int err);
size_t ml_requests_outstanding(void);

/* A completion call holds the entries of its requests across the MPI call. Below
 * MPI_THREAD_MULTIPLE it looks them up before the call and settles them in place after it. Under
 * MPI_THREAD_MULTIPLE a nonblocking entry is taken out of the table *before* the call: once MPI
 * frees the handle another thread may get the same value for a new operation. A persistent entry
 * stays (its handle lives until freed). */
typedef struct ml_claim {
    ml_req_t *live;     /* the entry in its table: below MPI_THREAD_MULTIPLE, and persistent ones */
    struct ml_thread *owner; /* below MPI_THREAD_MULTIPLE: the thread whose table holds live */
    MPI_Request handle;
    int held;           /* 0: the handle has no entry */
    ml_req_t copy;      /* MPI_THREAD_MULTIPLE, nonblocking: the entry, out of the table */
} ml_claim_t;

void ml_req_claim_slow(MPI_Request req, ml_claim_t *c);
void ml_req_putback(ml_claim_t *c);
/* The call did not complete it: put a taken entry back (an entry looked up in place stays). */
static inline void ml_req_unclaim(ml_claim_t *c)
{
    if (c->held) ml_req_putback(c);
}
void ml_req_done_slow(ml_thread_t *t, ml_claim_t *c, const MPI_Status *st, int measuring);
/* MPI_Request_free: a started send will complete, so its bytes count; a freed receive's size is
 * never known. */
void ml_req_freed(ml_thread_t *t, ml_claim_t *c, int measuring);
uint64_t ml_req_start(ml_thread_t *t, ml_req_t *e);

/* ---- the common case, inlined into the wrappers: the profile without trace and counters modes,
 * below MPI_THREAD_MULTIPLE, an operation started and completed by the same thread. Its entry is
 * written into the thread's own table at the start, looked up before the completion call and
 * settled in place after it (requests.c has the other cases and the table's upkeep). */
/* The modes that follow requests (their req_posted and req_done hooks, ml_modes.h), set at
 * MPI_Init by the modes that do: ML_WATCH_REQUESTS, plus ML_WATCH_WORLD_FACTS when they want the
 * communicator's facts (ml_comm_t) of operations on the world too (those of other communicators
 * are always kept then). The lean path serves none of them. */
#define ML_WATCH_REQUESTS 0x1u
#define ML_WATCH_WORLD_FACTS 0x2u
extern unsigned ml_req_watch;
/* Open MPI: ompi_request_empty, libmpi's one request for operations complete at once, is
 * declared and bound with the header's variables (ml_pmpi.h) */

/* A handle shared by operations that completed inside the call that started them: Open MPI's
 * "empty" request, MPICH's built-in handles. Such an operation is accounted at once. */
ML_HOT int ml_req_shared_handle(MPI_Request r)
{
#if defined(OPEN_MPI)
    return (void *)r == (void *)ompi_request_empty;
#elif defined(MPICH)
    return ((uint32_t)r >> 30) == 1u; /* HANDLE_KIND_BUILTIN */
#else
    return 0;
#endif
}

/* A handle as a key: the three values that mark slots (0, ~1, ~0, never handles of Open MPI or
 * MPICH) are moved aside with one comparison. */
ML_HOT uintptr_t ml_req_key(MPI_Request r)
{
    const uintptr_t k = (uintptr_t)r;
#if defined(OPEN_MPI) || defined(MPICH)
    return k; /* a pointer to a request object; a handle with its kind in the top bits */
#else
    return k + 2u <= 2u ? k ^ 4u : k;
#endif
}
/* Whether slot key k is free for an insert (empty or a tombstone): one comparison. */
ML_HOT int ml_req_free_slot(uintptr_t k) { return k + 1u <= 1u; }

ML_HOT uint32_t ml_req_home(const ml_thread_t *t, uintptr_t k)
{
    return (uint32_t)(ml_hash(k) >> t->rq_shift);
}

/* Whether t's operations take the inlined path: no mode but the profile watches them, and one
 * thread at a time is inside MPI. */
ML_HOT int ml_req_lean(const ml_thread_t *t)
{
    return !(t->trace.on | ml_req_watch | ml_g.multiple);
}

/* The index in a thread's blocks of function fn's statistics in the region path now current. */
ML_HOT uint32_t ml_stat_index(const ml_thread_t *t, int fn) { return t->cur_path * ML_NFUNC + (uint32_t)fn; }
/* The next operation number of a thread in trace mode: its number and sequence, which link an
 * operation's start to its completion in the trace. */
ML_HOT uint64_t ml_op_number(ml_thread_t *t) { return t->trace.req_base | ++t->req_seq; }

/* A completed operation's size class (its time is that of the calls that waited for it) and the
 * destination's row of the matrix (peer: its world rank, or -1). */
ML_HOT void ml_account_transfer(ml_thread_t *t, int fn, int peer, int64_t sent, int64_t recv)
{
    ml_hist_bin(t, fn, sent, recv)->calls++;
    if (peer >= 0) {
        t->matrix[peer].messages++;
        t->matrix[peer].bytes += sent;
    }
}

/* A completed operation's bytes: in s, the statistics of the function that started it (of the
 * region where it started), its call site, the size histogram and the destination's row of the
 * matrix. */
ML_HOT void ml_account(ml_thread_t *t, ml_fstat_t *s, ml_site_t *site, int fn, int peer, int64_t sent, int64_t recv)
{
    s->sent += sent;
    s->recv += recv;
    if (site != NULL) {
        /* the site belongs to the thread that started the operation, maybe not this one */
        if (ML_UNLIKELY(ml_g.multiple)) {
            __atomic_fetch_add(&site->sent, sent, __ATOMIC_RELAXED);
            __atomic_fetch_add(&site->recv, recv, __ATOMIC_RELAXED);
        } else {
            site->sent += sent;
            site->recv += recv;
        }
    }
    ml_account_transfer(t, fn, peer, sent, recv);
}
ML_HOT void ml_req_account(ml_thread_t *t, const ml_req_t *e, int64_t sent, int64_t recv)
{
    ml_account(t, &t->blocks[e->stat], e->site, e->fn, e->peer, sent, recv);
}

/* ---- a thread's own table (below MPI_THREAD_MULTIPLE; requests.c says how it is kept) */
#define ML_REQ_NONE UINT32_MAX

/* A new entry for key k in t's table, its key written (the caller fills the rest); NULL when the
 * table is full at MPILENS_MAX_REQUESTS or memory is short. */
ML_HOT ml_req_t *ml_req_insert(ml_thread_t *t, uintptr_t k)
{
    if (ML_UNLIKELY(t->rq_room == 0) && ml_req_make_room(t) != 0) return NULL;
    const uint32_t m = t->rq_cap - 1;
    uint32_t i = ml_req_home(t, k);
    while (!ml_req_free_slot(t->rq[i].key)) i = (i + 1) & m;
    ml_req_t *e = &t->rq[i];
    t->rq_room -= e->key == ML_REQ_EMPTY; /* a tombstone's slot was counted already */
    t->rq_live++;
    e->key = k;
    return e;
}

/* The slot of req in t's own table, or ML_REQ_NONE. */
ML_HOT uint32_t ml_req_index(const ml_thread_t *t, MPI_Request req)
{
    if (t->rq_live == 0) return ML_REQ_NONE;
    const uintptr_t k = ml_req_key(req);
    const uint32_t m = t->rq_cap - 1;
    for (uint32_t i = ml_req_home(t, k);; i = (i + 1) & m) {
        const uintptr_t have = t->rq[i].key;
        if (have == k) return i;
        if (have == ML_REQ_EMPTY) return ML_REQ_NONE;
    }
}
/* The entry of req in t's own table, or NULL. */
ML_HOT ml_req_t *ml_req_own(const ml_thread_t *t, MPI_Request req)
{
    const uint32_t i = ml_req_index(t, req);
    return i != ML_REQ_NONE ? &t->rq[i] : NULL;
}

/* Take slot i out of owner's table: a tombstone while an entry follows it (a probe may need to run
 * past it), else empty, and so are the tombstones just before it, which no probe needs any more.
 * Entries never move: a completion call may hold pointers to several. */
ML_HOT void ml_req_remove_at(ml_thread_t *owner, uint32_t i)
{
    ml_req_t *const rq = owner->rq;
    const uint32_t m = owner->rq_cap - 1;
    owner->rq_live--;
    if (rq[(i + 1) & m].key != ML_REQ_EMPTY) {
        rq[i].key = ML_REQ_TOMB;
        return;
    }
    rq[i].key = ML_REQ_EMPTY;
    uint32_t freed = 1;
    while (rq[i = (i - 1) & m].key == ML_REQ_TOMB) {
        rq[i].key = ML_REQ_EMPTY;
        freed++;
    }
    owner->rq_room += freed;
}
ML_HOT void ml_req_remove(ml_thread_t *owner, ml_req_t *e) { ml_req_remove_at(owner, (uint32_t)(e - owner->rq)); }

/* ---- a thread's receive table (below MPI_THREAD_MULTIPLE; the lean path only)
 * A receive's bytes are known only from its status at completion, so it needs a slot from its
 * start to its completion; nothing else about it varies: it sends nothing, and the matrix counts
 * it at the sender. The lean path's receives (MPI_Irecv, MPI_Imrecv; in trace mode those on
 * MPI_COMM_WORLD) therefore keep only their handle, call site, function, region and (trace mode)
 * operation number, in a slot of 32 bytes in a table of their own (trace mode: and a waiting
 * call's event beside it, ml_recv_call_t): open
 * addressing with linear probing, at most a sixteenth full (requests.c: ml_recv_grow), a slot
 * freed by moving the slots after it back (no tombstones, nothing to count but the slots used).
 * The receive's statistics are those of its function in the region where it started, as for an
 * entry (blocks[stat]).
 * Slots move when one is freed. A lean completion call holds at most the index of one slot across
 * the MPI call (MPI_Wait, MPI_Test), during which nothing frees one (a nested call does not
 * measure). The general path takes a slot out into an entry (ml_req_claim_slow: its claims may
 * span many requests) and puts one that did not complete back into the receive table. */
typedef struct ml_recv_slot {
    uintptr_t key;      /* request handle; 0: free */
    ml_site_t *site;    /* call site that started it */
    uint32_t stat;      /* its function's statistics in the region where it started: blocks[stat] */
    uint32_t fn;        /* the function that started it */
    uint64_t seq;       /* trace mode: its operation number (ml_op_number); else 0 */
} ml_recv_slot_t;
/* four words: two slots to a cache line, none across two (trace mode's operation number made the
 * three words of the profile's slot four) */
_Static_assert(sizeof(ml_recv_slot_t) == 32, "a receive's slot is four words");
/* Trace mode's part of a receive whose call event waits for its completion (ml_trace_defer; its
 * slot's seq then has ML_SEQ_LATER), at the same index in a table of its own (t->rc), so that the
 * profile's slots stay four words: the call's start, duration, source (world rank, -1: any), tag
 * and call site number. */
typedef struct ml_recv_call {
    uint64_t t0;
    uint32_t dur;
    int32_t src, tag;
    uint32_t site_id;
    uint64_t unused; /* the size of a slot */
} ml_recv_call_t;
/* as large as a slot: a slot's call is at the slot's offset in rc (ml_recv_call_of) */
_Static_assert(sizeof(ml_recv_call_t) == sizeof(ml_recv_slot_t), "a waiting call is as large as its slot");
/* The waiting call beside slot r of t's receive table (trace mode). */
ML_HOT ml_recv_call_t *ml_recv_call_of(const ml_thread_t *t, const ml_recv_slot_t *r)
{
    return (ml_recv_call_t *)((char *)t->rc + ((const char *)r - (const char *)t->rr));
}
/* Slot j's waiting call moved to slot i, when a freed slot is filled (ml_recv_remove_at): out of
 * line, so that the profile's common case, which moves nothing, does not even load t->rc. */
void ml_recv_call_move(ml_thread_t *t, uint32_t i, uint32_t j);
#define ML_RECV_SLOT 0x80000000u /* in a completion call's slot index: the receive table's */

/* Make room for one more receive in t's table (grown, or made at the first receive): -1 when it is
 * full at MPILENS_MAX_REQUESTS or memory is short. */
int ml_recv_grow(ml_thread_t *t);

ML_HOT uint32_t ml_recv_home(const ml_thread_t *t, uintptr_t k)
{
    return (uint32_t)(ml_hash(k) >> t->rr_shift);
}

/* The free slot that key k takes: its home, or the first free one after it. */
ML_HOT ml_recv_slot_t *ml_recv_free_slot(const ml_thread_t *t, uintptr_t k)
{
    const uint32_t m = t->rr_mask;
    uint32_t i = ml_recv_home(t, k);
    while (t->rr[i].key != 0) i = (i + 1) & m;
    return &t->rr[i];
}

/* A slot for the receive of handle key k (site, stat, fn, seq: as in ml_recv_slot_t; its call not
 * waiting), or NULL when the table is full at MPILENS_MAX_REQUESTS. */
ML_HOT ml_recv_slot_t *ml_recv_insert(ml_thread_t *t, uintptr_t k, ml_site_t *site, uint32_t stat, uint32_t fn,
                                      uint64_t seq)
{
    if (ML_UNLIKELY(t->rr_live >= t->rr_limit) && ml_recv_grow(t) != 0) return NULL;
    ml_recv_slot_t *const r = ml_recv_free_slot(t, k);
    r->key = k;
    r->site = site;
    r->stat = stat;
    r->fn = fn;
    r->seq = seq;
    t->rr_live++;
    return r;
}

/* The slot of handle key k in t's receive table, or ML_REQ_NONE. */
ML_HOT uint32_t ml_recv_find(const ml_thread_t *t, uintptr_t k)
{
    if (t->rr_live == 0) return ML_REQ_NONE;
    const uint32_t m = t->rr_mask;
    for (uint32_t i = ml_recv_home(t, k);; i = (i + 1) & m) {
        const uintptr_t have = t->rr[i].key;
        if (have == k) {
            /* a table has at most 2^30 slots (MPILENS_MAX_REQUESTS <= 2^26), said so that a
             * caller's test for ML_REQ_NONE after a match, with or without ML_RECV_SLOT, compiles
             * to nothing */
            if (i >= 1u << 30) __builtin_unreachable();
            return i;
        }
        if (have == 0) return ML_REQ_NONE;
    }
}
ML_HOT uint32_t ml_recv_index(const ml_thread_t *t, MPI_Request req) { return ml_recv_find(t, ml_req_key(req)); }

/* Free slot i of t's receive table: each slot after it, up to a free one, moves back into the hole
 * when its home is not between the hole and itself (so every probe still finds it). */
ML_HOT void ml_recv_remove_at(ml_thread_t *t, uint32_t i)
{
    ml_recv_slot_t *const rr = t->rr;
    const uint32_t m = t->rr_mask;
    for (uint32_t j = (i + 1) & m; rr[j].key != 0; j = (j + 1) & m) {
        const uint32_t h = ml_recv_home(t, rr[j].key);
        if (((j - h) & m) >= ((j - i) & m)) {
            rr[i] = rr[j];
            ml_recv_call_move(t, i, j);
            i = j;
        }
    }
    rr[i].key = 0;
    t->rr_live--;
}

/* The receive in slot i completed (st: its status; NULL in error: nothing moved): its bytes in the
 * statistics of its function and region, its site and the size histogram; its slot freed. */
ML_HOT void ml_recv_settle(ml_thread_t *t, uint32_t i, const MPI_Status *st)
{
    /* accounted first, then freed: read in place, the slot's fields need no copy */
    if (st != NULL) {
        const ml_recv_slot_t *const r = &t->rr[i];
        const int64_t recv = ml_status_bytes(st);
        t->blocks[r->stat].recv += recv;
        r->site->recv += recv;
        ml_hist_bin(t, (int)r->fn, 0, recv)->calls++;
    }
    ml_recv_remove_at(t, i);
}

ML_HOT uint64_t ml_req_track(ml_thread_t *t, MPI_Request req, int fn, unsigned flags, int64_t sent, int64_t recv,
                             int peer, MPI_Comm comm)
{
    if (ML_LIKELY(ml_req_lean(t)) && req != MPI_REQUEST_NULL) {
        /* with call sites off, the void site the lean path counts into: a lean completion
         * settles this entry and adds its bytes to its site without asking */
        ml_site_t *site = t->sites ? ml_site_early(t, fn) : &t->site_void;
        t->site_posted = site;
        if (!(flags & ML_REQ_PERSISTENT) && ml_req_shared_handle(req)) { /* complete already, and with no status worth reading */
            if (flags & ML_REQ_SIZE_UNKNOWN) t->recv_unknown++;
            ml_account(t, &t->cur[fn], site, fn, peer, sent == ML_BYTES_FROM_STATUS ? 0 : sent,
                       recv == ML_BYTES_FROM_STATUS ? 0 : recv);
            return 0;
        }
        ml_req_t *e = ml_req_insert(t, ml_req_key(req));
        if (ML_UNLIKELY(e == NULL)) {
            t->dropped_requests++; /* full at MPILENS_MAX_REQUESTS */
            return 0;
        }
        e->fn = (uint16_t)fn;
        e->flags = (uint16_t)(flags & ML_REQ_PERSISTENT ? flags : flags | ML_REQ_ACTIVE); /* persistent: at MPI_Start */
        e->stat = ml_stat_index(t, fn);
        e->peer = peer;
        e->sent = sent;
        e->recv = recv;
        e->seq = 0;
        e->comm = NULL;
        e->site = site;
        return 0;
    }
    return ml_req_track_slow(t, req, fn, flags, sent, recv, peer, comm, NULL);
}

/* Before a completion call: the entry of req (c->held), found in the calling thread's table or
 * elsewhere (ml_req_claim_slow). */
ML_HOT void ml_req_claim(MPI_Request req, ml_claim_t *c)
{
    ml_thread_t *t = ml_tls;
    if (ml_req_shared_handle(req)) { /* accounted when it started */
        c->held = 0;
        return;
    }
    ml_req_t *e;
    if (ML_LIKELY(!ml_g.multiple && t != NULL) && (e = ml_req_own(t, req)) != NULL) {
        c->live = e;
        c->owner = t;
        c->handle = req;
        c->held = 1;
        return;
    }
    ml_req_claim_slow(req, c); /* elsewhere, or in a receive table (taken out into c->copy) */
}

/* After the call completed it: account its bytes (when measuring; st may be NULL when no status is
 * needed) and close it. */
ML_HOT void ml_req_done(ml_thread_t *t, ml_claim_t *c, const MPI_Status *st, int measuring)
{
    if (!c->held) return;
    ml_req_t *e = c->live;
    /* an entry of the inlined start (no mode but the profile watches it), nonblocking, measuring, and
     * no cancel in the process so far */
    if (ML_LIKELY(e != NULL && c->owner == t && e->flags == ML_REQ_ACTIVE && measuring &&
                  !__atomic_load_n(&ml_g.cancels, __ATOMIC_RELAXED))) {
        c->held = 0;
        const int64_t sent = e->sent != ML_BYTES_FROM_STATUS ? e->sent : (st ? ml_status_bytes(st) : 0);
        const int64_t recv = e->recv != ML_BYTES_FROM_STATUS ? e->recv : (st ? ml_status_bytes(st) : 0);
        ml_req_account(t, e, sent, recv);
        ml_req_remove(t, e);
        return;
    }
    ml_req_done_slow(t, c, st, measuring);
}

/* Whether the completion of a claimed request needs its status: for the bytes of a receive, and
 * once the process has cancelled anything, for MPI_Test_cancelled. (A send whose cancel, from
 * another thread, starts after this completion call began is counted as sent: cancelling a send
 * is deprecated in MPI-4 and Open MPI cannot do it. Every receive has its status.) */
static inline int ml_claim_needs_status(const ml_claim_t *c)
{
    if (!c->held) return 0;
    const ml_req_t *e = c->live ? c->live : &c->copy;
    return ml_req_sent(e) == ML_BYTES_FROM_STATUS || e->recv == ML_BYTES_FROM_STATUS ||
           __atomic_load_n(&ml_g.cancels, __ATOMIC_RELAXED);
}

/* One MPI call as the generated wrappers describe it to the observers (trace, counters): ranks are
 * in comm (translated to world ranks by the trace), status gives the actual source and tag of a
 * receive. */
typedef struct ml_call {
    int fn;
    uint64_t t0, t1;
    MPI_Comm comm;
    int dst, src, stag, rtag;
    int64_t sent, recv;
    uint64_t req;
    const MPI_Status *status;
} ml_call_t;

#endif
