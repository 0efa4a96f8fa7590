/* plite.c: lite mode (see plite.h). The program's threads run the interposed runtime calls:
 * a clock read, a copy of a fixed-size record into a queue under one uncontended lock, and
 * for a graph launch two cudaEventRecord calls with events from a per-device pool; nothing
 * is allocated or formatted there. The writer thread (pinject's control thread) formats the
 * records, refills the pools, and turns each completed event pair into a graph_trace event on
 * the host clock through an anchor: an event it records on a private high-priority stream and
 * waits for itself, bracketed by two host clock reads (traces/FORMAT.md "Lite mode" states
 * the error bound). The program's streams are never synchronized or waited on by us.
 * The real entry points are the next definitions after ours (dlsym RTLD_NEXT), or those of
 * the libcudart already loaded (a library opened RTLD_LOCAL, as Python extensions are). */
#include "plite.h"
#include "plprobe.h"
#include "pleager.h"
#include "pinject.h"
#include "ptrace_write.h"
#include <cupti_runtime_cbid.h>   /* the CUPTI callback ids the api events carry (a header, no CUPTI call) */
#include <dlfcn.h>
#include <link.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Sizes. A graph loop keeps < 100 launches in flight (specbench decode: ~170 launches/s,
 * the writer resolves them every 500 ms); 2 events each. */
#define PL_MAX_DEV 16
#define PL_POOL_MAX 4096          /* events per device */
#define PL_POOL_LOW 512           /* below this the writer adds PL_POOL_FILL */
#define PL_POOL_FILL 1024
#define PL_Q_CAP 32768            /* records between two writer passes: 65k calls/s at 500 ms */
#define PL_PENDING_MAX 8192       /* timed launches whose end event has not completed */
#define PL_EXEC_SLOTS 8192        /* graph executables numbered (open addressing) */
#define PL_ANCHOR_TRIES 3         /* narrowest bracket of these is kept */
#define PL_ANCHOR_SPIN_NS 5000000 /* give up an anchor try after 5 ms (GPU front end busy) */
/* cudaEventElapsedTime's resolution: "around 0.5 microseconds" (CUDA Runtime API reference,
 * cudaEventElapsedTime) */
#define PL_EVENT_RES_NS 500
/* the GPU clock's rate against the host's before two anchors have measured it: the H200
 * smoke call measured 4.7 ppm (traces/overhead/h200-lite-smoke) */
#define PL_DRIFT_ASSUMED_PPM 10.0
#define PL_CALIB_N 200            /* timed calls per calibration configuration (median) */
#define PL_FINAL_WAIT_MS 200      /* at the end, launches still running are waited for this long */

/* The CUDA runtime's types as far as we use them (ABI of cuda_runtime_api.h, CUDA 12-13). */
typedef int pl_err;                              /* cudaError_t */
#define PL_SUCCESS 0
#define PL_NOT_READY 600                         /* cudaErrorNotReady */
#define PL_UNKNOWN 999                           /* cudaErrorUnknown: no real entry point found */
typedef struct { unsigned x, y, z; } pl_dim3;
/* struct cudaPointerAttributes (driver_types.h, CUDA 13: type, device, two pointers, long
 * reserved[8]), with room to spare for a later runtime's: the H200 smoke call's 24-byte copy
 * of CUDA 11's layout had the runtime write past it on our stack */
typedef struct { int type, device; void *dev_ptr, *host_ptr; long reserved[8], spare[24]; } pl_ptr_attr;
enum { PL_MEM_UNREGISTERED = 0 };                /* cudaMemoryTypeUnregistered: pageable host memory */
enum { PL_HTOH = 0, PL_HTOD, PL_DTOH, PL_DTOD, PL_DEFAULT };   /* cudaMemcpyKind */

/* The entry points we interpose (a record names them by index). */
enum { PL_GRAPH, PL_GRAPH_PTSZ, PL_MEMCPY, PL_MEMCPY_PTDS, PL_MEMCPY_ASYNC, PL_MEMCPY_ASYNC_PTSZ, PL_SSYNC,
       PL_SSYNC_PTSZ, PL_DSYNC, PL_ESYNC, PL_N_API };
static const struct { const char *name; uint32_t cbid; } pl_api[PL_N_API] = {
    {"cudaGraphLaunch", CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000},
    {"cudaGraphLaunch_ptsz", CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000},
    {"cudaMemcpy", CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020},
    {"cudaMemcpy_ptds", CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000},
    {"cudaMemcpyAsync", CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020},
    {"cudaMemcpyAsync_ptsz", CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000},
    {"cudaStreamSynchronize", CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020},
    {"cudaStreamSynchronize_ptsz", CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000},
    {"cudaDeviceSynchronize", CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020},
    {"cudaEventSynchronize", CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020},
};
#define PL_INTERPOSED "cudaGraphLaunch,cudaGraphLaunch_ptsz,cudaMemcpy,cudaMemcpy_ptds,cudaMemcpyAsync," \
    "cudaMemcpyAsync_ptsz,cudaStreamSynchronize,cudaStreamSynchronize_ptsz,cudaDeviceSynchronize," \
    "cudaEventSynchronize,cudaGraphExecDestroy,cudaProfilerStart,cudaProfilerStop;counted:cudaLaunchKernel,cudaLaunchKernel_ptsz," \
    "__cudaLaunchKernel,__cudaLaunchKernel_ptsz,cudaLaunchKernelExC,cudaLaunchKernelExC_ptsz,cudaLaunchCooperativeKernel"
static const char *const pl_copy_kind[] = { "HtoH", "HtoD", "DtoH", "DtoD", "Default" };
enum { PL_TIMED = 0, PL_UNTIMED_CAPTURING, PL_UNTIMED_FAILED, PL_UNTIMED_NO_EVENT, PL_UNTIMED_PROBE, PL_N_UNTIMED };
/* probe: the node probe ran the instrumented clone (its span is a graph_probe event's) */
static const char *const pl_untimed[PL_N_UNTIMED] = { NULL, "capturing", "failed", "no_event", "probe" };

typedef enum { PL_REC_GRAPH = 1, PL_REC_CALL, PL_REC_EXEC_GONE } pl_rec_kind;

/* One interposed call, as the program's thread saw it (fixed size, copied into the queue). */
typedef struct {
    uint8_t kind, api, copy_kind, untimed;
    int8_t blocking;               /* -1: not known */
    int8_t dev;
    pl_err rc;
    uint32_t corr, inner, phase;   /* our sequence number; NVTX range and phase range (pnvtx seqs) */
    int64_t t0_ns, t1_ns, tid;
    uint64_t bytes, stream_id;
    void *exec, *ev[2];
    plprobe *probe;                /* the node probe's clone ran instead of exec */
} pl_rec;

/* ---------- the real runtime ---------- */

typedef pl_err (*pl_graph_fn)(void *, void *);
typedef pl_err (*pl_memcpy_fn)(void *, const void *, size_t, int);
typedef pl_err (*pl_memcpy_async_fn)(void *, const void *, size_t, int, void *);
typedef pl_err (*pl_p1_fn)(void *);
typedef pl_err (*pl_v_fn)(void);
typedef pl_err (*pl_launch_fn)(const void *, pl_dim3, pl_dim3, void **, size_t, void *);
typedef pl_err (*pl_launch_ex_fn)(const void *, const void *, void **);

static struct {
    void *fn[PL_N_API];
    pl_err (*exec_destroy)(void *);
    pl_launch_fn launch, launch_ptsz, launch_coop, launch_k, launch_k_ptsz;
    pl_launch_ex_fn launch_ex, launch_ex_ptsz;
    pl_err (*is_capturing)(void *, int *);
    pl_err (*get_device)(int *);
    pl_err (*set_device)(int);
    pl_err (*stream_id)(void *, unsigned long long *);
    pl_err (*ev_create)(void **);
    pl_err (*ev_record)(void *, void *);
    pl_err (*ev_query)(void *);
    pl_err (*ev_elapsed)(float *, void *, void *);
    pl_err (*ptr_attr)(pl_ptr_attr *, const void *);
    pl_err (*last_error)(void);
    pl_err (*capture_mode)(int *);
    pl_err (*prio_range)(int *, int *);
    pl_err (*stream_create_prio)(void **, unsigned, int);
    pl_err (*graph_create)(void **, unsigned);
    pl_err (*graph_add_empty)(void **, void *, const void *, size_t);
    pl_err (*graph_instantiate)(void **, void *, unsigned long long);
    pl_err (*graph_destroy)(void *);
    pl_err (*stream_destroy)(void *);
    pl_v_fn prof_start, prof_stop;
} pl_rt;

