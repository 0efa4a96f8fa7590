/* sbattn: split-KV decode attention with WMMA (see sbattn.h). Shared memory per block
 * for MT 16-row query tiles: Q, K, V tiles in bf16, scores and the output accumulator in
 * fp32; ~54 KB at MT=1 (plain decode), ~74 KB at MT=2 (verify with 7 tokens, GQA 4). */
#include "sbattn.h"
#include "sbcheck.h"
#include <mma.h>
#include <cfloat>
using namespace nvcuda;

#define LDK 136                /* bf16 row stride of Q/K/V tiles: 128 + 8 (bank spread) */
#define LDS 68                 /* fp32 stride of the score tile: 64 + 4 */
#define LDP 72                 /* bf16 stride of the probability tile */
#define LDO 132                /* fp32 stride of the output accumulator */
#define NTHR 128

__host__ __device__ static inline size_t align128(size_t x) { return (x + 127) & ~(size_t)127; }

static size_t smem_bytes(int MT) {
    size_t M = (size_t)MT * 16;
    return align128(M * LDK * 2) + 2 * align128((size_t)SB_ATTN_CHUNK * LDK * 2) +
           align128(M * LDS * 4) + align128(M * LDP * 2) + align128(M * LDO * 4) +
           3 * align128(M * 4);
}

void sb_attn_plan(int rows, int nkv, int max_ctx, int sms, int *split_len, int *nsplit) {
    int chunks = (max_ctx + SB_ATTN_CHUNK - 1) / SB_ATTN_CHUNK;
    long want = 8L * sms;                          /* blocks to fill the GPU */
    long per = (long)rows * nkv;
    int ns = (int)((want + per - 1) / per);
    if (ns < 1) ns = 1;
    if (ns > chunks) ns = chunks;
    int cps = (chunks + ns - 1) / ns;              /* chunks per split */
    *split_len = cps * SB_ATTN_CHUNK;
    *nsplit = (max_ctx + *split_len - 1) / *split_len;
}

size_t sb_attn_ws_floats(int T, int nh, int nsplit) {
    return (size_t)T * nh * nsplit * (SB_ATTN_D + 2);
}

