/* Compute intervals of a bulk-synchronous code (MPILENS_INTERVALS): for each synchronizing
 * collective on a communicator of all ranks, the time since the previous one ended (this rank's
 * compute between them) and the time inside it. The per-interval maximum over ranks is what the
 * variability models of `mpilens model variability` fit.
 *
 * ranks/intervals-NNNNNN.bin: an ml_intervals_header_t, then count ml_interval_t (compute seconds,
 * collective seconds) in call order (runtime/spec/rundir.yaml, file `intervals`). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ml.h"
#include "ml_files.h"
#include "ml_intervals.h"

static uint64_t *ticks; /* [capacity][2] */
static uint64_t capacity, recorded, dropped, last_exit;

int ml_intervals_init(size_t n)
{
    void *p = mmap(NULL, n * 2 * sizeof(uint64_t), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (p == MAP_FAILED) return -1;
    ticks = p;
    capacity = n;
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
        return;
    }
    ticks[2 * i] = t0 > begin ? t0 - begin : 0;
    ticks[2 * i + 1] = t1 - t0;
}

int ml_intervals_write(void)
{
    ml_whole_t out;
    FILE *f = ml_whole_open(&out, ML_STREAM_INTERVALS, 0);
    if (f == NULL) return -1;
    const uint64_t n = ml_intervals_recorded();
    ml_intervals_header_t head = {.rank = (uint32_t)ml_g.rank, .nranks = (uint32_t)ml_g.size, .count = n,
                                  .dropped = dropped};
    memcpy(head.magic, ML_MAGIC_INTERVALS, ML_MAGIC_LEN);
    fwrite(&head, sizeof head, 1, f);
    for (uint64_t i = 0; i < n; i++) {
        const ml_interval_t x = {ml_ticks_to_ns(ticks[2 * i]) * 1e-9, ml_ticks_to_ns(ticks[2 * i + 1]) * 1e-9};
        fwrite(&x, sizeof x, 1, f);
    }
    return ml_whole_close(&out);
}

/* ------------------------------------------------------------------------------- the table of modes */
int ml_intervals_wanted(void) { return ml_g.config.intervals; }

int ml_intervals_start(void)
{
    if (ml_intervals_init((size_t)ml_g.config.max_intervals) != 0) {
        ml_log(0, "no memory for MPILENS_MAX_INTERVALS=%ld intervals; the intervals are not recorded",
               ml_g.config.max_intervals);
        return -1;
    }
    ml_g.intervals = 1;
    return 0;
}

void ml_intervals_finish(void)
{
    if (ml_intervals_write() != 0) ml_log(0, "could not write this rank's intervals file (%s)", strerror(errno));
}

/* the table's payload_tail hook (modes.c): the counts of intervals in the rank's payload */
void ml_intervals_payload(ml_payload_tail_t *tail)
{
    if (!ml_g.intervals) return;
    tail->intervals_recorded = ml_intervals_recorded();
    tail->intervals_dropped = ml_intervals_dropped();
}
