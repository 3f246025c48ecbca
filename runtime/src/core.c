/* Process lifetime of the runtime: configuration, clock, thread states, MPI_Init and MPI_Finalize
 * hooks, MPI_Pcontrol, and the last-chance dumps of processes that end without MPI_Finalize. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "ml.h"

ml_global_t ml_g;
__thread ml_thread_t *ml_tls __attribute__((tls_model("initial-exec")));
int ml_clock_is_tsc;

int ml_config_load(ml_config_t *cfg, char *err, size_t errlen);

/* ------------------------------------------------------------------------------- logging */
void ml_log(int level, const char *fmt, ...)
{
    if (level > 0 && (!ml_g.config_ok || level > ml_g.config.verbose)) return;
    char line[1024];
    int n = snprintf(line, sizeof line, "mpilens[%d]: ", ml_g.rank);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s\n", line);
}

/* ------------------------------------------------------------------------------- clock */
static uint64_t calib_tick0, calib_ns0;

uint64_t ml_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cpu_has_invariant_tsc(void)
{
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d;
    if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u) return 0;
    __get_cpuid(0x80000007u, &a, &b, &c, &d);
    return (d >> 8) & 1u;
#elif defined(__aarch64__)
    return 1; /* the generic timer is constant-rate by architecture */
#else
    return 0;
#endif
}

/* Ticks per second measured between MPI_Init and now; exact for the clock fallback. */
static double ticks_per_ns(void)
{
    if (!ml_clock_is_tsc) return 1.0;
    const uint64_t t = ml_now(), n = ml_clock_ns();
    if (n <= calib_ns0 + 1000000u) return 0.0; /* less than 1 ms: not calibrated yet */
    return (double)(t - calib_tick0) / (double)(n - calib_ns0);
}

static double tick_rate;

uint64_t ml_ticks_to_ns(uint64_t ticks)
{
    if (!ml_clock_is_tsc) return ticks;
    double r = tick_rate > 0 ? tick_rate : ticks_per_ns();
    if (r <= 0) {
        /* a run shorter than a millisecond: measure the rate now */
        const uint64_t t0 = ml_now(), n0 = ml_clock_ns();
        while (ml_clock_ns() < n0 + 2000000u) {}
        r = (double)(ml_now() - t0) / (double)(ml_clock_ns() - n0);
    }
    return (uint64_t)((double)ticks / r);
}

/* ------------------------------------------------------------------------------- startup */
__attribute__((constructor)) static void ml_constructor(void)
{
    ml_g.rank = -1;
    ml_g.config_ok = ml_config_load(&ml_g.config, ml_g.config_error, sizeof ml_g.config_error) == 0;
    if (ml_g.config_ok && (ml_g.config.mode & ML_MODE_MEMORY) && !ml_memory_interposer_loaded()) {
        /* without the interposer, MPI's heap would be reported as zero: refuse instead */
        ml_g.config_ok = 0;
        const char *mode = getenv("MPILENS_MODE");
        snprintf(ml_g.config_error, sizeof ml_g.config_error,
                 "MPILENS_MODE=%s: memory mode needs libmpilens-memory.so in LD_PRELOAD with the runtime "
                 "(mpilens run --mode memory puts both there)", mode ? mode : "");
    }
    const int timer = ml_g.config_ok ? ml_g.config.timer : ML_TIMER_AUTO;
    ml_clock_is_tsc = timer == ML_TIMER_TSC || (timer == ML_TIMER_AUTO && cpu_has_invariant_tsc());
    if (ml_g.config_ok && (ml_g.config.mode & ML_MODE_PAPI)) ml_papi_preload();
}

