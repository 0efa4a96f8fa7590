/* pinject.c: libspecprof.so's entry points and engine. CUDA loads the library through
 * CUDA_INJECTION64_PATH and calls InitializeInjection; NVTX loads it through
 * NVTX_INJECTION64_PATH and calls InitializeInjectionNvtx2, which we forward to the
 * libcupti that this library is bound to (so that CUPTI's NVTX callbacks reach our
 * subscriber even where a program loads another copy of libcupti first).
 * What is recorded when (docs/profiler.md): by default node-level records (kernels,
 * copies, sets, launch/copy/sync API records, launch callbacks) only inside short windows
 * (--window-ms every --period-ms, and while a graph executable or an NVTX phase shape has
 * been seen fewer than --shape-replays times), graph-level launch records between them
 * (--between graph); --mode always records everything all the time (the old behaviour).
 * Threads: application threads run the CUPTI callbacks (table updates and fixed-size
 * copies only: no formatting, no allocation); CUPTI's threads hand over completed
 * activity buffers; one control thread of ours opens and closes windows, flushes CUPTI
 * every SPECPROF_FLUSH_MS, formats and compresses the records and writes the file, so
 * that records reach the disk while the program runs (it may die by SIGKILL).
 * Memory: a fixed pool of activity buffers (SPECPROF_BUFFER_MB), two 4 MiB queues of host
 * events, fixed tables in pnvtx/pnccl and for shapes. Failure to attach never stops the
 * program. */
#include "pinject.h"
#include "pcalib.h"
#include "pdevice.h"
#include "plite.h"
#include "precord.h"
#include "ptrace_out.h"
#include "ptrace_write.h"
#include <cupti.h>
#include <generated_nvtx_meta.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* One CUPTI activity buffer. CUPTI holds one per launching thread: 64 MB in 2 MB buffers
 * ran out at 32 threads (H200 fault table, 2026-12-03: 143 records dropped); 512 KB gives 128. */
#define PINJ_BUF_BYTES ((size_t)512 << 10)
#define PINJ_MAX_BUFS 1024
#define PINJ_HOST_RING_BYTES ((size_t)4 << 20)
#define PINJ_WBUF_BYTES ((size_t)1 << 20)
#define PINJ_MAX_CTX 64
#define PINJ_STOP_WAIT_MS 8000               /* how long exit/signal paths wait for the writer */
#define PINJ_NOVEL_WAKE_MS 2                 /* a new shape opens a window within ~this (control thread poll) */

#define PINJ_SHAPES 4096                    /* graph executables and NVTX phase shapes followed */
#define PINJ_HEV_CAP (PINJ_HOST_RING_BYTES / sizeof(pinj_hev))

/* lite: no CUPTI in the process at all (plite.c interposes the runtime instead) */
typedef enum { PINJ_MODE_WINDOWS, PINJ_MODE_ALWAYS, PINJ_MODE_LITE } pinj_mode;

typedef struct {
    char dir[1024];
    double delay_s, duration_s;              /* <= 0: none */
    int start_sig, stop_sig;                 /* 0: none */
    char phases[256];
    int flush_ms, buffer_mb, quiet;
    pinj_mode mode;
    int window_ms, period_ms, shape_replays, window_max_ms;
    int between_graph;                       /* graph-level records between windows */
    int between_detach;                      /* CUPTI detached (cuptiFinalize) between windows */
    int records_all;                         /* every runtime and driver API record */
    int api_driver_only;                     /* SPECPROF_API_DOMAIN=driver (experimental): no
                                                runtime-API callback or record, the driver API's only */
    int api_between;                         /* API records and launch callbacks stay on between windows */
    int detach_any_exit;                     /* SPECPROF_DETACH_AT=any: finalize at any runtime API exit, not syncs only */
    int gz_level;                            /* 0: plain .json */
    int calibrate;
    char shape_ignore[128];                  /* range-name keys whose values do not make a new shape */
} pinj_config;

/* cbid classes (rt_cb/drv_cb bits), by API name (pinj_classify) */
enum {
    PINJ_CB_WINDOW = 1,                      /* launch callback inside windows (NVTX/NCCL link) */
    PINJ_CB_ALWAYS = 2,                      /* callback all the time (graph launches, captures) */
    PINJ_REC = 4,                            /* API record inside windows */
    PINJ_CAPTURE_BEGIN = 8, PINJ_CAPTURE_END = 16, PINJ_GRAPH_LAUNCH = 32,
    PINJ_SYNC = 64,                          /* a blocking sync: where --between detach finalizes CUPTI */
};

/* A host-side event, queued by the program's threads as a fixed-size copy and formatted
 * by the control thread (ptrace_write). */
typedef enum { PINJ_HEV_RANGE = 1, PINJ_HEV_NCCL, PINJ_HEV_GRAPHEXEC, PINJ_HEV_WINDOW } pinj_hev_kind;
typedef struct {
    pinj_hev_kind kind;
    union {
        struct { int64_t start_ns, end_ns, tid, launches, graph_launches; int push_pop, has_launches;
                 char name[PNVTX_NAME_MAX], domain[48]; } range;
        ptrace_ncclcall nccl;
        ptrace_graphexec gexec;
        ptrace_window win;
    } u;
} pinj_hev;

typedef struct { uint8_t *buf; size_t valid; } pinj_done;

static struct {
    pinj_config cfg;
    pid_t pid;
    atomic_int attached, forked, refused;
    CUpti_SubscriberHandle sub;
    pnvtx *nvtx;
    pnccl_map *nccl;
    uint32_t cupti_version;

    /* capture window */
    pthread_mutex_t mu;                      /* window state, contexts, pool, done queue */
    atomic_int start_requested, capturing, capture_done, stop_requested, start_signalled, stop_signalled;
    char stop_reason[48];
    int64_t t0_ns, t0_unix_ns;
    int64_t start_wall_ms;                   /* for --delay/--duration, CLOCK_MONOTONIC */
    ptrace_ctx ctx;
    atomic_int ctx_seen;
    int dev;
    CUcontext contexts[PINJ_MAX_CTX];
    int n_contexts;

    /* buffers */
    uint8_t *pool[PINJ_MAX_BUFS];
    int n_pool, n_bufs_max, n_bufs_made;
    int64_t bufs_lost;                       /* most buffers a detached CUPTI had not handed back */
    pinj_done done[PINJ_MAX_BUFS];
    int n_done;
    atomic_llong dropped_records, pool_exhausted;

    /* host events (fixed-size, formatted by the control thread) */
    pthread_mutex_t host_mu;
    pinj_hev *host_q, *host_spare;
    size_t host_n;
    atomic_llong host_dropped;
    atomic_llong nccl_calls, nodes_created, nodes_cloned;
    atomic_uint nccl_seq;

    /* output (control thread only) */
    ptrace_out out;
    int out_open;
    char *wbuf;
    size_t wlen;
    precord_stats rec;
    int64_t host_records;

    /* control thread */
    pthread_t ctl;
    int ctl_running;
    int wake[2];
    atomic_int finished;                     /* stop done (file renamed or given up) */

    /* launch API cbids we follow: PINJ_CB_* / PINJ_REC bits */
    unsigned char rt_cb[CUPTI_RUNTIME_TRACE_CBID_SIZE], drv_cb[CUPTI_DRIVER_TRACE_CBID_SIZE];

    /* windows (control thread, except the atomics) */
    atomic_int win_live;                     /* node-level recording on: callbacks and host events */
    int win_open, win_reason_start;
    char win_reason[16];
    int64_t win_start_ns, win_open_ms, win_until_ms, next_time_ms, quiet_until_ms;
    atomic_int novel_wanted;                 /* a callback saw a shape that needs a window */
    atomic_llong novel_last_ms;              /* last sighting, inside a window, of a shape still new */
    int64_t windows, window_ns;
    int graph_trace_on;
    _Atomic uint64_t shape_key[PINJ_SHAPES];
    atomic_int shape_seen[PINJ_SHAPES];      /* sightings inside windows, saturating at shape_replays */
    atomic_uint shape_req[PINJ_SHAPES];      /* generation in which the shape asked for a window */
    atomic_int shape_pending;                /* shapes of this generation that asked and are not recorded yet */
    atomic_uint shape_gen;                   /* starts at 1; a window closed at its maximum starts the next */
    atomic_int captures;                     /* graph captures in progress in the program */
    ptrace_calib calib;
    int calibrated;

    /* CUPTI attached or not (--between detach): PINJ_ATT_*; app threads read it in callbacks */
    atomic_int att;
    int64_t detach_at_ms;                    /* control thread: detach once the window's records are in */
    int64_t att_req_ms;                      /* when the detach was asked (a stuck request is taken back) */
    atomic_llong detach_ns, detaches;        /* cuptiUnsubscribe + cuptiFinalize, on the program's thread */
    int64_t attach_ns, attaches;             /* re-subscribing, on the control thread */
    int64_t last_attach_ns;                  /* of the window being opened (its event says it) */
    uint32_t corr_base;                      /* added to every correlation id of this attachment */
    /* pinject_now_ns without a CUPTI call: CLOCK_MONOTONIC + an offset to CUPTI's clock,
     * measured while attached (a CUPTI call while detached would attach CUPTI again) */
    atomic_llong clock_off_ns;
    atomic_llong nvtx_ids;                   /* start/end range ids we hand out */
    /* --between detach: our callbacks and program-thread CUPTI calls under way (a detach
     * waits until none but its own is), the attach a window waits for (done by a program
     * thread at its next NVTX range start: attaching from our thread while the program
     * launched broke every program on the H200), the last NVTX call (ms) */
    atomic_int cb_busy;
    atomic_int attach_wanted;
    atomic_uint att_gen;                     /* attachments made by program threads */
    unsigned att_gen_seen;                   /* control thread: the last one it took in */
    atomic_llong attach_prog_ns;             /* that attachment's time on the program's thread */
    atomic_int attach_rc;                    /* its CUPTI error, 0 when it worked */
    atomic_llong nvtx_last_ms;
    char win_pending[16];                    /* control thread: a window waiting for the attach */
    int64_t win_pending_ms, attach_waits, stay_attached;
    int64_t bufs_unparsed;                   /* handed back by a detached CUPTI at the end, not parsed */
} g;

enum { PINJ_ATT_ON = 0, PINJ_ATT_PENDING, PINJ_ATT_FINALIZING, PINJ_ATT_OFF, PINJ_ATT_ATTACHING };

static pthread_once_t pinj_once = PTHREAD_ONCE_INIT;
static __thread pinject_tls pinj_tls;
static __thread int pinj_tls_ready;

/* ---------- small helpers ---------- */

static int64_t pinj_mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t pinj_mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The offset from CLOCK_MONOTONIC to CUPTI's clock, measured now (attached only). */
static void pinj_clock_sync(void) {
    uint64_t t = 0;
    int64_t a = pinj_mono_ns();
    if (cuptiGetTimestamp(&t) != CUPTI_SUCCESS || !t) return;
    int64_t b = pinj_mono_ns();
    atomic_store(&g.clock_off_ns, (int64_t)t - (a + (b - a) / 2));
}

int pinject_cupti_live(void) {
    int a = atomic_load_explicit(&g.att, memory_order_relaxed);
    return a == PINJ_ATT_ON || a == PINJ_ATT_PENDING;
}

/* Dekker with pinj_detach_here: the holder counts itself in, then reads the state; the
 * detacher moves the state, then reads the count (both sequentially consistent), so one of
 * them sees the other. */
int pinject_cupti_hold(void) {
    if (!g.cfg.between_detach) return pinject_cupti_live();
    atomic_fetch_add(&g.cb_busy, 1);
    int a = atomic_load(&g.att);
    if (a == PINJ_ATT_ON || a == PINJ_ATT_PENDING) return 1;
    atomic_fetch_sub(&g.cb_busy, 1);
    return 0;
}

void pinject_cupti_release(void) {
    if (g.cfg.between_detach) atomic_fetch_sub(&g.cb_busy, 1);
}

int64_t pinject_now_ns(void) {
    int64_t t = pinj_mono_ns() + atomic_load_explicit(&g.clock_off_ns, memory_order_relaxed);
    return (int64_t)t;
}

pinject_tls *pinject_thread(void) {
    if (!pinj_tls_ready) {
        memset(&pinj_tls, 0, sizeof pinj_tls);
        pinj_tls.tid = (int64_t)syscall(SYS_gettid);
        pinj_tls_ready = 1;
    }
    return &pinj_tls;
}

int pinject_attached(void) { return atomic_load(&g.attached) && !atomic_load(&g.forked); }
int pinject_capturing(void) { return pinject_attached() && atomic_load(&g.capturing) && !atomic_load(&g.capture_done); }
const ptrace_ctx *pinject_ctx(void) { return &g.ctx; }
pnvtx *pinject_nvtx(void) { return g.nvtx; }
int64_t pinject_graph_nodes_seen(void) { return atomic_load(&g.nodes_created); }
pnccl_map *pinject_nccl(void) { return g.nccl; }
uint32_t pinject_nccl_seq(void) { return atomic_fetch_add(&g.nccl_seq, 1) + 1; }
void pinject_nccl_called(void) { atomic_fetch_add(&g.nccl_calls, 1); }

