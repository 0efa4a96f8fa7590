/* fit_instances: stage 1, a trace's records -> phase instances. In: a fit_trace; out: per
 * NVTX phase range an fr_inst (its shape from the range's key=value words, its launch calls,
 * its GPU span and sums, why it is left out) and its GPU records folded into elements
 * (fr_elem: adjacent GEMM kernels merged), each record placed by its launch call's
 * correlation id; also the run's MoE shape. Workload: 10^4..10^6 records, 10^3..10^5 ranges. */
#include "fit_int.h"
#include "bounds.h"
#include "corrfind.h"
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* GPU time that CUPTI kernel tracing adds to every kernel it records: the CUDA-event phase
 * times specbench measured while specprof captured the calibration subset
 * (traces/calib/measured_while_captured.csv) exceed those of the same configurations run
 * unprofiled (traces/validation/measured.csv) by 0.4-0.8 us per kernel at small and medium
 * batches on the H200 (llama8b verify: +297 us over 391 kernels at 3 tokens; kimi-tp8: +138
 * over 262), less where kernels are long. Taken out of each kernel's duration (at most half
 * of it) so that the model prices the unprofiled program; only in traces whose header names a
 * CUPTI version (synthetic traces have none). The environment variable FIT_CUPTI_KERNEL_US
 * overrides the value (0 turns the correction off). */
#define FIT_CUPTI_KERNEL_US 0.6

/* ---- stage 1: phase instances and their GPU records ----------------------------------------- */

static const char *const fi_drop_why[] = {
    "kept", "no kernels", "cut off at the end of the capture",
    "partial (kernel count differs at the edge of the capture)", "started before the capture",
    "not inside one node-level window (a windowed capture records only there)",
    "loaded as a kept instance's predecessor only (the cap on instances, docs/fit.md)",
};

static int fi_lower_has(const char *s, const char *needle)
{
    size_t n = strlen(needle);
    for (; *s; s++) {
        size_t i = 0;
        while (i < n && s[i] && (s[i] | 0x20) == needle[i])
            i++;
        if (i == n)
            return 1;
    }
    return 0;
}

/* cuBLAS/CUTLASS GEMM kernels: the name (and the number of kernels, split-K adds a reduce)
 * changes with the problem size, so they are matched by role, not by name. */
int fit_instances_is_gemm(const char *name)
{
    static const char *const pat[] = {"gemm", "gemv", "xmma", "nvjet", "cutlass", "cublas",
                                      "splitkreduce", NULL};
    for (int i = 0; pat[i]; i++)
        if (fi_lower_has(name, pat[i]))
            return 1;
    return 0;
}

/* Class of a kernel: "gemm" for GEMMs, else the bare function name (no return type, no
 * template arguments, no parameter list) so that template variants chosen by size match. */
static const char *fi_class(fit_strpool *p, const char *name, int *gemm)
{
    *gemm = fit_instances_is_gemm(name);
    if (*gemm)
        return fit_trace_intern(p, "gemm");
    const char *s = name;
    while (*s == ' ')
        s++;
    if (strncmp(s, "void ", 5) == 0)
        s += 5;
    size_t n = 0;
    while (s[n] && s[n] != '(' && s[n] != '<')
        n++;
    while (n > 0 && s[n - 1] == ' ')
        n--;
    if (n == 0)
        return fit_trace_intern(p, name);
    return fit_trace_intern_n(p, s, n);
}

static int fi_is_nccl_name(const char *name)
{
    return strncmp(name, "nccl", 4) == 0 || strncmp(name, "void nccl", 9) == 0;
}

/* The range of each key's value (bounds.h; the word range for the counts): a value outside
 * refuses the trace, as one that does not parse (tokens=1e30 was once fitted). */
static const bnd_kind fi_forwards = {"a forward count per range", "forwards", 1, 1024, 1};
static const bnd_kind fi_steps = {"a draft depth", "steps", 0, 1024, 1};
static const bnd_kind fi_kv = {"a batch's KV context", "tokens", 0, (double)BND_TOKENS_MAX * BND_ROWS_MAX, 0};

