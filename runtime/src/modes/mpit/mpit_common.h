/* MPI_T helpers shared by the runtime (runtime/src/modes/mpit/mpit.c), the configuration checker
 * (mpilens-check) and the variable lister (mpilens-mpit). They depend on nothing but <mpi.h>, so
 * the small tools link them without the rest of the runtime.
 *
 * Variables are always found by name (MPI_T_cvar_get_index / MPI_T_pvar_get_index, or a scan of
 * the names when the MPI lacks them), never by a fixed index: indices differ between versions
 * and builds, and grow during MPI_Init as components register theirs. */
#ifndef ML_MPIT_COMMON_H
#define ML_MPIT_COMMON_H

#include <mpi.h>
#include <stddef.h>

/* Start MPI_T once for this process (any thread level MPI_T gives). 0 or -1. */
int mlt_init(void);
/* The thread level MPI_T_init_thread provided (-1 before mlt_init): another thread may call
 * MPI_T functions while the application is in MPI only at MPI_THREAD_MULTIPLE. */
int mlt_thread_level(void);

/* Close MPI_T (Open MPI then forgets its parameters, to register them afresh in MPI_Init). */
void mlt_finalize(void);

/* Index of the control variable `name`, or -1. */
int mlt_cvar_find(const char *name);

typedef struct mlt_cvar_info {
    char name[256];
    char desc[1024];
    int verbosity, bind, scope, count;
    MPI_Datatype type;
    MPI_T_enum enumtype; /* MPI_T_ENUM_NULL when not an enumeration */
} mlt_cvar_info_t;

int mlt_cvar_info(int index, mlt_cvar_info_t *info);

/* Current value of a cvar as text (obj: the bound object, NULL for MPI_T_BIND_NO_OBJECT). */
int mlt_cvar_read(int index, void *obj, char *out, size_t n);

/* Write value (text) into a cvar after checking it fits its datatype (and its enumeration).
 * Returns 0, or -1 with a one-line reason in err (the reason does not repeat the name).
 * MLT_DRY_RUN: only the checks that need no write; MLT_ANY_SCOPE: do not refuse read-only scopes
 * (for a value that will reach the MPI another way, e.g. Open MPI's OMPI_MCA_ environment). */
#define MLT_DRY_RUN 1
#define MLT_ANY_SCOPE 2
int mlt_cvar_write(int index, void *obj, const char *value, int flags, char *err, size_t errlen);

/* One setting of MPILENS_CVARS (comm empty) or MPILENS_COMM_CVARS. */
typedef struct mlt_req {
    char comm[128];
    char name[256];
    char value[512];
    char old[512];     /* value before mpilens set it (global: at MPI_Init; comm: when applied) */
    char now[512];     /* value read back after it was set */
    int index, scope, bind;
    int via_env;       /* Open MPI: set as OMPI_MCA_<name> before MPI_Init */
    int applied;       /* read back after setting */
} mlt_req_t;

/* Parse and check MPILENS_CVARS and MPILENS_COMM_CVARS through MPI_T (started with mlt_init):
 * every name must exist and every value fit; nothing is written. Fills reqs (at most max) and
 * *n, reading the current (old) values of the global ones. Returns 0, or -1 with one line in
 * err naming the setting and the variable. */
int mlt_parse_requests(const char *cvars, const char *comm_cvars, mlt_req_t *reqs, int max, int *n, char *err,
                       size_t errlen);

/* Split a "name=value,name=value" list. A comma followed by text without '=' belongs to the
 * previous value (Open MPI values such as "self,vader"). Calls fn(name, value, arg) for each item;
 * stops at the first nonzero return. Returns -1 with err filled for an item without '='. */
typedef int (*mlt_item_fn)(const char *name, const char *value, void *arg);
int mlt_split(const char *list, mlt_item_fn fn, void *arg, char *err, size_t errlen);

const char *mlt_type_name(MPI_Datatype t);
const char *mlt_bind_name(int bind);
const char *mlt_scope_name(int scope);
const char *mlt_class_name(int var_class);
const char *mlt_verbosity_name(int verbosity);
/* Whether a datatype is one mpilens reads as a number (and its size in bytes), or 0. */
size_t mlt_numeric_size(MPI_Datatype t);
/* Element k of a pvar/cvar buffer of datatype t as a double. */
double mlt_as_double(MPI_Datatype t, const void *buf, int k);

#endif
