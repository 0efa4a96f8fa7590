/* test_fit: the fit (models/fit_*.c) against a synthetic speculative-decoding workload whose
 * costs are known. gen_* below plays a GPU program on its own timeline (host thread with
 * gaps and launch calls, a GPU stream that starts a kernel when it is free and launched,
 * start latency, gaps between kernels, split-K GEMMs, the host waiting after accept) and
 * writes what a profiler would see. The fit must recover the known coefficients, refuse what
 * it cannot fit, and the simulator running the fitted model must reproduce the generator's
 * iteration time.
 * `test_fit --write-synth DIR` writes synthetic calibration traces, their manifest and a
 * measured.csv into DIR, for testing models/validate.sh without a GPU. */
#include "check.h"
#include "fit.h"
#include "sim.h"
#include "ptrace_write.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <limits.h>
#include <sys/wait.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

/* ---- the synthetic workload ----------------------------------------------------------------- */

/* Cost of one launch of a kernel type: base + slope*max(0, tokens-knee) + per_exp*experts
 * + per_kv*kv/1000, microseconds. */
typedef struct {
    const char *cls;          /* bare name (what the fit's class is) */
    int gemm;                 /* named like cuBLAS: the name changes with tokens */
    double base, slope, knee, per_exp, per_kv;
} kt;

typedef struct {
    int nhead, nlayer, L, ntail;
    kt head[4], layer[10], tail[4];
} gen_fwd;

#define GEN_E 64              /* MoE of the synthetic target: 64 experts, top-4 */
#define GEN_K 4

static const gen_fwd gen_target = {
    1, 8, 4, 3,
    {{"embed_kernel", 0, 2.0, 0.002, 0, 0, 0}},
    {{"rmsnorm_kernel", 0, 3.0, 0.004, 0, 0, 0},
     {"qkv", 1, 20.0, 0.05, 64, 0, 0},
     {"attn_kernel", 0, 5.0, 0.01, 0, 0, 0.5},
     {"o_proj", 1, 12.0, 0.03, 64, 0, 0},
     {"rmsnorm_kernel", 0, 3.0, 0.004, 0, 0, 0},
     {"moe_kernel", 0, 10.0, 0.0, 0, 0.2, 0},
     {"silu_kernel", 0, 2.0, 0.003, 0, 0, 0},
     {"down", 1, 25.0, 0.06, 128, 0, 0}},
    {{"rmsnorm_kernel", 0, 3.0, 0.004, 0, 0, 0},
     {"lm_head", 1, 40.0, 0.1, 32, 0, 0},
     {"argmax_kernel", 0, 3.0, 0.01, 0, 0, 0}},
};
static const gen_fwd gen_draft = {
    1, 7, 1, 2,
    {{"fc", 1, 6.0, 0.01, 64, 0, 0}},
    {{"rmsnorm_kernel", 0, 2.0, 0.002, 0, 0, 0},
     {"qkv", 1, 8.0, 0.02, 64, 0, 0},
     {"attn_kernel", 0, 3.0, 0.005, 0, 0, 0.3},
     {"o_proj", 1, 5.0, 0.01, 64, 0, 0},
     {"rmsnorm_kernel", 0, 2.0, 0.002, 0, 0, 0},
     {"mlp", 1, 12.0, 0.03, 64, 0, 0},
     {"silu_kernel", 0, 1.5, 0.002, 0, 0, 0}},
    {{"lm_head", 1, 30.0, 0.08, 32, 0, 0},
     {"argmax_kernel", 0, 2.0, 0.005, 0, 0, 0}},
};
static const gen_fwd gen_accept = {
    0, 0, 0, 2, {{0}}, {{0}},
    {{"accept_kernel", 0, 4.0, 0.005, 0, 0, 0},
     {"gather_kernel", 0, 2.0, 0.002, 0, 0, 0}},
};

/* Host and GPU behaviour, microseconds (typical H100/H200 magnitudes). */
#define GEN_GRAPH_LAUNCH_US 8.0   /* cudaGraphLaunch call */
#define GEN_EAGER_CALL_US   4.0   /* cudaLaunchKernel call */
#define GEN_EAGER_WORK_US   1.0   /* host work between two eager launches */
#define GEN_START_LAT_US    3.0   /* launch call end -> kernel start on an idle GPU */
#define GEN_QUEUE_GAP_US    1.5   /* between two graphs queued back to back */
#define GEN_GRAPH_GAP_US    0.5   /* between kernels inside a graph */
#define GEN_EAGER_GAP_US    1.0   /* between eager kernels queued back to back */
#define GEN_SYNC_LAT_US     2.0   /* GPU done -> the host's sync returns */
#define GEN_MEMCPY_CALL_US  3.0   /* cudaMemcpyAsync call (a few hundred bytes) */
#define GEN_MEMCPY_US       1.5   /* the copy on the GPU */
static const double gen_gap_us[WM_NPHASE] = {15, 10, 5, 20, 12, 5}; /* host work before phases */

typedef struct {
    int spec, steps, bs, graph_max;   /* graph when bs <= graph_max (padded to a power of 2) */
    double ctx0;                      /* KV context of each row at the start */
    int iters;
    unsigned long seed;
    double noise;                     /* relative sd of kernel durations */
    int split_k;                      /* GEMMs under 16 tokens add a split-K reduce kernel */
    int extra_kernel;                 /* one more kernel per layer (shape differs) */
    int emit_truncated;               /* JSON: no end event, last line cut */
    int no_phase_tokens;              /* (unused: reserved) */
    int blocking_read;                /* the result copy of accept/sample blocks until the GPU
                                         is done (a copy to pageable memory: .tolist()) */
    double sched_per_row_us;          /* host work per running request before the iteration's
                                         first phase (a scheduler's Python per request) */
    double prof_call_us;              /* the profiler's own host time in every recorded
                                         cudaLaunchKernel and cudaMemcpyAsync call (CUPTI's
                                         record; specprof's calibration measures it) */
    int kv_padded;                    /* the attention reads every row's KV, padded rows
                                         counted at the real rows' mean context (torchbench's
                                         attention over each row's whole buffer); 0: padded
                                         rows hold none (specbench, SGLang) */
} gen_cfg;

/* The generator's host speed per iteration: its log an AR(1) process of this sd and lag-1
 * autocorrelation, scaling every eager launch call and the work after it (0: a steady
 * host). Globals, not gen_cfg fields: the tests' positional gen_cfg initialisers stay. */
static double gen_host_speed_sd, gen_host_speed_rho;
/* gen_windows > 1: the iterations run in that many windows, 50 ms apart, each at a host level
 * of its own, exp(gen_host_level_sd x N(0, 1)) times the speed above (a process fast or slow
 * for seconds; lite captures of every repeat record such windows). */
static int gen_windows;
static double gen_host_level_sd;
/* Every gen_accept_stall_every-th accept instance (0: none), the GPU idles this long before its
 * second kernel (waiting on something outside the trace): a few instances of an eager phase
 * that are not bound by their launches, among many that are. Globals as above. */
static int gen_accept_stall_every;
static double gen_accept_stall_us;
/* Every gen_host_stall_every-th eager launch (0: none), the host pauses this long before the
 * call (garbage collection, the OS): a program's own stalls, part of its steady state. */
static int gen_host_stall_every;
static double gen_host_stall_us;
/* At this batch size (0: none) every GEMM kernel costs gen_gemm_bump times its smooth cost
 * (cuBLAS picking a slower kernel for one shape: torchbench's decode at 2 rows). */
static int gen_gemm_bump_bs;
static double gen_gemm_bump;
/* > 0: the target forward's tail kernels (lm_head, ...) cost this many times their type's
 * cost: a forward whose heaviest GPU work is launched last. */
static double gen_tail_scale;
/* > 0: eager kernels queued behind GPU work start this long after their predecessor (else
 * GEN_EAGER_GAP_US). */
static double gen_eager_gap_us;
/* > 0: above this many rows every attention kernel (a KV term) costs gen_kv_wave_us more:
 * its blocks no longer fit the GPU at once (a split-KV kernel's second wave) */
static int gen_kv_wave_rows;
static double gen_kv_wave_us;
/* > 0: every attention kernel (a KV term) of a graph replay padded to this many rows costs
 * gen_size_scale times its form (a split-KV kernel whose splits the graph's capture at that
 * size chose: specbench llama8b's 24- and 64-row graphs) */
static int gen_size_rows;
static double gen_size_scale;
/* 1: fit_host_grid_prof's calibration leaves bs 16 out (the largest graph then goes unseen,
 * between the calibration's graph replays and its eager 24 rows) */
static int host_grid_no16;
/* 1: fit_host_grid's calibration also holds spec steps 5 at 16 rows, a graph replay of as
 * many verify tokens (96) as its eager steps 3 at 24 rows */
static int host_grid_twin;

typedef struct {
    fit_trace *t;                     /* records go here, and/or */
    FILE *f;                          /* as JSON lines here */
    long records;                     /* lines written to f (the end record says how many) */
    ptrace_ctx ctx;
    char line[20000];
    double boundary_us[4096];         /* iteration boundaries (host), for the iteration time */
    int nb;
    double tokens_per_iter;
} gen_sink;

static int gen_padded(const gen_cfg *c)
{
    if (c->bs > c->graph_max)
        return 0;
    int p = 1;
    while (p < c->bs)
        p *= 2;
    return p > c->graph_max ? c->graph_max : p;
}

/* How the generator's MoE routes a row's tokens: the experts of a forward of rows x q tokens
 * are those of wm_routed_tokens(tokens, q, gen_row_exp) tokens routed alone (0: every token
 * alone), and gen_moe_scale (> 0) multiplies each kernel's cost per expert. Globals as below. */
static double gen_row_exp, gen_moe_scale;

static double gen_cost(const kt *k, double tokens, double kv, double q)
{
    double over = tokens - k->knee;
    double per_exp = k->per_exp * (gen_moe_scale > 0 ? gen_moe_scale : 1);
    return k->base + k->slope * (over > 0 ? over : 0) +
           per_exp * fit_experts(GEN_E, GEN_K, wm_routed_tokens(tokens, q, gen_row_exp)) + k->per_kv * kv / 1000.0;
}

static int64_t ns(double us) { return (int64_t)llround(us * 1000.0); }

static void gen_kernel(gen_sink *s, const char *name, double t0_us, double t1_us, uint32_t corr,
                       int graph, const char *nvtx)
{
    ptrace_kernel k;
    memset(&k, 0, sizeof k);
    k.start_ns = s->ctx.t0_ns + ns(t0_us);
    k.end_ns = s->ctx.t0_ns + ns(t1_us);
    k.name = name;
    k.corr = corr;
    k.stream = 7;
    k.graph_id = graph ? 3 : 0;
    k.graph_node_id = graph ? corr * 1000u : 0;
    k.nvtx = nvtx;
    k.phase = "";
    if (s->t)
        fit_trace_add_kernel(s->t, &k);
    if (s->f && ptrace_write_kernel(s->line, sizeof s->line, &s->ctx, &k) > 0) {
        fputs(s->line, s->f);
        s->records++;
    }
}

static void gen_api(gen_sink *s, const char *name, double t0_us, double t1_us, uint32_t corr)
{
    ptrace_api a;
    memset(&a, 0, sizeof a);
    a.start_ns = s->ctx.t0_ns + ns(t0_us);
    a.end_ns = s->ctx.t0_ns + ns(t1_us);
    a.name = name;
    a.corr = corr;
    a.thread = 4242;
    if (s->t)
        fit_trace_add_api(s->t, &a);
    if (s->f && ptrace_write_api(s->line, sizeof s->line, &s->ctx, &a) > 0) {
        fputs(s->line, s->f);
        s->records++;
    }
}

static void gen_mem(gen_sink *s, const char *kind, double t0_us, double t1_us, uint32_t corr,
                    const char *nvtx)
{
    ptrace_mem m;
    memset(&m, 0, sizeof m);
    m.kind = PTRACE_MEMCPY;
    m.start_ns = s->ctx.t0_ns + ns(t0_us);
    m.end_ns = s->ctx.t0_ns + ns(t1_us);
    m.copy_kind = kind;
    m.bytes = 256;
    m.corr = corr;
    m.stream = 7;
    m.nvtx = nvtx;
    m.phase = "";
    if (s->t)
        fit_trace_add_mem(s->t, &m);
    if (s->f && ptrace_write_mem(s->line, sizeof s->line, &s->ctx, &m) > 0) {
        fputs(s->line, s->f);
        s->records++;
    }
}

static void gen_range(gen_sink *s, const char *name, double t0_us, double t1_us)
{
    ptrace_range r;
    memset(&r, 0, sizeof r);
    r.start_ns = s->ctx.t0_ns + ns(t0_us);
    r.end_ns = s->ctx.t0_ns + ns(t1_us);
    r.name = name;
    r.domain = "";
    r.thread = 4242;
    r.push_pop = 1;
    if (s->t)
        fit_trace_add_range(s->t, &r);
    if (s->f && ptrace_write_range(s->line, sizeof s->line, &s->ctx, &r) > 0) {
        fputs(s->line, s->f);
        s->records++;
    }
}

/* A kernel name as a profiler reports it: cuBLAS-like for GEMMs (changing with tokens). */
static void gen_name(char *buf, size_t n, const kt *k, double tokens)
{
    if (k->gemm)
        snprintf(buf, n, tokens < 32 ? "void gemv2T_kernel_val<int, int, __nv_bfloat16, 128, 16>"
                 "(%s)" : "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_%s",
                 k->cls);
    else
        snprintf(buf, n, "void %s<128>(__nv_bfloat16*, int)", k->cls);
}

typedef struct {
    double host, gpu_free;            /* host clock, GPU free time */
    uint32_t corr;
    gsl_rng *r;
    double speed;                     /* this iteration's host time factor (gen_cfg) */
    long accepts;                     /* accept instances so far (gen_accept_stall_every) */
    long launches;                    /* eager launches so far (gen_host_stall_every) */
} gen_state;

/* One phase instance: host gap, launch(es), kernels; returns nothing, advances st. */
/* As specbench's loop (profiler/bench/sbloop.cu): draft, verify, extend and decode copy
 * their inputs to the GPU first (a memcpy before the graph); accept and sample always run
 * eagerly and copy their result back (the copy the host then waits for). */
static void gen_phase(gen_sink *s, gen_state *st, const gen_cfg *c, int phase,
                      const gen_fwd *fw, int forwards, double tokens, double kv, int rows)
{
    int sync = phase == WM_ACCEPT || phase == WM_SAMPLE;
    int padded = gen_padded(c), graph = padded > 0 && !sync;
    char rname[200], name[256];
    snprintf(rname, sizeof rname, "%s tokens=%g bs=%d rows=%d ctx=%g graph=%d steps=%d topk=1",
             wm_phase_name[phase], tokens, c->bs, rows, kv, graph, c->steps);
    double r0 = st->host;
    st->host += gen_gap_us[phase] * (1 + 0.05 * gsl_ran_gaussian(st->r, 1));
    int first = c->spec ? phase == (c->steps > 1 ? WM_DRAFT : WM_VERIFY) : phase == WM_DECODE;
    if (first)
        st->host += c->sched_per_row_us * c->bs;
    /* the kernels of the instance, in order */
    typedef struct { char name[256]; double us; } kk;
    static kk ks[2048];
    int nk = 0;
    for (int f = 0; f < forwards; f++) {
        for (int part = 0; part < 3; part++) {
            int n = part == 0 ? fw->nhead : part == 1 ? fw->nlayer : fw->ntail;
            int reps = part == 1 ? fw->L : 1;
            const kt *arr = part == 0 ? fw->head : part == 1 ? fw->layer : fw->tail;
            for (int r = 0; r < reps; r++) {
                for (int i = 0; i < n; i++) {
                    const kt *k = &arr[i];
                    double kv_read = c->kv_padded && graph ? kv * rows / c->bs : kv;
                    double us = gen_cost(k, tokens, kv_read, rows > 0 ? tokens / rows : 1) *
                                (1 + c->noise * gsl_ran_gaussian(st->r, 1));
                    if (k->gemm && gen_gemm_bump_bs > 0 && c->bs == gen_gemm_bump_bs)
                        us *= gen_gemm_bump;
                    if (k->per_kv > 0 && gen_kv_wave_rows > 0 && rows > gen_kv_wave_rows)
                        us += gen_kv_wave_us;
                    if (k->per_kv > 0 && gen_size_rows > 0 && graph && padded == gen_size_rows)
                        us *= gen_size_scale;
                    if (part == 2 && fw == &gen_target && gen_tail_scale > 0)
                        us *= gen_tail_scale;
                    gen_name(name, sizeof name, k, tokens);
                    if (k->gemm && c->split_k && tokens < 16) {
                        /* cuBLAS split-K: the GEMM and a reduce kernel share the cost */
                        snprintf(ks[nk].name, sizeof ks[nk].name, "%s", name);
                        ks[nk++].us = 0.8 * us;
                        snprintf(ks[nk].name, sizeof ks[nk].name,
                                 "void cublasLt::splitKreduce_kernel<32, 16, int>(%s)", k->cls);
                        ks[nk++].us = 0.2 * us;
                    } else {
                        snprintf(ks[nk].name, sizeof ks[nk].name, "%s", name);
                        ks[nk++].us = us;
                    }
                    if (part == 1 && i == 0 && c->extra_kernel) {
                        snprintf(ks[nk].name, sizeof ks[nk].name, "void rope_kernel(int)");
                        ks[nk++].us = 1.0;
                    }
                }
            }
        }
    }
    double g = st->gpu_free;
    /* cudaMemcpyAsync HtoD of the inputs: before the first of draft/verify (specbench copies
     * before verify only when there is no draft phase), before extend and decode */
    int copy_in = phase == WM_EXTEND || phase == WM_DECODE || phase == WM_DRAFT ||
                  (phase == WM_VERIFY && c->steps < 2);
    if (copy_in) {
        uint32_t corr = ++st->corr;
        double a0 = st->host, a1 = a0 + (GEN_MEMCPY_CALL_US + c->prof_call_us) * st->speed;
        gen_api(s, "cudaMemcpyAsync", a0, a1, corr);
        st->host = a1 + GEN_EAGER_WORK_US * st->speed;
        double start = fmax(g + GEN_QUEUE_GAP_US, a1 + GEN_START_LAT_US);
        g = start + GEN_MEMCPY_US;
        gen_mem(s, "HtoD", start, g, corr, rname);
    }
    if (graph) {
        uint32_t corr = ++st->corr;
        double a0 = st->host, a1 = a0 + GEN_GRAPH_LAUNCH_US;
        gen_api(s, "cudaGraphLaunch", a0, a1, corr);
        st->host = a1;
        double start = fmax(g + GEN_QUEUE_GAP_US, a1 + GEN_START_LAT_US);
        for (int i = 0; i < nk; i++) {
            if (i || copy_in)
                start = fmax(g + GEN_GRAPH_GAP_US, i ? 0 : a1 + GEN_START_LAT_US);
            g = start + ks[i].us;
            gen_kernel(s, ks[i].name, start, g, corr, 1, rname);
        }
    } else {
        for (int i = 0; i < nk; i++) {
            uint32_t corr = ++st->corr;
            if (gen_host_stall_every > 0 && ++st->launches % gen_host_stall_every == 0)
                st->host += gen_host_stall_us;
            double a0 = st->host, a1 = a0 + (GEN_EAGER_CALL_US + c->prof_call_us) * st->speed;
            gen_api(s, "cudaLaunchKernel", a0, a1, corr);
            st->host = a1 + GEN_EAGER_WORK_US * st->speed;
            double start = fmax(g + (gen_eager_gap_us > 0 ? gen_eager_gap_us : GEN_EAGER_GAP_US),
                                a1 + GEN_START_LAT_US);
            if (phase == WM_ACCEPT && i == 1 && gen_accept_stall_every > 0 &&
                ++st->accepts % gen_accept_stall_every == 0)
                start += gen_accept_stall_us;
            g = start + ks[i].us;
            gen_kernel(s, ks[i].name, start, g, corr, 0, rname);
        }
        st->host -= GEN_EAGER_WORK_US * st->speed;
    }
    if (sync) {    /* cudaMemcpyAsync DtoH of the result */
        uint32_t corr = ++st->corr;
        double a0 = st->host + GEN_EAGER_WORK_US * st->speed, a1 = a0 + (GEN_MEMCPY_CALL_US + c->prof_call_us) * st->speed;
        /* to pinned memory the call returns before the copy; to pageable memory it returns
         * after the copy, which waits for the GPU */
        double start = fmax(g + GEN_EAGER_GAP_US, (c->blocking_read ? a0 : a1) + GEN_START_LAT_US);
        g = start + GEN_MEMCPY_US;
        if (c->blocking_read)
            a1 = fmax(a1, g + GEN_SYNC_LAT_US);
        gen_api(s, "cudaMemcpyAsync", a0, a1, corr);
        st->host = a1;
        gen_mem(s, "DtoH", start, g, corr, rname);
    }
    st->gpu_free = g;
    if (phase == WM_ACCEPT || phase == WM_SAMPLE)   /* the host needs the accepted lengths */
        st->host = fmax(st->host, g + GEN_SYNC_LAT_US);
    gen_range(s, rname, r0, st->host);
}

