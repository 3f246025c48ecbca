/* The merge of per-rank payloads into profile.json (see merge.h). No analysis happens here:
 * values are laid out per rank, as measured; statistics across ranks are the Python side's job.
 * Functions, regions and user counters are matched across ranks by name (each payload names its
 * own), so the merge needs no table of the runtime build. */
#include "merge.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "ml_rundir.h"

/* ------------------------------------------------------------------------------- reading */
typedef struct cursor {
    const char *p, *end;
    int bad;
} cursor_t;

static void take(cursor_t *c, void *out, size_t n)
{
    if (c->bad || (size_t)(c->end - c->p) < n) {
        c->bad = 1;
        memset(out, 0, n);
        return;
    }
    memcpy(out, c->p, n);
    c->p += n;
}
static uint32_t u32(cursor_t *c) { uint32_t v; take(c, &v, 4); return v; }
static const char *str(cursor_t *c, uint16_t *len)
{
    take(c, len, 2);
    if (c->bad || (size_t)(c->end - c->p) < *len) {
        c->bad = 1;
        *len = 0;
        return "";
    }
    const char *s = c->p;
    c->p += *len;
    return s;
}
/* Skip a table of n records of `record` bytes, each followed by a string when named. */
static void skip_table(cursor_t *c, size_t record, int named)
{
    const uint32_t n = u32(c);
    if (!named) {
        if ((size_t)(c->end - c->p) < (size_t)n * record) c->bad = 1;
        else c->p += (size_t)n * record;
        return;
    }
    for (uint32_t i = 0; i < n && !c->bad; i++) {
        if ((size_t)(c->end - c->p) < record) c->bad = 1;
        else c->p += record;
        uint16_t l;
        str(c, &l);
    }
}

typedef struct rankrec {
    int present;
    int unknown_counted; /* the payload's head counts receives of unknown size (version 4 on) */
    ml_payload_head_t head;
    ml_payload_tail_t tail;
    const char *host;
    uint16_t hostlen;
    /* each positioned at its table's count (the payload's order: runtime/spec/rundir.yaml) */
    cursor_t regions, functions, stats, sizes, matrix, counter_names, counters;
    uint32_t callsite_depth;         /* 0: none recorded (and in payloads of version 2) */
    cursor_t modules, sites, frames; /* call sites; empty in payloads of version 2 */
} rankrec_t;

/* Parse one payload at c (which moves past it) into r; -1 with a reason when it is not whole. */
static int parse_payload(cursor_t *c, rankrec_t *r, char *why, size_t whylen)
{
    const size_t avail = (size_t)(c->end - c->p);
    if (avail < 4 && memcmp(c->p, ML_MAGIC_PAYLOAD, avail) == 0) { /* cut within its magic */
        snprintf(why, whylen, "truncated: %zu bytes, less than the head of a payload", avail);
        return -1;
    }
    if (avail < 4 || memcmp(c->p, ML_MAGIC_PAYLOAD, 4) != 0) { /* "MLPA": a payload of some version */
        snprintf(why, whylen, "not an mpilens payload (bad magic)");
        return -1;
    }
    const int v2 = avail >= ML_MAGIC_LEN && memcmp(c->p, ML_MAGIC_PAYLOAD_V2, ML_MAGIC_LEN) == 0;
    const int v3 = avail >= ML_MAGIC_LEN && memcmp(c->p, ML_MAGIC_PAYLOAD_V3, ML_MAGIC_LEN) == 0;
    if (avail >= ML_MAGIC_LEN && !v2 && !v3 && memcmp(c->p, ML_MAGIC_PAYLOAD, ML_MAGIC_LEN) != 0) {
        snprintf(why, whylen, "a payload of another version (magic %.8s; this mpilens reads %s)", c->p,
                 ML_MAGIC_PAYLOAD);
        return -1;
    }
    /* the heads of versions 2 and 3 end before recv_unknown, which they did not count */
    const size_t head_len = v2 || v3 ? offsetof(ml_payload_head_t, recv_unknown) : sizeof r->head;
    memset(&r->head, 0, sizeof r->head);
    r->unknown_counted = !(v2 || v3);
    take(c, &r->head, head_len);
    if (c->bad) {
        snprintf(why, whylen, "truncated: %zu bytes, less than the head of a payload", avail);
        return -1;
    }
    const uint64_t total = r->head.total_length;
    if (total > avail) {
        snprintf(why, whylen, "truncated: %zu of %llu bytes", avail, (unsigned long long)total);
        return -1;
    }
    if (total < head_len + sizeof r->tail) {
        snprintf(why, whylen, "damaged head (length %llu)", (unsigned long long)total);
        return -1;
    }
    cursor_t body = {c->p, c->p - head_len + total, 0};
    c->p = body.end;
    r->host = str(&body, &r->hostlen);
    r->regions = body;
    skip_table(&body, sizeof(ml_payload_region_t), 1);
    r->functions = body;
    skip_table(&body, sizeof(ml_payload_function_t), 1);
    r->stats = body;
    skip_table(&body, sizeof(ml_payload_stat_t), 0);
    r->sizes = body;
    skip_table(&body, sizeof(ml_payload_size_t), 0);
    r->matrix = body;
    skip_table(&body, sizeof(ml_payload_peer_t), 0);
    r->counter_names = body;
    skip_table(&body, sizeof(ml_payload_counter_name_t), 1);
    r->counters = body;
    skip_table(&body, sizeof(ml_payload_counter_t), 0);
    static const uint32_t none = 0;
    const cursor_t empty = {(const char *)&none, (const char *)&none + 4, 0};
    r->modules = r->sites = r->frames = empty;
    r->callsite_depth = 0;
    if (!v2) {
        ml_payload_callsites_t cs;
        take(&body, &cs, sizeof cs);
        r->callsite_depth = cs.depth;
        r->modules = body;
        skip_table(&body, sizeof(ml_payload_module_t), 1);
        r->sites = body;
        skip_table(&body, sizeof(ml_payload_site_t), 0);
        r->frames = body;
        skip_table(&body, sizeof(ml_payload_frame_t), 0);
    }
    take(&body, &r->tail, sizeof r->tail);
    if (body.bad) {
        snprintf(why, whylen, "truncated at byte %zu of %llu", (size_t)(body.end - (c->p - total)),
                 (unsigned long long)total);
        return -1;
    }
    if (memcmp(r->tail.end, ML_MAGIC_PAYLOAD_END, ML_MAGIC_LEN) != 0 || body.p != body.end) {
        snprintf(why, whylen, "missing end marker");
        return -1;
    }
    r->present = 1;
    return 0;
}

size_t ml_payload_check(const char *data, size_t len, char *why, size_t whylen)
{
    cursor_t c = {data, data + len, 0};
    rankrec_t r;
    memset(&r, 0, sizeof r);
    return parse_payload(&c, &r, why, whylen) == 0 ? (size_t)(c.p - data) : 0;
}

/* ------------------------------------------------------------------------------- merging */
typedef struct name {
    const char *s;
    uint16_t len;
} name_t;

static int name_eq(name_t a, const char *s, uint16_t len) { return a.len == len && memcmp(a.s, s, len) == 0; }

typedef struct region {
    name_t name;
    uint32_t parent;
    uint64_t *visits, *ns; /* per rank */
} region_t;

typedef struct function {
    name_t name;
    uint8_t cls;
    uint64_t *hist_calls, *hist_ns; /* [ML_SIZE_BINS][nranks], allocated when the function has one */
} function_t;

typedef struct series { /* one function (in one region, or overall): values per rank */
    uint32_t region;      /* UINT32_MAX: the whole run */
    uint32_t fn;          /* index in table.functions */
    uint64_t *calls, *ns, *min, *max, *sent, *recv;
    uint64_t *timed; /* calls timed (MPILENS_TIME_SAMPLE) */
    double *var;     /* variance of the estimated ns (MPILENS_TIME_SAMPLE) */
} series_t;

typedef struct counter {
    name_t name;
    uint8_t kind;
} counter_t;

typedef struct cvalue {
    uint32_t region, counter;
    double *value; /* NaN: the rank never touched it */
    uint64_t *when;
} cvalue_t;

typedef struct gframe {
    uint32_t module; /* index in table.modules; UINT32_MAX: unknown */
    uint64_t vaddr;
} gframe_t;

typedef struct gsite { /* one call site of one function, matched across ranks by its frames */
    uint32_t fn;      /* index in table.functions */
    uint32_t nframes, frame0; /* its frames: table.frames[frame0 .. frame0 + nframes) */
    uint64_t hash;
    uint64_t *calls, *ns, *sent, *recv; /* per rank */
} gsite_t;

