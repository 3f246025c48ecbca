/* Table of outstanding requests. A nonblocking or persistent operation is entered when it starts
 * and accounted when a Wait/Test completes it, from whichever thread that is: one table for the
 * process, open addressing, slots claimed with a compare-and-swap (no lock). */
#include <stdlib.h>
#include <string.h>

#include "ml.h"

#define ML_REQ_EMPTY ((uintptr_t)0)
#define ML_REQ_TOMB (~(uintptr_t)0)
#define MAX_PROBE 64u

static ml_req_t *slots;
static size_t mask;
static uint32_t longest_probe; /* lookups never need to look further than inserts went */
static size_t outstanding;

static uintptr_t key_of(MPI_Request r)
{
    uintptr_t k = (uintptr_t)r;
    return k == ML_REQ_EMPTY || k == ML_REQ_TOMB ? k ^ 1u : k;
}

static size_t home_of(uintptr_t k)
{
    return (size_t)(((uint64_t)k * 0x9E3779B97F4A7C15ull) >> 20) & mask;
}

int ml_requests_init(size_t capacity)
{
    size_t cap = 64;
    while (cap < capacity) cap *= 2;
    slots = calloc(cap, sizeof *slots);
    if (slots == NULL) return -1;
    mask = cap - 1;
    return 0;
}

size_t ml_requests_outstanding(void) { return __atomic_load_n(&outstanding, __ATOMIC_RELAXED); }

static ml_req_t *init_entry(ml_req_t *e, ml_thread_t *t, int fn, unsigned flags)
{
    e->fn = (uint16_t)fn;
    /* nonblocking operations start active; persistent ones wait for MPI_Start */
    e->flags = (uint16_t)(flags & ML_REQ_PERSISTENT ? flags : flags | ML_REQ_ACTIVE);
    e->path = t->cur_path;
    e->peer = -1;
    e->sent = e->recv = 0;
    return e;
}

ml_req_t *ml_req_track(ml_thread_t *t, MPI_Request req, int fn, unsigned flags)
{
    if (req == MPI_REQUEST_NULL) return NULL;
    const uintptr_t k = key_of(req);
    const size_t home = home_of(k);
    /* A slot still holding this handle is stale (its completion was not seen, e.g. while
     * measurement was off): reuse it rather than keep two entries for one handle. */
    ml_req_t *stale = ml_req_find(req);
    if (stale != NULL) return init_entry(stale, t, fn, flags);
    for (uint32_t d = 0; d < MAX_PROBE; d++) {
        ml_req_t *e = &slots[(home + d) & mask];
        uintptr_t have = __atomic_load_n(&e->key, __ATOMIC_RELAXED);
        while (have == ML_REQ_EMPTY || have == ML_REQ_TOMB) {
            if (__atomic_compare_exchange_n(&e->key, &have, k, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
                uint32_t cur = __atomic_load_n(&longest_probe, __ATOMIC_RELAXED);
                while (d > cur && !__atomic_compare_exchange_n(&longest_probe, &cur, d, 1, __ATOMIC_RELAXED,
                                                               __ATOMIC_RELAXED)) {}
                __atomic_fetch_add(&outstanding, 1, __ATOMIC_RELAXED);
                return init_entry(e, t, fn, flags);
            }
        }
    }
    t->dropped_requests++;
    return NULL;
}

ml_req_t *ml_req_find(MPI_Request req)
{
    if (req == MPI_REQUEST_NULL) return NULL;
    const uintptr_t k = key_of(req);
    const size_t home = home_of(k);
    const uint32_t reach = __atomic_load_n(&longest_probe, __ATOMIC_RELAXED);
    for (uint32_t d = 0; d <= reach; d++) {
        ml_req_t *e = &slots[(home + d) & mask];
        const uintptr_t have = __atomic_load_n(&e->key, __ATOMIC_ACQUIRE);
        if (have == k) return e;
        if (have == ML_REQ_EMPTY) return NULL;
    }
    return NULL;
}

void ml_req_release(ml_req_t *e)
{
    __atomic_store_n(&e->key, ML_REQ_TOMB, __ATOMIC_RELEASE);
    __atomic_fetch_sub(&outstanding, 1, __ATOMIC_RELAXED);
}

void ml_req_start(ml_thread_t *t, ml_req_t *e)
{
    e->flags |= ML_REQ_ACTIVE;
    e->flags &= (uint16_t)~ML_REQ_CANCELLED;
    e->path = t->cur_path;
}

void ml_req_complete(ml_thread_t *t, ml_req_t *e, const MPI_Status *st)
{
    /* Released already: one array of requests can hold the same handle twice (e.g. Open MPI
     * hands out one static "empty" request for operations that complete at once). */
    if (__atomic_load_n(&e->key, __ATOMIC_ACQUIRE) == ML_REQ_TOMB) return;
    if (!(e->flags & ML_REQ_ACTIVE)) return; /* an inactive persistent request completes at once */
    int64_t sent = e->sent, recv = e->recv;
    int cancelled = 0;
    if ((e->flags & ML_REQ_CANCELLED) && st != NULL) PMPI_Test_cancelled(st, &cancelled);
    if (cancelled) {
        sent = recv = 0;
    } else {
        if (sent == ML_BYTES_FROM_STATUS) sent = st ? ml_status_bytes(st) : 0;
        if (recv == ML_BYTES_FROM_STATUS) recv = st ? ml_status_bytes(st) : 0;
    }
    const int fn = e->fn;
    ml_fstat_t *s = &t->blocks[(size_t)e->path * ML_NFUNC + fn];
    s->sent += sent;
    s->recv += recv;
    /* the transfer's size class; its time is that of the calls that waited for it */
    t->hist[fn * ML_NBINS + ml_size_bin(sent > recv ? sent : recv)].calls++;
    if (e->peer >= 0 && !cancelled) {
        t->matrix[e->peer].messages++;
        t->matrix[e->peer].bytes += sent;
    }
    if (e->flags & ML_REQ_PERSISTENT)
        e->flags &= (uint16_t)~(ML_REQ_ACTIVE | ML_REQ_CANCELLED);
    else
        ml_req_release(e);
}
