/* What the trace leaves out (MPILENS_TRACE_RANKS, _WINDOW, _PCONTROL, _EXCLUDE): the settings'
 * parsers, shared by the settings' checker (mpilens-check, through ml_config_load) and trace mode,
 * which applies them (trace.c: the ranks and the window's clock; trace_event.h: the gate every event
 * passes). No MPI here: the checker runs without MPI_Init. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ml_config.h"
#include "ml_functions.h"
#include "ml_trace_filter.h"

/* MPILENS_TRACE_RANKS: "0-3,8,12-15". Returns 0 (with *in: whether rank is listed, when rank >= 0)
 * or -1 for a malformed list. Empty: every rank. */
int ml_trace_ranks_parse(const char *s, int rank, int *in)
{
    if (in) *in = s == NULL || *s == 0;
    while (s && *s) {
        char *end;
        errno = 0;
        const long a = strtol(s, &end, 10);
        if (end == s || errno || a < 0 || a > 0x7fffffff || *s == '-' || *s == '+') return -1;
        long b = a;
        s = end;
        if (*s == '-') {
            const char *from = ++s;
            if (*from < '0' || *from > '9') return -1;
            errno = 0;
            b = strtol(from, &end, 10);
            if (end == from || errno || b < a || b > 0x7fffffff) return -1;
            s = end;
        }
        if (in && rank >= a && rank <= b) *in = 1;
        if (*s == ',') {
            s++;
            if (*s == 0) return -1;
        } else if (*s) {
            return -1;
        }
    }
    return 0;
}

static int seconds(const char *s, size_t n, double *out)
{
    char buf[64];
    if (n >= sizeof buf) return -1;
    memcpy(buf, s, n);
    buf[n] = 0;
    char *end;
    errno = 0;
    *out = strtod(buf, &end);
    return end == buf || *end || errno || !isfinite(*out) || *out < 0 ? -1 : 0;
}

/* MPILENS_TRACE_WINDOW: "START:END", "START:" or ":END" in seconds. Returns 0 with from and until
 * (INFINITY without an end), or -1. Empty: the whole run. */
int ml_trace_window_parse(const char *s, double *from, double *until)
{
    *from = 0;
    *until = INFINITY;
    if (s == NULL || *s == 0) return 0;
    const char *colon = strchr(s, ':');
    if (colon == NULL || strchr(colon + 1, ':') != NULL) return -1;
    if (colon > s && seconds(s, (size_t)(colon - s), from) != 0) return -1;
    if (colon[1] && seconds(colon + 1, strlen(colon + 1), until) != 0) return -1;
    return colon == s && colon[1] == 0 ? -1 : (*until > *from ? 0 : -1);
}

/* MPILENS_TRACE_EXCLUDE: MPI function names and class names, comma separated. Fills skip (one
 * byte per function, 1: left out) when not NULL. Returns 0 or -1 with a message naming the item. */
int ml_trace_exclude_parse(const char *s, unsigned char *skip, char *err, size_t errlen)
{
    if (skip) memset(skip, 0, ML_NFUNC);
    for (const char *p = s; p && *p;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        while (n && *p == ' ') p++, n--;
        while (n && p[n - 1] == ' ') n--;
        int found = 0;
        for (int c = 0; c < ML_NCLASS && !found; c++)
            if (strlen(ml_class_name[c]) == n && strncasecmp(ml_class_name[c], p, n) == 0) {
                found = 1;
                for (int f = 0; skip && f < ML_NFUNC; f++)
                    if (ml_fn_class[f] == c) skip[f] = 1;
            }
        for (int f = 0; f < ML_NFUNC && !found; f++)
            if (strlen(ml_fn_name[f]) == n && strncasecmp(ml_fn_name[f], p, n) == 0) {
                found = 1;
                if (skip) skip[f] = 1;
            }
        if (!found) {
            char classes[160] = "";
            for (int c = 0; c < ML_NCLASS; c++) {
                const size_t len = strlen(classes);
                snprintf(classes + len, sizeof classes - len, "%s%s", c ? ", " : "", ml_class_name[c]);
            }
            snprintf(err, errlen, "MPILENS_TRACE_EXCLUDE=%s: '%.*s' is neither an MPI function of this MPI nor a "
                     "class of functions (%s)", s, (int)n, p, classes);
            return -1;
        }
        if (comma == NULL) break;
        p = comma + 1;
    }
    return 0;
}

int ml_trace_filter_check(const ml_config_t *cfg, char *err, size_t errlen)
{
    double from, until;
    if (ml_trace_ranks_parse(cfg->trace_ranks, -1, NULL) != 0) {
        snprintf(err, errlen, "MPILENS_TRACE_RANKS=%s: not a list of ranks and ranges (e.g. 0-3,8,12-15)",
                 cfg->trace_ranks);
        return -1;
    }
    if (ml_trace_window_parse(cfg->trace_window, &from, &until) != 0) {
        snprintf(err, errlen, "MPILENS_TRACE_WINDOW=%s: not START:END in seconds, END after START "
                 "(e.g. 5:20, 5: or :20)", cfg->trace_window);
        return -1;
    }
    return ml_trace_exclude_parse(cfg->trace_exclude, NULL, err, errlen);
}
