/* Statistics that outlive the process (internal header; runtime/src/core/stats.c): each thread's
 * statistics are a section of ranks/rank-NNNNNN.stats mapped shared, names appended to
 * ranks/rank-NNNNNN.names. Nothing here runs per MPI call. */
#ifndef ML_STATS_H
#define ML_STATS_H
#include <stddef.h>
#include <stdint.h>

struct ml_thread;
/* At MPI_Init, before any thread attaches: where the parts of a section lie (site_bytes: the call
 * sites' share, ml_callsite_thread_bytes). */
void ml_stats_layout(size_t site_bytes);
/* At MPI_Init, once the run directory is open and the clock point at MPI_Init's end is taken:
 * create the files (tick_begin, ns_begin: the clock point at MPI_Init's entry). 0, or -1 when
 * the rank's statistics are kept in memory only (said once). */
int ml_stats_open(uint64_t tick_begin, uint64_t ns_begin);
/* A new thread's section (zeroed): in the file (*kept 1, *offset its place) or in anonymous
 * memory; NULL when there is no memory. The ml_thread_t lies ml_stats_thread_offset() in. */
char *ml_stats_section(uint64_t *offset, int *kept);
size_t ml_stats_thread_offset(void);
enum { ML_STATS_HIST, ML_STATS_MATRIX, ML_STATS_SITES, ML_STATS_BLOCKS, ML_STATS_RSTATS, ML_STATS_UCOUNTS,
       ML_STATS_MODE };
/* where a part of t's section starts (ML_STATS_MODE: NULL when no mode asked for an area) */
char *ml_stats_part(struct ml_thread *t, int which);
/* t's section header written (its call sites set up first) */
void ml_stats_section_ready(struct ml_thread *t);
/* t is about to use region path `path` for the first time: its rows reserved in the file */
void ml_stats_rows(struct ml_thread *t, uint32_t path);
/* MPI_Pcontrol(2): t's statistics zeroed (by t) */
void ml_stats_zero(struct ml_thread *t);
void ml_stats_reset_gen(uint32_t gen);
void ml_stats_dropped_regions(uint64_t n);
/* one name record (ML_STATS_NAME_*), appended; under the caller's lock */
void ml_stats_name(int kind, uint32_t id, uint32_t aux, uint64_t aux64, const char *name);
/* the rank's measurements are whole in the profile: the files are removed */
void ml_stats_remove(void);
/* the bytes of the file system the rank's statistics files take */
uint64_t ml_stats_allocated(void);
/* their room given back now (the statistics go on in memory), for a profile the file system had
 * no room for */
void ml_stats_release(void);
/* the rank's partial profile is written: the files are removed, unless a mode's area keeps them */
void ml_stats_partial_written(void);
/* An area of `bytes` in every thread's section for a mode's own counts, kept like the profile's
 * (faulted in when the section is made, zero at first): asked for before MPI_Init (a load hook) */
void ml_stats_thread_area(size_t bytes);
/* MPI_Finalize began (measuring stopped): the statistics file says so */
void ml_stats_finalizing(void);
/* An area for I/O per file's records (rec_bytes each) and accesses in the file, sized by
 * MPILENS_IO_MAX_FILES and MPILENS_IO_ACCESSES: asked for before MPI_Init (io's load hook) */
void ml_stats_io_area(size_t rec_bytes);
/* io.c's records and accesses in the file (at ml_io_start): 0 and the places, with the counters
 * of accesses and of files dropped it must keep there; -1 when they are not in the file */
int ml_stats_io_map(void **files, void **accesses, uint64_t **count_accesses, uint64_t **count_dropped);
/* [from, to) of the MPI-IO area (bytes from its start) reserved before io.c writes it */
void ml_stats_io_reserve(size_t from, size_t to);
/* An area for the compute intervals (MPILENS_INTERVALS): max pairs of u64, asked for before
 * MPI_Init (the intervals' load hook) */
void ml_stats_intervals_area(size_t max);
/* the intervals' pairs in the file (at their start), the first `first` bytes reserved, with the
 * counters of pairs written and dropped it must keep there; NULL when they are not in the file.
 * *kept 0: the file system could not hold even the first bytes (the area is in memory) */
uint64_t *ml_stats_intervals_map(size_t first, uint64_t **count, uint64_t **dropped, int *kept);
/* [from, to) of the intervals area (bytes from its start) reserved before it is written; -1 when
 * the file system cannot hold it: the area goes on in memory at the same address, the file says
 * since when */
int ml_stats_intervals_reserve(size_t from, size_t to);
/* in a child made by fork(): the sections mapped privately */
void ml_stats_after_fork(void);
#endif
