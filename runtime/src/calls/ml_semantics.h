/* Helpers the byte expressions of runtime/spec/semantics.yaml are written with. */
#ifndef ML_SEMANTICS_H
#define ML_SEMANTICS_H

#include "ml.h"

static int64_t ml_type_size_slow(MPI_Datatype dt)
{
    if (dt == MPI_DATATYPE_NULL) return 0;
    int s = 0;
    if (PMPI_Type_size(dt, &s) != MPI_SUCCESS) return 0;
    if (s == MPI_UNDEFINED) {
        MPI_Count c = 0;
        PMPI_Type_size_x(dt, &c);
        return (int64_t)c;
    }
    return s;
}

static int ml_type_predefined(MPI_Datatype dt)
{
    int ni = 0, na = 0, nd = 0, combiner = 0;
    return PMPI_Type_get_envelope(dt, &ni, &na, &nd, &combiner) == MPI_SUCCESS && combiner == MPI_COMBINER_NAMED;
}

/* The hash of a datatype handle that places it in the thread's caches of sizes (ml_hash: Open
 * MPI's predefined types are objects 512 bytes apart, too alike in their low bits for a hash of
 * those bits alone). */
ML_HOT uint64_t ml_type_hash(MPI_Datatype dt) { return ml_hash((uintptr_t)dt); }

/* A predefined datatype's slot in the thread's cache of them (the hash's top three bits). */
ML_HOT struct ml_type_named *ml_type_named_slot(ml_thread_t *t, MPI_Datatype dt)
{
    _Static_assert(sizeof t->type_named / sizeof t->type_named[0] == 8, "three bits of hash");
    return &t->type_named[ml_type_hash(dt) >> 61];
}

/* Size of a datatype, on the path of every send: MPICH's predefined types carry it in the handle;
 * the others' are cached per thread, the predefined ones for good, the derived ones until the
 * next MPI_Type_free (handles are reused). A predefined type whose slot another one holds is kept
 * with the derived ones (two types a program alternates between may share a slot, which is
 * where the hash puts them: the slot follows the address at which the MPI library was loaded).
 * An unused entry's type is 0: no handle. */
ML_HOT int64_t ml_type_size(MPI_Datatype dt)
{
#if defined(MPICH)
    if (((uint32_t)dt >> 30) == 1u) return (int64_t)(((uint32_t)dt & 0xff00u) >> 8); /* HANDLE_KIND_BUILTIN */
#endif
    ml_thread_t *t = ml_tls;
    if (ML_UNLIKELY(t == NULL)) return ml_type_size_slow(dt);
    struct ml_type_named *n = ml_type_named_slot(t, dt);
    if (ML_LIKELY(n->type == dt)) return n->size;
    _Static_assert(sizeof t->type_cache / sizeof t->type_cache[0] == 16, "four bits of hash");
    struct ml_type_cached *c = &t->type_cache[(ml_type_hash(dt) >> 56) & 15u]; /* bits apart from the named slot's */
    const uint32_t gen = __atomic_load_n(&ml_g.type_gen, __ATOMIC_RELAXED);
    if (ML_LIKELY(c->type == dt && c->gen == gen)) return c->size;
    const int64_t size = ml_type_size_slow(dt);
    if (n->type == 0 && dt != MPI_DATATYPE_NULL && ml_type_predefined(dt)) {
        n->type = dt;
        n->size = size;
    } else {
        c->type = dt;
        c->size = size;
        c->gen = gen;
    }
    return size;
}

/* MPI_Type_free: the handle may come back as another type; drop every cached size. */
static inline void ml_type_forget(MPI_Datatype dt)
{
    (void)dt;
    __atomic_fetch_add(&ml_g.type_gen, 1, __ATOMIC_RELAXED);
}

static inline int64_t ml_sum(const int *counts, int n)
{
    int64_t s = 0;
    for (int i = 0; i < n; i++) s += counts[i];
    return s;
}

static inline int64_t ml_sum_c(const MPI_Count *counts, int n)
{
    int64_t s = 0;
    for (int i = 0; i < n; i++) s += counts[i];
    return s;
}

static inline int64_t ml_sumw(const int *counts, const MPI_Datatype *types, int n)
{
    int64_t s = 0;
    for (int i = 0; i < n; i++)
        if (counts[i] != 0) s += (int64_t)counts[i] * ml_type_size(types[i]);
    return s;
}

static inline int64_t ml_sumw_c(const MPI_Count *counts, const MPI_Datatype *types, int n)
{
    int64_t s = 0;
    for (int i = 0; i < n; i++)
        if (counts[i] != 0) s += (int64_t)counts[i] * ml_type_size(types[i]);
    return s;
}

#if ML_FORTRAN
/* Fortran: datatypes are Fortran handles. */
static inline int64_t ml_sumw_f(const int *counts, const MPI_Fint *types, int n)
{
    int64_t s = 0;
    for (int i = 0; i < n; i++)
        if (counts[i] != 0) s += (int64_t)counts[i] * ml_type_size(PMPI_Type_f2c(types[i]));
    return s;
}
#endif