void pinject_note(const char *fmt, ...) {
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!g.cfg.quiet) fprintf(stderr, "specprof: pid %d: %s\n", (int)getpid(), msg);
    if (!g.cfg.dir[0]) return;
    char err[256], path[1200];
    if (ptrace_out_mkdirs(g.cfg.dir, err, sizeof err)) return;
    snprintf(path, sizeof path, "%s/specprof.pid%d.note", g.cfg.dir, (int)getpid());
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return;
    size_t n = strlen(msg);
    msg[n] = '\n';
    ssize_t w = write(fd, msg, n + 1);
    (void)w;
    close(fd);
}

static void pinj_wake(void) {
    char c = 1;
    if (g.wake[1] >= 0) { ssize_t w = write(g.wake[1], &c, 1); (void)w; }
}

static double pinj_env_d(const char *name, double dflt) {
    const char *v = getenv(name);
    if (!v || !*v) return dflt;
    char *e;
    double d = strtod(v, &e);
    if (*e) { fprintf(stderr, "specprof: %s: value \"%s\" is not a number, using %g\n", name, v, dflt); return dflt; }
    return d;
}

static void pinj_read_config(pinj_config *c) {
    const char *d = getenv("SPECPROF_DIR");
    snprintf(c->dir, sizeof c->dir, "%s", d && *d ? d : "specprof-out");
    c->delay_s = pinj_env_d("SPECPROF_DELAY_S", 0);
    c->duration_s = pinj_env_d("SPECPROF_DURATION_S", 0);
    c->start_sig = (int)pinj_env_d("SPECPROF_START_SIGNAL", 0);
    c->stop_sig = (int)pinj_env_d("SPECPROF_STOP_SIGNAL", 0);
    const char *p = getenv("SPECPROF_PHASES");
    snprintf(c->phases, sizeof c->phases, "%s", p && *p ? p : PNVTX_DEFAULT_PHASES);
    c->flush_ms = (int)pinj_env_d("SPECPROF_FLUSH_MS", 500);
    if (c->flush_ms < 10) c->flush_ms = 10;
    c->buffer_mb = (int)pinj_env_d("SPECPROF_BUFFER_MB", 64);
    if (c->buffer_mb < 8) c->buffer_mb = 8;
    c->quiet = getenv("SPECPROF_QUIET") && atoi(getenv("SPECPROF_QUIET"));
    const char *m = getenv("SPECPROF_MODE");
    /* always by default: in windows mode CUPTI 13.0.1 stops advancing correlation ids once a
     * window has closed and another opened (H200, 2026-12-03: 38,278 kernels of specbench's
     * windowed calibration with 121 distinct ids; traces/overhead/fit-windows-vs-always), so
     * kernels meet the wrong launch and phase; windows stays for who asks for it */
    c->mode = m && !strcmp(m, "windows") ? PINJ_MODE_WINDOWS : m && !strcmp(m, "lite") ? PINJ_MODE_LITE : PINJ_MODE_ALWAYS;
    if (m && *m && strcmp(m, "always") && strcmp(m, "windows") && strcmp(m, "lite"))
        fprintf(stderr, "specprof: SPECPROF_MODE: value \"%s\": expected windows, always or lite, using always\n", m);
    /* defaults: 50 ms in every 1000 ms keeps an eager loop that CUPTI slows by ~35% inside a
     * window within ~2% overall (docs/profiler.md); 3 replays per shape give the fit its
     * per-kernel breakdown of every graph and phase shape */
    c->window_ms = (int)pinj_env_d("SPECPROF_WINDOW_MS", 50);
    if (c->window_ms < 1) c->window_ms = 1;
    c->period_ms = (int)pinj_env_d("SPECPROF_PERIOD_MS", 1000);
    if (c->period_ms < c->window_ms) c->period_ms = c->window_ms;
    c->shape_replays = (int)pinj_env_d("SPECPROF_SHAPE_REPLAYS", 3);
    if (c->shape_replays < 0) c->shape_replays = 0;
    c->window_max_ms = (int)pinj_env_d("SPECPROF_WINDOW_MAX_MS", 1000);
    if (c->window_max_ms < c->window_ms) c->window_max_ms = c->window_ms;
    const char *b = getenv("SPECPROF_BETWEEN");
    /* graph-level records between windows only when asked: with them on, 3 of 4 specbench
     * processes that captured graphs died by SIGSEGV on the H200 (CUPTI 13.0.1, docs/profiler.md).
     * CUPTI detached between windows (cuptiFinalize) only when asked: on the H200 (CUPTI
     * 13.0.1) every PyTorch process so profiled died of heap corruption and specbench
     * stopped after the first re-attach (docs/profiler.md, calls 3 and 4) */
    c->between_graph = c->mode == PINJ_MODE_WINDOWS && b && !strcmp(b, "graph");
    c->between_detach = c->mode == PINJ_MODE_WINDOWS && b && !strcmp(b, "detach");
    if (b && *b && strcmp(b, "graph") && strcmp(b, "none") && strcmp(b, "detach"))
        fprintf(stderr, "specprof: SPECPROF_BETWEEN: value \"%s\": expected none, detach or graph, using none\n", b);
    const char *r = getenv("SPECPROF_RECORDS");
    c->records_all = r && !strcmp(r, "all");
    const char *ad = getenv("SPECPROF_API_DOMAIN");
    c->api_driver_only = ad && !strcmp(ad, "driver");
    /* windows: only the GPU activity kinds are switched per window; the API records and
     * launch callbacks, once on, stay on (switched off and on again, CUPTI 13.0.1 gave API
     * records of later windows old correlation ids: 450 records with 262 ids on specbench,
     * H200 call 5; kept on, 5402 with 5402, at 4.9% against 4.6% cost: docs/profiler.md).
     * SPECPROF_API_BETWEEN=0 switches them per window as before. */
    c->api_between = c->mode == PINJ_MODE_WINDOWS && (int)pinj_env_d("SPECPROF_API_BETWEEN", 1) != 0;
    /* where CUPTI is finalized: at a blocking sync's exit by default (the GPU drained, as in
     * corr_probe's detach rounds that worked), any runtime API's exit when asked */
    const char *da = getenv("SPECPROF_DETACH_AT");
    c->detach_any_exit = da && !strcmp(da, "any");
    c->gz_level = (int)pinj_env_d("SPECPROF_GZ_LEVEL", 6);
    if (c->gz_level < 0) c->gz_level = 0;
    if (c->gz_level > 9) c->gz_level = 9;
    c->calibrate = (int)pinj_env_d("SPECPROF_CALIBRATE", 1) != 0;
    const char *ig = getenv("SPECPROF_SHAPE_IGNORE");
    snprintf(c->shape_ignore, sizeof c->shape_ignore, "%s", ig ? ig : "ctx");
}

static const char *pinj_cupti_err(CUptiResult r) {
    const char *s = NULL;
    if (cuptiGetResultString(r, &s) != CUPTI_SUCCESS || !s) return "unknown CUPTI error";
    return s;
}

/* ---------- CUPTI activity buffers ---------- */

static void CUPTIAPI pinj_buf_request(uint8_t **buffer, size_t *size, size_t *max_records) {
    *buffer = NULL;
    *size = 0;
    *max_records = 0;
    pthread_mutex_lock(&g.mu);
    if (g.n_pool > 0) *buffer = g.pool[--g.n_pool];
    else if (g.n_bufs_made < g.n_bufs_max) {
        *buffer = aligned_alloc(8, PINJ_BUF_BYTES);
        if (*buffer) g.n_bufs_made++;
    }
    pthread_mutex_unlock(&g.mu);
    if (*buffer) *size = PINJ_BUF_BYTES;
    else atomic_fetch_add(&g.pool_exhausted, 1);   /* CUPTI drops records and counts them */
}

static void CUPTIAPI pinj_buf_complete(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid) {
    (void)size;
    size_t dropped = 0;
    /* not from inside cuptiFinalize (a buffer handed back while detaching) */
    if (atomic_load(&g.att) == PINJ_ATT_ON && pinject_cupti_hold()) {
        if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped)
            atomic_fetch_add(&g.dropped_records, (long long)dropped);
        pinject_cupti_release();
    }
    if (!buffer) return;
    pthread_mutex_lock(&g.mu);
    if (atomic_load(&g.forked) || g.n_done == PINJ_MAX_BUFS) {
        g.pool[g.n_pool++ % PINJ_MAX_BUFS] = buffer;   /* cannot happen: at most n_bufs_max exist */
    } else {
        g.done[g.n_done].buf = buffer;
        g.done[g.n_done].valid = valid;
        g.n_done++;
    }
    pthread_mutex_unlock(&g.mu);
    pinj_wake();
}

/* ---------- host events ---------- */

/* Queues a copy of e (any thread); counted as dropped when the queue is full. */
static void pinj_host_push(const pinj_hev *e) {
    pthread_mutex_lock(&g.host_mu);
    if (g.host_q && g.host_n < PINJ_HEV_CAP) g.host_q[g.host_n++] = *e;
    else atomic_fetch_add(&g.host_dropped, 1);
    pthread_mutex_unlock(&g.host_mu);
}

int pinject_recording(void) {
    return pinject_capturing() && (g.cfg.mode != PINJ_MODE_WINDOWS || atomic_load_explicit(&g.win_live, memory_order_relaxed)) &&
           (g.cfg.mode != PINJ_MODE_LITE || !plite_range_mode() || plite_range_open_since(INT64_MAX));
}

void pinject_host_nccl(const ptrace_ncclcall *n) {
    pinj_hev e;
    e.kind = PINJ_HEV_NCCL;
    e.u.nccl = *n;
    pinj_host_push(&e);
}

static void pinj_host_graphexec(const ptrace_graphexec *x) {
    pinj_hev e;
    e.kind = PINJ_HEV_GRAPHEXEC;
    e.u.gexec = *x;
    pinj_host_push(&e);
}

static void pinj_host_window(const ptrace_window *w) {
    pinj_hev e;
    e.kind = PINJ_HEV_WINDOW;
    e.u.win = *w;
    pinj_host_push(&e);
}

/* ---------- writer (control thread) ---------- */

static void pinj_window_close(void);
static void pinj_graph_trace(int on);

/* A write to the trace failed (a full disk, a quota, a file size limit): say so once, keep
 * what is on disk (a .part file that loads up to here), stop recording; the program runs
 * on. Control thread only. */
static void pinj_write_failed(int err) {
    pinject_note("writing %s failed: %s; recording stops here (the file holds what was written before; "
                 "the program runs on)", g.out.path_part, strerror(err));
    ptrace_out_abandon(&g.out);
    g.out_open = 0;
    g.wlen = 0;
    atomic_store(&g.capture_done, 1);
    pinj_window_close();   /* recording off: no more records to drop on the floor */
    pinj_graph_trace(0);
}

static void pinj_flush_wbuf(void) {
    if (!g.wlen || !g.out_open) { g.wlen = 0; return; }
    if (ptrace_out_write(&g.out, g.wbuf, g.wlen)) {
        pinj_write_failed(errno);
        return;
    }
    g.wlen = 0;
}

static void pinj_emit(void *user, const char *line, int n) {
    (void)user;
    if (n <= 0 || !g.out_open) return;
    if (g.wlen + (size_t)n > PINJ_WBUF_BYTES) pinj_flush_wbuf();
    if ((size_t)n > PINJ_WBUF_BYTES) return;
    memcpy(g.wbuf + g.wlen, line, (size_t)n);
    g.wlen += (size_t)n;
}

/* Writes what CUPTI and the host queue handed over; block: end a compressed block too
 * (at the flush cadence, so that blocks are big and a cut file loses one flush period). */
static int pinj_stopping;   /* control thread: the end, buffers are written whatever the attachment */

