/* quo-probe: drive the public QUO API from tests/test_quo.py and print what it answers, one
 * "qid=<q> <key>=<value>" line each, so that the test compares them with hand-derived values.
 *
 *   quo-probe queries                  counts, containment, errors of misuse
 *   quo-probe stack                    push/pop nesting, both policies, stack limits
 *   quo-probe distrib TYPE MAX BINDS   bind each qid as BINDS says (comma list, one per qid: a core
 *                                      index or "-" for unbound), then QUO_auto_distrib(TYPE, MAX)
 *   quo-probe quiesce SECONDS quo|mpi  qid 0 computes for SECONDS, the others wait in QUO_barrier
 *                                      (quo) or MPI_Barrier (mpi); qid 0 reports how often it saw a
 *                                      waiter running, each rank the CPU time its wait consumed
 *   quo-probe nomt                     counts of a QUO_CREATE_NO_MT context
 *
 * It checks nothing itself (apart from reporting return codes), and exits 0 unless QUO_create fails.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity */
#endif
#include <mpi.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "quo.h"

static int qid;

static void say(const char *key, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(const char *key, const char *fmt, ...)
{
    char value[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(value, sizeof value, fmt, ap);
    va_end(ap);
    printf("qid=%d %s=%s\n", qid, key, value);
    fflush(stdout);
}

static void say_cbind(QUO_context q, const char *key)
{
    char *s = NULL;
    const int rc = QUO_stringify_cbind(q, &s);
    say(key, "%s", rc == QUO_SUCCESS ? s : "error");
    free(s);
}

/* The kernel's view of this process' binding (what hwloc really applied), as a CPU list. */
static void say_affinity(const char *key)
{
    cpu_set_t set;
    char out[256] = "";
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        for (int c = 0; c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, &set)) snprintf(out + strlen(out), sizeof out - strlen(out), "%s%d", out[0] ? "," : "", c);
    }
    say(key, "%s", out);
}

static void say_qids(QUO_context q, const char *key, QUO_obj_type_t type, int index)
{
    int n = -1, *qids = NULL;
    const int rc = QUO_qids_in_type(q, type, index, &n, &qids);
    char out[256] = "";
    for (int i = 0; rc == QUO_SUCCESS && i < n; i++)
        snprintf(out + strlen(out), sizeof out - strlen(out), "%s%d", i ? "," : "", qids[i]);
    free(qids);
    say(key, "%s", rc == QUO_SUCCESS ? out : "error");
}

static QUO_obj_type_t type_named(const char *name)
{
    if (strcmp(name, "MACHINE") == 0) return QUO_OBJ_MACHINE;
    if (strcmp(name, "NUMANODE") == 0) return QUO_OBJ_NUMANODE;
    if (strcmp(name, "SOCKET") == 0) return QUO_OBJ_SOCKET;
    if (strcmp(name, "PACKAGE") == 0) return QUO_OBJ_PACKAGE;
    if (strcmp(name, "CORE") == 0) return QUO_OBJ_CORE;
    return QUO_OBJ_PU;
}

