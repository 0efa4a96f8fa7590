/* fakecudart.c: a scripted CUDA runtime for CPU-only tests (see fakecudart.h), built as a
 * shared library so that libspecprof.so, preloaded, finds it as "the next" definition the way
 * it finds libcudart on a GPU machine. Also defines the CUPTI entry points libspecprof.so
 * links to: they count calls and fail, so a test sees any CUPTI call lite mode makes.
 * Workload: a test program's few hundred calls; one lock, nothing freed. */
#include "fakecudart.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FAKE_NOT_READY 600                 /* cudaErrorNotReady */
#define FAKE_LAUNCH_HOST_NS 2000           /* host time of a graph launch call (a real one: 2-4 us, docs/profiler.md) */
#define FAKE_KERNEL_NS 1000                /* GPU time of a launched kernel */
#define FAKE_MAX_REPLAYS 4096

typedef struct { int64_t busy_until_ns, last_event_ns; int capturing; unsigned long long id; } fake_stream;
typedef struct { int64_t t_ns; int recorded; } fake_event;
typedef struct { int64_t gpu_ns; } fake_exec;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static fake_stream legacy = { 0, 0, 0, 7 };
static unsigned long long next_stream_id = 13;
static int64_t device_busy_ns;
static void *pinned[64];
static int n_pinned;
static int64_t replay_start[FAKE_MAX_REPLAYS], replay_event[FAKE_MAX_REPLAYS];
static int n_replays;
static int cupti_calls;
static int capture_broken;   /* calls a capturing stream refuses (and that end a real capture) */

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
static void spin_until(int64_t t) { while (now_ns() < t) {} }
static fake_stream *S(void *s) { return s ? (fake_stream *)s : &legacy; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* GPU work of gpu_ns on stream s, in order after what is queued there; returns its start. */
static int64_t enqueue(fake_stream *s, int64_t gpu_ns) {
    int64_t start = max64(now_ns(), s->busy_until_ns);
    s->busy_until_ns = start + gpu_ns;
    device_busy_ns = max64(device_busy_ns, s->busy_until_ns);
    return start;
}

/* executables made by cudaGraphInstantiate (graphs with nodes), as against fake_graph_exec's */
static void *gexecs[1024];
static int n_gexecs;
static int is_gexec(void *x) { for (int i = 0; i < n_gexecs; i++) if (gexecs[i] == x) return 1; return 0; }
static void g_replay(void *exec, int64_t start_ns);
void *fake_graph_exec(int64_t gpu_ns) {
    fake_exec *e = calloc(1, sizeof *e);
    e->gpu_ns = gpu_ns;
    return e;
}
void fake_set_capturing(void *stream, int on) { pthread_mutex_lock(&mu); S(stream)->capturing = on; pthread_mutex_unlock(&mu); }
void fake_pin(void *ptr) { pthread_mutex_lock(&mu); if (n_pinned < 64) pinned[n_pinned++] = ptr; pthread_mutex_unlock(&mu); }
int64_t fake_graph_start_ns(int i) {
    pthread_mutex_lock(&mu);
    int64_t t = i >= 0 && i < n_replays ? replay_start[i] : -1;
    pthread_mutex_unlock(&mu);
    return t;
}
int64_t fake_graph_event_ns(int i) {
    pthread_mutex_lock(&mu);
    int64_t t = i >= 0 && i < n_replays ? replay_event[i] : -1;
    pthread_mutex_unlock(&mu);
    return t;
}
int fake_cupti_calls(void) { return __atomic_load_n(&cupti_calls, __ATOMIC_SEQ_CST); }
int fake_capture_broken(void) { return __atomic_load_n(&capture_broken, __ATOMIC_SEQ_CST); }
static int profiler_calls[2];   /* cudaProfilerStart, cudaProfilerStop that reached the runtime */
int cudaProfilerStart(void) { __atomic_add_fetch(&profiler_calls[0], 1, __ATOMIC_SEQ_CST); return 0; }
int cudaProfilerStop(void) { __atomic_add_fetch(&profiler_calls[1], 1, __ATOMIC_SEQ_CST); return 0; }
int fake_profiler_calls(int stop) { return __atomic_load_n(&profiler_calls[stop ? 1 : 0], __ATOMIC_SEQ_CST); }

int cudaGraphLaunch(void *exec, void *stream) {
    int64_t t0 = now_ns();
    pthread_mutex_lock(&mu);
    fake_stream *s = S(stream);
    if (!s->capturing) {
        int64_t st = enqueue(s, exec ? ((fake_exec *)exec)->gpu_ns : 0);
        if (exec && is_gexec(exec)) g_replay(exec, st);
        if (n_replays < FAKE_MAX_REPLAYS) {
            replay_event[n_replays] = s->last_event_ns;
            replay_start[n_replays++] = st;
        }
    }
    pthread_mutex_unlock(&mu);
    spin_until(t0 + FAKE_LAUNCH_HOST_NS);
    return 0;
}
int cudaGraphLaunch_ptsz(void *exec, void *stream) { return cudaGraphLaunch(exec, stream); }   /* not called by the test */

int cudaLaunchKernel(const void *f, fake_dim3 grid, fake_dim3 block, void **args, size_t smem, void *stream) {
    (void)f; (void)grid; (void)block; (void)args; (void)smem;
    pthread_mutex_lock(&mu);
    if (!S(stream)->capturing) enqueue(S(stream), FAKE_KERNEL_NS);
    pthread_mutex_unlock(&mu);
    return 0;
}

int cudaEventCreate(void **ev) { *ev = calloc(1, sizeof(fake_event)); return *ev ? 0 : 2; }
int cudaEventCreateWithFlags(void **ev, unsigned flags) { (void)flags; return cudaEventCreate(ev); }
int cudaEventDestroy(void *ev) { (void)ev; return 0; }
int cudaEventRecord(void *ev, void *stream) {
    pthread_mutex_lock(&mu);
    fake_event *e = ev;
    fake_stream *s = S(stream);
    e->t_ns = max64(now_ns(), s->busy_until_ns);
    s->busy_until_ns = s->last_event_ns = e->t_ns;
    e->recorded = 1;
    pthread_mutex_unlock(&mu);
    return 0;
}
int cudaEventQuery(void *ev) {
    fake_event *e = ev;
    pthread_mutex_lock(&mu);
    int64_t t = e->t_ns;
    pthread_mutex_unlock(&mu);
    return now_ns() >= t ? 0 : FAKE_NOT_READY;
}
int cudaEventSynchronize(void *ev) {
    fake_event *e = ev;
    pthread_mutex_lock(&mu);
    int64_t t = e->t_ns;
    pthread_mutex_unlock(&mu);
    spin_until(t);
    return 0;
}
/* As the real one: float ms, at a resolution of 0.5 us. */
int cudaEventElapsedTime(float *ms, void *a, void *b) {
    fake_event *x = a, *y = b;
    pthread_mutex_lock(&mu);
    int ok = x->recorded && y->recorded;
    int64_t d = y->t_ns - x->t_ns;
    pthread_mutex_unlock(&mu);
    if (!ok) return 400;   /* cudaErrorInvalidResourceHandle */
    if (now_ns() < x->t_ns || now_ns() < y->t_ns) return FAKE_NOT_READY;
    int64_t q = (d >= 0 ? d + 250 : d - 250) / 500 * 500;
    *ms = (float)((double)q / 1e6);
    return 0;
}

/* internal calls do not go through the exported (interposed) names, as in the real runtime */
static int stream_sync(void *stream) {
    pthread_mutex_lock(&mu);
    int64_t t = S(stream)->busy_until_ns;
    pthread_mutex_unlock(&mu);
    spin_until(t);
    return 0;
}
int cudaStreamSynchronize(void *stream) { return stream_sync(stream); }
int cudaStreamSynchronize_ptsz(void *stream) { return stream_sync(stream); }
int cudaDeviceSynchronize(void) {
    pthread_mutex_lock(&mu);
    int64_t t = device_busy_ns;
    pthread_mutex_unlock(&mu);
    spin_until(t);
    return 0;
}
int cudaStreamIsCapturing(void *stream, int *status) {
    pthread_mutex_lock(&mu);
    *status = S(stream)->capturing;
    pthread_mutex_unlock(&mu);
    return 0;
}
int cudaStreamCreateWithPriority(void **stream, unsigned flags, int priority) {
    (void)flags; (void)priority;
    fake_stream *s = calloc(1, sizeof *s);
    pthread_mutex_lock(&mu);
    s->id = next_stream_id++;
    pthread_mutex_unlock(&mu);
    *stream = s;
    return 0;
}
int cudaStreamCreate(void **stream) { return cudaStreamCreateWithPriority(stream, 0, 0); }
/* refused while capturing (as any call on a capturing stream we are not sure of: the
 * interposer must only ask cudaStreamIsCapturing then) */
int cudaStreamGetId(void *stream, unsigned long long *id) {
    if (S(stream)->capturing) { __atomic_add_fetch(&capture_broken, 1, __ATOMIC_SEQ_CST); return 900; }
    *id = S(stream)->id;
    return 0;
}
int cudaDeviceGetStreamPriorityRange(int *least, int *greatest) { *least = 0; *greatest = -5; return 0; }
int cudaGetDevice(int *d) { *d = 0; return 0; }
int cudaSetDevice(int d) { (void)d; return 0; }
int cudaGetLastError(void) { return 0; }
int cudaThreadExchangeStreamCaptureMode(int *mode) { *mode = 0; return 0; }
int cudaRuntimeGetVersion(int *v) { *v = 13000; return 0; }

/* struct cudaPointerAttributes as CUDA 13 has it (driver_types.h: long reserved[8] at the
 * end): type 0 unregistered (pageable), 1 host (pinned) */
typedef struct { int type, device; void *dev_ptr, *host_ptr; long reserved[8]; } fake_ptr_attr;
int cudaPointerGetAttributes(fake_ptr_attr *a, const void *ptr) {
    memset(a, 0, sizeof *a);
    pthread_mutex_lock(&mu);
    for (int i = 0; i < n_pinned; i++) if (pinned[i] == ptr) a->type = 1;
    pthread_mutex_unlock(&mu);
    return 0;
}

/* Copies: host to host here; a device-to-host copy waits for the stream (a synchronous
 * one, or an async one into pageable memory, as CUDA does). */
static int is_pinned(const void *p) {
    int r = 0;
    pthread_mutex_lock(&mu);
    for (int i = 0; i < n_pinned; i++) if (pinned[i] == p) r = 1;
    pthread_mutex_unlock(&mu);
    return r;
}
int cudaMemcpy(void *dst, const void *src, size_t n, int kind) {
    if (kind != 3) stream_sync(NULL);
    memmove(dst, src, n);
    return 0;
}
int cudaMemcpyAsync(void *dst, const void *src, size_t n, int kind, void *stream) {
    if (kind == 2 && !is_pinned(dst)) stream_sync(stream);
    memmove(dst, src, n);
    return 0;
}

/* ---------- graphs with nodes (the node probe's tests; lite's calibration graph) ----------
 * A node has a type (cudaGraphNodeType), a GPU time, a name (kernels) or an event (event
 * record nodes); edges are a list. An executable's replay runs each node when its last
 * dependency ended; an event record node costs FAKE_EVENT_NODE_NS (the probe's own cost,
 * measured 2.6 us a node on an H100, docs/profiler.md) and stamps its event when it ends. */
#define FAKE_EVENT_NODE_NS 2000
#define FAKE_MEMSET_NS 1000
#define FAKE_MAX_NAMES 64
enum { FK_KERNEL = 0, FK_MEMCPY = 1, FK_MEMSET = 2, FK_EMPTY = 5, FK_RECORD = 7, FK_ALLOC = 10 };
typedef struct fake_node { int type; int64_t ns; const char *name; void *event; struct fake_node *orig; } fake_node;
typedef struct { fake_node **n; int nn, cap; fake_node **ef, **et; unsigned char *ety; int ne, ecap; } fake_graph;
typedef struct { unsigned char from_port, to_port, type, reserved[5]; } fake_edge;   /* cudaGraphEdgeData */
#define FAKE_LOSSY_QUERY 402   /* cudaErrorLossyQuery: edge data asked without room for it */
static struct { const char *name; int runs; } kruns[FAKE_MAX_NAMES];
static int n_kruns;

static fake_node *g_add(fake_graph *g, int type, int64_t ns, const char *name, void *event, void *const *deps, size_t nd);
static int g_edge(fake_graph *g, fake_node *a, fake_node *b) {
    if (g->ne == g->ecap) {
        g->ecap = g->ecap ? 2 * g->ecap : 16;
        g->ef = realloc(g->ef, (size_t)g->ecap * sizeof *g->ef);
        g->et = realloc(g->et, (size_t)g->ecap * sizeof *g->et);
        g->ety = realloc(g->ety, (size_t)g->ecap);
    }
    g->ety[g->ne] = 0;
    g->ef[g->ne] = a;
    g->et[g->ne++] = b;
    return 0;
}
static fake_node *g_add(fake_graph *g, int type, int64_t ns, const char *name, void *event, void *const *deps, size_t nd) {
    fake_node *x = calloc(1, sizeof *x);
    x->type = type;
    x->ns = ns;
    x->name = name;
    x->event = event;
    if (g->nn == g->cap) { g->cap = g->cap ? 2 * g->cap : 16; g->n = realloc(g->n, (size_t)g->cap * sizeof *g->n); }
    g->n[g->nn++] = x;
    for (size_t i = 0; i < nd; i++) g_edge(g, deps[i], x);
    return x;
}
static void g_register(fake_graph *g);
void *fake_graph_new(void) {
    fake_graph *g = calloc(1, sizeof(fake_graph));
    g_register(g);
    return g;
}
void *fake_graph_kernel(void *g, const char *name, int64_t ns, void *const *deps, int nd) {
    return g_add(g, FK_KERNEL, ns, name, NULL, deps, (size_t)nd);
}
void *fake_graph_alloc_node(void *g) { return g_add(g, FK_ALLOC, 0, NULL, NULL, NULL, 0); }
void fake_graph_programmatic(void *g, void *from, void *to) {
    fake_graph *x = g;
    for (int e = 0; e < x->ne; e++) if (x->ef[e] == from && x->et[e] == to) x->ety[e] = 1;
}
int fake_kernel_runs(const char *name) {
    int r = 0;
    pthread_mutex_lock(&mu);
    for (int i = 0; i < n_kruns; i++) if (!strcmp(kruns[i].name, name)) r = kruns[i].runs;
    pthread_mutex_unlock(&mu);
    return r;
}

typedef struct { int64_t gpu_ns; fake_graph *g; int64_t *end; } fake_gexec;   /* gpu_ns first: as fake_exec */

int cudaGraphCreate(void **g, unsigned flags) { (void)flags; *g = fake_graph_new(); return 0; }
int cudaGraphAddEmptyNode(void **node, void *g, void *const *deps, size_t n) { *node = g_add(g, FK_EMPTY, 0, NULL, NULL, deps, n); return 0; }
typedef struct { void *dst; size_t pitch; unsigned value, elem; size_t width, height; } fake_memset;
int cudaGraphAddMemsetNode(void **node, void *g, void *const *deps, size_t n, const fake_memset *p) {
    (void)p;
    *node = g_add(g, FK_MEMSET, FAKE_MEMSET_NS, NULL, NULL, deps, n);
    return 0;
}
int cudaGraphAddEventRecordNode(void **node, void *g, void *const *deps, size_t n, void *ev) {
    *node = g_add(g, FK_RECORD, FAKE_EVENT_NODE_NS, NULL, ev, deps, n);
    return 0;
}
int cudaMalloc(void **p, size_t n) { *p = calloc(1, n ? n : 1); return 0; }
int cudaFree(void *p) { free(p); return 0; }
int cudaGraphClone(void **out, void *orig) {
    fake_graph *o = orig, *c = fake_graph_new();
    for (int i = 0; i < o->nn; i++) {
        fake_node *x = g_add(c, o->n[i]->type, o->n[i]->ns, o->n[i]->name, o->n[i]->event, NULL, 0);
        x->orig = o->n[i];
    }
    for (int e = 0; e < o->ne; e++) {
        fake_node *a = NULL, *b = NULL;
        for (int i = 0; i < o->nn; i++) { if (o->n[i] == o->ef[e]) a = c->n[i]; if (o->n[i] == o->et[e]) b = c->n[i]; }
        g_edge(c, a, b);
        c->ety[c->ne - 1] = o->ety[e];
    }
    *out = c;
    return 0;
}
int cudaGraphGetNodes(void *g, void **out, size_t *n) {
    fake_graph *x = g;
    if (out) for (int i = 0; i < x->nn && (size_t)i < *n; i++) out[i] = x->n[i];
    *n = (size_t)x->nn;
    return 0;
}
/* A node's dependencies (or dependents) into out and their edge data into ed; -1 when out is
 * given without ed and an edge has data (the runtime's lossy query). */
static long g_list(fake_graph *x, fake_node *nd, int want_deps, void **out, fake_edge *ed, size_t cap) {
    size_t k = 0;
    for (int e = 0; e < x->ne; e++) {
        fake_node *from = x->ef[e], *to = x->et[e];
        if (!from) continue;   /* removed */
        if (want_deps ? to == nd : from == nd) {
            if (out && !ed && x->ety[e]) return -1;
            if (out && k < cap) { out[k] = want_deps ? from : to; if (ed) { memset(&ed[k], 0, sizeof ed[k]); ed[k].type = x->ety[e]; } }
            k++;
        }
    }
    return (long)k;
}
static fake_graph *g_of(fake_node *nd);
int cudaGraphGetRootNodes(void *g, void **out, size_t *n) {
    fake_graph *x = g;
    size_t k = 0;
    for (int i = 0; i < x->nn; i++)
        if (!g_list(x, x->n[i], 1, NULL, NULL, 0)) { if (out && k < *n) out[k] = x->n[i]; k++; }
    *n = k;
    return 0;
}
int cudaGraphNodeGetType(void *node, int *t) { *t = ((fake_node *)node)->type; return 0; }
int cudaGraphNodeFindInClone(void **out, void *orig, void *clone) {
    fake_graph *c = clone;
    for (int i = 0; i < c->nn; i++) if (c->n[i]->orig == orig) { *out = c->n[i]; return 0; }
    return 1;
}
/* the CUDA 13 forms (edge data; fakecudart says runtime 13000) */
static fake_graph *graphs[4096];
static int n_graphs;
static fake_graph *g_of(fake_node *nd) {
    for (int j = n_graphs - 1; j >= 0; j--)
        for (int i = 0; i < graphs[j]->nn; i++) if (graphs[j]->n[i] == nd) return graphs[j];
    return NULL;
}
int cudaGraphNodeGetDependencies(void *node, void **out, fake_edge *edge, size_t *n) {
    fake_graph *g = g_of(node);
    if (!g) return 1;
    long k = g_list(g, node, 1, out, edge, out ? *n : 0);
    if (k < 0) return FAKE_LOSSY_QUERY;
    *n = (size_t)k;
    return 0;
}
int cudaGraphNodeGetDependentNodes(void *node, void **out, fake_edge *edge, size_t *n) {
    fake_graph *g = g_of(node);
    if (!g) return 1;
    long k = g_list(g, node, 0, out, edge, out ? *n : 0);
    if (k < 0) return FAKE_LOSSY_QUERY;
    *n = (size_t)k;
    return 0;
}
int cudaGraphAddDependencies(void *g, void *const *from, void *const *to, const fake_edge *edge, size_t n) {
    fake_graph *x = g;
    for (size_t i = 0; i < n; i++) { g_edge(g, from[i], to[i]); x->ety[x->ne - 1] = edge ? edge[i].type : 0; }
    return 0;
}
int cudaGraphRemoveDependencies(void *g, void *const *from, void *const *to, const void *edge, size_t n) {
    (void)edge;
    fake_graph *x = g;
    for (size_t i = 0; i < n; i++)
        for (int e = 0; e < x->ne; e++)
            if (x->ef[e] == from[i] && x->et[e] == to[i]) { x->ef[e] = x->et[e] = NULL; break; }
    return 0;
}
typedef struct { void *func; fake_dim3 grid, block; unsigned smem; void **params, **extra; } fake_kparams;
int cudaGraphKernelNodeGetParams(void *node, fake_kparams *p) {
    memset(p, 0, sizeof *p);
    p->func = (void *)((fake_node *)node)->name;   /* the name stands for the function */
    p->grid = (fake_dim3){ 7, 1, 1 };             /* every fake kernel: 7 blocks of 128, 32 registers */
    p->block = (fake_dim3){ 128, 1, 1 };
    return 0;
}
typedef struct { size_t shared, konst, local; int max_threads, regs; } fake_fattr;   /* cudaFuncAttributes' start */
int cudaFuncGetAttributes(fake_fattr *a, const void *func) { (void)func; memset(a, 0, sizeof *a); a->regs = 32; return 0; }
int cudaFuncGetName(const char **name, const void *func) { *name = func; return func ? 0 : 1; }

/* Every graph made is registered (g_of finds a node's graph), then its executable: each
 * node's end from the replay's start, nodes in an order where dependencies come first. */
static void g_register(fake_graph *g) {
    pthread_mutex_lock(&mu);
    int known = 0;
    for (int i = 0; i < n_graphs; i++) known |= graphs[i] == g;
    if (!known && n_graphs < 4096) graphs[n_graphs++] = g;
    pthread_mutex_unlock(&mu);
}
static int instantiate(void **exec, void *graph) {
    fake_graph *g = graph;
    fake_gexec *x = calloc(1, sizeof *x);
    x->g = g;
    x->end = calloc((size_t)g->nn + 1, sizeof *x->end);
    int *done = calloc((size_t)g->nn + 1, sizeof *done), left = g->nn;
    while (left > 0) {
        int progressed = 0;
        for (int i = 0; i < g->nn; i++) {
            if (done[i]) continue;
            int64_t st = 0;
            int ready = 1;
            for (int e = 0; e < g->ne && ready; e++) {
                if (g->et[e] != g->n[i] || !g->ef[e]) continue;
                int j = 0;
                while (g->n[j] != g->ef[e]) j++;
                if (!done[j]) ready = 0; else if (x->end[j] > st) st = x->end[j];
            }
            if (!ready) continue;
            x->end[i] = st + g->n[i]->ns;
            if (x->end[i] > x->gpu_ns) x->gpu_ns = x->end[i];
            done[i] = 1;
            left--;
            progressed = 1;
        }
        if (!progressed) { free(done); return 1; }   /* a cycle */
    }
    free(done);
    *exec = x;
    pthread_mutex_lock(&mu);
    if (n_gexecs < 1024) gexecs[n_gexecs++] = x;
    pthread_mutex_unlock(&mu);
    return 0;
}
static int fake_instantiate(void **exec, void *g, unsigned long long flags) {
    (void)flags;
    return instantiate(exec, g);
}
int cudaGraphInstantiate(void **exec, void *g, unsigned long long flags) { return fake_instantiate(exec, g, flags); }
int cudaGraphInstantiateWithFlags(void **exec, void *g, unsigned long long flags) { return fake_instantiate(exec, g, flags); }
int cudaGraphExecUpdate(void *exec, void *g, void *info) { (void)exec; (void)g; (void)info; return 0; }
int cudaGraphExecDestroy(void *exec) { (void)exec; return 0; }
int cudaGraphDestroy(void *g) { (void)g; return 0; }

/* A replay of a graph with nodes: its kernels counted, its event nodes' events stamped. */
static void g_replay(void *exec, int64_t start_ns) {
    fake_gexec *x = exec;
    fake_graph *g = x->g;
    for (int i = 0; i < g->nn; i++) {
        fake_node *nd = g->n[i];
        if (nd->type == FK_RECORD && nd->event) {
            fake_event *e = nd->event;
            e->t_ns = start_ns + x->end[i];
            e->recorded = 1;
        } else if (nd->type == FK_KERNEL && nd->name) {
            int k = 0;
            while (k < n_kruns && strcmp(kruns[k].name, nd->name)) k++;
            if (k == n_kruns && n_kruns < FAKE_MAX_NAMES) kruns[n_kruns++].name = nd->name;
            if (k < n_kruns) kruns[k].runs++;
        }
    }
}

/* CUPTI: every entry point libspecprof.so uses at its start. Any call is counted and fails
 * (lite mode must make none). */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#define FAKE_CUPTI(name, ...) int name(__VA_ARGS__) { __atomic_add_fetch(&cupti_calls, 1, __ATOMIC_SEQ_CST); return 1; }
FAKE_CUPTI(cuptiGetVersion, void *v)
FAKE_CUPTI(cuptiSubscribe_v2, void *s, void *cb, void *ud, void *p)
FAKE_CUPTI(cuptiSubscribe, void *s, void *cb, void *ud)
FAKE_CUPTI(cuptiActivityRegisterCallbacks, void *a, void *b)
FAKE_CUPTI(cuptiGetTimestamp, void *t)
FAKE_CUPTI(cuptiActivityEnable, int k)
FAKE_CUPTI(cuptiEnableCallback, unsigned e, void *s, int d, unsigned c)
FAKE_CUPTI(cuptiEnableDomain, unsigned e, void *s, int d)
FAKE_CUPTI(cuptiActivityFlushAll, unsigned f)
FAKE_CUPTI(cuptiGetResultString, int r, const char **s)
