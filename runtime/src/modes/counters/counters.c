/* Counters mode: SPC-style low-level software counters observed at the PMPI layer.
 *
 * After the Software-based Performance Counters Eberius built into Open MPI (seeds/000), but from
 * outside the library, so on any MPI. Counter types follow the seed: regular counters, timers (raw
 * ticks), watermarks (high and, beyond the seed, low) paired with a sentinel, bin counters (a total
 * and bins chosen by rules) and collective bins (message size x communicator size). Names follow
 * the seed's OMPI_SPC_* enum without the prefix where the meaning matches.
 *
 * Where the data lives:
 *  - every thread owns a vector of int64 counters (ml_thread.spc), written only by that thread
 *    with relaxed loads and stores (plain instructions, no lock prefix), so the hot path has no
 *    atomics; per-peer and per-communicator counters sit beside it (struct ml_spc_thread);
 *  - a background thread wakes every MPILENS_SNAPSHOT_MS, sums the vectors of all threads, adds
 *    the MPI's own MPI_T pvars, publishes the sums in the rank's live file (one contiguous buffer
 *    mapped to live/rank-NNNNNN.spc, guarded by a sequence number) and appends the deltas to the
 *    rank's time series counters/rank-NNNNNN.bin;
 *  - at MPI_Finalize a last snapshot is taken and counters/rank-NNNNNN.json holds the totals, the
 *    per-peer and per-communicator counters; rank 0 writes counters/layout.json (names, types,
 *    offsets, bin rules, tick rate, eager limit and pvars found or absent).
 *
 * The layout of the vector is decided at MPI_Init (it depends on the MPI's function ids and on
 * the pvars it has) and is the same on every rank. */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json.h"
#include "ml.h"
#include "ml_files.h"
#include "ml_counters.h"

unsigned ml_spc_on;

/* ------------------------------------------------------------------------------- layout */
enum spc_type { T_REGULAR, T_TIMER, T_HIGH_WM, T_LOW_WM, T_LEVEL, T_BIN, T_COLL_BIN, T_PVAR_COUNTER, T_PVAR_LEVEL };
static const char *const type_name[] = {"regular", "timer", "high_watermark", "low_watermark", "level",
                                        "bin", "collective_bin", "pvar_counter", "pvar_level"};

/* the fixed counters, first in the vector */
enum {
    S_BYTES_SENT_USER, S_BYTES_RECEIVED_USER, S_BYTES_SENT_MPI, S_BYTES_RECEIVED_MPI, S_BYTES_PUT, S_BYTES_GET,
    S_MESSAGES_SENT_USER, S_MESSAGES_RECEIVED_USER, S_EAGER, S_NOT_EAGER, S_UNEXPECTED, S_UNEXPECTED_PROBES,
    S_POSTED_RECVQ, S_MAX_POSTED_RECVQ, S_MIN_POSTED_RECVQ, S_RECVS_POSTED, S_RECVS_COMPLETED, S_RECV_POST_TIME,
    S_MPI_CALLS, S_COLLECTIVE_CALLS, S_NFIXED
};

static const struct fixed {
    const char *name;
    int type;
    unsigned group;
    const char *seed; /* the seed's counter of the same meaning, or NULL */
    const char *desc;
} fixed[S_NFIXED] = {
    {"BYTES_SENT_USER", T_REGULAR, ML_SPC_BYTES, "OMPI_SPC_BYTES_SENT_USER", "bytes sent by the user through point-to-point calls"},
    {"BYTES_RECEIVED_USER", T_REGULAR, ML_SPC_BYTES, "OMPI_SPC_BYTES_RECEIVED_USER", "bytes received by the user through point-to-point calls"},
    {"BYTES_SENT_MPI", T_REGULAR, ML_SPC_BYTES, "OMPI_SPC_BYTES_SENT_MPI", "bytes this process contributes to collectives (buffer view)"},
    {"BYTES_RECEIVED_MPI", T_REGULAR, ML_SPC_BYTES, "OMPI_SPC_BYTES_RECEIVED_MPI", "bytes this process receives from collectives (buffer view)"},
    {"BYTES_PUT", T_REGULAR, ML_SPC_BYTES, "OMPI_SPC_BYTES_PUT", "bytes put by RMA calls of this process"},
    {"BYTES_GET", T_REGULAR, ML_SPC_BYTES, "OMPI_SPC_BYTES_GET", "bytes got by RMA calls of this process"},
    {"MESSAGES_SENT_USER", T_REGULAR, ML_SPC_BYTES, NULL, "point-to-point messages sent"},
    {"MESSAGES_RECEIVED_USER", T_REGULAR, ML_SPC_BYTES, NULL, "point-to-point messages received"},
    {"EAGER_MESSAGES", T_REGULAR, ML_SPC_EAGER, NULL, "point-to-point sends at or below the eager limit of the MPI"},
    {"NOT_EAGER_MESSAGES", T_REGULAR, ML_SPC_EAGER, NULL, "point-to-point sends above the eager limit of the MPI"},
    {"UNEXPECTED", T_REGULAR, ML_SPC_UNEXPECTED, "OMPI_SPC_UNEXPECTED", "receives posted when a matching message had already arrived (MPI_Iprobe at post)"},
    {"UNEXPECTED_PROBES", T_REGULAR, ML_SPC_UNEXPECTED, NULL, "MPI_Iprobe calls made to detect unexpected messages"},
    {"POSTED_RECVQ", T_LEVEL, ML_SPC_QUEUE, NULL, "nonblocking receives posted and not yet completed (sentinel of the watermarks)"},
    {"MAX_POSTED_RECVQ", T_HIGH_WM, ML_SPC_QUEUE, NULL, "high watermark of POSTED_RECVQ (run in totals, interval in snapshots)"},
    {"MIN_POSTED_RECVQ", T_LOW_WM, ML_SPC_QUEUE, NULL, "low watermark of POSTED_RECVQ (run in totals, interval in snapshots)"},
    {"RECVS_POSTED", T_REGULAR, ML_SPC_QUEUE, NULL, "nonblocking receives posted"},
    {"RECVS_COMPLETED", T_REGULAR, ML_SPC_QUEUE, NULL, "nonblocking receives completed"},
    {"RECV_POST_TO_COMPLETE_TIME", T_TIMER, ML_SPC_QUEUE, NULL, "time from posting a nonblocking receive to its completion (ticks)"},
    {"MPI_CALLS", T_REGULAR, ML_SPC_CALLS, NULL, "MPI calls of all functions"},
    {"COLLECTIVE_CALLS", T_REGULAR, ML_SPC_COLLS, NULL, "collective calls (blocking, nonblocking and persistent)"},
};

#define MAX_BINS 16
#define MAX_PVARS 32

static struct {
    int nbins;                 /* p2p size bins (rules + 1) */
    int64_t rules[MAX_BINS];   /* upper bounds of the first nbins-1 bins */
    size_t off_bins;           /* P2P_MESSAGE_SIZE total, then its bins */
    size_t off_calls;          /* one per function id */
    size_t off_coll;           /* COLL_<NAME>: total + 4 bins, for collective functions */
    int ncoll;
    int coll_of_fn[ML_NFUNC];  /* index of the function's collective bin counter, or -1 */
    size_t nv_thread;          /* counters the threads write */
    size_t nv;                 /* + pvars */
    int64_t coll_msg, coll_comm;
    /* eager limit per world rank (by locality), -1: not known */
    int64_t *eager;
    char eager_src_shm[128], eager_src_net[128], pml[80];
    int64_t eager_shm, eager_net;
    /* MPI_T */
    int mpit_ok, mpit_threaded, session_ok;
    MPI_T_pvar_session session;
    int npvars;
    struct pvar {
        char name[96];
        int cls, count, bind;
        MPI_Datatype type;
        MPI_T_pvar_handle handle;
        int64_t last;
    } pvars[MAX_PVARS];
    int nabsent;
    char absent[MAX_PVARS][96];
    char absent_why[MAX_PVARS][64];
    /* files */
    char livedir[4200];
    int live_fd;
    unsigned char *live;      /* header + nv values */
    size_t live_len;
    FILE *series;
    uint64_t nrec;
    int64_t *cur, *prev;
    int64_t *row; /* one snapshot's values in the time series, made before its check */
    double ticks_per_ns;
    /* the snapshot thread */
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    int stop, running;
    uint64_t epoch;            /* interval number: watermarks of the current interval */
    uint64_t snap_ns_total;    /* time spent taking snapshots */
} S = {.lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER, .live_fd = -1};

