/* The clock: ticks of the time-stamp counter (or ns), read on the hot path.
 * Part of the core's hot path (ml.h includes every part, in order; a part includes the one before
 * it). Internal header, never installed. */
#ifndef ML_CLOCK_H
#define ML_CLOCK_H

#include "ml_base.h"

/* ------------------------------------------------------------------------------- time */
/* Ticks are TSC cycles (or ns with the clock fallback); converted to seconds once, at the end. */
extern int ml_clock_is_tsc;

ML_HOT uint64_t ml_now(void)
{
#if defined(__x86_64__) || defined(__i386__)
    if (ML_LIKELY(ml_clock_is_tsc)) return __rdtsc();
#elif defined(__aarch64__)
    if (ML_LIKELY(ml_clock_is_tsc)) {
        uint64_t v;
        __asm__ volatile("mrs %0, cntvct_el0" : "=r"(v));
        return v;
    }
#endif
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The tick counter itself, for the paths that run only when it is the clock (ml_g.lean_ok). */
ML_HOT uint64_t ml_tick(void)
{
#if defined(__x86_64__) || defined(__i386__)
    return __rdtsc();
#elif defined(__aarch64__)
    uint64_t v;
    __asm__ volatile("mrs %0, cntvct_el0" : "=r"(v));
    return v;
#else
    return ml_now();
#endif
}

/* A clock point: a tick and CLOCK_MONOTONIC read together. The tick is read before and after the
 * clock, and of a few tries the shortest bracket's middle is kept: a preemption between the two
 * readings would otherwise shift every time converted with the pair (traces align ranks and hosts
 * with these pairs). */
void ml_clock_point(uint64_t *tick, uint64_t *ns);
/* Nanoseconds of a tick count, with the rate calibrated against CLOCK_MONOTONIC. */
uint64_t ml_ticks_to_ns(uint64_t ticks);
/* Ticks per nanosecond, as well as measured so far (fixed at MPI_Finalize). */
double ml_ticks_per_ns(void);
uint64_t ml_clock_ns(void);

#endif
