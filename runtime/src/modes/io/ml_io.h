/* I/O per file (runtime/src/modes/io/io.c, MPILENS_IO, on by default): what each rank did to each file it
 * opened with MPI_File_open, as Darshan's MPI-IO module records it, in io/rank-NNNNNN.bin
 * (runtime/spec/rundir.yaml, file `io`). Internal header, never installed.
 *
 * Only the generated wrappers of the MPI_File_ functions call it (runtime/gen/generate.py gives
 * each its ML_IO_* kind from its name): a run without MPI-IO executes none of this code. The
 * wrappers call ml_io_before before the MPI call (the file and the offset the call starts at) and
 * ml_io_after after a successful one (its time and bytes); MPI_File_open calls ml_io_opened. In
 * trace mode both also write an `io` event (file id, offset) just before the call's own event. */
#ifndef ML_IO_H
#define ML_IO_H

#include "ml.h"

/* What ml_io_before found out for ml_io_after (on the wrapper's stack). */
typedef struct ml_io_pre {
    int32_t file;      /* the file's record, -1: not a recorded file */
    uint32_t kind;     /* ML_IO_* */
    int64_t offset;    /* absolute byte offset of the access, -1: unknown or not an access */
    uintptr_t key;     /* the handle (MPI_File_close forgets it) */
} ml_io_pre_t;

/* the entry in the table of modes (modes.c) */
int ml_io_wanted(void);   /* MPILENS_IO */
/* its records (an io_file of runtime/spec/rundir.yaml and the runtime's own fields) get an area in
 * the rank's statistics file */
int ml_io_load(char *err, size_t errlen); /* at load: its area in the statistics file */
int ml_io_start(void);    /* MPI_Init: the tables; sets ml_g.io */
void ml_io_finish(void);  /* MPI_Finalize: write io/rank-NNNNNN.bin when this rank opened a file */
void ml_io_emergency(int reason); /* the same from an exit path (async-signal-safe) */

/* A successful MPI_File_open: name as given (len: its length, or SIZE_MAX when NUL-terminated;
 * a Fortran name's trailing blanks are dropped). */
void ml_io_opened(ml_thread_t *t, MPI_Comm comm, const char *name, size_t len, int amode, MPI_File fh, uint64_t t0, uint64_t t1);
/* Before a call on fh (offset: the call's explicit offset in etypes, or 0). */
void ml_io_before(ml_io_pre_t *p, uint32_t kind, MPI_File fh, MPI_Offset offset);
/* After the call succeeded: bytes read or written (what it asked for when nonblocking). */
void ml_io_after(ml_thread_t *t, const ml_io_pre_t *p, int fn, uint64_t t0, uint64_t t1, int64_t bytes);

#endif