/* Parses "verify tokens=64 bs=16 rows=16 ctx=8192 graph=1" into in. Returns the phase or -1
 * when the first word is not a phase. *bad gets a key whose value does not parse; *badk its
 * range when the value parsed but lies outside it (*badv the value), else NULL. */
int fit_instances_parse(const char *name, fr_inst *in, const char **bad, const bnd_kind **badk,
                        double *badv)
{
    char word[32];
    size_t n = 0;
    *bad = NULL;
    *badk = NULL;
    while (name[n] && name[n] != ' ' && n < sizeof word - 1) {
        word[n] = name[n];
        n++;
    }
    word[n] = 0;
    if (name[n] && name[n] != ' ')
        return -1;
    int p = wm_phase_find(word);
    if (p < 0)
        return -1;
    in->tokens = -1;
    in->F = 0;
    in->graph = -1;
    const char *s = name + n;
    while (*s) {
        while (*s == ' ')
            s++;
        const char *k = s;
        while (*s && *s != ' ' && *s != '=')
            s++;
        if (*s != '=') {
            while (*s && *s != ' ')
                s++;
            continue;
        }
        size_t kl = (size_t)(s - k);
        s++;
        char *end;
        errno = 0;
        double v = strtod(s, &end);
        int ok = end != s && (*end == 0 || *end == ' ') && errno == 0 && isfinite(v);
#define KEY(str) (kl == sizeof(str) - 1 && strncmp(k, str, kl) == 0)
        /* a value that parses and lies in kind's range, else *bad (and *badk) */
#define VAL(str, kind) ((!ok || !bnd_ok(kind, v)) ? (*bad = str, *badk = ok ? kind : NULL, *badv = v, 0) : 1)
        if (KEY("tokens"))        { if (VAL("tokens", &bnd_tokens)) in->tokens = v; }
        else if (KEY("ctx"))      { if (VAL("ctx", &fi_kv)) in->kv = v; }
        else if (KEY("bs"))       { if (VAL("bs", &bnd_rows)) in->bs = (int)v; }
        else if (KEY("rows"))     { if (VAL("rows", &bnd_rows)) in->rows = (int)v; }
        else if (KEY("graph"))    { if (!ok) *bad = "graph"; else in->graph = v != 0; }
        else if (KEY("steps"))    { if (VAL("steps", &fi_steps)) in->steps = (int)v; }
        else if (KEY("topk"))     { if (VAL("topk", &fi_steps)) in->topk = (int)v; }
        else if (KEY("forwards")) { if (VAL("forwards", &fi_forwards)) in->F = (int)v; }
        else if (KEY("experts"))  { if (VAL("experts", &bnd_experts)) in->experts = (int)v; }
        else if (KEY("moe_topk")) { if (VAL("moe_topk", &bnd_experts)) in->moe_topk = (int)v; }
#undef VAL
#undef KEY
        while (*s && *s != ' ')
            s++;
    }
    in->has_graph_key = in->graph >= 0;
    if (in->F == 0)   /* the draft range covers the phase: steps-1 forwards (DESIGN.md) */
        in->F = (p == WM_DRAFT && in->steps > 1) ? in->steps - 1 : 1;
    return p;
}

int fit_instances_cmp(const void *a, const void *b)
{
    const fr_inst *x = a, *y = b;
    if (x->r0 != y->r0)
        return x->r0 < y->r0 ? -1 : 1;
    return (x->r1 > y->r1) - (x->r1 < y->r1);   /* the outer of two equal starts first */
}

