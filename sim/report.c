/* report: the metric table and its three renderings (text, CSV, JSON). Values are printed
 * with fixed formats so that the same results give the same bytes. */
#include "report.h"

#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>

#define G(field) static double report_##field(const sim_result *r) { return (double)r->field; }
G(tok_s) G(req_tok_s_mean) G(req_tok_s_p50) G(tpot_p50_ms) G(tpot_p90_ms) G(tpot_p99_ms)
G(accept_len) G(iter_us) G(bs_mean) G(requests_measured) G(iterations) G(tokens)
G(comm_us) G(wait_us) G(idle_us) G(host_us) G(launch_us) G(eager_frac) G(events)
G(partial) G(tok_s_p10) G(tok_s_p90)
#undef G
/* relative parts in percent */
#define PCT(field) static double report_##field(const sim_result *r) { return 100 * r->field; }
PCT(unc_model) PCT(unc_run) PCT(unc_est) PCT(precision)
#undef PCT
static double report_host_share(const sim_result *r) { return r->host_share; }
#define P(ph) static double report_##ph(const sim_result *r) { return r->phase_us[WM_##ph]; }
P(DRAFT) P(VERIFY) P(ACCEPT) P(EXTEND) P(DECODE) P(SAMPLE)
#undef P
static double report_sim_s(const sim_result *r) { return r->sim_us / 1e6; }

const report_metric report_metrics[] = {
    {"tok_s", "tok/s", "%.2f", 0, report_tok_s},
    {"req_tok_s", "tok/s", "%.2f", 0, report_req_tok_s_mean},
    {"req_tok_s_p50", "tok/s", "%.2f", 0, report_req_tok_s_p50},
    {"tpot_p50", "ms", "%.4f", 0, report_tpot_p50_ms},
    {"tpot_p90", "ms", "%.4f", 0, report_tpot_p90_ms},
    {"tpot_p99", "ms", "%.4f", 0, report_tpot_p99_ms},
    {"accept_len", "tokens", "%.4f", 0, report_accept_len},
    {"iter", "us", "%.2f", 0, report_iter_us},
    {"bs", "requests", "%.2f", 0, report_bs_mean},
    {"requests", "count", "%.0f", 0, report_requests_measured},
    {"iterations", "count", "%.0f", 0, report_iterations},
    {"draft", "us", "%.2f", 1, report_DRAFT},
    {"verify", "us", "%.2f", 1, report_VERIFY},
    {"accept", "us", "%.2f", 1, report_ACCEPT},
    {"extend", "us", "%.2f", 1, report_EXTEND},
    {"decode", "us", "%.2f", 1, report_DECODE},
    {"sample", "us", "%.2f", 1, report_SAMPLE},
    {"comm", "us", "%.2f", 1, report_comm_us},
    {"wait", "us", "%.2f", 1, report_wait_us},
    {"idle", "us", "%.2f", 1, report_idle_us},
    {"host", "us", "%.2f", 1, report_host_us},
    {"launch", "us", "%.2f", 1, report_launch_us},
    {"eager", "fraction", "%.3f", 1, report_eager_frac},
    {"tokens", "count", "%.0f", 2, report_tokens},
    {"events", "count", "%.0f", 2, report_events},
    {"sim_s", "s", "%.6f", 2, report_sim_s},
    {"partial", "flag", "%.0f", 2, report_partial},
    {"tok_s_p10", "tok/s", "%.2f", 3, report_tok_s_p10},
    {"tok_s_p50", "tok/s", "%.2f", 3, report_tok_s},
    {"tok_s_p90", "tok/s", "%.2f", 3, report_tok_s_p90},
    {"unc_model", "%", "%.3f", 3, report_unc_model},
    {"unc_run", "%", "%.3f", 3, report_unc_run},
    {"unc_est", "%", "%.3f", 3, report_unc_est},
    {"host_share", "fraction", "%.3f", 3, report_host_share},
    {"precision", "%", "%.3f", 3, report_precision},
};
const int report_nmetrics = (int)(sizeof report_metrics / sizeof report_metrics[0]);

double report_speedup(const sim_result *spec, const sim_result *base)
{
    return base && base->tok_s > 0 ? spec->tok_s / base->tok_s : 0;
}

void report_speedup_interval(const sim_result *spec, const sim_result *base, double *p10,
                             double *p90)
{
    double s = report_speedup(spec, base);
    if (s > 0 && spec->tok_s_p90 > 0 && base->tok_s_p90 > 0)
        interval_quantiles(s, interval_speedup_var(&spec->iv, &base->iv), p10, p90);
    else
        *p10 = *p90 = 0;
}

