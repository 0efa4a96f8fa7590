/* test_wmodel: the workload model file. The example loads and round-trips through wm_save
 * field by field; every bad fixture in tests/data/bad-models/ is rejected with a message
 * naming the file, the field and the value; cost functions match their formulas (1e-12
 * relative) and the MoE expert count matches a seeded Monte Carlo within 5 SE. */
#include "wmodel.h"
#include "check.h"

#include <gsl/gsl_rng.h>
#include <string.h>
#include <unistd.h>

#define EXAMPLE "models/example-llama8b.json"
#define BAD "tests/data/bad-models/"

static void wmodel_example_loads(void)
{
    wm_model m;
    char err[512] = "";
    int rc = wm_load(&m, EXAMPLE, err, sizeof err);
    CHECK(rc == 0, "%s", err);
    if (rc)
        return;
    CHECK(strcmp(m.name, "llama3.1-8b-eagle3-h200-tp1-example") == 0, "name %s", m.name);
    CHECK(m.ranks == 1 && m.moe_experts == 0, "ranks %d experts %d", m.ranks, m.moe_experts);
    for (int p = 0; p < WM_NPHASE; p++)
        CHECK(m.phase[p].present && m.phase[p].ngroups > 0, "phase %s absent", wm_phase_name[p]);
    /* the GEMM bases are the weight bytes over 4.3 TB/s (docs/model-format.md):
     * 2 B * (32 layers * 218,103,808 + 525,336,576 LM head) / 4.3e12 B/s = 3490.54 us */
    const wm_phase_model *v = &m.phase[WM_VERIFY];
    double gemm_base = 0;
    for (int i = 0; i < v->ngroups; i++)
        if (strstr(v->groups[i].name, "gemm"))
            gemm_base += v->groups[i].base_us;
    CHECK_NEAR(gemm_base, 2.0 * (32 * 218103808.0 + 525336576.0) / 4.3e12 * 1e6, 0.05, 0);
}

/* Compares two models field by field; reports the first difference. */
static void check_same_model(const wm_model *a, const wm_model *b)
{
    CHECK(strcmp(a->name, b->name) == 0 && strcmp(a->source, b->source) == 0 &&
          strcmp(a->device, b->device) == 0, "strings differ");
    CHECK(a->ranks == b->ranks && a->moe_experts == b->moe_experts && a->moe_topk == b->moe_topk,
          "ranks/moe differ");
    CHECK(a->graph_launch_us == b->graph_launch_us && a->eager_launch_us == b->eager_launch_us,
          "launch differs");
    CHECK(a->unc.memory_frac == b->unc.memory_frac && a->unc.compute_frac == b->unc.compute_frac &&
          a->unc.latency_frac == b->unc.latency_frac && strcmp(a->unc.source, b->unc.source) == 0,
          "uncertainty differs");
    for (int p = 0; p < WM_NPHASE; p++) {
        const wm_phase_model *x = &a->phase[p], *y = &b->phase[p];
        CHECK(x->present == y->present && x->ngroups == y->ngroups && x->ncolls == y->ncolls &&
              x->host_gap_us == y->host_gap_us && x->host_gap_sd_us == y->host_gap_sd_us &&
              x->fitted_tokens_max == y->fitted_tokens_max && x->fitted_q_max == y->fitted_q_max &&
              x->fitted_kv_row_max == y->fitted_kv_row_max &&
              x->host_gap_per_row_us == y->host_gap_per_row_us &&
              x->eager_launch_us == y->eager_launch_us,
              "phase %s header differs", wm_phase_name[p]);
        for (int i = 0; i < x->ngroups && i < y->ngroups; i++) {
            const wm_group *g = &x->groups[i], *h = &y->groups[i];
            CHECK(strcmp(g->name, h->name) == 0 && g->count == h->count &&
                  g->base_us == h->base_us && g->per_token_us == h->per_token_us &&
                  g->knee_tokens == h->knee_tokens && g->per_expert_us == h->per_expert_us &&
                  g->per_kv_ktoken_us == h->per_kv_ktoken_us && g->sd_frac == h->sd_frac &&
                  g->per_kvq_ktoken_us == h->per_kvq_ktoken_us && g->q_tile == h->q_tile &&
                  g->per_kvq2_ktoken_us == h->per_kvq2_ktoken_us &&
                  g->q_tile_knee == h->q_tile_knee &&
                  g->per_token_all_us == h->per_token_all_us &&
                  g->wave_blocks0 == h->wave_blocks0 &&
                  g->wave_blocks_per_token == h->wave_blocks_per_token &&
                  g->wave_blocks_per_expert == h->wave_blocks_per_expert &&
                  g->wave_blocks_max == h->wave_blocks_max &&
                  g->wave_capacity == h->wave_capacity && g->per_wave_us == h->per_wave_us &&
                  g->q_min == h->q_min &&
                  g->resid_frac == h->resid_frac && g->resid_abs_us == h->resid_abs_us &&
                  g->latency_bound == h->latency_bound,
                  "phase %s group %d (%s) differs", wm_phase_name[p], i, g->name);
        }
        for (int i = 0; i < x->ncolls && i < y->ncolls; i++)
            CHECK(strcmp(x->colls[i].op, y->colls[i].op) == 0 &&
                  x->colls[i].count == y->colls[i].count &&
                  x->colls[i].bytes_per_token == y->colls[i].bytes_per_token,
                  "phase %s collective %d differs", wm_phase_name[p], i);
    }
}

