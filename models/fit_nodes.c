/* fit_nodes: gives graph-level captures their node-level content before the fit runs
 * (docs/fit.md "Lite captures"). A --mode lite capture (no CUPTI in the process) records the
 * host side unprofiled and each graph replay's GPU span, but no kernel; a windowed capture
 * with --between graph records graph launches between its windows at graph level only. This
 * file synthesizes the kernel, copy and launch-call records such a trace lacks from node-level
 * replays (the same trace's windows, same graph_exec_id; or reference traces, same phase,
 * shape and position), scaled into the measured spans, so that the fit's stages run on it
 * unchanged. Workload: a capped trace (fit_sample.c: at most 128 instances per configuration)
 * and a few reference traces of 10^4..10^6 records; memory: an index per reference trace. */
#include "fit_int.h"
#include "litefrom.h"
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef struct fn_ix fn_ix;

/* A GPU record of a trace by its correlation id (kind 0: kernel, 1: memcpy/memset). */
typedef struct {
    uint32_t corr;
    int      kind;
    size_t   idx;
    int64_t  s;
} fn_rec;

/* A phase instance of a trace: its range, phase and shape (fit_instances_parse). */
typedef struct {
    size_t  rng;
    int     phase;
    fr_inst sh;
    size_t  used;           /* times a lite instance took it (spreads the choice) */
    double  idle;           /* GPU idle inside its graph replays / their extents (0: none) */
    double  ext;            /* the summed extents of its graph replays, ns */
    double  nrec;           /* GPU records of its calls (kernels, copies) */
    double  neager;         /* its eager kernel launch calls */
    double  neager_med;     /* the median of its configuration's (fn_mark_odd) */
    int     odd;            /* FN_ODD_IDLE_BIT | FN_ODD_RECS_BIT: not a reference (fn_mark_odd) */
} fn_inst;

/* One trace's indices: launch calls by (thread, start), GPU records by corr, instances. */
struct fn_ix {
    const fit_trace *t;
    size_t *api;   size_t napi;     /* indices into t->api, by (thread, start) */
    fn_rec *rec;   size_t nrec;     /* by (corr, start) */
    fn_inst *in;   size_t nin;
    int64_t launch_lat;             /* median start - call end of the records that waited for
                                       their launch (the GPU free when the call ended) */
    int64_t *gs, *gpm;              /* the GPU records' starts in order, and the latest end
                                       among them up to each (prefix max) */
};

typedef struct {
    fit_trace *t;                   /* the trace being filled */
    fn_ix *ref;  int nref;
    fn_ix  self;                    /* the trace itself (windows' replays; its own calls) */
    fit_nodes_stats *st;
    uint32_t next_corr;
    int64_t gpu_end;                /* the filled trace's GPU timeline: latest end placed */
    int64_t launch_lat;             /* the reference's launch latency (fn_place_all's L) */
    int cupti_off;                  /* filling a lite trace (no CUPTI version) from a CUPTI
                                       reference: see fn_place_all */
    char *err; size_t errlen;
} fn_run;

static int fn_oom(char *err, size_t errlen, const char *file);
static int64_t fn_ix_gpu_free(const fn_ix *x, int64_t s);
static size_t fn_recs_of(const fn_ix *x, uint32_t corr, size_t *lo);
static const fit_trace *fn_sort_t;   /* qsort context (the fit is single-threaded) */

static int fn_cmp_api(const void *a, const void *b)
{
    const ptrace_api *x = &fn_sort_t->api[*(const size_t *)a], *y = &fn_sort_t->api[*(const size_t *)b];
    if (x->thread != y->thread)
        return x->thread < y->thread ? -1 : 1;
    return (x->start_ns > y->start_ns) - (x->start_ns < y->start_ns);
}

