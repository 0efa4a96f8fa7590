/* timport.c: the importer table of timport.h and its two entries. The file is opened twice:
 * once to read its first 64 KiB for the probes, once to stream it through the importer
 * that accepted them (re-reading 64 KiB costs nothing next to a trace). */
#include "timport.h"
#include "pgz.h"
#include "pkineto.h"
#include "ptrace_read.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define TIMPORT_HEAD_BYTES ((size_t)64 << 10)   /* what the probes see */

/* ---- specprof ------------------------------------------------------------------------------ */

/* --scan-only: the records counted, not kept. */
static int ti_sp_count(void *user, const ptrace_event *ev, const ptrace_info *info)
{
    timport_stats *st = user;
    int64_t t0 = info->header.t0_ns;
    union { ptrace_kernel k; ptrace_mem m; ptrace_api a; ptrace_range r; } x;
    if (ptrace_read_kernel(ev, t0, &x.k) == 0)
        st->kernels++;
    else if (ptrace_read_mem(ev, t0, &x.m) == 0)
        st->mems++;
    else if (ptrace_read_api(ev, t0, &x.a) == 0)
        st->apis++;
    else if (ptrace_read_range(ev, t0, &x.r) == 0)
        st->ranges++;
    return 0;
}

/* specprof's own loader (fit_trace.c: records and windows, streamed, plain or gzip). */
static int ti_sp_load(const char *path, psrc *src, fit_trace *t, timport_stats *st, char *err,
                      size_t errlen)
{
    (void)src;
    if (st->discard) {
        ptrace_info info;
        if (fit_trace_init(t, path)) {
            snprintf(err, errlen, "%s: out of memory", path);
            return -1;
        }
        if (ptrace_scan_file(path, ti_sp_count, st, &info, err, errlen)) {
            fit_trace_free(t);
            return -1;
        }
        st->events = info.events;
        st->complete = info.complete;
    } else {
        if (fit_sample_load(t, path, st->instances_max, err, errlen))
            return -1;
        st->kernels = t->nkern;
        st->mems = t->nmem;
        st->apis = t->napi;
        st->ranges = t->nrng;
        st->events = t->nkern + t->nmem + t->napi + t->nrng;
        st->complete = !t->truncated;
    }
    st->skipped = st->events - (st->kernels + st->mems + st->apis + st->ranges);
    return 0;
}

/* ---- Kineto -------------------------------------------------------------------------------- */

/* One host event Kineto recorded: its thread and start (ns); after sorting, the profiler
 * time taken out up to it (shift_ns) and still to take out after it (debt_ns). */
typedef struct { int64_t thread, start_ns, shift_ns, debt_ns; } ti_host;

typedef struct {
    fit_trace *t;
    int oom, discard;
    ti_host *host;             /* every recorded host event (grows with the file's events) */
    size_t nhost, caphost;
} ti_kn;

static int ti_kn_host(void *u, int64_t thread, int64_t s, int64_t e)
{
    (void)e;
    ti_kn *x = u;
    if (x->nhost == x->caphost) {
        size_t nc = x->caphost ? x->caphost * 2 : 4096;
        ti_host *nh = realloc(x->host, nc * sizeof *nh);
        if (!nh)
            return x->oom = 1;
        x->host = nh;
        x->caphost = nc;
    }
    x->host[x->nhost++] = (ti_host){thread, s, 0, 0};
    return 0;
}

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

/* A launch call's correlation id and start, for ti_kn_clocks. */
typedef struct { uint32_t corr; int64_t start_ns; } ti_call;
static int ti_cmp_call(const void *a, const void *b)
{
    return ti_cmp_u32(&((const ti_call *)a)->corr, &((const ti_call *)b)->corr);
}

/* GPU records that start before their launch call starts: impossible on one clock (in the
 * Kineto traces of traces/torch/kineto and call4, every kernel starts 4.9 us or more after its
 * call), so the trace's GPU and CPU timestamps disagree (CUPTI's clock against the host's
 * converted one). Counted with the largest lead, on the file's times (before the host cost is
 * taken out). Before, nothing said so and phase instances mixed both clocks silently. */