template <int MT>
__global__ void __launch_bounds__(NTHR) k_attn_split(sb_attn_args a, float scale_log2) {
    const int M = MT * 16;
    extern __shared__ __align__(128) unsigned char smem[];
    int row = blockIdx.z, kvh = blockIdx.y, sp = blockIdx.x;
    int G = a.nh / a.nkv;
    int nq = G * a.qlen;
    int b = a.base[row] + a.pos_add;
    int kvmax = b + a.qlen;
    int p_begin = sp * a.split_len;
    if (p_begin >= kvmax) return;
    int p_end = min(p_begin + a.split_len, kvmax);

    unsigned char *ptr = smem;
    bf16 *Qs = (bf16 *)ptr;  ptr += align128((size_t)M * LDK * 2);
    bf16 *Ks = (bf16 *)ptr;  ptr += align128((size_t)SB_ATTN_CHUNK * LDK * 2);
    bf16 *Vs = (bf16 *)ptr;  ptr += align128((size_t)SB_ATTN_CHUNK * LDK * 2);
    float *S = (float *)ptr; ptr += align128((size_t)M * LDS * 4);
    bf16 *P = (bf16 *)ptr;   ptr += align128((size_t)M * LDP * 2);
    float *O = (float *)ptr; ptr += align128((size_t)M * LDO * 4);
    float *mrow = (float *)ptr; ptr += align128((size_t)M * 4);
    float *lrow = (float *)ptr; ptr += align128((size_t)M * 4);
    float *arow = (float *)ptr;

    int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int D = SB_ATTN_D;
    /* Q: query vector m = j*G + g -> token row*qlen+j, head kvh*G+g; rows >= nq zero */
    for (int idx = tid; idx < M * (D / 8); idx += NTHR) {
        int m = idx / (D / 8), c = idx % (D / 8);
        uint4 v = make_uint4(0, 0, 0, 0);
        if (m < nq) {
            int j = m / G, g = m % G;
            const bf16 *src = a.q + (((size_t)row * a.qlen + j) * a.nh + kvh * G + g) * D;
            v = ((const uint4 *)src)[c];
        }
        *(uint4 *)(Qs + m * LDK + c * 8) = v;
    }
    for (int idx = tid; idx < M * D; idx += NTHR) O[(idx / D) * LDO + idx % D] = 0.f;
    for (int m = tid; m < M; m += NTHR) { mrow[m] = -FLT_MAX; lrow[m] = 0.f; }

    for (int c0 = p_begin; c0 < p_end; c0 += SB_ATTN_CHUNK) {
        for (int idx = tid; idx < SB_ATTN_CHUNK * (D / 8); idx += NTHR) {
            int p = idx / (D / 8), c = idx % (D / 8);
            uint4 kv = make_uint4(0, 0, 0, 0), vv = make_uint4(0, 0, 0, 0);
            if (c0 + p < p_end) {
                size_t off = (((size_t)row * a.max_ctx + c0 + p) * a.nkv + kvh) * D;
                kv = ((const uint4 *)(a.kc + off))[c];
                vv = ((const uint4 *)(a.vc + off))[c];
            }
            *(uint4 *)(Ks + p * LDK + c * 8) = kv;
            *(uint4 *)(Vs + p * LDK + c * 8) = vv;
        }
        __syncthreads();
        /* S = Q K^T : MT x 4 tiles of 16x16 */
        for (int tile = warp; tile < MT * 4; tile += NTHR / 32) {
            int mt = tile / 4, nt = tile % 4;
            wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
            wmma::fill_fragment(acc, 0.f);
            for (int kk = 0; kk < D / 16; kk++) {
                wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major> fa;
                wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::col_major> fb;
                wmma::load_matrix_sync(fa, Qs + mt * 16 * LDK + kk * 16, LDK);
                wmma::load_matrix_sync(fb, Ks + nt * 16 * LDK + kk * 16, LDK);
                wmma::mma_sync(acc, fa, fb, acc);
            }
            wmma::store_matrix_sync(S + mt * 16 * LDS + nt * 16, acc, LDS, wmma::mem_row_major);
        }
        __syncthreads();
        /* online softmax: a warp per query row, a lane per 2 positions */
        for (int m = warp; m < M; m += NTHR / 32) {
            if (m >= nq) {
                P[m * LDP + lane] = __float2bfloat16(0.f);
                P[m * LDP + lane + 32] = __float2bfloat16(0.f);
                if (lane == 0) arow[m] = 1.f;
                continue;
            }
            int j = m / G;
            int lim = min(b + j + 1, p_end);       /* causal: keys < b+j+1 */
            float s0 = (c0 + lane < lim) ? S[m * LDS + lane] * scale_log2 : -FLT_MAX;
            float s1 = (c0 + lane + 32 < lim) ? S[m * LDS + lane + 32] * scale_log2 : -FLT_MAX;
            float mx = fmaxf(s0, s1);
            for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
            float mold = mrow[m];
            float mnew = fmaxf(mold, mx);
            float p0 = 0.f, p1 = 0.f, alpha = 1.f;
            if (mnew > -FLT_MAX) {
                p0 = (s0 > -FLT_MAX) ? exp2f(s0 - mnew) : 0.f;
                p1 = (s1 > -FLT_MAX) ? exp2f(s1 - mnew) : 0.f;
                alpha = (mold > -FLT_MAX) ? exp2f(mold - mnew) : 0.f;
            }
            bf16 b0 = __float2bfloat16(p0), b1 = __float2bfloat16(p1);
            /* sum the rounded values: the same P feeds the P.V product */
            float sum = __bfloat162float(b0) + __bfloat162float(b1);
            for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
            P[m * LDP + lane] = b0;
            P[m * LDP + lane + 32] = b1;
            if (lane == 0) {
                lrow[m] = lrow[m] * alpha + sum;
                mrow[m] = mnew;
                arow[m] = alpha;
            }
        }
        __syncthreads();
        for (int idx = tid; idx < M * D; idx += NTHR) O[(idx / D) * LDO + idx % D] *= arow[idx / D];
        __syncthreads();
        /* O += P V : MT x 8 tiles */
        for (int tile = warp; tile < MT * (D / 16); tile += NTHR / 32) {
            int mt = tile / (D / 16), dt = tile % (D / 16);
            wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
            wmma::load_matrix_sync(acc, O + mt * 16 * LDO + dt * 16, LDO, wmma::mem_row_major);
            for (int kk = 0; kk < SB_ATTN_CHUNK / 16; kk++) {
                wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major> fa;
                wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::row_major> fb;
                wmma::load_matrix_sync(fa, P + mt * 16 * LDP + kk * 16, LDP);
                wmma::load_matrix_sync(fb, Vs + kk * 16 * LDK + dt * 16, LDK);
                wmma::mma_sync(acc, fa, fb, acc);
            }
            wmma::store_matrix_sync(O + mt * 16 * LDO + dt * 16, acc, LDO, wmma::mem_row_major);
        }
        __syncthreads();
    }
    /* partials: unnormalised O, running max (log2 units) and sum */
    for (int idx = tid; idx < nq * D; idx += NTHR) {
        int m = idx / D, d = idx % D;
        int j = m / G, g = m % G;
        size_t tok = (size_t)row * a.qlen + j;
        size_t slot = (tok * a.nh + kvh * G + g) * a.nsplit + sp;
        a.opart[slot * D + d] = O[m * LDO + d];
        if (d == 0) {
            a.mlpart[slot * 2] = mrow[m];
            a.mlpart[slot * 2 + 1] = lrow[m];
        }
    }
}

