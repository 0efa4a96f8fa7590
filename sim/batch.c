/* batch: requests, their output lengths and acceptance draws, and continuous batching at a
 * fixed concurrency. Every request owns a seeded stream (the slot's gsl_rng reseeded with
 * the request id), so its length and its draws do not depend on the rest of the batch: the
 * speculative run and the baseline see the same requests (common random numbers). */
#define HAVE_INLINE 1   /* GSL inline gsl_rng_uniform; before any GSL header */
#include "batch.h"
#include "jitter.h"
#include "bounds.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Stream ids: requests live above 2^24 so that they never meet the ranks' streams. */
#define BATCH_STREAM_BASE 0x1000000ul

static int batch_parse_long(const char *s, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end)
        return -1;
    *out = v;
    return 0;
}

int batch_lendist_parse(batch_lendist *d, const char *spec, char *err, size_t errlen)
{
    memset(d, 0, sizeof *d);
    char buf[128];
    if (!spec || !*spec || strlen(spec) >= sizeof buf)
        goto bad;
    strcpy(buf, spec);
    if (strncmp(buf, "uniform:", 8) == 0) {
        char *colon = strchr(buf + 8, ':');
        if (!colon)
            goto bad;
        *colon = '\0';
        d->kind = BATCH_LEN_UNIFORM;
        if (batch_parse_long(buf + 8, &d->a_tokens) || batch_parse_long(colon + 1, &d->b_tokens)
            || d->a_tokens < 1 || d->b_tokens < d->a_tokens)
            goto bad;
        if (d->b_tokens > BND_TOKENS_MAX)
            goto big;
        return 0;
    }
    if (strncmp(buf, "exp:", 4) == 0) {
        char *end;
        d->kind = BATCH_LEN_EXP;
        d->mean_tokens = strtod(buf + 4, &end);
        if (end == buf + 4 || *end || !(d->mean_tokens >= 1) || !isfinite(d->mean_tokens))
            goto bad;
        if (d->mean_tokens > BND_TOKENS_MAX)
            goto big;
        return 0;
    }
    d->kind = BATCH_LEN_FIXED;
    if (batch_parse_long(buf, &d->a_tokens) || d->a_tokens < 1)
        goto bad;
    if (d->a_tokens > BND_TOKENS_MAX)
        goto big;
    d->b_tokens = d->a_tokens;
    return 0;
big:
    snprintf(err, errlen, "output length: value \"%s\": out of range: a token count must be "
             "in [1, %.10g] tokens (bounds.h)", spec, BND_TOKENS_MAX);
    memset(d, 0, sizeof *d);
    return -1;
bad:
    snprintf(err, errlen, "output length: value \"%s\": expected N >= 1, uniform:A:B "
             "(1 <= A <= B) or exp:MEAN (MEAN >= 1)", spec ? spec : "");
    return -1;
}

long batch_lendist_draw(const batch_lendist *d, gsl_rng *r)
{
    switch (d->kind) {
    case BATCH_LEN_UNIFORM:
        return d->a_tokens + (long)gsl_rng_uniform_int(r, (unsigned long)(d->b_tokens - d->a_tokens + 1));
    case BATCH_LEN_EXP: {
        /* exponential with the given mean, rounded up: at least one token */
        double x = -d->mean_tokens * log1p(-gsl_rng_uniform(r));
        double c = ceil(x);
        /* capped at the longest output bounds.h allows (gsl_rng_uniform_int, which draws the
         * staggered start, takes at most 2^32 - 1) */
        return c < 1 ? 1 : c > BND_TOKENS_MAX ? (long)BND_TOKENS_MAX : (long)c;
    }
    default:
        return d->a_tokens;
    }
}

double batch_lendist_mean(const batch_lendist *d)
{
    switch (d->kind) {
    case BATCH_LEN_UNIFORM: return 0.5 * (double)(d->a_tokens + d->b_tokens);
    case BATCH_LEN_EXP:     return d->mean_tokens;
    default:                return (double)d->a_tokens;
    }
}