static void wmodel_save_round_trips(void)
{
    wm_model a, b;
    char err[512] = "", path[64];
    snprintf(path, sizeof path, "/tmp/specsim-test-wmodel-%d.json", (int)getpid());
    CHECK(wm_load(&a, EXAMPLE, err, sizeof err) == 0, "%s", err);
    CHECK(wm_save(&a, path, err, sizeof err) == 0, "%s", err);
    CHECK(wm_load(&b, path, err, sizeof err) == 0, "%s", err);
    check_same_model(&a, &b);

    /* a model built in code with awkward numbers and collectives survives too */
    wm_init(&a);
    snprintf(a.name, sizeof a.name, "built");
    a.ranks = 8;
    a.moe_experts = 384;
    a.moe_topk = 8;
    a.graph_launch_us = 1.0 / 3.0;
    for (int p = 0; p < WM_NPHASE; p += 2) { /* draft, accept, decode */
        wm_phase_model *ph = &a.phase[p];
        ph->present = 1;
        ph->ngroups = 2;
        ph->host_gap_us = 0.1 + p;
        for (int i = 0; i < 2; i++) {
            snprintf(ph->groups[i].name, sizeof ph->groups[i].name, "g%d", i);
            ph->groups[i].count = 1 + i;
            ph->groups[i].base_us = 1e-7 + i * 12345.678901234567;
            ph->groups[i].per_expert_us = 0.1 * (i + 1);
        }
        ph->fitted_tokens_max = 480;   /* the range fitted */
        ph->host_gap_per_row_us = 1.0 / 3.0;   /* the host terms of issue 13 */
        ph->eager_launch_us = 15.5;
        ph->groups[1].q_min = 3;
        ph->fitted_q_max = 6;
        ph->fitted_kv_row_max = 1280;
        ph->groups[1].per_kvq_ktoken_us = 2.0 / 3.0;   /* the optional keys of a group */
        ph->groups[1].q_tile = 4;
        ph->groups[1].per_kvq2_ktoken_us = 1.0 / 3.0;
        ph->groups[1].q_tile_knee = 2;
        ph->groups[1].per_token_all_us = 0.125;
        ph->groups[1].wave_blocks0 = 1.0 / 7.0;   /* the wave term's keys */
        ph->groups[1].wave_blocks_per_token = 256;
        ph->groups[1].wave_blocks_per_expert = 32;
        ph->groups[1].wave_blocks_max = 12288;
        ph->groups[1].wave_capacity = 660;
        ph->groups[1].per_wave_us = 97.25;
        ph->groups[1].resid_frac = 1.0 / 29.0;   /* the interval keys */
        ph->groups[1].resid_abs_us = 76.015625;
        ph->groups[0].latency_bound = 1;
        ph->ncolls = 1;
        snprintf(ph->colls[0].op, sizeof ph->colls[0].op, "allreduce");
        ph->colls[0].count = 122;
        ph->colls[0].bytes_per_token = 7168 * 2;
    }
    a.phase[WM_VERIFY] = a.phase[WM_DECODE];
    a.unc.memory_frac = 0.1;
    a.unc.compute_frac = 1.0 / 7.0;
    a.unc.latency_frac = 0.5;
    snprintf(a.unc.source, sizeof a.unc.source, "carried a -> b");
    CHECK(wm_save(&a, path, err, sizeof err) == 0, "%s", err);
    CHECK(wm_load(&b, path, err, sizeof err) == 0, "%s", err);
    check_same_model(&a, &b);
    remove(path);
    CHECK(wm_save(&a, "/nonexistent-dir/x.json", err, sizeof err) == -1, "save into a missing dir");
    CHECK(strstr(err, "/nonexistent-dir/x.json") != NULL, "message \"%s\"", err);
}

static void wmodel_rejects_bad_files(void)
{
    static const struct { const char *file; const char *needles[3]; } bad[] = {
        {"truncated.json", {"invalid JSON at byte ", "ends early"}},
        {"missing-verify.json", {"field phases.verify: missing"}},
        {"missing-base.json", {"field phases.verify.groups[1].base_us: missing"}},
        {"negative.json", {"field phases.verify.groups[2].base_us: value -3: out of range", "[0, 10000000] us"}},
        {"string-number.json", {"field phases.verify.groups[0].per_token_us: value \"NaN\"",
                                "must be a number"}},
        {"unknown-phase.json", {"field phases.verfy", "unknown phase"}},
        {"unknown-key.json", {"field phases.accept.groups[0].bse_us: value 3", "unknown field"}},
        {"bad-version.json", {"field specsim_model: value 2"}},
        {"count-zero.json", {"field phases.verify.groups[1].count: value 0: out of range", "[1, 100000]"}},
        {"count-fraction.json", {"field phases.verify.groups[1].count: value 2.5", "whole number"}},
        {"trailing-garbage.json", {"invalid JSON at byte ", "syntax error"}},
        {"empty.json", {"empty"}},
        {"huge-number.json", {"field phases.verify.groups[0].base_us: value inf", "out of range"}},
        {"moe-topk.json", {"field moe.topk: value 9"}},
        {"not-object.json", {"one JSON object"}},
        {"negative-bytes.json", {"field phases.verify.collectives[0].bytes_per_token: value -8192"}},
        {"unknown-collective.json", {"field phases.verify.collectives[0].op: value \"alltoall\""}},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char path[256], err[512] = "";
        wm_model m;
        snprintf(path, sizeof path, BAD "%s", bad[i].file);
        int rc = wm_load(&m, path, err, sizeof err);
        CHECK(rc == -1, "%s accepted", path);
        CHECK(strncmp(err, path, strlen(path)) == 0 && err[strlen(path)] == ':',
              "%s: message does not start with the file: \"%s\"", bad[i].file, err);
        for (int k = 0; k < 3 && bad[i].needles[k]; k++)
            CHECK(strstr(err, bad[i].needles[k]) != NULL, "%s: message \"%s\" lacks \"%s\"",
                  bad[i].file, err, bad[i].needles[k]);
        CHECK(m.phase[WM_VERIFY].present == 0, "%s: half-filled model left behind", bad[i].file);
    }
    char err[512];
    wm_model m;
    /* the interval keys: typed and known */
    static const struct { const char *text, *needle; } inl[] = {
        {"{\"specsim_model\": 1, \"name\": \"x\", \"phases\": {\"verify\": {\"groups\": "
         "[{\"name\": \"g\", \"count\": 1, \"base_us\": 1, \"latency_bound\": 1}]}}}",
         "field phases.verify.groups[0].latency_bound: value 1: must be true or false"},
        {"{\"specsim_model\": 1, \"name\": \"x\", \"phases\": {\"verify\": {\"groups\": "
         "[{\"name\": \"g\", \"count\": 1, \"base_us\": 1, \"resid_frac\": -0.1}]}}}",
         "field phases.verify.groups[0].resid_frac: value -0.1: out of range"},
        {"{\"specsim_model\": 1, \"name\": \"x\", \"phases\": {\"verify\": {\"groups\": "
         "[{\"name\": \"g\", \"count\": 1, \"base_us\": 1, \"resid_abs_us\": -3}]}}}",
         "field phases.verify.groups[0].resid_abs_us: value -3: out of range"},
        {"{\"specsim_model\": 1, \"name\": \"x\", \"uncertainty\": {\"memory\": 0.1}, "
         "\"phases\": {\"verify\": {\"groups\": []}}}", "field uncertainty.memory"},
    };
    for (size_t i = 0; i < sizeof inl / sizeof inl[0]; i++) {
        CHECK(wm_parse(&m, inl[i].text, "mem.json", err, sizeof err) == -1, "case %zu accepted", i);
        CHECK(strstr(err, inl[i].needle) != NULL, "message \"%s\" lacks \"%s\"", err, inl[i].needle);
    }
    CHECK(wm_load(&m, BAD "does-not-exist.json", err, sizeof err) == -1, "missing file loaded");
    CHECK(strstr(err, "does-not-exist.json: cannot open") != NULL, "message \"%s\"", err);
}

static void wmodel_truncation_offset_is_exact(void)
{
    const char *text = "{\"specsim_model\": 1, \"name\": \"x\", \"phases\": {\"verify\": {";
    char err[512], want[64];
    wm_model m;
    CHECK(wm_parse(&m, text, "mem.json", err, sizeof err) == -1, "truncated text accepted");
    snprintf(want, sizeof want, "at byte %zu ", strlen(text));
    CHECK(strstr(err, "mem.json: invalid JSON") && strstr(err, want), "message \"%s\" lacks \"%s\"",
          err, want);
    const char *bad = "{\"specsim_model\": 1,\n \"name\": x}";
    CHECK(wm_parse(&m, bad, "mem.json", err, sizeof err) == -1, "bare word accepted");
    CHECK(strstr(err, "(line 2, column 10)") != NULL, "message \"%s\"", err);
}

