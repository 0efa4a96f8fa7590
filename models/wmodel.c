/* wmodel: reads, checks and writes the workload model file (docs/model-format.md) and
 * evaluates its cost functions. Why strict: a typo in a hand-written or fitted model must
 * stop the run with the file, the field path and the value, not silently cost 0. Files are
 * a few KB (tens of groups per phase); costs are evaluated once per phase per iteration. */
#include "wmodel.h"
#include "bounds.h"
#include "jkeys.h"
#include "ofile.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const wm_phase_name[WM_NPHASE] = {
    "draft", "verify", "accept", "extend", "decode", "sample",
};

#define WM_PATH_MAX 160               /* longest field path we print */

/* Parse state: where messages go and which file they name. */
typedef struct {
    const char *file;
    char       *err;
    size_t      errlen;
} wm_ctx;

void wm_init(wm_model *m)
{
    memset(m, 0, sizeof *m);
    m->ranks = 1;
}

const char *const wm_loop_name[WM_NLOOP] = {"sglang-eagle", "hf-assisted"};

int wm_loop_find(const char *s)
{
    for (int l = 0; l < WM_NLOOP; l++)
        if (strcmp(s, wm_loop_name[l]) == 0)
            return l;
    return -1;
}

int wm_phase_find(const char *name)
{
    for (int p = 0; p < WM_NPHASE; p++)
        if (strcmp(name, wm_phase_name[p]) == 0)
            return p;
    return -1;
}

/* Renders a JSON value for a message: numbers as %g, strings quoted, others compact JSON,
 * cut to fit. */
static void wm_render(const cJSON *v, char *buf, size_t len)
{
    if (v == NULL) {
        snprintf(buf, len, "(none)");
    } else if (cJSON_IsNumber(v)) {
        snprintf(buf, len, "%.10g", v->valuedouble);
    } else if (cJSON_IsString(v)) {
        snprintf(buf, len, "\"%.40s%s\"", v->valuestring,
                 strlen(v->valuestring) > 40 ? "..." : "");
    } else {
        char *s = cJSON_PrintUnformatted(v);
        if (s == NULL) {
            snprintf(buf, len, "(unprintable)");
            return;
        }
        snprintf(buf, len, "%.40s%s", s, strlen(s) > 40 ? "..." : "");
        cJSON_free(s);
    }
}

/* "FILE: field PATH: value V: WHY". Always returns -1. */
static int wm_fail(const wm_ctx *c, const char *path, const cJSON *v, const char *fmt, ...)
{
    char val[64], why[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    if (v == NULL) { /* nothing to show: the message names the field and the reason */
        snprintf(c->err, c->errlen, "%s: field %s: %s", c->file, path, why);
        return -1;
    }
    wm_render(v, val, sizeof val);
    snprintf(c->err, c->errlen, "%s: field %s: value %s: %s", c->file, path, val, why);
    return -1;
}

static int wm_missing(const wm_ctx *c, const char *path, const char *why)
{
    snprintf(c->err, c->errlen, "%s: field %s: missing: %s", c->file, path, why);
    return -1;
}

/* out = base + sep + tail, cut to WM_PATH_MAX-1 characters (paths are for messages). */
static void wm_pathcat(char *out, const char *base, const char *sep, const char *tail)
{
    size_t n = 0;
    const char *parts[3] = {base, sep, tail};
    for (int i = 0; i < 3; i++)
        for (const char *s = parts[i]; *s && n < WM_PATH_MAX - 1; s++)
            out[n++] = *s;
    out[n] = '\0';
}

static void wm_index(char *out, const char *base, int i)
{
    char num[16];
    snprintf(num, sizeof num, "[%d]", i);
    wm_pathcat(out, base, "", num);
}

static void wm_join(char *out, const char *base, const char *key)
{
    wm_pathcat(out, base, base[0] ? "." : "", key);
}

/* Every key of obj must be in known[] (NULL-terminated) or start with '_' (a comment),
 * and appear once. */
static int wm_check_keys(const wm_ctx *c, const cJSON *obj, const char *base,
                         const char *const *known)
{
    const cJSON *it;
    cJSON_ArrayForEach(it, obj) {
        char path[WM_PATH_MAX];
        wm_join(path, base, it->string);
        if (it->string[0] == '_')
            continue;
        int ok = 0;
        for (int i = 0; known[i]; i++)
            if (strcmp(it->string, known[i]) == 0)
                ok = 1;
        if (!ok) {
            char list[256] = "";
            for (int i = 0; known[i]; i++) {
                strncat(list, i ? ", " : "", sizeof list - strlen(list) - 1);
                strncat(list, known[i], sizeof list - strlen(list) - 1);
            }
            return wm_fail(c, path, it, "unknown field (expected one of: %s; "
                           "keys starting with '_' are comments)", list);
        }
        if (jkeys_dup(obj, it))
            return wm_fail(c, path, it, "field given twice");
    }
    return 0;
}

static const cJSON *wm_obj(const wm_ctx *c, const cJSON *parent, const char *key,
                           const char *base, int required, int *err)
{
    char path[WM_PATH_MAX];
    wm_join(path, base, key);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(parent, key);
    *err = 0;
    if (v == NULL) {
        if (required)
            *err = wm_missing(c, path, "required object");
        return NULL;
    }
    if (!cJSON_IsObject(v)) {
        *err = wm_fail(c, path, v, "must be an object {...}");
        return NULL;
    }
    return v;
}

/* Reads number key of parent into *out: a number within kind k's range (bounds.h).
 * Absent: error if required, else *out = def. */
static int wm_num(const wm_ctx *c, const cJSON *parent, const char *key, const char *base,
                  int required, double def, const bnd_kind *k, double *out)
{
    char path[WM_PATH_MAX];
    wm_join(path, base, key);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(parent, key);
    if (v == NULL) {
        if (required)
            return wm_missing(c, path, "required number");
        *out = def;
        return 0;
    }
    if (!cJSON_IsNumber(v))
        return wm_fail(c, path, v, "must be a number");
    if (bnd_check(k, v->valuedouble, c->file, path, c->err, c->errlen) != 0)
        return -1;
    *out = v->valuedouble;
    return 0;
}

static int wm_int(const wm_ctx *c, const cJSON *parent, const char *key, const char *base,
                  int required, int def, const bnd_kind *k, int *out)
{
    double x;
    if (wm_num(c, parent, key, base, required, def, k, &x) != 0)
        return -1;
    *out = (int)x;
    return 0;
}

static int wm_str(const wm_ctx *c, const cJSON *parent, const char *key, const char *base,
                  int required, char *out, size_t cap)
{
    char path[WM_PATH_MAX];
    wm_join(path, base, key);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(parent, key);
    if (v == NULL) {
        if (required)
            return wm_missing(c, path, "required string");
        out[0] = '\0';
        return 0;
    }
    if (!cJSON_IsString(v))
        return wm_fail(c, path, v, "must be a string");
    if (strlen(v->valuestring) >= cap)
        return wm_fail(c, path, v, "longer than %zu characters", cap - 1);
    if (required && v->valuestring[0] == '\0')
        return wm_fail(c, path, v, "must not be empty");
    strcpy(out, v->valuestring);
    return 0;
}

static const char *const wm_group_keys[] = {
    "name", "count", "base_us", "per_token_us", "knee_tokens", "per_expert_us",
    "per_kv_ktoken_us", "per_kvq_ktoken_us", "q_tile", "per_token_all_us", "sd_frac",
    "wave_blocks0", "wave_blocks_per_token", "wave_blocks_per_expert", "wave_blocks_max",
    "wave_capacity", "per_wave_us", "sweep_scale", "sweep_phase", "per_kvq2_ktoken_us",
    "q_tile_knee", "resid_frac", "resid_abs_us", "latency_bound", "source", "q_min",
    "launch_pos", NULL,
};

/* A group's launch profile (launch_pos): WM_POS_BINS shares in [0, 1] summing to 1 (to
 * 0.01: the writer rounds them; normalized here). Absent: has_pos 0. */
static int wm_parse_pos(const wm_ctx *c, const cJSON *g, const char *base, wm_group *out)
{
    char path[WM_PATH_MAX];
    wm_join(path, base, "launch_pos");
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(g, "launch_pos");
    out->has_pos = 0;
    if (a == NULL)
        return 0;
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) != WM_POS_BINS)
        return wm_fail(c, path, a, "must be an array of %d shares (the group's GPU time in each "
                       "slice of the phase's eager launch time)", WM_POS_BINS);
    double sum = 0;
    int b = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, a) {
        if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0 && v->valuedouble <= 1))
            return wm_fail(c, path, v, "element %d must be a share in [0, 1]", b);
        out->pos[b++] = v->valuedouble;
        sum += v->valuedouble;
    }
    if (!(fabs(sum - 1) <= 0.01))
        return wm_fail(c, path, a, "the shares sum to %g, not 1", sum);
    for (b = 0; b < WM_POS_BINS; b++)
        out->pos[b] /= sum;
    out->has_pos = 1;
    return 0;
}