/* what a thread keeps besides its vector */
#define COMM_SLOTS 64
struct ml_spc_thread {
    uint64_t epoch;            /* interval its hi/lo belong to */
    int64_t hi, lo;
    int64_t *peers;            /* [4][world size]: bytes sent, messages sent, bytes received, messages received */
    struct spc_comm {          /* keyed by the communicator's uid: a freed handle reused by MPI
                                * for another communicator gets its own slot */
        uint64_t uid;          /* 0: free */
        int size, is_inter;
        int64_t calls, p2p_sent, p2p_recv, p2p_msgs, coll_sent, coll_recv;
    } comms[COMM_SLOTS];
    int64_t comm_overflow;
};

/* the owner's update: a plain load and store (no lock prefix); readers load with relaxed atomics */
#define ADD(p, v) __atomic_store_n(&(p), __atomic_load_n(&(p), __ATOMIC_RELAXED) + (v), __ATOMIC_RELAXED)
#define PUT(p, v) __atomic_store_n(&(p), (v), __ATOMIC_RELAXED)
#define GET(p) __atomic_load_n(&(p), __ATOMIC_RELAXED)

/* ------------------------------------------------------------------------------- hot path */
/* The thread's counters of communicator c, added on first use (NULL when the table is full). */
static inline struct spc_comm *comm_slot(ml_thread_t *t, const ml_comm_t *c)
{
    if (c == NULL) return NULL;
    const uint64_t uid = c->uid ? c->uid : 1; /* 0 marks a free slot */
    struct ml_spc_thread *x = t->spcx;
    const uint32_t h = (uint32_t)(ml_hash(uid) >> 58);
    for (uint32_t i = 0; i < COMM_SLOTS; i++) {
        struct spc_comm *s = &x->comms[(h + i) & (COMM_SLOTS - 1)];
        if (s->uid == uid) return s;
        if (s->uid == 0) {
            s->size = c->is_inter ? c->remote_size : c->size;
            s->is_inter = c->is_inter;
            __atomic_store_n(&s->uid, uid, __ATOMIC_RELEASE);
            return s;
        }
    }
    ADD(x->comm_overflow, 1);
    return NULL;
}

static inline void send_side(ml_thread_t *t, int world_peer, int64_t bytes)
{
    int64_t *v = t->spc;
    if (ml_spc_on & ML_SPC_BYTES) {
        ADD(v[S_BYTES_SENT_USER], bytes);
        ADD(v[S_MESSAGES_SENT_USER], 1);
    }
    if (ml_spc_on & ML_SPC_SIZES) {
        int b = 0;
        while (b < S.nbins - 1 && bytes > S.rules[b]) b++;
        ADD(v[S.off_bins], 1);
        ADD(v[S.off_bins + 1 + (size_t)b], 1);
    }
    if ((ml_spc_on & ML_SPC_EAGER) && world_peer >= 0) {
        const int64_t lim = S.eager[world_peer];
        if (lim >= 0) ADD(v[bytes <= lim ? S_EAGER : S_NOT_EAGER], 1);
    }
    if ((ml_spc_on & ML_SPC_PEERS) && world_peer >= 0) {
        int64_t *p = t->spcx->peers;
        ADD(p[world_peer], bytes);
        ADD(p[(size_t)ml_g.size + (size_t)world_peer], 1);
    }
}

static inline void recv_side(ml_thread_t *t, int world_peer, int64_t bytes)
{
    int64_t *v = t->spc;
    if (ml_spc_on & ML_SPC_BYTES) {
        ADD(v[S_BYTES_RECEIVED_USER], bytes);
        ADD(v[S_MESSAGES_RECEIVED_USER], 1);
    }
    if ((ml_spc_on & ML_SPC_PEERS) && world_peer >= 0) {
        int64_t *p = t->spcx->peers;
        ADD(p[2 * (size_t)ml_g.size + (size_t)world_peer], bytes);
        ADD(p[3 * (size_t)ml_g.size + (size_t)world_peer], 1);
    }
}

/* c: the communicator's facts, or NULL with world_size > 0 for MPI_COMM_WORLD */
static inline void collective(ml_thread_t *t, int fn, const ml_comm_t *c, int world_size, int64_t sent, int64_t recv)
{
    int64_t *v = t->spc;
    if (ml_spc_on & ML_SPC_BYTES) {
        ADD(v[S_BYTES_SENT_MPI], sent);
        ADD(v[S_BYTES_RECEIVED_MPI], recv);
    }
    if (ml_spc_on & ML_SPC_COLLS) {
        ADD(v[S_COLLECTIVE_CALLS], 1);
        const int k = S.coll_of_fn[fn];
        if (k >= 0 && (c != NULL || world_size > 0)) {
            const int64_t msg = sent > recv ? sent : recv;
            const int n = c == NULL ? world_size : c->is_inter ? c->remote_size : c->size;
            const size_t o = S.off_coll + (size_t)k * 5;
            ADD(v[o], 1);
            ADD(v[o + 1 + (size_t)((msg > S.coll_msg) * 2 + (n > S.coll_comm))], 1);
        }
    }
}

void ml_spc_leave(ml_thread_t *t, int fn)
{
    if (ml_spc_on & ML_SPC_CALLS) {
        ADD(t->spc[S_MPI_CALLS], 1);
        ADD(t->spc[S.off_calls + (size_t)fn], 1);
    }
}

void ml_spc_call(ml_thread_t *t, const ml_call_t *c)
{
    const int fn = c->fn;
    const unsigned flow = ml_fn_flow[fn];
    const int cls = ml_fn_class[fn];
    if ((ml_spc_on & ML_SPC_COMMS) && c->comm != MPI_COMM_NULL && (cls == ML_CLASS_P2P || cls == ML_CLASS_COLLECTIVE)) {
        struct spc_comm *s = comm_slot(t, ml_comm_get(c->comm));
        if (s != NULL) {
            ADD(s->calls, 1);
            if (!(flow & (ML_FLOW_NONBLOCKING | ML_FLOW_PERSISTENT))) {
                if (cls == ML_CLASS_P2P) {
                    ADD(s->p2p_sent, c->sent);
                    ADD(s->p2p_recv, c->recv);
                    if ((flow & ML_FLOW_SEND) && c->dst != MPI_PROC_NULL) ADD(s->p2p_msgs, 1);
                } else {
                    ADD(s->coll_sent, c->sent);
                    ADD(s->coll_recv, c->recv);
                }
            }
        }
    }
    if (flow & (ML_FLOW_NONBLOCKING | ML_FLOW_PERSISTENT)) return; /* data is counted at completion */
    if (cls == ML_CLASS_P2P) {
        if ((flow & ML_FLOW_SEND) && c->dst != MPI_PROC_NULL) send_side(t, ml_world_rank(c->comm, c->dst), c->sent);
        if (flow & ML_FLOW_RECV) {
            const MPI_Status *st = c->status;
            if (st == NULL || st->MPI_SOURCE != MPI_PROC_NULL)
                recv_side(t, st ? ml_world_rank(c->comm, st->MPI_SOURCE) : -1, c->recv);
        }
    } else if (cls == ML_CLASS_COLLECTIVE) {
        const int world = c->comm == MPI_COMM_WORLD;
        collective(t, fn, (ml_spc_on & ML_SPC_COLLS) && !world ? ml_comm_get(c->comm) : NULL, world ? ml_g.size : 0,
                   c->sent, c->recv);
    } else if (cls == ML_CLASS_RMA && (ml_spc_on & ML_SPC_BYTES)) {
        ADD(t->spc[S_BYTES_PUT], c->sent);
        ADD(t->spc[S_BYTES_GET], c->recv);
    }
}

