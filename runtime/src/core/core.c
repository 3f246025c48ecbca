/* Process lifetime of the runtime: configuration, logging, clock, thread states, MPI_Init and
 * MPI_Finalize hooks, MPI_Pcontrol, and the last-chance dumps of processes that end without
 * MPI_Finalize. The modes join at each of these points through the table of modes (modes.c):
 * core.c calls their hooks in the table's order and knows none of them by name. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "json.h"
#include "ml.h"
#include "ml_files.h"
#include "ml_stats.h"
#include "ml_callsite.h"
#include "ml_modes.h"
#include "ml_output.h"

ml_global_t ml_g;
__thread ml_thread_t *ml_tls __attribute__((tls_model("initial-exec")));
int ml_clock_is_tsc;

int ml_config_load(ml_config_t *cfg, char *err, size_t errlen);

/* ------------------------------------------------------------------------------- logging */
/* Every message of the runtime goes through here: one line, one write(2) (lines of concurrent
 * ranks and threads do not mix), nothing buffered in stdio that a killed process would lose. */
static int log_wanted(int level)
{
    return level <= 0 || (ml_g.config_ok && level <= ml_g.config.verbose);
}

const char *ml_utoa(char *buf, long long v)
{
    char *p = buf + 23;
    unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
    *p = 0;
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u != 0);
    if (v < 0) *--p = '-';
    return p;
}

/* "mpilens: [rank R pid P] " into line; its length. Async-signal-safe. */
static size_t log_prefix(char *line, size_t cap)
{
    char num[24];
    const char *parts[] = {"mpilens: [rank ", ml_g.rank >= 0 ? ml_utoa(num, ml_g.rank) : "?", " pid ", NULL, "] "};
    char pid[24];
    parts[3] = ml_utoa(pid, (long long)getpid());
    size_t n = 0;
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        for (const char *c = parts[i]; *c && n + 1 < cap; c++) line[n++] = *c;
    return n;
}

