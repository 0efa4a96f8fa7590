/* timport.c: the importer table of timport.h and its two entries. The file is opened twice:
 * once to read its first 64 KiB for the probes, once to stream it through the importer
 * that accepted them (re-reading 64 KiB costs nothing next to a trace). */
#include "timport.h"
#include "pgz.h"
#include "pkineto.h"
#include "ptrace_read.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TIMPORT_HEAD_BYTES ((size_t)64 << 10)   /* what the probes see */

/* ---- specprof ------------------------------------------------------------------------------ */

typedef struct { fit_trace *t; int oom; timport_stats *st; } ti_sp;

static int ti_sp_take(void *user, const ptrace_event *ev, const ptrace_info *info)
{
    ti_sp *u = user;
    fit_trace *t = u->t;
    int64_t t0 = info->header.t0_ns;
    union { ptrace_kernel k; ptrace_mem m; ptrace_api a; ptrace_range r; } x;
    int rc = 0, keep = !u->st->discard;
    if (ptrace_read_kernel(ev, t0, &x.k) == 0) {
        u->st->kernels++;
        rc = keep ? fit_trace_add_kernel(t, &x.k) : 0;
    } else if (ptrace_read_mem(ev, t0, &x.m) == 0) {
        u->st->mems++;
        rc = keep ? fit_trace_add_mem(t, &x.m) : 0;
    } else if (ptrace_read_api(ev, t0, &x.a) == 0) {
        u->st->apis++;
        rc = keep ? fit_trace_add_api(t, &x.a) : 0;
    } else if (ptrace_read_range(ev, t0, &x.r) == 0) {
        u->st->ranges++;
        rc = keep ? fit_trace_add_range(t, &x.r) : 0;
    }
    if (rc)
        u->oom = 1;
    return rc;
}

static int ti_sp_load(psrc *src, fit_trace *t, timport_stats *st, char *err, size_t errlen)
{
    ti_sp u = {t, 0, st};
    ptrace_info info;
    if (ptrace_scan_src(src, ti_sp_take, &u, &info, err, errlen))
        return -1;
    if (u.oom) {
        snprintf(err, errlen, "%s: out of memory after %zu records", t->file,
                 t->nkern + t->nmem + t->napi + t->nrng);
        return -1;
    }
    if (info.merged) {
        snprintf(err, errlen, "%s: a merged trace (specprof merge): give the per-rank files "
                 "to specsim fit", t->file);
        return -1;
    }
    t->has_header = info.has_header;
    t->hdr = info.header;
    t->truncated = !info.complete;
    t->cut_last_line = info.cut_last_line;
    t->bad_lines = info.bad_lines;
    st->events = info.events;
    st->skipped = info.events - (st->kernels + st->mems + st->apis + st->ranges);
    st->complete = info.complete;
    return 0;
}

/* ---- Kineto -------------------------------------------------------------------------------- */

typedef struct { fit_trace *t; int oom, discard; } ti_kn;

static int ti_kn_kernel(void *u, const ptrace_kernel *k)
{
    ti_kn *x = u;
    return x->discard ? 0 : (x->oom = fit_trace_add_kernel(x->t, k) != 0);
}
static int ti_kn_mem(void *u, const ptrace_mem *m)
{
    ti_kn *x = u;
    return x->discard ? 0 : (x->oom = fit_trace_add_mem(x->t, m) != 0);
}
static int ti_kn_api(void *u, const ptrace_api *a)
{
    ti_kn *x = u;
    return x->discard ? 0 : (x->oom = fit_trace_add_api(x->t, a) != 0);
}
static int ti_kn_range(void *u, const ptrace_range *r)
{
    ti_kn *x = u;
    return x->discard ? 0 : (x->oom = fit_trace_add_range(x->t, r) != 0);
}

static int ti_cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Kineto before PyTorch 2.12 writes no graph ids; a graph launch's kernels carry its
 * correlation id (CUPTI), so GPU work whose id is a cudaGraphLaunch's is graph work. */
