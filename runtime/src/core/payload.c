/* One process's measurements as a compact binary record ("payload"): what each rank merges at
 * MPI_Finalize, and what a rank writes to ranks/rank-NNNNNN.partial when it ends without
 * MPI_Finalize or to pcontrol/NNNN/ at a snapshot. Its layout (the ml_payload_* records, in the
 * order of the `payload` entry) is runtime/spec/rundir.yaml's, documented in docs/run-directory.md;
 * merge.c reads it back, here at MPI_Finalize and in mpilens-merge for partial runs and snapshots.
 *
 * With MPILENS_TIME_SAMPLE > 1, ns (per function, per size bin and mpi_ns) are estimates made
 * here from the timed calls, `timed` says how many calls were timed (= calls otherwise) and the
 * *_se_ns are the standard errors of the estimates (0 otherwise).
 *
 * Writing it allocates nothing and calls only write(2), so the signal handler can use it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "json.h"
#include "ml.h"
#include "ml_callsite.h"
#include "ml_modes.h"
#include "ml_output.h"
#include "ml_files.h"
#include "ml_stats.h"

/* The threads whose statistics count: not those MPI_Pcontrol(2) reset that have not caught up. A
 * thread's rows of a region path it never entered (rows_used) are zeros and are not read: in the
 * statistics file they may not even be allocated (stats.c), and reading them would back them. */
#define EACH_CURRENT(type, t, threads) for (type *t = (threads); t; t = t->next) if (ml_thread_stale(t)) {} else


void ml_sink_flush(ml_sink_t *s)
{
    if (s->stream != NULL) {
        if (s->len && ml_stream_write(s->stream, s->data, s->len) != 0) s->failed = 1;
        s->len = 0;
        return;
    }
    if (s->fd < 0 || s->len == 0) return;
    size_t off = 0;
    while (off < s->len) {
        const ssize_t n = write(s->fd, s->data + off, s->len - off);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            s->failed = 1;
            break;
        }
        off += (size_t)n;
    }
    s->len = 0;
}

void ml_sink_put(ml_sink_t *s, const void *p, size_t n)
{
    if (s->failed) return;
    if (s->fd >= 0 || s->stream != NULL) {
        while (n > 0) {
            if (s->len == s->cap) ml_sink_flush(s);
            if (s->failed) return;
            const size_t k = n < s->cap - s->len ? n : s->cap - s->len;
            memcpy(s->data + s->len, p, k);
            s->len += k;
            p = (const char *)p + k;
            n -= k;
        }
        return;
    }
    if (s->len + n > s->cap) {
        size_t cap = s->cap ? s->cap : 4096;
        while (cap < s->len + n) cap *= 2;
        char *d = realloc(s->data, cap);
        if (d == NULL) {
            s->failed = 1;
            return;
        }
        s->data = d;
        s->cap = cap;
    }
    memcpy(s->data + s->len, p, n);
    s->len += n;
}

void ml_sink_text(ml_sink_t *s, const char *text) { ml_sink_put(s, text, strlen(text)); }

