/* scalecmd: the `specsim scale` subcommand. Loads a fitted model and two LLM presets (the
 * shape the traces ran, the target), scales the model (scale.h), optionally carries it to
 * another GPU (carry.h), prints the resolved configuration, every group's change and the
 * phases' GPU time with its band, and writes the result. Workload: one model per call. */
#include "scale.h"
#include "carry.h"
#include "ofile.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SCALECMD_EXIT_BAD 2
#define SCALECMD_EXIT_IO 1

static void scalecmd_usage(FILE *f)
{
    fprintf(f,
        "usage: specsim scale MODEL.json --from TRACED --llm TARGET -o OUT.json [options]\n"
        "  Scales a fitted workload model to another model shape, TP size and weight format\n"
        "  (docs/scale.md). TRACED and TARGET are LLM presets (models/presets/NAME.json or a\n"
        "  path): the shape the traces ran (e.g. specbench-kimi-tp8) and the one to predict\n"
        "  (e.g. kimi-k2.5).\n"
        "  -o, --out FILE        the scaled model (required)\n"
        "      --from PRESET     the traced shape (required)\n"
        "      --llm PRESET      the target shape (required)\n"
        "      --tp N            target tensor-parallel size (default: the target preset's\n"
        "                        \"tp\", else the traced one's)\n"
        "      --ranks N         processes of the result (default: --tp); 1: one rank run\n"
        "                        alone as specbench --gpus 1 does (no collectives)\n"
        "      --from-tp N       TP size the traced rank was cut for (default: the traced\n"
        "                        preset's \"tp\", else the model's ranks)\n"
        "      --layers N        target layers (default the preset's; dense layers kept)\n"
        "      --from-layers N   layers the traced run had (specbench --layers)\n"
        "      --expert-bits B   bits per routed-expert weight of the target (4: int4, 8: fp8)\n"
        "      --weight-bits B   bits per weight of the rest of the target\n"
        "      --attention-x F   what-if: attention groups cost F times as much (a slower\n"
        "                        backend); F for every phase or PHASE=F,PHASE=F\n"
        "      --kind-x K=F,..   what-if: every group of kernel kind K costs F times as much\n"
        "                        (kinds: gemm, attention, norm, moe-token, ...; all: every\n"
        "                        kind, the GPU as a whole; docs/scale.md)\n"
        "      --host-gap-us P=US,..  what-if: add US to phase P's host gap (host work before\n"
        "                        its launch: Python scheduling, a sync)\n"
        "      --eager PHASES    what-if: these phases never run from a CUDA graph\n"
        "                        (draft,verify,extend,decode)\n"
        "      --carry-to HW     then carry the model to another GPU (models/presets/HW.json)\n"
        "      --carry-from HW   the traced GPU (default: matched from the model's device)\n"
        "      --bound lo|hi     write every scaled (and carried) term at the low or high end\n"
        "                        of its uncertainty instead of the nominal value\n"
        "      --quiet           no report, only warnings and errors\n"
        "  Exit status: 0 written, 2 bad input, 1 write error.\n");
}

static int scalecmd_int(const char *opt, const char *s, int lo, int hi, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end || v < lo || v > hi) {
        fprintf(stderr, "specsim scale: field %s: value \"%s\": must be an integer in [%d, %d]\n",
                opt, s, lo, hi);
        return -1;
    }
    *out = (int)v;
    return 0;
}