static size_t ti_kn_graphs(fit_trace *t)
{
    size_t n = 0, marked = 0;
    uint32_t *c = malloc((t->napi + 1) * sizeof *c);
    if (!c)
        return 0;
    for (size_t i = 0; i < t->napi; i++)
        if (strstr(t->api[i].name, "GraphLaunch"))
            c[n++] = t->api[i].corr;
    qsort(c, n, sizeof *c, ti_cmp_u32);
    for (size_t i = 0; i < t->nkern && n; i++)
        if (t->kern[i].graph_id == 0 && t->kern[i].corr &&
            bsearch(&t->kern[i].corr, c, n, sizeof *c, ti_cmp_u32)) {
            t->kern[i].graph_id = 1;
            marked++;
        }
    for (size_t i = 0; i < t->nmem && n; i++)
        if (t->mem[i].graph_id == 0 && t->mem[i].corr &&
            bsearch(&t->mem[i].corr, c, n, sizeof *c, ti_cmp_u32)) {
            t->mem[i].graph_id = 1;
            marked++;
        }
    free(c);
    return marked;
}

static int ti_kn_load(psrc *src, fit_trace *t, timport_stats *st, char *err, size_t errlen)
{
    ti_kn u = {t, 0, st->discard};
    pkineto_cb cb = {ti_kn_kernel, ti_kn_mem, ti_kn_api, ti_kn_range, NULL, &u};
    pkineto_info info;
    if (pkineto_scan(src, &cb, &info, err, errlen))
        return -1;
    if (u.oom) {
        snprintf(err, errlen, "%s: out of memory after %zu records", t->file,
                 t->nkern + t->nmem + t->napi + t->nrng);
        return -1;
    }
    st->events = info.events;
    st->kernels = info.kernels;
    st->mems = info.mems;
    st->apis = info.apis;
    st->ranges = info.ranges;
    st->json_bytes = info.json_bytes;
    st->skipped = info.events - info.kernels - info.mems - info.apis - info.ranges;
    st->gpu_ranges = info.gpu_ranges;
    st->nccl_kernels = info.nccl_kernels;
    st->complete = info.complete;
    if (info.kernels + info.mems == 0) {
        snprintf(err, errlen, "%s: field traceEvents: value %zu events, none of cat kernel, "
                 "gpu_memcpy or gpu_memset: a CPU-only profile (%zu cpu_op, %zu user_annotation): "
                 "record with activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA] "
                 "(SGLang: activities [\"CPU\", \"GPU\"])", t->file, info.events, info.cpu_ops,
                 info.ranges);
        return -1;
    }
    t->has_header = 1;
    t->hdr = info.hdr;
    /* the CUPTI collector behind Kineto; the file does not always say its version */
    if (t->hdr.cupti_version <= 0)
        t->hdr.cupti_version = 1;
    t->truncated = !info.complete;
    t->bad_lines = info.bad_events;
    st->graph_inferred = info.graph_kernels ? 0 : ti_kn_graphs(t);
    return 0;
}

/* ---- the table ----------------------------------------------------------------------------- */

const timport_ops timport_table[] = {
    {"specprof", ptrace_probe, ti_sp_load},
    {"kineto", pkineto_probe, ti_kn_load},
    {NULL, NULL, NULL},
};

const timport_ops *timport_find(const char *name)
{
    for (const timport_ops *o = timport_table; o->name; o++)
        if (strcmp(o->name, name) == 0)
            return o;
    return NULL;
}

/* The first bytes as printable text, for a message. */
static void ti_show(const char *head, size_t n, char *out, size_t cap)
{
    size_t k = 0;
    for (size_t i = 0; i < n && k + 1 < cap && k < 40; i++) {
        char c = head[i];
        out[k++] = c >= 32 && c < 127 ? c : c == '\n' ? ' ' : '.';
    }
    out[k] = 0;
}

