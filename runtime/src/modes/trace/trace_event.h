/* Trace mode's event encoding (format in trace.c), inlined into
 * the wrappers of the frequent, short functions: built in place, the constant fields of each
 * wrapper's call (no source for a send, no tag for a wait, ...) fold away; a traced MPI_Send costs
 * ~142 instructions over the profile's instead of ~175 (bench/RESULTS.md). trace.c holds the
 * buffers' life and the writer thread; ml_trace.h the mode's per-thread state and functions; the
 * observers' dispatch that calls ml_trace_call_inline is in ml_observe.h. */
#ifndef ML_TRACE_EVENT_H
#define ML_TRACE_EVENT_H

#include "ml.h"
#include "ml_trace.h"

/* The event kinds (ML_TEV_*), the flags (ML_TF_*) and the fixed part of an event (ml_tfix_t) are
 * the run directory's, generated from runtime/spec/rundir.yaml into ml_rundir.h. */

/* The fields of an event that a call or a completion repeats from the previous one of its
 * function, as the encoder and the reader keep them for each function (runtime/spec/rundir.yaml,
 * flags trace_event). */
typedef struct ml_trace_fields {
    int32_t dst, src, stag, rtag;
    uint32_t site;
    int64_t sent, recv;
} ml_trace_fields_t;
/* ... before any: none, no tags, unknown site, no bytes */
#define ML_TRACE_FIELDS_NONE \
    ((ml_trace_fields_t){.dst = -1, .src = -1, .stag = 0, .rtag = 0, .site = 0, .sent = 0, .recv = 0})

typedef struct ml_tbuf {
    int state;
    uint32_t thread;
    /* events (low half) and words (high half) committed by the filling thread, in one atomic so
     * that a writer flushing the buffer meanwhile sees both of the same moment */
    uint64_t committed;
    uint32_t flushed, wflushed; /* events and words already written */
    int busy;                   /* held by whoever writes from this buffer: the writer or a dying process */
    uint32_t filling;           /* this thread's count of buffer fillings, to group the blocks */
    uint64_t last_t0;           /* the previous event of this filling (thread-private), or ML_TBUF_NO_T0 */
    uint32_t last_comm;
    /* what the next event may repeat without a word (thread-private, reset when a filling
     * starts): the operation number of the previous call [0] and completion [1], and per function
     * the fields of its previous call [0] and completion [1] */
    uint64_t last_req[2];
    ml_trace_fields_t last_of[2][ML_NFUNC];
    ml_trace_fields_t defaults; /* what an event that repeats nothing is compared with, set before it */
    /* the filling thread's own cursor (thread-private, set when a filling starts): where the next
     * event's fixed part goes, and the lowest word written so far; committed says the same in
     * counts for the readers */
    ml_tfix_t *fix_at;
    uint32_t *word_at;
    struct ml_tbuf *next;
    _Alignas(8) unsigned char data[]; /* fixed parts from the start, words from the end */
} ml_tbuf_t;

/* One event with all of its fields, before encoding. */
typedef struct ml_tev {
    uint64_t t0, t1; /* ticks */
    uint32_t kind, fn, comm;
    int32_t dst, src, stag, rtag; /* world ranks (-1: none); tags */
    int64_t sent, recv;           /* bytes; counters: the value's bits in sent */
    uint64_t req;                 /* operation number ((thread + 1) << 40 | sequence), 0: none */
    uint32_t site;                /* call site: number in the thread's table, 0: unknown */
} ml_tev_t;

/* last_t0 at the start of a filling: 2^63 ticks from any time stamp (a century at 3 GHz), so the
 * first event's dt never fits 32 bits and it gets its full time stamp */
#define ML_TBUF_NO_T0 (1ull << 63)

extern size_t ml_trace_data_bytes;  /* of each buffer */
extern uint32_t ml_trace_world_uid; /* MPI_COMM_WORLD's, the communicator of most calls */
/* The thread's buffer is full (or it has none yet): queue it, return a free one. */
ml_tbuf_t *ml_trace_swap(ml_thread_t *t);

ML_HOT ml_tfix_t *ml_tbuf_fixed(ml_tbuf_t *b) { return (ml_tfix_t *)b->data; }
/* the end of the buffer: the words grow downwards from here */
ML_HOT uint32_t *ml_tbuf_word_end(ml_tbuf_t *b) { return (uint32_t *)(b->data + ml_trace_data_bytes); }

/* The pieces of an event's encoding that every kind shares (ml_trace_emit, ml_trace_late). */
/* The thread's buffer with room for one more event (the next one when full); *f and *w: where its
 * fixed part and (downwards) its words go. */
