/* simcfg: the knob table and its parsers. One row per knob: its name (long option, JSON
 * key, grid name), type, place in simcfg, range and help. The CLI, the JSON loader and the
 * sweep grid all go through simcfg_set, so a value is checked the same way wherever it
 * comes from, and the message names where it came from. */
#include "simcfg.h"
#include "bounds.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cjson/cJSON.h>

#define K(name, type, field, min, max, flags, unit, help) \
    {name, type, offsetof(simcfg, field), sizeof(((simcfg *)0)->field), min, max, flags, unit, help}

#define SIMCFG_REQ_ITERS 20000L
/* The most measured iterations a --precision run takes when --iterations does not say: 10^6
 * iterations are 1-6 s of one core (make bench: 0.4-6 us per iteration). */
#define SIMCFG_PREC_MAX_ITERS 1000000L

const simcfg_knob simcfg_knobs[] = {
    K("model", SK_STR, model, -1, -2, SK_PATH, "", "workload model JSON (docs/model-format.md)"),
    K("acceptance", SK_STR, acceptance, -1, -2, SK_SPEC_ONLY, "", "acceptance model: alpha:A, "
      "positional:P1,P2,.. or histogram:W0,W1,.. (weights of accepting 0,1,.. tokens)"),
    K("alpha", SK_ALPHA, acceptance, 0, 1, SK_SPEC_ONLY, "", "shorthand for --acceptance "
      "alpha:A (i.i.d. acceptance per position, 0 <= A < 1)"),
    K("accept-len", SK_DBL, accept_len, 0, 1000, SK_SPEC_ONLY, "tokens", "instead of "
      "--alpha: the i.i.d. alpha whose draft yields this many tokens per iteration on average "
      "(accepted + 1, SGLang's logged accept length); 0 = unset"),
    K("steps", SK_INT, steps, 1, 32, SK_SPEC_ONLY, "", "draft depth (SGLang "
      "--speculative-num-steps)"),
    K("topk", SK_INT, topk, 1, 64, SK_SPEC_ONLY, "", "draft tree branching "
      "(--speculative-eagle-topk); 1 = chain"),
    K("draft-tokens", SK_INT, draft_tokens, 0, BND_Q_TOKENS_MAX, SK_SPEC_ONLY, "tokens", "verify width per "
      "request (--speculative-num-draft-tokens); 0 = steps+1 (a chain)"),
    K("concurrency", SK_INT, concurrency, 1, BND_ROWS_MAX, 0, "requests", "closed-loop running "
      "requests (alias --bs)"),
    K("requests", SK_LONG, requests, 0, BND_ITERATIONS_MAX, 0, "requests", "stop after this many "
      "requests finished (0 = closed loop for --iterations)"),
    K("iterations", SK_LONG, iterations, 0, BND_ITERATIONS_MAX, 0, "", "measured iterations (after "
      "--warmup): given, a fixed length (or, with --precision, the most); else --precision "
      "decides (with --precision 0: 1000, and at least 20000/concurrency for a speculative "
      "closed loop); with --requests, a cap (0 = none)"),
    K("precision", SK_DBL, precision, 0, 0.999, 0, "fraction", "end a closed-loop run once "
      "its tok/s is known to +-P (0.01 = 1%: 4 standard errors of batch means, with the "
      "acceptance draws as a control variate); 0 = a fixed --iterations; off when "
      "--iterations is given without it"),
    K("seconds", SK_DBL, seconds, 0, 1e9, 0, "s", "the prediction interval (p10/p90) is for "
      "a benchmark that measures this many seconds (its own acceptance draws and jitter); "
      "0 = the long-run throughput (with --requests: that finite run); at least one iteration"),
    K("warmup", SK_LONG, warmup, 0, BND_ITERATIONS_MAX, 0, "", "iterations left out of the metrics"),
    K("output-len", SK_STR, output_len, -1, -2, 0, "tokens", "output length: N, uniform:A:B "
      "or exp:MEAN"),
    K("prompt-len", SK_LONG, prompt_len, 0, BND_TOKENS_MAX, 0, "tokens", "prompt length: the KV "
      "context a request starts with"),
    K("stagger", SK_INT, stagger, 0, 1, 0, "", "1: initial requests start part-way through "
      "their output (steady state); 0: all start at 0"),
    K("cuda-graph-bs", SK_STR, cuda_graph_bs, -1, -2, 0, "", "captured batch sizes: 1,2,4,8,.. "
      "or sglang[:MAX] (SGLang's list) or none"),
    K("cuda-graph-max-bs", SK_INT, cuda_graph_max_bs, 0, BND_ROWS_MAX, 0, "requests", "drop captured "
      "sizes above this (0 = keep the list)"),
    K("loop", SK_STR, loop, -1, -2, 0, "", "the loop simulated: sglang-eagle (SGLang's EAGLE "
      "worker) or hf-assisted (Hugging Face generate with assistant_model: batch 1, "
      "num_assistant_tokens = --steps); default: the model's"),
    K("eager-launch-us", SK_DBL, eager_launch_us, 0, BND_COST_US_MAX, 0, "us", "host cost per kernel "
      "launched eagerly (default: the model's)"),
    K("graph-launch-us", SK_DBL, graph_launch_us, 0, BND_COST_US_MAX, 0, "us", "host cost of one "
      "CUDA-graph launch (default: the model's)"),
    K("ranks", SK_INT, ranks, 1, BND_RANKS_MAX, 0, "", "tensor-parallel size (default: the model's)"),
    K("link", SK_STR, link, -1, -2, 0, "", "interconnect preset (specsim presets), "
      "alpha=US,beta=GBPS[,floor=US] or a link file FILE.json (specsim fit-allreduce)"),
    K("allreduce", SK_STR, allreduce, -1, -2, 0, "", "all-reduce algorithm: nccl, ring, tree, "
      "oneshot, twoshot, custom"),
    /* host-scale bounds: 0.05..20 holds every host the project has seen (the H200 machine's
     * eager loop moved 0.6-1.6x between processes, traces/torch/call6/pin.csv) with room */
    K("host-scale", SK_DBL, host_scale, 0.05, 20, 0, "", "multiplies every host duration "
      "(host gaps, scheduling per request, launch costs): 1.3 = a CPU 1.3x slower than the "
      "traced one"),
    K("host-stalls", SK_INT, host_stalls, 0, 1, 0, "", "1: draw the model's host stalls in "
      "eager launches (docs/simulator.md, \"Host stalls\"); 0: their mean spread over every "
      "launch"),
    K("jitter-scale", SK_DBL, jitter_scale, 0, 100, 0, "", "multiplies every measured "
      "spread (0 = deterministic costs)"),
    K("sync-segments", SK_INT, sync_segments, 1, 1e6, 0, "", "collective segments per "
      "phase (events per phase; straggler waits inside are drawn directly)"),
    K("seed", SK_LONG, seed, 0, 4294967295.0, 0, "", "seed of every random stream"),
    K("timeline", SK_STR, timeline, -1, -2, SK_OUTPUT | SK_PATH, "", "write a Chrome-trace JSON "
      "timeline (Perfetto) to this file"),
    K("timeline-iterations", SK_LONG, timeline_iterations, 0, 1e9, SK_OUTPUT, "",
      "iterations (after warmup) in the timeline"),
    K("baseline", SK_INT, baseline, 0, 1, SK_OUTPUT, "", "1: also run the plain decode "
      "baseline and print the speedup (--no-baseline = 0)"),
    K("baseline-reuse", SK_INT, baseline_reuse, 0, 1, SK_OUTPUT | SK_SWEEP, "", "sweep: configs that "
      "differ only in speculative knobs share one baseline run"),
    K("json", SK_FLAG, json, -1, -2, SK_OUTPUT, "", "results as JSON"),
    K("csv", SK_FLAG, csv, -1, -2, SK_OUTPUT, "", "results as CSV (header + one row)"),
    K("quiet", SK_FLAG, quiet, -1, -2, SK_OUTPUT, "", "no configuration banner"),
    K("perf", SK_FLAG, perf, -1, -2, SK_OUTPUT, "", "engine speed (events/s) on stderr"),
    K("jobs", SK_INT, jobs, 0, 4096, SK_OUTPUT | SK_SWEEP, "", "sweep: worker threads (0 = online CPUs)"),
    K("out", SK_STR, out, -1, -2, SK_OUTPUT | SK_NOJSON | SK_SWEEP, "", "sweep: write the CSV here "
      "(default stdout)"),
    K("intervals", SK_INT, intervals, 0, 1, SK_OUTPUT, "", "1: prediction intervals (p10, "
      "p50, p90 of tok/s and speedup; docs/simulator.md); 0: none (columns 0)"),
    K("shard", SK_STR, shard, -1, -2, SK_OUTPUT | SK_SWEEP, "", "sweep: run only part I of N "
      "of the grid (I/N, 1 <= I <= N; the N outputs' rows, concatenated in order, are the "
      "whole sweep's)"),
};
const int simcfg_nknobs = (int)(sizeof simcfg_knobs / sizeof simcfg_knobs[0]);