/* What the profile says of one rank beside its functions: its head, tail, host and matrix row. */
typedef struct rankinfo {
    int present;
    int unknown_counted;
    ml_payload_head_t head;
    ml_payload_tail_t tail;
    name_t host;
    uint32_t peer0, npeers; /* its row of the matrix: table.peers[peer0 .. peer0 + npeers) */
} rankinfo_t;

/* Bytes of names copied out of the buffers they came in (a child's merge, a payload freed since). */
typedef struct arena {
    struct arena *next;
    size_t used, cap;
    char bytes[];
} arena_t;

/* The merge of the ranks lo .. lo + nranks - 1: every per-rank array has nranks values, the k-th
 * for rank lo + k. The whole run's (lo 0) is written as profile.json; a part of it travels up the
 * tree at MPI_Finalize (ml_merge_pack, ml_merge_add_packed). */
struct table {
    int lo, nranks;
    rankinfo_t *info; /* [nranks] */
    ml_payload_peer_t *peers;
    uint32_t npeers, cap_peers;
    int copy_names; /* names are copied into the arena (else they point into the payloads, kept) */
    arena_t *arena;
    const ml_merge_opts_t *o; /* while writing */
    region_t *regions;
    uint32_t nregions, cap_regions;
    function_t *functions;
    uint32_t nfunctions, cap_functions;
    series_t *series;
    uint32_t nseries, cap_series;
    counter_t *counters;
    uint32_t ncounters, cap_counters;
    cvalue_t *cvalues;
    uint32_t ncvalues, cap_cvalues;
    name_t *modules;
    uint32_t nmodules, cap_modules;
    gsite_t *sites;
    uint32_t nsites, cap_sites;
    gframe_t *frames;
    uint32_t nframes, cap_frames;
    uint32_t *site_index; /* open addressing over sites: site + 1, 0 empty */
    uint32_t site_index_cap;
    int any_sites;   /* a payload of this version was merged: "callsites" is written */
    uint32_t *gfn; /* [65536]: a rank's function ids (u16) -> functions; reset after each rank */
    int failed;    /* out of memory, or a part that does not fit */
};
typedef struct table table_t;

/* The name to keep: the bytes given, or a copy of them in the arena. */
static name_t keep(table_t *t, const char *s, uint16_t len)
{
    if (!t->copy_names) return (name_t){s, len};
    arena_t *a = t->arena;
    if (a == NULL || a->cap - a->used < len) {
        const size_t cap = 65536; /* a name is at most 65,535 bytes (u16) */
        arena_t *b = malloc(sizeof *b + cap);
        if (b == NULL) {
            t->failed = 1;
            return (name_t){"", 0};
        }
        b->next = a, b->used = 0, b->cap = cap;
        t->arena = a = b;
    }
    char *at = a->bytes + a->used;
    memcpy(at, s, len);
    a->used += len;
    return (name_t){at, len};
}

/* Grow an array of `size`-byte items to hold one more; NULL (and t->failed) when it cannot. */
static void *grow(table_t *t, void *items, uint32_t n, uint32_t *cap, size_t size)
{
    if (n < *cap) return items;
    const uint32_t c = *cap ? 2 * *cap : 16;
    void *p = realloc(items, (size_t)c * size);
    if (p == NULL) {
        t->failed = 1;
        return NULL;
    }
    *cap = c;
    return p;
}

static uint64_t *per_rank(table_t *t)
{
    uint64_t *v = calloc((size_t)t->nranks, sizeof(uint64_t));
    if (v == NULL) t->failed = 1;
    return v;
}

static uint32_t region_global(table_t *t, uint32_t parent, const char *name, uint16_t nlen)
{
    for (uint32_t i = 1; i < t->nregions; i++)
        if (t->regions[i].parent == parent && name_eq(t->regions[i].name, name, nlen)) return i;
    region_t *r = grow(t, t->regions, t->nregions, &t->cap_regions, sizeof *r);
    if (r == NULL) return UINT32_MAX;
    t->regions = r;
    t->regions[t->nregions] = (region_t){keep(t, name, nlen), parent, per_rank(t), per_rank(t)};
    return t->failed ? UINT32_MAX : t->nregions++;
}

static uint32_t function_global(table_t *t, const char *name, uint16_t nlen, uint8_t cls)
{
    for (uint32_t i = 0; i < t->nfunctions; i++)
        if (name_eq(t->functions[i].name, name, nlen)) return i;
    function_t *f = grow(t, t->functions, t->nfunctions, &t->cap_functions, sizeof *f);
    if (f == NULL) return UINT32_MAX;
    t->functions = f;
    t->functions[t->nfunctions] = (function_t){keep(t, name, nlen), cls, NULL, NULL};
    return t->nfunctions++;
}

static series_t *series_of(table_t *t, uint32_t region, uint32_t fn)
{
    for (uint32_t i = 0; i < t->nseries; i++)
        if (t->series[i].region == region && t->series[i].fn == fn) return &t->series[i];
    series_t *s = grow(t, t->series, t->nseries, &t->cap_series, sizeof *s);
    if (s == NULL) return NULL;
    t->series = s;
    s = &t->series[t->nseries++];
    *s = (series_t){region, fn, per_rank(t), per_rank(t), per_rank(t), per_rank(t), per_rank(t), per_rank(t),
                    per_rank(t), calloc((size_t)t->nranks, sizeof(double))};
    if (s->var == NULL) t->failed = 1;
    return t->failed ? NULL : s;
}

static void add(series_t *s, int rank, const ml_payload_stat_t *x)
{
    if (s == NULL) return;
    s->timed[rank] += x->timed;
    s->var[rank] += (double)x->se_ns * (double)x->se_ns; /* independent estimates: variances add */
    if (x->calls > 0) {
        if (s->calls[rank] == 0 || x->min_ns < s->min[rank]) s->min[rank] = x->min_ns;
        if (x->max_ns > s->max[rank]) s->max[rank] = x->max_ns;
    }
    s->calls[rank] += x->calls;
    s->ns[rank] += x->ns;
    s->sent[rank] += (uint64_t)x->sent;
    s->recv[rank] += (uint64_t)x->recv;
}

static uint32_t counter_global(table_t *t, const char *name, uint16_t len, uint8_t kind)
{
    for (uint32_t i = 0; i < t->ncounters; i++)
        if (name_eq(t->counters[i].name, name, len)) return i;
    counter_t *c = grow(t, t->counters, t->ncounters, &t->cap_counters, sizeof *c);
    if (c == NULL) return UINT32_MAX;
    t->counters = c;
    t->counters[t->ncounters] = (counter_t){keep(t, name, len), kind};
    return t->ncounters++;
}

/* The values of one counter in one region (UINT32_MAX: the whole run), per rank; NaN: unset. */
static cvalue_t *cvalue_of(table_t *t, uint32_t region, uint32_t counter)
{
    for (uint32_t i = 0; i < t->ncvalues; i++)
        if (t->cvalues[i].region == region && t->cvalues[i].counter == counter) return &t->cvalues[i];
    cvalue_t *c = grow(t, t->cvalues, t->ncvalues, &t->cap_cvalues, sizeof *c);
    if (c == NULL) return NULL;
    t->cvalues = c;
    c = &t->cvalues[t->ncvalues++];
    c->region = region;
    c->counter = counter;
    c->value = malloc((size_t)t->nranks * sizeof(double));
    c->when = per_rank(t);
    if (c->value == NULL) {
        t->failed = 1;
        return NULL;
    }
    for (int i = 0; i < t->nranks; i++) c->value[i] = __builtin_nan("");
    return c;
}

static void counter_add(table_t *t, uint32_t region, uint32_t counter, int rank, double v, uint64_t when)
{
    cvalue_t *c = cvalue_of(t, region, counter);
    if (c == NULL) return;
    const int unset = c->value[rank] != c->value[rank];
    if (t->counters[counter].kind == ML_COUNTER_SUM)
        c->value[rank] = unset ? v : c->value[rank] + v;
    else if (unset || when >= c->when[rank]) /* "last": the most recent value, whatever the region */
        c->value[rank] = v;
    if (when > c->when[rank]) c->when[rank] = when;
}

static const char *table_start(cursor_t c, uint32_t *n);
static uint32_t gfn_of(const table_t *t, uint16_t fn) { return t->gfn[fn]; }

static uint32_t module_global(table_t *t, const char *name, uint16_t len)
{
    for (uint32_t i = 0; i < t->nmodules; i++)
        if (name_eq(t->modules[i], name, len)) return i;
    name_t *m = grow(t, t->modules, t->nmodules, &t->cap_modules, sizeof *m);
    if (m == NULL) return UINT32_MAX;
    t->modules = m;
    t->modules[t->nmodules] = keep(t, name, len);
    return t->nmodules++;
}

