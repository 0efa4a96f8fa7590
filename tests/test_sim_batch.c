/* test_sim_batch: requests and their draws. The simulator draws accepted lengths by inverse
 * CDF from the distribution the acceptance model defines; it must match accept_draw's
 * empirical distribution and accept_expected's closed form. Output-length specs parse,
 * refuse bad values, and draw what they say. */
#include "check.h"
#include "batch.h"

#include <string.h>

static void batch_accdist_matches_accept_draw(void)
{
    /* 200k draws each: per-k frequencies within 0.006 absolute (the standard error of a
     * frequency is <= 0.0012), mean equal to accept_expected within 1e-9 */
    static const struct { const char *spec; int steps, topk, dt; } cases[] = {
        {"alpha:0.7", 3, 1, 4}, {"alpha:0.0", 2, 1, 3}, {"positional:0.8,0.6,0.4,0.3", 4, 1, 5},
        {"histogram:0.1,0.2,0.3,0.25,0.15", 3, 1, 4}, {"alpha:0.6", 5, 4, 8},
        {"positional:0.58,0.59,0.65", 6, 2, 9},
    };
    gsl_rng *r = gsl_rng_alloc(gsl_rng_taus2);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        accept_model a;
        batch_accdist d;
        char err[256];
        CHECK(accept_parse(&a, cases[c].spec, err, sizeof err) == 0, "%s", err);
        batch_accdist_init(&d, &a, cases[c].steps, cases[c].topk, cases[c].dt);
        CHECK(d.use_draw == 0, "%s: no closed distribution", cases[c].spec);
        double want = accept_expected(&a, cases[c].steps, cases[c].topk, cases[c].dt);
        CHECK_NEAR(batch_accdist_mean(&d), want, 1e-9, 1e-9);
        const int n = 200000;
        long fa[ACC_MAX_POS + 1] = {0}, fb[ACC_MAX_POS + 1] = {0};
        gsl_rng_set(r, 1 + c);
        for (int i = 0; i < n; i++) {
            int k = batch_accdist_draw(&d, r);
            CHECK(k >= 0 && k <= d.g, "draw %d outside 0..%d", k, d.g);
            if (k < 0 || k > d.g)
                break;
            fa[k]++;
            int j = accept_draw(&a, cases[c].steps, cases[c].topk, cases[c].dt, r);
            if (j >= 0 && j <= ACC_MAX_POS)
                fb[j]++;
        }
        for (int k = 0; k <= d.g; k++)
            CHECK_NEAR((double)fa[k] / n, (double)fb[k] / n, 0.006, 0);
    }
    gsl_rng_free(r);
}

static void batch_lendist_parses_and_draws(void)
{
    batch_lendist d;
    char err[256];
    gsl_rng *r = gsl_rng_alloc(gsl_rng_taus2);
    gsl_rng_set(r, 3);
    CHECK(batch_lendist_parse(&d, "256", err, sizeof err) == 0, "%s", err);
    CHECK(batch_lendist_draw(&d, r) == 256, "fixed");
    CHECK(batch_lendist_parse(&d, "uniform:10:20", err, sizeof err) == 0, "%s", err);
    long lo = 1000, hi = 0;
    double sum = 0;
    for (int i = 0; i < 100000; i++) {
        long x = batch_lendist_draw(&d, r);
        lo = x < lo ? x : lo;
        hi = x > hi ? x : hi;
        sum += (double)x;
    }
    CHECK(lo == 10 && hi == 20, "uniform range [%ld, %ld]", lo, hi);
    CHECK_NEAR(sum / 100000, 15, 0.05, 0);
    CHECK(batch_lendist_parse(&d, "exp:300", err, sizeof err) == 0, "%s", err);
    sum = 0;
    for (int i = 0; i < 200000; i++)
        sum += (double)batch_lendist_draw(&d, r);
    CHECK_NEAR(sum / 200000, 300.5, 0, 0.01);   /* ceil adds 0.5 on average */
    static const char *bad[] = {"0", "-3", "uniform:5:2", "uniform:0:4", "exp:0.5", "exp:",
                                "abc", "", "12x", "uniform:3"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        CHECK(batch_lendist_parse(&d, bad[i], err, sizeof err) == -1, "\"%s\" accepted", bad[i]);
        CHECK(strstr(err, bad[i]) != NULL, "message \"%s\" does not name \"%s\"", err, bad[i]);
    }
    gsl_rng_free(r);
}