static inline int is_posted_recv(int fn)
{
    return fn == ML_FN_MPI_Irecv || fn == ML_FN_MPI_Recv_init;
}

static inline void queue_move(ml_thread_t *t, int64_t d)
{
    int64_t *v = t->spc;
    const int64_t q = GET(v[S_POSTED_RECVQ]) + d;
    PUT(v[S_POSTED_RECVQ], q);
    if (q > GET(v[S_MAX_POSTED_RECVQ])) PUT(v[S_MAX_POSTED_RECVQ], q);
    if (q < GET(v[S_MIN_POSTED_RECVQ])) PUT(v[S_MIN_POSTED_RECVQ], q);
    struct ml_spc_thread *x = t->spcx;
    const uint64_t e = __atomic_load_n(&S.epoch, __ATOMIC_RELAXED);
    if (GET(x->epoch) != e) { /* first change of this interval: it starts at the level before it */
        PUT(x->hi, q - d);
        PUT(x->lo, q - d);
        PUT(x->epoch, e);
    }
    if (q > GET(x->hi)) PUT(x->hi, q);
    if (q < GET(x->lo)) PUT(x->lo, q);
}

void ml_spc_posted(ml_thread_t *t, ml_req_t *e)
{
    if (!(ml_spc_on & ML_SPC_QUEUE) || !is_posted_recv(e->fn) || t->spc == NULL) return;
    e->t_post = ml_now(); /* in the word of its bytes sent, none for a receive (ml.h) */
    e->flags |= ML_REQ_POSTED_AT;
    ADD(t->spc[S_RECVS_POSTED], 1);
    queue_move(t, 1);
}

void ml_spc_done(ml_thread_t *t, const ml_req_t *e, const MPI_Status *st, int64_t sent, int64_t recv)
{
    const int fn = e->fn;
    if (!ml_spc_on || t->spc == NULL) return;
    if (e->flags & ML_REQ_POSTED_AT) { /* ml_spc_posted entered it in the queue */
        const uint64_t now = t->done_at > e->t_post ? t->done_at : ml_now();
        ADD(t->spc[S_RECVS_COMPLETED], 1);
        ADD(t->spc[S_RECV_POST_TIME], (int64_t)(now - e->t_post));
        queue_move(t, -1);
    }
    if (sent < 0) return; /* nothing moved (cancelled, or not measuring) */
    const int cls = ml_fn_class[fn];
    const unsigned flow = ml_fn_flow[fn];
    if (cls == ML_CLASS_P2P) {
        if ((flow & ML_FLOW_SEND) && e->peer >= 0) send_side(t, e->peer, sent);
        if ((flow & ML_FLOW_RECV) && (st == NULL || st->MPI_SOURCE != MPI_PROC_NULL)) {
            int src = -1;
            if (st != NULL && (e->flags & ML_REQ_WORLD) && st->MPI_SOURCE >= 0 && st->MPI_SOURCE < ml_g.size) {
                src = st->MPI_SOURCE;
            } else if (st != NULL && e->comm != NULL && st->MPI_SOURCE >= 0) {
                const int n = e->comm->is_inter ? e->comm->remote_size : e->comm->size;
                if (e->comm->world && st->MPI_SOURCE < n) src = e->comm->world[st->MPI_SOURCE];
            }
            recv_side(t, src, recv);
        }
        struct spc_comm *s = (ml_spc_on & ML_SPC_COMMS) ? comm_slot(t, e->comm) : NULL;
        if (s != NULL) { /* the completing thread's table: the operation may have started on another */
            ADD(s->p2p_sent, sent);
            ADD(s->p2p_recv, recv);
            if (flow & ML_FLOW_SEND) ADD(s->p2p_msgs, 1);
        }
    } else if (cls == ML_CLASS_COLLECTIVE) {
        collective(t, fn, e->comm, (e->flags & ML_REQ_WORLD) ? ml_g.size : 0, sent, recv);
        struct spc_comm *s = (ml_spc_on & ML_SPC_COMMS) ? comm_slot(t, e->comm) : NULL;
        if (s != NULL) {
            ADD(s->coll_sent, sent);
            ADD(s->coll_recv, recv);
        }
    } else if (cls == ML_CLASS_RMA && (ml_spc_on & ML_SPC_BYTES)) {
        ADD(t->spc[S_BYTES_PUT], sent);
        ADD(t->spc[S_BYTES_GET], recv);
    }
}

void ml_spc_probe(ml_thread_t *t, int source, int tag, MPI_Comm comm)
{
    if (source == MPI_PROC_NULL || t->spc == NULL) return; /* t->spc: NULL when its mapping failed */
    int flag = 0;
    ADD(t->spc[S_UNEXPECTED_PROBES], 1);
    if (PMPI_Iprobe(source, tag, comm, &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS && flag) ADD(t->spc[S_UNEXPECTED], 1);
}

/* ------------------------------------------------------------------------------- threads */
void ml_spc_thread(ml_thread_t *t)
{
    if (!ml_spc_on) return;
    const size_t peers = 4 * (size_t)ml_g.size * sizeof(int64_t);
    const size_t bytes = S.nv_thread * sizeof(int64_t) + sizeof(struct ml_spc_thread) + peers;
    char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        t->observe &= ~ML_OBS_COUNTERS; /* this thread is not counted; the others are */
        return;
    }
    struct ml_spc_thread *x = (struct ml_spc_thread *)(p + S.nv_thread * sizeof(int64_t));
    x->peers = (int64_t *)(x + 1);
    x->epoch = __atomic_load_n(&S.epoch, __ATOMIC_RELAXED);
    t->spcx = x;
    __atomic_store_n(&t->spc, (int64_t *)p, __ATOMIC_RELEASE);
}

/* ------------------------------------------------------------------------------- MPI_T */
/* The index of a cvar by name: MPI_T_cvar_get_index, else a scan of the names (Open MPI 4.1's
 * get_index misses variables such as btl_vader_eager_limit that get_info lists). */
static int cvar_find(const char *name, int *idx)
{
    if (PMPI_T_cvar_get_index(name, idx) == MPI_SUCCESS) return 0;
    int n = 0;
    if (PMPI_T_cvar_get_num(&n) != MPI_SUCCESS) return -1;
    for (int i = 0; i < n; i++) {
        char nm[256], desc[8];
        int nl = sizeof nm, dl = sizeof desc, verb, bind, scope;
        MPI_Datatype dt;
        MPI_T_enum en;
        if (PMPI_T_cvar_get_info(i, nm, &nl, &verb, &dt, &en, desc, &dl, &bind, &scope) == MPI_SUCCESS &&
            strcmp(nm, name) == 0) {
            *idx = i;
            return 0;
        }
    }
    return -1;
}

/* The same for a pvar, by name and class. */
static int pvar_find(const char *name, int cls, int *idx)
{
    if (PMPI_T_pvar_get_index(name, cls, idx) == MPI_SUCCESS) return 0;
    int n = 0;
    if (PMPI_T_pvar_get_num(&n) != MPI_SUCCESS) return -1;
    for (int i = 0; i < n; i++) {
        char nm[256], desc[8];
        int nl = sizeof nm, dl = sizeof desc, verb, c, bind, ro, cont, atomic;
        MPI_Datatype dt;
        MPI_T_enum en;
        if (PMPI_T_pvar_get_info(i, nm, &nl, &verb, &c, &dt, &en, desc, &dl, &bind, &ro, &cont, &atomic) == MPI_SUCCESS &&
            c == cls && strcmp(nm, name) == 0) {
            *idx = i;
            return 0;
        }
    }
    return -1;
}

