/* fit_phase: stage 4, a matched phase -> its part of the model. In: fr_phase (groups, per
 * instance sums) and the instances' host gaps; out: the model's groups (fit_group per group,
 * with the wave geometry and the GEMM sweep where they apply), the phase's host gap and
 * collectives, and its totals per cell. Workload: tens of groups, 10^3..10^5 instances. */
#include "fit_int.h"
#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <gsl/gsl_fit.h>
#include <gsl/gsl_sort.h>

/* An eager instance whose launch calls take this share of its GPU span or more is bound by
 * the host's launches: its GPU idle time is the simulator's launch bound, not a kernel gap. */
#define FIT_LAUNCH_BOUND_FRAC 0.8
/* KV rows: the padded rows' KV is kept when it lowers the phase totals' rms relative error
 * over the calibration cells by this share or more (docs/fit.md, "KV rows": measured ratios) */
#define FIT_KV_ROWS_GAIN 0.1
/* and is compared only over this many left-out padded cells or more */
#define FIT_KV_ROWS_MIN_CELLS 2

/* fit_phase_fit's buffers, one slot per instance of the phase. */
typedef struct {
    fit_point *pts;
    double *v, *bv;            /* host gaps, collectives' counts; bytes per token */
    double *vx;                /* the host gaps' running requests */
    double *wt, *wb, *wc;      /* wave kernel: tokens, blocks, capacity */
    /* a cell left out of the groups' points (the KV-rows choice's cross-validation):
     * its trace, tokens and query tokens per row; out_trace -1: none */
    int    out_trace;
    double out_tokens, out_q;
} fph_buf;

/* The gap pseudo-group: GPU time in the phase that no kernel fills; the eager instances
 * bound by their launch calls. Returns how many are. */
static int fph_idle(fr_run *R, fr_phase *P, int p)
{
    int G1 = P->G + 1, noverlap = 0, nlb = 0;
    for (int q = 0; q < P->ninst; q++) {
        fr_inst *in = &R->in[P->inst[q]];
        double idle = fit_us(in->g1 - in->g0) - in->sum_us - in->nccl_us - in->lwait_us -
                      in->cupti_us;
        if (idle < -1e-3)
            noverlap++;
        idle += in->inter_us;
        P->Y[(size_t)q * (size_t)G1 + (size_t)P->G] = (idle > 0 ? idle : 0) / in->F;
        /* the launch calls' time without the waits of blocking calls (fit_host.c) */
        in->launch_bound = !in->graph && in->napi > 0 &&
                           fit_us(in->le - in->lb) - in->sync_wait_us >=
                           FIT_LAUNCH_BOUND_FRAC * fit_us(in->g1 - in->g0);
        nlb += in->launch_bound;
    }
    if (noverlap)
        fit_run_warn(R, "phase %s: kernels overlap in %d instances (several streams): the model "
                     "runs them one after another", wm_phase_name[p], noverlap);
    return nlb;
}

/* The phase's facts in the model and the result: present, always eager, the range fitted. */
static void fph_present(fr_run *R, const fr_phase *P, int p)
{
    fit_phase_res *pr = &R->res->phase[p];
    wm_phase_model *pm = &R->res->model.phase[p];
    pm->present = 1;
    pm->ngroups = P->G + 1;
    /* a phase the program never replayed from a graph while others were (specbench's
     * accept/sample) is launched eagerly by the simulator at every batch size */
    int graphed = 0;
    for (int q = 0; q < P->ninst; q++)
        graphed |= R->in[P->inst[q]].graph == 1;
    pm->always_eager = !graphed && R->any_graph_phase;
    /* the range fitted: a simulation past it extrapolates (wm_beyond_fit) */
    for (int q = 0; q < P->ninst; q++) {
        const fr_inst *in = &R->in[P->inst[q]];
        pm->fitted_tokens_max = fmax(pm->fitted_tokens_max, in->tokens);
        pm->fitted_q_max = fmax(pm->fitted_q_max, fit_inst_q(in));   /* 0: rows= unknown */
        int reqs = in->bs > 0 ? in->bs : in->rows;   /* ctx= sums the real rows' KV */
        if (reqs > 0 && in->kv > 0)
            pm->fitted_kv_row_max = fmax(pm->fitted_kv_row_max, in->kv / reqs);
    }
    pr->present = 1;
    pr->by = P->by;
    pr->ninst = P->ninst;
}

/* Launch-bound eager instances stay out of the gap group (the simulator's launch bound
 * covers them) unless that leaves fewer than two token counts to fit, or fewer than
 * FIT_LB_KEEP_SHARE of the instances: a few that are not launch-bound among thousands that
 * are are the odd ones (torchbench call 16's lite fit: 8 of 1536 accept instances, each with
 * 220-250 us of idle GPU where the rest had 6 us, became the whole gap group: 233 us). */
#define FIT_LB_KEEP_SHARE 0.1
static int fph_skip_launch_bound(const fr_run *R, const fr_phase *P, int nlb)
{
    int skip_lb = 0;
    if (nlb > 0 && nlb < P->ninst && (double)(P->ninst - nlb) >= FIT_LB_KEEP_SHARE * P->ninst) {
        double x0 = -1;
        for (int q = 0; q < P->ninst && skip_lb == 0; q++) {
            const fr_inst *in = &R->in[P->inst[q]];
            if (in->launch_bound)
                continue;
            if (x0 < 0)
                x0 = in->tokens;
            else if (in->tokens != x0)
                skip_lb = 1;
        }
    }
    return skip_lb;
}

/* All of the phase's GEMMs in one group, and a GEMM sweep with sites in the phase: each
 * point's sweep sum, and the sweep alternative in c. */
static void fph_sweep(fr_run *R, int p, fit_point *pts, size_t m, fit_group_ctx *c)
{
    c->sweep = 1;
    c->sweep_phase = p;
    const wm_sweep *sw = &R->res->model.sweep;
    double tmax = 0;
    for (size_t i = 0; i < m; i++) {
        pts[i].sweep_us = wm_sweep_us(&R->res->model, p, pts[i].tokens, fit_point_q(&pts[i]));
        tmax = fmax(tmax, pts[i].tokens);
    }
    if (tmax > sw->tok[sw->ntok - 1])
        fit_run_warn(R, "phase %s: the traces reach %g tokens, the GEMM sweep only %g: its "
                     "cost beyond is extrapolated from its last two counts (take the sweep "
                     "further: specbench --gemm-sweep ...:%g:8)", wm_phase_name[p], tmax,
                     sw->tok[sw->ntok - 1], 8 * ceil(tmax / 8));
}

/* CUDA waves of group g's dominant kernel, when its blocks follow the tokens. */
static void fph_waves(const fr_run *R, const fr_phase *P, int g, fph_buf *b, fit_group_ctx *c)
{
    int G1 = P->G + 1;
    size_t nw = 0;
    for (int q = 0; q < P->ninst; q++) {
        const fr_inst *in = &R->in[P->inst[q]];
        double bl = P->WB[(size_t)q * (size_t)G1 + (size_t)g];
        if (bl < 0) {   /* its kernels differ in one instance */
            nw = 0;
            break;
        }
        if (bl == 0)
            continue;
        b->wt[nw] = in->tokens;
        b->wb[nw] = bl;
        b->wc[nw++] = P->WC[(size_t)q * (size_t)G1 + (size_t)g];
    }
    fit_wave_geometry(b->wt, b->wb, b->wc, nw, R->moe_E, R->moe_k, c);
}

