/* test_sim_jitter: the straggler shortcut against brute force. A collective waits for the
 * slowest of R ranks; the simulator draws that max directly by inverse CDF (F^R) and sums
 * long runs of them by the central limit theorem. Brute force draws every rank of every
 * collective. Tolerances are stated at each check. */
#include "check.h"
#include "jitter.h"
#include "sim.h"

#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

/* A standard normal truncated at +-JITTER_TRUNC, by rejection (the slow obvious way). */
static double trunc_normal(gsl_rng *r)
{
    for (;;) {
        double z = gsl_ran_gaussian(r, 1.0);
        if (fabs(z) <= JITTER_TRUNC)
            return z;
    }
}

static double brute_max(gsl_rng *r, int R)
{
    double m = -1e300;
    for (int i = 0; i < R; i++) {
        double z = trunc_normal(r);
        if (z > m)
            m = z;
    }
    return m;
}

static void jitter_max_table_matches_brute_force(void)
{
    /* 200k samples: the standard error of a mean is < 0.003; tolerance 0.01 absolute on
     * the mean and 2% on the standard deviation, for the table's moments and for draws */
    static const int Rs[] = {1, 2, 8, 64};
    gsl_rng *r = gsl_rng_alloc(gsl_rng_taus2);
    gsl_rng_set(r, 2024);
    const int n = 200000;
    double *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    for (size_t k = 0; k < sizeof Rs / sizeof Rs[0]; k++) {
        const jitter_table *t = jitter_table_get(Rs[k]);
        CHECK(t && t->ranks == Rs[k], "table for %d ranks", Rs[k]);
        for (int i = 0; i < n; i++) {
            x[i] = brute_max(r, Rs[k]);
            y[i] = jitter_draw(t, r);
        }
        double mb = gsl_stats_mean(x, 1, n), sb = gsl_stats_sd(x, 1, n);
        double md = gsl_stats_mean(y, 1, n), sd = gsl_stats_sd(y, 1, n);
        CHECK_NEAR(t->mean, mb, 0.01, 0);
        CHECK_NEAR(t->sd, sb, 0, 0.02);
        CHECK_NEAR(md, mb, 0.01, 0);
        CHECK_NEAR(sd, sb, 0, 0.02);
        gsl_sort(x, 1, n);
        gsl_sort(y, 1, n);
        /* the tail a p99 sees: 99th percentile within 0.02 */
        CHECK_NEAR(gsl_stats_quantile_from_sorted_data(y, 1, n, 0.99),
                   gsl_stats_quantile_from_sorted_data(x, 1, n, 0.99), 0.02, 0);
    }
    CHECK_NEAR(jitter_trunc_sd(), jitter_table_get(1)->sd, 1e-4, 0);
    CHECK(jitter_table_get(0) == NULL, "0 ranks must be refused");
    free(x);
    free(y);
    gsl_rng_free(r);
}

static void jitter_sum_matches_brute_force(void)
{
    /* sums of K stragglers (R = 8): K <= JITTER_EXACT_MAX is exact (K draws), larger K uses
     * the normal approximation. 50k samples: mean within 0.5%, sd within 3%, 1st and 99th
     * percentiles within 3% of the mean (the normal misses the skew of the max, a little) */
    static const int Ks[] = {3, 8, 9, 30, 64};
    const int R = 8, n = 50000;
    gsl_rng *r = gsl_rng_alloc(gsl_rng_taus2);
    gsl_rng_set(r, 99);
    const jitter_table *t = jitter_table_get(R), *u = jitter_table_get(1);
    double *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    for (size_t k = 0; k < sizeof Ks / sizeof Ks[0]; k++) {
        int K = Ks[k];
        for (int i = 0; i < n; i++) {
            double s = 0;
            for (int j = 0; j < K; j++)
                s += brute_max(r, R);
            x[i] = s;
            y[i] = jitter_sum(t, u, K, r);
        }
        double mb = gsl_stats_mean(x, 1, n), sb = gsl_stats_sd(x, 1, n);
        CHECK_NEAR(gsl_stats_mean(y, 1, n), mb, 0, 0.005);
        CHECK_NEAR(gsl_stats_sd(y, 1, n), sb, 0, 0.03);
        gsl_sort(x, 1, n);
        gsl_sort(y, 1, n);
        CHECK_NEAR(gsl_stats_quantile_from_sorted_data(y, 1, n, 0.99),
                   gsl_stats_quantile_from_sorted_data(x, 1, n, 0.99), 0.03 * mb, 0);
        CHECK_NEAR(gsl_stats_quantile_from_sorted_data(y, 1, n, 0.01),
                   gsl_stats_quantile_from_sorted_data(x, 1, n, 0.01), 0.03 * mb, 0);
    }
    free(x);
    free(y);
    gsl_rng_free(r);
}