static int fn_cmp_pair(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int fn_cmp_rec(const void *a, const void *b)
{
    const fn_rec *x = a, *y = b;
    if (x->corr != y->corr)
        return x->corr < y->corr ? -1 : 1;
    return (x->s > y->s) - (x->s < y->s);
}


/* 'G' graph launch, 'B' blocking call, 'E' anything else (an eager launch, a memset). */
static char fn_kind(const ptrace_api *a)
{
    return litefrom_is_graph(a) ? 'G' : litefrom_is_blocking(a) ? 'B' : 'E';
}

static void fn_ix_free(fn_ix *x)
{
    free(x->gs);
    free(x->gpm);
    free(x->api);
    free(x->rec);
    free(x->in);
    memset(x, 0, sizeof *x);
}

static int fn_ix_build(fn_ix *x, const fit_trace *t, char *err, size_t errlen)
{
    memset(x, 0, sizeof *x);
    x->t = t;
    x->api = malloc((t->napi + 1) * sizeof *x->api);
    x->rec = malloc((t->nkern + t->nmem + 1) * sizeof *x->rec);
    x->in = malloc((t->nrng + 1) * sizeof *x->in);
    if (!x->api || !x->rec || !x->in) {
        fn_ix_free(x);
        snprintf(err, errlen, "%s: out of memory (node index)", t->file);
        return -1;
    }
    for (size_t i = 0; i < t->napi; i++)
        x->api[i] = i;
    x->napi = t->napi;
    fn_sort_t = t;
    qsort(x->api, x->napi, sizeof *x->api, fn_cmp_api);
    for (size_t i = 0; i < t->nkern; i++)
        x->rec[x->nrec++] = (fn_rec){t->kern[i].corr, 0, i, t->kern[i].start_ns};
    for (size_t i = 0; i < t->nmem; i++)
        x->rec[x->nrec++] = (fn_rec){t->mem[i].corr, 1, i, t->mem[i].start_ns};
    qsort(x->rec, x->nrec, sizeof *x->rec, fn_cmp_rec);
    /* the GPU timeline: (start, end) pairs by start, then the prefix max of the ends */
    x->gs = malloc((x->nrec + 1) * 2 * sizeof *x->gs);
    x->gpm = malloc((x->nrec + 1) * sizeof *x->gpm);
    if (!x->gs || !x->gpm) {
        fn_ix_free(x);
        snprintf(err, errlen, "%s: out of memory (node index)", t->file);
        return -1;
    }
    for (size_t i = 0; i < x->nrec; i++) {
        const fn_rec *r = &x->rec[i];
        x->gs[2 * i] = r->s;
        x->gs[2 * i + 1] = r->kind ? t->mem[r->idx].end_ns : t->kern[r->idx].end_ns;
    }
    qsort(x->gs, x->nrec, 2 * sizeof *x->gs, fn_cmp_pair);
    for (size_t i = 0; i < x->nrec; i++) {
        int64_t e = x->gs[2 * i + 1];
        x->gpm[i] = i && x->gpm[i - 1] > e ? x->gpm[i - 1] : e;
        x->gs[i] = x->gs[2 * i];   /* compacted in place: index i reads 2i >= i */
    }
    /* the launch latency: over the calls (by (thread, start)), their records that found the
     * GPU free when the call ended */
    {
        int64_t *v = malloc((x->nrec + 1) * sizeof *v);
        size_t m = 0;
        if (v) {
            for (size_t i = 0; i < t->napi; i++) {
                const ptrace_api *a = &t->api[i];
                size_t lo, hi = fn_recs_of(x, a->corr, &lo);
                for (size_t q = lo; q < hi && m < x->nrec; q++) {
                    int64_t s0 = x->rec[q].s, fr = fn_ix_gpu_free(x, s0);
                    if (fr != INT64_MIN && fr <= a->end_ns && s0 >= a->end_ns)
                        v[m++] = s0 - a->end_ns;
                }
            }
            qsort(v, m, sizeof *v, fn_cmp_pair);
            x->launch_lat = m ? v[m / 2] : 0;
            free(v);
        }
    }
    for (size_t i = 0; i < t->nrng; i++) {
        fn_inst in;
        memset(&in, 0, sizeof in);
        const char *bad;
        const bnd_kind *badk;
        double badv;
        in.rng = i;
        in.phase = fit_instances_parse(t->rng[i].name, &in.sh, &bad, &badk, &badv);
        if (in.phase < 0 || bad || badk || in.sh.tokens < 0)
            continue;   /* not a phase, or refused later by fit_instances with its message */
        x->in[x->nin++] = in;
    }
    return 0;
}

/* The reference GPU's latest record end among the records starting before s (the GPU was
 * busy until then), INT64_MIN when none did. */
static int64_t fn_ix_gpu_free(const fn_ix *x, int64_t s)
{
    size_t lo = 0, hi = x->nrec;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (x->gs[mid] < s)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo ? x->gpm[lo - 1] : INT64_MIN;
}

/* First index into x->api of a call on thread th starting at or after s. */
static size_t fn_api_from(const fn_ix *x, int64_t th, int64_t s)
{
    size_t lo = 0, hi = x->napi;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const ptrace_api *a = &x->t->api[x->api[mid]];
        if (a->thread < th || (a->thread == th && a->start_ns < s))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The records of corr: [*lo, return). */
static size_t fn_recs_of(const fn_ix *x, uint32_t corr, size_t *lo)
{
    size_t a = 0, b = x->nrec;
    while (a < b) {
        size_t mid = (a + b) / 2;
        if (x->rec[mid].corr < corr)
            a = mid + 1;
        else
            b = mid;
    }
    *lo = a;
    while (b < x->nrec && x->rec[b].corr == corr)
        b++;
    size_t e = a;
    while (e < x->nrec && x->rec[e].corr == corr)
        e++;
    return e;
}

/* The calls of a range on its thread, in start order, into out (at most cap; returns n). */
static size_t fn_calls(const fn_ix *x, const ptrace_range *r, size_t *out, size_t cap)
{
    size_t n = 0;
    for (size_t j = fn_api_from(x, r->thread, r->start_ns); j < x->napi; j++) {
        const ptrace_api *a = &x->t->api[x->api[j]];
        if (a->thread != r->thread || a->start_ns > r->end_ns)
            break;
        if (n < cap)
            out[n++] = x->api[j];
    }
    return n;
}

#define FN_CALLS_MAX FIT_NODES_CALLS_MAX

/* The configuration of an instance as the fit samples it (docs/fit.md "Long captures"):
 * the shape words but ctx=. */
static int fn_same_cfg(const fn_inst *a, const fn_inst *b)
{
    const fr_inst *x = &a->sh, *y = &b->sh;
    return a->phase == b->phase && x->tokens == y->tokens && x->bs == y->bs && x->rows == y->rows &&
           x->graph == y->graph && x->steps == y->steps && x->topk == y->topk && x->F == y->F &&
           x->experts == y->experts && x->moe_topk == y->moe_topk;
}

#define FN_ODD_IDLE 0.05   /* a replay idle this much more of its extent than its configuration's
                              median is odd (torchbench, H200 call 9: a verify replay of 2799 us
                              with 1992 us of kernels among replays of ~2160 us idle ~3%) */
#define FN_ODD_RECS 0.10   /* an instance with this share more or fewer GPU records than its
                              configuration's median is odd (specbench, H200 call 10: the decode
                              iteration that captured the graph ran its 390 kernels eagerly and
                              then the graph's 390: every lite instance of the nearest ctx=
                              took it, and its kernels twice) */
#define FN_ODD_IDLE_BIT 1
#define FN_ODD_RECS_BIT 2

/* The GPU idle inside an instance's graph replays, as a share of their extents: per graph
 * launch, its records' extent less their union. */
static double fn_idle(const fn_ix *x, fn_inst *in)
{
    static size_t c[FN_CALLS_MAX];
    size_t n = fn_calls(x, &x->t->rng[in->rng], c, FN_CALLS_MAX);
    double ext = 0, idle = 0;
    in->nrec = in->neager = 0;
    for (size_t j = 0; j < n; j++) {
        const ptrace_api *a = &x->t->api[c[j]];
        size_t lo, hi = fn_recs_of(x, a->corr, &lo);   /* by start within the corr */
        in->nrec += (double)(hi - lo);
        if (fn_kind(a) == 'E' && strstr(a->name, "LaunchKernel"))
            in->neager += 1;
        if (fn_kind(a) != 'G' || hi <= lo)
            continue;
        int64_t s0 = x->rec[lo].s, end = INT64_MIN, gaps = 0;
        for (size_t q = lo; q < hi; q++) {
            const fn_rec *r = &x->rec[q];
            int64_t e = r->kind ? x->t->mem[r->idx].end_ns : x->t->kern[r->idx].end_ns;
            if (end != INT64_MIN && r->s > end)
                gaps += r->s - end;
            if (e > end)
                end = e;
        }
        ext += (double)(end - s0);
        idle += (double)gaps;
    }
    in->ext = ext;
    return ext > 0 ? idle / ext : 0;
}

static int fn_cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Marks the instances whose replays idle FN_ODD_IDLE more than the median of their
 * configuration's (a stall inside one replay: scaling a lite span by it would shrink every
 * kernel), or whose GPU records are FN_ODD_RECS more or fewer than its median (the iteration
 * that captured a graph ran its kernels eagerly too). Returns the number marked. */
/* The median over instance i's configuration of the double at offset off of fn_inst (v: room
 * for x->nin values); *m: how many instances the configuration has. */
static double fn_cfg_median(const fn_ix *x, size_t i, size_t off, double *v, size_t *m)
{
    size_t n = 0;
    for (size_t j = 0; j < x->nin; j++)
        if (fn_same_cfg(&x->in[i], &x->in[j]))
            v[n++] = *(const double *)((const char *)&x->in[j] + off);
    qsort(v, n, sizeof *v, fn_cmp_d);
    *m = n;
    return v[n / 2];   /* n >= 1: instance i itself */
}

static size_t fn_mark_odd(fn_ix *x)
{
    size_t odd = 0, m;
    double *v = malloc((x->nin + 1) * sizeof *v);
    if (!v)
        return 0;   /* out of memory: none marked, the choice is as before */
    for (size_t i = 0; i < x->nin; i++)
        x->in[i].idle = fn_idle(x, &x->in[i]);
    for (size_t i = 0; i < x->nin; i++) {
        fn_inst *in = &x->in[i];
        double idle = fn_cfg_median(x, i, offsetof(fn_inst, idle), v, &m);
        in->odd = m >= 3 && in->idle > idle + FN_ODD_IDLE ? FN_ODD_IDLE_BIT : 0;
        double nrec = fn_cfg_median(x, i, offsetof(fn_inst, nrec), v, &m);
        if (m >= 3 && fabs(in->nrec - nrec) > FN_ODD_RECS * nrec + 2)
            in->odd |= FN_ODD_RECS_BIT;
        in->neager_med = fn_cfg_median(x, i, offsetof(fn_inst, neager), v, &m);
        odd += in->odd != 0;
    }
    free(v);
    return odd;
}