static int read_cvar_int(const char *name, int64_t *out)
{
    int idx;
    if (cvar_find(name, &idx) != 0) return -1;
    char nm[256], desc[8];
    int nl = sizeof nm, dl = sizeof desc, verb, bind, scope;
    MPI_Datatype dt;
    MPI_T_enum en;
    if (PMPI_T_cvar_get_info(idx, nm, &nl, &verb, &dt, &en, desc, &dl, &bind, &scope) != MPI_SUCCESS) return -1;
    if (bind != MPI_T_BIND_NO_OBJECT) return -1;
    MPI_T_cvar_handle h;
    int count = 0;
    if (PMPI_T_cvar_handle_alloc(idx, NULL, &h, &count) != MPI_SUCCESS) return -1;
    union { int i; unsigned u; long l; unsigned long ul; long long ll; unsigned long long ull; char pad[64]; } v;
    memset(&v, 0, sizeof v);
    int rc = count == 1 ? PMPI_T_cvar_read(h, &v) : -1;
    PMPI_T_cvar_handle_free(&h);
    if (rc != MPI_SUCCESS) return -1;
    if (dt == MPI_INT) *out = v.i;
    else if (dt == MPI_UNSIGNED) *out = v.u;
    else if (dt == MPI_LONG) *out = v.l;
    else if (dt == MPI_UNSIGNED_LONG) *out = (int64_t)v.ul;
    else if (dt == MPI_LONG_LONG || dt == MPI_LONG_LONG_INT) *out = v.ll;
    else if (dt == MPI_UNSIGNED_LONG_LONG) *out = (int64_t)v.ull;
    else return -1;
    return 0;
}

/* Open MPI: the name of the selected PML, read from libmpi's selected component
 * (mca_base_component_t of MCA 2.1: 3 ints, project name[16], 3 ints, type name[32], 3 ints,
 * component name[64]); checked: the project must read "ompi" and the type "pml". */
#if defined(OPEN_MPI)
static void open_mpi_pml(char *out, size_t n)
{
    snprintf(out, n, "unknown");
    const char *p = dlsym(RTLD_DEFAULT, "mca_pml_base_selected_component");
    if (p != NULL && strncmp(p + 12, "ompi", 5) == 0 && strncmp(p + 40, "pml", 4) == 0)
        snprintf(out, n, "%.*s", 63, p + 84);
}
#endif

