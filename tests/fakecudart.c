/* fakecudart.c: a scripted CUDA runtime for CPU-only tests (see fakecudart.h), built as a
 * shared library so that libspecprof.so, preloaded, finds it as "the next" definition the way
 * it finds libcudart on a GPU machine. Also defines the CUPTI entry points libspecprof.so
 * links to: they count calls and fail, so a test sees any CUPTI call lite mode makes.
 * The eager probe's hold (cuStreamWaitValue32 on a mapped host flag) queues a stream's work
 * until the host writes the flag; the fake notices the write at its next call (any thread)
 * and runs the queue then, back to back (see "holds" below).
 * Workload: a test program's few hundred calls; one lock, nothing freed. */
#include "fakecudart.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FAKE_NOT_READY 600                 /* cudaErrorNotReady */
#define FAKE_LAUNCH_HOST_NS 2000           /* host time of a graph launch call (a real one: 2-4 us, docs/profiler.md) */
#define FAKE_KERNEL_NS 1000                /* GPU time of a launched kernel */
#define FAKE_MAX_REPLAYS 4096
/* host time of a launch of a named kernel (fake_kernel_fn): it reaches the GPU when the call
 * returns (a real cudaLaunchKernel: 2-5 us, docs/profiler.md); unnamed launches cost nothing */
#define FAKE_NAMED_LAUNCH_NS 5000
#define FAKE_HOLD_TIMEOUT_NS 10000000000LL /* a sync blocked this long on a held stream: a deadlock */

/* An operation queued behind a hold (a cuStreamWaitValue32 not yet met): run when the stream
 * is released, in order. */
enum { OP_WAIT, OP_KERNEL, OP_EVENT, OP_GRAPH };
typedef struct {
    int type;
    int64_t ns;                            /* OP_KERNEL */
    const char *name;                      /* OP_KERNEL: counted by name when it runs (NULL: not) */
    void *ev;                              /* OP_EVENT */
    unsigned serial;                       /* OP_EVENT: the record it is (a later record replaces it) */
    void *exec;                            /* OP_GRAPH */
    const volatile uint32_t *addr;         /* OP_WAIT: flag >= value (CU_STREAM_WAIT_VALUE_GEQ) */
    uint32_t value;
} fake_op;

typedef struct {
    int64_t busy_until_ns, last_event_ns; int capturing; unsigned long long id;
    int nonblocking;                       /* cudaStreamNonBlocking: no implicit sync with the legacy stream */
    fake_op *q;                            /* held: q[qhead..nq) waits, nq > qhead */
    int nq, qhead, qcap;
    int records;                           /* cudaEventRecord calls on this stream */
} fake_stream;
typedef struct { int64_t t_ns; int recorded; int pending; unsigned serial; } fake_event;
typedef struct { int64_t gpu_ns; } fake_exec;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static fake_stream legacy = { .id = 7 };
static fake_stream per_thread = { .id = 8 };   /* cudaStreamPerThread (one thread's: the tests use one) */
static unsigned long long next_stream_id = 13;
static int64_t device_busy_ns;
static void *pinned[64];
static int n_pinned;
static int64_t replay_start[FAKE_MAX_REPLAYS], replay_event[FAKE_MAX_REPLAYS];
static int n_replays;
static int cupti_calls;
#define FAKE_MAX_NAMES 64
static struct { const char *name; int runs; } kruns[FAKE_MAX_NAMES];   /* kernels run, by name */
static int n_kruns;
static int capture_broken;   /* calls a capturing stream refuses (and that end a real capture) */

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
static void spin_until(int64_t t) { while (now_ns() < t) {} }
/* cudaStreamLegacy (0x1) and cudaStreamPerThread (0x2) are handles too */
static fake_stream *S(void *s) {
    return !s || s == (void *)0x1 ? &legacy : s == (void *)0x2 ? &per_thread : (fake_stream *)s;
}
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* GPU work of gpu_ns on stream s, in order after what is queued there; returns its start. */
static int64_t enqueue_at(fake_stream *s, int64_t gpu_ns, int64_t now) {
    int64_t start = max64(now, s->busy_until_ns);
    s->busy_until_ns = start + gpu_ns;
    device_busy_ns = max64(device_busy_ns, s->busy_until_ns);
    return start;
}
static int64_t enqueue(fake_stream *s, int64_t gpu_ns) { return enqueue_at(s, gpu_ns, now_ns()); }