static int wm_parse_group(const wm_ctx *c, const cJSON *g, const char *base, wm_group *out)
{
    if (!cJSON_IsObject(g))
        return wm_fail(c, base, g, "must be an object {\"name\": ..., \"base_us\": ...}");
    if (wm_check_keys(c, g, base, wm_group_keys) != 0)
        return -1;
    if (wm_str(c, g, "name", base, 1, out->name, sizeof out->name) != 0 ||
        wm_int(c, g, "count", base, 1, 1, &bnd_count, &out->count) != 0 ||
        wm_num(c, g, "base_us", base, 1, 0, &bnd_cost_us, &out->base_us) != 0 ||
        wm_num(c, g, "per_token_us", base, 0, 0, &bnd_slope_us, &out->per_token_us) != 0 ||
        wm_num(c, g, "knee_tokens", base, 0, 0, &bnd_tokens, &out->knee_tokens) != 0 ||
        wm_num(c, g, "per_expert_us", base, 0, 0, &bnd_slope_us, &out->per_expert_us) != 0 ||
        wm_num(c, g, "per_kv_ktoken_us", base, 0, 0, &bnd_slope_us, &out->per_kv_ktoken_us) != 0 ||
        wm_num(c, g, "per_kvq_ktoken_us", base, 0, 0, &bnd_slope_us, &out->per_kvq_ktoken_us) != 0 ||
        wm_num(c, g, "q_tile", base, 0, 0, &bnd_q_tokens, &out->q_tile) != 0 ||
        wm_num(c, g, "per_kvq2_ktoken_us", base, 0, 0, &bnd_slope_us, &out->per_kvq2_ktoken_us) != 0 ||
        wm_num(c, g, "q_tile_knee", base, 0, 0, &bnd_q_tokens, &out->q_tile_knee) != 0 ||
        wm_num(c, g, "q_min", base, 0, 0, &bnd_q_tokens, &out->q_min) != 0 ||
        wm_num(c, g, "per_token_all_us", base, 0, 0, &bnd_slope_us, &out->per_token_all_us) != 0 ||
        wm_num(c, g, "wave_blocks0", base, 0, 0, &bnd_blocks, &out->wave_blocks0) != 0 ||
        wm_num(c, g, "wave_blocks_per_token", base, 0, 0, &bnd_blocks, &out->wave_blocks_per_token) != 0 ||
        wm_num(c, g, "wave_blocks_per_expert", base, 0, 0, &bnd_blocks, &out->wave_blocks_per_expert) != 0 ||
        wm_num(c, g, "wave_blocks_max", base, 0, 0, &bnd_blocks, &out->wave_blocks_max) != 0 ||
        wm_num(c, g, "wave_capacity", base, 0, 0, &bnd_blocks, &out->wave_capacity) != 0 ||
        wm_num(c, g, "per_wave_us", base, 0, 0, &bnd_slope_us, &out->per_wave_us) != 0 ||
        wm_num(c, g, "sd_frac", base, 0, 0, &bnd_frac, &out->sd_frac) != 0 ||
        wm_num(c, g, "resid_frac", base, 0, 0, &bnd_frac, &out->resid_frac) != 0 ||
        wm_num(c, g, "resid_abs_us", base, 0, 0, &bnd_cost_us, &out->resid_abs_us) != 0 ||
        wm_num(c, g, "sweep_scale", base, 0, 0, &bnd_factor, &out->sweep_scale) != 0 ||
        wm_str(c, g, "source", base, 0, out->source, sizeof out->source) != 0)
        return -1;
    const cJSON *lb = cJSON_GetObjectItemCaseSensitive(g, "latency_bound");
    if (lb != NULL && !cJSON_IsBool(lb)) {
        char path[WM_PATH_MAX];
        wm_join(path, base, "latency_bound");
        return wm_fail(c, path, lb, "must be true or false");
    }
    out->latency_bound = lb != NULL && cJSON_IsTrue(lb);
    if (wm_parse_pos(c, g, base, out) != 0)
        return -1;
    const cJSON *sp = cJSON_GetObjectItemCaseSensitive(g, "sweep_phase");
    if (sp != NULL || out->sweep_scale > 0) {
        char path[WM_PATH_MAX];
        wm_join(path, base, "sweep_phase");
        if (sp == NULL)
            return wm_missing(c, path, "required with sweep_scale (the phase whose GEMM "
                              "sites the term sums)");
        out->sweep_phase = cJSON_IsString(sp) ? wm_phase_find(sp->valuestring) : -1;
        if (out->sweep_phase < 0)
            return wm_fail(c, path, sp, "must be a phase name (draft, verify, extend, ...)");
    }
    return 0;
}

static const char *const wm_coll_keys[] = {"op", "count", "bytes_per_token", NULL};

static int wm_parse_coll(const wm_ctx *c, const cJSON *j, const char *base, wm_coll *out)
{
    if (!cJSON_IsObject(j))
        return wm_fail(c, base, j, "must be an object {\"op\": \"allreduce\", ...}");
    if (wm_check_keys(c, j, base, wm_coll_keys) != 0 ||
        wm_str(c, j, "op", base, 1, out->op, sizeof out->op) != 0)
        return -1;
    if (strcmp(out->op, "allreduce") != 0 && strcmp(out->op, "allgather") != 0 &&
        strcmp(out->op, "reducescatter") != 0) {
        char path[WM_PATH_MAX];
        wm_join(path, base, "op");
        return wm_fail(c, path, cJSON_GetObjectItemCaseSensitive(j, "op"),
                       "unknown collective (expected: allreduce, allgather, reducescatter)");
    }
    if (wm_int(c, j, "count", base, 1, 1, &bnd_count, &out->count) != 0 ||
        wm_num(c, j, "bytes_per_token", base, 1, 0, &bnd_bytes, &out->bytes_per_token) != 0)
        return -1;
    return 0;
}

