/* sbmodel: weights, caches, buffers and the forward passes of specbench (sbmodel.h).
 * All weights of a rank live in one allocation, initialised by one hash kernel per
 * tensor (uniform +-sqrt(3/fan_in), so activations keep unit scale through the layers;
 * norms uniform in [0.9, 1.1]); the KV caches start random: the prompt is "cached". */
#include "sbmodel.h"
#include "sbcheck.h"
#include <cstring>
#include <cmath>

int sb_preset(const char *name, sb_shape *sh) {
    memset(sh, 0, sizeof *sh);
    if (!strcmp(name, "llama8b")) {
        /* Llama-3.1-8B config.json (meta-llama/Llama-3.1-8B-Instruct), TP=1 */
        snprintf(sh->name, sizeof sh->name, "llama8b");
        sh->layers = 32; sh->dense_layers = 32; sh->hidden = 4096; sh->heads = 32;
        sh->kv_heads = 8; sh->head_dim = 128; sh->inter = 14336; sh->vocab = 128256;
        sh->tp = 1;
        /* EAGLE-3 head: one Llama layer of the target's width (yuhuili/EAGLE3-LLaMA3.1-
         * Instruct-8B); LM head over the full vocab per the task (the checkpoint's own
         * draft vocab is 32000: --draft-vocab 32000) */
        sh->draft_inter = 14336; sh->draft_vocab = 128256;
        return 0;
    }
    if (!strcmp(name, "kimi-tp8")) {
        /* One rank of Kimi-K2.5 (moonshotai/Kimi-K2.5 config: hidden 7168, 64 heads,
         * 384 experts top-8 + 1 shared, moe_intermediate 2048, first layer dense with
         * intermediate 18432, vocab 163840) at TP=8. 12 layers instead of 61: bf16
         * experts are 4.2 GB per layer per rank (the real int4 ones ~1.1 GB), so 61
         * layers would not fit; 12 (1 dense + 11 MoE) take ~50 GB and keep a verify step
         * that touches every expert near 15 ms. MLA approximated by GQA: 16 KV heads of
         * 128 (2 per rank: 1 KB of KV per token per rank vs MLA's 1152 B). */
        snprintf(sh->name, sizeof sh->name, "kimi-tp8");
        sh->layers = 12; sh->dense_layers = 1; sh->hidden = 7168; sh->heads = 64;
        sh->kv_heads = 16; sh->head_dim = 128; sh->inter = 18432; sh->vocab = 163840;
        sh->tp = 8; sh->experts = 384; sh->topk_experts = 8; sh->moe_inter = 2048;
        sh->shared_inter = 2048;
        /* EAGLE-3 head for Kimi: one dense layer of width 7168 (assumed like the
         * model's dense layer), LM head over the full vocab shard */
        sh->draft_inter = 18432; sh->draft_vocab = 163840;
        return 0;
    }
    return -1;
}

void sb_rank_of(const sb_shape *sh, sb_rank *r) {
    int tp = sh->tp > 0 ? sh->tp : 1;
    r->nh = sh->heads / tp;
    r->nkv = sh->kv_heads >= tp ? sh->kv_heads / tp : 1;
    r->D = sh->head_dim;
    r->H = sh->hidden;
    r->I = sh->inter / tp;
    r->Im = sh->moe_inter / tp;
    r->Is = sh->shared_inter / tp;
    r->Id = sh->draft_inter / tp;
    r->V = (sh->vocab + tp - 1) / tp;
    r->Vd = (sh->draft_vocab + tp - 1) / tp;
    r->E = sh->experts;
    r->K = sh->topk_experts;
}

