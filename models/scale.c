/* scale: a fitted workload model moved to another model shape, TP size and weight format
 * (scale.h; the rules, their sources and what is approximated: docs/scale.md). Each kernel
 * group gets a kind from its name (a table), a layer scope from its launch count (so many
 * per dense layer, per MoE layer, per forward) and, per term of its cost equation, a factor:
 * GEMM groups from the GEMM sites a rank runs (weights as TP cuts them, a per-call floor kept),
 * attention from the rank's heads and KV bytes, element-wise kernels from their row widths.
 * Workload: one model, tens of groups per phase, a couple of dozen GEMM-sweep sites. */
#include "scale.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum scale_kind {
    SK_GEMM, SK_EXPERT_GEMM, SK_ATTN, SK_ROPE, SK_NORM, SK_ACT, SK_MOE_TOKEN, SK_EMBED,
    SK_SAMPLE, SK_SMALL, SK_COPY, SK_IDLE, SK_OTHER, SK_NKIND
};
_Static_assert(SK_NKIND == SCALE_NKINDS, "scale.h's SCALE_NKINDS is the kind count");
static const char *const scale_kind_names[SK_NKIND] = {
    "gemm", "expert-gemm", "attention", "rope", "norm", "activation", "moe-token", "embedding",
    "sampling", "small", "copies", "gpu-idle", "unknown",
};

/* Kernel kinds by a substring of the group name (first match wins, case-insensitive):
 * specbench's kernels (profiler/bench) and the common SGLang/FlashInfer/Triton ones. */
static const struct { const char *pat; int kind; } scale_kinds[] = {
    {"(gpu idle", SK_IDLE}, {"(copies)", SK_COPY},
    {"fused_moe", SK_EXPERT_GEMM}, {"marlin_moe", SK_EXPERT_GEMM}, {"moe_wna16", SK_EXPERT_GEMM},
    {"moe_gemm", SK_EXPERT_GEMM}, {"grouped_gemm", SK_EXPERT_GEMM},
    {"gemm", SK_GEMM}, {"lm_head", SK_GEMM}, {"gemv", SK_GEMM}, {"xmma", SK_GEMM}, {"nvjet", SK_GEMM},
    {"cutlass", SK_GEMM}, {"cublas", SK_GEMM}, {"splitkreduce", SK_GEMM},
    {"attn", SK_ATTN}, {"attention", SK_ATTN}, {"flash", SK_ATTN}, {"fmha", SK_ATTN},
    {"mla", SK_ATTN}, {"_fwd_kernel", SK_ATTN}, {"paged", SK_ATTN},
    {"rope", SK_ROPE}, {"rotary", SK_ROPE},
    {"norm", SK_NORM},
    {"silu", SK_ACT}, {"gelu", SK_ACT}, {"act_and_mul", SK_ACT}, {"swiglu", SK_ACT},
    {"act_mul", SK_ACT},
    {"moe", SK_MOE_TOKEN}, {"route", SK_MOE_TOKEN}, {"permute", SK_MOE_TOKEN},
    {"scan", SK_MOE_TOKEN}, {"topk_softmax", SK_MOE_TOKEN}, {"align_block", SK_MOE_TOKEN},
    {"expert", SK_MOE_TOKEN},
    {"embed", SK_EMBED},
    {"accept", SK_SMALL}, {"copy_cols", SK_SMALL}, {"gather", SK_SMALL},
    {"next_pending", SK_SMALL}, {"bump", SK_SMALL}, {"_small", SK_SMALL},
    {"argmax", SK_SAMPLE}, {"sampl", SK_SAMPLE}, {"softmax", SK_SAMPLE}, {"topk", SK_SAMPLE},
    {"top_k", SK_SAMPLE}, {"logit", SK_SAMPLE},
};

/* The group name without the fit's position prefix ("L3 ", "k0 ", "h1 ", ...). */
static const char *scale_bare(const char *name)
{
    if (strchr("khtLps", name[0]) && name[1] >= '0' && name[1] <= '9') {
        const char *p = name + 1;
        while (*p >= '0' && *p <= '9')
            p++;
        if (*p == ' ')
            return p + 1;
    }
    return name;
}

static int scale_kind(const char *group)
{
    const char *b = scale_bare(group);
    for (size_t i = 0; i < sizeof scale_kinds / sizeof scale_kinds[0]; i++) {
        const char *pat = scale_kinds[i].pat;
        size_t n = strlen(pat);
        for (const char *p = b; *p; p++)
            if (strncasecmp(p, pat, n) == 0)
                return scale_kinds[i].kind;
    }
    return SK_OTHER;
}

const char *scale_kind_name(const char *group)
{
    return scale_kind_names[scale_kind(group)];
}

const char *scale_kind_label(int kind)
{
    return kind >= 0 && kind < SK_NKIND ? scale_kind_names[kind] : "?";
}

int scale_kind_find(const char *kind)
{
    for (int k = 0; k < SK_NKIND; k++)
        if (strcmp(scale_kind_names[k], kind) == 0)
            return k;
    return -1;
}

void scale_opts_init(scale_opts *o)
{
    memset(o, 0, sizeof *o);
    o->tp_from = o->tp_to = o->ranks_from = o->ranks_to = 1;
    for (int p = 0; p < WM_NPHASE; p++)
        o->attn_x[p] = 1;
    for (int k = 0; k < SCALE_NKINDS; k++)
        o->kind_x[k] = 1;
}

/* ---- layer counts and scopes ------------------------------------------------------------- */

typedef struct { double dense, moe, all; } scale_layers;

static scale_layers scale_layers_of(const llm_shape *s)
{
    scale_layers l;
    l.moe = llm_moe_layers(s);
    l.dense = s->layers - l.moe;
    l.all = s->layers;
    return l;
}

/* launches per dense layer (a), per MoE layer (b), per forward (f) */
typedef struct { int a, b, f, found; } scale_scope;

