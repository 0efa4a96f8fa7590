/* specsim: the command line. `specsim run` simulates one configuration (and its baseline),
 * `specsim sweep` a grid of them, `specsim presets` lists links, algorithms, acceptance
 * models and model files, `specsim fit` (models/fitcmd.c) fits a model from traces,
 * `specsim help` says all this. Every knob is a long option and a
 * JSON config key (simcfg.c). Bad input exits 2 with "SOURCE: field F: value V: why". */
#include "simcfg.h"
#include "sim.h"
#include "report.h"
#include "sweep.h"
#include "timeline.h"
#include "arfit.h"
#include "fit.h"
#include "logcmd.h"
#include "importcmd.h"
#include "litefrom.h"
#include "gslerr.h"
#include "scale.h"

#include <math.h>
#include <getopt.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cjson/cJSON.h>

#define SPECSIM_VERSION "0.1"
#define DEFAULT_MODEL "models/example-llama8b.json"
#define EXIT_BAD_INPUT 2

enum { OPT_HELP = 'h', OPT_CONFIG = 900, OPT_GRID, OPT_NO_BASELINE, OPT_KNOB = 1000 };

static void usage_main(FILE *f)
{
    fprintf(f,
        "specsim %s: what speculative decoding would do on your servers, simulated\n"
        "usage:\n"
        "  specsim run [KNOBS]                 one configuration (and its baseline)\n"
        "  specsim sweep --grid K=V.. [KNOBS]  a grid over any knobs, CSV out\n"
        "  specsim presets                     links, all-reduce algorithms, acceptance "
        "models, model files\n"
        "  specsim fit TRACES... -o MODEL.json  fit a workload model from specprof or Kineto "
        "traces (docs/fit.md)\n"
        "  specsim scale MODEL.json --from TRACED --llm TARGET -o OUT.json  another shape, TP "
        "size, weight format (docs/scale.md)\n"
        "  specsim fit-allreduce SWEEP.csv... -o LINK.json  fit a link to arsweep CSVs (docs/allreduce.md)\n"
        "  specsim import TRACE...             what the fit reads from specprof or Kineto traces\n"
        "  specsim lite-from IN OUT            the --mode lite capture a node-level specprof trace "
        "stands for (docs/fit.md)\n"
        "  specsim log SERVER.log... [--model M.json]  acceptance per batch size from SGLang logs,\n"
        "                                      and each logged interval predicted (docs/sglang.md)\n"
        "  specsim help                        this text; `specsim run --help` lists the knobs\n"
        "examples:\n"
        "  specsim run --model models/example-llama8b.json --alpha 0.7 --steps 3 --bs 16\n"
        "  specsim sweep --grid steps=1..6 --grid alpha=0.5,0.7,0.9 --grid concurrency=1,4,16\n",
        SPECSIM_VERSION);
}

static void usage_knobs(FILE *f, int sweep, const simcfg_set_t *d)
{
    fprintf(f, "usage: specsim %s [--config FILE.json] [KNOBS]%s\n", sweep ? "sweep" : "run",
            sweep ? " --grid KNOB=VALUES ..." : "");
    fprintf(f, "Knobs (also keys of a --config JSON object, e.g. {\"steps\":3,\"alpha\":0.7};"
               " flags override the file):\n");
    for (int i = 0; i < simcfg_nknobs; i++) {
        const simcfg_knob *k = &simcfg_knobs[i];
        char def[SIMCFG_STR];
        simcfg_format(&d->cfg, k, def, sizeof def);
        fprintf(f, "  --%-22s %s%s%s%s [default %s]\n",
                k->type == SK_FLAG ? k->name : strcat(strcpy((char[64]){0}, k->name), " V"),
                k->help, k->unit[0] ? " (" : "", k->unit, k->unit[0] ? ")" : "",
                k->type == SK_FLAG ? "off" : def[0] ? def : "none");
    }
    fprintf(f, "  --%-22s same as --baseline 0\n", "no-baseline");
    fprintf(f, "  --%-22s aliases: --bs = --concurrency, --tp = --ranks\n", "bs, --tp");
    fprintf(f, "  --%-22s read knobs from a JSON object first\n", "config FILE");
    if (sweep)
        fprintf(f, "  --%-22s vary KNOB: A..B[:STEP] (integers) or V1,V2,.. (V1|V2|.. when "
                   "values hold commas); repeat for a cartesian product, first --grid "
                   "outermost\n", "grid KNOB=VALUES");
    fprintf(f, "Output: the resolved configuration as # lines, then tables with a # header "
               "row and a units row (gnuplot reads them as they are); --json, --csv for "
               "machines. Exit status: 0 ok, 1 failure while running, 2 bad input.\n");
}

