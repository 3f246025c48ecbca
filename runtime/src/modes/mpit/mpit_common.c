/* MPI_T helpers shared by the runtime and the small tools (see mpit_common.h). */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mpit_common.h"

static int started, provided_level;

int mlt_init(void)
{
    if (started) return 0;
    int provided = 0;
    if (PMPI_T_init_thread(MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) return -1;
    provided_level = provided;
    started = 1;
    return 0;
}

int mlt_thread_level(void) { return started ? provided_level : -1; }

void mlt_finalize(void)
{
    if (started) PMPI_T_finalize();
    started = 0;
}

int mlt_cvar_find(const char *name)
{
    int index = -1;
    if (PMPI_T_cvar_get_index(name, &index) == MPI_SUCCESS && index >= 0) return index;
    /* an MPI without (or with a broken) get_index: scan the names */
    int n = 0;
    if (PMPI_T_cvar_get_num(&n) != MPI_SUCCESS) return -1;
    for (int i = 0; i < n; i++) {
        char nm[256];
        int nlen = sizeof nm, verb, bind, scope;
        MPI_Datatype dt;
        MPI_T_enum et;
        if (PMPI_T_cvar_get_info(i, nm, &nlen, &verb, &dt, &et, NULL, NULL, &bind, &scope) == MPI_SUCCESS &&
            strcmp(nm, name) == 0)
            return i;
    }
    return -1;
}

int mlt_cvar_info(int index, mlt_cvar_info_t *info)
{
    int nlen = sizeof info->name, dlen = sizeof info->desc;
    info->name[0] = info->desc[0] = 0;
    if (PMPI_T_cvar_get_info(index, info->name, &nlen, &info->verbosity, &info->type, &info->enumtype, info->desc,
                            &dlen, &info->bind, &info->scope) != MPI_SUCCESS)
        return -1;
    info->count = 1;
    return 0;
}

size_t mlt_numeric_size(MPI_Datatype t)
{
    if (t == MPI_INT || t == MPI_UNSIGNED) return sizeof(int);
    if (t == MPI_LONG || t == MPI_UNSIGNED_LONG) return sizeof(long);
    if (t == MPI_LONG_LONG || t == MPI_UNSIGNED_LONG_LONG || t == MPI_LONG_LONG_INT) return sizeof(long long);
    if (t == MPI_COUNT) return sizeof(MPI_Count);
    if (t == MPI_DOUBLE) return sizeof(double);
    return 0;
}

double mlt_as_double(MPI_Datatype t, const void *buf, int k)
{
    if (t == MPI_INT) return (double)((const int *)buf)[k];
    if (t == MPI_UNSIGNED) return (double)((const unsigned *)buf)[k];
    if (t == MPI_LONG) return (double)((const long *)buf)[k];
    if (t == MPI_UNSIGNED_LONG) return (double)((const unsigned long *)buf)[k];
    if (t == MPI_LONG_LONG || t == MPI_LONG_LONG_INT) return (double)((const long long *)buf)[k];
    if (t == MPI_UNSIGNED_LONG_LONG) return (double)((const unsigned long long *)buf)[k];
    if (t == MPI_COUNT) return (double)((const MPI_Count *)buf)[k];
    if (t == MPI_DOUBLE) return ((const double *)buf)[k];
    return 0.0;
}

static int is_unsigned(MPI_Datatype t)
{
    return t == MPI_UNSIGNED || t == MPI_UNSIGNED_LONG || t == MPI_UNSIGNED_LONG_LONG;
}

static void format_value(MPI_Datatype t, const void *buf, int k, char *out, size_t n)
{
    if (t == MPI_DOUBLE)
        snprintf(out, n, "%.17g", ((const double *)buf)[k]);
    else if (is_unsigned(t))
        snprintf(out, n, "%llu",
                 t == MPI_UNSIGNED ? (unsigned long long)((const unsigned *)buf)[k]
                 : t == MPI_UNSIGNED_LONG ? (unsigned long long)((const unsigned long *)buf)[k]
                                          : ((const unsigned long long *)buf)[k]);
    else
        snprintf(out, n, "%lld",
                 t == MPI_INT ? (long long)((const int *)buf)[k]
                 : t == MPI_LONG ? (long long)((const long *)buf)[k]
                 : t == MPI_COUNT ? (long long)((const MPI_Count *)buf)[k]
                                  : ((const long long *)buf)[k]);
}

int mlt_cvar_read(int index, void *obj, char *out, size_t n)
{
    mlt_cvar_info_t info;
    out[0] = 0;
    if (mlt_cvar_info(index, &info) != 0) return -1;
    MPI_T_cvar_handle h;
    int count = 0;
    if (PMPI_T_cvar_handle_alloc(index, obj, &h, &count) != MPI_SUCCESS) return -1;
    int rc = -1;
    const size_t esize = info.type == MPI_CHAR || info.type == MPI_C_BOOL ? 1 : mlt_numeric_size(info.type);
    if (esize > 0 && count > 0) {
        char *buf = calloc((size_t)count + 1, esize < 8 ? 8 : esize);
        if (buf != NULL && PMPI_T_cvar_read(h, buf) == MPI_SUCCESS) {
            rc = 0;
            if (info.type == MPI_C_BOOL) {
                snprintf(out, n, "%s", *(_Bool *)buf ? "true" : "false");
            } else if (info.type == MPI_CHAR) {
                buf[count] = 0;
                snprintf(out, n, "%s", buf);
            } else {
                size_t len = 0;
                for (int k = 0; k < count && k < 16 && len + 32 < n; k++) {
                    if (k) out[len++] = ',';
                    format_value(info.type, buf, k, out + len, n - len);
                    len += strlen(out + len);
                }
            }
        }
        free(buf);
    } else if (count == 0) {
        rc = 0;
    }
    PMPI_T_cvar_handle_free(&h);
    return rc;
}

/* An integer with an optional binary suffix (k, m, g). */
static int parse_int(const char *v, int want_unsigned, long long *s, unsigned long long *u)
{
    char *end;
    errno = 0;
    while (*v == ' ') v++;
    if (want_unsigned && *v == '-') return -1;
    long double scale = 1;
    if (want_unsigned)
        *u = strtoull(v, &end, 0);
    else
        *s = strtoll(v, &end, 0);
    if (errno || end == v) return -1;
    if (*end == 'k' || *end == 'K') scale = 1024.0L, end++;
    else if (*end == 'm' || *end == 'M') scale = 1024.0L * 1024, end++;
    else if (*end == 'g' || *end == 'G') scale = 1024.0L * 1024 * 1024, end++;
    if (*end != 0) return -1;
    if (scale != 1) {
        const long double x = (want_unsigned ? (long double)*u : (long double)*s) * scale;
        if (want_unsigned) {
            if (x > (long double)ULLONG_MAX) return -1;
            *u = (unsigned long long)x;
        } else {
            if (x > (long double)LLONG_MAX || x < (long double)LLONG_MIN) return -1;
            *s = (long long)x;
        }
    }
    return 0;
}

static int enum_value(MPI_T_enum et, const char *v, int *out, char *err, size_t errlen)
{
    int num = 0, nlen;
    char ename[128];
    nlen = sizeof ename;
    if (PMPI_T_enum_get_info(et, &num, ename, &nlen) != MPI_SUCCESS) return -1;
    char list[512] = "";
    long long asnum;
    const int numeric = parse_int(v, 0, &asnum, NULL) == 0;
    for (int i = 0; i < num; i++) {
        int value = 0;
        char item[128];
        nlen = sizeof item;
        if (PMPI_T_enum_get_item(et, i, &value, item, &nlen) != MPI_SUCCESS) continue;
        if (strcasecmp(item, v) == 0 || (numeric && asnum == value)) {
            *out = value;
            return 0;
        }
        const size_t len = strlen(list);
        if (len < sizeof list - 40) snprintf(list + len, sizeof list - len, "%s%s (%d)", i ? ", " : "", item, value);
    }
    snprintf(err, errlen, "'%s' is not one of its values: %s", v, list);
    return 1;
}

int mlt_cvar_write(int index, void *obj, const char *value, int flags, char *err, size_t errlen)
{
    mlt_cvar_info_t info;
    if (mlt_cvar_info(index, &info) != 0) {
        snprintf(err, errlen, "MPI_T cannot describe it");
        return -1;
    }
    if (!(flags & MLT_ANY_SCOPE) && (info.scope == MPI_T_SCOPE_CONSTANT || info.scope == MPI_T_SCOPE_READONLY)) {
        snprintf(err, errlen, "is read-only (MPI_T scope %s); it cannot be set", mlt_scope_name(info.scope));
        return -1;
    }
    union { int i; unsigned u; long l; unsigned long ul; long long ll; unsigned long long ull; MPI_Count c; double d; } x;
    const void *buf = &x;
    memset(&x, 0, sizeof x);
    if (info.type == MPI_CHAR) {
        buf = value;
    } else if (info.type == MPI_DOUBLE) {
        char *end;
        errno = 0;
        x.d = strtod(value, &end);
        if (errno || end == value || *end) {
            snprintf(err, errlen, "'%s' is not a number (datatype MPI_DOUBLE)", value);
            return -1;
        }
    } else if (info.type == MPI_C_BOOL) {
        static const char *const yes[] = {"1", "true", "yes", "on"}, *const no[] = {"0", "false", "no", "off"};
        int ok = 0;
        for (int i = 0; i < 4; i++) {
            if (strcasecmp(value, yes[i]) == 0) x.i = 1, ok = 1;
            if (strcasecmp(value, no[i]) == 0) x.i = 0, ok = 1;
        }
        if (!ok) {
            snprintf(err, errlen, "'%s' is not a boolean (datatype MPI_C_BOOL: 1/0, true/false)", value);
            return -1;
        }
        _Bool b = x.i != 0;
        memset(&x, 0, sizeof x);
        memcpy(&x, &b, sizeof b);
    } else if (info.enumtype != MPI_T_ENUM_NULL && info.type == MPI_INT) {
        const int rc = enum_value(info.enumtype, value, &x.i, err, errlen);
        if (rc != 0) {
            if (rc < 0) snprintf(err, errlen, "MPI_T cannot describe its values");
            return -1;
        }
    } else if (mlt_numeric_size(info.type) > 0) {
        long long s = 0;
        unsigned long long u = 0;
        const int uns = is_unsigned(info.type);
        if (parse_int(value, uns, &s, &u) != 0) {
            snprintf(err, errlen, "'%s' is not %s integer (datatype %s)", value, uns ? "a non-negative" : "an",
                     mlt_type_name(info.type));
            return -1;
        }
        int fits = 1;
        if (info.type == MPI_INT) fits = s >= INT_MIN && s <= INT_MAX, x.i = (int)s;
        else if (info.type == MPI_UNSIGNED) fits = u <= UINT_MAX, x.u = (unsigned)u;
        else if (info.type == MPI_LONG) fits = s >= LONG_MIN && s <= LONG_MAX, x.l = (long)s;
        else if (info.type == MPI_UNSIGNED_LONG) fits = u <= ULONG_MAX, x.ul = (unsigned long)u;
        else if (info.type == MPI_UNSIGNED_LONG_LONG) x.ull = u;
        else if (info.type == MPI_COUNT) x.c = (MPI_Count)s;
        else x.ll = s;
        if (!fits) {
            snprintf(err, errlen, "%s is out of range for its datatype %s", value, mlt_type_name(info.type));
            return -1;
        }
    } else {
        snprintf(err, errlen, "has a datatype mpilens cannot write");
        return -1;
    }
    if (flags & MLT_DRY_RUN) return 0;
    MPI_T_cvar_handle h;
    int count = 0;
    int rc = PMPI_T_cvar_handle_alloc(index, obj, &h, &count);
    if (rc != MPI_SUCCESS) {
        snprintf(err, errlen, "MPI_T cannot open it (error %d)", rc);
        return -1;
    }
    if (info.type != MPI_CHAR && count != 1) {
        PMPI_T_cvar_handle_free(&h);
        snprintf(err, errlen, "is an array of %d values; mpilens sets scalar cvars only", count);
        return -1;
    }
    if (info.type == MPI_CHAR && (int)strlen(value) >= count && count > 0) {
        PMPI_T_cvar_handle_free(&h);
        snprintf(err, errlen, "'%s' is longer than its %d characters", value, count - 1);
        return -1;
    }
    rc = PMPI_T_cvar_write(h, buf);
    PMPI_T_cvar_handle_free(&h);
    if (rc == MPI_SUCCESS) return 0;
    if (rc == MPI_T_ERR_CVAR_SET_NEVER)
        snprintf(err, errlen, "is read-only in this MPI (MPI_T_ERR_CVAR_SET_NEVER)");
    else if (rc == MPI_T_ERR_CVAR_SET_NOT_NOW)
        snprintf(err, errlen, "cannot be changed at this point (MPI_T_ERR_CVAR_SET_NOT_NOW)");
    else
        snprintf(err, errlen, "the MPI refused the value '%s' (MPI_T error %d)", value, rc);
    return -1;
}

int mlt_split(const char *list, mlt_item_fn fn, void *arg, char *err, size_t errlen)
{
    if (list == NULL) return 0;
    const size_t n = strlen(list);
    char *copy = malloc(n + 1);
    if (copy == NULL) return -1;
    memcpy(copy, list, n + 1);
    /* cut at the commas that start a new "name=..." item */
    char *items[256];
    int nitems = 0;
    char *p = copy;
    while (*p == ' ' || *p == ',') p++;
    if (*p) items[nitems++] = p;
    for (char *c = strchr(p, ','); c != NULL; c = strchr(c + 1, ',')) {
        const char *next = c + 1;
        while (*next == ' ') next++;
        const char *eq = strchr(next, '='), *comma = strchr(next, ',');
        if (*next == 0 || (eq != NULL && (comma == NULL || eq < comma))) {
            *c = 0;
            if (*next && nitems < 256) items[nitems++] = (char *)next;
        }
    }
    int rc = 0;
    for (int i = 0; i < nitems && rc == 0; i++) {
        char *eq = strchr(items[i], '=');
        if (eq == NULL || eq == items[i]) {
            snprintf(err, errlen, "'%s' is not name=value", items[i]);
            rc = -1;
            break;
        }
        *eq = 0;
        char *end = eq;
        while (end > items[i] && end[-1] == ' ') *--end = 0;
        rc = fn(items[i], eq + 1, arg);
    }
    free(copy);
    return rc;
}

const char *mlt_type_name(MPI_Datatype t)
{
    if (t == MPI_INT) return "MPI_INT";
    if (t == MPI_UNSIGNED) return "MPI_UNSIGNED";
    if (t == MPI_LONG) return "MPI_LONG";
    if (t == MPI_UNSIGNED_LONG) return "MPI_UNSIGNED_LONG";
    if (t == MPI_LONG_LONG || t == MPI_LONG_LONG_INT) return "MPI_LONG_LONG";
    if (t == MPI_UNSIGNED_LONG_LONG) return "MPI_UNSIGNED_LONG_LONG";
    if (t == MPI_COUNT) return "MPI_COUNT";
    if (t == MPI_DOUBLE) return "MPI_DOUBLE";
    if (t == MPI_CHAR) return "MPI_CHAR";
    if (t == MPI_C_BOOL) return "MPI_C_BOOL";
    return "other";
}

const char *mlt_bind_name(int b)
{
    switch (b) {
    case MPI_T_BIND_NO_OBJECT: return "none";
    case MPI_T_BIND_MPI_COMM: return "communicator";
    case MPI_T_BIND_MPI_DATATYPE: return "datatype";
    case MPI_T_BIND_MPI_ERRHANDLER: return "errhandler";
    case MPI_T_BIND_MPI_FILE: return "file";
    case MPI_T_BIND_MPI_GROUP: return "group";
    case MPI_T_BIND_MPI_OP: return "op";
    case MPI_T_BIND_MPI_REQUEST: return "request";
    case MPI_T_BIND_MPI_WIN: return "window";
    case MPI_T_BIND_MPI_MESSAGE: return "message";
    case MPI_T_BIND_MPI_INFO: return "info";
    default: return "other";
    }
}

const char *mlt_scope_name(int s)
{
    switch (s) {
    case MPI_T_SCOPE_CONSTANT: return "constant";
    case MPI_T_SCOPE_READONLY: return "readonly";
    case MPI_T_SCOPE_LOCAL: return "local";
    case MPI_T_SCOPE_GROUP: return "group";
    case MPI_T_SCOPE_GROUP_EQ: return "group_eq";
    case MPI_T_SCOPE_ALL: return "all";
    case MPI_T_SCOPE_ALL_EQ: return "all_eq";
    default: return "other";
    }
}

const char *mlt_class_name(int c)
{
    switch (c) {
    case MPI_T_PVAR_CLASS_STATE: return "state";
    case MPI_T_PVAR_CLASS_LEVEL: return "level";
    case MPI_T_PVAR_CLASS_SIZE: return "size";
    case MPI_T_PVAR_CLASS_PERCENTAGE: return "percentage";
    case MPI_T_PVAR_CLASS_HIGHWATERMARK: return "highwatermark";
    case MPI_T_PVAR_CLASS_LOWWATERMARK: return "lowwatermark";
    case MPI_T_PVAR_CLASS_COUNTER: return "counter";
    case MPI_T_PVAR_CLASS_AGGREGATE: return "aggregate";
    case MPI_T_PVAR_CLASS_TIMER: return "timer";
    case MPI_T_PVAR_CLASS_GENERIC: return "generic";
    default: return "other";
    }
}

const char *mlt_verbosity_name(int v)
{
    switch (v) {
    case MPI_T_VERBOSITY_USER_BASIC: return "user_basic";
    case MPI_T_VERBOSITY_USER_DETAIL: return "user_detail";
    case MPI_T_VERBOSITY_USER_ALL: return "user_all";
    case MPI_T_VERBOSITY_TUNER_BASIC: return "tuner_basic";
    case MPI_T_VERBOSITY_TUNER_DETAIL: return "tuner_detail";
    case MPI_T_VERBOSITY_TUNER_ALL: return "tuner_all";
    case MPI_T_VERBOSITY_MPIDEV_BASIC: return "mpidev_basic";
    case MPI_T_VERBOSITY_MPIDEV_DETAIL: return "mpidev_detail";
    case MPI_T_VERBOSITY_MPIDEV_ALL: return "mpidev_all";
    default: return "other";
    }
}

/* ------------------------------------------------------------------------------- requests */
#if defined(OPEN_MPI)
#define MLT_MPI_NAME "Open MPI"
#elif defined(MPICH)
#define MLT_MPI_NAME "MPICH"
#else
#define MLT_MPI_NAME "this MPI"
#endif

static int edit_distance(const char *a, const char *b)
{
    const size_t la = strlen(a), lb = strlen(b);
    if (la > 255 || lb > 255) return 1000;
    int row[256];
    for (size_t j = 0; j <= lb; j++) row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            const int up = row[j];
            const int sub = diag + ((a[i - 1] | 32) != (b[j - 1] | 32));
            int best = up + 1 < row[j - 1] + 1 ? up + 1 : row[j - 1] + 1;
            row[j] = sub < best ? sub : best;
            diag = up;
        }
    }
    return row[lb];
}