static void eager_limits(void)
{
    S.eager_shm = S.eager_net = -1;
#if defined(OPEN_MPI)
    open_mpi_pml(S.pml, sizeof S.pml);
    if (strcmp(S.pml, "ob1") == 0) {
        static const char *const shm[] = {"btl_vader_eager_limit", "btl_sm_eager_limit"};
        for (size_t i = 0; i < 2 && S.eager_shm < 0; i++)
            if (read_cvar_int(shm[i], &S.eager_shm) == 0) snprintf(S.eager_src_shm, sizeof S.eager_src_shm, "%s", shm[i]);
        if (read_cvar_int("btl_tcp_eager_limit", &S.eager_net) == 0)
            snprintf(S.eager_src_net, sizeof S.eager_src_net, "btl_tcp_eager_limit");
    }
#elif defined(MPICH) || ML_STANDARD_ABI /* the standard ABI's libraries today: MPICH's and Intel MPI's */
    snprintf(S.pml, sizeof S.pml, "%s", "ch4");
    int64_t v;
    if (read_cvar_int("MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_CELL_SIZE", &v) == 0 && v > 0) {
        S.eager_shm = v;
        snprintf(S.eager_src_shm, sizeof S.eager_src_shm, "MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_CELL_SIZE");
    } else if (read_cvar_int("MPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE", &v) == 0 && v > 0) {
        S.eager_shm = S.eager_net = v;
        snprintf(S.eager_src_shm, sizeof S.eager_src_shm, "MPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE");
        snprintf(S.eager_src_net, sizeof S.eager_src_net, "MPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE");
    }
#endif
    /* which peers share this node */
    S.eager = malloc((size_t)ml_g.size * sizeof *S.eager);
    int *node = malloc((size_t)ml_g.size * sizeof *node);
    MPI_Comm local;
    int lrank0 = ml_g.rank, me;
    PMPI_Comm_split_type(ml_g.comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
    PMPI_Allreduce(&lrank0, &me, 1, MPI_INT, MPI_MIN, local); /* node id: its lowest world rank */
    PMPI_Comm_free(&local);
    PMPI_Allgather(&me, 1, MPI_INT, node, 1, MPI_INT, ml_g.comm);
    for (int r = 0; r < ml_g.size; r++) S.eager[r] = node[r] == me ? S.eager_shm : S.eager_net;
    S.eager[ml_g.rank] = -1; /* to itself: Open MPI's self BTL, not measured */
    free(node);
}

static const struct wanted {
    const char *name;
    int cls;
    int ob1; /* needs the ob1 PML (its callbacks read ob1's own structures) */
} wanted[] = {
#if defined(OPEN_MPI)
    {"pml_ob1_unexpected_msgq_length", MPI_T_PVAR_CLASS_SIZE, 1},
    {"pml_ob1_posted_recvq_length", MPI_T_PVAR_CLASS_SIZE, 1},
    {"runtime_spc_OMPI_SPC_UNEXPECTED", MPI_T_PVAR_CLASS_SIZE, 0},
    {"runtime_spc_OMPI_SPC_UNEXPECTED_IN_QUEUE", MPI_T_PVAR_CLASS_SIZE, 0},
    {"runtime_spc_OMPI_SPC_OUT_OF_SEQUENCE", MPI_T_PVAR_CLASS_SIZE, 0},
    {"runtime_spc_OMPI_SPC_BYTES_SENT_USER", MPI_T_PVAR_CLASS_SIZE, 0},
    {"runtime_spc_OMPI_SPC_BYTES_RECEIVED_USER", MPI_T_PVAR_CLASS_SIZE, 0},
    {"runtime_spc_OMPI_SPC_BYTES_SENT_MPI", MPI_T_PVAR_CLASS_SIZE, 0},
    {"runtime_spc_OMPI_SPC_BYTES_RECEIVED_MPI", MPI_T_PVAR_CLASS_SIZE, 0},
#elif defined(MPICH) || ML_STANDARD_ABI
    {"unexpected_recvq_length", MPI_T_PVAR_CLASS_LEVEL, 0},
    {"posted_recvq_length", MPI_T_PVAR_CLASS_LEVEL, 0},
    {"unexpected_recvq_match_attempts", MPI_T_PVAR_CLASS_COUNTER, 0},
    {"posted_recvq_match_attempts", MPI_T_PVAR_CLASS_COUNTER, 0},
    {"unexpected_recvq_buffer_size", MPI_T_PVAR_CLASS_LEVEL, 0},
#endif
    {NULL, 0, 0},
};

static void absent(const char *name, const char *why)
{
    if (S.nabsent >= MAX_PVARS) return;
    snprintf(S.absent[S.nabsent], sizeof S.absent[0], "%s", name);
    snprintf(S.absent_why[S.nabsent], sizeof S.absent_why[0], "%s", why);
    S.nabsent++;
}

static int is_int_type(MPI_Datatype dt)
{
    return dt == MPI_INT || dt == MPI_UNSIGNED || dt == MPI_LONG || dt == MPI_UNSIGNED_LONG ||
           dt == MPI_LONG_LONG || dt == MPI_UNSIGNED_LONG_LONG || dt == MPI_COUNT;
}

static void pvars_open(void)
{
    if (!(ml_spc_on & ML_SPC_PVARS)) return;
    if (PMPI_T_pvar_session_create(&S.session) != MPI_SUCCESS) return;
    S.session_ok = 1;
    for (const struct wanted *w = wanted; w->name != NULL; w++) {
        int idx;
        if (pvar_find(w->name, w->cls, &idx) != 0) {
            absent(w->name, "not exposed by this MPI build");
            continue;
        }
        if (w->ob1 && strcmp(S.pml, "ob1") != 0) {
            absent(w->name, "the ob1 PML is not in use");
            continue;
        }
        char nm[256], desc[8];
        int nl = sizeof nm, dl = sizeof desc, verb, cls, bind, ro, cont, atomic;
        MPI_Datatype dt;
        MPI_T_enum en;
        if (PMPI_T_pvar_get_info(idx, nm, &nl, &verb, &cls, &dt, &en, desc, &dl, &bind, &ro, &cont, &atomic) != MPI_SUCCESS ||
            !is_int_type(dt) || (bind != MPI_T_BIND_NO_OBJECT && bind != MPI_T_BIND_MPI_COMM) || S.npvars >= MAX_PVARS) {
            absent(w->name, "not readable as integers");
            continue;
        }
        struct pvar *p = &S.pvars[S.npvars];
        MPI_Comm world = ml_g.world;
        if (PMPI_T_pvar_handle_alloc(S.session, idx, bind == MPI_T_BIND_MPI_COMM ? (void *)&world : NULL, &p->handle,
                                     &p->count) != MPI_SUCCESS || p->count < 1 || p->count > 1 << 20) {
            absent(w->name, "handle allocation failed");
            continue;
        }
        if (!cont) PMPI_T_pvar_start(S.session, p->handle);
        snprintf(p->name, sizeof p->name, "%s", w->name);
        p->cls = cls;
        p->bind = bind;
        p->type = dt;
        S.npvars++;
    }
}

/* the sum of a pvar's elements (one per peer for ob1's queue lengths), or -1 */
static int64_t pvar_read(struct pvar *p)
{
    unsigned long long buf[64];
    void *b = p->count <= 8 ? (void *)buf : malloc((size_t)p->count * 8);
    if (b == NULL) return -1;
    int64_t sum = -1;
    if (PMPI_T_pvar_read(S.session, p->handle, b) == MPI_SUCCESS) {
        sum = 0;
        for (int i = 0; i < p->count; i++) {
            if (p->type == MPI_INT) sum += ((int *)b)[i];
            else if (p->type == MPI_UNSIGNED) sum += ((unsigned *)b)[i];
            else if (p->type == MPI_LONG) sum += ((long *)b)[i];
            else if (p->type == MPI_UNSIGNED_LONG) sum += (int64_t)((unsigned long *)b)[i];
            else if (p->type == MPI_COUNT) sum += (int64_t)((MPI_Count *)b)[i];
            else sum += (int64_t)((unsigned long long *)b)[i];
        }
    }
    if (b != (void *)buf) free(b);
    return sum;
}

/* ------------------------------------------------------------------------------- snapshots */
/* The live file (an ml_spc_live_header_t, then the values) and the time series (an
 * ml_spc_series_header_t, then per snapshot an ml_spc_series_record_t and the values) are laid out
 * in runtime/spec/rundir.yaml (files counters_live and counters_series). */
#define LIVE_HDR sizeof(ml_spc_live_header_t)
typedef ml_spc_live_header_t live_hdr_t;
typedef ml_spc_series_header_t series_hdr_t;
#define SERIES_VERSION 2 /* its records carry a check */

static double rate_now(void)
{
    if (!ml_clock_is_tsc) return 1.0;
    uint64_t t, n;
    ml_clock_point(&t, &n); /* both clocks read together, as at MPI_Init's end */
    if (n <= ml_g.ns_init_end + 1000000u) return S.ticks_per_ns;
    return (double)(t - ml_g.t_init_end) / (double)(n - ml_g.ns_init_end);
}

/* Sum the threads into S.cur (run-wide watermarks); ivl gets the interval watermarks. */
static void gather(int64_t ivl[2])
{
    memset(S.cur, 0, S.nv * sizeof *S.cur);
    const uint64_t e = __atomic_load_n(&S.epoch, __ATOMIC_RELAXED);
    ivl[0] = ivl[1] = 0;
    for (ml_thread_t *t = __atomic_load_n(&ml_g.threads, __ATOMIC_ACQUIRE); t; t = t->next) {
        int64_t *v = __atomic_load_n(&t->spc, __ATOMIC_ACQUIRE);
        if (v == NULL) continue;
        for (size_t i = 0; i < S.nv_thread; i++) S.cur[i] += GET(v[i]);
        const struct ml_spc_thread *x = t->spcx;
        const int64_t q = GET(v[S_POSTED_RECVQ]);
        const int same = GET(x->epoch) == e;
        ivl[0] += same ? GET(x->hi) : q;
        ivl[1] += same ? GET(x->lo) : q;
    }
    for (int k = 0; k < S.npvars; k++) {
        struct pvar *p = &S.pvars[k];
        S.cur[S.nv_thread + (size_t)k] = p->last;
    }
}

static void snapshot(int final)
{
    const uint64_t s0 = ml_clock_ns();
    /* the MPI's pvars: from this thread only when MPI_T allows it (MPI_T_init_thread gave
     * MPI_THREAD_MULTIPLE); otherwise at MPI_Finalize only */
    if (S.session_ok && (S.mpit_threaded || final))
        for (int k = 0; k < S.npvars; k++) S.pvars[k].last = pvar_read(&S.pvars[k]);
    int64_t ivl[2];
    gather(ivl);
    __atomic_add_fetch(&S.epoch, 1, __ATOMIC_RELAXED); /* the next interval's watermarks start now */
    S.ticks_per_ns = rate_now();
    const uint64_t t_ns = s0 - ml_g.ns_init_end;
    if (S.live != NULL) {
        live_hdr_t *h = (live_hdr_t *)S.live;
        __atomic_store_n(&h->seq, h->seq + 1, __ATOMIC_RELEASE);
        __atomic_thread_fence(__ATOMIC_RELEASE);
        memcpy(S.live + LIVE_HDR, S.cur, S.nv * sizeof *S.cur);
        h->t_ns = t_ns;
        h->ticks_per_ns = S.ticks_per_ns;
        h->updates++;
        if (final) h->state = 2;
        __atomic_thread_fence(__ATOMIC_RELEASE);
        __atomic_store_n(&h->seq, h->seq + 1, __ATOMIC_RELEASE);
    }
    if (S.series != NULL) {
        /* deltas; levels and watermarks as values (watermarks of the interval) */
        ml_spc_series_record_t rec = {.t_ns = t_ns, .final = (uint32_t)final, .check = 0};
        for (size_t i = 0; i < S.nv; i++) {
            int64_t d;
            if (i == S_MAX_POSTED_RECVQ) d = ivl[0];
            else if (i == S_MIN_POSTED_RECVQ) d = ivl[1];
            else if (i == S_POSTED_RECVQ) d = S.cur[i];
            else if (i >= S.nv_thread && S.pvars[i - S.nv_thread].cls != MPI_T_PVAR_CLASS_COUNTER) d = S.cur[i];
            else d = S.cur[i] - S.prev[i];
            S.row[i] = d;
        }
        rec.check = ml_fnv1a(ml_fnv1a(ML_FNV1A_START, &rec, sizeof rec), S.row, S.nv * sizeof *S.row);
        fwrite(&rec, sizeof rec, 1, S.series);
        fwrite(S.row, sizeof *S.row, S.nv, S.series);
        fflush(S.series);
        S.nrec++;
    }
    memcpy(S.prev, S.cur, S.nv * sizeof *S.cur);
    S.snap_ns_total += ml_clock_ns() - s0;
}

static void *snapshot_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&S.lock);
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    const long period_ns = ml_g.config.snapshot_ms * 1000000L;
    while (!S.stop) {
        next.tv_nsec += period_ns % 1000000000L;
        next.tv_sec += period_ns / 1000000000L + next.tv_nsec / 1000000000L;
        next.tv_nsec %= 1000000000L;
        while (!S.stop && pthread_cond_timedwait(&S.wake, &S.lock, &next) != ETIMEDOUT) {}
        if (S.stop) break;
        snapshot(0);
    }
    pthread_mutex_unlock(&S.lock);
    return NULL;
}

