/* QUO API 1.4 on hwloc 2 and MPI: contexts, queries, the bind stack, quiescence and distribution.
 *
 * A context owns a duplicate of its communicator, the node-local communicator (qid = rank there), a
 * topology (discovered once per node and shared as XML), a stack of bindings and a node-local shared
 * segment. The segment holds the process-shared pthread barrier of QUO_barrier and one slot per qid
 * with that process' current binding, written by its owner at create, push and pop; third-party
 * queries (QUO_qids_in_type, QUO_auto_distrib) read the slots instead of asking the kernel about
 * other PIDs, which is cheaper and also works on synthetic topologies where nothing is really bound.
 */
#include "quo.h"
#include "quo-topo.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define QUO_EXPORT __attribute__((visibility("default")))
/* libquo's depth: deep enough for any nesting of libraries seen in practice */
#define QUO_BIND_STACK_SIZE 128
#define QUO_SHM_NAME_MAX 64

/* mpilens annotation API, bound only when the mpilens runtime is preloaded: weak references stay
 * NULL otherwise, so libquo needs no mpilens library at link or run time. */
extern void mpilens_region_begin_in(const char *category, const char *name)
    __attribute__((weak, visibility("default")));
extern void mpilens_region_end(const char *name) __attribute__((weak, visibility("default")));

static void region_begin(const char *name)
{
    if (mpilens_region_begin_in) mpilens_region_begin_in("quo", name);
}

static int region_end(const char *name, int rc)
{
    if (mpilens_region_end) mpilens_region_end(name);
    return rc;
}

/* The shared segment: a header, then nqids slots of (sequence, nwords cpuset words). */
typedef struct {
    pthread_barrier_t barrier;
    int nqids;
    int nwords;
} quo_shm_header_t;

struct QUO_t {
    MPI_Comm comm;      /* duplicate of the initializing communicator */
    MPI_Comm node_comm; /* its processes on this node */
    int qid, nqids, nnodes;
    hwloc_topology_t topo;
    int this_system; /* 0 on synthetic or XML topologies: bindings are tracked, not applied */
    hwloc_bitmap_t widest;
    hwloc_bitmap_t stack[QUO_BIND_STACK_SIZE];
    int depth;
    quo_shm_header_t *shm;
    size_t shm_size;
};

/* ------------------------------------------------------------------------------ messages */
static int verbose(void)
{
    const char *v = getenv("QUO_VERBOSE");
    return v != NULL && v[0] != '\0' && strcmp(v, "0") != 0;
}

/* Report an error in one line (always for failures of the system, MPI or hwloc, on request for
 * misuse) and hand its code back. */
__attribute__((format(printf, 3, 4))) static int fail(int rc, const char *func, const char *fmt, ...)
{
    const int misuse = rc == QUO_ERR_INVLD_ARG || rc == QUO_ERR_POP || rc == QUO_ERR_NOT_FOUND ||
                       rc == QUO_ERR_CALL_BEFORE_INIT || rc == QUO_ERR_NOT_SUPPORTED;
    if (misuse && !verbose()) return rc;
    int rank = -1, initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (initialized && !finalized) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "[quo %d/%ld] %s: %s\n", rank, (long)getpid(), func, msg);
    return rc;
}

#define NEED_CONTEXT(q)                                                                                  \
    do {                                                                                                 \
        if ((q) == NULL) return fail(QUO_ERR_CALL_BEFORE_INIT, __func__, "NULL context (QUO_create first)"); \
    } while (0)
