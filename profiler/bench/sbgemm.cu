/* sbgemm: specbench --gemm-sweep (see sbgemm.h). */
#include "sbgemm.h"
#include <algorithm>
#include <cstring>
#include <unistd.h>

typedef struct {
    const char *site;   /* role in the forward, as in sbmodel.cu */
    const char *phases; /* the NVTX phases whose forwards call it */
    int per_forward;    /* calls per forward */
    const char *m;      /* its M: "tokens" of the forward, or "rows" (one token per row) */
    int n, k;           /* Y[M][n] = X[M][k] * W[n][k]^T */
} sg_shape;

/* The GEMMs of sb_target_forward (verify, decode) and sb_draft_forward (draft: chain mode;
 * extend: from the EAGLE-3 features, LM head on one token per row). */
static std::vector<sg_shape> sg_shapes(const sb_shape *sh) {
    sb_rank r;
    sb_rank_of(sh, &r);
    int H = r.H, QKV = (r.nh + 2 * r.nkv) * r.D, O = r.nh * r.D, L = sh->layers;
    int dense = sh->experts == 0 ? L : std::min(sh->dense_layers, L), moe = L - dense;
    const char *T = "verify;decode", *D = "draft;extend";
    std::vector<sg_shape> v = {{"qkv", T, L, "tokens", QKV, H}, {"o", T, L, "tokens", H, O}};
    if (dense) { v.push_back({"gu", T, dense, "tokens", 2 * r.I, H}); v.push_back({"down", T, dense, "tokens", H, r.I}); }
    if (r.E && moe) {
        v.push_back({"router", T, moe, "tokens", r.E, H});
        if (r.Is) {
            v.push_back({"shared_gu", T, moe, "tokens", 2 * r.Is, H});
            v.push_back({"shared_down", T, moe, "tokens", H, r.Is});
        }
    }
    v.push_back({"lm_head", T, 1, "tokens", r.V, H});
    v.push_back({"d_fc", "extend", 1, "tokens", H, 3 * H});
    v.push_back({"d_qkv", D, 1, "tokens", QKV, 2 * H});
    v.push_back({"d_o", D, 1, "tokens", H, O});
    v.push_back({"d_gu", D, 1, "tokens", 2 * r.Id, H});
    v.push_back({"d_down", D, 1, "tokens", H, r.Id});
    v.push_back({"d_lm_head", D, 1, "rows", r.Vd, H});
    return v;
}

#define SG_ROUTINGS 8   /* random routings averaged per token count */
#define SG_REPS 3       /* timed replays of a point's graph */

/* One point: the graph replayed once to warm up, then SG_REPS times between two events;
 * then the GPU idles rest x the point's time (a sweep of large GEMMs back to back holds the
 * GPU at its power limit, where a forward, with its memory-bound kernels between, does not).
 * Returns the milliseconds of the timed replays. */
static float sg_time_graph(cudaGraphExec_t ge, cudaStream_t s, cudaEvent_t e0, cudaEvent_t e1,
                           double rest) {
    CK_CUDA(cudaGraphLaunch(ge, s));
    CK_CUDA(cudaEventRecord(e0, s));
    for (int r = 0; r < SG_REPS; r++) CK_CUDA(cudaGraphLaunch(ge, s));
    CK_CUDA(cudaEventRecord(e1, s));
    CK_CUDA(cudaEventSynchronize(e1));
    float ms;
    CK_CUDA(cudaEventElapsedTime(&ms, e0, e1));
    if (rest > 0) usleep((useconds_t)(rest * (SG_REPS + 1) / SG_REPS * ms * 1000.0));
    return ms;
}

/* The MoE layer's two grouped expert GEMMs (sbmoe.cu's k_moe_gemm: gate|up, then down),
 * per token count: SG_ROUTINGS random routings (sb_moe_route with counters 1..), each
 * timed as a CUDA graph of `calls` GEMMs over rotating copies of the expert weights
 * (the graph reads the routing from device memory, so one graph serves every routing).
 * Rows moe_gu and moe_down, per_forward = MoE layers. Returns the GPU ms spent timing. */
