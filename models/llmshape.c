/* llmshape: LLM presets and one tensor-parallel rank's share of them (llmshape.h). The split
 * is SGLang's (and Megatron's) for these models: q/k/v and gate|up column-parallel, o and
 * down row-parallel, the LM head vocab-parallel, routed and shared experts TP-sharded along
 * their intermediate (no expert parallelism), the router, norms and embedding replicated;
 * GQA KV heads replicated when there are fewer than ranks; MLA's q_a/kv_a projections and
 * its latent KV cache replicated on every rank. Workload: a handful of presets. */
#include "llmshape.h"
#include "bounds.h"

#include <cjson/cJSON.h>
#include <unistd.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LLM_FILE_MAX (1 << 20)

static const char *llm_dir(void)
{
    const char *d = getenv("SPECSIM_PRESETS");
    return d && *d ? d : "models/presets";
}

/* An integer field at obj.key (a dotted name for the message); absent: def when
 * required is 0. Must be an integer in [lo, hi]. 0 or -1 with err. */
static int llm_int(const cJSON *obj, const char *key, const char *field, int required, int def,
                   int lo, int hi, int *out, const char *path, char *err, size_t errlen)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) {
        if (required) {
            snprintf(err, errlen, "%s: field %s: missing (required integer)", path, field);
            return -1;
        }
        *out = def;
        return 0;
    }
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < lo ||
        v->valuedouble > hi) {
        char *s = cJSON_PrintUnformatted(v);
        snprintf(err, errlen, "%s: field %s: value %s: must be an integer in [%d, %d]", path, field,
                 s ? s : "?", lo, hi);
        free(s);
        return -1;
    }
    *out = (int)v->valuedouble;
    return 0;
}

static int llm_num(const cJSON *obj, const char *key, const char *field, double def, double lo,
                   double hi, double *out, const char *path, char *err, size_t errlen)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) {
        *out = def;
        return 0;
    }
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= lo && v->valuedouble <= hi)) {
        char *s = cJSON_PrintUnformatted(v);
        snprintf(err, errlen, "%s: field %s: value %s: must be a number in [%g, %g]", path, field,
                 s ? s : "?", lo, hi);
        free(s);
        return -1;
    }
    *out = v->valuedouble;
    return 0;
}

#define LLM_BIG 10000000   /* no real dimension is larger */

