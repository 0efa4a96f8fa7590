/* sbattn: decode/verify attention over a paged-free KV cache, for CUDA-graph replay.
 * Each row r has qlen query tokens at positions base[r] .. base[r]+qlen-1 (their K/V
 * already appended); query j sees keys [0, base[r]+j] (causal chain mask, the topk=1
 * EAGLE tree). Lengths are read from the device array base[], so one captured graph
 * serves every context length. Split-KV (flash-decoding): grid (splits, kv heads, rows)
 * of fixed size; a split past a row's length exits at once; bf16 tensor cores (WMMA)
 * for Q.K^T and P.V, online softmax in fp32, then a combine kernel.
 * Workload: head_dim 128, GQA group * qlen <= 64 query vectors per (row, kv head). */
#ifndef SBATTN_H
#define SBATTN_H
#include "sbkern.h"

#define SB_ATTN_D 128          /* head_dim the kernel is built for (Llama-3, our presets) */
#define SB_ATTN_CHUNK 64       /* key positions per tensor-core step */
#define SB_ATTN_MAXQ 64        /* query vectors (group * qlen) per block */

typedef struct {
    const bf16 *q;             /* [T][nh][D], T = rows*qlen */
    const bf16 *kc, *vc;       /* [rows][max_ctx][nkv][D] */
    const int *base;           /* [rows] position of each row's first query token is */
    int pos_add;               /* base[r] + pos_add (draft chain step i: pos_add = i) */
    int rows, qlen, nh, nkv, max_ctx;
    int split_len, nsplit;     /* from sb_attn_plan */
    float *opart, *mlpart;     /* workspace: [T][nh][nsplit][D] and [T][nh][nsplit][2] */
    bf16 *out;                 /* [T][nh][D] */
} sb_attn_args;

/* Splits so that rows*nkv*nsplit blocks fill the GPU ~8 blocks per SM; split_len a
 * multiple of the chunk. Depends only on (rows, nkv, max_ctx, sms): fixed per graph. */
void sb_attn_plan(int rows, int nkv, int max_ctx, int sms, int *split_len, int *nsplit);
/* Workspace floats needed for T tokens. */
size_t sb_attn_ws_floats(int T, int nh, int nsplit);
/* Once per process, before any capture: opt the kernels in to >48 KB shared memory. */
void sb_attn_init(void);
void sb_attention(const sb_attn_args *a, cudaStream_t s);
#endif
