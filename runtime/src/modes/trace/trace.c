/* Trace mode: a record of every MPI call, request completion, region and counter update, in
 * compact binary events written to trace/rank-NNNNNN.bin.
 *
 * Each thread fills its own buffers (no lock per event); a full buffer is handed to a background
 * writer thread, which appends it to the rank's file; the thread goes on in another buffer and
 * waits only when all of its buffers are in the writer's queue (memory stays bounded:
 * MPILENS_TRACE_BUFFERS x MPILENS_TRACE_BUFFER_KB per thread). At MPI_Finalize, exit or a fatal
 * signal the buffers are written out directly, and the calls of receives still waiting for a
 * completion go into the trailer; a block cut short by a kill is detected by the reader from its
 * header and skipped.
 *
 * An event is a fixed part of 12 bytes and 0 to 18 words of fields: only what differs from the
 * obvious is written, and not what the events before give (the next operation number; the
 * peers, tags, bytes and site of the function's previous call or completion): 12 to 16 bytes
 * for a point-to-point call in a loop instead of the 64 of all fields; a nonblocking one the MPI
 * completed within it is written with its completion (a call_done), and below
 * MPI_THREAD_SERIALIZED a receive's call waits for its completion and is written with it (a
 * late_call: the reader puts the call back where it was made, by its start). The writer thread,
 * the disk and the reader have a fifth of the bytes to move.
 * Within a buffer the fixed parts grow from the start and the words downwards from the end, so a
 * block of events is two contiguous pieces, and its words read backwards are the events' fields
 * in order. The events before (for dt, COMM and the repeats) are those of the same filling of
 * the same buffer: every filling decodes alone.
 *
 * The file (its blocks, the event's fixed part, the flags saying which words follow) is laid out
 * in runtime/spec/rundir.yaml, file `trace` (docs/run-directory.md); the structures and constants
 * used here are generated from it (ml_rundir.h). python/mpilens/trace/reader.py reads it, and
 * the 64-byte events of the older blocks the spec lists. */
#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "ml_callsite.h"
#include "ml_files.h"
#include "ml_output.h"
#include "ml_trace_filter.h"
#include "trace_event.h"

enum { BUF_FREE = 0, BUF_FILLING = 1, BUF_QUEUED = 2, BUF_WRITING = 3 };

static ml_stream_t out = {.fd = -1, .index_fd = -1}; /* the rank's trace file, or its chunks */
size_t ml_trace_data_bytes; /* of each buffer */
static uint32_t nbuffers;
static uint64_t blocks_written;
static pthread_t writer;
static int writer_running, stopping;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queued = PTHREAD_COND_INITIALIZER, freed = PTHREAD_COND_INITIALIZER;
static ml_tbuf_t *qhead, *qtail;
static uint32_t threads_seen;
/* this rank's clock minus rank 0's, and the round trip of the ping-pong it was read from: the
 * offset is exact within half of it */
static int64_t offset_init_ns, offset_end_ns, rtt_init_ns, rtt_end_ns;
static uint64_t offset_init_at, offset_end_at;
static int64_t writer_cpu_ns = -1; /* CPU time of the writer thread, once it has ended */
static uint64_t rank0_init_end_ns; /* rank 0's CLOCK_MONOTONIC at the end of its MPI_Init */

/* The gate (ml_trace.h) and the window it holds, on this rank's CLOCK_MONOTONIC (ns; until
 * UINT64_MAX: no end). The window's ticks follow the tick rate, measured better as the run goes
 * on: the writer thread refreshes them (refresh_window). */
int ml_trace_gated, ml_trace_paused;
uint64_t ml_trace_from, ml_trace_span = UINT64_MAX;
unsigned char ml_trace_skip[ML_NFUNC];
static uint64_t window_from_ns, window_until_ns = UINT64_MAX;
static int windowed;

static uint64_t tick_of_ns(uint64_t ns, double rate)
{
    const double d = ((double)ns - (double)ml_g.ns_init_end) * rate + (double)ml_g.t_init_end;
    return d <= 0 ? 0 : d >= 1.8e19 ? UINT64_MAX : (uint64_t)d;
}

static void refresh_window(void)
{
    if (!windowed) return;
    const double rate = ml_ticks_per_ns();
    const uint64_t from = tick_of_ns(window_from_ns, rate);
    const uint64_t until = window_until_ns == UINT64_MAX ? UINT64_MAX : tick_of_ns(window_until_ns, rate);
    __atomic_store_n(&ml_trace_from, from, __ATOMIC_RELAXED);
    __atomic_store_n(&ml_trace_span, until > from ? until - from : 0, __ATOMIC_RELAXED);
}