static double sg_moe_sweep(sb_model *m, const sb_rank *r, int moe_layers, const char *preset,
                           const std::vector<int> &tokens, FILE *f, const char *dev, size_t l2,
                           cudaEvent_t e0, cudaEvent_t e1, double rest) {
    int tmax = *std::max_element(tokens.begin(), tokens.end());
    int E = r->E, K = r->K, H = r->H, I = r->Im;
    sb_moe_ws w;
    void *mem;
    CK_CUDA(cudaMalloc(&mem, sb_moe_ws_bytes(E, K, H, I, tmax)));
    sb_moe_carve(&w, mem, E, K, H, I, tmax);
    bf16 *x, *logits;
    unsigned long long *counter;
    CK_CUDA(cudaMalloc(&x, (size_t)tmax * H * 2));
    CK_CUDA(cudaMalloc(&logits, (size_t)tmax * E * 2));
    CK_CUDA(cudaMalloc(&counter, sizeof *counter));
    sb_init_uniform(x, (size_t)tmax * H, 21, -1.f, 1.f, m->stream);
    sb_init_uniform(logits, (size_t)tmax * E, 22, -1.f, 1.f, m->stream);
    size_t ngu = (size_t)E * 2 * I * H, nd = (size_t)E * H * I;
    int copies = (int)std::max<size_t>(2, (4 * l2 + ngu * 2 - 1) / (ngu * 2));
    copies = std::min(copies, 8);
    bf16 *wgu, *wd;
    CK_CUDA(cudaMalloc(&wgu, ngu * 2 * copies));
    CK_CUDA(cudaMalloc(&wd, nd * 2 * copies));
    sb_init_uniform(wgu, ngu * copies, 23, -0.02f, 0.02f, m->stream);
    sb_init_uniform(wd, nd * copies, 24, -0.02f, 0.02f, m->stream);
    const int calls = std::max(copies, 8);
    double total = 0;
    for (int t : tokens) {
        int P = t * K, max_active = P < E ? P : E;
        cudaGraph_t g[2];
        cudaGraphExec_t ge[2];
        /* a first routing, run eagerly with both GEMMs, fills the permuted inputs */
        unsigned long long c0 = 0;
        CK_CUDA(cudaMemcpy(counter, &c0, sizeof c0, cudaMemcpyHostToDevice));
        sb_moe_route(&w, logits, t, counter, 0, m->stream);
        sb_moe_experts(&w, x, wgu, wd, t, m->stream);
        CK_CUDA(cudaStreamSynchronize(m->stream));
        for (int k = 0; k < 2; k++) {
            CK_CUDA(cudaStreamBeginCapture(m->stream, cudaStreamCaptureModeThreadLocal));
            for (int i = 0; i < calls; i++) {
                if (k == 0)
                    sb_moe_gemm(w.xs, wgu + (size_t)(i % copies) * ngu, w.ys, w.counts, w.offsets,
                                w.active, w.n_active, max_active, 2 * I, H, m->stream);
                else
                    sb_moe_gemm(w.as, wd + (size_t)(i % copies) * nd, w.zs, w.counts, w.offsets,
                                w.active, w.n_active, max_active, H, I, m->stream);
            }
            CK_CUDA(cudaStreamEndCapture(m->stream, &g[k]));
            CK_CUDA(cudaGraphInstantiate(&ge[k], g[k], 0));
        }
        double us[2] = {0, 0};
        for (int rt = 1; rt <= SG_ROUTINGS; rt++) {
            unsigned long long c = (unsigned long long)rt;
            CK_CUDA(cudaMemcpy(counter, &c, sizeof c, cudaMemcpyHostToDevice));
            sb_moe_route(&w, logits, t, counter, 0, m->stream);
            sb_moe_experts(&w, x, wgu, wd, t, m->stream);   /* this routing's inputs */
            for (int k = 0; k < 2; k++) {
                float ms = sg_time_graph(ge[k], m->stream, e0, e1, rest);
                total += ms;
                us[k] += ms * 1000.0 / (SG_REPS * calls);
            }
        }
        for (int k = 0; k < 2; k++) {
            fprintf(f, "%s,%s,verify;decode,%d,tokens,%d,%d,%d,%.3f,%d,%s\n", preset,
                    k == 0 ? "moe_gu" : "moe_down", moe_layers, k == 0 ? 2 * I : H, k == 0 ? H : I,
                    t, us[k] / SG_ROUTINGS, SG_REPS * calls * SG_ROUTINGS, dev);
            CK_CUDA(cudaGraphExecDestroy(ge[k]));
            CK_CUDA(cudaGraphDestroy(g[k]));
        }
    }
    CK_CUDA(cudaFree(wgu));
    CK_CUDA(cudaFree(wd));
    CK_CUDA(cudaFree(x));
    CK_CUDA(cudaFree(logits));
    CK_CUDA(cudaFree(counter));
    CK_CUDA(cudaFree(mem));
    return total;
}

