/* phasemap.c: the naming profiles of phasemap.h. Each profile reads the trace's host ranges
 * and writes back one range per phase instance, named in specprof's words; the fit then
 * parses those as it parses a specprof trace. SGLang's spans nest (a stage span `verify`
 * holds the step span `step[TARGET_VERIFY bs=8]` of its forward): a step span inside a stage
 * span gives the stage its batch and is folded into it, so each instance is counted once
 * and holds all the GPU work its stage launched. */
#include "phasemap.h"
#include "bounds.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "pgz.h"
#include "sglog.h"

/* server_args.json is the /get_server_info reply: kilobytes. */
#define PM_ARGS_MAX_BYTES ((size_t)16 << 20)
/* Stage spans looked at back from a step span's start (stages do not nest in SGLang). */
#define PM_BACK_SEARCH 8
/* Instances either side searched for a round's g_sk= (a round is 4 stage spans: draft,
 * verify, verify_sample, draft_extend). */
#define PM_ROUND_SPANS 3

void phasemap_init(phasemap *pm)
{
    memset(pm, 0, sizeof *pm);
    pm->profile = PM_AUTO;
    pm->shape.cuda_graph = 1;
    pm->ctx_per_row = -1;
    pm->map_rows = pm->map_ctx = pm->map_graph = -1;
    for (int p = 0; p < WM_NPHASE; p++)
        pm->map_forwards[p] = -1;
}

int phasemap_set_profile(phasemap *pm, const char *name, char *err, size_t errlen)
{
    if (!strcmp(name, "auto"))
        pm->profile = PM_AUTO;
    else if (!strcmp(name, "specprof"))
        pm->profile = PM_SPECPROF;
    else if (!strcmp(name, "sglang"))
        pm->profile = PM_SGLANG;
    else {
        snprintf(err, errlen, "field --profile: value %s: not a naming profile (auto, specprof, "
                 "sglang; or --phase-map)", name);
        return -1;
    }
    return 0;
}

/* ---- the speculative shape ------------------------------------------------------------------ */

int phasemap_sglang_graph_bs(pm_shape *s, int max_bs)
{
    static const int seg[][3] = {{1, 8, 1}, {10, 32, 2}, {40, 64, 4}, {72, 256, 8}, {272, 1 << 20, 16}};
    s->ngraph_bs = 0;
    int n = 0;
    for (int k = 0; k < 5; k++)
        for (int b = seg[k][0]; b <= seg[k][1] && b <= max_bs; b += seg[k][2], n++)
            if (n < PM_GRAPH_BS_MAX)
                s->graph_bs[s->ngraph_bs++] = b;
    return n;
}

int phasemap_pad(const pm_shape *s, int bs, int *graph)
{
    *graph = 0;
    if (!s->cuda_graph || s->ngraph_bs == 0)
        return bs;
    for (int i = 0; i < s->ngraph_bs; i++)   /* bisect_left over an increasing list */
        if (s->graph_bs[i] >= bs) {
            *graph = 1;
            return s->graph_bs[i];
        }
    return bs;
}

static int pm_cmp_int(const void *a, const void *b)
{
    return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

/* bs[0..n) sorted and each size once (SGLang captures sorted(set(cuda_graph_bs)),
 * cuda_graph_runner.py get_batch_sizes_to_capture); the new count. */
static int pm_sort_unique(int *bs, int n)
{
    qsort(bs, (size_t)n, sizeof bs[0], pm_cmp_int);
    int w = 0;
    for (int i = 0; i < n; i++)
        if (w == 0 || bs[i] != bs[w - 1])
            bs[w++] = bs[i];
    return w;
}

/* The reason a list of more than PM_GRAPH_BS_MAX captured sizes is refused, for messages. */
#define PM_GRAPH_BS_WHY "more than %d distinct captured batch sizes, the most the simulator holds " \
                        "(PM_GRAPH_BS_MAX, cgraph.h CG_MAX_SIZES)"

/* The speculative shape's ranges (the draft depth as the fit's steps= word, fit_instances.c;
 * topk as wide; draft tokens per row as the simulator's --draft-tokens, bounds.h): a
 * server_args.json value of 1e300 once became draft_tokens -2147483648, exit 0. */
static const bnd_kind pm_steps = {"a draft depth", "", 1, 1024, 1};
static const bnd_kind pm_topk = {"a draft branching (topk)", "", 1, 1024, 1};
static const bnd_kind pm_draft = {"draft tokens per row", "tokens", 1, BND_Q_TOKENS_MAX, 1};

/* steps, topk and draft tokens within their ranges, and no more draft tokens than the tree
 * has nodes (steps * topk + 1, as SGLang's server_args checks); 0 or -1 with the message
 * naming where (file, or "command line") and the field. */
static int pm_shape_check(double steps, double topk, double draft, const char *where,
                          const char *const fields[3], char *err, size_t errlen)
{
    const bnd_kind *k[3] = {&pm_steps, &pm_topk, &pm_draft};
    double v[3] = {steps, topk, draft};
    for (int i = 0; i < 3; i++)
        if (bnd_check(k[i], v[i], where, fields[i], err, errlen))
            return -1;
    if (draft > steps * topk + 1) {
        snprintf(err, errlen, "%s: field %s: value %.0f: more than steps * topk + 1 = %.0f "
                 "(the draft tree has no more nodes)", where, fields[2], draft, steps * topk + 1);
        return -1;
    }
    return 0;
}

/* A field that is absent, null or of the type is() accepts: 0; else -1 naming it ("true" as
 * a string, "1,2,4" for a list, were ignored). */
static int pm_type_check(const cJSON *v, cJSON_bool (*is)(const cJSON *const), const char *path,
                         const char *key, const char *want, char *err, size_t errlen)
{
    if (!v || cJSON_IsNull(v) || is(v))
        return 0;
    char *t = cJSON_PrintUnformatted(v);
    snprintf(err, errlen, "%s: field %s: value %.60s: not %s", path, key, t ? t : "?", want);
    free(t);
    return -1;
}

/* A field by its dotted path ("cuda_graph_config.decode.bs"); NULL where a part is missing. */
static const cJSON *pm_field(const cJSON *j, const char *dotted)
{
    char part[64];
    for (const char *p = dotted; j && *p;) {
        size_t n = strcspn(p, ".");
        snprintf(part, sizeof part, "%.*s", (int)n, p);
        j = cJSON_GetObjectItemCaseSensitive(j, part);
        p += n + (p[n] == '.');
    }
    return j;
}

/* Of the fields keys[0..n) (dotted paths), in that order, the first that holds a value of
 * type is; each must hold that type or null (pm_type_check). 0 with *out (NULL: none) and
 * *key, or -1 with err. */
static int pm_first_of(const cJSON *j, const char *const *keys, int n, cJSON_bool (*is)(const cJSON *const),
                       const char *want, const char *path, const cJSON **out, const char **key, char *err,
                       size_t errlen)
{
    *out = NULL;
    *key = "";
    for (int k = 0; k < n; k++) {
        const cJSON *x = pm_field(j, keys[k]);
        if (pm_type_check(x, is, path, keys[k], want, err, errlen))
            return -1;
        if (!*out && x && is(x))
            *out = x, *key = keys[k];
    }
    return 0;
}

/* The shape from server arguments as a JSON object (the file, or the log's dump turned into
 * one); path names where they came from in messages. 0 or -1. */
static int pm_shape_from_json(pm_shape *s, const cJSON *j, const char *path, char *err, size_t errlen)
{
    int rc = -1;
    int *all = NULL;              /* the cuda_graph_bs list as given */
    snprintf(s->source, sizeof s->source, "%s", path);
    const cJSON *tp = cJSON_GetObjectItemCaseSensitive(j, "tp_size");
    if (cJSON_IsNumber(tp)) {
        if (bnd_check(&bnd_ranks, tp->valuedouble, path, "tp_size", err, errlen))
            goto out;
        s->tp_size = (int)tp->valuedouble;
    }
    /* The decode graphs: 2026 releases keep them in cuda_graph_config.decode {backend, max_bs, bs}
     * (model_executor/cuda_graph_config.py; --cuda-graph-bs and --cuda-graph-max-bs became
     * aliases of --cuda-graph-bs-decode and --cuda-graph-max-bs-decode, --disable-cuda-graph of
     * --cuda-graph-backend-decode=disabled), older ones in cuda_graph_bs, cuda_graph_max_bs and
     * disable_cuda_graph. Of each, the first field given (not null) in this order counts. */
    static const char *const list_keys[] = {"cuda_graph_config.decode.bs", "cuda_graph_bs_decode", "cuda_graph_bs"};
    static const char *const max_keys[] = {"cuda_graph_config.decode.max_bs", "cuda_graph_max_bs_decode",
                                           "cuda_graph_max_bs"};
    static const char *const off_keys[] = {"disable_decode_cuda_graph", "disable_cuda_graph"};
    static const char *const backend_key[] = {"cuda_graph_config.decode.backend"};
    const cJSON *bsl, *mbs, *backend;
    const char *bsl_key, *mbs_key, *key;
    if (pm_first_of(j, list_keys, 3, cJSON_IsArray, "a list of batch sizes or null", path, &bsl, &bsl_key, err,
                    errlen) ||
        pm_first_of(j, max_keys, 3, cJSON_IsNumber, "a batch size or null", path, &mbs, &mbs_key, err, errlen) ||
        pm_first_of(j, backend_key, 1, cJSON_IsString, "a string or null", path, &backend, &key, err, errlen))
        goto out;
    for (int k = 0; k < 2; k++) {   /* either one true turns the graphs off */
        const cJSON *off = pm_field(j, off_keys[k]);
        if (pm_type_check(off, cJSON_IsBool, path, off_keys[k], "true, false or null", err, errlen))
            goto out;
        if (cJSON_IsTrue(off))
            s->cuda_graph = 0;
    }
    if (cJSON_IsString(backend) && !strcmp(backend->valuestring, "disabled"))
        s->cuda_graph = 0;
    if (bsl) {
        /* every entry read, each size once; more sizes than the list holds are refused (the
         * first 512 were kept in silence) */
        int n = cJSON_GetArraySize(bsl), k = 0;
        all = malloc((size_t)(n > 0 ? n : 1) * sizeof *all);
        if (!all) {
            snprintf(err, errlen, "%s: field %s: out of memory for %d entries", path, bsl_key, n);
            goto out;
        }
        const cJSON *e;
        cJSON_ArrayForEach(e, bsl) {
            if (!cJSON_IsNumber(e)) {
                snprintf(err, errlen, "%s: field %s: an entry is not a batch size >= 1", path, bsl_key);
                goto out;
            }
            if (bnd_check(&bnd_rows, e->valuedouble, path, bsl_key, err, errlen))
                goto out;
            all[k++] = (int)e->valuedouble;
        }
        k = pm_sort_unique(all, k);
        if (k > PM_GRAPH_BS_MAX) {
            snprintf(err, errlen, "%s: field %s: value a list of %d entries, %d distinct (%d..%d): "
                     PM_GRAPH_BS_WHY, path, bsl_key, n, k, all[0], all[k - 1], PM_GRAPH_BS_MAX);
            goto out;
        }
        memcpy(s->graph_bs, all, (size_t)k * sizeof *all);
        s->ngraph_bs = k;
    } else if (mbs && mbs->valuedouble > 0) {   /* 0 or less: SGLang picks it */
        if (bnd_check(&bnd_rows, mbs->valuedouble, path, mbs_key, err, errlen))
            goto out;
        int n = phasemap_sglang_graph_bs(s, (int)mbs->valuedouble);
        if (n > PM_GRAPH_BS_MAX) {
            snprintf(err, errlen, "%s: field %s: value %.0f: SGLang's list up to it holds %d batch sizes: "
                     PM_GRAPH_BS_WHY, path, mbs_key, mbs->valuedouble, n, PM_GRAPH_BS_MAX);
            goto out;
        }
    }
    const cJSON *alg = cJSON_GetObjectItemCaseSensitive(j, "speculative_algorithm");
    if (!alg || cJSON_IsNull(alg)) {   /* a baseline server */
        rc = 0;
        goto out;
    }
    static const char *const keys[] = {"speculative_num_steps", "speculative_eagle_topk",
                                 "speculative_num_draft_tokens"};
    int *dst[] = {&s->steps, &s->topk, &s->draft_tokens};
    double got[3];
    for (int k = 0; k < 3; k++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, keys[k]);
        if (!v || cJSON_IsNull(v)) {
            /* missing or null: NGRAM servers leave speculative_num_steps None (server_args.py
             * sets only _eagle_topk and _num_draft_tokens for NGRAM). The shape stays unknown,
             * refused where it is needed, and --spec-shape can give it. */
            snprintf(s->missing, sizeof s->missing, "field %s: %s (speculative_algorithm %.24s)",
                     keys[k], v ? "value null" : "missing",
                     cJSON_IsString(alg) ? alg->valuestring : "set");
            s->steps = s->topk = s->draft_tokens = 0;
            rc = 0;
            goto out;
        }
        if (!cJSON_IsNumber(v) || v->valuedouble < 1) {
            snprintf(err, errlen, "%s: field %s: %s: speculative_algorithm is %s, and the "
                     "speculative shape (speculative_num_steps, speculative_eagle_topk, "
                     "speculative_num_draft_tokens) is needed to turn batch sizes into tokens "
                     "(or give --spec-shape STEPS,TOPK,DRAFT_TOKENS)", path, keys[k],
                     !v ? "missing" : cJSON_IsNull(v) ? "value null" : "not a number >= 1",
                     cJSON_IsString(alg) ? alg->valuestring : "set");
            goto out;
        }
        got[k] = v->valuedouble;
    }
    if (pm_shape_check(got[0], got[1], got[2], path, keys, err, errlen))
        goto out;
    for (int k = 0; k < 3; k++)
        *dst[k] = (int)got[k];
    s->known = 1;
    rc = 0;
out:
    free(all);
    return rc;
}