ML_HOT ml_tbuf_t *ml_tbuf_room(ml_thread_t *t, ml_tfix_t **f, uint32_t **w)
{
    ml_tbuf_t *b = t->trace.cur;
    if (ML_UNLIKELY(b == NULL)) b = ml_trace_swap(t);
    *f = b->fix_at;
    *w = b->word_at; /* the fields are stored downwards */
    if (ML_UNLIKELY((char *)*w - (char *)(*f + 1) < ML_TF_MAX_WORDS * 4)) { /* no room for one more */
        b = ml_trace_swap(t);
        *f = b->fix_at;
        *w = b->word_at;
    }
    return b;
}

/* A nonzero byte count v: width 3 (no word) when it is *last, the function's last nonzero one;
 * else its one or two words, and *last becomes it. Returns its flags: the width at shift (a
 * constant, so that each branch ors a constant). */
ML_HOT uint32_t ml_tev_bytes(int64_t v, int64_t *last, const unsigned shift, uint32_t **w)
{
    if (v == *last) return 3u << shift;
    *last = v;
    *--*w = (uint32_t)v;
    if ((uint64_t)v <= UINT32_MAX) return 1u << shift;
    *--*w = (uint32_t)((uint64_t)v >> 32);
    return 2u << shift;
}

/* An operation number: width 3 (no word) when it is one more than prev, the previous one of its
 * class; else one word for a request this thread started (its high bits are base), two for
 * another's. Returns its flags. */
ML_HOT uint32_t ml_tev_req(uint64_t req, uint64_t prev, uint64_t base, uint32_t **w)
{
    if (req == prev + 1) return 3u << ML_TF_REQ;
    *--*w = (uint32_t)req;
    if ((req & ~(uint64_t)UINT32_MAX) == base) return 1u << ML_TF_REQ;
    *--*w = (uint32_t)(req >> 32);
    return 2u << ML_TF_REQ;
}

/* The event is complete: its fixed part's function and flags, the cursor past it, and it counted,
 * one event and its words (w0 - w, in bytes times 2^30) in committed's words << 32 | events (a
 * writer or a signal handler may copy the buffer any time). */
ML_HOT void ml_tbuf_commit(ml_tbuf_t *b, ml_tfix_t *f, const uint32_t *w0, uint32_t *w, uint32_t fn, uint32_t flags)
{
    f->fn = (uint16_t)fn;
    f->flags = (uint16_t)flags;
    b->fix_at = f + 1;
    b->word_at = w;
    const uint64_t c = __atomic_load_n(&b->committed, __ATOMIC_RELAXED);
    __atomic_store_n(&b->committed, c + ((uint64_t)((const char *)w0 - (char *)w) << 30) + 1, __ATOMIC_RELEASE);
}