/* ------------------------------------------------------------------------------- init */
static void upper_name(char *out, size_t n, const char *fn)
{
    size_t i = 0;
    for (const char *p = fn + 4; *p && i + 1 < n; p++) out[i++] = (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
    out[i] = 0;
}

static void json_counter(FILE *f, int *first, const char *name, int type, size_t off, const char *desc, const char *seed,
                         const char *group)
{
    fprintf(f, "%s\n    {\"name\": ", *first ? "" : ",");
    *first = 0;
    ml_json_str(f, name);
    fprintf(f, ", \"type\": \"%s\", \"offset\": %zu, \"group\": \"%s\"", type_name[type], off, group);
    if (seed) {
        fprintf(f, ", \"seed\": ");
        ml_json_str(f, seed);
    }
    if (desc) {
        fprintf(f, ", \"description\": ");
        ml_json_str(f, desc);
    }
}

static const char *group_name(unsigned g)
{
    static const char *const names[] = {"calls", "bytes", "sizes", "eager", "queue", "unexpected", "collectives",
                                        "peers", "comms", "pvars"};
    for (int i = 0; i < 10; i++)
        if (g == 1u << i) return names[i];
    return "?";
}

/* MPILENS_FILES=host: a rank's slot in its group's live file, whole pages (mmap maps from a page) */
static size_t live_slot_bytes(void)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE), need = LIVE_HDR + S.nv * sizeof(int64_t);
    return (need + page - 1) / page * page;
}

static int write_layout(const char *path)
{
    char tmp[4300];
    if (ml_file_temp_name(tmp, sizeof tmp, path) != 0) return -1;
    FILE *f = ml_file_fopen(tmp);
    if (f == NULL) return -1;
    fprintf(f, "{\n  \"schema\": \"" ML_SCHEMA_COUNTERS_LAYOUT "\",\n  \"nv\": %zu,\n  \"nv_thread\": %zu,\n", S.nv, S.nv_thread);
    fprintf(f, "  \"nranks\": %d,\n  \"snapshot_ms\": %ld,\n  \"mpi\": \"%s\",\n  \"transport\": ", ml_g.size,
            ml_g.config.snapshot_ms, ML_MPI_FLAVOR);
    ml_json_str(f, S.pml);
    fprintf(f, ",\n  \"groups\": [");
    int first = 1;
    for (int i = 0; i < 10; i++)
        if (ml_spc_on & (1u << i)) {
            fprintf(f, "%s\"%s\"", first ? "" : ", ", group_name(1u << i));
            first = 0;
        }
    fprintf(f, "],\n  \"live_dir\": ");
    ml_json_str(f, S.livedir);
    fprintf(f, ",\n  \"live_header_bytes\": %d,\n  \"series_header_bytes\": %d,\n", (int)LIVE_HDR, (int)sizeof(series_hdr_t));
    /* MPILENS_FILES=host: the live files are live/group-NNNNNN.spc, one slot of this many bytes per rank */
    if (ml_files_grouped()) fprintf(f, "  \"live_slot_bytes\": %zu,\n", live_slot_bytes());
    fprintf(f, "  \"eager\": {\"shm_limit\": ");
    if (S.eager_shm >= 0) {
        fprintf(f, "%lld, \"shm_source\": ", (long long)S.eager_shm);
        ml_json_str(f, S.eager_src_shm);
    } else {
        fprintf(f, "null, \"shm_source\": null");
    }
    fprintf(f, ", \"net_limit\": ");
    if (S.eager_net >= 0) {
        fprintf(f, "%lld, \"net_source\": ", (long long)S.eager_net);
        ml_json_str(f, S.eager_src_net);
    } else {
        fprintf(f, "null, \"net_source\": null");
    }
    fprintf(f, "},\n  \"p2p_bin_rules\": [");
    for (int b = 0; b + 1 < S.nbins; b++) fprintf(f, "%s%lld", b ? ", " : "", (long long)S.rules[b]);
    fprintf(f, "],\n  \"coll_small_msg\": %lld,\n  \"coll_small_comm\": %lld,\n", (long long)S.coll_msg,
            (long long)S.coll_comm);
    fprintf(f, "  \"mpit\": {\"initialized\": %s, \"threaded\": %s},\n", S.mpit_ok ? "true" : "false",
            S.mpit_threaded ? "true" : "false");
    fprintf(f, "  \"pvars_absent\": [");
    for (int k = 0; k < S.nabsent; k++) {
        fprintf(f, "%s{\"name\": ", k ? ", " : "");
        ml_json_str(f, S.absent[k]);
        fprintf(f, ", \"why\": ");
        ml_json_str(f, S.absent_why[k]);
        fprintf(f, "}");
    }
    fprintf(f, "],\n  \"counters\": [");
    first = 1;
    for (size_t i = 0; i < S_NFIXED; i++) {
        json_counter(f, &first, fixed[i].name, fixed[i].type, i, fixed[i].desc, fixed[i].seed, group_name(fixed[i].group));
        fprintf(f, "}");
    }
    json_counter(f, &first, "P2P_MESSAGE_SIZE", T_BIN, S.off_bins, "point-to-point sends by size (bytes): total, then bins", NULL,
                 "sizes");
    fprintf(f, ", \"bins\": [");
    for (int b = 0; b < S.nbins; b++) fprintf(f, "%s%zu", b ? ", " : "", S.off_bins + 1 + (size_t)b);
    fprintf(f, "], \"rules\": [");
    for (int b = 0; b + 1 < S.nbins; b++) fprintf(f, "%s%lld", b ? ", " : "", (long long)S.rules[b]);
    fprintf(f, "]}");
    for (int fn = 0; fn < ML_NFUNC; fn++) {
        char nm[80], desc[120];
        upper_name(nm, sizeof nm, ml_fn_name[fn]);
        snprintf(desc, sizeof desc, "calls of %s", ml_fn_name[fn]);
        char seed[100];
        snprintf(seed, sizeof seed, "OMPI_SPC_%s", nm);
        json_counter(f, &first, nm, T_REGULAR, S.off_calls + (size_t)fn, desc, seed, "calls");
        fprintf(f, ", \"function\": \"%s\"}", ml_fn_name[fn]);
    }
    for (int fn = 0; fn < ML_NFUNC; fn++) {
        const int k = S.coll_of_fn[fn];
        if (k < 0) continue;
        char nm[100], up[80];
        upper_name(up, sizeof up, ml_fn_name[fn]);
        snprintf(nm, sizeof nm, "COLL_%s", up);
        const size_t o = S.off_coll + (size_t)k * 5;
        json_counter(f, &first, nm, T_COLL_BIN, o,
                     "collective calls: total, then small msg/small comm, small msg/large comm, large msg/small comm, large msg/large comm",
                     NULL, "collectives");
        fprintf(f, ", \"function\": \"%s\", \"bins\": [%zu, %zu, %zu, %zu]}", ml_fn_name[fn], o + 1, o + 2, o + 3, o + 4);
    }
    for (int k = 0; k < S.npvars; k++) {
        char nm[120];
        snprintf(nm, sizeof nm, "PVAR:%s", S.pvars[k].name);
        json_counter(f, &first, nm, S.pvars[k].cls == MPI_T_PVAR_CLASS_COUNTER ? T_PVAR_COUNTER : T_PVAR_LEVEL,
                     S.nv_thread + (size_t)k, "the MPI's own MPI_T pvar (sum of its elements; bound to MPI_COMM_WORLD when per communicator)",
                     NULL, "pvars");
        fprintf(f, ", \"pvar\": \"%s\", \"elements\": %d}", S.pvars[k].name, S.pvars[k].count);
    }
    fprintf(f, "\n  ]\n}\n");
    const int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        ml_file_unlink(tmp);
        return -1;
    }
    return ml_file_rename(tmp, path);
}

/* MPILENS_LIVE_DIR: a folder the user named, created when missing (its parent must exist) and
 * empty when the job starts (checked by rank 0; its verdict is everyone's), so that the live files
 * of two jobs never mix and nothing planted in it is written through. Collective; 0 when the live
 * files go there (S.livedir), -1 when they stay in the run directory (said once). */