/* ---------- holds (the eager probe) ----------
 * A stream with a wait in its queue is held: its work (kernels, event records, graph
 * replays) is queued, not run. At each call of the fake (any thread: a program's launch, the
 * writer's cudaEventQuery) the queues whose first wait is met run, from that moment, back to
 * back, up to the next wait not met: a host write is noticed lazily, as a GPU's front end
 * polls. Nothing of this runs while no stream is held (n_held 0): the old timing is kept. */
static fake_stream *held[64];
static int n_held, n_waits;
static int64_t event_ns;                   /* GPU time of an event record (fake_set_event_ns; 0) */
static int hold_off;                       /* fake_set_hold(0): waits accepted and ignored */
static char run_order[8192];               /* named kernels, space-separated, in the order they ran */
static size_t n_run_order;
static int held_q(const fake_stream *s) { return s->nq > s->qhead; }
static void q_push(fake_stream *s, fake_op op) {
    if (s->nq == s->qcap) {
        s->qcap = s->qcap ? 2 * s->qcap : 64;
        s->q = realloc(s->q, (size_t)s->qcap * sizeof *s->q);
    }
    if (!held_q(s) && n_held < 64) held[n_held++] = s;
    s->q[s->nq++] = op;
}
static void kernel_ran(const char *name);
/* An event record that runs now (at now): stamped after what the stream has, taking event_ns. */
static void event_run(fake_stream *s, fake_event *e, int64_t now) {
    e->t_ns = max64(now, s->busy_until_ns) + event_ns;
    s->busy_until_ns = s->last_event_ns = e->t_ns;
    if (event_ns) device_busy_ns = max64(device_busy_ns, s->busy_until_ns);
    e->recorded = 1;
    e->pending = 0;
}
static void g_replay(void *exec, int64_t start_ns);
static void graph_run(fake_stream *s, void *exec, int64_t now);
/* Runs what the met waits let through. Caller holds mu. */
static void poll_holds(void) {
    if (!n_held) return;
    int64_t now = now_ns();
    for (int i = 0; i < n_held; i++) {
        fake_stream *s = held[i];
        while (held_q(s)) {
            fake_op *op = &s->q[s->qhead];
            if (op->type == OP_WAIT) {
                uint32_t v = __atomic_load_n(op->addr, __ATOMIC_ACQUIRE);
                if ((int32_t)(v - op->value) < 0) break;   /* CU_STREAM_WAIT_VALUE_GEQ, as CUDA compares */
            } else if (op->type == OP_KERNEL) {
                enqueue_at(s, op->ns, now);
                if (op->name) kernel_ran(op->name);
            } else if (op->type == OP_EVENT) {
                fake_event *e = op->ev;
                if (e->serial == op->serial) event_run(s, e, now);
            } else graph_run(s, op->exec, now);
            s->qhead++;
        }
        if (!held_q(s)) {
            s->nq = s->qhead = 0;
            held[i--] = held[--n_held];
        }
    }
}
static void lock_poll(void) { pthread_mutex_lock(&mu); poll_holds(); }
/* Spins until the stream (NULL: every stream, legacy: itself and every blocking stream) is no
 * longer held, then returns with mu held; a hold that outlasts FAKE_HOLD_TIMEOUT_NS ends the
 * process loudly (the program would hang on a GPU). */
