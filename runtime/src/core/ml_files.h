/* Where a rank's files go (internal header): one file per rank per stream, or, with
 * MPILENS_FILES=host, chunks in a container shared by the ranks of a host (runtime/src/core/files.c;
 * the format is the `container` of runtime/spec/rundir.yaml, docs/run-directory.md). The writers
 * (trace, memory, counters, mpit, papi, io, maps, intervals, payload) go through this and do not
 * know which it is. Nothing here runs per MPI call. */
#ifndef ML_FILES_H
#define ML_FILES_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <sys/uio.h>

/* At MPI_Init, once the run directory is known; collective on ml_g.comm: MPILENS_FILES decides,
 * and the ranks of each host (MPI_Comm_split_type shared) find their group. */
void ml_files_init(void);
/* From now on write into the containers of the group whose first world rank is first_rank, this
 * rank the place-th of the group (what ml_files_init decides; bench/files_sim.c simulates hosts
 * with it). */
void ml_files_use_group(int first_rank, int place);
/* the path of a file of this rank's group's container of a stream (name: ML_CONTAINER_DATA_PATH or
 * ML_CONTAINER_INDEX_PATH), its folder created; 0 or -1 */
int ml_files_container_path(char *out, size_t n, int kind, unsigned item, const char *name);
/* this rank's place among the ranks of its group (its slot in a file of fixed slots) */
int ml_files_slot(void);
/* 1 when this rank writes into its group's containers */
int ml_files_grouped(void);
/* the group's first world rank (the container's name), this rank when files are per rank */
int ml_files_group(void);

/* FNV-1a (32 bits) of n bytes, continued from h (ML_FNV1A_START for a first piece): the check of
 * a record that a reader verifies (a container's index records, memory records, counters
 * snapshots; python/mpilens/layout.py computes the same) */
#define ML_FNV1A_START 2166136261u
static inline uint32_t ml_fnv1a(uint32_t h, const void *p, size_t n)
{
    for (size_t i = 0; i < n; i++) h = (h ^ ((const unsigned char *)p)[i]) * 16777619u;
    return h;
}

/* An open stream of this rank: its own file, or its chunks in the group's container. */
typedef struct ml_stream_file {
    int kind;        /* ML_STREAM_* */
    unsigned item;   /* the snapshot number for ML_STREAM_SNAPSHOT */
    int fd;          /* the rank's file, or the container's data; -1: closed */
    int index_fd;    /* the container's index; -1: the rank has a file of its own */
    pthread_mutex_t lock; /* one chunk and its index record at a time per process */
    char data_path[4352], index_path[4352]; /* reopened by a signal handler that finds the lock taken */
} ml_stream_t;

/* Open a stream (per-rank: the file is created empty; grouped: the container is opened for
 * appending). 0, or -1 with errno. */
int ml_stream_open(ml_stream_t *s, int kind, unsigned item);
/* Write one piece of the rank's file: one write of the rank's own file, or one chunk and its
 * index record. Async-signal-safe. Returns 0, or -1 when it was not written whole. */
int ml_stream_writev(ml_stream_t *s, const struct iovec *v, int n, uint32_t thread);
int ml_stream_write(ml_stream_t *s, const void *p, size_t n);
void ml_stream_close(ml_stream_t *s);

/* A rank's file written with stdio as it goes (a series, appended to and flushed): per rank,
 * fopen(path, "w"); grouped, a FILE whose every flush is one chunk (it cannot seek). NULL, or
 * errno. Closed with fclose. */
FILE *ml_stream_fopen(int kind, unsigned item);

/* A rank's file written whole under the temporary name tmp: per rank, renamed to path; grouped,
 * put into the container as one chunk and removed (no allocation: signal handlers use it). */
int ml_stream_commit(int kind, unsigned item, const char *tmp, const char *path);

/* A whole file of this rank written at once (JSON or binary written with stdio): per rank, a
 * temporary file renamed into place when closed; grouped, a memory stream written as one chunk. */
typedef struct ml_whole {
    FILE *f;
    int kind;
    unsigned item;
    char *buf;
    size_t len;
    char path[4352], tmp[4400];
} ml_whole_t;

FILE *ml_whole_open(ml_whole_t *w, int kind, unsigned item);
/* 0 when the file was written whole */
int ml_whole_close(ml_whole_t *w);
/* the path of the rank's file of a stream (per rank), or of its group's container */
const char *ml_whole_where(const ml_whole_t *w);

/* Safe files (files.c): every file is written under a base folder the user named, reached from
 * the base's descriptor without following any symbolic link. Paths given here are absolute paths
 * under a base (ml_g.outdir/...); one under no base is refused (EXDEV). */
enum { ML_BASE_RUN, ML_BASE_LIVE, ML_BASE_COUNT };
/* Open a base folder (it exists); 0, or -1 with errno. */
int ml_base_open(int which, const char *path);
/* Create the folders of path (not path itself); 0, or -1 with errno (ELOOP: a link on the way). */
int ml_file_folder(const char *path);
/* A new file (O_EXCL: it must not exist, not even as a link), its folders created; a descriptor
 * or -1 with errno. flags: O_WRONLY or O_RDWR, maybe O_APPEND. */
int ml_file_create(const char *path, int flags, mode_t mode);
/* A file several ranks open (O_CREAT without O_EXCL): kept only when it is a regular file of
 * this user with one link; -1 with errno (EPERM otherwise). */
int ml_file_shared(const char *path, int flags, mode_t mode);
/* Rename a temporary file to its file in the same folder (replacing whatever has that name). */
int ml_file_rename(const char *from, const char *to);
int ml_file_unlink(const char *path);
/* path + ".tmp-" + 16 random hex digits: a temporary name nobody can plant a link at beforehand. */
int ml_file_temp_name(char *out, size_t n, const char *path);
/* A new file (ml_file_create) as a stdio stream for writing; NULL with errno. */
FILE *ml_file_fopen(const char *path);

#endif
