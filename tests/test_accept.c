/* test_accept: acceptance models against closed forms. Sample means over 200k seeded draws
 * must sit within 5 standard errors of accept_expected (SE from the sample variance; a
 * correct model fails this about once in 1.7 million runs); the chain expectation must equal
 * Leviathan et al.'s (1-a^(g+1))/(1-a) - 1 to 1e-12; histogram frequencies within 5 SE. */
#include "accept.h"
#include "check.h"

#include <gsl/gsl_rng.h>
#include <stdio.h>
#include <string.h>
#include <math.h>

#define NDRAW 200000

static accept_model parse_ok(const char *spec)
{
    accept_model a;
    char err[256] = "";
    int rc = accept_parse(&a, spec, err, sizeof err);
    CHECK(rc == 0, "\"%s\" rejected: %s", spec, err);
    return a;
}

/* Draws NDRAW times and checks the mean against accept_expected within 5 SE. */
static void check_sample_mean(const accept_model *a, int steps, int topk, int dt,
                              unsigned long seed)
{
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, seed);
    double sum = 0, sum2 = 0;
    int lo = 1 << 30, hi = -1;
    for (int i = 0; i < NDRAW; i++) {
        int k = accept_draw(a, steps, topk, dt, r);
        sum += k;
        sum2 += (double)k * k;
        lo = k < lo ? k : lo;
        hi = k > hi ? k : hi;
    }
    gsl_rng_free(r);
    double mean = sum / NDRAW, var = sum2 / NDRAW - mean * mean;
    double se = sqrt((var > 0 ? var : 0) / NDRAW);
    double want = accept_expected(a, steps, topk, dt);
    CHECK(lo >= 0 && hi <= steps, "draws outside 0..%d: %d..%d", steps, lo, hi);
    CHECK(fabs(mean - want) <= 5 * se + 1e-12,
          "%s steps %d topk %d dt %d: sample mean %.5f, expected %.5f, 5 SE = %.5f",
          a->name, steps, topk, dt, mean, want, 5 * se);
}

static void accept_chain_matches_leviathan(void)
{
    const double alphas[] = {0.0, 0.3, 0.6, 0.8, 0.95};
    for (size_t i = 0; i < sizeof alphas / sizeof alphas[0]; i++)
        for (int g = 1; g <= 8; g++) {
            char spec[32];
            snprintf(spec, sizeof spec, "alpha:%g", alphas[i]);
            accept_model a = parse_ok(spec);
            double a_ = alphas[i];
            double tokens = (1 - pow(a_, g + 1)) / (1 - a_); /* Leviathan et al. 2023, eq. 1 */
            CHECK_NEAR(1 + accept_expected(&a, g, 1, g + 1), tokens, 1e-12, 1e-12);
        }
}

static void accept_alpha_sample_mean_matches(void)
{
    accept_model a = parse_ok("alpha:0.7");
    check_sample_mean(&a, 3, 1, 4, 1);
    check_sample_mean(&a, 5, 1, 6, 2);
    accept_model b = parse_ok("0.35"); /* bare number = alpha */
    CHECK(b.kind == ACC_ALPHA && b.alpha == 0.35, "bare number: kind %d alpha %g", b.kind, b.alpha);
    check_sample_mean(&b, 4, 1, 5, 3);
}

static void accept_positional_sample_mean_matches(void)
{
    /* MiniCPM EAGLE-3 (vLLM PR 24243) cumulative 0.58, 0.34, 0.22, 0.15, 0.11 ->
     * conditional 0.58, 0.586, 0.647, 0.682, 0.733 */
    accept_model a = parse_ok("positional:0.58,0.5862,0.6471,0.6818,0.7333");
    CHECK_NEAR(accept_expected(&a, 5, 1, 6), 0.58 + 0.34 + 0.22 + 0.15 + 0.11, 2e-3, 0);
    check_sample_mean(&a, 5, 1, 6, 4);
    /* beyond the list the last value repeats: expected = p1 + p1*p2 + p1*p2*p2 */
    accept_model b = parse_ok("positional:0.9,0.5");
    CHECK_NEAR(accept_expected(&b, 3, 1, 4), 0.9 + 0.45 + 0.225, 1e-12, 0);
    check_sample_mean(&b, 6, 1, 7, 5);
}