static uint64_t site_hash(uint32_t fn, const gframe_t *f, uint32_t n)
{
    uint64_t h = 0xcbf29ce484222325ull ^ fn;
    for (uint32_t i = 0; i < n; i++) {
        h = (h ^ f[i].module) * 0x100000001b3ull;
        h = (h ^ f[i].vaddr) * 0x100000001b3ull;
    }
    return h;
}

static int index_site(table_t *t, uint32_t s)
{
    if (2 * (t->nsites + 1) > t->site_index_cap) {
        const uint32_t cap = t->site_index_cap ? 2 * t->site_index_cap : 1024;
        uint32_t *ix = calloc(cap, sizeof *ix);
        if (ix == NULL) return t->failed = 1, -1;
        for (uint32_t i = 0; i < t->site_index_cap; i++) {
            if (t->site_index[i] == 0) continue;
            uint32_t k = (uint32_t)t->sites[t->site_index[i] - 1].hash & (cap - 1);
            while (ix[k]) k = (k + 1) & (cap - 1);
            ix[k] = t->site_index[i];
        }
        free(t->site_index);
        t->site_index = ix;
        t->site_index_cap = cap;
    }
    uint32_t k = (uint32_t)t->sites[s].hash & (t->site_index_cap - 1);
    while (t->site_index[k]) k = (k + 1) & (t->site_index_cap - 1);
    t->site_index[k] = s + 1;
    return 0;
}

/* The global site of fn with frames f[0..n) (copied when new); NULL when out of memory. */
static gsite_t *site_of(table_t *t, uint32_t fn, const gframe_t *f, uint32_t n)
{
    const uint64_t h = site_hash(fn, f, n);
    if (t->site_index_cap) {
        for (uint32_t k = (uint32_t)h & (t->site_index_cap - 1); t->site_index[k]; k = (k + 1) & (t->site_index_cap - 1)) {
            gsite_t *s = &t->sites[t->site_index[k] - 1];
            if (s->hash != h || s->fn != fn || s->nframes != n) continue;
            uint32_t i = 0;
            while (i < n && t->frames[s->frame0 + i].module == f[i].module && t->frames[s->frame0 + i].vaddr == f[i].vaddr) i++;
            if (i == n) return s;
        }
    }
    gsite_t *ss = grow(t, t->sites, t->nsites, &t->cap_sites, sizeof *ss);
    if (ss == NULL) return NULL;
    t->sites = ss;
    while (t->nframes + n > t->cap_frames) {
        gframe_t *fr = grow(t, t->frames, t->cap_frames, &t->cap_frames, sizeof *fr);
        if (fr == NULL) return NULL;
        t->frames = fr;
    }
    memcpy(&t->frames[t->nframes], f, (size_t)n * sizeof *f);
    gsite_t *s = &t->sites[t->nsites];
    *s = (gsite_t){fn, n, t->nframes, h, per_rank(t), per_rank(t), per_rank(t), per_rank(t)};
    t->nframes += n;
    if (t->failed || index_site(t, t->nsites) != 0) return NULL;
    return &t->sites[t->nsites++];
}

/* A rank's call sites (tables modules, sites, frames), keyed by function name and frames
 * (module path, address in the module): the same code gives the same key on every rank,
 * whatever the addresses the modules were loaded at. */
static void merge_sites(table_t *t, int rank, const rankrec_t *r)
{
    if (r->callsite_depth > 0) t->any_sites = 1; /* a rank that recorded call sites */
    uint32_t nmod, nsite, nframe;
    table_start(r->modules, &nmod);
    uint32_t *gmod = calloc((size_t)nmod + 1, sizeof *gmod);
    if (gmod == NULL) {
        t->failed = 1;
        return;
    }
    cursor_t c = r->modules;
    u32(&c);
    for (uint32_t i = 0; i < nmod && !c.bad; i++) {
        ml_payload_module_t x;
        take(&c, &x, sizeof x);
        uint16_t len;
        const char *name = str(&c, &len);
        gmod[i] = x.id < nmod ? module_global(t, name, len) : UINT32_MAX;
        if (x.id < nmod && x.id != i) gmod[x.id] = gmod[i];
    }
    const char *sp = table_start(r->sites, &nsite);
    const char *fp = table_start(r->frames, &nframe);
    uint32_t fi = 0;
    gframe_t frames[64];
    for (uint32_t i = 0; i < nsite && !t->failed; i++) {
        ml_payload_site_t x;
        memcpy(&x, sp + (size_t)i * sizeof x, sizeof x);
        uint32_t n = 0;
        while (fi < nframe) {
            ml_payload_frame_t y;
            memcpy(&y, fp + (size_t)fi * sizeof y, sizeof y);
            if (y.site != x.site) break;
            if (n < 64) frames[n++] = (gframe_t){y.module < nmod ? gmod[y.module] : UINT32_MAX, y.vaddr};
            fi++;
        }
        if (gfn_of(t, x.fn) == UINT32_MAX) continue;
        gsite_t *s = site_of(t, gfn_of(t, x.fn), frames, n);
        if (s == NULL) break;
        s->calls[rank] += x.calls;
        s->ns[rank] += x.ns;
        s->sent[rank] += (uint64_t)x.sent;
        s->recv[rank] += (uint64_t)x.recv;
    }
    free(gmod);
}

/* A table's count and its first record; *n = 0 when the cursor is bad. */
static const char *table_start(cursor_t c, uint32_t *n)
{
    *n = u32(&c);
    if (c.bad) *n = 0;
    return c.p;
}

/* One rank's payload into the table; `rank` is its index in the table's range (its rank - lo). */
static void merge_rank(table_t *t, int rank, const rankrec_t *r)
{
    rankinfo_t *info = &t->info[rank];
    *info = (rankinfo_t){.present = 1, .unknown_counted = r->unknown_counted, .head = r->head, .tail = r->tail,
                         .host = keep(t, r->host, r->hostlen), .peer0 = t->npeers};
    uint32_t npeer;
    const char *pp = table_start(r->matrix, &npeer);
    for (uint32_t i = 0; i < npeer && !t->failed; i++) {
        ml_payload_peer_t *grown = grow(t, t->peers, t->npeers, &t->cap_peers, sizeof *grown);
        if (grown == NULL) break;
        t->peers = grown;
        memcpy(&t->peers[t->npeers++], pp + (size_t)i * sizeof *grown, sizeof *grown);
        info->npeers++;
    }
    /* local function ids -> global functions; local region paths -> global regions */
    uint32_t nf, nreg;
    cursor_t c = r->functions;
    u32(&c);
    if (t->gfn == NULL) { /* made for the first payload, kept for the next ones (256 KiB) */
        t->gfn = malloc(65536 * sizeof *t->gfn);
        if (t->gfn == NULL) {
            t->failed = 1;
            return;
        }
        for (uint32_t i = 0; i < 65536; i++) t->gfn[i] = UINT32_MAX;
    }
    uint32_t *const gfn = t->gfn;
    table_start(r->functions, &nf);
    for (uint32_t i = 0; i < nf && !c.bad; i++) {
        ml_payload_function_t f;
        take(&c, &f, sizeof f);
        uint16_t len;
        const char *name = str(&c, &len);
        gfn[f.fn] = function_global(t, name, len, f.class);
    }
    /* region paths are small integers; the largest one sizes the local map */
    uint32_t maxpath = 0;
    table_start(r->regions, &nreg);
    c = r->regions;
    u32(&c);
    for (uint32_t i = 0; i < nreg && !c.bad; i++) {
        ml_payload_region_t x;
        take(&c, &x, sizeof x);
        uint16_t len;
        str(&c, &len);
        if (x.path > maxpath) maxpath = x.path;
    }
    uint32_t *local = calloc((size_t)maxpath + 1, sizeof(uint32_t)); /* path 0 (no region) -> 0 */
    if (local == NULL) {
        t->failed = 1;
        return;
    }
    c = r->regions;
    u32(&c);
    for (uint32_t i = 0; i < nreg && !c.bad; i++) {
        ml_payload_region_t x;
        take(&c, &x, sizeof x);
        uint16_t len;
        const char *name = str(&c, &len);
        if (x.parent > maxpath) continue;
        const uint32_t g = region_global(t, local[x.parent], name, len);
        if (g == UINT32_MAX) break;
        local[x.path] = g;
        t->regions[g].visits[rank] += x.visits;
        t->regions[g].ns[rank] += x.ns;
    }
    uint32_t n;
    const char *p = table_start(r->stats, &n);
    for (uint32_t i = 0; i < n; i++) {
        ml_payload_stat_t x;
        memcpy(&x, p + (size_t)i * sizeof x, sizeof x);
        if (gfn[x.fn] == UINT32_MAX || x.path > maxpath) continue;
        add(series_of(t, UINT32_MAX, gfn[x.fn]), rank, &x);
        if (x.path != 0) add(series_of(t, local[x.path], gfn[x.fn]), rank, &x);
    }
    /* user counters: local ids -> global names */
    uint32_t gid[65536 / 64]; /* ids are u16, and a process has at most ML_MAX_COUNTERS of them */
    for (size_t k = 0; k < sizeof gid / sizeof *gid; k++) gid[k] = UINT32_MAX;
    c = r->counter_names;
    table_start(r->counter_names, &n);
    u32(&c);
    for (uint32_t i = 0; i < n && !c.bad; i++) {
        ml_payload_counter_name_t x;
        take(&c, &x, sizeof x);
        uint16_t len;
        const char *name = str(&c, &len);
        if (x.id < sizeof gid / sizeof *gid) gid[x.id] = counter_global(t, name, len, x.kind);
    }
    p = table_start(r->counters, &n);
    for (uint32_t i = 0; i < n; i++) {
        ml_payload_counter_t x;
        memcpy(&x, p + (size_t)i * sizeof x, sizeof x);
        if (x.id >= sizeof gid / sizeof *gid || gid[x.id] == UINT32_MAX || x.path > maxpath) continue;
        counter_add(t, UINT32_MAX, gid[x.id], rank, x.value, x.when_ns);
        if (x.path != 0) counter_add(t, local[x.path], gid[x.id], rank, x.value, x.when_ns);
    }
    free(local);
    p = table_start(r->sizes, &n);
    for (uint32_t i = 0; i < n && !t->failed; i++) {
        ml_payload_size_t x;
        memcpy(&x, p + (size_t)i * sizeof x, sizeof x);
        if (gfn[x.fn] == UINT32_MAX || x.bin >= ML_SIZE_BINS) continue;
        function_t *f = &t->functions[gfn[x.fn]];
        if (f->hist_calls == NULL) {
            f->hist_calls = calloc((size_t)ML_SIZE_BINS * (size_t)t->nranks, sizeof(uint64_t));
            f->hist_ns = calloc((size_t)ML_SIZE_BINS * (size_t)t->nranks, sizeof(uint64_t));
            if (f->hist_calls == NULL || f->hist_ns == NULL) t->failed = 1;
            if (t->failed) break;
        }
        const size_t k = (size_t)x.bin * (size_t)t->nranks + (size_t)rank;
        f->hist_calls[k] += x.calls;
        f->hist_ns[k] += x.ns;
    }
    merge_sites(t, rank, r);
    c = r->functions; /* back to "unknown" for the next rank: only the ids this one used */
    u32(&c);
    for (uint32_t i = 0; i < nf && !c.bad; i++) {
        ml_payload_function_t f;
        take(&c, &f, sizeof f);
        uint16_t len;
        str(&c, &len);
        gfn[f.fn] = UINT32_MAX;
    }
}

