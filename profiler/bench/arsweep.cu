/* arsweep: NCCL all-reduce time vs message size on the GPUs of one host, in the spirit of
 * nccl-tests' all_reduce_perf: one process, one thread per GPU (ncclCommInitAll), sizes
 * doubling from --min-bytes to --max-bytes, eager launches and (--graph) many all-reduces
 * captured in one CUDA graph, as a decode step runs them. Its CSV is what
 * `specsim fit-allreduce` fits the link model of models/allreduce.c to (docs/allreduce.md,
 * docs/multigpu.md). Workload: 1..8 GPUs, 1 KB..256 MB, tens of iterations per size. */
#include "sbcheck.h"
#include <cuda_bf16.h>
#include <getopt.h>
#include <pthread.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#ifdef SB_NO_NCCL
#error "arsweep needs NCCL: profiler/bench/nccl_flags.sh found none (see its header)"
#endif

#define AR_VERSION "1.0"
#define AR_EXIT_BAD 2          /* bad command line or environment */
#define AR_CSV_HEADER "gpus,env,mode,bytes,time_us_median,time_us_min,time_us_max," \
                      "algbw_gbps,busbw_gbps,dtype,count,iters,errors"

extern char **environ;

/* ---- options ------------------------------------------------------------------------- */

typedef struct {
    int    gpus;                 /* 0: every visible GPU */
    size_t min_bytes, max_bytes;
    std::vector<ncclDataType_t> dtypes;
    int    warmup, iters;        /* eager: launches before timing, timed launches */
    int    graph;                /* also time all-reduces captured in a CUDA graph */
    int    graph_ops;            /* all-reduces per graph */
    int    graph_iters;          /* timed graph launches */
    const char *csv;
    int    quiet;
} ar_opts;

static void ar_usage(FILE *f) {
    fprintf(f,
"usage: arsweep [options]\n"
"  NCCL all-reduce sweep: one thread per GPU, sizes doubling from --min-bytes to\n"
"  --max-bytes; prints a table (# header, units row) and appends --csv rows.\n"
"  --gpus N            GPUs (ranks) to use, 0..N-1 of CUDA_VISIBLE_DEVICES (default all)\n"
"  --min-bytes B       smallest message (default 1K; suffixes K, M, G = 2^10, 2^20, 2^30)\n"
"  --max-bytes B       largest message (default 256M)\n"
"  --dtype LIST        bf16, float or bf16,float (default bf16)\n"
"  --warmup N          eager launches before timing, per size (default 5)\n"
"  --iters N           timed eager launches per size (default 20)\n"
"  --graph             also time all-reduces captured in a CUDA graph (after all eager sizes)\n"
"  --graph-ops K       all-reduces in one graph (default 16)\n"
"  --graph-iters N     timed graph launches per size (default 10)\n"
"  --csv FILE          append one row per (dtype, mode, size); header when the file is new:\n"
"                      " AR_CSV_HEADER "\n"
"  --quiet             only the table\n"
"  NCCL_NVLS_ENABLE must be 0 or unset (then it is set to 0): NVLink multicast is off on\n"
"  the shared GPU machines. Every other NCCL_* variable is honoured and recorded in the\n"
"  env column. Exit: 0 ok, 1 a CUDA/NCCL error or a wrong all-reduce result, 2 bad input.\n");
}

static long ar_parse_long(const char *opt, const char *s, long lo, long hi) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) {
        fprintf(stderr, "arsweep: %s: value \"%s\": expected an integer in [%ld, %ld]\n", opt, s,
                lo, hi);
        exit(AR_EXIT_BAD);
    }
    return v;
}