int phasemap_shape_load(pm_shape *s, const char *path, char *err, size_t errlen)
{
    char *text;
    size_t len;
    memset(s, 0, sizeof *s);
    s->cuda_graph = 1;
    if (pgz_slurp(path, PM_ARGS_MAX_BYTES, &text, &len, err, errlen))
        return -1;
    cJSON *j = cJSON_Parse(text);
    free(text);
    if (!j || !cJSON_IsObject(j)) {
        snprintf(err, errlen, "%s: not a JSON object (expected SGLang's server_args.json, the "
                 "/get_server_info reply)", path);
        cJSON_Delete(j);
        return -1;
    }
    /* an object with none of ServerArgs' fields is some other JSON (it was read as a baseline
     * server with every default) */
    static const char *const known[] = {"model_path", "tp_size", "speculative_algorithm", "cuda_graph_max_bs",
                                        "cuda_graph_bs", "disable_cuda_graph", "served_model_name",
                                        "cuda_graph_config"};
    int any = 0;
    for (size_t k = 0; k < sizeof known / sizeof known[0]; k++)
        any |= cJSON_GetObjectItemCaseSensitive(j, known[k]) != NULL;
    if (!any) {
        snprintf(err, errlen, "%s: no field of SGLang's ServerArgs (model_path, tp_size, speculative_algorithm, "
                 "cuda_graph_max_bs, ...) at its top level (first field: %.40s): not a server_args.json",
                 path, j->child && j->child->string ? j->child->string : "none");
        cJSON_Delete(j);
        return -1;
    }
    int rc = pm_shape_from_json(s, j, path, err, errlen);
    cJSON_Delete(j);
    return rc;
}

/* ---- the server_args=ServerArgs(...) line: a Python repr read as JSON ------------------------ */

/* Brackets nested deeper than this in one repr are read as text (ServerArgs nests two or
 * three: lora_paths=[LoRARef(...)], cuda_graph_config=CudaGraphConfig(decode=PhaseConfig(..))). */
#define PM_REPR_DEPTH 32

static const char *pm_py_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
        p++;
    return p;
}

/* Text that is no literal (an enum's <Alg.EAGLE: 1>, inf, a bare name) up to the next ',' or
 * closing bracket of its level: *pp moved past it; 0, or -1 where the text ends inside it. */
static int pm_py_skip(const char **pp, const char *end)
{
    int depth = 0;
    for (const char *p = *pp; p < end; p++) {
        if (*p == '\'' || *p == '"') {
            const char *q = p + 1;
            while (q < end && *q != *p)
                q += *q == '\\' && q + 1 < end ? 2 : 1;
            if (q >= end)
                return -1;
            p = q;
        } else if (*p == '(' || *p == '[' || *p == '{' || *p == '<') {
            depth++;
        } else if (*p == ')' || *p == ']' || *p == '}' || *p == '>') {
            if (depth-- == 0) {
                *pp = p;
                return 0;
            }
        } else if (*p == ',' && depth == 0) {
            *pp = p;
            return 0;
        }
    }
    return -1;
}

/* One Python literal at *pp (never read past end) as cJSON, *pp moved past it: 'str' and "str"
 * (a backslash takes the next character as it is), None/True/False, numbers, [..] and (..) as
 * arrays, {k: v} as an object (keys as their text), Name(k=v, ..) (a dataclass repr) as an
 * object of its fields (positional arguments dropped). NULL with *cut 1 where the text ends
 * inside the value (a line cut short); NULL with *cut 0 for other text or no memory. */
static cJSON *pm_py_literal(const char **pp, const char *end, int depth, int *cut);

/* Other text (an enum's <Alg.EAGLE: 1>, inf, a set, anything nested deeper than PM_REPR_DEPTH)
 * as a string of itself, to the next ',' or closing bracket of its level. */
static cJSON *pm_py_text(const char **pp, const char *end, int *cut)
{
    const char *p = pm_py_ws(*pp, end), *q = p;
    if (pm_py_skip(&q, end)) {
        *cut = 1;
        return NULL;
    }
    while (q > p && (q[-1] == ' ' || q[-1] == '\r'))
        q--;
    char *b = malloc((size_t)(q - p) + 1);
    if (!b)
        return NULL;
    memcpy(b, p, (size_t)(q - p));
    b[q - p] = 0;
    cJSON *x = cJSON_CreateString(b);
    free(b);
    *pp = q;
    return x;
}