#define BAD(...) do { snprintf(err, errlen, __VA_ARGS__); return -1; } while (0)
int sb_shape_check(const sb_shape *sh, int max_qlen, char *err, size_t errlen) {
    sb_rank r;
    if (sh->tp < 1) BAD("field tp: value %d: must be >= 1", sh->tp);
    sb_rank_of(sh, &r);
    if (sh->layers < 1) BAD("field layers: value %d: must be >= 1", sh->layers);
    if (sh->hidden < 64 || sh->hidden % 64)
        BAD("field hidden: value %d: must be a positive multiple of 64", sh->hidden);
    if (sh->head_dim != SB_ATTN_D)
        BAD("field head_dim: value %d: the attention kernel is built for %d", sh->head_dim,
            SB_ATTN_D);
    if (sh->heads % sh->tp || r.nh < 1)
        BAD("field heads: value %d: must be a positive multiple of tp %d", sh->heads, sh->tp);
    if (sh->kv_heads < 1 || (sh->kv_heads >= sh->tp && sh->kv_heads % sh->tp) ||
        (sh->kv_heads < sh->tp && sh->tp % sh->kv_heads))
        BAD("field kv_heads: value %d: must divide or be a multiple of tp %d", sh->kv_heads,
            sh->tp);
    if (r.nh % r.nkv) BAD("field kv_heads: value %d: %d heads per rank not a multiple of %d",
                          sh->kv_heads, r.nh, r.nkv);
    if ((r.nh / r.nkv) * max_qlen > SB_ATTN_MAXQ)
        BAD("field steps: value %d: GQA group %d x %d query tokens > %d per attention block",
            max_qlen - 1, r.nh / r.nkv, max_qlen, SB_ATTN_MAXQ);
    if (sh->vocab < 1 || sh->draft_vocab < 1)
        BAD("field vocab: value %d/%d: must be >= 1", sh->vocab, sh->draft_vocab);
    bool all_moe = sh->experts > 0 && sh->dense_layers >= sh->layers;
    if ((sh->experts == 0 || !all_moe) && (sh->inter % sh->tp || r.I < 8 || r.I % 8))
        BAD("field inter: value %d: per-rank %d must be a positive multiple of 8", sh->inter, r.I);
    if (sh->draft_inter % sh->tp || r.Id < 8 || r.Id % 8)
        BAD("field draft_inter: value %d: per-rank %d must be a positive multiple of 8",
            sh->draft_inter, r.Id);
    if (sh->experts < 0) BAD("field experts: value %d: must be >= 0", sh->experts);
    if (sh->experts > 0) {
        if (sh->topk_experts < 1 || sh->topk_experts > SB_MOE_MAXK ||
            sh->topk_experts > sh->experts)
            BAD("field topk_experts: value %d: must be 1..min(%d, experts)", sh->topk_experts,
                SB_MOE_MAXK);
        if (sh->moe_inter % sh->tp || r.Im < 16 || (2 * r.Im) % 16 || r.Im % 16 ||
            (r.Im >= 1024 && r.Im % 64))
            BAD("field moe_inter: value %d: per-rank %d must be a multiple of 16 (64 if >= 1024)",
                sh->moe_inter, r.Im);
        if (sh->shared_inter < 0 || sh->shared_inter % sh->tp || (r.Is && r.Is % 8))
            BAD("field shared_inter: value %d: per-rank %d must be a multiple of 8",
                sh->shared_inter, r.Is);
        if (sh->dense_layers < 0) BAD("field dense_layers: value %d: must be >= 0",
                                      sh->dense_layers);
    }
    return 0;
}
#undef BAD

/* Sizes of one rank's tensors, in a fixed order shared by counting and carving. */
typedef struct { char *p; size_t off; int count_only; } arena;
static bf16 *take(arena *a, size_t elems) {
    size_t b = (elems * 2 + 255) & ~(size_t)255;
    bf16 *r = a->count_only ? NULL : (bf16 *)(a->p + a->off);
    a->off += b;
    return r;
}
static bool is_moe_layer(const sb_shape *sh, int l) {
    return sh->experts > 0 && l >= sh->dense_layers;
}

/* Lays the weights out; with init, fills them (seeded per tensor). */
static size_t layout_weights(sb_model *m, const sb_shape *sh, arena *a, int init, uint64_t seed) {
    sb_rank r;
    sb_rank_of(sh, &r);
    int H = r.H, QKV = (r.nh + 2 * r.nkv) * r.D, O = r.nh * r.D;
    uint64_t tensor = 0;
    cudaStream_t s = m ? m->stream : 0;
#define W(ptr, rows, cols) do {                                                      \
        bf16 *t_ = take(a, (size_t)(rows) * (cols));                                 \
        if (m) ptr = t_;                                                             \
        if (init) sb_init_uniform(t_, (size_t)(rows) * (cols), seed + (tensor++),    \
                                  -sqrtf(3.f / (cols)), sqrtf(3.f / (cols)), s);     \
    } while (0)
