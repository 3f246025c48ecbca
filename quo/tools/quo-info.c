/* quo-info: how to build against this libquo (pkg-config style), and how it was built.
 * Everything it prints is fixed at build time by -D flags from quo/quo.mk. */
#include <hwloc.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "quo.h"

#ifndef QUO_INFO_PREFIX
#error "build with quo/quo.mk: QUO_INFO_* are set there"
#endif

static void usage(FILE *to)
{
    fputs("usage: quo-info [--lang C|Fortran] OPTION...\n"
          "  --prefix            build prefix of this libquo\n"
          "  --cflags            compiler flags (include path)\n"
          "  --cflags-only-I     the same, -I flags only\n"
          "  --libs              linker flags\n"
          "  --libs-only-L       -L flags only\n"
          "  --libs-only-l       -l flags only\n"
          "  --libs-only-other   the other linker flags (rpath)\n"
          "  --config            how this library was built\n"
          "  --help              this text\n"
          "--lang Fortran adds the module directory to the include path and the module library to the libs.\n",
          to);
}

/* print the words of flags that start with prefix (or, with prefix NULL, that start with neither
 * -I, -L nor -l) */
static void print_only(const char *flags, const char *prefix)
{
    char buf[2048];
    snprintf(buf, sizeof buf, "%s", flags);
    int first = 1;
    for (char *save = NULL, *w = strtok_r(buf, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
        const int keep = prefix ? strncmp(w, prefix, strlen(prefix)) == 0
                                : strncmp(w, "-I", 2) && strncmp(w, "-L", 2) && strncmp(w, "-l", 2);
        if (!keep) continue;
        printf("%s%s", first ? "" : " ", w);
        first = 0;
    }
    putchar('\n');
}

int main(int argc, char **argv)
{
    int fortran = 0;
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--lang") == 0 && i + 1 < argc) {
            const char *lang = argv[++i];
            if (strcasecmp(lang, "fortran") == 0) fortran = 1;
            else if (strcasecmp(lang, "c") != 0 && strcasecmp(lang, "c++") != 0) {
                fprintf(stderr, "quo-info: unknown language %s (C, C++ or Fortran)\n", lang);
                return 2;
            }
        }
    }
    const char *cflags = fortran ? QUO_INFO_CFLAGS " -I" QUO_INFO_MODDIR : QUO_INFO_CFLAGS;
    const char *libs = fortran ? QUO_INFO_FLIBS " " QUO_INFO_LIBS : QUO_INFO_LIBS;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--lang") == 0) i++;
        else if (strcmp(a, "--prefix") == 0) puts(QUO_INFO_PREFIX);
        else if (strcmp(a, "--cflags") == 0) puts(cflags);
        else if (strcmp(a, "--cflags-only-I") == 0) print_only(cflags, "-I");
        else if (strcmp(a, "--libs") == 0) puts(libs);
        else if (strcmp(a, "--libs-only-L") == 0) print_only(libs, "-L");
        else if (strcmp(a, "--libs-only-l") == 0) print_only(libs, "-l");
        else if (strcmp(a, "--libs-only-other") == 0) print_only(libs, NULL);
        else if (strcmp(a, "--config") == 0) {
            int v = 0, s = 0;
            QUO_version(&v, &s);
            printf("package: mpilens libquo (QUO API %d.%d)\n", v, s);
            printf("mpilens version: %s\n", QUO_INFO_VERSION);
            printf("api version: 0x%08x\n", (unsigned)QUO_API_VERSION);
            printf("mpi: %s\n", QUO_INFO_MPI);
            printf("hwloc api version: 0x%08x\n", (unsigned)HWLOC_API_VERSION);
            printf("cc: %s\n", QUO_INFO_CC);
            printf("cflags: %s\n", QUO_INFO_BUILD_CFLAGS);
            printf("fc: %s\n", QUO_INFO_FC);
            printf("prefix: %s\n", QUO_INFO_PREFIX);
        } else if (strcmp(a, "--help") == 0) usage(stdout);
        else {
            fprintf(stderr, "quo-info: unknown option %s\n", a);
            usage(stderr);
            return 2;
        }
    }
    return 0;
}