void batch_accdist_init(batch_accdist *d, const accept_model *a, int steps, int topk,
                        int draft_tokens)
{
    int width[ACC_MAX_POS];
    double p[ACC_MAX_POS + 1] = {0};
    memset(d, 0, sizeof *d);
    d->acc = a;
    d->steps = steps;
    d->topk = topk;
    d->draft_tokens = draft_tokens;
    d->g = accept_tree_widths(steps, topk, draft_tokens, width);
    if (accept_depth_prob(a, 1, width[0] > 0 ? width[0] : 1) >= 0) {
        /* depth models: depth i counts iff depths 1..i all accept */
        double surv = 1;
        for (int k = 0; k < d->g; k++) {
            double next = surv * accept_depth_prob(a, k + 1, width[k]);
            p[k] = surv - next;
            surv = next;
        }
        p[d->g] = surv;
    } else {
        /* histogram: mass above g folds into g (accept.c acc_hist_draw) */
        for (int k = 0; k < a->nhist; k++)
            p[k < d->g ? k : d->g] += a->hist[k];
    }
    double cum = 0, mean = 0;
    for (int k = 0; k <= d->g; k++) {
        cum += p[k];
        mean += k * p[k];
        d->cdf[k] = cum;
    }
    d->cdf[d->g] = 2;   /* the last bucket takes every u, rounding included */
    double want = accept_expected(a, steps, topk, draft_tokens);
    if (!(fabs(mean - want) <= 1e-9 * (1 + want)))
        d->use_draw = 1;
}

int batch_accdist_draw(const batch_accdist *d, gsl_rng *r)
{
    if (d->use_draw)
        return accept_draw(d->acc, d->steps, d->topk, d->draft_tokens, r);
    double u = gsl_rng_uniform(r);
    /* k = how many of cdf[0..g-1] are <= u; counted without branches (the loop length is
     * fixed per run, the exit of a search loop would be mispredicted half the time) */
    int k = 0;
    for (int i = 0; i < d->g; i++)
        k += u >= d->cdf[i];
    return k;
}

double batch_accdist_mean(const batch_accdist *d)
{
    double mean = 0, prev = 0;
    for (int k = 0; k <= d->g; k++) {
        double c = k == d->g ? 1 : d->cdf[k];
        mean += k * (c - prev);
        prev = c;
    }
    return mean;
}

double batch_accdist_overshoot_m2(const batch_accdist *d)
{
    /* gain = 1 + k: P(gain > x) = P(k >= x) = 1 - cdf[x - 1] for x = 1..g */
    double m2 = 0, eg = 1 + batch_accdist_mean(d);
    for (int x = 1; x <= d->g; x++)
        m2 += (double)x * x * (1 - d->cdf[x - 1]);
    return m2 / eg;
}

/* f(l) of batch_overshoot_floor for l = 1..n (f[0] unused): recursions on the tokens left l,
 * the first gain G drawn (o = G - l when G >= l, else the rest's overshoot at l - G; M adds
 * G - mu): E[o], E[o^2], E[M], E[M^2], E[o M]. */
static void batch_floor_table(const batch_accdist *d, int n, double *f)
{
    int g = d->g + 1;                           /* gains 1..g */
    double p[ACC_MAX_POS + 3] = {0}, prev = 0, mu = 0;
    for (int k = 0; k <= d->g; k++) {
        double c = k == d->g ? 1 : d->cdf[k];
        p[k + 1] = c - prev;
        mu += (k + 1) * p[k + 1];
        prev = c;
    }
    double *o1 = calloc((size_t)n + 1, sizeof *o1), *o2 = calloc((size_t)n + 1, sizeof *o2);
    double *m1 = calloc((size_t)n + 1, sizeof *m1), *m2 = calloc((size_t)n + 1, sizeof *m2);
    double *om = calloc((size_t)n + 1, sizeof *om);
    if (!o1 || !o2 || !m1 || !m2 || !om) {
        for (int l = 1; l <= n; l++)
            f[l] = batch_accdist_overshoot_m2(d);   /* the stationary bound, as before */
        goto out;
    }
    for (int l = 1; l <= n; l++) {
        double a1 = 0, a2 = 0, b1 = 0, b2 = 0, ab = 0;
        for (int x = 1; x <= g; x++) {
            if (!(p[x] > 0))
                continue;
            double dm = x - mu;
            if (x >= l) {                       /* this gain ends the request */
                double o = x - l;
                a1 += p[x] * o;
                a2 += p[x] * o * o;
                b1 += p[x] * dm;
                b2 += p[x] * dm * dm;
                ab += p[x] * o * dm;
            } else {
                int r = l - x;
                a1 += p[x] * o1[r];
                a2 += p[x] * o2[r];
                b1 += p[x] * (dm + m1[r]);
                b2 += p[x] * (dm * dm + 2 * dm * m1[r] + m2[r]);
                ab += p[x] * (dm * o1[r] + om[r]);
            }
        }
        o1[l] = a1, o2[l] = a2, m1[l] = b1, m2[l] = b2, om[l] = ab;
        double vo = a2 - a1 * a1, vm = b2 - b1 * b1, c = ab - a1 * b1;
        double v = vm > 1e-12 ? vo - c * c / vm : vo;
        f[l] = v > 0 ? v : 0;
    }
out:
    free(o1), free(o2), free(m1), free(m2), free(om);
}

