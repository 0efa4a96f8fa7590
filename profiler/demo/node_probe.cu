/* node_probe.cu: can a CUDA graph's per-node times be measured without CUPTI? (issues 15 and
 * 20, docs/profiler.md "Not done": the second way to a cheap capture that fits alone.)
 *
 * The idea: the interposer, at a graph's instantiation, clones the graph and puts an event
 * record node after every work node (the node's outgoing edges moved onto the event node),
 * plus one root event before the roots; for a graph executable's first replays it launches
 * the instrumented clone instead, and a node's time is its event's time less the latest of
 * its predecessors' events. No CUPTI is ever initialized, so nothing costs per node after.
 * This probe measures, on one GPU, what that design needs to hold:
 *   1. the instrumented replay's GPU span against the original's (the events' own cost, per
 *      node) and the host cost of launching each;
 *   2. each node's time from the events against CUPTI's kernel records of the original graph,
 *      in a second process (mode `cupti`) that initializes CUPTI before building the same graph
 *      (attached late, in the first process, its node ids matched no node: H100 call 32):
 *      per node and as shares of the replay, the way specsim fit uses a reference's node shares
 *      (docs/fit.md 1b); node_probe.sh joins the two by node index;
 *   3. whether every kernel node can be named without CUPTI: cudaFuncGetName for kernels of
 *      this program, cuFuncGetName on the driver node's CUfunction for library kernels
 *      (cuBLAS launches through its own static runtime, not through the shared one).
 * The graph: N work nodes captured on one stream: spin kernels of 1-25 us, memory-bound copies
 * of 64 KB-16 MB, a cuBLAS SGEMM every 40th node (a library kernel), and every 25th node a
 * fork into a second stream (two kernels side by side, joined after), as PyTorch's multi-stream
 * captures have.
 *   usage: node_probe [nodes=400] [replays=200] [events|cupti]   (build: make bin/node_probe)
 * Output: per-node lines ("nodee ..." from the events, "nodec ..." from CUPTI) and summary
 * lines ("sum ..."), joined and parsed by
 * profiler/device/node_probe.sh. */
