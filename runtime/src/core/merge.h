/* The one merge of per-rank payloads into profile.json (schema ML_SCHEMA_PROFILE).
 *
 * Rank 0 runs it at MPI_Finalize on the payloads it gathered (profile.c); mpilens-merge
 * (merge_main.c) runs it on the payload files of a run that did not reach MPI_Finalize and on
 * MPI_Pcontrol snapshots, for `mpilens report`. It uses no MPI and no state of the runtime: what it
 * needs is in the payloads (their layout: runtime/spec/rundir.yaml) and in the options. */
#ifndef ML_MERGE_H
#define ML_MERGE_H

#include <stddef.h>
#include <stdio.h>

typedef struct ml_merge_opts {
    int nranks;          /* ranks of the job: missing ones are null in every per-rank list */
    long time_sample;    /* MPILENS_TIME_SAMPLE: > 1 adds the estimates' keys */
    int intervals;       /* MPILENS_INTERVALS was on: add "intervals" */
    const char *version; /* tool version ("tool" key); NULL: unknown, not written */
    const char *mpi;     /* MPI flavour the runtime was built for; NULL: unknown, not written */
    double gather_s;     /* the finalize gather's time ("tool_cost"); < 0: not written */
} ml_merge_opts_t;

/* Check that data[0..len) starts with one whole payload; returns its length, or 0 with a reason
 * ("truncated: ...", "not an mpilens payload ...") in why. */
size_t ml_payload_check(const char *data, size_t len, char *why, size_t whylen);

/* Write the profile of the concatenated payloads to f; 0 on success (the stream's errors are the
 * caller's to check). Payloads that do not parse are skipped (check them first to name them). */
int ml_merge_profile(FILE *f, const char *payloads, size_t len, const ml_merge_opts_t *o);

#endif