static int llm_parse(llm_shape *s, const cJSON *j, const char *path, char *err, size_t errlen)
{
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(j, "specsim_preset");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(j, "name");
    if (!cJSON_IsString(kind) || strcmp(kind->valuestring, "llm") != 0) {
        snprintf(err, errlen, "%s: field specsim_preset: not \"llm\": not an LLM preset", path);
        return -1;
    }
    snprintf(s->name, sizeof s->name, "%.63s", cJSON_IsString(name) ? name->valuestring : path);
    snprintf(s->path, sizeof s->path, "%.255s", path);
    if (llm_int(j, "layers", "layers", 1, 0, 1, 100000, &s->layers, path, err, errlen) ||
        llm_int(j, "hidden", "hidden", 1, 0, 1, LLM_BIG, &s->hidden, path, err, errlen) ||
        llm_int(j, "heads", "heads", 1, 0, 1, LLM_BIG, &s->heads, path, err, errlen) ||
        llm_int(j, "vocab", "vocab", 1, 0, 1, LLM_BIG, &s->vocab, path, err, errlen) ||
        llm_int(j, "tp", "tp", 0, 0, 1, 4096, &s->tp, path, err, errlen) ||
        llm_int(j, "allreduces_per_forward", "allreduces_per_forward", 0, 0, 0, LLM_BIG,
                &s->allreduces_per_forward, path, err, errlen) ||
        llm_num(j, "allreduce_bytes_per_token", "allreduce_bytes_per_token", 0, 0, 1e12,
                &s->allreduce_bytes_per_token, path, err, errlen) ||
        llm_num(j, "weight_bits", "weight_bits", 16, 1, 64, &s->weight_bits, path, err, errlen) ||
        llm_num(j, "expert_weight_bits", "expert_weight_bits", s->weight_bits, 1, 64,
                &s->expert_bits, path, err, errlen) ||
        llm_int(j, "expert_quant_group", "expert_quant_group", 0, 0, 0, LLM_BIG, &s->expert_group,
                path, err, errlen))
        return -1;
    const cJSON *moe = cJSON_GetObjectItemCaseSensitive(j, "moe");
    if (moe && !cJSON_IsObject(moe)) {
        snprintf(err, errlen, "%s: field moe: must be an object", path);
        return -1;
    }
    if (llm_int(moe, "experts", "moe.experts", 0, 0, 0, LLM_BIG, &s->experts, path, err, errlen) ||
        llm_int(moe, "topk", "moe.topk", 0, 0, 0, LLM_BIG, &s->topk, path, err, errlen))
        return -1;
    if (s->experts > 0) {
        if (s->topk < 1 || s->topk > s->experts) {
            snprintf(err, errlen, "%s: field moe.topk: value %d: must be in 1..%d (moe.experts)",
                     path, s->topk, s->experts);
            return -1;
        }
        if (llm_int(moe, "intermediate", "moe.intermediate", 1, 0, 1, LLM_BIG, &s->moe_inter, path,
                    err, errlen) ||
            llm_int(moe, "shared_experts", "moe.shared_experts", 0, 0, 0, 64, &s->shared_experts,
                    path, err, errlen) ||
            llm_int(moe, "shared_intermediate", "moe.shared_intermediate", 0, s->moe_inter, 1,
                    LLM_BIG, &s->shared_inter, path, err, errlen) ||
            llm_int(j, "dense_layers", "dense_layers", 0, 0, 0, s->layers, &s->dense_layers, path,
                    err, errlen))
            return -1;
    } else {
        s->topk = 0;
        s->dense_layers = s->layers;
    }
    if (llm_int(j, "dense_intermediate", "dense_intermediate", s->dense_layers > 0, 0, 1, LLM_BIG,
                &s->dense_inter, path, err, errlen))
        return -1;
    const cJSON *att = cJSON_GetObjectItemCaseSensitive(j, "attention");
    const cJSON *ak = cJSON_GetObjectItemCaseSensitive(att, "kind");
    s->mla = cJSON_IsString(ak) && strcmp(ak->valuestring, "mla") == 0;
    if (cJSON_IsString(ak) && !s->mla && strcmp(ak->valuestring, "gqa") != 0) {
        snprintf(err, errlen, "%s: field attention.kind: value \"%s\": expected \"gqa\" or \"mla\"",
                 path, ak->valuestring);
        return -1;
    }
    if (s->mla) {
        s->mla_dims_assumed = !cJSON_GetObjectItemCaseSensitive(att, "qk_nope_head_dim") ||
                              !cJSON_GetObjectItemCaseSensitive(att, "qk_rope_head_dim") ||
                              !cJSON_GetObjectItemCaseSensitive(att, "v_head_dim");
        if (llm_int(att, "q_lora_rank", "attention.q_lora_rank", 1, 0, 1, LLM_BIG, &s->q_lora,
                    path, err, errlen) ||
            llm_int(att, "kv_lora_rank", "attention.kv_lora_rank", 1, 0, 1, LLM_BIG, &s->kv_lora,
                    path, err, errlen) ||
            llm_int(att, "qk_nope_head_dim", "attention.qk_nope_head_dim", 0, LLM_MLA_NOPE, 1,
                    LLM_BIG, &s->qk_nope, path, err, errlen) ||
            llm_int(att, "qk_rope_head_dim", "attention.qk_rope_head_dim", 0, LLM_MLA_ROPE, 1,
                    LLM_BIG, &s->qk_rope, path, err, errlen) ||
            llm_int(att, "v_head_dim", "attention.v_head_dim", 0, LLM_MLA_V, 1, LLM_BIG, &s->v_head,
                    path, err, errlen))
            return -1;
    } else if (llm_int(j, "kv_heads", "kv_heads", 1, 0, 1, s->heads, &s->kv_heads, path, err, errlen) ||
               llm_int(j, "head_dim", "head_dim", 0, s->hidden / s->heads, 1, LLM_BIG, &s->head_dim,
                       path, err, errlen)) {
        return -1;
    }
    /* the EAGLE-3 head: GQA; by default the target's GQA shape (or specbench's stand-in for
     * an MLA target: 16 KV heads of 128), its dense intermediate and full vocab */
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(j, "draft");
    if (d && !cJSON_IsObject(d)) {
        snprintf(err, errlen, "%s: field draft: must be an object", path);
        return -1;
    }
    int dkv = s->mla ? 16 : s->kv_heads, dhd = s->mla ? 128 : s->head_dim;
    int dint = s->dense_inter > 0 ? s->dense_inter : s->moe_inter;
    if (llm_int(d, "heads", "draft.heads", 0, s->heads, 1, LLM_BIG, &s->draft_heads, path, err, errlen) ||
        llm_int(d, "kv_heads", "draft.kv_heads", 0, dkv, 1, LLM_BIG, &s->draft_kv_heads, path, err,
                errlen) ||
        llm_int(d, "head_dim", "draft.head_dim", 0, dhd, 1, LLM_BIG, &s->draft_head_dim, path, err,
                errlen) ||
        llm_int(d, "intermediate", "draft.intermediate", 0, dint, 1, LLM_BIG, &s->draft_inter, path,
                err, errlen) ||
        llm_int(d, "vocab", "draft.vocab", 0, s->vocab, 1, LLM_BIG, &s->draft_vocab, path, err, errlen))
        return -1;
    return 0;
}

