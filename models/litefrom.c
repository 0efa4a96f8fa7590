/* litefrom: `specsim lite-from IN OUT`: the --mode lite capture a node-level (always) trace
 * stands for (traces/FORMAT.md, docs/fit.md "Lite captures"): NVTX ranges, graph launch and
 * blocking API calls kept, one graph_trace event per graph launch spanning its kernels and
 * copies, every kernel, copy, set and eager launch call dropped; header mode "lite". For
 * tests and offline checks of the lite fit on committed traces. Workload: one trace of up to
 * 10^6 records, read twice streaming; memory: one entry per graph launch. */
#include "litefrom.h"
#include "fit_int.h"
#include "ptrace_read.h"
#include "ptrace_write.h"
#include "ptrace_out.h"
#include <stdlib.h>
#include <string.h>

/* One graph launch: its GPU span from its records (corr), and where it came from. */
typedef struct {
    uint32_t corr, stream, dev, graph_id, graph_exec_id;
    int64_t  s, e;
    int      nrec;
    const char *nvtx, *phase;    /* pooled */
} lf_launch;

typedef struct {
    lf_launch *l;  size_t n, cap;
    size_t    *slot; size_t nslot;   /* open addressing on corr: index + 1 */
    fit_strpool *pool;
    int oom;
    /* pass 2 */
    ptrace_out out;
    ptrace_ctx ctx;
    char *buf;
    size_t written;
    int wrote_header, werr;
    litefrom_stats *st;
} lf_st;

#define LF_LINE_BYTES (1u << 20)   /* a line's bound (models/bounds.h BND_TRACE_LINE_BYTES) */

int litefrom_is_graph(const ptrace_api *a)
{
    return a->graph_exec_id != 0 || !strncmp(a->name, "cudaGraphLaunch", 15) ||
           !strncmp(a->name, "cuGraphLaunch", 13);
}

int litefrom_is_blocking(const ptrace_api *a)
{
    static const char *const names[] = {"cudaMemcpy", "cudaStreamSynchronize", "cudaDeviceSynchronize",
                                        "cudaEventSynchronize", "cuMemcpy", "cuStreamSynchronize",
                                        "cuCtxSynchronize", "cuEventSynchronize"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!strncmp(a->name, names[i], strlen(names[i])))
            return 1;
    return 0;
}

static lf_launch *lf_find(lf_st *S, uint32_t corr, int add)
{
    if (add && 2 * (S->n + 1) > S->nslot) {
        size_t ns = S->nslot ? 2 * S->nslot : 1024;
        size_t *t = calloc(ns, sizeof *t);
        if (!t) {
            S->oom = 1;
            return NULL;
        }
        for (size_t i = 0; i < S->nslot; i++)
            if (S->slot[i]) {
                size_t j = (S->l[S->slot[i] - 1].corr * 2654435761u) & (ns - 1);
                while (t[j])
                    j = (j + 1) & (ns - 1);
                t[j] = S->slot[i];
            }
        free(S->slot);
        S->slot = t;
        S->nslot = ns;
    }
    if (!S->nslot)
        return NULL;
    size_t j = (corr * 2654435761u) & (S->nslot - 1);
    while (S->slot[j]) {
        if (S->l[S->slot[j] - 1].corr == corr)
            return &S->l[S->slot[j] - 1];
        j = (j + 1) & (S->nslot - 1);
    }
    if (!add)
        return NULL;
    if (fit_trace_grow((void **)&S->l, &S->cap, S->n, sizeof *S->l)) {
        S->oom = 1;
        return NULL;
    }
    lf_launch *x = &S->l[S->n++];
    memset(x, 0, sizeof *x);
    x->corr = corr;
    x->s = INT64_MAX;
    x->e = INT64_MIN;
    x->nvtx = x->phase = "";
    S->slot[j] = S->n;
    return x;
}

