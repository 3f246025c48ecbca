/* The lean path: the wrappers of the frequent point-to-point calls (generated) and of MPI_Wait,
 * MPI_Test and MPI_Waitall (handwritten.c) in the run's common case, chosen once per call by one
 * comparison instead of a test per mode.
 *
 * The common case (ml_g.lean_ok, decided at MPI_Init): the profile, alone or with the trace (no
 * counters, memory or papi mode watching calls), below MPI_THREAD_MULTIPLE, timed by the tick
 * counter, call sites off or at depth 1 (deeper ones walk the stack at each call anyway). While
 * it holds and the run is measuring, ml_g.lean_gen is the odd generation of the statistics (it
 * changes with MPI_Pcontrol(2)); a thread takes the lean path while its own lean_gen equals it,
 * which also says that the thread has caught up with the last reset. Anything else (a nested
 * call, a thread new to MPI, measuring paused, a request the lean completion does not know) goes
 * to the general path of the same wrapper, which handles every case.
 *
 * Each wrapper has three copies of the lean path, with the modes as constants: the profile timing
 * every call, the profile under MPILENS_TIME_SAMPLE, and trace mode. A thread's lean_gen carries
 * the bit of its copy (ML_LEAN_SAMPLED, ML_LEAN_TRACED), so the first copy is chosen by the gate's
 * one comparison and each other one by one more; no copy tests a mode that is off.
 *
 * What a lean call does is what the general path does in this case, in fewer instructions: the
 * return address stays in a register, the call site is looked up once per call and handed to the
 * request's entry, the clock is read without asking which clock it is, and no mode is asked
 * whether it wants to see the call. Every count, time and byte is the same: tests/test_hotpath.py
 * runs the same known traffic through both paths. */
#ifndef ML_LEAN_H
#define ML_LEAN_H

#include "ml.h"
#include "ml_semantics.h"
#include "trace_event.h"

/* The calling thread, marked as inside a wrapper, when this call takes the lean path; NULL
 * otherwise (the caller then runs its general path). *variant: which copy of the lean path the
 * thread takes, the ML_LEAN_SAMPLED and ML_LEAN_TRACED bits of its lean_gen (ml.h). The copy
 * without either, the common case, is chosen by the one comparison that opens the gate; each
 * copy has its modes as constants, so a mode that is off costs no test. */
ML_HOT ml_thread_t *ml_lean_enter(uint32_t *variant)
{
    ml_thread_t *const t = ml_tls;
    /* outside any wrapper (depth 0) and caught up with the lean generation, in one comparison */
    _Static_assert(offsetof(ml_thread_t, lean_gen) == offsetof(ml_thread_t, depth) + 4, "gate: depth, then lean_gen");
    const uint64_t gen = __atomic_load_n(&ml_g.lean_gen, __ATOMIC_RELAXED);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    const int shift = 32;
#else
    const int shift = 0;
#endif
    if (ML_UNLIKELY(t == NULL)) return NULL;
    const uint64_t x = t->gate ^ gen << shift;
    if (ML_LIKELY(x == 0)) {
        *variant = 0;
        t->depth = 1;
        return t;
    }
    /* The other copies: x holds nothing but variant bits when the thread is at depth 0 and caught
     * up with the generation. MPILENS_TIME_SAMPLE's by one comparison; then a run not measuring
     * now (paused, nested, behind a reset) is told apart from trace mode's by one test. */
    uint32_t v = ML_LEAN_SAMPLED;
    if (x != (uint64_t)ML_LEAN_SAMPLED << shift) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        _Static_assert(ML_LEAN_SAMPLED == 1u << 30 && ML_LEAN_TRACED == 1u << 31, "variant bits: the gate's top two");
        if ((x << 1) != 0) return NULL; /* anything but ML_LEAN_TRACED alone */
#else
        if (x != ML_LEAN_TRACED) return NULL;
#endif
        v = ML_LEAN_TRACED;
    }
    *variant = v;
    t->depth = 1;
    return t;
}

/* f(..., traced, sampled) in the copy of the lean path that variant v (ml_lean_enter) names: the
 * common one by one comparison, MPILENS_TIME_SAMPLE's by one more, trace mode's otherwise. */
#define ML_LEAN_COPY(v, f, ...)                                                                              \
    (ML_LIKELY((v) == 0) ? f(__VA_ARGS__, 0, 0) : (v) == ML_LEAN_SAMPLED ? f(__VA_ARGS__, 0, 1) : f(__VA_ARGS__, 1, 0))

