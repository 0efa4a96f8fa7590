/* test_fit_sample.c: the capped load of long captures (models/fit_sample.c). A synthetic
 * always-mode specprof trace of a steady-state speculative loop (draft and extend replayed
 * from CUDA graphs, verify and accept launched eagerly with their API calls, four batch
 * sizes one after another, the KV context growing) is streamed to a gzip file in
 * libspecprof's blocks and fitted by `specsim fit` in a child: its peak memory (ru_maxrss)
 * stays under FIT_MEM_BOUND_MIB at two lengths (FIT_MEM_RECORDS records and a quarter; the
 * 1 GB-equivalent is 4M: `make bench`), and the model equals the one fitted from a short
 * trace of the same configurations (fewer instances than the cap, loaded whole) within
 * FIT_MEM_TOL. Below the cap the capped load is the whole load, record for record. A
 * compressed trace cut mid-block (SIGKILL) reads up to its last complete block in specprof
 * check, specprof merge and the fit's loaders. With FIT_INSTANCES_MAX=0 in the environment
 * (no cap) the memory checks fail: the rule's own check.
 * Run alone: test_fit_sample --write FILE RECORDS writes a trace; --measure FILE fits it
 * and prints "wall_s,peak_mib" (models/fit_sample_bench.sh, make bench). */
#include "check.h"
#include "fit.h"
#include "ptrace_out.h"
#include "ptrace_read.h"
#include "ptrace_write.h"
#include "specsim_bin.h"
#include "timport.h"
#include "wmodel.h"
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The bound the brief states: a 1 GB-equivalent trace fitted in 64 MiB (272 bytes a record
 * before the cap: 4M records would need ~1.1 GB). */
#define FIT_MEM_BOUND_MIB 64.0
/* Records of the long trace in make test (a quarter of the 1 GB-equivalent; FIT_MEM_RECORDS
 * in the environment overrides it). */
#define FIT_MEM_RECORDS_DEFAULT 1000000L
/* Model vs short-trace model: relative error of each phase's GPU time per forward at each
 * configuration (both fits see the same cost law with 2% noise). */
#define FIT_MEM_TOL 0.03
/* Iterations per configuration of the short trace: under the default cap (128). */
#define FIT_MEM_SHORT_ITERS 100
/* Lines per gzip block (libspecprof ends a block at each flush, 500 ms by default: a busy
 * rank writes thousands of lines a flush). */
#define FIT_MEM_BLOCK_LINES 4096

#if defined(__SANITIZE_ADDRESS__)
#define FIT_MEM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FIT_MEM_ASAN 1
#endif
#endif
#ifndef FIT_MEM_ASAN
#define FIT_MEM_ASAN 0
#endif

static char dir[256], specsim[512], specprof[512];

static const int cfg_bs[] = {1, 2, 4, 8};
#define NCFG ((int)(sizeof cfg_bs / sizeof cfg_bs[0]))
#define LAYERS 8
#define STEPS 3           /* draft depth: the draft range holds steps - 1 forwards */

typedef struct {
    ptrace_out o;
    ptrace_ctx ctx;
    char line[2048];
    char buf[FIT_MEM_BLOCK_LINES * 2048];
    size_t nbuf;
    long lines, records, blocks;
    int64_t host_ns, gpu_ns;  /* host cursor, GPU free */
    uint32_t corr;
    uint64_t rng;
    int64_t *block_end;       /* compressed bytes at each block's end (blocks) */
    long *block_lines;        /* lines written before it */
    long cap_blocks;
    int fail;
} gen;

static double gen_noise(gen *g)   /* 1 +- 2%, seeded */
{
    g->rng ^= g->rng << 13;
    g->rng ^= g->rng >> 7;
    g->rng ^= g->rng << 17;
    return 0.98 + 0.04 * (double)(g->rng >> 11) / 9007199254740992.0;
}

/* Lines gather in a block buffer handed over whole (ptrace_out_write flushes the
 * compressor at every call, as libspecprof hands it a flush's worth at once). */
static void gen_block(gen *g)
{
    if (g->nbuf && (ptrace_out_write(&g->o, g->buf, g->nbuf) || ptrace_out_block(&g->o)))
        g->fail = 1;
    g->nbuf = 0;
}

