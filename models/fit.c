/* fit: specprof traces -> workload model (docs/fit.md). Three stages: (1) per trace, phase
 * instances from the NVTX ranges, each GPU record attributed to the instance whose range
 * held its launch call; (2) per phase, kernels matched into groups across instances and
 * traces (by position in the forward, repeated layers folded; by name when instances differ
 * in shape), host gaps and launch costs from the launch API records; (3) per group a GSL
 * weighted least-squares fit of cost vs tokens, experts and KV context.
 * Workload: 10^4..10^6 GPU records per trace, tens of groups, 10^3..10^5 instances. */
#include "fit.h"
#include "ptrace_read.h"
#include "ptrace_out.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_fit.h>
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
/* The simulator's jitter truncates at 3 sd and needs (1 + sd*z) > 0: sd_frac < 1/3
 * (sim/jitter.h). Larger measured spreads are capped, with a warning. */
#define FIT_SD_FRAC_MAX 0.3
/* An eager instance whose launch calls take this share of its GPU span or more is bound by
 * the host's launches: its GPU idle time is the simulator's launch bound, not a kernel gap. */
#define FIT_LAUNCH_BOUND_FRAC 0.8
/* Nested phase ranges searched back from a time (phases do not nest in practice). */
#define FIT_BACK_SEARCH 64
/* GPU time that CUPTI kernel tracing adds to every kernel it records: the CUDA-event phase
 * times specbench measured while specprof captured the calibration subset
 * (traces/calib/measured_while_captured.csv) exceed those of the same configurations run
 * unprofiled (traces/validation/measured.csv) by 0.4-0.8 us per kernel at small and medium
 * batches on the H200 (llama8b verify: +297 us over 391 kernels at 3 tokens; kimi-tp8: +138
 * over 262), less where kernels are long. Taken out of each kernel's duration (at most half
 * of it) so that the model prices the unprofiled program; only in traces whose header names a
 * CUPTI version (synthetic traces have none). The environment variable FIT_CUPTI_KERNEL_US
 * overrides the value (0 turns the correction off). */
#define FIT_CUPTI_KERNEL_US 0.6

/* ---- interned strings --------------------------------------------------------------------- */

struct fit_strpool {
    char  **slot;          /* open addressing, power-of-two size */
    size_t  nslot, n;
    char   *chunk;         /* current chunk; chunks are chained through their first bytes */
    size_t  used, cap;
};

#define FIT_POOL_CHUNK (64u << 10)

static fit_strpool *pool_create(void)
{
    fit_strpool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->nslot = 1024;
    p->slot = calloc(p->nslot, sizeof *p->slot);
    if (!p->slot) {
        free(p);
        return NULL;
    }
    return p;
}

static void pool_destroy(fit_strpool *p)
{
    if (!p)
        return;
    char *c = p->chunk;
    while (c) {
        char *next;
        memcpy(&next, c, sizeof next);
        free(c);
        c = next;
    }
    free(p->slot);
    free(p);
}

static uint64_t pool_hash(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;          /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

static char *pool_store(fit_strpool *p, const char *s, size_t n)
{
    size_t need = n + 1;
    if (p->used + need > p->cap) {
        size_t cap = need + sizeof(char *) > FIT_POOL_CHUNK ? need + sizeof(char *) : FIT_POOL_CHUNK;
        char *c = malloc(cap);
        if (!c)
            return NULL;
        memcpy(c, &p->chunk, sizeof p->chunk);
        p->chunk = c;
        p->used = sizeof(char *);
        p->cap = cap;
    }
    char *d = p->chunk + p->used;
    memcpy(d, s, n);
    d[n] = 0;
    p->used += need;
    return d;
}

/* The pool's copy of s[0..n) (one copy per distinct string), or NULL when out of memory. */
static const char *pool_intern_n(fit_strpool *p, const char *s, size_t n)
{
    if (2 * (p->n + 1) > p->nslot) {
        size_t ns = p->nslot * 2;
        char **t = calloc(ns, sizeof *t);
        if (!t)
            return NULL;
        for (size_t i = 0; i < p->nslot; i++) {
            if (!p->slot[i])
                continue;
            size_t j = pool_hash(p->slot[i], strlen(p->slot[i])) & (ns - 1);
            while (t[j])
                j = (j + 1) & (ns - 1);
            t[j] = p->slot[i];
        }
        free(p->slot);
        p->slot = t;
        p->nslot = ns;
    }
    size_t j = pool_hash(s, n) & (p->nslot - 1);
    while (p->slot[j]) {
        if (strncmp(p->slot[j], s, n) == 0 && p->slot[j][n] == 0)
            return p->slot[j];
        j = (j + 1) & (p->nslot - 1);
    }
    char *d = pool_store(p, s, n);
    if (!d)
        return NULL;
    p->slot[j] = d;
    p->n++;
    return d;
}

static const char *pool_intern(fit_strpool *p, const char *s)
{
    return pool_intern_n(p, s ? s : "", s ? strlen(s) : 0);
}

/* ---- traces ------------------------------------------------------------------------------- */

int fit_trace_init(fit_trace *t, const char *label)
{
    memset(t, 0, sizeof *t);
    snprintf(t->file, sizeof t->file, "%s", label ? label : "(trace)");
    t->pool = pool_create();
    return t->pool ? 0 : -1;
}

void fit_trace_free(fit_trace *t)
{
    if (!t)
        return;
    free(t->kern);
    free(t->mem);
    free(t->api);
    free(t->rng);
    pool_destroy(t->pool);
    memset(t, 0, sizeof *t);
}

/* Grows *arr (elements of size sz) so that one more fits. */
static int grow(void **arr, size_t *cap, size_t n, size_t sz)
{
    if (n < *cap)
        return 0;
    size_t nc = *cap ? *cap * 2 : 256;
    void *a = realloc(*arr, nc * sz);
    if (!a)
        return -1;
    *arr = a;
    *cap = nc;
    return 0;
}

int fit_trace_add_kernel(fit_trace *t, const ptrace_kernel *k)
{
    if (grow((void **)&t->kern, &t->capkern, t->nkern, sizeof *t->kern))
        return -1;
    ptrace_kernel c = *k;
    if (!(c.name = pool_intern(t->pool, k->name)) || !(c.nvtx = pool_intern(t->pool, k->nvtx)) ||
        !(c.phase = pool_intern(t->pool, k->phase)))
        return -1;
    t->kern[t->nkern++] = c;
    return 0;
}

int fit_trace_add_mem(fit_trace *t, const ptrace_mem *m)
{
    if (grow((void **)&t->mem, &t->capmem, t->nmem, sizeof *t->mem))
        return -1;
    ptrace_mem c = *m;
    if (!(c.copy_kind = pool_intern(t->pool, m->copy_kind)) ||
        !(c.nvtx = pool_intern(t->pool, m->nvtx)) || !(c.phase = pool_intern(t->pool, m->phase)))
        return -1;
    t->mem[t->nmem++] = c;
    return 0;
}

int fit_trace_add_api(fit_trace *t, const ptrace_api *a)
{
    if (grow((void **)&t->api, &t->capapi, t->napi, sizeof *t->api))
        return -1;
    ptrace_api c = *a;
    if (!(c.name = pool_intern(t->pool, a->name)))
        return -1;
    t->api[t->napi++] = c;
    return 0;
}

int fit_trace_add_range(fit_trace *t, const ptrace_range *r)
{
    if (grow((void **)&t->rng, &t->caprng, t->nrng, sizeof *t->rng))
        return -1;
    ptrace_range c = *r;
    if (!(c.name = pool_intern(t->pool, r->name)) || !(c.domain = pool_intern(t->pool, r->domain)))
        return -1;
    t->rng[t->nrng++] = c;
    return 0;
}

/* Scan callback: typed views of the events the fit uses, copied into the trace. */
static int trace_take(void *user, const ptrace_event *ev, const ptrace_info *info)
{
    fit_trace *t = user;
    int64_t t0 = info->header.t0_ns;
    union { ptrace_kernel k; ptrace_mem m; ptrace_api a; ptrace_range r; } u;
    if (ptrace_read_kernel(ev, t0, &u.k) == 0)
        return fit_trace_add_kernel(t, &u.k);
    if (ptrace_read_mem(ev, t0, &u.m) == 0)
        return fit_trace_add_mem(t, &u.m);
    if (ptrace_read_api(ev, t0, &u.a) == 0)
        return fit_trace_add_api(t, &u.a);
    if (ptrace_read_range(ev, t0, &u.r) == 0)
        return fit_trace_add_range(t, &u.r);
    return 0;
}

int fit_trace_load(fit_trace *t, const char *path, char *err, size_t errlen)
{
    char *text = NULL;
    size_t len = 0;
    ptrace_info info;
    if (fit_trace_init(t, path)) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    if (ptrace_slurp(path, &text, &len, err, errlen))
        goto fail;
    if (ptrace_scan_buf(text, len, path, trace_take, t, &info, err, errlen))
        goto fail;
    if (info.merged) {
        snprintf(err, errlen, "%s: a merged trace (specprof merge): give the per-rank files "
                 "to specsim fit", path);
        goto fail;
    }
    if (info.lines && info.events && !info.complete && !info.cut_last_line &&
        (t->nkern + t->nmem + t->napi + t->nrng) < info.events / 2) {
        /* the callback stopped early: only out of memory does that */
        snprintf(err, errlen, "%s: out of memory after %zu records", path,
                 t->nkern + t->nmem + t->napi + t->nrng);
        goto fail;
    }
    t->has_header = info.has_header;
    t->hdr = info.header;
    t->truncated = !info.complete;
    t->cut_last_line = info.cut_last_line;
    t->bad_lines = info.bad_lines;
    free(text);
    return 0;
fail:
    free(text);
    fit_trace_free(t);
    return -1;
}

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
} fg_par;

/* Query tokens per row of a point (attention tiles once q_tile is applied); unknown: 1. */
static double fg_q(const fit_point *p) { return p->q_per_row > 0 ? p->q_per_row : 1.0; }

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* qsort_r comparator: point indices by (trace, tokens, index). */
static int fg_cmp_idx(const void *a, const void *b, void *ctx)
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
    case COL_EXP:  return fit_experts(fp->E, fp->k, p->tokens);
    case COL_KV:   return p->kv_tokens / 1000.0;
    case COL_KVQ:  return p->kv_tokens / 1000.0 * fg_q(p);
    case COL_KVQ2: return fp->tknee > 0 && fg_q(p) > fp->tknee ?
                          p->kv_tokens / 1000.0 * (fg_q(p) - fp->tknee) : 0.0;
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
    qsort(ux, nux, sizeof *ux, cmp_double);
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
static int fg_choose_columns(const fit_cell *cells, size_t ncell, double floor_us,
                             const fg_par *fp, int avail[NCOL])
{
    if (ncell < FIT_CV_MIN_CELLS)
        return 0;
    int opt[NCOL], nopt = 0;
    for (int c = COL_KV; c < NCOL; c++)   /* the token and expert columns stay */
        if (avail[c])
            opt[nopt++] = c;
    if (nopt == 0)
        return 0;
    fit_point *cp = malloc(ncell * sizeof *cp);
    double *w = malloc(ncell * sizeof *w);
    size_t *use = malloc(ncell * sizeof *use);
    if (!cp || !w || !use) {
        free(cp);
        free(w);
        free(use);
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
        }
        if (score < 0)
            continue;
        if (best_score < 0 || score < best_score * (1 - 0.01) ||
            (score <= best_score * (1 + 0.01) && nc < best_n)) {
            best_score = score;
            best_mask = mask;
            best_n = nc;
        }
    }
    for (int b = 0; b < nopt; b++)
        avail[opt[b]] = (best_mask >> b) & 1;
    free(cp);
    free(w);
    free(use);
    return 0;
}

