/* profile.json: rank 0 turns the payloads gathered at MPI_Finalize into the run's profile
 * (schema "mpilens.profile/1", documented in DESIGN.md and README.md). No analysis happens here:
 * values are laid out per rank, as measured; statistics across ranks are the Python side's job. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "ml.h"
#include "ml_intervals.h"
#include "ml_output.h"

#ifndef ML_VERSION
#define ML_VERSION "0"
#endif

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
static uint8_t u8(cursor_t *c) { uint8_t v; take(c, &v, 1); return v; }
static uint16_t u16(cursor_t *c) { uint16_t v; take(c, &v, 2); return v; }
static uint32_t u32(cursor_t *c) { uint32_t v; take(c, &v, 4); return v; }
static uint64_t u64(cursor_t *c) { uint64_t v; take(c, &v, 8); return v; }
static const char *str(cursor_t *c, uint16_t *len)
{
    *len = u16(c);
    if (c->bad || (size_t)(c->end - c->p) < *len) {
        c->bad = 1;
        *len = 0;
        return "";
    }
    const char *s = c->p;
    c->p += *len;
    return s;
}

typedef struct rankrec {
    int present;
    uint64_t wall_ns, mpi_ns, mpi_se_ns, init_ns, dropped_req, dropped_reg, mismatch, outstanding;
    uint32_t nthreads;
    const char *host;
    uint16_t hostlen;
    cursor_t regions, stats, hist, matrix, counters; /* each positioned at its section count */
    uint64_t intervals, intervals_dropped;
} rankrec_t;

/* Skip a section of n records whose layout is given by a per-record callback. */
static void skip_regions(cursor_t *c)
{
    for (uint32_t n = u32(c), i = 0; i < n && !c->bad; i++) {
        u32(c), u32(c), u64(c), u64(c);
        uint16_t l;
        str(c, &l);
    }
}
static void skip_fnames(cursor_t *c)
{
    for (uint32_t n = u32(c), i = 0; i < n && !c->bad; i++) {
        u16(c), u8(c);
        uint16_t l;
        str(c, &l);
    }
}
static void skip_fixed(cursor_t *c, size_t record)
{
    const uint32_t n = u32(c);
    if ((size_t)(c->end - c->p) < (size_t)n * record) {
        c->bad = 1;
        return;
    }
    c->p += (size_t)n * record;
}

static int parse_payload(cursor_t *c, rankrec_t *ranks, int nranks)
{
    char magic[8];
    take(c, magic, 8);
    if (c->bad || memcmp(magic, "MLPAYLD2", 8) != 0) return -1;
    const uint64_t total = u64(c);
    cursor_t body = {c->p, c->p - 16 + total, 0};
    if (total < 16 || body.end > c->end) return -1;
    c->p = body.end;
    const uint32_t rank = u32(&body);
    u32(&body); /* nranks */
    u32(&body), u32(&body), u32(&body); /* complete, reason, signal */
    if (rank >= (uint32_t)nranks) return -1;
    rankrec_t *r = &ranks[rank];
    r->nthreads = u32(&body);
    r->wall_ns = u64(&body);
    r->mpi_ns = u64(&body);
    r->mpi_se_ns = u64(&body);
    r->init_ns = u64(&body);
    r->dropped_req = u64(&body);
    r->dropped_reg = u64(&body);
    r->mismatch = u64(&body);
    r->outstanding = u64(&body);
    r->host = str(&body, &r->hostlen);
    r->regions = body;
    skip_regions(&body);
    skip_fnames(&body);
    r->stats = body;
    skip_fixed(&body, 4 + 2 + 8 * 8);
    r->hist = body;
    skip_fixed(&body, 2 + 1 + 2 * 8);
    r->matrix = body;
    skip_fixed(&body, 4 + 2 * 8);
    r->counters = body;
    skip_fnames(&body); /* same layout: u16 id, u8 kind, str name */
    skip_fixed(&body, 4 + 2 + 3 * 8);
    r->intervals = u64(&body);
    r->intervals_dropped = u64(&body);
    r->present = !body.bad;
    return body.bad ? -1 : 0;
}

/* ------------------------------------------------------------------------------- merging */
typedef struct region {
    const char *name;
    uint16_t nlen;
    uint32_t parent;
    uint64_t *visits, *ns; /* per rank */
} region_t;

