/* test_arfit: the all-reduce link fit (models/arfit.c) and link files (ar_link_load).
 * The fit recovers known links from synthetic arsweep sweeps: exactly without noise (1e-6
 * relative), and with +-2% uniform noise, 3 repeats per size, 50 seeds: beta within 2%,
 * floor within 1.5%, alpha within 10% where its term (A*alpha) is >= 8 us (a 500-seed study
 * gave worst errors of 1.1%, 0.9% and 6.5%). Bad CSVs are refused with the file, field and
 * value; a fitted file loads back and drives `specsim run --link` exactly like the same
 * numbers given as alpha=..,beta=..,floor=.. . Runs from the repository root. */
#include "arfit.h"
#include "check.h"
#include "specsim_bin.h"

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <gsl/gsl_rng.h>

static char dir[64];
static char specsim[512] = "bin/specsim";

#define CSV_HEADER "gpus,env,mode,bytes,time_us_median,time_us_min,time_us_max,algbw_gbps," \
                   "busbw_gbps,dtype,count,iters,errors\n"

static void path_in_dir(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/%s", dir, name);
}

static void write_file(const char *name, const char *text)
{
    char path[256];
    path_in_dir(path, sizeof path, name);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL, "cannot write %s", path);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* A synthetic arsweep CSV: sizes 1 KB..256 MB, `reps` rows each, time = the formula of algo
 * with link (alpha, beta, floor) times (1 + noise*(u - 0.5)), u uniform from a seeded RNG. */
static void write_sweep(const char *name, int gpus, const char *env, const char *mode,
                        const char *algo, double alpha, double beta, double floor_us,
                        double noise, int reps, unsigned long seed)
{
    char path[256], err[512];
    double A = 0, C = 0;
    CHECK(arfit_formula(algo, gpus, &A, &C, err, sizeof err) == 0, "%s", err);
    path_in_dir(path, sizeof path, name);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL, "cannot write %s", path);
    if (!f)
        return;
    gsl_rng *g = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(g, seed);
    fputs(CSV_HEADER, f);
    for (int r = 0; r < reps; r++)
        for (double b = 1024; b <= 256.0 * 1048576; b *= 2) {
            double t = A * alpha + C * b / (beta * 1e3);
            t = (t > floor_us ? t : floor_us) * (1 + noise * (gsl_rng_uniform(g) - 0.5));
            fprintf(f, "%d,%s,%s,%.0f,%.6f,%.6f,%.6f,0,0,bf16,%.0f,20,0\n", gpus, env, mode, b, t,
                    t, t, b / 2);
        }
    gsl_rng_free(g);
    fclose(f);
}

static int fit_file(const char *name, const arfit_select *sel, arfit_result *r, char *err,
                    size_t errlen)
{
    char path[256];
    arfit_data d;
    path_in_dir(path, sizeof path, name);
    arfit_data_init(&d);
    int rc = arfit_data_load(&d, path, err, errlen);
    if (rc == 0)
        rc = arfit_fit(&d, sel, r, err, errlen);
    arfit_data_free(&d);
    return rc;
}

