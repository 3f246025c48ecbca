/* The observers' per-call hook after a successful call, inlined by the generated wrappers of the
 * frequent, short functions and called through ml_observe_call (observe.c) by the others.
 * Internal header, never installed. A mode that sees calls adds its line to
 * ml_observe_call_inline here (and to observe.c's ml_observe_enter/leave for the other two
 * hooks), behind its ML_OBS_* bit or its own flag: one predictable branch when it is off. */
#ifndef ML_OBSERVE_H
#define ML_OBSERVE_H

#include "ml.h"
#include "ml_spc.h"
#include "trace_event.h"

/* The observers of a successful call (ML_OBS_AT_CALL). */
ML_HOT void ml_observe_call_inline(ml_thread_t *t, const ml_call_t *c)
{
    if (t->trace.on) ml_trace_call_inline(t, c);
    if (t->observe & ML_OBS_COUNTERS) ml_spc_call(t, c);
}

#endif
