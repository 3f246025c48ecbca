/* Parsing of the MPILENS_* settings against the table generated from runtime/spec/config.yaml.
 * Every problem becomes one line naming the variable; the caller decides what to do with it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ml_config.h"

extern char **environ;
/* the modes' checks of their own settings (modes/settings_checks.c), NULL-terminated */
extern int (*const ml_config_checks[])(const ml_config_t *cfg, char *err, size_t errlen);

static int parse_bool(const char *v, int *out)
{
    static const char *const yes[] = {"1", "true", "yes", "on"}, *const no[] = {"0", "false", "no", "off"};
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(v, yes[i]) == 0) return *out = 1, 0;
        if (strcasecmp(v, no[i]) == 0) return *out = 0, 0;
    }
    return -1;
}

static int choice_index(const ml_setting_t *s, const char *v, size_t n)
{
    for (int i = 0; s->choices[i]; i++)
        if (strlen(s->choices[i]) == n && strncasecmp(s->choices[i], v, n) == 0) return i;
    return -1;
}

static void choices_text(const ml_setting_t *s, unsigned mask, char *out, size_t n)
{
    out[0] = 0;
    for (int i = 0; s->choices[i]; i++) {
        if (mask && !(mask & (1u << i))) continue;
        const size_t len = strlen(out);
        snprintf(out + len, n - len, "%s%s", len ? ", " : "", s->choices[i]);
    }
}

static int parse_one(const ml_setting_t *s, const char *v, void *field, char *err, size_t errlen)
{
    char list[256];
    switch (s->type) {
    case ML_SETTING_STRING:
    case ML_SETTING_PATH:
        *(const char **)field = v;
        return 0;
    case ML_SETTING_BOOL:
        if (parse_bool(v, (int *)field) == 0) return 0;
        snprintf(err, errlen, "%s=%s: not a boolean (use 1/0, true/false, yes/no, on/off)", s->name, v);
        return -1;
    case ML_SETTING_INT: {
        char *end;
        errno = 0;
        const long x = strtol(v, &end, 10);
        if (errno || end == v || *end) {
            snprintf(err, errlen, "%s=%s: not an integer", s->name, v);
            return -1;
        }
        if (x < s->min || x > s->max) {
            snprintf(err, errlen, "%s=%s: out of range [%ld, %ld]", s->name, v, s->min, s->max);
            return -1;
        }
        *(long *)field = x;
        return 0;
    }
    case ML_SETTING_ENUM: {
        const int i = choice_index(s, v, strlen(v));
        if (i >= 0) return *(int *)field = i, 0;
        choices_text(s, 0, list, sizeof list);
        snprintf(err, errlen, "%s=%s: not one of %s", s->name, v, list);
        return -1;
    }
    case ML_SETTING_LIST: {
        unsigned mask = 0;
        for (const char *p = v; *p;) {
            const char *comma = strchr(p, ',');
            const size_t n = comma ? (size_t)(comma - p) : strlen(p);
            const int i = n ? choice_index(s, p, n) : -1;
            if (i < 0) {
                choices_text(s, 0, list, sizeof list);
                snprintf(err, errlen, "%s=%s: '%.*s' is not one of %s", s->name, v, (int)n, p, list);
                return -1;
            }
            if (!(s->available & (1u << i))) {
                choices_text(s, s->available, list, sizeof list);
                snprintf(err, errlen, "%s=%s: '%s' is not available in this version of mpilens (available: %s)",
                         s->name, v, s->choices[i], list);
                return -1;
            }
            mask |= 1u << i;
            p += n + (comma != NULL);
        }
        if (mask == 0) {
            snprintf(err, errlen, "%s is empty", s->name);
            return -1;
        }
        *(unsigned *)field = mask;
        return 0;
    }
    }
    return -1;
}

/* MPILENS_P2P_BINS: increasing byte sizes, comma separated, at most max of them. Returns how many
 * (into rules when not NULL), or -1. */
int ml_parse_bins(const char *s, long long *rules, int max)
{
    int n = 0;
    long long last = -1;
    while (s && *s) {
        char *end;
        errno = 0;
        const long long v = strtoll(s, &end, 10);
        if (end == s || errno || v <= last || n >= max) return -1;
        if (rules) rules[n] = v;
        n++;
        last = v;
        s = end;
        while (*s == ' ') s++;
        if (*s == ',') s++;
        else if (*s) return -1;
        while (*s == ' ') s++;
    }
    return n;
}

/* Fill cfg from the environment. Returns 0, or -1 with a one-line message in err. */
int ml_config_load(ml_config_t *cfg, char *err, size_t errlen)
{
    for (char **e = environ; e && *e; e++) {
        if (strncmp(*e, "MPILENS_", 8) != 0) continue;
        const size_t n = strcspn(*e, "=");
        /* not a setting: the installation's prefix, which modulefiles set (ours, and Spack's
         * <PACKAGE>_ROOT) */
        int known = n == 12 && strncmp(*e, "MPILENS_ROOT", 12) == 0;
        for (int i = 0; i < ML_NSETTINGS && !known; i++)
            known = strlen(ml_settings[i].name) == n && strncmp(ml_settings[i].name, *e, n) == 0;
        if (!known) {
            snprintf(err, errlen, "%.*s is not an mpilens setting (see `mpilens config`)", (int)n, *e);
            return -1;
        }
    }
    for (int i = 0; i < ML_NSETTINGS; i++) {
        const ml_setting_t *s = &ml_settings[i];
        const char *v = getenv(s->name);
        if (v == NULL) v = s->default_value;
        if (parse_one(s, v, (char *)cfg + s->offset, err, errlen) != 0) return -1;
    }
    if (ml_parse_bins(cfg->p2p_bins, NULL, 15) <= 0) {
        snprintf(err, errlen, "MPILENS_P2P_BINS=%s: not a list of 1 to 15 increasing byte sizes (e.g. 64,1024,65536)",
                 cfg->p2p_bins);
        return -1;
    }
    for (int i = 0; ml_config_checks[i] != NULL; i++)
        if (ml_config_checks[i](cfg, err, errlen) != 0) return -1;
    if (cfg->trace_pcontrol && !cfg->enabled) {
        snprintf(err, errlen, "MPILENS_TRACE_PCONTROL=1 with MPILENS_ENABLED=0: MPI_Pcontrol(1) would switch the "
                 "trace only, and the profile would never start; choose one");
        return -1;
    }
    if (!(cfg->mode & ML_MODE_TRACE) && (cfg->trace_ranks[0] || cfg->trace_window[0] || cfg->trace_exclude[0] ||
                                         cfg->trace_pcontrol)) {
        snprintf(err, errlen, "MPILENS_TRACE_%s is set without trace mode (MPILENS_MODE=%s): add trace to the modes",
                 cfg->trace_ranks[0] ? "RANKS" : cfg->trace_window[0] ? "WINDOW" : cfg->trace_exclude[0] ? "EXCLUDE"
                                                                                       : "PCONTROL",
                 getenv("MPILENS_MODE") ? getenv("MPILENS_MODE") : "profile");
        return -1;
    }
    if (cfg->time_sample > 1 && (cfg->mode & (ML_MODE_TRACE | ML_MODE_COUNTERS))) {
        snprintf(err, errlen, "MPILENS_TIME_SAMPLE=%ld: the trace and counters modes need the time of every call; "
                 "leave MPILENS_TIME_SAMPLE at 1 with them", (long)cfg->time_sample);
        return -1;
    }
    return 0;
}
