/* sim: the event engine and the speculative iteration (docs/simulator.md).
 * Events are the points where an entity's future depends on another one:
 *   EV_GPU     a rank's stream finished a phase that has no collective (the next phase may
 *              start; after accept, the host waiting on the result goes on),
 *   EV_SEG     the TP group left the last all-reduce of a segment of a phase,
 *   EV_BARRIER every host reached the scheduler's per-iteration barrier.
 * Between events, a host thread runs ahead on its own (gaps and launches depend on nothing
 * until it syncs on the GPU or meets the barrier), so its launch times are computed when
 * it is released, not popped one by one. Within a segment of K all-reduces the straggler
 * waits are drawn directly (max of R draws by inverse CDF, jitter.h), so a phase costs S
 * events, not K*R. Time: int64 nanoseconds. No sum of times can overflow: every duration
 * the engine adds goes through sim_ns, which refuses one of SIM_STEP_MAX_NS or more, and
 * every event time is checked against SIM_HORIZON_NS when it is pushed (and a host's
 * run-ahead when computed). Between two checks the engine adds at most a few tens of
 * durations to a checked time (a host's gaps and launches of one iteration, a phase's
 * segments), so no intermediate sum exceeds 2^61 + 64 * 2^53 < 2^63. A run that reaches
 * either limit stops with an error that names the duration (sim_run returns -2). */
/* GSL's inline gsl_rng_uniform (gsl_inline.h): the engine draws tens of uniforms per
 * iteration. Must come before any GSL header. */
#define HAVE_INLINE 1
#include "sim.h"
#include "evq.h"
#include "jitter.h"
#include "bounds.h"
#include "bmeans.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

/* A phase instance is named by its global index g = iteration * SIM_SLOTS + slot (shifts,
 * not divisions, on the hot path). A host runs at most one iteration ahead of its stream,
 * so g & (SIM_RING-1) names a ring entry uniquely among the phases in flight. */
#define SIM_RING   8
/* Host stalls kept apart in one eager instance (sim_stall_draw); more add to the last one. */
#define SIM_STALLS 4
#define SIM_SLOTS  4        /* phases per iteration: draft, verify, accept, extend */
_Static_assert(SIM_SLOTS == 4, "sim_iter_of shifts by 2");
#define SIM_KV_PROBE 1e6    /* kv tokens used to read the (linear) kv slope off the model */
/* Stream ids of the entities (requests use 2^24 and up, batch.c). */
#define SIM_STREAM_HOST  0x10000ul
#define SIM_STREAM_GPU   0x20000ul
#define SIM_STREAM_GROUP 0x30000ul

enum { EV_GPU, EV_SEG, EV_BARRIER };

/* The engine's limits (see the top of the file): one duration below 2^53 ns (104 days),
 * simulated time below 2^61 ns (73 years). */
#define SIM_STEP_MAX_NS (INT64_C(1) << 53)
#define SIM_HORIZON_NS  (INT64_C(1) << 61)

/* A fixed-length `specsim run` projected to take longer than this says so (sim_eta_note). */
#define SIM_ETA_NOTE_S 60.0

/* Cost of one phase slot at one padded batch size, read off the model once. */
typedef struct {
    int    valid, linear;
    double a_us, b_us_per_kv;      /* gpu = a + b * kv (all forwards) */
    double sda_us, sdb_us_per_kv;  /* sum over groups of sd_frac * cost, same form */
    double ar_total_us;            /* all collectives of the phase */
    int    ncoll;
    long   n_meas;                 /* measured iterations planned at this size (intervals) */
    double kv_meas;                /* and their KV context, summed */
    /* the launch profile (wm_group.pos; has_pos: some group of the phase has one): the GPU
     * time launched in each slice of the eager launch time, pa + pb * kv, as a and b above */
    int    has_pos;
    double pa_us[WM_POS_BINS], pb_us_per_kv[WM_POS_BINS];
    /* a graph replay's size (the key; 0: eager) and its factor (wm graph_size_factors; 1:
     * eager or a size without one) */
    int    graph_size;
    double graph_factor;
} sim_cost;

typedef struct {
    /* fixed for the run */
    int    wm, rows_per_req, forwards, sync_after, kernels_fwd;
    int    always_eager;           /* the model says: never from a CUDA graph */
    const char *name;
    double gap_us, gap_sd_us;
    double gap_row_us;             /* host gap per running request (wm host_gap_per_row_us) */
    double eager_us;               /* host cost per eager kernel launch of this phase */
    double eager_gap_us;           /* GPU idle per eager kernel beyond the gap group (model) */
    double stall_rate, stall_us;   /* its host stalls: per launch, mean length (us) */
    sim_cost *cache;               /* indexed by padded (or eager) batch size */
    /* this iteration */
    int    bs, padded, eager;
    double tokens, kv_tokens, gpu_us, sd_frac, ar_us;
    int    ncoll, nseg, kernels;
    double launch_us, first_us;
    int64_t launch_ns, first_ns, gap_ns;   /* the same in ns (host hot path) */
    double gap_sd_scaled_us;               /* gap_sd_us * jitter_scale */
    /* an eager instance's launch profile: rest[b] the share of its GPU time launched from
     * slice b of its launch time on (rest[0] = 1); has_pos 0: spread evenly (1 - b/BINS) */
    int    has_pos;
    float  rest[WM_POS_BINS];
} sim_phase;

typedef struct {
    long      iter;
    int       bs;
    sim_phase ph[SIM_SLOTS];
} sim_plan;

typedef struct {
    int64_t host_free_ns, gpu_free_ns, start_ns;
    long    host_gidx, gpu_gidx, launched;
    int     gpu_busy;
    double  cur_work_us, cur_comm_us, cur_idle_us;  /* the running phase, for accounting */
    int64_t ready_ns[SIM_RING], lbegin_ns[SIM_RING];
    gsl_rng *host_rng, *gpu_rng;
    /* d/dh of the times above (us), h the host's speed factor: every host duration (gaps,
     * launches) scaled by h, the derivative at h = 1 carried through every sum and max
     * (forward-mode differentiation of the event times; intervals, "host speed") */
    double  host_free_d, gpu_free_d, start_d, end_d;
    double  ready_d[SIM_RING], lbegin_d[SIM_RING];
    /* the host stalls drawn for an eager instance in flight (sim_stall_draw): how many, each
     * one's place (the share of the instance's launches before it) and the stall time up to
     * it and with it (us) */
    int     nstall[SIM_RING];
    double  stall_x[SIM_RING][SIM_STALLS], stall_c[SIM_RING][SIM_STALLS];
} sim_rank;

typedef struct {
    const sim_params *p;
    const sim_hooks  *h;
    evq       q;
    int       R, nslots, ncache, stop;
    double    sigma_scale;         /* jitter_scale */
    sim_rank *rk;
    sim_plan  plan[2];
    sim_phase proto[SIM_SLOTS];
    /* the collective group: one phase in assembly at a time */
    long      g_gidx;
    int       g_ready, g_seg, g_coll_done;
    int64_t   g_maxlb_ns, g_seg_start_ns, g_idle_ns;
    double    g_maxlb_d, g_seg_start_d;      /* their d/dh (sim_rank) */
    double    g_stall_us;                    /* the most host stall time of a rank in it */
    gsl_rng  *grp_rng;
    const jitter_table *jt1, *jtR;
    /* the hosts' scheduler barrier */
    int       bar_count;
    int64_t   bar_max_ns;
    double    bar_max_d, bar_ev_d;           /* d/dh of bar_max_ns, of the pushed barrier */
    /* iterations and requests */
    batch     b;
    batch_accdist acc;
    long      iter;
    int64_t   iter_start_ns, win_start_ns, end_ns;
    double    win_start_d, end_d;            /* their d/dh (sim_rank) */
    double    iter_sum_us, bs_sum;
    long      iters_measured;
    /* rank-0 breakdown in the window */
    double    phase_us[WM_NPHASE], comm_us, wait_us, idle_extra_us, busy_us;
    double    host_us, launch_us;
    long      phases_run, phases_eager;
    double    tok_max[WM_NPHASE], q_max[WM_NPHASE], kvr_max[WM_NPHASE];   /* priced at (sim_result) */
    int       oom, win_open;
    double    eta_t0;              /* sim_eta_note: the clock (s) at iteration eta_it0 */
    long      eta_it0, eta_fin0;   /* ... and the requests finished then */
    int       eta_said;
    int       range;               /* a duration or a time passed the engine's limits */
    double    range_us;            /* the duration (us), or the time (us) when range == 2 */
    long      span_lo, span_hi;    /* iterations whose spans go to hooks->on_span */
    /* the window's batch means (--precision, intervals) and the groups' GPU time in it */
    bmeans    bm;
    double    gain_mean;           /* expected tokens per request and iteration */
    double    turn_m2;             /* E[overshoot^2] / E[output length]: the variance per
                                      token of the tokens lost when requests finish (the
                                      intervals' run part) */
    double    turn_cv;             /* the same left after the draws' control variate
                                      (batch_overshoot_floor): --precision's floor */
    int       precise;
    interval_acc ia;
    /* the hf-assisted loop (docs/simulator.md, "Hugging Face assisted generation") */
    int       hf;
    double    reject_us;           /* extend's host_gap_reject_us */
} sim_state;