/* ------------------------------------------------------------------------------- writing */
/* Write the events committed since the last write as one block. The caller holds b->busy. */
static void write_block(ml_tbuf_t *b)
{
    const uint64_t c = __atomic_load_n(&b->committed, __ATOMIC_ACQUIRE);
    const uint32_t n = (uint32_t)c, words = (uint32_t)(c >> 32);
    if (n <= b->flushed) return;
    ml_trace_block_t head;
    memcpy(head.magic, ML_MAGIC_TRACE_EVENTS, ML_MAGIC_LEN);
    head.thread = b->thread;
    head.count = n - b->flushed;
    head.number = __atomic_fetch_add(&blocks_written, 1, __ATOMIC_RELAXED);
    ml_clock_point(&head.tick, &head.ns);
    head.filling = b->filling;
    head.first = b->flushed;
    head.words = words - b->wflushed;
    head.zero = 0;
    struct iovec v[3] = {{&head, sizeof head},
                         {ml_tbuf_fixed(b) + b->flushed, (size_t)head.count * sizeof(ml_tfix_t)},
                         {ml_tbuf_word_end(b) - words, (size_t)head.words * 4}};
    /* one writev per block on an O_APPEND file: blocks of several threads never interleave; a
     * short write (full disk, killed) leaves a block the reader recognizes as cut and skips */
    if (ml_stream_writev(&out, v, 3, b->thread) != 0) ml_g.trace_write_errors++;
    b->flushed = n;
    b->wflushed = words;
}

static int try_hold(ml_tbuf_t *b) { return !__atomic_exchange_n(&b->busy, 1, __ATOMIC_ACQUIRE); }
static void release(ml_tbuf_t *b) { __atomic_store_n(&b->busy, 0, __ATOMIC_RELEASE); }

/* Write what the threads have put in their current buffers so far: a process killed without
 * warning (SIGKILL) then loses at most one flush period of events. */
static void flush_filling(void)
{
    for (ml_thread_t *t = __atomic_load_n(&ml_g.threads, __ATOMIC_ACQUIRE); t; t = t->next)
        for (uint32_t i = 0; i < nbuffers && i < 8; i++) {
            ml_tbuf_t *b = t->trace.bufs[i];
            if (b && __atomic_load_n(&b->state, __ATOMIC_ACQUIRE) == BUF_FILLING && try_hold(b)) {
                write_block(b);
                release(b);
            }
        }
}

static void *writer_main(void *arg)
{
    (void)arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL); /* signals are for the application's threads */
    const long period_ms = ml_g.config.trace_flush_ms;
    for (;;) {
        pthread_mutex_lock(&lock);
        if (qhead == NULL && !stopping) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_sec += period_ms / 1000;
            until.tv_nsec += (period_ms % 1000) * 1000000L;
            if (until.tv_nsec >= 1000000000L) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&queued, &lock, &until);
        }
        ml_tbuf_t *b = qhead;
        if (b != NULL) {
            qhead = b->next;
            if (qhead == NULL) qtail = NULL;
        }
        const int stop = stopping;
        pthread_mutex_unlock(&lock);
        if (b == NULL) {
            if (stop) break;
            flush_filling();
            refresh_window();
            continue;
        }
        int expect = BUF_QUEUED;
        if (__atomic_compare_exchange_n(&b->state, &expect, BUF_WRITING, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
            while (!try_hold(b)) {} /* a dying process may be writing it: wait for it */
            write_block(b);
            b->committed = 0;
            b->flushed = b->wflushed = 0;
            release(b);
            __atomic_store_n(&b->state, BUF_FREE, __ATOMIC_RELEASE);
        }
        pthread_mutex_lock(&lock);
        pthread_cond_broadcast(&freed);
        pthread_mutex_unlock(&lock);
    }
    struct timespec cpu;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0)
        writer_cpu_ns = (int64_t)cpu.tv_sec * 1000000000 + cpu.tv_nsec;
    return NULL;
}

static void enqueue(ml_tbuf_t *b)
{
    __atomic_store_n(&b->state, BUF_QUEUED, __ATOMIC_RELEASE);
    pthread_mutex_lock(&lock);
    b->next = NULL;
    if (qtail)
        qtail->next = b;
    else
        qhead = b;
    qtail = b;
    pthread_cond_signal(&queued);
    pthread_mutex_unlock(&lock);
}

