/* Compute intervals of a bulk-synchronous code (MPILENS_INTERVALS): for each synchronizing
 * collective on a communicator of all ranks, the time since the previous one ended (this rank's
 * compute between them) and the time inside it. The per-interval maximum over ranks is what the
 * variability models of `mpilens model variability` fit.
 *
 * ranks/intervals-NNNNNN.bin: an ml_intervals_header_t, then count ml_interval_t (compute seconds,
 * collective seconds) in call order (runtime/spec/rundir.yaml, file `intervals`), written at
 * MPI_Finalize. Until then the pairs (in ticks) live in the rank's statistics file, mapped shared
 * (its intervals area, stats_head.intervals_*), so that a rank killed before MPI_Finalize keeps
 * them: `mpilens` reads them there (python/mpilens/intervals.py). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ml.h"
#include "ml_files.h"
#include "ml_intervals.h"
#include "ml_output.h"
#include "ml_stats.h"

#define CHUNK 4096u /* pairs reserved in the statistics file at a time (64 KiB) */

static uint64_t *ticks; /* [capacity][2] */
static uint64_t capacity, recorded, dropped, last_exit;
/* in the statistics file: the counts it keeps beside the pairs; in_file 0 once it cannot hold more */
static uint64_t *file_count, *file_dropped;
static int in_file;

int ml_intervals_init(size_t n)
{
    capacity = n;
    ticks = ml_stats_intervals_map(CHUNK * 2 * sizeof(uint64_t), &file_count, &file_dropped, &in_file);
    if (ticks != NULL) return 0;
    void *p = mmap(NULL, n * 2 * sizeof(uint64_t), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (p == MAP_FAILED) return -1;
    ticks = p;
    return 0;
}

uint64_t ml_intervals_recorded(void) { return recorded < capacity ? recorded : capacity; }
uint64_t ml_intervals_dropped(void) { return dropped; }

void ml_interval(MPI_Comm comm, uint64_t t0, uint64_t t1)
{
    const ml_comm_t *c = ml_comm_get(comm);
    if (c == NULL || c->is_inter || c->size != ml_g.size) return;
    const uint64_t begin = last_exit ? last_exit : ml_g.t_init_end;
    last_exit = t1;
    const uint64_t i = __atomic_fetch_add(&recorded, 1, __ATOMIC_RELAXED);
    if (i >= capacity) {
        dropped++;
        if (in_file) *file_dropped = dropped;
        return;
    }
    if (in_file && i % CHUNK == 0 && i > 0) { /* the next chunk's blocks, before its first store */
        if (ml_stats_intervals_reserve(i * 2 * sizeof(uint64_t), (i + CHUNK) * 2 * sizeof(uint64_t)) != 0)
            in_file = 0; /* the pairs go on in memory, at the same address */
        last_exit = ml_now(); /* the reservation is the tool's time, not the next interval's compute */
    }
    ticks[2 * i] = t0 > begin ? t0 - begin : 0;
    ticks[2 * i + 1] = t1 - t0;
    if (in_file) __atomic_store_n(file_count, i + 1, __ATOMIC_RELEASE); /* the pair is whole */
}

static char out_path[4300];

/* The intervals file, written whole or not at all (a temporary name, then renamed or put into the
 * group's container). Async-signal-safe (no stdio, no allocation): also the end of a rank that
 * ends without MPI_Finalize after its partial profile, whose statistics file is then removed. */
int ml_intervals_write(void)
{
    char tmp[4340];
    if (!out_path[0] || ml_file_temp_name(tmp, sizeof tmp, out_path) != 0) return -1;
    static char buffer[8192]; /* not on the stack of a signal handler */
    ml_sink_t o = {buffer, 0, sizeof buffer, ml_file_create(tmp, O_WRONLY, 0644), 0, NULL};
    if (o.fd < 0) return -1;
    const uint64_t n = ml_intervals_recorded();
    ml_intervals_header_t head = {.rank = (uint32_t)ml_g.rank, .nranks = (uint32_t)ml_g.size, .count = n,
                                  .dropped = dropped};
    memcpy(head.magic, ML_MAGIC_INTERVALS, ML_MAGIC_LEN);
    ml_sink_put(&o, &head, sizeof head);
    /* the rate once: in a rank that ends early it is measured anew at each ask */
    const double s_per_tick = ml_clock_is_tsc ? 1e-9 / ml_ticks_per_ns() : 1e-9;
    for (uint64_t i = 0; i < n; i++) {
        const ml_interval_t x = {(double)ticks[2 * i] * s_per_tick, (double)ticks[2 * i + 1] * s_per_tick};
        ml_sink_put(&o, &x, sizeof x);
    }
    ml_sink_flush(&o);
    if (close(o.fd) != 0 || o.failed) {
        ml_file_unlink(tmp);
        return -1;
    }
    return ml_stream_commit(ML_STREAM_INTERVALS, 0, tmp, out_path);
}

/* ------------------------------------------------------------------------------- the table of modes */
int ml_intervals_wanted(void) { return ml_g.config.intervals; }

/* the library is loaded with MPILENS_INTERVALS on: room for the pairs in the statistics file */
int ml_intervals_load(char *err, size_t errlen)
{
    (void)err, (void)errlen;
    ml_stats_intervals_area((size_t)ml_g.config.max_intervals);
    return 0;
}

int ml_intervals_start(void)
{
    if (ml_intervals_init((size_t)ml_g.config.max_intervals) != 0) {
        ml_log(0, "no memory for MPILENS_MAX_INTERVALS=%ld intervals; the intervals are not recorded",
               ml_g.config.max_intervals);
        return -1;
    }
    snprintf(out_path, sizeof out_path, "%s/" ML_PATH_INTERVALS, ml_g.outdir, ml_g.rank);
    ml_g.intervals = 1;
    return 0;
}

void ml_intervals_finish(void)
{
    if (ml_intervals_write() != 0)
        ml_log(0, "could not write this rank's intervals file (%s)", strerror(errno));
}

/* the rank ends without MPI_Finalize (a signal it handles, exit, MPI_Abort): the intervals so far */
void ml_intervals_emergency(int reason)
{
    (void)reason; /* the file is the same whatever ended the rank */
    if (!ml_g.intervals) return;
    ml_g.intervals = 0;
    if (ml_intervals_write() != 0) ml_log_safe(0, "could not write this rank's intervals file", NULL);
}

/* the table's payload_tail hook (modes.c): the counts of intervals in the rank's payload */
void ml_intervals_payload(ml_payload_tail_t *tail)
{
    if (!ml_g.intervals) return;
    tail->intervals_recorded = ml_intervals_recorded();
    tail->intervals_dropped = ml_intervals_dropped();
}