/* A duration in us as ns. One of SIM_STEP_MAX_NS or more (or NaN) stops the run
 * (S->range) instead of wrapping: the caller's sum stays far from overflow. */
static inline int64_t sim_ns(sim_state *S, double us)
{
    double ns = us * 1000.0 + 0.5;
    if (!(fabs(ns) < (double)SIM_STEP_MAX_NS)) {
        if (!S->range) {
            S->range = 1;
            S->range_us = us;
        }
        S->stop = 1;
        return ns < 0 ? -SIM_STEP_MAX_NS : SIM_STEP_MAX_NS;
    }
    return (int64_t)ns;
}

/* Flags a time past the horizon; 1 when t is past it. */
static inline int sim_past_horizon(sim_state *S, int64_t t)
{
    if (t <= SIM_HORIZON_NS)
        return 0;
    if (!S->range) {
        S->range = 2;
        S->range_us = (double)t / 1000.0;
    }
    S->stop = 1;
    return 1;
}
static inline int64_t sim_max64(int64_t a, int64_t b) { return a > b ? a : b; }
/* d/dh of max(a, b) (sim_rank's host derivative): the later one's; at a tie the larger
 * derivative (the right derivative: a slower host makes the host side the later one) */
static inline double sim_max_d(int64_t a, double ad, int64_t b, double bd)
{
    return a > b ? ad : b > a ? bd : (ad > bd ? ad : bd);
}

static inline long sim_iter_of(const sim_state *S, long g) { (void)S; return g >> 2; }
static inline int sim_slot_of(long g) { return (int)(g & (SIM_SLOTS - 1)); }
static inline int sim_last_slot(const sim_state *S, long g) { return sim_slot_of(g) == S->nslots - 1; }
/* the phase after g: the next slot, or the first of the next iteration */
static inline long sim_next(const sim_state *S, long g)
{
    return sim_last_slot(S, g) ? (g | (SIM_SLOTS - 1)) + 1 : g + 1;
}

static inline sim_phase *sim_phase_of(sim_state *S, long g)
{
    /* plan[it & 1] holds iteration it while any phase of it can still run (sim_boundary) */
    return &S->plan[(g >> 2) & 1].ph[sim_slot_of(g)];
}
static inline int sim_measured(const sim_state *S, long it) { return it >= S->p->warmup; }
static inline int sim_want_span(const sim_state *S, long it)
{
    return it >= S->span_lo && it < S->span_hi;
}

static void sim_push(sim_state *S, int64_t t, int type, int a, long b)
{
    if (sim_past_horizon(S, t))
        return;
    if (evq_push(&S->q, t, type, a, b))
        S->oom = S->stop = 1;
}

static void sim_span_emit(sim_state *S, int rank, int track, const char *name, const char *cat,
                          int64_t s, int64_t e, long it, const sim_phase *ph, int ncoll,
                          double comm_us)
{
    sim_span sp = {rank, track, name, cat, s, e, it, 0, 0, 0, 0, ncoll, comm_us};
    if (ph) {
        sp.bs = ph->bs;
        sp.padded_bs = ph->eager ? ph->bs : ph->padded;
        sp.eager = ph->eager;
        sp.tokens = ph->tokens;
    }
    S->h->on_span(S->h->ctx, &sp);
}

/* ---- costs ---------------------------------------------------------------------------- */

static void sim_cost_fill(sim_state *S, const sim_phase *pr, sim_cost *c, int rows)
{
    const wm_model *m = S->p->model;
    const wm_phase_model *pm = wm_phase_get(m, pr->wm);
    double tokens = (double)rows * pr->rows_per_req;
    memset(c, 0, sizeof *c);
    c->valid = 1;
    c->linear = 1;
    /* a key of a phase that is not always eager and is a captured size is a graph replay's
     * (an eager batch's key is its rows, above the largest size) */
    const cg_list *cg = &S->p->graphs;
    c->graph_size = !pr->always_eager && cg->n && cg_bucket(cg, rows) == rows ? rows : 0;
    c->graph_factor = wm_phase_graph_factor(pm, c->graph_size);
    for (int i = 0; i < pm->ngroups; i++) {
        const wm_group *g = &pm->groups[i];
        double q = pr->rows_per_req;    /* query tokens per row */
        double a = wm_group_us_q(m, g, tokens, 0, q);
        double b1 = wm_group_us_q(m, g, tokens, SIM_KV_PROBE, q);
        double b2 = wm_group_us_q(m, g, tokens, 2 * SIM_KV_PROBE, q);
        double slope = (b1 - a) / SIM_KV_PROBE;
        if (fabs(b2 - (a + 2 * slope * SIM_KV_PROBE)) > 1e-9 * (fabs(b2) + 1))
            c->linear = 0;
        c->a_us += a * pr->forwards;
        c->b_us_per_kv += slope * pr->forwards;
        c->sda_us += g->sd_frac * a * pr->forwards;
        c->sdb_us_per_kv += g->sd_frac * slope * pr->forwards;
        c->has_pos |= g->has_pos;
        for (int b = 0; b < WM_POS_BINS; b++) {
            double w = (g->has_pos ? g->pos[b] : 1.0 / WM_POS_BINS) * pr->forwards;
            c->pa_us[b] += w * a;
            c->pb_us_per_kv[b] += w * slope;
        }
    }
    if (S->R > 1 && S->p->algo) {
        for (int i = 0; i < pm->ncolls; i++) {
            const wm_coll *k = &pm->colls[i];
            int n = k->count * pr->forwards;
            c->ncoll += n;
            /* an all-gather or a reduce-scatter is one of the two halves of a ring
             * all-reduce of the same bytes: half its steps, half its traffic */
            double half = strcmp(k->op, "allreduce") == 0 ? 1.0 : 0.5;
            /* the one-shot/custom kernels are all-reduces only: the GroupCoordinator of
             * SGLang and vLLM (distributed/parallel_state.py) uses its custom all-reduce in
             * all_reduce and sends all-gathers through NCCL */
            const ar_algo *al = half < 1 ? ar_algo_find("nccl") : S->p->algo;
            c->ar_total_us += n * half * ar_time_us(al ? al : S->p->algo, &S->p->link,
                                                    k->bytes_per_token * tokens, S->R);
        }
    }
}

/* GPU time and sd-weighted time of a phase, directly from the groups (non-linear models);
 * with bins, the GPU time launched in each slice of the launch profile too. */
static void sim_cost_direct(sim_state *S, const sim_phase *pr, int rows, double kv,
                            double *gpu, double *sdw, double *bins)
{
    const wm_model *m = S->p->model;
    const wm_phase_model *pm = wm_phase_get(m, pr->wm);
    double tokens = (double)rows * pr->rows_per_req;
    *gpu = *sdw = 0;
    if (bins)
        memset(bins, 0, WM_POS_BINS * sizeof *bins);
    for (int i = 0; i < pm->ngroups; i++) {
        const wm_group *g = &pm->groups[i];
        double u = wm_group_us_q(m, g, tokens, kv, pr->rows_per_req) * pr->forwards;
        *gpu += u;
        *sdw += g->sd_frac * u;
        for (int b = 0; bins && b < WM_POS_BINS; b++)
            bins[b] += u * (g->has_pos ? g->pos[b] : 1.0 / WM_POS_BINS);
    }
}

/* An eager phase's launch profile at its shape (sim_phase.rest) from the GPU time launched
 * in each slice (w, changed) and even_us spread evenly over the slices. */
static void sim_rest_fill(sim_phase *ph, double *w, double even_us)
{
    double tot = 0;
    for (int b = 0; b < WM_POS_BINS; b++) {
        w[b] += even_us / WM_POS_BINS;   /* spread over the launches (the eager gaps) */
        tot += w[b];
    }
    if (!(tot > 0)) {
        ph->has_pos = 0;
        return;
    }
    double after = tot;
    for (int b = 0; b < WM_POS_BINS; b++) {
        ph->rest[b] = (float)(after / tot);
        after -= w[b];
    }
}

/* The share of eager instance ph's GPU time launched after share x of its launch time. */
static inline double sim_rest(const sim_phase *ph, double x)
{
    if (!ph->has_pos)
        return 1 - x;
    double f = x * WM_POS_BINS;
    int b = (int)f;
    if (b >= WM_POS_BINS)
        return 0;
    double r0 = ph->rest[b], r1 = b + 1 < WM_POS_BINS ? ph->rest[b + 1] : 0;
    return r0 - (f - b) * (r0 - r1);
}

