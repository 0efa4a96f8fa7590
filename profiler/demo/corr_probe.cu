/* corr_probe.cu: what CUPTI does to correlation ids, and to a graph launch's cost, when
 * tracing is switched off and on inside one process (docs/profiler.md, "windows").
 *
 * specprof's windowed traces on CUPTI 13.0.1 carried stuck correlation ids once a window
 * closed and another opened. This probe takes the switching apart, one variant per process:
 *   kinds      kernel activity toggled; runtime API records (whole kind) stay on
 *   percbid    kernel activity + per-API records of the launch calls toggled (specprof's windows)
 *   percbid_cb the same + callbacks on the launch calls toggled (specprof's windows, exactly)
 *   apistay    kernel activity toggled; per-API records and callbacks of launches stay on
 *              (SPECPROF_API_BETWEEN=1)
 *   kindrt     kernel activity + the whole RUNTIME kind toggled
 *   detach     everything on in a window; between windows CUPTI detached (cuptiUnsubscribe +
 *              cuptiFinalize at a runtime API's exit, as Kineto), subscribed again for the next
 *              window on the main thread (cuptiSubscribe)
 *   detach_v2  the same, subscribed again with cuptiSubscribe_v2 (specprof's first attach)
 *   detach_thread  the same, but subscribed again (and the window's tracing switched on) from a
 *              second thread while the main thread launches graphs and kernels (specprof's
 *              re-attach before the fix: its control thread)
 *   detach_gcap    the same as detach, but the graph replayed is captured and instantiated
 *              inside the first window (CUPTI attached, kernel records on), as specbench's
 *              and PyTorch's graphs are under specprof
 *   detach_busy    the same as detach, but CUPTI is finalized at the exit of a kernel launch
 *              while the GPU is still busy (a ~5 ms kernel and 50 more queued before it)
 *   detach_mt      the same as detach, while a second thread launches kernels on its own stream
 *              and synchronizes, through the detach and the re-attach
 * Variants for where the cost between windows comes from (issue 15, "gtrace"; one process
 * each; each round prints the graph launch's host cost between windows, and for graph-level
 * records their count, ids and spans):
 *   none       CUPTI never initialized: the noise of the launch cost itself, round by round
 *   regonly    only cuptiActivityRegisterCallbacks (CUPTI initialized, no subscriber, no kind)
 *   subonly    cuptiSubscribe + cuptiActivityRegisterCallbacks, no kind and no callback ever
 *   kernel_once  subscribed; round 0 the kernel kind enabled and disabled with nothing launched
 *              between; round 1 a window of eager kernels only; rounds 2+ windows with graphs
 *   execs      specprof's windows (percbid_cb); between windows also an exec never launched
 *              while kernel records were on, an exec instantiated after the window, the traced
 *              exec after cudaGraphExecUpdate, an exec of a graph captured after the window, and
 *              one instantiated inside the first window but launched only between windows
 *   unsub      specprof's windows, then cuptiUnsubscribe (no cuptiFinalize) between windows
 *   kernelkind specprof's windows with CUPTI_ACTIVITY_KIND_KERNEL instead of CONCURRENT_KERNEL
 *   ctxkind    specprof's windows with the kernel kind enabled per context
 *              (cuptiActivityEnableContext / DisableContext)
 *   hwtrace    cuptiActivityEnableHWTrace(1) first (Blackwell only, says the header), then
 *              specprof's windows
 *   gtrace     windows of CUPTI_ACTIVITY_KIND_GRAPH_TRACE alone (+ per-API launch records),
 *              no kernel kind ever; all off between
 *   gtrace_on  GRAPH_TRACE (+ per-API launch records) on from the start and never off
 *   gtrace_mix windows of kernel records; GRAPH_TRACE on between windows, switched at a sync
 *              (issue 15's design); API launch records stay on
 *   gtrace_both  kernel kind and GRAPH_TRACE enabled together (return codes, what comes)
 *   gtrace_early  as gtrace_on, CUPTI attached and GRAPH_TRACE on before the first CUDA call (as an
 *              injection library is), every graph made after (no "before CUPTI" cost then)
 *   gtrace_post as gtrace_on, but the graph launched is captured after GRAPH_TRACE is on
 *   tsonly     only cuptiGetTimestamp (does any CUPTI call cost, or the activity API's?)
 *   events     no CUPTI: a cudaEventRecord before and after every graph launch (graph-level
 *              timing without CUPTI): the three calls' host cost, "between" as usual
 * A SIGSEGV prints a backtrace (the gtrace variants died by SIGSEGV in the first gtrace call).
 * Each round: a window (K eager kernel launches and G launches of a graph of N kernels, then a
 * synchronize), tracing off, the same work untraced, a forced flush. Per round it prints the
 * kernels recorded, their distinct correlation ids, the API records and their distinct ids,
 * how many kernel ids have no API record, and the host time of one graph launch (median of
 * the untraced launches between windows) against the same before CUPTI was ever attached.
 * A healthy round: distinct kernel ids = K + G (eager kernels one id each, a graph's nodes the
 * launch's id), every kernel id among the API ids.
 *   usage: corr_probe VARIANT [rounds=4] [graph_nodes=400]      (build: make bin/corr_probe) */
