/* MPI_T (runtime/src/modes/mpit/mpit.c): cvars set at MPI_Init (MPILENS_CVARS) and when a communicator is
 * named (MPILENS_COMM_CVARS), and the mpit mode's pvar session (mpit/rank-NNNNNN.jsonl). Internal
 * header, never installed. The MPI_T helpers it shares with the small tools are in
 * mpit_common.h. None of these runs per MPI call.
 *
 * Its entry in the table of modes is the mpit mode, but it is wanted (ml_mpit_wanted) whenever
 * cvars are to be set, in any mode: its hooks then set and read back the cvars, and start the pvar
 * session only in mpit mode. */
#ifndef ML_MPIT_H
#define ML_MPIT_H

#include <stdio.h>

#include "ml.h"

/* the mode's entry in the table of modes (modes.c) */
int ml_mpit_wanted(void);            /* cvars to set, or mpit mode (from the configuration) */
void ml_mpit_before_init(void);      /* before PMPI_Init: check and set cvars (may clear config_ok) */
void ml_mpit_after_init(void);       /* after PMPI_Init: read back what was set (before meta.json) */
int ml_mpit_init(void);              /* MPI_Init: mpit mode's pvar session and sampler thread */
void ml_mpit_finish(void);           /* before the profile is gathered at MPI_Finalize */

void ml_mpit_comm_named(MPI_Comm comm); /* after MPI_Comm_set_name, when ml_g.mpit_comms */
void ml_mpit_comm_freed(MPI_Comm comm); /* before MPI_Comm_free: drop handles bound to comm */
void ml_mpit_region(int begin, const char *name); /* region boundaries, when ml_g.mpit */
void ml_mpit_meta_json(FILE *f);     /* meta.json's "cvars_set" (the table's meta_json hook) */
/* the table's event hooks: a region's boundary, a communicator freed */
void ml_mpit_on_region(ml_thread_t *t, int begin, uint32_t path, const char *name);
void ml_mpit_on_comm_freed(MPI_Comm comm, const ml_comm_t *c);

#endif