/* Parses argv into s (config files first, then flags in order), collecting grids. */
static int parse_args(int argc, char **argv, int sweep, simcfg_set_t *s, sweep_grid *g,
                      int *help)
{
    struct option opts[SIMCFG_MAX_KNOBS + 8];
    int n = 0;
    char err[1024];
    for (int i = 0; i < simcfg_nknobs; i++)
        opts[n++] = (struct option){simcfg_knobs[i].name,
                                    simcfg_knobs[i].type == SK_FLAG ? no_argument : required_argument,
                                    NULL, OPT_KNOB + i};
    opts[n++] = (struct option){"bs", required_argument, NULL, OPT_KNOB + simcfg_index(simcfg_find("concurrency"))};
    opts[n++] = (struct option){"tp", required_argument, NULL, OPT_KNOB + simcfg_index(simcfg_find("ranks"))};
    opts[n++] = (struct option){"config", required_argument, NULL, OPT_CONFIG};
    opts[n++] = (struct option){"grid", required_argument, NULL, OPT_GRID};
    opts[n++] = (struct option){"no-baseline", no_argument, NULL, OPT_NO_BASELINE};
    opts[n++] = (struct option){"help", no_argument, NULL, OPT_HELP};
    opts[n] = (struct option){0, 0, 0, 0};
    /* pass 1: config files; pass 2: everything else, in order */
    for (int pass = 1; pass <= 2; pass++) {
        optind = 0;
        opterr = 0;
        int c, li = -1;
        while ((li = -1, c = getopt_long(argc, argv, ":h", opts, &li)) != -1) {
            if (c == '?' || c == ':') {
                const char *bad = argv[optind - 1];
                if (c == '?' && optopt && optopt < 256)
                    fprintf(stderr, "command line: field -%c: value (none): unknown option "
                            "(see specsim %s --help)\n", optopt, sweep ? "sweep" : "run");
                else if (c == '?')
                    fprintf(stderr, "command line: field %s: value (none): unknown knob "
                            "(see specsim %s --help)\n", bad, sweep ? "sweep" : "run");
                else
                    fprintf(stderr, "command line: field %s: value missing: the option "
                            "needs a value\n", bad);
                return -1;
            }
            if (c == OPT_HELP) {
                *help = 1;
                return 0;
            }
            if (pass == 1) {
                if (c == OPT_CONFIG && simcfg_load_json(s, optarg, err, sizeof err)) {
                    fprintf(stderr, "%s\n", err);
                    return -1;
                }
                continue;
            }
            if (c == OPT_CONFIG)
                continue;
            if (c == OPT_GRID) {
                if (!sweep) {
                    fprintf(stderr, "command line: field --grid: value %s: grids are for "
                            "`specsim sweep`\n", optarg);
                    return -1;
                }
                if (sweep_grid_add(g, optarg, err, sizeof err)) {
                    fprintf(stderr, "%s\n", err);
                    return -1;
                }
                continue;
            }
            if (c == OPT_NO_BASELINE) {
                s->cfg.baseline = 0;
                continue;
            }
            const simcfg_knob *k = &simcfg_knobs[c - OPT_KNOB];
            char field[80];
            snprintf(field, sizeof field, "--%s", li >= 0 ? opts[li].name : k->name);
            if (simcfg_set(s, k, k->type == SK_FLAG ? "1" : optarg, "command line", field,
                           err, sizeof err)) {
                fprintf(stderr, "%s\n", err);
                return -1;
            }
        }
        if (optind < argc) {
            fprintf(stderr, "command line: field (argument): value \"%s\": unexpected "
                    "argument (knobs are --name value)\n", argv[optind]);
            return -1;
        }
    }
    return 0;
}

