/* sbkern: the small kernels of specbench (see sbkern.h). Simple grid-stride or
 * block-per-token kernels: at decode sizes they cost a few microseconds each, like the
 * fused elementwise kernels of a real server; GEMMs and attention dominate. */
#include "sbkern.h"
#include "sbcheck.h"
#include <cfloat>

static int blocks_for(size_t n, int threads) {
    size_t b = (n + threads - 1) / threads;
    if (b > 65536) b = 65536;          /* grid-stride loops cover the rest */
    if (b < 1) b = 1;
    return (int)b;
}

__global__ void k_init_uniform(bf16 *p, size_t n, uint64_t seed, float lo, float hi) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        uint64_t h = sb_hash64(seed * 0x100000001B3ull ^ i);
        float u = (float)(h >> 40) * (1.0f / 16777216.0f);
        p[i] = __float2bfloat16(lo + (hi - lo) * u);
    }
}
void sb_init_uniform(bf16 *p, size_t n, uint64_t seed, float lo, float hi, cudaStream_t s) {
    k_init_uniform<<<blocks_for(n, 256), 256, 0, s>>>(p, n, seed, lo, hi);
    CK_LAUNCH();
}

__global__ void k_fill_u16(uint16_t *p, size_t n, uint16_t v) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = v;
}
void sb_fill_u16(void *p, size_t n, uint16_t v, cudaStream_t s) {
    k_fill_u16<<<blocks_for(n, 256), 256, 0, s>>>((uint16_t *)p, n, v);
    CK_LAUNCH();
}

__global__ void k_count_nonfinite(const bf16 *p, size_t n, int *count) {
    int mine = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float v = __bfloat162float(p[i]);
        if (!isfinite(v)) mine++;
    }
    if (mine) atomicAdd(count, mine);
}
void sb_count_nonfinite(const bf16 *p, size_t n, int *count, cudaStream_t s) {
    k_count_nonfinite<<<blocks_for(n, 256), 256, 0, s>>>(p, n, count);
    CK_LAUNCH();
}

__global__ void k_embed(const int *ids, int stride, int off, const bf16 *table,
                        int rows_table, int H, bf16 *out) {
    int t = blockIdx.x;
    int id = ids[(size_t)t * stride + off];
    id = ((id % rows_table) + rows_table) % rows_table;
    const uint4 *src = (const uint4 *)(table + (size_t)id * H);
    uint4 *dst = (uint4 *)(out + (size_t)t * H);
    for (int i = threadIdx.x; i < H / 8; i += blockDim.x) dst[i] = src[i];
}
void sb_embed(const int *ids, int stride, int off, const bf16 *table, int rows_table,
              int H, bf16 *out, int T, cudaStream_t s) {
    k_embed<<<T, 256, 0, s>>>(ids, stride, off, table, rows_table, H, out);
    CK_LAUNCH();
}

/* Block-wide sum of one float per thread (blockDim.x multiple of 32, <= 1024). */
__device__ float block_sum(float v) {
    __shared__ float red[32];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    int w = threadIdx.x / 32, l = threadIdx.x % 32;
    __syncthreads();                  /* red[] may still be read by a previous call */
    if (l == 0) red[w] = v;
    __syncthreads();
    int nw = blockDim.x / 32;
    float r = (l < nw) ? red[l] : 0.f;
    for (int o = 16; o > 0; o >>= 1) r += __shfl_xor_sync(0xffffffffu, r, o);
    return r;
}

#define RMS_EPS 1e-6f   /* Llama-3 / DeepSeek-V3 rms_norm_eps */

/* One row: yr = xr * w / rms(xr), given this thread's part ss of the sum of squares. */
__device__ __forceinline__ void rms_write(const bf16 *xr, const bf16 *w, bf16 *yr, int H,
                                          float ss) {
    float inv = rsqrtf(block_sum(ss) / H + RMS_EPS);
    for (int i = threadIdx.x; i < H; i += blockDim.x)
        yr[i] = __float2bfloat16(__bfloat162float(xr[i]) * inv * __bfloat162float(w[i]));
}

/* One row of RMSNorm: yr = xr * w / rms(xr). */
__device__ __forceinline__ void rms_row(const bf16 *xr, const bf16 *w, bf16 *yr, int H) {
    float ss = 0.f;
    for (int i = threadIdx.x; i < H; i += blockDim.x) {
        float v = __bfloat162float(xr[i]);
        ss += v * v;
    }
    rms_write(xr, w, yr, H, ss);
}

__global__ void k_rmsnorm(const bf16 *x, const bf16 *w, bf16 *y, int H) {
    size_t t = blockIdx.x;
    rms_row(x + t * H, w, y + t * H, H);
}
void sb_rmsnorm(const bf16 *x, const bf16 *w, bf16 *y, int H, int T, cudaStream_t s) {
    k_rmsnorm<<<T, 256, 0, s>>>(x, w, y, H);
    CK_LAUNCH();
}

