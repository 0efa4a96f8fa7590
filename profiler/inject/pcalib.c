/* pcalib.c: the launch-cost calibration (see pcalib.h). The kernel is PTX, JIT-compiled
 * by the driver for whatever GPU this is; the graphs are captured in thread-local mode on
 * our own non-blocking stream, so the program's streams and captures are not touched. It
 * does nothing while the program captures a graph (a call of ours could invalidate a
 * global-mode capture of theirs), and stops at the first driver error. */
#include "pcalib.h"
#include "pcalib_ptx.h"
#include "pinject.h"
#include <cuda.h>
#include <cupti.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char pcalib_ptx[] = PCALIB_PTX(PCALIB_KERNEL_NAME);

typedef struct {
    CUresult (*get_dev)(CUdevice *, int);
    CUresult (*pc_state)(CUdevice, unsigned *, int *);
    CUresult (*pc_retain)(CUcontext *, CUdevice);
    CUresult (*pc_release)(CUdevice);
    CUresult (*push)(CUcontext);
    CUresult (*pop)(CUcontext *);
    CUresult (*mod_load)(CUmodule *, const void *);
    CUresult (*mod_fn)(CUfunction *, CUmodule, const char *);
    CUresult (*mod_unload)(CUmodule);
    CUresult (*st_create)(CUstream *, unsigned);
    CUresult (*st_destroy)(CUstream);
    CUresult (*st_sync)(CUstream);
    CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                       void **, void **);
    CUresult (*cap_begin)(CUstream, CUstreamCaptureMode);
    CUresult (*cap_end)(CUstream, CUgraph *);
    CUresult (*instantiate)(CUgraphExec *, CUgraph, unsigned long long);
    CUresult (*g_launch)(CUgraphExec, CUstream);
    CUresult (*ge_destroy)(CUgraphExec);
    CUresult (*g_destroy)(CUgraph);
} pcalib_api;