static int pl_find_cudart(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    if (info->dlpi_name && strstr(info->dlpi_name, "libcudart.so")) {
        snprintf((char *)data, 1024, "%s", info->dlpi_name);
        return 1;
    }
    return 0;
}

static void *pl_sym(const char *name) {
    void *p = dlsym(RTLD_NEXT, name);
    if (p) return p;
    static void *_Atomic h;
    void *hh = atomic_load(&h);
    if (!hh) {
        char path[1024] = "";
        dl_iterate_phdr(pl_find_cudart, path);
        hh = path[0] ? dlopen(path, RTLD_LAZY | RTLD_NOLOAD) : NULL;
        if (hh) atomic_store(&h, hh);
    }
    return hh ? dlsym(hh, name) : NULL;
}

/* Looks the entry point up once (threads racing store the same address). */
#define PL_REAL(slot, name) \
    (__atomic_load_n(&(slot), __ATOMIC_RELAXED) ? (slot) \
     : (__atomic_store_n(&(slot), (__typeof__(slot))pl_sym(name), __ATOMIC_RELAXED), (slot)))

static void pl_resolve_helpers(void) {   /* each one looked up while still missing */
    PL_REAL(pl_rt.is_capturing, "cudaStreamIsCapturing");
    PL_REAL(pl_rt.get_device, "cudaGetDevice");
    PL_REAL(pl_rt.set_device, "cudaSetDevice");
    PL_REAL(pl_rt.stream_id, "cudaStreamGetId");
    PL_REAL(pl_rt.ev_create, "cudaEventCreate");
    PL_REAL(pl_rt.ev_record, "cudaEventRecord");
    PL_REAL(pl_rt.ev_query, "cudaEventQuery");
    PL_REAL(pl_rt.ev_elapsed, "cudaEventElapsedTime");
    PL_REAL(pl_rt.ptr_attr, "cudaPointerGetAttributes");
    PL_REAL(pl_rt.last_error, "cudaGetLastError");
    PL_REAL(pl_rt.capture_mode, "cudaThreadExchangeStreamCaptureMode");
    PL_REAL(pl_rt.prio_range, "cudaDeviceGetStreamPriorityRange");
    PL_REAL(pl_rt.stream_create_prio, "cudaStreamCreateWithPriority");
}

/* ---------- state ---------- */

typedef struct { void *ev[PL_POOL_MAX]; int n, made; } pl_pool;
typedef struct { uint64_t launches, graph_launches, stream_id; void *stream; int stream_ok, calib; } pl_thread;

static int pl_enabled = -1;               /* SPECPROF_MODE=lite (constructor) */
static atomic_int pl_on;                  /* recording (plite_start, not in a forked child) */
/* --capture-range profiler-api (SPECPROF_CAPTURE_RANGE): records only between the program's
 * cudaProfilerStart and cudaProfilerStop (torch.cuda.profiler.start/stop); the gate is open
 * from the start otherwise. Closed, every interposed call goes straight to the runtime. */
static int pl_range_mode;
static int pl_eager_n;                    /* the eager probe's instances per phase shape (0: off) */
static atomic_int pl_gate = 1;
static atomic_llong pl_gate_open_ns;      /* when the gate last opened (pinject_now_ns) */
static atomic_llong pl_n_range_opens, pl_range_ns;
static pnvtx *pl_nvtx;
static void (*pl_wake)(void);
static __thread pl_thread pl_t;

static pthread_mutex_t pl_qmu = PTHREAD_MUTEX_INITIALIZER;
static pl_rec *pl_q, *pl_q_spare;
static size_t pl_qn;
static uint32_t pl_corr;                  /* under pl_qmu */
static pl_rec pl_calib_scratch;           /* the calibration's records go here (same cost, not written) */

static pthread_mutex_t pl_pmu = PTHREAD_MUTEX_INITIALIZER;
static pl_pool *pl_pools;                 /* PL_MAX_DEV */
static atomic_int pl_pool_want[PL_MAX_DEV];

static atomic_int pl_cuda_seen, pl_first_dev;
static atomic_llong pl_n_graph, pl_n_capturing, pl_n_failed, pl_n_no_event, pl_n_memcpy, pl_n_sync, pl_n_blocking,
    pl_n_kernels, pl_n_dropped;

/* writer thread only */
typedef struct { pl_rec r; uint32_t exec_id; int done; char nvtx[PNVTX_NAME_MAX], phase[24]; } pl_pend;
typedef struct {
    void *stream, *ev[PL_ANCHOR_TRIES + 1];
    int ready, cur, valid;
    int64_t host_ns, half_ns;
    double scale;                         /* host ns per GPU ns, from the last two anchors */
} pl_anchor;
static struct {
    pl_pend *pend;
    int n_pend;
    pl_anchor anchor[PL_MAX_DEV];
    void *exec_key[PL_EXEC_SLOTS];
    uint32_t exec_val[PL_EXEC_SLOTS];
    uint32_t next_exec_id;
    int relaxed;                          /* this thread's capture mode is relaxed */
    int64_t timed, pending, lost, anchors, probed, eager_written, eager_lost;
    double anchor_err_max_us, err_max_us, drift_max_ppm;
} pl_w;

__attribute__((constructor)) static void pl_ctor(void) {
    const char *m = getenv("SPECPROF_MODE");
    pl_enabled = m && !strcmp(m, "lite") && getenv("SPECPROF_DIR") != NULL;
    const char *r = getenv("SPECPROF_CAPTURE_RANGE");
    pl_range_mode = pl_enabled && r && !strcmp(r, "profiler-api");
    const char *pe = getenv("SPECPROF_PROBE_EAGER");
    pl_eager_n = pl_enabled && pe ? atoi(pe) : 0;
    if (pl_range_mode) atomic_store(&pl_gate, 0);
}

int plite_enabled(void) {
    if (pl_enabled < 0) pl_ctor();
    return pl_enabled;
}

static void pl_atfork_child(void) { atomic_store(&pl_on, 0); }

void plite_start(pnvtx *nvtx, void (*wake)(void)) {
    if (atomic_load(&pl_on)) return;
    pl_nvtx = nvtx;
    pl_wake = wake;
    pl_q = malloc(PL_Q_CAP * sizeof *pl_q);
    pl_q_spare = malloc(PL_Q_CAP * sizeof *pl_q_spare);
    pl_pools = calloc(PL_MAX_DEV, sizeof *pl_pools);
    pl_w.pend = malloc(PL_PENDING_MAX * sizeof *pl_w.pend);
    if (!pl_q || !pl_q_spare || !pl_pools || !pl_w.pend) {
        pinject_note("lite mode: out of memory at start: nothing interposed is recorded");
        return;
    }
    pl_resolve_helpers();
    pthread_atfork(NULL, NULL, pl_atfork_child);
    atomic_store(&pl_on, 1);
}

int plite_cuda_seen(int *dev) {
    if (dev) *dev = atomic_load(&pl_first_dev);
    return atomic_load(&pl_cuda_seen);
}

/* 1 when the calls are recorded; starts lite mode at the first interposed call. The end's
 * calibration records whether the capture range is open or not. */
static int pl_device(void);
static inline int pl_eager_on(void);
static inline int pl_active(void) {
    if (__builtin_expect(atomic_load_explicit(&pl_on, memory_order_relaxed), 1)) {
        if (atomic_load_explicit(&pl_gate, memory_order_relaxed) || pl_t.calib) return 1;
        /* outside a capture range: not recorded, but the program's CUDA is seen (device facts,
         * the end's static-runtime check) */
        if (__builtin_expect(!atomic_load_explicit(&pl_cuda_seen, memory_order_relaxed), 0)) pl_device();
        return 0;
    }
    if (!plite_enabled()) return 0;
    pinject_lite_begin();
    return atomic_load(&pl_on) && atomic_load(&pl_gate);
}

int plite_range_mode(void) { return pl_range_mode; }

int plite_range_open_since(int64_t start_ns) {
    return atomic_load_explicit(&pl_gate, memory_order_relaxed) && start_ns >= atomic_load(&pl_gate_open_ns);
}

/* cudaProfilerStart/Stop: the capture range's edges (passed on to the runtime either way, for
 * another profiler). Nested starts count once; a stop without a start changes nothing. */
static void pl_gate_set(int open) {
    if (!pl_range_mode) return;
    int64_t now = pinject_now_ns();
    if (open) {
        if (atomic_load(&pl_gate)) return;
        atomic_store(&pl_gate_open_ns, now);
        atomic_store(&pl_gate, 1);
        atomic_fetch_add(&pl_n_range_opens, 1);
    } else if (atomic_exchange(&pl_gate, 0)) {
        atomic_fetch_add(&pl_range_ns, now - atomic_load(&pl_gate_open_ns));
    }
}

