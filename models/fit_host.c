/* fit_host: stage 3, the launch API records -> launch costs and host gaps. In: the instances
 * with their launch calls and GPU spans; out: the graph and eager launch costs (the
 * profiler's per-node cost taken out) and per instance the host gap before it (fr_inst.gap_us).
 * Workload: 10^3..10^5 instances. */
#include "fit_int.h"
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
    if (!x || !y || !mx || !my || n < 2)
        goto out;
    size_t k = 0;
    for (size_t i = 0; i < R->nin && k < n; i++) {
        const fr_inst *in = &R->in[i];
        if (in->drop || R->ph[in->phase].ninst == 0 || in->napi == 0 || !in->graph)
            continue;
        x[k] = in->nrec;
        y[k] = fit_us(in->le - in->lb);
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
static double fh_profiler_us(const fr_run *R, const fr_inst *in)
{
    return in->graph ? R->node_us * in->nrec : 0;
}

int fit_host_launch_costs(fr_run *R, double *graph_us, double *eager_us)
{
    double *v = malloc((R->nin + 1) * sizeof *v), *w = malloc((R->nin + 1) * sizeof *w);
    size_t ng = 0, ne = 0, graph_noapi = 0;
    double eager_host_us = 0, eager_launches = 0;
    if (!v || !w) {
        free(v);
        free(w);
        return fit_run_fail(R, "out of memory");
    }
    for (size_t i = 0; i < R->nin; i++) {
        const fr_inst *in = &R->in[i];
        if (in->drop || R->ph[in->phase].ninst == 0)
            continue;
        if (in->napi == 0) {
            graph_noapi += in->graph == 1;
            continue;
        }
        double host_us = fit_us(in->le - in->lb);
        if (in->graph) {
            v[ng++] = host_us;
        } else {
            /* ratio of sums: the big eager phases (hundreds of launches, where the launch
             * cost decides) outweigh the many small ones (accept: a few launches) */
            eager_host_us += host_us;
            eager_launches += (double)fh_kfwd(&R->ph[in->phase]) * in->F;
            ne++;
        }
    }
    *graph_us = fh_graph_launch_fit(R, v, ng);
    *eager_us = eager_launches > 0 ? eager_host_us / eager_launches : 0;
    R->res->graph_launches = (int)ng;
    R->res->eager_instances = (int)ne;
    if (graph_noapi && !ng)
        fit_run_warn(R, "no launch API records for %zu CUDA-graph phase instances: graph_launch_us "
                     "is 0 (was specprof's API recording off?)", graph_noapi);
    if (!ne)
        fit_run_warn(R, "no eager phase instance with launch records: eager_launch_us unmeasured "
                     "(0); give --eager-launch-us when simulating batches above the captured sizes");
    free(v);
    free(w);
    return 0;
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
            int64_t ref = pj->le;
            if (fh_sync_phase(pj->phase) && pj->g1 > ref)
                ref = pj->g1;
            in->busy = in->a1e < pj->g1;
            if (!in->busy) {
                in->gap_us = fit_us(in->g0 - ref) - first_us;
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
            d[nall++] = fit_us(in->g0 - in->lb) - (in->graph ? graph_us : eager_us) -
                        fh_profiler_us(R, in);
    }
    dall = fit_group_median(d, nall);
    for (int p = 0; p < WM_NPHASE; p++) {
        size_t m = 0;
        for (size_t i = 0; i < R->nin; i++) {
            const fr_inst *in = &R->in[i];
            if (in->phase == p && in->has_gap && !in->busy && in->napi > 0)
                d[m++] = fit_us(in->g0 - in->lb) - (in->graph ? graph_us : eager_us) -
                         fh_profiler_us(R, in);
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