/* "1024", "1K", "256M", "1G" -> bytes (binary suffixes, as nccl-tests' -b/-e) */
static size_t ar_parse_bytes(const char *opt, const char *s) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    unsigned long long mul = 1;
    if (end != s && *end) {
        switch (*end) {
        case 'K': case 'k': mul = 1ull << 10; break;
        case 'M': case 'm': mul = 1ull << 20; break;
        case 'G': case 'g': mul = 1ull << 30; break;
        default: mul = 0;
        }
        if (mul && end[1] != '\0' && !((end[1] == 'B' || end[1] == 'b') && end[2] == '\0'))
            mul = 0;
    }
    if (errno || end == s || s[0] == '-' || mul == 0 || v == 0 || v > (1ull << 40) / mul) {
        fprintf(stderr, "arsweep: %s: value \"%s\": expected a size in bytes > 0 (suffix K, "
                "M or G), at most 1 TiB\n", opt, s);
        exit(AR_EXIT_BAD);
    }
    return (size_t)(v * mul);
}

static size_t ar_dtype_bytes(ncclDataType_t t) { return t == ncclBfloat16 ? 2 : 4; }
static const char *ar_dtype_name(ncclDataType_t t) { return t == ncclBfloat16 ? "bf16" : "float"; }

static void ar_parse_dtypes(const char *s, std::vector<ncclDataType_t> *out) {
    out->clear();
    std::string all(s);
    size_t p = 0;
    for (;;) {
        size_t c = all.find(',', p);
        std::string w = all.substr(p, c == std::string::npos ? std::string::npos : c - p);
        if (w == "bf16") out->push_back(ncclBfloat16);
        else if (w == "float" || w == "fp32") out->push_back(ncclFloat32);
        else {
            fprintf(stderr, "arsweep: --dtype: value \"%s\": expected bf16, float or "
                    "bf16,float\n", w.c_str());
            exit(AR_EXIT_BAD);
        }
        if (c == std::string::npos) break;
        p = c + 1;
    }
}

/* The NCCL_* settings of the environment, sorted, ';'-joined, commas turned into '+' so
 * that the CSV needs no quoting; "default" when there are none. NCCL_NVLS_ENABLE (always 0
 * here) and the logging variables NCCL_DEBUG* are left out: they do not change the
 * algorithm. */
static std::string ar_env_string(void) {
    std::vector<std::string> v;
    for (char **e = environ; *e; e++) {
        if (strncmp(*e, "NCCL_", 5) != 0) continue;
        if (strncmp(*e, "NCCL_NVLS_ENABLE=", 17) == 0 || strncmp(*e, "NCCL_DEBUG", 10) == 0)
            continue;
        std::string s(*e);
        std::replace(s.begin(), s.end(), ',', '+');
        std::replace(s.begin(), s.end(), '\n', ' ');
        v.push_back(s);
    }
    std::sort(v.begin(), v.end());
    std::string out;
    for (size_t i = 0; i < v.size(); i++) out += (i ? ";" : "") + v[i];
    return out.empty() ? "default" : out;
}

/* ---- GPU side: known per-rank values and a check of the sum ------------------------------ */

/* Rank r holds ((i + r) % 3) + 1 at element i: every partial sum is an integer <= 3 * ranks,
 * exact in bf16 (8 significant bits) for ranks <= 85, whatever order NCCL adds in. */
template <typename T> __device__ T ar_from_float(float v);
template <> __device__ float ar_from_float<float>(float v) { return v; }
template <> __device__ __nv_bfloat16 ar_from_float<__nv_bfloat16>(float v) { return __float2bfloat16(v); }
__device__ float ar_to_float(float v) { return v; }
__device__ float ar_to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T>
__global__ void ar_fill(T *p, size_t n, int rank) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = ar_from_float<T>((float)((i + (size_t)rank) % 3 + 1));
}

template <typename T>
__global__ void ar_check(const T *p, size_t n, int ranks, unsigned long long *bad) {
    unsigned long long mine = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float want = 0;
        for (int r = 0; r < ranks; r++) want += (float)((i + (size_t)r) % 3 + 1);
        if (ar_to_float(p[i]) != want) mine++;     /* NaN (the poison) counts as wrong */
    }
    if (mine) atomicAdd(bad, mine);
}

static int ar_blocks(size_t n) {
    size_t b = (n + 255) / 256;
    return (int)std::max<size_t>(1, std::min<size_t>(b, 4096));
}

