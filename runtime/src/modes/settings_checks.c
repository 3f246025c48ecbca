/* The modes' own checks of their settings, which the settings' parser (core/config.c) runs after
 * every value is parsed and before the checks across settings: in the runtime when it is loaded,
 * and in mpilens-check for `mpilens run`. A mode with settings that need more than their type's
 * parser (a list, a window) adds its check here. */
#include <stddef.h>

#include "ml_config.h"
#include "ml_trace_filter.h"

int (*const ml_config_checks[])(const ml_config_t *cfg, char *err, size_t errlen) = {
    ml_trace_filter_check, /* MPILENS_TRACE_RANKS, _WINDOW, _EXCLUDE */
    NULL,
};
