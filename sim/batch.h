/* batch: the requests of a closed-loop server at concurrency C and their continuous
 * batching. Each request has an output length (from a distribution), a KV context that
 * starts at the prompt length and grows with every accepted token, and its own seeded RNG
 * stream for its length and its acceptance draws. At each iteration boundary the finished
 * requests leave and new ones take their slots. Sized for C up to a few thousand. */
#ifndef BATCH_H
#define BATCH_H
#include <stddef.h>
#include <stdint.h>
#include <gsl/gsl_rng.h>
#include "accept.h"

enum { BATCH_LEN_FIXED, BATCH_LEN_UNIFORM, BATCH_LEN_EXP };
typedef struct {
    int    kind;
    long   a_tokens, b_tokens;   /* fixed: a; uniform: [a, b] inclusive */
    double mean_tokens;          /* exp: mean (drawn lengths are rounded up, >= 1) */
} batch_lendist;

/* "256", "uniform:128:512", "exp:300". Returns 0 or -1 with err naming the value. */
int  batch_lendist_parse(batch_lendist *d, const char *spec, char *err, size_t errlen);
long batch_lendist_draw(const batch_lendist *d, gsl_rng *r);
double batch_lendist_mean(const batch_lendist *d);

typedef struct {
    long    id;
    long    out_len_tokens;      /* output length of the request */
    long    left_tokens;         /* still to generate */
    long    gen_tokens;          /* generated in this simulation (conservation checks) */
    long    ctx_tokens;          /* KV context: prompt + tokens so far */
    long    win_tokens;          /* generated inside the measured window */
    int64_t join_ns;             /* iteration boundary at which it joined the batch */
    gsl_rng *rng;                /* the slot's stream, reseeded with the request id */
    int     active;
    int     part_way;            /* placed part-way through its output at the start (--stagger) */
} batch_req;

/* Called for each request that finishes, and at the end for those still running
 * (finished = 0). For tests (token conservation) and traces. */
typedef void (*batch_req_fn)(void *ctx, const batch_req *r, int finished);

/* The distribution of accepted draft tokens for one (model, steps, topk, draft_tokens): a
 * request draws by inverse CDF, one uniform per iteration. Built from the acceptance
 * module (accept_tree_widths, accept_depth_prob, the histogram) and checked against
 * accept_expected; if they disagree, draws go through accept_draw instead. */
typedef struct {
    int    g;                        /* most tokens that can be accepted */
    int    use_draw;                 /* 1: call accept_draw (no closed distribution) */
    double cdf[ACC_MAX_POS + 2];     /* P(accepted <= k), k = 0..g */
    const accept_model *acc;
    int    steps, topk, draft_tokens;
} batch_accdist;

/* Builds d for the run; the model is borrowed. */
void batch_accdist_init(batch_accdist *d, const accept_model *a, int steps, int topk,
                        int draft_tokens);
int  batch_accdist_draw(const batch_accdist *d, gsl_rng *r);
double batch_accdist_mean(const batch_accdist *d);
/* E[D^2] of the tokens a finishing request drew past its output length (its last gain is
 * capped): the overshoot of a renewal process with increments 1 + accepted, whose
 * stationary law is P(D = x) = P(gain > x) / E[gain] (Feller, "An Introduction to
 * Probability Theory", vol. II, XI.4). A window with few request ends misses this
 * variance; the simulator adds it (docs/simulator.md, "Precision"). */
double batch_accdist_overshoot_m2(const batch_accdist *d);
/* --precision's floor: the variance per output token of the tokens requests of lengths len
 * lose when they finish, batch_accdist_overshoot_m2 / E[L] (the level make bench's precision
 * check and sim_precision_states_the_seeds_spread hold), scaled by the share of the overshoot's
 * variance that the acceptance draws do not explain at these lengths against long outputs:
 * f(L) = Var(o) - Cov(o, M)^2 / Var(M) (o = the overshoot S_N - L, M = S_N - E[gain] N the
 * request's draws' deviation, N its iterations: what a control variate on the draws, as
 * --precision's estimate has, leaves), E_L[f(L)] / f(long), at most 1. Exact by recursion on
 * the tokens left up to BATCH_FLOOR_EXACT_MAX; past it f(long), the variance of the
 * stationary overshoot (the covariance term falls as 1/L). A 1-token output loses nothing the draws do
 * not say: 0 (the unscaled floor ran 94,208 iterations there, alpha 0.7, steps 3); 2 tokens
 * 0.59 of it; 16 and more 0.97-1. */
#define BATCH_FLOOR_EXACT_MAX 1024
double batch_overshoot_floor(const batch_accdist *d, const batch_lendist *len);

typedef struct {
    int      cap;                /* concurrency C: slots */
    int      n;                  /* active requests (the batch size) */
    batch_req *slot;             /* owned */
    long     max_requests;       /* 0: unlimited (closed loop forever) */
    long     started;            /* requests admitted so far */
    long     finished;
    double   sum_ctx_tokens;     /* sum of ctx_tokens over active requests */
    batch_lendist len;
    long     prompt_tokens;
    unsigned long seed;
    /* measured window (after warmup) */
    int      in_window;
    int64_t  window_start_ns;
    long     win_tokens;         /* tokens emitted in the window */
    double   win_gain_tokens;    /* sum of 1+accepted (uncapped) over request-iterations */
    long     win_req_iters;      /* request-iterations in the window */
    double  *tpot_ns;            /* TPOT of requests that finished in the window (whole lives);
                                  * past BATCH_TPOT_MAX every tpot_stride-th of them only */
    size_t   ntpot, captpot;
    size_t   tpot_seen;          /* requests that finished in the window: all, kept or not */
    size_t   tpot_stride;        /* 1, then doubled each time the kept ones are halved */
    double   tpot_rate_sum;      /* sum of 1e9 / TPOT over all tpot_seen (the mean's, thinned) */
    long     total_tokens;       /* all tokens emitted (whole run) */
    batch_req_fn on_req;
    void    *on_req_ctx;
} batch;

/* TPOTs kept for the percentiles: 2^22 (32 MB). A run of --concurrency 65536 and
 * --output-len 1 finishes 65536 requests an iteration, so keeping every TPOT grew by
 * ~100 MB a second of a --iterations 10^6 run (2.9 GB after 24 s); past the cap every
 * other one kept is dropped and every second one after that kept (a systematic sample in
 * finish order), so memory stays under the cap and runs below it are unchanged. */
#define BATCH_TPOT_MAX ((size_t)1 << 22)

/* Fills C slots at t=0. stagger = 1: each initial request starts at a uniform random
 * point of its output (a steady-state server; only tokens generated here count).
 * Returns 0 or -1 (no memory). Free with batch_free. */
int  batch_init(batch *b, int concurrency, long max_requests, const batch_lendist *len,
                long prompt_tokens, int stagger, unsigned long seed);
void batch_free(batch *b);
/* Opens the measured window at t (iteration boundary after the warmup). */
void batch_open_window(batch *b, int64_t t_ns);
/* Ends one iteration at boundary t: every active request gains 1 + accepted tokens
 * (acc != NULL: one draw per request; NULL: one token, the baseline), capped at its output
 * length; finished requests leave and new ones join. Returns the tokens emitted, or -1
 * (no memory). */
long batch_step(batch *b, const batch_accdist *acc, int64_t t_ns);
/* At the end of the run: reports running requests to on_req; if no request finished in
 * the window, fills tpot from the running ones' part in it (returns 1: partial). */
int  batch_close(batch *b, int64_t t_ns);
#endif