/* ------------------------------------------------------------------------------- writing */
static void u64_array(FILE *f, const uint64_t *v, const table_t *t)
{
    fputc('[', f);
    for (int i = 0; i < t->nranks; i++) {
        if (i) fputs(", ", f);
        if (!t->info[i].present)
            fputs("null", f); /* a rank that left no data measured nothing, not zero */
        else
            fprintf(f, "%llu", (unsigned long long)v[i]);
    }
    fputc(']', f);
}

static void seconds_array(FILE *f, const uint64_t *ns, const uint64_t *calls, const table_t *t)
{
    fputc('[', f);
    for (int i = 0; i < t->nranks; i++) {
        if (i) fputs(", ", f);
        /* a minimum or maximum over no call, or a rank that left no data, is not a number */
        if ((calls != NULL && calls[i] == 0) || !t->info[i].present)
            fputs("null", f);
        else
            ml_json_seconds(f, ns[i]);
    }
    fputc(']', f);
}

static void write_counters(FILE *f, table_t *t, uint32_t region, const char *indent)
{
    fputc('{', f);
    int first = 1;
    for (uint32_t k = 0; k < t->ncounters; k++) {
        cvalue_t *c = NULL;
        for (uint32_t i = 0; i < t->ncvalues && !c; i++)
            if (t->cvalues[i].region == region && t->cvalues[i].counter == k) c = &t->cvalues[i];
        if (c == NULL) continue;
        fprintf(f, "%s\n%s  ", first ? "" : ",", indent);
        ml_json_strn(f, t->counters[k].name.s, t->counters[k].name.len);
        fprintf(f, ": {" ML_PK_KEY(ML_PK_COUNTER_KIND) "\"%s\", " ML_PK_KEY(ML_PK_COUNTER_VALUES) "[",
                t->counters[k].kind == ML_COUNTER_SUM ? "sum" : "last");
        for (int r = 0; r < t->nranks; r++)
            if (c->value[r] != c->value[r])
                fprintf(f, "%snull", r ? ", " : ""); /* a rank that never touched it */
            else
                fprintf(f, "%s%.17g", r ? ", " : "", c->value[r]);
        fputs("]}", f);
        first = 0;
    }
    if (!first) fprintf(f, "\n%s", indent);
    fputc('}', f);
}

/* The writers of a function's fields (runtime/spec/rundir.yaml: profile_function_fields, `as`),
 * each given the field's sums per rank (`from`) and the function's series. */
static void field_count(FILE *f, const uint64_t *v, const series_t *s, table_t *t)
{
    (void)s;
    u64_array(f, v, t);
}
static void field_seconds(FILE *f, const uint64_t *ns, const series_t *s, table_t *t)
{
    (void)s;
    seconds_array(f, ns, NULL, t);
}
static void field_seconds_per_call(FILE *f, const uint64_t *ns, const series_t *s, table_t *t)
{
    seconds_array(f, ns, s->calls, t); /* null where the rank made no call */
}
static void field_seconds_se(FILE *f, const double *var, const series_t *s, table_t *t)
{
    (void)s;
    uint64_t *se = malloc((size_t)t->nranks * sizeof *se);
    if (se == NULL) {
        t->failed = 1;
        fputs("null", f);
        return;
    }
    for (int r = 0; r < t->nranks; r++) se[r] = var[r] > 0 ? (uint64_t)__builtin_sqrt(var[r]) : 0;
    seconds_array(f, se, NULL, t);
    free(se);
}

static const table_t *sorting; /* qsort has no context argument in C11 */
static int name_cmp(name_t a, name_t b)
{
    const int c = memcmp(a.s, b.s, a.len < b.len ? a.len : b.len);
    return c ? c : (int)a.len - (int)b.len;
}
static int series_by_name(const void *a, const void *b)
{
    const series_t *x = *(series_t *const *)a, *y = *(series_t *const *)b;
    return name_cmp(sorting->functions[x->fn].name, sorting->functions[y->fn].name);
}
static int functions_by_name(const void *a, const void *b)
{
    return name_cmp(sorting->functions[*(const uint32_t *)a].name, sorting->functions[*(const uint32_t *)b].name);
}

static void write_functions(FILE *f, table_t *t, uint32_t region, const char *indent)
{
    static const char *const class_names[] = ML_FUNCTION_CLASS_LABELS;
    series_t **sel = malloc((t->nseries + 1) * sizeof *sel);
    if (sel == NULL) {
        t->failed = 1;
        return;
    }
    uint32_t k = 0;
    for (uint32_t i = 0; i < t->nseries; i++)
        if (t->series[i].region == region) sel[k++] = &t->series[i];
    sorting = t;
    qsort(sel, k, sizeof *sel, series_by_name);
    fputc('{', f);
    for (uint32_t i = 0; i < k; i++) {
        series_t *s = sel[i];
        const function_t *fn = &t->functions[s->fn];
        fprintf(f, "%s\n%s  ", i ? "," : "", indent);
        ml_json_strn(f, fn->name.s, fn->name.len);
        fprintf(f, ": {" ML_PK_KEY(ML_PK_FUNCTION_CLASS) "\"%s\"", fn->cls < ML_FUNCTION_CLASS_COUNT ? class_names[fn->cls] : "other");
        /* the fields as runtime/spec/rundir.yaml lists them (ml_rundir.h) */
        const int with[] = {[0] = 1, [1] = t->o->time_sample > 1}; /* when: always, time_sample */
#define always 0
#define time_sample 1
#define FIELD(key, from, as, when)                                                                  \
        if (with[when]) {                                                                          \
            fprintf(f, ",\n%s    " ML_PK_KEY(key), indent);                                              \
            field_##as(f, s->from, s, t);                                                           \
        }
        ML_PROFILE_FUNCTION_FIELDS(FIELD)
#undef FIELD
#undef always
#undef time_sample
        fputc('}', f);
    }
    if (k) fprintf(f, "\n%s", indent);
    fputc('}', f);
    free(sel);
}