#define NEED_ARG(p)                                                                                      \
    do {                                                                                                 \
        if ((p) == NULL) return fail(QUO_ERR_INVLD_ARG, __func__, "%s is NULL", #p);                    \
    } while (0)

/* ------------------------------------------------------------------------ shared slots */
static size_t slot_words(const quo_shm_header_t *h) { return (size_t)h->nwords + 1; }

static _Atomic unsigned long *slot(const struct QUO_t *q, int qid)
{
    _Atomic unsigned long *base = (_Atomic unsigned long *)((char *)q->shm + sizeof(quo_shm_header_t));
    return base + (size_t)qid * slot_words(q->shm);
}

/* Publish the caller's current binding: a sequence lock, since readers are other processes that
 * may look at any time and must never see half a set. Only the owner writes its slot. */
static void publish_binding(struct QUO_t *q)
{
    _Atomic unsigned long *s = slot(q, q->qid);
    unsigned long words[q->shm->nwords];
    hwloc_bitmap_to_ulongs(q->stack[q->depth - 1], (unsigned)q->shm->nwords, words);
    const unsigned long seq = atomic_load_explicit(&s[0], memory_order_relaxed);
    atomic_store_explicit(&s[0], seq + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    for (int i = 0; i < q->shm->nwords; i++) atomic_store_explicit(&s[1 + i], words[i], memory_order_relaxed);
    atomic_store_explicit(&s[0], seq + 2, memory_order_release);
}

static void read_binding(const struct QUO_t *q, int qid, hwloc_bitmap_t out)
{
    _Atomic unsigned long *s = slot(q, qid);
    unsigned long words[q->shm->nwords];
    for (;;) {
        const unsigned long before = atomic_load_explicit(&s[0], memory_order_acquire);
        if (before & 1) continue;
        for (int i = 0; i < q->shm->nwords; i++) words[i] = atomic_load_explicit(&s[1 + i], memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&s[0], memory_order_relaxed) == before) break;
    }
    hwloc_bitmap_from_ulongs(out, (unsigned)q->shm->nwords, words);
}

/* --------------------------------------------------------------------------- creation */
/* Discover the topology on node rank 0 only and ship it to the others as XML: at scale the node's
 * ranks would otherwise all walk sysfs at once. Node rank 0 always reaches the broadcasts, even when
 * discovery failed, so that nobody waits for it forever. */
static int load_topology(struct QUO_t *q, QUO_create_flags_t flags)
{
    const char *me = "QUO_create";
    int info[3] = {0, 0, 1}; /* XML length, this_system, discovery succeeded */
    char *xml = NULL;
    if (q->qid == 0) {
        if (hwloc_topology_init(&q->topo) != 0) {
            q->topo = NULL;
            info[2] = 0;
            fail(QUO_ERR_TOPO, me, "hwloc_topology_init failed");
        } else if (hwloc_topology_load(q->topo) != 0) {
            info[2] = 0;
            fail(QUO_ERR_TOPO, me, "hwloc_topology_load failed");
        } else {
            info[1] = hwloc_topology_is_thissystem(q->topo);
            int len = 0;
            if (q->nqids > 1 && hwloc_topology_export_xmlbuffer(q->topo, &xml, &len, 0) == 0) info[0] = len;
        }
    }
    if (MPI_Bcast(info, 3, MPI_INT, 0, q->node_comm) != MPI_SUCCESS) return fail(QUO_ERR_MPI, me, "MPI_Bcast failed");
    if (!info[2]) return QUO_ERR_TOPO; /* node rank 0 said why */
    q->this_system = info[1];
    int rc = 0;
    if (q->nqids > 1) {
        if (q->qid != 0 && info[0] > 0 && (xml = malloc((size_t)info[0])) == NULL) info[0] = 0;
        /* everyone agrees on whether the XML comes, even if a receiver could not allocate it; without
         * it, each process discovers the machine itself */
        int ok = info[0] > 0, all_ok = 0;
        if (MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, q->node_comm) != MPI_SUCCESS ||
            (all_ok && MPI_Bcast(xml, info[0], MPI_CHAR, 0, q->node_comm) != MPI_SUCCESS)) {
            rc = fail(QUO_ERR_MPI, me, "sharing the topology failed");
        } else if (q->qid != 0) {
            if (hwloc_topology_init(&q->topo) != 0) {
                q->topo = NULL;
                rc = -1;
            } else if (all_ok) {
                rc = hwloc_topology_set_xmlbuffer(q->topo, xml, info[0]);
                /* XML loses "this is the machine I run on", which binding needs */
                if (rc == 0 && q->this_system) rc = hwloc_topology_set_flags(q->topo, HWLOC_TOPOLOGY_FLAG_IS_THISSYSTEM);
            }
            if (rc == 0 && hwloc_topology_load(q->topo) != 0) rc = -1;
            if (rc != 0) rc = fail(QUO_ERR_TOPO, me, "loading the node's topology failed");
        }
        if (q->qid == 0) {
            if (xml) hwloc_free_xmlbuffer(q->topo, xml);
        } else {
            free(xml);
        }
        if (rc != QUO_SUCCESS) return rc;
    }
    if (flags & QUO_CREATE_NO_MT) {
        /* keep the first PU of every core: software "no hyper-threading" */
        hwloc_bitmap_t firsts = hwloc_bitmap_alloc();
        if (firsts == NULL) return fail(QUO_ERR_OOR, me, "out of memory");
        for (hwloc_obj_t c = hwloc_get_next_obj_by_type(q->topo, HWLOC_OBJ_CORE, NULL); c;
             c = hwloc_get_next_obj_by_type(q->topo, HWLOC_OBJ_CORE, c))
            hwloc_bitmap_set(firsts, (unsigned)hwloc_bitmap_first(c->cpuset));
        rc = hwloc_bitmap_iszero(firsts) ? 0 : hwloc_topology_restrict(q->topo, firsts, 0);
        hwloc_bitmap_free(firsts);
        if (rc != 0) return fail(QUO_ERR_TOPO, me, "hwloc_topology_restrict failed");
    }
    return QUO_SUCCESS;
}