/* Splits a group's launch count into a*dense + b*moe + f, preferring no per-forward rest,
 * then the same launches in every kind of layer, then the fewest. */
static scale_scope scale_scope_of(int count, int kind, int target, const scale_layers *l)
{
    scale_scope s = {0, 0, count, 1}, best = {0, 0, count, 0};
    int D = (int)l->dense, M = (int)l->moe, L = D + M;
    if (!target || kind == SK_EMBED || kind == SK_SAMPLE || kind == SK_SMALL)
        return s;
    if ((kind == SK_MOE_TOKEN || kind == SK_EXPERT_GEMM) && M > 0 && count % M == 0)
        return (scale_scope){0, count / M, 0, 1};
    if (count < 4 && count < L)
        return s;
    int amax = D > 0 ? count / D : 0, bmax = M > 0 ? count / M : 0;
    if (amax > 64) amax = 64;
    if (bmax > 64) bmax = 64;
    long bestkey = -1;
    for (int a = 0; a <= amax; a++)
        for (int b = 0; b <= bmax; b++) {
            int f = count - a * D - b * M;
            if (f < 0 || f > 3 || (a == 0 && b == 0))
                continue;
            long key = (long)(f > 0) * 1000000 + (long)abs(a - b) * 1000 + (a + b);
            if (bestkey < 0 || key < bestkey) {
                bestkey = key;
                best = (scale_scope){a, b, f, 1};
            }
        }
    return best.found ? best : (scale_scope){0, 0, count, 0};
}

static double scale_launches(const scale_scope *s, const scale_layers *l)
{
    return s->a * l->dense + s->b * l->moe + s->f;
}

/* ---- GEMM sites ------------------------------------------------------------------------- */

enum { SC_ALL, SC_DENSE, SC_MOE, SC_ONCE };
typedef struct {
    const char *name;
    int scope;
    int draft;             /* 1: the EAGLE-3 head (draft, extend) */
    int expert;            /* 1: one routed expert's GEMM (per expert touched) */
    int extend_only;       /* 1: runs in extend, not in the draft chain (the fc of features) */
    size_t off;            /* its parameters in llm_rank */
} scale_site;

/* The GEMMs of a rank (specbench --gemm-sweep's site names, profiler/bench/sbgemm.cu). */
static const scale_site scale_sites[] = {
    {"qkv", SC_ALL, 0, 0, 0, offsetof(llm_rank, qkv)},
    {"o", SC_ALL, 0, 0, 0, offsetof(llm_rank, o)},
    {"gu", SC_DENSE, 0, 0, 0, offsetof(llm_rank, gu)},
    {"down", SC_DENSE, 0, 0, 0, offsetof(llm_rank, down)},
    {"router", SC_MOE, 0, 0, 0, offsetof(llm_rank, router)},
    {"shared_gu", SC_MOE, 0, 0, 0, offsetof(llm_rank, shared_gu)},
    {"shared_down", SC_MOE, 0, 0, 0, offsetof(llm_rank, shared_down)},
    {"lm_head", SC_ONCE, 0, 0, 0, offsetof(llm_rank, lm_head)},
    {"moe_gu", SC_MOE, 0, 1, 0, offsetof(llm_rank, expert_gu)},
    {"moe_down", SC_MOE, 0, 1, 0, offsetof(llm_rank, expert_down)},
    {"d_fc", SC_ONCE, 1, 0, 1, offsetof(llm_rank, d_fc)},
    {"d_qkv", SC_ONCE, 1, 0, 0, offsetof(llm_rank, d_qkv)},
    {"d_o", SC_ONCE, 1, 0, 0, offsetof(llm_rank, d_o)},
    {"d_gu", SC_ONCE, 1, 0, 0, offsetof(llm_rank, d_gu)},
    {"d_down", SC_ONCE, 1, 0, 0, offsetof(llm_rank, d_down)},
    {"d_lm_head", SC_ONCE, 1, 0, 0, offsetof(llm_rank, d_lm_head)},
};
#define SCALE_NSITE (sizeof scale_sites / sizeof scale_sites[0])

static double scale_site_params(const scale_site *s, const llm_rank *r)
{
    return *(const double *)((const char *)r + s->off);
}

static double scale_site_calls(const scale_site *s, const scale_layers *l)
{
    switch (s->scope) {
    case SC_ALL: return l->all;
    case SC_DENSE: return l->dense;
    case SC_MOE: return l->moe;
    default: return 1;
    }
}

/* A GEMM group named for some of the sites (hand-written models split them by role:
 * models/example-llama8b.json's qkv_o_gemm, mlp_gemm, lm_head_gemm) prices those only;
 * a fitted "gemm" group holds every GEMM of its phase. */
static const struct { const char *tag; const char *sites; } scale_roles[] = {
    {"lm_head", " lm_head d_lm_head "}, {"qkv", " qkv o d_qkv d_o "},
    {"mlp", " gu down router shared_gu shared_down moe_gu moe_down d_gu d_down "},
    {"fc_gemm", " d_fc "},
};

static int scale_site_in_group(const scale_site *s, const char *group)
{
    const char *b = scale_bare(group);
    for (size_t i = 0; i < sizeof scale_roles / sizeof scale_roles[0]; i++)
        if (strstr(b, scale_roles[i].tag)) {
            char w[32];
            snprintf(w, sizeof w, " %s ", s->name);
            return strstr(scale_roles[i].sites, w) != NULL;
        }
    return 1;
}

/* Everything one scaling needs, computed once. */
typedef struct {
    const scale_opts *o;
    llm_rank rf, rt;
    scale_layers lf, lt;
    double bits_f, bits_t, ebits_f, ebits_t;   /* weights, routed experts */
    int    shape_same;                         /* 1: the from and to ranks are the same */
} scale_ctx;