/* A group's relative error at a configuration its traces did not hold, for the prediction
 * intervals (docs/fit.md, "Residuals"): the leave-one-cell-out rms of the form kept when
 * the GEMM sweep was compared, else that of the columns the cross-validation chose (8 cells
 * or more), else the rms over the cells with the columns fitted taken out (sqrt(cells /
 * (cells - columns)), the unbiased residual variance of least squares); the plain rms when
 * there are no more cells than columns. */
double fit_group_resid_frac(const fit_group_stats *st)
{
    if (st->loo_sweep >= 0 && st->loo_smooth >= 0)
        return st->sweep_kept ? st->loo_sweep : st->loo_smooth;
    if (st->loo_rel >= 0)   /* out of sample: each cell predicted by the fit without it */
        return st->loo_rel;
    if (st->ncells > st->ncols && st->ncols > 0)
        return st->rms_rel * sqrt((double)st->ncells / (double)(st->ncells - st->ncols));
    return st->rms_rel;
}

void fit_group_resid(const fit_group_stats *st, double *frac, double *abs_us)
{
    *abs_us = 0;
    *frac = fit_group_resid_frac(st);
    /* the cross-validation's errors, where they are the residual (no sweep compared) */
    if (!(st->loo_sweep >= 0 && st->loo_smooth >= 0) && st->loo_rel >= 0 && st->loo_frac >= 0) {
        *frac = st->loo_frac;
        *abs_us = st->loo_abs_us;
    }
}

/* Group g's launch profile from the phase's eager instances (fit_match.c's P->POS): its
 * shares normalized; none where no eager instance held the group. */
static void fph_launch_profile(const fr_phase *P, int g, wm_group *wg)
{
    const double *row = P->POS ? &P->POS[(size_t)g * WM_POS_BINS] : NULL;
    double t = 0;
    for (int b = 0; row && b < WM_POS_BINS; b++)
        t += row[b];
    wg->has_pos = t > 0;
    for (int b = 0; wg->has_pos && b < WM_POS_BINS; b++)
        wg->pos[b] = row[b] / t;
}

/* The instances the gap group is not fitted on: launch-bound ones where those are left out
 * (fph_skip_launch_bound) and, with the group fitted on the graph replays (fph_gap_graph_only),
 * the eager ones. */
static int fph_gap_skips(const fr_phase *P, const fr_inst *in, int skip_lb)
{
    return (in->launch_bound && skip_lb) || (P->gap_graph && in->graph == 0);
}

/* Group g of phase p: its points, the GEMM sweep and the waves where they apply, fit_group,
 * the spread capped, the residual for the intervals. */
static int fph_group(fr_run *R, int p, int g, int skip_lb, int kv_rows, fph_buf *b)
{
    fr_phase *P = &R->ph[p];
    fit_phase_res *pr = &R->res->phase[p];
    wm_phase_model *pm = &R->res->model.phase[p];
    int G1 = P->G + 1;
    fit_point *pts = b->pts;
    size_t m = 0;
    int gap = g == P->G;
    for (int q = 0; q < P->ninst; q++) {
        const fr_inst *in = &R->in[P->inst[q]];
        if (gap && fph_gap_skips(P, in, skip_lb))
            continue;
        if (in->trace == b->out_trace && in->tokens == b->out_tokens &&
            (fit_inst_q(in) > 0 ? fit_inst_q(in) : 1.0) == b->out_q)
            continue;
        pts[m++] = (fit_point){.tokens = in->tokens, .kv_tokens = fit_inst_kv(in, kv_rows),
                               .us = P->Y[(size_t)q * (size_t)G1 + (size_t)g],
                               .trace = in->trace, .q_per_row = fit_inst_q(in),
                               .kernel_us = gap ? 0 : P->WD[(size_t)q * (size_t)G1 + (size_t)g],
                               .variant = P->WV[(size_t)q * (size_t)G1 + (size_t)g]};
    }
    fit_group_ctx c = {.trace_names = R->tnames, .ntraces = R->nt,
                       .phase = wm_phase_name[p], .group = P->name[g],
                       .moe_experts = R->moe_E, .moe_topk = R->moe_k,
                       .expert_row_exp = pm->expert_row_exp};
    if (!gap && P->by == FIT_BY_NAME && P->gcls[g] && strcmp(P->gcls[g], "gemm") == 0 &&
        wm_sweep_covers(&R->res->model, p))
        fph_sweep(R, p, pts, m, &c);
    if (!gap)
        fph_waves(R, P, g, b, &c);
    wm_group *wg = &pm->groups[g];
    memset(wg, 0, sizeof *wg);
    snprintf(wg->name, sizeof wg->name, "%s", P->name[g]);
    wg->count = P->count[g];
    fph_launch_profile(P, g, wg);
    if (fit_group(pts, m, &c, wg, &pr->grp[g].st, R->err, R->errlen))
        return -1;
    wg->expert_row_exp = pm->expert_row_exp;
    /* a KV x tiles term fitted at q >= its smallest q says nothing below it (torchbench's
     * attention, cuBLAS batched GEMMs over the KV, costs 6.5% less at q 2 than at 3 in verify
     * at 40 rows, most of it the GEMMs' tokens; q_tile 2 alone would halve its KV term) */
    if (wg->per_kvq_ktoken_us != 0 || wg->per_kvq2_ktoken_us != 0) {
        double qmin = 0;
        for (size_t i = 0; i < m; i++)
            if (pts[i].q_per_row > 0 && (qmin == 0 || pts[i].q_per_row < qmin))
                qmin = pts[i].q_per_row;
        wg->q_min = qmin;
    }
    pr->grp[g].gap = gap;
    if (c.sweep && R->o && R->o->log && pr->grp[g].st.loo_sweep >= 0)
        fprintf(R->o->log, "specsim fit: phase %s: group %s: %s (left-out cells: %.1f%% rms "
                "with the sweep, %.1f%% with the smooth fit alone)\n", wm_phase_name[p],
                wg->name, pr->grp[g].st.sweep_kept == 2 ? "GEMM sweep + smooth fit of the rest kept"
                : pr->grp[g].st.sweep_kept ? "GEMM sweep (scaled) kept" : "smooth fit kept",
                100 * pr->grp[g].st.loo_sweep, 100 * pr->grp[g].st.loo_smooth);
    fit_group_resid(&pr->grp[g].st, &wg->resid_frac, &wg->resid_abs_us);
    if (pr->grp[g].st.cols_dropped > 0)
        fit_run_warn(R, "phase %s: group %s: seen in %d configurations, fewer measurements than "
                     "the terms they vary in: %d term(s) left out (base and tokens kept first; "
                     "capture more batch sizes, draft lengths or contexts to fit them)",
                     wm_phase_name[p], wg->name, pr->grp[g].st.ncells, pr->grp[g].st.cols_dropped);
    if (wg->sd_frac > FIT_SD_FRAC_MAX) {
        /* said once for all groups (fr_finish), of the fits that speak (not the quiet
         * leave-one-out refits) */
        if (R->o && R->o->log) {
            R->ph[p].sd_capped[g] = 1;
            if (wg->sd_frac > R->sd_capped_max) {
                R->sd_capped_max = wg->sd_frac;
                snprintf(R->sd_capped_at, sizeof R->sd_capped_at, "phase %s: group %s",
                         wm_phase_name[p], wg->name);
            }
        }
        wg->sd_frac = FIT_SD_FRAC_MAX;
    }
    return 0;
}

