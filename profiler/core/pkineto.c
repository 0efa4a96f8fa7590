/* pkineto.c: Kineto Chrome-trace JSON -> specprof's typed records (pkineto.h). The document
 * is split by pjstream (one event's text at a time) and each event is parsed by pjson into
 * a scratch arena that is reset per event, so memory does not grow with the file. Field
 * names follow pytorch/kineto libkineto/src/output_json.cpp and CuptiActivity.h (kernel
 * args "correlation", "stream", "grid", ...; NCCL metadata "Collective name", "dtype",
 * "In msg nelems", "Group size"; "graph id"/"graph node id" from CUDA 12 builds). */
#include "pkineto.h"
#include "pjson.h"
#include "pjstream.h"
#include "bounds.h"
#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An event or member longer than this is not a trace event (a kernel name is cut at a few
 * KB by Kineto; Python stacks with_stack=True reach tens of KB). */
#define PKINETO_MAX_VALUE_BYTES ((size_t)64 << 20)
/* a byte or element count of one copy or collective: 2^50 (a petabyte) */
#define PK_COUNT_MAX 1125899906842624.0

typedef struct {
    const pkineto_cb *cb;
    pkineto_info *info;
    pjson_arena *a;
    int seen_event;
    int64_t base_ns;
    long dev_kernels[PKINETO_MAX_DEVICES];   /* kernels per device id (ids < 16) */
    char ranks[PKINETO_MAX_RANKS][48];       /* the rank labels of a merged trace met so far
                                                (ranks[0]: the one read) */
    int stop_err;
    char *err;
    size_t errlen;
} pk;

static void pk_copy(char *dst, size_t cap, const char *src)
{
    snprintf(dst, cap, "%s", src ? src : "");
}

