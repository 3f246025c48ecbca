/* The table of modes: every measurement besides the profile, and the points of the process's
 * life where core.c calls it (ml_modes.h says when each hook runs). To add a mode, add its entry
 * here; docs/architecture.md has the checklist.
 *
 * core.c calls each hook for the modes in the order of this table, so the order is part of the
 * behaviour (it is the order the runtime has always called them in):
 * - Hooks that communicate on ml_g.comm (trace's init and finish: the exchange that measures
 *   clock offsets to rank 0; the counters' init: MPILENS_LIVE_DIR's check) are reached by every
 *   rank in the same order, the table's, whatever happened to the rank's files: a mode whose file
 *   a rank cannot write stays on in that rank, writing nothing, so that its finish still comes.
 * - MPI_Init: counters before papi (papi publishes the counters as software-defined events, so
 *   they must exist). memory's init_enter is the only hook before MPI_Init's time starts, so that
 *   its residency sample is not charged to MPI_Init; mpit's before_mpi_init sets the cvars just
 *   before PMPI_Init reads them, and its after_mpi_init reads them back before meta.json.
 * - MPI_Finalize: memory's finalize_enter samples before anything of the tool's finalize, so what
 *   the tool frees and unmaps there is charged to MPI_Finalize, and its finalize_leave comes after
 *   PMPI_Finalize; every finish comes before the profile is gathered, so mpit's last pvar reading
 *   and trace's end clock offsets do not see the gather's traffic.
 * - Exit paths: after this rank's partial profile is written, trace then memory, then io. */
#include "ml.h"
#include "ml_intervals.h"
#include "ml_io.h"
#include "ml_memory.h"
#include "ml_modes.h"
#include "ml_mpit.h"
#include "ml_papi.h"
#include "ml_counters.h"
#include "ml_trace.h"

const ml_mode_t ml_modes[] = {
    /* the profile itself is core.c's (always on): listed for its name only */
    {.name = "profile", .bit = ML_MODE_PROFILE},
    {
        .name = "trace",
        .bit = ML_MODE_TRACE,
        .init = ml_trace_init,
        .thread = ml_trace_thread,
        .pcontrol = ml_trace_pcontrol,
        .finish = ml_trace_finish,
        .emergency = ml_trace_emergency,
        .region = ml_trace_on_region,
        .user_counter = ml_trace_on_counter,
        .comm_freed = ml_trace_on_comm_freed,
        .req_done = ml_trace_on_req_done,
        .recv_taken = ml_trace_late_alone,
    },
    {
        /* wanted for the cvars of any mode too: its hooks start the pvar session in mpit mode only */
        .name = "mpit",
        .bit = ML_MODE_MPIT,
        .wanted = ml_mpit_wanted,
        .before_mpi_init = ml_mpit_before_init,
        .after_mpi_init = ml_mpit_after_init,
        .init = ml_mpit_init,
        .finish = ml_mpit_finish,
        .region = ml_mpit_on_region,
        .comm_freed = ml_mpit_on_comm_freed,
        .meta_json = ml_mpit_meta_json,
    },
    {
        .name = "memory",
        .bit = ML_MODE_MEMORY,
        .load = ml_memory_load,
        .init_enter = ml_memory_init_begin,
        .init = ml_memory_init,
        .init_leave = ml_memory_init_end,
        .finalize_enter = ml_memory_finalize_begin,
        .finalize_leave = ml_memory_finish,
        .emergency = ml_memory_emergency,
        .region = ml_memory_on_region,
    },
    {
        .name = "counters",
        .bit = ML_MODE_COUNTERS,
        .init = ml_spc_init,
        .thread = ml_spc_thread,
        .finish = ml_spc_finish,
        .req_posted = ml_spc_posted,
        .req_done = ml_spc_done,
    },
    {
        .name = "papi",
        .bit = ML_MODE_PAPI,
        .load = ml_papi_load,
        .init = ml_papi_init,
        .start = ml_papi_begin,
        .finish = ml_papi_finish,
        .region_leaving = ml_papi_on_region_leaving,
    },
    {
        /* MPILENS_INTERVALS, not a --mode */
        .name = "intervals",
        .wanted = ml_intervals_wanted,
        .load = ml_intervals_load,
        .init = ml_intervals_start,
        .finish = ml_intervals_finish,
        .emergency = ml_intervals_emergency,
        .payload_tail = ml_intervals_payload,
    },
    {
        /* MPILENS_IO (on by default), not a --mode: I/O per file; the MPI_File_ wrappers call it */
        .name = "io",
        .wanted = ml_io_wanted,
        .load = ml_io_load,
        .init = ml_io_start,
        .finish = ml_io_finish,
        .emergency = ml_io_emergency,
    },
};

const int ml_nmodes = (int)(sizeof ml_modes / sizeof ml_modes[0]);
/* core.c keeps the wanted and on modes as bits of a uint64_t */
_Static_assert(sizeof ml_modes / sizeof ml_modes[0] <= 64, "at most 64 entries in the table of modes");