static void arfit_formula_matches_allreduce_model(void)
{
    char err[256];
    for (int n = 2; n <= 16; n++) {
        double A, C, depth = 0;
        while ((1 << (int)depth) < n)
            depth++;
        CHECK(arfit_formula("ring", n, &A, &C, err, sizeof err) == 0, "%s", err);
        CHECK_NEAR(A, 2.0 * (n - 1), 0, 1e-9);
        CHECK_NEAR(C, 2.0 * (n - 1) / n, 0, 1e-9);
        CHECK(arfit_formula("nccl", n, &A, &C, err, sizeof err) == 0, "%s", err);
        CHECK_NEAR(A, 2.0 * (n - 1), 0, 1e-9);      /* NCCL on one node = the ring */
        CHECK_NEAR(C, 2.0 * (n - 1) / n, 0, 1e-9);
        CHECK(arfit_formula("tree", n, &A, &C, err, sizeof err) == 0, "%s", err);
        CHECK_NEAR(A, 2.0 * depth, 0, 1e-9);
        CHECK_NEAR(C, 2.0, 0, 1e-9);
        CHECK(arfit_formula("nccl-tree", n, &A, &C, err, sizeof err) == 0, "%s", err);
        CHECK_NEAR(A, 2.0 * (n - 1), 0, 1e-9);
        CHECK_NEAR(C, 2.0, 0, 1e-9);
    }
    double A, C;
    CHECK(arfit_formula("custom", 8, &A, &C, err, sizeof err) == -1, "custom accepted");
    CHECK(strstr(err, "custom") != NULL, "%s", err);
    CHECK(arfit_formula("oneshot", 8, &A, &C, err, sizeof err) == -1, "oneshot accepted");
    CHECK(arfit_formula("ring", 1, &A, &C, err, sizeof err) == -1, "1 rank accepted");
    CHECK(strstr(err, "gpus: value 1") != NULL, "%s", err);
}

static void arfit_recovers_exact_links(void)
{
    struct { int gpus; const char *algo; double a, b, f; } L[] = {
        {8, "nccl", 1.1808, 40, 24},       /* the pcie5-8gpu preset */
        {8, "ring", 0.6, 370, 20},         /* nvlink4-8gpu */
        {4, "nccl-tree", 2.0, 20, 30},
        {2, "tree", 5.0, 50, 0.5},         /* the floor never binds: a pure line */
    };
    for (size_t i = 0; i < sizeof L / sizeof L[0]; i++) {
        double x[64], y[64], A, C;
        size_t n = 0;
        char err[512];
        CHECK(arfit_formula(L[i].algo, L[i].gpus, &A, &C, err, sizeof err) == 0, "%s", err);
        for (double b = 1024; b <= 256.0 * 1048576; b *= 2, n++) {
            x[n] = b;
            y[n] = A * L[i].a + C * b / (L[i].b * 1e3);
            if (y[n] < L[i].f)
                y[n] = L[i].f;
        }
        arfit_result r;
        CHECK(arfit_fit_points(x, y, n, L[i].gpus, L[i].algo, "exact", &r, err, sizeof err) == 0,
              "%s", err);
        CHECK_NEAR(r.link.latency_us, L[i].a, 0, 1e-6);
        CHECK_NEAR(r.link.bw_gbps, L[i].b, 0, 1e-6);
        if (L[i].f > A * L[i].a)
            CHECK_NEAR(r.link.floor_us, L[i].f, 0, 1e-6);
        else
            CHECK(r.link.floor_us == 0 && r.floor_to_bytes == 0,
                  "no size is on the floor, yet floor %g up to %g B", r.link.floor_us,
                  r.floor_to_bytes);
        CHECK(r.max_rel < 1e-9, "exact data, max rel err %g", r.max_rel);
        CHECK(r.nsizes == 19 && r.points == 19, "sizes %d points %zu", r.nsizes, r.points);
        /* the split lands where the data leave the floor */
        for (int k = 0; k < r.nsizes; k++)
            CHECK(r.resid[k].on_floor == (L[i].f > A * L[i].a + C * r.resid[k].bytes /
                                          (L[i].b * 1e3)),
                  "link %zu: %g B on_floor %d", i, r.resid[k].bytes, r.resid[k].on_floor);
        arfit_result_free(&r);
    }
}

