/* fit_host: stage 3, the launch API records -> launch costs and host gaps. In: the instances
 * with their launch calls and GPU spans; out: the graph and eager launch costs (the
 * profiler's per-node cost taken out) and per instance the host gap before it (fr_inst.gap_us).
 * Workload: 10^3..10^5 instances. */
#include "fit_int.h"
#include "interval.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_fit.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

/* ---- stage 3: launch costs and host gaps --------------------------------------------------- */

/* Phases after which the host waits for the GPU (it needs the accepted lengths): the
 * simulator's sync_after (sim/sim.c). */
static int fh_sync_phase(int p) { return p == WM_ACCEPT || p == WM_SAMPLE; }

/* The phase the simulator runs after p (-1: either of two). */
static int fh_expected_next(int p, int q)
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

/* The host time an instance spends launching: from its first launch call's start to its last
 * call's end, without the time its blocking calls waited for the GPU (fr_inst.sync_wait_us:
 * a blocking copy or a synchronize is a sync, not launch cost). */
static double fh_launch_us(const fr_inst *in)
{
    double us = fit_us(in->le - in->lb) - in->sync_wait_us - in->lite_us;
    return us > 0 ? us : 0;
}

/* What CUPTI adds to each eager kernel launch of trace t, by the launch-cost calibration
 * specprof measured on the machine and wrote into the trace (traces/FORMAT.md: on - off,
 * the median of 200 empty launches; 1.45-1.80 us on the H200 in --mode always, torchbench
 * call 4): taken out of the eager launch cost so that the model holds the unprofiled one.
 * 0 without a calibration (Kineto traces: their own cost is taken out elsewhere), when it
 * reads negative (a calibration beside a busy program: -1.85 us in one windowed capture)
 * and with FIT_LAUNCH_CALIB=0 (to see what the correction changes). */
static double fh_cupti_launch_us(const fr_run *R, int t)
{
    const ptrace_calib *c = &R->tr[t].hdr.calib;
    if (fit_trace_unprofiled(&R->tr[t]))
        return 0;   /* no CUPTI in a lite capture: its host times are the unprofiled ones */
    if (fit_env_off("FIT_LAUNCH_CALIB") || !c->ok || !(c->kernel_launch_us > 0) || c->kernel_launch_us > 1000)
        return 0;
    /* the in-process calibration compares launches inside the attached process and misses
     * what an attached CUPTI costs its "off" arm (~1.5-2 us a launch on the H100, docs/profiler.md
     * "The calibration's blind spot"); against the same launch in a process without CUPTI
     * (launch_clean_us, the specprof command's clean arm) it does not, and the larger one is
     * taken; FIT_LAUNCH_CLEAN=0: the in-process one alone. FIT_LAUNCH_CALIB_ADD_US: a what-if,
     * microseconds added. */
    double us = c->kernel_launch_us;
    if (c->launch_clean_us > 0 && c->launch_on_us - c->launch_clean_us > us && !fit_env_off("FIT_LAUNCH_CLEAN"))
        us = c->launch_on_us - c->launch_clean_us;
    const char *add = getenv("FIT_LAUNCH_CALIB_ADD_US");
    return us + (add && *add ? atof(add) : 0);
}

/* The host-speed statistics need this many pairs of consecutive instances (fewer say
 * nothing about persistence); the autocorrelation is capped below 1 (a host that never
 * changed speed within the traces says nothing about how long its states last). */
#define FIT_SPEED_MIN_PAIRS 8
#define FIT_SPEED_RHO_MAX 0.95