static void ar_fill_launch(void *p, size_t n, ncclDataType_t t, int rank, cudaStream_t s) {
    if (t == ncclBfloat16) ar_fill<<<ar_blocks(n), 256, 0, s>>>((__nv_bfloat16 *)p, n, rank);
    else ar_fill<<<ar_blocks(n), 256, 0, s>>>((float *)p, n, rank);
    CK_LAUNCH();
}

static void ar_check_launch(const void *p, size_t n, ncclDataType_t t, int ranks,
                            unsigned long long *bad, cudaStream_t s) {
    if (t == ncclBfloat16) ar_check<<<ar_blocks(n), 256, 0, s>>>((const __nv_bfloat16 *)p, n, ranks, bad);
    else ar_check<<<ar_blocks(n), 256, 0, s>>>((const float *)p, n, ranks, bad);
    CK_LAUNCH();
}

/* ---- the sweep --------------------------------------------------------------------------- */

typedef struct {
    int          dev;
    ncclComm_t   comm;
    cudaStream_t stream;
    void        *send, *recv;
    unsigned long long *bad_dev;     /* mismatches of the last check */
    std::vector<cudaEvent_t> ev;     /* iters + 1 */
    std::vector<double> us;          /* per timed iteration, per all-reduce */
    unsigned long long bad;
} ar_rank;

typedef struct {
    const ar_opts *o;
    int            n;
    std::vector<ar_rank> *ranks;
    pthread_barrier_t barrier;
    std::string    env;
    FILE          *csv;
    int            errors;           /* sizes with a wrong result (thread 0 only) */
} ar_sweep;

static void ar_wait(ar_sweep *s) {
    int rc = pthread_barrier_wait(&s->barrier);
    SB_REQUIRE(rc == 0 || rc == PTHREAD_BARRIER_SERIAL_THREAD, "pthread_barrier_wait: %d", rc);
}

/* Thread 0, between barriers: per iteration the slowest rank (the collective ends when the
 * last rank is done; in steady state the ranks move in lock step), then median, min, max. */
static void ar_report(ar_sweep *s, const char *mode, ncclDataType_t t, size_t bytes, int iters) {
    std::vector<ar_rank> &R = *s->ranks;
    std::vector<double> it(iters, 0.0);
    unsigned long long bad = 0;
    for (int r = 0; r < s->n; r++) {
        bad += R[r].bad;
        for (int i = 0; i < iters; i++) it[i] = std::max(it[i], R[r].us[i]);
    }
    std::sort(it.begin(), it.end());
    double med = iters % 2 ? it[iters / 2] : 0.5 * (it[iters / 2 - 1] + it[iters / 2]);
    double algbw = (double)bytes / (med * 1e3);                 /* GB/s: 1 GB/s = 1e3 B/us */
    double busbw = algbw * 2.0 * (s->n - 1) / s->n;             /* nccl-tests PERFORMANCE.md */
    size_t count = bytes / ar_dtype_bytes(t);
    printf("%12zu %11zu %6s %6s %10.2f %10.2f %10.2f %8.2f %8.2f %7llu\n", bytes, count,
           ar_dtype_name(t), mode, med, it[0], it[iters - 1], algbw, busbw, bad);
    fflush(stdout);
    if (s->csv) {
        fprintf(s->csv, "%d,%s,%s,%zu,%.3f,%.3f,%.3f,%.4f,%.4f,%s,%zu,%d,%llu\n", s->n,
                s->env.c_str(), mode, bytes, med, it[0], it[iters - 1], algbw, busbw,
                ar_dtype_name(t), count, iters, bad);
        fflush(s->csv);
    }
    if (bad) {
        fprintf(stderr, "arsweep: %s %s %zu bytes: %llu elements differ from the expected sum "
                "over %d ranks\n", mode, ar_dtype_name(t), bytes, bad, s->n);
        s->errors++;
    }
}

/* Poisons recv (NaN in both dtypes), runs `once` (one all-reduce or one graph launch), and
 * counts the elements that are not the expected sum. */