/* Innermost instance of trace segment [a, b) whose range on `thread` holds time t; -1. */
static int fi_find_inst(const fr_run *R, size_t a, size_t b, int64_t t, int64_t thread)
{
    size_t lo = a, hi = b;
    while (lo < hi) {              /* first with r0 > t */
        size_t mid = lo + (hi - lo) / 2;
        if (R->in[mid].r0 <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo, k = 0; i > a && k < FIT_BACK_SEARCH; i--, k++) {
        const fr_inst *in = &R->in[i - 1];
        if (in->r1 >= t && (thread == 0 || in->thread == 0 || in->thread == thread))
            return (int)(i - 1);
    }
    return -1;
}

/* Latest instance of [a, b) named nvtx that started at or before t; -1. */
static int fi_find_by_name(const fr_run *R, size_t a, size_t b, int64_t t, const char *nvtx)
{
    size_t lo = a, hi = b;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (R->in[mid].r0 <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo, k = 0; i > a && k < 4 * FIT_BACK_SEARCH; i--, k++)
        if (strcmp(R->in[i - 1].rname, nvtx) == 0)
            return (int)(i - 1);
    return -1;
}

typedef struct { uint32_t corr; int64_t s, e, thread; } fi_corr;

/* A launch-API call that returns only when the GPU has finished the work before it: a
 * synchronize by name (cudaStreamSynchronize, cudaDeviceSynchronize, cudaEventSynchronize,
 * cuStreamSynchronize, cuCtxSynchronize, cuEventSynchronize; specprof records them, docs/
 * specprof.md). A copy to host memory is one when its call ends after the copy did (to
 * pageable memory cudaMemcpyAsync waits for the GPU: what torch's .tolist(), .item() and
 * .cpu() do; docs/torchbench.md): see fi_records. */
static int fi_is_sync_api(const char *name)
{
    return strstr(name, "Synchronize") != NULL;
}

/* A blocking call [s, e] of instance in whose wait for the GPU ended at w: the host time
 * until w is GPU time it waited for (not launch cost); after w, its own overhead is host
 * time. */
static void fi_add_wait(fr_inst *in, int64_t s, int64_t e, int64_t w)
{
    int64_t we = w < e ? w : e;
    if (we <= s)
        return;                    /* the GPU was done before the call: nothing waited */
    in->sync_wait_us += fit_us(we - s);
    if (in->nsync == 0 || we < in->sync0_e)
        in->sync0_e = we;
    in->nsync++;
}

static int fi_cmp_corr(const void *a, const void *b)
{
    const fi_corr *x = a, *y = b;
    if (x->corr != y->corr)
        return x->corr < y->corr ? -1 : 1;
    return (x->s > y->s) - (x->s < y->s);
}

/* the earliest launch call of a correlation id (cm is sorted by fi_cmp_corr) */
static const fi_corr *fi_corr_find(const fi_corr *c, size_t n, uint32_t corr)
{
    return corrfind_first(c, n, sizeof *c, offsetof(fi_corr, corr), corr);
}

typedef struct {
    int64_t s, e;
    const char *name, *nvtx;
    uint32_t corr;
    int     graph;
    int     nccl;
    int     mem;               /* a memcpy or memset */
    int     to_host;           /* a copy from the device to the host (DtoH, AtoH) */
    const ptrace_nccl *nc;
    int     inst;
    double  blocks, cap;       /* kernels: grid blocks, resident capacity (0: unknown) */
} fi_rec;

static int fi_cmp_rec(const void *a, const void *b)
{
    const fi_rec *x = a, *y = b;
    if (x->inst != y->inst)
        return x->inst < y->inst ? -1 : 1;
    if (x->s != y->s)
        return x->s < y->s ? -1 : 1;
    return (x->e > y->e) - (x->e < y->e);
}

double fit_instances_cupti_kernel_us(void)
{
    static double v = -1;
    if (v < 0) {
        const char *e = getenv("FIT_CUPTI_KERNEL_US");
        v = e && *e ? atof(e) : FIT_CUPTI_KERNEL_US;
        if (!(v >= 0))
            v = 0;
    }
    return v;
}

/* Refuses a record with a negative duration, naming the trace, the record and the value. */
static int fi_check_dur(fr_run *R, const fit_trace *t, const char *kind, const char *name,
                        int64_t s, int64_t e)
{
    if (e >= s)
        return 0;
    int64_t t0 = t->has_header ? t->hdr.t0_ns : 0;
    return fit_run_fail(R, "%s: %s \"%.80s\" at ts %.3f us: field dur: value %.3f: negative "
                        "duration", t->file, kind, name, fit_us(s - t0), fit_us(e - s));
}

/* fit_instances_trace's state for one trace. */
typedef struct {
    fr_run *R;
    const fit_trace *t;
    int     ti;
    size_t  a, b;             /* the trace's instances: R->in[a .. b) */
    fi_corr *cm;              /* its launch calls by correlation id (t->napi) */
    fi_rec *rec;              /* its GPU records, by instance then time */
    size_t  nrec;
    int64_t last_end;         /* the latest record's end */
    int     cupti;            /* kernels recorded through CUPTI carry its overhead */
    int     same_ids;         /* launch calls and ranges carry the same kind of thread id */
} fi_trace_st;

static int fi_oom(fi_trace_st *S)
{
    snprintf(S->R->err, S->R->errlen, "%s: out of memory", S->t->file);
    return -1;
}

/* Instances: one per NVTX range that names a phase, sorted by start. */
static int fi_ranges(fi_trace_st *S)
{
    fr_run *R = S->R;
    const fit_trace *t = S->t;
    S->a = R->nin;
    for (size_t i = 0; i < t->nrng; i++) {
        const ptrace_range *r = &t->rng[i];
        fr_inst in;
        const char *bad;
        const bnd_kind *badk;
        double badv = 0;
        memset(&in, 0, sizeof in);
        int p = fit_instances_parse(r->name, &in, &bad, &badk, &badv);
        if (p < 0)
            continue;
        if (fi_check_dur(R, t, "NVTX range", r->name, r->start_ns, r->end_ns))
            return -1;
        if (bad && badk) {
            char range[96];
            bnd_range_text(badk, range, sizeof range);
            return fit_run_fail(R, "%s: NVTX range \"%.80s\": field %s: value %.10g: out of range: "
                                "%s must be %s", t->file, r->name, bad, badv, badk->what, range);
        }
        if (bad)
            return fit_run_fail(R, "%s: NVTX range \"%.80s\": field %s: value does not parse "
                                "(traces/FORMAT.md: key=number)", t->file, r->name, bad);
        if (in.tokens < 0)
            return fit_run_fail(R, "%s: NVTX range \"%.80s\": field tokens: missing: every "
                                "phase range needs tokens= (traces/FORMAT.md)", t->file, r->name);
        if (!(in.tokens > 0) || in.kv < 0)
            return fit_run_fail(R, "%s: NVTX range \"%.80s\": field %s: value %g: must be %s",
                                t->file, r->name, in.tokens > 0 ? "ctx" : "tokens",
                                in.tokens > 0 ? in.kv : in.tokens, in.tokens > 0 ? ">= 0" : "> 0");
        in.trace = S->ti;
        in.phase = p;
        in.rname = r->name;
        in.r0 = r->start_ns;
        in.r1 = r->end_ns;
        in.thread = r->thread;
        in.nfwd = -1;
        in.seq = t->rng_keep ? t->rng_keep[i].seq : 0;
        in.drop = t->rng_keep && t->rng_keep[i].context ? FR_CONTEXT : FR_KEEP;
        if (fit_trace_grow((void **)&R->in, &R->capin, R->nin, sizeof *R->in))
            return fi_oom(S);
        R->in[R->nin++] = in;
    }
    S->b = R->nin;
    if (S->b > S->a)   /* no range names a phase: R->in may be NULL (qsort of NULL is UB) */
        qsort(R->in + S->a, S->b - S->a, sizeof *R->in, fit_instances_cmp);
    if (!t->rng_keep)   /* every instance of the capture: its place in it */
        for (size_t q = S->a; q < S->b; q++)
            R->in[q].seq = q - S->a;
    R->tin0[S->ti] = S->a;
    return 0;
}

/* Launch calls: the instance whose range holds the call; corr -> launch time. The profiler
 * writes OS thread ids for both; if no call's thread is a range's thread, the ids are of
 * different kinds and are not compared. */
static int fi_calls(fi_trace_st *S)
{
    fr_run *R = S->R;
    const fit_trace *t = S->t;
    size_t a = S->a, b = S->b;
    int same_ids = t->napi == 0;
    for (size_t i = 0; i < t->napi && !same_ids && i < 4096; i++)
        for (size_t q = a; q < b && !same_ids; q++)
            same_ids = t->api[i].thread == R->in[q].thread;
    if (!same_ids)
        fit_run_warn(R, "%s: launch calls and NVTX ranges carry different thread ids: matched "
                     "by time only", t->file);
    S->same_ids = same_ids;
    S->cm = malloc((t->napi + 1) * sizeof *S->cm);
    if (!S->cm)
        return fi_oom(S);
    /* a lite capture's own cost per interposed call (its end record's calibration,
     * traces/FORMAT.md "Lite mode": graph_timing_us per timed graph launch, call_us per other
     * recorded call; the eager calls fit_nodes added from a reference were never interposed:
     * they carry no lite args); FIT_LITE_CALIB=0 leaves it in (to see what it changes, as
     * FIT_LAUNCH_CALIB=0 does for CUPTI's) */
    const ptrace_lite *lc = &t->lite;
    int lite_calib = fit_trace_is_lite(t) && lc->on && lc->calib_ok && lc->graph_timing_us >= 0 &&
                     lc->call_us >= 0 && !fit_env_off("FIT_LITE_CALIB");
    for (size_t i = 0; i < t->napi; i++) {
        const ptrace_api *x = &t->api[i];
        if (fi_check_dur(R, t, "API call", x->name, x->start_ns, x->end_ns))
            return -1;
        int64_t th = same_ids ? x->thread : 0;
        S->cm[i] = (fi_corr){x->corr, x->start_ns, x->end_ns, th};
        int k = fi_find_inst(R, a, b, x->start_ns, th);
        if (k < 0)
            continue;
        fr_inst *in = &R->in[k];
        if (in->napi == 0 || x->start_ns < in->lb) {
            in->lb = x->start_ns;
            in->a1e = x->end_ns;
        }
        if (in->napi == 0 || x->end_ns > in->le)
            in->le = x->end_ns;
        in->napi++;
        if (lite_calib && x->has_lite)
            in->lite_us += x->graph_exec_id && !(x->untimed && *x->untimed) ? lc->graph_timing_us
                                                                             : lc->call_us;
    }
    qsort(S->cm, t->napi, sizeof *S->cm, fi_cmp_corr);
    return 0;
}

/* GPU records (kernels, then copies), each placed in the instance whose range held its
 * launch call (else, without a call, by its args.nvtx), sorted by instance and time. */
static int fi_records(fi_trace_st *S)
{
    fr_run *R = S->R;
    const fit_trace *t = S->t;
    size_t nrec = t->nkern + t->nmem;
    S->nrec = nrec;
    S->rec = malloc((nrec + 1) * sizeof *S->rec);
    if (!S->rec)
        return fi_oom(S);
    S->last_end = t->has_rec_end ? t->rec_end_ns : INT64_MIN;   /* a capped load: the file's */
    for (size_t i = 0; i < nrec; i++) {
        fi_rec *x = &S->rec[i];
        if (i < t->nkern) {
            const ptrace_kernel *k = &t->kern[i];
            if (fi_check_dur(R, t, "kernel", k->name, k->start_ns, k->end_ns))
                return -1;
            *x = (fi_rec){k->start_ns, k->end_ns, k->name, k->nvtx, k->corr, k->graph_id != 0,
                          k->has_nccl || fi_is_nccl_name(k->name), 0, 0,
                          k->has_nccl ? &k->nccl : NULL, -1, 0, 0};
            int sms = t->has_header ? t->hdr.device.sms : 0;
            double blocks = (double)k->grid[0] * k->grid[1] * k->grid[2];
            double threads = (double)k->block[0] * k->block[1] * k->block[2];
            if (sms > 0 && blocks > 0) {
                x->blocks = blocks;
                x->cap = (double)fit_blocks_per_sm(threads, k->regs, k->smem_bytes) * sms;
            }
        } else {
            const ptrace_mem *m = &t->mem[i - t->nkern];
            const char *nm = m->kind == PTRACE_MEMSET ? "memset" :
                             *m->copy_kind ? m->copy_kind : "memcpy";
            if (fi_check_dur(R, t, "memcpy/memset", nm, m->start_ns, m->end_ns))
                return -1;
            char buf[64];
            snprintf(buf, sizeof buf, "%s%s", m->kind == PTRACE_MEMSET ? "" : "memcpy ",
                     m->kind == PTRACE_MEMSET ? "memset" : nm);
            const char *in = fit_trace_intern(R->pool, buf);
            if (!in)
                return fi_oom(S);
            int to_host = m->kind == PTRACE_MEMCPY && m->copy_kind &&
                          (strcmp(m->copy_kind, "DtoH") == 0 || strcmp(m->copy_kind, "AtoH") == 0);
            *x = (fi_rec){m->start_ns, m->end_ns, in, m->nvtx, m->corr, m->graph_id != 0,
                          m->has_nccl, 1, to_host, m->has_nccl ? &m->nccl : NULL, -1, 0, 0};
        }
        if (x->e > S->last_end && !t->has_rec_end)
            S->last_end = x->e;
        const fi_corr *c = x->corr ? fi_corr_find(S->cm, t->napi, x->corr) : NULL;
        int k = c ? fi_find_inst(R, S->a, S->b, c->s, c->thread) : -1;
        if (k < 0 && c == NULL && x->nvtx && *x->nvtx)
            k = fi_find_by_name(R, S->a, S->b, x->s, x->nvtx);
        x->inst = k;
        /* a copy to the host whose call returned after the copy ended: the call waited for
         * the GPU (pageable memory); a pinned cudaMemcpyAsync returns before its copy runs */
        if (k >= 0 && c && x->to_host && c->e >= x->e && c->s <= x->s)
            fi_add_wait(&R->in[k], c->s, c->e, x->e);
    }
    qsort(S->rec, nrec, sizeof *S->rec, fi_cmp_rec);
    return 0;
}

static int fi_cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Synchronize calls (by name): each waited until the latest GPU record that ended before it
 * returned (fi_add_wait). */
static int fi_syncs(fi_trace_st *S)
{
    const fit_trace *t = S->t;
    size_t nsync = 0;
    for (size_t i = 0; i < t->napi; i++)
        nsync += fi_is_sync_api(t->api[i].name);
    if (nsync == 0 || S->nrec == 0)
        return 0;
    int64_t *ends = malloc(S->nrec * sizeof *ends);
    if (!ends)
        return fi_oom(S);
    for (size_t i = 0; i < S->nrec; i++)
        ends[i] = S->rec[i].e;
    qsort(ends, S->nrec, sizeof *ends, fi_cmp_i64);
    for (size_t i = 0; i < t->napi; i++) {
        const ptrace_api *x = &t->api[i];
        if (!fi_is_sync_api(x->name))
            continue;
        int k = fi_find_inst(S->R, S->a, S->b, x->start_ns, S->same_ids ? x->thread : 0);
        if (k < 0)
            continue;
        size_t lo = 0, hi = S->nrec;      /* first end > the call's end */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (ends[mid] <= x->end_ns)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo > 0)
            fi_add_wait(&S->R->in[k], x->start_ns, x->end_ns, ends[lo - 1]);
    }
    free(ends);
    return 0;
}

