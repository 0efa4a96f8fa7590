/* test_gsweep: the GEMM sweep path: the CSV reader (models/gsweep.c), the model's sweep
 * term (wm_sweep_us, JSON round trip, refusals) and the fit's choice between the sweep form
 * and the smooth fit (fit_group with ctx.sweep) on a GEMM cost with a cuBLAS-like step that
 * the calibration token counts miss. */
#include "check.h"
#include "fit.h"
#include "gsweep.h"
#include "wmodel.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tmpdir[256];

static const char *write_file(const char *name, const char *text)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    return path;
}

static const char *GOOD =
    "preset,site,phases,per_forward,m,n,k,tokens,us,calls,device\n"
    "p,gu,verify;decode,32,tokens,28672,4096,8,10,24,GPU\n"
    "p,gu,verify;decode,32,tokens,28672,4096,1,4,24,GPU\n"
    "p,gu,verify;decode,32,tokens,28672,4096,16,20,24,GPU\n"
    "p,gu,verify;decode,32,tokens,28672,4096,16,22,24,GPU\n"    /* repeated: averaged */
    "p,lm,draft;extend,1,rows,128256,4096,1,100,24,GPU\n"
    "p,lm,draft;extend,1,rows,128256,4096,8,200,24,GPU\n"
    "p,lm,draft;extend,1,rows,128256,4096,16,300,24,GPU\n";

static void gsweep_reads_sorts_and_averages(void)
{
    wm_sweep sw;
    char err[512];
    const char *path = write_file("good.csv", GOOD);
    CHECK(gsweep_load(&sw, path, err, sizeof err) == 0, "%s", err);
    CHECK(sw.ntok == 3 && sw.nsite == 2, "%d tokens %d sites", sw.ntok, sw.nsite);
    CHECK(sw.tok[0] == 1 && sw.tok[1] == 8 && sw.tok[2] == 16, "order %g %g %g", sw.tok[0],
          sw.tok[1], sw.tok[2]);
    CHECK(strcmp(sw.site[0].name, "gu") == 0 && sw.site[0].per_forward == 32 &&
          !sw.site[0].by_rows, "site 0 %s", sw.site[0].name);
    CHECK(sw.site[0].phases == ((1u << WM_VERIFY) | (1u << WM_DECODE)), "phases %x", sw.site[0].phases);
    CHECK_NEAR(sw.site[0].us[0], 4, 0, 0);
    CHECK_NEAR(sw.site[0].us[2], 21, 1e-12, 0);          /* (20 + 22) / 2 */
    CHECK(sw.site[1].by_rows && sw.site[1].phases == ((1u << WM_DRAFT) | (1u << WM_EXTEND)),
          "site 1 rows %d phases %x", sw.site[1].by_rows, sw.site[1].phases);
    CHECK(strstr(sw.source, "good.csv") && strstr(sw.source, "2 sites x 3 token counts"),
          "source %s", sw.source);
}

static void gsweep_sum_interpolates_by_phase_and_rows(void)
{
    static wm_model m;
    char err[512];
    wm_init(&m);
    CHECK(gsweep_load(&m.sweep, write_file("good.csv", GOOD), err, sizeof err) == 0, "%s", err);
    /* verify: gu only, 32 per forward; between 8 (10) and 16 (21): 12 -> 15.5 */
    CHECK_NEAR(wm_sweep_us(&m, WM_VERIFY, 12, 3), 32 * 15.5, 1e-9, 0);
    CHECK_NEAR(wm_sweep_us(&m, WM_VERIFY, 8, 1), 32 * 10, 1e-9, 0);
    /* beyond the last count: along the last two (8 -> 16: +11) */
    CHECK_NEAR(wm_sweep_us(&m, WM_VERIFY, 24, 1), 32 * 32, 1e-9, 0);
    /* below the first: the first */
    CHECK_NEAR(wm_sweep_us(&m, WM_VERIFY, 0.5, 1), 32 * 4, 1e-9, 0);
    /* extend: the LM head over rows = tokens / q: 32 tokens at 4 per row = 8 rows */
    CHECK_NEAR(wm_sweep_us(&m, WM_EXTEND, 32, 4), 200, 1e-9, 0);
    CHECK_NEAR(wm_sweep_us(&m, WM_ACCEPT, 8, 1), 0, 0, 0);
    CHECK(wm_sweep_covers(&m, WM_VERIFY) && wm_sweep_covers(&m, WM_EXTEND) &&
          !wm_sweep_covers(&m, WM_ACCEPT) && !wm_sweep_covers(&m, -1), "covers");
    /* a group's term */
    wm_group g;
    memset(&g, 0, sizeof g);
    g.base_us = 7;
    g.sweep_scale = 0.5;
    g.sweep_phase = WM_VERIFY;
    CHECK_NEAR(wm_group_us_q(&m, &g, 12, 0, 3), 7 + 0.5 * 32 * 15.5, 1e-9, 0);
}

