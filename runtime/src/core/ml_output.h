/* The profile's files (internal header, never installed): this rank's measurements serialized
 * (payload.c), merged into profile.json at MPI_Finalize (profile.c) with meta.json (meta.c); the
 * partial files of a process that ends early. None of this runs per MPI call. */
#ifndef ML_OUTPUT_H
#define ML_OUTPUT_H

#include <stddef.h>

#include "merge.h"
#include "ml.h"

/* A byte sink: a growing heap buffer, or (fd >= 0 or stream) a fixed buffer flushed with write(2),
 * which is what the signal handler uses. */
typedef struct ml_sink {
    char *data;
    size_t len, cap;
    int fd;
    int failed;
    struct ml_stream_file *stream; /* set: flushed as a piece of a stream (ml_files.h) instead of fd */
} ml_sink_t;

void ml_sink_put(ml_sink_t *s, const void *p, size_t n);
void ml_sink_flush(ml_sink_t *s);
/* JSON pieces into a sink, signal-safe (no allocation, no stdio): the trace's trailer and the
 * call sites' tables are written with them. */
void ml_sink_text(ml_sink_t *s, const char *text);
void ml_sink_uint(ml_sink_t *s, uint64_t v);
void ml_sink_int(ml_sink_t *s, int64_t v);
/* text as a JSON string: quotes, backslashes and tabs escaped, other control characters dropped */
void ml_sink_json_string(ml_sink_t *s, const char *text);

/* Serialize this process's measurements (see runtime/src/core/payload.c for the format). */
void ml_payload_write(ml_sink_t *s, int complete, int reason, int signo);
void ml_partial_dump(int reason, int signo);
/* this rank's statistics so far into path (via tmp), or into its group's container (stream kind,
 * item: ml_files.h); 0 on success */
int ml_payload_to_file(const char *tmp, const char *path, int kind, unsigned item, int reason, int signo);
/* profile.json of the whole run's merge (merge.h); `gathered`: the bytes the reduction moved */
int ml_profile_write(const char *path, ml_merge_t *merged, size_t gathered, int nranks, double gather_s);
/* the bytes that profile.json takes (0: it cannot be made) */
size_t ml_profile_bytes(ml_merge_t *merged, size_t gathered, int nranks, double gather_s);
int ml_meta_write(const char *hosts, int hostlen);
int ml_meta_finish(void);

#endif
