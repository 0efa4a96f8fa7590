/* accept: acceptance models chosen by name from a table (STYLE 7): "alpha" (i.i.d. per
 * position), "positional" (conditional chance per depth) and "histogram" (an empirical
 * accepted-length distribution). Why: the accepted length drives every speculative speedup,
 * and users know it in one of these three forms. Each request draws once per iteration, so
 * a draw is a handful of uniforms (steps <= 32); docs/acceptance.md has the equations. */
#include "accept.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One acceptance model kind. depth_p is NULL for kinds without a per-depth chance. */
typedef struct {
    const char *name;
    int         min_values, max_values;
    int    (*fill)(accept_model *a, const double *v, int n, const char *spec,
                   char *err, size_t errlen);
    double (*depth_p)(const accept_model *a, int d); /* d = 1..steps */
    int    (*draw)(const accept_model *a, int g, const int *width, gsl_rng *r);
    double (*expected)(const accept_model *a, int g, const int *width);
} acc_kind;

int accept_tree_widths(int steps, int topk, int draft_tokens, int width[ACC_MAX_POS])
{
    if (steps > ACC_MAX_POS)
        steps = ACC_MAX_POS;
    if (steps < 0)
        steps = 0;
    if (topk < 1)
        topk = 1;
    long budget = (draft_tokens > 0 ? draft_tokens : steps + 1) - 1; /* the root is not a draft */
    long prev = 1; /* the root: depth 1 hangs off it */
    int g = 0;
    for (int d = 0; d < ACC_MAX_POS; d++)
        width[d] = 0;
    for (int d = 0; d < steps && budget > 0; d++) {
        /* keep one node for each later depth while the budget allows, spend the rest here */
        long later = steps - d - 1;
        long reserve = later < budget - 1 ? later : budget - 1;
        long cap = prev * topk; /* each node has at most topk children */
        long w = budget - reserve;
        if (w > cap)
            w = cap;
        width[d] = (int)w;
        budget -= w;
        prev = w;
        g = d + 1;
    }
    return g;
}

/* --- per-depth kinds: alpha and positional --- */

static double acc_alpha_p(const accept_model *a, int d)
{
    (void)d;
    return a->alpha;
}

static double acc_positional_p(const accept_model *a, int d)
{
    int i = d - 1 < a->npos ? d - 1 : a->npos - 1; /* beyond the list: repeat the last */
    return a->pos[i];
}

static double acc_q(const accept_model *a, const acc_kind *k, int d, int w)
{
    if (w <= 0)
        return 0;
    double p = k->depth_p(a, d);
    return w == 1 ? p : 1.0 - pow(1.0 - p, w);
}

static const acc_kind *acc_kind_of(const accept_model *a);

static int acc_depth_draw(const accept_model *a, int g, const int *width, gsl_rng *r)
{
    const acc_kind *k = acc_kind_of(a);
    int n = 0;
    while (n < g && gsl_rng_uniform(r) < acc_q(a, k, n + 1, width[n]))
        n++;
    return n;
}

/* E[accepted] = sum_{i=1..g} prod_{d<=i} q_d: depth i counts iff depths 1..i all accept. */
static double acc_depth_expected(const accept_model *a, int g, const int *width)
{
    const acc_kind *k = acc_kind_of(a);
    double e = 0, prod = 1;
    for (int d = 1; d <= g; d++) {
        prod *= acc_q(a, k, d, width[d - 1]);
        e += prod;
    }
    return e;
}

static int acc_alpha_fill(accept_model *a, const double *v, int n, const char *spec,
                          char *err, size_t errlen)
{
    (void)n;
    if (!(v[0] >= 0 && v[0] < 1)) {
        snprintf(err, errlen, "accept: value %g in \"%s\": alpha must be >= 0 and < 1 "
                 "(at 1 every draft token would be accepted)", v[0], spec);
        return -1;
    }
    a->alpha = v[0];
    return 0;
}