static const struct { const char *alias, *name; } simcfg_aliases[] = {
    {"bs", "concurrency"}, {"accept", "acceptance"}, {"tp", "ranks"},
};

void simcfg_defaults(simcfg_set_t *s)
{
    simcfg *c = &s->cfg;
    memset(s, 0, sizeof *s);
    strcpy(c->acceptance, "alpha:0.7");
    c->steps = 3;                   /* SGLang's auto choice for DeepSeek-like models (3,1,4) */
    c->topk = 1;
    c->draft_tokens = 0;
    c->concurrency = 1;
    c->iterations = 1000;
    c->warmup = 20;
    strcpy(c->output_len, "512");
    c->prompt_len = 1024;
    c->stagger = 1;
    strcpy(c->cuda_graph_bs, "sglang");
    c->eager_launch_us = -1;
    c->graph_launch_us = -1;
    strcpy(c->link, "nvlink4-8gpu");
    strcpy(c->allreduce, "nccl");
    c->jitter_scale = 1;
    c->host_scale = 1;
    c->host_stalls = 1;
    c->sync_segments = 4;
    c->seed = 1;
    c->timeline_iterations = 5;
    c->baseline = 1;
    c->baseline_reuse = 1;
    c->precision = 0.01;
    c->intervals = 1;
    for (int i = 0; i < simcfg_nknobs; i++)
        s->src[i] = "defaults";
}