/* A collective record j of instance in: its time and, per op, its count and bytes. */
static int fi_add_nccl(fi_trace_st *S, fr_inst *in, const fi_rec *x, double d)
{
    in->nccl_us += d;
    const char *op = fit_trace_intern(S->R->pool, x->nc ? x->nc->op : "allreduce");
    if (!op)
        return fi_oom(S);
    int q = 0;
    while (q < in->nnc && in->nc[q].op != op)
        q++;
    if (q < FIT_NCCL_OPS) {
        if (q == in->nnc)
            in->nc[in->nnc++] = (fr_nccl){op, 0, 0};
        in->nc[q].n++;
        in->nc[q].bytes += x->nc ? (double)x->nc->bytes : 0;
    }
    return 0;
}

/* Record j (of the records of instance in from i on): the span, the launch waits, the
 * collectives, the copies, and the kernels as elements (adjacent GEMM kernels merged;
 * *prev_gemm: the last element is a GEMM). */
static int fi_add_record(fi_trace_st *S, fr_inst *in, size_t i, size_t j, int *prev_gemm)
{
    fr_run *R = S->R;
    const fi_rec *rec = S->rec, *x = &S->rec[j];
    double d = fit_us(x->e - x->s);
    if (j > i && x->corr != rec[j - 1].corr && x->s > in->g1) {
        /* idle GPU until this record's launch call returned: host time, not GPU */
        const fi_corr *c = x->corr ? fi_corr_find(S->cm, S->t->napi, x->corr) : NULL;
        if (c && c->e > in->g1)
            in->lwait_us += fit_us((c->e < x->s ? c->e : x->s) - in->g1);
    }
    if (x->e > in->g1)
        in->g1 = x->e;
    in->nrec++;
    in->any_graph_kernel |= x->graph;
    if (x->nccl) {
        *prev_gemm = 0;
        return fi_add_nccl(S, in, x, d);
    }
    if (!x->mem && S->cupti) {
        double c = fit_instances_cupti_kernel_us();
        c = c < 0.5 * d ? c : 0.5 * d;
        d -= c;
        in->cupti_us += c;
    }
    in->sum_us += d;
    if (in->nsync && x->s >= in->sync0_e)
        in->post_sync_us += d;     /* launched after the host's wait: host-driven */
    if (x->mem) {
        /* input staging and result copies: one group per phase, outside the kernels'
         * positions (specbench copies before verify only at steps 1) */
        in->copy_us += d;
        in->ncopy++;
        *prev_gemm = 0;
        return 0;
    }
    int gemm;
    const char *cls = fi_class(R->pool, x->name, &gemm);
    if (!cls)
        return fi_oom(S);
    if (gemm && *prev_gemm) {
        fr_elem *pe = &R->el[R->nel - 1];
        pe->dur_us += d;
        pe->launches++;
        if (d > pe->dmax_us)
            pe->blocks = x->blocks, pe->cap = x->cap, pe->dmax_us = d, pe->dname = x->name;
        return 0;
    }
    if (fit_trace_grow((void **)&R->el, &R->capel, R->nel, sizeof *R->el))
        return fi_oom(S);
    const fi_corr *lc = x->corr ? fi_corr_find(S->cm, S->t->napi, x->corr) : NULL;
    R->el[R->nel++] = (fr_elem){cls, x->name, d, 1, x->blocks, x->cap, d, x->name,
                                lc ? lc->e : 0};
    in->ne++;
    *prev_gemm = gemm;
    return 0;
}