static void pinj_drain(int block) {
    /* CUPTI's buffers are parsed with a CUPTI call: only while it is attached and cannot
     * detach (ON: a detach is asked by this thread only); at the end, buffers a detached
     * CUPTI handed back are returned unparsed (they hold what completed after the window's
     * last forced flush, pinj_detach_request) */
    for (; atomic_load(&g.att) == PINJ_ATT_ON || pinj_stopping;) {
        pinj_done d;
        pthread_mutex_lock(&g.mu);
        if (!g.n_done) { pthread_mutex_unlock(&g.mu); break; }
        d = g.done[0];
        memmove(&g.done[0], &g.done[1], (size_t)(g.n_done - 1) * sizeof g.done[0]);
        g.n_done--;
        pthread_mutex_unlock(&g.mu);
        if (atomic_load(&g.att) != PINJ_ATT_ON) g.bufs_unparsed++;
        else if (g.out_open) precord_buffer(d.buf, d.valid, &g.ctx, g.nvtx, g.nccl, pinj_emit, NULL, &g.rec);
        pthread_mutex_lock(&g.mu);
        g.pool[g.n_pool++] = d.buf;
        pthread_mutex_unlock(&g.mu);
    }
    /* host events: swap the queue out under the lock, format outside it */
    pthread_mutex_lock(&g.host_mu);
    pinj_hev *full = g.host_q;
    size_t n = g.host_n;
    g.host_q = g.host_spare;
    g.host_n = 0;
    pthread_mutex_unlock(&g.host_mu);
    g.host_spare = full;
    for (size_t i = 0; i < n && g.out_open; i++) {
        static char line[2048];
        const pinj_hev *e = &full[i];
        int len = -1;
        switch (e->kind) {
        case PINJ_HEV_RANGE: {
            ptrace_range r = { e->u.range.start_ns, e->u.range.end_ns, e->u.range.name, e->u.range.domain,
                               e->u.range.tid, e->u.range.push_pop, e->u.range.has_launches,
                               e->u.range.launches, e->u.range.graph_launches };
            len = ptrace_write_range(line, sizeof line, &g.ctx, &r);
            break;
        }
        case PINJ_HEV_NCCL: len = ptrace_write_ncclcall(line, sizeof line, &g.ctx, &e->u.nccl); break;
        case PINJ_HEV_GRAPHEXEC: len = ptrace_write_graphexec(line, sizeof line, &g.ctx, &e->u.gexec); break;
        case PINJ_HEV_WINDOW: len = ptrace_write_window(line, sizeof line, &g.ctx, &e->u.win); break;
        }
        if (len > 0) { pinj_emit(NULL, line, len); g.host_records++; }
    }
    /* lite mode: the interposed calls and the graph launches timed by events */
    if (g.cfg.mode == PINJ_MODE_LITE && g.out_open) g.host_records += plite_drain(&g.ctx, pinj_emit, NULL, pinj_stopping);
    pinj_flush_wbuf();
    static int64_t blocked_at;
    if (!block || !g.out_open || g.out.bytes_in == blocked_at) return;
    blocked_at = g.out.bytes_in;
    if (ptrace_out_block(&g.out)) pinj_write_failed(errno);
}

/* Node-level recording on or off: activity kinds, API records, window callbacks. */
static void pinj_node_kinds(int on) {
    CUpti_ActivityKind kinds[] = { CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                   CUPTI_ACTIVITY_KIND_MEMSET };
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        CUptiResult r = on ? cuptiActivityEnable(kinds[i]) : cuptiActivityDisable(kinds[i]);
        if (r != CUPTI_SUCCESS && on) pinject_note("cuptiActivityEnable(kind %d): %s", (int)kinds[i], pinj_cupti_err(r));
    }
}

/* API records and the launch callbacks of windows, on or off. */
static int pinj_api_on;
static void pinj_api_level(int on) {
    pinj_api_on = on;
    if (g.cfg.records_all) {
        if (on) { cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME); cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER); }
        else { cuptiActivityDisable(CUPTI_ACTIVITY_KIND_RUNTIME); cuptiActivityDisable(CUPTI_ACTIVITY_KIND_DRIVER); }
    }
    for (int cb = 0; cb < CUPTI_RUNTIME_TRACE_CBID_SIZE; cb++) {
        if ((g.rt_cb[cb] & PINJ_REC) && !g.cfg.records_all) cuptiActivityEnableRuntimeApi((CUpti_CallbackId)cb, (uint8_t)on);
        if (g.rt_cb[cb] & PINJ_CB_WINDOW) cuptiEnableCallback((uint32_t)on, g.sub, CUPTI_CB_DOMAIN_RUNTIME_API, (CUpti_CallbackId)cb);
    }
    for (int cb = 0; cb < CUPTI_DRIVER_TRACE_CBID_SIZE; cb++) {
        if ((g.drv_cb[cb] & PINJ_REC) && !g.cfg.records_all) cuptiActivityEnableDriverApi((CUpti_CallbackId)cb, (uint8_t)on);
        if (g.drv_cb[cb] & PINJ_CB_WINDOW) cuptiEnableCallback((uint32_t)on, g.sub, CUPTI_CB_DOMAIN_DRIVER_API, (CUpti_CallbackId)cb);
    }
}

/* Switching on, the launch callbacks come first, so that every recorded launch has been
 * seen by them (its NVTX link); switching off, the records stop first. With api_between
 * the API part is switched on once and stays on. */
static void pinj_node_level(int on) {
    if (!on) pinj_node_kinds(0);
    if (!g.cfg.api_between || (on && !pinj_api_on)) pinj_api_level(on);
    if (on) pinj_node_kinds(1);
}

/* Graph-level records (one per graph launch); CUPTI takes them only while kernel records are off. */
static void pinj_graph_trace(int on) {
    if (!g.cfg.between_graph || on == g.graph_trace_on) return;
    CUptiResult r = on ? cuptiActivityEnable(CUPTI_ACTIVITY_KIND_GRAPH_TRACE) : cuptiActivityDisable(CUPTI_ACTIVITY_KIND_GRAPH_TRACE);
    if (r != CUPTI_SUCCESS && on) {
        pinject_note("graph-level records unavailable (cuptiActivityEnable(GRAPH_TRACE): %s): nothing between windows",
                     pinj_cupti_err(r));
        g.cfg.between_graph = 0;
        return;
    }
    g.graph_trace_on = on;
}

/* ---------- CUPTI detached between windows (--between detach) ----------
 * CUPTI attached with every activity kind and launch callback off still costs: on the H200
 * a 390-node graph launch took ~0.8 us a node longer after a window than before any
 * (docs/profiler.md, call 1), as PyTorch found after profiling (pytorch/pytorch PR 146604:
 * fixed by cuptiFinalize). So between windows CUPTI is detached, as CUPTI's cupti_finalize
 * sample and Kineto's teardown do it: the records flushed and written, the runtime API domain
 * switched on, and the next runtime API exit on a program thread calls cuptiUnsubscribe and
 * cuptiFinalize (CUPTI's documentation: from an API exit callsite; a program that makes no
 * runtime call stays attached). The next window
 * subscribes again (CUPTI initialises lazily) and switches its callbacks back on. While
 * detached nothing of ours calls CUPTI (any call would attach it again): NVTX ranges come
 * from our own NVTX injection, timestamps from CLOCK_MONOTONIC and a measured offset,
 * correlation ids get a base per attachment (CUPTI may count them from 1 again). */
#define PINJ_DETACH_DELAY_MS 20   /* after a window closes, for the records of its last launches to complete */
#define PINJ_DETACH_WAIT_MS 2000  /* a cuptiFinalize under way is waited for this long before a window opens */

static void pinj_enable_always(void) {
    for (int dom = 0; dom < 2; dom++) {
        CUpti_CallbackDomain d = dom ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API;
        int size = dom ? CUPTI_DRIVER_TRACE_CBID_SIZE : CUPTI_RUNTIME_TRACE_CBID_SIZE;
        unsigned char *tab = dom ? g.drv_cb : g.rt_cb;
        for (int cb = 1; cb < size; cb++)
            if ((tab[cb] & PINJ_CB_ALWAYS) && cuptiEnableCallback(1, g.sub, d, (CUpti_CallbackId)cb) != CUPTI_SUCCESS)
                tab[cb] &= (unsigned char)~PINJ_CB_ALWAYS;
    }
}

static void CUPTIAPI pinj_buf_request(uint8_t **buffer, size_t *size, size_t *max_records);
static void CUPTIAPI pinj_buf_complete(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid);
static void CUPTIAPI pinj_callback(void *ud, CUpti_CallbackDomain dom, CUpti_CallbackId cbid, const void *data);
static void pinj_callback_held(CUpti_CallbackDomain dom, CUpti_CallbackId cbid, const void *data);

#define PINJ_DETACH_BUSY_WAIT_NS 50000000LL   /* a detach waits this long for our other callbacks to leave CUPTI */

/* The callbacks at whose exits CUPTI is finalized, on or off: the blocking syncs' (or, with
 * SPECPROF_DETACH_AT=any, every runtime API's: the whole domain). */
static void pinj_detach_sites(int on) {
    if (g.cfg.detach_any_exit) {
        cuptiEnableDomain((uint32_t)on, g.sub, CUPTI_CB_DOMAIN_RUNTIME_API);
        if (!on) pinj_enable_always();
        return;
    }
    for (int cb = 1; cb < CUPTI_RUNTIME_TRACE_CBID_SIZE; cb++)
        if ((g.rt_cb[cb] & PINJ_SYNC) && !(g.rt_cb[cb] & PINJ_CB_ALWAYS))
            cuptiEnableCallback((uint32_t)on, g.sub, CUPTI_CB_DOMAIN_RUNTIME_API, (CUpti_CallbackId)cb);
}

/* Control thread: the window's records are in; ask the next API exit to detach CUPTI.
 * Everything of ours that calls CUPTI from this thread is done before the state says
 * PENDING: from then on a program thread may finalize CUPTI at any moment. A program that
 * made no NVTX call in the last period stays attached (the attach needs one: pinj_attach). */
static void pinj_detach_request(int64_t now_ms) {
    g.detach_at_ms = 0;
    if (atomic_load(&g.att) != PINJ_ATT_ON) return;
    if (now_ms - atomic_load(&g.nvtx_last_ms) > (int64_t)g.cfg.period_ms + g.cfg.window_ms) {
        if (!g.stay_attached++)
            pinject_note("--between detach: no NVTX call from the program in the last period; CUPTI stays attached "
                         "between windows while none comes (the attach again runs at a program thread's NVTX range start)");
        return;
    }
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    pinj_drain(0);   /* formatted while CUPTI is still there */
    pinj_detach_sites(1);
    g.att_req_ms = now_ms;
    atomic_store(&g.att, PINJ_ATT_PENDING);
}

/* A program thread at a blocking sync's exit (SPECPROF_DETACH_AT=any: any runtime API's) while a detach is asked, inside our callback
 * (holding CUPTI: pinject_cupti_hold): it detaches CUPTI once no other callback or
 * program-thread CUPTI call of ours is under way (bounded: else the next exit tries). */
static void pinj_detach_here(void) {
    int want = PINJ_ATT_PENDING;
    if (!atomic_compare_exchange_strong(&g.att, &want, PINJ_ATT_FINALIZING)) return;
    int64_t t0 = pinj_mono_ns();
    while (atomic_load(&g.cb_busy) > 1) {
        if (pinj_mono_ns() - t0 > PINJ_DETACH_BUSY_WAIT_NS) { atomic_store(&g.att, PINJ_ATT_PENDING); return; }
        sched_yield();
    }
    cuptiUnsubscribe(g.sub);
    cuptiFinalize();
    atomic_fetch_add(&g.detach_ns, pinj_mono_ns() - t0);
    atomic_fetch_add(&g.detaches, 1);
    atomic_store(&g.att, PINJ_ATT_OFF);
    pinj_wake();
}

/* A program thread at an NVTX range start while a window waits for CUPTI: it attaches
 * CUPTI again (subscribe, buffers, resource callbacks), outside any CUDA call of its own,
 * as the detach/re-attach rounds that worked on the H200 did (profiler/demo/corr_probe.cu,
 * variant detach); the control thread then switches the window's recording on. */
static void pinj_attach_here(void) {
    int want = PINJ_ATT_OFF;
    if (!atomic_compare_exchange_strong(&g.att, &want, PINJ_ATT_ATTACHING)) return;
    int64_t t0 = pinj_mono_ns();
    CUptiResult r = cuptiSubscribe(&g.sub, (CUpti_CallbackFunc)pinj_callback, NULL);
    if (r != CUPTI_SUCCESS) {
        atomic_store(&g.attach_rc, (int)r);
        atomic_store(&g.attach_wanted, 0);
        atomic_store(&g.att, PINJ_ATT_OFF);
        pinj_wake();
        return;
    }
    cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
    r = cuptiActivityRegisterCallbacks(pinj_buf_request, pinj_buf_complete);
    if (r != CUPTI_SUCCESS) atomic_store(&g.attach_rc, -(int)r);   /* said by the control thread */
    cuptiEnableDomain(1, g.sub, CUPTI_CB_DOMAIN_RESOURCE);
    pinj_clock_sync();
    atomic_store(&g.attach_prog_ns, pinj_mono_ns() - t0);
    atomic_store(&g.attach_wanted, 0);
    atomic_fetch_add(&g.att_gen, 1);
    atomic_store(&g.att, PINJ_ATT_ON);
    pinj_wake();
}

/* NVTX range starts (push, start): the attach a window waits for. */
static inline void pinj_nvtx_attach_point(void) {
    if (!g.cfg.between_detach) return;
    atomic_store_explicit(&g.nvtx_last_ms, pinj_mono_ms(), memory_order_relaxed);
    if (atomic_load_explicit(&g.attach_wanted, memory_order_relaxed)) pinj_attach_here();
}

/* Control thread: a program thread attached CUPTI again; take the new attachment in. */
static void pinj_attached_again(void) {
    unsigned gen = atomic_load(&g.att_gen);
    if (gen == g.att_gen_seen) return;
    g.att_gen_seen = gen;
    int rc = atomic_load(&g.attach_rc);
    if (rc < 0) pinject_note("cuptiActivityRegisterCallbacks after attaching again: %s", pinj_cupti_err((CUptiResult)-rc));
    atomic_store(&g.attach_rc, 0);
    /* records handed over while CUPTI detached, with the old attachment's ids */
    pinj_api_on = 0;   /* a new CUPTI: nothing of ours on */
    pinj_drain(0);
    /* buffers the detached CUPTI did not hand back: counted, never freed (CUPTI may still
     * own them); they are lost to the pool (SPECPROF_BUFFER_MB bounds the memory) */
    pthread_mutex_lock(&g.mu);
    int64_t out = g.n_bufs_made - g.n_pool - g.n_done;
    if (out > g.bufs_lost) g.bufs_lost = out;
    pthread_mutex_unlock(&g.mu);
    g.rec.corr_base = g.rec.corr_max + 1;
    pnccl_map_forget_corrs(g.nccl);
    precord_forget_launches();
    pinj_enable_always();
    g.last_attach_ns = atomic_load(&g.attach_prog_ns);
    g.attach_ns += g.last_attach_ns;
    g.attaches++;
}