/* Node-wide agreement on a step's outcome: a process that failed alone must not leave its peers
 * waiting in the next collective. Returns rc, or QUO_ERR when only a peer failed (it said why). */
static int agree(struct QUO_t *q, int rc)
{
    int ok = rc == QUO_SUCCESS, all_ok = 0;
    if (MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, q->node_comm) != MPI_SUCCESS)
        return fail(QUO_ERR_MPI, "QUO_create", "MPI_Allreduce failed");
    return rc != QUO_SUCCESS ? rc : all_ok ? QUO_SUCCESS : QUO_ERR;
}

/* The binding the process starts with: the kernel's, on this machine; the whole node otherwise. */
static int initial_binding(struct QUO_t *q)
{
    q->widest = hwloc_bitmap_dup(hwloc_topology_get_topology_cpuset(q->topo));
    q->stack[0] = hwloc_bitmap_dup(q->widest);
    q->depth = 1; /* destroy() frees stack[0] even when this fails */
    if (q->widest == NULL || q->stack[0] == NULL) return fail(QUO_ERR_OOR, "QUO_create", "out of memory");
    if (q->this_system && hwloc_get_cpubind(q->topo, q->stack[0], HWLOC_CPUBIND_PROCESS) == 0) {
        hwloc_bitmap_and(q->stack[0], q->stack[0], q->widest);
        if (hwloc_bitmap_iszero(q->stack[0])) hwloc_bitmap_copy(q->stack[0], q->widest);
    } else {
        hwloc_bitmap_copy(q->stack[0], q->widest);
    }
    return QUO_SUCCESS;
}

/* Node rank 0 makes the segment and initializes the barrier; the others attach by name; the name is
 * unlinked once all are attached, so nothing is left behind even if the job dies. */
