/* PAPI mode (MPILENS_MODE=papi): counters of PAPI events per rank, split into the compute
 * between MPI calls (per region path) and the MPI calls (per function); and the mpilens
 * counters published as PAPI software-defined events (sde:::mpilens::NAME).
 *
 * libpapi and libsde are opened with dlopen, never linked: the preloaded runtime then loads in
 * every process whether PAPI is installed or not, and a missing PAPI is one message in papi
 * mode instead of a loader error in every mode (docs/papi.md).
 *
 * When the counters are read (MPILENS_PAPI_READ):
 *   calls    before each MPI call (the delta since the last read is compute of the current
 *            region path), after it (the delta is MPI time of that function) and at region
 *            boundaries (compute of the region being left);
 *   regions  only at region boundaries and at MPI_Finalize (region totals, compute and MPI).
 * With calls, MPILENS_PAPI_MIN_US = N > 0 bounds the cost: a compute stretch shorter than N us is
 * not read at the MPI call that ends it, and such a call is not read at its end unless it lasted
 * N us itself; the counts not read go to the next stretch that is (compute of the current
 * region path, or the MPI function whose long call ends it). Region boundaries are always read,
 * so per-region totals stay exact; only the split of compute and MPI inside a region blurs, by at
 * most N us per stretch. At most about one read per N us of run time.
 * A read is one PAPI_read (a read(2) of the perf_event file descriptors where the kernel gives
 * no user-space counter access); its measured cost is written with the counts.
 *
 * Output: papi/rank-NNNNNN.json per rank, written at MPI_Finalize (format: docs/papi.md). Until
 * then each thread's counts live in its section of the rank's statistics file (a stats_papi and its
 * arrays, the area papi asks for at load), so that `mpilens papi` reads them there for a rank that
 * was killed, or ended without MPI_Finalize (python/mpilens/recover.py). */
#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "json.h"
#include "ml.h"
#include "ml_files.h"
#include "ml_papi.h"
#include "ml_counters.h"
#include "ml_stats.h"

/* The PAPI constants this file uses, from papi.h 7 (its ABI since PAPI 5); papi.h itself is not
 * needed to build the runtime. */
#define ML_PAPI_OK 0
#define ML_PAPI_NULL (-1)
#define ML_PAPI_VER_CURRENT 0x07000000
#define ML_PAPI_VER_MAJOR(v) (((v) >> 24) & 0xff)
#define ML_XSTR(x) #x
#define ML_STR(x) ML_XSTR(x)

/* ------------------------------------------------------------------------------- libpapi */
static struct {
    void *lib;
    int (*library_init)(int);
    int (*thread_init)(unsigned long (*)(void));
    int (*create_eventset)(int *);
    int (*add_named_event)(int, const char *);
    int (*start)(int);
    int (*read)(int, long long *);
    int (*stop)(int, long long *);
    int (*cleanup_eventset)(int);
    int (*destroy_eventset)(int *);
    int (*multiplex_init)(void);
    int (*assign_eventset_component)(int, int);
    int (*set_multiplex)(int);
    char *(*strerror)(int);
} P;

static int load_papi(char *why, size_t n)
{
    static const char *const names[] = {"libpapi.so.7.0", "libpapi.so.7", "libpapi.so"};
    for (size_t i = 0; i < sizeof names / sizeof names[0] && P.lib == NULL; i++)
        P.lib = dlopen(names[i], RTLD_NOW | RTLD_GLOBAL);
    if (P.lib == NULL) {
        snprintf(why, n, "libpapi.so.7 cannot be loaded (%s); install PAPI (Debian: libpapi7.0)", dlerror());
        return -1;
    }
#define ML_SYM(field, name)                                                                                  \
    if ((*(void **)&P.field = dlsym(P.lib, name)) == NULL) {                                                 \
        snprintf(why, n, "libpapi has no %s", name);                                                         \
        return -1;                                                                                           \
    }
    ML_SYM(library_init, "PAPI_library_init");
    ML_SYM(thread_init, "PAPI_thread_init");
    ML_SYM(create_eventset, "PAPI_create_eventset");
    ML_SYM(add_named_event, "PAPI_add_named_event");
    ML_SYM(start, "PAPI_start");
    ML_SYM(read, "PAPI_read");
    ML_SYM(stop, "PAPI_stop");
    ML_SYM(cleanup_eventset, "PAPI_cleanup_eventset");
    ML_SYM(destroy_eventset, "PAPI_destroy_eventset");
    ML_SYM(multiplex_init, "PAPI_multiplex_init");
    ML_SYM(assign_eventset_component, "PAPI_assign_eventset_component");
    ML_SYM(set_multiplex, "PAPI_set_multiplex");
    ML_SYM(strerror, "PAPI_strerror");
#undef ML_SYM
    const int v = P.library_init(ML_PAPI_VER_CURRENT);
    if (v < 0 || ML_PAPI_VER_MAJOR(v) != ML_PAPI_VER_MAJOR(ML_PAPI_VER_CURRENT)) {
        snprintf(why, n, "PAPI_library_init failed (%s)", v < 0 ? P.strerror(v) : "not PAPI 7");
        return -1;
    }
    P.thread_init((unsigned long (*)(void))pthread_self); /* already done by the application: fine */
    return 0;
}