static const char *const wm_phase_keys[] = {
    "host_gap_us", "host_gap_sd_us", "always_eager", "groups", "collectives",
    "fitted_tokens_max", "fitted_q_max", "fitted_kv_row_max", "host_gap_per_row_us", "eager_launch_us",
    "host_gap_reject_us", "kv_rows", "eager_stall_per_launch", "eager_stall_us", "eager_gap_us",
    "expert_row_exponent", "graph_size_factors", "graph_size_sd", NULL,
};
static const char *const wm_gsize_keys[] = {"rows", "factor", NULL};

static int wm_numarr(const wm_ctx *c, const cJSON *a, const char *path, int max, int inc,
                     const bnd_kind *k, double *out, int *len);

/* "graph_size_factors": {"rows": [...], "factor": [...]}, one factor per captured size. */
static int wm_parse_graph_sizes(const wm_ctx *c, const cJSON *j, const char *base, wm_phase_model *ph)
{
    char path[WM_PATH_MAX], p2[WM_PATH_MAX];
    ph->n_graph_sizes = 0;
    const cJSON *gs = cJSON_GetObjectItemCaseSensitive(j, "graph_size_factors");
    if (gs == NULL)
        return 0;
    wm_join(path, base, "graph_size_factors");
    if (!cJSON_IsObject(gs))
        return wm_fail(c, path, gs, "must be an object {\"rows\": [...], \"factor\": [...]}");
    if (wm_check_keys(c, gs, path, wm_gsize_keys) != 0)
        return -1;
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(gs, "rows");
    const cJSON *fac = cJSON_GetObjectItemCaseSensitive(gs, "factor");
    wm_join(p2, path, rows ? "factor" : "rows");
    if (rows == NULL || fac == NULL)
        return wm_missing(c, p2, "required array (graph_size_factors has rows and factor, one each)");
    int n = 0;
    wm_join(p2, path, "rows");
    if (wm_numarr(c, rows, p2, WM_GRAPH_SIZES, 1, &bnd_rows, ph->graph_size_rows, &n) != 0)
        return -1;
    wm_join(p2, path, "factor");
    if (wm_numarr(c, fac, p2, WM_GRAPH_SIZES, 0, &bnd_size_factor, ph->graph_size_factor, &n) != 0)
        return -1;
    ph->n_graph_sizes = n;
    return 0;
}

int wm_phase_graph_size(const wm_phase_model *ph, int padded)
{
    for (int i = 0; ph && padded > 0 && i < ph->n_graph_sizes; i++)
        if (ph->graph_size_rows[i] == (double)padded)
            return i;
    return -1;
}

double wm_phase_graph_factor(const wm_phase_model *ph, int padded)
{
    int i = wm_phase_graph_size(ph, padded);
    return i >= 0 ? ph->graph_size_factor[i] : 1.0;
}

static int wm_parse_phase(const wm_ctx *c, const cJSON *j, const char *base, wm_phase_model *ph)
{
    char path[WM_PATH_MAX];
    if (!cJSON_IsObject(j))
        return wm_fail(c, base, j, "must be an object {\"groups\": [...], ...}");
    if (wm_check_keys(c, j, base, wm_phase_keys) != 0 ||
        wm_num(c, j, "host_gap_us", base, 0, 0, &bnd_cost_us, &ph->host_gap_us) != 0 ||
        wm_num(c, j, "host_gap_sd_us", base, 0, 0, &bnd_cost_us, &ph->host_gap_sd_us) != 0 ||
        wm_num(c, j, "fitted_tokens_max", base, 0, 0, &bnd_tokens, &ph->fitted_tokens_max) != 0 ||
        wm_num(c, j, "fitted_q_max", base, 0, 0, &bnd_q_tokens, &ph->fitted_q_max) != 0 ||
        wm_num(c, j, "fitted_kv_row_max", base, 0, 0, &bnd_tokens, &ph->fitted_kv_row_max) != 0 ||
        wm_num(c, j, "host_gap_per_row_us", base, 0, 0, &bnd_slope_us, &ph->host_gap_per_row_us) != 0 ||
        wm_num(c, j, "eager_launch_us", base, 0, 0, &bnd_cost_us, &ph->eager_launch_us) != 0 ||
        wm_num(c, j, "host_gap_reject_us", base, 0, 0, &bnd_cost_us, &ph->host_gap_reject_us) != 0 ||
        wm_num(c, j, "eager_stall_per_launch", base, 0, 0, &bnd_prob, &ph->eager_stall_per_launch) != 0 ||
        wm_num(c, j, "eager_stall_us", base, 0, 0, &bnd_cost_us, &ph->eager_stall_us) != 0 ||
        wm_num(c, j, "eager_gap_us", base, 0, 0, &bnd_cost_us, &ph->eager_gap_us) != 0 ||
        wm_num(c, j, "expert_row_exponent", base, 0, 1, &bnd_row_exp, &ph->expert_row_exp) != 0 ||
        wm_parse_graph_sizes(c, j, base, ph) != 0 ||
        wm_num(c, j, "graph_size_sd", base, 0, 0, &bnd_frac, &ph->graph_size_sd) != 0)
        return -1;
    if ((ph->eager_stall_per_launch > 0) != (ph->eager_stall_us > 0)) {
        wm_join(path, base, ph->eager_stall_us > 0 ? "eager_stall_per_launch" : "eager_stall_us");
        return wm_missing(c, path, "the host stalls need both eager_stall_per_launch and eager_stall_us");
    }
    if (ph->eager_stall_per_launch * ph->eager_stall_us > ph->eager_launch_us) {
        wm_join(path, base, "eager_stall_us");
        return wm_fail(c, path, cJSON_GetObjectItemCaseSensitive(j, "eager_stall_us"),
                       "the stalls' mean share per launch (%g x %g us) exceeds eager_launch_us "
                       "(%g us), which includes it", ph->eager_stall_per_launch,
                       ph->eager_stall_us, ph->eager_launch_us);
    }
    const cJSON *ae = cJSON_GetObjectItemCaseSensitive(j, "always_eager");
    if (ae != NULL && !cJSON_IsBool(ae)) {
        wm_join(path, base, "always_eager");
        return wm_fail(c, path, ae, "must be true or false");
    }
    ph->always_eager = ae != NULL && cJSON_IsTrue(ae);
    const cJSON *kr = cJSON_GetObjectItemCaseSensitive(j, "kv_rows");
    ph->kv_rows = WM_KV_REAL;
    if (kr != NULL) {
        if (cJSON_IsString(kr) && strcmp(kr->valuestring, "padded") == 0)
            ph->kv_rows = WM_KV_PADDED;
        else if (!cJSON_IsString(kr) || strcmp(kr->valuestring, "real") != 0) {
            wm_join(path, base, "kv_rows");
            return wm_fail(c, path, kr, "must be \"real\" or \"padded\"");
        }
    }

    wm_join(path, base, "groups");
    const cJSON *groups = cJSON_GetObjectItemCaseSensitive(j, "groups");
    if (groups == NULL)
        return wm_missing(c, path, "required array of kernel groups");
    if (!cJSON_IsArray(groups))
        return wm_fail(c, path, groups, "must be an array [...]");
    if (cJSON_GetArraySize(groups) > WM_GROUPS_MAX)
        return wm_fail(c, path, NULL, "%d groups: at most %d (WM_GROUPS_MAX)",
                       cJSON_GetArraySize(groups), WM_GROUPS_MAX);
    const cJSON *it;
    ph->ngroups = 0;
    cJSON_ArrayForEach(it, groups) {
        char gp[WM_PATH_MAX];
        wm_index(gp, path, ph->ngroups);
        if (wm_parse_group(c, it, gp, &ph->groups[ph->ngroups]) != 0)
            return -1;
        ph->ngroups++;
    }
    wm_phase_set_expert_row_exp(ph, ph->expert_row_exp);

    wm_join(path, base, "collectives");
    const cJSON *colls = cJSON_GetObjectItemCaseSensitive(j, "collectives");
    ph->ncolls = 0;
    if (colls == NULL)
        return 0;
    if (!cJSON_IsArray(colls))
        return wm_fail(c, path, colls, "must be an array [...]");
    if (cJSON_GetArraySize(colls) > WM_COLLS_MAX)
        return wm_fail(c, path, NULL, "%d collectives: at most %d (WM_COLLS_MAX)",
                       cJSON_GetArraySize(colls), WM_COLLS_MAX);
    cJSON_ArrayForEach(it, colls) {
        char cp[WM_PATH_MAX];
        wm_index(cp, path, ph->ncolls);
        if (wm_parse_coll(c, it, cp, &ph->colls[ph->ncolls]) != 0)
            return -1;
        ph->ncolls++;
    }
    return 0;
}