template <typename F>
static void ar_verify(ar_rank *k, size_t bytes, ncclDataType_t t, int n, F once) {
    size_t count = bytes / ar_dtype_bytes(t);
    CK_CUDA(cudaMemsetAsync(k->recv, 0xff, bytes, k->stream));
    once();
    CK_CUDA(cudaMemsetAsync(k->bad_dev, 0, sizeof *k->bad_dev, k->stream));
    ar_check_launch(k->recv, count, t, n, k->bad_dev, k->stream);
    CK_CUDA(cudaMemcpyAsync(&k->bad, k->bad_dev, sizeof k->bad, cudaMemcpyDeviceToHost, k->stream));
    CK_CUDA(cudaStreamSynchronize(k->stream));
}

static void ar_eager(ar_sweep *s, int r, ncclDataType_t t, size_t bytes) {
    const ar_opts *o = s->o;
    ar_rank *k = &(*s->ranks)[r];
    size_t count = bytes / ar_dtype_bytes(t);
    for (int i = 0; i < o->warmup; i++)
        CK_NCCL(ncclAllReduce(k->send, k->recv, count, t, ncclSum, k->comm, k->stream));
    CK_CUDA(cudaStreamSynchronize(k->stream));
    ar_wait(s);                                   /* all ranks start the timed loop together */
    CK_CUDA(cudaEventRecord(k->ev[0], k->stream));
    for (int i = 0; i < o->iters; i++) {
        CK_NCCL(ncclAllReduce(k->send, k->recv, count, t, ncclSum, k->comm, k->stream));
        CK_CUDA(cudaEventRecord(k->ev[i + 1], k->stream));
    }
    CK_CUDA(cudaStreamSynchronize(k->stream));
    for (int i = 0; i < o->iters; i++) {
        float ms;
        CK_CUDA(cudaEventElapsedTime(&ms, k->ev[i], k->ev[i + 1]));
        k->us[i] = ms * 1e3;
    }
    ar_wait(s);
    ar_verify(k, bytes, t, s->n, [&] {
        CK_NCCL(ncclAllReduce(k->send, k->recv, count, t, ncclSum, k->comm, k->stream));
    });
    ar_wait(s);
    if (r == 0) ar_report(s, "eager", t, bytes, o->iters);
    ar_wait(s);
}

static void ar_graph(ar_sweep *s, int r, ncclDataType_t t, size_t bytes) {
    const ar_opts *o = s->o;
    ar_rank *k = &(*s->ranks)[r];
    size_t count = bytes / ar_dtype_bytes(t);
    cudaGraph_t g;
    cudaGraphExec_t ex;
    /* one thread per GPU captures its own stream: thread-local capture mode, as specbench */
    CK_CUDA(cudaStreamBeginCapture(k->stream, cudaStreamCaptureModeThreadLocal));
    for (int j = 0; j < o->graph_ops; j++)
        CK_NCCL(ncclAllReduce(k->send, k->recv, count, t, ncclSum, k->comm, k->stream));
    CK_CUDA(cudaStreamEndCapture(k->stream, &g));
    CK_CUDA(cudaGraphInstantiate(&ex, g, 0));
    CK_CUDA(cudaGraphUpload(ex, k->stream));
    ar_wait(s);
    for (int i = 0; i < 2; i++) CK_CUDA(cudaGraphLaunch(ex, k->stream));   /* warm-up */
    CK_CUDA(cudaStreamSynchronize(k->stream));
    ar_wait(s);
    CK_CUDA(cudaEventRecord(k->ev[0], k->stream));
    for (int i = 0; i < o->graph_iters; i++) {
        CK_CUDA(cudaGraphLaunch(ex, k->stream));
        CK_CUDA(cudaEventRecord(k->ev[i + 1], k->stream));
    }
    CK_CUDA(cudaStreamSynchronize(k->stream));
    for (int i = 0; i < o->graph_iters; i++) {
        float ms;
        CK_CUDA(cudaEventElapsedTime(&ms, k->ev[i], k->ev[i + 1]));
        k->us[i] = ms * 1e3 / o->graph_ops;
    }
    ar_wait(s);
    ar_verify(k, bytes, t, s->n, [&] { CK_CUDA(cudaGraphLaunch(ex, k->stream)); });
    CK_CUDA(cudaGraphExecDestroy(ex));
    CK_CUDA(cudaGraphDestroy(g));
    ar_wait(s);
    if (r == 0) ar_report(s, "graph", t, bytes, o->graph_iters);
    ar_wait(s);
}