/* A host gap that grows with the running requests (a scheduler's Python per request: torchbench
 * measures 33 us at 1 request and 83 us at 80 for its baseline, docs/torchbench.md) is kept as a
 * slope when it is significant: t = slope / its standard error >= FIT_GAP_SLOPE_T (3: a slope
 * that noise alone gives less than 0.3% of the time), over at least 3 request counts. */
#define FIT_GAP_SLOPE_T 3.0
#define FIT_GAP_SLOPE_CELLS 3

/* The requests an instance's host work scales with: the range's bs= (real rows), else rows=;
 * 0 when neither is known. */
static double fph_gap_rows(const fr_inst *in)
{
    return in->bs > 0 ? in->bs : in->rows > 0 ? in->rows : 0;
}

/* Weighted least squares y = a + b x over n points (weights w), b >= 0 and a >= 0 (a line
 * through the origin when the free intercept is negative). *se: b's standard error from the
 * residuals. Returns 0, or -1 when the points do not determine a slope. */
static int fph_line(const double *x, const double *y, const double *w, size_t n, double *a,
                    double *b, double *se)
{
    double c0, c1, cov00, cov01, cov11, chisq;
    if (n < 3 || gsl_fit_wlinear(x, 1, w, 1, y, 1, n, &c0, &c1, &cov00, &cov01, &cov11, &chisq))
        return -1;
    double sw = 0;
    for (size_t i = 0; i < n; i++)
        sw += w[i];
    /* gsl's covariance assumes weights 1/sigma^2; scale it by the residual variance */
    double s2 = chisq / (double)(n - 2) / (sw / (double)n);
    if (c0 < 0) {
        double sxy = 0, sxx = 0;
        for (size_t i = 0; i < n; i++) {
            sxy += w[i] * x[i] * y[i];
            sxx += w[i] * x[i] * x[i];
        }
        if (!(sxx > 0))
            return -1;
        c0 = 0;
        c1 = sxy / sxx;
        double r2 = 0;
        for (size_t i = 0; i < n; i++)
            r2 += w[i] * (y[i] - c1 * x[i]) * (y[i] - c1 * x[i]);
        s2 = r2 / (double)(n - 1) / (sw / (double)n);
        cov11 = 1.0 / sxx;
    }
    *a = c0;
    *b = c1;
    *se = sqrt(cov11 * s2 * (sw / (double)n));
    return 0;
}

/* Points (x = requests, y = gap) of one phase: the host gap as a line in the requests when
 * its slope is significant. Outliers are taken against the line through the median gap of
 * each request count (the fit's rule, fit_group_robust), then the line is refitted on the
 * rest, every request count weighing the same. Returns 1 and *a, *b, *sd (of the residuals),
 * *out (points left out) when a slope is kept; 0: none (a constant gap). x, y are reordered. */
static int fph_gap_slope(int p, double *x, double *y, size_t m, double *a, double *b,
                         double *sd, size_t *out)
{
    if (m < 2 * FIT_GAP_SLOPE_CELLS)
        return 0;
    for (size_t i = 0; i < m; i++)
        if (!(x[i] > 0))
            return 0;
    double *w = malloc(m * sizeof *w), *cx = malloc(m * sizeof *cx), *cy = malloc(m * sizeof *cy);
    double *cw = malloc(m * sizeof *cw), *r = malloc(m * sizeof *r);
    int kept = 0;
    if (!w || !cx || !cy || !cw || !r)
        goto done;
    gsl_sort2(x, 1, y, 1, m);
    /* cells: the median gap of each request count */
    size_t nc = 0;
    for (size_t i = 0; i < m;) {
        size_t j = i;
        while (j < m && x[j] == x[i])
            j++;
        for (size_t k = i; k < j; k++)
            r[k - i] = y[k];
        cx[nc] = x[i];
        gsl_sort(r, 1, j - i);
        cy[nc] = fit_group_median(r, j - i);
        cw[nc] = 1;
        for (size_t k = i; k < j; k++)
            w[k] = 1.0 / (double)(j - i);
        nc++;
        i = j;
    }
    double a0, b0, se0;
    if (nc < FIT_GAP_SLOPE_CELLS || fph_line(cx, cy, cw, nc, &a0, &b0, &se0))
        goto done;
    for (size_t i = 0; i < m; i++)
        r[i] = y[i] - (a0 + b0 * x[i]);
    double med, lim = fit_group_robust_lim(r, m, &med);
    size_t k = 0;
    for (size_t i = 0; i < m; i++) {
        double res = y[i] - (a0 + b0 * x[i]);
        if (fabs(res - med) <= lim) {
            x[k] = x[i];
            y[k] = y[i];
            w[k] = w[i];
            k++;
        }
    }
    double se;
    if (fph_line(x, y, w, k, a, b, &se))
        goto done;
    if (getenv("FIT_DEBUG"))
        fprintf(stderr, "phase %s: host gap %.2f + %.4f us per request (se %.4f, t %.1f) over %zu "
                "request counts\n", wm_phase_name[p], *a, *b, se, se > 0 ? *b / se : 0, nc);
    if (!(*b > 0) || !(se >= 0) || *b < FIT_GAP_SLOPE_T * se)
        goto done;
    double s2 = 0;
    for (size_t i = 0; i < k; i++)
        s2 += (y[i] - (*a + *b * x[i])) * (y[i] - (*a + *b * x[i]));
    *sd = k > 2 ? sqrt(s2 / (double)(k - 2)) : 0;
    *out = m - k;
    kept = 1;
done:
    free(w);
    free(cx);
    free(cy);
    free(cw);
    free(r);
    return kept;
}

/* The phase's host gap: the robust mean and sd of its instances' gaps, or a line in the
 * running requests (fph_gap_slope). Verify's gaps are taken after draft where the traces have
 * both kinds: after extend (steps 1) the gap also holds the host work between iterations,
 * which the model keeps in the draft's gap (the simulator moves it before verify when there
 * is no draft phase). */
static void fph_host_gap(fr_run *R, int p, double *v, double *vx)
{
    fr_phase *P = &R->ph[p];
    fit_phase_res *pr = &R->res->phase[p];
    wm_phase_model *pm = &R->res->model.phase[p];
    size_t m = 0, nb = 0;
    int after_draft = 0;
    for (int q = 0; q < P->ninst && p == WM_VERIFY; q++) {
        const fr_inst *in = &R->in[P->inst[q]];
        after_draft |= in->has_gap && in->gap_prev == WM_DRAFT;
    }
    for (int q = 0; q < P->ninst; q++) {
        const fr_inst *in = &R->in[P->inst[q]];
        if (in->has_gap && (!after_draft || in->gap_prev == WM_DRAFT)) {
            vx[m] = fph_gap_rows(in);
            v[m++] = in->gap_us;
            nb += in->busy;
        }
    }
    pm->host_gap_per_row_us = 0;
    if (m) {
        /* single gaps may be negative (the GPU started sooner after the first launch call
         * than the launch cost the simulator charges); the mean may not */
        double mean, sd, a, b, lsd;
        size_t out, lout;
        int slope = fph_gap_slope(p, vx, v, m, &a, &b, &lsd, &lout);
        if (slope) {
            mean = a;
            sd = lsd;
            out = lout;
            pm->host_gap_per_row_us = b;
        } else {
            out = fit_group_robust(v, m, &mean, &sd);
        }
        if (fit_run_stalls_in(R)) {
            /* fit_int.h: a lite capture's stalls are the program's own: the mean over every
             * gap up to FIT_STALL_MAX_X times its prediction (a gap across two capture windows
             * is seconds: out); the sd stays robust */
            double shift = 0;
            size_t k = 0;
            for (size_t i = 0; i < m; i++) {
                double pred = mean + pm->host_gap_per_row_us * vx[i];
                if (v[i] > FIT_STALL_MAX_X * (pred > 1 ? pred : 1))
                    continue;
                shift += v[i] - pred;
                k++;
            }
            if (k)
                mean += shift / (double)k;
            out = m - k;
        }
        if (out > m / 100 + 2)
            fit_run_warn(R, "phase %s: %zu of %zu host gaps left out as outliers (graph capture, "
                         "warm-up, host stalls)", wm_phase_name[p], out, m);
        pr->gap_outliers = (int)out;
        pm->host_gap_sd_us = sd;
        pm->host_gap_us = mean > 0 ? mean : 0;
        if (mean < -0.5)
            fit_run_warn(R, "phase %s: host gap %.2f us on average (the GPU starts this phase "
                         "sooner after its first launch call than the launch cost the simulator "
                         "charges): its host_gap_us is set to 0", wm_phase_name[p], mean);
    } else {
        fit_run_warn(R, "phase %s: no host gap measured (no instance with a predecessor): its host_gap_us is set to 0",
                     wm_phase_name[p]);
    }
    pr->ngaps = (int)m;
    pr->nbusy = (int)nb;
    pr->gap_sd_us = pm->host_gap_sd_us;
}

