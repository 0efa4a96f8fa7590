/* cgraph: the captured CUDA-graph batch sizes of a server and the bucket a batch pads to.
 * Why: a batch of 9 with graphs for {8,16} runs the 16 graph and pays for 7 padded rows;
 * above the largest captured size the batch runs eagerly. Lists hold at most a few hundred
 * sizes and are looked up once per simulated iteration, so a binary search is plenty. */
#include "cgraph.h"
#include "bounds.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* SGLang's speculative-decoding capture list (python/sglang/srt/server_args.py,
 * _generate_cuda_graph_batch_sizes, late 2025): range(1,9) + range(10,33,2) +
 * range(40,65,4) + range(72,257,8) + range(272,max+1,16), then filtered to <= max.
 * Each row: first, last (inclusive), step. */
static const struct { int first, last, step; } cg_sglang_ranges[] = {
    {1, 8, 1}, {10, 32, 2}, {40, 64, 4}, {72, 256, 8}, {272, INT_MAX, 16},
};

/* SGLang's default cuda_graph_max_bs at TP >= 4 on 90-160 GB GPUs (server_args.py). */
#define CG_SGLANG_DEFAULT_MAX 512

int cg_default(cg_list *l, int max_bs)
{
    int all = 0;
    l->n = 0;
    for (size_t r = 0; r < sizeof cg_sglang_ranges / sizeof cg_sglang_ranges[0]; r++) {
        for (long bs = cg_sglang_ranges[r].first;
             bs <= cg_sglang_ranges[r].last && bs <= max_bs; bs += cg_sglang_ranges[r].step, all++) {
            if (l->n < CG_MAX_SIZES)   /* max_bs > 7632: the first CG_MAX_SIZES sizes */
                l->bs[l->n++] = (int)bs;
        }
    }
    return all;
}

static int cg_cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* Parses a positive int that fills [s, s+len). Returns 0 and *out, or -1. */
static int cg_parse_int(const char *s, size_t len, long *out)
{
    char buf[32];
    if (len == 0 || len >= sizeof buf)
        return -1;
    memcpy(buf, s, len);
    buf[len] = '\0';
    char *end;
    errno = 0;
    long v = strtol(buf, &end, 10);
    if (errno != 0 || end == buf || *end != '\0')
        return -1;
    *out = v;
    return 0;
}

int cg_parse(cg_list *l, const char *spec, char *err, size_t errlen)
{
    l->n = 0;
    if (spec == NULL || *spec == '\0') {
        snprintf(err, errlen, "cuda graphs: value \"\": empty batch-size list "
                 "(give sizes like 1,2,4,8, \"sglang[:MAX]\" or \"none\")");
        return -1;
    }
    if (strcmp(spec, "none") == 0)
        return 0; /* no graphs: every batch runs eagerly */
    if (strncmp(spec, "sglang", 6) == 0 && (spec[6] == '\0' || spec[6] == ':')) {
        long max = CG_SGLANG_DEFAULT_MAX;
        if (spec[6] == ':' && (cg_parse_int(spec + 7, strlen(spec + 7), &max) != 0 ||
                               !bnd_ok(&bnd_rows, (double)max))) {
            snprintf(err, errlen, "cuda graphs: value \"%.60s\": the max after \"sglang:\" "
                     "must be an integer in [1, %d] (bounds.h, batch rows)", spec, BND_ROWS_MAX);
            return -1;
        }
        int all = cg_default(l, (int)max);
        if (all > CG_MAX_SIZES) {   /* the first 512 were kept in silence */
            snprintf(err, errlen, "cuda graphs: value \"%.60s\": SGLang's list up to %ld holds %d batch "
                     "sizes, more than %d (CG_MAX_SIZES; the largest max is 7632)", spec, max, all, CG_MAX_SIZES);
            l->n = 0;
            return -1;
        }
        return 0;
    }
    const char *p = spec;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        long v;
        if (cg_parse_int(p, len, &v) != 0) {
            snprintf(err, errlen, "cuda graphs: value \"%.*s\" in \"%.60s\": not a batch "
                     "size (an integer >= 1)", (int)(len < 40 ? len : 40), p, spec);
            l->n = 0;
            return -1;
        }
        if (!bnd_ok(&bnd_rows, (double)v)) {
            snprintf(err, errlen, "cuda graphs: value %ld in \"%.60s\": out of range: a "
                     "batch size must be an integer in [1, %d] (bounds.h)", v, spec, BND_ROWS_MAX);
            l->n = 0;
            return -1;
        }
        if (l->n == CG_MAX_SIZES) {
            snprintf(err, errlen, "cuda graphs: value %ld (entry %d) in \"%.40s...\": more "
                     "than %d batch sizes (CG_MAX_SIZES)", v, l->n + 1, spec, CG_MAX_SIZES);
            l->n = 0;
            return -1;
        }
        l->bs[l->n++] = (int)v;
        if (!comma)
            break;
        p = comma + 1;
    }
    qsort(l->bs, (size_t)l->n, sizeof l->bs[0], cg_cmp_int);
    int w = 0;
    for (int i = 0; i < l->n; i++)
        if (w == 0 || l->bs[i] != l->bs[w - 1])
            l->bs[w++] = l->bs[i];
    l->n = w;
    return 0;
}

int cg_bucket(const cg_list *l, int bs)
{
    /* bisect_left: first index whose size is >= bs */
    int lo = 0, hi = l->n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (l->bs[mid] < bs)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < l->n ? l->bs[lo] : 0;
}
