/* arfit: the link of the all-reduce model fitted to arsweep's measured times, and the
 * `specsim fit-allreduce` subcommand (arfit.h). The model is max(floor, a + b*bytes) with
 * a = A*alpha, b = C/beta; a max has a kink, so instead of a nonlinear solver every split
 * "the k smallest sizes on the floor, the rest on the line" is fitted exactly (floor: the
 * relative-weighted mean; line: GSL weighted least squares with w = 1/t^2) and the split
 * whose full max() model has the least relative squared error wins. Tens of sizes: cheap. */
#include "arfit.h"
#include "bounds.h"
#include "ofile.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <cjson/cJSON.h>
#include <gsl/gsl_fit.h>

#define ARFIT_EXIT_BAD 2          /* bad input or a refused fit */
#define ARFIT_EXIT_IO 1           /* could not write */
#define ARFIT_MIN_SIZES 3         /* three parameters: alpha, beta, floor */
#define ARFIT_LINE_MAX 4096
#define ARFIT_FIELDS_MAX 64
#define ARFIT_US_PER_GBPS_BYTE 1e-3  /* 1 GB/s = 1e3 B/us: bytes / (gbps * 1e3) us */
#define ARFIT_LINK_FORMAT 1       /* "specsim_link" (ar_link_load checks it) */

/* ---- reading arsweep CSVs --------------------------------------------------------------- */

void arfit_data_init(arfit_data *d) { memset(d, 0, sizeof *d); }

void arfit_data_free(arfit_data *d)
{
    for (int i = 0; i < d->nfiles; i++)
        free(d->files[i]);
    free(d->files);
    free(d->rows);
    memset(d, 0, sizeof *d);
}

/* Splits line in place on ','; returns the field count (at most max). */
static int arfit_split(char *line, char **f, int max)
{
    int n = 0;
    char *p = line;
    for (;;) {
        if (n == max)
            return n + 1;                 /* too many: the caller refuses */
        f[n++] = p;
        char *c = strchr(p, ',');
        if (!c)
            return n;
        *c = '\0';
        p = c + 1;
    }
}

static void arfit_chomp(char *s)
{
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r'))
        s[--n] = '\0';
}

/* A positive finite number, else -1 with the message. */
static int arfit_pos(const char *path, int line, const char *field, const char *v,
                     double *out, char *err, size_t errlen)
{
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (end == v || *end || errno || !isfinite(x)) {
        snprintf(err, errlen, "%s: line %d: field %s: value \"%.40s\": not a number", path,
                 line, field, v);
        return -1;
    }
    if (!(x > 0)) {
        snprintf(err, errlen, "%s: line %d: field %s: value %.6g: must be > 0", path, line,
                 field, x);
        return -1;
    }
    *out = x;
    return 0;
}

static int arfit_copy(char *dst, size_t n, const char *path, int line, const char *field,
                      const char *v, char *err, size_t errlen)
{
    if (!*v || strlen(v) >= n) {
        snprintf(err, errlen, "%s: line %d: field %s: value \"%.40s\": %s", path, line, field,
                 v, *v ? "too long" : "empty");
        return -1;
    }
    memcpy(dst, v, strlen(v) + 1);
    return 0;
}

