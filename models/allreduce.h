/* allreduce: time of one all-reduce of B bytes over N ranks, from an algorithm (ring, tree,
 * one-shot, two-shot; a table of function pointers) and a link (latency, bandwidth,
 * a floor for small messages). Link presets carry their source. Decode all-reduces are
 * small (14 KB per token for Kimi K2.5), so the floor matters more than the bandwidth. */
#ifndef ALLREDUCE_H
#define ALLREDUCE_H
#include <stddef.h>

typedef struct {
    char   name[64];
    double latency_us;      /* per step / hop latency */
    double bw_gbps;         /* per-direction link bandwidth, GB/s */
    double floor_us;        /* measured minimum all-reduce time (small messages) */
    const char *source;     /* where the numbers come from */
    /* Added with the implementation: custom peer-to-peer kernels (oneshot, twoshot; SGLang's
     * custom all-reduce) have their own floor and reach their own bandwidth. 0: use
     * floor_us / bw_gbps. */
    double p2p_floor_us;
    double p2p_bw_gbps;
} ar_link;

typedef struct {
    const char *name;       /* "ring", "tree", "oneshot", "twoshot", "nccl" (best of ring/tree) */
    double (*time_us)(const ar_link *l, double bytes, int ranks);
} ar_algo;

const ar_algo *ar_algo_find(const char *name);       /* NULL if unknown */
const ar_link *ar_link_preset(const char *name);     /* "pcie5-8gpu", "nvlink4-8gpu", ... */
void           ar_list(void (*cb)(const char *kind, const char *name, const char *source));
double         ar_time_us(const ar_algo *a, const ar_link *l, double bytes, int ranks);

/* Added with the implementation (models/allreduce.c, docs/allreduce.md): algorithm
 * "custom" (SGLang's custom all-reduce: oneshot below 256 KB at <= 8 ranks, else twoshot).
 * "nccl" takes NCCL's tree as NCCL builds it on one node (a chain), so it equals "ring" for
 * the one-node presets; "tree" is the textbook double binary tree. */
/* A custom link from "alpha=US,beta=GBPS[,floor=US][,p2p_floor=US][,p2p_beta=GBPS]"
 * (alpha: per-step latency; beta: bus bandwidth). Fills *l (name "custom"). Returns 0, or
 * -1 with a message naming the value. */
int            ar_link_parse(ar_link *l, const char *spec, char *err, size_t errlen);
/* A link from a JSON file such as `specsim fit-allreduce` writes (docs/allreduce.md,
 * "Fitting a link"): {"specsim_link": 1, "name", "latency_us", "bw_gbps", "floor_us",
 * optional "p2p_floor_us", "p2p_bw_gbps", "source"}. Fills *l; l->source points to a copy
 * of the file's source text (prefixed with the path) that lives until the process exits,
 * so *l may be copied freely. Returns 0, or -1 with "FILE: field F: value V: why". */
int            ar_link_load(const char *path, ar_link *l, char *err, size_t errlen);
/* The same from the file's text already in memory (path names it in messages). */
int            ar_link_from_text(const char *text, const char *path, ar_link *l, char *err,
                                 size_t errlen);
#endif
