/* The profile's merge as MPI_Finalize runs it, a reduction up a binomial tree (runtime/src/core/core.c
 * reduce_profile), against the merge of every payload at once on rank 0 (what MPI_Finalize did
 * before, and what mpilens-merge does), in one process and without MPI: each rank's part merged,
 * packed and added to its parent's in the tree's rounds, with each rank's work timed.
 *
 *   merge_tree ALL_PAYLOADS NRANKS REPS
 *
 * ALL_PAYLOADS: the payloads of ranks 0 .. NRANKS - 1 one after the other (bench/merge.py --tree
 * writes them). Prints one line of JSON, the medians over REPS runs of:
 *   flat_s       the merge of every payload at once, then profile.json written (to memory)
 *   tree_s       the reduction's critical path: a rank adds a child's part once the child has sent
 *                it, the messages themselves taking no time (what the tree adds is its work), then
 *                rank 0 writes profile.json
 *   tree_work_s  the work of every rank of the reduction, added up
 * and, once: gathered_bytes (what rank 0 held before: every payload), rank0_bytes (the most rank 0
 * receives in one round of the reduction: the largest packed part), rank0_total_bytes (all it
 * receives), profile_bytes, and same (1 when the two profiles are the same bytes). */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "merge.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static char *profile(ml_merge_t *m, int n, size_t *len, double *t)
{
    char *out = NULL;
    FILE *f = open_memstream(&out, len);
    const ml_merge_opts_t o = {.nranks = n, .time_sample = 1, .version = "bench", .mpi = "bench", .gather_s = -1};
    const double t0 = now();
    const int rc = ml_merge_write(f, m, &o, 0);
    fclose(f);
    *t = now() - t0;
    if (rc != 0) exit(1);
    return out;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: merge_tree ALL_PAYLOADS NRANKS REPS\n");
        return 2;
    }
    const int n = atoi(argv[2]), reps = atoi(argv[3]);
    FILE *f = fopen(argv[1], "rb");
    if (f == NULL || n < 1 || reps < 1) return 2;
    fseek(f, 0, SEEK_END);
    const size_t total = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    char *all = malloc(total);
    if (all == NULL || fread(all, 1, total, f) != total) return 2;
    fclose(f);
    const char **at = malloc((size_t)n * sizeof *at);
    size_t *len = malloc((size_t)n * sizeof *len), off = 0;
    for (int r = 0; r < n; r++) {
        char why[200];
        at[r] = all + off;
        len[r] = ml_payload_check(all + off, total - off, why, sizeof why);
        if (len[r] == 0) {
            fprintf(stderr, "merge_tree: payload %d: %s\n", r, why);
            return 1;
        }
        off += len[r];
    }
    double *flat = malloc((size_t)reps * sizeof *flat), *tree = malloc((size_t)reps * sizeof *tree),
           *work = malloc((size_t)reps * sizeof *work);
    double *ready = malloc((size_t)n * sizeof *ready); /* when rank r's part is packed, on the critical path */
    ml_merge_t **m = malloc((size_t)n * sizeof *m);
    size_t most = 0, received = 0, flat_len = 0, tree_len = 0;
    int same = 1;
    for (int k = 0; k < reps; k++) {
        /* every payload at once */
        char *doc = NULL;
        size_t doclen = 0;
        FILE *g = open_memstream(&doc, &doclen);
        const ml_merge_opts_t o = {.nranks = n, .time_sample = 1, .version = "bench", .mpi = "bench", .gather_s = -1};
        double t0 = now();
        if (ml_merge_profile(g, all, total, &o) != 0) return 1;
        fclose(g);
        flat[k] = now() - t0;
        flat_len = doclen;
        /* the tree: each rank's own payload, then its children's parts in the rounds' order */
        work[k] = 0;
        for (int r = 0; r < n; r++) {
            int part = 1;
            while (r + part < n && !(r & part)) part <<= 1;
            if (r + part > n) part = n - r;
            t0 = now();
            m[r] = ml_merge_new(r, part);
            if (m[r] == NULL || ml_merge_add_payload(m[r], at[r], len[r]) != 0) return 1;
            ready[r] = now() - t0;
            work[k] += ready[r];
        }
        most = received = 0;
        for (int mask = 1; mask < n; mask <<= 1)
            for (int r = mask; r < n; r += 2 * mask) {
                char *packed;
                size_t plen;
                t0 = now();
                if (ml_merge_pack(m[r], &packed, &plen) != 0) return 1;
                const double pack = now() - t0;
                ml_merge_free(m[r]);
                const int parent = r - mask;
                t0 = now();
                if (ml_merge_add_packed(m[parent], packed, plen) != 0) return 1;
                const double add = now() - t0;
                free(packed);
                work[k] += pack + add;
                /* the parent adds it once both have got there */
                const double sent = ready[r] + pack;
                ready[parent] = (sent > ready[parent] ? sent : ready[parent]) + add;
                if (parent == 0) {
                    received += plen;
                    if (plen > most) most = plen;
                }
            }
        double write_s;
        char *tdoc = profile(m[0], n, &tree_len, &write_s);
        tree[k] = ready[0] + write_s;
        work[k] += write_s;
        same &= tree_len == flat_len && memcmp(tdoc, doc, flat_len) == 0;
        free(tdoc), free(doc);
        ml_merge_free(m[0]);
    }
    qsort(flat, (size_t)reps, sizeof *flat, cmp);
    qsort(tree, (size_t)reps, sizeof *tree, cmp);
    qsort(work, (size_t)reps, sizeof *work, cmp);
    printf("{\"ranks\": %d, \"flat_s\": %.6f, \"tree_s\": %.6f, \"tree_work_s\": %.6f, \"gathered_bytes\": %zu, "
           "\"rank0_bytes\": %zu, \"rank0_total_bytes\": %zu, \"profile_bytes\": %zu, \"same\": %d}\n",
           n, flat[reps / 2], tree[reps / 2], work[reps / 2], total, most, received, flat_len, same);
    return same ? 0 : 1;
}
