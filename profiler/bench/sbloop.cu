/* sbloop: closed-loop continuous batching over the EAGLE or baseline iteration, with
 * lazily captured CUDA graphs and per-phase CUDA-event timing (see sbloop.h). */
#include "sbloop.h"
#include <cuda_profiler_api.h>
#include "sbcheck.h"
#include <nvtx3/nvToolsExt.h>
#include <cstring>
#include <cstdio>
#include <ctime>
#include <vector>

const char *const sb_phase_name[SB_NPH] = {"draft", "verify", "accept", "extend", "decode",
                                           "sample"};

int sb_cg_parse(const char *spec, sb_cglist *l, char *err, size_t errlen) {
    l->n = 0;
    if (!strcmp(spec, "none") || !*spec) return 0;
    if (!strncmp(spec, "sglang:", 7)) {
        /* SGLang server_args.py, speculative decoding capture list (FACTS.md) */
        long mx = strtol(spec + 7, NULL, 10);
        if (mx < 1) {
            snprintf(err, errlen, "--cuda-graph-bs: value '%s': want sglang:MAX with MAX >= 1", spec);
            return -1;
        }
        for (int v = 1; v <= mx && l->n < SB_CG_MAX;) {
            l->bs[l->n++] = v;
            v += v < 8 ? 1 : v < 32 ? 2 : v < 40 ? 8 : v < 64 ? 4 : v < 256 ? 8 : 16;
        }
        return 0;
    }
    const char *p = spec;
    while (*p) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 1 || v > 100000 || (*end && *end != ',')) {
            snprintf(err, errlen, "--cuda-graph-bs: value '%s': want ascending sizes like 1,2,8,24,64", spec);
            return -1;
        }
        if (l->n == SB_CG_MAX || (l->n && v <= l->bs[l->n - 1])) {
            snprintf(err, errlen, "--cuda-graph-bs: value '%s': sizes must ascend, at most %d", spec, SB_CG_MAX);
            return -1;
        }
        l->bs[l->n++] = (int)v;
        p = *end ? end + 1 : end;
    }
    return 0;
}

int sb_cg_bucket(const sb_cglist *l, int bs) {
    for (int i = 0; i < l->n; i++)
        if (l->bs[i] >= bs) return l->bs[i];
    return 0;
}

void sb_cg_format(const sb_cglist *l, char *buf, size_t len) {
    size_t o = 0;
    buf[0] = 0;
    if (!l->n) { snprintf(buf, len, "none"); return; }
    for (int i = 0; i < l->n && o < len; i++)
        o += snprintf(buf + o, len - o, "%s%d", i ? ";" : "", l->bs[i]);
}

typedef struct { int phase, q, rows; cudaGraphExec_t exec; } gent;

struct sb_engine {
    sb_model *m;
    sb_cglist cg;
    std::vector<gent> graphs;
    double capture_ms;
    int *h_base, *h_sel, *h_back;   /* pinned */
    int *d_n;
    cudaEvent_t ev[SB_NPH][2];
};

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

sb_engine *sb_engine_create(sb_model *m, const sb_cglist *cg) {
    sb_engine *e = new sb_engine();
    e->m = m;
    e->cg = *cg;
    e->capture_ms = 0;
    size_t n = (size_t)m->rows_max * (m->qlen_max + 1);
    CK_CUDA(cudaMallocHost(&e->h_base, n * 4));
    CK_CUDA(cudaMallocHost(&e->h_sel, n * 4));
    CK_CUDA(cudaMallocHost(&e->h_back, n * 4));
    memset(e->h_base, 0, n * 4);
    memset(e->h_sel, 0, n * 4);
    CK_CUDA(cudaMalloc(&e->d_n, 16));
    for (int p = 0; p < SB_NPH; p++)
        for (int k = 0; k < 2; k++) CK_CUDA(cudaEventCreate(&e->ev[p][k]));
    return e;
}

void sb_engine_destroy(sb_engine *e) {
    if (!e) return;
    for (auto &g : e->graphs) cudaGraphExecDestroy(g.exec);
    cudaFreeHost(e->h_base);
    cudaFreeHost(e->h_sel);
    cudaFreeHost(e->h_back);
    cudaFree(e->d_n);
    for (int p = 0; p < SB_NPH; p++)
        for (int k = 0; k < 2; k++) cudaEventDestroy(e->ev[p][k]);
    delete e;
}

