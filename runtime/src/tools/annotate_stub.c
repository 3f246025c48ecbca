/* libmpilens-annotate: the annotation API as empty functions, for linking annotated programs.
 * When the program runs under mpilens, the runtime (preloaded first) provides the real ones. */
#include "mpilens.h"

#include <stddef.h>

void mpilens_region_begin(const char *name) { (void)name; }
void mpilens_region_end(const char *name) { (void)name; }
void mpilens_counter_add(const char *name, double value) { (void)name, (void)value; }
void mpilens_region_begin_in(const char *category, const char *name) { (void)category, (void)name; }
int mpilens_category_enable(const char *category, int enabled) { return (void)category, enabled != 0; }
void mpilens_counter_set(const char *name, double value) { (void)name, (void)value; }

/* Fortran manglings: CALL MPILENS_REGION_BEGIN('name') passes the length as a hidden argument. */
static void f_region(const char *name, size_t len) { (void)name, (void)len; }
#define ALIAS(name) void name(const char *, size_t) __attribute__((alias("f_region")));
ALIAS(mpilens_region_begin_)
ALIAS(mpilens_region_begin__)
ALIAS(MPILENS_REGION_BEGIN)
ALIAS(mpilens_region_end_)
ALIAS(mpilens_region_end__)
ALIAS(MPILENS_REGION_END)

static void f_counter(const char *name, const double *value, size_t len) { (void)name, (void)value, (void)len; }
#define CALIAS(name) void name(const char *, const double *, size_t) __attribute__((alias("f_counter")));
CALIAS(mpilens_counter_add_)
CALIAS(mpilens_counter_add__)
CALIAS(MPILENS_COUNTER_ADD)
CALIAS(mpilens_counter_set_)
CALIAS(mpilens_counter_set__)
CALIAS(MPILENS_COUNTER_SET)
