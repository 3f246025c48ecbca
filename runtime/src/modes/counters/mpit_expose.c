/* MPI_T exposure of the mpilens counters (counters mode).
 *
 * Tools that read MPI_T performance variables (TAU, Caliper, a user's own client) see the mpilens
 * counters as extra pvars named mpilens_<counter> (lower case), next to the MPI's own: the pvar
 * query and read functions are wrapped here (the generator leaves every MPI_T_ function to the MPI).
 *
 *  - numbering: the MPI's pvars keep their indices 0..N-1; ours follow, N..N+K-1, with N read from
 *    the MPI at each call (an MPI that adds pvars later shifts ours; clients should look pvars up
 *    by name, as the standard recommends);
 *  - every mpilens pvar is bound to no object, read-only, continuous, one element: counters are
 *    class COUNTER (MPI_UNSIGNED_LONG_LONG), the receive-post timer class TIMER in nanoseconds,
 *    the posted-queue length LEVEL and its watermarks HIGHWATERMARK / LOWWATERMARK (MPI_COUNT);
 *  - handles of our pvars are addresses in a static table, told apart from the MPI's by address;
 *    sessions are the MPI's (ours work in any session); start/stop answer NO_STARTSTOP, reset and
 *    write NO_WRITE; MPI_T_PVAR_ALL_HANDLES goes to the MPI alone;
 *  - outside the counters mode (or before MPI_Init) nothing is added.
 * Categories are not extended: our pvars belong to no category. */
#include <stdio.h>
#include <string.h>

#include "ml.h"
#include "ml_counters.h"

#define MAX_EXPOSED 64
static struct exposed_handle {
    int index;
} handles[MAX_EXPOSED];

static int ours(MPI_T_pvar_handle h)
{
    const char *p = (const char *)h, *lo = (const char *)handles, *hi = (const char *)(handles + MAX_EXPOSED);
    return p >= lo && p < hi;
}

static int base(void)
{
    int n = 0;
    return PMPI_T_pvar_get_num(&n) == MPI_SUCCESS ? n : -1;
}

static int cls_of(int kind)
{
    static const int map[] = {MPI_T_PVAR_CLASS_COUNTER, MPI_T_PVAR_CLASS_TIMER, MPI_T_PVAR_CLASS_LEVEL,
                              MPI_T_PVAR_CLASS_HIGHWATERMARK, MPI_T_PVAR_CLASS_LOWWATERMARK};
    return map[kind];
}

static void lower_name(char *out, size_t n, const char *name)
{
    size_t i = 0;
    for (const char *p = "mpilens_"; *p && i + 1 < n; p++) out[i++] = *p;
    for (const char *p = name; *p && i + 1 < n; p++) out[i++] = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
    out[i] = 0;
}

/* MPI_T string convention: copy at most *len - 1 characters, then set *len to the full length + 1 */
static void put_string(char *dst, int *len, const char *src)
{
    if (len == NULL) return;
    const int full = (int)strlen(src) + 1;
    if (dst != NULL && *len > 0) {
        const int n = full < *len ? full : *len;
        memcpy(dst, src, (size_t)n - 1);
        dst[n - 1] = 0;
    }
    *len = full;
}

int ml_exposed_T_pvar_get_num(int *num_pvar)
{
    const int rc = PMPI_T_pvar_get_num(num_pvar);
    if (rc == MPI_SUCCESS) *num_pvar += ml_spc_exposed();
    return rc;
}

int ml_exposed_T_pvar_get_info(int pvar_index, char *name, int *name_len, int *verbosity, int *var_class,
                                  MPI_Datatype *datatype, MPI_T_enum *enumtype, char *desc, int *desc_len, int *bind,
                                  int *readonly, int *continuous, int *atomic)
{
    const int n = ml_spc_exposed(), b = n ? base() : -1;
    if (n == 0 || b < 0 || pvar_index < b)
        return PMPI_T_pvar_get_info(pvar_index, name, name_len, verbosity, var_class, datatype, enumtype, desc,
                                    desc_len, bind, readonly, continuous, atomic);
    const int i = pvar_index - b;
    int kind;
    const char *d;
    const char *nm = i < n ? ml_spc_exposed_info(i, &kind, &d) : NULL;
    if (nm == NULL) return MPI_T_ERR_INVALID_INDEX;
    char full[128], text[320];
    lower_name(full, sizeof full, nm);
    snprintf(text, sizeof text, "mpilens: %s%s", d, ml_spc_exposed_on(i) ? "" : " (not measured in this run)");
    put_string(name, name_len, full);
    put_string(desc, desc_len, text);
    if (verbosity) *verbosity = MPI_T_VERBOSITY_USER_BASIC;
    if (var_class) *var_class = cls_of(kind);
    if (datatype) *datatype = kind >= 2 ? MPI_COUNT : MPI_UNSIGNED_LONG_LONG;
    if (enumtype) *enumtype = MPI_T_ENUM_NULL;
    if (bind) *bind = MPI_T_BIND_NO_OBJECT;
    if (readonly) *readonly = 1;
    if (continuous) *continuous = 1;
    if (atomic) *atomic = 0;
    return MPI_SUCCESS;
}