typedef struct series { /* one function (in one region, or overall): values per rank */
    uint32_t region; /* UINT32_MAX: the whole run */
    uint16_t fn;
    uint64_t *calls, *ns, *min, *max, *sent, *recv;
    uint64_t *timed; /* calls timed (MPILENS_TIME_SAMPLE) */
    double *var;     /* variance of the estimated ns (MPILENS_TIME_SAMPLE) */
} series_t;

typedef struct table {
    int nranks;
    region_t *regions;
    uint32_t nregions, cap_regions;
    series_t *series;
    uint32_t nseries, cap_series;
    uint64_t *hist_calls, *hist_ns; /* [ML_NFUNC][ML_NBINS][nranks], allocated when needed */
    struct cname { const char *name; uint16_t len; uint8_t kind; } cnames[ML_MAX_COUNTERS];
    uint32_t ncnames;
    struct cvalue { uint32_t region, counter; double *value; uint64_t *when; } *cvalues;
    uint32_t ncvalues, cap_cvalues;
} table_t;

static uint64_t *per_rank(int nranks) { return calloc((size_t)nranks, sizeof(uint64_t)); }

static uint32_t region_global(table_t *t, uint32_t parent, const char *name, uint16_t nlen)
{
    for (uint32_t i = 1; i < t->nregions; i++)
        if (t->regions[i].parent == parent && t->regions[i].nlen == nlen && memcmp(t->regions[i].name, name, nlen) == 0)
            return i;
    if (t->nregions == t->cap_regions) {
        t->cap_regions *= 2;
        t->regions = realloc(t->regions, t->cap_regions * sizeof *t->regions);
    }
    region_t *r = &t->regions[t->nregions];
    *r = (region_t){name, nlen, parent, per_rank(t->nranks), per_rank(t->nranks)};
    return t->nregions++;
}

static series_t *series_of(table_t *t, uint32_t region, uint16_t fn)
{
    for (uint32_t i = 0; i < t->nseries; i++)
        if (t->series[i].region == region && t->series[i].fn == fn) return &t->series[i];
    if (t->nseries == t->cap_series) {
        t->cap_series *= 2;
        t->series = realloc(t->series, t->cap_series * sizeof *t->series);
    }
    series_t *s = &t->series[t->nseries++];
    const int n = t->nranks;
    *s = (series_t){region, fn, per_rank(n), per_rank(n), per_rank(n), per_rank(n), per_rank(n), per_rank(n), per_rank(n),
                    calloc((size_t)n, sizeof(double))};
    return s;
}

static void add(series_t *s, int rank, uint64_t calls, uint64_t ns, uint64_t mn, uint64_t mx, uint64_t timed,
                uint64_t se, uint64_t sent, uint64_t recv)
{
    s->timed[rank] += timed;
    s->var[rank] += (double)se * (double)se;
    if (calls > 0) {
        if (s->calls[rank] == 0 || mn < s->min[rank]) s->min[rank] = mn;
        if (mx > s->max[rank]) s->max[rank] = mx;
    }
    s->calls[rank] += calls;
    s->ns[rank] += ns;
    s->sent[rank] += sent;
    s->recv[rank] += recv;
}

static uint32_t counter_global(table_t *t, const char *name, uint16_t len, uint8_t kind)
{
    for (uint32_t i = 0; i < t->ncnames; i++)
        if (t->cnames[i].len == len && memcmp(t->cnames[i].name, name, len) == 0) return i;
    if (t->ncnames == ML_MAX_COUNTERS) return UINT32_MAX;
    t->cnames[t->ncnames] = (struct cname){name, len, kind};
    return t->ncnames++;
}

/* The values of one counter in one region (UINT32_MAX: the whole run), per rank; NaN: unset. */
static struct cvalue *cvalue_of(table_t *t, uint32_t region, uint32_t counter)
{
    for (uint32_t i = 0; i < t->ncvalues; i++)
        if (t->cvalues[i].region == region && t->cvalues[i].counter == counter) return &t->cvalues[i];
    if (t->ncvalues == t->cap_cvalues) {
        t->cap_cvalues = t->cap_cvalues ? 2 * t->cap_cvalues : 16;
        t->cvalues = realloc(t->cvalues, t->cap_cvalues * sizeof *t->cvalues);
    }
    struct cvalue *c = &t->cvalues[t->ncvalues++];
    c->region = region;
    c->counter = counter;
    c->value = malloc((size_t)t->nranks * sizeof(double));
    c->when = calloc((size_t)t->nranks, sizeof(uint64_t));
    for (int i = 0; i < t->nranks; i++) c->value[i] = __builtin_nan("");
    return c;
}

