/* targets.c: what each fuzz harness does with one input, shared by the libFuzzer harnesses
 * (tests/fuzz/harness.c, `make fuzz`) and by tests/test_fuzz_regress.c, which runs every
 * committed seed and regression input through the same functions in the normal and the
 * `make asan` builds. A target feeds the bytes to one reader and, when the reader takes
 * them, uses the result the way the program would (prices a model, simulates a config,
 * times a link, fits a sweep), so that a value a reader lets through and the code after
 * it cannot handle shows up too. Every target returns 0; a crash, a sanitizer report or a
 * broken invariant (abort) is the finding. Workload: inputs of bytes to ~64 KB, ~1 ms each. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* memfd_create, fmemopen */
#endif
#include "bounds.h"
#include "gslerr.h"
#include "wmodel.h"
#include "simcfg.h"
#include "sim.h"
#include "sweep.h"
#include "allreduce.h"
#include "gsweep.h"
#include "arfit.h"
#include "ptrace_read.h"
#include "ptrace_sum.h"
#include "fit.h"
#include "fit_probe.h"
#include "timport.h"
#include "pkineto.h"
#include "sglog.h"
#include "phasemap.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define FZ_CHECK(cond) do { if (!(cond)) { fprintf(stderr, "fuzz invariant broken: %s (%s:%d)\n", \
    #cond, __FILE__, __LINE__); abort(); } } while (0)

/* The input as a file for readers that take a path: one memfd per process, rewritten for
 * each input; /proc/self/fd/N names it. */
static const char *fz_file(const uint8_t *data, size_t n)
{
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("fuzz-input", 0);
        FZ_CHECK(fd >= 0);
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    FZ_CHECK(ftruncate(fd, 0) == 0);
    FZ_CHECK(pwrite(fd, data, n, 0) == (ssize_t)n);
    return path;
}

/* The input as a NUL-terminated string (malloc'd). */
static char *fz_str(const uint8_t *data, size_t n)
{
    char *s = malloc(n + 1);
    FZ_CHECK(s != NULL);
    memcpy(s, data, n);
    s[n] = '\0';
    return s;
}

/* A short simulation of p (any model the readers took must run or be refused by the engine
 * with -2, with finite results when it runs). */
static void fz_simulate(sim_params *p)
{
    static sim_result r;
    char err[1024];
    if (p->iterations > 30 || p->iterations == 0)
        p->iterations = 30;
    if (p->warmup > 10)
        p->warmup = 10;
    if (p->requests > 30)
        p->requests = 30;
    if (p->concurrency > 64)
        p->concurrency = 64;
    p->timeline_iterations = 0;
    int rc = sim_run(p, NULL, &r, err, sizeof err);
    FZ_CHECK(rc == 0 || rc == -1 || rc == -2);
    if (rc == 0) {
        FZ_CHECK(isfinite(r.tok_s) && r.tok_s > 0);
        FZ_CHECK(isfinite(r.tpot_p99_ms) && r.tpot_p99_ms >= 0 && isfinite(r.iter_us));
    }
}

/* A model's costs at the token counts and contexts a run could price. */
static void fz_price(const wm_model *m)
{
    static const double tokens[] = {0, 1, 7, 64, 1000, 65536.0 * 4096};
    for (int p = 0; p < WM_NPHASE; p++)
        for (size_t i = 0; i < sizeof tokens / sizeof tokens[0]; i++) {
            double us = wm_phase_gpu_us(m, p, tokens[i], 1e6);
            FZ_CHECK(!isnan(us));
            (void)wm_sweep_us(m, p, tokens[i], 4);
        }
}

/* model: a workload model file (docs/model-format.md), then priced and simulated. */
int fz_model(const uint8_t *data, size_t n)
{
    static wm_model m;
    char err[1024];
    char *s = fz_str(data, n);
    if (wm_parse(&m, s, "fuzz.json", err, sizeof err) == 0) {
        fz_price(&m);
        sim_params p;
        memset(&p, 0, sizeof p);
        p.model = &m;
        accept_parse(&p.acc, "alpha:0.7", err, sizeof err);
        cg_parse(&p.graphs, "1,2,4,8", err, sizeof err);
        p.algo = ar_algo_find("nccl");
        p.link = *ar_link_preset("nvlink4-8gpu");
        p.steps = 3;
        p.topk = 1;
        p.draft_tokens = 4;
        p.concurrency = 4;
        p.iterations = 30;
        batch_lendist_parse(&p.out_len, "64", err, sizeof err);
        p.prompt_tokens = 100;
        p.ranks = m.ranks;
        p.jitter_scale = 1;
        p.sync_segments = 4;
        p.seed = 1;
        p.graph_launch_us = m.graph_launch_us;
        p.eager_launch_us = m.eager_launch_us;
        for (p.spec = 0; p.spec <= 1; p.spec++)
            if (sim_check(&p, "fuzz", err, sizeof err) == 0)
                fz_simulate(&p);
    }
    free(s);
    return 0;
}