static const char *const wm_top_keys[] = {
    "specsim_model", "name", "source", "device", "ranks", "moe", "launch", "phases",
    "gemm_sweep", "uncertainty", "loop", NULL,
};
static const char *const wm_sweep_keys[] = {"source", "tokens", "sites", NULL};
static const char *const wm_site_keys[] = {"name", "phases", "per_forward", "m", "us", NULL};

/* Reads a JSON array of n numbers (n = *len on entry when > 0, else up to max) into out:
 * each within kind k's range; increasing when inc. */
static int wm_numarr(const wm_ctx *c, const cJSON *a, const char *path, int max, int inc,
                     const bnd_kind *k, double *out, int *len)
{
    if (!cJSON_IsArray(a))
        return wm_fail(c, path, a, "must be an array of numbers");
    int n = cJSON_GetArraySize(a);
    if (*len > 0 && n != *len)
        return wm_fail(c, path, NULL, "%d values: must have one per token count (%d)", n, *len);
    if (n < 2 || n > max)
        return wm_fail(c, path, NULL, "%d values: must have 2 to %d", n, max);
    int i = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, a) {
        char p2[WM_PATH_MAX];
        wm_index(p2, path, i);
        if (!cJSON_IsNumber(v))
            return wm_fail(c, p2, v, "must be a number");
        if (bnd_check(k, v->valuedouble, c->file, p2, c->err, c->errlen) != 0)
            return -1;
        if (inc && i > 0 && !(v->valuedouble > out[i - 1]))
            return wm_fail(c, p2, v, "must be larger than the one before (%g)", out[i - 1]);
        out[i++] = v->valuedouble;
    }
    *len = n;
    return 0;
}

static int wm_parse_sweep(const wm_ctx *c, const cJSON *j, wm_sweep *sw)
{
    if (wm_check_keys(c, j, "gemm_sweep", wm_sweep_keys) != 0 ||
        wm_str(c, j, "source", "gemm_sweep", 0, sw->source, sizeof sw->source) != 0)
        return -1;
    const cJSON *tok = cJSON_GetObjectItemCaseSensitive(j, "tokens");
    if (tok == NULL)
        return wm_missing(c, "gemm_sweep.tokens", "required array (token counts)");
    sw->ntok = 0;
    if (wm_numarr(c, tok, "gemm_sweep.tokens", WM_SWEEP_TOK, 1, &bnd_tokens, sw->tok, &sw->ntok) != 0)
        return -1;
    const cJSON *sites = cJSON_GetObjectItemCaseSensitive(j, "sites");
    if (!cJSON_IsArray(sites) || cJSON_GetArraySize(sites) < 1)
        return sites ? wm_fail(c, "gemm_sweep.sites", sites, "must be a non-empty array")
                     : wm_missing(c, "gemm_sweep.sites", "required array (the GEMM shapes)");
    if (cJSON_GetArraySize(sites) > WM_SWEEP_SITES)
        return wm_fail(c, "gemm_sweep.sites", NULL, "%d sites: at most %d",
                       cJSON_GetArraySize(sites), WM_SWEEP_SITES);
    const cJSON *it;
    cJSON_ArrayForEach(it, sites) {
        char base[WM_PATH_MAX], path[WM_PATH_MAX];
        wm_index(base, "gemm_sweep.sites", sw->nsite);
        wm_sweep_site *st = &sw->site[sw->nsite];
        if (!cJSON_IsObject(it))
            return wm_fail(c, base, it, "must be an object {\"name\": ..., \"us\": [...]}");
        char mm[16];
        if (wm_check_keys(c, it, base, wm_site_keys) != 0 ||
            wm_str(c, it, "name", base, 1, st->name, sizeof st->name) != 0 ||
            wm_num(c, it, "per_forward", base, 1, 0, &bnd_factor, &st->per_forward) != 0 ||
            wm_str(c, it, "m", base, 0, mm, sizeof mm) != 0)
            return -1;
        wm_join(path, base, "m");
        if (mm[0] && strcmp(mm, "tokens") != 0 && strcmp(mm, "rows") != 0)
            return wm_fail(c, path, cJSON_GetObjectItemCaseSensitive(it, "m"),
                           "must be \"tokens\" or \"rows\"");
        st->by_rows = strcmp(mm, "rows") == 0;
        const cJSON *ph = cJSON_GetObjectItemCaseSensitive(it, "phases");
        wm_join(path, base, "phases");
        if (!cJSON_IsArray(ph) || cJSON_GetArraySize(ph) < 1)
            return ph ? wm_fail(c, path, ph, "must be a non-empty array of phase names")
                      : wm_missing(c, path, "required array of phase names");
        const cJSON *pn;
        cJSON_ArrayForEach(pn, ph) {
            int p = cJSON_IsString(pn) ? wm_phase_find(pn->valuestring) : -1;
            if (p < 0)
                return wm_fail(c, path, pn, "unknown phase (expected draft, verify, accept, "
                               "extend, decode or sample)");
            st->phases |= 1u << p;
        }
        wm_join(path, base, "us");
        const cJSON *us = cJSON_GetObjectItemCaseSensitive(it, "us");
        if (us == NULL)
            return wm_missing(c, path, "required array (us per call at each token count)");
        int n = sw->ntok;
        if (wm_numarr(c, us, path, WM_SWEEP_TOK, 0, &bnd_cost_us, st->us, &n) != 0)
            return -1;
        sw->nsite++;
    }
    return 0;
}
static const char *const wm_moe_keys[] = {"experts", "topk", NULL};
static const char *const wm_launch_keys[] = {"graph_launch_us", "eager_launch_us",
                                             "host_speed_sd_frac", "host_speed_rho",
                                             "host_speed_level_sd", NULL};
