/* fitcmd: the `specsim fit` subcommand. Loads traces, runs the fit (fit.h), prints the
 * resolved configuration and a fit report (per phase and group: coefficients and how well
 * they reproduce the measured cells), writes the model and, with --plot, the data files and
 * gnuplot script of every fitted curve. Workload: a handful to tens of trace files. */
#include "fit.h"
#include "fit_probe.h"
#include "fit_hf.h"
#include "ofile.h"
#include "gsweep.h"
#include "carry.h"
#include "phasemap.h"
#include "timport.h"

#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FITCMD_EXIT_BAD 2     /* bad input or a refused fit */
#define FITCMD_EXIT_IO 1      /* could not write */
#define FITCMD_NODES_MAX 64   /* --nodes references (a few configurations' captures) */

static void fitcmd_usage(FILE *f)
{
    fprintf(f,
        "usage: specsim fit TRACE.json[.gz]... -o MODEL.json [options]\n"
        "       specsim fit --from-model IN.json --carry-to HW -o OUT.json\n"
        "  Fits a workload model (docs/model-format.md) from specprof or torch.profiler/Kineto\n"
        "  traces, plain or gzip (docs/fit.md, docs/importers.md, docs/sglang.md).\n"
        "  -o, --out FILE        the model to write (required)\n"
        "      --plot DIR        per kernel group: data, fitted curve and DIR/plot.gp (PNGs\n"
        "                        rendered with gnuplot when it is installed)\n"
        "      --name NAME       model name (default fit-<device>-tp<ranks>)\n"
        "      --moe E,K         MoE: E experts, top-K per token (default: the traces' range\n"
        "                        args experts= moe_topk=, else dense)\n"
        "      --llm PRESET.json take E,K from an LLM preset (models/presets/*.json)\n"
        "      --carry-to HW     write the model carried to another GPU by roofline scaling\n"
        "                        (models/presets/HW.json: h200-sxm, rtx-pro-6000, ...)\n"
        "      --carry-from HW   the GPU the traces come from (default: matched from the\n"
        "                        traces' device name)\n"
        "      --from-model M    carry the model file M instead of fitting traces\n"
        "      --gemm-sweep CSV  price each phase's GEMMs from their sweep (specbench\n"
        "                        --gemm-sweep) where that predicts left-out cells better\n"
        "      --quiet           no report, only warnings and errors\n"
        "      --format F        force the importer (specprof, kineto) instead of probing\n"
        "      --join            the traces are captures of one program: fit them as one trace\n"
        "                        (a kernel group may be missing from some, e.g. graph vs eager)\n"
        "      --instances-max N keep at most N phase instances per trace, phase and\n"
        "                        configuration of a specprof trace, spread over the capture\n"
        "                        (default %d, or FIT_INSTANCES_MAX; 0: all; docs/fit.md)\n"
        "      --nodes REF       a node-level reference capture (specprof --mode always) of the\n"
        "                        same program, repeatable or REF1,REF2: fills --mode lite\n"
        "                        captures (no kernels) and the graph-level launches between\n"
        "                        a windowed capture's windows with the reference's kernels,\n"
        "                        scaled into the measured spans (docs/fit.md \"Lite captures\")\n"
        "      --loop L          the loop the traces ran: sglang-eagle (default) or hf-assisted\n"
        "                        (Hugging Face generate with assistant_model, annotated by\n"
        "                        specprof_torch: docs/pytorch.md, docs/fit.md)\n"
        "  Phases of traces whose spans are not in specprof's words (docs/importers.md):\n"
        "%s"
        "  Exit status: 0 fitted, 2 bad input or a refused fit, 1 write error.\n",
        FIT_INSTANCES_MAX_DEFAULT, phasemap_options_help);
}

/* "384,8" -> E, K. 0 or -1. */
static int fitcmd_moe(const char *s, int *e, int *k)
{
    char *end;
    long a = strtol(s, &end, 10);
    if (end == s || *end != ',')
        return -1;
    const char *t = end + 1;
    long b = strtol(t, &end, 10);
    if (end == t || *end || a < 1 || b < 1 || b > a || a > 1000000)
        return -1;
    *e = (int)a;
    *k = (int)b;
    return 0;
}

