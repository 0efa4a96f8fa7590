/* sbloop: the serving loop of specbench. A closed loop at concurrency C: every running
 * request has a prompt (its KV assumed cached: decode-only steady state) and an output
 * length; a finished request is replaced by a fresh one at the next iteration. Each
 * iteration runs SGLang's EAGLE phases (draft, verify, accept, extend) or the plain
 * decode (decode, sample), each wrapped in an NVTX range that names the phase and its
 * shape, from CUDA graphs captured lazily per (phase, draft width, padded batch) or
 * eagerly above the largest captured batch. The host draws each request's accepted
 * prefix at alpha from a seeded generator after copying the small accept result back
 * (the sync point a real server has). Workload: C up to a few hundred, steps up to ~15. */
#ifndef SBLOOP_H
#define SBLOOP_H
#include "sbmodel.h"

enum { SB_PH_DRAFT, SB_PH_VERIFY, SB_PH_ACCEPT, SB_PH_EXTEND, SB_PH_DECODE, SB_PH_SAMPLE,
       SB_NPH };
extern const char *const sb_phase_name[SB_NPH];

#define SB_CG_MAX 128
typedef struct {
    int n;                     /* 0: no CUDA graphs at all */
    int bs[SB_CG_MAX];         /* ascending, unique */
} sb_cglist;
/* "1,2,8,24,64", "none", or "sglang:MAX" (SGLang's speculative list: 1..8, 10..32 step 2,
 * 40..64 step 4, 72..256 step 8, 272.. step 16, up to MAX). Returns 0, or -1 with err naming the value. */
int sb_cg_parse(const char *spec, sb_cglist *l, char *err, size_t errlen);
/* Smallest captured size >= bs, or 0 (eager) above the largest. */
int sb_cg_bucket(const sb_cglist *l, int bs);
/* "1;2;8;24;64" (for CSV cells) into buf. */
void sb_cg_format(const sb_cglist *l, char *buf, size_t len);

#define SB_MAX_APOS 16
typedef struct {
    int spec;                  /* 1: EAGLE iteration, 0: baseline decode */
    int steps, topk;           /* chain: topk 1, draft_tokens = steps + 1 */
    double alpha;              /* per-position acceptance probability */
    int n_apos;                /* > 0: per-position conditional alphas instead */
    double apos[SB_MAX_APOS];
    int concurrency;
    int prompt_lo, prompt_hi;  /* prompt length drawn uniformly in [lo, hi] */
    int out_lo, out_hi;        /* output length likewise */
    int warmup;                /* iterations before measuring (>= 1 with graphs) */
    double seconds;            /* measured time to aim for, when iters == 0 */
    int iters;                 /* > 0: exactly this many measured iterations */
    int min_iters, max_iters;
    uint64_t seed;
    int rep;
    int capture;               /* 1: the measured window between cudaProfilerStart and Stop
                                  (specprof --capture-range profiler-api records it alone) */
} sb_cfg;

typedef struct {
    double tok_s;              /* output tokens per second, all requests */
    double tok_s_req;          /* per request: tok_s / concurrency */
    double iter_us;            /* wall time per iteration (host clock, synchronised) */
    double accept_len;         /* mean tokens gained per request-iteration (bonus included) */
    double phase_us[SB_NPH];   /* mean per iteration, CUDA events around each phase */
    double host_us;            /* iter_us - sum of phases: host work and gaps */
    double ctx_mean;           /* mean KV length of the running requests */
    int iters, rows, graph;    /* rows after padding; graph 1 if replayed from graphs */
    long tokens;
    int finished;              /* requests that completed in the window */
    double wall_s;
} sb_result;

typedef struct sb_engine sb_engine;
/* The engine keeps the graphs (reused by later points of the same shape) and the
 * pinned buffers. Caller destroys; the model stays the caller's. */
sb_engine *sb_engine_create(sb_model *m, const sb_cglist *cg);
void sb_engine_destroy(sb_engine *e);
/* Runs one measured point. Exits on CUDA errors. */
void sb_run_point(sb_engine *e, const sb_cfg *c, sb_result *res);
/* Graphs captured so far and the time spent capturing them. */
void sb_engine_stats(const sb_engine *e, int *graphs, double *capture_ms);

/* Enqueue one phase eagerly (no NVTX, no graph) on the model's stream, with rows rows
 * and draft width q; exposed for --check (graph vs eager). */
void sb_phase_enqueue(sb_model *m, int phase, int rows, int q, int bs);
/* Same phase replayed from a freshly captured graph (destroyed after). */
void sb_phase_graph_once(sb_model *m, int phase, int rows, int q, int bs);
#endif
