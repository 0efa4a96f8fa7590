/* fit_int: what passes between the stages of the fit (fit.h's fit_run), one file a stage:
 *   fit_trace.c      trace files -> fit_trace (records, interned strings)
 *   fit_sample.c     a long trace file -> fit_trace of a capped set of its instances
 *   fit_instances.c  records -> phase instances (fr_inst) with their GPU elements (fr_elem)
 *   fit_match.c      instances -> a phase's groups (fr_phase: by position and layers, or by name)
 *   fit_host.c       instances -> launch costs and host gaps (fr_inst.gap_us)
 *   fit_phase.c      a phase's groups -> the model's groups (fit_group), host gap, collectives
 *   fit_group.c      one group's points -> its cost equation (columns, knee, tiles; fit.h)
 *   fit_waves.c      CUDA waves: occupancy, wave geometry, a kernel's cost per wave
 *   fit_sweep.c      a GEMM group's sweep forms against the smooth fit
 *   fit_run.c        fit_run: the stages in order; fit_plot.c: the plots of a result
 * Internal to models/fit_*.c (not an API). Functions a stage exports carry its file's name
 * (fit_match_phase); a file's static helpers a short form of it (fm_). */
#ifndef FIT_INT_H
#define FIT_INT_H
#include <stdint.h>
#include "fit.h"
#include "bounds.h"

/* Nested phase ranges searched back from a time (phases do not nest in practice). */
#define FIT_BACK_SEARCH 64

#define FIT_NCCL_OPS 4

typedef struct {
    const char *op;            /* run pool */
    int    n;                  /* collectives in the instance */
    double bytes;              /* summed */
} fr_nccl;

typedef struct {
    int     trace, phase;
    size_t  seq;               /* index among the trace's instances in the whole capture (a
                                  capped load keeps some: fit_trace.rng_keep) */
    const char *rname;
    int64_t r0, r1, thread;
    /* shape, from the range name */
    double  tokens, kv;
    int     F, graph, has_graph_key, bs, rows, steps, topk, experts, moe_topk;
    /* host: the launch calls made inside the range */
    int64_t lb, le, a1e;       /* first start, last end, end of the earliest call */
    int     napi;
    double  lite_us;           /* --mode lite: specprof's interposer time inside the instance's
                                  recorded calls (the end record's calibration: graph_timing_us
                                  per timed graph launch, call_us per other call), taken out
                                  of its launch time */
    /* calls that block until the GPU is done (a copy to pageable host memory, a synchronize):
     * the host time they spend waiting, how many waited, the end of the first wait (the GPU
     * time the host was released at) and the GPU time of the instance's records after it */
    double  sync_wait_us, post_sync_us;
    int     nsync;
    int64_t sync0_e;
    /* GPU */
    int64_t g0, g1;
    int     nrec, any_graph_kernel;
    size_t  e0;                /* elements (kernels after merging) in the run's array */
    int     ne;
    double  sum_us, nccl_us;   /* kernels and copies; collectives */
    double  copy_us;           /* memcpy/memset (in sum_us too) */
    double  cupti_us;          /* profiler time taken out of the kernels (FIT_CUPTI_KERNEL_US) */
    double  lwait_us;          /* GPU idle inside the range waiting for a later launch call
                                  (the simulator charges launches before the phase) */
    int     ncopy;
    fr_nccl nc[FIT_NCCL_OPS];
    int     nnc;
    /* matching and host results */
    int     drop;              /* FR_KEEP or why it was left out */
    int     nfwd;              /* elements per forward; -1: not of the phase's shape */
    int     busy, has_gap, launch_bound;
    int     gap_prev;          /* the phase of the instance the gap is measured from; -1 */
    double  gap_us, inter_us;
} fr_inst;


enum { FR_KEEP, FR_NOKERNELS, FR_CUT, FR_PARTIAL, FR_EARLY, FR_WINDOW, FR_CONTEXT,
       FR_NDROP };   /* fr_inst.drop; FR_CONTEXT: loaded as a kept instance's predecessor */

/* The window of a windowed trace holding ts_ns, -1 when none does or the trace has none
 * (fit_trace.c). */
long fit_trace_window_of(const fit_trace *t, int64_t ts_ns);

typedef struct {
    const char *cls, *name;    /* class (run pool), a representative name (trace pool) */
    double dur_us;
    int    launches;
    /* the element's longest kernel (a GEMM and its split-K reduce: the GEMM): thread blocks
     * per launch and blocks resident at once on the device (fit_blocks_per_sm x SMs; 0:
     * unknown) */
    double blocks, cap, dmax_us;
    const char *dname;         /* that kernel's name (trace pool) */
    int64_t call_end_ns;       /* end of its (first) kernel's launch call; 0: not known */
} fr_elem;