static int scale_ne(double a, double b) { return fabs(a - b) > 1e-9 * (fabs(a) + fabs(b) + 1e-300); }
static double scale_ratio(double to, double from) { return from > 0 ? to / from : 1; }
static double scale_rss(double a, double b) { return sqrt(a * a + b * b); }

/* Experts that `tokens` tokens touch, each routed to k of E (wm_experts_touched). */
static double scale_touched(double E, double k, double tokens)
{
    return E > 0 ? E * (1 - pow(1 - k / E, tokens)) : 0;
}

/* The model's sweep site of this name that runs in phase p, or NULL. */
static const wm_sweep_site *scale_sweep_site(const wm_model *m, const char *name, int p)
{
    for (int i = 0; i < m->sweep.nsite; i++)
        if (strcmp(m->sweep.site[i].name, name) == 0 && (m->sweep.site[i].phases & (1u << p)))
            return &m->sweep.site[i];
    return NULL;
}

/* A site's slope (us per token) from the sweep between ~256 tokens and the last count up to
 * 1024 (past the knee, every expert touched): the compute part. 0 when not measurable. */
static double scale_sweep_slope(const wm_model *m, const wm_sweep_site *st)
{
    int lo = -1, hi = -1;
    for (int i = 0; i < m->sweep.ntok; i++) {
        if (lo < 0 && m->sweep.tok[i] >= 256)
            lo = i;
        if (m->sweep.tok[i] <= 1024)
            hi = i;
    }
    if (lo < 0 || hi <= lo)
        return 0;
    double s = (st->us[hi] - st->us[lo]) / (m->sweep.tok[hi] - m->sweep.tok[lo]);
    return s > 0 ? s : 0;
}

/* A GEMM's cost per call at a small token count on the traced GPU, moved to other weights:
 * the floor stays, the rest scales with the weights' bytes. */
static double scale_call_us(double us_from, double bytes_ratio)
{
    double t0 = us_from < SCALE_GEMM_FLOOR_US ? us_from : SCALE_GEMM_FLOOR_US;
    return t0 + (us_from - t0) * bytes_ratio;
}

/* ---- per-group factors ------------------------------------------------------------------- */

typedef struct {
    double base, comp, knee, expert, wave, wave_bpe, kv, count_to, q_tile;
    double u_base, u_comp, u_expert, u_wave, u_kv;
    char   scope[64];          /* "2/layer", "1/MoE layer", "per forward", "sites" */
    int    unknown;            /* the kind table does not know the group */
} scale_fac;

static void scale_fac_one(scale_fac *f, double count)
{
    memset(f, 0, sizeof *f);
    f->base = f->comp = f->knee = f->expert = f->wave = f->wave_bpe = f->kv = f->q_tile = 1;
    f->count_to = count;
}

static int scale_target(int p) { return p == WM_VERIFY || p == WM_DECODE; }
static int scale_draftp(int p) { return p == WM_DRAFT || p == WM_EXTEND; }

