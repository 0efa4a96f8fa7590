/* fit_hf: the hf-assisted loop's model from specprof traces annotated by specprof_torch
 * (fit_hf.h). Each trace's helper ranges are read in time order; consecutive ones in one
 * window give the forwards and the host stretches between them, classified by what came
 * before (a draft after verify is the round's catch-up forward, after a draft another draft);
 * every phase's host cost is the median of its stretches over the kernels launched in them.
 * Workload: batch-1 eager generates, host-bound; one Python thread per trace. */
#include "fit_hf.h"
#include "fit_int.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { HR_DECODE, HR_VERIFY, HR_DRAFT, HR_PREFILL, HR_DPREFILL, HR_OTHER };

typedef struct {
    int64_t r0, r1;
    int     kind;
    double  tokens, ctx;
    long    win;              /* window index; -2: the trace has no windows */
    int     ok;               /* inside one window (or no windows) */
    long    grp;              /* its run of the host: one generate inside one window */
} fh_range;

typedef struct {
    int64_t t;                /* GPU record start */
    double  us;
} fh_rec;

typedef struct {
    double *host, *k, *gpu, *tok;
    long   *grp;              /* the stretch's run of the host (fh_range.grp) */
    size_t  n, cap;
} fh_arr;

static const char *const fh_what[FIT_HF_NSTAT] = {
    "decode forward", "decode -> decode", "verify forward", "draft -> verify",
    "catch-up draft forward", "verify -> catch-up (all accepted)",
    "verify -> catch-up (one rejected)", "draft forward", "draft -> draft",
};

static int fh_push(fh_arr *a, double host, double k, double gpu, double tok, long grp)
{
    if (a->n == a->cap) {
        size_t c = a->cap ? 2 * a->cap : 64;
        double *h = realloc(a->host, c * sizeof *h), *kk = h ? realloc(a->k, c * sizeof *kk) : NULL;
        if (h)
            a->host = h;
        if (kk)
            a->k = kk;
        double *g = kk ? realloc(a->gpu, c * sizeof *g) : NULL;
        if (g)
            a->gpu = g;
        double *t = g ? realloc(a->tok, c * sizeof *t) : NULL;
        if (t)
            a->tok = t;
        long *r = t ? realloc(a->grp, c * sizeof *r) : NULL;
        if (!r)
            return -1;
        a->grp = r;
        a->cap = c;
    }
    a->host[a->n] = host;
    a->k[a->n] = k;
    a->gpu[a->n] = gpu;
    a->tok[a->n] = tok;
    a->grp[a->n] = grp;
    a->n++;
    return 0;
}

static int fh_cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int fh_cmp_rec(const void *a, const void *b)
{
    int64_t x = ((const fh_rec *)a)->t, y = ((const fh_rec *)b)->t;
    return (x > y) - (x < y);
}

static int fh_cmp_range(const void *a, const void *b)
{
    int64_t x = ((const fh_range *)a)->r0, y = ((const fh_range *)b)->r0;
    return (x > y) - (x < y);
}

/* Quantile q of v[0..n) (linear between ranks; 0 when n is 0 or out of memory); v is
 * left as it is (the arrays hold one instance per index). */
static double fh_quant(const double *v0, size_t n, double q)
{
    double *v = n ? malloc(n * sizeof *v) : NULL;
    if (!v)
        return 0;
    memcpy(v, v0, n * sizeof *v);
    qsort(v, n, sizeof *v, fh_cmp_d);
    double x = q * (double)(n - 1);
    size_t i = (size_t)x;
    double r = i + 1 < n ? v[i] + (x - (double)i) * (v[i + 1] - v[i]) : v[n - 1];
    free(v);
    return r;
}

/* The value of key= in a range name ("tokens=3"), -1 when absent. */
static double fh_key(const char *name, const char *key)
{
    size_t kl = strlen(key);
    for (const char *p = name; (p = strstr(p, key)) != NULL; p += kl)
        if ((p == name || p[-1] == ' ') && p[kl] == '=')
            return strtod(p + kl + 1, NULL);
    return -1;
}

