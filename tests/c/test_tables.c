/* Unit tests of a thread's request tables (runtime/src/core/ml.h, requests.c), with no MPI job: random
 * sequences of inserts and removals checked against a plain list of what should be there, for
 * handles shaped as the MPI of the build makes them (Open MPI: pointers to request objects; MPICH:
 * 32-bit handles with their kind in the top bits), drawn from a small pool so that the same handle
 * is often in the table several times (MPICH's built-in handles, Open MPI's shared request).
 *
 * The table of operations (open addressing, linear probing, tombstones): every entry is found from
 * its home without crossing an empty slot; entries never move when others are removed (a
 * completion call holds pointers to several); the count of free inserts (rq_room) is exact; it
 * holds at most three quarters of MPILENS_MAX_REQUESTS and then refuses.
 * The receive table (backward-shift removal, no tombstones): every slot is found after any
 * removal; it holds at most three quarters of MPILENS_MAX_REQUESTS.
 * Built with each MPI's compiler (the handles' shape comes from its mpi.h) and the runtime's sources. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ml.h"
#include "unit.h"

#define POOL 48
#define STEPS 20000

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* The key of a handle of the pool, as the MPI of this build makes handles (and the runtime keys:
 * MPICH's int handles are negative, their keys sign-extended). */
static uintptr_t handle(unsigned i)
{
#if defined(MPICH)
    return ml_req_key((MPI_Request)(int32_t)(0xac000000u | (i * 37u + 1u))); /* HANDLE_KIND_DIRECT, MPIR_REQUEST */
#else
    return ml_req_key((MPI_Request)((uintptr_t)0x7f3a12340000ull + (uintptr_t)i * 0x240u)); /* objects of 576 bytes */
#endif
}

/* A key of its own for each i (no two the same), for filling a table. */
static uintptr_t distinct(unsigned i) { return handle(i % POOL) + (uintptr_t)(i / POOL) * 0x1000u; }

/* The handle whose key is k (the lookups take handles). */
static MPI_Request request_of(uintptr_t k) { return (MPI_Request)k; }

/* ---------------------------------------------------------------------- the operations' table */
typedef struct {
    uintptr_t key;
    int32_t id;
} item_t;

static unsigned nonempty(const ml_thread_t *t)
{
    unsigned n = 0;
    for (uint32_t i = 0; i < t->rq_cap; i++) n += t->rq[i].key != ML_REQ_EMPTY;
    return n;
}

static void check_own(const ml_thread_t *t, const item_t *model, unsigned n, unsigned step)
{
    CHECK(t->rq_live == n, "step %u: %u live, %u expected", step, t->rq_live, n);
    if (t->rq == NULL) return;
    CHECK(nonempty(t) == t->rq_cap / 4 * 3 - t->rq_room, "step %u: room %u, %u slots in use of %u", step, t->rq_room,
          nonempty(t), t->rq_cap);
    const uint32_t m = t->rq_cap - 1;
    unsigned reachable = 0, live = 0;
    for (uint32_t i = 0; i < t->rq_cap; i++) {
        const uintptr_t k = t->rq[i].key;
        if (k == ML_REQ_EMPTY || k == ML_REQ_TOMB) continue;
        live++;
        uint32_t j = ml_req_home(t, k);
        while (j != i && t->rq[j].key != ML_REQ_EMPTY) j = (j + 1) & m;
        reachable += j == i;
    }
    CHECK(reachable == live && live == n, "step %u: %u of %u entries reachable from their home", step, reachable, live);
    for (unsigned p = 0; p < POOL; p++) {
        unsigned want = 0, have = 0;
        for (unsigned i = 0; i < n; i++) want += model[i].key == handle(p);
        for (uint32_t i = 0; i < t->rq_cap; i++) have += t->rq[i].key == handle(p);
        const uint32_t at = ml_req_index(t, request_of(handle(p)));
        CHECK(have == want && (at != ML_REQ_NONE) == (want > 0), "step %u: handle %u: %u entries, %u expected, %s",
              step, p, have, want, at != ML_REQ_NONE ? "found" : "not found");
    }
}