static int attach_segment(struct QUO_t *q)
{
    const char *me = "QUO_create";
    static _Atomic int contexts_made;
    char name[QUO_SHM_NAME_MAX] = {0};
    int nwords = 0;
    if (q->qid == 0) {
        const int last = hwloc_bitmap_last(hwloc_topology_get_complete_cpuset(q->topo));
        nwords = (last < 0 ? 0 : last) / (int)(8 * sizeof(unsigned long)) + 1;
        snprintf(name, sizeof name, "/mpilens-quo-%ld-%ld-%d", (long)getuid(), (long)getpid(),
                 atomic_fetch_add(&contexts_made, 1));
    }
    if (MPI_Bcast(name, QUO_SHM_NAME_MAX, MPI_CHAR, 0, q->node_comm) != MPI_SUCCESS ||
        MPI_Bcast(&nwords, 1, MPI_INT, 0, q->node_comm) != MPI_SUCCESS)
        return fail(QUO_ERR_MPI, me, "MPI_Bcast failed");
    q->shm_size = sizeof(quo_shm_header_t) + (size_t)q->nqids * ((size_t)nwords + 1) * sizeof(unsigned long);

    int ok = 1, created = 0;
    char why[128] = "";
    if (q->qid == 0) {
        const int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
        created = fd >= 0;
        if (fd < 0 || ftruncate(fd, (off_t)q->shm_size) != 0) {
            ok = 0;
            snprintf(why, sizeof why, "creating shared memory %s: %s", name, strerror(errno));
        } else {
            void *p = mmap(NULL, q->shm_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            if (p == MAP_FAILED) {
                ok = 0;
                snprintf(why, sizeof why, "mmap: %s", strerror(errno));
            } else {
                q->shm = p;
                q->shm->nqids = q->nqids;
                q->shm->nwords = nwords;
                pthread_barrierattr_t attr;
                pthread_barrierattr_init(&attr);
                pthread_barrierattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
                if (pthread_barrier_init(&q->shm->barrier, &attr, (unsigned)q->nqids) != 0) {
                    ok = 0;
                    snprintf(why, sizeof why, "pthread_barrier_init failed");
                    munmap(p, q->shm_size);
                    q->shm = NULL;
                }
                pthread_barrierattr_destroy(&attr);
            }
        }
        if (fd >= 0) close(fd);
    }
    /* the others attach only once the segment is ready; everyone learns whether anyone failed */
    int all_ok = 0;
    if (MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, q->node_comm) != MPI_SUCCESS)
        return fail(QUO_ERR_MPI, me, "MPI_Allreduce failed");
    if (all_ok && q->qid != 0) {
        const int fd = shm_open(name, O_RDWR, 0600);
        void *p = fd < 0 ? MAP_FAILED : mmap(NULL, q->shm_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED) {
            ok = 0;
            snprintf(why, sizeof why, "attaching shared memory %s: %s", name, strerror(errno));
        } else {
            q->shm = p;
        }
        if (fd >= 0) close(fd);
    }
    if (all_ok) {
        if (ok) publish_binding(q);
        if (MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, q->node_comm) != MPI_SUCCESS)
            return fail(QUO_ERR_MPI, me, "MPI_Allreduce failed");
    }
    if (created) shm_unlink(name); /* whatever happened: the name must not outlive the job */
    if (!ok) return fail(QUO_ERR_SYS, me, "%s", why);
    if (!all_ok) return QUO_ERR_SYS; /* a peer failed and said why */
    return QUO_SUCCESS;
}

static void destroy(struct QUO_t *q)
{
    if (q->shm) munmap(q->shm, q->shm_size);
    for (int i = 0; i < q->depth; i++) hwloc_bitmap_free(q->stack[i]);
    if (q->widest) hwloc_bitmap_free(q->widest);
    if (q->topo) hwloc_topology_destroy(q->topo);
    if (q->node_comm != MPI_COMM_NULL) MPI_Comm_free(&q->node_comm);
    if (q->comm != MPI_COMM_NULL) MPI_Comm_free(&q->comm);
    free(q);
}