int timport_load(fit_trace *t, const char *path, const char *force, timport_stats *stp,
                 char *err, size_t errlen)
{
    timport_stats dummy;
    timport_stats *st = stp ? stp : &dummy;
    int discard = stp ? stp->discard : 0;
    memset(st, 0, sizeof *st);
    st->discard = discard;
    if (fit_trace_init(t, path)) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    const timport_ops *op = NULL;
    pgz *g = NULL;
    char *head = NULL;
    if (force && !(op = timport_find(force))) {
        snprintf(err, errlen, "%s: field --format: value %s: not an importer (specprof, kineto)",
                 path, force);
        goto fail;
    }
    if (!op) {
        head = malloc(TIMPORT_HEAD_BYTES + 1);
        if (!head) {
            snprintf(err, errlen, "%s: out of memory", path);
            goto fail;
        }
        if (pgz_open(path, &g, err, errlen))
            goto fail;
        ssize_t n = psrc_read_full(pgz_src(g), head, TIMPORT_HEAD_BYTES, err, errlen);
        pgz_close(g);
        g = NULL;
        if (n < 0)
            goto fail;
        head[n] = 0;
        for (const timport_ops *o = timport_table; o->name && !op; o++)
            if (o->probe(head, (size_t)n))
                op = o;
        if (!op) {
            char show[64];
            ti_show(head, (size_t)n, show, sizeof show);
            snprintf(err, errlen, "%s: not a trace this reader knows: neither a specprof trace "
                     "(first event specprof_header) nor a Kineto/torch.profiler trace (an object "
                     "with traceEvents); it starts \"%s\"%s", path, show,
                     n == 0 ? " (empty file)" : "");
            goto fail;
        }
    }
    if (pgz_open(path, &g, err, errlen))
        goto fail;
    st->importer = op->name;
    st->compressed = pgz_compressed(g);
    if (op->load(pgz_src(g), t, st, err, errlen))
        goto fail;
    st->file_bytes = pgz_src(g)->bytes_in;
    pgz_close(g);
    free(head);
    return 0;
fail:
    pgz_close(g);
    free(head);
    fit_trace_free(t);
    return -1;
}

/* ---- joining captures ---------------------------------------------------------------------- */

int timport_append(fit_trace *dst, const fit_trace *src, char *err, size_t errlen)
{
    uint32_t cmax = 0;
    int64_t dmax = INT64_MIN, smin = INT64_MAX;
#define SPAN(arr, n, lo, hi) for (size_t i = 0; i < (n); i++) { \
        if ((arr)[i].end_ns > (hi)) (hi) = (arr)[i].end_ns; \
        if ((arr)[i].start_ns < (lo)) (lo) = (arr)[i].start_ns; }
    int64_t dmin = INT64_MAX, smax = INT64_MIN;
    SPAN(dst->kern, dst->nkern, dmin, dmax) SPAN(dst->mem, dst->nmem, dmin, dmax)
    SPAN(dst->api, dst->napi, dmin, dmax) SPAN(dst->rng, dst->nrng, dmin, dmax)
    SPAN(src->kern, src->nkern, smin, smax) SPAN(src->mem, src->nmem, smin, smax)
    SPAN(src->api, src->napi, smin, smax) SPAN(src->rng, src->nrng, smin, smax)
#undef SPAN
    for (size_t i = 0; i < dst->nkern; i++) cmax = dst->kern[i].corr > cmax ? dst->kern[i].corr : cmax;
    for (size_t i = 0; i < dst->nmem; i++) cmax = dst->mem[i].corr > cmax ? dst->mem[i].corr : cmax;
    for (size_t i = 0; i < dst->napi; i++) cmax = dst->api[i].corr > cmax ? dst->api[i].corr : cmax;
    /* 1 ms after the last record when the two overlap (captures of one process do not) */
    int64_t shift = dmax != INT64_MIN && smin != INT64_MAX && smin <= dmax ? dmax - smin + 1000000 : 0;
    uint32_t coff = cmax;
    int rc = 0;
    for (size_t i = 0; i < src->nkern && !rc; i++) {
        ptrace_kernel k = src->kern[i];
        k.start_ns += shift;
        k.end_ns += shift;
        k.corr += k.corr ? coff : 0;
        rc = fit_trace_add_kernel(dst, &k);
    }
    for (size_t i = 0; i < src->nmem && !rc; i++) {
        ptrace_mem m = src->mem[i];
        m.start_ns += shift;
        m.end_ns += shift;
        m.corr += m.corr ? coff : 0;
        rc = fit_trace_add_mem(dst, &m);
    }
    for (size_t i = 0; i < src->napi && !rc; i++) {
        ptrace_api a = src->api[i];
        a.start_ns += shift;
        a.end_ns += shift;
        a.corr += a.corr ? coff : 0;
        rc = fit_trace_add_api(dst, &a);
    }
    for (size_t i = 0; i < src->nrng && !rc; i++) {
        ptrace_range r = src->rng[i];
        r.start_ns += shift;
        r.end_ns += shift;
        rc = fit_trace_add_range(dst, &r);
    }
    if (rc) {
        snprintf(err, errlen, "%s: out of memory joining %s", dst->file, src->file);
        return -1;
    }
    dst->truncated |= src->truncated;
    return 0;
}
