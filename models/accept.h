/* accept: acceptance models, chosen by name from a table (STYLE 7). Each request draws its
 * own accepted length per iteration from a seeded GSL stream. Chain drafting accepts a
 * prefix of the steps draft tokens; a tree (topk > 1) raises the per-depth chance. */
#ifndef ACCEPT_H
#define ACCEPT_H
#include <stddef.h>
#include <gsl/gsl_rng.h>

#define ACC_MAX_POS 32

typedef struct {
    const char *name;                 /* "alpha", "positional", "histogram" */
    int  kind;
    double alpha;                     /* alpha: i.i.d. acceptance per position, [0,1) */
    int    npos;                      /* positional: conditional alphas per depth */
    double pos[ACC_MAX_POS];
    int    nhist;                     /* histogram: weight of accepting 0..nhist-1 tokens */
    double hist[ACC_MAX_POS + 1];
} accept_model;

/* Parses "alpha:0.7", "positional:0.8,0.6,0.5", "histogram:0.1,0.2,0.3,0.4" (or a bare
 * number = alpha). Returns 0 or -1 with a message naming the value. */
int    accept_parse(accept_model *a, const char *spec, char *err, size_t errlen);
/* Draft tokens accepted (0..steps) for one request and one iteration; topk widens each
 * depth of the tree (draft_tokens-1 nodes over steps depths). */
int    accept_draw(const accept_model *a, int steps, int topk, int draft_tokens, gsl_rng *r);
/* Expected accepted draft tokens (closed form where there is one). */
double accept_expected(const accept_model *a, int steps, int topk, int draft_tokens);

/* Added with the implementation (models/accept.c; docs/acceptance.md): */
enum { ACC_ALPHA, ACC_POSITIONAL, ACC_HISTOGRAM, ACC_NKIND }; /* values of accept_model.kind */
/* Tree shape used by accept_draw/accept_expected: width[d] draft nodes at depth d+1
 * (d = 0..steps-1) from draft_tokens-1 nodes; 0 = depth out of budget (never accepted).
 * draft_tokens <= 0 means the chain default steps+1; steps is capped at ACC_MAX_POS.
 * Returns the number of depths with width > 0. */
int    accept_tree_widths(int steps, int topk, int draft_tokens, int width[ACC_MAX_POS]);
/* Probability that depth d (1-based) is accepted given depth d-1 was, for a tree of
 * width w at that depth: 1-(1-p_d)^w. Histogram models have no per-depth chance: -1. */
double accept_depth_prob(const accept_model *a, int d, int w);
/* The i.i.d. alpha whose draft tree (steps, topk, draft_tokens) yields `len` tokens per
 * iteration on average, accepted draft tokens + 1 (SGLang's logged "accept len"), by
 * bisection on accept_expected. 0 and *alpha, or -1 with err when len is below 1 or not
 * below the tree's depth + 1 (reachable only at alpha 1). */
int    accept_alpha_for_len(double len, int steps, int topk, int draft_tokens, double *alpha,
                            char *err, size_t errlen);
/* Writes the resolved model as a spec string ("alpha:0.7", ...) for the config banner. */
void   accept_format(const accept_model *a, char *buf, size_t len);
#endif