/* ------------------------------------------------------------------------------- event choice */
static struct {
    int on;        /* counting in this run */
    int per_call;  /* MPILENS_PAPI_READ=calls */
    uint64_t min_ticks; /* MPILENS_PAPI_MIN_US in ticks (0: read at every call) */
    int multiplex;
    int n;
    char names[ML_PAPI_MAX_EVENTS][128];
    char refused[1024]; /* "NAME (reason), ..." of the requested events left out */
    char off_reason[512];
} ev;

/* A new running-capable event set of the chosen events (or of `names` while choosing). */
static int new_eventset(int *es)
{
    *es = ML_PAPI_NULL;
    int rc = P.create_eventset(es);
    if (rc != ML_PAPI_OK) return rc;
    if (ev.multiplex) {
        /* multiplexing needs the event set bound to a component first (the CPU one, 0) */
        if ((rc = P.assign_eventset_component(*es, 0)) != ML_PAPI_OK || (rc = P.set_multiplex(*es)) != ML_PAPI_OK) {
            P.destroy_eventset(es);
            return rc;
        }
    }
    return 0;
}

/* Add `name` to the event set under trial; keep it when the set still starts. */
static int try_event(int es, const char *name, char *reason, size_t n)
{
    int rc = P.add_named_event(es, name);
    if (rc == ML_PAPI_OK) {
        long long tmp[ML_PAPI_MAX_EVENTS + 1];
        rc = P.start(es);
        if (rc == ML_PAPI_OK) {
            P.stop(es, tmp);
            return 0;
        }
        /* it does not fit with the others: rebuild the set without it */
        P.cleanup_eventset(es);
        for (int i = 0; i < ev.n; i++) P.add_named_event(es, ev.names[i]);
    }
    snprintf(reason, n, "%s", P.strerror(rc));
    return -1;
}

static void refuse(const char *name, const char *reason)
{
    size_t len = strlen(ev.refused);
    snprintf(ev.refused + len, sizeof ev.refused - len, "%s%s (%s)", len ? ", " : "", name, reason);
}

static void choose_events(const char *requested)
{
    int es;
    if (new_eventset(&es) != 0) {
        snprintf(ev.off_reason, sizeof ev.off_reason, "PAPI cannot create an event set%s",
                 ev.multiplex ? " with multiplexing" : "");
        return;
    }
    char reason[256];
    if (requested[0] != 0) {
        char name[128];
        for (const char *p = requested; *p;) {
            const size_t len = strcspn(p, ",");
            snprintf(name, sizeof name, "%.*s", (int)(len < sizeof name ? len : sizeof name - 1), p);
            p += len + (p[len] == ',');
            if (name[0] == 0) continue;
            if (ev.n == ML_PAPI_MAX_EVENTS) {
                refuse(name, "more than " ML_STR(ML_PAPI_MAX_EVENTS) " events");
            } else if (try_event(es, name, reason, sizeof reason) == 0) {
                snprintf(ev.names[ev.n++], sizeof ev.names[0], "%s", name);
            } else {
                refuse(name, reason);
            }
        }
    } else {
        /* the default: what this machine accepts, hardware first */
        static const char *const hw[] = {"PAPI_TOT_INS", "PAPI_TOT_CYC", "PAPI_L1_DCM", "PAPI_L2_TCM"};
        static const char *const sw[] = {"perf::TASK-CLOCK", "perf::PAGE-FAULTS"};
        for (size_t i = 0; i < sizeof hw / sizeof hw[0]; i++)
            if (try_event(es, hw[i], reason, sizeof reason) == 0) snprintf(ev.names[ev.n++], sizeof ev.names[0], "%s", hw[i]);
        if (ev.n == 0)
            for (size_t i = 0; i < sizeof sw / sizeof sw[0]; i++)
                if (try_event(es, sw[i], reason, sizeof reason) == 0)
                    snprintf(ev.names[ev.n++], sizeof ev.names[0], "%s", sw[i]);
    }
    P.cleanup_eventset(es);
    P.destroy_eventset(&es);
    if (ev.n == 0) snprintf(ev.off_reason, sizeof ev.off_reason, "none of the PAPI events can be counted here");
}