/* The GEMM group of phase p: its terms split over the phase's GEMM sites. */
static void scale_gemm(const scale_ctx *c, const wm_model *m, int p, const wm_group *g,
                       scale_fac *f)
{
    const scale_opts *o = c->o;
    int target = scale_target(p), draft = scale_draftp(p);
    double mem_f = 0, mem_t = 0, cmp_f = 0, cmp_t = 0, calls_f = 0, calls_t = 0;
    double dense_us1 = 0, all_us1 = 0;
    int sweep_all = m->sweep.ntok > 0, n = 0, shape = 0, layers = 0;
    scale_fac_one(f, g->count);
    if (!target && !draft)
        return;
    /* do the sweep's sites cover every GEMM of this phase? else bytes and FLOPs for all */
    for (size_t i = 0; i < SCALE_NSITE; i++) {
        const scale_site *s = &scale_sites[i];
        if (s->draft != draft || (s->extend_only && p != WM_EXTEND) || !scale_site_in_group(s, g->name) ||
            scale_site_params(s, &c->rf) <= 0 || (draft ? 1 : scale_site_calls(s, &c->lf)) <= 0)
            continue;
        const wm_sweep_site *st = scale_sweep_site(m, s->name, p);
        if (!st || scale_sweep_slope(m, st) <= 0)
            sweep_all = 0;
    }
    for (size_t i = 0; i < SCALE_NSITE; i++) {
        const scale_site *s = &scale_sites[i];
        double Pf = scale_site_params(s, &c->rf), Pt = scale_site_params(s, &c->rt);
        double nf = draft ? 1 : scale_site_calls(s, &c->lf), nt = draft ? 1 : scale_site_calls(s, &c->lt);
        if (s->draft != draft || (s->extend_only && p != WM_EXTEND) || Pf <= 0 || nf <= 0 ||
            !scale_site_in_group(s, g->name))
            continue;
        double bf = s->expert ? c->ebits_f : c->bits_f, bt = s->expert ? c->ebits_t : c->bits_t;
        const wm_sweep_site *st = sweep_all ? scale_sweep_site(m, s->name, p) : NULL;
        double us1 = st ? st->us[0] : SCALE_GEMM_FLOOR_US + Pf * bf / 8 / (SCALE_GEMM_BW_GBPS * 1e3);
        double kf = s->expert ? o->from.topk : 1, kt = s->expert ? o->to.topk : 1;
        double slope_f = st ? scale_sweep_slope(m, st) : 2 * Pf * kf;
        double slope_t = slope_f * scale_ratio(Pt * kt, Pf * kf);
        n++;
        shape |= scale_ne(Pt, Pf);
        layers |= scale_ne(nt, nf);
        calls_f += nf;
        calls_t += nt;
        cmp_f += nf * slope_f;
        cmp_t += nt * slope_t;
        all_us1 += nf * us1;
        if (!s->expert) {
            mem_f += nf * us1;
            mem_t += nt * scale_call_us(us1, scale_ratio(Pt * bt, Pf * bf));
            dense_us1 += nf * us1;
        }
    }
    if (n == 0)
        return;
    snprintf(f->scope, sizeof f->scope, "%d GEMM sites%s", n, sweep_all ? " (sweep)" : "");
    double Mr = scale_ratio(c->lt.moe, c->lf.moe);
    double ebr = scale_ratio(c->ebits_t, c->ebits_f);
    int ebits = scale_ne(c->ebits_t, c->ebits_f), wbits = scale_ne(c->bits_t, c->bits_f);
    double Pe_f = c->rf.expert_gu + c->rf.expert_down, Pe_t = c->rt.expert_gu + c->rt.expert_down;
    double mem = scale_ratio(mem_t, mem_f);
    f->comp = scale_ratio(cmp_t, cmp_f);
    f->count_to = g->count * scale_ratio(calls_t, calls_f);
    if (draft)          /* the draft head has no experts: its fitted terms stay */
        Mr = 1, ebr = 1, ebits = 0, Pe_f = Pe_t = 0;
    f->expert = Pe_f > 0 ? Mr * scale_ratio(Pe_t, Pe_f) * ebr : 1;
    f->wave = Pe_f > 0 ? Mr * ebr * scale_ratio(o->to.hidden, o->from.hidden) : 1;
    f->wave_bpe = Pe_f > 0 && c->rf.expert_gu > 0 ? scale_ratio(c->rt.expert_gu / o->to.hidden,
                                                                c->rf.expert_gu / o->from.hidden) : 1;
    f->kv = draft ? 1 : scale_ratio(c->lt.all, c->lf.all);    /* a fitted KV slope: per layer */
    double u_shape = shape ? SCALE_UNC_GEMM : layers ? SCALE_UNC_LAYER : 0;
    double u_mem = scale_rss(u_shape, wbits ? SCALE_UNC_BITS : 0);
    f->u_comp = u_shape;
    f->u_expert = scale_rss(scale_ne(Mr, 1) ? SCALE_UNC_LAYER : 0,
                            scale_rss(scale_ne(Pe_t, Pe_f) ? SCALE_UNC_GEMM : 0, ebits ? SCALE_UNC_BITS : 0));
    f->u_wave = (ebits || scale_ne(Pe_t, Pe_f) || scale_ne(o->to.hidden, o->from.hidden))
                ? SCALE_UNC_WAVE : scale_ne(Mr, 1) ? SCALE_UNC_LAYER : 0;
    f->u_kv = scale_ne(f->kv, 1) ? SCALE_UNC_LAYER : 0;
    /* the base: the part the dense GEMMs explain at the sweep's first token count (the fit
     * cannot tell a flat expert cost from its base at small token counts), the rest is the
     * routed experts' */
    double base_dense = g->base_us, base_exp = 0;
    if (sweep_all && all_us1 > dense_us1 && all_us1 > 0) {
        double r = wm_group_us(m, g, m->sweep.tok[0], 0) / all_us1;
        base_dense = fmin(g->base_us, r * dense_us1);
        base_exp = g->base_us - base_dense;
    }
    double bt_us = base_dense * mem + base_exp * f->expert;
    f->base = g->base_us > 0 ? bt_us / g->base_us : mem;
    f->u_base = bt_us > 0 ? (base_dense * mem * u_mem + base_exp * f->expert * f->u_expert) / bt_us : u_mem;
    /* the knee sits where the compute over the tokens overtakes the weights read */
    f->knee = f->comp > 0 ? mem / f->comp : 1;
}

/* Row width of one launch per kind: the per-token work ratio to/from of a group. */
static void scale_widths(const scale_ctx *c, int kind, int draft, double *wd_f, double *wd_t,
                         double *wm_f, double *wm_t, double *kv_f, double *kv_t)
{
    const llm_rank *rf = &c->rf, *rt = &c->rt;
    const llm_shape *F = &c->o->from, *T = &c->o->to;
    double a = 1, b = 1;
    *kv_f = *kv_t = 1;
    switch (kind) {
    case SK_ATTN:
        a = draft ? rf->d_heads : rf->heads, b = draft ? rt->d_heads : rt->heads;
        *kv_f = draft ? rf->d_kv_bytes_per_token : rf->kv_bytes_per_token;
        *kv_t = draft ? rt->d_kv_bytes_per_token : rt->kv_bytes_per_token;
        break;
    case SK_ROPE:
        a = draft ? rf->d_rope_width : rf->rope_width, b = draft ? rt->d_rope_width : rt->rope_width;
        break;
    case SK_NORM: case SK_EMBED: case SK_MOE_TOKEN:
        a = F->hidden, b = T->hidden;
        if (kind == SK_MOE_TOKEN)
            a *= F->topk, b *= T->topk;
        break;
    case SK_ACT:
        if (draft) {
            a = rf->d_act, b = rt->d_act;
        } else {
            *wd_f = rf->act_dense, *wd_t = rt->act_dense, *wm_f = rf->act_moe, *wm_t = rt->act_moe;
            return;
        }
        break;
    case SK_SAMPLE: {
        /* over the logits the rank holds after the LM head's all-gather: the whole vocab
         * with every rank running, a shard when one process stood in for a rank */
        int nf = c->o->ranks_from, nt = c->o->ranks_to;
        double vf = draft ? F->draft_vocab : F->vocab, vt = draft ? T->draft_vocab : T->vocab;
        a = nf >= c->o->tp_from ? vf : ceil(vf / c->o->tp_from) * nf;
        b = nt >= c->o->tp_to ? vt : ceil(vt / c->o->tp_to) * nt;
        break;
    }
    default:
        break;
    }
    *wd_f = *wm_f = a;
    *wd_t = *wm_t = b;
}