static const char *const wm_unc_keys[] = {"memory_frac", "compute_frac", "latency_frac",
                                          "source", NULL};

/* Fills m from the parsed document root. */
static int wm_from_json(const wm_ctx *c, const cJSON *root, wm_model *m)
{
    int e;
    if (!cJSON_IsObject(root))
        return wm_fail(c, "(top level)", root, "the file must hold one JSON object {...}");
    if (wm_check_keys(c, root, "", wm_top_keys) != 0)
        return -1;

    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(root, "specsim_model");
    if (ver == NULL)
        return wm_missing(c, "specsim_model", "required format version (1)");
    if (!cJSON_IsNumber(ver) || ver->valuedouble != 1)
        return wm_fail(c, "specsim_model", ver, "unsupported format version (this build "
                       "reads version 1)");

    if (wm_str(c, root, "name", "", 1, m->name, sizeof m->name) != 0 ||
        wm_str(c, root, "source", "", 0, m->source, sizeof m->source) != 0 ||
        wm_str(c, root, "device", "", 0, m->device, sizeof m->device) != 0 ||
        wm_int(c, root, "ranks", "", 0, 1, &bnd_ranks, &m->ranks) != 0)
        return -1;
    char loop[32] = "";
    if (wm_str(c, root, "loop", "", 0, loop, sizeof loop) != 0)
        return -1;
    if (loop[0] && (m->loop = wm_loop_find(loop)) < 0)
        return wm_fail(c, "loop", cJSON_GetObjectItemCaseSensitive(root, "loop"),
                       "unknown loop (expected sglang-eagle or hf-assisted)");
    if (!loop[0])
        m->loop = WM_LOOP_EAGLE;

    const cJSON *moe = wm_obj(c, root, "moe", "", 0, &e);
    if (e)
        return -1;
    if (moe) {
        if (wm_check_keys(c, moe, "moe", wm_moe_keys) != 0 ||
            wm_int(c, moe, "experts", "moe", 1, 0, &bnd_experts, &m->moe_experts) != 0 ||
            wm_int(c, moe, "topk", "moe", 1, 0, &bnd_experts, &m->moe_topk) != 0)
            return -1;
        if (m->moe_experts > 0 && (m->moe_topk < 1 || m->moe_topk > m->moe_experts))
            return wm_fail(c, "moe.topk", cJSON_GetObjectItemCaseSensitive(moe, "topk"),
                           "must be between 1 and moe.experts (%d) for a MoE model",
                           m->moe_experts);
        if (m->moe_experts == 0 && m->moe_topk != 0)
            return wm_fail(c, "moe.topk", cJSON_GetObjectItemCaseSensitive(moe, "topk"),
                           "must be 0 when moe.experts is 0 (dense model)");
    }

    const cJSON *launch = wm_obj(c, root, "launch", "", 0, &e);
    if (e)
        return -1;
    if (launch) {
        if (wm_check_keys(c, launch, "launch", wm_launch_keys) != 0 ||
            wm_num(c, launch, "graph_launch_us", "launch", 0, 0, &bnd_cost_us,
                   &m->graph_launch_us) != 0 ||
            wm_num(c, launch, "eager_launch_us", "launch", 0, 0, &bnd_cost_us,
                   &m->eager_launch_us) != 0 ||
            wm_num(c, launch, "host_speed_sd_frac", "launch", 0, 0, &bnd_frac,
                   &m->host_speed_sd_frac) != 0 ||
            wm_num(c, launch, "host_speed_rho", "launch", 0, 0, &bnd_frac,
                   &m->host_speed_rho) != 0 ||
            wm_num(c, launch, "host_speed_level_sd", "launch", 0, 0, &bnd_frac,
                   &m->host_speed_level_sd) != 0)
            return -1;
        if (m->host_speed_rho >= 1)
            return wm_fail(c, "launch.host_speed_rho",
                           cJSON_GetObjectItemCaseSensitive(launch, "host_speed_rho"),
                           "an autocorrelation must be in [0, 1)");
    }

    const cJSON *unc = wm_obj(c, root, "uncertainty", "", 0, &e);
    if (e)
        return -1;
    if (unc) {
        if (wm_check_keys(c, unc, "uncertainty", wm_unc_keys) != 0 ||
            wm_num(c, unc, "memory_frac", "uncertainty", 0, 0, &bnd_frac, &m->unc.memory_frac) != 0 ||
            wm_num(c, unc, "compute_frac", "uncertainty", 0, 0, &bnd_frac, &m->unc.compute_frac) != 0 ||
            wm_num(c, unc, "latency_frac", "uncertainty", 0, 0, &bnd_frac, &m->unc.latency_frac) != 0 ||
            wm_str(c, unc, "source", "uncertainty", 0, m->unc.source, sizeof m->unc.source) != 0)
            return -1;
    }

    const cJSON *phases = wm_obj(c, root, "phases", "", 1, &e);
    if (e)
        return -1;
    const cJSON *it;
    cJSON_ArrayForEach(it, phases) {
        char path[WM_PATH_MAX];
        wm_join(path, "phases", it->string);
        if (it->string[0] == '_')
            continue; /* comment */
        int p = wm_phase_find(it->string);
        if (p < 0)
            return wm_fail(c, path, NULL, "unknown phase \"%s\" (expected one of: draft, "
                           "verify, accept, extend, decode, sample)", it->string);
        if (m->phase[p].present)
            return wm_fail(c, path, NULL, "phase given twice");
        if (wm_parse_phase(c, it, path, &m->phase[p]) != 0)
            return -1;
        m->phase[p].present = 1;
    }
    const cJSON *sweep = wm_obj(c, root, "gemm_sweep", "", 0, &e);
    if (e)
        return -1;
    if (sweep && wm_parse_sweep(c, sweep, &m->sweep) != 0)
        return -1;
    for (int p = 0; p < WM_NPHASE; p++)
        for (int i = 0; i < m->phase[p].ngroups; i++)
            if (m->phase[p].groups[i].sweep_scale > 0 && m->sweep.ntok == 0) {
                char path[WM_PATH_MAX];
                snprintf(path, sizeof path, "phases.%s.groups[%d].sweep_scale", wm_phase_name[p], i);
                return wm_fail(c, path, NULL, "the model has no gemm_sweep for this term");
            }
    if (!m->phase[WM_VERIFY].present)
        return wm_missing(c, "phases.verify", "required phase (the target forward)");
    if (!m->phase[WM_ACCEPT].present)
        return wm_missing(c, "phases.accept", "required phase (sampling/verification)");
    return 0;
}

/* Byte offset -> line and column (1-based) for a parse-error message. */
static void wm_line_col(const char *json, size_t off, int *line, int *col)
{
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < off && json[i]; i++) {
        if (json[i] == '\n') {
            (*line)++;
            *col = 1;
        } else {
            (*col)++;
        }
    }
}