int llm_load(llm_shape *s, const char *name, char *err, size_t errlen)
{
    char path[512];
    size_t n = strlen(name);
    memset(s, 0, sizeof *s);
    if (strchr(name, '/') || (n > 5 && strcmp(name + n - 5, ".json") == 0))
        snprintf(path, sizeof path, "%s", name);
    else
        snprintf(path, sizeof path, "%s/%s.json", llm_dir(), name);
    if (access(path, R_OK)) {   /* named with where presets live; bnd_read_file reads it */
        snprintf(err, errlen, "LLM preset %s: %s: cannot open (presets live in %s: run from the "
                 "repository root, set SPECSIM_PRESETS, or give a path)", name, path, llm_dir());
        return -1;
    }
    /* read whole, to a cap (bounds.h): a directory or /dev/zero once said "invalid JSON" */
    char *buf;
    size_t got;
    if (bnd_read_file(path, LLM_FILE_MAX, "an LLM preset", &buf, &got, err, errlen))
        return -1;
    cJSON *j = cJSON_Parse(buf);
    free(buf);
    if (!j) {
        snprintf(err, errlen, "%s: invalid JSON", path);
        return -1;
    }
    int rc = llm_parse(s, j, path, err, errlen);
    cJSON_Delete(j);
    return rc;
}

int llm_check_tp(const llm_shape *s, int tp, char *err, size_t errlen)
{
    const char *f = NULL;
    int v = 0;
    if (tp < 1)
        f = "tp", v = tp;
    else if (s->heads % tp)
        f = "heads", v = s->heads;
    else if (!s->mla && s->kv_heads >= tp && s->kv_heads % tp)
        f = "kv_heads", v = s->kv_heads;
    else if (!s->mla && s->kv_heads < tp && tp % s->kv_heads)
        f = "kv_heads", v = s->kv_heads;
    else if (s->dense_layers > 0 && s->dense_inter % tp)
        f = "dense_intermediate", v = s->dense_inter;
    else if (s->experts > 0 && s->moe_inter % tp)
        f = "moe.intermediate", v = s->moe_inter;
    else if (s->shared_experts > 0 && s->shared_inter % tp)
        f = "moe.shared_intermediate", v = s->shared_inter;
    else if (s->draft_heads % tp)
        f = "draft.heads", v = s->draft_heads;
    else if (s->draft_inter % tp)
        f = "draft.intermediate", v = s->draft_inter;
    if (f) {
        snprintf(err, errlen, "%s: field %s: value %d: cannot be cut into %d tensor-parallel ranks "
                 "(must be divisible by %d; KV heads may also divide it)", s->path, f, v, tp, tp);
        return -1;
    }
    return 0;
}

