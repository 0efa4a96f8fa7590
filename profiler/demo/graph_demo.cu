// graph_demo.cu: a small CUDA program for checking specprof on a GPU: two CUDA graphs
// ("draft": 2 kernels, "verify": 3 kernels + a memset + two 1-rank NCCL all-reduces
// captured inside), eager kernels, copies and an eager all-reduce, all under NVTX ranges
// named like a speculative-decoding iteration. It prints what it launched (DEMO_EXPECT, a
// JSON line) so that a trace can be checked against it, count for count.
//   graph_demo [--iters N] [--long-secs S] [--sleep-ms M] [--quiet]
// --long-secs keeps iterating for S seconds (for the signal/kill/window tests);
// --sleep-ms sleeps between iterations (keeps long traces small: ~8 KB per iteration).
// Built with -DDEMO_NO_NCCL where NCCL is missing (then no all-reduces).
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#ifndef DEMO_NO_NCCL
#include <nccl.h>
#endif
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); exit(1); } } while (0)
#ifndef DEMO_NO_NCCL
#define NK(x) do { ncclResult_t r_ = (x); if (r_ != ncclSuccess) { \
    fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, ncclGetErrorString(r_)); exit(1); } } while (0)
#endif

__global__ void k_scale(float *x, int n, float a) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}
__global__ void k_add(float *x, const float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += y[i];
}
__global__ void k_accept(const float *x, int *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && x[i] > 1e30f) atomicAdd(out, 1);
}

int main(int argc, char **argv) {
    int iters = 20;
    double long_secs = 0;
    int quiet = 0, sleep_ms = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--long-secs") && i + 1 < argc) long_secs = atof(argv[++i]);
        else if (!strcmp(argv[i], "--sleep-ms") && i + 1 < argc) sleep_ms = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--quiet")) quiet = 1;
        else { fprintf(stderr, "usage: graph_demo [--iters N] [--long-secs S] [--sleep-ms M] [--quiet]\n"); return 2; }
    }
    const int n = 1 << 20, threads = 256, blocks = (n + threads - 1) / threads;
    // 7168 = Kimi K2.5 hidden size; x 4 tokens: a decode-sized all-reduce
    const size_t ar_count = 7168 * 4, ar_small = 1024;
    (void)ar_small;
    long user_kernels = 0, memsets = 0, memcpys = 0, graph_launches = 0, nccl_eager = 0, nccl_captured = 0, ranges = 0;

    nvtxRangePushA("setup");
    CK(cudaSetDevice(0));
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    float *x, *y, *ar_in, *ar_out;
    int *cnt, host_cnt = 0;
    CK(cudaMalloc(&x, n * sizeof(float)));
    CK(cudaMalloc(&y, n * sizeof(float)));
    CK(cudaMalloc(&ar_in, ar_count * sizeof(float)));
    CK(cudaMalloc(&ar_out, ar_count * sizeof(float)));
    CK(cudaMalloc(&cnt, sizeof(int)));
    CK(cudaMemsetAsync(x, 0, n * sizeof(float), s)); memsets++;
    CK(cudaMemsetAsync(y, 0, n * sizeof(float), s)); memsets++;
    CK(cudaMemsetAsync(ar_in, 0, ar_count * sizeof(float), s)); memsets++;
    k_scale<<<blocks, threads, 0, s>>>(x, n, 1.0f); user_kernels++;
    CK(cudaGetLastError());
#ifndef DEMO_NO_NCCL
    ncclComm_t comm;
    int dev0 = 0, nccl_version = 0;
    NK(ncclCommInitAll(&comm, 1, &dev0));
    NK(ncclGetVersion(&nccl_version));
    NK(ncclAllReduce(ar_in, ar_out, ar_count, ncclFloat32, ncclSum, comm, s)); nccl_eager++;   // warm-up
#endif
    CK(cudaStreamSynchronize(s));
    nvtxRangePop(); ranges++;

    // graph "draft": 2 kernels
    cudaGraph_t g_draft, g_verify;
    cudaGraphExec_t e_draft, e_verify;
    const int draft_kernels = 2, verify_kernels = 3;
    nvtxRangePushA("capture");
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    k_scale<<<blocks, threads, 0, s>>>(x, n, 0.5f);
    k_add<<<blocks, threads, 0, s>>>(x, y, n);
    CK(cudaStreamEndCapture(s, &g_draft));
    CK(cudaGraphInstantiate(&e_draft, g_draft, 0));
    // graph "verify": 3 kernels, a memset node and two all-reduces captured
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    k_scale<<<blocks, threads, 0, s>>>(x, n, 1.01f);
    CK(cudaMemsetAsync(cnt, 0, sizeof(int), s));