/* Control thread: CUPTI attached for a window. 0: attached now (a detach asked and not
 * done yet is taken back); 1: the attach is asked of the program's next NVTX range start
 * (the window opens then); -1: CUPTI cannot be attached (said once; no more windows). */
static int pinj_attach(void) {
    int want = PINJ_ATT_PENDING;
    if (atomic_compare_exchange_strong(&g.att, &want, PINJ_ATT_ON)) {
        pinj_detach_sites(0);
        g.last_attach_ns = 0;
        return 0;
    }
    int a = atomic_load(&g.att);
    if (a == PINJ_ATT_ON) {
        unsigned gen = atomic_load(&g.att_gen);
        if (gen == g.att_gen_seen) g.last_attach_ns = 0;
        pinj_attached_again();
        return 0;
    }
    static int failed;
    int rc = atomic_load(&g.attach_rc);
    if (rc > 0 && !failed) {
        failed = 1;
        pinject_note("attaching CUPTI again for a window failed (cuptiSubscribe on a program thread: %s): no more windows",
                     pinj_cupti_err((CUptiResult)rc));
    }
    if (failed) return -1;
    if (a == PINJ_ATT_OFF && !atomic_exchange(&g.attach_wanted, 1)) g.attach_waits++;
    return 1;   /* OFF, FINALIZING or ATTACHING: a program thread finishes it */
}

/* Opens a node-level window (control thread, or init before it exists). */
static void pinj_window_open(const char *reason) {
    if (g.win_open) return;
    g.detach_at_ms = 0;
    int a = pinj_attach();
    if (a > 0 && !g.win_pending[0]) {   /* opened once a program thread has attached CUPTI */
        snprintf(g.win_pending, sizeof g.win_pending, "%s", reason);
        g.win_pending_ms = pinj_mono_ms();
    }
    if (a) return;
    g.win_pending[0] = 0;
    pinj_graph_trace(0);
    pinj_node_level(1);
    g.win_start_ns = pinject_now_ns();
    g.win_open_ms = pinj_mono_ms();
    g.win_until_ms = g.win_open_ms + g.cfg.window_ms;
    snprintf(g.win_reason, sizeof g.win_reason, "%s", reason);
    g.win_open = 1;
    atomic_store(&g.win_live, 1);
    /* a shape sighted after the control thread read novel_wanted and before win_live went up
     * asked for a window again: this one serves it (its pending count holds the window open
     * until its replays are recorded), so the request is dropped here, not served by a second
     * window after this one (seen on a loaded machine: one window too many) */
    atomic_store(&g.novel_wanted, 0);
}

static void pinj_window_close(void) {
    if (!g.win_open) return;
    atomic_store(&g.win_live, 0);
    ptrace_window w;
    w.start_ns = g.win_start_ns;
    w.end_ns = pinject_now_ns();
    w.attach_us = (double)g.last_attach_ns / 1e3;
    g.last_attach_ns = 0;
    snprintf(w.reason, sizeof w.reason, "%s", g.win_reason);
    pinj_node_level(0);
    pinj_graph_trace(1);
    g.win_open = 0;
    if (g.cfg.between_detach) g.detach_at_ms = pinj_mono_ms() + PINJ_DETACH_DELAY_MS;
    /* a window opened before the capture started (at init) counts from t0 */
    if (atomic_load(&g.capturing) && w.end_ns > g.t0_ns) {
        if (w.start_ns < g.t0_ns) w.start_ns = g.t0_ns;
        pinj_host_window(&w);
        g.windows++;
        g.window_ns += w.end_ns - w.start_ns;
    }
}

/* Calibration hooks (pcalib.h) */
static void pinj_calib_on(void) { pinj_window_open("calibration"); }
static void pinj_calib_off(void) { pinj_window_close(); }
static int pinj_capture_active(void) { return atomic_load(&g.captures) > 0; }

static void pinj_calibrate(void) {
    g.calibrated = 1;
    if (!g.cfg.calibrate) { snprintf(g.calib.why, sizeof g.calib.why, "off (SPECPROF_CALIBRATE=0)"); return; }
    pcalib_hooks h = { pinj_calib_on, pinj_calib_off, g.cfg.between_graph ? pinj_graph_trace : NULL, pinj_capture_active };
    pinject_thread()->calib = 1;
    precord_skip_thread(pinject_thread()->tid);
    pcalib_run(g.dev, &h, &g.calib);
    pinject_thread()->calib = 0;
    if (!g.calib.ok) pinject_note("launch-cost calibration skipped: %s", g.calib.why);
}

static int pinj_rank(void) {
    const char *r = getenv("RANK");
    if (!r || !*r) r = getenv("LOCAL_RANK");
    if (r && *r) return atoi(r);
    return g.dev;
}

/* Opens the window: t0 now. Activities may already be on (no delay). Caller holds g.mu. */
static void pinj_start_locked(void) {
    if (atomic_load(&g.capturing) || atomic_load(&g.capture_done)) return;
    if (!atomic_load(&g.ctx_seen)) return;     /* started at the first context */
    g.t0_ns = pinject_now_ns();
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    g.t0_unix_ns = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
    g.ctx.pid = pinj_rank();
    g.ctx.t0_ns = g.t0_ns;
    g.start_wall_ms = pinj_mono_ms();
    atomic_store(&g.capturing, 1);
}

static void pinj_open_file(void) {
    char err[512];
    ptrace_header h;
    memset(&h, 0, sizeof h);
    h.format_version = PTRACE_FORMAT_VERSION;
    snprintf(h.tool_version, sizeof h.tool_version, "%s", PTRACE_TOOL_VERSION);
    gethostname(h.host, sizeof h.host - 1);
    h.pid_os = g.pid;
    h.rank = g.ctx.pid;
    const char *ws = getenv("WORLD_SIZE");
    h.world_size = ws && *ws ? atoi(ws) : 1;
    h.t0_ns = g.t0_ns;
    h.t0_unix_ns = g.t0_unix_ns;
    h.cupti_version = (int)g.cupti_version;
    int lite = g.cfg.mode == PINJ_MODE_LITE;
    /* lite: no device facts before the program's first CUDA call (we never initialise CUDA) */
    if ((!lite || plite_cuda_seen(NULL)) && pdevice_fill(&h, g.dev))
        pinject_note("device facts unavailable (libcuda entry points not found)");
    h.n_phases = pnvtx_phase_count(g.nvtx);
    for (int i = 0; i < h.n_phases && i < PTRACE_MAX_PHASES; i++)
        snprintf(h.phases[i], sizeof h.phases[i], "%s", pnvtx_phase_name(g.nvtx, i));
    h.delay_s = g.cfg.delay_s > 0 ? g.cfg.delay_s : -1;
    h.duration_s = g.cfg.duration_s > 0 ? g.cfg.duration_s : -1;
    h.flush_ms = g.cfg.flush_ms;
    h.buffer_mb = g.cfg.buffer_mb;
    snprintf(h.mode, sizeof h.mode, "%s", g.cfg.mode == PINJ_MODE_ALWAYS ? "always" : lite ? "lite" : "windows");
    /* CUPTI's timestamps on Linux are CLOCK_REALTIME ns (a header's t0_ns and t0_unix_ns differ
     * by ~0.2 us, traces/calib); lite mode reads CLOCK_MONOTONIC plus the offset to
     * CLOCK_REALTIME measured once at its start, so that both kinds of trace share one axis */
    snprintf(h.clock, sizeof h.clock, "%s", lite ? "CLOCK_REALTIME ns" : "CUPTI ns (CLOCK_REALTIME on Linux)");
    if (lite) {
        ptrace_lite l;
        memset(&l, 0, sizeof l);
        plite_stats(&l);
        snprintf(h.interposed, sizeof h.interposed, "%s", l.interposed);
        snprintf(h.capture_range, sizeof h.capture_range, "%s", l.capture_range);
    }
    h.window_ms = g.cfg.window_ms;
    h.period_ms = g.cfg.period_ms;
    h.shape_replays = g.cfg.shape_replays;
    h.window_max_ms = g.cfg.window_max_ms;
    snprintf(h.between, sizeof h.between, "%s", g.cfg.mode != PINJ_MODE_WINDOWS ? "none"
             : g.cfg.between_graph ? "graph" : g.cfg.between_detach ? "detach" : "none");
    if (lite) snprintf(h.records, sizeof h.records, "lite");
    else snprintf(h.records, sizeof h.records, "%s%s%s", g.cfg.records_all ? "all" : "fit", g.cfg.api_between ? "_api" : "",
                  g.cfg.api_driver_only ? "_driver" : "");
    h.compressed = g.cfg.gz_level > 0;
    h.calib = g.calib;
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t n = read(fd, h.cmd, sizeof h.cmd - 1);
        close(fd);
        for (ssize_t i = 0; i < n - 1; i++) if (!h.cmd[i]) h.cmd[i] = ' ';
        if (n > 0) h.cmd[n] = 0;
    }
    if (ptrace_out_open_gz(&g.out, g.cfg.dir, h.rank, (long)g.pid, g.cfg.gz_level, err, sizeof err)) {
        pinject_note("cannot write the trace: %s", err);
        atomic_store(&g.capture_done, 1);
        return;
    }
    g.out_open = 1;
    static char line[16384];
    int n = ptrace_write_header(line, sizeof line, &g.ctx, &h);
    pinj_emit(NULL, line, n);
    char pname[96];
    snprintf(pname, sizeof pname, "rank %d (pid %d)", h.rank, (int)g.pid);
    n = ptrace_write_process_name(line, sizeof line, &g.ctx, pname);
    pinj_emit(NULL, line, n);
    pinj_flush_wbuf();
    ptrace_out_block(&g.out);   /* the header decompresses on its own, also from a cut file */
}

