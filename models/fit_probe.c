/* fit_probe.c: the node probe's replays as a reference for the fit (see fit_probe.h). The
 * graph_probe events are read in one streaming pass over the file; the lite trace is then
 * loaded whole once more (a lite trace is ~20 bytes a record on disk, ~1-2k records a second)
 * to find each probed launch's phase range and the other calls inside it. */
#include "fit_probe.h"
#include "ptrace_read.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FP_LAUNCH_INTS 8           /* per node: grid x y z, block x y z, dynamic smem, regs */
#define FP_MAX_NODES 65536         /* as the probe writes (plprobe.c) */
#define FP_MAX_NAMES (1u << 20)

typedef struct {
    uint32_t exec;
    int n;
    char *type, *ckind;            /* per node: K C S H G; copy kind digit or '-' */
    uint32_t *name;
    int32_t *launch;               /* FP_LAUNCH_INTS per node, or NULL */
    int64_t *bytes;                /* or NULL */
    int32_t *pred_off, *pred;
    int *order;                    /* a topological order of the nodes */
    double cost_us;                /* the events' cost per node (set after the scan) */
} fp_graph;

typedef struct {
    ptrace_graphlaunch g;          /* the instrumented replay's span and fields */
    int n;
    float *end_us;
    size_t range;                  /* its phase range in the full trace (SIZE_MAX: none) */
} fp_probe;

typedef struct {
    const char *path;
    char **name;                   /* by id - 1 */
    size_t nname, capname;
    fp_graph *g;
    size_t ng, capg;
    fp_probe *p;
    size_t np, capp;
    char *err;
    size_t errlen;
    int failed;
} fp_scan;

static int fp_grow(void **a, size_t *cap, size_t n, size_t sz)
{
    if (n < *cap)
        return 0;
    size_t c = *cap ? 2 * *cap : 16;
    while (c <= n)
        c *= 2;
    void *x = realloc(*a, c * sz);
    if (!x)
        return -1;
    *a = x;
    *cap = c;
    return 0;
}

static int fp_fail(fp_scan *S, size_t line, const char *field, const char *why)
{
    snprintf(S->err, S->errlen, "%s: line %zu: field %s: %s (a node probe event, traces/FORMAT.md "
             "\"Node probe\")", S->path, line, field, why);
    S->failed = 1;
    return 1;
}

static void fp_graph_free(fp_graph *g)
{
    free(g->type);
    free(g->ckind);
    free(g->name);
    free(g->launch);
    free(g->bytes);
    free(g->pred_off);
    free(g->pred);
    free(g->order);
}

/* An array member of n integers in [lo, hi] into out (malloc'd); 0, or -1 when it is not one. */
static int fp_ints(const pjson *a, const char *key, size_t n, int64_t lo, int64_t hi, int64_t **out)
{
    const pjson *v = pjson_get(a, key);
    *out = NULL;
    if (!v || v->type != PJSON_ARR || v->len != n)
        return -1;
    int64_t *x = malloc((n ? n : 1) * sizeof *x);
    if (!x)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const pjson *e = v->items[i];
        if (e->type != PJSON_NUM || !e->is_int || e->i < lo || e->i > hi) {
            free(x);
            return -1;
        }
        x[i] = e->i;
    }
    *out = x;
    return 0;
}