/* Plays c->iters iterations into s. Rows grow their context by one token per iteration
 * (acceptance 0: what the simulator does with --alpha 0). */
static void gen_run(gen_sink *s, const gen_cfg *c)
{
    gen_state st = {1000.0, 0, 0, gsl_rng_alloc(gsl_rng_mt19937), 1, 0, 0};
    gsl_rng_set(st.r, c->seed);
    int padded = gen_padded(c), rows = padded ? padded : c->bs;
    s->nb = 0;
    /* the host's log speed: stationary from the first iteration on */
    double x = gen_host_speed_sd > 0 ? gen_host_speed_sd * gsl_ran_gaussian(st.r, 1) : 0;
    int win = gen_windows > 1 ? c->iters / gen_windows : 0;
    double lvl = 0;
    for (int it = 0; it < c->iters; it++) {
        if (win > 0 && it % win == 0) {
            lvl = gen_host_level_sd * gsl_ran_gaussian(st.r, 1);
            if (it)
                st.host += 50000;    /* the next window */
        }
        if (gen_host_speed_sd > 0 && it)
            x = gen_host_speed_rho * x + sqrt(1 - gen_host_speed_rho * gen_host_speed_rho) *
                gen_host_speed_sd * gsl_ran_gaussian(st.r, 1);
        if (gen_host_speed_sd > 0 || win > 0)
            st.speed = exp(x + lvl);
        /* KV context summed over the real rows: specbench's padded rows have an empty
         * context (as SGLang's, whose padded seq_lens are 1) */
        double ctx = c->ctx0 + it;
        double kv = c->bs * ctx;
        if (c->spec) {
            double q = c->steps + 1.0;
            if (c->steps > 1)
                gen_phase(s, &st, c, WM_DRAFT, &gen_draft, c->steps - 1, rows, kv, rows);
            gen_phase(s, &st, c, WM_VERIFY, &gen_target, 1, rows * q, kv, rows);
            gen_phase(s, &st, c, WM_ACCEPT, &gen_accept, 1, rows * q, kv, rows);
            gen_phase(s, &st, c, WM_EXTEND, &gen_draft, 1, rows * q, kv, rows);
        } else {
            gen_phase(s, &st, c, WM_DECODE, &gen_target, 1, rows, kv, rows);
            gen_phase(s, &st, c, WM_SAMPLE, &gen_accept, 1, rows, kv, rows);
        }
        if (s->nb < 4096)
            s->boundary_us[s->nb++] = st.host;
    }
    gsl_rng_free(st.r);
}

static void gen_header(ptrace_header *h)
{
    memset(h, 0, sizeof *h);
    h->format_version = PTRACE_FORMAT_VERSION;
    snprintf(h->tool_version, sizeof h->tool_version, "%s", PTRACE_TOOL_VERSION);
    snprintf(h->host, sizeof h->host, "synthetic");
    h->world_size = 1;
    h->t0_ns = 1000000000;
    snprintf(h->device.name, sizeof h->device.name, "Synthetic GPU");
    h->device.sms = 132;
}

/* In-memory trace of config c. */
static int gen_trace(fit_trace *t, const char *label, const gen_cfg *c, gen_sink *s)
{
    if (fit_trace_init(t, label))
        return -1;
    memset(s, 0, sizeof *s);
    s->t = t;
    s->ctx.t0_ns = 1000000000;
    gen_header(&t->hdr);
    t->has_header = 1;
    gen_run(s, c);
    return 0;
}

/* The trace of config c as a specprof JSON file (through the profiler's writer). */
static int gen_file(const char *path, const gen_cfg *c, gen_sink *s)
{
    memset(s, 0, sizeof *s);
    s->f = fopen(path, "w");
    if (!s->f)
        return -1;
    s->ctx.t0_ns = 1000000000;
    ptrace_header h;
    gen_header(&h);
    if (ptrace_write_open(s->line, sizeof s->line) > 0)
        fputs(s->line, s->f);
    if (ptrace_write_header(s->line, sizeof s->line, &s->ctx, &h) > 0)
        fputs(s->line, s->f);
    gen_run(s, c);
    if (c->emit_truncated) {
        fputs("{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"cut", s->f);   /* SIGKILL mid-line */
    } else {
        ptrace_end e;
        memset(&e, 0, sizeof e);
        snprintf(e.reason, sizeof e.reason, "exit");
        e.records = s->records;
        if (ptrace_write_end(s->line, sizeof s->line, &s->ctx, &e) > 0)
            fputs(s->line, s->f);
    }
    return fclose(s->f);
}

/* Plays config c without recording (the iteration times only). */
static void gen_times(const gen_cfg *c, gen_sink *s)
{
    memset(s, 0, sizeof *s);
    s->ctx.t0_ns = 1000000000;
    gen_run(s, c);
}

/* Mean iteration time of the generator over iterations [w, w+n). */
static double gen_iter_us(const gen_sink *s, int w, int n)
{
    return (s->boundary_us[w + n - 1] - s->boundary_us[w - 1]) / n;
}

/* ---- helpers ---------------------------------------------------------------------------------- */

static const wm_group *find_group(const wm_model *m, int p, const char *name)
{
    for (int g = 0; g < m->phase[p].ngroups; g++)
        if (strcmp(m->phase[p].groups[g].name, name) == 0)
            return &m->phase[p].groups[g];
    return NULL;
}

#define NCAL 6
static const int cal_bs[NCAL] = {1, 2, 4, 8, 16, 32};
static const double cal_ctx[NCAL] = {3000, 500, 2000, 1000, 4000, 1500};

/* Fits the calibration grid (spec, steps 3, bs 1..32 graphs, ctx varied). */
static int fit_grid_lite;   /* 1: fit_grid's traces are unprofiled lite captures */
static int fit_grid(fit_trace *tr, fit_result *res, double noise, int split_k, char *err, size_t n)
{
    gen_sink *s = malloc(sizeof *s);
    for (int i = 0; i < NCAL; i++) {
        gen_cfg c = {1, 3, cal_bs[i], 32, cal_ctx[i], 60, 100u + (unsigned)i, noise, split_k, 0, 0, 0, 0, 0, 0, 0};
        char label[64];
        snprintf(label, sizeof label, "synthetic-bs%d.json", cal_bs[i]);
        gen_trace(&tr[i], label, &c, s);
        if (fit_grid_lite)
            snprintf(tr[i].hdr.mode, sizeof tr[i].hdr.mode, "lite");
    }
    free(s);
    fit_opts o = {.moe_experts = GEN_E, .moe_topk = GEN_K, .name = "synthetic"};
    return fit_run(tr, NCAL, &o, res, err, n);
}

/* ---- tests ------------------------------------------------------------------------------------ */

/* The attention-tile term: cost = base + kv/1000 * (a + b * ceil(q / 4)) over query tokens
 * per row q in {2, 3, 5, 6, 8} (tiles 1, 1, 2, 2, 2), two batch sizes and two contexts, 1%
 * noise: the fit
 * finds q_tile 4 (1 and 2 misfit, 8 does not vary) and recovers a and b; a GEMM-like group
 * (base + slope above a knee, no KV term) over the same points, whose KV grows with the batch,
 * gets no KV term from the cross-validated column choice. */
static void fit_group_recovers_attention_tiles(void)
{
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 11);
    const double qs[] = {2, 3, 5, 6, 8}, rows[] = {4, 16};
    const double base = 30, a = 20, b = 60, gbase = 400, gslope = 2.0, gknee = 32;
    fit_point *p = malloc(10 * 30 * sizeof *p), *pg = malloc(10 * 30 * sizeof *pg);
    size_t n = 0;
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 2; j++)
            for (int k = 0; k < 30; k++) {
                /* contexts of 500 or 4000 tokens per row: the KV is not a function of the
                 * token count, as in a server whose requests are at all lengths */
                double ctx = (i + j) % 2 ? 4000 : 500;
                double q = qs[i], tok = rows[j] * q, kv = rows[j] * ctx * (1 + 0.01 * k);
                double tiles = ceil(q / 4);
                double us = base + kv / 1000 * (a + b * tiles);
                double ug = gbase + gslope * fmax(0, tok - gknee);
                p[n] = (fit_point){.tokens = tok, .kv_tokens = kv,
                                   .us = us * (1 + 0.01 * gsl_ran_gaussian(r, 1)), .q_per_row = q};
                pg[n] = (fit_point){.tokens = tok, .kv_tokens = kv,
                                    .us = ug * (1 + 0.01 * gsl_ran_gaussian(r, 1)), .q_per_row = q};
                n++;
            }
    const char *names[] = {"a.json"};
    fit_group_ctx c = {.trace_names = names, .ntraces = 1, .phase = "verify", .group = "attn"};
    wm_group g;
    memset(&g, 0, sizeof g);
    char err[512];
    int rc = fit_group(p, n, &c, &g, NULL, err, sizeof err);
    CHECK(rc == 0, "fit_group failed: %s", err);
    CHECK_NEAR(g.q_tile, 4, 0, 0);
    CHECK_NEAR(g.per_kvq_ktoken_us, b, 0, 0.05);
    CHECK_NEAR(g.per_kv_ktoken_us, a, 0, 0.1);
    CHECK_NEAR(g.base_us, base, 1.5, 0.05);
    wm_model m;
    wm_init(&m);
    CHECK_NEAR(wm_group_us_q(&m, &g, 16 * 5, 16000, 5), base + 16 * (a + 2 * b), 0, 0.02);
    c.group = "gemm";
    memset(&g, 0, sizeof g);
    rc = fit_group(pg, n, &c, &g, NULL, err, sizeof err);
    CHECK(rc == 0, "fit_group failed: %s", err);
    CHECK(g.per_kv_ktoken_us == 0 && g.per_kvq_ktoken_us == 0, "GEMM got a KV term: %g + %g q",
          g.per_kv_ktoken_us, g.per_kvq_ktoken_us);
    CHECK_NEAR(wm_group_us(&m, &g, 64, 0), gbase + gslope * (64 - gknee), 0, 0.02);
    CHECK_NEAR(wm_group_us(&m, &g, 8, 0), gbase, 0, 0.02);
    free(p);
    free(pg);
    gsl_rng_free(r);
}

/* torchbench's verify GEMMs (docs/fit.md, "Two query-token counts"): cuBLAS linear layers
 * flat up to 120 tokens, then a slope, and an attention that reads each row's whole KV
 * buffer (a cost per row, the same at every q), calibrated at two draft lengths (q 3 and 6)
 * with the same context in every row (KV = rows x 1210). A KV x tiles column is then a
 * KV slope plus a token slope without the knee: kept, it prices 24 rows at q 7 and 52 rows
 * at q 2 as tiles of KV. Without it the held-out batches come within 0.2% (checked at 1%);
 * with the rule off (FIT_KVQ_TWO_Q=keep) the column is kept (q_tile 4) and they are 1.0 to
 * 3.5% off (52 rows at q 2: +3.5%, at q 4: -3.3%). */
static double tq_gemm_us(double rows, double q)
{
    double tok = rows * q;
    return 1150 + 1.4 * fmin(tok, 120) + 3.5 * fmax(0, tok - 120) + 12.5 * rows;
}

static void fit_group_two_q_has_no_tiles(void)
{
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 13);
    const double qs[] = {3, 6}, rows[] = {1, 4, 16, 40, 80};
    fit_point *p = malloc(2 * 5 * 12 * sizeof *p);
    size_t n = 0;
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 5; j++)
            for (int k = 0; k < 12; k++) {
                double q = qs[i], kv = rows[j] * (1210 + 3 * (k % 3));
                p[n++] = (fit_point){.tokens = rows[j] * q, .kv_tokens = kv,
                                     .us = tq_gemm_us(rows[j], q) *
                                           (1 + 0.003 * gsl_ran_gaussian(r, 1)),
                                     .q_per_row = q};
            }
    const char *names[] = {"a.json"};
    fit_group_ctx c = {.trace_names = names, .ntraces = 1, .phase = "verify", .group = "gemm"};
    wm_group g;
    memset(&g, 0, sizeof g);
    char err[512];
    int rc = fit_group(p, n, &c, &g, NULL, err, sizeof err);
    CHECK(rc == 0, "fit_group failed: %s", err);
    CHECK(g.per_kvq_ktoken_us == 0, "two q counts, no variants: KV x tiles %g at q_tile %g",
          g.per_kvq_ktoken_us, g.q_tile);
    wm_model m;
    wm_init(&m);
    const double held[][2] = {{24, 5}, {24, 7}, {52, 2}, {52, 4}, {10, 5}};
    for (int h = 0; h < 5; h++) {
        double rw = held[h][0], q = held[h][1];
        double want = tq_gemm_us(rw, q), got = wm_group_us_q(&m, &g, rw * q, rw * 1210, q);
        CHECK(fabs(got / want - 1) < 0.01, "rows %g q %g: fitted %.1f us, true %.1f (%+.1f%%)",
              rw, q, got, want, 100 * (got / want - 1));
    }
    free(p);
    gsl_rng_free(r);
}

/* Fewer cells than the cross-validation needs (docs/fit.md, "Few cells"): an MoE verify's
 * GEMMs (a constant, the experts touched, the tokens; no KV cost) at 6 configurations,
 * whose KV context drifts up 0.2% a point inside each configuration while the GPU's clock
 * drifts its time up 1% a point (a run warming up): KV spread 0.28% inside the cells, time
 * 1.4%. The fit must be the one it makes from each configuration's mean KV (the drift
 * inside a cell says nothing of a KV cost): the same
 * coefficients, no KV term, held-out batches within 1%. With the rule off
 * (FIT_KV_CELL_MEAN=0) the drift makes a KV slope (0.098 us per 1000 KV tokens) that the
 * cell-mean fit does not have. */
static double fq_moe_us(double tokens)
{
    return 600 + 37 * fit_experts(64, 8, tokens) + 0.8 * tokens;
}

static void fq_points(fit_point *p, int drift)
{
    const double qs[] = {3, 6}, bss[] = {1, 4, 16};
    size_t n = 0;
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 5; k++) {
                double tok = bss[j] * qs[i];
                p[n++] = (fit_point){.tokens = tok,
                                     .kv_tokens = bss[j] * 1210 * (1 + 0.002 * (drift ? k : 2)),
                                     .us = fq_moe_us(tok) * (1 + 0.01 * (k - 2)),
                                     .q_per_row = qs[i]};
            }
}

static void fit_group_few_cells_kv_from_cell_means(void)
{
    fit_point p[30], pm[30];
    fq_points(p, 1);
    fq_points(pm, 0);
    const char *names[] = {"a.json"};
    fit_group_ctx c = {.trace_names = names, .ntraces = 1, .phase = "verify", .group = "gemm",
                       .moe_experts = 64, .moe_topk = 8};
    wm_group g, gm;
    memset(&g, 0, sizeof g);
    memset(&gm, 0, sizeof gm);
    char err[512];
    int rc = fit_group(p, 30, &c, &g, NULL, err, sizeof err);
    CHECK(rc == 0, "fit_group failed: %s", err);
    rc = fit_group(pm, 30, &c, &gm, NULL, err, sizeof err);
    CHECK(rc == 0, "fit_group failed: %s", err);
    CHECK(g.per_kv_ktoken_us < 1e-9, "KV slope %g us per 1000 KV tokens from the drift inside "
          "the configurations (cell-mean fit: %g)", g.per_kv_ktoken_us, gm.per_kv_ktoken_us);
    CHECK_NEAR(g.base_us, gm.base_us, 1e-6, 1e-9);
    CHECK_NEAR(g.per_expert_us, gm.per_expert_us, 1e-6, 1e-9);
    CHECK_NEAR(g.per_token_us + g.per_token_all_us, gm.per_token_us + gm.per_token_all_us, 1e-6,
               1e-9);
    wm_model m;
    wm_init(&m);
    m.moe_experts = 64;
    m.moe_topk = 8;
    const double held[][2] = {{8, 3}, {8, 6}, {2, 5}, {12, 4}};
    for (int h = 0; h < 4; h++) {
        double bs = held[h][0], q = held[h][1];
        double want = fq_moe_us(bs * q), got = wm_group_us_q(&m, &g, bs * q, bs * 1210, q);
        CHECK(fabs(got / want - 1) < 0.01, "bs %g q %g: fitted %.1f us, true %.1f (%+.1f%%)", bs,
              q, got, want, 100 * (got / want - 1));
    }
}

/* A kernel record in a graph (graph 3, node = corr) on stream 7 of the NVTX range nvtx,
 * starting at *t_us (us from the header's t0) and lasting us; *t_us moves past it. */
static void rec_kernel(fit_trace *tr, double *t_us, double us, const char *name,
                       uint32_t corr, const char *nvtx, const int32_t grid[3], int32_t block,
                       int32_t regs, int32_t smem)
{
    ptrace_kernel x;
    memset(&x, 0, sizeof x);
    x.start_ns = tr->hdr.t0_ns + ns(*t_us);
    x.end_ns = tr->hdr.t0_ns + ns(*t_us + us);
    *t_us += us + 1;
    x.name = name;
    x.corr = corr;
    x.stream = 7;
    x.graph_id = 3;
    x.graph_node_id = corr;
    x.nvtx = nvtx;
    x.phase = "";
    memcpy(x.grid, grid, sizeof x.grid);
    x.block[0] = block;
    x.block[1] = x.block[2] = 1;
    x.regs = regs;
    x.smem_bytes = smem;
    CHECK(fit_trace_add_kernel(tr, &x) == 0, "add kernel");
}

/* A push/pop NVTX range name from r0_us to r1_us (us from the header's t0). */
static void rec_range(fit_trace *tr, double r0_us, double r1_us, const char *name)
{
    ptrace_range rg;
    memset(&rg, 0, sizeof rg);
    rg.start_ns = tr->hdr.t0_ns + ns(r0_us);
    rg.end_ns = tr->hdr.t0_ns + ns(r1_us);
    rg.name = name;
    rg.domain = "";
    rg.thread = 4242;
    rg.push_pop = 1;
    CHECK(fit_trace_add_range(tr, &rg) == 0, "add range");
}

/* Kernel variants decide the tiling where the residual alone would not: q 2, 4 and 7 with
 * a cost linear in ceil(q / 2) (tiles 1, 2, 4: q_tile 2 fits exactly), but q 2 and 4 ran
 * one kernel and 7 another, which only q_tile 4 (tiles 1, 1, 2) agrees with. Without the
 * variants the fit keeps q_tile 2. */