/* ------------------------------------------------------------------------------- per thread */
struct ml_papi_thread {
    int es;                 /* this thread's event set, or ML_PAPI_NULL when it could not start */
    ml_stats_papi_t *head;  /* its counts' head in the statistics file (reads, read_ticks, unread, offsets) */
    int in_mpi;             /* read at the start of the current MPI call */
    uint64_t enter_tick;    /* start of the current MPI call */
    uint64_t last_tick;     /* time of the last read */
    long long last[ML_PAPI_MAX_EVENTS];
    /* the arrays, in the thread's area of the statistics file (or in memory when it has none) */
    long long *compute;     /* [max_paths][n]: between MPI calls (all of it in regions mode) */
    uint64_t *compute_ticks; /* [max_paths] */
    uint64_t *phases;       /* [max_paths]: compute stretches ended by an MPI call or a region edge */
    long long *mpi_path;    /* [max_paths][n]: inside MPI calls */
    long long *mpi_fn;      /* [ML_NFUNC][n] */
    uint64_t *mpi_fn_ticks; /* [ML_NFUNC] */
    struct ml_papi_thread *next;
};

/* The bytes of a thread's counts for n events over `paths` region paths: a stats_papi, then its
 * arrays (runtime/spec/rundir.yaml) */
static size_t area_bytes(size_t n, size_t paths)
{
    return sizeof(ml_stats_papi_t) + (2 * paths * n + (size_t)ML_NFUNC * n) * sizeof(long long) +
           (2 * paths + (size_t)ML_NFUNC) * sizeof(uint64_t);
}

/* The thread's arrays laid out in `area` (zeroed, area_bytes long) for ev.n events */
static void lay_out(struct ml_papi_thread *p, char *area, size_t paths)
{
    const size_t n = (size_t)ev.n;
    ml_stats_papi_t *h = (ml_stats_papi_t *)area;
    h->nfunc = ML_NFUNC;
    h->compute = sizeof *h;
    h->mpi_path = h->compute + paths * n * sizeof(long long);
    h->mpi_fn = h->mpi_path + paths * n * sizeof(long long);
    h->compute_ticks = h->mpi_fn + (size_t)ML_NFUNC * n * sizeof(long long);
    h->phases = h->compute_ticks + paths * sizeof(uint64_t);
    h->fn_ticks = h->phases + paths * sizeof(uint64_t);
    p->head = h;
    p->compute = (long long *)(area + h->compute);
    p->mpi_path = (long long *)(area + h->mpi_path);
    p->mpi_fn = (long long *)(area + h->mpi_fn);
    p->compute_ticks = (uint64_t *)(area + h->compute_ticks);
    p->phases = (uint64_t *)(area + h->phases);
    p->mpi_fn_ticks = (uint64_t *)(area + h->fn_ticks);
}