int arfit_data_load(arfit_data *d, const char *path, char *err, size_t errlen)
{
    enum { C_GPUS, C_ENV, C_MODE, C_BYTES, C_US, C_DTYPE, C_ERRORS, C_N };
    static const char *const names[C_N] = {"gpus", "env", "mode", "bytes", "time_us_median",
                                           "dtype", "errors"};
    int col[C_N], ncol = 0, lineno = 0, rc = -1;
    size_t first = d->n;
    char line[ARFIT_LINE_MAX], *f[ARFIT_FIELDS_MAX + 1];
    for (int i = 0; i < C_N; i++)
        col[i] = -1;
    FILE *fp = fopen(path, "r");
    if (!fp) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    char **files = realloc(d->files, (size_t)(d->nfiles + 1) * sizeof *files);
    if (!files || !(files[d->nfiles] = strdup(path))) {
        if (files)
            d->files = files;
        snprintf(err, errlen, "%s: out of memory", path);
        goto done;
    }
    d->files = files;
    int fidx = d->nfiles++;
    long bytes = 0;
    while (fgets(line, sizeof line, fp)) {
        lineno++;
        bytes += (long)strlen(line);
        if (bytes > BND_CSV_FILE_BYTES) {
            snprintf(err, errlen, "%s: line %d: larger than %ld bytes: not an arsweep CSV",
                     path, lineno, BND_CSV_FILE_BYTES);
            goto done;
        }
        if (!strchr(line, '\n') && !feof(fp)) {
            snprintf(err, errlen, "%s: line %d: longer than %d characters: not an arsweep CSV",
                     path, lineno, ARFIT_LINE_MAX - 2);
            goto done;
        }
        arfit_chomp(line);
        if (!line[0] || line[0] == '#')
            continue;
        int nf = arfit_split(line, f, ARFIT_FIELDS_MAX);
        if (nf > ARFIT_FIELDS_MAX) {
            snprintf(err, errlen, "%s: line %d: more than %d fields", path, lineno,
                     ARFIT_FIELDS_MAX);
            goto done;
        }
        if (ncol == 0) {                              /* the header */
            ncol = nf;
            for (int i = 0; i < nf; i++)
                for (int k = 0; k < C_N; k++)
                    if (strcmp(f[i], names[k]) == 0)
                        col[k] = i;
            for (int k = 0; k <= C_US; k++)
                if (col[k] < 0) {
                    snprintf(err, errlen, "%s: line %d: field %s: missing from the header (an "
                             "arsweep CSV has gpus, env, mode, bytes, time_us_median, ...)",
                             path, lineno, names[k]);
                    goto done;
                }
            continue;
        }
        if (nf != ncol) {
            snprintf(err, errlen, "%s: line %d: %d fields, the header has %d", path, lineno, nf,
                     ncol);
            goto done;
        }
        if (d->n == d->cap) {
            size_t cap = d->cap ? 2 * d->cap : 64;
            arfit_row *r = realloc(d->rows, cap * sizeof *r);
            if (!r) {
                snprintf(err, errlen, "%s: out of memory", path);
                goto done;
            }
            d->rows = r;
            d->cap = cap;
        }
        arfit_row *r = &d->rows[d->n];
        memset(r, 0, sizeof *r);
        r->file = fidx;
        r->line = lineno;
        double g;
        if (arfit_pos(path, lineno, "gpus", f[col[C_GPUS]], &g, err, errlen))
            goto done;
        char where[300];
        snprintf(where, sizeof where, "%.200s: line %d", path, lineno);
        if (bnd_check(&bnd_ranks, g, where, "gpus", err, errlen))
            goto done;
        r->gpus = (int)g;
        if (arfit_pos(path, lineno, "bytes", f[col[C_BYTES]], &r->bytes, err, errlen) ||
            arfit_pos(path, lineno, "time_us_median", f[col[C_US]], &r->us, err, errlen) ||
            bnd_check(&bnd_bytes, r->bytes, where, "bytes", err, errlen) ||
            bnd_check(&bnd_cost_us, r->us, where, "time_us_median", err, errlen) ||
            arfit_copy(r->env, sizeof r->env, path, lineno, "env", f[col[C_ENV]], err, errlen) ||
            arfit_copy(r->mode, sizeof r->mode, path, lineno, "mode", f[col[C_MODE]], err,
                       errlen))
            goto done;
        if (col[C_DTYPE] >= 0 && arfit_copy(r->dtype, sizeof r->dtype, path, lineno, "dtype",
                                            f[col[C_DTYPE]], err, errlen))
            goto done;
        if (col[C_ERRORS] >= 0 && strcmp(f[col[C_ERRORS]], "0") != 0) {
            snprintf(err, errlen, "%s: line %d: field errors: value \"%.20s\": arsweep found a "
                     "wrong all-reduce result for this size; the time is not trusted (rerun)",
                     path, lineno, f[col[C_ERRORS]]);
            goto done;
        }
        d->n++;
    }
    if (ferror(fp)) {
        snprintf(err, errlen, "%s: read error", path);
        goto done;
    }
    if (ncol == 0 || d->n == first) {
        snprintf(err, errlen, "%s: line %d: no %s: not an arsweep CSV", path, lineno,
                 ncol ? "data rows" : "header");
        goto done;
    }
    rc = 0;
done:
    fclose(fp);
    if (rc)
        d->n = first;
    return rc;
}

/* ---- the formulas ----------------------------------------------------------------------- */

/* The algorithms arsweep's NCCL runs can be fitted with. "nccl-tree" is NCCL's tree as NCCL
 * builds it inside one node, a chain (models/allreduce.c ar_nccl_chain_us, docs/allreduce.md):
 * 2(N-1) steps, 2*bytes through each port. Custom P2P kernels (oneshot, twoshot, custom)
 * are not what NCCL runs, so they are not offered. */
static const char *const arfit_algos[] = {"ring", "tree", "nccl", "nccl-tree"};
#define ARFIT_NALGO (int)(sizeof arfit_algos / sizeof arfit_algos[0])