/* The return address of the exported wrapper this expands in: the call site at depth 1. */
#define ML_LEAN_RA() ((uintptr_t)__builtin_return_address(0))
/* a blocking call whose events trace mode leaves out (MPILENS_TRACE_EXCLUDE) takes the profile's
 * copy: the generated gates ask this, not trace mode's table by name (one byte per function) */
#define ML_LEAN_UNTRACED(fn) (ml_trace_skip[fn])
/* the traced copy's event of its call, written inline by trace mode (trace_event.h): a receive's may
 * wait for its completion */
#define ml_lean_event ml_trace_call_at
#define ml_lean_recv_event ml_trace_recv_call_at

/* Start and end time of a call: the tick counter, or with MPILENS_TIME_SAMPLE (sampled: a constant
 * of each copy of the lean path) those of ml_start (0 for a call left untimed). */
ML_HOT uint64_t ml_lean_start(ml_thread_t *t, int fn, const int sampled)
{
    /* ml_start, without asking again whether the thread samples nor which clock runs */
    if (sampled && ml_sample_skips(t, fn)) return 0;
    return ml_tick();
}
ML_HOT uint64_t ml_lean_stop(uint64_t t0, const int sampled) { return !sampled || ML_LIKELY(t0 != 0) ? ml_tick() : 0; }

/* The call site of this call: the fast path's (ml_site_cached), else callsite.c's lookup (a new
 * site, or one the fast path must not match). With call sites off the key is masked to 0, the key
 * of the thread's void site, which every function's last site then stays: no test of its own. */
ML_HOT ml_site_t *ml_lean_site(ml_thread_t *t, uintptr_t ra, int fn)
{
    const uint64_t k = ml_site_key(ra, fn) & t->site_key_mask;
    ml_site_t *e = ml_site_cached(t, k, fn);
    if (ML_LIKELY(e != NULL)) return e;
    t->ra = ra;
    return ml_site_slow(t, fn);
}

/* A timed call under MPILENS_TIME_SAMPLE: the sums of the estimate (ml_count says which calls). */
ML_HOT void ml_lean_sampled(ml_fstat_t *s, ml_site_t *site, uint64_t d)
{
    if (s->calls >= ML_SAMPLE_WARMUP) {
        s->sampled++;
        s->sampled_ticks += d;
        s->sampled_sq += (double)d * (double)d;
    }
    site->timed++;
}

/* Count the call in its function's statistics s and its site, as ml_count and ml_site_count do;
 * returns its duration (0 untimed). sampled: as for ml_lean_start. */
ML_HOT uint64_t ml_lean_count(ml_fstat_t *s, ml_site_t *site, uint64_t t0, uint64_t t1, const int sampled)
{
    if (sampled && ML_UNLIKELY(t0 == 0)) { /* sampled, and not this one */
        s->calls++;
        site->calls++;
        return 0;
    }
    const uint64_t d = t1 - t0;
    if (sampled) ml_lean_sampled(s, site, d);
    if (~d > s->min_inv) s->min_inv = ~d;
    if (d > s->max) s->max = d;
    s->calls++;
    s->ticks += d;
    site->calls++;
    site->ticks += d;
    return d;
}

/* The size of a datatype (ml_type_size) for the thread t in hand: a predefined one from its cache. */
ML_HOT int64_t ml_lean_type_size(ml_thread_t *t, MPI_Datatype dt)
{
#if defined(MPICH)
    if (((uint32_t)dt >> 30) == 1u) return (int64_t)(((uint32_t)dt & 0xff00u) >> 8); /* HANDLE_KIND_BUILTIN */
#endif
    const struct ml_type_named *n = ml_type_named_slot(t, dt);
    if (ML_LIKELY(n->type == dt)) return n->size;
    return ml_type_size(dt);
}

/* Bytes moved, in a function's statistics s and a call site (below MPI_THREAD_MULTIPLE: the site
 * of this thread, or of the one that started the operation, which is not in MPI now). */
ML_HOT void ml_lean_add_bytes(ml_fstat_t *s, ml_site_t *site, int64_t sent, int64_t recv)
{
    s->sent += sent;
    s->recv += recv;
    site->sent += sent;
    site->recv += recv;
}

/* A blocking transfer's bytes (the call counted already, in s and site, d its duration): in the
 * statistics, the site and the size histogram (calls and time). */
