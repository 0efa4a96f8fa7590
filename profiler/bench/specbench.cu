/* specbench: a real speculative-decoding workload on the GPU, in the spirit of
 * nccl-tests: a tensor-parallel target shard (cuBLAS GEMMs, attention over a KV cache
 * that grows, optional random-routed MoE, NCCL all-reduces across ranks) with an EAGLE-3
 * draft head, driven by a closed-loop continuous-batching server loop with CUDA graphs.
 * It prints tokens/s and per-phase times, and marks each phase with NVTX for specprof.
 * One invocation runs a single configuration or a whole grid (weights loaded once,
 * graphs reused per shape). See docs/specbench.md. */
#include "sbmodel.h"
#include "sbloop.h"
#include "sbselftest.h"
#include "sbgemm.h"
#include "sbcheck.h"
#include <getopt.h>
#include <unistd.h>
#include <sys/wait.h>
#include <cstring>
#include <cmath>
#include <ctime>
#include <vector>
#include <string>
#include <algorithm>

#define SB_VERSION "1.0"

static void usage(FILE *f) {
    fprintf(f,
"usage: specbench [options]\n"
"model (a preset, then any field overridden):\n"
"  --preset NAME          llama8b (default) | kimi-tp8\n"
"  --layers N --dense-layers N --hidden N --heads N --kv-heads N --head-dim 128\n"
"  --inter N --vocab N --tp N --experts N --topk-experts N --moe-inter N\n"
"  --shared-inter N --draft-inter N --draft-vocab N\n"
"  --gpus N               ranks to run (1, or = --tp: one process per GPU, NCCL)\n"
"workload (comma lists make a grid, run in one process):\n"
"  --mode LIST            spec,baseline (default spec)\n"
"  --steps LIST           draft steps (chain; draft_tokens = steps+1), default 3\n"
"  --topk 1               draft tree width (only 1, the chain, is implemented)\n"
"  --alpha LIST           per-position acceptance probability, default 0.7\n"
"  --alpha-pos A1,A2,..   per-position conditional alphas instead (last one repeats)\n"
"  --concurrency LIST     running requests (closed loop), default 1\n"
"  --prompt-len N|LO:HI   prompt tokens (KV assumed cached), default 1024\n"
"  --output-len N|LO:HI   output tokens per request, default 256\n"
"  --cuda-graph-bs LIST   captured batch sizes, 'none', or sglang:MAX (default sglang:256)\n"
"measurement:\n"
"  --warmup N             iterations before measuring (default 3)\n"
"  --seconds S            measured time per point (default 1.0), or --iters N\n"
"  --min-iters N --max-iters N   bounds for --seconds (default 5, 100000)\n"
"  --repeats N            repeats of every point (default 1), spread reported\n"
"  --seed N               host RNG seed (acceptance, request lengths), default 1\n"
"  --time-budget S        stop the grid before a point that would end past S seconds\n"
"                         (one GPU only); finished points are already in --csv\n"
"  --capture LIST         points whose measured window runs between cudaProfilerStart and\n"
"                         Stop (specprof --mode lite --capture-range profiler-api records those\n"
"                         alone): spec:STEPS:C, baseline:C, comma-separated, or * for all\n"
"output:\n"
"  --json FILE --csv FILE (appends) --summary-csv FILE (appends) --facts FILE\n"
"  --check                GPU self-checks on the preset's shapes (2 layers) and exit\n"
"  --gemm-sweep LIST      time every GEMM shape of the preset alone at these token counts\n"
"                         (N, LO:HI or LO:HI:STEP, comma-separated) into --csv, and exit\n"
"  --gemm-rest F          the sweep idles F x each point's GPU time after it (default 2)\n"
"  --quiet                only the tables\n");
}

/* --- option parsing helpers (main exits 2 on bad input) --- */
static int parse_int(const char *opt, const char *s, long lo, long hi) {
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end || v < lo || v > hi) {
        fprintf(stderr, "specbench: %s: value '%s': want an integer in [%ld, %ld]\n", opt, s, lo, hi);
        exit(2);
    }
    return (int)v;
}
static double parse_dbl(const char *opt, const char *s, double lo, double hi) {
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !(v >= lo && v <= hi)) {
        fprintf(stderr, "specbench: %s: value '%s': want a number in [%g, %g]\n", opt, s, lo, hi);
        exit(2);
    }
    return v;
}
static std::vector<std::string> split(const char *s, char sep) {
    std::vector<std::string> out;
    std::string cur;
    for (const char *p = s;; p++) {
        if (*p == sep || !*p) { out.push_back(cur); cur.clear(); if (!*p) break; }
        else cur += *p;
    }
    return out;
}
static std::vector<int> int_list(const char *opt, const char *s, long lo, long hi) {
    std::vector<int> v;
    for (auto &x : split(s, ',')) v.push_back(parse_int(opt, x.c_str(), lo, hi));
    return v;
}
static std::vector<double> dbl_list(const char *opt, const char *s, double lo, double hi) {
    std::vector<double> v;
    for (auto &x : split(s, ',')) v.push_back(parse_dbl(opt, x.c_str(), lo, hi));
    return v;
}
static void range_arg(const char *opt, const char *s, int *lo, int *hi) {
    auto p = split(s, ':');
    if (p.size() == 1) { *lo = *hi = parse_int(opt, s, 1, 1 << 20); return; }
    if (p.size() != 2) { fprintf(stderr, "specbench: %s: value '%s': want N or LO:HI\n", opt, s); exit(2); }
    *lo = parse_int(opt, p[0].c_str(), 1, 1 << 20);
    *hi = parse_int(opt, p[1].c_str(), *lo, 1 << 20);
}