static int create(QUO_context *out, MPI_Comm comm, QUO_create_flags_t flags)
{
    const char *me = "QUO_create";
    NEED_ARG(out);
    *out = NULL;
    if (flags & ~QUO_CREATE_NO_MT) return fail(QUO_ERR_INVLD_ARG, me, "unknown flags 0x%x", (unsigned)flags);
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (!initialized || finalized) return fail(QUO_ERR_MPI, me, "MPI is not initialized (call after MPI_Init)");

    if (comm == MPI_COMM_NULL) return fail(QUO_ERR_INVLD_ARG, me, "MPI_COMM_NULL");

    struct QUO_t *q = calloc(1, sizeof *q);
    if (q == NULL) return fail(QUO_ERR_OOR, me, "out of memory");
    q->comm = q->node_comm = MPI_COMM_NULL;
    int rc = QUO_ERR_MPI, rank = 0, leader = 0;
    /* MPI errors on QUO's own communicators come back as codes (QUO_ERR_MPI), never as an abort; the
     * node communicator inherits the handler */
    if (MPI_Comm_dup(comm, &q->comm) != MPI_SUCCESS ||
        MPI_Comm_set_errhandler(q->comm, MPI_ERRORS_RETURN) != MPI_SUCCESS || MPI_Comm_rank(q->comm, &rank) != MPI_SUCCESS ||
        MPI_Comm_split_type(q->comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &q->node_comm) != MPI_SUCCESS ||
        MPI_Comm_rank(q->node_comm, &q->qid) != MPI_SUCCESS || MPI_Comm_size(q->node_comm, &q->nqids) != MPI_SUCCESS) {
        fail(rc, me, "building the node communicator failed");
        goto error;
    }
    leader = q->qid == 0;
    if (MPI_Allreduce(&leader, &q->nnodes, 1, MPI_INT, MPI_SUM, q->comm) != MPI_SUCCESS) {
        fail(rc, me, "counting nodes failed");
        goto error;
    }
    if ((rc = load_topology(q, flags)) == QUO_SUCCESS) rc = initial_binding(q);
    if ((rc = agree(q, rc)) != QUO_SUCCESS || (rc = attach_segment(q)) != QUO_SUCCESS) goto error;
    *out = q;
    return QUO_SUCCESS;
error:
    destroy(q);
    return rc;
}

QUO_EXPORT int QUO_version(int *version, int *subversion)
{
    NEED_ARG(version);
    NEED_ARG(subversion);
    *version = (QUO_API_VERSION >> 16) & 0xff;
    *subversion = (QUO_API_VERSION >> 8) & 0xff;
    return QUO_SUCCESS;
}

QUO_EXPORT int QUO_create(QUO_context *q, MPI_Comm comm)
{
    region_begin("QUO_create");
    return region_end("QUO_create", create(q, comm, QUO_CREATE_NO_FLAGS));
}

QUO_EXPORT int QUO_create_with_flags(QUO_context *q, MPI_Comm comm, QUO_create_flags_t flags)
{
    region_begin("QUO_create");
    return region_end("QUO_create", create(q, comm, flags));
}

QUO_EXPORT int QUO_free(QUO_context q)
{
    if (q == NULL) return QUO_SUCCESS;
    region_begin("QUO_free");
    int rc = QUO_SUCCESS;
    /* nobody may still be inside the pthread barrier when it is destroyed */
    if (MPI_Barrier(q->node_comm) != MPI_SUCCESS) rc = fail(QUO_ERR_MPI, __func__, "MPI_Barrier failed");
    else if (q->qid == 0) pthread_barrier_destroy(&q->shm->barrier);
    destroy(q);
    return region_end("QUO_free", rc);
}

/* ----------------------------------------------------------------------------- queries */
QUO_EXPORT int QUO_nobjs_by_type(QUO_context q, QUO_obj_type_t target_type, int *out_nobjs)
{
    NEED_CONTEXT(q);
    NEED_ARG(out_nobjs);
    const int rc = quo_topo_nobjs(q->topo, target_type, out_nobjs);
    return rc == QUO_SUCCESS ? rc : fail(rc, __func__, "object type %d", (int)target_type);
}

QUO_EXPORT int QUO_nobjs_in_type_by_type(QUO_context q, QUO_obj_type_t in_type, int in_type_index,
                                         QUO_obj_type_t type, int *out_result)
{
    NEED_CONTEXT(q);
    NEED_ARG(out_result);
    const int rc = quo_topo_nobjs_inside(q->topo, in_type, in_type_index, type, out_result);
    return rc == QUO_SUCCESS ? rc : fail(rc, __func__, "no object %d of type %d", in_type_index, (int)in_type);
}