static void wmodel_accepts_minimal_and_comments(void)
{
    const char *text =
        "{\"specsim_model\": 1, \"name\": \"min\", \"_note\": \"comments start with _\",\n"
        " \"phases\": {\"_c\": 1, \"verify\": {\"groups\": [{\"name\": \"g\", \"count\": 3,"
        " \"base_us\": 10, \"_why\": \"x\"}]},\n"
        " \"accept\": {\"groups\": []}}}";
    wm_model m;
    char err[512] = "";
    CHECK(wm_parse(&m, text, "min.json", err, sizeof err) == 0, "%s", err);
    CHECK(m.ranks == 1 && m.phase[WM_VERIFY].ngroups == 1 && m.phase[WM_ACCEPT].ngroups == 0 &&
          !m.phase[WM_DRAFT].present, "defaults wrong");
    CHECK(wm_phase_kernels(&m, WM_VERIFY) == 3, "kernels %d", wm_phase_kernels(&m, WM_VERIFY));
}

static void wmodel_costs_follow_formula(void)
{
    wm_model m;
    wm_init(&m);
    m.moe_experts = 64;
    m.moe_topk = 4;
    wm_group g = {.name = "g", .count = 2, .base_us = 100.0, .per_token_us = 0.5,
                  .knee_tokens = 64.0, .per_expert_us = 3.0, .per_kv_ktoken_us = 20.0};
    for (double t = 0; t <= 512; t += 7) {
        double e = 64 * (1 - pow(1 - 4.0 / 64, t));
        double want = 100 + 0.5 * (t > 64 ? t - 64 : 0) + 3.0 * e + 20.0 * 2500 / 1000;
        CHECK_NEAR(wm_group_us(&m, &g, t, 2500), want, 0, 1e-12);
    }
    m.moe_experts = 0;
    m.moe_topk = 0;
    CHECK(wm_experts_touched(&m, 100) == 0, "dense model touches experts");
    CHECK_NEAR(wm_group_us(&m, &g, 10, 0), 100, 0, 1e-12);
}

/* The attention-tile and all-token terms: per_kvq_ktoken_us * kv/1000 * ceil(q / q_tile)
 * (q per token when q_tile <= 1) and per_token_all_us * tokens; wm_group_us is q = 1; a
 * file without the keys prices as before. */
static void wmodel_tile_and_token_terms_follow_formula(void)
{
    wm_model m;
    wm_init(&m);
    wm_group g = {.name = "attn", .count = 32, .base_us = 10.0, .per_kv_ktoken_us = 20.0,
                  .per_kvq_ktoken_us = 60.0, .q_tile = 4, .per_token_all_us = 0.5};
    for (int q = 1; q <= 9; q++) {
        double tiles = q <= 4 ? 1 : q <= 8 ? 2 : 3;
        double want = 10 + 0.5 * 8 * q + (20.0 + 60.0 * tiles) * 3000 / 1000;
        CHECK_NEAR(wm_group_us_q(&m, &g, 8.0 * q, 3000, q), want, 0, 1e-12);
        CHECK_NEAR(wm_q_tiles(&g, q), tiles, 0, 0);
    }
    /* past the tile knee each tile costs per_kvq + per_kvq2 */
    g.per_kvq2_ktoken_us = 100.0;
    g.q_tile_knee = 2;
    for (int q = 1; q <= 16; q++) {
        double tiles = ceil(q / 4.0), extra = tiles > 2 ? 100.0 * (tiles - 2) : 0;
        double want = 10 + 0.5 * 8 * q + (20.0 + 60.0 * tiles + extra) * 3000 / 1000;
        CHECK_NEAR(wm_group_us_q(&m, &g, 8.0 * q, 3000, q), want, 0, 1e-12);
    }
    g.per_kvq2_ktoken_us = g.q_tile_knee = 0;
    /* what the phase was fitted from, and a question past it */
    char msg[160] = "";
    m.phase[WM_VERIFY].present = 1;
    m.phase[WM_VERIFY].fitted_tokens_max = 480;
    m.phase[WM_VERIFY].fitted_q_max = 6;
    CHECK(!wm_beyond_fit(&m, WM_VERIFY, 480, 6, msg, sizeof msg), "at the edge: %s", msg);
    CHECK(wm_beyond_fit(&m, WM_VERIFY, 560, 7, msg, sizeof msg) &&
          strcmp(msg, "7 query tokens per row and 560 tokens a forward, fitted up to 6 and 480") == 0,
          "both: %s", msg);
    CHECK(wm_beyond_fit(&m, WM_VERIFY, 720, 6, msg, sizeof msg) &&
          strcmp(msg, "720 tokens a forward, fitted up to 480") == 0, "tokens: %s", msg);
    m.phase[WM_VERIFY].fitted_tokens_max = m.phase[WM_VERIFY].fitted_q_max = 0;
    CHECK(!wm_beyond_fit(&m, WM_VERIFY, 1e6, 100, msg, sizeof msg), "unknown range: %s", msg);
    /* the KV context: past twice the longest a request held, in a phase with a KV term */
    m.phase[WM_VERIFY].fitted_kv_row_max = 1280;
    m.phase[WM_VERIFY].ngroups = 1;
    m.phase[WM_VERIFY].groups[0] = g;
    CHECK(!wm_beyond_kv(&m, WM_VERIFY, 2560) && wm_beyond_kv(&m, WM_VERIFY, 2561), "kv past 2x");
    m.phase[WM_VERIFY].groups[0].per_kv_ktoken_us = m.phase[WM_VERIFY].groups[0].per_kvq_ktoken_us = 0;
    m.phase[WM_VERIFY].groups[0].per_kvq2_ktoken_us = 0;
    CHECK(!wm_beyond_kv(&m, WM_VERIFY, 1e6), "a phase without a KV term");
    m.phase[WM_VERIFY].groups[0] = g;
    m.phase[WM_VERIFY].fitted_kv_row_max = 0;
    CHECK(!wm_beyond_kv(&m, WM_VERIFY, 1e6), "unknown KV range");
    m.phase[WM_VERIFY].ngroups = 0;
    g.q_tile = 0;   /* per query token */
    CHECK_NEAR(wm_group_us_q(&m, &g, 30, 1000, 3), 10 + 0.5 * 30 + 20 + 60 * 3, 0, 1e-12);
    CHECK_NEAR(wm_group_us(&m, &g, 30, 1000), 10 + 0.5 * 30 + 20 + 60, 0, 1e-12);
    /* a file without the keys reads them as 0 */
    char err[512] = "";
    const char *js = "{\"specsim_model\": 1, \"name\": \"t\", \"phases\": {\"verify\": "
                     "{\"groups\": [{\"name\": \"g\", \"count\": 1, \"base_us\": 5, "
                     "\"per_kvq_ktoken_us\": 2, \"q_tile\": 4, \"per_token_all_us\": 0.5}]}, "
                     "\"accept\": {\"groups\": [{\"name\": \"a\", \"count\": 1, "
                     "\"base_us\": 1}]}}}";
    CHECK(wm_parse(&m, js, "t.json", err, sizeof err) == 0, "%s", err);
    const wm_group *v = &m.phase[WM_VERIFY].groups[0], *a = &m.phase[WM_ACCEPT].groups[0];
    CHECK(v->per_kvq_ktoken_us == 2 && v->q_tile == 4 && v->per_token_all_us == 0.5,
          "keys read %g %g %g", v->per_kvq_ktoken_us, v->q_tile, v->per_token_all_us);
    CHECK(a->per_kvq_ktoken_us == 0 && a->q_tile == 0 && a->per_token_all_us == 0 &&
          a->per_kvq2_ktoken_us == 0 && a->q_tile_knee == 0 && a->q_min == 0 &&
          m.phase[WM_VERIFY].host_gap_per_row_us == 0 && m.phase[WM_VERIFY].eager_launch_us == 0,
          "defaults");
    CHECK_NEAR(wm_group_us_q(&m, v, 12, 2000, 6), 5 + 0.5 * 12 + 2 * 2 * 2, 0, 1e-12);
    /* q_min: below the fewest query tokens the group was fitted at, a row is priced at q_min's
     * tiles (q_tile 4: q 2 would be 1 tile, q_min 5 makes it 2); above it, as before */
    m.phase[WM_VERIFY].groups[0].q_min = 5;
    CHECK_NEAR(wm_group_us_q(&m, v, 12, 2000, 2), 5 + 0.5 * 12 + 2 * 2 * 2, 0, 1e-12);
    CHECK_NEAR(wm_group_us_q(&m, v, 12, 2000, 9), 5 + 0.5 * 12 + 2 * 2 * 3, 0, 1e-12);
    m.phase[WM_VERIFY].groups[0].q_min = 0;
    CHECK_NEAR(wm_group_us_q(&m, v, 12, 2000, 2), 5 + 0.5 * 12 + 2 * 2 * 1, 0, 1e-12);
    const char *neg = "{\"specsim_model\": 1, \"name\": \"t\", \"phases\": {\"verify\": "
                      "{\"groups\": [{\"name\": \"g\", \"count\": 1, \"base_us\": 5, "
                      "\"q_tile\": -1}]}, \"accept\": {\"groups\": []}}}";
    CHECK(wm_parse(&m, neg, "t.json", err, sizeof err) != 0 && strstr(err, "q_tile") != NULL,
          "negative q_tile accepted: %s", err);
}

