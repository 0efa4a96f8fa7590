/* phasemap: turns the range names of an imported trace into the fit's phase instances. The
 * fit reads specprof's words (`verify tokens=32 bs=5 rows=8 ctx=8123 graph=1 steps=3`,
 * traces/FORMAT.md); other programs name their spans otherwise, so a naming profile
 * translates each foreign span into those words before the fit, and the fit's stages stay
 * as they are. Profiles: `specprof` (the words as they are), `sglang` (SGLang's step and
 * stage spans with the speculative shape of its server_args.json) and a user's phase map
 * (a name pattern per phase with captures). docs/importers.md states every rule.
 * Workload: 10^3..10^6 spans per trace. */
#ifndef PHASEMAP_H
#define PHASEMAP_H
#include <stddef.h>
#include "fit.h"
#include "gcycle.h"

#define PM_GRAPH_BS_MAX 512
#define PM_RULES_MAX 64
#define PM_CTX_BS_MAX 1024          /* batch sizes with their own KV per row from a log */
#define PM_SEL_MAX 64               /* --graph-cycle / --shape options, each for some traces */

/* A --graph-cycle or --shape option: [TRACE:]VALUE, for the trace named TRACE (its path, or
 * the path's last components) or, without TRACE, for every trace no other one names. */
typedef struct {
    char     sel[200];
    gc_order order;
    gc_shape shape;
} pm_sel;

/* The speculative shape and CUDA-graph batch sizes of the server that wrote the trace. */
typedef struct {
    int  known;                 /* steps/topk/draft_tokens were given */
    int  steps, topk, draft_tokens;
    int  tp_size;               /* 0: not given */
    int  cuda_graph;            /* 1: CUDA graphs on (SGLang's default), 0: disabled */
    int  ngraph_bs;             /* captured batch sizes, increasing, each once; 0: not known */
    int  graph_bs[PM_GRAPH_BS_MAX];
    char source[600];           /* where it came from (file or flags), for the report */
    char missing[120];          /* server arguments of a speculative server without the
                                   shape: which field is missing or null ("" otherwise) */
} pm_shape;

typedef enum { PM_AUTO, PM_SPECPROF, PM_SGLANG, PM_MAP } pm_profile;

/* One --phase-map rule: a span whose whole name matches pat is an instance of phase. */
typedef struct {
    int  phase;
    char pat[200];
} pm_rule;

/* Caller-owned; phasemap_init sets the defaults (auto profile, no shape, no context). */
typedef struct {
    pm_profile profile;
    pm_shape   shape;
    double     ctx_per_row;     /* KV tokens per row where a span carries none; < 0: none */
    char       ctx_source[200];
    /* from an SGLang server log (--ctx-log): mean #token / #running-req per batch size
     * (0: none logged at that size) and over all lines (0: no log) */
    double     ctx_log_bs[PM_CTX_BS_MAX];
    double     ctx_log_mean;
    char       ctx_log_source[200];
    int        nrules;
    pm_rule    rules[PM_RULES_MAX];
    /* defaults of a phase map (captures win): < 0 not set; per phase for forwards */
    double     map_rows, map_ctx, map_graph;
    int        map_forwards[WM_NPHASE];
    int        shape_given;     /* server-args or spec-shape was given: no search */
    /* the graph-cycle route (no annotations): the options as given, and the ones resolved
     * for one trace by phasemap_shape_for (cyc_on: this trace's phases come from its cycle) */
    int        ncyc, nshp;
    pm_sel     cyc[PM_SEL_MAX], shp[PM_SEL_MAX];
    int        cyc_on, shp_on;
    gc_order   cyc_order;
    gc_shape   cyc_shape;
} phasemap;

/* What an apply did, for the report. */
typedef struct {
    const char *profile;        /* the profile applied ("specprof", "sglang", "map") */
    size_t spans;               /* host ranges in the trace */
    size_t instances;           /* phase instances written */
    size_t per_phase[WM_NPHASE];
    size_t folded;              /* step spans folded into their enclosing stage span */
    size_t borrowed;            /* stage spans that took their batch from a neighbour step */
    size_t ignored;             /* spans that name no phase (IDLE, EXTEND prefill, ...) */
    size_t prefill_steps;       /* of which prefill forwards: step[EXTEND ..], step[MIXED ..] */
    size_t no_batch;            /* stage spans with no step span to take a batch from */
    size_t split;               /* verify stages split at their step span's end into verify
                                   and accept (a trace without verify_sample spans) */
    size_t sample_after;        /* sample instances made of the time after a plain decode
                                   step span, up to the next span (SGLang samples there) */
    int    ctx_from;            /* 0: none, 1: g_sk= of the spans, 2: ctx_per_row,
                                   3: the server log's #token per running request */
    char   ignored_names[200];  /* a few of them, for messages */
    gc_stats cycle;             /* profile "cycle": what the graph launch cycle gave */
    char   note[400];           /* a line for the report ("" none) */
} pm_stats;

void phasemap_init(phasemap *pm);
/* "auto", "specprof", "sglang". 0 or -1 with err. */
int  phasemap_set_profile(phasemap *pm, const char *name, char *err, size_t errlen);
/* A phase map from a file (when spec names one) or inline text: lines or ';'-separated
 * entries `PHASE=PATTERN` (pattern: `*` any text, `{rows}` `{bs}` `{tokens}` `{ctx}`
 * `{steps}` `{topk}` `{forwards}` `{graph}` a number), defaults `rows=N` `ctx=N`
 * `graph=0|1` `steps=N` `topk=N` `draft_tokens=N` `PHASE.forwards=N`, `#` comments. Sets
 * the profile to PM_MAP. 0 or -1 with err naming the entry. */