static void wait_unheld(fake_stream *s, int all) {
    int64_t t0 = now_ns();
    for (;;) {
        lock_poll();
        int h = 0;
        for (int i = 0; i < n_held && !h; i++)
            h = held[i] == s || all == 2 || (all == 1 && !held[i]->nonblocking);
        if (!h) return;
        pthread_mutex_unlock(&mu);
        if (now_ns() - t0 > FAKE_HOLD_TIMEOUT_NS) {
            fprintf(stderr, "fakecudart: a sync waited %.0f s on a held stream (stream %llu): the host never "
                            "released its cuStreamWaitValue32; a real program would hang here\n",
                    (double)FAKE_HOLD_TIMEOUT_NS / 1e9, s ? s->id : 0ull);
            _exit(70);
        }
    }
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

static void graph_run(fake_stream *s, void *exec, int64_t now) {
    int64_t st = enqueue_at(s, exec ? ((fake_exec *)exec)->gpu_ns : 0, now);
    if (exec && is_gexec(exec)) g_replay(exec, st);
    if (n_replays < FAKE_MAX_REPLAYS) {
        replay_event[n_replays] = s->last_event_ns;
        replay_start[n_replays++] = st;
    }
}
int cudaGraphLaunch(void *exec, void *stream) {
    int64_t t0 = now_ns();
    lock_poll();
    fake_stream *s = S(stream);
    if (!s->capturing) {
        if (held_q(s)) q_push(s, (fake_op){ .type = OP_GRAPH, .exec = exec });
        else graph_run(s, exec, now_ns());
    }
    pthread_mutex_unlock(&mu);
    spin_until(t0 + FAKE_LAUNCH_HOST_NS);
    return 0;
}
int cudaGraphLaunch_ptsz(void *exec, void *stream) { return cudaGraphLaunch(exec, stream); }   /* not called by the test */

/* Named kernels (fake_kernel_fn): the struct starts with the name, so that the function
 * pointer is its name for cudaFuncGetName, as the graph nodes' are. */
#define FAKE_MAX_KFN 64
typedef struct { char name[128]; int64_t ns; } fake_kfn;
static fake_kfn kfns[FAKE_MAX_KFN];
static int n_kfns;
const void *fake_kernel_fn(const char *name, int64_t ns) {
    pthread_mutex_lock(&mu);
    fake_kfn *k = n_kfns < FAKE_MAX_KFN ? &kfns[n_kfns++] : NULL;
    if (k) { snprintf(k->name, sizeof k->name, "%s", name); k->ns = ns; }
    pthread_mutex_unlock(&mu);
    return k;
}
static const fake_kfn *kfn_of(const void *f) {
    const fake_kfn *k = f;
    return k >= kfns && k < kfns + FAKE_MAX_KFN ? k : NULL;
}
/* A named kernel ran: counted by name (fake_kernel_runs) and logged in order. Caller holds mu. */
static void kernel_ran(const char *name) {
    int k = 0;
    while (k < n_kruns && strcmp(kruns[k].name, name)) k++;
    if (k == n_kruns && n_kruns < FAKE_MAX_NAMES) kruns[n_kruns++].name = name;
    if (k < n_kruns) kruns[k].runs++;
    if (n_run_order + strlen(name) + 2 < sizeof run_order)
        n_run_order += (size_t)snprintf(run_order + n_run_order, sizeof run_order - n_run_order, "%s%s",
                                        n_run_order ? " " : "", name);
}
int fake_run_order(char *buf, size_t cap) {
    pthread_mutex_lock(&mu);
    int n = snprintf(buf, cap, "%s", run_order);
    pthread_mutex_unlock(&mu);
    return n;
}
void fake_set_event_ns(int64_t ns) { pthread_mutex_lock(&mu); event_ns = ns; pthread_mutex_unlock(&mu); }
void fake_set_hold(int on) { pthread_mutex_lock(&mu); hold_off = !on; pthread_mutex_unlock(&mu); }
int fake_waits(void) { pthread_mutex_lock(&mu); int n = n_waits; pthread_mutex_unlock(&mu); return n; }
int fake_event_records(void *stream) { pthread_mutex_lock(&mu); int n = S(stream)->records; pthread_mutex_unlock(&mu); return n; }
int fake_held(void *stream) { lock_poll(); int n = S(stream)->nq - S(stream)->qhead; pthread_mutex_unlock(&mu); return n; }

/* A launch of a named kernel costs the host FAKE_NAMED_LAUNCH_NS and reaches the GPU at its
 * end; an unnamed one (f NULL or not from fake_kernel_fn) costs nothing and runs
 * FAKE_KERNEL_NS, as before. */
int cudaLaunchKernel(const void *f, fake_dim3 grid, fake_dim3 block, void **args, size_t smem, void *stream) {
    (void)grid; (void)block; (void)args; (void)smem;
    const fake_kfn *k = kfn_of(f);
    if (k) spin_until(now_ns() + FAKE_NAMED_LAUNCH_NS);
    lock_poll();
    fake_stream *s = S(stream);
    if (!s->capturing) {
        int64_t ns = k ? k->ns : FAKE_KERNEL_NS;
        if (held_q(s)) q_push(s, (fake_op){ .type = OP_KERNEL, .ns = ns, .name = k ? k->name : NULL });
        else {
            enqueue(s, ns);
            if (k) kernel_ran(k->name);
        }
    }
    pthread_mutex_unlock(&mu);
    return 0;
}

/* The hold: CUresult cuStreamWaitValue32(CUstream, CUdeviceptr addr, cuuint32_t value,
 * unsigned flags), GEQ only (flags 0). addr is the host pointer itself (cudaHostGetDevicePointer
 * gives it back). */
static int fake_wait_value32(void *stream, unsigned long long addr, uint32_t value, unsigned flags) {
    if (flags != 0 || !addr) return 1;   /* CUDA_ERROR_INVALID_VALUE */
    lock_poll();
    fake_stream *s = S(stream);
    n_waits++;
    if (!hold_off && !s->capturing)
        q_push(s, (fake_op){ .type = OP_WAIT, .addr = (const volatile uint32_t *)(uintptr_t)addr, .value = value });
    poll_holds();   /* a flag already written lets it through at once */
    pthread_mutex_unlock(&mu);
    return 0;
}
/* cudaGetDriverEntryPointByVersion(symbol, &fn, cudaVersion, flags, &status): status
 * cudaDriverEntryPointSuccess (0) or cudaDriverEntryPointSymbolNotFound (1). */
int cudaGetDriverEntryPointByVersion(const char *symbol, void **fn, unsigned version, unsigned long long flags,
                                     int *status) {
    (void)version; (void)flags;
    int found = symbol && !strcmp(symbol, "cuStreamWaitValue32");
    *fn = found ? (void *)fake_wait_value32 : NULL;
    if (status) *status = found ? 0 : 1;
    return 0;
}
/* Mapped pinned memory (cudaHostAllocMapped = 2): the device pointer is the host pointer. */
int cudaHostAlloc(void **p, size_t n, unsigned flags) {
    (void)flags;
    *p = calloc(1, n ? n : 1);
    if (!*p) return 2;   /* cudaErrorMemoryAllocation */
    fake_pin(*p);
    return 0;
}
int cudaHostGetDevicePointer(void **d, void *h, unsigned flags) { (void)flags; *d = h; return h ? 0 : 1; }

int cudaEventCreate(void **ev) { *ev = calloc(1, sizeof(fake_event)); return *ev ? 0 : 2; }
int cudaEventCreateWithFlags(void **ev, unsigned flags) { (void)flags; return cudaEventCreate(ev); }
int cudaEventDestroy(void *ev) { (void)ev; return 0; }
/* On a held stream the record is queued (the event pending: not ready) and stamped when it
 * runs, unless recorded again before. */
int cudaEventRecord(void *ev, void *stream) {
    lock_poll();
    fake_event *e = ev;
    fake_stream *s = S(stream);
    s->records++;
    e->serial++;
    if (held_q(s)) {
        e->recorded = e->pending = 1;
        q_push(s, (fake_op){ .type = OP_EVENT, .ev = e, .serial = e->serial });
    } else event_run(s, e, now_ns());
    pthread_mutex_unlock(&mu);
    return 0;
}
int cudaEventQuery(void *ev) {
    fake_event *e = ev;
    lock_poll();
    int64_t t = e->t_ns;
    int pending = e->pending;
    pthread_mutex_unlock(&mu);
    return !pending && now_ns() >= t ? 0 : FAKE_NOT_READY;
}
int cudaEventSynchronize(void *ev) {
    fake_event *e = ev;
    int64_t t0 = now_ns();
    lock_poll();
    while (e->pending) {   /* recorded on a held stream: until it is released */
        pthread_mutex_unlock(&mu);
        if (now_ns() - t0 > FAKE_HOLD_TIMEOUT_NS) wait_unheld(NULL, 2);   /* fails loudly */
        lock_poll();
    }
    int64_t t = e->t_ns;
    pthread_mutex_unlock(&mu);
    spin_until(t);
    return 0;
}
/* As the real one: float ms, at a resolution of 0.5 us. */
int cudaEventElapsedTime(float *ms, void *a, void *b) {
    fake_event *x = a, *y = b;
    lock_poll();
    int ok = x->recorded && y->recorded, pending = x->pending || y->pending;
    int64_t d = y->t_ns - x->t_ns;
    pthread_mutex_unlock(&mu);
    if (!ok) return 400;   /* cudaErrorInvalidResourceHandle */
    if (pending || now_ns() < x->t_ns || now_ns() < y->t_ns) return FAKE_NOT_READY;
    int64_t q = (d >= 0 ? d + 250 : d - 250) / 500 * 500;
    *ms = (float)((double)q / 1e6);
    return 0;
}

/* internal calls do not go through the exported (interposed) names, as in the real runtime */
static int stream_sync(void *stream) {
    fake_stream *s = S(stream);
    wait_unheld(s, s == &legacy);   /* the legacy stream waits for the blocking streams too */
    int64_t t = s->busy_until_ns;
    pthread_mutex_unlock(&mu);
    spin_until(t);
    return 0;
}
int cudaStreamSynchronize(void *stream) { return stream_sync(stream); }
int cudaStreamSynchronize_ptsz(void *stream) { return stream_sync(stream); }
int cudaDeviceSynchronize(void) {
    wait_unheld(NULL, 2);
    int64_t t = device_busy_ns;
    pthread_mutex_unlock(&mu);
    spin_until(t);
    return 0;
}
int cudaStreamIsCapturing(void *stream, int *status) {
    lock_poll();
    *status = S(stream)->capturing;
    pthread_mutex_unlock(&mu);
    return 0;
}
int cudaStreamCreateWithPriority(void **stream, unsigned flags, int priority) {
    (void)priority;
    fake_stream *s = calloc(1, sizeof *s);
    pthread_mutex_lock(&mu);
    s->id = next_stream_id++;
    s->nonblocking = flags & 1;   /* cudaStreamNonBlocking */
    pthread_mutex_unlock(&mu);
    *stream = s;
    return 0;
}
int cudaStreamCreate(void **stream) { return cudaStreamCreateWithPriority(stream, 0, 0); }
/* refused while capturing (as any call on a capturing stream we are not sure of: the
 * interposer must only ask cudaStreamIsCapturing then) */
int cudaStreamGetId(void *stream, unsigned long long *id) {
    lock_poll();
    pthread_mutex_unlock(&mu);
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
    lock_poll();
    pthread_mutex_unlock(&mu);
    if (kind != 3) stream_sync(NULL);
    memmove(dst, src, n);
    return 0;
}
int cudaMemcpyAsync(void *dst, const void *src, size_t n, int kind, void *stream) {
    lock_poll();
    pthread_mutex_unlock(&mu);
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
enum { FK_KERNEL = 0, FK_MEMCPY = 1, FK_MEMSET = 2, FK_EMPTY = 5, FK_RECORD = 7, FK_ALLOC = 10 };
typedef struct fake_node { int type; int64_t ns; const char *name; void *event; struct fake_node *orig; } fake_node;
typedef struct { fake_node **n; int nn, cap; fake_node **ef, **et; unsigned char *ety; int ne, ecap; } fake_graph;
typedef struct { unsigned char from_port, to_port, type, reserved[5]; } fake_edge;   /* cudaGraphEdgeData */
#define FAKE_LOSSY_QUERY 402   /* cudaErrorLossyQuery: edge data asked without room for it */

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
/* cudaFree waits for the whole device (CUDA Runtime API, "API synchronization behavior"): here
 * for every held stream */
int cudaFree(void *p) { wait_unheld(NULL, 2); pthread_mutex_unlock(&mu); free(p); return 0; }
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