/* Per instance: span, elements, collectives, from its records. */
static int fi_elements(fi_trace_st *S)
{
    fr_run *R = S->R;
    size_t nrec = S->nrec, i = 0;
    S->cupti = S->t->has_header && S->t->hdr.cupti_version > 0;
    while (i < nrec && S->rec[i].inst < 0)
        i++;
    size_t unattributed = i;
    while (i < nrec) {
        fr_inst *in = &R->in[S->rec[i].inst];
        size_t j = i;
        in->g0 = S->rec[i].s;
        in->g1 = S->rec[i].e;
        in->e0 = R->nel;
        int prev_gemm = 0;
        for (; j < nrec && S->rec[j].inst == S->rec[i].inst; j++)
            if (fi_add_record(S, in, i, j, &prev_gemm))
                return -1;
        i = j;
    }
    if (unattributed && unattributed == nrec)
        fit_run_warn(R, "%s: none of its %zu GPU records could be placed in a phase range (no "
                     "launch call with their correlation id inside a range, no args.nvtx)",
                     S->t->file, nrec);
    return 0;
}

/* What cannot be used: instances without records, cut off at the end, started before the
 * capture; the graph flag where the range did not say. */
static void fi_drops(fi_trace_st *S)
{
    fr_run *R = S->R;
    const fit_trace *t = S->t;
    int ndrop[FR_NDROP] = {0};
    for (size_t q = S->a; q < S->b; q++) {
        fr_inst *in = &R->in[q];
        long w0 = t->nwin ? fit_trace_window_of(t, in->r0) : 0;
        if (in->drop == FR_CONTEXT)
            ;   /* loaded for its successor's host gap, not fitted */
        else if (in->nrec == 0)
            in->drop = FR_NOKERNELS;
        else if (t->nwin && (w0 < 0 || fit_trace_window_of(t, in->r1) != w0))
            in->drop = FR_WINDOW;   /* part of its GPU work fell outside the window */
        else if (S->nrec && in->r1 > S->last_end)
            in->drop = FR_CUT;
        else if (t->has_header && in->r0 < t->hdr.t0_ns)
            in->drop = FR_EARLY;
        if (in->graph < 0)
            in->graph = in->any_graph_kernel;
        if (!in->drop && in->graph == 1)
            R->any_graph_phase = 1;
        if (in->drop)
            ndrop[in->drop]++;
    }
    for (int d = 1; d < FR_NDROP; d++)
        if (ndrop[d] && !(d == FR_CUT && ndrop[d] <= 2 * WM_NPHASE) &&
            !(d == FR_NOKERNELS && ndrop[d] <= 2 * WM_NPHASE) && d != FR_WINDOW && d != FR_CONTEXT)
            fit_run_warn(R, "%s: %d phase instances left out: %s", t->file, ndrop[d],
                         fi_drop_why[d]);
    if (t->truncated)   /* a Kineto document has no specprof_end: its traceEvents stayed open */
        fit_run_warn(R, "%s: cut off (%s)%s: %d instances at its end left out", t->file,
                     t->has_header && !strcmp(t->hdr.tool_version, "kineto") ?
                     "the Kineto document ends inside traceEvents" : "no specprof_end",
                     t->cut_last_line ? ", last line cut mid-write and dropped" : "", ndrop[FR_CUT]);
    if (t->bad_lines)
        fit_run_warn(R, "%s: %zu lines did not parse and were skipped%s%s", t->file, t->bad_lines,
                     t->bad_first[0] ? "; the first: " : "", t->bad_first);
    if (t->api_cut)
        fit_run_warn(R, "%s: %zu API calls not inside one node-level window left out", t->file, t->api_cut);
}

