/* carry: roofline scaling of a fitted workload model to another GPU (carry.h). The fitted
 * equation's terms map onto the roofline: the flat base below the knee is the weights read
 * once per forward (memory-bound), the slope above the knee is the GEMMs past the ridge
 * point (compute-bound), the expert and KV terms are bytes read (memory-bound). Workload:
 * one model of tens of groups, scaled once. */
#include "carry.h"
#include "bounds.h"

#include <cjson/cJSON.h>
#include <glob.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CARRY_GAP_GROUP "(gpu idle in phase)"   /* models/fit_match.c's pseudo-group */
#define CARRY_FILE_MAX (1 << 20)

static int carry_parse(carry_hw *h, const char *path, char *err, size_t errlen)
{
    /* read whole, to a cap (bounds.h): a directory or /dev/zero once said "invalid JSON" */
    char *buf;
    size_t n;
    if (bnd_read_file(path, CARRY_FILE_MAX, "a hardware preset", &buf, &n, err, errlen))
        return -1;
    cJSON *j = cJSON_Parse(buf);
    free(buf);
    int rc = -1;
    if (!j) {
        snprintf(err, errlen, "%s: invalid JSON", path);
        return -1;
    }
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(j, "specsim_preset");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(j, "name");
    const cJSON *gpu = cJSON_GetObjectItemCaseSensitive(j, "gpu");
    const cJSON *bw = cJSON_GetObjectItemCaseSensitive(j, "mem_bw_gbps");
    const cJSON *fl = cJSON_GetObjectItemCaseSensitive(j, "bf16_dense_tflops");
    const cJSON *match = cJSON_GetObjectItemCaseSensitive(j, "match");
    memset(h, 0, sizeof *h);
    if (!cJSON_IsString(kind) || strcmp(kind->valuestring, "hardware") != 0) {
        snprintf(err, errlen, "%s: field specsim_preset: not \"hardware\": not a hardware preset", path);
        goto out;
    }
    if (!cJSON_IsNumber(bw) || !(bw->valuedouble > 0) || !cJSON_IsNumber(fl) || !(fl->valuedouble > 0)) {
        snprintf(err, errlen, "%s: field %s: missing or not > 0", path,
                 cJSON_IsNumber(bw) && bw->valuedouble > 0 ? "bf16_dense_tflops" : "mem_bw_gbps");
        goto out;
    }
    snprintf(h->name, sizeof h->name, "%s", cJSON_IsString(name) ? name->valuestring : path);
    snprintf(h->gpu, sizeof h->gpu, "%s", cJSON_IsString(gpu) ? gpu->valuestring : h->name);
    snprintf(h->path, sizeof h->path, "%s", path);
    h->mem_bw_gbps = bw->valuedouble;
    h->bf16_tflops = fl->valuedouble;
    const cJSON *sms = cJSON_GetObjectItemCaseSensitive(j, "sms");
    h->sms = cJSON_IsNumber(sms) && sms->valuedouble >= 1 ? (int)sms->valuedouble : 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, match)
        if (cJSON_IsString(m) && h->nmatch < 4)
            snprintf(h->match[h->nmatch++], sizeof h->match[0], "%s", m->valuestring);
    rc = 0;
out:
    cJSON_Delete(j);
    return rc;
}

static const char *carry_dir(void)
{
    const char *d = getenv("SPECSIM_PRESETS");
    return d && *d ? d : "models/presets";
}

int carry_hw_load(carry_hw *h, const char *name, char *err, size_t errlen)
{
    char path[512];
    size_t n = strlen(name);
    if (strchr(name, '/') || (n > 5 && strcmp(name + n - 5, ".json") == 0))
        snprintf(path, sizeof path, "%s", name);
    else
        snprintf(path, sizeof path, "%s/%s.json", carry_dir(), name);
    if (carry_parse(h, path, err, errlen)) {
        char inner[400];
        snprintf(inner, sizeof inner, "%s", err);
        snprintf(err, errlen, "hardware preset %s: %s (presets live in %s: run from the "
                 "repository root, set SPECSIM_PRESETS, or give a path)", name, inner, carry_dir());
        return -1;
    }
    return 0;
}