static int acc_positional_fill(accept_model *a, const double *v, int n, const char *spec,
                               char *err, size_t errlen)
{
    for (int i = 0; i < n; i++) {
        if (!(v[i] >= 0 && v[i] <= 1)) {
            snprintf(err, errlen, "accept: value %g (depth %d) in \"%s\": a per-depth "
                     "acceptance must be between 0 and 1", v[i], i + 1, spec);
            return -1;
        }
        a->pos[i] = v[i];
    }
    a->npos = n;
    return 0;
}

/* --- histogram --- */

static int acc_hist_fill(accept_model *a, const double *v, int n, const char *spec,
                         char *err, size_t errlen)
{
    double sum = 0;
    for (int i = 0; i < n; i++) {
        if (!(v[i] >= 0)) {
            snprintf(err, errlen, "accept: value %g (weight of %d accepted) in \"%s\": "
                     "a weight must be >= 0", v[i], i, spec);
            return -1;
        }
        sum += v[i];
    }
    if (!(sum > 0) || !isfinite(sum)) {
        snprintf(err, errlen, "accept: value \"%s\": the histogram weights must not all be "
                 "zero", spec);
        return -1;
    }
    for (int i = 0; i < n; i++)
        a->hist[i] = v[i] / sum;
    a->nhist = n;
    return 0;
}

/* Mass above g accepted tokens is folded into g: a measured histogram may come from a
 * deeper draft than the run asks for (docs/acceptance.md). */
static int acc_hist_draw(const accept_model *a, int g, const int *width, gsl_rng *r)
{
    (void)width;
    double u = gsl_rng_uniform(r), cum = 0;
    int k = a->nhist - 1;
    for (int i = 0; i < a->nhist; i++) {
        cum += a->hist[i];
        if (u < cum) {
            k = i;
            break;
        }
    }
    return k < g ? k : g;
}

static double acc_hist_expected(const accept_model *a, int g, const int *width)
{
    (void)width;
    double e = 0;
    for (int i = 0; i < a->nhist; i++)
        e += (i < g ? i : g) * a->hist[i];
    return e;
}

static const acc_kind acc_kinds[ACC_NKIND] = {
    [ACC_ALPHA] = {"alpha", 1, 1, acc_alpha_fill, acc_alpha_p, acc_depth_draw,
                   acc_depth_expected},
    [ACC_POSITIONAL] = {"positional", 1, ACC_MAX_POS, acc_positional_fill, acc_positional_p,
                        acc_depth_draw, acc_depth_expected},
    [ACC_HISTOGRAM] = {"histogram", 1, ACC_MAX_POS + 1, acc_hist_fill, NULL, acc_hist_draw,
                       acc_hist_expected},
};

static const acc_kind *acc_kind_of(const accept_model *a)
{
    return &acc_kinds[a->kind];
}

/* Parses comma-separated numbers of list into v (at most max). Returns count or -1. */
static int acc_parse_list(const char *list, double *v, int max, const char *spec,
                          char *err, size_t errlen)
{
    int n = 0;
    const char *p = list;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char buf[64];
        while (len && isspace((unsigned char)*p)) {
            p++;
            len--;
        }
        while (len && isspace((unsigned char)p[len - 1]))
            len--;
        if (len == 0 || len >= sizeof buf) {
            snprintf(err, errlen, "accept: value \"%.*s\" (entry %d) in \"%s\": %s",
                     (int)(len < 40 ? len : 40), p, n + 1, spec,
                     len ? "not a number" : "empty entry (two commas, or a comma at the end?)");
            return -1;
        }
        memcpy(buf, p, len);
        buf[len] = '\0';
        char *end;
        errno = 0;
        double x = strtod(buf, &end);
        if (end != buf + len || !isfinite(x)) {
            snprintf(err, errlen, "accept: value \"%s\" (entry %d) in \"%s\": not a finite "
                     "number", buf, n + 1, spec);
            return -1;
        }
        if (n == max) {
            snprintf(err, errlen, "accept: value \"%s\" (entry %d) in \"%s\": at most %d "
                     "values for this model", buf, n + 1, spec, max);
            return -1;
        }
        v[n++] = x;
        if (!comma)
            return n;
        p = comma + 1;
    }
}