int simcfg_index(const simcfg_knob *k) { return (int)(k - simcfg_knobs); }

const simcfg_knob *simcfg_find(const char *name)
{
    char buf[64];
    size_t n = strlen(name);
    if (n >= sizeof buf)
        return NULL;
    for (size_t i = 0; i <= n; i++)
        buf[i] = name[i] == '_' ? '-' : name[i];
    for (size_t i = 0; i < sizeof simcfg_aliases / sizeof simcfg_aliases[0]; i++)
        if (strcmp(buf, simcfg_aliases[i].alias) == 0)
            return simcfg_find(simcfg_aliases[i].name);
    for (int i = 0; i < simcfg_nknobs; i++)
        if (strcmp(buf, simcfg_knobs[i].name) == 0)
            return &simcfg_knobs[i];
    return NULL;
}

#define SIMCFG_ERR(...) do { snprintf(err, errlen, __VA_ARGS__); return -1; } while (0)

int simcfg_set(simcfg_set_t *s, const simcfg_knob *k, const char *v, const char *src,
               const char *field, char *err, size_t errlen)
{
    char *dst = (char *)&s->cfg + k->off;
    char *end;
    if (!v)
        v = "";
    switch (k->type) {
    case SK_INT:
    case SK_LONG: {
        errno = 0;
        double d = strtod(v, &end);    /* accept 1e6; must be a whole number */
        if (end == v || *end || errno || !isfinite(d) || d != floor(d))
            SIMCFG_ERR("%s: field %s: value \"%s\": not an integer", src, field, v);
        if (k->max >= k->min && (d < k->min || d > k->max))
            SIMCFG_ERR("%s: field %s: value %s: out of range: must be a whole number in "
                       "[%.15g, %.15g]%s%s", src, field, v, k->min, k->max,
                       k->unit[0] ? " " : "", k->unit);
        if (k->type == SK_INT)
            *(int *)dst = (int)d;
        else
            *(long *)dst = (long)d;
        break;
    }
    case SK_DBL:
    case SK_ALPHA: {
        errno = 0;
        double d = strtod(v, &end);
        if (end == v || *end || !isfinite(d))
            SIMCFG_ERR("%s: field %s: value \"%s\": not a number", src, field, v);
        if (k->type == SK_ALPHA) {
            if (!(d >= 0 && d < 1))
                SIMCFG_ERR("%s: field %s: value %s: must be in [0, 1) (the chance that a "
                           "draft token is accepted)", src, field, v);
            snprintf(dst, k->size, "alpha:%.17g", d);
            break;
        }
        if (k->max >= k->min && (d < k->min || d > k->max))
            SIMCFG_ERR("%s: field %s: value %s: out of range: must be in [%.15g, %.15g]%s%s",
                       src, field, v, k->min, k->max, k->unit[0] ? " " : "", k->unit);
        *(double *)dst = d;
        break;
    }
    case SK_STR:
        if (strlen(v) >= k->size)
            SIMCFG_ERR("%s: field %s: value \"%.40s...\": longer than %zu bytes", src, field,
                       v, k->size - 1);
        strcpy(dst, v);
        break;
    case SK_FLAG:
        if (strcmp(v, "1") == 0 || strcmp(v, "true") == 0 || *v == '\0')
            *(int *)dst = 1;
        else if (strcmp(v, "0") == 0 || strcmp(v, "false") == 0)
            *(int *)dst = 0;
        else
            SIMCFG_ERR("%s: field %s: value \"%s\": expected true/false or 1/0", src, field, v);
        break;
    }
    s->src[simcfg_index(k)] = src;
    /* --alpha and --acceptance write the same field: keep the source of the last one */
    if (k->type == SK_ALPHA)
        s->src[simcfg_index(simcfg_find("acceptance"))] = src;
    return 0;
}