__global__ void k_attn_combine(sb_attn_args a) {
    int tok = blockIdx.x / a.nh, h = blockIdx.x % a.nh;
    int row = tok / a.qlen;
    int kvmax = a.base[row] + a.pos_add + a.qlen;
    int ns = min(a.nsplit, (kvmax + a.split_len - 1) / a.split_len);
    size_t slot0 = ((size_t)tok * a.nh + h) * a.nsplit;
    float M = -FLT_MAX;
    for (int s = 0; s < ns; s++) M = fmaxf(M, a.mlpart[(slot0 + s) * 2]);
    float L = 0.f, acc = 0.f;
    int d = threadIdx.x;
    for (int s = 0; s < ns; s++) {
        float ms = a.mlpart[(slot0 + s) * 2];
        if (!(ms > -FLT_MAX)) continue;            /* no visible key in this split */
        float w = exp2f(ms - M);
        L += a.mlpart[(slot0 + s) * 2 + 1] * w;
        acc += a.opart[(slot0 + s) * SB_ATTN_D + d] * w;
    }
    a.out[((size_t)tok * a.nh + h) * SB_ATTN_D + d] = __float2bfloat16(L > 0.f ? acc / L : 0.f);
}

void sb_attn_init(void) {
    CK_CUDA(cudaFuncSetAttribute(k_attn_split<1>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem_bytes(1)));
    CK_CUDA(cudaFuncSetAttribute(k_attn_split<2>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem_bytes(2)));
    CK_CUDA(cudaFuncSetAttribute(k_attn_split<3>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem_bytes(3)));
    CK_CUDA(cudaFuncSetAttribute(k_attn_split<4>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem_bytes(4)));
}

void sb_attention(const sb_attn_args *a, cudaStream_t s) {
    int G = a->nh / a->nkv;
    int nq = G * a->qlen;
    SB_REQUIRE(a->nh % a->nkv == 0, "attention: heads %d not a multiple of kv heads %d", a->nh, a->nkv);
    SB_REQUIRE(nq <= SB_ATTN_MAXQ, "attention: group %d x qlen %d = %d query vectors > %d", G,
               a->qlen, nq, SB_ATTN_MAXQ);
    int MT = (nq + 15) / 16;
    dim3 grid(a->nsplit, a->nkv, a->rows);
    float scale_log2 = 1.4426950408889634f / sqrtf((float)SB_ATTN_D);
    size_t sm = smem_bytes(MT);
    switch (MT) {
    case 1: k_attn_split<1><<<grid, NTHR, sm, s>>>(*a, scale_log2); break;
    case 2: k_attn_split<2><<<grid, NTHR, sm, s>>>(*a, scale_log2); break;
    case 3: k_attn_split<3><<<grid, NTHR, sm, s>>>(*a, scale_log2); break;
    case 4: k_attn_split<4><<<grid, NTHR, sm, s>>>(*a, scale_log2); break;
    default: SB_REQUIRE(0, "attention: MT %d", MT);
    }
    CK_LAUNCH();
    k_attn_combine<<<a->rows * a->qlen * a->nh, SB_ATTN_D, 0, s>>>(*a);
    CK_LAUNCH();
}