/* Ends the capture: flush CUPTI, write the end event, rename. Control thread only. */
static void pinj_stop(const char *reason) {
    if (atomic_load(&g.capture_done)) return;
    if (atomic_load(&g.capturing) && !g.out_open) {
        if (!g.calibrated) snprintf(g.calib.why, sizeof g.calib.why, "the capture ended before it");
        pinj_open_file();
    }
    pinj_window_close();
    int calib_at_end = 0;
    /* always: the calibration runs now, the program's records all taken (not after a
     * signal: the program may be dying) */
    if (g.out_open && !g.calibrated && g.cfg.mode == PINJ_MODE_ALWAYS) {
        if (strncmp(reason, "signal", 6)) {
            pinj_calibrate();
            pinj_window_close();
        } else snprintf(g.calib.why, sizeof g.calib.why, "not run: the capture ended by a %s", reason);
        calib_at_end = 1;
    }
    /* lite: the interposer's cost, measured now on our own stream (not after a signal) */
    ptrace_lite lite;
    memset(&lite, 0, sizeof lite);
    if (g.out_open && g.cfg.mode == PINJ_MODE_LITE) {
        pinj_drain(0);   /* what completed so far, before the calibration's launches */
        if (strncmp(reason, "signal", 6) && g.cfg.calibrate) plite_calibrate(&lite);
        else snprintf(lite.calib_why, sizeof lite.calib_why, "%s", g.cfg.calibrate ? "not run: the capture ended by a signal"
                      : "off (SPECPROF_CALIBRATE=0)");
    }
    pinj_graph_trace(0);
    g.detach_at_ms = 0;
    /* --between detach: no attach after the end; a detach or an attach under way on a
     * program thread is waited for (bounded), a detach asked is taken back */
    atomic_store(&g.attach_wanted, 0);
    for (int waited = 0; waited < PINJ_DETACH_WAIT_MS; waited++) {
        int a = atomic_load(&g.att);
        if (a != PINJ_ATT_FINALIZING && a != PINJ_ATT_ATTACHING) break;
        struct timespec ts = { 0, 1000000 };
        nanosleep(&ts, NULL);
    }
    if (atomic_load(&g.att) == PINJ_ATT_PENDING) pinj_attach();
    if (atomic_load(&g.att) == PINJ_ATT_ON) pinj_attached_again();
    int live = atomic_load(&g.att) == PINJ_ATT_ON;
    if (live) cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    pinj_stopping = 1;
    pinj_drain(1);
    pinj_stopping = 0;
    atomic_store(&g.capture_done, 1);
    if (!atomic_load(&g.capturing))
        pinject_note("nothing recorded: the capture window never opened before the end (%s): %s", reason,
                     !atomic_load(&g.ctx_seen) ? "no CUDA context was created"
                     : g.cfg.start_sig ? "the start signal never came" : "the --delay had not passed");
    if (!g.out_open) return;
    size_t dropped_ctx = 0, d = 0;
    CUcontext ctxs[PINJ_MAX_CTX];
    pthread_mutex_lock(&g.mu);
    int nctx = g.n_contexts;
    memcpy(ctxs, g.contexts, (size_t)nctx * sizeof ctxs[0]);
    pthread_mutex_unlock(&g.mu);
    for (int i = 0; live && i < nctx; i++)
        if (cuptiActivityGetNumDroppedRecords(ctxs[i], 0, &d) == CUPTI_SUCCESS) dropped_ctx += d;
    if (live && cuptiActivityGetNumDroppedRecords(NULL, 0, &d) == CUPTI_SUCCESS) dropped_ctx += d;
    ptrace_end e;
    memset(&e, 0, sizeof e);
    e.dropped_records = atomic_load(&g.dropped_records) + (int64_t)dropped_ctx;
    e.dropped_host_events = atomic_load(&g.host_dropped);
    e.records = g.rec.records + g.host_records;
    e.has_calib = calib_at_end;
    e.calib = g.calib;
    snprintf(e.reason, sizeof e.reason, "%s", reason);
    e.end_ns = pinject_now_ns();
    pnccl_stats ns;
    pnccl_map_stats(g.nccl, &ns);
    e.nccl_calls = atomic_load(&g.nccl_calls);
    e.nccl_graph_nodes = ns.nodes_added + ns.clones_added;
    e.nccl_matched = g.rec.nccl_matched;
    pnvtx_stats vs;
    pnvtx_get_stats(g.nvtx, &vs);
    e.nvtx_ranges = vs.popped;
    e.graph_nodes_created = atomic_load(&g.nodes_created);
    e.graph_nodes_cloned = atomic_load(&g.nodes_cloned);
    e.windows = g.windows;
    e.window_ns = g.window_ns;
    e.graph_trace_records = g.rec.graph_trace;
    e.attaches = g.attaches;
    e.attach_ns = g.attach_ns;
    e.detaches = atomic_load(&g.detaches);
    e.detach_ns = atomic_load(&g.detach_ns);
    if (g.cfg.mode == PINJ_MODE_LITE) {
        e.lite = lite;
        plite_stats(&e.lite);
        /* NVTX ranges but not one runtime call through the interposer: the program calls a
         * runtime linked into itself (nvcc's default -cudart static), which lite mode cannot see */
        if (vs.popped + vs.pushed > 0 && !plite_cuda_seen(NULL) && !e.lite.kernel_launches) {
            e.lite.static_runtime = 1;
            pinject_note("lite mode saw %lld NVTX ranges but no CUDA runtime call through a shared libcudart: the program "
                         "seems to link the CUDA runtime statically (nvcc's default), which lite mode cannot see; build it "
                         "with -cudart shared, or use --mode always", (long long)(vs.pushed));
        }
    }
    e.bytes_in = g.out.bytes_in;
    e.bytes = g.out.bytes;
    static char line[4096];
    int n = ptrace_write_end(line, sizeof line, &g.ctx, &e);
    pinj_emit(NULL, line, n);
    pinj_flush_wbuf();
    char err[512];
    if (g.out_open && ptrace_out_finish(&g.out, err, sizeof err)) pinject_note("%s", err);
    else if (g.out_open && !g.cfg.quiet)
        fprintf(stderr, "specprof: pid %d: wrote %s (%lld records, %lld dropped, %lld incomplete, %lld windows, "
                "%.1f bytes/record, end: %s)\n",
                (int)g.pid, g.out.path_final, (long long)e.records, (long long)e.dropped_records,
                (long long)g.rec.incomplete, (long long)e.windows,
                e.records ? (double)g.out.bytes / (double)e.records : 0.0, reason);
    g.out_open = 0;
    if (g.bufs_lost)
        pinject_note("%lld activity buffers were not handed back by CUPTI before a detach (lost to the pool)",
                     (long long)g.bufs_lost);
    if (g.bufs_unparsed)
        pinject_note("%lld activity buffers handed back while CUPTI was detached at the end were not read "
                     "(they hold what completed after the last window's records were taken)", (long long)g.bufs_unparsed);
    if (g.attach_waits)
        pinject_note("--between detach: %lld windows waited for a program thread's NVTX range start to attach CUPTI "
                     "again, %lld attached; %lld detaches", (long long)g.attach_waits, (long long)g.attaches,
                     (long long)atomic_load(&g.detaches));
    if (atomic_load(&g.pool_exhausted))
        pinject_note("the activity buffer pool (%d MB) ran out %lld times: raise --buffer-mb or lower --flush-ms",
                     g.cfg.buffer_mb, (long long)atomic_load(&g.pool_exhausted));
}

/* Windows mode: opens and closes node-level windows; returns ms until the next change. */
static int64_t pinj_schedule(int64_t now) {
    if (!g.win_open && g.win_pending[0]) {   /* waiting for a program thread to attach CUPTI */
        char r[sizeof g.win_pending];
        memcpy(r, g.win_pending, sizeof r);
        pinj_window_open(r);
        if (g.win_open) now = pinj_mono_ms();
    }
    if (g.win_open) {
        int64_t last = atomic_load(&g.novel_last_ms);
        if (last + g.cfg.window_ms > g.win_until_ms) g.win_until_ms = last + g.cfg.window_ms;
        int pending = atomic_load(&g.shape_pending) > 0;
        if (pending && g.win_until_ms < now + 1) g.win_until_ms = now + 1;   /* a shape still short of its replays */
        int forced = g.win_until_ms > g.win_open_ms + g.cfg.window_max_ms;
        if (forced) g.win_until_ms = g.win_open_ms + g.cfg.window_max_ms;
        if (now >= g.win_until_ms) {
            pinj_window_close();
            /* no shape short of its replays: a request still standing is stale (a program
             * thread preempted between reading win_live and asking, its shape recorded since);
             * a shape that is still new asks again at its next sighting */
            if (atomic_load(&g.shape_pending) <= 0) atomic_store(&g.novel_wanted, 0);
            if (forced) {
                /* shapes that never come back (a graph captured and not launched) or names that
                 * change every time: forget who asked, and no shape window for a period */
                atomic_fetch_add(&g.shape_gen, 1);
                atomic_store(&g.shape_pending, 0);
                atomic_store(&g.novel_wanted, 0);
                g.quiet_until_ms = now + g.cfg.period_ms;
            }
        }
    }
    if (!g.win_open && g.detach_at_ms && now >= g.detach_at_ms) pinj_detach_request(now);
    if (!g.win_open) {
        if (atomic_load(&g.novel_wanted) && now >= g.quiet_until_ms) {
            atomic_store(&g.novel_wanted, 0);
            pinj_window_open("shape");
        } else if (now >= g.next_time_ms) {
            while (g.next_time_ms <= now) g.next_time_ms += g.cfg.period_ms;
            pinj_window_open("time");
        }
    }
    int64_t next = g.win_open ? g.win_until_ms : g.next_time_ms;
    if (!g.win_open && g.detach_at_ms && g.detach_at_ms < next) next = g.detach_at_ms;
    if (g.win_open && atomic_load(&g.shape_pending) > 0 && next > now + PINJ_NOVEL_WAKE_MS * 5) next = now + PINJ_NOVEL_WAKE_MS * 5;
    if (!g.win_open && atomic_load(&g.novel_wanted) && g.quiet_until_ms < next) next = g.quiet_until_ms;
    return next > now ? next - now : 1;
}

/* The file is opened once the start window is over and the launch cost is calibrated,
 * so that the header carries it; until then records stay in CUPTI's buffers. Returns the
 * ms to wait, 0 once the file is open (or cannot be). */
static int64_t pinj_begin_file(int64_t now) {
    int64_t until = g.start_wall_ms + g.cfg.window_ms;   /* the start window: window_ms from the capture's start */
    if (g.cfg.mode == PINJ_MODE_WINDOWS && g.win_open && now < until) return until - now;
    if (g.cfg.mode == PINJ_MODE_LITE) {
        /* the file waits for the first CUDA call (its device's facts go in the header) */
        if (!plite_cuda_seen(&g.dev)) return g.cfg.flush_ms;
        snprintf(g.calib.why, sizeof g.calib.why, "at the end (mode lite)");
        g.calibrated = 1;
        pinj_open_file();
        return 0;
    }
    if (!g.calibrated && g.cfg.mode == PINJ_MODE_ALWAYS) {
        /* always: a calibration now would switch recording off under the program for its
         * ~0.1 s (the H200 fault table lost every kernel of a short program that way); it
         * runs at the end instead, into the end record (pinj_stop, traces/FORMAT.md) */
        snprintf(g.calib.why, sizeof g.calib.why, "at the end (mode always)");
    } else if (!g.calibrated) {
        pinj_window_close();
        pinj_calibrate();
        g.next_time_ms = g.start_wall_ms + g.cfg.period_ms;   /* time windows every period from the start */
    }
    pinj_open_file();
    return 0;
}

static void *pinj_control(void *arg) {
    (void)arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    /* --delay counts from the launch (the launcher's clock), else from CUDA's start here */
    int64_t last_flush = pinj_mono_ms(), started_at = (int64_t)pinj_env_d("SPECPROF_LAUNCH_MONO_MS", 0);
    if (started_at <= 0 || started_at > last_flush) started_at = last_flush;
    int64_t wait_ms = g.cfg.flush_ms;
    for (;;) {
        struct pollfd pfd = { g.wake[0], POLLIN, 0 };
        poll(&pfd, 1, (int)(wait_ms < g.cfg.flush_ms ? wait_ms : g.cfg.flush_ms));
        char tmp[64];
        while (read(g.wake[0], tmp, sizeof tmp) > 0) {}
        if (atomic_load(&g.forked)) return NULL;
        int64_t now = pinj_mono_ms();
        wait_ms = g.cfg.flush_ms;
        /* capture start */
        if (!atomic_load(&g.capturing) && !atomic_load(&g.capture_done)) {
            int want = 0;
            if (g.cfg.start_sig) want = atomic_load(&g.start_signalled);
            else if (g.cfg.delay_s > 0) want = now - started_at >= (int64_t)(g.cfg.delay_s * 1000);
            if (want && !atomic_load(&g.start_requested)) {
                atomic_store(&g.start_requested, 1);
                if (g.cfg.mode != PINJ_MODE_LITE) pinj_window_open(g.cfg.mode == PINJ_MODE_ALWAYS ? "always" : "start");
            }
            if (atomic_load(&g.start_requested)) {
                pthread_mutex_lock(&g.mu);
                pinj_start_locked();
                pthread_mutex_unlock(&g.mu);
            }
        }
        /* capture end */
        if (atomic_load(&g.stop_requested)) {
            pinj_stop(g.stop_reason);
            atomic_store(&g.finished, 1);
            if (atomic_load(&g.stop_requested) == 2) return NULL;   /* process is exiting */
            atomic_store(&g.stop_requested, 0);
            continue;
        }
        if (atomic_load(&g.capturing) && !atomic_load(&g.capture_done)) {
            if (g.cfg.stop_sig && atomic_load(&g.stop_signalled)) { pinj_stop("signal stop"); continue; }
            if (g.cfg.duration_s > 0 && now - g.start_wall_ms >= (int64_t)(g.cfg.duration_s * 1000)) {
                pinj_stop("duration");
                continue;
            }
            if (!g.out_open) {
                int64_t w = pinj_begin_file(now);
                if (w > 0) { wait_ms = w; continue; }
                if (!g.out_open) continue;
            }
            if (g.cfg.mode == PINJ_MODE_WINDOWS) wait_ms = pinj_schedule(pinj_mono_ms());
            int block = 0;
            if (now - last_flush >= g.cfg.flush_ms) {
                if (atomic_load(&g.att) == PINJ_ATT_ON) cuptiActivityFlushAll(0);   /* not while a detach may run */
                if (atomic_load(&g.att) == PINJ_ATT_ON) pinj_clock_sync();   /* keeps the offset to CUPTI's clock */
                last_flush = now;
                block = 1;
            }
            pinj_drain(block);
            /* a probed replay is read within ms: the executable's next replay may be probed */
            if (g.cfg.mode == PINJ_MODE_LITE && plite_probe_pending()) wait_ms = 3;
        } else {
            pinj_drain(0);   /* returns buffers to the pool even outside the capture */
        }
    }
}

/* Asks the control thread to end the capture and waits (bounded) for the file. */
static void pinj_request_stop(const char *reason, int exiting) {
    if (!pinject_attached() || atomic_load(&g.capture_done) || !g.ctl_running) return;
    snprintf(g.stop_reason, sizeof g.stop_reason, "%s", reason);
    atomic_store(&g.finished, 0);
    atomic_store(&g.stop_requested, exiting ? 2 : 1);
    pinj_wake();
    for (int waited = 0; waited < PINJ_STOP_WAIT_MS && !atomic_load(&g.finished); waited += 5) {
        struct timespec ts = { 0, 5 * 1000000 };
        nanosleep(&ts, NULL);
    }
}

/* ---------- exits, signals, fork ---------- */

static void pinj_atexit(void) {
    if (getpid() != g.pid || atomic_load(&g.forked)) return;
    pinj_request_stop("exit", 1);
}

