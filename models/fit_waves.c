/* fit_waves: CUDA waves of a group's kernel. In: a kernel's block size, registers and shared
 * memory (occupancy on a Hopper SM), its blocks per launch against the tokens (the wave
 * geometry, fit_group_ctx), and its own measured time; out: fit_blocks_per_sm,
 * fit_wave_geometry (fit.h) and the cost per wave fit_group uses (fit_int.h).
 * Workload: tens of token counts per group. */
#include "fit_int.h"
#include <math.h>
#include <stdlib.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_multifit.h>
#include <gsl/gsl_vector.h>

/* Hopper SM limits (CUDA C Programming Guide, "Technical Specifications per Compute
 * Capability", 9.0): 65536 32-bit registers, 2048 resident threads, 32 resident blocks,
 * 228 KB shared memory per SM; registers are allocated per warp in units of 256; the runtime
 * reserves 1 KB of shared memory per block. */
#define FIT_SM_REGS 65536.0
#define FIT_SM_THREADS 2048.0
#define FIT_SM_BLOCKS 32.0
#define FIT_SM_SMEM_BYTES (228.0 * 1024)
#define FIT_REG_UNIT 256.0
#define FIT_SMEM_RESERVED_BYTES 1024.0

int fit_blocks_per_sm(double threads, double regs, double smem_bytes)
{
    if (!(threads >= 1) || !(threads <= 1024) || !(regs >= 0) || !(smem_bytes >= 0))
        return 0;
    double warps = ceil(threads / 32.0);
    double n = FIT_SM_BLOCKS;
    n = fmin(n, floor(FIT_SM_THREADS / (warps * 32.0)));
    if (regs > 0) {
        double per_warp = ceil(regs * 32.0 / FIT_REG_UNIT) * FIT_REG_UNIT;
        n = fmin(n, floor(FIT_SM_REGS / (per_warp * warps)));
    }
    n = fmin(n, floor(FIT_SM_SMEM_BYTES / (smem_bytes + FIT_SMEM_RESERVED_BYTES)));
    return n > 0 ? (int)n : 0;
}

/* Least-squares line blocks = a + s * tokens over the instances with blocks < below (all:
 * INFINITY). Returns 0, or -1 with fewer than two distinct token counts. */
static int fw_line(const double *tokens, const double *blocks, size_t n, double below,
                   double *a, double *s)
{
    double st = 0, sb = 0, m = 0;
    for (size_t i = 0; i < n; i++)
        if (blocks[i] < below)
            st += tokens[i], sb += blocks[i], m++;
    if (m < 2)
        return -1;
    double mt = st / m, mb = sb / m, sxx = 0, sxy = 0;
    for (size_t i = 0; i < n; i++)
        if (blocks[i] < below) {
            sxx += (tokens[i] - mt) * (tokens[i] - mt);
            sxy += (tokens[i] - mt) * (blocks[i] - mb);
        }
    if (sxx <= 0)
        return -1;
    *s = sxy / sxx;
    *a = mb - *s * mt;
    return 0;
}

static int fw_exact(const double *tokens, const double *blocks, size_t n, double a,
                    double s, double bmax)
{
    for (size_t i = 0; i < n; i++) {
        double b = a + s * tokens[i];
        if (bmax > 0 && b > bmax)
            b = bmax;
        if (fabs(b - blocks[i]) > 0.5 + 1e-3 * blocks[i])
            return 0;
    }
    return 1;
}

