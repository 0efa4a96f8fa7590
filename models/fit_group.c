/* fit_group: one group's points -> its cost equation (fit.h's fit_group): cells and outliers,
 * the columns chosen by cross-validation, the knee, non-negative least squares (GSL), the
 * attention tiles; the waves (fit_waves.c) and the GEMM sweep (fit_sweep.c) around it.
 * In: fit_point per phase instance; out: a wm_group and fit_group_stats.
 * Workload: 10^2..10^5 points, tens of cells, a few columns. */
#include "fit_int.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_multifit.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <gsl/gsl_vector.h>

/* Regression points kept per cell (one configuration in one trace): a capture of a few
 * seconds holds 10^3 instances per cell; 256 evenly spaced ones pin the mean and the KV
 * slope as well and keep a fit of 40 groups x 10 knees under a second. */
#define FIT_CELL_POINTS 256
/* A point further than FIT_OUTLIER_K robust sd (1.4826 MAD) plus 10% of the median plus
 * 0.5 us from its cell's median is left out (capture and warm-up iterations, a host hiccup
 * that stalled the GPU): the simulator's jitter is for the steady state's spread. */
#define FIT_OUTLIER_K 8.0
#define FIT_OUTLIER_FRAC 0.10
#define FIT_OUTLIER_US 0.5
/* Relative weights use max(cell mean, FIT_FLOOR_FRAC * median cell mean, FIT_FLOOR_US) so
 * that a group that is ~0 in one cell (gaps) does not take all the weight. */
#define FIT_FLOOR_FRAC 0.05
#define FIT_FLOOR_US 0.01

/* ---- one group: weighted least squares with a knee ---------------------------------------- */

double fit_experts(int experts, int topk, double tokens)
{
    if (experts <= 0 || topk <= 0 || tokens <= 0)
        return 0;
    double e = experts, k = topk;
    if (k >= e)
        return e;
    return e * (1.0 - pow(1.0 - k / e, tokens));   /* as wm_experts_touched */
}

enum { COL_BASE, COL_TOK, COL_EXP, COL_KV, COL_KVQ, COL_TOK0, COL_WAVE, COL_KVQ2, NCOL };

/* What the columns need besides a point: the MoE experts (E, top-k) and the tile count past
 * which the KV x tiles slope changes (COL_KVQ2; 0: no such column). */
typedef struct {
    int    E, k;
    double tknee;
    double row_exp;   /* fit_group_ctx.expert_row_exp */
} fg_par;

/* The experts point p's forward touches (the context's routing of a row's tokens). */
static double fg_experts(const fg_par *fp, const fit_point *p)
{
    return fit_experts(fp->E, fp->k, wm_routed_tokens(p->tokens, fit_point_q(p), fp->row_exp));
}

static int fg_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* qsort_r comparator: point indices by (trace, tokens, index). */
int fit_group_cmp_idx(const void *a, const void *b, void *ctx)
{
    const fit_point *pts = ctx;
    const fit_point *p = &pts[*(const size_t *)a], *q = &pts[*(const size_t *)b];
    if (p->trace != q->trace)
        return p->trace < q->trace ? -1 : 1;
    if (p->tokens != q->tokens)
        return p->tokens < q->tokens ? -1 : 1;
    if (p->q_per_row != q->q_per_row)
        return p->q_per_row < q->q_per_row ? -1 : 1;
    return (*(const size_t *)a > *(const size_t *)b) - (*(const size_t *)a < *(const size_t *)b);
}

static double fg_col(int col, const fit_point *p, double knee, const fg_par *fp)
{
    switch (col) {
    case COL_BASE: return 1.0;
    case COL_TOK:  return p->tokens > knee ? p->tokens - knee : 0.0;
    case COL_EXP:  return fg_experts(fp, p);
    case COL_KV:   return p->kv_tokens / 1000.0;
    case COL_KVQ:  return p->kv_tokens / 1000.0 * fit_point_q(p);
    case COL_KVQ2: return fp->tknee > 0 && fit_point_q(p) > fp->tknee ?
                          p->kv_tokens / 1000.0 * (fit_point_q(p) - fp->tknee) : 0.0;
    case COL_WAVE: return p->waves;
    default:       return p->tokens;
    }
}

/* Non-negative weighted fit over the available columns: fit, drop the column with the most
 * negative contribution, refit. coef[] gets 0 for dropped columns. Returns chisq or -1. */
static double fg_nonneg(const fit_point *pts, const size_t *use, const double *w, size_t m,
                        const int avail[NCOL], double knee, const fg_par *fp, double coef[NCOL])
{
    int active[NCOL];
    memcpy(active, avail, sizeof active);
    for (;;) {
        int cols[NCOL], p = 0;
        for (int c = 0; c < NCOL; c++)
            if (active[c])
                cols[p++] = c;
        for (int c = 0; c < NCOL; c++)
            coef[c] = 0;
        /* fewer points than terms: GSL's SVD does not take it (and once left its workspace
         * unwritten); never solved, the caller refuses (fg_knee_search) or skips it */
        if (m < (size_t)p)
            return -1;
        if (p == 0) {
            double chisq = 0;
            for (size_t i = 0; i < m; i++)
                chisq += w[i] * pts[use[i]].us * pts[use[i]].us;
            return chisq;
        }
        gsl_matrix *X = gsl_matrix_alloc(m, (size_t)p);
        gsl_vector *y = gsl_vector_alloc(m), *wv = gsl_vector_alloc(m), *cv = gsl_vector_alloc((size_t)p);
        gsl_matrix *cov = gsl_matrix_alloc((size_t)p, (size_t)p);
        gsl_multifit_linear_workspace *ws = gsl_multifit_linear_alloc(m, (size_t)p);
        double chisq = -1;
        double mean[NCOL] = {0};
        if (X && y && wv && cv && cov && ws) {
            for (size_t i = 0; i < m; i++) {
                const fit_point *pt = &pts[use[i]];
                for (int j = 0; j < p; j++) {
                    double v = fg_col(cols[j], pt, knee, fp);
                    gsl_matrix_set(X, i, (size_t)j, v);
                    mean[cols[j]] += w[i] * v;
                }
                gsl_vector_set(y, i, pt->us);
                gsl_vector_set(wv, i, w[i]);
            }
            if (gsl_multifit_wlinear(X, wv, y, cv, cov, &chisq, ws) != GSL_SUCCESS)
                chisq = -1;
        }
        int drop = -1;
        double worst = 0;
        if (chisq >= 0) {
            for (int j = 0; j < p; j++) {
                double cj = gsl_vector_get(cv, (size_t)j);
                coef[cols[j]] = cj;
                double contrib = cj * mean[cols[j]];
                if (cj < 0 && (drop < 0 || contrib < worst)) {
                    drop = cols[j];
                    worst = contrib;
                }
            }
        }
        gsl_multifit_linear_free(ws);
        gsl_matrix_free(cov);
        gsl_vector_free(cv);
        gsl_vector_free(wv);
        gsl_vector_free(y);
        gsl_matrix_free(X);
        if (chisq < 0)
            return -1;
        if (drop < 0)
            return chisq;
        active[drop] = 0;
    }
}