static inline const ml_comm_t *ml_c(MPI_Comm comm)
{
    static const ml_comm_t unknown = {.rank = -1};
    const ml_comm_t *c = ml_comm_get(comm);
    return c ? c : &unknown;
}

/* Neighbourhood collectives: one buffer slot per neighbour (in: received from, out: sent to); on a
 * non-periodic Cartesian grid the slots of MPI_PROC_NULL neighbours move no data and are skipped. */
static inline int ml_slots(MPI_Comm comm, int out, uint64_t *nulls)
{
    int in = 0, o = 0;
    ml_comm_neighbors(comm, &in, &o, nulls);
    return out ? o : in;
}

static inline int ml_live_peers(MPI_Comm comm, int out)
{
    uint64_t nulls = 0;
    const int n = ml_slots(comm, out, &nulls);
    return n - __builtin_popcountll(nulls);
}

/* The sums over the slots of the neighbours that move data, for int and MPI_Count counts, with
 * one datatype (the caller multiplies) or one per slot (SIZE(i)); one body for all of them. */
#define ML_NSUM_BODY(SIZE)                                                                        \
    uint64_t nulls = 0;                                                                           \
    const int n = ml_slots(comm, out, &nulls);                                                    \
    int64_t s = 0;                                                                                \
    for (int i = 0; i < n; i++)                                                                   \
        if ((i >= 64 || !(nulls >> i & 1u)) && counts[i] != 0) s += (int64_t)counts[i] * (SIZE); \
    return s;

static inline int64_t ml_nsum(const int *counts, MPI_Comm comm, int out) { ML_NSUM_BODY(1) }
static inline int64_t ml_nsum_c(const MPI_Count *counts, MPI_Comm comm, int out) { ML_NSUM_BODY(1) }
static inline int64_t ml_nsumw(const int *counts, const MPI_Datatype *types, MPI_Comm comm, int out)
{
    ML_NSUM_BODY(ml_type_size(types[i]))
}
static inline int64_t ml_nsumw_c(const MPI_Count *counts, const MPI_Datatype *types, MPI_Comm comm, int out)
{
    ML_NSUM_BODY(ml_type_size(types[i]))
}
#if ML_FORTRAN
/* Fortran: datatypes are Fortran handles. */
static inline int64_t ml_nsumw_f(const int *counts, const MPI_Fint *types, MPI_Comm comm, int out)
{
    ML_NSUM_BODY(ml_type_size(PMPI_Type_f2c(types[i])))
}
#endif

#define TSIZE(dt) ml_type_size(dt)
#define NPEERS(comm) (ml_c(comm)->is_inter ? ml_c(comm)->remote_size : ml_c(comm)->size)
#define RANK(comm) (ml_c(comm)->rank)
#define ISROOT(root, comm) (ml_c(comm)->is_inter ? (root) == MPI_ROOT : (root) == ml_c(comm)->rank)
#define ISLEAF(root, comm) (ml_c(comm)->is_inter ? (root) >= 0 : (root) != ml_c(comm)->rank)
#define CONTRIB(root, comm) (ml_c(comm)->is_inter ? (root) >= 0 : 1)
#define INPLACE(buf) ((const void *)(buf) == (const void *)MPI_IN_PLACE)
#define SUM(counts, n) _Generic((counts), \
    const MPI_Count *: ml_sum_c, MPI_Count *: ml_sum_c, default: ml_sum)((counts), (n))
#define SUMW(counts, types, n) _Generic((counts), \
    const MPI_Count *: ml_sumw_c, MPI_Count *: ml_sumw_c, default: ml_sumw)((counts), (types), (n))
#define SUMWF(counts, types, n) ml_sumw_f((counts), (types), (n))
/* neighbourhood collectives: peers that move data, and sums over their buffer slots */
#define INPEERS(comm) ml_live_peers((comm), 0)
#define OUTPEERS(comm) ml_live_peers((comm), 1)
#define NSUM_IN(counts, comm) _Generic((counts), \
    const MPI_Count *: ml_nsum_c, MPI_Count *: ml_nsum_c, default: ml_nsum)((counts), (comm), 0)
#define NSUM_OUT(counts, comm) _Generic((counts), \
    const MPI_Count *: ml_nsum_c, MPI_Count *: ml_nsum_c, default: ml_nsum)((counts), (comm), 1)
#define NSUMW_IN(counts, types, comm) _Generic((counts), \
    const MPI_Count *: ml_nsumw_c, MPI_Count *: ml_nsumw_c, default: ml_nsumw)((counts), (types), (comm), 0)
#define NSUMW_OUT(counts, types, comm) _Generic((counts), \
    const MPI_Count *: ml_nsumw_c, MPI_Count *: ml_nsumw_c, default: ml_nsumw)((counts), (types), (comm), 1)
#define NSUMWF_IN(counts, types, comm) ml_nsumw_f((counts), (types), (comm), 0)
#define NSUMWF_OUT(counts, types, comm) ml_nsumw_f((counts), (types), (comm), 1)

#endif