int pkineto_dtype(const char *t, const char **name)
{
    static const struct { const char *torch, *name; int bytes; } map[] = {
        /* c10 ScalarType names (c10/core/ScalarType.h) -> specprof's (traces/FORMAT.md) */
        {"Float", "float32", 4}, {"Half", "float16", 2}, {"BFloat16", "bfloat16", 2},
        {"Double", "float64", 8}, {"Int", "int32", 4}, {"Long", "int64", 8},
        {"Byte", "uint8", 1}, {"Char", "int8", 1}, {"Short", "int16", 2}, {"Bool", "uint8", 1},
        {"Float8_e4m3fn", "fp8e4m3", 1}, {"Float8_e5m2", "fp8e5m2", 1},
        {"UInt32", "uint32", 4}, {"UInt64", "uint64", 8},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (t && strcmp(t, map[i].torch) == 0) {
            *name = map[i].name;
            return map[i].bytes;
        }
    *name = "";
    return 0;
}

const char *pkineto_op(const char *c, char *buf, size_t cap)
{
    char n[64];
    size_t k = 0;
    for (; c && *c && k < sizeof n - 1; c++)   /* lower case, no '_' */
        if (*c != '_')
            n[k++] = (char)tolower((unsigned char)*c);
    n[k] = 0;
    const char *op = strstr(n, "allreduce") ? "allreduce" :
                     strstr(n, "reducescatter") ? "reducescatter" :
                     strstr(n, "allgather") ? "allgather" :
                     strstr(n, "alltoall") ? "alltoall" :
                     strstr(n, "broadcast") ? "broadcast" :
                     strcmp(n, "reduce") == 0 ? "reduce" :
                     strncmp(n, "send", 4) == 0 ? "send" :
                     strncmp(n, "recv", 4) == 0 ? "recv" : n;
    snprintf(buf, cap, "%s", op);
    return buf;
}

int pkineto_probe(const char *head, size_t len)
{
    size_t i = len >= 3 && memcmp(head, "\xef\xbb\xbf", 3) == 0 ? 3 : 0;   /* a UTF-8 BOM (pjstream) */
    while (i < len && (head[i] == ' ' || head[i] == '\n' || head[i] == '\r' || head[i] == '\t'))
        i++;
    if (i >= len || head[i] != '{')
        return 0;
    static const char *keys[] = {"\"traceEvents\"", "\"schemaVersion\"", "\"deviceProperties\"",
                                 "\"displayTimeUnit\""};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
        if (memmem(head + i, len - i, keys[k], strlen(keys[k])))
            return 1;
    return 0;
}

/* A time in us as ns (x1000, exact to the ns). Kineto writes numbers (output_json.cpp fmtTs);
 * other writers of the format quote them (torch_npu's trace_view.json writes "ts" as a
 * string, Ascend/pytorch issue 133): a string holding a number is read as that number.
 * Returns 0 and *ns, or -1 when the value is missing or not a number. */
static int pk_ns(pjson_arena *a, const pjson *v, int64_t *ns)
{
    if (v && v->type == PJSON_STR && v->len > 0 && v->len < 64) {
        pjson *n = NULL;
        char perr[64];
        if (pjson_parse(a, v->str, v->len, 0, &n, perr, sizeof perr) == 0 && n->type == PJSON_NUM)
            v = n;
    }
    if (!v || v->type != PJSON_NUM)
        return -1;
    *ns = v->milli;
    return 0;
}

static int64_t pk_int(const pjson *o, const char *k, int64_t d)
{
    const pjson *v = pjson_get(o, k);
    if (v && v->type == PJSON_STR) {
        char *e;
        long long x = strtoll(v->str, &e, 10);
        return e != v->str ? x : d;
    }
    return pjson_get_int(o, k, d);
}

/* A count or id among an activity's args, checked: 0 where absent; -1 where it is negative,
 * not whole or above hi (a correlation id past 2^32 saturated, and every record shared one
 * id; bytes of 1e30 went through a cast): the event is then skipped, the first one named. */
static int pk_arg_ok(pk *P, const pjson *a, const char *cat, const char *name, const char *key, double hi)
{
    const pjson *v = pjson_get(a, key);
    double x = 0;
    int ok = 1;
    if (!v || v->type == PJSON_NULL)
        return 0;
    if (v->type == PJSON_NUM)
        x = v->num;
    else if (v->type == PJSON_STR) {
        char *e;
        x = strtod(v->str, &e);
        ok = e != v->str;
    } else
        ok = 0;
    ok = ok && bnd_ok(&(bnd_kind){"a count", "", 0, hi, 1}, x);
    if (ok)
        return 0;
    pkineto_info *I = P->info;
    if (!I->bad_events) {
        char val[48];
        if (pjson_write(v, val, sizeof val) < 0)
            snprintf(val, sizeof val, "(too long)");
        snprintf(I->first_bad, sizeof I->first_bad, "event %zu (cat %.24s, name \"%.40s\"): field "
                 "args.%s: value %s: not a whole number in [0, %.0f]", I->events, cat, name, key, val, hi);
    }
    I->bad_events++;
    return -1;
}

static void pk_int3(const pjson *arr, int32_t out[3])
{
    for (int i = 0; i < 3; i++) {
        const pjson *v = pjson_at(arr, (size_t)i);
        out[i] = v && v->type == PJSON_NUM ? (int32_t)v->i : 0;
    }
}

/* The launch, copy, set and blocking synchronize calls, as specprof records them
 * (profiler/inject/pinject.c pinj_classify; traces/FORMAT.md, api), and their HIP names in
 * ROCm traces (Kineto's roctracer/rocprofiler logger writes them with cat cuda_runtime:
 * RocprofActivity_inl.h flowStart lists hipLaunchKernel, hipExtLaunchKernel,
 * hipModuleLaunchKernel, hipExtModuleLaunchKernel, hipHccModuleLaunchKernel,
 * hipLaunchCooperativeKernel, hipMemcpy*, hipGraphLaunch). The version suffix "_v7000" is
 * dropped from the name into buf. */
static int pk_keep_api(const char *name, char *buf, size_t cap)
{
    static const char *pre[] = {"cudaLaunch", "cudaGraphLaunch", "cudaMemcpy", "cudaMemset",
                                "cuLaunch", "cuGraphLaunch", "cuMemcpy", "cuMemset",
                                "cudaStreamSynchronize", "cudaDeviceSynchronize",
                                "cudaEventSynchronize", "cuStreamSynchronize", "cuCtxSynchronize",
                                "cuEventSynchronize",
                                "hipLaunch", "hipExtLaunch", "hipModuleLaunch", "hipExtModuleLaunch",
                                "hipHccModuleLaunch", "hipGraphLaunch", "hipMemcpy", "hipMemset",
                                "hipStreamSynchronize", "hipDeviceSynchronize", "hipEventSynchronize"};
    int keep = 0;
    for (size_t i = 0; i < sizeof pre / sizeof pre[0] && !keep; i++)
        keep = strncmp(name, pre[i], strlen(pre[i])) == 0;
    if (!keep)
        return 0;
    snprintf(buf, cap, "%s", name);
    char *v = strstr(buf, "_v");
    if (v && v[2] >= '0' && v[2] <= '9') {
        char *d = v + 2;
        while (*d >= '0' && *d <= '9')
            d++;
        if (*d == 0)
            *v = 0;
    }
    return 1;
}

static void pk_nccl(pk *P, const pjson *a, ptrace_nccl *n, int *has)
{
    const char *coll = pjson_get_str(a, "Collective name", NULL);
    const pjson *in = pjson_get(a, "In msg nelems");
    *has = 0;
    if (!coll || !in)
        return;
    memset(n, 0, sizeof *n);
    pkineto_op(coll, n->op, sizeof n->op);
    const char *dt;
    int eb = pkineto_dtype(pjson_get_str(a, "dtype", ""), &dt);
    pk_copy(n->dtype, sizeof n->dtype, *dt ? dt : pjson_get_str(a, "dtype", ""));
    /* NCCL's count: the per-rank receive count of a reduce-scatter (its output), the send
     * count of an all-gather (its input), the buffer of the others (traces/FORMAT.md) */
    int64_t cnt = strcmp(n->op, "reducescatter") == 0 ? pk_int(a, "Out msg nelems", 0)
                                                       : pk_int(a, "In msg nelems", 0);
    n->count = cnt > 0 ? (uint64_t)cnt : 0;
    n->bytes = n->count * (uint64_t)eb;
    n->comm_size = (int32_t)pk_int(a, "Group size", 0);
    n->rank = P->info->has_dist_info ? P->info->hdr.rank : 0;
    n->root_or_peer = -1;
    n->group_ops = 1;
    n->seq = (uint32_t)pk_int(a, "Seq", 0);
    *has = 1;
    P->info->nccl_kernels++;
}

static int pk_is(const char *cat, const char *a, const char *b)
{
    return strcmp(cat, a) == 0 || (b && strcasecmp(cat, b) == 0);
}

/* The value of "key": "..." when it lies in the first bytes of an event (Kineto writes ph
 * and cat first), into buf; 0 when not found there (the caller parses the event). */
static int pk_peek(const char *text, size_t len, const char *key, char *buf, size_t cap)
{
    size_t lim = len < 160 ? len : 160, kl = strlen(key);
    const char *k = memmem(text, lim, key, kl);
    if (!k)
        return 0;
    const char *p = k + kl, *end = text + lim;
    while (p < end && (*p == ' ' || *p == ':'))
        p++;
    if (p >= end || *p != '"')
        return 0;
    p++;
    size_t n = 0;
    while (p < end && *p != '"' && *p != '\\' && n + 1 < cap)
        buf[n++] = *p++;
    if (p >= end || *p != '"')
        return 0;
    buf[n] = 0;
    return 1;
}

/* Times (ns) an event may carry, absolute or relative (bounds.h: a CUPTI timestamp); with
 * a base time of at most the same, no sum of two overflows. */
#define PK_TIME_MAX ((int64_t)BND_CLOCK_NS_MAX)
static int pk_time_ok(int64_t t) { return t >= -PK_TIME_MAX && t <= PK_TIME_MAX; }

/* The integer (int64, exact) or x1000 value (milli: us -> ns) of "key": in an event's text,
 * without parsing the event: for the cpu_op events whose times only are needed. Reads the
 * plain decimal Kineto writes (fmtTs: "%.3f"), quoted or not; a time through pjson_dec_milli,
 * the parse's own rounding of a decimal (digits below the ns round to the nearest ns, halves
 * away from zero: they were dropped here while the parse rounded them, and a time read here
 * and the same time read by the parse differed by up to ~125 ns). 1 and *out; 0 when the key
 * is not there; -1 when its value is not such a decimal (an exponent, 1e-05 or 1.5e+03, which
 * other writers of the format emit and which was read as 1 and 1.5; no digits; an integer
 * with decimals; past the times bounds.h allows): the caller parses the whole event. */
static int pk_peek_num(const char *text, size_t len, const char *key, int milli, int64_t *out)
{
    size_t kl = strlen(key);
    const char *k = memmem(text, len, key, kl), *end = text + len;
    if (!k)
        return 0;
    const char *p = k + kl;
    while (p < end && (*p == ' ' || *p == ':'))
        p++;
    if (p < end && *p == '"')   /* a number written as a string (pk_ns) */
        p++;
    int64_t v = 0;
    if (milli) {
        size_t used;
        if (pjson_dec_milli(p, (size_t)(end - p), &v, &used) != 1)
            return -1;
        p += used;
    } else {
        int neg = p < end && *p == '-', nd = 0;
        p += neg;
        for (; p < end && *p >= '0' && *p <= '9'; p++, nd++) {
            if (v > PK_TIME_MAX / 10)
                return -1;
            v = v * 10 + (*p - '0');
        }
        if (!nd)
            return -1;
        v = neg ? -v : v;
    }
    if (p < end && (*p == 'e' || *p == 'E' || *p == '.' || *p == '+' || *p == '-'))
        return -1;
    if (v > PK_TIME_MAX || v < -PK_TIME_MAX)   /* past any time bounds.h allows */
        return -1;
    *out = v;
    return 1;
}

/* pk_host's answer for an event whose times it cannot read from the text alone */
#define PK_HOST_PARSE (-1)

/* A cpu_op's thread and times from its text, handed to the host callback: its return, or
 * PK_HOST_PARSE when ts or dur is missing or not a plain decimal within bounds.h's range (the
 * full parse reads it as the other events, or counts and names it as unreadable; such an event
 * was dropped in silence, or read at the wrong time). */
static int pk_host(pk *P, const char *text, size_t len)
{
    int64_t tid = 0, ts = 0, dur = 0;
    if (pk_peek_num(text, len, "\"ts\"", 1, &ts) != 1 || pk_peek_num(text, len, "\"dur\"", 1, &dur) != 1)
        return PK_HOST_PARSE;
    if (!pk_time_ok(ts) || !pk_time_ok(P->base_ns + ts) || dur < 0 || dur > (int64_t)(BND_TS_US_MAX * 1000))
        return PK_HOST_PARSE;
    if (!P->cb->host)
        return 0;
    if (pk_peek_num(text, len, "\"tid\"", 0, &tid) < 0)   /* 12.5 was thread 125: the parse's */
        return PK_HOST_PARSE;
    return P->cb->host(P->cb->user, tid, P->base_ns + ts, P->base_ns + ts + dur);
}

/* 1 when the event belongs to another rank than the one read: in a merged trace the pid is
 * a string "[TP00-DP01] 4242" (profile_merger.py _create_rank_label, "[Unknown]" without
 * ranks in the file name); numeric pids (a one-rank trace) are never skipped. */
static int pk_other_rank(pk *P, const char *text, size_t len)
{
    pkineto_info *I = P->info;
    const char *k = memmem(text, len, "\"pid\"", 5), *end = text + len;
    if (!k)
        return 0;
    const char *p = k + 5;
    while (p < end && (*p == ' ' || *p == ':'))
        p++;
    if (end - p < 3 || p[0] != '"' || p[1] != '[')
        return 0;
    const char *close = memchr(p + 1, ']', (size_t)(end - p - 1));
    if (!close || close - p > 46)
        return 0;
    char label[48];
    snprintf(label, sizeof label, "%.*s", (int)(close - p - 2), p + 2);   /* "TP00-DP01" */
    int i = 0;
    while (i < I->merged_ranks && i < PKINETO_MAX_RANKS && strcmp(P->ranks[i], label))
        i++;
    if (i == I->merged_ranks) {
        if (i < PKINETO_MAX_RANKS)
            pk_copy(P->ranks[i], sizeof P->ranks[i], label);
        I->merged_ranks++;
        if (i == 0)
            pk_copy(I->merged_rank, sizeof I->merged_rank, label);
    }
    if (i == 0)
        return 0;
    I->merged_skipped++;
    return 1;
}

static int pk_numch(char c)
{
    return (c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-';
}

/* Copies an event's text with the non-JSON numbers inf, -inf, nan, -nan, NaN, Infinity and
 * -Infinity, and numbers past a double's range (1e400: as strtod reads them, inf), outside
 * strings replaced by null, into *out (malloc'ed, caller frees). Returns how many were
 * replaced (0: *out NULL), -1 out of memory. */
static int pk_nonfinite_to_null(const char *t, size_t len, char **out, size_t *olen)
{
    static const char *tok[] = {"-Infinity", "Infinity", "-inf", "inf", "-nan", "nan", "-NaN", "NaN"};
    char *o = NULL;
    size_t n = 0;
    int reps = 0, instr = 0;
    *out = NULL;
    for (size_t i = 0; i < len; i++) {
        char c = t[i];
        if (instr) {
            if (c == '\\' && i + 1 < len) {
                if (o) { o[n++] = c; o[n++] = t[i + 1]; }
                i++;
                continue;
            }
            instr = c != '"';
        } else if (c == '"') {
            instr = 1;
        } else if (c == '-' || c == 'i' || c == 'n' || c == 'N' || c == 'I' || (c >= '0' && c <= '9')) {
            size_t j = i, kl = 0;     /* a value starts after ':', ',' or '[' and blanks */
            while (j > 0 && (t[j - 1] == ' ' || t[j - 1] == '\n' || t[j - 1] == '\t' || t[j - 1] == '\r'))
                j--;
            int at_value = j > 0 && (t[j - 1] == ':' || t[j - 1] == ',' || t[j - 1] == '[');
            for (size_t k = 0; at_value && !kl && k < sizeof tok / sizeof tok[0]; k++) {
                size_t l = strlen(tok[k]);
                if (i + l <= len && memcmp(t + i, tok[k], l) == 0 &&
                    (i + l == len || !isalnum((unsigned char)t[i + l])))
                    kl = l;
            }
            if (at_value && !kl) {
                char num[64];
                size_t e = i;
                while (e < len && pk_numch(t[e]))
                    e++;
                if (e > i && e - i < sizeof num) {
                    memcpy(num, t + i, e - i);
                    num[e - i] = 0;
                    kl = isinf(strtod(num, NULL)) ? e - i : 0;
                }
            }
            if (kl) {
                if (!o) {
                    o = malloc(len * 2 + 8);
                    if (!o)
                        return -1;
                    memcpy(o, t, i);
                    n = i;
                }
                memcpy(o + n, "null", 4);
                n += 4;
                i += kl - 1;
                reps++;
                goto next;
            }
        }
        if (o)
            o[n++] = c;
next:;
    }
    *out = o;
    *olen = n;
    return reps;
}

/* The first bytes of an event on one line, for a message (static buffer). */
static const char *pk_squash(const char *t, size_t len)
{
    static char b[64];
    size_t n = 0;
    for (size_t i = 0; i < len && n + 1 < sizeof b; i++)
        if (t[i] != '\n' && t[i] != '\r' && !(t[i] == ' ' && n && b[n - 1] == ' '))
            b[n++] = t[i] == '"' ? '\'' : t[i] == '\t' ? ' ' : t[i];
    b[n] = 0;
    return b;
}

static int pk_event(void *user, const char *text, size_t len)
{
    pk *P = user;
    pkineto_info *I = P->info;
    const pkineto_cb *cb = P->cb;
    I->events++;
    P->seen_event = 1;
    if (pk_other_rank(P, text, len))
        return 0;
    /* the kinds the fit does not read (an eager PyTorch loop's trace is mostly cpu_op and
     * flows) are counted from the first bytes, not parsed */
    char qph[8], qcat[24];
    if (pk_peek(text, len, "\"ph\"", qph, sizeof qph)) {
        if (qph[0] == 's' || qph[0] == 'f' || qph[0] == 't') {
            I->flows++;
            return 0;
        }
        if (qph[0] == 'X' && pk_peek(text, len, "\"cat\"", qcat, sizeof qcat)) {
            if (!strcmp(qcat, "cpu_op") || !strcmp(qcat, "Operator")) {
                int rc = pk_host(P, text, len);
                if (rc != PK_HOST_PARSE) {
                    I->cpu_ops++;
                    return rc;
                }
            }
            if (!strcmp(qcat, "python_function")) {   /* counted only: pkineto.h host */
                I->python_functions++;
                return 0;
            }
        }
    }
    pjson_arena_reset(P->a);
    pjson *ev = NULL;
    char perr[128];
    int prc = pjson_parse(P->a, text, len, 0, &ev, perr, sizeof perr);
    if (prc) {
        /* Kineto before pytorch/kineto#1455 (all of PyTorch 2.1..2.11) prints a kernel's
         * "blocks per SM" and "warps per SM" with fmt as bare inf when the device's SM count
         * is unknown (DeviceProperties.cpp blocksPerSm); Python's json.dump writes NaN and
         * Infinity. Such a value is read as null (no field the reader uses is one of them):
         * the event was dropped, and with it the kernel. */
        char *fixed = NULL;
        size_t flen = 0;
        if (pk_nonfinite_to_null(text, len, &fixed, &flen) > 0) {
            pjson_arena_reset(P->a);
            ev = NULL;
            prc = pjson_parse(P->a, fixed, flen, 0, &ev, perr, sizeof perr);
            if (prc == 0)
                I->nonfinite_events++;
        }
        free(fixed);
    }
    if (prc || ev->type != PJSON_OBJ) {
        if (!I->bad_events)
            snprintf(I->first_bad, sizeof I->first_bad, "event %zu (starting \"%.60s\"): %s", I->events,
                     pk_squash(text, len), ev && !prc ? "not an object" : perr);
        I->bad_events++;
        return 0;
    }
    const char *ph = pjson_get_str(ev, "ph", "");
    const char *cat = pjson_get_str(ev, "cat", "");
    const char *name = pjson_get_str(ev, "name", "");
    if (ph[0] == 'M') {
        I->metadata++;
        return 0;
    }
    if (ph[0] == 's' || ph[0] == 'f' || ph[0] == 't') {
        I->flows++;
        return 0;
    }
    if (ph[0] == 'i' || ph[0] == 'I') {
        if (strcmp(name, "Record Window End") == 0)
            I->window_end = 1;
        else
            I->other++;
        return 0;
    }
    if (ph[0] != 'X') {
        I->other++;
        return 0;
    }
    const pjson *a = pjson_get(ev, "args");
    int64_t ts = 0, d = 0;
    int ts_ok = pk_ns(P->a, pjson_get(ev, "ts"), &ts) == 0, d_ok = pk_ns(P->a, pjson_get(ev, "dur"), &d) == 0;
    ts_ok = ts_ok && pk_time_ok(ts) && pk_time_ok(P->base_ns + ts);
    d_ok = d_ok && d >= 0 && d <= (int64_t)(BND_TS_US_MAX * 1000);
    if (!ts_ok || !d_ok) {
        /* missing, not a number, or out of bounds.h's range (so that start + dur and every
         * difference downstream fit an int64): the event is skipped, the first one named */
        if (!I->bad_events) {
            const char *f = ts_ok ? "dur" : "ts";
            const pjson *v = pjson_get(ev, f);
            char val[48] = "missing";
            if (v && pjson_write(v, val, sizeof val) < 0)
                snprintf(val, sizeof val, "(too long)");
            snprintf(I->first_bad, sizeof I->first_bad, "event %zu (cat %.24s, name \"%.40s\"): field "
                     "%s: value %s: not a time (a number of us within +-4e18 ns; dur within [0, 1e13] "
                     "us)", I->events, cat, name, f, val);
        }
        I->bad_events++;
        return 0;
    }
    int64_t s = P->base_ns + ts;
    const pjson *pidv = pjson_get(ev, "pid"), *tidv = pjson_get(ev, "tid");
    int64_t pid = pidv && pidv->type == PJSON_NUM ? pidv->i : 0;
    int64_t tid = tidv && tidv->type == PJSON_NUM ? tidv->i : 0;
    int rc = 0;
    if (pk_is(cat, "kernel", "Kernel")) {
        if (pk_arg_ok(P, a, cat, name, "correlation", UINT32_MAX) || pk_arg_ok(P, a, cat, name, "In msg nelems", PK_COUNT_MAX) ||
            pk_arg_ok(P, a, cat, name, "Out msg nelems", PK_COUNT_MAX) || pk_arg_ok(P, a, cat, name, "Group size", 65536))
            return 0;
        ptrace_kernel k;
        memset(&k, 0, sizeof k);
        k.start_ns = s;
        k.end_ns = s + d;
        k.name = name;
        /* --enable-cuda-graph-attribution renames graph kernels "NAME [aten::mm, aten::add,
         * +2 more]" and adds args.cuda_graph_attribution (utils/profile_utils.py,
         * _annotate_trace_with_cuda_graph_attribution): the kernel keeps its own name, as its
         * eager launches and other captures have it */
        char kn[PKINETO_MAX_KERNEL_NAME];
        size_t nl = strlen(name);
        const char *cut = NULL;      /* the '[' that matches the closing ']' (ops may nest) */
        if (nl > 2 && name[nl - 1] == ']' && pjson_get(a, "cuda_graph_attribution")) {
            int depth = 0;
            for (const char *p = name + nl - 1; p >= name && !cut; p--) {
                depth += (*p == ']') - (*p == '[');
                if (depth == 0)
                    cut = p;
            }
        }
        if (cut && cut > name + 1 && cut[-1] == ' ' && nl < sizeof kn) {
            snprintf(kn, sizeof kn, "%.*s", (int)(cut - 1 - name), name);
            k.name = kn;
            I->attributed_kernels++;
        }
        k.corr = (uint32_t)pk_int(a, "correlation", 0);
        k.dev = (uint32_t)pk_int(a, "device", pid);
        k.stream = (uint32_t)pk_int(a, "stream", tid);
        pk_int3(pjson_get(a, "grid"), k.grid);
        pk_int3(pjson_get(a, "block"), k.block);
        k.smem_bytes = (int32_t)pk_int(a, "shared memory", 0);
        k.regs = (int32_t)pk_int(a, "registers per thread", 0);
        k.graph_id = (uint32_t)pk_int(a, "graph id", 0);
        k.graph_node_id = (uint64_t)pk_int(a, "graph node id", 0);
        k.nvtx = "";
        k.phase = "";
        pk_nccl(P, a, &k.nccl, &k.has_nccl);
        I->kernels++;
        I->graph_kernels += k.graph_id != 0;
        if (k.dev < PKINETO_MAX_DEVICES)
            P->dev_kernels[k.dev]++;
        if (cb->kernel)
            rc = cb->kernel(cb->user, &k);
    } else if (pk_is(cat, "gpu_memcpy", "Memcpy") || pk_is(cat, "gpu_memset", "Memset")) {
        if (pk_arg_ok(P, a, cat, name, "correlation", UINT32_MAX) || pk_arg_ok(P, a, cat, name, "bytes", PK_COUNT_MAX))
            return 0;
        ptrace_mem m;
        char kind[16] = "";
        memset(&m, 0, sizeof m);
        m.kind = pk_is(cat, "gpu_memset", "Memset") ? PTRACE_MEMSET : PTRACE_MEMCPY;
        m.start_ns = s;
        m.end_ns = s + d;
        if (m.kind == PTRACE_MEMCPY && strncmp(name, "Memcpy ", 7) == 0) {
            size_t n = strcspn(name + 7, " ");    /* "Memcpy DtoD (Device -> Device)" */
            if (n >= sizeof kind)
                n = sizeof kind - 1;
            memcpy(kind, name + 7, n);
            kind[n] = 0;
        }
        m.copy_kind = kind;
        m.bytes = (uint64_t)pk_int(a, "bytes", 0);
        m.corr = (uint32_t)pk_int(a, "correlation", 0);
        m.dev = (uint32_t)pk_int(a, "device", pid);
        m.stream = (uint32_t)pk_int(a, "stream", tid);
        m.graph_id = (uint32_t)pk_int(a, "graph id", 0);
        m.graph_node_id = (uint64_t)pk_int(a, "graph node id", 0);
        m.nvtx = "";
        m.phase = "";
        I->mems++;
        if (cb->mem)
            rc = cb->mem(cb->user, &m);
    } else if (pk_is(cat, "cuda_runtime", "Runtime") || pk_is(cat, "cuda_driver", "Driver")) {
        char nm[96];
        if (!I->hdr.pid_os)
            I->hdr.pid_os = pid;
        if (cb->host && cb->host(cb->user, tid, s, s + d))
            return 1;
        if (!pk_keep_api(name, nm, sizeof nm)) {
            I->apis_other++;
            return 0;
        }
        ptrace_api x;
        memset(&x, 0, sizeof x);
        x.start_ns = s;
        x.end_ns = s + d;
        x.name = nm;
        x.corr = (uint32_t)pk_int(a, "correlation", 0);
        x.cbid = (uint32_t)pk_int(a, "cbid", 0);
        x.domain_driver = pk_is(cat, "cuda_driver", "Driver");
        x.thread = tid;
        I->apis++;
        if (cb->api)
            rc = cb->api(cb->user, &x);
    } else if (pk_is(cat, "user_annotation", NULL) || pk_is(cat, "gpu_user_annotation", NULL)) {
        ptrace_range r;
        memset(&r, 0, sizeof r);
        int gpu = cat[0] == 'g';
        r.start_ns = s;
        r.end_ns = s + d;
        if (gpu && d >= 2) {   /* output_json.cpp widens GPU annotations by 1 ns each side */
            r.start_ns += 1;
            r.end_ns -= 1;
        }
        r.name = name;
        r.domain = gpu ? "gpu" : "";
        r.thread = tid;
        r.push_pop = 1;
        if (gpu) {
            I->gpu_ranges++;
            if (cb->gpu_range)
                rc = cb->gpu_range(cb->user, &r);
        } else {
            I->ranges++;
            if (cb->host && cb->host(cb->user, tid, s, s + d))
                return 1;
            if (cb->range)
                rc = cb->range(cb->user, &r);
        }
    } else if (pk_is(cat, "cpu_op", "Operator")) {
        I->cpu_ops++;
        if (cb->host)
            rc = cb->host(cb->user, tid, s, s + d);
    } else if (pk_is(cat, "python_function", NULL)) {
        I->python_functions++;
    } else {
        I->other++;
    }
    return rc;
}

static void pk_devices(pk *P, const pjson *arr)
{
    pkineto_info *I = P->info;
    for (size_t i = 0; arr && arr->type == PJSON_ARR && i < arr->len && I->ndev < PKINETO_MAX_DEVICES; i++) {
        const pjson *d = arr->items[i];
        if (d->type != PJSON_OBJ)
            continue;
        int k = I->ndev++;
        I->dev[k].id = (int)pk_int(d, "id", k);
        pk_copy(I->dev[k].name, sizeof I->dev[k].name, pjson_get_str(d, "name", ""));
        I->dev[k].mem_bytes = pk_int(d, "totalGlobalMem", 0);
        I->dev[k].cc_major = (int)pk_int(d, "computeMajor", 0);
        I->dev[k].cc_minor = (int)pk_int(d, "computeMinor", 0);
        I->dev[k].sms = (int)pk_int(d, "numSms", 0);
        I->dev[k].regs_per_sm = (int)pk_int(d, "regsPerMultiprocessor", 0);
        I->dev[k].smem_per_sm = (int)pk_int(d, "sharedMemPerMultiprocessor", 0);
        I->dev[k].max_threads_per_sm = (int)pk_int(d, "maxThreadsPerMultiprocessor", 0);
    }
}

static int pk_member(void *user, const char *key, const char *val, size_t len)
{
    pk *P = user;
    pkineto_info *I = P->info;
    int want = !strcmp(key, "deviceProperties") || !strcmp(key, "distributedInfo") ||
               !strcmp(key, "baseTimeNanoseconds") || !strcmp(key, "schemaVersion") ||
               !strcmp(key, "cupti_version") || !strcmp(key, "cuda_runtime_version") ||
               !strcmp(key, "cuda_driver_version");
    if (!want)
        return 0;
    pjson_arena_reset(P->a);
    pjson *v = NULL;
    char perr[128];
    if (pjson_parse(P->a, val, len, 0, &v, perr, sizeof perr)) {
        snprintf(P->err, P->errlen, "%s: member %s: not JSON: %s", "(kineto)", key, perr);
        P->stop_err = 1;
        return 1;
    }
    int64_t iv = v->type == PJSON_NUM ? v->i : v->type == PJSON_STR ? strtoll(v->str, NULL, 10) : 0;
    if (!strcmp(key, "deviceProperties"))
        pk_devices(P, v);
    else if (!strcmp(key, "distributedInfo")) {
        I->has_dist_info = 1;
        I->hdr.rank = (int)pk_int(v, "rank", 0);
        I->hdr.world_size = (int)pk_int(v, "world_size", 0);
    } else if (!strcmp(key, "baseTimeNanoseconds")) {
        char why[200];
        if (v->type == PJSON_NUM && bnd_check_i64(&bnd_clock_ns, v->i, "(kineto)", "baseTimeNanoseconds", why, sizeof why)) {
            snprintf(P->err, P->errlen, "%s", why);
            P->stop_err = 1;
            return 1;
        }
        /* ts of the events that follow are relative to it. Kineto wrote it after
         * traceEvents from pytorch/kineto#928 (May 2024) until #1054 moved it before them
         * (March 2025): PyTorch 2.4..2.6. The events read by then keep their relative
         * times, and so t0 stays 0 (a t0 past every time left each phase instance
         * "started before the capture"). */
        if (!P->seen_event) {
            I->hdr.t0_ns = v->type == PJSON_NUM ? v->i : 0;
            P->base_ns = I->hdr.t0_ns;
            I->has_base_time = 1;
        } else {
            I->base_time_late = 1;
        }
    } else if (!strcmp(key, "schemaVersion"))
        I->schema_version = (int)iv;
    else if (!strcmp(key, "cupti_version"))
        I->hdr.cupti_version = (int)iv;
    else if (!strcmp(key, "cuda_runtime_version"))
        I->hdr.cuda_runtime_version = (int)iv;
    else if (!strcmp(key, "cuda_driver_version"))
        I->hdr.cuda_driver_version = (int)iv;
    return 0;
}

int pkineto_scan(psrc *src, const pkineto_cb *cb, pkineto_info *info, char *err, size_t errlen)
{
    pk P;
    memset(&P, 0, sizeof P);
    memset(info, 0, sizeof *info);
    info->schema_version = -1;
    info->hdr.format_version = PTRACE_FORMAT_VERSION;
    pk_copy(info->hdr.tool_version, sizeof info->hdr.tool_version, "kineto");
    info->hdr.delay_s = info->hdr.duration_s = -1;
    P.cb = cb;
    P.info = info;
    P.err = err;
    P.errlen = errlen;
    P.a = pjson_arena_create();
    if (!P.a) {
        snprintf(err, errlen, "%s: out of memory", src->label);
        return -1;
    }
    pjstream_cb scb = {pk_member, pk_event, &P};
    pjstream_info si;
    int rc = pjstream_run(src, "traceEvents", &scb, PKINETO_MAX_VALUE_BYTES, &si, err, errlen);
    pjson_arena_destroy(P.a);
    info->json_bytes = si.bytes;
    info->file_bytes = src->bytes_in;
    if (rc)
        return -1;
    if (P.stop_err) {
        char m[512];
        snprintf(m, sizeof m, "%s", err);
        snprintf(err, errlen, "%s: %s", src->label, m + strlen("(kineto): "));
        return -1;
    }
    if (si.doc_array || !si.found_array) {
        snprintf(err, errlen, "%s: not a Kineto trace: %s", src->label,
                 si.doc_array ? "the document is an array (Kineto writes an object with "
                 "traceEvents)" : "no traceEvents member");
        return -1;
    }
    info->complete = si.complete;
    info->cut_bytes = si.cut_bytes;
    /* the device: the one most kernels ran on, described by its deviceProperties entry */
    int best = -1;
    for (int d = 0; d < PKINETO_MAX_DEVICES; d++)
        if (P.dev_kernels[d] > 0 && (best < 0 || P.dev_kernels[d] > P.dev_kernels[best]))
            best = d;
    for (int k = 0; k < info->ndev; k++)
        if (info->dev[k].id == (best < 0 ? info->dev[0].id : best)) {
            ptrace_header *h = &info->hdr;
            pk_copy(h->device.name, sizeof h->device.name, info->dev[k].name);
            h->device.index = info->dev[k].id;
            h->device.sms = info->dev[k].sms;
            h->device.mem_bytes = info->dev[k].mem_bytes;
            h->device.cc_major = info->dev[k].cc_major;
            h->device.cc_minor = info->dev[k].cc_minor;
            break;
        }
    if (best >= 0 && !info->hdr.device.name[0])
        info->hdr.device.index = best;
    return 0;
}