static void test_own_table(void)
{
    ml_thread_t *t = calloc(1, sizeof *t);
    item_t model[256];
    unsigned n = 0;
    for (unsigned step = 0; step < STEPS; step++) {
        /* grow to about 150, shrink to 0, grow again: rebuilds in both directions */
        const int grow = (step / 3000) % 2 == 0 ? next() % 100 < 60 : next() % 100 < 40;
        if ((grow || n == 0) && n < 150) {
            const uintptr_t k = handle((unsigned)(next() % POOL));
            ml_req_t *e = ml_req_insert(t, k);
            CHECK(e != NULL && e->key == k, "step %u: insert refused below the limit", step);
            if (e == NULL) break;
            e->peer = (int32_t)step;
            model[n++] = (item_t){k, (int32_t)step};
        } else {
            /* remove one entry of a handle that is there: the one the lookup finds */
            const unsigned which = (unsigned)(next() % n);
            const uint32_t at = ml_req_index(t, request_of(model[which].key));
            CHECK(at != ML_REQ_NONE, "step %u: a handle in the table is not found", step);
            if (at == ML_REQ_NONE) break;
            const int32_t id = t->rq[at].peer;
            /* where each other entry is, before: removals move none of them */
            ml_req_t *where[256];
            for (unsigned i = 0; i < n; i++) where[i] = NULL;
            for (uint32_t i = 0; i < t->rq_cap; i++)
                for (unsigned j = 0; j < n; j++)
                    if (t->rq[i].key == model[j].key && t->rq[i].peer == model[j].id) where[j] = &t->rq[i];
            ml_req_remove_at(t, at);
            unsigned moved = 0, gone = n;
            for (unsigned j = 0; j < n; j++) {
                if (model[j].id == id) {
                    gone = j;
                    continue;
                }
                moved += where[j] == NULL || where[j]->key != model[j].key || where[j]->peer != model[j].id;
            }
            CHECK(gone < n && moved == 0, "step %u: %u entries moved or lost by a removal", step, moved);
            if (gone < n) model[gone] = model[--n];
        }
        if (step % 97 == 0 || n < 3) check_own(t, model, n, step);
    }
    check_own(t, model, n, STEPS);
    free(t->rq_mem);
    free(t);

    /* full at MPILENS_MAX_REQUESTS (256 here): three quarters of it, then refused, and the refused
     * insert changed nothing */
    t = calloc(1, sizeof *t);
    unsigned taken = 0;
    while (taken < 1000 && ml_req_insert(t, distinct(taken)) != NULL)
        taken++;
    CHECK(taken == 192, "%u entries taken at a limit of 256 (192 expected)", taken);
    CHECK(t->rq_live == 192, "a refused insert counted (%u live)", t->rq_live);
    free(t->rq_mem);
    free(t);
}

/* ----------------------------------------------------------------------- the receive table */
static void check_recv(const ml_thread_t *t, const item_t *model, unsigned n, unsigned step)
{
    CHECK(t->rr_live == n, "step %u: %u receives, %u expected", step, t->rr_live, n);
    unsigned found = 0;
    for (unsigned i = 0; i < n; i++) {
        /* each slot of the model, by its handle and then its id among the slots of that handle */
        const uint32_t at = ml_recv_find(t, model[i].key);
        found += at != ML_REQ_NONE && t->rr[at].key == model[i].key;
    }
    CHECK(found == n, "step %u: %u of %u receives found", step, found, n);
    unsigned ids = 0;
    for (uint32_t i = 0; t->rr != NULL && i <= t->rr_mask; i++)
        for (unsigned j = 0; j < n; j++) ids += t->rr[i].key == model[j].key && t->rr[i].seq == (uint64_t)model[j].id;
    CHECK(ids == n, "step %u: %u of %u receives kept their fields", step, ids, n);
}

static void test_recv_table(void)
{
    ml_thread_t *t = calloc(1, sizeof *t);
    item_t model[256];
    unsigned n = 0;
    for (unsigned step = 0; step < STEPS; step++) {
        const int grow = (step / 2500) % 2 == 0 ? next() % 100 < 65 : next() % 100 < 35;
        if ((grow || n == 0) && n < 180) {
            const uintptr_t k = handle((unsigned)(next() % POOL));
            ml_recv_slot_t *r = ml_recv_insert(t, k, NULL, 0, 0, step);
            CHECK(r != NULL, "step %u: receive refused below the limit", step);
            if (r == NULL) break;
            model[n++] = (item_t){k, (int32_t)step};
        } else {
            const unsigned which = (unsigned)(next() % n);
            const uint32_t at = ml_recv_find(t, model[which].key);
            CHECK(at != ML_REQ_NONE, "step %u: a receive in the table is not found", step);
            if (at == ML_REQ_NONE) break;
            const uint64_t id = t->rr[at].seq;
            ml_recv_remove_at(t, at);
            unsigned gone = n;
            for (unsigned j = 0; j < n; j++)
                if ((uint64_t)model[j].id == id) gone = j;
            CHECK(gone < n, "step %u: the removed receive was not one of the model's", step);
            if (gone < n) model[gone] = model[--n];
        }
        if (step % 89 == 0 || n < 3) check_recv(t, model, n, step);
    }
    check_recv(t, model, n, STEPS);
    free(t->rr);
    free(t);

    t = calloc(1, sizeof *t);
    unsigned taken = 0;
    while (taken < 1000 && ml_recv_insert(t, distinct(taken), NULL, 0, 0, taken) != NULL)
        taken++;
    CHECK(taken == 192, "%u receives taken at a limit of 256 (192 expected)", taken);
    free(t->rr);
    free(t);
}

int main(void)
{
    if (ml_requests_init(256) != 0) { /* MPILENS_MAX_REQUESTS=256; below MPI_THREAD_MULTIPLE */
        fprintf(stderr, "test_tables: ml_requests_init failed\n");
        return 2;
    }
    test_own_table();
    test_recv_table();
    return UNIT_END();
}