ML_HOT void ml_lean_bytes(ml_thread_t *t, ml_fstat_t *s, ml_site_t *site, int fn, uint64_t d, int64_t sent,
                          int64_t recv)
{
    ml_lean_add_bytes(s, site, sent, recv);
    ml_hbin_t *h = ml_hist_bin(t, fn, sent, recv);
    h->calls++;
    h->ticks += d;
}

/* An operation completed: its bytes in the statistics s of the function that started it and its
 * site, the size histogram and the destination's row of the matrix. */
ML_HOT void ml_lean_account(ml_thread_t *t, ml_fstat_t *s, ml_site_t *site, int fn, int peer, int64_t sent,
                            int64_t recv)
{
    ml_lean_add_bytes(s, site, sent, recv);
    ml_account_transfer(t, fn, peer, sent, recv);
}

/* A lean entry for req in t's table, written in place (flags: ML_REQ_ACTIVE, and ML_REQ_WORLD for
 * a traced one; seq: its number in the trace, else 0); counted as dropped when the table is full
 * at MPILENS_MAX_REQUESTS. t_post is counters mode's, never on with the lean path. */
ML_HOT void ml_lean_enter_request(ml_thread_t *t, MPI_Request req, ml_site_t *site, int fn, int64_t sent,
                                  int64_t recv, int peer, unsigned flags, uint64_t seq)
{
    ml_req_t *e = ml_req_insert(t, ml_req_key(req));
    if (ML_UNLIKELY(e == NULL)) {
        t->dropped_requests++;
        return;
    }
    e->fn = (uint16_t)fn;
    e->flags = (uint16_t)flags;
    e->stat = ml_stat_index(t, fn);
    e->peer = peer;
    e->sent = sent;
    e->recv = recv;
    e->seq = seq;
    e->comm = NULL;
    e->site = site;
}

/* A nonblocking operation started (sent, recv: bytes, or ML_BYTES_FROM_STATUS; peer: the
 * destination's world rank or -1; comm: its communicator). One the MPI completed inside the call
 * that started it (a shared handle) is accounted now; the others get their entry in the thread's
 * table, written in place, to be settled by the completion call: a receive (nothing sent, no peer)
 * a slot in the receive table, anything else an entry. traced (a constant of each copy of the
 * lean path): trace mode, which numbers the operation and returns its number; an operation on
 * another communicator than MPI_COMM_WORLD then takes ml_req_track_slow (its entry holds the
 * communicator's facts). One completed at once gets ML_SEQ_DONE in its number and its bytes kept
 * in t->trace: the call's event, which the wrapper writes next, then says that it completed (a
 * call_done event: one event instead of two). Returns 0 outside trace mode. */
ML_HOT uint64_t ml_lean_post(ml_thread_t *t, MPI_Request req, ml_site_t *site, int fn, int64_t sent, int64_t recv,
                             int peer, MPI_Comm comm, const int traced)
{
    if (traced && ML_UNLIKELY(comm != MPI_COMM_WORLD))
        return ml_req_track_slow(t, req, fn, 0, sent, recv, peer, comm, site);
    if (ml_req_shared_handle(req)) { /* complete already, and with no status worth reading */
        const int64_t s = sent == ML_BYTES_FROM_STATUS ? 0 : sent, r = recv == ML_BYTES_FROM_STATUS ? 0 : recv;
        ml_lean_account(t, &t->cur[fn], site, fn, peer, s, r);
        if (!traced) return 0;
        t->trace.done_sent = s;
        t->trace.done_recv = r;
        return ml_op_number(t) | ML_SEQ_DONE;
    }
    if (ML_UNLIKELY(req == MPI_REQUEST_NULL)) return 0;
    const uint64_t seq = traced ? ml_op_number(t) : 0;
    if (sent == 0 && recv == ML_BYTES_FROM_STATUS && peer < 0) {
        /* a receive (MPI_Irecv, MPI_Imrecv): a slot in the receive table (ml.h) */
        ml_recv_slot_t *const r = ml_recv_insert(t, ml_req_key(req), site, ml_stat_index(t, fn), (uint32_t)fn, seq);
        if (ML_UNLIKELY(r == NULL)) {
            t->dropped_requests++;
            return seq;
        }
        if (traced && t->trace.defer) { /* its call event waits beside the slot (ml_trace_defer) */
            t->trace.later = r;
            return seq | ML_SEQ_LATER;
        }
        return seq;
    }
    ml_lean_enter_request(t, req, site, fn, sent, recv, peer, traced ? ML_REQ_ACTIVE | ML_REQ_WORLD : ML_REQ_ACTIVE,
                          seq);
    return seq;
}

