/* fit_sweep: a GEMM group priced by the GEMM sweep (wm_sweep) against its smooth fit. In: the
 * group's points with each forward's sweep sum (fit_point.sweep_us) and the smooth fit;
 * out: the form that predicts left-out cells best, in the group and its statistics.
 * Workload: one group per phase, tens of cells. */
#include "fit_int.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Cells of (trace, tokens, query tokens per row): median us and the sweep's sum. */
typedef struct {
    int    trace;
    double tokens, q, kv, us, x;
} fs_cell;

static int fs_cell_cmp(const void *a, const void *b)
{
    const fs_cell *p = a, *q = b;
    if (p->trace != q->trace)
        return p->trace < q->trace ? -1 : 1;
    if (p->tokens != q->tokens)
        return p->tokens < q->tokens ? -1 : 1;
    if (p->q != q->q)
        return p->q < q->q ? -1 : 1;
    return p->us < q->us ? -1 : p->us > q->us;
}

static int fs_cell_same(const fs_cell *p, const fit_point *q)
{
    return p->trace == q->trace && p->tokens == q->tokens && p->q == fit_point_q(q);
}

/* Folds the points into cells (median us, mean kv); returns the count, -1 out of memory. */
static int fs_cells(const fit_point *pts, size_t n, fs_cell **out)
{
    fs_cell *v = malloc((n ? n : 1) * sizeof *v);
    if (!v)
        return -1;
    for (size_t i = 0; i < n; i++)
        v[i] = (fs_cell){pts[i].trace, pts[i].tokens, fit_point_q(&pts[i]), pts[i].kv_tokens,
                          pts[i].us, pts[i].sweep_us};
    qsort(v, n, sizeof *v, fs_cell_cmp);
    int nc = 0;
    for (size_t a = 0, b; a < n; a = b) {
        double kv = 0;
        for (b = a; b < n && v[b].trace == v[a].trace && v[b].tokens == v[a].tokens &&
                    v[b].q == v[a].q; b++)
            kv += v[b].kv;
        size_t k = b - a;
        fs_cell c = v[a];
        c.us = k % 2 ? v[a + k / 2].us : 0.5 * (v[a + k / 2 - 1].us + v[a + k / 2].us);
        c.kv = kv / (double)k;
        v[nc++] = c;
    }
    *out = v;
    return nc;
}

/* us = a + b x over the cells but skip, relative residuals (weights 1/us^2); a < 0 is
 * refitted with a = 0. 0, or -1 when b would not be > 0. */
static int fs_ls(const fs_cell *c, int n, int skip, double *a, double *b)
{
    double S = 0, Sx = 0, Sy = 0, Sxx = 0, Sxy = 0;
    for (int i = 0; i < n; i++) {
        if (i == skip || !(c[i].us > 0))
            continue;
        double w = 1.0 / (c[i].us * c[i].us);
        S += w, Sx += w * c[i].x, Sy += w * c[i].us, Sxx += w * c[i].x * c[i].x,
            Sxy += w * c[i].x * c[i].us;
    }
    double det = S * Sxx - Sx * Sx;
    *a = 0, *b = 0;
    if (det > 1e-12 * S * Sxx) {
        *b = (S * Sxy - Sx * Sy) / det;
        *a = (Sy - *b * Sx) / S;
    }
    if (*a < 0 || !(det > 1e-12 * S * Sxx)) {
        *a = 0;
        *b = Sxx > 0 ? Sxy / Sxx : 0;
    }
    return *b > 0 ? 0 : -1;
}

/* A point less its sweep sum: what the sweep does not time (its wave kernel's time capped
 * at the rest). */
static fit_point fs_residual(const fit_point *p)
{
    fit_point r = *p;
    r.us -= p->sweep_us;
    r.kernel_us = fmin(r.kernel_us, r.us);
    return r;
}

/* A left-out cell's squared relative error, each counted up to FIT_LOO_REL_MAX (as the
 * smooth fit's own leave-one-out counts them) */
static double fs_rel2(double pred, double y)
{
    double r = fmin(fabs(pred - y) / y, FIT_LOO_REL_MAX);
    return r * r;
}

/* Leave-one-cell-out comparison of three forms of a GEMM group: the smooth fit alone
 * (fit_group without the sweep), the sweep alone (us = base + scale * sweep_us), and the
 * sweep at its measured cost plus the smooth fit of what it leaves (kernels of the group
 * the sweep does not time, e.g. an MoE layer's expert GEMMs; tried when the sweep is below
 * every point). Each left-out cell is predicted by the forms refitted without it; the form
 * with the smallest rms relative error replaces *out when it is a sweep form. */
