/* Fortran (mpif.h / use mpi, and mpi_f08) support of the wrappers. A Fortran wrapper passes its arguments
 * unchanged to the MPI library's own Fortran entry point, so the application's numbers cannot
 * change; it converts handles with the f2c functions only to measure. */
#ifndef ML_FORTRAN_H
#define ML_FORTRAN_H

#include "ml.h"

#if ML_FORTRAN /* not with the standard ABI (ml.h) */
_Static_assert(sizeof(MPI_Fint) == sizeof(int), "mpilens assumes a Fortran INTEGER is a C int");

#ifdef MPI_F_STATUS_SIZE
#define ML_F_STATUS_SIZE MPI_F_STATUS_SIZE
#else
#define ML_F_STATUS_SIZE ((int)(sizeof(MPI_Status) / sizeof(MPI_Fint)))
#endif
#define ML_F_STATUS_MAX 32
_Static_assert(ML_F_STATUS_SIZE <= ML_F_STATUS_MAX, "Fortran status larger than expected");

/* The MPI library's Fortran entry point `name` (lowercase, no underscore): pmpi_name_ or another
 * mangling, looked up after mpilens in the library search order. */
void *ml_fortran_resolve(const char *name);

/* A Fortran buffer argument as C sees it: MPI_IN_PLACE and MPI_BOTTOM sentinels translated. */
const void *ml_fbuf(const void *p);

/* Whether a status argument is Fortran's MPI_STATUS_IGNORE / MPI_STATUSES_IGNORE. */
int ml_f_status_ignore(const void *p);
int ml_f_statuses_ignore(const void *p);

/* mpi_f08. Both MPIs export each procedure as an external symbol, mpi_xxx_f08_ (mpi_xxx_f08_large_
 * for MPICH's large-count ones), with the handles (TYPE(MPI_Comm)...: one INTEGER) and the other
 * arguments by reference as in mpif.h, and IERROR OPTIONAL: NULL when the application omits it.
 * Open MPI's call its mpif.h implementation, which calls PMPI_*; MPICH's call PMPI_* directly,
 * except those with choice buffers (mpi_xxx_f08ts_), which call the C MPI_* functions (measured
 * by the C wrappers). The real procedure: pmpi_xxx_f08_ or the next mpi_xxx_f08_. */
void *ml_f08_resolve(const char *sym);
/* mpi_f08 TYPE(MPI_Status): MPI_STATUS(ES)_IGNORE, and its C view */
int ml_f08_status_ignore(const void *p);
int ml_f08_statuses_ignore(const void *p);
void ml_f08_status_f2c(const void *f, MPI_Status *c);

/* Export impl as the mpi_f08 symbol sym. */
#define ML_F08_NAME(impl, sym) __typeof__(impl) sym __attribute__((alias(#impl), visibility("default")));

/* Export impl under the four manglings Fortran compilers use. */
#define ML_FORTRAN_NAMES(impl, lower, upper)                                                   \
    __typeof__(impl) lower##_ __attribute__((alias(#impl), visibility("default")));          \
    __typeof__(impl) lower##__ __attribute__((alias(#impl), visibility("default")));         \
    __typeof__(impl) lower __attribute__((alias(#impl), visibility("default")));             \
    __typeof__(impl) upper __attribute__((alias(#impl), visibility("default")));

#endif /* ML_FORTRAN */

#endif
