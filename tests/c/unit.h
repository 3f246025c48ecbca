/* A small harness for the C unit tests (tests/c/): CHECK counts a check, names a failed one with
 * its file and line, and UNIT_END prints the closing line "N passed, N failed" and gives the exit
 * status. tests/test_c_units.py runs the tests; `make check` and `make test` build them. */
#ifndef ML_UNIT_H
#define ML_UNIT_H

#include <stdio.h>

static unsigned unit_passed, unit_failed;

#define CHECK(cond, ...)                                                           \
    do {                                                                           \
        if (cond) {                                                                \
            unit_passed++;                                                         \
        } else {                                                                   \
            unit_failed++;                                                         \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                          \
            fputc('\n', stderr);                                                   \
        }                                                                          \
    } while (0)

#define UNIT_END()                                                       \
    (printf("%u passed, %u failed\n", unit_passed, unit_failed), unit_failed != 0)

#endif