static int any_free(const ml_thread_t *t)
{
    for (uint32_t i = 0; i < nbuffers; i++)
        if (t->trace.bufs[i] && __atomic_load_n(&t->trace.bufs[i]->state, __ATOMIC_ACQUIRE) == BUF_FREE) return 1;
    return 0;
}

/* The thread's buffer is full: queue it and continue in a free one, waiting if there is none. */
ml_tbuf_t *ml_trace_swap(ml_thread_t *t)
{
    if (t->trace.cur != NULL) enqueue(t->trace.cur);
    t->trace.cur = NULL;
    for (;;) {
        for (uint32_t i = 0; i < nbuffers; i++) {
            ml_tbuf_t *b = t->trace.bufs[i];
            int expect = BUF_FREE;
            if (b && __atomic_compare_exchange_n(&b->state, &expect, BUF_FILLING, 0, __ATOMIC_ACQ_REL,
                                                 __ATOMIC_RELAXED)) {
                /* emptied by the writer (nothing committed or flushed): a new filling, decoded
                 * on its own */
                b->filling = t->trace.fillings++;
                b->last_t0 = ML_TBUF_NO_T0;
                b->last_comm = 0;
                for (int k = 0; k < 2; k++)
                    for (int fn = 0; fn < ML_NFUNC; fn++) b->last_of[k][fn] = ML_TRACE_FIELDS_NONE;
                b->last_req[0] = b->last_req[1] = UINT64_MAX; /* no number is one more */
                b->fix_at = ml_tbuf_fixed(b);
                b->word_at = ml_tbuf_word_end(b);
                t->trace.cur = b;
                return b;
            }
        }
        /* Check again under the lock before sleeping: the writer frees a buffer, then takes the
         * lock to broadcast, so a buffer freed after the loop above is either seen here or wakes
         * us up (no lost wake-up). */
        pthread_mutex_lock(&lock);
        while (!any_free(t)) pthread_cond_wait(&freed, &lock);
        pthread_mutex_unlock(&lock);
    }
}

/* ------------------------------------------------------------------------------- events */
uint32_t ml_trace_world_uid; /* MPI_COMM_WORLD's, the communicator of most calls */

void ml_trace_call(ml_thread_t *t, const ml_call_t *c) { ml_trace_call_inline(t, c); }

void ml_trace_plain_at(ml_thread_t *t, int fn, uint64_t t0, uint64_t t1, uint32_t site)
{
    const ml_tev_t e = {.t0 = t0, .t1 = t1, .kind = ML_TEV_CALL, .fn = (uint32_t)fn, .dst = -1, .src = -1,
                        .site = site};
    ml_trace_emit(t, &e);
}

void ml_trace_plain(ml_thread_t *t, int fn, uint64_t t0, uint64_t t1)
{
    ml_trace_plain_at(t, fn, t0, t1, ml_trace_site(t, fn));
}

void ml_trace_done(ml_thread_t *t, const ml_req_t *r, const MPI_Status *st, int64_t sent, int64_t recv)
{
    ml_trace_done_inline(t, r, st, sent, recv);
}

void ml_trace_late_alone(ml_thread_t *t, const ml_recv_slot_t *r) { ml_trace_late(t, r, NULL, 0); }

void ml_trace_region(ml_thread_t *t, int begin, uint32_t path_id)
{
    const uint64_t now = ml_now();
    const ml_tev_t e = {.t0 = now, .t1 = now, .kind = begin ? ML_TEV_REGION_BEGIN : ML_TEV_REGION_END,
                        .fn = path_id, .dst = -1, .src = -1};
    ml_trace_emit(t, &e);
}

void ml_trace_counter(ml_thread_t *t, uint32_t id, double value)
{
    const uint64_t now = ml_now();
    ml_tev_t e = {.t0 = now, .t1 = now, .kind = ML_TEV_COUNTER, .fn = id, .dst = -1, .src = -1};
    memcpy(&e.sent, &value, sizeof value);
    ml_trace_emit(t, &e);
}

/* ------------------------------------------------------------------------------- clocks */
/* This rank's clock (CLOCK_MONOTONIC, ns) minus rank 0's, from the fastest of a few round trips
 * (half the round trip assumed each way). Collective over the tool's communicator. */
/* Rank 0 ping-pongs with each rank and keeps the exchange of the shortest round trip (its error
 * bound is half of it); the rank learns its offset and that round trip. The reader aligns each
 * host with the best measurement among its ranks (they share the host's clocks). */