/* Every other group: its scope over the layers and its row width. */
static void scale_elementwise(const scale_ctx *c, int p, const wm_group *g, int kind, scale_fac *f)
{
    int target = scale_target(p), draft = scale_draftp(p);
    scale_fac_one(f, g->count);
    scale_scope s = scale_scope_of(g->count, kind, target, &c->lf);
    double wd_f = 1, wd_t = 1, wm_f = 1, wm_t = 1, kv_f = 1, kv_t = 1;
    scale_widths(c, kind, draft, &wd_f, &wd_t, &wm_f, &wm_t, &kv_f, &kv_t);
    double work_f = s.a * c->lf.dense * wd_f + s.b * c->lf.moe * wm_f + s.f * wd_f;
    double work_t = s.a * c->lt.dense * wd_t + s.b * c->lt.moe * wm_t + s.f * wd_t;
    double lay_f = s.a * c->lf.dense + s.b * c->lf.moe + s.f;
    double lay_t = s.a * c->lt.dense + s.b * c->lt.moe + s.f;
    double layer = scale_ratio(lay_t, lay_f), width = scale_ratio(work_t, work_f) / layer;
    double moe_f = s.b * c->lf.moe, moe_t = s.b * c->lt.moe;
    f->count_to = scale_launches(&s, &c->lt);
    f->base = f->comp = f->wave = layer * width;
    /* per expert touched: the MoE layers' launches (all of them where the group has none) */
    double er = moe_f > 0 ? moe_t / moe_f : layer;
    if (kind == SK_ACT && c->rf.expert_gu > 0)
        er *= scale_ratio(c->rt.expert_gu, c->rf.expert_gu);
    f->expert = er;
    f->kv = layer * scale_ratio(kv_t, kv_f);
    if (kind == SK_ATTN) {
        /* query tokens per MMA tile: the tile's rows hold q tokens x the heads sharing a KV */
        double qf = draft ? c->rf.d_q_per_kv : c->rf.q_per_kv, qt = draft ? c->rt.d_q_per_kv : c->rt.q_per_kv;
        f->q_tile = scale_ratio(qf, qt);
    }
    int mla = kind == SK_ATTN && !draft && c->o->from.mla != c->o->to.mla;
    double ul = scale_ne(layer, 1) ? SCALE_UNC_LAYER : 0;
    double uw = mla ? SCALE_UNC_MLA : scale_ne(width, 1) ? SCALE_UNC_WIDTH : 0;
    /* an unknown kernel's width is not known: uncertain once anything of the rank changes */
    double uo = (kind == SK_OTHER || !s.found) && (scale_ne(layer, 1) || !c->shape_same)
                ? SCALE_UNC_OTHER : 0;
    f->u_base = f->u_comp = f->u_wave = scale_rss(scale_rss(ul, uw), uo);
    f->u_expert = scale_rss(scale_ne(er, 1) ? SCALE_UNC_LAYER : 0, uo);
    f->u_kv = scale_rss(scale_rss(ul, mla ? SCALE_UNC_MLA : scale_ne(kv_t, kv_f) ? SCALE_UNC_WIDTH : 0), uo);
    f->unknown = kind == SK_OTHER || !s.found;
    if (!target && !draft)
        snprintf(f->scope, sizeof f->scope, "per forward");
    else if (!s.found)
        snprintf(f->scope, sizeof f->scope, "%d launches: no layer scope", g->count);
    else if (draft || (s.a == 0 && s.b == 0))
        snprintf(f->scope, sizeof f->scope, "%d per forward", s.f);
    else
        snprintf(f->scope, sizeof f->scope, "%d/dense + %d/MoE layer + %d", s.a, s.b, s.f);
}

/* One term times its factor, moved by `bound` times its uncertainty. */
static double scale_b(double x, double f, double u, int bound)
{
    double m = 1 + bound * u;
    return x * f * (m > 0 ? m : 0);
}

static void scale_apply(wm_group *g, const scale_fac *f, int bound, double attn_x)
{
    g->base_us = scale_b(g->base_us, f->base * attn_x, f->u_base, bound);
    g->per_token_us = scale_b(g->per_token_us, f->comp * attn_x, f->u_comp, bound);
    g->per_token_all_us = scale_b(g->per_token_all_us, f->comp * attn_x, f->u_comp, bound);
    g->knee_tokens *= f->knee;
    g->per_expert_us = scale_b(g->per_expert_us, f->expert * attn_x, f->u_expert, bound);
    g->per_wave_us = scale_b(g->per_wave_us, f->wave * attn_x, f->u_wave, bound);
    g->wave_blocks_per_expert *= f->wave_bpe;
    g->sweep_scale *= attn_x;   /* the sweep's sites are scaled themselves; a what-if is not */
    g->per_kv_ktoken_us = scale_b(g->per_kv_ktoken_us, f->kv * attn_x, f->u_kv, bound);
    g->per_kvq_ktoken_us = scale_b(g->per_kvq_ktoken_us, f->kv * attn_x, f->u_kv, bound);
    g->per_kvq2_ktoken_us = scale_b(g->per_kvq2_ktoken_us, f->kv * attn_x, f->u_kv, bound);
    if (g->q_tile > 1 && scale_ne(f->q_tile, 1)) {
        /* the same query tokens per row fill another number of tiles; the kernel-variant
         * knee (in tiles) stays at the same query tokens per row */
        g->q_tile_knee = g->q_tile_knee * g->q_tile / fmax(1, g->q_tile * f->q_tile);
        g->q_tile = fmax(1, g->q_tile * f->q_tile);
    }
    long n = lround(f->count_to);
    g->count = n < 1 ? 1 : n > 1000000000L ? 1000000000 : (int)n;
}

/* The scaled group's relative uncertainty as one number, for the simulator's prediction
 * intervals (its resid_frac, in quadrature with the fit's): its terms' uncertainties weighted
 * by their cost at a representative forward of the phase (its most fitted tokens, or 64; a
 * KV context of 1024 tokens per row), the terms of one group taken to err together. An
 * approximation: the weights move with the configuration, and groups scaled by the same
 * rule err together too (the simulator takes groups as independent). */
