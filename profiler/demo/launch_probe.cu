// launch_probe.cu: what one kernel launch costs the host, by the kind of kernel, so that the
// same program run with no profiler, under the floor (bin/libfloor.so: CUPTI kernel activity
// only) and under specprof --mode always tells what CUPTI adds per launch of each kind
// (profiler/device/call26.sh, docs/profiler.md). specprof's calibration launches an empty
// kernel without parameters; PyTorch's eager kernels carry hundreds of bytes of parameters and
// are many distinct functions. Kinds, each BATCHES batches of PER launches on one stream (the
// stream synchronized between batches, outside the timed part; PER default 32, well under the
// launch queue's depth, so that the host's cost is timed and not the GPU's: 256 in a row
// filled it, call 26):
//   empty     k_empty(): no parameter
//   p256      a 256-byte parameter block
//   p1k       a 1 KB one
//   p4k       a 4 KB one
//   distinct  64 distinct empty kernels in turn (template instances)
//   runtime   k_empty() with cudaGetDevice and cudaGetLastError before each launch (as PyTorch
//             makes other runtime calls around its launches)
// and three kinds that time each launch on its own (a clock read before and after it), so that
// what happens between launches stays out of the time (call 30):
//   each      k_empty(), back to back (the control for the per-launch timing)
//   spin      k_empty(), then GAP_US of CPU work that touches no memory before the next
//   sweep     k_empty(), then GAP_US of CPU work that reads and writes an 8 MB buffer (as an
//             interpreter between two launches evicts the caches the launch path used): the
//             calibration's swept arm, pcalib_sweep of profiler/inject/pcalib_ptx.h
//   drv       k_empty() through the driver's cuLaunchKernel, back to back (as specprof's
//             calibration launches: the runtime's launch path and its callbacks not taken)
//   drvsweep  the same with the sweep between launches
// usage: launch_probe [BATCHES [PER [GAP_US]]] (GAP_US default 15: torchbench's eager loop launches
// a kernel every ~15 us). Prints one line per kind: "kind NAME median_ns P10 P90" (per launch, over the batches).
#include <cuda_runtime.h>
#include <dlfcn.h>
#include "../inject/pcalib_ptx.h"
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

template <int B> struct Blob { unsigned char b[B]; };
__global__ void k_empty() {}
template <int B> __global__ void k_param(Blob<B> p) { if (p.b[0] == 255 && threadIdx.x == 1024) p.b[1] = 0; }
template <int N> __global__ void k_n() {}

typedef void (*launch_fn)(cudaStream_t, int);
template <int N> static void launch_n(cudaStream_t s, int) { k_n<N><<<1, 32, 0, s>>>(); }
template <int... Ns> struct Table { static constexpr launch_fn f[sizeof...(Ns)] = {launch_n<Ns>...}; };
template <int... Ns> constexpr launch_fn Table<Ns...>::f[sizeof...(Ns)];
typedef Table<0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24,
              25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47,
              48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63> T64;

static double now_ns() {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return 1e9 * (double)t.tv_sec + (double)t.tv_nsec;
}

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_)); exit(1); } } while (0)

int main(int argc, char **argv) {
    int batches = argc > 1 ? atoi(argv[1]) : 200;
    int per = argc > 2 ? atoi(argv[2]) : 32;   /* under the launch queue's depth: the host's cost, not the GPU's */
    if (per < 1 || per > 4096) per = 32;
    double gap_ns = 1000.0 * (argc > 3 ? atof(argv[3]) : 15.0);
    if (!(gap_ns >= 0) || gap_ns > 1e6) gap_ns = 15000.0;
    std::vector<unsigned char> buf(PCALIB_SWEEP_BYTES, 1);
    volatile unsigned sink = 0;
    size_t pos = 0;
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    Blob<256> b256; Blob<1024> b1k; Blob<4096> b4k;
    memset(&b256, 1, sizeof b256); memset(&b1k, 1, sizeof b1k); memset(&b4k, 1, sizeof b4k);
    typedef int (*cu_launch_t)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                               void *, void **, void **);
    void *libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    cu_launch_t cu_launch = libcuda ? (cu_launch_t)dlsym(libcuda, "cuLaunchKernel") : NULL;
    if (!cu_launch) { fprintf(stderr, "cuLaunchKernel not found\n"); exit(1); }
    cudaFunction_t f_empty;
    CK(cudaGetFuncBySymbol(&f_empty, (const void *)k_empty));
    const char *kinds[] = {"empty", "p256", "p1k", "p4k", "distinct", "runtime", "each", "spin", "sweep",
                           "drv", "drvsweep"};
    for (int k = 0; k < 11; k++) {
        std::vector<double> v;
        for (int b = 0; b < batches + 5; b++) {   // the first 5 batches warm up
            if (k >= 6) {   // each launch timed on its own; the work between launches untimed
                double sum = 0;
                for (int i = 0; i < per; i++) {
                    double t0 = now_ns();
                    if (k >= 9) {
                        if (cu_launch((void *)f_empty, 1, 1, 1, 32, 1, 1, 0, (void *)s, NULL, NULL)) {
                            fprintf(stderr, "cuLaunchKernel failed\n");
                            exit(1);
                        }
                    } else {
                        k_empty<<<1, 32, 0, s>>>();
                    }
                    sum += now_ns() - t0;
                    unsigned acc = 0;
                    if (k == 8 || k == 10) {   // the calibration's swept arm (pcalib_ptx.h)
                        acc = pcalib_sweep(buf.data(), &pos, (int64_t)gap_ns, pcalib_now_ns);
                    } else if (k == 7) {
                        double until = now_ns() + gap_ns;
                        while (now_ns() < until)
                            for (int j = 0; j < 64; j++) acc = acc * 1664525u + 1013904223u;
                    }
                    sink = sink + acc;
                }
                CK(cudaStreamSynchronize(s));
                if (b >= 5) v.push_back(sum / per);
                continue;
            }
            double t0 = now_ns();
            for (int i = 0; i < per; i++) {
                switch (k) {
                case 0: k_empty<<<1, 32, 0, s>>>(); break;
                case 1: k_param<256><<<1, 32, 0, s>>>(b256); break;
                case 2: k_param<1024><<<1, 32, 0, s>>>(b1k); break;
                case 3: k_param<4096><<<1, 32, 0, s>>>(b4k); break;
                case 4: T64::f[i & 63](s, i); break;
                case 5: { int d; cudaGetDevice(&d); (void)cudaGetLastError(); k_empty<<<1, 32, 0, s>>>(); } break;
                }
            }
            double t1 = now_ns();
            CK(cudaStreamSynchronize(s));
            if (b >= 5) v.push_back((t1 - t0) / per);
        }
        CK(cudaGetLastError());
        std::sort(v.begin(), v.end());
        size_t n = v.size();
        printf("kind %-9s %8.1f %8.1f %8.1f\n", kinds[k], v[n / 2], v[n / 10], v[n * 9 / 10]);
    }
    return 0;
}