__global__ void k_add_rmsnorm(bf16 *x, const bf16 *r, const bf16 *w, bf16 *y, int H) {
    size_t t = blockIdx.x;
    bf16 *xr = x + t * H;
    const bf16 *rr = r + t * H;
    float ss = 0.f;
    for (int i = threadIdx.x; i < H; i += blockDim.x) {
        bf16 b = __float2bfloat16(__bfloat162float(xr[i]) + __bfloat162float(rr[i]));
        xr[i] = b;
        float v = __bfloat162float(b);
        ss += v * v;
    }
    rms_write(xr, w, y + t * H, H, ss);
}
void sb_add_rmsnorm(bf16 *x, const bf16 *r, const bf16 *w, bf16 *y, int H, int T,
                    cudaStream_t s) {
    k_add_rmsnorm<<<T, 256, 0, s>>>(x, r, w, y, H);
    CK_LAUNCH();
}

__global__ void k_norm_cat(const bf16 *e, const bf16 *we, const bf16 *h, const bf16 *wh,
                           bf16 *y, int H) {
    size_t t = blockIdx.x;
    for (int part = 0; part < 2; part++)
        rms_row((part ? h : e) + t * H, part ? wh : we, y + t * 2 * H + part * H, H);
}
void sb_norm_cat(const bf16 *e, const bf16 *we, const bf16 *h, const bf16 *wh, bf16 *y,
                 int H, int T, cudaStream_t s) {
    k_norm_cat<<<T, 256, 0, s>>>(e, we, h, wh, y, H);
    CK_LAUNCH();
}

#define ROPE_THETA 500000.0f   /* Llama-3.1 rope_theta */

__global__ void k_rope_append(const bf16 *qkv, bf16 *qout, bf16 *kc, bf16 *vc,
                              const int *base, int pos_add, int qlen, int nh, int nkv,
                              int D, int max_ctx) {
    int t = blockIdx.x;
    int row = t / qlen, j = t % qlen;
    int pos = base[row] + pos_add + j;
    if (pos >= max_ctx) pos = max_ctx - 1;     /* host keeps pos < max_ctx; never write out of bounds */
    int W = (nh + 2 * nkv) * D;
    const bf16 *src = qkv + (size_t)t * W;
    int half = D / 2;
    size_t kvoff = (((size_t)row * max_ctx + pos) * nkv) * D;
    /* q and k heads: rotate pairs (i, i+half) */
    for (int idx = threadIdx.x; idx < (nh + nkv) * half; idx += blockDim.x) {
        int hd = idx / half, i = idx % half;
        float inv_freq = powf(ROPE_THETA, -2.0f * i / D);
        float sn, cs;
        sincosf(pos * inv_freq, &sn, &cs);
        const bf16 *hp = src + hd * D;
        float a = __bfloat162float(hp[i]), b = __bfloat162float(hp[i + half]);
        bf16 ra = __float2bfloat16(a * cs - b * sn), rb = __float2bfloat16(b * cs + a * sn);
        if (hd < nh) {
            bf16 *q = qout + ((size_t)t * nh + hd) * D;
            q[i] = ra; q[i + half] = rb;
        } else {
            bf16 *k = kc + kvoff + (size_t)(hd - nh) * D;
            k[i] = ra; k[i + half] = rb;
        }
    }
    for (int idx = threadIdx.x; idx < nkv * D; idx += blockDim.x)
        vc[kvoff + idx] = src[(nh + nkv) * D + idx];
}
void sb_rope_append(const bf16 *qkv, bf16 *qout, bf16 *kc, bf16 *vc, const int *base,
                    int pos_add, int qlen, int nh, int nkv, int D, int max_ctx, int T,
                    cudaStream_t s) {
    k_rope_append<<<T, 256, 0, s>>>(qkv, qout, kc, vc, base, pos_add, qlen, nh, nkv, D,
                                    max_ctx);
    CK_LAUNCH();
}

__global__ void k_silu_mul(const bf16 *gu, bf16 *out, int I) {
    size_t t = blockIdx.y;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < I; i += gridDim.x * blockDim.x) {
        float g = __bfloat162float(gu[t * 2 * I + i]);
        float u = __bfloat162float(gu[t * 2 * I + I + i]);
        out[t * I + i] = __float2bfloat16(g / (1.f + __expf(-g)) * u);
    }
}
void sb_silu_mul(const bf16 *gu, bf16 *out, int I, int T, cudaStream_t s) {
    if (T <= 0) return;
    dim3 grid((I + 255) / 256, T);
    k_silu_mul<<<grid, 256, 0, s>>>(gu, out, I);
    CK_LAUNCH();
}