static double fg_eval(const double coef[NCOL], double knee, const fg_par *fp, double tokens,
                      double kv, double q, double waves)
{
    fit_point p = {.tokens = tokens, .kv_tokens = kv, .q_per_row = q, .waves = waves};
    double u = 0;
    for (int c = 0; c < NCOL; c++)
        u += coef[c] * fg_col(c, &p, knee, fp);
    return u;
}

/* Leave-one-cell-out needs enough cells to mean something: with 6 columns and a knee, fewer
 * than 8 cells leave no more than a point or two per parameter (the synthetic 6-configuration
 * calibration of tests/test_fit.c drops its attention KV term at 4-5 cells). */
#define FIT_CV_MIN_CELLS 8

/* Knee search over 0 and the distinct token counts of the points use[0..m) below the
 * largest, non-negative columns; ties go to the larger knee. Returns chisq or -1. */
static double fg_fit_knee(const fit_point *pts, const size_t *use, const double *w, size_t m,
                          const int avail[NCOL], const fg_par *fp, double *knee_out,
                          double coef[NCOL])
{
    double best = -1, cf[NCOL];
    double *ux = malloc((m + 1) * sizeof *ux);
    if (!ux)
        return -1;
    size_t nux = 0;
    for (size_t i = 0; i < m; i++)
        ux[nux++] = pts[use[i]].tokens;
    qsort(ux, nux, sizeof *ux, fg_cmp_double);
    size_t d = 0;
    for (size_t i = 0; i < nux; i++)
        if (i == 0 || ux[i] != ux[d - 1])
            ux[d++] = ux[i];
    *knee_out = 0;
    for (size_t q = 0; q < d; q++) {
        double knee = q == 0 ? 0 : ux[q - 1];
        double chisq = fg_nonneg(pts, use, w, m, avail, knee, fp, cf);
        if (chisq < 0) {
            free(ux);
            return -1;
        }
        if (best < 0 || chisq <= best * (1 + 1e-9) + 1e-300) {
            best = chisq;
            *knee_out = knee;
            memcpy(coef, cf, sizeof cf);
        }
    }
    free(ux);
    return best;
}

/* Chooses the optional columns (KV, KV x attention tiles, the all-token slope) of a group by
 * leave-one-cell-out cross-validation on the cell means: every subset of the available
 * columns is fitted (knee search, non-negative) without one cell and scored on the cell
 * left out (relative error squared, summed over cells); the subset with the lowest score
 * wins, fewer columns on a tie (within 1%). A column a group does not need (a KV term for a
 * GEMM, which only follows the token count) then does not take up the correlation of KV
 * with the batch size. Narrows avail[] in place. Needs FIT_CV_MIN_CELLS cells, else keeps
 * avail.
 * Returns 0, or -1 when out of memory. */
void fit_resid_two_part(const double *rel, const double *cost, size_t n, double *frac,
                        double *abs_us)
{
    double sy = 0, sx = 0;
    for (size_t j = 0; j < n; j++) {
        sy += rel[j] * rel[j];
        sx += 1 / (cost[j] * cost[j]);
    }
    *frac = n ? sqrt(sy / (double)n) : 0;
    *abs_us = 0;
    if (n < 3)
        return;
    double mx = sx / (double)n, my = sy / (double)n, sxx = 0, sxy = 0, sx2 = 0, sx2y = 0;
    for (size_t j = 0; j < n; j++) {
        double x = 1 / (cost[j] * cost[j]), y = rel[j] * rel[j];
        sxx += (x - mx) * (x - mx);
        sxy += (x - mx) * (y - my);
        sx2 += x * x;
        sx2y += x * y;
    }
    /* one cost (or costs too alike to tell the parts apart): the relative part alone */
    if (!(sxx > 1e-12 * sx2) || !(sxy > 0))
        return;
    double slope = sxy / sxx, icpt = my - slope * mx;
    if (icpt >= 0) {
        *frac = sqrt(icpt);
        *abs_us = sqrt(slope);
    } else {                 /* the absolute part alone, through the origin */
        *frac = 0;
        *abs_us = sqrt(sx2y / sx2);
    }
}

