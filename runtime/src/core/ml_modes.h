/* The table of modes (internal header, never installed).
 *
 * Every measurement besides the profile (trace, counters, memory, mpit, papi, intervals) joins
 * the process's life at the same few points: the library's load, MPI_Init, a thread's first MPI
 * call, MPI_Finalize, and a process that ends without MPI_Finalize. core.c calls them there,
 * for each entry of ml_modes (modes.c) in the order of the table, and only for the modes of this
 * run: wanted (in MPILENS_MODE, or as `wanted` says) for the hooks up to `init`, and on (wanted,
 * and `init` returned 0) for the others. Every hook may be NULL.
 *
 * The profile's own events that a mode follows (a region, a user counter, a request posted or
 * completed, a communicator freed, meta.json and the payload being written) are hooks of the table
 * too: core.c gathers the hooks of the modes that are on into ml_hooks at MPI_Init, and the core
 * calls them through ML_HOOKS, behind one test of the list's length. So no file of core/ names a
 * mode's function (tests/test_runtime_layout.py checks it).
 *
 * The per-call hooks are not here: the wrappers reach a mode per call through the ML_OBS_* bits
 * of the thread (calls/observe.c, calls/ml_observe.h), which costs a profile-only run one
 * predictable branch; a loop over this table would cost every call. */
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

    /* ---- the profile's events: called while the mode is on (after its init, from any thread);
     * each hook tests its own per-thread state (a rank or thread the mode leaves out) */
    /* thread t's current region path is about to change (its counts so far belong to the old one) */
    void (*region_leaving)(ml_thread_t *t);
    /* a region began (begin 1: path is now current) or ended (0: path was just closed) on t; name as
     * the program gave it (NULL at an end without one; ml_region_name(path) has the path's) */
    void (*region)(ml_thread_t *t, int begin, uint32_t path, const char *name);
    /* user counter id of thread t has a new value (mpilens_counter_add/_set) */
    void (*user_counter)(ml_thread_t *t, uint32_t id, double value);
    /* comm is being freed (before the MPI frees it); c: what the tool knew of it, or NULL */
    void (*comm_freed)(MPI_Comm comm, const ml_comm_t *c);
    /* requests, only for the modes that asked for them (ml_req_watch, ML_WATCH_*) or that number
     * operations (a thread's trace.on): an operation was posted or started (e: its entry) */
    void (*req_posted)(ml_thread_t *t, ml_req_t *e); /* may note the time in e */
    /* an operation completed: sent and recv are its bytes, st its status (or NULL); sent and recv
     * are -1 when it left without moving anything (cancelled, or while not measuring) */
    void (*req_done)(ml_thread_t *t, const ml_req_t *e, const MPI_Status *st, int64_t sent, int64_t recv);
    /* the general path takes over receive slot r of the lean path's table of thread t */
    void (*recv_taken)(ml_thread_t *t, const ml_recv_slot_t *r);
    /* the rank's payload is being written: the mode fills its fields of the tail */
    void (*payload_tail)(ml_payload_tail_t *tail);
    /* meta.json is being written: the mode's top-level keys, each line `  "key": value,\n`.
     * Called for every entry of the table, wanted or not (a key the readers expect stays there). */
    void (*meta_json)(FILE *f);
} ml_mode_t;

extern const ml_mode_t ml_modes[];
extern const int ml_nmodes;

/* The event hooks of the modes on, in the table's order (core.c fills it at MPI_Init; empty before). */
#define ML_MAX_HOOKED 8
typedef struct ml_hooks {
    int n_region_leaving, n_region, n_user_counter, n_comm_freed, n_req_posted, n_req_done, n_recv_taken,
        n_payload_tail;
    void (*region_leaving[ML_MAX_HOOKED])(ml_thread_t *);
    void (*region[ML_MAX_HOOKED])(ml_thread_t *, int, uint32_t, const char *);
    void (*user_counter[ML_MAX_HOOKED])(ml_thread_t *, uint32_t, double);
    void (*comm_freed[ML_MAX_HOOKED])(MPI_Comm, const ml_comm_t *);
    void (*req_posted[ML_MAX_HOOKED])(ml_thread_t *, ml_req_t *);
    void (*req_done[ML_MAX_HOOKED])(ml_thread_t *, const ml_req_t *, const MPI_Status *, int64_t, int64_t);
    void (*recv_taken[ML_MAX_HOOKED])(ml_thread_t *, const ml_recv_slot_t *);
    void (*payload_tail[ML_MAX_HOOKED])(ml_payload_tail_t *);
} ml_hooks_t;
extern ml_hooks_t ml_hooks;

/* Call every hook of one event: ML_HOOKS(region, t, 1, path, name). With no mode on that follows
 * the event, its cost is the loop's one test of the list's length; the arguments are not evaluated. */
#define ML_HOOKS(event, ...)                                                                     \
    for (int ml_hook_ = 0; ml_hook_ < ml_hooks.n_##event; ml_hook_++) ml_hooks.event[ml_hook_](__VA_ARGS__)

/* meta.json: every entry's meta_json hook (meta.c) */
void ml_modes_meta_json(FILE *f);

#endif
