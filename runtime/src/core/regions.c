/* User regions: named, nested code sections (mpilens_region_begin/end). Each distinct nesting
 * path ("solve" inside "step") gets a process-wide id; statistics of MPI calls are kept per path. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ml.h"
#include "ml_modes.h"
#include "ml_stats.h"

#define ML_PATH_ROOT 0u
#define ML_PATH_OVERFLOW 1u

typedef struct path_entry {
    uint32_t parent;
    uint32_t hash;
    const char *name;
} path_entry_t;

static path_entry_t *paths;
static uint32_t npaths, max_paths;
static uint32_t *index_slots; /* open addressing over (parent, name) -> path + 1 */
static uint32_t index_mask;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static uint32_t hash_name(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

int ml_regions_init(uint32_t max)
{
    max_paths = max;
    uint32_t cap = 16;
    while (cap < 2 * max) cap *= 2;
    paths = calloc(max, sizeof *paths);
    index_slots = calloc(cap, sizeof *index_slots);
    if (paths == NULL || index_slots == NULL) return -1;
    index_mask = cap - 1;
    paths[ML_PATH_ROOT] = (path_entry_t){UINT32_MAX, 0, ""};
    paths[ML_PATH_OVERFLOW] = (path_entry_t){ML_PATH_ROOT, 0, "(overflow)"};
    npaths = 2;
    return 0;
}

const char *ml_region_name(uint32_t path) { return paths[path].name; }
uint32_t ml_region_parent(uint32_t path) { return paths[path].parent; }
uint32_t ml_region_count(void) { return __atomic_load_n(&npaths, __ATOMIC_ACQUIRE); }

uint32_t ml_region_path(ml_thread_t *t, uint32_t parent, const char *name)
{
    const uint32_t h = hash_name(name) ^ (parent * 0x9E3779B1u);
    /* thread-local cache: repeated regions in a loop take no lock */
    const uint32_t c = h & (ML_REGION_CACHE - 1);
    if (t->region_cache[c].path != 0 && t->region_cache[c].parent == parent && t->region_cache[c].hash == h &&
        strcmp(paths[t->region_cache[c].path].name, name) == 0)
        return t->region_cache[c].path;

    pthread_mutex_lock(&lock);
    uint32_t i = h & index_mask, found = 0;
    for (;; i = (i + 1) & index_mask) {
        const uint32_t p = index_slots[i];
        if (p == 0) break;
        if (paths[p - 1].parent == parent && paths[p - 1].hash == h && strcmp(paths[p - 1].name, name) == 0) {
            found = p - 1;
            break;
        }
    }
    if (found == 0) {
        if (npaths < max_paths) {
            char *copy = strdup(name);
            if (copy != NULL) {
                found = npaths;
                paths[found] = (path_entry_t){parent, h, copy};
                index_slots[i] = found + 1;
                ml_stats_name(ML_STATS_NAME_REGION, found, parent, 0, copy);
                __atomic_store_n(&npaths, npaths + 1, __ATOMIC_RELEASE);
            }
        }
        if (found == 0) {
            found = ML_PATH_OVERFLOW;
            ml_stats_dropped_regions(++ml_g.dropped_regions);
        }
    }
    pthread_mutex_unlock(&lock);
    if (found != ML_PATH_OVERFLOW) t->region_cache[c] = (struct ml_region_cached){parent, h, found};
    return found;
}

static void set_current(ml_thread_t *t, uint32_t path)
{
    ML_HOOKS(region_leaving, t); /* the counts so far belong to the old path */
    if (ML_UNLIKELY(!t->rows_used[path])) ml_stats_rows(t, path); /* first use: its rows reserved */
    t->cur_path = path;
    t->cur = t->blocks + (size_t)path * ML_NFUNC;
}

#define ML_PATH_SKIPPED UINT32_MAX /* a region of a disabled category: begin and end do nothing */

void ml_region_begin(ml_thread_t *t, const char *name)
{
    if (t->region_depth >= ML_MAX_REGION_DEPTH) {
        t->region_mismatch++;
        return;
    }
    const uint32_t path = ml_region_path(t, t->cur_path, name);
    if (ML_UNLIKELY(!t->rows_used[path])) ml_stats_rows(t, path); /* first use, before the region's time starts */
    t->region_stack[t->region_depth].path = path;
    t->region_stack[t->region_depth].t0 = ml_now();
    t->region_depth++;
    set_current(t, path);
    ML_HOOKS(region, t, 1, path, name);
}

static void region_skip(ml_thread_t *t)
{
    if (t->region_depth >= ML_MAX_REGION_DEPTH) {
        t->region_mismatch++;
        return;
    }
    t->region_stack[t->region_depth].path = ML_PATH_SKIPPED;
    t->region_depth++;
}

void ml_region_end(ml_thread_t *t, const char *name)
{
    if (t->region_depth == 0) {
        t->region_mismatch++;
        return;
    }
    const uint32_t path = t->region_stack[t->region_depth - 1].path;
    t->region_depth--;
    if (path == ML_PATH_SKIPPED) return;
    if (path != ML_PATH_OVERFLOW && name != NULL && strcmp(paths[path].name, name) != 0)
        t->region_mismatch++; /* ended out of order: close the innermost one anyway */
    t->rstats[path].visits++;
    t->rstats[path].ticks += ml_now() - t->region_stack[t->region_depth].t0;
    ML_HOOKS(region, t, 0, path, name);
    /* the enclosing region, skipping those of disabled categories */
    uint32_t up = ML_PATH_ROOT;
    for (int d = t->region_depth - 1; d >= 0; d--)
        if (t->region_stack[d].path != ML_PATH_SKIPPED) {
            up = t->region_stack[d].path;
            break;
        }
    set_current(t, up);
}

/* ------------------------------------------------------------------------------- categories */
/* Regions can belong to a category ("mpi-internal", "io", ...) that is switched on and off at
 * run time, so a library can keep permanent annotations that cost one lookup when off. */
#define ML_MAX_CATEGORIES 32
static struct {
    char name[64];
    int enabled;
} categories[ML_MAX_CATEGORIES];
static uint32_t ncategories;

static int category_index(const char *category, int create)
{
    for (uint32_t i = 0; i < __atomic_load_n(&ncategories, __ATOMIC_ACQUIRE); i++)
        if (strcmp(categories[i].name, category) == 0) return (int)i;
    if (!create) return -1;
    pthread_mutex_lock(&lock);
    int found = -1;
    for (uint32_t i = 0; i < ncategories && found < 0; i++)
        if (strcmp(categories[i].name, category) == 0) found = (int)i;
    if (found < 0 && ncategories < ML_MAX_CATEGORIES) {
        found = (int)ncategories;
        snprintf(categories[found].name, sizeof categories[found].name, "%s", category);
        categories[found].enabled = 1;
        __atomic_store_n(&ncategories, ncategories + 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&lock);
    return found;
}

void ml_categories_init(const char *off)
{
    /* MPILENS_CATEGORIES_OFF: comma separated categories that start disabled */
    char name[64];
    while (off && *off) {
        const size_t n = strcspn(off, ",");
        if (n > 0 && n < sizeof name) {
            memcpy(name, off, n);
            name[n] = 0;
            const int i = category_index(name, 1);
            if (i >= 0) categories[i].enabled = 0;
        }
        off += n + (off[n] == ',');
    }
}

/* ------------------------------------------------------------------------------- public API */
static ml_thread_t *annotation_thread(void)
{
    ml_thread_t *t = ml_tls;
    if (t == NULL) t = ml_thread_attach();
    return t;
}

ML_EXPORT void mpilens_region_begin(const char *name)
{
    ml_thread_t *t = annotation_thread();
    if (t != NULL && name != NULL) ml_region_begin(t, name);
}

ML_EXPORT void mpilens_region_end(const char *name)
{
    ml_thread_t *t = annotation_thread();
    if (t != NULL) ml_region_end(t, name);
}

ML_EXPORT void mpilens_region_begin_in(const char *category, const char *name)
{
    ml_thread_t *t = annotation_thread();
    if (t == NULL || name == NULL) return;
    const int c = category ? category_index(category, 1) : -1;
    if (c >= 0 && !__atomic_load_n(&categories[c].enabled, __ATOMIC_RELAXED))
        region_skip(t);
    else
        ml_region_begin(t, name);
}

ML_EXPORT int mpilens_category_enable(const char *category, int enabled)
{
    const int c = category ? category_index(category, 1) : -1;
    if (c < 0) return -1;
    return __atomic_exchange_n(&categories[c].enabled, enabled != 0, __ATOMIC_RELAXED);
}

/* Fortran: CALL MPILENS_REGION_BEGIN('name'), the length comes as a hidden argument. */
static void fortran_region(const char *name, size_t len, int begin)
{
    char buf[256];
    while (len > 0 && name[len - 1] == ' ') len--;
    if (len >= sizeof buf) len = sizeof buf - 1;
    memcpy(buf, name, len);
    buf[len] = 0;
    if (begin)
        mpilens_region_begin(buf);
    else
        mpilens_region_end(buf);
}

static void f_region_begin(const char *name, size_t len) { fortran_region(name, len, 1); }
static void f_region_end(const char *name, size_t len) { fortran_region(name, len, 0); }

#define ML_FORTRAN_ALIAS(impl, name) __typeof__(impl) name __attribute__((alias(#impl), visibility("default")));
ML_FORTRAN_ALIAS(f_region_begin, mpilens_region_begin_)
ML_FORTRAN_ALIAS(f_region_begin, mpilens_region_begin__)
ML_FORTRAN_ALIAS(f_region_begin, MPILENS_REGION_BEGIN)
ML_FORTRAN_ALIAS(f_region_end, mpilens_region_end_)
ML_FORTRAN_ALIAS(f_region_end, mpilens_region_end__)
ML_FORTRAN_ALIAS(f_region_end, MPILENS_REGION_END)