/* The wave term: kimi-tp8's k_moe_gemm<4> launches 32 x 8 blocks per token, 660 fit at once
 * (5 per SM x 132 SMs): 2 tokens = 512 blocks = 1 wave, 3 = 768 = 2, 6 = 1536 = 3; capped
 * at wave_blocks_max; per distinct expert touched (32 per expert, E 384, top-8): 2 tokens
 * touch 15.84 experts = 507 blocks, 1 wave; 3 touch 23.3 = 746, 2 waves. The cost adds
 * per_wave_us per wave; a file without the keys has no term and wm_save writes none. */
static void wmodel_wave_term_follows_formula(void)
{
    wm_model m;
    wm_init(&m);
    wm_group g = {.name = "gemm", .count = 11, .base_us = 50, .per_token_all_us = 1,
                  .wave_blocks_per_token = 256, .wave_capacity = 660, .per_wave_us = 100};
    const double want[] = {0, 1, 1, 2, 2, 2, 3, 3};
    for (int t = 1; t <= 7; t++) {
        CHECK_NEAR(wm_waves(&m, &g, t, 1), want[t], 0, 0);
        CHECK_NEAR(wm_group_us(&m, &g, t, 5000), 50 + t + 100 * want[t], 0, 1e-12);
    }
    g.wave_blocks_max = 12288;
    CHECK_NEAR(wm_waves(&m, &g, 1000, 1), 19, 0, 0);   /* 12288 / 660 = 18.6 */
    g.wave_blocks_max = 0;
    CHECK_NEAR(wm_waves(&m, &g, 1000, 1), ceil(256000.0 / 660), 0, 0);
    g.wave_blocks_per_token = 0;
    g.wave_blocks_per_expert = 32;
    m.moe_experts = 384;
    m.moe_topk = 8;
    CHECK_NEAR(wm_waves(&m, &g, 2, 1), 1, 0, 0);
    CHECK_NEAR(wm_waves(&m, &g, 3, 1), 2, 0, 0);
    CHECK_NEAR(wm_waves(&m, &g, 1e6, 1), 19, 0, 0);    /* all 384 experts: 12288 blocks */
    CHECK_NEAR(wm_waves_e(&g, 3, 10), 1, 0, 0);     /* 320 blocks */
    g.wave_capacity = 0;
    CHECK_NEAR(wm_waves(&m, &g, 3, 1), 0, 0, 0);
    CHECK_NEAR(wm_group_us(&m, &g, 3, 0), 53, 0, 1e-12);
    /* the keys in a file, defaults and refusals */
    char err[512] = "";
    const char *js = "{\"specsim_model\": 1, \"name\": \"t\", \"phases\": {\"verify\": "
                     "{\"groups\": [{\"name\": \"g\", \"count\": 1, \"base_us\": 5, "
                     "\"wave_blocks0\": 4, \"wave_blocks_per_token\": 256, "
                     "\"wave_capacity\": 660, \"per_wave_us\": 90}]}, "
                     "\"accept\": {\"groups\": [{\"name\": \"a\", \"count\": 1, "
                     "\"base_us\": 1}]}}}";
    wm_model f;
    CHECK(wm_parse(&f, js, "t.json", err, sizeof err) == 0, "%s", err);
    const wm_group *v = &f.phase[WM_VERIFY].groups[0], *a = &f.phase[WM_ACCEPT].groups[0];
    CHECK_NEAR(wm_group_us(&f, v, 3, 0), 5 + 90 * 2, 0, 1e-12);   /* 772 blocks */
    CHECK_NEAR(wm_group_us(&f, v, 2, 0), 5 + 90 * 1, 0, 1e-12);   /* 516 */
    CHECK(a->wave_capacity == 0 && a->per_wave_us == 0 && a->wave_blocks_per_expert == 0 &&
          a->wave_blocks_max == 0, "defaults");
    char path[64];
    snprintf(path, sizeof path, "/tmp/specsim-test-wave-%d.json", (int)getpid());
    CHECK(wm_save(&f, path, err, sizeof err) == 0, "%s", err);
    FILE *fp = fopen(path, "r");
    char text[8192] = "";
    size_t got = fp ? fread(text, 1, sizeof text - 1, fp) : 0;
    text[got] = 0;
    if (fp)
        fclose(fp);
    remove(path);
    /* one group has the term (4 keys), the other none; no per-expert or max key at 0 */
    int nkeys = 0;
    for (const char *q = text; (q = strstr(q, "\"wave_")) != NULL; q++)
        nkeys++;
    CHECK(nkeys == 3 && strstr(text, "\"per_wave_us\"") && !strstr(text, "wave_blocks_max") &&
          !strstr(text, "wave_blocks_per_expert"), "written keys %d: %s", nkeys, text);
    const char *neg = "{\"specsim_model\": 1, \"name\": \"t\", \"phases\": {\"verify\": "
                      "{\"groups\": [{\"name\": \"g\", \"count\": 1, \"base_us\": 5, "
                      "\"wave_capacity\": -660}]}, \"accept\": {\"groups\": []}}}";
    CHECK(wm_parse(&f, neg, "t.json", err, sizeof err) != 0 && strstr(err, "wave_capacity"),
          "negative wave_capacity accepted: %s", err);
}

