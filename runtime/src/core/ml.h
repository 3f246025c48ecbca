/* The core of the mpilens runtime: the profile's hot path (internal header, never installed).
 *
 * The runtime is loaded into every MPI process (LD_PRELOAD). Its hot path is the body of the
 * generated wrappers: ml_enter(), ml_now(), the MPI call, ml_now(), ml_leave*(). That path takes
 * no lock, allocates nothing and makes no system call: every thread updates its own statistics,
 * which are merged once, at MPI_Finalize.
 *
 * The other headers of core/: ml_alloc.h (the tool's own allocations, included here), ml_modes.h
 * (the table of modes: their lifecycle and event hooks), ml_output.h (payload, profile.json,
 * meta.json), ml_stats.h, ml_files.h, ml_callsite.h. The modes' headers are in modes/<mode>/ and
 * the wrappers' in calls/ (ml_observe.h: the per-call dispatch to the modes); no file of core/
 * includes a mode's header. A mode's per-thread state is a group of ml_thread_t below, a pointer
 * the core never follows; trace mode's is embedded from modes/trace/trace_thread.h (types only),
 * which the inlined trace events read on the hot path.
 */
#ifndef ML_H
#define ML_H

#include <mpi.h>
#include <stdint.h>
#include <stddef.h>
#include <stdio.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#include "ml_alloc.h"
#include "ml_config.h"
#include "ml_functions.h"
#include "ml_rundir.h" /* the run directory's layouts, generated from runtime/spec/rundir.yaml */

/* The MPI-5 standard ABI's C header has no Fortran interoperability (no MPI_Fint, no f2c
 * functions: Fortran bindings sit on the ABI, not in it), so a runtime built with it wraps the C
 * functions only. */
#if defined(MPI_ABI_VERSION) && MPI_ABI_VERSION >= 1
#define ML_STANDARD_ABI 1
#define ML_FORTRAN 0
#else
#define ML_STANDARD_ABI 0
#define ML_FORTRAN 1
#endif
#include "trace_thread.h" /* trace mode's per-thread state, embedded below (types only) */

#define ML_LIKELY(x) __builtin_expect(!!(x), 1)
#define ML_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define ML_EXPORT __attribute__((visibility("default")))
/* The hot path: GCC does not inline these on its own into hundreds of wrappers of one file. */
#define ML_HOT static inline __attribute__((always_inline))

/* The hash of every table the runtime keys by a handle, an address or a number: the key times
 * 2^64/φ, whose top bits pick the slot. Handles and addresses differ in few low bits (objects at a
 * fixed stride, aligned allocations), which the multiplication spreads into the top ones. */
ML_HOT uint64_t ml_hash(uint64_t k) { return k * 0x9E3779B97F4A7C15ull; }

/* Modes that observe calls besides the profile (see "observers" below). */
#define ML_OBS_TRACE 0x1u
#define ML_OBS_COUNTERS 0x2u
#define ML_OBS_MEMORY 0x4u
#define ML_OBS_PAPI 0x8u
#define ML_OBS_AT_ENTER (ML_OBS_MEMORY | ML_OBS_PAPI)
/* ml_observe_call (peers, tags, bytes of a successful call) is for these modes only */
#define ML_OBS_AT_CALL (ML_OBS_TRACE | ML_OBS_COUNTERS)
/* ml_observe_leave runs after every measured call (successful or not) for these modes */
#define ML_OBS_AT_LEAVE (ML_OBS_COUNTERS | ML_OBS_MEMORY | ML_OBS_PAPI)
/* the observers the lean path (calls/lean.h) serves itself, in its own copies of the wrappers */
#define ML_OBS_INLINED ML_OBS_TRACE

/* ------------------------------------------------------------------------------- time */
/* Ticks are TSC cycles (or ns with the clock fallback); converted to seconds once, at the end. */
extern int ml_clock_is_tsc;

