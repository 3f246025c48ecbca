/* PAPI mode (runtime/src/modes/papi/papi.c): hardware and software counters of the compute between MPI
 * calls, of each region and of the MPI calls, in papi/rank-NNNNNN.json. Internal header.
 *
 * libpapi and libsde are opened with dlopen when the mode is on, never linked. Counters are read
 * in ml_papi_enter/leave (observers, MPILENS_PAPI_READ=calls) and at region boundaries
 * (ml_papi_region, before the current path changes); each thread has its own event set, reached
 * from ml_thread_t.papi (struct ml_papi_thread, private to papi.c; NULL until the thread starts
 * counting). */
#ifndef ML_PAPI_H
#define ML_PAPI_H

#include <stddef.h>

#include "ml.h"

#define ML_PAPI_MAX_EVENTS 8
extern int ml_papi_regions; /* read at region boundaries: papi mode counts in this run */

/* the mode's entry in the table of modes (modes.c) */
int ml_papi_load(char *err, size_t errlen); /* library load: opens libsde so PAPI's sde component finds it */
int ml_papi_init(void);       /* MPI_Init, after the counters mode, before the observers start: the events */
void ml_papi_begin(void);     /* MPI_Init, once measuring: the calling thread starts counting */
void ml_papi_finish(void);    /* MPI_Finalize: last reading, papi/rank-NNNNNN.json */

/* observers (ML_OBS_PAPI) and region boundaries */
void ml_papi_enter(ml_thread_t *t, int fn);
void ml_papi_leave(ml_thread_t *t, int fn);
void ml_papi_region(ml_thread_t *t);
void ml_papi_on_region_leaving(ml_thread_t *t); /* the table's hook */

#endif