/* Collectives: count per forward and bytes per token, medians over the instances. */
static void fph_colls(fr_run *R, int p, double *v, double *bv)
{
    fr_phase *P = &R->ph[p];
    wm_phase_model *pm = &R->res->model.phase[p];
    const char *ops[WM_COLLS_MAX];
    int nops = 0;
    for (int q = 0; q < P->ninst; q++) {
        const fr_inst *in = &R->in[P->inst[q]];
        for (int k = 0; k < in->nnc; k++) {
            int o = 0;
            while (o < nops && ops[o] != in->nc[k].op)
                o++;
            if (o == nops && nops < WM_COLLS_MAX)
                ops[nops++] = in->nc[k].op;
        }
    }
    for (int o = 0; o < nops; o++) {
        size_t mc = 0, mb = 0;
        for (int q = 0; q < P->ninst; q++) {
            const fr_inst *in = &R->in[P->inst[q]];
            double cnt = 0, bytes = 0;
            for (int k = 0; k < in->nnc; k++)
                if (in->nc[k].op == ops[o])
                    cnt = in->nc[k].n, bytes = in->nc[k].bytes;
            v[mc++] = cnt / in->F;
            if (cnt > 0 && bytes > 0)
                bv[mb++] = bytes / cnt / in->tokens;
        }
        int cnt = (int)lround(fit_group_median(v, mc));
        if (cnt < 1 || pm->ncolls >= WM_COLLS_MAX)
            continue;
        wm_coll *wc = &pm->colls[pm->ncolls++];
        snprintf(wc->op, sizeof wc->op, "%s", ops[o]);
        wc->count = cnt;
        wc->bytes_per_token = fit_group_median(bv, mb);
        if (mb == 0)
            fit_run_warn(R, "phase %s: %s kernels without byte counts (args.nccl missing): "
                         "bytes_per_token 0", wm_phase_name[p], ops[o]);
    }
}

static int fph_totals(fr_run *R, int p, fit_cell **cells_out, int *nc_out);

/* The phase's groups fitted with the KV context of kv_rows (fit_inst_kv). */
static int fph_groups(fr_run *R, int p, int skip_lb, int kv_rows, fph_buf *b)
{
    R->res->model.phase[p].kv_rows = kv_rows;
    for (int g = 0; g < R->ph[p].G + 1; g++)
        if (fph_group(R, p, g, skip_lb, kv_rows, b))
            return -1;
    return 0;
}

/* Frees the cell statistics of phase p's groups (fit_group allocates them at every fit). */
static void fph_free_cells(fr_run *R, int p)
{
    fit_phase_res *pr = &R->res->phase[p];
    for (int g = 0; g < R->ph[p].G + 1; g++) {
        free(pr->grp[g].st.cell);
        pr->grp[g].st.cell = NULL;
    }
}

/* Leave-one-cell-out on the phase totals with the groups fitted on kv_rows: each cell j
 * with score[j] set, its measured total against the sum of the groups fitted without it
 * (quietly; a fit that fails without the cell leaves it unscored: rel[j] NAN, as are the
 * cells not scored). cells: the phase's cells (fph_totals on that basis). Returns 0. */
static int fph_kv_loo(fr_run *R, int p, int skip_lb, int kv_rows, fph_buf *b,
                      const fit_cell *cells, int nc, const char *score, double *rel)
{
    const wm_model *m = &R->res->model;
    const fit_opts *o = R->o;
    fit_opts quiet = o ? *o : (fit_opts){0};
    quiet.log = NULL;
    int nw = R->res->nwarnings;
    R->o = &quiet;
    for (int j = 0; j < nc; j++) {
        rel[j] = NAN;
        if (!score[j])
            continue;
        b->out_trace = cells[j].trace;
        b->out_tokens = cells[j].tokens;
        b->out_q = cells[j].q_per_row;
        if (fph_groups(R, p, skip_lb, kv_rows, b) == 0 && cells[j].us_mean > 0) {
            double u = 0;
            for (int g = 0; g < R->ph[p].G + 1; g++)
                u += wm_group_us_q(m, &m->phase[p].groups[g], cells[j].tokens,
                                   cells[j].kv_tokens, cells[j].q_per_row);
            rel[j] = (u - cells[j].us_mean) / cells[j].us_mean;
        }
        if (R->err && R->errlen)
            R->err[0] = '\0';
        fph_free_cells(R, p);
    }
    b->out_trace = -1;
    R->o = o;
    R->res->nwarnings = nw;
    return 0;
}

/* KV rows (docs/fit.md, "KV rows"). A graph replays its padded batch: SGLang's and
 * specbench's padded rows have an empty cache, torchbench's attention reads every row's whole
 * KV buffer. Where the phase has padded graph instances with KV context, its groups are
 * fitted on both bases and the one whose phase totals fit the calibration cells better is
 * kept; the padded rows only when they lower that rms error by FIT_KV_ROWS_GAIN or more (ties
 * keep the real rows, the simulator's rule before the choice). FIT_KV_ROWS=real|padded in
 * the environment forces one (tests; "auto": the choice). */