static void accept_histogram_frequencies_match(void)
{
    accept_model a = parse_ok("histogram:1,2,3,4"); /* weights of 0,1,2,3 accepted */
    CHECK_NEAR(a.hist[0] + a.hist[1] + a.hist[2] + a.hist[3], 1.0, 1e-12, 0);
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 6);
    long count[4] = {0};
    for (int i = 0; i < NDRAW; i++) {
        int k = accept_draw(&a, 3, 1, 4, r);
        CHECK(k >= 0 && k <= 3, "draw %d", k);
        if (k >= 0 && k <= 3)
            count[k]++;
    }
    for (int k = 0; k < 4; k++) {
        double p = (k + 1) / 10.0, f = (double)count[k] / NDRAW;
        double se = sqrt(p * (1 - p) / NDRAW);
        CHECK(fabs(f - p) <= 5 * se, "P(%d) = %.5f, want %.3f +- %.5f", k, f, p, 5 * se);
    }
    /* steps 2 < 3: mass of 3 folds into 2: P(2) = 0.7 */
    long two = 0;
    for (int i = 0; i < NDRAW; i++) {
        int k = accept_draw(&a, 2, 1, 3, r);
        CHECK(k <= 2, "draw %d above steps 2", k);
        two += k == 2;
    }
    gsl_rng_free(r);
    double se = sqrt(0.7 * 0.3 / NDRAW);
    CHECK(fabs((double)two / NDRAW - 0.7) <= 5 * se, "P(2) with fold = %.5f, want 0.7",
          (double)two / NDRAW);
    CHECK_NEAR(accept_expected(&a, 3, 1, 4), 0.2 + 0.6 + 1.2, 1e-12, 0);
    CHECK_NEAR(accept_expected(&a, 2, 1, 3), 0.2 + 2 * 0.7, 1e-12, 0);
    check_sample_mean(&a, 2, 1, 3, 7);
}

static void accept_tree_widths_spread_budget(void)
{
    int w[ACC_MAX_POS];
    /* SGLang's Llama default (5,4,8): 7 nodes over 5 depths, one kept per later depth */
    int g = accept_tree_widths(5, 4, 8, w);
    CHECK(g == 5 && w[0] == 3 && w[1] == 1 && w[2] == 1 && w[3] == 1 && w[4] == 1,
          "(5,4,8): g %d widths %d %d %d %d %d", g, w[0], w[1], w[2], w[3], w[4]);
    /* (3,4,16): 15 nodes: depth 1 takes topk=4, depth 2 the rest but one */
    g = accept_tree_widths(3, 4, 16, w);
    CHECK(g == 3 && w[0] == 4 && w[1] == 10 && w[2] == 1, "(3,4,16): %d %d %d", w[0], w[1], w[2]);
    /* (3,2,64): capacity-limited: 2, 4, 8 */
    g = accept_tree_widths(3, 2, 64, w);
    CHECK(g == 3 && w[0] == 2 && w[1] == 4 && w[2] == 8, "(3,2,64): %d %d %d", w[0], w[1], w[2]);
    /* budget below the depth: (5,4,3) reaches only 2 depths */
    g = accept_tree_widths(5, 4, 3, w);
    CHECK(g == 2 && w[0] == 1 && w[1] == 1 && w[2] == 0, "(5,4,3): g %d %d %d %d", g, w[0],
          w[1], w[2]);
    /* chain: every width 1; draft_tokens 0 means steps+1 */
    g = accept_tree_widths(4, 1, 0, w);
    CHECK(g == 4 && w[0] == 1 && w[3] == 1, "chain: g %d", g);
    /* sum of widths never exceeds draft_tokens-1; capacity topk*parent respected */
    for (int steps = 1; steps <= 8; steps++)
        for (int topk = 1; topk <= 8; topk++)
            for (int dt = 1; dt <= 64; dt++) {
                int s = 0, prev = 1, all_full = 1;
                g = accept_tree_widths(steps, topk, dt, w);
                for (int d = 0; d < steps; d++) {
                    s += w[d];
                    CHECK(w[d] <= prev * topk, "(%d,%d,%d) depth %d width %d > %d", steps,
                          topk, dt, d + 1, w[d], prev * topk);
                    CHECK(d >= g || w[d] >= 1, "(%d,%d,%d) hole at depth %d", steps, topk, dt,
                          d + 1);
                    all_full &= w[d] == prev * topk;
                    prev = w[d];
                }
                /* the whole budget is spent unless every depth is already full */
                CHECK(s == dt - 1 || (s < dt - 1 && all_full), "(%d,%d,%d) uses %d nodes",
                      steps, topk, dt, s);
                CHECK(g == (dt - 1 < steps ? dt - 1 : steps), "(%d,%d,%d) g %d", steps, topk,
                      dt, g);
            }
}