#include <cuda_runtime.h>
#include <cupti.h>
#include <cuda.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <unistd.h>
#include <map>
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <set>
#include <vector>
#include <mutex>
#include <thread>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { fprintf(stderr, "corr_probe: %s: %s\n", #x, cudaGetErrorString(e_)); exit(1); } } while (0)

__global__ void tiny(float *p) { if (threadIdx.x == 0 && p) p[blockIdx.x] += 1.0f; }
__global__ void spin(long long cycles) { long long t = clock64(); while (clock64() - t < cycles) {} }

enum Variant { V_KINDS, V_PERCBID, V_PERCBID_CB, V_APISTAY, V_KINDRT, V_DETACH, V_DETACH_V2, V_DETACH_THREAD,
               V_DETACH_GCAP, V_DETACH_BUSY, V_DETACH_MT,
               V_NONE, V_REGONLY, V_SUBONLY, V_KERNEL_ONCE, V_EXECS, V_UNSUB, V_KERNELKIND, V_CTXKIND, V_HWTRACE,
               V_GTRACE, V_GTRACE_ON, V_GTRACE_MIX, V_GTRACE_BOTH, V_GTRACE_EARLY, V_GTRACE_POST, V_TSONLY, V_EVENTS, V_N };
static const char *vnames[] = { "kinds", "percbid", "percbid_cb", "apistay", "kindrt", "detach", "detach_v2", "detach_thread",
                                "detach_gcap", "detach_busy", "detach_mt",
                                "none", "regonly", "subonly", "kernel_once", "execs", "unsub", "kernelkind", "ctxkind", "hwtrace",
                                "gtrace", "gtrace_on", "gtrace_mix", "gtrace_both", "gtrace_early", "gtrace_post", "tsonly", "events" };
static int variant;

static std::mutex mu;
static std::vector<uint32_t> kcorr, acorr, dcorr;   /* dcorr: driver API records (gtrace variants) */
struct GRec { uint32_t corr, graph_id; uint64_t start_ns, end_ns; };
static std::vector<GRec> grecs;                   /* GRAPH_TRACE records */
struct KSpan { uint64_t start_ns, end_ns; uint32_t graph_id; int n; };
static std::map<uint32_t, KSpan> kspan;           /* graph launches seen at node level, by correlation id */
static CUpti_SubscriberHandle sub;
static std::atomic<int> detach_req(0), detached(0);
static const CUpti_CallbackId launch_cbids[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
    CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020 };