static void sim_make_plan(sim_state *S, long it)
{
    const sim_params *p = S->p;
    sim_plan *pl = &S->plan[it & 1];
    pl->iter = it;
    pl->bs = S->b.n;
    int bs = S->b.n;
    int padded = p->graphs.n ? cg_bucket(&p->graphs, bs) : 0;
    int eager = padded == 0;
    int key = eager ? bs : padded;
    /* the batch's KV context over its real rows; a phase whose padded rows read KV like
     * real ones (kv_rows padded, the fit's choice) counts them at the real rows' mean */
    double ctx = S->b.sum_ctx_tokens;
    /* hf-assisted: a round drafts k = min(steps, tokens still to generate - 1) tokens
     * (transformers' AssistedCandidateGenerator caps num_assistant_tokens at what the
     * output still needs); k = 0 is a plain target step. p_rej: the round rejects one of
     * its k draft tokens (its host cost: extend's host_gap_reject_us). */
    int hf_k = p->steps;
    double hf_rej = 0;
    if (S->hf && p->spec) {
        long left = -1;
        for (int i = 0; i < S->b.cap; i++)
            if (S->b.slot[i].active && (left < 0 || S->b.slot[i].left_tokens < left))
                left = S->b.slot[i].left_tokens;
        if (left >= 1 && left - 1 < hf_k)
            hf_k = (int)(left - 1);
        hf_rej = hf_k >= 1 ? S->acc.cdf[hf_k - 1] : 0;
    }
    for (int s = 0; s < S->nslots; s++) {
        sim_phase *ph = &pl->ph[s];
        *ph = S->proto[s];
        /* host work that grows with the running requests (scheduling per request) */
        ph->gap_us += ph->gap_row_us * bs;
        sim_cost local, *c;
        int ph_eager = eager || ph->always_eager;
        int ph_key = ph_eager ? bs : key;
        double kv = wm_phase_kv_tokens(wm_phase_get(p->model, ph->wm), ctx, bs,
                                       ph_eager ? 0 : padded);
        if (S->hf && p->spec) {
            if (ph->wm == WM_EXTEND)
                ph->gap_us += S->reject_us * hf_rej;
            if (hf_k < p->steps) {       /* a capped round: its own shape, not cached */
                if (ph->wm == WM_DRAFT)
                    ph->forwards = hf_k > 1 ? hf_k - 1 : 0;
                else if (ph->wm == WM_VERIFY || ph->wm == WM_ACCEPT)
                    ph->rows_per_req = hf_k + 1;
                else if (ph->wm == WM_EXTEND)
                    ph->forwards = hf_k >= 1;
                sim_cost_fill(S, ph, &local, ph_key);
            }
        }
        c = S->hf && p->spec && hf_k < p->steps ? &local : &ph->cache[ph_key];
        if (!c->valid)
            sim_cost_fill(S, ph, c, ph_key);
        if (p->intervals && sim_measured(S, it)) {
            c->n_meas++;
            c->kv_meas += kv;
        }
        ph->bs = bs;
        ph->padded = ph_eager ? 0 : padded;
        ph->eager = ph_eager;
        ph->tokens = (double)ph_key * ph->rows_per_req;
        ph->kv_tokens = kv;
        S->tok_max[ph->wm] = fmax(S->tok_max[ph->wm], ph->tokens);
        S->q_max[ph->wm] = fmax(S->q_max[ph->wm], ph->rows_per_req);
        if (bs > 0)
            S->kvr_max[ph->wm] = fmax(S->kvr_max[ph->wm], ctx / bs);
        double sdw, bins[WM_POS_BINS];
        int want_pos = ph_eager && c->has_pos;
        if (c->linear) {
            ph->gpu_us = c->a_us + c->b_us_per_kv * kv;
            sdw = c->sda_us + c->sdb_us_per_kv * kv;
            for (int b = 0; want_pos && b < WM_POS_BINS; b++)
                bins[b] = fmax(0, c->pa_us[b] + c->pb_us_per_kv[b] * kv);
        } else {
            sim_cost_direct(S, ph, ph_key, kv, &ph->gpu_us, &sdw, want_pos ? bins : NULL);
        }
        /* a graph replay at a captured size: that size's own factor (wm graph_size_factors) */
        if (!ph_eager) {
            ph->gpu_us *= c->graph_factor;
            sdw *= c->graph_factor;
        }
        /* eager kernels queue with longer gaps than a graph's nodes (wm eager_gap_us) */
        double egap = ph_eager ? ph->eager_gap_us * ph->kernels_fwd * ph->forwards : 0;
        ph->gpu_us += egap;
        ph->sd_frac = ph->gpu_us > 0 ? sdw / ph->gpu_us * S->sigma_scale : 0;
        ph->has_pos = want_pos && ph->gpu_us > 0;
        if (ph->has_pos)
            sim_rest_fill(ph, bins, egap);
        ph->ncoll = c->ncoll;
        ph->ar_us = c->ncoll ? c->ar_total_us / c->ncoll : 0;
        ph->nseg = c->ncoll < p->sync_segments ? c->ncoll : p->sync_segments;
        ph->kernels = ph->kernels_fwd * ph->forwards;
        if (ph_eager) {
            ph->launch_us = ph->kernels * ph->eager_us;
            ph->first_us = ph->eager_us;
        } else {
            ph->launch_us = ph->first_us = p->graph_launch_us;
        }
        /* a host h times slower: every host duration h times longer (the intervals' host
         * speed derivative, sim_rank, is then taken around this host) */
        double hs = p->host_scale > 0 ? p->host_scale : 1;
        ph->gap_us *= hs;
        ph->gap_sd_us *= hs;
        ph->stall_us *= hs;
        ph->launch_us *= hs;
        ph->first_us *= hs;
        ph->launch_ns = sim_ns(S, ph->launch_us);
        ph->first_ns = sim_ns(S, ph->first_us);
        ph->gap_ns = sim_ns(S, ph->gap_us);
        ph->gap_sd_scaled_us = ph->gap_sd_us * S->sigma_scale;
    }
}

/* ---- hosts ---------------------------------------------------------------------------- */

static void sim_barrier_arrive(sim_state *S, int64_t t, double td);
static void sim_gpu_try(sim_state *S, int r);

/* The stall time drawn for rank k's instance in ring entry e (us; 0: none). */
static inline double sim_stall_total(const sim_rank *k, int e)
{
    return k->nstall[e] ? k->stall_c[e][k->nstall[e] - 1] : 0;
}

/* The host stalls of rank k's eager instance g (docs/simulator.md, "Host stalls"): their
 * number Poisson with mean stall_rate x kernels, each at a uniform share of the launches and
 * exponential in length with mean stall_us, kept in k's ring for sim_gpu_try. Returns their
 * sum (us): the host's launch time grows by it. */
static double sim_stall_draw(sim_rank *k, long g, const sim_phase *ph)
{
    int e = (int)(g & (SIM_RING - 1));
    k->nstall[e] = 0;
    if (!ph->eager || !(ph->stall_rate > 0) || !(ph->stall_us > 0) || ph->kernels <= 0)
        return 0;
    unsigned n = gsl_ran_poisson(k->host_rng, ph->stall_rate * ph->kernels);
    if (n == 0)
        return 0;
    double *x = k->stall_x[e], *c = k->stall_c[e], sum = 0;
    int m = n < SIM_STALLS ? (int)n : SIM_STALLS;
    for (int i = 0; i < m; i++)
        x[i] = gsl_rng_uniform(k->host_rng);
    gsl_sort(x, 1, (size_t)m);
    for (unsigned i = 0; i < n; i++) {
        sum += gsl_ran_exponential(k->host_rng, ph->stall_us);
        if (i < (unsigned)m)
            c[i] = sum;
    }
    c[m - 1] = sum;      /* the stalls past SIM_STALLS add to the last one kept */
    k->nstall[e] = m;
    return sum;
}

/* Rank r's host is free at t: it runs the gap before its next phase and launches it, and
 * goes on to the next phase, until it must wait for its GPU (a phase with sync_after) or
 * reaches the end of the iteration (the barrier). Nothing else can change what it does
 * meanwhile, so this runs ahead of simulated time; the GPU picks each launch up at its
 * ready time (sim_gpu_try). */
static void sim_host_run(sim_state *S, int r, int64_t t, double td)
{
    sim_rank *k = &S->rk[r];
    for (;;) {
        long g = k->host_gidx;
        sim_phase *ph = sim_phase_of(S, g);
        int64_t lb = t + ph->gap_ns;
        double gap = ph->gap_us;
        if (ph->gap_sd_scaled_us > 0) {
            gap += ph->gap_sd_scaled_us * jitter_draw(S->jt1, k->host_rng);
            if (gap < 0)
                gap = 0;
            lb = t + sim_ns(S, gap);
        }
        double stall = sim_stall_draw(k, g, ph);
        k->host_free_ns = lb + ph->launch_ns + (stall > 0 ? sim_ns(S, stall) : 0);
        if (sim_past_horizon(S, k->host_free_ns))
            return;
        double lbd = td + gap;
        k->host_free_d = lbd + ph->launch_us + stall;
        k->ready_ns[g & (SIM_RING - 1)] = lb + ph->first_ns;
        k->lbegin_ns[g & (SIM_RING - 1)] = lb;
        k->ready_d[g & (SIM_RING - 1)] = lbd + ph->first_us;
        k->lbegin_d[g & (SIM_RING - 1)] = lbd;
        k->launched = g + 1;
        k->host_gidx = sim_next(S, g);
        long it = sim_iter_of(S, g);
        if (r == 0 && sim_measured(S, it)) {
            S->host_us += gap + ph->launch_us + stall;
            S->launch_us += ph->launch_us + stall;
        }
        if (sim_want_span(S, it)) {
            if (lb > t)
                sim_span_emit(S, r, SIM_TRACK_HOST, ph->name, "gap", t, lb, it, ph, 0, 0);
            sim_span_emit(S, r, SIM_TRACK_HOST, ph->eager ? "launch eager" : "launch graph",
                          "launch", lb, k->host_free_ns, it, ph, 0, 0);
        }
        sim_gpu_try(S, r);
        if (ph->sync_after)
            return;               /* sim_phase_end resumes it */
        if (sim_last_slot(S, g)) {
            sim_barrier_arrive(S, k->host_free_ns, k->host_free_d);
            return;
        }
        t = k->host_free_ns;
        td = k->host_free_d;
    }
}