static int fg_fit_one(const fit_point *pts, size_t n, const fit_group_ctx *c, double tknee,
                      wm_group *out, fit_group_stats *st, double *chisq_out, char *err,
                      size_t errlen)
{
    const fg_par fp = {c->moe_experts, c->moe_topk, tknee};
    int rc = -1;
    size_t *idx = NULL, *use = NULL, *cstart = NULL;
    double *w = NULL, *ux = NULL, *tmp = NULL;
    char *bad = NULL;
    fit_cell *cells = NULL;
    const char *ph = c->phase ? c->phase : "?", *gn = c->group ? c->group : "?";
#define TRN(i) ((pts[i].trace >= 0 && pts[i].trace < c->ntraces && c->trace_names) ? \
                c->trace_names[pts[i].trace] : "(trace)")
    if (st)
        memset(st, 0, sizeof *st);
    if (n == 0) {
        snprintf(err, errlen, "(no trace): phase %s: group %s: no measurements", ph, gn);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
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
                     "tokens %g): %s", TRN(i), ph, gn, field, v, pts[i].tokens, what);
            return -1;
        }
    }
    idx = malloc(n * sizeof *idx);
    ux = malloc(n * sizeof *ux);
    if (!idx || !ux)
        goto oom;
    for (size_t i = 0; i < n; i++) {
        idx[i] = i;
        ux[i] = pts[i].tokens;
    }
    qsort(ux, n, sizeof *ux, cmp_double);
    size_t nux = 0;
    for (size_t i = 0; i < n; i++)
        if (i == 0 || ux[i] != ux[nux - 1])
            ux[nux++] = ux[i];
    if (nux < 2) {
        /* name every trace that holds the single count */
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
                 ph, gn, ux[0], n);
        goto out;
    }
    /* cells */
    qsort_r(idx, n, sizeof *idx, fg_cmp_idx, (void *)pts);
    size_t ncell = 0;
    cstart = malloc((n + 1) * sizeof *cstart);
    if (!cstart)
        goto oom;
    for (size_t i = 0; i < n; i++) {
        const fit_point *p = &pts[idx[i]];
        if (i == 0 || p->trace != pts[idx[i - 1]].trace || p->tokens != pts[idx[i - 1]].tokens ||
            p->q_per_row != pts[idx[i - 1]].q_per_row)
            cstart[ncell++] = i;
    }
    cstart[ncell] = n;
    cells = calloc(ncell, sizeof *cells);
    tmp = malloc((ncell > n ? ncell : n) * sizeof *tmp);
    bad = calloc(n, 1);
    if (!cells || !tmp || !bad)
        goto oom;
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
    for (size_t j = 0; j < ncell; j++) {
        fit_cell *cl = &cells[j];
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
        cl->q_per_row = fg_q(&pts[idx[cstart[j]]]);
        cl->waves = pts[idx[cstart[j]]].waves;
        cl->us_mean = s / cl->n;
        double var = cl->n > 1 ? (s2 - s * s / cl->n) / (cl->n - 1) : 0;
        cl->us_sd = var > 0 ? sqrt(var) : 0;
        tmp[j] = cl->us_mean;
    }
    qsort(tmp, ncell, sizeof *tmp, cmp_double);
    double floor_us = FIT_FLOOR_FRAC * tmp[ncell / 2];
    if (floor_us < FIT_FLOOR_US)
        floor_us = FIT_FLOOR_US;
    /* regression points: at most FIT_CELL_POINTS per cell, each cell weighing the same */
    use = malloc(n * sizeof *use);
    w = malloc(n * sizeof *w);
    if (!use || !w)
        goto oom;
    size_t m = 0;
    for (size_t j = 0; j < ncell; j++) {
        size_t cn = 0, a = cstart[j];
        for (size_t i = a; i < cstart[j + 1]; i++)
            if (!bad[i])
                tmp[cn++] = (double)i;
        size_t take = cn < FIT_CELL_POINTS ? cn : FIT_CELL_POINTS;
        double ref = cells[j].us_mean > floor_us ? cells[j].us_mean : floor_us;
        for (size_t q = 0; q < take; q++) {
            use[m] = idx[(size_t)tmp[q * cn / take]];
            w[m] = 1.0 / ((double)take * ref * ref);
            m++;
        }
    }
    /* available columns */
    int avail[NCOL] = {[COL_BASE] = 1, [COL_TOK] = 1, [COL_TOK0] = 1};
    double emin = INFINITY, emax = -INFINITY, kmin = INFINITY, kmax = -INFINITY;
    double wmin = INFINITY, wmax = -INFINITY;
    double qmin = INFINITY, qmax = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        if (pts[i].kv_tokens > 0) {
            qmin = fmin(qmin, fg_q(&pts[i]));
            qmax = fmax(qmax, fg_q(&pts[i]));
        }
        double e = fit_experts(c->moe_experts, c->moe_topk, pts[i].tokens);
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
    avail[COL_KVQ] = avail[COL_KV] && qmax - qmin > 1e-9 * qmax;
    /* the slope past the tile knee: its own cost for the last tile counts (the caller sets
     * tknee only with 3 tile counts or more) */
    avail[COL_KVQ2] = avail[COL_KVQ] && tknee > 0 && qmax > tknee;
    /* which optional columns: the set that predicts left-out cells best (below) */
    if (fg_choose_columns(cells, ncell, floor_us, &fp, avail) < 0)
        goto oom;
    /* knee search: 0 and every distinct token count below the largest */
    double best_chisq = -1, best_knee = 0, best[NCOL] = {0}, cf[NCOL];
    for (size_t q = 0; q < nux; q++) {
        double knee = q == 0 ? 0 : ux[q - 1];
        double chisq = fg_nonneg(pts, use, w, m, avail, knee, &fp, cf);
        if (chisq < 0) {
            snprintf(err, errlen, "%s: phase %s: group %s: the least-squares solver failed "
                     "(%zu points)", TRN(idx[0]), ph, gn, m);
            goto out;
        }
        /* ties go to the larger knee: flat while weight-bound is the physical shape */
        if (best_chisq < 0 || chisq <= best_chisq * (1 + 1e-9) + 1e-300) {
            best_chisq = chisq;
            best_knee = knee;
            memcpy(best, cf, sizeof best);
        }
    }
    if (best[COL_TOK] <= 0)
        best_knee = 0;
    out->base_us = best[COL_BASE];
    out->per_token_us = best[COL_TOK];
    out->knee_tokens = best_knee;
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
    *chisq_out = best_chisq;
    /* spread of repeats around the fit, relative, pooled over cells */
    double ss = 0;
    size_t dof = 0;
    for (size_t j = 0; j < ncell; j++) {
        size_t a = cstart[j], b = cstart[j + 1];
        if (b - a < 2)
            continue;
        double rm = 0;
        size_t good = 0;
        for (size_t i = a; i < b; i++) {
            if (bad[i])
                continue;
            const fit_point *p = &pts[idx[i]];
            double f = fg_eval(best, best_knee, &fp, p->tokens,
                               p->kv_tokens, fg_q(p), p->waves);
            rm += p->us / (f > floor_us ? f : floor_us);
            good++;
        }
        if (good < 2)
            continue;
        rm /= (double)good;
        for (size_t i = a; i < b; i++) {
            if (bad[i])
                continue;
            const fit_point *p = &pts[idx[i]];
            double f = fg_eval(best, best_knee, &fp, p->tokens,
                               p->kv_tokens, fg_q(p), p->waves);
            double r = p->us / (f > floor_us ? f : floor_us) - rm;
            ss += r * r;
        }
        dof += good - 1;
    }
    out->sd_frac = dof ? sqrt(ss / (double)dof) : 0;
    if (st) {
        double s2 = 0, mx = 0;
        for (size_t j = 0; j < ncell; j++) {
            fit_cell *cl = &cells[j];
            cl->fit_us = fg_eval(best, best_knee, &fp, cl->tokens,
                                 cl->kv_tokens, cl->q_per_row, cl->waves);
            double ref = cl->us_mean > floor_us ? cl->us_mean : floor_us;
            double r = fabs(cl->fit_us - cl->us_mean) / ref;
            s2 += r * r;
            if (r > mx)
                mx = r;
        }
        st->chisq = best_chisq;
        st->rms_rel = sqrt(s2 / (double)ncell);
        st->max_rel = mx;
        st->ncols = 0;
        for (int q = 0; q < NCOL; q++)
            st->ncols += best[q] > 0;
        st->ncells = (int)ncell;
        st->noutliers = (int)nbad;
        st->cell = cells;
        cells = NULL;
    }
    rc = 0;
    goto out;
oom:
    snprintf(err, errlen, "%s: phase %s: group %s: out of memory (%zu points)", TRN(0), ph, gn, n);