int  phasemap_load_map(phasemap *pm, const char *spec, char *err, size_t errlen);

/* Reads the speculative shape from an SGLang server_args.json (the /get_server_info reply
 * that `python -m sglang.profiler` saves beside the traces): speculative_num_steps,
 * speculative_eagle_topk, speculative_num_draft_tokens, the decode graphs' batch sizes
 * (cuda_graph_config.decode's bs or max_bs in 2026 releases, else cuda_graph_bs_decode /
 * cuda_graph_max_bs_decode, else cuda_graph_bs / cuda_graph_max_bs: a list, or SGLang's
 * default list up to the max) and whether they are off, tp_size. A file without
 * speculative_algorithm (or with null) is a baseline server: known stays 0. A speculative
 * server with a shape field missing or null (NGRAM: speculative_num_steps None): known stays
 * 0 and missing names the field; the trace that needs the shape is refused with it. 0, or -1
 * (not JSON, a shape field that is not a number >= 1, a bad cuda_graph_bs). */
int  phasemap_shape_load(pm_shape *s, const char *path, char *err, size_t errlen);
/* The same fields from the `server_args=ServerArgs(...)` line that SGLang logs at start-up
 * (text: the line, NUL-terminated at len; label names it in messages). 0 or -1. */
int  phasemap_shape_repr(pm_shape *s, const char *text, size_t len, const char *label, char *err,
                         size_t errlen);
/* Looks for server_args.json in the trace's directory and its parent (of the file itself, a
 * symbolic link followed); 1 found (s filled,
 * found names it), 0 none, -1 a file that does not parse. */
int  phasemap_shape_find(pm_shape *s, const char *trace_path, char *found, size_t foundlen,
                         char *err, size_t errlen);
/* "STEPS,TOPK,DRAFT_TOKENS" from a flag. 0 or -1. */
int  phasemap_shape_flag(pm_shape *s, const char *v, char *err, size_t errlen);
/* "1,2,4,8" or "max:N" (SGLang's default list up to N). 0 or -1. */
int  phasemap_graph_flag(pm_shape *s, const char *v, char *err, size_t errlen);
/* SGLang's default captured batch sizes up to max_bs (server_args.py, speculative:
 * 1..8, 10..32 step 2, 40..64 step 4, 72..256 step 8, 272.. step 16). Returns how many the
 * list holds; above PM_GRAPH_BS_MAX (max_bs over 7632) s keeps the first PM_GRAPH_BS_MAX and
 * the caller refuses it. */
int  phasemap_sglang_graph_bs(pm_shape *s, int max_bs);
/* Rows after padding: the smallest captured size >= bs when graphs are on and bs is not
 * above the largest (*graph 1), else bs (*graph 0, eager). */
int  phasemap_pad(const pm_shape *s, int bs, int *graph);

/* The naming options shared by `specsim fit` and `specsim import`: name is one of
 * "profile", "phase-map", "server-args", "spec-shape", "cuda-graph-bs", "ctx" (KV tokens
 * per row), "ctx-log" (an SGLang server log: #token / #running-req per batch size),
 * "graph-cycle" ([TRACE:]ORDER: phases from the CUDA-graph launch cycle, gcycle.h) and
 * "shape" ([TRACE:]rows=R,steps=S,...: the configuration of such a trace). 1 when name is one of them and value applied, 0 when it is not one, -1 with err
 * for a bad value. */
int  phasemap_option(phasemap *pm, const char *name, const char *value, char *err, size_t errlen);
/* Lines of help for those options, for the CLIs' usage texts. */
extern const char phasemap_options_help[];
/* The shape for trace path: the one given (server-args / spec-shape options) or, when none
 * was, server_args.json beside the trace (phasemap_shape_find); and the --graph-cycle and
 * --shape options that name path (else the ones that name no trace). 0 or -1 with err. */
int  phasemap_shape_for(phasemap *pm, const char *trace_path, char *err, size_t errlen);

/* KV context summed over the rows of an instance of bs rows without g_sk=: from the log's
 * #token per running request at that batch size (or over the whole log), else ctx_per_row,
 * else 0. *from gets 3, 2 or 0. */
double phasemap_ctx(const phasemap *pm, int bs, int *from);

/* Rewrites t's ranges into phase instances in specprof's words (the others are dropped).
 * With a graph cycle resolved for the trace (cyc_on): the instances of gcycle_apply, the
 * annotations ignored, the words from the --shape (rows padded to the captured batch sizes
 * when known; steps/topk/draft_tokens from it, else from the speculative shape; ctx from it,
 * else --ctx-log/--ctx); refused without --shape rows=, or steps for speculative phases.
 * Profile auto: sglang when a span is named like SGLang's (step[...], draft, verify,
 * draft_extend), else specprof. Returns 0, or -1 with err naming the file, the field and
 * the value: no span names a phase (with the names seen), a speculative SGLang trace
 * without the speculative shape, a map rule without tokens and no shape to derive them. */
int  phasemap_apply(const phasemap *pm, fit_trace *t, pm_stats *st, char *err, size_t errlen);
#endif
