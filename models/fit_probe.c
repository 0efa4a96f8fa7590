/* fit_probe.c: the node probe's replays and the eager probe's instances as a reference for
 * the fit (see fit_probe.h). The graph_probe and eager_probe events are read in one streaming
 * pass over the file; the lite trace is then loaded whole once more (a lite trace is ~20 bytes
 * a record on disk, ~1-2k records a second) to find each probe's phase range and the other
 * calls inside it. */
#include "fit_probe.h"
#include "fit_int.h"
#include "ptrace_read.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FP_LAUNCH_INTS 8           /* per node: grid x y z, block x y z, dynamic smem, regs */
#define FP_MAX_NODES 65536         /* as the probe writes (plprobe.c) */
#define FP_MAX_NAMES (1u << 20)
#define FP_EAGER_MAX_ENTRIES 4096  /* an eager instance's entries and names: the probe's budget
                                      (traces/FORMAT.md "Eager probe") */
#define FP_EAGER_MAX_NAME_BYTES 4096   /* a kernel name, as the trace's kernel records */
#define FP_EAGER_ENTRY_INTS 13     /* type, name, gx gy gz, bx by bz, smem, t0 t1 b a (us) */
/* A gap between two entries holds unseen kernels (launched past the runtime interposer:
 * cuBLAS through the driver) when it exceeds one event's cost by more than this: the events
 * resolve ~0.5 us (cudaEventElapsedTime, CUDA documentation), so a smaller excess is their
 * own jitter, not a kernel. */
#define FP_EAGER_GAP_MIN_US 0.5
/* The callback ids CUPTI records these launches with (cupti_runtime_cbid.h,
 * cupti_driver_cbid.h, CUDA 13.0; the lite trace's own api events carry CUPTI's cbids too) */
#define FP_CBID_CUDA_LAUNCH_KERNEL 211   /* CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000 */
#define FP_CBID_CU_LAUNCH_KERNEL 307     /* CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel */
/* The range's probe bits (fit_probe_ref's probed[]) */
#define FP_BY_GRAPH 1
#define FP_BY_EAGER 2
#define FP_TAKEN 4                 /* taken by the node probe's path (no eager kernel) */

enum { FP_E_KERNEL, FP_E_COPY, FP_E_RELEASE, FP_E_END };   /* an eager entry's type */

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

/* One entry of an eager probe (traces/FORMAT.md "Eager probe"): times in us, t0/t1 from the
 * event's host0_ns, b/a from its ts. */
typedef struct {
    int type;                      /* FP_E_* */
    int32_t name;                  /* kernels: an index into the event's names, -1 none */
    int64_t l[7];                  /* kernels: grid x y z, block x y z, dynamic smem; copies:
                                      bytes, the cudaMemcpyKind digit */
    double t0_us, t1_us, b_us, a_us;
} fp_entry;

/* One eager_probe event: a probed phase instance's stream. */
typedef struct {
    int64_t start_ns, end_ns;      /* the GPU span, first event to last */
    uint32_t dev, stream;
    int64_t thread;
    char *nvtx, *phase;            /* phase: the range's whole name */
    int64_t host0_ns;
    double cost_us;                /* one event's GPU cost */
    char **names;
    size_t nnames;
    fp_entry *k;
    size_t nk;
    int64_t other_streams, lost;
    int64_t watchdog;              /* 1: a hold released out of turn (absent in older traces: 0) */
    size_t range;                  /* its phase range in the full trace (SIZE_MAX: none) */
} fp_eager;