/* config: a --config JSON object of knobs over the defaults and the bundled example model
 * (the model and link paths are kept to what the repository holds), then simulated; the
 * first line also goes to the sweep grid parser. */
int fz_config(const uint8_t *data, size_t n)
{
    static simcfg_set_t s;
    static simcfg_model mc;
    char err[1024];
    simcfg_defaults(&s);
    if (simcfg_load_json(&s, fz_file(data, n), err, sizeof err) == 0) {
        snprintf(s.cfg.model, sizeof s.cfg.model, "models/example-llama8b.json");
        if (strchr(s.cfg.link, '/') || strstr(s.cfg.link, ".json"))
            snprintf(s.cfg.link, sizeof s.cfg.link, "nvlink4-8gpu");
        s.cfg.timeline[0] = '\0';
        for (int spec = 0; spec <= 1; spec++) {
            sim_params p;
            if (simcfg_resolve(&s, &mc, spec, &p, err, sizeof err) == 0)
                fz_simulate(&p);
        }
    }
    char line[512];
    size_t k = 0;
    while (k < n && k < sizeof line - 1 && data[k] != '\n') {
        line[k] = (char)data[k];
        k++;
    }
    line[k] = '\0';
    sweep_grid g;
    memset(&g, 0, sizeof g);
    if (sweep_grid_add(&g, line, err, sizeof err) == 0)
        FZ_CHECK(sweep_grid_size(&g) >= 1);
    sweep_grid_free(&g);
    return 0;
}

/* link: a link file (specsim fit-allreduce's JSON) and a --link alpha=..,beta=.. spec, then
 * every algorithm's time at small and large sizes and rank counts. */
int fz_link(const uint8_t *data, size_t n)
{
    ar_link l[2];
    char err[1024];
    char *s = fz_str(data, n);
    int ok[2];
    ok[0] = ar_link_from_text(s, "fuzz.json", &l[0], err, sizeof err) == 0;
    ok[1] = ar_link_parse(&l[1], s, err, sizeof err) == 0;
    static const char *const algos[] = {"ring", "tree", "nccl", "oneshot", "twoshot", "custom"};
    static const double bytes[] = {0, 256, 14336, 1 << 20, 1e12};
    static const int ranks[] = {1, 2, 8, 4096};
    for (int w = 0; w < 2; w++)
        for (size_t a = 0; ok[w] && a < sizeof algos / sizeof algos[0]; a++)
            for (size_t b = 0; b < sizeof bytes / sizeof bytes[0]; b++)
                for (size_t r = 0; r < sizeof ranks / sizeof ranks[0]; r++) {
                    double t = ar_time_us(ar_algo_find(algos[a]), &l[w], bytes[b], ranks[r]);
                    FZ_CHECK(isfinite(t) && t >= 0);
                }
    free(s);
    return 0;
}

/* gsweep: a GEMM sweep CSV (specbench --gemm-sweep), then its curves priced. */
int fz_gsweep(const uint8_t *data, size_t n)
{
    static wm_model m;
    char err[1024];
    wm_init(&m);
    if (gsweep_load(&m.sweep, fz_file(data, n), err, sizeof err) == 0) {
        FZ_CHECK(m.sweep.ntok >= 2 && m.sweep.nsite >= 1);
        for (int p = 0; p < WM_NPHASE; p++)
            for (double t = 0.5; t < 1e10; t *= 7.3) {
                double us = wm_sweep_us(&m, p, t, 3);
                FZ_CHECK(isfinite(us) && us >= 0);
            }
    }
    return 0;
}