typedef struct {
    std::string preset;
    int mode_spec;
    int steps, topk, draft_tokens;
    double alpha;
    int conc, rep;
    sb_result r;
} point;

static double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static FILE *open_append(const char *path, bool *is_new) {
    FILE *f = fopen(path, "a");
    if (!f) { fprintf(stderr, "specbench: --csv/--summary-csv: file %s: cannot open: %s\n", path, strerror(errno)); exit(2); }
    *is_new = ftell(f) == 0;
    return f;
}

static void write_facts(const char *path, int gpus, const sb_shape *sh) {
    int dev;
    cudaDeviceProp p;
    CK_CUDA(cudaGetDevice(&dev));
    CK_CUDA(cudaGetDeviceProperties(&p, dev));
    int clk = 0, mclk = 0, bus = 0, drv = 0, rt = 0, blas = 0;
    CK_CUDA(cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, dev));
    CK_CUDA(cudaDeviceGetAttribute(&mclk, cudaDevAttrMemoryClockRate, dev));
    CK_CUDA(cudaDeviceGetAttribute(&bus, cudaDevAttrGlobalMemoryBusWidth, dev));
    CK_CUDA(cudaDriverGetVersion(&drv));
    CK_CUDA(cudaRuntimeGetVersion(&rt));
    cublasHandle_t h;
    CK_CUBLAS(cublasCreate(&h));
    CK_CUBLAS(cublasGetVersion(h, &blas));
    CK_CUBLAS(cublasDestroy(h));
    char host[128] = "";
    gethostname(host, sizeof host - 1);
    char pci[32] = "";
    CK_CUDA(cudaDeviceGetPCIBusId(pci, sizeof pci, dev));
    time_t now = time(NULL);
    char date[64];
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    FILE *f = fopen(path, "w");
    if (!f) { fprintf(stderr, "specbench: --facts: file %s: cannot open\n", path); exit(2); }
    fprintf(f, "{\n  \"tool\": \"specbench %s\",\n  \"date\": \"%s\",\n  \"host\": \"%s\",\n", SB_VERSION, date, host);
    fprintf(f, "  \"device\": {\"name\": \"%s\", \"index\": %d, \"sms\": %d, \"clock_khz\": %d, "
               "\"mem_clock_khz\": %d, \"mem_bytes\": %zu, \"mem_bus_bits\": %d, \"l2_bytes\": %d, "
               "\"cc_major\": %d, \"cc_minor\": %d, \"pci_bus_id\": \"%s\"},\n",
            p.name, dev, p.multiProcessorCount, clk, mclk, (size_t)p.totalGlobalMem, bus, p.l2CacheSize,
            p.major, p.minor, pci);
    fprintf(f, "  \"cuda_driver_version\": %d,\n  \"cuda_runtime_version\": %d,\n  \"cublas_version\": %d,\n", drv, rt, blas);
#ifdef SB_NO_NCCL
    fprintf(f, "  \"nccl_version\": null,\n");
#else
    fprintf(f, "  \"nccl_version\": %d,\n", NCCL_VERSION_CODE);
#endif
    fprintf(f, "  \"gpus\": %d\n}\n", gpus);
    (void)sh;
    fclose(f);
}

/* One CSV row per point, written and flushed as the point completes, so a run cut
 * short (a time limit on the device) keeps every finished point. */
static void csv_row(FILE *f, const point &p, const char *cgs, const sb_shape *sh, int gpus,
                    int prompt_lo, int prompt_hi, int out_lo, int out_hi) {
    const sb_result &r = p.r;
    fprintf(f, "%s,%s,%d,%d,%d,%.3f,%d,%d,%.2f,%.3f,%.1f,%.4f,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,"
               "%d,%d,%d,%s,%d,%d,%d,%d:%d,%d:%d,%.4f\n",
            p.preset.c_str(), p.mode_spec ? "spec" : "baseline", p.steps, p.topk, p.draft_tokens, p.alpha,
            p.conc, p.rep, r.tok_s, r.tok_s_req, r.iter_us, r.accept_len, r.phase_us[SB_PH_DRAFT],
            r.phase_us[SB_PH_VERIFY], r.phase_us[SB_PH_ACCEPT], r.phase_us[SB_PH_EXTEND],
            r.phase_us[SB_PH_DECODE], r.phase_us[SB_PH_SAMPLE], r.host_us, r.ctx_mean, r.iters, r.rows,
            r.graph, cgs, sh->layers, sh->tp, gpus, prompt_lo, prompt_hi, out_lo, out_hi, r.wall_s);
    fflush(f);
}