int accept_parse(accept_model *a, const char *spec, char *err, size_t errlen)
{
    double v[ACC_MAX_POS + 2];
    memset(a, 0, sizeof *a);
    if (spec == NULL || *spec == '\0') {
        snprintf(err, errlen, "accept: value \"\": empty (try alpha:0.7, positional:0.8,0.6 "
                 "or histogram:0.1,0.3,0.6)");
        return -1;
    }
    const char *colon = strchr(spec, ':');
    int kind = -1;
    const char *list = spec;
    if (colon == NULL) {
        kind = ACC_ALPHA; /* a bare number is an alpha */
    } else {
        size_t len = (size_t)(colon - spec);
        for (int k = 0; k < ACC_NKIND; k++)
            if (strlen(acc_kinds[k].name) == len && strncmp(spec, acc_kinds[k].name, len) == 0)
                kind = k;
        if (kind < 0) {
            snprintf(err, errlen, "accept: value \"%.*s\" in \"%s\": unknown acceptance model "
                     "(expected alpha, positional or histogram)", (int)(len < 40 ? len : 40),
                     spec, spec);
            return -1;
        }
        list = colon + 1;
    }
    const acc_kind *k = &acc_kinds[kind];
    int n = acc_parse_list(list, v, k->max_values, spec, err, errlen);
    if (n < 0)
        goto fail;
    if (n < k->min_values) {
        snprintf(err, errlen, "accept: value \"%s\": %s needs at least %d value(s)", spec,
                 k->name, k->min_values);
        goto fail;
    }
    a->kind = kind;
    a->name = k->name;
    if (k->fill(a, v, n, spec, err, errlen) != 0)
        goto fail;
    return 0;
fail:
    memset(a, 0, sizeof *a);
    return -1;
}

double accept_depth_prob(const accept_model *a, int d, int w)
{
    const acc_kind *k = acc_kind_of(a);
    if (k->depth_p == NULL)
        return -1;
    return acc_q(a, k, d, w);
}

int accept_draw(const accept_model *a, int steps, int topk, int draft_tokens, gsl_rng *r)
{
    int width[ACC_MAX_POS];
    int g = accept_tree_widths(steps, topk, draft_tokens, width);
    return acc_kind_of(a)->draw(a, g, width, r);
}

double accept_expected(const accept_model *a, int steps, int topk, int draft_tokens)
{
    int width[ACC_MAX_POS];
    int g = accept_tree_widths(steps, topk, draft_tokens, width);
    return acc_kind_of(a)->expected(a, g, width);
}

int accept_alpha_for_len(double len, int steps, int topk, int draft_tokens, double *alpha,
                         char *err, size_t errlen)
{
    int width[ACC_MAX_POS];
    int depth = accept_tree_widths(steps, topk, draft_tokens, width);
    if (!(len >= 1) || !(len < depth + 1)) {
        snprintf(err, errlen, "accept: value %g: an accept length must be >= 1 and < %d (the "
                 "draft's %d depths + 1; reached only if every draft token were accepted)",
                 len, depth + 1, depth);
        return -1;
    }
    accept_model a;
    memset(&a, 0, sizeof a);
    a.kind = ACC_ALPHA;
    a.name = "alpha";
    double lo = 0, hi = 1;
    for (int i = 0; i < 100 && hi - lo > 1e-13; i++) {
        a.alpha = 0.5 * (lo + hi);
        if (accept_expected(&a, steps, topk, draft_tokens) + 1 < len)
            lo = a.alpha;
        else
            hi = a.alpha;
    }
    *alpha = 0.5 * (lo + hi);
    if (*alpha >= 1)
        *alpha = nextafter(1.0, 0.0);
    return 0;
}

void accept_format(const accept_model *a, char *buf, size_t len)
{
    const double *v = a->kind == ACC_ALPHA ? &a->alpha
                    : a->kind == ACC_POSITIONAL ? a->pos : a->hist;
    int n = a->kind == ACC_ALPHA ? 1 : a->kind == ACC_POSITIONAL ? a->npos : a->nhist;
    size_t used = (size_t)snprintf(buf, len, "%s:", acc_kinds[a->kind].name);
    for (int i = 0; i < n && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%.6g", i ? "," : "", v[i]);
}