static int fg_choose_columns(const fit_cell *cells, size_t ncell, double floor_us,
                             const fg_par *fp, int avail[NCOL], double *loo_rel,
                             double *loo_frac, double *loo_abs_us)
{
    *loo_rel = -1;
    *loo_frac = -1;
    *loo_abs_us = 0;
    if (ncell < FIT_CV_MIN_CELLS)
        return 0;
    int opt[NCOL], nopt = 0;
    for (int c = COL_KV; c < NCOL; c++)   /* the token and expert columns stay */
        if (avail[c])
            opt[nopt++] = c;
    fit_point *cp = malloc(ncell * sizeof *cp);
    double *w = malloc(ncell * sizeof *w);
    size_t *use = malloc(ncell * sizeof *use);
    double *rel = malloc(ncell * sizeof *rel), *best_rel = malloc(ncell * sizeof *best_rel);
    if (!cp || !w || !use || !rel || !best_rel) {
        free(cp);
        free(w);
        free(use);
        free(rel);
        free(best_rel);
        return -1;
    }
    for (size_t j = 0; j < ncell; j++) {
        cp[j] = (fit_point){.tokens = cells[j].tokens, .kv_tokens = cells[j].kv_tokens,
                            .us = cells[j].us_mean, .trace = cells[j].trace,
                            .q_per_row = cells[j].q_per_row, .waves = cells[j].waves};
        double ref = cells[j].us_mean > floor_us ? cells[j].us_mean : floor_us;
        w[j] = 1.0 / (ref * ref);
    }
    double best_score = -1;
    int best_mask = (1 << nopt) - 1, best_n = nopt;
    for (int mask = 0; mask < (1 << nopt); mask++) {
        int av[NCOL] = {[COL_BASE] = 1, [COL_TOK] = avail[COL_TOK], [COL_EXP] = avail[COL_EXP]};
        int nc = 0;
        for (int b = 0; b < nopt; b++)
            if (mask & (1 << b))
                av[opt[b]] = 1, nc++;
        double score = 0;
        for (size_t out = 0; out < ncell && score >= 0; out++) {
            size_t m = 0;
            for (size_t j = 0; j < ncell; j++)
                if (j != out)
                    use[m++] = j;
            double knee, coef[NCOL];
            if (fg_fit_knee(cp, use, w, m, av, fp, &knee, coef) < 0) {
                score = -1;
                break;
            }
            double pred = fg_eval(coef, knee, fp, cp[out].tokens, cp[out].kv_tokens,
                                  cp[out].q_per_row, cp[out].waves);
            double r = pred - cp[out].us;
            score += w[out] * r * r;
            rel[out] = fabs(r) * sqrt(w[out]);
        }
        if (score < 0)
            continue;
        if (best_score < 0 || score < best_score * (1 - 0.01) ||
            (score <= best_score * (1 + 0.01) && nc < best_n)) {
            best_score = score;
            best_mask = mask;
            best_n = nc;
            memcpy(best_rel, rel, ncell * sizeof *rel);
        }
    }
    for (int b = 0; b < nopt; b++)
        avail[opt[b]] = (best_mask >> b) & 1;
    /* the rms of the left-out cells' relative errors, each counted up to the cell's whole
     * cost (a group ~0 in one cell, priced from the weights' floor, would otherwise stand
     * for thousands of percent: llama8b's verify GPU idle read 14.1 once) */
    if (best_score >= 0) {
        double s2 = 0;
        for (size_t j = 0; j < ncell; j++) {
            double r = fmin(best_rel[j], FIT_LOO_REL_MAX);
            s2 += r * r;
            best_rel[j] = r;
            rel[j] = 1 / sqrt(w[j]);      /* the cell's cost (floored), for the split */
        }
        *loo_rel = sqrt(s2 / (double)ncell);
        fit_resid_two_part(best_rel, rel, ncell, loo_frac, loo_abs_us);
    }
    free(cp);
    free(w);
    free(use);
    free(rel);
    free(best_rel);
    return 0;
}

/* fg_fit_one's state: the points sorted into cells, the outliers, the regression points. */
typedef struct {
    const fit_point *pts;
    size_t n;
    const fit_group_ctx *c;
    fg_par fp;
    const char *ph, *gn;      /* phase and group, for messages */
    size_t *idx;              /* point indices by (trace, tokens, q): cells are runs of it */
    double *ux;               /* distinct token counts, nux */
    size_t nux;
    size_t *cstart;           /* cell j: idx[cstart[j] .. cstart[j+1]) */
    size_t ncell;
    fit_cell *cells;          /* ncell; handed to the statistics when they are asked for */
    char *bad;                /* by position in idx: an outlier */
    size_t nbad;
    double *tmp;              /* scratch, max(ncell, n) */
    double floor_us;          /* the weights' floor (FIT_FLOOR_*) */
    size_t *use;              /* regression points (indices into pts), m */
    double *w;                /* their weights */
    size_t m;
} fg_one;

/* The trace name of point i, for messages. */
static const char *fg_trn(const fg_one *S, size_t i)
{
    const fit_group_ctx *c = S->c;
    return S->pts[i].trace >= 0 && S->pts[i].trace < c->ntraces && c->trace_names ?
           c->trace_names[S->pts[i].trace] : "(trace)";
}

static int fg_oom(const fg_one *S, char *err, size_t errlen)
{
    snprintf(err, errlen, "%s: phase %s: group %s: out of memory (%zu points)", fg_trn(S, 0),
             S->ph, S->gn, S->n);
    return -1;
}

/* Refuses a NaN, infinite or negative value, naming the trace, field and value. */
static int fg_check_points(const fg_one *S, char *err, size_t errlen)
{
    const fit_point *pts = S->pts;
    for (size_t i = 0; i < S->n; i++) {
        const char *what = NULL, *field = "us";
        double v = pts[i].us;
        if (!isfinite(v))
            what = "not a finite number";
        else if (v < 0)
            what = "negative duration";
        else if (!isfinite(pts[i].tokens) || pts[i].tokens <= 0)
            field = "tokens", v = pts[i].tokens, what = "token count must be finite and > 0";
        else if (!isfinite(pts[i].kv_tokens) || pts[i].kv_tokens < 0)
            field = "kv_tokens", v = pts[i].kv_tokens, what = "KV context must be finite and >= 0";
        if (what) {
            snprintf(err, errlen, "%s: phase %s: group %s: field %s: value %g (instance at "
                     "tokens %g): %s", fg_trn(S, i), S->ph, S->gn, field, v, pts[i].tokens, what);
            return -1;
        }
    }
    return 0;
}

/* The distinct token counts (S->ux); refuses a single one, naming every trace that holds it. */
static int fg_token_counts(fg_one *S, char *err, size_t errlen)
{
    const fit_point *pts = S->pts;
    size_t n = S->n;
    S->idx = malloc(n * sizeof *S->idx);
    S->ux = malloc(n * sizeof *S->ux);
    if (!S->idx || !S->ux)
        return fg_oom(S, err, errlen);
    for (size_t i = 0; i < n; i++) {
        S->idx[i] = i;
        S->ux[i] = pts[i].tokens;
    }
    qsort(S->ux, n, sizeof *S->ux, fg_cmp_double);
    size_t nux = 0;
    for (size_t i = 0; i < n; i++)
        if (i == 0 || S->ux[i] != S->ux[nux - 1])
            S->ux[nux++] = S->ux[i];
    S->nux = nux;
    if (nux >= 2)
        return 0;
    const fit_group_ctx *c = S->c;
    char names[400] = "";
    size_t used = 0;
    for (int t = 0; t < c->ntraces && c->trace_names; t++) {
        int has = 0;
        for (size_t i = 0; i < n && !has; i++)
            has = pts[i].trace == t;
        if (has && used < sizeof names - 1)
            used += (size_t)snprintf(names + used, sizeof names - used, "%s%s",
                                     used ? ", " : "", c->trace_names[t]);
    }
    snprintf(err, errlen, "%s: phase %s: group %s: field tokens: value %g: only one "
             "distinct token count in %zu instances; a cost vs tokens needs at least two "
             "(capture another batch size or draft length)", used ? names : "(traces)",
             S->ph, S->gn, S->ux[0], n);
    return -1;
}

/* Cells of (trace, tokens, q), their outliers (S->bad), means and spreads, and the weights'
 * floor. */