static int64_t measure_offset(int64_t *rtt)
{
    const int rounds = 16;
    int64_t offset[3] = {0, 0, (int64_t)ml_g.ns_init_end}; /* offset, round trip, rank 0's end of MPI_Init */
    if (ml_g.rank == 0) {
        for (int r = 1; r < ml_g.size; r++) {
            uint64_t best_rtt = UINT64_MAX;
            int64_t best = 0;
            for (int k = 0; k < rounds; k++) {
                int64_t remote = 0;
                const uint64_t a = ml_clock_ns();
                PMPI_Send(NULL, 0, MPI_BYTE, r, 20, ml_g.comm);
                PMPI_Recv(&remote, 1, MPI_INT64_T, r, 21, ml_g.comm, MPI_STATUS_IGNORE);
                const uint64_t b = ml_clock_ns();
                if (b - a < best_rtt) {
                    best_rtt = b - a;
                    best = remote - (int64_t)(a + (b - a) / 2);
                }
            }
            const int64_t result[3] = {best, (int64_t)best_rtt, (int64_t)ml_g.ns_init_end};
            PMPI_Send(result, 3, MPI_INT64_T, r, 22, ml_g.comm);
        }
    } else {
        for (int k = 0; k < rounds; k++) {
            PMPI_Recv(NULL, 0, MPI_BYTE, 0, 20, ml_g.comm, MPI_STATUS_IGNORE);
            const int64_t now = (int64_t)ml_clock_ns();
            PMPI_Send(&now, 1, MPI_INT64_T, 0, 21, ml_g.comm);
        }
        PMPI_Recv(offset, 3, MPI_INT64_T, 0, 22, ml_g.comm, MPI_STATUS_IGNORE);
    }
    *rtt = offset[1];
    rank0_init_end_ns = (uint64_t)offset[2];
    return offset[0];
}

/* ------------------------------------------------------------------------------- communicators */
/* The trailer lists the members of every communicator the events name: its uid as the events hold
 * it, the world ranks of its group in rank order, and those of the remote group of an
 * intercommunicator. An export that must give ranks within a communicator (OTF2) needs them. A
 * communicator is recorded when it is freed (its facts go then) and the living ones at the end. */
#define COMMS_MAX 4096u
static struct comm_seen {
    uint32_t uid;
    int size, remote_size; /* remote_size 0: an intracommunicator */
    int *world;            /* size world ranks of the group, then remote_size of the remote group */
} comms_seen[COMMS_MAX];
static uint32_t ncomms_seen, comms_dropped;
static uint32_t comms_index[2 * COMMS_MAX]; /* uid hash -> 1 + index into comms_seen; 0: empty */
static pthread_mutex_t comms_lock = PTHREAD_MUTEX_INITIALIZER;

/* The slot of uid in comms_index: its entry's, or the empty one where it would go. */
static uint32_t *comms_slot(uint32_t uid)
{
    uint32_t i = (uint32_t)(ml_hash(uid) >> 40) & (2 * COMMS_MAX - 1);
    while (comms_index[i] != 0 && comms_seen[comms_index[i] - 1].uid != uid) i = (i + 1) & (2 * COMMS_MAX - 1);
    return &comms_index[i];
}

/* World ranks of the local group of an intercommunicator (c->world holds the remote group's). */
static int local_world_ranks(MPI_Comm comm, int n, int *out)
{
    int *ranks = malloc((size_t)n * sizeof(int));
    if (ranks == NULL) return -1;
    MPI_Group local, world;
    PMPI_Comm_group(comm, &local);
    PMPI_Comm_group(ml_g.world, &world);
    for (int i = 0; i < n; i++) ranks[i] = i;
    PMPI_Group_translate_ranks(local, n, ranks, world, out);
    for (int i = 0; i < n; i++)
        if (out[i] == MPI_UNDEFINED) out[i] = -1;
    PMPI_Group_free(&local);
    PMPI_Group_free(&world);
    free(ranks);
    return 0;
}

void ml_trace_comm_seen(MPI_Comm comm, const ml_comm_t *c, void *unused)
{
    (void)unused;
    if (out.fd < 0 || c == NULL || c->world == NULL || comm == ml_g.comm) return;
    const uint32_t uid = (uint32_t)c->uid;
    pthread_mutex_lock(&comms_lock);
    uint32_t *slot = comms_slot(uid);
    if (*slot == 0 && ncomms_seen == COMMS_MAX) {
        comms_dropped++;
    } else if (*slot == 0) {
        struct comm_seen *s = &comms_seen[ncomms_seen];
        s->uid = uid;
        s->size = c->size;
        s->remote_size = c->is_inter ? c->remote_size : 0;
        s->world = malloc((size_t)(s->size + s->remote_size) * sizeof(int));
        int ok = s->world != NULL;
        if (ok && c->is_inter) {
            ok = local_world_ranks(comm, s->size, s->world) == 0;
            if (ok) memcpy(s->world + s->size, c->world, (size_t)s->remote_size * sizeof(int));
        } else if (ok) {
            memcpy(s->world, c->world, (size_t)s->size * sizeof(int));
        }
        if (ok) {
            *slot = ++ncomms_seen;
        } else {
            free(s->world);
            comms_dropped++;
        }
    }
    pthread_mutex_unlock(&comms_lock);
}