/* Pass 1: the graph launches and the span of each one's records. */
static int lf_pass1(void *user, const ptrace_event *ev, const ptrace_info *info)
{
    lf_st *S = user;
    int64_t t0 = info->header.t0_ns;
    union { ptrace_kernel k; ptrace_mem m; ptrace_api a; } u;
    uint32_t corr, stream, dev, gid;
    int64_t s, e;
    const char *nvtx, *phase;
    if (ptrace_read_api(ev, t0, &u.a) == 0) {
        if (litefrom_is_graph(&u.a)) {
            lf_launch *x = lf_find(S, u.a.corr, 1);
            if (!x)
                return 1;
            x->graph_exec_id = u.a.graph_exec_id;
        }
        return 0;
    }
    if (ptrace_read_kernel(ev, t0, &u.k) == 0) {
        corr = u.k.corr, stream = u.k.stream, dev = u.k.dev, gid = u.k.graph_id;
        s = u.k.start_ns, e = u.k.end_ns, nvtx = u.k.nvtx, phase = u.k.phase;
    } else if (ptrace_read_mem(ev, t0, &u.m) == 0) {
        corr = u.m.corr, stream = u.m.stream, dev = u.m.dev, gid = u.m.graph_id;
        s = u.m.start_ns, e = u.m.end_ns, nvtx = u.m.nvtx, phase = u.m.phase;
    } else {
        return 0;
    }
    if (!gid)
        return 0;   /* not graph work */
    lf_launch *x = lf_find(S, corr, 1);   /* the launch call may come later in the file */
    if (!x)
        return 1;
    if (s < x->s) {
        x->s = s;
        x->stream = stream;
        x->dev = dev;
    }
    if (e > x->e)
        x->e = e;
    x->graph_id = gid;
    x->nrec++;
    if (!*x->nvtx && nvtx && *nvtx) {
        if (!(x->nvtx = fit_trace_intern(S->pool, nvtx)) || !(x->phase = fit_trace_intern(S->pool, phase))) {
            S->oom = 1;
            return 1;
        }
    }
    return 0;
}

static int lf_put(lf_st *S, int n)
{
    if (n < 0 || ptrace_out_write(&S->out, S->buf, (size_t)n)) {
        S->werr = 1;
        return 1;
    }
    return 0;
}

/* Pass 2: the lite trace. */
static int lf_pass2(void *user, const ptrace_event *ev, const ptrace_info *info)
{
    lf_st *S = user;
    int64_t t0 = info->header.t0_ns;
    if (!S->wrote_header) {
        ptrace_header h = info->header;
        snprintf(h.mode, sizeof h.mode, "lite");
        snprintf(h.between, sizeof h.between, "none");
        /* the source's CUPTI version and calibration stay: its host times are profiled ones,
         * and the fit corrects them as it does the source's (fit_trace_unprofiled) */
        S->ctx.pid = h.rank;
        S->ctx.t0_ns = h.t0_ns;
        S->wrote_header = 1;
        if (lf_put(S, ptrace_write_header(S->buf, LF_LINE_BYTES, &S->ctx, &h)))
            return 1;
    }
    union { ptrace_api a; ptrace_range r; } u;
    if (ptrace_read_range(ev, t0, &u.r) == 0) {
        S->written++;
        S->st->ranges++;
        return lf_put(S, ptrace_write_range(S->buf, LF_LINE_BYTES, &S->ctx, &u.r));
    }
    if (ptrace_read_api(ev, t0, &u.a) == 0) {
        int g = litefrom_is_graph(&u.a);
        if (!g && !litefrom_is_blocking(&u.a)) {
            S->st->calls_dropped++;
            return 0;
        }
        S->written++;
        if (lf_put(S, ptrace_write_api(S->buf, LF_LINE_BYTES, &S->ctx, &u.a)))
            return 1;
        if (!g) {
            S->st->blocking++;
            return 0;
        }
        S->st->graph_launches++;
        const lf_launch *x = lf_find(S, u.a.corr, 0);
        if (!x || !x->nrec) {
            S->st->no_records++;
            return 0;
        }
        ptrace_graphlaunch gl = {x->s, x->e, x->corr, x->dev, x->stream, x->graph_id,
                                 x->graph_exec_id ? x->graph_exec_id : u.a.graph_exec_id,
                                 x->nvtx, x->phase, 0};
        S->written++;
        S->st->graph_traces++;
        return lf_put(S, ptrace_write_graphlaunch(S->buf, LF_LINE_BYTES, &S->ctx, &gl));
    }
    if (!strcmp(ev->cat, "kernel") || !strcmp(ev->cat, "memcpy") || !strcmp(ev->cat, "memset"))
        S->st->records_dropped++;
    return 0;
}

