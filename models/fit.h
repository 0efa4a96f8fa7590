/* fit: turns specprof traces of a speculative-decoding workload into the workload model the
 * simulator replays (wmodel.h). Phase instances come from NVTX ranges, kernels are matched
 * into groups across instances and traces, each group's cost vs tokens is fitted with GSL
 * least squares, host gaps and launch costs come from the launch API records. docs/fit.md
 * states the fitted equation, the matching rules and what is refused.
 * Workload: tens of traces of a few seconds each (10^4..10^6 kernels), tens of groups. */
#ifndef FIT_H
#define FIT_H
#include <stdio.h>
#include <stddef.h>
#include "ptrace.h"
#include "wmodel.h"

/* ---- traces ----------------------------------------------------------------------------- */

typedef struct fit_strpool fit_strpool;   /* interned strings (opaque) */

/* A range kept by a capped load: its phase instance's index in the whole capture's instances
 * (in start order) and whether it is only there as the predecessor of a kept one (its host
 * gap's start: loaded, not fitted). */
typedef struct {
    size_t seq;
    int    context;
} fit_rng_keep;

/* One trace as the fit needs it: the GPU records, the launch API calls and the NVTX ranges,
 * with times in CUPTI nanoseconds. Strings point into the trace's own pool. Caller-owned
 * struct: fit_trace_init or fit_trace_load fills it, fit_trace_free releases what it holds. */
typedef struct {
    char           file[512];     /* the path or label, for messages */
    int            has_header;
    ptrace_header  hdr;
    int            truncated;     /* no specprof_end: a cut-off capture */
    int            cut_last_line; /* a last line cut mid-write was dropped */
    size_t         bad_lines;     /* other lines that did not parse (skipped) */
    char           bad_first[256];/* the first of them: where and why ("" when unknown) */
    size_t         api_cut;       /* API calls left out: not inside one window (fit_trace_drop_cut_api) */
    ptrace_kernel *kern; size_t nkern, capkern;
    ptrace_mem    *mem;  size_t nmem,  capmem;
    ptrace_api    *api;  size_t napi,  capapi;
    ptrace_range  *rng;  size_t nrng,  caprng;
    ptrace_window *win;  size_t nwin,  capwin;   /* node-level windows (windowed captures; none:
                                                    everything was recorded), in time order */
    ptrace_lite    lite;          /* a lite capture's end record: its counts and interposer
                                     calibration (lite.on; traces/FORMAT.md "Lite mode") */
    ptrace_graphlaunch *gl; size_t ngl, capgl;   /* graph launches recorded at graph level
                                                    (graph_trace events: --mode lite, --between
                                                    graph); fit_nodes fills them with nodes */
    fit_strpool   *pool;
    /* a capped load (fit_sample_load, docs/fit.md "Long captures"): NULL / 0 otherwise */
    fit_rng_keep  *rng_keep;      /* per range (parallel to rng): why it was kept */
    int            has_rec_end;   /* rec_end_ns is the file's latest GPU record end (the
                                     records of instances not kept were not loaded) */
    int64_t        rec_end_ns;
    size_t         sampled_out[WM_NPHASE];   /* phase instances not loaded (the cap) */
} fit_trace;

/* A windowed capture's API calls that do not lie inside one window, left out (kept in
 * order); returns how many. fit_trace_load does it; tests and importers that add records
 * one by one call it after adding the windows. */
size_t fit_trace_drop_cut_api(fit_trace *t);
/* An empty trace named label (records added with fit_trace_add_*; tests, importers). */
int  fit_trace_init(fit_trace *t, const char *label);
/* Loads a trace file: specprof (traces/FORMAT.md, also a cut-off one: t->truncated set) or
 * Kineto/torch.profiler JSON, plain or gzip, through the importers of timport.h. The ranges
 * are as in the file (phasemap.h names a foreign trace's phases). Returns 0, or -1 with err. */
int  fit_trace_load(fit_trace *t, const char *path, char *err, size_t errlen);
/* The same for a specprof trace only (streamed through ptrace_scan_file, plain or gzip), with
 * its windows; the specprof entry of timport.h's table. */
int  fit_trace_load_specprof(fit_trace *t, const char *path, char *err, size_t errlen);
/* The default cap on phase instances kept per trace, phase and configuration (docs/fit.md
 * "Long captures"): the committed traces hold at most 52 (traces/hf/hf_k6: decode), the
 * fit's medians and regressions need tens per cell. */