int simcfg_load_json(simcfg_set_t *s, const char *path, char *err, size_t errlen)
{
    int rc = -1;
    char *buf = NULL;
    size_t n = 0;
    cJSON *root = NULL;
    if (bnd_read_file(path, BND_CONFIG_FILE_BYTES, "a config file", &buf, &n, err, errlen))
        return -1;
    if (memchr(buf, '\0', n)) {
        snprintf(err, errlen, "%s: invalid JSON at byte %zu: NUL byte (binary file?)", path,
                 (size_t)((char *)memchr(buf, '\0', n) - buf));
        goto out;
    }
    const char *end = NULL;
    root = cJSON_ParseWithOpts(buf, &end, 1);
    if (!root) {
        long off = end ? (long)(end - buf) : 0;
        snprintf(err, errlen, "%s: invalid JSON at byte %ld", path, off);
        goto out;
    }
    if (!cJSON_IsObject(root)) {
        snprintf(err, errlen, "%s: field (top level): value not an object: a config is "
                 "{\"knob\": value, ...}", path);
        goto out;
    }
    for (cJSON *it = root->child; it; it = it->next) {
        const simcfg_knob *k = simcfg_find(it->string);
        if (!k || (k->flags & SK_NOJSON)) {
            snprintf(err, errlen, "%s: field %s: value %s: unknown knob (see specsim run "
                     "--help)", path, it->string, cJSON_IsString(it) ? it->valuestring : "...");
            goto out;
        }
        /* the last of two once won in silence ("steps" twice, or "cuda-graph-bs" and
         * "cuda_graph_bs") */
        for (const cJSON *p = root->child; p != it; p = p->next)
            if (simcfg_find(p->string) == k) {
                char *v = cJSON_PrintUnformatted(it);
                snprintf(err, errlen, "%s: field %s: value %.64s: given twice (also as %s)",
                         path, it->string, v ? v : "...", p->string);
                free(v);
                goto out;
            }
        char val[SIMCFG_STR + 64];
        if (cJSON_IsString(it)) {
            snprintf(val, sizeof val, "%s", it->valuestring);
        } else if (cJSON_IsBool(it) && !(k->type == SK_FLAG || (k->type == SK_INT &&
                                                                  k->min == 0 && k->max == 1))) {
            /* true once read as 1: "steps": true ran steps 1 */
            snprintf(err, errlen, "%s: field %s: value %s: a boolean for a %s (true/false are "
                     "for on/off knobs)", path, it->string, cJSON_IsTrue(it) ? "true" : "false",
                     k->type == SK_STR ? "string" : "number");
            goto out;
        } else if (cJSON_IsBool(it)) {
            snprintf(val, sizeof val, "%d", cJSON_IsTrue(it) ? 1 : 0);
        } else if (cJSON_IsNumber(it) && (k->flags & SK_PATH)) {
            /* a file name: "model": 3 was opened as a file named "3" ("3: cannot open") */
            snprintf(err, errlen, "%s: field %s: value %.17g: a file name must be a string", path,
                     it->string, it->valuedouble);
            goto out;
        } else if (cJSON_IsNumber(it)) {
            snprintf(val, sizeof val, "%.17g", it->valuedouble);
        } else if (cJSON_IsArray(it) && k->type == SK_STR) {
            /* a list of numbers, e.g. "cuda_graph_bs": [1,2,4,8] */
            size_t used = 0;
            val[0] = '\0';
            for (cJSON *e = it->child; e; e = e->next) {
                if (!cJSON_IsNumber(e)) {
                    snprintf(err, errlen, "%s: field %s: value [...]: a list must hold numbers",
                             path, it->string);
                    goto out;
                }
                used += (size_t)snprintf(val + used, sizeof val - used, "%s%.17g",
                                         used ? "," : "", e->valuedouble);
                if (used >= sizeof val) {
                    snprintf(err, errlen, "%s: field %s: value [...]: list too long", path,
                             it->string);
                    goto out;
                }
            }
        } else {
            snprintf(err, errlen, "%s: field %s: value of the wrong type: expected a %s", path,
                     it->string, k->type == SK_STR ? "string" : k->type == SK_FLAG ? "boolean"
                     : "number");
            goto out;
        }
        if (simcfg_set(s, k, val, path, it->string, err, errlen))
            goto out;
    }
    rc = 0;
out:
    free(buf);
    cJSON_Delete(root);
    return rc;
}