static void gsweep_refuses_bad_files(void)
{
    static const struct { const char *name, *text, *needle; } bad[] = {
        {"empty.csv", "", "empty file"},
        {"nocol.csv", "site,phases,per_forward,m,tokens\nx,verify,1,tokens,1\n", "field us"},
        {"phase.csv", "site,phases,per_forward,m,tokens,us\nx,verfy,1,tokens,1,2\nx,verfy,1,tokens,2,2\n",
         "value \"verfy\""},
        {"neg.csv", "site,phases,per_forward,m,tokens,us\nx,verify,1,tokens,1,-2\n", "field us: value \"-2\""},
        {"nan.csv", "site,phases,per_forward,m,tokens,us\nx,verify,1,tokens,1,nan\n", "field us"},
        {"tok.csv", "site,phases,per_forward,m,tokens,us\nx,verify,1,tokens,0,2\n", "field tokens: value \"0\""},
        {"m.csv", "site,phases,per_forward,m,tokens,us\nx,verify,1,cols,1,2\n", "field m: value \"cols\""},
        {"cut.csv", "site,phases,per_forward,m,tokens,us\nx,verify,1,tokens,1,2\nx,verify,1\n", "line 3: 3 fields"},
        {"hole.csv", "site,phases,per_forward,m,tokens,us\nx,verify,1,tokens,1,2\nx,verify,1,tokens,2,3\n"
                     "y,verify,1,tokens,1,2\n", "site y: field tokens: value 2"},
        {"mix.csv", "preset,site,phases,per_forward,m,tokens,us\na,x,verify,1,tokens,1,2\nb,x,verify,1,tokens,2,2\n",
         "field preset: value \"b\""},
        {"one.csv", "site,phases,per_forward,m,tokens,us\nx,verify,1,tokens,1,2\n", "at least 2 token counts"},
        {"meta.csv", "site,phases,per_forward,m,tokens,us\nx,verify,1,tokens,1,2\nx,verify,2,tokens,2,2\n",
         "differ"},
    };
    wm_sweep sw;
    char err[512];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *path = write_file(bad[i].name, bad[i].text);
        int rc = gsweep_load(&sw, path, err, sizeof err);
        CHECK(rc == -1, "%s accepted", bad[i].name);
        CHECK(strstr(err, bad[i].name) != NULL && strstr(err, bad[i].needle) != NULL,
              "%s: message \"%s\" lacks \"%s\"", bad[i].name, err, bad[i].needle);
        CHECK(sw.ntok == 0 && sw.nsite == 0, "%s: sweep left filled", bad[i].name);
    }
    CHECK(gsweep_load(&sw, "/nonexistent/x.csv", err, sizeof err) == -1 &&
          strstr(err, "/nonexistent/x.csv: cannot open"), "%s", err);
}

static const char *MODEL_HEAD =
    "{\"specsim_model\": 1, \"name\": \"t\", \"phases\": {"
    "\"verify\": {\"groups\": [{\"name\": \"gemm\", \"count\": 4, \"base_us\": 5, "
    "\"sweep_scale\": 2, \"sweep_phase\": \"verify\"}]},"
    "\"accept\": {\"groups\": [{\"name\": \"a\", \"count\": 1, \"base_us\": 1}]}}";

