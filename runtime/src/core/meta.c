/* meta.json: what the run was (tool, MPI, ranks, hosts, command, configuration). Rank 0 writes it
 * at MPI_Init, so even a job that never reaches MPI_Finalize has it, and again at MPI_Finalize
 * with the end time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "json.h"
#include "ml.h"
#include "ml_files.h"
#include "ml_modes.h"
#include "ml_output.h"

#ifndef ML_VERSION
#define ML_VERSION "0"
#endif

static char *hosts_copy; /* rank 0: [size][hostlen] */
static int hosts_len;
static char started[32];
static long long started_unix;

static const char *thread_level_name(int level)
{
    switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
    default: return "unknown";
    }
}

/* Whether s is a JSON array of strings and nothing else: MPILENS_COMMAND is copied into meta.json
 * as it is, so a malformed value would damage the file (or add keys to it). */
static int json_string_array(const char *s)
{
    while (*s == ' ') s++;
    if (*s++ != '[') return 0;
    while (*s == ' ') s++;
    if (*s == ']') return s[1 + strspn(s + 1, " ")] == 0;
    for (;;) {
        if (*s++ != '"') return 0;
        for (; *s != '"'; s++) {
            if ((unsigned char)*s < 0x20) return 0; /* the end, or a control character */
            if (*s == '\\') {
                s++;
                if (*s == 'u') {
                    for (int i = 1; i <= 4; i++)
                        if (!strchr("0123456789abcdefABCDEF", s[i]) || s[i] == 0) return 0;
                    s += 4;
                } else if (*s == 0 || !strchr("\"\\/bfnrt", *s)) {
                    return 0;
                }
            }
        }
        s++;
        while (*s == ' ') s++;
        if (*s == ']') return s[1 + strspn(s + 1, " ")] == 0;
        if (*s++ != ',') return 0;
        while (*s == ' ') s++;
    }
}

static void write_command(FILE *f)
{
    const char *cmd = getenv("MPILENS_COMMAND");
    if (cmd != NULL && cmd[0] != 0) {
        if (json_string_array(cmd)) {
            fputs(cmd, f); /* a JSON array written by `mpilens run` */
            return;
        }
        static int said;
        if (!said++)
            ml_log(0, "MPILENS_COMMAND is not a JSON array of strings; meta.json records the program's own "
                      "command line");
    }
    /* otherwise this program's own arguments */
    fputc('[', f);
    FILE *in = fopen("/proc/self/cmdline", "r");
    if (in != NULL) {
        char arg[4096];
        size_t n = 0;
        int c, first = 1;
        while ((c = fgetc(in)) != EOF) {
            if (c != 0 && n < sizeof arg - 1) {
                arg[n++] = (char)c;
                continue;
            }
            if (c == 0) {
                arg[n] = 0;
                fputs(first ? "" : ", ", f);
                ml_json_str(f, arg);
                first = 0;
                n = 0;
            }
        }
        fclose(in);
    }
    fputc(']', f);
}

/* ---- other MPI tools in the process (binding.c): "tools": [{"object", "position", "functions"}] */
#define MAX_TOOLS 16
typedef struct {
    char object[1024];
    int before;
} tool_t;
typedef struct {
    tool_t tools[MAX_TOOLS];
    int n;
    FILE *f;      /* printing: the functions of tools[pick] */
    int pick, count;
} tools_t;

static void tool_seen(void *arg, const char *function, const char *object, int before)
{
    tools_t *const t = arg;
    (void)function;
    for (int i = 0; i < t->n; i++)
        if (t->tools[i].before == before && strcmp(t->tools[i].object, object) == 0) return;
    if (t->n == MAX_TOOLS) return;
    snprintf(t->tools[t->n].object, sizeof t->tools[t->n].object, "%s", object);
    t->tools[t->n++].before = before;
}

static void tool_function(void *arg, const char *function, const char *object, int before)
{
    tools_t *const t = arg;
    const tool_t *const want = &t->tools[t->pick];
    if (want->before != before || strcmp(want->object, object) != 0) return;
    fputs(t->count++ ? ", " : "", t->f);
    ml_json_str(t->f, function);
}

/* Which tools the calls pass through besides the runtime: one loaded before it reaches the wrappers
 * through its PMPI_ calls (its own call sites are then what the wrappers see), one after it gets
 * every call the wrappers forward. */
static void write_tools(FILE *f)
{
    static tools_t t; /* large; rank 0 only, not reentrant */
    memset(&t, 0, sizeof t);
    ml_bind_tools(tool_seen, &t);
    fputs("  \"tools\": [", f);
    t.f = f;
    for (t.pick = 0; t.pick < t.n; t.pick++) {
        fputs(t.pick ? ",\n    {\"object\": " : "\n    {\"object\": ", f);
        ml_json_str(f, t.tools[t.pick].object);
        fprintf(f, ", \"position\": \"%s\", \"functions\": [", t.tools[t.pick].before ? "before" : "after");
        t.count = 0;
        ml_bind_tools(tool_function, &t);
        fputs("]}", f);
    }
    fputs(t.n ? "\n  ],\n" : "],\n", f);
}