static void ar_header_row(void) {
    printf("#%11s %11s %6s %6s %10s %10s %10s %8s %8s %7s\n", "size_bytes", "count", "dtype",
           "mode", "time_us", "min_us", "max_us", "algbw", "busbw", "errors");
    printf("#%11s %11s %6s %6s %10s %10s %10s %8s %8s %7s\n", "(B)", "(elems)", "", "",
           "(median)", "(us)", "(us)", "(GB/s)", "(GB/s)", "(elems)");
}

static void ar_thread(ar_sweep *s, int r) {
    const ar_opts *o = s->o;
    ar_rank *k = &(*s->ranks)[r];
    CK_CUDA(cudaSetDevice(k->dev));
    for (ncclDataType_t t : o->dtypes) {
        ar_fill_launch(k->send, o->max_bytes / ar_dtype_bytes(t), t, r, k->stream);
        CK_CUDA(cudaStreamSynchronize(k->stream));
        for (int mode = 0; mode < (o->graph ? 2 : 1); mode++) {
            if (r == 0) ar_header_row();
            for (size_t b = o->min_bytes; b <= o->max_bytes; b *= 2) {
                if (mode == 0) ar_eager(s, r, t, b);
                else ar_graph(s, r, t, b);
                if (b > o->max_bytes / 2) break;                 /* no overflow past max */
            }
        }
    }
}

/* The machines' rule (/work/.library/device/KINDS.md): NVLink multicast (NVLS) can put the
 * host's shared GPUs out of service, so NCCL_NVLS_ENABLE must be 0. Unset: set it to 0
 * before NCCL reads it (at ncclCommInitAll). Anything else: refuse. */
static void ar_nvls_rule(int quiet) {
    const char *v = getenv("NCCL_NVLS_ENABLE");
    if (v == NULL) {
        setenv("NCCL_NVLS_ENABLE", "0", 1);
        if (!quiet)
            printf("# NCCL_NVLS_ENABLE was unset: set to 0 (NVLink multicast stays off)\n");
        return;
    }
    if (strcmp(v, "0") != 0) {
        fprintf(stderr, "arsweep: environment NCCL_NVLS_ENABLE: value \"%s\": must be 0. The "
                "GPU machines forbid NVLink multicast (NVLS): a program that uses it can put "
                "the host's shared GPUs out of service. Unset it or export "
                "NCCL_NVLS_ENABLE=0.\n", v);
        exit(AR_EXIT_BAD);
    }
}