int fit_instances_trace(fr_run *R, int ti)
{
    fi_trace_st S = {.R = R, .t = &R->tr[ti], .ti = ti};
    if (fi_ranges(&S))
        return -1;
    if (S.b == S.a) {
        fit_run_warn(R, "%s: no NVTX range names a phase (%s, ...): the trace adds nothing",
                     S.t->file, wm_phase_name[0]);
        return 0;
    }
    int rc = -1;
    if (fi_calls(&S) || fi_records(&S) || fi_syncs(&S) || fi_elements(&S))
        goto out;
    fi_drops(&S);
    rc = 0;
out:
    free(S.cm);
    free(S.rec);
    return rc;
}

int fit_instances_moe(fr_run *R)
{
    if (R->o && R->o->moe_experts > 0) {
        R->moe_E = R->o->moe_experts;
        R->moe_k = R->o->moe_topk;
        return 0;
    }
    const fr_inst *src = NULL;
    for (size_t i = 0; i < R->nin; i++) {
        const fr_inst *in = &R->in[i];
        if (in->experts <= 0)
            continue;
        if (!src) {
            src = in;
            continue;
        }
        if (in->experts != src->experts || in->moe_topk != src->moe_topk)
            return fit_run_fail(R, "%s: NVTX range \"%.60s\": field experts/moe_topk: value %d/%d: "
                                "differs from %d/%d in %s (give --moe E,K)", R->tr[in->trace].file,
                                in->rname, in->experts, in->moe_topk, src->experts, src->moe_topk,
                                R->tr[src->trace].file);
    }
    if (src) {
        if (src->moe_topk <= 0)
            return fit_run_fail(R, "%s: NVTX range \"%.60s\": field moe_topk: missing: experts= "
                                "needs moe_topk=", R->tr[src->trace].file, src->rname);
        R->moe_E = src->experts;
        R->moe_k = src->moe_topk;
    }
    return 0;
}
