/* fit_plot: a fit's result -> gnuplot data and a script (fit.h's fit_plot). In: the cells
 * fit_group and fit_phase_totals kept; out: DIR/<phase>_<g>.dat/.fit, DIR/<phase>_total.dat,
 * DIR/plot.gp. Workload: tens of groups of tens of cells. */
#include "fit_int.h"
#include "ptrace_out.h"
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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
            double kv = fit_group_median(kvs, (size_t)nk);
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