int main(int argc, char **argv) {
    ar_opts o;
    o.gpus = 0;
    o.min_bytes = 1 << 10;
    o.max_bytes = 256u << 20;
    o.dtypes = {ncclBfloat16};
    o.warmup = 5;
    o.iters = 20;
    o.graph = 0;
    o.graph_ops = 16;
    o.graph_iters = 10;
    o.csv = NULL;
    o.quiet = 0;
    enum { O_GPUS = 300, O_MIN, O_MAX, O_DTYPE, O_WARMUP, O_ITERS, O_GRAPH, O_GOPS, O_GITERS,
           O_CSV, O_QUIET, O_HELP };
    static const struct option lo[] = {
        {"gpus", 1, 0, O_GPUS}, {"min-bytes", 1, 0, O_MIN}, {"max-bytes", 1, 0, O_MAX},
        {"dtype", 1, 0, O_DTYPE}, {"warmup", 1, 0, O_WARMUP}, {"iters", 1, 0, O_ITERS},
        {"graph", 0, 0, O_GRAPH}, {"graph-ops", 1, 0, O_GOPS}, {"graph-iters", 1, 0, O_GITERS},
        {"csv", 1, 0, O_CSV}, {"quiet", 0, 0, O_QUIET}, {"help", 0, 0, O_HELP}, {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        switch (c) {
        case O_GPUS: o.gpus = (int)ar_parse_long("--gpus", optarg, 1, 64); break;
        case O_MIN: o.min_bytes = ar_parse_bytes("--min-bytes", optarg); break;
        case O_MAX: o.max_bytes = ar_parse_bytes("--max-bytes", optarg); break;
        case O_DTYPE: ar_parse_dtypes(optarg, &o.dtypes); break;
        case O_WARMUP: o.warmup = (int)ar_parse_long("--warmup", optarg, 0, 100000); break;
        case O_ITERS: o.iters = (int)ar_parse_long("--iters", optarg, 1, 100000); break;
        case O_GRAPH: o.graph = 1; break;
        case O_GOPS: o.graph_ops = (int)ar_parse_long("--graph-ops", optarg, 1, 4096); break;
        case O_GITERS: o.graph_iters = (int)ar_parse_long("--graph-iters", optarg, 1, 100000); break;
        case O_CSV: o.csv = optarg; break;
        case O_QUIET: o.quiet = 1; break;
        case O_HELP: case 'h': ar_usage(stdout); return 0;
        default: ar_usage(stderr); return AR_EXIT_BAD;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "arsweep: argument \"%s\": no positional arguments (see --help)\n",
                argv[optind]);
        return AR_EXIT_BAD;
    }
    if (o.min_bytes > o.max_bytes) {
        fprintf(stderr, "arsweep: --min-bytes %zu > --max-bytes %zu\n", o.min_bytes, o.max_bytes);
        return AR_EXIT_BAD;
    }
    for (ncclDataType_t t : o.dtypes)
        if (o.min_bytes % ar_dtype_bytes(t)) {
            fprintf(stderr, "arsweep: --min-bytes: value %zu: not a multiple of the %s element "
                    "size (%zu B)\n", o.min_bytes, ar_dtype_name(t), ar_dtype_bytes(t));
            return AR_EXIT_BAD;
        }
    ar_nvls_rule(o.quiet);

    int visible = 0;
    CK_CUDA(cudaGetDeviceCount(&visible));
    int n = o.gpus ? o.gpus : visible;
    if (n > visible) {
        fprintf(stderr, "arsweep: --gpus: value %d: only %d GPU(s) visible "
                "(CUDA_VISIBLE_DEVICES=%s)\n", n, visible,
                getenv("CUDA_VISIBLE_DEVICES") ? getenv("CUDA_VISIBLE_DEVICES") : "unset");
        return AR_EXIT_BAD;
    }

    FILE *csv = NULL;
    if (o.csv) {
        FILE *old = fopen(o.csv, "r");
        int fresh = 1;
        if (old) {
            char line[512] = "";
            if (fgets(line, sizeof line, old) && line[0]) {
                fresh = 0;
                line[strcspn(line, "\r\n")] = '\0';
                if (strcmp(line, AR_CSV_HEADER) != 0) {
                    fprintf(stderr, "arsweep: %s: line 1: header \"%.80s\": not arsweep's "
                            "(%s); give a new file\n", o.csv, line, AR_CSV_HEADER);
                    fclose(old);
                    return AR_EXIT_BAD;
                }
            }
            fclose(old);
        }
        csv = fopen(o.csv, "a");
        if (!csv) {
            fprintf(stderr, "arsweep: %s: cannot open for appending: %s\n", o.csv, strerror(errno));
            return 1;
        }
        if (fresh) fprintf(csv, "%s\n", AR_CSV_HEADER);
    }

    int nccl_ver = 0, rt_ver = 0, drv_ver = 0;
    CK_NCCL(ncclGetVersion(&nccl_ver));
    CK_CUDA(cudaRuntimeGetVersion(&rt_ver));
    CK_CUDA(cudaDriverGetVersion(&drv_ver));
    std::string env = ar_env_string();
    if (!o.quiet) {
        printf("# arsweep %s: NCCL all-reduce (sum), %d rank(s), one thread per GPU\n",
               AR_VERSION, n);
        printf("# NCCL %d, CUDA runtime %d, driver %d; env: %s; NCCL_NVLS_ENABLE=%s\n",
               nccl_ver, rt_ver, drv_ver, env.c_str(), getenv("NCCL_NVLS_ENABLE"));
        for (int d = 0; d < n; d++) {
            cudaDeviceProp p;
            CK_CUDA(cudaGetDeviceProperties(&p, d));
            char bus[32];
            CK_CUDA(cudaDeviceGetPCIBusId(bus, sizeof bus, d));
            printf("# rank %d: GPU %d %s, %d SMs, %.1f GB, PCI %s\n", d, d, p.name,
                   p.multiProcessorCount, p.totalGlobalMem / 1e9, bus);
        }
        if (n > 1) {
            printf("# peer access (row can access column):");
            for (int a = 0; a < n; a++) {
                printf("\n#   %d:", a);
                for (int b = 0; b < n; b++) {
                    int acc = 0;
                    if (a != b) CK_CUDA(cudaDeviceCanAccessPeer(&acc, a, b));
                    printf(" %c", a == b ? '-' : acc ? 'y' : 'n');
                }
            }
            printf("\n");
        }
        printf("# sizes %zu..%zu B doubling; eager: %d warm-up + %d timed launches", o.min_bytes,
               o.max_bytes, o.warmup, o.iters);
        if (o.graph)
            printf("; graph: %d all-reduces per graph, 2 warm-up + %d timed launches",
                   o.graph_ops, o.graph_iters);
        printf("\n# time per all-reduce from CUDA events between consecutive launches, the "
               "slowest rank per iteration; median, min, max over iterations\n"
               "# algbw = bytes / time; busbw = algbw * 2(N-1)/N (nccl-tests); errors: "
               "elements != the expected sum\n");
        fflush(stdout);
    }

    std::vector<ar_rank> ranks(n);
    std::vector<ncclComm_t> comms(n);
    std::vector<int> devs(n);
    for (int r = 0; r < n; r++) devs[r] = r;
    CK_NCCL(ncclCommInitAll(comms.data(), n, devs.data()));
    int iters_max = std::max(o.iters, o.graph ? o.graph_iters : 0);
    for (int r = 0; r < n; r++) {
        ar_rank *k = &ranks[r];
        k->dev = r;
        k->comm = comms[r];
        CK_CUDA(cudaSetDevice(r));
        CK_CUDA(cudaStreamCreateWithFlags(&k->stream, cudaStreamNonBlocking));
        CK_CUDA(cudaMalloc(&k->send, o.max_bytes));
        CK_CUDA(cudaMalloc(&k->recv, o.max_bytes));
        CK_CUDA(cudaMalloc((void **)&k->bad_dev, sizeof *k->bad_dev));
        k->ev.resize(iters_max + 1);
        for (auto &e : k->ev) CK_CUDA(cudaEventCreate(&e));
        k->us.assign(iters_max, 0.0);
        k->bad = 0;
    }

    ar_sweep s;
    s.o = &o;
    s.n = n;
    s.ranks = &ranks;
    s.env = env;
    s.csv = csv;
    s.errors = 0;
    SB_REQUIRE(pthread_barrier_init(&s.barrier, NULL, (unsigned)n) == 0, "pthread_barrier_init");
    std::vector<std::thread> th;
    for (int r = 0; r < n; r++) th.emplace_back(ar_thread, &s, r);
    for (auto &t : th) t.join();
    pthread_barrier_destroy(&s.barrier);

    for (int r = 0; r < n; r++) {
        ar_rank *k = &ranks[r];
        CK_CUDA(cudaSetDevice(r));
        for (auto &e : k->ev) CK_CUDA(cudaEventDestroy(e));
        CK_CUDA(cudaFree(k->send));
        CK_CUDA(cudaFree(k->recv));
        CK_CUDA(cudaFree(k->bad_dev));
        CK_CUDA(cudaStreamDestroy(k->stream));
        CK_NCCL(ncclCommDestroy(k->comm));
    }
    if (csv && fclose(csv) != 0) {
        fprintf(stderr, "arsweep: %s: write failed: %s\n", o.csv, strerror(errno));
        return 1;
    }
    if (s.errors) {
        fprintf(stderr, "arsweep: %d size(s) gave a wrong all-reduce result (see above)\n", s.errors);
        return 1;
    }
    if (!o.quiet) printf("# done: every size checked, 0 wrong elements\n");
    return 0;
}