int arfit_formula(const char *algo, int n, double *steps_coef, double *bytes_coef, char *err,
                  size_t errlen)
{
    int known = 0;
    for (int i = 0; i < ARFIT_NALGO; i++)
        known |= strcmp(algo, arfit_algos[i]) == 0;
    if (!known) {
        snprintf(err, errlen, "algorithm: value \"%s\": no fit formula (ring, tree, nccl, "
                 "nccl-tree)", algo);
        return -1;
    }
    if (n < 2) {
        snprintf(err, errlen, "gpus: value %d: a one-rank all-reduce moves no data; fitting a "
                 "link needs >= 2 GPUs", n);
        return -1;
    }
    if (strcmp(algo, "nccl-tree") == 0) {
        *steps_coef = 2.0 * (n - 1);
        *bytes_coef = 2.0;
        return 0;
    }
    /* Read A and C off allreduce.c's own function, so the fit prices exactly what the
     * simulator will: unit alpha with no bytes gives A; unit bandwidth (1 GB/s) with no
     * latency gives C * bytes / 1e3; a third probe checks the sum is linear. */
    const ar_algo *a = ar_algo_find(algo);
    ar_link l;
    memset(&l, 0, sizeof l);
    l.latency_us = 1;
    l.bw_gbps = 1;
    double big = 1e6;
    double t_alpha = ar_time_us(a, &l, 0, n);
    double t_both = ar_time_us(a, &l, big, n);
    l.latency_us = 0;
    double t_bytes = ar_time_us(a, &l, big, n);
    *steps_coef = t_alpha;
    *bytes_coef = t_bytes / (big * ARFIT_US_PER_GBPS_BYTE);
    if (!(t_alpha > 0) || !(t_bytes > 0) ||
        fabs(t_both - t_alpha - t_bytes) > 1e-9 * t_both) {
        snprintf(err, errlen, "algorithm: value \"%s\": not of the form A*alpha + C*bytes/beta "
                 "at %d ranks", algo, n);
        return -1;
    }
    return 0;
}

/* ---- the fit ---------------------------------------------------------------------------- */

typedef struct {
    double x, y;
} arfit_pt;

static int arfit_cmp_pt(const void *a, const void *b)
{
    double d = ((const arfit_pt *)a)->x - ((const arfit_pt *)b)->x;
    return d < 0 ? -1 : d > 0;
}

static double arfit_model(double f, double a, double b, double x)
{
    double t = a + b * x;
    return t > f ? t : f;
}