static void report_table(FILE *f, int table, const sim_result *spec, const sim_result *base)
{
    char buf[64];
    int w[64];
    fprintf(f, "#%-9s", "mode");
    for (int i = 0, j = 0; i < report_nmetrics; i++) {
        if (report_metrics[i].table != table)
            continue;
        int len = (int)strlen(report_metrics[i].name);
        w[j] = len < 9 ? 9 : len;
        fprintf(f, " %*s", w[j++], report_metrics[i].name);
    }
    fprintf(f, "\n#%-9s", "-");
    for (int i = 0, j = 0; i < report_nmetrics; i++)
        if (report_metrics[i].table == table)
            fprintf(f, " %*s", w[j++], report_metrics[i].unit);
    fputc('\n', f);
    for (int m = 0; m < 2; m++) {
        const sim_result *r = m ? base : spec;
        if (!r)
            continue;
        fprintf(f, "%-10s", m ? "baseline" : "spec");
        for (int i = 0, j = 0; i < report_nmetrics; i++) {
            if (report_metrics[i].table != table)
                continue;
            snprintf(buf, sizeof buf, report_metrics[i].fmt, report_metrics[i].get(r));
            fprintf(f, " %*s", w[j++], buf);
        }
        fputc('\n', f);
    }
}

void report_text(FILE *f, const sim_result *spec, const sim_result *base)
{
    fprintf(f, "# results (measured window: iterations after warmup; per-request metrics "
               "over requests that finished in it, each over its whole life)\n");
    report_table(f, 0, spec, base);
    if (base)
        fprintf(f, "# speedup %.4f (spec tok/s / baseline tok/s)\n", report_speedup(spec, base));
    if (spec->tok_s_p90 > 0) {
        fprintf(f, "# prediction interval of tok/s (p50 = tok_s); relative sd of its parts: "
                   "model (fit residuals, carry), run (a benchmark of --seconds: its draws, jitter "
                   "and the host's speed), est (this simulation); host_share: d log(window) / "
                   "d log(host speed); precision: +-%.3g standard errors of tok_s\n", SIM_PREC_Z);
        report_table(f, 3, spec, base);
        if (base) {
            double lo, hi;
            report_speedup_interval(spec, base, &lo, &hi);
            fprintf(f, "# speedup p10 %.4f p50 %.4f p90 %.4f\n", lo, report_speedup(spec, base), hi);
        }
    }
    fprintf(f, "# iteration breakdown, rank 0, us per iteration: compute per phase + comm + "
               "wait + idle = iter; host (gaps + launches) overlaps the GPU\n");
    report_table(f, 1, spec, base);
    for (int m = 0; m < 2; m++) {
        const sim_result *r = m ? base : spec;
        if (!r)
            continue;
        fprintf(f, "# %s: %ld tokens in %.6f simulated s (%ld iterations incl. warmup), "
                "%llu events%s\n", m ? "baseline" : "spec", r->tokens, r->window_us / 1e6,
                r->iterations_total, (unsigned long long)r->events,
                r->partial ? "; no request finished in the window: per-request metrics "
                             "from running requests" : "");
    }
}

void report_csv_header(FILE *f, const char *const *knobs, int nknobs, int baseline)
{
    int first = 1;
    for (int i = 0; i < nknobs; i++, first = 0)
        fprintf(f, "%s%s", first ? "" : ",", knobs[i]);
    for (int b = 0; b <= baseline; b++)
        for (int i = 0; i < report_nmetrics; i++, first = 0)
            fprintf(f, "%s%s%s", first ? "" : ",", b ? "base_" : "", report_metrics[i].name);
    if (baseline)
        fprintf(f, "%sspeedup,speedup_p10,speedup_p50,speedup_p90", first ? "" : ",");
    fputc('\n', f);
}

/* CSV field: quoted when it holds a comma, quote or newline */
static void report_csv_field(FILE *f, const char *v)
{
    if (!strpbrk(v, ",\"\n")) {
        fputs(v, f);
        return;
    }
    fputc('"', f);
    for (; *v; v++) {
        if (*v == '"')
            fputc('"', f);
        fputc(*v, f);
    }
    fputc('"', f);
}

void report_csv_row(FILE *f, const char *const *values, int nvalues, const sim_result *spec,
                    const sim_result *base)
{
    int first = 1;
    for (int i = 0; i < nvalues; i++, first = 0) {
        if (!first)
            fputc(',', f);
        report_csv_field(f, values[i]);
    }
    for (int b = 0; b < (base ? 2 : 1); b++) {
        const sim_result *r = b ? base : spec;
        for (int i = 0; i < report_nmetrics; i++, first = 0) {
            if (!first)
                fputc(',', f);
            fprintf(f, report_metrics[i].fmt, report_metrics[i].get(r));
        }
    }
    if (base) {
        double lo, hi, sp = report_speedup(spec, base);
        report_speedup_interval(spec, base, &lo, &hi);
        fprintf(f, "%s%.4f,%.4f,%.4f,%.4f", first ? "" : ",", sp, lo, sp, hi);
    }
    fputc('\n', f);
}

char *report_json_metrics(const sim_result *r)
{
    cJSON *o = cJSON_CreateObject();
    char buf[64];
    if (!o)
        return NULL;
    for (int i = 0; i < report_nmetrics; i++) {
        /* round through the printed format: JSON holds what the table shows */
        snprintf(buf, sizeof buf, report_metrics[i].fmt, report_metrics[i].get(r));
        cJSON_AddNumberToObject(o, report_metrics[i].name, strtod(buf, NULL));
    }
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}