static int fg_cells(fg_one *S, char *err, size_t errlen)
{
    const fit_point *pts = S->pts;
    size_t n = S->n, *idx = S->idx;
    qsort_r(idx, n, sizeof *idx, fit_group_cmp_idx, (void *)pts);
    size_t ncell = 0;
    S->cstart = malloc((n + 1) * sizeof *S->cstart);
    if (!S->cstart)
        return fg_oom(S, err, errlen);
    size_t *cstart = S->cstart;
    for (size_t i = 0; i < n; i++) {
        const fit_point *p = &pts[idx[i]];
        if (i == 0 || p->trace != pts[idx[i - 1]].trace || p->tokens != pts[idx[i - 1]].tokens ||
            p->q_per_row != pts[idx[i - 1]].q_per_row)
            cstart[ncell++] = i;
    }
    cstart[ncell] = n;
    S->ncell = ncell;
    S->cells = calloc(ncell, sizeof *S->cells);
    S->tmp = malloc((ncell > n ? ncell : n) * sizeof *S->tmp);
    S->bad = calloc(n, 1);
    if (!S->cells || !S->tmp || !S->bad)
        return fg_oom(S, err, errlen);
    double *tmp = S->tmp;
    char *bad = S->bad;
    size_t nbad = 0;
    for (size_t j = 0; j < ncell; j++) {
        size_t a = cstart[j], cn = cstart[j + 1] - a;
        for (size_t i = 0; i < cn; i++)
            tmp[i] = pts[idx[a + i]].us;
        gsl_sort(tmp, 1, cn);
        double med = gsl_stats_median_from_sorted_data(tmp, 1, cn);
        for (size_t i = 0; i < cn; i++)
            tmp[i] = fabs(pts[idx[a + i]].us - med);
        gsl_sort(tmp, 1, cn);
        double lim = FIT_OUTLIER_K * 1.4826 * gsl_stats_median_from_sorted_data(tmp, 1, cn) +
                     FIT_OUTLIER_FRAC * fabs(med) + FIT_OUTLIER_US;
        for (size_t i = 0; i < cn; i++)
            if (fabs(pts[idx[a + i]].us - med) > lim)
                bad[a + i] = 1, nbad++;
    }
    S->nbad = nbad;
    for (size_t j = 0; j < ncell; j++) {
        fit_cell *cl = &S->cells[j];
        double s = 0, s2 = 0, kv = 0;
        int good = 0;
        for (size_t i = cstart[j]; i < cstart[j + 1]; i++) {
            if (bad[i])
                continue;
            s += pts[idx[i]].us;
            s2 += pts[idx[i]].us * pts[idx[i]].us;
            kv += pts[idx[i]].kv_tokens;
            good++;
        }
        cl->n = good;
        cl->trace = pts[idx[cstart[j]]].trace;
        cl->tokens = pts[idx[cstart[j]]].tokens;
        cl->kv_tokens = kv / cl->n;
        cl->q_per_row = fit_point_q(&pts[idx[cstart[j]]]);
        cl->waves = pts[idx[cstart[j]]].waves;
        cl->us_mean = s / cl->n;
        double var = cl->n > 1 ? (s2 - s * s / cl->n) / (cl->n - 1) : 0;
        cl->us_sd = var > 0 ? sqrt(var) : 0;
        tmp[j] = cl->us_mean;
    }
    qsort(tmp, ncell, sizeof *tmp, fg_cmp_double);
    S->floor_us = FIT_FLOOR_FRAC * tmp[ncell / 2];
    if (S->floor_us < FIT_FLOOR_US)
        S->floor_us = FIT_FLOOR_US;
    return 0;
}

/* Regression points: at most FIT_CELL_POINTS per cell, each cell weighing the same. */
static int fg_sample(fg_one *S, char *err, size_t errlen)
{
    S->use = malloc(S->n * sizeof *S->use);
    S->w = malloc(S->n * sizeof *S->w);
    if (!S->use || !S->w)
        return fg_oom(S, err, errlen);
    size_t m = 0;
    for (size_t j = 0; j < S->ncell; j++) {
        size_t cn = 0, a = S->cstart[j];
        for (size_t i = a; i < S->cstart[j + 1]; i++)
            if (!S->bad[i])
                S->tmp[cn++] = (double)i;
        size_t take = cn < FIT_CELL_POINTS ? cn : FIT_CELL_POINTS;
        double ref = S->cells[j].us_mean > S->floor_us ? S->cells[j].us_mean : S->floor_us;
        for (size_t q = 0; q < take; q++) {
            S->use[m] = S->idx[(size_t)S->tmp[q * cn / take]];
            S->w[m] = 1.0 / ((double)take * ref * ref);
            m++;
        }
    }
    S->m = m;
    return 0;
}

/* The columns the points can tell apart (before cross-validation narrows them). */
static void fg_avail(const fg_one *S, double tknee, int avail[NCOL])
{
    const fit_point *pts = S->pts;
    const fit_group_ctx *c = S->c;
    for (int q = 0; q < NCOL; q++)
        avail[q] = q == COL_BASE || q == COL_TOK || q == COL_TOK0;
    double emin = INFINITY, emax = -INFINITY, kmin = INFINITY, kmax = -INFINITY;
    double wmin = INFINITY, wmax = -INFINITY;
    double qmin = INFINITY, qmax = -INFINITY;
    for (size_t i = 0; i < S->n; i++) {
        if (pts[i].kv_tokens > 0) {
            qmin = fmin(qmin, fit_point_q(&pts[i]));
            qmax = fmax(qmax, fit_point_q(&pts[i]));
        }
        double e = fg_experts(&S->fp, &pts[i]);
        emin = fmin(emin, e);
        emax = fmax(emax, e);
        kmin = fmin(kmin, pts[i].kv_tokens);
        kmax = fmax(kmax, pts[i].kv_tokens);
        wmin = fmin(wmin, pts[i].waves);
        wmax = fmax(wmax, pts[i].waves);
    }
    /* the wave column where the group's kernel runs a different number of waves */
    avail[COL_WAVE] = c->wave_capacity > 0 && wmax > wmin;

    avail[COL_EXP] = c->moe_experts > 0 && emax - emin > 1e-9 * (emax + 1);
    avail[COL_KV] = kmax > 0 && kmax - kmin > 1e-6 * kmax;
    /* the KV x query-token column only where the query tokens per row vary (else it is the
     * KV column again) */
    avail[COL_KVQ] = avail[COL_KV] && qmax - qmin > 1e-9 * qmax && !c->kvq_off;
    /* the slope past the tile knee: its own cost for the last tile counts (the caller sets
     * tknee only with 3 tile counts or more) */
    avail[COL_KVQ2] = avail[COL_KVQ] && tknee > 0 && qmax > tknee;
}