/* ------------------------------------------------------------------------------- metadata */
/* JSON with strings and integers only, through the signal-safe sink of payload.c. */

static void put_ranks(ml_sink_t *s, const int *ranks, int n)
{
    ml_sink_text(s, "[");
    for (int i = 0; i < n; i++) {
        if (i) ml_sink_text(s, ", ");
        ml_sink_int(s, ranks[i]);
    }
    ml_sink_text(s, "]");
}

/* "comms": [[uid, [world ranks], [world ranks of the remote group]], ...]. A dying process
 * (signal-safe: no lock, no allocation) lists the recorded ones and the living
 * intracommunicators as they are. */
static void put_comm(ml_sink_t *s, uint32_t uid, const int *ranks, int n, const int *remote, int nremote, int *first)
{
    ml_sink_text(s, *first ? "[" : ", [");
    *first = 0;
    ml_sink_int(s, uid);
    ml_sink_text(s, ", ");
    put_ranks(s, ranks, n);
    ml_sink_text(s, ", ");
    put_ranks(s, remote, nremote);
    ml_sink_text(s, "]");
}

struct comms_json {
    ml_sink_t *s;
    int first;
};

static void put_living_comm(MPI_Comm comm, const ml_comm_t *c, void *arg)
{
    struct comms_json *j = arg;
    if (c == NULL || c->world == NULL || c->is_inter || comm == ml_g.comm || *comms_slot((uint32_t)c->uid) != 0)
        return;
    put_comm(j->s, (uint32_t)c->uid, c->world, c->size, NULL, 0, &j->first);
}

static void put_comms(ml_sink_t *s, int dying)
{
    struct comms_json j = {s, 1};
    if (!dying) ml_comm_each(ml_trace_comm_seen, NULL, 1); /* the living ones, recorded */
    ml_sink_text(s, ", \"comms\": [");
    const uint32_t n = __atomic_load_n(&ncomms_seen, __ATOMIC_ACQUIRE);
    for (uint32_t i = 0; i < n; i++) {
        const struct comm_seen *c = &comms_seen[i];
        put_comm(s, c->uid, c->world, c->size, c->world + c->size, c->remote_size, &j.first);
    }
    if (dying) ml_comm_each(put_living_comm, &j, 0);
    ml_sink_text(s, "], \"comms_dropped\": ");
    ml_sink_int(s, comms_dropped);
}

/* The call events still waiting in receive slots for completions that did not come (receives
 * pending at MPI_Finalize or when the process ended): in the trailer, with their thread. Read in
 * place (a dying process's slots included: a slot's call is marked waiting last, ml_trace_defer);
 * then marked written. */
static void put_late_calls(ml_sink_t *s)
{
    ml_sink_text(s, ", \"late_calls\": [");
    int first = 1;
    for (ml_thread_t *t = __atomic_load_n(&ml_g.threads, __ATOMIC_ACQUIRE); t; t = t->next) {
        if (t->rr == NULL || t->rc == NULL) continue; /* no table of waiting calls: none waits */
        for (uint32_t i = 0; i <= t->rr_mask; i++) {
            ml_recv_slot_t *r = &t->rr[i];
            if (r->key == 0 || !(r->seq & ML_SEQ_LATER)) continue;
            const ml_recv_call_t *c = &t->rc[i];
            const int64_t v[] = {t->trace.index, (int64_t)c->t0, c->dur, r->fn, c->src, c->tag,
                                 (int64_t)(r->seq & ~ML_SEQ_LATER), c->site_id};
            ml_sink_text(s, first ? "[" : ", [");
            for (size_t k = 0; k < sizeof v / sizeof *v; k++) {
                if (k) ml_sink_text(s, ", ");
                ml_sink_int(s, v[k]);
            }
            ml_sink_text(s, "]");
            first = 0;
            r->seq &= ~ML_SEQ_LATER;
        }
    }
    ml_sink_text(s, "]");
}