/* One decode phase with N all-reduces and jitter, nothing else costs anything: the
 * baseline's iteration is that phase. */
static void model_one_phase(wm_model *m, double W, int N, double sd)
{
    wm_init(m);
    strcpy(m->name, "one-phase");
    m->ranks = 8;
    for (int p = 0; p < WM_NPHASE; p++) {
        wm_phase_model *ph = &m->phase[p];
        ph->present = 1;
        ph->ngroups = 1;
        strcpy(ph->groups[0].name, "g");
        ph->groups[0].count = 1;
    }
    wm_phase_model *d = &m->phase[WM_DECODE];
    d->groups[0].base_us = W;
    d->groups[0].sd_frac = sd;
    d->ncolls = 1;
    strcpy(d->colls[0].op, "allreduce");
    d->colls[0].count = N;
    d->colls[0].bytes_per_token = 14336;
}

static void sim_segments_match_per_collective_brute_force(void)
{
    /* brute force: t = 0; for each of N collectives: t = max_r(t + c*(1 + sd*z_r)) + ar.
     * The simulator, with S = 1, 4 and N segments, must give the same mean phase time
     * within 0.2%, and its straggler part (time beyond W + N*ar) within 2% (20k phases: the
     * standard errors are ~0.002% and ~0.1%). */
    const int R = 8, N = 64, iters = 20000;
    const double W = 640, sd = 0.05, c = W / N;
    wm_model m;
    model_one_phase(&m, W, N, sd);
    const ar_algo *algo = ar_algo_find("nccl");
    const ar_link *link = ar_link_preset("pcie5-8gpu");
    double ar = ar_time_us(algo, link, 14336.0 * 1, R);   /* one request: 1 token */
    gsl_rng *r = gsl_rng_alloc(gsl_rng_taus2);
    gsl_rng_set(r, 5);
    double sum = 0;
    for (int it = 0; it < iters; it++) {
        double t = 0;
        for (int k = 0; k < N; k++) {
            double arr = -1e300;
            for (int q = 0; q < R; q++) {
                double a = t + c * (1 + sd * trunc_normal(r));
                if (a > arr)
                    arr = a;
            }
            t = arr + ar;
        }
        sum += t;
    }
    double want = sum / iters;
    static const int segs[] = {1, 4, 64};
    for (size_t i = 0; i < sizeof segs / sizeof segs[0]; i++) {
        sim_params p;
        sim_result res;
        char err[512];
        memset(&p, 0, sizeof p);
        p.model = &m;
        CHECK(accept_parse(&p.acc, "alpha:0.5", err, sizeof err) == 0, "%s", err);
        CHECK(cg_parse(&p.graphs, "1", err, sizeof err) == 0, "%s", err);
        CHECK(batch_lendist_parse(&p.out_len, "100000000", err, sizeof err) == 0, "%s", err);
        p.algo = algo;
        p.link = *link;
        p.spec = 0;
        p.concurrency = 1;
        p.iterations = iters;
        p.ranks = R;
        p.jitter_scale = 1;
        p.sync_segments = segs[i];
        p.seed = 77;
        CHECK(sim_run(&p, NULL, &res, err, sizeof err) == 0, "%s", err);
        CHECK_NEAR(res.iter_us, want, 0, 0.002);
        if (getenv("SIM_TEST_VERBOSE"))
            fprintf(stderr, "  segments %d: %.4f us, brute force %.4f us\n", segs[i], res.iter_us, want);
        /* the breakdown sees the same: compute W, comm N*ar, the rest is waiting */
        CHECK_NEAR(res.phase_us[WM_DECODE], W, 1e-6, 1e-9);
        CHECK_NEAR(res.comm_us, N * ar, 1e-6, 1e-9);
        CHECK_NEAR(res.wait_us, want - W - N * ar, 0, 0.02);   /* the jitter part alone: 2% */
    }
    /* no jitter: exactly W + N*ar */
    {
        sim_params p;
        sim_result res;
        char err[512];
        memset(&p, 0, sizeof p);
        p.model = &m;
        accept_parse(&p.acc, "alpha:0.5", err, sizeof err);
        cg_parse(&p.graphs, "1", err, sizeof err);
        batch_lendist_parse(&p.out_len, "100000000", err, sizeof err);
        p.algo = algo;
        p.link = *link;
        p.concurrency = 1;
        p.iterations = 100;
        p.ranks = R;
        p.sync_segments = 4;
        CHECK(sim_run(&p, NULL, &res, err, sizeof err) == 0, "%s", err);
        CHECK_NEAR(res.iter_us, W + N * ar, 0.001 * N, 0);
    }
    gsl_rng_free(r);
}

int main(void)
{
    RUN(jitter_max_table_matches_brute_force);
    RUN(jitter_sum_matches_brute_force);
    RUN(sim_segments_match_per_collective_brute_force);
    return check_done();
}