static struct ml_papi_thread *all_threads;
static size_t area_paths; /* the region paths the statistics file's areas were sized for (0: none) */
int ml_papi_regions;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void thread_start(ml_thread_t *t)
{
    const size_t paths = ml_g.max_paths;
    struct ml_papi_thread *p = calloc(1, sizeof *p);
    if (p == NULL) return;
    /* the statistics file's area when the thread's section has one for these events, else memory */
    char *area = ml_stats_part(t, ML_STATS_MODE);
    if (area == NULL || area_paths != paths) area = calloc(1, area_bytes((size_t)ev.n, paths));
    if (area != NULL) lay_out(p, area, paths);
    p->es = ML_PAPI_NULL;
    if (area != NULL && new_eventset(&p->es) == 0) {
        int ok = 1;
        for (int i = 0; i < ev.n && ok; i++) ok = P.add_named_event(p->es, ev.names[i]) == ML_PAPI_OK;
        if (!ok || P.start(p->es) != ML_PAPI_OK || P.read(p->es, p->last) != ML_PAPI_OK) {
            ml_log(1, "PAPI: a thread could not start its event set; its counts are missing");
            P.cleanup_eventset(p->es);
            P.destroy_eventset(&p->es);
            p->es = ML_PAPI_NULL;
        }
    }
    if (p->es != ML_PAPI_NULL) p->head->events = (uint32_t)ev.n; /* a reader takes the counts from now */
    p->last_tick = ml_now();
    pthread_mutex_lock(&lock);
    p->next = all_threads;
    all_threads = p;
    pthread_mutex_unlock(&lock);
    t->papi = p;
}

/* Read the counters; the change since the last read goes to `dst` (n values). */
static inline void read_into(struct ml_papi_thread *p, long long *dst)
{
    long long v[ML_PAPI_MAX_EVENTS];
    const uint64_t r0 = ml_now();
    if (P.read(p->es, v) != ML_PAPI_OK) return;
    const uint64_t r1 = ml_now();
    p->head->reads++;
    p->head->read_ticks += r1 - r0;
    for (int i = 0; i < ev.n; i++) {
        dst[i] += v[i] - p->last[i];
        p->last[i] = v[i];
    }
}

static inline struct ml_papi_thread *papi_of(ml_thread_t *t)
{
    if (ML_UNLIKELY(t->papi == NULL)) thread_start(t);
    struct ml_papi_thread *p = t->papi;
    return p != NULL && p->es != ML_PAPI_NULL ? p : NULL;
}

static void end_compute(ml_thread_t *t, struct ml_papi_thread *p)
{
    const uint32_t path = t->cur_path;
    const uint64_t now = ml_now();
    read_into(p, p->compute + (size_t)path * (size_t)ev.n);
    p->compute_ticks[path] += now - p->last_tick;
    p->phases[path]++;
    p->last_tick = now;
}

void ml_papi_enter(ml_thread_t *t, int fn)
{
    struct ml_papi_thread *p = papi_of(t);
    if (p == NULL) return;
    const uint64_t now = ml_now();
    p->enter_tick = now;
    if (now - p->last_tick < ev.min_ticks) { /* a short stretch: read later */
        p->in_mpi = 0;
        return;
    }
    end_compute(t, p);
    p->in_mpi = 1;
}

void ml_papi_leave(ml_thread_t *t, int fn)
{
    struct ml_papi_thread *p = papi_of(t);
    if (p == NULL) return;
    if (!p->in_mpi && ml_now() - p->enter_tick < ev.min_ticks) { /* a short call after a short stretch */
        p->head->unread++;
        return;
    }
    long long d[ML_PAPI_MAX_EVENTS] = {0};
    read_into(p, d);
    long long *f = p->mpi_fn + (size_t)fn * (size_t)ev.n, *r = p->mpi_path + (size_t)t->cur_path * (size_t)ev.n;
    for (int i = 0; i < ev.n; i++) {
        f[i] += d[i];
        r[i] += d[i];
    }
    const uint64_t now = ml_now();
    p->mpi_fn_ticks[fn] += now - p->last_tick;
    p->last_tick = now;
    p->in_mpi = 0;
}

void ml_papi_region(ml_thread_t *t)
{
    struct ml_papi_thread *p = papi_of(t);
    if (p != NULL) end_compute(t, p);
}

/* ------------------------------------------------------------------------------- SDE */
/* The mpilens counters as PAPI software-defined events of the library "mpilens". libsde is
 * opened (RTLD_GLOBAL) by the constructor, before the application can initialize PAPI: PAPI's
 * sde component looks for libsde's symbols in the process when it starts. The values are
 * computed when a tool reads them, by summing the per-thread statistics (a reading taken while
 * other threads make MPI calls may miss their latest call). */