/* One value: a literal, else (a set, a literal that does not read, nesting past the depth)
 * its text; NULL only where the text ends inside it (*cut 1) or memory runs out. */
static cJSON *pm_py_value(const char **pp, const char *end, int depth, int *cut)
{
    const char *p = *pp;
    *cut = 0;
    cJSON *x = depth <= PM_REPR_DEPTH ? pm_py_literal(&p, end, depth, cut) : NULL;
    if (x) {
        *pp = p;
        return x;
    }
    return *cut ? NULL : pm_py_text(pp, end, cut);
}

static cJSON *pm_py_literal(const char **pp, const char *end, int depth, int *cut)
{
    const char *p = pm_py_ws(*pp, end);
    cJSON *x = NULL;
    *cut = 0;
    if (p >= end) {
        *cut = 1;
        return NULL;
    }
    if (*p == '\'' || *p == '"') {
        const char *q = p + 1;
        size_t n = 0;
        while (q < end && *q != *p) {
            q += *q == '\\' && q + 1 < end ? 2 : 1;
            n++;
        }
        if (q >= end) {
            *cut = 1;
            return NULL;
        }
        char *b = malloc(n + 1);
        if (!b)
            return NULL;
        n = 0;
        for (const char *r = p + 1; r < q; r++)
            b[n++] = *r == '\\' ? *++r : *r;
        b[n] = 0;
        x = cJSON_CreateString(b);
        free(b);
        *pp = q + 1;
        return x;
    }
    if (*p == '[' || *p == '(' || *p == '{') {
        char close = *p == '[' ? ']' : *p == '(' ? ')' : '}';
        int dict = *p == '{';
        x = dict ? cJSON_CreateObject() : cJSON_CreateArray();
        for (p++; x;) {
            p = pm_py_ws(p, end);
            if (p < end && *p == close) {
                *pp = p + 1;
                return x;
            }
            cJSON *k = NULL, *v = pm_py_value(&p, end, depth + 1, cut);
            if (v && dict) {           /* {key: value}: the key as its text */
                k = v;
                p = pm_py_ws(p, end);
                v = p < end && *p == ':' ? (p++, pm_py_value(&p, end, depth + 1, cut)) : NULL;
                if (!v && p >= end)
                    *cut = 1;
            }
            if (!v) {
                cJSON_Delete(k);
                break;
            }
            if (dict) {
                char num[32], *ks = cJSON_IsString(k) ? k->valuestring : num;
                snprintf(num, sizeof num, "%g", cJSON_IsNumber(k) ? k->valuedouble : 0.0);
                cJSON_AddItemToObject(x, ks, v);
                cJSON_Delete(k);
            } else {
                cJSON_AddItemToArray(x, v);
            }
            p = pm_py_ws(p, end);
            if (p < end && *p == ',')
                p++;
            else if (p >= end || *p != close) {
                *cut = p >= end;
                break;
            }
        }
        cJSON_Delete(x);
        return NULL;
    }
    const char *w = p;
    while (w < end && (isalnum((unsigned char)*w) || *w == '_' || *w == '.' || *w == '-' || *w == '+'))
        w++;
    if (w < end && *w == '(' && w > p && (isalpha((unsigned char)*p) || *p == '_')) {
        /* Name(field=value, ...) */
        x = cJSON_CreateObject();
        for (p = w + 1; x;) {
            p = pm_py_ws(p, end);
            if (p < end && *p == ')') {
                *pp = p + 1;
                return x;
            }
            const char *k = p;
            while (p < end && (isalnum((unsigned char)*p) || *p == '_'))
                p++;
            size_t kl = (size_t)(p - k);
            const char *eq = pm_py_ws(p, end);
            if (kl && eq < end && *eq == '=')
                p = eq + 1;
            else
                p = k;                  /* a positional argument: read and dropped */
            cJSON *v = pm_py_value(&p, end, depth + 1, cut);
            if (!v)
                break;
            if (kl && p != k && eq < end && *eq == '=') {
                char key[128];
                snprintf(key, sizeof key, "%.*s", (int)(kl < sizeof key ? kl : sizeof key - 1), k);
                cJSON_AddItemToObject(x, key, v);
            } else {
                cJSON_Delete(v);
            }
            p = pm_py_ws(p, end);
            if (p < end && *p == ',')
                p++;
            else if (p >= end || *p != ')') {
                *cut = p >= end;
                break;
            }
        }
        cJSON_Delete(x);
        return NULL;
    }
    char tok[64];
    snprintf(tok, sizeof tok, "%.*s", (int)(w - p < 63 ? w - p : 63), p);
    char *e;
    double d = strtod(tok, &e);
    if (w > p && !strcmp(tok, "None"))
        x = cJSON_CreateNull();
    else if (w > p && (!strcmp(tok, "True") || !strcmp(tok, "False")))
        x = cJSON_CreateBool(tok[0] == 'T');
    else if (w > p && w - p < 63 && e != tok && *e == 0)
        x = cJSON_CreateNumber(d);
    else
        return NULL;            /* not a literal: pm_py_value takes its text */
    if (x)
        *pp = w;
    return x;
}

/* The fields of pm_shape_from_json, read from the dataclass repr that the server logs at
 * start-up: `server_args=ServerArgs(model_path='...', tp_size=8, ..., cuda_graph_max_bs=160,
 * cuda_graph_bs=[1, 2, 4], disable_cuda_graph=False, ..., speculative_algorithm='EAGLE3',
 * ..., speculative_num_steps=3, speculative_eagle_topk=1, speculative_num_draft_tokens=4, ...)`
 * (logger.info(f"{server_args=}") in entrypoints/engine.py, _launch_subprocesses), read whole
 * as a Python literal: strings may hold commas, parentheses and '=' (json_model_override_args=
 * '{"a": 1}'), fields may be reprs themselves (lora_paths=[LoRARef(...)]). A repr without its
 * closing parenthesis is refused: a line cut by a collector (kubelet and Docker split lines over
 * 16 KiB) once gave the digits before the cut (cuda_graph_max_bs=16 of 160). */
int phasemap_shape_repr(pm_shape *s, const char *text, size_t len, const char *label, char *err,
                        size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->cuda_graph = 1;
    const char *end = text + len, *open = memmem(text, len, "ServerArgs(", 11);
    if (!open) {
        snprintf(err, errlen, "%s: no \"ServerArgs(\" in the server_args line", label);
        return -1;
    }
    const char *p = open;
    int cut = 0;
    cJSON *j = pm_py_literal(&p, end, 0, &cut);
    if (!cJSON_IsObject(j)) {
        if (cut)
            snprintf(err, errlen, "%s: the line ends inside ServerArgs(...) (%zu bytes, no closing "
                     "parenthesis): cut by a log collector (kubelet and Docker split lines over 16 KiB)? "
                     "Give --server-args server_args.json (GET /get_server_info) or --spec-shape", label,
                     (size_t)(end - open));
        else
            snprintf(err, errlen, "%s: ServerArgs(...) not readable as a dataclass repr (unbalanced "
                     "brackets, or out of memory)", label);
        cJSON_Delete(j);
        return -1;
    }
    int rc = pm_shape_from_json(s, j, label, err, errlen);
    cJSON_Delete(j);
    return rc;
}

int phasemap_shape_find(pm_shape *s, const char *trace_path, char *found, size_t foundlen,
                        char *err, size_t errlen)
{
    char dir[600], cand[700], *real = realpath(trace_path, NULL);
    /* beside the file itself: a symlinked trace finds its own server_args.json */
    snprintf(dir, sizeof dir, "%s", real ? real : trace_path);
    free(real);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = 0;
    else
        snprintf(dir, sizeof dir, ".");
    for (int up = 0; up < 2; up++) {
        snprintf(cand, sizeof cand, "%s/server_args.json", dir);
        struct stat sb;
        if (stat(cand, &sb) == 0) {
            if (phasemap_shape_load(s, cand, err, errlen))
                return -1;
            snprintf(found, foundlen, "%s", cand);
            return 1;
        }
        char *u = strrchr(dir, '/');
        if (u && u != dir)
            *u = 0;
        else if (strcmp(dir, ".") == 0)
            snprintf(dir, sizeof dir, "..");
        else
            break;
    }
    return 0;
}

int phasemap_shape_flag(pm_shape *s, const char *v, char *err, size_t errlen)
{
    int a, b, c, n = 0;
    if (sscanf(v, "%d,%d,%d%n", &a, &b, &c, &n) != 3 || v[n] || a < 1 || b < 1 || c < 1) {
        snprintf(err, errlen, "field --spec-shape: value %s: expected STEPS,TOPK,DRAFT_TOKENS "
                 "(each >= 1; EAGLE chain: 3,1,4)", v);
        return -1;
    }
    static const char *const fields[3] = {"--spec-shape (steps)", "--spec-shape (topk)",
                                          "--spec-shape (draft tokens)"};
    if (pm_shape_check(a, b, c, "command line", fields, err, errlen))
        return -1;
    s->steps = a;
    s->topk = b;
    s->draft_tokens = c;
    s->known = 1;
    s->missing[0] = 0;
    snprintf(s->source + strlen(s->source), sizeof s->source - strlen(s->source),
             "%s--spec-shape %s", s->source[0] ? " + " : "", v);
    return 0;
}