/* The reference instance for li: same phase and configuration, not odd (fn_mark_odd) unless li
 * shows the same (its graph spans, lspan summed, 0: not known, within FN_ODD_IDLE of the odd
 * replay's extents; its counted launches a quarter of the way or more from the shape's median
 * to the odd instance's eager launches), nearest KV context, the least used (consecutive lite
 * instances of one shape take consecutive reference instances); else the same phase's nearest
 * shape by tokens then ctx (*nearest = 1), one of the same structure first (graph or eager,
 * and the forwards it runs: a draft of steps 5 runs 4, whose kernels do not fit one forward's
 * span); *nearest = 2 where the phase has none of that structure. NULL: none of the phase. */
static fn_inst *fn_choose(fn_run *F, const fn_inst *li, double lspan, int *ri, int *nearest)
{
    fn_inst *best = NULL;
    int bexact = 0, bgood = 0, bstruct = 0;
    double bd0 = 0, bd1 = 0;
    for (int r = 0; r < F->nref; r++)
        for (size_t i = 0; i < F->ref[r].nin; i++) {
            fn_inst *c = &F->ref[r].in[i];
            if (c->phase != li->phase)
                continue;
            int exact = fn_same_cfg(c, li);
            /* an odd replay serves a lite instance that shows the same: its spans (idle) or its
             * counted kernel launches (records; a trace without counts, e.g. lite-from, agrees) */
            const ptrace_range *lr = &F->t->rng[li->rng];
            int span_ok = lspan > 0 && c->ext > 0 && fabs(lspan / c->ext - 1) <= FN_ODD_IDLE;
            /* counted launches on the odd instance's side of its shape's median: a lite
             * counter sees fewer than CUPTI's launch records (the graph capture's eager run:
             * 394 counted against 780 records), so a quarter of the way is enough */
            double L = (double)lr->launches, med = c->neager_med, q = (c->neager - med) / 4;
            int launch_ok = !lr->has_launches || (q > 0 ? L >= med + q : q < 0 ? L <= med + q : 1);
            int good = !((c->odd & FN_ODD_IDLE_BIT) && !span_ok) && !((c->odd & FN_ODD_RECS_BIT) && !launch_ok);
            double d0 = exact ? 0 : fabs(c->sh.tokens - li->sh.tokens);
            double d1 = fabs(c->sh.kv - li->sh.kv);
            int same = c->sh.graph == li->sh.graph && c->sh.F == li->sh.F;
            int better = !best || exact > bexact || (exact == bexact && same > bstruct) ||
                         (exact == bexact && same == bstruct && good > bgood) ||
                         (exact == bexact && same == bstruct && good == bgood && (d0 < bd0 || (d0 == bd0 && (d1 < bd1 ||
                          (d1 == bd1 && c->used < best->used)))));
            if (better) {
                best = c;
                *ri = r;
                bexact = exact;
                bstruct = same;
                bgood = good;
                bd0 = d0;
                bd1 = d1;
            }
        }
    *nearest = best && !bexact ? (bstruct ? 1 : 2) : 0;
    return best;
}

/* ---- the host map: reference host times -> lite host times ------------------------------- */

#define FN_ANCHORS_MAX 512

typedef struct {
    int64_t x[FN_ANCHORS_MAX], y[FN_ANCHORS_MAX];
    int n;
} fn_map;

static void fn_map_add(fn_map *m, int64_t x, int64_t y)
{
    if (m->n >= FN_ANCHORS_MAX || (m->n && (x <= m->x[m->n - 1] || y < m->y[m->n - 1])))
        return;   /* keep it monotone: a crossing anchor is dropped */
    m->x[m->n] = x;
    m->y[m->n] = y;
    m->n++;
}


/* The reference host's stalls: a gap between two of an instance's consecutive calls longer
 * than FN_STALL_MEDIANS times the instance's median gap (and FN_STALL_MIN_US); where the lite
 * host was faster, the time it saved comes out of them first, each down to that cap, when its
 * host time is shared out among the reference's calls (fn_map_at). A
 * node-level reference stalls where the lite program did not (torchbench call 16, eager verify
 * at 80 rows: five gaps of 4.0-4.6 ms among 366 calls whose median gap is 18 us, 21 of the
 * range's 37 ms, while the lite range took 9.7 ms): spread in proportion to the reference's
 * time, the launches after a stall came late, the GPU sat idle waiting for them and then ran
 * 1.2 ms past the lite's own synchronize that had seen it finish. */
#define FN_STALL_MEDIANS 20.0
#define FN_STALL_MIN_US 200.0
#define FN_STALLS_MAX 64

typedef struct {
    int64_t s[FN_STALLS_MAX], cap_end[FN_STALLS_MAX], excess[FN_STALLS_MAX];
    int n;
} fn_warp;

static int fn_cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The stalls of reference range rr whose calls are c[0..n) (in start order). */
static void fn_warp_init(fn_warp *w, const fit_trace *rt, const ptrace_range *rr, const size_t *c,
                         size_t n)
{
    static int64_t g[FN_CALLS_MAX + 1];
    w->n = 0;
    if (n == 0)
        return;
    int64_t prev = rr->start_ns;
    size_t ng = 0;
    for (size_t j = 0; j <= n; j++) {
        int64_t s = j < n ? rt->api[c[j]].start_ns : rr->end_ns;
        g[ng++] = s > prev ? s - prev : 0;
        if (j < n && rt->api[c[j]].end_ns > prev)
            prev = rt->api[c[j]].end_ns;
    }
    static int64_t sorted[FN_CALLS_MAX + 1];
    memcpy(sorted, g, ng * sizeof *g);
    qsort(sorted, ng, sizeof *sorted, fn_cmp_i64);
    double cap = FN_STALL_MEDIANS * (double)sorted[ng / 2];
    if (cap < FN_STALL_MIN_US * 1000.0)
        cap = FN_STALL_MIN_US * 1000.0;
    prev = rr->start_ns;
    for (size_t j = 0; j <= n && w->n < FN_STALLS_MAX; j++) {
        if ((double)g[j] > cap) {
            w->s[w->n] = prev;
            w->cap_end[w->n] = prev + (int64_t)cap;
            w->excess[w->n] = g[j] - (int64_t)cap;
            w->n++;
        }
        if (j < n && rt->api[c[j]].end_ns > prev)
            prev = rt->api[c[j]].end_ns;
    }
}

/* Reference host time x with the stalls before it cut to their cap (monotone). */
static int64_t fn_warp_at(const fn_warp *w, int64_t x)
{
    int64_t cut = 0;
    for (int i = 0; i < w->n; i++) {
        if (x <= w->cap_end[i])
            break;
        int64_t in = x - w->cap_end[i];
        cut += in < w->excess[i] ? in : w->excess[i];
    }
    return x - cut;
}