static void gsweep_model_round_trips_and_refuses(void)
{
    static wm_model m, b;
    char err[512], text[2048];
    snprintf(text, sizeof text, "%s, \"gemm_sweep\": {\"source\": \"s\", \"tokens\": [1, 8, 16], "
             "\"sites\": [{\"name\": \"gu\", \"phases\": [\"verify\"], \"per_forward\": 2, "
             "\"m\": \"tokens\", \"us\": [4, 10, 21]}]}}", MODEL_HEAD);
    CHECK(wm_parse(&m, text, "t.json", err, sizeof err) == 0, "%s", err);
    CHECK_NEAR(wm_phase_gpu_us(&m, WM_VERIFY, 8, 0), 5 + 2 * 2 * 10, 1e-9, 0);
    CHECK_NEAR(wm_phase_gpu_us(&m, WM_DECODE, 8, 0), 5 + 2 * 2 * 10, 1e-9, 0);   /* falls back */
    char path[512];
    snprintf(path, sizeof path, "%s/m.json", tmpdir);
    CHECK(wm_save(&m, path, err, sizeof err) == 0, "%s", err);
    CHECK(wm_load(&b, path, err, sizeof err) == 0, "%s", err);
    CHECK(b.sweep.ntok == 3 && b.sweep.nsite == 1 && b.sweep.site[0].us[2] == 21 &&
          b.phase[WM_VERIFY].groups[0].sweep_scale == 2 &&
          b.phase[WM_VERIFY].groups[0].sweep_phase == WM_VERIFY, "round trip");
    /* refused: a term without a sweep, an unknown phase, counts not increasing, a short row */
    static const struct { const char *tail, *needle; } bad[] = {
        {"}", "sweep_scale: the model has no gemm_sweep"},
        {", \"gemm_sweep\": {\"tokens\": [1, 1], \"sites\": [{\"name\": \"g\", \"phases\": [\"verify\"], "
         "\"per_forward\": 1, \"us\": [1, 2]}]}}", "gemm_sweep.tokens[1]"},
        {", \"gemm_sweep\": {\"tokens\": [1, 2], \"sites\": [{\"name\": \"g\", \"phases\": [\"verfy\"], "
         "\"per_forward\": 1, \"us\": [1, 2]}]}}", "gemm_sweep.sites[0].phases"},
        {", \"gemm_sweep\": {\"tokens\": [1, 2], \"sites\": [{\"name\": \"g\", \"phases\": [\"verify\"], "
         "\"per_forward\": 1, \"us\": [1]}]}}", "gemm_sweep.sites[0].us"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(text, sizeof text, "%s%s", MODEL_HEAD, bad[i].tail);
        CHECK(wm_parse(&m, text, "t.json", err, sizeof err) == -1, "case %zu accepted", i);
        CHECK(strstr(err, "t.json") && strstr(err, bad[i].needle), "case %zu: \"%s\" lacks \"%s\"",
              i, err, bad[i].needle);
    }
}

/* a cuBLAS-like cost: smooth, except that at 448 tokens (7 per row x 64 rows) the kernel
 * picked is twice as slow */
static double gemm_curve(double t) { return 100 + 0.5 * t + (t == 448 ? 200 + 0.5 * t : 0); }

static void fit_keeps_sweep_that_predicts_an_unseen_step(void)
{
    static wm_model m;
    wm_init(&m);
    static const double grid[] = {1, 8, 24, 48, 64, 128, 192, 256, 320, 384, 448, 512, 640};
    int ng = (int)(sizeof grid / sizeof grid[0]);
    m.sweep.ntok = ng;
    m.sweep.nsite = 1;
    snprintf(m.sweep.site[0].name, sizeof m.sweep.site[0].name, "gu");
    m.sweep.site[0].phases = 1u << WM_VERIFY;
    m.sweep.site[0].per_forward = 1;
    for (int i = 0; i < ng; i++) {
        m.sweep.tok[i] = grid[i];
        m.sweep.site[0].us[i] = gemm_curve(grid[i]);
    }
    /* calibration: everything but 448; the group costs 0.9 x the sweep + 30 us, 3 repeats
     * with +-1% spread, from two traces */
    static const double cal[] = {8, 24, 48, 64, 128, 192, 256, 384, 512};
    fit_point pts[64];
    size_t n = 0;
    for (size_t i = 0; i < sizeof cal / sizeof cal[0]; i++)
        for (int r = 0; r < 3; r++) {
            double x = wm_sweep_us(&m, WM_VERIFY, cal[i], 1);
            pts[n++] = (fit_point){.tokens = cal[i], .us = (30 + 0.9 * x) * (1 + 0.01 * (r - 1)),
                                   .trace = (int)(i % 2), .q_per_row = 1, .sweep_us = x};
        }
    const char *names[] = {"a", "b"};
    fit_group_ctx c = {.trace_names = names, .ntraces = 2, .phase = "verify", .group = "gemm",
                       .sweep = 1, .sweep_phase = WM_VERIFY};
    wm_group g, s;
    fit_group_stats st, st2;
    char err[512];
    memset(&g, 0, sizeof g);
    CHECK(fit_group(pts, n, &c, &g, &st, err, sizeof err) == 0, "%s", err);
    CHECK(st.sweep_kept == 1 && st.loo_sweep >= 0 && st.loo_sweep <= st.loo_smooth,
          "kept %d loo %.4f vs %.4f", st.sweep_kept, st.loo_sweep, st.loo_smooth);
    CHECK_NEAR(g.sweep_scale, 0.9, 0, 0.02);
    CHECK_NEAR(g.base_us, 30, 8, 0);
    double truth = 30 + 0.9 * gemm_curve(448);
    CHECK_NEAR(wm_group_us_q(&m, &g, 448, 0, 7), truth, 0, 0.03);
    /* the smooth fit alone cannot see the step */
    c.sweep = 0;
    memset(&s, 0, sizeof s);
    CHECK(fit_group(pts, n, &c, &s, &st2, err, sizeof err) == 0, "%s", err);
    CHECK(fabs(wm_group_us_q(&m, &s, 448, 0, 7) - truth) > 0.15 * truth, "smooth %.1f truth %.1f",
          wm_group_us_q(&m, &s, 448, 0, 7), truth);
    free(st.cell);
    free(st2.cell);
}

/* m's sweep: one site of verify, one forward, n token counts tok[] timed us[]. */
static void sweep_verify(wm_model *m, int n, const double *tok, const double *us)
{
    wm_init(m);
    m->sweep.ntok = n;
    m->sweep.nsite = 1;
    m->sweep.site[0].phases = 1u << WM_VERIFY;
    m->sweep.site[0].per_forward = 1;
    for (int i = 0; i < n; i++) {
        m->sweep.tok[i] = tok[i];
        m->sweep.site[0].us[i] = us[i];
    }
}

/* The verify GEMM group of one trace fitted with the sweep: fit_group's status. */
static int fit_verify_gemm(const fit_point *pts, size_t n, wm_group *g, fit_group_stats *st, char *err,
                           size_t errlen)
{
    static const char *const names[] = {"a"};
    fit_group_ctx c = {.trace_names = names, .ntraces = 1, .phase = "verify", .group = "gemm",
                       .sweep = 1, .sweep_phase = WM_VERIFY};
    memset(g, 0, sizeof *g);
    return fit_group(pts, n, &c, g, st, err, errlen);
}

static void fit_drops_sweep_that_does_not_explain_the_group(void)
{
    static wm_model m;
    /* a sweep curve that rises with the tokens but not like the group's cost: a step at
     * 100 tokens the group does not have */
    sweep_verify(&m, 4, (const double[]){1, 99, 100, 600}, (const double[]){100, 110, 400, 420});
    static const double cal[] = {8, 24, 48, 64, 128, 192, 256, 384, 512};
    fit_point pts[64];
    size_t n = 0;
    for (size_t i = 0; i < sizeof cal / sizeof cal[0]; i++)
        for (int r = 0; r < 3; r++)
            pts[n++] = (fit_point){.tokens = cal[i], .us = (100 + 0.4 * cal[i]) * (1 + 0.01 * (r - 1)),
                                   .q_per_row = 1,
                                   .sweep_us = wm_sweep_us(&m, WM_VERIFY, cal[i], 1)};
    wm_group g;
    fit_group_stats st;
    char err[512];
    CHECK(fit_verify_gemm(pts, n, &g, &st, err, sizeof err) == 0, "%s", err);
    CHECK(st.sweep_kept == 0 && g.sweep_scale == 0, "kept %d scale %g", st.sweep_kept, g.sweep_scale);
    CHECK_NEAR(wm_group_us_q(&m, &g, 300, 0, 1), 100 + 0.4 * 300, 0, 0.03);
    free(st.cell);
}

/* A cell of no cost (a group that ran nothing at one token count: a node-level reference of
 * another shape filled it) gave the sweep's left-out comparison 0/0: "inf% rms", a NaN
 * residual, and a model that would not load back. It has no relative error and is left out. */
static void fit_sweep_comparison_leaves_out_a_cell_of_no_cost(void)
{
    static wm_model m;
    sweep_verify(&m, 2, (const double[]){1, 600}, (const double[]){50, 290});
    static const double cal[] = {8, 24, 48, 64, 128, 192, 256};
    fit_point pts[64];
    size_t n = 0;
    for (size_t i = 0; i < sizeof cal / sizeof cal[0]; i++)
        for (int r = 0; r < 3; r++)
            pts[n++] = (fit_point){.tokens = cal[i], .us = i == 3 ? 0 : (100 + 0.4 * cal[i]) * (1 + 0.01 * (r - 1)),
                                   .q_per_row = 1, .sweep_us = wm_sweep_us(&m, WM_VERIFY, cal[i], 1)};
    wm_group g;
    fit_group_stats st;
    char err[512];
    CHECK(fit_verify_gemm(pts, n, &g, &st, err, sizeof err) == 0, "%s", err);
    double rf = fit_group_resid_frac(&st);
    CHECK(isfinite(st.loo_sweep) && isfinite(st.loo_smooth) && isfinite(rf) && rf >= 0,
          "loo sweep %g smooth %g resid_frac %g", st.loo_sweep, st.loo_smooth, rf);
    free(st.cell);
}

int main(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/test_gsweep.XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    RUN(gsweep_reads_sorts_and_averages);
    RUN(gsweep_sum_interpolates_by_phase_and_rows);
    RUN(gsweep_refuses_bad_files);
    RUN(gsweep_model_round_trips_and_refuses);
    RUN(fit_keeps_sweep_that_predicts_an_unseen_step);
    RUN(fit_drops_sweep_that_does_not_explain_the_group);
    RUN(fit_sweep_comparison_leaves_out_a_cell_of_no_cost);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (check_tests_failed == 0 && system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
    return check_done();
}