static void pl_resolve_helpers(void);

static int pl_device(void) {
    int d = 0;
    if (!pl_rt.get_device || pl_rt.get_device(&d) != PL_SUCCESS) d = 0;
    if (!atomic_load_explicit(&pl_cuda_seen, memory_order_relaxed)) {
        pl_resolve_helpers();   /* again: lite mode may have started (NVTX) before libcudart was loaded */
        if (pl_rt.get_device && pl_rt.get_device(&d) != PL_SUCCESS) d = 0;
        atomic_store(&pl_first_dev, d);
        atomic_store(&pl_cuda_seen, 1);
        if (d >= 0 && d < PL_MAX_DEV) { atomic_store(&pl_pool_want[d], 1); if (pl_wake) pl_wake(); }
    }
    return d;
}

/* cudaStreamGetId of the stream, cached per thread for the last stream seen (a stream freed
 * and another made at the same address keeps the old id: PyTorch pools its streams). */
static uint64_t pl_stream_id(void *s) {
    if (pl_t.stream_ok && pl_t.stream == s) return pl_t.stream_id;
    unsigned long long id = 0;
    if (!pl_rt.stream_id || pl_rt.stream_id(s, &id) != PL_SUCCESS) {
        if (pl_rt.last_error) pl_rt.last_error();   /* ours, not the program's */
        return 0;
    }
    pl_t.stream = s;
    pl_t.stream_id = id;
    pl_t.stream_ok = 1;
    return id;
}

/* The id when it is the cached stream's, else 0 (a capturing stream is not asked). */
static uint64_t pl_stream_cached(void *s) { return pl_t.stream_ok && pl_t.stream == s ? pl_t.stream_id : 0; }

static void pl_where(pl_rec *r) {
    pinject_tls *t = pinject_thread();
    r->tid = t->tid;
    if (t->nvtx.depth > 0) {
        r->inner = t->nvtx.f[t->nvtx.depth - 1].seq;
        r->phase = t->nvtx.f[t->nvtx.depth - 1].phase_seq;
    }
}

static int pl_pool_take(int dev, void **ev) {
    if (dev < 0 || dev >= PL_MAX_DEV) return 0;
    int ok = 0, want = 0;
    pthread_mutex_lock(&pl_pmu);
    pl_pool *p = &pl_pools[dev];
    if (p->n >= 2) { ev[0] = p->ev[--p->n]; ev[1] = p->ev[--p->n]; ok = 1; }
    want = p->n < PL_POOL_LOW && p->made < PL_POOL_MAX;
    pthread_mutex_unlock(&pl_pmu);
    if (want && !atomic_exchange(&pl_pool_want[dev], 1) && pl_wake) pl_wake();
    return ok;
}

static void pl_pool_give(int dev, void **ev, int n) {
    if (dev < 0 || dev >= PL_MAX_DEV) return;
    pthread_mutex_lock(&pl_pmu);
    pl_pool *p = &pl_pools[dev];
    for (int i = 0; i < n; i++) if (ev[i] && p->n < PL_POOL_MAX) p->ev[p->n++] = ev[i];
    pthread_mutex_unlock(&pl_pmu);
}

/* Queues a copy of r; 0 when the queue was full (counted). */
static int pl_push(pl_rec *r) {
    int ok = 1;
    pthread_mutex_lock(&pl_qmu);
    r->corr = ++pl_corr;
    if (pl_t.calib) pl_calib_scratch = *r;
    else if (pl_qn < PL_Q_CAP) pl_q[pl_qn++] = *r;
    else ok = 0;
    pthread_mutex_unlock(&pl_qmu);
    if (!ok) atomic_fetch_add_explicit(&pl_n_dropped, 1, memory_order_relaxed);
    return ok;
}

/* ---------- the interposed calls (program threads) ---------- */

/* 1 when the stream is capturing a graph: then nothing but cudaStreamIsCapturing is asked
 * of the runtime about it (another call could be refused and end the program's capture). */
static int pl_capturing(void *stream) {
    int status = 0;
    if (!pl_rt.is_capturing || pl_rt.is_capturing(stream, &status) != PL_SUCCESS) {
        if (pl_rt.last_error) pl_rt.last_error();
        return 1;   /* not known: treated as capturing (no further call) */
    }
    return status != 0;
}

static pl_err pl_graph_launch(void *exec, void *stream, int api) {
    pl_graph_fn real = (pl_graph_fn)PL_REAL(pl_rt.fn[api], pl_api[api].name);
    if (!real) return PL_UNKNOWN;
    if (!pl_active()) return real(exec, stream);
    pl_rec r = { .kind = PL_REC_GRAPH, .api = (uint8_t)api, .blocking = -1 };
    r.t0_ns = pinject_now_ns();
    pl_t.graph_launches++;
    int dev = pl_device();
    r.dev = (int8_t)dev;
    void *ev[2] = { NULL, NULL };
    int capturing = pl_capturing(stream);
    r.stream_id = capturing ? pl_stream_cached(stream) : pl_stream_id(stream);
    if (capturing)
        r.untimed = PL_UNTIMED_CAPTURING;
    else if (!pl_rt.ev_record || !pl_pool_take(dev, ev))
        r.untimed = PL_UNTIMED_NO_EVENT;
    else if (pl_rt.ev_record(ev[0], stream) != PL_SUCCESS) {
        pl_rt.last_error();            /* our failed record is not the program's error */
        pl_pool_give(dev, ev, 2);
        ev[0] = ev[1] = NULL;
        r.untimed = PL_UNTIMED_NO_EVENT;
    }
    /* the node probe: the executable's instrumented clone instead, for its first replays */
    plprobe *probe = NULL;
    void *run = ev[0] && !pl_t.calib ? plprobe_take(exec, &probe) : NULL;
    pl_err rc = real(run ? run : exec, stream);
    if (probe && rc != PL_SUCCESS) {   /* the clone did not launch: the program's own executable */
        pl_rt.last_error();
        plprobe_untake(probe);
        probe = NULL;
        rc = real(exec, stream);
    }
    if (ev[0] && (rc != PL_SUCCESS || pl_rt.ev_record(ev[1], stream) != PL_SUCCESS)) {
        if (rc == PL_SUCCESS) pl_rt.last_error();
        pl_pool_give(dev, ev, 2);
        ev[0] = ev[1] = NULL;
        r.untimed = rc != PL_SUCCESS ? PL_UNTIMED_FAILED : PL_UNTIMED_NO_EVENT;
        if (probe) plprobe_untake(probe);
        probe = NULL;
    } else if (rc != PL_SUCCESS && !r.untimed) r.untimed = PL_UNTIMED_FAILED;
    if (probe) r.untimed = PL_UNTIMED_PROBE;
    r.probe = probe;
    r.t1_ns = pinject_now_ns();
    r.rc = rc;
    r.exec = exec;
    r.ev[0] = ev[0];
    r.ev[1] = ev[1];
    pl_where(&r);
    if ((!pl_push(&r) || pl_t.calib) && ev[0]) {
        pl_pool_give(dev, ev, 2);
        if (probe) plprobe_untake(probe);   /* nobody will read it */
    }
    return rc;
}

static void pl_call_done(pl_rec *r, pl_err rc) {
    r->t1_ns = pinject_now_ns();
    r->rc = rc;
    pl_where(r);
    pl_push(r);
}