int sb_gemm_sweep(const sb_shape *sh, const char *preset, const std::vector<int> &tokens,
                  const char *csv, double rest, int quiet) {
    std::vector<sg_shape> shapes = sg_shapes(sh);
    int tmax = *std::max_element(tokens.begin(), tokens.end());
    size_t nmax = 0, kmax = 0;
    for (auto &s : shapes) { nmax = std::max(nmax, (size_t)s.n); kmax = std::max(kmax, (size_t)s.k); }
    cudaDeviceProp prop;
    int dev;
    CK_CUDA(cudaGetDevice(&dev));
    CK_CUDA(cudaGetDeviceProperties(&prop, dev));

    bool is_new = access(csv, F_OK) != 0;
    FILE *f = fopen(csv, "a");
    if (!f) { perror(csv); return 1; }
    if (is_new) fprintf(f, "preset,site,phases,per_forward,m,n,k,tokens,us,calls,device\n");

    /* only what sb_gemm touches: the cuBLAS handle on a stream, with a workspace so that
     * it can be captured */
    sb_model m;
    memset(&m, 0, sizeof m);
    CK_CUDA(cudaStreamCreateWithFlags(&m.stream, cudaStreamNonBlocking));
    CK_CUBLAS(cublasCreate(&m.blas));
    CK_CUBLAS(cublasSetStream(m.blas, m.stream));
    const size_t ws = 64u << 20;
    CK_CUDA(cudaMalloc(&m.blas_ws, ws));
    CK_CUBLAS(cublasSetWorkspace(m.blas, m.blas_ws, ws));
    bf16 *X, *Y;
    CK_CUDA(cudaMalloc(&X, (size_t)tmax * kmax * 2));
    CK_CUDA(cudaMalloc(&Y, (size_t)tmax * nmax * 2));
    sb_init_uniform(X, (size_t)tmax * kmax, 7, -1.f, 1.f, m.stream);
    cudaEvent_t e0, e1;
    CK_CUDA(cudaEventCreate(&e0));
    CK_CUDA(cudaEventCreate(&e1));
    size_t l2 = prop.l2CacheSize > 0 ? (size_t)prop.l2CacheSize : (64u << 20);
    for (size_t si = 0; si < shapes.size(); si++) {
        const sg_shape &s = shapes[si];
        size_t wn = (size_t)s.n * s.k;
        int copies = (int)std::min<size_t>(64, std::max<size_t>(2, (4 * l2 + wn * 2 - 1) / (wn * 2)));
        int calls = std::max(copies, 8);
        bf16 *W;
        CK_CUDA(cudaMalloc(&W, wn * 2 * copies));
        sb_init_uniform(W, wn * copies, 11 + si, -0.02f, 0.02f, m.stream);
        CK_CUDA(cudaStreamSynchronize(m.stream));
        double sum_ms = 0;
        for (int t : tokens) {
            cudaGraph_t g;
            cudaGraphExec_t ge;
            sb_gemm(&m, X, W, Y, t, s.n, s.k);   /* cuBLAS's first call of a size, not captured */
            CK_CUDA(cudaStreamSynchronize(m.stream));
            CK_CUDA(cudaStreamBeginCapture(m.stream, cudaStreamCaptureModeThreadLocal));
            for (int i = 0; i < calls; i++)
                sb_gemm(&m, X, W + (size_t)(i % copies) * wn, Y, t, s.n, s.k);
            CK_CUDA(cudaStreamEndCapture(m.stream, &g));
            CK_CUDA(cudaGraphInstantiate(&ge, g, 0));
            float ms = sg_time_graph(ge, m.stream, e0, e1, rest);
            sum_ms += ms;
            fprintf(f, "%s,%s,%s,%d,%s,%d,%d,%d,%.3f,%d,%s\n", preset, s.site, s.phases,
                    s.per_forward, s.m, s.n, s.k, t, ms * 1000.0 / (SG_REPS * calls), SG_REPS * calls,
                    prop.name);
            CK_CUDA(cudaGraphExecDestroy(ge));
            CK_CUDA(cudaGraphDestroy(g));
        }
        CK_CUDA(cudaFree(W));
        if (!quiet) {
            printf("# gemm sweep %s %-11s n %6d k %6d: %zu token counts, %d weight copies, %.0f ms of GPU\n",
                   preset, s.site, s.n, s.k, tokens.size(), copies, sum_ms);
            fflush(stdout);
        }
    }
    sb_rank r;
    sb_rank_of(sh, &r);
    int moe_layers = sh->experts ? sh->layers - std::min(sh->dense_layers, sh->layers) : 0;
    if (r.E && moe_layers > 0) {
        double g = sg_moe_sweep(&m, &r, moe_layers, preset, tokens, f, prop.name, l2, e0, e1, rest);
        if (!quiet) {
            printf("# gemm sweep %s moe_gu, moe_down (expert GEMMs, %d routings per count): "
                   "%zu token counts, %.0f ms of GPU\n", preset, SG_ROUTINGS, tokens.size(), g);
            fflush(stdout);
        }
    }
    CK_CUDA(cudaEventDestroy(e0));
    CK_CUDA(cudaEventDestroy(e1));
    CK_CUDA(cudaFree(X));
    CK_CUDA(cudaFree(Y));
    cublasDestroy(m.blas);
    CK_CUDA(cudaFree(m.blas_ws));
    CK_CUDA(cudaStreamDestroy(m.stream));
    if (fclose(f)) { perror(csv); return 1; }
    return 0;
}