double llm_expert_bits_eff(const llm_shape *s)
{
    return s->expert_bits + (s->expert_group > 0 ? LLM_SCALE_BITS / s->expert_group : 0);
}

int llm_moe_layers(const llm_shape *s)
{
    return s->experts > 0 ? s->layers - s->dense_layers : 0;
}

void llm_rank_of(const llm_shape *s, int tp, llm_rank *r)
{
    double t = tp > 0 ? tp : 1, H = s->hidden;
    memset(r, 0, sizeof *r);
    r->heads = s->heads / t;
    if (s->mla) {
        double q_head = s->qk_nope + s->qk_rope;
        r->qkv = H * s->q_lora                       /* q_a (replicated) */
               + s->q_lora * r->heads * q_head       /* q_b (column-parallel) */
               + H * (s->kv_lora + s->qk_rope)       /* kv_a with the rope key (replicated) */
               + r->heads * s->qk_nope * s->kv_lora; /* absorbed k up-projection */
        r->o = r->heads * s->kv_lora * s->v_head     /* absorbed v up-projection */
             + r->heads * s->v_head * H;             /* o_proj (row-parallel) */
        r->kv_heads = 1;
        r->kv_bytes_per_token = (s->kv_lora + s->qk_rope) * LLM_ACT_BYTES;  /* the latent */
        r->q_per_kv = r->heads;
        r->rope_width = r->heads * s->qk_rope + s->qk_rope;
    } else {
        r->kv_heads = s->kv_heads >= tp ? s->kv_heads / t : 1;
        r->qkv = H * (r->heads + 2 * r->kv_heads) * s->head_dim;
        r->o = r->heads * s->head_dim * H;
        r->kv_bytes_per_token = 2 * r->kv_heads * s->head_dim * LLM_ACT_BYTES;
        r->q_per_kv = r->heads / r->kv_heads;
        r->rope_width = (r->heads + r->kv_heads) * s->head_dim;
    }
    if (s->dense_layers > 0) {
        r->gu = H * 2 * s->dense_inter / t;
        r->down = s->dense_inter / t * H;
        r->act_dense = s->dense_inter / t;
    }
    if (s->experts > 0) {
        double sh = (double)s->shared_experts * s->shared_inter / t;
        r->router = H * s->experts;
        r->shared_gu = H * 2 * sh;
        r->shared_down = sh * H;
        r->expert_gu = H * 2 * s->moe_inter / t;
        r->expert_down = s->moe_inter / t * H;
        r->act_moe = sh + (double)s->topk * s->moe_inter / t;
    }
    r->lm_head = H * ceil(s->vocab / t);
    double dh = s->draft_heads / t;
    double dkv = s->draft_kv_heads >= tp ? s->draft_kv_heads / t : 1;
    r->d_heads = dh;
    r->d_fc = 3 * H * H;                              /* replicated (a plain Linear) */
    r->d_qkv = 2 * H * (dh + 2 * dkv) * s->draft_head_dim;
    r->d_o = dh * s->draft_head_dim * H;
    r->d_gu = H * 2 * s->draft_inter / t;
    r->d_down = s->draft_inter / t * H;
    r->d_lm_head = H * ceil(s->draft_vocab / t);
    r->d_kv_bytes_per_token = 2 * dkv * s->draft_head_dim * LLM_ACT_BYTES;
    r->d_q_per_kv = dh / dkv;
    r->d_rope_width = (dh + dkv) * s->draft_head_dim;
    r->d_act = s->draft_inter / t;
}