void simcfg_format(const simcfg *c, const simcfg_knob *k, char *buf, size_t len)
{
    const char *src = (const char *)c + k->off;
    switch (k->type) {
    case SK_INT:
    case SK_FLAG:
        if (k->min > 0 && *(const int *)src == 0)   /* ranks: unset, the model's */
            snprintf(buf, len, "model");
        else
            snprintf(buf, len, "%d", *(const int *)src);
        break;
    case SK_LONG:  snprintf(buf, len, "%ld", *(const long *)src); break;
    case SK_DBL:
        if (*(const double *)src < k->min)           /* launch costs: unset, the model's */
            snprintf(buf, len, "model");
        else
            snprintf(buf, len, "%.15g", *(const double *)src);
        break;
    case SK_ALPHA:
    case SK_STR:   snprintf(buf, len, "%s", src); break;
    }
}

/* Source and field name of knob `name` for messages. */
static const char *simcfg_src(const simcfg_set_t *s, const char *name, char *field, size_t n)
{
    const simcfg_knob *k = simcfg_find(name);
    const char *src = s->src[simcfg_index(k)];
    snprintf(field, n, strcmp(src, "command line") == 0 ? "--%s" : "%s", name);
    return src;
}

/* A --link value names a link file (ar_link_load) when it ends in .json or is a readable
 * file; presets and alpha=..,beta=.. specs are tried first. */