static int fph_kv_rows(fr_run *R, int p, int skip_lb, fph_buf *b)
{
    fr_phase *P = &R->ph[p];
    const char *env = getenv("FIT_KV_ROWS");
    int npad = 0;
    for (int q = 0; q < P->ninst; q++) {
        const fr_inst *in = &R->in[P->inst[q]];
        npad += in->graph == 1 && in->kv > 0 && fit_inst_kv(in, WM_KV_PADDED) != in->kv;
    }
    if (env && strcmp(env, "real") == 0)
        return fph_groups(R, p, skip_lb, WM_KV_REAL, b);
    if (env && strcmp(env, "padded") == 0)
        return fph_groups(R, p, skip_lb, WM_KV_PADDED, b);
    if (npad == 0)
        return fph_groups(R, p, skip_lb, WM_KV_REAL, b);
    /* the cells and their KV context on each basis; the measured totals are the same */
    fit_cell *cr = NULL, *cp = NULL;
    int ncr = 0, ncp = 0, rc = -1;
    double *rr = NULL, *rp = NULL;
    char *sc = NULL;
    wm_phase_model *pm = &R->res->model.phase[p];
    pm->kv_rows = WM_KV_REAL;
    if (fph_totals(R, p, &cr, &ncr))
        goto done;
    pm->kv_rows = WM_KV_PADDED;
    if (fph_totals(R, p, &cp, &ncp))
        goto done;
    rr = malloc((size_t)(ncr + 1) * sizeof *rr);
    rp = malloc((size_t)(ncp + 1) * sizeof *rp);
    sc = malloc((size_t)(ncr + 1));
    if (!rr || !rp || !sc) {
        fit_run_fail(R, "out of memory");
        goto done;
    }
    assert(ncr == ncp);   /* the same instances, the same cells */
    /* scored: the cells whose KV differs between the bases (the padded configurations),
     * each predicted from the others; elsewhere the two bases price alike */
    for (int j = 0; j < ncr; j++)
        sc[j] = cp[j].kv_tokens != cr[j].kv_tokens;
    if (fph_kv_loo(R, p, skip_lb, WM_KV_REAL, b, cr, ncr, sc, rr) ||
        fph_kv_loo(R, p, skip_lb, WM_KV_PADDED, b, cp, ncp, sc, rp))
        goto done;
    double s2r = 0, s2p = 0;
    int k = 0;
    for (int j = 0; j < ncr; j++)
        if (isfinite(rr[j]) && isfinite(rp[j])) {
            s2r += rr[j] * rr[j];
            s2p += rp[j] * rp[j];
            k++;
        }
    double rms_real = k ? sqrt(s2r / k) : 0, rms_pad = k ? sqrt(s2p / k) : 0;
    int kv_rows = k >= FIT_KV_ROWS_MIN_CELLS && rms_pad <= (1 - FIT_KV_ROWS_GAIN) * rms_real
                  ? WM_KV_PADDED : WM_KV_REAL;
    if (R->o && R->o->log)
        fprintf(R->o->log, "specsim fit: phase %s: KV of %s rows (%d of %d instances padded; "
                "left-out padded cells' phase totals %.2f%% rms over %d cells with the padded rows' KV, "
                "%.2f%% without)\n", wm_phase_name[p],
                kv_rows == WM_KV_PADDED ? "all padded" : "the real", npad, P->ninst,
                100 * rms_pad, k, 100 * rms_real);
    rc = fph_groups(R, p, skip_lb, kv_rows, b);
done:
    free(cr);
    free(cp);
    free(rr);
    free(rp);
    free(sc);
    return rc;
}

/* Experts of a row (docs/fit.md, "Experts of a row"). The expert column counts the experts
 * that a forward's tokens touch if each picked its top-k alone; a row's consecutive tokens (a
 * draft chain in verify) may pick overlapping experts (torchbench's learned router: R rows of
 * q tokens touch what ~R * q^0.65 independent tokens would, its unprofiled verify times say;
 * specbench's hashed routing: every token alone). Verify only: the target's forward over the
 * draft tokens (an EAGLE-3 draft is dense; in the other phases an expert column is a curve
 * the groups borrow, and torchbench's accept, which runs no forward, took 0.85 from it). In an
 * MoE model, where the phase's cells hold several query tokens per row at two q or more, the
 * groups are fitted at the exponents of fit_row_exp_grid in turn (until the score rises past
 * its minimum) and the one whose phase totals fit those cells best, each left out in turn,
 * is kept; below 1 only when it lowers that rms error by FIT_ROW_EXP_GAIN or more (ties keep
 * every token alone, the simulator's rule before). FIT_EXPERT_ROW_EXP=X in the environment
 * forces X (1: off). */
static const double fit_row_exp_grid[] = {1, 0.85, 0.7, 0.55, 0.4};
#define FIT_ROW_EXP_GAIN 0.1
#define FIT_ROW_EXP_MIN_CELLS 3

static int fph_expert_row_exp(fr_run *R, int p, int skip_lb, fph_buf *b)
{
    wm_phase_model *pm = &R->res->model.phase[p];
    int kv_rows = pm->kv_rows;
    wm_phase_set_expert_row_exp(pm, 1);
    if (R->moe_E <= 0 || p != WM_VERIFY)
        return 0;
    const char *env = getenv("FIT_EXPERT_ROW_EXP");
    if (env && *env) {
        double e = atof(env);
        if (!(e >= BND_ROW_EXP_MIN && e <= 1))
            return fit_run_fail(R, "FIT_EXPERT_ROW_EXP=%s: out of range: a routing exponent must be in "
                                "[%g, 1]", env, BND_ROW_EXP_MIN);
        wm_phase_set_expert_row_exp(pm, e);
        if (e >= 1)
            return 0;
        fph_free_cells(R, p);
        return fph_groups(R, p, skip_lb, kv_rows, b);
    }
    fit_cell *cells = NULL;
    int nc = 0, rc = -1;
    double *rel = NULL;
    char *sc = NULL;
    if (fph_totals(R, p, &cells, &nc))
        return -1;
    rel = malloc((size_t)(nc + 1) * sizeof *rel);
    sc = malloc((size_t)(nc + 1));
    if (!rel || !sc) {
        fit_run_fail(R, "out of memory");
        goto done;
    }
    /* scored: the cells of several query tokens a row, those whose experts saturate too (the
     * exponent moves the groups' other terms there: scored on a few unsaturated cells alone,
     * call 29's MoE verify chose 0.55 and its held-out rows of 7-24 requests came out 3% slower) */
    int nsc = 0;
    double q0 = 0, q1 = 0;
    for (int j = 0; j < nc; j++) {
        sc[j] = cells[j].q_per_row > 1;
        if (!sc[j])
            continue;
        nsc++;
        q0 = q0 == 0 || cells[j].q_per_row < q0 ? cells[j].q_per_row : q0;
        q1 = cells[j].q_per_row > q1 ? cells[j].q_per_row : q1;
    }
    rc = 0;
    if (nsc < FIT_ROW_EXP_MIN_CELLS || q1 <= q0)
        goto done;
    fph_free_cells(R, p);   /* the groups are fitted again below */
    int ng = (int)(sizeof fit_row_exp_grid / sizeof fit_row_exp_grid[0]), best = 0;
    double rms[sizeof fit_row_exp_grid / sizeof fit_row_exp_grid[0]];
    for (int i = 0; i < ng; i++) {
        wm_phase_set_expert_row_exp(pm, fit_row_exp_grid[i]);
        fph_kv_loo(R, p, skip_lb, kv_rows, b, cells, nc, sc, rel);
        double s2 = 0;
        int k = 0;
        for (int j = 0; j < nc; j++)
            if (sc[j] && isfinite(rel[j])) {
                s2 += rel[j] * rel[j];
                k++;
            }
        rms[i] = k == nsc ? sqrt(s2 / k) : INFINITY;   /* every scored cell, or no say */
        if (getenv("FIT_DEBUG"))
            fprintf(stderr, "phase %s: expert row exponent %.2f: left-out rms %.4f\n", wm_phase_name[p],
                    fit_row_exp_grid[i], rms[i]);
        if (rms[i] < rms[best])
            best = i;
        if (i >= 2 && rms[i] > rms[i - 1])
            break;   /* past the minimum */
    }
    if (!isfinite(rms[0]) || !(rms[best] <= (1 - FIT_ROW_EXP_GAIN) * rms[0]))
        best = 0;   /* a rule with nothing to compare with keeps every token alone */
    wm_phase_set_expert_row_exp(pm, fit_row_exp_grid[best]);
    if (R->o && R->o->log)
        fprintf(R->o->log, "specsim fit: phase %s: a row's tokens route %s (exponent %.2f; left-out "
                "cells' phase totals %.2f%% rms over %d cells of %g-%g query tokens a row, %.2f%% with "
                "every token routed alone)\n", wm_phase_name[p],
                best ? "to shared experts" : "alone", fit_row_exp_grid[best], 100 * rms[best], nsc, q0, q1,
                100 * rms[0]);
    rc = fph_groups(R, p, skip_lb, kv_rows, b);
done:
    free(cells);
    free(rel);
    free(sc);
    return rc;
}