static void arfit_recovers_noisy_links(void)
{
    struct { int gpus; const char *algo; double a, b, f; } L[] = {
        {8, "nccl", 1.1808, 40, 24},
        {8, "nccl", 0.6, 370, 20},
        {4, "nccl-tree", 2.0, 20, 30},
        {2, "ring", 0.6, 370, 20},         /* alpha's term only 1.2 us: alpha not checked */
    };
    double worst[3] = {0, 0, 0};
    for (size_t i = 0; i < sizeof L / sizeof L[0]; i++)
        for (unsigned long seed = 1; seed <= 50; seed++) {
            char err[512];
            write_sweep("noisy.csv", L[i].gpus, "default", "graph", L[i].algo, L[i].a, L[i].b,
                        L[i].f, 0.04, 3, seed);
            arfit_select sel = {0, NULL, NULL, NULL, L[i].algo};
            arfit_result r;
            if (fit_file("noisy.csv", &sel, &r, err, sizeof err)) {
                CHECK(0, "link %zu seed %lu: %s", i, seed, err);
                continue;
            }
            double ea = fabs(r.link.latency_us / L[i].a - 1);
            double eb = fabs(r.link.bw_gbps / L[i].b - 1);
            double ef = fabs(r.link.floor_us / L[i].f - 1);
            CHECK(eb <= 0.02, "link %zu seed %lu: bw %g vs %g", i, seed, r.link.bw_gbps, L[i].b);
            CHECK(ef <= 0.015, "link %zu seed %lu: floor %g vs %g", i, seed, r.link.floor_us,
                  L[i].f);
            if (r.steps_coef * L[i].a >= 8)
                CHECK(ea <= 0.10, "link %zu seed %lu: alpha %g vs %g", i, seed,
                      r.link.latency_us, L[i].a);
            /* the standard errors are honest: the truth within 6 sd */
            CHECK(fabs(r.link.bw_gbps - L[i].b) <= 6 * r.beta_sd_gbps, "link %zu seed %lu: bw "
                  "%g sd %g", i, seed, r.link.bw_gbps, r.beta_sd_gbps);
            CHECK(fabs(r.link.floor_us - L[i].f) <= 6 * r.floor_sd_us, "link %zu seed %lu: "
                  "floor %g sd %g", i, seed, r.link.floor_us, r.floor_sd_us);
            CHECK(r.points == 57 && r.nsizes == 19, "points %zu sizes %d", r.points, r.nsizes);
            CHECK(r.rms_rel < 0.02, "rms rel %g with 2%% noise", r.rms_rel);
            if (r.steps_coef * L[i].a >= 8 && ea > worst[0])
                worst[0] = ea;
            worst[1] = eb > worst[1] ? eb : worst[1];
            worst[2] = ef > worst[2] ? ef : worst[2];
            arfit_result_free(&r);
        }
    printf("  worst relative error over 4 links x 50 seeds: alpha %.3f, beta %.4f, floor %.4f\n",
           worst[0], worst[1], worst[2]);
}

static void arfit_env_picks_the_formula(void)
{
    char err[512];
    struct { const char *env, *algo; } E[] = {
        {"NCCL_ALGO=Tree", "nccl-tree"},
        {"NCCL_ALGO=Ring;NCCL_P2P_DISABLE=1", "ring"},
        {"NCCL_P2P_DISABLE=1", "nccl"},
        {"default", "nccl"},
    };
    for (size_t i = 0; i < sizeof E / sizeof E[0]; i++) {
        write_sweep("env.csv", 4, E[i].env, "eager", E[i].algo, 1.5, 25, 18, 0, 1, 1);
        arfit_select sel = {0, NULL, NULL, NULL, NULL};
        arfit_result r;
        CHECK(fit_file("env.csv", &sel, &r, err, sizeof err) == 0, "%s", err);
        CHECK(strcmp(r.algo, E[i].algo) == 0, "env %s: formula %s, want %s", E[i].env, r.algo,
              E[i].algo);
        CHECK_NEAR(r.link.latency_us, 1.5, 0, 1e-6);
        CHECK_NEAR(r.link.bw_gbps, 25, 0, 1e-6);
        CHECK(strcmp(r.env, E[i].env) == 0 && strcmp(r.mode, "eager") == 0 &&
              strcmp(r.dtype, "bf16") == 0 && r.gpus == 4, "selection %s %s %s %d", r.env,
              r.mode, r.dtype, r.gpus);
        arfit_result_free(&r);
    }
    write_sweep("env.csv", 4, "NCCL_ALGO=CollNetDirect", "eager", "ring", 1.5, 25, 18, 0, 1, 1);
    arfit_select sel = {0, NULL, NULL, NULL, NULL};
    arfit_result r;
    CHECK(fit_file("env.csv", &sel, &r, err, sizeof err) == -1, "CollNetDirect accepted");
    CHECK(strstr(err, "env.csv") && strstr(err, "field env") && strstr(err, "CollNetDirect"),
          "%s", err);
}

