/* A thread's state (statistics, call sites, the modes' parts) and the process's (ml_g).
 * Part of the core's hot path (ml.h includes every part, in order; a part includes the one before
 * it). Internal header, never installed. */
#ifndef ML_THREAD_H
#define ML_THREAD_H

#include "ml_clock.h"

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

#endif