/* trailer: 0 head, 1 trailer of a rank that reached MPI_Finalize, 2 trailer of one that did not */
static void write_json_block(const char *magic, int trailer)
{
    static char buffer[1 << 16];
    ml_sink_t s = {buffer, 0, sizeof buffer, -1, 0, &out};
    uint64_t tick, ns;
    ml_clock_point(&tick, &ns);
    struct timespec realtime; /* the calendar time of ns1, for exports that state when the run was */
    clock_gettime(CLOCK_REALTIME, &realtime);
    /* the block's length is not known before the JSON is written: mark the end instead */
    ml_sink_put(&s, magic, ML_MAGIC_LEN);
    ml_sink_text(&s, "{\"rank\": ");
    ml_sink_int(&s, ml_g.rank);
    ml_sink_text(&s, ", \"nranks\": ");
    ml_sink_int(&s, ml_g.size);
    ml_sink_text(&s, ", \"mpi\": \"" ML_MPI_FLAVOR "\", \"tick0\": ");
    ml_sink_int(&s, (int64_t)ml_g.t_init_end);
    ml_sink_text(&s, ", \"ns0\": ");
    ml_sink_int(&s, (int64_t)ml_g.ns_init_end);
    ml_sink_text(&s, ", \"tick1\": ");
    ml_sink_int(&s, (int64_t)tick);
    ml_sink_text(&s, ", \"ns1\": ");
    ml_sink_int(&s, (int64_t)ns);
    ml_sink_text(&s, ", \"world_uid\": ");
    ml_sink_int(&s, ml_trace_world_uid);
    ml_sink_text(&s, ", \"realtime_ns1\": ");
    ml_sink_int(&s, (int64_t)realtime.tv_sec * 1000000000 + realtime.tv_nsec);
    ml_sink_text(&s, ", \"offset_ns\": [["); /* [when, offset, round trip] */
    ml_sink_int(&s, (int64_t)offset_init_at);
    ml_sink_text(&s, ", ");
    ml_sink_int(&s, offset_init_ns);
    ml_sink_text(&s, ", ");
    ml_sink_int(&s, rtt_init_ns);
    ml_sink_text(&s, "]");
    if (trailer && offset_end_at) {
        ml_sink_text(&s, ", [");
        ml_sink_int(&s, (int64_t)offset_end_at);
        ml_sink_text(&s, ", ");
        ml_sink_int(&s, offset_end_ns);
        ml_sink_text(&s, ", ");
        ml_sink_int(&s, rtt_end_ns);
        ml_sink_text(&s, "]");
    }
    ml_sink_text(&s, "]");
    if (ml_trace_gated) { /* what the gate leaves out: the window on this rank's clock (ns) */
        ml_sink_text(&s, ", \"filter\": {\"window_ns\": [");
        ml_sink_int(&s, windowed ? (int64_t)window_from_ns : 0);
        ml_sink_text(&s, ", ");
        ml_sink_int(&s, windowed && window_until_ns != UINT64_MAX ? (int64_t)window_until_ns : -1);
        ml_sink_text(&s, "], \"pcontrol\": ");
        ml_sink_text(&s, ml_g.config.trace_pcontrol ? "true" : "false");
        ml_sink_text(&s, ", \"exclude\": ");
        ml_sink_json_string(&s, ml_g.config.trace_exclude);
        ml_sink_text(&s, "}");
    }
    ml_sink_text(&s, ", \"functions\": [");
    for (int f = 0; f < ML_NFUNC; f++) {
        if (f) ml_sink_text(&s, ", ");
        ml_sink_json_string(&s, ml_fn_name[f]);
    }
    ml_sink_text(&s, "], \"classes\": [");
    for (int f = 0; f < ML_NFUNC; f++) {
        if (f) ml_sink_text(&s, ", ");
        ml_sink_json_string(&s, ml_class_name[ml_fn_class[f]]);
    }
    ml_sink_text(&s, "]");
    if (trailer) {
        ml_sink_text(&s, ", \"regions\": [");
        for (uint32_t p = 0; p < ml_region_count(); p++) {
            ml_sink_text(&s, p ? ", [" : "[");
            ml_sink_int(&s, p == 0 ? -1 : (int64_t)ml_region_parent(p));
            ml_sink_text(&s, ", ");
            ml_sink_json_string(&s, ml_region_name(p));
            ml_sink_text(&s, "]");
        }
        ml_sink_text(&s, "], \"counters\": [");
        for (uint32_t c = 0; c < ml_counter_count(); c++) {
            ml_sink_text(&s, c ? ", [" : "[");
            ml_sink_json_string(&s, ml_counter_name(c));
            ml_sink_text(&s, ml_counter_kind(c) == ML_COUNTER_SUM ? ", \"sum\"]" : ", \"last\"]");
        }
        ml_sink_text(&s, "]");
        put_comms(&s, trailer == 2);
        put_late_calls(&s);
        ml_callsite_trace_json(&s); /* the call sites the events name */
        if (writer_cpu_ns >= 0) { /* what writing the trace cost this rank, on a core of its node */
            ml_sink_text(&s, ", \"writer_cpu_ns\": ");
            ml_sink_int(&s, writer_cpu_ns);
        }
        ml_sink_text(&s, ", \"threads\": ");
        ml_sink_int(&s, threads_seen);
        ml_sink_text(&s, ", \"complete\": ");
        ml_sink_text(&s, trailer == 1 ? "true" : "false");
    }
    ml_sink_text(&s, "}\n");
    ml_sink_put(&s, ML_MAGIC_TRACE_JSON_END, ML_MAGIC_LEN); /* end of the JSON block */
    ml_sink_flush(&s);
}