static void print_banner(FILE *f, const char *cmd, const simcfg_set_t *s, const sim_params *p)
{
    char buf[SIMCFG_STR + 64];
    fprintf(f, "# specsim %s %s\n", SPECSIM_VERSION, cmd);
    fprintf(f, "# model: %s (name %s; device %s; measured at ranks %d; source: %s)\n",
            s->cfg.model, p->model->name, p->model->device[0] ? p->model->device : "?",
            p->model->ranks, p->model->source[0] ? p->model->source : "?");
    for (int i = 0; i < simcfg_nknobs; i++) {
        const simcfg_knob *k = &simcfg_knobs[i];
        if (k->type == SK_ALPHA || (k->flags & SK_SWEEP) ||
            (k->flags & SK_OUTPUT && k->type == SK_FLAG))
            continue;
        if (strcmp(k->name, "draft-tokens") == 0)
            snprintf(buf, sizeof buf, "%d", p->draft_tokens);
        else if (strcmp(k->name, "ranks") == 0)
            snprintf(buf, sizeof buf, "%d", p->ranks);
        else if (strcmp(k->name, "eager-launch-us") == 0)
            snprintf(buf, sizeof buf, "%g", p->eager_launch_us);
        else if (strcmp(k->name, "graph-launch-us") == 0)
            snprintf(buf, sizeof buf, "%g", p->graph_launch_us);
        else if (strcmp(k->name, "acceptance") == 0)
            accept_format(&p->acc, buf, sizeof buf);
        else if (strcmp(k->name, "loop") == 0)
            snprintf(buf, sizeof buf, "%s%s", wm_loop_name[p->loop],
                     s->cfg.loop[0] ? "" : " (the model's)");
        else if (strcmp(k->name, "link") == 0)
            simcfg_link_describe(p, s->cfg.link, buf, sizeof buf);
        else
            simcfg_format(&s->cfg, k, buf, sizeof buf);
        fprintf(f, "# %-20s %s%s%s\n", k->name, buf,
                strcmp(s->src[i], "defaults") ? "   <- " : "",
                strcmp(s->src[i], "defaults") ? s->src[i] : "");
    }
    if (p->spec)
        fprintf(f, "# expected accepted length %.4f tokens per request and iteration "
                "(acceptance model, closed form)\n",
                1 + accept_expected(&p->acc, p->steps, p->topk, p->draft_tokens));
    fprintf(f, "# cuda graphs: %d captured sizes%s", p->graphs.n, p->graphs.n ? " (" : "");
    for (int i = 0; i < p->graphs.n && i < 12; i++)
        fprintf(f, "%s%d", i ? "," : "", p->graphs.bs[i]);
    fprintf(f, "%s%s\n", p->graphs.n > 12 ? ",..," : "",
            p->graphs.n > 12 ? (snprintf(buf, sizeof buf, "%d)", p->graphs.bs[p->graphs.n - 1]), buf)
                             : p->graphs.n ? ")" : "; every batch runs eagerly");
    if (p->model->ranks != p->ranks)
        fprintf(f, "# note: the model was measured at ranks %d; simulating ranks %d with its "
                "per-rank costs as they are\n", p->model->ranks, p->ranks);
}

static void perf_line(const char *what, const sim_result *r, double wall_s)
{
    fprintf(stderr, "# perf %s: %llu events in %.4f s wall = %.2f M events/s; %.3f simulated "
            "s = %.1f simulated s per wall s; %ld iterations = %.3f us wall per iteration\n",
            what, (unsigned long long)r->events, wall_s, (double)r->events / wall_s / 1e6,
            r->sim_us / 1e6, r->sim_us / 1e6 / wall_s, r->iterations_total,
            wall_s / (double)r->iterations_total * 1e6);
}