static void wmodel_experts_touched_matches_monte_carlo(void)
{
    wm_model m;
    wm_init(&m);
    m.moe_experts = 384; /* Kimi K2.5: 384 experts, top-8 */
    m.moe_topk = 8;
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 11);
    const int tokens_list[] = {1, 4, 32, 128, 512};
    for (size_t ti = 0; ti < sizeof tokens_list / sizeof tokens_list[0]; ti++) {
        int tokens = tokens_list[ti], trials = 4000;
        double sum = 0, sum2 = 0;
        for (int tr = 0; tr < trials; tr++) {
            unsigned char hit[384] = {0};
            int distinct = 0;
            for (int t = 0; t < tokens; t++) {
                int chosen[8];
                for (int j = 0; j < 8; j++) { /* 8 distinct experts per token */
                    int e, dup;
                    do {
                        e = (int)gsl_rng_uniform_int(r, 384);
                        dup = 0;
                        for (int q = 0; q < j; q++)
                            dup |= chosen[q] == e;
                    } while (dup);
                    chosen[j] = e;
                    distinct += !hit[e];
                    hit[e] = 1;
                }
            }
            sum += distinct;
            sum2 += (double)distinct * distinct;
        }
        double mean = sum / trials, se = sqrt((sum2 / trials - mean * mean) / trials);
        double want = wm_experts_touched(&m, tokens);
        CHECK(fabs(mean - want) <= 5 * se + 1e-9, "%d tokens: Monte Carlo %.3f, formula %.3f, 5 SE %.3f",
              tokens, mean, want, 5 * se);
    }
    gsl_rng_free(r);
}

static void wmodel_phase_fallbacks(void)
{
    wm_model m;
    char err[512] = "";
    const char *text =
        "{\"specsim_model\": 1, \"name\": \"fb\", \"phases\": {"
        "\"verify\": {\"groups\": [{\"name\": \"v\", \"count\": 5, \"base_us\": 1000}]},"
        "\"accept\": {\"groups\": [{\"name\": \"a\", \"count\": 2, \"base_us\": 7}]}}}";
    CHECK(wm_parse(&m, text, "fb.json", err, sizeof err) == 0, "%s", err);
    CHECK(wm_phase_get(&m, WM_DECODE) == &m.phase[WM_VERIFY], "decode does not fall back");
    CHECK(wm_phase_get(&m, WM_SAMPLE) == &m.phase[WM_ACCEPT], "sample does not fall back");
    CHECK(wm_phase_get(&m, WM_DRAFT) == NULL && wm_phase_get(&m, WM_EXTEND) == NULL,
          "draft/extend invented");
    CHECK_NEAR(wm_phase_gpu_us(&m, WM_DECODE, 1, 0), 1000, 0, 0);
    CHECK_NEAR(wm_phase_gpu_us(&m, WM_SAMPLE, 1, 0), 7, 0, 0);
    CHECK(wm_phase_gpu_us(&m, WM_DRAFT, 1, 0) == 0 && wm_phase_kernels(&m, WM_DRAFT) == 0,
          "absent draft costs something");
    CHECK(wm_phase_kernels(&m, WM_DECODE) == 5, "decode kernels %d", wm_phase_kernels(&m, WM_DECODE));
    CHECK(wm_require(&m, WM_VERIFY, "fb.json", NULL, err, sizeof err) == 0, "verify missing");
    CHECK(wm_require(&m, WM_DRAFT, "fb.json", "required for speculative runs", err, sizeof err) == -1,
          "draft reported present");
    CHECK(strcmp(err, "fb.json: field phases.draft: missing: required for speculative runs") == 0,
          "message \"%s\"", err);
    CHECK(wm_phase_find("extend") == WM_EXTEND && wm_phase_find("verfy") == -1, "phase_find");
}


/* The loop key and a phase's host_gap_reject_us (the hf-assisted loop): read, written back
 * only when set, an unknown loop refused with the field named. */
static void wmodel_loop_round_trips(void)
{
    wm_model m, back;
    char err[512] = "";
    const char *text =
        "{\"specsim_model\": 1, \"name\": \"hf\", \"loop\": \"hf-assisted\", \"phases\": {"
        "\"verify\": {\"groups\": [{\"name\": \"v\", \"count\": 5, \"base_us\": 1000}]},"
        "\"extend\": {\"host_gap_reject_us\": 1868.5, \"groups\": [{\"name\": \"e\", \"count\": 1, \"base_us\": 1}]},"
        "\"accept\": {\"groups\": [{\"name\": \"a\", \"count\": 2, \"base_us\": 7}]}}}";
    CHECK(wm_parse(&m, text, "hf.json", err, sizeof err) == 0, "%s", err);
    CHECK(m.loop == WM_LOOP_HF, "loop %d", m.loop);
    CHECK_NEAR(m.phase[WM_EXTEND].host_gap_reject_us, 1868.5, 0, 0);
    const char *path = "build/tests/wmodel_loop.json";
    CHECK(wm_save(&m, path, err, sizeof err) == 0, "%s", err);
    CHECK(wm_load(&back, path, err, sizeof err) == 0, "%s", err);
    CHECK(back.loop == WM_LOOP_HF && back.phase[WM_EXTEND].host_gap_reject_us == 1868.5,
          "round trip: loop %d, reject %g", back.loop, back.phase[WM_EXTEND].host_gap_reject_us);
    CHECK(wm_parse(&m, "{\"specsim_model\": 1, \"name\": \"e\", \"phases\": {"
                   "\"verify\": {\"groups\": []}, \"accept\": {\"groups\": []}}}", "e.json",
                   err, sizeof err) == 0 && m.loop == WM_LOOP_EAGLE, "default loop: %s", err);
    const char *bad =
        "{\"specsim_model\": 1, \"name\": \"x\", \"loop\": \"vllm\", \"phases\": {"
        "\"verify\": {\"groups\": []}, \"accept\": {\"groups\": []}}}";
    CHECK(wm_parse(&m, bad, "x.json", err, sizeof err) == -1, "unknown loop taken");
    CHECK(strstr(err, "x.json: field loop: value \"vllm\"") != NULL, "message \"%s\"", err);
}

/* A phase's kv_rows: "padded" read and written back, absent = the real rows (files before
 * it), anything else refused with the field named; wm_phase_kv_tokens scales a padded
 * graph batch's context by padded / bs only on the padded basis and never when eager. */
