/* A call's way through the profile: entering, timing, counting, leaving.
 * Part of the core's hot path (ml.h includes every part, in order; a part includes the one before
 * it). Internal header, never installed. */
#ifndef ML_TIMING_H
#define ML_TIMING_H

#include "ml_thread.h"

/* ------------------------------------------------------------------------------- timing
 * Every call is timed (two clock reads), except with MPILENS_TIME_SAMPLE=N > 1, where the
 * wrappers of the frequent, short functions (point-to-point, completion, probe, one-sided) take
 * their start time from ml_start: after the first ML_SAMPLE_WARMUP calls of a function (per
 * region and thread, always timed: the first calls are the expensive ones, connection set-up) a
 * call is timed when the thread's countdown runs out; the countdown restarts at a random gap in
 * [1, 2N-1], so each call is timed with probability 1/N whatever the pattern of the calls, and
 * the time of the untimed ones is estimated per function (payload.c). An untimed call has
 * start time 0 (the clock is never 0 after boot). */
/* ML_SAMPLE_WARMUP: runtime/spec/rundir.yaml (the statistics file's readers estimate with it too) */

uint64_t ml_sample_gap(ml_thread_t *t);

/* Under MPILENS_TIME_SAMPLE: whether this call of fn is left untimed (the thread's countdown, past
 * the function's warm-up; ml_start and the lean path's copy). */
ML_HOT int ml_sample_skips(ml_thread_t *t, int fn)
{
    if (t->cur[fn].calls < ML_SAMPLE_WARMUP) return 0;
    if (ML_LIKELY(--t->sample_left != 0)) return 1;
    t->sample_left = (uint32_t)ml_sample_gap(t);
    return 0;
}

ML_HOT uint64_t ml_start(ml_thread_t *t, int fn)
{
    if (ML_UNLIKELY(t->sampling) && ml_sample_skips(t, fn)) return 0;
    return ml_now();
}

/* Right after the MPI call returns: from here until its ml_leave* the thread counts the call, which
 * depth 2 tells a reader of the statistics file of a process killed meanwhile (the call may be
 * counted in part); the compiler barrier keeps the store before the counting's. */
ML_HOT void ml_counting(ml_thread_t *t)
{
    t->depth = 2;
    __asm__ volatile("" ::: "memory");
}

/* End time of a call started with ml_start: 0 when it is not timed. */
ML_HOT uint64_t ml_stop(uint64_t t0) { return ML_LIKELY(t0 != 0) ? ml_now() : 0; }

/* Count a call in s; returns its duration, 0 when it was not timed. */
ML_HOT uint64_t ml_count(ml_thread_t *t, ml_fstat_t *s, uint64_t t0, uint64_t t1)
{
    if (ML_UNLIKELY(t0 == 0)) {
        s->calls++;
        return 0;
    }
    const uint64_t d = t1 - t0;
    if (ML_UNLIKELY(t->sampling) && s->calls >= ML_SAMPLE_WARMUP) {
        s->sampled++;
        s->sampled_ticks += d;
        s->sampled_sq += (double)d * (double)d;
    }
    if (~d > s->min_inv) s->min_inv = ~d;
    if (d > s->max) s->max = d;
    s->calls++;
    s->ticks += d;
    t->last = t1;
    return d;
}

/* The call site of the call being left: the fast path at depth 1 (one entry compared), else
 * callsite.c's walk and lookup. */
ml_site_t *ml_site_slow(ml_thread_t *t, int fn);
/* The site of the call being made when the fast path misses, looked up before the call is counted
 * (its request entry, its trace event); the count then reuses a stack walk made here (callsite.c). */
ml_site_t *ml_site_early_slow(ml_thread_t *t, int fn);
/* The key of a call site on the fast path at depth 1: the return address with the function in the
 * top bits (user-space code lies below 2^48; callsite.c sends a higher address to the slow path).
 * The sites the fast path must not match (found by a stack walk, Python lines) have keys with bit
 * 63 set, so one comparison of keys decides. */
ML_HOT uint64_t ml_site_key(uintptr_t ra, int fn) { return (uint64_t)ra | (uint64_t)fn << 48; }
#define ML_SITE_KEY_SLOW (1ull << 63)
/* The entry of the fast path for key k, whether or not it holds that site. */
ML_HOT ml_site_t *ml_site_slot(const ml_thread_t *t, uint64_t k)
{
    return &t->sites[(uint32_t)(ml_hash(k) >> t->site_shift)];
}
/* Function fn's call site of key k on the fast path: its last site when that holds k, else the
 * table's entry for k (which becomes its last site); NULL when neither holds k. */