out:
#undef TRN
    free(idx);
    free(use);
    free(cstart);
    free(w);
    free(ux);
    free(tmp);
    free(bad);
    free(cells);
    return rc;
}

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
static int fg_wave_line(const double *tokens, const double *blocks, size_t n, double below,
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

static int fg_wave_exact(const double *tokens, const double *blocks, size_t n, double a,
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
    if (fg_wave_line(tokens, blocks, n, INFINITY, &a, &s) ||
        !(s > 0) || !fg_wave_exact(tokens, blocks, n, a, s, 0)) {
        /* not one line: a line up to the largest count, flat from there (MoE slots) */
        double tmin_top = INFINITY, tmax_top = -INFINITY;
        for (size_t i = 0; i < n; i++)
            if (blocks[i] == top)
                tmin_top = fmin(tmin_top, tokens[i]), tmax_top = fmax(tmax_top, tokens[i]);
        if (tmax_top <= tmin_top || fg_wave_line(tokens, blocks, n, top, &a, &s) ||
            !(s > 0) || !fg_wave_exact(tokens, blocks, n, a, s, top))
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
        double t = fg_tiles(fg_q(&pts[i]), qt);
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
        double t = fg_tiles(fg_q(&pts[i]), qt);
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

/* Weighted least squares y = X b over the rows r with use[r] (X: n rows of nx columns);
 * 0 and b, or -1. */
static int fg_small_ls(const double *X, const double *y, const double *w, const int *use,
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
static double fg_kernel_per_wave(const fit_point *pts, size_t n, const fit_group_ctx *c)
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
            if (fg_small_ls(X, k, w, use, nc, nx, b) || b[1] < 0 || (nx == 3 && b[2] < 0)) {
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
        if (score < 0 || fg_small_ls(X, k, w, use, nc, nx, b) || b[1] < 0 || (nx == 3 && b[2] < 0))
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

/* ---- the GEMM sweep alternative ------------------------------------------------------------ */

/* Cells of (trace, tokens, query tokens per row): median us and the sweep's sum. */
typedef struct {
    int    trace;
    double tokens, q, kv, us, x;
} fg_scell;

static int fg_scell_cmp(const void *a, const void *b)
{
    const fg_scell *p = a, *q = b;
    if (p->trace != q->trace)
        return p->trace < q->trace ? -1 : 1;
    if (p->tokens != q->tokens)
        return p->tokens < q->tokens ? -1 : 1;
    if (p->q != q->q)
        return p->q < q->q ? -1 : 1;
    return p->us < q->us ? -1 : p->us > q->us;
}

static int fg_scell_same(const fg_scell *p, const fit_point *q)
{
    return p->trace == q->trace && p->tokens == q->tokens && p->q == fg_q(q);
}

/* Folds the points into cells (median us, mean kv); returns the count, -1 out of memory. */
static int fg_scells(const fit_point *pts, size_t n, fg_scell **out)
{
    fg_scell *v = malloc((n ? n : 1) * sizeof *v);
    if (!v)
        return -1;
    for (size_t i = 0; i < n; i++)
        v[i] = (fg_scell){pts[i].trace, pts[i].tokens, fg_q(&pts[i]), pts[i].kv_tokens,
                          pts[i].us, pts[i].sweep_us};
    qsort(v, n, sizeof *v, fg_scell_cmp);
    int nc = 0;
    for (size_t a = 0, b; a < n; a = b) {
        double kv = 0;
        for (b = a; b < n && v[b].trace == v[a].trace && v[b].tokens == v[a].tokens &&
                    v[b].q == v[a].q; b++)
            kv += v[b].kv;
        size_t k = b - a;
        fg_scell c = v[a];
        c.us = k % 2 ? v[a + k / 2].us : 0.5 * (v[a + k / 2 - 1].us + v[a + k / 2].us);
        c.kv = kv / (double)k;
        v[nc++] = c;
    }
    *out = v;
    return nc;
}

/* us = a + b x over the cells but skip, relative residuals (weights 1/us^2); a < 0 is
 * refitted with a = 0. 0, or -1 when b would not be > 0. */
static int fg_sweep_ls(const fg_scell *c, int n, int skip, double *a, double *b)
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
static fit_point fg_residual(const fit_point *p)
{
    fit_point r = *p;
    r.us -= p->sweep_us;
    r.kernel_us = fmin(r.kernel_us, r.us);
    return r;
}

/* Leave-one-cell-out comparison of three forms of a GEMM group: the smooth fit alone
 * (fit_group without the sweep), the sweep alone (us = base + scale * sweep_us), and the
 * sweep at its measured cost plus the smooth fit of what it leaves (kernels of the group
 * the sweep does not time, e.g. an MoE layer's expert GEMMs; tried when the sweep is below
 * every point). Each left-out cell is predicted by the forms refitted without it; the form
 * with the smallest rms relative error replaces *out when it is a sweep form. */
static void fg_try_sweep(const fit_point *pts, size_t n, const fit_group_ctx *c,
                         wm_group *out, fit_group_stats *st)
{
    fg_scell *cl = NULL;
    int nc = fg_scells(pts, n, &cl);
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
        if (fg_sweep_ls(cl, nc, j, &a, &b))
            continue;
        size_t m = 0;
        for (size_t i = 0; i < n; i++)
            if (!fg_scell_same(&cl[j], &pts[i])) {
                sub[m] = pts[i];
                res[m++] = fg_residual(&pts[i]);
            }
        wm_group g, r;
        memset(&g, 0, sizeof g);
        memset(&r, 0, sizeof r);
        if (fit_group(sub, m, &c2, &g, NULL, e2, sizeof e2) ||
            (resid && fit_group(res, m, &c2, &r, NULL, e2, sizeof e2)))
            continue;   /* e.g. one token count left */
        double y = cl[j].us;
        double ps = a + b * cl[j].x;
        double pm = wm_group_us_q(em, &g, cl[j].tokens, cl[j].kv, cl[j].q);
        double pr = wm_group_us_q(em, &r, cl[j].tokens, cl[j].kv, cl[j].q) + cl[j].x;
        e_sw += (ps - y) * (ps - y) / (y * y);
        e_sm += (pm - y) * (pm - y) / (y * y);
        e_rs += (pr - y) * (pr - y) / (y * y);
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
            res[i] = fg_residual(&pts[i]);
        if (fit_group(res, n, &c2, &g, NULL, e2, sizeof e2))
            goto out;
        g.sweep_scale = 1;
        st->sweep_kept = 2;
    } else {
        double a, b;
        if (fg_sweep_ls(cl, nc, -1, &a, &b))
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
    for (size_t i = 0; i < n; i++) {
        wp[i] = pts[i];
        wp[i].waves = wm_waves_e(&geo, pts[i].tokens,
                                 fit_experts(c->moe_experts, c->moe_topk, pts[i].tokens));
        measured &= isfinite(pts[i].kernel_us) && pts[i].kernel_us > 0;
    }
    /* the wave kernel's own time measured: its cost per wave from it (the group's other
     * columns cannot tell waves from a slope over a few token counts), the rest of the
     * group fitted without the wave column */
    fit_group_ctx cc = *c;
    double pw = measured ? fg_kernel_per_wave(wp, n, c) : 0;
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
        fg_try_sweep(pts, n, c, out, sp);
    if (sp == &local && rc == 0)
        free(local.cell);
    free(wp);
    return rc;
}

/* ---- stage 1: phase instances and their GPU records ----------------------------------------- */

#define FIT_NCCL_OPS 4

typedef struct {
    const char *op;            /* run pool */
    int    n;                  /* collectives in the instance */
    double bytes;              /* summed */
} fr_nccl;

typedef struct {
    int     trace, phase;
    const char *rname;
    int64_t r0, r1, thread;
    /* shape, from the range name */
    double  tokens, kv;
    int     F, graph, has_graph_key, bs, rows, steps, topk, experts, moe_topk;
    /* host: the launch calls made inside the range */
    int64_t lb, le, a1e;       /* first start, last end, end of the earliest call */
    int     napi;
    /* GPU */
    int64_t g0, g1;
    int     nrec, any_graph_kernel;
    size_t  e0;                /* elements (kernels after merging) in the run's array */
    int     ne;
    double  sum_us, nccl_us;   /* kernels and copies; collectives */
    double  copy_us;           /* memcpy/memset (in sum_us too) */
    double  cupti_us;          /* profiler time taken out of the kernels (FIT_CUPTI_KERNEL_US) */
    double  lwait_us;          /* GPU idle inside the range waiting for a later launch call
                                  (the simulator charges launches before the phase) */
    int     ncopy;
    fr_nccl nc[FIT_NCCL_OPS];
    int     nnc;
    /* matching and host results */
    int     drop;              /* FR_KEEP or why it was left out */
    int     nfwd;              /* elements per forward; -1: not of the phase's shape */
    int     busy, has_gap, launch_bound;
    double  gap_us, inter_us;
} fr_inst;

enum { FR_KEEP, FR_NOKERNELS, FR_CUT, FR_PARTIAL, FR_EARLY };
static const char *const fr_drop_why[] = {
    "kept", "no kernels", "cut off at the end of the capture", "partial (kernel count differs "
    "at the edge of the capture)", "started before the capture",
};

typedef struct {
    const char *cls, *name;    /* class (run pool), a representative name (trace pool) */
    double dur_us;
    int    launches;
    /* the element's longest kernel (a GEMM and its split-K reduce: the GEMM): thread blocks
     * per launch and blocks resident at once on the device (fit_blocks_per_sm x SMs; 0:
     * unknown) */
    double blocks, cap, dmax_us;
    const char *dname;         /* that kernel's name (trace pool) */
} fr_elem;

typedef struct {
    int64_t s, e;
    const char *name, *nvtx;
    uint32_t corr;
    int     graph;
    int     nccl;
    int     mem;               /* a memcpy or memset */
    const ptrace_nccl *nc;
    int     inst;
    double  blocks, cap;       /* kernels: grid blocks, resident capacity (0: unknown) */
} fr_rec;

/* One phase's matching: groups and per-instance sums. */
typedef struct {
    int    *inst;              /* kept instance indices, ninst */
    int     ninst;
    int     by;
    int     G;                 /* real groups (the gap pseudo-group is index G) */
    char    name[WM_GROUPS_MAX][WM_NAME_MAX];
    const char *gcls[WM_GROUPS_MAX];  /* FIT_BY_NAME: the class of each group */
    int    *pos2g;             /* FIT_BY_POSITION: group of each position (prefix, one
                                  forward, suffix) */
    int     A, nfwd, B;        /* FIT_BY_POSITION: prefix, forward and suffix lengths */
    double *Y, *L;             /* [ninst][G+1]: us and launches per forward */
    double *WB, *WC;           /* [ninst][G+1]: blocks and resident capacity of the group's
                                  kernel (its elements agree; else 0: no wave term) */
    double *WD;                /* [ninst][G+1]: that kernel's us per forward */
    int    *WV;                /* [ninst][G+1]: the group's kernel variant in the instance
                                  (fit_point.variant; 0: not known) */
    int     count[WM_GROUPS_MAX];
    int     copy_g, other_g;   /* "(copies)", "(other kernels)" groups, or -1 */
} fr_phase;

typedef struct {
    const fit_trace *tr;
    int     nt;
    const fit_opts *o;
    fit_result *res;
    fit_strpool *pool;
    fr_inst *in;
    size_t  nin, capin;
    fr_elem *el;
    size_t  nel, capel;
    size_t *tin0;              /* per trace: first instance index; tin0[nt] = nin */
    fr_phase ph[WM_NPHASE];
    const char **tnames;
    int     moe_E, moe_k;
    int     any_graph_phase;   /* some kept phase instance was replayed from a graph */
    double  node_us;           /* profiler's extra host time per graph node at launch */
    char   *err;
    size_t  errlen;
} fr_run;

static void fr_warn(fr_run *R, const char *fmt, ...)
{
    R->res->nwarnings++;
    if (!R->o || !R->o->log)
        return;
    va_list ap;
    va_start(ap, fmt);
    fputs("specsim fit: warning: ", R->o->log);
    vfprintf(R->o->log, fmt, ap);
    fputc('\n', R->o->log);
    va_end(ap);
}

static int fr_fail(fr_run *R, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(R->err, R->errlen, fmt, ap);
    va_end(ap);
    return -1;
}

static int fr_lower_has(const char *s, const char *needle)
{
    size_t n = strlen(needle);
    for (; *s; s++) {
        size_t i = 0;
        while (i < n && s[i] && (s[i] | 0x20) == needle[i])
            i++;
        if (i == n)
            return 1;
    }
    return 0;
}

/* cuBLAS/CUTLASS GEMM kernels: the name (and the number of kernels, split-K adds a reduce)
 * changes with the problem size, so they are matched by role, not by name. */
static int fr_is_gemm(const char *name)
{
    static const char *const pat[] = {"gemm", "gemv", "xmma", "nvjet", "cutlass", "cublas",
                                      "splitkreduce", NULL};
    for (int i = 0; pat[i]; i++)
        if (fr_lower_has(name, pat[i]))
            return 1;
    return 0;
}

/* Class of a kernel: "gemm" for GEMMs, else the bare function name (no return type, no
 * template arguments, no parameter list) so that template variants chosen by size match. */
static const char *fr_class(fit_strpool *p, const char *name, int *gemm)
{
    *gemm = fr_is_gemm(name);
    if (*gemm)
        return pool_intern(p, "gemm");
    const char *s = name;
    while (*s == ' ')
        s++;
    if (strncmp(s, "void ", 5) == 0)
        s += 5;
    size_t n = 0;
    while (s[n] && s[n] != '(' && s[n] != '<')
        n++;
    while (n > 0 && s[n - 1] == ' ')
        n--;
    if (n == 0)
        return pool_intern(p, name);
    return pool_intern_n(p, s, n);
}

static int fr_is_nccl_name(const char *name)
{
    return strncmp(name, "nccl", 4) == 0 || strncmp(name, "void nccl", 9) == 0;
}

/* Parses "verify tokens=64 bs=16 rows=16 ctx=8192 graph=1" into in. Returns the phase or -1
 * when the first word is not a phase. *bad gets a key whose value does not parse. */
static int fr_parse_range(const char *name, fr_inst *in, const char **bad)
{
    char word[32];
    size_t n = 0;
    *bad = NULL;
    while (name[n] && name[n] != ' ' && n < sizeof word - 1) {
        word[n] = name[n];
        n++;
    }
    word[n] = 0;
    if (name[n] && name[n] != ' ')
        return -1;
    int p = wm_phase_find(word);
    if (p < 0)
        return -1;
    in->tokens = -1;
    in->F = 0;
    in->graph = -1;
    const char *s = name + n;
    while (*s) {
        while (*s == ' ')
            s++;
        const char *k = s;
        while (*s && *s != ' ' && *s != '=')
            s++;
        if (*s != '=') {
            while (*s && *s != ' ')
                s++;
            continue;
        }
        size_t kl = (size_t)(s - k);
        s++;
        char *end;
        errno = 0;
        double v = strtod(s, &end);
        int ok = end != s && (*end == 0 || *end == ' ') && errno == 0 && isfinite(v);
#define KEY(str) (kl == sizeof(str) - 1 && strncmp(k, str, kl) == 0)
        if (KEY("tokens"))        { if (!ok) *bad = "tokens"; else in->tokens = v; }
        else if (KEY("ctx"))      { if (!ok) *bad = "ctx"; else in->kv = v; }
        else if (KEY("bs"))       { if (!ok) *bad = "bs"; else in->bs = (int)v; }
        else if (KEY("rows"))     { if (!ok) *bad = "rows"; else in->rows = (int)v; }
        else if (KEY("graph"))    { if (!ok) *bad = "graph"; else in->graph = v != 0; }
        else if (KEY("steps"))    { if (!ok) *bad = "steps"; else in->steps = (int)v; }
        else if (KEY("topk"))     { if (!ok) *bad = "topk"; else in->topk = (int)v; }
        else if (KEY("forwards")) { if (!ok || v < 1) *bad = "forwards"; else in->F = (int)v; }
        else if (KEY("experts"))  { if (!ok) *bad = "experts"; else in->experts = (int)v; }
        else if (KEY("moe_topk")) { if (!ok) *bad = "moe_topk"; else in->moe_topk = (int)v; }
#undef KEY
        while (*s && *s != ' ')
            s++;
    }
    in->has_graph_key = in->graph >= 0;
    if (in->F == 0)   /* the draft range covers the phase: steps-1 forwards (DESIGN.md) */
        in->F = (p == WM_DRAFT && in->steps > 1) ? in->steps - 1 : 1;
    return p;
}

static int fr_cmp_inst(const void *a, const void *b)
{
    const fr_inst *x = a, *y = b;
    if (x->r0 != y->r0)
        return x->r0 < y->r0 ? -1 : 1;
    return (x->r1 > y->r1) - (x->r1 < y->r1);   /* the outer of two equal starts first */
}

/* Innermost instance of trace segment [a, b) whose range on `thread` holds time t; -1. */
static int fr_find_inst(const fr_run *R, size_t a, size_t b, int64_t t, int64_t thread)
{
    size_t lo = a, hi = b;
    while (lo < hi) {              /* first with r0 > t */
        size_t mid = lo + (hi - lo) / 2;
        if (R->in[mid].r0 <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo, k = 0; i > a && k < FIT_BACK_SEARCH; i--, k++) {
        const fr_inst *in = &R->in[i - 1];
        if (in->r1 >= t && (thread == 0 || in->thread == 0 || in->thread == thread))
            return (int)(i - 1);
    }
    return -1;
}

/* Latest instance of [a, b) named nvtx that started at or before t; -1. */
static int fr_find_by_name(const fr_run *R, size_t a, size_t b, int64_t t, const char *nvtx)
{
    size_t lo = a, hi = b;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (R->in[mid].r0 <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo, k = 0; i > a && k < 4 * FIT_BACK_SEARCH; i--, k++)
        if (strcmp(R->in[i - 1].rname, nvtx) == 0)
            return (int)(i - 1);
    return -1;
}

typedef struct { uint32_t corr; int64_t s, e, thread; } fr_corr;

static int fr_cmp_corr(const void *a, const void *b)
{
    const fr_corr *x = a, *y = b;
    if (x->corr != y->corr)
        return x->corr < y->corr ? -1 : 1;
    return (x->s > y->s) - (x->s < y->s);
}

static const fr_corr *fr_corr_find(const fr_corr *c, size_t n, uint32_t corr)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c[mid].corr < corr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && c[lo].corr == corr ? &c[lo] : NULL;
}

static int fr_cmp_rec(const void *a, const void *b)
{
    const fr_rec *x = a, *y = b;
    if (x->inst != y->inst)
        return x->inst < y->inst ? -1 : 1;
    if (x->s != y->s)
        return x->s < y->s ? -1 : 1;
    return (x->e > y->e) - (x->e < y->e);
}

static double fr_us(int64_t ns) { return (double)ns / 1000.0; }

/* Query tokens per batch row of an instance: tokens / rows (rows= of the range), else its
 * F-forward draft shape is one per row; 0 when the range has no rows= (unknown). */
static double fr_qrow(const fr_inst *in)
{
    return in->rows > 0 ? in->tokens / in->rows : 0;
}

static double fit_cupti_kernel_us(void)
{
    static double v = -1;
    if (v < 0) {
        const char *e = getenv("FIT_CUPTI_KERNEL_US");
        v = e && *e ? atof(e) : FIT_CUPTI_KERNEL_US;
        if (!(v >= 0))
            v = 0;
    }
    return v;
}

/* Refuses a record with a negative duration, naming the trace, the record and the value. */
static int fr_check_dur(fr_run *R, const fit_trace *t, const char *kind, const char *name,
                        int64_t s, int64_t e)
{
    if (e >= s)
        return 0;
    int64_t t0 = t->has_header ? t->hdr.t0_ns : 0;
    return fr_fail(R, "%s: %s \"%.80s\" at ts %.3f us: field dur: value %.3f: negative "
                   "duration", t->file, kind, name, fr_us(s - t0), fr_us(e - s));
}

/* Stage 1 for trace ti: instances, their launch calls, their GPU records and elements. */
static int fr_trace(fr_run *R, int ti)
{
    const fit_trace *t = &R->tr[ti];
    size_t a = R->nin;
    int rc = -1;
    fr_corr *cm = NULL;
    fr_rec *rec = NULL;
    /* instances */
    for (size_t i = 0; i < t->nrng; i++) {
        const ptrace_range *r = &t->rng[i];
        fr_inst in;
        const char *bad;
        memset(&in, 0, sizeof in);
        int p = fr_parse_range(r->name, &in, &bad);
        if (p < 0)
            continue;
        if (fr_check_dur(R, t, "NVTX range", r->name, r->start_ns, r->end_ns))
            return -1;
        if (bad)
            return fr_fail(R, "%s: NVTX range \"%.80s\": field %s: value does not parse "
                           "(traces/FORMAT.md: key=number)", t->file, r->name, bad);
        if (in.tokens < 0)
            return fr_fail(R, "%s: NVTX range \"%.80s\": field tokens: missing: every phase "
                           "range needs tokens= (traces/FORMAT.md)", t->file, r->name);
        if (!(in.tokens > 0) || in.kv < 0)
            return fr_fail(R, "%s: NVTX range \"%.80s\": field %s: value %g: must be %s",
                           t->file, r->name, in.tokens > 0 ? "ctx" : "tokens",
                           in.tokens > 0 ? in.kv : in.tokens, in.tokens > 0 ? ">= 0" : "> 0");
        in.trace = ti;
        in.phase = p;
        in.rname = r->name;
        in.r0 = r->start_ns;
        in.r1 = r->end_ns;
        in.thread = r->thread;
        in.nfwd = -1;
        if (grow((void **)&R->in, &R->capin, R->nin, sizeof *R->in))
            goto oom;
        R->in[R->nin++] = in;
    }
    size_t b = R->nin;
    qsort(R->in + a, b - a, sizeof *R->in, fr_cmp_inst);
    R->tin0[ti] = a;
    if (b == a) {
        fr_warn(R, "%s: no NVTX range names a phase (%s, ...): the trace adds nothing",
                t->file, wm_phase_name[0]);
        return 0;
    }
    /* launch calls: the instance whose range holds the call; corr -> launch time. The
     * profiler writes OS thread ids for both; if no call's thread is a range's thread, the
     * ids are of different kinds and are not compared. */
    int same_ids = t->napi == 0;
    for (size_t i = 0; i < t->napi && !same_ids && i < 4096; i++)
        for (size_t q = a; q < b && !same_ids; q++)
            same_ids = t->api[i].thread == R->in[q].thread;
    if (!same_ids)
        fr_warn(R, "%s: launch calls and NVTX ranges carry different thread ids: matched by "
                "time only", t->file);
    cm = malloc((t->napi + 1) * sizeof *cm);
    if (!cm)
        goto oom;
    for (size_t i = 0; i < t->napi; i++) {
        const ptrace_api *x = &t->api[i];
        if (fr_check_dur(R, t, "API call", x->name, x->start_ns, x->end_ns))
            goto out;
        int64_t th = same_ids ? x->thread : 0;
        cm[i] = (fr_corr){x->corr, x->start_ns, x->end_ns, th};
        int k = fr_find_inst(R, a, b, x->start_ns, th);
        if (k < 0)
            continue;
        fr_inst *in = &R->in[k];
        if (in->napi == 0 || x->start_ns < in->lb) {
            in->lb = x->start_ns;
            in->a1e = x->end_ns;
        }
        if (in->napi == 0 || x->end_ns > in->le)
            in->le = x->end_ns;
        in->napi++;
    }
    qsort(cm, t->napi, sizeof *cm, fr_cmp_corr);
    /* GPU records */
    size_t nrec = t->nkern + t->nmem;
    rec = malloc((nrec + 1) * sizeof *rec);
    if (!rec)
        goto oom;
    int64_t last_end = INT64_MIN, first_start = INT64_MAX;
    for (size_t i = 0; i < nrec; i++) {
        fr_rec *x = &rec[i];
        if (i < t->nkern) {
            const ptrace_kernel *k = &t->kern[i];
            if (fr_check_dur(R, t, "kernel", k->name, k->start_ns, k->end_ns))
                goto out;
            *x = (fr_rec){k->start_ns, k->end_ns, k->name, k->nvtx, k->corr, k->graph_id != 0,
                          k->has_nccl || fr_is_nccl_name(k->name), 0, k->has_nccl ? &k->nccl : NULL, -1,
                          0, 0};
            int sms = t->has_header ? t->hdr.device.sms : 0;
            double blocks = (double)k->grid[0] * k->grid[1] * k->grid[2];
            double threads = (double)k->block[0] * k->block[1] * k->block[2];
            if (sms > 0 && blocks > 0) {
                x->blocks = blocks;
                x->cap = (double)fit_blocks_per_sm(threads, k->regs, k->smem_bytes) * sms;
            }
        } else {
            const ptrace_mem *m = &t->mem[i - t->nkern];
            const char *nm = m->kind == PTRACE_MEMSET ? "memset" :
                             *m->copy_kind ? m->copy_kind : "memcpy";
            if (fr_check_dur(R, t, "memcpy/memset", nm, m->start_ns, m->end_ns))
                goto out;
            char buf[64];
            snprintf(buf, sizeof buf, "%s%s", m->kind == PTRACE_MEMSET ? "" : "memcpy ",
                     m->kind == PTRACE_MEMSET ? "memset" : nm);
            const char *in = pool_intern(R->pool, buf);
            if (!in)
                goto oom;
            *x = (fr_rec){m->start_ns, m->end_ns, in, m->nvtx, m->corr, m->graph_id != 0,
                          m->has_nccl, 1, m->has_nccl ? &m->nccl : NULL, -1, 0, 0};
        }
        if (x->e > last_end)
            last_end = x->e;
        if (x->s < first_start)
            first_start = x->s;
        const fr_corr *c = x->corr ? fr_corr_find(cm, t->napi, x->corr) : NULL;
        int k = c ? fr_find_inst(R, a, b, c->s, c->thread) : -1;
        if (k < 0 && c == NULL && x->nvtx && *x->nvtx)
            k = fr_find_by_name(R, a, b, x->s, x->nvtx);
        x->inst = k;
    }
    qsort(rec, nrec, sizeof *rec, fr_cmp_rec);
    /* kernels recorded through CUPTI carry its overhead (FIT_CUPTI_KERNEL_US) */
    int cupti = t->has_header && t->hdr.cupti_version > 0;
    /* per instance: span, elements (adjacent GEMM kernels merged), collectives */
    size_t i = 0;
    while (i < nrec && rec[i].inst < 0)
        i++;
    int unattributed = (int)i;
    while (i < nrec) {
        fr_inst *in = &R->in[rec[i].inst];
        size_t j = i;
        in->g0 = rec[i].s;
        in->g1 = rec[i].e;
        in->e0 = R->nel;
        int prev_gemm = 0;
        for (; j < nrec && rec[j].inst == rec[i].inst; j++) {
            const fr_rec *x = &rec[j];
            double d = fr_us(x->e - x->s);
            if (j > i && x->corr != rec[j - 1].corr && x->s > in->g1) {
                /* idle GPU until this record's launch call returned: host time, not GPU */
                const fr_corr *c = x->corr ? fr_corr_find(cm, t->napi, x->corr) : NULL;
                if (c && c->e > in->g1)
                    in->lwait_us += fr_us((c->e < x->s ? c->e : x->s) - in->g1);
            }
            if (x->e > in->g1)
                in->g1 = x->e;
            in->nrec++;
            in->any_graph_kernel |= x->graph;
            if (x->nccl) {
                in->nccl_us += d;
                const char *op = pool_intern(R->pool, x->nc ? x->nc->op : "allreduce");
                if (!op)
                    goto oom;
                int q = 0;
                while (q < in->nnc && in->nc[q].op != op)
                    q++;
                if (q < FIT_NCCL_OPS) {
                    if (q == in->nnc)
                        in->nc[in->nnc++] = (fr_nccl){op, 0, 0};
                    in->nc[q].n++;
                    in->nc[q].bytes += x->nc ? (double)x->nc->bytes : 0;
                }
                prev_gemm = 0;
                continue;
            }
            if (!x->mem && cupti) {
                double c = fit_cupti_kernel_us();
                c = c < 0.5 * d ? c : 0.5 * d;
                d -= c;
                in->cupti_us += c;
            }
            in->sum_us += d;
            if (x->mem) {
                /* input staging and result copies: one group per phase, outside the
                 * kernels' positions (specbench copies before verify only at steps 1) */
                in->copy_us += d;
                in->ncopy++;
                prev_gemm = 0;
                continue;
            }
            int gemm;
            const char *cls = fr_class(R->pool, x->name, &gemm);
            if (!cls)
                goto oom;
            if (gemm && prev_gemm) {
                fr_elem *pe = &R->el[R->nel - 1];
                pe->dur_us += d;
                pe->launches++;
                if (d > pe->dmax_us)
                    pe->blocks = x->blocks, pe->cap = x->cap, pe->dmax_us = d, pe->dname = x->name;
                continue;
            }
            if (grow((void **)&R->el, &R->capel, R->nel, sizeof *R->el))
                goto oom;
            R->el[R->nel++] = (fr_elem){cls, x->name, d, 1, x->blocks, x->cap, d, x->name};
            in->ne++;
            prev_gemm = gemm;
        }
        i = j;
    }
    if (unattributed && (size_t)unattributed == nrec)
        fr_warn(R, "%s: none of its %zu GPU records could be placed in a phase range (no "
                "launch call with their correlation id inside a range, no args.nvtx)", t->file, nrec);
    /* what cannot be used */
    int ndrop[5] = {0};
    for (size_t q = a; q < b; q++) {
        fr_inst *in = &R->in[q];
        if (in->nrec == 0)
            in->drop = FR_NOKERNELS;
        else if (nrec && in->r1 > last_end)
            in->drop = FR_CUT;
        else if (t->has_header && in->r0 < t->hdr.t0_ns)
            in->drop = FR_EARLY;
        if (in->graph < 0)
            in->graph = in->any_graph_kernel;
        if (!in->drop && in->graph == 1)
            R->any_graph_phase = 1;
        if (in->drop)
            ndrop[in->drop]++;
    }
    for (int d = 1; d < 5; d++)
        if (ndrop[d] && !(d == FR_CUT && ndrop[d] <= 2 * WM_NPHASE) &&
            !(d == FR_NOKERNELS && ndrop[d] <= 2 * WM_NPHASE))
            fr_warn(R, "%s: %d phase instances left out: %s", t->file, ndrop[d], fr_drop_why[d]);
    if (t->truncated)
        fr_warn(R, "%s: cut off (no specprof_end)%s: %d instances at its end left out", t->file,
                t->cut_last_line ? ", last line cut mid-write and dropped" : "", ndrop[FR_CUT]);
    if (t->bad_lines)
        fr_warn(R, "%s: %zu lines did not parse and were skipped", t->file, t->bad_lines);
    rc = 0;
    goto out;
oom:
    snprintf(R->err, R->errlen, "%s: out of memory", t->file);
out:
    free(cm);
    free(rec);
    return rc;
}

/* ---- stage 2: matching kernels into groups ------------------------------------------------- */

/* Elements a phase instance may hold once besides its F forwards (input copies before
 * them, tree building after): searched up to this many on each side. */
#define FIT_EDGE_MAX 8

/* Does instance `in` consist of a prefix of a elements, F identical forwards of n elements
 * and a suffix of b? */
static int fr_fits_shape(const fr_run *R, const fr_inst *in, int a, int n, int b)
{
    if (n < 1 || in->ne != a + in->F * n + b)
        return 0;
    const fr_elem *e = &R->el[in->e0 + (size_t)a];
    for (int f = 1; f < in->F; f++)
        for (int k = 0; k < n; k++)
            if (e[f * n + k].cls != e[k].cls)
                return 0;
    return 1;
}

/* The shape (a, n, b) of an instance with F >= 2 forwards: the smallest a+b that fits. */
static int fr_shape(const fr_run *R, const fr_inst *in, int *a, int *n, int *b)
{
    for (int sum = 0; sum <= 2 * FIT_EDGE_MAX && sum <= in->ne; sum++)
        for (int x = sum < FIT_EDGE_MAX ? sum : FIT_EDGE_MAX; x >= 0 && sum - x <= FIT_EDGE_MAX; x--) {
            int y = sum - x;
            if ((in->ne - sum) % in->F || in->ne - sum < in->F)
                continue;
            if (fr_fits_shape(R, in, x, (in->ne - sum) / in->F, y)) {
                *a = x;
                *n = (in->ne - sum) / in->F;
                *b = y;
                return 0;
            }
        }
    return -1;
}

/* The repeated layer of a forward: the period P and offset h that cover the most elements
 * with L >= 2 repeats of s[h .. h+P); ties go to the shorter period. No repeat: L = 1. */
static void fr_layers(const char *const *s, int n, int *h, int *P, int *L)
{
    int best = 0;
    *h = 0;
    *P = n > 0 ? n : 1;
    *L = 1;
    for (int p = 1; p <= n / 2; p++) {
        int run = 0;
        for (int i = 0; i <= n - p; i++) {
            int eq = i + p < n && s[i] == s[i + p];
            if (eq) {
                run++;
                continue;
            }
            int reps = (run + p) / p;
            if (run > 0 && reps >= 2 && reps * p > best) {
                best = reps * p;
                *h = i - run;
                *P = p;
                *L = reps;
            }
            run = 0;
        }
    }
}

static int fr_cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static double fr_median(double *v, size_t n)
{
    if (n == 0)
        return 0;
    gsl_sort(v, 1, n);
    return gsl_stats_median_from_sorted_data(v, 1, n);
}

/* Mean and sd of v[0..n) without the points beyond FIT_OUTLIER_K robust sd (+ margins)
 * of the median, as fit_group leaves them out. v is reordered. Returns the points left out. */
static size_t fr_robust(double *v, size_t n, double *mean, double *sd)
{
    *mean = *sd = 0;
    if (n == 0)
        return 0;
    gsl_sort(v, 1, n);
    double med = gsl_stats_median_from_sorted_data(v, 1, n);
    double *d = malloc(n * sizeof *d);
    double mad = 0;
    if (d) {
        for (size_t i = 0; i < n; i++)
            d[i] = fabs(v[i] - med);
        gsl_sort(d, 1, n);
        mad = gsl_stats_median_from_sorted_data(d, 1, n);
        free(d);
    }
    double lim = FIT_OUTLIER_K * 1.4826 * mad + FIT_OUTLIER_FRAC * fabs(med) + FIT_OUTLIER_US;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (fabs(v[i] - med) <= lim)
            v[k++] = v[i];
    *mean = gsl_stats_mean(v, 1, k);
    *sd = k > 1 ? gsl_stats_sd_m(v, 1, k, *mean) : 0;
    return n - k;
}

/* Group name "<prefix> <class>", cut to fit. */
static void fr_gname(char *dst, const char *prefix, const char *cls)
{
    snprintf(dst, WM_NAME_MAX, "%s%s%.*s", prefix, *prefix ? " " : "",
             (int)(WM_NAME_MAX - 1 - strlen(prefix) - 1), cls);
}

/* Group of element e of instance in (the phase's matching done). */
static int fr_elem_group(const fr_phase *P, const fr_inst *in, const fr_elem *el, int e)
{
    if (P->by == FIT_BY_POSITION) {
        int k = e < P->A ? e : e >= in->ne - P->B ? P->A + P->nfwd + (e - (in->ne - P->B))
                                                  : P->A + (e - P->A) % P->nfwd;
        return P->pos2g[k];
    }
    int g = 0;
    while (g < P->G && !(P->gcls[g] && P->gcls[g] == el->cls))
        g++;
    return g == P->G ? P->other_g : g;   /* a class merged into "(other kernels)" */
}

/* Per group, the kernel (by full name) with the most time in the instances q0..q1-1 of the
 * phase (an element's time: its longest kernel's, whose name it carries); NULL: none. Names
 * past the FR_NAMES_MAX-th of a group are rare ones, not counted. */
#define FR_NAMES_MAX 16
static void fr_top_kernels(const fr_run *R, const fr_phase *P, int q0, int q1,
                           const char *top[WM_GROUPS_MAX])
{
    struct { const char *name; double us; } k[WM_GROUPS_MAX][FR_NAMES_MAX];
    int nk[WM_GROUPS_MAX] = {0};
    for (int q = q0; q < q1; q++) {
        const fr_inst *in = &R->in[P->inst[q]];
        for (int e = 0; e < in->ne; e++) {
            const fr_elem *el = &R->el[in->e0 + (size_t)e];
            int g = fr_elem_group(P, in, el, e);
            if (g < 0 || g >= WM_GROUPS_MAX || !el->dname)
                continue;
            int j = 0;
            while (j < nk[g] && strcmp(k[g][j].name, el->dname) != 0)
                j++;
            if (j == nk[g]) {
                if (j == FR_NAMES_MAX)
                    continue;
                k[g][nk[g]++].name = el->dname;
                k[g][j].us = 0;
            }
            k[g][j].us += el->dmax_us;
        }
    }
    for (int g = 0; g < WM_GROUPS_MAX; g++) {
        top[g] = NULL;
        double best = -1;
        for (int j = 0; j < nk[g]; j++)
            if (k[g][j].us > best)
                top[g] = k[g][j].name, best = k[g][j].us;
    }
}

/* Per instance and group, the kernel variant it ran: its top kernel (fr_top_kernels),
 * numbered per group in order of appearance (1, 2, ...). An attention kernel compiled per
 * tile count (specbench's k_attn_split<1>, <2>, <3>) tells the fit where the tiles step
 * (fg_fit_tiles). 0: no named kernel, or past FR_NAMES_MAX names. */
static void fr_variants(const fr_run *R, fr_phase *P)
{
    int G1 = P->G + 1;
    const char *seen[WM_GROUPS_MAX][FR_NAMES_MAX];
    int nseen[WM_GROUPS_MAX] = {0};
    for (int q = 0; q < P->ninst; q++) {
        const char *top[WM_GROUPS_MAX];
        fr_top_kernels(R, P, q, q + 1, top);
        for (int g = 0; g < P->G && g < WM_GROUPS_MAX; g++) {
            if (!top[g])
                continue;
            int v = 0;
            while (v < nseen[g] && strcmp(seen[g][v], top[g]) != 0)
                v++;
            if (v == nseen[g] && v < FR_NAMES_MAX)
                seen[g][nseen[g]++] = top[g];
            P->WV[(size_t)q * (size_t)G1 + (size_t)g] = v < FR_NAMES_MAX ? v + 1 : 0;
        }
    }
}

static int fr_group_phase(fr_run *R, int p)
{
    fr_phase *P = &R->ph[p];
    int n = 0;
    for (size_t i = 0; i < R->nin; i++)
        n += R->in[i].phase == p && !R->in[i].drop;
    if (n == 0)
        return 0;
    /* the phase's shape: a prefix, F identical forwards, a suffix (draft instances hold
     * steps-1 forwards); taken from the instances with F >= 2, the most common one */
    int *sa = malloc(3 * (size_t)n * sizeof *sa), ns = 0;
    if (!sa)
        return fr_fail(R, "out of memory");
    for (size_t i = 0; i < R->nin; i++) {
        const fr_inst *in = &R->in[i];
        int a, m, b;
        if (in->phase == p && !in->drop && in->F >= 2 && fr_shape(R, in, &a, &m, &b) == 0) {
            sa[3 * ns] = a, sa[3 * ns + 1] = m, sa[3 * ns + 2] = b;
            ns++;
        }
    }
    int A = 0, N = -1, B = 0, best = 0;
    for (int i = 0; i < ns; i++) {
        int c = 0;
        for (int j = 0; j < ns; j++)
            c += sa[3 * j] == sa[3 * i] && sa[3 * j + 1] == sa[3 * i + 1] && sa[3 * j + 2] == sa[3 * i + 2];
        if (c > best)
            best = c, A = sa[3 * i], N = sa[3 * i + 1], B = sa[3 * i + 2];
    }
    if (N < 0) {   /* one forward per instance: the most common kernel count */
        ns = 0;
        for (size_t i = 0; i < R->nin; i++)
            if (R->in[i].phase == p && !R->in[i].drop)
                sa[ns++] = R->in[i].ne;
        qsort(sa, (size_t)ns, sizeof *sa, fr_cmp_int);
        for (int a = 0, b; a < ns; a = b) {
            for (b = a; b < ns && sa[b] == sa[a]; b++)
                ;
            if (b - a > best)
                best = b - a, N = sa[a];
        }
    }
    free(sa);
    for (size_t i = 0; i < R->nin; i++)
        if (R->in[i].phase == p && !R->in[i].drop)
            R->in[i].nfwd = fr_fits_shape(R, &R->in[i], A, N, B) ? N : -1;
    /* an instance at either edge of a trace that does not have the shape was cut by the
     * capture window */
    for (int t = 0; t < R->nt; t++) {
        int first = -1, last = -1;
        for (size_t i = R->tin0[t]; i < R->tin0[t + 1]; i++)
            if (R->in[i].phase == p && !R->in[i].drop) {
                if (first < 0)
                    first = (int)i;
                last = (int)i;
            }
        if (first < 0 || first == last)
            continue;
        if (R->in[first].nfwd < 0)
            R->in[first].drop = FR_PARTIAL, n--;
        if (R->in[last].nfwd < 0)
            R->in[last].drop = FR_PARTIAL, n--;
    }
    P->inst = malloc((size_t)n * sizeof *P->inst);
    if (!P->inst)
        return fr_fail(R, "out of memory");
    P->ninst = 0;
    int same = 1;
    for (size_t i = 0; i < R->nin; i++) {
        const fr_inst *in = &R->in[i];
        if (in->phase != p || in->drop)
            continue;
        P->inst[P->ninst++] = (int)i;
        same &= in->nfwd > 0;
    }
    /* by position: every instance has the shape */
    P->by = FIT_BY_NAME;
    if (same) {
        const fr_inst *rep = &R->in[P->inst[0]];
        int npos = A + N + B;
        const char **s = malloc((size_t)npos * sizeof *s);
        P->pos2g = malloc((size_t)npos * sizeof *P->pos2g);
        if (!s || !P->pos2g) {
            free(s);
            return fr_fail(R, "out of memory");
        }
        for (int k = 0; k < A + N; k++)
            s[k] = R->el[rep->e0 + (size_t)k].cls;
        for (int k = 0; k < B; k++)
            s[A + N + k] = R->el[rep->e0 + (size_t)(rep->ne - B + k)].cls;
        int h, per, L;
        fr_layers(s + A, N, &h, &per, &L);
        int tail = N - h - L * per;
        int G = A + (L < 2 ? N : h + per + tail) + B;
        if (G <= WM_GROUPS_MAX - 2) {
            char pre[16];
            P->by = FIT_BY_POSITION;
            P->A = A;
            P->nfwd = N;
            P->B = B;
            P->G = G;
            for (int k = 0; k < npos; k++) {
                int g, f = k - A;
                if (k < A)
                    g = k, snprintf(pre, sizeof pre, "p%d", k);
                else if (k >= A + N)
                    g = G - B + (k - A - N), snprintf(pre, sizeof pre, "s%d", k - A - N);
                else if (L < 2)   /* no repeated layer: plain positions */
                    g = A + f, snprintf(pre, sizeof pre, "k%d", f);
                else if (f < h)
                    g = A + f, snprintf(pre, sizeof pre, "h%d", f);
                else if (f < h + L * per)
                    g = A + h + (f - h) % per, snprintf(pre, sizeof pre, "L%d", (f - h) % per);
                else
                    g = A + h + per + (f - h - L * per), snprintf(pre, sizeof pre, "t%d", f - h - L * per);
                P->pos2g[k] = g;
                if (k < A || k >= A + N || L < 2 || f < h + per || f >= h + L * per)
                    fr_gname(P->name[g], pre, s[k]);
            }
        }
        free(s);
    }
    if (P->by == FIT_BY_NAME) {
        /* by name: one group per kernel class; the rarest merged when there are too many */
        typedef struct { const char *cls; double us; } cl_t;
        cl_t *cl = NULL;
        int ncl = 0, cap = 0;
        for (int q = 0; q < P->ninst; q++) {
            const fr_inst *in = &R->in[P->inst[q]];
            for (int e = 0; e < in->ne; e++) {
                const fr_elem *el = &R->el[in->e0 + (size_t)e];
                int k = 0;
                while (k < ncl && cl[k].cls != el->cls)
                    k++;
                if (k == ncl) {
                    if (ncl == cap) {
                        cap = cap ? 2 * cap : 64;
                        cl_t *nc = realloc(cl, (size_t)cap * sizeof *cl);
                        if (!nc) {
                            free(cl);
                            return fr_fail(R, "out of memory");
                        }
                        cl = nc;
                    }
                    cl[ncl++] = (cl_t){el->cls, 0};
                }
                cl[k].us += el->dur_us;
            }
        }
        int keep = ncl <= WM_GROUPS_MAX - 2 ? ncl : WM_GROUPS_MAX - 3;
        if (keep < ncl) {   /* the largest by time keep their own group */
            for (int a = 0; a < keep; a++)
                for (int b = a + 1; b < ncl; b++)
                    if (cl[b].us > cl[a].us) {
                        cl_t x = cl[a];
                        cl[a] = cl[b];
                        cl[b] = x;
                    }
            fr_warn(R, "phase %s: %d kernel names; the %d smallest by time share the group "
                    "\"(other kernels)\"", wm_phase_name[p], ncl, ncl - keep);
        }
        for (int k = 0; k < keep; k++) {
            P->gcls[k] = cl[k].cls;
            fr_gname(P->name[k], "", cl[k].cls);
        }
        P->G = keep;
        P->other_g = -1;
        if (keep < ncl) {
            P->gcls[P->G] = NULL;
            P->other_g = P->G;
            snprintf(P->name[P->G++], WM_NAME_MAX, "(other kernels)");
        }
        free(cl);
    }
    /* the copies of the phase, if any instance has some */
    P->copy_g = -1;
    for (int q = 0; q < P->ninst && P->copy_g < 0; q++)
        if (R->in[P->inst[q]].ncopy > 0) {
            P->copy_g = P->G;
            snprintf(P->name[P->G++], WM_NAME_MAX, "(copies)");
        }
    snprintf(P->name[P->G], WM_NAME_MAX, "(gpu idle in phase)");
    /* per instance and group: microseconds and launches per forward */
    int G1 = P->G + 1;
    P->Y = calloc((size_t)P->ninst * (size_t)G1, sizeof *P->Y);
    P->L = calloc((size_t)P->ninst * (size_t)G1, sizeof *P->L);
    P->WB = calloc((size_t)P->ninst * (size_t)G1, sizeof *P->WB);
    P->WC = calloc((size_t)P->ninst * (size_t)G1, sizeof *P->WC);
    P->WD = calloc((size_t)P->ninst * (size_t)G1, sizeof *P->WD);
    P->WV = calloc((size_t)P->ninst * (size_t)G1, sizeof *P->WV);
    if (!P->Y || !P->L || !P->WB || !P->WC || !P->WD || !P->WV)
        return fr_fail(R, "out of memory");
    fr_variants(R, P);
    /* per group, the kernel whose waves the wave column counts: the one with the most time
     * in the group (by name it holds several: the GEMM class holds every GEMM) */
    const char *wname[WM_GROUPS_MAX];
    fr_top_kernels(R, P, 0, P->ninst, wname);
    for (int q = 0; q < P->ninst; q++) {
        const fr_inst *in = &R->in[P->inst[q]];
        double *y = &P->Y[(size_t)q * (size_t)G1], *l = &P->L[(size_t)q * (size_t)G1];
        if (P->copy_g >= 0) {
            y[P->copy_g] = in->copy_us / in->F;
            l[P->copy_g] = (double)in->ncopy / in->F;
        }
        for (int e = 0; e < in->ne; e++) {
            const fr_elem *el = &R->el[in->e0 + (size_t)e];
            int g = fr_elem_group(P, in, el, e);
            assert(g >= 0);
            y[g] += el->dur_us / in->F;
            /* the wave geometry of the group's kernel: its elements alike in an instance */
            double *wb = &P->WB[(size_t)q * (size_t)G1 + (size_t)g];
            double *wc = &P->WC[(size_t)q * (size_t)G1 + (size_t)g];
            if (g < WM_GROUPS_MAX && wname[g] && el->dname && strcmp(el->dname, wname[g]) == 0 &&
                *wb >= 0) {
                P->WD[(size_t)q * (size_t)G1 + (size_t)g] += el->dmax_us / in->F;
                if (*wb == 0)
                    *wb = el->blocks, *wc = el->cap;
                else if (*wb != el->blocks || *wc != el->cap)
                    *wb = -1;   /* they differ: no wave term for the group */
            }
            l[g] += (double)el->launches / in->F;
        }
    }
    /* by name, a group must be in every trace where its phase is */
    if (P->by == FIT_BY_NAME) {
        for (int g = 0; g < P->G; g++) {
            if (g == P->copy_g)
                continue;
            int present_in = -1;
            for (int q = 0; q < P->ninst && present_in < 0; q++)
                if (P->L[(size_t)q * (size_t)G1 + (size_t)g] > 0)
                    present_in = R->in[P->inst[q]].trace;
            for (int t = 0; t < R->nt; t++) {
                int has_phase = 0, has = 0;
                for (int q = 0; q < P->ninst; q++) {
                    if (R->in[P->inst[q]].trace != t)
                        continue;
                    has_phase = 1;
                    has |= P->L[(size_t)q * (size_t)G1 + (size_t)g] > 0;
                }
                if (has_phase && !has)
                    return fr_fail(R, "%s: phase %s: group %s: absent from this trace (present "
                                   "in %s); its cost cannot be fitted across traces that differ "
                                   "in their kernels: capture the traces with the same program "
                                   "and settings", R->tr[t].file, wm_phase_name[p], P->name[g],
                                   present_in >= 0 ? R->tr[present_in].file : "another trace");
            }
        }
    }
    /* launches per forward: the median over instances */
    double *v = malloc((size_t)P->ninst * sizeof *v);
    if (!v)
        return fr_fail(R, "out of memory");
    for (int g = 0; g < P->G; g++) {
        for (int q = 0; q < P->ninst; q++)
            v[q] = P->L[(size_t)q * (size_t)G1 + (size_t)g];
        int c = (int)lround(fr_median(v, (size_t)P->ninst));
        P->count[g] = c < 1 ? 1 : c;
    }
    P->count[P->G] = 1;
    free(v);
    return 0;
}

/* ---- stage 3: launch costs and host gaps --------------------------------------------------- */

/* Phases after which the host waits for the GPU (it needs the accepted lengths): the
 * simulator's sync_after (sim/sim.c). */
static int fr_sync_phase(int p) { return p == WM_ACCEPT || p == WM_SAMPLE; }

/* The phase the simulator runs after p (-1: either of two). */
static int fr_expected_next(int p, int q)
{
    switch (p) {
    case WM_DRAFT:  return q == WM_VERIFY;
    case WM_VERIFY: return q == WM_ACCEPT;
    case WM_ACCEPT: return q == WM_EXTEND;
    case WM_EXTEND: return q == WM_DRAFT || q == WM_VERIFY;
    case WM_DECODE: return q == WM_SAMPLE;
    case WM_SAMPLE: return q == WM_DECODE;
    }
    return 0;
}

static int fr_kfwd(const fr_phase *P)
{
    int k = 0;
    for (int g = 0; g <= P->G; g++)
        k += P->count[g];
    return k;
}

/* cudaGraphLaunch under CUPTI kernel tracing costs the host about 2 us per node of the
 * graph (measured on the H200: 55 us for 18 nodes, 765 us for 391; a plain launch is a few
 * us whatever the size), so the launch API time of the traces is fitted as
 * a + node_us * nodes over the graph sizes seen: a is the launch cost the simulator uses and
 * node_us * nodes, the profiler's own cost, is taken out of the host gaps. With one graph
 * size only, the median launch time is kept. v[i] is instance gi[i]'s launch time. */
#define FIT_LAUNCH_MIN_N 4   /* launches of one graph size needed to use that size */
static double fr_graph_launch_fit(fr_run *R, const double *v, size_t n)
{
    double *x = malloc((n + 1) * sizeof *x), *y = malloc((n + 1) * sizeof *y);
    double *mx = malloc((n + 1) * sizeof *mx), *my = malloc((n + 1) * sizeof *my);
    double a = fr_median((double *)v, n);
    R->node_us = 0;
    if (!x || !y || !mx || !my || n < 2)
        goto out;
    size_t k = 0;
    for (size_t i = 0; i < R->nin && k < n; i++) {
        const fr_inst *in = &R->in[i];
        if (in->drop || R->ph[in->phase].ninst == 0 || in->napi == 0 || !in->graph)
            continue;
        x[k] = in->nrec;
        y[k] = fr_us(in->le - in->lb);
        k++;
    }
    /* one point per graph size: its 10th-percentile launch time. A launch blocks while the
     * GPU's launch queue is full (seen: 45 ms for a 520-node graph behind busy work), so the
     * low end of the distribution is the launch's own cost */
    gsl_sort2(x, 1, y, 1, k);
    size_t m = 0;
    for (size_t i = 0; i < k;) {
        size_t j = i;
        while (j < k && x[j] == x[i])
            j++;
        gsl_sort(y + i, 1, j - i);
        if (j - i < FIT_LAUNCH_MIN_N) {  /* a size seen once or twice: a capture, a stall */
            i = j;
            continue;
        }
        mx[m] = x[i];
        my[m] = gsl_stats_quantile_from_sorted_data(y + i, 1, j - i, 0.1);
        m++;
        i = j;
    }
    if (getenv("FIT_DEBUG"))
        for (size_t i = 0; i < m; i++)
            fprintf(stderr, "graph size %g: launch %g us\n", mx[i], my[i]);
    if (m >= 2) {
        double c0, c1, cov00, cov01, cov11, ss;
        gsl_fit_linear(mx, 1, my, 1, m, &c0, &c1, &cov00, &cov01, &cov11, &ss);
        if (c1 > 0 && c0 > 0) {
            a = c0;
            R->node_us = c1;
        }
    }
out:
    free(x);
    free(y);
    free(mx);
    free(my);
    return a;
}

/* The profiler's part of instance in's launch time (0 outside graphs). */
static double fr_profiler_us(const fr_run *R, const fr_inst *in)
{
    return in->graph ? R->node_us * in->nrec : 0;
}

static int fr_launch_costs(fr_run *R, double *graph_us, double *eager_us)
{
    double *v = malloc((R->nin + 1) * sizeof *v), *w = malloc((R->nin + 1) * sizeof *w);
    size_t ng = 0, ne = 0, graph_noapi = 0;
    double eager_host_us = 0, eager_launches = 0;
    if (!v || !w) {
        free(v);
        free(w);
        return fr_fail(R, "out of memory");
    }
    for (size_t i = 0; i < R->nin; i++) {
        const fr_inst *in = &R->in[i];
        if (in->drop || R->ph[in->phase].ninst == 0)
            continue;
        if (in->napi == 0) {
            graph_noapi += in->graph == 1;
            continue;
        }
        double host_us = fr_us(in->le - in->lb);
        if (in->graph) {
            v[ng++] = host_us;
        } else {
            /* ratio of sums: the big eager phases (hundreds of launches, where the launch
             * cost decides) outweigh the many small ones (accept: a few launches) */
            eager_host_us += host_us;
            eager_launches += (double)fr_kfwd(&R->ph[in->phase]) * in->F;
            ne++;
        }
    }
    *graph_us = fr_graph_launch_fit(R, v, ng);
    *eager_us = eager_launches > 0 ? eager_host_us / eager_launches : 0;
    R->res->graph_launches = (int)ng;
    R->res->eager_instances = (int)ne;
    if (graph_noapi && !ng)
        fr_warn(R, "no launch API records for %zu CUDA-graph phase instances: graph_launch_us "
                "is 0 (was specprof's API recording off?)", graph_noapi);
    if (!ne)
        fr_warn(R, "no eager phase instance with launch records: eager_launch_us unmeasured "
                "(0); give --eager-launch-us when simulating batches above the captured sizes");
    free(v);
    free(w);
    return 0;
}

static int fr_host_gaps(fr_run *R, double graph_us, double eager_us)
{
    double *d = malloc((R->nin + 1) * sizeof *d);
    double dbar[WM_NPHASE], dall;
    int unexpected[WM_NPHASE][WM_NPHASE];
    memset(unexpected, 0, sizeof unexpected);
    if (!d)
        return fr_fail(R, "out of memory");
    /* pass 1: instances the GPU waited for (idle before them): gap from the GPU start */
    for (int t = 0; t < R->nt; t++) {
        size_t a = R->tin0[t], b = R->tin0[t + 1];
        int trace_api = 0;
        for (size_t i = a; i < b; i++)
            trace_api |= R->in[i].napi > 0;
        if (!trace_api && b > a)
            fr_warn(R, "%s: no launch API records: host gaps from GPU idle time only",
                    R->tr[t].file);
        for (size_t i = a; i < b; i++) {
            fr_inst *in = &R->in[i];
            in->has_gap = in->busy = 0;
            in->inter_us = 0;
            if (in->nrec == 0)
                continue;
            size_t j = i;
            int found = 0;
            for (int k = 0; j > a && k < FIT_BACK_SEARCH; k++) {
                j--;
                if (R->in[j].nrec > 0 && (in->thread == 0 || R->in[j].thread == 0 ||
                                          R->in[j].thread == in->thread)) {
                    found = 1;
                    break;
                }
            }
            if (!found)
                continue;
            const fr_inst *pj = &R->in[j];
            if (!in->drop && !fr_expected_next(pj->phase, in->phase))
                unexpected[pj->phase][in->phase]++;
            double first_us = (in->graph ? graph_us : eager_us) + fr_profiler_us(R, in);
            if (!trace_api) {
                in->gap_us = fr_us(in->g0 - pj->g1) - first_us;
                in->has_gap = 1;
                continue;
            }
            if (in->napi == 0 || pj->napi == 0)
                continue;
            int64_t ref = pj->le;
            if (fr_sync_phase(pj->phase) && pj->g1 > ref)
                ref = pj->g1;
            in->busy = in->a1e < pj->g1;
            if (!in->busy) {
                in->gap_us = fr_us(in->g0 - ref) - first_us;
                in->has_gap = 1;
            } else {
                in->inter_us = in->g0 > pj->g1 ? fr_us(in->g0 - pj->g1) : 0;
                in->gap_us = fr_us(in->lb - ref);   /* + dbar in pass 2 */
            }
        }
    }
    /* GPU start latency beyond the launch call, from the idle instances */
    size_t nall = 0;
    for (size_t i = 0; i < R->nin; i++) {
        const fr_inst *in = &R->in[i];
        if (in->has_gap && !in->busy && in->napi > 0)
            d[nall++] = fr_us(in->g0 - in->lb) - (in->graph ? graph_us : eager_us) -
                        fr_profiler_us(R, in);
    }
    dall = fr_median(d, nall);
    for (int p = 0; p < WM_NPHASE; p++) {
        size_t m = 0;
        for (size_t i = 0; i < R->nin; i++) {
            const fr_inst *in = &R->in[i];
            if (in->phase == p && in->has_gap && !in->busy && in->napi > 0)
                d[m++] = fr_us(in->g0 - in->lb) - (in->graph ? graph_us : eager_us) -
                         fr_profiler_us(R, in);
        }
        dbar[p] = m ? fr_median(d, m) : dall;
    }
    /* pass 2: instances queued behind GPU work: host gap + the usual start latency */
    for (size_t i = 0; i < R->nin; i++) {
        fr_inst *in = &R->in[i];
        if (in->busy) {
            in->gap_us += dbar[in->phase];
            in->has_gap = 1;
        }
    }
    for (int p = 0; p < WM_NPHASE; p++)
        for (int q = 0; q < WM_NPHASE; q++)
            if (unexpected[p][q])
                fr_warn(R, "%d times phase %s followed %s, which the simulator never does: its "
                        "host gap is measured from the phase that really came before",
                        unexpected[p][q], wm_phase_name[q], wm_phase_name[p]);
    free(d);
    return 0;
}

/* ---- stage 4: fits and the model ------------------------------------------------------------ */

/* A group's relative error at a configuration its traces did not hold, for the prediction
 * intervals (docs/fit.md, "Residuals"): the leave-one-cell-out rms of the form kept when
 * the GEMM sweep was compared, else the rms over the cells with the columns fitted taken
 * out (sqrt(cells / (cells - columns)), the unbiased residual variance of least squares);
 * the plain rms when there are no more cells than columns. */
static double fr_resid_frac(const fit_group_stats *st)
{
    if (st->loo_sweep >= 0 && st->loo_smooth >= 0)
        return st->sweep_kept ? st->loo_sweep : st->loo_smooth;
    if (st->ncells > st->ncols && st->ncols > 0)
        return st->rms_rel * sqrt((double)st->ncells / (double)(st->ncells - st->ncols));
    return st->rms_rel;
}

static int fr_moe(fr_run *R)
{
    if (R->o && R->o->moe_experts > 0) {
        R->moe_E = R->o->moe_experts;
        R->moe_k = R->o->moe_topk;
        return 0;
    }
    const fr_inst *src = NULL;
    for (size_t i = 0; i < R->nin; i++) {
        const fr_inst *in = &R->in[i];
        if (in->experts <= 0)
            continue;
        if (!src) {
            src = in;
            continue;
        }
        if (in->experts != src->experts || in->moe_topk != src->moe_topk)
            return fr_fail(R, "%s: NVTX range \"%.60s\": field experts/moe_topk: value %d/%d: "
                           "differs from %d/%d in %s (give --moe E,K)", R->tr[in->trace].file,
                           in->rname, in->experts, in->moe_topk, src->experts, src->moe_topk,
                           R->tr[src->trace].file);
    }
    if (src) {
        if (src->moe_topk <= 0)
            return fr_fail(R, "%s: NVTX range \"%.60s\": field moe_topk: missing: experts= "
                           "needs moe_topk=", R->tr[src->trace].file, src->rname);
        R->moe_E = src->experts;
        R->moe_k = src->moe_topk;
    }
    return 0;
}

static int fr_fit_phase(fr_run *R, int p)
{
    fr_phase *P = &R->ph[p];
    fit_phase_res *pr = &R->res->phase[p];
    wm_phase_model *pm = &R->res->model.phase[p];
    int G1 = P->G + 1, rc = -1;
    fit_point *pts = malloc((size_t)P->ninst * sizeof *pts);
    double *v = malloc((size_t)P->ninst * sizeof *v), *bv = malloc((size_t)P->ninst * sizeof *bv);
    double *wt = malloc((size_t)P->ninst * sizeof *wt), *wb = malloc((size_t)P->ninst * sizeof *wb);
    double *wc = malloc((size_t)P->ninst * sizeof *wc);
    if (!pts || !v || !bv || !wt || !wb || !wc) {
        fr_fail(R, "out of memory");
        goto out;
    }
    /* the gap pseudo-group: GPU time in the phase that no kernel fills */
    int noverlap = 0, nlb = 0;
    for (int q = 0; q < P->ninst; q++) {
        fr_inst *in = &R->in[P->inst[q]];
        double idle = fr_us(in->g1 - in->g0) - in->sum_us - in->nccl_us - in->lwait_us -
                      in->cupti_us;
        if (idle < -1e-3)
            noverlap++;
        idle += in->inter_us;
        P->Y[(size_t)q * (size_t)G1 + (size_t)P->G] = (idle > 0 ? idle : 0) / in->F;
        in->launch_bound = !in->graph && in->napi > 0 &&
                           fr_us(in->le - in->lb) >= FIT_LAUNCH_BOUND_FRAC * fr_us(in->g1 - in->g0);
        nlb += in->launch_bound;
    }
    if (noverlap)
        fr_warn(R, "phase %s: kernels overlap in %d instances (several streams): the model "
                "runs them one after another", wm_phase_name[p], noverlap);
    pm->present = 1;
    pm->ngroups = G1;
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
        pm->fitted_q_max = fmax(pm->fitted_q_max, fr_qrow(in));   /* 0: rows= unknown */
    }
    pr->present = 1;
    pr->by = P->by;
    pr->ninst = P->ninst;
    /* launch-bound eager instances stay out of the gap group (the simulator's launch bound
     * covers them) unless that leaves fewer than two token counts to fit */
    int skip_lb = 0;
    if (nlb > 0 && nlb < P->ninst) {
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
    for (int g = 0; g < G1; g++) {
        size_t m = 0;
        int gap = g == P->G;
        for (int q = 0; q < P->ninst; q++) {
            const fr_inst *in = &R->in[P->inst[q]];
            if (gap && in->launch_bound && skip_lb)
                continue;
            pts[m++] = (fit_point){.tokens = in->tokens, .kv_tokens = in->kv,
                                   .us = P->Y[(size_t)q * (size_t)G1 + (size_t)g],
                                   .trace = in->trace, .q_per_row = fr_qrow(in),
                                   .kernel_us = gap ? 0 : P->WD[(size_t)q * (size_t)G1 + (size_t)g],
                                   .variant = P->WV[(size_t)q * (size_t)G1 + (size_t)g]};
        }
        fit_group_ctx c = {.trace_names = R->tnames, .ntraces = R->nt,
                           .phase = wm_phase_name[p], .group = P->name[g],
                           .moe_experts = R->moe_E, .moe_topk = R->moe_k};
        /* all of the phase's GEMMs in one group, and a GEMM sweep with sites in the phase */
        if (!gap && P->by == FIT_BY_NAME && P->gcls[g] && strcmp(P->gcls[g], "gemm") == 0 &&
            wm_sweep_covers(&R->res->model, p)) {
            c.sweep = 1;
            c.sweep_phase = p;
            const wm_sweep *sw = &R->res->model.sweep;
            double tmax = 0;
            for (size_t i = 0; i < m; i++) {
                pts[i].sweep_us = wm_sweep_us(&R->res->model, p, pts[i].tokens, fg_q(&pts[i]));
                tmax = fmax(tmax, pts[i].tokens);
            }
            if (tmax > sw->tok[sw->ntok - 1])
                fr_warn(R, "phase %s: the traces reach %g tokens, the GEMM sweep only %g: its "
                        "cost beyond is extrapolated from its last two counts (take the sweep "
                        "further: specbench --gemm-sweep ...:%g:8)", wm_phase_name[p], tmax,
                        sw->tok[sw->ntok - 1], 8 * ceil(tmax / 8));
        }
        /* CUDA waves of the group's dominant kernel, when its blocks follow the tokens */
        if (!gap) {
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
                wt[nw] = in->tokens;
                wb[nw] = bl;
                wc[nw++] = P->WC[(size_t)q * (size_t)G1 + (size_t)g];
            }
            fit_wave_geometry(wt, wb, wc, nw, R->moe_E, R->moe_k, &c);
        }
        wm_group *wg = &pm->groups[g];
        memset(wg, 0, sizeof *wg);
        snprintf(wg->name, sizeof wg->name, "%s", P->name[g]);
        wg->count = P->count[g];
        if (fit_group(pts, m, &c, wg, &pr->grp[g].st, R->err, R->errlen))
            goto out;
        pr->grp[g].gap = gap;
        if (c.sweep && R->o && R->o->log && pr->grp[g].st.loo_sweep >= 0)
            fprintf(R->o->log, "specsim fit: phase %s: group %s: %s (left-out cells: %.1f%% rms "
                    "with the sweep, %.1f%% with the smooth fit alone)\n", wm_phase_name[p],
                    wg->name, pr->grp[g].st.sweep_kept == 2 ? "GEMM sweep + smooth fit of the rest kept"
                    : pr->grp[g].st.sweep_kept ? "GEMM sweep (scaled) kept" : "smooth fit kept",
                    100 * pr->grp[g].st.loo_sweep, 100 * pr->grp[g].st.loo_smooth);
        wg->resid_frac = fr_resid_frac(&pr->grp[g].st);
        if (wg->sd_frac > FIT_SD_FRAC_MAX) {
            fr_warn(R, "phase %s: group %s: measured spread %.2f of its cost capped at %.2f "
                    "(the simulator's jitter needs < 1/3)", wm_phase_name[p], wg->name,
                    wg->sd_frac, FIT_SD_FRAC_MAX);
            wg->sd_frac = FIT_SD_FRAC_MAX;
        }
    }
    /* host gap */
    size_t m = 0, nb = 0;
    for (int q = 0; q < P->ninst; q++) {
        const fr_inst *in = &R->in[P->inst[q]];
        if (in->has_gap) {
            v[m++] = in->gap_us;
            nb += in->busy;
        }
    }
    if (m) {
        /* single gaps may be negative (the GPU started sooner after the first launch call
         * than the launch cost the simulator charges); the mean may not */
        double mean, sd;
        size_t out = fr_robust(v, m, &mean, &sd);
        if (out > m / 100 + 2)
            fr_warn(R, "phase %s: %zu of %zu host gaps left out as outliers (graph capture, "
                    "warm-up, host stalls)", wm_phase_name[p], out, m);
        pr->gap_outliers = (int)out;
        pm->host_gap_sd_us = sd;
        pm->host_gap_us = mean > 0 ? mean : 0;
        if (mean < -0.5)
            fr_warn(R, "phase %s: host gap %.2f us on average (the GPU starts this phase "
                    "sooner after its first launch call than the launch cost the simulator "
                    "charges): 0", wm_phase_name[p], mean);
    } else {
        fr_warn(R, "phase %s: no host gap measured (no instance with a predecessor): 0",
                wm_phase_name[p]);
    }
    pr->ngaps = (int)m;
    pr->nbusy = (int)nb;
    pr->gap_sd_us = pm->host_gap_sd_us;
    /* collectives: count per forward and bytes per token, medians over the instances */
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
        int cnt = (int)lround(fr_median(v, mc));
        if (cnt < 1 || pm->ncolls >= WM_COLLS_MAX)
            continue;
        wm_coll *wc = &pm->colls[pm->ncolls++];
        snprintf(wc->op, sizeof wc->op, "%s", ops[o]);
        wc->count = cnt;
        wc->bytes_per_token = fr_median(bv, mb);
        if (mb == 0)
            fr_warn(R, "phase %s: %s kernels without byte counts (args.nccl missing): "
                    "bytes_per_token 0", wm_phase_name[p], ops[o]);
    }
    rc = 0;
out:
    free(pts);
    free(v);
    free(bv);
    free(wt);
    free(wb);
    free(wc);
    return rc;
}

/* Per phase and cell (trace, tokens): measured GPU time per forward vs the model's sum. */
static int fr_totals(fr_run *R, int p)
{
    fr_phase *P = &R->ph[p];
    fit_phase_res *pr = &R->res->phase[p];
    const wm_model *m = &R->res->model;
    int G1 = P->G + 1;
    fit_point *pts = malloc((size_t)P->ninst * sizeof *pts);
    if (!pts)
        return fr_fail(R, "out of memory");
    for (int q = 0; q < P->ninst; q++) {
        const fr_inst *in = &R->in[P->inst[q]];
        double s = 0;
        for (int g = 0; g < G1; g++)
            s += P->Y[(size_t)q * (size_t)G1 + (size_t)g];
        pts[q] = (fit_point){.tokens = in->tokens, .kv_tokens = in->kv, .us = s,
                             .trace = in->trace, .q_per_row = fr_qrow(in)};
    }
    /* cells as fit_group makes them: sort by (trace, tokens) */
    size_t *idx = malloc((size_t)P->ninst * sizeof *idx);
    fit_cell *cells = calloc((size_t)P->ninst, sizeof *cells);
    if (!idx || !cells) {
        free(pts);
        free(idx);
        free(cells);
        return fr_fail(R, "out of memory");
    }
    for (int q = 0; q < P->ninst; q++)
        idx[q] = (size_t)q;
    qsort_r(idx, (size_t)P->ninst, sizeof *idx, fg_cmp_idx, pts);
    int nc = 0;
    double *v = malloc((size_t)P->ninst * sizeof *v);
    if (!v) {
        free(pts);
        free(idx);
        free(cells);
        return fr_fail(R, "out of memory");
    }
    for (int q = 0; q < P->ninst;) {
        int r = q;
        double kv = 0;
        while (r < P->ninst && pts[idx[r]].trace == pts[idx[q]].trace &&
               pts[idx[r]].tokens == pts[idx[q]].tokens &&
               pts[idx[r]].q_per_row == pts[idx[q]].q_per_row) {
            v[r - q] = pts[idx[r]].us;
            kv += pts[idx[r]].kv_tokens;
            r++;
        }
        fit_cell *c = &cells[nc++];
        c->trace = pts[idx[q]].trace;
        c->tokens = pts[idx[q]].tokens;
        c->kv_tokens = kv / (r - q);
        c->q_per_row = fg_q(&pts[idx[q]]);
        c->n = (r - q) - (int)fr_robust(v, (size_t)(r - q), &c->us_mean, &c->us_sd);
        c->fit_us = 0;
        for (int g = 0; g < G1; g++)
            c->fit_us += wm_group_us_q(m, &m->phase[p].groups[g], c->tokens, c->kv_tokens,
                                       c->q_per_row);
        q = r;
    }
    pr->ncells = nc;
    pr->total = cells;
    free(v);
    free(idx);
    free(pts);
    return 0;
}

static void fr_free(fr_run *R)
{
    for (int p = 0; p < WM_NPHASE; p++) {
        free(R->ph[p].inst);
        free(R->ph[p].pos2g);
        free(R->ph[p].Y);
        free(R->ph[p].L);
        free(R->ph[p].WB);
        free(R->ph[p].WC);
        free(R->ph[p].WD);
        free(R->ph[p].WV);
    }
    free(R->in);
    free(R->el);
    free(R->tin0);
    free(R->tnames);
    pool_destroy(R->pool);
}

void fit_result_free(fit_result *res)
{
    if (!res)
        return;
    for (int p = 0; p < WM_NPHASE; p++) {
        for (int g = 0; g < WM_GROUPS_MAX; g++)
            free(res->phase[p].grp[g].st.cell);
        free(res->phase[p].total);
    }
    memset(res, 0, sizeof *res);
}

int fit_run(const fit_trace *traces, int n, const fit_opts *o, fit_result *res,
            char *err, size_t errlen)
{
    fr_run R;
    int rc = -1;
    memset(&R, 0, sizeof R);
    memset(res, 0, sizeof *res);
    wm_init(&res->model);
    if (o && o->sweep)
        res->model.sweep = *o->sweep;
    R.tr = traces;
    R.nt = n;
    R.o = o;
    R.res = res;
    R.err = err;
    R.errlen = errlen;
    res->ntraces = n;
    if (n < 1) {
        snprintf(err, errlen, "specsim fit: no traces given");
        return -1;
    }
    R.pool = pool_create();
    R.tin0 = calloc((size_t)n + 1, sizeof *R.tin0);
    R.tnames = calloc((size_t)n, sizeof *R.tnames);
    if (!R.pool || !R.tin0 || !R.tnames) {
        snprintf(err, errlen, "specsim fit: out of memory");
        goto out;
    }
    for (int t = 0; t < n; t++)
        R.tnames[t] = traces[t].file;
    /* GSL must not abort the program on a singular matrix: the caller gets the error */
    gsl_error_handler_t *old = gsl_set_error_handler_off();
    for (int t = 0; t < n; t++)
        if (fr_trace(&R, t))
            goto out_gsl;
    R.tin0[n] = R.nin;
    if (fr_moe(&R))
        goto out_gsl;
    int nphases = 0;
    for (int p = 0; p < WM_NPHASE; p++) {
        if (fr_group_phase(&R, p))
            goto out_gsl;
        nphases += R.ph[p].ninst > 0;
    }
    if (nphases == 0) {
        snprintf(err, errlen, "%s%s: no phase instance with kernels: nothing to fit (NVTX "
                 "ranges named draft/verify/accept/extend/decode/sample with tokens=, and "
                 "kernels launched inside them, are needed)", traces[0].file,
                 n > 1 ? " and the other traces" : "");
        goto out_gsl;
    }
    double graph_us = 0, eager_us = 0;
    if (fr_launch_costs(&R, &graph_us, &eager_us) || fr_host_gaps(&R, graph_us, eager_us))
        goto out_gsl;
    wm_model *m = &res->model;
    m->graph_launch_us = graph_us;
    m->eager_launch_us = eager_us;
    m->moe_experts = R.moe_E;
    m->moe_topk = R.moe_k;
    for (int t = 0; t < n; t++) {
        if (!traces[t].has_header)
            continue;
        if (!m->device[0])
            snprintf(m->device, sizeof m->device, "%s", traces[t].hdr.device.name);
        if (traces[t].hdr.world_size > m->ranks)
            m->ranks = traces[t].hdr.world_size;
    }
    if (o && o->name && *o->name) {
        snprintf(m->name, sizeof m->name, "%s", o->name);
    } else {
        snprintf(m->name, sizeof m->name, "fit-%.80s-tp%d", m->device[0] ? m->device : "gpu", m->ranks);
        for (char *c = m->name; *c; c++)
            if (*c == ' ')
                *c = '-';
    }
    size_t used = (size_t)snprintf(m->source, sizeof m->source, "specsim fit of %d trace%s:",
                                   n, n > 1 ? "s" : "");
    for (int t = 0; t < n && used < sizeof m->source; t++) {
        const char *b = strrchr(traces[t].file, '/');
        used += (size_t)snprintf(m->source + used, sizeof m->source - used, " %s", b ? b + 1 : traces[t].file);
    }
    for (int p = 0; p < WM_NPHASE; p++) {
        if (R.ph[p].ninst == 0)
            continue;
        if (fr_fit_phase(&R, p) || fr_totals(&R, p))
            goto out_gsl;
        res->phase[p].forwards_max = 1;
        for (int q = 0; q < R.ph[p].ninst; q++)
            if (R.in[R.ph[p].inst[q]].F > res->phase[p].forwards_max)
                res->phase[p].forwards_max = R.in[R.ph[p].inst[q]].F;
    }
    for (size_t i = 0; i < R.nin; i++)
        if (R.in[i].drop)
            res->phase[R.in[i].phase].ndropped++;
    if (!m->phase[WM_VERIFY].present && !m->phase[WM_DECODE].present)
        fr_warn(&R, "no verify or decode phase in the traces: the model cannot be simulated");
    else if (!m->phase[WM_VERIFY].present)
        fr_warn(&R, "no verify phase: the model only simulates the baseline");
    int ranks_nccl = 0;
    for (int p = 0; p < WM_NPHASE; p++)
        ranks_nccl |= m->phase[p].ncolls > 0;
    if (m->ranks > 1 && !ranks_nccl)
        fr_warn(&R, "the traces are of %d ranks but hold no NCCL kernels: no collectives in "
                "the model", m->ranks);
    rc = 0;
out_gsl:
    gsl_set_error_handler(old);
out:
    fr_free(&R);
    if (rc)
        fit_result_free(res);
    return rc;
}

/* ---- plots ---------------------------------------------------------------------------------- */

static int fp_open(FILE **f, const char *dir, const char *name, char *err, size_t errlen)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    *f = fopen(path, "w");
    if (!*f) {
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

static int fp_close(FILE *f, const char *dir, const char *name, char *err, size_t errlen)
{
    if (ferror(f) | fclose(f)) {
        snprintf(err, errlen, "%s/%s: write error", dir, name);
        return -1;
    }
    return 0;
}

static void fp_cells(FILE *f, const fit_result *res, const fit_cell *c, int n)
{
    fprintf(f, "# tokens     kv_tokens     measured_us   sd_us         fitted_us     n      trace\n"
               "# tokens     tokens        us            us            us            -      -\n");
    for (int i = 0; i < n; i++)
        fprintf(f, "%-12g %-13.6g %-13.6g %-13.6g %-13.6g %-6d %d\n", c[i].tokens,
                c[i].kv_tokens, c[i].us_mean, c[i].us_sd, c[i].fit_us, c[i].n, c[i].trace);
    (void)res;
}

int fit_plot(const fit_result *res, const char *dir, char *err, size_t errlen)
{
    const wm_model *m = &res->model;
    FILE *f, *gp;
    char name[64];
    if (ptrace_out_mkdirs(dir, err, errlen))
        return -1;
    if (fp_open(&gp, dir, "plot.gp", err, errlen))
        return -1;
    fprintf(gp, "# gnuplot script written by specsim fit: one PNG per kernel group and per phase\n"
                "# (measured cells with their spread, the fitted cost at each cell's KV context,\n"
                "# and the fitted curve at the median KV context). Run: gnuplot %s/plot.gp\n"
                "dir = '%s'\n"
                "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
                "  set terminal pngcairo size 900,600 noenhanced\n"
                "} else {\n"
                "  set terminal png size 900,600\n"
                "}\n"
                "set logscale x 2\nset grid\nset key top left\n"
                "set xlabel 'tokens in the forward'\nset ylabel 'us per forward'\n", dir, dir);
    for (int p = 0; p < WM_NPHASE; p++) {
        const fit_phase_res *pr = &res->phase[p];
        const wm_phase_model *pm = &m->phase[p];
        if (!pr->present)
            continue;
        for (int g = 0; g < pm->ngroups; g++) {
            const wm_group *wg = &pm->groups[g];
            const fit_group_stats *st = &pr->grp[g].st;
            double tmax = 0, kvs[4096];
            int nk = 0;
            for (int i = 0; i < st->ncells; i++) {
                if (st->cell[i].tokens > tmax)
                    tmax = st->cell[i].tokens;
                if (nk < 4096)
                    kvs[nk++] = st->cell[i].kv_tokens;
            }
            double kv = fr_median(kvs, (size_t)nk);
            snprintf(name, sizeof name, "%s_g%02d.dat", wm_phase_name[p], g);
            if (fp_open(&f, dir, name, err, errlen))
                goto fail;
            fprintf(f, "# phase %s group %d: %s (%d launches per forward)\n# fitted: base %.6g us"
                    " + %.6g us/token above %g tokens + %.6g us/expert + %.6g us per 1000 KV "
                    "tokens; sd_frac %.4f; cells rms error %.2f%%, max %.2f%%\n",
                    wm_phase_name[p], g, wg->name, wg->count, wg->base_us, wg->per_token_us,
                    wg->knee_tokens, wg->per_expert_us, wg->per_kv_ktoken_us, wg->sd_frac,
                    100 * st->rms_rel, 100 * st->max_rel);
            if (wg->per_kvq_ktoken_us > 0 || wg->per_kvq2_ktoken_us > 0)
                fprintf(f, "# attention tiles of %g query tokens: + %.6g us per 1000 KV tokens "
                        "per tile, + %.6g per tile past %g tiles (1, 2, 3 tiles: %.6g, %.6g, "
                        "%.6g us per 1000 KV tokens in all)\n",
                        wg->q_tile > 1 ? wg->q_tile : 1, wg->per_kvq_ktoken_us,
                        wg->per_kvq2_ktoken_us, wg->q_tile_knee,
                        wm_kv_per_ktoken(wg, 1), wm_kv_per_ktoken(wg, 1 + (wg->q_tile > 1 ? wg->q_tile : 1)),
                        wm_kv_per_ktoken(wg, 1 + 2 * (wg->q_tile > 1 ? wg->q_tile : 1)));
            fp_cells(f, res, st->cell, st->ncells);
            if (fp_close(f, dir, name, err, errlen))
                goto fail;
            snprintf(name, sizeof name, "%s_g%02d.fit", wm_phase_name[p], g);
            if (fp_open(&f, dir, name, err, errlen))
                goto fail;
            fprintf(f, "# fitted curve at the median KV context %.6g tokens\n# tokens us\n# tokens us\n", kv);
            for (int i = 0; i <= 200; i++) {
                double x = pow(2.0, log2(1.0) + (log2(tmax * 1.25 + 1) - log2(1.0)) * i / 200.0);
                fprintf(f, "%.6g %.6g\n", x, wm_group_us(m, wg, x, kv));
            }
            if (fp_close(f, dir, name, err, errlen))
                goto fail;
            double ymax = 0;
            for (int i = 0; i < st->ncells; i++)
                ymax = fmax(ymax, fmax(st->cell[i].us_mean + st->cell[i].us_sd, st->cell[i].fit_us));
            fprintf(gp, ymax > 0 ? "set yrange [0:*]\n" : "set yrange [0:1]\n");
            char terms[256];
            if (wg->sweep_scale > 0)   /* the GEMM sweep's steps are in the curve */
                snprintf(terms, sizeof terms, "base %.3g us + %.3g x the GEMM sweep%s, %.3g us/token "
                         "above %g, %.3g us/expert", wg->base_us, wg->sweep_scale,
                         st->sweep_kept == 2 ? " + the rest" : "", wg->per_token_us,
                         wg->knee_tokens, wg->per_expert_us);
            else
                snprintf(terms, sizeof terms, "base %.3g us, %.3g us/token above %g, %.3g "
                         "us/expert", wg->base_us, wg->per_token_us, wg->knee_tokens,
                         wg->per_expert_us);
            fprintf(gp, "set output dir.'/%s_g%02d.png'\n"
                        "set title '%s: %s (%d launches/forward; %s, %.3g us/kKV; sd %.3f)'\n"
                        "plot dir.'/%s_g%02d.dat' using 1:3:4 with yerrorbars pt 7 title "
                        "'measured (mean, sd per cell)', \\\n"
                        "     dir.'/%s_g%02d.dat' using 1:5 with points pt 6 ps 1.5 title "
                        "'fitted at the cell''s KV', \\\n"
                        "     dir.'/%s_g%02d.fit' using 1:2 with lines lw 2 title 'fit at "
                        "median KV'\n",
                    wm_phase_name[p], g, wm_phase_name[p], wg->name, wg->count, terms,
                    wg->per_kv_ktoken_us, wg->sd_frac, wm_phase_name[p], g, wm_phase_name[p], g,
                    wm_phase_name[p], g);
        }
        snprintf(name, sizeof name, "%s_total.dat", wm_phase_name[p]);
        if (fp_open(&f, dir, name, err, errlen))
            goto fail;
        fprintf(f, "# phase %s: GPU time per forward (kernels + gaps), measured vs the sum of the "
                "fitted groups\n", wm_phase_name[p]);
        fp_cells(f, res, pr->total, pr->ncells);
        if (fp_close(f, dir, name, err, errlen))
            goto fail;
        fprintf(gp, "set yrange [0:*]\nset output dir.'/%s_total.png'\nset title 'phase %s: GPU time per forward'\n"
                    "plot dir.'/%s_total.dat' using 1:3:4 with yerrorbars pt 7 title 'measured', "
                    "\\\n     dir.'/%s_total.dat' using 1:5 with points pt 6 ps 1.5 title "
                    "'model (sum of groups)'\n",
                wm_phase_name[p], wm_phase_name[p], wm_phase_name[p], wm_phase_name[p]);
    }
    return fp_close(gp, dir, "plot.gp", err, errlen);
fail:
    fclose(gp);
    return -1;
}