static int live_dir_open(void)
{
    const char *dir = ml_g.config.live_dir;
    char why[4400] = "";
    int ok = 1;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        ok = 0;
        snprintf(why, sizeof why, "cannot create MPILENS_LIVE_DIR %s (%s)", dir, strerror(errno));
    }
    char abs[PATH_MAX];
    if (ok && (realpath(dir, abs) == NULL || ml_base_open(ML_BASE_LIVE, abs) != 0)) {
        ok = 0;
        snprintf(why, sizeof why, "cannot open MPILENS_LIVE_DIR %s (%s)", dir, strerror(errno));
    }
    PMPI_Barrier(ml_g.comm); /* every rank made and opened it before rank 0 looks inside */
    if (ok && ml_g.rank == 0) {
        DIR *d = opendir(abs);
        struct dirent *e;
        while (d != NULL && (e = readdir(d)) != NULL)
            if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
                ok = 0;
                snprintf(why, sizeof why, "MPILENS_LIVE_DIR %s is not empty (a live folder serves one job)", dir);
                break;
            }
        if (d != NULL) closedir(d);
    }
    int all = ok;
    PMPI_Allreduce(MPI_IN_PLACE, &all, 1, MPI_INT, MPI_MIN, ml_g.comm);
    if (!ok) ml_log(0, "%s; the live counters are in the run directory", why);
    if (!all) return -1;
    snprintf(S.livedir, sizeof S.livedir, "%.4000s", abs);
    return 0;
}

int ml_parse_bins(const char *s, long long *rules, int max); /* config.c */

static int parse_rules(const char *s)
{
    long long r[MAX_BINS];
    const int n = ml_parse_bins(s, r, MAX_BINS - 1);
    if (n < 0) return -1;
    for (int i = 0; i < n; i++) S.rules[i] = r[i];
    S.nbins = n + 1;
    return 0;
}

static int start_counters(void)
{
    const unsigned groups = (unsigned)ml_g.config.counters;
    if (parse_rules(ml_g.config.p2p_bins) != 0) {
        if (ml_g.rank == 0)
            ml_log(0, "MPILENS_P2P_BINS=%s is not a list of increasing byte sizes; counters are off",
                   ml_g.config.p2p_bins);
        return -1;
    }
    S.coll_msg = ml_g.config.coll_small_msg;
    S.coll_comm = ml_g.config.coll_small_comm;
    size_t o = S_NFIXED;
    S.off_bins = o;
    o += 1 + (size_t)S.nbins;
    S.off_calls = o;
    o += ML_NFUNC;
    S.off_coll = o;
    for (int fn = 0; fn < ML_NFUNC; fn++) S.coll_of_fn[fn] = ml_fn_class[fn] == ML_CLASS_COLLECTIVE ? S.ncoll++ : -1;
    o += (size_t)S.ncoll * 5;
    S.nv_thread = o;
    ml_spc_on = groups; /* the eager and pvar lookups below need it */
    int provided = 0;
    S.mpit_ok = PMPI_T_init_thread(MPI_THREAD_MULTIPLE, &provided) == MPI_SUCCESS;
    S.mpit_threaded = S.mpit_ok && provided == MPI_THREAD_MULTIPLE;
    if (S.mpit_ok && (groups & ML_SPC_EAGER)) eager_limits();
    else S.eager_shm = S.eager_net = -1;
    if (S.eager == NULL) ml_spc_on &= ~(unsigned)ML_SPC_EAGER;
    if (S.mpit_ok) pvars_open();
    S.nv = S.nv_thread + (size_t)S.npvars;
    S.cur = calloc(S.nv, sizeof *S.cur);
    S.prev = calloc(S.nv, sizeof *S.prev);
    S.row = calloc(S.nv, sizeof *S.row);
    if (S.cur == NULL || S.prev == NULL || S.row == NULL) return -1;

    /* files: the live view and the time series */
    char path[4400];
    int ok = ml_rundir_path(path, sizeof path, ML_PATH_COUNTERS_SERIES, ml_g.rank) == 0;
    ok &= ml_rundir_path(path, sizeof path, ML_PATH_COUNTERS_LIVE, ml_g.rank) == 0;
    snprintf(S.livedir, sizeof S.livedir, "%.4000s", path);
    *strrchr(S.livedir, '/') = 0;
    if (ml_g.config.live_dir[0]) live_dir_open(); /* else, or when refused: in the run directory */
    if (ok) {
        char name[64];
        S.live_len = LIVE_HDR + S.nv * sizeof(int64_t);
        if (ml_files_grouped()) {
            /* one file per group, a slot per rank at a page boundary: the rank maps its slot only.
             * posix_fallocate only ever extends the file (ftruncate by one rank could cut off the
             * slots of the others) */
            snprintf(name, sizeof name, strrchr(ML_PATH_COUNTERS_LIVE_SLOTS, '/') + 1, ml_files_group());
            snprintf(path, sizeof path, "%s/%s", S.livedir, name);
            const off_t at = (off_t)live_slot_bytes() * ml_files_slot();
            S.live_fd = ml_file_shared(path, O_RDWR | O_CREAT, 0644);
            if (S.live_fd >= 0 && posix_fallocate(S.live_fd, at, (off_t)live_slot_bytes()) == 0) {
                void *m = mmap(NULL, S.live_len, PROT_READ | PROT_WRITE, MAP_SHARED, S.live_fd, at);
                if (m != MAP_FAILED) S.live = m;
            }
        } else {
            snprintf(name, sizeof name, strrchr(ML_PATH_COUNTERS_LIVE, '/') + 1, ml_g.rank);
            snprintf(path, sizeof path, "%s/%s", S.livedir, name);
            S.live_fd = ml_file_create(path, O_RDWR, 0644);
            /* its blocks allocated before it is mapped, as a slot's: a store to a hole of a shared
             * mapping that a full file system cannot back would end the process with SIGBUS */
            int rc = S.live_fd >= 0 ? posix_fallocate(S.live_fd, 0, (off_t)S.live_len) : EBADF;
            if (rc != 0) errno = rc;
            if (rc == 0) {
                void *m = mmap(NULL, S.live_len, PROT_READ | PROT_WRITE, MAP_SHARED, S.live_fd, 0);
                if (m != MAP_FAILED) S.live = m;
            }
        }
        if (S.live != NULL) {
            live_hdr_t *h = (live_hdr_t *)S.live;
            memcpy(h->magic, ML_MAGIC_COUNTERS_LIVE, ML_MAGIC_LEN);
            h->version = 1;
            h->nv = (uint32_t)S.nv;
            h->rank = ml_g.rank;
            h->pid = (int32_t)getpid();
            h->state = 1;
            h->period_ms = (uint32_t)ml_g.config.snapshot_ms;
        }
        S.series = ml_stream_fopen(ML_STREAM_COUNTERS_SERIES, 0);
        if (S.series != NULL) {
            series_hdr_t h;
            memset(&h, 0, sizeof h);
            memcpy(h.magic, ML_MAGIC_COUNTERS_SERIES, ML_MAGIC_LEN);
            h.version = SERIES_VERSION;
            h.nv = (uint32_t)S.nv;
            h.rank = ml_g.rank;
            h.period_ms = (uint32_t)ml_g.config.snapshot_ms;
            fwrite(&h, sizeof h, 1, S.series);
        }
    }
    if (S.live == NULL || S.series == NULL)
        ml_log(0, "cannot write this rank's counter files in %s and %s/counters (%s)", S.livedir, ml_g.outdir,
               strerror(errno));
    if (ml_g.rank == 0) {
        ml_rundir_path(path, sizeof path, ML_PATH_COUNTERS_LAYOUT);
        if (write_layout(path) != 0) ml_log(0, "cannot write %s (%s)", path, strerror(errno));
        if (strcmp(S.livedir, ml_g.outdir) != 0) {
            snprintf(path, sizeof path, "%s/%s", S.livedir, strrchr(ML_PATH_COUNTERS_LAYOUT, '/') + 1);
            write_layout(path);
        }
    }
    for (ml_thread_t *t = __atomic_load_n(&ml_g.threads, __ATOMIC_ACQUIRE); t; t = t->next) ml_spc_thread(t);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* the thread sleeps until monotonic deadlines */
    pthread_cond_init(&S.wake, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&S.thread, NULL, snapshot_main, NULL) == 0) S.running = 1;
    ml_g.observers |= ML_OBS_COUNTERS;
    return 0;
}