/* The signals that end a process and after which the trace is finished first: SIGTERM and
 * SIGINT (a server stopped), and the crashes (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT from
 * abort()): the records up to the fault are flushed, the end record says which signal, and
 * the signal is delivered again with the program's own disposition (the exit status and a
 * core dump stay what they would have been). The wait for the writer is bounded
 * (PINJ_STOP_WAIT_MS) in case the fault left a lock held. */
static const struct { int sig; const char *reason; } pinj_fatal[] = {
    {SIGTERM, "signal SIGTERM"}, {SIGINT, "signal SIGINT"}, {SIGSEGV, "signal SIGSEGV"},
    {SIGBUS, "signal SIGBUS"}, {SIGFPE, "signal SIGFPE"}, {SIGILL, "signal SIGILL"},
    {SIGABRT, "signal SIGABRT"},
};
#define PINJ_NFATAL (sizeof pinj_fatal / sizeof pinj_fatal[0])
static struct sigaction pinj_old_fatal[PINJ_NFATAL];

static void pinj_on_fatal_signal(int sig) {
    int saved = errno;
    size_t i = 0;
    while (i < PINJ_NFATAL && pinj_fatal[i].sig != sig) i++;
    /* not on the writer thread itself (it would wait for itself) */
    if (i < PINJ_NFATAL && getpid() == g.pid && !atomic_load(&g.forked) &&
        !(g.ctl_running && pthread_equal(pthread_self(), g.ctl)))
        pinj_request_stop(pinj_fatal[i].reason, 1);
    if (i < PINJ_NFATAL) sigaction(sig, &pinj_old_fatal[i], NULL);
    else signal(sig, SIG_DFL);
    errno = saved;
    raise(sig);   /* delivered with the old disposition once this handler returns (a fault
                     re-executes the instruction and meets it too) */
}

static void pinj_on_window_signal(int sig) {
    int saved = errno;
    if (sig == g.cfg.start_sig) atomic_store(&g.start_signalled, 1);
    if (sig == g.cfg.stop_sig && (sig != g.cfg.start_sig || atomic_load(&g.capturing))) atomic_store(&g.stop_signalled, 1);
    pinj_wake();
    errno = saved;
}

static void pinj_install(int sig, void (*fn)(int), struct sigaction *old, const char *why) {
    struct sigaction cur;
    if (sigaction(sig, NULL, &cur)) return;
    if (!(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == fn) return;   /* ours already (constructor) */
    if (cur.sa_handler != SIG_DFL || (cur.sa_flags & SA_SIGINFO)) {
        if (why) pinject_note("signal %d already has a handler in this program: %s", sig, why);
        return;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = fn;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(sig, &sa, old);
}

static void pinj_atfork_child(void) {
    /* the child has no control thread and must not touch the parent's file */
    atomic_store(&g.forked, 1);
    if (g.out_open) ptrace_out_abandon(&g.out);
    g.out_open = 0;
}

/* ---------- shapes: graph executables and NVTX phase shapes seen so far ---------- */

/* A graph executable or a phase shape was seen (program thread; lock-free). While it has
 * been recorded at node level fewer than shape_replays times it asks for a window, and a
 * window stays open while a shape that asked is still short of its replays (at most
 * window_max_ms): a loop whose iteration is longer than window_ms still gets its replays.
 * A sighting counts only inside a window (its records are in the trace). */
static void pinj_shape_seen(uint64_t key) {
    if (!key || g.cfg.mode != PINJ_MODE_WINDOWS || !g.cfg.shape_replays || !pinject_capturing() || pinject_thread()->calib)
        return;
    uint64_t h = key * 0x9E3779B97F4A7C15ull;
    unsigned i = (unsigned)(h >> 52) & (PINJ_SHAPES - 1);
    for (int probe = 0; probe < 64; probe++, i = (i + 1) & (PINJ_SHAPES - 1)) {
        uint64_t k = atomic_load_explicit(&g.shape_key[i], memory_order_acquire);
        if (k == 0) {
            uint64_t z = 0;
            if (!atomic_compare_exchange_strong(&g.shape_key[i], &z, key) && z != key) continue;
            k = key;
        }
        if (k != key) continue;
        if (atomic_load_explicit(&g.shape_seen[i], memory_order_relaxed) >= g.cfg.shape_replays) return;
        unsigned gen = atomic_load(&g.shape_gen);
        if (atomic_load_explicit(&g.win_live, memory_order_relaxed)) {
            atomic_store(&g.novel_last_ms, pinj_mono_ms());
            if (atomic_fetch_add(&g.shape_seen[i], 1) + 1 >= g.cfg.shape_replays) {
                unsigned want = gen;   /* recorded enough: no longer holds the window open */
                if (atomic_compare_exchange_strong(&g.shape_req[i], &want, 0)) atomic_fetch_sub(&g.shape_pending, 1);
            } else if (atomic_exchange(&g.shape_req[i], gen) != gen)
                atomic_fetch_add(&g.shape_pending, 1);
        } else {
            if (atomic_exchange(&g.shape_req[i], gen) != gen) atomic_fetch_add(&g.shape_pending, 1);
            if (!atomic_exchange(&g.novel_wanted, 1)) pinj_wake();
        }
        return;
    }
    /* table full near this slot: no window for this shape */
}

/* The shape of a phase range: its name without the values of the keys in
 * SPECPROF_SHAPE_IGNORE (default "ctx": the KV length grows every step), hashed. 0 when
 * the range is not a phase. */
static uint64_t pinj_phase_shape(const char *name) {
    char ph[32];
    if (!name || !pnvtx_phase_of(g.nvtx, name, ph, sizeof ph)) return 0;
    uint64_t h = 1469598103934665603ull;
    const char *p = name;
    while (*p) {
        const char *w = p;
        while (*p && *p != ' ') p++;
        size_t n = (size_t)(p - w);
        const char *eq = memchr(w, '=', n);
        int skip = 0;
        if (eq) {
            size_t kl = (size_t)(eq - w);
            for (const char *ig = g.cfg.shape_ignore; *ig && !skip;) {
                const char *c = strchr(ig, ',');
                size_t il = c ? (size_t)(c - ig) : strlen(ig);
                skip = il == kl && !strncmp(ig, w, kl);
                ig += il + (c ? 1 : 0);
            }
        }
        for (size_t j = 0; j < (skip ? (size_t)(eq - w) : n); j++) h = (h ^ (unsigned char)w[j]) * 1099511628211ull;
        h = (h ^ ' ') * 1099511628211ull;
        while (*p == ' ') p++;
    }
    return h & ~(1ull << 63);   /* bit 63 marks graph executables */
}

/* ---------- CUPTI callbacks ---------- */

static void pinj_api_enter(CUpti_CallbackDomain dom, CUpti_CallbackId cbid, const CUpti_CallbackData *d) {
    pinject_tls *t = pinject_thread();
    pnvtx_on_launch(g.nvtx, &t->nvtx, d->correlationId);
    const ptrace_nccl *cur = pnccl_thread_current(&t->nccl);
    if (cur) pnccl_map_add_corr(g.nccl, d->correlationId, cur);
    int graph_launch = dom == CUPTI_CB_DOMAIN_RUNTIME_API
        ? (cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000 || cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000)
        : (cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch || cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz);
    if (graph_launch && d->functionParams) {
        /* both cudaGraphLaunch_v10000_params and cuGraphLaunch_params start with the exec */
        CUgraphExec exec = *(CUgraphExec const *)d->functionParams;
        uint32_t id = 0;
        if (exec && cuptiGetGraphExecId(exec, &id) == CUPTI_SUCCESS) {
            precord_note_graph_launch(d->correlationId, id);
            pinj_shape_seen((uint64_t)id | 1ull << 63);
        }
    }
}

/* Graph captures in progress, so that the calibration keeps out of them. The runtime's
 * capture calls run the driver's inside them: a depth per thread counts each once. */
static void pinj_capture_api(int begin, int enter) {
    pinject_tls *t = pinject_thread();
    if (t->calib) return;   /* the calibration's own captures */
    if (enter) {
        if (t->cap_depth++ == 0 && begin) { t->captures++; atomic_fetch_add(&g.captures, 1); }
    } else {
        if (t->cap_depth > 0 && --t->cap_depth == 0 && !begin && t->captures > 0) {
            t->captures--;
            atomic_fetch_sub(&g.captures, 1);
        }
    }
}

static void pinj_resource(CUpti_CallbackId cbid, const CUpti_ResourceData *r) {
    switch (cbid) {
    case CUPTI_CBID_RESOURCE_CONTEXT_CREATED: {
        uint32_t dev = 0;
        cuptiGetDeviceId(r->context, &dev);
        pthread_mutex_lock(&g.mu);
        if (g.n_contexts < PINJ_MAX_CTX) g.contexts[g.n_contexts++] = r->context;
        if (!atomic_load(&g.ctx_seen)) { g.dev = (int)dev; atomic_store(&g.ctx_seen, 1); }
        if (atomic_load(&g.start_requested)) pinj_start_locked();
        pthread_mutex_unlock(&g.mu);
        pinj_wake();
        break;
    }
    case CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING: {
        size_t d = 0;
        if (cuptiActivityGetNumDroppedRecords(r->context, 0, &d) == CUPTI_SUCCESS && d)
            atomic_fetch_add(&g.dropped_records, (long long)d);
        pthread_mutex_lock(&g.mu);
        for (int i = 0; i < g.n_contexts; i++)
            if (g.contexts[i] == r->context) { g.contexts[i] = g.contexts[--g.n_contexts]; break; }
        pthread_mutex_unlock(&g.mu);
        break;
    }
    case CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED: {
        const CUpti_GraphData *gd = r->resourceDescriptor;
        if (pinject_thread()->calib) break;   /* the calibration's own graphs */
        const ptrace_nccl *cur = pnccl_thread_current(&pinject_thread()->nccl);
        atomic_fetch_add(&g.nodes_created, 1);
        uint64_t id = 0;
        if (cur && gd && cuptiGetGraphNodeId(gd->node, &id) == CUPTI_SUCCESS)
            if (pnccl_map_add_node(g.nccl, id, cur)) pinject_note("NCCL graph-node table full: node %llu not matched", (unsigned long long)id);
        break;
    }
    case CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED: {
        const CUpti_GraphData *gd = r->resourceDescriptor;
        uint64_t o = 0, c = 0;
        if (pinject_thread()->calib) break;
        atomic_fetch_add(&g.nodes_cloned, 1);
        if (gd && gd->originalNode && cuptiGetGraphNodeId(gd->originalNode, &o) == CUPTI_SUCCESS &&
            cuptiGetGraphNodeId(gd->node, &c) == CUPTI_SUCCESS)
            pnccl_map_clone_node(g.nccl, o, c);
        break;
    }
    case CUPTI_CBID_RESOURCE_GRAPHNODE_DESTROY_STARTING: {
        const CUpti_GraphData *gd = r->resourceDescriptor;
        uint64_t id = 0;
        if (gd && cuptiGetGraphNodeId(gd->node, &id) == CUPTI_SUCCESS) pnccl_map_forget_node(g.nccl, id);
        break;
    }
    case CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED: {
        const CUpti_GraphData *gd = r->resourceDescriptor;
        if (!gd || !pinject_capturing() || pinject_thread()->calib) break;
        ptrace_graphexec ge;
        memset(&ge, 0, sizeof ge);
        ge.ts_ns = pinject_now_ns();
        ge.nodes = -1;
        ge.thread = pinject_thread()->tid;
        if (gd->graph) cuptiGetGraphId(gd->graph, &ge.graph_id);
        if (gd->graphExec) cuptiGetGraphExecId(gd->graphExec, &ge.graph_exec_id);
        pinj_host_graphexec(&ge);
        break;
    }
    default:
        break;
    }
}

/* Message of NVTX event attributes (ASCII, wide narrowed, or registered string). */
static const char *pinj_nvtx_msg(const nvtxEventAttributes_t *a, char *buf, size_t cap) {
    if (!a) return "";
    switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII: return a->message.ascii ? a->message.ascii : "";
    case NVTX_MESSAGE_TYPE_UNICODE: {
        size_t i = 0;
        for (const wchar_t *w = a->message.unicode; w && *w && i + 1 < cap; w++) buf[i++] = *w < 128 ? (char)*w : '?';
        buf[i] = 0;
        return buf;
    }
    case NVTX_MESSAGE_TYPE_REGISTERED:
        pnvtx_string_find(g.nvtx, (uint64_t)(uintptr_t)a->message.registered, buf, cap);
        return buf;
    default: return "";
    }
}

/* A range that ended inside a window (or in always mode) is written. */
static void pinj_range_closed(const pnvtx_closed *c, int64_t tid) {
    if (!pinject_recording()) return;
    /* lite --capture-range: a range that began before the range opened is cut, not written */
    if (g.cfg.mode == PINJ_MODE_LITE && plite_range_mode() && !plite_range_open_since(c->start_ns)) return;
    pinj_hev e;
    e.u.range.has_launches = 0;
    e.u.range.launches = e.u.range.graph_launches = 0;
    if (g.cfg.mode == PINJ_MODE_LITE && c->push_pop) {   /* launches on this thread while it was open */
        uint64_t now[2];
        plite_thread_counts(now);
        e.u.range.has_launches = 1;
        e.u.range.launches = (int64_t)(now[0] - c->mark[0]);
        e.u.range.graph_launches = (int64_t)(now[1] - c->mark[1]);
    }
    e.kind = PINJ_HEV_RANGE;
    e.u.range.start_ns = c->start_ns;
    e.u.range.end_ns = c->end_ns;
    e.u.range.tid = tid;
    e.u.range.push_pop = c->push_pop;
    memcpy(e.u.range.name, c->name, sizeof e.u.range.name);
    e.u.range.name[sizeof e.u.range.name - 1] = 0;
    snprintf(e.u.range.domain, sizeof e.u.range.domain, "%s", c->domain);
    pinj_host_push(&e);
}

/* An NVTX push (any domain): a phase range of a shape not yet recorded asks for a window. */
static void pinj_pushed(const char *name) {
    if (g.cfg.mode == PINJ_MODE_WINDOWS && g.cfg.shape_replays) pinj_shape_seen(pinj_phase_shape(name));
}

/* ---------- NVTX: our own injection (NVTX_INJECTION64_PATH) ----------
 * NVTX calls reach these through the function table NVTX hands its injection library
 * (InitializeInjectionNvtx2 below), whether CUPTI is attached or not: the range stacks stay
 * right across windows (CUPTI is detached between them) and no CUPTI call is made. Each
 * handler is a table update under pnvtx's lock, as CUPTI's NVTX callback was. */
static int pinj_nvtx_ready(void) { return g.nvtx && !atomic_load_explicit(&g.forked, memory_order_relaxed); }

static void pinj_nvtx_push(const char *msg, int dom) {
    if (!pinj_nvtx_ready()) return;
    pinj_nvtx_attach_point();   /* before the range's start time: the attach is not in the range */
    pinject_tls *t = pinject_thread();
    uint32_t seq = pnvtx_push(g.nvtx, &t->nvtx, msg ? msg : "", dom, pinject_now_ns());
    if (g.cfg.mode == PINJ_MODE_LITE && t->nvtx.depth > 0 && t->nvtx.f[t->nvtx.depth - 1].seq == seq)
        plite_thread_counts(t->nvtx.f[t->nvtx.depth - 1].mark);
    pinj_pushed(msg);
}

static void pinj_nvtx_pop(int dom) {
    if (!pinj_nvtx_ready()) return;
    pinject_tls *t = pinject_thread();
    pnvtx_closed c;
    if (pnvtx_pop(g.nvtx, &t->nvtx, dom, pinject_now_ns(), &c)) pinj_range_closed(&c, t->tid);
    if (g.cfg.mode == PINJ_MODE_LITE) plite_popped();
}

static nvtxRangeId_t pinj_nvtx_start(const char *msg, int dom) {
    if (pinj_nvtx_ready()) pinj_nvtx_attach_point();
    nvtxRangeId_t id = (nvtxRangeId_t)atomic_fetch_add(&g.nvtx_ids, 1) + 1;
    if (pinj_nvtx_ready()) pnvtx_start(g.nvtx, (uint64_t)id, msg ? msg : "", dom, pinject_now_ns());
    return id;
}

static void pinj_nvtx_end(nvtxRangeId_t id) {
    if (!pinj_nvtx_ready()) return;
    pnvtx_closed c;
    if (pnvtx_end(g.nvtx, (uint64_t)id, pinject_now_ns(), &c)) pinj_range_closed(&c, pinject_thread()->tid);
}

static int pinj_dom(nvtxDomainHandle_t d) { return pinj_nvtx_ready() ? pnvtx_domain_index(g.nvtx, (uint64_t)(uintptr_t)d) : 0; }

static void pinj_narrow(const wchar_t *w, char *buf, size_t cap) {
    size_t i = 0;
    for (; w && *w && i + 1 < cap; w++) buf[i++] = *w < 128 ? (char)*w : '?';
    buf[i] = 0;
}

/* Handles we give out for domains and registered strings: addresses in this block, never
 * dereferenced by NVTX or by the program. */
#define PINJ_NVTX_HANDLES 65536
static char pinj_handle_block[PINJ_NVTX_HANDLES];
static atomic_uint pinj_handles_used;
static void *pinj_new_handle(void) {
    unsigned i = atomic_fetch_add(&pinj_handles_used, 1);
    return &pinj_handle_block[i < PINJ_NVTX_HANDLES ? i : PINJ_NVTX_HANDLES - 1];
}

static int NVTX_API pinj_h_push_a(const char *m) { pinj_nvtx_push(m, 0); return 0; }
static int NVTX_API pinj_h_push_w(const wchar_t *m) { char b[PNVTX_NAME_MAX]; pinj_narrow(m, b, sizeof b); pinj_nvtx_push(b, 0); return 0; }
static int NVTX_API pinj_h_push_ex(const nvtxEventAttributes_t *a) { char b[PNVTX_NAME_MAX]; pinj_nvtx_push(pinj_nvtx_msg(a, b, sizeof b), 0); return 0; }
static int NVTX_API pinj_h_pop(void) { pinj_nvtx_pop(0); return 0; }
static nvtxRangeId_t NVTX_API pinj_h_start_a(const char *m) { return pinj_nvtx_start(m, 0); }
static nvtxRangeId_t NVTX_API pinj_h_start_w(const wchar_t *m) { char b[PNVTX_NAME_MAX]; pinj_narrow(m, b, sizeof b); return pinj_nvtx_start(b, 0); }
static nvtxRangeId_t NVTX_API pinj_h_start_ex(const nvtxEventAttributes_t *a) { char b[PNVTX_NAME_MAX]; return pinj_nvtx_start(pinj_nvtx_msg(a, b, sizeof b), 0); }
static void NVTX_API pinj_h_end(nvtxRangeId_t id) { pinj_nvtx_end(id); }
static int NVTX_API pinj_h_dpush(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) {
    char b[PNVTX_NAME_MAX];
    pinj_nvtx_push(pinj_nvtx_msg(a, b, sizeof b), pinj_dom(d));
    return 0;
}
static int NVTX_API pinj_h_dpop(nvtxDomainHandle_t d) { pinj_nvtx_pop(pinj_dom(d)); return 0; }
static nvtxRangeId_t NVTX_API pinj_h_dstart(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) {
    char b[PNVTX_NAME_MAX];
    return pinj_nvtx_start(pinj_nvtx_msg(a, b, sizeof b), pinj_dom(d));
}
static void NVTX_API pinj_h_dend(nvtxDomainHandle_t d, nvtxRangeId_t id) { (void)d; pinj_nvtx_end(id); }
static nvtxDomainHandle_t NVTX_API pinj_h_dcreate_a(const char *name) {
    nvtxDomainHandle_t h = (nvtxDomainHandle_t)pinj_new_handle();
    if (pinj_nvtx_ready()) pnvtx_domain_add(g.nvtx, (uint64_t)(uintptr_t)h, name ? name : "");
    return h;
}
static nvtxDomainHandle_t NVTX_API pinj_h_dcreate_w(const wchar_t *name) {
    char b[PNVTX_NAME_MAX];
    pinj_narrow(name, b, sizeof b);
    return pinj_h_dcreate_a(b);
}
static nvtxStringHandle_t NVTX_API pinj_h_dstring_a(nvtxDomainHandle_t d, const char *str) {
    (void)d;
    nvtxStringHandle_t h = (nvtxStringHandle_t)pinj_new_handle();
    if (pinj_nvtx_ready()) pnvtx_string_add(g.nvtx, (uint64_t)(uintptr_t)h, str ? str : "");
    return h;
}
static nvtxStringHandle_t NVTX_API pinj_h_dstring_w(nvtxDomainHandle_t d, const wchar_t *str) {
    char b[PNVTX_NAME_MAX];
    pinj_narrow(str, b, sizeof b);
    return pinj_h_dstring_a(d, b);
}

/* Puts our handlers into the tables of one NVTX instance; 1 on success (NVTX's contract). */
static int pinj_nvtx_install(NvtxGetExportTableFunc_t get) {
    const NvtxExportTableCallbacks *cb = get ? (const NvtxExportTableCallbacks *)get(NVTX_ETID_CALLBACKS) : NULL;
    if (!cb || !cb->GetModuleFunctionTable) return 0;
    NvtxFunctionTable t = NULL;
    unsigned int n = 0;
    static const struct { int id; NvtxFunctionPointer fn; } core[] = {
        {NVTX_CBID_CORE_RangePushA, (NvtxFunctionPointer)pinj_h_push_a}, {NVTX_CBID_CORE_RangePushW, (NvtxFunctionPointer)pinj_h_push_w},
        {NVTX_CBID_CORE_RangePushEx, (NvtxFunctionPointer)pinj_h_push_ex}, {NVTX_CBID_CORE_RangePop, (NvtxFunctionPointer)pinj_h_pop},
        {NVTX_CBID_CORE_RangeStartA, (NvtxFunctionPointer)pinj_h_start_a}, {NVTX_CBID_CORE_RangeStartW, (NvtxFunctionPointer)pinj_h_start_w},
        {NVTX_CBID_CORE_RangeStartEx, (NvtxFunctionPointer)pinj_h_start_ex}, {NVTX_CBID_CORE_RangeEnd, (NvtxFunctionPointer)pinj_h_end},
    }, core2[] = {
        {NVTX_CBID_CORE2_DomainRangePushEx, (NvtxFunctionPointer)pinj_h_dpush}, {NVTX_CBID_CORE2_DomainRangePop, (NvtxFunctionPointer)pinj_h_dpop},
        {NVTX_CBID_CORE2_DomainRangeStartEx, (NvtxFunctionPointer)pinj_h_dstart}, {NVTX_CBID_CORE2_DomainRangeEnd, (NvtxFunctionPointer)pinj_h_dend},
        {NVTX_CBID_CORE2_DomainCreateA, (NvtxFunctionPointer)pinj_h_dcreate_a}, {NVTX_CBID_CORE2_DomainCreateW, (NvtxFunctionPointer)pinj_h_dcreate_w},
        {NVTX_CBID_CORE2_DomainRegisterStringA, (NvtxFunctionPointer)pinj_h_dstring_a},
        {NVTX_CBID_CORE2_DomainRegisterStringW, (NvtxFunctionPointer)pinj_h_dstring_w},
    };
    if (!cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &t, &n) || !t) return 0;
    for (size_t i = 0; i < sizeof core / sizeof core[0]; i++)
        if ((unsigned)core[i].id < n && t[core[i].id]) *t[core[i].id] = core[i].fn;
    t = NULL; n = 0;
    if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &t, &n) && t)
        for (size_t i = 0; i < sizeof core2 / sizeof core2[0]; i++)
            if ((unsigned)core2[i].id < n && t[core2[i].id]) *t[core2[i].id] = core2[i].fn;
    return 1;
}

