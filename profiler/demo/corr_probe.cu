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
               V_DETACH_GCAP, V_DETACH_BUSY, V_DETACH_MT, V_N };
static const char *vnames[] = { "kinds", "percbid", "percbid_cb", "apistay", "kindrt", "detach", "detach_v2", "detach_thread",
                                "detach_gcap", "detach_busy", "detach_mt" };
static int variant;

static std::mutex mu;
static std::vector<uint32_t> kcorr, acorr;
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
        if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) kcorr.push_back(((CUpti_ActivityKernel9 *)r)->correlationId);
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

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: corr_probe kinds|percbid|percbid_cb|apistay|kindrt|detach|detach_v2|detach_thread|detach_gcap|detach_busy|detach_mt [rounds] [nodes]\n"); return 2; }
    int v = -1;
    for (int i = 0; i < V_N; i++) if (!strcmp(argv[1], vnames[i])) v = i;
    variant = v;
    if (v < 0) { fprintf(stderr, "corr_probe: variant \"%s\" unknown\n", argv[1]); return 2; }
    int rounds = argc > 2 ? atoi(argv[2]) : 4, nodes = argc > 3 ? atoi(argv[3]) : 400;
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
