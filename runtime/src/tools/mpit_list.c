/* mpilens-mpit: list the MPI_T control and performance variables of the MPI this program is
 * built against, as one JSON document on stdout (`mpilens mpit list` formats it).
 *
 *   mpilens-mpit            after MPI_Init (a singleton process): every variable, current values
 *   mpilens-mpit --no-init  MPI_T only, before MPI_Init: the variables known before the
 *                           library has opened its components */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "mpit_common.h"

static void jstr(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        const unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c == '\n')
            fputs("\\n", stdout);
        else if (c < 0x20)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    putchar('"');
}

int main(int argc, char **argv)
{
    const int init = !(argc > 1 && strcmp(argv[1], "--no-init") == 0);
    if (init) {
        int provided;
        if (MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) return 1;
    }
    if (mlt_init() != 0) {
        fprintf(stderr, "MPI_T_init_thread failed\n");
        return 1;
    }
    char lib[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
    int len = 0;
    MPI_Get_library_version(lib, &len);
    for (int i = 0; i < len; i++)
        if (lib[i] == '\n') lib[i] = ' ';
    printf("{\"library\": ");
    jstr(lib);
    printf(", \"after_init\": %s,\n \"cvars\": [", init ? "true" : "false");
    int n = 0;
    MPI_T_cvar_get_num(&n);
    for (int i = 0, first = 1; i < n; i++) {
        mlt_cvar_info_t info;
        if (mlt_cvar_info(i, &info) != 0) continue;
        char value[4096] = "";
        int readable = 0;
        if (info.bind == MPI_T_BIND_NO_OBJECT) {
            readable = mlt_cvar_read(i, NULL, value, sizeof value) == 0;
        } else if (info.bind == MPI_T_BIND_MPI_COMM && init) {
            MPI_Comm w = MPI_COMM_WORLD;
            readable = mlt_cvar_read(i, &w, value, sizeof value) == 0;
        }
        printf("%s\n  {\"index\": %d, \"name\": ", first ? "" : ",", i);
        first = 0;
        jstr(info.name);
        printf(", \"datatype\": \"%s\", \"enum\": %s, \"bind\": \"%s\", \"scope\": \"%s\", \"verbosity\": \"%s\", "
               "\"value\": ",
               mlt_type_name(info.type), info.enumtype != MPI_T_ENUM_NULL ? "true" : "false", mlt_bind_name(info.bind),
               mlt_scope_name(info.scope), mlt_verbosity_name(info.verbosity));
        if (readable)
            jstr(value);
        else
            fputs("null", stdout);
        fputs(", \"description\": ", stdout);
        jstr(info.desc);
        putchar('}');
    }
    printf("],\n \"pvars\": [");
    MPI_T_pvar_get_num(&n);
    for (int i = 0, first = 1; i < n; i++) {
        char name[256], desc[1024];
        int nlen = sizeof name, dlen = sizeof desc, verb, cls, bind, ro, cont, atomic;
        MPI_Datatype dt;
        MPI_T_enum et;
        if (MPI_T_pvar_get_info(i, name, &nlen, &verb, &cls, &dt, &et, desc, &dlen, &bind, &ro, &cont, &atomic) !=
            MPI_SUCCESS)
            continue;
        printf("%s\n  {\"index\": %d, \"name\": ", first ? "" : ",", i);
        first = 0;
        jstr(name);
        printf(", \"class\": \"%s\", \"datatype\": \"%s\", \"bind\": \"%s\", \"verbosity\": \"%s\", \"readonly\": %s, "
               "\"continuous\": %s, \"atomic\": %s, \"description\": ",
               mlt_class_name(cls), mlt_type_name(dt), mlt_bind_name(bind), mlt_verbosity_name(verb),
               ro ? "true" : "false", cont ? "true" : "false", atomic ? "true" : "false");
        jstr(desc);
        putchar('}');
    }
    printf("]}\n");
    MPI_T_finalize();
    if (init) MPI_Finalize();
    return 0;
}