static int scalecmd_num(const char *opt, const char *s, double lo, double hi, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !(v >= lo && v <= hi)) {
        fprintf(stderr, "specsim scale: field %s: value \"%s\": must be a number in [%g, %g]\n",
                opt, s, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

/* "2.5" (every phase) or "verify=3,decode=1.2" into x[phase], each in [lo, hi]. */
static int scalecmd_phase_nums(const char *opt, const char *s, double lo, double hi, double *x)
{
    if (!strchr(s, '=')) {
        double v;
        if (scalecmd_num(opt, s, lo, hi, &v))
            return -1;
        for (int p = 0; p < WM_NPHASE; p++)
            x[p] = v;
        return 0;
    }
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        char *eq = strchr(tok, '=');
        int p = -1;
        if (eq) {
            *eq = 0;
            p = wm_phase_find(tok);
        }
        if (p < 0) {
            fprintf(stderr, "specsim scale: field %s: value \"%s\": expected V or PHASE=V,... "
                    "with a phase name (draft, verify, accept, extend, decode, sample)\n", opt, s);
            return -1;
        }
        if (scalecmd_num(opt, eq + 1, lo, hi, &x[p]))
            return -1;
    }
    return 0;
}

/* "norm=0.5,moe-token=0" into x[kind]. */
static int scalecmd_kinds(const char *s, double *x)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        char *eq = strchr(tok, '=');
        int k = -1;
        if (eq) {
            *eq = 0;
            k = strcmp(tok, "all") == 0 ? SCALE_NKINDS : scale_kind_find(tok);
        }
        if (k == SCALE_NKINDS) {          /* every kind: the GPU as a whole */
            double v;
            if (scalecmd_num("--kind-x", eq + 1, 0, 1000, &v))
                return -1;
            for (int i = 0; i < SCALE_NKINDS; i++)
                x[i] *= v;
            continue;
        }
        if (k < 0) {
            fprintf(stderr, "specsim scale: field --kind-x: value \"%s\": expected KIND=F,... with a "
                    "kind of docs/scale.md (gemm, expert-gemm, attention, rope, norm, activation, "
                    "moe-token, embedding, sampling, small, copies, gpu-idle, unknown; all: every kind)\n", s);
            return -1;
        }
        double v;
        if (scalecmd_num("--kind-x", eq + 1, 0, 1000, &v))
            return -1;
        x[k] *= v;
    }
    return 0;
}

static int scalecmd_phases(const char *s, unsigned *mask)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    *mask = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        int p = wm_phase_find(tok);
        if (p < 0) {
            fprintf(stderr, "specsim scale: field --eager: value \"%s\": unknown phase (draft, "
                    "verify, accept, extend, decode, sample)\n", tok);
            return -1;
        }
        *mask |= 1u << p;
    }
    return 0;
}

static void scalecmd_shape(const char *what, const llm_shape *s, int tp)
{
    int moe = llm_moe_layers(s);
    printf("# %-12s %s (%s): %d layers (%d dense, %d MoE), hidden %d, ", what, s->name, s->path,
           s->layers, s->layers - moe, moe, s->hidden);
    if (s->mla)
        printf("MLA %d heads (q_lora %d, kv_lora %d, rope %d%s)", s->heads, s->q_lora, s->kv_lora,
               s->qk_rope, s->mla_dims_assumed ? "; head dims assumed DeepSeek-V3's" : "");
    else
        printf("GQA %d/%d heads of %d", s->heads, s->kv_heads, s->head_dim);
    if (s->experts > 0)
        printf(", %d experts top-%d inter %d (+%d shared)", s->experts, s->topk, s->moe_inter,
               s->shared_experts);
    printf(", vocab %d; weights %g b, experts %g b (%.4g effective); TP %d\n", s->vocab,
           s->weight_bits, s->expert_bits, llm_expert_bits_eff(s), tp);
}

/* Another layer count for a shape: the dense layers stay (as many as fit). */
static void scalecmd_layers(llm_shape *s, int layers)
{
    s->layers = layers;
    if (s->experts == 0 || s->dense_layers > layers)
        s->dense_layers = layers;
}

/* Carries m to preset `to` with the GPU's uncertainty moved by bound (-1: the target
 * reaches its datasheet over (1 - CARRY_UNC_*) as much again: faster; +1: slower). */
static int scalecmd_carry(wm_model *m, const char *to, const char *from, int bound, int quiet,
                          carry_hw *hf_out, carry_hw *ht_out)
{
    carry_hw hf, ht;
    carry_factors f;
    char err[1024];
    if (carry_hw_ends(&hf, &ht, m->device, from, to, err, sizeof err)) {
        fprintf(stderr, "specsim scale: %s\n", err);
        return -1;
    }
    if (bound) {
        ht.mem_bw_gbps /= 1 + bound * CARRY_UNC_BW;
        ht.bf16_tflops /= 1 + bound * CARRY_UNC_FLOPS;
    }
    if (carry_model(m, &hf, &ht, &f, err, sizeof err)) {
        fprintf(stderr, "specsim scale: %s\n", err);
        return -1;
    }
    if (!quiet && !bound)
        printf("# carried      %s (%.0f GB/s, %.1f TFLOP/s) -> %s (%.0f GB/s, %.1f TFLOP/s): memory "
               "x%.3f, compute x%.3f, knee x%.3f; %d groups scaled, %d latency-bound kept, %d "
               "GPU-idle kept (docs/fit.md, 'Carrying a model')\n", hf.name, hf.mem_bw_gbps,
               hf.bf16_tflops, ht.name, ht.mem_bw_gbps, ht.bf16_tflops, f.bw_factor, f.flops_factor,
               f.knee_factor, f.groups_memory, f.groups_latency, f.groups_kept);
    if (hf_out) *hf_out = hf;
    if (ht_out) *ht_out = ht;
    return 0;
}