static void ti_kn_clocks(const fit_trace *t, timport_stats *st)
{
    ti_call *c = malloc((t->napi + 1) * sizeof *c);
    if (!c)
        return;
    for (size_t i = 0; i < t->napi; i++)
        c[i] = (ti_call){t->api[i].corr, t->api[i].start_ns};
    qsort(c, t->napi, sizeof *c, ti_cmp_call);
    for (size_t i = 0; i < t->nkern + t->nmem; i++) {
        int k = i < t->nkern;
        ti_call key = {k ? t->kern[i].corr : t->mem[i - t->nkern].corr, 0};
        int64_t s = k ? t->kern[i].start_ns : t->mem[i - t->nkern].start_ns;
        const ti_call *x = key.corr ? bsearch(&key, c, t->napi, sizeof *c, ti_cmp_call) : NULL;
        if (!x)
            continue;
        st->gpu_with_call++;
        if (s < x->start_ns) {
            st->gpu_before_call++;
            if (x->start_ns - s > st->gpu_lead_max_ns)
                st->gpu_lead_max_ns = x->start_ns - s;
        }
    }
    free(c);
}

void timport_warn_cut(const char *cmd, const char *path, const timport_stats *st)
{
    if (!st->importer || strcmp(st->importer, "kineto") != 0 || (st->complete && !st->cut_compressed))
        return;
    if (st->complete)   /* the trailer (CRC, length) alone is missing */
        fprintf(stderr, "%s: warning: %s: the gzip stream ends without its trailer (an incomplete copy?); its "
                "JSON document is whole and read as it is, unchecked against the CRC\n", cmd, path);
    else
        fprintf(stderr, "%s: warning: %s: cut off: the document ends inside traceEvents after %llu bytes of "
                "JSON%s; read up to its last whole event (%zu events), the %llu bytes of the event cut short "
                "dropped (a copy or an export that did not finish?)\n", cmd, path, st->json_bytes,
                st->cut_compressed ? " (the gzip stream ends without its trailer)" : "", st->events,
                st->cut_bytes);
}

void timport_warn_clocks(const char *cmd, const char *path, const timport_stats *st)
{
    if (st->gpu_before_call)
        fprintf(stderr, "%s: warning: %s: %zu of %zu GPU records start before their launch call does "
                "(by up to %.3f us): the trace's GPU and CPU clocks disagree, and phase times that mix "
                "them are off by about that much\n", cmd, path, st->gpu_before_call, st->gpu_with_call,
                st->gpu_lead_max_ns / 1000.0);
}

/* Host time that torch.profiler/Kineto adds per host event it records (a cpu_op, a runtime
 * or driver call, a user_annotation), beyond specprof's: measured on the H200 from the same
 * torchbench configurations captured both ways, over the eager (host-bound) phase spans at
 * 80 rows, (Kineto span - specprof span) / Kineto's host events in the span: 2.07 to 6.77 us
 * over the 7 such spans, mean 4.00 (traces/torch/kineto/kineto_cost.txt, made by
 * kineto_cost.py there). KINETO_HOST_EVENT_US overrides it (0: keep the trace's times). */
#define TIMPORT_KINETO_HOST_EVENT_US 4.0
/* Between two GPU records of different launches on a stream, a gap up to this long is the
 * GPU's own (back to back: ~0.5-1.5 us on the H200); a longer one waited for the host, and
 * shrinks with it. */
#define TIMPORT_GPU_GAP_MAX_NS 2000

static double ti_kn_host_cost_us(void)
{
    const char *e = getenv("KINETO_HOST_EVENT_US");
    double v = e && *e ? atof(e) : TIMPORT_KINETO_HOST_EVENT_US;
    return v > 0 ? v : 0;
}

static int ti_cmp_host(const void *a, const void *b)
{
    const ti_host *x = a, *y = b;
    if (x->thread != y->thread)
        return x->thread < y->thread ? -1 : 1;
    return (x->start_ns > y->start_ns) - (x->start_ns < y->start_ns);
}