void sb_engine_stats(const sb_engine *e, int *graphs, double *capture_ms) {
    *graphs = (int)e->graphs.size();
    *capture_ms = e->capture_ms;
}

void sb_phase_enqueue(sb_model *m, int phase, int rows, int q, int bs) {
    int parts;
    const bf16 *lg;
    switch (phase) {
    case SB_PH_DRAFT:          /* steps-1 chain forwards: d_i at ids_v[r*q+i] -> d_{i+1} */
        for (int i = 1; i < q - 1; i++)
            sb_draft_forward(m, m->ids_v, q, i, rows, 1, 0, i, NULL, m->ids_v, q, i + 1);
        break;
    case SB_PH_VERIFY:
        sb_target_forward(m, m->ids_v, rows, q, &parts);
        break;
    case SB_PH_ACCEPT:         /* greedy target choice and chain compare, real rows only */
        lg = sb_logits(m, &parts);
        sb_argmax(lg, bs * q, rows * q, m->r.V, parts, m->tgt, 1, 0, m->stream);
        sb_accept_greedy(m->ids_v, m->tgt, bs, q, m->acc, m->stream);
        break;
    case SB_PH_EXTEND:         /* draft over the verified tokens; first draft token of the next round */
        sb_draft_forward(m, m->tgt, 1, 0, rows, q, 1, 0, m->sel, m->ids_v, q, 1);
        sb_next_pending(m->tgt, m->sel, rows, q, m->ids_v, m->stream);
        break;
    case SB_PH_DECODE:
        sb_target_forward(m, m->ids_d, rows, 1, &parts);
        break;
    case SB_PH_SAMPLE:
        lg = sb_logits(m, &parts);
        sb_argmax(lg, bs, rows, m->r.V, parts, m->ids_d, 1, 0, m->stream);
        break;
    }
}

static cudaGraphExec_t capture(sb_model *m, int phase, int rows, int q, int bs) {
    cudaGraph_t g;
    cudaGraphExec_t exec;
    CK_CUDA(cudaStreamBeginCapture(m->stream, cudaStreamCaptureModeThreadLocal));
    sb_phase_enqueue(m, phase, rows, q, bs);
    CK_CUDA(cudaStreamEndCapture(m->stream, &g));
    CK_CUDA(cudaGraphInstantiate(&exec, g, 0));
    CK_CUDA(cudaGraphDestroy(g));
    return exec;
}

void sb_phase_graph_once(sb_model *m, int phase, int rows, int q, int bs) {
    cudaGraphExec_t exec = capture(m, phase, rows, q, bs);
    CK_CUDA(cudaGraphLaunch(exec, m->stream));
    CK_CUDA(cudaStreamSynchronize(m->stream));
    CK_CUDA(cudaGraphExecDestroy(exec));
}

/* Replays the phase's graph, capturing it first (after one eager run that loads the
 * kernels and lets cuBLAS choose its algorithms, as servers warm up before capture). */
static void run_graph(sb_engine *e, int phase, int rows, int q, int bs) {
    sb_model *m = e->m;
    for (auto &g : e->graphs)
        if (g.phase == phase && g.q == q && g.rows == rows) {
            CK_CUDA(cudaGraphLaunch(g.exec, m->stream));
            return;
        }
    double t0 = now_s();
    sb_phase_enqueue(m, phase, rows, q, bs);
    CK_CUDA(cudaStreamSynchronize(m->stream));
    gent g = {phase, q, rows, capture(m, phase, rows, q, bs)};
    e->graphs.push_back(g);
    e->capture_ms += (now_s() - t0) * 1e3;
    CK_CUDA(cudaGraphLaunch(g.exec, m->stream));
}

typedef struct { int L, gen, out_len; } req;