static void fit_group_tiles_follow_kernel_variants(void)
{
    const double qs[] = {2, 4, 7}, rows[] = {4, 8, 16};
    fit_point p[3 * 3 * 4];
    size_t n = 0;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 4; k++) {
                double q = qs[i], kv = rows[j] * 1000 * (1 + 0.3 * ((i + j) % 3)) + k;
                double us = 10 + kv / 1000 * (5 + 20 * ceil(q / 2));
                p[n++] = (fit_point){.tokens = rows[j] * q, .kv_tokens = kv, .us = us,
                                     .q_per_row = q, .variant = q < 5 ? 1 : 2};
            }
    const char *names[] = {"a.json"};
    fit_group_ctx c = {.trace_names = names, .ntraces = 1, .phase = "verify", .group = "attn"};
    wm_group g;
    char err[512];
    memset(&g, 0, sizeof g);
    int rc = fit_group(p, n, &c, &g, NULL, err, sizeof err);
    CHECK(rc == 0, "fit_group failed: %s", err);
    CHECK(g.q_tile == 4, "with variants: q_tile %g, want 4", g.q_tile);
    for (size_t i = 0; i < n; i++)
        p[i].variant = 0;
    memset(&g, 0, sizeof g);
    rc = fit_group(p, n, &c, &g, NULL, err, sizeof err);
    CHECK(rc == 0, "fit_group failed: %s", err);
    CHECK(g.q_tile == 2, "without variants: q_tile %g, want 2", g.q_tile);
}

/* A trace whose attention kernel is compiled per tile count (void k_attn<T>(int), T =
 * ceil(q / 4)), each costing more per tile than the one before (as specbench's
 * k_attn_split<3>, whose shared memory halves its blocks per SM): 10, 16 and 40 us per 1000
 * KV tokens at 1, 2 and 3 tiles. Calibrated at q 3, 6 and 9 (one q per variant, where
 * q_tile 2 would also tell them apart), the fit takes q_tile 4 from the variants, gives the
 * last tile count its own slope, and prices q 2 (tile 1) and 7 (tile 2), never captured,
 * and 12 (tile 3). With every kernel named alike (no variants) it keeps one slope. */
static void fit_run_prices_attention_tiles_per_kernel_variant(void)
{
    const double per_tile_kv[4] = {0, 10, 16, 40};
    for (int named = 1; named >= 0; named--) {
        fit_trace tr;
        CHECK(fit_trace_init(&tr, "synthetic-attn.json") == 0, "init");
        gen_header(&tr.hdr);
        tr.has_header = 1;
        gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
        gsl_rng_set(r, 5);
        const double qs[] = {3, 6, 9}, rows[] = {2, 4, 8, 16, 32};
        char rname[15][96];
        double t = 1000;
        uint32_t corr = 1;
        for (int i = 0; i < 15; i++) {
            double q = qs[i / 5], rw = rows[i % 5], kv = rw * (800 + 300 * (i % 3));
            int tiles = (int)ceil(q / 4);
            snprintf(rname[i], sizeof rname[i], "verify tokens=%g rows=%g ctx=%g graph=1",
                     rw * q, rw, kv);
            char kname[48];
            snprintf(kname, sizeof kname, named ? "void k_attn<%d>(int)" : "void k_attn(int)",
                     tiles);
            const char *kn[2] = {"void k_lin(int)", kname};
            double us[2] = {20 + 0.1 * rw * q, 5 + kv / 1000 * per_tile_kv[tiles]};
            for (int it = 0; it < 10; it++) {
                double r0 = t;
                t += 5;
                const int32_t grid[3] = {1, 1, 1};
                for (int k = 0; k < 2; k++)
                    rec_kernel(&tr, &t, us[k] * (1 + 0.003 * gsl_ran_gaussian(r, 1)), kn[k],
                               corr++, rname[i], grid, 128, 0, 0);
                rec_range(&tr, r0, t + 2, rname[i]);
                t += 20;
            }
        }
        gsl_rng_free(r);
        static fit_result res;
        fit_opts o = {.name = "attn"};
        char err[1024];
        int rc = fit_run(&tr, 1, &o, &res, err, sizeof err);
        CHECK(rc == 0, "fit_run: %s", err);
        if (rc == 0) {
            const wm_model *m = &res.model;
            const wm_group *a = NULL;
            for (int g = 0; g < m->phase[WM_VERIFY].ngroups; g++)
                if (strstr(m->phase[WM_VERIFY].groups[g].name, "k_attn"))
                    a = &m->phase[WM_VERIFY].groups[g];
            CHECK(a != NULL, "attention group missing");
            CHECK(m->phase[WM_VERIFY].fitted_q_max == 9 &&
                  m->phase[WM_VERIFY].fitted_tokens_max == 32 * 9, "fitted range %g, %g",
                  m->phase[WM_VERIFY].fitted_q_max, m->phase[WM_VERIFY].fitted_tokens_max);
            /* ctx= sums the rows' KV: 800 + 300 * 2 a row at most */
            CHECK(m->phase[WM_VERIFY].fitted_kv_row_max == 1400, "fitted KV a request %g, want 1400",
                  m->phase[WM_VERIFY].fitted_kv_row_max);
            if (a && named) {
                CHECK(a->q_tile == 4 && a->q_tile_knee == 2, "q_tile %g, knee %g; want 4, 2",
                      a->q_tile, a->q_tile_knee);
                const double q[] = {2, 3, 7, 9, 12};
                for (int i = 0; i < 5; i++) {
                    double kv = 16 * 1000, want = 5 + kv / 1000 * per_tile_kv[(int)ceil(q[i] / 4)];
                    CHECK_NEAR(wm_group_us_q(m, a, 16 * q[i], kv, q[i]), want, 0, 0.03);
                }
            }
            if (a && !named)
                CHECK(a->per_kvq2_ktoken_us == 0, "no variants, yet a second tile slope %g",
                      a->per_kvq2_ktoken_us);
            fit_result_free(&res);
        }
        fit_trace_free(&tr);
    }
}

/* fit_group alone: known base, knee, slope, experts and KV terms under 1% noise. */
static void fit_group_recovers_known_coefficients(void)
{
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 7);
    const double tok[] = {4, 8, 16, 32, 64, 128, 256, 512};
    const double base = 50, slope = 0.2, knee = 64, pe = 1.5, pkv = 0.8;
    fit_point *p = malloc(8 * 40 * sizeof *p);
    size_t n = 0;
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 40; j++) {
            double kv = 1000 * (1 + i % 3) * tok[i] * (1 + 0.01 * j);
            double us = base + slope * fmax(0, tok[i] - knee) + pe * fit_experts(384, 8, tok[i]) +
                        pkv * kv / 1000;
            p[n++] = (fit_point){.tokens = tok[i], .kv_tokens = kv,
                                 .us = us * (1 + 0.01 * gsl_ran_gaussian(r, 1)), .trace = i % 2};
        }
    const char *names[] = {"a.json", "b.json"};
    fit_group_ctx c = {.trace_names = names, .ntraces = 2, .phase = "verify", .group = "L1 gemm",
                       .moe_experts = 384, .moe_topk = 8};
    wm_group g;
    fit_group_stats st;
    char err[512];
    int rc = fit_group(p, n, &c, &g, &st, err, sizeof err);
    CHECK(rc == 0, "fit_group failed: %s", err);
    /* tolerances: 1% noise on 320 points; the knee must be found exactly */
    CHECK_NEAR(g.base_us, base, 0, 0.05);
    CHECK_NEAR(g.per_token_us, slope, 0, 0.05);
    CHECK_NEAR(g.knee_tokens, knee, 0, 0);
    CHECK_NEAR(g.per_expert_us, pe, 0, 0.05);
    CHECK_NEAR(g.per_kv_ktoken_us, pkv, 0, 0.05);
    CHECK_NEAR(g.sd_frac, 0.01, 0.002, 0);
    CHECK(st.max_rel < 0.01, "cells max error %g", st.max_rel);
    free(st.cell);
    /* noiseless: exact */
    for (size_t i = 0; i < n; i++) {
        double x = p[i].tokens, kv = p[i].kv_tokens;
        p[i].us = base + slope * fmax(0, x - knee) + pe * fit_experts(384, 8, x) + pkv * kv / 1000;
    }
    rc = fit_group(p, n, &c, &g, NULL, err, sizeof err);
    CHECK(rc == 0, "%s", err);
    CHECK_NEAR(g.base_us, base, 1e-6, 1e-6);
    CHECK_NEAR(g.per_token_us, slope, 1e-9, 1e-6);
    CHECK_NEAR(g.per_expert_us, pe, 1e-9, 1e-6);
    CHECK_NEAR(g.per_kv_ktoken_us, pkv, 1e-9, 1e-6);
    CHECK(g.sd_frac < 1e-9, "sd_frac %g", g.sd_frac);
    free(p);
    gsl_rng_free(r);
}

/* A flat cost must not get a negative slope: the column is dropped (coefficients >= 0). */
static void fit_group_keeps_coefficients_nonnegative(void)
{
    fit_point p[60];
    size_t n = 0;
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 10; j++)   /* falls slightly with tokens: slope would be < 0 */
            p[n++] = (fit_point){.tokens = (double)(1 << i), .us = 30.0 - 0.3 * i + 0.01 * j};
    const char *names[] = {"t.json"};
    fit_group_ctx c = {.trace_names = names, .ntraces = 1, .phase = "accept",
                       .group = "accept_kernel"};
    wm_group g;
    char err[512];
    CHECK(fit_group(p, n, &c, &g, NULL, err, sizeof err) == 0, "%s", err);
    CHECK(g.per_token_us == 0 && g.per_expert_us == 0 && g.per_kv_ktoken_us == 0,
          "negative column kept: per_token %g", g.per_token_us);
    CHECK_NEAR(g.base_us, 29.3, 0.3, 0);
    CHECK(fit_experts(384, 8, 100) == wm_experts_touched(&(wm_model){.moe_experts = 384,
          .moe_topk = 8}, 100), "fit_experts differs from wm_experts_touched");
}

/* NaN, infinite and negative durations and a single token count are refused with names. */
static void fit_group_refuses_bad_values_with_names(void)
{
    const char *names[] = {"calib/a.json", "calib/b.json"};
    fit_group_ctx c = {.trace_names = names, .ntraces = 2, .phase = "verify",
                       .group = "L3 attn_kernel"};
    fit_point p[4] = {{.tokens = 4, .us = 10}, {.tokens = 8, .us = 11},
                      {.tokens = 16, .us = NAN, .trace = 1}, {.tokens = 32, .us = 12, .trace = 1}};
    wm_group g;
    char err[512];
    CHECK(fit_group(p, 4, &c, &g, NULL, err, sizeof err) == -1, "NaN accepted");
    CHECK(strstr(err, "calib/b.json") && strstr(err, "L3 attn_kernel") && strstr(err, "nan"),
          "message: %s", err);
    p[2].us = -3;
    CHECK(fit_group(p, 4, &c, &g, NULL, err, sizeof err) == -1, "negative accepted");
    CHECK(strstr(err, "calib/b.json") && strstr(err, "-3") && strstr(err, "negative"),
          "message: %s", err);
    p[2].us = INFINITY;
    CHECK(fit_group(p, 4, &c, &g, NULL, err, sizeof err) == -1, "inf accepted");
    for (int i = 0; i < 4; i++)
        p[i] = (fit_point){.tokens = 64, .us = 10 + i, .trace = i % 2};
    CHECK(fit_group(p, 4, &c, &g, NULL, err, sizeof err) == -1, "one token count accepted");
    CHECK(strstr(err, "only one distinct token count") && strstr(err, "calib/a.json") &&
          strstr(err, "value 64") && strstr(err, "L3 attn_kernel"), "message: %s", err);
}

/* From kernel records: groups matched by position (cuBLAS names changing with tokens), the
 * layer folded (count 4), coefficients of the known kernels recovered. */
static void fit_run_recovers_groups_from_kernel_records(void)
{
    fit_trace tr[NCAL];
    fit_result res;
    char err[1024];
    int rc = fit_grid(tr, &res, 0.01, 0, err, sizeof err);
    CHECK(rc == 0, "fit_run: %s", err);
    if (rc == 0) {
        const wm_model *m = &res.model;
        CHECK(res.phase[WM_VERIFY].by == FIT_BY_POSITION, "verify matched by name");
        /* head 1 (embedding) + layer 8 + tail 3 + the gap group (no copies: steps 3) */
        CHECK(m->phase[WM_VERIFY].ngroups == 13, "verify groups %d", m->phase[WM_VERIFY].ngroups);
        const wm_group *qkv = find_group(m, WM_VERIFY, "L1 gemm");
        const wm_group *attn = find_group(m, WM_VERIFY, "L2 attn_kernel");
        const wm_group *moe = find_group(m, WM_VERIFY, "L5 moe_kernel");
        const wm_group *lm = find_group(m, WM_VERIFY, "t1 gemm");
        CHECK(qkv && attn && moe && lm, "groups missing");
        if (qkv && attn && moe && lm) {
            /* layer groups: 4 layers' worth; tolerance 5% on slopes, 3% on bases (1% noise) */
            CHECK(qkv->count == 4, "count %d", qkv->count);
            CHECK_NEAR(qkv->base_us, 4 * 20.0, 0, 0.03);
            CHECK_NEAR(qkv->per_token_us, 4 * 0.05, 0, 0.05);
            CHECK_NEAR(qkv->knee_tokens, 64, 0, 0);
            CHECK_NEAR(attn->per_kv_ktoken_us, 4 * 0.5, 0, 0.05);
            /* the cost without KV at 64 tokens (the slope may sit in per_token_us or in
             * per_token_all_us: the same line through these points) */
            CHECK_NEAR(wm_group_us(m, attn, 64, 0), 4 * (5.0 + 0.01 * 64), 0, 0.05);
            CHECK_NEAR(moe->per_expert_us, 4 * 0.2, 0, 0.05);
            CHECK_NEAR(moe->base_us, 4 * 10.0, 0, 0.05);
            CHECK_NEAR(lm->per_token_us, 0.1, 0, 0.05);
            CHECK_NEAR(lm->knee_tokens, 32, 0, 0);
        }
        CHECK(m->moe_experts == GEN_E && m->moe_topk == GEN_K, "moe %d/%d", m->moe_experts, m->moe_topk);
        /* draft: 2 forwards per instance (steps 3), costs per forward */
        const wm_group *dqkv = find_group(m, WM_DRAFT, "k2 gemm");
        CHECK(dqkv && dqkv->count == 1, "draft qkv group");
        if (dqkv)
            CHECK_NEAR(dqkv->base_us, 8.0, 0, 0.03);
        /* launch cost: the host's launch calls of a graph phase (input copy, graph) */
        CHECK_NEAR(m->graph_launch_us, GEN_MEMCPY_CALL_US + GEN_EAGER_WORK_US + GEN_GRAPH_LAUNCH_US, 0.01, 0);
        const wm_group *cp = find_group(m, WM_DRAFT, "(copies)");
        CHECK(cp && cp->count == 1 && res.phase[WM_DRAFT].by == FIT_BY_POSITION, "draft copies");
        if (cp)   /* one 1.5 us copy per instance of 2 forwards */
            CHECK_NEAR(cp->base_us, GEN_MEMCPY_US / 2, 0.01, 0);
        /* every phase total within 2% of the measured cells */
        for (int p = 0; p < WM_NPHASE; p++)
            for (int c = 0; c < res.phase[p].ncells; c++) {
                const fit_cell *cl = &res.phase[p].total[c];
                CHECK_NEAR(cl->fit_us, cl->us_mean, 0, 0.02);
            }
        /* the model the fit wrote loads back */
        char path[] = "/tmp/specsim-test-fit-XXXXXX";
        int fd = mkstemp(path);
        CHECK(fd >= 0, "mkstemp");
        if (fd >= 0) {
            static wm_model back;
            close(fd);
            CHECK(wm_save(m, path, err, sizeof err) == 0, "%s", err);
            CHECK(wm_load(&back, path, err, sizeof err) == 0, "%s", err);
            CHECK_NEAR(back.phase[WM_VERIFY].groups[1].base_us, m->phase[WM_VERIFY].groups[1].base_us, 1e-9, 1e-9);
            remove(path);
        }
        fit_result_free(&res);
    }
    for (int i = 0; i < NCAL; i++)
        fit_trace_free(&tr[i]);
}

/* Experts of a row (models/fit_phase.c fph_expert_row_exp): a synthetic MoE target whose
 * verify touches the experts of rows x q^0.6 tokens routed alone (its cost per expert 20x
 * the generator's default, so that the experts carry the verify time as in torchbench's MoE),
 * captured at steps 2 and 5 at 1, 3 and 8 rows: the fit picks an exponent next to 0.6 from its
 * grid, and the MoE group prices held-out shapes (3 rows of 4, 1 row of 8, 2 rows of 2)
 * within 3%; forced to route every token alone (FIT_EXPERT_ROW_EXP=1, the rule off) it is
 * off by more. Routed alone in the generator, the fit keeps 1 and writes no key. */
static int row_exp_fit(double gen_exp, fit_trace *tr, fit_result *res, char *err, size_t n)
{
    static const int steps[2] = {2, 5}, bs[3] = {1, 3, 8};
    gen_sink *s = malloc(sizeof *s);
    gen_row_exp = gen_exp;
    gen_moe_scale = 20;
    for (int i = 0; i < 6; i++) {
        gen_cfg c = {1, steps[i / 3], bs[i % 3], 16, 1000, 20, 300u + (unsigned)i, 0.01, 0, 0, 0, 0, 0, 0, 0, 0};
        char label[64];
        snprintf(label, sizeof label, "moe-s%d-bs%d.json", c.steps, c.bs);
        gen_trace(&tr[i], label, &c, s);
    }
    free(s);
    fit_opts o = {.moe_experts = GEN_E, .moe_topk = GEN_K, .name = "synthetic"};
    int rc = fit_run(tr, 6, &o, res, err, n);
    for (int i = 0; i < 6; i++)
        fit_trace_free(&tr[i]);
    return rc;
}

/* The largest relative error of the model's MoE verify group against the generator's cost at
 * held-out shapes (rows, q). */
static double row_exp_worst(const wm_model *m)
{
    const wm_group *g = find_group(m, WM_VERIFY, "L5 moe_kernel");
    const kt *k = &gen_target.layer[5];
    static const double shape[][2] = {{3, 4}, {1, 8}, {2, 2}, {6, 3}};
    double worst = INFINITY;
    if (!g || strcmp(k->cls, "moe_kernel") != 0)
        return worst;
    worst = 0;
    for (size_t i = 0; i < sizeof shape / sizeof shape[0]; i++) {
        double rows = shape[i][0], q = shape[i][1], t = rows * q;
        double want = g->count * gen_cost(k, t, 1000 * rows, q), got = wm_group_us_q(m, g, t, 1000 * rows, q);
        worst = fmax(worst, fabs(got - want) / want);
    }
    return worst;
}

static void fit_finds_how_a_rows_tokens_share_experts(void)
{
    static fit_trace tr[6];
    fit_result res;
    char err[1024];
    int rc = row_exp_fit(0.6, tr, &res, err, sizeof err);
    CHECK(rc == 0, "fit_run: %s", err);
    double with = INFINITY, without = INFINITY;
    if (rc == 0) {
        double e = res.model.phase[WM_VERIFY].expert_row_exp;
        CHECK(e == 0.55 || e == 0.7, "exponent %g (generator 0.6)", e);
        const wm_group *g = find_group(&res.model, WM_VERIFY, "L5 moe_kernel");
        CHECK(g && g->expert_row_exp == e, "the group's copy %g", g ? g->expert_row_exp : -1);
        CHECK(res.model.phase[WM_DRAFT].expert_row_exp <= 1 && res.model.phase[WM_EXTEND].expert_row_exp <= 1 &&
              !(res.model.phase[WM_EXTEND].expert_row_exp > 0 && res.model.phase[WM_EXTEND].expert_row_exp < 1),
              "extend %g: the draft's phases route alone", res.model.phase[WM_EXTEND].expert_row_exp);
        with = row_exp_worst(&res.model);
        CHECK(with < 0.03, "held-out MoE group off by %.2f%% with the exponent", 100 * with);
        fit_result_free(&res);
    }
    setenv("FIT_EXPERT_ROW_EXP", "1", 1);
    rc = row_exp_fit(0.6, tr, &res, err, sizeof err);
    unsetenv("FIT_EXPERT_ROW_EXP");
    CHECK(rc == 0, "fit_run (rule off): %s", err);
    if (rc == 0) {
        without = row_exp_worst(&res.model);
        CHECK(without > 0.04 && without > 2 * with, "rule off: off by %.2f%% (with it %.2f%%)", 100 * without,
              100 * with);
        if (getenv("FIT_TEST_VERBOSE"))
            printf("     held-out MoE group: off by %.2f%% with the exponent, %.2f%% routed alone\n", 100 * with,
                   100 * without);
        fit_result_free(&res);
    }
    rc = row_exp_fit(0, tr, &res, err, sizeof err);
    CHECK(rc == 0, "fit_run (tokens routed alone): %s", err);
    if (rc == 0) {
        double e = res.model.phase[WM_VERIFY].expert_row_exp;
        CHECK(e == 1, "tokens routed alone: exponent %g", e);
        CHECK(row_exp_worst(&res.model) < 0.03, "routed alone: off by %.2f%%", 100 * row_exp_worst(&res.model));
        char path[] = "/tmp/specsim-test-rowexp-XXXXXX";
        int fd = mkstemp(path);
        if (fd >= 0) {
            close(fd);
            CHECK(wm_save(&res.model, path, err, sizeof err) == 0, "%s", err);
            FILE *f = fopen(path, "r");
            char buf[1 << 16];
            size_t nb = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
            buf[nb] = 0;
            if (f)
                fclose(f);
            CHECK(nb > 0 && !strstr(buf, "expert_row_exponent"), "a model routed alone names the exponent");
            remove(path);
        }
        fit_result_free(&res);
    }
    gen_row_exp = gen_moe_scale = 0;
}