int fit_wave_geometry(const double *tokens, const double *blocks, const double *cap, size_t n,
                      int experts, int topk, fit_group_ctx *c)
{
    c->wave_blocks0 = c->wave_blocks_per_token = c->wave_blocks_max = c->wave_capacity = 0;
    c->wave_blocks_per_expert = 0;
    if (n < 2 || !(cap[0] > 0))
        return 0;
    double top = 0;
    for (size_t i = 0; i < n; i++) {
        if (cap[i] != cap[0] || !(blocks[i] > 0))
            return 0;
        top = fmax(top, blocks[i]);
    }
    double a = 0, s = 0, cap_blocks = 0;
    if (fw_line(tokens, blocks, n, INFINITY, &a, &s) ||
        !(s > 0) || !fw_exact(tokens, blocks, n, a, s, 0)) {
        /* not one line: a line up to the largest count, flat from there (MoE slots) */
        double tmin_top = INFINITY, tmax_top = -INFINITY;
        for (size_t i = 0; i < n; i++)
            if (blocks[i] == top)
                tmin_top = fmin(tmin_top, tokens[i]), tmax_top = fmax(tmax_top, tokens[i]);
        if (tmax_top <= tmin_top || fw_line(tokens, blocks, n, top, &a, &s) ||
            !(s > 0) || !fw_exact(tokens, blocks, n, a, s, top))
            return 0;   /* another kernel per size, tiles chosen per size */
        cap_blocks = top;
    }
    if (a < -0.5)
        return 0;
    wm_group g = {.wave_blocks0 = a > 0 ? a : 0, .wave_blocks_per_token = s,
                  .wave_blocks_max = cap_blocks, .wave_capacity = cap[0]};
    if (experts > 0 && topk > 0 && cap_blocks > 0 && fabs(a) <= 0.5) {
        double per = cap_blocks / experts;   /* blocks per expert slot */
        if (fabs(per - round(per)) < 1e-9 && fabs(s - per * topk) <= 0.5 / topk)
            g = (wm_group){.wave_blocks_per_expert = per, .wave_capacity = cap[0]};
    }
    double wmin = INFINITY, wmax = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        double w = wm_waves_e(&g, tokens[i], fit_experts(experts, topk, tokens[i]));
        wmin = fmin(wmin, w);
        wmax = fmax(wmax, w);
    }
    if (wmax <= wmin)
        return 0;
    c->wave_blocks0 = g.wave_blocks0;
    c->wave_blocks_per_token = g.wave_blocks_per_token;
    c->wave_blocks_per_expert = g.wave_blocks_per_expert;
    c->wave_blocks_max = g.wave_blocks_max;
    c->wave_capacity = g.wave_capacity;
    return 1;
}

/* The tile counts ceil(q / qt) of the points that read the KV (qt 1: q itself). */

/* Weighted least squares y = X b over the rows r with use[r] (X: n rows of nx columns);
 * 0 and b, or -1. */
static int fw_small_ls(const double *X, const double *y, const double *w, const int *use,
                       size_t n, int nx, double *b)
{
    size_t m = 0;
    for (size_t r = 0; r < n; r++)
        m += use[r] != 0;
    if (m <= (size_t)nx)
        return -1;
    gsl_matrix *A = gsl_matrix_alloc(m, (size_t)nx), *cov = gsl_matrix_alloc((size_t)nx, (size_t)nx);
    gsl_vector *yv = gsl_vector_alloc(m), *wv = gsl_vector_alloc(m), *bv = gsl_vector_alloc((size_t)nx);
    gsl_multifit_linear_workspace *ws = gsl_multifit_linear_alloc(m, (size_t)nx);
    int rc = -1;
    if (A && cov && yv && wv && bv && ws) {
        size_t q = 0;
        for (size_t r = 0; r < n; r++) {
            if (!use[r])
                continue;
            for (int k = 0; k < nx; k++)
                gsl_matrix_set(A, q, (size_t)k, X[r * (size_t)nx + (size_t)k]);
            gsl_vector_set(yv, q, y[r]);
            gsl_vector_set(wv, q, w[r]);
            q++;
        }
        double chisq;
        if (gsl_multifit_wlinear(A, wv, yv, bv, cov, &chisq, ws) == GSL_SUCCESS) {
            for (int k = 0; k < nx; k++)
                b[k] = gsl_vector_get(bv, (size_t)k);
            rc = 0;
        }
    }
    gsl_multifit_linear_free(ws);
    gsl_vector_free(bv);
    gsl_vector_free(wv);
    gsl_vector_free(yv);
    gsl_matrix_free(cov);
    gsl_matrix_free(A);
    return rc;
}

/* RMS relative error over left-out token counts up to which a kernel's time is taken as
 * its waves. Measured (docs/fit.md): kimi-tp8's verify expert GEMM 4.7% (calibration at 3
 * and 6 tokens per row) and 6.8% (at 2, 4 and 7); llama8b's k_silu_mul 6.8-6.9%; the other
 * kernels with a grid that grows with the tokens 10.3-51%. */