/* ------------------------------------------------------------------------------- lifetime */
static int open_trace(void)
{
    ml_trace_data_bytes = (size_t)ml_g.config.trace_buffer_kb * 1024;
    nbuffers = (uint32_t)ml_g.config.trace_buffers;
    const ml_comm_t *w = ml_comm_get(ml_g.world);
    ml_trace_world_uid = w ? (uint32_t)w->uid : 0;
    if (ml_stream_open(&out, ML_STREAM_TRACE, 0) != 0) return -1;
    write_json_block(ML_MAGIC_TRACE_HEAD, 0);
    if (pthread_create(&writer, NULL, writer_main, NULL) != 0) return -1;
    writer_running = 1;
    return 0;
}

/* The gate of MPILENS_TRACE_WINDOW, _PCONTROL and _EXCLUDE (checked with the settings). The window
 * is in seconds from the end of rank 0's MPI_Init on rank 0's clock: on this rank's clock, from
 * rank 0's end of MPI_Init plus this rank's offset, both measured just before. */
static void set_gate(void)
{
    double from_s, until_s;
    char err[256];
    ml_trace_window_parse(ml_g.config.trace_window, &from_s, &until_s);
    ml_trace_exclude_parse(ml_g.config.trace_exclude, ml_trace_skip, err, sizeof err);
    int excluded = 0;
    for (int f = 0; f < ML_NFUNC; f++) excluded |= ml_trace_skip[f];
    windowed = ml_g.config.trace_window[0] != 0;
    if (windowed) {
        const double origin = (double)rank0_init_end_ns + (double)offset_init_ns;
        window_from_ns = (uint64_t)(origin + from_s * 1e9 > 0 ? origin + from_s * 1e9 : 0);
        window_until_ns = isinf(until_s) ? UINT64_MAX : (uint64_t)(origin + until_s * 1e9);
        refresh_window();
    }
    ml_trace_paused = ml_g.config.trace_pcontrol != 0; /* until MPI_Pcontrol(1) */
    ml_trace_gated = windowed || excluded || ml_g.config.trace_pcontrol;
}

/* MPI_Pcontrol(level) with MPILENS_TRACE_PCONTROL: the call is written whatever the gate says, and
 * the gate opens (1) or closes (0) around it. */
int ml_trace_pcontrol(int level)
{
    if (!ml_g.config.trace_pcontrol) return 0;
    if (level == 1) __atomic_store_n(&ml_trace_paused, 0, __ATOMIC_RELAXED);
    ml_thread_t *t = ml_tls != NULL ? ml_tls : ml_thread_attach();
    if (t != NULL && t->trace.on) {
        const uint64_t now = ml_now();
        const ml_tev_t e = {.t0 = now, .t1 = now, .kind = ML_TEV_CALL, .fn = ML_FN_MPI_Pcontrol, .dst = -1, .src = -1,
                            .stag = level};
        ml_trace_encode(t, &e);
    }
    if (level == 0) __atomic_store_n(&ml_trace_paused, 1, __ATOMIC_RELAXED);
    return 1;
}

/* MPI_Init: the rank's file and the writer thread; the observers show calls to the trace. */
int ml_trace_init(void)
{
    /* collective, so every rank takes part whether its file opens or not; a rank whose file does
     * not open, or that MPILENS_TRACE_RANKS leaves out, stays in the mode (its finish takes part
     * in the second exchange) writing nothing */
    offset_init_ns = measure_offset(&rtt_init_ns);
    offset_init_at = ml_clock_ns();
    int traced = 1;
    ml_trace_ranks_parse(ml_g.config.trace_ranks, ml_g.rank, &traced); /* checked with the settings */
    if (!traced) {
        ml_log(1, "MPILENS_TRACE_RANKS=%s leaves this rank out of the trace", ml_g.config.trace_ranks);
        return 0;
    }
    set_gate();
    if (open_trace() != 0) {
        ml_log(0, "cannot write this rank's trace into %s/trace (%s); tracing is off", ml_g.outdir, strerror(errno));
        ml_stream_close(&out);
        return 0;
    }
    ml_g.observers |= ML_OBS_TRACE;
    return 0;
}