int phasemap_graph_flag(pm_shape *s, const char *v, char *err, size_t errlen)
{
    if (!strcmp(v, "off") || !strcmp(v, "0")) {
        s->cuda_graph = 0;
        s->ngraph_bs = 0;
        return 0;
    }
    if (!strncmp(v, "max:", 4)) {
        char *e;
        long m = strtol(v + 4, &e, 10);
        if (e == v + 4 || *e || m < 1 || m > 4096)
            goto bad;
        phasemap_sglang_graph_bs(s, (int)m);   /* up to 4096: 330 sizes */
        s->cuda_graph = 1;
        return 0;
    }
    s->ngraph_bs = 0;
    for (const char *p = v; *p;) {
        char *e;
        long b = strtol(p, &e, 10);
        if (e == p || b < 1 || b > BND_ROWS_MAX || (*e && *e != ','))
            goto bad;
        if (s->ngraph_bs == PM_GRAPH_BS_MAX)   /* full: room from the sizes given twice, if any */
            s->ngraph_bs = pm_sort_unique(s->graph_bs, s->ngraph_bs);
        if (s->ngraph_bs == PM_GRAPH_BS_MAX) {
            snprintf(err, errlen, "field --cuda-graph-bs: value %.40s...: " PM_GRAPH_BS_WHY, v, PM_GRAPH_BS_MAX);
            return -1;
        }
        s->graph_bs[s->ngraph_bs++] = (int)b;
        p = *e ? e + 1 : e;
    }
    s->ngraph_bs = pm_sort_unique(s->graph_bs, s->ngraph_bs);
    s->cuda_graph = 1;
    return 0;
bad:
    snprintf(err, errlen, "field --cuda-graph-bs: value %s: expected a list of batch sizes "
             "(1,2,4,8), max:N (SGLang's default list up to N) or off", v);
    return -1;
}

/* ---- writing the instances ------------------------------------------------------------------ */

typedef struct {
    ptrace_range *r;
    char **names;
    size_t n, cap;
} pm_out;

static int pm_emit(pm_out *o, const ptrace_range *src, int phase, double tokens, int bs,
                   int rows, double ctx, int graph, const pm_shape *sh, int forwards)
{
    if (o->n == o->cap) {
        size_t nc = o->cap ? o->cap * 2 : 256;
        ptrace_range *nr = realloc(o->r, nc * sizeof *nr);
        char **nn = nr ? realloc(o->names, nc * sizeof *nn) : NULL;
        if (nr)
            o->r = nr;
        if (!nr || !nn)
            return -1;
        o->names = nn;
        o->cap = nc;
    }
    char name[256];
    int k = snprintf(name, sizeof name, "%s tokens=%.17g bs=%d rows=%d ctx=%.17g",
                     wm_phase_name[phase], tokens, bs, rows, ctx);
    if (graph >= 0)
        k += snprintf(name + k, sizeof name - (size_t)k, " graph=%d", graph);
    if (sh->known)
        k += snprintf(name + k, sizeof name - (size_t)k, " steps=%d topk=%d", sh->steps, sh->topk);
    if (forwards > 0)
        snprintf(name + k, sizeof name - (size_t)k, " forwards=%d", forwards);
    o->names[o->n] = strdup(name);
    if (!o->names[o->n])
        return -1;
    o->r[o->n] = *src;
    o->r[o->n].name = o->names[o->n];
    o->r[o->n].domain = "";
    o->n++;
    return 0;
}

/* Replaces t's ranges by o's. */
static int pm_commit(fit_trace *t, pm_out *o)
{
    int rc = 0;
    t->nrng = 0;
    for (size_t i = 0; i < o->n && !rc; i++)
        rc = fit_trace_add_range(t, &o->r[i]);
    for (size_t i = 0; i < o->n; i++)
        free(o->names[i]);
    free(o->names);
    free(o->r);
    return rc;
}

static void pm_note_ignored(pm_stats *st, const char *name)
{
    st->ignored++;
    st->prefill_steps += !strncmp(name, "step[EXTEND", 11) || !strncmp(name, "step[MIXED", 10) ||
                         !strncmp(name, "step[SPLIT_PREFILL", 18);
    size_t n = strlen(st->ignored_names);
    if (n + strlen(name) + 4 < sizeof st->ignored_names && !strstr(st->ignored_names, name))
        snprintf(st->ignored_names + n, sizeof st->ignored_names - n, "%s\"%.60s\"",
                 n ? ", " : "", name);
}

/* Tokens of one forward of phase p over rows padded rows (DESIGN.md, One speculative
 * iteration): draft rows*topk, verify and accept rows*draft_tokens, extend rows*(steps+1),
 * decode and sample rows. -1 when the phase needs the speculative shape and it is unknown. */
static double pm_tokens(int p, int rows, const pm_shape *sh)
{
    switch (p) {
    case WM_DECODE:
    case WM_SAMPLE:
        return rows;
    default:
        if (!sh->known)
            return -1;
        return p == WM_DRAFT ? (double)rows * sh->topk :
               p == WM_EXTEND ? (double)rows * (sh->steps + 1) : (double)rows * sh->draft_tokens;
    }
}

/* ---- specprof ------------------------------------------------------------------------------- */

static int pm_first_word_phase(const char *name)
{
    char w[32];
    size_t n = 0;
    while (name[n] && name[n] != ' ' && n < sizeof w - 1) {
        w[n] = name[n];
        n++;
    }
    w[n] = 0;
    if (name[n] && name[n] != ' ')
        return -1;
    return wm_phase_find(w);
}

static int pm_specprof(fit_trace *t, pm_stats *st)
{
    for (size_t i = 0; i < t->nrng; i++) {
        int p = pm_first_word_phase(t->rng[i].name);
        if (p >= 0) {
            st->instances++;
            st->per_phase[p]++;
        } else {
            pm_note_ignored(st, t->rng[i].name);
        }
    }
    return 0;
}

/* ---- SGLang --------------------------------------------------------------------------------- */

enum { SG_IGNORE, SG_STAGE, SG_STEP };

typedef struct {
    int kind, phase;           /* phase: the instance's, -1 none */
    int64_t step_e;            /* a verify stage: the end of its TARGET_VERIFY step span */
    int bs, has_bs;
    double bad_bs;             /* a bs= that is no batch size (not whole, < 0, over BND_ROWS_MAX) */
    int has_bad_bs;
    double gsk;
    int has_gsk, gsk_own;      /* gsk_own: from its own step span, not borrowed */
    int drop;
    int64_t s, e, th;
    size_t idx;                /* into t->rng */
} sg_span;

static int sg_stage_phase(const char *n)
{
    return !strcmp(n, "draft") ? WM_DRAFT : !strcmp(n, "verify") ? WM_VERIFY :
           !strcmp(n, "verify_sample") ? WM_ACCEPT : !strcmp(n, "draft_extend") ? WM_EXTEND : -1;
}

/* `step[MODE bs=N toks=T g_sk=K ...]` -> its phase outside a stage (-1: none), bs, g_sk.
 * Returns 0 when the name is not a step span. */
static int sg_parse_step(const char *n, sg_span *x)
{
    if (strncmp(n, "step[", 5) != 0)
        return 0;
    const char *m = n + 5;
    size_t ml = strcspn(m, " ]");
#define MODE(s) (ml == sizeof(s) - 1 && strncmp(m, s, ml) == 0)
    x->phase = MODE("TARGET_VERIFY") ? WM_VERIFY :
               (MODE("DRAFT_EXTEND") || MODE("DRAFT_EXTEND_V2")) ? WM_EXTEND :
               MODE("DECODE") ? WM_DECODE : -1;
#undef MODE
    const char *p = m + ml;
    while (*p && *p != ']') {
        while (*p == ' ')
            p++;
        const char *k = p;
        while (*p && *p != '=' && *p != ' ' && *p != ']')
            p++;
        if (*p != '=')
            continue;
        size_t kl = (size_t)(p - k);
        char *end;
        double v = strtod(p + 1, &end);
        if (end != p + 1) {
            if (kl == 2 && !strncmp(k, "bs", 2) && !bnd_ok(&(bnd_kind){"a batch size", "rows", 0, BND_ROWS_MAX, 1}, v)) {
                x->bad_bs = v;             /* refused by the caller; (int)1e11 was undefined */
                x->has_bad_bs = 1;
            } else if (kl == 2 && !strncmp(k, "bs", 2)) {
                x->bs = (int)v;
                x->has_bs = 1;
            } else if (kl == 4 && !strncmp(k, "g_sk", 4)) {
                x->gsk = v;
                x->has_gsk = x->gsk_own = 1;
            }
        }
        p = end != p + 1 ? end : p + 1;
        while (*p && *p != ' ' && *p != ']')
            p++;
    }
    return 1;
}

static int sg_cmp_start(const void *a, const void *b)
{
    const sg_span *x = *(sg_span *const *)a, *y = *(sg_span *const *)b;
    if (x->s != y->s)
        return x->s < y->s ? -1 : 1;
    return (x->e < y->e) - (x->e > y->e);   /* the outer first */
}