/* ---- GPU streams and collectives -------------------------------------------------------- */

/* Rank-0 accounting of a finished phase span [s, e] (its part in the measured window):
 * compute, comm, wait, GPU idle inside the span (eager launches not keeping up). */
static void sim_account(sim_state *S, const sim_phase *ph, int64_t s, int64_t e,
                        double compute_us, double comm_us, double idle_us)
{
    double span = (double)(e - s) / 1000.0;
    if (!S->win_open || e <= S->win_start_ns || e <= s)
        return;
    double f = 1;
    if (s < S->win_start_ns)
        f = (double)(e - S->win_start_ns) / (double)(e - s);
    if (compute_us > span)
        compute_us = span;
    S->phase_us[ph->wm] += f * compute_us;
    S->comm_us += f * comm_us;
    S->idle_extra_us += f * idle_us;
    S->wait_us += f * (span - compute_us - comm_us - idle_us);
    S->busy_us += f * span;
    S->phases_run++;
    S->phases_eager += ph->eager;
}

/* Phase g ended on rank r's stream at t. */
static void sim_phase_end(sim_state *S, int r, long g, int64_t t, double td)
{
    sim_rank *k = &S->rk[r];
    sim_phase *ph = sim_phase_of(S, g);
    long it = sim_iter_of(S, g);
    k->gpu_busy = 0;
    k->gpu_free_ns = t;
    k->gpu_free_d = td;
    k->gpu_gidx = sim_next(S, g);
    if (r == 0)
        sim_account(S, ph, k->start_ns, t, k->cur_work_us, k->cur_comm_us, k->cur_idle_us);
    if (sim_want_span(S, it))
        sim_span_emit(S, r, SIM_TRACK_GPU, ph->name, "phase", k->start_ns, t, it, ph, 0, 0);
    if (ph->sync_after) {
        /* the host needs the accepted lengths: it waits for this rank's stream */
        int64_t th = sim_max64(k->host_free_ns, t);
        double thd = sim_max_d(k->host_free_ns, k->host_free_d, t, td);
        if (sim_want_span(S, it) && th > k->host_free_ns)
            sim_span_emit(S, r, SIM_TRACK_HOST, "sync", "wait", k->host_free_ns, th, it, ph, 0, 0);
        k->host_free_ns = th;
        if (sim_last_slot(S, g))
            sim_barrier_arrive(S, th, thd);
        else
            sim_host_run(S, r, th, thd);
    }
    sim_gpu_try(S, r);
}

static void sim_group_segment(sim_state *S, long g, int64_t seg_start, int first);

/* Rank r's stream, if idle and its next phase is launched, starts it at max(stream free,
 * launch ready) (possibly ahead of the current event: nothing else uses this stream until
 * the phase ends). A phase without collectives ends at its own EV_GPU; one with
 * collectives waits until every rank has started it (sim_group_segment). */
static void sim_gpu_try(sim_state *S, int r)
{
    sim_rank *k = &S->rk[r];
    if (k->gpu_busy || k->gpu_gidx >= k->launched || S->stop)
        return;
    long g = k->gpu_gidx;
    sim_phase *ph = sim_phase_of(S, g);
    int64_t start = sim_max64(k->gpu_free_ns, k->ready_ns[g & (SIM_RING - 1)]);
    k->gpu_busy = 1;
    k->start_ns = start;
    k->start_d = sim_max_d(k->gpu_free_ns, k->gpu_free_d, k->ready_ns[g & (SIM_RING - 1)],
                           k->ready_d[g & (SIM_RING - 1)]);
    if (ph->ncoll == 0) {
        double mult = 1;
        if (ph->sd_frac > 0) {
            mult = 1 + ph->sd_frac * jitter_draw(S->jt1, k->gpu_rng);
            if (mult < 0)
                mult = 0;
        }
        double work = ph->gpu_us * mult;
        int64_t end = start + sim_ns(S, work);
        double idle = 0;
        k->end_d = k->start_d;
        if (ph->eager && ph->kernels > 0) {
            /* the last kernel cannot run before it is launched, nor the kernels after a host
             * stall (a share sim_rest(x) of the work) before the stall ends, nor those
             * launched in slice b of the launch time (the phase's launch profile) before the
             * host reaches it (docs/simulator.md, "Eager mode") */
            int e = (int)(g & (SIM_RING - 1)), ns = k->nstall[e];
            double host = ph->launch_us + sim_stall_total(k, e);
            double after = host + ph->gpu_us / ph->kernels;
            for (int j = 0; j < ns; j++) {
                double x = k->stall_x[e][j], at = x * ph->launch_us + k->stall_c[e][j];
                double rest = sim_rest(ph, x) * work;
                if (at + rest > after) {
                    after = at + rest;
                    host = at;
                }
            }
            for (int b = 1, j = 0; ph->has_pos && b < WM_POS_BINS; b++) {
                double x = (double)b / WM_POS_BINS;
                while (j < ns && k->stall_x[e][j] < x)
                    j++;
                double at = x * ph->launch_us + (j > 0 ? k->stall_c[e][j - 1] : 0);
                if (at + ph->rest[b] * work > after) {
                    after = at + ph->rest[b] * work;
                    host = at;
                }
            }
            int64_t bound = k->lbegin_ns[e] + sim_ns(S, after);
            if (bound > end) {
                idle = (double)(bound - end) / 1000.0;
                end = bound;
                k->end_d = k->lbegin_d[e] + host;
            }
        }
        k->cur_work_us = work;
        k->cur_comm_us = 0;
        k->cur_idle_us = idle;
        sim_push(S, end, EV_GPU, r, g);
        return;
    }
    if (S->g_ready == 0) {
        S->g_gidx = g;
        S->g_maxlb_ns = INT64_MIN;
        S->g_coll_done = 0;
        S->g_seg = 0;
        S->g_idle_ns = 0;
        S->g_stall_us = 0;
    }
    S->g_stall_us = fmax(S->g_stall_us, sim_stall_total(k, (int)(g & (SIM_RING - 1))));
    assert(S->g_gidx == g);
    S->g_maxlb_d = sim_max_d(S->g_maxlb_ns, S->g_maxlb_d, k->lbegin_ns[g & (SIM_RING - 1)],
                             k->lbegin_d[g & (SIM_RING - 1)]);
    S->g_maxlb_ns = sim_max64(S->g_maxlb_ns, k->lbegin_ns[g & (SIM_RING - 1)]);
    if (++S->g_ready == S->R)
        sim_group_segment(S, g, 0, 1);
}

/* Computes the end of the group's current segment of phase g (starting at seg_start, or
 * at each rank's own start for the first) and schedules EV_SEG. Within the segment, K
 * all-reduces each wait for the slowest of R ranks: compute c*(1 + sd*max_r z_r) + ar. */
static void sim_group_segment(sim_state *S, long g, int64_t seg_start, int first)
{
    sim_phase *ph = sim_phase_of(S, g);
    int s = S->g_seg;
    int K = ph->ncoll / ph->nseg + (s < ph->ncoll % ph->nseg);
    double c = ph->gpu_us / ph->ncoll;            /* compute before each all-reduce */
    double sd = ph->sd_frac;
    int64_t t;
    double td;
    int rest = K;
    if (first) {
        /* ranks start at their own times (their hosts differ): draw each rank */
        int64_t arr = INT64_MIN;
        double arrd = 0;
        for (int r = 0; r < S->R; r++) {
            double mult = 1;
            if (sd > 0) {
                mult = 1 + sd * jitter_draw(S->jt1, S->rk[r].gpu_rng);
                if (mult < 0)
                    mult = 0;
            }
            int64_t a = S->rk[r].start_ns + sim_ns(S, c * mult);
            arrd = sim_max_d(arr, arrd, a, S->rk[r].start_d);
            arr = sim_max64(arr, a);
        }
        t = arr + sim_ns(S, ph->ar_us);
        td = arrd;
        rest = K - 1;
    } else {
        t = seg_start;
        td = S->g_seg_start_d;
    }
    if (rest > 0) {
        double work = rest * c;
        if (sd > 0) {
            work += c * sd * jitter_sum(S->jtR, S->jt1, rest, S->grp_rng);
            if (work < 0)
                work = 0;
        }
        t += sim_ns(S, work + rest * ph->ar_us);
    }
    S->g_coll_done += K;
    if (ph->eager && ph->kernels > 0) {
        /* the segment's last all-reduce needs every rank's kernels up to it launched */
        long need = ((long)ph->kernels * S->g_coll_done + ph->ncoll - 1) / ph->ncoll;
        double per = (ph->launch_us + S->g_stall_us) / ph->kernels;   /* stalls spread */
        int64_t bound = S->g_maxlb_ns + sim_ns(S, need * per + ph->gpu_us / ph->kernels + ph->ar_us);
        if (bound > t) {
            S->g_idle_ns += bound - t;
            t = bound;
            td = S->g_maxlb_d + need * per;
        }
    }
    if (sim_want_span(S, sim_iter_of(S, g))) {
        for (int r = 0; r < S->R; r++)
            sim_span_emit(S, r, SIM_TRACK_GPU, "compute+allreduce", "collective",
                          first ? S->rk[r].start_ns : seg_start, t, sim_iter_of(S, g), ph,
                          K, K * ph->ar_us);
    }
    S->g_seg_start_ns = t;
    S->g_seg_start_d = td;
    sim_push(S, t, EV_SEG, s, g);
}

