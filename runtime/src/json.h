/* Minimal JSON output on a stdio stream, for the files rank 0 writes. */
#ifndef ML_JSON_H
#define ML_JSON_H

#include <stdint.h>
#include <stdio.h>

void ml_json_str(FILE *f, const char *s);
void ml_json_strn(FILE *f, const char *s, size_t n);
void ml_json_seconds(FILE *f, uint64_t ns);

#endif