static void wmodel_kv_rows_round_trips_and_prices(void)
{
    wm_model m, back;
    char err[512] = "";
    const char *text =
        "{\"specsim_model\": 1, \"name\": \"kv\", \"phases\": {"
        "\"verify\": {\"kv_rows\": \"padded\", \"groups\": [{\"name\": \"v\", \"count\": 1, \"base_us\": 10}]},"
        "\"accept\": {\"kv_rows\": \"real\", \"groups\": [{\"name\": \"a\", \"count\": 1, \"base_us\": 7}]}}}";
    CHECK(wm_parse(&m, text, "kv.json", err, sizeof err) == 0, "%s", err);
    CHECK(m.phase[WM_VERIFY].kv_rows == WM_KV_PADDED && m.phase[WM_ACCEPT].kv_rows == WM_KV_REAL,
          "kv_rows %d %d", m.phase[WM_VERIFY].kv_rows, m.phase[WM_ACCEPT].kv_rows);
    const char *path = "build/tests/wmodel_kv_rows.json";
    CHECK(wm_save(&m, path, err, sizeof err) == 0, "%s", err);
    CHECK(wm_load(&back, path, err, sizeof err) == 0, "%s", err);
    CHECK(back.phase[WM_VERIFY].kv_rows == WM_KV_PADDED && back.phase[WM_ACCEPT].kv_rows == WM_KV_REAL,
          "round trip: %d %d", back.phase[WM_VERIFY].kv_rows, back.phase[WM_ACCEPT].kv_rows);
    CHECK_NEAR(wm_phase_kv_tokens(&m.phase[WM_VERIFY], 3300, 33, 40), 4000, 1e-9, 0);
    CHECK_NEAR(wm_phase_kv_tokens(&m.phase[WM_VERIFY], 3300, 33, 0), 3300, 0, 0);
    CHECK_NEAR(wm_phase_kv_tokens(&m.phase[WM_ACCEPT], 3300, 33, 40), 3300, 0, 0);
    const char *bad =
        "{\"specsim_model\": 1, \"name\": \"x\", \"phases\": {"
        "\"verify\": {\"kv_rows\": \"all\", \"groups\": []}, \"accept\": {\"groups\": []}}}";
    CHECK(wm_parse(&m, bad, "x.json", err, sizeof err) == -1, "kv_rows \"all\" taken");
    CHECK(strstr(err, "x.json: field phases.verify.kv_rows: value \"all\"") != NULL, "message \"%s\"", err);
}

/* A group's launch profile (launch_pos, docs/model-format.md), and a phase's eager_gap_us:
 * WM_POS_BINS shares read,
 * normalized and written back (to 4 decimals); refused with the file and field named when
 * it is not an array of WM_POS_BINS numbers, a share lies outside [0, 1] or they do not
 * sum to 1. A group without it has none (has_pos 0). */