/* Occupancy on a Hopper SM: kimi-tp8's k_moe_gemm<4> (128 threads, 96 registers, 16 KB
 * shared) fits 5 blocks per SM (registers: 4 warps x 3072 = 12288 of 65536), <1> (64
 * registers) 8, a 256-thread kernel 8 (threads), a 1024-thread one 2, cuBLAS's nvjet
 * (384 threads, 168 registers, 216 KB shared) 1; a block over the shared memory 0. */
static void fit_blocks_per_sm_follows_hopper_limits(void)
{
    CHECK(fit_blocks_per_sm(128, 96, 16384) == 5, "%d", fit_blocks_per_sm(128, 96, 16384));
    CHECK(fit_blocks_per_sm(128, 64, 16384) == 8, "%d", fit_blocks_per_sm(128, 64, 16384));
    CHECK(fit_blocks_per_sm(256, 16, 128) == 8, "%d", fit_blocks_per_sm(256, 16, 128));
    CHECK(fit_blocks_per_sm(1024, 30, 264) == 2, "%d", fit_blocks_per_sm(1024, 30, 264));
    CHECK(fit_blocks_per_sm(384, 168, 221444) == 1, "%d", fit_blocks_per_sm(384, 168, 221444));
    CHECK(fit_blocks_per_sm(32, 16, 0) == 32, "%d", fit_blocks_per_sm(32, 16, 0));   /* block cap */
    CHECK(fit_blocks_per_sm(128, 32, 240 * 1024) == 0, "%d", fit_blocks_per_sm(128, 32, 240 * 1024));
    CHECK(fit_blocks_per_sm(0, 32, 0) == 0, "no threads");
}

/* Blocks vs tokens: a line (k_attn_combine: 8 per token), a line capped at E expert slots
 * (k_moe_gemm: 32 column tiles x min(8 tokens, 384) slots, written per expert touched), and
 * what is refused: not linear (cuBLAS tiles chosen per size), one wave everywhere, capacities
 * that differ. */
static void fit_wave_geometry_reads_grids(void)
{
    fit_group_ctx c = {.moe_experts = 0};
    double t[] = {3, 6, 24, 48, 72, 144, 480}, b[7], cap[7];
    for (int i = 0; i < 7; i++)
        b[i] = 8 * t[i], cap[i] = 2112;
    CHECK(fit_wave_geometry(t, b, cap, 7, 0, 0, &c) == 1, "line refused");
    CHECK_NEAR(c.wave_blocks_per_token, 8, 1e-9, 0);
    CHECK_NEAR(c.wave_blocks0, 0, 1e-6, 0);
    CHECK(c.wave_capacity == 2112 && c.wave_blocks_max == 0 && c.wave_blocks_per_expert == 0,
          "capacity %g max %g", c.wave_capacity, c.wave_blocks_max);
    for (int i = 0; i < 7; i++)
        b[i] = 32 * fmin(8 * t[i], 384), cap[i] = 660;
    CHECK(fit_wave_geometry(t, b, cap, 7, 384, 8, &c) == 1, "MoE slots refused");
    CHECK(c.wave_blocks_per_expert == 32 && c.wave_blocks_per_token == 0 && c.wave_capacity == 660,
          "per expert %g per token %g", c.wave_blocks_per_expert, c.wave_blocks_per_token);
    CHECK(fit_wave_geometry(t, b, cap, 7, 0, 0, &c) == 1 && c.wave_blocks_max == 12288 &&
          c.wave_blocks_per_token == 256, "dense: a capped line (max %g)", c.wave_blocks_max);
    double nv[] = {40, 40, 96, 108, 108, 120, 132};   /* cuBLAS: tiles per size */
    CHECK(fit_wave_geometry(t, nv, cap, 7, 0, 0, &c) == 0 && c.wave_capacity == 0, "not a line");
    for (int i = 0; i < 7; i++)
        b[i] = t[i], cap[i] = 1056;
    CHECK(fit_wave_geometry(t, b, cap, 7, 0, 0, &c) == 0, "one wave at every count");
    for (int i = 0; i < 7; i++)
        b[i] = 8 * t[i], cap[i] = i ? 2112 : 1056;
    CHECK(fit_wave_geometry(t, b, cap, 7, 0, 0, &c) == 0, "capacities differ");
}

/* A group whose kernel runs ceil(256 tokens / 660) waves at 100 us each, plus 50 us and
 * 1 us per token, 0.5% noise, at 1..32 tokens: with the kernel's own time measured
 * (kernel_us) the fit takes 100 us per wave from it; with the group's time only, the wave
 * column wins the cross-validation; either prices the step at 2 -> 3 tokens (1 -> 2 waves)
 * that no line through these counts can. Without the geometry no wave term is written. */
static void fit_group_recovers_wave_step(void)
{
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 5);
    const double tok[] = {1, 3, 4, 6, 8, 12, 16, 20, 24, 32};
    fit_point p[10 * 8];
    size_t n = 0;
    for (int i = 0; i < 10; i++)
        for (int j = 0; j < 8; j++) {
            double waves = ceil(256 * tok[i] / 660 - 1e-9);
            double k = 100 * waves * (1 + 0.005 * gsl_ran_gaussian(r, 1));
            p[n++] = (fit_point){.tokens = tok[i], .us = 50 + tok[i] + k, .kernel_us = k};
        }
    gsl_rng_free(r);
    const char *names[] = {"synthetic.json"};
    fit_group_ctx c = {.trace_names = names, .ntraces = 1, .phase = "verify", .group = "k_wave",
                       .wave_blocks_per_token = 256, .wave_capacity = 660};
    wm_model m;
    wm_init(&m);
    for (int mode = 0; mode < 2; mode++) {
        if (mode == 1)
            for (size_t i = 0; i < n; i++)
                p[i].kernel_us = 0;   /* not measured: the cross-validated column */
        wm_group g;
        memset(&g, 0, sizeof g);
        fit_group_stats st;
        char err[512];
        CHECK(fit_group(p, n, &c, &g, &st, err, sizeof err) == 0, "%s", err);
        CHECK_NEAR(g.per_wave_us, 100, 0, 0.03);
        CHECK(g.wave_blocks_per_token == 256 && g.wave_capacity == 660, "geometry not written");
        CHECK_NEAR(wm_group_us(&m, &g, 3, 0) - wm_group_us(&m, &g, 2, 0), 100 + 1, 0, 0.05);
        CHECK_NEAR(wm_group_us(&m, &g, 2, 0), 50 + 2 + 100, 0, 0.03);   /* not calibrated */
        CHECK(st.max_rel < 0.02, "cells off by %g", st.max_rel);
        free(st.cell);
    }
    fit_group_ctx none = c;
    none.wave_capacity = 0;
    wm_group g;
    char err[512];
    CHECK(fit_group(p, n, &none, &g, NULL, err, sizeof err) == 0, "%s", err);
    CHECK(g.per_wave_us == 0 && g.wave_capacity == 0, "wave term without geometry");
}

/* From kernel records with grid sizes: a trace whose verify runs a small kernel (one block
 * per token), a wave kernel (32 x 8 tokens blocks of 128 threads, 96 registers: 660 per wave
 * on 132 SMs) costing 80 us per wave, and a tail kernel, at 1..32 tokens. fit_run finds the
 * wave kernel's grid, its occupancy and its cost per wave; the small kernel (one wave
 * everywhere) gets no wave term. */
static void fit_run_recovers_wave_step_from_grid_sizes(void)
{
    fit_trace tr;
    CHECK(fit_trace_init(&tr, "synthetic-waves.json") == 0, "init");
    gen_header(&tr.hdr);
    tr.has_header = 1;
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 9);
    const double tok[] = {1, 3, 4, 6, 8, 12, 16, 24, 32};
    char rname[9][64];
    double t = 1000;
    uint32_t corr = 1;
    for (int i = 0; i < 9; i++) {
        snprintf(rname[i], sizeof rname[i], "verify tokens=%g rows=%g graph=1", tok[i], tok[i]);
        for (int it = 0; it < 12; it++) {
            double r0 = t;
            t += 5;
            const char *kn[3] = {"void k_small(int)", "void k_wave<4>(int)", "void k_tail(int)"};
            double waves = ceil(256 * tok[i] / 660 - 1e-9);
            double us[3] = {3 + 0.05 * tok[i], 80 * waves, 4};
            for (int k = 0; k < 3; k++) {
                const int32_t grid[3] = {k == 1 ? 32 : k == 0 ? (int32_t)tok[i] : 1,
                                         k == 1 ? 8 * (int32_t)tok[i] : 1, 1};
                rec_kernel(&tr, &t, us[k] * (1 + 0.005 * gsl_ran_gaussian(r, 1)), kn[k], corr++,
                           rname[i], grid, k == 1 ? 128 : 256, k == 1 ? 96 : 16,
                           k == 1 ? 16384 : 0);
            }
            rec_range(&tr, r0, t + 2, rname[i]);
            t += 20;
        }
    }
    gsl_rng_free(r);
    static fit_result res;
    fit_opts o = {.name = "waves"};
    char err[1024];
    int rc = fit_run(&tr, 1, &o, &res, err, sizeof err);
    CHECK(rc == 0, "fit_run: %s", err);
    if (rc == 0) {
        const wm_model *m = &res.model;
        const wm_group *w = NULL, *small = NULL;
        for (int g = 0; g < m->phase[WM_VERIFY].ngroups; g++) {
            const wm_group *x = &m->phase[WM_VERIFY].groups[g];
            if (strstr(x->name, "k_wave"))
                w = x;
            if (strstr(x->name, "k_small"))
                small = x;
        }
        CHECK(w && small, "groups missing");
        if (w && small) {
            CHECK(w->wave_capacity == 660 && w->wave_blocks_per_token == 256,
                  "geometry: capacity %g, %g blocks per token", w->wave_capacity,
                  w->wave_blocks_per_token);
            CHECK_NEAR(w->per_wave_us, 80, 0, 0.03);
            /* 2 tokens (512 blocks: 1 wave) was never captured; 3 (768: 2 waves) was */
            CHECK_NEAR(wm_group_us(m, w, 2, 0), 80, 0, 0.05);
            CHECK_NEAR(wm_group_us(m, w, 3, 0), 160, 0, 0.03);
            CHECK(small->per_wave_us == 0 && small->wave_capacity == 0, "small kernel has waves");
        }
        fit_result_free(&res);
    }
    fit_trace_free(&tr);
}

/* cuBLAS split-K at small token counts: two kernels where there is one at large counts. The
 * adjacent GEMM kernels merge, so positions still match and the phase totals hold. */
static void fit_run_merges_split_k_gemms(void)
{
    fit_trace tr[NCAL];
    fit_result res;
    char err[1024];
    int rc = fit_grid(tr, &res, 0.005, 1, err, sizeof err);
    CHECK(rc == 0, "fit_run: %s", err);
    if (rc == 0) {
        CHECK(res.phase[WM_VERIFY].by == FIT_BY_POSITION, "split-K broke position matching");
        const wm_group *qkv = find_group(&res.model, WM_VERIFY, "L1 gemm");
        CHECK(qkv && qkv->count >= 4, "qkv count");
        for (int c = 0; c < res.phase[WM_VERIFY].ncells; c++)
            CHECK_NEAR(res.phase[WM_VERIFY].total[c].fit_us, res.phase[WM_VERIFY].total[c].us_mean, 0, 0.02);
        fit_result_free(&res);
    }
    for (int i = 0; i < NCAL; i++)
        fit_trace_free(&tr[i]);
}

/* The mean over a phase's cells of measured total - model (us). */
static double phase_total_bias(const fit_result *res, int p)
{
    double r[64];
    int n = 0;
    for (int c = 0; c < res->phase[p].ncells && n < 64; c++)
        r[n++] = res->phase[p].total[c].us_mean - res->phase[p].total[c].fit_us;
    for (int i = 1; i < n; i++)          /* the median of the cells' residuals */
        for (int j = i; j > 0 && r[j - 1] > r[j]; j--) {
            double t = r[j];
            r[j] = r[j - 1];
            r[j - 1] = t;
        }
    return n ? (n % 2 ? r[n / 2] : 0.5 * (r[n / 2 - 1] + r[n / 2])) : 0;
}

/* fit_grid with every GEMM at bump_bs rows costing bump times its smooth cost, as lite
 * captures or not, the totals rule on or off (FIT_TOTAL_BIAS=0). */
static int bump_fit(fit_trace *tr, fit_result *res, int bump_bs, double bump, int lite, int rule_off,
                    char *err, size_t n)
{
    gen_gemm_bump_bs = bump_bs;
    gen_gemm_bump = bump;
    if (rule_off)
        setenv("FIT_TOTAL_BIAS", "0", 1);
    fit_grid_lite = lite;
    int rc = fit_grid(tr, res, 0.005, 0, err, n);
    fit_grid_lite = 0;
    unsetenv("FIT_TOTAL_BIAS");
    gen_gemm_bump_bs = 0;
    return rc;
}

/* The groups' sum follows the phase totals at the typical cell (fph_total_bias): a grid whose
 * GEMMs at 1 row cost GEN_BUMP of their smooth form (a 1-row fast path: PyTorch's
 * elementwise kernels, call 13), which pulls the groups' forms away from the other cells.
 * Without the correction (FIT_TOTAL_BIAS=0) the model sits off most verify totals (above them:
 * -5.90 us of 458.8); with it the cells' median residual is 0; in traces that are not
 * unprofiled lite captures it is not applied. */
#ifndef GEN_BUMP
#define GEN_BUMP 0.6
#endif
static void fit_groups_sum_to_the_phase_totals(void)
{
    for (int off = 0; off < 3; off++) {
        fit_trace tr[NCAL];
        fit_result res;
        char err[1024];
        int rc = bump_fit(tr, &res, 1, GEN_BUMP, off < 2, off == 1, err, sizeof err);
        CHECK(rc == 0, "fit_run: %s", err);
        if (rc == 0) {
            double bias = phase_total_bias(&res, WM_VERIFY), tot = 0;
            for (int c = 0; c < res.phase[WM_VERIFY].ncells; c++)
                tot += res.phase[WM_VERIFY].total[c].us_mean / res.phase[WM_VERIFY].ncells;
            printf("     verify totals - model, median over %d cells: %+.2f us of %.1f (%s)\n",
                   res.phase[WM_VERIFY].ncells, bias, tot,
                   off == 0 ? "lite, on" : off == 1 ? "lite, correction off" : "not lite");
            if (off)
                CHECK(fabs(bias) > 0.005 * tot, "no bias to correct: %+.2f us", bias);
            else
                CHECK(fabs(bias) < 0.001 * tot, "groups' sum off the totals by %+.2f us", bias);
            fit_result_free(&res);
        }
        for (int i = 0; i < NCAL; i++)
            fit_trace_free(&tr[i]);
    }
}

/* One odd cell does not drag the others (the cells' median, not their mean): GEMMs 40% dearer
 * at 2 rows alone (call 18's accept at 80 rows: one cell 10x the rest). The groups' forms,
 * pulled up by it, sit 4-12 us above the five other cells (2.97% at worst); the median brings
 * them to 1.16% at worst, where the mean (+7.80 us: the odd cell's sixth) would have pushed
 * them further off. */
static void fit_one_odd_cell_leaves_the_totals_rule_alone(void)
{
    double off5[2] = {0, 0}, mean_rule = 0;
    int odd = -1;
    for (int off = 0; off < 2; off++) {
        fit_trace tr[NCAL];
        fit_result res;
        char err[1024];
        int rc = bump_fit(tr, &res, 2, 1.4, 1, off, err, sizeof err);
        CHECK(rc == 0, "fit_run: %s", err);
        if (rc == 0) {
            const fit_phase_res *v = &res.phase[WM_VERIFY];
            double worst = 0, sum = 0;
            for (int c = 0; c < v->ncells; c++)   /* the odd cell: the largest residual */
                if (odd < 0 || v->total[c].us_mean - v->total[c].fit_us >
                               v->total[odd].us_mean - v->total[odd].fit_us)
                    odd = c;
            for (int c = 0; c < v->ncells; c++) {
                double r = (v->total[c].us_mean - v->total[c].fit_us) / v->total[c].us_mean;
                sum += v->total[c].us_mean - v->total[c].fit_us;
                if (c != odd && fabs(r) > worst)
                    worst = fabs(r);
            }
            off5[off] = worst;
            if (off)
                mean_rule = sum / v->ncells;
            fit_result_free(&res);
        }
        for (int i = 0; i < NCAL; i++)
            fit_trace_free(&tr[i]);
    }
    printf("     the five ordinary cells: worst %.2f%% off with the median rule, %.2f%% without; "
           "a mean would add %+.2f us\n", 100 * off5[0], 100 * off5[1], mean_rule);
    CHECK(off5[0] < 0.015 && off5[1] > 0.02 && mean_rule > 0,
          "five cells %.2f%% / %.2f%% off, the mean %+.2f us", 100 * off5[0], 100 * off5[1], mean_rule);
}

static void fit_run_refuses_one_token_count(void)
{
    fit_trace tr[2];
    gen_sink *s = malloc(sizeof *s);
    for (int i = 0; i < 2; i++) {
        gen_cfg c = {1, 3, 4, 32, 1000.0 * (i + 1), 20, 5u + (unsigned)i, 0.01, 0, 0, 0, 0, 0, 0, 0, 0};
        gen_trace(&tr[i], i ? "only-bs4-b.json" : "only-bs4-a.json", &c, s);
    }
    free(s);
    fit_result res;
    char err[1024];
    fit_opts o = {0};
    CHECK(fit_run(tr, 2, &o, &res, err, sizeof err) == -1, "one token count fitted");
    CHECK(strstr(err, "only one distinct token count") && strstr(err, "only-bs4-a.json") &&
          strstr(err, "group") && strstr(err, "value 4"), "message: %s", err);
    for (int i = 0; i < 2; i++)
        fit_trace_free(&tr[i]);
}

/* A trace whose layers hold a kernel the other trace lacks: matched by name, and the group
 * absent from one trace is refused with the trace and the group named. */
static void fit_run_refuses_group_absent_from_a_trace(void)
{
    fit_trace tr[2];
    gen_sink *s = malloc(sizeof *s);
    gen_cfg a = {1, 3, 4, 32, 1000, 20, 11, 0.01, 0, 0, 0, 0, 0, 0, 0, 0};
    gen_cfg b = {1, 3, 16, 32, 1000, 20, 12, 0.01, 0, 1, 0, 0, 0, 0, 0, 0};
    gen_trace(&tr[0], "plain.json", &a, s);
    gen_trace(&tr[1], "with-rope.json", &b, s);
    free(s);
    fit_result res;
    char err[1024];
    fit_opts o = {0};
    CHECK(fit_run(tr, 2, &o, &res, err, sizeof err) == -1, "absent group fitted");
    CHECK(strstr(err, "plain.json") && strstr(err, "rope_kernel") && strstr(err, "absent") &&
          strstr(err, "with-rope.json"), "message: %s", err);
    for (int i = 0; i < 2; i++)
        fit_trace_free(&tr[i]);
}

