/* Minimal JSON output on a stdio stream, for the files rank 0 writes. */
#ifndef ML_JSON_H
#define ML_JSON_H

#include <stdint.h>
#include <stdio.h>

/* Names are bytes from the application (regions, counters, files, command-line arguments) and
 * need not be UTF-8. A JSON string of them is still valid UTF-8 and loses nothing: a valid UTF-8
 * sequence is copied, every other byte B becomes the escape \udcBB (a lone low surrogate, as
 * Python's "surrogateescape" decodes it, so `s.encode("utf-8", "surrogateescape")` gives the bytes
 * back), control characters are escaped. ml_json_escape_next escapes the code point at s (n bytes
 * left, n > 0) into out (at least 13 bytes) and returns how many bytes of s it used; *len is the
 * length of out. No allocation, no stdio: the signal-safe writers use it too. */
size_t ml_json_escape_next(const unsigned char *s, size_t n, char *out, size_t *len);
void ml_json_str(FILE *f, const char *s);
void ml_json_strn(FILE *f, const char *s, size_t n);
void ml_json_seconds(FILE *f, uint64_t ns);

#endif