/* The cvar whose name is closest to a misspelled one, or "" */
static void closest_cvar(const char *name, char *out, size_t n)
{
    int count = 0, best = 4;
    out[0] = 0;
    PMPI_T_cvar_get_num(&count);
    for (int i = 0; i < count; i++) {
        mlt_cvar_info_t info;
        if (mlt_cvar_info(i, &info) != 0) continue;
        const int d = edit_distance(name, info.name);
        if (d < best) {
            best = d;
            snprintf(out, n, "%s", info.name);
        }
    }
}

struct parse_ctx {
    const char *setting;
    int comm;
    mlt_req_t *reqs;
    int max, n;
    char *err;
    size_t errlen;
};

static int parse_item(const char *name, const char *value, void *arg)
{
    struct parse_ctx *c = arg;
    if (c->n >= c->max) {
        snprintf(c->err, c->errlen, "%s: more than %d settings", c->setting, c->max);
        return -1;
    }
    mlt_req_t *r = &c->reqs[c->n];
    memset(r, 0, sizeof *r);
    if (c->comm) {
        const char *colon = strrchr(name, ':');
        if (colon == NULL || colon == name) {
            snprintf(c->err, c->errlen, "%s: '%s=%s' is not commname:cvar=value", c->setting, name, value);
            return -1;
        }
        snprintf(r->comm, sizeof r->comm, "%.*s", (int)(colon - name), name);
        name = colon + 1;
    }
    snprintf(r->name, sizeof r->name, "%s", name);
    snprintf(r->value, sizeof r->value, "%s", value);
    r->index = mlt_cvar_find(name);
    if (r->index < 0) {
        char near[256];
        closest_cvar(name, near, sizeof near);
        snprintf(c->err, c->errlen, "%s: %s is not a control variable of " MLT_MPI_NAME "%s%s%s (`mpilens mpit list --cvars` lists them)",
                 c->setting, name, near[0] ? "; did you mean " : "", near, near[0] ? "?" : "");
        return -1;
    }
    mlt_cvar_info_t info;
    if (mlt_cvar_info(r->index, &info) != 0) {
        snprintf(c->err, c->errlen, "%s: MPI_T cannot describe %s", c->setting, name);
        return -1;
    }
    r->scope = info.scope;
    r->bind = info.bind;
    char why[512];
    int flags = MLT_DRY_RUN;
#if defined(OPEN_MPI)
    /* Open MPI reads every MCA parameter from OMPI_MCA_<name> when it registers it in MPI_Init,
     * also those MPI_T calls read-only (set once at startup); constants cannot be set at all */
    if (!c->comm && info.scope == MPI_T_SCOPE_READONLY) flags |= MLT_ANY_SCOPE, r->via_env = 1;
#endif
    if (mlt_cvar_write(r->index, NULL, value, flags, why, sizeof why) != 0) {
        if (c->comm && (info.scope == MPI_T_SCOPE_READONLY || info.scope == MPI_T_SCOPE_CONSTANT))
            snprintf(c->err, c->errlen, "%s: %s %s after MPI_Init, so it cannot be set per communicator%s", c->setting,
                     name, info.scope == MPI_T_SCOPE_CONSTANT ? "is a constant" : "cannot change",
                     info.scope == MPI_T_SCOPE_READONLY ? " (MPILENS_CVARS sets it for the whole run)" : "");
        else
            snprintf(c->err, c->errlen, "%s: %s %s", c->setting, name, why);
        return -1;
    }
#if defined(OPEN_MPI)
    r->via_env = !c->comm; /* before MPI_Init, Open MPI takes them all from the environment */
#endif
    if (!c->comm && info.bind == MPI_T_BIND_NO_OBJECT) mlt_cvar_read(r->index, NULL, r->old, sizeof r->old);
    c->n++;
    return 0;
}

int mlt_parse_requests(const char *cvars, const char *comm_cvars, mlt_req_t *reqs, int max, int *n, char *err,
                       size_t errlen)
{
    struct parse_ctx c = {"MPILENS_CVARS", 0, reqs, max, 0, err, errlen};
    *n = 0;
    char why[256] = "";
    if (mlt_split(cvars, parse_item, &c, why, sizeof why) != 0) {
        if (why[0]) snprintf(err, errlen, "MPILENS_CVARS=%s: %s", cvars, why);
        return -1;
    }
    c.setting = "MPILENS_COMM_CVARS";
    c.comm = 1;
    if (mlt_split(comm_cvars, parse_item, &c, why, sizeof why) != 0) {
        if (why[0]) snprintf(err, errlen, "MPILENS_COMM_CVARS=%s: %s", comm_cvars, why);
        return -1;
    }
    *n = c.n;
    return 0;
}