#define N(ptr, n) do {                                                               \
        bf16 *t_ = take(a, (size_t)(n));                                             \
        if (m) ptr = t_;                                                             \
        if (init) sb_init_uniform(t_, (size_t)(n), seed + (tensor++), 0.9f, 1.1f, s);\
    } while (0)
    for (int l = 0; l < sh->layers; l++) {
        sb_layer *L = m ? &m->L[l] : NULL;
        N(L->attn_norm, H);
        W(L->wqkv, QKV, H);
        W(L->wo, H, O);
        N(L->mlp_norm, H);
        if (!is_moe_layer(sh, l)) {
            W(L->wgu, 2 * r.I, H);
            W(L->wd, H, r.I);
        } else {
            W(L->wrouter, r.E, H);
            W(L->wgu_e, (size_t)r.E * 2 * r.Im, H);
            W(L->wd_e, (size_t)r.E * H, r.Im);
            if (r.Is) {
                W(L->wgu_s, 2 * r.Is, H);
                W(L->wd_s, H, r.Is);
            }
        }
    }
    {
        bf16 *t_ = take(a, (size_t)sh->vocab * H);   /* embedding, replicated per rank */
        if (m) m->embed = t_;
        if (init) sb_init_uniform(t_, (size_t)sh->vocab * H, seed + (tensor++), -1.f, 1.f, s);
    }
    N(m->final_norm, H);
    W(m->lm_head, r.V, H);
    W(m->d_fc, H, 3 * H);
    N(m->d_norm_e, H);
    N(m->d_norm_h, H);
    W(m->d_wqkv, QKV, 2 * H);
    W(m->d_wo, H, O);
    N(m->d_mlp_norm, H);
    W(m->d_wgu, 2 * r.Id, H);
    W(m->d_wd, H, r.Id);
    N(m->d_final_norm, H);
    W(m->d_lm_head, r.Vd, H);
#undef W
#undef N
    return a->off;
}

size_t sb_weight_bytes(const sb_shape *sh) {
    arena a = {NULL, 0, 1};
    return layout_weights(NULL, sh, &a, 0, 0);
}

static size_t al256(size_t x) { return (x + 255) & ~(size_t)255; }