/* Knee search: 0 and every distinct token count below the largest; ties go to the larger
 * knee (flat while weight-bound is the physical shape). Returns chisq, or -1 with err. */
/* Fewer measurements than the columns the points could tell apart (a small group seen in a
 * few configurations only: torchbench's "(gpu idle in phase)" of accept in 4 cells of 15,
 * H200 call 7): the columns least likely to matter go first, until the rest are determined:
 * what is left is what the measurements can say. Returns the columns dropped. */
static int fg_fit_to_measurements(const fg_one *S, int avail[NCOL])
{
    /* first dropped first: second-order attention terms, waves, experts, the token term
     * past a knee's absence, KV; base and tokens go last */
    static const int order[] = {COL_KVQ2, COL_KVQ, COL_WAVE, COL_EXP, COL_TOK0, COL_KV, COL_TOK};
    size_t p = 0;
    int dropped = 0;
    for (int c = 0; c < NCOL; c++)
        p += avail[c] != 0;
    for (size_t k = 0; k < sizeof order / sizeof *order && S->m < p && S->m > 0; k++)
        if (avail[order[k]]) {
            avail[order[k]] = 0;
            p--;
            dropped++;
        }
    return dropped;
}

static double fg_knee_search(const fg_one *S, const int avail[NCOL], double best[NCOL],
                             double *best_knee, char *err, size_t errlen)
{
    double best_chisq = -1, cf[NCOL];
    *best_knee = 0;
    /* an under-determined fit is refused before the solver runs: the model would be
     * whatever the solver made of too few equations (a -nan model, once) */
    static const char *const colname[NCOL] = {"base_us", "per_token_us", "per_expert_us",
        "per_kv_ktoken_us", "per_kvq_ktoken_us", "per_token_all_us", "per_wave_us",
        "per_kvq2_ktoken_us"};
    size_t p = 0;
    char cols[256] = "";
    for (int c = 0; c < NCOL; c++)
        if (avail[c]) {
            size_t used = strlen(cols);
            snprintf(cols + used, sizeof cols - used, "%s%s", p ? ", " : "", colname[c]);
            p++;
        }
    if (S->m < p) {
        snprintf(err, errlen, "%s: phase %s: group %s: %zu measurements for %zu terms (%s): "
                 "under-determined, not fitted (capture more batch sizes, draft lengths or "
                 "contexts)", fg_trn(S, S->idx[0]), S->ph, S->gn, S->m, p, cols);
        return -1;
    }
    for (size_t q = 0; q < S->nux; q++) {
        double knee = q == 0 ? 0 : S->ux[q - 1];
        double chisq = fg_nonneg(S->pts, S->use, S->w, S->m, avail, knee, &S->fp, cf);
        if (chisq < 0) {
            snprintf(err, errlen, "%s: phase %s: group %s: the least-squares solver failed "
                     "(%zu points)", fg_trn(S, S->idx[0]), S->ph, S->gn, S->m);
            return -1;
        }
        if (best_chisq < 0 || chisq <= best_chisq * (1 + 1e-9) + 1e-300) {
            best_chisq = chisq;
            *best_knee = knee;
            memcpy(best, cf, sizeof cf);
        }
    }
    return best_chisq;
}

/* The coefficients into the group (the wave geometry only with a wave term). */
static void fg_write_group(const fit_group_ctx *c, const double best[NCOL], double knee,
                           double tknee, wm_group *out)
{
    out->base_us = best[COL_BASE];
    out->per_token_us = best[COL_TOK];
    out->knee_tokens = knee;
    out->per_expert_us = best[COL_EXP];
    out->per_kv_ktoken_us = best[COL_KV];
    out->per_kvq_ktoken_us = best[COL_KVQ];
    out->per_kvq2_ktoken_us = best[COL_KVQ2];
    out->q_tile_knee = best[COL_KVQ2] > 0 ? tknee : 0;
    out->per_token_all_us = best[COL_TOK0];
    out->per_wave_us = best[COL_WAVE];
    out->wave_blocks0 = out->per_wave_us > 0 ? c->wave_blocks0 : 0;
    out->wave_blocks_per_token = out->per_wave_us > 0 ? c->wave_blocks_per_token : 0;
    out->wave_blocks_max = out->per_wave_us > 0 ? c->wave_blocks_max : 0;
    out->wave_blocks_per_expert = out->per_wave_us > 0 ? c->wave_blocks_per_expert : 0;
    out->wave_capacity = out->per_wave_us > 0 ? c->wave_capacity : 0;
}

/* A point's cost relative to the fit at it (the fit floored at S->floor_us). */
static double fg_rel(const fg_one *S, const double best[NCOL], double knee, const fit_point *p)
{
    double f = fg_eval(best, knee, &S->fp, p->tokens, p->kv_tokens, fit_point_q(p), p->waves);
    return p->us / (f > S->floor_us ? f : S->floor_us);
}

/* Spread of repeats around the fit, relative, pooled over cells. */
static double fg_sd_frac(const fg_one *S, const double best[NCOL], double knee)
{
    double ss = 0;
    size_t dof = 0;
    for (size_t j = 0; j < S->ncell; j++) {
        size_t a = S->cstart[j], b = S->cstart[j + 1];
        if (b - a < 2)
            continue;
        double rm = 0;
        size_t good = 0;
        for (size_t i = a; i < b; i++) {
            if (S->bad[i])
                continue;
            rm += fg_rel(S, best, knee, &S->pts[S->idx[i]]);
            good++;
        }
        if (good < 2)
            continue;
        rm /= (double)good;
        for (size_t i = a; i < b; i++) {
            if (S->bad[i])
                continue;
            double r = fg_rel(S, best, knee, &S->pts[S->idx[i]]) - rm;
            ss += r * r;
        }
        dof += good - 1;
    }
    return dof ? sqrt(ss / (double)dof) : 0;
}

/* The statistics: each cell's fitted cost, the relative errors; the cells move into st. */
static void fg_stats(fg_one *S, const double best[NCOL], double knee, double chisq,
                     fit_group_stats *st)
{
    double s2 = 0, mx = 0;
    for (size_t j = 0; j < S->ncell; j++) {
        fit_cell *cl = &S->cells[j];
        cl->fit_us = fg_eval(best, knee, &S->fp, cl->tokens, cl->kv_tokens, cl->q_per_row,
                             cl->waves);
        double ref = cl->us_mean > S->floor_us ? cl->us_mean : S->floor_us;
        double r = fabs(cl->fit_us - cl->us_mean) / ref;
        s2 += r * r;
        if (r > mx)
            mx = r;
    }
    st->chisq = chisq;
    st->rms_rel = sqrt(s2 / (double)S->ncell);
    st->max_rel = mx;
    st->ncols = 0;
    for (int q = 0; q < NCOL; q++)
        st->ncols += best[q] > 0;
    st->ncells = (int)S->ncell;
    st->noutliers = (int)S->nbad;
    st->cell = S->cells;
    S->cells = NULL;
}

