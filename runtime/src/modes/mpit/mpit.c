/* MPI_T in the runtime: control variables set at MPI_Init (MPILENS_CVARS) and when a
 * communicator is named (MPILENS_COMM_CVARS), and, in mpit mode, a pvar session per rank whose
 * variables are read at MPI_Init, at region boundaries, every MPILENS_MPIT_PERIOD_MS (a
 * background thread) and at MPI_Finalize, into mpit/rank-NNNNNN.jsonl.
 *
 * Nothing here runs per MPI call: the only hooks are in the wrappers of MPI_Comm_set_name (after:
 * in semantics.yaml) and MPI_Comm_free, and they act only when a communicator can need them
 * (MPILENS_COMM_CVARS, or mpit mode with communicator-bound pvars: ml_g.mpit_comms). */
#include <errno.h>
#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "json.h"
#include "ml.h"
#include "ml_files.h"
#include "ml_counters.h" /* ml_exposed_T_pvar_*: the pvars with counters mode's own */
#include "ml_mpit.h"
#include "mpit_common.h"

#define MAX_REQS 64
#define MAX_PVARS 512
#define MAX_COMM_EVENTS 64

static mlt_req_t reqs[MAX_REQS];
static int nreqs;
static int wanted; /* MPI_T is needed in this run */

/* communicator cvars applied on this rank (rank 0's go into meta.json) */
static struct comm_event {
    char comm[128], name[256], old[512], now[512], error[256];
    int bound;
} events[MAX_COMM_EVENTS];
static int nevents;
static pthread_mutex_t events_lock = PTHREAD_MUTEX_INITIALIZER; /* threads may name communicators at once */

/* ------------------------------------------------------------------------------- pvars */
typedef struct pvar {
    int index, cls, bind, continuous, count;
    MPI_Datatype type;
    MPI_T_pvar_handle handle;
    MPI_Comm comm;        /* bound communicator, MPI_COMM_NULL if none */
    char commname[128];
    char name[256];
    int live;             /* handle allocated and not freed */
} pvar_t;

static pvar_t pvars[MAX_PVARS];
static int npvars, pvars_total, pvars_matched, comm_bound_matched;
static MPI_T_pvar_session session;
static int session_ok;
static regex_t pattern;
static int have_pattern;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *out;
static uint64_t samples, read_errors;
static pthread_t sampler;
static int sampler_running;
static volatile int sampler_stop;
static char *buf;   /* scratch for one read */
static size_t bufsize;

/* cvars to set or mpit mode: MPI_T is used in this run (the table of modes, modes.c) */
int ml_mpit_wanted(void)
{
    const char *cv = ml_g.config.cvars, *cc = ml_g.config.comm_cvars;
    return (cv && cv[0]) || (cc && cc[0]) || (ml_g.config.mode & ML_MODE_MPIT);
}

#if defined(OPEN_MPI)
static int checked; /* the requests were parsed before MPI_Init (check_in_child) */

/* MPILENS_CVARS and MPILENS_COMM_CVARS checked through MPI_T in a child process: 0 when valid,
 * else -1 with ml_g.config_error set. A child that cannot be made leaves the check to `mpilens
 * run` (which made it before the job) and to ml_mpit_after_init. */