void fit_sweep_try(const fit_point *pts, size_t n, const fit_group_ctx *c,
                   wm_group *out, fit_group_stats *st)
{
    fs_cell *cl = NULL;
    int nc = fs_cells(pts, n, &cl);
    fit_point *sub = malloc((n ? n : 1) * sizeof *sub), *res = malloc((n ? n : 1) * sizeof *res);
    wm_model *em = calloc(1, sizeof *em);
    if (nc < 3 || !sub || !res || !em)
        goto out;
    em->moe_experts = c->moe_experts;
    em->moe_topk = c->moe_topk;
    fit_group_ctx c2 = *c;
    c2.sweep = 0;
    /* the residual form: every point above its sweep sum */
    int resid = 1;
    for (size_t i = 0; i < n; i++)
        resid &= pts[i].us > pts[i].sweep_us && pts[i].sweep_us > 0;
    double e_sw = 0, e_sm = 0, e_rs = 0;
    int k = 0;
    char e2[256];
    for (int j = 0; j < nc; j++) {
        double a, b;
        if (fs_ls(cl, nc, j, &a, &b))
            continue;
        size_t m = 0;
        for (size_t i = 0; i < n; i++)
            if (!fs_cell_same(&cl[j], &pts[i])) {
                sub[m] = pts[i];
                res[m++] = fs_residual(&pts[i]);
            }
        wm_group g, r;
        memset(&g, 0, sizeof g);
        memset(&r, 0, sizeof r);
        if (fit_group(sub, m, &c2, &g, NULL, e2, sizeof e2) ||
            (resid && fit_group(res, m, &c2, &r, NULL, e2, sizeof e2)))
            continue;   /* e.g. one token count left */
        double y = cl[j].us;
        if (!(y > 0))
            continue;   /* a cell of no cost has no relative error (it read inf, then NaN) */
        double ps = a + b * cl[j].x;
        double pm = wm_group_us_q(em, &g, cl[j].tokens, cl[j].kv, cl[j].q);
        double pr = wm_group_us_q(em, &r, cl[j].tokens, cl[j].kv, cl[j].q) + cl[j].x;
        e_sw += fs_rel2(ps, y);
        e_sm += fs_rel2(pm, y);
        e_rs += fs_rel2(pr, y);
        k++;
    }
    if (k < 3)
        goto out;
    double l_sw = sqrt(e_sw / k), l_sm = sqrt(e_sm / k), l_rs = resid ? sqrt(e_rs / k) : INFINITY;
    st->loo_smooth = l_sm;
    st->loo_sweep = fmin(l_sw, l_rs);
    if (st->loo_sweep > l_sm)
        goto out;
    wm_group g;
    memset(&g, 0, sizeof g);
    if (l_rs < l_sw) {
        /* the sweep at its cost plus the rest, fitted on every point */
        for (size_t i = 0; i < n; i++)
            res[i] = fs_residual(&pts[i]);
        if (fit_group(res, n, &c2, &g, NULL, e2, sizeof e2))
            goto out;
        g.sweep_scale = 1;
        st->sweep_kept = 2;
    } else {
        double a, b;
        if (fs_ls(cl, nc, -1, &a, &b))
            goto out;
        g.base_us = a;
        g.sweep_scale = b;
        st->sweep_kept = 1;
        st->ncols = 2;
    }
    memcpy(g.name, out->name, sizeof g.name);
    g.count = out->count;
    g.sd_frac = out->sd_frac;
    g.sweep_phase = c->sweep_phase;
    *out = g;
    /* the cells as the plots and the report show them: the new fit */
    double s2 = 0, mx = 0;
    for (int j = 0; j < st->ncells; j++) {
        fit_cell *fc = &st->cell[j];
        double x = -1;
        for (int i = 0; i < nc && x < 0; i++)
            if (cl[i].trace == fc->trace && cl[i].tokens == fc->tokens && cl[i].q == fc->q_per_row)
                x = cl[i].x;
        for (int i = 0; i < nc && x < 0; i++)
            if (cl[i].trace == fc->trace && cl[i].tokens == fc->tokens)
                x = cl[i].x;
        /* em has no sweep: its term comes from the cell's sum */
        fc->fit_us = wm_group_us_q(em, &g, fc->tokens, fc->kv_tokens, fc->q_per_row) +
                     g.sweep_scale * (x > 0 ? x : 0);
        double r = fc->us_mean > 0 ? fabs(fc->fit_us - fc->us_mean) / fc->us_mean : 0;
        s2 += r * r;
        mx = fmax(mx, r);
    }
    if (st->ncells > 0) {
        st->rms_rel = sqrt(s2 / st->ncells);
        st->max_rel = mx;
    }
out:
    free(cl);
    free(sub);
    free(res);
    free(em);
}