typedef struct {
    int    *inst;              /* kept instance indices, ninst */
    int     ninst;
    int     by;
    int     G;                 /* real groups (the gap pseudo-group is index G) */
    char    name[WM_GROUPS_MAX][WM_NAME_MAX];
    const char *gcls[WM_GROUPS_MAX];  /* FIT_BY_NAME: the class of each group */
    int    *pos2g;             /* FIT_BY_POSITION: group of each position (prefix, one
                                  forward, suffix) */
    int     A, nfwd, B;        /* FIT_BY_POSITION: prefix, forward and suffix lengths */
    double *Y, *L;             /* [ninst][G+1]: us and launches per forward */
    double *WB, *WC;           /* [ninst][G+1]: blocks and resident capacity of the group's
                                  kernel (its elements agree; else 0: no wave term) */
    double *WD;                /* [ninst][G+1]: that kernel's us per forward */
    double *POS;               /* [G+1][WM_POS_BINS]: each group's launch profile summed over
                                  the eager instances (fit_match.c) */
    int     gap_graph;         /* the gap group is fitted on the graph replays alone
                                  (fit_phase.c, fph_gap_graph_only) */
    int    *WV;                /* [ninst][G+1]: the group's kernel variant in the instance
                                  (fit_point.variant; 0: not known) */
    int     count[WM_GROUPS_MAX];
    int     copy_g, other_g;   /* "(copies)", "(other kernels)" groups, or -1 */
    unsigned char sd_capped[WM_GROUPS_MAX + 1];   /* 1: the group's spread was capped (a
                                  torch trace's fit once said so in 22 lines) */
} fr_phase;

/* The simulator's jitter truncates at 3 sd and needs (1 + sd*z) > 0: sd_frac < 1/3
 * (sim/jitter.h). Larger measured spreads are capped, with one warning for all groups. */
#define FIT_SD_FRAC_MAX 0.3
/* A left-out cell's relative error counts up to this in a group's out-of-sample residual
 * (fit_group.c's cross-validation, fit_sweep.c's comparison of forms). */
#define FIT_LOO_REL_MAX 1.0

typedef struct {
    const fit_trace *tr;
    int     nt;
    const fit_opts *o;
    fit_result *res;
    fit_strpool *pool;
    fr_inst *in;
    size_t  nin, capin;
    fr_elem *el;
    size_t  nel, capel;
    size_t *tin0;              /* per trace: first instance index; tin0[nt] = nin */
    fr_phase ph[WM_NPHASE];
    const char **tnames;
    int     moe_E, moe_k;
    int     any_graph_phase;   /* some kept phase instance was replayed from a graph */
    double  node_us;           /* profiler's extra host time per graph node at launch */
    double  sd_capped_max;     /* the largest spread capped at FIT_SD_FRAC_MAX (fr_phase's
                                  sd_capped), and where it was: said once, in fr_finish */
    char    sd_capped_at[2 * WM_NAME_MAX + 32];
    char   *err;
    size_t  errlen;
} fr_run;

/* Microseconds from CUPTI nanoseconds. */
static inline double fit_us(int64_t ns) { return (double)ns / 1000.0; }

/* Query tokens per batch row of an instance: tokens / rows (rows= of the range), else its
 * F-forward draft shape is one per row; 0 when the range has no rows= (unknown). */
static inline double fit_inst_q(const fr_inst *in)
{
    return in->rows > 0 ? in->tokens / in->rows : 0;
}

/* KV tokens of an instance on a KV-rows basis (wm_phase_model.kv_rows): WM_KV_REAL, the
 * range's ctx= (summed over the real rows); WM_KV_PADDED, each padded row of a graph
 * replay counted with the real rows' mean context (ctx x rows / bs: an attention that reads
 * every row's KV buffer, padded or not). Without bs= and rows= the two are the same. */
static inline double fit_inst_kv(const fr_inst *in, int kv_rows)
{
    if (kv_rows == WM_KV_PADDED && in->bs > 0 && in->rows > in->bs)
        return in->kv * (double)in->rows / (double)in->bs;
    return in->kv;
}

/* Query tokens per row of a point (attention tiles once q_tile is applied); unknown: 1. */
static inline double fit_point_q(const fit_point *p) { return p->q_per_row > 0 ? p->q_per_row : 1.0; }

/* ---- fit_trace.c ---- */
/* The string pool: fit_trace_pool_destroy accepts NULL; interned strings live until then.
 * fit_trace_intern*: the pooled copy, or NULL when out of memory. */
fit_strpool *fit_trace_pool_create(void);
void        fit_trace_pool_destroy(fit_strpool *p);
const char *fit_trace_intern(fit_strpool *p, const char *s);
const char *fit_trace_intern_n(fit_strpool *p, const char *s, size_t n);
/* Grows *arr (cap elements of sz bytes) to hold n + 1. 0, or -1 when out of memory. */
int         fit_trace_grow(void **arr, size_t *cap, size_t n, size_t sz);