static void accept_tree_raises_acceptance(void)
{
    accept_model a = parse_ok("alpha:0.6");
    int w[ACC_MAX_POS];
    accept_tree_widths(5, 4, 8, w);
    /* closed form with widths 3,1,1,1,1: q1 = 1-0.4^3, then 0.6 */
    double q1 = 1 - 0.4 * 0.4 * 0.4, want = 0, prod = 1;
    double q[5] = {q1, 0.6, 0.6, 0.6, 0.6};
    for (int d = 0; d < 5; d++) {
        prod *= q[d];
        want += prod;
    }
    CHECK_NEAR(accept_expected(&a, 5, 4, 8), want, 1e-12, 0);
    CHECK(accept_expected(&a, 5, 4, 8) > accept_expected(&a, 5, 1, 6),
          "tree %.4f not above chain %.4f", accept_expected(&a, 5, 4, 8),
          accept_expected(&a, 5, 1, 6));
    CHECK_NEAR(accept_depth_prob(&a, 1, 3), q1, 1e-12, 0);
    check_sample_mean(&a, 5, 4, 8, 8);
    accept_model p = parse_ok("positional:0.7,0.6,0.5");
    check_sample_mean(&p, 3, 4, 16, 9);
    check_sample_mean(&p, 5, 2, 3, 10);
}

static void accept_draw_is_deterministic_per_seed(void)
{
    accept_model a = parse_ok("alpha:0.7");
    gsl_rng *r1 = gsl_rng_alloc(gsl_rng_mt19937), *r2 = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r1, 42);
    gsl_rng_set(r2, 42);
    int same = 1;
    for (int i = 0; i < 10000; i++)
        same &= accept_draw(&a, 5, 4, 8, r1) == accept_draw(&a, 5, 4, 8, r2);
    gsl_rng_free(r1);
    gsl_rng_free(r2);
    CHECK(same, "same seed, different draws");
}