/* The profiler's host time before t on a thread whose events are h[lo..hi) (sorted, with
 * shift_ns/debt_ns set by ti_debts): each event's cost follows its start and is taken out of
 * the time right after it (time there stands still) until paid, so that the mapped times
 * never go backwards and nested ranges stay nested. */
static int64_t ti_shift(const ti_host *h, size_t lo, size_t hi, int64_t t, double cost_ns)
{
    (void)cost_ns;
    size_t a = lo, b = hi;
    while (a < b) {                 /* first event starting after t */
        size_t m = a + (b - a) / 2;
        if (h[m].start_ns <= t)
            a = m + 1;
        else
            b = m;
    }
    if (a == lo)
        return 0;
    const ti_host *k = &h[a - 1];
    int64_t d = t - k->start_ns;
    return k->shift_ns + (d < k->debt_ns ? d : k->debt_ns);
}

/* shift_ns and debt_ns of each event of a thread (h[lo..hi), sorted by start). */
static void ti_debts(ti_host *h, size_t lo, size_t hi, int64_t cost_ns)
{
    int64_t shift = 0, debt = 0, prev = 0;
    for (size_t i = lo; i < hi; i++) {
        if (i > lo) {
            int64_t paid = h[i].start_ns - prev < debt ? h[i].start_ns - prev : debt;
            shift += paid;
            debt -= paid;
        }
        debt += cost_ns;
        h[i].shift_ns = shift;
        h[i].debt_ns = debt;
        prev = h[i].start_ns;
    }
}

/* The threads of sorted h, each with its events h[lo..hi): a few entries (the process's
 * threads), looked up by binary search. */
typedef struct { int64_t thread; size_t lo, hi; } ti_thr;

static void ti_thread_span(const ti_thr *th, size_t nth, int64_t thread, size_t *lo, size_t *hi)
{
    size_t a = 0, b = nth;
    while (a < b) {
        size_t m = a + (b - a) / 2;
        if (th[m].thread < thread)
            a = m + 1;
        else
            b = m;
    }
    if (a < nth && th[a].thread == thread) {
        *lo = th[a].lo;
        *hi = th[a].hi;
    } else {
        *lo = *hi = 0;
    }
}

typedef struct { uint32_t corr; int64_t shift; } ti_cs;
typedef struct { int64_t s; size_t i; int mem; } ti_g;

static int ti_cmp_cs(const void *a, const void *b)
{
    uint32_t x = ((const ti_cs *)a)->corr, y = ((const ti_cs *)b)->corr;
    return (x > y) - (x < y);
}

/* Each GPU record's stream, for ordering. */
static uint32_t ti_g_stream(const fit_trace *t, const ti_g *g)
{
    return g->mem ? t->mem[g->i].stream : t->kern[g->i].stream;
}

static int ti_cmp_g(const void *a, const void *b, void *ctx)
{
    const fit_trace *t = ctx;
    const ti_g *x = a, *y = b;
    uint32_t sx = ti_g_stream(t, x), sy = ti_g_stream(t, y);
    if (sx != sy)
        return sx < sy ? -1 : 1;
    return (x->s > y->s) - (x->s < y->s);
}

/* The calls that wait for the GPU (a synchronize, by name; a copy to the host whose call
 * ended after its copy did: pageable memory, torch's .tolist()), as the fit reads them
 * (models/fit_instances.c). Kept per thread: from a wait's original end on, the thread's
 * host records move back by the cumulative back (d_ns) the waits so far gave it. */
typedef struct { size_t api; int64_t a1, thread; } ti_wait;
typedef struct { int64_t thread; size_t lo, n; } ti_wthr;   /* steps[lo .. lo+n) of a thread */
typedef struct { int64_t at_ns, back_ns; } ti_step;

static int ti_is_sync_name(const char *name) { return name && strstr(name, "Synchronize") != NULL; }

