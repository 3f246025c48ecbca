/* Compute intervals (runtime/src/modes/intervals/intervals.c, MPILENS_INTERVALS): for each synchronizing
 * collective on a communicator of all ranks, this rank's compute since the previous one and the
 * time inside it, in ranks/intervals-NNNNNN.bin, for `mpilens model variability`. Internal
 * header, never installed. Turned on by its own setting rather than by MPILENS_MODE; the generated
 * wrappers of the collectives call ml_interval when ml_g.intervals is set. */
#ifndef ML_INTERVALS_H
#define ML_INTERVALS_H

#include "ml.h"

/* the entry in the table of modes (modes.c) */
int ml_intervals_wanted(void);  /* MPILENS_INTERVALS */
int ml_intervals_load(char *err, size_t errlen); /* the library is loaded: the statistics file's area */
int ml_intervals_start(void);   /* MPI_Init: room for MPILENS_MAX_INTERVALS intervals; sets ml_g.intervals */
void ml_intervals_finish(void); /* MPI_Finalize: write the file */
void ml_intervals_emergency(int reason); /* the rank ends without MPI_Finalize: write the file */
void ml_intervals_payload(ml_payload_tail_t *tail); /* the payload's counts of intervals */

int ml_intervals_init(size_t capacity);
void ml_interval(MPI_Comm comm, uint64_t t0, uint64_t t1);
int ml_intervals_write(void);
uint64_t ml_intervals_recorded(void);
uint64_t ml_intervals_dropped(void);

#endif