static void write_regions(FILE *f, table_t *t, uint32_t parent, int depth)
{
    char indent[300];
    snprintf(indent, sizeof indent, "%*s", depth < 64 ? 2 + 4 * depth : 258, "");
    fputc('[', f);
    int first = 1;
    for (uint32_t i = 1; i < t->nregions; i++) {
        region_t *r = &t->regions[i];
        if (r->parent != parent) continue;
        fprintf(f, "%s\n%s  {" ML_PK_KEY(ML_PK_REGION_NAME), first ? "" : ",", indent);
        ml_json_strn(f, r->name.s, r->name.len);
        fprintf(f, ",\n%s   " ML_PK_KEY(ML_PK_REGION_VISITS), indent);
        u64_array(f, r->visits, t);
        fprintf(f, ",\n%s   " ML_PK_KEY(ML_PK_REGION_TIME_S), indent);
        seconds_array(f, r->ns, NULL, t);
        fprintf(f, ",\n%s   " ML_PK_KEY(ML_PK_REGION_FUNCTIONS), indent);
        char sub[320];
        snprintf(sub, sizeof sub, "%s   ", indent);
        write_functions(f, t, i, sub);
        fprintf(f, ",\n%s   " ML_PK_KEY(ML_PK_REGION_COUNTERS), indent);
        write_counters(f, t, i, sub);
        fprintf(f, ",\n%s   " ML_PK_KEY(ML_PK_REGION_REGIONS), indent);
        write_regions(f, t, i, depth + 1);
        fputc('}', f);
        first = 0;
    }
    if (!first) fprintf(f, "\n%s", indent);
    fputc(']', f);
}

static void write_message_sizes(FILE *f, table_t *t)
{
    fputc('{', f);
    int first_fn = 1;
    const int n = t->nranks;
    uint32_t *order = malloc((t->nfunctions + 1) * sizeof *order); /* functions in name order, like "functions" */
    if (order == NULL) {
        t->failed = 1;
        fputc('}', f);
        return;
    }
    for (uint32_t i = 0; i < t->nfunctions; i++) order[i] = i;
    sorting = t;
    qsort(order, t->nfunctions, sizeof *order, functions_by_name);
    for (uint32_t oi = 0; oi < t->nfunctions; oi++) {
        const function_t *fn = &t->functions[order[oi]];
        if (fn->hist_calls == NULL) continue;
        int first_bin = 1;
        for (int b = 0; b < ML_SIZE_BINS; b++) {
            const size_t k = (size_t)b * (size_t)n;
            uint64_t any = 0;
            for (int r = 0; r < n; r++) any |= fn->hist_calls[k + r];
            if (!any) continue;
            if (first_bin) {
                fprintf(f, "%s\n    ", first_fn ? "" : ",");
                ml_json_strn(f, fn->name.s, fn->name.len);
                fputs(": [", f);
            }
            const unsigned long long lo = b == 0 ? 0 : 1ull << (b - 1);
            const unsigned long long hi = b == 0 ? 0 : (b == 64 ? ~0ull : (1ull << b) - 1);
            fprintf(f, "%s\n      {" ML_PK_KEY(ML_PK_SIZE_BIN_BIN) "%d, " ML_PK_KEY(ML_PK_SIZE_BIN_MIN_BYTES) "%llu, "
                    ML_PK_KEY(ML_PK_SIZE_BIN_MAX_BYTES) "%llu, " ML_PK_KEY(ML_PK_SIZE_BIN_CALLS), first_bin ? "" : ",", b, lo, hi);
            u64_array(f, fn->hist_calls + k, t);
            fputs(", " ML_PK_KEY(ML_PK_SIZE_BIN_TIME_S), f);
            seconds_array(f, fn->hist_ns + k, NULL, t);
            fputc('}', f);
            first_bin = 0;
            first_fn = 0;
        }
        if (!first_bin) fputs("]", f);
    }
    free(order);
    fputs(first_fn ? "}" : "\n  }", f);
}

static const table_t *site_sorting;
static uint64_t site_total_ns(const gsite_t *s)
{
    uint64_t v = 0;
    for (int r = 0; r < site_sorting->nranks; r++) v += s->ns[r];
    return v;
}
static int sites_by_time(const void *a, const void *b)
{
    const gsite_t *x = *(const gsite_t *const *)a, *y = *(const gsite_t *const *)b;
    const uint64_t tx = site_total_ns(x), ty = site_total_ns(y);
    return tx < ty ? 1 : tx > ty ? -1 : 0;
}

/* "callsites": every site with its function, frames (module, address in the module) and values
 * per rank, by total time; symbolised by `mpilens`, never here. */
static void write_sites(FILE *f, table_t *t)
{
    gsite_t **sel = malloc(((size_t)t->nsites + 1) * sizeof *sel);
    if (sel == NULL) {
        t->failed = 1;
        return;
    }
    for (uint32_t i = 0; i < t->nsites; i++) sel[i] = &t->sites[i];
    site_sorting = t;
    qsort(sel, t->nsites, sizeof *sel, sites_by_time);
    fputc('[', f);
    for (uint32_t i = 0; i < t->nsites; i++) {
        const gsite_t *s = sel[i];
        const function_t *fn = &t->functions[s->fn];
        fprintf(f, "%s\n    {" ML_PK_KEY(ML_PK_CALLSITE_FUNCTION), i ? "," : "");
        ml_json_strn(f, fn->name.s, fn->name.len);
        fputs(", " ML_PK_KEY(ML_PK_CALLSITE_FRAMES) "[", f);
        for (uint32_t k = 0; k < s->nframes; k++) {
            const gframe_t *g = &t->frames[s->frame0 + k];
            fputs(k ? ", {" ML_PK_KEY(ML_PK_FRAME_MODULE) : "{" ML_PK_KEY(ML_PK_FRAME_MODULE), f);
            if (g->module < t->nmodules) ml_json_strn(f, t->modules[g->module].s, t->modules[g->module].len);
            else fputs("null", f);
            fprintf(f, ", " ML_PK_KEY(ML_PK_FRAME_ADDRESS) "%llu}", (unsigned long long)g->vaddr);
        }
        fputs("],\n     " ML_PK_KEY(ML_PK_CALLSITE_CALLS), f);
        u64_array(f, s->calls, t);
        fputs(", " ML_PK_KEY(ML_PK_CALLSITE_TIME_S), f);
        seconds_array(f, s->ns, NULL, t);
        fputs(",\n     " ML_PK_KEY(ML_PK_CALLSITE_BYTES_SENT), f);
        u64_array(f, s->sent, t);
        fputs(", " ML_PK_KEY(ML_PK_CALLSITE_BYTES_RECV), f);
        u64_array(f, s->recv, t);
        fputc('}', f);
    }
    fputs(t->nsites ? "\n  ]" : "]", f);
    free(sel);
}

static void free_table(table_t *t)
{
    for (uint32_t i = 0; i < t->nsites; i++)
        free(t->sites[i].calls), free(t->sites[i].ns), free(t->sites[i].sent), free(t->sites[i].recv);
    free(t->sites), free(t->frames), free(t->modules), free(t->site_index);
    for (uint32_t i = 0; i < t->nseries; i++) {
        series_t *s = &t->series[i];
        free(s->calls), free(s->ns), free(s->min), free(s->max), free(s->sent), free(s->recv), free(s->timed), free(s->var);
    }
    for (uint32_t i = 1; i < t->nregions; i++) free(t->regions[i].visits), free(t->regions[i].ns);
    for (uint32_t i = 0; i < t->nfunctions; i++) free(t->functions[i].hist_calls), free(t->functions[i].hist_ns);
    for (uint32_t i = 0; i < t->ncvalues; i++) free(t->cvalues[i].value), free(t->cvalues[i].when);
    free(t->cvalues), free(t->counters), free(t->series), free(t->regions), free(t->functions), free(t->gfn);
    free(t->info), free(t->peers);
    for (arena_t *a = t->arena, *next; a != NULL; a = next) next = a->next, free(a);
}

/* An empty merge of the ranks lo .. lo + nranks - 1; NULL when out of memory. */
static table_t *table_new(int lo, int nranks, int copy_names)
{
    if (lo < 0 || nranks < 1) return NULL;
    table_t *t = calloc(1, sizeof *t);
    if (t == NULL) return NULL;
    *t = (table_t){.lo = lo, .nranks = nranks, .nregions = 1, .copy_names = copy_names};
    t->info = calloc((size_t)nranks, sizeof *t->info);
    t->regions = grow(t, NULL, 0, &t->cap_regions, sizeof *t->regions); /* index 0: the root (no region) */
    if (t->info == NULL || t->regions == NULL) t->failed = 1;
    if (t->failed) {
        free_table(t);
        free(t);
        return NULL;
    }
    return t;
}