static int simcfg_is_link_file(const char *v)
{
    size_t n = strlen(v);
    return (n > 5 && strcmp(v + n - 5, ".json") == 0) || access(v, R_OK) == 0;
}

/* err holds a model module's message ("link: value ..."): prefix source and field. */
static int simcfg_wrap(const simcfg_set_t *s, const char *name, char *err, size_t errlen)
{
    char field[64], inner[1024];
    const char *src = simcfg_src(s, name, field, sizeof field);
    snprintf(inner, sizeof inner, "%s", err);
    snprintf(err, errlen, "%s: field %s: %s", src, field, inner);
    return -1;
}

/* 1 when a run of model m times something: a kernel group with a cost (at 1 or 64 tokens),
 * a collective, a host gap or a launch cost in some phase, or a launch cost given (cfg). A
 * model of zeros ran to "no throughput to report" without naming the file. */
static int simcfg_model_costs(const wm_model *m, const simcfg *c)
{
    if (m->graph_launch_us > 0 || m->eager_launch_us > 0 || c->graph_launch_us > 0 ||
        c->eager_launch_us > 0)
        return 1;
    for (int p = 0; p < WM_NPHASE; p++) {
        const wm_phase_model *pm = &m->phase[p];
        if (!pm->present)
            continue;
        if (pm->host_gap_us > 0 || pm->host_gap_per_row_us > 0 || pm->eager_launch_us > 0 ||
            pm->ncolls > 0)
            return 1;
        for (int g = 0; g < pm->ngroups; g++)
            if (wm_group_us_q(m, &pm->groups[g], 1, 1000, 1) > 0 ||
                wm_group_us_q(m, &pm->groups[g], 64, 64000, 1) > 0)
                return 1;
    }
    return 0;
}