/* A node table (probe_graph): checked whole, its topological order made. */
static int fp_take_graph(fp_scan *S, const ptrace_event *ev)
{
    const pjson *a = ev->args;
    fp_graph g;
    memset(&g, 0, sizeof g);
    int64_t exec = pjson_get_int(a, "graph_exec_id", -1), n = pjson_get_int(a, "nodes", -1);
    const char *type = pjson_get_str(a, "type", NULL), *ck = pjson_get_str(a, "copy_kind", NULL);
    int64_t *name = NULL, *pn = NULL, *pr = NULL, *la = NULL, *by = NULL;
    int *indeg = NULL, *succ_off = NULL, *succ = NULL, rc = 1;
    if (exec < 1 || exec > UINT32_MAX)
        return fp_fail(S, ev->line, "args.graph_exec_id", "not an executable id");
    if (n < 1 || n > FP_MAX_NODES)
        return fp_fail(S, ev->line, "args.nodes", "not a node count (1 to 65536)");
    if (!type || strlen(type) != (size_t)n || strspn(type, "KCSHG") != (size_t)n)
        return fp_fail(S, ev->line, "args.type", "not one of K C S H G per node");
    if (ck && strlen(ck) != (size_t)n)
        return fp_fail(S, ev->line, "args.copy_kind", "not one character per node");
    if (fp_ints(a, "name", (size_t)n, 0, UINT32_MAX, &name))
        return fp_fail(S, ev->line, "args.name", "not a name id per node");
    if (fp_ints(a, "pred_n", (size_t)n, 0, n - 1, &pn)) {
        free(name);
        return fp_fail(S, ev->line, "args.pred_n", "not a predecessor count per node");
    }
    int64_t np = 0;
    for (int64_t i = 0; i < n; i++)
        np += pn[i];
    if (fp_ints(a, "pred", (size_t)np, 0, n - 1, &pr)) {
        fp_fail(S, ev->line, "args.pred", "not the node indices pred_n counts");
        goto out;
    }
    if (pjson_get(a, "launch") && fp_ints(a, "launch", (size_t)n * FP_LAUNCH_INTS, 0, INT32_MAX, &la)) {
        fp_fail(S, ev->line, "args.launch", "not 8 launch numbers per node");
        goto out;
    }
    if (pjson_get(a, "bytes") && fp_ints(a, "bytes", (size_t)n, 0, INT64_MAX / 4, &by)) {
        fp_fail(S, ev->line, "args.bytes", "not a byte count per node");
        goto out;
    }
    g.exec = (uint32_t)exec;
    g.n = (int)n;
    g.type = strdup(type);
    g.ckind = ck ? strdup(ck) : NULL;
    g.name = malloc((size_t)n * sizeof *g.name);
    g.pred_off = malloc(((size_t)n + 1) * sizeof *g.pred_off);
    g.pred = malloc(((size_t)np + 1) * sizeof *g.pred);
    g.order = malloc((size_t)n * sizeof *g.order);
    indeg = calloc((size_t)n, sizeof *indeg);
    succ_off = calloc((size_t)n + 1, sizeof *succ_off);
    succ = malloc(((size_t)np + 1) * sizeof *succ);
    if (la && (g.launch = malloc((size_t)n * FP_LAUNCH_INTS * sizeof *g.launch)))
        for (int64_t i = 0; i < n * FP_LAUNCH_INTS; i++)
            g.launch[i] = (int32_t)la[i];
    if (by && (g.bytes = malloc((size_t)n * sizeof *g.bytes)))
        memcpy(g.bytes, by, (size_t)n * sizeof *g.bytes);
    if (!g.type || (ck && !g.ckind) || !g.name || !g.pred_off || !g.pred || !g.order || !indeg || !succ_off || !succ ||
        (la && !g.launch) || (by && !g.bytes)) {
        fp_fail(S, ev->line, "args", "out of memory");
        goto out;
    }
    int64_t o = 0;
    for (int64_t i = 0; i < n; i++) {
        g.name[i] = (uint32_t)name[i];
        g.pred_off[i] = (int32_t)o;
        for (int64_t k = 0; k < pn[i]; k++, o++)
            g.pred[o] = (int32_t)pr[o];
    }
    g.pred_off[n] = (int32_t)o;
    /* each node's successors (the predecessor lists turned round: succ[succ_off[u] ..
     * succ_off[u + 1])), then Kahn's order: a node after all its predecessors (a cycle cannot
     * be a graph); linear in nodes and edges */
    for (int64_t k = 0; k < o; k++)
        succ_off[g.pred[k] + 1]++;
    for (int i = 0; i < n; i++)
        succ_off[i + 1] += succ_off[i];
    for (int v = 0; v < n; v++)   /* indeg (all 0 here) is each node's fill cursor first */
        for (int32_t k = g.pred_off[v]; k < g.pred_off[v + 1]; k++) {
            int u = g.pred[k];
            succ[succ_off[u] + indeg[u]++] = v;
        }
    for (int v = 0; v < n; v++)
        indeg[v] = g.pred_off[v + 1] - g.pred_off[v];
    int head = 0, tail = 0;
    for (int i = 0; i < n; i++)
        if (!indeg[i])
            g.order[tail++] = i;
    while (head < tail) {
        int u = g.order[head++];
        for (int k = succ_off[u]; k < succ_off[u + 1]; k++)
            if (--indeg[succ[k]] == 0)
                g.order[tail++] = succ[k];
    }
    if (tail != n) {
        fp_fail(S, ev->line, "args.pred", "the predecessors make a cycle");
        goto out;
    }
    for (size_t i = 0; i < S->ng; i++)
        if (S->g[i].exec == g.exec) {
            fp_fail(S, ev->line, "args.graph_exec_id", "a second node table for the same executable");
            goto out;
        }
    if (fp_grow((void **)&S->g, &S->capg, S->ng, sizeof *S->g)) {
        fp_fail(S, ev->line, "args", "out of memory");
        goto out;
    }
    S->g[S->ng++] = g;
    memset(&g, 0, sizeof g);
    rc = 0;
out:
    fp_graph_free(&g);
    free(name);
    free(pn);
    free(pr);
    free(la);
    free(by);
    free(indeg);
    free(succ_off);
    free(succ);
    return rc;
}