QUO_EXPORT int QUO_cpuset_in_type(QUO_context q, QUO_obj_type_t type, int in_type_index, int *out_result)
{
    NEED_CONTEXT(q);
    NEED_ARG(out_result);
    hwloc_obj_t o = quo_topo_obj(q->topo, type, in_type_index);
    if (o == NULL) return fail(QUO_ERR_INVLD_ARG, __func__, "no object %d of type %d", in_type_index, (int)type);
    *out_result = hwloc_bitmap_isincluded(q->stack[q->depth - 1], o->cpuset);
    return QUO_SUCCESS;
}

static int qids_in_type(QUO_context q, QUO_obj_type_t type, int in_type_index, int *out_nqids, int **out_qids)
{
    NEED_CONTEXT(q);
    NEED_ARG(out_nqids);
    NEED_ARG(out_qids);
    hwloc_obj_t o = quo_topo_obj(q->topo, type, in_type_index);
    if (o == NULL) return fail(QUO_ERR_INVLD_ARG, __func__, "no object %d of type %d", in_type_index, (int)type);
    int *qids = malloc(sizeof(int) * (size_t)q->nqids);
    hwloc_bitmap_t b = hwloc_bitmap_alloc();
    if (qids == NULL || b == NULL) {
        free(qids);
        hwloc_bitmap_free(b);
        return fail(QUO_ERR_OOR, __func__, "out of memory");
    }
    int n = 0;
    for (int i = 0; i < q->nqids; i++) {
        read_binding(q, i, b);
        if (hwloc_bitmap_isincluded(b, o->cpuset)) qids[n++] = i;
    }
    hwloc_bitmap_free(b);
    if (n == 0) {
        free(qids);
        qids = NULL;
    }
    *out_nqids = n;
    *out_qids = qids;
    return QUO_SUCCESS;
}

QUO_EXPORT int QUO_qids_in_type(QUO_context q, QUO_obj_type_t type, int in_type_index, int *out_nqids,
                                int **out_qids)
{
    region_begin("QUO_qids_in_type");
    return region_end("QUO_qids_in_type", qids_in_type(q, type, in_type_index, out_nqids, out_qids));
}

QUO_EXPORT int QUO_nnumanodes(QUO_context q, int *out) { return QUO_nobjs_by_type(q, QUO_OBJ_NUMANODE, out); }
QUO_EXPORT int QUO_nsockets(QUO_context q, int *out) { return QUO_nobjs_by_type(q, QUO_OBJ_SOCKET, out); }
QUO_EXPORT int QUO_ncores(QUO_context q, int *out) { return QUO_nobjs_by_type(q, QUO_OBJ_CORE, out); }
QUO_EXPORT int QUO_npus(QUO_context q, int *out) { return QUO_nobjs_by_type(q, QUO_OBJ_PU, out); }

QUO_EXPORT int QUO_nnodes(QUO_context q, int *out_nodes)
{
    NEED_CONTEXT(q);
    NEED_ARG(out_nodes);
    *out_nodes = q->nnodes;
    return QUO_SUCCESS;
}

QUO_EXPORT int QUO_nqids(QUO_context q, int *out_nqids)
{
    NEED_CONTEXT(q);
    NEED_ARG(out_nqids);
    *out_nqids = q->nqids;
    return QUO_SUCCESS;
}

QUO_EXPORT int QUO_id(QUO_context q, int *out_qid)
{
    NEED_CONTEXT(q);
    NEED_ARG(out_qid);
    *out_qid = q->qid;
    return QUO_SUCCESS;
}

QUO_EXPORT int QUO_bound(QUO_context q, int *bound)
{
    NEED_CONTEXT(q);
    NEED_ARG(bound);
    *bound = !hwloc_bitmap_isequal(q->stack[q->depth - 1], q->widest);
    return QUO_SUCCESS;
}