ML_HOT ml_site_t *ml_site_cached(ml_thread_t *t, uint64_t k, int fn)
{
    ml_site_t *e = t->site_last[fn];
    if (ML_LIKELY(e->key == k)) return e;
    e = ml_site_slot(t, k);
    if (ML_UNLIKELY(e->key != k)) return NULL;
    t->site_last[fn] = e;
    return e;
}
ML_HOT ml_site_t *ml_site_find(ml_thread_t *t, int fn)
{
    ml_site_t *e = ml_site_cached(t, ml_site_key(t->ra, fn), fn);
    return ML_LIKELY(e != NULL) ? e : ml_site_slow(t, fn);
}
ML_HOT ml_site_t *ml_site_early(ml_thread_t *t, int fn)
{
    ml_site_t *e = ml_site_cached(t, ml_site_key(t->ra, fn), fn);
    return ML_LIKELY(e != NULL) ? e : ml_site_early_slow(t, fn);
}
ML_HOT void ml_site_count(ml_thread_t *t, int fn, uint64_t d, int64_t sent, int64_t recv)
{
    ml_site_t *e = ml_site_find(t, fn);
    e->calls++;
    e->ticks += d;
    if (ML_UNLIKELY(t->sampling)) e->timed += d != 0; /* else every call is timed: timed stays 0 */
    e->sent += sent;
    e->recv += recv;
}
/* Every exported wrapper notes its return address first (a load from the stack). */
#define ML_CALLSITE(t) ((t)->ra = (uintptr_t)__builtin_return_address(0))

ML_HOT int ml_size_bin(int64_t bytes)
{
    return bytes <= 0 ? 0 : 64 - __builtin_clzll((unsigned long long)bytes);
}
/* Function fn's size-histogram bin for a transfer of sent and recv bytes (the larger decides). */
ML_HOT ml_hbin_t *ml_hist_bin(ml_thread_t *t, int fn, int64_t sent, int64_t recv)
{
    return &t->hist[fn * ML_NBINS + ml_size_bin(sent > recv ? sent : recv)];
}

/* After every measured call, successful or not, for the modes that watch call boundaries
 * (ML_OBS_AT_LEAVE; see the observers section below). */
void ml_observe_leave(struct ml_thread *t, int fn);

/* End a measured call that moves no bytes (or whose bytes come at request completion). */
ML_HOT void ml_leave(ml_thread_t *t, int fn, uint64_t t0, uint64_t t1)
{
    const uint64_t d = ml_count(t, &t->cur[fn], t0, t1);
    if (ML_LIKELY(t->sites != NULL)) ml_site_count(t, fn, d, 0, 0);
    if (ML_UNLIKELY(t->observe & ML_OBS_AT_LEAVE)) ml_observe_leave(t, fn);
    t->depth = 0;
}

/* End a measured call that moved bytes: also its message-size bin. */
ML_HOT void ml_leave_bytes(ml_thread_t *t, int fn, uint64_t t0, uint64_t t1, int64_t sent, int64_t recv)
{
    ml_fstat_t *s = &t->cur[fn];
    const uint64_t d = ml_count(t, s, t0, t1);
    s->sent += sent;
    s->recv += recv;
    ml_hbin_t *h = ml_hist_bin(t, fn, sent, recv);
    h->calls++;
    h->ticks += d;
    if (ML_LIKELY(t->sites != NULL)) ml_site_count(t, fn, d, sent, recv);
    if (ML_UNLIKELY(t->observe & ML_OBS_AT_LEAVE)) ml_observe_leave(t, fn);
    t->depth = 0;
}

/* End a measured call that started an operation (its bytes come at its completion): the call site
 * ml_req_track found, if it ran in this call, saves a second lookup. */
ML_HOT void ml_leave_posted(ml_thread_t *t, int fn, uint64_t t0, uint64_t t1)
{
    const uint64_t d = ml_count(t, &t->cur[fn], t0, t1);
    ml_site_t *e = t->site_posted;
    t->site_posted = NULL;
    if (e == NULL && t->sites != NULL) e = ml_site_find(t, fn);
    if (ML_LIKELY(e != NULL)) {
        e->calls++;
        e->ticks += d;
        if (ML_UNLIKELY(t->sampling)) e->timed += d != 0;
    }
    if (ML_UNLIKELY(t->observe & ML_OBS_AT_LEAVE)) ml_observe_leave(t, fn);
    t->depth = 0;
}

#endif
