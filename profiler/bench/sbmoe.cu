/* sbmoe: random-routed MoE with a grouped tensor-core GEMM (see sbmoe.h).
 * GEMM tiling: a block of 4 warps; each warp owns a 16-column tile and a 1/KS share of
 * K (KS = 4 split-K for the wide-K gate/up GEMM so that few touched experts still spread
 * over many SMs; KS = 1 for the short-K down GEMM), up to 64 token rows at a time. */
#include "sbmoe.h"
#include "sbcheck.h"
#include <mma.h>
#include <cfloat>
using namespace nvcuda;

static size_t al256(size_t x) { return (x + 255) & ~(size_t)255; }

size_t sb_moe_ws_bytes(int E, int k, int H, int I, int max_tokens) {
    size_t P = (size_t)max_tokens * k;
    return 4 * al256((size_t)E * 4) + al256(4) + 2 * al256(P * 4) + al256(P * 4) +
           al256((P + SB_MOE_PAD) * H * 2) + al256(P * 2 * I * 2) +
           al256((P + SB_MOE_PAD) * I * 2) + al256(P * H * 2);
}

void sb_moe_carve(sb_moe_ws *w, void *mem, int E, int k, int H, int I, int max_tokens) {
    size_t P = (size_t)max_tokens * k;
    char *p = (char *)mem;
    w->E = E; w->k = k; w->H = H; w->I = I; w->max_tokens = max_tokens;
    w->counts = (int *)p;   p += al256((size_t)E * 4);
    w->offsets = (int *)p;  p += al256((size_t)E * 4);
    w->fill = (int *)p;     p += al256((size_t)E * 4);
    w->active = (int *)p;   p += al256((size_t)E * 4);
    w->n_active = (int *)p; p += al256(4);
    w->topk_ids = (int *)p; p += al256(P * 4);
    w->perm = (int *)p;     p += al256(P * 4);
    w->topk_w = (float *)p; p += al256(P * 4);
    w->xs = (bf16 *)p;      p += al256((P + SB_MOE_PAD) * H * 2);
    w->ys = (bf16 *)p;      p += al256(P * 2 * I * 2);
    w->as = (bf16 *)p;      p += al256((P + SB_MOE_PAD) * I * 2);
    w->zs = (bf16 *)p;
}

__global__ void k_route(const bf16 *logits, int T, int E, int k,
                        const unsigned long long *counter, uint32_t salt, int *ids,
                        float *wts, int *counts) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= T) return;
    unsigned long long c = *counter;
    int pick[SB_MOE_MAXK];
    float lg[SB_MOE_MAXK];
    float mx = -FLT_MAX;
    for (int i = 0; i < k; i++) {
        int e;
        for (uint64_t attempt = 0;; attempt++) {
            uint64_t h = sb_hash64(c * 0x9E3779B97F4A7C15ull ^ ((uint64_t)salt << 48) ^
                                   ((uint64_t)t << 20) ^ ((uint64_t)i << 8) ^ attempt);
            e = (int)(h % (uint64_t)E);
            bool dup = false;
            for (int j = 0; j < i; j++) dup |= pick[j] == e;
            if (!dup) break;
        }
        pick[i] = e;
        lg[i] = __bfloat162float(logits[(size_t)t * E + e]);
        mx = fmaxf(mx, lg[i]);
    }
    float sum = 0.f;
    for (int i = 0; i < k; i++) { lg[i] = __expf(lg[i] - mx); sum += lg[i]; }
    for (int i = 0; i < k; i++) {
        ids[t * k + i] = pick[i];
        wts[t * k + i] = lg[i] / sum;
        atomicAdd(&counts[pick[i]], 1);
    }
}

/* Exclusive scan of counts into offsets, and the list of experts with tokens. One block
 * of 1024 threads, E in chunks of 1024. */