/* Two files with two groups: the selection picks one; without it the fit is refused. */
static void arfit_selects_one_group(void)
{
    char err[512], p1[256], p2[256];
    write_sweep("g2.csv", 2, "default", "graph", "nccl", 1.0, 100, 15, 0, 1, 1);
    write_sweep("g4.csv", 4, "default", "graph", "nccl", 3.0, 80, 25, 0, 1, 1);
    path_in_dir(p1, sizeof p1, "g2.csv");
    path_in_dir(p2, sizeof p2, "g4.csv");
    arfit_data d;
    arfit_data_init(&d);
    CHECK(arfit_data_load(&d, p1, err, sizeof err) == 0, "%s", err);
    CHECK(arfit_data_load(&d, p2, err, sizeof err) == 0, "%s", err);
    CHECK(d.n == 38 && d.nfiles == 2, "rows %zu files %d", d.n, d.nfiles);
    arfit_select sel = {0, NULL, NULL, NULL, NULL};
    arfit_result r;
    CHECK(arfit_fit(&d, &sel, &r, err, sizeof err) == -1, "two GPU counts accepted");
    CHECK(strstr(err, "field gpus") && strstr(err, "\"2\", \"4\"") && strstr(err, "--gpus"),
          "%s", err);
    sel.gpus = 4;
    CHECK(arfit_fit(&d, &sel, &r, err, sizeof err) == 0, "%s", err);
    CHECK_NEAR(r.link.latency_us, 3.0, 0, 1e-6);
    CHECK_NEAR(r.link.bw_gbps, 80, 0, 1e-6);
    CHECK_NEAR(r.link.floor_us, 25, 0, 1e-6);
    arfit_result_free(&r);
    sel.gpus = 8;
    CHECK(arfit_fit(&d, &sel, &r, err, sizeof err) == -1, "no rows accepted");
    CHECK(strstr(err, "no rows match") != NULL, "%s", err);
    arfit_data_free(&d);
}