static int pm_sglang(const phasemap *pm, fit_trace *t, pm_stats *st, pm_out *o, char *err,
                     size_t errlen)
{
    sg_span *sp = calloc(t->nrng + 1, sizeof *sp);
    sg_span **stg = malloc((t->nrng + 1) * sizeof *stg), **inst = malloc((t->nrng + 1) * sizeof *inst);
    size_t nstg = 0, ninst = 0;
    int rc = -1, has_sample = 0;
    const sg_span *spec_span = NULL;
    if (!sp || !stg || !inst) {
        snprintf(err, errlen, "%s: out of memory", t->file);
        goto out;
    }
    for (size_t i = 0; i < t->nrng; i++) {
        const ptrace_range *r = &t->rng[i];
        sg_span *x = &sp[i];
        x->idx = i;
        x->s = r->start_ns;
        x->e = r->end_ns;
        x->th = r->thread;
        x->phase = -1;
        if (*r->domain) {          /* GPU spans and other domains name no host phase */
            x->kind = SG_IGNORE;
            continue;
        }
        int p = sg_stage_phase(r->name);
        has_sample |= p == WM_ACCEPT;
        if (p >= 0) {
            x->kind = SG_STAGE;
            x->phase = p;
            stg[nstg++] = x;
        } else if (sg_parse_step(r->name, x)) {
            x->kind = SG_STEP;
            if (x->has_bad_bs) {
                snprintf(err, errlen, "%s: span \"%.80s\": field bs: value %.17g: out of range: a batch "
                         "size must be a whole number in [0, %d] rows", t->file, r->name, x->bad_bs,
                         (int)BND_ROWS_MAX);
                goto out;
            }
        } else {
            x->kind = SG_IGNORE;
        }
        if (x->kind == SG_IGNORE || (x->kind == SG_STEP && x->phase < 0))
            pm_note_ignored(st, r->name);
        if (!spec_span && ((x->kind == SG_STEP && (x->phase == WM_VERIFY || x->phase == WM_EXTEND)) ||
                           (x->kind == SG_STAGE && x->phase != WM_DECODE)))
            spec_span = x;
    }
    if (spec_span && !pm->shape.known) {
        const char *why = pm->shape.source[0] ? pm->shape.source : "no server_args.json beside the trace";
        snprintf(err, errlen, "%s: span \"%.60s\": a speculative trace, but %s: %s: the "
                 "speculative shape is needed to turn batch sizes into tokens (server_args.json "
                 "of the server, or --spec-shape STEPS,TOPK,DRAFT_TOKENS)", t->file,
                 t->rng[spec_span->idx].name, why,
                 pm->shape.missing[0] ? pm->shape.missing : "field speculative_num_steps: missing");
        goto out;
    }
    qsort(stg, nstg, sizeof *stg, sg_cmp_start);
    /* fold each step span into the stage span that holds it */
    for (size_t i = 0; i < t->nrng; i++) {
        sg_span *x = &sp[i];
        if (x->kind != SG_STEP)
            continue;
        size_t lo = 0, hi = nstg;
        while (lo < hi) {          /* first stage with start > x->s */
            size_t mid = lo + (hi - lo) / 2;
            if (stg[mid]->s <= x->s)
                lo = mid + 1;
            else
                hi = mid;
        }
        sg_span *holder = NULL;
        for (size_t k = lo, n = 0; k > 0 && n < PM_BACK_SEARCH; k--, n++) {
            sg_span *c = stg[k - 1];
            if (c->e >= x->e && c->th == x->th) {
                holder = c;
                break;
            }
        }
        if (holder) {
            if (!holder->has_bs && x->has_bs) {
                holder->bs = x->bs;
                holder->has_bs = 1;
            }
            if (!holder->has_gsk && x->has_gsk) {
                holder->gsk = x->gsk;
                holder->has_gsk = holder->gsk_own = 1;
            }
            if (holder->phase == WM_VERIFY && x->phase == WM_VERIFY && x->e > holder->step_e)
                holder->step_e = x->e;
            x->drop = 1;
            st->folded++;
        } else if (x->phase >= 0 && x->has_bs) {
            inst[ninst++] = x;
        }
    }
    for (size_t k = 0; k < nstg; k++)
        inst[ninst++] = stg[k];
    qsort(inst, ninst, sizeof *inst, sg_cmp_start);
    /* a stage without a step span (a draft graph replayed outside model_runner.forward) takes
     * the batch of the nearest instance of its thread that has one: the next for draft (its
     * round's verify), the previous for the others */
    for (size_t k = 0; k < ninst; k++) {
        sg_span *x = inst[k];
        if (x->has_bs)
            continue;
        const sg_span *nb = NULL;
        for (int pass = 0; pass < 2 && !nb; pass++) {
            int fwd = (x->phase == WM_DRAFT) ^ pass;
            for (size_t j = k, n = 0; n < 64; n++) {
                if (fwd ? j + 1 >= ninst : j == 0)
                    break;
                j = fwd ? j + 1 : j - 1;
                if (inst[j]->th == x->th && inst[j]->has_bs) {
                    nb = inst[j];
                    break;
                }
            }
        }
        if (nb) {
            x->bs = nb->bs;
            x->has_bs = 1;
            st->borrowed++;
        }
    }
    /* g_sk= (KV summed over the rows) rides on DECODE step spans only: an eager draft's
     * forwards carry it, the verify and draft-extend of the same round (same rows, same
     * requests) take it from the nearest instance of their thread with the same batch */
    for (size_t k = 0; k < ninst; k++) {
        sg_span *x = inst[k];
        if (x->has_gsk || !x->has_bs)
            continue;
        for (int q = 0; q < 2 && !x->has_gsk; q++)       /* the round's earlier spans first */
            for (int d = 1; d <= PM_ROUND_SPANS && !x->has_gsk; d++) {
                const sg_span *c = q == 0 ? (k >= (size_t)d ? inst[k - (size_t)d] : NULL)
                                          : (k + (size_t)d < ninst ? inst[k + (size_t)d] : NULL);
                if (c && c->th == x->th && c->has_bs && c->bs == x->bs && c->gsk_own) {
                    x->gsk = c->gsk;
                    x->has_gsk = 1;
                }
            }
    }
    for (size_t k = 0; k < ninst; k++) {
        sg_span *x = inst[k];
        if (!x->has_bs) {
            st->no_batch++;
            continue;
        }
        if (x->bs < 1) {      /* IDLE-like batches of 0 rows */
            pm_note_ignored(st, t->rng[x->idx].name);
            continue;
        }
        int graph = -1, rows = x->bs;
        /* sampling runs eagerly over the real rows (CUDA graphs hold the forwards) */
        if (x->phase != WM_ACCEPT && (pm->shape.ngraph_bs > 0 || !pm->shape.cuda_graph))
            rows = phasemap_pad(&pm->shape, x->bs, &graph);
        if (x->phase == WM_ACCEPT)
            graph = 0;
        double tokens = pm_tokens(x->phase, rows, &pm->shape);
        double ctx = 0;
        if (x->has_gsk) {
            ctx = x->gsk;
            st->ctx_from = 1;
        } else {
            int from;
            ctx = phasemap_ctx(pm, x->bs, &from);
            if (from > st->ctx_from)
                st->ctx_from = from;
        }
        /* releases without verify_sample spans sample inside the verify stage, after its
         * step span: that rest of the stage is the accept instance */
        ptrace_range r = t->rng[x->idx];
        int split = !has_sample && x->kind == SG_STAGE && x->phase == WM_VERIFY && x->step_e > r.start_ns &&
                    x->step_e < r.end_ns;
        if (split)
            r.end_ns = x->step_e;
        if (pm_emit(o, &r, x->phase, tokens, x->bs, rows, ctx, graph, &pm->shape, 0)) {
            snprintf(err, errlen, "%s: out of memory", t->file);
            goto out;
        }
        st->instances++;
        st->per_phase[x->phase]++;
        /* SGLang samples a plain decode step outside its step span (model_runner.sample):
         * the time from the step's end to the next instance of its thread is the sample
         * instance (its argmax and the blocking read of the tokens) */
        if (x->kind == SG_STEP && x->phase == WM_DECODE) {
            int64_t next = -1;
            for (size_t j = k + 1; j < ninst && next < 0; j++)
                if (inst[j]->th == x->th && inst[j]->s >= x->e)
                    next = inst[j]->s;
            if (next > x->e) {
                ptrace_range a = t->rng[x->idx];
                a.start_ns = x->e;
                a.end_ns = next;
                if (pm_emit(o, &a, WM_SAMPLE, x->bs, x->bs, x->bs, ctx, 0, &pm->shape, 0)) {
                    snprintf(err, errlen, "%s: out of memory", t->file);
                    goto out;
                }
                st->instances++;
                st->per_phase[WM_SAMPLE]++;
                st->sample_after++;
            }
        }
        if (split) {
            ptrace_range a = t->rng[x->idx];
            a.start_ns = x->step_e;
            if (pm_emit(o, &a, WM_ACCEPT, pm_tokens(WM_ACCEPT, x->bs, &pm->shape), x->bs, x->bs, ctx, 0,
                        &pm->shape, 0)) {
                snprintf(err, errlen, "%s: out of memory", t->file);
                goto out;
            }
            st->instances++;
            st->per_phase[WM_ACCEPT]++;
            st->split++;
        }
    }
    rc = 0;
out:
    free(sp);
    free(stg);
    free(inst);
    return rc;
}