/* Encode one event at the end of the thread's buffer (format at the top of trace.c), past the gate. */
ML_HOT void ml_trace_encode(ml_thread_t *t, const ml_tev_t *e)
{
    ml_tfix_t *f;
    uint32_t *w;
    ml_tbuf_t *const b = ml_tbuf_room(t, &f, &w);
    uint32_t *const w0 = w;
    uint32_t flags = e->kind;
    /* a filling's first event has a full time stamp: its last_t0 (ML_TBUF_NO_T0) is no tick
     * (ml_trace_late writes its time stamp and communicator the same way, in a copy of this) */
    const int64_t dt = (int64_t)(e->t0 - b->last_t0);
    const uint64_t dur = e->t1 - e->t0;
    if (ML_LIKELY(dt == (int32_t)dt && dur <= UINT32_MAX)) {
        f->dt = (int32_t)dt;
        f->dur = (uint32_t)dur;
    } else { /* the first event of the filling, or a long gap or call */
        flags |= ML_TF_LONG;
        f->dt = 0;
        f->dur = 0;
        *--w = (uint32_t)e->t0;
        *--w = (uint32_t)(e->t0 >> 32);
        *--w = (uint32_t)dur;
        *--w = (uint32_t)(dur >> 32);
    }
    b->last_t0 = e->t0;
    if (e->comm != b->last_comm) {
        flags |= ML_TF_COMM;
        *--w = e->comm;
        b->last_comm = e->comm;
    }
    /* a call or a completion: its peers, tags, bytes and site when they differ from the previous
     * one's of its function (most loops repeat them); other events: when they are not the
     * defaults */
    const int done = e->kind == ML_TEV_DONE;
    ml_trace_fields_t *last;
    if ((e->kind == ML_TEV_CALL || e->kind == ML_TEV_CALL_DONE || done) && ML_LIKELY(e->fn < ML_NFUNC)) {
        last = &b->last_of[done][e->fn];
    } else { /* kept in the buffer, not built on the stack: an event whose function is known only
              * at run time (a completion) would build them on its way to its own registers */
        b->defaults = ML_TRACE_FIELDS_NONE;
        last = &b->defaults;
    }
    if (e->dst != last->dst) { flags |= ML_TF_DST; *--w = (uint32_t)e->dst; last->dst = e->dst; }
    if (e->src != last->src) { flags |= ML_TF_SRC; *--w = (uint32_t)e->src; last->src = e->src; }
    if (e->stag != last->stag) { flags |= ML_TF_STAG; *--w = (uint32_t)e->stag; last->stag = e->stag; }
    if (e->rtag != last->rtag) { flags |= ML_TF_RTAG; *--w = (uint32_t)e->rtag; last->rtag = e->rtag; }
    /* a byte count: as the function's last nonzero one, no word (a zero is no count: it writes
     * nothing and changes nothing, so a constant 0, a send's receive count, costs no test) */
    if (e->sent != 0) flags |= ml_tev_bytes(e->sent, &last->sent, ML_TF_SENT, &w);
    if (e->recv != 0) flags |= ml_tev_bytes(e->recv, &last->recv, ML_TF_RECV, &w);
    if (e->req != 0) {
        /* calls and completions each number their operations in order: the next one has no word */
        flags |= ml_tev_req(e->req, b->last_req[done], t->trace.req_base, &w);
        b->last_req[done] = e->req;
    }
    if (e->site != last->site) {
        flags |= ML_TF_SITE;
        *--w = e->site;
        last->site = e->site;
    }
    ml_tbuf_commit(b, f, w0, w, e->fn, flags);
}

/* Whether the gate lets an event through: fn a function (call, completion), not a region's path or a
 * counter's id, when is_fn. */
ML_HOT int ml_trace_keeps(uint32_t fn, int is_fn, uint64_t t0)
{
    return !__atomic_load_n(&ml_trace_paused, __ATOMIC_RELAXED) &&
           t0 - __atomic_load_n(&ml_trace_from, __ATOMIC_RELAXED) < __atomic_load_n(&ml_trace_span, __ATOMIC_RELAXED) &&
           !(is_fn && fn < ML_NFUNC && ml_trace_skip[fn]);
}

ML_HOT void ml_trace_emit(ml_thread_t *t, const ml_tev_t *e)
{
    if (ML_UNLIKELY(ml_trace_gated) &&
        !ml_trace_keeps(e->fn, e->kind == ML_TEV_CALL || e->kind == ML_TEV_CALL_DONE || e->kind == ML_TEV_DONE, e->t0))
        return;
    ml_trace_encode(t, e);
}

ML_HOT uint32_t ml_trace_comm_uid(MPI_Comm comm)
{
    if (comm == MPI_COMM_WORLD) return ml_trace_world_uid;
    if (comm == MPI_COMM_NULL) return 0;
    const ml_comm_t *c = ml_comm_get(comm);
    return c ? (uint32_t)c->uid : 0;
}

/* World rank of a peer argument, -1 for none (MPI_PROC_NULL, MPI_ANY_SOURCE, MPI_ROOT). */
ML_HOT int ml_trace_world(MPI_Comm comm, int rank)
{
    if (comm == MPI_COMM_WORLD) return rank < 0 ? -1 : rank; /* most calls: asked first */
    if (rank < 0 || comm == MPI_COMM_NULL) return -1;
    return ml_world_rank(comm, rank);
}

/* The call site of the call being traced (MPILENS_CALLSITE_DEPTH > 0): its number in the
 * thread's table (0: unknown, or one of the function's "other sites"). */
ML_HOT uint32_t ml_trace_site(ml_thread_t *t, int fn) { return t->sites ? ml_site_early(t, fn)->id : 0; }

/* The late_call event of the receive in slot r, whose call event waited there (ml_trace_defer):
 * with its completion (st: its status, recv its bytes; done at t->done_at), or alone (st NULL:
 * the lean path does not see it complete). Encoded as ml_trace_emit encodes a call and a
 * completion, in one fixed part: the call's source, tag and site against the registers of the
 * function's calls, the completion's source, tag and bytes against those of its completions, and
 * the time from the call's start to the completion (format: runtime/spec/rundir.yaml, trace_kind
 * and trace_event). Where the call goes among the thread's events follows from its start: the
 * events a thread writes before a call started before it, those after it after its end. */