static void queries(QUO_context q)
{
    int v = 0, s = 0, n = 0;
    QUO_version(&v, &s);
    say("version", "%d.%d", v, s);
    QUO_nnodes(q, &n), say("nnodes", "%d", n);
    QUO_nqids(q, &n), say("nqids", "%d", n);
    QUO_id(q, &n), say("id", "%d", n);
    QUO_nsockets(q, &n), say("nsockets", "%d", n);
    QUO_nobjs_by_type(q, QUO_OBJ_PACKAGE, &n), say("npackages", "%d", n);
    QUO_nnumanodes(q, &n), say("nnumanodes", "%d", n);
    QUO_ncores(q, &n), say("ncores", "%d", n);
    QUO_npus(q, &n), say("npus", "%d", n);
    QUO_nobjs_by_type(q, QUO_OBJ_MACHINE, &n), say("nmachines", "%d", n);
    QUO_bound(q, &n), say("bound", "%d", n);
    say_cbind(q, "cbind");
    QUO_nobjs_in_type_by_type(q, QUO_OBJ_SOCKET, 0, QUO_OBJ_CORE, &n), say("cores_in_socket0", "%d", n);
    QUO_nobjs_in_type_by_type(q, QUO_OBJ_SOCKET, 0, QUO_OBJ_NUMANODE, &n), say("numas_in_socket0", "%d", n);
    QUO_nobjs_in_type_by_type(q, QUO_OBJ_NUMANODE, 0, QUO_OBJ_PU, &n), say("pus_in_numa0", "%d", n);
    QUO_nobjs_in_type_by_type(q, QUO_OBJ_MACHINE, 0, QUO_OBJ_SOCKET, &n), say("sockets_in_machine", "%d", n);
    QUO_cpuset_in_type(q, QUO_OBJ_MACHINE, 0, &n), say("in_machine0", "%d", n);
    QUO_cpuset_in_type(q, QUO_OBJ_SOCKET, 0, &n), say("in_socket0", "%d", n);
    say_qids(q, "qids_in_machine0", QUO_OBJ_MACHINE, 0);
    say_qids(q, "qids_in_socket0", QUO_OBJ_SOCKET, 0);
    /* misuse: reported, never fatal */
    say("rc_null_context", "%d", QUO_nsockets(NULL, &n));
    say("rc_null_out", "%d", QUO_nsockets(q, NULL));
    say("rc_bad_index", "%d", QUO_nobjs_in_type_by_type(q, QUO_OBJ_SOCKET, 99, QUO_OBJ_CORE, &n));
    say("rc_bad_type", "%d", QUO_nobjs_by_type(q, (QUO_obj_type_t)42, &n));
    say("rc_pop_initial", "%d", QUO_bind_pop(q));
    say("rc_version_null", "%d", QUO_version(NULL, &s));
    MPI_Comm node = MPI_COMM_NULL;
    int rc = QUO_get_mpi_comm_by_type(q, QUO_OBJ_MACHINE, &node);
    if (rc == QUO_SUCCESS) MPI_Comm_size(node, &n), MPI_Comm_free(&node);
    say("machine_comm_size", "%d", rc == QUO_SUCCESS ? n : -rc);
    say("rc_socket_comm", "%d", QUO_get_mpi_comm_by_type(q, QUO_OBJ_SOCKET, &node));
}

static void stack(QUO_context q)
{
    int ncores = 0, n = 0;
    QUO_ncores(q, &ncores);
    const int core = (5 + qid) % ncores;
    say("rc_push_core", "%d", QUO_bind_push(q, QUO_BIND_PUSH_PROVIDED, QUO_OBJ_CORE, core));
    say_cbind(q, "cbind_core");
    say_affinity("affinity_core");
    QUO_bound(q, &n), say("bound_core", "%d", n);
    say("rc_push_numa", "%d", QUO_bind_push(q, QUO_BIND_PUSH_OBJ, QUO_OBJ_NUMANODE, -1));
    say_cbind(q, "cbind_numa");
    say("rc_push_socket", "%d", QUO_bind_push(q, QUO_BIND_PUSH_OBJ, QUO_OBJ_SOCKET, 12345));
    say_cbind(q, "cbind_socket");
    say_affinity("affinity_socket");
    QUO_cpuset_in_type(q, QUO_OBJ_SOCKET, 0, &n), say("socket_in_socket0", "%d", n);
    MPI_Barrier(MPI_COMM_WORLD); /* every process has pushed: the third-party view is settled */
    say_qids(q, "qids_in_socket1", QUO_OBJ_SOCKET, 1);
    MPI_Barrier(MPI_COMM_WORLD);
    say("rc_pop1", "%d", QUO_bind_pop(q));
    say_cbind(q, "cbind_pop1");
    say("rc_pop2", "%d", QUO_bind_pop(q));
    say_cbind(q, "cbind_pop2");
    say("rc_pop3", "%d", QUO_bind_pop(q));
    say_cbind(q, "cbind_pop3");
    say_affinity("affinity_pop3");
    say("rc_pop4", "%d", QUO_bind_pop(q));
    say("rc_push_bad_index", "%d", QUO_bind_push(q, QUO_BIND_PUSH_PROVIDED, QUO_OBJ_CORE, ncores));
    say("rc_push_bad_policy", "%d", QUO_bind_push(q, (QUO_bind_push_policy_t)7, QUO_OBJ_CORE, 0));
    /* the stack holds 128 bindings, the initial one included */
    int pushed = 0, rc = QUO_SUCCESS;
    while ((rc = QUO_bind_push(q, QUO_BIND_PUSH_PROVIDED, QUO_OBJ_MACHINE, 0)) == QUO_SUCCESS) pushed++;
    say("pushes_until_full", "%d", pushed);
    say("rc_push_full", "%d", rc);
    int popped = 0;
    while (QUO_bind_pop(q) == QUO_SUCCESS) popped++;
    say("pops_until_initial", "%d", popped);
    say_cbind(q, "cbind_end");
}