#ifndef DEMO_NO_NCCL
    NK(ncclAllReduce(ar_in, ar_out, ar_count, ncclFloat32, ncclSum, comm, s)); nccl_captured++;
    NK(ncclAllReduce(ar_out, ar_out, ar_small, ncclBfloat16, ncclAvg, comm, s)); nccl_captured++;
#endif
    k_add<<<blocks, threads, 0, s>>>(x, y, n);
    k_scale<<<blocks, threads, 0, s>>>(x, n, 0.99f);
    CK(cudaStreamEndCapture(s, &g_verify));
    CK(cudaGraphInstantiate(&e_verify, g_verify, 0));
    nvtxRangePop(); ranges++;
    size_t n_draft = 0, n_verify = 0;
    CK(cudaGraphGetNodes(g_draft, nullptr, &n_draft));
    CK(cudaGraphGetNodes(g_verify, nullptr, &n_verify));

    auto t_start = std::chrono::steady_clock::now();
    long it = 0;
    for (;; it++) {
        if (long_secs > 0) {
            double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
            if (el >= long_secs) break;
        } else if (it >= iters) break;
        nvtxRangePushA("draft steps=3 bs=4 tokens=4 graph=1");
        CK(cudaGraphLaunch(e_draft, s)); graph_launches++;
        CK(cudaGraphLaunch(e_draft, s)); graph_launches++;
        nvtxRangePop(); ranges++;
        nvtxRangePushA("verify bs=4 tokens=16 rows=4 graph=1");
        CK(cudaGraphLaunch(e_verify, s)); graph_launches++;
        nvtxRangePop(); ranges++;
        nvtxRangePushA("accept bs=4");
        k_accept<<<blocks, threads, 0, s>>>(x, cnt, n); user_kernels++;
        CK(cudaGetLastError());
        CK(cudaMemcpyAsync(&host_cnt, cnt, sizeof(int), cudaMemcpyDeviceToHost, s)); memcpys++;
#ifndef DEMO_NO_NCCL
        NK(ncclAllReduce(ar_in, ar_out, ar_small, ncclFloat32, ncclSum, comm, s)); nccl_eager++;
#endif
        CK(cudaStreamSynchronize(s));
        nvtxRangePop(); ranges++;
        if (sleep_ms > 0) usleep((useconds_t)sleep_ms * 1000);
        if (long_secs > 0 && !quiet && it % 100 == 0) { printf("graph_demo: iteration %ld\n", it); fflush(stdout); }
    }
    CK(cudaDeviceSynchronize());
    long draft_replays = 2 * it, verify_replays = it;
    long graph_kernels = draft_replays * draft_kernels + verify_replays * verify_kernels;
    if (!quiet)
        printf("graph_demo: %ld iterations; graph nodes draft %zu verify %zu\n", it, n_draft, n_verify);
    // what the trace must show, count for count (NCCL's own GPU work is reported apart:
    // on one rank NCCL copies or launches a small kernel, its choice)
    printf("DEMO_EXPECT {\"iters\":%ld,\"user_kernels_eager\":%ld,\"graph_kernels\":%ld,\"draft_kernels\":%d,"
           "\"verify_kernels\":%d,\"draft_replays\":%ld,\"verify_replays\":%ld,\"graph_launches\":%ld,"
           "\"memsets_eager\":%ld,\"memset_nodes_replayed\":%ld,\"memcpys_user\":%ld,\"nccl_eager\":%ld,"
           "\"nccl_captured\":%ld,\"nvtx_ranges\":%ld,\"graph_nodes_draft\":%zu,\"graph_nodes_verify\":%zu,"
           "\"nccl\":%s}\n",
           it, user_kernels, graph_kernels, draft_kernels, verify_kernels, draft_replays, verify_replays,
           graph_launches, memsets, verify_replays, memcpys, nccl_eager, nccl_captured, ranges, n_draft, n_verify,
#ifndef DEMO_NO_NCCL
           "true"
#else
           "false"
#endif
    );
    fflush(stdout);
#ifndef DEMO_NO_NCCL
    ncclCommDestroy(comm);
#endif
    CK(cudaGraphExecDestroy(e_draft));
    CK(cudaGraphExecDestroy(e_verify));
    CK(cudaGraphDestroy(g_draft));
    CK(cudaGraphDestroy(g_verify));
    cudaFree(x); cudaFree(y); cudaFree(ar_in); cudaFree(ar_out); cudaFree(cnt);
    return 0;
}