int wm_parse(wm_model *m, const char *json, const char *name, char *err, size_t errlen)
{
    wm_ctx c = {name ? name : "(model)", err, errlen};
    wm_init(m);
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(json, &end, 1);
    if (root == NULL) {
        size_t len = strlen(json);
        size_t off = end ? (size_t)(end - json) : 0;
        int line, col;
        wm_line_col(json, off, &line, &col);
        /* cJSON points at the end of the text when the document stops early. */
        int truncated = off >= len;
        if (len == 0 || strspn(json, " \t\r\n") == len)
            snprintf(err, errlen, "%s: invalid JSON: the file is empty", c.file);
        else
            snprintf(err, errlen, "%s: invalid JSON at byte %zu (line %d, column %d): %s",
                     c.file, off, line, col,
                     truncated ? "the text ends early (truncated file?)"
                               : "syntax error (or text after the closing brace)");
        wm_init(m);
        return -1;
    }
    int rc = wm_from_json(&c, root, m);
    cJSON_Delete(root);
    if (rc != 0)
        wm_init(m);
    return rc;
}

int wm_load(wm_model *m, const char *path, char *err, size_t errlen)
{
    char *buf = NULL;
    size_t n = 0;
    wm_init(m);
    if (bnd_read_file(path, BND_MODEL_FILE_BYTES, "a model file", &buf, &n, err, errlen) != 0)
        return -1;
    int rc = -1;
    if (memchr(buf, '\0', n) != NULL)
        snprintf(err, errlen, "%s: invalid JSON at byte %zu: NUL byte (binary file?)",
                 path, (size_t)((char *)memchr(buf, '\0', n) - buf));
    else
        rc = wm_parse(m, buf, path, err, errlen);
    free(buf);
    return rc;
}

/* --- writing --- */

static cJSON *wm_group_json(const wm_group *g)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", g->name);
    cJSON_AddNumberToObject(o, "count", g->count);
    cJSON_AddNumberToObject(o, "base_us", g->base_us);
    cJSON_AddNumberToObject(o, "per_token_us", g->per_token_us);
    cJSON_AddNumberToObject(o, "knee_tokens", g->knee_tokens);
    cJSON_AddNumberToObject(o, "per_expert_us", g->per_expert_us);
    cJSON_AddNumberToObject(o, "per_kv_ktoken_us", g->per_kv_ktoken_us);
    if (g->per_kvq_ktoken_us != 0)   /* older readers do not know the keys */
        cJSON_AddNumberToObject(o, "per_kvq_ktoken_us", g->per_kvq_ktoken_us);
    if (g->q_tile != 0)
        cJSON_AddNumberToObject(o, "q_tile", g->q_tile);
    if (g->per_kvq2_ktoken_us != 0) {
        cJSON_AddNumberToObject(o, "per_kvq2_ktoken_us", g->per_kvq2_ktoken_us);
        cJSON_AddNumberToObject(o, "q_tile_knee", g->q_tile_knee);
    }
    if (g->per_token_all_us != 0)
        cJSON_AddNumberToObject(o, "per_token_all_us", g->per_token_all_us);
    if (g->q_min > 0)
        cJSON_AddNumberToObject(o, "q_min", g->q_min);
    if (g->per_wave_us != 0 || g->wave_capacity != 0) {   /* the wave term, when fitted */
        cJSON_AddNumberToObject(o, "wave_blocks0", g->wave_blocks0);
        cJSON_AddNumberToObject(o, "wave_blocks_per_token", g->wave_blocks_per_token);
        if (g->wave_blocks_per_expert != 0)
            cJSON_AddNumberToObject(o, "wave_blocks_per_expert", g->wave_blocks_per_expert);
        if (g->wave_blocks_max != 0)
            cJSON_AddNumberToObject(o, "wave_blocks_max", g->wave_blocks_max);
        cJSON_AddNumberToObject(o, "wave_capacity", g->wave_capacity);
        cJSON_AddNumberToObject(o, "per_wave_us", g->per_wave_us);
    }
    if (g->sweep_scale != 0) {
        cJSON_AddNumberToObject(o, "sweep_scale", g->sweep_scale);
        cJSON_AddStringToObject(o, "sweep_phase", wm_phase_name[g->sweep_phase]);
    }
    cJSON_AddNumberToObject(o, "sd_frac", g->sd_frac);
    if (g->resid_frac != 0)          /* older readers do not know the keys */
        cJSON_AddNumberToObject(o, "resid_frac", g->resid_frac);
    if (g->resid_abs_us != 0)
        cJSON_AddNumberToObject(o, "resid_abs_us", g->resid_abs_us);
    if (g->latency_bound)
        cJSON_AddBoolToObject(o, "latency_bound", 1);
    if (g->source[0])   /* derived groups only: fitted files stay as they were */
        cJSON_AddStringToObject(o, "source", g->source);
    if (g->has_pos) {   /* 4 decimals: the reader normalizes */
        double r[WM_POS_BINS];
        for (int b = 0; b < WM_POS_BINS; b++)
            r[b] = round(g->pos[b] * 1e4) / 1e4;
        cJSON_AddItemToObject(o, "launch_pos", cJSON_CreateDoubleArray(r, WM_POS_BINS));
    }
    return o;
}

static cJSON *wm_sweep_json(const wm_sweep *sw)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "source", sw->source);
    cJSON_AddItemToObject(o, "tokens", cJSON_CreateDoubleArray(sw->tok, sw->ntok));
    cJSON *sa = cJSON_AddArrayToObject(o, "sites");
    for (int i = 0; i < sw->nsite; i++) {
        const wm_sweep_site *st = &sw->site[i];
        cJSON *so = cJSON_CreateObject();
        cJSON_AddStringToObject(so, "name", st->name);
        cJSON *pa = cJSON_AddArrayToObject(so, "phases");
        for (int p = 0; p < WM_NPHASE; p++)
            if (st->phases & (1u << p))
                cJSON_AddItemToArray(pa, cJSON_CreateString(wm_phase_name[p]));
        cJSON_AddNumberToObject(so, "per_forward", st->per_forward);
        cJSON_AddStringToObject(so, "m", st->by_rows ? "rows" : "tokens");
        cJSON_AddItemToObject(so, "us", cJSON_CreateDoubleArray(st->us, sw->ntok));
        cJSON_AddItemToArray(sa, so);
    }
    return o;
}