/* ---- fit_run.c ---- */
/* A warning to R->o->log (counted in the result); a failure into R->err (returns -1). */
void fit_run_warn(fr_run *R, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int  fit_run_fail(fr_run *R, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- fit_instances.c ---- */
/* Stage 1 for trace ti: its phase instances (R->in from R->nin on; R->tin0[ti]), their
 * launch calls, GPU records and elements (R->el). 0, or -1 with R->err. */
int fit_instances_trace(fr_run *R, int ti);
/* The MoE shape (R->moe_E, R->moe_k): the options', else the instances' experts=/moe_topk=.
 * 0, or -1 with R->err when traces disagree. */
int fit_instances_moe(fr_run *R);

/* The range name's shape into in (tokens, ctx, bs, rows, graph, steps, topk, forwards,
 * experts, moe_topk): the phase, or -1 when its first word names none. *bad: a key whose value
 * does not parse; *badk: its range when it parsed but lies outside (*badv the value). */
int fit_instances_parse(const char *name, fr_inst *in, const char **bad, const bnd_kind **badk,
                        double *badv);
/* The profiler's time per kernel taken out of node-level traces' kernels (FIT_CUPTI_KERNEL_US,
 * fit_instances.c; fit_nodes.c takes it out of the eager kernels it copies into a lite trace). */
double fit_instances_cupti_kernel_us(void);
/* 1 when a kernel name is a GEMM's (cuBLAS, CUTLASS: the fit's "gemm" group, matched by role;
 * fit_probe.c names an eager probe's unseen kernels as one where the phase's graphs hold GEMMs). */
int fit_instances_is_gemm(const char *name);

/* Host stalls in unprofiled (lite) captures: a program's own pauses (garbage collection, the
 * OS, a slow host state) are part of its steady state, and a benchmark's tokens over its time
 * pays them, so the host costs fitted from such traces (the eager launch rate, the host gaps)
 * are means over every instance up to FIT_STALL_MAX_X times the median (a host gap across
 * two capture windows, a first-use stall, are out), not robust means. Measured: an
 * H100 host (call 17) paused 5-8% of every eager phase's time in instances 2-17x its median
 * rate, spread over the whole 258 s run; the robust fit predicted its eager loop 7.9% fast.
 * Node-level (CUPTI) traces keep the robust means: their stalls include the profiler's own
 * (call 16's reference: 4-4.6 ms gaps the lite program did not have). None beyond 17x in
 * four lite eager captures (calls 9, 11, 16, 17). */
#define FIT_STALL_MAX_X 20.0
int fit_run_unprofiled(const fr_run *R);  /* every trace of the run unprofiled (lite) */
int fit_run_stalls_in(const fr_run *R);   /* fit_run_unprofiled, and not FIT_LITE_STALLS=0
                                             (to see what it changes) */
/* fr_inst order: by start, the outer of two equal starts first (qsort). */
int fit_instances_cmp(const void *a, const void *b);

/* ---- fit_match.c ---- */
/* Stage 2 for phase p: R->ph[p] (groups, per instance and group us, launches, waves). */
int fit_match_phase(fr_run *R, int p);

/* ---- fit_host.c ---- */
/* Stage 3: launch costs (graph, eager per kernel), then every instance's host gap. */
int fit_host_launch_costs(fr_run *R, double *graph_us, double *eager_us);
int fit_host_gaps(fr_run *R, double graph_us, double eager_us);

/* ---- fit_phase.c ---- */
/* Stage 4 for phase p: its groups fitted into R->res->model, host gap and collectives;
 * then its totals per cell (R->res->phase[p].total). 0, or -1 with R->err. */
int fit_phase_fit(fr_run *R, int p);
int fit_phase_totals(fr_run *R, int p);

/* ---- fit_group.c ---- */
/* qsort_r comparator: indices into the fit_point array ctx by (trace, tokens, q, index). */
int    fit_group_cmp_idx(const void *a, const void *b, void *ctx);
/* Median of v[0..n) (v is sorted; 0 when n is 0). */
double fit_group_median(double *v, size_t n);
/* 1 when the environment variable name is "0": a fit rule turned off (FIT_GAP_GRAPH=0, ...)
 * for tests and experiments (fit_group.c). */
int fit_env_off(const char *name);
/* The degrees of freedom a host level between windows needs (sum over configurations of
 * their windows less one; fit_host.c, fit_hf.c). */
#define FIT_LEVEL_MIN_DF 4
/* Mean and sd of v[0..n) without the points fit_group leaves out (FIT_OUTLIER_K robust sd
 * and margins from the median). v is reordered. Returns the points left out. */
size_t fit_group_robust(double *v, size_t n, double *mean, double *sd);
/* The outlier limit of that rule: a value further than it from *med (the median of v) is
 * left out. v is sorted. */
double fit_group_robust_lim(double *v, size_t n, double *med);

/* ---- fit_waves.c ---- */
/* Cost per wave of a group's wave kernel from its own measured time (kernel_us); 0: none. */
double fit_waves_kernel_per_wave(const fit_point *pts, size_t n, const fit_group_ctx *c);

/* ---- fit_sweep.c ---- */
/* The GEMM sweep forms against the smooth fit *out (leave one cell out); replaces *out and
 * updates st (loo_*, sweep_kept, the cells' fit) when a sweep form wins. */
void fit_sweep_try(const fit_point *pts, size_t n, const fit_group_ctx *c, wm_group *out,
                   fit_group_stats *st);
#endif