static void distrib(QUO_context q, const char *type, int max, const char *binds)
{
    char *copy = strdup(binds), *save = NULL;
    int i = 0;
    for (char *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save), i++)
        if (i == qid && strcmp(w, "-") != 0) say("rc_bind", "%d", QUO_bind_push(q, QUO_BIND_PUSH_PROVIDED, QUO_OBJ_CORE, atoi(w)));
    free(copy);
    int selected = -1;
    say("rc_distrib", "%d", QUO_auto_distrib(q, type_named(type), max, &selected));
    say("selected", "%d", selected);
}

static double cpu_seconds(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_utime.tv_sec + u.ru_stime.tv_sec + 1e-6 * (u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

/* State letter of a process' main thread from /proc/<pid>/stat: R running or runnable, S sleeping */
static char state_of(int pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f) return '?';
    const size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *close = strrchr(buf, ')');
    return close && close[1] && close[2] ? close[2] : '?';
}

/* qid 0 computes while the others wait in QUO_barrier ("quo") or MPI_Barrier ("mpi"); halfway,
 * qid 0 samples the waiters' scheduler states: a process sleeping in the kernel is never R */
static void quiesce(QUO_context q, double seconds, const char *how)
{
    const int use_quo = strcmp(how, "mpi") != 0;
    int nqids = 0, me = getpid();
    QUO_nqids(q, &nqids);
    MPI_Comm node;
    QUO_get_mpi_comm_by_type(q, QUO_OBJ_MACHINE, &node);
    int *pids = malloc(sizeof(int) * (size_t)nqids);
    MPI_Allgather(&me, 1, MPI_INT, pids, 1, MPI_INT, node);
    MPI_Barrier(node);
    const double t0 = MPI_Wtime(), c0 = cpu_seconds();
    if (qid == 0) {
        volatile double x = 0;
        int samples = 0, running = 0;
        while (MPI_Wtime() - t0 < seconds / 2) x += 1e-9;
        for (int k = 0; k < 20; k++) {
            const double s = MPI_Wtime();
            for (int p = 1; p < nqids; p++, samples++) running += state_of(pids[p]) == 'R';
            while (MPI_Wtime() - s < 0.01) x += 1e-9;
        }
        while (MPI_Wtime() - t0 < seconds) x += 1e-9;
        say("peer_samples", "%d", samples);
        say("peer_running_samples", "%d", running);
    }
    say("rc_barrier", "%d", use_quo ? QUO_barrier(q) : (MPI_Barrier(node) == MPI_SUCCESS ? 0 : -1));
    const double wall = MPI_Wtime() - t0, cpu = cpu_seconds() - c0;
    say("wait_wall_s", "%.4f", wall);
    say("wait_cpu_s", "%.4f", cpu);
    free(pids);
    MPI_Comm_free(&node);
}

int main(int argc, char **argv)
{
    int provided = 0;
    QUO_context early = NULL;
    const int rc_before_init = QUO_create(&early, MPI_COMM_WORLD);
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided);
    const char *what = argc > 1 ? argv[1] : "queries";
    QUO_context q = NULL;
    int rc = strcmp(what, "nomt") == 0 ? QUO_create_with_flags(&q, MPI_COMM_WORLD, QUO_CREATE_NO_MT)
                                       : QUO_create(&q, MPI_COMM_WORLD);
    if (rc != QUO_SUCCESS) {
        fprintf(stderr, "quo-probe: QUO_create failed: %d\n", rc);
        MPI_Finalize();
        return 1;
    }
    QUO_id(q, &qid);
    if (strcmp(what, "queries") == 0) {
        say("rc_create_before_init", "%d%s", rc_before_init, early ? " (context made)" : "");
        QUO_context other = NULL;
        say("rc_create_comm_null", "%d", QUO_create(&other, MPI_COMM_NULL));
        say("rc_free_null", "%d", QUO_free(NULL));
        queries(q);
    }
    else if (strcmp(what, "stack") == 0) stack(q);
    else if (strcmp(what, "distrib") == 0 && argc > 4) distrib(q, argv[2], atoi(argv[3]), argv[4]);
    else if (strcmp(what, "quiesce") == 0 && argc > 3) quiesce(q, atof(argv[2]), argv[3]);
    else if (strcmp(what, "nomt") == 0) {
        int n = 0;
        QUO_ncores(q, &n), say("ncores", "%d", n);
        QUO_npus(q, &n), say("npus", "%d", n);
        QUO_nobjs_in_type_by_type(q, QUO_OBJ_CORE, 1, QUO_OBJ_PU, &n), say("pus_in_core1", "%d", n);
    }
    say("rc_free", "%d", QUO_free(q));
    MPI_Finalize();
    return 0;
}