#define FIT_INSTANCES_MAX_DEFAULT 128
/* The cap to use: FIT_INSTANCES_MAX from the environment when set (0: no cap), else def. */
int  fit_sample_cap(int def);
/* Loads a specprof trace keeping at most cap phase instances per phase and configuration
 * (the range's words but ctx=; chosen stratified over the whole capture, seeded) with the
 * records placed in them and the predecessor of each; the records of the others are never
 * kept. A trace with no configuration above the cap (or cap <= 0) loads as
 * fit_trace_load_specprof does, record for record. Reads the file three times (ranges,
 * launch calls, records). 0, or -1 with err. */
int  fit_sample_load(fit_trace *t, const char *path, int cap, char *err, size_t errlen);
/* Copies one record (and its strings) into t. 0, or -1 when out of memory. */
int  fit_trace_add_kernel(fit_trace *t, const ptrace_kernel *k);
int  fit_trace_add_mem(fit_trace *t, const ptrace_mem *m);
int  fit_trace_add_api(fit_trace *t, const ptrace_api *a);
int  fit_trace_add_range(fit_trace *t, const ptrace_range *r);
/* A window of a windowed capture (traces/FORMAT.md): phase instances must lie inside one,
 * and a host gap is measured only from a predecessor in the same window. In time order. */
int  fit_trace_add_window(fit_trace *t, const ptrace_window *w);
/* A graph launch recorded at graph level (its GPU span, no node records). */
int  fit_trace_add_graphlaunch(fit_trace *t, const ptrace_graphlaunch *g);
/* 1 when t is a --mode lite capture (no CUPTI in the process: its host times are the
 * unprofiled ones; traces/FORMAT.md). */
int  fit_trace_is_lite(const fit_trace *t);
/* 1 when t's host times are unprofiled: a lite capture whose header names no CUPTI version
 * (CUPTI never loaded). A lite trace made from a node-level one (specsim lite-from) keeps its
 * source's CUPTI version and calibration, and the fit corrects it as it does its source. */
int  fit_trace_unprofiled(const fit_trace *t);
void fit_trace_free(fit_trace *t);

/* ---- graph-level captures filled with nodes (models/fit_nodes.c) ------------------------- */

/* Launch calls of one reference instance fit_nodes_fill looks at (torchbench's eager verify:
 * ~1000 launches); the node probe's eager instances above it are not taken (fit_probe.c). */
#define FIT_NODES_CALLS_MAX 4096

/* What fit_nodes_fill did to one trace (docs/fit.md "Lite captures"). */
typedef struct {
    size_t instances_filled;   /* lite: phase instances given the reference's content */
    size_t graph_filled;       /* graph launches given node records */
    size_t self_filled;        /* of which from the same trace's windows (same executable) */
    size_t nearest;            /* instances (launches, windowed) from the nearest shape of
                                  their phase: no reference of the same configuration */
    size_t no_replay;          /* graph launches outside windows with no node-level replay */
    size_t no_span;            /* lite graph launch calls without a graph_trace event */
    size_t anchors_differ;     /* lite instances whose recorded calls (graph launches, blocking
                                  calls) are not the reference instance's, kind for kind */
    size_t positions_differ;   /* of those: another number of graph launches */
    size_t odd_refs;           /* reference instances marked odd: GPU idle inside their graph
                                  replays well above their configuration's (fn_mark_odd) */
    size_t launches_differ;    /* lite instances whose range's launches= (kernel launches the
                                  interposer counted) differs from the reference instance's
                                  eager kernel launch calls */
    size_t calls_added, records, windows_added;
} fit_nodes_stats;

/* Fills t before the fit. A --mode lite capture (fit_trace_is_lite): every phase instance
 * gets the kernels, copies and eager launch calls of a reference instance (ref[0..nref):
 * node-level captures; same phase and configuration, nearest ctx=; else the phase's nearest
 * shape by tokens then ctx, warned once to log with the count): the Nth graph launch's
 * records scaled into the lite launch's graph_trace span, carrying its corr and stream; the
 * eager calls mapped onto the lite host timeline (piecewise linear between the range's ends
 * and the calls both traces recorded), their records placed after them with the reference's
 * durations. A windowed capture with graph_trace events: each launch outside the windows from
 * the same executable's nearest replay inside a window (else by phase, shape and position
 * from ref), and a range whose launches were all filled gets a window (reason "graph").
 * Other traces: untouched. Returns 0, or -1 with err naming the file, range and phase (a
 * lite capture without references; a phase the references lack; out of memory). */