static int ti_cmp_wait(const void *a, const void *b)
{
    const ti_wait *x = a, *y = b;
    return (x->a1 > y->a1) - (x->a1 < y->a1);
}

/* The back a thread's record at original time t moves by: the cumulative back of the last
 * wait of the thread that ended (originally) at or before t; 0 before its first. */
static int64_t ti_back(const ti_wthr *wt, size_t nwt, const ti_step *steps, int64_t thread,
                       int64_t t)
{
    size_t a = 0, b = nwt;
    while (a < b && wt[a].thread != thread)   /* a few threads wait: linear */
        a++;
    if (a == nwt || wt[a].n == 0)
        return 0;
    const ti_step *s = steps + wt[a].lo;
    size_t lo = 0, hi = wt[a].n;
    while (lo < hi) {
        size_t m = lo + (hi - lo) / 2;
        if (s[m].at_ns <= t)
            lo = m + 1;
        else
            hi = m;
    }
    return lo ? s[lo - 1].back_ns : 0;
}

static int ti_cmp_i64p(const void *a, const void *b, void *ctx)
{
    const int64_t *v = ctx;
    int64_t x = v[*(const size_t *)a], y = v[*(const size_t *)b];
    return (x > y) - (x < y);
}

/* Takes the profiler's own host cost out of a Kineto trace (docs/importers.md, Profiler
 * cost): every host record moves earlier by cost x the events its thread recorded before it;
 * each GPU record moves with its launch, but not before the record ahead of it on its stream
 * ends (plus the gap they had, up to TIMPORT_GPU_GAP_MAX_NS between launches: a longer gap
 * was the GPU waiting for the host). Durations are kept, but for the calls that wait for the
 * GPU: such a call still returns when the GPU work it waits for is done (its end is at least
 * that work's moved end), and the host records after it on its thread move back by as much
 * (the profiler's time before a wait is time the host would have waited anyway: torchbench's
 * accept, whose .tolist() waits for verify, read 232 us per eager launch once the call's end
 * had moved before its copy's and the wait counted as launch time). One sweep in time order:
 * n log n. */