static double scale_group_unc(const wm_model *m, const wm_phase_model *ph, const wm_group *g,
                              const scale_fac *f)
{
    double t = ph->fitted_tokens_max > 0 ? ph->fitted_tokens_max : 64;
    double q = ph->fitted_q_max > 0 ? ph->fitted_q_max : 1, kv = 1024 * t / q;
    double over = t - g->knee_tokens;
    double base = g->base_us, comp = g->per_token_us * (over > 0 ? over : 0) + g->per_token_all_us * t;
    double exp_ = g->per_expert_us * wm_group_experts(m, g, t, q);
    double wave = g->per_wave_us * wm_waves(m, g, t, q), kvc = wm_kv_per_ktoken(g, q) * kv / 1000;
    double tot = base + comp + exp_ + wave + kvc;
    return tot > 0 ? (base * f->u_base + comp * f->u_comp + exp_ * f->u_expert + wave * f->u_wave +
                      kvc * f->u_kv) / tot : 0;
}

/* "base x4.10+-11%, token x5.0+-12%, ..." for the terms the group has and that changed. */
static void scale_source(char *buf, size_t len, const char *kind, const scale_fac *f,
                         const wm_group *before, const wm_group *after, double attn_x)
{
    size_t k = 0;
#define SCALE_PUT(...) do { int w_ = snprintf(buf + k, k < len ? len - k : 0, __VA_ARGS__); \
        if (w_ > 0) k += (size_t)w_; } while (0)
#define SCALE_TERM(cond, label, fac, unc) do { if ((cond) && (scale_ne(fac, 1) || (unc) > 0)) { \
        SCALE_PUT(", %s x%.3g", label, fac); if ((unc) > 0) SCALE_PUT("+-%.0f%%", 100 * (unc)); } } while (0)
    SCALE_PUT("scale[%s, %s]: count %d->%d", kind, f->scope, before->count, after->count);
    SCALE_TERM(before->base_us > 0, "base", f->base, f->u_base);
    SCALE_TERM(before->per_token_us > 0 || before->per_token_all_us > 0, "token", f->comp, f->u_comp);
    if (before->knee_tokens > 0 && scale_ne(f->knee, 1))
        SCALE_PUT(", knee x%.3g", f->knee);
    SCALE_TERM(before->per_expert_us > 0, "expert", f->expert, f->u_expert);
    SCALE_TERM(before->per_wave_us > 0, "wave", f->wave, f->u_wave);
    SCALE_TERM(before->per_kv_ktoken_us > 0 || before->per_kvq_ktoken_us > 0, "kv", f->kv, f->u_kv);
    if (before->q_tile > 1 && scale_ne(before->q_tile, after->q_tile))
        SCALE_PUT(", q_tile %g->%g", before->q_tile, after->q_tile);
    if (scale_ne(attn_x, 1))
        SCALE_PUT(", x%g (what-if)", attn_x);
#undef SCALE_TERM
#undef SCALE_PUT
    if (k >= len && len > 4)
        memcpy(buf + len - 4, "...", 4);
}

/* A group scaled before (a model scaled twice): this scaling, then " | " and the earlier. */
static void scale_keep_earlier(char *buf, size_t len, const char *earlier)
{
    size_t k = strlen(buf);
    if (earlier[0] && k + 4 < len)
        snprintf(buf + k, len - k, " | %s", earlier);
    if (strlen(buf) + 1 >= len && len > 4)
        memcpy(buf + len - 4, "...", 4);
}

static int scale_all_same(const scale_fac *f)
{
    return !scale_ne(f->base, 1) && !scale_ne(f->comp, 1) && !scale_ne(f->expert, 1) &&
           !scale_ne(f->wave, 1) && !scale_ne(f->kv, 1) && !scale_ne(f->knee, 1) &&
           !scale_ne(f->q_tile, 1) && !scale_ne(f->wave_bpe, 1) && f->u_base == 0 &&
           f->u_comp == 0 && f->u_expert == 0 && f->u_kv == 0 && f->u_wave == 0;
}

/* ---- the GEMM sweep's sites -------------------------------------------------------------- */

static void scale_sweep(const scale_ctx *c, wm_model *m, int bound, scale_summary *sum)
{
    const scale_opts *o = c->o;
    for (int i = 0; i < m->sweep.nsite; i++) {
        wm_sweep_site *st = &m->sweep.site[i];
        const scale_site *s = NULL;
        for (size_t j = 0; j < SCALE_NSITE; j++)
            if (strcmp(scale_sites[j].name, st->name) == 0)
                s = &scale_sites[j];
        double Pf = s ? scale_site_params(s, &c->rf) : 0;
        if (!s || Pf <= 0) {
            sum->sites_unknown++;
            continue;
        }
        double Pt = scale_site_params(s, &c->rt);
        double nf = s->draft ? 1 : scale_site_calls(s, &c->lf), nt = s->draft ? 1 : scale_site_calls(s, &c->lt);
        double bf = s->expert ? c->ebits_f : c->bits_f, bt = s->expert ? c->ebits_t : c->bits_t;
        double pr = scale_ratio(Pt, Pf), br = scale_ratio(bt, bf);
        double kr = s->expert ? scale_ratio(o->to.topk, o->from.topk) : 1;
        double u = scale_rss(scale_ne(pr, 1) ? SCALE_UNC_GEMM : 0, scale_ne(br, 1) ? SCALE_UNC_BITS : 0);
        double us0 = st->us[0], t0 = us0 < SCALE_GEMM_FLOOR_US ? us0 : SCALE_GEMM_FLOOR_US;
        double e0 = s->expert ? scale_touched(o->from.experts, o->from.topk, m->sweep.tok[0]) : 1;
        for (int k = 0; k < m->sweep.ntok; k++) {
            double M = m->sweep.tok[k], us = st->us[k];
            /* the weights read: flat for a dense GEMM, with the experts touched for a routed
             * one; the rest of its cost is the compute over the tokens */
            double tf = s->expert ? scale_touched(o->from.experts, o->from.topk, M) : 1;
            double tt = s->expert ? scale_touched(o->to.experts, o->to.topk, M) : 1;
            double mem = fmin(us, us0 * (e0 > 0 ? tf / e0 : 1));
            double mem_t = t0 + (mem - t0) * pr * br * scale_ratio(tt, tf);
            double v = mem_t + (us - mem) * pr * kr;
            st->us[k] = v * fmax(0, 1 + bound * u);
        }
        st->per_forward *= scale_ratio(nt, nf);
        sum->sites_scaled++;
    }
}