static void sim_on_seg(sim_state *S, int s, long g, int64_t t)
{
    sim_phase *ph = sim_phase_of(S, g);
    assert(g == S->g_gidx && s == S->g_seg);
    if (s + 1 < ph->nseg) {
        S->g_seg++;
        sim_group_segment(S, g, t, 0);
        return;
    }
    S->rk[0].cur_work_us = ph->gpu_us;
    S->rk[0].cur_comm_us = ph->ncoll * ph->ar_us;
    S->rk[0].cur_idle_us = (double)S->g_idle_ns / 1000.0;
    S->g_ready = 0;                 /* all ranks leave together */
    for (int r = 0; r < S->R && !S->stop; r++)
        sim_phase_end(S, r, g, t, S->g_seg_start_d);
}

/* ---- iterations ------------------------------------------------------------------------ */

/* Standard error of a ratio r (tokens/us) over a window of `tokens` tokens: the batch means'
 * se_bm, or, where larger, the standard error of the tokens requests lose when they finish
 * (their last gain is capped: per token E[overshoot^2] / E[output length], scaled by what of
 * the overshoot's variance the draws' control variate leaves at these lengths; Poisson request
 * ends; batch_overshoot_floor). A window with many request ends holds their variance in its
 * batches already (adding the term counted it twice: the stated se came out 1.6-2x the spread
 * of 100 seeds' estimates, docs/simulator.md "Precision"); one with few ends does not show it,
 * and the term is its floor. */
static double sim_se(const sim_state *S, double se_bm, double r, double tokens)
{
    double turn = tokens > 0 ? r * r * S->turn_cv / tokens : 0;
    return fmax(se_bm, sqrt(turn));
}

double sim_now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* A run (p->eta_note: specsim run) whose known length will run past SIM_ETA_NOTE_S says so
 * once, 2 s in: --iterations 1e9 is minutes to hours of one core, and nothing else would
 * tell a user why the command has not returned. Known: a fixed length; with --precision its
 * warm-up (--warmup 1e9 once ran 10 min without a word), else the most it can take (its
 * --iterations cap: --precision 1e-9 at concurrency 4096 ran 88 s silently); with --requests
 * the requests left at the rate they finish (--requests 1e9: hours). */
static void sim_eta_note(sim_state *S, long it)
{
    const sim_params *p = S->p;
    double now = sim_now_s();
    if (S->eta_t0 == 0) {
        S->eta_t0 = now;
        S->eta_it0 = it;
        S->eta_fin0 = S->b.finished;
        return;
    }
    if (S->eta_said || now - S->eta_t0 < 2)
        return;
    double per = (now - S->eta_t0) / (double)(it - S->eta_it0);
    S->eta_said = 1;
    if (p->requests) {
        long fin = S->b.finished - S->eta_fin0;
        double per_req = fin > 0 ? (now - S->eta_t0) / (double)fin : 0;
        double left = per_req * (double)(p->requests - S->b.finished);
        if (fin > 0 && left >= SIM_ETA_NOTE_S)
            fprintf(stderr, "specsim: note: --requests %ld will take about %.0f min more (%.2g "
                    "ms of this machine a request); Ctrl-C stops it\n", p->requests,
                    left / 60, 1e3 * per_req);
        return;
    }
    if (p->precision > 0) {
        double left = per * (double)(p->warmup - it), cap = per * (double)(p->warmup + p->iterations - it);
        if (left >= SIM_ETA_NOTE_S)
            fprintf(stderr, "specsim: note: --warmup %ld will take about %.0f min more before "
                    "the measured window (%.2g us of this machine an iteration); Ctrl-C stops "
                    "it\n", p->warmup, left / 60, 1e6 * per);
        else if (cap >= SIM_ETA_NOTE_S)   /* where tok/s becomes known is not; the cap is */
            fprintf(stderr, "specsim: note: --precision %g ends the run once tok/s is known to it, "
                    "at the latest at --iterations %ld: up to about %.0f min more (%.2g us of this "
                    "machine an iteration); Ctrl-C stops it\n", p->precision, p->iterations,
                    cap / 60, 1e6 * per);
        return;
    }
    double left = per * (double)(p->warmup + p->iterations - it);
    if (left < SIM_ETA_NOTE_S)
        return;
    fprintf(stderr, "specsim: note: --iterations %ld will take about %.0f min more (%.2g us "
            "of this machine an iteration); Ctrl-C stops it, --precision ends a run once its "
            "tok/s is known\n", p->iterations, left / 60, 1e6 * per);
}

/* --precision: the window holds SIM_PREC_MIN_ITERS iterations and SIM_PREC_MIN_REQS requests
 * (one per slot when fewer) that finished in it, their whole lives simulated (the
 * per-request metrics come from them), and its tok/s is known to +-precision: SIM_PREC_Z
 * standard errors (sim_se; with the acceptance control variate for a speculative run). */
static int sim_precise(const sim_state *S)
{
    int reqs = S->p->concurrency < SIM_PREC_MIN_REQS ? S->p->concurrency : SIM_PREC_MIN_REQS;
    if (S->iters_measured < SIM_PREC_MIN_ITERS || S->b.tpot_seen < (size_t)reqs)
        return 0;
    bmeans_est e;
    bmeans_estimate(&S->bm, &e);
    if (e.nb < BMEANS_MAX / 2)
        return 0;
    double r = S->p->spec ? e.ratio_cv : e.ratio;
    double se = sim_se(S, S->p->spec ? e.se_cv : e.se, r, (double)S->b.win_tokens);
    return r > 0 && SIM_PREC_Z * se <= S->p->precision * r;
}

static void sim_boundary(sim_state *S, int64_t T, double Td)
{
    const sim_params *p = S->p;
    long it = S->iter;
    if (sim_measured(S, it)) {
        S->iter_sum_us += (double)(T - S->iter_start_ns) / 1000.0;
        S->bs_sum += S->plan[it & 1].bs;
        S->iters_measured++;
    }
    double gain0 = S->b.win_gain_tokens;
    long reqs0 = S->b.win_req_iters;
    long emitted = batch_step(&S->b, p->spec ? &S->acc : NULL, T);
    if (emitted < 0) {
        S->oom = S->stop = 1;
        return;
    }
    /* batch means: tokens, time and the acceptance draws' deviation from their expectation */
    int batched = sim_measured(S, it) &&
        bmeans_add(&S->bm, (double)emitted, (double)(T - S->iter_start_ns) / 1000.0,
                   (S->b.win_gain_tokens - gain0) - S->gain_mean * (double)(S->b.win_req_iters - reqs0));
    S->iter = ++it;
    S->iter_start_ns = T;
    if (p->eta_note && (it & 0xffff) == 0)
        sim_eta_note(S, it);
    if (it == p->warmup) {
        batch_open_window(&S->b, T);
        S->win_start_ns = T;
        S->win_start_d = Td;
        S->win_open = 1;
    }
    int done = p->requests ? (S->b.n == 0 || (p->iterations && it >= p->warmup + p->iterations))
                           : it >= p->warmup + p->iterations;
    if (!done && batched && p->precision > 0 && sim_precise(S))
        done = S->precise = 1;
    if (done) {
        S->stop = 1;
        S->end_ns = T;
        S->end_d = Td;
        return;
    }
    sim_make_plan(S, it);
    for (int r = 0; r < S->R; r++)
        sim_host_run(S, r, T, Td);
}

/* A host reaches the scheduler barrier at t (SGLang's TP ranks exchange the new requests
 * at the top of each scheduler loop); the iteration ends when the last one arrives. */
static void sim_barrier_arrive(sim_state *S, int64_t t, double td)
{
    S->bar_max_d = sim_max_d(S->bar_max_ns, S->bar_max_d, t, td);
    if (t > S->bar_max_ns)
        S->bar_max_ns = t;
    if (++S->bar_count < S->R)
        return;
    S->bar_ev_d = S->bar_max_d;
    sim_push(S, S->bar_max_ns, EV_BARRIER, 0, 0);
    S->bar_count = 0;
    S->bar_max_ns = INT64_MIN;
}

/* ---- setup and the loop ---------------------------------------------------------------- */