static int fh_kind(const char *name)
{
    static const struct { const char *w; int k; } words[] = {
        {"decode", HR_DECODE}, {"verify", HR_VERIFY}, {"draft", HR_DRAFT},
        {"prefill", HR_PREFILL}, {"draft_prefill", HR_DPREFILL},
    };
    size_t wl = strcspn(name, " ");
    if (fh_key(name, "tokens") < 0)
        return HR_OTHER;
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (strlen(words[i].w) == wl && strncmp(name, words[i].w, wl) == 0)
            return words[i].k;
    return HR_OTHER;
}

/* Kernels and copies whose start lies in [a, b): their count and GPU time (prefix sums). */
static void fh_between(const fh_rec *r, const double *cum, size_t n, int64_t a, int64_t b,
                       double *k, double *us)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t m = (lo + hi) / 2;
        if (r[m].t < a) lo = m + 1; else hi = m;
    }
    size_t i = lo;
    lo = i, hi = n;
    while (lo < hi) {
        size_t m = (lo + hi) / 2;
        if (r[m].t < b) lo = m + 1; else hi = m;
    }
    *k = (double)(lo - i);
    *us = cum[lo] - cum[i];
}

/* One trace into the stretch arrays. *ngrp counts the runs of the host over the traces: a
 * run is one generate (from a prefill range to the next) inside one window. */
static int fh_trace(const fit_trace *t, fh_arr *A, fit_hf_report *rep, long *ngrp)
{
    int rc = -1;
    size_t nr = 0, nrec = t->nkern + t->nmem;
    fh_range *R = calloc(t->nrng ? t->nrng : 1, sizeof *R);
    fh_rec *G = calloc(nrec ? nrec : 1, sizeof *G);
    double *cum = calloc(nrec + 1, sizeof *cum);
    if (!R || !G || !cum)
        goto out;
    for (size_t i = 0; i < t->nkern; i++)
        G[i] = (fh_rec){t->kern[i].start_ns, (double)(t->kern[i].end_ns - t->kern[i].start_ns) / 1e3};
    for (size_t i = 0; i < t->nmem; i++)
        G[t->nkern + i] = (fh_rec){t->mem[i].start_ns, (double)(t->mem[i].end_ns - t->mem[i].start_ns) / 1e3};
    qsort(G, nrec, sizeof *G, fh_cmp_rec);
    for (size_t i = 0; i < nrec; i++)
        cum[i + 1] = cum[i] + G[i].us;
    for (size_t i = 0; i < t->nrng; i++) {
        const ptrace_range *g = &t->rng[i];
        int kind = fh_kind(g->name);
        if (kind == HR_OTHER)
            continue;
        fh_range *h = &R[nr++];
        h->r0 = g->start_ns;
        h->r1 = g->end_ns;
        h->kind = kind;
        h->tokens = fh_key(g->name, "tokens");
        h->ctx = fh_key(g->name, "ctx");
        if (t->nwin == 0) {
            h->win = -2;
            h->ok = 1;
        } else {
            h->win = fit_trace_window_of(t, h->r0);
            h->ok = h->win >= 0 && fit_trace_window_of(t, h->r1) == h->win;
        }
        rep->ranges++;
        rep->skipped += !h->ok;
    }
    qsort(R, nr, sizeof *R, fh_cmp_range);
    long gen = 0, last_gen = -1, last_win = -3;
    for (size_t i = 0; i < nr; i++) {
        gen += R[i].kind == HR_PREFILL;
        if (gen != last_gen || R[i].win != last_win)
            (*ngrp)++;
        last_gen = gen;
        last_win = R[i].win;
        R[i].grp = *ngrp;
    }
    for (size_t i = 0; i < nr; i++) {
        const fh_range *q = &R[i];
        double k, us;
        if (!q->ok)
            continue;
        fh_between(G, cum, nrec, q->r0, q->r1, &k, &us);
        double host = (double)(q->r1 - q->r0) / 1e3;
        if (q->kind == HR_DECODE && fh_push(&A[FIT_HF_DECODE], host, k, us, q->tokens, q->grp))
            goto out;
        if (q->kind == HR_VERIFY) {
            if (fh_push(&A[FIT_HF_VERIFY], host, k, us, q->tokens, q->grp))
                goto out;
            if (q->tokens > rep->verify_tokens_max)
                rep->verify_tokens_max = q->tokens;
        }
        if (i == 0)
            continue;
        const fh_range *p = &R[i - 1];
        if (!p->ok || p->win != q->win || q->r0 < p->r1)
            continue;
        double gk, gus, gap = (double)(q->r0 - p->r1) / 1e3;
        fh_between(G, cum, nrec, p->r1, q->r0, &gk, &gus);
        int s = -1;
        if (p->kind == HR_DECODE && q->kind == HR_DECODE)
            s = FIT_HF_DECODE_GAP;
        else if (p->kind == HR_DRAFT && q->kind == HR_VERIFY)
            s = FIT_HF_VERIFY_GAP;
        else if (p->kind == HR_VERIFY && q->kind == HR_DRAFT) {
            /* the target gained new = catch-up ctx - verify ctx + 1 tokens of its tokens:
             * fewer than all means a draft token was rejected */
            int rej = p->ctx >= 0 && q->ctx >= 0 && q->ctx - p->ctx + 1 < p->tokens;
            s = rej ? FIT_HF_REJECT_GAP : FIT_HF_ACCEPT_GAP;
            if (fh_push(&A[FIT_HF_CATCHUP], host, k, us, q->tokens, q->grp))
                goto out;
        } else if (p->kind == HR_DRAFT && q->kind == HR_DRAFT) {
            s = FIT_HF_DRAFT_GAP;
            if (fh_push(&A[FIT_HF_DRAFT], host, k, us, q->tokens, q->grp))
                goto out;
        }
        if (s >= 0 && fh_push(&A[s], gap, gk, gus, 0, q->grp))
            goto out;
    }
    rc = 0;
out:
    free(R);
    free(G);
    free(cum);
    return rc;
}