static void fit_run_refuses_negative_kernel_duration(void)
{
    fit_trace tr[2];
    gen_sink *s = malloc(sizeof *s);
    for (int i = 0; i < 2; i++) {
        gen_cfg c = {1, 3, 4 << (2 * i), 32, 1000, 10, 21u + (unsigned)i, 0.01, 0, 0, 0, 0, 0, 0, 0, 0};
        gen_trace(&tr[i], i ? "neg-b.json" : "neg-a.json", &c, s);
    }
    free(s);
    ptrace_kernel *k = &tr[1].kern[40];
    k->end_ns = k->start_ns - 2500;
    fit_result res;
    char err[1024];
    fit_opts o = {0};
    CHECK(fit_run(tr, 2, &o, &res, err, sizeof err) == -1, "negative duration fitted");
    CHECK(strstr(err, "neg-b.json") && strstr(err, "-2.5") && strstr(err, "negative") &&
          strstr(err, "kernel"), "message: %s", err);
    for (int i = 0; i < 2; i++)
        fit_trace_free(&tr[i]);
}

/* Through the trace files: a complete one and one cut off by SIGKILL both load and fit. */
static void fit_loads_json_traces_also_cut_off(void)
{
    char dir[] = "/tmp/specsim-test-fit-dir-XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    char p1[128], p2[128];
    snprintf(p1, sizeof p1, "%s/a.json", dir);
    snprintf(p2, sizeof p2, "%s/b.json.part", dir);
    gen_sink *s = malloc(sizeof *s);
    gen_cfg a = {0, 1, 2, 32, 800, 40, 31, 0.01, 0, 0, 0, 0, 0, 0, 0, 0};
    gen_cfg b = {0, 1, 24, 32, 800, 40, 32, 0.01, 0, 0, 1, 0, 0, 0, 0, 0};
    CHECK(gen_file(p1, &a, s) == 0 && gen_file(p2, &b, s) == 0, "writing");
    free(s);
    fit_trace tr[2];
    char err[1024];
    int ok = fit_trace_load(&tr[0], p1, err, sizeof err) == 0;
    CHECK(ok, "%s", err);
    ok = ok && fit_trace_load(&tr[1], p2, err, sizeof err) == 0;
    CHECK(ok, "%s", err);
    if (ok) {
        CHECK(!tr[0].truncated && tr[1].truncated && tr[1].cut_last_line, "truncation flags %d %d %d",
              tr[0].truncated, tr[1].truncated, tr[1].cut_last_line);
        CHECK(tr[0].nkern > 1000 && tr[0].napi > 0 && tr[0].nrng == 80, "records %zu %zu %zu",
              tr[0].nkern, tr[0].napi, tr[0].nrng);
        fit_result res;
        fit_opts o = {.moe_experts = GEN_E, .moe_topk = GEN_K};
        int rc = fit_run(tr, 2, &o, &res, err, sizeof err);
        CHECK(rc == 0, "%s", err);
        if (rc == 0) {
            CHECK(res.model.phase[WM_DECODE].present && res.model.phase[WM_SAMPLE].present &&
                  !res.model.phase[WM_VERIFY].present, "baseline phases");
            /* bs 24 > 32? no: graph_max 32 -> padded 32; eager launches unmeasured */
            CHECK(res.nwarnings > 0, "a cut-off trace must warn");
            /* plots */
            char pd[160];
            snprintf(pd, sizeof pd, "%s/plots", dir);
            CHECK(fit_plot(&res, pd, err, sizeof err) == 0, "%s", err);
            char f[200];
            snprintf(f, sizeof f, "%s/decode_g01.dat", pd);
            FILE *fp = fopen(f, "r");
            CHECK(fp != NULL, "no %s", f);
            if (fp)
                fclose(fp);
            fit_result_free(&res);
        }
        fit_trace_free(&tr[0]);
        fit_trace_free(&tr[1]);
    }
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0, "cleanup");
}

/* The simulator running the fitted model reproduces the generator's iteration time, for
 * graph, padded and eager batches, speculative and baseline. Tolerance 2%: the model folds
 * the eager gaps and GPU start latency into averages. Contexts are short (100 tokens) so
 * that the KV term is small: the simulator counts padded rows' KV as full rows, specbench
 * (and the generator) as empty; that difference is not the fit's to test. */
#define SIMTEST_CTX 100
static void sim_of_fit_reproduces_iteration_time(void)
{
    /* calibration: spec steps 3 at bs 1, 4, 16 (graphs), 24 (eager, graph_max 16), steps 2,
     * 5 and 1 (whose verify copies its inputs first, as specbench's); baseline at bs 2, 8, 24 */
    const struct { int spec, steps, bs; } cal[] = {
        {1, 3, 1}, {1, 3, 4}, {1, 3, 16}, {1, 3, 24}, {1, 2, 8}, {1, 5, 2}, {1, 1, 2},
        {0, 1, 2}, {0, 1, 8}, {0, 1, 24},
    };
    const int ncal = (int)(sizeof cal / sizeof cal[0]);
    fit_trace tr[16];
    gen_sink *s = malloc(sizeof *s);
    for (int i = 0; i < ncal; i++) {
        if (host_grid_no16 && cal[i].bs == 16) {
            fit_trace_init(&tr[i], "left-out.json");   /* an empty trace adds nothing */
            continue;
        }
        gen_cfg c = {cal[i].spec, cal[i].steps, cal[i].bs, 16, SIMTEST_CTX, 120, 40u + (unsigned)i, 0.01, 1, 0, 0, 0, 0, 0, 0, 0};
        char label[64];
        snprintf(label, sizeof label, "cal-%d.json", i);
        gen_trace(&tr[i], label, &c, s);
    }
    fit_result res;
    char err[1024];
    fit_opts o = {.moe_experts = GEN_E, .moe_topk = GEN_K, .name = "synthetic"};
    int rc = fit_run(tr, ncal, &o, &res, err, sizeof err);
    CHECK(rc == 0, "%s", err);
    if (rc == 0) {
        const wm_model *m = &res.model;
        CHECK(m->eager_launch_us > 0, "eager launch unmeasured");
        if (getenv("FIT_TEST_VERBOSE"))
            for (int p = 0; p < WM_NPHASE; p++)
                for (int c = 0; c < res.phase[p].ncells; c++)
                    printf("     %-7s trace %d tokens %5g: measured %9.3f fit %9.3f gap %.2f\n",
                           wm_phase_name[p], res.phase[p].total[c].trace,
                           res.phase[p].total[c].tokens, res.phase[p].total[c].us_mean,
                           res.phase[p].total[c].fit_us, m->phase[p].host_gap_us);
        /* predicted configurations: calibration ones and others (steps 4, bs 3 padded to 4,
         * bs 12 padded to 16, bs 20 eager) */
        const struct { int spec, steps, bs; } val[] = {
            {1, 3, 1}, {1, 3, 16}, {1, 3, 24}, {1, 4, 3}, {1, 2, 12}, {1, 6, 20}, {1, 1, 6},
            {0, 1, 2}, {0, 1, 5}, {0, 1, 20},
        };
        double worst = 0;
        for (size_t v = 0; v < sizeof val / sizeof val[0]; v++) {
            gen_cfg c = {val[v].spec, val[v].steps, val[v].bs, 16, SIMTEST_CTX, 260, 900u + (unsigned)v, 0.01, 1, 0, 0, 0, 0, 0, 0, 0};
            gen_times(&c, s);
            double truth = gen_iter_us(s, 40, 200);
            sim_params p;
            memset(&p, 0, sizeof p);
            p.model = m;
            accept_parse(&p.acc, "alpha:0", err, sizeof err);
            cg_parse(&p.graphs, "1,2,4,8,16", err, sizeof err);
            p.spec = val[v].spec;
            p.steps = val[v].steps;
            p.topk = 1;
            p.draft_tokens = val[v].steps + 1;
            p.concurrency = val[v].bs;
            p.iterations = 200;
            p.warmup = 40;
            batch_lendist_parse(&p.out_len, "1000000", err, sizeof err);
            p.prompt_tokens = SIMTEST_CTX + 1;  /* the generator's context at iteration 1 */
            p.stagger = 0;
            p.graph_launch_us = m->graph_launch_us;
            p.eager_launch_us = m->eager_launch_us;
            p.ranks = 1;
            p.jitter_scale = 0;
            p.sync_segments = 1;
            p.seed = 1;
            sim_result r;
            rc = sim_run(&p, NULL, &r, err, sizeof err);
            CHECK(rc == 0, "sim: %s", err);
            if (rc)
                continue;
            double e = (r.iter_us - truth) / truth;
            if (fabs(e) > worst)
                worst = fabs(e);
            if (getenv("FIT_TEST_VERBOSE"))
                printf("     spec %d steps %d bs %2d: sim %9.2f us generator %9.2f us %+.2f%%\n",
                       val[v].spec, val[v].steps, val[v].bs, r.iter_us, truth, 100 * e);
            CHECK(fabs(e) <= 0.02, "spec %d steps %d bs %d: sim %.2f us, generator %.2f us "
                  "(%+.2f%%)", val[v].spec, val[v].steps, val[v].bs, r.iter_us, truth, 100 * e);
        }
        printf("     sim of fit: worst iteration-time error %.2f%% over 10 configurations\n", 100 * worst);
        fit_result_free(&res);
    }
    free(s);
    for (int i = 0; i < ncal; i++)
        fit_trace_free(&tr[i]);
}

static double sim_iter_ctx(const wm_model *m, int spec, int steps, int bs, double ctx);

/* KV rows (docs/fit.md): two programs alike but for what a padded row of a graph costs in the
 * attention: nothing (specbench, SGLang: an empty cache) or a real row's KV (torchbench reads
 * every row's whole buffer). Calibrated at steps 3, bs 1..16 (3, 6 and 12 padded to 4, 8
 * and 16) with 16000 tokens of context a row, the fit keeps verify's KV on the real rows for
 * the first and on all padded rows for the second, and the simulator then prices held-out
 * padded batches (5 and 7 -> 8, 10 and 14 -> 16) within 2% of the generator for both. Fails
 * with the choice off (FIT_KV_ROWS=real: the second program's padded batches 3-12% fast). */
static void fit_kv_rows_follow_what_padded_rows_cost(void)
{
    const int cal_b[] = {1, 2, 3, 4, 6, 8, 12, 16}, val_b[] = {5, 7, 10, 14};
    const double cal_c[] = {16000, 4000, 12000, 8000, 2000, 14000, 6000, 10000};
    const double val_c[] = {16000, 3000, 9000, 15000};
    const int ncal = (int)(sizeof cal_b / sizeof cal_b[0]);
    gen_sink *s = malloc(sizeof *s);
    for (int kvp = 0; kvp < 2; kvp++) {
        fit_trace tr[8];
        for (int i = 0; i < ncal; i++) {
            gen_cfg c = {1, 3, cal_b[i], 16, cal_c[i], 60, 300u + (unsigned)i, 0.01, 0, 0, 0, 0, 0, 0, 0,
                         .kv_padded = kvp};
            char label[64];
            snprintf(label, sizeof label, "kv%d-bs%d.json", kvp, cal_b[i]);
            gen_trace(&tr[i], label, &c, s);
        }
        fit_result res;
        char err[1024];
        fit_opts o = {.moe_experts = GEN_E, .moe_topk = GEN_K, .name = "synthetic"};
        int rc = fit_run(tr, ncal, &o, &res, err, sizeof err);
        CHECK(rc == 0, "%s", err);
        if (rc == 0) {
            int want = kvp ? WM_KV_PADDED : WM_KV_REAL;
            CHECK(res.model.phase[WM_VERIFY].kv_rows == want,
                  "program %s: verify kv_rows %d, want %d", kvp ? "padded KV" : "empty pads",
                  res.model.phase[WM_VERIFY].kv_rows, want);
            double worst = 0;
            for (size_t v = 0; v < sizeof val_b / sizeof val_b[0]; v++) {
                gen_cfg c = {1, 3, val_b[v], 16, val_c[v], 260, 700u + (unsigned)v, 0.01, 0, 0, 0, 0, 0,
                             0, 0, .kv_padded = kvp};
                gen_times(&c, s);
                double truth = gen_iter_us(s, 40, 200);
                double sim = sim_iter_ctx(&res.model, 1, 3, val_b[v], val_c[v]);
                double e = (sim - truth) / truth;
                worst = fmax(worst, fabs(e));
                CHECK(fabs(e) <= 0.02, "program %s: bs %d: sim %.2f us, generator %.2f us "
                      "(%+.2f%%)", kvp ? "padded KV" : "empty pads", val_b[v], sim, truth,
                      100 * e);
            }
            printf("     kv rows, program with %s: verify kv_rows %s, worst held-out padded "
                   "iteration error %.2f%%\n", kvp ? "padded KV" : "empty pads",
                   res.model.phase[WM_VERIFY].kv_rows == WM_KV_PADDED ? "padded" : "real",
                   100 * worst);
            fit_result_free(&res);
        }
        for (int i = 0; i < ncal; i++)
            fit_trace_free(&tr[i]);
    }
    free(s);
}

/* The simulator's iteration time for model m at (spec, steps, bs) with graphs 1..16, run
 * as sim_of_fit_reproduces_iteration_time runs it. 0 on failure (checked). */
static double sim_iter_of(const wm_model *m, int spec, int steps, int bs)
{
    return sim_iter_ctx(m, spec, steps, bs, SIMTEST_CTX);
}

/* sim_iter_ctx's run: measured iterations (0: 200), 1: the model's host stalls not drawn
 * (--host-stalls 0). */
static long sim_test_iters;
static int sim_test_no_stalls;

/* The same with ctx tokens of KV context per row at the first iteration. */
static double sim_iter_ctx(const wm_model *m, int spec, int steps, int bs, double ctx)
{
    char err[512];
    sim_params p;
    memset(&p, 0, sizeof p);
    p.model = m;
    accept_parse(&p.acc, "alpha:0", err, sizeof err);
    cg_parse(&p.graphs, "1,2,4,8,16", err, sizeof err);
    p.spec = spec;
    p.steps = steps;
    p.topk = 1;
    p.draft_tokens = steps + 1;
    p.concurrency = bs;
    p.iterations = sim_test_iters > 0 ? sim_test_iters : 200;
    p.no_stalls = sim_test_no_stalls;
    p.warmup = 40;
    batch_lendist_parse(&p.out_len, "1000000", err, sizeof err);
    p.prompt_tokens = (long)ctx + 1;
    p.graph_launch_us = m->graph_launch_us;
    p.eager_launch_us = m->eager_launch_us;
    p.ranks = 1;
    p.jitter_scale = 0;
    p.sync_segments = 1;
    p.seed = 1;
    sim_result r;
    int rc = sim_run(&p, NULL, &r, err, sizeof err);
    CHECK(rc == 0, "sim: %s", err);
    return rc ? 0 : r.iter_us;
}

/* The calibration of sim_of_fit_reproduces_iteration_time (graphs up to 16, eager at 24),
 * the generator's host as given by blocking and per_row, fitted into *res. */
static int fit_host_grid_prof(fit_result *res, int blocking, double per_row, double prof_us,
                              int calib_in_header);
static double host_grid_calib_us;   /* > 0: the traces say CUPTI adds this per eager launch */
static double host_grid_clean_us;   /* > 0: and the launch costs this much less without CUPTI */
static int host_grid_lite;          /* 1: the traces are unprofiled lite captures */

static int fit_host_grid(fit_result *res, int blocking, double per_row)
{
    return fit_host_grid_prof(res, blocking, per_row, 0, 0);
}

/* The same, each recorded launch call prof_us longer (a profiler's own cost), the header's
 * calibration saying so when calib_in_header. */
static int fit_host_grid_prof(fit_result *res, int blocking, double per_row, double prof_us,
                              int calib_in_header)
{
    const struct { int spec, steps, bs; } cal[] = {
        {1, 3, 1}, {1, 3, 4}, {1, 3, 16}, {1, 3, 24}, {1, 2, 8}, {1, 5, 2},
        {0, 1, 2}, {0, 1, 8}, {0, 1, 24},
    };
    const int ncal = (int)(sizeof cal / sizeof cal[0]) + (host_grid_twin != 0);
    fit_trace tr[16];
    gen_sink *s = malloc(sizeof *s);
    for (int i = 0; i < ncal; i++) {
        if (i == ncal - 1 && host_grid_twin) {   /* steps 5 at 16 rows: 96 tokens, a graph */
            gen_cfg c = {1, 5, 16, 16, SIMTEST_CTX, 120, 77u, 0.01, 1, 0, 0, 0, blocking, per_row,
                         prof_us, 0};
            gen_trace(&tr[i], "host-twin.json", &c, s);
            continue;
        }
        if (host_grid_no16 && cal[i].bs == 16) {
            fit_trace_init(&tr[i], "left-out.json");   /* an empty trace adds nothing */
            continue;
        }
        gen_cfg c = {cal[i].spec, cal[i].steps, cal[i].bs, 16, SIMTEST_CTX, 120, 40u + (unsigned)i,
                     0.01, 1, 0, 0, 0, blocking, per_row, prof_us, 0};
        char label[64];
        snprintf(label, sizeof label, "host-%d.json", i);
        gen_trace(&tr[i], label, &c, s);
        if (host_grid_lite)
            snprintf(tr[i].hdr.mode, sizeof tr[i].hdr.mode, "lite");
        if (calib_in_header) {   /* as the end record of a --mode always capture gives it */
            tr[i].hdr.calib.ok = 1;
            tr[i].hdr.calib.kernel_launch_us = prof_us;
        } else if (host_grid_calib_us > 0) {
            tr[i].hdr.calib.ok = 1;
            tr[i].hdr.calib.kernel_launch_us = host_grid_calib_us;
            tr[i].hdr.calib.launch_off_us = 4.0;
            tr[i].hdr.calib.launch_on_us = 4.0 + host_grid_calib_us;
            if (host_grid_clean_us > 0)   /* the clean arm: on - clean */
                tr[i].hdr.calib.launch_clean_us = tr[i].hdr.calib.launch_on_us - host_grid_clean_us;
        }
    }
    free(s);
    char err[1024];
    fit_opts o = {.moe_experts = GEN_E, .moe_topk = GEN_K, .name = "synthetic"};
    int rc = fit_run(tr, ncal, &o, res, err, sizeof err);
    CHECK(rc == 0, "%s", err);
    for (int i = 0; i < ncal; i++)
        fit_trace_free(&tr[i]);
    return rc;
}

/* The host's speed (prediction intervals): a generator whose eager launches run at a speed
 * whose log is an AR(1) process (sd 0.2, lag-1 autocorrelation 0.6) fits to that sd and
 * autocorrelation from the eager instances' launch rates (9 configurations of 120
 * iterations: the sd within 15%, the autocorrelation within 0.12); a steady host fits to
 * an sd near 0 (what the rates' own noise gives). */
static void fit_host_speed_follows_the_hosts_launch_rates(void)
{
    fit_result *r = malloc(sizeof *r);
    gen_host_speed_sd = 0.2;
    gen_host_speed_rho = 0.6;
    int rc = fit_host_grid(r, 0, 0);
    gen_host_speed_sd = gen_host_speed_rho = 0;
    if (rc == 0) {
        printf("     host speed: sd %.4f, autocorrelation %.3f (generated 0.2, 0.6)\n",
               r->model.host_speed_sd_frac, r->model.host_speed_rho);
        CHECK_NEAR(r->model.host_speed_sd_frac, 0.2, 0, 0.15);
        CHECK_NEAR(r->model.host_speed_rho, 0.6, 0.12, 0);
        fit_result_free(r);
    }
    if (fit_host_grid(r, 0, 0) == 0) {
        printf("     steady host: sd %.4f, autocorrelation %.3f\n", r->model.host_speed_sd_frac,
               r->model.host_speed_rho);
        CHECK(r->model.host_speed_sd_frac < 0.03, "steady host: sd %g", r->model.host_speed_sd_frac);
        fit_result_free(r);
    }
    free(r);
}