ML_HOT uint64_t ml_now(void)
{
#if defined(__x86_64__) || defined(__i386__)
    if (ML_LIKELY(ml_clock_is_tsc)) return __rdtsc();
#elif defined(__aarch64__)
    if (ML_LIKELY(ml_clock_is_tsc)) {
        uint64_t v;
        __asm__ volatile("mrs %0, cntvct_el0" : "=r"(v));
        return v;
    }
#endif
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The tick counter itself, for the paths that run only when it is the clock (ml_g.lean_ok). */
ML_HOT uint64_t ml_tick(void)
{
#if defined(__x86_64__) || defined(__i386__)
    return __rdtsc();
#elif defined(__aarch64__)
    uint64_t v;
    __asm__ volatile("mrs %0, cntvct_el0" : "=r"(v));
    return v;
#else
    return ml_now();
#endif
}

/* A clock point: a tick and CLOCK_MONOTONIC read together. The tick is read before and after the
 * clock, and of a few tries the shortest bracket's middle is kept: a preemption between the two
 * readings would otherwise shift every time converted with the pair (traces align ranks and hosts
 * with these pairs). */
void ml_clock_point(uint64_t *tick, uint64_t *ns);
/* Nanoseconds of a tick count, with the rate calibrated against CLOCK_MONOTONIC. */
uint64_t ml_ticks_to_ns(uint64_t ticks);
/* Ticks per nanosecond, as well as measured so far (fixed at MPI_Finalize). */
double ml_ticks_per_ns(void);
uint64_t ml_clock_ns(void);

/* ------------------------------------------------------------------------------- statistics */
/* The statistics' records are the statistics file's (runtime/spec/rundir.yaml, stats_*): every
 * thread's statistics are mapped from ranks/rank-NNNNNN.stats (stats.c), so that the kernel keeps
 * them when the process is killed, and a reader takes them as they are.
 * ml_fstat_t: calls, ticks (of the timed calls); the shortest timed call as its complement
 * (min_inv), so that zero-filled memory means "none yet" and every call keeps both with a max (no
 * test of calls == 0), and the longest (max); sent, recv; with MPILENS_TIME_SAMPLE > 1 the timed
 * calls after the first ML_SAMPLE_WARMUP (sampled), their ticks and their sum of squares (the
 * estimate of the time of all calls and its standard error are made from them, in payload.c). */
typedef ml_stats_fstat_t ml_fstat_t;

/* Message-size bins (runtime/spec/rundir.yaml): bin 0 holds 0-byte transfers, bin k holds sizes in
 * [2^(k-1), 2^k). A transfer's size is an int64_t, below 2^63, so the contract's last bin stays
 * empty: a thread keeps the 64 others per function, a row its index reaches by a shift. */
#define ML_NBINS (ML_SIZE_BINS - 1)
_Static_assert(ML_NBINS == 64, "bins 0..63: the bit lengths of an int64_t's sizes");
typedef ml_stats_hbin_t ml_hbin_t;
typedef ml_stats_peer_t ml_peer_t;
typedef ml_stats_region_t ml_rstat_t;

#define ML_MAX_REGION_DEPTH 64
#define ML_REGION_CACHE 64
#define ML_MAX_COUNTERS 64 /* distinct user counter names per process */

/* A user counter (mpilens_counter_add/set) in one region path of one thread: value, updates, and
 * when (tick of the last update: "set" counters keep the latest value). */
typedef ml_stats_ucount_t ml_ucount_t;

/* ------------------------------------------------------------------------------- call sites
 * Each measured call is counted at its call site too (callsite.c): the return address of the
 * first frame outside the MPI library and mpilens, or with MPILENS_CALLSITE_DEPTH=N > 1 the N
 * return addresses of the call path. A thread keeps its sites in a fixed open-addressing table
 * (MPILENS_CALLSITE_MAX entries); once three quarters full, new sites are counted under the
 * function's "other sites" entry, so no call is lost. At depth 1 the wrapper's own return
 * address is the key: the hot path hashes it, compares one entry and adds. */
/* key: depth 1: ml_site_key; else hash of the frames | ML_SITE_KEY_SLOW; 0: empty. fn: function
 * id, ML_SITE_SLOW set when the fast path must not match. id: 1 + index in the thread's table; 0:
 * the function's "other sites". 64 bytes: the hot path indexes the table with a shift. */
typedef ml_stats_site_t ml_site_t;
_Static_assert(sizeof(ml_site_t) == 64, "a call site is 64 bytes");
#define ML_SITE_SLOW 0x80000000u
#define ML_CALLSITE_MAX_DEPTH 16

typedef struct ml_thread {
    /* ---- the profile (core.c, regions.c, counters.c) */
    union {
        struct {
            int depth;   /* > 0 while inside a wrapper: nested MPI calls are not measured */
            /* the lean path (lean.h) runs while this, without its variant bits (ML_LEAN_SAMPLED,
             * ML_LEAN_TRACED: which copy), equals ml_g.lean_gen: set when the thread attaches,
             * at MPI_Init, when it catches up with MPI_Pcontrol(2) and when the trace ends
             * (ml_thread_lean_refresh), to the generation of the statistics it then holds (odd)
             * with those bits, or ML_LEAN_NEVER when the run cannot take it */
            uint32_t lean_gen;
        };
        uint64_t gate; /* both, read at once by ml_lean_enter */
    };
    /* tick of the end of the thread's last timed call: how far its statistics go when the process
     * is killed (the statistics file's at_last) */
    uint64_t last;
    uint32_t cur_path;   /* region path of the calls now being made */
    ml_fstat_t *cur;     /* = blocks + cur_path * ML_NFUNC */
    ml_fstat_t *blocks;  /* [max_paths][ML_NFUNC], lazily touched anonymous memory */
    ml_hbin_t *hist;     /* [ML_NFUNC][ML_NBINS] */
    ml_peer_t *matrix;   /* [world size] by destination world rank */
    ml_rstat_t *rstats;  /* [max_paths] */
    ml_ucount_t *ucounts; /* [max_paths][ML_MAX_COUNTERS] */
    int sampling;        /* MPILENS_TIME_SAMPLE > 1 */
    uint32_t sample_left; /* sampled calls to go before the next timed one */
    uint32_t sample_rng;  /* xorshift32 state of the random gaps */
    int region_depth;
    struct { uint32_t path; uint64_t t0; } region_stack[ML_MAX_REGION_DEPTH];
    struct ml_region_cached { uint32_t parent, hash, path; } region_cache[ML_REGION_CACHE];
    struct ml_counter_cached { uint32_t hash, id; } counter_cache[ML_REGION_CACHE];
    /* scratch of the completion wrappers (grown rarely, never on the common path) */
    size_t scratch_cap;
    MPI_Request *scratch_req;
    struct ml_claim *scratch_claim;
    MPI_Status *scratch_status;
#if ML_FORTRAN
    MPI_Fint *scratch_fstatus;
#endif
    MPI_Datatype *scratch_types;
    /* who is shown each MPI call besides the profile: ML_OBS_* bits (runtime/src/calls/observe.c) */
    uint32_t observe;
    /* ---- trace mode (ml_trace.h, trace.c): read by the inlined events, so embedded */
    ml_trace_thread_t trace;
    /* ---- the requests (requests.c) */
    /* below MPI_THREAD_MULTIPLE: this thread's table of its outstanding operations */
    struct ml_req *rq;       /* [rq_cap], NULL until its first request; on a line boundary in rq_mem */
    void *rq_mem;
    uint32_t rq_cap, rq_shift, rq_live;
    uint32_t rq_room;        /* inserts into empty slots left before the table is rebuilt */
    /* below MPI_THREAD_MULTIPLE, the profile's lean path: this thread's outstanding receives, one
     * small slot each (ml_recv_slot_t; ml_recv_insert) */
    struct ml_recv_slot *rr; /* [rr_mask + 1], NULL until its first receive (rr_mask 0) */
    struct ml_recv_call *rc; /* trace mode: [rr_mask + 1] beside rr (ml_recv_call_t), else NULL */
    uint32_t rr_mask, rr_shift, rr_live; /* rr_mask: the slots (a power of two) less one */
    uint32_t rr_limit;       /* the most slots used before the table grows (a sixteenth of them) */
    uint64_t done_at;        /* end of the completion call being settled (request completion time) */
    uint64_t req_seq;        /* requests started by this thread: links a post to its completion */
    /* requests this thread entered minus those it took out (summed over threads at the end) */
    int64_t requests_open;
    /* ---- papi mode (ml_papi.h, papi.c): this thread's event set and counts, NULL until it starts */
    struct ml_papi_thread *papi;
    /* ---- counters mode (ml_spc.h, spc.c): this thread's counter vector, written by this thread
     * only, and its watermarks, peers and communicators */
    int64_t *spc;
    struct ml_spc_thread *spcx;
    /* ---- the profile again */
    /* datatype sizes seen by this thread (see ml_semantics.h) */
    struct ml_type_cached { MPI_Datatype type; int64_t size; uint32_t gen; } type_cache[16];
    /* the predefined ones (MPI_COMBINER_NAMED): never freed, so never stale */
    struct ml_type_named { MPI_Datatype type; int64_t size; } type_named[8];
    /* ---- call sites (callsite.c): NULL when MPILENS_CALLSITE_DEPTH=0 */
    uintptr_t ra;          /* return address of the wrapper now running (ML_CALLSITE) */
    ml_site_t *sites;      /* [site_cap], open addressing */
    ml_site_t *site_other; /* [ML_NFUNC]: calls of sites beyond the table */
    ml_stats_frame_t *site_frames; /* [site_cap][depth]: the frames of each site */
    ml_site_t *site_pending; /* a walked site found for a request entry, for the same call's leave */
    uintptr_t site_pending_ra;
    int site_pending_fn;
    ml_site_t *site_posted; /* the site ml_req_track found for the call being made, for its leave */
    ml_site_t site_void;    /* with call sites off (depth 0), what the lean path counts into: never written out */
    /* each function's last site on the fast path (ml_site_cached): most calls of a function come
     * from the site of its previous call; &site_void until one is found (its key 0 matches only
     * the lean path's masked key, with call sites off) */
    ml_site_t *site_last[ML_NFUNC];
    uint64_t site_key_mask; /* ~0 with call sites on; 0 (their keys all 0, site_void's) when off */
    uint32_t site_shift, site_cap, site_used, site_fast;
    /* what could not be measured; recv_unknown: receives whose size the MPI did not report
     * (ML_REQ_SIZE_UNKNOWN), whose bytes are therefore not counted */
    uint64_t dropped_requests, region_mismatch, recv_unknown;
    /* the statistics file (stats.c): this thread's section is in it (1) or in memory only (0), at
     * stats_offset; the region paths whose rows the thread has used ([max_paths]) */
    int stats_kept;
    uint64_t stats_offset;
    uint8_t *rows_used;
    /* MPI_Pcontrol(2) resets this thread's statistics when it next enters a wrapper (the thread
     * itself: no one writes counters another thread is updating): ml_g.reset_gen it caught up to */
    uint32_t reset_gen;
    struct ml_thread *next;
} ml_thread_t;

/* ------------------------------------------------------------------------------- process state */
typedef struct ml_global {
    /* read at every call (relaxed): 0 not measuring, 1 measuring, 2 measuring and MPI_Pcontrol(2)
     * has reset the statistics (each thread catches up to reset_gen at its next call) */
    int active;
    int ready;          /* initialized and not finalized */
    int enabled;        /* MPI_Pcontrol level != 0 */
    int finalized;
    int config_ok;
    int rank, size;
    int thread_level;
    int multiple;       /* MPI_THREAD_MULTIPLE: request slots need atomic claims */
    /* the lean path (lean.h): lean_ok, decided at MPI_Init, says the run can take it; lean_gen,
     * read at every call of its wrappers, is 0 while not measuring and otherwise the odd
     * generation of the statistics (ml_lean_gen_of(reset_gen)) */
    int lean_ok;
    /* a PMPI tool is loaded before the runtime (binding.c): every measured call takes the slow way
     * (ml_g.active 2, no lean path), where one made from the tool's own code is left out */
    int tool_before;
    uint32_t lean_gen;
    uint32_t type_gen;  /* bumped by MPI_Type_free: cached datatype sizes are stale */
    uint32_t reset_gen; /* bumped by MPI_Pcontrol(2) */
    /* set (for good) by the first MPI_Cancel: from then on every completion reads its status and
     * MPI_Test_cancelled decides whether the operation moved anything. A flag of the process, not
     * of the request: a cancel racing with another thread's wait writes into no request entry. */
    int cancels;
    MPI_Comm comm;      /* duplicate of the world (below) for the tool's own traffic */
    /* the processes' world, whose ranks the profile, matrix and trace name: MPI_COMM_WORLD, or in a
     * program that starts MPI with MPI_Session_init a communicator of the mpi://WORLD process set,
     * made in a session of the tool's own (session) */
    MPI_Comm world;
    MPI_Session session; /* the tool's own session, when own_session (started by MPI_Session_init) */
    int own_session;
    int world_model;     /* MPI_Init was called: the tool ends at MPI_Finalize */
    int user_sessions;   /* sessions the program has open */
    ml_config_t config;
    char config_error[512];
    char outdir[4096];
    char partial_path[4200 + 32], partial_tmp_path[4200 + 64];
    uint64_t t_init_begin, t_init_end, ns_init_end, tick_init_end;
    uint64_t dropped_regions;
    uint32_t observers; /* ML_OBS_* bits of the modes on in this run, copied into each thread */
    uint32_t max_paths;
    /* the modes' process-wide flags read by the wrappers and core code (each set by its mode) */
    int intervals;      /* MPILENS_INTERVALS: record compute intervals between synchronizing collectives */
    int io;             /* MPILENS_IO: the MPI_File_ wrappers record per file (runtime/src/modes/io/io.c) */
    uint64_t trace_write_errors;
    int mpit;           /* mpit mode: pvars are read at region boundaries (runtime/src/modes/mpit/mpit.c) */
    int mpit_comms;     /* communicator names matter to MPI_T (MPILENS_COMM_CVARS, bound pvars) */
    ml_thread_t *threads; /* list of all thread states (push only) */
} ml_global_t;

extern ml_global_t ml_g;
extern __thread ml_thread_t *ml_tls __attribute__((tls_model("initial-exec")));

ml_thread_t *ml_thread_attach(void);

/* The calling thread's state, marked as inside a wrapper; NULL when it is already inside one
 * (a Fortran binding calling C MPI_, an MPI calling itself): nested calls are not measured. */
ML_HOT ml_thread_t *ml_enter_thread(void)
{
    ml_thread_t *t = ml_tls;
    if (ML_UNLIKELY(t == NULL)) {
        t = ml_thread_attach();
        if (t == NULL) return NULL;
    }
    if (ML_UNLIKELY(t->depth != 0)) return NULL;
    t->depth = 1;
    return t;
}

/* Whether the calling thread is inside a wrapper: a call it makes now is part of another one
 * (an MPI calling itself, a tool after the runtime calling MPI_, a Fortran binding calling C). */
static inline int ml_nested(void)
{
    const ml_thread_t *const t = ml_tls;
    return t != NULL && t->depth != 0;
}

/* Where a wrapper sends a call it does not measure (binding.py): a nested one to the MPI itself, as
 * the call it is part of reaches every tool already; any other one (before MPI_Init, measuring
 * paused) to the next tool, which measures it all the same. */
#define ML_PASS(name) (ml_nested() ? ml_pmpi_MPI_##name : ml_next_MPI_##name)

/* A hidden name for the exported wrapper of fn, which the PMPI entries call (binding.py): a call
 * by its exported name would go to whatever object defines it first. */
#define ML_SELF(fn) extern __typeof__(fn) ml_self_##fn __attribute__((alias(#fn), visibility("hidden")));

/* The lean path's generation for statistics reset reset_gen times: odd, so never 0 (the global's
 * "off") nor ML_LEAN_NEVER (a thread's "not for this run"), and below the variant bits. */
#define ML_LEAN_NEVER 2u
/* A thread's lean_gen also says which copy of the lean path it takes (lean.h: ml_lean_enter): the
 * generation alone for the profile timing every call, with one of these bits for
 * MPILENS_TIME_SAMPLE or for trace mode. The global lean_gen never has them. */
#define ML_LEAN_SAMPLED (1u << 30)
#define ML_LEAN_TRACED (1u << 31)
static inline uint32_t ml_lean_gen_of(uint32_t reset_gen) { return (reset_gen * 2u + 1u) & ~(ML_LEAN_SAMPLED | ML_LEAN_TRACED); }
/* Set t->lean_gen from its statistics' generation and the modes it runs (core.c), whenever one of
 * them changes: at its first call, at MPI_Init, when it catches up with a reset, when the trace
 * ends. */
void ml_thread_lean_refresh(ml_thread_t *t);
/* Store ml_g.active (0 not measuring, 1 measuring, 2 measuring after MPI_Pcontrol(2)) and the lean
 * path's gate with it. */
void ml_set_active(int active);

/* MPI_Pcontrol(2) happened since t last reset its statistics: reset them now (core.c). */
void ml_thread_catch_up(ml_thread_t *t);
/* Whether t's statistics predate the last MPI_Pcontrol(2) (it has not called MPI since). */
static inline int ml_thread_stale(const ml_thread_t *t)
{
    return t->reset_gen != __atomic_load_n(&ml_g.reset_gen, __ATOMIC_ACQUIRE);
}
/* ra: the wrapper's return address (a call from a tool loaded before the runtime is its own, not
 * the program's: not measured) */
ml_thread_t *ml_enter_after_reset(const void *ra);

/* Start measuring a call: the thread's state, or NULL to just call through. */
ML_HOT ml_thread_t *ml_enter(void)
{
    const int a = __atomic_load_n(&ml_g.active, __ATOMIC_RELAXED);
    if (ML_UNLIKELY(a != 1)) return a == 0 ? NULL : ml_enter_after_reset(__builtin_return_address(0));
    return ml_enter_thread();
}

/* Like ml_enter, for the completion wrappers: they keep the request table right even while
 * measurement is off (MPI_Pcontrol(0)), so they run whenever the runtime is ready. */
ML_HOT ml_thread_t *ml_enter_completion(int *measuring)
{
    if (ML_UNLIKELY(!__atomic_load_n(&ml_g.ready, __ATOMIC_RELAXED))) return NULL;
    ml_thread_t *t = ml_enter_thread();
    if (t != NULL) {
        const int a = __atomic_load_n(&ml_g.active, __ATOMIC_RELAXED);
        *measuring = a; /* nonzero: measuring */
        if (ML_UNLIKELY(a == 2) && ml_thread_stale(t)) ml_thread_catch_up(t);
    }
    return t;
}

/* ------------------------------------------------------------------------------- timing
 * Every call is timed (two clock reads), except with MPILENS_TIME_SAMPLE=N > 1, where the
 * wrappers of the frequent, short functions (point-to-point, completion, probe, one-sided) take
 * their start time from ml_start: after the first ML_SAMPLE_WARMUP calls of a function (per
 * region and thread, always timed: the first calls are the expensive ones, connection set-up) a
 * call is timed when the thread's countdown runs out; the countdown restarts at a random gap in
 * [1, 2N-1], so each call is timed with probability 1/N whatever the pattern of the calls, and
 * the time of the untimed ones is estimated per function (payload.c). An untimed call has
 * start time 0 (the clock is never 0 after boot). */
/* ML_SAMPLE_WARMUP: runtime/spec/rundir.yaml (the statistics file's readers estimate with it too) */

uint64_t ml_sample_gap(ml_thread_t *t);

/* Under MPILENS_TIME_SAMPLE: whether this call of fn is left untimed (the thread's countdown, past
 * the function's warm-up; ml_start and the lean path's copy). */
ML_HOT int ml_sample_skips(ml_thread_t *t, int fn)
{
    if (t->cur[fn].calls < ML_SAMPLE_WARMUP) return 0;
    if (ML_LIKELY(--t->sample_left != 0)) return 1;
    t->sample_left = (uint32_t)ml_sample_gap(t);
    return 0;
}

ML_HOT uint64_t ml_start(ml_thread_t *t, int fn)
{
    if (ML_UNLIKELY(t->sampling) && ml_sample_skips(t, fn)) return 0;
    return ml_now();
}

/* Right after the MPI call returns: from here until its ml_leave* the thread counts the call, which
 * depth 2 tells a reader of the statistics file of a process killed meanwhile (the call may be
 * counted in part); the compiler barrier keeps the store before the counting's. */
ML_HOT void ml_counting(ml_thread_t *t)
{
    t->depth = 2;
    __asm__ volatile("" ::: "memory");
}

/* End time of a call started with ml_start: 0 when it is not timed. */
ML_HOT uint64_t ml_stop(uint64_t t0) { return ML_LIKELY(t0 != 0) ? ml_now() : 0; }

/* Count a call in s; returns its duration, 0 when it was not timed. */
ML_HOT uint64_t ml_count(ml_thread_t *t, ml_fstat_t *s, uint64_t t0, uint64_t t1)
{
    if (ML_UNLIKELY(t0 == 0)) {
        s->calls++;
        return 0;
    }
    const uint64_t d = t1 - t0;
    if (ML_UNLIKELY(t->sampling) && s->calls >= ML_SAMPLE_WARMUP) {
        s->sampled++;
        s->sampled_ticks += d;
        s->sampled_sq += (double)d * (double)d;
    }
    if (~d > s->min_inv) s->min_inv = ~d;
    if (d > s->max) s->max = d;
    s->calls++;
    s->ticks += d;
    t->last = t1;
    return d;
}

/* The call site of the call being left: the fast path at depth 1 (one entry compared), else
 * callsite.c's walk and lookup. */
ml_site_t *ml_site_slow(ml_thread_t *t, int fn);
/* The site of the call being made when the fast path misses, looked up before the call is counted
 * (its request entry, its trace event); the count then reuses a stack walk made here (callsite.c). */
ml_site_t *ml_site_early_slow(ml_thread_t *t, int fn);
/* The key of a call site on the fast path at depth 1: the return address with the function in the
 * top bits (user-space code lies below 2^48; callsite.c sends a higher address to the slow path).
 * The sites the fast path must not match (found by a stack walk, Python lines) have keys with bit
 * 63 set, so one comparison of keys decides. */
ML_HOT uint64_t ml_site_key(uintptr_t ra, int fn) { return (uint64_t)ra | (uint64_t)fn << 48; }
#define ML_SITE_KEY_SLOW (1ull << 63)
/* The entry of the fast path for key k, whether or not it holds that site. */
ML_HOT ml_site_t *ml_site_slot(const ml_thread_t *t, uint64_t k)
{
    return &t->sites[(uint32_t)(ml_hash(k) >> t->site_shift)];
}
/* Function fn's call site of key k on the fast path: its last site when that holds k, else the
 * table's entry for k (which becomes its last site); NULL when neither holds k. */
ML_HOT ml_site_t *ml_site_cached(ml_thread_t *t, uint64_t k, int fn)
{
    ml_site_t *e = t->site_last[fn];
    if (ML_LIKELY(e->key == k)) return e;
    e = ml_site_slot(t, k);
    if (ML_UNLIKELY(e->key != k)) return NULL;
    t->site_last[fn] = e;
    return e;
}
ML_HOT ml_site_t *ml_site_find(ml_thread_t *t, int fn)
{
    ml_site_t *e = ml_site_cached(t, ml_site_key(t->ra, fn), fn);
    return ML_LIKELY(e != NULL) ? e : ml_site_slow(t, fn);
}
ML_HOT ml_site_t *ml_site_early(ml_thread_t *t, int fn)
{
    ml_site_t *e = ml_site_cached(t, ml_site_key(t->ra, fn), fn);
    return ML_LIKELY(e != NULL) ? e : ml_site_early_slow(t, fn);
}
ML_HOT void ml_site_count(ml_thread_t *t, int fn, uint64_t d, int64_t sent, int64_t recv)
{
    ml_site_t *e = ml_site_find(t, fn);
    e->calls++;
    e->ticks += d;
    if (ML_UNLIKELY(t->sampling)) e->timed += d != 0; /* else every call is timed: timed stays 0 */
    e->sent += sent;
    e->recv += recv;
}
/* Every exported wrapper notes its return address first (a load from the stack). */
#define ML_CALLSITE(t) ((t)->ra = (uintptr_t)__builtin_return_address(0))

ML_HOT int ml_size_bin(int64_t bytes)
{
    return bytes <= 0 ? 0 : 64 - __builtin_clzll((unsigned long long)bytes);
}
/* Function fn's size-histogram bin for a transfer of sent and recv bytes (the larger decides). */
ML_HOT ml_hbin_t *ml_hist_bin(ml_thread_t *t, int fn, int64_t sent, int64_t recv)
{
    return &t->hist[fn * ML_NBINS + ml_size_bin(sent > recv ? sent : recv)];
}

/* After every measured call, successful or not, for the modes that watch call boundaries
 * (ML_OBS_AT_LEAVE; see the observers section below). */
void ml_observe_leave(struct ml_thread *t, int fn);

/* End a measured call that moves no bytes (or whose bytes come at request completion). */
ML_HOT void ml_leave(ml_thread_t *t, int fn, uint64_t t0, uint64_t t1)
{
    const uint64_t d = ml_count(t, &t->cur[fn], t0, t1);
    if (ML_LIKELY(t->sites != NULL)) ml_site_count(t, fn, d, 0, 0);
    if (ML_UNLIKELY(t->observe & ML_OBS_AT_LEAVE)) ml_observe_leave(t, fn);
    t->depth = 0;
}

/* End a measured call that moved bytes: also its message-size bin. */
ML_HOT void ml_leave_bytes(ml_thread_t *t, int fn, uint64_t t0, uint64_t t1, int64_t sent, int64_t recv)
{
    ml_fstat_t *s = &t->cur[fn];
    const uint64_t d = ml_count(t, s, t0, t1);
    s->sent += sent;
    s->recv += recv;
    ml_hbin_t *h = ml_hist_bin(t, fn, sent, recv);
    h->calls++;
    h->ticks += d;
    if (ML_LIKELY(t->sites != NULL)) ml_site_count(t, fn, d, sent, recv);
    if (ML_UNLIKELY(t->observe & ML_OBS_AT_LEAVE)) ml_observe_leave(t, fn);
    t->depth = 0;
}

/* End a measured call that started an operation (its bytes come at its completion): the call site
 * ml_req_track found, if it ran in this call, saves a second lookup. */
ML_HOT void ml_leave_posted(ml_thread_t *t, int fn, uint64_t t0, uint64_t t1)
{
    const uint64_t d = ml_count(t, &t->cur[fn], t0, t1);
    ml_site_t *e = t->site_posted;
    t->site_posted = NULL;
    if (e == NULL && t->sites != NULL) e = ml_site_find(t, fn);
    if (ML_LIKELY(e != NULL)) {
        e->calls++;
        e->ticks += d;
        if (ML_UNLIKELY(t->sampling)) e->timed += d != 0;
    }
    if (ML_UNLIKELY(t->observe & ML_OBS_AT_LEAVE)) ml_observe_leave(t, fn);
    t->depth = 0;
}

/* ------------------------------------------------------------------------------- communicators */
/* What the tool knows of a communicator, filled at first use and dropped when it is freed. */
typedef struct ml_comm {
    uintptr_t key;
    int size, rank, remote_size, is_inter;
    int indeg, outdeg;  /* neighbourhood slots; -1 until asked */
    uint64_t null_slots; /* Cartesian: bit i set when buffer slot i's neighbour is MPI_PROC_NULL */
    int *world;         /* world rank of each rank of the peer group (remote group of intercomms) */
    uint64_t uid;       /* the same on every member: names the communicator in traces */
    uint32_t children;  /* communicators created from this one so far */
    int refs;           /* the table's reference while the communicator lives, plus held requests */
} ml_comm_t;

const ml_comm_t *ml_comm_get(MPI_Comm comm);
void ml_comm_forget(MPI_Comm comm);
/* Keep c's facts alive past MPI_Comm_free (an outstanding request's), and let them go. */
void ml_comm_hold(const ml_comm_t *c);
void ml_comm_release(const ml_comm_t *c);
/* A call created newcomm from parent (MPI_COMM_NULL: none): give it its uid. */
void ml_comm_created(MPI_Comm parent, MPI_Comm newcomm);
void ml_comm_neighbors(MPI_Comm comm, int *indeg, int *outdeg, uint64_t *null_slots);
/* Call fn on every communicator known (under the table's lock unless a dying process asks). */
void ml_comm_each(void (*fn)(MPI_Comm comm, const ml_comm_t *c, void *arg), void *arg, int lock);

/* World rank of `rank` of the peer group of comm, or -1. */
ML_HOT int ml_world_rank(MPI_Comm comm, int rank)
{
    if (comm == MPI_COMM_WORLD) return rank;
    if (rank < 0) return -1;
    const ml_comm_t *c = ml_comm_get(comm);
    if (c == NULL || c->world == NULL) return -1;
    const int n = c->is_inter ? c->remote_size : c->size;
    return rank < n ? c->world[rank] : -1;
}

ML_HOT void ml_matrix_add(ml_thread_t *t, MPI_Comm comm, int dest, int64_t bytes)
{
    const int w = ml_world_rank(comm, dest);
    if (w >= 0 && w < ml_g.size) {
        t->matrix[w].messages++;
        t->matrix[w].bytes += bytes;
    }
}

/* Bytes a status reports (receives, file reads and writes), read from the status itself: the
 * fields are public in each ABI, and this is on the path of every receive. */
ML_HOT int64_t ml_status_bytes(const MPI_Status *st)
{
#if defined(OPEN_MPI)
    return (int64_t)st->_ucount;
#elif defined(MPICH)
    return (int64_t)(uint32_t)st->count_lo + ((int64_t)((uint32_t)st->count_hi_and_cancelled >> 1) << 32);
#else
    MPI_Count c = 0;
    if (PMPI_Get_elements_x(st, MPI_BYTE, &c) != MPI_SUCCESS || c == MPI_UNDEFINED) return 0;
    return (int64_t)c;
#endif
}

/* ------------------------------------------------------------------------------- requests */
#define ML_BYTES_FROM_STATUS (-1)
#define ML_REQ_PERSISTENT 1u
#define ML_REQ_ACTIVE 2u
#define ML_REQ_WORLD 8u /* started on MPI_COMM_WORLD (counters mode: ranks are world ranks) */
#define ML_REQ_FULL 16u /* entered while trace or counters mode watch requests: completed by requests.c */
#define ML_REQ_POSTED_AT 32u /* a receive counters mode watches: t_post holds when it was posted */
/* a receive whose size the MPI does not report: its completion status is not the operation's
 * (MPICH-family MPIs complete MPI_Isendrecv with a status left from another request; the first such
 * call of a process finds out, ml_status_probe) */
#define ML_REQ_SIZE_UNKNOWN 64u

/* An outstanding nonblocking or persistent operation: its bytes are accounted at completion.
 * One cache line: a window of outstanding receives touches a line per entry, not two (the tables
 * are allocated on line boundaries). */
typedef struct ml_req {
    uintptr_t key;      /* request handle; ML_REQ_EMPTY / ML_REQ_TOMB when free (atomic) */
    uint16_t fn;        /* function that created it */
    uint16_t flags;
    uint32_t stat;      /* statistics of its function in the region where it started: blocks[stat] */
    int32_t peer;       /* destination world rank for the matrix, or -1 */
    int32_t pad;
    /* bytes sent, or ML_BYTES_FROM_STATUS (read it with ml_req_sent); a receive sends nothing, so
     * one that counters mode watches keeps there the tick it was posted (ML_REQ_POSTED_AT) */
    union {
        int64_t sent;
        uint64_t t_post;
    };
    int64_t recv;       /* bytes received, or ML_BYTES_FROM_STATUS */
    uint64_t seq;       /* number of the operation in its thread's trace (trace mode) */
    /* trace and counters modes: to give the source of a completed receive as a world rank; the
     * entry holds a reference (ml_comm_hold) from ml_req_track until it completes or is freed */
    const struct ml_comm *comm;
    ml_site_t *site;    /* call site that started it: its bytes are counted there at completion */
} ml_req_t;
_Static_assert(sizeof(ml_req_t) == 64, "a request entry is one cache line");
#define ML_LINE 64 /* bytes: what the request tables are aligned to */

/* An entry's bytes sent (or ML_BYTES_FROM_STATUS): none for a receive whose word holds t_post. */
ML_HOT int64_t ml_req_sent(const ml_req_t *e) { return e->flags & ML_REQ_POSTED_AT ? 0 : e->sent; }

#define ML_REQ_EMPTY ((uintptr_t)0)
#define ML_REQ_TOMB (~(uintptr_t)0)
#define ML_REQ_BUSY (~(uintptr_t)1) /* being filled: not yet visible to lookups */

int ml_requests_init(size_t capacity);
/* Whether the completion status of fn (MPI_Isendrecv, MPI_Isendrecv_replace and their _c forms)
 * describes its receive in this MPI: asked once per process and function, with a message to
 * itself on the tool's own communicator. MPICH 4.0 and 5.0 and Intel MPI 2021 answer no. */
int ml_status_probe(int fn);
/* Enter a new operation: the function that started it, flags, its bytes (or ML_BYTES_FROM_STATUS)
 * and destination world rank (-1: none), its call site (NULL: looked up here, from t->ra);
 * returns its trace sequence number (0 outside trace mode). A full table counts it as dropped.
 * One handle may have several entries: MPICH hands out one shared handle for all operations that
 * complete at once. */
uint64_t ml_req_track_slow(ml_thread_t *t, MPI_Request req, int fn, unsigned flags, int64_t sent, int64_t recv,
                           int peer, MPI_Comm comm, ml_site_t *site);
/* Rebuild t's own table (grown, tombstones dropped) so that one more entry fits; -1 when it is full
 * at MPILENS_MAX_REQUESTS or memory is short. */
int ml_req_make_room(ml_thread_t *t);
/* The first entry of a handle, left in the table (persistent requests, MPI_Cancel). */
ml_req_t *ml_req_find(MPI_Request req);
/* A completion call completed req (measuring, below MPI_THREAD_MULTIPLE; handles copied before the
 * call): the general case of the lean MPI_Waitall, an entry of another kind or of another thread.
 * err: the request's error (MPI_ERR_IN_STATUS), MPI_SUCCESS otherwise. */
void ml_req_completed_slow(ml_thread_t *t, MPI_Request req, const MPI_Status *st, int err);
size_t ml_requests_outstanding(void);

/* A completion call holds the entries of its requests across the MPI call. Below
 * MPI_THREAD_MULTIPLE it looks them up before the call and settles them in place after it. Under
 * MPI_THREAD_MULTIPLE a nonblocking entry is taken out of the table *before* the call: once MPI
 * frees the handle another thread may get the same value for a new operation. A persistent entry
 * stays (its handle lives until freed). */
typedef struct ml_claim {
    ml_req_t *live;     /* the entry in its table: below MPI_THREAD_MULTIPLE, and persistent ones */
    struct ml_thread *owner; /* below MPI_THREAD_MULTIPLE: the thread whose table holds live */
    MPI_Request handle;
    int held;           /* 0: the handle has no entry */
    ml_req_t copy;      /* MPI_THREAD_MULTIPLE, nonblocking: the entry, out of the table */
} ml_claim_t;

void ml_req_claim_slow(MPI_Request req, ml_claim_t *c);
void ml_req_putback(ml_claim_t *c);
/* The call did not complete it: put a taken entry back (an entry looked up in place stays). */
static inline void ml_req_unclaim(ml_claim_t *c)
{
    if (c->held) ml_req_putback(c);
}
void ml_req_done_slow(ml_thread_t *t, ml_claim_t *c, const MPI_Status *st, int measuring);
/* MPI_Request_free: a started send will complete, so its bytes count; a freed receive's size is
 * never known. */
void ml_req_freed(ml_thread_t *t, ml_claim_t *c, int measuring);
uint64_t ml_req_start(ml_thread_t *t, ml_req_t *e);

/* ---- the common case, inlined into the wrappers: the profile without trace and counters modes,
 * below MPI_THREAD_MULTIPLE, an operation started and completed by the same thread. Its entry is
 * written into the thread's own table at the start, looked up before the completion call and
 * settled in place after it (requests.c has the other cases and the table's upkeep). */
/* The modes that follow requests (their req_posted and req_done hooks, ml_modes.h), set at
 * MPI_Init by the modes that do: ML_WATCH_REQUESTS, plus ML_WATCH_WORLD_FACTS when they want the
 * communicator's facts (ml_comm_t) of operations on the world too (those of other communicators
 * are always kept then). The lean path serves none of them. */
#define ML_WATCH_REQUESTS 0x1u
#define ML_WATCH_WORLD_FACTS 0x2u
extern unsigned ml_req_watch;
/* Open MPI: ompi_request_empty, libmpi's one request for operations complete at once, is
 * declared and bound with the header's variables (ml_pmpi.h) */

/* A handle shared by operations that completed inside the call that started them: Open MPI's
 * "empty" request, MPICH's built-in handles. Such an operation is accounted at once. */
ML_HOT int ml_req_shared_handle(MPI_Request r)
{
#if defined(OPEN_MPI)
    return (void *)r == (void *)ompi_request_empty;
#elif defined(MPICH)
    return ((uint32_t)r >> 30) == 1u; /* HANDLE_KIND_BUILTIN */
#else
    return 0;
#endif
}

/* A handle as a key: the three values that mark slots (0, ~1, ~0, never handles of Open MPI or
 * MPICH) are moved aside with one comparison. */
ML_HOT uintptr_t ml_req_key(MPI_Request r)
{
    const uintptr_t k = (uintptr_t)r;
#if defined(OPEN_MPI) || defined(MPICH)
    return k; /* a pointer to a request object; a handle with its kind in the top bits */
#else
    return k + 2u <= 2u ? k ^ 4u : k;
#endif
}
/* Whether slot key k is free for an insert (empty or a tombstone): one comparison. */
ML_HOT int ml_req_free_slot(uintptr_t k) { return k + 1u <= 1u; }

ML_HOT uint32_t ml_req_home(const ml_thread_t *t, uintptr_t k)
{
    return (uint32_t)(ml_hash(k) >> t->rq_shift);
}

/* Whether t's operations take the inlined path: no mode but the profile watches them, and one
 * thread at a time is inside MPI. */
ML_HOT int ml_req_lean(const ml_thread_t *t)
{
    return !(t->trace.on | ml_req_watch | ml_g.multiple);
}

/* The index in a thread's blocks of function fn's statistics in the region path now current. */
ML_HOT uint32_t ml_stat_index(const ml_thread_t *t, int fn) { return t->cur_path * ML_NFUNC + (uint32_t)fn; }
/* The next operation number of a thread in trace mode: its number and sequence, which link an
 * operation's start to its completion in the trace. */
ML_HOT uint64_t ml_op_number(ml_thread_t *t) { return t->trace.req_base | ++t->req_seq; }

/* A completed operation's size class (its time is that of the calls that waited for it) and the
 * destination's row of the matrix (peer: its world rank, or -1). */
ML_HOT void ml_account_transfer(ml_thread_t *t, int fn, int peer, int64_t sent, int64_t recv)
{
    ml_hist_bin(t, fn, sent, recv)->calls++;
    if (peer >= 0) {
        t->matrix[peer].messages++;
        t->matrix[peer].bytes += sent;
    }
}

/* A completed operation's bytes: in s, the statistics of the function that started it (of the
 * region where it started), its call site, the size histogram and the destination's row of the
 * matrix. */
ML_HOT void ml_account(ml_thread_t *t, ml_fstat_t *s, ml_site_t *site, int fn, int peer, int64_t sent, int64_t recv)
{
    s->sent += sent;
    s->recv += recv;
    if (site != NULL) {
        /* the site belongs to the thread that started the operation, maybe not this one */
        if (ML_UNLIKELY(ml_g.multiple)) {
            __atomic_fetch_add(&site->sent, sent, __ATOMIC_RELAXED);
            __atomic_fetch_add(&site->recv, recv, __ATOMIC_RELAXED);
        } else {
            site->sent += sent;
            site->recv += recv;
        }
    }
    ml_account_transfer(t, fn, peer, sent, recv);
}
ML_HOT void ml_req_account(ml_thread_t *t, const ml_req_t *e, int64_t sent, int64_t recv)
{
    ml_account(t, &t->blocks[e->stat], e->site, e->fn, e->peer, sent, recv);
}

/* ---- a thread's own table (below MPI_THREAD_MULTIPLE; requests.c says how it is kept) */
#define ML_REQ_NONE UINT32_MAX

/* A new entry for key k in t's table, its key written (the caller fills the rest); NULL when the
 * table is full at MPILENS_MAX_REQUESTS or memory is short. */
ML_HOT ml_req_t *ml_req_insert(ml_thread_t *t, uintptr_t k)
{
    if (ML_UNLIKELY(t->rq_room == 0) && ml_req_make_room(t) != 0) return NULL;
    const uint32_t m = t->rq_cap - 1;
    uint32_t i = ml_req_home(t, k);
    while (!ml_req_free_slot(t->rq[i].key)) i = (i + 1) & m;
    ml_req_t *e = &t->rq[i];
    t->rq_room -= e->key == ML_REQ_EMPTY; /* a tombstone's slot was counted already */
    t->rq_live++;
    e->key = k;
    return e;
}

/* The slot of req in t's own table, or ML_REQ_NONE. */
ML_HOT uint32_t ml_req_index(const ml_thread_t *t, MPI_Request req)
{
    if (t->rq_live == 0) return ML_REQ_NONE;
    const uintptr_t k = ml_req_key(req);
    const uint32_t m = t->rq_cap - 1;
    for (uint32_t i = ml_req_home(t, k);; i = (i + 1) & m) {
        const uintptr_t have = t->rq[i].key;
        if (have == k) return i;
        if (have == ML_REQ_EMPTY) return ML_REQ_NONE;
    }
}
/* The entry of req in t's own table, or NULL. */
ML_HOT ml_req_t *ml_req_own(const ml_thread_t *t, MPI_Request req)
{
    const uint32_t i = ml_req_index(t, req);
    return i != ML_REQ_NONE ? &t->rq[i] : NULL;
}

/* Take slot i out of owner's table: a tombstone while an entry follows it (a probe may need to run
 * past it), else empty, and so are the tombstones just before it, which no probe needs any more.
 * Entries never move: a completion call may hold pointers to several. */
ML_HOT void ml_req_remove_at(ml_thread_t *owner, uint32_t i)
{
    ml_req_t *const rq = owner->rq;
    const uint32_t m = owner->rq_cap - 1;
    owner->rq_live--;
    if (rq[(i + 1) & m].key != ML_REQ_EMPTY) {
        rq[i].key = ML_REQ_TOMB;
        return;
    }
    rq[i].key = ML_REQ_EMPTY;
    uint32_t freed = 1;
    while (rq[i = (i - 1) & m].key == ML_REQ_TOMB) {
        rq[i].key = ML_REQ_EMPTY;
        freed++;
    }
    owner->rq_room += freed;
}
ML_HOT void ml_req_remove(ml_thread_t *owner, ml_req_t *e) { ml_req_remove_at(owner, (uint32_t)(e - owner->rq)); }

/* ---- a thread's receive table (below MPI_THREAD_MULTIPLE; the lean path only)
 * A receive's bytes are known only from its status at completion, so it needs a slot from its
 * start to its completion; nothing else about it varies: it sends nothing, and the matrix counts
 * it at the sender. The lean path's receives (MPI_Irecv, MPI_Imrecv; in trace mode those on
 * MPI_COMM_WORLD) therefore keep only their handle, call site, function, region and (trace mode)
 * operation number, in a slot of 32 bytes in a table of their own (trace mode: and a waiting
 * call's event beside it, ml_recv_call_t): open
 * addressing with linear probing, at most a sixteenth full (requests.c: ml_recv_grow), a slot
 * freed by moving the slots after it back (no tombstones, nothing to count but the slots used).
 * The receive's statistics are those of its function in the region where it started, as for an
 * entry (blocks[stat]).
 * Slots move when one is freed. A lean completion call holds at most the index of one slot across
 * the MPI call (MPI_Wait, MPI_Test), during which nothing frees one (a nested call does not
 * measure). The general path takes a slot out into an entry (ml_req_claim_slow: its claims may
 * span many requests) and puts one that did not complete back into the receive table. */
typedef struct ml_recv_slot {
    uintptr_t key;      /* request handle; 0: free */
    ml_site_t *site;    /* call site that started it */
    uint32_t stat;      /* its function's statistics in the region where it started: blocks[stat] */
    uint32_t fn;        /* the function that started it */
    uint64_t seq;       /* trace mode: its operation number (ml_op_number); else 0 */
} ml_recv_slot_t;
/* four words: two slots to a cache line, none across two (trace mode's operation number made the
 * three words of the profile's slot four) */
_Static_assert(sizeof(ml_recv_slot_t) == 32, "a receive's slot is four words");
/* Trace mode's part of a receive whose call event waits for its completion (ml_trace_defer; its
 * slot's seq then has ML_SEQ_LATER), at the same index in a table of its own (t->rc), so that the
 * profile's slots stay four words: the call's start, duration, source (world rank, -1: any), tag
 * and call site number. */
typedef struct ml_recv_call {
    uint64_t t0;
    uint32_t dur;
    int32_t src, tag;
    uint32_t site_id;
    uint64_t unused; /* the size of a slot */
} ml_recv_call_t;
/* as large as a slot: a slot's call is at the slot's offset in rc (ml_recv_call_of) */
_Static_assert(sizeof(ml_recv_call_t) == sizeof(ml_recv_slot_t), "a waiting call is as large as its slot");
/* The waiting call beside slot r of t's receive table (trace mode). */
ML_HOT ml_recv_call_t *ml_recv_call_of(const ml_thread_t *t, const ml_recv_slot_t *r)
{
    return (ml_recv_call_t *)((char *)t->rc + ((const char *)r - (const char *)t->rr));
}
/* Slot j's waiting call moved to slot i, when a freed slot is filled (ml_recv_remove_at): out of
 * line, so that the profile's common case, which moves nothing, does not even load t->rc. */
void ml_recv_call_move(ml_thread_t *t, uint32_t i, uint32_t j);
#define ML_RECV_SLOT 0x80000000u /* in a completion call's slot index: the receive table's */

/* Make room for one more receive in t's table (grown, or made at the first receive): -1 when it is
 * full at MPILENS_MAX_REQUESTS or memory is short. */
int ml_recv_grow(ml_thread_t *t);

ML_HOT uint32_t ml_recv_home(const ml_thread_t *t, uintptr_t k)
{
    return (uint32_t)(ml_hash(k) >> t->rr_shift);
}

/* The free slot that key k takes: its home, or the first free one after it. */
ML_HOT ml_recv_slot_t *ml_recv_free_slot(const ml_thread_t *t, uintptr_t k)
{
    const uint32_t m = t->rr_mask;
    uint32_t i = ml_recv_home(t, k);
    while (t->rr[i].key != 0) i = (i + 1) & m;
    return &t->rr[i];
}

/* A slot for the receive of handle key k (site, stat, fn, seq: as in ml_recv_slot_t; its call not
 * waiting), or NULL when the table is full at MPILENS_MAX_REQUESTS. */
ML_HOT ml_recv_slot_t *ml_recv_insert(ml_thread_t *t, uintptr_t k, ml_site_t *site, uint32_t stat, uint32_t fn,
                                      uint64_t seq)
{
    if (ML_UNLIKELY(t->rr_live >= t->rr_limit) && ml_recv_grow(t) != 0) return NULL;
    ml_recv_slot_t *const r = ml_recv_free_slot(t, k);
    r->key = k;
    r->site = site;
    r->stat = stat;
    r->fn = fn;
    r->seq = seq;
    t->rr_live++;
    return r;
}

/* The slot of handle key k in t's receive table, or ML_REQ_NONE. */
ML_HOT uint32_t ml_recv_find(const ml_thread_t *t, uintptr_t k)
{
    if (t->rr_live == 0) return ML_REQ_NONE;
    const uint32_t m = t->rr_mask;
    for (uint32_t i = ml_recv_home(t, k);; i = (i + 1) & m) {
        const uintptr_t have = t->rr[i].key;
        if (have == k) {
            /* a table has at most 2^30 slots (MPILENS_MAX_REQUESTS <= 2^26), said so that a
             * caller's test for ML_REQ_NONE after a match, with or without ML_RECV_SLOT, compiles
             * to nothing */
            if (i >= 1u << 30) __builtin_unreachable();
            return i;
        }
        if (have == 0) return ML_REQ_NONE;
    }
}
ML_HOT uint32_t ml_recv_index(const ml_thread_t *t, MPI_Request req) { return ml_recv_find(t, ml_req_key(req)); }

/* Free slot i of t's receive table: each slot after it, up to a free one, moves back into the hole
 * when its home is not between the hole and itself (so every probe still finds it). */
ML_HOT void ml_recv_remove_at(ml_thread_t *t, uint32_t i)
{
    ml_recv_slot_t *const rr = t->rr;
    const uint32_t m = t->rr_mask;
    for (uint32_t j = (i + 1) & m; rr[j].key != 0; j = (j + 1) & m) {
        const uint32_t h = ml_recv_home(t, rr[j].key);
        if (((j - h) & m) >= ((j - i) & m)) {
            rr[i] = rr[j];
            ml_recv_call_move(t, i, j);
            i = j;
        }
    }
    rr[i].key = 0;
    t->rr_live--;
}

/* The receive in slot i completed (st: its status; NULL in error: nothing moved): its bytes in the
 * statistics of its function and region, its site and the size histogram; its slot freed. */
ML_HOT void ml_recv_settle(ml_thread_t *t, uint32_t i, const MPI_Status *st)
{
    /* accounted first, then freed: read in place, the slot's fields need no copy */
    if (st != NULL) {
        const ml_recv_slot_t *const r = &t->rr[i];
        const int64_t recv = ml_status_bytes(st);
        t->blocks[r->stat].recv += recv;
        r->site->recv += recv;
        ml_hist_bin(t, (int)r->fn, 0, recv)->calls++;
    }
    ml_recv_remove_at(t, i);
}

ML_HOT uint64_t ml_req_track(ml_thread_t *t, MPI_Request req, int fn, unsigned flags, int64_t sent, int64_t recv,
                             int peer, MPI_Comm comm)
{
    if (ML_LIKELY(ml_req_lean(t)) && req != MPI_REQUEST_NULL) {
        /* with call sites off, the void site the lean path counts into: a lean completion
         * settles this entry and adds its bytes to its site without asking */
        ml_site_t *site = t->sites ? ml_site_early(t, fn) : &t->site_void;
        t->site_posted = site;
        if (!(flags & ML_REQ_PERSISTENT) && ml_req_shared_handle(req)) { /* complete already, and with no status worth reading */
            if (flags & ML_REQ_SIZE_UNKNOWN) t->recv_unknown++;
            ml_account(t, &t->cur[fn], site, fn, peer, sent == ML_BYTES_FROM_STATUS ? 0 : sent,
                       recv == ML_BYTES_FROM_STATUS ? 0 : recv);
            return 0;
        }
        ml_req_t *e = ml_req_insert(t, ml_req_key(req));
        if (ML_UNLIKELY(e == NULL)) {
            t->dropped_requests++; /* full at MPILENS_MAX_REQUESTS */
            return 0;
        }
        e->fn = (uint16_t)fn;
        e->flags = (uint16_t)(flags & ML_REQ_PERSISTENT ? flags : flags | ML_REQ_ACTIVE); /* persistent: at MPI_Start */
        e->stat = ml_stat_index(t, fn);
        e->peer = peer;
        e->sent = sent;
        e->recv = recv;
        e->seq = 0;
        e->comm = NULL;
        e->site = site;
        return 0;
    }
    return ml_req_track_slow(t, req, fn, flags, sent, recv, peer, comm, NULL);
}

/* Before a completion call: the entry of req (c->held), found in the calling thread's table or
 * elsewhere (ml_req_claim_slow). */
ML_HOT void ml_req_claim(MPI_Request req, ml_claim_t *c)
{
    ml_thread_t *t = ml_tls;
    if (ml_req_shared_handle(req)) { /* accounted when it started */
        c->held = 0;
        return;
    }
    ml_req_t *e;
    if (ML_LIKELY(!ml_g.multiple && t != NULL) && (e = ml_req_own(t, req)) != NULL) {
        c->live = e;
        c->owner = t;
        c->handle = req;
        c->held = 1;
        return;
    }
    ml_req_claim_slow(req, c); /* elsewhere, or in a receive table (taken out into c->copy) */
}

/* After the call completed it: account its bytes (when measuring; st may be NULL when no status is
 * needed) and close it. */
ML_HOT void ml_req_done(ml_thread_t *t, ml_claim_t *c, const MPI_Status *st, int measuring)
{
    if (!c->held) return;
    ml_req_t *e = c->live;
    /* an entry of the inlined start (no mode but the profile watches it), nonblocking, measuring, and
     * no cancel in the process so far */
    if (ML_LIKELY(e != NULL && c->owner == t && e->flags == ML_REQ_ACTIVE && measuring &&
                  !__atomic_load_n(&ml_g.cancels, __ATOMIC_RELAXED))) {
        c->held = 0;
        const int64_t sent = e->sent != ML_BYTES_FROM_STATUS ? e->sent : (st ? ml_status_bytes(st) : 0);
        const int64_t recv = e->recv != ML_BYTES_FROM_STATUS ? e->recv : (st ? ml_status_bytes(st) : 0);
        ml_req_account(t, e, sent, recv);
        ml_req_remove(t, e);
        return;
    }
    ml_req_done_slow(t, c, st, measuring);
}

/* Whether the completion of a claimed request needs its status: for the bytes of a receive, and
 * once the process has cancelled anything, for MPI_Test_cancelled. (A send whose cancel, from
 * another thread, starts after this completion call began is counted as sent: cancelling a send
 * is deprecated in MPI-4 and Open MPI cannot do it. Every receive has its status.) */
static inline int ml_claim_needs_status(const ml_claim_t *c)
{
    if (!c->held) return 0;
    const ml_req_t *e = c->live ? c->live : &c->copy;
    return ml_req_sent(e) == ML_BYTES_FROM_STATUS || e->recv == ML_BYTES_FROM_STATUS ||
           __atomic_load_n(&ml_g.cancels, __ATOMIC_RELAXED);
}

/* One MPI call as the generated wrappers describe it to the observers (trace, counters): ranks are
 * in comm (translated to world ranks by the trace), status gives the actual source and tag of a
 * receive. */
typedef struct ml_call {
    int fn;
    uint64_t t0, t1;
    MPI_Comm comm;
    int dst, src, stag, rtag;
    int64_t sent, recv;
    uint64_t req;
    const MPI_Status *status;
} ml_call_t;

/* ------------------------------------------------------------------------------- observers
 * Modes beyond the profile see the calls through two hooks the generated wrappers call only when
 * the thread's `observe` bits are set (one predictable branch otherwise):
 *   ml_observe_enter(t, fn)  before the MPI call (bits in ML_OBS_AT_ENTER only)
 *   ml_observe_call(t, c)    after a successful call, with its peers, tags and bytes
 * runtime/src/calls/observe.c dispatches them to each mode; the wrappers of the frequent, short
 * functions inline ml_observe_call's dispatch (ml_observe_call_inline, ml_observe.h). */
void ml_observe_enter(ml_thread_t *t, int fn);
void ml_observe_call(ml_thread_t *t, const ml_call_t *c);
/* Called once at the end of MPI_Init, when every mode has decided whether it is on. */
void ml_observers_start(void);

/* ------------------------------------------------------------------------------- lifecycle
 * core.c; the MPI_Init, MPI_Finalize and MPI_Abort wrappers (handwritten.c, fortran.c) call these,
 * and core.c calls the modes' hooks from them through the table of modes (ml_modes.h). */
void ml_mpi_init_enter(int fn);      /* the MPI_Init wrapper is entered, before its time starts */
void ml_before_mpi_init(void);       /* just before PMPI_Init */
void ml_init_after_mpi_init(int thread_level, uint64_t t_begin);
void ml_mpi_init_leave(int fn);      /* the MPI_Init wrapper returns */
void ml_mpi_finalize_enter(void);    /* the MPI_Finalize wrapper is entered */
void ml_finalize_before_mpi_finalize(void);
/* MPI_Session_init and MPI_Session_finalize (their C wrappers call these, `inner: ml_lifetime`):
 * a program that uses MPI Sessions only is measured from the first to the last (core.c) */
int ml_lifetime_Session_init(MPI_Info info, MPI_Errhandler errhandler, MPI_Session *session);
int ml_lifetime_Session_finalize(MPI_Session *session);
/* the same around any binding's call (the Fortran wrappers): begin before it, end after it */
int ml_session_init_begin(void);
void ml_session_init_end(int first, const MPI_Session *session, uint64_t t0); /* NULL: the call failed */
int ml_session_finalize_begin(void);
void ml_session_finalize_end(int ends);
void ml_mpi_finalize_leave(void);    /* PMPI_Finalize returned */
void ml_pcontrol(int level);
void ml_abort_dump(void);
/* the modes that are on in this process: exit paths (payload.c) */
void ml_modes_emergency(int reason);

/* how a rank's measurements end: ML_END_* (ml_rundir.h); ML_END_SNAPSHOT: still running, an
 * MPI_Pcontrol(3|4) snapshot */

/* ------------------------------------------------------------------------------- logging
 * One line on stderr, "mpilens: [rank R pid P] ...", R "?" before MPI_Init; written with one
 * write(2). Level 0: always (errors, and what the user must know); 1-3: MPILENS_VERBOSE at least
 * that. Not for signal handlers (it formats with vsnprintf): they use ml_log_safe. */
void ml_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Async-signal-safe: the line is the concatenation of the strings given (NULL ends the list);
 * ml_utoa formats a number into buf (at least 24 bytes) for it. */
void ml_log_safe(int level, const char *first, ...) __attribute__((sentinel));
const char *ml_utoa(char *buf, long long v);

/* The path of a run-directory file: an ML_PATH_* format (runtime/spec/rundir.yaml) and its numbers,
 * under the run directory; its folder is created (from the run directory's descriptor, no link
 * followed: ml_files.h). 0 when the folder exists. */
int ml_rundir_path(char *path, size_t n, const char *format, ...) __attribute__((format(printf, 3, 4)));

/* Make t's scratch arrays hold at least n entries. */
void ml_scratch_grow(ml_thread_t *t, size_t n);
static inline void ml_scratch_reserve(ml_thread_t *t, size_t n)
{
    if (ML_UNLIKELY(n > t->scratch_cap)) ml_scratch_grow(t, n);
}

/* ------------------------------------------------------------------------------- regions */
uint32_t ml_region_path(ml_thread_t *t, uint32_t parent, const char *name);
void ml_region_begin(ml_thread_t *t, const char *name);
void ml_region_end(ml_thread_t *t, const char *name);
const char *ml_region_name(uint32_t path);
uint32_t ml_region_parent(uint32_t path);
uint32_t ml_region_count(void);
int ml_regions_init(uint32_t max_paths);
void ml_categories_init(const char *disabled);

/* ------------------------------------------------------------------------------- user counters */
/* kinds: ML_COUNTER_SUM, ML_COUNTER_LAST (ml_rundir.h) */
uint32_t ml_counter_count(void);
const char *ml_counter_name(uint32_t id);
int ml_counter_kind(uint32_t id);

#endif