/* Whether the KV context inside the cells moves less than their times do: the pooled
 * relative spread of each point's KV around its cell's mean below that of its time. A KV
 * cost can move a point's time by at most its KV's relative change; below the repeats'
 * spread it cannot be seen inside a cell, and a slope fitted there is the noise's (a run's
 * clock drift against requests advancing). Where the KV grows through a run (a long
 * capture, requests from empty to full) it is kept. Outliers left out. */
static int fg_kv_drift_below_noise(const fg_one *S)
{
    double skv = 0, sus = 0;
    size_t m = 0;
    for (size_t j = 0; j < S->ncell; j++) {
        const fit_cell *cl = &S->cells[j];
        for (size_t i = S->cstart[j]; i < S->cstart[j + 1]; i++) {
            const fit_point *p = &S->pts[S->idx[i]];
            if (S->bad[i] || !(cl->kv_tokens > 0) || !(cl->us_mean > 0))
                continue;
            double a = p->kv_tokens / cl->kv_tokens - 1, b = p->us / cl->us_mean - 1;
            skv += a * a;
            sus += b * b;
            m++;
        }
    }
    return m > 0 && skv < sus;
}

int fit_env_off(const char *name)
{
    const char *e = getenv(name);
    return e && strcmp(e, "0") == 0;
}

static int fg_fit_one(const fit_point *pts, size_t n, const fit_group_ctx *c, double tknee,
                      wm_group *out, fit_group_stats *st, double *chisq_out, char *err,
                      size_t errlen)
{
    fg_one S = {.pts = pts, .n = n, .c = c, .fp = {c->moe_experts, c->moe_topk, tknee, c->expert_row_exp},
                .ph = c->phase ? c->phase : "?", .gn = c->group ? c->group : "?"};
    int rc = -1;
    fit_point *kvp = NULL;
    if (st)
        memset(st, 0, sizeof *st);
    if (n == 0) {
        snprintf(err, errlen, "(no trace): phase %s: group %s: no measurements", S.ph, S.gn);
        return -1;
    }
    if (fg_check_points(&S, err, errlen))
        return -1;
    if (fg_token_counts(&S, err, errlen) || fg_cells(&S, err, errlen) ||
        fg_sample(&S, err, errlen))
        goto out;
    /* Fewer cells than the cross-validation needs: every available column is fitted and the
     * non-negative fit drops the ones that come out negative. Points carry their own KV
     * context, which drifts a few tenths of a percent inside a configuration as requests
     * advance (torchbench: 1210-1213 tokens a row); that drift against the repeats' noise
     * then decided between the KV and the token/expert columns (torch-moe's verify GEMMs: KV
     * alone at 110 us per 1000 KV tokens, or experts, tokens and 17 us per 1000; held-out
     * median 9.65% against 2.48%, models/cycle_validate.sh). So below FIT_CV_MIN_CELLS, where
     * the KV inside the cells moves less than their times do (fg_kv_drift_below_noise: 0.5%
     * against 5% there), the KV column is each point's cell mean, as the cross-validation
     * scores columns on cell means above it (docs/fit.md, "Few cells"). FIT_KV_CELL_MEAN=0
     * turns this off. */
    if (S.ncell < FIT_CV_MIN_CELLS && !fit_env_off("FIT_KV_CELL_MEAN") && fg_kv_drift_below_noise(&S)) {
        kvp = malloc(n * sizeof *kvp);
        if (!kvp) {
            fg_oom(&S, err, errlen);
            goto out;
        }
        memcpy(kvp, pts, n * sizeof *kvp);
        for (size_t j = 0; j < S.ncell; j++)
            for (size_t i = S.cstart[j]; i < S.cstart[j + 1]; i++)
                kvp[S.idx[i]].kv_tokens = S.cells[j].kv_tokens;
        S.pts = kvp;
    }
    int avail[NCOL];
    fg_avail(&S, tknee, avail);
    /* which optional columns: the set that predicts left-out cells best */
    double loo_rel, loo_frac, loo_abs_us;
    if (fg_choose_columns(S.cells, S.ncell, S.floor_us, &S.fp, avail, &loo_rel, &loo_frac,
                          &loo_abs_us) < 0) {
        fg_oom(&S, err, errlen);
        goto out;
    }
    double best[NCOL] = {0}, best_knee;
    int dropped = fg_fit_to_measurements(&S, avail);
    double best_chisq = fg_knee_search(&S, avail, best, &best_knee, err, errlen);
    if (best_chisq < 0)
        goto out;
    if (best[COL_TOK] <= 0)
        best_knee = 0;
    fg_write_group(c, best, best_knee, tknee, out);
    *chisq_out = best_chisq;
    out->sd_frac = fg_sd_frac(&S, best, best_knee);
    if (st) {
        fg_stats(&S, best, best_knee, best_chisq, st);
        st->loo_rel = loo_rel;
        st->loo_frac = loo_frac;
        st->loo_abs_us = loo_abs_us;
        st->cols_dropped = dropped;
    }
    rc = 0;
out:
    free(kvp);
    free(S.idx);
    free(S.use);
    free(S.cstart);
    free(S.w);
    free(S.ux);
    free(S.tmp);
    free(S.bad);
    free(S.cells);
    return rc;
}

static double fg_tiles(double q, double qt) { return qt > 1 ? ceil(q / qt - 1e-9) : q; }

/* tp = pts with each known query-token count replaced by its tiles at tiling qt. */
static void fg_tile_points(fit_point *tp, const fit_point *pts, size_t n, double qt)
{
    for (size_t i = 0; i < n; i++) {
        tp[i] = pts[i];
        if (tp[i].q_per_row > 0)
            tp[i].q_per_row = fg_tiles(tp[i].q_per_row, qt);
    }
}

/* The tile knee for the points at tiling qt: the second largest of 3 or more distinct tile
 * counts (the last count gets its own slope, COL_KVQ2), where the kernel variants step with
 * the tiles (matched: fg_tiles_match_variants gave 1 for qt: a variant per tile count, its
 * own occupancy); 0 otherwise (a kernel that loops over its tiles costs the same per tile,
 * and a slope from the last few cells extrapolates badly). */