static void gen_put(gen *g, int n)
{
    if (n <= 0 || g->nbuf + (size_t)n > sizeof g->buf) {
        g->fail = 1;
        return;
    }
    memcpy(g->buf + g->nbuf, g->line, (size_t)n);
    g->nbuf += (size_t)n;
    g->lines++;
    if (g->lines % FIT_MEM_BLOCK_LINES == 0) {
        gen_block(g);
        if (g->blocks < g->cap_blocks) {
            g->block_end[g->blocks] = g->o.bytes;
            g->block_lines[g->blocks] = g->lines;
        }
        g->blocks++;
    }
}

/* A kernel of cost us on the stream, launched at host time launch_ns (graph: a graph's node). */
static void gen_kernel(gen *g, const char *name, double us, int64_t launch_ns, uint32_t corr,
                       int graph, int grid, const char *nvtx)
{
    ptrace_kernel k;
    memset(&k, 0, sizeof k);
    int64_t s = launch_ns + 2000 > g->gpu_ns ? launch_ns + 2000 : g->gpu_ns;
    k.start_ns = s;
    k.end_ns = s + (int64_t)(us * 1000.0 * gen_noise(g));
    g->gpu_ns = k.end_ns + 500;
    k.name = name;
    k.corr = corr;
    k.stream = 7;
    k.grid[0] = grid; k.grid[1] = k.grid[2] = 1;
    k.block[0] = 128; k.block[1] = k.block[2] = 1;
    k.regs = 32;
    k.graph_id = graph ? 3 : 0;
    k.graph_node_id = graph ? 100 + (uint64_t)g->records % 64 : 0;
    k.nvtx = nvtx;
    k.phase = "";
    gen_put(g, ptrace_write_kernel(g->line, sizeof g->line, &g->ctx, &k));
    g->records++;
}

static void gen_api(gen *g, const char *name, int64_t s, int64_t e, uint32_t corr)
{
    ptrace_api a;
    memset(&a, 0, sizeof a);
    a.start_ns = s;
    a.end_ns = e;
    a.name = name;
    a.corr = corr;
    a.cbid = 211;
    a.thread = 100;
    gen_put(g, ptrace_write_api(g->line, sizeof g->line, &g->ctx, &a));
    g->records++;
}

static void gen_range(gen *g, const char *name, int64_t s, int64_t e)
{
    ptrace_range r;
    memset(&r, 0, sizeof r);
    r.start_ns = s;
    r.end_ns = e;
    r.name = name;
    r.domain = "";
    r.thread = 100;
    r.push_pop = 1;
    gen_put(g, ptrace_write_range(g->line, sizeof g->line, &g->ctx, &r));
    g->records++;
}

/* One forward's kernels of a layer stack at tokens and KV context kv (its cost law). */
static const char *const k_gemm = "nvjet_sm90_tst_128x64_64x4_2x1_v_bz_TNT";
static const char *const k_norm = "void k_rmsnorm<float>(float*, int)";
static const char *const k_attn = "void k_attn_decode<128>(__nv_bfloat16*, int)";
static const char *const k_silu = "void k_silu_mul(__nv_bfloat16*, int)";

static double gen_cost(int j, double tokens, double kv)
{
    switch (j) {
    case 0: return 6.0 + 0.05 * tokens;                /* gemm (qkv) */
    case 1: return 3.0 + 0.01 * tokens;                /* rmsnorm */
    case 2: return 4.0 + 0.02 * tokens + 0.8e-3 * kv;  /* attention */
    case 3: return 9.0 + 0.08 * tokens;                /* gemm (mlp) */
    default: return 2.0 + 0.01 * tokens;               /* silu */
    }
}

static const char *gen_kname(int j)
{
    return j == 0 || j == 3 ? k_gemm : j == 1 ? k_norm : j == 2 ? k_attn : k_silu;
}

/* An eager phase: per layer 5 kernels, each with its cudaLaunchKernel; accept ends with a
 * blocking copy of the accepted tokens to the host. */