sb_model *sb_model_create(const sb_shape *sh, int rows_max, int qlen_max, int max_ctx,
                          int world, int rank, ncclComm_t comm, uint64_t seed, int verbose) {
    sb_model *m = (sb_model *)calloc(1, sizeof *m);
    SB_REQUIRE(m, "out of host memory");
    m->sh = *sh;
    sb_rank_of(sh, &m->r);
    m->rows_max = rows_max;
    m->qlen_max = qlen_max;
    m->max_ctx = max_ctx;
    m->tmax = rows_max * qlen_max;
    m->world = world;
    m->rank = rank;
    m->comm = comm;
    int dev;
    CK_CUDA(cudaGetDevice(&dev));
    CK_CUDA(cudaDeviceGetAttribute(&m->sms, cudaDevAttrMultiProcessorCount, dev));
    CK_CUDA(cudaStreamCreateWithFlags(&m->stream, cudaStreamNonBlocking));
    CK_CUBLAS(cublasCreate(&m->blas));
    CK_CUBLAS(cublasSetStream(m->blas, m->stream));
    /* a fixed workspace: cuBLAS then allocates nothing during graph capture */
    const size_t blas_ws = 64u << 20;
    CK_CUDA(cudaMalloc(&m->blas_ws, blas_ws));
    CK_CUBLAS(cublasSetWorkspace(m->blas, m->blas_ws, blas_ws));
    sb_attn_init();

    m->L = (sb_layer *)calloc(sh->layers, sizeof(sb_layer));
    SB_REQUIRE(m->L, "out of host memory");
    /* weights */
    m->wbytes = sb_weight_bytes(sh);
    CK_CUDA(cudaMalloc(&m->warena, m->wbytes));
    arena wa = {(char *)m->warena, 0, 0};
    layout_weights(m, sh, &wa, 1, seed);

    /* KV caches: target layers + the draft layer */
    const sb_rank *r = &m->r;
    size_t kv_elems = (size_t)rows_max * max_ctx * r->nkv * r->D;
    m->kbytes = (size_t)(sh->layers + 1) * 2 * al256(kv_elems * 2);
    CK_CUDA(cudaMalloc(&m->karena, m->kbytes));
    {
        arena ka = {(char *)m->karena, 0, 0};
        for (int l = 0; l < sh->layers; l++) {
            m->L[l].kc = take(&ka, kv_elems);
            m->L[l].vc = take(&ka, kv_elems);
        }
        m->d_kc = take(&ka, kv_elems);
        m->d_vc = take(&ka, kv_elems);
        sb_init_uniform((bf16 *)m->karena, m->kbytes / 2, seed ^ 0x4B56ull, -1.f, 1.f, m->stream);
    }

    /* activations */
    size_t T = m->tmax, H = r->H;
    int imax = r->I > r->Is ? r->I : r->Is;
    if (r->Id > imax) imax = r->Id;
    size_t vmax = r->V > r->Vd ? r->V : r->Vd;
    int nsplit_max = (max_ctx + SB_ATTN_CHUNK - 1) / SB_ATTN_CHUNK;
    size_t ws_floats = sb_attn_ws_floats((int)T, r->nh, nsplit_max);
    size_t moe_bytes = r->E ? sb_moe_ws_bytes(r->E, r->K, r->H, r->Im, (int)T) : 0;
    size_t QKV = (size_t)(r->nh + 2 * r->nkv) * r->D, O = (size_t)r->nh * r->D;
    size_t sizes_bf16[] = {
        T * H, T * H, T * QKV, T * O, T * O, T * H, T * 2 * imax, T * imax, T * H,
        T * (r->E ? r->E : 1), T * H, T * vmax, (world > 1 ? world : 0) * T * vmax,
        T * 3 * H, T * 2 * H, T * H, (size_t)rows_max * H, (size_t)rows_max * H};
    bf16 **ptrs[] = {&m->x, &m->h, &m->qkv, &m->q, &m->attn, &m->o, &m->gu, &m->act,
                     &m->mlp, &m->router, &m->shared_out, &m->logits, &m->logits_all,
                     &m->aux, &m->cat, &m->emb, &m->dh, &m->selh};
    int nb = (int)(sizeof sizes_bf16 / sizeof sizes_bf16[0]);
    size_t ints = (size_t)rows_max * qlen_max + rows_max + T + 4 * (size_t)rows_max;
    m->abytes = 0;
    for (int i = 0; i < nb; i++) m->abytes += al256(sizes_bf16[i] * 2);
    m->abytes += al256(ws_floats * 4) + al256(moe_bytes) + al256(ints * 4) + 256;
    CK_CUDA(cudaMalloc(&m->aarena, m->abytes));
    char *p = (char *)m->aarena;
    for (int i = 0; i < nb; i++) {
        *ptrs[i] = sizes_bf16[i] ? (bf16 *)p : NULL;
        p += al256(sizes_bf16[i] * 2);
    }
    m->attn_ws = (float *)p; p += al256(ws_floats * 4);
    m->attn_ws_floats = (int)ws_floats;
    if (r->E) sb_moe_carve(&m->moe, p, r->E, r->K, r->H, r->Im, (int)T);
    p += al256(moe_bytes);
    int *ip = (int *)p;
    m->ids_v = ip; ip += (size_t)rows_max * qlen_max;
    m->ids_d = ip; ip += rows_max;
    m->tgt = ip;   ip += T;
    m->acc = ip;   ip += rows_max;
    m->base = ip;  ip += rows_max;
    m->sel = ip;   ip += rows_max;
    ip += rows_max;
    m->counter = (unsigned long long *)(((uintptr_t)ip + 7) & ~(uintptr_t)7);
    /* activations start as random values, ids and state as zeros */
    sb_init_uniform((bf16 *)m->aarena, ((char *)m->attn_ws - (char *)m->aarena) / 2,
                    seed ^ 0xAC7ull, -1.f, 1.f, m->stream);
    CK_CUDA(cudaMemsetAsync(m->ids_v, 0, ints * 4 + 64, m->stream));
    CK_CUDA(cudaStreamSynchronize(m->stream));
    if (verbose)
        printf("# memory per rank: weights %.2f GB, KV cache %.2f GB (%d rows x %d tokens x "
               "%d layers+draft), activations %.2f GB\n",
               m->wbytes / 1e9, m->kbytes / 1e9, rows_max, max_ctx, sh->layers,
               m->abytes / 1e9);
    return m;
}

void sb_model_destroy(sb_model *m) {
    if (!m) return;
    cudaStreamSynchronize(m->stream);
    cublasDestroy(m->blas);
    cudaFree(m->blas_ws);
    cudaFree(m->warena);
    cudaFree(m->karena);
    cudaFree(m->aarena);
    cudaStreamDestroy(m->stream);
    free(m->L);
    free(m);
}

