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
 *    no payload at all gives a profile of nulls, and no ranks at all is refused;
 *  - the reduction of MPI_Finalize (each rank merges its part of the ranks, its children's parts
 *    packed, up a binomial tree) gives the same bytes as the merge of all the payloads at once, for
 *    1 to 40 ranks (the files' payloads given again as further ranks); a part given twice, a payload
 *    outside a part's ranks and a packed part cut short or damaged are refused, never read past. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* open_memstream */
#endif
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "merge.h"
#include "ml_rundir.h"
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
    const ml_merge_opts_t o = {.nranks = nranks, .time_sample = 4, .version = "test", .mpi = "test", .gather_s = -1};
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

/* The payload of parts[i % nparts] as rank i's (its head's rank changed). */
static buf_t as_rank(const buf_t *parts, int nparts, int i)
{
    buf_t b = {malloc(parts[i % nparts].len), parts[i % nparts].len};
    memcpy(b.data, parts[i % nparts].data, b.len);
    const uint32_t rank = (uint32_t)i;
    memcpy(b.data + offsetof(ml_payload_head_t, rank), &rank, sizeof rank);
    return b;
}

static char *text_of(ml_merge_t *m, int nranks, size_t *outlen)
{
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    const ml_merge_opts_t o = {.nranks = nranks, .time_sample = 4, .version = "test", .mpi = "test", .gather_s = -1};
    const int rc = ml_merge_write(f, m, &o, 0);
    fclose(f);
    if (rc != 0) {
        free(out);
        return NULL;
    }
    *outlen = len;
    return out;
}

/* MPI_Finalize's reduction of the payloads of ranks 0 .. n - 1 (payloads[r] is rank r's), run in
 * its rounds: in round `mask`, each rank r with r & mask packs its merge of the ranks r .. r + mask
 * - 1 for rank r - mask, which adds it. Returns rank 0's merge. */
static ml_merge_t *reduced(const buf_t *payloads, int n)
{
    ml_merge_t *m[64] = {0};
    for (int r = 0; r < n; r++) {
        int part = 1;
        while (r + part < n && !(r & part)) part <<= 1;
        if (r + part > n) part = n - r;
        m[r] = ml_merge_new(r, part);
        if (m[r] == NULL || ml_merge_add_payload(m[r], payloads[r].data, payloads[r].len) != 0) return NULL;
    }
    for (int mask = 1; mask < n; mask <<= 1)
        for (int r = mask; r < n; r += 2 * mask) {
            char *packed;
            size_t len;
            if (ml_merge_pack(m[r], &packed, &len) != 0) return NULL;
            const int rc = ml_merge_add_packed(m[r - mask], packed, len);
            free(packed);
            ml_merge_free(m[r]);
            if (rc != 0) return NULL;
        }
    return m[0];
}

static void check_reduction(const buf_t *parts, int nparts)
{
    for (int n = 1; n <= 40; n++) {
        buf_t payloads[40];
        for (int r = 0; r < n; r++) payloads[r] = as_rank(parts, nparts, r);
        int order[40];
        for (int r = 0; r < n; r++) order[r] = r;
        size_t flat_len = 0, tree_len = 0;
        char *flat = merged(payloads, order, n, n, NULL, &flat_len);
        ml_merge_t *m = reduced(payloads, n);
        char *tree = m ? text_of(m, n, &tree_len) : NULL;
        CHECK(flat != NULL && tree != NULL, "%d ranks: the merge failed (flat %p, tree %p)", n, (void *)flat, (void *)tree);
        if (flat && tree)
            CHECK(flat_len == tree_len && memcmp(flat, tree, flat_len) == 0,
                  "%d ranks: the reduction's profile (%zu bytes) is not the merge's (%zu bytes)", n, tree_len, flat_len);
        free(flat), free(tree);
        ml_merge_free(m);
        for (int r = 0; r < n; r++) free(payloads[r].data);
    }

    /* what does not fit: refused, and the merge fails from then on */
    buf_t p0 = as_rank(parts, nparts, 0), p1 = as_rank(parts, nparts, 1), p5 = as_rank(parts, nparts, 5);
    ml_merge_t *m = ml_merge_new(0, 4);
    CHECK(ml_merge_add_payload(m, p5.data, p5.len) != 0, "a payload of rank 5 taken into the part of ranks 0-3");
    ml_merge_free(m);
    m = ml_merge_new(0, 4);
    CHECK(ml_merge_add_payload(m, p0.data, p0.len) == 0, "rank 0's payload refused");
    CHECK(ml_merge_add_payload(m, p0.data, p0.len) != 0, "rank 0 given twice");
    ml_merge_free(m);
    ml_merge_t *child = ml_merge_new(1, 1);
    ml_merge_add_payload(child, p1.data, p1.len);
    char *packed;
    size_t len;
    CHECK(ml_merge_pack(child, &packed, &len) == 0, "a part not packed");
    ml_merge_free(child);
    m = ml_merge_new(0, 2);
    CHECK(ml_merge_add_packed(m, packed, len) == 0, "a packed part refused");
    CHECK(ml_merge_add_packed(m, packed, len) != 0, "a packed part given twice");
    ml_merge_free(m);
    m = ml_merge_new(2, 2);
    CHECK(ml_merge_add_packed(m, packed, len) != 0, "the part of rank 1 taken into the part of ranks 2-3");
    ml_merge_free(m);
    /* every shorter prefix, and each byte changed in turn (ASan and UBSan watch the reads) */
    size_t cut_refused = 0;
    for (size_t k = 0; k < len; k++) {
        m = ml_merge_new(0, 2);
        cut_refused += ml_merge_add_packed(m, packed, k) != 0;
        ml_merge_free(m);
        m = ml_merge_new(0, 2);
        packed[k] ^= 0x5a;
        ml_merge_add_packed(m, packed, len); /* taken or refused: either, never a read outside it */
        packed[k] ^= 0x5a;
        ml_merge_free(m);
    }
    CHECK(cut_refused == len, "%zu of %zu prefixes of a packed part refused", cut_refused, len);
    free(packed), free(p0.data), free(p1.data), free(p5.data);
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

    check_reduction(parts, n);

    free(a);
    free(b);
    for (int i = 0; i < n; i++) free(parts[i].data);
    return UNIT_END();
}