static void *sde_lib;
static void *(*sde_init)(const char *);
static int (*sde_register_cb)(void *, const char *, int, int, long long (*)(void *), void *);
static int (*sde_describe)(void *, const char *, const char *);

/* What a per-function event sums: calls, bytes sent or bytes received. */
enum { SUM_CALLS, SUM_SENT, SUM_RECV, SUM_TICKS };

static long long sum_fn(int fn, int what)
{
    long long s = 0;
    for (ml_thread_t *t = __atomic_load_n(&ml_g.threads, __ATOMIC_ACQUIRE); t; t = t->next)
        for (uint32_t path = 0; path < ml_g.max_paths; path++) {
            if (!t->rows_used[path]) continue; /* never entered: zeros (payload.c says why not read) */
            const ml_fstat_t *x = &t->blocks[(size_t)path * ML_NFUNC + (size_t)fn];
            if (x->calls == 0) continue;
            s += what == SUM_CALLS ? (long long)x->calls
               : what == SUM_SENT  ? (long long)x->sent
               : what == SUM_RECV  ? (long long)x->recv
                                   : (long long)x->ticks;
        }
    return s;
}

static long long sum_all(int what)
{
    long long s = 0;
    for (ml_thread_t *t = __atomic_load_n(&ml_g.threads, __ATOMIC_ACQUIRE); t; t = t->next)
        for (size_t i = 0; i < (size_t)ml_g.max_paths * ML_NFUNC; i++) {
            if (!t->rows_used[i / ML_NFUNC]) continue;
            const ml_fstat_t *x = &t->blocks[i];
            if (x->calls == 0) continue;
            s += what == SUM_CALLS ? (long long)x->calls
               : what == SUM_SENT  ? (long long)x->sent
               : what == SUM_RECV  ? (long long)x->recv
                                   : (long long)x->ticks;
        }
    return s;
}

static long long read_fn_event(void *arg)
{
    const uintptr_t v = (uintptr_t)arg;
    return sum_fn((int)(v >> 2), (int)(v & 3));
}

static long long read_total_calls(void *arg) { return sum_all(SUM_CALLS); }
static long long read_total_sent(void *arg) { return sum_all(SUM_SENT); }
static long long read_total_recv(void *arg) { return sum_all(SUM_RECV); }
static long long read_mpi_time_ns(void *arg) { return (long long)ml_ticks_to_ns((uint64_t)sum_all(SUM_TICKS)); }
static long long read_dropped_requests(void *arg)
{
    long long s = 0;
    for (ml_thread_t *t = __atomic_load_n(&ml_g.threads, __ATOMIC_ACQUIRE); t; t = t->next)
        s += (long long)t->dropped_requests;
    return s;
}

/* Process-wide events. To publish another mpilens counter (unexpected messages, queue
 * watermarks...), add a line here with a function that returns its current value. */
static const struct {
    const char *name, *description;
    long long (*read)(void *);
} sde_totals[] = {
    {"calls", "MPI calls measured by mpilens, all functions", read_total_calls},
    {"bytes_sent", "bytes sent by the measured MPI calls", read_total_sent},
    {"bytes_recv", "bytes received by the measured MPI calls", read_total_recv},
    {"mpi_time_ns", "nanoseconds spent inside the measured MPI calls", read_mpi_time_ns},
    {"requests_dropped", "nonblocking requests mpilens could not follow (table full)", read_dropped_requests},
};

