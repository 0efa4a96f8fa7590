/* test_carry: roofline carrying of a model between the committed hardware presets
 * (models/carry.c): each term scales by the ratio its kind says, short kernels and GPU idle
 * stay, a round trip is the identity, presets are found by device name, bad ones refused. */
#include "check.h"
#include "carry.h"
#include "fit.h"

#include <stdlib.h>
#include <unistd.h>

#include <string.h>

/* Datasheet numbers of models/presets/h200-sxm.json and rtx-pro-6000.json */
#define H200_BW 4800.0
#define H200_TF 989.0
#define RTX_BW 1597.0
#define RTX_TF 503.8

static void make_model(wm_model *m)
{
    wm_init(m);
    snprintf(m->name, sizeof m->name, "t");
    snprintf(m->device, sizeof m->device, "NVIDIA H200");
    m->moe_experts = 384;
    m->moe_topk = 8;
    m->graph_launch_us = 7;
    m->eager_launch_us = 4;
    wm_phase_model *v = &m->phase[WM_VERIFY];
    v->present = 1;
    v->host_gap_us = 11;
    v->ngroups = 3;
    v->groups[0] = (wm_group){.name = "L1 gemm", .count = 4, .base_us = 100, .per_token_us = 0.2,
                              .knee_tokens = 64, .per_expert_us = 1.0, .per_kv_ktoken_us = 0.5,
                              .sd_frac = 0.01};
    v->groups[1] = (wm_group){.name = "L0 rmsnorm_kernel", .count = 4, .base_us = 8,
                              .per_token_us = 0.01, .sd_frac = 0.02}; /* 2 us/launch */
    v->groups[2] = (wm_group){.name = "(gpu idle in phase)", .count = 1, .base_us = 20,
                              .per_token_us = 0.3, .knee_tokens = 16};
    v->groups[0].per_kvq_ktoken_us = 0.25;   /* attention re-read per query tile: memory */
    v->groups[0].q_tile = 4;
    v->groups[0].per_kvq2_ktoken_us = 0.125; /* a dearer last tile: memory too */
    v->groups[0].q_tile_knee = 2;
    v->groups[0].per_token_all_us = 0.05;    /* slope below the knee too: compute */
    v->groups[0].wave_capacity = 660;        /* 5 blocks/SM x 132 SMs */
    v->groups[0].per_wave_us = 90;
    v->groups[0].sweep_scale = 0.9;          /* GEMM sweep term: memory */
    v->groups[0].sweep_phase = WM_VERIFY;
    m->sweep.ntok = 2;
    m->sweep.nsite = 1;
    m->sweep.tok[0] = 1, m->sweep.tok[1] = 64;
    m->sweep.site[0].phases = 1u << WM_VERIFY;
    m->sweep.site[0].per_forward = 2;
    m->sweep.site[0].us[0] = 10, m->sweep.site[0].us[1] = 30;
    m->phase[WM_ACCEPT] = *v;
}