static void gen_eager(gen *g, const char *word, int bs, double tokens, double kv, int layers,
                      int copy)
{
    char name[160];
    snprintf(name, sizeof name, "%s tokens=%g bs=%d rows=%d ctx=%.0f graph=0 steps=%d topk=1",
             word, tokens, bs, bs, kv, STEPS);
    int64_t r0 = g->host_ns;
    g->host_ns += 1000;
    for (int l = 0; l < layers; l++)
        for (int j = 0; j < 5; j++) {
            uint32_t c = ++g->corr;
            gen_api(g, "cudaLaunchKernel", g->host_ns, g->host_ns + 3500, c);
            gen_kernel(g, gen_kname(j), gen_cost(j, tokens, kv), g->host_ns, c, 0, 132, name);
            g->host_ns += 5000;
        }
    if (copy) {
        uint32_t c = ++g->corr;
        ptrace_mem m;
        memset(&m, 0, sizeof m);
        m.kind = PTRACE_MEMCPY;
        m.start_ns = (g->host_ns + 2000 > g->gpu_ns ? g->host_ns + 2000 : g->gpu_ns);
        m.end_ns = m.start_ns + 2000;
        m.copy_kind = "DtoH";
        m.bytes = (uint64_t)bs * 16;
        m.corr = c;
        m.stream = 7;
        m.nvtx = name;
        m.phase = "";
        g->gpu_ns = m.end_ns + 500;
        int64_t e = m.end_ns + 3000;
        gen_api(g, "cudaMemcpyAsync", g->host_ns, e, c);
        gen_put(g, ptrace_write_mem(g->line, sizeof g->line, &g->ctx, &m));
        g->records++;
        g->host_ns = e;
    }
    g->host_ns += 1000;
    gen_range(g, name, r0, g->host_ns);
    g->host_ns += 20000;   /* the host's own work before the next phase */
}

/* A graph phase: one cudaGraphLaunch, forwards x layers x 5 kernels of its correlation id. */
static void gen_graph(gen *g, const char *word, int bs, double tokens, double kv, int forwards)
{
    char name[160];
    snprintf(name, sizeof name, "%s tokens=%g bs=%d rows=%d ctx=%.0f graph=1 steps=%d topk=1",
             word, tokens, bs, bs, kv, STEPS);
    int64_t r0 = g->host_ns;
    g->host_ns += 1000;
    uint32_t c = ++g->corr;
    int64_t launch = g->host_ns;
    gen_api(g, "cudaGraphLaunch", launch, launch + 12000, c);
    for (int f = 0; f < forwards; f++)
        for (int l = 0; l < 2; l++)
            for (int j = 0; j < 5; j++)
                gen_kernel(g, gen_kname(j), 0.5 * gen_cost(j, tokens, kv), launch, c, 1, 66, name);
    g->host_ns = launch + 13000;
    gen_range(g, name, r0, g->host_ns);
    g->host_ns += 20000;
}

/* Records per iteration: draft 2x10+2, verify 8x10+1, accept 2x10+3, extend 10+2. */
static long per_iter_records(void) { return 22 + 81 + 23 + 12; }

/* Writes a trace of about `records` records (iters per configuration when records <= 0);
 * 0 or -1. The generator's block ends go to g (cap_blocks of them). */