static void CUPTIAPI pinj_callback(void *ud, CUpti_CallbackDomain dom, CUpti_CallbackId cbid, const void *data) {
    (void)ud;
    if (atomic_load(&g.forked) || !data) return;
    /* --between detach: counted in while we may call CUPTI here (a detach waits for us);
     * nothing done while CUPTI is being detached or attached */
    if (!pinject_cupti_hold()) return;
    pinj_callback_held(dom, cbid, data);
    pinject_cupti_release();
}

static void pinj_callback_held(CUpti_CallbackDomain dom, CUpti_CallbackId cbid, const void *data) {
    switch (dom) {
    case CUPTI_CB_DOMAIN_RUNTIME_API:
    case CUPTI_CB_DOMAIN_DRIVER_API: {
        const CUpti_CallbackData *d = data;
        /* at a runtime API's exit only, as Kineto: a driver call's exit is often inside a
         * runtime call, whose own exit would then run in a CUPTI already torn down (on the
         * H200, finalizing at driver exits corrupted the heap of every PyTorch process) */
        unsigned char k = cbid < (dom == CUPTI_CB_DOMAIN_RUNTIME_API ? CUPTI_RUNTIME_TRACE_CBID_SIZE : CUPTI_DRIVER_TRACE_CBID_SIZE)
                              ? (dom == CUPTI_CB_DOMAIN_RUNTIME_API ? g.rt_cb : g.drv_cb)[cbid] : 0;
        if (dom == CUPTI_CB_DOMAIN_RUNTIME_API && d->callbackSite == CUPTI_API_EXIT &&
            atomic_load_explicit(&g.att, memory_order_relaxed) == PINJ_ATT_PENDING &&
            ((k & PINJ_SYNC) || g.cfg.detach_any_exit)) {
            pinj_detach_here();
            return;
        }
        if (k & (PINJ_CAPTURE_BEGIN | PINJ_CAPTURE_END)) {
            pinj_capture_api(!!(k & PINJ_CAPTURE_BEGIN), d->callbackSite == CUPTI_API_ENTER);
            break;
        }
        /* while a detach is asked every API calls back: only the ones we follow count */
        if (d->callbackSite == CUPTI_API_ENTER &&
            ((k & PINJ_CB_ALWAYS) || ((k & PINJ_CB_WINDOW) && atomic_load_explicit(&g.win_live, memory_order_relaxed))))
            pinj_api_enter(dom, cbid, d);
        break;
    }
    case CUPTI_CB_DOMAIN_RESOURCE: pinj_resource(cbid, data); break;
    default: break;
    }
}