int ml_exposed_T_pvar_get_index(const char *name, int var_class, int *pvar_index)
{
    const int n = ml_spc_exposed();
    if (n > 0 && name != NULL && strncmp(name, "mpilens_", 8) == 0) {
        for (int i = 0; i < n; i++) {
            int kind;
            const char *d;
            char full[128];
            lower_name(full, sizeof full, ml_spc_exposed_info(i, &kind, &d));
            if (strcmp(full, name) == 0 && cls_of(kind) == var_class) {
                const int b = base();
                if (b < 0) return MPI_T_ERR_NOT_INITIALIZED;
                *pvar_index = b + i;
                return MPI_SUCCESS;
            }
        }
    }
    return PMPI_T_pvar_get_index(name, var_class, pvar_index);
}

int ml_exposed_T_pvar_handle_alloc(MPI_T_pvar_session session, int pvar_index, void *obj_handle,
                                      MPI_T_pvar_handle *handle, int *count)
{
    const int n = ml_spc_exposed(), b = n ? base() : -1;
    if (n == 0 || b < 0 || pvar_index < b) return PMPI_T_pvar_handle_alloc(session, pvar_index, obj_handle, handle, count);
    const int i = pvar_index - b;
    if (i >= n || i >= MAX_EXPOSED) return MPI_T_ERR_INVALID_INDEX;
    handles[i].index = i;
    *handle = (MPI_T_pvar_handle)(void *)&handles[i];
    *count = 1;
    return MPI_SUCCESS;
}

int ml_exposed_T_pvar_handle_free(MPI_T_pvar_session session, MPI_T_pvar_handle *handle)
{
    if (handle != NULL && ours(*handle)) {
        *handle = MPI_T_PVAR_HANDLE_NULL;
        return MPI_SUCCESS;
    }
    return PMPI_T_pvar_handle_free(session, handle);
}

int ml_exposed_T_pvar_start(MPI_T_pvar_session session, MPI_T_pvar_handle handle)
{
    if (ours(handle)) return MPI_T_ERR_PVAR_NO_STARTSTOP;
    return PMPI_T_pvar_start(session, handle);
}

int ml_exposed_T_pvar_stop(MPI_T_pvar_session session, MPI_T_pvar_handle handle)
{
    if (ours(handle)) return MPI_T_ERR_PVAR_NO_STARTSTOP;
    return PMPI_T_pvar_stop(session, handle);
}

int ml_exposed_T_pvar_read(MPI_T_pvar_session session, MPI_T_pvar_handle handle, void *buf)
{
    if (!ours(handle)) return PMPI_T_pvar_read(session, handle, buf);
    const struct exposed_handle *h = (const struct exposed_handle *)(void *)handle;
    if (!ml_spc_exposed()) return MPI_T_ERR_INVALID_HANDLE;
    int kind;
    const char *d;
    ml_spc_exposed_info(h->index, &kind, &d);
    const int64_t v = ml_spc_exposed_value(h->index);
    if (kind >= 2) {
        const MPI_Count c = (MPI_Count)v;
        memcpy(buf, &c, sizeof c);
    } else {
        const unsigned long long u = v > 0 ? (unsigned long long)v : 0;
        memcpy(buf, &u, sizeof u);
    }
    return MPI_SUCCESS;
}

int ml_exposed_T_pvar_readreset(MPI_T_pvar_session session, MPI_T_pvar_handle handle, void *buf)
{
    if (ours(handle)) return MPI_T_ERR_PVAR_NO_WRITE;
    return PMPI_T_pvar_readreset(session, handle, buf);
}

int ml_exposed_T_pvar_reset(MPI_T_pvar_session session, MPI_T_pvar_handle handle)
{
    if (ours(handle)) return MPI_T_ERR_PVAR_NO_WRITE;
    return PMPI_T_pvar_reset(session, handle);
}

int ml_exposed_T_pvar_write(MPI_T_pvar_session session, MPI_T_pvar_handle handle, const void *buf)
{
    if (ours(handle)) return MPI_T_ERR_PVAR_NO_WRITE;
    return PMPI_T_pvar_write(session, handle, buf);
}