static int gen_trace(const char *path, long records, int iters, gen *g)
{
    char err[512];
    if (ptrace_out_open_path_gz(&g->o, path, 1, err, sizeof err)) {
        CHECK(0, "%s", err);
        return -1;
    }
    g->ctx = (ptrace_ctx){0, 1000000000LL};
    g->host_ns = g->gpu_ns = g->ctx.t0_ns + 1000000;
    g->rng = 0x9e3779b97f4a7c15ull;
    ptrace_header h;
    memset(&h, 0, sizeof h);
    h.format_version = PTRACE_FORMAT_VERSION;
    snprintf(h.tool_version, sizeof h.tool_version, "%s", PTRACE_TOOL_VERSION);
    h.world_size = 1;
    h.t0_ns = g->ctx.t0_ns;
    snprintf(h.device.name, sizeof h.device.name, "NVIDIA H200");
    h.device.sms = 132;
    snprintf(h.mode, sizeof h.mode, "always");
    snprintf(h.records, sizeof h.records, "fit");
    h.compressed = 1;
    gen_put(g, ptrace_write_header(g->line, sizeof g->line, &g->ctx, &h));
    if (records > 0)
        iters = (int)(records / per_iter_records() / NCFG) + 1;
    for (int c = 0; c < NCFG && !g->fail; c++) {
        int bs = cfg_bs[c];
        for (int it = 0; it < iters && !g->fail; it++) {
            double kv = (double)bs * (512 + (it % 2048));   /* grows, then a new batch */
            gen_graph(g, "draft", bs, bs, kv, STEPS - 1);
            gen_eager(g, "verify", bs, (double)bs * (STEPS + 1), kv, LAYERS, 0);
            gen_eager(g, "accept", bs, (double)bs * (STEPS + 1), kv, 2, 1);
            gen_graph(g, "extend", bs, (double)bs * (STEPS + 1), kv, 1);
        }
    }
    ptrace_end e;
    memset(&e, 0, sizeof e);
    e.records = g->records;
    snprintf(e.reason, sizeof e.reason, "exit");
    e.end_ns = g->host_ns + 1000;
    gen_put(g, ptrace_write_end(g->line, sizeof g->line, &g->ctx, &e));
    gen_block(g);
    if (g->fail || ptrace_out_finish(&g->o, err, sizeof err)) {
        CHECK(0, "writing %s: %s", path, g->fail ? "write failed" : err);
        return -1;
    }
    return 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Runs specsim fit TRACE -o MODEL in a child; its peak RSS (MiB) in *mib, its wall time in
 * *wall_s. The exit status (-1: not run). */
static int fit_child(const char *trace, const char *model, double *mib, double *wall_s)
{
    double t0 = now_s();
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        if (!freopen("/dev/null", "w", stdout))
            _exit(126);
        execl(specsim, specsim, "fit", trace, "-o", model, "--quiet", (char *)NULL);
        _exit(127);
    }
    int st;
    struct rusage ru;
    if (wait4(pid, &st, 0, &ru) != pid)
        return -1;
    *wall_s = now_s() - t0;
    *mib = (double)ru.ru_maxrss / 1024.0;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static long env_long(const char *name, long def)
{
    const char *e = getenv(name);
    return e && *e ? atol(e) : def;
}

static void fit_sample_memory_stays_bounded_and_model_matches_short(void)
{
    static gen g;
    char longp[400], smallp[400], shortp[400], m_long[400], m_small[400], m_short[400];
    long records = env_long("FIT_MEM_RECORDS", FIT_MEM_RECORDS_DEFAULT);
    snprintf(longp, sizeof longp, "%s/long.json.gz", dir);
    snprintf(smallp, sizeof smallp, "%s/small.json.gz", dir);
    snprintf(shortp, sizeof shortp, "%s/short.json.gz", dir);
    snprintf(m_long, sizeof m_long, "%s/long.model.json", dir);
    snprintf(m_small, sizeof m_small, "%s/small.model.json", dir);
    snprintf(m_short, sizeof m_short, "%s/short.model.json", dir);
    double t0 = now_s();
    memset(&g, 0, sizeof g);
    if (gen_trace(longp, records, 0, &g))
        return;
    long lrec = g.records;
    double json_mb = (double)g.o.bytes_in / 1e6, gz_mb = (double)g.o.bytes / 1e6, gen_s = now_s() - t0;
    memset(&g, 0, sizeof g);
    if (gen_trace(smallp, records / 4, 0, &g))
        return;
    long srec = g.records;
    memset(&g, 0, sizeof g);
    if (gen_trace(shortp, 0, FIT_MEM_SHORT_ITERS, &g))
        return;
    double mib_l = 0, mib_s = 0, mib_h = 0, wl = 0, ws = 0, wh = 0;
    int rl = fit_child(longp, m_long, &mib_l, &wl);
    int rs = fit_child(smallp, m_small, &mib_s, &ws);
    int rh = fit_child(shortp, m_short, &mib_h, &wh);
    printf("  long: %ld records, %.0f MB of JSON (%.0f MB gzip, written in %.1f s): fit %.1f s, "
           "peak %.1f MiB; 1/4: %ld records, fit %.1f s, peak %.1f MiB; short: %.1f MiB\n",
           lrec, json_mb, gz_mb, gen_s, wl, mib_l, srec, ws, mib_s, mib_h);
    CHECK(rl == 0 && rs == 0 && rh == 0, "specsim fit exit status long %d, 1/4 %d, short %d", rl,
          rs, rh);
#if FIT_MEM_ASAN
    /* make asan: the sanitizer's shadow and quarantine add ~70 MiB to any process: the bound
     * is checked by make test; here only that memory does not grow with the trace */
    printf("  (asan: the %.0f MiB bound not checked)\n", FIT_MEM_BOUND_MIB);
#else
    CHECK(mib_l < FIT_MEM_BOUND_MIB && mib_s < FIT_MEM_BOUND_MIB,
          "peak memory %.1f MiB (%ld records), %.1f MiB (%ld records): bound %.0f MiB", mib_l,
          lrec, mib_s, srec, FIT_MEM_BOUND_MIB);
#endif
    /* independent of the length: 4x the records, at most 8 MiB more (ranges: ~56 B each) */
    int cap = fit_sample_cap(FIT_INSTANCES_MAX_DEFAULT);
    if (cap == 0 || srec / per_iter_records() / NCFG > 2 * cap)   /* both over the cap */
        CHECK(mib_l < mib_s + 8.0, "peak memory grew with the trace: %.1f MiB at %ld records, %.1f "
          "MiB at %ld", mib_l, lrec, mib_s, srec);
    if (rl || rh)
        return;
    static wm_model a, b;
    char err[1024];
    if (wm_load(&a, m_long, err, sizeof err) || wm_load(&b, m_short, err, sizeof err)) {
        CHECK(0, "%s", err);
        return;
    }
    double worst = 0;
    const char *wp = "";
    int wb = 0;
    for (int p = 0; p < WM_NPHASE; p++) {
        if (!b.phase[p].present)
            continue;
        CHECK(a.phase[p].present, "phase %s missing from the long trace's model", wm_phase_name[p]);
        for (int c = 0; c < NCFG; c++) {
            double tok = p == WM_DRAFT ? cfg_bs[c] : (double)cfg_bs[c] * (STEPS + 1);
            double kv = (double)cfg_bs[c] * (512 + FIT_MEM_SHORT_ITERS / 2);
            double ua = wm_phase_gpu_us(&a, p, tok, kv), ub = wm_phase_gpu_us(&b, p, tok, kv);
            double e = ub > 0 ? fabs(ua - ub) / ub : 0;
            if (e > worst)
                worst = e, wp = wm_phase_name[p], wb = cfg_bs[c];
        }
    }
    printf("  model vs short trace's: worst %.2f%% (phase %s, bs %d); eager launch %.3f vs %.3f us, "
           "graph launch %.3f vs %.3f us\n", 100 * worst, wp, wb, a.eager_launch_us,
           b.eager_launch_us, a.graph_launch_us, b.graph_launch_us);
    CHECK(worst <= FIT_MEM_TOL, "phase %s at bs %d: %.2f%% from the short trace's model (tol %.0f%%)",
          wp, wb, 100 * worst, 100 * FIT_MEM_TOL);
    CHECK(fabs(a.eager_launch_us - b.eager_launch_us) <= 0.05 * b.eager_launch_us + 0.1 &&
          fabs(a.graph_launch_us - b.graph_launch_us) <= 0.05 * b.graph_launch_us + 0.1,
          "launch costs: eager %.3f vs %.3f us, graph %.3f vs %.3f us", a.eager_launch_us,
          b.eager_launch_us, a.graph_launch_us, b.graph_launch_us);
    for (int p = 0; p < WM_NPHASE; p++)
        if (b.phase[p].present)
            CHECK(fabs(a.phase[p].host_gap_us - b.phase[p].host_gap_us) <= 2.0 + 0.1 * fabs(b.phase[p].host_gap_us),
                  "phase %s host gap %.3f vs %.3f us", wm_phase_name[p], a.phase[p].host_gap_us,
                  b.phase[p].host_gap_us);
    remove(longp);
    remove(smallp);
}

/* Below the cap (the short trace: 100 instances per configuration) the capped load holds
 * what the whole load holds, record for record; above it, only kept instances' records. */
static void fit_sample_below_cap_loads_whole(void)
{
    char shortp[400], err[512];
    snprintf(shortp, sizeof shortp, "%s/short.json.gz", dir);
    fit_trace a, b, c;
    if (fit_trace_load_specprof(&a, shortp, err, sizeof err) ||
        fit_sample_load(&b, shortp, FIT_MEM_SHORT_ITERS, err, sizeof err) ||
        fit_sample_load(&c, shortp, 10, err, sizeof err)) {
        CHECK(0, "%s", err);
        return;
    }
    int same = a.nkern == b.nkern && a.napi == b.napi && a.nmem == b.nmem && a.nrng == b.nrng && !b.rng_keep;
    for (size_t i = 0; same && i < a.nkern; i++)
        same = a.kern[i].start_ns == b.kern[i].start_ns && a.kern[i].corr == b.kern[i].corr &&
               !strcmp(a.kern[i].name, b.kern[i].name);
    CHECK(same, "at the cap: %zu/%zu kernels, %zu/%zu calls, %zu/%zu ranges (whole/capped)",
          a.nkern, b.nkern, a.napi, b.napi, a.nrng, b.nrng);
    /* cap 10 of 100 per configuration: 10 kept of each and at most as many predecessors */
    size_t kept = 0, ctx = 0, out = 0;
    for (size_t i = 0; i < c.nrng; i++)
        if (c.rng_keep && c.rng_keep[i].context)
            ctx++;
        else
            kept++;
    for (int p = 0; p < WM_NPHASE; p++)
        out += c.sampled_out[p];
    CHECK(c.rng_keep && kept == (size_t)10 * NCFG * 4 && ctx <= kept && kept + ctx + out == a.nrng &&
          c.nkern < a.nkern / 3 && c.has_rec_end,
          "cap 10: %zu kept, %zu predecessors, %zu out of %zu ranges; %zu of %zu kernels", kept, ctx,
          out, a.nrng, c.nkern, a.nkern);
    /* the kept instances are spread over the capture, not its first ones */
    int64_t first = INT64_MAX, last = INT64_MIN;
    for (size_t i = 0; i < c.nrng; i++) {
        if (c.rng[i].start_ns < first)
            first = c.rng[i].start_ns;
        if (c.rng[i].start_ns > last)
            last = c.rng[i].start_ns;
    }
    CHECK(last - first > (a.rng[a.nrng - 1].start_ns - a.rng[0].start_ns) * 9 / 10,
          "kept instances span %.1f of %.1f ms", (double)(last - first) / 1e6,
          (double)(a.rng[a.nrng - 1].start_ns - a.rng[0].start_ns) / 1e6);
    fit_trace_free(&a);
    fit_trace_free(&b);
    fit_trace_free(&c);
}

/* Empties every other predecessor a capped load kept (its launch calls and their records
 * removed). Returns how many. */
static size_t empty_contexts(fit_trace *c)
{
    size_t k = 0, n = 0, ngone = 0;
    uint32_t *gone = malloc((c->napi + 1) * sizeof *gone);
    char *mark = calloc(c->nrng + 1, 1);
    for (size_t i = 0; i < c->nrng; i++)
        if (c->rng_keep[i].context && n++ % 2 == 0)
            mark[i] = 1;
    for (size_t i = 0; i < c->napi; i++) {
        int in = 0;
        for (size_t r = 0; r < c->nrng && !in; r++)
            in = mark[r] && c->api[i].start_ns >= c->rng[r].start_ns && c->api[i].start_ns <= c->rng[r].end_ns;
        if (in)
            gone[ngone++] = c->api[i].corr;
        else
            c->api[k++] = c->api[i];
    }
    c->napi = k;
    k = 0;
    for (size_t i = 0; i < c->nkern; i++) {
        int drop = 0;
        for (size_t j = 0; j < ngone && !drop; j++)
            drop = gone[j] == c->kern[i].corr;
        if (!drop)
            c->kern[k++] = c->kern[i];
    }
    c->nkern = k;
    k = 0;
    for (size_t i = 0; i < c->nmem; i++) {
        int drop = 0;
        for (size_t j = 0; j < ngone && !drop; j++)
            drop = gone[j] == c->mem[i].corr;
        if (!drop)
            c->mem[k++] = c->mem[i];
    }
    c->nmem = k;
    free(gone);
    free(mark);
    return (n + 1) / 2;
}

/* A host gap is not measured across an instance that was not loaded: with half the
 * predecessors a capped load keeps emptied of their records (so that the fit searches further
 * back, where the capture's instance before them was not loaded), fewer gaps are measured and
 * their mean stays the whole trace's (without the rule: as many, from an older instance). */
static void fit_sample_gap_stops_at_an_instance_not_loaded(void)
{
    char shortp[400], err[1024];
    snprintf(shortp, sizeof shortp, "%s/short.json.gz", dir);
    fit_trace a, c1, c2;
    if (fit_trace_load_specprof(&a, shortp, err, sizeof err) ||
        fit_sample_load(&c1, shortp, 10, err, sizeof err) || fit_sample_load(&c2, shortp, 10, err, sizeof err)) {
        CHECK(0, "%s", err);
        return;
    }
    size_t emptied = empty_contexts(&c2);
    static fit_result ra, r1, r2;
    fit_opts o = {.name = "gap"};
    int ea = fit_run(&a, 1, &o, &ra, err, sizeof err);
    CHECK(ea == 0, "whole fit: %s", err);
    int e1 = fit_run(&c1, 1, &o, &r1, err, sizeof err);
    CHECK(e1 == 0, "capped fit: %s", err);
    int e2 = fit_run(&c2, 1, &o, &r2, err, sizeof err);
    CHECK(e2 == 0, "capped fit, predecessors emptied: %s", err);
    if (ea == 0 && e1 == 0 && e2 == 0) {
        int g1 = 0, g2 = 0;
        for (int p = 0; p < WM_NPHASE; p++) {
            g1 += r1.phase[p].ngaps;
            g2 += r2.phase[p].ngaps;
            if (ra.model.phase[p].present)
                CHECK(fabs(r2.model.phase[p].host_gap_us - ra.model.phase[p].host_gap_us) <=
                      2.0 + 0.1 * fabs(ra.model.phase[p].host_gap_us),
                      "phase %s: host gap %.3f us capped (%zu predecessors emptied), %.3f whole",
                      wm_phase_name[p], r2.model.phase[p].host_gap_us, emptied,
                      ra.model.phase[p].host_gap_us);
        }
        printf("  gaps measured: %d capped, %d with %zu predecessors emptied\n", g1, g2, emptied);
        CHECK(emptied > 0 && g2 <= g1 - (int)emptied / 2 && g2 >= g1 - (int)emptied,
              "gaps measured: %d capped, %d with %zu predecessors emptied", g1, g2, emptied);
    }
    fit_result_free(&ra);
    fit_result_free(&r1);
    fit_result_free(&r2);
    fit_trace_free(&a);
    fit_trace_free(&c1);
    fit_trace_free(&c2);
}

/* The SIGKILL case in every reader of a compressed trace: cut inside a block (after the
 * header block), specprof check and merge report it and keep what was whole, and the fit's
 * loaders (whole and capped) read every line up to the last complete block. */
static void fit_sample_gz_cut_mid_block_reads_to_last_block(void)
{
    static gen g;
    static int64_t ends[4096];
    static long nl[4096];
    char path[400], cut[400], cmd[2400], err[512];
    snprintf(path, sizeof path, "%s/cutsrc.json.gz", dir);
    memset(&g, 0, sizeof g);
    g.block_end = ends;
    g.block_lines = nl;
    g.cap_blocks = 4096;
    if (gen_trace(path, 0, 60, &g))
        return;
    CHECK(g.blocks >= 6, "only %ld blocks", g.blocks);
    if (g.blocks < 6)
        return;
    long b = g.blocks / 2;                        /* cut inside block b + 1 */
    int64_t off = ends[b] + (ends[b + 1] - ends[b]) / 2;
    snprintf(cut, sizeof cut, "%s/cutdir/specprof.rank0.pid1.json.gz", dir);
    snprintf(cmd, sizeof cmd, "mkdir -p '%s/cutdir' && head -c %lld '%s' > '%s'", dir, (long long)off, path, cut);
    CHECK(system(cmd) == 0, "%s", cmd);
    /* the fit's loaders: at least the lines of the complete blocks (the header among them),
     * at most the lines written */
    fit_trace t;
    for (int capped = 0; capped < 2; capped++) {
        int rc = capped ? fit_sample_load(&t, cut, 5, err, sizeof err)
                        : fit_trace_load(&t, cut, err, sizeof err);
        CHECK(rc == 0, "%s load of the cut file: %s", capped ? "capped" : "whole", err);
        if (rc)
            continue;
        long got = (long)(t.nkern + t.nmem + t.napi + t.nrng);
        if (!capped)
            CHECK(got >= nl[b] - 1 && got <= g.lines - 2 && t.truncated,
                  "whole load: %ld records, want %ld..%ld (truncated %d)", got, nl[b] - 1, g.lines - 2,
                  t.truncated);
        else
            CHECK(t.truncated && t.nkern > 0, "capped load: truncated %d, %zu kernels", t.truncated, t.nkern);
        fit_trace_free(&t);
    }
    /* the scanner: the same count as the loader saw */
    ptrace_file f;
    CHECK(ptrace_read_file(cut, &f, err, sizeof err) == 0 && f.info.cut_compressed && !f.info.complete &&
          (long)f.n_ev >= nl[b] - 1, "scan of the cut file: %s %zu events (want >= %ld), cut %d",
          err, f.n_ev, nl[b] - 1, f.info.cut_compressed);
    long nev = (long)f.n_ev;
    ptrace_file_free(&f);
    /* specprof check and merge (the CLI) */
    char *out = NULL;
    snprintf(cmd, sizeof cmd, "'%s' check '%s' 2>&1", specprof, cut);
    int rc = specsim_run_capture(cmd, &out);
    CHECK(out && strstr(out, "cut") && rc != 127 && rc < 128, "specprof check (status %d): %.400s", rc,
          out ? out : "");
    free(out);
    char merged[400];
    snprintf(merged, sizeof merged, "%s/merged.json", dir);
    snprintf(cmd, sizeof cmd, "'%s' merge '%s/cutdir' -o '%s' 2>&1", specprof, dir, merged);
    rc = specsim_run_capture(cmd, &out);
    CHECK(rc == 0, "specprof merge (status %d): %.400s", rc, out ? out : "");
    free(out);
    if (rc == 0) {
        CHECK(ptrace_read_file(merged, &f, err, sizeof err) == 0, "merged file: %s", err);
        long kept = 0;
        for (size_t i = 0; i < f.n_ev; i++)
            kept += f.ev[i].ph == 'X';
        CHECK(kept >= nev - 2 && kept <= nev, "merge kept %ld timed events of the cut file's %ld", kept, nev);
        ptrace_file_free(&f);
    }
    /* the cap's option: a bad value is refused by name */
    snprintf(cmd, sizeof cmd, "'%s' fit '%s' -o '%s/x.json' --instances-max -3 2>&1", specsim, cut, dir);
    rc = specsim_run_capture(cmd, &out);
    CHECK(rc == 2 && out && strstr(out, "field --instances-max: value -3"), "--instances-max -3 (status %d): %.300s",
          rc, out ? out : "");
    free(out);
    /* and specsim fit on it: fitted, with the cut reported */
    char model[400];
    snprintf(model, sizeof model, "%s/cut.model.json", dir);
    snprintf(cmd, sizeof cmd, "'%s' fit '%s' -o '%s' --quiet 2>&1", specsim, cut, model);
    rc = specsim_run_capture(cmd, &out);
    CHECK(rc == 0 && out && strstr(out, "cut off"), "specsim fit of the cut file (status %d): %.400s",
          rc, out ? out : "");
    free(out);
    remove(path);
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "--write")) {   /* make bench: the trace alone */
        static gen g;
        int rc = gen_trace(argv[2], atol(argv[3]), 0, &g);
        printf("%ld records, %lld bytes of JSON, %lld of gzip\n", g.records, (long long)g.o.bytes_in,
               (long long)g.o.bytes);
        return rc ? 1 : 0;
    }
    specsim_bin_find(argv[0], specsim, sizeof specsim);
    if (argc == 3 && !strcmp(argv[1], "--measure")) {   /* make bench: one fit, timed */
        char model[600];
        double mib = 0, wall = 0;
        snprintf(model, sizeof model, "%s.model.json", argv[2]);
        int rc = fit_child(argv[2], model, &mib, &wall);
        printf("%.2f,%.1f\n", wall, mib);
        remove(model);
        return rc ? 1 : 0;
    }
    snprintf(specprof, sizeof specprof, "%s", specsim);
    char *slash = strrchr(specprof, '/');
    snprintf(slash ? slash + 1 : specprof, sizeof specprof - (size_t)(slash ? slash + 1 - specprof : 0),
             "specprof");
    snprintf(dir, sizeof dir, "/tmp/test_fit_sample.%d", (int)getpid());
    mkdir(dir, 0755);
    RUN(fit_sample_memory_stays_bounded_and_model_matches_short);
    RUN(fit_sample_below_cap_loads_whole);
    RUN(fit_sample_gap_stops_at_an_instance_not_loaded);
    RUN(fit_sample_gz_cut_mid_block_reads_to_last_block);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd)) { /* left for a look */ }
    return check_done();
}