static int fh_kfwd(const fr_phase *P)
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
static double fh_graph_launch_fit(fr_run *R, const double *v, size_t n)
{
    double *x = malloc((n + 1) * sizeof *x), *y = malloc((n + 1) * sizeof *y);
    double *mx = malloc((n + 1) * sizeof *mx), *my = malloc((n + 1) * sizeof *my);
    double a = fit_group_median((double *)v, n);
    R->node_us = 0;
    int all_lite = 1;   /* no CUPTI anywhere: the per-node slope is the program's own */
    for (int t = 0; t < R->nt; t++)
        all_lite &= fit_trace_unprofiled(&R->tr[t]);
    if (!x || !y || !mx || !my || n < 2 || all_lite)
        goto out;
    size_t k = 0;
    for (size_t i = 0; i < R->nin && k < n; i++) {
        const fr_inst *in = &R->in[i];
        if (in->drop || R->ph[in->phase].ninst == 0 || in->napi == 0 || !in->graph)
            continue;
        x[k] = in->nrec;
        y[k] = fh_launch_us(in);
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

/* The profiler's part of instance in's (first) launch: per node of a graph, the calibrated
 * CUPTI cost of an eager launch. */
static double fh_profiler_us(const fr_run *R, const fr_inst *in)
{
    if (fit_trace_unprofiled(&R->tr[in->trace]))
        return 0;
    return in->graph ? R->node_us * in->nrec : fh_cupti_launch_us(R, in->trace);
}

int fit_run_unprofiled(const fr_run *R)
{
    for (int t = 0; t < R->nt; t++)
        if (!fit_trace_unprofiled(&R->tr[t]))
            return 0;
    return R->nt > 0;
}

int fit_run_stalls_in(const fr_run *R)
{
    return !fit_env_off("FIT_LITE_STALLS") && fit_run_unprofiled(R);
}

/* The host stalls in one phase's eager launches (wm_phase_model.eager_stall_*): stalls per
 * launch and their mean length (us). */
typedef struct { double per_launch, us; } fh_stalls;

/* Eager launch cost per kernel: over eager instances i of one phase, their launch time h[i]
 * over their launches k[i], a ratio of sums (the big instances, where the launch cost
 * decides, outweigh the small ones) over the instances whose rate h/k is not an outlier by
 * the fit's rule (fit_group_robust: the first eager forward after a graph capture stalls for
 * milliseconds: 305 us a launch in torchbench's first 80-row draft, 16-21 us in the next
 * ones). Adds the kept sums to *hs, *ks; returns the phase's rate (0: none). With stalls_in (a
 * lite capture: the stall rule, fit_int.h) the rate is the mean over the instances up to
 * FIT_STALL_MAX_X times the median, and *st says how much of it is stalls: an instance
 * the robust rule leaves out is taken as one stall, as long as it took beyond the robust
 * rate (the simulator draws them: a stall drains the GPU's queue where an even rate
 * would not; docs/simulator.md "Host stalls"). The first instance of each configuration
 * (first[i]: the first of a run of one trace and token count) counts in the mean but is
 * not drawn as a stall: its time beyond the robust rate is the shape's warmup (specbench's
 * lite capture: the first eager verify of a shape 40-100 us a launch, the next 6-11 us),
 * spread over every launch as before the stalls were drawn. */
static double fh_eager_rate(const double *h, const double *k, const char *first, size_t n,
                            double *tmp, double *hs, double *ks, int stalls_in, fh_stalls *st)
{
    size_t m = 0;
    st->per_launch = st->us = 0;
    for (size_t i = 0; i < n; i++)
        if (k[i] > 0)
            tmp[m++] = h[i] / k[i];
    if (m == 0)
        return 0;
    double med, lim0 = fit_group_robust_lim(tmp, m, &med), lim = lim0, ph = 0, pk = 0;
    if (stalls_in && (FIT_STALL_MAX_X - 1) * med > lim)
        lim = (FIT_STALL_MAX_X - 1) * med;   /* fit_int.h: a lite capture's stalls count */
    /* b: the robust rule's instances; s: the stalls, those it leaves out above the median
     * and the stall rule keeps, each one stall as long as it took beyond the robust rate */
    double bh = 0, bk = 0, sh = 0, sk = 0, cnt = 0;
    for (size_t i = 0; i < n; i++) {
        double d = k[i] > 0 ? h[i] / k[i] - med : INFINITY;
        if (fabs(d) > lim)
            continue;
        ph += h[i];
        pk += k[i];
        if (fabs(d) <= lim0) {
            bh += h[i];
            bk += k[i];
        } else if (d > 0 && !first[i]) {
            sh += h[i];
            sk += k[i];
            cnt++;
        }
    }
    *hs += ph;
    *ks += pk;
    double sum = bk > 0 ? sh - sk * (bh / bk) : 0;
    if (cnt > 0 && sum > 0) {
        st->per_launch = cnt / pk;
        st->us = sum / cnt;
    }
    return pk > 0 ? ph / pk : 0;
}

/* The host's speed as one phase's eager instances show it (for the prediction intervals:
 * docs/simulator.md, "Intervals", host speed): r_i = log(rate_i / rate), rate_i = h[i] / k[i]
 * of the instances fh_eager_rate kept, in trace order; adds sum (r_i - mean r)^2 and its
 * count to hs->all.s2, .n, and the products of consecutive kept instances of the same trace
 * and token count (the same configuration, one iteration apart) to .s1, .n1. A rate
 * averages 9-369 launches, so what moves it between instances is the host's speed, not one
 * launch's noise: torchbench's dense capture moves between ~15 and ~28 us a launch in runs
 * of several iterations, its MoE capture stays at ~28.
 * The same instances by window: a run of consecutive instances of one configuration (phase p,
 * trace, token count) is a window (a capture of a grid records each configuration once; torchbench's and specbench's
 * --capture record the calibration points in every repeat, each a window). Within the
 * windows, deviations from the window's mean (hs->win); between them, each window's mean and
 * size (hs->run), for the level (fh_speed_level). */
typedef struct { int ph, tr; double tok, mean, n; } fh_run;
/* deviations' sum of squares and count, consecutive pairs' sum of products and count */
typedef struct { double s2, n, s1, n1; } fh_dev;
typedef struct {
    fh_dev all, win;
    fh_run *run;
    size_t nrun, caprun;
    int oom;
} fh_speed;

static int fh_keep_rate(const double *h, const double *k, size_t i, double med, double lim)
{
    return k[i] > 0 && h[i] > 0 && fabs(h[i] / k[i] - med) <= lim;
}

/* Instances [a, b) that fh_keep_rate keeps: their log rates' deviations from their mean into
 * d, consecutive pairs of one trace and token count with them (an outlier breaks the chain).
 * Returns how many were kept (nothing added below 2), their mean in *mean. */
static double fh_deviations(const double *h, const double *k, const double *tok, const int *tr,
                            size_t a, size_t b, double rate, double med, double lim, fh_dev *d,
                            double *mean)
{
    double sum = 0, cnt = 0;
    for (size_t i = a; i < b; i++)
        if (fh_keep_rate(h, k, i, med, lim)) {
            sum += log(h[i] / k[i] / rate);
            cnt++;
        }
    if (cnt < 2)
        return cnt;
    double m = *mean = sum / cnt;
    long prev = -1;
    for (size_t i = a; i < b; i++) {
        if (!fh_keep_rate(h, k, i, med, lim))
            continue;
        double r = log(h[i] / k[i] / rate) - m;
        d->s2 += r * r;
        d->n += 1;
        if (prev >= 0 && tr[prev] == tr[i] && tok[prev] == tok[i] && (size_t)prev + 1 == i) {
            d->s1 += r * (log(h[prev] / k[prev] / rate) - m);
            d->n1 += 1;
        }
        prev = (long)i;
    }
    return cnt;
}

/* One window's instances [a, b): their mean log rate, the deviations about it and the window
 * into hs (fh_speed's comment). */
static void fh_speed_window(int p, const double *h, const double *k, const double *tok,
                            const int *tr, size_t a, size_t b, double rate, double med,
                            double lim, fh_speed *hs)
{
    double m = 0, cnt = fh_deviations(h, k, tok, tr, a, b, rate, med, lim, &hs->win, &m);
    if (cnt < 2)
        return;
    if (fit_trace_grow((void **)&hs->run, &hs->caprun, hs->nrun, sizeof *hs->run)) {
        hs->oom = 1;
        return;
    }
    hs->run[hs->nrun++] = (fh_run){p, tr[a], tok[a], m, cnt};
}

/* The windows of one phase's instances: a run of consecutive instances of one trace and token
 * count, cut where an instance starts more than FIT_WINDOW_GAP_X times the run's median
 * spacing after its predecessor (windows of one configuration back to back). */
#define FIT_WINDOW_GAP_X 4
static void fh_speed_runs(int p, const double *h, const double *k, const double *tok,
                          const int *tr, const double *t0, size_t n, double rate, double med,
                          double lim, fh_speed *hs)
{
    double *tmp = malloc(n * sizeof *tmp);
    if (!tmp) {
        hs->oom = 1;
        return;
    }
    for (size_t a = 0, e; a < n && !hs->oom; a = e) {
        for (e = a + 1; e < n && tr[e] == tr[a] && tok[e] == tok[a]; e++)
            tmp[e - a - 1] = t0[e] - t0[e - 1];
        double gap = INFINITY;
        if (e - a >= 3) {
            gsl_sort(tmp, 1, e - a - 1);
            gap = FIT_WINDOW_GAP_X * gsl_stats_median_from_sorted_data(tmp, 1, e - a - 1);
        }
        size_t w = a;
        for (size_t i = a + 1; i <= e; i++)
            if (i == e || t0[i] - t0[i - 1] > gap) {
                fh_speed_window(p, h, k, tok, tr, w, i, rate, med, lim, hs);
                w = i;
            }
    }
    free(tmp);
}

static void fh_host_speed(int p, const double *h, const double *k, const double *tok,
                          const int *tr, const double *t0, size_t n, double rate, fh_speed *hs)
{
    if (!(rate > 0) || n < 2)
        return;
    double *tmp = malloc(n * sizeof *tmp);
    if (!tmp)
        return;
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (k[i] > 0)
            tmp[m++] = h[i] / k[i];
    double med = 0, lim = m ? fit_group_robust_lim(tmp, m, &med) : 0;   /* m = 0: no rate kept, med unread */
    free(tmp);
    double mean;
    if (fh_deviations(h, k, tok, tr, 0, n, rate, med, lim, &hs->all, &mean) < 2)
        return;
    fh_speed_runs(p, h, k, tok, tr, t0, n, rate, med, lim, hs);
}

/* The lag-1 autocorrelation of a speed: the pairs' mean product over the variance, in [0,
 * FIT_SPEED_RHO_MAX]. */
static double fh_rho(double s1, double n1, double var)
{
    double rho = var > 0 && n1 > 0 ? s1 / n1 / var : 0;
    return rho < 0 ? 0 : rho > FIT_SPEED_RHO_MAX ? FIT_SPEED_RHO_MAX : rho;
}

static int fh_run_cmp(const void *x, const void *y)
{
    const fh_run *a = x, *b = y;
    if (a->ph != b->ph)
        return a->ph < b->ph ? -1 : 1;
    if (a->tr != b->tr)
        return a->tr < b->tr ? -1 : 1;
    return (a->tok > b->tok) - (a->tok < b->tok);
}

/* The host's level between windows (wmodel host_speed_level_sd): where configurations were
 * recorded in FIT_LEVEL_MIN_DF + 1 windows or more in all (sum over configurations of their
 * windows less one), the windows' means spread about their configuration's mean by more than
 * the AR(1) within the windows (sd_w, rho_w) gives a mean of their size: with k windows of
 * means m_r over sizes n_r, E sum (m_r - M)^2 = (k - 1) L^2 + (k - 1) / k sum v(n_r), v the
 * AR(1) variance of a mean of n_r (interval_host_var), so L^2 = (SS - sum_c (k_c - 1) / k_c
 * V_c) / sum_c (k_c - 1), 0 when below. Returns 1 with *level, *sd and *rho set, 0 when the
 * windows cannot say. Where the level is above 0 the within-window sd and autocorrelation
 * replace the pooled ones (the level is the rest); at 0 the pooled pair stays (it also holds
 * how the configurations' own rates differ: torchbench call 4's dense capture, 22 windows,
 * within 0.261 / 0.411 against pooled 0.289 / 0.527, its coverage 71.4% with the pooled pair,
 * 69.2% with the within one). Measured on torchbench's eager loop captured in every repeat (verify's
 * launch rate): windows' means 0.16-0.23 sd apart in calls 17, 19 and 21 (their repeats'
 * tok/s 55-71% apart), 0.006-0.028 in calls 18 and 20. */
static int fh_speed_level(fh_speed *hs, double *level, double *sd, double *rho)
{
    if (hs->oom || hs->win.n < 3 || hs->win.n1 < FIT_SPEED_MIN_PAIRS)
        return 0;
    double vw = hs->win.s2 / hs->win.n, rw = fh_rho(hs->win.s1, hs->win.n1, vw);
    double ss = 0, vexp = 0, df = 0;
    if (hs->nrun > 1)
        qsort(hs->run, hs->nrun, sizeof *hs->run, fh_run_cmp);   /* configurations together */
    for (size_t a = 0, b; a < hs->nrun; a = b) {
        double sm = 0, vc = 0;
        for (b = a; b < hs->nrun && !fh_run_cmp(&hs->run[a], &hs->run[b]); b++) {
            sm += hs->run[b].mean;
            vc += interval_host_var(sqrt(vw), rw, hs->run[b].n);
        }
        double kc = (double)(b - a), M = sm / kc;
        for (size_t i = a; i < b; i++)
            ss += (hs->run[i].mean - M) * (hs->run[i].mean - M);
        if (kc >= 2) {
            df += kc - 1;
            vexp += (kc - 1) / kc * vc;
        }
    }
    if (df < FIT_LEVEL_MIN_DF)
        return 0;
    double l2 = (ss - vexp) / df;
    *level = l2 > 0 ? sqrt(l2) : 0;
    *sd = sqrt(vw);
    *rho = rw;
    return 1;
}

int fit_host_launch_costs(fr_run *R, double *graph_us, double *eager_us)
{
    size_t cap = R->nin + 1;
    double *v = malloc(cap * sizeof *v), *eh = malloc(cap * sizeof *eh);
    double *ek = malloc(cap * sizeof *ek), *tmp = malloc(cap * sizeof *tmp);
    double *etok = malloc(cap * sizeof *etok), *et0 = malloc(cap * sizeof *et0);
    int *etr = malloc(cap * sizeof *etr);
    char *efirst = malloc(cap);
    size_t ng = 0, ne = 0, graph_noapi = 0;
    fh_speed hs = {0};
    if (!v || !eh || !ek || !tmp || !etok || !et0 || !etr || !efirst) {
        free(et0);
        free(efirst);
        free(v);
        free(eh);
        free(ek);
        free(tmp);
        free(etok);
        free(etr);
        return fit_run_fail(R, "out of memory");
    }
    for (size_t i = 0; i < R->nin; i++) {
        const fr_inst *in = &R->in[i];
        if (in->drop || R->ph[in->phase].ninst == 0)
            continue;
        if (in->napi == 0)
            graph_noapi += in->graph == 1;
        else if (in->graph)
            v[ng++] = fh_launch_us(in);
        else
            ne++;
    }
    *graph_us = fh_graph_launch_fit(R, v, ng);
    /* per phase (each its own op mix: torchbench's eager verify launches a kernel every
     * 15-16 us, its draft every 17-21 us, its sample every ~30 us), and over all phases */
    double hsum = 0, ks = 0;
    for (int p = 0; p < WM_NPHASE; p++) {
        size_t m = 0;
        for (size_t i = 0; i < R->nin; i++) {
            const fr_inst *in = &R->in[i];
            if (in->phase != p || in->drop || R->ph[p].ninst == 0 || in->napi == 0 || in->graph)
                continue;
            ek[m] = (double)fh_kfwd(&R->ph[p]) * in->F;
            eh[m] = fh_launch_us(in) - fh_cupti_launch_us(R, in->trace) * ek[m];
            if (eh[m] < 0)
                eh[m] = 0;
            etok[m] = in->tokens;
            et0[m] = (double)in->r0;
            etr[m] = in->trace;
            efirst[m] = m == 0 || etr[m - 1] != etr[m] || etok[m - 1] != etok[m];
            m++;
            if (getenv("FIT_DEBUG"))
                fprintf(stderr, "eager %s tokens %g: launch %.1f us (waits %.1f) over %g "
                        "launches: %.2f us\n", wm_phase_name[p], in->tokens, eh[m - 1],
                        in->sync_wait_us, ek[m - 1], eh[m - 1] / ek[m - 1]);
        }
        fh_stalls st;
        double rate = fh_eager_rate(eh, ek, efirst, m, tmp, &hsum, &ks, fit_run_stalls_in(R), &st);
        R->res->model.phase[p].eager_launch_us = rate;
        R->res->model.phase[p].eager_stall_per_launch = rate > 0 ? st.per_launch : 0;
        R->res->model.phase[p].eager_stall_us = rate > 0 ? st.us : 0;
        fh_host_speed(p, eh, ek, etok, etr, et0, m, rate, &hs);
    }
    *eager_us = ks > 0 ? hsum / ks : 0;
    /* the host's speed: the pooled sd of the instances' log rates and their lag-1
     * autocorrelation (0 when fewer than FIT_SPEED_MIN_PAIRS pairs say anything) */
    wm_model *wm = &R->res->model;
    wm->host_speed_sd_frac = wm->host_speed_rho = wm->host_speed_level_sd = 0;
    if (hs.all.n > 2 && hs.all.n1 >= FIT_SPEED_MIN_PAIRS) {
        double var = hs.all.s2 / hs.all.n;
        wm->host_speed_sd_frac = sqrt(var);
        wm->host_speed_rho = fh_rho(hs.all.s1, hs.all.n1, var);
        if (getenv("FIT_DEBUG"))
            fprintf(stderr, "host speed: sd %.4f of log rate over %g instances, lag-1 "
                    "autocorrelation %.3f over %g pairs\n", sqrt(var), hs.all.n, wm->host_speed_rho,
                    hs.all.n1);
        double lv, sw, rw;
        if (!fit_env_off("FIT_HOST_LEVEL") && fh_speed_level(&hs, &lv, &sw, &rw) && lv > 0) {
            wm->host_speed_level_sd = lv;
            wm->host_speed_sd_frac = sw;
            wm->host_speed_rho = rw;
            if (R->o && R->o->log)
                fprintf(R->o->log, "specsim fit: host speed: level sd %.4f between %zu windows, "
                        "sd %.4f and autocorrelation %.3f within them\n", lv, hs.nrun, sw, rw);
        }
    }
    free(hs.run);
    R->res->graph_launches = (int)ng;
    R->res->eager_instances = (int)ne;
    if (graph_noapi && !ng)
        fit_run_warn(R, "no launch API records for %zu CUDA-graph phase instances: graph_launch_us "
                     "is 0 (was specprof's API recording off?)", graph_noapi);
    if (!ne)
        fit_run_warn(R, "no eager phase instance with launch records: eager_launch_us unmeasured "
                     "(0); give --eager-launch-us when simulating batches above the captured sizes");
    free(v);
    free(eh);
    free(ek);
    free(tmp);
    free(etok);
    free(et0);
    free(etr);
    free(efirst);
    return 0;
}

/* The GPU's start latency after an idle instance's first launch beyond the launch cost the
 * simulator charges (graph_us or eager_us, with the profiler's part): the GPU start minus the
 * call's start minus that cost. A CUDA graph whose GPU work started before its launch call
 * returned carries profiler work after the submission (under CUPTI torchbench's 324-node
 * decode graph launch takes 486-511 us and its kernels start 9 us before it returns; its
 * 348-node one 531-606 us, 490 us before): its GPU start says nothing of the launch and
 * the latency is 0. */
static double fh_start_latency(const fr_run *R, const fr_inst *in, double graph_us, double eager_us)
{
    if (in->graph && in->g0 < in->a1e)
        return 0;
    return fit_us(in->g0 - in->lb) - (in->graph ? graph_us : eager_us) - fh_profiler_us(R, in);
}

int fit_host_gaps(fr_run *R, double graph_us, double eager_us)
{
    double *d = malloc((R->nin + 1) * sizeof *d);
    double dbar[WM_NPHASE], dall;
    int unexpected[WM_NPHASE][WM_NPHASE];
    memset(unexpected, 0, sizeof unexpected);
    if (!d)
        return fit_run_fail(R, "out of memory");
    /* pass 1: instances the GPU waited for (idle before them): gap from the GPU start */
    for (int t = 0; t < R->nt; t++) {
        size_t a = R->tin0[t], b = R->tin0[t + 1];
        int trace_api = 0;
        for (size_t i = a; i < b; i++)
            trace_api |= R->in[i].napi > 0;
        if (!trace_api && b > a)
            fit_run_warn(R, "%s: no launch API records: host gaps from GPU idle time only",
                         R->tr[t].file);
        for (size_t i = a; i < b; i++) {
            fr_inst *in = &R->in[i];
            in->has_gap = in->busy = 0;
            in->inter_us = 0;
            in->gap_prev = -1;
            if (in->nrec == 0)
                continue;
            size_t j = i;
            int found = 0;
            for (int k = 0; j > a && k < FIT_BACK_SEARCH; k++) {
                /* a capped load holds some of the capture's instances: the search stops at
                 * one left out (the gap would be measured from an older one) */
                if (R->in[j - 1].seq + 1 != R->in[j].seq)
                    break;
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
            in->gap_prev = pj->phase;
            /* a windowed capture: the predecessor must be in the same window (the time
             * between windows is not a host gap) */
            if (R->tr[t].nwin && fit_trace_window_of(&R->tr[t], pj->r1) != fit_trace_window_of(&R->tr[t], in->r0))
                continue;
            if (!in->drop && !fh_expected_next(pj->phase, in->phase))
                unexpected[pj->phase][in->phase]++;
            double first_us = (in->graph ? graph_us : eager_us) + fh_profiler_us(R, in);
            if (!trace_api) {
                in->gap_us = fit_us(in->g0 - pj->g1) - first_us;
                in->has_gap = 1;
                continue;
            }
            if (in->napi == 0 || pj->napi == 0)
                continue;
            /* host free after the predecessor: its last launch call; after accept/sample
             * (the simulator's host waits there) or any blocking call, the GPU end it
             * waited for. A blocking call released the host at the end of its wait; the GPU
             * work launched after that (a second read, the next copy) is the predecessor's
             * GPU time in the simulator, and the host's own time after the wait (the call's
             * return, the Python after it) belongs to this gap */
            int64_t ref = pj->le;
            if (pj->nsync > 0)
                ref = pj->sync0_e + (int64_t)(pj->post_sync_us * 1000.0);
            else if (fh_sync_phase(pj->phase) && pj->g1 > ref)
                ref = pj->g1;
            in->busy = in->a1e < pj->g1;
            if (getenv("FIT_DEBUG"))
                fprintf(stderr, "raw %s bs %d graph %d (%d records, profiler %.1f us): host %.1f us, gpu "
                        "start %.1f us after the call, %.1f after it returned%s\n", wm_phase_name[in->phase],
                        in->bs, in->graph, in->nrec, fh_profiler_us(R, in), fit_us(in->lb - ref),
                        fit_us(in->g0 - in->lb), fit_us(in->g0 - in->a1e), in->busy ? " queued" : "");
            if (!in->busy) {
                /* the simulator then starts the GPU when the trace did */
                in->gap_us = fit_us(in->lb - ref) + fh_start_latency(R, in, graph_us, eager_us);
                in->has_gap = 1;
            } else {
                in->inter_us = in->g0 > pj->g1 ? fit_us(in->g0 - pj->g1) : 0;
                in->gap_us = fit_us(in->lb - ref);   /* + dbar in pass 2 */
            }
        }
    }
    /* GPU start latency beyond the launch call, from the idle instances */
    size_t nall = 0;
    for (size_t i = 0; i < R->nin; i++) {
        const fr_inst *in = &R->in[i];
        if (in->has_gap && !in->busy && in->napi > 0)
            d[nall++] = fh_start_latency(R, in, graph_us, eager_us);
    }
    dall = fit_group_median(d, nall);
    for (int p = 0; p < WM_NPHASE; p++) {
        size_t m = 0;
        for (size_t i = 0; i < R->nin; i++) {
            const fr_inst *in = &R->in[i];
            if (in->phase == p && in->has_gap && !in->busy && in->napi > 0)
                d[m++] = fh_start_latency(R, in, graph_us, eager_us);
        }
        dbar[p] = m ? fit_group_median(d, m) : dall;
    }
    /* pass 2: instances queued behind GPU work: host gap + the usual start latency */
    for (size_t i = 0; i < R->nin; i++) {
        fr_inst *in = &R->in[i];
        if (in->busy) {
            in->gap_us += dbar[in->phase];
            in->has_gap = 1;
        }
        if (in->has_gap && getenv("FIT_DEBUG"))
            fprintf(stderr, "gap %s bs %d tokens %g graph %d: %.1f us%s (after %s)\n",
                    wm_phase_name[in->phase], in->bs, in->tokens, in->graph, in->gap_us,
                    in->busy ? " queued" : "", in->gap_prev >= 0 ? wm_phase_name[in->gap_prev] : "-");
    }
    for (int p = 0; p < WM_NPHASE; p++)
        for (int q = 0; q < WM_NPHASE; q++)
            if (unexpected[p][q])
                fit_run_warn(R, "%d times phase %s followed %s, which the simulator never "
                             "does: its host gap is measured from the phase that really came "
                             "before",
                             unexpected[p][q], wm_phase_name[q], wm_phase_name[p]);
    free(d);
    return 0;
}