/* MPI_Init, after the run directory exists (the table of modes, modes.c). */
int ml_spc_init(void)
{
    if (start_counters() == 0) {
        /* every request's start and completion (the table's req_posted and req_done hooks), with
         * the world's facts when counting per communicator */
        ml_req_watch = ML_WATCH_REQUESTS | (ml_spc_on & ML_SPC_COMMS ? ML_WATCH_WORLD_FACTS : 0u);
        return 0;
    }
    ml_spc_on = 0; /* set early (the MPI_T lookups need it): nothing may count now */
    if (ml_g.rank == 0) ml_log(0, "the counters mode could not start; measuring without it");
    return -1;
}

/* ------------------------------------------------------------------------------- finalize */
static void write_rank_json(void)
{
    ml_whole_t out;
    FILE *f = ml_whole_open(&out, ML_STREAM_COUNTERS_TOTALS, 0);
    if (f == NULL) return;
    fprintf(f, "{\"rank\": %d, \"ticks_per_ns\": %.9g, \"snapshots\": %llu, \"snapshot_seconds\": %.6f,\n \"values\": [",
            ml_g.rank, S.ticks_per_ns, (unsigned long long)S.nrec, (double)S.snap_ns_total * 1e-9);
    for (size_t i = 0; i < S.nv; i++) fprintf(f, "%s%lld", i ? ", " : "", (long long)S.cur[i]);
    fprintf(f, "],\n \"pvars_read\": [");
    for (int k = 0; k < S.npvars; k++) fprintf(f, "%s%s", k ? ", " : "", S.pvars[k].last >= 0 ? "true" : "false");
    const size_t P = (size_t)ml_g.size;
    int64_t *peers = calloc(4 * P, sizeof *peers);
    struct agg { uint64_t uid; int size, is_inter; int64_t v[6]; } comms[COMM_SLOTS * 4];
    int ncomm = 0;
    int64_t overflow = 0;
    for (ml_thread_t *t = __atomic_load_n(&ml_g.threads, __ATOMIC_ACQUIRE); t; t = t->next) {
        if (t->spc == NULL) continue;
        struct ml_spc_thread *x = t->spcx;
        if (peers)
            for (size_t i = 0; i < 4 * P; i++) peers[i] += x->peers[i];
        overflow += x->comm_overflow;
        for (int i = 0; i < COMM_SLOTS; i++) {
            const struct spc_comm *s = &x->comms[i];
            if (s->uid == 0) continue;
            int k = 0;
            while (k < ncomm && comms[k].uid != s->uid) k++;
            if (k == ncomm) {
                if (ncomm == COMM_SLOTS * 4) continue;
                comms[ncomm++] = (struct agg){.uid = s->uid, .size = s->size, .is_inter = s->is_inter};
            }
            const int64_t v[6] = {s->calls, s->p2p_sent, s->p2p_recv, s->p2p_msgs, s->coll_sent, s->coll_recv};
            for (int j = 0; j < 6; j++) comms[k].v[j] += v[j];
        }
    }
    fprintf(f, "],\n \"peers\": ");
    if (peers && (ml_spc_on & ML_SPC_PEERS)) {
        static const char *const keys[] = {"bytes_sent", "messages_sent", "bytes_received", "messages_received"};
        fprintf(f, "{");
        for (int k = 0; k < 4; k++) {
            fprintf(f, "%s\"%s\": [", k ? ", " : "", keys[k]);
            for (size_t r = 0; r < P; r++) fprintf(f, "%s%lld", r ? ", " : "", (long long)peers[k * P + r]);
            fprintf(f, "]");
        }
        fprintf(f, "}");
    } else {
        fprintf(f, "null");
    }
    free(peers);
    fprintf(f, ",\n \"comms\": ");
    if (ml_spc_on & ML_SPC_COMMS) {
        fprintf(f, "[");
        for (int k = 0; k < ncomm; k++) {
            fprintf(f, "%s\n  {\"uid\": \"%016llx\", \"size\": %d, \"inter\": %s, \"calls\": %lld, \"p2p_bytes_sent\": %lld, "
                       "\"p2p_bytes_received\": %lld, \"p2p_messages_sent\": %lld, \"coll_bytes_sent\": %lld, "
                       "\"coll_bytes_received\": %lld}",
                    k ? "," : "", (unsigned long long)comms[k].uid, comms[k].size, comms[k].is_inter ? "true" : "false",
                    (long long)comms[k].v[0], (long long)comms[k].v[1], (long long)comms[k].v[2], (long long)comms[k].v[3],
                    (long long)comms[k].v[4], (long long)comms[k].v[5]);
        }
        fprintf(f, "], \"comm_overflow\": %lld", (long long)overflow);
    } else {
        fprintf(f, "null");
    }
    fprintf(f, "}\n");
    ml_whole_close(&out);
}

void ml_spc_finish(void)
{
    if (!ml_spc_on) return;
    if (S.running) {
        pthread_mutex_lock(&S.lock);
        S.stop = 1;
        pthread_cond_signal(&S.wake);
        pthread_mutex_unlock(&S.lock);
        pthread_join(S.thread, NULL);
        S.running = 0;
    }
    snapshot(1);
    if (S.series != NULL) {
        series_hdr_t h;
        memset(&h, 0, sizeof h);
        memcpy(h.magic, ML_MAGIC_COUNTERS_SERIES, ML_MAGIC_LEN);
        h.version = SERIES_VERSION;
        h.nv = (uint32_t)S.nv;
        h.rank = ml_g.rank;
        h.period_ms = (uint32_t)ml_g.config.snapshot_ms;
        h.ticks_per_ns = S.ticks_per_ns;
        h.records = S.nrec;
        /* in a container the head stays as written at MPI_Init (records and rate 0, as a killed
         * rank's): the records are counted from the length, the rate is in the totals */
        if (!ml_files_grouped() && fseek(S.series, 0, SEEK_SET) == 0) fwrite(&h, sizeof h, 1, S.series);
        fclose(S.series);
        S.series = NULL;
    }
    write_rank_json();
    if (S.live != NULL) {
        msync(S.live, S.live_len, MS_ASYNC);
        munmap(S.live, S.live_len);
        S.live = NULL;
    }
    if (S.live_fd >= 0) close(S.live_fd);
    if (S.session_ok) {
        for (int k = 0; k < S.npvars; k++) PMPI_T_pvar_handle_free(S.session, &S.pvars[k].handle);
        PMPI_T_pvar_session_free(&S.session);
    }
    if (S.mpit_ok) PMPI_T_finalize();
    ml_spc_on = 0;
    ml_req_watch = 0;
}

/* ------------------------------------------------------------------------------- MPI_T exposure
 * The fixed counters are offered to MPI_T clients (TAU and others) as extra pvars named mpilens_*
 * (runtime/src/modes/counters/mpit_expose.c). These give their names, classes and process-wide values. */
int ml_spc_exposed(void)
{
    return ml_spc_on && S.cur != NULL ? S_NFIXED : 0;
}

const char *ml_spc_exposed_info(int i, int *kind, const char **desc)
{
    if (i < 0 || i >= S_NFIXED) return NULL;
    *kind = fixed[i].type == T_TIMER ? 1 : fixed[i].type == T_LEVEL ? 2 : fixed[i].type == T_HIGH_WM ? 3
          : fixed[i].type == T_LOW_WM ? 4 : 0;
    *desc = fixed[i].desc;
    return fixed[i].name;
}

/* Whether counter i is measured in this run (its group is on). */
int ml_spc_exposed_on(int i)
{
    return i >= 0 && i < S_NFIXED && (ml_spc_on & fixed[i].group) != 0;
}

/* Process-wide value of fixed counter i now (timers in nanoseconds). */
int64_t ml_spc_exposed_value(int i)
{
    int64_t v = 0;
    for (ml_thread_t *t = __atomic_load_n(&ml_g.threads, __ATOMIC_ACQUIRE); t; t = t->next) {
        int64_t *x = __atomic_load_n(&t->spc, __ATOMIC_ACQUIRE);
        if (x != NULL) v += GET(x[i]);
    }
    if (fixed[i].type == T_TIMER) {
        const double r = rate_now();
        v = r > 0 ? (int64_t)((double)v / r) : 0;
    }
    return v;
}