ML_HOT void ml_trace_late(ml_thread_t *t, const ml_recv_slot_t *r, const MPI_Status *st, int64_t recv)
{
    ml_tfix_t *f;
    uint32_t *w;
    ml_tbuf_t *const b = ml_tbuf_room(t, &f, &w);
    uint32_t *const w0 = w;
    uint32_t flags = ML_TEV_LATE_CALL;
    const ml_recv_call_t *const made = ml_recv_call_of(t, r); /* the call as it was made */
    const uint64_t seq = r->seq & ~ML_SEQ_LATER;
    const uint64_t at = st != NULL ? t->done_at : made->t0; /* the event's time */
    const uint64_t since = at - made->t0;                  /* 0 alone */
    /* the time stamp and the communicator as ml_trace_emit writes them, but the long form also
     * when the time since the call does not fit its word. One helper for both copies was measured:
     * +4 to +18 instructions per loop of bench/hotpath.py in trace mode (+3 to +7 for the time stamp
     * alone), the compiler's choices in every event; so two copies. */
    const int64_t dt = (int64_t)(at - b->last_t0);
    const int is_long = !(dt == (int32_t)dt && since <= UINT32_MAX);
    if (ML_LIKELY(!is_long)) {
        f->dt = (int32_t)dt;
        f->dur = made->dur;
    } else {
        flags |= ML_TF_LONG;
        f->dt = 0;
        f->dur = 0;
        *--w = (uint32_t)at;
        *--w = (uint32_t)(at >> 32);
        *--w = made->dur;
        *--w = 0;
    }
    b->last_t0 = at;
    if (ml_trace_world_uid != b->last_comm) {
        flags |= ML_TF_COMM;
        *--w = ml_trace_world_uid;
        b->last_comm = ml_trace_world_uid;
    }
    ml_trace_fields_t *const call = &b->last_of[0][r->fn], *const fin = &b->last_of[1][r->fn];
    const int32_t src = st != NULL && st->MPI_SOURCE >= 0 ? st->MPI_SOURCE : -1;
    if (made->src != call->src) { flags |= ML_TF_DST; *--w = (uint32_t)made->src; call->src = made->src; }
    if (st != NULL && src != fin->src) { flags |= ML_TF_SRC; *--w = (uint32_t)src; fin->src = src; }
    if (made->tag != call->rtag) { flags |= ML_TF_STAG; *--w = (uint32_t)made->tag; call->rtag = made->tag; }
    if (st != NULL && st->MPI_TAG != fin->rtag) { flags |= ML_TF_RTAG; *--w = (uint32_t)st->MPI_TAG; fin->rtag = st->MPI_TAG; }
    if (recv != 0) flags |= ml_tev_bytes(recv, &fin->recv, ML_TF_RECV, &w);
    /* the operation number: with a completion, in the completions' order; alone, given (no
     * number is one more than 2^64 - 1) */
    flags |= ml_tev_req(seq, st != NULL ? b->last_req[1] : UINT64_MAX, t->trace.req_base, &w);
    if (st != NULL) b->last_req[1] = seq;
    if (made->site_id != call->site) {
        flags |= ML_TF_SITE;
        *--w = made->site_id;
        call->site = made->site_id;
    }
    if (st != NULL) { /* the time from the call's start to its completion */
        *--w = (uint32_t)since;
        if (ML_UNLIKELY(is_long)) *--w = (uint32_t)(since >> 32);
    }
    ml_tbuf_commit(b, f, w0, w, st != NULL ? r->fn : r->fn | ML_TFN_ALONE, flags);
}

/* The event of one MPI call as a wrapper describes it, made at call site number site. */
ML_HOT void ml_trace_call_at(ml_thread_t *t, const ml_call_t *c, uint32_t site)
{
    ml_tev_t e = {
        .t0 = c->t0,
        .t1 = c->t1,
        .kind = ML_TEV_CALL,
        .fn = (uint32_t)c->fn,
        .comm = ml_trace_comm_uid(c->comm),
        .dst = ml_trace_world(c->comm, c->dst),
        .src = ml_trace_world(c->comm, c->status ? c->status->MPI_SOURCE : c->src),
        .stag = c->stag,
        .rtag = c->status ? c->status->MPI_TAG : c->rtag,
        .sent = c->sent,
        .recv = c->recv,
        .req = c->req,
        .site = site,
    };
    if (ML_UNLIKELY(c->req & ML_SEQ_DONE)) { /* the operation it started completed within it */
        e.kind = ML_TEV_CALL_DONE;
        e.req = c->req & ~ML_SEQ_DONE;
        e.sent = t->trace.done_sent;
        e.recv = t->trace.done_recv;
        ml_trace_emit(t, &e); /* a copy of its own: the plain call's constant fields stay folded */
        return;
    }
    ml_trace_emit(t, &e);
}
ML_HOT void ml_trace_call_inline(ml_thread_t *t, const ml_call_t *c) { ml_trace_call_at(t, c, ml_trace_site(t, c->fn)); }

