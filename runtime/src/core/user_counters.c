/* User counters: numbers the application reports (mpilens_counter_add("atoms", n) sums,
 * mpilens_counter_set("efficiency", x) keeps the latest value), kept per thread and per region
 * path like the MPI statistics, so that imbalance can be related to the work each rank did. */
#include <pthread.h>
#include <string.h>

#include "ml.h"
#include "ml_stats.h"
#include "ml_modes.h"

static struct {
    const char *name;
    uint32_t hash;
    int kind;
} names[ML_MAX_COUNTERS];
static uint32_t count;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

uint32_t ml_counter_count(void) { return __atomic_load_n(&count, __ATOMIC_ACQUIRE); }
const char *ml_counter_name(uint32_t id) { return names[id].name; }
int ml_counter_kind(uint32_t id) { return names[id].kind; }

static uint32_t hash_name(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

/* Id of a counter name (interned on first use, with the kind of that use); UINT32_MAX when the
 * table is full. */
static uint32_t counter_id(ml_thread_t *t, const char *name, int kind)
{
    const uint32_t h = hash_name(name);
    struct ml_counter_cached *c = &t->counter_cache[h & (ML_REGION_CACHE - 1)];
    if (c->hash == h && c->id < ml_counter_count() && strcmp(names[c->id].name, name) == 0) return c->id;
    pthread_mutex_lock(&lock);
    uint32_t id = UINT32_MAX;
    for (uint32_t i = 0; i < count; i++)
        if (names[i].hash == h && strcmp(names[i].name, name) == 0) {
            id = i;
            break;
        }
    if (id == UINT32_MAX && count < ML_MAX_COUNTERS) {
        char *copy = strdup(name);
        if (copy != NULL) {
            id = count;
            names[id].name = copy;
            names[id].hash = h;
            names[id].kind = kind;
            ml_stats_name(ML_STATS_NAME_COUNTER, id, (uint32_t)kind, 0, copy);
            __atomic_store_n(&count, count + 1, __ATOMIC_RELEASE);
        }
    }
    pthread_mutex_unlock(&lock);
    if (id != UINT32_MAX) {
        c->hash = h;
        c->id = id;
    }
    return id;
}

static ml_ucount_t *slot(const char *name, int kind)
{
    if (name == NULL) return NULL;
    ml_thread_t *t = ml_tls;
    if (t == NULL) t = ml_thread_attach();
    if (t == NULL) return NULL;
    const uint32_t id = counter_id(t, name, kind);
    if (id == UINT32_MAX) {
        t->region_mismatch++; /* no room for another counter name: reported as dropped */
        return NULL;
    }
    return &t->ucounts[(size_t)t->cur_path * ML_MAX_COUNTERS + id];
}

ML_EXPORT void mpilens_counter_add(const char *name, double value)
{
    ml_ucount_t *u = slot(name, ML_COUNTER_SUM);
    if (u == NULL) return;
    u->value += value;
    u->updates++;
    u->when = ml_now();
    ml_thread_t *t = ml_tls;
    ML_HOOKS(user_counter, t, (uint32_t)((u - t->ucounts) % ML_MAX_COUNTERS), u->value);
}

ML_EXPORT void mpilens_counter_set(const char *name, double value)
{
    ml_ucount_t *u = slot(name, ML_COUNTER_LAST);
    if (u == NULL) return;
    u->value = value;
    u->updates++;
    u->when = ml_now();
    ml_thread_t *t = ml_tls;
    ML_HOOKS(user_counter, t, (uint32_t)((u - t->ucounts) % ML_MAX_COUNTERS), u->value);
}

/* Fortran: CALL MPILENS_COUNTER_ADD('atoms', 1.0D0), the name's length as a hidden argument. */
static void fortran_counter(const char *name, const double *value, size_t len, int set)
{
    char buf[256];
    while (len > 0 && name[len - 1] == ' ') len--;
    if (len >= sizeof buf) len = sizeof buf - 1;
    memcpy(buf, name, len);
    buf[len] = 0;
    if (set)
        mpilens_counter_set(buf, *value);
    else
        mpilens_counter_add(buf, *value);
}

static void f_counter_add(const char *name, const double *value, size_t len) { fortran_counter(name, value, len, 0); }
static void f_counter_set(const char *name, const double *value, size_t len) { fortran_counter(name, value, len, 1); }

#define ML_FORTRAN_ALIAS(impl, name) __typeof__(impl) name __attribute__((alias(#impl), visibility("default")));
ML_FORTRAN_ALIAS(f_counter_add, mpilens_counter_add_)
ML_FORTRAN_ALIAS(f_counter_add, mpilens_counter_add__)
ML_FORTRAN_ALIAS(f_counter_add, MPILENS_COUNTER_ADD)
ML_FORTRAN_ALIAS(f_counter_set, mpilens_counter_set_)
ML_FORTRAN_ALIAS(f_counter_set, mpilens_counter_set__)
ML_FORTRAN_ALIAS(f_counter_set, MPILENS_COUNTER_SET)
