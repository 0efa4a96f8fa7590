/* fit_run: specprof traces -> workload model (docs/fit.md): the stages in order, per trace
 * phase instances (fit_instances.c), per phase the groups (fit_match.c), launch costs and
 * host gaps (fit_host.c), per phase the fits (fit_phase.c, fit_group.c). In: loaded traces
 * and options; out: fit_result (the model and what the plots need). Also the run's warnings.
 * Workload: 10^4..10^6 GPU records per trace, tens of groups, 10^3..10^5 instances. */
#include "fit_int.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_errno.h>

void fit_run_warn(fr_run *R, const char *fmt, ...)
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

int fit_run_fail(fr_run *R, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(R->err, R->errlen, fmt, ap);
    va_end(ap);
    return -1;
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
        free(R->ph[p].POS);
    }
    free(R->in);
    free(R->el);
    free(R->tin0);
    free(R->tnames);
    fit_trace_pool_destroy(R->pool);
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

/* The model's facts from the run and the traces' headers: launch costs, MoE shape, device,
 * ranks, name and source. */
static void fr_model_facts(fr_run *R, double graph_us, double eager_us)
{
    const fit_trace *traces = R->tr;
    const fit_opts *o = R->o;
    int n = R->nt;
    wm_model *m = &R->res->model;
    m->graph_launch_us = graph_us;
    m->eager_launch_us = eager_us;
    m->moe_experts = R->moe_E;
    m->moe_topk = R->moe_k;
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
}

/* The instances left out per phase, and what the model cannot do. */
static void fr_finish(fr_run *R)
{
    fit_result *res = R->res;
    const wm_model *m = &res->model;
    for (size_t i = 0; i < R->nin; i++)
        if (R->in[i].drop && R->in[i].drop != FR_CONTEXT)
            res->phase[R->in[i].phase].ndropped++;
    for (int t = 0; t < R->nt; t++)
        for (int p = 0; p < WM_NPHASE; p++)
            res->phase[p].nsampled_out += (int)R->tr[t].sampled_out[p];
    int capped = 0;
    for (int p = 0; p < WM_NPHASE; p++)
        for (int g = 0; g <= WM_GROUPS_MAX; g++)
            capped += R->ph[p].sd_capped[g];
    if (capped == 1)
        fit_run_warn(R, "%s: measured spread %.2f of its cost capped at %.2f (the simulator's "
                     "jitter needs < 1/3)", R->sd_capped_at, R->sd_capped_max, FIT_SD_FRAC_MAX);
    else if (capped > 1)
        fit_run_warn(R, "%d groups: measured spread of their cost capped at %.2f (the "
                     "simulator's jitter needs < 1/3); the largest %.2f (%s)", capped,
                     FIT_SD_FRAC_MAX, R->sd_capped_max, R->sd_capped_at);
    if (!m->phase[WM_VERIFY].present && !m->phase[WM_DECODE].present)
        fit_run_warn(R, "no verify or decode phase in the traces: the model cannot be simulated");
    else if (!m->phase[WM_VERIFY].present)
        fit_run_warn(R, "no verify phase: the model only simulates the baseline");
    int ranks_nccl = 0;
    for (int p = 0; p < WM_NPHASE; p++)
        ranks_nccl |= m->phase[p].ncolls > 0;
    if (m->ranks > 1 && !ranks_nccl)
        fit_run_warn(R, "the traces are of %d ranks but hold no NCCL kernels: no collectives in "
                     "the model", m->ranks);
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
    R.pool = fit_trace_pool_create();
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
        if (fit_instances_trace(&R, t))
            goto out_gsl;
    R.tin0[n] = R.nin;
    if (fit_instances_moe(&R))
        goto out_gsl;
    int nphases = 0;
    for (int p = 0; p < WM_NPHASE; p++) {
        if (fit_match_phase(&R, p))
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
    if (fit_host_launch_costs(&R, &graph_us, &eager_us) || fit_host_gaps(&R, graph_us, eager_us))
        goto out_gsl;
    fr_model_facts(&R, graph_us, eager_us);
    for (int p = 0; p < WM_NPHASE; p++) {
        if (R.ph[p].ninst == 0)
            continue;
        if (fit_phase_fit(&R, p) || fit_phase_totals(&R, p))
            goto out_gsl;
        res->phase[p].forwards_max = 1;
        for (int q = 0; q < R.ph[p].ninst; q++)
            if (R.in[R.ph[p].inst[q]].F > res->phase[p].forwards_max)
                res->phase[p].forwards_max = R.in[R.ph[p].inst[q]].F;
    }
    fr_finish(&R);
    rc = 0;
out_gsl:
    gsl_set_error_handler(old);
out:
    fr_free(&R);
    if (rc)
        fit_result_free(res);
    return rc;
}