static void scalecmd_groups(const wm_model *b, const wm_model *a)
{
    printf("#\n# groups: GPU time per forward at 1 token, KV 0 (after: scaled%s)\n",
           strcmp(a->device, b->device) ? " and carried" : "");
    printf("# %-7s %-28s %-11s %6s %6s %10s %10s  %s\n", "phase", "group", "kind", "count", "->",
           "before", "after", "source");
    printf("# %-7s %-28s %-11s %6s %6s %10s %10s  %s\n", "-", "-", "-", "-", "-", "us", "us", "-");
    for (int p = 0; p < WM_NPHASE; p++) {
        const wm_phase_model *pb = &b->phase[p], *pa = &a->phase[p];
        if (!pa->present)
            continue;
        for (int i = 0; i < pa->ngroups; i++) {
            const wm_group *gb = &pb->groups[i], *ga = &pa->groups[i];
            const char *src = ga->source;
            if (strncmp(src, "scale[", 6) == 0 && strstr(src, "]: "))
                src = strstr(src, "]: ") + 3;
            printf("  %-7s %-28.28s %-11s %6d %6d %10.2f %10.2f  %s\n", wm_phase_name[p], ga->name,
                   scale_kind_name(ga->name), gb->count, ga->count, wm_group_us(b, gb, 1, 0),
                   wm_group_us(a, ga, 1, 0), src[0] ? src : "(unchanged)");
        }
        for (int k = 0; k < pa->ncolls; k++)
            printf("  %-7s collective %s: %d per forward, %.0f bytes per token\n", wm_phase_name[p],
                   pa->colls[k].op, pa->colls[k].count, pa->colls[k].bytes_per_token);
    }
}

