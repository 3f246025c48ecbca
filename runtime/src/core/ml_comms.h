/* What the tool knows of each communicator (comms.c).
 * Part of the core's hot path (ml.h includes every part, in order; a part includes the one before
 * it). Internal header, never installed. */
#ifndef ML_COMMS_H
#define ML_COMMS_H

#include "ml_timing.h"

/* ------------------------------------------------------------------------------- communicators */
/* What the tool knows of a communicator, filled at first use and dropped when it is freed. */
typedef struct ml_comm {
    uintptr_t key;
    int size, rank, remote_size, is_inter;
    int indeg, outdeg;  /* neighbourhood slots; -1 until asked */
    uint64_t null_slots; /* Cartesian: bit i set when buffer slot i's neighbour is MPI_PROC_NULL */
    int *world;         /* world rank of each rank of the peer group (remote group of intercomms) */
    uint64_t uid;       /* the same on every member: names the communicator in traces */
    uint32_t children;  /* communicators created from this one so far */
    int refs;           /* the table's reference while the communicator lives, plus held requests */
} ml_comm_t;

const ml_comm_t *ml_comm_get(MPI_Comm comm);
void ml_comm_forget(MPI_Comm comm);
/* Keep c's facts alive past MPI_Comm_free (an outstanding request's), and let them go. */
void ml_comm_hold(const ml_comm_t *c);
void ml_comm_release(const ml_comm_t *c);
/* A call created newcomm from parent (MPI_COMM_NULL: none): give it its uid. */
void ml_comm_created(MPI_Comm parent, MPI_Comm newcomm);
void ml_comm_neighbors(MPI_Comm comm, int *indeg, int *outdeg, uint64_t *null_slots);
/* Call fn on every communicator known (under the table's lock unless a dying process asks). */
void ml_comm_each(void (*fn)(MPI_Comm comm, const ml_comm_t *c, void *arg), void *arg, int lock);

/* World rank of `rank` of the peer group of comm, or -1. */
ML_HOT int ml_world_rank(MPI_Comm comm, int rank)
{
    if (comm == MPI_COMM_WORLD) return rank;
    if (rank < 0) return -1;
    const ml_comm_t *c = ml_comm_get(comm);
    if (c == NULL || c->world == NULL) return -1;
    const int n = c->is_inter ? c->remote_size : c->size;
    return rank < n ? c->world[rank] : -1;
}

ML_HOT void ml_matrix_add(ml_thread_t *t, MPI_Comm comm, int dest, int64_t bytes)
{
    const int w = ml_world_rank(comm, dest);
    if (w >= 0 && w < ml_g.size) {
        t->matrix[w].messages++;
        t->matrix[w].bytes += bytes;
    }
}

/* Bytes a status reports (receives, file reads and writes), read from the status itself: the
 * fields are public in each ABI, and this is on the path of every receive. */
ML_HOT int64_t ml_status_bytes(const MPI_Status *st)
{
#if defined(OPEN_MPI)
    return (int64_t)st->_ucount;
#elif defined(MPICH)
    return (int64_t)(uint32_t)st->count_lo + ((int64_t)((uint32_t)st->count_hi_and_cancelled >> 1) << 32);
#else
    MPI_Count c = 0;
    if (PMPI_Get_elements_x(st, MPI_BYTE, &c) != MPI_SUCCESS || c == MPI_UNDEFINED) return 0;
    return (int64_t)c;
#endif
}

#endif