static int cmd_run(simcfg_set_t *s)
{
    static simcfg_model mc;
    sim_params ps, pb;
    sim_result rs, rb;
    char err[1024];
    timeline tl;
    int use_tl = s->cfg.timeline[0] != '\0';
    /* a sweep's options, or two output formats, would be ignored in silence (--out once
     * wrote nothing and exited 0) */
    for (int i = 0; i < simcfg_nknobs; i++) {
        const simcfg_knob *k = &simcfg_knobs[i];
        if ((k->flags & SK_SWEEP) && strcmp(s->src[i], "defaults")) {
            int cl = strcmp(s->src[i], "command line") == 0;
            simcfg_format(&s->cfg, k, err, sizeof err);
            fprintf(stderr, "%s: field %s%s: value %s: a `specsim sweep` option; `specsim run` "
                    "does not use it\n", s->src[i], cl ? "--" : "", k->name, err);
            return EXIT_BAD_INPUT;
        }
    }
    if (s->cfg.json && s->cfg.csv) {
        fprintf(stderr, "%s: field --csv: value 1: not with --json: one output format\n",
                s->src[simcfg_index(simcfg_find("csv"))]);
        return EXIT_BAD_INPUT;
    }
    if (simcfg_resolve(s, &mc, 1, &ps, err, sizeof err) ||
        (s->cfg.baseline && simcfg_resolve(s, &mc, 0, &pb, err, sizeof err))) {
        fprintf(stderr, "%s\n", err);
        return EXIT_BAD_INPUT;
    }
    if (use_tl && timeline_open(&tl, s->cfg.timeline, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return EXIT_BAD_INPUT;
    }
    sim_hooks hk = {NULL, timeline_span, NULL, &tl};
    ps.eta_note = pb.eta_note = 1;
    if (use_tl)
        timeline_process(&tl, 1, "spec", ps.ranks);
    double t0 = sim_now_s();
    int rc = sim_run(&ps, use_tl ? &hk : NULL, &rs, err, sizeof err);
    if (rc) {
        fprintf(stderr, "%s\n", err);
        return rc == -2 ? EXIT_BAD_INPUT : 1;
    }
    double t1 = sim_now_s();
    if (s->cfg.baseline) {
        if (use_tl)
            timeline_process(&tl, 1001, "baseline", pb.ranks);
        rc = sim_run(&pb, use_tl ? &hk : NULL, &rb, err, sizeof err);
        if (rc) {
            fprintf(stderr, "baseline: %s\n", err);
            return rc == -2 ? EXIT_BAD_INPUT : 1;
        }
    }
    double t2 = sim_now_s();
    {   /* a phase priced past the traces the model was fitted from: say so */
        sim_result far = rs;
        for (int p = 0; s->cfg.baseline && p < WM_NPHASE; p++) {
            far.phase_tokens_max[p] = fmax(far.phase_tokens_max[p], rb.phase_tokens_max[p]);
            far.phase_q_max[p] = fmax(far.phase_q_max[p], rb.phase_q_max[p]);
            far.phase_kv_row_max[p] = fmax(far.phase_kv_row_max[p], rb.phase_kv_row_max[p]);
        }
        sim_warn_beyond_fit(stderr, "run", ps.model, &far, "");
    }
    for (int m = 0; m < (s->cfg.baseline ? 2 : 1); m++)   /* said on stderr too: --json, --csv */
        if ((m ? &rb : &rs)->partial)
            fprintf(stderr, "specsim run: warning: %s: no request finished in the measured window "
                    "(%ld iterations): per-request metrics (req_tok_s, tpot) come from the running "
                    "requests (partial = 1; raise --iterations or shorten --output-len)\n",
                    m ? "baseline" : "spec", (m ? &rb : &rs)->iterations);
    for (int m = 0; m < (s->cfg.baseline ? 2 : 1); m++) {   /* --precision not reached */
        const sim_params *pp = m ? &pb : &ps;
        const sim_result *rr = m ? &rb : &rs;
        if (pp->precision > 0 && !rr->precise && rr->precision > 0)
            fprintf(stderr, "specsim run: warning: %s: tok/s known to +-%.3g%% after %ld "
                    "iterations, not the --precision %.3g%% asked (--iterations caps it)\n",
                    m ? "baseline" : "spec", 100 * rr->precision, rr->iterations,
                    100 * pp->precision);
        else if (rr->precision == 0)   /* fewer than 3 batch means: no standard error */
            fprintf(stderr, "specsim run: warning: %s: the measured window (%ld iterations) is too "
                    "short to know its tok/s's precision (its precision column reads 0): "
                    "raise --iterations\n", m ? "baseline" : "spec",
                    rr->iterations);
    }
    if (use_tl && timeline_close(&tl, s->cfg.timeline, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    const sim_result *base = s->cfg.baseline ? &rb : NULL;
    if (s->cfg.json) {
        cJSON *o = cJSON_CreateObject(), *cfg = cJSON_AddObjectToObject(o, "config");
        char buf[SIMCFG_STR + 64];
        for (int i = 0; i < simcfg_nknobs; i++) {
            const simcfg_knob *k = &simcfg_knobs[i];
            if (k->type == SK_ALPHA || (k->flags & SK_OUTPUT))
                continue;
            simcfg_format(&s->cfg, k, buf, sizeof buf);
            if (k->type == SK_STR)
                cJSON_AddStringToObject(cfg, k->name, buf);
            else
                cJSON_AddNumberToObject(cfg, k->name, strtod(buf, NULL));
        }
        cJSON_ReplaceItemInObject(cfg, "draft-tokens", cJSON_CreateNumber(ps.draft_tokens));
        cJSON_ReplaceItemInObject(cfg, "ranks", cJSON_CreateNumber(ps.ranks));
        cJSON_ReplaceItemInObject(cfg, "eager-launch-us", cJSON_CreateNumber(ps.eager_launch_us));
        cJSON_ReplaceItemInObject(cfg, "graph-launch-us", cJSON_CreateNumber(ps.graph_launch_us));
        char *m = report_json_metrics(&rs);
        cJSON_AddItemToObject(o, "spec", cJSON_Parse(m));
        free(m);
        if (base) {
            m = report_json_metrics(base);
            cJSON_AddItemToObject(o, "baseline", cJSON_Parse(m));
            free(m);
            snprintf(buf, sizeof buf, "%.4f", report_speedup(&rs, base));
            cJSON_AddNumberToObject(o, "speedup", strtod(buf, NULL));
            double lo, hi;
            report_speedup_interval(&rs, base, &lo, &hi);
            snprintf(buf, sizeof buf, "%.4f", lo);
            cJSON_AddNumberToObject(o, "speedup_p10", strtod(buf, NULL));
            cJSON_AddNumberToObject(o, "speedup_p50", cJSON_GetObjectItem(o, "speedup")->valuedouble);
            snprintf(buf, sizeof buf, "%.4f", hi);
            cJSON_AddNumberToObject(o, "speedup_p90", strtod(buf, NULL));
        }
        char *txt = cJSON_Print(o);
        puts(txt);
        free(txt);
        cJSON_Delete(o);
    } else {
        if (!s->cfg.quiet)
            print_banner(stdout, "run", s, &ps);
        if (s->cfg.csv) {
            static const char *const names[] = {"steps", "topk", "draft_tokens", "concurrency",
                                                "ranks", "acceptance"};
            char v[6][SIMCFG_STR];
            const char *vals[6] = {v[0], v[1], v[2], v[3], v[4], v[5]};
            snprintf(v[0], sizeof v[0], "%d", ps.steps);
            snprintf(v[1], sizeof v[1], "%d", ps.topk);
            snprintf(v[2], sizeof v[2], "%d", ps.draft_tokens);
            snprintf(v[3], sizeof v[3], "%d", ps.concurrency);
            snprintf(v[4], sizeof v[4], "%d", ps.ranks);
            accept_format(&ps.acc, v[5], sizeof v[5]);
            report_csv_header(stdout, names, 6, base != NULL);
            report_csv_row(stdout, vals, 6, &rs, base);
        } else {
            report_text(stdout, &rs, base);
        }
    }
    if (s->cfg.perf) {
        perf_line("spec", &rs, t1 - t0);
        if (base)
            perf_line("baseline", base, t2 - t1);
    }
    if (fflush(stdout) || ferror(stdout))
        return 1;
    return 0;
}

static int cmd_sweep(simcfg_set_t *s, sweep_grid *g)
{
    char err[1024];
    sweep_stats st;
    FILE *out = stdout;
    if (s->cfg.timeline[0]) {
        fprintf(stderr, "%s: field timeline: value %s: timelines are for `specsim run`\n",
                s->src[simcfg_index(simcfg_find("timeline"))], s->cfg.timeline);
        return EXIT_BAD_INPUT;
    }
    if (s->cfg.json) {   /* once ignored in silence: the CSV came out, exit 0 */
        const char *src = s->src[simcfg_index(simcfg_find("json"))];
        fprintf(stderr, "%s: field %sjson: value 1: a sweep writes CSV (one row per "
                "configuration); --json is for `specsim run`\n", src,
                strcmp(src, "command line") ? "" : "--");
        return EXIT_BAD_INPUT;
    }
    if (g->naxes == 0) {
        fprintf(stderr, "command line: field --grid: value (none): a sweep needs at least one "
                "--grid KNOB=VALUES\n");
        return EXIT_BAD_INPUT;
    }
    if (sweep_check(g, s, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return EXIT_BAD_INPUT;
    }
    if (s->cfg.out[0] && !(out = fopen(s->cfg.out, "w"))) {
        fprintf(stderr, "command line: field --out: value %s: cannot write\n", s->cfg.out);
        return EXIT_BAD_INPUT;
    }
    if (!s->cfg.quiet) {
        long lo, hi, n = sweep_grid_size(g);
        sweep_shard(s->cfg.shard, n, &lo, &hi, err, sizeof err);   /* checked above */
        if (s->cfg.shard[0])
            fprintf(out, "# specsim %s sweep: configurations %ld..%ld (part %s) of %ld;",
                    SPECSIM_VERSION, lo + 1, hi, s->cfg.shard, n);
        else
            fprintf(out, "# specsim %s sweep: %ld configurations;", SPECSIM_VERSION, n);
        for (int a = 0; a < g->naxes; a++)
            fprintf(out, " %s (%d values)", g->axis[a].knob->name, g->axis[a].nvals);
        fputc('\n', out);
        for (int i = 0; i < simcfg_nknobs; i++) {
            const simcfg_knob *k = &simcfg_knobs[i];
            char buf[SIMCFG_STR];
            int varied = 0;
            for (int a = 0; a < g->naxes; a++)
                varied |= g->axis[a].knob == k ||
                          (k->type == SK_STR && g->axis[a].knob->off == k->off);
            if (varied || k->type == SK_ALPHA || (k->flags & SK_OUTPUT && k->type == SK_FLAG))
                continue;
            simcfg_format(&s->cfg, k, buf, sizeof buf);
            fprintf(out, "# %-20s %s\n", k->name, buf);
        }
    }
    int rc = sweep_run(g, s, out, s->cfg.jobs, &st, err, sizeof err);
    if (out != stdout && fclose(out) && rc == 0) {
        snprintf(err, sizeof err, "%s: writing the CSV failed", s->cfg.out);
        rc = -1;
    }
    if (rc) {
        fprintf(stderr, "%s\n", err);
        return rc == -2 ? EXIT_BAD_INPUT : 1;
    }
    if (s->cfg.perf)
        fprintf(stderr, "# perf sweep: %ld configurations (%ld baseline runs) in %.3f s wall "
                "= %.0f configurations/s; %llu events = %.2f M events/s over all workers\n",
                st.configs, st.baselines, st.wall_s, (double)st.configs / st.wall_s,
                st.events, (double)st.events / st.wall_s / 1e6);
    return 0;
}

static void presets_cb(const char *kind, const char *name, const char *source)
{
    printf("%-16s %-20s %s\n", kind, name, source);
}

static int cmd_presets(void)
{
    printf("#%-15s %-20s %s\n", "kind", "name", "about / source");
    ar_list(presets_cb);
    printf("%-16s %-20s %s\n", "acceptance", "alpha:A", "i.i.d. acceptance per position");
    printf("%-16s %-20s %s\n", "acceptance", "positional:P1,P2,..", "chance per depth");
    printf("%-16s %-20s %s\n", "acceptance", "histogram:W0,W1,..", "weights of accepting 0,1,.. tokens");
    printf("%-16s %-20s %s\n", "cuda-graph-bs", "sglang[:MAX]", "1..8, 10..32/2, 40..64/4, "
           "72..256/8, 272../16 (SGLang server_args.py), max 512");
    /* workload models run with --model; hardware/LLM presets feed `specsim fit` */
    const char *pats[] = {"models/*.json", "models/presets/*.json"};
    const char *kinds[] = {"model-file", "fit-preset"};
    const char *uses[] = {"(specsim run --model)", "(specsim fit --llm / --carry-to, specsim scale)"};
    for (int i = 0; i < 2; i++) {
        glob_t gl;
        if (glob(pats[i], 0, NULL, &gl) == 0) {
            for (size_t j = 0; j < gl.gl_pathc; j++)
                printf("%-16s %-20s %s\n", kinds[i], gl.gl_pathv[j], uses[i]);
            globfree(&gl);
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    static simcfg_set_t s;
    static sweep_grid g;
    int help = 0, rc;
    gslerr_install();     /* GSL's default handler aborts; its errors become messages */
    if (argc < 2 || strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0 ||
        strcmp(argv[1], "-h") == 0) {
        usage_main(stdout);
        return argc < 2 ? EXIT_BAD_INPUT : 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("specsim %s\n", SPECSIM_VERSION);
        return 0;
    }
    if (strcmp(argv[1], "presets") == 0) {
        if (argc > 2) {   /* once ignored in silence (exit 0) */
            fprintf(stderr, "specsim presets: field %s: value (none): presets takes no "
                    "arguments\n", argv[2]);
            return EXIT_BAD_INPUT;
        }
        return cmd_presets();
    }
    if (strcmp(argv[1], "fit") == 0)          /* models/fitcmd.c (docs/fit.md) */
        return fitcmd_main(argc - 1, argv + 1);
    if (strcmp(argv[1], "scale") == 0)        /* models/scalecmd.c (docs/scale.md) */
        return scalecmd_main(argc - 1, argv + 1);
    if (strcmp(argv[1], "fit-allreduce") == 0)  /* models/arfit.c (docs/allreduce.md) */
        return arfit_main(argc - 1, argv + 1);
    if (strcmp(argv[1], "log") == 0)          /* sim/logcmd.c (docs/sglang.md) */
        return logcmd_main(argc - 1, argv + 1);
    if (strcmp(argv[1], "import") == 0)       /* models/importcmd.c (docs/importers.md) */
        return importcmd_main(argc - 1, argv + 1);
    if (strcmp(argv[1], "lite-from") == 0)    /* models/litefrom.c (docs/fit.md, lite captures) */
        return litefrom_main(argc - 1, argv + 1);
    int sweep = strcmp(argv[1], "sweep") == 0;
    if (!sweep && strcmp(argv[1], "run") != 0) {
        fprintf(stderr, "specsim: field command: value \"%s\": unknown command (run, sweep, "
                "presets, fit, scale, fit-allreduce, import, lite-from, log, help)\n", argv[1]);
        return EXIT_BAD_INPUT;
    }
    simcfg_defaults(&s);
    if (access(DEFAULT_MODEL, R_OK) == 0)
        strcpy(s.cfg.model, DEFAULT_MODEL);
    if (parse_args(argc - 1, argv + 1, sweep, &s, &g, &help)) {
        sweep_grid_free(&g);
        return EXIT_BAD_INPUT;
    }
    if (help) {
        simcfg_set_t d;
        simcfg_defaults(&d);
        if (access(DEFAULT_MODEL, R_OK) == 0)
            strcpy(d.cfg.model, DEFAULT_MODEL);
        usage_knobs(stdout, sweep, &d);
        sweep_grid_free(&g);
        return 0;
    }
    rc = sweep ? cmd_sweep(&s, &g) : cmd_run(&s);
    sweep_grid_free(&g);
    return rc;
}