static void print_header(void) {
    printf("# %-8s %-8s %5s %4s %4s %5s %5s %3s %4s %5s %10s %9s %9s %7s %9s %9s %9s %9s %9s %9s %8s %9s %6s\n",
           "preset", "mode", "steps", "topk", "dtok", "alpha", "conc", "rep", "rows", "graph", "tok_s",
           "tok_s_req", "iter_us", "acc_len", "draft_us", "verify_us", "accept_us", "extend_us",
           "decode_us", "sample_us", "host_us", "ctx_mean", "iters");
    printf("# %-8s %-8s %5s %4s %4s %5s %5s %3s %4s %5s %10s %9s %9s %7s %9s %9s %9s %9s %9s %9s %8s %9s %6s\n",
           "-", "-", "-", "-", "tok", "-", "req", "-", "-", "0/1", "tok/s", "tok/s", "us", "tok",
           "us", "us", "us", "us", "us", "us", "us", "tok", "-");
}

static void print_point(const point &p) {
    const sb_result &r = p.r;
    printf("  %-8s %-8s %5d %4d %4d %5.2f %5d %3d %4d %5d %10.1f %9.2f %9.1f %7.3f %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f %8.1f %9.1f %6d\n",
           p.preset.c_str(), p.mode_spec ? "spec" : "baseline", p.steps, p.topk, p.draft_tokens, p.alpha,
           p.conc, p.rep, r.rows, r.graph, r.tok_s, r.tok_s_req, r.iter_us, r.accept_len,
           r.phase_us[SB_PH_DRAFT], r.phase_us[SB_PH_VERIFY], r.phase_us[SB_PH_ACCEPT],
           r.phase_us[SB_PH_EXTEND], r.phase_us[SB_PH_DECODE], r.phase_us[SB_PH_SAMPLE], r.host_us,
           r.ctx_mean, r.iters);
    fflush(stdout);
}