/* arsweep: an all-reduce sweep CSV (arsweep --csv), then the link fit and its file. */
int fz_arsweep(const uint8_t *data, size_t n)
{
    arfit_data d;
    arfit_result r;
    char err[2048];
    arfit_data_init(&d);
    if (arfit_data_load(&d, fz_file(data, n), err, sizeof err) == 0) {
        arfit_select sel = {0, NULL, NULL, NULL, NULL};
        if (arfit_fit(&d, &sel, &r, err, sizeof err) == 0) {
            FZ_CHECK(isfinite(r.link.latency_us) && isfinite(r.link.bw_gbps) && isfinite(r.link.floor_us));
            int w = arfit_write_json(&r, &d, "fuzz", "/dev/null", err, sizeof err);
            FZ_CHECK(w == 0 || w == -2);
            arfit_result_free(&r);
        }
    }
    arfit_data_free(&d);
    return 0;
}

static int fz_trace_cb(void *user, const ptrace_event *e, const ptrace_info *info)
{
    ptrace_sum *s = user;
    ptrace_kernel k;
    ptrace_mem m;
    ptrace_api a;
    ptrace_range r;
    ptrace_ncclcall nc;
    ptrace_graphexec g;
    int64_t t0 = info->header.t0_ns;
    if (!ptrace_read_kernel(e, t0, &k))
        FZ_CHECK(k.end_ns >= k.start_ns);
    (void)ptrace_read_mem(e, t0, &m);
    (void)ptrace_read_api(e, t0, &a);
    (void)ptrace_read_range(e, t0, &r);
    (void)ptrace_read_ncclcall(e, t0, &nc);
    (void)ptrace_read_graphexec(e, t0, &g);
    ptrace_sum_add(s, e);
    return 0;
}

/* trace: a specprof trace (traces/FORMAT.md) through the buffer, the stream and the file
 * readers (which must agree; the file reader also takes gzip), the typed views and
 * `specprof check`'s summary. */
int fz_trace(const uint8_t *data, size_t n)
{
    static ptrace_sum s;
    ptrace_info a, b;
    char err[1024], err2[1024];
    ptrace_sum_init(&s);
    int ra = ptrace_scan_buf((const char *)data, n, "fuzz", fz_trace_cb, &s, &a, err, sizeof err);
    ptrace_sum_finish(&s);
    FILE *devnull = fopen("/dev/null", "w");
    if (devnull) {
        ptrace_sum_print(devnull, &s, &a, "fuzz");
        ptrace_sum_print_json(devnull, &s, &a, "fuzz");
        fclose(devnull);
    }
    ptrace_sum_free(&s);
    FILE *fp = n ? fmemopen((void *)data, n, "r") : fopen("/dev/null", "r");
    FZ_CHECK(fp != NULL);
    int rb = ptrace_scan_stream(fp, "fuzz", NULL, NULL, &b, err2, sizeof err2);
    fclose(fp);
    FZ_CHECK(ra == rb);
    if (ra == 0)
        FZ_CHECK(a.events == b.events && a.bad_lines == b.bad_lines && a.complete == b.complete &&
                 a.cut_last_line == b.cut_last_line);
    /* the file reader: gzip when the input starts with its magic (also cut or damaged),
     * else the same as the others */
    ptrace_info c;
    int rc = ptrace_scan_file(fz_file(data, n), NULL, NULL, &c, err2, sizeof err2);
    if (!(n >= 2 && data[0] == 0x1f && data[1] == 0x8b)) {
        FZ_CHECK(rc == ra);
        if (ra == 0)
            FZ_CHECK(a.events == c.events && a.bad_lines == c.bad_lines && a.complete == c.complete);
    }
    return 0;
}

/* fit: a trace through `specsim fit` (the importer its content picks: specprof's or
 * Kineto's; the instances, the matching, the group fits, the host gaps): a model it returns must load back (wm_save's
 * check; written to /dev/null). */