double batch_overshoot_floor(const batch_accdist *d, const batch_lendist *len)
{
    double mean_len = batch_lendist_mean(len), m2 = batch_accdist_overshoot_m2(d);
    if (!(mean_len > 0))
        return 0;
    /* f(long): the overshoot's stationary law P(o = j) = P(gain > j) / E[gain] (the one
     * batch_accdist_overshoot_m2 takes E[o^2] of), its variance; the covariance term is gone */
    double eg = 1 + batch_accdist_mean(d), e1 = 0;
    for (int x = 1; x <= d->g; x++)
        e1 += (double)x * (1 - d->cdf[x - 1]);
    e1 /= eg;
    double tail = m2 - e1 * e1;
    if (!(tail > 0))                    /* every gain alike: no overshoot varies */
        return 0;
    /* f(l) exactly up to the longest length asked, at most BATCH_FLOOR_EXACT_MAX */
    double need = len->kind == BATCH_LEN_UNIFORM ? (double)len->b_tokens
                  : len->kind == BATCH_LEN_EXP ? 20 * len->mean_tokens : (double)len->a_tokens;
    int n = need < BATCH_FLOOR_EXACT_MAX ? (int)ceil(need) : BATCH_FLOOR_EXACT_MAX;
    if (n < 1)
        n = 1;
    double *f = malloc(((size_t)n + 1) * sizeof *f);
    if (!f)
        return m2 / mean_len;
    batch_floor_table(d, n, f);
    double ef = 0;
    switch (len->kind) {
    case BATCH_LEN_UNIFORM: {
        double w = 1.0 / (double)(len->b_tokens - len->a_tokens + 1);
        for (long l = len->a_tokens; l <= len->b_tokens && l <= n; l++)
            ef += w * f[l];
        long past = len->b_tokens - (len->a_tokens - 1 > n ? len->a_tokens - 1 : n);
        if (past > 0)
            ef += w * (double)past * tail;
        break;
    }
    case BATCH_LEN_EXP: {
        /* P(L = l) = P(ceil(X) = l), X exponential: e^-(l-1)/m - e^-l/m; L >= 1 */
        double m = len->mean_tokens, below = 0;
        for (int l = 1; l <= n; l++) {
            double pl = exp(-(l - 1) / m) - exp(-l / m);
            ef += pl * f[l];
            below += pl;
        }
        ef += (1 - below > 0 ? 1 - below : 0) * tail;
        break;
    }
    default:
        ef = len->a_tokens <= n ? f[len->a_tokens] : tail;
    }
    free(f);
    double share = ef / tail;
    return m2 * (share < 1 ? share : 1) / mean_len;
}

/* Starts request `id` in slot s at t; progress > 0 means it is already that far along. */
static void batch_admit(batch *b, batch_req *q, int64_t t_ns, int stagger)
{
    q->id = b->started++;
    gsl_rng_set(q->rng, jitter_stream_seed(b->seed, BATCH_STREAM_BASE + (unsigned long)q->id));
    q->out_len_tokens = batch_lendist_draw(&b->len, q->rng);
    long done = stagger ? (long)gsl_rng_uniform_int(q->rng, (unsigned long)q->out_len_tokens) : 0;
    q->left_tokens = q->out_len_tokens - done;
    q->part_way = done > 0;
    q->gen_tokens = 0;
    q->win_tokens = 0;
    q->ctx_tokens = b->prompt_tokens + done;
    q->join_ns = t_ns;
    q->active = 1;
    b->n++;
    b->sum_ctx_tokens += (double)q->ctx_tokens;
}

int batch_init(batch *b, int concurrency, long max_requests, const batch_lendist *len,
               long prompt_tokens, int stagger, unsigned long seed)
{
    memset(b, 0, sizeof *b);
    b->cap = concurrency;
    b->max_requests = max_requests;
    b->len = *len;
    b->prompt_tokens = prompt_tokens;
    b->seed = seed;
    b->slot = calloc((size_t)concurrency, sizeof *b->slot);
    if (!b->slot)
        return -1;
    for (int s = 0; s < concurrency; s++) {
        b->slot[s].rng = gsl_rng_alloc(gsl_rng_taus2);
        if (!b->slot[s].rng)
            return -1;
    }
    for (int s = 0; s < concurrency && (max_requests == 0 || b->started < max_requests); s++)
        batch_admit(b, &b->slot[s], 0, stagger);
    return 0;
}