int arfit_fit_points(const double *bytes, const double *us, size_t n, int gpus,
                     const char *algo, const char *label, arfit_result *r, char *err,
                     size_t errlen)
{
    int rc = -1;
    char inner[512];
    arfit_pt *p = NULL;
    double *xs = NULL, *ys = NULL, *ws = NULL;
    size_t *start = NULL;               /* index of the first point of each distinct size */
    memset(r, 0, sizeof *r);
    double A, C;
    if (arfit_formula(algo, gpus, &A, &C, inner, sizeof inner)) {
        snprintf(err, errlen, "%s: field %s", label, inner);
        return -1;
    }
    p = malloc((n ? n : 1) * sizeof *p);
    xs = malloc((n ? n : 1) * sizeof *xs);
    ys = malloc((n ? n : 1) * sizeof *ys);
    ws = malloc((n ? n : 1) * sizeof *ws);
    start = malloc((n + 1) * sizeof *start);
    if (!p || !xs || !ys || !ws || !start) {
        snprintf(err, errlen, "%s: out of memory", label);
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        if (!(bytes[i] > 0) || !(us[i] > 0) || !isfinite(bytes[i]) || !isfinite(us[i])) {
            snprintf(err, errlen, "%s: field %s: value %.6g: must be > 0", label,
                     !(bytes[i] > 0) || !isfinite(bytes[i]) ? "bytes" : "time_us_median",
                     !(bytes[i] > 0) || !isfinite(bytes[i]) ? bytes[i] : us[i]);
            goto done;
        }
        p[i].x = bytes[i];
        p[i].y = us[i];
    }
    if (n)
        qsort(p, n, sizeof *p, arfit_cmp_pt);
    int m = 0;
    for (size_t i = 0; i < n; i++)
        if (i == 0 || p[i].x != p[i - 1].x)
            start[m++] = i;
    start[m] = n;
    if (m < ARFIT_MIN_SIZES) {
        snprintf(err, errlen, "%s: field bytes: value %.0f: %d distinct message size%s in %zu "
                 "point%s: need >= %d sizes to fit alpha, beta and the floor (run arsweep "
                 "over a range, --min-bytes .. --max-bytes)", label, n ? p[0].x : 0.0, m,
                 m == 1 ? "" : "s", n, n == 1 ? "" : "s", ARFIT_MIN_SIZES);
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        xs[i] = p[i].x;
        ys[i] = p[i].y;
        ws[i] = 1.0 / (p[i].y * p[i].y);      /* relative residuals */
    }

    /* every split: sizes [0, k) on the floor, [k, m) on the line (>= 2 sizes) */
    double best = INFINITY, bf = 0, ba = 0, bb = 0, bcov00 = 0, bcov11 = 0, bchi = 0;
    int bk = -1;
    for (int k = 0; k <= m - 2; k++) {
        size_t s0 = start[k], nl = n - s0;
        double c0, c1, cov00, cov01, cov11, chisq;
        gsl_fit_wlinear(xs + s0, 1, ws + s0, 1, ys + s0, 1, nl, &c0, &c1, &cov00, &cov01,
                        &cov11, &chisq);
        if (c0 < 0) {                         /* latency >= 0: the line through the origin */
            gsl_fit_wmul(xs + s0, 1, ws + s0, 1, ys + s0, 1, nl, &c1, &cov11, &chisq);
            c0 = 0;
            cov00 = 0;
        }
        if (!(c1 > 0) || !isfinite(c1))
            continue;
        double f = 0, sw = 0, swy = 0;
        for (size_t i = 0; i < s0; i++) {
            sw += ws[i];
            swy += ws[i] * ys[i];
        }
        if (s0 > 0)
            f = swy / sw;
        double cost = 0;
        for (size_t i = 0; i < n; i++) {
            double e = (arfit_model(f, c0, c1, xs[i]) - ys[i]) / ys[i];
            cost += e * e;
        }
        if (cost < best) {
            best = cost;
            bk = k;
            bf = f;
            ba = c0;
            bb = c1;
            bcov00 = cov00;
            bcov11 = cov11;
            bchi = chisq;
        }
    }
    if (bk < 0) {
        snprintf(err, errlen, "%s: field time_us_median: the times do not grow with bytes "
                 "(no split gives a positive slope): not an all-reduce sweep, or every size "
                 "sits on the floor (extend --max-bytes)", label);
        goto done;
    }

    r->resid = calloc((size_t)m, sizeof *r->resid);
    if (!r->resid) {
        snprintf(err, errlen, "%s: out of memory", label);
        goto done;
    }
    snprintf(r->algo, sizeof r->algo, "%s", algo);
    r->gpus = gpus;
    r->steps_coef = A;
    r->bytes_coef = C;
    r->link.latency_us = ba / A;
    r->link.bw_gbps = C / (bb / ARFIT_US_PER_GBPS_BYTE);
    r->link.floor_us = bf;
    /* Standard errors. GSL's covariance takes the weights as 1/sigma^2; ours are relative,
     * so scale by the reduced chi-square (the scatter the line actually shows). */
    size_t nline = n - start[bk];
    int free_params = ba > 0 ? 2 : 1;
    double red = nline > (size_t)free_params ? bchi / (double)(nline - (size_t)free_params) : -1;
    r->line_points = nline;
    r->line_params = free_params;
    r->alpha_sd_us = red >= 0 && ba > 0 ? sqrt(bcov00 * red) / A : -1;
    r->beta_sd_gbps = red >= 0 ? r->link.bw_gbps * sqrt(bcov11 * red) / bb : -1;
    size_t nf = start[bk];
    if (nf >= 2) {
        double s = 0;
        for (size_t i = 0; i < nf; i++)
            s += ws[i] * (ys[i] - bf) * (ys[i] - bf);
        r->floor_sd_us = bf * sqrt(s / (double)(nf - 1)) / sqrt((double)nf);
    } else {
        r->floor_sd_us = -1;
    }
    r->floor_to_bytes = bk > 0 ? xs[start[bk] - 1] : 0;
    r->points = n;
    r->nsizes = m;
    double sum2 = 0, maxe = 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs(arfit_model(bf, ba, bb, xs[i]) - ys[i]) / ys[i];
        sum2 += e * e;
        if (e > maxe)
            maxe = e;
    }
    r->rms_rel = sqrt(sum2 / (double)n);
    r->max_rel = maxe;
    for (int k = 0; k < m; k++) {
        arfit_resid *q = &r->resid[k];
        double s = 0;
        for (size_t i = start[k]; i < start[k + 1]; i++)
            s += ys[i];
        q->bytes = xs[start[k]];
        q->points = (int)(start[k + 1] - start[k]);
        q->measured_us = s / q->points;
        q->model_us = arfit_model(bf, ba, bb, q->bytes);
        q->rel_err = (q->model_us - q->measured_us) / q->measured_us;
        q->on_floor = bf >= ba + bb * q->bytes;
    }
    rc = 0;
done:
    free(p);
    free(xs);
    free(ys);
    free(ws);
    free(start);
    if (rc)
        arfit_result_free(r);
    return rc;
}

void arfit_result_free(arfit_result *r)
{
    free(r->resid);
    r->resid = NULL;
}

/* ---- selecting rows ----------------------------------------------------------------------- */

static int arfit_row_match(const arfit_row *w, const arfit_select *s)
{
    return (!s->gpus || w->gpus == s->gpus) && (!s->env || strcmp(w->env, s->env) == 0) &&
           (!s->mode || strcmp(w->mode, s->mode) == 0) &&
           (!s->dtype || strcmp(w->dtype, s->dtype) == 0);
}

/* The value of one field among the selected rows: the only one, or -1 with the list of the
 * values present and the option that picks one. */