static void counter_add(table_t *t, uint32_t region, uint32_t counter, int rank, double v, uint64_t when)
{
    struct cvalue *c = cvalue_of(t, region, counter);
    const int unset = c->value[rank] != c->value[rank];
    if (t->cnames[counter].kind == ML_COUNTER_SUM)
        c->value[rank] = unset ? v : c->value[rank] + v;
    else if (unset || when >= c->when[rank])
        c->value[rank] = v;
    if (when > c->when[rank]) c->when[rank] = when;
}

static void merge_rank(table_t *t, int rank, rankrec_t *r)
{
    /* local region path -> global region */
    cursor_t c = r->regions;
    const uint32_t n = u32(&c);
    uint32_t *local = calloc((size_t)ml_g.max_paths + 1, sizeof(uint32_t));
    for (uint32_t i = 0; i < n; i++) {
        const uint32_t p = u32(&c), parent = u32(&c);
        const uint64_t visits = u64(&c), ns = u64(&c);
        uint16_t len;
        const char *name = str(&c, &len);
        if (p > ml_g.max_paths || parent > ml_g.max_paths) continue;
        const uint32_t g = region_global(t, local[parent], name, len);
        local[p] = g;
        t->regions[g].visits[rank] += visits;
        t->regions[g].ns[rank] += ns;
    }
    c = r->stats;
    for (uint32_t m = u32(&c), i = 0; i < m && !c.bad; i++) {
        const uint32_t p = u32(&c);
        const uint16_t fn = u16(&c);
        const uint64_t calls = u64(&c), ns = u64(&c), mn = u64(&c), mx = u64(&c), timed = u64(&c), se = u64(&c);
        const uint64_t sent = u64(&c), recv = u64(&c);
        if (fn >= ML_NFUNC || p > ml_g.max_paths) continue;
        add(series_of(t, UINT32_MAX, fn), rank, calls, ns, mn, mx, timed, se, sent, recv);
        if (p != 0) add(series_of(t, local[p], fn), rank, calls, ns, mn, mx, timed, se, sent, recv);
    }
    /* user counters: local ids -> global names */
    c = r->counters;
    uint32_t gid[ML_MAX_COUNTERS];
    for (uint32_t k = 0; k < ML_MAX_COUNTERS; k++) gid[k] = UINT32_MAX;
    for (uint32_t m = u32(&c), i = 0; i < m && !c.bad; i++) {
        const uint16_t id = u16(&c);
        const uint8_t kind = u8(&c);
        uint16_t len;
        const char *name = str(&c, &len);
        if (id < ML_MAX_COUNTERS) gid[id] = counter_global(t, name, len, kind);
    }
    for (uint32_t m = u32(&c), i = 0; i < m && !c.bad; i++) {
        const uint32_t p = u32(&c);
        const uint16_t id = u16(&c);
        double v;
        take(&c, &v, 8);
        u64(&c);
        const uint64_t when = u64(&c);
        if (id >= ML_MAX_COUNTERS || gid[id] == UINT32_MAX || p > ml_g.max_paths) continue;
        counter_add(t, UINT32_MAX, gid[id], rank, v, when);
        if (p != 0) counter_add(t, local[p], gid[id], rank, v, when);
    }
    free(local);
    c = r->hist;
    for (uint32_t m = u32(&c), i = 0; i < m && !c.bad; i++) {
        const uint16_t fn = u16(&c);
        const uint8_t bin = u8(&c);
        const uint64_t calls = u64(&c), ns = u64(&c);
        if (fn >= ML_NFUNC || bin >= ML_NBINS) continue;
        if (t->hist_calls == NULL) {
            t->hist_calls = calloc((size_t)ML_NFUNC * ML_NBINS * (size_t)t->nranks, sizeof(uint64_t));
            t->hist_ns = calloc((size_t)ML_NFUNC * ML_NBINS * (size_t)t->nranks, sizeof(uint64_t));
            if (t->hist_calls == NULL || t->hist_ns == NULL) return;
        }
        const size_t k = ((size_t)fn * ML_NBINS + bin) * (size_t)t->nranks + (size_t)rank;
        t->hist_calls[k] += calls;
        t->hist_ns[k] += ns;
    }
}