static void carry_scales_terms_by_roofline_ratios(void)
{
    static wm_model m;
    carry_hw h, r;
    carry_factors f;
    char err[512];
    make_model(&m);
    int ok = carry_hw_load(&h, "h200-sxm", err, sizeof err) == 0;
    CHECK(ok, "%s", err);
    ok = ok && carry_hw_load(&r, "rtx-pro-6000", err, sizeof err) == 0;
    CHECK(ok, "%s", err);
    if (!ok)
        return;
    CHECK_NEAR(h.mem_bw_gbps, H200_BW, 0, 0);
    CHECK_NEAR(r.bf16_tflops, RTX_TF, 0, 0);
    CHECK(carry_model(&m, &h, &r, &f, err, sizeof err) == 0, "%s", err);
    const wm_group *g = &m.phase[WM_VERIFY].groups[0];
    CHECK_NEAR(g->base_us, 100 * H200_BW / RTX_BW, 1e-9, 1e-12);
    CHECK_NEAR(g->per_token_us, 0.2 * H200_TF / RTX_TF, 1e-12, 1e-12);
    CHECK_NEAR(g->knee_tokens, 64 * (RTX_TF / RTX_BW) / (H200_TF / H200_BW), 1e-9, 1e-12);
    CHECK_NEAR(g->per_expert_us, 1.0 * H200_BW / RTX_BW, 1e-12, 1e-12);
    CHECK_NEAR(g->per_kv_ktoken_us, 0.5 * H200_BW / RTX_BW, 1e-12, 1e-12);
    CHECK_NEAR(g->per_kvq_ktoken_us, 0.25 * H200_BW / RTX_BW, 1e-12, 1e-12);
    CHECK_NEAR(g->per_token_all_us, 0.05 * H200_TF / RTX_TF, 1e-12, 1e-12);
    CHECK_NEAR(g->per_kvq2_ktoken_us, 0.125 * H200_BW / RTX_BW, 1e-12, 1e-12);
    CHECK_NEAR(g->q_tile, 4, 0, 0);
    CHECK_NEAR(g->q_tile_knee, 2, 0, 0);
    CHECK_NEAR(g->wave_capacity, 660.0 * 188 / 132, 1e-9, 1e-12);        /* SMs: presets */
    CHECK_NEAR(g->per_wave_us, 90 * (188.0 / 132) * H200_BW / RTX_BW, 1e-9, 1e-12);
    CHECK_NEAR(g->sd_frac, 0.01, 0, 0);
    CHECK_NEAR(g->sweep_scale, 0.9 * H200_BW / RTX_BW, 1e-12, 1e-12);
    CHECK(m.sweep.site[0].us[1] == 30, "the sweep's own values are the source GPU's, kept");
    const wm_group *n = &m.phase[WM_VERIFY].groups[1];   /* latency-bound: base kept */
    CHECK_NEAR(n->base_us, 8, 0, 0);
    CHECK_NEAR(n->per_token_us, 0.01 * H200_TF / RTX_TF, 1e-12, 1e-12);
    const wm_group *i = &m.phase[WM_VERIFY].groups[2];   /* GPU idle: all kept */
    CHECK(i->base_us == 20 && i->per_token_us == 0.3 && i->knee_tokens == 16, "idle group changed");
    CHECK(m.graph_launch_us == 7 && m.eager_launch_us == 4 && m.phase[WM_VERIFY].host_gap_us == 11,
          "host side changed");
    CHECK(f.groups_memory == 2 && f.groups_latency == 2 && f.groups_kept == 2, "counts %d %d %d",
          f.groups_memory, f.groups_latency, f.groups_kept);
    CHECK(strstr(m.source, "carried h200-sxm -> rtx-pro-6000") && strstr(m.device, "RTX PRO 6000"),
          "source \"%s\" device \"%s\"", m.source, m.device);
    /* the uncertainty the intervals take: the CARRY_UNC_* kinds, and which bases stayed */
    CHECK(m.unc.memory_frac == CARRY_UNC_BW && m.unc.compute_frac == CARRY_UNC_FLOPS &&
          m.unc.latency_frac == CARRY_UNC_LATENCY, "unc %g %g %g", m.unc.memory_frac,
          m.unc.compute_frac, m.unc.latency_frac);
    CHECK(!g->latency_bound && n->latency_bound && i->latency_bound, "latency_bound %d %d %d",
          g->latency_bound, n->latency_bound, i->latency_bound);
    /* carry_split: the kinds add up to the group's cost, the base where its kind says */
    for (int k = 0; k < 3; k++) {
        const wm_group *x = &m.phase[WM_VERIFY].groups[k];
        double mem = 0, comp = 0, lat = 0;
        carry_split(&m, x, 96, 2000, 4, &mem, &comp, &lat);
        CHECK_NEAR(mem + comp + lat, wm_group_us_q(&m, x, 96, 2000, 4), 1e-9, 1e-12);
        CHECK(x->latency_bound ? lat == x->base_us : lat == 0 && mem >= x->base_us,
              "group %d: mem %g comp %g lat %g base %g", k, mem, comp, lat, x->base_us);
    }
    /* carried twice: the uncertainties add in quadrature */
    CHECK(carry_model(&m, &r, &h, &f, err, sizeof err) == 0, "%s", err);
    CHECK_NEAR(m.unc.memory_frac, sqrt(2) * CARRY_UNC_BW, 1e-12, 1e-12);
}

static void carry_round_trip_is_identity(void)
{
    static wm_model m, orig;
    carry_hw h, r;
    char err[512];
    make_model(&m);
    orig = m;
    if (carry_hw_load(&h, "h200-sxm", err, sizeof err) || carry_hw_load(&r, "rtx-pro-6000", err, sizeof err)) {
        CHECK(0, "%s", err);
        return;
    }
    CHECK(carry_model(&m, &h, &r, NULL, err, sizeof err) == 0, "%s", err);
    CHECK(carry_model(&m, &r, &h, NULL, err, sizeof err) == 0, "%s", err);
    for (int p = 0; p < WM_NPHASE; p++)
        for (int k = 0; k < orig.phase[p].ngroups; k++) {
            const wm_group *a = &m.phase[p].groups[k], *b = &orig.phase[p].groups[k];
            CHECK_NEAR(a->base_us, b->base_us, 1e-9, 1e-12);
            CHECK_NEAR(a->per_token_us, b->per_token_us, 1e-12, 1e-12);
            CHECK_NEAR(a->knee_tokens, b->knee_tokens, 1e-9, 1e-12);
            CHECK_NEAR(a->per_kv_ktoken_us, b->per_kv_ktoken_us, 1e-12, 1e-12);
        }
}