static void CUPTIAPI buf_req(uint8_t **b, size_t *size, size_t *maxr) {
    *b = (uint8_t *)aligned_alloc(8, 4 << 20);
    *size = 4 << 20;
    *maxr = 0;
}
static void CUPTIAPI buf_done(CUcontext, uint32_t, uint8_t *b, size_t, size_t valid) {
    CUpti_Activity *r = NULL;
    std::lock_guard<std::mutex> l(mu);
    while (cuptiActivityGetNextRecord(b, valid, &r) == CUPTI_SUCCESS) {
        if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || r->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
            const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)r;
            kcorr.push_back(k->correlationId);
            if (k->graphId) {
                auto it = kspan.find(k->correlationId);
                if (it == kspan.end()) kspan[k->correlationId] = KSpan{ k->start, k->end, k->graphId, 1 };
                else { it->second.start_ns = std::min(it->second.start_ns, (uint64_t)k->start);
                       it->second.end_ns = std::max(it->second.end_ns, (uint64_t)k->end); it->second.n++; }
            }
        }
        else if (r->kind == CUPTI_ACTIVITY_KIND_GRAPH_TRACE) {
            const CUpti_ActivityGraphTrace2 *g = (const CUpti_ActivityGraphTrace2 *)r;
            grecs.push_back(GRec{ g->correlationId, g->graphId, g->start, g->end });
        }
        else if (r->kind == CUPTI_ACTIVITY_KIND_DRIVER) dcorr.push_back(((CUpti_ActivityAPI *)r)->correlationId);
        else if (r->kind == CUPTI_ACTIVITY_KIND_RUNTIME) acorr.push_back(((CUpti_ActivityAPI *)r)->correlationId);
    }
    free(b);
}
static void CUPTIAPI cb(void *, CUpti_CallbackDomain dom, CUpti_CallbackId, const void *d) {
    const CUpti_CallbackData *cd = (const CUpti_CallbackData *)d;
    if (dom != CUPTI_CB_DOMAIN_RUNTIME_API || cd->callbackSite != CUPTI_API_EXIT) return;
    int want = 1;
    if (detach_req.compare_exchange_strong(want, 0)) {   /* at an API exit, as CUPTI's cupti_finalize sample */
        cuptiUnsubscribe(sub);
        cuptiFinalize();
        detached = 1;
    }
}

static const char *err(CUptiResult r) { const char *s = "?"; cuptiGetResultString(r, &s); return s; }
#define CU(x) do { CUptiResult r_ = (x); if (r_ != CUPTI_SUCCESS) printf("  CUPTI %s: %s\n", #x, err(r_)); } while (0)

static void attach(void) {
    if (variant == V_DETACH_V2) {
        CUpti_SubscriberParams sp;
        memset(&sp, 0, sizeof sp);
        sp.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
        sp.subscriberName = "corr_probe";
        CU(cuptiSubscribe_v2(&sub, (CUpti_CallbackFunc)cb, NULL, &sp));
    } else
        CU(cuptiSubscribe(&sub, (CUpti_CallbackFunc)cb, NULL));
    CU(cuptiActivityRegisterCallbacks(buf_req, buf_done));
}
static void percbid(int on) {
    for (CUpti_CallbackId c : launch_cbids) CU(cuptiActivityEnableRuntimeApi(c, (uint8_t)on));
}
static void callbacks(int on) {
    for (CUpti_CallbackId c : launch_cbids) CU(cuptiEnableCallback((uint32_t)on, sub, CUPTI_CB_DOMAIN_RUNTIME_API, c));
}

static double now_us(void) { timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e6 + t.tv_nsec / 1e3; }

/* K eager launches and G graph launches; returns the median host time of a graph launch */
static double work(float *p, cudaStream_t s, cudaGraphExec_t ge, int K, int G) {
    std::vector<double> t;
    for (int i = 0; i < K; i++) tiny<<<1, 32, 0, s>>>(p);
    for (int i = 0; i < G; i++) {
        double a = now_us();
        CK(cudaGraphLaunch(ge, s));
        t.push_back(now_us() - a);
        CK(cudaStreamSynchronize(s));
    }
    CK(cudaDeviceSynchronize());
    std::sort(t.begin(), t.end());
    return t.empty() ? 0 : t[t.size() / 2];
}