__global__ void k_scan(const int *counts, int E, int *offsets, int *fill, int *active,
                       int *n_active) {
    __shared__ int wsum[2][32];
    __shared__ int carry[2];
    int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    if (tid == 0) { carry[0] = 0; carry[1] = 0; }
    __syncthreads();
    for (int base = 0; base < E; base += 1024) {
        int e = base + tid;
        int v = e < E ? counts[e] : 0;
        int f = v > 0 ? 1 : 0;
        int iv = v, iff = f;           /* inclusive scans within the warp */
        for (int o = 1; o < 32; o <<= 1) {
            int a = __shfl_up_sync(0xffffffffu, iv, o);
            int b = __shfl_up_sync(0xffffffffu, iff, o);
            if (lane >= o) { iv += a; iff += b; }
        }
        if (lane == 31) { wsum[0][warp] = iv; wsum[1][warp] = iff; }
        __syncthreads();
        if (warp == 0) {
            int a = wsum[0][lane], b = wsum[1][lane];
            for (int o = 1; o < 32; o <<= 1) {
                int x = __shfl_up_sync(0xffffffffu, a, o);
                int y = __shfl_up_sync(0xffffffffu, b, o);
                if (lane >= o) { a += x; b += y; }
            }
            wsum[0][lane] = a; wsum[1][lane] = b;    /* inclusive over warps */
        }
        __syncthreads();
        int wv = warp ? wsum[0][warp - 1] : 0, wf = warp ? wsum[1][warp - 1] : 0;
        if (e < E) {
            offsets[e] = carry[0] + wv + iv - v;
            fill[e] = 0;
            if (f) active[carry[1] + wf + iff - 1] = e;
        }
        __syncthreads();
        if (tid == 0) { carry[0] += wsum[0][31]; carry[1] += wsum[1][31]; }
        __syncthreads();
    }
    if (tid == 0) *n_active = carry[1];
}

void sb_moe_route(sb_moe_ws *w, const bf16 *router_logits, int T,
                  const unsigned long long *counter, uint32_t salt, cudaStream_t s) {
    SB_REQUIRE(T <= w->max_tokens, "moe: %d tokens > capacity %d", T, w->max_tokens);
    CK_CUDA(cudaMemsetAsync(w->counts, 0, (size_t)w->E * 4, s));
    k_route<<<(T + 127) / 128, 128, 0, s>>>(router_logits, T, w->E, w->k, counter, salt,
                                            w->topk_ids, w->topk_w, w->counts);
    CK_LAUNCH();
    k_scan<<<1, 1024, 0, s>>>(w->counts, w->E, w->offsets, w->fill, w->active, w->n_active);
    CK_LAUNCH();
}

__global__ void k_permute(const bf16 *x, int k, int H, const int *ids, const int *offsets,
                          int *fill, int *perm, bf16 *xs) {
    __shared__ int pos;
    int p = blockIdx.x, t = p / k;
    if (threadIdx.x == 0) {
        int e = ids[p];
        pos = offsets[e] + atomicAdd(&fill[e], 1);
        perm[p] = pos;
    }
    __syncthreads();
    const uint4 *src = (const uint4 *)(x + (size_t)t * H);
    uint4 *dst = (uint4 *)(xs + (size_t)pos * H);
    for (int i = threadIdx.x; i < H / 8; i += blockDim.x) dst[i] = src[i];
}