static void wmodel_launch_pos_round_trips_and_refuses(void)
{
    wm_model m, back;
    char err[512] = "", pos[1024], text[2048];
    const char *fmt =
        "{\"specsim_model\": 1, \"name\": \"lp\", \"phases\": {"
        "\"verify\": {\"eager_gap_us\": 1.25, \"groups\": [{\"name\": \"v\", \"count\": 1, \"base_us\": 10, \"launch_pos\": %s},"
        "{\"name\": \"w\", \"count\": 1, \"base_us\": 5}]},"
        "\"accept\": {\"groups\": [{\"name\": \"a\", \"count\": 1, \"base_us\": 7}]}}}";
    /* half in the first slice, half in the last; written with 0.005 too much in all */
    size_t n = 0;
    n += (size_t)snprintf(pos + n, sizeof pos - n, "[0.5025");
    for (int b = 1; b < WM_POS_BINS - 1; b++)
        n += (size_t)snprintf(pos + n, sizeof pos - n, ", 0");
    snprintf(pos + n, sizeof pos - n, ", 0.5025]");
    snprintf(text, sizeof text, fmt, pos);
    CHECK(wm_parse(&m, text, "lp.json", err, sizeof err) == 0, "%s", err);
    const wm_group *v = &m.phase[WM_VERIFY].groups[0], *w = &m.phase[WM_VERIFY].groups[1];
    CHECK(v->has_pos && !w->has_pos, "has_pos %d %d", v->has_pos, w->has_pos);
    CHECK_NEAR(v->pos[0], 0.5, 1e-12, 0);
    CHECK_NEAR(v->pos[WM_POS_BINS - 1], 0.5, 1e-12, 0);
    const char *path = "build/tests/wmodel_launch_pos.json";
    CHECK(wm_save(&m, path, err, sizeof err) == 0, "%s", err);
    CHECK(wm_load(&back, path, err, sizeof err) == 0, "%s", err);
    CHECK(back.phase[WM_VERIFY].groups[0].has_pos && !back.phase[WM_VERIFY].groups[1].has_pos,
          "round trip: has_pos");
    CHECK_NEAR(back.phase[WM_VERIFY].groups[0].pos[WM_POS_BINS - 1], 0.5, 1e-12, 0);
    /* the phase's eager gap (wm_phase_model.eager_gap_us) with it */
    CHECK(m.phase[WM_VERIFY].eager_gap_us == 1.25 && back.phase[WM_VERIFY].eager_gap_us == 1.25 &&
          back.phase[WM_ACCEPT].eager_gap_us == 0, "eager_gap_us %g -> %g",
          m.phase[WM_VERIFY].eager_gap_us, back.phase[WM_VERIFY].eager_gap_us);
    const struct { const char *pos, *want; } bad[] = {
        {"[0.5, 0.5]", "lp.json: field phases.verify.groups[0].launch_pos: value [0.5,0.5]"},
        {"0.5", "phases.verify.groups[0].launch_pos: value 0.5: must be an array"},
        {"[1.5, -0.5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, "
         "0, 0, 0, 0, 0, 0]", "element 0 must be a share in [0, 1]"},
        {"[0.5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, "
         "0, 0, 0, 0, 0, 0]", "the shares sum to 0.5, not 1"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(text, sizeof text, fmt, bad[i].pos);
        CHECK(wm_parse(&m, text, "lp.json", err, sizeof err) == -1, "taken: %s", bad[i].pos);
        CHECK(strstr(err, bad[i].want) != NULL, "message \"%s\", want \"%s\"", err, bad[i].want);
    }
}

/* The host's speed keys of "launch" (host_speed_sd_frac, host_speed_rho, host_speed_level_sd):
 * read and written back; a negative, NaN-like or non-numeric level refused with the field
 * named; a model without the level reads 0. */
static void wmodel_host_level_round_trips_and_refuses(void)
{
    wm_model m, back;
    char err[512] = "", text[1024];
    const char *fmt =
        "{\"specsim_model\": 1, \"name\": \"hl\", \"launch\": {\"graph_launch_us\": 5, "
        "\"eager_launch_us\": 10, \"host_speed_sd_frac\": 0.1, \"host_speed_rho\": 0.3%s}, "
        "\"phases\": {\"verify\": {\"groups\": [{\"name\": \"v\", \"count\": 1, \"base_us\": 10}]},"
        "\"accept\": {\"groups\": [{\"name\": \"a\", \"count\": 1, \"base_us\": 7}]}}}";
    snprintf(text, sizeof text, fmt, ", \"host_speed_level_sd\": 0.2");
    CHECK(wm_parse(&m, text, "hl.json", err, sizeof err) == 0, "%s", err);
    CHECK_NEAR(m.host_speed_level_sd, 0.2, 0, 0);
    const char *path = "build/tests/wmodel_host_level.json";
    CHECK(wm_save(&m, path, err, sizeof err) == 0, "%s", err);
    CHECK(wm_load(&back, path, err, sizeof err) == 0, "%s", err);
    CHECK(back.host_speed_level_sd == 0.2 && back.host_speed_sd_frac == 0.1 &&
          back.host_speed_rho == 0.3, "round trip: level %g sd %g rho %g", back.host_speed_level_sd,
          back.host_speed_sd_frac, back.host_speed_rho);
    snprintf(text, sizeof text, fmt, "");
    CHECK(wm_parse(&m, text, "hl.json", err, sizeof err) == 0 && m.host_speed_level_sd == 0,
          "absent: %g (%s)", m.host_speed_level_sd, err);
    const char *bad[] = {", \"host_speed_level_sd\": -0.1", ", \"host_speed_level_sd\": \"x\"",
                         ", \"host_speed_level_sd\": 1e30"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(text, sizeof text, fmt, bad[i]);
        CHECK(wm_parse(&m, text, "hl.json", err, sizeof err) == -1, "taken: %s", bad[i]);
        CHECK(strstr(err, "launch.host_speed_level_sd") != NULL, "message \"%s\"", err);
    }
}

/* Each bad[i].keys put into fmt (a model with one %s) is refused by wm_parse of file, the
 * message holding bad[i].want (the file and the field named). */
typedef struct { const char *keys, *want; } bad_keys;
static void check_refused(const char *fmt, const char *file, const bad_keys *bad, size_t n)
{
    wm_model m;
    char text[1024], err[512];
    for (size_t i = 0; i < n; i++) {
        snprintf(text, sizeof text, fmt, bad[i].keys);
        CHECK(wm_parse(&m, text, file, err, sizeof err) == -1, "taken: %s", bad[i].keys);
        CHECK(strstr(err, bad[i].want) != NULL, "message \"%s\", want \"%s\"", err, bad[i].want);
    }
}

/* A phase's expert_row_exponent: read, copied into its groups, written back (and not written
 * when 1); a group's experts are those of rows x q^e tokens routed alone, at one query token
 * a row the same as before; out of [0.05, 1] or not a number it is refused with the field. */
static void wmodel_expert_row_exponent_round_trips_and_prices(void)
{
    wm_model m, back;
    char err[512] = "", text[1024];
    const char *fmt =
        "{\"specsim_model\": 1, \"name\": \"re\", \"moe\": {\"experts\": 64, \"topk\": 8}, \"phases\": {"
        "\"verify\": {%s \"groups\": [{\"name\": \"v\", \"count\": 1, \"base_us\": 10, \"per_expert_us\": 2}]},"
        "\"accept\": {\"groups\": [{\"name\": \"a\", \"count\": 1, \"base_us\": 7}]}}}";
    snprintf(text, sizeof text, fmt, "\"expert_row_exponent\": 0.6,");
    CHECK(wm_parse(&m, text, "re.json", err, sizeof err) == 0, "%s", err);
    const wm_group *g = &m.phase[WM_VERIFY].groups[0];
    CHECK(m.phase[WM_VERIFY].expert_row_exp == 0.6 && g->expert_row_exp == 0.6, "read %g, group %g",
          m.phase[WM_VERIFY].expert_row_exp, g->expert_row_exp);
    /* 4 rows of 6 tokens: the experts of 4 x 6^0.6 = 11.69 tokens routed alone */
    double routed = 4 * pow(6, 0.6), want = 10 + 2 * 64 * (1 - pow(1 - 8.0 / 64, routed));
    CHECK_NEAR(wm_routed_tokens(24, 6, 0.6), routed, 1e-9, 1e-12);
    CHECK_NEAR(wm_group_us_q(&m, g, 24, 0, 6), want, 1e-9, 1e-12);
    CHECK_NEAR(wm_group_us_q(&m, g, 24, 0, 1), 10 + 2 * wm_experts_touched(&m, 24), 1e-9, 1e-12);
    CHECK(wm_routed_tokens(24, 6, 1) == 24 && wm_routed_tokens(24, 6, 0) == 24 && wm_routed_tokens(5, 0.5, 0.6) == 5,
          "routed alone: tokens unchanged");
    const char *path = "build/tests/wmodel_row_exp.json";
    CHECK(wm_save(&m, path, err, sizeof err) == 0, "%s", err);
    CHECK(wm_load(&back, path, err, sizeof err) == 0, "%s", err);
    CHECK(back.phase[WM_VERIFY].expert_row_exp == 0.6 && back.phase[WM_VERIFY].groups[0].expert_row_exp == 0.6,
          "round trip %g", back.phase[WM_VERIFY].expert_row_exp);
    snprintf(text, sizeof text, fmt, "");
    CHECK(wm_parse(&m, text, "re.json", err, sizeof err) == 0 && m.phase[WM_VERIFY].expert_row_exp == 1,
          "absent: %g (%s)", m.phase[WM_VERIFY].expert_row_exp, err);
    CHECK(wm_save(&m, path, err, sizeof err) == 0, "%s", err);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    text[n] = 0;
    if (f)
        fclose(f);
    CHECK(n > 0 && !strstr(text, "expert_row_exponent"), "exponent 1 written: %s", text);
    const bad_keys bad[] = {
        {"\"expert_row_exponent\": 0.01,", "re.json: field phases.verify.expert_row_exponent"},
        {"\"expert_row_exponent\": 1.5,", "re.json: field phases.verify.expert_row_exponent"},
        {"\"expert_row_exponent\": \"x\",", "re.json: field phases.verify.expert_row_exponent"}};
    check_refused(fmt, "re.json", bad, sizeof bad / sizeof bad[0]);
}

/* A phase's graph_size_factors and graph_size_sd (docs/model-format.md): read, written back, a listed size's
 * factor for its graph replays and 1 for any other size or eager (padded 0); refused with the
 * field named when a factor is out of [0.5, 2], the rows do not increase, the two arrays
 * differ in length, or one is missing. */
static void wmodel_graph_size_factors_round_trip_and_refuse(void)
{
    wm_model m, back;
    char err[512] = "", text[1024];
    const char *fmt =
        "{\"specsim_model\": 1, \"name\": \"gs\", \"phases\": {"
        "\"verify\": {%s \"groups\": [{\"name\": \"v\", \"count\": 1, \"base_us\": 10}]},"
        "\"accept\": {\"groups\": [{\"name\": \"a\", \"count\": 1, \"base_us\": 7}]}}}";
    snprintf(text, sizeof text, fmt, "\"graph_size_factors\": {\"rows\": [1, 24, 64], \"factor\": [1.01, 1.032, 0.978]}, "
             "\"graph_size_sd\": 0.0224,");
    CHECK(wm_parse(&m, text, "gs.json", err, sizeof err) == 0, "%s", err);
    const wm_phase_model *v = &m.phase[WM_VERIFY];
    CHECK(v->n_graph_sizes == 3 && wm_phase_graph_factor(v, 24) == 1.032 && wm_phase_graph_factor(v, 64) == 0.978 &&
          wm_phase_graph_factor(v, 32) == 1 && wm_phase_graph_factor(v, 0) == 1 &&
          wm_phase_graph_factor(&m.phase[WM_ACCEPT], 24) == 1, "factors %d: %g %g %g %g", v->n_graph_sizes,
          wm_phase_graph_factor(v, 24), wm_phase_graph_factor(v, 64), wm_phase_graph_factor(v, 32),
          wm_phase_graph_factor(v, 0));
    const char *path = "build/tests/wmodel_graph_sizes.json";
    CHECK(wm_save(&m, path, err, sizeof err) == 0, "%s", err);
    CHECK(wm_load(&back, path, err, sizeof err) == 0, "%s", err);
    CHECK(back.phase[WM_VERIFY].n_graph_sizes == 3 && wm_phase_graph_factor(&back.phase[WM_VERIFY], 1) == 1.01 &&
          back.phase[WM_ACCEPT].n_graph_sizes == 0 && back.phase[WM_VERIFY].graph_size_sd == 0.0224,
          "round trip: %d sizes, sd %g", back.phase[WM_VERIFY].n_graph_sizes, back.phase[WM_VERIFY].graph_size_sd);
    const bad_keys bad[] = {
        {"\"graph_size_factors\": {\"rows\": [1, 24], \"factor\": [1.0, 2.5]},",
         "gs.json: field phases.verify.graph_size_factors.factor[1]: value 2.5"},
        {"\"graph_size_factors\": {\"rows\": [24, 8], \"factor\": [1.0, 1.0]},",
         "phases.verify.graph_size_factors.rows[1]"},
        {"\"graph_size_factors\": {\"rows\": [1, 8, 24], \"factor\": [1.0, 1.0]},",
         "phases.verify.graph_size_factors.factor"},
        {"\"graph_size_factors\": {\"rows\": [1, 8]},", "phases.verify.graph_size_factors.factor: missing"},
        {"\"graph_size_factors\": [1, 2],", "phases.verify.graph_size_factors"},
        {"\"graph_size_sd\": -0.1,", "gs.json: field phases.verify.graph_size_sd: value -0.1"},
    };
    check_refused(fmt, "gs.json", bad, sizeof bad / sizeof bad[0]);
}

/* A phase's host stalls (eager_stall_per_launch, eager_stall_us): read and written back;
 * refused with the field named when one comes without the other, the chance is not in
 * [0, 1], or their mean share exceeds eager_launch_us (which includes it). */
static void wmodel_eager_stalls_round_trip_and_refuse(void)
{
    wm_model m, back;
    char err[512] = "";
    const char *fmt =
        "{\"specsim_model\": 1, \"name\": \"st\", \"phases\": {"
        "\"verify\": {\"eager_launch_us\": 15, %s \"groups\": [{\"name\": \"v\", \"count\": 1, \"base_us\": 10}]},"
        "\"accept\": {\"groups\": [{\"name\": \"a\", \"count\": 1, \"base_us\": 7}]}}}";
    char text[1024];
    snprintf(text, sizeof text, fmt, "\"eager_stall_per_launch\": 0.0002, \"eager_stall_us\": 4000,");
    CHECK(wm_parse(&m, text, "st.json", err, sizeof err) == 0, "%s", err);
    CHECK_NEAR(m.phase[WM_VERIFY].eager_stall_per_launch, 0.0002, 0, 0);
    CHECK_NEAR(m.phase[WM_VERIFY].eager_stall_us, 4000, 0, 0);
    const char *path = "build/tests/wmodel_stalls.json";
    CHECK(wm_save(&m, path, err, sizeof err) == 0, "%s", err);
    CHECK(wm_load(&back, path, err, sizeof err) == 0, "%s", err);
    CHECK(back.phase[WM_VERIFY].eager_stall_per_launch == 0.0002 &&
          back.phase[WM_VERIFY].eager_stall_us == 4000, "round trip: %g %g",
          back.phase[WM_VERIFY].eager_stall_per_launch, back.phase[WM_VERIFY].eager_stall_us);
    const bad_keys bad[] = {
        {"\"eager_stall_us\": 4000,", "st.json: field phases.verify.eager_stall_per_launch: missing"},
        {"\"eager_stall_per_launch\": 1.5, \"eager_stall_us\": 4,", "phases.verify.eager_stall_per_launch: value 1.5"},
        {"\"eager_stall_per_launch\": 0.01, \"eager_stall_us\": 4000,", "phases.verify.eager_stall_us: value 4000"},
    };
    check_refused(fmt, "st.json", bad, sizeof bad / sizeof bad[0]);
}

/* A model the reader would refuse (a fit gone wrong: -nan, 1e300 us) is not written: the
 * file at path stays as it was, no temporary is left (issue 17: a refused fit once left a
 * -nan model at -o). */
static void wmodel_save_refuses_what_load_refuses(void)
{
    wm_model a;
    char err[512] = "", path[64], tmp[80];
    snprintf(path, sizeof path, "/tmp/specsim-test-wmodel-nan-%d.json", (int)getpid());
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    CHECK(wm_load(&a, EXAMPLE, err, sizeof err) == 0, "%s", err);
    a.phase[WM_VERIFY].groups[0].base_us = NAN;
    CHECK(wm_save(&a, path, err, sizeof err) == -2 && strstr(err, "not written") &&
          strstr(err, "phases.verify.groups[0].base_us"), "NaN model: %s", err);
    CHECK(access(path, F_OK) != 0 && access(tmp, F_OK) != 0, "a file was left at %s", path);
    FILE *f = fopen(path, "w");
    fputs("old", f);
    fclose(f);
    a.phase[WM_VERIFY].groups[0].base_us = 1e300;
    CHECK(wm_save(&a, path, err, sizeof err) == -2 && strstr(err, "out of range"), "1e300: %s", err);
    char got[8] = "";
    f = fopen(path, "r");
    size_t n = f ? fread(got, 1, sizeof got - 1, f) : 0;
    if (f)
        fclose(f);
    CHECK(n == 3 && !strcmp(got, "old"), "the old file was replaced: \"%s\"", got);
    remove(path);
}

int main(void)
{
    RUN(wmodel_example_loads);
    RUN(wmodel_save_round_trips);
    RUN(wmodel_rejects_bad_files);
    RUN(wmodel_truncation_offset_is_exact);
    RUN(wmodel_accepts_minimal_and_comments);
    RUN(wmodel_costs_follow_formula);
    RUN(wmodel_tile_and_token_terms_follow_formula);
    RUN(wmodel_wave_term_follows_formula);
    RUN(wmodel_experts_touched_matches_monte_carlo);
    RUN(wmodel_phase_fallbacks);
    RUN(wmodel_loop_round_trips);
    RUN(wmodel_eager_stalls_round_trip_and_refuse);
    RUN(wmodel_save_refuses_what_load_refuses);
    RUN(wmodel_kv_rows_round_trips_and_prices);
    RUN(wmodel_launch_pos_round_trips_and_refuses);
    RUN(wmodel_host_level_round_trips_and_refuses);
    RUN(wmodel_expert_row_exponent_round_trips_and_prices);
    RUN(wmodel_graph_size_factors_round_trip_and_refuse);
    return check_done();
}