static void on_segv(int sig) {
    void *fr[64];
    int n = backtrace(fr, 64);
    const char m[] = "corr_probe: SIGSEGV, backtrace:\n";
    (void)!write(2, m, sizeof m - 1);
    backtrace_symbols_fd(fr, n, 2);
    signal(sig, SIG_DFL);
    raise(sig);
}
#define STEP(...) do { printf("  step: " __VA_ARGS__); printf("\n"); fflush(stdout); } while (0)

/* ---------- the "gtrace" variants (issue 15): where the cost between windows comes from ---------- */
static float *g_p;
static cudaStream_t g_s;
static int g_nodes;

static cudaGraph_t capture_graph(void) {
    cudaGraph_t gr;
    CK(cudaStreamBeginCapture(g_s, cudaStreamCaptureModeGlobal));
    for (int i = 0; i < g_nodes; i++) tiny<<<1, 32, 0, g_s>>>(g_p);
    CK(cudaStreamEndCapture(g_s, &gr));
    return gr;
}

/* The kernel kind on or off as the variant wants it (the context's, for ctxkind). */
static CUcontext g_ctx;
static void kernel_kind(int v, int on) {
    CUpti_ActivityKind k = v == V_KERNELKIND ? CUPTI_ACTIVITY_KIND_KERNEL : CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    if (v == V_CTXKIND) {
        if (on) CU(cuptiActivityEnableContext(g_ctx, k)); else CU(cuptiActivityDisableContext(g_ctx, k));
    } else if (on) CU(cuptiActivityEnable(k));
    else CU(cuptiActivityDisable(k));
}

static void graph_trace(int on) {
    CUptiResult r = on ? cuptiActivityEnable(CUPTI_ACTIVITY_KIND_GRAPH_TRACE) : cuptiActivityDisable(CUPTI_ACTIVITY_KIND_GRAPH_TRACE);
    if (r != CUPTI_SUCCESS) printf("  CUPTI %s(GRAPH_TRACE): %s\n", on ? "cuptiActivityEnable" : "cuptiActivityDisable", err(r));
}

/* driver API records of cuGraphLaunch (the header: a graph-level record's id is the driver call's) */
static void drvrec(int on) {
    CU(cuptiActivityEnableDriverApi(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, (uint8_t)on));
    CU(cuptiActivityEnableDriverApi(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz, (uint8_t)on));
}

static double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

/* What came since the last call: kernel and API records, graph-level records (count, distinct
 * ids, ids without an API record, zero or reversed timestamps, median GPU span, graph ids),
 * and the node-level span of each graph launch seen at node level. Clears them. */