static int check_in_child(const char *cv, const char *cc)
{
    if ((cv == NULL || cv[0] == 0) && (cc == NULL || cc[0] == 0)) return 0;
    int fds[2];
    if (pipe(fds) != 0) return 0;
    const pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return 0;
    }
    /* the child's answer: an error (empty when valid), then the requests it parsed, with the
     * values they had before (what meta.json reports as "old") */
    struct answer {
        char err[sizeof ml_g.config_error];
        int n;
        mlt_req_t reqs[MAX_REQS];
    };
    if (pid == 0) {
        close(fds[0]);
        static struct answer a;
        if (mlt_init() != 0) snprintf(a.err, sizeof a.err, "MPI_T_init_thread failed: cannot use MPI_T");
        else if (mlt_parse_requests(cv, cc, a.reqs, MAX_REQS, &a.n, a.err, sizeof a.err) != 0 && a.err[0] == 0)
            snprintf(a.err, sizeof a.err, "MPILENS_CVARS: not valid");
        for (size_t done = 0; done < sizeof a;) {
            const ssize_t w = write(fds[1], (const char *)&a + done, sizeof a - done);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) break;
            done += (size_t)w;
        }
        _exit(0);
    }
    close(fds[1]);
    static struct answer a;
    size_t got = 0;
    while (got < sizeof a) {
        const ssize_t r = read(fds[0], (char *)&a + got, sizeof a - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(fds[0]);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {}
    if (got < sizeof a) return 0; /* no answer: left to ml_mpit_after_init */
    if (a.err[0] != 0) {
        snprintf(ml_g.config_error, sizeof ml_g.config_error, "%s", a.err);
        return -1;
    }
    nreqs = a.n < 0 || a.n > MAX_REQS ? 0 : a.n;
    memcpy(reqs, a.reqs, (size_t)nreqs * sizeof reqs[0]);
    checked = 1;
    return 0;
}

/* One global cvar into Open MPI's environment, where MPI_Init reads its parameters. */
static int set_env_item(const char *name, const char *value, void *arg)
{
    (void)arg;
    char env[300];
    snprintf(env, sizeof env, "OMPI_MCA_%s", name);
    setenv(env, value, 1);
    return 0;
}
#endif

/* The pattern of the pvars to record (MPILENS_MPIT_PVARS); 0 when it compiles. */
static int compile_pattern(void)
{
    if (!(ml_g.config.mpit_pvars && ml_g.config.mpit_pvars[0])) return 0;
    const int rc = regcomp(&pattern, ml_g.config.mpit_pvars, REG_EXTENDED | REG_NOSUB);
    if (rc != 0) {
        char why[128];
        regerror(rc, &pattern, why, sizeof why);
        snprintf(ml_g.config_error, sizeof ml_g.config_error, "MPILENS_MPIT_PVARS=%s: not a regular expression (%s)",
                 ml_g.config.mpit_pvars, why);
        return -1;
    }
    have_pattern = 1;
    return 0;
}

void ml_mpit_before_init(void)
{
    if (!ml_g.config_ok) return;
    const char *cv = ml_g.config.cvars, *cc = ml_g.config.comm_cvars;
    wanted = ml_mpit_wanted();
    if (!wanted) return;
    if (compile_pattern() != 0) {
        ml_g.config_ok = 0;
        return;
    }
#if defined(OPEN_MPI)
    /* Open MPI registers its parameters in MPI_Init and takes their values from the environment
     * then, so the global cvars go there. MPI_T is not opened in this process before MPI_Init:
     * Open MPI 5 crashes in MPI_Init after an MPI_T_init_thread and MPI_T_finalize (its pml
     * selection), and an MPI_T left open keeps the parameters registered before the environment
     * is read. The names and values are checked by a child process (MPI_T in it, then _exit),
     * so that a bad one still leaves the application unprofiled and its MPI untouched. */
    if (check_in_child(cv, cc) != 0) {
        ml_g.config_ok = 0;
        return;
    }
    char why[256] = "";
    if (mlt_split(cv, set_env_item, NULL, why, sizeof why) != 0) {
        snprintf(ml_g.config_error, sizeof ml_g.config_error, "MPILENS_CVARS=%s: %s", cv, why);
        ml_g.config_ok = 0;
    }
#else
    if (mlt_init() != 0) {
        snprintf(ml_g.config_error, sizeof ml_g.config_error, "MPI_T_init_thread failed: cannot use MPI_T");
        ml_g.config_ok = 0;
        return;
    }
    if (mlt_parse_requests(cv, cc, reqs, MAX_REQS, &nreqs, ml_g.config_error, sizeof ml_g.config_error) != 0) {
        ml_g.config_ok = 0; /* nothing was written: the application runs as it would without mpilens */
        return;
    }
    for (int i = 0; i < nreqs; i++) {
        if (reqs[i].comm[0] != 0) continue;
        char why[256];
        if (mlt_cvar_write(reqs[i].index, NULL, reqs[i].value, 0, why, sizeof why) != 0) {
            snprintf(ml_g.config_error, sizeof ml_g.config_error, "MPILENS_CVARS: %s %s", reqs[i].name, why);
            ml_g.config_ok = 0;
            return;
        }
    }
#endif
}

/* After MPI_Init: read back what was set (MPI_T names may have new indices now). */
static void read_back(void)
{
    for (int i = 0; i < nreqs; i++) {
        if (reqs[i].comm[0] != 0) continue;
        const int index = mlt_cvar_find(reqs[i].name);
        reqs[i].applied = index >= 0 && mlt_cvar_read(index, NULL, reqs[i].now, sizeof reqs[i].now) == 0;
    }
}

/* Allocate a handle for pvar index i (bound to comm when it is communicator-bound). */
static void add_pvar(int i, const char *name, int cls, MPI_Datatype type, int bind, int continuous, MPI_Comm comm,
                     const char *commname)
{
    if (npvars >= MAX_PVARS) return;
    pvar_t *p = &pvars[npvars];
    memset(p, 0, sizeof *p);
    p->index = i;
    p->cls = cls;
    p->type = type;
    p->bind = bind;
    p->continuous = continuous;
    p->comm = comm;
    snprintf(p->name, sizeof p->name, "%s", name);
    snprintf(p->commname, sizeof p->commname, "%s", commname);
    MPI_Comm c = comm;
    if (ml_exposed_T_pvar_handle_alloc(session, i, bind == MPI_T_BIND_MPI_COMM ? (void *)&c : NULL, &p->handle, &p->count) !=
            MPI_SUCCESS ||
        p->count <= 0)
        return;
    if (!continuous && ml_exposed_T_pvar_start(session, p->handle) != MPI_SUCCESS) {
        ml_exposed_T_pvar_handle_free(session, &p->handle);
        return;
    }
    const size_t need = (size_t)p->count * 8;
    if (need > bufsize) {
        char *grow = realloc(buf, need);
        if (grow == NULL) {
            ml_exposed_T_pvar_handle_free(session, &p->handle);
            return;
        }
        buf = grow;
        bufsize = need;
    }
    p->live = 1;
    npvars++;
    /* the variable list of the file: one line per handle, before its first value */
    if (out != NULL) {
        fprintf(out, "{\"var\": %d, \"name\": ", npvars - 1);
        ml_json_str(out, name);
        fprintf(out, ", \"class\": \"%s\", \"datatype\": \"%s\", \"bind\": \"%s\", \"continuous\": %s, \"count\": %d",
                mlt_class_name(cls), mlt_type_name(type), mlt_bind_name(bind), continuous ? "true" : "false", p->count);
        if (bind == MPI_T_BIND_MPI_COMM) {
            fputs(", \"comm\": ", out);
            ml_json_str(out, commname);
        }
        fputs("}\n", out);
    }
}

/* Handles for the matching pvars bound to comm (MPI_COMM_NULL: those bound to no object). */
static void add_pvars_for(MPI_Comm comm, const char *commname)
{
    int n = 0;
    ml_exposed_T_pvar_get_num(&n);
    for (int i = 0; i < n; i++) {
        char name[256], desc[8];
        int nlen = sizeof name, dlen = sizeof desc, verb, cls, bind, ro, cont, atomic;
        MPI_Datatype dt;
        MPI_T_enum et;
        if (ml_exposed_T_pvar_get_info(i, name, &nlen, &verb, &cls, &dt, &et, desc, &dlen, &bind, &ro, &cont, &atomic) !=
            MPI_SUCCESS)
            continue;
        if (have_pattern && regexec(&pattern, name, 0, NULL, 0) != 0) continue;
        if (mlt_numeric_size(dt) == 0) continue; /* mpilens records numbers only */
#if defined(OPEN_MPI)
        /* Open MPI 4.1 keeps the mtl (pml cm) pvars registered when pml cm is not in use, and
         * allocating a handle for mtl_psm2_* then crashes in psm2_mq_get_stats: read them only when
         * pml cm was selected (its parameters stay registered after MPI_Init only then). */
        if (strncmp(name, "mtl_", 4) == 0 && mlt_cvar_find("pml_cm_free_list_num") < 0) {
            if (comm == MPI_COMM_NULL && out != NULL) {
                fputs("{\"skipped\": ", out);
                ml_json_str(out, name);
                fputs(", \"reason\": \"its component (an mtl of pml cm) is not in use\"}\n", out);
            }
            continue;
        }
#endif
        if (comm == MPI_COMM_NULL) {
            pvars_matched++;
            if (bind == MPI_T_BIND_MPI_COMM) comm_bound_matched++;
            if (bind == MPI_T_BIND_NO_OBJECT) add_pvar(i, name, cls, dt, bind, cont, MPI_COMM_NULL, "");
        } else if (bind == MPI_T_BIND_MPI_COMM) {
            add_pvar(i, name, cls, dt, bind, cont, comm, commname);
        }
    }
}

static void sample(const char *why, const char *region)
{
    if (out == NULL) return;
    const double t = (double)(ml_clock_ns() - ml_g.ns_init_end) * 1e-9;
    fprintf(out, "{\"t\": %.6f, \"why\": \"%s\"", t, why);
    if (region != NULL) {
        fputs(", \"region\": ", out);
        ml_json_str(out, region);
    }
    fputs(", \"v\": [", out);
    for (int i = 0; i < npvars; i++) {
        pvar_t *p = &pvars[i];
        fputs(i ? ", " : "", out);
        if (!p->live || ml_exposed_T_pvar_read(session, p->handle, buf) != MPI_SUCCESS) {
            if (p->live) read_errors++;
            fputs("null", out);
            continue;
        }
        if (p->count == 1) {
            fprintf(out, "%.17g", mlt_as_double(p->type, buf, 0));
        } else { /* one value per element (per peer for Open MPI's ob1 queue lengths) */
            fputc('[', out);
            for (int k = 0; k < p->count; k++) fprintf(out, "%s%.17g", k ? "," : "", mlt_as_double(p->type, buf, k));
            fputc(']', out);
        }
    }
    fputs("]}\n", out);
    samples++;
}

static void *sampler_main(void *arg)
{
    (void)arg;
    const long ms = ml_g.config.mpit_period_ms;
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (!__atomic_load_n(&sampler_stop, __ATOMIC_ACQUIRE)) {
        nanosleep(&ts, NULL);
        if (__atomic_load_n(&sampler_stop, __ATOMIC_ACQUIRE)) break;
        pthread_mutex_lock(&lock);
        sample("tick", NULL);
        fflush(out); /* a killed rank keeps its series up to the last tick */
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

static void start_session(void)
{
    out = ml_stream_fopen(ML_STREAM_MPIT, 0);
    if (out == NULL) {
        ml_log(0, "cannot write this rank's pvar series into %s/mpit (%s); no pvar series", ml_g.outdir,
               strerror(errno));
        return;
    }
    ml_exposed_T_pvar_get_num(&pvars_total);
    session_ok = PMPI_T_pvar_session_create(&session) == MPI_SUCCESS;
    fprintf(out, "{\"schema\": \"" ML_SCHEMA_MPIT "\", \"rank\": %d, \"pvars_total\": %d, \"regex\": ", ml_g.rank,
            pvars_total);
    ml_json_str(out, ml_g.config.mpit_pvars ? ml_g.config.mpit_pvars : "");
    /* the periodic reads come from a thread of their own: only safe when MPI_T is thread safe */
    const int periodic = mlt_thread_level() == MPI_THREAD_MULTIPLE;
    fprintf(out, ", \"period_ms\": %ld, \"periodic\": %s, \"session\": %s}\n", ml_g.config.mpit_period_ms,
            periodic ? "true" : "false", session_ok ? "true" : "false");
    if (!session_ok) return;
    add_pvars_for(MPI_COMM_NULL, "");
    add_pvars_for(ml_g.world, "MPI_COMM_WORLD");
    if (ml_g.rank == 0) {
        if (pvars_total == 0)
            ml_log(0, "this MPI exposes no MPI_T performance variables; the mpit series are absent");
        else if (pvars_matched == 0)
            ml_log(0, "MPILENS_MPIT_PVARS=%s matches none of the %d performance variables of this MPI; "
                      "no pvar series are recorded", ml_g.config.mpit_pvars, pvars_total);
    }
    sample("init", NULL);
    fflush(out);
    if (npvars > 0 && !periodic && ml_g.rank == 0)
        ml_log(0, "MPI_T of this MPI is not thread safe (MPI_T_init_thread provided level %d); pvars "
                  "are read at MPI_Init, region boundaries and MPI_Finalize only, not every "
                  "MPILENS_MPIT_PERIOD_MS", mlt_thread_level());
    if (npvars > 0 && periodic) {
        sampler_stop = 0;
        sampler_running = pthread_create(&sampler, NULL, sampler_main, NULL) == 0;
    }
}

void ml_mpit_after_init(void)
{
    if (!wanted) return;
    if (mlt_init() != 0) {
        wanted = 0;
        if (ml_g.rank == 0) ml_log(0, "MPI_T_init_thread failed after MPI_Init: no MPI_T variables in this run");
        return;
    }
#if defined(OPEN_MPI)
    char err[sizeof ml_g.config_error];
    if (!checked && mlt_parse_requests(ml_g.config.cvars, ml_g.config.comm_cvars, reqs, MAX_REQS, &nreqs, err, sizeof err) != 0) {
        /* checked before MPI_Init; a child that could not run leaves it to here */
        if (ml_g.rank == 0) ml_log(0, "%s; cvars are not read back nor set per communicator in this run", err);
        nreqs = 0;
    }
#endif
    read_back();
}

int ml_mpit_init(void)
{
    if (!wanted) return 0;
    int comm_reqs = 0;
    for (int i = 0; i < nreqs; i++) comm_reqs += reqs[i].comm[0] != 0;
    if (ml_g.config.mode & ML_MODE_MPIT) {
        start_session();
        ml_g.mpit = out != NULL && npvars > 0;
    }
    ml_g.mpit_comms = comm_reqs > 0 || comm_bound_matched > 0;
    return 0;
}

/* ------------------------------------------------------------------------------- communicators */
void ml_mpit_comm_named(MPI_Comm comm)
{
    char cname[MPI_MAX_OBJECT_NAME] = {0};
    int len = 0;
    if (PMPI_Comm_get_name(comm, cname, &len) != MPI_SUCCESS || strcmp(cname, "mpilens") == 0) return;
    pthread_mutex_lock(&events_lock);
    for (int i = 0; i < nreqs; i++) {
        mlt_req_t *r = &reqs[i];
        if (r->comm[0] == 0 || strcmp(r->comm, cname) != 0 || nevents >= MAX_COMM_EVENTS) continue;
        struct comm_event *e = &events[nevents++];
        memset(e, 0, sizeof *e);
        snprintf(e->comm, sizeof e->comm, "%s", cname);
        snprintf(e->name, sizeof e->name, "%s", r->name);
        const int index = mlt_cvar_find(r->name);
        mlt_cvar_info_t info;
        if (index < 0 || mlt_cvar_info(index, &info) != 0) {
            snprintf(e->error, sizeof e->error, "not registered after MPI_Init (its component is not in use)");
            continue;
        }
        MPI_Comm c = comm;
        void *obj = info.bind == MPI_T_BIND_MPI_COMM ? (void *)&c : NULL;
        e->bound = obj != NULL;
        mlt_cvar_read(index, obj, e->old, sizeof e->old);
        if (mlt_cvar_write(index, obj, r->value, 0, e->error, sizeof e->error) == 0) {
            e->error[0] = 0;
            mlt_cvar_read(index, obj, e->now, sizeof e->now);
        } else if (ml_g.rank == 0) {
            ml_log(0, "MPILENS_COMM_CVARS: %s on %s: %s", r->name, cname, e->error);
        }
    }
    pthread_mutex_unlock(&events_lock);
    if (session_ok && comm_bound_matched > 0) {
        pthread_mutex_lock(&lock);
        add_pvars_for(comm, cname);
        pthread_mutex_unlock(&lock);
    }
}

void ml_mpit_comm_freed(MPI_Comm comm)
{
    if (!session_ok || comm == MPI_COMM_NULL) return;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < npvars; i++)
        if (pvars[i].live && pvars[i].comm == comm) {
            if (!pvars[i].continuous) ml_exposed_T_pvar_stop(session, pvars[i].handle);
            ml_exposed_T_pvar_handle_free(session, &pvars[i].handle);
            pvars[i].live = 0;
        }
    pthread_mutex_unlock(&lock);
}

/* ------------------------------------------------------------------------------- regions */
void ml_mpit_region(int begin, const char *name)
{
    if (out == NULL || npvars == 0) return;
    pthread_mutex_lock(&lock);
    sample(begin ? "begin" : "end", name);
    pthread_mutex_unlock(&lock);
}

/* ------------------------------------------------------------------------------- finalize */
void ml_mpit_finish(void)
{
    if (sampler_running) {
        __atomic_store_n(&sampler_stop, 1, __ATOMIC_RELEASE);
        pthread_join(sampler, NULL);
        sampler_running = 0;
    }
    pthread_mutex_lock(&lock);
    if (out != NULL) {
        sample("final", NULL);
        fprintf(out, "{\"end\": true, \"samples\": %llu, \"read_errors\": %llu, \"handles\": %d}\n",
                (unsigned long long)samples, (unsigned long long)read_errors, npvars);
        fclose(out);
        out = NULL;
    }
    if (session_ok) {
        for (int i = 0; i < npvars; i++)
            if (pvars[i].live) {
                if (!pvars[i].continuous) ml_exposed_T_pvar_stop(session, pvars[i].handle);
                ml_exposed_T_pvar_handle_free(session, &pvars[i].handle);
                pvars[i].live = 0;
            }
        PMPI_T_pvar_session_free(&session);
        session_ok = 0;
    }
    pthread_mutex_unlock(&lock);
}

/* ------------------------------------------------------------------------------- meta.json */
void ml_mpit_meta_json(FILE *f)
{
    fputs("  \"cvars_set\": [", f);
    int first = 1;
    for (int i = 0; i < nreqs; i++) {
        const mlt_req_t *r = &reqs[i];
        if (r->comm[0] != 0) continue;
        fputs(first ? "\n    {\"name\": " : ",\n    {\"name\": ", f);
        first = 0;
        ml_json_str(f, r->name);
        fputs(", \"requested\": ", f);
        ml_json_str(f, r->value);
        fputs(", \"old\": ", f);
        ml_json_str(f, r->old);
        fputs(", \"new\": ", f);
        if (r->applied)
            ml_json_str(f, r->now);
        else
            fputs("null", f);
        fprintf(f, ", \"scope\": \"%s\", \"when\": \"MPI_Init\", \"via\": ", mlt_scope_name(r->scope));
        if (r->via_env) {
            char env[300];
            snprintf(env, sizeof env, "environment OMPI_MCA_%s", r->name);
            ml_json_str(f, env);
        } else {
            fputs("\"MPI_T_cvar_write\"", f);
        }
        if (!r->applied) fputs(", \"note\": \"not registered after MPI_Init (its component is not in use)\"", f);
        fputc('}', f);
    }
    for (int i = 0; i < nreqs; i++) {
        const mlt_req_t *r = &reqs[i];
        if (r->comm[0] == 0) continue;
        const struct comm_event *e = NULL;
        for (int k = 0; k < nevents && e == NULL; k++)
            if (strcmp(events[k].comm, r->comm) == 0 && strcmp(events[k].name, r->name) == 0) e = &events[k];
        fputs(first ? "\n    {\"name\": " : ",\n    {\"name\": ", f);
        first = 0;
        ml_json_str(f, r->name);
        fputs(", \"requested\": ", f);
        ml_json_str(f, r->value);
        fputs(", \"communicator\": ", f);
        ml_json_str(f, r->comm);
        fprintf(f, ", \"scope\": \"%s\", \"when\": \"MPI_Comm_set_name\", \"via\": \"MPI_T_cvar_write\"",
                mlt_scope_name(r->scope));
        if (e == NULL) {
            fputs(", \"old\": null, \"new\": null, \"note\": \"rank 0 named no communicator so (other ranks may have)\"", f);
        } else {
            fputs(", \"old\": ", f);
            ml_json_str(f, e->old);
            fputs(", \"new\": ", f);
            if (e->error[0] == 0)
                ml_json_str(f, e->now);
            else
                fputs("null", f);
            fprintf(f, ", \"bound_to_communicator\": %s", e->bound ? "true" : "false");
            if (e->error[0] != 0) {
                fputs(", \"error\": ", f);
                ml_json_str(f, e->error);
            }
        }
        fputc('}', f);
    }
    fputs(first ? "],\n" : "\n  ],\n", f);
}

/* the table's event hooks (modes.c) */
void ml_mpit_on_region(ml_thread_t *t, int begin, uint32_t path, const char *name)
{
    (void)t;
    if (ML_UNLIKELY(ml_g.mpit)) ml_mpit_region(begin, begin ? name : ml_region_name(path));
}

void ml_mpit_on_comm_freed(MPI_Comm comm, const ml_comm_t *c)
{
    (void)c;
    if (ML_UNLIKELY(ml_g.mpit_comms)) ml_mpit_comm_freed(comm);
}
