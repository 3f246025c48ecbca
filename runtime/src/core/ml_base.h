/* The runtime's common ground: the MPI header and its ABI, the attribute macros of the hot path,
 * the hash of its tables, the observers' bits.
 * Part of the core's hot path (ml.h includes every part, in order; a part includes the one before
 * it). Internal header, never installed. */
#ifndef ML_BASE_H
#define ML_BASE_H

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

#endif