int main(int argc, char **argv) {
    sb_shape sh;
    sb_preset("llama8b", &sh);
    std::string preset = "llama8b";
    int over[16];
    for (int i = 0; i < 16; i++) over[i] = -1;
    std::vector<int> modes = {1}, steps = {3}, concs = {1};
    std::vector<double> alphas = {0.7}, apos;
    int topk = 1, gpus = 1, rank = -1, check = 0, quiet = 0, repeats = 1;
    std::vector<int> gsweep;   /* --gemm-sweep token counts */
    int prompt_lo = 1024, prompt_hi = 1024, out_lo = 256, out_hi = 256;
    int warmup = 3, iters = 0, min_iters = 5, max_iters = 100000;
    double seconds = 1.0, budget_s = 0, gemm_rest = 2;
    std::vector<std::pair<int, int>> capture;   /* --capture: (steps, C); steps -1: baseline */
    int capture_all = 0;
    uint64_t seed = 1;
    std::string cg_spec = "sglang:256";
    const char *json = NULL, *csv = NULL, *sumcsv = NULL, *facts = NULL;
    enum { O_LAYERS = 0, O_DENSE, O_HIDDEN, O_HEADS, O_KV, O_HD, O_INTER, O_VOCAB, O_TP, O_EXP,
           O_TOPKE, O_MOEI, O_SHI, O_DI, O_DV, O_NOVER,
           O_PRESET = 100, O_GPUS, O_RANK, O_MODE, O_STEPS, O_TOPK, O_ALPHA, O_APOS, O_CONC,
           O_PROMPT, O_OUT, O_CG, O_WARM, O_SEC, O_ITERS, O_MINI, O_MAXI, O_REP, O_SEED, O_JSON,
           O_CSV, O_SUM, O_FACTS, O_CHECK, O_QUIET, O_HELP, O_BUDGET, O_GSWEEP, O_GREST, O_CAPTURE };
    static const struct option opts[] = {
        {"layers", 1, 0, O_LAYERS}, {"dense-layers", 1, 0, O_DENSE}, {"hidden", 1, 0, O_HIDDEN},
        {"heads", 1, 0, O_HEADS}, {"kv-heads", 1, 0, O_KV}, {"head-dim", 1, 0, O_HD},
        {"inter", 1, 0, O_INTER}, {"vocab", 1, 0, O_VOCAB}, {"tp", 1, 0, O_TP},
        {"experts", 1, 0, O_EXP}, {"topk-experts", 1, 0, O_TOPKE}, {"moe-inter", 1, 0, O_MOEI},
        {"shared-inter", 1, 0, O_SHI}, {"draft-inter", 1, 0, O_DI}, {"draft-vocab", 1, 0, O_DV},
        {"preset", 1, 0, O_PRESET}, {"gpus", 1, 0, O_GPUS}, {"rank", 1, 0, O_RANK},
        {"mode", 1, 0, O_MODE}, {"steps", 1, 0, O_STEPS}, {"topk", 1, 0, O_TOPK},
        {"alpha", 1, 0, O_ALPHA}, {"alpha-pos", 1, 0, O_APOS}, {"concurrency", 1, 0, O_CONC},
        {"prompt-len", 1, 0, O_PROMPT}, {"output-len", 1, 0, O_OUT}, {"cuda-graph-bs", 1, 0, O_CG},
        {"warmup", 1, 0, O_WARM}, {"seconds", 1, 0, O_SEC}, {"iters", 1, 0, O_ITERS},
        {"min-iters", 1, 0, O_MINI}, {"max-iters", 1, 0, O_MAXI}, {"repeats", 1, 0, O_REP},
        {"seed", 1, 0, O_SEED}, {"json", 1, 0, O_JSON}, {"csv", 1, 0, O_CSV},
        {"summary-csv", 1, 0, O_SUM}, {"facts", 1, 0, O_FACTS}, {"check", 0, 0, O_CHECK},
        {"quiet", 0, 0, O_QUIET}, {"help", 0, 0, O_HELP}, {"time-budget", 1, 0, O_BUDGET},
        {"gemm-sweep", 1, 0, O_GSWEEP}, {"gemm-rest", 1, 0, O_GREST}, {"capture", 1, 0, O_CAPTURE},
        {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        const char *on = NULL;
        for (const struct option *o = opts; o->name; o++) if (o->val == c) on = o->name;
        char optname[64];
        snprintf(optname, sizeof optname, "--%s", on ? on : "?");
        if (c >= O_LAYERS && c < O_NOVER) { over[c] = parse_int(optname, optarg, 0, 1 << 30); continue; }
        switch (c) {
        case O_PRESET:
            if (sb_preset(optarg, &sh)) {
                fprintf(stderr, "specbench: --preset: value '%s': known presets are llama8b, kimi-tp8\n", optarg);
                return 2;
            }
            preset = optarg;
            break;
        case O_GPUS: gpus = parse_int(optname, optarg, 1, 64); break;
        case O_RANK: rank = parse_int(optname, optarg, 0, 63); break;
        case O_MODE:
            modes.clear();
            for (auto &m : split(optarg, ',')) {
                if (m == "spec") modes.push_back(1);
                else if (m == "baseline") modes.push_back(0);
                else { fprintf(stderr, "specbench: --mode: value '%s': want spec and/or baseline\n", m.c_str()); return 2; }
            }
            break;
        case O_STEPS: steps = int_list(optname, optarg, 1, 15); break;
        case O_TOPK:
            topk = parse_int(optname, optarg, 1, 16);
            if (topk != 1) { fprintf(stderr, "specbench: --topk: value %d: only the chain (topk=1) is implemented\n", topk); return 2; }
            break;
        case O_ALPHA: alphas = dbl_list(optname, optarg, 0.0, 1.0); break;
        case O_APOS:
            apos = dbl_list(optname, optarg, 0.0, 1.0);
            if (apos.size() > SB_MAX_APOS) { fprintf(stderr, "specbench: --alpha-pos: at most %d values\n", SB_MAX_APOS); return 2; }
            break;
        case O_CONC: concs = int_list(optname, optarg, 1, 4096); break;
        case O_PROMPT: range_arg(optname, optarg, &prompt_lo, &prompt_hi); break;
        case O_OUT: range_arg(optname, optarg, &out_lo, &out_hi); break;
        case O_CG: cg_spec = optarg; break;
        case O_WARM: warmup = parse_int(optname, optarg, 0, 1000000); break;
        case O_SEC: seconds = parse_dbl(optname, optarg, 0.0, 1e6); break;
        case O_ITERS: iters = parse_int(optname, optarg, 1, 100000000); break;
        case O_MINI: min_iters = parse_int(optname, optarg, 1, 100000000); break;
        case O_MAXI: max_iters = parse_int(optname, optarg, 1, 100000000); break;
        case O_REP: repeats = parse_int(optname, optarg, 1, 1000); break;
        case O_SEED: seed = (uint64_t)parse_int(optname, optarg, 0, 2147483647); break;
        case O_JSON: json = optarg; break;
        case O_CSV: csv = optarg; break;
        case O_SUM: sumcsv = optarg; break;
        case O_FACTS: facts = optarg; break;
        case O_CHECK: check = 1; break;
        case O_BUDGET: budget_s = parse_dbl(optname, optarg, 0.0, 1e7); break;
        case O_CAPTURE:
            capture_all = !strcmp(optarg, "*");
            if (capture_all) break;
            for (auto &x : split(optarg, ',')) {
                auto p = split(x.c_str(), ':');
                int spec = p.size() == 3 && p[0] == "spec";
                if (!spec && !(p.size() == 2 && p[0] == "baseline")) {
                    fprintf(stderr, "specbench: --capture: item '%s': want spec:STEPS:C, baseline:C or *\n", x.c_str());
                    return 2;
                }
                /* the bounds of --steps and --concurrency */
                capture.push_back({spec ? parse_int("--capture steps", p[1].c_str(), 1, 15) : -1,
                                   parse_int("--capture concurrency", p[spec ? 2 : 1].c_str(), 1, 4096)});
            }
            break;
        case O_QUIET: quiet = 1; break;
        case O_GSWEEP:
            for (auto &x : split(optarg, ',')) {
                auto p = split(x.c_str(), ':');
                if (p.size() > 3) { fprintf(stderr, "specbench: --gemm-sweep: value '%s': want N, LO:HI or LO:HI:STEP\n", x.c_str()); return 2; }
                int lo = parse_int(optname, p[0].c_str(), 1, 65536);
                int hi = p.size() > 1 ? parse_int(optname, p[1].c_str(), lo, 65536) : lo;
                int st = p.size() > 2 ? parse_int(optname, p[2].c_str(), 1, 65536) : 1;
                for (int t = lo; t <= hi; t += st) gsweep.push_back(t);
            }
            break;
        case O_GREST: gemm_rest = parse_dbl(optname, optarg, 0.0, 100.0); break;
        case O_HELP: usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) { fprintf(stderr, "specbench: unexpected argument '%s'\n", argv[optind]); usage(stderr); return 2; }
    int *fields[] = {&sh.layers, &sh.dense_layers, &sh.hidden, &sh.heads, &sh.kv_heads, &sh.head_dim,
                     &sh.inter, &sh.vocab, &sh.tp, &sh.experts, &sh.topk_experts, &sh.moe_inter,
                     &sh.shared_inter, &sh.draft_inter, &sh.draft_vocab};
    for (int i = 0; i < O_NOVER; i++) if (over[i] >= 0) *fields[i] = over[i];
    if (min_iters > max_iters) { fprintf(stderr, "specbench: --min-iters %d > --max-iters %d\n", min_iters, max_iters); return 2; }
    sb_cglist cg;
    char err[256];
    if (sb_cg_parse(cg_spec.c_str(), &cg, err, sizeof err)) { fprintf(stderr, "specbench: %s\n", err); return 2; }
    bool any_spec = std::find(modes.begin(), modes.end(), 1) != modes.end();
    int max_steps = any_spec ? *std::max_element(steps.begin(), steps.end()) : 0;
    int qlen_max = check ? 4 : max_steps + 1;
    if (sb_shape_check(&sh, qlen_max, err, sizeof err)) { fprintf(stderr, "specbench: shape: %s\n", err); return 2; }
    if (gpus > 1 && gpus != sh.tp) {
        fprintf(stderr, "specbench: --gpus: value %d: must be 1 (one rank of the shard) or --tp %d\n", gpus, sh.tp);
        return 2;
    }
#ifdef SB_NO_NCCL
    if (gpus > 1) { fprintf(stderr, "specbench: --gpus %d: built without NCCL (see nccl_flags.sh)\n", gpus); return 2; }
#endif

    /* several ranks: this process only launches one process per GPU and waits */
    ncclComm_t comm = NULL;
    if (gpus > 1 && rank < 0 && !check) {
#ifndef SB_NO_NCCL
        ncclUniqueId id;
        CK_NCCL(ncclGetUniqueId(&id));
        char hex[2 * sizeof id.internal + 1];
        for (size_t i = 0; i < sizeof id.internal; i++) sprintf(hex + 2 * i, "%02x", (unsigned char)id.internal[i]);
        setenv("SPECBENCH_NCCL_ID", hex, 1);
        std::vector<pid_t> pids;
        for (int r = 0; r < gpus; r++) {
            pid_t pid = fork();
            if (pid < 0) { perror("specbench: fork"); return 1; }
            if (pid == 0) {
                std::vector<char *> av(argv, argv + argc);
                char rk[16];
                snprintf(rk, sizeof rk, "%d", r);
                av.push_back((char *)"--rank");
                av.push_back(rk);
                av.push_back(NULL);
                execv("/proc/self/exe", av.data());
                perror("specbench: execv /proc/self/exe");
                _exit(127);
            }
            pids.push_back(pid);
        }
        int worst = 0;
        for (pid_t p : pids) {
            int st;
            waitpid(p, &st, 0);
            int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
            if (code > worst) worst = code;
        }
        return worst;
#endif
    }
    if (rank < 0) rank = 0;
    bool lead = rank == 0;
    if (!lead) quiet = 1;
    CK_CUDA(cudaSetDevice(gpus > 1 ? rank : 0));
#ifndef SB_NO_NCCL
    if (gpus > 1 && !check) {
        const char *hex = getenv("SPECBENCH_NCCL_ID");
        SB_REQUIRE(hex && strlen(hex) == 2 * NCCL_UNIQUE_ID_BYTES, "rank %d: SPECBENCH_NCCL_ID missing (run without --rank)", rank);
        ncclUniqueId id;
        for (int i = 0; i < NCCL_UNIQUE_ID_BYTES; i++) {
            unsigned v;
            sscanf(hex + 2 * i, "%2x", &v);
            id.internal[i] = (char)v;
        }
        CK_NCCL(ncclCommInitRank(&comm, gpus, id, rank));
    }
#endif

    if (!gsweep.empty()) {
        if (!csv) { fprintf(stderr, "specbench: --gemm-sweep: needs --csv FILE for its table\n"); return 2; }
        if (gpus > 1) { fprintf(stderr, "specbench: --gemm-sweep: one GPU (--gpus 1): a rank's GEMMs do not depend on the others\n"); return 2; }
        std::sort(gsweep.begin(), gsweep.end());
        gsweep.erase(std::unique(gsweep.begin(), gsweep.end()), gsweep.end());
        if (facts) write_facts(facts, 1, &sh);
        return sb_gemm_sweep(&sh, preset.c_str(), gsweep, csv, gemm_rest, quiet);
    }
    if (check) {
        sb_shape cs = sh;
        cs.layers = 2;
        if (cs.experts > 0) cs.dense_layers = 1;    /* one dense and one MoE layer */
        printf("# specbench %s --check: preset %s per-layer shapes, %d layers\n", SB_VERSION, preset.c_str(), cs.layers);
        if (facts) write_facts(facts, 1, &sh);
        sb_model *m = sb_model_create(&cs, 4, 4, 1024, 1, 0, NULL, seed, 1);
        int fails = sb_selftest(m);
        sb_model_destroy(m);
        return fails ? 1 : 0;
    }

    /* capacity over the whole grid */
    int rows_max = 1;
    for (int C : concs) {
        int b = sb_cg_bucket(&cg, C);
        rows_max = std::max(rows_max, b ? b : C);
    }
    int max_ctx = prompt_hi + out_hi + qlen_max + 2;
    max_ctx = (max_ctx + SB_ATTN_CHUNK - 1) / SB_ATTN_CHUNK * SB_ATTN_CHUNK;
    char cgs[1024];
    sb_cg_format(&cg, cgs, sizeof cgs);
    sb_rank rk;
    sb_rank_of(&sh, &rk);
    if (!quiet) {
        printf("# specbench %s\n", SB_VERSION);
        printf("# preset %s: layers %d (dense %d), hidden %d, heads %d, kv_heads %d, head_dim %d, inter %d, "
               "vocab %d, tp %d, experts %d top-%d, moe_inter %d, shared_inter %d, draft_inter %d, draft_vocab %d\n",
               sh.name, sh.layers, sh.experts ? sh.dense_layers : sh.layers, sh.hidden, sh.heads, sh.kv_heads,
               sh.head_dim, sh.inter, sh.vocab, sh.tp, sh.experts, sh.topk_experts, sh.moe_inter,
               sh.shared_inter, sh.draft_inter, sh.draft_vocab);
        printf("# per rank: q heads %d, kv heads %d, inter %d, expert inter %d, shared inter %d, "
               "LM-head rows %d, draft LM-head rows %d; gpus %d (%s)\n",
               rk.nh, rk.nkv, rk.I, rk.Im, rk.Is, rk.V, rk.Vd, gpus,
               gpus > 1 ? "NCCL all-reduces" : "no NCCL: one rank's compute only");
        printf("# workload: modes %s%s, steps", any_spec ? "spec " : "",
               std::find(modes.begin(), modes.end(), 0) != modes.end() ? "baseline" : "");
        for (int s : steps) printf(" %d", s);
        printf(", topk %d, alpha", topk);
        if (apos.empty()) for (double a : alphas) printf(" %.2f", a);
        else { printf("-pos"); for (double a : apos) printf(" %.2f", a); }
        printf(", concurrency");
        for (int C : concs) printf(" %d", C);
        printf(", prompt %d:%d, output %d:%d, cuda-graph-bs %s\n", prompt_lo, prompt_hi, out_lo, out_hi, cgs);
        printf("# measurement: warmup %d iterations, %s, repeats %d, seed %llu; iteration time by host "
               "clock with sync, phases by CUDA events\n",
               warmup, iters ? (std::to_string(iters) + " iterations").c_str() : (std::to_string(seconds) + " s per point").c_str(),
               repeats, (unsigned long long)seed);
        printf("# capacity: %d rows x %d tokens, KV %d positions\n", rows_max, qlen_max, max_ctx);
        fflush(stdout);
    }
    if (facts && lead) write_facts(facts, gpus, &sh);

    double t_init = 0;
    struct timespec ts0, ts1;
    clock_gettime(CLOCK_MONOTONIC, &ts0);
    sb_model *m = sb_model_create(&sh, rows_max, qlen_max, max_ctx, gpus, rank, comm, seed, !quiet);
    sb_engine *e = sb_engine_create(m, &cg);
    clock_gettime(CLOCK_MONOTONIC, &ts1);
    t_init = (ts1.tv_sec - ts0.tv_sec) + (ts1.tv_nsec - ts0.tv_nsec) * 1e-9;
    if (!quiet) printf("# init %.2f s\n", t_init);
    if (lead) print_header();

    FILE *csvf = NULL;
    if (csv && lead) {
        bool isnew;
        csvf = open_append(csv, &isnew);
        if (isnew)
            fprintf(csvf, "preset,mode,steps,topk,draft_tokens,alpha,concurrency,rep,tok_s,tok_s_req,iter_us,"
                          "accept_len,draft_us,verify_us,accept_us,extend_us,decode_us,sample_us,host_us,ctx_mean,"
                          "iters,rows,graph,cuda_graph_bs,layers,tp,gpus,prompt_len,output_len,seconds\n");
    }
    std::vector<point> pts;
    int stopped = 0;
    sb_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.topk = topk;
    cfg.n_apos = (int)apos.size();
    for (size_t i = 0; i < apos.size(); i++) cfg.apos[i] = apos[i];
    cfg.prompt_lo = prompt_lo; cfg.prompt_hi = prompt_hi;
    cfg.out_lo = out_lo; cfg.out_hi = out_hi;
    cfg.warmup = warmup; cfg.seconds = seconds; cfg.iters = iters;
    cfg.min_iters = min_iters; cfg.max_iters = max_iters;
    cfg.seed = seed;
    clock_gettime(CLOCK_MONOTONIC, &ts0);
    for (int rep = 0; rep < repeats; rep++)
        for (int mode : modes)
            for (int C : concs) {
                std::vector<int> st = mode ? steps : std::vector<int>{0};
                std::vector<double> al = (mode && apos.empty()) ? alphas : std::vector<double>{mode ? -1.0 : 0.0};
                for (int s : st)
                    for (double a : al) {
                        cfg.spec = mode;
                        cfg.steps = s;
                        cfg.alpha = a;
                        cfg.concurrency = C;
                        cfg.rep = rep;
                        cfg.capture = capture_all;
                        for (auto &k : capture)
                            if (k.second == C && k.first == (mode ? s : -1)) cfg.capture = 1;
                        point p;
                        p.preset = sh.name;
                        p.mode_spec = mode;
                        p.steps = s;
                        p.topk = mode ? topk : 0;
                        p.draft_tokens = mode ? s + 1 : 0;
                        p.alpha = a;
                        p.conc = C;
                        p.rep = rep;
                        if (budget_s > 0 && gpus == 1 && !stopped) {
                            /* stop before a point that would overrun the budget: the
                             * estimate is the mean cost of the points so far. Not with
                             * several ranks: their clocks would disagree. */
                            clock_gettime(CLOCK_MONOTONIC, &ts1);
                            double el = (ts1.tv_sec - ts0.tv_sec) + (ts1.tv_nsec - ts0.tv_nsec) * 1e-9;
                            double per = pts.empty() ? 0 : el / pts.size();
                            if (el + per > budget_s) stopped = 1;
                        }
                        if (stopped) continue;
                        sb_run_point(e, &cfg, &p.r);
                        if (lead) print_point(p);
                        if (csvf) csv_row(csvf, p, cgs, &sh, gpus, prompt_lo, prompt_hi, out_lo, out_hi);
                        pts.push_back(p);
                    }
            }
    if (csvf) fclose(csvf);
    if (stopped && lead)
        printf("# time budget %.0f s reached: stopped after %zu points (later repeats or points not run)\n",
               budget_s, pts.size());
    clock_gettime(CLOCK_MONOTONIC, &ts1);
    double t_grid = (ts1.tv_sec - ts0.tv_sec) + (ts1.tv_nsec - ts0.tv_nsec) * 1e-9;
    int ngraphs;
    double cap_ms;
    sb_engine_stats(e, &ngraphs, &cap_ms);

    if (lead) {
        /* spread over repeats */
        printf("# summary over %d repeat(s): tok/s min / median / max, sd\n", repeats);
        printf("# %-8s %-8s %5s %5s %5s %10s %10s %10s %8s %9s %7s\n", "preset", "mode", "steps", "alpha",
               "conc", "tok_s_min", "tok_s_med", "tok_s_max", "sd_pct", "iter_us", "acc_len");
        FILE *sf = NULL;
        bool snew = false;
        if (sumcsv) {
            sf = open_append(sumcsv, &snew);
            if (snew)
                fprintf(sf, "preset,mode,steps,topk,draft_tokens,alpha,concurrency,reps,tok_s_min,tok_s_median,"
                            "tok_s_max,tok_s_sd,iter_us_median,accept_len_mean,draft_us_median,verify_us_median,"
                            "accept_us_median,extend_us_median,decode_us_median,sample_us_median,host_us_median,"
                            "rows,graph,cuda_graph_bs\n");
        }
        std::vector<bool> done(pts.size(), false);
        for (size_t i = 0; i < pts.size(); i++) {
            if (done[i]) continue;
            std::vector<double> tok, it, acc, ph[SB_NPH], host;
            for (size_t j = i; j < pts.size(); j++) {
                const point &a = pts[i], &b = pts[j];
                if (a.mode_spec != b.mode_spec || a.steps != b.steps || a.alpha != b.alpha || a.conc != b.conc) continue;
                done[j] = true;
                tok.push_back(b.r.tok_s);
                it.push_back(b.r.iter_us);
                acc.push_back(b.r.accept_len);
                host.push_back(b.r.host_us);
                for (int k = 0; k < SB_NPH; k++) ph[k].push_back(b.r.phase_us[k]);
            }
            double mean = 0, sd = 0, am = 0;
            for (double v : tok) mean += v;
            mean /= tok.size();
            for (double v : tok) sd += (v - mean) * (v - mean);
            sd = tok.size() > 1 ? sqrt(sd / (tok.size() - 1)) : 0;
            for (double v : acc) am += v;
            am /= acc.size();
            const point &p = pts[i];
            printf("  %-8s %-8s %5d %5.2f %5d %10.1f %10.1f %10.1f %8.2f %9.1f %7.3f\n", p.preset.c_str(),
                   p.mode_spec ? "spec" : "baseline", p.steps, p.alpha, p.conc,
                   *std::min_element(tok.begin(), tok.end()), median(tok),
                   *std::max_element(tok.begin(), tok.end()), mean > 0 ? 100 * sd / mean : 0, median(it), am);
            if (sf)
                fprintf(sf, "%s,%s,%d,%d,%d,%.3f,%d,%zu,%.2f,%.2f,%.2f,%.2f,%.1f,%.4f,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%d,%d,%s\n",
                        p.preset.c_str(), p.mode_spec ? "spec" : "baseline", p.steps, p.topk, p.draft_tokens,
                        p.alpha, p.conc, tok.size(), *std::min_element(tok.begin(), tok.end()), median(tok),
                        *std::max_element(tok.begin(), tok.end()), sd, median(it), am,
                        median(ph[SB_PH_DRAFT]), median(ph[SB_PH_VERIFY]), median(ph[SB_PH_ACCEPT]),
                        median(ph[SB_PH_EXTEND]), median(ph[SB_PH_DECODE]), median(ph[SB_PH_SAMPLE]),
                        median(host), p.r.rows, p.r.graph, cgs);
        }
        if (sf) fclose(sf);
        printf("# %zu points in %.1f s (%.2f s per point), %d graphs captured in %.1f s, init %.1f s\n", pts.size(),
               t_grid, pts.empty() ? 0 : t_grid / pts.size(), ngraphs, cap_ms / 1e3, t_init);
        if (json) {
            FILE *f = fopen(json, "w");
            if (!f) { fprintf(stderr, "specbench: --json: file %s: cannot open\n", json); return 2; }
            fprintf(f, "{\n  \"tool\": \"specbench %s\",\n  \"preset\": \"%s\",\n", SB_VERSION, sh.name);
            fprintf(f, "  \"shape\": {\"layers\": %d, \"dense_layers\": %d, \"hidden\": %d, \"heads\": %d, \"kv_heads\": %d, "
                       "\"head_dim\": %d, \"inter\": %d, \"vocab\": %d, \"tp\": %d, \"experts\": %d, \"topk_experts\": %d, "
                       "\"moe_inter\": %d, \"shared_inter\": %d, \"draft_inter\": %d, \"draft_vocab\": %d},\n",
                    sh.layers, sh.dense_layers, sh.hidden, sh.heads, sh.kv_heads, sh.head_dim, sh.inter, sh.vocab,
                    sh.tp, sh.experts, sh.topk_experts, sh.moe_inter, sh.shared_inter, sh.draft_inter, sh.draft_vocab);
            fprintf(f, "  \"gpus\": %d,\n  \"cuda_graph_bs\": \"%s\",\n  \"prompt_len\": [%d, %d],\n  \"output_len\": [%d, %d],\n"
                       "  \"warmup\": %d,\n  \"seconds\": %g,\n  \"iters\": %d,\n  \"seed\": %llu,\n"
                       "  \"timing\": \"iteration: host clock over the measured iterations with a sync at both ends; phases: CUDA events\",\n"
                       "  \"init_s\": %.3f,\n  \"grid_s\": %.3f,\n  \"graphs\": %d,\n  \"capture_s\": %.3f,\n  \"points\": [\n",
                    gpus, cgs, prompt_lo, prompt_hi, out_lo, out_hi, warmup, seconds, iters, (unsigned long long)seed,
                    t_init, t_grid, ngraphs, cap_ms / 1e3);
            for (size_t i = 0; i < pts.size(); i++) {
                const point &p = pts[i];
                const sb_result &r = p.r;
                fprintf(f, "    {\"mode\": \"%s\", \"steps\": %d, \"topk\": %d, \"draft_tokens\": %d, \"alpha\": %.3f, "
                           "\"concurrency\": %d, \"rep\": %d, \"rows\": %d, \"graph\": %d, \"tok_s\": %.3f, "
                           "\"tok_s_req\": %.4f, \"iter_us\": %.2f, \"accept_len\": %.4f, \"phase_us\": {",
                        p.mode_spec ? "spec" : "baseline", p.steps, p.topk, p.draft_tokens, p.alpha, p.conc, p.rep,
                        r.rows, r.graph, r.tok_s, r.tok_s_req, r.iter_us, r.accept_len);
                for (int k = 0; k < SB_NPH; k++)
                    fprintf(f, "%s\"%s\": %.2f", k ? ", " : "", sb_phase_name[k], r.phase_us[k]);
                fprintf(f, "}, \"host_us\": %.2f, \"ctx_mean\": %.1f, \"iters\": %d, \"tokens\": %ld, "
                           "\"finished\": %d, \"wall_s\": %.4f}%s\n",
                        r.host_us, r.ctx_mean, r.iters, r.tokens, r.finished, r.wall_s, i + 1 < pts.size() ? "," : "");
            }
            fprintf(f, "  ]\n}\n");
            fclose(f);
        }
    }
    sb_engine_destroy(e);
    sb_model_destroy(m);
#ifndef SB_NO_NCCL
    if (comm) CK_NCCL(ncclCommDestroy(comm));
#endif
    return 0;
}