void batch_free(batch *b)
{
    if (b->slot)
        for (int s = 0; s < b->cap; s++)
            if (b->slot[s].rng)
                gsl_rng_free(b->slot[s].rng);
    free(b->slot);
    free(b->tpot_ns);
    memset(b, 0, sizeof *b);
}

void batch_open_window(batch *b, int64_t t_ns)
{
    b->in_window = 1;
    b->window_start_ns = t_ns;
}

static int batch_push_tpot(batch *b, double tpot_ns)
{
    size_t seen = b->tpot_seen++;
    b->tpot_rate_sum += 1e9 / tpot_ns;
    if (b->tpot_stride == 0)
        b->tpot_stride = 1;
    if (seen % b->tpot_stride)
        return 0;
    if (b->ntpot == BATCH_TPOT_MAX) {   /* keep every other one (BATCH_TPOT_MAX in batch.h) */
        for (size_t i = 0; i < b->ntpot / 2; i++)
            b->tpot_ns[i] = b->tpot_ns[2 * i];
        b->ntpot /= 2;
        b->tpot_stride *= 2;
        if (seen % b->tpot_stride)
            return 0;
    }
    if (b->ntpot == b->captpot) {
        size_t cap = b->captpot ? 2 * b->captpot : 256;
        double *p = realloc(b->tpot_ns, cap * sizeof *p);
        if (!p)
            return -1;
        b->tpot_ns = p;
        b->captpot = cap;
    }
    b->tpot_ns[b->ntpot++] = tpot_ns;
    return 0;
}

long batch_step(batch *b, const batch_accdist *acc, int64_t t_ns)
{
    /* per request: one draw and a few integer updates; the batch's sums are settled once
     * (sum_ctx_tokens before a finished request's context leaves it) */
    long emitted = 0, unsettled = 0, gains = 0, reqs = 0;
    int in_window = b->in_window;
    for (int s = 0; s < b->cap; s++) {
        batch_req *q = &b->slot[s];
        if (!q->active)
            continue;
        long gain = acc ? 1 + batch_accdist_draw(acc, q->rng) : 1;
        long got = gain < q->left_tokens ? gain : q->left_tokens;
        q->left_tokens -= got;
        q->gen_tokens += got;
        q->ctx_tokens += got;
        q->win_tokens += in_window ? got : 0;
        emitted += got;
        unsettled += got;
        gains += gain;
        reqs++;
        if (q->left_tokens > 0)
            continue;
        /* finished: TPOT = its decode time / its tokens, for requests that finish in the
         * measured window and joined in it, or whose whole life was simulated before it (in
         * the warm-up: not placed part-way through their output at the start) */
        if (in_window && (q->join_ns >= b->window_start_ns || !q->part_way) && q->gen_tokens > 0)
            if (batch_push_tpot(b, (double)(t_ns - q->join_ns) / (double)q->gen_tokens))
                return -1;
        if (b->on_req)
            b->on_req(b->on_req_ctx, q, 1);
        q->active = 0;
        b->n--;
        b->finished++;
        b->sum_ctx_tokens += (double)unsettled - (double)q->ctx_tokens;
        unsettled = 0;
        if (b->max_requests == 0 || b->started < b->max_requests)
            batch_admit(b, q, t_ns, 0);
    }
    /* sums of integers below 2^53: exact in a double */
    b->sum_ctx_tokens += (double)unsettled;
    if (in_window) {
        b->win_tokens += emitted;
        b->win_gain_tokens += (double)gains;
        b->win_req_iters += reqs;
    }
    b->total_tokens += emitted;
    return emitted;
}

int batch_close(batch *b, int64_t t_ns)
{
    int partial = 0;
    if (b->ntpot == 0 && b->in_window) {
        for (int s = 0; s < b->cap; s++) {
            batch_req *q = &b->slot[s];
            int64_t from = q->join_ns > b->window_start_ns ? q->join_ns : b->window_start_ns;
            if (q->active && q->win_tokens > 0 && t_ns > from)
                if (batch_push_tpot(b, (double)(t_ns - from) / (double)q->win_tokens) == 0)
                    partial = 1;
        }
    }
    if (b->on_req)
        for (int s = 0; s < b->cap; s++)
            if (b->slot[s].active)
                b->on_req(b->on_req_ctx, &b->slot[s], 0);
    return partial;
}