typedef struct {
    const char *path;
    char **name;                   /* by id - 1 */
    size_t nname, capname;
    fp_graph *g;
    size_t ng, capg;
    fp_probe *p;
    size_t np, capp;
    fp_eager *e;
    size_t ne, cape;
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

/* An eager_probe event refused: the file, line, field and the value found (v NULL: missing). */
static int fp_fail_eager(fp_scan *S, size_t line, const char *field, const pjson *v, const char *why)
{
    char val[160];
    if (!v)
        snprintf(val, sizeof val, "(missing)");
    else if (pjson_write(v, val, sizeof val) < 0)
        snprintf(val, sizeof val, "(%s of %zu)", v->type == PJSON_STR ? "a string" : "a value", v->len);
    snprintf(S->err, S->errlen, "%s: line %zu: field %s: value %s: %s (an eager probe event, traces/FORMAT.md "
             "\"Eager probe\")", S->path, line, field, val, why);
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

static void fp_eager_free(fp_eager *e)
{
    for (size_t i = 0; i < e->nnames; i++)
        free(e->names[i]);
    free(e->names);
    free(e->k);
    free(e->nvtx);
    free(e->phase);
}

/* An integer member of a in [lo, hi] into *out; 0, or -1 (missing, not an integer, outside). */
static int fp_int_in(const pjson *a, const char *key, int64_t lo, int64_t hi, int64_t *out)
{
    const pjson *v = pjson_get(a, key);
    if (!v || v->type != PJSON_NUM || !v->is_int || v->i < lo || v->i > hi)
        return -1;
    *out = v->i;
    return 0;
}

/* 1 when the environment variable name is "1" (the experiments' switches, docs/fit.md 1c) */
static int fp_env_on(const char *name)
{
    const char *v = getenv(name);
    return v && !strcmp(v, "1");
}

/* FIT_PROBE_EAGER_RAW=1: the eager pairs as measured, with no correction (docs/fit.md 1c) */
static int fp_eager_raw(void)
{
    return fp_env_on("FIT_PROBE_EAGER_RAW");
}

/* An eager_probe event (traces/FORMAT.md "Eager probe"), checked whole: every field a file can
 * get wrong is refused with its line, field and value. */
static int fp_take_eager(fp_scan *S, const ptrace_event *ev, const ptrace_info *info)
{
    static const char *const ints[] = { "dev", "stream", "thread", "host0_ns", "other_streams", "lost" };
    static const int64_t hi[] = { UINT32_MAX, UINT32_MAX, INT64_MAX, (int64_t)4e18, INT64_MAX, INT64_MAX };
    const pjson *a = ev->args;
    int64_t x[6];
    fp_eager e;
    memset(&e, 0, sizeof e);
    e.range = SIZE_MAX;
    if (ev->ph != 'X' || !a || a->type != PJSON_OBJ)
        return fp_fail_eager(S, ev->line, "args", a, "an eager_probe event is a ph X event with args");
    for (int i = 0; i < 6; i++)
        if (fp_int_in(a, ints[i], 0, hi[i], &x[i])) {
            char f[32];
            snprintf(f, sizeof f, "args.%s", ints[i]);
            return fp_fail_eager(S, ev->line, f, pjson_get(a, ints[i]), "not an integer in range");
        }
    const pjson *cost = pjson_get(a, "cost_us"), *ph = pjson_get(a, "phase"), *nv = pjson_get(a, "nvtx");
    const pjson *names = pjson_get(a, "names"), *k = pjson_get(a, "k");
    /* an event's cost: ~1-5 us measured (docs/profiler.md); 100 us is no event's */
    if (!cost || cost->type != PJSON_NUM || !(cost->num >= 0 && cost->num < 100))
        return fp_fail_eager(S, ev->line, "args.cost_us", cost, "not an event's cost in us (0 to 100)");
    if (!ph || ph->type != PJSON_STR || !ph->str[0] || ph->len > FP_EAGER_MAX_NAME_BYTES)
        return fp_fail_eager(S, ev->line, "args.phase", ph, "not a phase range's name (1 to 4096 bytes)");
    if (nv && (nv->type != PJSON_STR || nv->len > FP_EAGER_MAX_NAME_BYTES))
        return fp_fail_eager(S, ev->line, "args.nvtx", nv, "not a range name (at most 4096 bytes)");
    if (!names || names->type != PJSON_ARR || names->len > FP_EAGER_MAX_ENTRIES)
        return fp_fail_eager(S, ev->line, "args.names", names, "not an array of at most 4096 names");
    for (size_t i = 0; i < names->len; i++)
        if (names->items[i]->type != PJSON_STR || names->items[i]->len > FP_EAGER_MAX_NAME_BYTES)
            return fp_fail_eager(S, ev->line, "args.names", names->items[i], "not a name (at most 4096 bytes)");
    if (!k || k->type != PJSON_ARR || k->len > FP_EAGER_MAX_ENTRIES)
        return fp_fail_eager(S, ev->line, "args.k", k, "not an array of at most 4096 entries");
    e.start_ns = info->header.t0_ns + ev->ts_ns;
    e.end_ns = e.start_ns + ev->dur_ns;
    e.dev = (uint32_t)x[0];
    e.stream = (uint32_t)x[1];
    e.thread = x[2];
    e.host0_ns = x[3];
    e.other_streams = x[4];
    e.lost = x[5];
    /* watchdog (traces/FORMAT.md "Eager probe"): optional, traces before it have none */
    if (pjson_get(a, "watchdog") && fp_int_in(a, "watchdog", 0, INT64_MAX, &e.watchdog))
        return fp_fail_eager(S, ev->line, "args.watchdog", pjson_get(a, "watchdog"), "not an integer >= 0");
    /* FIT_PROBE_EAGER_RAW=1 (to show what the corrections do, docs/fit.md 1c): the pairs as
     * measured, no event's cost taken out */
    e.cost_us = fp_eager_raw() ? 0 : cost->num;
    e.nnames = names->len;
    e.phase = strdup(ph->str);
    e.nvtx = strdup(nv ? nv->str : "");
    e.names = calloc(e.nnames + 1, sizeof *e.names);
    e.k = malloc((k->len + 1) * sizeof *e.k);
    if (!e.phase || !e.nvtx || !e.names || !e.k) {
        fp_eager_free(&e);
        return fp_fail_eager(S, ev->line, "args", a, "out of memory");
    }
    for (size_t i = 0; i < e.nnames; i++)
        if (!(e.names[i] = strdup(names->items[i]->str))) {
            fp_eager_free(&e);
            return fp_fail_eager(S, ev->line, "args.names", a, "out of memory");
        }
    /* the entries: [type, name, gx, gy, gz, bx, by, bz, smem, t0_us, t1_us, b_us, a_us] */
    for (size_t i = 0; i < k->len; i++) {
        const pjson *r = k->items[i];
        const char *why = NULL;
        fp_entry *y = &e.k[i];
        if (r->type != PJSON_ARR || r->len != FP_EAGER_ENTRY_INTS)
            why = "not an entry of 13 numbers";
        for (size_t j = 0; !why && j < FP_EAGER_ENTRY_INTS; j++)
            if (r->items[j]->type != PJSON_NUM || (j < 9 && !r->items[j]->is_int) ||
                !(r->items[j]->num > -1e9 && r->items[j]->num < 1e9))
                why = j < 9 ? "an entry's first 9 numbers are integers" : "an entry's times are us (-1e9 to 1e9)";
        if (!why) {
            y->type = (int)r->items[0]->i;
            y->name = (int32_t)r->items[1]->i;
            for (int j = 0; j < 7; j++)
                y->l[j] = r->items[2 + j]->i;
            y->t0_us = r->items[9]->num;
            y->t1_us = r->items[10]->num;
            y->b_us = r->items[11]->num;
            y->a_us = r->items[12]->num;
            if (y->type < FP_E_KERNEL || y->type > FP_E_END)
                why = "an entry's type is 0 (kernel), 1 (copy), 2 (release) or 3 (end)";
            else if (y->type == FP_E_KERNEL && (y->name < -1 || y->name >= (int64_t)e.nnames))
                why = "a kernel entry's name is -1 or an index into names";
            else if (y->type == FP_E_KERNEL && (y->l[0] < 0 || y->l[1] < 0 || y->l[2] < 0 || y->l[3] < 0 ||
                                                y->l[4] < 0 || y->l[5] < 0 || y->l[6] < 0 || y->l[0] > INT32_MAX ||
                                                y->l[1] > INT32_MAX || y->l[2] > INT32_MAX || y->l[3] > INT32_MAX ||
                                                y->l[4] > INT32_MAX || y->l[5] > INT32_MAX || y->l[6] > INT32_MAX))
                why = "a kernel entry's grid, block and shared memory are 0 to 2^31-1";
            else if (y->type == FP_E_COPY && (y->l[0] < 0 || y->l[1] < 0 || y->l[1] > 4))
                why = "a copy entry's bytes are >= 0 and its kind a cudaMemcpyKind digit (0 to 4)";
            else if (y->t0_us < 0 || y->t1_us < y->t0_us)
                why = "an entry's host times t0 <= t1 are from host0_ns (>= 0)";
            else if (y->b_us < 0 || y->a_us < y->b_us)
                why = "an entry's events b <= a are from ts (>= 0)";
        }
        if (why) {
            char f[48];
            snprintf(f, sizeof f, "args.k[%zu]", i);
            fp_fail_eager(S, ev->line, f, r, why);
            fp_eager_free(&e);
            return 1;
        }
        e.nk++;
    }
    if (fp_grow((void **)&S->e, &S->cape, S->ne, sizeof *S->e)) {
        fp_eager_free(&e);
        return fp_fail_eager(S, ev->line, "args", a, "out of memory");
    }
    S->e[S->ne++] = e;
    return 0;
}

static int fp_take(void *user, const ptrace_event *ev, const ptrace_info *info)
{
    fp_scan *S = user;
    if (!strcmp(ev->cat, "eager_probe"))
        return fp_take_eager(S, ev, info);
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
    for (size_t i = 0; i < S->ne; i++)
        fp_eager_free(&S->e[i]);
    free(S->e);
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

/* The phase range of thread th holding [s_ns, e_ns]: the innermost whose first word is phase
 * (any range when phase is ""), or, when whole, whose name is phase; SIZE_MAX when none. */
static size_t fp_range_of(const fit_trace *full, int64_t th, int64_t s_ns, int64_t e_ns, const char *phase, int whole)
{
    size_t best = SIZE_MAX;
    for (size_t i = 0; i < full->nrng; i++) {
        const ptrace_range *r = &full->rng[i];
        if (r->thread != th || r->start_ns > s_ns || r->end_ns < e_ns)
            continue;
        if (whole ? strcmp(r->name, phase) != 0 : phase[0] && !fp_first_word_is(r->name, phase))
            continue;
        if (best == SIZE_MAX || r->end_ns - r->start_ns < full->rng[best].end_ns - full->rng[best].start_ns)
            best = i;
    }
    return best;
}

static const char *const fp_copy_kinds[] = { "HtoH", "HtoD", "DtoH", "DtoD", "Default" };

/* 1 when call a was made inside range r, on its thread. */
static int fp_inside(const ptrace_range *r, const ptrace_api *a)
{
    return a->thread == r->thread && a->start_ns >= r->start_ns && a->end_ns <= r->end_ns;
}

/* Range r of full into ref with the calls made inside it (the lite trace's own: graph
 * launches, copies, synchronizes). 0, or -1 when out of memory. */
static int fp_add_range_calls(fit_trace *ref, const fit_trace *full, const ptrace_range *r)
{
    if (fit_trace_add_range(ref, r))
        return -1;
    for (size_t q = 0; q < full->napi; q++)
        if (fp_inside(r, &full->api[q]) && fit_trace_add_api(ref, &full->api[q]))
            return -1;
    return 0;
}

/* The records of probed replay p (node times less the events' cost, laid out in topological
 * order from base_ns: the replay's own start, or where a mixed instance's eager layout puts
 * the launch) into ref on correlation id corr (the probe's launch, or the launch it stands
 * for); *end_ns: the latest end laid out (base_ns when none). */
static int fp_add_records(fit_trace *ref, const fp_scan *S, const fp_graph *g, const fp_probe *p, int64_t base_ns,
                          uint32_t corr, size_t *made, int64_t *end_ns)
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
    *end_ns = base_ns;
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
        int64_t s_ns = base_ns + (int64_t)llround(st * 1e3), e_ns = base_ns + (int64_t)llround(cend[i] * 1e3);
        char ty = g->type[i];
        if (ty == 'K') {
            ptrace_kernel kr;
            memset(&kr, 0, sizeof kr);
            kr.start_ns = s_ns;
            kr.end_ns = e_ns;
            uint32_t id = g->name[i];
            kr.name = id && id <= S->nname && S->name[id - 1] ? S->name[id - 1] : "(unnamed kernel)";
            kr.corr = corr;
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
            m.corr = corr;
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
        *end_ns = e_ns > *end_ns ? e_ns : *end_ns;
        (*made)++;
    }
    free(cend);
    return rc;
}

/* ---- the eager probe ---------------------------------------------------------------------- */

/* The unseen kernels' time before entry i of e, in us (0: none): the gap from the previous
 * entry's after event to its before event less one event's cost, when that is more than
 * FP_EAGER_GAP_MIN_US; none after a release or the end (the stream waited for the host).
 * held (NULL: none): per entry, the us of graph replays launched in the gap before it, each
 * with its launch's second event (fp_eager_graphs): not unseen kernels. */
static double fp_unseen_us(const fp_eager *e, size_t i, const double *held)
{
    if (i == 0 || e->k[i - 1].type == FP_E_RELEASE || e->k[i - 1].type == FP_E_END)
        return 0;
    double g = e->k[i].b_us - e->k[i - 1].a_us - e->cost_us - (held ? held[i] : 0);
    return g > FP_EAGER_GAP_MIN_US ? g : 0;
}

/* The name of an eager instance's "(unseen kernels)" record in phase (its first word). The
 * probe sees no kernel launched past the runtime interposer: torchbench's are cuBLAS's GEMMs
 * (and its memsets), whose time then sits in the gaps. The node probe sees the same GEMMs by
 * name in a graph replay, where the fit's "gemm" group (matched by role) holds them; in a phase
 * with both kinds of instance (torchbench's graph loop: graph=1 up to 40 rows, eager at 80) an
 * eager instance with its GEMMs in another group leaves the gemm group 0 in its cells. H100
 * call 34: verify's gemm group 1758-2863 us a forward at graph=1 and 0 at 80 rows, fitted flat
 * at 21 us (rms 91%), the groups 1.9 ms short of the measured totals (into the idle group) and
 * the graph cells 9-35% low. So where a probed replay of the same phase holds a GEMM, the unseen
 * kernels are named as one (the fit's classes: fit_instances_is_gemm); else "(unseen kernels)". */
#define FP_UNSEEN_NAME "(unseen kernels)"
#define FP_UNSEEN_GEMM_NAME "(unseen kernels: cublas gemm)"

static const char *fp_unseen_name(const fp_scan *S, const char *phase)
{
    for (size_t j = 0; j < S->np; j++) {
        const fp_probe *p = &S->p[j];
        if (!p->g.phase || strcmp(p->g.phase, phase))
            continue;
        const fp_graph *g = NULL;
        for (size_t i = 0; i < S->ng && !g; i++)
            g = S->g[i].exec == p->g.graph_exec_id ? &S->g[i] : NULL;
        for (int i = 0; g && i < g->n; i++) {
            uint32_t id = g->name[i];
            if (g->type[i] == 'K' && id && id <= S->nname && S->name[id - 1] &&
                fit_instances_is_gemm(S->name[id - 1]))
                return FP_UNSEEN_GEMM_NAME;
        }
    }
    return FP_UNSEEN_NAME;
}

/* 1 when eager probe e (its range found) can stand for a node-level instance with its graph
 * launches' parts (fp_eager_graphs): all its kernels timed (none on another stream, none past
 * the budget, no hold released out of turn by the watchdog), one kernel at least, and no more
 * calls than fit_nodes looks at. */
static int fp_eager_usable(const fp_eager *e, const fit_trace *full)
{
    const ptrace_range *r = &full->rng[e->range];
    size_t calls = 0, kernels = 0;
    if (e->other_streams || e->lost || e->watchdog)
        return 0;
    for (size_t q = 0; q < full->napi; q++)
        calls += fp_inside(r, &full->api[q]);
    for (size_t i = 0; i < e->nk; i++) {
        kernels += e->k[i].type == FP_E_KERNEL;
        calls += (e->k[i].type == FP_E_KERNEL) + (fp_unseen_us(e, i, NULL) > 0);
    }
    return kernels > 0 && calls <= FIT_NODES_CALLS_MAX;
}

/* A graph launch inside an eager-probed instance. A mixed range (torchbench's extend at
 * graph=1: the draft's graph replayed, then eager kernels and copies; H100 call 34: 15 shapes)
 * needs both probes: the node probe's records stand for the replay, the eager probe's for the
 * rest. The node probe takes each executable's first N replays, the eager probe each shape's
 * first N instances that found its slot free: call 34 had both in 8 of 45 probed instances. */
typedef struct {
    const ptrace_api *call;        /* the launch, in the instance's range */
    const fp_probe *p;             /* the node times standing for it */
    const fp_graph *g;             /* p's node table */
    int64_t start_ns, end_ns;      /* its GPU span in this instance (its probe's or graph_trace's) */
    int own;                       /* 1: p is this launch's own probe (the union of the two probes);
                                      0: the executable's probed replay nearest in time, in another
                                      instance (a composite) */
    size_t before;                 /* the entry it was launched before (e->nk: after all) */
} fp_glaunch;

static int fp_cmp_api_ptr(const void *a, const void *b);

/* The graph launches of eager probe e's range into *out (malloc'd, caller frees; in call order),
 * each with the node probe standing for it: its own when the launch was node-probed, else the
 * probed replay of the same executable nearest in time (its range found); held[0..e->nk] (zeroed
 * here): per entry, the GPU time of the graph replays launched while the probe held the stream
 * in the gap before it (its span and its launch's second event: the gap from the entry before
 * holds them, they are not unseen kernels). Returns how many, -1 when one has no probe of its
 * executable or no GPU span in this instance (untimed), -2 out of memory. */
static long fp_eager_graphs(const fp_scan *S, const fit_trace *full, const fp_eager *e, fp_glaunch **out, double *held)
{
    const ptrace_range *r = &full->rng[e->range];
    size_t n = 0;
    *out = NULL;
    for (size_t i = 0; i <= e->nk; i++)
        held[i] = 0;
    for (size_t q = 0; q < full->napi; q++)
        n += fp_inside(r, &full->api[q]) && full->api[q].graph_exec_id;
    if (!n)
        return 0;
    const ptrace_api **c = malloc(n * sizeof *c);
    fp_glaunch *gl = calloc(n, sizeof *gl);
    if (!c || !gl) {
        free(c);
        free(gl);
        return -2;
    }
    n = 0;
    for (size_t q = 0; q < full->napi; q++)
        if (fp_inside(r, &full->api[q]) && full->api[q].graph_exec_id)
            c[n++] = &full->api[q];
    qsort(c, n, sizeof *c, fp_cmp_api_ptr);
    long rc = (long)n;
    for (size_t k = 0; k < n && rc >= 0; k++) {
        fp_glaunch *x = &gl[k];
        const fp_probe *best = NULL;
        x->call = c[k];
        for (size_t j = 0; j < S->np; j++) {
            const fp_probe *p = &S->p[j];
            if (p->g.graph_exec_id != c[k]->graph_exec_id || p->range == SIZE_MAX)
                continue;
            if (p->g.corr == c[k]->corr) {
                best = p;
                x->own = 1;
                break;
            }
            if (!best || llabs(p->g.start_ns - c[k]->start_ns) < llabs(best->g.start_ns - c[k]->start_ns))
                best = p;
        }
        const fp_graph *g = NULL;
        for (size_t i = 0; best && i < S->ng && !g; i++)
            g = S->g[i].exec == best->g.graph_exec_id ? &S->g[i] : NULL;
        if (!best || !g) {
            rc = -1;
            break;
        }
        x->p = best;
        x->g = g;
        if (x->own) {
            x->start_ns = best->g.start_ns;
            x->end_ns = best->g.end_ns;
        } else {
            size_t q = 0;
            while (q < full->ngl && full->gl[q].corr != c[k]->corr)
                q++;
            if (q == full->ngl) {
                rc = -1;   /* untimed here: where it ran is not known */
                break;
            }
            x->start_ns = full->gl[q].start_ns;
            x->end_ns = full->gl[q].end_ns;
        }
        x->before = 0;
        while (x->before < e->nk && e->host0_ns + (int64_t)llround(e->k[x->before].t0_us * 1e3) <= c[k]->start_ns)
            x->before++;
        if (c[k]->start_ns >= e->host0_ns && x->before < e->nk)
            held[x->before] += (double)(x->end_ns - x->start_ns) / 1e3 + e->cost_us;
    }
    free(c);
    if (rc < 0)
        free(gl);
    else
        *out = gl;
    return rc;
}

/* What the eager probe cannot see (docs/fit.md 1c "Eager probe"): with the stream held every
 * kernel runs queued, so an event pair holds the kernel and the GPU's gap before it, and
 * nothing times a launch against its call. A CUPTI reference holds both apart, and fit_nodes
 * and the fit read them apart (a launch-bound record starts a after its call's end, a queued one
 * b after the GPU's previous end; the idle between records is the "(gpu idle in phase)"
 * group). So the probe's records are laid out as CUPTI would record them, with these two
 * numbers: FP_EAGER_GAP_US, the GPU's gap between queued eager records, taken out of each
 * record's time and left idle before it (CUPTI, torchbench's eager kernels on the H200: median
 * 1.15 us in call 7's eager loop, 1.28-1.31 in calls 4, 6 and 14; unprofiled, traces/gapprobe:
 * an eager kernel queued costs the GPU 1.1-1.6 us more than as a graph node); FP_EAGER_LAUNCH_US,
 * a launch-bound record's start after its call's end (CUPTI's median over launch-bound records:
 * call 7 2.17 us, calls 4, 6, 14 1.99, 1.49, 1.56). Laid out with neither (both 0) call 7's
 * probe fit came out 2-13% below the CUPTI reference's: its idle groups ~0, the gap group's fit
 * collapsing between launch-bound instances (idle ~L' a launch) and GPU-bound ones (idle 0).
 * FIT_PROBE_EAGER_GAP_US and FIT_PROBE_LAUNCH_US override them (0 to 100 us). */
#define FP_EAGER_GAP_US 1.2
#define FP_EAGER_LAUNCH_US 2.0

static int64_t fp_env_ns(const char *name, double dflt_us)
{
    const char *v = getenv(name);
    double us = v && *v ? atof(v) : dflt_us;
    return us >= 0 && us < 100 ? (int64_t)llround(us * 1e3) : (int64_t)llround(dflt_us * 1e3);
}

/* Where a record whose probed time is *dur_ns and whose call ended at call_end starts on the
 * reference's GPU timeline (*gpu: the latest end laid out, INT64_MIN none; moved to its end),
 * *dur_ns less the queue gap. The probe held the stream, so its records ran long after their
 * calls and 2 events apart: laid out as the program runs them without the hold (docs/fit.md 1c
 * "Eager probe"), gap_ns after the GPU work before them but not before lat_ns after their
 * call's end; a copy the host waited for ends at its call's end. */
static int64_t fp_eager_place(int64_t *gpu, int64_t call_end, int64_t *dur_ns, int waited, int64_t lat_ns,
                              int64_t gap_ns)
{
    int64_t g = gap_ns < *dur_ns ? gap_ns : *dur_ns;
    *dur_ns -= g;
    int64_t s = waited ? call_end - *dur_ns : call_end + lat_ns;
    if (*gpu != INT64_MIN && s < *gpu + g)
        s = *gpu + g;
    *gpu = s + *dur_ns;
    return s;
}

/* A launch call as CUPTI records it (cudaLaunchKernel, or the driver's cuLaunchKernel). */
static int fp_eager_call(fit_trace *ref, const fp_eager *e, int driver, int64_t s_ns, int64_t e_ns, uint32_t corr)
{
    ptrace_api a;
    memset(&a, 0, sizeof a);
    a.start_ns = s_ns;
    a.end_ns = e_ns;
    a.name = driver ? "cuLaunchKernel" : "cudaLaunchKernel";
    a.cbid = driver ? FP_CBID_CU_LAUNCH_KERNEL : FP_CBID_CUDA_LAUNCH_KERNEL;
    a.domain_driver = driver;
    a.corr = corr;
    a.thread = e->thread;
    return fit_trace_add_api(ref, &a);
}

static int fp_cmp_start(const void *a, const void *b)
{
    const ptrace_api *x = *(const ptrace_api *const *)a, *y = *(const ptrace_api *const *)b;
    return (x->start_ns > y->start_ns) - (x->start_ns < y->start_ns);
}

static int fp_cmp_api_ptr(const void *a, const void *b) { return fp_cmp_start(a, b); }

/* A measured graph start moved later than this to follow the eager records before it counts
 * as an overlap in the stats (the events resolve ~0.5 us, the clocks' anchors err a few us). */
#define FP_MIXED_SHIFT_NS 1000

/* Graph launch x of a mixed instance laid out on the eager timeline *gpu (moved to its end):
 * its node records from its probe (fp_add_records) on its own corr. Launched before the probe
 * held the stream (call 34: every one), it starts at its measured start, the program's, unless
 * that is under the eager records laid out before it (then g after them, counted); launched
 * while the stream was held, its measured start is the hold's release, so it starts as a queued
 * eager record does, g after the GPU's previous end, and not before L after its call's start
 * (an instrumented clone's launch call outlasts the clone's start by 100s of us). */
static int fp_add_graph_part(fit_trace *ref, const fp_scan *S, const fp_eager *e, const fp_glaunch *x, int64_t *gpu,
                             int64_t lat_ns, int64_t gap_ns, fit_probe_stats *st)
{
    int64_t s = x->call->start_ns < e->host0_ns ? x->start_ns : x->call->start_ns + lat_ns, end;
    if (*gpu != INT64_MIN && s < *gpu + gap_ns) {
        if (x->call->start_ns < e->host0_ns && *gpu + gap_ns - s > FP_MIXED_SHIFT_NS) {
            st->mixed_shifted++;
            double us = (double)(*gpu + gap_ns - s) / 1e3;
            st->mixed_shift_max_us = us > st->mixed_shift_max_us ? us : st->mixed_shift_max_us;
        }
        s = *gpu + gap_ns;
    }
    if (fp_add_records(ref, S, x->g, x->p, s, x->call->corr, &st->mixed_records, &end))
        return -1;
    *gpu = *gpu == INT64_MIN || end > *gpu ? end : *gpu;
    return 0;
}

/* A copy record of the eager instance e on copy call c (its corr), of kind and bytes, d_ns long,
 * placed on the eager timeline *gpu (waited: it ends at the call's end, the host waited for it). */
static int fp_add_eager_copy(fit_trace *ref, const fp_eager *e, const char *phase, const ptrace_api *c,
                             const char *kind, uint64_t bytes, int64_t d_ns, int waited, int64_t *gpu, int64_t lat_ns,
                             int64_t gap_ns, fit_probe_stats *st)
{
    ptrace_mem m;
    memset(&m, 0, sizeof m);
    m.kind = PTRACE_MEMCPY;
    m.copy_kind = kind;
    m.bytes = bytes;
    m.corr = c->corr;
    m.dev = e->dev;
    m.stream = e->stream;
    m.nvtx = e->nvtx;
    m.phase = phase;
    m.start_ns = fp_eager_place(gpu, c->end_ns, &d_ns, waited, lat_ns, gap_ns);
    m.end_ns = *gpu;
    st->eager_records++;
    return fit_trace_add_mem(ref, &m);
}

/* A blocking copy's GPU time where nothing timed it (the probe releases the stream before a
 * copy the host waits for, so it has no entry): a nominal 2 us and its bytes at 25 GB/s (a
 * small device-to-host copy over PCIe); what the fit needs of it is its end, the call's end,
 * which tells a host that waited for the GPU from one that launched (docs/fit.md 1c). */
#define FP_BLOCKING_COPY_US 2.0
#define FP_BLOCKING_COPY_BYTES_PER_US 25000.0

/* The range's blocking copy calls that start before t_ns and that no copy entry took, each a
 * copy record ending at its call's end (their GPU time nominal, above), in call order: without
 * them a host waiting in a .tolist() or .item() for the GPU looked like host launch time (H100
 * call 34's graph loop from its probes alone: accept and sample at 541-596 us a kernel launch,
 * 17 and 14 with a CUPTI reference). *jb: the next call to look at. */
static int fp_add_blocking_copies(fit_trace *ref, const fp_eager *e, const char *phase, const ptrace_api **cp,
                                  size_t ncp, const unsigned char *used, size_t *jb, int64_t t_ns, int64_t *gpu,
                                  int64_t lat_ns, int64_t gap_ns, fit_probe_stats *st)
{
    for (; *jb < ncp && cp[*jb]->start_ns < t_ns; (*jb)++) {
        const ptrace_api *c = cp[*jb];
        if (used[*jb] || !c->has_lite || c->blocking != 1)
            continue;
        uint64_t bytes = c->bytes > 0 ? (uint64_t)c->bytes : 0;
        int64_t d_ns = (int64_t)llround((FP_BLOCKING_COPY_US + (double)bytes / FP_BLOCKING_COPY_BYTES_PER_US) * 1e3);
        if (fp_add_eager_copy(ref, e, phase, c, c->copy_kind ? c->copy_kind : "DtoH", bytes, d_ns, 1, gpu, lat_ns,
                              gap_ns, st))
            return -1;
        st->eager_blocking_copies++;
    }
    return 0;
}

/* Eager probe e's instance into ref as a node-level capture holds one: its range and the
 * lite trace's calls inside it; per kernel entry a cudaLaunchKernel call at the probe's host
 * times and a kernel of a - b - cost_us; per gap holding unseen kernels a cuLaunchKernel call
 * at the next entry's start and an "(unseen kernels)" kernel; per copy entry a copy record
 * on the range's next copy call of its bytes and kind (in order; none: skipped). *corr: the
 * next free correlation id; *gpup: the reference's GPU timeline (the latest end laid out,
 * INT64_MIN none), moved on. 0, or -1 when out of memory. */
static int fp_add_eager(fit_trace *ref, const fp_scan *S, const fit_trace *full, const fp_eager *e,
                        const fp_glaunch *gl, size_t ngl, const double *held, uint32_t *corr, int64_t *gpup,
                        fit_probe_stats *st)
{
    const ptrace_range *r = &full->rng[e->range];
    char phase[64];
    snprintf(phase, sizeof phase, "%.*s", (int)strcspn(e->phase, " "), e->phase);
    if (fp_add_range_calls(ref, full, r))
        return -1;
    /* the range's copy calls in start order (the file's order is not time order) */
    const ptrace_api **cp = malloc((full->napi + 1) * sizeof *cp);
    size_t ncp = 0, jc = 0;
    if (!cp)
        return -1;
    for (size_t q = 0; q < full->napi; q++)
        if (fp_inside(r, &full->api[q]) && !strncmp(full->api[q].name, "cudaMemcpy", 10))
            cp[ncp++] = &full->api[q];
    qsort(cp, ncp, sizeof *cp, fp_cmp_start);
    unsigned char *used = calloc(ncp + 1, 1);   /* a copy entry took the call */
    if (!used) {
        free(cp);
        return -1;
    }
    size_t jb = 0;   /* the next call looked at for a blocking copy of its own */
    int64_t gpu = *gpup;
    const char *unseen = fp_unseen_name(S, phase);
    int64_t lat_ns = fp_env_ns("FIT_PROBE_LAUNCH_US", fp_eager_raw() ? 0 : FP_EAGER_LAUNCH_US);
    int64_t gap_ns = fp_env_ns("FIT_PROBE_EAGER_GAP_US", fp_eager_raw() ? 0 : FP_EAGER_GAP_US);
    int rc = 0;
    size_t jg = 0;   /* the next graph launch to lay out */
    for (size_t i = 0; i < e->nk && !rc; i++) {
        const fp_entry *x = &e->k[i];
        while (jg < ngl && gl[jg].before <= i && !rc)
            rc = fp_add_graph_part(ref, S, e, &gl[jg++], &gpu, lat_ns, gap_ns, st);
        if (rc)
            break;
        int64_t t0 = e->host0_ns + (int64_t)llround(x->t0_us * 1e3), t1 = e->host0_ns + (int64_t)llround(x->t1_us * 1e3);
        /* inside the range: the end entry is taken at the pop hook, after the range's own end
         * time, and a call past the range would be matched to the range after it (specbench's
         * call 35: unseen kernels before the end entry made decode's host gap -51 s) */
        t0 = t0 < r->start_ns ? r->start_ns : t0 > r->end_ns ? r->end_ns : t0;
        t1 = t1 < t0 ? t0 : t1 > r->end_ns ? r->end_ns : t1;
        rc = fp_add_blocking_copies(ref, e, phase, cp, ncp, used, &jb, t0, &gpu, lat_ns, gap_ns, st);
        if (rc)
            break;
        double u = fp_unseen_us(e, i, held), d = x->a_us - x->b_us - e->cost_us;
        int64_t d_ns = d > 0 ? (int64_t)llround(d * 1e3) : 0;
        ptrace_kernel kr;
        memset(&kr, 0, sizeof kr);
        kr.dev = e->dev;
        kr.stream = e->stream;
        kr.nvtx = e->nvtx;
        kr.phase = phase;
        if (u > 0) {   /* launched past the interposer before this entry: at its start */
            kr.corr = (*corr)++;
            kr.name = unseen;
            int64_t u_ns = (int64_t)llround(u * 1e3);
            kr.start_ns = fp_eager_place(&gpu, t0, &u_ns, 0, lat_ns, gap_ns);
            kr.end_ns = gpu;
            if (fp_eager_call(ref, e, 1, t0, t0, kr.corr) || fit_trace_add_kernel(ref, &kr)) {
                rc = -1;
                break;
            }
            st->eager_unseen++;
            st->eager_records++;
        }
        if (x->type == FP_E_KERNEL) {
            kr.corr = (*corr)++;
            kr.name = x->name >= 0 && e->names[x->name][0] ? e->names[x->name] : "(unnamed kernel)";
            for (int q = 0; q < 3; q++) {
                kr.grid[q] = (int32_t)x->l[q];
                kr.block[q] = (int32_t)x->l[3 + q];
            }
            kr.smem_bytes = (int32_t)x->l[6];   /* dynamic only, as the node probe's */
            kr.start_ns = fp_eager_place(&gpu, t1, &d_ns, 0, lat_ns, gap_ns);
            kr.end_ns = gpu;
            rc = fp_eager_call(ref, e, 0, t0, t1, kr.corr) || fit_trace_add_kernel(ref, &kr) ? -1 : 0;
            st->eager_records++;
        } else if (x->type == FP_E_COPY) {
            const char *kind = fp_copy_kinds[x->l[1]];
            size_t j = jc;
            /* a call without lite mode's args (specsim lite-from writes none: bytes and kind
             * unknown) takes the entry in order */
            while (j < ncp && cp[j]->has_lite &&
                   !((int64_t)cp[j]->bytes == x->l[0] && (!cp[j]->copy_kind || !strcmp(cp[j]->copy_kind, kind))))
                j++;
            if (j == ncp) {
                st->eager_copies_skipped++;
                continue;
            }
            jc = j + 1;
            used[j] = 1;
            rc = fp_add_eager_copy(ref, e, phase, cp[j], kind, (uint64_t)x->l[0], d_ns,
                                   cp[j]->has_lite && cp[j]->blocking == 1, &gpu, lat_ns, gap_ns, st) ? -1 : 0;
        }
    }
    while (jg < ngl && !rc)
        rc = fp_add_graph_part(ref, S, e, &gl[jg++], &gpu, lat_ns, gap_ns, st);
    if (!rc)
        rc = fp_add_blocking_copies(ref, e, phase, cp, ncp, used, &jb, INT64_MAX, &gpu, lat_ns, gap_ns, st);
    free(used);
    free(cp);
    *gpup = gpu;
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
            inside = fp_inside(&t->rng[gone[q]], a);
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
    /* every lite trace is scanned: the end record's eager_probe counts are not read */
    if (!fit_trace_is_lite(t))
        return 0;
    if (ptrace_scan_file(path, fp_take, &S, &info, err, errlen) || S.failed)
        goto out;
    st->probes = S.np;
    st->eager_probes = S.ne;
    if (!S.np && !S.ne) {
        rc = 0;
        goto out;
    }
    if (fit_trace_load(&full, path, err, errlen))
        goto out;
    /* the events' cost per node, per executable */
    size_t nv = 0;
    v = malloc((S.np + S.ne + full.ngl + 1) * sizeof *v);
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
        S.p[j].range = fp_range_of(&full, a->thread, a->start_ns, a->end_ns, S.p[j].g.phase, 0);
        if (S.p[j].range != SIZE_MAX)
            probed[S.p[j].range] |= FP_BY_GRAPH;
    }
    for (size_t j = 0; j < S.ne; j++) {   /* the range of its name holding its calls */
        fp_eager *e = &S.e[j];
        int64_t lo = e->host0_ns, hi = e->host0_ns;
        for (size_t i = 0; i < e->nk; i++)
            if (e->k[i].type == FP_E_KERNEL || e->k[i].type == FP_E_COPY) {
                int64_t t1 = e->host0_ns + (int64_t)llround(e->k[i].t1_us * 1e3);
                hi = t1 > hi ? t1 : hi;
            }
        e->range = fp_range_of(&full, e->thread, lo, hi, e->phase, 1);
        if (e->range == SIZE_MAX)
            st->eager_no_range++;
        else
            probed[e->range] |= FP_BY_EAGER;
        v[j] = e->cost_us;
    }
    st->eager_cost_median_us = fp_median(v, S.ne);
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
        if (!(probed[i] & FP_BY_GRAPH) || !r->has_launches || r->launches != 0)
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
        probed[i] |= FP_TAKEN;
        if (fp_add_range_calls(ref, &full, r))
            goto oom;
        for (size_t j = 0; j < S.np; j++) {
            if (S.p[j].range != i)
                continue;
            int64_t end_ns;
            if (fp_add_records(ref, &S, fp_graph_of(&S, S.p[j].g.graph_exec_id), &S.p[j], S.p[j].g.start_ns,
                               S.p[j].g.corr, &st->records, &end_ns))
                goto oom;
        }
        st->instances++;
    }
    /* the eager instances: one probe per range (a second of the same range is not taken) */
    uint32_t corr = 1;
    for (size_t q = 0; q < full.napi; q++)
        corr = full.api[q].corr >= corr ? full.api[q].corr + 1 : corr;
    for (size_t q = 0; q < full.ngl; q++)
        corr = full.gl[q].corr >= corr ? full.gl[q].corr + 1 : corr;
    /* One GPU timeline through the eager instances, in time order, as the program's one stream
     * ran them: a probed verify whose GPU work outlasts its range (call 7: 170 us past it) delays
     * the probed accept after it. Each from an empty GPU, the accept's first kernel started
     * under the verify's last ones (b < 0 in fit_nodes: queued before the GPU was free), the
     * filled accepts overlapped their verifies and call 7's accept cells came out -75% to +70%. */
    int64_t egpu = INT64_MIN, eprev = INT64_MIN;
    for (size_t j = 0; j < S.ne; j++) {
        fp_eager *e = &S.e[j];
        if (e->range == SIZE_MAX)
            continue;
        int first = 1;
        for (size_t q = 0; q < j && first; q++)
            first = S.e[q].range != e->range;
        if (!first)
            continue;
        st->eager_dropped++;
        if ((probed[e->range] & FP_TAKEN) || !fp_eager_usable(e, &full)) {
            st->eager_incomplete++;
            continue;
        }
        /* a mixed range's graph launches: each with its own node probe or the executable's
         * nearest probed replay; one with neither and the instance is not taken */
        fp_glaunch *gl = NULL;
        double *held = malloc((e->nk + 1) * sizeof *held);
        long ngl = held ? fp_eager_graphs(&S, &full, e, &gl, held) : -2;
        if (ngl == -2) {
            free(held);
            goto oom;
        }
        if (ngl < 0) {
            free(held);
            st->eager_incomplete++;
            st->mixed_unprobed++;
            continue;
        }
        if (full.rng[e->range].start_ns < eprev)
            egpu = INT64_MIN;   /* out of time order: not after the one before */
        eprev = full.rng[e->range].start_ns;
        int arc = fp_add_eager(ref, &S, &full, e, gl, (size_t)ngl, held, &corr, &egpu, st);
        size_t own = 0;
        for (long k = 0; k < ngl; k++)
            own += gl[k].own;
        free(gl);
        free(held);
        if (arc)
            goto oom;
        st->eager_instances++;
        if (ngl > 0 && own == (size_t)ngl)
            st->mixed_own++;
        else if (ngl > 0)
            st->mixed_donor++;
    }
    /* FIT_PROBE_KEEP_PROBED=1 (to show what dropping them does, docs/fit.md 1c): the probed
     * instances stay in the timing trace, their host gaps and spans with the probe's events in */
    st->dropped = fp_env_on("FIT_PROBE_KEEP_PROBED") ? 0 : fp_drop(t, &full, probed);
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