static int fp_take(void *user, const ptrace_event *ev, const ptrace_info *info)
{
    fp_scan *S = user;
    if (strcmp(ev->cat, "graph_probe"))
        return 0;
    if (ev->ph == 'M' && !strcmp(ev->name, "probe_names")) {
        int64_t first = pjson_get_int(ev->args, "first", 0);
        const pjson *v = pjson_get(ev->args, "names");
        if (first < 1 || !v || v->type != PJSON_ARR || (uint64_t)first + v->len > FP_MAX_NAMES)
            return fp_fail(S, ev->line, "args.first", "not the first id of a names array");
        for (size_t i = 0; i < v->len; i++) {
            size_t id = (size_t)first + i;
            if (v->items[i]->type != PJSON_STR)
                return fp_fail(S, ev->line, "args.names", "not a string");
            if (fp_grow((void **)&S->name, &S->capname, id, sizeof *S->name))
                return fp_fail(S, ev->line, "args.names", "out of memory");
            while (S->nname < id)
                S->name[S->nname++] = NULL;
            free(S->name[id - 1]);
            if (!(S->name[id - 1] = strdup(v->items[i]->str)))
                return fp_fail(S, ev->line, "args.names", "out of memory");
        }
        return 0;
    }
    if (ev->ph == 'M' && !strcmp(ev->name, "probe_graph"))
        return fp_take_graph(S, ev);
    fp_probe p;
    memset(&p, 0, sizeof p);
    const pjson *end = NULL;
    int n = ptrace_read_graphprobe(ev, info->header.t0_ns, &p.g, &end);
    if (n < 0)
        return fp_fail(S, ev->line, "args.end_us", "missing or not an array");
    if (n < 1 || n > FP_MAX_NODES || !p.g.corr || !p.g.graph_exec_id)
        return fp_fail(S, ev->line, "args", "a probed replay needs corr, graph_exec_id and 1 to 65536 node ends");
    if (fp_grow((void **)&S->p, &S->capp, S->np, sizeof *S->p) || !(p.end_us = malloc((size_t)n * sizeof *p.end_us)))
        return fp_fail(S, ev->line, "args.end_us", "out of memory");
    for (int i = 0; i < n; i++) {
        const pjson *e = end->items[i];
        if (e->type != PJSON_NUM || !(e->num >= 0 && e->num < 1e9)) {
            free(p.end_us);
            return fp_fail(S, ev->line, "args.end_us", "not a time in us (0 to 1e9)");
        }
        p.end_us[i] = (float)e->num;
    }
    p.n = n;
    p.range = SIZE_MAX;
    /* the strings live in the scan's event: kept as copies */
    char *nv = strdup(p.g.nvtx ? p.g.nvtx : ""), *ph = strdup(p.g.phase ? p.g.phase : "");
    if (!nv || !ph) {
        free(nv);
        free(ph);
        free(p.end_us);
        return fp_fail(S, ev->line, "args", "out of memory");
    }
    p.g.nvtx = nv;
    p.g.phase = ph;
    S->p[S->np++] = p;
    return 0;
}

static void fp_scan_free(fp_scan *S)
{
    for (size_t i = 0; i < S->nname; i++)
        free(S->name[i]);
    free(S->name);
    for (size_t i = 0; i < S->ng; i++)
        fp_graph_free(&S->g[i]);
    free(S->g);
    for (size_t i = 0; i < S->np; i++) {
        free(S->p[i].end_us);
        free((char *)S->p[i].g.nvtx);
        free((char *)S->p[i].g.phase);
    }
    free(S->p);
}