static int arfit_unique(const arfit_data *d, const arfit_select *s, int which,
                        const char *opt, char *out, size_t outlen, char *err, size_t errlen)
{
    char list[600] = "";
    int distinct = 0;
    out[0] = '\0';
    for (size_t i = 0; i < d->n; i++) {
        const arfit_row *w = &d->rows[i];
        if (!arfit_row_match(w, s))
            continue;
        char v[ARFIT_ENV_MAX];
        if (which == 0)
            snprintf(v, sizeof v, "%d", w->gpus);
        else
            snprintf(v, sizeof v, "%s", which == 1 ? w->env : which == 2 ? w->mode : w->dtype);
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++) {
            const arfit_row *u = &d->rows[j];
            if (!arfit_row_match(u, s))
                continue;
            seen = which == 0 ? u->gpus == w->gpus
                 : strcmp(v, which == 1 ? u->env : which == 2 ? u->mode : u->dtype) == 0;
        }
        if (seen)
            continue;
        if (distinct++ == 0)
            snprintf(out, outlen, "%s", v);
        size_t L = strlen(list);
        snprintf(list + L, sizeof list - L, "%s\"%s\"", L ? ", " : "", v);
    }
    if (distinct > 1) {
        snprintf(err, errlen, "%s: field %s: values %s: several in the input; pick one with %s",
                 d->nfiles ? d->files[0] : "input", opt + 2, list, opt);
        return -1;
    }
    return 0;
}

/* The formula for an env string: NCCL_ALGO absent -> nccl (NCCL's own choice, the ring on
 * one node), Ring -> ring, Tree -> nccl-tree. */
static int arfit_algo_for_env(const char *env, const char *file, char *algo, size_t len,
                              char *err, size_t errlen)
{
    const char *p = strstr(env, "NCCL_ALGO=");
    while (p && p != env && p[-1] != ';')
        p = strstr(p + 1, "NCCL_ALGO=");
    if (!p) {
        snprintf(algo, len, "nccl");
        return 0;
    }
    p += strlen("NCCL_ALGO=");
    size_t n = strcspn(p, ";");
    if ((n == 4 && strncasecmp(p, "ring", 4) == 0)) {
        snprintf(algo, len, "ring");
        return 0;
    }
    if ((n == 4 && strncasecmp(p, "tree", 4) == 0)) {
        snprintf(algo, len, "nccl-tree");
        return 0;
    }
    snprintf(err, errlen, "%s: field env: value \"NCCL_ALGO=%.*s\": no formula for this "
             "setting (Ring or Tree); give --algo ring|tree|nccl|nccl-tree", file, (int)n, p);
    return -1;
}

int arfit_fit(const arfit_data *d, const arfit_select *sel, arfit_result *r, char *err,
              size_t errlen)
{
    char gv[32], env[ARFIT_ENV_MAX], mode[16], dtype[16], algo[16];
    arfit_select s = *sel;
    memset(r, 0, sizeof *r);
    const char *file = d->nfiles ? d->files[0] : "input";
    if (arfit_unique(d, &s, 0, "--gpus", gv, sizeof gv, err, errlen) ||
        arfit_unique(d, &s, 1, "--env", env, sizeof env, err, errlen) ||
        arfit_unique(d, &s, 2, "--mode", mode, sizeof mode, err, errlen) ||
        arfit_unique(d, &s, 3, "--dtype", dtype, sizeof dtype, err, errlen))
        return -1;
    if (!gv[0]) {
        snprintf(err, errlen, "%s: no rows match gpus %d, env \"%s\", mode \"%s\", dtype "
                 "\"%s\"", file, sel->gpus, sel->env ? sel->env : "*",
                 sel->mode ? sel->mode : "*", sel->dtype ? sel->dtype : "*");
        return -1;
    }
    s.gpus = atoi(gv);
    s.env = env;
    s.mode = mode;
    s.dtype = dtype;
    if (sel->algo)
        snprintf(algo, sizeof algo, "%s", sel->algo);
    else if (arfit_algo_for_env(env, file, algo, sizeof algo, err, errlen))
        return -1;
    size_t n = 0;
    double *x = malloc((d->n ? d->n : 1) * sizeof *x), *y = malloc((d->n ? d->n : 1) * sizeof *y);
    if (!x || !y) {
        free(x);
        free(y);
        snprintf(err, errlen, "%s: out of memory", file);
        return -1;
    }
    for (size_t i = 0; i < d->n; i++)
        if (arfit_row_match(&d->rows[i], &s)) {
            x[n] = d->rows[i].bytes;
            y[n++] = d->rows[i].us;
        }
    char label[600];
    snprintf(label, sizeof label, "%s%s (gpus %d, env %s, mode %s%s%s)", file,
             d->nfiles > 1 ? " and others" : "", s.gpus, env, mode, dtype[0] ? ", dtype " : "",
             dtype);
    int rc = arfit_fit_points(x, y, n, s.gpus, algo, label, r, err, errlen);
    free(x);
    free(y);
    if (rc)
        return -1;
    snprintf(r->env, sizeof r->env, "%s", env);
    snprintf(r->mode, sizeof r->mode, "%s", mode);
    snprintf(r->dtype, sizeof r->dtype, "%s", dtype);
    return 0;
}