int  fit_nodes_fill(fit_trace *t, const fit_trace *ref, int nref, FILE *log, fit_nodes_stats *st,
                    char *err, size_t errlen);

/* ---- one group's cost vs tokens --------------------------------------------------------- */

/* One measurement of a group: its cost in one phase instance, per forward. */
typedef struct {
    double tokens;        /* tokens of the forward (padded rows included) */
    double kv_tokens;     /* KV context summed over the rows */
    double us;            /* measured cost, microseconds */
    int    trace;         /* index into fit_group_ctx.trace_names */
    double q_per_row;     /* query tokens per batch row (tokens / rows); 0: unknown, taken
                             as 1 (the KV x query-token column is then the KV column) */
    double waves;         /* set by fit_group from the context's wave geometry (the
                             caller's value is ignored) */
    double kernel_us;     /* of us: the group's wave kernel (the context's geometry), per
                             forward; 0: not measured */
    double sweep_us;      /* the GEMM sweep's sum for this forward (wm_sweep_us), when the
                             context's sweep is set; else ignored */
    int    variant;       /* the group's kernel variant in this forward (1, 2, ...: its top
                             kernel by full name; 0: not known): where variants change with
                             the query tokens, the attention tiles must step with them */
} fit_point;

/* What fit_group needs to name things in messages and to build the expert column. */
typedef struct {
    const char *const *trace_names;
    int    ntraces;
    const char *phase, *group;
    int    moe_experts, moe_topk;     /* 0: dense (no expert column) */
    /* how a row's tokens share experts (wm_phase_model.expert_row_exp; 0 or 1: each token
     * routed alone): the expert column counts wm_routed_tokens(tokens, q, this) */
    double expert_row_exp;
    /* CUDA waves of the group's dominant kernel (fit_wave_geometry): blocks per launch =
     * wave_blocks0 + wave_blocks_per_token * tokens, wave_capacity blocks resident at once;
     * wave_capacity 0: no wave column */
    double wave_blocks0, wave_blocks_per_token, wave_capacity;
    double wave_blocks_max;           /* 0: blocks not capped */
    double wave_blocks_per_expert;    /* blocks per distinct expert touched (MoE slots) */
    /* 1: the points carry sweep_us (the group is all of a phase's GEMMs and the model has
     * a GEMM sweep for sweep_phase): the alternative  us = base + sweep_scale * sweep_us
     * is fitted too and kept when it predicts left-out cells better (docs/fit.md) */
    int    sweep;
    int    sweep_phase;
    /* set by fit_group, not by callers: 1 when the KV x query-token column cannot be told
     * from the KV and token columns (two query-token counts and no kernel variant per tile
     * count: fg_kvq_identifiable in models/fit_group.c) */
    int    kvq_off;
} fit_group_ctx;

/* Repeat cell: the points of one token count (and query tokens per row) in one trace
 * (one configuration). */
typedef struct {
    int    trace;
    double tokens, kv_tokens;         /* kv: mean over the cell */
    double q_per_row;                 /* query tokens per row (cells differ in it too) */
    double us_mean, us_sd;            /* measured */
    double fit_us;                    /* the fitted cost at the cell's (tokens, mean kv) */
    int    n;
    double waves;                     /* CUDA waves of the group's kernel at the cell */
} fit_cell;

typedef struct {
    double chisq;                     /* weighted residual sum of squares (relative units) */
    double rms_rel, max_rel;          /* over cells: |fit - mean| / mean */
    int    ncols;                     /* columns kept (of base, tokens, experts, kv, kv*q) */
    int    ncells;
    int    noutliers;                 /* points left out: far from their cell's median */
    fit_cell *cell;                   /* owned: free() */
    /* the GEMM sweep alternative (ctx sweep set): leave-one-cell-out rms relative errors of
     * it and of the smooth fit (-1: not compared), and whether it was kept */
    double loo_sweep, loo_smooth;
    int    sweep_kept;
    /* the leave-one-cell-out rms relative error of the columns the cross-validation chose
     * (each cell predicted by the fit without it); -1: not cross-validated (fewer than 8
     * cells) */
    double loo_rel;
    /* the same left-out errors split into a part proportional to the cell's cost and a part
     * that is not (fit_resid_two_part): err^2 = (loo_frac * cost)^2 + loo_abs_us^2; loo_frac
     * -1: not split (no cross-validation) */
    double loo_frac, loo_abs_us;
    int    cols_dropped;              /* columns left out: fewer measurements than columns */
} fit_group_stats;