static cJSON *wm_to_json(const wm_model *m)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddNumberToObject(root, "specsim_model", 1);
    cJSON_AddStringToObject(root, "name", m->name);
    cJSON_AddStringToObject(root, "source", m->source);
    cJSON_AddStringToObject(root, "device", m->device);
    cJSON_AddNumberToObject(root, "ranks", m->ranks);
    if (m->loop != WM_LOOP_EAGLE)
        cJSON_AddStringToObject(root, "loop", wm_loop_name[m->loop]);
    cJSON *moe = cJSON_AddObjectToObject(root, "moe");
    cJSON_AddNumberToObject(moe, "experts", m->moe_experts);
    cJSON_AddNumberToObject(moe, "topk", m->moe_topk);
    cJSON *launch = cJSON_AddObjectToObject(root, "launch");
    cJSON_AddNumberToObject(launch, "graph_launch_us", m->graph_launch_us);
    cJSON_AddNumberToObject(launch, "eager_launch_us", m->eager_launch_us);
    if (m->host_speed_sd_frac > 0) {
        cJSON_AddNumberToObject(launch, "host_speed_sd_frac", m->host_speed_sd_frac);
        cJSON_AddNumberToObject(launch, "host_speed_rho", m->host_speed_rho);
    }
    if (m->host_speed_level_sd > 0)
        cJSON_AddNumberToObject(launch, "host_speed_level_sd", m->host_speed_level_sd);
    if (m->unc.memory_frac != 0 || m->unc.compute_frac != 0 || m->unc.latency_frac != 0) {
        cJSON *u = cJSON_AddObjectToObject(root, "uncertainty");
        cJSON_AddNumberToObject(u, "memory_frac", m->unc.memory_frac);
        cJSON_AddNumberToObject(u, "compute_frac", m->unc.compute_frac);
        cJSON_AddNumberToObject(u, "latency_frac", m->unc.latency_frac);
        cJSON_AddStringToObject(u, "source", m->unc.source);
    }
    cJSON *phases = cJSON_AddObjectToObject(root, "phases");
    for (int p = 0; p < WM_NPHASE; p++) {
        const wm_phase_model *ph = &m->phase[p];
        if (!ph->present)
            continue;
        cJSON *po = cJSON_AddObjectToObject(phases, wm_phase_name[p]);
        cJSON_AddNumberToObject(po, "host_gap_us", ph->host_gap_us);
        cJSON_AddNumberToObject(po, "host_gap_sd_us", ph->host_gap_sd_us);
        if (ph->host_gap_per_row_us > 0)
            cJSON_AddNumberToObject(po, "host_gap_per_row_us", ph->host_gap_per_row_us);
        if (ph->eager_launch_us > 0)
            cJSON_AddNumberToObject(po, "eager_launch_us", ph->eager_launch_us);
        if (ph->host_gap_reject_us > 0)
            cJSON_AddNumberToObject(po, "host_gap_reject_us", ph->host_gap_reject_us);
        if (ph->eager_stall_per_launch > 0 && ph->eager_stall_us > 0) {
            cJSON_AddNumberToObject(po, "eager_stall_per_launch", ph->eager_stall_per_launch);
            cJSON_AddNumberToObject(po, "eager_stall_us", ph->eager_stall_us);
        }
        if (ph->eager_gap_us > 0)
            cJSON_AddNumberToObject(po, "eager_gap_us", ph->eager_gap_us);
        if (ph->always_eager)
            cJSON_AddBoolToObject(po, "always_eager", 1);
        if (ph->kv_rows == WM_KV_PADDED)
            cJSON_AddStringToObject(po, "kv_rows", "padded");
        if (ph->fitted_tokens_max > 0)
            cJSON_AddNumberToObject(po, "fitted_tokens_max", ph->fitted_tokens_max);
        if (ph->fitted_q_max > 0)
            cJSON_AddNumberToObject(po, "fitted_q_max", ph->fitted_q_max);
        if (ph->fitted_kv_row_max > 0)
            cJSON_AddNumberToObject(po, "fitted_kv_row_max", ph->fitted_kv_row_max);
        if (ph->expert_row_exp > 0 && ph->expert_row_exp < 1)
            cJSON_AddNumberToObject(po, "expert_row_exponent", ph->expert_row_exp);
        if (ph->graph_size_sd > 0)
            cJSON_AddNumberToObject(po, "graph_size_sd", ph->graph_size_sd);
        if (ph->n_graph_sizes >= 2) {
            cJSON *gs = cJSON_AddObjectToObject(po, "graph_size_factors");
            cJSON_AddItemToObject(gs, "rows", cJSON_CreateDoubleArray(ph->graph_size_rows, ph->n_graph_sizes));
            cJSON_AddItemToObject(gs, "factor", cJSON_CreateDoubleArray(ph->graph_size_factor, ph->n_graph_sizes));
        }
        cJSON *ga = cJSON_AddArrayToObject(po, "groups");
        for (int i = 0; i < ph->ngroups; i++)
            cJSON_AddItemToArray(ga, wm_group_json(&ph->groups[i]));
        cJSON *ca = cJSON_AddArrayToObject(po, "collectives");
        for (int i = 0; i < ph->ncolls; i++) {
            cJSON *co = cJSON_CreateObject();
            cJSON_AddStringToObject(co, "op", ph->colls[i].op);
            cJSON_AddNumberToObject(co, "count", ph->colls[i].count);
            cJSON_AddNumberToObject(co, "bytes_per_token", ph->colls[i].bytes_per_token);
            cJSON_AddItemToArray(ca, co);
        }
    }
    if (m->sweep.ntok > 0)
        cJSON_AddItemToObject(root, "gemm_sweep", wm_sweep_json(&m->sweep));
    return root;
}

int wm_save(const wm_model *m, const char *path, char *err, size_t errlen)
{
    int rc = -1;
    cJSON *root = wm_to_json(m);
    char *text = root ? cJSON_Print(root) : NULL;
    char *check = NULL;
    if (text == NULL) {
        snprintf(err, errlen, "%s: cannot write: out of memory building JSON", path);
        goto out;
    }
    /* Only a model the reader takes is written: a value out of range (a fit gone wrong,
     * -nan) is refused here and the file at path is left as it was. */
    static _Thread_local wm_model back;
    char why[768];
    if (wm_parse(&back, text, path, why, sizeof why) != 0) {
        snprintf(err, errlen, "%s: not written: the model would not load back: %s", path, why);
        rc = -2;
        goto out;
    }
    size_t len = strlen(text);
    check = malloc(len + 2);
    if (check == NULL) {
        snprintf(err, errlen, "%s: cannot write: out of memory", path);
        goto out;
    }
    memcpy(check, text, len);
    check[len] = '\n';
    check[len + 1] = '\0';
    /* NAME.tmp renamed into place (a reader never sees half a model); a device or FIFO
     * given as path is written in place (ofile.h) */
    rc = ofile_write(path, check, len + 1, err, errlen);
out:
    free(check);
    cJSON_free(text);
    cJSON_Delete(root);
    return rc;
}

/* --- costs --- */

double wm_experts_touched(const wm_model *m, double tokens)
{
    if (m->moe_experts <= 0 || m->moe_topk <= 0 || tokens <= 0)
        return 0;
    double e = m->moe_experts, k = m->moe_topk;
    if (k >= e)
        return e;
    /* each token picks k of E experts; P(an expert is missed by one token) = 1 - k/E */
    return e * (1.0 - pow(1.0 - k / e, tokens));
}

double wm_routed_tokens(double tokens, double q_per_row, double row_exp)
{
    if (!(row_exp > 0) || row_exp >= 1 || !(q_per_row > 1))
        return tokens;
    return tokens * pow(q_per_row, row_exp - 1);
}

void wm_phase_set_expert_row_exp(wm_phase_model *ph, double row_exp)
{
    ph->expert_row_exp = row_exp;
    for (int i = 0; i < ph->ngroups; i++)
        ph->groups[i].expert_row_exp = row_exp;
}

double wm_q_tiles(const wm_group *g, double q_per_row)
{
    if (g->q_tile <= 1)
        return q_per_row;
    return ceil(q_per_row / g->q_tile - 1e-9);
}