int sim_check(const sim_params *p, const char *what, char *err, size_t errlen)
{
    const wm_model *m = p->model;
#define SIM_BAD(field, fmt, v, why) do { snprintf(err, errlen, "%s: field %s: value " fmt ": %s", \
        what, field, v, why); return -1; } while (0)
    if (!m)
        SIM_BAD("model", "%s", "(none)", "no workload model");
    if (!bnd_ok(&bnd_rows, p->concurrency))
        SIM_BAD("concurrency", "%d", p->concurrency, "out of range: must be in [1, 65536] (bounds.h)");
    if (p->graphs.n > 0 && !bnd_ok(&bnd_rows, p->graphs.bs[p->graphs.n - 1]))
        SIM_BAD("cuda-graph-bs", "%d", p->graphs.bs[p->graphs.n - 1],
                "out of range: a batch size must be in [1, 65536] (bounds.h)");
    if (p->ranks < 1 || p->ranks > 4096) SIM_BAD("ranks", "%d", p->ranks, "must be in [1, 4096]");
    if (p->ranks > 1 && !p->algo) SIM_BAD("allreduce", "%s", "(none)", "ranks > 1 need an algorithm");
    if (p->ranks > 1 && p->algo) {
        if (!bnd_ok(&bnd_cost_us, p->link.latency_us))
            SIM_BAD("link", "alpha=%g", p->link.latency_us, "out of range: a latency must be in [0, 1e7] us (bounds.h)");
        if (!bnd_ok(&bnd_cost_us, p->link.floor_us) || !bnd_ok(&bnd_cost_us, p->link.p2p_floor_us))
            SIM_BAD("link", "floor=%g", p->link.floor_us + p->link.p2p_floor_us,
                    "out of range: a floor must be in [0, 1e7] us (bounds.h)");
        if (!bnd_ok(&bnd_bw_gbps, p->link.bw_gbps) ||
            (p->link.p2p_bw_gbps != 0 && !bnd_ok(&bnd_bw_gbps, p->link.p2p_bw_gbps)))
            SIM_BAD("link", "beta=%g", p->link.bw_gbps,
                    "out of range: a bandwidth must be in [0.001, 1e5] GB/s (bounds.h)");
    }
    if (p->sync_segments < 1) SIM_BAD("sync-segments", "%d", p->sync_segments, "must be >= 1");
    if (!(p->jitter_scale >= 0)) SIM_BAD("jitter-scale", "%g", p->jitter_scale, "must be >= 0");
    if (p->host_scale != 0 && !(p->host_scale >= 0.05 && p->host_scale <= 20))
        SIM_BAD("host-scale", "%g", p->host_scale, "out of range: must be in [0.05, 20]");
    if (!bnd_ok(&bnd_cost_us, p->graph_launch_us))
        SIM_BAD("graph-launch-us", "%g", p->graph_launch_us, "out of range: a cost must be in [0, 1e7] us (bounds.h)");
    if (!bnd_ok(&bnd_cost_us, p->eager_launch_us))
        SIM_BAD("eager-launch-us", "%g", p->eager_launch_us, "out of range: a cost must be in [0, 1e7] us (bounds.h)");
    if (p->warmup < 0) SIM_BAD("warmup", "%ld", p->warmup, "must be >= 0");
    if (p->requests < 0) SIM_BAD("requests", "%ld", p->requests, "must be >= 0");
    if (p->iterations < (p->requests ? 0 : 1))
        SIM_BAD("iterations", "%ld", p->iterations, "must be >= 1 (or give --requests)");
    if (!bnd_ok(&bnd_tokens, (double)p->prompt_tokens))
        SIM_BAD("prompt-len", "%ld", p->prompt_tokens, "out of range: must be in [0, 1e9] tokens (bounds.h)");
    if (!(p->precision >= 0 && p->precision < 1))
        SIM_BAD("precision", "%g", p->precision, "must be in [0, 1)");
    if (p->precision > 0 && p->requests)
        SIM_BAD("precision", "%g", p->precision, "a finite benchmark (--requests) runs to its end");
    if (!(p->bench_s >= 0)) SIM_BAD("seconds", "%g", p->bench_s, "must be >= 0");
    if (p->spec) {
        if (p->steps < 1) SIM_BAD("steps", "%d", p->steps, "must be >= 1");
        if (p->topk < 1) SIM_BAD("topk", "%d", p->topk, "must be >= 1");
        if (p->draft_tokens < 2) SIM_BAD("draft-tokens", "%d", p->draft_tokens, "must be >= 2");
        if (p->topk == 1 && p->draft_tokens != p->steps + 1)
            SIM_BAD("draft-tokens", "%d", p->draft_tokens,
                    "a chain (topk 1) verifies exactly steps+1 tokens");
        if ((long)p->draft_tokens > (long)p->steps * p->topk + 1)
            SIM_BAD("draft-tokens", "%d", p->draft_tokens,
                    "more than steps*topk+1: the tree has no such nodes");
        if (p->steps > ACC_MAX_POS) SIM_BAD("steps", "%d", p->steps, "more than ACC_MAX_POS (32)");
        if (p->loop == WM_LOOP_HF && p->topk != 1)
            SIM_BAD("topk", "%d", p->topk, "the hf-assisted loop drafts a chain (topk 1)");
        if (p->loop == WM_LOOP_HF && p->concurrency != 1)
            SIM_BAD("concurrency", "%d", p->concurrency, "the hf-assisted loop runs one request "
                    "(transformers' assisted generation supports batch 1 only)");
    }
    if (p->loop < 0 || p->loop >= WM_NLOOP) SIM_BAD("loop", "%d", p->loop, "unknown loop");
#undef SIM_BAD
    const char *file = what;
    if (wm_require(m, WM_VERIFY, file, "every run needs it", err, errlen) ||
        wm_require(m, WM_ACCEPT, file, "every run needs it", err, errlen))
        return -1;
    if (p->spec) {
        if (p->steps > 1 && wm_require(m, WM_DRAFT, file, "speculative runs with steps > 1 need it",
                                       err, errlen))
            return -1;
        if (wm_require(m, WM_EXTEND, file, "speculative runs need it", err, errlen))
            return -1;
    }
    return 0;
}

static void sim_proto(sim_state *S, int s, int wm, int rows, int forwards, int sync_after)
{
    const wm_phase_model *pm = wm_phase_get(S->p->model, wm);
    sim_phase *ph = &S->proto[s];
    memset(ph, 0, sizeof *ph);
    ph->wm = wm;
    ph->name = wm_phase_name[wm];
    ph->rows_per_req = rows;
    ph->forwards = forwards;
    ph->sync_after = sync_after;
    ph->kernels_fwd = wm_phase_kernels(S->p->model, wm);
    ph->gap_us = pm->host_gap_us;
    ph->gap_sd_us = pm->host_gap_sd_us;
    ph->gap_row_us = pm->host_gap_per_row_us;
    ph->always_eager = pm->always_eager;
    ph->eager_gap_us = pm->eager_gap_us;
    ph->eager_us = !S->p->eager_launch_override && pm->eager_launch_us > 0 ? pm->eager_launch_us
                                                                           : S->p->eager_launch_us;
    if (!S->p->eager_launch_override && pm->eager_launch_us > 0 && !S->p->no_stalls &&
        pm->eager_stall_per_launch > 0 && pm->eager_stall_us > 0) {
        /* the phase's rate holds its stalls' mean: the simulator draws them (sim_stall_draw) */
        ph->stall_rate = pm->eager_stall_per_launch;
        ph->stall_us = pm->eager_stall_us;
        ph->eager_us = fmax(0, pm->eager_launch_us - ph->stall_rate * ph->stall_us);
    }
}

/* Without a draft phase (steps 1) verify opens the iteration: the host work measured before
 * the draft, the first phase of the traces' iterations (the scheduler between iterations
 * and the draft's own preparation), runs before verify instead (docs/simulator.md). */
static void sim_proto_first(sim_state *S, int s)
{
    const wm_phase_model *d = &S->p->model->phase[WM_DRAFT];
    if (!d->present)
        return;
    sim_phase *ph = &S->proto[s];
    ph->gap_us += d->host_gap_us;
    ph->gap_row_us += d->host_gap_per_row_us;
    ph->gap_sd_us = sqrt(ph->gap_sd_us * ph->gap_sd_us + d->host_gap_sd_us * d->host_gap_sd_us);
}

static double sim_quantile(const double *sorted, size_t n, double q)
{
    return n ? gsl_stats_quantile_from_sorted_data(sorted, 1, n, q) : 0;
}

/* The prediction interval of tok_s (interval.h): the model's part from every group's GPU
 * time over the window (the plans' sizes and mean KV context), a benchmark's from the
 * batch means' variance per unit time, the estimate's from its standard error se_s. */