static void arfit_refuses_bad_input(void)
{
    static const char *const H = CSV_HEADER;
    struct { const char *name, *body, *want1, *want2; } cases[] = {
        {"onesize.csv", "8,default,graph,14336,24.1,24,25,0,0,bf16,7168,20,0\n"
                        "8,default,graph,14336,24.3,24,25,0,0,bf16,7168,20,0\n",
         "field bytes: value 14336", "1 distinct message size"},
        {"twosizes.csv", "8,default,graph,1024,24,24,25,0,0,bf16,512,20,0\n"
                         "8,default,graph,2048,24,24,25,0,0,bf16,1024,20,0\n",
         "field bytes", "need >= 3 sizes"},
        {"zero.csv", "8,default,graph,1024,0,0,0,0,0,bf16,512,20,0\n",
         "line 2: field time_us_median: value 0", "must be > 0"},
        {"negative.csv", "8,default,graph,1024,24,24,25,0,0,bf16,512,20,0\n"
                         "8,default,graph,2048,-3.5,24,25,0,0,bf16,1024,20,0\n",
         "line 3: field time_us_median: value -3.5", "must be > 0"},
        {"text.csv", "8,default,graph,1K,24,24,25,0,0,bf16,512,20,0\n",
         "field bytes: value \"1K\"", "not a number"},
        {"gpus.csv", "eight,default,graph,1024,24,24,25,0,0,bf16,512,20,0\n",
         "field gpus: value \"eight\"", "not a number"},
        {"fields.csv", "8,default,graph,1024,24\n", "line 2: 5 fields", "header has 13"},
        {"wrong.csv", "8,default,graph,1024,24,24,25,0,0,bf16,512,20,17\n",
         "field errors: value \"17\"", "wrong all-reduce result"},
        {"empty.csv", "", "no data rows", "not an arsweep CSV"},
        {"onerank.csv", "1,default,graph,1024,3,3,3,0,0,bf16,512,20,0\n"
                        "1,default,graph,2048,3,3,3,0,0,bf16,1024,20,0\n"
                        "1,default,graph,4096,3,3,3,0,0,bf16,2048,20,0\n",
         "gpus: value 1", ">= 2 GPUs"},
        {"flat.csv", "8,default,graph,1024,24,24,25,0,0,bf16,512,20,0\n"
                     "8,default,graph,2048,23,24,25,0,0,bf16,1024,20,0\n"
                     "8,default,graph,4096,22,24,25,0,0,bf16,2048,20,0\n"
                     "8,default,graph,8192,21,24,25,0,0,bf16,2048,20,0\n",
         "field time_us_median", "do not grow with bytes"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[2048], err[1024];
        snprintf(text, sizeof text, "%s%s", H, cases[i].body);
        write_file(cases[i].name, text);
        arfit_select sel = {0, NULL, NULL, NULL, NULL};
        arfit_result r;
        CHECK(fit_file(cases[i].name, &sel, &r, err, sizeof err) == -1, "%s accepted",
              cases[i].name);
        CHECK(strstr(err, cases[i].name) && strstr(err, cases[i].want1) &&
              strstr(err, cases[i].want2), "%s: message \"%s\" lacks \"%s\" / \"%s\"",
              cases[i].name, err, cases[i].want1, cases[i].want2);
    }
    /* a header without time_us_median */
    write_file("nocol.csv", "gpus,env,mode,bytes,time_us\n8,default,graph,1024,24\n");
    char err[1024];
    arfit_select sel = {0, NULL, NULL, NULL, NULL};
    arfit_result r;
    CHECK(fit_file("nocol.csv", &sel, &r, err, sizeof err) == -1, "missing column accepted");
    CHECK(strstr(err, "nocol.csv: line 1: field time_us_median: missing") != NULL, "%s", err);
    CHECK(fit_file("absent.csv", &sel, &r, err, sizeof err) == -1, "absent file accepted");
    CHECK(strstr(err, "absent.csv: cannot open") != NULL, "%s", err);
}

static void arfit_json_round_trip(void)
{
    char err[1024], csv[256], out[256];
    write_sweep("rt.csv", 8, "NCCL_P2P_DISABLE=1", "graph", "nccl", 2.5, 12.5, 40, 0.02, 2, 3);
    path_in_dir(csv, sizeof csv, "rt.csv");
    path_in_dir(out, sizeof out, "rt-link.json");
    arfit_data d;
    arfit_data_init(&d);
    CHECK(arfit_data_load(&d, csv, err, sizeof err) == 0, "%s", err);
    arfit_select sel = {0, NULL, NULL, NULL, NULL};
    arfit_result r;
    CHECK(arfit_fit(&d, &sel, &r, err, sizeof err) == 0, "%s", err);
    CHECK(arfit_write_json(&r, &d, "h200-x8-nop2p", out, err, sizeof err) == 0, "%s", err);
    ar_link l;
    CHECK(ar_link_load(out, &l, err, sizeof err) == 0, "%s", err);
    CHECK_NEAR(l.latency_us, r.link.latency_us, 0, 1e-12);
    CHECK_NEAR(l.bw_gbps, r.link.bw_gbps, 0, 1e-12);
    CHECK_NEAR(l.floor_us, r.link.floor_us, 0, 1e-12);
    CHECK(l.p2p_floor_us == 0 && l.p2p_bw_gbps == 0, "p2p %g %g", l.p2p_floor_us, l.p2p_bw_gbps);
    CHECK(strcmp(l.name, "h200-x8-nop2p") == 0, "name %s", l.name);
    CHECK(l.source && strstr(l.source, "rt.csv") && strstr(l.source, "8 GPUs") &&
          strstr(l.source, "NCCL_P2P_DISABLE=1"), "source %s", l.source ? l.source : "(null)");
    /* the loaded link prices an all-reduce like the fitted one */
    const ar_algo *a = ar_algo_find("nccl");
    for (double b = 1024; b < 1e9; b *= 4)
        CHECK_NEAR(ar_time_us(a, &l, b, 8), ar_time_us(a, &r.link, b, 8), 0, 1e-12);
    /* the source stays valid after a second load (interned, not freed) */
    ar_link l2;
    CHECK(ar_link_load(out, &l2, err, sizeof err) == 0, "%s", err);
    CHECK(l2.source == l.source, "same text interned twice");
    arfit_result_free(&r);
    arfit_data_free(&d);
}

static void ar_link_load_refuses_bad_files(void)
{
    struct { const char *name, *body, *want; } cases[] = {
        {"l-notjson.json", "{\"specsim_link\": 1, ", "not a JSON object"},
        {"l-format.json", "{\"specsim_link\": 2, \"latency_us\": 1, \"bw_gbps\": 2, "
                          "\"floor_us\": 3}", "field specsim_link: value 2"},
        {"l-noformat.json", "{\"latency_us\": 1, \"bw_gbps\": 2, \"floor_us\": 3}",
         "field specsim_link: value (missing)"},
        {"l-nobw.json", "{\"specsim_link\": 1, \"latency_us\": 1, \"floor_us\": 3}",
         "field bw_gbps: missing"},
        {"l-zerobw.json", "{\"specsim_link\": 1, \"latency_us\": 1, \"bw_gbps\": 0, "
                          "\"floor_us\": 3}", "field bw_gbps: value 0: out of range"},
        {"l-negfloor.json", "{\"specsim_link\": 1, \"latency_us\": 1, \"bw_gbps\": 5, "
                            "\"floor_us\": -1}", "field floor_us: value -1: out of range"},
        {"l-strlat.json", "{\"specsim_link\": 1, \"latency_us\": \"1\", \"bw_gbps\": 5, "
                          "\"floor_us\": 1}", "field latency_us: value \"1\": not a finite"},
        {"l-name.json", "{\"specsim_link\": 1, \"latency_us\": 1, \"bw_gbps\": 5, "
                        "\"floor_us\": 1, \"name\": 7}", "field name"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[256], err[1024];
        write_file(cases[i].name, cases[i].body);
        path_in_dir(path, sizeof path, cases[i].name);
        ar_link l;
        CHECK(ar_link_load(path, &l, err, sizeof err) == -1, "%s accepted", cases[i].name);
        CHECK(strstr(err, cases[i].name) && strstr(err, cases[i].want), "%s: \"%s\" lacks "
              "\"%s\"", cases[i].name, err, cases[i].want);
    }
}

/* ---- through the CLI ---------------------------------------------------------------------- */

static int sh(const char *cmd, char **out)
{
    return specsim_run_capture(cmd, out);
}

/* A 4-rank model whose all-reduces sit on the floor (verify: 64 x 1 KB per token) and on
 * the line (extend: 8 x 64 KB per token): floor, alpha and beta all change its speed. */
static const char *model_json =
    "{\"specsim_model\": 1, \"name\": \"arfit-tp4\", \"source\": \"test_arfit\", \"ranks\": 4,\n"
    " \"launch\": {\"graph_launch_us\": 7, \"eager_launch_us\": 4},\n"
    " \"phases\": {\n"
    "  \"draft\": {\"host_gap_us\": 5, \"host_gap_sd_us\": 0, \"groups\": [{\"name\": \"d\", \"count\": 10,"
    " \"base_us\": 40, \"per_token_us\": 0.1, \"knee_tokens\": 0, \"per_expert_us\": 0,"
    " \"per_kv_ktoken_us\": 0.1, \"sd_frac\": 0}], \"collectives\": [{\"op\": \"allreduce\","
    " \"count\": 2, \"bytes_per_token\": 16384}]},\n"
    "  \"verify\": {\"host_gap_us\": 20, \"host_gap_sd_us\": 0, \"groups\": [{\"name\": \"v\", \"count\": 200,"
    " \"base_us\": 900, \"per_token_us\": 1.0, \"knee_tokens\": 32, \"per_expert_us\": 0,"
    " \"per_kv_ktoken_us\": 0.5, \"sd_frac\": 0}], \"collectives\": [{\"op\": \"allreduce\","
    " \"count\": 64, \"bytes_per_token\": 1024}]},\n"
    "  \"accept\": {\"host_gap_us\": 8, \"host_gap_sd_us\": 0, \"groups\": [{\"name\": \"a\", \"count\": 5,"
    " \"base_us\": 15, \"per_token_us\": 0.01, \"knee_tokens\": 0, \"per_expert_us\": 0,"
    " \"per_kv_ktoken_us\": 0, \"sd_frac\": 0}], \"collectives\": []},\n"
    "  \"extend\": {\"host_gap_us\": 8, \"host_gap_sd_us\": 0, \"groups\": [{\"name\": \"e\", \"count\": 10,"
    " \"base_us\": 50, \"per_token_us\": 0.1, \"knee_tokens\": 0, \"per_expert_us\": 0,"
    " \"per_kv_ktoken_us\": 0.1, \"sd_frac\": 0}], \"collectives\": [{\"op\": \"allreduce\","
    " \"count\": 8, \"bytes_per_token\": 65536}]}\n"
    " }}\n";

/* The data row of `specsim run --csv` (its second line). */
static const char *second_line(const char *s)
{
    const char *nl = s ? strchr(s, '\n') : NULL;
    return nl ? nl + 1 : "";
}

static void arfit_link_file_drives_simulator(void)
{
    char cmd[2048], csv[256], link[256], model[256], *out = NULL;
    write_sweep("cli.csv", 4, "default", "graph", "nccl", 2.0, 30, 22, 0, 1, 5);
    path_in_dir(csv, sizeof csv, "cli.csv");
    path_in_dir(link, sizeof link, "cli-link.json");
    path_in_dir(model, sizeof model, "model.json");
    write_file("model.json", model_json);

    snprintf(cmd, sizeof cmd, "%s fit-allreduce %s -o %s --name tp4-test 2>&1", specsim, csv,
             link);
    int rc = sh(cmd, &out);
    CHECK(rc == 0, "exit %d: %s", rc, out ? out : "");
    CHECK(out && strstr(out, "latency_us 2 ") && strstr(out, "bw_gbps 30 ") &&
          strstr(out, "floor_us 22 "), "report: %s", out ? out : "");
    CHECK(out && strstr(out, "(B)") && strstr(out, " floor\n") && strstr(out, " line\n"),
          "residual table: %s", out ? out : "");
    free(out);

    const char *common = "--acceptance alpha:0.7 --steps 3 --bs 8 --iterations 200 "
                         "--warmup 10 --jitter-scale 0 --seed 3 --csv --quiet";
    char *by_file = NULL, *by_spec = NULL, *by_preset = NULL;
    snprintf(cmd, sizeof cmd, "%s run --model %s --link %s %s 2>&1", specsim, model, link, common);
    CHECK(sh(cmd, &by_file) == 0, "--link FILE: %s", by_file ? by_file : "");
    snprintf(cmd, sizeof cmd, "%s run --model %s --link alpha=2,beta=30,floor=22 %s 2>&1",
             specsim, model, common);
    CHECK(sh(cmd, &by_spec) == 0, "--link spec: %s", by_spec ? by_spec : "");
    snprintf(cmd, sizeof cmd, "%s run --model %s --link pcie5-8gpu %s 2>&1", specsim, model,
             common);
    CHECK(sh(cmd, &by_preset) == 0, "--link preset: %s", by_preset ? by_preset : "");
    /* the fitted numbers are 2, 30, 22 to ~1e-9: the CSV rows (2 decimals) are equal */
    CHECK(strcmp(second_line(by_file), second_line(by_spec)) == 0, "file and spec differ:\n%s\n%s",
          second_line(by_file), second_line(by_spec));
    CHECK(strcmp(second_line(by_file), second_line(by_preset)) != 0, "the link file changed "
          "nothing (same as pcie5-8gpu)");
    free(by_file);
    free(by_spec);
    free(by_preset);

    /* the banner shows the file's numbers and source */
    snprintf(cmd, sizeof cmd, "%s run --model %s --link %s --iterations 20 2>&1", specsim, model,
             link);
    CHECK(sh(cmd, &out) == 0 && out && strstr(out, "cli-link.json: alpha 2 us, bw 30 GB/s, "
          "floor 22 us; source: ") && strstr(out, "cli.csv"), "banner: %s", out ? out : "");
    free(out);

    /* refusals exit 2 with the file and field */
    snprintf(cmd, sizeof cmd, "%s run --model %s --link %s/absent.json 2>&1", specsim, model, dir);
    rc = sh(cmd, &out);
    CHECK(rc == 2 && out && strstr(out, "--link") && strstr(out, "absent.json: cannot open"),
          "exit %d: %s", rc, out ? out : "");
    free(out);
    write_file("onesize.csv", CSV_HEADER "4,default,graph,14336,24.1,24,25,0,0,bf16,7168,20,0\n");
    snprintf(cmd, sizeof cmd, "%s fit-allreduce %s/onesize.csv -o %s/x.json 2>&1", specsim, dir,
             dir);
    rc = sh(cmd, &out);
    CHECK(rc == 2 && out && strstr(out, "onesize.csv") && strstr(out, "field bytes: value 14336"),
          "exit %d: %s", rc, out ? out : "");
    free(out);
    snprintf(cmd, sizeof cmd, "%s fit-allreduce %s -o %s/x.json --gpus one 2>&1", specsim, csv,
             dir);
    rc = sh(cmd, &out);
    CHECK(rc == 2 && out && strstr(out, "field --gpus: value \"one\""), "exit %d: %s", rc,
          out ? out : "");
    free(out);
    snprintf(cmd, sizeof cmd, "%s fit-allreduce %s 2>&1", specsim, csv);
    rc = sh(cmd, &out);
    CHECK(rc == 2 && out && strstr(out, "field --out: missing"), "exit %d: %s", rc,
          out ? out : "");
    free(out);
}

int main(int argc, char **argv)
{
    (void)argc;
    specsim_bin_find(argv[0], specsim, sizeof specsim);
    strcpy(dir, "/tmp/specsim-arfit-XXXXXX");
    if (!mkdtemp(dir)) {
        CHECK(0, "mkdtemp failed");
        return check_done();
    }
    RUN(arfit_formula_matches_allreduce_model);
    RUN(arfit_recovers_exact_links);
    RUN(arfit_recovers_noisy_links);
    RUN(arfit_env_picks_the_formula);
    RUN(arfit_selects_one_group);
    RUN(arfit_refuses_bad_input);
    RUN(arfit_json_round_trip);
    RUN(ar_link_load_refuses_bad_files);
    if (!specsim_bin_missing(specsim))
        RUN(arfit_link_file_drives_simulator);
    else
        CHECK(0, "no %s", specsim);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "  could not remove %s\n", dir);
    return check_done();
}