static void sde_open(void)
{
    sde_lib = dlopen("libsde.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (sde_lib == NULL) return;
    *(void **)&sde_init = dlsym(sde_lib, "papi_sde_init");
    *(void **)&sde_register_cb = dlsym(sde_lib, "papi_sde_register_counter_cb");
    *(void **)&sde_describe = dlsym(sde_lib, "papi_sde_describe_counter");
    if (sde_init == NULL || sde_register_cb == NULL) sde_lib = NULL;
}

static int sde_count;

/* mode: 0x00 = PAPI_SDE_RO | PAPI_SDE_DELTA (a monotonic counter PAPI reads as deltas), 0x10 =
 * PAPI_SDE_INSTANT (a level or watermark, read as its value); type 0x0 = PAPI_SDE_long_long */
static void sde_add_mode(void *h, const char *name, const char *desc, int mode, long long (*cb)(void *), void *arg)
{
    if (sde_register_cb(h, name, mode, 0x0, cb, arg) != 0) return;
    if (sde_describe) sde_describe(h, name, desc);
    sde_count++;
}

static void sde_add(void *h, const char *name, const char *desc, long long (*cb)(void *), void *arg)
{
    sde_add_mode(h, name, desc, 0x00, cb, arg);
}

/* Counters mode (runtime/src/modes/counters/counters.c): its fixed counters (unexpected messages, the posted-receive
 * queue and its watermarks, eager and rendezvous-sized messages, ...) as sde:::mpilens::spc_<name>. */
static long long read_spc(void *arg) { return (long long)ml_spc_exposed_value((int)(uintptr_t)arg); }

static void sde_register(void)
{
    void *h = sde_init("mpilens");
    if (h == NULL) return;
    for (size_t i = 0; i < sizeof sde_totals / sizeof sde_totals[0]; i++)
        sde_add(h, sde_totals[i].name, sde_totals[i].description, sde_totals[i].read, NULL);
    char name[128], desc[160];
    for (int i = 0; i < ml_spc_exposed(); i++) {
        int kind = 0;
        const char *d = "", *nm = ml_spc_exposed_info(i, &kind, &d);
        if (nm == NULL || !ml_spc_exposed_on(i)) continue;
        int n = snprintf(name, sizeof name, "spc_%s", nm);
        for (int k = 4; k < n && k < (int)sizeof name; k++) name[k] = (char)tolower((unsigned char)name[k]);
        /* kind: 0 counter, 1 timer (ns), 2 level, 3 high and 4 low watermark */
        sde_add_mode(h, name, d, kind >= 2 ? 0x10 : 0x00, read_spc, (void *)(uintptr_t)i);
    }
    for (int f = 0; f < ML_NFUNC; f++) {
        snprintf(name, sizeof name, "%s_calls", ml_fn_name[f]);
        snprintf(desc, sizeof desc, "calls of %s", ml_fn_name[f]);
        sde_add(h, name, desc, read_fn_event, (void *)(((uintptr_t)f << 2) | SUM_CALLS));
        if (!ml_fn_moves_data[f]) continue;
        snprintf(name, sizeof name, "%s_bytes_sent", ml_fn_name[f]);
        snprintf(desc, sizeof desc, "bytes sent by %s", ml_fn_name[f]);
        sde_add(h, name, desc, read_fn_event, (void *)(((uintptr_t)f << 2) | SUM_SENT));
        snprintf(name, sizeof name, "%s_bytes_recv", ml_fn_name[f]);
        snprintf(desc, sizeof desc, "bytes received by %s", ml_fn_name[f]);
        sde_add(h, name, desc, read_fn_event, (void *)(((uintptr_t)f << 2) | SUM_RECV));
    }
}

/* ------------------------------------------------------------------------------- lifecycle */
int ml_papi_load(char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    sde_open();
    /* room for each thread's counts in its section of the statistics file: they outlive the rank */
    const char *requested = ml_g.config.papi_events ? ml_g.config.papi_events : "";
    if (strcmp(requested, "none") != 0) {
        area_paths = (size_t)ml_g.config.max_regions + 2; /* ml_g.max_paths, set at MPI_Init */
        ml_stats_thread_area(area_bytes(ML_PAPI_MAX_EVENTS, area_paths));
    }
    return 0;
}

int ml_papi_init(void)
{
    char why[512] = "";
    ev.per_call = ml_g.config.papi_read == ML_PAPI_READ_CALLS;
    ev.multiplex = ml_g.config.papi_multiplex;
    if (ml_g.config.papi_min_us > 0) {
        /* ticks per microsecond, measured over 1 ms (the run's calibration comes only at the end) */
        const uint64_t t0 = ml_now(), n0 = ml_clock_ns();
        uint64_t n1;
        while ((n1 = ml_clock_ns()) - n0 < 1000000u) {
        }
        const double per_us = (double)(ml_now() - t0) / ((double)(n1 - n0) / 1000.0);
        ev.min_ticks = (uint64_t)(per_us * (double)ml_g.config.papi_min_us);
    }
    if (sde_lib != NULL) sde_register();
    else ml_log(1, "PAPI: libsde.so.1 not found; the mpilens counters are not published as PAPI events");
    const char *requested = ml_g.config.papi_events ? ml_g.config.papi_events : "";
    if (strcmp(requested, "none") == 0) return 0;
    if (load_papi(why, sizeof why) != 0) {
        snprintf(ev.off_reason, sizeof ev.off_reason, "%s", why);
    } else {
        if (ev.multiplex) {
            /* PAPI 7 multiplexes through its CPU component; without hardware counters it refuses
             * (no PAPI_TOT_CYC): say so and count without multiplexing */
            int probe, rc = P.multiplex_init();
            if (rc == ML_PAPI_OK) rc = new_eventset(&probe);
            if (rc == ML_PAPI_OK) {
                P.destroy_eventset(&probe);
            } else {
                ev.multiplex = 0;
                if (ml_g.rank == 0)
                    ml_log(0, "PAPI multiplexing is not available here (%s); counting without it", P.strerror(rc));
            }
        }
        choose_events(requested);
    }
    if (ev.refused[0] && ml_g.rank == 0)
        ml_log(0, "PAPI events not available here, counting without them: %s", ev.refused);
    if (ev.n == 0) {
        if (ml_g.rank == 0) ml_log(0, "papi mode counts nothing: %s", ev.off_reason);
        return 0;
    }
    ev.on = 1;
    for (int i = 0; i < ev.n; i++) ml_stats_name(ML_STATS_NAME_PAPI_EVENT, (uint32_t)i, 0, 0, ev.names[i]);
    ml_log(1, "PAPI: counting %d events (%s%s), read at %s", ev.n, ev.names[0], ev.n > 1 ? ", ..." : "",
           ev.per_call ? "MPI calls and region boundaries" : "region boundaries");
    if (ev.per_call) ml_g.observers |= ML_OBS_PAPI;
    ml_papi_regions = 1;
    return 0;
}

void ml_papi_begin(void)
{
    if (!ev.on) return;
    /* the thread that called MPI_Init starts counting now: what comes before its first MPI call
     * is compute of the root region */
    ml_thread_t *t = ml_tls;
    if (t == NULL) t = ml_thread_attach();
    if (t != NULL) papi_of(t);
}

static void put_counts(FILE *f, const long long *v)
{
    fputc('[', f);
    for (int i = 0; i < ev.n; i++) fprintf(f, "%s%lld", i ? ", " : "", v[i]);
    fputc(']', f);
}

static void put_path(FILE *f, uint32_t path)
{
    /* "outer/inner", like the region paths of profile.json */
    uint32_t chain[ML_MAX_REGION_DEPTH];
    int n = 0;
    for (uint32_t p = path; p != 0 && n < ML_MAX_REGION_DEPTH; p = ml_region_parent(p)) chain[n++] = p;
    fputc('"', f);
    for (int i = n - 1; i >= 0; i--) {
        if (i != n - 1) fputc('/', f);
        const char *name = ml_region_name(chain[i]);
        for (const char *c = name; *c; c++)
            if (*c == '"' || *c == '\\') fprintf(f, "\\%c", *c);
            else if ((unsigned char)*c < 0x20) fputc(' ', f);
            else fputc(*c, f);
    }
    fputc('"', f);
}

/* At MPI_Finalize, on the thread that calls it: close its last compute stretch, write the file. */
void ml_papi_finish(void)
{
    if (!ev.on && ev.refused[0] == 0 && ev.off_reason[0] == 0) return;
    ml_thread_t *t = ml_tls;
    if (ev.on && t != NULL && t->papi != NULL && t->papi->es != ML_PAPI_NULL) end_compute(t, t->papi);
    const size_t n = (size_t)ev.n, paths = ml_g.max_paths;
    /* sum the threads (the sums first: a failure leaves no file begun) */
    long long *compute = calloc(paths * n + paths * n + (size_t)ML_NFUNC * n + 1, sizeof(long long));
    uint64_t *ticks = calloc(paths * 2 + ML_NFUNC + 1, sizeof(uint64_t));
    ml_whole_t out;
    FILE *f = compute != NULL && ticks != NULL ? ml_whole_open(&out, ML_STREAM_PAPI, 0) : NULL;
    if (f == NULL) {
        free(compute);
        free(ticks);
        goto fail;
    }
    long long *mpi_path = compute + paths * n, *mpi_fn = mpi_path + paths * n;
    uint64_t *phases = ticks + paths, *fn_ticks = phases + paths;
    uint64_t reads = 0, read_ticks = 0, unread = 0;
    int threads = 0;
    for (struct ml_papi_thread *p = all_threads; p; p = p->next) {
        if (p->es == ML_PAPI_NULL) continue;
        threads++;
        reads += p->head->reads;
        unread += p->head->unread;
        read_ticks += p->head->read_ticks;
        for (size_t i = 0; i < paths * n; i++) {
            compute[i] += p->compute[i];
            mpi_path[i] += p->mpi_path[i];
        }
        for (size_t i = 0; i < paths; i++) {
            ticks[i] += p->compute_ticks[i];
            phases[i] += p->phases[i];
        }
        for (size_t i = 0; i < (size_t)ML_NFUNC * n; i++) mpi_fn[i] += p->mpi_fn[i];
        for (size_t i = 0; i < ML_NFUNC; i++) fn_ticks[i] += p->mpi_fn_ticks[i];
    }
    fprintf(f, "{\n\"schema\": \"" ML_SCHEMA_PAPI "\",\n\"rank\": %d,\n\"events\": [", ml_g.rank);
    for (int i = 0; i < ev.n; i++) {
        if (i) fputs(", ", f);
        ml_json_str(f, ev.names[i]);
    }
    fputs("],\n\"refused\": ", f);
    ml_json_str(f, ev.refused);
    fputs(",\n\"off_reason\": ", f);
    ml_json_str(f, ev.off_reason);
    fprintf(f, ",\n\"read\": \"%s\",\n\"min_us\": %ld,\n\"multiplex\": %s,\n\"threads\": %d,\n\"reads\": %llu,\n"
               "\"unread_calls\": %llu,\n\"read_cost_ns\": %.1f,\n",
            ev.per_call ? "calls" : "regions", (long)ml_g.config.papi_min_us, ev.multiplex ? "true" : "false", threads,
            (unsigned long long)reads, (unsigned long long)unread,
            reads ? (double)ml_ticks_to_ns(read_ticks) / (double)reads : 0.0);
    fputs("\"regions\": [", f);
    int first = 1;
    const uint32_t used = ml_region_count() < paths ? ml_region_count() : (uint32_t)paths;
    for (uint32_t r = 0; r < used; r++) {
        if (phases[r] == 0) continue;
        fprintf(f, "%s\n  {\"path\": ", first ? "" : ",");
        first = 0;
        put_path(f, r);
        fprintf(f, ", \"compute_s\": %.9f, \"phases\": %llu, \"compute\": ", (double)ml_ticks_to_ns(ticks[r]) * 1e-9,
                (unsigned long long)phases[r]);
        put_counts(f, compute + (size_t)r * n);
        fputs(", \"mpi\": ", f);
        put_counts(f, mpi_path + (size_t)r * n);
        fputc('}', f);
    }
    fputs("\n],\n\"functions\": {", f);
    first = 1;
    for (int fn = 0; fn < ML_NFUNC; fn++) {
        if (fn_ticks[fn] == 0) continue;
        fprintf(f, "%s\n  ", first ? "" : ",");
        first = 0;
        ml_json_str(f, ml_fn_name[fn]);
        fprintf(f, ": {\"time_s\": %.9f, \"counts\": ", (double)ml_ticks_to_ns(fn_ticks[fn]) * 1e-9);
        put_counts(f, mpi_fn + (size_t)fn * n);
        fputc('}', f);
    }
    fputs("\n}\n}\n", f);
    free(compute);
    free(ticks);
    if (ml_whole_close(&out) != 0) goto fail;
    return;
fail:
    ml_log(0, "could not write " ML_PATH_PAPI " (%s)", ml_g.rank, strerror(errno));
}

int ml_papi_sde_events(void) { return sde_count; }

/* the table's region_leaving hook (modes.c): the counts so far belong to the path being left */
void ml_papi_on_region_leaving(ml_thread_t *t)
{
    if (ML_UNLIKELY(ml_papi_regions)) ml_papi_region(t);
}