static uint64_t rng_next(uint64_t *s) { *s += 1; return sb_hash64(*s * 0xD1B54A32D192ED03ull); }
static double rng_u01(uint64_t *s) { return (rng_next(s) >> 11) * (1.0 / 9007199254740992.0); }
static int rng_range(uint64_t *s, int lo, int hi) {
    return lo + (int)(rng_next(s) % (uint64_t)(hi - lo + 1));
}

static void new_request(req *r, const sb_cfg *c, uint64_t *rng, int staggered) {
    int prompt = rng_range(rng, c->prompt_lo, c->prompt_hi);
    r->out_len = rng_range(rng, c->out_lo, c->out_hi);
    r->gen = staggered ? rng_range(rng, 0, r->out_len - 1) : 0;   /* steady state: mid-flight */
    r->L = prompt + r->gen;
}

typedef struct {
    sb_engine *e;
    int measuring;
    int pending[SB_NPH];
    double sum_ms[SB_NPH];
} timing;

static void begin(timing *t, int ph, const char *fmt_tail, int tokens, int bs, int rows,
                  long ctx, int graph, int steps, int topk) {
    char name[192];
    snprintf(name, sizeof name, "%s tokens=%d bs=%d rows=%d ctx=%ld graph=%d steps=%d topk=%d%s",
             sb_phase_name[ph], tokens, bs, rows, ctx, graph, steps, topk, fmt_tail);
    nvtxRangePushA(name);
    CK_CUDA(cudaEventRecord(t->e->ev[ph][0], t->e->m->stream));
}

static void end(timing *t, int ph) {
    CK_CUDA(cudaEventRecord(t->e->ev[ph][1], t->e->m->stream));
    nvtxRangePop();
    if (t->measuring) t->pending[ph] = 1;
}

/* Collects every finished phase's time (called after each synchronisation). */
static void collect(timing *t, int wait) {
    for (int ph = 0; ph < SB_NPH; ph++) {
        if (!t->pending[ph]) continue;
        if (wait) CK_CUDA(cudaEventSynchronize(t->e->ev[ph][1]));
        else if (cudaEventQuery(t->e->ev[ph][1]) != cudaSuccess) continue;
        float ms;
        CK_CUDA(cudaEventElapsedTime(&ms, t->e->ev[ph][0], t->e->ev[ph][1]));
        t->sum_ms[ph] += ms;
        t->pending[ph] = 0;
    }
    (void)cudaGetLastError();      /* cudaEventQuery's cudaErrorNotReady is not an error */
}

static double alpha_at(const sb_cfg *c, int j) {
    if (c->n_apos > 0) return c->apos[j < c->n_apos ? j : c->n_apos - 1];
    return c->alpha;
}