/* Piecewise linear between anchors; outside them, shifted as the nearest anchor is. Where
 * the lite took less time between two anchors than the reference, the difference comes out
 * of the reference's stalls first (each down to its cap, in proportion), the rest is scaled:
 * a lite host as fast as the reference's maps onto it unchanged (the round trip). */
static int64_t fn_map_at(const fn_map *m, const fn_warp *w, int64_t x)
{
    if (m->n == 0)
        return x;
    if (x <= m->x[0])
        return x + (m->y[0] - m->x[0]);
    for (int i = 1; i < m->n; i++)
        if (x <= m->x[i]) {
            int64_t xa = m->x[i - 1], xb = m->x[i], ya = m->y[i - 1], yb = m->y[i];
            double dr = (double)(xb - xa), dl = (double)(yb - ya);
            double ca = (double)(xa - fn_warp_at(w, xa));
            double eseg = (double)(xb - fn_warp_at(w, xb)) - ca;
            double ex = (double)(x - fn_warp_at(w, x)) - ca;
            double cut = dr - dl < eseg ? dr - dl : eseg;
            if (cut < 0)
                cut = 0;
            double f = eseg > 0 ? cut / eseg : 0;
            double xr = (double)(x - xa) - f * ex, den = dr - cut;
            return ya + (den > 0 ? (int64_t)llround(xr * dl / den) : 0);
        }
    return x + (m->y[m->n - 1] - m->x[m->n - 1]);
}

/* ---- placing records ------------------------------------------------------------------- */

/* One reference record to be placed in the lite trace. */
typedef struct {
    int      kind;          /* 0 kernel, 1 copy */
    size_t   idx;           /* in the reference trace */
    int64_t  s, e;          /* reference times */
    int      how;           /* 0: after its call (eager, blocking); 1: scaled into a span */
    int      call;          /* how 0: 0 no call (placed by the host map), 1 an eager launch,
                               2 a blocking call (the copy it waited for) */
    int64_t  call_end;      /* how 0: its call's end in the lite trace (no call: the host
                               map of its start) */
    int64_t  a, b;          /* how 0: reference start - its call's end; - the reference GPU's
                               latest end before it (fn_ix_gpu_free) */
    int64_t  s0, span_ref, l0, span_lite;   /* how 1: reference span start, length; lite's */
    int      blocks;        /* call 2: the lite call blocked the host (its args' blocking: a
                               DtoH copy to pageable memory, a synchronize); 0 it did not (a
                               DtoD or pageable HtoD copy returns before the GPU runs it); -1
                               not known */
    uint32_t corr, stream, dev;  /* in the lite trace (stream, dev: 0 = the reference's) */
} fn_place;

static int fn_cmp_place(const void *a, const void *b)
{
    const fn_place *x = a, *y = b;
    return (x->s > y->s) - (x->s < y->s);
}

static int fn_add_rec(fn_run *F, const fit_trace *rt, const fn_place *p, int64_t s, int64_t e,
                      const char *nvtx, const char *phase)
{
    fit_trace *t = F->t;
    int rc;
    if (p->kind == 0) {
        ptrace_kernel k = rt->kern[p->idx];
        k.start_ns = s;
        k.end_ns = e;
        k.corr = p->corr;
        if (p->stream)
            k.stream = p->stream, k.dev = p->dev;
        k.nvtx = nvtx;
        k.phase = phase;
        rc = fit_trace_add_kernel(t, &k);
    } else {
        ptrace_mem m = rt->mem[p->idx];
        m.start_ns = s;
        m.end_ns = e;
        m.corr = p->corr;
        if (p->stream)
            m.stream = p->stream, m.dev = p->dev;
        m.nvtx = nvtx;
        m.phase = phase;
        rc = fit_trace_add_mem(t, &m);
    }
    if (rc)
        return fn_oom(F->err, F->errlen, t->file);
    F->st->records++;
    return 0;
}

/* Places n records (sorted by reference start). A record scaled into a graph span keeps its
 * share of the reference replay (start and end, so the gaps between kernels scale too). Any
 * other is replayed as the reference ran it, on one GPU timeline per trace (F->gpu_end: the
 * latest end placed so far, graph spans included). In the reference a record either waited
 * for its launch (the GPU was free when its call ended: b >= a, a = its start - its call's
 * end, b = its start - the GPU's latest end before it) or was queued behind GPU work (b < a).
 * Launch-bound: it starts a after its call's lite end, but not before the lite GPU is free
 * plus min(b, G); queued: b after the lite GPU is free, but not before its call's end plus
 * min(L, a). L: the reference trace's launch latency (median a of its launch-bound records);
 * G: the instance's shortest non-negative queue gap b. A copy its blocking call waited for
 * (it ended before the call returned: a + duration <= 0) ends as far before the lite call's
 * end as it did in the reference: the lite call's end measured it. Durations are the
 * reference's. With
 * the reference's own host and GPU times this gives the reference's times back exactly (the
 * round trip); a faster lite host moves launch-bound records with their launches, queued
 * ones stay behind the GPU work before them. */
static int fn_place_all(fn_run *F, const fit_trace *rt, fn_place *p, size_t n, const char *nvtx,
                        const char *phase)
{
    qsort(p, n, sizeof *p, fn_cmp_place);
    int64_t G = INT64_MAX, L = F->launch_lat;
    for (size_t i = 0; i < n; i++)
        if (p[i].how == 0 && p[i].b >= 0 && p[i].b < G)
            G = p[i].b;
    if (G == INT64_MAX)
        G = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t s, e;
        if (p[i].how == 1) {
            double f = p[i].span_ref > 0 ? (double)p[i].span_lite / (double)p[i].span_ref : 1.0;
            s = p[i].l0 + (int64_t)llround((double)(p[i].s - p[i].s0) * f);
            e = p[i].l0 + (int64_t)llround((double)(p[i].e - p[i].s0) * f);
        } else {
            int queued = p[i].b < p[i].a;
            int64_t launch = p[i].call == 0 ? p[i].call_end
                                            : p[i].call_end + (queued ? (L < p[i].a ? L : p[i].a) : p[i].a);
            s = launch;
            /* a copy its blocking call waited for ends where the lite call says it did; not
             * a copy whose lite call did not block (it ran in stream order, after the GPU's
             * work before it: torchbench's DtoD copy in accept, anchored to its 13 us call
             * 2 ms before the verify graph it followed had ended) */
            int waited = p[i].call == 2 && p[i].a + (p[i].e - p[i].s) <= 0 && p[i].blocks != 0;
            if (F->gpu_end != INT64_MIN) {
                int64_t q = F->gpu_end + (queued ? p[i].b : p[i].b < G ? p[i].b : G);
                /* a waited copy still follows the GPU work before it in stream order, but
                 * ends by its lite call's end: the reference's offset from copy end to call
                 * end can hold a host stall inside the call (torchbench call 16: a copy 5.2
                 * ms before its call returned, placed by that offset before the kernels it
                 * waited for) */
                int64_t latest = p[i].call_end - (p[i].e - p[i].s);
                if (waited && q > latest)
                    q = latest;
                if (q > s)
                    s = q;
            }
            e = s + (p[i].e - p[i].s);
            if (p[i].kind == 0 && F->cupti_off) {
                /* a lite capture has no CUPTI: a kernel copied with its reference duration
                 * loses the profiler's part, as the fit takes it out of node-level traces
                 * (a kernel scaled into a lite graph span is already unprofiled) */
                double c = fit_instances_cupti_kernel_us() * 1000.0, d = (double)(e - s);
                e -= (int64_t)llround(c < 0.5 * d ? c : 0.5 * d);
            }
        }
        if (getenv("FIT_NODES_DEBUG") && strstr(nvtx, getenv("FIT_NODES_DEBUG")))
            fprintf(stderr, "node %s: how %d call %d ref %.1f+%.1f a %.1f b %.1f -> %.1f+%.1f "
                    "(gpu end %.1f, L %.1f G %.1f)\n", nvtx, p[i].how, p[i].call, p[i].s / 1e3,
                    (p[i].e - p[i].s) / 1e3, p[i].a / 1e3, p[i].b / 1e3, s / 1e3, (e - s) / 1e3,
                    F->gpu_end / 1e3, L / 1e3, G / 1e3);
        if (fn_add_rec(F, rt, &p[i], s, e, nvtx, phase))
            return -1;
        if (F->gpu_end == INT64_MIN || e > F->gpu_end)
            F->gpu_end = e;
    }
    return 0;
}