static void sim_interval(sim_state *S, sim_result *res, const bmeans_est *e, double se_s)
{
    const sim_params *p = S->p;
    for (int s = 0; s < S->nslots; s++) {
        const sim_phase *pr = &S->proto[s];
        for (int key = 0; key < S->ncache; key++) {
            const sim_cost *c = &pr->cache[key];
            if (c->n_meas > 0)
                interval_acc_add(&S->ia, p->model, pr->wm, (double)key * pr->rows_per_req,
                                 c->kv_meas / (double)c->n_meas, pr->rows_per_req,
                                 (double)c->n_meas * pr->forwards, c->graph_size);
        }
    }
    interval_model(&S->ia, p->model, res->window_us, &res->iv);
    double bench_us = p->bench_s > 0 ? p->bench_s * 1e6 : p->requests ? res->window_us : 0;
    /* a benchmark of bench_us: the batch means' variance per unit time, and the request ends
     * it would see. Added, not the larger of the two as in sim_se, where the batches hold the
     * window's ends already: the larger one lowered make validate's coverage by 0-4 points
     * (specbench lite kimi-tp8 77.2% -> 73.3%, torchbench 0.1-0.5 points), tables whose
     * intervals are on the narrow side of 80% already (2026-12-06) */
    res->iv.run_var = bench_us > 0 && e->ratio > 0
        ? e->lambda / bench_us / (e->ratio * e->ratio) + S->turn_m2 / (e->ratio * bench_us) : 0;
    res->iv.est_var = res->tok_s > 0 ? (se_s / res->tok_s) * (se_s / res->tok_s) : 0;
    /* the host's speed over that benchmark (its iterations: bench_us / the mean iteration):
     * how much of the window the host's time decides (host_share) times the variance of its
     * mean speed (interval_host_var) and of the level it runs at (host_speed_level_sd) */
    res->iv.host_var = bench_us > 0 && res->iter_us > 0
        ? res->host_share * res->host_share *
          (interval_host_var(p->model->host_speed_sd_frac, p->model->host_speed_rho,
                             bench_us / res->iter_us) +
           p->model->host_speed_level_sd * p->model->host_speed_level_sd)
        : 0;
    res->unc_model = sqrt(interval_model_var(&res->iv));
    res->unc_run = sqrt(res->iv.run_var + res->iv.host_var);
    res->unc_est = sqrt(res->iv.est_var);
    interval_quantiles(res->tok_s, interval_var(&res->iv), &res->tok_s_p10, &res->tok_s_p90);
}

static void sim_results(sim_state *S, sim_result *res)
{
    batch *b = &S->b;
    memset(res, 0, sizeof *res);
    res->events = S->q.pops;
    res->sim_us = (double)S->end_ns / 1000.0;
    res->iterations_total = S->iter;
    res->iterations = S->iters_measured;
    res->window_us = S->win_open ? (double)(S->end_ns - S->win_start_ns) / 1000.0 : 0;
    /* d log(window) / d log(host speed): the share of the window on the host's critical path */
    res->host_share = res->window_us > 0 ? (S->end_d - S->win_start_d) / res->window_us : 0;
    res->tokens = b->win_tokens;
    res->tokens_total = b->total_tokens;
    res->requests_done = b->finished;
    res->partial = batch_close(b, S->end_ns);
    res->requests_measured = (long)b->tpot_seen;
    res->tok_s = res->window_us > 0 ? b->win_tokens / res->window_us * 1e6 : 0;
    if (b->ntpot) {
        gsl_sort(b->tpot_ns, 1, b->ntpot);
        double sum = 0;
        for (size_t i = 0; i < b->ntpot; i++)
            sum += 1e9 / b->tpot_ns[i];
        /* thinned (BATCH_TPOT_MAX): the mean over every request, the percentiles over those kept */
        res->req_tok_s_mean = b->tpot_seen > b->ntpot ? b->tpot_rate_sum / (double)b->tpot_seen
                                                       : sum / (double)b->ntpot;
        /* tok/s of a request is 1/TPOT: its median is 1/(TPOT median) when n is odd; take
         * the quantile of the reversed array so that even n interpolates in tok/s */
        double *rate = malloc(b->ntpot * sizeof *rate);
        if (rate) {
            for (size_t i = 0; i < b->ntpot; i++)
                rate[i] = 1e9 / b->tpot_ns[b->ntpot - 1 - i];
            res->req_tok_s_p50 = sim_quantile(rate, b->ntpot, 0.5);
            free(rate);
        }
        res->tpot_p50_ms = sim_quantile(b->tpot_ns, b->ntpot, 0.50) / 1e6;
        res->tpot_p90_ms = sim_quantile(b->tpot_ns, b->ntpot, 0.90) / 1e6;
        res->tpot_p99_ms = sim_quantile(b->tpot_ns, b->ntpot, 0.99) / 1e6;
    }
    res->accept_len = b->win_req_iters ? b->win_gain_tokens / (double)b->win_req_iters : 0;
    double n = S->iters_measured ? (double)S->iters_measured : 1;
    res->bs_mean = S->bs_sum / n;
    res->iter_us = S->iter_sum_us / n;
    /* rank 0's stream: a phase still running at the end counts up to the end, as compute */
    sim_rank *k0 = &S->rk[0];
    if (k0->gpu_busy && S->win_open && k0->start_ns < S->end_ns) {
        int64_t s = sim_max64(k0->start_ns, S->win_start_ns);
        double us = (double)(S->end_ns - s) / 1000.0;
        S->phase_us[S->proto[sim_slot_of(k0->gpu_gidx)].wm] += us;
        S->busy_us += us;
    }
    for (int i = 0; i < WM_NPHASE; i++)
        res->phase_us[i] = S->phase_us[i] / n;
    res->comm_us = S->comm_us / n;
    res->wait_us = S->wait_us / n;
    res->idle_us = (res->window_us - S->busy_us + S->idle_extra_us) / n;
    res->host_us = S->host_us / n;
    res->launch_us = S->launch_us / n;
    res->eager_frac = S->phases_run ? (double)S->phases_eager / (double)S->phases_run : 0;
    memcpy(res->phase_tokens_max, S->tok_max, sizeof res->phase_tokens_max);
    memcpy(res->phase_q_max, S->q_max, sizeof res->phase_q_max);
    memcpy(res->phase_kv_row_max, S->kvr_max, sizeof res->phase_kv_row_max);
    /* --precision: the control-variate estimate (the acceptance draws' deviation from their
     * expectation taken out); without it tok_s stays tokens / window */
    const sim_params *p = S->p;
    bmeans_est e;
    bmeans_estimate(&S->bm, &e);
    int cv = p->precision > 0 && p->spec && e.nb >= 3;
    if (cv)
        res->tok_s = e.ratio_cv * 1e6;
    double se_s = sim_se(S, cv ? e.se_cv : e.se, cv ? e.ratio_cv : e.ratio,
                         (double)S->b.win_tokens) * 1e6;     /* tok/s */
    res->precision = res->tok_s > 0 && e.nb >= 3 ? SIM_PREC_Z * se_s / res->tok_s : 0;
    res->precise = S->precise;
    if (p->intervals)
        sim_interval(S, res, &e, se_s);
}

/* A result a user can see is finite and has throughput; otherwise -2 with what is missing.
 * (A model of all-zero costs would print inf tok/s; a warmup longer than a finite run
 * would print zeros.) */
