/* Counters mode (counters.c, MPI_T exposure in mpit_expose.c): SPC-style software counters, after
 * Eberius' Open MPI SPCs but observed at the PMPI layer, so on any MPI; its names keep the ml_spc_
 * prefix. Internal header, never installed. (The user counters of the annotation API are
 * core/user_counters.c, part of the profile.)
 *
 * Each thread owns a vector of int64 counters (ml_thread_t.spc) that only it writes, with plain
 * loads and stores (no atomics), and the rest of its state in ml_thread_t.spcx (struct
 * ml_spc_thread, private to counters.c); a background thread sums the vectors of all threads every
 * MPILENS_SNAPSHOT_MS into the rank's live memory-mapped file and appends the deltas to the rank's
 * time series. Groups switched off by MPILENS_COUNTERS cost one predictable branch on a global
 * mask (ml_spc_on). Timers hold raw ticks, converted by readers with the tick rate of the live
 * header / layout.json. */
#ifndef ML_COUNTERS_H
#define ML_COUNTERS_H

#include "ml.h"

enum {
    ML_SPC_CALLS = 1u << 0, ML_SPC_BYTES = 1u << 1, ML_SPC_SIZES = 1u << 2, ML_SPC_EAGER = 1u << 3,
    ML_SPC_QUEUE = 1u << 4, ML_SPC_UNEXPECTED = 1u << 5, ML_SPC_COLLS = 1u << 6, ML_SPC_PEERS = 1u << 7,
    ML_SPC_COMMS = 1u << 8, ML_SPC_PVARS = 1u << 9,
};
extern unsigned ml_spc_on; /* ML_SPC_* groups being counted (0 outside counters mode) */

/* the mode's entry in the table of modes (modes.c) */
int ml_spc_init(void);     /* at MPI_Init, after the run directory exists; says why not */
void ml_spc_thread(ml_thread_t *t); /* a thread's first MPI call: its counter vector */
void ml_spc_finish(void);  /* at MPI_Finalize: last snapshot, per-rank files */

/* observers (ML_OBS_COUNTERS) */
void ml_spc_call(ml_thread_t *t, const ml_call_t *c);
void ml_spc_leave(ml_thread_t *t, int fn);
/* a nonblocking/persistent operation entered (ml_req_track) or completed (ml_req_done) */
void ml_spc_posted(ml_thread_t *t, ml_req_t *e);
void ml_spc_done(ml_thread_t *t, const ml_req_t *e, const MPI_Status *st, int64_t sent, int64_t recv);
/* MPILENS_COUNTERS=unexpected: before a receive is posted, probe for an already-arrived match */
void ml_spc_probe(ml_thread_t *t, int source, int tag, MPI_Comm comm);

/* MPI_T exposure (runtime/src/modes/counters/mpit_expose.c): the fixed counters as pvars mpilens_<name> */
int ml_spc_exposed(void);  /* how many (0 outside counters mode) */
/* name of counter i; kind: 0 counter, 1 timer (ns), 2 level, 3 high watermark, 4 low watermark */
const char *ml_spc_exposed_info(int i, int *kind, const char **desc);
int ml_spc_exposed_on(int i);
int64_t ml_spc_exposed_value(int i);


/* The MPI_T pvar functions with the mpilens_* pvars of counters mode added to the MPI's own
 * (mpit_expose.c). The generated MPI_T_pvar_* wrappers call these instead of PMPI_T_pvar_*
 * (semantics.yaml: inner), timing and counting the application's calls. */
int ml_exposed_T_pvar_get_num(int *num_pvar);
int ml_exposed_T_pvar_get_info(int pvar_index, char *name, int *name_len, int *verbosity, int *var_class, MPI_Datatype *datatype, MPI_T_enum *enumtype, char *desc, int *desc_len, int *bind, int *readonly, int *continuous, int *atomic);
int ml_exposed_T_pvar_get_index(const char *name, int var_class, int *pvar_index);
int ml_exposed_T_pvar_handle_alloc(MPI_T_pvar_session session, int pvar_index, void *obj_handle, MPI_T_pvar_handle *handle, int *count);
int ml_exposed_T_pvar_handle_free(MPI_T_pvar_session session, MPI_T_pvar_handle *handle);
int ml_exposed_T_pvar_start(MPI_T_pvar_session session, MPI_T_pvar_handle handle);
int ml_exposed_T_pvar_stop(MPI_T_pvar_session session, MPI_T_pvar_handle handle);
int ml_exposed_T_pvar_read(MPI_T_pvar_session session, MPI_T_pvar_handle handle, void *buf);
int ml_exposed_T_pvar_readreset(MPI_T_pvar_session session, MPI_T_pvar_handle handle, void *buf);
int ml_exposed_T_pvar_reset(MPI_T_pvar_session session, MPI_T_pvar_handle handle);
int ml_exposed_T_pvar_write(MPI_T_pvar_session session, MPI_T_pvar_handle handle, const void *buf);

#endif