/* What we do with an API, by name, so that new CUDA versions' variants are followed too:
 * launches, copies and sets (callback inside windows, for the NVTX/NCCL link, and an API
 * record), graph launches (callback always: graph-level records and new executables;
 * record), blocking syncs (record only: the fit tells waits from launch cost), graph
 * capture begin/end (callback always, for the calibration). Everything else: nothing
 * (--records all adds every API record, no callbacks). */
static unsigned char pinj_classify(const char *n) {
    static const char *launch[] = { "cudaLaunch", "__cudaLaunch", "cudaMemcpy", "cudaMemset", "cuLaunch", "cuMemcpy", "cuMemset" };
    static const char *graph[] = { "cudaGraphLaunch", "cuGraphLaunch" };
    static const char *sync[] = { "cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize",
                                  "cuStreamSynchronize", "cuCtxSynchronize", "cuEventSynchronize" };
    for (size_t i = 0; i < sizeof graph / sizeof graph[0]; i++)
        if (!strncmp(n, graph[i], strlen(graph[i]))) return PINJ_CB_ALWAYS | PINJ_REC | PINJ_GRAPH_LAUNCH;
    for (size_t i = 0; i < sizeof launch / sizeof launch[0]; i++)
        if (!strncmp(n, launch[i], strlen(launch[i]))) return PINJ_CB_WINDOW | PINJ_REC;
    for (size_t i = 0; i < sizeof sync / sizeof sync[0]; i++)
        if (!strncmp(n, sync[i], strlen(sync[i]))) return PINJ_REC | PINJ_SYNC;
    if (!strncmp(n, "cudaStreamBeginCapture", 22) || !strncmp(n, "cuStreamBeginCapture", 20)) return PINJ_CB_ALWAYS | PINJ_CAPTURE_BEGIN;
    if (!strncmp(n, "cudaStreamEndCapture", 20) || !strncmp(n, "cuStreamEndCapture", 18)) return PINJ_CB_ALWAYS | PINJ_CAPTURE_END;
    return 0;
}

/* Classifies every cbid and turns on the callbacks that stay on while CUPTI is attached. */
static void pinj_classify_apis(void) {
    for (int dom = 0; dom < 2; dom++) {
        CUpti_CallbackDomain d = dom ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API;
        int size = dom ? CUPTI_DRIVER_TRACE_CBID_SIZE : CUPTI_RUNTIME_TRACE_CBID_SIZE;
        unsigned char *tab = dom ? g.drv_cb : g.rt_cb;
        if (!dom && g.cfg.api_driver_only) continue;   /* the runtime's calls reach the driver's */
        for (int cb = 1; cb < size; cb++) {
            const char *n = NULL;
            if (cuptiGetCallbackName(d, (uint32_t)cb, &n) != CUPTI_SUCCESS || !n) continue;
            tab[cb] = pinj_classify(n);
        }
    }
    pinj_enable_always();
}

/* ---------- init ---------- */

static void pinj_init_lite(void);
static void pinj_start_threads(void);

/* The engine both start-ups share (NVTX stacks, the NCCL map, the host queues, the writer's
 * buffer); -1, noted once and the capture refused, when it cannot be had. */
static int pinj_engine_alloc(void) {
    char err[256];
    g.nvtx = pnvtx_create(14, 19, g.cfg.phases, err, sizeof err);
    if (!g.nvtx) {
        pinject_note("SPECPROF_PHASES: %s; using the default phases", err);
        g.nvtx = pnvtx_create(14, 19, NULL, err, sizeof err);
    }
    g.nccl = pnccl_map_create(14, 17);
    g.host_q = malloc(PINJ_HEV_CAP * sizeof *g.host_q);
    g.host_spare = malloc(PINJ_HEV_CAP * sizeof *g.host_spare);
    g.wbuf = malloc(PINJ_WBUF_BYTES);
    if (!g.nvtx || !g.nccl || !g.host_q || !g.host_spare || !g.wbuf) {
        pinject_note("out of memory at start: nothing recorded");
        atomic_store(&g.refused, 1);
        return -1;
    }
    return 0;
}

static void pinj_init(void) {
    pinj_read_config(&g.cfg);
    g.pid = getpid();
    g.wake[0] = g.wake[1] = -1;
    atomic_store(&g.shape_gen, 1);
    pthread_mutex_init(&g.mu, NULL);
    pthread_mutex_init(&g.host_mu, NULL);
    if (g.cfg.mode == PINJ_MODE_LITE) { pinj_init_lite(); return; }
    CUptiResult r = cuptiGetVersion(&g.cupti_version);
    if (r != CUPTI_SUCCESS) {
        pinject_note("CUPTI unusable (cuptiGetVersion: %s): nothing recorded", pinj_cupti_err(r));
        atomic_store(&g.refused, 1);
        return;
    }
    if (g.cupti_version < CUPTI_API_VERSION) {
        Dl_info di;
        const char *path = dladdr((void *)cuptiGetVersion, &di) && di.dli_fname ? di.dli_fname : "libcupti";
        pinject_note("the loaded CUPTI (%s) has API version %u, older than %d that libspecprof was built with: "
                     "its record layouts may differ, so nothing is recorded (rebuild specprof against this CUDA, or put "
                     "the newer libcupti first in LD_LIBRARY_PATH)", path, g.cupti_version, CUPTI_API_VERSION);
        atomic_store(&g.refused, 1);
        return;
    }
    if (pinj_engine_alloc())
        return;
    g.n_bufs_max = (int)(((size_t)g.cfg.buffer_mb << 20) / PINJ_BUF_BYTES);
    if (g.n_bufs_max > PINJ_MAX_BUFS) g.n_bufs_max = PINJ_MAX_BUFS;
    CUpti_SubscriberParams sp;
    char old[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 64];
    memset(&sp, 0, sizeof sp);
    memset(old, 0, sizeof old);
    sp.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
    sp.subscriberName = "specprof";
    sp.oldSubscriberName = old;
    sp.oldSubscriberSize = sizeof old;
    r = cuptiSubscribe_v2(&g.sub, (CUpti_CallbackFunc)pinj_callback, NULL, &sp);
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
        pinject_note("another CUPTI tool is attached to this process (%s); only one may be, so specprof records "
                     "nothing here and the program runs on. Run without nsys/ncu/torch.profiler to use specprof.",
                     old[0] ? old : "nsys, ncu, cuda-gdb, compute-sanitizer or torch.profiler");
        atomic_store(&g.refused, 1);
        return;
    }
    if (r != CUPTI_SUCCESS) {
        pinject_note("cuptiSubscribe failed (%s): nothing recorded, the program runs on", pinj_cupti_err(r));
        atomic_store(&g.refused, 1);
        return;
    }
    pinj_clock_sync();
    cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
    cuptiEnableDomain(1, g.sub, CUPTI_CB_DOMAIN_RESOURCE);
    /* NVTX comes through our own NVTX injection (pinj_nvtx_*), attached or not */
    pinj_classify_apis();
    r = cuptiActivityRegisterCallbacks(pinj_buf_request, pinj_buf_complete);
    if (r != CUPTI_SUCCESS) {
        pinject_note("cuptiActivityRegisterCallbacks failed (%s): nothing recorded", pinj_cupti_err(r));
        cuptiUnsubscribe(g.sub);
        atomic_store(&g.refused, 1);
        return;
    }
    if (pipe(g.wake) == 0) {
        fcntl(g.wake[0], F_SETFL, O_NONBLOCK); fcntl(g.wake[1], F_SETFL, O_NONBLOCK);
        fcntl(g.wake[0], F_SETFD, FD_CLOEXEC); fcntl(g.wake[1], F_SETFD, FD_CLOEXEC);
    }
    atomic_store(&g.attached, 1);
    /* no delay and no start signal: record from the first context on */
    if (!g.cfg.start_sig && g.cfg.delay_s <= 0) {
        atomic_store(&g.start_requested, 1);
        pinj_window_open(g.cfg.mode == PINJ_MODE_ALWAYS ? "always" : "start");
    }
    pinj_start_threads();
}

/* Lite mode: the same engine (NVTX, NCCL, host queue, writer thread, endings) with not one
 * CUPTI call: no subscriber, no activity callbacks, no cuptiGetTimestamp (the clock is
 * CLOCK_MONOTONIC plus its offset to CLOCK_REALTIME, CUPTI's base on Linux). The capture
 * starts now; the file opens at the first CUDA call (plite.c). */
static void pinj_init_lite(void) {
    if (pinj_engine_alloc())
        return;
    struct timespec rt;
    int64_t a = pinj_mono_ns();
    clock_gettime(CLOCK_REALTIME, &rt);
    int64_t b = pinj_mono_ns();
    atomic_store(&g.clock_off_ns, (int64_t)rt.tv_sec * 1000000000LL + rt.tv_nsec - (a + (b - a) / 2));
    atomic_store(&g.att, PINJ_ATT_OFF);   /* nothing may call CUPTI (pinject_cupti_hold says no) */
    if (pipe(g.wake) == 0) {
        fcntl(g.wake[0], F_SETFL, O_NONBLOCK); fcntl(g.wake[1], F_SETFL, O_NONBLOCK);
        fcntl(g.wake[0], F_SETFD, FD_CLOEXEC); fcntl(g.wake[1], F_SETFD, FD_CLOEXEC);
    }
    plite_start(g.nvtx, pinj_wake);
    atomic_store(&g.attached, 1);
    atomic_store(&g.ctx_seen, 1);
    if (!g.cfg.start_sig && g.cfg.delay_s <= 0) {
        atomic_store(&g.start_requested, 1);
        pthread_mutex_lock(&g.mu);
        pinj_start_locked();
        pthread_mutex_unlock(&g.mu);
    }
    pinj_start_threads();
}

/* The writer thread, the exit and signal handlers (both modes). */
static void pinj_start_threads(void) {
    if (pthread_create(&g.ctl, NULL, pinj_control, NULL) == 0) g.ctl_running = 1;
    else pinject_note("cannot start the writer thread: nothing will be written");
    atexit(pinj_atexit);
    pthread_atfork(NULL, NULL, pinj_atfork_child);
    for (size_t i = 0; i < PINJ_NFATAL; i++)
        pinj_install(pinj_fatal[i].sig, pinj_on_fatal_signal, &pinj_old_fatal[i], NULL);
    if (g.cfg.start_sig) pinj_install(g.cfg.start_sig, pinj_on_window_signal, NULL, "the start signal will not be seen");
    if (g.cfg.stop_sig && g.cfg.stop_sig != g.cfg.start_sig)
        pinj_install(g.cfg.stop_sig, pinj_on_window_signal, NULL, "the stop signal will not be seen");
}

/* The signal handlers for --signal-start/--signal-stop must exist before the launcher
 * may send them, also in processes that have not initialised CUDA yet (LD_PRELOAD). */
__attribute__((constructor)) static void pinj_constructor(void) {
    const char *s = getenv("SPECPROF_START_SIGNAL"), *e = getenv("SPECPROF_STOP_SIGNAL");
    int ss = s ? atoi(s) : 0, es = e ? atoi(e) : 0;
    if (!getenv("SPECPROF_DIR")) return;
    g.cfg.start_sig = ss;
    g.cfg.stop_sig = es;
    g.cfg.quiet = 1;   /* config is read again at init; no notes before that */
    if (ss) pinj_install(ss, pinj_on_window_signal, NULL, NULL);
    if (es && es != ss) pinj_install(es, pinj_on_window_signal, NULL, NULL);
}

static void pinj_init_once(void) { pthread_once(&pinj_once, pinj_init); }

/* CUDA_INJECTION64_PATH entry point: called from cuInit. Returns 1 (success) always:
 * a failure to attach must not fail the program's CUDA initialisation. In lite mode (which
 * does not set CUDA_INJECTION64_PATH) it starts the engine without CUPTI all the same. */
__attribute__((visibility("default"))) int InitializeInjection(void) {
    pinj_init_once();
    return 1;
}

int pinject_lite(void) { return g.cfg.mode == PINJ_MODE_LITE; }

void pinject_lite_begin(void) {
    if (plite_enabled()) pinj_init_once();
}

/* NVTX_INJECTION64_PATH entry point (NVTX 2 and 3): our handlers go into this NVTX
 * instance's tables; then our subscriber attaches (if CUDA has not done so yet).
 * Attaching at the first NVTX call (before CUDA starts) keeps the ranges a program opens
 * before its first CUDA call; SPECPROF_NVTX_EARLY_INIT=0 waits for cuInit instead. */
__attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table) {
    const char *e = getenv("SPECPROF_NVTX_EARLY_INIT");
    if (!e || strcmp(e, "0")) pinj_init_once();
    return pinj_nvtx_install(get_export_table);
}

/* The NVTX 1 entry point: not supported (its ranges are not recorded). */
__attribute__((visibility("default"))) int InitializeInjectionNvtx(void *get_export_table) {
    (void)get_export_table;
    return 0;
}

/* NVTX extensions (payloads, memory): not recorded. */
__attribute__((visibility("default"))) int InitializeInjectionNvtxExtension(void *module_info) {
    (void)module_info;
    return 0;
}
