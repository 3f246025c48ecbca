/* Observers: the modes that see MPI calls besides the profile (trace, counters, memory, papi).
 * The generated wrappers call these functions only when the calling thread's `observe` bits are
 * set, so a profile-only run pays one predictable branch. Each mode adds its line to each
 * dispatcher below (the one of ml_observe_call is ml_observe_call_inline in ml_observe.h) and sets
 * its ML_OBS_* bit in ml_g.observers when its init succeeds (the table of modes, modes.c). */
#include "ml.h"
#include "ml_memory.h"
#include "ml_observe.h"
#include "ml_papi.h"
#include "ml_counters.h"

void ml_observers_start(void)
{
    /* threads that attached before the modes decided (the one that called MPI_Init) */
    for (ml_thread_t *t = __atomic_load_n(&ml_g.threads, __ATOMIC_ACQUIRE); t != NULL; t = t->next)
        t->observe = ml_g.observers;
}

void ml_observe_enter(ml_thread_t *t, int fn)
{
    if (t->observe & ML_OBS_MEMORY) ml_memory_enter(fn);
    if (t->observe & ML_OBS_PAPI) ml_papi_enter(t, fn);
}

void ml_observe_leave(ml_thread_t *t, int fn)
{
    if (t->observe & ML_OBS_MEMORY) ml_memory_leave(fn);
    if (t->observe & ML_OBS_PAPI) ml_papi_leave(t, fn);
    if (t->observe & ML_OBS_COUNTERS) ml_spc_leave(t, fn);
}

/* the dispatch is ml_observe_call_inline (trace_event.h), shared with the inlining wrappers */
void ml_observe_call(ml_thread_t *t, const ml_call_t *c) { ml_observe_call_inline(t, c); }