static void carry_finds_presets_by_device_and_refuses_bad_ones(void)
{
    carry_hw h;
    char err[512];
    CHECK(carry_hw_for_device(&h, "NVIDIA H200", err, sizeof err) == 0 && strcmp(h.name, "h200-sxm") == 0,
          "H200: %s", err);
    CHECK(carry_hw_for_device(&h, "NVIDIA RTX PRO 6000 Blackwell Server Edition", err, sizeof err) == 0 &&
          strcmp(h.name, "rtx-pro-6000") == 0, "RTX PRO 6000: %s", err);
    CHECK(carry_hw_for_device(&h, "Tesla K80", err, sizeof err) == -1 && strstr(err, "Tesla K80"),
          "K80 matched: %s", err);
    CHECK(carry_hw_load(&h, "no-such-gpu", err, sizeof err) == -1 && strstr(err, "no-such-gpu"),
          "unknown preset: %s", err);
    CHECK(carry_hw_load(&h, "kimi-k2.5", err, sizeof err) == -1 && strstr(err, "not a hardware preset"),
          "LLM preset taken as hardware: %s", err);
}

/* `specsim fit --from-model IN --carry-to HW -o OUT`: the command's path through carry. */
static void fitcmd_carries_a_model_file(void)
{
    static wm_model in, out;
    char path[] = "/tmp/specsim-test-carry-XXXXXX", err[512];
    int fd = mkstemp(path);
    CHECK(fd >= 0, "mkstemp");
    if (fd < 0)
        return;
    close(fd);
    char *ok[] = {"fit", "--from-model", "models/example-llama8b.json", "--carry-to",
                  "rtx-pro-6000", "-o", path, "--quiet", NULL};
    CHECK(fitcmd_main(8, ok) == 0, "fitcmd failed");
    CHECK(wm_load(&in, "models/example-llama8b.json", err, sizeof err) == 0, "%s", err);
    CHECK(wm_load(&out, path, err, sizeof err) == 0, "%s", err);
    /* the example's biggest verify group is weight-bound: its base scales by bandwidth */
    const wm_group *a = &in.phase[WM_VERIFY].groups[0], *b = &out.phase[WM_VERIFY].groups[0];
    CHECK(a->base_us / a->count >= CARRY_LATENCY_US, "example group %s is not weight-bound", a->name);
    CHECK_NEAR(b->base_us, a->base_us * H200_BW / RTX_BW, 1e-6, 1e-9);
    char *bad[] = {"fit", "--from-model", "models/example-llama8b.json", "--carry-to",
                   "no-such-gpu", "-o", path, "--quiet", NULL};
    FILE *keep = stderr;
    stderr = fopen("/dev/null", "w");
    int rc = fitcmd_main(8, bad);
    fclose(stderr);
    stderr = keep;
    CHECK(rc == 2, "unknown preset: exit %d", rc);
    remove(path);
}

/* carry_hw_ends blames the flag whose preset failed (it once said --carry-to for a bad
 * --carry-from). */
static void carry_ends_name_the_flag_that_failed(void)
{
    carry_hw a, b;
    char err[1024];
    CHECK(carry_hw_ends(&a, &b, "NVIDIA H200", "nosuch-from", "rtx-pro-6000", err, sizeof err) == -1 &&
          strstr(err, "field --carry-from:") && strstr(err, "nosuch-from"), "bad from: %s", err);
    CHECK(carry_hw_ends(&a, &b, "NVIDIA H200", NULL, "nosuch-to", err, sizeof err) == -1 &&
          strstr(err, "field --carry-to:") && strstr(err, "nosuch-to"), "bad to: %s", err);
    CHECK(carry_hw_ends(&a, &b, "an unknown GPU", NULL, "rtx-pro-6000", err, sizeof err) == -1 &&
          strstr(err, "field --carry-from:"), "unmatched device: %s", err);
    CHECK(carry_hw_ends(&a, &b, "NVIDIA H200", NULL, "rtx-pro-6000", err, sizeof err) == 0 &&
          b.mem_bw_gbps > 1500 && a.mem_bw_gbps > 4000, "good ends: %s", err);
}

int main(void)
{
    RUN(carry_scales_terms_by_roofline_ratios);
    RUN(carry_round_trip_is_identity);
    RUN(carry_finds_presets_by_device_and_refuses_bad_ones);
    RUN(fitcmd_carries_a_model_file);
    RUN(carry_ends_name_the_flag_that_failed);
    return check_done();
}