/* The cells of the points pts[0..n) (one trace, token count and query tokens per row, as
 * fit_group makes them) into cells (room for n): each one's robust mean and sd of its points'
 * us, its mean KV context and the points kept; fit_us left 0. Returns the number of cells,
 * or -1 out of memory. */
static int fph_cells(const fit_point *pts, size_t n, fit_cell *cells)
{
    size_t *idx = malloc((n + 1) * sizeof *idx);
    double *v = malloc((n + 1) * sizeof *v);
    if (!idx || !v) {
        free(idx);
        free(v);
        return -1;
    }
    for (size_t q = 0; q < n; q++)
        idx[q] = q;
    qsort_r(idx, n, sizeof *idx, fit_group_cmp_idx, (void *)pts);
    int nc = 0;
    for (size_t q = 0; q < n;) {
        size_t r = q;
        double kv = 0;
        while (r < n && pts[idx[r]].trace == pts[idx[q]].trace &&
               pts[idx[r]].tokens == pts[idx[q]].tokens &&
               pts[idx[r]].q_per_row == pts[idx[q]].q_per_row) {
            v[r - q] = pts[idx[r]].us;
            kv += pts[idx[r]].kv_tokens;
            r++;
        }
        fit_cell *c = &cells[nc++];
        memset(c, 0, sizeof *c);
        c->trace = pts[idx[q]].trace;
        c->tokens = pts[idx[q]].tokens;
        c->kv_tokens = kv / (double)(r - q);
        c->q_per_row = fit_point_q(&pts[idx[q]]);
        c->n = (int)(r - q) - (int)fit_group_robust(v, r - q, &c->us_mean, &c->us_sd);
        q = r;
    }
    free(idx);
    free(v);
    return nc;
}

/* The median over the cells of points pts[0..m) (one trace, token count and query tokens per
 * row) of each cell's robust mean, into *med. Returns the number of cells (0: none, *med
 * untouched), or -1 out of memory. */
static int fph_cell_median(const fit_point *pts, size_t m, double *med)
{
    fit_cell *cells = malloc((m + 1) * sizeof *cells);
    double *cm = malloc((m + 1) * sizeof *cm);
    int nc = pts && cells && cm ? fph_cells(pts, m, cells) : -1;
    for (int c = 0; c < nc; c++)
        cm[c] = cells[c].us_mean;
    if (nc > 0)
        *med = fit_group_median(cm, (size_t)nc);
    free(cells);
    free(cm);
    return nc;
}

/* The model's GPU time of phase p's first G1 groups (the gap group the last) at a shape, us a
 * forward. */
static double fph_groups_us(const wm_model *m, int p, int G1, double tokens, double kv, double qr)
{
    double u = 0;
    for (int g = 0; g < G1; g++)
        u += wm_group_us_q(m, &m->phase[p].groups[g], tokens, kv, qr);
    return u;
}

/* Instance q of phase p: its measured time less the model's over groups g0.. and the gap
 * group (g0 = 0: the whole phase; P->G: the gap group alone), us a forward. */
static double fph_resid(const fr_run *R, const fr_phase *P, int p, int q, int g0, double kv,
                        double qr)
{
    const wm_phase_model *pm = &R->res->model.phase[p];
    const fr_inst *in = &R->in[P->inst[q]];
    int G1 = P->G + 1;
    double r = 0;
    for (int g = g0; g < G1; g++)
        r += P->Y[(size_t)q * (size_t)G1 + (size_t)g] -
             wm_group_us_q(&R->res->model, &pm->groups[g], in->tokens, kv, qr);
    return r;
}

/* The groups are fitted one by one, each in its own form (a base, a slope in the tokens, a
 * knee, the KV terms, the GEMM sweep), and their sum need not follow the phase's measured
 * totals: on torchbench's lite capture of call 16 it fell 2-6% below five of decode's six
 * cells and draft's (1-4 rows of a GEMM cost more than its smooth form says), and the
 * held-out graph rows came out ~1% fast on every table, specbench's too (+0.6% and
 * +0.8%). The median over the phase's cells (each configuration once, launch-bound instances
 * left out where the gap group leaves them out) of the totals' residual, measured - model,
 * goes into the gap group's base: the groups then sum to the totals at the typical cell,
 * their shape unchanged. The median, not the mean: one odd cell would move every other
 * (call 18's accept at 80 rows, eager, measured 564 us against ~55 us elsewhere: the mean put
 * +41.5 us into every accept, its held-out table 1.44% -> 1.68% median; the median 1.15%).
 * At least FIT_TOTAL_BIAS_CELLS cells: of two the median is their mean (call 18's accept
 * instances that were not launch-bound, the only ones counted, were its two 80-row cells:
 * +368 us and +0.4 us put +184 us into every accept, its 1-row rows 1-2% slow). Only where
 * every trace is unprofiled (lite): a CUPTI trace's totals hold
 * the profiler's own GPU time, which FIT_CUPTI_KERNEL_US takes out only in part, and the
 * node-level torchbench fits already ran 1-4% slow on their held-out rows (call 4's MoE
 * table went from 1.49% to 2.34% median with the correction). 1 when applied, 0 when not
 * (fewer than FIT_TOTAL_BIAS_CELLS cells; FIT_TOTAL_BIAS=0). */
#define FIT_TOTAL_BIAS_CELLS 3
static int fph_total_bias(fr_run *R, int p, int skip_lb, double *bias)
{
    fr_phase *P = &R->ph[p];
    wm_phase_model *pm = &R->res->model.phase[p];
    int kv_rows = pm->kv_rows;
    *bias = 0;
    if (fit_env_off("FIT_TOTAL_BIAS") || P->ninst < 2 || !fit_run_unprofiled(R))
        return 0;
    fit_point *pts = malloc((size_t)P->ninst * sizeof *pts);
    size_t m = 0;
    for (int q = 0; pts && q < P->ninst; q++) {
        const fr_inst *in = &R->in[P->inst[q]];
        if (fph_gap_skips(P, in, skip_lb))
            continue;
        double kv = fit_inst_kv(in, kv_rows), qr = fit_inst_q(in);
        pts[m++] = (fit_point){.tokens = in->tokens, .kv_tokens = kv,
                               .us = fph_resid(R, P, p, q, 0, kv, qr),
                               .trace = in->trace, .q_per_row = qr};
    }
    /* each cell's residual (its robust mean), the cells' median the bias */
    double med = 0;
    int nc = fph_cell_median(pts, m, &med);
    free(pts);
    if (nc < FIT_TOTAL_BIAS_CELLS)
        return 0;
    *bias = med;
    wm_group *gap = &pm->groups[P->G];
    gap->base_us = fmax(0, gap->base_us + *bias);
    return 1;
}