/* Give a thread its buffers, at its first MPI call. */
void ml_trace_thread(ml_thread_t *t)
{
    if (out.fd < 0) return;
    t->trace.index = __atomic_fetch_add(&threads_seen, 1, __ATOMIC_RELAXED);
    t->trace.req_base = (uint64_t)(t->trace.index + 1) << 40;
    /* below MPI_THREAD_SERIALIZED the thread that starts a receive completes it: its call event
     * can wait beside the receive's slot for the completion (ml_trace_defer), in a table its
     * receive table makes with itself (so not for a thread that has one already) */
    t->trace.defer = ml_g.thread_level < MPI_THREAD_SERIALIZED && t->rr == NULL;
    const size_t size = sizeof(ml_tbuf_t) + ml_trace_data_bytes;
    for (uint32_t i = 0; i < nbuffers && i < 8; i++) {
        void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) break;
        t->trace.bufs[i] = p;
        t->trace.bufs[i]->thread = t->trace.index;
    }
    if (t->trace.bufs[0] != NULL) t->trace.on = 1;
}

static void flush_all_direct(void)
{
    /* write what every buffer of every thread holds and nobody has written yet; a buffer the
     * writer thread is writing at this moment is left to it */
    for (ml_thread_t *t = __atomic_load_n(&ml_g.threads, __ATOMIC_ACQUIRE); t; t = t->next)
        for (uint32_t i = 0; i < nbuffers && i < 8; i++) {
            ml_tbuf_t *b = t->trace.bufs[i];
            if (b && try_hold(b)) {
                write_block(b);
                release(b);
            }
        }
}

void ml_trace_finish(void)
{
    offset_end_ns = measure_offset(&rtt_end_ns); /* collective: also where this rank writes nothing */
    offset_end_at = ml_clock_ns();
    if (out.fd < 0) return;
    for (ml_thread_t *t = __atomic_load_n(&ml_g.threads, __ATOMIC_ACQUIRE); t; t = t->next)
        if (t->trace.cur && (uint32_t)t->trace.cur->committed) {
            enqueue(t->trace.cur);
            t->trace.cur = NULL;
        }
    if (writer_running) {
        pthread_mutex_lock(&lock);
        stopping = 1;
        pthread_cond_signal(&queued);
        pthread_mutex_unlock(&lock);
        pthread_join(writer, NULL);
        writer_running = 0;
    }
    flush_all_direct();
    write_json_block(ML_MAGIC_TRACE_TRAILER, 1);
    ml_stream_close(&out);
    for (ml_thread_t *t = __atomic_load_n(&ml_g.threads, __ATOMIC_ACQUIRE); t; t = t->next) {
        t->trace.on = 0;
        ml_thread_lean_refresh(t); /* its copy of the lean path writes no more events */
    }
}

/* The process is ending abnormally (signal, exit, MPI_Abort): write what is in memory. */
void ml_trace_emergency(int reason)
{
    (void)reason;
    if (out.fd < 0) return;
    flush_all_direct();
    write_json_block(ML_MAGIC_TRACE_TRAILER, 2);
    out.fd = -1;
}

/* ------------------------------------------------------------------------------- the profile's events
 * The table's event hooks (modes.c): each for the threads that trace. */
void ml_trace_on_region(ml_thread_t *t, int begin, uint32_t path, const char *name)
{
    (void)name;
    if (ML_UNLIKELY(t->trace.on)) ml_trace_region(t, begin, path);
}

void ml_trace_on_counter(ml_thread_t *t, uint32_t id, double value)
{
    if (ML_UNLIKELY(t->trace.on)) ml_trace_counter(t, id, value);
}

void ml_trace_on_comm_freed(MPI_Comm comm, const ml_comm_t *c) { ml_trace_comm_seen(comm, c, NULL); }

void ml_trace_on_req_done(ml_thread_t *t, const ml_req_t *e, const MPI_Status *st, int64_t sent, int64_t recv)
{
    if (t->trace.on && sent >= 0) ml_trace_done(t, e, st, sent, recv); /* sent < 0: nothing moved */
}