/* The host's level between windows (prediction intervals): the generator's eager loop in 8
 * windows of 15 iterations per configuration, each window at a level exp(0.2 x N(0, 1)), the
 * speed within an AR(1) of sd 0.1 and autocorrelation 0.3: the fit's level comes out within
 * 0.05 of 0.2 and the speed within the windows near 0.1; the same windows at one level give a
 * level under 0.05; FIT_HOST_LEVEL=0 gives none (and the pooled sd of before). */
static void fit_host_level_between_windows(void)
{
    fit_result *r = malloc(sizeof *r);
    gen_windows = 8;
    gen_host_speed_sd = 0.1;
    gen_host_speed_rho = 0.3;
    gen_host_level_sd = 0.2;
    int rc = fit_host_grid(r, 0, 0);
    if (rc == 0) {
        printf("     level sd %.4f (generated 0.2), within: sd %.4f, autocorrelation %.3f "
               "(generated 0.1, 0.3)\n", r->model.host_speed_level_sd, r->model.host_speed_sd_frac,
               r->model.host_speed_rho);
        CHECK_NEAR(r->model.host_speed_level_sd, 0.2, 0.05, 0);
        CHECK_NEAR(r->model.host_speed_sd_frac, 0.1, 0, 0.3);
        fit_result_free(r);
    }
    setenv("FIT_HOST_LEVEL", "0", 1);
    rc = fit_host_grid(r, 0, 0);
    unsetenv("FIT_HOST_LEVEL");
    if (rc == 0) {
        printf("     FIT_HOST_LEVEL=0: level sd %.4f, pooled sd %.4f, autocorrelation %.3f\n",
               r->model.host_speed_level_sd, r->model.host_speed_sd_frac, r->model.host_speed_rho);
        CHECK(r->model.host_speed_level_sd == 0, "level %g", r->model.host_speed_level_sd);
        fit_result_free(r);
    }
    gen_host_level_sd = 0;
    rc = fit_host_grid(r, 0, 0);
    if (rc == 0) {
        printf("     one level: level sd %.4f\n", r->model.host_speed_level_sd);
        CHECK(r->model.host_speed_level_sd < 0.05, "level %g", r->model.host_speed_level_sd);
        fit_result_free(r);
    }
    gen_windows = 0;
    gen_host_speed_sd = gen_host_speed_rho = 0;
    free(r);
}

/* specprof's launch-cost calibration (what CUPTI adds to an eager launch, written into the
 * trace) comes out of the fitted eager launch cost; FIT_LAUNCH_CALIB=0 keeps it in;
 * FIT_LAUNCH_CALIB_ADD_US adds to it (a what-if: the calibration's blind spot). */
static void fit_takes_the_calibrated_cupti_launch_cost_out(void)
{
    fit_result r0, r1, r2, r3;
    host_grid_calib_us = 0;
    if (fit_host_grid(&r0, 1, 0))
        return;
    host_grid_calib_us = 1.5;
    int rc1 = fit_host_grid(&r1, 1, 0);
    setenv("FIT_LAUNCH_CALIB", "0", 1);
    int rc2 = fit_host_grid(&r2, 1, 0);
    unsetenv("FIT_LAUNCH_CALIB");
    setenv("FIT_LAUNCH_CALIB_ADD_US", "1", 1);
    int rc3 = fit_host_grid(&r3, 1, 0);
    unsetenv("FIT_LAUNCH_CALIB_ADD_US");
    host_grid_calib_us = 0;
    if (rc1 || rc2 || rc3) {
        fit_result_free(&r0);
        if (!rc1) fit_result_free(&r1);
        if (!rc2) fit_result_free(&r2);
        if (!rc3) fit_result_free(&r3);
        return;
    }
    double e0 = r0.model.eager_launch_us, e1 = r1.model.eager_launch_us, e2 = r2.model.eager_launch_us;
    double e3 = r3.model.eager_launch_us;
    printf("     eager launch: %.3f us uncalibrated, %.3f with 1.5 us calibrated, %.3f with it off, "
           "%.3f with 1 us added\n", e0, e1, e2, e3);
    CHECK(fabs((e0 - e1) - 1.5) <= 0.05, "calibrated 1.5 us: eager launch %.3f -> %.3f", e0, e1);
    CHECK(fabs(e2 - e0) <= 1e-9, "FIT_LAUNCH_CALIB=0: %.3f, without a calibration %.3f", e2, e0);
    CHECK(fabs((e0 - e3) - 2.5) <= 0.05, "calibrated 1.5 us + FIT_LAUNCH_CALIB_ADD_US 1: eager launch %.3f -> %.3f",
          e0, e3);
    fit_result_free(&r3);
    /* the clean arm: the launch 2.2 us faster in a process without CUPTI (in-process 1.5 us)
     * takes 2.2 out; FIT_LAUNCH_CLEAN=0 the in-process 1.5 */
    fit_result r4, r5;
    host_grid_calib_us = 1.5;
    host_grid_clean_us = 2.2;
    int rc4 = fit_host_grid(&r4, 1, 0);
    setenv("FIT_LAUNCH_CLEAN", "0", 1);
    int rc5 = fit_host_grid(&r5, 1, 0);
    unsetenv("FIT_LAUNCH_CLEAN");
    host_grid_calib_us = host_grid_clean_us = 0;
    if (!rc4) {
        CHECK(fabs((e0 - r4.model.eager_launch_us) - 2.2) <= 0.05, "clean arm 2.2 us: eager launch %.3f -> %.3f", e0,
              r4.model.eager_launch_us);
        fit_result_free(&r4);
    }
    if (!rc5) {
        CHECK(fabs((e0 - r5.model.eager_launch_us) - 1.5) <= 0.05, "FIT_LAUNCH_CLEAN=0: eager launch %.3f -> %.3f", e0,
              r5.model.eager_launch_us);
        fit_result_free(&r5);
    }
    for (int p = 0; p < WM_NPHASE; p++)
        if (r0.model.phase[p].eager_launch_us > 0)
            CHECK(fabs((r0.model.phase[p].eager_launch_us - r1.model.phase[p].eager_launch_us) - 1.5) <= 0.05,
                  "phase %s: %.3f -> %.3f", wm_phase_name[p], r0.model.phase[p].eager_launch_us,
                  r1.model.phase[p].eager_launch_us);
    fit_result_free(&r0);
    fit_result_free(&r1);
    fit_result_free(&r2);
}

/* The generator's truth against the simulator of res's model at (spec, steps, bs): the
 * relative error. */
static double host_sim_error(const fit_result *res, int spec, int steps, int bs, double per_row,
                             int blocking)
{
    gen_sink *s = malloc(sizeof *s);
    gen_cfg c = {spec, steps, bs, 16, SIMTEST_CTX, 260, 900u + (unsigned)bs, 0.01, 1, 0, 0, 0,
                 blocking, per_row, 0, 0};
    gen_times(&c, s);
    double truth = gen_iter_us(s, 40, 200);
    free(s);
    double sim = sim_iter_of(&res->model, spec, steps, bs);
    if (getenv("FIT_TEST_VERBOSE"))
        printf("     spec %d steps %d bs %2d: sim %9.2f us generator %9.2f us %+.2f%%\n", spec,
               steps, bs, sim, truth, 100 * (sim - truth) / truth);
    return (sim - truth) / truth;
}

/* A result copy that blocks until the GPU is done (to pageable memory, as torch's .tolist()
 * does; accept and sample here, eager at every batch) is a sync: its wait is the GPU time
 * before it, not launch cost. The same program with the copy to pinned memory (the call
 * returns at once, the host waits after it) gives the same eager launch cost, the
 * generator's 4 us call + 1 us of host work per kernel, and the simulator of the blocking
 * fit reproduces eager and graph iterations within 2%. */
static void fit_blocking_copy_is_not_launch_cost(void)
{
    fit_result rb, rp;
    if (fit_host_grid(&rb, 1, 0))
        return;
    if (fit_host_grid(&rp, 0, 0)) {
        fit_result_free(&rb);
        return;
    }
    const wm_model *b = &rb.model, *q = &rp.model;
    printf("     eager launch: %.3f us blocking, %.3f us pinned (accept %.3f / %.3f)\n",
           b->eager_launch_us, q->eager_launch_us, b->phase[WM_ACCEPT].eager_launch_us,
           q->phase[WM_ACCEPT].eager_launch_us);
    CHECK(fabs(b->eager_launch_us - q->eager_launch_us) <= 0.03 * q->eager_launch_us,
          "eager_launch_us %.3f with the blocking copy, %.3f without", b->eager_launch_us,
          q->eager_launch_us);
    for (int p = 0; p < WM_NPHASE; p++)
        if (q->phase[p].eager_launch_us > 0)
            CHECK(fabs(b->phase[p].eager_launch_us - q->phase[p].eager_launch_us) <=
                  0.05 * q->phase[p].eager_launch_us + 0.1,
                  "phase %s: eager launch %.3f us blocking, %.3f pinned", wm_phase_name[p],
                  b->phase[p].eager_launch_us, q->phase[p].eager_launch_us);
    const struct { int spec, steps, bs; } val[] = {{1, 3, 24}, {1, 4, 20}, {1, 3, 4}, {0, 1, 20}, {0, 1, 5}, {0, 1, 7}};
    for (size_t v = 0; v < sizeof val / sizeof val[0]; v++) {
        double e = host_sim_error(&rb, val[v].spec, val[v].steps, val[v].bs, 0, 1);
        CHECK(fabs(e) <= 0.02, "blocking copy: spec %d steps %d bs %d: %+.2f%%", val[v].spec,
              val[v].steps, val[v].bs, 100 * e);
    }
    fit_result_free(&rb);
    fit_result_free(&rp);
}

/* The gap group of an eager phase whose instances are nearly all bound by their launches:
 * when 2% of accept's instances (every 50th) are not, because the GPU idled 300 us inside
 * them, they alone would be the gap group if the launch-bound ones stayed out (the rule keeps
 * those out only when the others are 10% of the instances or more): the fitted accept gap
 * stays within 2 us + 10% of the fit without the stalls (300 us with the rule off). */
static void fit_gap_group_ignores_a_few_odd_instances(void)
{
    fit_result r0, r1;
    if (fit_host_grid(&r0, 1, 0))
        return;
    gen_accept_stall_every = 50;
    gen_accept_stall_us = 300;
    int rc = fit_host_grid(&r1, 1, 0);
    gen_accept_stall_every = 0;
    gen_accept_stall_us = 0;
    if (rc) {
        fit_result_free(&r0);
        return;
    }
    const wm_phase_model *a0 = &r0.model.phase[WM_ACCEPT], *a1 = &r1.model.phase[WM_ACCEPT];
    const wm_group *g0 = NULL, *g1 = NULL;
    for (int g = 0; g < a0->ngroups; g++)
        if (!strcmp(a0->groups[g].name, "(gpu idle in phase)"))
            g0 = &a0->groups[g];
    for (int g = 0; g < a1->ngroups; g++)
        if (!strcmp(a1->groups[g].name, "(gpu idle in phase)"))
            g1 = &a1->groups[g];
    CHECK(g0 && g1, "accept has a gap group in both fits");
    if (g0 && g1) {
        printf("     accept gap group: %.2f us, %.2f us with 2%% of instances stalled 300 us\n",
               g0->base_us, g1->base_us);
        CHECK(fabs(g1->base_us - g0->base_us) <= 2 + 0.1 * g0->base_us,
              "accept gap %.2f us with the stalls, %.2f us without", g1->base_us, g0->base_us);
    }
    fit_result_free(&r0);
    fit_result_free(&r1);
}

/* Host stalls in an unprofiled (lite) capture are the program's own and a benchmark pays
 * them. A host-bound generator (each eager launch call 14 us: prof_call_us 10 in a lite
 * trace is the program's own time) that pauses 1.5 ms every 700th eager launch (~13% of an
 * eager iteration's time) is fitted with the stalls in its launch rate: the simulator
 * reproduces the generator's mean eager iteration within 3% (spec steps 3 and plain decode
 * at 24 rows, above the largest graph: +1.85%, +0.49%, the stalls drawn over 4000
 * iterations). The robust rate that leaves the stalled instances out (the rule off, as for
 * a CUPTI trace, whose stalls may be the profiler's; FIT_LITE_STALLS=0) predicts them 9-10%
 * fast (-9.35%, -10.27%). Where the GPU bounds a phase: fit_lite_stalls_drain_the_gpu_queue. */
/* The stalling generator at (spec, steps, 24 rows), iters iterations (the last iters - 100
 * measured after 40), each eager launch call prof_us longer, against the simulator of model
 * r over 4000 iterations, its stalls drawn or (no_stalls) spread: (sim - generator) /
 * generator, the two iteration times in *gen_us, *sim_us. */
static double stall_case(const fit_result *r, int spec, int steps, unsigned seed, int iters,
                         double prof_us, int no_stalls, double *gen_us, double *sim_us)
{
    gen_sink *s = malloc(sizeof *s);
    if (!s)
        return NAN;
    gen_cfg c = {spec, steps, 24, 16, SIMTEST_CTX, iters, seed, 0.01, 1, 0, 0, 0, 1, 0, prof_us, 0};
    gen_times(&c, s);
    *gen_us = gen_iter_us(s, 40, iters - 100);
    free(s);
    sim_test_iters = 4000;     /* the stalls are drawn: enough of them */
    sim_test_no_stalls = no_stalls;
    *sim_us = sim_iter_of(&r->model, spec, steps, 24);
    sim_test_iters = 0;
    sim_test_no_stalls = 0;
    return (*sim_us - *gen_us) / *gen_us;
}

static void fit_lite_host_stalls_are_the_programs(void)
{
    fit_result r;
    gen_host_stall_every = 700;
    gen_host_stall_us = 1500;
    host_grid_lite = 1;
    int rc = fit_host_grid_prof(&r, 1, 0, 10.0, 0);
    host_grid_lite = 0;
    if (rc == 0) {
        const struct { int spec, steps; } val[] = {{1, 3}, {0, 1}};
        for (size_t v = 0; v < sizeof val / sizeof val[0]; v++) {
            double truth, sim;
            double e = stall_case(&r, val[v].spec, val[v].steps, 900u + (unsigned)v, 300, 10.0, 0,
                                  &truth, &sim);
            printf("     stalled host, lite traces: spec %d bs 24: sim %.1f us, generator %.1f us "
                   "(%+.2f%%)\n", val[v].spec, sim, truth, 100 * e);
            CHECK(fabs(e) <= 0.03, "stalled host: spec %d steps %d: %+.2f%%", val[v].spec,
                  val[v].steps, 100 * e);
        }
        fit_result_free(&r);
    }
    gen_host_stall_every = 0;
    gen_host_stall_us = 0;
}

/* Host stalls where the GPU bounds the eager phases (docs/simulator.md, "Host stalls"): the
 * generator's host pauses GEN_GPU_STALL_US every 500th eager launch, lite traces without
 * a profiler's cost, so that the eager launches at 24 rows run ahead of their kernels. The
 * stalls' mean spread over every launch hides in the GPU's queue; drawn as stalls they
 * drain it as the generator's do. The fit finds them (verify: 0.00203 a launch of 3000 us,
 * generated 1/500 of 3000 us); the simulator drawing them comes within 10% of the
 * generator (-8.59% spec steps 3, +6.19% plain decode, 24 rows: its stalls are Poisson in
 * number and exponential in length, the generator's periodic and fixed), their mean spread
 * over every launch (--host-stalls 0) 24% and 20% fast. */
#define GEN_GPU_STALL_US 3000.0
static void fit_lite_stalls_drain_the_gpu_queue(void)
{
    fit_result r;
    gen_host_stall_every = 500;
    gen_host_stall_us = GEN_GPU_STALL_US;
    host_grid_lite = 1;
    int rc = fit_host_grid_prof(&r, 1, 0, 0, 0);
    host_grid_lite = 0;
    if (rc == 0) {
        const wm_phase_model *v = &r.model.phase[WM_VERIFY];
        printf("     verify: %.2f us a launch, stalls %.5f a launch of %.0f us\n",
               v->eager_launch_us, v->eager_stall_per_launch, v->eager_stall_us);
        CHECK(v->eager_stall_per_launch > 0 && v->eager_stall_us > 0.5 * GEN_GPU_STALL_US,
              "verify's stalls: %g a launch of %g us", v->eager_stall_per_launch, v->eager_stall_us);
        const struct { int spec, steps; } val[] = {{1, 3}, {0, 1}};
        for (size_t i = 0; i < sizeof val / sizeof val[0]; i++) {
            double truth, sim, even;
            double e = stall_case(&r, val[i].spec, val[i].steps, 900u + (unsigned)i, 1300, 0, 0,
                                  &truth, &sim);
            double e0 = stall_case(&r, val[i].spec, val[i].steps, 900u + (unsigned)i, 1300, 0, 1,
                                   &truth, &even);
            printf("     spec %d bs 24: generator %.1f us, sim %.1f us (%+.2f%%), stalls "
                   "spread %.1f us (%+.2f%%)\n", val[i].spec, truth, sim, 100 * e, even, 100 * e0);
            CHECK(fabs(e) <= 0.10, "stalls drawn: spec %d: %+.2f%%", val[i].spec, 100 * e);
            CHECK(e0 < -0.15, "stalls spread: spec %d: %+.2f%% (the case shows nothing)",
                  val[i].spec, 100 * e0);
        }
        fit_result_free(&r);
    }
    gen_host_stall_every = 0;
    gen_host_stall_us = 0;
}

/* The launch profile (docs/simulator.md, "Eager launches"): the generator's eager target
 * forward at 24 rows launches a kernel every 15 us (a lite capture's host, 4 us calls + 10 us
 * of Python + 1 us between), as slow as its GPU on average, and its tail (lm_head, argmax)
 * costs 8 times the type's: the host reaches the heaviest kernels last, and the GPU idles
 * for launches early and works after the host is done. The end of the phase is then neither
 * the GPU's work after its first launch nor the last launch plus one kernel, which were the
 * simulator's two bounds. With each group's launch profile fitted (where in the launch
 * time its GPU time is launched) the simulator comes within 2% of the generator at 24 rows
 * (-0.20% plain decode, +0.31% spec steps 3); without it (FIT_LAUNCH_PROFILE=0) -8.28% and
 * -2.78% (verify's 96 tokens keep its GPU ahead of its launches longer). */
static void fit_launch_profile_prices_late_heavy_kernels(void)
{
    fit_result r[2];
    gen_tail_scale = 8;
    host_grid_lite = 1;
    int rc0 = fit_host_grid_prof(&r[0], 1, 0, 10.0, 0);
    setenv("FIT_LAUNCH_PROFILE", "0", 1);
    int rc1 = fit_host_grid_prof(&r[1], 1, 0, 10.0, 0);
    unsetenv("FIT_LAUNCH_PROFILE");
    host_grid_lite = 0;
    if (rc0 == 0 && rc1 == 0) {
        /* the tail's GEMM (lm_head; groups by position: t1) */
        const wm_group *lm = find_group(&r[0].model, WM_DECODE, "t1 gemm");
        const wm_group *lm0 = find_group(&r[1].model, WM_DECODE, "t1 gemm");
        CHECK(lm && lm->has_pos, "decode's lm_head has no launch profile");
        if (lm && lm->has_pos) {
            double late = 0;
            for (int b = WM_POS_BINS - 2; b < WM_POS_BINS; b++)
                late += lm->pos[b];
            printf("     decode lm_head: %.3f of its time launched in the last 2 of %d slices\n",
                   late, WM_POS_BINS);
            CHECK(late > 0.9, "lm_head launched late: %.3f", late);
        }
        CHECK(lm0 && !lm0->has_pos, "FIT_LAUNCH_PROFILE=0 kept a profile");
        const struct { int spec, steps; } val[] = {{0, 1}, {1, 3}};
        gen_sink *s = malloc(sizeof *s);
        for (size_t v = 0; s && v < sizeof val / sizeof val[0]; v++) {
            /* the generator's iterations 40-240 against the simulator's 200 after 40 of
             * warmup: the same KV context */
            gen_cfg c = {val[v].spec, val[v].steps, 24, 16, SIMTEST_CTX, 300, 950u + (unsigned)v,
                         0.01, 1, 0, 0, 0, 1, 0, 10.0, 0};
            gen_times(&c, s);
            double truth = gen_iter_us(s, 40, 200);
            double with = sim_iter_of(&r[0].model, val[v].spec, val[v].steps, 24);
            double without = sim_iter_of(&r[1].model, val[v].spec, val[v].steps, 24);
            double e = (with - truth) / truth, e0 = (without - truth) / truth;
            printf("     spec %d bs 24: generator %.1f us, sim %.1f us (%+.2f%%), without the "
                   "profile %.1f us (%+.2f%%)\n", val[v].spec, truth, with, 100 * e, without,
                   100 * e0);
            CHECK(fabs(e) <= 0.02, "launch profile: spec %d: %+.2f%%", val[v].spec, 100 * e);
            CHECK(fabs(e) < fabs(e0), "launch profile: spec %d: %+.2f%%, without %+.2f%%",
                  val[v].spec, 100 * e, 100 * e0);
            if (!val[v].spec)
                CHECK(e0 < -0.06, "without the profile: %+.2f%% (the case shows nothing)", 100 * e0);
        }
        free(s);
        fit_result_free(&r[0]);
        fit_result_free(&r[1]);
    }
    gen_tail_scale = 0;
}