/* moe.experts and moe.topk of an LLM preset file. 0 or -1 with err. */
static int fitcmd_llm(const char *path, int *e, int *k, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open", path);
        return -1;
    }
    char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    cJSON *j = cJSON_Parse(buf);
    if (!j) {
        snprintf(err, errlen, "%s: invalid JSON", path);
        return -1;
    }
    const cJSON *moe = cJSON_GetObjectItemCaseSensitive(j, "moe");
    const cJSON *je = cJSON_GetObjectItemCaseSensitive(moe, "experts");
    const cJSON *jk = cJSON_GetObjectItemCaseSensitive(moe, "topk");
    int rc = 0;
    if (!cJSON_IsNumber(je) || !cJSON_IsNumber(jk) || je->valueint < 0 || jk->valueint < 0 ||
        (je->valueint > 0 && (jk->valueint < 1 || jk->valueint > je->valueint))) {
        snprintf(err, errlen, "%s: field moe.experts/moe.topk: missing or out of range "
                 "(0/0 for a dense model)", path);
        rc = -1;
    } else {
        *e = je->valueint;
        *k = jk->valueint;
    }
    cJSON_Delete(j);
    return rc;
}

static void fitcmd_report(FILE *f, const fit_result *r)
{
    const wm_model *m = &r->model;
    fprintf(f, "# model %s: device \"%s\", ranks %d, moe %d experts top-%d\n", m->name,
            m->device, m->ranks, m->moe_experts, m->moe_topk);
    fprintf(f, "# launch: graph %.3f us (median of %d graph phases' launch calls), eager %.3f us "
            "per kernel (from %d eager phases)\n", m->graph_launch_us, r->graph_launches,
            m->eager_launch_us, r->eager_instances);
    for (int p = 0; p < WM_NPHASE; p++) {
        const fit_phase_res *pr = &r->phase[p];
        const wm_phase_model *pm = &m->phase[p];
        if (!pr->present)
            continue;
        fprintf(f, "#\n# phase %s: %d instances (%d left out), %d groups matched by %s, %d "
                "launches per forward; host gap %.3f us + %.3f us per request (sd %.3f, %d "
                "measured, %d queued behind GPU work)\n", wm_phase_name[p], pr->ninst,
                pr->ndropped, pm->ngroups, pr->by == FIT_BY_POSITION ? "position" : "name",
                wm_phase_kernels(m, p), pm->host_gap_us, pm->host_gap_per_row_us,
                pm->host_gap_sd_us, pr->ngaps, pr->nbusy);
        if (pr->nsampled_out > 0)
            fprintf(f, "#   %d more instances in the traces not loaded (the cap: --instances-max)\n",
                    pr->nsampled_out);
        if (pm->eager_launch_us > 0)
            fprintf(f, "#   eager launch %.3f us per kernel in this phase\n", pm->eager_launch_us);
        if (pm->eager_stall_per_launch > 0)
            fprintf(f, "#   of which host stalls: %.6f a launch of %.0f us on average (drawn by "
                    "the simulator)\n", pm->eager_stall_per_launch, pm->eager_stall_us);
        for (int c = 0; c < pm->ncolls; c++)
            fprintf(f, "#   collective %s: %d per forward, %.1f bytes per token\n",
                    pm->colls[c].op, pm->colls[c].count, pm->colls[c].bytes_per_token);
        fprintf(f, "# %-3s %-34s %5s %10s %11s %8s %10s %10s %7s %7s %7s %10s %10s %6s %10s %6s %8s %8s\n",
                "g", "group", "count", "base", "per_token", "knee", "per_expert", "per_kv_k", "sd",
                "rms", "max", "token_all", "per_kvq_k", "q_tile", "per_kvq2_k", "t_knee",
                "per_wave", "sweep");
        fprintf(f, "# %-3s %-34s %5s %10s %11s %8s %10s %10s %7s %7s %7s %10s %10s %6s %10s %6s %8s %8s\n",
                "-", "-", "-", "us", "us/token", "tokens", "us/expert", "us/ktoken", "frac", "%", "%",
                "us/token", "us/ktok/t", "q", "us/ktok/t", "tiles", "us", "x");
        for (int g = 0; g < pm->ngroups; g++) {
            const wm_group *wg = &pm->groups[g];
            const fit_group_stats *st = &pr->grp[g].st;
            fprintf(f, "  %-3d %-34.34s %5d %10.4g %11.4g %8g %10.4g %10.4g %7.4f %7.2f %7.2f "
                    "%10.4g %10.4g %6g %10.4g %6g %8.4g %8.4g\n", g, wg->name, wg->count, wg->base_us,
                    wg->per_token_us, wg->knee_tokens, wg->per_expert_us, wg->per_kv_ktoken_us,
                    wg->sd_frac, 100 * st->rms_rel, 100 * st->max_rel, wg->per_token_all_us,
                    wg->per_kvq_ktoken_us, wg->q_tile, wg->per_kvq2_ktoken_us, wg->q_tile_knee,
                    wg->per_wave_us, wg->sweep_scale);
        }
        double mx = 0;
        for (int c = 0; c < pr->ncells; c++) {
            const fit_cell *cl = &pr->total[c];
            double e = cl->us_mean > 0 ? (cl->fit_us - cl->us_mean) / cl->us_mean : 0;
            if (e < 0)
                e = -e;
            if (e > mx)
                mx = e;
        }
        fprintf(f, "# phase %s total GPU time per forward: model vs measured over %d cells "
                "(trace x tokens): max error %.2f%%\n", wm_phase_name[p], pr->ncells, 100 * mx);
        for (int c = 0; c < pr->ncells; c++) {
            const fit_cell *cl = &pr->total[c];
            fprintf(f, "#   trace %d, %g tokens (%g a row), KV %.0f: measured %.1f us (sd %.1f, %d "
                    "instances), model %.1f us (%+.2f%%)\n", cl->trace, cl->tokens,
                    cl->q_per_row, cl->kv_tokens, cl->us_mean, cl->us_sd, cl->n, cl->fit_us,
                    cl->us_mean > 0 ? 100 * (cl->fit_us - cl->us_mean) / cl->us_mean : 0);
        }
    }
}