int carry_hw_for_device(carry_hw *h, const char *device, char *err, size_t errlen)
{
    char pat[512];
    glob_t g;
    snprintf(pat, sizeof pat, "%s/*.json", carry_dir());
    int found = 0;
    if (glob(pat, 0, NULL, &g) == 0) {
        for (size_t i = 0; i < g.gl_pathc && !found; i++) {
            carry_hw c;
            char e[256];
            if (carry_parse(&c, g.gl_pathv[i], e, sizeof e))
                continue;   /* an LLM preset */
            for (int k = 0; k < c.nmatch && !found; k++)
                if (*c.match[k] && strstr(device, c.match[k])) {
                    *h = c;
                    found = 1;
                }
        }
        globfree(&g);
    }
    if (!found)
        snprintf(err, errlen, "device \"%s\": no hardware preset in %s matches it (give "
                 "--carry-from NAME)", device, carry_dir());
    return found ? 0 : -1;
}

int carry_hw_ends(carry_hw *from_hw, carry_hw *to_hw, const char *device, const char *from, const char *to,
                  char *err, size_t errlen)
{
    char why[960];
    if (from ? carry_hw_load(from_hw, from, why, sizeof why) : carry_hw_for_device(from_hw, device, why, sizeof why)) {
        snprintf(err, errlen, "field --carry-from: %s", why);
        return -1;
    }
    if (carry_hw_load(to_hw, to, why, sizeof why)) {
        snprintf(err, errlen, "field --carry-to: %s", why);
        return -1;
    }
    return 0;
}

/* A group whose launches are each shorter than CARRY_LATENCY_US at its flat base. */
static int carry_latency_bound(const wm_group *g)
{
    return strcmp(g->name, CARRY_GAP_GROUP) == 0 ||
           g->base_us / (g->count > 0 ? g->count : 1) < CARRY_LATENCY_US;
}

int carry_model(wm_model *m, const carry_hw *from, const carry_hw *to, carry_factors *f,
                char *err, size_t errlen)
{
    carry_factors x;
    memset(&x, 0, sizeof x);
    if (!(from->mem_bw_gbps > 0 && to->mem_bw_gbps > 0 && from->bf16_tflops > 0 && to->bf16_tflops > 0)) {
        snprintf(err, errlen, "carry %s -> %s: bandwidth and FLOP/s must be > 0", from->name, to->name);
        return -1;
    }
    x.bw_factor = from->mem_bw_gbps / to->mem_bw_gbps;
    x.flops_factor = from->bf16_tflops / to->bf16_tflops;
    /* ridge point (FLOP per byte) at which a GEMM turns compute-bound */
    x.knee_factor = (to->bf16_tflops / to->mem_bw_gbps) / (from->bf16_tflops / from->mem_bw_gbps);
    x.sm_factor = from->sms > 0 && to->sms > 0 ? (double)to->sms / from->sms : 1;
    for (int p = 0; p < WM_NPHASE; p++) {
        wm_phase_model *ph = &m->phase[p];
        if (!ph->present)
            continue;
        for (int i = 0; i < ph->ngroups; i++) {
            wm_group *g = &ph->groups[i];
            if (strcmp(g->name, CARRY_GAP_GROUP) == 0) {
                g->latency_bound = 1;     /* not scaled: its base stays as measured */
                x.groups_kept++;
                continue;
            }
            if (carry_latency_bound(g)) {
                g->latency_bound = 1;
                x.groups_latency++;
            } else {
                g->base_us *= x.bw_factor;
                x.groups_memory++;
            }
            g->per_token_us *= x.flops_factor;
            g->knee_tokens *= x.knee_factor;
            g->per_token_all_us *= x.flops_factor;
            g->per_expert_us *= x.bw_factor;
            /* the GEMM sweep's curves are the source GPU's cuBLAS kernels: scaled as bytes
             * (decode-sized GEMMs stream their weights); where the target's cuBLAS steps
             * differs is not known without a sweep on it (docs/fit.md) */
            g->sweep_scale *= x.bw_factor;
            g->per_kv_ktoken_us *= x.bw_factor;
            g->per_kvq_ktoken_us *= x.bw_factor;  /* KV re-read per query tile: bytes */
            g->per_kvq2_ktoken_us *= x.bw_factor;
            /* a wave holds as many blocks as the SMs take (same blocks per SM assumed) and
             * its blocks move bytes: more SMs, more work per wave, at the target's bandwidth */
            g->wave_capacity *= x.sm_factor;
            g->per_wave_us *= x.sm_factor * x.bw_factor;
        }
    }
    /* the uncertainty the prediction intervals carry (docs/simulator.md, "Intervals"); a
     * model carried twice adds both in quadrature */
    m->unc.memory_frac = hypot(m->unc.memory_frac, CARRY_UNC_BW);
    m->unc.compute_frac = hypot(m->unc.compute_frac, CARRY_UNC_FLOPS);
    m->unc.latency_frac = hypot(m->unc.latency_frac, CARRY_UNC_LATENCY);
    snprintf(m->unc.source, sizeof m->unc.source, "carried %.40s -> %.40s (models/carry.h "
             "CARRY_UNC_*)", from->name, to->name);
    /* the change first: the fit's own source (a list of traces) may be cut */
    char src[1024];
    snprintf(src, sizeof src, "carried %s -> %s by roofline scaling (memory x%.3f, compute "
             "x%.3f, knee x%.3f; host gaps, launches, GPU idle, kernels < %.0f us kept; "
             "uncertainty +-%.0f%%/%.0f%%/%.0f%%) from: %s", from->name, to->name, x.bw_factor,
             x.flops_factor, x.knee_factor, CARRY_LATENCY_US, 100 * CARRY_UNC_BW,
             100 * CARRY_UNC_FLOPS, 100 * CARRY_UNC_LATENCY, m->source);
    snprintf(m->source, sizeof m->source, "%.*s", (int)sizeof m->source - 1, src);
    char nm[sizeof m->name];
    snprintf(nm, sizeof nm, "%.60s-on-%.30s", m->name, to->name);
    memcpy(m->name, nm, sizeof m->name);
    snprintf(m->device, sizeof m->device, "%.*s", (int)sizeof m->device - 1, to->gpu);
    if (f)
        *f = x;
    return 0;
}