/* ---- a user's phase map --------------------------------------------------------------------- */

enum { CAP_ROWS, CAP_BS, CAP_TOKENS, CAP_CTX, CAP_STEPS, CAP_TOPK, CAP_FORWARDS, CAP_GRAPH, NCAP };
static const char *const pm_cap_name[NCAP] = {"rows", "bs", "tokens", "ctx", "steps", "topk",
                                              "forwards", "graph"};

/* Whole-string match of s against pattern p ('*' any text, '{name}' a number); captures into
 * cap[] (set[] marks them). Backtracks over '*' (patterns are short). */
static int pm_match(const char *p, const char *s, double cap[NCAP], int set[NCAP])
{
    while (*p) {
        if (*p == '*') {
            while (*p == '*')
                p++;
            if (!*p)
                return 1;
            for (const char *q = s; ; q++) {
                double c2[NCAP];
                int s2[NCAP];
                memcpy(c2, cap, sizeof c2);
                memcpy(s2, set, sizeof s2);
                if (pm_match(p, q, c2, s2)) {
                    memcpy(cap, c2, sizeof c2);
                    memcpy(set, s2, sizeof s2);
                    return 1;
                }
                if (!*q)
                    return 0;
            }
        }
        if (*p == '{') {
            const char *e = strchr(p, '}');
            int c = -1;
            for (int k = 0; e && k < NCAP; k++)
                if ((size_t)(e - p - 1) == strlen(pm_cap_name[k]) && !strncmp(p + 1, pm_cap_name[k], (size_t)(e - p - 1)))
                    c = k;
            if (c < 0)
                return 0;
            if (!isdigit((unsigned char)*s))
                return 0;
            char *end;
            double v = strtod(s, &end);
            cap[c] = v;
            set[c] = 1;
            s = end;
            p = e + 1;
            continue;
        }
        if (*p != *s)
            return 0;
        p++;
        s++;
    }
    return *s == 0;
}

int phasemap_load_map(phasemap *pm, const char *spec, char *err, size_t errlen)
{
    char *text = NULL;
    size_t len;
    struct stat sb;
    char perr[256];
    if (stat(spec, &sb) == 0 && S_ISREG(sb.st_mode)) {
        if (pgz_slurp(spec, (size_t)1 << 20, &text, &len, perr, sizeof perr)) {
            snprintf(err, errlen, "field --phase-map: %s", perr);
            return -1;
        }
    } else {
        text = strdup(spec);
        if (!text) {
            snprintf(err, errlen, "field --phase-map: out of memory");
            return -1;
        }
    }
    int rc = -1, entry = 0;
    char *save = NULL;
    for (char *ln = strtok_r(text, "\n;", &save); ln; ln = strtok_r(NULL, "\n;", &save)) {
        while (*ln == ' ' || *ln == '\t')
            ln++;
        size_t n = strlen(ln);
        while (n && (ln[n - 1] == ' ' || ln[n - 1] == '\t' || ln[n - 1] == '\r'))
            ln[--n] = 0;
        if (!*ln || *ln == '#')
            continue;
        entry++;
        char *eq = strchr(ln, '=');
        if (!eq) {
            snprintf(err, errlen, "field --phase-map: entry %d \"%.60s\": expected PHASE=PATTERN "
                     "or KEY=VALUE", entry, ln);
            goto out;
        }
        *eq = 0;
        const char *key = ln, *val = eq + 1;
        int p = wm_phase_find(key);
        if (p >= 0) {
            if (pm->nrules >= PM_RULES_MAX || strlen(val) >= sizeof pm->rules[0].pat || !*val) {
                snprintf(err, errlen, "field --phase-map: entry %d (%s): %s", entry, key,
                         !*val ? "empty pattern" : "too many rules or a pattern over 199 bytes");
                goto out;
            }
            for (const char *b = strchr(val, '{'); b; b = strchr(b + 1, '{')) {
                const char *e = strchr(b, '}');
                int ok = 0;
                for (int k = 0; e && k < NCAP; k++)
                    ok |= (size_t)(e - b - 1) == strlen(pm_cap_name[k]) && !strncmp(b + 1, pm_cap_name[k], (size_t)(e - b - 1));
                if (!ok) {
                    snprintf(err, errlen, "field --phase-map: entry %d (%s): capture \"%.20s\": not one "
                             "of {rows} {bs} {tokens} {ctx} {steps} {topk} {forwards} {graph}", entry, key, b);
                    goto out;
                }
            }
            pm->rules[pm->nrules].phase = p;
            snprintf(pm->rules[pm->nrules].pat, sizeof pm->rules[0].pat, "%s", val);
            pm->nrules++;
            continue;
        }
        char *end;
        double v = strtod(val, &end);
        if (end == val || *end || v < 0) {
            snprintf(err, errlen, "field --phase-map: entry %d: key %s: value %s: not a number >= 0",
                     entry, key, val);
            goto out;
        }
        const char *dot = strchr(key, '.');
        if (dot && !strcmp(dot + 1, "forwards")) {
            char ph[32];
            snprintf(ph, sizeof ph, "%.*s", (int)(dot - key), key);
            int q = wm_phase_find(ph);
            if (q < 0 || v < 1) {
                snprintf(err, errlen, "field --phase-map: entry %d: key %s: %s", entry, key,
                         q < 0 ? "not a phase" : "forwards must be >= 1");
                goto out;
            }
            pm->map_forwards[q] = (int)v;
        } else if (!strcmp(key, "rows") || !strcmp(key, "bs")) {
            pm->map_rows = v;
        } else if (!strcmp(key, "ctx")) {
            pm->map_ctx = v;
        } else if (!strcmp(key, "graph")) {
            pm->map_graph = v != 0;
        } else if (!strcmp(key, "steps")) {
            pm->shape.steps = (int)v;
        } else if (!strcmp(key, "topk")) {
            pm->shape.topk = (int)v;
        } else if (!strcmp(key, "draft_tokens")) {
            pm->shape.draft_tokens = (int)v;
        } else {
            snprintf(err, errlen, "field --phase-map: entry %d: key %s: not a phase (%s, %s, %s, "
                     "%s, %s, %s) nor a default (rows, ctx, graph, steps, topk, draft_tokens, "
                     "PHASE.forwards)", entry, key, wm_phase_name[0], wm_phase_name[1],
                     wm_phase_name[2], wm_phase_name[3], wm_phase_name[4], wm_phase_name[5]);
            goto out;
        }
    }
    if (pm->shape.steps > 0 && pm->shape.topk > 0 && pm->shape.draft_tokens > 0 && !pm->shape.known) {
        pm->shape.known = 1;
        snprintf(pm->shape.source, sizeof pm->shape.source, "--phase-map");
    }
    if (pm->nrules == 0) {
        snprintf(err, errlen, "field --phase-map: no PHASE=PATTERN rule in \"%.60s\"", spec);
        goto out;
    }
    pm->profile = PM_MAP;
    rc = 0;
out:
    free(text);
    return rc;
}

static int pm_map(const phasemap *pm, fit_trace *t, pm_stats *st, pm_out *o, char *err,
                  size_t errlen)
{
    for (size_t i = 0; i < t->nrng; i++) {
        const ptrace_range *r = &t->rng[i];
        double cap[NCAP] = {0};
        int set[NCAP] = {0}, rule = -1;
        if (!strcmp(r->domain, "gpu"))
            continue;
        for (int k = 0; k < pm->nrules && rule < 0; k++) {
            memset(set, 0, sizeof set);
            if (pm_match(pm->rules[k].pat, r->name, cap, set))
                rule = k;
        }
        if (rule < 0) {
            pm_note_ignored(st, r->name);
            continue;
        }
        int p = pm->rules[rule].phase;
        double bs = set[CAP_BS] ? cap[CAP_BS] : set[CAP_ROWS] ? cap[CAP_ROWS] : pm->map_rows;
        if (bs < 1) {
            snprintf(err, errlen, "%s: span \"%.60s\" (phase-map rule %s=%s): field rows: "
                     "missing: the pattern captures no {rows} or {bs} and the map sets no rows=",
                     t->file, r->name, wm_phase_name[p], pm->rules[rule].pat);
            return -1;
        }
        int graph = set[CAP_GRAPH] ? cap[CAP_GRAPH] != 0 : pm->map_graph >= 0 ? (int)pm->map_graph : -1;
        int rows = set[CAP_ROWS] ? (int)cap[CAP_ROWS] : (int)bs;
        if (!set[CAP_ROWS] && pm->shape.ngraph_bs > 0) {
            int g;
            rows = phasemap_pad(&pm->shape, (int)bs, &g);
            if (graph < 0)
                graph = g;
        }
        pm_shape sh = pm->shape;
        if (set[CAP_STEPS])
            sh.steps = (int)cap[CAP_STEPS];
        if (set[CAP_TOPK])
            sh.topk = (int)cap[CAP_TOPK];
        double tokens = set[CAP_TOKENS] ? cap[CAP_TOKENS] : pm_tokens(p, rows, &sh);
        if (!(tokens > 0)) {
            snprintf(err, errlen, "%s: span \"%.60s\" (phase-map rule %s=%s): field tokens: "
                     "missing: the pattern captures no {tokens} and the map gives no speculative "
                     "shape (steps=, topk=, draft_tokens=) to derive them from the rows",
                     t->file, r->name, wm_phase_name[p], pm->rules[rule].pat);
            return -1;
        }
        int from = 0;
        double ctx = set[CAP_CTX] ? cap[CAP_CTX] : pm->map_ctx >= 0 ? pm->map_ctx * bs :
                     phasemap_ctx(pm, (int)bs, &from);
        if (set[CAP_CTX])
            st->ctx_from = 1;
        else if (pm->map_ctx >= 0)
            st->ctx_from = 2;
        else if (from > st->ctx_from)
            st->ctx_from = from;
        int fwd = set[CAP_FORWARDS] ? (int)cap[CAP_FORWARDS] : pm->map_forwards[p];
        if (pm_emit(o, r, p, tokens, (int)bs, rows, ctx, graph, &sh, fwd > 0 ? fwd : 0)) {
            snprintf(err, errlen, "%s: out of memory", t->file);
            return -1;
        }
        st->instances++;
        st->per_phase[p]++;
    }
    return 0;
}