QUO_EXPORT int QUO_stringify_cbind(QUO_context q, char **cbind_str)
{
    NEED_CONTEXT(q);
    NEED_ARG(cbind_str);
    if (hwloc_bitmap_asprintf(cbind_str, q->stack[q->depth - 1]) < 0) {
        *cbind_str = NULL;
        return fail(QUO_ERR_OOR, __func__, "out of memory");
    }
    return QUO_SUCCESS;
}

/* ------------------------------------------------------------------------ binding stack */
/* Make set the binding of the whole process (every thread), when the topology is this machine. */
static int apply(struct QUO_t *q, hwloc_const_cpuset_t set, const char *func)
{
    if (!q->this_system) return QUO_SUCCESS;
    if (hwloc_set_cpubind(q->topo, set, HWLOC_CPUBIND_PROCESS) != 0)
        return fail(QUO_ERR_SYS, func, "hwloc_set_cpubind: %s", strerror(errno));
    return QUO_SUCCESS;
}

static int bind_push(QUO_context q, QUO_bind_push_policy_t policy, QUO_obj_type_t type, int obj_index)
{
    const char *me = "QUO_bind_push";
    NEED_CONTEXT(q);
    if (q->depth == QUO_BIND_STACK_SIZE)
        return fail(QUO_ERR_OOR, me, "bind stack full (%d entries)", QUO_BIND_STACK_SIZE);
    hwloc_bitmap_t next = hwloc_bitmap_alloc();
    if (next == NULL) return fail(QUO_ERR_OOR, me, "out of memory");
    int rc = quo_topo_push_target(q->topo, policy, type, obj_index, q->stack[q->depth - 1], next);
    if (rc == QUO_SUCCESS) rc = apply(q, next, me);
    if (rc != QUO_SUCCESS) {
        hwloc_bitmap_free(next);
        return rc == QUO_ERR_SYS ? rc : fail(rc, me, "policy %d, type %d, index %d", (int)policy, (int)type, obj_index);
    }
    q->stack[q->depth++] = next;
    publish_binding(q);
    return QUO_SUCCESS;
}

QUO_EXPORT int QUO_bind_push(QUO_context q, QUO_bind_push_policy_t policy, QUO_obj_type_t type, int obj_index)
{
    region_begin("QUO_bind_push");
    return region_end("QUO_bind_push", bind_push(q, policy, type, obj_index));
}

static int bind_pop(QUO_context q)
{
    NEED_CONTEXT(q);
    if (q->depth == 1) return fail(QUO_ERR_POP, "QUO_bind_pop", "nothing pushed: the initial binding stays");
    const int rc = apply(q, q->stack[q->depth - 2], "QUO_bind_pop");
    if (rc != QUO_SUCCESS) return rc;
    hwloc_bitmap_free(q->stack[--q->depth]);
    q->stack[q->depth] = NULL;
    publish_binding(q);
    return QUO_SUCCESS;
}

QUO_EXPORT int QUO_bind_pop(QUO_context q)
{
    region_begin("QUO_bind_pop");
    return region_end("QUO_bind_pop", bind_pop(q));
}

/* ------------------------------------------------------------------ quiescence, distribution */
static int node_barrier(QUO_context q)
{
    const int rc = pthread_barrier_wait(&q->shm->barrier);
    if (rc != 0 && rc != PTHREAD_BARRIER_SERIAL_THREAD)
        return fail(QUO_ERR_SYS, "QUO_barrier", "pthread_barrier_wait: %s", strerror(rc));
    return QUO_SUCCESS;
}

QUO_EXPORT int QUO_barrier(QUO_context q)
{
    NEED_CONTEXT(q);
    region_begin("QUO_barrier");
    return region_end("QUO_barrier", node_barrier(q));
}