/* ------------------------------------------------------------------------------- writing */
static void u64_array(FILE *f, const uint64_t *v, int n, const rankrec_t *ranks)
{
    fputc('[', f);
    for (int i = 0; i < n; i++) {
        if (i) fputs(", ", f);
        if (!ranks[i].present)
            fputs("null", f); /* a rank that left no data measured nothing, not zero */
        else
            fprintf(f, "%llu", (unsigned long long)v[i]);
    }
    fputc(']', f);
}

static void seconds_array(FILE *f, const uint64_t *ns, int n, const uint64_t *calls, const rankrec_t *ranks)
{
    fputc('[', f);
    for (int i = 0; i < n; i++) {
        if (i) fputs(", ", f);
        /* a minimum or maximum over no call, or a rank that left no data, is not a number */
        if ((calls != NULL && calls[i] == 0) || !ranks[i].present)
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
    for (uint32_t k = 0; k < t->ncnames; k++) {
        struct cvalue *c = NULL;
        for (uint32_t i = 0; i < t->ncvalues && !c; i++)
            if (t->cvalues[i].region == region && t->cvalues[i].counter == k) c = &t->cvalues[i];
        if (c == NULL) continue;
        fprintf(f, "%s\n%s  ", first ? "" : ",", indent);
        ml_json_strn(f, t->cnames[k].name, t->cnames[k].len);
        fprintf(f, ": {\"kind\": \"%s\", \"values\": [", t->cnames[k].kind == ML_COUNTER_SUM ? "sum" : "last");
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

static int by_name(const void *a, const void *b)
{
    const series_t *x = *(series_t *const *)a, *y = *(series_t *const *)b;
    return strcmp(ml_fn_name[x->fn], ml_fn_name[y->fn]);
}

static void write_functions(FILE *f, table_t *t, uint32_t region, const rankrec_t *ranks, const char *indent)
{
    series_t **sel = malloc((t->nseries + 1) * sizeof *sel);
    uint32_t k = 0;
    for (uint32_t i = 0; i < t->nseries; i++)
        if (t->series[i].region == region) sel[k++] = &t->series[i];
    qsort(sel, k, sizeof *sel, by_name);
    fputc('{', f);
    const int n = t->nranks;
    for (uint32_t i = 0; i < k; i++) {
        series_t *s = sel[i];
        fprintf(f, "%s\n%s  \"%s\": {\"class\": \"%s\",\n%s    \"calls\": ", i ? "," : "", indent, ml_fn_name[s->fn],
                ml_class_name[ml_fn_class[s->fn]], indent);
        u64_array(f, s->calls, n, ranks);
        fprintf(f, ",\n%s    \"time_s\": ", indent);
        seconds_array(f, s->ns, n, NULL, ranks);
        fprintf(f, ",\n%s    \"min_s\": ", indent);
        seconds_array(f, s->min, n, s->calls, ranks);
        fprintf(f, ",\n%s    \"max_s\": ", indent);
        seconds_array(f, s->max, n, s->calls, ranks);
        if (ml_g.config.time_sample > 1) {
            fprintf(f, ",\n%s    \"timed_calls\": ", indent);
            u64_array(f, s->timed, n, ranks);
            uint64_t *se = per_rank(n);
            for (int r = 0; se && r < n; r++) se[r] = s->var[r] > 0 ? (uint64_t)__builtin_sqrt(s->var[r]) : 0;
            if (se) {
                fprintf(f, ",\n%s    \"time_s_se\": ", indent);
                seconds_array(f, se, n, NULL, ranks);
            }
            free(se);
        }
        fprintf(f, ",\n%s    \"bytes_sent\": ", indent);
        u64_array(f, s->sent, n, ranks);
        fprintf(f, ",\n%s    \"bytes_recv\": ", indent);
        u64_array(f, s->recv, n, ranks);
        fputc('}', f);
    }
    if (k) fprintf(f, "\n%s", indent);
    fputc('}', f);
    free(sel);
}

static void write_regions(FILE *f, table_t *t, uint32_t parent, const rankrec_t *ranks, int depth)
{
    char indent[64];
    snprintf(indent, sizeof indent, "%*s", 2 + 4 * depth, "");
    fputc('[', f);
    int first = 1;
    for (uint32_t i = 1; i < t->nregions; i++) {
        region_t *r = &t->regions[i];
        if (r->parent != parent) continue;
        fprintf(f, "%s\n%s  {\"name\": ", first ? "" : ",", indent);
        ml_json_strn(f, r->name, r->nlen);
        fprintf(f, ",\n%s   \"visits\": ", indent);
        u64_array(f, r->visits, t->nranks, ranks);
        fprintf(f, ",\n%s   \"time_s\": ", indent);
        seconds_array(f, r->ns, t->nranks, NULL, ranks);
        fprintf(f, ",\n%s   \"functions\": ", indent);
        char sub[80];
        snprintf(sub, sizeof sub, "%s   ", indent);
        write_functions(f, t, i, ranks, sub);
        fprintf(f, ",\n%s   \"counters\": ", indent);
        write_counters(f, t, i, sub);
        fprintf(f, ",\n%s   \"regions\": ", indent);
        write_regions(f, t, i, ranks, depth + 1);
        fputc('}', f);
        first = 0;
    }
    if (!first) fprintf(f, "\n%s", indent);
    fputc(']', f);
}

static void write_message_sizes(FILE *f, table_t *t, const rankrec_t *ranks)
{
    fputc('{', f);
    int first_fn = 1;
    const int n = t->nranks;
    /* functions in name order, like "functions" */
    int *order = malloc(ML_NFUNC * sizeof *order);
    for (int i = 0; i < ML_NFUNC; i++) order[i] = i;
    for (int i = 1; i < ML_NFUNC; i++)
        for (int j = i; j > 0 && strcmp(ml_fn_name[order[j - 1]], ml_fn_name[order[j]]) > 0; j--) {
            int x = order[j];
            order[j] = order[j - 1];
            order[j - 1] = x;
        }
    for (int oi = 0; t->hist_calls && oi < ML_NFUNC; oi++) {
        const int fn = order[oi];
        int first_bin = 1;
        for (int b = 0; b < ML_NBINS; b++) {
            const size_t k = ((size_t)fn * ML_NBINS + b) * (size_t)n;
            uint64_t any = 0;
            for (int r = 0; r < n; r++) any |= t->hist_calls[k + r];
            if (!any) continue;
            if (first_bin) fprintf(f, "%s\n    \"%s\": [", first_fn ? "" : ",", ml_fn_name[fn]);
            const unsigned long long lo = b == 0 ? 0 : 1ull << (b - 1);
            const unsigned long long hi = b == 0 ? 0 : (b == 64 ? ~0ull : (1ull << b) - 1);
            fprintf(f, "%s\n      {\"bin\": %d, \"min_bytes\": %llu, \"max_bytes\": %llu, \"calls\": ", first_bin ? "" : ",",
                    b, lo, hi);
            u64_array(f, t->hist_calls + k, n, ranks);
            fputs(", \"time_s\": ", f);
            seconds_array(f, t->hist_ns + k, n, NULL, ranks);
            fputc('}', f);
            first_bin = 0;
            first_fn = 0;
        }
        if (!first_bin) fputs("]", f);
    }
    free(order);
    fputs(first_fn ? "}" : "\n  }", f);
}

int ml_profile_write(const char *path, const char *payloads, size_t len, int nranks, double gather_s)
{
    rankrec_t *ranks = calloc((size_t)nranks, sizeof *ranks);
    table_t t = {.nranks = nranks, .nregions = 1, .cap_regions = 16, .cap_series = 64};
    t.regions = calloc(t.cap_regions, sizeof *t.regions);
    t.series = calloc(t.cap_series, sizeof *t.series);
    if (ranks == NULL || t.regions == NULL || t.series == NULL) return -1;
    cursor_t c = {payloads, payloads + len, 0};
    while (c.p < c.end)
        if (parse_payload(&c, ranks, nranks) != 0) break;
    for (int r = 0; r < nranks; r++)
        if (ranks[r].present) merge_rank(&t, r, &ranks[r]);

    char tmp[4300];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (f == NULL) return -1;
    uint64_t wall = 0, dropped_req = 0, dropped_reg = 0, mismatch = 0, outstanding = 0;
    int complete = 1;
    for (int r = 0; r < nranks; r++) {
        if (ranks[r].wall_ns > wall) wall = ranks[r].wall_ns;
        dropped_req += ranks[r].dropped_req;
        dropped_reg += ranks[r].dropped_reg;
        mismatch += ranks[r].mismatch;
        outstanding += ranks[r].outstanding;
        complete &= ranks[r].present;
    }
    fprintf(f, "{\n  \"schema\": \"mpilens.profile/1\",\n  \"tool\": {\"name\": \"mpilens\", \"version\": \"%s\", "
               "\"mpi\": \"%s\"},\n  \"complete\": %s,\n  \"nranks\": %d,\n  \"wall_time_s\": ",
            ML_VERSION, ML_MPI_FLAVOR, complete ? "true" : "false", nranks);
    ml_json_seconds(f, wall);
    if (ml_g.config.time_sample > 1) fprintf(f, ",\n  \"time_sample\": %ld", (long)ml_g.config.time_sample);
    fputs(",\n  \"ranks\": [", f);
    for (int r = 0; r < nranks; r++) {
        fprintf(f, "%s\n    {\"rank\": %d, \"host\": ", r ? "," : "", r);
        if (!ranks[r].present) {
            fputs("null, \"wall_time_s\": null, \"mpi_time_s\": null, \"init_time_s\": null, \"threads\": null}", f);
            continue;
        }
        ml_json_strn(f, ranks[r].host, ranks[r].hostlen);
        fputs(", \"wall_time_s\": ", f);
        ml_json_seconds(f, ranks[r].wall_ns);
        fputs(", \"mpi_time_s\": ", f);
        ml_json_seconds(f, ranks[r].mpi_ns);
        if (ml_g.config.time_sample > 1) {
            fputs(", \"mpi_time_s_se\": ", f);
            ml_json_seconds(f, ranks[r].mpi_se_ns);
        }
        fputs(", \"init_time_s\": ", f);
        ml_json_seconds(f, ranks[r].init_ns);
        fprintf(f, ", \"threads\": %u}", ranks[r].nthreads);
    }
    fputs("\n  ],\n  \"functions\": ", f);
    write_functions(f, &t, UINT32_MAX, ranks, "  ");
    fputs(",\n  \"message_sizes\": ", f);
    write_message_sizes(f, &t, ranks);
    fputs(",\n  \"matrix\": [", f);
    int first = 1;
    for (int r = 0; r < nranks; r++) {
        if (!ranks[r].present) continue;
        cursor_t m = ranks[r].matrix;
        for (uint32_t n = u32(&m), i = 0; i < n && !m.bad; i++) {
            const uint32_t dst = u32(&m);
            const uint64_t msgs = u64(&m), bytes = u64(&m);
            fprintf(f, "%s\n    {\"src\": %d, \"dst\": %u, \"messages\": %llu, \"bytes\": %llu}", first ? "" : ",", r,
                    dst, (unsigned long long)msgs, (unsigned long long)bytes);
            first = 0;
        }
    }
    fputs(first ? "]" : "\n  ]", f);
    fputs(",\n  \"counters\": ", f);
    write_counters(f, &t, UINT32_MAX, "  ");
    fputs(",\n  \"regions\": ", f);
    write_regions(f, &t, 0, ranks, 0);
    if (ml_g.intervals) {
        fputs(",\n  \"intervals\": {\"recorded\": [", f);
        for (int r = 0; r < nranks; r++) fprintf(f, "%s%llu", r ? ", " : "", (unsigned long long)ranks[r].intervals);
        fputs("], \"dropped\": [", f);
        for (int r = 0; r < nranks; r++)
            fprintf(f, "%s%llu", r ? ", " : "", (unsigned long long)ranks[r].intervals_dropped);
        fputs("], \"files\": \"ranks/intervals-NNNNNN.bin\"}", f);
    }
    fprintf(f, ",\n  \"dropped\": {\"requests_untracked\": %llu, \"region_paths\": %llu, \"region_mismatches\": %llu, "
               "\"requests_outstanding_at_finalize\": %llu},\n",
            (unsigned long long)dropped_req, (unsigned long long)dropped_reg, (unsigned long long)mismatch,
            (unsigned long long)outstanding);
    fprintf(f, "  \"tool_cost\": {\"finalize_gather_s\": %.6f, \"payload_bytes\": %zu}\n}\n", gather_s, len);
    const int bad = ferror(f);
    if (fclose(f) != 0 || bad) return -1;
    for (uint32_t i = 0; i < t.nseries; i++) {
        free(t.series[i].calls), free(t.series[i].ns), free(t.series[i].min);
        free(t.series[i].max), free(t.series[i].sent), free(t.series[i].recv), free(t.series[i].timed), free(t.series[i].var);
    }
    for (uint32_t i = 1; i < t.nregions; i++) free(t.regions[i].visits), free(t.regions[i].ns);
    for (uint32_t i = 0; i < t.ncvalues; i++) free(t.cvalues[i].value), free(t.cvalues[i].when);
    free(t.cvalues);
    free(t.series), free(t.regions), free(t.hist_calls), free(t.hist_ns), free(ranks);
    return rename(tmp, path);
}
