/* Unit tests of the merge of per-rank payloads into profile.json (runtime/src/core/merge.c), with no MPI:
 * on the payload files of a real run (tests/data/runs/aborted-*: three ranks, MPI_Abort after three
 * steps, so each rank's statistics are in ranks/rank-N.partial).
 *
 *   test_merge RANK0.partial RANK1.partial ...    (one file per rank, in rank order)
 *
 * What must hold:
 *  - a whole payload is accepted, with its length; every shorter prefix of it is refused as
 *    truncated, and a payload with a wrong magic as not a payload: never read past the end;
 *  - the merged profile does not depend on the order in which the payloads arrive (the reduction
 *    at MPI_Finalize may bring them in any order), and bytes after the last payload change nothing;
 *  - a rank whose payload is missing is null in every per-rank list and the profile is incomplete;
 *    no payload at all gives a profile of nulls, and no ranks at all is refused. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* open_memstream */
#endif
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "merge.h"
#include "unit.h"

typedef struct {
    char *data;
    size_t len;
} buf_t;

static buf_t slurp(const char *path)
{
    buf_t b = {NULL, 0};
    FILE *f = fopen(path, "rb");
    if (f == NULL) return b;
    fseek(f, 0, SEEK_END);
    b.len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    b.data = malloc(b.len ? b.len : 1);
    if (b.data == NULL || fread(b.data, 1, b.len, f) != b.len) b.len = 0;
    fclose(f);
    return b;
}

/* The profile merged from the concatenation of the payloads parts[order[0..n)], as text. */
static char *merged(const buf_t *parts, const int *order, int n, int nranks, const char *tail, size_t *outlen)
{
    size_t total = tail ? strlen(tail) : 0;
    for (int i = 0; i < n; i++) total += parts[order[i]].len;
    char *cat = malloc(total + 1), *p = cat;
    for (int i = 0; i < n; i++) {
        memcpy(p, parts[order[i]].data, parts[order[i]].len);
        p += parts[order[i]].len;
    }
    if (tail) memcpy(p, tail, strlen(tail));
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    const ml_merge_opts_t o = {.nranks = nranks, .time_sample = 1, .version = "test", .mpi = "test", .gather_s = -1};
    const int rc = ml_merge_profile(f, cat, total, &o);
    fclose(f);
    free(cat);
    if (rc != 0) {
        free(out);
        return NULL;
    }
    *outlen = len;
    return out;
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle)) n++;
    return n;
}

static void check_payload_bounds(const buf_t *b, const char *path)
{
    char why[256];
    CHECK(ml_payload_check(b->data, b->len, why, sizeof why) == b->len, "%s: whole payload refused: %s", path, why);
    /* every prefix, each in a buffer of its own length (so that reading past it is caught by
     * AddressSanitizer or valgrind when they run this) */
    unsigned refused = 0;
    for (size_t n = 0; n < b->len; n++) {
        char *copy = malloc(n ? n : 1);
        memcpy(copy, b->data, n);
        why[0] = 0;
        if (ml_payload_check(copy, n, why, sizeof why) == 0 && strncmp(why, "truncated", 9) == 0) refused++;
        else fprintf(stderr, "%s: prefix of %zu bytes: %s\n", path, n, why);
        free(copy);
    }
    CHECK(refused == b->len, "%s: %u of %zu prefixes refused as truncated", path, refused, b->len);
    char *bad = malloc(b->len);
    memcpy(bad, b->data, b->len);
    bad[0] ^= 0x20;
    CHECK(ml_payload_check(bad, b->len, why, sizeof why) == 0 && strstr(why, "not an mpilens payload") != NULL,
          "%s: a wrong magic: %s", path, why);
    free(bad);
}

/* A JSON string of bytes (json.h): valid UTF-8 copied, every other byte \udcXX, controls escaped. */
static void check_json_string(const char *in, const char *want)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ml_json_str(f, in);
    fclose(f);
    CHECK(strcmp(buf, want) == 0, "%s gives %s, expected %s", in, buf, want);
    free(buf);
}