static int auto_distrib(QUO_context q, QUO_obj_type_t type, int max, int *out_selected)
{
    const char *me = "QUO_auto_distrib";
    NEED_CONTEXT(q);
    NEED_ARG(out_selected);
    hwloc_obj_type_t t;
    if (quo_topo_hwloc_type(type, &t) != QUO_SUCCESS) return fail(QUO_ERR_INVLD_ARG, me, "object type %d", (int)type);
    if (max < 0) return fail(QUO_ERR_INVLD_ARG, me, "max_qids_per_res_type %d < 0", max);
    const int nres = hwloc_get_nbobjs_by_type(q->topo, t);
    hwloc_const_cpuset_t *res = malloc(sizeof *res * (size_t)(nres > 0 ? nres : 1));
    hwloc_bitmap_t *task = calloc((size_t)q->nqids, sizeof *task);
    int rc = res && task ? QUO_SUCCESS : fail(QUO_ERR_OOR, me, "out of memory");
    for (int r = 0; rc == QUO_SUCCESS && r < nres; r++) res[r] = hwloc_get_obj_by_type(q->topo, t, (unsigned)r)->cpuset;
    for (int i = 0; rc == QUO_SUCCESS && i < q->nqids; i++)
        if ((task[i] = hwloc_bitmap_alloc()) == NULL) rc = fail(QUO_ERR_OOR, me, "out of memory");
    /* The barriers come even after a local failure, or the peers would wait forever. The first
     * makes every peer's published binding final (no push or pop in flight); the second keeps
     * anyone from pushing again while a slower peer still reads. */
    const int brc = node_barrier(q);
    if (rc == QUO_SUCCESS) rc = brc;
    if (rc == QUO_SUCCESS) {
        for (int i = 0; i < q->nqids; i++) read_binding(q, i, task[i]);
        rc = quo_distrib_select(nres, res, q->nqids, (const hwloc_const_cpuset_t *)task, q->qid, max, out_selected);
    }
    const int brc2 = node_barrier(q);
    if (rc == QUO_SUCCESS) rc = brc2;
    for (int i = 0; task && i < q->nqids; i++) hwloc_bitmap_free(task[i]);
    free(task);
    free((void *)res);
    return rc;
}

QUO_EXPORT int QUO_auto_distrib(QUO_context q, QUO_obj_type_t distrib_over_this, int max_qids_per_res_type,
                                int *out_selected)
{
    region_begin("QUO_auto_distrib");
    return region_end("QUO_auto_distrib", auto_distrib(q, distrib_over_this, max_qids_per_res_type, out_selected));
}

QUO_EXPORT int QUO_get_mpi_comm_by_type(QUO_context q, QUO_obj_type_t target_type, MPI_Comm *out_comm)
{
    NEED_CONTEXT(q);
    NEED_ARG(out_comm);
    if (target_type != QUO_OBJ_MACHINE)
        return fail(QUO_ERR_NOT_SUPPORTED, __func__, "only QUO_OBJ_MACHINE is supported (as in libquo)");
    region_begin("QUO_get_mpi_comm_by_type");
    int rc = QUO_SUCCESS;
    if (MPI_Comm_dup(q->node_comm, out_comm) != MPI_SUCCESS) rc = fail(QUO_ERR_MPI, __func__, "MPI_Comm_dup failed");
    return region_end("QUO_get_mpi_comm_by_type", rc);
}

QUO_EXPORT int QUO_ptr_free(void *p)
{
    free(p);
    return QUO_SUCCESS;
}

/* ------------------------------------------------------------ Fortran shims (module quo) */
QUO_EXPORT int QUO_create_f2c(QUO_context *q, MPI_Fint comm) { return QUO_create(q, MPI_Comm_f2c(comm)); }

QUO_EXPORT int QUO_create_with_flags_f2c(QUO_context *q, MPI_Fint comm, int flags)
{
    return QUO_create_with_flags(q, MPI_Comm_f2c(comm), (QUO_create_flags_t)flags);
}

QUO_EXPORT int QUO_get_mpi_comm_by_type_f2c(QUO_context q, int target_type, MPI_Fint *out_comm)
{
    MPI_Comm c = MPI_COMM_NULL;
    const int rc = QUO_get_mpi_comm_by_type(q, (QUO_obj_type_t)target_type, &c);
    if (out_comm) *out_comm = MPI_Comm_c2f(c);
    return rc;
}