static int fn_oom(char *err, size_t errlen, const char *file)
{
    snprintf(err, errlen, "%s: out of memory (filling graph launches with nodes)", file);
    return -1;
}

/* The graph_trace event of a launch (by corr; lite captures), or NULL. */
static const ptrace_graphlaunch *fn_gl_of(const fit_trace *t, const size_t *glc, uint32_t corr)
{
    size_t lo = 0, hi = t->ngl;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (t->gl[glc[mid]].corr < corr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < t->ngl && t->gl[glc[lo]].corr == corr ? &t->gl[glc[lo]] : NULL;
}

/* A lite instance's graph_trace spans, summed (ns; 0: none). */
static double fn_lite_span(const fn_run *F, const fn_inst *li, const size_t *glc)
{
    static size_t c[FN_CALLS_MAX];
    size_t n = fn_calls(&F->self, &F->t->rng[li->rng], c, FN_CALLS_MAX);
    double span = 0;
    for (size_t j = 0; j < n; j++) {
        const ptrace_api *a = &F->t->api[c[j]];
        const ptrace_graphlaunch *g = fn_kind(a) == 'G' ? fn_gl_of(F->t, glc, a->corr) : NULL;
        if (g)
            span += (double)(g->end_ns - g->start_ns);
    }
    return span;
}

static int fn_cmp_inst_start(const void *a, const void *b)
{
    int64_t x = fn_sort_t->rng[((const fn_inst *)a)->rng].start_ns;
    int64_t y = fn_sort_t->rng[((const fn_inst *)b)->rng].start_ns;
    return (x > y) - (x < y);
}

static int fn_cmp_glc(const void *a, const void *b)
{
    uint32_t x = fn_sort_t->gl[*(const size_t *)a].corr, y = fn_sort_t->gl[*(const size_t *)b].corr;
    return (x > y) - (x < y);
}


/* A lite instance li of the trace filled from the reference instance ri: its graph launches
 * by position (the Nth launch of the instance from the reference's Nth), the reference's other
 * launch calls mapped onto the lite host timeline, their records placed (fn_place_all). */
static int fn_fill_instance(fn_run *F, const fn_inst *li, const size_t *glc, const fn_ix *rx,
                            const fn_inst *ri)
{
    fit_trace *t = F->t;
    const fit_trace *rt = rx->t;
    const ptrace_range *lr = &t->rng[li->rng], *rr = &rt->rng[ri->rng];
    static size_t lc[FN_CALLS_MAX], rc[FN_CALLS_MAX];
    size_t nl = fn_calls(&F->self, lr, lc, FN_CALLS_MAX);
    size_t nr = fn_calls(rx, rr, rc, FN_CALLS_MAX);
    /* the lite's calls (graph launches, blocking calls) matched to the reference's of the
     * same kinds in order; when the sequences differ, graph launches are still matched by
     * position and the host map has only the range's ends */
    size_t rl[FN_CALLS_MAX], nrl = 0;   /* the reference's G/B calls */
    for (size_t j = 0; j < nr; j++)
        if (fn_kind(&rt->api[rc[j]]) != 'E')
            rl[nrl++] = rc[j];
    size_t nll = 0;
    int same = 1;
    for (size_t j = 0; j < nl; j++) {
        char k = fn_kind(&t->api[lc[j]]);
        if (k == 'E')
            continue;
        if (nll >= nrl || fn_kind(&rt->api[rl[nll]]) != k)
            same = 0;
        nll++;
    }
    if (nll != nrl)
        same = 0;
    if (!same)
        F->st->anchors_differ++;
    static fn_warp w;
    fn_warp_init(&w, rt, rr, rc, nr);
    fn_map m;
    m.n = 0;
    fn_map_add(&m, rr->start_ns, lr->start_ns);
    size_t *lmatch = calloc(nrl + 1, sizeof *lmatch);   /* the lite call of each G/B, +1 */
    fn_place *pl = NULL;
    size_t npl = 0, cappl = 0;
    int rcode = -1;
    if (!lmatch)
        goto oom;
    /* match: by kind sequence when same; else graph launches by position only */
    {
        size_t jr = 0, ng_l = 0;
        size_t gr[FN_CALLS_MAX], ngr = 0;
        for (size_t j = 0; j < nrl; j++)
            if (fn_kind(&rt->api[rl[j]]) == 'G')
                gr[ngr++] = j;
        for (size_t j = 0; j < nl; j++) {
            const ptrace_api *a = &t->api[lc[j]];
            char k = fn_kind(a);
            if (k == 'E')
                continue;
            if (same) {
                lmatch[jr] = lc[j] + 1;
                const ptrace_api *b = &rt->api[rl[jr]];
                fn_map_add(&m, b->start_ns, a->start_ns);
                fn_map_add(&m, b->end_ns, a->end_ns);
                jr++;
            } else if (k == 'G') {
                if (ng_l < ngr)
                    lmatch[gr[ng_l]] = lc[j] + 1;
                ng_l++;
            }
        }
        if (!same) {
            size_t nglite = 0;
            for (size_t j = 0; j < nl; j++)
                nglite += fn_kind(&t->api[lc[j]]) == 'G';
            if (nglite != ngr)
                F->st->positions_differ++;
        }
    }
    fn_map_add(&m, rr->end_ns, lr->end_ns);
    if (lr->has_launches) {   /* the lite range counted its kernel launches: the reference's? */
        int64_t nk = 0;
        for (size_t j = 0; j < nr; j++)
            nk += fn_kind(&rt->api[rc[j]]) == 'E' && strstr(rt->api[rc[j]].name, "LaunchKernel");
        if (nk != lr->launches)
            F->st->launches_differ++;
    }
    const char *nvtx = lr->name, *phase = wm_phase_name[li->phase];
    for (size_t j = 0; j < nr; j++) {
        const ptrace_api *b = &rt->api[rc[j]];
        char k = fn_kind(b);
        size_t gi = 0;   /* its place among the G/B calls */
        const ptrace_api *a = NULL;
        if (k != 'E') {
            while (gi < nrl && rl[gi] != rc[j])
                gi++;
            if (gi < nrl && lmatch[gi])
                a = &t->api[lmatch[gi] - 1];
        }
        const ptrace_graphlaunch *g = NULL;
        if (k == 'G') {
            if (!a)
                continue;                 /* the lite instance has fewer launches */
            g = fn_gl_of(t, glc, a->corr);
            if (!g) {
                F->st->no_span++;
                continue;
            }
            F->st->graph_filled++;
        } else if (k == 'B' && !a) {
            continue;                     /* a blocking call the lite did not make here */
        }
        uint32_t corr;
        int64_t call_end;
        if (a) {
            corr = a->corr;
            call_end = a->end_ns;
        } else {   /* an eager call: mapped onto the lite host timeline */
            ptrace_api c = *b;
            c.start_ns = fn_map_at(&m, &w, b->start_ns);
            c.end_ns = fn_map_at(&m, &w, b->end_ns);
            if (c.end_ns < c.start_ns)
                c.end_ns = c.start_ns;
            c.corr = corr = F->next_corr++;
            c.thread = lr->thread;
            call_end = c.end_ns;
            if (fit_trace_add_api(t, &c))
                goto oom;
            F->st->calls_added++;
        }
        size_t lo, hi = fn_recs_of(rx, b->corr, &lo);
        int64_t s0 = INT64_MAX, e0 = INT64_MIN;
        for (size_t q = lo; q < hi; q++) {
            const fn_rec *x = &rx->rec[q];
            int64_t s = x->kind ? rt->mem[x->idx].start_ns : rt->kern[x->idx].start_ns;
            int64_t e = x->kind ? rt->mem[x->idx].end_ns : rt->kern[x->idx].end_ns;
            s0 = s < s0 ? s : s0;
            e0 = e > e0 ? e : e0;
        }
        for (size_t q = lo; q < hi; q++) {
            const fn_rec *x = &rx->rec[q];
            if (fit_trace_grow((void **)&pl, &cappl, npl, sizeof *pl))
                goto oom;
            fn_place p;
            memset(&p, 0, sizeof p);
            p.kind = x->kind;
            p.idx = x->idx;
            p.s = x->kind ? rt->mem[x->idx].start_ns : rt->kern[x->idx].start_ns;
            p.e = x->kind ? rt->mem[x->idx].end_ns : rt->kern[x->idx].end_ns;
            p.corr = corr;
            p.call = k == 'B' ? 2 : 1;
            p.call_end = call_end;
            p.blocks = a && a->has_lite ? a->blocking : -1;
            p.a = p.s - b->end_ns;
            int64_t free_ref = fn_ix_gpu_free(rx, p.s);
            p.b = free_ref == INT64_MIN ? INT64_MAX / 4 : p.s - free_ref;
            /* the reference's GPU idle at its range's start: what came before is the
             * reference host's gap between phases, which the lite capture has its own of, or
             * (a reference built from the probes, docs/fit.md 1c) instances the reference does
             * not hold: the idle counts from the range's start (specbench's call 35: a probed
             * sample 82 ms and 1.9 s after the last probed record laid every filled sample
             * that much after the GPU's work, decode's host gap -51 s) */
            if (free_ref < rr->start_ns && p.s > rr->start_ns && p.b > p.s - rr->start_ns)
                p.b = p.s - rr->start_ns;
            if (g) {
                p.how = 1;
                p.s0 = s0;
                p.span_ref = e0 - s0;
                p.l0 = g->start_ns;
                p.span_lite = g->end_ns - g->start_ns;
                p.stream = g->stream;
                p.dev = g->dev;
            }
            pl[npl++] = p;
        }
    }
    if (fn_place_all(F, rt, pl, npl, nvtx, phase))
        goto out;
    rcode = 0;
    goto out;
oom:
    fn_oom(F->err, F->errlen, t->file);
out:
    free(lmatch);
    free(pl);
    return rcode;
}

/* The node records of launch corr of the indexed trace rx scaled into graph_trace g's span
 * (their shares of the replay's span kept), carrying g's corr, stream and range. 0 or -1. */
static int fn_fill_span(fn_run *F, const fn_ix *rx, uint32_t corr, const ptrace_graphlaunch *g)
{
    fit_trace *t = F->t;
    const fit_trace *rt = rx->t;
    size_t lo, hi = fn_recs_of(rx, corr, &lo);
    fn_place *pl = malloc((hi - lo + 1) * sizeof *pl);
    if (!pl)
        return fn_oom(F->err, F->errlen, t->file);
    int64_t s0 = INT64_MAX, e0 = INT64_MIN;
    size_t n = 0;
    for (size_t q = lo; q < hi; q++) {
        const fn_rec *x = &rx->rec[q];
        fn_place p;
        memset(&p, 0, sizeof p);
        p.kind = x->kind;
        p.idx = x->idx;
        p.s = x->kind ? rt->mem[x->idx].start_ns : rt->kern[x->idx].start_ns;
        p.e = x->kind ? rt->mem[x->idx].end_ns : rt->kern[x->idx].end_ns;
        s0 = p.s < s0 ? p.s : s0;
        e0 = p.e > e0 ? p.e : e0;
        pl[n++] = p;
    }
    for (size_t i = 0; i < n; i++) {
        pl[i].how = 1;
        pl[i].s0 = s0;
        pl[i].span_ref = e0 - s0;
        pl[i].l0 = g->start_ns;
        pl[i].span_lite = g->end_ns - g->start_ns;
        pl[i].corr = g->corr;
        pl[i].stream = g->stream;
        pl[i].dev = g->dev;
    }
    int rc = -1;
    if (rt != t) {
        rc = fn_place_all(F, rt, pl, n, g->nvtx, g->phase);
    } else {   /* records appended to the arrays they are read from: placed from copies of
                * the replay's records (fn_add_rec may move the arrays) */
        fit_trace snap = *t;
        snap.kern = malloc((n + 1) * sizeof *snap.kern);
        snap.mem = malloc((n + 1) * sizeof *snap.mem);
        if (!snap.kern || !snap.mem) {
            fn_oom(F->err, F->errlen, t->file);
        } else {
            size_t nk = 0, nm = 0;
            for (size_t i = 0; i < n; i++) {
                if (pl[i].kind == 0) {
                    snap.kern[nk] = t->kern[pl[i].idx];
                    pl[i].idx = nk++;
                } else {
                    snap.mem[nm] = t->mem[pl[i].idx];
                    pl[i].idx = nm++;
                }
            }
            rc = fn_place_all(F, &snap, pl, n, g->nvtx, g->phase);
        }
        free(snap.kern);
        free(snap.mem);
    }
    free(pl);
    return rc;
}

static int fn_cmp_replay(const void *a, const void *b)
{
    const ptrace_api *x = &fn_sort_t->api[*(const size_t *)a], *y = &fn_sort_t->api[*(const size_t *)b];
    if (x->graph_exec_id != y->graph_exec_id)
        return x->graph_exec_id < y->graph_exec_id ? -1 : 1;
    return (x->start_ns > y->start_ns) - (x->start_ns < y->start_ns);
}

/* A windowed capture's graph launch outside its windows (graph_trace g) from the same trace's
 * node-level replay of the same executable inside a window, the one nearest in time; rp[0..n):
 * the in-window graph launch calls with records, by (executable, start). 1 filled, 0 no
 * replay, -1 error. */
static int fn_fill_from_window(fn_run *F, const ptrace_graphlaunch *g, const size_t *rp, size_t n)
{
    const fit_trace *t = F->t;
    size_t lo = 0, hi = n;
    while (lo < hi) {   /* first of g's executable starting at or after g */
        size_t mid = (lo + hi) / 2;
        const ptrace_api *a = &t->api[rp[mid]];
        if (a->graph_exec_id < g->graph_exec_id ||
            (a->graph_exec_id == g->graph_exec_id && a->start_ns < g->start_ns))
            lo = mid + 1;
        else
            hi = mid;
    }
    const ptrace_api *best = NULL;
    if (lo < n && t->api[rp[lo]].graph_exec_id == g->graph_exec_id)
        best = &t->api[rp[lo]];
    if (lo > 0 && t->api[rp[lo - 1]].graph_exec_id == g->graph_exec_id &&
        (!best || g->start_ns - t->api[rp[lo - 1]].start_ns < best->start_ns - g->start_ns))
        best = &t->api[rp[lo - 1]];
    if (!best)
        return 0;
    return fn_fill_span(F, &F->self, best->corr, g) ? -1 : 1;
}

/* The range a graph_trace event belongs to: the latest range named g->nvtx starting before
 * its GPU start (as fit_instances places a record without a launch call), or -1. */
static long fn_range_of_gl(const fit_trace *t, const ptrace_graphlaunch *g)
{
    long best = -1;
    for (size_t i = 0; i < t->nrng; i++)
        if (t->rng[i].start_ns <= g->start_ns && !strcmp(t->rng[i].name, g->nvtx) &&
            (best < 0 || t->rng[i].start_ns > t->rng[best].start_ns))
            best = (long)i;
    return best;
}

int fit_nodes_fill(fit_trace *t, const fit_trace *ref, int nref, FILE *log, fit_nodes_stats *st,
                   char *err, size_t errlen)
{
    fn_run F;
    memset(&F, 0, sizeof F);
    memset(st, 0, sizeof *st);
    F.t = t;
    F.st = st;
    F.err = err;
    F.errlen = errlen;
    int lite = fit_trace_is_lite(t);
    int rcode = -1;
    size_t *glc = NULL;
    if (!lite && !(t->nwin && t->ngl))
        return 0;   /* node-level throughout: nothing to fill */
    if (lite && t->lite.static_runtime) {
        snprintf(err, errlen, "%s: field specprof_end.static_runtime: value true: the lite capture "
                 "saw NVTX ranges but no CUDA runtime call (the program links the runtime "
                 "statically: nvcc -cudart shared, traces/FORMAT.md \"Lite mode\"): its graph "
                 "launches are unknown", t->file);
        return -1;
    }
    if (lite && t->lite.capture_range[0] && t->lite.range_opens == 0) {
        snprintf(err, errlen, "%s: field specprof_end.range_opens: value 0: captured with "
                 "--capture-range %s, and the program never called cudaProfilerStart: nothing was "
                 "recorded (torch.cuda.profiler.start()/stop() around the part to record)", t->file,
                 t->lite.capture_range);
        return -1;
    }
    if (lite && nref < 1) {
        snprintf(err, errlen, "%s: a lite capture (capture.mode lite) holds no kernel records: "
                 "give node-level reference captures of the same program with --nodes "
                 "(docs/fit.md \"Lite captures\")", t->file);
        return -1;
    }
    if (nref > 0 && !(F.ref = calloc((size_t)nref, sizeof *F.ref)))
        return fn_oom(err, errlen, t->file);
    F.nref = nref;
    for (int r = 0; r < nref; r++) {
        if (fn_ix_build(&F.ref[r], &ref[r], err, errlen))
            goto out;
        st->odd_refs += fn_mark_odd(&F.ref[r]);
    }
    if (fn_ix_build(&F.self, t, err, errlen))
        goto out;
    glc = malloc((t->ngl + 1) * sizeof *glc);
    if (!glc) {
        fn_oom(err, errlen, t->file);
        goto out;
    }
    for (size_t i = 0; i < t->ngl; i++)
        glc[i] = i;
    fn_sort_t = t;
    qsort(glc, t->ngl, sizeof *glc, fn_cmp_glc);
    for (size_t i = 0; i < t->napi; i++)
        if (t->api[i].corr >= F.next_corr)
            F.next_corr = t->api[i].corr + 1;
    for (size_t i = 0; i < t->ngl; i++)
        if (t->gl[i].corr >= F.next_corr)
            F.next_corr = t->gl[i].corr + 1;
    if (F.next_corr < 1u << 30)
        F.next_corr = 1u << 30;   /* apart from the capture's own ids */
    /* the nearest-shape fallback: said once, with its counts, per trace */
    size_t nearest_inst = 0;
    const char *near_ex = NULL, *near_ref = NULL;
    F.gpu_end = INT64_MIN;
    if (lite) {
        fn_sort_t = t;   /* in time order: the GPU timeline is built as they are filled */
        qsort(F.self.in, F.self.nin, sizeof *F.self.in, fn_cmp_inst_start);
        for (size_t i = 0; i < F.self.nin; i++) {
            fn_inst *li = &F.self.in[i];
            int ri = 0, near = 0;
            fn_inst *rin = fn_choose(&F, li, fn_lite_span(&F, li, glc), &ri, &near);
            if (!rin) {
                snprintf(err, errlen, "%s: range \"%s\": phase %s: no instance of this phase "
                         "in the node-level reference traces (--nodes): its kernels are unknown",
                         t->file, t->rng[li->rng].name, wm_phase_name[li->phase]);
                goto out;
            }
            if (near == 2) {   /* 4 draft forwards' kernels squeezed into one forward's span */
                snprintf(err, errlen, "%s: range \"%s\": phase %s: no instance of this phase with its "
                         "structure (graph=%d forwards=%d) in the node-level reference traces (--nodes), "
                         "the nearest \"%s\": its kernels are unknown; give a reference that ran each "
                         "draft length and graph mode the capture ran", t->file, t->rng[li->rng].name,
                         wm_phase_name[li->phase], li->sh.graph, li->sh.F, F.ref[ri].t->rng[rin->rng].name);
                goto out;
            }
            rin->used++;
            if (near) {
                nearest_inst++;
                if (!near_ex) {
                    near_ex = t->rng[li->rng].name;
                    near_ref = F.ref[ri].t->rng[rin->rng].name;
                }
            }
            F.cupti_off = !(t->has_header && t->hdr.cupti_version > 0) &&
                          F.ref[ri].t->has_header && F.ref[ri].t->hdr.cupti_version > 0;
            F.launch_lat = F.ref[ri].launch_lat;
            if (fn_fill_instance(&F, li, glc, &F.ref[ri], rin))
                goto out;
            st->instances_filled++;
        }
    } else {
        /* windows + graph-level launches between them: each launch outside the windows from
         * the same executable's replay inside one, else (with references) by phase, shape
         * and position; a range all of whose launches were filled gets a window of its own,
         * so that the fit keeps it (its host gap is not measured: no predecessor in it) */
        size_t ngl0 = t->ngl;
        long *r_of = malloc((ngl0 + 1) * sizeof *r_of);
        char *filled = calloc(ngl0 + 1, 1);
        if (!r_of || !filled) {
            free(r_of);
            free(filled);
            fn_oom(err, errlen, t->file);
            goto out;
        }
        for (size_t i = 0; i < ngl0; i++)
            r_of[i] = fit_trace_window_of(t, t->gl[i].start_ns) >= 0 ? -2 : fn_range_of_gl(t, &t->gl[i]);
        /* the node-level replays: graph launch calls inside a window that have records */
        size_t *rp = malloc((t->napi + 1) * sizeof *rp), nrp = 0;
        if (!rp) {
            free(r_of);
            free(filled);
            fn_oom(err, errlen, t->file);
            goto out;
        }
        for (size_t i = 0; i < t->napi; i++) {
            const ptrace_api *a = &t->api[i];
            size_t lo;
            if (litefrom_is_graph(a) && fit_trace_window_of(t, a->start_ns) >= 0 &&
                fn_recs_of(&F.self, a->corr, &lo) > lo)
                rp[nrp++] = i;
        }
        fn_sort_t = t;
        qsort(rp, nrp, sizeof *rp, fn_cmp_replay);
        int bad = 0;
        for (size_t i = 0; i < ngl0 && !bad; i++) {
            size_t lo0;
            if (r_of[i] == -2)
                continue;
            if (fn_recs_of(&F.self, t->gl[i].corr, &lo0) > lo0) {
                filled[i] = 1;   /* it has node records already (filled before) */
                continue;
            }
            const ptrace_graphlaunch g = t->gl[i];   /* a copy: records are appended */
            long r = r_of[i];
            int f = fn_fill_from_window(&F, &g, rp, nrp);
            if (f < 0) {
                bad = 1;
                break;
            }
            if (f == 1) {
                st->graph_filled++;
                st->self_filled++;
                filled[i] = 1;
                continue;
            }
            fn_inst li;
            memset(&li, 0, sizeof li);
            const char *bw;
            const bnd_kind *badk;
            double badv;
            li.rng = (size_t)(r >= 0 ? r : 0);
            li.phase = r >= 0 && nref > 0 ? fit_instances_parse(t->rng[r].name, &li.sh, &bw, &badk, &badv) : -1;
            int ri = 0, near = 0;
            fn_inst *rin = li.phase >= 0 ? fn_choose(&F, &li, 0, &ri, &near) : NULL;
            size_t pos = 0;   /* its place among its range's launches */
            for (size_t j = 0; j < i; j++)
                pos += r_of[j] == r;
            const fn_ix *rx = rin ? &F.ref[ri] : NULL;
            size_t hit = SIZE_MAX;
            if (rin) {
                static size_t rc[FN_CALLS_MAX];
                size_t nr = fn_calls(rx, &rx->t->rng[rin->rng], rc, FN_CALLS_MAX), k = 0;
                for (size_t j = 0; j < nr && hit == SIZE_MAX; j++)
                    if (fn_kind(&rx->t->api[rc[j]]) == 'G' && k++ == pos)
                        hit = rc[j];
            }
            if (hit == SIZE_MAX) {
                st->no_replay++;
                continue;
            }
            if (fn_fill_span(&F, rx, rx->t->api[hit].corr, &g) < 0) {
                bad = 1;
                break;
            }
            rin->used++;
            st->graph_filled++;
            filled[i] = 1;
            if (near) {
                nearest_inst++;
                if (!near_ex) {
                    near_ex = t->rng[r].name;
                    near_ref = rx->t->rng[rin->rng].name;
                }
            }
        }
        /* windows for the ranges outside windows whose every launch was filled */
        for (size_t i = 0; i < t->nrng && !bad; i++) {
            const ptrace_range *rg = &t->rng[i];
            if (fit_trace_window_of(t, rg->start_ns) >= 0 || fit_trace_window_of(t, rg->end_ns) >= 0)
                continue;
            int any = 0, all = 1;
            for (size_t j = 0; j < ngl0; j++)
                if (r_of[j] == (long)i) {
                    any = 1;
                    all &= filled[j];
                }
            if (!any || !all)
                continue;
            ptrace_window w;
            memset(&w, 0, sizeof w);
            w.start_ns = rg->start_ns;
            w.end_ns = rg->end_ns;
            snprintf(w.reason, sizeof w.reason, "graph");
            if (fit_trace_add_window(t, &w)) {
                fn_oom(err, errlen, t->file);
                bad = 1;
            }
            st->windows_added++;
        }
        free(r_of);
        free(filled);
        free(rp);
        if (bad)
            goto out;
    }
    st->nearest = nearest_inst;
    if (log && nearest_inst)
        fprintf(log, "specsim fit: warning: %s: %zu phase instance%s had no node-level reference "
                "of the same shape: filled from the nearest shape of their phase (by tokens, then "
                "ctx), e.g. \"%s\" from \"%s\"\n", t->file, nearest_inst, nearest_inst == 1 ? "" : "s",
                near_ex, near_ref);
    if (log && st->no_replay)
        fprintf(log, "specsim fit: warning: %s: %zu graph launch%s outside the node-level windows "
                "had no node-level replay (same executable in a window%s): left without kernels, "
                "their instances are not fitted\n", t->file, st->no_replay,
                st->no_replay == 1 ? "" : "es", nref ? ", or a reference instance of its phase" : "");
    if (log && st->odd_refs)
        fprintf(log, "specsim fit: note: %s: %zu reference instance%s unlike their shape's others "
                "(graph replays idle %.0f points more of their span than the median, or %.0f%% more "
                "or fewer GPU records, e.g. the iteration that captured a graph): used only where no "
                "other of the shape exists or the lite instance shows the same\n", t->file,
                st->odd_refs, st->odd_refs == 1 ? "" : "s", 100 * FN_ODD_IDLE, 100 * FN_ODD_RECS);
    if (log && (st->anchors_differ || st->no_span || st->launches_differ))
        fprintf(log, "specsim fit: note: %s: %zu instance%s whose recorded calls differ from their "
                "reference's (host map by the range's ends only), %zu graph launch%s without a "
                "graph_trace span (left empty), %zu whose counted kernel launches (the range's "
                "launches=) are not the reference's eager cudaLaunchKernel calls (libraries with "
                "their own runtime are not counted)\n", t->file, st->anchors_differ,
                st->anchors_differ == 1 ? "" : "s", st->no_span, st->no_span == 1 ? "" : "es",
                st->launches_differ);
    rcode = 0;
out:
    for (int r = 0; r < nref && F.ref; r++)
        fn_ix_free(&F.ref[r]);
    free(F.ref);
    fn_ix_free(&F.self);
    free(glc);
    return rcode;
}