static void accept_rejects_bad_specs(void)
{
    static const struct { const char *spec, *needle; } bad[] = {
        {"", "empty"},
        {"alpha:1", "value 1 "},
        {"alpha:1.5", "value 1.5"},
        {"alpha:-0.1", "value -0.1"},
        {"1.0", "value 1 "},
        {"alpha:abc", "\"abc\""},
        {"alpha:0.5x", "\"0.5x\""},
        {"alpha:nan", "\"nan\""},
        {"alpha:inf", "\"inf\""},
        {"alpha:0.5,0.6", "\"0.6\""},
        {"alpha:", "empty entry"},
        {"beta:0.5", "\"beta\""},
        {"positional:0.8,,0.5", "empty entry"},
        {"positional:0.8,1.2", "value 1.2"},
        {"positional:0.8,0.5,", "empty entry"},
        {"histogram:0,0,0", "all be zero"},
        {"histogram:0.5,-1", "value -1"},
        {"histogram:1e400", "\"1e400\""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        accept_model a;
        char err[256] = "";
        CHECK(accept_parse(&a, bad[i].spec, err, sizeof err) == -1, "\"%s\" accepted",
              bad[i].spec);
        CHECK(strstr(err, bad[i].needle) != NULL, "\"%s\": message \"%s\" lacks \"%s\"",
              bad[i].spec, err, bad[i].needle);
    }
    /* too many values */
    char spec[512] = "positional:";
    for (int i = 0; i <= ACC_MAX_POS; i++)
        strcat(spec, i ? ",0.5" : "0.5");
    accept_model a;
    char err[256] = "";
    CHECK(accept_parse(&a, spec, err, sizeof err) == -1, "%d positional values accepted",
          ACC_MAX_POS + 1);
}

static void accept_format_round_trips(void)
{
    const char *specs[] = {"alpha:0.7", "positional:0.8,0.6,0.5", "histogram:0.1,0.2,0.3,0.4"};
    for (size_t i = 0; i < 3; i++) {
        accept_model a = parse_ok(specs[i]), b;
        char buf[256], err[256];
        accept_format(&a, buf, sizeof buf);
        CHECK(strcmp(buf, specs[i]) == 0, "format \"%s\" -> \"%s\"", specs[i], buf);
        CHECK(accept_parse(&b, buf, err, sizeof err) == 0, "%s", err);
        CHECK(memcmp(&a, &b, sizeof a) == 0, "\"%s\" does not round-trip", specs[i]);
    }
}

/* accept_alpha_for_len inverts the expectation: chain (closed form) and tree, and refuses
 * lengths no alpha below 1 reaches */
static void accept_alpha_for_len_inverts_expected(void)
{
    char err[256];
    double a;
    /* chain, steps 3: (1 - a^4) / (1 - a) = 1 + a + a^2 + a^3 */
    CHECK(accept_alpha_for_len(1 + 0.5 + 0.25 + 0.125, 3, 1, 4, &a, err, sizeof err) == 0, "%s", err);
    CHECK_NEAR(a, 0.5, 1e-9, 0);
    static const struct { int steps, topk, dt; double len; } c[] = {
        {1, 1, 2, 1.3}, {6, 1, 7, 1.8994}, {6, 1, 7, 5.2769}, {5, 4, 8, 3.1}, {3, 2, 6, 1.01},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        CHECK(accept_alpha_for_len(c[i].len, c[i].steps, c[i].topk, c[i].dt, &a, err, sizeof err) == 0,
              "case %zu: %s", i, err);
        accept_model m;
        char spec[64];
        snprintf(spec, sizeof spec, "alpha:%.17g", a);
        CHECK(accept_parse(&m, spec, err, sizeof err) == 0, "%s", err);
        CHECK_NEAR(accept_expected(&m, c[i].steps, c[i].topk, c[i].dt) + 1, c[i].len, 1e-9, 0);
    }
    CHECK(accept_alpha_for_len(1.0, 3, 1, 4, &a, err, sizeof err) == 0 && a < 1e-9, "len 1: alpha %g", a);
    CHECK(accept_alpha_for_len(4.0, 3, 1, 4, &a, err, sizeof err) == -1 && strstr(err, "value 4") &&
          strstr(err, "< 4"), "len 4 at steps 3: %s", err);
    CHECK(accept_alpha_for_len(0.5, 3, 1, 4, &a, err, sizeof err) == -1 && strstr(err, "value 0.5"),
          "len 0.5: %s", err);
    CHECK(accept_alpha_for_len(NAN, 3, 1, 4, &a, err, sizeof err) == -1, "NaN accepted");
}

int main(void)
{
    RUN(accept_chain_matches_leviathan);
    RUN(accept_alpha_sample_mean_matches);
    RUN(accept_positional_sample_mean_matches);
    RUN(accept_histogram_frequencies_match);
    RUN(accept_tree_widths_spread_budget);
    RUN(accept_tree_raises_acceptance);
    RUN(accept_draw_is_deterministic_per_seed);
    RUN(accept_rejects_bad_specs);
    RUN(accept_format_round_trips);
    RUN(accept_alpha_for_len_inverts_expected);
    return check_done();
}