/* A group's relative error at a configuration its traces did not hold (its resid_frac, for
 * the prediction intervals; docs/fit.md, "Residuals"): out of sample where the statistics
 * have it (loo_sweep/loo_smooth, else loo_rel), else the in-sample rms corrected for the
 * columns fitted. */
double fit_group_resid_frac(const fit_group_stats *st);
/* The same error in two parts where the cross-validation measured it per cell (loo_frac,
 * loo_abs_us): *frac the part proportional to the group's cost, *abs_us the part that is not
 * (wm_group resid_frac and resid_abs_us); elsewhere fit_group_resid_frac and 0. */
void   fit_group_resid(const fit_group_stats *st, double *frac, double *abs_us);
/* Splits n left-out errors, rel[i] relative to cost[i] (> 0), into a part proportional to
 * the cost and a part that is not: least squares of rel^2 = frac^2 + abs_us^2 / cost^2, each
 * cell weighing the same, both parts >= 0 (a negative one is dropped and the other refitted
 * alone: frac^2 the mean of rel^2, or abs_us^2 the fit through the origin). The mean of
 * rel^2 over the cells is kept (with an intercept; through the origin to least squares).
 * Fewer than 3 cells or one cost: frac = the rms, abs_us = 0. */
void   fit_resid_two_part(const double *rel, const double *cost, size_t n, double *frac,
                          double *abs_us);

/* Fits  us = base + per_token*max(0, tokens-knee) + per_token_all*tokens
 *            + per_expert*experts(tokens)
 *            + (per_kv_ktoken + per_kvq_ktoken*tiles
 *               + per_kvq2_ktoken*max(0, tiles - q_tile_knee))*kv/1000,
 *   tiles = ceil(q_per_row/q_tile)
 * by weighted least squares (each cell weighs the same, residuals relative to the cell's
 * mean); the knee is searched over the distinct token counts; the KV, KV x tiles, KV x
 * tiles past the knee (3 tile counts or more; q_tile_knee: the second largest) and
 * all-token columns are chosen by leave-one-cell-out cross-validation (8 cells or more);
 * q_tile over powers of two for a group with a KV term (ties: the coarser; where the
 * points' kernel variants differ, only a q_tile whose tile counts and variants match one
 * to one, if there is one); a column whose
 * coefficient comes out negative is dropped and the rest refitted. sd_frac is the pooled relative
 * spread of repeats around the fit. Points far from their cell's median (capture and warm-up
 * iterations) are left out. Fills out (name and count are the caller's) and, if
 * st is not NULL, the statistics (st->cell is malloc'd: the caller frees it).
 * Returns 0, or -1 with err "TRACE: phase P: group G: field F: value V: why" for a NaN,
 * infinite or negative value and for a single distinct token count. */
/* With c->wave_capacity > 0 a wave term per_wave_us * waves(tokens) (wm_waves): when every
 * point has the wave kernel's own time (kernel_us > 0), per_wave_us comes from that (the
 * wave form kept when it predicts left-out token counts within 10%, docs/fit.md) and the
 * rest of the group is fitted as below; else the waves are a cross-validated column. When
 * kept, out gets the wave geometry. */
int fit_group(const fit_point *pts, size_t n, const fit_group_ctx *c, wm_group *out,
              fit_group_stats *st, char *err, size_t errlen);

/* Thread blocks of one SM's worth resident at once for a kernel of block threads, regs
 * registers per thread and smem_bytes shared memory per block, on a Hopper SM (H100/H200:
 * 65536 registers, 2048 threads, 32 blocks, 228 KB shared memory; registers allocated per
 * warp in units of 256; 1 KB of shared memory reserved per block; CUDA C Programming Guide,
 * compute capability 9.0 table, and the occupancy calculator). 0 when the block does not fit. */