#include <cuda_runtime.h>
#include <cuda.h>
#include <cublas_v2.h>
#include <cupti.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <string>
#include <vector>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    fprintf(stderr, "node_probe: %s: %s (line %d)\n", #x, cudaGetErrorString(e_), __LINE__); exit(1); } } while (0)
#define CKU(x) do { CUptiResult r_ = (x); if (r_ != CUPTI_SUCCESS) { const char *s_ = "?"; \
    cuptiGetResultString(r_, &s_); fprintf(stderr, "node_probe: %s: %s\n", #x, s_); exit(1); } } while (0)

__global__ void spin(long long cycles, float *sink)
{
    long long t0 = clock64();   /* SM cycles: the caller converts us at the SM clock */
    while (clock64() - t0 < cycles) { }
    if (threadIdx.x == 0 && sink) sink[blockIdx.x] += 1.0f;
}

__global__ void copy(const float4 *a, float4 *b, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        b[i] = a[i];
}

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static double median(std::vector<double> v)
{
    if (v.empty()) return NAN;
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct work { cudaGraph_t graph; int nodes_captured; };

/* The graph: n work nodes on stream s (forks on s2), cuBLAS on s. */
static work capture(int n, cudaStream_t s, cudaStream_t s2, cublasHandle_t blas, float *buf_a, float *buf_b,
                    float *sink, float *ga, float *gb, float *gc, long long cycles_per_us)
{
    static const int spin_us[] = { 1, 3, 8, 2, 25, 5 };
    static const size_t copy_kb[] = { 64, 1024, 16384, 256, 4096 };
    cudaEvent_t fork, join;
    CK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    int made = 0;
    for (int i = 0; made < n; i++) {
        if (i % 40 == 39) {
            const float one = 1.0f, zero = 0.0f;
            cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, 1024, 1024, 1024, &one, ga, 1024, gb, 1024, &zero, gc, 1024);
            made++;
        } else if (i % 25 == 24 && made + 2 <= n) {
            CK(cudaEventRecord(fork, s));
            CK(cudaStreamWaitEvent(s2, fork, 0));
            spin<<<4, 32, 0, s>>>(6 * cycles_per_us, sink);
            spin<<<4, 32, 0, s2>>>(4 * cycles_per_us, sink);
            CK(cudaEventRecord(join, s2));
            CK(cudaStreamWaitEvent(s, join, 0));
            made += 2;
        } else if (i % 3 == 1) {
            size_t n4 = copy_kb[(i / 3) % 5] * 1024 / 16;
            copy<<<264, 256, 0, s>>>((const float4 *)buf_a, (float4 *)buf_b, n4);
            made++;
        } else {
            spin<<<1, 32, 0, s>>>(spin_us[i % 6] * cycles_per_us, sink);
            made++;
        }
    }
    work w;
    CK(cudaStreamEndCapture(s, &w.graph));
    w.nodes_captured = made;
    return w;
}

static bool is_work(cudaGraphNode_t nd)
{
    cudaGraphNodeType t;
    CK(cudaGraphNodeGetType(nd, &t));
    return t == cudaGraphNodeTypeKernel || t == cudaGraphNodeTypeMemcpy || t == cudaGraphNodeTypeMemset;
}

/* A kernel node's name without CUPTI: through the runtime for this program's kernels, the
 * driver's CUfunction for a library's. Returns "" when neither names it. */
static std::string node_name(cudaGraphNode_t nd, int *via_driver)
{
    cudaGraphNodeType t;
    CK(cudaGraphNodeGetType(nd, &t));
    *via_driver = 0;
    if (t == cudaGraphNodeTypeMemcpy) return "(memcpy)";
    if (t == cudaGraphNodeTypeMemset) return "(memset)";
    if (t != cudaGraphNodeTypeKernel) return "";
    CUDA_KERNEL_NODE_PARAMS p;
    memset(&p, 0, sizeof p);
    if (cuGraphKernelNodeGetParams((CUgraphNode)nd, &p) == CUDA_SUCCESS) {
        const char *nm = NULL;
        if (p.func && cuFuncGetName(&nm, p.func) == CUDA_SUCCESS && nm) { *via_driver = 1; return nm; }
        if (p.kern && cuKernelGetName(&nm, p.kern) == CUDA_SUCCESS && nm) { *via_driver = 2; return nm; }
    }
    cudaKernelNodeParams rp;
    memset(&rp, 0, sizeof rp);
    if (cudaGraphKernelNodeGetParams(nd, &rp) == cudaSuccess && rp.func) {
        const char *nm = NULL;
        if (cudaFuncGetName(&nm, rp.func) == cudaSuccess && nm) return nm;
    }
    return "";
}

struct instr {
    cudaGraph_t clone;
    cudaEvent_t root;
    std::vector<cudaGraphNode_t> work;          /* the original graph's work nodes, in order */
    std::vector<cudaEvent_t> ev;                /* ev[i]: after work[i] */
    std::vector<std::vector<int>> preds;        /* work predecessors (indices), through non-work nodes */
};

/* Work predecessors of a node in graph g: its dependencies, walking up through non-work nodes. */
static void work_preds(cudaGraphNode_t nd, const std::map<cudaGraphNode_t, int> &idx, std::vector<int> &out)
{
    size_t k = 0;
    CK(cudaGraphNodeGetDependencies(nd, NULL, NULL, &k));
    std::vector<cudaGraphNode_t> d(k);
    if (k) CK(cudaGraphNodeGetDependencies(nd, d.data(), NULL, &k));
    for (cudaGraphNode_t p : d) {
        auto it = idx.find(p);
        if (it != idx.end()) { if (std::find(out.begin(), out.end(), it->second) == out.end()) out.push_back(it->second); }
        else work_preds(p, idx, out);
    }
}

static instr instrument(cudaGraph_t g)
{
    instr r;
    CK(cudaGraphClone(&r.clone, g));
    size_t n = 0;
    CK(cudaGraphGetNodes(g, NULL, &n));
    std::vector<cudaGraphNode_t> all(n);
    CK(cudaGraphGetNodes(g, all.data(), &n));
    std::map<cudaGraphNode_t, int> idx;             /* clone's work node -> index */
    std::vector<cudaGraphNode_t> cw;
    for (cudaGraphNode_t nd : all) {
        if (!is_work(nd)) continue;
        cudaGraphNode_t c;
        CK(cudaGraphNodeFindInClone(&c, nd, r.clone));
        idx[c] = (int)r.work.size();
        r.work.push_back(nd);
        cw.push_back(c);
    }
    r.preds.resize(cw.size());
    for (size_t i = 0; i < cw.size(); i++) work_preds(cw[i], idx, r.preds[i]);
    /* the root event, before every root of the clone */
    size_t nr = 0;
    CK(cudaGraphGetRootNodes(r.clone, NULL, &nr));
    std::vector<cudaGraphNode_t> roots(nr);
    CK(cudaGraphGetRootNodes(r.clone, roots.data(), &nr));
    CK(cudaEventCreate(&r.root));
    cudaGraphNode_t rootev;
    CK(cudaGraphAddEventRecordNode(&rootev, r.clone, NULL, 0, r.root));
    for (cudaGraphNode_t x : roots) CK(cudaGraphAddDependencies(r.clone, &rootev, &x, NULL, 1));
    /* an event after each work node, its outgoing edges moved onto the event */
    r.ev.resize(cw.size());
    for (size_t i = 0; i < cw.size(); i++) {
        size_t k = 0;
        CK(cudaGraphNodeGetDependentNodes(cw[i], NULL, NULL, &k));
        std::vector<cudaGraphNode_t> outs(k);
        if (k) CK(cudaGraphNodeGetDependentNodes(cw[i], outs.data(), NULL, &k));
        CK(cudaEventCreate(&r.ev[i]));
        cudaGraphNode_t e;
        CK(cudaGraphAddEventRecordNode(&e, r.clone, &cw[i], 1, r.ev[i]));
        for (cudaGraphNode_t o : outs) {
            CK(cudaGraphRemoveDependencies(r.clone, &cw[i], &o, NULL, 1));
            CK(cudaGraphAddDependencies(r.clone, &e, &o, NULL, 1));
        }
    }
    return r;
}

/* CUPTI: kernel records of the original graph's replays, by graph node id. */
static std::map<uint64_t, std::vector<double>> g_cupti_us;
static std::map<uint64_t, std::string> g_cupti_name;   /* kernel name by graph node id */
static size_t g_cupti_records;
static void CUPTIAPI buf_req(uint8_t **b, size_t *sz, size_t *maxr)
{
    *sz = 8 << 20;
    *b = (uint8_t *)aligned_alloc(8, *sz);
    *maxr = 0;
}
static void CUPTIAPI buf_done(CUcontext, uint32_t, uint8_t *b, size_t, size_t valid)
{
    CUpti_Activity *rec = NULL;
    while (cuptiActivityGetNextRecord(b, valid, &rec) == CUPTI_SUCCESS) {
        if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || rec->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
            CUpti_ActivityKernel10 *k = (CUpti_ActivityKernel10 *)rec;
            if (!k->start || k->end < k->start) continue;
            g_cupti_us[k->graphNodeId].push_back((k->end - k->start) / 1e3);
            if (k->graphNodeId && k->name && !g_cupti_name.count(k->graphNodeId)) g_cupti_name[k->graphNodeId] = k->name;
            g_cupti_records++;
        } else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
            CUpti_ActivityMemcpy6 *m = (CUpti_ActivityMemcpy6 *)rec;
            if (!m->start || m->end < m->start) continue;
            g_cupti_us[m->graphNodeId].push_back((m->end - m->start) / 1e3);
            g_cupti_records++;
        }
    }
    free(b);
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 400;
    int reps = argc > 2 ? atoi(argv[2]) : 200;
    /* mode "events" (no CUPTI at all) or "cupti" (CUPTI's kernel and copy records of the
     * original graph, CUPTI initialized before the graph exists: its graph node ids are only
     * those of nodes created after it initialized; attached late, as this probe first did on
     * 2026-12-07, no record matched a node). The graph is the same in both processes (built
     * in the same order), so node i of one is node i of the other: node_probe.sh joins them. */
    const char *mode = argc > 3 ? argv[3] : "events";
    int cupti_mode = !strcmp(mode, "cupti");
    if (n < 4 || n > 20000 || reps < 10 || reps > 100000 || (!cupti_mode && strcmp(mode, "events"))) {
        fprintf(stderr, "usage: node_probe [nodes 4..20000] [replays 10..100000] [events|cupti]\n");
        return 2;
    }
    if (cupti_mode) {
        CKU(cuptiActivityRegisterCallbacks(buf_req, buf_done));
        CKU(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
        CKU(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY));
    }
    CK(cudaSetDevice(0));
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    int clock_khz = 0;
    CK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
    long long cyc_us = clock_khz / 1000;
    printf("device %s clock %d MHz nodes %d replays %d\n", prop.name, clock_khz / 1000, n, reps);
    cudaStream_t s, s2;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    cublasHandle_t blas;
    if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS) { fprintf(stderr, "node_probe: cublasCreate failed\n"); return 1; }
    cublasSetStream(blas, s);
    void *ws;                       /* a workspace of its own: no allocation inside the capture */
    CK(cudaMalloc(&ws, 32 << 20));
    cublasSetWorkspace(blas, ws, 32 << 20);
    float *a, *b, *sink, *ga, *gb, *gc;
    CK(cudaMalloc(&a, 16 << 20));
    CK(cudaMalloc(&b, 16 << 20));
    CK(cudaMalloc(&sink, 4096));
    CK(cudaMalloc(&ga, 4 << 20));
    CK(cudaMalloc(&gb, 4 << 20));
    CK(cudaMalloc(&gc, 4 << 20));
    CK(cudaMemset(a, 0, 16 << 20));
    CK(cudaMemset(ga, 0, 4 << 20));
    CK(cudaMemset(gb, 0, 4 << 20));
    /* warm cuBLAS outside the capture (its workspace) */
    {
        const float one = 1.0f, zero = 0.0f;
        cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, 1024, 1024, 1024, &one, ga, 1024, gb, 1024, &zero, gc, 1024);
        CK(cudaStreamSynchronize(s));
    }
    work w = capture(n, s, s2, blas, a, b, sink, ga, gb, gc, cyc_us);
    instr in = instrument(w.graph);
    int named = 0, named_driver = 0, kernels = 0;
    std::vector<std::string> names(in.work.size());
    for (size_t i = 0; i < in.work.size(); i++) {
        int via = 0;
        names[i] = node_name(in.work[i], &via);
        cudaGraphNodeType t;
        CK(cudaGraphNodeGetType(in.work[i], &t));
        if (t == cudaGraphNodeTypeKernel) { kernels++; if (!names[i].empty()) { named++; if (via) named_driver++; } }
    }
    printf("sum work_nodes %zu kernels %d named %d named_by_driver %d\n", in.work.size(), kernels, named, named_driver);
    cudaGraphExec_t ex, exi;
    double t0 = now_us();
    CK(cudaGraphInstantiate(&ex, w.graph, 0));
    double t1 = now_us();
    CK(cudaGraphInstantiate(&exi, in.clone, 0));
    double t2 = now_us();
    printf("sum instantiate_us original %.0f instrumented %.0f\n", t1 - t0, t2 - t1);
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    if (cupti_mode) {   /* the original graph under CUPTI, per node by graph node id */
        std::vector<double> span_c;
        for (int r = 0; r < reps + 10; r++) {
            CK(cudaEventRecord(e0, s));
            CK(cudaGraphLaunch(ex, s));
            CK(cudaEventRecord(e1, s));
            CK(cudaEventSynchronize(e1));
            float ms = 0;
            CK(cudaEventElapsedTime(&ms, e0, e1));
            if (r >= 10) span_c.push_back(ms * 1e3);
        }
        CK(cudaDeviceSynchronize());
        CKU(cuptiActivityFlushAll(1));
        /* the records' node ids: those of the executable's nodes, not the graph's (H100 call
         * 32: cuptiGetGraphNodeId of the graph's nodes matched none, CUPTI initialized first
         * or not). Nodes are numbered as they are made, and instantiation makes the
         * executable's in the graph's order, so the k-th smallest id seen is work node k when
         * there are as many ids as work nodes; the kernel names say whether that holds. */
        std::vector<uint64_t> ids;
        for (auto &kv : g_cupti_us)
            if (kv.first) ids.push_back(kv.first);
        int by_id = 0, by_order = 0, name_ok = 0, named = 0;
        for (size_t i = 0; i < in.work.size(); i++) {
            uint64_t id = 0;
            if (cuptiGetGraphNodeId((CUgraphNode)in.work[i], &id) == CUPTI_SUCCESS && id && g_cupti_us.count(id))
                by_id++;
            else if (ids.size() == in.work.size())
                id = ids[i], by_order++;
            else
                continue;
            std::vector<double> &v = g_cupti_us[id];
            if (v.size() > 10) v.erase(v.begin(), v.begin() + 10);   /* the warm-up replays */
            if (!names[i].empty() && g_cupti_name.count(id)) {
                named++;
                name_ok += g_cupti_name[id] == names[i] || g_cupti_name[id].find(names[i]) != std::string::npos ||
                           names[i].find(g_cupti_name[id]) != std::string::npos;
            }
            printf("nodec %zu %s cupti_us %.3f\n", i, names[i].empty() ? "-" : names[i].substr(0, 60).c_str(), median(v));
        }
        printf("sum cupti span_us %.2f records %zu ids %zu matched by_id %d by_order %d of %zu names_agree %d of %d\n",
               median(span_c), g_cupti_records, ids.size(), by_id, by_order, in.work.size(), name_ok, named);
        return 0;
    }
    std::vector<double> span_o, span_i, host_o, host_i;
    std::vector<std::vector<double>> node_us(in.work.size());
    for (int w8 = 0; w8 < 10; w8++) { CK(cudaGraphLaunch(ex, s)); CK(cudaGraphLaunch(exi, s)); }
    CK(cudaStreamSynchronize(s));
    /* alternate: original, instrumented; the host waits on each (a decode loop's shape) */
    for (int r = 0; r < reps; r++) {
        for (int which = 0; which < 2; which++) {
            cudaGraphExec_t x = which ? exi : ex;
            CK(cudaEventRecord(e0, s));
            double h0 = now_us();
            CK(cudaGraphLaunch(x, s));
            double h1 = now_us();
            CK(cudaEventRecord(e1, s));
            CK(cudaEventSynchronize(e1));
            float ms = 0;
            CK(cudaEventElapsedTime(&ms, e0, e1));
            (which ? span_i : span_o).push_back(ms * 1e3);
            (which ? host_i : host_o).push_back(h1 - h0);
            if (!which) continue;
            std::vector<double> end(in.work.size());
            for (size_t i = 0; i < in.work.size(); i++) {
                CK(cudaEventElapsedTime(&ms, in.root, in.ev[i]));
                end[i] = ms * 1e3;
            }
            for (size_t i = 0; i < in.work.size(); i++) {
                double st = 0;
                for (int p : in.preds[i]) st = std::max(st, end[p]);
                node_us[i].push_back(end[i] - st);
            }
        }
    }
    double so = median(span_o), si = median(span_i);
    printf("sum span_us original %.2f instrumented %.2f per_node_us %.3f host_launch_us original %.2f instrumented %.2f\n",
           so, si, (si - so) / in.work.size(), median(host_o), median(host_i));
    /* per node from the events (node_probe.sh joins them with the cupti mode's nodec lines) */
    for (size_t i = 0; i < in.work.size(); i++)
        printf("nodee %zu %s events_us %.3f preds %zu\n", i, names[i].empty() ? "-" : names[i].substr(0, 60).c_str(),
               median(node_us[i]), in.preds[i].size());
    return 0;
}