/* ---- collectives ------------------------------------------------------------------------- */

static void scale_coll(wm_phase_model *ph, const char *op, int count, double bytes)
{
    if (count < 1 || ph->ncolls >= WM_COLLS_MAX)
        return;
    wm_coll *k = &ph->colls[ph->ncolls++];
    snprintf(k->op, sizeof k->op, "%s", op);
    k->count = count;
    k->bytes_per_token = bytes;
}

/* The target's: 2 all-reduces per layer (after attention and after the MLP) of tokens x
 * hidden x 2 B (or the preset's own figures), the LM head's logits all-gathered (SGLang's
 * LogitsProcessor; specbench at TP > 1); the draft head's: 2 all-reduces, and its logits
 * all-gathered in the draft chain (extend's LM head runs on one token per row, which a
 * per-token collective cannot say: left out). None at TP 1. */
static void scale_colls(wm_model *m, const scale_opts *o)
{
    const llm_shape *T = &o->to;
    int ar = T->allreduces_per_forward > 0 ? T->allreduces_per_forward : 2 * T->layers;
    double bytes = T->allreduce_bytes_per_token > 0 ? T->allreduce_bytes_per_token
                                                    : T->hidden * LLM_ACT_BYTES;
    for (int p = 0; p < WM_NPHASE; p++) {
        wm_phase_model *ph = &m->phase[p];
        ph->ncolls = 0;
        if (!ph->present || o->tp_to <= 1 || o->ranks_to <= 1)
            continue;
        if (scale_target(p)) {
            scale_coll(ph, "allreduce", ar, bytes);
            scale_coll(ph, "allgather", 1, T->vocab * LLM_ACT_BYTES);
        } else if (scale_draftp(p)) {
            scale_coll(ph, "allreduce", 2, T->hidden * LLM_ACT_BYTES);
            if (p == WM_DRAFT)
                scale_coll(ph, "allgather", 1, T->draft_vocab * LLM_ACT_BYTES);
        }
    }
}

/* ---- the model --------------------------------------------------------------------------- */