/* fit_host_grid (blocking reads) twice: r[0] with every rule, r[1] with the rule the
 * environment variable rule_env turns off set to 0. 0 when both fitted. */
static int fit_host_grid_rule_off(fit_result r[2], const char *rule_env)
{
    int rc0 = fit_host_grid(&r[0], 1, 0);
    setenv(rule_env, "0", 1);
    int rc1 = fit_host_grid(&r[1], 1, 0);
    unsetenv(rule_env);
    if (rc0 == 0 && rc1 != 0)
        fit_result_free(&r[0]);
    if (rc1 == 0 && rc0 != 0)
        fit_result_free(&r[1]);
    return rc0 == 0 && rc1 == 0 ? 0 : -1;
}

/* The generator's iteration time of spec steps at bs rows (graphs up to 16 rows, blocking
 * reads, the given seed) and the simulator's from models a and b: us[0..2] (generator, a, b),
 * their relative errors into e[0] (a) and e[1] (b). */
static void gen_against_two(const wm_model *a, const wm_model *b, int steps, int bs, unsigned seed,
                            gen_sink *s, double us[3], double e[2])
{
    gen_cfg c = {1, steps, bs, 16, SIMTEST_CTX, 300, seed, 0.01, 1, 0, 0, 0, 1, 0, 0, 0};
    gen_times(&c, s);
    us[0] = gen_iter_us(s, 40, 200);
    us[1] = sim_iter_of(a, 1, steps, bs);
    us[2] = sim_iter_of(b, 1, steps, bs);
    e[0] = (us[1] - us[0]) / us[0];
    e[1] = (us[2] - us[0]) / us[0];
}

/* The gap group of graph and eager instances (docs/fit.md, "Kernel groups"): eager kernels
 * queued behind GPU work start 6 us after their predecessor (graph nodes 0.5 us), and the
 * calibration's graph replays stop at 8 rows while its eager instances are at 24: fitted
 * together against the tokens, the eager cells' idle bent the gap group up between them,
 * and spec steps 3 at 16 rows (a graph replay the calibration did not hold) came out slow.
 * Fitted on the graph replays, with the eager excess per kernel a term of its own
 * (eager_gap_us 5.26 us; the default), the held-out graph shape comes within 3% (+2.56%: 16
 * rows extrapolated from 8) and the eager one within 0.1%; fitted together (FIT_GAP_GRAPH=0)
 * the graph shape comes out 27% slow. */
static void fit_gap_group_keeps_graph_and_eager_apart(void)
{
    fit_result r[2];
    gen_eager_gap_us = 6;
    host_grid_no16 = 1;
    int rc = fit_host_grid_rule_off(r, "FIT_GAP_GRAPH");   /* off: the joint fit (docs/fit.md section 2) */
    host_grid_no16 = 0;
    if (rc == 0) {
        printf("     verify eager_gap_us %.3f (rule off: %.3f)\n",
               r[0].model.phase[WM_VERIFY].eager_gap_us, r[1].model.phase[WM_VERIFY].eager_gap_us);
        CHECK(r[0].model.phase[WM_VERIFY].eager_gap_us > 2 &&
              r[1].model.phase[WM_VERIFY].eager_gap_us == 0, "eager_gap_us %g / %g",
              r[0].model.phase[WM_VERIFY].eager_gap_us, r[1].model.phase[WM_VERIFY].eager_gap_us);
        const int bs[] = {16, 24};
        gen_sink *s = malloc(sizeof *s);
        for (int i = 0; s && i < 2; i++) {
            double us[3], ee[2];
            gen_against_two(&r[0].model, &r[1].model, 3, bs[i], 970u + (unsigned)i, s, us, ee);
            double e = ee[0], e0 = ee[1];
            printf("     spec 3 at %d rows (%s): generator %.1f us, sim %.1f us (%+.2f%%), gap group "
                   "of both %.1f us (%+.2f%%)\n", bs[i], bs[i] == 16 ? "graph, held out" : "eager",
                   us[0], us[1], 100 * e, us[2], 100 * e0);
            CHECK(fabs(e) <= 0.03, "%d rows: %+.2f%%", bs[i], 100 * e);
            if (bs[i] == 16)
                CHECK(e0 > 0.03, "the case shows nothing: %+.2f%% without the rule", 100 * e0);
        }
        free(s);
        fit_result_free(&r[0]);
        fit_result_free(&r[1]);
    }
    gen_eager_gap_us = 0;
}

/* The eager term takes the whole model's residual at the eager cells, not the idle alone
 * (docs/fit.md section 2). Every attention kernel (a KV term) costs 5 us more above 20 rows
 * (a split-KV kernel's second wave), so at the calibration's eager 24 rows only; its graphs
 * hold as many verify tokens (96: steps 5 at 16 rows) as its eager steps 3 at 24 rows, so the
 * kernel groups cannot bend to the eager cells and price them low (specbench llama8b's
 * attention above its largest graph, the other way). With the model's residual the eager
 * calibration configuration comes within 0.5% and steps 5 at 24 rows (held out) within 1%;
 * from the idle alone (FIT_EAGER_TOTAL=0) -1.96% and -1.22%. Farther out (steps 3 at 32 rows)
 * the groups' partial bend and the term add up: +2.37%, idle alone +0.38% (both checked
 * within 3%). */
static void fit_eager_term_takes_the_models_residual(void)
{
    fit_result r[2];
    gen_kv_wave_rows = 20;
    gen_kv_wave_us = 5;
    host_grid_twin = 1;
    if (fit_host_grid_rule_off(r, "FIT_EAGER_TOTAL") == 0) {
        printf("     verify eager_gap_us %.3f (idle alone: %.3f)\n",
               r[0].model.phase[WM_VERIFY].eager_gap_us, r[1].model.phase[WM_VERIFY].eager_gap_us);
        const struct { int steps, bs; double tol; const char *what; } val[] = {
            {3, 24, 0.005, "eager, calibrated"}, {5, 24, 0.01, "eager, held out"},
            {3, 32, 0.03, "eager, held out"}};
        gen_sink *s = malloc(sizeof *s);
        for (int i = 0; s && i < 3; i++) {
            double us[3], ee[2];
            gen_against_two(&r[0].model, &r[1].model, val[i].steps, val[i].bs, 990u + (unsigned)i, s, us, ee);
            double e = ee[0], e0 = ee[1];
            printf("     spec %d at %d rows (%s): generator %.1f us, sim %.1f us (%+.2f%%), idle "
                   "alone %.1f us (%+.2f%%)\n", val[i].steps, val[i].bs, val[i].what, us[0], us[1],
                   100 * e, us[2], 100 * e0);
            CHECK(fabs(e) <= val[i].tol, "spec %d at %d rows: %+.2f%%", val[i].steps, val[i].bs,
                  100 * e);
            if (val[i].bs == 24)
                CHECK(fabs(e0) > 0.01 && fabs(e) < fabs(e0), "spec %d at 24 rows: %+.2f%%, idle "
                      "alone %+.2f%% (the case shows nothing)", val[i].steps, 100 * e, 100 * e0);
            else
                CHECK(fabs(e0) <= val[i].tol, "spec %d at %d rows, idle alone: %+.2f%%",
                      val[i].steps, val[i].bs, 100 * e0);
        }
        free(s);
        fit_result_free(&r[0]);
        fit_result_free(&r[1]);
    }
    gen_kv_wave_rows = 0;
    gen_kv_wave_us = 0;
    host_grid_twin = 0;
}

/* A captured graph size its groups' forms miss (docs/fit.md "Captured graph sizes"): every
 * attention kernel of a replay of the 16-row graph costs GEN_SIZE_SCALE times its form (the
 * other sizes do not). The calibration holds that graph once (steps 3 at 16 rows); held out,
 * steps 3 at 12 rows (padded to 16, fewer real rows) and steps 2 at 16. The fit finds verify's
 * factor 1.099 at 16 rows, the others within 1.7% of 1; with it the held-out configurations
 * come within 3% (-1.7% and -2.7%), without it (FIT_GRAPH_SIZES=0) they are 8.9% and 10.1%
 * fast. What is left is the factors' centre: the cells' median residual (+1.1% here: the 16-row
 * cell bent the groups' forms) stays the phase's level, as a CUPTI trace's own cost in every
 * cell must; so steps 3 at 8 rows moves by it, -1.1% (checked within 1.5%). */
#ifndef GEN_SIZE_SCALE
#define GEN_SIZE_SCALE 3.0
#endif
static void fit_prices_a_captured_graph_size_of_its_own(void)
{
    fit_result r[2];
    gen_size_rows = 16;
    gen_size_scale = GEN_SIZE_SCALE;
    gen_kv_wave_rows = 0;
    if (fit_host_grid_rule_off(r, "FIT_GRAPH_SIZES") == 0) {
        const wm_phase_model *v = &r[0].model.phase[WM_VERIFY];
        double f16 = wm_phase_graph_factor(v, 16), fmax_other = 0;
        for (int i = 0; i < v->n_graph_sizes; i++)
            if (v->graph_size_rows[i] != 16)
                fmax_other = fmax(fmax_other, fabs(v->graph_size_factor[i] - 1));
        printf("     verify: %d graph sizes, factor %.4f at 16 rows, others within %.2f%% of 1 "
               "(rule off: %d sizes)\n", v->n_graph_sizes, f16, 100 * fmax_other,
               r[1].model.phase[WM_VERIFY].n_graph_sizes);
        CHECK(f16 > 1.05 && fmax_other < 0.025 && r[1].model.phase[WM_VERIFY].n_graph_sizes == 0,
              "factor %.4f at 16, others %.4f, rule off %d sizes", f16, fmax_other,
              r[1].model.phase[WM_VERIFY].n_graph_sizes);
        const struct { int steps, bs; int held; } val[] = {{3, 12, 1}, {2, 16, 1}, {3, 8, 0}};
        gen_sink *s = malloc(sizeof *s);
        for (int i = 0; s && i < 3; i++) {
            double us[3], ee[2];
            gen_against_two(&r[0].model, &r[1].model, val[i].steps, val[i].bs, 1010u + (unsigned)i, s, us, ee);
            double e = ee[0], e0 = ee[1];
            printf("     spec %d at %d rows (graph %s): generator %.1f us, sim %.1f us (%+.2f%%), rule "
                   "off %.1f us (%+.2f%%)\n", val[i].steps, val[i].bs, val[i].held ? "16, held out" : "8",
                   us[0], us[1], 100 * e, us[2], 100 * e0);
            if (val[i].held)
                CHECK(fabs(e) <= 0.03 && e0 < -0.06, "spec %d at %d rows: %+.2f%%, rule off %+.2f%%",
                      val[i].steps, val[i].bs, 100 * e, 100 * e0);
            else
                CHECK(fabs(e - e0) < 0.015, "8 rows moved: %+.2f%% against %+.2f%%", 100 * e, 100 * e0);
        }
        free(s);
        fit_result_free(&r[0]);
        fit_result_free(&r[1]);
    }
    gen_size_rows = 0;
    gen_size_scale = 0;
}

/* A group's residual for the intervals is out of sample: with 8 cells or more, the rms of
 * each cell's relative error predicted by the fit without it, not the in-sample rms. Checked
 * against the brute force, fit_group refitted without each cell (within 25%: a refit also
 * chooses its columns and knee again, on 9 cells), on a cost with a step the fitted line
 * cannot follow (+20% from 96 tokens on, 10 cells), which is 1.5x or more as uncertain out
 * of sample as in it. */
static void fit_group_residual_is_out_of_sample(void)
{
    const double tok[] = {1, 2, 4, 8, 16, 32, 64, 96, 128, 192};
    enum { NC = 10, PER = 6 };
    fit_point p[NC * PER], q[NC * PER];
    size_t n = 0;
    for (int i = 0; i < NC; i++)
        for (int j = 0; j < PER; j++)
            p[n++] = (fit_point){.tokens = tok[i], .kv_tokens = 0, .trace = 0,
                                 .us = (20 + 0.5 * tok[i]) * (tok[i] >= 96 ? 1.20 : 1.0) *
                                       (1 + 0.001 * (j - 2.5))};
    const char *names[] = {"a.json"};
    fit_group_ctx c = {.trace_names = names, .ntraces = 1, .phase = "verify", .group = "gemm"};
    static wm_model zm;   /* dense: no experts */
    wm_init(&zm);
    wm_group g;
    fit_group_stats st;
    char err[512];
    CHECK(fit_group(p, n, &c, &g, &st, err, sizeof err) == 0, "%s", err);
    double s2 = 0;
    for (int out = 0; out < NC; out++) {
        size_t m = 0;
        for (size_t i = 0; i < n; i++)
            if (p[i].tokens != tok[out])
                q[m++] = p[i];
        wm_group h;
        CHECK(fit_group(q, m, &c, &h, NULL, err, sizeof err) == 0, "%s", err);
        double mean = 0;
        for (int j = 0; j < PER; j++)
            mean += p[out * PER + j].us / PER;
        double r = fmin(fabs(wm_group_us(&zm, &h, tok[out], 0) - mean) / mean, 1.0);
        s2 += r * r;
    }
    double brute = sqrt(s2 / NC);
    double insample = st.rms_rel * sqrt((double)st.ncells / (st.ncells - st.ncols));
    printf("     residual: out of sample %.4f (brute force %.4f), in sample %.4f\n", st.loo_rel,
           brute, insample);
    CHECK_NEAR(st.loo_rel, brute, 0, 0.25);
    CHECK(st.loo_rel > 1.5 * insample, "out of sample %.4f, in sample %.4f", st.loo_rel, insample);
    /* and it is the residual the model's group carries */
    double rf = fit_group_resid_frac(&st);
    CHECK_NEAR(rf, brute, 0, 0.25);
    CHECK(rf > 1.5 * insample, "resid_frac %.4f, in sample %.4f", rf, insample);
    free(st.cell);
}

/* A group's left-out errors split into a part proportional to its cost and a part that is not
 * (fit_resid_two_part; docs/fit.md "Residuals"): exact on errors made of the two parts, the
 * rms where they cannot be told apart. Then on a fitted group whose cells sit 6 us off its
 * line one way or the other (a misfit that does not grow with the cost: at 1 token 29% of
 * it, at 2048 tokens 0.3%) and 1% off in proportion: the split's error at the 3 largest and
 * the 3 smallest cells within a factor 2 of the brute force's there (each cell predicted by
 * fit_group without it), where one relative residual over all cells, the rms, overstates the
 * large cells' error 3x or more. Fails without the split (resid_abs_us 0, resid_frac the
 * rms). */
static void fit_group_residual_splits_by_cost(void)
{
    double c[6] = {10, 30, 100, 300, 1000, 3000}, rel[6], f, a;
    for (int i = 0; i < 6; i++)
        rel[i] = sqrt(0.02 * 0.02 + 8.0 * 8.0 / (c[i] * c[i]));
    fit_resid_two_part(rel, c, 6, &f, &a);
    CHECK_NEAR(f, 0.02, 1e-9, 0);
    CHECK_NEAR(a, 8, 1e-6, 0);
    double same[3] = {50, 50, 50}, r3[3] = {0.1, 0.2, 0.3};
    fit_resid_two_part(r3, same, 3, &f, &a);          /* one cost: the rms */
    CHECK_NEAR(f, sqrt((0.01 + 0.04 + 0.09) / 3), 1e-12, 0);
    CHECK(a == 0, "one cost: absolute part %g", a);
    double up[3] = {0.05, 0.10, 0.20};                  /* larger where the cost is: relative */
    fit_resid_two_part(up, c, 3, &f, &a);
    CHECK_NEAR(f, sqrt((0.0025 + 0.01 + 0.04) / 3), 1e-12, 0);
    CHECK(a == 0, "errors growing with the cost: absolute part %g", a);
    for (int i = 0; i < 6; i++)                          /* absolute alone: through the origin */
        rel[i] = 5.0 / c[i];
    fit_resid_two_part(rel, c, 6, &f, &a);
    CHECK(f < 1e-6, "an absolute error alone: relative part %g", f);
    CHECK_NEAR(a, 5, 1e-9, 0);

    enum { NC = 12, PER = 4 };
    fit_point p[NC * PER], q[NC * PER];
    double tok[NC], mean[NC];
    size_t n = 0;
    for (int i = 0; i < NC; i++) {
        tok[i] = (double)(1 << i);                      /* 1 .. 2048 tokens */
        double line = 20 + tok[i], off = (i % 2 ? 6.0 : -6.0), prop = ((i / 2) % 2 ? 0.01 : -0.01);
        mean[i] = line * (1 + prop) + off;
        for (int j = 0; j < PER; j++)
            p[n++] = (fit_point){.tokens = tok[i], .kv_tokens = 0, .trace = 0,
                                 .us = mean[i] * (1 + 0.001 * (j - 1.5))};
    }
    const char *names[] = {"a.json"};
    fit_group_ctx ctx = {.trace_names = names, .ntraces = 1, .phase = "verify", .group = "norm"};
    static wm_model zm;
    wm_init(&zm);
    wm_group g;
    fit_group_stats st;
    char err[512];
    CHECK(fit_group(p, n, &ctx, &g, &st, err, sizeof err) == 0, "%s", err);
    double loo[NC];
    for (int out = 0; out < NC; out++) {
        size_t m = 0;
        for (size_t i = 0; i < n; i++)
            if (p[i].tokens != tok[out])
                q[m++] = p[i];
        wm_group h;
        CHECK(fit_group(q, m, &ctx, &h, NULL, err, sizeof err) == 0, "%s", err);
        loo[out] = fmin(fabs(wm_group_us(&zm, &h, tok[out], 0) - mean[out]) / mean[out], 1.0);
    }
    double frac, abs_us;
    fit_group_resid(&st, &frac, &abs_us);
    double bl = 0, bs = 0, ml = 0, ms = 0;
    for (int k = 0; k < 3; k++) {
        int lo = k, hi = NC - 1 - k;
        bs += loo[lo] * loo[lo] / 3;
        bl += loo[hi] * loo[hi] / 3;
        ms += (frac * frac + abs_us * abs_us / (mean[lo] * mean[lo])) / 3;
        ml += (frac * frac + abs_us * abs_us / (mean[hi] * mean[hi])) / 3;
    }
    printf("     split: %.2f%% + %.2f us (rms %.2f%%); at the 3 smallest cells %.2f%% (brute force "
           "%.2f%%), at the 3 largest %.2f%% (brute force %.2f%%)\n", 100 * frac, abs_us,
           100 * st.loo_rel, 100 * sqrt(ms), 100 * sqrt(bs), 100 * sqrt(ml), 100 * sqrt(bl));
    CHECK(sqrt(ml) < 2 * sqrt(bl) && sqrt(ml) > 0.5 * sqrt(bl), "largest cells: %.4f against %.4f",
          sqrt(ml), sqrt(bl));
    CHECK(sqrt(ms) < 2 * sqrt(bs) && sqrt(ms) > 0.5 * sqrt(bs), "smallest cells: %.4f against %.4f",
          sqrt(ms), sqrt(bs));
    CHECK(st.loo_rel > 3 * sqrt(bl), "the rms (%.4f) does not overstate the large cells' error "
          "(%.4f)", st.loo_rel, sqrt(bl));
    free(st.cell);
}