void sb_gemm(sb_model *m, const bf16 *X, const bf16 *W, bf16 *Y, int T, int N, int K) {
    const float one = 1.f, zero = 0.f;
    /* column-major view: Y^T (N x T) = W^T (N x K, W stored [N][K]) * X^T (K x T) */
    CK_CUBLAS(cublasGemmEx(m->blas, CUBLAS_OP_T, CUBLAS_OP_N, N, T, K, &one, W, CUDA_R_16BF,
                           K, X, CUDA_R_16BF, K, &zero, Y, CUDA_R_16BF, N,
                           CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

static void allreduce(sb_model *m, bf16 *p, size_t n) {
#ifndef SB_NO_NCCL
    if (m->world > 1)
        CK_NCCL(ncclAllReduce(p, p, n, ncclBfloat16, ncclSum, m->comm, m->stream));
#else
    (void)m; (void)p; (void)n;
#endif
}

/* logits [T][Vp] on this rank -> [world][T][Vp] on every rank (SGLang gathers the
 * vocab-parallel logits before sampling). */
static const bf16 *gather_logits(sb_model *m, int T, int Vp, int *parts) {
#ifndef SB_NO_NCCL
    if (m->world > 1) {
        CK_NCCL(ncclAllGather(m->logits, m->logits_all, (size_t)T * Vp, ncclBfloat16, m->comm,
                              m->stream));
        *parts = m->world;
        return m->logits_all;
    }
#else
    (void)T; (void)Vp;
#endif
    *parts = 1;
    return m->logits;
}

const bf16 *sb_logits(const sb_model *m, int *parts) {
    *parts = m->world > 1 ? m->world : 1;
    return m->world > 1 ? m->logits_all : m->logits;
}

static void attention(sb_model *m, bf16 *kc, bf16 *vc, int rows, int qlen, int pos_add) {
    sb_attn_args a;
    a.q = m->q; a.kc = kc; a.vc = vc; a.base = m->base; a.pos_add = pos_add;
    a.rows = rows; a.qlen = qlen; a.nh = m->r.nh; a.nkv = m->r.nkv; a.max_ctx = m->max_ctx;
    sb_attn_plan(rows, m->r.nkv, m->max_ctx, m->sms, &a.split_len, &a.nsplit);
    int T = rows * qlen;
    a.opart = m->attn_ws;
    a.mlpart = m->attn_ws + (size_t)T * m->r.nh * a.nsplit * SB_ATTN_D;
    a.out = m->attn;
    sb_attention(&a, m->stream);
}

static void dense_mlp(sb_model *m, const bf16 *w_gu, const bf16 *w_d, int I, const bf16 *in,
                      bf16 *out, int T) {
    sb_gemm(m, in, w_gu, m->gu, T, 2 * I, m->r.H);
    sb_silu_mul(m->gu, m->act, I, T, m->stream);
    sb_gemm(m, m->act, w_d, out, T, m->r.H, I);
}

const bf16 *sb_target_forward(sb_model *m, const int *ids, int rows, int qlen, int *parts) {
    const sb_rank *r = &m->r;
    const sb_shape *sh = &m->sh;
    cudaStream_t s = m->stream;
    int T = rows * qlen, H = r->H, L = sh->layers;
    SB_REQUIRE(rows <= m->rows_max && qlen <= m->qlen_max,
               "target forward: %d rows x %d tokens over capacity %d x %d", rows, qlen,
               m->rows_max, m->qlen_max);
    if (r->E) sb_bump(m->counter, s);
    sb_embed(ids, 1, 0, m->embed, sh->vocab, H, m->x, T, s);
    /* EAGLE-3 features: the inputs of layers 2, L/2 and L-3 (SGLang's
     * layers_to_capture for Llama EAGLE-3), clamped for short models */
    int auxl[3] = {2 < L ? 2 : L - 1, L / 2, L - 3 > 0 ? L - 3 : 0};
    sb_rmsnorm(m->x, m->L[0].attn_norm, m->h, H, T, s);
    int QKV = (r->nh + 2 * r->nkv) * r->D;
    for (int l = 0; l < L; l++) {
        sb_layer *ly = &m->L[l];
        for (int k = 0; k < 3; k++)
            if (auxl[k] == l) sb_copy_cols(m->x, m->aux, H, 3 * H, k * H, T, s);
        sb_gemm(m, m->h, ly->wqkv, m->qkv, T, QKV, H);
        sb_rope_append(m->qkv, m->q, ly->kc, ly->vc, m->base, 0, qlen, r->nh, r->nkv, r->D,
                       m->max_ctx, T, s);
        attention(m, ly->kc, ly->vc, rows, qlen, 0);
        sb_gemm(m, m->attn, ly->wo, m->o, T, H, r->nh * r->D);
        allreduce(m, m->o, (size_t)T * H);
        sb_add_rmsnorm(m->x, m->o, ly->mlp_norm, m->h, H, T, s);
        if (!is_moe_layer(sh, l)) {
            dense_mlp(m, ly->wgu, ly->wd, r->I, m->h, m->mlp, T);
        } else {
            sb_gemm(m, m->h, ly->wrouter, m->router, T, r->E, H);
            sb_moe_route(&m->moe, m->router, T, m->counter, (uint32_t)l, s);
            sb_moe_experts(&m->moe, m->h, ly->wgu_e, ly->wd_e, T, s);
            if (r->Is) dense_mlp(m, ly->wgu_s, ly->wd_s, r->Is, m->h, m->shared_out, T);
            sb_moe_combine(&m->moe, r->Is ? m->shared_out : NULL, m->mlp, T, s);
        }
        allreduce(m, m->mlp, (size_t)T * H);
        const bf16 *next = l + 1 < L ? m->L[l + 1].attn_norm : m->final_norm;
        sb_add_rmsnorm(m->x, m->mlp, next, m->h, H, T, s);
    }
    sb_gemm(m, m->h, m->lm_head, m->logits, T, r->V, H);
    return gather_logits(m, T, r->V, parts);
}

void sb_draft_forward(sb_model *m, const int *ids, int ids_stride, int ids_off, int rows,
                      int qlen, int from_aux, int pos_add, const int *sel, int *out,
                      int out_stride, int out_off) {
    const sb_rank *r = &m->r;
    cudaStream_t s = m->stream;
    int T = rows * qlen, H = r->H;
    SB_REQUIRE(rows <= m->rows_max && qlen <= m->qlen_max,
               "draft forward: %d rows x %d tokens over capacity %d x %d", rows, qlen,
               m->rows_max, m->qlen_max);
    SB_REQUIRE(from_aux || qlen == 1, "draft forward: chain mode takes one token per row");
    sb_embed(ids, ids_stride, ids_off, m->embed, m->sh.vocab, H, m->emb, T, s);
    if (from_aux)
        sb_gemm(m, m->aux, m->d_fc, m->x, T, H, 3 * H);
    else
        CK_CUDA(cudaMemcpyAsync(m->x, m->dh, (size_t)rows * H * 2, cudaMemcpyDeviceToDevice, s));
    sb_norm_cat(m->emb, m->d_norm_e, m->x, m->d_norm_h, m->cat, H, T, s);
    int QKV = (r->nh + 2 * r->nkv) * r->D;
    sb_gemm(m, m->cat, m->d_wqkv, m->qkv, T, QKV, 2 * H);
    sb_rope_append(m->qkv, m->q, m->d_kc, m->d_vc, m->base, pos_add, qlen, r->nh, r->nkv,
                   r->D, m->max_ctx, T, s);
    attention(m, m->d_kc, m->d_vc, rows, qlen, pos_add);
    sb_gemm(m, m->attn, m->d_wo, m->o, T, H, r->nh * r->D);
    allreduce(m, m->o, (size_t)T * H);
    sb_add_rmsnorm(m->x, m->o, m->d_mlp_norm, m->h, H, T, s);
    dense_mlp(m, m->d_wgu, m->d_wd, r->Id, m->h, m->mlp, T);
    allreduce(m, m->mlp, (size_t)T * H);
    sb_add_rmsnorm(m->x, m->mlp, m->d_final_norm, m->h, H, T, s);
    const bf16 *lm_in = m->h;
    if (from_aux) {
        sb_gather_rows(m->h, sel, qlen, m->selh, H, rows, s);
        sb_gather_rows(m->x, sel, qlen, m->dh, H, rows, s);
        lm_in = m->selh;
    } else {
        CK_CUDA(cudaMemcpyAsync(m->dh, m->x, (size_t)rows * H * 2, cudaMemcpyDeviceToDevice, s));
    }
    sb_gemm(m, lm_in, m->d_lm_head, m->logits, rows, r->Vd, H);
    int parts;
    const bf16 *lg = gather_logits(m, rows, r->Vd, &parts);
    sb_argmax(lg, rows, rows, r->Vd, parts, out, out_stride, out_off, s);
}
