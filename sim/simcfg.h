/* simcfg: the knobs of a simulation (every what-if of DESIGN.md), one table that serves the
 * command line (getopt_long), JSON config files (same names) and sweep grids. Each knob
 * remembers where it was set, so a bad value is reported as "SOURCE: field F: value V:
 * why". simcfg_resolve turns a config into sim_params (loading the model, parsing specs). */
#ifndef SIMCFG_H
#define SIMCFG_H
#include <stddef.h>
#include "sim.h"

#define SIMCFG_STR 512

typedef struct {
    char   model[SIMCFG_STR];
    char   acceptance[SIMCFG_STR];
    double accept_len;                      /* > 0: the alpha giving this accept length */
    int    steps, topk, draft_tokens;       /* draft_tokens 0: steps+1 */
    int    concurrency;
    long   requests, iterations, warmup;
    char   output_len[SIMCFG_STR];
    long   prompt_len;
    int    stagger;
    char   cuda_graph_bs[SIMCFG_STR];
    int    cuda_graph_max_bs;               /* 0: no cap beyond the list */
    double eager_launch_us, graph_launch_us; /* < 0 (the default): the model's */
    int    ranks;                           /* 0 (the default): the model's */
    char   link[SIMCFG_STR];
    char   allreduce[64];
    double jitter_scale;
    double host_scale;
    int    host_stalls;             /* 1: the model's host stalls drawn (sim_params.no_stalls) */
    int    sync_segments;
    long   seed;
    char   timeline[SIMCFG_STR];
    long   timeline_iterations;
    int    baseline;
    int    baseline_reuse;                  /* sweep: share baselines between configs */
    int    json, csv, quiet, perf;
    int    jobs;
    char   out[SIMCFG_STR];
    double precision;                       /* relative; 0: fixed iterations */
    double seconds;                         /* benchmark length of the interval; 0: long run */
    int    intervals;
    char   shard[32];                       /* sweep: "I/N" (empty: the whole grid) */
    char   loop[32];                        /* "" (the default): the model's loop */
} simcfg;

enum { SK_INT, SK_LONG, SK_DBL, SK_STR, SK_FLAG, SK_ALPHA };
/* flags of a knob */
#define SK_SPEC_ONLY 1   /* does not change the baseline run (sweeps share baselines) */
#define SK_OUTPUT    2   /* changes only the output, not the results */
#define SK_NOJSON    4   /* command line only */
#define SK_SWEEP     8   /* only `specsim sweep` reads it */
#define SK_PATH     16   /* a file name: a config file must give it as a string */

typedef struct {
    const char *name;     /* long option and JSON key ('_' and '-' both accepted) */
    int         type;
    size_t      off, size;
    double      min, max; /* numeric range, inclusive (max < min: none) */
    int         flags;
    const char *unit;
    const char *help;
} simcfg_knob;

#define SIMCFG_MAX_KNOBS 64
extern const simcfg_knob simcfg_knobs[];
extern const int simcfg_nknobs;

/* Sources of the knobs' current values, for messages ("defaults", "command line", a file). */
typedef struct {
    simcfg cfg;
    const char *src[SIMCFG_MAX_KNOBS];  /* borrowed strings (static or the argv/path) */
} simcfg_set_t;

void simcfg_defaults(simcfg_set_t *s);
const simcfg_knob *simcfg_find(const char *name);     /* by name or alias; NULL if unknown */
int  simcfg_index(const simcfg_knob *k);
/* Sets knob k from text v, coming from src (field named `field` in messages: "--steps"
 * or "steps"). Returns 0 or -1 with "SRC: field F: value V: why". */
int  simcfg_set(simcfg_set_t *s, const simcfg_knob *k, const char *v, const char *src,
                const char *field, char *err, size_t errlen);
/* Applies a JSON object of knobs from path. 0 or -1 with err. */
int  simcfg_load_json(simcfg_set_t *s, const char *path, char *err, size_t errlen);
/* Writes knob k's value as text (resolved values are written by the caller). */
void simcfg_format(const simcfg *c, const simcfg_knob *k, char *buf, size_t len);

/* A loaded model shared by runs (sweeps load each path once). */
typedef struct {
    char     path[SIMCFG_STR];
    wm_model model;
} simcfg_model;

/* Resolves s into p: model (from *mc if its path matches, else loaded into *mc), acceptance,
 * graphs, link, algorithm, output length, defaults from the model; checks every field.
 * spec selects the speculative run (1) or the baseline (0). 0 or -1 with err. */
int  simcfg_resolve(const simcfg_set_t *s, simcfg_model *mc, int spec, sim_params *p,
                    char *err, size_t errlen);
/* The link as resolved (preset name or custom) with its numbers, for the banner. */
void simcfg_link_describe(const sim_params *p, const char *spec, char *buf, size_t len);
#endif
