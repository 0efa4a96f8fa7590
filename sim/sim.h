/* sim: the discrete-event simulator of a tensor-parallel server running speculative
 * decoding (or the plain decode baseline). Entities: R ranks, each a host thread and a GPU
 * stream; the TP group's collectives; the requests (batch.h). Costs come from a workload
 * model (wmodel.h); see docs/simulator.md for the event model and what is approximated.
 * Workload: thousands of iterations per run, tens of thousands of runs per sweep. */
#ifndef SIM_H
#define SIM_H
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include "wmodel.h"
#include "accept.h"
#include "cgraph.h"
#include "allreduce.h"
#include "batch.h"
#include "interval.h"

/* Everything a run needs, resolved (simcfg.c fills it from the CLI; tests fill it by hand).
 * The model is borrowed: the caller keeps it alive for the run. */
typedef struct {
    const wm_model *model;
    accept_model    acc;
    cg_list         graphs;           /* captured batch sizes; n = 0: always eager */
    ar_link         link;
    const ar_algo  *algo;             /* NULL: no collectives (only allowed for ranks 1) */
    int    spec;                      /* 1: speculative iteration; 0: plain decode baseline */
    int    steps, topk, draft_tokens;
    int    concurrency;               /* closed-loop C: running requests */
    long   requests;                  /* 0: closed loop for `iterations`; else run until
                                         this many requests finished */
    long   iterations;                /* measured iterations (after warmup) */
    long   warmup;                    /* iterations excluded from the metrics */
    batch_lendist out_len;
    long   prompt_tokens;
    int    stagger;                   /* initial requests start part-way (steady state) */
    double graph_launch_us;           /* host cost of one graph launch */
    double eager_launch_us;           /* host cost per eagerly launched kernel */
    int    ranks;
    double jitter_scale;              /* 0: deterministic */
    double host_scale;                /* every host duration (gaps, launches) x this; 1: the
                                         fitted host (0 reads as 1). A what-if for a slower or faster CPU, and
                                         the validation's "host speed the run had" */
    int    sync_segments;             /* collective segments per phase (>= 1) */
    unsigned long seed;
    long   timeline_iterations;       /* spans for this many iterations after warmup */
    int    eager_launch_override;     /* 1: eager_launch_us for every phase (a what-if);
                                         0: a phase's own cost where the model has one
                                         (wm_phase_model.eager_launch_us) */
    /* added with the intervals (docs/simulator.md, "Intervals", "Precision") */
    double precision;                 /* > 0: end the window once tok_s is known to
                                         +-precision (relative, SIM_PREC_Z standard errors;
                                         `iterations` is then the most it may run); 0: run
                                         `iterations` */
    double bench_s;                   /* the interval is for a benchmark measuring this many
                                         seconds; 0: the long-run throughput (with
                                         `requests`: that finite run) */
    int    intervals;                 /* 1: compute tok_s_p10/p90 and their parts */
    int    eta_note;                  /* 1: a fixed-length run projected past SIM_ETA_NOTE_S
                                         says once on stderr how long it will take
                                         (specsim run; a sweep says it per grid) */
    int    no_stalls;                 /* 1: a phase's host stalls (wm eager_stall_*) not drawn,
                                         their mean spread over every launch (--host-stalls 0) */
    int    loop;                      /* enum wm_loop: the loop simulated (docs/simulator.md,
                                         "Hugging Face assisted generation"); simcfg takes
                                         the model's unless --loop says */
} sim_params;

/* --precision's half-width in standard errors of the batch-means estimate: 4, so that a
 * sweep of 10^4 configurations has every one within +-precision of its long-run tok/s
 * (a normal error passes 4 sd once in 16,000; the batch means' own error in the standard
 * error, ~15% with 20-40 batches, is what the margin over 3 sd is for; docs/simulator.md,
 * "Precision", and sim/precision_check.sh measure it). */
#define SIM_PREC_Z 4.0
/* The fewest measured iterations a --precision run stops at: the batch means need
 * BMEANS_MAX/2 batches of a few iterations to estimate a variance. */
#define SIM_PREC_MIN_ITERS 64
/* ... and at least this many requests (or one per slot, if fewer) that finished
 * in the window: the per-request metrics (TPOT percentiles) come from them. */
#define SIM_PREC_MIN_REQS 10

enum { SIM_TRACK_HOST, SIM_TRACK_GPU };
/* One span of the timeline (a host gap, a launch, a phase, a collective segment). */
typedef struct {
    int         rank, track;
    const char *name;                 /* static string */
    const char *cat;                  /* "gap", "launch", "wait", "phase", "collective" */
    int64_t     start_ns, end_ns;
    long        iteration;
    int         bs, padded_bs, eager; /* the phase's batch (phases and launches) */
    double      tokens;
    int         collectives;          /* in this segment (collective spans) */
    double      comm_us;              /* all-reduce time in this segment */
} sim_span;