/* ---- the link file ------------------------------------------------------------------------ */

/* Which standard errors could not be estimated and why, as one sentence in buf; 0 when
 * all three were (nothing to say). */
static int arfit_sd_note(const arfit_result *r, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    int few = r->line_points <= (size_t)r->line_params;   /* no scatter left to measure */
    if (few)
        n += (size_t)snprintf(buf, len, "%sbw_sd_gbps not estimable: the line holds %zu "
                              "point%s for its %d parameter%s (no scatter left to measure; "
                              "measure more sizes past the floor)",
                              r->alpha_sd_us < 0 ? "latency_sd_us, " : "", r->line_points,
                              r->line_points == 1 ? "" : "s", r->line_params,
                              r->line_params == 1 ? "" : "s");
    else if (r->alpha_sd_us < 0)
        n += (size_t)snprintf(buf, len, "latency_sd_us not estimable: the latency was fitted "
                              "at 0 (the line through the origin)");
    if (r->floor_sd_us < 0 && r->floor_to_bytes > 0 && n < len)
        n += (size_t)snprintf(buf + n, len - n, "%sfloor_sd_us not estimable: one size on the "
                              "floor", n ? "; " : "");
    return n > 0;
}

/* NaN-free JSON number: a standard error that could not be estimated is null. */
static void arfit_add_sd(cJSON *o, const char *key, double v)
{
    if (v >= 0)
        cJSON_AddNumberToObject(o, key, v);
    else
        cJSON_AddNullToObject(o, key);
}

int arfit_write_json(const arfit_result *r, const arfit_data *d, const char *name,
                     const char *path, char *err, size_t errlen)
{
    int rc = -1;
    char *text = NULL;
    cJSON *root = cJSON_CreateObject(), *fit = NULL, *files = NULL, *res = NULL;
    if (!root)
        goto oom;
    char src[1024], flist[600] = "";
    for (int i = 0; d && i < d->nfiles; i++) {
        size_t L = strlen(flist);
        snprintf(flist + L, sizeof flist - L, "%s%s", i ? ", " : "", d->files[i]);
    }
    snprintf(src, sizeof src, "specsim fit-allreduce of %s: %d GPUs, env %s, mode %s%s%s, "
             "formula %s over %zu points (%d sizes), rms rel. err %.1f%%", flist[0] ? flist : "points",
             r->gpus, r->env[0] ? r->env : "?", r->mode[0] ? r->mode : "?",
             r->dtype[0] ? ", dtype " : "", r->dtype, r->algo, r->points, r->nsizes,
             100 * r->rms_rel);
    if (!cJSON_AddNumberToObject(root, "specsim_link", ARFIT_LINK_FORMAT) ||
        !cJSON_AddStringToObject(root, "name", name) ||
        !cJSON_AddNumberToObject(root, "latency_us", r->link.latency_us) ||
        !cJSON_AddNumberToObject(root, "bw_gbps", r->link.bw_gbps) ||
        !cJSON_AddNumberToObject(root, "floor_us", r->link.floor_us) ||
        !cJSON_AddStringToObject(root, "algorithm", r->algo) ||
        !cJSON_AddStringToObject(root, "source", src))
        goto oom;
    fit = cJSON_AddObjectToObject(root, "fit");
    if (!fit)
        goto oom;
    files = cJSON_AddArrayToObject(fit, "files");
    for (int i = 0; files && d && i < d->nfiles; i++)
        cJSON_AddItemToArray(files, cJSON_CreateString(d->files[i]));
    cJSON_AddNumberToObject(fit, "gpus", r->gpus);
    cJSON_AddStringToObject(fit, "env", r->env);
    cJSON_AddStringToObject(fit, "mode", r->mode);
    cJSON_AddStringToObject(fit, "dtype", r->dtype);
    cJSON_AddStringToObject(fit, "formula", "time_us = max(floor_us, steps_coef*latency_us + "
                            "bytes_coef*bytes/(bw_gbps*1e3))");
    cJSON_AddNumberToObject(fit, "steps_coef", r->steps_coef);
    cJSON_AddNumberToObject(fit, "bytes_coef", r->bytes_coef);
    cJSON_AddNumberToObject(fit, "points", (double)r->points);
    cJSON_AddNumberToObject(fit, "sizes", r->nsizes);
    cJSON_AddNumberToObject(fit, "floor_to_bytes", r->floor_to_bytes);
    arfit_add_sd(fit, "latency_sd_us", r->alpha_sd_us);
    arfit_add_sd(fit, "bw_sd_gbps", r->beta_sd_gbps);
    arfit_add_sd(fit, "floor_sd_us", r->floor_sd_us);
    cJSON_AddNumberToObject(fit, "rms_rel_err", r->rms_rel);
    cJSON_AddNumberToObject(fit, "max_rel_err", r->max_rel);
    res = cJSON_AddArrayToObject(root, "residuals");
    if (!res)
        goto oom;
    for (int k = 0; k < r->nsizes; k++) {
        cJSON *o = cJSON_CreateObject();
        if (!o)
            goto oom;
        cJSON_AddItemToArray(res, o);
        cJSON_AddNumberToObject(o, "bytes", r->resid[k].bytes);
        cJSON_AddNumberToObject(o, "points", r->resid[k].points);
        cJSON_AddNumberToObject(o, "measured_us", r->resid[k].measured_us);
        cJSON_AddNumberToObject(o, "model_us", r->resid[k].model_us);
        cJSON_AddNumberToObject(o, "rel_err", r->resid[k].rel_err);
        cJSON_AddBoolToObject(o, "on_floor", r->resid[k].on_floor);
    }
    char note[400];
    if (arfit_sd_note(r, note, sizeof note) && !cJSON_AddStringToObject(fit, "sd_note", note))
        goto oom;
    text = cJSON_Print(root);
    if (!text)
        goto oom;
    size_t len = strlen(text);
    char *nl = realloc(text, len + 2);
    if (!nl)
        goto oom;
    text = nl;
    text[len] = '\n';
    text[len + 1] = '\0';
    /* what is written must load: the simulator's reader is the judge, before the write
     * (a refused link leaves the file at path as it was) */
    ar_link back;
    char why[768];
    if (ar_link_from_text(text, path, &back, why, sizeof why)) {
        snprintf(err, errlen, "%s: not written: the link would not load back: %s", path, why);
        rc = -2;
        goto done;
    }
    /* LINK.json.tmp renamed into place; a device or FIFO given as -o written in place */
    rc = ofile_write(path, text, len + 1, err, errlen);
    goto done;
oom:
    snprintf(err, errlen, "%s: out of memory", path);
done:
    free(text);
    cJSON_Delete(root);
    return rc;
}