static pl_err pl_memcpy(void *dst, const void *src, size_t n, int kind, void *stream, int api) {
    void *fn = PL_REAL(pl_rt.fn[api], pl_api[api].name);
    int async = api == PL_MEMCPY_ASYNC || api == PL_MEMCPY_ASYNC_PTSZ;
    if (!fn) return PL_UNKNOWN;
    if (!pl_active())
        return async ? ((pl_memcpy_async_fn)fn)(dst, src, n, kind, stream) : ((pl_memcpy_fn)fn)(dst, src, n, kind);
    pl_rec r = { .kind = PL_REC_CALL, .api = (uint8_t)api, .bytes = n };
    r.copy_kind = (uint8_t)(kind >= 0 && kind <= PL_DEFAULT ? kind : PL_DEFAULT);
    /* the eager probe: an async device-to-device copy is timed on its stream; any other copy
     * may wait for the GPU (pageable memory, staging), so a held stream is released first */
    int ek = -1;
    if (pl_eager_n && !pl_t.calib) {
        if (async && kind == PL_DTOD) ek = pl_eager_on() ? pleager_before_copy(stream, api == PL_MEMCPY_ASYNC_PTSZ, n, kind) : -1;
        else pleager_blocking();
    }
    r.t0_ns = pinject_now_ns();
    pl_err rc = async ? ((pl_memcpy_async_fn)fn)(dst, src, n, kind, stream) : ((pl_memcpy_fn)fn)(dst, src, n, kind);
    r.t1_ns = pinject_now_ns();
    if (ek >= 0) pleager_after(ek, rc);
    /* blocking: a synchronous copy waits for the GPU unless device to device; an async one
     * when it copies into pageable host memory (CUDA Runtime API, "API synchronization
     * behavior"), known from one cudaPointerGetAttributes of the destination, made only for
     * device-to-host and default-kind async copies and after the call (not in its time) */
    int capturing = async && pl_capturing(stream);   /* recorded into a graph: runs later, nothing waits */
    if (!async) r.blocking = kind != PL_DTOD;
    else if (capturing) r.blocking = 0;
    else if (kind == PL_DTOH || kind == PL_DEFAULT) {
        pl_ptr_attr a;
        memset(&a, 0, sizeof a);
        if (pl_rt.ptr_attr && pl_rt.ptr_attr(&a, dst) == PL_SUCCESS) r.blocking = a.type == PL_MEM_UNREGISTERED;
        else { r.blocking = -1; if (pl_rt.last_error) pl_rt.last_error(); }
    } else r.blocking = kind == PL_HTOH ? -1 : 0;
    r.dev = (int8_t)pl_device();
    r.stream_id = !async ? 0 : capturing ? pl_stream_cached(stream) : pl_stream_id(stream);
    atomic_fetch_add_explicit(&pl_n_memcpy, 1, memory_order_relaxed);
    if (r.blocking == 1) atomic_fetch_add_explicit(&pl_n_blocking, 1, memory_order_relaxed);
    r.rc = rc;
    pl_where(&r);
    pl_push(&r);
    return rc;
}

static pl_err pl_sync(void *arg, int api) {
    void *fn = PL_REAL(pl_rt.fn[api], pl_api[api].name);
    if (!fn) return PL_UNKNOWN;
    if (!pl_active()) return api == PL_DSYNC ? ((pl_v_fn)fn)() : ((pl_p1_fn)fn)(arg);
    pl_rec r = { .kind = PL_REC_CALL, .api = (uint8_t)api, .blocking = 1 };
    if (pl_eager_n && !pl_t.calib) pleager_blocking();   /* the eager probe's hold is released first */
    r.t0_ns = pinject_now_ns();
    pl_err rc = api == PL_DSYNC ? ((pl_v_fn)fn)() : ((pl_p1_fn)fn)(arg);
    if (api == PL_SSYNC || api == PL_SSYNC_PTSZ) r.stream_id = rc == PL_SUCCESS ? pl_stream_id(arg) : pl_stream_cached(arg);
    r.dev = (int8_t)pl_device();
    if (!pl_t.calib) {
        atomic_fetch_add_explicit(&pl_n_sync, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&pl_n_blocking, 1, memory_order_relaxed);
    }
    pl_call_done(&r, rc);
    return rc;
}

#define PL_EXPORT __attribute__((visibility("default")))
PL_EXPORT pl_err cudaGraphLaunch(void *exec, void *stream) { return pl_graph_launch(exec, stream, PL_GRAPH); }
PL_EXPORT pl_err cudaGraphLaunch_ptsz(void *exec, void *stream) { return pl_graph_launch(exec, stream, PL_GRAPH_PTSZ); }
PL_EXPORT pl_err cudaMemcpy(void *d, const void *s, size_t n, int k) { return pl_memcpy(d, s, n, k, NULL, PL_MEMCPY); }
PL_EXPORT pl_err cudaMemcpy_ptds(void *d, const void *s, size_t n, int k) { return pl_memcpy(d, s, n, k, NULL, PL_MEMCPY_PTDS); }
PL_EXPORT pl_err cudaMemcpyAsync(void *d, const void *s, size_t n, int k, void *st) { return pl_memcpy(d, s, n, k, st, PL_MEMCPY_ASYNC); }
PL_EXPORT pl_err cudaMemcpyAsync_ptsz(void *d, const void *s, size_t n, int k, void *st) {
    return pl_memcpy(d, s, n, k, st, PL_MEMCPY_ASYNC_PTSZ);
}
PL_EXPORT pl_err cudaStreamSynchronize(void *s) { return pl_sync(s, PL_SSYNC); }
PL_EXPORT pl_err cudaStreamSynchronize_ptsz(void *s) { return pl_sync(s, PL_SSYNC_PTSZ); }
PL_EXPORT pl_err cudaDeviceSynchronize(void) { return pl_sync(NULL, PL_DSYNC); }
PL_EXPORT pl_err cudaEventSynchronize(void *e) { return pl_sync(e, PL_ESYNC); }
PL_EXPORT pl_err cudaProfilerStart(void) {
    pl_v_fn real = (pl_v_fn)PL_REAL(pl_rt.prof_start, "cudaProfilerStart");
    if (plite_enabled()) { (void)pl_active(); pl_gate_set(1); }
    return real ? real() : PL_SUCCESS;
}
PL_EXPORT pl_err cudaProfilerStop(void) {
    pl_v_fn real = (pl_v_fn)PL_REAL(pl_rt.prof_stop, "cudaProfilerStop");
    if (pl_eager_n) pleager_stop_thread();   /* an instance probed on this thread ends here */
    pl_gate_set(0);
    return real ? real() : PL_SUCCESS;
}

/* Calls that may wait for the whole device, or that a held legacy stream could break: the
 * eager probe's hold is released first (PyTorch's torch.cuda.graph() empties the allocator's
 * cache, cudaFree, just before cudaStreamBeginCapture). Not recorded. */
PL_EXPORT pl_err cudaFree(void *p) {
    static pl_err (*real)(void *);
    if (!PL_REAL(real, "cudaFree")) return PL_UNKNOWN;
    if (pl_eager_n) pleager_blocking();
    return real(p);
}
PL_EXPORT pl_err cudaStreamBeginCapture(void *s, int mode) {
    static pl_err (*real)(void *, int);
    if (!PL_REAL(real, "cudaStreamBeginCapture")) return PL_UNKNOWN;
    if (pl_eager_n) pleager_blocking();
    return real(s, mode);
}

/* An executable destroyed: its address may come back as another executable (a new id). */
PL_EXPORT pl_err cudaGraphExecDestroy(void *exec) {
    pl_err (*real)(void *) = PL_REAL(pl_rt.exec_destroy, "cudaGraphExecDestroy");
    if (!real) return PL_UNKNOWN;
    if (atomic_load_explicit(&pl_on, memory_order_relaxed)) {
        pl_rec r = { .kind = PL_REC_EXEC_GONE, .exec = exec };
        pl_push(&r);
    }
    if (plite_enabled()) plprobe_exec_destroyed(exec);
    return real(exec);
}

/* ---------- the node probe's view of instantiation (plprobe.h) ---------- */

static pthread_once_t pl_probe_once = PTHREAD_ONCE_INIT;
static void pl_probe_init(void) {
    const char *e = getenv("SPECPROF_PROBE_REPLAYS");
    plprobe_init(pl_sym, e ? atoi(e) : 0);
}
/* After the program's instantiation succeeded (lite mode, probe on): its clone is built. */
static void pl_instantiated(pl_err rc, void **exec, void *graph, unsigned long long flags) {
    if (rc != PL_SUCCESS || !exec || !plite_enabled()) return;
    pthread_once(&pl_probe_once, pl_probe_init);
    if (plprobe_replays() > 0) plprobe_instantiated(*exec, graph, flags);
}
typedef pl_err (*pl_inst_fn)(void **, void *, unsigned long long);
static struct { pl_inst_fn inst, inst_flags; pl_err (*inst_params)(void **, void *, void *); } pl_inst;
static pl_err pl_instantiate_by(pl_inst_fn *slot, const char *name, void **exec, void *graph, unsigned long long flags) {
    pl_inst_fn real = PL_REAL(*slot, name);
    if (!real) return PL_UNKNOWN;
    pl_err rc = real(exec, graph, flags);
    pl_instantiated(rc, exec, graph, flags);
    return rc;
}
PL_EXPORT pl_err cudaGraphInstantiate(void **exec, void *graph, unsigned long long flags) {
    return pl_instantiate_by(&pl_inst.inst, "cudaGraphInstantiate", exec, graph, flags);
}
PL_EXPORT pl_err cudaGraphInstantiateWithFlags(void **exec, void *graph, unsigned long long flags) {
    return pl_instantiate_by(&pl_inst.inst_flags, "cudaGraphInstantiateWithFlags", exec, graph, flags);
}
/* cudaGraphInstantiateParams starts with its flags (driver_types.h) */
PL_EXPORT pl_err cudaGraphInstantiateWithParams(void **exec, void *graph, void *params) {
    pl_err (*real)(void **, void *, void *) = PL_REAL(pl_inst.inst_params, "cudaGraphInstantiateWithParams");
    if (!real) return PL_UNKNOWN;
    pl_err rc = real(exec, graph, params);
    pl_instantiated(rc, exec, graph, params ? *(unsigned long long *)params : 0);
    return rc;
}
/* Calls that change an executable's nodes: its clone would run the old ones, so it is never
 * launched again. (The driver API's cuGraphExec* calls are not seen: docs/profiler.md.) */