#define FIT_WAVE_LOO_REL 0.10

/* Cost per wave of the group's wave kernel from its own measured time (kernel_us). Over the
 * token counts (cells: the mean of their points, weighing 1/mean^2) the kernel's time is
 * fitted as a constant plus the waves, the waves and the experts touched (MoE), or the
 * waves and the tokens (coefficients >= 0); the form that predicts left-out token counts
 * best (leave-one-out, relative error squared) is taken, the one with fewer columns on a
 * tie within 1%, and kept when its RMS relative error over the left-out counts is at most
 * FIT_WAVE_LOO_REL: the waves are the kernel's mechanism, kept even where a line in the
 * tokens or experts interpolates the calibrated counts a little better (such a line cannot
 * step between them; measured on kimi-tp8's k_moe_gemm<4>: docs/fit.md). Returns the
 * per-wave coefficient, or 0 (no wave term). Needs 4 token counts. */
double fit_waves_kernel_per_wave(const fit_point *pts, size_t n, const fit_group_ctx *c)
{
    enum { F_W, F_WE, F_WT, NF };   /* columns: 1 tokens, 2 experts, 3 waves */
    static const int fcol[NF][2] = {{3, -1}, {3, 2}, {3, 1}};
    double *t = calloc(5 * (n ? n : 1), sizeof *t);
    double *X = calloc(3 * (n ? n : 1), sizeof *X);
    int *use = calloc(n ? n : 1, sizeof *use);
    double pw = 0;
    if (!t || !X || !use)
        goto out;
    double *k = t + n, *wv = t + 2 * n, *cnt = t + 3 * n, *w = t + 4 * n;
    size_t nc = 0;
    for (size_t i = 0; i < n; i++) {
        size_t j = 0;
        while (j < nc && t[j] != pts[i].tokens)
            j++;
        if (j == nc)
            t[nc] = pts[i].tokens, wv[nc] = pts[i].waves, nc++;
        k[j] += pts[i].kernel_us;
        cnt[j]++;
    }
    if (nc < 4)
        goto out;
    for (size_t j = 0; j < nc; j++) {
        k[j] /= cnt[j];
        w[j] = 1.0 / (k[j] * k[j] + 1e-12);
    }
    double best = -1, best_pw = 0;
    int best_nx = 0;
    for (int f = 0; f < NF; f++) {
        if (f == F_WE && c->moe_experts <= 0)
            continue;
        int nx = fcol[f][1] < 0 ? 2 : 3;
        for (size_t j = 0; j < nc; j++) {
            double col[4] = {1, t[j], fit_experts(c->moe_experts, c->moe_topk, t[j]), wv[j]};
            X[j * (size_t)nx] = 1;
            X[j * (size_t)nx + 1] = col[fcol[f][0]];
            if (nx == 3)
                X[j * (size_t)nx + 2] = col[fcol[f][1]];
        }
        double score = 0, b[3];
        for (size_t out = 0; out < nc && score >= 0; out++) {
            for (size_t j = 0; j < nc; j++)
                use[j] = j != out;
            if (fw_small_ls(X, k, w, use, nc, nx, b) || b[1] < 0 || (nx == 3 && b[2] < 0)) {
                score = -1;
                break;
            }
            double pred = 0;
            for (int q = 0; q < nx; q++)
                pred += b[q] * X[out * (size_t)nx + (size_t)q];
            score += w[out] * (pred - k[out]) * (pred - k[out]);
        }
        for (size_t j = 0; j < nc; j++)
            use[j] = 1;
        if (score < 0 || fw_small_ls(X, k, w, use, nc, nx, b) || b[1] < 0 || (nx == 3 && b[2] < 0))
            continue;
        if (best < 0 || score < best * (1 - 0.01) || (score <= best * (1 + 0.01) && nx < best_nx)) {
            best = score;
            best_nx = nx;
            best_pw = b[1];
        }
    }
    pw = best >= 0 && sqrt(best / (double)nc) <= FIT_WAVE_LOO_REL ? best_pw : 0;
out:
    free(t);
    free(X);
    free(use);
    return pw;
}