/* A receive's call (c, its source's world rank src, at call site number site) kept beside its
 * slot (t->trace.later, which ml_lean_post filled just before; t->rc) instead of written: its
 * completion writes both as one late_call event (ml_trace_late), one fixed part fewer per
 * received message. A call too long for the event's 32-bit duration is written now. */
ML_HOT void ml_trace_defer(ml_thread_t *t, const ml_call_t *c, int32_t src, uint32_t site)
{
    /* the gate decides when the call is made (a phase may close before the receive completes):
     * a call left out does not wait, and its completion is an event of its own, gated on its own */
    if (ML_UNLIKELY(ml_trace_gated) && !ml_trace_keeps((uint32_t)c->fn, 1, c->t0)) return;
    ml_recv_slot_t *const r = t->trace.later;
    const uint64_t dur = c->t1 - c->t0;
    if (ML_UNLIKELY(dur > UINT32_MAX)) {
        ml_call_t now = *c;
        now.req &= ~ML_SEQ_LATER;
        ml_trace_call_at(t, &now, site);
        return;
    }
    ml_recv_call_t *const w = ml_recv_call_of(t, r);
    w->t0 = c->t0;
    w->dur = (uint32_t)dur;
    w->src = src;
    w->tag = c->rtag;
    w->site_id = site;
    r->seq |= ML_SEQ_LATER; /* last: a dying process reads the slot as it is (trace.c) */
}

/* ml_trace_call_at for the lean path's receives (MPI_Irecv, MPI_Imrecv), whose event may wait
 * for their completion (ml_lean_post said so: ML_SEQ_LATER); a test the other calls do without. */
ML_HOT void ml_trace_recv_call_at(ml_thread_t *t, const ml_call_t *c, uint32_t site)
{
    if (c->req & ML_SEQ_LATER) {
        ml_trace_defer(t, c, ml_trace_world(c->comm, c->src), site);
        return;
    }
    ml_trace_call_at(t, c, site);
}

/* The completion event of an operation the lean path started on MPI_COMM_WORLD (no communicator
 * facts held; a request entry's or a receive slot's): fn, peer (world rank, -1: none) and seq as it
 * started, st its status or NULL, sent and recv its bytes. */
ML_HOT void ml_trace_done_world(ml_thread_t *t, uint32_t fn, int peer, const MPI_Status *st, int64_t sent,
                                int64_t recv, uint64_t seq)
{
    const ml_tev_t e = {
        .t0 = t->done_at,
        .t1 = t->done_at,
        .kind = ML_TEV_DONE,
        .fn = fn,
        .comm = ml_trace_world_uid,
        .dst = peer,
        .src = st != NULL && st->MPI_SOURCE >= 0 ? st->MPI_SOURCE : -1,
        .rtag = st ? st->MPI_TAG : 0,
        .sent = sent,
        .recv = recv,
        .req = seq,
    };
    ml_trace_emit(t, &e);
}

/* The completion event of operation r (ml_trace_done), inlined into the lean path's completions. */
ML_HOT void ml_trace_done_inline(ml_thread_t *t, const ml_req_t *r, const MPI_Status *st, int64_t sent, int64_t recv)
{
    if (r->comm == NULL && (r->flags & ML_REQ_WORLD)) {
        ml_trace_done_world(t, r->fn, r->peer, st, sent, recv, r->seq);
        return;
    }
    ml_tev_t e = {
        .t0 = t->done_at,
        .t1 = t->done_at,
        .kind = ML_TEV_DONE,
        .fn = r->fn,
        .comm = r->comm ? (uint32_t)r->comm->uid : 0,
        .dst = r->peer,
        .src = -1,
        .rtag = st ? st->MPI_TAG : 0,
        .sent = sent,
        .recv = recv,
        .req = r->seq,
    };
    if (st != NULL && st->MPI_SOURCE >= 0 && r->comm != NULL && r->comm->world != NULL &&
        st->MPI_SOURCE < (r->comm->is_inter ? r->comm->remote_size : r->comm->size)) {
        e.src = r->comm->world[st->MPI_SOURCE];
    }
    ml_trace_emit(t, &e);
}

#endif