int scalecmd_main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"out", required_argument, NULL, 'o'}, {"from", required_argument, NULL, 'F'},
        {"llm", required_argument, NULL, 'l'}, {"tp", required_argument, NULL, 't'},
        {"from-tp", required_argument, NULL, 'T'}, {"layers", required_argument, NULL, 'L'},
        {"from-layers", required_argument, NULL, 'Y'}, {"expert-bits", required_argument, NULL, 'e'},
        {"weight-bits", required_argument, NULL, 'w'}, {"attention-x", required_argument, NULL, 'a'},
        {"eager", required_argument, NULL, 'g'}, {"host-gap-us", required_argument, NULL, 'H'}, {"kind-x", required_argument, NULL, 'k'}, {"carry-to", required_argument, NULL, 'C'},
        {"carry-from", required_argument, NULL, 'R'}, {"bound", required_argument, NULL, 'b'},
        {"ranks", required_argument, NULL, 'r'}, {"quiet", no_argument, NULL, 'q'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
    };
    const char *out = NULL, *from = NULL, *to = NULL, *carry_to = NULL, *carry_from = NULL;
    int tp = 0, ranks = 0, from_tp = 0, layers = 0, from_layers = 0, quiet = 0, c;
    double ebits = 0, wbits = 0;
    static scale_opts o;
    char err[2048];
    scale_opts_init(&o);
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":o:hq", opts, NULL)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case 'F': from = optarg; break;
        case 'l': to = optarg; break;
        case 't': if (scalecmd_int("--tp", optarg, 1, 4096, &tp)) return SCALECMD_EXIT_BAD; break;
        case 'r': if (scalecmd_int("--ranks", optarg, 1, 4096, &ranks)) return SCALECMD_EXIT_BAD; break;
        case 'T': if (scalecmd_int("--from-tp", optarg, 1, 4096, &from_tp)) return SCALECMD_EXIT_BAD; break;
        case 'L': if (scalecmd_int("--layers", optarg, 1, 100000, &layers)) return SCALECMD_EXIT_BAD; break;
        case 'Y': if (scalecmd_int("--from-layers", optarg, 1, 100000, &from_layers)) return SCALECMD_EXIT_BAD; break;
        case 'e': if (scalecmd_num("--expert-bits", optarg, 1, 64, &ebits)) return SCALECMD_EXIT_BAD; break;
        case 'w': if (scalecmd_num("--weight-bits", optarg, 1, 64, &wbits)) return SCALECMD_EXIT_BAD; break;
        case 'a': if (scalecmd_phase_nums("--attention-x", optarg, 0.01, 1000, o.attn_x)) return SCALECMD_EXIT_BAD; break;
        case 'k': if (scalecmd_kinds(optarg, o.kind_x)) return SCALECMD_EXIT_BAD; break;
        case 'H': if (scalecmd_phase_nums("--host-gap-us", optarg, 0, 1e7, o.host_add_us)) return SCALECMD_EXIT_BAD; break;
        case 'g': if (scalecmd_phases(optarg, &o.eager_phases)) return SCALECMD_EXIT_BAD; break;
        case 'C': carry_to = optarg; break;
        case 'R': carry_from = optarg; break;
        case 'b':
            if (strcmp(optarg, "lo") && strcmp(optarg, "hi")) {
                fprintf(stderr, "specsim scale: field --bound: value \"%s\": lo or hi\n", optarg);
                return SCALECMD_EXIT_BAD;
            }
            o.bound = optarg[0] == 'l' ? -1 : 1;
            break;
        case 'q': quiet = 1; break;
        case 'h': scalecmd_usage(stdout); return 0;
        case ':':
            fprintf(stderr, "specsim scale: field %s: missing value\n", argv[optind - 1]);
            return SCALECMD_EXIT_BAD;
        default:
            fprintf(stderr, "specsim scale: field %s: unknown option (specsim scale --help)\n",
                    argv[optind - 1]);
            return SCALECMD_EXIT_BAD;
        }
    }
    if (argc - optind != 1 || !out || !from || !to) {
        fprintf(stderr, "specsim scale: field %s: missing: give one MODEL.json, --from TRACED, "
                "--llm TARGET and -o OUT.json\n", argc - optind != 1 ? "MODEL" : !out ? "--out"
                : !from ? "--from" : "--llm");
        scalecmd_usage(stderr);
        return SCALECMD_EXIT_BAD;
    }
    if (ofile_check(out, err, sizeof err)) {
        fprintf(stderr, "specsim scale: field --out: %s\n", err);
        return SCALECMD_EXIT_BAD;
    }
    const char *in = argv[optind];
    static wm_model m, before, lo, hi, check;
    if (wm_load(&m, in, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return SCALECMD_EXIT_BAD;
    }
    if (llm_load(&o.from, from, err, sizeof err)) {
        fprintf(stderr, "specsim scale: field --from: %s\n", err);
        return SCALECMD_EXIT_BAD;
    }
    if (llm_load(&o.to, to, err, sizeof err)) {
        fprintf(stderr, "specsim scale: field --llm: %s\n", err);
        return SCALECMD_EXIT_BAD;
    }
    if (from_layers)
        scalecmd_layers(&o.from, from_layers);
    if (layers) {
        scalecmd_layers(&o.to, layers);
        o.to.allreduces_per_forward = 0;   /* the preset's count is for its own layers */
    }
    if (ebits > 0)
        o.to.expert_bits = ebits;
    if (wbits > 0) {
        o.to.weight_bits = wbits;
        if (ebits == 0 && o.to.experts == 0)
            o.to.expert_bits = wbits;
    }
    o.ranks_from = m.ranks > 0 ? m.ranks : 1;
    o.tp_from = from_tp ? from_tp : o.from.tp ? o.from.tp : o.ranks_from;
    o.tp_to = tp ? tp : o.to.tp ? o.to.tp : o.tp_from;
    o.ranks_to = ranks ? ranks : o.tp_to;
    if (!quiet) {
        printf("# specsim scale: %s -> %s\n", in, out);
        printf("# model        %s: device \"%s\", ranks %d, moe %d experts top-%d\n", m.name,
               m.device, m.ranks, m.moe_experts, m.moe_topk);
        scalecmd_shape("from", &o.from, o.tp_from);
        scalecmd_shape("to", &o.to, o.tp_to);
        printf("# ranks        %d traced -> %d%s\n", o.ranks_from, o.ranks_to, o.ranks_to < o.tp_to
               ? " (one rank alone: no collectives, the LM head's shard)" : "");
        printf("# what-if      attention x");
        for (int p = 0; p < WM_NPHASE; p++)
            printf("%s%s=%g", p ? "," : "", wm_phase_name[p], o.attn_x[p]);
        for (int k = 0; k < SCALE_NKINDS; k++)
            if (o.kind_x[k] != 1)
                printf("; %s x%g", scale_kind_label(k), o.kind_x[k]);
        for (int p = 0; p < WM_NPHASE; p++)
            if (o.host_add_us[p] != 0)
                printf("; %s host gap +%g us", wm_phase_name[p], o.host_add_us[p]);
        printf("; always eager:");
        int any = 0;
        for (int p = 0; p < WM_NPHASE; p++)
            if (o.eager_phases & (1u << p))
                printf("%s%s", any++ ? "," : " ", wm_phase_name[p]);
        printf("%s\n", any ? "" : " none");
        printf("# bound        %s\n", o.bound < 0 ? "lo (every scaled term at the low end of its "
               "uncertainty)" : o.bound > 0 ? "hi (every scaled term at the high end)" : "nominal");
    }
    before = m;
    scale_summary sum;
    if (scale_model(&m, &o, &sum, err, sizeof err)) {
        fprintf(stderr, "specsim scale: %s\n", err);
        return SCALECMD_EXIT_BAD;
    }
    /* the band: the same scaling at both ends of every term's uncertainty */
    scale_opts ob = o;
    lo = before, hi = before;
    ob.bound = -1;
    int band = scale_model(&lo, &ob, NULL, err, sizeof err) == 0;
    ob.bound = 1;
    band = band && scale_model(&hi, &ob, NULL, err, sizeof err) == 0;
    if (carry_to) {
        if (scalecmd_carry(&m, carry_to, carry_from, o.bound, quiet, NULL, NULL) ||
            (band && (scalecmd_carry(&lo, carry_to, carry_from, -1, 1, NULL, NULL) ||
                      scalecmd_carry(&hi, carry_to, carry_from, 1, 1, NULL, NULL))))
            return SCALECMD_EXIT_BAD;
    }
    if (!quiet) {
        printf("# scaled       %d groups changed, %d unchanged, %d of no known kind%s%s%s; GEMM "
               "sweep: %d sites scaled, %d unknown (kept)\n", sum.groups_scaled, sum.groups_same,
               sum.groups_unknown, sum.groups_unknown ? " (" : "", sum.unknown,
               sum.groups_unknown ? ": layer scope only, +-50%" : "", sum.sites_scaled,
               sum.sites_unknown);
        scalecmd_groups(&before, &m);
        printf("#\n");
        scale_report(stdout, &before, &m, band ? &lo : NULL, band ? &hi : NULL);
    }
    if (sum.groups_unknown)
        fprintf(stderr, "specsim scale: warning: %d group(s) of no known kernel kind, scaled by "
                "their layer scope only: %s\n", sum.groups_unknown, sum.unknown);
    int w = wm_save(&m, out, err, sizeof err);
    if (w) {   /* -2: a value out of range (--layers 100000 once exited 1, a write error) */
        fprintf(stderr, "%s\n", err);
        return w == -2 ? SCALECMD_EXIT_BAD : SCALECMD_EXIT_IO;
    }
    /* read back as fit does: not a device or FIFO (-o /dev/stdout | jq once hung here reading
     * its own pipe, -o /dev/null exited 2) */
    if (!ofile_in_place(out) && wm_load(&check, out, err, sizeof err)) {
        fprintf(stderr, "specsim scale: the written model does not load back: %s\n", err);
        return SCALECMD_EXIT_BAD;
    }
    if (!quiet)
        printf("# wrote %s\n", out);
    return 0;
}