static int ti_kn_unprofile(fit_trace *t, ti_host *h, size_t n, double cost_us, timport_stats *st)
{
    double cost_ns = cost_us * 1000.0;
    qsort(h, n, sizeof *h, ti_cmp_host);
    ti_cs *cs = malloc((t->napi + 1) * sizeof *cs);
    ti_g *g = malloc((t->nkern + t->nmem + 1) * sizeof *g);
    if (!cs || !g) {
        free(cs);
        free(g);
        return -1;
    }
    /* per thread: the profiler time to take out; the thread with the most events is the one
     * GPU records without a launch follow */
    size_t nth = 0;
    for (size_t i = 0; i < n; i++)
        nth += i == 0 || h[i].thread != h[i - 1].thread;
    ti_thr *th = malloc((nth + 1) * sizeof *th);
    if (!th) {
        free(cs);
        free(g);
        return -1;
    }
    nth = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && h[j].thread == h[i].thread)
            j++;
        th[nth++] = (ti_thr){h[i].thread, i, j};
        ti_debts(h, i, j, (int64_t)llround(cost_ns));
        i = j;
    }
    size_t mlo = 0, mhi = 0;
    for (size_t k = 0; k < nth; k++)
        if (th[k].hi - th[k].lo > mhi - mlo) {
            mlo = th[k].lo;
            mhi = th[k].hi;
        }
    size_t ngr = t->nkern + t->nmem;
    int64_t *a0 = malloc((t->napi + 1) * sizeof *a0), *a1 = malloc((t->napi + 1) * sizeof *a1);
    int64_t *r0 = malloc((t->nrng + 1) * sizeof *r0), *r1 = malloc((t->nrng + 1) * sizeof *r1);
    int64_t *gs = malloc((ngr + 1) * sizeof *gs), *ge = malloc((ngr + 1) * sizeof *ge);
    size_t *ord = malloc((ngr + 1) * sizeof *ord);
    ti_wait *wt = malloc((t->napi + 1) * sizeof *wt);
    ti_step *steps = malloc((t->napi + 1) * sizeof *steps);
    ti_wthr *wth = malloc((t->napi + 1) * sizeof *wth);
    int rc = -1;
    if (!a0 || !a1 || !r0 || !r1 || !gs || !ge || !ord || !wt || !steps || !wth)
        goto out;
    /* host records: the first mapping (the profiler's cost out); originals kept */
    for (size_t i = 0; i < t->napi; i++) {
        ptrace_api *a = &t->api[i];
        size_t lo, hi;
        ti_thread_span(th, nth, a->thread, &lo, &hi);
        int64_t s0 = ti_shift(h, lo, hi, a->start_ns, cost_ns);
        int64_t s1 = ti_shift(h, lo, hi, a->end_ns, cost_ns);
        cs[i] = (ti_cs){a->corr, s0};
        a0[i] = a->start_ns;
        a1[i] = a->end_ns;
        a->start_ns -= s0;
        a->end_ns -= s1;
    }
    for (size_t i = 0; i < t->nrng; i++) {
        ptrace_range *r = &t->rng[i];
        size_t lo, hi;
        ti_thread_span(th, nth, r->thread, &lo, &hi);
        int64_t s0 = ti_shift(h, lo, hi, r->start_ns, cost_ns);
        int64_t s1 = ti_shift(h, lo, hi, r->end_ns, cost_ns);
        r0[i] = r->start_ns;
        r1[i] = r->end_ns;
        r->start_ns -= s0;
        r->end_ns -= s1;
    }
    /* a launch's call by correlation id: its shift and (through the index) its thread and
     * original start */
    ti_cs *csi = malloc((t->napi + 1) * sizeof *csi);
    if (!csi)
        goto out;
    for (size_t i = 0; i < t->napi; i++)
        csi[i] = (ti_cs){t->api[i].corr, (int64_t)i};
    qsort(cs, t->napi, sizeof *cs, ti_cmp_cs);
    qsort(csi, t->napi, sizeof *csi, ti_cmp_cs);
    /* GPU records: stream order (their gaps) and global time order (the sweep) */
    size_t ng = 0;
    for (size_t i = 0; i < t->nkern; i++)
        g[ng++] = (ti_g){t->kern[i].start_ns, i, 0};
    for (size_t i = 0; i < t->nmem; i++)
        g[ng++] = (ti_g){t->mem[i].start_ns, i, 1};
    qsort_r(g, ng, sizeof *g, ti_cmp_g, t);
    for (size_t k = 0; k < ng; k++) {
        gs[k] = g[k].mem ? t->mem[g[k].i].start_ns : t->kern[g[k].i].start_ns;
        ge[k] = g[k].mem ? t->mem[g[k].i].end_ns : t->kern[g[k].i].end_ns;
        ord[k] = k;
    }
    qsort_r(ord, ng, sizeof *ord, ti_cmp_i64p, gs);
    /* the waits, by original end */
    size_t nw = 0;
    for (size_t i = 0; i < t->napi; i++)
        if (ti_is_sync_name(t->api[i].name))
            wt[nw++] = (ti_wait){i, a1[i], t->api[i].thread};
    for (size_t k = 0; k < ng; k++) {
        if (!g[k].mem)
            continue;
        const ptrace_mem *m = &t->mem[g[k].i];
        if (!m->corr || !m->copy_kind ||
            (strcmp(m->copy_kind, "DtoH") != 0 && strcmp(m->copy_kind, "AtoH") != 0))
            continue;
        ti_cs key = {m->corr, 0};
        const ti_cs *c = bsearch(&key, csi, t->napi, sizeof *csi, ti_cmp_cs);
        if (c && a1[c->shift] >= ge[k] && !ti_is_sync_name(t->api[c->shift].name))
            wt[nw++] = (ti_wait){(size_t)c->shift, a1[c->shift], t->api[c->shift].thread};
    }
    qsort(wt, nw, sizeof *wt, ti_cmp_wait);
    /* the threads that wait, their steps filled in time order (each at most nw) */
    size_t nwt = 0;
    for (size_t w = 0; w < nw; w++) {
        size_t x = 0;
        while (x < nwt && wth[x].thread != wt[w].thread)
            x++;
        if (x == nwt)
            wth[nwt++] = (ti_wthr){wt[w].thread, 0, 0};
    }
    {
        size_t lo = 0;              /* each thread's steps in one block of steps[] */
        for (size_t x = 0; x < nwt; x++) {
            size_t cnt = 0;
            for (size_t w = 0; w < nw; w++)
                cnt += wt[w].thread == wth[x].thread;
            wth[x].lo = lo;
            lo += cnt;
        }
    }
    /* the sweep: GPU records mapped in original start order, each wait once the records that
     * started before its call's end are */
    typedef struct { uint32_t stream, corr; int64_t e0, e1; int used; } ti_sst;
    ti_sst sst[64];
    size_t nst = 0;
    int64_t last_end = INT64_MIN;   /* latest moved end of the records that ended (originally)
                                       before the current wait's call */
    size_t *pend = malloc((ngr + 1) * sizeof *pend), npend = 0;
    if (!pend) {
        free(csi);
        goto out;
    }
    size_t k = 0;
    for (size_t w = 0; w <= nw; w++) {
        int64_t lim = w < nw ? wt[w].a1 : INT64_MAX;
        for (; k < ng && gs[ord[k]] <= lim; k++) {
            size_t q = ord[k];
            int64_t *s, *e;
            uint32_t corr, stream;
            if (g[q].mem) {
                s = &t->mem[g[q].i].start_ns;
                e = &t->mem[g[q].i].end_ns;
                corr = t->mem[g[q].i].corr;
                stream = t->mem[g[q].i].stream;
            } else {
                s = &t->kern[g[q].i].start_ns;
                e = &t->kern[g[q].i].end_ns;
                corr = t->kern[g[q].i].corr;
                stream = t->kern[g[q].i].stream;
            }
            ti_cs key = {corr, 0};
            const ti_cs *c = corr ? bsearch(&key, cs, t->napi, sizeof *cs, ti_cmp_cs) : NULL;
            const ti_cs *ci = c ? bsearch(&key, csi, t->napi, sizeof *csi, ti_cmp_cs) : NULL;
            int64_t sh;
            if (c && ci)
                sh = c->shift - ti_back(wth, nwt, steps, t->api[ci->shift].thread, a0[ci->shift]);
            else
                sh = ti_shift(h, mlo, mhi, gs[q], cost_ns) -
                     (mhi > mlo ? ti_back(wth, nwt, steps, h[mlo].thread, gs[q]) : 0);
            int64_t dur = ge[q] - gs[q], ns = gs[q] - sh;
            size_t x = 0;
            while (x < nst && sst[x].stream != stream)
                x++;
            if (x == nst && nst < sizeof sst / sizeof sst[0])
                sst[nst++] = (ti_sst){stream, 0, 0, 0, 0};
            if (x < nst && sst[x].used) {
                int64_t gap = gs[q] - sst[x].e0;
                if (corr != sst[x].corr && gap > TIMPORT_GPU_GAP_MAX_NS)
                    gap = TIMPORT_GPU_GAP_MAX_NS;
                if (ns < sst[x].e1 + gap)
                    ns = sst[x].e1 + gap;
            }
            *s = ns;
            *e = ns + dur;
            if (x < nst)
                sst[x] = (ti_sst){stream, corr, ge[q], *e, 1};
            pend[npend++] = q;
        }
        if (w == nw)
            break;
        /* the records that ended before this call did, in the latest end */
        size_t m = 0;
        for (size_t p = 0; p < npend; p++) {
            size_t q = pend[p];
            int64_t e = g[q].mem ? t->mem[g[q].i].end_ns : t->kern[g[q].i].end_ns;
            if (ge[q] <= wt[w].a1) {
                if (e > last_end)
                    last_end = e;
            } else {
                pend[m++] = q;
            }
        }
        npend = m;
        /* the call's end as moved so far, and the back the wait gives what follows */
        size_t i = wt[w].api, x = 0;
        while (x < nwt && wth[x].thread != wt[w].thread)
            x++;
        int64_t back = wth[x].n ? steps[wth[x].lo + wth[x].n - 1].back_ns : 0;
        int64_t cur = t->api[i].end_ns + back;
        int64_t d = last_end > cur ? last_end - cur : 0;
        steps[wth[x].lo + wth[x].n++] = (ti_step){wt[w].a1, back + d};
    }
    free(pend);
    free(csi);
    /* the host records moved back as the waits before them say */
    for (size_t i = 0; i < t->napi; i++) {
        ptrace_api *a = &t->api[i];
        a->start_ns += ti_back(wth, nwt, steps, a->thread, a0[i]);
        a->end_ns += ti_back(wth, nwt, steps, a->thread, a1[i]);
    }
    for (size_t i = 0; i < t->nrng; i++) {
        ptrace_range *r = &t->rng[i];
        r->start_ns += ti_back(wth, nwt, steps, r->thread, r0[i]);
        r->end_ns += ti_back(wth, nwt, steps, r->thread, r1[i]);
    }
    rc = 0;