static double fg_tile_knee(const fit_point *pts, size_t n, double qt, int matched)
{
    if (!matched)
        return 0;
    double t1 = -1, t2 = -1, t3 = -1;   /* the three largest distinct tile counts */
    for (size_t i = 0; i < n; i++) {
        if (!(pts[i].kv_tokens > 0))
            continue;
        double t = fg_tiles(fit_point_q(&pts[i]), qt);
        if (t == t1 || t == t2 || t == t3)
            continue;
        if (t > t1)
            t3 = t2, t2 = t1, t1 = t;
        else if (t > t2)
            t3 = t2, t2 = t;
        else if (t > t3)
            t3 = t;
    }
    return t3 > 0 ? t2 : 0;
}

/* Whether tiling qt agrees with the kernel variants: 1 when the points (those reading the
 * KV, of a known variant) of one tile count ran one variant and each variant one tile
 * count, 0 when not, -1 where the variants say nothing (fewer than two). */
static int fg_tiles_match_variants(const fit_point *pts, size_t n, double qt)
{
    enum { NV = 32 };
    double tile_of[NV + 1];
    int seen[NV + 1] = {0}, nvar = 0;
    for (size_t i = 0; i < n; i++) {
        int v = pts[i].variant;
        if (!(pts[i].kv_tokens > 0) || v <= 0 || v > NV)
            continue;
        double t = fg_tiles(fit_point_q(&pts[i]), qt);
        if (!seen[v]) {
            seen[v] = 1;
            tile_of[v] = t;
            nvar++;
        } else if (tile_of[v] != t) {
            return 0;   /* a variant at two tile counts */
        }
    }
    if (nvar < 2)
        return -1;
    for (int v = 1; v <= NV; v++)
        for (int u = v + 1; u <= NV; u++)
            if (seen[v] && seen[u] && tile_of[v] == tile_of[u])
                return 0;   /* two variants at one tile count */
    return 1;
}

/* Attention tiles: a row's q query tokens (times the GQA heads that share a KV head) fill
 * the rows of tensor-core MMA tiles, so attention compute over the KV grows with
 * ceil(q / q_tile), not with q (specbench's k_attn_split<1> serves q <= 4 and <2> q 5..8 at 4
 * query heads per KV head and 16-row tiles). q_tile is searched over powers of two (MMA tiles
 * and GQA groups are powers of two) up to the largest q seen, the KV x tiles column fitted
 * at each; the smallest weighted residual wins, ties (several tilings explain the data
 * alike, as with two distinct q) going to the coarser tiling, as ties of the knee go to
 * the flatter shape. q_tile 1 is the linear KV x q column. Where the points ran different
 * kernel variants (fit_point.variant), only tilings whose tile counts match the variants one
 * to one compete, if any does: with q 2, 4 and 7 on variants 1, 1, 2 that leaves q_tile 4.
 * With 3 tile counts or more, the last gets its own slope (COL_KVQ2): a kernel variant with
 * more tiles holds more shared memory and fewer blocks run at once (specbench's <3> costs 4x
 * per tile what <2> adds). Searched only for a group whose fit with q_tile 1 has a KV term
 * (cross-validated): a GEMM, whose KV merely grows with the batch, gets no tile term for a
 * noise-sized gain. */
static int fg_fit_tiles(const fit_point *pts, size_t n, const fit_group_ctx *c, wm_group *out,
                        fit_group_stats *st, char *err, size_t errlen)
{
    double qmax = 0, qmin = INFINITY, kvmax = 0;
    for (size_t i = 0; i < n; i++) {
        qmax = fmax(qmax, pts[i].q_per_row);
        qmin = fmin(qmin, pts[i].q_per_row);
        kvmax = fmax(kvmax, pts[i].kv_tokens);
    }
    /* which tilings (qt = 2^k up to the largest q) the kernel variants agree with */
    enum { NQT = 32 };
    int match[NQT], by_variant = 0, nqt = 0;
    for (double qt = 1; nqt < NQT && (nqt == 0 || qt <= qmax); qt *= 2) {
        match[nqt] = fg_tiles_match_variants(pts, n, qt) == 1;
        by_variant |= match[nqt++];
    }
    double chisq;
    if (fg_fit_one(pts, n, c, fg_tile_knee(pts, n, 1, match[0]), out, st, &chisq, err, errlen))
        return -1;
    if (qmax < 2 || qmax == qmin || kvmax <= 0 ||
        (out->per_kv_ktoken_us <= 0 && out->per_kvq_ktoken_us <= 0 &&
         out->per_kvq2_ktoken_us <= 0))
        return 0;   /* the group does not read the KV: no attention tiles */
    /* the kernel variants narrow the tilings where one of them matches */
    fit_point *tp = malloc(n * sizeof *tp);
    if (!tp) {
        snprintf(err, errlen, "phase %s: group %s: out of memory", c->phase ? c->phase : "?",
                 c->group ? c->group : "?");
        return -1;
    }
    double best_chisq = by_variant && !match[0] ? INFINITY : chisq;
    double best_qt = 1;
    int best_k = 0;
    double qt = 2;
    for (int k = 1; k < nqt; k++, qt *= 2) {
        if (by_variant && !match[k])
            continue;
        fg_tile_points(tp, pts, n, qt);
        wm_group g = *out;
        double cs;
        if (fg_fit_one(tp, n, c, fg_tile_knee(pts, n, qt, match[k]), &g, NULL, &cs, err,
                       errlen)) {
            free(tp);
            return -1;
        }
        if ((g.per_kvq_ktoken_us > 0 || g.per_kvq2_ktoken_us > 0) &&
            cs <= best_chisq * (1 + 1e-6) + 1e-300) {
            best_chisq = cs;
            best_qt = qt;
            best_k = k;
        }
    }
    if (best_qt > 1) {
        fg_tile_points(tp, pts, n, best_qt);
        if (st)
            free(st->cell);
        if (fg_fit_one(tp, n, c, fg_tile_knee(pts, n, best_qt, match[best_k]), out, st, &chisq,
                       err, errlen)) {
            free(tp);
            return -1;
        }
        out->q_tile = best_qt;
    }
    free(tp);
    return 0;
}

double fit_group_median(double *v, size_t n)
{
    if (n == 0)
        return 0;
    gsl_sort(v, 1, n);
    return gsl_stats_median_from_sorted_data(v, 1, n);
}

/* Mean and sd of v[0..n) without the points beyond FIT_OUTLIER_K robust sd (+ margins)
 * of the median, as fit_group leaves them out. v is reordered. Returns the points left out. */