static void json_strings(void)
{
    check_json_string("plain", "\"plain\"");
    check_json_string("r\xc3\xa9gion", "\"r\xc3\xa9gion\"");                    /* UTF-8: copied */
    check_json_string("r\xe9gion", "\"r\\udce9gion\"");                          /* Latin-1 */
    check_json_string("a\nb\t\x1b[31m\"\\", "\"a\\nb\\t\\u001b[31m\\\"\\\\\"");  /* controls, quote, backslash */
    check_json_string("\xc0\x80", "\"\\udcc0\\udc80\"");                         /* overlong */
    check_json_string("\xed\xa0\x80", "\"\\udced\\udca0\\udc80\"");             /* a surrogate */
    check_json_string("\xf0\x9f\x98\x80!", "\"\xf0\x9f\x98\x80!\"");          /* 4 bytes: copied */
    check_json_string("\xe2\x82", "\"\\udce2\\udc82\"");                         /* cut short */
    check_json_string("\xf4\x90\x80\x80", "\"\\udcf4\\udc90\\udc80\\udc80\"");  /* above U+10FFFF */
    check_json_string("\x7f", "\"\\u007f\"");
}

int main(int argc, char **argv)
{
    json_strings();
    const int n = argc - 1;
    if (n < 2 || n > 16) {
        fprintf(stderr, "usage: test_merge RANK0.partial RANK1.partial ... (2 to 16 files)\n");
        return 2;
    }
    buf_t parts[16];
    for (int i = 0; i < n; i++) {
        parts[i] = slurp(argv[i + 1]);
        if (parts[i].len == 0) {
            fprintf(stderr, "test_merge: cannot read %s\n", argv[i + 1]);
            return 2;
        }
        check_payload_bounds(&parts[i], argv[i + 1]);
    }

    /* in rank order, and rotated: the same profile */
    int order[16], rotated[16];
    for (int i = 0; i < n; i++) order[i] = i, rotated[i] = (i + 1) % n;
    size_t len_a = 0, len_b = 0, len_c = 0;
    char *a = merged(parts, order, n, n, NULL, &len_a);
    char *b = merged(parts, rotated, n, n, NULL, &len_b);
    CHECK(a != NULL && b != NULL, "the merge failed");
    if (a == NULL || b == NULL) return UNIT_END();
    CHECK(len_a == len_b && memcmp(a, b, len_a) == 0, "the profile depends on the payloads' order");
    CHECK(strstr(a, "\"schema\": \"mpilens.profile/1\"") != NULL, "no schema tag");
    CHECK(count(a, "\"host\": null") == 0, "a rank without its host although every payload was there");

    /* bytes after the last payload (a file cut while the next one was being appended) */
    char *c = merged(parts, order, n, n, "MLPA", &len_c);
    CHECK(c != NULL && len_c == len_a && memcmp(a, c, len_a) == 0, "bytes after the last payload changed the profile");
    free(c);

    /* the last rank missing: null in every per-rank list of the ranks table, and incomplete */
    char *d = merged(parts, order, n - 1, n, NULL, &len_c);
    CHECK(d != NULL && count(d, "\"host\": null") == 1, "the missing rank is not null");
    CHECK(d != NULL && strstr(d, "\"complete\": false") != NULL, "a profile without a rank says it is complete");
    free(d);

    /* no payload: every rank null, no wall time; no ranks: refused */
    char *e = merged(parts, order, 0, n, NULL, &len_c);
    CHECK(e != NULL && count(e, "\"host\": null") == (size_t)n && strstr(e, "\"wall_time_s\": null") != NULL,
          "a profile of no payload");
    free(e);
    CHECK(merged(parts, order, n, 0, NULL, &len_c) == NULL, "a merge for 0 ranks was not refused");

    free(a);
    free(b);
    for (int i = 0; i < n; i++) free(parts[i].data);
    return UNIT_END();
}