typedef struct {
    void (*on_event)(void *ctx, int64_t t_ns, int type, int a, int64_t b); /* every pop */
    void (*on_span)(void *ctx, const sim_span *s);   /* only for timeline iterations */
    batch_req_fn on_request;                          /* finished (and, at the end, running) */
    void *ctx;
} sim_hooks;

typedef struct {
    /* engine */
    uint64_t events;                  /* events popped from the queue */
    double   sim_us;                  /* simulated time of the whole run */
    long     iterations_total;        /* including warmup */
    /* measured window */
    long     iterations;
    double   window_us;
    long     tokens;                  /* emitted in the window */
    long     tokens_total;            /* emitted in the whole run */
    long     requests_done;           /* finished in the whole run */
    long     requests_measured;       /* behind the per-request metrics */
    int      partial;                 /* per-request metrics from running requests */
    double   tok_s;                   /* aggregate */
    double   req_tok_s_mean, req_tok_s_p50;
    double   tpot_p50_ms, tpot_p90_ms, tpot_p99_ms;
    double   accept_len;              /* mean tokens gained per request and iteration */
    double   bs_mean;                 /* mean running requests per iteration */
    double   iter_us;                 /* mean iteration (boundary to boundary) */
    /* breakdown per iteration, rank 0; the GPU part adds up to iter_us:
     * draft+verify+accept+extend+decode+sample (compute) + comm + wait + idle */
    double   phase_us[WM_NPHASE];
    double   comm_us;                 /* all-reduce time (the link model) */
    double   wait_us;                 /* waiting in collectives for slower ranks, jitter */
    double   idle_us;                 /* GPU idle: waiting for the host */
    double   host_us;                 /* host busy: gaps + launches (overlaps the GPU) */
    double   launch_us;               /* of which launches */
    double   eager_frac;              /* fraction of phases run eagerly */
    /* per phase, the most tokens of a forward, query tokens per row and KV context of a
     * request (the batch's mean) it was priced at (warmup included; 0: the phase never ran):
     * wm_beyond_fit says whether the model was fitted that far */
    double   phase_tokens_max[WM_NPHASE], phase_q_max[WM_NPHASE], phase_kv_row_max[WM_NPHASE];
    /* prediction interval of tok_s (docs/simulator.md, "Intervals"; 0 without intervals):
     * p10 and p90 (p50 is tok_s), each part's relative standard deviation, the parts */
    double   tok_s_p10, tok_s_p90;
    double   unc_model, unc_run, unc_est;
    /* d log(window) / d log(host speed): every host duration (gaps, launches) scaled by h,
     * the window's derivative at h = 1 over the window (0: the GPU alone decides; 1: the
     * host does); unc_run includes the host's speed (interval.h host_var) */
    double   host_share;
    interval_parts iv;
    /* the estimate's precision: SIM_PREC_Z standard errors / tok_s (0: too few batches) */
    double   precision;
    int      precise;                 /* --precision: 1 reached, 0 stopped at `iterations` */
} sim_result;

/* The phases run r priced beyond what model m was fitted from (wm_beyond_fit), as bit
 * 1 << phase; 0: none, or a model that does not say. */
unsigned sim_beyond_fit(const wm_model *m, const sim_result *r);
/* Writes "specsim WHAT: warning: model NAME: phase P: NOTE<wm_beyond_fit's sentence>: ..."
 * to f for each phase whose maxima in r lie past m's traces (NOTE: "" for one run; a
 * sweep's "in 84 of 226 runs, up to "). */
void sim_warn_beyond_fit(FILE *f, const char *what, const wm_model *m, const sim_result *r,
                         const char *note);
/* Checks p against the model (phases present, counts sane). 0 or -1 with err
 * "FILE: field F: value V: why" (FILE = what), never touching the run. */
int sim_check(const sim_params *p, const char *what, char *err, size_t errlen);
/* The monotonic clock in seconds (run and sweep timings, the run-length note). */
double sim_now_s(void);
/* Runs one simulation. hooks may be NULL. Returns 0, or -1 with err (bad parameters,
 * out of memory), or -2 with err when the input gives no result a user could trust: a
 * duration or the simulated time past the engine's limits (a cost out of proportion), no
 * measured window (a warmup longer than the run), or a window without throughput or with a
 * non-finite metric (costs all 0). On 0 every metric is finite and tok_s > 0.
 * Deterministic: the same p gives the same *res, bit for bit. */
int sim_run(const sim_params *p, const sim_hooks *hooks, sim_result *res,
            char *err, size_t errlen);
#endif
