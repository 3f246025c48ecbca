/* The one merge of per-rank payloads into profile.json (schema ML_SCHEMA_PROFILE).
 *
 * Every rank runs it at MPI_Finalize on its part of the ranks (a reduction: below); mpilens-merge
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

/* The same merge as a reduction (MPI_Finalize's tree, core.c): a merge holds the ranks lo .. lo +
 * nranks - 1, each with its values at its own place; a rank starts one with its own payload, adds
 * the packed merges of its children's parts of the range, and packs the result for its parent, so
 * that no rank holds more than the merged result of its part. The whole range's (lo 0) is written
 * as profile.json, the same bytes as ml_merge_profile of the same payloads. Each call but _free and
 * _write returns 0, or -1 when out of memory or given what does not fit (a payload or part outside
 * the range, a rank given twice, damaged bytes), after which the merge only fails. */
typedef struct table ml_merge_t;
ml_merge_t *ml_merge_new(int lo, int nranks); /* NULL when out of memory */
int ml_merge_add_payload(ml_merge_t *m, const char *payload, size_t len);
int ml_merge_pack(const ml_merge_t *m, char **out, size_t *outlen); /* *out: malloc'd */
int ml_merge_add_packed(ml_merge_t *m, const char *data, size_t len);
/* profile.json of the whole run (lo 0, o->nranks ranks); `bytes`: what the gather moved (tool_cost) */
int ml_merge_write(FILE *f, ml_merge_t *m, const ml_merge_opts_t *o, size_t bytes);
void ml_merge_free(ml_merge_t *m);

#endif