void carry_split(const wm_model *m, const wm_group *g, double tokens, double kv, double q,
                 double *mem, double *comp, double *lat)
{
    double over = tokens - g->knee_tokens;
    double e = wm_group_experts(m, g, tokens, q);
    double base = g->base_us, slope = g->per_token_us * (over > 0 ? over : 0) +
                                      g->per_token_all_us * tokens;
    double rest = g->per_expert_us * e + wm_kv_per_ktoken(g, q) * kv / 1000.0 +
                  g->per_wave_us * wm_waves(m, g, tokens, q) +
                  (g->sweep_scale > 0 ? g->sweep_scale * wm_sweep_us(m, g->sweep_phase, tokens, q) : 0);
    if (g->latency_bound)
        *lat += base;
    else
        *mem += base;
    *comp += slope;
    *mem += rest;
}

void carry_report(FILE *out, const wm_model *before, const wm_model *after)
{
    static const double toks[] = {1, 8, 64, 512};
    fprintf(out, "# carried: GPU time per forward at KV 0 (low/high: every term's fraction of peak "
            "off by +-%.0f%% memory, +-%.0f%% compute, +-%.0f%% latency-bound, all the same way)\n",
            100 * CARRY_UNC_BW, 100 * CARRY_UNC_FLOPS, 100 * CARRY_UNC_LATENCY);
    fprintf(out, "# %-8s %7s %12s %12s %12s %12s\n", "phase", "tokens", "before", "after", "low", "high");
    fprintf(out, "# %-8s %7s %12s %12s %12s %12s\n", "-", "tokens", "us", "us", "us", "us");
    for (int p = 0; p < WM_NPHASE; p++) {
        const wm_phase_model *pa = &after->phase[p];
        if (!pa->present)
            continue;
        for (size_t t = 0; t < sizeof toks / sizeof toks[0]; t++) {
            double mem = 0, comp = 0, lat = 0;
            for (int i = 0; i < pa->ngroups; i++)
                carry_split(after, &pa->groups[i], toks[t], 0, 1, &mem, &comp, &lat);
            double mid = mem + comp + lat;
            double lo = mem * (1 - CARRY_UNC_BW) + comp * (1 - CARRY_UNC_FLOPS) + lat * (1 - CARRY_UNC_LATENCY);
            double hi = mem * (1 + CARRY_UNC_BW) + comp * (1 + CARRY_UNC_FLOPS) + lat * (1 + CARRY_UNC_LATENCY);
            fprintf(out, "  %-8s %7g %12.2f %12.2f %12.2f %12.2f\n", wm_phase_name[p], toks[t],
                    wm_phase_gpu_us(before, p, toks[t], 0), mid, lo, hi);
        }
    }
}