int scale_model(wm_model *m, const scale_opts *o, scale_summary *s, char *err, size_t errlen)
{
    scale_summary sum;
    memset(&sum, 0, sizeof sum);
    const llm_shape *F = &o->from, *T = &o->to;
    if ((F->experts > 0) != (T->experts > 0)) {
        snprintf(err, errlen, "%s: field moe.experts: value %d: the traced preset %s has %d: a "
                 "dense model cannot be scaled to a MoE one or back (no expert costs were "
                 "measured, or they would have to be dropped)", T->path, T->experts, F->name,
                 F->experts);
        return -1;
    }
    if (m->moe_experts > 0 && (m->moe_experts != F->experts || m->moe_topk != F->topk)) {
        snprintf(err, errlen, "model %s: field moe: value %d experts top-%d: the traced preset %s "
                 "says %d top-%d (is --from the shape the traces ran?)", m->name, m->moe_experts,
                 m->moe_topk, F->name, F->experts, F->topk);
        return -1;
    }
    if (o->ranks_from < 1 || o->tp_from < 1 || o->tp_to < 1 || o->ranks_to < 1 ||
        o->ranks_to > o->tp_to) {
        snprintf(err, errlen, "scale: field tp: value %d -> %d (ranks %d -> %d): must be >= 1, "
                 "and ranks at most tp", o->tp_from, o->tp_to, o->ranks_from, o->ranks_to);
        return -1;
    }
    if (llm_check_tp(F, o->tp_from, err, errlen) || llm_check_tp(T, o->tp_to, err, errlen))
        return -1;
    if (wm_require(m, WM_VERIFY, m->name, "scaling needs the target forward", err, errlen))
        return -1;
    scale_ctx c;
    memset(&c, 0, sizeof c);
    c.o = o;
    llm_rank_of(F, o->tp_from, &c.rf);
    llm_rank_of(T, o->tp_to, &c.rt);
    c.lf = scale_layers_of(F);
    c.lt = scale_layers_of(T);
    c.bits_f = F->weight_bits, c.bits_t = T->weight_bits;
    c.ebits_f = llm_expert_bits_eff(F), c.ebits_t = llm_expert_bits_eff(T);
    c.shape_same = memcmp(&c.rf, &c.rt, sizeof c.rf) == 0 && !scale_ne(c.bits_f, c.bits_t) &&
                   !scale_ne(c.ebits_f, c.ebits_t) && F->vocab == T->vocab && F->hidden == T->hidden &&
                   F->topk == T->topk && o->ranks_from == o->ranks_to;
    static wm_model before;       /* the experts-touched of the traced shape, for the split */
    before = *m;
    for (int p = 0; p < WM_NPHASE; p++) {
        wm_phase_model *ph = &m->phase[p];
        if (!ph->present)
            continue;
        double n_f = 0, n_t = 0;
        int idle = -1;
        for (int i = 0; i < ph->ngroups; i++) {
            wm_group *g = &ph->groups[i];
            int kind = scale_kind(g->name);
            scale_fac f;
            if (kind == SK_IDLE) {
                idle = i;
                continue;
            }
            if (kind == SK_GEMM)
                scale_gemm(&c, &before, p, &before.phase[p].groups[i], &f);
            else
                scale_elementwise(&c, p, &before.phase[p].groups[i], kind, &f);
            double ax = (kind == SK_ATTN ? o->attn_x[p] : 1) * o->kind_x[kind];
            n_f += g->count;
            scale_apply(g, &f, o->bound, ax);
            if (o->bound == 0)
                g->resid_frac = scale_rss(g->resid_frac, scale_group_unc(m, ph, g, &f));
            n_t += g->count;
            if (scale_all_same(&f) && !scale_ne(ax, 1) && g->count == before.phase[p].groups[i].count) {
                sum.groups_same++;
                continue;
            }
            scale_source(g->source, sizeof g->source, scale_kind_names[kind], &f,
                         &before.phase[p].groups[i], g, ax);
            scale_keep_earlier(g->source, sizeof g->source, before.phase[p].groups[i].source);
            sum.groups_scaled++;
            if (f.unknown) {
                size_t k = strlen(sum.unknown);
                if (k + strlen(g->name) + 12 < sizeof sum.unknown)
                    snprintf(sum.unknown + k, sizeof sum.unknown - k, "%s%s.%s", k ? ", " : "",
                             wm_phase_name[p], g->name);
                sum.groups_unknown++;
            }
        }
        if (idle >= 0) {
            /* GPU idle inside a phase: the gaps between its kernels, as many as launches */
            wm_group *g = &ph->groups[idle];
            scale_fac f;
            scale_fac_one(&f, g->count);
            double r = scale_ratio(n_t, n_f);
            f.base = f.comp = f.expert = f.wave = f.kv = r;
            f.u_base = f.u_comp = f.u_expert = f.u_wave = f.u_kv = scale_ne(r, 1) ? SCALE_UNC_WIDTH : 0;
            snprintf(f.scope, sizeof f.scope, "launches %.0f->%.0f", n_f, n_t);
            scale_apply(g, &f, o->bound, o->kind_x[SK_IDLE]);
            if (o->bound == 0)
                g->resid_frac = scale_rss(g->resid_frac, scale_group_unc(m, ph, g, &f));
            if (scale_all_same(&f) && !scale_ne(o->kind_x[SK_IDLE], 1)) {
                sum.groups_same++;
            } else {
                scale_source(g->source, sizeof g->source, "gpu-idle", &f, &before.phase[p].groups[idle], g,
                             o->kind_x[SK_IDLE]);
                scale_keep_earlier(g->source, sizeof g->source, before.phase[p].groups[idle].source);
                sum.groups_scaled++;
            }
        }
        if (o->eager_phases & (1u << p))
            ph->always_eager = 1;
        ph->host_gap_us += o->host_add_us[p];
    }
    scale_sweep(&c, m, o->bound, &sum);
    scale_colls(m, o);
    m->ranks = o->ranks_to;
    m->moe_experts = T->experts;
    m->moe_topk = T->topk;
    char nm[sizeof m->name];
    snprintf(nm, sizeof nm, "%.40s-as-%.30s-tp%d%s", m->name, T->name, o->tp_to,
             o->bound < 0 ? "-lo" : o->bound > 0 ? "-hi" : "");
    memcpy(m->name, nm, sizeof m->name);
    char src[1024];
    snprintf(src, sizeof src, "scaled %s tp%d (%d layers) -> %s tp%d (%d layers, experts %.3g b, "
             "weights %.3g b)%s; per group in groups[].source; from: %s", F->name, o->tp_from,
             F->layers, T->name, o->tp_to, T->layers, c.ebits_t, c.bits_t,
             o->bound < 0 ? " at the low end" : o->bound > 0 ? " at the high end" : "", m->source);
    snprintf(m->source, sizeof m->source, "%.*s", (int)sizeof m->source - 1, src);
    if (s)
        *s = sum;
    return 0;
}

/* ---- the report -------------------------------------------------------------------------- */

void scale_report(FILE *out, const wm_model *before, const wm_model *after, const wm_model *lo,
                  const wm_model *hi)
{
    static const double toks[] = {1, 8, 64, 512};
    static const double kv_per_row[] = {0, 1024};
    fprintf(out, "# scaled: GPU time per forward (kernel groups; collectives are the link "
            "model's) at 1 query token per row; low/high: every scaled term at the end of its "
            "uncertainty, all the same way\n");
    fprintf(out, "# %-8s %7s %8s %12s %12s %12s %12s\n", "phase", "tokens", "kv_row", "before",
            "after", "low", "high");
    fprintf(out, "# %-8s %7s %8s %12s %12s %12s %12s\n", "-", "tokens", "tokens", "us", "us", "us", "us");
    for (int p = 0; p < WM_NPHASE; p++) {
        if (!after->phase[p].present || !before->phase[p].present)
            continue;
        for (size_t k = 0; k < sizeof kv_per_row / sizeof kv_per_row[0]; k++)
            for (size_t t = 0; t < sizeof toks / sizeof toks[0]; t++) {
                double kv = kv_per_row[k] * toks[t];
                fprintf(out, "  %-8s %7g %8g %12.2f %12.2f", wm_phase_name[p], toks[t], kv_per_row[k],
                        wm_phase_gpu_us(before, p, toks[t], kv), wm_phase_gpu_us(after, p, toks[t], kv));
                if (lo && hi)
                    fprintf(out, " %12.2f %12.2f\n", wm_phase_gpu_us(lo, p, toks[t], kv),
                            wm_phase_gpu_us(hi, p, toks[t], kv));
                else
                    fprintf(out, " %12s %12s\n", "-", "-");
            }
    }
}