out:
    free(a0);
    free(a1);
    free(r0);
    free(r1);
    free(gs);
    free(ge);
    free(ord);
    free(wt);
    free(steps);
    free(wth);
    if (rc) {
        free(th);
        free(cs);
        free(g);
        return -1;
    }
    st->host_cost_us = mhi > mlo ? (double)(h[mhi - 1].shift_ns + h[mhi - 1].debt_ns) / 1000.0 : 0;
    st->host_cost_per_event_us = cost_us;
    free(th);
    free(cs);
    free(g);
    return 0;
}

static int ti_kn_load_src(psrc *src, fit_trace *t, timport_stats *st, char *err, size_t errlen);

static int ti_kn_load(const char *path, psrc *src, fit_trace *t, timport_stats *st, char *err,
                      size_t errlen)
{
    if (fit_trace_init(t, path)) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    if (ti_kn_load_src(src, t, st, err, errlen)) {
        fit_trace_free(t);
        return -1;
    }
    return 0;
}

static int ti_kn_load_src(psrc *src, fit_trace *t, timport_stats *st, char *err, size_t errlen)
{
    ti_kn u = {t, 0, st->discard, NULL, 0, 0};
    double cost_us = ti_kn_host_cost_us();
    pkineto_cb cb = {ti_kn_kernel, ti_kn_mem, ti_kn_api, ti_kn_range, NULL,
                     st->discard || cost_us <= 0 ? NULL : ti_kn_host, &u};
    pkineto_info info;
    if (pkineto_scan(src, &cb, &info, err, errlen)) {
        free(u.host);
        return -1;
    }
    if (u.oom) {
        free(u.host);
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
    st->cut_bytes = info.cut_bytes;
    snprintf(st->merged_rank, sizeof st->merged_rank, "%s", info.merged_rank);
    st->merged_ranks = info.merged_ranks;
    st->merged_skipped = info.merged_skipped;
    if (info.kernels + info.mems == 0 && info.bad_events) {
        /* not a CPU-only profile: its events did not read (times out of range, not numbers) */
        snprintf(err, errlen, "%s: field traceEvents: value %zu events, no kernel, gpu_memcpy or "
                 "gpu_memset read: %zu skipped as unreadable, the first: %s", t->file, info.events,
                 info.bad_events, info.first_bad);
        free(u.host);
        return -1;
    }
    if (info.kernels + info.mems == 0 && !info.complete) {
        /* Kineto writes every host event before the GPU events (CuptiActivityProfiler): a cut
         * there is no CPU-only profile (the advice to record CUDA activity was wrong) */
        snprintf(err, errlen, "%s: field traceEvents: value %zu events, then the document is cut off "
                 "(after %llu bytes of JSON) before any event of cat kernel, gpu_memcpy or gpu_memset: "
                 "Kineto writes the GPU events after the host events, so the file is incomplete (a copy "
                 "or an export that did not finish?)", t->file, info.events, info.json_bytes);
        free(u.host);
        return -1;
    }
    if (info.kernels + info.mems == 0 && info.cpu_ops + info.python_functions + info.ranges +
        info.apis + info.apis_other == 0) {
        snprintf(err, errlen, "%s: field traceEvents: value %zu events, none of them activity "
                 "(%zu metadata, %zu other): the profiler recorded nothing (no step ran while it "
                 "was on?)", t->file, info.events, info.metadata, info.other + info.flows);
        free(u.host);
        return -1;
    }
    if (info.kernels + info.mems == 0) {
        snprintf(err, errlen, "%s: field traceEvents: value %zu events, none of cat kernel, "
                 "gpu_memcpy or gpu_memset: a CPU-only profile (%zu cpu_op, %zu user_annotation): "
                 "record with activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA] "
                 "(SGLang: activities [\"CPU\", \"GPU\"])", t->file, info.events, info.cpu_ops,
                 info.ranges);
        free(u.host);
        return -1;
    }
    t->has_header = 1;
    t->hdr = info.hdr;
    /* the CUPTI collector behind Kineto; the file does not always say its version */
    if (t->hdr.cupti_version <= 0)
        t->hdr.cupti_version = 1;
    t->truncated = !info.complete;
    t->bad_lines = info.bad_events;
    snprintf(t->bad_first, sizeof t->bad_first, "%s", info.first_bad);
    st->bad_events = info.bad_events;
    snprintf(st->bad_first, sizeof st->bad_first, "%s", info.first_bad);
    st->nonfinite_events = info.nonfinite_events;
    st->base_time_late = info.base_time_late;
    st->graph_inferred = info.graph_kernels ? 0 : ti_kn_graphs(t);
    ti_kn_clocks(t, st);
    st->host_events = u.nhost;
    st->python_functions = info.python_functions;
    int rc = 0;
    if (u.nhost && ti_kn_unprofile(t, u.host, u.nhost, cost_us, st)) {
        snprintf(err, errlen, "%s: out of memory taking the profiler's host cost out", t->file);
        rc = -1;
    }
    free(u.host);
    return rc;
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
    int instances_max = stp ? stp->instances_max : 0;
    memset(st, 0, sizeof *st);
    st->discard = discard;
    st->instances_max = instances_max;
    memset(t, 0, sizeof *t);         /* the loader initialises it */
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
        pgz_read_to_cut(g);
        /* what inflates before an error is enough to probe (specprof's gzip traces cut by
         * SIGKILL have no trailer: its own loader reads them up to the cut) */
        ssize_t n = 0;
        char perr[256];
        while ((size_t)n < TIMPORT_HEAD_BYTES) {
            ssize_t r = pgz_src(g)->read(pgz_src(g), head + n, TIMPORT_HEAD_BYTES - (size_t)n, perr,
                                         sizeof perr);
            if (r <= 0) {
                if (r < 0 && n == 0) {
                    snprintf(err, errlen, "%s", perr);
                    pgz_close(g);
                    g = NULL;
                    goto fail;
                }
                break;
            }
            n += r;
        }
        pgz_close(g);
        g = NULL;
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
    /* a gzip file cut short reads as the plain file cut there: up to its last whole event
     * (Kineto), said by timport_warn_cut; it was refused while the plain one loaded */
    pgz_read_to_cut(g);
    st->importer = op->name;
    st->compressed = pgz_compressed(g);
    if (op->load(path, pgz_src(g), t, st, err, errlen))
        goto fail;
    st->cut_compressed = pgz_cut(g);
    st->file_bytes = pgz_src(g)->bytes_in;
    struct stat sb;
    if (st->file_bytes == 0 && stat(path, &sb) == 0)   /* a loader that read the path itself */
        st->file_bytes = (unsigned long long)sb.st_size;
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