/* ---- the subcommand --------------------------------------------------------------------- */

static void arfit_usage(FILE *f)
{
    fprintf(f,
        "usage: specsim fit-allreduce SWEEP.csv... -o LINK.json [options]\n"
        "  Fits the all-reduce link (latency_us, bw_gbps, floor_us; docs/allreduce.md) to\n"
        "  arsweep CSVs (bin/arsweep --csv); the file is used with specsim run --link LINK.json.\n"
        "  -o, --out FILE     the link file to write (required)\n"
        "      --name NAME    link name (default fit-<gpus>gpu-<formula>-<mode>)\n"
        "      --gpus N       fit the rows of N GPUs (needed when the CSVs hold several)\n"
        "      --env S        the rows of this env column (e.g. default, NCCL_P2P_DISABLE=1)\n"
        "      --mode M       eager or graph (needed when both are present)\n"
        "      --dtype D      bf16 or float (needed when both are present)\n"
        "      --algo A       formula: ring, tree, nccl, nccl-tree (default from the env's\n"
        "                     NCCL_ALGO: none -> nccl, Ring -> ring, Tree -> nccl-tree)\n"
        "      --quiet        no report\n"
        "  Exit status: 0 fitted, 2 bad input or a refused fit, 1 write error.\n");
}

static void arfit_report(FILE *f, const arfit_result *r, const char *name, const char *out)
{
    fprintf(f, "# link %s -> %s\n", name, out);
    fprintf(f, "# rows: %d GPUs, env %s, mode %s%s%s: %zu points, %d sizes\n", r->gpus, r->env,
            r->mode, r->dtype[0] ? ", dtype " : "", r->dtype, r->points, r->nsizes);
    fprintf(f, "# formula %s: time_us = max(floor_us, %g*latency_us + %g*bytes/(bw_gbps*1e3))\n",
            r->algo, r->steps_coef, r->bytes_coef);
    char sa[32] = "n/a", sb[32] = "n/a", sf[32] = "n/a";
    if (r->alpha_sd_us >= 0)
        snprintf(sa, sizeof sa, "%.3g", r->alpha_sd_us);
    if (r->beta_sd_gbps >= 0)
        snprintf(sb, sizeof sb, "%.3g", r->beta_sd_gbps);
    if (r->floor_sd_us >= 0)
        snprintf(sf, sizeof sf, "%.3g", r->floor_sd_us);
    fprintf(f, "# latency_us %.4g (sd %s), bw_gbps %.4g (sd %s), floor_us %.4g (sd %s)",
            r->link.latency_us, sa, r->link.bw_gbps, sb, r->link.floor_us, sf);
    if (r->floor_to_bytes > 0)
        fprintf(f, "; floor up to %.0f B\n", r->floor_to_bytes);
    else
        fprintf(f, "; no size on the floor\n");
    fprintf(f, "# relative error over the points: rms %.2f%%, max %.2f%%\n", 100 * r->rms_rel,
            100 * r->max_rel);
    fprintf(f, "#%13s %6s %12s %12s %8s %6s\n", "bytes", "points", "measured_us", "model_us",
            "rel_err", "regime");
    fprintf(f, "#%13s %6s %12s %12s %8s %6s\n", "(B)", "", "(us, mean)", "(us)", "(%)", "");
    for (int k = 0; k < r->nsizes; k++) {
        const arfit_resid *q = &r->resid[k];
        fprintf(f, "%14.0f %6d %12.3f %12.3f %8.2f %6s\n", q->bytes, q->points, q->measured_us,
                q->model_us, 100 * q->rel_err, q->on_floor ? "floor" : "line");
    }
}