/* Host work that grows with the running requests (the generator's scheduler: 4 us per
 * request before the iteration's first phase, on top of its fixed gaps) is recovered (within 15%: three request counts) as the
 * gap's slope of the first phases (draft, decode) and priced by the simulator: batches the
 * calibration never ran (5, 7, 20, 12) within 2%. */
static void fit_host_gap_grows_with_requests(void)
{
    const double per_row = 4.0;
    fit_result r;
    if (fit_host_grid(&r, 1, per_row))
        return;
    const wm_model *m = &r.model;
    printf("     host gap per request: draft %.3f us (gap %.2f), decode %.3f us (gap %.2f), "
           "verify %.3f us\n", m->phase[WM_DRAFT].host_gap_per_row_us, m->phase[WM_DRAFT].host_gap_us,
           m->phase[WM_DECODE].host_gap_per_row_us, m->phase[WM_DECODE].host_gap_us,
           m->phase[WM_VERIFY].host_gap_per_row_us);
    CHECK_NEAR(m->phase[WM_DRAFT].host_gap_per_row_us, per_row, 0, 0.15);
    CHECK_NEAR(m->phase[WM_DECODE].host_gap_per_row_us, per_row, 0, 0.15);
    CHECK(m->phase[WM_VERIFY].host_gap_per_row_us < 0.1 * per_row, "verify's gap took %.3f us "
          "per request", m->phase[WM_VERIFY].host_gap_per_row_us);
    const struct { int spec, steps, bs; } val[] = {{0, 1, 5}, {0, 1, 7}, {0, 1, 20}, {1, 3, 20}, {1, 2, 12}};
    for (size_t v = 0; v < sizeof val / sizeof val[0]; v++) {
        double e = host_sim_error(&r, val[v].spec, val[v].steps, val[v].bs, per_row, 1);
        CHECK(fabs(e) <= 0.02, "per-request host work: spec %d steps %d bs %d: %+.2f%%",
              val[v].spec, val[v].steps, val[v].bs, 100 * e);
    }
    fit_result_free(&r);
}

/* A windowed capture of trace t (traces/FORMAT.md): nw windows of a third of each nw-th of
 * its span; GPU records and API calls that start inside a window are kept, NVTX ranges
 * that end inside one (as libspecprof writes them); with_events: the window events too. */
static void window_copy(fit_trace *w, const fit_trace *t, int nw, int with_events)
{
    fit_trace_init(w, "windowed");
    w->has_header = t->has_header;
    w->hdr = t->hdr;
    int64_t t0 = INT64_MAX, t1 = INT64_MIN;
    for (size_t i = 0; i < t->nkern; i++) {
        if (t->kern[i].start_ns < t0) t0 = t->kern[i].start_ns;
        if (t->kern[i].end_ns > t1) t1 = t->kern[i].end_ns;
    }
    int64_t step = (t1 - t0) / nw;
    ptrace_window win[64];
    for (int k = 0; k < nw && k < 64; k++) {
        win[k].start_ns = t0 + k * step + step / 3;
        win[k].end_ns = win[k].start_ns + step / 3;
        snprintf(win[k].reason, sizeof win[k].reason, "time");
        if (with_events)
            fit_trace_add_window(w, &win[k]);
    }
#define IN_WIN(ts) ({ int in_ = 0; for (int k_ = 0; k_ < nw; k_++) in_ |= (ts) >= win[k_].start_ns && (ts) <= win[k_].end_ns; in_; })
    /* GPU work is recorded when its launch call was inside a window (CUPTI records what it
     * saw launched, also when it runs after the window closed) */
    uint32_t maxc = 0;
    for (size_t i = 0; i < t->napi; i++)
        if (t->api[i].corr > maxc) maxc = t->api[i].corr;
    unsigned char *kept = calloc((size_t)maxc + 1, 1);
    for (size_t i = 0; i < t->napi; i++)
        if (IN_WIN(t->api[i].start_ns)) {
            fit_trace_add_api(w, &t->api[i]);
            if (kept) kept[t->api[i].corr] = 1;
        }
#define LAUNCHED_IN(c, ts) ((c) && (c) <= maxc && kept ? kept[c] : IN_WIN(ts))
    for (size_t i = 0; i < t->nkern; i++)
        if (LAUNCHED_IN(t->kern[i].corr, t->kern[i].start_ns))
            fit_trace_add_kernel(w, &t->kern[i]);
    for (size_t i = 0; i < t->nmem; i++)
        if (LAUNCHED_IN(t->mem[i].corr, t->mem[i].start_ns))
            fit_trace_add_mem(w, &t->mem[i]);
#undef LAUNCHED_IN
    free(kept);
    for (size_t i = 0; i < t->nrng; i++)
        if (IN_WIN(t->rng[i].end_ns))
            fit_trace_add_range(w, &t->rng[i]);
#undef IN_WIN
}

/* The fit of a windowed capture (a third of the time recorded, in 6 windows) measures the
 * phases' host gaps and costs of the whole capture: instances that straddle a window's edge
 * are left out and a host gap is measured only after a predecessor in the same window.
 * Without the window events (the records alone) the time between windows would count as
 * host gap. Tolerance 5% on gaps, 1% on the cells' measured means and on the fit of the
 * phases with 3 cells (the same instances' noise). */
static void fit_windowed_capture_matches_whole_one(void)
{
    const struct { int spec, steps, bs; } cal[] = { {0, 1, 2}, {0, 1, 8}, {0, 1, 24}, {1, 3, 4}, {1, 3, 16} };
    enum { NC = sizeof cal / sizeof cal[0] };
    fit_trace full[NC], win[NC], bare[NC];
    gen_sink *s = malloc(sizeof *s);
    for (int i = 0; i < NC; i++) {
        gen_cfg c = {cal[i].spec, cal[i].steps, cal[i].bs, 16, SIMTEST_CTX, 180, 70u + (unsigned)i, 0.01, 1, 0, 0, 0, 0, 0, 0, 0};
        char label[32];
        snprintf(label, sizeof label, "full-%d", i);
        gen_trace(&full[i], label, &c, s);
        window_copy(&win[i], &full[i], 6, 1);
        window_copy(&bare[i], &full[i], 6, 0);
    }
    free(s);
    fit_opts o = {.moe_experts = GEN_E, .moe_topk = GEN_K, .name = "synthetic"};
    fit_result rf, rw, rb;
    char err[1024];
    int ok = fit_run(full, NC, &o, &rf, err, sizeof err) == 0;
    CHECK(ok, "whole: %s", err);
    ok = ok && fit_run(win, NC, &o, &rw, err, sizeof err) == 0;
    CHECK(ok, "windowed: %s", err);
    int okb = ok && fit_run(bare, NC, &o, &rb, err, sizeof err) == 0;
    if (ok) {
        int gap_off = 0;
        for (int p = 0; p < WM_NPHASE; p++) {
            const wm_phase_model *f = &rf.model.phase[p], *w = &rw.model.phase[p];
            if (!f->present)
                continue;
            CHECK(w->present, "phase %s missing from the windowed fit", wm_phase_name[p]);
            double tol = 0.05 * f->host_gap_us + 0.2;
            CHECK(fabs(w->host_gap_us - f->host_gap_us) <= tol, "phase %s: host gap %.3f us windowed, %.3f whole",
                  wm_phase_name[p], w->host_gap_us, f->host_gap_us);
            if (okb && rb.model.phase[p].present && rb.model.phase[p].host_gap_us > f->host_gap_us + 10 * tol)
                gap_off++;
            for (int c = 0; c < rf.phase[p].ncells; c++)
                for (int d = 0; d < rw.phase[p].ncells; d++) {
                    const fit_cell *a = &rf.phase[p].total[c], *b = &rw.phase[p].total[d];
                    if (a->trace != b->trace || a->tokens != b->tokens)
                        continue;
                    if (getenv("FIT_TEST_VERBOSE"))
                        printf("     %-7s trace %d tokens %4g: whole kv %.0f %.2f us (fit %.2f), windowed kv %.0f %.2f (fit %.2f)\n",
                               wm_phase_name[p], a->trace, a->tokens, a->kv_tokens, a->us_mean, a->fit_us, b->kv_tokens,
                               b->us_mean, b->fit_us);
                    /* what the fit measures per cell (its fit of 2 spec cells is not the point) */
                    CHECK(fabs(b->us_mean - a->us_mean) <= 0.01 * a->us_mean && fabs(b->kv_tokens - a->kv_tokens) <=
                              0.02 * a->kv_tokens, "phase %s trace %d at %g tokens: %.2f us at kv %.0f windowed, %.2f at %.0f whole",
                          wm_phase_name[p], a->trace, a->tokens, b->us_mean, b->kv_tokens, a->us_mean, a->kv_tokens);
                    if (p == WM_DECODE || p == WM_SAMPLE)   /* 3 cells: a determined fit, the same one */
                        CHECK(fabs(b->fit_us - a->fit_us) <= 0.01 * a->fit_us, "phase %s trace %d: fit %.2f us windowed, %.2f whole",
                              wm_phase_name[p], a->trace, b->fit_us, a->fit_us);
                }
        }
        /* the records without their windows: some phase's host gap takes the time between windows */
        CHECK(!okb || gap_off > 0, "without window events no host gap moved: the window rule is not what is tested");
        if (okb)
            fit_result_free(&rb);
        fit_result_free(&rw);
        fit_result_free(&rf);
    }
    for (int i = 0; i < NC; i++) {
        fit_trace_free(&full[i]);
        fit_trace_free(&win[i]);
        fit_trace_free(&bare[i]);
    }
}

/* ---- synthetic data for models/validate.sh ------------------------------------------------- */

static int write_synth(const char *dir)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/calib", dir);
    mkdir(dir, 0755);
    mkdir(path, 0755);
    gen_sink *s = malloc(sizeof *s);
    /* calibration subset: preset "synth" (MoE 64/4) */
    const struct { int spec, steps, bs; } cal[] = {
        {1, 3, 1}, {1, 3, 16}, {1, 3, 24}, {1, 5, 4}, {0, 1, 2}, {0, 1, 24},
    };
    snprintf(path, sizeof path, "%s/calib/manifest.csv", dir);
    FILE *man = fopen(path, "w");
    fprintf(man, "file,preset,mode,steps,topk,concurrency,experts,moe_topk\n");
    for (size_t i = 0; i < sizeof cal / sizeof cal[0]; i++) {
        gen_cfg c = {cal[i].spec, cal[i].steps, cal[i].bs, 16, 1000, 150, 70u + (unsigned)i, 0.01, 1, 0, 0, 0, 0, 0, 0, 0};
        snprintf(path, sizeof path, "%s/calib/synth_%s_s%d_c%d.json", dir,
                 c.spec ? "spec" : "baseline", c.steps, c.bs);
        if (gen_file(path, &c, s))
            return 1;
        if (i == 0) {   /* one compressed, as committed traces may be */
            char cmd[2200];
            snprintf(cmd, sizeof cmd, "gzip -f '%s'", path);
            if (system(cmd))
                return 1;
        }
        fprintf(man, "synth_%s_s%d_c%d.json%s,synth,%s,%d,1,%d,%d,%d\n", c.spec ? "spec" : "baseline",
                c.steps, c.bs, i == 0 ? ".gz" : "", c.spec ? "spec" : "baseline",
                c.spec ? c.steps : 0, c.bs, GEN_E, GEN_K);
    }
    fclose(man);
    /* measured grid: tok/s of the generator (alpha 0: one token per row per iteration, so
     * tokens per iteration = bs) with three repeats of different seeds */
    snprintf(path, sizeof path, "%s/measured.csv", dir);
    FILE *f = fopen(path, "w");
    fprintf(f, "preset,mode,steps,topk,draft_tokens,alpha,concurrency,rep,tok_s,iter_us,"
               "accept_len,cuda_graph_bs,output_len,prompt_len\n");
    for (int mode = 0; mode < 2; mode++) {
        const int steps_list[] = {1, 2, 3, 4, 5};
        const int bs_list[] = {1, 3, 4, 12, 16, 24};
        for (int si = 0; si < (mode ? 5 : 1); si++)
            for (int bi = 0; bi < 6; bi++)
                for (int rep = 0; rep < 3; rep++) {
                    int steps = mode ? steps_list[si] : 0;
                    gen_cfg c = {mode, steps ? steps : 1, bs_list[bi], 16, 1000, 200,
                                 1000u + (unsigned)(rep + 7 * bi + 50 * si), 0.01, 1, 0, 0, 0, 0, 0, 0, 0};
                    gen_times(&c, s);
                    double it = gen_iter_us(s, 40, 150);
                    fprintf(f, "synth,%s,%d,%d,%d,0.000,%d,%d,%.3f,%.3f,1,1;2;4;8;16,300:300,1000:1000\n",
                            mode ? "spec" : "baseline", steps, mode ? 1 : 0, mode ? steps + 1 : 0,
                            c.bs, rep, c.bs / it * 1e6, it);
                }
    }
    fclose(f);
    free(s);
    printf("wrote %s/calib/*.json, %s/calib/manifest.csv and %s/measured.csv\n", dir, dir, dir);
    return 0;
}

static const char *self_path;

/* models/validate.sh end to end on synthetic data: traces (one gzip'd), manifest, measured
 * grid; `specsim fit` served by this program (--fitcmd), `specsim run` by bin/specsim. The
 * generator's grid must be predicted within the issue's targets, and missing inputs must
 * stop the script with exit status 1. */
static void validate_sh_runs_on_synthetic_data(void)
{
    char dir[] = "/tmp/specsim-test-validate-XXXXXX", self[4096], sim[4096], cmd[8192];
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    CHECK(realpath(self_path, self) != NULL, "realpath %s", self_path);
    if (!realpath("bin/specsim", sim)) {
        CHECK(0, "bin/specsim not built (run from the repository root after make)");
        return;
    }
    FILE *keep = stdout;
    stdout = fopen("/dev/null", "w");
    int rc = write_synth(dir);
    fclose(stdout);
    stdout = keep;
    CHECK(rc == 0, "write_synth");
    snprintf(cmd, sizeof cmd, "%s/specsim", dir);
    FILE *w = fopen(cmd, "w");
    fprintf(w, "#!/bin/sh\nif [ \"$1\" = fit ]; then shift; exec '%s' --fitcmd \"$@\"; fi\n"
               "exec '%s' \"$@\"\n", self, sim);
    fclose(w);
    chmod(cmd, 0755);
    /* the generator's timeline is not the simulator's (its host loop differs): a systematic
     * difference no fitted residual sees, so its measurements are not a test of the 80%
     * intervals (tests/test_sim_interval.c is): the coverage target is off here */
    snprintf(cmd, sizeof cmd, "VALIDATE_CALIB=%s/calib VALIDATE_MEASURED=%s/measured.csv "
             "VALIDATE_OUT=%s/validation.txt VALIDATE_WORK=%s/work VALIDATE_COVERAGE=0:100 "
             "sh models/validate.sh %s/specsim > %s/log 2>&1", dir, dir, dir, dir, dir, dir);
    rc = system(cmd);
    CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 0, "validate.sh exit %d (see %s/log)", WEXITSTATUS(rc), dir);
    snprintf(cmd, sizeof cmd, "%s/validation.txt", dir);
    FILE *f = fopen(cmd, "r");
    int rows = 0, calib = 0, met = 0;
    char line[512];
    int first = 1, cov = 0, kinds = 0;   /* the first table ends at its per-preset summary */
    while (f && fgets(line, sizeof line, f)) {
        first &= strncmp(line, "# per preset", 12) != 0;
        rows += first && strncmp(line, "  synth ", 8) == 0 && (strstr(line, " yes") || strstr(line, " no"));
        calib += first && strncmp(line, "  synth ", 8) == 0 && strstr(line, " yes\n") != NULL;
        met += strstr(line, " met") != NULL;
        /* the coverage row, then the held-out runs by kind (spec/baseline, graph/eager) */
        cov += strncmp(line, "  specbench  synth ", 19) == 0 && strstr(line, " met") != NULL;
        kinds += strncmp(line, "  specbench  synth ", 19) == 0 &&
                 (strstr(line, " spec graph-") || strstr(line, " spec eager") ||
                  strstr(line, " baseline graph-") || strstr(line, " baseline eager"));
    }
    if (f)
        fclose(f);
    /* 30 speculative + 6 baseline configurations; 5 of them calibrated (the baseline at 2 is not in the grid) */
    CHECK(rows == 36 && calib == 5 && met == 2 && cov == 1 && kinds >= 2, "table: %d rows, %d "
          "calib, %d met, %d coverage rows, %d rows by kind", rows, calib, met, cov, kinds);
    snprintf(cmd, sizeof cmd, "VALIDATE_CALIB=%s/calib VALIDATE_MEASURED=%s/none.csv "
             "VALIDATE_WORK=%s/work2 sh models/validate.sh %s/specsim > %s/log2 2>&1; s=$?; "
             "grep -q 'missing' %s/log2 && exit $s; exit 99", dir, dir, dir, dir, dir, dir);
    rc = system(cmd);
    CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 1, "missing measured.csv: exit %d", WEXITSTATUS(rc));
    if (check_cur_failed == 0) {
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        CHECK(system(cmd) == 0, "cleanup");
    }
}

int main(int argc, char **argv)
{
    self_path = argv[0];
    if (argc == 3 && strcmp(argv[1], "--write-synth") == 0)
        return write_synth(argv[2]);
    if (argc >= 2 && strcmp(argv[1], "--fitcmd") == 0)
        return fitcmd_main(argc - 1, argv + 1);
    RUN(fit_group_recovers_known_coefficients);
    RUN(fit_group_recovers_attention_tiles);
    RUN(fit_group_two_q_has_no_tiles);
    RUN(fit_group_few_cells_kv_from_cell_means);
    RUN(fit_group_tiles_follow_kernel_variants);
    RUN(fit_run_prices_attention_tiles_per_kernel_variant);
    RUN(fit_group_keeps_coefficients_nonnegative);
    RUN(fit_group_refuses_bad_values_with_names);
    RUN(fit_run_recovers_groups_from_kernel_records);
    RUN(fit_finds_how_a_rows_tokens_share_experts);
    RUN(fit_blocks_per_sm_follows_hopper_limits);
    RUN(fit_wave_geometry_reads_grids);
    RUN(fit_group_recovers_wave_step);
    RUN(fit_run_recovers_wave_step_from_grid_sizes);
    RUN(fit_run_merges_split_k_gemms);
    RUN(fit_groups_sum_to_the_phase_totals);
    RUN(fit_one_odd_cell_leaves_the_totals_rule_alone);
    RUN(fit_run_refuses_one_token_count);
    RUN(fit_run_refuses_group_absent_from_a_trace);
    RUN(fit_run_refuses_negative_kernel_duration);
    RUN(fit_loads_json_traces_also_cut_off);
    RUN(sim_of_fit_reproduces_iteration_time);
    RUN(fit_blocking_copy_is_not_launch_cost);
    RUN(fit_gap_group_ignores_a_few_odd_instances);
    RUN(fit_lite_host_stalls_are_the_programs);
    RUN(fit_lite_stalls_drain_the_gpu_queue);
    RUN(fit_launch_profile_prices_late_heavy_kernels);
    RUN(fit_gap_group_keeps_graph_and_eager_apart);
    RUN(fit_eager_term_takes_the_models_residual);
    RUN(fit_prices_a_captured_graph_size_of_its_own);
    RUN(fit_takes_the_calibrated_cupti_launch_cost_out);
    RUN(fit_host_speed_follows_the_hosts_launch_rates);
    RUN(fit_host_level_between_windows);
    RUN(fit_host_gap_grows_with_requests);
    RUN(fit_kv_rows_follow_what_padded_rows_cost);
    RUN(fit_group_residual_is_out_of_sample);
    RUN(fit_group_residual_splits_by_cost);
    RUN(fit_windowed_capture_matches_whole_one);
    RUN(validate_sh_runs_on_synthetic_data);
    return check_done();
}