/* Whether an entry is the lean path's: nonblocking, active, and (trace mode) on MPI_COMM_WORLD
 * with no communicator facts held; not entered while the counters watched requests. */
ML_HOT int ml_lean_entry(const ml_req_t *e) { return (e->flags & ~ML_REQ_WORLD) == ML_REQ_ACTIVE; }

/* Before a completion call: the slot of req's entry in this thread's table (*slot), to be settled
 * after the call by ml_lean_settle, or of its receive slot (with ML_RECV_SLOT; ml_recv_settle);
 * ML_REQ_NONE for a null or shared handle (nothing to settle).
 * Returns 0 when the request is not the lean path's: an entry of another kind (persistent, or
 * entered while another mode watched requests), or of another thread, or none although the handle
 * is not shared (dropped at a full table); the caller then takes its general path. *need: the
 * entry needs its status (a receive's bytes). Once the process has cancelled anything, every
 * completion takes the general path, which asks MPI_Test_cancelled. */
ML_HOT int ml_lean_claim(const ml_thread_t *t, MPI_Request req, uint32_t *slot, int *need)
{
    *slot = ML_REQ_NONE;
    if (req == MPI_REQUEST_NULL || ml_req_shared_handle(req)) return 1;
    const uint32_t r = ml_recv_index(t, req);
    if (r != ML_REQ_NONE) { /* a receive: its slot, which stays put while the call runs (ml.h) */
        *slot = r | ML_RECV_SLOT;
        *need = 1;
        return 1;
    }
    const uint32_t i = ml_req_index(t, req);
    if (i == ML_REQ_NONE || !ml_lean_entry(&t->rq[i])) return 0;
    *slot = i;
    *need = t->rq[i].sent == ML_BYTES_FROM_STATUS || t->rq[i].recv == ML_BYTES_FROM_STATUS;
    return 1;
}

/* After the call completed the entry in slot i (st: its status, or NULL when none was needed):
 * account its bytes, write its completion event (traced: trace mode, t->done_at is when the call
 * returned), take it out of the table. */
ML_HOT void ml_lean_settle(ml_thread_t *t, uint32_t i, const MPI_Status *st, const int traced)
{
    const ml_req_t *e = &t->rq[i];
    const int64_t sent = e->sent != ML_BYTES_FROM_STATUS ? e->sent : ml_status_bytes(st);
    const int64_t recv = e->recv != ML_BYTES_FROM_STATUS ? e->recv : ml_status_bytes(st);
    ml_lean_account(t, &t->blocks[e->stat], e->site, e->fn, e->peer, sent, recv);
    if (traced) ml_trace_done_inline(t, e, st, sent, recv);
    ml_req_remove_at(t, i);
}

/* After the call completed the receive in slot i of the receive table (st: its status; NULL in
 * error: nothing moved): its bytes accounted, its completion event written (traced: as for
 * ml_lean_settle; with its call's, when that waited beside the slot), its slot freed. */
ML_HOT void ml_lean_recv_settle(ml_thread_t *t, uint32_t i, const MPI_Status *st, const int traced)
{
    if (traced) {
        const ml_recv_slot_t *const r = &t->rr[i];
        if (!(r->seq & ML_SEQ_LATER)) {
            if (st != NULL) ml_trace_done_world(t, r->fn, -1, st, 0, ml_status_bytes(st), r->seq);
        } else if (ML_LIKELY(st != NULL)) { /* its call's event with its completion's */
            ml_trace_late(t, r, st, ml_status_bytes(st));
        } else { /* in error: the call's alone */
            ml_trace_late_alone(t, r);
        }
    }
    ml_recv_settle(t, i, st);
}

/* The end of a lean call: the thread leaves the wrapper. */
/* The end of a lean wrapper: t1, the call's end, is how far the thread's statistics go
 * (ml_thread_t.last); under sampling (a constant of each copy) it is 0 when the call was not
 * timed, and kept out. */
ML_HOT void ml_lean_leave(ml_thread_t *t, uint64_t t1, const int sampled)
{
    if (!sampled || t1) t->last = t1;
    t->depth = 0;
}

#endif
