/* The table of modes (internal header, never installed).
 *
 * Every measurement besides the profile (trace, counters, memory, mpit, papi, intervals) joins
 * the process's life at the same few points: the library's load, MPI_Init, a thread's first MPI
 * call, MPI_Finalize, and a process that ends without MPI_Finalize. core.c calls them there,
 * for each entry of ml_modes (modes.c) in the order of the table, and only for the modes of this
 * run: wanted (in MPILENS_MODE, or as `wanted` says) for the hooks up to `init`, and on (wanted,
 * and `init` returned 0) for the others. Every hook may be NULL.
 *
 * The per-call hooks are not here: the wrappers reach a mode per call through the ML_OBS_* bits
 * of the thread (observe.c, ml_observe.h), which costs a profile-only run one predictable branch;
 * a loop over this table would cost every call. */
#ifndef ML_MODES_H
#define ML_MODES_H

#include <stddef.h>

#include "ml.h"

typedef struct ml_mode {
    const char *name;  /* as in --mode / MPILENS_MODE (runtime/spec/config.yaml), or its setting's */
    unsigned bit;      /* ML_MODE_* of MPILENS_MODE; 0 when not a --mode (then `wanted` decides) */
    int (*wanted)(void); /* NULL: wanted when MPILENS_MODE has `bit`; else wanted when it returns nonzero */

    /* the library is loaded (constructor, before main): nonzero refuses the configuration,
     * with the reason in err (printed at MPI_Init; the application then runs unprofiled) */
    int (*load)(char *err, size_t errlen);
    /* MPI_Init / MPI_Init_thread (fn: which), in this order: */
    void (*init_enter)(int fn);   /* the wrapper is entered, before MPI_Init's time starts */
    void (*before_mpi_init)(void); /* just before PMPI_Init (C wrappers; timed as MPI_Init's) */
    void (*after_mpi_init)(void);  /* after PMPI_Init, before meta.json is written */
    int (*init)(void);  /* run directory and meta.json written, not measuring yet: start; nonzero:
                         * the mode is off in this process (it has said why, with ml_log) */
    void (*start)(void); /* measuring has begun (on the thread that called MPI_Init) */
    void (*init_leave)(int fn); /* the wrapper returns; called when wanted, even if the runtime
                                 * could not start (a bad setting, no run directory) */
    /* a thread's first MPI call, once MPI_Init is done (including the thread that called it) */
    void (*thread)(ml_thread_t *t);
    /* MPI_Pcontrol(level), levels 0 and 1: nonzero when the mode takes the call for itself (the
     * profile then keeps measuring: MPILENS_TRACE_PCONTROL) */
    int (*pcontrol)(int level);
    /* MPI_Finalize, in this order: */
    void (*finalize_enter)(void); /* the wrapper is entered, before the runtime stops measuring */
    void (*finish)(void);         /* measuring stopped; before the profile is gathered */
    void (*finalize_leave)(void); /* PMPI_Finalize returned */
    /* the process ends without MPI_Finalize (signal, exit, MPI_Abort), after this rank's partial
     * profile is written: reason is ML_END_*. In a signal handler: async-signal-safe code only
     * (write(2), no stdio, no allocation, no lock that the interrupted thread may hold). */
    void (*emergency)(int reason);
} ml_mode_t;

extern const ml_mode_t ml_modes[];
extern const int ml_nmodes;

#endif