int simcfg_resolve(const simcfg_set_t *s, simcfg_model *mc, int spec, sim_params *p,
                   char *err, size_t errlen)
{
    const simcfg *c = &s->cfg;
    char field[64];
    const char *src;
    memset(p, 0, sizeof *p);
    if (!c->model[0])
        SIMCFG_ERR("%s: field model: value \"\": no workload model given (--model FILE)",
                   s->src[simcfg_index(simcfg_find("model"))]);
    if (strcmp(mc->path, c->model) != 0) {
        if (wm_load(&mc->model, c->model, err, errlen)) {
            mc->path[0] = '\0';
            return -1;
        }
        snprintf(mc->path, sizeof mc->path, "%s", c->model);
    }
    const wm_model *m = &mc->model;
    if (!simcfg_model_costs(m, c))
        SIMCFG_ERR("%s: field phases: every phase costs 0 us (no kernel group with a cost, no "
                   "host gap, no launch cost): nothing to time", c->model);
    p->model = m;
    p->spec = spec;
    if (accept_parse(&p->acc, c->acceptance, err, errlen))
        return simcfg_wrap(s, "acceptance", err, errlen);
    p->steps = c->steps;
    p->topk = c->topk;
    p->draft_tokens = c->draft_tokens ? c->draft_tokens : c->steps + 1;
    if (c->topk == 1 && c->draft_tokens && c->draft_tokens != c->steps + 1) {
        src = simcfg_src(s, "draft-tokens", field, sizeof field);
        SIMCFG_ERR("%s: field %s: value %d: a chain (topk 1) verifies steps+1 = %d tokens "
                   "(steps %d)", src, field, c->draft_tokens, c->steps + 1, c->steps);
    }
    if (c->draft_tokens == 1) {
        src = simcfg_src(s, "draft-tokens", field, sizeof field);
        SIMCFG_ERR("%s: field %s: value 1: must be >= 2 (or 0 = steps+1)", src, field);
    }
    if ((long)p->draft_tokens > (long)c->steps * c->topk + 1) {
        src = simcfg_src(s, "draft-tokens", field, sizeof field);
        SIMCFG_ERR("%s: field %s: value %d: more than steps*topk+1 = %ld: the draft tree has "
                   "no such nodes", src, field, p->draft_tokens, (long)c->steps * c->topk + 1);
    }
    if (c->accept_len > 0) {
        const char *asrc = s->src[simcfg_index(simcfg_find("acceptance"))];
        if (strcmp(asrc, "defaults") != 0) {
            src = simcfg_src(s, "accept-len", field, sizeof field);
            SIMCFG_ERR("%s: field %s: value %g: give either an accept length or an acceptance "
                       "model (%s set --acceptance/--alpha \"%s\"), not both", src, field,
                       c->accept_len, asrc, c->acceptance);
        }
        double a;
        if (accept_alpha_for_len(c->accept_len, p->steps, p->topk, p->draft_tokens, &a, err,
                                 errlen))
            return simcfg_wrap(s, "accept-len", err, errlen);
        char spec[64];
        snprintf(spec, sizeof spec, "alpha:%.17g", a);
        if (accept_parse(&p->acc, spec, err, errlen))
            return simcfg_wrap(s, "accept-len", err, errlen);
    }
    if (cg_parse(&p->graphs, c->cuda_graph_bs, err, errlen))
        return simcfg_wrap(s, "cuda-graph-bs", err, errlen);
    if (c->cuda_graph_max_bs > 0) {
        int w = 0;
        for (int i = 0; i < p->graphs.n; i++)
            if (p->graphs.bs[i] <= c->cuda_graph_max_bs)
                p->graphs.bs[w++] = p->graphs.bs[i];
        p->graphs.n = w;
    }
    if (p->graphs.n == 0 && strcmp(c->cuda_graph_bs, "none") != 0) {
        src = simcfg_src(s, "cuda-graph-max-bs", field, sizeof field);
        SIMCFG_ERR("%s: field %s: value %d: no captured size of \"%s\" is left (empty "
                   "batch-size list; use cuda-graph-bs none for eager only)", src, field,
                   c->cuda_graph_max_bs, c->cuda_graph_bs);
    }
    p->ranks = c->ranks ? c->ranks : (m->ranks > 0 ? m->ranks : 1);
    const ar_link *preset = ar_link_preset(c->link);
    if (preset) {
        p->link = *preset;
    } else if (strchr(c->link, '=')) {
        if (ar_link_parse(&p->link, c->link, err, errlen))
            return simcfg_wrap(s, "link", err, errlen);
    } else if (simcfg_is_link_file(c->link)) {
        if (ar_link_load(c->link, &p->link, err, errlen))   /* specsim fit-allreduce's file */
            return simcfg_wrap(s, "link", err, errlen);
    } else {
        src = simcfg_src(s, "link", field, sizeof field);
        SIMCFG_ERR("%s: field %s: value \"%s\": unknown link preset (specsim presets lists "
                   "them; or give alpha=US,beta=GBPS[,floor=US] or a link file FILE.json "
                   "from specsim fit-allreduce)", src, field, c->link);
    }
    p->algo = ar_algo_find(c->allreduce);
    if (!p->algo) {
        src = simcfg_src(s, "allreduce", field, sizeof field);
        SIMCFG_ERR("%s: field %s: value \"%s\": unknown algorithm (nccl, ring, tree, oneshot, "
                   "twoshot, custom)", src, field, c->allreduce);
    }
    if (batch_lendist_parse(&p->out_len, c->output_len, err, errlen))
        return simcfg_wrap(s, "output-len", err, errlen);
    p->concurrency = c->concurrency;
    p->requests = c->requests;
    p->iterations = c->iterations;
    p->warmup = c->warmup;
    int iters_given = strcmp(s->src[simcfg_index(simcfg_find("iterations"))], "defaults") != 0;
    int prec_given = strcmp(s->src[simcfg_index(simcfg_find("precision"))], "defaults") != 0;
    /* --precision: on by default for a closed loop; an --iterations given alone keeps its
     * fixed length; given both, --iterations is the cap */
    p->precision = c->requests > 0 || (iters_given && !prec_given) ? 0 : c->precision;
    if (c->requests > 0 && prec_given && c->precision > 0) {
        src = simcfg_src(s, "precision", field, sizeof field);
        SIMCFG_ERR("%s: field %s: value %g: a finite benchmark (--requests %ld) runs to its "
                   "end; --precision is for closed loops", src, field, c->precision, c->requests);
    }
    if (p->precision > 0 && !iters_given)
        p->iterations = SIMCFG_PREC_MAX_ITERS;
    if (c->requests > 0) {
        /* a finite benchmark: run until every request finished, measure all of it, unless
         * --iterations / --warmup say otherwise */
        if (!iters_given)
            p->iterations = 0;
        if (strcmp(s->src[simcfg_index(simcfg_find("warmup"))], "defaults") == 0)
            p->warmup = 0;
    }
    else if (p->spec && p->precision == 0 && !iters_given) {
        /* a default closed loop measures at least SIMCFG_REQ_ITERS request-iterations, so
         * that the acceptance draws average out: ~0.5% standard error on the tokens at
         * alpha 0.5 (docs/simulator.md); 1000 iterations alone leave ~2% at concurrency 1 */
        long want = (SIMCFG_REQ_ITERS + c->concurrency - 1) / c->concurrency;
        if (want > p->iterations)
            p->iterations = want;
    }
    if (c->iterations == 0 && c->requests == 0) {
        src = simcfg_src(s, "iterations", field, sizeof field);
        SIMCFG_ERR("%s: field %s: value 0: must be >= 1 unless --requests is given", src, field);
    }
    p->prompt_tokens = c->prompt_len;
    p->stagger = c->requests ? 0 : c->stagger;   /* a finite benchmark starts from zero */
    p->graph_launch_us = c->graph_launch_us >= 0 ? c->graph_launch_us : m->graph_launch_us;
    p->eager_launch_us = c->eager_launch_us >= 0 ? c->eager_launch_us : m->eager_launch_us;
    p->eager_launch_override = c->eager_launch_us >= 0;
    p->jitter_scale = c->jitter_scale;
    p->host_scale = c->host_scale;
    p->no_stalls = !c->host_stalls;
    p->sync_segments = c->sync_segments;
    p->seed = (unsigned long)c->seed;
    p->timeline_iterations = c->timeline_iterations;
    p->bench_s = c->seconds;
    p->intervals = c->intervals;
    p->loop = m->loop;
    if (c->loop[0] && (p->loop = wm_loop_find(c->loop)) < 0) {
        src = simcfg_src(s, "loop", field, sizeof field);
        SIMCFG_ERR("%s: field %s: value %s: unknown loop (expected sglang-eagle or hf-assisted)",
                   src, field, c->loop);
    }
    return sim_check(p, c->model, err, errlen);
}

void simcfg_link_describe(const sim_params *p, const char *spec, char *buf, size_t len)
{
    snprintf(buf, len, "%s: alpha %.4g us, bw %.4g GB/s, floor %.4g us%s%s", spec,
             p->link.latency_us, p->link.bw_gbps, p->link.floor_us,
             p->link.source ? "; source: " : "", p->link.source ? p->link.source : "");
}