static void record_stats(const char *what, int K, int G) {
    std::lock_guard<std::mutex> l(mu);
    std::set<uint32_t> ks(kcorr.begin(), kcorr.end()), as(acorr.begin(), acorr.end()), ds(dcorr.begin(), dcorr.end()), gs, gids;
    size_t orphan = 0, gorphan = 0, gdorphan = 0, gzero = 0, grev = 0;
    for (uint32_t c : ks) orphan += !as.count(c);
    std::vector<double> gdur, kdur;
    for (const GRec &g : grecs) {
        gs.insert(g.corr); gids.insert(g.graph_id);
        gorphan += !as.count(g.corr);
        gdorphan += !ds.count(g.corr);
        if (!g.start_ns && !g.end_ns) gzero++;
        else if (g.end_ns < g.start_ns) grev++;
        else gdur.push_back((g.end_ns - g.start_ns) / 1e3);
    }
    std::set<uint32_t> kgids;
    for (auto &e : kspan) { kdur.push_back((e.second.end_ns - e.second.start_ns) / 1e3); kgids.insert(e.second.graph_id); }
    printf("  %s: kernels %zu distinct_kernel_corr %zu (launches %d) api %zu distinct_api_corr %zu kernel_ids_without_api %zu"
           " driver_api %zu | graph_trace %zu distinct_corr %zu (graph launches %d) without_runtime_api %zu without_driver_api %zu"
           " zero_ts %zu end_before_start %zu median_span_us %.1f graph_ids",
           what, kcorr.size(), ks.size(), K + G, acorr.size(), as.size(), orphan, dcorr.size(), grecs.size(), gs.size(), G,
           gorphan, gdorphan, gzero, grev, median(gdur));
    for (uint32_t id : gids) printf(" %u", id);
    printf(" | node-level graph launches %zu median_span_us %.1f kernel_graph_ids", kspan.size(), median(kdur));
    for (uint32_t id : kgids) printf(" %u", id);
    printf("\n");
    kcorr.clear(); acorr.clear(); dcorr.clear(); grecs.clear(); kspan.clear();
}

/* G graph launches, each between two cudaEventRecord; returns the median host time of the
 * three calls and fills the median GPU time between the events (ms -> us) */
static double work_events(cudaGraphExec_t ge, int G, double *gpu_us) {
    std::vector<double> t, g;
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
    for (int i = 0; i < G; i++) {
        double a = now_us();
        CK(cudaEventRecord(e0, g_s));
        CK(cudaGraphLaunch(ge, g_s));
        CK(cudaEventRecord(e1, g_s));
        t.push_back(now_us() - a);
        CK(cudaStreamSynchronize(g_s));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        g.push_back(ms * 1e3);
    }
    CK(cudaEventDestroy(e0)); CK(cudaEventDestroy(e1));
    std::sort(t.begin(), t.end()); std::sort(g.begin(), g.end());
    *gpu_us = g[g.size() / 2];
    return t[t.size() / 2];
}