static int pcalib_find(pcalib_api *a) {
    void *cu = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    struct { void **slot; const char *name; } t[] = {
        {(void **)&a->get_dev, "cuDeviceGet"}, {(void **)&a->pc_state, "cuDevicePrimaryCtxGetState"},
        {(void **)&a->pc_retain, "cuDevicePrimaryCtxRetain"}, {(void **)&a->pc_release, "cuDevicePrimaryCtxRelease_v2"},
        {(void **)&a->push, "cuCtxPushCurrent_v2"}, {(void **)&a->pop, "cuCtxPopCurrent_v2"},
        {(void **)&a->mod_load, "cuModuleLoadData"}, {(void **)&a->mod_fn, "cuModuleGetFunction"},
        {(void **)&a->mod_unload, "cuModuleUnload"}, {(void **)&a->st_create, "cuStreamCreate"},
        {(void **)&a->st_destroy, "cuStreamDestroy_v2"}, {(void **)&a->st_sync, "cuStreamSynchronize"},
        {(void **)&a->launch, "cuLaunchKernel"}, {(void **)&a->cap_begin, "cuStreamBeginCapture_v2"},
        {(void **)&a->cap_end, "cuStreamEndCapture"}, {(void **)&a->instantiate, "cuGraphInstantiateWithFlags"},
        {(void **)&a->g_launch, "cuGraphLaunch"}, {(void **)&a->ge_destroy, "cuGraphExecDestroy"},
        {(void **)&a->g_destroy, "cuGraphDestroy"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        void *p = cu ? dlsym(cu, t[i].name) : NULL;
        if (!p) p = dlsym(RTLD_DEFAULT, t[i].name);
        if (!p) return -1;
        *t[i].slot = p;
    }
    return 0;
}

/* 1 while the program captures a CUDA graph: no call of ours then (a global-mode capture of
 * theirs would be invalidated). */
static int pcalib_capturing(const pcalib_hooks *h) {
    return h->capture_active && h->capture_active();
}

/* A launch time in us the specprof command hands over in the environment (pclean.c), 0 when
 * absent or not a plausible one. */
static double pcalib_env_us(const char *name) {
    const char *v = getenv(name);
    double us = v && *v ? atof(v) : 0;
    return us > 0 && us < 1e6 ? us : 0;
}

typedef struct {
    pcalib_api *a;
    CUfunction fn;
    CUstream st;
    CUgraphExec g1, gn;
    const pcalib_hooks *h;
    ptrace_calib *c;
    unsigned char *sweep;   /* the swept arms' buffer (PCALIB_SWEEP_BYTES; NULL: none) */
    size_t sweep_pos;
} pcalib_run_ctx;

static volatile unsigned pcalib_sink;   /* keeps the sweep's work */

/* Median host time (us) of PCALIB_LAUNCHES calls of one kind: 0 kernel, 1 graph of 1
 * node, 2 graph of PCALIB_GRAPH_NODES nodes; 3 kernel with the sweep between launches
 * (pcalib_ptx.h). -1 on a driver error (c->why says which). */
static double pcalib_time(pcalib_run_ctx *x, int kind) {
    static int64_t t[PCALIB_LAUNCHES];
    pcalib_api *a = x->a;
    CUresult r = CUDA_SUCCESS;
    for (int i = -PCALIB_WARM; i < PCALIB_LAUNCHES && r == CUDA_SUCCESS; i++) {
        int64_t t0 = pcalib_now_ns();
        if (kind == 0 || kind == 3) r = a->launch(x->fn, 1, 1, 1, 1, 1, 1, 0, x->st, NULL, NULL);
        else r = a->g_launch(kind == 1 ? x->g1 : x->gn, x->st);
        int64_t t1 = pcalib_now_ns();
        if (i >= 0) t[i] = t1 - t0;
        if (kind == 3)
            pcalib_sink += pcalib_sweep(x->sweep, &x->sweep_pos, (int64_t)(PCALIB_SWEEP_GAP_US * 1e3), pcalib_now_ns);
        /* keep the queue short: the GPU runs each empty launch in a few us */
        if (i % PCALIB_SYNC_EVERY == PCALIB_SYNC_EVERY - 1 && r == CUDA_SUCCESS) r = a->st_sync(x->st);
    }
    if (r == CUDA_SUCCESS) r = a->st_sync(x->st);
    if (r != CUDA_SUCCESS) {
        snprintf(x->c->why, sizeof x->c->why, "%s failed (CUresult %d)", kind == 1 || kind == 2 ? "cuGraphLaunch" : "cuLaunchKernel", (int)r);
        return -1;
    }
    return pcalib_median_us(t, PCALIB_LAUNCHES);
}

/* The three kinds of launch in the current configuration; 0 or -1. */
static int pcalib_measure(pcalib_run_ctx *x, double *launch_us, double *g1_us, double *gn_us) {
    if (pcalib_capturing(x->h)) {
        snprintf(x->c->why, sizeof x->c->why, "the program began a CUDA graph capture");
        return -1;
    }
    if ((*launch_us = pcalib_time(x, 0)) < 0) return -1;
    if ((*g1_us = pcalib_time(x, 1)) < 0) return -1;
    if ((*gn_us = pcalib_time(x, 2)) < 0) return -1;
    return 0;
}

static CUresult pcalib_graph(pcalib_api *a, CUfunction fn, CUstream st, int nodes, CUgraph *g, CUgraphExec *e) {
    CUresult r = a->cap_begin(st, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
    for (int i = 0; i < nodes && r == CUDA_SUCCESS; i++) r = a->launch(fn, 1, 1, 1, 1, 1, 1, 0, st, NULL, NULL);
    CUgraph got = NULL;
    CUresult r2 = a->cap_end(st, &got);   /* always ends the capture, also after a failed launch */
    if (r == CUDA_SUCCESS) r = r2;
    if (r == CUDA_SUCCESS) r = a->instantiate(e, got, 0);
    *g = got;
    return r;
}

void pcalib_run(int dev, const pcalib_hooks *h, ptrace_calib *c) {
    memset(c, 0, sizeof *c);
    c->launches = PCALIB_LAUNCHES;
    c->graph_nodes = PCALIB_GRAPH_NODES;
    pcalib_api a;
    memset(&a, 0, sizeof a);
    if (pcalib_find(&a)) { snprintf(c->why, sizeof c->why, "driver API entry points not found"); return; }
    if (pcalib_capturing(h)) {
        snprintf(c->why, sizeof c->why, "the program was capturing a CUDA graph");
        return;
    }
    CUdevice d;
    unsigned flags = 0;
    int active = 0;
    CUcontext ctx = NULL, popped;
    CUmodule mod = NULL;
    CUstream st = NULL;
    CUgraph g1 = NULL, gn = NULL;
    CUgraphExec e1 = NULL, en = NULL;
    int pushed = 0, retained = 0;
    unsigned char *sweep_buf = NULL;
    CUresult r = a.get_dev(&d, dev);
    if (r == CUDA_SUCCESS) r = a.pc_state(d, &flags, &active);
    /* only the primary context the program already uses: never create a context */
    if (r == CUDA_SUCCESS && !active) { snprintf(c->why, sizeof c->why, "the program does not use the primary context"); goto done; }
    if (r == CUDA_SUCCESS) { r = a.pc_retain(&ctx, d); retained = r == CUDA_SUCCESS; }
    if (r == CUDA_SUCCESS) { r = a.push(ctx); pushed = r == CUDA_SUCCESS; }
    if (r == CUDA_SUCCESS) r = a.mod_load(&mod, pcalib_ptx);
    CUfunction fn = NULL;
    if (r == CUDA_SUCCESS) r = a.mod_fn(&fn, mod, PCALIB_KERNEL_NAME);
    if (r == CUDA_SUCCESS) r = a.st_create(&st, CU_STREAM_NON_BLOCKING);
    uint32_t sid = 0;
    if (r == CUDA_SUCCESS && cuptiGetStreamIdEx(ctx, st, 0, &sid) == CUPTI_SUCCESS) precord_skip_stream(sid);   /* not the program's */
    if (r == CUDA_SUCCESS) r = pcalib_graph(&a, fn, st, 1, &g1, &e1);
    if (r == CUDA_SUCCESS) r = pcalib_graph(&a, fn, st, PCALIB_GRAPH_NODES, &gn, &en);
    if (r != CUDA_SUCCESS) { snprintf(c->why, sizeof c->why, "setting up (module, stream, graphs): CUresult %d", (int)r); goto done; }
    sweep_buf = malloc(PCALIB_SWEEP_BYTES);
    if (sweep_buf) memset(sweep_buf, 1, PCALIB_SWEEP_BYTES);
    pcalib_run_ctx x = { &a, fn, st, e1, en, h, c, sweep_buf, 0 };
    /* nothing of ours on (graph-level records too are off for this part) */
    if (h->graph_trace) h->graph_trace(0);
    int bad = pcalib_measure(&x, &c->launch_off_us, &c->graph1_off_us, &c->graphn_off_us);
    /* the swept arms (pcalib_ptx.h), not while the program captures a graph (as pcalib_measure) */
    double off_swept = !bad && x.sweep && !pcalib_capturing(h) ? pcalib_time(&x, 3) : -1, on_swept = -1;
    if (h->graph_trace) {   /* back to the between-window configuration */
        h->graph_trace(1);
        double k;
        if (!bad) bad = pcalib_measure(&x, &k, &c->graph1_between_us, &c->graphn_between_us);
        c->has_between = !bad;
    }
    if (bad) goto done;
    struct timespec t0, t1, t2;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    h->window_on();
    clock_gettime(CLOCK_MONOTONIC, &t1);
    bad = pcalib_measure(&x, &c->launch_on_us, &c->graph1_on_us, &c->graphn_on_us);
    if (!bad && off_swept > 0 && !pcalib_capturing(h)) on_swept = pcalib_time(&x, 3);
    clock_gettime(CLOCK_MONOTONIC, &t2);
    h->window_off();
    struct timespec t3;
    clock_gettime(CLOCK_MONOTONIC, &t3);
    if (!bad) {   /* off again: does the window leave something behind in a launch? */
        if (h->graph_trace) h->graph_trace(0);
        double g1;
        bad = pcalib_measure(&x, &c->launch_after_us, &g1, &c->graphn_after_us);
        if (h->graph_trace) h->graph_trace(1);
    }
    c->switch_on_us = (double)(t1.tv_sec - t0.tv_sec) * 1e6 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e3;
    c->switch_off_us = (double)(t3.tv_sec - t2.tv_sec) * 1e6 + (double)(t3.tv_nsec - t2.tv_nsec) / 1e3;
    if (bad) goto done;
    /* per launch and per node, from the 1-node and the N-node graphs */
    c->kernel_launch_us = c->launch_on_us - c->launch_off_us;
    /* the same launch timed by the specprof command in a process without CUPTI (pclean.c) */
    c->launch_clean_us = pcalib_env_us("SPECPROF_CLEAN_LAUNCH_US");
    if (off_swept > 0 && on_swept > 0) {
        c->sweep_gap_us = PCALIB_SWEEP_GAP_US;
        c->launch_off_swept_us = off_swept;
        c->launch_on_swept_us = on_swept;
        c->launch_clean_swept_us = pcalib_env_us("SPECPROF_CLEAN_SWEPT_US");
    }
    double d1 = c->graph1_on_us - c->graph1_off_us, dn = c->graphn_on_us - c->graphn_off_us;
    c->graph_node_us = (dn - d1) / (PCALIB_GRAPH_NODES - 1);
    c->graph_launch_us = d1 - c->graph_node_us;
    if (c->has_between) c->graph_between_us = c->graphn_between_us - c->graphn_off_us;   /* per graph launch */
    c->ok = 1;
done:
    free(sweep_buf);
    if (en) a.ge_destroy(en);
    if (e1) a.ge_destroy(e1);
    if (gn) a.g_destroy(gn);
    if (g1) a.g_destroy(g1);
    if (st) { a.st_sync(st); a.st_destroy(st); }
    if (mod) a.mod_unload(mod);
    if (pushed) a.pop(&popped);
    if (retained) a.pc_release(d);
    if (!c->ok && !c->why[0]) snprintf(c->why, sizeof c->why, "driver call failed (CUresult %d)", (int)r);
}