static int sim_result_check(const sim_state *S, const sim_result *r, char *err, size_t errlen)
{
    const sim_params *p = S->p;
    if (!S->win_open) {
        snprintf(err, errlen, "sim: field warmup: value %ld: no measured window: the run ended "
                 "at iteration %ld (%s) before the warmup was over", p->warmup, S->iter,
                 p->requests ? "all requests finished" : "its last iteration");
        return -2;
    }
    if (r->iterations < 1 || r->tokens < 1 || !(r->window_us > 0)) {
        snprintf(err, errlen, "sim: the measured window holds %ld iterations, %ld tokens in "
                 "%.6g us: no throughput to report (a model whose costs are all 0?)",
                 r->iterations, r->tokens, r->window_us);
        return -2;
    }
    /* the interval of a benchmark shorter than one iteration measures no throughput: its
     * run part grows as 1/seconds (--seconds 1e-9 printed tok_s_p90 inf, 1e-5 p10 0 and p90
     * 1.3e8 tok/s with exit 0) */
    if (p->intervals && p->bench_s > 0 && p->bench_s * 1e6 < r->iter_us) {
        snprintf(err, errlen, "sim: field seconds: value %g: shorter than one iteration of "
                 "this run (%.6g us): a benchmark that short measures no throughput (0: the "
                 "long-run interval)", p->bench_s, r->iter_us);
        return -2;
    }
    const struct { const char *name; double v; } f[] = {
        {"tok_s", r->tok_s}, {"req_tok_s", r->req_tok_s_mean}, {"req_tok_s_p50", r->req_tok_s_p50},
        {"tpot_p50", r->tpot_p50_ms}, {"tpot_p90", r->tpot_p90_ms}, {"tpot_p99", r->tpot_p99_ms},
        {"accept_len", r->accept_len}, {"bs", r->bs_mean}, {"iter", r->iter_us},
        {"comm", r->comm_us}, {"wait", r->wait_us}, {"idle", r->idle_us}, {"host", r->host_us},
        {"launch", r->launch_us}, {"eager", r->eager_frac},
        {"draft", r->phase_us[WM_DRAFT]}, {"verify", r->phase_us[WM_VERIFY]},
        {"accept", r->phase_us[WM_ACCEPT]}, {"extend", r->phase_us[WM_EXTEND]},
        {"decode", r->phase_us[WM_DECODE]}, {"sample", r->phase_us[WM_SAMPLE]},
        {"tok_s_p10", r->tok_s_p10}, {"tok_s_p90", r->tok_s_p90}, {"unc_model", r->unc_model},
        {"unc_run", r->unc_run}, {"unc_est", r->unc_est}, {"precision", r->precision},
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if (!isfinite(f[i].v) || (i < 6 && f[i].v < 0)) {
            snprintf(err, errlen, "sim: result %s is %g over a window of %.6g us and %ld "
                     "tokens: the model's costs are degenerate (0 us for a request?)",
                     f[i].name, f[i].v, r->window_us, r->tokens);
            return -2;
        }
    if (!(r->tok_s > 0)) {
        snprintf(err, errlen, "sim: result tok_s is %g: no throughput", r->tok_s);
        return -2;
    }
    return 0;
}

unsigned sim_beyond_fit(const wm_model *m, const sim_result *r)
{
    unsigned mask = 0;
    char buf[160];
    for (int p = 0; p < WM_NPHASE; p++)
        if (r->phase_tokens_max[p] > 0 &&
            (wm_beyond_fit(m, p, r->phase_tokens_max[p], r->phase_q_max[p], buf, sizeof buf) ||
             wm_beyond_kv(m, p, r->phase_kv_row_max[p])))
            mask |= 1u << p;
    return mask;
}

void sim_warn_beyond_fit(FILE *f, const char *what, const wm_model *m, const sim_result *r,
                         const char *note)
{
    char buf[160];
    for (int p = 0; p < WM_NPHASE; p++)
        if (wm_beyond_fit(m, p, r->phase_tokens_max[p], r->phase_q_max[p], buf, sizeof buf))
            fprintf(f, "specsim %s: warning: model %s: phase %s: %s%s: its cost there is "
                    "extrapolated (docs/fit.md, \"Beyond the traces\")\n", what, m->name,
                    wm_phase_name[p], note, buf);
    /* the KV context: one line for the phases it concerns (one prompt length moves them all) */
    char names[96] = "";
    size_t len = 0;
    double kv = 0, lo = 0, hi = 0;
    int nph = 0;
    for (int p = 0; p < WM_NPHASE; p++) {
        if (!wm_beyond_kv(m, p, r->phase_kv_row_max[p]))
            continue;
        nph++;
        double fit = wm_phase_get(m, p)->fitted_kv_row_max;
        lo = len ? fmin(lo, fit) : fit;
        hi = fmax(hi, fit);
        kv = fmax(kv, r->phase_kv_row_max[p]);
        len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", len ? ", " : "", wm_phase_name[p]);
        if (len >= sizeof names)
            break;
    }
    char range[64];
    if (hi > lo)
        snprintf(range, sizeof range, "%.0f-%.0f", lo, hi);
    else
        snprintf(range, sizeof range, "%.0f", lo);
    if (len)
        fprintf(f, "specsim %s: warning: model %s: phase%s %s: %s%.0f tokens of KV context a request, "
                "fitted up to %s (more than %gx that): %s KV terms are extrapolated (docs/fit.md, "
                "\"Beyond the traces\")\n", what, m->name, nph > 1 ? "s" : "", names, note, kv, range,
                WM_KV_BEYOND_FACTOR, nph > 1 ? "their" : "its");
}

int sim_run(const sim_params *p, const sim_hooks *hooks, sim_result *res, char *err, size_t errlen)
{
    int rc = -1;
    sim_state *S = calloc(1, sizeof *S);
    if (!S) {
        snprintf(err, errlen, "sim: out of memory");
        return -1;
    }
    if (sim_check(p, "sim", err, errlen))
        goto out_free;
    S->p = p;
    S->h = hooks;
    S->R = p->ranks;
    S->sigma_scale = p->jitter_scale;
    S->bar_max_ns = INT64_MIN;
    if (hooks && hooks->on_span) {
        S->span_lo = p->warmup;
        S->span_hi = p->warmup + p->timeline_iterations;
    }
    if (evq_init(&S->q, 2 * (size_t)S->R + 16))
        goto oom;
    S->jt1 = jitter_table_get(1);
    S->jtR = jitter_table_get(S->R);
    if (!S->jt1 || !S->jtR)
        goto oom;
    S->hf = p->loop == WM_LOOP_HF;
    if (p->spec) {
        /* hf-assisted (docs/simulator.md): extend is the draft's first forward of a round,
         * over the 2 tokens its cache lacks; the host reads every draft forward's token
         * (a blocking copy), so draft and extend end with a sync */
        int s = 0;
        if (p->steps > 1)
            sim_proto(S, s++, WM_DRAFT, p->topk, p->steps - 1, S->hf);
        sim_proto(S, s++, WM_VERIFY, p->draft_tokens, 1, 0);
        if (p->steps == 1)
            sim_proto_first(S, s - 1);
        sim_proto(S, s++, WM_ACCEPT, p->draft_tokens, 1, 1);
        sim_proto(S, s++, WM_EXTEND, S->hf ? 2 : p->steps + 1, 1, S->hf);
        S->nslots = s;
        S->reject_us = S->hf ? p->model->phase[WM_EXTEND].host_gap_reject_us : 0;
    } else {
        sim_proto(S, 0, WM_DECODE, 1, 1, 0);
        sim_proto(S, 1, WM_SAMPLE, 1, 1, 1);
        S->nslots = 2;
    }
    /* cost caches: keys up to the padded size of the largest batch */
    int maxkey = p->concurrency;
    int pad = p->graphs.n ? cg_bucket(&p->graphs, p->concurrency) : 0;
    if (pad > maxkey)
        maxkey = pad;
    S->ncache = maxkey + 1;
    for (int s = 0; s < S->nslots; s++)
        if (!(S->proto[s].cache = calloc((size_t)S->ncache, sizeof(sim_cost))))
            goto oom;
    S->rk = calloc((size_t)S->R, sizeof *S->rk);
    if (!S->rk)
        goto oom;
    for (int r = 0; r < S->R; r++) {
        S->rk[r].host_rng = gsl_rng_alloc(gsl_rng_taus2);
        S->rk[r].gpu_rng = gsl_rng_alloc(gsl_rng_taus2);
        if (!S->rk[r].host_rng || !S->rk[r].gpu_rng)
            goto oom;
        gsl_rng_set(S->rk[r].host_rng, jitter_stream_seed(p->seed, SIM_STREAM_HOST + (unsigned)r));
        gsl_rng_set(S->rk[r].gpu_rng, jitter_stream_seed(p->seed, SIM_STREAM_GPU + (unsigned)r));
    }
    if (!(S->grp_rng = gsl_rng_alloc(gsl_rng_taus2)))
        goto oom;
    gsl_rng_set(S->grp_rng, jitter_stream_seed(p->seed, SIM_STREAM_GROUP));
    if (p->spec)
        batch_accdist_init(&S->acc, &p->acc, p->steps, p->topk, p->draft_tokens);
    S->gain_mean = p->spec ? 1 + accept_expected(&p->acc, p->steps, p->topk, p->draft_tokens) : 1;
    S->turn_m2 = p->spec ? batch_accdist_overshoot_m2(&S->acc) / batch_lendist_mean(&p->out_len) : 0;
    S->turn_cv = p->spec ? batch_overshoot_floor(&S->acc, &p->out_len) : 0;
    bmeans_init(&S->bm);
    if (batch_init(&S->b, p->concurrency, p->requests, &p->out_len, p->prompt_tokens,
                   p->stagger, p->seed))
        goto oom;
    if (hooks) {
        S->b.on_req = hooks->on_request;
        S->b.on_req_ctx = hooks->ctx;
    }
    if (p->warmup == 0) {
        batch_open_window(&S->b, 0);
        S->win_open = 1;
    }
    sim_make_plan(S, 0);
    for (int r = 0; r < S->R; r++)
        sim_host_run(S, r, 0, 0);
    evq_event e;
    while (!S->stop && evq_pop(&S->q, &e)) {
        if (hooks && hooks->on_event)
            hooks->on_event(hooks->ctx, e.t_ns, e.type, e.a, e.b);
        switch (e.type) {
        case EV_GPU:
            sim_phase_end(S, e.a, e.b, e.t_ns, S->rk[e.a].end_d);
            break;
        case EV_SEG:
            sim_on_seg(S, e.a, e.b, e.t_ns);
            break;
        case EV_BARRIER:
            sim_boundary(S, e.t_ns, S->bar_ev_d);
            break;
        }
    }
    if (S->oom)
        goto oom;
    if (S->range == 1) {
        snprintf(err, errlen, "sim: at iteration %ld a phase would take %.6g us, past the "
                 "simulator's limit of %.0f s for one duration: a cost in the model, the link "
                 "or a flag is out of proportion (bounds.h says what each may be)", S->iter,
                 S->range_us, (double)SIM_STEP_MAX_NS / 1e9);
        rc = -2;
        goto out_free;
    }
    if (S->range == 2) {
        snprintf(err, errlen, "sim: at iteration %ld the simulated time reached %.6g s, past "
                 "the simulator's horizon of %.0f s (73 years): the costs are too large for "
                 "this many iterations", S->iter, S->range_us / 1e6,
                 (double)SIM_HORIZON_NS / 1e9);
        rc = -2;
        goto out_free;
    }
    if (!S->stop) {
        snprintf(err, errlen, "sim: the event queue ran dry at iteration %ld (a bug)", S->iter);
        goto out_free;
    }
    sim_results(S, res);
    rc = sim_result_check(S, res, err, errlen);
    goto out_free;
oom:
    snprintf(err, errlen, "sim: out of memory");
out_free:
    batch_free(&S->b);
    if (S->rk)
        for (int r = 0; r < S->R; r++) {
            gsl_rng_free(S->rk[r].host_rng);
            gsl_rng_free(S->rk[r].gpu_rng);
        }
    free(S->rk);
    if (S->grp_rng)
        gsl_rng_free(S->grp_rng);
    for (int s = 0; s < SIM_SLOTS; s++)
        free(S->proto[s].cache);
    evq_free(&S->q);
    free(S);
    return rc;
}