__global__ void k_argmax(const bf16 *logits, int T, int Vp, int nparts, int *out,
                         int out_stride, int out_off) {
    /* T here is the layout's token count (the part stride) */
    int t = blockIdx.x;
    float best = -FLT_MAX;
    int bi = 0x7fffffff;
    for (int part = 0; part < nparts; part++) {
        const bf16 *row = logits + ((size_t)part * T + t) * Vp;
        for (int v = threadIdx.x; v < Vp; v += blockDim.x) {
            float x = __bfloat162float(row[v]);
            int gi = part * Vp + v;
            if (x > best || (x == best && gi < bi)) { best = x; bi = gi; }
        }
    }
    for (int o = 16; o > 0; o >>= 1) {
        float ob = __shfl_xor_sync(0xffffffffu, best, o);
        int oi = __shfl_xor_sync(0xffffffffu, bi, o);
        if (ob > best || (ob == best && oi < bi)) { best = ob; bi = oi; }
    }
    __shared__ float sb[32];
    __shared__ int si[32];
    int w = threadIdx.x / 32, l = threadIdx.x % 32;
    if (l == 0) { sb[w] = best; si[w] = bi; }
    __syncthreads();
    if (w == 0) {
        int nw = blockDim.x / 32;
        best = l < nw ? sb[l] : -FLT_MAX;
        bi = l < nw ? si[l] : 0x7fffffff;
        for (int o = 16; o > 0; o >>= 1) {
            float ob = __shfl_xor_sync(0xffffffffu, best, o);
            int oi = __shfl_xor_sync(0xffffffffu, bi, o);
            if (ob > best || (ob == best && oi < bi)) { best = ob; bi = oi; }
        }
        if (l == 0) out[(size_t)t * out_stride + out_off] = bi == 0x7fffffff ? 0 : bi;
    }
}
void sb_argmax(const bf16 *logits, int T, int T_layout, int Vp, int nparts, int *out,
               int out_stride, int out_off, cudaStream_t s) {
    k_argmax<<<T, 512, 0, s>>>(logits, T_layout, Vp, nparts, out, out_stride, out_off);
    CK_LAUNCH();
}

__global__ void k_accept_greedy(const int *ids, const int *tgt, int rows, int q, int *acc) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    int a = 0;
    while (a < q - 1 && ids[r * q + a + 1] == tgt[r * q + a]) a++;
    acc[r] = a;
}
void sb_accept_greedy(const int *ids, const int *tgt, int rows, int q, int *acc,
                      cudaStream_t s) {
    k_accept_greedy<<<(rows + 127) / 128, 128, 0, s>>>(ids, tgt, rows, q, acc);
    CK_LAUNCH();
}

__global__ void k_next_pending(const int *tgt, const int *sel, int rows, int q, int *ids) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    int a = sel[r];
    a = a < 0 ? 0 : (a > q - 1 ? q - 1 : a);
    ids[r * q] = tgt[r * q + a];
}
void sb_next_pending(const int *tgt, const int *sel, int rows, int q, int *ids,
                     cudaStream_t s) {
    k_next_pending<<<(rows + 127) / 128, 128, 0, s>>>(tgt, sel, rows, q, ids);
    CK_LAUNCH();
}

__global__ void k_gather_rows(const bf16 *src, const int *sel, int q, bf16 *dst, int W) {
    int r = blockIdx.x;
    int a = sel ? sel[r] : q - 1;
    a = a < 0 ? 0 : (a > q - 1 ? q - 1 : a);
    const uint4 *s4 = (const uint4 *)(src + ((size_t)r * q + a) * W);
    uint4 *d4 = (uint4 *)(dst + (size_t)r * W);
    for (int i = threadIdx.x; i < W / 8; i += blockDim.x) d4[i] = s4[i];
}
void sb_gather_rows(const bf16 *src, const int *sel, int q, bf16 *dst, int W, int rows,
                    cudaStream_t s) {
    k_gather_rows<<<rows, 256, 0, s>>>(src, sel, q, dst, W);
    CK_LAUNCH();
}

__global__ void k_copy_cols(const bf16 *src, bf16 *dst, int W, int ld, int off) {
    size_t t = blockIdx.x;
    const uint4 *s4 = (const uint4 *)(src + t * W);
    uint4 *d4 = (uint4 *)(dst + t * ld + off);
    for (int i = threadIdx.x; i < W / 8; i += blockDim.x) d4[i] = s4[i];
}
void sb_copy_cols(const bf16 *src, bf16 *dst, int W, int ld, int off, int T,
                  cudaStream_t s) {
    k_copy_cols<<<T, 256, 0, s>>>(src, dst, W, ld, off);
    CK_LAUNCH();
}

__global__ void k_bump(unsigned long long *c) { *c += 1; }
void sb_bump(unsigned long long *c, cudaStream_t s) {
    k_bump<<<1, 1, 0, s>>>(c);
    CK_LAUNCH();
}