void sb_run_point(sb_engine *e, const sb_cfg *c, sb_result *res) {
    sb_model *m = e->m;
    cudaStream_t st = m->stream;
    int C = c->concurrency, bs = C;
    int steps = c->spec ? c->steps : 0, q = c->spec ? c->steps + 1 : 1;
    SB_REQUIRE(c->topk == 1 || !c->spec, "topk %d: only the chain (topk=1) is implemented", c->topk);
    SB_REQUIRE(C >= 1 && C <= m->rows_max, "concurrency %d outside 1..%d (capacity)", C, m->rows_max);
    SB_REQUIRE(q <= m->qlen_max, "steps %d over capacity %d", steps, m->qlen_max - 1);
    int pad = sb_cg_bucket(&e->cg, C);
    int graph = pad > 0;
    int rows = graph ? pad : C;
    SB_REQUIRE(rows <= m->rows_max, "padded batch %d over capacity %d", rows, m->rows_max);
    SB_REQUIRE(!graph || c->warmup >= 1, "--warmup must be >= 1 when CUDA graphs are used "
               "(the first iteration captures them)");
    SB_REQUIRE(c->prompt_hi + c->out_hi + q + 1 <= m->max_ctx, "context %d+%d+%d over capacity %d",
               c->prompt_hi, c->out_hi, q, m->max_ctx);

    uint64_t rng = sb_hash64(c->seed ^ ((uint64_t)c->rep << 32) ^ ((uint64_t)C << 16) ^
                             ((uint64_t)steps << 8) ^ (uint64_t)(int64_t)(c->alpha * 1000) ^
                             ((uint64_t)c->spec << 60));
    std::vector<req> R(C);
    for (int r = 0; r < C; r++) new_request(&R[r], c, &rng, 1);
    memset(e->h_sel, 0, (size_t)rows * 4);
    CK_CUDA(cudaMemcpyAsync(m->sel, e->h_sel, (size_t)rows * 4, cudaMemcpyHostToDevice, st));

    timing t;
    memset(&t, 0, sizeof t);
    t.e = e;
    memset(res, 0, sizeof *res);
    res->rows = rows;
    res->graph = graph;
    int n_meas = c->iters;
    int total = c->warmup + (n_meas > 0 ? n_meas : c->max_iters);
    double t0 = 0, t_it1 = 0, t_itw = 0;
    long tokens = 0;
    double acc_sum = 0, ctx_sum = 0;
    long acc_n = 0;
    int finished = 0;
    /* extra keys specsim fit reads: the MoE shape, and the forwards of a draft range */
    char tail[64] = "", dtail[96];
    if (m->r.E) snprintf(tail, sizeof tail, " experts=%d moe_topk=%d", m->r.E, m->r.K);
    snprintf(dtail, sizeof dtail, " forwards=%d%s", steps > 1 ? steps - 1 : 1, tail);
    for (int it = 0; it < total; it++) {
        if (it == 1) t_it1 = now_s();
        if (it == c->warmup) {
            t_itw = now_s();
            if (n_meas <= 0) {
                double per = c->warmup >= 2 ? (t_itw - t_it1) / (c->warmup - 1) : 0.05;
                int n = per > 0 ? (int)(c->seconds / per + 0.999) : c->min_iters;
                if (n < c->min_iters) n = c->min_iters;
                if (n > c->max_iters) n = c->max_iters;
#ifndef SB_NO_NCCL
                if (m->world > 1) {        /* every rank must run the same number */
                    e->h_back[0] = n;
                    CK_CUDA(cudaMemcpyAsync(e->d_n, e->h_back, 4, cudaMemcpyHostToDevice, st));
                    CK_NCCL(ncclBroadcast(e->d_n, e->d_n, 1, ncclInt, 0, m->comm, st));
                    CK_CUDA(cudaMemcpyAsync(e->h_back, e->d_n, 4, cudaMemcpyDeviceToHost, st));
                    CK_CUDA(cudaStreamSynchronize(st));
                    n = e->h_back[0];
                }
#endif
                n_meas = n;
                total = c->warmup + n_meas;
            }
            CK_CUDA(cudaStreamSynchronize(st));
            collect(&t, 1);
            memset(t.sum_ms, 0, sizeof t.sum_ms);
            t.measuring = 1;
            if (c->capture) CK_CUDA(cudaProfilerStart());
            t0 = now_s();
        }
        int meas = it >= c->warmup;
        long ctx = 0;
        for (int r = 0; r < C; r++) ctx += R[r].L;
        for (int r = 0; r < rows; r++) e->h_base[r] = r < C ? R[r].L : 0;
        if (meas) ctx_sum += (double)ctx / C;

        if (c->spec) {
            int first = steps > 1 ? SB_PH_DRAFT : SB_PH_VERIFY;
            if (steps > 1) {
                begin(&t, SB_PH_DRAFT, dtail, rows * c->topk, bs, rows, ctx, graph, steps, c->topk);
                CK_CUDA(cudaMemcpyAsync(m->base, e->h_base, (size_t)rows * 4, cudaMemcpyHostToDevice, st));
                if (graph) run_graph(e, SB_PH_DRAFT, rows, q, bs);
                else sb_phase_enqueue(m, SB_PH_DRAFT, rows, q, bs);
                end(&t, SB_PH_DRAFT);
            }
            begin(&t, SB_PH_VERIFY, tail, rows * q, bs, rows, ctx, graph, steps, c->topk);
            if (first == SB_PH_VERIFY)
                CK_CUDA(cudaMemcpyAsync(m->base, e->h_base, (size_t)rows * 4, cudaMemcpyHostToDevice, st));
            if (graph) run_graph(e, SB_PH_VERIFY, rows, q, bs);
            else sb_phase_enqueue(m, SB_PH_VERIFY, rows, q, bs);
            end(&t, SB_PH_VERIFY);
            begin(&t, SB_PH_ACCEPT, tail, bs * q, bs, bs, ctx, 0, steps, c->topk);
            sb_phase_enqueue(m, SB_PH_ACCEPT, rows, q, bs);
            CK_CUDA(cudaMemcpyAsync(e->h_back, m->acc, (size_t)bs * 4, cudaMemcpyDeviceToHost, st));
            end(&t, SB_PH_ACCEPT);
            CK_CUDA(cudaStreamSynchronize(st));    /* the server's sync: accept lengths */
            collect(&t, 0);
            /* the host draws each request's accepted prefix */
            for (int r = 0; r < C; r++) {
                int a = 0;
                while (a < steps && rng_u01(&rng) < alpha_at(c, a)) a++;
                e->h_sel[r] = a;
                int gained = a + 1;
                if (meas) { acc_sum += gained; acc_n++; }
                int left = R[r].out_len - R[r].gen;
                if (meas) tokens += gained < left ? gained : left;
                R[r].gen += gained;
                R[r].L += gained;
            }
            for (int r = C; r < rows; r++) e->h_sel[r] = 0;
            begin(&t, SB_PH_EXTEND, tail, rows * q, bs, rows, ctx, graph, steps, c->topk);
            CK_CUDA(cudaMemcpyAsync(m->sel, e->h_sel, (size_t)rows * 4, cudaMemcpyHostToDevice, st));
            if (graph) run_graph(e, SB_PH_EXTEND, rows, q, bs);
            else sb_phase_enqueue(m, SB_PH_EXTEND, rows, q, bs);
            end(&t, SB_PH_EXTEND);
        } else {
            begin(&t, SB_PH_DECODE, tail, rows, bs, rows, ctx, graph, 0, 0);
            CK_CUDA(cudaMemcpyAsync(m->base, e->h_base, (size_t)rows * 4, cudaMemcpyHostToDevice, st));
            if (graph) run_graph(e, SB_PH_DECODE, rows, 1, bs);
            else sb_phase_enqueue(m, SB_PH_DECODE, rows, 1, bs);
            end(&t, SB_PH_DECODE);
            begin(&t, SB_PH_SAMPLE, tail, bs, bs, bs, ctx, 0, 0, 0);
            sb_phase_enqueue(m, SB_PH_SAMPLE, rows, 1, bs);
            CK_CUDA(cudaMemcpyAsync(e->h_back, m->ids_d, (size_t)bs * 4, cudaMemcpyDeviceToHost, st));
            end(&t, SB_PH_SAMPLE);
            CK_CUDA(cudaStreamSynchronize(st));    /* the server's sync: sampled tokens */
            collect(&t, 0);
            for (int r = 0; r < C; r++) {
                if (meas) { tokens++; acc_sum += 1; acc_n++; }
                R[r].gen++;
                R[r].L++;
            }
        }
        for (int r = 0; r < C; r++)
            if (R[r].gen >= R[r].out_len) {
                if (meas) finished++;
                new_request(&R[r], c, &rng, 0);
            }
    }
    CK_CUDA(cudaStreamSynchronize(st));
    double t1 = now_s();
    if (c->capture) CK_CUDA(cudaProfilerStop());
    collect(&t, 1);
    double wall = t1 - t0;
    int n = n_meas > 0 ? n_meas : 0;
    res->iters = n;
    res->wall_s = wall;
    res->tokens = tokens;
    res->finished = finished;
    res->tok_s = wall > 0 ? tokens / wall : 0;
    res->tok_s_req = res->tok_s / C;
    res->iter_us = n ? wall * 1e6 / n : 0;
    res->accept_len = acc_n ? acc_sum / acc_n : 0;
    res->ctx_mean = n ? ctx_sum / n : 0;
    double sum = 0;
    for (int ph = 0; ph < SB_NPH; ph++) {
        res->phase_us[ph] = n ? t.sum_ms[ph] * 1e3 / n : 0;
        sum += res->phase_us[ph];
    }
    res->host_us = res->iter_us - sum;
}
