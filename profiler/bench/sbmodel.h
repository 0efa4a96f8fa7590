/* sbmodel: the target model shard and its EAGLE-3 draft head, as specbench runs them:
 * shapes and presets, bf16 weights initialised on the GPU from a hash, the KV caches,
 * activation buffers sized for the largest step, and the two forward passes built from
 * cuBLAS GEMMs (bf16 in/out, fp32 compute) and sbkern/sbattn/sbmoe kernels, with NCCL
 * all-reduces when the process is one of several tensor-parallel ranks.
 * Workload: decode-time forwards of 1..~1000 tokens; one shard of a TP group. */
#ifndef SBMODEL_H
#define SBMODEL_H
#include "sbkern.h"
#include "sbattn.h"
#include "sbmoe.h"
#include "sbcheck.h"

/* Whole-model shape; per-rank sizes are these divided by tp (sb_rank). */
typedef struct {
    char name[32];
    int layers;            /* transformer layers of the target */
    int dense_layers;      /* first layers with a dense MLP when experts > 0 */
    int hidden, heads, kv_heads, head_dim;
    int inter;             /* dense MLP intermediate (whole model) */
    int vocab;
    int tp;                /* tensor-parallel degree the shard is cut for */
    int experts, topk_experts, moe_inter, shared_inter;   /* experts == 0: dense model */
    int draft_inter, draft_vocab;                         /* EAGLE-3 head */
} sb_shape;

/* Per-rank sizes. */
typedef struct {
    int nh, nkv, D, H;     /* q heads, kv heads (replicated when kv_heads < tp), head dim */
    int I, Im, Is, Id;     /* dense, expert, shared-expert, draft MLP intermediates */
    int V, Vd;             /* target and draft LM-head rows */
    int E, K;              /* experts, picks per token */
} sb_rank;

/* Presets "llama8b" and "kimi-tp8" (shapes and sources in docs/specbench.md).
 * Returns 0, or -1 for an unknown name. */
int  sb_preset(const char *name, sb_shape *sh);
void sb_rank_of(const sb_shape *sh, sb_rank *r);
/* Checks the shape against the kernels' limits for verify widths up to max_qlen.
 * Returns 0 or -1 with err "field F: value V: why". */
int  sb_shape_check(const sb_shape *sh, int max_qlen, char *err, size_t errlen);
/* Bytes of weights one rank holds. */
size_t sb_weight_bytes(const sb_shape *sh);

typedef struct {
    bf16 *attn_norm, *wqkv, *wo, *mlp_norm;
    bf16 *wgu, *wd;                                 /* dense MLP */
    bf16 *wrouter, *wgu_e, *wd_e, *wgu_s, *wd_s;    /* MoE layer */
    bf16 *kc, *vc;                                  /* KV cache [rows][max_ctx][nkv][D] */
} sb_layer;

typedef struct {
    sb_shape sh;
    sb_rank r;
    int rows_max, qlen_max, max_ctx, tmax;          /* capacity; tmax = rows_max*qlen_max */
    int sms;
    int world, rank;                                /* NCCL ranks actually running */
    ncclComm_t comm;                                /* NULL when world == 1 */
    cudaStream_t stream;
    cublasHandle_t blas;
    void *blas_ws;
    void *warena, *karena, *aarena;                 /* weights, KV, activations */
    size_t wbytes, kbytes, abytes;
    sb_layer *L;
    bf16 *embed, *final_norm, *lm_head;
    /* draft head: fc 3H->H, norms, one layer, LM head */
    bf16 *d_fc, *d_norm_e, *d_norm_h, *d_wqkv, *d_wo, *d_mlp_norm, *d_wgu, *d_wd,
         *d_final_norm, *d_lm_head, *d_kc, *d_vc;
    /* activations (tmax rows unless noted) */
    bf16 *x, *h, *qkv, *q, *attn, *o, *gu, *act, *mlp, *router, *shared_out;
    bf16 *logits, *logits_all;                      /* [tmax][max(V,Vd)], [world][..] */
    bf16 *aux;                                      /* [tmax][3H] EAGLE-3 features */
    bf16 *cat, *emb;                                /* [tmax][2H], [tmax][H] */
    bf16 *dh;                                       /* [rows_max][H] draft chain hidden */
    bf16 *selh;                                     /* [rows_max][H] gathered for LM head */
    float *attn_ws;
    int attn_ws_floats;
    sb_moe_ws moe;
    /* token ids and per-row state */
    int *ids_v;        /* [rows_max][qlen_max] verify input: pending + draft tokens */
    int *ids_d;        /* [rows_max] decode input */
    int *tgt;          /* [tmax] target argmax */
    int *acc;          /* [rows_max] device greedy accept */
    int *base;         /* [rows_max] committed KV length of each row */
    int *sel;          /* [rows_max] accepted draft tokens (host draw), for extend */
    unsigned long long *counter;   /* MoE routing counter */
} sb_model;

/* Allocates and initialises everything on the current device. world > 1 needs comm.
 * Prints a memory summary when verbose. Exits on CUDA errors (sbcheck.h). Caller frees
 * with sb_model_destroy. */
sb_model *sb_model_create(const sb_shape *sh, int rows_max, int qlen_max, int max_ctx,
                          int world, int rank, ncclComm_t comm, uint64_t seed, int verbose);
void sb_model_destroy(sb_model *m);

/* Y[T][N] = X[T][K] * W[N][K]^T (bf16, fp32 accumulate) on m->stream. */
void sb_gemm(sb_model *m, const bf16 *X, const bf16 *W, bf16 *Y, int T, int N, int K);

/* Target forward over rows*qlen tokens ids[t] (contiguous), row r at positions
 * base[r]..base[r]+qlen-1; appends KV; saves EAGLE-3 aux features; LM head over every
 * token into logits (all-gathered when world > 1). Returns the logits to argmax over
 * and their part count through *parts. */
const bf16 *sb_target_forward(sb_model *m, const int *ids, int rows, int qlen, int *parts);

/* Where the last forward left its logits (all-gathered when world > 1) and their parts. */
const bf16 *sb_logits(const sb_model *m, int *parts);

/* Draft forward. Extend mode (qlen > 1 or from_aux): input features = fc(aux) of the
 * verify tokens; LM head on the token sel[r] of each row. Chain mode: input = dh, one
 * token per row at position base[r] + pos_add. Writes the argmax token of each row to
 * out[r*out_stride + out_off] and the row's output hidden to dh. */
void sb_draft_forward(sb_model *m, const int *ids, int ids_stride, int ids_off, int rows,
                      int qlen, int from_aux, int pos_add, const int *sel, int *out,
                      int out_stride, int out_off);
#endif
