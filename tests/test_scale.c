/* test_scale: scaling a model to another shape, TP size and weight format (models/scale.c,
 * models/llmshape.c) on synthetic presets and models whose every scaled term has a closed
 * form: half the TP size doubles a column-parallel GEMM's per-rank weights and the cost
 * above its floor; int4 experts cut their memory terms to a quarter and leave the compute;
 * the layer count multiplies per-layer groups only; the collectives follow the preset;
 * the same shape is the identity; the bounds bracket the nominal; bad input is refused. */
#include "check.h"
#include "scale.h"
#include "llmshape.h"
#include "specsim_bin.h"

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char tmpdir[64];
static char specsim[512];   /* the binary under test (specsim_bin.h) */

/* Runs `specsim ARGS` with stdout and stderr into tmpdir/out.txt; its exit status; *text
 * gets the output (static buffer). */
static int cli(const char *args, const char **text)
{
    static char buf[1 << 16];
    char cmd[2048], path[128];
    snprintf(path, sizeof path, "%s/out.txt", tmpdir);
    snprintf(cmd, sizeof cmd, "%s %s > %s 2>&1", specsim, args, path);
    int rc = system(cmd);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = 0;
    unlink(path);
    *text = buf;
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* Writes an LLM preset file; returns its path (static buffer per call slot). */
static const char *preset(int slot, const char *json)
{
    static char path[8][128];
    snprintf(path[slot], sizeof path[slot], "%s/p%d.json", tmpdir, slot);
    FILE *f = fopen(path[slot], "w");
    fputs(json, f);
    fclose(f);
    return path[slot];
}

/* A dense GQA model: 4 layers, hidden 1024, 16/8 heads of 64, intermediate 4096. */
#define DENSE(layers) "{\"specsim_preset\":\"llm\",\"name\":\"d" #layers "\",\"layers\":" #layers \
    ",\"hidden\":1024,\"heads\":16,\"kv_heads\":8,\"head_dim\":64,\"dense_intermediate\":4096," \
    "\"vocab\":32000}"
/* A MoE model: 1 dense + 3 MoE layers, 64 experts top-4, intermediate 512, 1 shared. */
#define MOE(bits) "{\"specsim_preset\":\"llm\",\"name\":\"m" #bits "\",\"layers\":4,\"dense_layers\":1," \
    "\"hidden\":1024,\"heads\":16,\"kv_heads\":8,\"head_dim\":64,\"dense_intermediate\":4096," \
    "\"moe\":{\"experts\":64,\"topk\":4,\"shared_experts\":1,\"intermediate\":512}," \
    "\"vocab\":32000,\"weight_bits\":16,\"expert_weight_bits\":" #bits "}"

static void load(llm_shape *s, const char *path)
{
    char err[512];
    int rc = llm_load(s, path, err, sizeof err);
    CHECK(rc == 0, "%s: %s", path, err);
}

static wm_group *add(wm_phase_model *ph, const char *name, int count, double base)
{
    wm_group *g = &ph->groups[ph->ngroups++];
    memset(g, 0, sizeof *g);
    snprintf(g->name, sizeof g->name, "%s", name);
    g->count = count;
    g->base_us = base;
    return g;
}

/* One target phase (verify) with the given groups left to the caller; ranks 1. */
static void model_init(wm_model *m, int experts, int topk)
{
    wm_init(m);
    snprintf(m->name, sizeof m->name, "synthetic");
    m->moe_experts = experts;
    m->moe_topk = topk;
    m->phase[WM_VERIFY].present = 1;
    m->phase[WM_ACCEPT].present = 1;
    add(&m->phase[WM_ACCEPT], "k_argmax", 1, 5);
}

static int do_scale(wm_model *m, scale_opts *o, char *err, size_t n)
{
    return scale_model(m, o, NULL, err, n);
}

static void llm_rank_splits_the_way_tp_does(void)
{
    llm_shape s;
    llm_rank r8, r4, r16;
    load(&s, preset(0, MOE(16)));
    llm_rank_of(&s, 4, &r4);
    llm_rank_of(&s, 8, &r8);
    /* column-parallel (qkv with kv_heads >= tp, gate|up, experts, LM head) and row-parallel
     * (o, down): half the ranks, twice the weights per rank */
    CHECK_NEAR(r4.qkv, 2 * r8.qkv, 0, 1e-12);
    CHECK_NEAR(r4.o, 2 * r8.o, 0, 1e-12);
    CHECK_NEAR(r4.gu, 2 * r8.gu, 0, 1e-12);
    CHECK_NEAR(r4.down, 2 * r8.down, 0, 1e-12);
    CHECK_NEAR(r4.expert_gu, 2 * r8.expert_gu, 0, 1e-12);
    CHECK_NEAR(r4.shared_down, 2 * r8.shared_down, 0, 1e-12);
    CHECK_NEAR(r4.lm_head, 2 * r8.lm_head, 0, 1e-12);
    CHECK_NEAR(r4.kv_bytes_per_token, 2 * r8.kv_bytes_per_token, 0, 1e-12);
    /* replicated: the router; KV heads once there are fewer than ranks */
    CHECK_NEAR(r4.router, r8.router, 0, 1e-12);
    CHECK_NEAR(r8.router, 1024.0 * 64, 0, 1e-12);
    CHECK_NEAR(r8.expert_gu, 1024.0 * 2 * 512 / 8, 0, 1e-12);
    llm_rank_of(&s, 16, &r16);
    CHECK(r16.kv_heads == 1 && r8.kv_heads == 1 && r4.kv_heads == 2, "kv heads %g %g %g",
          r16.kv_heads, r8.kv_heads, r4.kv_heads);
    CHECK_NEAR(r16.kv_bytes_per_token, r8.kv_bytes_per_token, 0, 1e-12);
    CHECK_NEAR(r8.qkv, 1024.0 * (2 + 2 * 1) * 64, 0, 1e-12);   /* 2 q heads, 1 kv head */
    /* MLA: the latent KV and q_a/kv_a are on every rank */
    llm_shape k;
    load(&k, "models/presets/kimi-k2.5.json");
    llm_rank_of(&k, 8, &r8);
    llm_rank_of(&k, 4, &r4);
    CHECK_NEAR(r8.kv_bytes_per_token, (512 + 64) * 2.0, 0, 1e-12);
    CHECK_NEAR(r4.kv_bytes_per_token, r8.kv_bytes_per_token, 0, 1e-12);
    double rep = 7168.0 * 1536 + 7168.0 * (512 + 64);
    CHECK_NEAR(r4.qkv - rep, 2 * (r8.qkv - rep), 0, 1e-12);
    CHECK_NEAR(llm_expert_bits_eff(&k), 4.5, 0, 1e-12);
}

static void half_tp_doubles_a_column_gemm_above_its_floor(void)
{
    static wm_model m;
    scale_opts o;
    char err[1024];
    scale_opts_init(&o);
    load(&o.from, preset(0, DENSE(4)));
    load(&o.to, preset(1, DENSE(4)));
    o.tp_from = o.ranks_from = 8;
    o.tp_to = o.ranks_to = 4;
    model_init(&m, 0, 0);
    add(&m.phase[WM_VERIFY], "gemm", 17, 100);
    /* a sweep with the phase's five GEMM sites; gate|up 30 us at 1 token, 50 at 256,
     * 110 at 1024 (the others 10 us flat) */
    m.sweep.ntok = 3;
    m.sweep.tok[0] = 1, m.sweep.tok[1] = 256, m.sweep.tok[2] = 1024;
    const char *names[] = {"qkv", "o", "gu", "down", "lm_head"};
    double pf[] = {4, 4, 4, 4, 1};
    for (int i = 0; i < 5; i++) {
        wm_sweep_site *st = &m.sweep.site[m.sweep.nsite++];
        snprintf(st->name, sizeof st->name, "%s", names[i]);
        st->phases = 1u << WM_VERIFY;
        st->per_forward = pf[i];
        for (int k = 0; k < 3; k++)
            st->us[k] = 10 + k;
    }
    double *gu = m.sweep.site[2].us;
    gu[0] = 30, gu[1] = 50, gu[2] = 110;
    int rc = do_scale(&m, &o, err, sizeof err);
    CHECK(rc == 0, "%s", err);
    /* per call: the floor stays, the rest doubles (weights and FLOPs per rank both x2) */
    CHECK_NEAR(gu[0], SCALE_GEMM_FLOOR_US + (30 - SCALE_GEMM_FLOOR_US) * 2, 1e-9, 0);
    CHECK_NEAR(gu[1], SCALE_GEMM_FLOOR_US + (30 - SCALE_GEMM_FLOOR_US) * 2 + (50 - 30) * 2, 1e-9, 0);
    CHECK_NEAR(gu[2], 2 * 110 - SCALE_GEMM_FLOOR_US, 1e-9, 0);
    CHECK_NEAR(m.sweep.site[2].per_forward, 4, 0, 0);   /* same layers: same calls */
    /* the group: base from the sweep's shares at 1 token, the same rule per site */
    double sum_f = 4 * 10 * 4 + 30 * 4 + 10, sum_t = 0;
    for (int i = 0; i < 5; i++) {
        double us = i == 2 ? 30 : 10;
        sum_t += pf[i] * (SCALE_GEMM_FLOOR_US + (us - SCALE_GEMM_FLOOR_US) * 2);
    }
    (void)sum_f;
    CHECK_NEAR(m.phase[WM_VERIFY].groups[0].base_us, 100 * sum_t / (3 * 4 * 10 + 30 * 4 + 10), 1e-9, 1e-12);
    CHECK(m.ranks == 4, "ranks %d", m.ranks);
    CHECK(strstr(m.phase[WM_VERIFY].groups[0].source, "base x") != NULL, "source \"%s\"",
          m.phase[WM_VERIFY].groups[0].source);
}

static void int4_experts_quarter_their_memory_terms(void)
{
    static wm_model m;
    scale_opts o;
    char err[1024];
    scale_opts_init(&o);
    load(&o.from, preset(0, MOE(16)));
    load(&o.to, preset(1, MOE(4)));
    model_init(&m, 64, 4);
    wm_group *g = add(&m.phase[WM_VERIFY], "gemm", 20, 0);
    g->per_expert_us = 10;
    g->per_wave_us = 5;
    g->wave_capacity = 100;
    g->wave_blocks_per_expert = 8;
    g->per_token_us = 0.5;          /* compute above the knee: not bytes */
    g->knee_tokens = 64;
    int rc = do_scale(&m, &o, err, sizeof err);
    CHECK(rc == 0, "%s", err);
    CHECK_NEAR(g->per_expert_us, 10 * 0.25, 1e-12, 0);
    CHECK_NEAR(g->per_wave_us, 5 * 0.25, 1e-12, 0);
    CHECK_NEAR(g->wave_blocks_per_expert, 8, 0, 0);
    CHECK_NEAR(g->per_token_us, 0.5, 1e-12, 0);
    CHECK(strstr(g->source, "expert x0.25+-40%") != NULL, "source \"%s\"", g->source);
    /* a group scale of 32 weights per bf16 scale: 4.5 bits */
    static wm_model m2;
    model_init(&m2, 64, 4);
    wm_group *g2 = add(&m2.phase[WM_VERIFY], "gemm", 20, 0);
    g2->per_expert_us = 10;
    load(&o.to, preset(2, "{\"specsim_preset\":\"llm\",\"name\":\"q\",\"layers\":4,\"dense_layers\":1,"
         "\"hidden\":1024,\"heads\":16,\"kv_heads\":8,\"head_dim\":64,\"dense_intermediate\":4096,"
         "\"moe\":{\"experts\":64,\"topk\":4,\"shared_experts\":1,\"intermediate\":512},"
         "\"vocab\":32000,\"expert_weight_bits\":4,\"expert_quant_group\":32}"));
    rc = do_scale(&m2, &o, err, sizeof err);
    CHECK(rc == 0, "%s", err);
    CHECK_NEAR(g2->per_expert_us, 10 * 4.5 / 16, 1e-12, 0);
    /* a routed expert's sweep site: its weights (flat part at 1 token) a quarter, the
     * compute past it kept */
    static wm_model m3;
    model_init(&m3, 64, 4);
    add(&m3.phase[WM_VERIFY], "gemm", 20, 0)->per_expert_us = 1;
    m3.sweep.ntok = 2;
    m3.sweep.tok[0] = 1, m3.sweep.tok[1] = 1024;
    wm_sweep_site *st = &m3.sweep.site[m3.sweep.nsite++];
    snprintf(st->name, sizeof st->name, "moe_gu");
    st->phases = 1u << WM_VERIFY;
    st->per_forward = 3;
    st->us[0] = 40, st->us[1] = 900;
    load(&o.to, preset(1, MOE(4)));
    rc = do_scale(&m3, &o, err, sizeof err);
    CHECK(rc == 0, "%s", err);
    double e1 = 64 * (1 - pow(1 - 4.0 / 64, 1)), e1024 = 64 * (1 - pow(1 - 4.0 / 64, 1024));
    double mem1024 = fmin(900, 40 * e1024 / e1);
    CHECK_NEAR(st->us[0], SCALE_GEMM_FLOOR_US + (40 - SCALE_GEMM_FLOOR_US) * 0.25, 1e-9, 0);
    CHECK_NEAR(st->us[1], SCALE_GEMM_FLOOR_US + (mem1024 - SCALE_GEMM_FLOOR_US) * 0.25 + (900 - mem1024),
               1e-9, 0);
}

static void layers_multiply_per_layer_groups_only(void)
{
    static wm_model m;
    scale_opts o;
    char err[1024];
    scale_opts_init(&o);
    load(&o.from, preset(0, DENSE(4)));
    load(&o.to, preset(1, DENSE(8)));
    model_init(&m, 0, 0);
    wm_phase_model *v = &m.phase[WM_VERIFY];
    wm_group *norm = add(v, "L0 k_add_rmsnorm", 8, 16);       /* 2 per layer */
    norm->per_token_us = 0.1;
    wm_group *fin = add(v, "k_rmsnorm", 9, 18);               /* 2 per layer + the final */
    wm_group *attn = add(v, "k_attn_split", 4, 8);
    attn->per_kv_ktoken_us = 2;
    wm_group *emb = add(v, "k_embed", 1, 3);                  /* once per forward */
    wm_group *gemm = add(v, "gemm", 17, 100);                 /* 4 per layer + LM head */
    wm_group *idle = add(v, "(gpu idle in phase)", 1, 40);
    int rc = do_scale(&m, &o, err, sizeof err);
    CHECK(rc == 0, "%s", err);
    CHECK(norm->count == 16 && fin->count == 17 && attn->count == 8 && emb->count == 1,
          "counts %d %d %d %d", norm->count, fin->count, attn->count, emb->count);
    CHECK_NEAR(norm->base_us, 32, 1e-12, 0);
    CHECK_NEAR(norm->per_token_us, 0.2, 1e-12, 0);
    CHECK_NEAR(fin->base_us, 18.0 * 17 / 9, 1e-12, 0);
    CHECK_NEAR(attn->base_us, 16, 1e-12, 0);
    CHECK_NEAR(attn->per_kv_ktoken_us, 4, 1e-12, 0);
    CHECK_NEAR(emb->base_us, 3, 0, 0);
    CHECK(emb->source[0] == 0, "per-forward group got a source: %s", emb->source);
    CHECK(m.phase[WM_ACCEPT].groups[0].base_us == 5, "accept argmax %g", m.phase[WM_ACCEPT].groups[0].base_us);
    /* the GEMMs: 4 per layer double, the LM head (once) does not: less than x2 */
    CHECK(gemm->count == 33, "gemm count %d", gemm->count);
    CHECK(gemm->base_us > 100 && gemm->base_us < 200, "gemm base %g", gemm->base_us);
    /* GPU idle: with the phase's launches (its kernel boundaries) */
    double n_f = 8 + 9 + 4 + 1 + 17, n_t = 16 + 17 + 8 + 1 + 33;
    CHECK_NEAR(idle->base_us, 40 * n_t / n_f, 1e-9, 0);
}

static void collectives_follow_the_preset(void)
{
    static wm_model m;
    scale_opts o;
    char err[1024];
    scale_opts_init(&o);
    load(&o.from, "models/presets/specbench-kimi-tp8.json");
    load(&o.to, "models/presets/kimi-k2.5.json");
    o.tp_from = 8, o.ranks_from = 1, o.tp_to = o.ranks_to = 8;
    model_init(&m, 384, 8);
    m.phase[WM_DRAFT].present = 1;
    m.phase[WM_EXTEND].present = 1;
    add(&m.phase[WM_VERIFY], "gemm", 100, 10);
    int rc = do_scale(&m, &o, err, sizeof err);
    CHECK(rc == 0, "%s", err);
    const wm_phase_model *v = &m.phase[WM_VERIFY];
    CHECK(v->ncolls == 2, "ncolls %d", v->ncolls);
    CHECK(strcmp(v->colls[0].op, "allreduce") == 0 && v->colls[0].count == 2 * 61 &&
          v->colls[0].bytes_per_token == 7168 * 2, "allreduce %s %d %g", v->colls[0].op,
          v->colls[0].count, v->colls[0].bytes_per_token);
    CHECK(strcmp(v->colls[1].op, "allgather") == 0 && v->colls[1].bytes_per_token == 163840 * 2,
          "allgather %s %g", v->colls[1].op, v->colls[1].bytes_per_token);
    CHECK(m.phase[WM_DRAFT].ncolls == 2 && m.phase[WM_DRAFT].colls[0].count == 2, "draft %d",
          m.phase[WM_DRAFT].ncolls);
    CHECK(m.phase[WM_EXTEND].ncolls == 1, "extend %d", m.phase[WM_EXTEND].ncolls);
    CHECK(m.phase[WM_ACCEPT].ncolls == 0, "accept %d", m.phase[WM_ACCEPT].ncolls);
    /* another layer count: 2 per layer; the preset's own count is for 61 */
    static wm_model m2;
    model_init(&m2, 384, 8);
    add(&m2.phase[WM_VERIFY], "gemm", 100, 10);
    o.to.layers = 30;
    o.to.allreduces_per_forward = 0;
    rc = do_scale(&m2, &o, err, sizeof err);
    CHECK(rc == 0 && m2.phase[WM_VERIFY].colls[0].count == 60, "count %d (%s)",
          m2.phase[WM_VERIFY].colls[0].count, err);
    /* one rank alone (specbench --gpus 1), or TP 1: no collectives */
    static wm_model m3;
    model_init(&m3, 384, 8);
    add(&m3.phase[WM_VERIFY], "gemm", 100, 10);
    o.ranks_to = 1;
    rc = do_scale(&m3, &o, err, sizeof err);
    CHECK(rc == 0 && m3.phase[WM_VERIFY].ncolls == 0 && m3.ranks == 1, "ncolls %d ranks %d",
          m3.phase[WM_VERIFY].ncolls, m3.ranks);
}

/* The committed kimi-tp8 model's shape to itself: every cost the same. */
static void the_same_shape_is_the_identity(void)
{
    static wm_model m, before;
    char err[1024];
    int rc = wm_load(&m, "models/example-llama8b.json", err, sizeof err);
    CHECK(rc == 0, "%s", err);
    before = m;
    scale_opts o;
    scale_opts_init(&o);
    load(&o.from, "models/presets/llama-3.1-8b.json");
    o.to = o.from;
    rc = do_scale(&m, &o, err, sizeof err);
    CHECK(rc == 0, "%s", err);
    for (int p = 0; p < WM_NPHASE; p++) {
        if (!m.phase[p].present)
            continue;
        for (double t = 1; t <= 1024; t *= 4)
            CHECK_NEAR(wm_phase_gpu_us(&m, p, t, 1000 * t), wm_phase_gpu_us(&before, p, t, 1000 * t),
                       1e-9, 1e-12);
        for (int i = 0; i < m.phase[p].ngroups; i++)
            CHECK(m.phase[p].groups[i].count == before.phase[p].groups[i].count &&
                  m.phase[p].groups[i].source[0] == 0, "%s: %s", m.phase[p].groups[i].name,
                  m.phase[p].groups[i].source);
    }
}

static void bounds_bracket_the_nominal(void)
{
    static wm_model base, mid, lo, hi;
    char err[1024];
    int rc = wm_load(&base, "models/example-llama8b.json", err, sizeof err);
    CHECK(rc == 0, "%s", err);
    scale_opts o;
    scale_opts_init(&o);
    load(&o.from, "models/presets/llama-3.1-8b.json");
    load(&o.to, "models/presets/llama-3.1-70b.json");
    o.tp_to = o.ranks_to = 8;
    mid = lo = hi = base;
    rc = do_scale(&mid, &o, err, sizeof err);
    o.bound = -1;
    rc |= do_scale(&lo, &o, err, sizeof err);
    o.bound = 1;
    rc |= do_scale(&hi, &o, err, sizeof err);
    CHECK(rc == 0, "%s", err);
    for (int p = 0; p < WM_NPHASE; p++) {
        if (!mid.phase[p].present)
            continue;
        for (double t = 1; t <= 1024; t *= 8) {
            double a = wm_phase_gpu_us(&lo, p, t, 1000 * t), b = wm_phase_gpu_us(&mid, p, t, 1000 * t),
                   c = wm_phase_gpu_us(&hi, p, t, 1000 * t);
            CHECK(a <= b + 1e-9 && b <= c + 1e-9, "%s at %g: %g %g %g", wm_phase_name[p], t, a, b, c);
        }
    }
    CHECK(wm_phase_gpu_us(&hi, WM_VERIFY, 1, 0) > wm_phase_gpu_us(&lo, WM_VERIFY, 1, 0) * 1.05,
          "no band: %g %g", wm_phase_gpu_us(&lo, WM_VERIFY, 1, 0), wm_phase_gpu_us(&hi, WM_VERIFY, 1, 0));
    /* 70B at TP 8 over 8B at TP 1: more per-rank work per layer (8192^2/8 vs 4096^2) is
     * less, but 80 layers against 32 */
    CHECK(strstr(mid.source, "scaled llama-3.1-8b tp1") == mid.source, "source %s", mid.source);
    CHECK(mid.ranks == 8 && mid.phase[WM_VERIFY].ncolls == 2 &&
          mid.phase[WM_VERIFY].colls[0].count == 160, "ranks %d colls %d", mid.ranks,
          mid.phase[WM_VERIFY].ncolls);
}

static void kinds_come_from_the_kernel_names(void)
{
    const char *cases[][2] = {
        {"gemm", "gemm"}, {"L3 gemm", "gemm"}, {"k_attn_split", "attention"},
        {"k_attn_combine", "attention"}, {"BatchDecodeWithPagedKVCacheKernel", "attention"},
        {"k_rope_append", "rope"}, {"k_add_rmsnorm", "norm"}, {"k_norm_cat", "norm"},
        {"k_silu_mul", "activation"}, {"k_moe_combine", "moe-token"}, {"k_route", "moe-token"},
        {"fused_moe_kernel", "expert-gemm"}, {"k_embed", "embedding"}, {"k0 k_argmax", "sampling"},
        {"k_accept_greedy", "small"}, {"(copies)", "copies"}, {"(gpu idle in phase)", "gpu-idle"},
        {"mystery_kernel", "unknown"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK(strcmp(scale_kind_name(cases[i][0]), cases[i][1]) == 0, "%s -> %s, expected %s",
              cases[i][0], scale_kind_name(cases[i][0]), cases[i][1]);
    /* an unknown group is scaled by its layer scope and counted */
    static wm_model m;
    scale_opts o;
    scale_summary s;
    char err[1024];
    scale_opts_init(&o);
    load(&o.from, preset(0, DENSE(4)));
    load(&o.to, preset(1, DENSE(8)));
    model_init(&m, 0, 0);
    wm_group *g = add(&m.phase[WM_VERIFY], "mystery_kernel", 4, 10);
    int rc = scale_model(&m, &o, &s, err, sizeof err);
    CHECK(rc == 0 && s.groups_unknown == 1 && strstr(s.unknown, "mystery_kernel"), "%d %s",
          s.groups_unknown, s.unknown);
    CHECK_NEAR(g->base_us, 20, 1e-12, 0);
}

static void bad_shapes_are_refused(void)
{
    static wm_model m;
    scale_opts o;
    char err[1024];
    scale_opts_init(&o);
    load(&o.from, preset(0, DENSE(4)));
    load(&o.to, preset(1, MOE(4)));
    model_init(&m, 0, 0);
    add(&m.phase[WM_VERIFY], "gemm", 17, 100);
    CHECK(do_scale(&m, &o, err, sizeof err) < 0 && strstr(err, "field moe.experts"), "%s", err);
    load(&o.to, preset(1, DENSE(4)));
    o.tp_to = o.ranks_to = 3;                              /* 16 heads */
    CHECK(do_scale(&m, &o, err, sizeof err) < 0 && strstr(err, "field heads: value 16"), "%s", err);
    o.tp_to = o.ranks_to = 2;
    o.ranks_to = 4;                                        /* more processes than TP */
    CHECK(do_scale(&m, &o, err, sizeof err) < 0 && strstr(err, "ranks"), "%s", err);
    /* the model's experts must be the traced preset's */
    load(&o.from, preset(0, MOE(16)));
    load(&o.to, preset(1, MOE(4)));
    o.tp_to = o.ranks_to = 1;
    model_init(&m, 128, 4);
    add(&m.phase[WM_VERIFY], "gemm", 17, 100);
    CHECK(do_scale(&m, &o, err, sizeof err) < 0 && strstr(err, "field moe: value 128"), "%s", err);
    /* presets: the field and value named */
    llm_shape s;
    CHECK(llm_load(&s, preset(2, "{\"specsim_preset\":\"llm\",\"layers\":4,\"hidden\":-1}"), err,
                   sizeof err) < 0 && strstr(err, "field hidden: value -1"), "%s", err);
    CHECK(llm_load(&s, preset(2, "{\"specsim_preset\":\"llm\",\"layers\":4,\"hidden\":64,\"heads\":4,"
                   "\"vocab\":10,\"dense_intermediate\":64,\"attention\":{\"kind\":\"mqa\"}}"), err, sizeof err) < 0 &&
          strstr(err, "field attention.kind"), "%s", err);
    CHECK(llm_load(&s, "models/presets/h200-sxm.json", err, sizeof err) < 0 &&
          strstr(err, "not an LLM preset"), "%s", err);
    CHECK(llm_load(&s, "no-such-preset", err, sizeof err) < 0 && strstr(err, "cannot open"), "%s", err);
}

/* The scaled groups' sources are model fields: written, read back, length-checked. */
static void group_sources_round_trip(void)
{
    static wm_model m, back;
    scale_opts o;
    char err[1024], path[128];
    scale_opts_init(&o);
    load(&o.from, preset(0, DENSE(4)));
    load(&o.to, preset(1, DENSE(8)));
    model_init(&m, 0, 0);
    add(&m.phase[WM_VERIFY], "k_attn_split", 4, 8);
    int rc = do_scale(&m, &o, err, sizeof err);
    CHECK(rc == 0, "%s", err);
    snprintf(path, sizeof path, "%s/m.json", tmpdir);
    CHECK(wm_save(&m, path, err, sizeof err) == 0, "%s", err);
    CHECK(wm_load(&back, path, err, sizeof err) == 0, "%s", err);
    CHECK(strcmp(back.phase[WM_VERIFY].groups[0].source, m.phase[WM_VERIFY].groups[0].source) == 0 &&
          strstr(back.phase[WM_VERIFY].groups[0].source, "count 4->8, base x2+-3%"), "\"%s\"",
          back.phase[WM_VERIFY].groups[0].source);
    CHECK(back.phase[WM_ACCEPT].groups[0].source[0] == 0, "accept source \"%s\"",
          back.phase[WM_ACCEPT].groups[0].source);
    char big[600], json[900];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = 0;
    snprintf(json, sizeof json, "{\"specsim_model\":1,\"name\":\"t\",\"phases\":{\"verify\":{\"groups\":"
             "[{\"name\":\"g\",\"count\":1,\"base_us\":1,\"source\":\"%s\"}]},\"accept\":{\"groups\":[]}}}", big);
    CHECK(wm_parse(&back, json, "t.json", err, sizeof err) < 0 &&
          strstr(err, "field phases.verify.groups[0].source"), "%s", err);
    unlink(path);
}

/* The what-ifs: a kind's groups (and their sweep term) times F, attention per phase,
 * phases made eager; the rest untouched. */
static void what_ifs_touch_their_groups_only(void)
{
    static wm_model m;
    scale_opts o;
    char err[1024];
    scale_opts_init(&o);
    load(&o.from, preset(0, DENSE(4)));
    o.to = o.from;
    model_init(&m, 0, 0);
    m.phase[WM_DECODE] = m.phase[WM_VERIFY];
    m.phase[WM_DECODE].present = 1;
    wm_group *va = add(&m.phase[WM_VERIFY], "k_attn_split", 4, 10);
    wm_group *vn = add(&m.phase[WM_VERIFY], "k_add_rmsnorm", 8, 16);
    wm_group *vg = add(&m.phase[WM_VERIFY], "gemm", 17, 0);
    vg->sweep_scale = 0.9;
    vg->sweep_phase = WM_VERIFY;
    wm_group *da = add(&m.phase[WM_DECODE], "k_attn_split", 4, 10);
    o.attn_x[WM_VERIFY] = 3;
    o.kind_x[scale_kind_find("norm")] = 0.5;
    o.kind_x[scale_kind_find("gemm")] = 2;
    o.eager_phases = 1u << WM_VERIFY;
    o.host_add_us[WM_VERIFY] = 250;
    m.phase[WM_VERIFY].host_gap_us = 20;
    int rc = do_scale(&m, &o, err, sizeof err);
    CHECK(rc == 0, "%s", err);
    CHECK_NEAR(va->base_us, 30, 1e-12, 0);
    CHECK_NEAR(da->base_us, 10, 1e-12, 0);
    CHECK_NEAR(vn->base_us, 8, 1e-12, 0);
    CHECK_NEAR(vg->sweep_scale, 1.8, 1e-12, 0);
    CHECK_NEAR(m.phase[WM_ACCEPT].groups[0].base_us, 5, 0, 0);
    CHECK(m.phase[WM_VERIFY].always_eager && !m.phase[WM_DECODE].always_eager, "eager %d %d",
          m.phase[WM_VERIFY].always_eager, m.phase[WM_DECODE].always_eager);
    CHECK(strstr(va->source, "x3 (what-if)") != NULL, "source %s", va->source);
    CHECK_NEAR(m.phase[WM_VERIFY].host_gap_us, 270, 1e-12, 0);
    CHECK_NEAR(m.phase[WM_DECODE].host_gap_us, 0, 0, 0);
    CHECK(da->source[0] == 0, "decode attention got a source: %s", da->source);
}

/* The command: writes a loadable model and says what it did; bad input exits 2 naming the
 * field. */
static void scale_command_writes_and_refuses(void)
{
    const char *out;
    char args[1024], path[128];
    snprintf(path, sizeof path, "%s/cli.json", tmpdir);
    snprintf(args, sizeof args, "scale models/example-llama8b.json --from llama-3.1-8b --llm "
             "llama-3.1-70b --tp 8 --carry-to rtx-pro-6000 -o %s", path);
    int rc = cli(args, &out);
    CHECK(rc == 0, "exit %d: %s", rc, out);
    CHECK(strstr(out, "# to           llama-3.1-70b") && strstr(out, "# carried      h200-sxm") &&
          strstr(out, "collective allreduce: 160 per forward, 16384 bytes per token") &&
          strstr(out, "# wrote "), "%s", out);
    static wm_model m;
    char err[512];
    CHECK(wm_load(&m, path, err, sizeof err) == 0 && m.ranks == 8, "%s (ranks %d)", err, m.ranks);
    CHECK(strstr(m.source, "carried h200-sxm -> rtx-pro-6000") && strstr(m.source, "scaled llama-3.1-8b"),
          "source %s", m.source);
    unlink(path);
    const char *bad[][2] = {
        {"scale models/example-llama8b.json --from llama-3.1-8b -o /dev/null", "field --llm"},
        {"scale models/example-llama8b.json --from llama-3.1-8b --llm kimi-k2.5 -o /dev/null", "field moe.experts"},
        {"scale models/example-llama8b.json --from llama-3.1-8b --llm llama-3.1-8b --tp 3 -o /dev/null", "field heads: value 32"},
        {"scale models/example-llama8b.json --from nope --llm llama-3.1-8b -o /dev/null", "field --from"},
        {"scale models/example-llama8b.json --from llama-3.1-8b --llm llama-3.1-8b --bound mid -o /dev/null", "field --bound"},
        {"scale models/example-llama8b.json --from llama-3.1-8b --llm llama-3.1-8b --kind-x nrm=2 -o /dev/null", "field --kind-x"},
        {"scale models/example-llama8b.json --from llama-3.1-8b --llm llama-3.1-8b --eager verfy -o /dev/null", "field --eager"},
        /* a scaled value out of range: refused by the writer (once exit 1, a write error) */
        {"scale models/example-llama8b.json --from llama-3.1-8b --llm llama-3.1-8b --layers 100000 -o /dev/null", "count: value"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rc = cli(bad[i][0], &out);
        CHECK(rc == 2 && strstr(out, bad[i][1]), "%s: exit %d, expected 2 and \"%s\": %s", bad[i][0],
              rc, bad[i][1], out);
    }
    CHECK(cli("scale --help", &out) == 0 && strstr(out, "usage: specsim scale"), "%s", out);
}

/* Every committed LLM preset loads and cuts into its TP sizes. */
static void committed_presets_load(void)
{
    const char *names[] = {"kimi-k2.5", "glm-5", "llama-3.1-8b", "llama-3.1-70b",
                           "specbench-kimi-tp8", "specbench-llama8b"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        llm_shape s;
        char err[512];
        int rc = llm_load(&s, names[i], err, sizeof err);
        CHECK(rc == 0, "%s: %s", names[i], err);
        if (rc == 0)
            CHECK(llm_check_tp(&s, 8, err, sizeof err) == 0, "%s at TP 8: %s", names[i], err);
    }
}

int main(int argc, char **argv)
{
    (void)argc;
    specsim_bin_find(argv[0], specsim, sizeof specsim);
    snprintf(tmpdir, sizeof tmpdir, "/tmp/test_scale.XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    RUN(llm_rank_splits_the_way_tp_does);
    RUN(half_tp_doubles_a_column_gemm_above_its_floor);
    RUN(int4_experts_quarter_their_memory_terms);
    RUN(layers_multiply_per_layer_groups_only);
    RUN(collectives_follow_the_preset);
    RUN(the_same_shape_is_the_identity);
    RUN(bounds_bracket_the_nominal);
    RUN(kinds_come_from_the_kernel_names);
    RUN(bad_shapes_are_refused);
    RUN(group_sources_round_trip);
    RUN(what_ifs_touch_their_groups_only);
    RUN(committed_presets_load);
    RUN(scale_command_writes_and_refuses);
    for (int i = 0; i < 8; i++) {
        char p[128];
        snprintf(p, sizeof p, "%s/p%d.json", tmpdir, i);
        unlink(p);
    }
    rmdir(tmpdir);
    return check_done();
}