template <int KS>
__global__ void __launch_bounds__(128) k_moe_gemm(const bf16 *X, const bf16 *W, bf16 *Y,
                                                  const int *counts, const int *offsets,
                                                  const int *active, const int *n_active,
                                                  int N, int K) {
    constexpr int NW = 4 / KS;                     /* 16-column tiles per block */
    __shared__ __align__(128) float red[4][4][256];   /* wmma stores need 32-byte alignment */
    int a = blockIdx.y;
    if (a >= *n_active) return;
    int e = active[a], c = counts[e], off = offsets[e];
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    int nsub = warp / KS, ks = warp % KS;
    int n0 = (blockIdx.x * NW + nsub) * 16;
    int kpart = K / KS, kb = ks * kpart;
    const bf16 *Wt = W + ((size_t)e * N + n0) * K;
    for (int m0 = 0; m0 < c; m0 += 64) {
        int mt = min(4, (c - m0 + 15) / 16);
        wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[4];
#pragma unroll
        for (int i = 0; i < 4; i++) wmma::fill_fragment(acc[i], 0.f);
        const bf16 *Xb = X + (size_t)(off + m0) * K;
#pragma unroll 4
        for (int kk = kb; kk < kb + kpart; kk += 16) {
            wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::col_major> fb;
            wmma::load_matrix_sync(fb, Wt + kk, K);
#pragma unroll
            for (int i = 0; i < 4; i++) {
                if (i < mt) {
                    wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major> fa;
                    wmma::load_matrix_sync(fa, Xb + (size_t)16 * i * K + kk, K);
                    wmma::mma_sync(acc[i], fa, fb, acc[i]);
                }
            }
        }
#pragma unroll
        for (int i = 0; i < 4; i++)
            if (i < mt) wmma::store_matrix_sync(red[warp][i], acc[i], 16, wmma::mem_row_major);
        __syncthreads();
        if (ks == 0) {
            for (int i = 0; i < mt; i++)
                for (int idx = lane; idx < 256; idx += 32) {
                    float v = 0.f;
#pragma unroll
                    for (int s2 = 0; s2 < KS; s2++) v += red[warp + s2][i][idx];
                    int r = m0 + 16 * i + idx / 16;
                    if (r < c) Y[(size_t)(off + r) * N + n0 + idx % 16] = __float2bfloat16(v);
                }
        }
        __syncthreads();
    }
}

void sb_moe_gemm(const bf16 *X, const bf16 *W, bf16 *Y, const int *counts,
                 const int *offsets, const int *active, const int *n_active, int max_active,
                 int N, int K, cudaStream_t s) {
    int KS = K >= 1024 ? 4 : 1;
    int NW = 4 / KS;
    SB_REQUIRE(K % (16 * KS) == 0, "moe gemm: K %d not a multiple of %d", K, 16 * KS);
    SB_REQUIRE(N % (16 * NW) == 0, "moe gemm: N %d not a multiple of %d", N, 16 * NW);
    dim3 grid(N / (16 * NW), max_active);
    if (KS == 4)
        k_moe_gemm<4><<<grid, 128, 0, s>>>(X, W, Y, counts, offsets, active, n_active, N, K);
    else
        k_moe_gemm<1><<<grid, 128, 0, s>>>(X, W, Y, counts, offsets, active, n_active, N, K);
    CK_LAUNCH();
}

void sb_moe_experts(sb_moe_ws *w, const bf16 *x, const bf16 *wgu, const bf16 *wd, int T,
                    cudaStream_t s) {
    int P = T * w->k;
    int max_active = P < w->E ? P : w->E;
    k_permute<<<P, 128, 0, s>>>(x, w->k, w->H, w->topk_ids, w->offsets, w->fill, w->perm,
                                w->xs);
    CK_LAUNCH();
    sb_moe_gemm(w->xs, wgu, w->ys, w->counts, w->offsets, w->active, w->n_active,
                max_active, 2 * w->I, w->H, s);
    sb_silu_mul(w->ys, w->as, w->I, P, s);
    sb_moe_gemm(w->as, wd, w->zs, w->counts, w->offsets, w->active, w->n_active,
                max_active, w->H, w->I, s);
}

__global__ void k_moe_combine(const bf16 *zs, const int *perm, const float *wts, int k,
                              int H, const bf16 *shared, bf16 *out) {
    size_t t = blockIdx.x;
    for (int i = threadIdx.x; i < H; i += blockDim.x) {
        float v = shared ? __bfloat162float(shared[t * H + i]) : 0.f;
        for (int j = 0; j < k; j++)
            v += wts[t * k + j] * __bfloat162float(zs[(size_t)perm[t * k + j] * H + i]);
        out[t * H + i] = __float2bfloat16(v);
    }
}

void sb_moe_combine(const sb_moe_ws *w, const bf16 *shared, bf16 *out, int T,
                    cudaStream_t s) {
    k_moe_combine<<<T, 256, 0, s>>>(w->zs, w->perm, w->topk_w, w->k, w->H, shared, out);
    CK_LAUNCH();
}