/* The gap group (GPU idle inside the phase) from the graph replays alone where the phase
 * also ran eagerly and its graph replays hold two token counts or more: an eager kernel
 * queued behind GPU work starts later after its predecessor than a graph's node does
 * (measured unprofiled, traces/gapprobe: torchbench's forwards on the H100, 1.1-1.6 us a
 * kernel more than their graph replays, and CUPTI changes that span by 0.12 us a kernel at
 * most), and fitted together against the tokens, the eager cells above the largest graph
 * bent the group there: torchbench call 21's draft got a knee at 40 tokens and 15.3 us a token
 * above it from its 80-row eager cell, which priced its 52-row graph replays 39% high (the
 * 50-row rows 9-11% slow). The eager excess is then a term of its own (fph_eager_gap).
 * FIT_GAP_GRAPH=0: the joint fit of before (docs/fit.md section 2). */
static int fph_gap_graph_only(const fr_run *R, const fr_phase *P)
{
    if (fit_env_off("FIT_GAP_GRAPH"))
        return 0;
    int eager = 0, two = 0;
    double x0 = -1;
    for (int q = 0; q < P->ninst; q++) {
        const fr_inst *in = &R->in[P->inst[q]];
        if (in->graph == 0)
            eager = 1;
        else if (x0 < 0)
            x0 = in->tokens;
        else if (in->tokens != x0)
            two = 1;
    }
    return eager && two;
}

/* With the gap group fitted on the graph replays (fph_gap_graph_only): the eager
 * instances' GPU time beyond the model, per kernel launched (the cells' robust means, their
 * median; 0 when below), into the phase's eager_gap_us, which the simulator adds to every
 * eager instance. Beyond the whole model, every group's residual with the gap group's: the
 * kernel groups are fitted on graph and eager instances together, mostly graph ones, and
 * where their form misses the eager cells the idle alone leaves that out (specbench
 * llama8b's verify at 240 and 480 tokens, eager: its attention priced 2.9-3.0% high, +239
 * and +317 us a forward, its 80-row rows 1.3-1.6% slow; FIT_EAGER_TOTAL=0: the idle alone).
 * Only instances not bound by their launches: where the host bounds a phase
 * the GPU's idle after each launch (its start latency) hides behind the next launch, and the
 * simulator's launch bounds price that phase (the generator's stalled host, whose eager
 * instances idle ~3 us a kernel that way, came out 4-6% slow with them in). */
static void fph_eager_gap(fr_run *R, int p)
{
    fr_phase *P = &R->ph[p];
    wm_phase_model *pm = &R->res->model.phase[p];
    pm->eager_gap_us = 0;
    int nk = wm_phase_kernels(&R->res->model, p);
    if (!P->gap_graph || nk <= 0 || fit_env_off("FIT_EAGER_GAP"))
        return;
    int total = !fit_env_off("FIT_EAGER_TOTAL");
    fit_point *pts = malloc((size_t)P->ninst * sizeof *pts);
    size_t m = 0;
    for (int q = 0; pts && q < P->ninst; q++) {
        const fr_inst *in = &R->in[P->inst[q]];
        if (in->graph != 0 || in->launch_bound)
            continue;
        double kv = fit_inst_kv(in, pm->kv_rows), qr = fit_inst_q(in);
        double r = fph_resid(R, P, p, q, total ? 0 : P->G, kv, qr);
        pts[m++] = (fit_point){.tokens = in->tokens, .kv_tokens = kv, .us = r / nk,
                               .trace = in->trace, .q_per_row = qr};
    }
    double g = 0;
    int nc = m ? fph_cell_median(pts, m, &g) : 0;
    free(pts);
    pm->eager_gap_us = g > 0 ? g : 0;
    if (R->o && R->o->log && nc > 0)
        fprintf(R->o->log, "specsim fit: phase %s: its eager instances take %.3f us a kernel more "
                "GPU time than %s (median of %d cells): eager_gap_us %.3f\n", wm_phase_name[p], g,
                total ? "the model, its gap group fitted on the graph replays, says"
                      : "the gap group fitted on its graph replays says (idle alone)",
                nc, pm->eager_gap_us);
}

/* The median of the cells' r (cr) at graph size sz (every cell: sz < 0), cell skip left out
 * (-1: none), sorted in v. Returns how many cells it took (0: none, *med untouched). */
static int fph_size_median(const double *cr, const double *rows, int ncell, double sz, int skip,
                           double *v, double *med)
{
    int n = 0;
    for (int c = 0; c < ncell; c++)
        if (c != skip && (sz < 0 || rows[c] == sz))
            v[n++] = cr[c];
    if (n == 0)
        return 0;
    gsl_sort(v, 1, (size_t)n);
    *med = fit_group_median(v, (size_t)n);
    return n;
}

/* Captured graph sizes (docs/fit.md "Captured graph sizes"). A CUDA graph is captured at
 * each size of its list and replayed for every batch padded to that size, so its kernels run
 * with the launch geometry chosen at that size (an attention's KV splits, a GEMM's tiles)
 * whatever the real rows: the groups' smooth forms across sizes miss some sizes as a whole
 * (specbench llama8b's split-KV attention: 16 real rows in the 24-row graph 17% above its
 * form, 40 in the 64-row graph 6% below, both calibration cells; its held-out rows at those
 * sizes 2-4% off in opposite directions). Each graph replay's measured total against the
 * model's, relative (r), robust mean per cell (trace, tokens, query tokens a row); a size's
 * factor is 1 + its cells' median r less the median r over every graph cell (the phase's
 * level is left as the groups and the gap group set it: a CUPTI trace's own cost is in every
 * cell). Kept when the sizes holding two cells or more (two draft lengths) predict each
 * cell from the others better with it than without (rms of the left-out relative errors);
 * with no such size nothing says otherwise and it is kept. FIT_GRAPH_SIZES=0: off. */
