/* sbkern: the small kernels of specbench's forward passes: random init from a counter
 * hash, embedding lookup, RMSNorm (plain, fused with the residual add, and the EAGLE-3
 * two-input form), RoPE + KV-cache append, SiLU*up, argmax sampling, greedy accept, and
 * the little gathers that move tokens and hidden states between phases.
 * Workload: decode-sized token counts (1..~1000 tokens per launch), bf16 activations. */
#ifndef SBKERN_H
#define SBKERN_H
#include <cstdint>
#include <cstddef>
#include <cuda_runtime.h>
#include <cuda_bf16.h>

typedef __nv_bfloat16 bf16;

/* splitmix64 finaliser: the counter-based hash behind weights, routing and poison. */
__host__ __device__ inline uint64_t sb_hash64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* p[i] = uniform in [lo, hi) from hash(seed, i); every element written. */
void sb_init_uniform(bf16 *p, size_t n, uint64_t seed, float lo, float hi, cudaStream_t s);
/* Fill n 16-bit words with a pattern (0xFFFF is a bf16 NaN): the poison of --check. */
void sb_fill_u16(void *p, size_t n, uint16_t v, cudaStream_t s);
/* Count elements that are NaN or Inf into *count (device int, added to). */
void sb_count_nonfinite(const bf16 *p, size_t n, int *count, cudaStream_t s);

/* out[t] = table[ids[t*stride + off] mod rows_table], H wide. */
void sb_embed(const int *ids, int stride, int off, const bf16 *table, int rows_table,
              int H, bf16 *out, int T, cudaStream_t s);
/* y[t] = x[t] / rms(x[t]) * w */
void sb_rmsnorm(const bf16 *x, const bf16 *w, bf16 *y, int H, int T, cudaStream_t s);
/* x[t] += r[t]; y[t] = rmsnorm(x[t]) * w   (residual stream kept in bf16, as SGLang) */
void sb_add_rmsnorm(bf16 *x, const bf16 *r, const bf16 *w, bf16 *y, int H, int T,
                    cudaStream_t s);
/* EAGLE-3 draft input: y[t] = [rmsnorm(e[t])*we, rmsnorm(h[t])*wh], 2H wide. */
void sb_norm_cat(const bf16 *e, const bf16 *we, const bf16 *h, const bf16 *wh, bf16 *y,
                 int H, int T, cudaStream_t s);

/* Token t = row*qlen + j sits at position base[row] + pos_add + j. Applies NeoX RoPE
 * (theta 5e5, Llama-3's) to the q and k heads of qkv
 * [T][(nh+2nkv)*D], writes q to qout [T][nh][D] and k, v into the caches
 * [slot=row][max_ctx][nkv][D]. */
void sb_rope_append(const bf16 *qkv, bf16 *qout, bf16 *kc, bf16 *vc, const int *base,
                    int pos_add, int qlen, int nh, int nkv, int D, int max_ctx, int T,
                    cudaStream_t s);
/* out[t][i] = silu(gu[t][i]) * gu[t][I+i] */
void sb_silu_mul(const bf16 *gu, bf16 *out, int I, int T, cudaStream_t s);
/* Argmax for tokens t < T over a logits row that may be split in nparts slices (after an
 * all-gather the layout is [part][T_layout][Vp]). Writes the global index to
 * out[t*out_stride + out_off]. */
void sb_argmax(const bf16 *logits, int T, int T_layout, int Vp, int nparts, int *out,
               int out_stride, int out_off, cudaStream_t s);
/* Greedy chain verify (SGLang verify_tree_greedy for topk=1): for each row, the number
 * of leading draft tokens ids[r*q+j+1] equal to the target's choice tgt[r*q+j]. */
void sb_accept_greedy(const int *ids, const int *tgt, int rows, int q, int *acc,
                      cudaStream_t s);
/* After accept: the next verify input starts with the bonus token tgt[r*q+sel[r]]. */
void sb_next_pending(const int *tgt, const int *sel, int rows, int q, int *ids,
                     cudaStream_t s);
/* dst[r] = src[(r*q + sel[r])] rows of width W (sel == NULL: sel = q-1). */
void sb_gather_rows(const bf16 *src, const int *sel, int q, bf16 *dst, int W, int rows,
                    cudaStream_t s);
/* dst[t][off .. off+W) = src[t][0..W) with dst row stride ld (EAGLE-3 aux hiddens). */
void sb_copy_cols(const bf16 *src, bf16 *dst, int W, int ld, int off, int T,
                  cudaStream_t s);
/* (*c)++ : the routing counter, bumped inside every graph replay. */
void sb_bump(unsigned long long *c, cudaStream_t s);
#endif
