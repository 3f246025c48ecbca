/* What the trace leaves out: the parsers of MPILENS_TRACE_RANKS, _WINDOW and _EXCLUDE
 * (trace_filter.c). Internal header, never installed. */
#ifndef ML_TRACE_FILTER_H
#define ML_TRACE_FILTER_H

#include <stddef.h>

#include "ml_config.h"

int ml_trace_ranks_parse(const char *s, int rank, int *in);
int ml_trace_window_parse(const char *s, double *from, double *until);
int ml_trace_exclude_parse(const char *s, unsigned char *skip, char *err, size_t errlen);
/* the three settings well formed: 0, or -1 with one line in err */
int ml_trace_filter_check(const ml_config_t *cfg, char *err, size_t errlen);

#endif
