/* fit_host: stage 3, the launch API records -> launch costs and host gaps. In: the instances
 * with their launch calls and GPU spans; out: the graph and eager launch costs (the
 * profiler's per-node cost taken out) and per instance the host gap before it (fr_inst.gap_us).
 * Workload: 10^3..10^5 instances. */
#include "fit_int.h"
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
    const char *e = getenv("FIT_LAUNCH_CALIB");
    if (fit_trace_unprofiled(&R->tr[t]))
        return 0;   /* no CUPTI in a lite capture: its host times are the unprofiled ones */
    if ((e && !strcmp(e, "0")) || !c->ok || !(c->kernel_launch_us > 0) || c->kernel_launch_us > 1000)
        return 0;
    return c->kernel_launch_us;
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
    const char *e = getenv("FIT_LITE_STALLS");
    return !(e && !strcmp(e, "0")) && fit_run_unprofiled(R);
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
 * count to hs->s2, hs->n, and the products of consecutive kept instances of the same trace
 * and token count (the same configuration, one iteration apart) to hs->s1, hs->n1. A rate
 * averages 9-369 launches, so what moves it between instances is the host's speed, not one
 * launch's noise: torchbench's dense capture moves between ~15 and ~28 us a launch in runs
 * of several iterations, its MoE capture stays at ~28. */
typedef struct { double s2, n, s1, n1; } fh_speed;
static void fh_host_speed(const double *h, const double *k, const double *tok, const int *tr,
                          size_t n, double rate, fh_speed *hs)
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
    double med, lim = m ? fit_group_robust_lim(tmp, m, &med) : 0;
    double sum = 0, cnt = 0;
    for (size_t i = 0; i < n; i++)
        if (k[i] > 0 && h[i] > 0 && fabs(h[i] / k[i] - med) <= lim) {
            sum += log(h[i] / k[i] / rate);
            cnt++;
        }
    if (cnt < 2) {
        free(tmp);
        return;
    }
    double mean = sum / cnt;
    long prev = -1;
    for (size_t i = 0; i < n; i++) {
        if (!(k[i] > 0 && h[i] > 0 && fabs(h[i] / k[i] - med) <= lim))
            continue;     /* an outlier breaks the chain of consecutive instances */
        double r = log(h[i] / k[i] / rate) - mean;
        hs->s2 += r * r;
        hs->n += 1;
        if (prev >= 0 && tr[prev] == tr[i] && tok[prev] == tok[i] && (size_t)prev + 1 == i) {
            hs->s1 += r * (log(h[prev] / k[prev] / rate) - mean);
            hs->n1 += 1;
        }
        prev = (long)i;
    }
    free(tmp);
}

int fit_host_launch_costs(fr_run *R, double *graph_us, double *eager_us)
{
    size_t cap = R->nin + 1;
    double *v = malloc(cap * sizeof *v), *eh = malloc(cap * sizeof *eh);
    double *ek = malloc(cap * sizeof *ek), *tmp = malloc(cap * sizeof *tmp);
    double *etok = malloc(cap * sizeof *etok);
    int *etr = malloc(cap * sizeof *etr);
    char *efirst = malloc(cap);
    size_t ng = 0, ne = 0, graph_noapi = 0;
    fh_speed hs = {0, 0, 0, 0};
    if (!v || !eh || !ek || !tmp || !etok || !etr || !efirst) {
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
        fh_host_speed(eh, ek, etok, etr, m, rate, &hs);
    }
    *eager_us = ks > 0 ? hsum / ks : 0;
    /* the host's speed: the pooled sd of the instances' log rates and their lag-1
     * autocorrelation (0 when fewer than FIT_SPEED_MIN_PAIRS pairs say anything) */
    R->res->model.host_speed_sd_frac = R->res->model.host_speed_rho = 0;
    if (hs.n > 2 && hs.n1 >= FIT_SPEED_MIN_PAIRS) {
        double var = hs.s2 / hs.n, rho = var > 0 ? hs.s1 / hs.n1 / var : 0;
        R->res->model.host_speed_sd_frac = sqrt(var);
        R->res->model.host_speed_rho = rho < 0 ? 0 : rho > FIT_SPEED_RHO_MAX ? FIT_SPEED_RHO_MAX : rho;
        if (getenv("FIT_DEBUG"))
            fprintf(stderr, "host speed: sd %.4f of log rate over %g instances, lag-1 "
                    "autocorrelation %.3f over %g pairs\n", sqrt(var), hs.n, rho, hs.n1);
    }
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
                fprintf(stderr, "raw %s bs %d graph %d: host %.1f us, gpu start %.1f us after "
                        "the call, %.1f after it returned%s\n", wm_phase_name[in->phase], in->bs,
                        in->graph, fit_us(in->lb - ref), fit_us(in->g0 - in->lb),
                        fit_us(in->g0 - in->a1e), in->busy ? " queued" : "");
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