/* Carries m in place to preset `to` (from `from`, or the preset matching m's device) and
 * prints the change. 0 or -1 (message printed). */
static int fitcmd_carry(wm_model *m, const char *to, const char *from, int quiet)
{
    static wm_model before;
    carry_hw hf, ht;
    carry_factors f;
    char err[1024];
    if (carry_hw_ends(&hf, &ht, m->device, from, to, err, sizeof err)) {
        fprintf(stderr, "specsim fit: %s\n", err);
        return -1;
    }
    before = *m;
    if (carry_model(m, &hf, &ht, &f, err, sizeof err)) {
        fprintf(stderr, "specsim fit: %s\n", err);
        return -1;
    }
    if (!quiet) {
        printf("#\n# carried from %s (%s: %.0f GB/s, %.1f TFLOP/s bf16) to %s (%s: %.0f GB/s, "
               "%.1f TFLOP/s): memory-bound terms x%.3f, per-token terms x%.3f, knees x%.3f; "
               "%d groups scaled, %d latency-bound kept, %d GPU-idle kept; host gaps and launch "
               "costs kept (same host assumed)\n", hf.name, hf.path, hf.mem_bw_gbps, hf.bf16_tflops,
               ht.name, ht.path, ht.mem_bw_gbps, ht.bf16_tflops, f.bw_factor, f.flops_factor,
               f.knee_factor, f.groups_memory, f.groups_latency, f.groups_kept);
        carry_report(stdout, &before, m);
    }
    return 0;
}

