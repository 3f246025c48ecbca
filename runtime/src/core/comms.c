/* Communicator facts the byte expressions and the point-to-point matrix need (size, rank,
 * intercommunicator, world ranks of the peer group), computed once per communicator.
 * Lookups take no lock; a new communicator is added under a mutex, at its first use.
 *
 * The facts are reference counted: the table holds one reference until MPI_Comm_free, and the
 * trace and counters modes take one for each outstanding request (ml_comm_hold), because a
 * request may complete after its communicator was freed (MPI allows it) and its completion still
 * reads the communicator's world ranks and uid. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ml.h"
#include "ml_modes.h"

#define CAP 4096u /* communicators known at once; more are measured without the cache */
#define EMPTY ((uintptr_t)0)
#define TOMB (~(uintptr_t)0)

static struct slot {
    uintptr_t key;
    ml_comm_t *c;
} table[CAP];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static uintptr_t key_of(MPI_Comm comm)
{
    uintptr_t k = (uintptr_t)comm;
    return k == EMPTY || k == TOMB ? k ^ 1u : k;
}

static uint32_t slot_of(uintptr_t k)
{
    return (uint32_t)(ml_hash(k) >> 52) & (CAP - 1);
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

static int by_value(const void *a, const void *b)
{
    return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

/* The default uid: the world ranks of the group in rank order (same on every member; for an
 * intercommunicator, both groups sorted, so that both sides agree). */
static uint64_t group_uid(const ml_comm_t *c, MPI_Comm comm)
{
    const int n = c->is_inter ? c->remote_size : c->size;
    uint64_t h = mix(0x6d70696c656e73ull, (uint64_t)c->is_inter);
    if (!c->is_inter) {
        for (int i = 0; i < n; i++) h = mix(h, (uint64_t)(int64_t)c->world[i]);
        return h;
    }
    MPI_Group local, world;
    PMPI_Comm_group(comm, &local);
    PMPI_Comm_group(ml_g.world, &world);
    int *all = malloc((size_t)(c->size + n) * 2 * sizeof(int));
    if (all == NULL) return h;
    int *ranks = all + c->size + n;
    for (int i = 0; i < c->size; i++) ranks[i] = i;
    PMPI_Group_translate_ranks(local, c->size, ranks, world, all);
    memcpy(all + c->size, c->world, (size_t)n * sizeof(int));
    qsort(all, (size_t)(c->size + n), sizeof(int), by_value);
    for (int i = 0; i < c->size + n; i++) h = mix(h, (uint64_t)(int64_t)all[i]);
    free(all);
    PMPI_Group_free(&local);
    PMPI_Group_free(&world);
    return h;
}

static int fill(ml_comm_t *c, MPI_Comm comm)
{
    PMPI_Comm_size(comm, &c->size);
    PMPI_Comm_rank(comm, &c->rank);
    PMPI_Comm_test_inter(comm, &c->is_inter);
    c->remote_size = 0;
    c->indeg = c->outdeg = -1;
    MPI_Group peers, world;
    if (c->is_inter) {
        PMPI_Comm_remote_size(comm, &c->remote_size);
        PMPI_Comm_remote_group(comm, &peers);
    } else {
        PMPI_Comm_group(comm, &peers);
    }
    const int n = c->is_inter ? c->remote_size : c->size;
    c->world = malloc((size_t)n * 2 * sizeof(int));
    if (c->world == NULL) return -1;
    int *ranks = c->world + n;
    for (int i = 0; i < n; i++) ranks[i] = i;
    PMPI_Comm_group(ml_g.world, &world);
    /* ranks outside MPI_COMM_WORLD (spawned or connected jobs) come back MPI_UNDEFINED */
    PMPI_Group_translate_ranks(peers, n, ranks, world, c->world);
    for (int i = 0; i < n; i++)
        if (c->world[i] == MPI_UNDEFINED) c->world[i] = -1;
    PMPI_Group_free(&peers);
    PMPI_Group_free(&world);
    c->children = 0;
    c->uid = group_uid(c, comm);
    return 0;
}

void ml_comm_created(MPI_Comm parent, MPI_Comm newcomm)
{
    if (newcomm == MPI_COMM_NULL) return;
    ml_comm_t *n = (ml_comm_t *)ml_comm_get(newcomm);
    if (n == NULL || n->is_inter || parent == MPI_COMM_NULL) return;
    ml_comm_t *p = (ml_comm_t *)ml_comm_get(parent);
    if (p == NULL) return;
    /* Every member creates its communicators from the parent in the same (collective) order, so
     * (parent, how many before it, group) names it alike on all of them, and tells apart
     * duplicates of the same group. */
    const uint32_t nth = __atomic_fetch_add(&p->children, 1, __ATOMIC_RELAXED);
    n->uid = mix(mix(p->uid, nth), n->uid);
}

const ml_comm_t *ml_comm_get(MPI_Comm comm)
{
    if (comm == MPI_COMM_NULL) return NULL;
    const uintptr_t k = key_of(comm);
    uint32_t i = slot_of(k);
    for (uint32_t probe = 0; probe < CAP; probe++, i = (i + 1) & (CAP - 1)) {
        const uintptr_t have = __atomic_load_n(&table[i].key, __ATOMIC_ACQUIRE);
        if (have == k) return table[i].c;
        if (have == EMPTY) break;
    }
    /* first use: add it */
    pthread_mutex_lock(&lock);
    struct slot *free_slot = NULL;
    i = slot_of(k);
    for (uint32_t probe = 0; probe < CAP; probe++, i = (i + 1) & (CAP - 1)) {
        const uintptr_t have = table[i].key;
        if (have == k) {
            pthread_mutex_unlock(&lock);
            return table[i].c;
        }
        if (have == TOMB && free_slot == NULL) free_slot = &table[i];
        if (have == EMPTY) {
            if (free_slot == NULL) free_slot = &table[i];
            break;
        }
    }
    ml_comm_t *result = free_slot != NULL ? calloc(1, sizeof *result) : NULL;
    if (result != NULL && fill(result, comm) == 0) {
        result->refs = 1; /* the table's */
        free_slot->c = result;
        __atomic_store_n(&free_slot->key, k, __ATOMIC_RELEASE);
    } else if (result != NULL) {
        free(result);
        result = NULL;
    }
    pthread_mutex_unlock(&lock);
    return result;
}

void ml_comm_hold(const ml_comm_t *c)
{
    if (c != NULL) __atomic_add_fetch(&((ml_comm_t *)c)->refs, 1, __ATOMIC_RELAXED);
}

void ml_comm_release(const ml_comm_t *c)
{
    if (c == NULL || __atomic_sub_fetch(&((ml_comm_t *)c)->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
    free(c->world);
    free((ml_comm_t *)c);
}

void ml_comm_forget(MPI_Comm comm)
{
    if (comm == MPI_COMM_NULL) return;
    const uintptr_t k = key_of(comm);
    const ml_comm_t *known = NULL;
    pthread_mutex_lock(&lock);
    uint32_t i = slot_of(k);
    for (uint32_t probe = 0; probe < CAP; probe++, i = (i + 1) & (CAP - 1)) {
        if (table[i].key == EMPTY) break;
        if (table[i].key == k) {
            __atomic_store_n(&table[i].key, TOMB, __ATOMIC_RELEASE);
            known = table[i].c; /* the table's reference, released below; requests may hold more */
            table[i].c = NULL;
            break;
        }
    }
    pthread_mutex_unlock(&lock);
    ML_HOOKS(comm_freed, comm, known); /* a trace names its members at the end; MPI_T's bound pvars */
    if (known != NULL) ml_comm_release(known);
}

void ml_comm_each(void (*fn)(MPI_Comm comm, const ml_comm_t *c, void *arg), void *arg, int lock_table)
{
    if (lock_table) pthread_mutex_lock(&lock);
    for (uint32_t i = 0; i < CAP; i++) {
        const uintptr_t k = __atomic_load_n(&table[i].key, __ATOMIC_ACQUIRE);
        if (k != EMPTY && k != TOMB && table[i].c != NULL) fn((MPI_Comm)k, table[i].c, arg);
    }
    if (lock_table) pthread_mutex_unlock(&lock);
}

void ml_comm_neighbors(MPI_Comm comm, int *indeg, int *outdeg, uint64_t *null_slots)
{
    ml_comm_t *c = (ml_comm_t *)ml_comm_get(comm);
    if (c == NULL) {
        *indeg = *outdeg = 0;
        *null_slots = 0;
        return;
    }
    if (__atomic_load_n(&c->indeg, __ATOMIC_ACQUIRE) < 0) {
        /* neighbourhood collectives address one buffer slot per neighbour; on a Cartesian grid the
         * slots are, per dimension, the neighbour below then the one above, and at the edge of a
         * non-periodic dimension that neighbour is MPI_PROC_NULL: its slot moves no data */
        int topo = MPI_UNDEFINED, in = 0, out = 0, weighted = 0;
        uint64_t nulls = 0;
        PMPI_Topo_test(comm, &topo);
        if (topo == MPI_CART) {
            int ndims = 0;
            PMPI_Cartdim_get(comm, &ndims);
            in = out = 2 * ndims;
            for (int d = 0; d < ndims && d < 32; d++) {
                int below = MPI_PROC_NULL, above = MPI_PROC_NULL;
                PMPI_Cart_shift(comm, d, 1, &below, &above);
                if (below == MPI_PROC_NULL) nulls |= 1ull << (2 * d);
                if (above == MPI_PROC_NULL) nulls |= 1ull << (2 * d + 1);
            }
        } else if (topo == MPI_GRAPH) {
            PMPI_Graph_neighbors_count(comm, c->rank, &in);
            out = in;
        } else if (topo == MPI_DIST_GRAPH) {
            PMPI_Dist_graph_neighbors_count(comm, &in, &out, &weighted);
        }
        c->outdeg = out;
        c->null_slots = nulls;
        __atomic_store_n(&c->indeg, in, __ATOMIC_RELEASE);
    }
    *indeg = c->indeg;
    *outdeg = c->outdeg;
    *null_slots = c->null_slots;
}