double fit_group_robust_lim(double *v, size_t n, double *med)
{
    *med = 0;
    if (n == 0)
        return 0;
    gsl_sort(v, 1, n);
    *med = gsl_stats_median_from_sorted_data(v, 1, n);
    double *d = malloc(n * sizeof *d);
    double mad = 0;
    if (d) {
        for (size_t i = 0; i < n; i++)
            d[i] = fabs(v[i] - *med);
        gsl_sort(d, 1, n);
        mad = gsl_stats_median_from_sorted_data(d, 1, n);
        free(d);
    }
    return FIT_OUTLIER_K * 1.4826 * mad + FIT_OUTLIER_FRAC * fabs(*med) + FIT_OUTLIER_US;
}

size_t fit_group_robust(double *v, size_t n, double *mean, double *sd)
{
    *mean = *sd = 0;
    if (n == 0)
        return 0;
    double med;
    double lim = fit_group_robust_lim(v, n, &med);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (fabs(v[i] - med) <= lim)
            v[k++] = v[i];
    *mean = gsl_stats_mean(v, 1, k);
    *sd = k > 1 ? gsl_stats_sd_m(v, 1, k, *mean) : 0;
    return n - k;
}

/* Can the points tell a KV x query-token (tiles) column from the KV and token columns?
 * Not with two query-token counts q1 < q2 and no kernel variant per tile count: every
 * tiling then gives tile counts t1 < t2 (or one count: the KV column again), and
 * kv x t = kv x (a + b q) on the data, a KV slope plus a KV x q slope, which where the
 * context per row is the same in every cell (torchbench: 1210-1213 tokens a row) is a slope
 * in the rows plus one in the tokens (rows x q) with no knee: the column fits the
 * calibration as a token slope and prices another q at another row count as tiles of KV
 * (docs/fit.md, "Two query-token counts"). Three counts or more, or variants that step with
 * one tiling (specbench's k_attn_split<1>, <2>), can tell them apart. FIT_KVQ_TWO_Q=keep
 * turns the rule off. 1: identifiable. */
static int fg_kvq_identifiable(const fit_point *pts, size_t n)
{
    const char *env = getenv("FIT_KVQ_TWO_Q");
    if (env && strcmp(env, "keep") == 0)
        return 1;
    double q1 = -1, q2 = -1, qmax = 0;
    for (size_t i = 0; i < n; i++) {
        if (!(pts[i].kv_tokens > 0))
            continue;
        double q = fit_point_q(&pts[i]);
        qmax = fmax(qmax, q);
        if (q1 < 0 || fabs(q - q1) <= 1e-9 * q1)
            q1 = q;
        else if (q2 < 0 || fabs(q - q2) <= 1e-9 * q2)
            q2 = q;
        else
            return 1;   /* three or more */
    }
    if (q2 < 0)
        return 1;       /* one count: the column is not offered anyway (fg_avail) */
    for (double qt = 1; qt <= qmax; qt *= 2)
        if (fg_tiles_match_variants(pts, n, qt) == 1)
            return 1;
    return 0;
}

int fit_group(const fit_point *pts, size_t n, const fit_group_ctx *c, wm_group *out,
              fit_group_stats *st, char *err, size_t errlen)
{
    /* the points with their CUDA waves (the wave column) */
    fit_point *wp = calloc(n ? n : 1, sizeof *wp);
    if (!wp) {
        snprintf(err, errlen, "phase %s: group %s: out of memory", c->phase ? c->phase : "?",
                 c->group ? c->group : "?");
        return -1;
    }
    wm_group geo = {.wave_blocks0 = c->wave_blocks0,
                    .wave_blocks_per_token = c->wave_blocks_per_token,
                    .wave_blocks_max = c->wave_blocks_max, .wave_capacity = c->wave_capacity,
                    .wave_blocks_per_expert = c->wave_blocks_per_expert};
    int measured = c->wave_capacity > 0 && n > 0;
    fg_par fp = {c->moe_experts, c->moe_topk, 0, c->expert_row_exp};
    for (size_t i = 0; i < n; i++) {
        wp[i] = pts[i];
        wp[i].waves = wm_waves_e(&geo, pts[i].tokens, fg_experts(&fp, &pts[i]));
        measured &= isfinite(pts[i].kernel_us) && pts[i].kernel_us > 0;
    }
    /* the wave kernel's own time measured: its cost per wave from it (the group's other
     * columns cannot tell waves from a slope over a few token counts), the rest of the
     * group fitted without the wave column */
    fit_group_ctx cc = *c;
    cc.kvq_off = !fg_kvq_identifiable(pts, n);
    double pw = measured ? fit_waves_kernel_per_wave(wp, n, c) : 0;
    if (pw > 0)
        for (size_t i = 0; i < n; i++)
            wp[i].us = fmax(0, wp[i].us - pw * wp[i].waves);
    if (measured)   /* the kernel says whether it steps with its waves */
        cc.wave_capacity = 0;
    fit_group_stats local, *sp = st ? st : &local;
    int rc = fg_fit_tiles(wp, n, &cc, out, sp, err, errlen);
    if (rc == 0 && pw > 0) {
        out->wave_blocks0 = geo.wave_blocks0;
        out->wave_blocks_per_token = geo.wave_blocks_per_token;
        out->wave_blocks_per_expert = geo.wave_blocks_per_expert;
        out->wave_blocks_max = geo.wave_blocks_max;
        out->wave_capacity = geo.wave_capacity;
        out->per_wave_us = pw;
        /* cells and spread of the whole group: the wave cost added back (the repeats'
         * absolute spread is the residual's; relative to the whole cost it is smaller) */
        double s2 = 0, mx = 0, r2 = 0;
        for (int j = 0; j < sp->ncells; j++) {
            fit_cell *cl = &sp->cell[j];
            double add = pw * cl->waves, full = cl->fit_us + add;
            if (full > 0 && cl->fit_us > 0)
                r2 += (cl->fit_us / full) * (cl->fit_us / full);
            cl->us_mean += add;
            cl->fit_us = full;
            double r = cl->us_mean > 0 ? fabs(cl->fit_us - cl->us_mean) / cl->us_mean : 0;
            s2 += r * r;
            mx = fmax(mx, r);
        }
        if (sp->ncells > 0) {
            out->sd_frac *= sqrt(r2 / sp->ncells);
            sp->rms_rel = sqrt(s2 / sp->ncells);
            sp->max_rel = mx;
            sp->ncols++;
        }
    }
    sp->loo_sweep = sp->loo_smooth = -1;
    sp->sweep_kept = 0;
    if (rc == 0 && c->sweep)
        fit_sweep_try(pts, n, c, out, sp);
    if (sp == &local && rc == 0)
        free(local.cell);
    free(wp);
    return rc;
}