int fit_blocks_per_sm(double threads, double regs, double smem_bytes);

/* Wave geometry of a group from (tokens, blocks per launch, capacity) of its dominant kernel
 * in n instances: blocks = min(b0 + b1 * tokens, bmax) by least squares, b0 and b1 over the
 * instances below the largest block count when that count is reached at several token
 * counts (bmax 0 otherwise: no cap); kept only when exact to half a block (+0.1%) at every
 * instance, b1 > 0, b0 >= -0.5, the capacity is the same in all, and the waves differ
 * between two token counts. An MoE expert-slot kernel (experts E > 0: b0 = 0, the cap is
 * E slots of bmax/E blocks and b1 = topk such slots per token) is written as bmax/E blocks
 * per distinct expert touched (its slots of experts no token chose do no work). Fills c's
 * wave_* fields and returns 1, else clears them and returns 0 (no wave term). */
int fit_wave_geometry(const double *tokens, const double *blocks, const double *cap, size_t n,
                      int experts, int topk, fit_group_ctx *c);

/* Expected distinct experts touched by `tokens` tokens, topk of E each (the formula of
 * wm_experts_touched, without a model). */
double fit_experts(int experts, int topk, double tokens);

/* ---- the whole fit ------------------------------------------------------------------------ */

enum { FIT_BY_POSITION, FIT_BY_NAME };   /* how a phase's kernels were matched */

typedef struct {
    int    moe_experts, moe_topk;     /* > 0: overrides the traces' experts=/moe_topk= args */
    const char *name;                 /* model name; NULL: derived from the device */
    FILE  *log;                       /* warnings and notes; NULL: silent */
    const wm_sweep *sweep;            /* GEMM sweep to price the GEMM groups with (copied
                                         into the model); NULL: none */
} fit_opts;

typedef struct {
    int    gap;                       /* 1: the pseudo-group of GPU idle time in the phase */
    fit_group_stats st;
} fit_group_res;

typedef struct {
    int    present;
    int    by;                        /* FIT_BY_POSITION or FIT_BY_NAME */
    int    ninst;                     /* instances fitted */
    int    ndropped;                  /* instances left out (cut off, no kernels, partial) */
    int    nsampled_out;              /* instances a capped load did not keep (fit_sample_load) */
    int    forwards_max;
    fit_group_res grp[WM_GROUPS_MAX]; /* parallel to model.phase[p].groups */
    int    ncells;                    /* phase totals per cell: span vs the model's sum */
    fit_cell *total;                  /* owned */
    double gap_sd_us;                 /* host gap spread (also in the model) */
    int    ngaps;                     /* host gaps measured */
    int    gap_outliers;              /* of which left out (capture, warm-up, stalls) */
    int    nbusy;                     /* instances queued behind GPU work (gap from the host) */
} fit_phase_res;

/* Result of fit_run: the model plus what the plots and the report need. Caller-owned;
 * fit_result_free releases the arrays. */
typedef struct {
    wm_model model;
    fit_phase_res phase[WM_NPHASE];
    int    ntraces;
    int    nwarnings;
    int    graph_launches, eager_instances;  /* samples behind the launch costs */
} fit_result;

/* Fits a model from n loaded traces. Returns 0, or -1 with err naming the trace file, the
 * phase, the group and the value (docs/fit.md lists what is refused). */
int  fit_run(const fit_trace *traces, int n, const fit_opts *o, fit_result *res,
             char *err, size_t errlen);
void fit_result_free(fit_result *res);

/* Writes per group DIR/<phase>_<g>.dat (cells: tokens, kv, measured, sd, fitted), a fitted
 * curve DIR/<phase>_<g>.fit, per phase the totals DIR/<phase>_total.dat, and DIR/plot.gp,
 * a gnuplot script that renders DIR/<phase>_<g>.png. DIR is created. 0 or -1 with err. */
int  fit_plot(const fit_result *res, const char *dir, char *err, size_t errlen);

/* `specsim fit TRACES... -o MODEL.json [--plot DIR] [--name N] [--moe E,K]`
 * (models/fitcmd.c). Exit status 0, 2 on bad input or a refused fit, 1 on I/O errors. */
int  fitcmd_main(int argc, char **argv);
#endif