void ml_sink_uint(ml_sink_t *s, uint64_t v)
{
    char buf[24];
    int n = 0;
    do {
        buf[sizeof buf - 1 - n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    ml_sink_put(s, buf + sizeof buf - n, (size_t)n);
}

void ml_sink_int(ml_sink_t *s, int64_t v)
{
    if (v < 0) ml_sink_put(s, "-", 1);
    ml_sink_uint(s, v < 0 ? (uint64_t)(-(v + 1)) + 1 : (uint64_t)v);
}

void ml_sink_json_string(ml_sink_t *s, const char *text)
{
    ml_sink_put(s, "\"", 1);
    const unsigned char *p = (const unsigned char *)text;
    size_t left = strlen(text);
    while (left > 0) { /* as ml_json_strn: any bytes, valid UTF-8 out (json.h) */
        char out[16];
        size_t len;
        const size_t used = ml_json_escape_next(p, left, out, &len);
        ml_sink_put(s, out, len);
        p += used;
        left -= used;
    }
    ml_sink_put(s, "\"", 1);
}

static void put_u16(ml_sink_t *s, uint16_t v) { ml_sink_put(s, &v, 2); }
static void put_u32(ml_sink_t *s, uint32_t v) { ml_sink_put(s, &v, 4); }
#define put_record(s, r) ml_sink_put((s), &(r), sizeof(r))
static void put_str(ml_sink_t *s, const char *str)
{
    const size_t n = strnlen(str, 65535);
    put_u16(s, (uint16_t)n);
    ml_sink_put(s, str, n);
}

/* MPILENS_TIME_SAMPLE > 1: the time of all the calls counted in x, from the timed ones. The first
 * ML_SAMPLE_WARMUP calls were all timed and count as measured; the time of the later calls is
 * their number times the mean of the timed ones among them (each was timed with the same
 * probability). Functions that are always timed come out exact. */
static uint64_t estimated_ticks(const ml_fstat_t *x)
{
    if (ml_g.config.time_sample <= 1 || x->calls <= ML_SAMPLE_WARMUP) return x->ticks;
    const uint64_t later = x->calls - ML_SAMPLE_WARMUP, warm_ticks = x->ticks - x->sampled_ticks;
    if (x->sampled == later) return x->ticks;
    if (x->sampled == 0) /* too few later calls to have drawn one: the mean of the first ones */
        return warm_ticks + (uint64_t)((double)warm_ticks / ML_SAMPLE_WARMUP * (double)later);
    return warm_ticks + (uint64_t)((double)x->sampled_ticks / (double)x->sampled * (double)later);
}

/* The variance (ticks^2) of estimated_ticks(x): the later calls are a random sample of n of
 * them, so it is later^2 (1 - n/later) s^2 / n with s^2 the variance of the timed durations.
 * Below two timed calls s^2 is unknown: the estimate of the later calls counts as uncertain by
 * its whole size. */
static double estimate_variance(const ml_fstat_t *x)
{
    if (ml_g.config.time_sample <= 1 || x->calls <= ML_SAMPLE_WARMUP) return 0;
    const double later = (double)(x->calls - ML_SAMPLE_WARMUP), n = (double)x->sampled;
    if (n >= later) return 0;
    if (n < 2) {
        const double mean = n > 0 ? (double)x->sampled_ticks : (double)(x->ticks - x->sampled_ticks) / ML_SAMPLE_WARMUP;
        return later * mean * later * mean;
    }
    const double mean = (double)x->sampled_ticks / n;
    double s2 = (x->sampled_sq - n * mean * mean) / (n - 1);
    if (s2 < 0) s2 = 0; /* rounding */
    return later * later * (1 - n / later) * s2 / n;
}

static uint64_t sqrt_ticks(double var) { return var > 0 ? (uint64_t)__builtin_sqrt(var) : 0; }

static uint64_t timed_calls(const ml_fstat_t *x)
{
    if (ml_g.config.time_sample <= 1) return x->calls;
    return (x->calls < ML_SAMPLE_WARMUP ? x->calls : ML_SAMPLE_WARMUP) + x->sampled;
}

/* Estimated over timed ticks of function f in thread t (1 without sampling): scales the time of
 * its message-size bins and of the thread's time in MPI. */
static double estimate_ratio(const ml_thread_t *t, int f, uint32_t npaths)
{
    uint64_t est = 0, ticks = 0;
    for (uint32_t p = 0; p < npaths; p++) {
        if (!t->rows_used[p]) continue;
        const ml_fstat_t *x = &t->blocks[(size_t)p * ML_NFUNC + f];
        est += estimated_ticks(x);
        ticks += x->ticks;
    }
    return ticks ? (double)est / (double)ticks : 1.0;
}

static int fstat_used(const ml_thread_t *threads, uint32_t p, int f)
{
    EACH_CURRENT(const ml_thread_t, t, threads) {
        if (!t->rows_used[p]) continue;
        const ml_fstat_t *x = &t->blocks[(size_t)p * ML_NFUNC + f];
        /* bytes without calls: a request started here and completed in another region */
        if (x->calls || x->sent || x->recv) return 1;
    }
    return 0;
}

static int counter_used(const ml_thread_t *threads, uint32_t p, uint32_t id)
{
    EACH_CURRENT(const ml_thread_t, t, threads)
        if (t->rows_used[p] && t->ucounts[(size_t)p * ML_MAX_COUNTERS + id].updates) return 1;
    return 0;
}

static int path_used(const ml_thread_t *threads, uint32_t p)
{
    for (uint32_t id = 0; id < ml_counter_count(); id++)
        if (counter_used(threads, p, id)) return 1;
    EACH_CURRENT(const ml_thread_t, t, threads) {
        if (t->rows_used[p] && t->rstats[p].visits) return 1;
        for (int f = 0; f < ML_NFUNC; f++)
            if (fstat_used(t, p, f)) return 1;
    }
    return 0;
}

/* The total length is patched in once known: in place for memory sinks, with pwrite(2) for
 * files, so neither needs a second pass. */
void ml_payload_write(ml_sink_t *s, int complete, int reason, int signo)
{
    const size_t start = s->fd < 0 ? s->len : 0;
    const uint64_t now = ml_now();
    ml_thread_t *const threads = __atomic_load_n(&ml_g.threads, __ATOMIC_ACQUIRE);
    uint32_t nthreads = 0;
    const uint32_t npaths = ml_region_count();
    uint64_t mpi_ticks = 0, dropped_req = 0, mismatch = 0, unknown = 0;
    double mpi_var = 0;
    for (ml_thread_t *t = threads; t; t = t->next) {
        nthreads++;
        if (ml_thread_stale(t)) continue; /* reset by MPI_Pcontrol(2), not caught up yet */
        /* time in MPI: the sum over the functions, here rather than once more per call */
        for (uint32_t p = 0; p < npaths; p++)
            for (int f = 0; f < ML_NFUNC && t->rows_used[p]; f++) {
                const ml_fstat_t *x = &t->blocks[(size_t)p * ML_NFUNC + f];
                if (x->calls) {
                    mpi_ticks += estimated_ticks(x);
                    mpi_var += estimate_variance(x);
                }
            }
        dropped_req += t->dropped_requests;
        mismatch += t->region_mismatch;
        unknown += t->recv_unknown;
    }

    ml_payload_head_t head = {
        .total_length = 0, /* patched below */
        .rank = (uint32_t)ml_g.rank,
        .nranks = (uint32_t)ml_g.size,
        .complete = (uint32_t)complete,
        .reason = (uint32_t)reason,
        .signo = (uint32_t)signo,
        .nthreads = nthreads,
        .wall_ns = ml_ticks_to_ns(now - ml_g.t_init_end),
        .mpi_ns = ml_ticks_to_ns(mpi_ticks),
        .mpi_se_ns = ml_ticks_to_ns(sqrt_ticks(mpi_var)),
        .init_ns = ml_ticks_to_ns(ml_g.t_init_end - ml_g.t_init_begin),
        .dropped_requests = dropped_req,
        .dropped_regions = ml_g.dropped_regions,
        .region_mismatch = mismatch,
        .requests_outstanding = ml_requests_outstanding(),
        .recv_unknown = unknown,
    };
    memcpy(head.magic, ML_MAGIC_PAYLOAD, ML_MAGIC_LEN);
    put_record(s, head);
    char host[MPI_MAX_PROCESSOR_NAME] = {0};
    if (gethostname(host, sizeof host - 1) != 0) host[0] = 0;
    put_str(s, host);

    /* regions: every path a region was opened on (one still open has no visit yet), merged over
     * threads; the root path 0 is implicit, "(overflow)" only appears when used */
    uint32_t n = 0;
    for (uint32_t p = 1; p < npaths; p++) n += p != 1 || path_used(threads, p);
    put_u32(s, n);
    for (uint32_t p = 1; p < npaths; p++) {
        if (p == 1 && !path_used(threads, p)) continue;
        uint64_t v = 0, ticks = 0;
        EACH_CURRENT(ml_thread_t, t, threads) {
            if (!t->rows_used[p]) continue;
            v += t->rstats[p].visits;
            ticks += t->rstats[p].ticks;
        }
        const ml_payload_region_t r = {p, ml_region_parent(p), v, ml_ticks_to_ns(ticks)};
        put_record(s, r);
        put_str(s, ml_region_name(p));
    }

    /* functions called at least once (in any region) */
    n = 0;
    for (int f = 0; f < ML_NFUNC; f++) {
        int used = 0;
        for (uint32_t p = 0; p < npaths && !used; p++) used = fstat_used(threads, p, f);
        n += used;
    }
    put_u32(s, n);
    for (int f = 0; f < ML_NFUNC; f++) {
        int used = 0;
        for (uint32_t p = 0; p < npaths && !used; p++) used = fstat_used(threads, p, f);
        if (!used) continue;
        const ml_payload_function_t r = {(uint16_t)f, ml_fn_class[f]};
        put_record(s, r);
        put_str(s, ml_fn_name[f]);
    }

    /* per region path and function */
    n = 0;
    for (uint32_t p = 0; p < npaths; p++)
        for (int f = 0; f < ML_NFUNC; f++) n += fstat_used(threads, p, f);
    put_u32(s, n);
    for (uint32_t p = 0; p < npaths; p++)
        for (int f = 0; f < ML_NFUNC; f++) {
            ml_fstat_t m = {0};
            uint64_t timed = 0;
            double var = 0;
            EACH_CURRENT(ml_thread_t, t, threads) {
                if (!t->rows_used[p]) continue;
                const ml_fstat_t *x = &t->blocks[(size_t)p * ML_NFUNC + f];
                if (x->calls == 0) {
                    m.sent += x->sent; /* bytes of requests completed in another thread */
                    m.recv += x->recv;
                    continue;
                }
                if (x->min_inv > m.min_inv) m.min_inv = x->min_inv;
                if (x->max > m.max) m.max = x->max;
                m.calls += x->calls;
                m.ticks += estimated_ticks(x);
                timed += timed_calls(x);
                var += estimate_variance(x);
                m.sent += x->sent;
                m.recv += x->recv;
            }
            if (m.calls == 0 && m.sent == 0 && m.recv == 0) continue;
            const ml_payload_stat_t r = {p, (uint16_t)f, m.calls, ml_ticks_to_ns(m.ticks), ml_ticks_to_ns(m.min_inv ? ~m.min_inv : 0),
                                         ml_ticks_to_ns(m.max), timed, ml_ticks_to_ns(sqrt_ticks(var)), m.sent, m.recv};
            put_record(s, r);
        }

    /* message sizes */
    n = 0;
    for (int f = 0; f < ML_NFUNC; f++)
        for (int b = 0; b < ML_NBINS; b++) {
            uint64_t c = 0;
            EACH_CURRENT(ml_thread_t, t, threads) c += t->hist[f * ML_NBINS + b].calls;
            n += c > 0;
        }
    put_u32(s, n);
    for (int f = 0; f < ML_NFUNC; f++)
        for (int b = 0; b < ML_NBINS; b++) {
            uint64_t c = 0, ticks = 0;
            EACH_CURRENT(ml_thread_t, t, threads) {
                const ml_hbin_t *h = &t->hist[f * ML_NBINS + b];
                c += h->calls;
                if (ml_g.config.time_sample > 1 && h->calls)
                    ticks += (uint64_t)((double)h->ticks * estimate_ratio(t, f, npaths));
                else
                    ticks += h->ticks;
            }
            if (c == 0) continue;
            const ml_payload_size_t r = {(uint16_t)f, (uint8_t)b, c, ml_ticks_to_ns(ticks)};
            put_record(s, r);
        }

    /* point-to-point sends by destination */
    n = 0;
    for (int r = 0; r < ml_g.size; r++) {
        uint64_t m = 0;
        EACH_CURRENT(ml_thread_t, t, threads) m += t->matrix[r].messages;
        n += m > 0;
    }
    put_u32(s, n);
    for (int r = 0; r < ml_g.size; r++) {
        uint64_t m = 0;
        int64_t bytes = 0;
        EACH_CURRENT(ml_thread_t, t, threads) {
            m += t->matrix[r].messages;
            bytes += t->matrix[r].bytes;
        }
        if (m == 0) continue;
        const ml_payload_peer_t rec = {(uint32_t)r, m, bytes};
        put_record(s, rec);
    }
    /* user counters: sums add up over threads; "set" counters keep the latest value */
    const uint32_t ncounters = ml_counter_count();
    put_u32(s, ncounters);
    for (uint32_t id = 0; id < ncounters; id++) {
        const ml_payload_counter_name_t r = {(uint16_t)id, (uint8_t)ml_counter_kind(id)};
        put_record(s, r);
        put_str(s, ml_counter_name(id));
    }
    n = 0;
    for (uint32_t p = 0; p < npaths; p++)
        for (uint32_t id = 0; id < ncounters; id++) n += counter_used(threads, p, id);
    put_u32(s, n);
    for (uint32_t p = 0; p < npaths; p++)
        for (uint32_t id = 0; id < ncounters; id++) {
            if (!counter_used(threads, p, id)) continue;
            ml_ucount_t m = {0, 0, 0};
            EACH_CURRENT(ml_thread_t, t, threads) {
                if (!t->rows_used[p]) continue;
                const ml_ucount_t *u = &t->ucounts[(size_t)p * ML_MAX_COUNTERS + id];
                if (u->updates == 0) continue;
                if (ml_counter_kind(id) == ML_COUNTER_SUM)
                    m.value += u->value;
                else if (u->when >= m.when)
                    m.value = u->value;
                m.updates += u->updates;
                if (u->when > m.when) m.when = u->when;
            }
            const ml_payload_counter_t r = {p, (uint16_t)id, m.value, m.updates, ml_ticks_to_ns(m.when - ml_g.t_init_begin)};
            put_record(s, r);
        }
    ml_callsite_payload(s, threads);
    ml_payload_tail_t tail = {0};
    ML_HOOKS(payload_tail, &tail); /* compute intervals' counts */
    memcpy(tail.end, ML_MAGIC_PAYLOAD_END, ML_MAGIC_LEN);
    put_record(s, tail);

    if (s->fd < 0) {
        if (!s->failed) {
            const uint64_t len = s->len - start;
            memcpy(s->data + start + offsetof(ml_payload_head_t, total_length), &len, 8);
        }
    } else {
        ml_sink_flush(s);
        const uint64_t len = (uint64_t)lseek(s->fd, 0, SEEK_CUR);
        if (pwrite(s->fd, &len, 8, offsetof(ml_payload_head_t, total_length)) != 8) s->failed = 1;
    }
}

/* This rank's statistics so far as a file, written under a temporary name and renamed when whole:
 * a rank killed while writing (MPICH's launcher sends SIGKILL soon after SIGTERM) leaves no file
 * rather than a damaged one. No allocation: it also runs in signal handlers. */
int ml_payload_to_file(const char *tmp, const char *path, int kind, unsigned item, int reason, int signo)
{
    char buffer[1 << 14];
    ml_sink_t s = {buffer, 0, sizeof buffer, ml_file_create(tmp, O_WRONLY, 0666), 0, NULL};
    if (s.fd < 0) return -1;
    ml_payload_write(&s, 0, reason, signo);
    close(s.fd);
    if (s.failed) {
        ml_file_unlink(tmp);
        return -1;
    }
    return ml_stream_commit(kind, item, tmp, path) != 0 ? -1 : 0;
}

void ml_partial_dump(int reason, int signo)
{
    static int done;
    if (!__atomic_load_n(&ml_g.ready, __ATOMIC_ACQUIRE) || ml_g.finalized) return;
    if (__atomic_exchange_n(&done, 1, __ATOMIC_ACQ_REL)) return;
    ml_set_active(0);
    /* whole in the partial file: the statistics file is not needed any more (but for a mode's area) */
    if (ml_payload_to_file(ml_g.partial_tmp_path, ml_g.partial_path, ML_STREAM_PARTIAL, 0, reason, signo) == 0)
        ml_stats_partial_written();
    ml_modes_emergency(reason); /* the table of modes: trace, memory, ... */
}