int wm_beyond_fit(const wm_model *m, int p, double tokens, double q, char *buf, size_t n)
{
    const wm_phase_model *pm = wm_phase_get(m, p);
    if (!pm)
        return 0;
    int beyond_q = pm->fitted_q_max > 0 && q > pm->fitted_q_max + 1e-9;
    int beyond_t = pm->fitted_tokens_max > 0 && tokens > pm->fitted_tokens_max + 1e-9;
    if (!beyond_q && !beyond_t)
        return 0;
    if (beyond_q && beyond_t)
        snprintf(buf, n, "%g query tokens per row and %g tokens a forward, fitted up to %g and "
                 "%g", q, tokens, pm->fitted_q_max, pm->fitted_tokens_max);
    else if (beyond_q)
        snprintf(buf, n, "%g query tokens per row, fitted up to %g", q, pm->fitted_q_max);
    else
        snprintf(buf, n, "%g tokens a forward, fitted up to %g", tokens, pm->fitted_tokens_max);
    return 1;
}

int wm_beyond_kv(const wm_model *m, int p, double kv_row)
{
    const wm_phase_model *pm = wm_phase_get(m, p);
    if (!pm || !(pm->fitted_kv_row_max > 0) || !(kv_row > WM_KV_BEYOND_FACTOR * pm->fitted_kv_row_max))
        return 0;
    for (int i = 0; i < pm->ngroups; i++) {
        const wm_group *g = &pm->groups[i];
        if (g->per_kv_ktoken_us != 0 || g->per_kvq_ktoken_us != 0 || g->per_kvq2_ktoken_us != 0)
            return 1;
    }
    return 0;
}

double wm_kv_per_ktoken(const wm_group *g, double q_per_row)
{
    if (q_per_row < g->q_min)
        q_per_row = g->q_min;
    double t = wm_q_tiles(g, q_per_row), over = t - g->q_tile_knee;
    return g->per_kv_ktoken_us + g->per_kvq_ktoken_us * t +
           g->per_kvq2_ktoken_us * (over > 0 ? over : 0);
}

double wm_group_experts(const wm_model *m, const wm_group *g, double tokens, double q_per_row)
{
    return wm_experts_touched(m, wm_routed_tokens(tokens, q_per_row, g->expert_row_exp));
}

double wm_waves(const wm_model *m, const wm_group *g, double tokens, double q_per_row)
{
    return wm_waves_e(g, tokens, g->wave_blocks_per_expert != 0 ? wm_group_experts(m, g, tokens, q_per_row) : 0);
}

double wm_waves_e(const wm_group *g, double tokens, double experts_touched)
{
    if (g->wave_capacity <= 0)
        return 0;
    double blocks = g->wave_blocks0 + g->wave_blocks_per_token * tokens +
                    g->wave_blocks_per_expert * experts_touched;
    if (g->wave_blocks_max > 0 && blocks > g->wave_blocks_max)
        blocks = g->wave_blocks_max;
    blocks = round(blocks);
    return blocks > 0 ? ceil(blocks / g->wave_capacity - 1e-9) : 0;
}

/* us of one site at M, linear between the sweep's token counts, along the last (first)
 * two beyond them, never below 0 */
static double wm_sweep_at(const wm_sweep *sw, const double *us, double M)
{
    int n = sw->ntok, lo = 0, hi = n - 1;
    if (M <= sw->tok[0])   /* below the first count: its cost (fewer tokens are no cheaper) */
        return us[0];
    if (M >= sw->tok[n - 1])
        lo = n - 2;
    else
        while (hi - lo > 1) {
            int mid = (lo + hi) / 2;
            if (sw->tok[mid] <= M)
                lo = mid;
            else
                hi = mid;
        }
    hi = lo + 1;
    double v = us[lo] + (M - sw->tok[lo]) / (sw->tok[hi] - sw->tok[lo]) * (us[hi] - us[lo]);
    return v > 0 ? v : 0;
}

int wm_sweep_covers(const wm_model *m, int p)
{
    if (m->sweep.ntok < 2 || p < 0 || p >= WM_NPHASE)
        return 0;
    for (int i = 0; i < m->sweep.nsite; i++)
        if (m->sweep.site[i].phases & (1u << p))
            return 1;
    return 0;
}

double wm_sweep_us(const wm_model *m, int p, double tokens, double q_per_row)
{
    const wm_sweep *sw = &m->sweep;
    if (!wm_sweep_covers(m, p) || tokens <= 0)
        return 0;
    double us = 0;
    for (int i = 0; i < sw->nsite; i++) {
        const wm_sweep_site *st = &sw->site[i];
        if (!(st->phases & (1u << p)))
            continue;
        double M = st->by_rows && q_per_row > 0 ? tokens / q_per_row : tokens;
        us += st->per_forward * wm_sweep_at(sw, st->us, M);
    }
    return us;
}

double wm_group_us_q(const wm_model *m, const wm_group *g, double tokens, double kv_tokens,
                     double q_per_row)
{
    double over = tokens - g->knee_tokens;
    return (g->sweep_scale > 0 ? g->sweep_scale * wm_sweep_us(m, g->sweep_phase, tokens, q_per_row) : 0) +
           g->per_wave_us * wm_waves(m, g, tokens, q_per_row) + g->base_us + g->per_token_us * (over > 0 ? over : 0) +
           g->per_token_all_us * tokens + g->per_expert_us * wm_group_experts(m, g, tokens, q_per_row) +
           wm_kv_per_ktoken(g, q_per_row) * kv_tokens / 1000.0;
}

double wm_group_us(const wm_model *m, const wm_group *g, double tokens, double kv_tokens)
{
    return wm_group_us_q(m, g, tokens, kv_tokens, 1.0);
}

double wm_phase_kv_tokens(const wm_phase_model *ph, double ctx_tokens, int bs, int padded)
{
    if (ph && ph->kv_rows == WM_KV_PADDED && bs > 0 && padded > bs)
        return ctx_tokens * (double)padded / (double)bs;
    return ctx_tokens;
}

const wm_phase_model *wm_phase_get(const wm_model *m, int p)
{
    if (p < 0 || p >= WM_NPHASE)
        return NULL;
    if (m->phase[p].present)
        return &m->phase[p];
    if (p == WM_DECODE && m->phase[WM_VERIFY].present)
        return &m->phase[WM_VERIFY];
    if (p == WM_SAMPLE && m->phase[WM_ACCEPT].present)
        return &m->phase[WM_ACCEPT];
    return NULL;
}

double wm_phase_gpu_us(const wm_model *m, int p, double tokens, double kv_tokens)
{
    const wm_phase_model *ph = wm_phase_get(m, p);
    double us = 0;
    if (ph == NULL)
        return 0;
    for (int i = 0; i < ph->ngroups; i++)
        us += wm_group_us(m, &ph->groups[i], tokens, kv_tokens);
    return us;
}

int wm_phase_kernels(const wm_model *m, int p)
{
    const wm_phase_model *ph = wm_phase_get(m, p);
    int n = 0;
    if (ph == NULL)
        return 0;
    for (int i = 0; i < ph->ngroups; i++)
        n += ph->groups[i].count;
    return n;
}

int wm_require(const wm_model *m, int p, const char *file, const char *why,
               char *err, size_t errlen)
{
    if (wm_phase_get(m, p) != NULL)
        return 0;
    snprintf(err, errlen, "%s: field phases.%s: missing: %s", file ? file : m->name,
             (p >= 0 && p < WM_NPHASE) ? wm_phase_name[p] : "?",
             why ? why : "required phase");
    return -1;
}