#define PL_EXEC_CHANGE3(name, T2, T3) \
    PL_EXPORT pl_err name(void *exec, T2 a, T3 b) { \
        static pl_err (*real)(void *, T2, T3); \
        if (!PL_REAL(real, #name)) return PL_UNKNOWN; \
        if (plite_enabled()) plprobe_exec_changed(exec); \
        return real(exec, a, b); \
    }
PL_EXEC_CHANGE3(cudaGraphExecUpdate, void *, void *)
PL_EXEC_CHANGE3(cudaGraphExecKernelNodeSetParams, void *, const void *)
PL_EXEC_CHANGE3(cudaGraphExecNodeSetParams, void *, void *)
PL_EXEC_CHANGE3(cudaGraphExecMemcpyNodeSetParams, void *, const void *)
PL_EXEC_CHANGE3(cudaGraphExecMemsetNodeSetParams, void *, const void *)
PL_EXEC_CHANGE3(cudaGraphExecHostNodeSetParams, void *, const void *)
PL_EXEC_CHANGE3(cudaGraphExecChildGraphNodeSetParams, void *, void *)
PL_EXEC_CHANGE3(cudaGraphExecEventRecordNodeSetEvent, void *, void *)
PL_EXEC_CHANGE3(cudaGraphExecEventWaitNodeSetEvent, void *, void *)
PL_EXEC_CHANGE3(cudaGraphExecExternalSemaphoresSignalNodeSetParams, void *, const void *)
PL_EXEC_CHANGE3(cudaGraphExecExternalSemaphoresWaitNodeSetParams, void *, const void *)
PL_EXEC_CHANGE3(cudaGraphNodeSetEnabled, void *, unsigned)
PL_EXPORT pl_err cudaGraphExecMemcpyNodeSetParams1D(void *exec, void *node, void *dst, const void *src, size_t n, int kind) {
    static pl_err (*real)(void *, void *, void *, const void *, size_t, int);
    if (!PL_REAL(real, "cudaGraphExecMemcpyNodeSetParams1D")) return PL_UNKNOWN;
    if (plite_enabled()) plprobe_exec_changed(exec);
    return real(exec, node, dst, src, n, kind);
}
PL_EXPORT pl_err cudaGraphExecMemcpyNodeSetParamsToSymbol(void *exec, void *node, const void *sym, const void *src,
                                                          size_t n, size_t off, int kind) {
    static pl_err (*real)(void *, void *, const void *, const void *, size_t, size_t, int);
    if (!PL_REAL(real, "cudaGraphExecMemcpyNodeSetParamsToSymbol")) return PL_UNKNOWN;
    if (plite_enabled()) plprobe_exec_changed(exec);
    return real(exec, node, sym, src, n, off, kind);
}
PL_EXPORT pl_err cudaGraphExecMemcpyNodeSetParamsFromSymbol(void *exec, void *node, void *dst, const void *sym,
                                                            size_t n, size_t off, int kind) {
    static pl_err (*real)(void *, void *, void *, const void *, size_t, size_t, int);
    if (!PL_REAL(real, "cudaGraphExecMemcpyNodeSetParamsFromSymbol")) return PL_UNKNOWN;
    if (plite_enabled()) plprobe_exec_changed(exec);
    return real(exec, node, dst, sym, n, off, kind);
}

/* ---------- the eager probe's view of launches, copies and syncs (pleager.h) ---------- */

static pthread_once_t pl_eager_once = PTHREAD_ONCE_INIT;
static void pl_eager_init(void) { pleager_init(pl_sym, pl_eager_n, pl_nvtx); }
/* 1 when the eager probe may act on this call: on, recording, not the calibration's thread */
static inline int pl_eager_on(void) {
    if (__builtin_expect(!pl_eager_n, 1) || pl_t.calib || !pl_active()) return 0;
    pthread_once(&pl_eager_once, pl_eager_init);
    return pleager_instances() > 0;
}
static inline int pl_eager_launch(const void *f, pl_dim3 g, pl_dim3 b, size_t sm, void *s, int per_thread) {
    if (!pl_eager_on()) return -1;
    unsigned gg[3] = { g.x, g.y, g.z }, bb[3] = { b.x, b.y, b.z };
    return pleager_before(s, per_thread, f, gg, bb, sm);
}
/* cudaLaunchConfig_t (cuda_runtime_api.h): grid, block, dynamic shared memory, stream, attributes */
typedef struct { pl_dim3 grid, block; size_t smem; void *stream; void *attrs; unsigned nattrs; } pl_launch_cfg;
static inline int pl_eager_launch_ex(const void *cfg, const void *f, int per_thread) {
    if (!cfg || !pl_eager_on()) return -1;
    const pl_launch_cfg *c = cfg;
    return pl_eager_launch(f, c->grid, c->block, c->smem, c->stream, per_thread);
}
void plite_popped(void) { if (pl_eager_n) pleager_popped(); }

/* Kernel launches: counted per thread (for the NVTX ranges' launches) and in total. */
static inline void pl_count_launch(void) {
    if (!atomic_load_explicit(&pl_on, memory_order_relaxed)) {
        if (!plite_enabled()) return;
        pinject_lite_begin();
    }
    pl_t.launches++;
    atomic_fetch_add_explicit(&pl_n_kernels, 1, memory_order_relaxed);
    if (__builtin_expect(!atomic_load_explicit(&pl_cuda_seen, memory_order_relaxed), 0)) pl_device();   /* the pool fills now */
}
PL_EXPORT pl_err cudaLaunchKernel(const void *f, pl_dim3 g, pl_dim3 b, void **a, size_t sm, void *s) {
    pl_launch_fn real = PL_REAL(pl_rt.launch, "cudaLaunchKernel");
    if (!real) return PL_UNKNOWN;
    pl_count_launch();
    int k = pl_eager_launch(f, g, b, sm, s, 0);
    pl_err rc = real(f, g, b, a, sm, s);
    if (k >= 0) pleager_after(k, rc);
    return rc;
}
PL_EXPORT pl_err cudaLaunchKernel_ptsz(const void *f, pl_dim3 g, pl_dim3 b, void **a, size_t sm, void *s) {
    pl_launch_fn real = PL_REAL(pl_rt.launch_ptsz, "cudaLaunchKernel_ptsz");
    if (!real) return PL_UNKNOWN;
    pl_count_launch();
    int k = pl_eager_launch(f, g, b, sm, s, 1);
    pl_err rc = real(f, g, b, a, sm, s);
    if (k >= 0) pleager_after(k, rc);
    return rc;
}
/* what nvcc 13's <<<>>> stubs call (crt/device_functions.h): a cudaKernel_t handle, else as cudaLaunchKernel */
PL_EXPORT pl_err __cudaLaunchKernel(const void *k, pl_dim3 g, pl_dim3 b, void **a, size_t sm, void *s) {
    pl_launch_fn real = PL_REAL(pl_rt.launch_k, "__cudaLaunchKernel");
    if (!real) return PL_UNKNOWN;
    pl_count_launch();
    int e = pl_eager_launch(k, g, b, sm, s, 0);
    pl_err rc = real(k, g, b, a, sm, s);
    if (e >= 0) pleager_after(e, rc);
    return rc;
}
PL_EXPORT pl_err __cudaLaunchKernel_ptsz(const void *k, pl_dim3 g, pl_dim3 b, void **a, size_t sm, void *s) {
    pl_launch_fn real = PL_REAL(pl_rt.launch_k_ptsz, "__cudaLaunchKernel_ptsz");
    if (!real) return PL_UNKNOWN;
    pl_count_launch();
    int e = pl_eager_launch(k, g, b, sm, s, 1);
    pl_err rc = real(k, g, b, a, sm, s);
    if (e >= 0) pleager_after(e, rc);
    return rc;
}
PL_EXPORT pl_err cudaLaunchCooperativeKernel(const void *f, pl_dim3 g, pl_dim3 b, void **a, size_t sm, void *s) {
    pl_launch_fn real = PL_REAL(pl_rt.launch_coop, "cudaLaunchCooperativeKernel");
    if (!real) return PL_UNKNOWN;
    pl_count_launch();
    int k = pl_eager_launch(f, g, b, sm, s, 0);
    pl_err rc = real(f, g, b, a, sm, s);
    if (k >= 0) pleager_after(k, rc);
    return rc;
}
PL_EXPORT pl_err cudaLaunchKernelExC(const void *cfg, const void *f, void **a) {
    pl_launch_ex_fn real = PL_REAL(pl_rt.launch_ex, "cudaLaunchKernelExC");
    if (!real) return PL_UNKNOWN;
    pl_count_launch();
    int k = pl_eager_launch_ex(cfg, f, 0);
    pl_err rc = real(cfg, f, a);
    if (k >= 0) pleager_after(k, rc);
    return rc;
}
PL_EXPORT pl_err cudaLaunchKernelExC_ptsz(const void *cfg, const void *f, void **a) {
    pl_launch_ex_fn real = PL_REAL(pl_rt.launch_ex_ptsz, "cudaLaunchKernelExC_ptsz");
    if (!real) return PL_UNKNOWN;
    pl_count_launch();
    int k = pl_eager_launch_ex(cfg, f, 1);
    pl_err rc = real(cfg, f, a);
    if (k >= 0) pleager_after(k, rc);
    return rc;
}

void plite_thread_counts(uint64_t c[2]) {
    c[0] = pl_t.launches;
    c[1] = pl_t.graph_launches;
}

/* ---------- writer thread ---------- */

static int64_t pl_mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* This thread's CUDA calls never join or invalidate a program's stream capture: relaxed
 * capture mode (the NCCL watchdog's fix in PyTorch for the same hazard). */
static int pl_writer_cuda(int dev) {
    if (!pl_rt.set_device || !pl_rt.ev_create || !pl_rt.ev_query || !pl_rt.ev_elapsed) return -1;
    if (!pl_w.relaxed && pl_rt.capture_mode) {
        int mode = 2;   /* cudaStreamCaptureModeRelaxed */
        pl_rt.capture_mode(&mode);
        pl_w.relaxed = 1;
    }
    return pl_rt.set_device(dev) == PL_SUCCESS ? 0 : -1;
}

static void pl_pool_fill(int dev) {
    if (pl_writer_cuda(dev)) return;
    for (int i = 0; i < PL_POOL_FILL; i++) {
        pthread_mutex_lock(&pl_pmu);
        int room = pl_pools[dev].made < PL_POOL_MAX;
        pthread_mutex_unlock(&pl_pmu);
        if (!room) break;
        void *e = NULL;
        if (pl_rt.ev_create(&e) != PL_SUCCESS || !e) { pl_rt.last_error(); break; }   /* default flags: timing on */
        pthread_mutex_lock(&pl_pmu);
        pl_pools[dev].made++;
        pl_pools[dev].ev[pl_pools[dev].n++] = e;
        pthread_mutex_unlock(&pl_pmu);
    }
}

/* An anchor on device dev: an event on our stream, the host clock read before its record
 * and after its completion; the narrowest of PL_ANCHOR_TRIES brackets is kept (a stream
 * that shares a hardware queue with a busy program stream waits: a wide bracket). */
static int pl_anchor_take(int dev, const ptrace_ctx *ctx) {
    (void)ctx;
    pl_anchor *a = &pl_w.anchor[dev];
    if (pl_writer_cuda(dev)) return -1;
    if (!a->ready) {
        int least = 0, greatest = 0;
        if (pl_rt.prio_range) pl_rt.prio_range(&least, &greatest);
        if (!pl_rt.stream_create_prio || pl_rt.stream_create_prio(&a->stream, 1 /* cudaStreamNonBlocking */, greatest))
            return -1;
        for (int i = 0; i <= PL_ANCHOR_TRIES; i++)
            if (pl_rt.ev_create(&a->ev[i]) != PL_SUCCESS) return -1;
        a->ready = 1;
        a->scale = 1.0;
    }
    int best = -1;
    int64_t best_w = INT64_MAX, best_mid = 0;
    for (int k = 1; k <= PL_ANCHOR_TRIES; k++) {
        int s = (a->cur + k) % (PL_ANCHOR_TRIES + 1);
        int64_t h0 = pinject_now_ns();
        if (pl_rt.ev_record(a->ev[s], a->stream) != PL_SUCCESS) return -1;
        pl_err q;
        int64_t spin_until = pl_mono_ns() + PL_ANCHOR_SPIN_NS;
        while ((q = pl_rt.ev_query(a->ev[s])) == PL_NOT_READY && pl_mono_ns() < spin_until) {}
        int64_t h1 = pinject_now_ns();
        if (q != PL_SUCCESS) continue;
        if (h1 - h0 < best_w) { best_w = h1 - h0; best = s; best_mid = h0 + (h1 - h0) / 2; }
    }
    if (best < 0) return -1;
    if (a->valid) {   /* the GPU clock's rate against the host clock since the last anchor */
        float ms = 0;
        if (pl_rt.ev_elapsed(&ms, a->ev[a->cur], a->ev[best]) == PL_SUCCESS && ms > 100.0f) {
            double host = (double)(best_mid - a->host_ns), gpu = (double)ms * 1e6;
            double ppm = (host / gpu - 1.0) * 1e6;
            /* the brackets' widths make this uncertain by (w1+w2)/interval: only a long interval counts */
            if (fabs(ppm) < 1000) {
                if (fabs(ppm) > pl_w.drift_max_ppm) pl_w.drift_max_ppm = fabs(ppm);
                a->scale = host / gpu;
            }
        }
    }
    a->cur = best;
    a->host_ns = best_mid;
    a->half_ns = best_w / 2;
    a->valid = 1;
    pl_w.anchors++;
    if (a->half_ns / 1e3 > pl_w.anchor_err_max_us) pl_w.anchor_err_max_us = a->half_ns / 1e3;
    return 0;
}

static uint32_t pl_exec_id(void *exec, int forget) {
    uint64_t h = (uint64_t)(uintptr_t)exec * 0x9E3779B97F4A7C15ull;
    unsigned i = (unsigned)(h >> 51) & (PL_EXEC_SLOTS - 1);
    for (int probe = 0; probe < PL_EXEC_SLOTS; probe++, i = (i + 1) & (PL_EXEC_SLOTS - 1)) {
        if (pl_w.exec_key[i] == exec && pl_w.exec_val[i]) {
            uint32_t v = pl_w.exec_val[i];
            if (forget) pl_w.exec_val[i] = 0;   /* a tombstone: the key stays, the id goes */
            return v;
        }
        if (!pl_w.exec_key[i]) {
            if (forget) return 0;
            pl_w.exec_key[i] = exec;
            pl_w.exec_val[i] = ++pl_w.next_exec_id;
            return pl_w.exec_val[i];
        }
        if (pl_w.exec_key[i] == exec && !pl_w.exec_val[i] && !forget) {
            pl_w.exec_val[i] = ++pl_w.next_exec_id;
            return pl_w.exec_val[i];
        }
    }
    return 0;   /* table full: id 0 (unknown) */
}

static int pl_emit_api(const pl_rec *r, uint32_t exec_id, const ptrace_ctx *ctx, plite_emit_fn emit, void *user) {
    static char line[1024];
    ptrace_api a;
    memset(&a, 0, sizeof a);
    a.start_ns = r->t0_ns;
    a.end_ns = r->t1_ns;
    a.name = pl_api[r->api].name;
    a.corr = r->corr;
    a.cbid = pl_api[r->api].cbid;
    a.thread = r->tid;
    a.graph_exec_id = exec_id;
    a.has_lite = 1;
    a.stream = r->stream_id;
    a.blocking = r->blocking;
    if (r->api >= PL_MEMCPY && r->api <= PL_MEMCPY_ASYNC_PTSZ) {
        a.bytes = (int64_t)r->bytes;
        a.copy_kind = pl_copy_kind[r->copy_kind <= PL_DEFAULT ? r->copy_kind : PL_DEFAULT];
    }
    if (r->kind == PL_REC_GRAPH) a.untimed = pl_untimed[r->untimed < PL_N_UNTIMED ? r->untimed : 0];
    int n = ptrace_write_api(line, sizeof line, ctx, &a);
    if (n > 0) { emit(user, line, n); return 1; }
    return 0;
}

/* A completed pending launch, on the host clock through the device's anchor (taken after
 * the launch's end event was seen complete, so the anchor is later on the GPU's clock). */
/* A probed replay (the node probe's clone ran): its node table once, then a graph_probe
 * event with each node's end; the probe is released. */
static int pl_emit_probe(pl_pend *p, const ptrace_graphlaunch *g, const ptrace_ctx *ctx, plite_emit_fn emit, void *user) {
    static float *end_us;
    static int end_cap;
    static char *line;
    static size_t line_cap;
    plprobe *pr = p->r.probe;
    int n = plprobe_nodes(pr);
    size_t cap = 512 + PNVTX_NAME_MAX * 2 + (size_t)n * 12;
    if (n > end_cap) {
        float *x = realloc(end_us, (size_t)n * sizeof *x);
        if (!x) { plprobe_untake(pr); pl_w.lost++; return 0; }
        end_us = x;
        end_cap = n;
    }
    if (cap > line_cap) {
        char *l2 = realloc(line, cap);
        if (!l2) { plprobe_untake(pr); pl_w.lost++; return 0; }
        line = l2;
        line_cap = cap;
    }
    plprobe_emit_table(pr, p->exec_id, ctx->pid, emit, user);   /* metadata: not counted as records */
    if (plprobe_read(pr, end_us, end_cap) != n) { pl_w.lost++; return 0; }
    int k = ptrace_write_graphprobe(line, cap, ctx, g, end_us, n);
    if (k <= 0) return 0;
    emit(user, line, k);
    pl_w.probed++;
    return 1;
}

/* The host clock of completed event ev on device dev through the device's anchor (taken
 * after ev completed, so later on the GPU's clock), with the bound on its error: the anchor's
 * half-width, the event resolution, float rounding of the interval (2^-24 relative) and the
 * clock rate's uncertainty over it (the drift is measured, not known between anchors: taken
 * as at most the largest seen). -1 when the interval cannot be read. */
static int pl_host_of_event(int dev, void *ev, int64_t *ns, double *err_us) {
    pl_anchor *a = &pl_w.anchor[dev];
    float to_anchor_ms = 0;
    if (!a->valid || pl_rt.ev_elapsed(&to_anchor_ms, ev, a->ev[a->cur]) != PL_SUCCESS) {
        pl_rt.last_error();
        return -1;
    }
    double back_ns = (double)to_anchor_ms * 1e6 * a->scale;
    *ns = a->host_ns - (int64_t)llround(back_ns);
    double ppm = a->scale != 1.0 ? pl_w.drift_max_ppm : PL_DRIFT_ASSUMED_PPM;
    double err_ns = (double)a->half_ns + PL_EVENT_RES_NS + fabs(back_ns) * (6e-8 + ppm * 1e-6);
    *err_us = ceil(err_ns) / 1e3;
    if (*err_us > pl_w.err_max_us) pl_w.err_max_us = *err_us;
    return 0;
}

static int pl_emit_graph(pl_pend *p, const ptrace_ctx *ctx, plite_emit_fn emit, void *user) {
    static char line[1024];
    float span_ms = 0;
    ptrace_graphlaunch g;
    memset(&g, 0, sizeof g);
    if (pl_host_of_event(p->r.dev, p->r.ev[0], &g.start_ns, &g.err_us) ||
        pl_rt.ev_elapsed(&span_ms, p->r.ev[0], p->r.ev[1]) != PL_SUCCESS) {
        pl_rt.last_error();
        pl_w.lost++;
        if (p->r.probe) plprobe_untake(p->r.probe);
        return 0;
    }
    g.end_ns = g.start_ns + (int64_t)llround((double)span_ms * 1e6);
    g.corr = p->r.corr;
    g.dev = (uint32_t)p->r.dev;
    g.stream = (uint32_t)p->r.stream_id;
    g.graph_exec_id = p->exec_id;
    g.nvtx = p->nvtx;
    g.phase = p->phase;
    if (p->r.probe) return pl_emit_probe(p, &g, ctx, emit, user);
    int n = ptrace_write_graphlaunch(line, sizeof line, ctx, &g);
    if (n <= 0) return 0;
    emit(user, line, n);
    pl_w.timed++;
    return 1;
}

static int64_t pl_resolve(const ptrace_ctx *ctx, plite_emit_fn emit, void *user);

/* The eager probe: an old hold released (the watchdog); a closed instance whose events
 * completed written as an eager_probe event. */
static int64_t pl_eager_drain(const ptrace_ctx *ctx, plite_emit_fn emit, void *user, int final) {
    static char *line;
    static size_t line_cap;
    pleager_view v;
    if (!pl_eager_n) return 0;
    if (final) pleager_stop();   /* nothing held after the end: no watchdog would release it */
    for (int waited = 0;; waited += 5) {
        int busy = pleager_poll(final ? INT64_MAX : pinject_now_ns());
        int r = pleager_read(&v);
        if (r > 0) break;
        if (r < 0 || !final || !busy || waited >= PL_FINAL_WAIT_MS) return 0;
        struct timespec ts = { 0, 5000000 };
        nanosleep(&ts, NULL);
    }
    ptrace_eagerprobe *e = &v.p;
    size_t cap = 1024 + 4 * PNVTX_NAME_MAX + (size_t)e->n * 160;
    for (int i = 0; i < e->nnames; i++) cap += 2 * strlen(e->names[i]) + 8;
    if (cap > line_cap) {
        char *l2 = realloc(line, cap);
        if (!l2) { pleager_done(); pl_w.eager_lost++; return 0; }
        line = l2;
        line_cap = cap;
    }
    if (pl_writer_cuda(v.dev) || pl_anchor_take(v.dev, ctx) || pl_host_of_event(v.dev, v.first_event, &e->start_ns, &e->err_us)) {
        pleager_done();
        pl_w.eager_lost++;
        return 0;
    }
    e->end_ns = e->start_ns + (int64_t)llround(v.span_us * 1e3);
    int n = ptrace_write_eagerprobe(line, line_cap, ctx, e);
    pleager_done();
    if (n <= 0) { pl_w.eager_lost++; return 0; }
    emit(user, line, n);
    pl_w.eager_written++;
    return 1;
}

int64_t plite_drain(const ptrace_ctx *ctx, plite_emit_fn emit, void *user, int final) {
    int64_t lines = 0;
    if (!pl_q) return 0;
    pthread_mutex_lock(&pl_qmu);
    pl_rec *q = pl_q;
    size_t n = pl_qn;
    pl_q = pl_q_spare;
    pl_qn = 0;
    pthread_mutex_unlock(&pl_qmu);
    pl_q_spare = q;
    for (size_t i = 0; i < n; i++) {
        pl_rec *r = &q[i];
        if (r->kind == PL_REC_EXEC_GONE) { pl_exec_id(r->exec, 1); continue; }
        uint32_t exec_id = 0;
        if (r->kind == PL_REC_GRAPH) {
            exec_id = pl_exec_id(r->exec, 0);
            atomic_fetch_add_explicit(&pl_n_graph, 1, memory_order_relaxed);
            if (r->untimed == PL_UNTIMED_CAPTURING) atomic_fetch_add(&pl_n_capturing, 1);
            else if (r->untimed == PL_UNTIMED_FAILED) atomic_fetch_add(&pl_n_failed, 1);
            else if (r->untimed == PL_UNTIMED_NO_EVENT) atomic_fetch_add(&pl_n_no_event, 1);
        }
        lines += pl_emit_api(r, exec_id, ctx, emit, user);
        if (r->kind != PL_REC_GRAPH || !r->ev[0]) continue;
        if (pl_w.n_pend == PL_PENDING_MAX || r->dev < 0 || r->dev >= PL_MAX_DEV) {
            pl_w.lost++;
            pl_pool_give(r->dev, r->ev, 2);
            if (r->probe) plprobe_untake(r->probe);
            continue;
        }
        pl_pend *p = &pl_w.pend[pl_w.n_pend++];
        p->r = *r;
        p->exec_id = exec_id;
        p->done = 0;
        pnvtx_names(pl_nvtx, r->inner, r->phase, p->nvtx, sizeof p->nvtx, p->phase, sizeof p->phase);
    }
    /* event pools */
    for (int d = 0; d < PL_MAX_DEV && pl_pools; d++) {
        if (!atomic_load(&pl_pool_want[d])) continue;
        pl_pool_fill(d);
        atomic_store(&pl_pool_want[d], 0);
    }
    lines += pl_resolve(ctx, emit, user);
    /* the end: launches still running get up to PL_FINAL_WAIT_MS to complete */
    for (int waited = 0; final && pl_w.n_pend && waited < PL_FINAL_WAIT_MS; waited += 5) {
        struct timespec ts = { 0, 5000000 };
        nanosleep(&ts, NULL);
        lines += pl_resolve(ctx, emit, user);
    }
    if (final) { pl_w.pending += pl_w.n_pend; pl_w.n_pend = 0; }
    lines += pl_eager_drain(ctx, emit, user, final);
    return lines;
}

/* Writes the pending launches whose end event has completed: the completed ones first, then
 * one anchor per device that has some, then each on the host clock. */
static int64_t pl_resolve(const ptrace_ctx *ctx, plite_emit_fn emit, void *user) {
    int64_t lines = 0;
    if (!pl_w.n_pend) return 0;
    int need[PL_MAX_DEV] = { 0 };
    for (int i = 0; i < pl_w.n_pend; i++) {
        pl_pend *p = &pl_w.pend[i];
        if (pl_writer_cuda(p->r.dev)) continue;
        pl_err e = pl_rt.ev_query(p->r.ev[1]);
        if (e == PL_SUCCESS) { p->done = 1; need[p->r.dev] = 1; }
        else if (e != PL_NOT_READY) { pl_rt.last_error(); p->done = -1; }
    }
    for (int d = 0; d < PL_MAX_DEV; d++)
        if (need[d] && pl_anchor_take(d, ctx)) pl_w.anchor[d].valid = 0;
    int k = 0;
    for (int i = 0; i < pl_w.n_pend; i++) {
        pl_pend *p = &pl_w.pend[i];
        if (p->done == 0) { if (k != i) pl_w.pend[k] = *p; k++; continue; }
        if (p->done > 0) { pl_writer_cuda(p->r.dev); lines += pl_emit_graph(p, ctx, emit, user); }
        else { pl_w.lost++; if (p->r.probe) plprobe_untake(p->r.probe); }
        pl_pool_give(p->r.dev, p->r.ev, 2);
    }
    pl_w.n_pend = k;
    return lines;
}

static int pl_cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static double pl_median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, pl_cmp_d);
    return v[n / 2];
}

void plite_calibrate(ptrace_lite *l) {
    static double t[PL_CALIB_N];
    int dev = 0;
    l->calib_ok = 0;
    if (!plite_cuda_seen(&dev)) { snprintf(l->calib_why, sizeof l->calib_why, "no CUDA call went through the interposer"); return; }
    PL_REAL(pl_rt.graph_create, "cudaGraphCreate");
    PL_REAL(pl_rt.graph_add_empty, "cudaGraphAddEmptyNode");
    PL_REAL(pl_rt.graph_instantiate, "cudaGraphInstantiate");
    PL_REAL(pl_rt.graph_destroy, "cudaGraphDestroy");
    PL_REAL(pl_rt.exec_destroy, "cudaGraphExecDestroy");
    pl_graph_fn launch = (pl_graph_fn)PL_REAL(pl_rt.fn[PL_GRAPH], "cudaGraphLaunch");
    pl_p1_fn ssync = (pl_p1_fn)PL_REAL(pl_rt.fn[PL_SSYNC], "cudaStreamSynchronize");
    if (!pl_rt.graph_create || !pl_rt.graph_add_empty || !pl_rt.graph_instantiate || !launch || !ssync ||
        pl_anchor_take(dev, NULL)) {
        snprintf(l->calib_why, sizeof l->calib_why, "the runtime's graph entry points or a stream are not available");
        return;
    }
    void *s = pl_w.anchor[dev].stream, *graph = NULL, *node = NULL, *exec = NULL;
    if (pl_rt.graph_create(&graph, 0) || pl_rt.graph_add_empty(&node, graph, NULL, 0) ||
        pl_rt.graph_instantiate(&exec, graph, 0)) {
        pl_rt.last_error();
        snprintf(l->calib_why, sizeof l->calib_why, "building a 1-node graph failed");
        if (graph && pl_rt.graph_destroy) pl_rt.graph_destroy(graph);
        return;
    }
    pl_pool_fill(dev);
    pl_t.calib = 1;
    double real_us = 0, lite_us = 0, creal_us = 0, clite_us = 0;
    for (int conf = 0; conf < 4; conf++) {
        for (int i = 0; i < PL_CALIB_N; i++) {
            int64_t a = pl_mono_ns();
            switch (conf) {
            case 0: launch(exec, s); break;
            case 1: pl_graph_launch(exec, s, PL_GRAPH); break;
            case 2: ssync(s); break;
            default: pl_sync(s, PL_SSYNC); break;
            }
            t[i] = (double)(pl_mono_ns() - a) / 1e3;
            if (conf < 2 && i % 20 == 19) ssync(s);   /* bounded queue of work */
        }
        ssync(s);
        double m = pl_median(t, PL_CALIB_N);
        if (conf == 0) real_us = m; else if (conf == 1) lite_us = m; else if (conf == 2) creal_us = m; else clite_us = m;
    }
    pl_t.calib = 0;
    if (pl_rt.exec_destroy) pl_rt.exec_destroy(exec);
    if (pl_rt.graph_destroy) pl_rt.graph_destroy(graph);
    l->calib_ok = 1;
    l->calib_launches = PL_CALIB_N;
    l->graph_launch_real_us = real_us;
    l->graph_launch_lite_us = lite_us;
    l->graph_timing_us = lite_us - real_us;
    l->call_real_us = creal_us;
    l->call_lite_us = clite_us;
    l->call_us = clite_us - creal_us;
    /* the node probe: an event node's GPU cost per work node (a 64-memset chain, 50 replays each way) */
    l->probe_event_us = -1;
    if (plprobe_replays() > 0)
        l->probe_event_us = plprobe_calibrate(s, 64, 50, l->probe_calib_why, sizeof l->probe_calib_why);
}

int plite_probe_pending(void) { return plprobe_pending() || (pl_eager_n && pleager_poll(pinject_now_ns())); }

void plite_stats(ptrace_lite *l) {
    l->on = 1;
    l->graph_launches = atomic_load(&pl_n_graph);
    l->graph_timed = pl_w.timed;
    l->graph_capturing = atomic_load(&pl_n_capturing);
    l->graph_failed = atomic_load(&pl_n_failed);
    l->graph_no_event = atomic_load(&pl_n_no_event);
    l->graph_pending = pl_w.pending;
    l->graph_lost = pl_w.lost;
    l->blocking_calls = atomic_load(&pl_n_blocking);
    l->memcpy_calls = atomic_load(&pl_n_memcpy);
    l->sync_calls = atomic_load(&pl_n_sync);
    l->kernel_launches = atomic_load(&pl_n_kernels);
    l->dropped = atomic_load(&pl_n_dropped);
    l->anchors = pl_w.anchors;
    l->anchor_err_max_us = pl_w.anchor_err_max_us;
    l->err_max_us = pl_w.err_max_us;
    l->drift_max_ppm = pl_w.drift_max_ppm;
    if (pl_range_mode) {
        snprintf(l->capture_range, sizeof l->capture_range, "profiler-api");
        l->range_opens = atomic_load(&pl_n_range_opens);
        l->range_ns = atomic_load(&pl_range_ns);
        if (atomic_load(&pl_gate)) l->range_ns += pinject_now_ns() - atomic_load(&pl_gate_open_ns);
    }
    snprintf(l->interposed, sizeof l->interposed, "%s", PL_INTERPOSED);
    plprobe_stats ps;
    pthread_once(&pl_probe_once, pl_probe_init);   /* on, and said so, in a program that made no graph too */
    plprobe_get_stats(&ps);
    l->probe_replays = ps.replays_per_exec;
    l->probe_execs = ps.execs;
    l->probe_skipped = ps.skipped;
    l->probe_launched = ps.launched;
    l->probe_written = pl_w.probed;
    l->probe_lost = ps.lost;
    l->probe_stale = ps.stale;
    l->probe_events = ps.events;
    l->probe_instrument_ms = ps.instrument_ms;
    if (!l->calib_ok) l->probe_event_us = -1;   /* not measured (the calibration did not run) */
    snprintf(l->probe_skip_why, sizeof l->probe_skip_why, "%s", ps.skip_why);
    if (pl_eager_n > 0) {
        pleager_stats es;
        pleager_get_stats(&es);
        l->eager_instances = pl_eager_n;
        l->eager_probed = es.probed;
        l->eager_written = pl_w.eager_written;
        l->eager_lost = es.lost + pl_w.eager_lost;
        l->eager_skipped = es.skipped;
        l->eager_watchdog = es.watchdog;
        l->eager_busy = es.busy;
        l->eager_keys = es.keys;
        snprintf(l->eager_skip_why, sizeof l->eager_skip_why, "%s", es.skip_why);
    }
}