int litefrom_convert(const char *in, const char *out, litefrom_stats *st, char *err, size_t errlen)
{
    lf_st S;
    ptrace_info info;
    int rc = -1;
    memset(&S, 0, sizeof S);
    memset(st, 0, sizeof *st);
    S.st = st;
    S.out.fd = -1;
    if (!(S.pool = fit_trace_pool_create()) || !(S.buf = malloc(LF_LINE_BYTES))) {
        snprintf(err, errlen, "%s: out of memory", in);
        goto out;
    }
    if (ptrace_scan_file(in, lf_pass1, &S, &info, err, errlen))
        goto out;
    if (S.oom) {
        snprintf(err, errlen, "%s: out of memory after %zu graph launches", in, S.n);
        goto out;
    }
    if (info.merged || !info.has_header) {
        snprintf(err, errlen, "%s: not a per-rank specprof trace", in);
        goto out;
    }
    if (!strcmp(info.header.mode, "lite") || !strcmp(info.header.mode, "windows")) {
        snprintf(err, errlen, "%s: field capture.mode: value %s: lite-from needs a node-level "
                 "capture (mode always)", in, info.header.mode);
        goto out;
    }
    if (ptrace_out_open_path(&S.out, out, err, errlen))
        goto out;
    if (ptrace_scan_file(in, lf_pass2, &S, &info, err, errlen) || S.werr || !S.wrote_header) {
        if (S.werr || !S.wrote_header)
            snprintf(err, errlen, "%s: cannot write", out);
        ptrace_out_discard(&S.out);
        goto out;
    }
    ptrace_end e;
    memset(&e, 0, sizeof e);
    if (info.has_end)
        e = info.end;
    else
        e.end_ns = info.header.t0_ns;
    e.records = (int64_t)S.written;
    e.graph_trace_records = (int64_t)st->graph_traces;
    e.windows = e.window_ns = 0;
    if (!info.has_end)
        snprintf(e.reason, sizeof e.reason, "cut off (lite-from)");
    int n = ptrace_write_end(S.buf, LF_LINE_BYTES, &S.ctx, &e);
    if (lf_put(&S, n)) {
        ptrace_out_discard(&S.out);
        snprintf(err, errlen, "%s: cannot write", out);
        goto out;
    }
    if (ptrace_out_finish(&S.out, err, errlen))
        goto out;
    rc = 0;
out:
    free(S.l);
    free(S.slot);
    free(S.buf);
    fit_trace_pool_destroy(S.pool);
    return rc;
}

int litefrom_main(int argc, char **argv)
{
    if (argc != 3 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        fprintf(argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) ? stdout : stderr,
                "usage: specsim lite-from IN.json[.gz] OUT.json[.gz]\n"
                "  Writes the --mode lite capture a node-level (always) specprof trace stands for:\n"
                "  NVTX ranges, graph launch and blocking API calls, one graph_trace event per graph\n"
                "  launch spanning its kernels; no kernel, copy or eager launch record. OUT ending in\n"
                "  .gz is compressed. For offline checks of specsim fit --nodes (docs/fit.md).\n");
        return argc == 2 ? 0 : 2;
    }
    litefrom_stats st;
    char err[1024];
    if (litefrom_convert(argv[1], argv[2], &st, err, sizeof err)) {
        fprintf(stderr, "specsim lite-from: %s\n", err);
        return 2;
    }
    printf("# lite-from %s -> %s: %zu ranges, %zu graph launches (%zu graph_trace events, %zu "
           "without records), %zu blocking calls; dropped %zu kernel/copy records, %zu launch "
           "calls\n", argv[1], argv[2], st.ranges, st.graph_launches, st.graph_traces,
           st.no_records, st.blocking, st.records_dropped, st.calls_dropped);
    return 0;
}
