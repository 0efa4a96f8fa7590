/* sbmoe: a mixture-of-experts layer whose cost grows with the experts a step touches.
 * Routing is random, drawn on the GPU from a counter-based hash of (routing counter,
 * layer, token, pick): the counter lives in device memory and a kernel in every graph
 * bumps it, so each replay routes anew (the router GEMM still runs, for its cost, and
 * its logits give the gate weights). Tokens are counted per expert, scanned, permuted
 * into expert order, and two grouped GEMMs run on a fixed grid over (active expert,
 * column tile): blocks past the number of active experts exit, so the work and the
 * bytes read scale with the distinct experts touched. bf16 tensor cores (WMMA).
 * Workload: decode/verify, tens to thousands of (token, expert) picks per layer. */
#ifndef SBMOE_H
#define SBMOE_H
#include "sbkern.h"

#define SB_MOE_MAXK 16         /* top-k limit of the routing kernel */
#define SB_MOE_PAD 64          /* spare rows after the permuted inputs (tile overrun) */

typedef struct {
    int E, k, H, I;            /* experts, picks per token, hidden, expert inter per rank */
    int max_tokens;            /* capacity in tokens */
    int *topk_ids;             /* [T*k] expert of each pick */
    float *topk_w;             /* [T*k] gate weight of each pick */
    int *counts, *offsets, *fill, *active;   /* [E] each */
    int *n_active;             /* [1] distinct experts touched */
    int *perm;                 /* [T*k] row of each pick in the permuted buffers */
    bf16 *xs;                  /* [T*k + PAD][H] inputs in expert order */
    bf16 *ys;                  /* [T*k][2I] gate|up outputs */
    bf16 *as;                  /* [T*k + PAD][I] silu(gate)*up */
    bf16 *zs;                  /* [T*k][H] expert outputs */
} sb_moe_ws;

/* Bytes of device workspace for the given shape (sb_moe_carve lays it out). */
size_t sb_moe_ws_bytes(int E, int k, int H, int I, int max_tokens);
/* Lay the workspace out in mem (sb_moe_ws_bytes bytes, 256-byte aligned). */
void sb_moe_carve(sb_moe_ws *w, void *mem, int E, int k, int H, int I, int max_tokens);

/* Routing for T tokens: zero the counts, draw k distinct experts per token from
 * hash(*counter, salt, token, pick), gate weights = softmax of the router logits
 * [T][E] over the picks, count per expert, scan offsets, list active experts. */
void sb_moe_route(sb_moe_ws *w, const bf16 *router_logits, int T,
                  const unsigned long long *counter, uint32_t salt, cudaStream_t s);
/* Permute x [T][H] into expert order and run the experts: wgu [E][2I][H], wd [E][H][I]
 * (PyTorch [out][in] layout). Leaves the expert outputs in w->zs. */
void sb_moe_experts(sb_moe_ws *w, const bf16 *x, const bf16 *wgu, const bf16 *wd, int T,
                    cudaStream_t s);
/* out[t] = shared[t] + sum_i gate_i * zs[perm[t,i]]  (shared may be NULL). */
void sb_moe_combine(const sb_moe_ws *w, const bf16 *shared, bf16 *out, int T,
                    cudaStream_t s);
/* The grouped GEMM alone (exposed for --check): Y[P][N] rows of expert e =
 * X rows [offsets[e], offsets[e]+counts[e]) times W[e]^T, over the active list. */
void sb_moe_gemm(const bf16 *X, const bf16 *W, bf16 *Y, const int *counts,
                 const int *offsets, const int *active, const int *n_active, int max_active,
                 int N, int K, cudaStream_t s);
#endif