/* ------------------------------------------------------------------------------- threads */
static void *map_zeroed(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

ml_thread_t *ml_thread_attach(void)
{
    if (!__atomic_load_n(&ml_g.ready, __ATOMIC_ACQUIRE)) return NULL;
    /* One anonymous mapping per thread: pages are only backed when first touched, so unused
     * region blocks, functions and peers cost address space, not memory. */
    const size_t nblk = (size_t)ml_g.max_paths * ML_NFUNC * sizeof(ml_fstat_t);
    const size_t nhist = (size_t)ML_NFUNC * ML_NBINS * sizeof(ml_hbin_t);
    const size_t nmat = (size_t)ml_g.size * sizeof(ml_peer_t);
    const size_t nreg = (size_t)ml_g.max_paths * sizeof(ml_rstat_t);
    const size_t nuc = (size_t)ml_g.max_paths * ML_MAX_COUNTERS * sizeof(ml_ucount_t);
    const size_t total = sizeof(ml_thread_t) + 64 + nblk + nhist + nmat + nreg + nuc;
    char *p = map_zeroed(total);
    if (p == NULL) return NULL;
    ml_thread_t *t = (ml_thread_t *)p;
    p += (sizeof(ml_thread_t) + 63) & ~(size_t)63;
    t->blocks = (ml_fstat_t *)p;
    p += nblk;
    t->hist = (ml_hbin_t *)p;
    p += nhist;
    t->matrix = (ml_peer_t *)p;
    p += nmat;
    t->rstats = (ml_rstat_t *)p;
    p += nreg;
    t->ucounts = (ml_ucount_t *)p;
    t->mapped_bytes = total;
    t->cur_path = 0;
    t->cur = t->blocks;
    ml_thread_t *head = __atomic_load_n(&ml_g.threads, __ATOMIC_RELAXED);
    do {
        t->next = head;
    } while (!__atomic_compare_exchange_n(&ml_g.threads, &head, t, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
    ml_tls = t;
    t->observe = ml_g.observers;
    if (ml_g.config.time_sample > 1) {
        t->sample_rng = 2463534242u ^ ((uint32_t)ml_g.rank * 2654435761u) ^ (uint32_t)(uintptr_t)t;
        if (t->sample_rng == 0) t->sample_rng = 1;
        t->sample_left = (uint32_t)ml_sample_gap(t);
        t->sampling = 1;
    }
    if (ml_g.tracing) ml_trace_thread(t);
    if (ml_spc_on) ml_spc_thread(t);
    return t;
}

/* MPILENS_TIME_SAMPLE=N: the number of calls until the next timed one, uniform in [1, 2N-1]
 * (mean N). Random, so that no periodic pattern of calls (a Waitall every 64 Isends) is timed
 * more or less often than 1 in N. */
uint64_t ml_sample_gap(ml_thread_t *t)
{
    uint32_t x = t->sample_rng;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    t->sample_rng = x;
    const uint64_t span = 2 * (uint64_t)ml_g.config.time_sample - 1;
    return 1 + (uint64_t)x * span / ((uint64_t)UINT32_MAX + 1);
}

void ml_scratch_reserve(ml_thread_t *t, size_t n)
{
    if (n <= t->scratch_cap) return;
    size_t cap = t->scratch_cap ? t->scratch_cap : 64;
    while (cap < n) cap *= 2;
    free(t->scratch_req);
    free(t->scratch_claim);
    free(t->scratch_status);
    free(t->scratch_fstatus);
    free(t->scratch_types);
    t->scratch_req = malloc(cap * sizeof *t->scratch_req);
    t->scratch_claim = malloc(cap * sizeof *t->scratch_claim);
    t->scratch_status = malloc(cap * sizeof *t->scratch_status);
    t->scratch_fstatus = malloc(cap * 32 * sizeof *t->scratch_fstatus);
    t->scratch_types = malloc(cap * sizeof *t->scratch_types);
    t->scratch_cap = cap;
}

/* ------------------------------------------------------------------------------- exit paths */
static const int dump_signals[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGABRT, SIGSEGV, SIGBUS, SIGXCPU};
static struct sigaction old_actions[sizeof dump_signals / sizeof dump_signals[0]];

static void on_signal(int signo)
{
    ml_partial_dump(ML_END_SIGNAL, signo);
    /* put the previous disposition back and let it act on the same signal */
    for (size_t i = 0; i < sizeof dump_signals / sizeof dump_signals[0]; i++)
        if (dump_signals[i] == signo) sigaction(signo, &old_actions[i], NULL);
    raise(signo);
}

static void on_exit_without_finalize(void)
{
    ml_partial_dump(ML_END_EXIT, 0);
}

static void install_exit_paths(void)
{
    atexit(on_exit_without_finalize);
    if (!ml_g.config.signals) return;
    for (size_t i = 0; i < sizeof dump_signals / sizeof dump_signals[0]; i++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESETHAND;
        sigaction(dump_signals[i], &sa, &old_actions[i]);
        if (old_actions[i].sa_handler == SIG_IGN && !(old_actions[i].sa_flags & SA_SIGINFO))
            sigaction(dump_signals[i], &old_actions[i], NULL); /* the application ignores it: keep that */
    }
}

void ml_abort_dump(void)
{
    ml_partial_dump(ML_END_ABORT, 0);
}

/* ------------------------------------------------------------------------------- MPI_Init */
int ml_make_dirs(const char *path)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(tmp, 0777) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    if (mkdir(tmp, 0777) != 0 && errno != EEXIST) return -1;
    return access(tmp, W_OK) == 0 ? 0 : -1;
}

int ml_rundir_path(char *path, size_t n, const char *format, ...)
{
    const int k = snprintf(path, n, "%s/", ml_g.outdir);
    va_list ap;
    va_start(ap, format);
    const int m = k < 0 || (size_t)k >= n ? -1 : vsnprintf(path + k, n - (size_t)k, format, ap);
    va_end(ap);
    if (m < 0 || (size_t)(k + m) >= n) return -1;
    char *slash = strrchr(path, '/');
    *slash = 0;
    const int rc = ml_make_dirs(path);
    *slash = '/';
    return rc;
}

static void choose_outdir(char *out, size_t n)
{
    if (ml_g.config.output[0] != 0) {
        snprintf(out, n, "%s", ml_g.config.output);
        return;
    }
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    snprintf(out, n, "mpilens-%s-%dp-%04d%02d%02d-%02d%02d%02d", program_invocation_short_name, ml_g.size,
             tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

void ml_init_after_mpi_init(int thread_level, uint64_t t_begin)
{
    if (ml_g.ready || ml_g.finalized) return;
    PMPI_Comm_rank(MPI_COMM_WORLD, &ml_g.rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &ml_g.size);
    if (!ml_g.config_ok) {
        if (ml_g.rank == 0)
            fprintf(stderr, "mpilens: %s; running the application without mpilens\n", ml_g.config_error);
        return;
    }
    ml_g.thread_level = thread_level;
    ml_g.multiple = thread_level == MPI_THREAD_MULTIPLE;
    ml_g.t_init_begin = t_begin;
    PMPI_Comm_dup(MPI_COMM_WORLD, &ml_g.comm);
    PMPI_Comm_set_name(ml_g.comm, "mpilens");

    /* rank 0 creates the run directory; everyone learns its name and whether it worked */
    struct { int ok; char path[4096]; } dir = {0, {0}};
    if (ml_g.rank == 0) {
        choose_outdir(dir.path, sizeof dir.path);
        char ranks[4200];
        snprintf(ranks, sizeof ranks, "%s/ranks", dir.path);
        dir.ok = ml_make_dirs(dir.path) == 0 && ml_make_dirs(ranks) == 0;
        if (!dir.ok)
            fprintf(stderr, "mpilens: cannot create the run directory %s (%s); running the application without mpilens\n",
                    dir.path, strerror(errno));
    }
    PMPI_Bcast(&dir, (int)sizeof dir, MPI_BYTE, 0, ml_g.comm);
    if (!dir.ok) {
        PMPI_Comm_free(&ml_g.comm);
        return;
    }
    /* an absolute path: the handlers that write partial data may run after a chdir() */
    char abs[PATH_MAX]; /* not realpath's malloc: in memory mode it would count as MPI_Init's */
    snprintf(ml_g.outdir, sizeof ml_g.outdir, "%s", realpath(dir.path, abs) ? abs : dir.path);
    snprintf(ml_g.partial_path, sizeof ml_g.partial_path, "%s/" ML_PATH_PARTIAL, ml_g.outdir, ml_g.rank);
    snprintf(ml_g.partial_tmp_path, sizeof ml_g.partial_tmp_path, "%s.tmp", ml_g.partial_path);

    ml_g.max_paths = (uint32_t)ml_g.config.max_regions + 2; /* + the root path and "(overflow)" */
    ml_g.intervals = ml_g.config.intervals;
    ml_categories_init(ml_g.config.categories_off);
    if (ml_regions_init(ml_g.max_paths) != 0 || ml_requests_init((size_t)ml_g.config.max_requests) != 0 ||
        (ml_g.intervals && ml_intervals_init((size_t)ml_g.config.max_intervals) != 0)) {
        if (ml_g.rank == 0) fprintf(stderr, "mpilens: out of memory at MPI_Init; running the application without mpilens\n");
        PMPI_Comm_free(&ml_g.comm);
        return;
    }

    ml_mpit_after_init(); /* cvars read back, for meta.json */

    /* hosts, for meta.json */
    char host[MPI_MAX_PROCESSOR_NAME] = {0};
    int hlen = 0;
    PMPI_Get_processor_name(host, &hlen);
    char *hosts = ml_g.rank == 0 ? calloc((size_t)ml_g.size, MPI_MAX_PROCESSOR_NAME) : NULL;
    PMPI_Gather(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, hosts, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, ml_g.comm);
    if (ml_g.rank == 0) {
        if (ml_meta_write(hosts, MPI_MAX_PROCESSOR_NAME) != 0)
            fprintf(stderr, "mpilens: cannot write %s/meta.json (%s)\n", ml_g.outdir, strerror(errno));
        free(hosts);
    }

    ml_g.t_init_end = ml_now();
    ml_g.ns_init_end = ml_clock_ns();
    if ((ml_g.config.mode & ML_MODE_TRACE) && ml_trace_init() != 0) {
        fprintf(stderr, "mpilens: rank %d cannot write its trace into %s/trace (%s); tracing is off\n", ml_g.rank,
                ml_g.outdir, strerror(errno));
    } else if (ml_g.config.mode & ML_MODE_TRACE) {
        ml_g.tracing = 1;
        ml_g.observers |= ML_OBS_TRACE;
    }
    ml_mpit_start();
    if ((ml_g.config.mode & ML_MODE_MEMORY) && ml_memory_init() != 0)
        fprintf(stderr, "mpilens: rank %d cannot write its memory samples into %s/memory (%s); memory mode is off\n",
                ml_g.rank, ml_g.outdir, strerror(errno));
    if ((ml_g.config.mode & ML_MODE_COUNTERS) && ml_spc_init() != 0) {
        ml_spc_on = 0; /* init sets it early (its MPI_T lookups need it): nothing may count now */
        if (ml_g.rank == 0) fprintf(stderr, "mpilens: the counters mode could not start; measuring without it\n");
    }
    /* after the counters: papi mode publishes them as software-defined events */
    if (ml_g.config.mode & ML_MODE_PAPI) ml_papi_init();
    ml_observers_start();
    install_exit_paths();
    calib_tick0 = ml_g.t_init_end;
    calib_ns0 = ml_g.ns_init_end;
    ml_g.enabled = ml_g.config.enabled;
    __atomic_store_n(&ml_g.ready, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&ml_g.active, ml_g.enabled, __ATOMIC_RELEASE);
    if (ml_g.config.mode & ML_MODE_PAPI) ml_papi_begin();
    ml_log(2, "measuring into %s (%d C and %d Fortran wrappers, timer %s)", ml_g.outdir, ML_N_C_WRAPPERS,
           ML_N_F_WRAPPERS, ml_clock_is_tsc ? "tsc" : "clock");
}

/* ------------------------------------------------------------------------------- MPI_Finalize */
static int gather_payloads(char **out, size_t *outlen)
{
    /* Binomial tree: log2(P) rounds; each process forwards everything below it once. */
    ml_sink_t s = {0};
    s.fd = -1;
    ml_payload_write(&s, 1, ML_END_FINALIZE, 0);
    if (s.failed) return -1;
    const int rank = ml_g.rank, size = ml_g.size;
    int err = 0;
    for (int mask = 1; mask < size; mask <<= 1) {
        if (rank & mask) {
            uint64_t n = s.len;
            PMPI_Send(&n, 1, MPI_UINT64_T, rank - mask, 1, ml_g.comm);
            for (uint64_t off = 0; off < n; off += 1u << 30) {
                const uint64_t chunk = n - off < (1u << 30) ? n - off : (1u << 30);
                PMPI_Send(s.data + off, (int)chunk, MPI_BYTE, rank - mask, 2, ml_g.comm);
            }
            break;
        }
        if (rank + mask < size) {
            uint64_t n = 0;
            PMPI_Recv(&n, 1, MPI_UINT64_T, rank + mask, 1, ml_g.comm, MPI_STATUS_IGNORE);
            char *grow = realloc(s.data, s.len + n);
            if (grow == NULL) {
                err = 1; /* keep receiving so the sender is not left hanging */
                grow = s.data;
            }
            s.data = grow;
            for (uint64_t off = 0; off < n; off += 1u << 30) {
                const uint64_t chunk = n - off < (1u << 30) ? n - off : (1u << 30);
                if (err) {
                    char *sink = malloc(chunk);
                    PMPI_Recv(sink, (int)chunk, MPI_BYTE, rank + mask, 2, ml_g.comm, MPI_STATUS_IGNORE);
                    free(sink);
                } else {
                    PMPI_Recv(s.data + s.len + off, (int)chunk, MPI_BYTE, rank + mask, 2, ml_g.comm, MPI_STATUS_IGNORE);
                }
            }
            if (!err) s.len += n;
        }
    }
    *out = s.data;
    *outlen = s.len;
    return err ? -1 : 0;
}

void ml_finalize_before_mpi_finalize(void)
{
    if (!ml_g.ready) return;
    __atomic_store_n(&ml_g.active, 0, __ATOMIC_RELEASE);
    if (ml_g.tracing) ml_trace_finish();
    ml_mpit_finish();
    ml_spc_finish();
    tick_rate = ticks_per_ns();
    if (ml_g.config.mode & ML_MODE_PAPI) ml_papi_finish();
    if (ml_g.intervals && ml_intervals_write() != 0)
        fprintf(stderr, "mpilens: rank %d could not write its intervals file (%s)\n", ml_g.rank, strerror(errno));
    const uint64_t g0 = ml_clock_ns();
    char *all = NULL;
    size_t len = 0;
    const int rc = gather_payloads(&all, &len);
    const double gather_s = (double)(ml_clock_ns() - g0) * 1e-9;
    if (ml_g.rank == 0) {
        char path[4200];
        snprintf(path, sizeof path, "%s/" ML_PATH_PROFILE, ml_g.outdir);
        if (rc != 0 || ml_profile_write(path, all, len, ml_g.size, gather_s) != 0)
            fprintf(stderr, "mpilens: could not write %s (%s)\n", path, rc != 0 ? "out of memory" : strerror(errno));
        ml_meta_finish();
        ml_log(1, "profile written to %s (%zu bytes gathered in %.3f s)", path, len, gather_s);
    }
    free(all);
    __atomic_store_n(&ml_g.ready, 0, __ATOMIC_RELEASE);
    ml_g.finalized = 1;
    PMPI_Comm_free(&ml_g.comm);
}

/* ------------------------------------------------------------------------------- MPI_Pcontrol */
static void reset_all(void)
{
    for (ml_thread_t *t = __atomic_load_n(&ml_g.threads, __ATOMIC_ACQUIRE); t; t = t->next) {
        memset(t->blocks, 0, (size_t)ml_g.max_paths * ML_NFUNC * sizeof(ml_fstat_t));
        memset(t->hist, 0, (size_t)ML_NFUNC * ML_NBINS * sizeof(ml_hbin_t));
        memset(t->matrix, 0, (size_t)ml_g.size * sizeof(ml_peer_t));
        memset(t->rstats, 0, (size_t)ml_g.max_paths * sizeof(ml_rstat_t));
        memset(t->ucounts, 0, (size_t)ml_g.max_paths * ML_MAX_COUNTERS * sizeof(ml_ucount_t));
    }
    ml_g.t_init_end = ml_now();
}

/* mpiP's intermediate reports: this rank's statistics so far, in the format of the per-rank files
 * of a job that ended early, as pcontrol/NNNN/rank-RRRRRR.bin (NNNN: this rank's n-th snapshot).
 * Unlike mpiP, no collective: a rank that calls it alone does not hang the job; `mpilens report
 * --snapshot N` aggregates the ranks that wrote snapshot N. */
static void snapshot(void)
{
    static int taken;
    char path[4300], tmp[4310];
    if (ml_rundir_path(path, sizeof path, ML_PATH_SNAPSHOT, __atomic_add_fetch(&taken, 1, __ATOMIC_RELAXED),
                       ml_g.rank) != 0) {
        ml_log(0, "MPI_Pcontrol: cannot create the folder of %s (%s): no snapshot", path, strerror(errno));
        return;
    }
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    if (ml_payload_to_file(tmp, path, ML_END_SNAPSHOT, 0) != 0)
        ml_log(0, "MPI_Pcontrol: cannot write %s (%s): no snapshot", path, strerror(errno));
}

void ml_pcontrol(int level)
{
    /* mpiP's meaning: 0 stops measuring, 1 resumes, 2 resets the statistics, 3 and 4 write an
     * intermediate report (mpiP: verbose and concise; here one snapshot, detailed at report time). */
    if (!ml_g.ready) return;
    if (level == 0) {
        ml_g.enabled = 0;
    } else if (level == 1) {
        ml_g.enabled = 1;
    } else if (level == 2) {
        reset_all();
    } else if (level == 3 || level == 4) {
        snapshot();
    }
    __atomic_store_n(&ml_g.active, ml_g.enabled, __ATOMIC_RELEASE);
}