double phasemap_ctx(const phasemap *pm, int bs, int *from)
{
    *from = 0;
    if (bs >= 0 && bs < PM_CTX_BS_MAX && pm->ctx_log_bs[bs] > 0) {
        *from = 3;
        return pm->ctx_log_bs[bs] * bs;
    }
    if (pm->ctx_log_mean > 0) {
        *from = 3;
        return pm->ctx_log_mean * bs;
    }
    if (pm->ctx_per_row >= 0) {
        *from = 2;
        return pm->ctx_per_row * bs;
    }
    return 0;
}

/* Mean #token / #running-req per batch size from SGLang logs. */
static int pm_ctx_log(phasemap *pm, const char *path, char *err, size_t errlen)
{
    sglog g;
    sglog_init(&g);
    char e2[1024];
    if (sglog_read(&g, path, 0, e2, sizeof e2)) {
        snprintf(err, errlen, "field --ctx-log: %s", e2);
        sglog_free(&g);
        return -1;
    }
    static double sum[PM_CTX_BS_MAX];
    static size_t n[PM_CTX_BS_MAX];
    memset(sum, 0, sizeof sum);
    memset(n, 0, sizeof n);
    double all = 0;
    size_t nall = 0;
    for (size_t i = 0; i < g.n; i++) {
        const sglog_interval *x = &g.iv[i];
        if (x->running_req < 1 || x->kv_tokens < 0)
            continue;
        double per = x->kv_tokens / x->running_req;
        all += per;
        nall++;
        if (x->running_req < PM_CTX_BS_MAX) {
            sum[x->running_req] += per;
            n[x->running_req]++;
        }
    }
    sglog_free(&g);
    if (!nall) {
        snprintf(err, errlen, "field --ctx-log: %s: no Decode batch line with #token and "
                 "#running-req", path);
        return -1;
    }
    for (int b = 0; b < PM_CTX_BS_MAX; b++)
        pm->ctx_log_bs[b] = n[b] ? sum[b] / (double)n[b] : 0;
    pm->ctx_log_mean = all / (double)nall;
    snprintf(pm->ctx_log_source, sizeof pm->ctx_log_source, "%.150s (%zu intervals)", path, nall);
    return 0;
}

/* ---- the graph launch cycle (no annotations) --------------------------------------------- */

typedef struct {
    pm_out      o;
    const phasemap *pm;
    pm_shape    sh;
    int         bs, rows;
    double      ctx;
} pm_cyc;

static int pm_cycle_emit(void *user, int phase, int graph, int64_t s, int64_t e, int64_t thread)
{
    pm_cyc *c = user;
    ptrace_range r = {s, e, "", "", thread, 1, 0, 0, 0};
    int rows = graph ? c->rows : c->bs;      /* eager work runs over the real rows, as SGLang's */
    return pm_emit(&c->o, &r, phase, pm_tokens(phase, rows, &c->sh), c->bs, rows, c->ctx,
                   graph, &c->sh, 0);
}

static int pm_cycle(const phasemap *pm, fit_trace *t, pm_stats *st, char *err, size_t errlen)
{
    const gc_order *od = &pm->cyc_order;
    const gc_shape *gs = &pm->cyc_shape;
    st->profile = "cycle";
    pm_cyc c;
    memset(&c, 0, sizeof c);
    c.pm = pm;
    c.sh = pm->shape;
    if (!pm->shp_on || gs->rows < 1) {
        snprintf(err, errlen, "%s: field --shape: %s: phases from the graph launch cycle (--graph-cycle "
                 "%s) need the configuration the trace ran: --shape [TRACE:]rows=R[,steps=S][,topk=K]"
                 "[,draft_tokens=T][,ctx=C]", t->file, pm->shp_on ? "rows: missing" : "missing",
                 od->text);
        return -1;
    }
    if (gs->steps >= 0) {
        c.sh.known = 1;
        c.sh.steps = gs->steps;
        c.sh.topk = gs->topk >= 1 ? gs->topk : 1;
        c.sh.draft_tokens = gs->draft_tokens >= 1 ? gs->draft_tokens :
                            c.sh.topk == 1 ? gs->steps + 1 : -1;
        snprintf(c.sh.source, sizeof c.sh.source, "--shape %.200s", gs->text);
        if (c.sh.draft_tokens < 1) {
            snprintf(err, errlen, "%s: field --shape: value %s: draft_tokens: missing: with topk > 1 "
                     "the verify width is not steps+1", t->file, gs->text);
            return -1;
        }
    } else if (gs->topk >= 1 || gs->draft_tokens >= 1) {
        snprintf(err, errlen, "%s: field --shape: value %s: steps: missing: topk= and draft_tokens= "
                 "need steps=", t->file, gs->text);
        return -1;
    }
    for (int k = 0; k < od->npos; k++)
        for (int h = 0; h < 2; h++) {
            int ph = h ? od->pos[k].tail : od->pos[k].phase;
            if (ph >= 0 && pm_tokens(ph, 1, &c.sh) < 0) {
                snprintf(err, errlen, "%s: field --shape: value %s: steps: missing: phase %s needs "
                         "the speculative shape (steps=S, or a server_args.json beside the trace, or "
                         "--spec-shape)", t->file, gs->text, wm_phase_name[ph]);
                return -1;
            }
        }
    int graph;
    c.bs = gs->rows;
    c.rows = c.sh.ngraph_bs && c.sh.cuda_graph ? phasemap_pad(&c.sh, c.bs, &graph) : c.bs;
    if (gs->ctx_per_row >= 0) {
        c.ctx = gs->ctx_per_row * c.bs;
        st->ctx_from = 2;
    } else {
        c.ctx = phasemap_ctx(pm, c.bs, &st->ctx_from);
    }
    for (size_t i = 0; i < t->nrng; i++)
        st->ignored += *t->rng[i].domain == 0;
    if (gcycle_apply(t, od, pm_cycle_emit, &c, &st->cycle, err, errlen)) {
        if (!err[0])
            snprintf(err, errlen, "%s: out of memory", t->file);
        for (size_t i = 0; i < c.o.n; i++)
            free(c.o.names[i]);
        free(c.o.names);
        free(c.o.r);
        return -1;
    }
    const gc_stats *g = &st->cycle;
    st->instances = g->instances;
    memcpy(st->per_phase, g->per_phase, sizeof st->per_phase);
    int k = snprintf(st->note, sizeof st->note, "graph launch cycle %s: %zu launches, period %d (%s",
                     od->text, g->launches, g->period, g->by_exec ? "graph_exec_id" : "kernel signatures");
    for (int q = 0; q < g->period && k < (int)sizeof st->note - 40; q++)
        k += snprintf(st->note + k, sizeof st->note - (size_t)k, " %u", g->cycle[q]);
    snprintf(st->note + k, sizeof st->note - (size_t)k, "), turned %s; %zu out of the cycle, %zu other "
             "executables at its positions, %zu graph launches on other threads, %zu calls between "
             "phases; rows %d (batch %d); %zu spans ignored", g->aligned_by_wait ? "by the host's wait" :
             "from the first launch", g->out_of_cycle, g->buckets, g->other_thread, g->between, c.rows,
             c.bs, st->ignored);
    if (g->instances == 0) {
        snprintf(err, errlen, "%s: field cudaGraphLaunch: value %zu launches: no graph launch placed in "
                 "the cycle (%zu out of it)", t->file, g->launches, g->out_of_cycle);
        free(c.o.names);
        free(c.o.r);
        return -1;
    }
    if (pm_commit(t, &c.o)) {
        snprintf(err, errlen, "%s: out of memory", t->file);
        return -1;
    }
    return 0;
}

/* ---- apply ---------------------------------------------------------------------------------- */

static int pm_looks_sglang(const fit_trace *t)
{
    for (size_t i = 0; i < t->nrng; i++) {
        const char *n = t->rng[i].name;
        if (*t->rng[i].domain)
            continue;
        if (!strncmp(n, "step[", 5) || sg_stage_phase(n) >= 0)
            return 1;
    }
    return 0;
}