static int run_gtrace(int v, int rounds, cudaGraph_t gr, cudaGraphExec_t ge, double base) {
    const int K = 50, G = 20, OFF = 100;
    const bool quiet = v == V_NONE || v == V_TSONLY || v == V_EVENTS || v == V_GTRACE_EARLY;   /* no attach() here */
    /* an exec of the same graph that is never launched while kernel records are on (execs) */
    cudaGraphExec_t ge_never, ge_inwin = NULL;
    CK(cudaGraphInstantiate(&ge_never, gr, 0));
    work(g_p, g_s, ge_never, 0, 20);
    double base_never = work(g_p, g_s, ge_never, 0, OFF);
    printf("  before CUPTI: traced exec %.2f us, never-traced exec %.2f us\n", base, base_never);
    {
        void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
        CUresult (*get)(CUcontext *) = h ? (CUresult (*)(CUcontext *))dlsym(h, "cuCtxGetCurrent") : NULL;
        if (get) get(&g_ctx);
        if (v == V_CTXKIND && !g_ctx) { printf("  no context from cuCtxGetCurrent\n"); return 1; }
    }
    if (v == V_REGONLY) CU(cuptiActivityRegisterCallbacks(buf_req, buf_done));
    else if (v == V_TSONLY) { uint64_t ts; CU(cuptiGetTimestamp(&ts)); }
    else if (!quiet) attach();
    STEP("attached");
    uint32_t gid = 0, geid = 0;
    if (v != V_NONE && v != V_EVENTS && v != V_TSONLY) {
        CU(cuptiGetGraphId(gr, &gid));
        CU(cuptiGetGraphExecId(ge, &geid));
        printf("  cuptiGetGraphId %u cuptiGetGraphExecId %u\n", gid, geid);
    }
    if (v == V_HWTRACE) CU(cuptiActivityEnableHWTrace(1));
    if (v == V_GTRACE_ON || v == V_GTRACE_POST) { percbid(1); drvrec(1); graph_trace(1); STEP("graph-level records on"); }
    if (v == V_GTRACE_POST) {   /* a graph made while graph-level records are on */
        gr = capture_graph();
        CK(cudaGraphInstantiate(&ge, gr, 0));
        STEP("graph captured and instantiated under graph-level records");
    }
    if (v == V_EVENTS) {
        for (int r = 0; r < rounds; r++) {
            double gpu = 0, plain = work(g_p, g_s, ge, 0, OFF);
            double ev = work_events(ge, OFF, &gpu);
            printf("round %d graph_launch_us %.2f event_record+launch+event_record_us %.2f gpu_span_us %.1f (before %.2f)\n",
                   r, plain, ev, gpu, base);
        }
        printf("variant %s done\n", vnames[v]);
        return 0;
    }
    if (v == V_GTRACE_MIX) { percbid(1); drvrec(1); }   /* API launch records stay on, as specprof's windows */
    const bool spwin = v == V_EXECS || v == V_UNSUB || v == V_KERNELKIND || v == V_CTXKIND || v == V_HWTRACE;
    for (int r = 0; r < rounds; r++) {
        if (v == V_UNSUB && r > 0) attach();
        int gwin = G, kwin = K;
        /* window on */
        if (spwin) { percbid(1); callbacks(1); kernel_kind(v, 1); }
        if (v == V_KERNEL_ONCE) {
            if (r == 0) { kernel_kind(v, 1); kernel_kind(v, 0); kwin = 0; gwin = 0; }
            else { percbid(1); kernel_kind(v, 1); if (r == 1) gwin = 0; }
        }
        if (v == V_GTRACE) { percbid(1); drvrec(1); graph_trace(1); }
        if (v == V_GTRACE_MIX) { graph_trace(0); kernel_kind(v, 1); }
        if (v == V_GTRACE_BOTH) {
            if (r % 2 == 0) { kernel_kind(v, 1); graph_trace(1); } else { graph_trace(1); kernel_kind(v, 1); }
            percbid(1); drvrec(1);
        }
        if (v >= V_GTRACE) STEP("round %d window on", r);
        double win = (kwin || gwin) ? work(g_p, g_s, ge, kwin, gwin) : 0;
        if (v >= V_GTRACE) STEP("round %d window launched", r);
        if (v == V_EXECS && r == 0) CK(cudaGraphInstantiate(&ge_inwin, gr, 0));   /* made with kernel records on, never launched then */
        CK(cudaDeviceSynchronize());
        /* window off */
        if (spwin) { kernel_kind(v, 0); percbid(0); callbacks(0); }
        if (v == V_KERNEL_ONCE && r > 0) { kernel_kind(v, 0); percbid(0); }
        if (v == V_GTRACE) { graph_trace(0); percbid(0); drvrec(0); }
        if (v == V_GTRACE_MIX) { kernel_kind(v, 0); CK(cudaDeviceSynchronize()); }
        if (v == V_GTRACE_BOTH) { kernel_kind(v, 0); graph_trace(0); percbid(0); drvrec(0); }
        if (v >= V_GTRACE) STEP("round %d window off", r);
        if (v != V_NONE && v != V_TSONLY) CU(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
        if (v >= V_GTRACE) STEP("round %d flushed", r);
        if (v != V_NONE && v != V_TSONLY) record_stats("window", kwin, gwin);
        if (v == V_UNSUB) CU(cuptiUnsubscribe(sub));
        if (v == V_GTRACE_MIX) graph_trace(1);   /* at a sync: the GPU idle, kernel records off */
        double off = work(g_p, g_s, ge, K, OFF);
        printf("round %d graph_launch_us_in_window %.2f between %.2f (before %.2f)", r, win, off, base);
        if (v == V_EXECS) {
            double never = work(g_p, g_s, ge_never, 0, OFF);
            double inwin = work(g_p, g_s, ge_inwin, 0, OFF);
            cudaGraphExec_t ge_new;
            CK(cudaGraphInstantiate(&ge_new, gr, 0));
            double fresh = work(g_p, g_s, ge_new, 0, OFF);
            cudaGraph_t gr2 = capture_graph();
            cudaGraphExec_t ge_cap;
            CK(cudaGraphInstantiate(&ge_cap, gr2, 0));
            double cap = work(g_p, g_s, ge_cap, 0, OFF);
            cudaGraphExecUpdateResultInfo info;
            CK(cudaGraphExecUpdate(ge, gr, &info));
            double upd = work(g_p, g_s, ge, 0, OFF);
            printf(" never_traced_exec %.2f instantiated_in_window %.2f new_instantiation %.2f new_capture %.2f"
                   " traced_exec_after_update %.2f", never, inwin, fresh, cap, upd);
            CK(cudaGraphExecDestroy(ge_new)); CK(cudaGraphExecDestroy(ge_cap)); CK(cudaGraphDestroy(gr2));
        }
        printf("\n");
        if (v != V_NONE && v != V_UNSUB && v != V_TSONLY) CU(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
        if (v != V_NONE && v != V_TSONLY) record_stats("between", K, OFF);
        fflush(stdout);
    }
    CK(cudaDeviceSynchronize());
    CK(cudaGetLastError());
    printf("variant %s done\n", vnames[v]);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: corr_probe VARIANT [rounds] [nodes]; variants:"); for (int i = 0; i < V_N; i++) fprintf(stderr, " %s", vnames[i]); fprintf(stderr, "\n"); return 2; }
    int v = -1;
    for (int i = 0; i < V_N; i++) if (!strcmp(argv[1], vnames[i])) v = i;
    variant = v;
    if (v < 0) { fprintf(stderr, "corr_probe: variant \"%s\" unknown\n", argv[1]); return 2; }
    int rounds = argc > 2 ? atoi(argv[2]) : 4, nodes = argc > 3 ? atoi(argv[3]) : 400;
    setvbuf(stdout, NULL, _IOLBF, 0);
    signal(SIGSEGV, on_segv);
    if (v == V_GTRACE_EARLY) {   /* before any CUDA call, as an injection library */
        attach(); percbid(1); drvrec(1); graph_trace(1);
        printf("  step: attached, graph-level records on, before the first CUDA call\n");
    }
    const int K = 50, G = 20;
    float *p;
    cudaStream_t s;
    CK(cudaMalloc(&p, 4096));
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaGraph_t gr;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    for (int i = 0; i < nodes; i++) tiny<<<1, 32, 0, s>>>(p);
    CK(cudaStreamEndCapture(s, &gr));
    CK(cudaGraphInstantiate(&ge, gr, 0));
    work(p, s, ge, K, G);
    double base = work(p, s, ge, K, 200);   /* before CUPTI: the graph launch's own cost */
    printf("variant %s nodes %d graph_launch_us_before_cupti %.2f\n", vnames[v], nodes, base);
    if (v >= V_NONE) { g_p = p; g_s = s; g_nodes = nodes; return run_gtrace(v, rounds, gr, ge, base); }
    attach();
    if (v == V_KINDS) CU(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME));
    const bool detaching = v >= V_DETACH && v <= V_DETACH_MT;
    std::atomic<int> mt_stop(0);
    std::atomic<long> mt_n(0);
    std::thread mt;
    if (v == V_DETACH_MT)
        mt = std::thread([&] {
            cudaStream_t s2;
            CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
            while (!mt_stop) {
                for (int i = 0; i < 16; i++) tiny<<<1, 32, 0, s2>>>(p + 512);
                CK(cudaStreamSynchronize(s2));
                mt_n++;
            }
        });
    for (int r = 0; r < rounds; r++) {
        if (detaching && detached && v != V_DETACH_THREAD) { detached = 0; attach(); }
        if (v == V_DETACH_THREAD && detached) {
            /* attach and switch the window on from another thread while this one launches */
            detached = 0;
            std::atomic<int> done(0);
            std::thread t([&] {
                struct timespec ts = { 0, 2000000 };
                nanosleep(&ts, NULL);
                attach();
                percbid(1);
                callbacks(1);
                CU(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
                done = 1;
            });
            int n = 0;
            while (!done || n < 4) {
                CK(cudaGraphLaunch(ge, s));
                tiny<<<1, 32, 0, s>>>(p);
                if (++n % 8 == 0) CK(cudaStreamSynchronize(s));
            }
            t.join();
            CK(cudaDeviceSynchronize());
            CU(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
            { std::lock_guard<std::mutex> l(mu); kcorr.clear(); acorr.clear(); }
            printf("  attached from a second thread during %d graph launches: ok so far\n", n);
            fflush(stdout);
        }
        /* window on */
        if (v == V_PERCBID || v == V_PERCBID_CB || (v == V_APISTAY && r == 0) || detaching) percbid(1);
        if (v == V_PERCBID_CB || (v == V_APISTAY && r == 0) || detaching) callbacks(1);
        if (v == V_KINDRT) CU(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME));
        CU(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
        if (v == V_DETACH_GCAP && r == 0) {   /* the graph replayed from now on is made under CUPTI */
            CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
            for (int i = 0; i < nodes; i++) tiny<<<1, 32, 0, s>>>(p);
            CK(cudaStreamEndCapture(s, &gr));
            CK(cudaGraphInstantiate(&ge, gr, 0));
            printf("  graph captured and instantiated inside the window\n");
        }
        double win = work(p, s, ge, K, G);
        /* window off */
        CU(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
        if (v == V_PERCBID || v == V_PERCBID_CB) percbid(0);
        if (v == V_PERCBID_CB) callbacks(0);
        if (v == V_KINDRT) CU(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_RUNTIME));
        CU(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
        if (detaching) {
            CU(cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API));
            if (v == V_DETACH_BUSY) {
                spin<<<1, 1, 0, s>>>(10000000LL);   /* ~5 ms at 1.98 GHz */
                for (int i = 0; i < 50; i++) tiny<<<1, 32, 0, s>>>(p);
                detach_req = 1;
                tiny<<<1, 32, 0, s>>>(p);   /* its exit detaches, the GPU busy */
                printf("  detached at a launch's exit: stream still busy %s\n", cudaStreamQuery(s) == cudaErrorNotReady ? "yes" : "no");
            } else {
                detach_req = 1;
                CK(cudaDeviceSynchronize());   /* its exit detaches */
            }
        }
        double off = work(p, s, ge, K, 100);
        size_t nk, na, dk, da, orphan = 0;
        {
            std::lock_guard<std::mutex> l(mu);
            std::set<uint32_t> ks(kcorr.begin(), kcorr.end()), as(acorr.begin(), acorr.end());
            for (uint32_t c : ks) orphan += !as.count(c);
            nk = kcorr.size(); na = acorr.size(); dk = ks.size(); da = as.size();
            kcorr.clear(); acorr.clear();
        }
        printf("round %d kernels %zu distinct_kernel_corr %zu (healthy %d) api %zu distinct_api_corr %zu "
               "kernel_ids_without_api %zu graph_launch_us_in_window %.2f between %.2f (before %.2f)%s\n",
               r, nk, dk, K + G, na, da, orphan, win, off, base, detaching ? (detached ? " detached" : " NOT detached") : "");
        fflush(stdout);
    }
    CK(cudaDeviceSynchronize());
    if (v == V_DETACH_MT) { mt_stop = 1; mt.join(); printf("  second thread: %ld rounds of 16 launches\n", (long)mt_n); }
    CK(cudaGetLastError());
    printf("variant %s done\n", vnames[v]);
    return 0;
}