static int write_meta(int finished)
{
    char path[4200], tmp[4300];
    snprintf(path, sizeof path, "%s/" ML_PATH_META, ml_g.outdir);
    if (ml_file_temp_name(tmp, sizeof tmp, path) != 0) return -1;
    FILE *f = ml_file_fopen(tmp);
    if (f == NULL) return -1;
    char lib[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
    int len = 0, major = 0, minor = 0;
    PMPI_Get_library_version(lib, &len);
    PMPI_Get_version(&major, &minor);
    char exe[4096] = {0}, cwd[4096] = {0};
    if (readlink("/proc/self/exe", exe, sizeof exe - 1) < 0) exe[0] = 0;
    if (getcwd(cwd, sizeof cwd) == NULL) cwd[0] = 0;

    fprintf(f, "{\n  \"schema\": \"" ML_SCHEMA_META "\",\n  \"tool\": {\"name\": \"mpilens\", \"version\": \"%s\"},\n",
            ML_VERSION);
    fprintf(f, "  \"mpi\": {\"flavor\": \"%s\", \"standard\": \"%d.%d\", \"thread_level\": \"%s\", \"library\": ",
            ML_MPI_FLAVOR, major, minor, thread_level_name(ml_g.thread_level));
    ml_json_str(f, lib);
    /* the file the runtime bound to: which MPI the job really ran on (binding.c) */
    fputs(", \"path\": ", f);
    if (ml_bind_library() != NULL) ml_json_str(f, ml_bind_library());
    else fputs("null", f);
    fprintf(f, "},\n  \"wrappers\": {\"c\": %d, \"fortran\": %d},\n", ML_N_C_WRAPPERS, ML_N_F_WRAPPERS);
    write_tools(f);
    fprintf(f, "  \"nranks\": %d,\n  \"hosts\": [", ml_g.size);
    /* distinct hosts, then each rank's index into them */
    int *index = calloc((size_t)ml_g.size, sizeof(int));
    int nhosts = 0;
    for (int r = 0; r < ml_g.size && index; r++) {
        const char *h = hosts_copy + (size_t)r * (size_t)hosts_len;
        int found = -1;
        for (int q = 0; q < r && found < 0; q++)
            if (strncmp(h, hosts_copy + (size_t)q * (size_t)hosts_len, (size_t)hosts_len) == 0) found = index[q];
        if (found < 0) {
            found = nhosts++;
            fputs(found ? ", " : "", f);
            ml_json_strn(f, h, (size_t)hosts_len);
        }
        index[r] = found;
    }
    fputs("],\n  \"rank_host\": [", f);
    for (int r = 0; r < ml_g.size && index; r++) fprintf(f, "%s%d", r ? ", " : "", index[r]);
    free(index);
    fputs("],\n  \"program\": ", f);
    ml_json_str(f, exe);
    fputs(",\n  \"cwd\": ", f);
    ml_json_str(f, cwd);
    fputs(",\n  \"command\": ", f);
    write_command(f);
    fputs(",\n  \"config\": {", f);
    for (int i = 0; i < ML_NSETTINGS; i++) {
        const char *v = getenv(ml_settings[i].name);
        fprintf(f, "%s\n    \"%s\": ", i ? "," : "", ml_settings[i].name);
        ml_json_str(f, v ? v : ml_settings[i].default_value);
    }
    fprintf(f, "\n  },\n  \"timer\": \"%s\",\n", ml_clock_is_tsc ? "tsc" : "clock_monotonic");
    /* where the measurements started (every time of a rank is counted from there): decided at the
     * first write, at MPI_Init or MPI_Session_init; the tool's own session is gone at the last */
    static const char *started_by;
    if (started_by == NULL) started_by = ml_g.own_session ? "MPI_Session_init" : "MPI_Init";
    fprintf(f, "  \"started_by\": \"%s\",\n", started_by);
    ml_modes_meta_json(f);
    fprintf(f, "  \"started\": \"%s\",\n  \"started_unix_s\": %lld,\n", started, started_unix);
    if (finished) {
        char when[32];
        const time_t now = time(NULL);
        struct tm tm;
        gmtime_r(&now, &tm);
        strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
        fprintf(f, "  \"finished\": \"%s\",\n  \"finalized\": true\n}\n", when);
    } else {
        fputs("  \"finished\": null,\n  \"finalized\": false\n}\n", f);
    }
    const int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        ml_file_unlink(tmp);
        return -1;
    }
    return ml_file_rename(tmp, path);
}

int ml_meta_write(const char *hosts, int hostlen)
{
    hosts_len = hostlen;
    hosts_copy = malloc((size_t)ml_g.size * (size_t)hostlen);
    if (hosts_copy == NULL) return -1;
    memcpy(hosts_copy, hosts, (size_t)ml_g.size * (size_t)hostlen);
    const time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(started, sizeof started, "%Y-%m-%dT%H:%M:%SZ", &tm);
    started_unix = (long long)now;
    return write_meta(0);
}

int ml_meta_finish(void)
{
    const int rc = hosts_copy ? write_meta(1) : -1;
    free(hosts_copy);
    hosts_copy = NULL;
    return rc;
}