static int fp_cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double fp_median(double *v, size_t n)
{
    if (!n)
        return NAN;
    qsort(v, n, sizeof *v, fp_cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static fp_graph *fp_graph_of(fp_scan *S, uint32_t exec)
{
    for (size_t i = 0; i < S->ng; i++)
        if (S->g[i].exec == exec)
            return &S->g[i];
    return NULL;
}

/* The first word of a range name ("decode" of "decode bs=1 ctx=..."). */
static int fp_first_word_is(const char *name, const char *word)
{
    size_t n = strlen(word);
    return n && !strncmp(name, word, n) && (name[n] == 0 || name[n] == ' ');
}

/* The api event of full with correlation id corr among the graph launches (linear: a few
 * hundred probes against ~10^4-10^5 calls). */
static const ptrace_api *fp_api_of(const fit_trace *full, uint32_t corr)
{
    for (size_t i = 0; i < full->napi; i++)
        if (full->api[i].corr == corr && full->api[i].graph_exec_id)
            return &full->api[i];
    return NULL;
}

/* The phase range holding call a on its thread: the innermost whose first word is phase
 * (any range when phase is ""); SIZE_MAX when none. */
static size_t fp_range_of(const fit_trace *full, const ptrace_api *a, const char *phase)
{
    size_t best = SIZE_MAX;
    for (size_t i = 0; i < full->nrng; i++) {
        const ptrace_range *r = &full->rng[i];
        if (r->thread != a->thread || r->start_ns > a->start_ns || r->end_ns < a->end_ns)
            continue;
        if (phase[0] && !fp_first_word_is(r->name, phase))
            continue;
        if (best == SIZE_MAX || r->end_ns - r->start_ns < full->rng[best].end_ns - full->rng[best].start_ns)
            best = i;
    }
    return best;
}

static const char *const fp_copy_kinds[] = { "HtoH", "HtoD", "DtoH", "DtoD", "Default" };

/* The records of probed replay p (node times less the events' cost, laid out from the
 * replay's start in topological order) into ref. */
static int fp_add_records(fit_trace *ref, const fp_scan *S, const fp_graph *g, const fp_probe *p, size_t *made)
{
    int n = g->n;
    /* FIT_PROBE_GAP_US (experimental, 0 by default): the launch gap before each node after a
     * predecessor, left idle instead of in the node's time (CUPTI's kernels on torchbench's
     * H100 graphs stand 0.42 us apart, median; specbench's 0.10: docs/fit.md 1c) */
    const char *ge = getenv("FIT_PROBE_GAP_US");
    double gap = ge ? atof(ge) : 0;
    if (!(gap >= 0 && gap < 100))
        gap = 0;
    double *cend = malloc((size_t)n * sizeof *cend);
    if (!cend)
        return -1;
    int rc = 0;
    for (int k = 0; k < n && !rc; k++) {
        int i = g->order[k];
        double st = 0, pe = 0;
        for (int32_t j = g->pred_off[i]; j < g->pred_off[i + 1]; j++) {
            if (cend[g->pred[j]] > st)
                st = cend[g->pred[j]];
            if (p->end_us[g->pred[j]] > pe)
                pe = p->end_us[g->pred[j]];
        }
        double d = (double)p->end_us[i] - pe - g->cost_us;
        if (g->pred_off[i + 1] > g->pred_off[i] && gap > 0) {
            st += gap < d ? gap : d;
            d -= gap < d ? gap : d;
        }
        if (d < 0)
            d = 0;
        cend[i] = st + d;
        int64_t s_ns = p->g.start_ns + (int64_t)llround(st * 1e3), e_ns = p->g.start_ns + (int64_t)llround(cend[i] * 1e3);
        char ty = g->type[i];
        if (ty == 'K') {
            ptrace_kernel kr;
            memset(&kr, 0, sizeof kr);
            kr.start_ns = s_ns;
            kr.end_ns = e_ns;
            uint32_t id = g->name[i];
            kr.name = id && id <= S->nname && S->name[id - 1] ? S->name[id - 1] : "(unnamed kernel)";
            kr.corr = p->g.corr;
            kr.dev = p->g.dev;
            kr.stream = p->g.stream;
            if (g->launch) {
                const int32_t *l = &g->launch[(size_t)i * FP_LAUNCH_INTS];
                for (int q = 0; q < 3; q++) {
                    kr.grid[q] = l[q];
                    kr.block[q] = l[3 + q];
                }
                kr.smem_bytes = l[6];   /* dynamic only: static shared memory is not in the node */
                kr.regs = l[7];
            }
            kr.graph_id = p->g.graph_exec_id;
            kr.graph_node_id = (uint64_t)i + 1;
            kr.nvtx = p->g.nvtx;
            kr.phase = p->g.phase;
            rc = fit_trace_add_kernel(ref, &kr);
        } else if (ty == 'C' || ty == 'S') {
            ptrace_mem m;
            memset(&m, 0, sizeof m);
            m.kind = ty == 'C' ? PTRACE_MEMCPY : PTRACE_MEMSET;
            m.start_ns = s_ns;
            m.end_ns = e_ns;
            int kd = g->ckind && g->ckind[i] >= '0' && g->ckind[i] <= '4' ? g->ckind[i] - '0' : 4;
            m.copy_kind = ty == 'C' ? fp_copy_kinds[kd] : "";
            m.bytes = g->bytes ? (uint64_t)g->bytes[i] : 0;
            m.corr = p->g.corr;
            m.dev = p->g.dev;
            m.stream = p->g.stream;
            m.graph_id = p->g.graph_exec_id;
            m.graph_node_id = (uint64_t)i + 1;
            m.nvtx = p->g.nvtx;
            m.phase = p->g.phase;
            rc = fit_trace_add_mem(ref, &m);
        } else {
            continue;   /* host and child-graph nodes: no GPU record of their own */
        }
        (*made)++;
    }
    free(cend);
    return rc;
}

/* Removes from t the ranges of full's probed instances (same thread, start and name) and the
 * calls inside them on their thread, with those calls' graph_trace events. */
static size_t fp_drop(fit_trace *t, const fit_trace *full, const unsigned char *probed)
{
    size_t dropped = 0, k = 0;
    unsigned char *gone_rng = calloc(t->nrng + 1, 1);
    size_t *gone = malloc((t->nrng + 1) * sizeof *gone);   /* the dropped ranges' indices */
    if (!gone_rng || !gone) {
        free(gone_rng);
        free(gone);
        return 0;
    }
    for (size_t i = 0; i < full->nrng; i++) {
        if (!probed[i])
            continue;
        const ptrace_range *r = &full->rng[i];
        for (size_t j = 0; j < t->nrng; j++)
            if (!gone_rng[j] && t->rng[j].thread == r->thread && t->rng[j].start_ns == r->start_ns &&
                !strcmp(t->rng[j].name, r->name)) {
                gone_rng[j] = 1;
                gone[dropped++] = j;
            }
    }
    /* the calls inside a dropped range, and their graph_trace events */
    for (size_t i = 0; i < t->napi; i++) {
        const ptrace_api *a = &t->api[i];
        int inside = 0;
        for (size_t q = 0; q < dropped && !inside; q++) {
            const ptrace_range *r = &t->rng[gone[q]];
            inside = r->thread == a->thread && r->start_ns <= a->start_ns && r->end_ns >= a->end_ns;
        }
        if (inside) {
            for (size_t q = 0; q < t->ngl; q++)
                if (t->gl[q].corr == a->corr)
                    t->gl[q].corr = 0;   /* marked: removed below */
            continue;
        }
        t->api[k++] = *a;
    }
    t->napi = k;
    k = 0;
    for (size_t q = 0; q < t->ngl; q++)
        if (t->gl[q].corr)
            t->gl[k++] = t->gl[q];
    t->ngl = k;
    k = 0;
    for (size_t j = 0; j < t->nrng; j++)
        if (!gone_rng[j]) {
            if (t->rng_keep)
                t->rng_keep[k] = t->rng_keep[j];
            t->rng[k++] = t->rng[j];
        }
    t->nrng = k;
    free(gone_rng);
    free(gone);
    return dropped;
}

int fit_probe_ref(fit_trace *t, const char *path, fit_trace *ref, fit_probe_stats *st, char *err, size_t errlen)
{
    fp_scan S;
    ptrace_info info;
    fit_trace full;
    unsigned char *probed = NULL;
    double *v = NULL;
    int rc = -1;
    memset(&S, 0, sizeof S);
    memset(&full, 0, sizeof full);
    memset(st, 0, sizeof *st);
    S.path = path;
    S.err = err;
    S.errlen = errlen;
    if (!fit_trace_is_lite(t) || t->lite.probe_replays <= 0)
        return 0;
    if (ptrace_scan_file(path, fp_take, &S, &info, err, errlen) || S.failed)
        goto out;
    st->probes = S.np;
    if (!S.np) {
        rc = 0;
        goto out;
    }
    if (fit_trace_load(&full, path, err, errlen))
        goto out;
    /* the events' cost per node, per executable */
    size_t nv = 0;
    v = malloc((S.np + full.ngl + 1) * sizeof *v);
    double *costs = malloc((S.ng + 1) * sizeof *costs);
    if (!v || !costs) {
        free(costs);
        snprintf(err, errlen, "%s: out of memory", path);
        goto out;
    }
    size_t nc = 0;
    for (size_t i = 0; i < S.ng; i++) {
        fp_graph *g = &S.g[i];
        nv = 0;
        for (size_t j = 0; j < S.np; j++)
            if (S.p[j].g.graph_exec_id == g->exec)
                v[nv++] = (double)(S.p[j].g.end_ns - S.p[j].g.start_ns) / 1e3;
        if (!nv)
            continue;
        double mp = fp_median(v, nv);
        nv = 0;
        for (size_t j = 0; j < full.ngl; j++)
            if (full.gl[j].graph_exec_id == g->exec)
                v[nv++] = (double)(full.gl[j].end_ns - full.gl[j].start_ns) / 1e3;
        double mg = fp_median(v, nv);
        g->cost_us = nv ? (mp - mg) / g->n : NAN;
        if (nv && g->cost_us >= 0)
            st->cost_from_spans++;
        else if (t->lite.probe_event_us >= 0)
            g->cost_us = t->lite.probe_event_us;
        else {
            free(costs);
            snprintf(err, errlen, "%s: field specprof_end.probe.event_us: value %g: graph executable %u was "
                     "probed but never replayed unprobed, and the capture has no calibration of the probe's "
                     "events (%s): its nodes' times cannot be told from the events'", path, t->lite.probe_event_us,
                     g->exec, t->lite.probe_calib_why[0] ? t->lite.probe_calib_why : "none");
            goto out;
        }
        costs[nc++] = g->cost_us;
        st->execs++;
    }
    st->cost_median_us = fp_median(costs, nc);
    free(costs);
    /* each probe's phase range */
    probed = calloc(full.nrng + 1, 1);
    if (!probed) {
        snprintf(err, errlen, "%s: out of memory", path);
        goto out;
    }
    for (size_t j = 0; j < S.np; j++) {
        const ptrace_api *a = fp_api_of(&full, S.p[j].g.corr);
        if (!a)
            continue;
        S.p[j].range = fp_range_of(&full, a, S.p[j].g.phase);
        if (S.p[j].range != SIZE_MAX)
            probed[S.p[j].range] = 1;
    }
    /* the reference: instances whose every graph launch was probed, with no eager kernel */
    if (fit_trace_init(ref, path)) {
        snprintf(err, errlen, "%s: out of memory", path);
        goto out;
    }
    ref->has_header = 1;
    ref->hdr = full.hdr;
    snprintf(ref->hdr.mode, sizeof ref->hdr.mode, "always");
    snprintf(ref->file, sizeof ref->file, "%s (node probe)", path);
    for (size_t i = 0; i < full.nrng; i++) {
        const ptrace_range *r = &full.rng[i];
        if (!probed[i] || !r->has_launches || r->launches != 0)
            continue;
        int all = 1;
        for (size_t q = 0; q < full.napi && all; q++) {
            const ptrace_api *a = &full.api[q];
            if (a->thread != r->thread || a->start_ns < r->start_ns || a->end_ns > r->end_ns || !a->graph_exec_id)
                continue;
            int found = 0;
            for (size_t j = 0; j < S.np && !found; j++)
                found = S.p[j].g.corr == a->corr && S.p[j].range == i && fp_graph_of(&S, S.p[j].g.graph_exec_id);
            all = found;
        }
        if (!all)
            continue;
        if (fit_trace_add_range(ref, r))
            goto oom;
        for (size_t q = 0; q < full.napi; q++) {
            const ptrace_api *a = &full.api[q];
            if (a->thread == r->thread && a->start_ns >= r->start_ns && a->end_ns <= r->end_ns && fit_trace_add_api(ref, a))
                goto oom;
        }
        for (size_t j = 0; j < S.np; j++) {
            if (S.p[j].range != i)
                continue;
            if (fp_add_records(ref, &S, fp_graph_of(&S, S.p[j].g.graph_exec_id), &S.p[j], &st->records))
                goto oom;
        }
        st->instances++;
    }
    st->dropped = fp_drop(t, &full, probed);
    rc = 1;
    goto out;
oom:
    snprintf(err, errlen, "%s: out of memory", path);
    fit_trace_free(ref);
out:
    free(v);
    free(probed);
    fit_trace_free(&full);
    fp_scan_free(&S);
    return rc;
}