int arfit_main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"out", required_argument, NULL, 'o'}, {"name", required_argument, NULL, 'n'},
        {"gpus", required_argument, NULL, 'g'}, {"env", required_argument, NULL, 'e'},
        {"mode", required_argument, NULL, 'm'}, {"dtype", required_argument, NULL, 'd'},
        {"algo", required_argument, NULL, 'a'}, {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
    };
    const char *out = NULL, *name = NULL;
    arfit_select sel = {0, NULL, NULL, NULL, NULL};
    int quiet = 0, c, rc = ARFIT_EXIT_BAD;
    char err[2048];
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":o:hq", opts, NULL)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case 'n': name = optarg; break;
        case 'e': sel.env = optarg; break;
        case 'm': sel.mode = optarg; break;
        case 'd': sel.dtype = optarg; break;
        case 'a': sel.algo = optarg; break;
        case 'q': quiet = 1; break;
        case 'g': {
            char *end;
            long v = strtol(optarg, &end, 10);
            if (end == optarg || *end || v < 2 || v > 4096) {
                fprintf(stderr, "specsim fit-allreduce: field --gpus: value \"%s\": expected "
                        "an integer >= 2\n", optarg);
                return ARFIT_EXIT_BAD;
            }
            sel.gpus = (int)v;
            break;
        }
        case 'h': arfit_usage(stdout); return 0;
        case ':':
            fprintf(stderr, "specsim fit-allreduce: field %s: missing value\n", argv[optind - 1]);
            return ARFIT_EXIT_BAD;
        default:
            fprintf(stderr, "specsim fit-allreduce: field %s: unknown option (specsim "
                    "fit-allreduce --help)\n", argv[optind - 1]);
            return ARFIT_EXIT_BAD;
        }
    }
    int nf = argc - optind;
    if (nf < 1 || !out) {
        fprintf(stderr, "specsim fit-allreduce: field %s: missing: give arsweep CSVs and -o "
                "LINK.json\n", nf < 1 ? "SWEEP.csv" : "--out");
        arfit_usage(stderr);
        return ARFIT_EXIT_BAD;
    }
    if (name && (!*name || strlen(name) >= sizeof ((ar_link *)0)->name)) {
        fprintf(stderr, "specsim fit-allreduce: field --name: value \"%s\": 1..%zu characters\n",
                name, sizeof ((ar_link *)0)->name - 1);
        return ARFIT_EXIT_BAD;
    }
    arfit_data d;
    arfit_result r;
    arfit_data_init(&d);
    memset(&r, 0, sizeof r);
    for (int i = 0; i < nf; i++)
        if (arfit_data_load(&d, argv[optind + i], err, sizeof err)) {
            fprintf(stderr, "%s\n", err);
            goto out;
        }
    if (arfit_fit(&d, &sel, &r, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        goto out;
    }
    char defname[64];
    snprintf(defname, sizeof defname, "fit-%dgpu-%s-%s", r.gpus, r.algo, r.mode);
    if (!name)
        name = defname;
    if (!quiet) {
        printf("# specsim fit-allreduce: %d file%s:", nf, nf > 1 ? "s" : "");
        for (int i = 0; i < d.nfiles; i++)
            printf(" %s", d.files[i]);
        printf(" (%zu rows read)\n", d.n);
        arfit_report(stdout, &r, name, out);
    }
    char note[400];
    if (arfit_sd_note(&r, note, sizeof note))
        fprintf(stderr, "specsim fit-allreduce: warning: %s (written as null)\n", note);
    int w = arfit_write_json(&r, &d, name, out, err, sizeof err);
    if (w) {
        fprintf(stderr, "%s\n", err);
        rc = w == -2 ? ARFIT_EXIT_BAD : ARFIT_EXIT_IO;
        goto out;
    }
    rc = 0;   /* arfit_write_json wrote only what ar_link_load takes */
out:
    arfit_result_free(&r);
    arfit_data_free(&d);
    return rc;
}