static void log_write(char *line, size_t n, size_t cap)
{
    if (n > cap - 1) n = cap - 1;
    line[n++] = '\n';
    for (size_t off = 0; off < n;) {
        const ssize_t w = write(STDERR_FILENO, line + off, n - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;
        off += (size_t)w;
    }
}

void ml_log(int level, const char *fmt, ...)
{
    if (!log_wanted(level)) return;
    const int saved = errno;
    char line[1024];
    size_t n = log_prefix(line, sizeof line);
    va_list ap;
    va_start(ap, fmt);
    const int k = vsnprintf(line + n, sizeof line - n, fmt, ap);
    va_end(ap);
    if (k > 0) n += (size_t)k;
    log_write(line, n, sizeof line);
    errno = saved;
}

void ml_log_safe(int level, const char *first, ...)
{
    if (!log_wanted(level)) return;
    const int saved = errno;
    char line[1024];
    size_t n = log_prefix(line, sizeof line);
    va_list ap;
    va_start(ap, first);
    for (const char *s = first; s != NULL; s = va_arg(ap, const char *))
        for (; *s && n + 1 < sizeof line; s++) line[n++] = *s;
    va_end(ap);
    log_write(line, n, sizeof line);
    errno = saved;
}

/* ------------------------------------------------------------------------------- modes */
/* Which entries of the table of modes take part in this run, by index: wanted (from the
 * configuration, at load) and on (wanted, and their init succeeded at MPI_Init). */
static uint64_t modes_wanted, modes_on;

#define FOR_MODES(set, m)                                                                       \
    for (const ml_mode_t *m = ml_modes; m < ml_modes + ml_nmodes; m++)                         \
        if ((set) >> (m - ml_modes) & 1u)

static int mode_wanted(const ml_mode_t *m)
{
    return m->wanted != NULL ? m->wanted() != 0 : (ml_g.config.mode & m->bit) != 0;
}

void ml_modes_emergency(int reason)
{
    FOR_MODES(modes_on, m) if (m->emergency) m->emergency(reason);
}

ml_hooks_t ml_hooks;

#define HOOK(event)                                                                             \
    if (m->event && ml_hooks.n_##event < ML_MAX_HOOKED) ml_hooks.event[ml_hooks.n_##event++] = m->event

/* The event hooks of the modes on (MPI_Init, before measuring begins and other threads look). */
static void hooks_fill(void)
{
    FOR_MODES(modes_on, m) {
        HOOK(region_leaving);
        HOOK(region);
        HOOK(user_counter);
        HOOK(comm_freed);
        HOOK(req_posted);
        HOOK(req_done);
        HOOK(recv_taken);
        HOOK(payload_tail);
    }
}

void ml_modes_meta_json(FILE *f)
{
    for (const ml_mode_t *m = ml_modes; m < ml_modes + ml_nmodes; m++)
        if (m->meta_json) m->meta_json(f);
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

/* Ticks per second measured between MPI_Init and now; exact for the clock fallback. Both ends are
 * clock points (ml_clock_point): a thread preempted between reading the two clocks at one end
 * puts the preemption into the rate (2 ms in a 1.5 s run: 0.13 %; a test once saw a call the tool
 * timed 0.14 % longer than the program's own clocks around it, with a single pair at this end). */
static double ticks_per_ns(void)
{
    if (!ml_clock_is_tsc) return 1.0;
    uint64_t t, n;
    ml_clock_point(&t, &n);
    if (n <= calib_ns0 + 1000000u) return 0.0; /* less than 1 ms: not calibrated yet */
    return (double)(t - calib_tick0) / (double)(n - calib_ns0);
}

static double tick_rate;

double ml_ticks_per_ns(void)
{
    if (tick_rate > 0) return tick_rate;
    double r = ticks_per_ns();
    if (r <= 0) { /* less than a millisecond since MPI_Init: measure the rate over two */
        uint64_t t0, n0, t1, n1;
        ml_clock_point(&t0, &n0);
        do
            ml_clock_point(&t1, &n1);
        while (n1 < n0 + 2000000u);
        r = (double)(t1 - t0) / (double)(n1 - n0);
    }
    return r;
}

uint64_t ml_ticks_to_ns(uint64_t ticks)
{
    if (!ml_clock_is_tsc) return ticks;
    return (uint64_t)((double)ticks / ml_ticks_per_ns());
}

/* ------------------------------------------------------------------------------- startup */
__attribute__((constructor)) static void ml_constructor(void)
{
    /* a program linked with its MPI has it loaded already; one that opens it later (mpi4py) is
     * bound at its first MPI call (binding.c) */
    (void)ml_bind_mpi();
    ml_g.rank = -1;
    ml_g.config_ok = ml_config_load(&ml_g.config, ml_g.config_error, sizeof ml_g.config_error) == 0;
    if (ml_g.config_ok) {
        for (int i = 0; i < ml_nmodes && i < 64; i++)
            if (mode_wanted(&ml_modes[i])) modes_wanted |= 1ull << i;
        /* a mode that cannot work in this process refuses the whole configuration (memory mode
         * without its interposer would report MPI's heap as zero): the error is printed at MPI_Init */
        FOR_MODES(modes_wanted, m) {
            if (m->load && m->load(ml_g.config_error, sizeof ml_g.config_error) != 0) {
                ml_g.config_ok = 0;
                break;
            }
        }
    }
    const int timer = ml_g.config_ok ? ml_g.config.timer : ML_TIMER_AUTO;
    ml_clock_is_tsc = timer == ML_TIMER_TSC || (timer == ML_TIMER_AUTO && cpu_has_invariant_tsc());
}

/* ------------------------------------------------------------------------------- threads */
void ml_thread_lean_refresh(ml_thread_t *t)
{
    if (!ml_g.lean_ok) {
        t->lean_gen = ML_LEAN_NEVER;
        return;
    }
    t->lean_gen = ml_lean_gen_of(t->reset_gen) | (t->sampling ? ML_LEAN_SAMPLED : 0u) |
                  (t->trace.on ? ML_LEAN_TRACED : 0u);
}

ml_thread_t *ml_thread_attach(void)
{
    if (!__atomic_load_n(&ml_g.ready, __ATOMIC_ACQUIRE)) return NULL;
    /* One mapping per thread, a section of the statistics file (stats.c) or anonymous memory:
     * pages are only backed when first touched, so unused region blocks, functions and peers cost
     * address space, not memory. */
    uint64_t offset = 0;
    int kept = 0;
    char *section = ml_stats_section(&offset, &kept);
    if (section == NULL) return NULL;
    uint8_t *rows = calloc(ml_g.max_paths, 1);
    if (rows == NULL) return NULL; /* the section stays unused */
    ml_thread_t *t = (ml_thread_t *)(section + ml_stats_thread_offset());
    t->stats_offset = offset;
    t->stats_kept = kept;
    t->rows_used = rows;
    t->blocks = (ml_fstat_t *)ml_stats_part(t, ML_STATS_BLOCKS);
    t->hist = (ml_hbin_t *)ml_stats_part(t, ML_STATS_HIST);
    t->matrix = (ml_peer_t *)ml_stats_part(t, ML_STATS_MATRIX);
    t->rstats = (ml_rstat_t *)ml_stats_part(t, ML_STATS_RSTATS);
    t->ucounts = (ml_ucount_t *)ml_stats_part(t, ML_STATS_UCOUNTS);
    if (ml_callsite_thread_bytes()) ml_callsite_thread(t, ml_stats_part(t, ML_STATS_SITES));
    for (int f = 0; f < ML_NFUNC; f++) t->site_last[f] = &t->site_void;
    t->cur_path = 0;
    t->cur = t->blocks;
    ml_thread_t *head = __atomic_load_n(&ml_g.threads, __ATOMIC_RELAXED);
    do {
        t->next = head;
    } while (!__atomic_compare_exchange_n(&ml_g.threads, &head, t, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
    ml_tls = t;
    t->observe = ml_g.observers;
    t->reset_gen = __atomic_load_n(&ml_g.reset_gen, __ATOMIC_ACQUIRE); /* a new thread has nothing to drop */
    if (ml_g.config.time_sample > 1) {
        t->sample_rng = 2463534242u ^ ((uint32_t)ml_g.rank * 2654435761u) ^ (uint32_t)(uintptr_t)t;
        if (t->sample_rng == 0) t->sample_rng = 1;
        t->sample_left = (uint32_t)ml_sample_gap(t);
        t->sampling = 1;
    }
    ml_stats_rows(t, 0); /* the root path's rows */
    ml_stats_section_ready(t);
    FOR_MODES(modes_on, m) if (m->thread) m->thread(t);
    ml_thread_lean_refresh(t); /* after the modes: trace mode's buffers decide its copy */
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

void ml_scratch_grow(ml_thread_t *t, size_t n)
{
    size_t cap = t->scratch_cap ? t->scratch_cap : 64;
    while (cap < n) cap *= 2;
    free(t->scratch_req);
    free(t->scratch_claim);
    free(t->scratch_status);
#if ML_FORTRAN
    free(t->scratch_fstatus);
#endif
    free(t->scratch_types);
    t->scratch_req = malloc(cap * sizeof *t->scratch_req);
    t->scratch_claim = malloc(cap * sizeof *t->scratch_claim);
    t->scratch_status = malloc(cap * sizeof *t->scratch_status);
#if ML_FORTRAN
    t->scratch_fstatus = malloc(cap * 32 * sizeof *t->scratch_fstatus);
#endif
    t->scratch_types = malloc(cap * sizeof *t->scratch_types);
    t->scratch_cap = cap;
}

/* ------------------------------------------------------------------------------- exit paths */
static const int dump_signals[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGABRT, SIGSEGV, SIGBUS, SIGXCPU};
static struct sigaction old_actions[sizeof dump_signals / sizeof dump_signals[0]];

static void on_signal(int signo)
{
    const int dumping = __atomic_load_n(&ml_g.ready, __ATOMIC_ACQUIRE) && !ml_g.finalized;
    ml_partial_dump(ML_END_SIGNAL, signo);
    if (dumping) {
        char num[24];
        ml_log_safe(1, "signal ", ml_utoa(num, signo), " before MPI_Finalize: this rank's data so far is in ",
                    ml_g.partial_path, NULL);
    }
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
void ml_mpi_init_enter(int fn)
{
    if (!ml_g.config_ok) return;
    FOR_MODES(modes_wanted, m) if (m->init_enter) m->init_enter(fn);
}

/* the clock point at MPI_Init's entry: with the one at its end, the tick rate of a statistics
 * file whose rank never reached MPI_Finalize */
static uint64_t init_tick0, init_ns0;

void ml_before_mpi_init(void)
{
    if (!ml_g.config_ok) return;
    ml_clock_point(&init_tick0, &init_ns0);
    FOR_MODES(modes_wanted, m) if (m->before_mpi_init) m->before_mpi_init();
}

void ml_mpi_init_leave(int fn)
{
    /* also when the runtime could not start (a mode may have begun something at init_enter) */
    FOR_MODES(modes_wanted, m) if (m->init_leave) m->init_leave(fn);
}

void ml_clock_point(uint64_t *tick, uint64_t *ns)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 4; i++) {
        const uint64_t a = ml_now(), n = ml_clock_ns(), b = ml_now();
        if (b - a < best) {
            best = b - a;
            *tick = a + (b - a) / 2;
            *ns = n;
        }
    }
}

int ml_rundir_path(char *path, size_t n, const char *format, ...)
{
    const int k = snprintf(path, n, "%s/", ml_g.outdir);
    va_list ap;
    va_start(ap, format);
    const int m = k < 0 || (size_t)k >= n ? -1 : vsnprintf(path + k, n - (size_t)k, format, ap);
    va_end(ap);
    if (m < 0 || (size_t)(k + m) >= n) return -1;
    return ml_file_folder(path);
}

/* Write claim.json into the run directory (the runtime claims it: preloaded by hand). */
static int write_claim(const char *dir)
{
    char path[4200], host[256] = "";
    snprintf(path, sizeof path, "%s/" ML_PATH_CLAIM, dir);
    gethostname(host, sizeof host - 1);
    FILE *f = ml_file_fopen(path);
    if (f == NULL) return -1;
    fputs("{\"schema\": \"" ML_SCHEMA_CLAIM "\", \"token\": \"\", \"by\": \"runtime\", \"pid\": ", f);
    fprintf(f, "%ld, \"host\": ", (long)getpid());
    ml_json_str(f, host);
    fprintf(f, ", \"created\": %lld}\n", (long long)time(NULL));
    const int bad = ferror(f);
    return fclose(f) != 0 || bad ? -1 : 0;
}

/* Whether claim.json holds the token mpilens run handed to the job. */
static int claim_is_ours(const char *dir, const char *token)
{
    char path[4200], text[1024] = "", want[300];
    snprintf(path, sizeof path, "%s/" ML_PATH_CLAIM, dir);
    const int fd = ml_file_shared(path, O_RDONLY, 0);
    if (fd < 0) return 0;
    const ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    if (n <= 0) return 0;
    text[n] = 0;
    snprintf(want, sizeof want, "\"token\": \"%s\"", token);
    return strstr(text, want) != NULL;
}

/* Rank 0: make and claim the run directory, so that one run and only one writes into it. Its
 * absolute path in out; 0, or -1 with the reason in why. mpilens run made and claimed it already
 * (MPILENS_RUN_TOKEN: its claim must be the one found); preloaded by hand, the runtime creates it
 * (its parent must exist) and claims it with claim.json created exclusively, so that a second run
 * naming the same directory is refused; the default name gets a suffix instead. */
static int claim_outdir(char *out, size_t n, char *why, size_t wn)
{
    char name[4096];
    const int given = ml_g.config.output[0] != 0;
    if (given) {
        snprintf(name, sizeof name, "%s", ml_g.config.output);
    } else {
        time_t now = time(NULL);
        struct tm tm;
        localtime_r(&now, &tm);
        snprintf(name, sizeof name, "mpilens-%s-%dp-%04d%02d%02d-%02d%02d%02d", program_invocation_short_name,
                 ml_g.size, tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
    }
    const size_t stem = strlen(name);
    for (int attempt = 1; attempt <= 100; attempt++) {
        if (attempt > 1) {
            if (given) break;
            snprintf(name + stem, sizeof name - stem, "-%d", attempt);
        }
        const int made = mkdir(name, 0777) == 0;
        if (!made && errno != EEXIST) {
            snprintf(why, wn, "cannot create the run directory %s (%s)", name, strerror(errno));
            return -1;
        }
        if (!made && !given) continue;
        char abs[PATH_MAX]; /* not realpath's malloc: in memory mode it would count as MPI_Init's */
        if (realpath(name, abs) == NULL || ml_base_open(ML_BASE_RUN, abs) != 0) {
            snprintf(why, wn, "cannot open the run directory %s (%s)", name, strerror(errno));
            return -1;
        }
        snprintf(out, n, "%s", abs);
        if (ml_g.config.run_token[0] != 0) {
            if (claim_is_ours(abs, ml_g.config.run_token)) return 0;
            snprintf(why, wn, "the run directory %s is not the one mpilens run claimed for this job (its " ML_PATH_CLAIM
                     " is missing or another run's)", abs);
            return -1;
        }
        if (write_claim(abs) == 0) return 0;
        if (errno != EEXIST || given) {
            snprintf(why, wn,
                     errno == EEXIST ? "the run directory %s belongs to another run (it has a " ML_PATH_CLAIM
                                       "); choose another MPILENS_OUTPUT"
                                     : "cannot claim the run directory %s (%s)",
                     abs, strerror(errno));
            return -1;
        }
    }
    snprintf(why, wn, "cannot find a free run directory name like %s", name);
    return -1;
}

static void init_world(MPI_Comm world, int thread_level, uint64_t t_begin);
static void end_session(void);

void ml_init_after_mpi_init(int thread_level, uint64_t t_begin)
{
    ml_g.world_model = 1;
    init_world(MPI_COMM_WORLD, thread_level, t_begin);
}

/* Start measuring, the world being `world` (MPI_COMM_WORLD or a session's mpi://WORLD). */
static void init_world(MPI_Comm world, int thread_level, uint64_t t_begin)
{
    if (ml_g.ready || ml_g.finalized) return;
    ml_g.world = world;
    PMPI_Comm_rank(world, &ml_g.rank);
    PMPI_Comm_size(world, &ml_g.size);
    if (!ml_g.config_ok) {
        if (ml_g.rank == 0) ml_log(0, "%s; running the application without mpilens", ml_g.config_error);
        return;
    }
    ml_g.thread_level = thread_level;
    ml_g.multiple = thread_level == MPI_THREAD_MULTIPLE;
    ml_g.tool_before = ml_bind_tool_before();
    ml_g.t_init_begin = t_begin;
    PMPI_Comm_dup(world, &ml_g.comm);
    PMPI_Comm_set_name(ml_g.comm, "mpilens");

    /* rank 0 creates and claims the run directory; everyone learns its name and whether it worked */
    struct { int ok; char path[4096]; } dir = {0, {0}};
    if (ml_g.rank == 0) {
        char why[4400];
        dir.ok = claim_outdir(dir.path, sizeof dir.path, why, sizeof why) == 0;
        if (dir.ok) {
            char ranks[4200];
            snprintf(ranks, sizeof ranks, "%s/ranks/-", dir.path);
            if (ml_file_folder(ranks) != 0) {
                dir.ok = 0;
                snprintf(why, sizeof why, "cannot create %s/ranks (%s)", dir.path, strerror(errno));
            }
        }
        if (!dir.ok) ml_log(0, "%s; running the application without mpilens", why);
    }
    PMPI_Bcast(&dir, (int)sizeof dir, MPI_BYTE, 0, ml_g.comm);
    /* every file is written from the directory's descriptor (files.c): an absolute path, as the
     * handlers that write partial data may run after a chdir() */
    int opened = !dir.ok || ml_g.rank == 0 || ml_base_open(ML_BASE_RUN, dir.path) == 0;
    if (!opened && errno == ENOENT) {
        /* a host that does not share rank 0's file system: the directory is made here too */
        char part[4096];
        snprintf(part, sizeof part, "%s", dir.path);
        for (char *p = part + 1; *p; p++)
            if (*p == '/') {
                *p = 0;
                mkdir(part, 0777);
                *p = '/';
            }
        mkdir(part, 0777);
        opened = ml_base_open(ML_BASE_RUN, dir.path) == 0;
    }
    if (!opened) {
        ml_log(0, "cannot open the run directory %s (%s); running the application without mpilens", dir.path,
               strerror(errno));
        dir.ok = 0;
    }
    int all_ok = dir.ok;
    PMPI_Allreduce(MPI_IN_PLACE, &all_ok, 1, MPI_INT, MPI_MIN, ml_g.comm);
    if (!all_ok) {
        PMPI_Comm_free(&ml_g.comm);
        return;
    }
    snprintf(ml_g.outdir, sizeof ml_g.outdir, "%s", dir.path);
    snprintf(ml_g.partial_path, sizeof ml_g.partial_path, "%s/" ML_PATH_PARTIAL, ml_g.outdir, ml_g.rank);
    ml_file_temp_name(ml_g.partial_tmp_path, sizeof ml_g.partial_tmp_path, ml_g.partial_path);
    ml_files_init(); /* per-rank files or per-host containers (MPILENS_FILES), before any mode writes */
    if (ml_files_grouped()) /* where a rank that ends early says its data is (the temporary file stays) */
        ml_files_container_path(ml_g.partial_path, sizeof ml_g.partial_path, ML_STREAM_PARTIAL, 0,
                                ML_CONTAINER_DATA_PATH);

    ml_g.max_paths = (uint32_t)ml_g.config.max_regions + 2; /* + the root path and "(overflow)" */
    ml_categories_init(ml_g.config.categories_off);
    if (ml_regions_init(ml_g.max_paths) != 0 || ml_requests_init((size_t)ml_g.config.max_requests) != 0) {
        if (ml_g.rank == 0) ml_log(0, "out of memory at MPI_Init; running the application without mpilens");
        PMPI_Comm_free(&ml_g.comm);
        return;
    }

    ml_callsite_init(); /* before any thread attaches: their tables' size */
    FOR_MODES(modes_wanted, m) if (m->after_mpi_init) m->after_mpi_init(); /* mpit: cvars read back, for meta.json */

    /* hosts, for meta.json */
    char host[MPI_MAX_PROCESSOR_NAME] = {0};
    int hlen = 0;
    PMPI_Get_processor_name(host, &hlen);
    char *hosts = ml_g.rank == 0 ? calloc((size_t)ml_g.size, MPI_MAX_PROCESSOR_NAME) : NULL;
    PMPI_Gather(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, hosts, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, ml_g.comm);
    if (ml_g.rank == 0) {
        if (ml_meta_write(hosts, MPI_MAX_PROCESSOR_NAME) != 0)
            ml_log(0, "cannot write %s/meta.json (%s)", ml_g.outdir, strerror(errno));
        free(hosts);
    }

    ml_clock_point(&ml_g.t_init_end, &ml_g.ns_init_end);
    ml_stats_layout(ml_callsite_thread_bytes());
    ml_stats_open(init_tick0, init_ns0); /* the rank's statistics file, or memory only (said) */
    /* each mode starts in the table's order (modes.c says why it matters); one that cannot start
     * says why and is off in this process, the others and the profile go on. A mode that sees
     * calls sets its ML_OBS_* bit in ml_g.observers. */
    char on[256] = "profile";
    FOR_MODES(modes_wanted, m) {
        if (m->init == NULL || m->init() == 0) {
            modes_on |= 1ull << (m - ml_modes);
            if (m->bit != ML_MODE_PROFILE && strlen(on) + strlen(m->name) + 2 < sizeof on) {
                strcat(on, ",");
                strcat(on, m->name);
            }
        }
    }
    hooks_fill();
    ml_observers_start();
    /* the lean path (lean.h) is the profile, alone or with the observers it serves inline (the
     * trace), below MPI_THREAD_MULTIPLE, timed by the tick counter, with call sites off or at
     * depth 1: no other mode watches calls or requests */
    const char *no_lean = NULL;
    if (ml_g.multiple)
        no_lean = "MPI_THREAD_MULTIPLE";
    else if ((ml_g.observers & ~ML_OBS_INLINED) || ml_req_watch)
        no_lean = "a mode watches calls or requests the lean path does not serve";
    else if (!ml_clock_is_tsc)
        no_lean = "no tick counter";
    else if (ml_callsite_depth() > 1)
        no_lean = "call sites deeper than 1";
    else if (ml_g.tool_before)
        no_lean = "a PMPI tool loaded before mpilens";
    ml_g.lean_ok = no_lean == NULL;
    for (ml_thread_t *t = __atomic_load_n(&ml_g.threads, __ATOMIC_ACQUIRE); t != NULL; t = t->next)
        ml_thread_lean_refresh(t);
    install_exit_paths();
    calib_tick0 = ml_g.t_init_end;
    calib_ns0 = ml_g.ns_init_end;
    ml_g.enabled = ml_g.config.enabled;
    __atomic_store_n(&ml_g.ready, 1, __ATOMIC_RELEASE);
    ml_set_active(ml_g.enabled);
    FOR_MODES(modes_on, m) if (m->start) m->start();
    ml_log(2, "measuring into %s (%s; %d C and %d Fortran wrappers, timer %s)", ml_g.outdir, on, ML_N_C_WRAPPERS,
           ML_N_F_WRAPPERS, ml_clock_is_tsc ? "tsc" : "clock");
    ml_log(2, "lean path: %s%s", no_lean ? "off, " : "on", no_lean ? no_lean : "");
}

/* ------------------------------------------------------------------------------- MPI_Finalize */
/* The profile as a reduction up a binomial tree, log2(P) rounds: rank r holds the merge of the
 * ranks r .. r + 2^k - 1, where 2^k is r's lowest set bit (every rank for rank 0): its own payload,
 * then in each round the packed merge of the next part from the rank that holds it, until the round
 * of its lowest bit, when it packs its merge for the rank below. So no rank holds more than the
 * merged result of its part, and rank 0 the whole run's (merge.h). A rank that fails (out of memory)
 * still sends a length, 0, so that no rank waits for it; rank 0's merge then fails. Returns rank
 * 0's merge (NULL on the others, or when it failed), and in *moved the bytes rank 0 received. */
static ml_merge_t *reduce_profile(size_t *moved)
{
    const int rank = ml_g.rank, size = ml_g.size;
    int part = 1; /* the ranks this one merges */
    while (rank + part < size && !(rank & part)) part <<= 1;
    if (rank + part > size) part = size - rank;
    ml_merge_t *m = ml_merge_new(rank, part);
    ml_sink_t s = {0};
    s.fd = -1;
    ml_payload_write(&s, 1, ML_END_FINALIZE, 0);
    if (m != NULL && (s.failed || ml_merge_add_payload(m, s.data, s.len) != 0)) {
        ml_merge_free(m);
        m = NULL;
    }
    free(s.data);
    *moved = 0;
    for (int mask = 1; mask < size; mask <<= 1) {
        if (rank & mask) {
            char *packed = NULL;
            size_t len = 0;
            if (m == NULL || ml_merge_pack(m, &packed, &len) != 0) len = 0;
            uint64_t n = len;
            PMPI_Send(&n, 1, MPI_UINT64_T, rank - mask, 1, ml_g.comm);
            for (uint64_t off = 0; off < n; off += 1u << 30) {
                const uint64_t chunk = n - off < (1u << 30) ? n - off : (1u << 30);
                PMPI_Send(packed + off, (int)chunk, MPI_BYTE, rank - mask, 2, ml_g.comm);
            }
            free(packed);
            ml_merge_free(m);
            return NULL;
        }
        if (rank + mask < size) {
            uint64_t n = 0;
            PMPI_Recv(&n, 1, MPI_UINT64_T, rank + mask, 1, ml_g.comm, MPI_STATUS_IGNORE);
            char *packed = n ? malloc(n) : NULL;
            for (uint64_t off = 0; off < n; off += 1u << 30) {
                const uint64_t chunk = n - off < (1u << 30) ? n - off : (1u << 30);
                if (packed != NULL) {
                    PMPI_Recv(packed + off, (int)chunk, MPI_BYTE, rank + mask, 2, ml_g.comm, MPI_STATUS_IGNORE);
                } else { /* keep receiving so that the sender is not left hanging */
                    char *sink = malloc(chunk);
                    PMPI_Recv(sink, (int)chunk, MPI_BYTE, rank + mask, 2, ml_g.comm, MPI_STATUS_IGNORE);
                    free(sink);
                }
            }
            *moved += n;
            if (m != NULL && (packed == NULL || ml_merge_add_packed(m, packed, n) != 0)) {
                ml_merge_free(m);
                m = NULL;
            }
            free(packed);
        }
    }
    return m;
}

void ml_mpi_finalize_enter(void)
{
    FOR_MODES(modes_on, m) if (m->finalize_enter) m->finalize_enter();
}

void ml_mpi_finalize_leave(void)
{
    FOR_MODES(modes_on, m) if (m->finalize_leave) m->finalize_leave();
}

static void catch_up_all(void);

/* Rank 0 had no room for the profile (ENOSPC, EDQUOT), while every rank's statistics files hold
 * what the gathered payloads hold: when the room they take and the room left make enough for the
 * profile, each rank gives its files' room back (ml_stats_release) and rank 0 writes it again.
 * Otherwise the files stay, for `mpilens report` to recover the ranks from. Collective over the
 * world; returns 1 on every rank when the profile is written. */
static int make_room(const char *path, ml_merge_t *merged, size_t len, double gather_s)
{
    unsigned long long mine = ml_stats_allocated(), theirs = 0;
    PMPI_Reduce(&mine, &theirs, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, ml_g.comm);
    int go = 0;
    if (ml_g.rank == 0) {
        struct statvfs fs;
        const unsigned long long left = statvfs(ml_g.outdir, &fs) == 0 ? (unsigned long long)fs.f_bavail * fs.f_frsize : 0;
        const size_t need = ml_profile_bytes(merged, len, ml_g.size, gather_s);
        /* the profile, and a margin for meta.json's last version and the file system's own blocks */
        go = need > 0 && need + (256u << 10) <= theirs + left;
        if (!go)
            ml_log(0, "could not write %s (no room: %zu bytes needed, %llu free, %llu in the ranks' statistics files, "
                      "which are kept)", path, need, left, theirs);
    }
    PMPI_Bcast(&go, 1, MPI_INT, 0, ml_g.comm);
    if (!go) return 0;
    ml_stats_release();
    PMPI_Barrier(ml_g.comm); /* every rank's room is back */
    int written = 0;
    if (ml_g.rank == 0) {
        written = ml_profile_write(path, merged, len, ml_g.size, gather_s) == 0;
        if (written)
            ml_log(0, "the file system was full: the ranks' statistics files (%llu bytes) made room for %s", theirs, path);
        else
            ml_log(0, "could not write %s even with the room of the ranks' statistics files (%s): the profile is lost",
                   path, strerror(errno));
    }
    PMPI_Bcast(&written, 1, MPI_INT, 0, ml_g.comm);
    return written;
}

void ml_finalize_before_mpi_finalize(void)
{
    if (!ml_g.ready) return;
    ml_set_active(0);
    ml_stats_finalizing();
    catch_up_all();
    /* the tick rate is fixed now, between MPI_Init and here, so that every file the modes write
     * from here on converts ticks with the rate of the profile */
    tick_rate = ticks_per_ns();
    /* the modes finish in the table's order, before the gather (modes.c says why) */
    FOR_MODES(modes_on, m) if (m->finish) m->finish();
    ml_callsite_finish();
    const uint64_t g0 = ml_clock_ns();
    size_t len = 0;
    ml_merge_t *merged = reduce_profile(&len);
    const int rc = ml_g.rank == 0 && merged == NULL ? -1 : 0;
    const double gather_s = (double)(ml_clock_ns() - g0) * 1e-9;
    /* 1: written; 2: no room for it, which the statistics files may make (make_room) */
    int written = 0;
    char path[4200];
    snprintf(path, sizeof path, "%s/" ML_PATH_PROFILE, ml_g.outdir);
    if (ml_g.rank == 0) {
        if (rc == 0 && ml_profile_write(path, merged, len, ml_g.size, gather_s) == 0)
            written = 1;
        else if (rc == 0 && (errno == ENOSPC || errno == EDQUOT))
            written = 2;
        else
            ml_log(0, "could not write %s (%s)", path, rc != 0 ? "out of memory" : strerror(errno));
    }
    PMPI_Bcast(&written, 1, MPI_INT, 0, ml_g.comm);
    if (written == 2) written = make_room(path, merged, len, gather_s);
    if (ml_g.rank == 0) {
        ml_meta_finish();
        if (written) ml_log(1, "profile written to %s (%zu bytes merged up the tree in %.3f s)", path, len, gather_s);
    }
    ml_merge_free(merged);
    /* every rank's statistics are in the profile now: their files go; kept when it failed, so that
     * `mpilens report` recovers the ranks from them */
    if (written) ml_stats_remove();
    __atomic_store_n(&ml_g.ready, 0, __ATOMIC_RELEASE);
    ml_g.finalized = 1;
    /* no mode watches calls any more (a wrapper this thread is in, MPI_Session_finalize's, returns
     * through the observers) */
    for (ml_thread_t *t = __atomic_load_n(&ml_g.threads, __ATOMIC_ACQUIRE); t != NULL; t = t->next)
        __atomic_store_n(&t->observe, 0u, __ATOMIC_RELAXED);
    PMPI_Comm_free(&ml_g.comm);
    end_session();
}

/* ------------------------------------------------------------------------------- MPI Sessions */
/* A program that starts MPI with MPI_Session_init rather than MPI_Init is measured from its first
 * MPI_Session_init to its last MPI_Session_finalize (while MPI_Init has not been called: otherwise
 * MPI_Init and MPI_Finalize bound the measurements, as they do in every other program). The world
 * is a communicator of the mpi://WORLD process set in a session of the tool's own, so that it
 * outlives whichever session the program ends first; making it is collective over the world's
 * processes, as MPI_Init is: each waits in its first MPI_Session_init until all have reached
 * theirs. The generated wrappers of MPI_Session_init and MPI_Session_finalize call these
 * (semantics.yaml, `inner: ml_lifetime`). */
static int thread_level_of(MPI_Session session)
{
    MPI_Info info = MPI_INFO_NULL;
    char value[64] = {0};
    int len = (int)sizeof value - 1, flag = 0;
    if (PMPI_Session_get_info(session, &info) == MPI_SUCCESS && info != MPI_INFO_NULL) {
        PMPI_Info_get_string(info, "thread_level", &len, value, &flag);
        PMPI_Info_free(&info);
    }
    static const struct { const char *name; int level; } levels[] = {
        {"MPI_THREAD_SINGLE", MPI_THREAD_SINGLE}, {"MPI_THREAD_FUNNELED", MPI_THREAD_FUNNELED},
        {"MPI_THREAD_SERIALIZED", MPI_THREAD_SERIALIZED}, {"MPI_THREAD_MULTIPLE", MPI_THREAD_MULTIPLE}};
    for (size_t i = 0; flag && i < sizeof levels / sizeof levels[0]; i++)
        if (strcmp(value, levels[i].name) == 0) return levels[i].level;
    return MPI_THREAD_MULTIPLE; /* not said: the level every use is safe at */
}

static int session_world(MPI_Comm *world)
{
    MPI_Group group = MPI_GROUP_NULL;
    if (PMPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &ml_g.session) != MPI_SUCCESS) return -1;
    ml_g.own_session = 1;
    int rc = PMPI_Group_from_session_pset(ml_g.session, "mpi://WORLD", &group);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Comm_create_from_group(group, "org.mpilens.world", MPI_INFO_NULL, MPI_ERRORS_RETURN, world);
    if (group != MPI_GROUP_NULL) PMPI_Group_free(&group);
    if (rc != MPI_SUCCESS) {
        PMPI_Session_finalize(&ml_g.session);
        ml_g.own_session = 0;
        return -1;
    }
    return 0;
}

/* The tool's world and session go at its end (or at the program's last MPI_Session_finalize when
 * it could not start). */
static void end_session(void)
{
    if (!ml_g.own_session) return;
    if (ml_g.world != MPI_COMM_WORLD && ml_g.world != MPI_COMM_NULL) PMPI_Comm_free(&ml_g.world);
    PMPI_Session_finalize(&ml_g.session);
    ml_g.own_session = 0;
}

/* An outer wrapper (a Fortran binding's) is starting the measurements: the C wrapper the MPI's
 * Fortran library may call inside it (MPICH's mpif.h binding calls the C MPI_Session_init) leaves
 * that to it. */
static int session_starting;

int ml_session_init_begin(void)
{
    const int first = !ml_g.ready && !ml_g.finalized && !ml_g.world_model && !ml_g.own_session && !session_starting;
    if (first) {
        session_starting = 1;
        ml_mpi_init_enter(ML_FN_MPI_Session_init);
        ml_before_mpi_init();
    }
    return first;
}

void ml_session_init_end(int first, const MPI_Session *session, uint64_t t0)
{
    if (session != NULL) __atomic_add_fetch(&ml_g.user_sessions, 1, __ATOMIC_ACQ_REL);
    if (!first) return;
    if (session != NULL && !ml_g.ready && !ml_g.own_session) {
        MPI_Comm world = MPI_COMM_NULL;
        if (session_world(&world) == 0) {
            init_world(world, thread_level_of(*session), t0);
        } else {
            ml_g.world = MPI_COMM_NULL;
            ml_log(0, "cannot make a communicator of the process set mpi://WORLD in a session; running the "
                      "application without mpilens");
        }
    }
    ml_mpi_init_leave(ML_FN_MPI_Session_init);
    session_starting = 0;
}

int ml_session_finalize_begin(void)
{
    const int last = __atomic_sub_fetch(&ml_g.user_sessions, 1, __ATOMIC_ACQ_REL) == 0;
    const int ends = last && ml_g.own_session && !ml_g.world_model;
    if (ends && ml_g.ready) {
        ml_mpi_finalize_enter();
        ml_finalize_before_mpi_finalize(); /* ends the tool's session too */
    } else if (ends) {
        end_session(); /* the tool could not start */
    }
    return ends;
}

void ml_session_finalize_end(int ends)
{
    if (ends && ml_g.finalized) ml_mpi_finalize_leave();
}

int ml_lifetime_Session_init(MPI_Info info, MPI_Errhandler errhandler, MPI_Session *session)
{
    const int first = ml_session_init_begin();
    const uint64_t t0 = ml_now();
    const int rc = ml_next_MPI_Session_init(info, errhandler, session);
    ml_session_init_end(first, rc == MPI_SUCCESS ? session : NULL, t0);
    return rc;
}

int ml_lifetime_Session_finalize(MPI_Session *session)
{
    const int ends = ml_session_finalize_begin();
    const int rc = ml_next_MPI_Session_finalize(session);
    ml_session_finalize_end(ends);
    return rc;
}

/* ------------------------------------------------------------------------------- MPI_Pcontrol */
/* MPI_Pcontrol(2) drops the statistics measured so far. Each thread drops its own, at its next
 * call (ml_thread_catch_up): writing another thread's counters while it updates them would lose
 * or half-reset its updates. Until it catches up a thread's old statistics are left out of what
 * is written (ml_thread_stale), in the statistics file too (its reset_gen). */
void ml_thread_catch_up(ml_thread_t *t)
{
    const uint32_t gen = __atomic_load_n(&ml_g.reset_gen, __ATOMIC_ACQUIRE);
    ml_stats_zero(t); /* blocks, hist, matrix, rstats, ucounts */
    ml_callsite_reset(t); /* its call sites' counts too */
    t->reset_gen = gen;
    ml_thread_lean_refresh(t);
}

ml_thread_t *ml_enter_after_reset(const void *ra)
{
    /* Darshan, loaded before the runtime, calls MPI_Info_create and MPI_File_get_position for its
     * own records: not the program's calls */
    if (ML_UNLIKELY(ml_g.tool_before) && ml_bind_in_tool_before(ra)) return NULL;
    ml_thread_t *t = ml_enter_thread();
    if (t != NULL && ml_thread_stale(t)) ml_thread_catch_up(t);
    return t;
}

/* At MPI_Finalize (no other thread is in MPI any more): the threads that did not call MPI since
 * the last MPI_Pcontrol(2) drop their old statistics. */
static void catch_up_all(void)
{
    for (ml_thread_t *t = __atomic_load_n(&ml_g.threads, __ATOMIC_ACQUIRE); t; t = t->next)
        if (ml_thread_stale(t)) ml_thread_catch_up(t);
}

static void reset_all(void)
{
    ml_stats_reset_gen(__atomic_add_fetch(&ml_g.reset_gen, 1, __ATOMIC_ACQ_REL));
    ml_g.t_init_end = ml_now();
}

/* mpiP's intermediate reports: this rank's statistics so far, in the format of the per-rank files
 * of a job that ended early, as pcontrol/NNNN/rank-RRRRRR.bin (NNNN: this rank's n-th snapshot).
 * Unlike mpiP, no collective: a rank that calls it alone does not hang the job; `mpilens report
 * --snapshot N` aggregates the ranks that wrote snapshot N. */
static void snapshot(void)
{
    static int taken;
    char path[4300], tmp[4330];
    const int number = __atomic_add_fetch(&taken, 1, __ATOMIC_RELAXED);
    if (ml_rundir_path(path, sizeof path, ML_PATH_SNAPSHOT, number, ml_g.rank) != 0) {
        ml_log(0, "MPI_Pcontrol: cannot create the folder of %s (%s): no snapshot", path, strerror(errno));
        return;
    }
    ml_file_temp_name(tmp, sizeof tmp, path);
    if (ml_payload_to_file(tmp, path, ML_STREAM_SNAPSHOT, (unsigned)number, ML_END_SNAPSHOT, 0) != 0)
        ml_log(0, "MPI_Pcontrol: cannot write %s (%s): no snapshot", path, strerror(errno));
}

void ml_pcontrol(int level)
{
    /* mpiP's meaning: 0 stops measuring, 1 resumes, 2 resets the statistics, 3 and 4 write an
     * intermediate report (mpiP: verbose and concise; here one snapshot, detailed at report time). */
    if (!ml_g.ready) return;
    if (level == 0 || level == 1) {
        int taken = 0; /* a mode's phases (trace's, with MPILENS_TRACE_PCONTROL), not the profile's */
        FOR_MODES(modes_on, m) if (m->pcontrol) taken |= m->pcontrol(level);
        if (taken) return;
    }
    if (level == 0) {
        ml_g.enabled = 0;
    } else if (level == 1) {
        ml_g.enabled = 1;
    } else if (level == 2) {
        reset_all();
    } else if (level == 3 || level == 4) {
        snapshot();
    }
    /* 2: measuring, and threads catch up with a reset at their next call */
    ml_set_active(ml_g.enabled ? (ml_g.reset_gen ? 2 : 1) : 0);
}

void ml_set_active(int active)
{
    if (active == 1 && ml_g.tool_before) active = 2; /* the slow way, which knows the tool's calls */
    const uint32_t gen = __atomic_load_n(&ml_g.reset_gen, __ATOMIC_ACQUIRE);
    __atomic_store_n(&ml_g.lean_gen, active != 0 && ml_g.lean_ok ? ml_lean_gen_of(gen) : 0u, __ATOMIC_RELEASE);
    __atomic_store_n(&ml_g.active, active, __ATOMIC_RELEASE);
}
