/* interval: the propagation of interval.h. Model errors are systematic for a configuration
 * (a group priced 3% high is 3% high in every iteration), so a group's error moves the
 * window's GPU time by resid_frac times that group's whole GPU time in it, and by its
 * resid_abs_us in each of its forwards (interval_group_err_us); groups are taken as
 * independent of each other, a carry's kinds as one error each. Every microsecond of GPU
 * time is taken to move the window by a microsecond (the GPU is the critical path: true when
 * the host never holds the GPU back; otherwise the interval is wider than it need be). */
#include "interval.h"
#include "carry.h"

#include <math.h>
#include <string.h>

void interval_acc_add(interval_acc *a, const wm_model *m, int p, double tokens,
                      double kv_tokens, double q_per_row, double weight, int graph_size)
{
    const wm_phase_model *pm = wm_phase_get(m, p);
    if (!pm || !(weight > 0))
        return;
    int rp = (int)(pm - m->phase);
    double mem = 0, comp = 0, lat = 0, all = 0;
    for (int i = 0; i < pm->ngroups; i++) {
        const wm_group *g = &pm->groups[i];
        double u = weight * wm_group_us_q(m, g, tokens, kv_tokens, q_per_row);
        a->group_us[rp][i] += u;
        a->group_abs_us[rp][i] += weight * g->resid_abs_us;
        all += u;
        carry_split(m, g, tokens, kv_tokens, q_per_row, &mem, &comp, &lat);
    }
    /* a graph size the capture gave no factor: as far off as the captured sizes were */
    if (graph_size > 0 && pm->graph_size_sd > 0 && wm_phase_graph_size(pm, graph_size) < 0)
        a->size_us[rp] += all;
    a->kind_us[INTERVAL_MEM] += weight * mem;
    a->kind_us[INTERVAL_COMP] += weight * comp;
    a->kind_us[INTERVAL_LAT] += weight * lat;
}

double interval_group_err_us(double resid_frac, double abs_us, double group_us)
{
    double rel = resid_frac * group_us;
    if (!(abs_us > 0))
        return rel;
    return fmin(hypot(rel, abs_us), fmax(resid_frac, 1.0) * group_us);
}

void interval_model(const interval_acc *a, const wm_model *m, double window_us,
                    interval_parts *out)
{
    for (int p = 0; p < WM_NPHASE; p++)
        out->phase_var[p] = 0;
    memset(out->group_sd, 0, sizeof out->group_sd);
    for (int k = 0; k < INTERVAL_NKIND; k++)
        out->kind_sd[k] = 0;
    if (!(window_us > 0))
        return;
    for (int p = 0; p < WM_NPHASE; p++) {
        for (int i = 0; i < m->phase[p].ngroups; i++) {
            const wm_group *g = &m->phase[p].groups[i];
            double sd = interval_group_err_us(g->resid_frac, g->resid_abs_us > 0 ?
                                              a->group_abs_us[p][i] : 0, a->group_us[p][i]) /
                        window_us;
            out->phase_var[p] += sd * sd;
            if (p == WM_VERIFY || p == WM_ACCEPT)
                out->group_sd[p == WM_ACCEPT][i] = (float)sd;
        }
        double ssd = m->phase[p].graph_size_sd * a->size_us[p] / window_us;
        out->phase_var[p] += ssd * ssd;
    }
    const double u[INTERVAL_NKIND] = {m->unc.memory_frac, m->unc.compute_frac,
                                      m->unc.latency_frac};
    for (int k = 0; k < INTERVAL_NKIND; k++)
        out->kind_sd[k] = u[k] * a->kind_us[k] / window_us;
}

double interval_model_var(const interval_parts *p)
{
    double v = 0;
    for (int i = 0; i < WM_NPHASE; i++)
        v += p->phase_var[i];
    for (int k = 0; k < INTERVAL_NKIND; k++)
        v += p->kind_sd[k] * p->kind_sd[k];
    return v;
}

double interval_var(const interval_parts *p)
{
    return interval_model_var(p) + p->run_var + p->host_var + p->est_var;
}

double interval_host_var(double sd_frac, double rho, double iters)
{
    if (!(iters > 0) || !(sd_frac > 0))
        return 0;
    double n = iters < 1 ? 1 : iters, sum = 0;
    if (rho > 0 && rho < 1)     /* sum_{k=1}^{N-1} (1 - k/N) rho^k */
        sum = rho / (1 - rho) - rho * (1 - pow(rho, n)) / (n * (1 - rho) * (1 - rho));
    return sd_frac * sd_frac / n * (1 + 2 * sum);
}

void interval_quantiles(double mid, double var, double *p10, double *p90)
{
    double s = var > 0 ? sqrt(var) : 0;
    *p10 = mid * exp(-INTERVAL_Z90 * s);
    *p90 = mid * exp(INTERVAL_Z90 * s);
}

double interval_speedup_var(const interval_parts *s, const interval_parts *b)
{
    /* the host's speed: the two benchmarks' own (separate runs, separate host states) */
    double v = s->run_var + b->run_var + s->host_var + b->host_var + s->est_var + b->est_var;
    for (int i = 0; i < WM_NPHASE; i++) {
        if (i == WM_VERIFY || i == WM_ACCEPT) {
            /* shared phases: group by group */
            for (int g = 0; g < WM_GROUPS_MAX; g++) {
                double d = (double)s->group_sd[i == WM_ACCEPT][g] - b->group_sd[i == WM_ACCEPT][g];
                v += d * d;
            }
        } else {
            v += s->phase_var[i] + b->phase_var[i];   /* only one of the two runs has it */
        }
    }
    for (int k = 0; k < INTERVAL_NKIND; k++) {
        double d = s->kind_sd[k] - b->kind_sd[k];
        v += d * d;
    }
    return v;
}