#define FIT_GRAPH_SIZES_MIN 2    /* sizes with cells: one size alone has nothing to differ from */
static void fph_graph_sizes(fr_run *R, int p, int skip_lb)
{
    fr_phase *P = &R->ph[p];
    wm_phase_model *pm = &R->res->model.phase[p];
    pm->n_graph_sizes = 0;
    pm->graph_size_sd = 0;
    if (fit_env_off("FIT_GRAPH_SIZES") || P->ninst < 2)
        return;
    int ni = P->ninst;
    fit_point *pts = malloc((size_t)ni * sizeof *pts);
    fit_cell *cells = malloc((size_t)(ni + 1) * sizeof *cells);
    double *rows = malloc((size_t)(ni + 1) * sizeof *rows), *cr = malloc((size_t)(ni + 1) * sizeof *cr);
    double *v = malloc((size_t)(ni + 1) * sizeof *v);
    double sz[WM_GRAPH_SIZES], fac[WM_GRAPH_SIZES];
    int nsz = 0, ncell = 0;
    if (!pts || !cells || !rows || !cr || !v)
        goto out;
    /* the graph sizes, increasing */
    for (int q = 0; q < ni; q++) {
        const fr_inst *in = &R->in[P->inst[q]];
        if (in->graph <= 0 || in->rows <= 0 || fph_gap_skips(P, in, skip_lb))
            continue;
        int k = 0;
        while (k < nsz && sz[k] < in->rows)
            k++;
        if (k < nsz && sz[k] == in->rows)
            continue;
        if (nsz == WM_GRAPH_SIZES)
            goto out;   /* more captured sizes than a model holds: none */
        memmove(&sz[k + 1], &sz[k], (size_t)(nsz - k) * sizeof *sz);
        sz[k] = in->rows;
        nsz++;
    }
    if (nsz < FIT_GRAPH_SIZES_MIN)
        goto out;
    /* each size's cells and their r */
    for (int k = 0; k < nsz; k++) {
        size_t m = 0;
        for (int q = 0; q < ni; q++) {
            const fr_inst *in = &R->in[P->inst[q]];
            if (in->graph <= 0 || in->rows != sz[k] || fph_gap_skips(P, in, skip_lb))
                continue;
            double kv = fit_inst_kv(in, pm->kv_rows), qr = fit_inst_q(in);
            double mu = fph_groups_us(&R->res->model, p, P->G + 1, in->tokens, kv, qr);
            if (!(mu > 0))
                continue;
            pts[m++] = (fit_point){.tokens = in->tokens, .kv_tokens = kv, .trace = in->trace,
                                   .q_per_row = qr, .us = fph_resid(R, P, p, q, 0, kv, qr) / mu};
        }
        int nc = m ? fph_cells(pts, m, cells + ncell) : 0;
        if (nc < 0)
            goto out;
        for (int c = 0; c < nc; c++) {
            rows[ncell + c] = sz[k];
            cr[ncell + c] = cells[ncell + c].us_mean;
        }
        ncell += nc;
    }
    double rmed = 0, med = 0;
    fph_size_median(cr, rows, ncell, -1, -1, v, &rmed);
    /* the factors, and the left-out check over the sizes with two cells or more */
    double ss_with = 0, ss_without = 0;
    int nloo = 0;
    for (int k = 0; k < nsz; k++) {
        int n = fph_size_median(cr, rows, ncell, sz[k], -1, v, &med);
        fac[k] = 1 + med - rmed;
        for (int c = 0; n >= 2 && c < ncell; c++) {
            if (rows[c] != sz[k])
                continue;
            fph_size_median(cr, rows, ncell, sz[k], c, v, &med);
            double adj = med - rmed, e0 = cr[c] - rmed;
            ss_without += e0 * e0;
            ss_with += (e0 - adj) * (e0 - adj);
            nloo++;
        }
    }
    /* the sizes' spread around the smooth form: a size without a factor is that far off */
    double ss_f = 0;
    for (int k = 0; k < nsz; k++)
        ss_f += (fac[k] - 1) * (fac[k] - 1);
    pm->graph_size_sd = fmin(sqrt(ss_f / nsz), BND_FRAC_MAX);
    int keep = nloo == 0 || ss_with < ss_without;
    for (int k = 0; keep && k < nsz; k++)
        if (!bnd_ok(&bnd_size_factor, fac[k]))
            keep = 0;   /* a size its groups miss by half or more: the form is wrong, not the size */
    if (keep) {
        pm->n_graph_sizes = nsz;
        memcpy(pm->graph_size_rows, sz, (size_t)nsz * sizeof *sz);
        memcpy(pm->graph_size_factor, fac, (size_t)nsz * sizeof *fac);
    }
    if (R->o && R->o->log) {
        char list[1024] = "";
        size_t len = 0;
        for (int k = 0; k < nsz && len + 32 < sizeof list; k++)
            len += (size_t)snprintf(list + len, sizeof list - len, "%s%g: %.4f", k ? ", " : "", sz[k], fac[k]);
        fprintf(R->o->log, "specsim fit: phase %s: captured graph sizes (rows: factor) %s %s, %.2f%% rms apart",
                wm_phase_name[p], list, keep ? "kept" : "not kept", 100 * pm->graph_size_sd);
        if (nloo)
            fprintf(R->o->log, " (left-out cells: %.2f%% rms with them, %.2f%% without)",
                    100 * sqrt(ss_with / nloo), 100 * sqrt(ss_without / nloo));
        else
            fprintf(R->o->log, " (no size with two cells to leave one out)");
        fputc('\n', R->o->log);
    }
out:
    free(pts);
    free(cells);
    free(rows);
    free(cr);
    free(v);
}

int fit_phase_fit(fr_run *R, int p)
{
    fr_phase *P = &R->ph[p];
    size_t ni = (size_t)P->ninst;
    int rc = -1;
    fph_buf b = {malloc(ni * sizeof *b.pts), malloc(ni * sizeof *b.v), malloc(ni * sizeof *b.bv),
                 malloc(ni * sizeof *b.vx), malloc(ni * sizeof *b.wt), malloc(ni * sizeof *b.wb),
                 malloc(ni * sizeof *b.wc), -1, 0, 0};
    if (!b.pts || !b.v || !b.bv || !b.vx || !b.wt || !b.wb || !b.wc) {
        fit_run_fail(R, "out of memory");
        goto out;
    }
    int nlb = fph_idle(R, P, p);
    P->gap_graph = fph_gap_graph_only(R, P);
    fph_present(R, P, p);
    int skip_lb = fph_skip_launch_bound(R, P, nlb);
    if (fph_kv_rows(R, p, skip_lb, &b) || fph_expert_row_exp(R, p, skip_lb, &b))
        goto out;
    double bias;
    if (fph_total_bias(R, p, skip_lb, &bias) && R->o && R->o->log)
        fprintf(R->o->log, "specsim fit: phase %s: the groups' sum %+.1f us off the measured "
                "totals at the median configuration: into %s\n", wm_phase_name[p],
                -bias, R->res->model.phase[p].groups[P->G].name);
    fph_eager_gap(R, p);
    fph_graph_sizes(R, p, skip_lb);
    fph_host_gap(R, p, b.v, b.vx);
    fph_colls(R, p, b.v, b.bv);
    rc = 0;
out:
    free(b.pts);
    free(b.v);
    free(b.bv);
    free(b.vx);
    free(b.wt);
    free(b.wb);
    free(b.wc);
    return rc;
}

/* Per phase and cell (trace, tokens, q): measured GPU time per forward vs the model's sum,
 * the KV context on the phase's KV-rows basis. *cells_out (malloc'd, *nc_out of them). */
static int fph_totals(fr_run *R, int p, fit_cell **cells_out, int *nc_out)
{
    fr_phase *P = &R->ph[p];
    const wm_model *m = &R->res->model;
    int kv_rows = m->phase[p].kv_rows;
    int G1 = P->G + 1;
    fit_point *pts = malloc((size_t)P->ninst * sizeof *pts);
    fit_cell *cells = calloc((size_t)P->ninst + 1, sizeof *cells);
    for (int q = 0; pts && q < P->ninst; q++) {
        const fr_inst *in = &R->in[P->inst[q]];
        double s = 0;
        for (int g = 0; g < G1; g++)
            s += P->Y[(size_t)q * (size_t)G1 + (size_t)g];
        pts[q] = (fit_point){.tokens = in->tokens, .kv_tokens = fit_inst_kv(in, kv_rows),
                             .us = s, .trace = in->trace, .q_per_row = fit_inst_q(in)};
    }
    int nc = pts && cells ? fph_cells(pts, (size_t)P->ninst, cells) : -1;
    free(pts);
    if (nc < 0) {
        free(cells);
        return fit_run_fail(R, "out of memory");
    }
    for (int c = 0; c < nc; c++)
        cells[c].fit_us = fph_groups_us(m, p, G1, cells[c].tokens, cells[c].kv_tokens,
                                        cells[c].q_per_row);
    *cells_out = cells;
    *nc_out = nc;
    return 0;
}

int fit_phase_totals(fr_run *R, int p)
{
    fit_phase_res *pr = &R->res->phase[p];
    return fph_totals(R, p, &pr->total, &pr->ncells);
}