static void fh_group(wm_phase_model *ph, const char *name, double kernels, double gpu_us)
{
    wm_group *g = &ph->groups[ph->ngroups++];
    snprintf(g->name, sizeof g->name, "%s", name);
    g->count = kernels >= 1 ? (int)lround(kernels) : 1;
    g->base_us = gpu_us > 0 ? gpu_us : 0;
}

/* A phase of kernels launched at one host cost: host_us over the groups' kernels. */
static void fh_phase(wm_model *m, int p, double host_us, double tokens_max)
{
    wm_phase_model *ph = &m->phase[p];
    int k = 0;
    for (int i = 0; i < ph->ngroups; i++)
        k += ph->groups[i].count;
    ph->present = 1;
    ph->always_eager = 1;
    ph->eager_launch_us = k > 0 && host_us > 0 ? host_us / k : 0;
    ph->fitted_tokens_max = tokens_max;
    ph->fitted_q_max = tokens_max;
}

typedef struct {
    long   g;                 /* run */
    size_t i;                 /* order read (ties) */
    double x;                 /* log(host / its kind's median) */
} fh_gx;

static int fh_cmp_gx(const void *a, const void *b)
{
    const fh_gx *x = a, *y = b;
    if (x->g != y->g)
        return x->g < y->g ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

/* The host's level between its runs (wm_model host_speed_level_sd; docs/fit.md 4b): every
 * stretch as the log of its host time over its kind's median, and those logs as a one-way
 * random-effects layout over the runs (one generate inside one window; fh_trace): with k runs
 * of n_g stretches, N in all, MSB and MSW the mean squares between and within them and n0 =
 * (N - sum n_g^2 / N) / (k - 1), the level's variance is (MSB - MSW) / n0, 0 when below.
 * Taken where k - 1 >= FIT_LEVEL_MIN_DF and N > k; the sd within the runs (sqrt MSW) becomes
 * the per-iteration host sd (no autocorrelation fitted). Why: transformers' eager generate on
 * the H200 ran its decode forwards at 19.5-29.3 ms from window to window of one capture
 * (traces/hf/hf_k2), and the unprofiled grid's per-round speedups spread 0.64-1.37x
 * (traces/hf/hf_grid.csv), where the intervals without a level held 50% of the rounds. */
static void fh_host_level(const fh_arr *A, fit_hf_report *rep, wm_model *m)
{
    size_t n = 0;
    for (int s = 0; s < FIT_HF_NSTAT; s++)
        n += A[s].n;
    fh_gx *v = n ? malloc(n * sizeof *v) : NULL;
    if (!v)
        return;
    size_t N = 0;
    for (int s = 0; s < FIT_HF_NSTAT; s++) {
        double med = rep->st[s].host_us;
        for (size_t i = 0; i < A[s].n; i++)
            if (med > 0 && A[s].host[i] > 0) {
                v[N] = (fh_gx){A[s].grp[i], N, log(A[s].host[i] / med)};
                N++;
            }
    }
    qsort(v, N, sizeof *v, fh_cmp_gx);   /* the stretches of one run together */
    double tot = 0, ssw = 0, ssb = 0, sn2 = 0;
    size_t k = 0;
    for (size_t i = 0; i < N; i++)
        tot += v[i].x;
    double grand = N ? tot / (double)N : 0;
    for (size_t a = 0, b; a < N; a = b) {
        double sm = 0;
        for (b = a; b < N && v[b].g == v[a].g; b++)
            sm += v[b].x;
        double ng = (double)(b - a), mg = sm / ng;
        for (size_t i = a; i < b; i++)
            ssw += (v[i].x - mg) * (v[i].x - mg);
        ssb += ng * (mg - grand) * (mg - grand);
        sn2 += ng * ng;
        k++;
    }
    free(v);
    rep->level_runs = (int)k;
    if (k < FIT_LEVEL_MIN_DF + 1 || N <= k || fit_env_off("FIT_HOST_LEVEL"))
        return;
    double msb = ssb / (double)(k - 1), msw = ssw / (double)(N - k);
    double n0 = ((double)N - sn2 / (double)N) / (double)(k - 1);
    double l2 = n0 > 0 ? (msb - msw) / n0 : 0;
    rep->level_sd = l2 > 0 ? sqrt(l2) : 0;
    rep->within_sd = sqrt(msw);
    m->host_speed_level_sd = rep->level_sd;
    m->host_speed_sd_frac = rep->within_sd;
    m->host_speed_rho = 0;
}

int fit_hf_run(const fit_trace *tr, int nt, const char *name, FILE *log, wm_model *m,
               fit_hf_report *rep, char *err, size_t errlen)
{
    fh_arr A[FIT_HF_NSTAT];
    int rc = -1;
    long ngrp = 0;
    memset(A, 0, sizeof A);
    memset(rep, 0, sizeof *rep);
    wm_init(m);
    for (int i = 0; i < nt; i++)
        if (fh_trace(&tr[i], A, rep, &ngrp)) {
            snprintf(err, errlen, "%s: out of memory", tr[i].file);
            goto out;
        }
    for (int s = 0; s < FIT_HF_NSTAT; s++) {
        fit_hf_stat *st = &rep->st[s];
        fh_arr *a = &A[s];
        st->what = fh_what[s];
        st->n = (int)a->n;
        st->host_q1_us = fh_quant(a->host, a->n, 0.25);
        st->host_us = fh_quant(a->host, a->n, 0.5);
        st->host_q3_us = fh_quant(a->host, a->n, 0.75);
        st->kernels = fh_quant(a->k, a->n, 0.5);
        st->gpu_us = fh_quant(a->gpu, a->n, 0.5);
    }
    static const int need[] = {FIT_HF_DECODE, FIT_HF_DECODE_GAP, FIT_HF_VERIFY, FIT_HF_VERIFY_GAP,
                               FIT_HF_CATCHUP, FIT_HF_DRAFT, FIT_HF_DRAFT_GAP};
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
        if (rep->st[need[i]].n == 0) {
            snprintf(err, errlen, "%s%s: field ranges: no \"%s\" in %d ranges (%d outside a window): "
                     "the hf-assisted fit needs specprof_torch's ranges of plain and assisted "
                     "generates with num_assistant_tokens >= 2 (docs/pytorch.md)", tr[0].file,
                     nt > 1 ? " (and the others)" : "", fh_what[need[i]], rep->ranges, rep->skipped);
            goto out;
        }
    const fit_hf_stat *S = rep->st;
    int acc = S[FIT_HF_ACCEPT_GAP].n ? FIT_HF_ACCEPT_GAP : FIT_HF_REJECT_GAP;
    if (!S[FIT_HF_ACCEPT_GAP].n && !S[FIT_HF_REJECT_GAP].n) {
        snprintf(err, errlen, "%s: field ranges: no verify followed by a draft forward in one "
                 "window: the host work after verify is not measured", tr[0].file);
        goto out;
    }
    m->loop = WM_LOOP_HF;
    snprintf(m->device, sizeof m->device, "%s", tr[0].has_header ? tr[0].hdr.device.name : "");
    if (name)
        snprintf(m->name, sizeof m->name, "%s", name);
    else
        snprintf(m->name, sizeof m->name, "hf-assisted-%.80s", m->device[0] ? m->device : "gpu");
    for (char *c = m->name; *c; c++)
        if (*c == ' ')
            *c = '-';
    snprintf(m->source, sizeof m->source, "fitted from %d trace%s by specsim fit --loop hf-assisted "
             "(models/fit_hf.c): medians of %d helper ranges and the host between them", nt,
             nt > 1 ? "s" : "", rep->ranges - rep->skipped);

    /* plain decode: the target's forward, then the host work to the next one (logits,
     * stopping criteria, the blocking read of the token) as the sample phase */
    fh_group(&m->phase[WM_DECODE], "forward", S[FIT_HF_DECODE].kernels, S[FIT_HF_DECODE].gpu_us);
    fh_phase(m, WM_DECODE, S[FIT_HF_DECODE].host_us, 1);
    fh_group(&m->phase[WM_SAMPLE], "host between forwards", S[FIT_HF_DECODE_GAP].kernels,
             S[FIT_HF_DECODE_GAP].gpu_us);
    fh_phase(m, WM_SAMPLE, S[FIT_HF_DECODE_GAP].host_us, 1);

    /* verify: the host after the last draft forward (the assistant's generate returning,
     * the candidates built) and the target's forward over K+1 tokens; its GPU time as a line
     * in the tokens where the traces hold two token counts or more */
    {
        fh_arr *v = &A[FIT_HF_VERIFY];
        double tmin = 1e300, tmax = -1;
        for (size_t i = 0; i < v->n; i++) {
            tmin = fmin(tmin, v->tok[i]);
            tmax = fmax(tmax, v->tok[i]);
        }
        double slope = 0;
        if (tmax > tmin) {
            double *lo = calloc(v->n, sizeof *lo), *hi = calloc(v->n, sizeof *hi);
            size_t nl = 0, nh = 0;
            if (!lo || !hi) {
                free(lo);
                free(hi);
                snprintf(err, errlen, "%s: out of memory", tr[0].file);
                goto out;
            }
            for (size_t i = 0; i < v->n; i++) {
                if (v->tok[i] == tmin) lo[nl++] = v->gpu[i];
                if (v->tok[i] == tmax) hi[nh++] = v->gpu[i];
            }
            slope = (fh_quant(hi, nh, 0.5) - fh_quant(lo, nl, 0.5)) / (tmax - tmin);
            if (slope < 0)
                slope = 0;
            free(lo);
            free(hi);
        } else if (log)
            fprintf(log, "specsim fit: warning: hf-assisted: verify ran at one token count (%g): "
                    "its GPU time is taken as flat in K\n", tmin);
        wm_phase_model *ph = &m->phase[WM_VERIFY];
        fh_group(ph, "forward", S[FIT_HF_VERIFY].kernels, S[FIT_HF_VERIFY].gpu_us);
        if (tmax > tmin) {
            ph->groups[0].per_token_all_us = slope;
            ph->groups[0].base_us = fmax(0, S[FIT_HF_VERIFY].gpu_us - slope * 0.5 * (tmin + tmax));
        }
        fh_group(ph, "host before (after the last draft)", S[FIT_HF_VERIFY_GAP].kernels,
                 S[FIT_HF_VERIFY_GAP].gpu_us);
        fh_phase(m, WM_VERIFY, S[FIT_HF_VERIFY].host_us + S[FIT_HF_VERIFY_GAP].host_us,
                 rep->verify_tokens_max);
    }

    /* accept: the host work after verify (argmax, compare, the blocking read of the
     * matches, the candidate generator's next call); a rejection adds the cache crop,
     * priced on extend as host_gap_reject_us */
    fh_group(&m->phase[WM_ACCEPT], "host after verify", S[acc].kernels, S[acc].gpu_us);
    fh_phase(m, WM_ACCEPT, S[acc].host_us, 0);   /* host work: no token dependence fitted */
    fh_group(&m->phase[WM_EXTEND], "catch-up forward", S[FIT_HF_CATCHUP].kernels,
             S[FIT_HF_CATCHUP].gpu_us);
    fh_phase(m, WM_EXTEND, S[FIT_HF_CATCHUP].host_us, 2);
    if (S[FIT_HF_ACCEPT_GAP].n && S[FIT_HF_REJECT_GAP].n)
        m->phase[WM_EXTEND].host_gap_reject_us =
            fmax(0, S[FIT_HF_REJECT_GAP].host_us - S[FIT_HF_ACCEPT_GAP].host_us);
    else if (log)
        fprintf(log, "specsim fit: warning: hf-assisted: the traces hold %s after verify only: "
                "the cost of a rejection is not measured (0)\n",
                S[FIT_HF_ACCEPT_GAP].n ? "full acceptances" : "rejections");

    /* draft: each forward after the first of a round, with the host before it (the
     * assistant's generate loop: logits, stopping criteria, the blocking read) */
    fh_group(&m->phase[WM_DRAFT], "forward", S[FIT_HF_DRAFT].kernels, S[FIT_HF_DRAFT].gpu_us);
    fh_group(&m->phase[WM_DRAFT], "host before", S[FIT_HF_DRAFT_GAP].kernels,
             S[FIT_HF_DRAFT_GAP].gpu_us);
    fh_phase(m, WM_DRAFT, S[FIT_HF_DRAFT].host_us + S[FIT_HF_DRAFT_GAP].host_us, 1);

    double host = 0, kern = 0;
    for (int s = 0; s < FIT_HF_NSTAT; s++) {
        host += S[s].host_us * S[s].n;
        kern += S[s].kernels * S[s].n;
    }
    m->eager_launch_us = kern > 0 ? host / kern : 0;
    fh_host_level(A, rep, m);
    rc = 0;
out:
    for (int s = 0; s < FIT_HF_NSTAT; s++) {
        free(A[s].host);
        free(A[s].k);
        free(A[s].gpu);
        free(A[s].tok);
        free(A[s].grp);
    }
    return rc;
}

void fit_hf_print(FILE *f, const fit_hf_report *rep)
{
    fprintf(f, "# hf-assisted loop: %d helper ranges, %d outside one window (left out)\n",
            rep->ranges, rep->skipped);
    fprintf(f, "# %-36s %5s %10s %10s %10s %8s %9s\n", "stretch", "n", "host_p50", "host_p25",
            "host_p75", "kernels", "gpu_p50");
    fprintf(f, "# %-36s %5s %10s %10s %10s %8s %9s\n", "", "", "us", "us", "us", "", "us");
    for (int s = 0; s < FIT_HF_NSTAT; s++) {
        const fit_hf_stat *st = &rep->st[s];
        fprintf(f, "  %-36s %5d %10.1f %10.1f %10.1f %8.0f %9.1f\n", st->what, st->n, st->host_us,
                st->host_q1_us, st->host_q3_us, st->kernels, st->gpu_us);
    }
    if (rep->within_sd > 0)
        fprintf(f, "# host speed: level sd %.4f between %d runs (a generate inside a window), sd "
                "%.4f within them (the prediction intervals' host part)\n", rep->level_sd,
                rep->level_runs, rep->within_sd);
    else
        fprintf(f, "# host speed: %d runs (a generate inside a window): no level between them "
                "fitted (it needs %d or more, and FIT_HOST_LEVEL not 0)\n", rep->level_runs,
                FIT_LEVEL_MIN_DF + 1);
}