int phasemap_apply(const phasemap *pm, fit_trace *t, pm_stats *stp, char *err, size_t errlen)
{
    pm_stats dummy;
    pm_stats *st = stp ? stp : &dummy;
    memset(st, 0, sizeof *st);
    for (size_t i = 0; i < t->nrng; i++)
        st->spans += *t->rng[i].domain == 0;
    if (pm->cyc_on)
        return pm_cycle(pm, t, st, err, errlen);
    pm_profile prof = pm->profile;
    if (prof == PM_AUTO)
        prof = pm_looks_sglang(t) ? PM_SGLANG : PM_SPECPROF;
    st->profile = prof == PM_SGLANG ? "sglang" : prof == PM_MAP ? "map" : "specprof";
    int rc = 0;
    if (prof == PM_SPECPROF) {
        rc = pm_specprof(t, st);
    } else {
        pm_out o = {0};
        rc = prof == PM_SGLANG ? pm_sglang(pm, t, st, &o, err, errlen)
                               : pm_map(pm, t, st, &o, err, errlen);
        if (rc == 0 && st->instances > 0) {
            if (pm_commit(t, &o)) {
                snprintf(err, errlen, "%s: out of memory", t->file);
                return -1;
            }
        } else {
            for (size_t i = 0; i < o.n; i++)
                free(o.names[i]);
            free(o.names);
            free(o.r);
        }
    }
    if (rc)
        return -1;
    if (st->instances == 0) {
        if (st->spans == 0)
            snprintf(err, errlen, "%s: field ranges: value 0: no annotation spans (NVTX ranges or "
                     "user_annotation) name the phases; record SGLang with its profiler (it "
                     "emits record_function spans), or name them with --phase-map", t->file);
        else if (prof == PM_SGLANG && st->prefill_steps > 0 && st->prefill_steps == st->ignored)
            /* profile_by_stage writes a trace per stage, suffix f"-{stage.name}" (EXTEND,
             * DECODE: managers/scheduler_profiler_mixin.py, utils/profile_utils.py
             * _trace_filename) or f"-{stage}" (prefill, decode: the ProfileManager of
             * utils/profile_utils.py): the prefill one holds no decode */
            snprintf(err, errlen, "%s: field name: only prefill forward spans (%zu, e.g. %s): a "
                     "prefill-stage trace (SGLang's profile_by_stage writes {id}-TP-N-EXTEND or "
                     "-prefill beside -DECODE or -decode): give the decode-stage trace", t->file,
                     st->prefill_steps, st->ignored_names);
        else
            snprintf(err, errlen, "%s: field name: no span names a phase under profile %s (%zu "
                     "spans, e.g. %s): give --profile sglang|specprof or a --phase-map", t->file,
                     st->profile, st->spans, st->ignored_names[0] ? st->ignored_names : "(none)");
        return -1;
    }
    return 0;
}

/* ---- the CLI options ------------------------------------------------------------------------ */

const char phasemap_options_help[] =
    "      --profile P       how spans name phases: auto (default), specprof, sglang\n"
    "      --phase-map M     a file or inline rules PHASE=PATTERN;... (docs/importers.md)\n"
    "      --server-args F   SGLang's server_args.json (default: beside each trace, or its\n"
    "                        parent directory)\n"
    "      --spec-shape S,K,D  speculative_num_steps, _eagle_topk, _num_draft_tokens\n"
    "      --cuda-graph-bs L captured batch sizes (1,2,4,8 | max:N | off) for padded rows\n"
    "      --ctx-log LOG     KV tokens per row where spans carry none (g_sk=): the server log's\n"
    "                        #token / #running-req at each batch size (docs/sglang.md)\n"
    "      --ctx N           KV tokens per row where neither spans nor a log give it\n"
    "      --graph-cycle [TRACE:]ORDER  no annotations: phases from the CUDA-graph launch\n"
    "                        cycle, ORDER the graph launches' phases, PHASE+EAGER for the eager\n"
    "                        work after one (draft,verify+accept,extend | decode+sample)\n"
    "      --shape [TRACE:]rows=R[,steps=S][,topk=K][,draft_tokens=T][,ctx=C]  that trace's\n"
    "                        configuration (C: KV tokens per row); TRACE: for one trace only\n";

int phasemap_option(phasemap *pm, const char *name, const char *v, char *err, size_t errlen)
{
    if (!strcmp(name, "profile"))
        return phasemap_set_profile(pm, v, err, errlen) ? -1 : 1;
    if (!strcmp(name, "phase-map"))
        return phasemap_load_map(pm, v, err, errlen) ? -1 : 1;
    if (!strcmp(name, "server-args")) {
        char e2[1024];
        int keep_graph = pm->shape.ngraph_bs;
        pm_shape s;
        if (phasemap_shape_load(&s, v, e2, sizeof e2)) {
            snprintf(err, errlen, "field --server-args: %s", e2);
            return -1;
        }
        if (keep_graph) {   /* a --cuda-graph-bs given before wins */
            s.ngraph_bs = pm->shape.ngraph_bs;
            memcpy(s.graph_bs, pm->shape.graph_bs, sizeof s.graph_bs);
            s.cuda_graph = pm->shape.cuda_graph;
        }
        pm->shape = s;
        pm->shape_given = 1;
        return 1;
    }
    if (!strcmp(name, "spec-shape")) {
        pm->shape_given = 1;
        return phasemap_shape_flag(&pm->shape, v, err, errlen) ? -1 : 1;
    }
    if (!strcmp(name, "cuda-graph-bs"))
        return phasemap_graph_flag(&pm->shape, v, err, errlen) ? -1 : 1;
    if (!strcmp(name, "ctx-log"))
        return pm_ctx_log(pm, v, err, errlen) ? -1 : 1;
    if (!strcmp(name, "graph-cycle") || !strcmp(name, "shape")) {
        int cyc = name[0] == 'g';
        int *n = cyc ? &pm->ncyc : &pm->nshp;
        if (*n >= PM_SEL_MAX) {
            snprintf(err, errlen, "field --%s: more than %d given", name, PM_SEL_MAX);
            return -1;
        }
        pm_sel *x = cyc ? &pm->cyc[*n] : &pm->shp[*n];
        memset(x, 0, sizeof *x);
        const char *colon = strrchr(v, ':');
        if (colon) {
            if ((size_t)(colon - v) >= sizeof x->sel || colon == v) {
                snprintf(err, errlen, "field --%s: value %s: the trace before ':' is empty or "
                         "longer than %zu bytes", name, v, sizeof x->sel - 1);
                return -1;
            }
            memcpy(x->sel, v, (size_t)(colon - v));
        }
        const char *val = colon ? colon + 1 : v;
        if (cyc ? gcycle_order_parse(&x->order, val, err, errlen)
                : gcycle_shape_parse(&x->shape, val, err, errlen))
            return -1;
        (*n)++;
        return 1;
    }
    if (!strcmp(name, "ctx")) {
        char *e;
        double x = strtod(v, &e);
        if (e == v || *e || !(x >= 0) || x > 1e9) {
            snprintf(err, errlen, "field --ctx: value %s: expected KV tokens per row >= 0", v);
            return -1;
        }
        pm->ctx_per_row = x;
        snprintf(pm->ctx_source, sizeof pm->ctx_source, "--ctx %s", v);
        return 1;
    }
    return 0;
}

/* The option of sel[0..n) that names path (the whole path or its last components), else
 * the one naming no trace; NULL. */
static const pm_sel *pm_sel_for(const pm_sel *sel, int n, const char *path)
{
    const pm_sel *dflt = NULL;
    size_t lp = strlen(path);
    for (int i = 0; i < n; i++) {
        size_t ls = strlen(sel[i].sel);
        if (ls == 0) {
            if (!dflt)
                dflt = &sel[i];
            continue;
        }
        if (ls <= lp && !strcmp(path + lp - ls, sel[i].sel) && (ls == lp || path[lp - ls - 1] == '/'))
            return &sel[i];
    }
    return dflt;
}

int phasemap_shape_for(phasemap *pm, const char *trace_path, char *err, size_t errlen)
{
    const pm_sel *c = pm_sel_for(pm->cyc, pm->ncyc, trace_path);
    const pm_sel *w = pm_sel_for(pm->shp, pm->nshp, trace_path);
    pm->cyc_on = c != NULL;
    pm->shp_on = w != NULL;
    if (c)
        pm->cyc_order = c->order;
    if (w)
        pm->cyc_shape = w->shape;
    if (pm->shape_given || pm->profile == PM_SPECPROF)
        return 0;
    pm_shape s;
    char found[700];
    int r = phasemap_shape_find(&s, trace_path, found, sizeof found, err, errlen);
    if (r < 0)
        return -1;
    if (r == 1) {
        if (pm->shape.ngraph_bs && !s.ngraph_bs) {
            s.ngraph_bs = pm->shape.ngraph_bs;
            memcpy(s.graph_bs, pm->shape.graph_bs, sizeof s.graph_bs);
        }
        if (pm->shape.known && !s.known) {   /* a map's own steps=/topk= */
            s.known = 1;
            s.steps = pm->shape.steps;
            s.topk = pm->shape.topk;
            s.draft_tokens = pm->shape.draft_tokens;
        }
        pm->shape = s;
    }
    return 0;
}
