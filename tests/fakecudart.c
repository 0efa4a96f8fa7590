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

/* graphs: the calibration's 1-node empty graph */
int cudaGraphCreate(void **g, unsigned flags) { (void)flags; *g = calloc(1, 8); return 0; }
int cudaGraphAddEmptyNode(void **node, void *g, const void *deps, size_t n) { (void)g; (void)deps; (void)n; *node = calloc(1, 8); return 0; }
int cudaGraphInstantiate(void **exec, void *g, unsigned long long flags) { (void)g; (void)flags; *exec = fake_graph_exec(2000); return 0; }
int cudaGraphExecDestroy(void *exec) { (void)exec; return 0; }
int cudaGraphDestroy(void *g) { (void)g; return 0; }

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