static void batch_replaces_finished_requests(void)
{
    /* closed loop: the batch stays full; every step emits one token per request (the
     * baseline) and ids keep growing as requests finish */
    batch b;
    batch_lendist d;
    char err[64];
    CHECK(batch_lendist_parse(&d, "5", err, sizeof err) == 0, "%s", err);
    CHECK(batch_init(&b, 4, 0, &d, 100, 0, 1) == 0, "init");
    long emitted = 0;
    for (int it = 1; it <= 20; it++) {
        emitted += batch_step(&b, NULL, it * 1000);
        CHECK(b.n == 4, "batch size %d after step %d", b.n, it);
    }
    CHECK(emitted == 80, "emitted %ld", emitted);
    CHECK(b.finished == 16 && b.started == 20, "finished %ld started %ld", b.finished, b.started);
    /* context: each slot holds a request that has made (20 mod 5 = 0) tokens */
    CHECK_NEAR(b.sum_ctx_tokens, 4 * 100.0, 1e-9, 0);
    batch_free(&b);
    /* finite: 6 requests at concurrency 4: the batch shrinks at the end */
    CHECK(batch_init(&b, 4, 6, &d, 0, 0, 1) == 0, "init");
    int sizes[10], n = 0;
    while (b.n > 0 && n < 10) {
        batch_step(&b, NULL, n);
        sizes[n++] = b.n;
    }
    CHECK(n == 10 && sizes[3] == 4 && sizes[4] == 2 && sizes[8] == 2,
          "%d steps; running after steps 4, 5, 9: %d %d %d", n, sizes[3], sizes[4], sizes[8]);
    CHECK(b.n == 0 && b.finished == 6, "running %d finished %ld", b.n, b.finished);
    batch_free(&b);
}

static void batch_tpot_memory_is_bounded(void)
{
    /* 1-token outputs at 65536 rows: every request finishes each step. 2.5 x BATCH_TPOT_MAX
     * requests finish in the window; all of them are counted and in the mean, at most
     * BATCH_TPOT_MAX TPOTs are kept (every TPOT was kept: ~100 MB a second of a run) */
    batch b;
    batch_lendist d;
    char err[64];
    CHECK(batch_lendist_parse(&d, "1", err, sizeof err) == 0, "%s", err);
    CHECK(batch_init(&b, 65536, 0, &d, 0, 0, 1) == 0, "init");
    batch_open_window(&b, 0);
    long steps = (long)(5 * BATCH_TPOT_MAX / 2 / 65536);
    for (long it = 1; it <= steps; it++)
        batch_step(&b, NULL, it * 1000);
    size_t want = (size_t)steps * 65536;
    CHECK(b.tpot_seen == want, "counted %zu finished requests, want %zu", b.tpot_seen, want);
    CHECK(b.ntpot <= BATCH_TPOT_MAX && b.captpot <= BATCH_TPOT_MAX && b.ntpot >= BATCH_TPOT_MAX / 2,
          "kept %zu TPOTs (room for %zu), cap %zu", b.ntpot, b.captpot, BATCH_TPOT_MAX);
    /* each request lived one step of 1000 ns for its one token: 1e6 tok/s each */
    CHECK_NEAR(b.tpot_rate_sum / (double)b.tpot_seen, 1e6, 0, 1e-12);
    batch_free(&b);
}

int main(void)
{
    RUN(batch_accdist_matches_accept_draw);
    RUN(batch_lendist_parses_and_draws);
    RUN(batch_replaces_finished_requests);
    RUN(batch_tpot_memory_is_bounded);
    return check_done();
}