static int fitcmd_carry_file(const char *in, const char *to, const char *from, const char *out,
                             int extra, int quiet)
{
    static wm_model m;
    char err[1024];
    if (!to || !out || extra) {
        fprintf(stderr, "specsim fit: field %s: --from-model needs --carry-to HW and -o OUT, "
                "and no traces\n", !to ? "--carry-to" : !out ? "--out" : "TRACES");
        return FITCMD_EXIT_BAD;
    }
    if (wm_load(&m, in, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return FITCMD_EXIT_BAD;
    }
    if (fitcmd_carry(&m, to, from, quiet))
        return FITCMD_EXIT_BAD;
    int w = wm_save(&m, out, err, sizeof err);
    if (w) {
        fprintf(stderr, "%s\n", err);
        return w == -2 ? FITCMD_EXIT_BAD : FITCMD_EXIT_IO;
    }
    if (!quiet)
        printf("# wrote %s\n", out);
    return 0;
}

/* Lite captures and graph-level launches filled with node-level content (fit_nodes_fill),
 * from the --nodes references, loaded capped as the traces are. 0, or -1 (said). */
static int fitcmd_fill_nodes(fit_trace *tr, int nt, const char *const *nodes, int nnodes, int cap,
                             int quiet)
{
    fit_trace *ref = nnodes ? calloc((size_t)nnodes, sizeof *ref) : NULL;
    int nref = 0, rc = -1;
    char err[2048];
    if (nnodes && !ref) {
        fprintf(stderr, "specsim fit: out of memory\n");
        return -1;
    }
    for (; nref < nnodes; nref++) {
        timport_stats st;
        memset(&st, 0, sizeof st);
        st.instances_max = cap;
        if (timport_load(&ref[nref], nodes[nref], "specprof", &st, err, sizeof err)) {
            fprintf(stderr, "specsim fit: field --nodes: %s\n", err);
            goto out;
        }
        if (fit_trace_is_lite(&ref[nref]) || ref[nref].nkern == 0) {
            fprintf(stderr, "specsim fit: field --nodes: %s: not a node-level capture (capture.mode "
                    "%s, %zu kernels): give a specprof --mode always trace\n", nodes[nref],
                    ref[nref].hdr.mode[0] ? ref[nref].hdr.mode : "always", ref[nref].nkern);
            nref++;
            goto out;
        }
        if (!quiet)
            printf("# nodes         %s: %zu kernels, %zu launch calls, %zu ranges\n", nodes[nref],
                   ref[nref].nkern, ref[nref].napi, ref[nref].nrng);
    }
    for (int i = 0; i < nt; i++) {
        fit_nodes_stats ns;
        /* a lite capture's own node probe: its probed instances first, the --nodes after */
        fit_trace pref;
        fit_probe_stats ps;
        int probe = fit_probe_ref(&tr[i], tr[i].file, &pref, &ps, err, sizeof err);
        if (probe < 0) {
            fprintf(stderr, "specsim fit: %s\n", err);
            goto out;
        }
        /* The probed replays stand for the reference only where no --nodes capture is given:
         * beside one, CUPTI's records are the more accurate (torchbench call 33: held out
         * 1.03% / 6.29% with the CUPTI reference alone, 1.01% / 9.02% with both; docs/fit.md
         * 1c). FIT_PROBE=1 uses both, FIT_PROBE=0 neither; the probed instances are left out
         * of the fit either way (their times are the instrumented clone's). */
        const char *fp_env = getenv("FIT_PROBE");
        int use = fp_env && !strcmp(fp_env, "1") ? 1 : fp_env && !strcmp(fp_env, "0") ? 0 : nref == 0;
        if (probe && !use) {
            fit_trace_free(&pref);
            probe = 0;
            if (!quiet)
                printf("#   (node probe not used: %s)\n", nref ? "the --nodes references are (FIT_PROBE=1 uses both)" : "FIT_PROBE=0");
        }
        if (probe && !quiet)
            printf("# node probe    %s: %zu probed replays of %zu executables (events' cost %.3f us a node, "
                   "median; %zu from their own spans): %zu phase instances, %zu records; %zu probed instances "
                   "left out of the fit\n", tr[i].file, ps.probes, ps.execs, ps.cost_median_us, ps.cost_from_spans,
                   ps.instances, ps.records, ps.dropped);
        if (probe && !quiet && ps.eager_probes)
            printf("#   eager probe %zu probed instances (event's cost %.3f us, median): %zu used, %zu dropped "
                   "(%zu not complete, %zu without their range), %zu records of which %zu unseen kernels and %zu "
                   "blocking copies not timed, %zu copies unmatched\n", ps.eager_probes, ps.eager_cost_median_us,
                   ps.eager_instances, ps.eager_dropped, ps.eager_incomplete, ps.eager_no_range, ps.eager_records,
                   ps.eager_unseen, ps.eager_blocking_copies, ps.eager_copies_skipped);
        if (probe && !quiet && (ps.mixed_own || ps.mixed_donor || ps.mixed_unprobed))
            printf("#   mixed       %zu eager instances with graph launches used: %zu with their own node probes, "
                   "%zu with another instance's (same executable); %zu not used (an executable never probed); %zu "
                   "node records; %zu graph starts moved > 1 us past the eager records (at most %.1f us)\n",
                   ps.mixed_own + ps.mixed_donor, ps.mixed_own, ps.mixed_donor, ps.mixed_unprobed, ps.mixed_records,
                   ps.mixed_shifted, ps.mixed_shift_max_us);
        fit_trace *all = probe ? calloc((size_t)nref + 1, sizeof *all) : ref;
        if (probe && !all) {
            fit_trace_free(&pref);
            fprintf(stderr, "specsim fit: out of memory\n");
            goto out;
        }
        if (probe) {
            all[0] = pref;
            for (int r = 0; r < nref; r++)
                all[r + 1] = ref[r];   /* shallow: read only, freed with ref */
        }
        int frc = fit_nodes_fill(&tr[i], all, nref + (probe ? 1 : 0), stderr, &ns, err, sizeof err);
        if (probe) {
            fit_trace_free(&all[0]);
            free(all);
        }
        if (frc) {
            fprintf(stderr, "%s\n", err);
            goto out;
        }
        if (!quiet && (ns.graph_filled || ns.instances_filled || ns.no_replay))
            printf("#   filled      %zu phase instances, %zu graph launches (%zu from the trace's "
                   "own windows), %zu eager launch calls, %zu records added; %zu from a nearest "
                   "shape, %zu launches without a node-level replay\n", ns.instances_filled,
                   ns.graph_filled, ns.self_filled, ns.calls_added, ns.records, ns.nearest,
                   ns.no_replay);
    }
    rc = 0;
out:
    for (int r = 0; r < nref; r++)
        fit_trace_free(&ref[r]);
    free(ref);
    return rc;
}

int fitcmd_main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"out", required_argument, NULL, 'o'}, {"plot", required_argument, NULL, 'P'},
        {"name", required_argument, NULL, 'n'}, {"moe", required_argument, NULL, 'm'},
        {"llm", required_argument, NULL, 'l'}, {"quiet", no_argument, NULL, 'q'},
        {"carry-to", required_argument, NULL, 'T'}, {"carry-from", required_argument, NULL, 'F'},
        {"from-model", required_argument, NULL, 'M'}, {"gemm-sweep", required_argument, NULL, 'G'},
        {"format", required_argument, NULL, 'f'}, {"join", no_argument, NULL, 'j'},
        /* the naming options (phasemap_option): codes 1000 + index */
        {"profile", required_argument, NULL, 1000}, {"phase-map", required_argument, NULL, 1001},
        {"server-args", required_argument, NULL, 1002}, {"spec-shape", required_argument, NULL, 1003},
        {"cuda-graph-bs", required_argument, NULL, 1004}, {"ctx-log", required_argument, NULL, 1005},
        {"ctx", required_argument, NULL, 1006}, {"graph-cycle", required_argument, NULL, 1007},
        {"shape", required_argument, NULL, 1008}, {"loop", required_argument, NULL, 1100},
        {"instances-max", required_argument, NULL, 1101}, {"nodes", required_argument, NULL, 1102},
        {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
    };
    static const char *const pm_names[] = {"profile", "phase-map", "server-args", "spec-shape",
                                           "cuda-graph-bs", "ctx-log", "ctx", "graph-cycle",
                                           "shape"};
    static phasemap pm;
    phasemap_init(&pm);
    const char *format = NULL;
    int naming = 0, join = 0, loop = WM_LOOP_EAGLE;
    const char *out = NULL, *plot = NULL, *name = NULL, *llm = NULL, *moe = NULL;
    const char *carry_to = NULL, *carry_from = NULL, *from_model = NULL, *gsweep = NULL;
    int quiet = 0, c, rc = FITCMD_EXIT_BAD;
    const char *nodes[FITCMD_NODES_MAX];
    int nnodes = 0;
    int cap = fit_sample_cap(FIT_INSTANCES_MAX_DEFAULT);
    char err[2048];
    fit_opts o = {.log = stderr};
    static wm_sweep sweep;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":o:hq", opts, NULL)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case 'P': plot = optarg; break;
        case 'n': name = optarg; break;
        case 'm': moe = optarg; break;
        case 'l': llm = optarg; break;
        case 'q': quiet = 1; break;
        case 'T': carry_to = optarg; break;
        case 'F': carry_from = optarg; break;
        case 'M': from_model = optarg; break;
        case 'G': gsweep = optarg; break;
        case 'f': format = optarg; break;
        case 'j': join = 1; break;
        case 1000: case 1001: case 1002: case 1003: case 1004: case 1005: case 1006: case 1007:
        case 1008:
            if (phasemap_option(&pm, pm_names[c - 1000], optarg, err, sizeof err) < 0) {
                fprintf(stderr, "specsim fit: %s\n", err);
                return FITCMD_EXIT_BAD;
            }
            naming = 1;
            break;
        case 1100:
            if ((loop = wm_loop_find(optarg)) < 0) {
                fprintf(stderr, "specsim fit: field --loop: value %s: unknown loop (expected "
                        "sglang-eagle or hf-assisted)\n", optarg);
                return FITCMD_EXIT_BAD;
            }
            break;
        case 1101: {
            char *end;
            long v = strtol(optarg, &end, 10);
            if (end == optarg || *end || v < 0 || v > 1000000000L) {
                fprintf(stderr, "specsim fit: field --instances-max: value %s: expected a count "
                        ">= 0 (0: no cap)\n", optarg);
                return FITCMD_EXIT_BAD;
            }
            cap = (int)v;
            break;
        }
        case 1102: {
            static char buf[8192];
            static size_t used;
            size_t n = strlen(optarg);
            if (used + n + 1 > sizeof buf) {
                fprintf(stderr, "specsim fit: field --nodes: value %s: too many references\n", optarg);
                return FITCMD_EXIT_BAD;
            }
            char *p = memcpy(buf + used, optarg, n + 1);
            used += n + 1;
            for (char *tok = strtok(p, ","); tok; tok = strtok(NULL, ",")) {
                if (nnodes >= FITCMD_NODES_MAX) {
                    fprintf(stderr, "specsim fit: field --nodes: value %s: more than %d references\n",
                            tok, FITCMD_NODES_MAX);
                    return FITCMD_EXIT_BAD;
                }
                nodes[nnodes++] = tok;
            }
            break;
        }
        case 'h': fitcmd_usage(stdout); return 0;
        case ':':
            fprintf(stderr, "specsim fit: field %s: missing value\n", argv[optind - 1]);
            return FITCMD_EXIT_BAD;
        default:
            fprintf(stderr, "specsim fit: field %s: unknown option (specsim fit --help)\n",
                    argv[optind - 1]);
            return FITCMD_EXIT_BAD;
        }
    }
    int nt = argc - optind;
    if (out && ofile_check(out, err, sizeof err)) {   /* before the work, not after it */
        fprintf(stderr, "specsim fit: field --out: %s\n", err);
        return FITCMD_EXIT_BAD;
    }
    if (from_model)
        return fitcmd_carry_file(from_model, carry_to, carry_from, out, nt, quiet);
    if (nt < 1 || !out) {
        fprintf(stderr, "specsim fit: field %s: missing: give trace files and -o MODEL.json\n",
                nt < 1 ? "TRACES" : "--out");
        fitcmd_usage(stderr);
        return FITCMD_EXIT_BAD;
    }
    if (moe && fitcmd_moe(moe, &o.moe_experts, &o.moe_topk)) {
        fprintf(stderr, "specsim fit: field --moe: value %s: expected E,K with 1 <= K <= E\n", moe);
        return FITCMD_EXIT_BAD;
    }
    if (llm && !moe && fitcmd_llm(llm, &o.moe_experts, &o.moe_topk, err, sizeof err)) {
        fprintf(stderr, "specsim fit: field --llm: %s\n", err);
        return FITCMD_EXIT_BAD;
    }
    /* the presets before the fit: a bad --carry-to once failed after all of it, and a
     * --carry-from without --carry-to was ignored */
    if (carry_from && !carry_to) {
        fprintf(stderr, "specsim fit: field --carry-from: value %s: only with --carry-to\n",
                carry_from);
        return FITCMD_EXIT_BAD;
    }
    for (int k = 0; carry_to && k < 2; k++) {
        carry_hw hw;
        const char *name = k ? carry_from : carry_to;
        if (name && carry_hw_load(&hw, name, err, sizeof err)) {
            fprintf(stderr, "specsim fit: field %s: %s\n", k ? "--carry-from" : "--carry-to", err);
            return FITCMD_EXIT_BAD;
        }
    }
    if (gsweep) {
        if (gsweep_load(&sweep, gsweep, err, sizeof err)) {
            fprintf(stderr, "specsim fit: field --gemm-sweep: %s\n", err);
            return FITCMD_EXIT_BAD;
        }
        o.sweep = &sweep;
    }
    o.name = name;
    if (!quiet) {
        printf("# specsim fit: %d trace%s -> %s\n", nt, nt > 1 ? "s" : "", out);
        printf("# plot          %s\n", plot ? plot : "(none)");
        printf("# gemm sweep    %s\n", gsweep ? sweep.source : "(none)");
        printf("# moe           %s\n", o.moe_experts > 0 ? moe ? moe : llm : "from the traces' "
               "range args (experts=, moe_topk=), else dense");
    }
    /* the cap needs the file's own ranges as the fit reads them: not with renamed (naming
     * profile) or joined traces, nor for the hf-assisted loop's own fit */
    if (naming || join || loop == WM_LOOP_HF)
        cap = 0;
    if (!quiet)
        printf("# instances max %d per trace, phase and configuration%s\n", cap,
               cap ? " (specprof traces; 0: all)" : ": all kept");
    fit_trace *tr = calloc((size_t)nt, sizeof *tr);
    fit_result res;
    int loaded = 0;
    memset(&res, 0, sizeof res);
    if (!tr) {
        fprintf(stderr, "specsim fit: out of memory\n");
        return FITCMD_EXIT_IO;
    }
    for (int i = 0; i < nt; i++) {
        const char *path = argv[optind + i];
        timport_stats st;
        memset(&st, 0, sizeof st);
        st.instances_max = cap;
        if (timport_load(&tr[i], path, format, &st, err, sizeof err)) {
            fprintf(stderr, "%s\n", err);
            goto out;
        }
        loaded++;
        timport_warn_cut("specsim fit", path, &st);
        timport_warn_clocks("specsim fit", path, &st);
        if (!quiet)
            printf("# trace         %s: %s%s, %zu kernels, %zu memcpy/memset, %zu launch calls, %zu "
                   "ranges%s\n", path, st.importer, st.compressed ? " (gzip)" : "", tr[i].nkern,
                   tr[i].nmem, tr[i].napi, tr[i].nrng, tr[i].truncated ? " (cut off)" : "");
        size_t nout = 0;
        for (int p = 0; p < WM_NPHASE; p++)
            nout += tr[i].sampled_out[p];
        if (!quiet && nout)
            printf("#   capped      %zu phase instances not loaded (at most %d per phase and "
                   "configuration kept, and their predecessors)\n", nout, cap);
        /* specprof's own traces are in the fit's words already (the fit warns about a trace
         * whose ranges name no phase); the others go through their naming profile */
        if (!strcmp(st.importer, "specprof") && !naming)
            continue;
        phasemap local = pm;
        pm_stats ps;
        if (phasemap_shape_for(&local, path, err, sizeof err) ||
            phasemap_apply(&local, &tr[i], &ps, err, sizeof err)) {
            fprintf(stderr, "%s\n", err);
            goto out;
        }
        if (!quiet) {
            printf("#   phases      %s profile: ", ps.profile);
            for (int p = 0, first = 1; p < WM_NPHASE; p++)
                if (ps.per_phase[p]) {
                    printf("%s%s %zu", first ? "" : ", ", wm_phase_name[p], ps.per_phase[p]);
                    first = 0;
                }
            printf(" (%zu spans ignored); shape %s; KV context %s\n", ps.ignored,
                   local.shape.known ? local.shape.source : "none",
                   ps.ctx_from == 1 ? "from g_sk=" : ps.ctx_from == 2 ? "from --ctx" :
                   ps.ctx_from == 3 ? "from the server log" : "none: the KV terms are not fitted");
            if (ps.note[0])
                printf("#   cycle       %s\n", ps.note);
        }
    }
    if (fitcmd_fill_nodes(tr, nt, nodes, nnodes, cap, quiet))
        goto out;
    if (join && nt > 1) {
        for (int i = 1; i < nt; i++) {
            if (timport_append(&tr[0], &tr[i], err, sizeof err)) {
                fprintf(stderr, "%s\n", err);
                goto out;
            }
            fit_trace_free(&tr[i]);
        }
        snprintf(tr[0].file + strlen(tr[0].file), sizeof tr[0].file - strlen(tr[0].file),
                 " (+%d joined)", nt - 1);
        loaded = nt = 1;
        if (!quiet)
            printf("# joined        %d traces into one (%zu kernels, %zu ranges)\n", loaded, tr[0].nkern,
                   tr[0].nrng);
    }
    if (loop == WM_LOOP_HF) {
        /* the hf-assisted loop has its own fit (models/fit_hf.c): host-bound phases */
        static fit_hf_report hr;
        if (fit_hf_run(tr, nt, name, stderr, &res.model, &hr, err, sizeof err)) {
            fprintf(stderr, "%s\n", err);
            goto out;
        }
        if (!quiet)
            fit_hf_print(stdout, &hr);
        if (plot && !quiet)
            printf("# plot: not made for the hf-assisted loop (its costs are medians, no curves)\n");
        plot = NULL;
    } else if (fit_run(tr, nt, &o, &res, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        goto out;
    }
    if (!quiet && loop != WM_LOOP_HF)
        fitcmd_report(stdout, &res);
    if (carry_to && fitcmd_carry(&res.model, carry_to, carry_from, quiet)) {
        rc = FITCMD_EXIT_BAD;
        goto out;
    }
    int w = wm_save(&res.model, out, err, sizeof err);
    if (w) {
        fprintf(stderr, "%s\n", err);
        rc = w == -2 ? FITCMD_EXIT_BAD : FITCMD_EXIT_IO;   /* -2: refused, nothing written */
        goto out;
    }
    /* what was written must load: the simulator's reader is the judge (wm_save checked it
     * before writing; a device or FIFO given as -o cannot be read back) */
    static wm_model check;
    if (!ofile_in_place(out) && wm_load(&check, out, err, sizeof err)) {
        fprintf(stderr, "specsim fit: the written model does not load back: %s\n", err);
        rc = FITCMD_EXIT_BAD;
        goto out;
    }
    if (plot) {
        if (fit_plot(&res, plot, err, sizeof err)) {
            fprintf(stderr, "%s\n", err);
            rc = FITCMD_EXIT_IO;
            goto out;
        }
        char cmd[1400];
        snprintf(cmd, sizeof cmd, "command -v gnuplot >/dev/null 2>&1 && gnuplot '%s/plot.gp'", plot);
        int g = strchr(plot, '\'') ? -1 : system(cmd);
        if (!quiet)
            printf("# plots: %s/*.dat, *.fit, plot.gp%s\n", plot,
                   g == 0 ? " and *.png (gnuplot)" : " (gnuplot not run: render with gnuplot "
                   "DIR/plot.gp)");
    }
    if (!quiet)
        printf("# wrote %s (%d warning%s)\n", out, res.nwarnings, res.nwarnings == 1 ? "" : "s");
    rc = 0;
out:
    fit_result_free(&res);
    for (int i = 0; i < loaded; i++)
        fit_trace_free(&tr[i]);
    free(tr);
    return rc;
}