int fz_fit(const uint8_t *data, size_t n)
{
    static fit_trace t;
    static fit_result res;
    char err[2048];
    if (timport_load(&t, fz_file(data, n), NULL, NULL, err, sizeof err) == 0) {   /* by content */
        /* a lite trace's node probe as a reference (its refusals are fine; a crash is not) */
        static fit_trace pref;
        fit_probe_stats ps;
        if (fit_probe_ref(&t, fz_file(data, n), &pref, &ps, err, sizeof err) == 1) {
            FZ_CHECK(pref.nrng == ps.instances + ps.eager_instances &&
                     pref.nkern + pref.nmem == ps.records + ps.eager_records);
            fit_trace_free(&pref);
        }
        fit_opts o = {.log = NULL};
        memset(&res, 0, sizeof res);
        if (fit_run(&t, 1, &o, &res, err, sizeof err) == 0) {
            int w = wm_save(&res.model, "/dev/null", err, sizeof err);
            FZ_CHECK(w == 0 || w == -2);
            fz_price(&res.model);
        }
        fit_result_free(&res);
        fit_trace_free(&t);
    }
    return 0;
}

static int fz_k_kernel(void *u, const ptrace_kernel *k) { (void)u; FZ_CHECK(k->name != NULL); return 0; }
static int fz_k_mem(void *u, const ptrace_mem *m) { (void)u; (void)m; return 0; }
static int fz_k_api(void *u, const ptrace_api *a) { (void)u; (void)a; return 0; }
static int fz_k_range(void *u, const ptrace_range *r) { (void)u; FZ_CHECK(r->name != NULL); return 0; }
static int fz_k_host(void *u, int64_t th, int64_t s, int64_t e) { (void)u; (void)th; (void)s; (void)e; return 0; }

/* kineto: a torch.profiler / Kineto Chrome-trace JSON through the event scanner (every
 * callback on), then through the importer into the fit's record model. */
int fz_kineto(const uint8_t *data, size_t n)
{
    static fit_trace t;
    psrc_mem m;
    pkineto_info info;
    char err[1024];
    pkineto_cb cb = {fz_k_kernel, fz_k_mem, fz_k_api, fz_k_range, fz_k_range, fz_k_host, NULL};
    psrc_mem_init(&m, (const char *)data, n, "fuzz.trace.json");
    (void)pkineto_probe((const char *)data, n);
    (void)pkineto_scan(&m.base, &cb, &info, err, sizeof err);
    if (timport_load(&t, fz_file(data, n), "kineto", NULL, err, sizeof err) == 0)
        fit_trace_free(&t);
    return 0;
}

/* sglog: an SGLang server log (its "Decode batch" lines), line by line and as a file. */
int fz_sglog(const uint8_t *data, size_t n)
{
    sglog g;
    sglog_interval iv;
    char err[1024];
    size_t a = 0;
    while (a < n) {
        size_t b = a;
        while (b < n && data[b] != '\n')
            b++;
        if (sglog_parse_line((const char *)data + a, b - a, &iv, err, sizeof err) == 1)
            FZ_CHECK(iv.running_req >= -1);
        a = b + 1;
    }
    sglog_init(&g);
    g.read_to_cut = 1;   /* as specsim log reads: a gzip log cut short up to its last whole line */
    if (sglog_read(&g, fz_file(data, n), 0, err, sizeof err) == 0) {
        sglog_drop_rank_copies(&g);
        if (g.server_args) {    /* the logged ServerArgs(...) repr, read as a Python literal */
            pm_shape sh;
            (void)phasemap_shape_repr(&sh, g.server_args, g.server_args_len, "fuzz", err, sizeof err);
        }
    }
    sglog_free(&g);
    return 0;
}

/* The harnesses, by name (tests/fuzz/<name>/ holds the seeds, tests/fuzz/regress/<name>/
 * the inputs that once crashed). A new reader: a fz_ function, a row here, a seed directory,
 * its name in the Makefile's FUZZ_TARGETS and a command in tests/test_fuzz_regress.c. */
typedef struct {
    const char *name;
    int (*fn)(const uint8_t *data, size_t n);
} fz_target;

static const fz_target fz_targets[] = {
    {"trace", fz_trace},     {"model", fz_model},   {"config", fz_config},
    {"link", fz_link},       {"gsweep", fz_gsweep}, {"arsweep", fz_arsweep},
    {"fit", fz_fit},         {"kineto", fz_kineto}, {"sglog", fz_sglog},
};
#define FZ_NTARGETS (sizeof fz_targets / sizeof fz_targets[0])

/* Once per process: GSL's errors become messages, not abort(). */
static void fz_init(void)
{
    static int done;
    if (!done) {
        gslerr_install();
        done = 1;
    }
}
