/* llmshape: an LLM's shape from a preset (models/presets/<name>.json, "specsim_preset":
 * "llm"), and what one tensor-parallel rank of it holds: the weights of each GEMM as TP
 * splits them (column-parallel, row-parallel, vocab-parallel, TP-sharded experts,
 * replicated), its attention heads and KV bytes. Why: `specsim scale` (models/scale.c)
 * moves a fitted model to another shape, TP size and weight format by these ratios.
 * Workload: a few presets read once per command. */
#ifndef LLMSHAPE_H
#define LLMSHAPE_H
#include <stddef.h>

typedef struct {
    char   name[64];
    char   path[256];
    int    layers;           /* transformer layers of the target */
    int    dense_layers;     /* first layers with a dense MLP (== layers when experts == 0) */
    int    hidden;
    int    heads;            /* query heads */
    int    kv_heads;         /* GQA KV heads (MLA: 0) */
    int    head_dim;         /* GQA head dim */
    int    mla;              /* 1: multi-head latent attention (DeepSeek V3 / Kimi K2) */
    int    q_lora, kv_lora, qk_nope, qk_rope, v_head;   /* MLA dims */
    int    mla_dims_assumed; /* 1: a head dim was not in the preset (LLM_MLA_* taken) */
    int    dense_inter;      /* dense MLP intermediate */
    int    experts, topk, shared_experts, moe_inter, shared_inter;
    int    vocab;
    double weight_bits;      /* bits per weight of everything but the routed experts */
    double expert_bits;      /* bits per routed-expert weight as stored */
    int    expert_group;     /* weights per quantization scale (0: none) */
    /* EAGLE-3 draft head: one decoder layer of GQA attention and a dense MLP */
    int    draft_heads, draft_kv_heads, draft_head_dim, draft_inter, draft_vocab;
    int    tp;               /* the TP size a traced run's rank was cut for (0: not said) */
    int    allreduces_per_forward;      /* the preset's own figure (0: 2 x layers) */
    double allreduce_bytes_per_token;   /* (0: hidden x 2 B) */
} llm_shape;

/* Bytes of KV cache, activations and all-reduce payloads per element: bf16 (SGLang's
 * default KV and activation dtype for these models; shared/FACTS.md's 7168 x 2 B). */
#define LLM_ACT_BYTES 2.0
/* A quantization scale per group of weights: bf16 (compressed-tensors' symmetric int4
 * pack-quantized format stores one bf16 scale per group and no zero point). */
#define LLM_SCALE_BITS 16.0

/* MLA head dims when a preset does not give them: DeepSeek-V3's (qk_nope_head_dim 128,
 * qk_rope_head_dim 64, v_head_dim 128: its config.json; Kimi K2's are the same, shared/
 * FACTS.md), said so by mla_dims_assumed. */
#define LLM_MLA_NOPE 128
#define LLM_MLA_ROPE 64
#define LLM_MLA_V    128

/* Loads an LLM preset: a path (contains '/' or ends in .json) or a name looked up as
 * DIR/<name>.json, DIR = $SPECSIM_PRESETS or models/presets. 0, or -1 with
 * "FILE: field F: value V: why" in err. */
int llm_load(llm_shape *s, const char *name, char *err, size_t errlen);
/* Checks that s can be cut into tp ranks (heads divisible, KV heads divide or are
 * divided by tp, intermediates divisible). 0 or -1 with err. */
int llm_check_tp(const llm_shape *s, int tp, char *err, size_t errlen);

/* Effective bits per routed-expert weight: expert_bits plus the group's scale. */
double llm_expert_bits_eff(const llm_shape *s);
int    llm_moe_layers(const llm_shape *s);     /* layers - dense_layers, 0 for a dense model */

/* One rank's parameters (weights, counted in elements) per GEMM site, per layer of its
 * kind (every layer, dense, MoE) or once per forward, and its attention. */
typedef struct {
    double qkv, o;                 /* attention projections per layer (MLA: q_a, q_b, kv_a
                                      and the absorbed k up-projection in qkv; the v
                                      up-projection and o_proj in o) */
    double gu, down;               /* dense MLP per dense layer */
    double router, shared_gu, shared_down;   /* per MoE layer */
    double expert_gu, expert_down; /* ONE routed expert, per MoE layer */
    double lm_head;                /* once per forward */
    double d_fc, d_qkv, d_o, d_gu, d_down, d_lm_head;   /* EAGLE-3 head, once */
    double heads;                  /* query heads on the rank */
    double kv_heads;               /* GQA KV heads on the rank (replicated below tp) */
    double kv_bytes_per_token;     /* KV cache bytes per token per layer on the rank */
    double q_per_kv;               /* query heads sharing one KV (MLA: all the rank's) */
    double rope_width;             /* q and k elements RoPE rotates per token per layer */
    double act_dense, act_moe;     /* activation elements per token: dense layer, MoE
                                      layer (shared + top-k experts) */
    double d_heads, d_kv_bytes_per_token, d_q_per_kv, d_rope_width, d_act;
} llm_rank;

/* Fills r for one rank of s at tp (1: the whole model). */
void llm_rank_of(const llm_shape *s, int tp, llm_rank *r);
#endif