/* profile.json of the whole run's merge (lo 0); `bytes`: what the gather moved ("tool_cost"). */
static int write_profile(FILE *f, table_t *t, const ml_merge_opts_t *o, size_t bytes)
{
    static const char *const reasons[] = ML_END_REASON_LABELS;
    const int nranks = t->nranks;
    if (t->failed || t->lo != 0 || o->nranks != nranks) return -1;
    t->o = o;
    /* "dropped": sums over the ranks of payload_head fields (runtime/spec/rundir.yaml) */
#define DROPPED_INDEX(key, from, since_v4) DROPPED_##from,
    enum { ML_PROFILE_DROPPED_FIELDS(DROPPED_INDEX) NDROPPED };
#undef DROPPED_INDEX
    uint64_t wall = 0, dropped[NDROPPED + 1] = {0};
    int complete = 1, any = 0, unknown_counted = 1;
    for (int r = 0; r < nranks; r++) {
        const rankinfo_t *x = &t->info[r];
        complete &= x->present && x->head.complete;
        if (!x->present) continue;
        any = 1;
        if (x->head.wall_ns > wall) wall = x->head.wall_ns;
#define DROPPED_SUM(key, from, since_v4) dropped[DROPPED_##from] += x->head.from;
        ML_PROFILE_DROPPED_FIELDS(DROPPED_SUM)
#undef DROPPED_SUM
        unknown_counted &= x->unknown_counted;
    }
    fputs("{\n  " ML_PK_KEY(ML_PK_PROFILE_SCHEMA) "\"" ML_SCHEMA_PROFILE "\",\n  " ML_PK_KEY(ML_PK_PROFILE_TOOL) "{"
          ML_PK_KEY(ML_PK_TOOL_NAME) "\"mpilens\"", f);
    if (o->version) fprintf(f, ", " ML_PK_KEY(ML_PK_TOOL_VERSION) "\"%s\"", o->version);
    if (o->mpi) fprintf(f, ", " ML_PK_KEY(ML_PK_TOOL_MPI) "\"%s\"", o->mpi);
    fprintf(f, "},\n  " ML_PK_KEY(ML_PK_PROFILE_COMPLETE) "%s,\n  " ML_PK_KEY(ML_PK_PROFILE_NRANKS) "%d,\n  "
            ML_PK_KEY(ML_PK_PROFILE_WALL_TIME_S), complete ? "true" : "false", nranks);
    if (any) ml_json_seconds(f, wall);
    else fputs("null", f);
    if (o->time_sample > 1) fprintf(f, ",\n  " ML_PK_KEY(ML_PK_PROFILE_TIME_SAMPLE) "%ld", o->time_sample);
    fputs(",\n  " ML_PK_KEY(ML_PK_PROFILE_RANKS) "[", f);
    for (int r = 0; r < nranks; r++) {
        const rankinfo_t *x = &t->info[r];
        fprintf(f, "%s\n    {" ML_PK_KEY(ML_PK_RANK_RANK) "%d", r ? "," : "", r);
        /* the keys as runtime/spec/rundir.yaml lists them (ml_rundir.h), null where the rank left
         * no data; each `as` is written by its RANK_<as> */
        const int with[] = {[0] = 1, [1] = o->time_sample > 1}; /* when: always, time_sample */
#define always 0
#define time_sample 1
#define RANK_text(from) ml_json_strn(f, x->host.s, x->host.len)
#define RANK_seconds(from) ml_json_seconds(f, x->head.from)
#define RANK_count(from) fprintf(f, "%llu", (unsigned long long)x->head.from)
#define RANK_end_reason(from)                                                                        \
        do {                                                                                       \
            fprintf(f, "\"%s", x->head.from < ML_END_REASON_COUNT ? reasons[x->head.from] : "unknown"); \
            if (x->head.signo) fprintf(f, " %u", x->head.signo);                                    \
            fputc('"', f);                                                                         \
        } while (0)
#define RANK_FIELD(key, from, as, when)                                                             \
        if (with[when]) {                                                                          \
            fputs(", " ML_PK_KEY(key), f);                                                              \
            if (x->present)                                                                        \
                RANK_##as(from);                                                                   \
            else                                                                                   \
                fputs("null", f);                                                                  \
        }
        ML_PROFILE_RANK_FIELDS(RANK_FIELD)
#undef RANK_FIELD
#undef RANK_text
#undef RANK_seconds
#undef RANK_count
#undef RANK_end_reason
#undef always
#undef time_sample
        fputc('}', f);
    }
    fputs("\n  ],\n  " ML_PK_KEY(ML_PK_PROFILE_FUNCTIONS), f);
    write_functions(f, t, UINT32_MAX, "  ");
    fputs(",\n  " ML_PK_KEY(ML_PK_PROFILE_MESSAGE_SIZES), f);
    write_message_sizes(f, t);
    fputs(",\n  " ML_PK_KEY(ML_PK_PROFILE_MATRIX) "[", f);
    int first = 1;
    for (int r = 0; r < nranks; r++) {
        if (!t->info[r].present) continue;
        for (uint32_t i = 0; i < t->info[r].npeers; i++) {
            const ml_payload_peer_t x = t->peers[t->info[r].peer0 + i];
            fprintf(f, "%s\n    {" ML_PK_KEY(ML_PK_MATRIX_ENTRY_SRC) "%d, " ML_PK_KEY(ML_PK_MATRIX_ENTRY_DST) "%u, "
                    ML_PK_KEY(ML_PK_MATRIX_ENTRY_MESSAGES) "%llu, " ML_PK_KEY(ML_PK_MATRIX_ENTRY_BYTES) "%llu}", first ? "" : ",", r,
                    x.dst, (unsigned long long)x.messages, (unsigned long long)x.bytes);
            first = 0;
        }
    }
    fputs(first ? "]" : "\n  ]", f);
    fputs(",\n  " ML_PK_KEY(ML_PK_PROFILE_COUNTERS), f);
    write_counters(f, t, UINT32_MAX, "  ");
    fputs(",\n  " ML_PK_KEY(ML_PK_PROFILE_REGIONS), f);
    write_regions(f, t, 0, 0);
    if (t->any_sites) {
        fputs(",\n  " ML_PK_KEY(ML_PK_PROFILE_CALLSITES), f);
        write_sites(f, t);
    }
    if (o->intervals) {
        fputs(",\n  " ML_PK_KEY(ML_PK_PROFILE_INTERVALS) "{" ML_PK_KEY(ML_PK_INTERVALS_RECORDED) "[", f);
        for (int r = 0; r < nranks; r++)
            if (t->info[r].present) fprintf(f, "%s%llu", r ? ", " : "", (unsigned long long)t->info[r].tail.intervals_recorded);
            else fprintf(f, "%snull", r ? ", " : "");
        fputs("], " ML_PK_KEY(ML_PK_INTERVALS_DROPPED) "[", f);
        for (int r = 0; r < nranks; r++)
            if (t->info[r].present) fprintf(f, "%s%llu", r ? ", " : "", (unsigned long long)t->info[r].tail.intervals_dropped);
            else fprintf(f, "%snull", r ? ", " : "");
        fputs("], " ML_PK_KEY(ML_PK_INTERVALS_FILES) "\"" ML_PROFILE_INTERVALS_FILES "\"}", f);
    }
    fputs(",\n  " ML_PK_KEY(ML_PK_PROFILE_DROPPED) "{", f);
    int first_dropped = 1;
    /* a field counted since version 4 is not said when a payload came from a runtime that did not
     * count it (version 2 or 3) */
#define DROPPED_WRITE(key, from, since_v4)                                                          \
    if (!(since_v4) || unknown_counted) {                                                          \
        fprintf(f, "%s" ML_PK_KEY(key) "%llu", first_dropped ? "" : ", ", (unsigned long long)dropped[DROPPED_##from]);  \
        first_dropped = 0;                                                                         \
    }
    ML_PROFILE_DROPPED_FIELDS(DROPPED_WRITE)
#undef DROPPED_WRITE
    fputs("}", f);
    if (o->gather_s >= 0)
        fprintf(f, ",\n  " ML_PK_KEY(ML_PK_PROFILE_TOOL_COST) "{" ML_PK_KEY(ML_PK_TOOL_COST_FINALIZE_GATHER_S) "%.6f, "
                ML_PK_KEY(ML_PK_TOOL_COST_PAYLOAD_BYTES) "%zu}", o->gather_s, bytes);
    fputs("\n}\n", f);
    return t->failed ? -1 : 0;
}

int ml_merge_profile(FILE *f, const char *payloads, size_t len, const ml_merge_opts_t *o)
{
    if (o->nranks < 1) return -1;
    table_t *t = table_new(0, o->nranks, 0); /* the names stay in the payloads, which outlive the merge */
    rankrec_t *ranks = calloc((size_t)o->nranks, sizeof *ranks);
    if (t == NULL || ranks == NULL) {
        if (t) free_table(t);
        free(t), free(ranks);
        return -1;
    }
    cursor_t c = {payloads, payloads + len, 0};
    while (c.p < c.end) {
        rankrec_t r;
        char why[200];
        memset(&r, 0, sizeof r);
        const char *at = c.p;
        if (parse_payload(&c, &r, why, sizeof why) != 0) {
            /* skip it: whole payloads are checked (and named) by the caller */
            if (c.p == at || c.p > c.end) break;
            continue;
        }
        if (r.head.rank < (uint32_t)o->nranks) ranks[r.head.rank] = r;
    }
    for (int r = 0; r < o->nranks && !t->failed; r++)
        if (ranks[r].present) merge_rank(t, r, &ranks[r]);
    const int rc = write_profile(f, t, o, len);
    free_table(t);
    free(t);
    free(ranks);
    return rc;
}

/* ------------------------------------------------------------------------------- the tree */
ml_merge_t *ml_merge_new(int lo, int nranks) { return table_new(lo, nranks, 1); }

void ml_merge_free(ml_merge_t *m)
{
    if (m == NULL) return;
    free_table(m);
    free(m);
}

int ml_merge_add_payload(ml_merge_t *m, const char *payload, size_t len)
{
    cursor_t c = {payload, payload + len, 0};
    rankrec_t r;
    char why[200];
    memset(&r, 0, sizeof r);
    if (m->failed || parse_payload(&c, &r, why, sizeof why) != 0) return m->failed = 1, -1;
    const int64_t k = (int64_t)r.head.rank - m->lo;
    if (k < 0 || k >= m->nranks || m->info[k].present) return m->failed = 1, -1;
    merge_rank(m, (int)k, &r);
    free(m->gfn); /* a rank adds its own payload, once */
    m->gfn = NULL;
    return m->failed ? -1 : 0;
}

/* A merge packed to travel up the tree: only within one job (one build of the runtime on every
 * rank, one byte order). Its layout: runtime/spec/rundir.yaml, merge_pack (docs/run-directory.md). */

typedef struct packer {
    char *p;
    size_t len, cap;
    int failed;
} packer_t;

static void put(packer_t *o, const void *v, size_t n)
{
    if (o->failed) return;
    if (o->cap - o->len < n) {
        size_t cap = o->cap ? o->cap : 65536;
        while (cap - o->len < n) cap *= 2;
        char *grown = realloc(o->p, cap);
        if (grown == NULL) {
            o->failed = 1;
            return;
        }
        o->p = grown, o->cap = cap;
    }
    memcpy(o->p + o->len, v, n);
    o->len += n;
}
static void put_u32(packer_t *o, uint32_t v) { put(o, &v, sizeof v); }
static void put_u8(packer_t *o, uint8_t v) { put(o, &v, sizeof v); }
static void put_name(packer_t *o, name_t n)
{
    put(o, &n.len, sizeof n.len);
    put(o, n.s, n.len);
}

int ml_merge_pack(const ml_merge_t *t, char **out, size_t *outlen)
{
    *out = NULL;
    *outlen = 0;
    if (t->failed) return -1;
    packer_t o = {0};
    const size_t n = (size_t)t->nranks, u64s = n * sizeof(uint64_t);
    put(&o, ML_MAGIC_MERGE_PACK, 8);
    put(&o, &t->lo, sizeof t->lo);
    put(&o, &t->nranks, sizeof t->nranks);
    put_u32(&o, (uint32_t)t->any_sites);
    for (size_t r = 0; r < n; r++) {
        const rankinfo_t *x = &t->info[r];
        put_u8(&o, (uint8_t)x->present);
        put_u8(&o, (uint8_t)x->unknown_counted);
        put(&o, &x->head, sizeof x->head);
        put(&o, &x->tail, sizeof x->tail);
        put_name(&o, x->host);
        put_u32(&o, x->npeers);
        put(&o, t->peers + x->peer0, (size_t)x->npeers * sizeof *t->peers);
    }
    put_u32(&o, t->nfunctions);
    for (uint32_t i = 0; i < t->nfunctions; i++) {
        const function_t *f = &t->functions[i];
        put_name(&o, f->name);
        put_u8(&o, f->cls);
        uint64_t bins = 0;
        uint8_t last = 0;
        for (int b = 0; f->hist_calls && b < ML_SIZE_BINS; b++) {
            int any = 0;
            for (size_t r = 0; r < n && !any; r++) any = f->hist_calls[(size_t)b * n + r] != 0 || f->hist_ns[(size_t)b * n + r] != 0;
            if (any && b < 64) bins |= 1ull << b;
            if (any && b == 64) last = 1;
        }
        put(&o, &bins, sizeof bins);
        put_u8(&o, last);
        for (int b = 0; b < ML_SIZE_BINS; b++)
            if (b < 64 ? (bins >> b) & 1 : last) {
                put(&o, f->hist_calls + (size_t)b * n, u64s);
                put(&o, f->hist_ns + (size_t)b * n, u64s);
            }
    }
    put_u32(&o, t->nregions - 1);
    for (uint32_t i = 1; i < t->nregions; i++) {
        const region_t *g = &t->regions[i];
        put_u32(&o, g->parent);
        put_name(&o, g->name);
        put(&o, g->visits, u64s);
        put(&o, g->ns, u64s);
    }
    put_u32(&o, t->nseries);
    for (uint32_t i = 0; i < t->nseries; i++) {
        const series_t *x = &t->series[i];
        put_u32(&o, x->region);
        put_u32(&o, x->fn);
        const uint64_t *arrays[] = {x->calls, x->ns, x->min, x->max, x->sent, x->recv, x->timed};
        for (size_t a = 0; a < sizeof arrays / sizeof *arrays; a++) put(&o, arrays[a], u64s);
        put(&o, x->var, n * sizeof(double));
    }
    put_u32(&o, t->ncounters);
    for (uint32_t i = 0; i < t->ncounters; i++) {
        put_name(&o, t->counters[i].name);
        put_u8(&o, t->counters[i].kind);
    }
    put_u32(&o, t->ncvalues);
    for (uint32_t i = 0; i < t->ncvalues; i++) {
        const cvalue_t *c = &t->cvalues[i];
        put_u32(&o, c->region);
        put_u32(&o, c->counter);
        put(&o, c->value, n * sizeof(double));
        put(&o, c->when, u64s);
    }
    put_u32(&o, t->nmodules);
    for (uint32_t i = 0; i < t->nmodules; i++) put_name(&o, t->modules[i]);
    put_u32(&o, t->nframes);
    for (uint32_t i = 0; i < t->nframes; i++) {
        put_u32(&o, t->frames[i].module);
        put(&o, &t->frames[i].vaddr, sizeof t->frames[i].vaddr);
    }
    put_u32(&o, t->nsites);
    for (uint32_t i = 0; i < t->nsites; i++) {
        const gsite_t *x = &t->sites[i];
        put_u32(&o, x->fn);
        put_u32(&o, x->nframes);
        put_u32(&o, x->frame0);
        put(&o, &x->hash, sizeof x->hash);
        const uint64_t *arrays[] = {x->calls, x->ns, x->sent, x->recv};
        for (size_t a = 0; a < sizeof arrays / sizeof *arrays; a++) put(&o, arrays[a], u64s);
    }
    put(&o, ML_MAGIC_MERGE_PACK_END, 8);
    if (o.failed) {
        free(o.p);
        return -1;
    }
    *out = o.p;
    *outlen = o.len;
    return 0;
}

/* Reading a packed merge: `n` values per rank copied into the table at its offset. */
static void take_ranks(cursor_t *c, void *into, size_t n, size_t size)
{
    take(c, into, n * size);
}
static name_t take_name(cursor_t *c)
{
    uint16_t len;
    const char *s = str(c, &len);
    return (name_t){s, len};
}
static uint8_t u8(cursor_t *c)
{
    uint8_t v;
    take(c, &v, 1);
    return v;
}
/* A count of records of at least `least` bytes each: at most what is left, else the cursor is bad. */
static uint32_t count_of(cursor_t *c, size_t least)
{
    const uint32_t n = u32(c);
    if (!c->bad && (size_t)(c->end - c->p) / (least ? least : 1) < n) c->bad = 1;
    return c->bad ? 0 : n;
}

/* A packed part's region index (UINT32_MAX: the whole run) as the table's, in *out; -1 when it
 * names none of the part's nr regions (0, the root, is never a series' or a value's region). */
static int part_region(uint32_t region, uint32_t nr, const uint32_t *rmap, uint32_t *out)
{
    if (region == UINT32_MAX) return *out = UINT32_MAX, 0;
    if (region == 0 || region > nr) return -1;
    *out = rmap[region];
    return 0;
}

int ml_merge_add_packed(ml_merge_t *t, const char *data, size_t len)
{
    if (t->failed) return -1;
    cursor_t c = {data, data + len, 0};
    char magic[8];
    int32_t lo, nb;
    take(&c, magic, 8);
    take(&c, &lo, sizeof lo);
    take(&c, &nb, sizeof nb);
    /* a part of this table's range, none of whose ranks it holds yet */
    if (c.bad || memcmp(magic, ML_MAGIC_MERGE_PACK, 8) != 0 || nb < 1 || lo < t->lo || (int64_t)lo + nb > (int64_t)t->lo + t->nranks)
        return t->failed = 1, -1;
    const size_t off = (size_t)(lo - t->lo), n = (size_t)nb, u64s = n * sizeof(uint64_t);
    for (size_t r = 0; r < n; r++)
        if (t->info[off + r].present) return t->failed = 1, -1;
    t->any_sites |= u32(&c) != 0;
    for (size_t r = 0; r < n && !c.bad && !t->failed; r++) {
        rankinfo_t *x = &t->info[off + r];
        x->present = u8(&c);
        x->unknown_counted = u8(&c);
        take(&c, &x->head, sizeof x->head);
        take(&c, &x->tail, sizeof x->tail);
        const name_t host = take_name(&c);
        x->host = keep(t, host.s, host.len);
        x->peer0 = t->npeers;
        x->npeers = count_of(&c, sizeof(ml_payload_peer_t));
        for (uint32_t i = 0; i < x->npeers && !t->failed; i++) {
            ml_payload_peer_t *grown = grow(t, t->peers, t->npeers, &t->cap_peers, sizeof *grown);
            if (grown == NULL) break;
            t->peers = grown;
            take(&c, &t->peers[t->npeers++], sizeof *grown);
        }
    }
    /* functions: this part's ids -> the table's */
    const uint32_t nf = count_of(&c, 3);
    uint32_t *fmap = malloc(((size_t)nf + 1) * sizeof *fmap);
    uint32_t *rmap = NULL, *cmap = NULL, *mmap = NULL;
    uint32_t nr = 0, nc = 0, nm = 0;
    if (fmap == NULL) t->failed = 1;
    for (uint32_t i = 0; i < nf && !c.bad && !t->failed; i++) {
        const name_t name = take_name(&c);
        const uint8_t cls = u8(&c);
        fmap[i] = function_global(t, name.s, name.len, cls);
        uint64_t bins;
        take(&c, &bins, sizeof bins);
        const uint8_t last = u8(&c);
        if (fmap[i] == UINT32_MAX) break;
        function_t *f = &t->functions[fmap[i]];
        for (int b = 0; b < ML_SIZE_BINS && !c.bad; b++) {
            if (!(b < 64 ? (bins >> b) & 1 : last)) continue;
            if (f->hist_calls == NULL) {
                f->hist_calls = calloc((size_t)ML_SIZE_BINS * (size_t)t->nranks, sizeof(uint64_t));
                f->hist_ns = calloc((size_t)ML_SIZE_BINS * (size_t)t->nranks, sizeof(uint64_t));
                if (f->hist_calls == NULL || f->hist_ns == NULL) {
                    t->failed = 1;
                    break;
                }
            }
            const size_t at = (size_t)b * (size_t)t->nranks + off;
            take_ranks(&c, f->hist_calls + at, n, sizeof(uint64_t));
            take_ranks(&c, f->hist_ns + at, n, sizeof(uint64_t));
        }
    }
    /* regions, parents first: this part's indices -> the table's (0, the root, to 0) */
    nr = c.bad || t->failed ? 0 : count_of(&c, 6 + 2 * u64s);
    rmap = calloc((size_t)nr + 1, sizeof *rmap);
    if (rmap == NULL) t->failed = 1;
    for (uint32_t i = 1; i <= nr && !c.bad && !t->failed; i++) {
        const uint32_t parent = u32(&c);
        const name_t name = take_name(&c);
        if (parent >= i) {
            c.bad = 1;
            break;
        }
        rmap[i] = region_global(t, rmap[parent], name.s, name.len);
        if (rmap[i] == UINT32_MAX) break;
        take_ranks(&c, t->regions[rmap[i]].visits + off, n, sizeof(uint64_t));
        take_ranks(&c, t->regions[rmap[i]].ns + off, n, sizeof(uint64_t));
    }
    const uint32_t ns = c.bad || t->failed ? 0 : count_of(&c, 8 + 7 * u64s + n * sizeof(double));
    for (uint32_t i = 0; i < ns && !c.bad && !t->failed; i++) {
        const uint32_t packed_region = u32(&c), fn = u32(&c);
        uint32_t region;
        if (fn >= nf || part_region(packed_region, nr, rmap, &region) != 0) {
            c.bad = 1;
            break;
        }
        series_t *x = series_of(t, region, fmap[fn]);
        if (x == NULL) break;
        uint64_t *arrays[] = {x->calls, x->ns, x->min, x->max, x->sent, x->recv, x->timed};
        for (size_t a = 0; a < sizeof arrays / sizeof *arrays; a++) take_ranks(&c, arrays[a] + off, n, sizeof(uint64_t));
        take_ranks(&c, x->var + off, n, sizeof(double));
    }
    nc = c.bad || t->failed ? 0 : count_of(&c, 3);
    cmap = malloc(((size_t)nc + 1) * sizeof *cmap);
    if (cmap == NULL) t->failed = 1;
    for (uint32_t i = 0; i < nc && !c.bad && !t->failed; i++) {
        const name_t name = take_name(&c);
        const uint8_t kind = u8(&c);
        cmap[i] = counter_global(t, name.s, name.len, kind);
        if (cmap[i] == UINT32_MAX) break;
    }
    const uint32_t nv = c.bad || t->failed ? 0 : count_of(&c, 8 + n * sizeof(double) + u64s);
    for (uint32_t i = 0; i < nv && !c.bad && !t->failed; i++) {
        const uint32_t packed_region = u32(&c), counter = u32(&c);
        uint32_t region;
        if (counter >= nc || part_region(packed_region, nr, rmap, &region) != 0) {
            c.bad = 1;
            break;
        }
        cvalue_t *v = cvalue_of(t, region, cmap[counter]);
        if (v == NULL) break;
        take_ranks(&c, v->value + off, n, sizeof(double));
        take_ranks(&c, v->when + off, n, sizeof(uint64_t));
    }
    nm = c.bad || t->failed ? 0 : count_of(&c, 2);
    mmap = malloc(((size_t)nm + 1) * sizeof *mmap);
    if (mmap == NULL) t->failed = 1;
    for (uint32_t i = 0; i < nm && !c.bad && !t->failed; i++) {
        const name_t name = take_name(&c);
        mmap[i] = module_global(t, name.s, name.len);
    }
    const uint32_t nfr = c.bad || t->failed ? 0 : count_of(&c, 12);
    gframe_t *frames = malloc(((size_t)nfr + 1) * sizeof *frames);
    if (frames == NULL) t->failed = 1;
    for (uint32_t i = 0; i < nfr && !c.bad && !t->failed; i++) {
        const uint32_t module = u32(&c);
        frames[i].module = module < nm ? mmap[module] : UINT32_MAX;
        take(&c, &frames[i].vaddr, sizeof frames[i].vaddr);
    }
    const uint32_t nsite = c.bad || t->failed ? 0 : count_of(&c, 20 + 4 * u64s);
    for (uint32_t i = 0; i < nsite && !c.bad && !t->failed; i++) {
        const uint32_t fn = u32(&c), nframes = u32(&c), frame0 = u32(&c);
        uint64_t hash;
        take(&c, &hash, sizeof hash);
        if (fn >= nf || frame0 > nfr || nframes > nfr - frame0) {
            c.bad = 1;
            break;
        }
        gsite_t *x = site_of(t, fmap[fn], frames + frame0, nframes);
        if (x == NULL) break;
        uint64_t *arrays[] = {x->calls, x->ns, x->sent, x->recv};
        for (size_t a = 0; a < sizeof arrays / sizeof *arrays; a++) take_ranks(&c, arrays[a] + off, n, sizeof(uint64_t));
    }
    char end[8] = {0};
    take(&c, end, 8);
    if (c.bad || c.p != c.end || memcmp(end, ML_MAGIC_MERGE_PACK_END, 8) != 0) t->failed = 1;
    free(fmap), free(rmap), free(cmap), free(mmap), free(frames);
    return t->failed ? -1 : 0;
}

int ml_merge_write(FILE *f, ml_merge_t *t, const ml_merge_opts_t *o, size_t bytes) { return write_profile(f, t, o, bytes); }
