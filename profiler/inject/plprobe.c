/* plprobe.c: lite mode's node probe (see plprobe.h). Instrumenting runs on the program's
 * thread inside its cudaGraphInstantiate (start-up, where PyTorch and SGLang capture); a
 * launch asks one locked table lookup; the writer reads a probed replay's events once its
 * launch's end event completed. The method was measured on H100 call 32 with
 * profiler/demo/node_probe.cu (traces/validation/call32): node times from the events, less
 * the events' own cost per node, sum to CUPTI's within 0.1% and give node shares within 1-2%. */
#include "plprobe.h"
#include "precord.h"
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <dlfcn.h>

typedef int pp_err;                        /* cudaError_t */
#define PP_SUCCESS 0
/* cudaGraphNodeType (driver_types.h, CUDA 12-13) */
enum { PP_KERNEL = 0, PP_MEMCPY = 1, PP_MEMSET = 2, PP_HOST = 3, PP_CHILD = 4, PP_EMPTY = 5, PP_WAIT = 6,
       PP_RECORD = 7, PP_SEM_SIGNAL = 8, PP_SEM_WAIT = 9, PP_ALLOC = 10, PP_FREE = 11 };
/* cudaGraphInstantiateFlags: AutoFreeOnLaunch 1, Upload 2, DeviceLaunch 4, UseNodePriority 8 */
#define PP_FLAG_DEVICE_LAUNCH 4ull
#define PP_FLAGS_KEPT (1ull | 8ull)
#define PP_MAX_NODES 65536                 /* work nodes of one graph (a trace line stays < 1 MiB) */
#define PP_MAX_EVENTS (1 << 20)            /* events made in all (~1 KiB host memory each) */
#define PP_SLOTS 16384                     /* executables instrumented at once (open addressing) */
#define PP_NAMES_MAX 65536                 /* distinct kernel names */
#define PP_NAME_MAX 4096                   /* a name longer than this is cut (as PTRACE_MAX_STR) */

/* cudaKernelNodeParams (driver_types.h) and CUDA_KERNEL_NODE_PARAMS_v2 (cuda.h, CUDA 12+) */
typedef struct { void *func; unsigned g[3], b[3], smem; void **params, **extra; } pp_kparams;
typedef struct { void *func; unsigned gx, gy, gz, bx, by, bz, smem; void **params, **extra; void *kern, *ctx; } pp_cukparams;
/* cudaGraphEdgeData (CUDA 12.3+): all zero is an ordinary dependency; a programmatic one
 * (type 1, cuBLAS's kernels on Hopper) lets the next kernel start before this one ends */
typedef struct { unsigned char from_port, to_port, type, reserved[5]; } pp_edge;
/* cudaMemsetParams */
typedef struct { void *dst; size_t pitch; unsigned value, elem; size_t width, height; } pp_memset;
/* cudaMemcpy3DParms: arrays, positions, pitched pointers, the extent (bytes wide when no array
 * is involved) and the kind */
typedef struct { size_t x, y, z; } pp_pos;
typedef struct { void *ptr; size_t pitch, xsize, ysize; } pp_pitched;
typedef struct { void *src_array; pp_pos src_pos; pp_pitched src_ptr; void *dst_array; pp_pos dst_pos; pp_pitched dst_ptr;
                 size_t w, h, d; int kind; } pp_memcpy3d;
/* cudaFuncAttributes: three sizes, then maxThreadsPerBlock and numRegs (room for the rest) */
typedef struct { size_t shared, konst, local; int max_threads, regs; char rest[256]; } pp_fattr;
#define PP_CU_FUNC_ATTRIBUTE_NUM_REGS 4   /* cuda.h */
#define PP_LAUNCH_INTS 8                  /* per node: grid x y z, block x y z, dynamic smem, regs */

struct plprobe {
    void *exec, *iexec, *root, **ev;
    int n;                       /* work nodes */
    char *type;                  /* per work node: K kernel, C copy, S memset, H host, G child graph */
    uint32_t *name_id;           /* kernel name ids (0: not named) */
    int32_t *launch;             /* PP_LAUNCH_INTS per node (kernels; 0 otherwise, or unknown) */
    int64_t *bytes;              /* copies and memsets: bytes (0 otherwise) */
    char *copy_kind;             /* copies: cudaMemcpyKind as a digit; '-' otherwise */
    int32_t *pred_off, *pred;    /* work predecessors of node i: pred[pred_off[i] .. pred_off[i+1]) */
    int left, busy, stale, gone, emitted;
};

static struct {
    pp_err (*clone)(void **, void *);
    pp_err (*get_nodes)(void *, void **, size_t *);
    pp_err (*get_roots)(void *, void **, size_t *);
    pp_err (*node_type)(void *, int *);
    pp_err (*find_in_clone)(void **, void *, void *);
    pp_err (*deps4)(void *, void **, pp_edge *, size_t *), (*outs4)(void *, void **, pp_edge *, size_t *);
    pp_err (*deps3)(void *, void **, size_t *), (*outs3)(void *, void **, size_t *);
    pp_err (*add5)(void *, void **, void **, const pp_edge *, size_t), (*rm5)(void *, void **, void **, const pp_edge *, size_t);
    pp_err (*add4)(void *, void **, void **, size_t), (*rm4)(void *, void **, void **, size_t);
    pp_err (*add_ev_node)(void **, void *, void **, size_t, void *);
    pp_err (*ev_create)(void **), (*ev_destroy)(void *), (*ev_elapsed)(float *, void *, void *), (*ev_record)(void *, void *);
    pp_err (*instantiate)(void **, void *, unsigned long long);
    pp_err (*exec_destroy)(void *), (*graph_destroy)(void *);
    pp_err (*kparams)(void *, pp_kparams *);
    pp_err (*fattr)(pp_fattr *, const void *);
    pp_err (*cparams)(void *, pp_memcpy3d *), (*sparams)(void *, pp_memset *);
    int (*cu_func_attr)(int *, int, void *);
    pp_err (*func_name)(const char **, const void *);
    pp_err (*last_error)(void);
    pp_err (*capture_mode)(int *);
    pp_err (*runtime_version)(int *);
    int (*cu_kparams)(void *, pp_cukparams *);
    int (*cu_func_name)(const char **, void *), (*cu_kernel_name)(const char **, void *);
    pp_err (*graph_create)(void **, unsigned);
    pp_err (*add_memset)(void **, void *, void **, size_t, const pp_memset *);
    pp_err (*malloc_dev)(void **, size_t), (*free_dev)(void *);
    pp_err (*launch)(void *, void *), (*ssync)(void *);
    int ok;
} pp;

static int pp_replays_n;
static pthread_mutex_t pp_mu = PTHREAD_MUTEX_INITIALIZER;
static void *pp_key[PP_SLOTS];
static plprobe *pp_val[PP_SLOTS];
static atomic_int pp_busy_n;
static atomic_llong pp_left_n;             /* probed replays left over every executable: 0 skips the lock */
static int64_t pp_events;                  /* under pp_mu */
static plprobe_stats pp_st;                /* under pp_mu */
static char *pp_name[PP_NAMES_MAX + 1];    /* by id, from 1; under pp_mu */
static uint32_t pp_n_names, pp_names_emitted;

void plprobe_init(void *(*sym)(const char *), int replays) {
    pp_replays_n = replays < 0 ? 0 : replays;
    pp_st.replays_per_exec = pp_replays_n;
    if (!pp_replays_n) return;
    int v = 0;
    pp.runtime_version = sym("cudaRuntimeGetVersion");
    if (!pp.runtime_version || pp.runtime_version(&v) != PP_SUCCESS) v = 0;
    /* the dependency calls took edge data in CUDA 13 (plain names) and 12.3-12.9 (_v2) */
    if (v >= 13000) {
        pp.deps4 = sym("cudaGraphNodeGetDependencies");
        pp.outs4 = sym("cudaGraphNodeGetDependentNodes");
        pp.add5 = sym("cudaGraphAddDependencies");
        pp.rm5 = sym("cudaGraphRemoveDependencies");
    } else if (v >= 12030) {
        pp.deps4 = sym("cudaGraphNodeGetDependencies_v2");
        pp.outs4 = sym("cudaGraphNodeGetDependentNodes_v2");
        pp.add5 = sym("cudaGraphAddDependencies_v2");
        pp.rm5 = sym("cudaGraphRemoveDependencies_v2");
    } else {
        pp.deps3 = sym("cudaGraphNodeGetDependencies");
        pp.outs3 = sym("cudaGraphNodeGetDependentNodes");
        pp.add4 = sym("cudaGraphAddDependencies");
        pp.rm4 = sym("cudaGraphRemoveDependencies");
    }
    pp.clone = sym("cudaGraphClone");
    pp.get_nodes = sym("cudaGraphGetNodes");
    pp.get_roots = sym("cudaGraphGetRootNodes");
    pp.node_type = sym("cudaGraphNodeGetType");
    pp.find_in_clone = sym("cudaGraphNodeFindInClone");
    pp.add_ev_node = sym("cudaGraphAddEventRecordNode");
    pp.ev_create = sym("cudaEventCreate");
    pp.ev_destroy = sym("cudaEventDestroy");
    pp.ev_elapsed = sym("cudaEventElapsedTime");
    pp.ev_record = sym("cudaEventRecord");
    pp.instantiate = sym("cudaGraphInstantiateWithFlags");
    pp.exec_destroy = sym("cudaGraphExecDestroy");
    pp.graph_destroy = sym("cudaGraphDestroy");
    pp.kparams = sym("cudaGraphKernelNodeGetParams");
    pp.fattr = sym("cudaFuncGetAttributes");
    pp.cparams = sym("cudaGraphMemcpyNodeGetParams");
    pp.sparams = sym("cudaGraphMemsetNodeGetParams");
    pp.func_name = sym("cudaFuncGetName");
    pp.last_error = sym("cudaGetLastError");
    pp.capture_mode = sym("cudaThreadExchangeStreamCaptureMode");
    pp.graph_create = sym("cudaGraphCreate");
    pp.add_memset = sym("cudaGraphAddMemsetNode");
    pp.malloc_dev = sym("cudaMalloc");
    pp.free_dev = sym("cudaFree");
    pp.launch = sym("cudaGraphLaunch");
    pp.ssync = sym("cudaStreamSynchronize");
    /* library kernels (cuBLAS: its own static runtime) are named through the driver */
    void *cu = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (cu) {
        pp.cu_kparams = (int (*)(void *, pp_cukparams *))dlsym(cu, "cuGraphKernelNodeGetParams_v2");
        pp.cu_func_name = (int (*)(const char **, void *))dlsym(cu, "cuFuncGetName");
        pp.cu_kernel_name = (int (*)(const char **, void *))dlsym(cu, "cuKernelGetName");
        pp.cu_func_attr = (int (*)(int *, int, void *))dlsym(cu, "cuFuncGetAttribute");
    }
    pp.ok = (pp.deps4 || pp.deps3) && (pp.outs4 || pp.outs3) && (pp.add5 || pp.add4) && (pp.rm5 || pp.rm4) &&
            pp.clone && pp.get_nodes && pp.get_roots && pp.node_type && pp.find_in_clone && pp.add_ev_node &&
            pp.ev_create && pp.ev_destroy && pp.ev_elapsed && pp.instantiate && pp.exec_destroy &&
            pp.graph_destroy && pp.last_error;
    if (!pp.ok) snprintf(pp_st.skip_why, sizeof pp_st.skip_why, "the runtime lacks a graph entry point (runtime %d)", v);
}

int plprobe_replays(void) { return pp_replays_n; }

/* A node's dependencies or dependents with their edge data (zeroed where the runtime has
 * none); asked without edge data, a graph with programmatic edges refuses the query
 * (cudaErrorLossyQuery). out and e: NULL asks the count. */
static pp_err pp_deps(void *node, void **out, pp_edge *e, size_t *n) {
    if (e) memset(e, 0, *n * sizeof *e);
    return pp.deps4 ? pp.deps4(node, out, out ? e : NULL, n) : pp.deps3(node, out, n);
}
static pp_err pp_outs(void *node, void **out, pp_edge *e, size_t *n) {
    if (e) memset(e, 0, *n * sizeof *e);
    return pp.outs4 ? pp.outs4(node, out, out ? e : NULL, n) : pp.outs3(node, out, n);
}
static int pp_edge_default(const pp_edge *e) { return !e->from_port && !e->to_port && !e->type; }
static pp_err pp_add(void *g, void *from, void *to) {
    return pp.add5 ? pp.add5(g, &from, &to, NULL, 1) : pp.add4(g, &from, &to, 1);
}
static pp_err pp_rm(void *g, void *from, void *to) {
    return pp.rm5 ? pp.rm5(g, &from, &to, NULL, 1) : pp.rm4(g, &from, &to, 1);
}

/* ---------- pointer -> index maps ---------- */

typedef struct { void **k; int *v; size_t cap; } pp_map;
static size_t pp_hash(const void *p, size_t cap) {
    return (size_t)(((uint64_t)(uintptr_t)p * 0x9E3779B97F4A7C15ull) >> 20) & (cap - 1);
}
static int pp_map_init(pp_map *m, size_t n) {
    m->cap = 16;
    while (m->cap < 2 * n + 2) m->cap <<= 1;
    m->k = calloc(m->cap, sizeof *m->k);
    m->v = calloc(m->cap, sizeof *m->v);
    return m->k && m->v ? 0 : -1;
}
static void pp_map_free(pp_map *m) { free(m->k); free(m->v); }
static void pp_map_put(pp_map *m, void *k, int v) {
    size_t i = pp_hash(k, m->cap);
    while (m->k[i] && m->k[i] != k) i = (i + 1) & (m->cap - 1);
    m->k[i] = k;
    m->v[i] = v;
}
static int pp_map_get(const pp_map *m, void *k) {   /* -1: absent */
    for (size_t i = pp_hash(k, m->cap); m->k[i]; i = (i + 1) & (m->cap - 1))
        if (m->k[i] == k) return m->v[i];
    return -1;
}

/* ---------- names ---------- */

/* The id of a kernel name (new names are added), 0 when there is no room. Under pp_mu. The
 * name is demangled as the always mode's kernel records are (precord_demangle), so that a lite
 * trace and a node-level one of the same program name a kernel alike. */
static uint32_t pp_name_id(const char *s) {
    char cut[PP_NAME_MAX + 1];
    snprintf(cut, sizeof cut, "%s", precord_demangle(s));
    for (uint32_t i = pp_n_names; i >= 1; i--)   /* few distinct names (~10^2), looked up at instantiation only */
        if (!strcmp(pp_name[i], cut)) return i;
    if (pp_n_names >= PP_NAMES_MAX) return 0;
    char *d = strdup(cut);
    if (!d) return 0;
    pp_name[++pp_n_names] = d;
    return pp_n_names;
}

/* A kernel node's name and launch (grid, block, dynamic shared memory, registers: what the
 * fit's wave model reads from a kernel record): the driver's for library kernels (cuBLAS),
 * else the runtime's. The name is NULL when neither names it. */
static const char *pp_kernel_node(void *node, int32_t *launch) {
    const char *nm = NULL;
    int regs = 0;
    if (pp.cu_kparams) {
        pp_cukparams p;
        memset(&p, 0, sizeof p);
        if (pp.cu_kparams(node, &p) == 0) {
            int32_t l[PP_LAUNCH_INTS] = { (int32_t)p.gx, (int32_t)p.gy, (int32_t)p.gz, (int32_t)p.bx, (int32_t)p.by,
                                          (int32_t)p.bz, (int32_t)p.smem, 0 };
            memcpy(launch, l, sizeof l);
            if (p.func && pp.cu_func_attr && pp.cu_func_attr(&regs, PP_CU_FUNC_ATTRIBUTE_NUM_REGS, p.func) == 0) launch[7] = regs;
            if (p.func && pp.cu_func_name && pp.cu_func_name(&nm, p.func) == 0 && nm) return nm;
            if (p.kern && pp.cu_kernel_name && pp.cu_kernel_name(&nm, p.kern) == 0 && nm) return nm;
        }
    }
    if (pp.kparams && pp.func_name) {
        pp_kparams p;
        memset(&p, 0, sizeof p);
        if (pp.kparams(node, &p) == PP_SUCCESS && p.func) {
            int32_t l[PP_LAUNCH_INTS] = { (int32_t)p.g[0], (int32_t)p.g[1], (int32_t)p.g[2], (int32_t)p.b[0], (int32_t)p.b[1],
                                          (int32_t)p.b[2], (int32_t)p.smem, launch[7] };
            memcpy(launch, l, sizeof l);
            pp_fattr fa;
            memset(&fa, 0, sizeof fa);
            if (!launch[7] && pp.fattr && pp.fattr(&fa, p.func) == PP_SUCCESS) launch[7] = fa.regs;
            if (pp.func_name(&nm, p.func) == PP_SUCCESS && nm) return nm;
        }
        pp.last_error();
    }
    return NULL;
}

/* A copy or memset node's bytes (and a copy's kind digit), 0 when not known. */
static int64_t pp_mem_node(void *node, char type, char *kind) {
    *kind = '-';
    if (type == 'C' && pp.cparams) {
        pp_memcpy3d m;
        memset(&m, 0, sizeof m);
        if (pp.cparams(node, &m) == PP_SUCCESS) {
            *kind = m.kind >= 0 && m.kind <= 4 ? (char)('0' + m.kind) : '4';
            return (int64_t)(m.w * (m.h ? m.h : 1) * (m.d ? m.d : 1));
        }
    } else if (type == 'S' && pp.sparams) {
        pp_memset m;
        memset(&m, 0, sizeof m);
        if (pp.sparams(node, &m) == PP_SUCCESS) return (int64_t)m.elem * (int64_t)m.width * (int64_t)(m.height ? m.height : 1);
    }
    if (pp.cparams || pp.sparams) pp.last_error();
    return 0;
}

/* ---------- instrumenting ---------- */

/* Frees p; budget: its events go back to the budget (an instrumented clone's). */
static void pp_probe_free(plprobe *p, int budget) {
    if (!p) return;
    if (budget) {
        pthread_mutex_lock(&pp_mu);
        pp_events -= p->n + 1;
        pthread_mutex_unlock(&pp_mu);
    }
    if (p->iexec) pp.exec_destroy(p->iexec);
    if (p->root) pp.ev_destroy(p->root);
    for (int i = 0; p->ev && i < p->n; i++)
        if (p->ev[i]) pp.ev_destroy(p->ev[i]);
    free(p->ev);
    free(p->type);
    free(p->name_id);
    free(p->launch);
    free(p->bytes);
    free(p->copy_kind);
    free(p->pred_off);
    free(p->pred);
    free(p);
}

static void pp_skip(const char *why) {
    pthread_mutex_lock(&pp_mu);
    if (!pp_st.skipped++) snprintf(pp_st.skip_why, sizeof pp_st.skip_why, "%s", why);
    pthread_mutex_unlock(&pp_mu);
}

/* Work predecessors of clone node nd appended to (*out)[from ..*n): its dependencies, up
 * through non-work nodes (each visited once per node: seen marks them with stamp). */
static int pp_preds_of(void *nd, const pp_map *work, pp_map *seen, int stamp, int32_t **out, int from, int *n, int *cap) {
    size_t k = 0;
    if (pp_deps(nd, NULL, NULL, &k) != PP_SUCCESS) return -1;
    if (!k) return 0;
    void **d = malloc(k * sizeof *d);
    pp_edge *ed = malloc(k * sizeof *ed);
    if (!d || !ed || pp_deps(nd, d, ed, &k) != PP_SUCCESS) { free(d); free(ed); return -1; }
    free(ed);
    int rc = 0;
    for (size_t j = 0; j < k && !rc; j++) {
        int w = pp_map_get(work, d[j]);
        if (w >= 0) {
            int dup = 0;
            for (int q = from; q < *n; q++) dup |= (*out)[q] == w;
            if (dup) continue;
            if (*n == *cap) {
                *cap = *cap ? 2 * *cap : 8;
                int32_t *x = realloc(*out, (size_t)*cap * sizeof **out);
                if (!x) { rc = -1; break; }
                *out = x;
            }
            (*out)[(*n)++] = w;
        } else if (pp_map_get(seen, d[j]) != stamp) {
            pp_map_put(seen, d[j], stamp);
            rc = pp_preds_of(d[j], work, seen, stamp, out, from, n, cap);
        }
    }
    free(d);
    return rc;
}

/* The instrumented clone of graph g, or NULL with *why set. Runs with this thread's capture
 * mode relaxed (our calls never join or end another thread's capture). */
static plprobe *pp_instrument(void *graph, unsigned long long flags, const char **why) {
    void *c = NULL, **all = NULL, **cw = NULL, **outs = NULL, *node = NULL;
    size_t n_all = 0, n_roots = 0;
    pp_map work = { 0 }, seen = { 0 };
    plprobe *p = calloc(1, sizeof *p);
    int n = 0, reserved = 0;
    *why = NULL;
    if (!p) { *why = "out of memory"; return NULL; }
    if (pp.get_nodes(graph, NULL, &n_all) != PP_SUCCESS || !n_all) { *why = "cudaGraphGetNodes failed"; goto fail; }
    all = malloc(n_all * sizeof *all);
    if (!all || pp.get_nodes(graph, all, &n_all) != PP_SUCCESS) { *why = "cudaGraphGetNodes failed"; goto fail; }
    p->type = malloc(n_all);
    p->name_id = calloc(n_all, sizeof *p->name_id);
    p->launch = calloc(n_all * PP_LAUNCH_INTS, sizeof *p->launch);
    p->bytes = calloc(n_all, sizeof *p->bytes);
    p->copy_kind = malloc(n_all);
    cw = malloc(n_all * sizeof *cw);
    if (!p->type || !p->name_id || !p->launch || !p->bytes || !p->copy_kind || !cw) { *why = "out of memory"; goto fail; }
    if (pp.clone(&c, graph) != PP_SUCCESS) { *why = "cudaGraphClone failed"; goto fail; }
    /* work nodes, in the graph's order (the order nodes were made: CUPTI's node ids follow it);
     * a graph the probe cannot instrument is known before any node is named */
    for (size_t i = 0; i < n_all; i++) {
        int t = -1;
        if (pp.node_type(all[i], &t) != PP_SUCCESS) { *why = "cudaGraphNodeGetType failed"; goto fail; }
        if (t == PP_ALLOC || t == PP_FREE) { *why = "memory allocation nodes (one executable at a time)"; goto fail; }
        if (t > PP_FREE) { *why = "conditional or newer node types"; goto fail; }
        static const char code[] = { 'K', 'C', 'S', 'H', 'G' };
        if (t > PP_CHILD) continue;
        if (n >= PP_MAX_NODES) { *why = "more than 65536 work nodes"; goto fail; }
        if (pp.find_in_clone(&cw[n], all[i], c) != PP_SUCCESS) { *why = "cudaGraphNodeFindInClone failed"; goto fail; }
        p->type[n] = code[t];
        all[n++] = all[i];   /* the work nodes first, in order */
    }
    for (int i = 0; i < n; i++) {
        p->bytes[i] = pp_mem_node(all[i], p->type[i], &p->copy_kind[i]);
        if (p->type[i] != 'K') continue;
        const char *nm = pp_kernel_node(all[i], &p->launch[i * PP_LAUNCH_INTS]);
        pthread_mutex_lock(&pp_mu);
        p->name_id[i] = nm ? pp_name_id(nm) : 0;
        pthread_mutex_unlock(&pp_mu);
    }
    p->n = n;
    if (!n) { *why = "no work node"; goto fail; }
    pthread_mutex_lock(&pp_mu);
    reserved = pp_events + n + 1 <= PP_MAX_EVENTS;
    if (reserved) pp_events += n + 1;
    pthread_mutex_unlock(&pp_mu);
    if (!reserved) { *why = "the probe's event budget (2^20) is spent"; goto fail; }
    /* predecessors among work nodes, before any edge moves */
    if (pp_map_init(&work, (size_t)n) || pp_map_init(&seen, n_all)) { *why = "out of memory"; goto fail; }
    for (int i = 0; i < n; i++) pp_map_put(&work, cw[i], i);
    p->pred_off = malloc(((size_t)n + 1) * sizeof *p->pred_off);
    if (!p->pred_off) { *why = "out of memory"; goto fail; }
    int np = 0, capp = 0;
    for (int i = 0; i < n; i++) {
        p->pred_off[i] = np;
        if (pp_preds_of(cw[i], &work, &seen, i + 1, &p->pred, np, &np, &capp)) {
            *why = "cudaGraphNodeGetDependencies failed";
            goto fail;
        }
    }
    p->pred_off[n] = np;
    /* the root event, before the clone's roots */
    if (pp.get_roots(c, NULL, &n_roots) != PP_SUCCESS) { *why = "cudaGraphGetRootNodes failed"; goto fail; }
    outs = malloc((n_roots + 1) * sizeof *outs);
    if (!outs || pp.get_roots(c, outs, &n_roots) != PP_SUCCESS) { *why = "cudaGraphGetRootNodes failed"; goto fail; }
    p->ev = calloc((size_t)n, sizeof *p->ev);
    if (!p->ev || pp.ev_create(&p->root) != PP_SUCCESS || pp.add_ev_node(&node, c, NULL, 0, p->root) != PP_SUCCESS) {
        *why = "an event record node could not be added";
        goto fail;
    }
    for (size_t r = 0; r < n_roots; r++)
        if (pp_add(c, node, outs[r]) != PP_SUCCESS) { *why = "cudaGraphAddDependencies failed"; goto fail; }
    free(outs);
    outs = NULL;
    /* an event after each work node, its ordinary outgoing edges moved onto the event (a
     * programmatic edge stays: the next kernel may start before this one ends, as it did) */
    for (int i = 0; i < n; i++) {
        size_t k = 0;
        if (pp_outs(cw[i], NULL, NULL, &k) != PP_SUCCESS) { *why = "cudaGraphNodeGetDependentNodes failed"; goto fail; }
        void **o = k ? malloc(k * sizeof *o) : NULL;
        pp_edge *oe = k ? malloc(k * sizeof *oe) : NULL;
        if (k && (!o || !oe || pp_outs(cw[i], o, oe, &k) != PP_SUCCESS)) {
            free(o);
            free(oe);
            *why = "cudaGraphNodeGetDependentNodes failed";
            goto fail;
        }
        int bad = pp.ev_create(&p->ev[i]) != PP_SUCCESS || pp.add_ev_node(&node, c, &cw[i], 1, p->ev[i]) != PP_SUCCESS;
        for (size_t j = 0; j < k && !bad; j++)
            if (pp_edge_default(&oe[j])) bad = pp_rm(c, cw[i], o[j]) != PP_SUCCESS || pp_add(c, node, o[j]) != PP_SUCCESS;
        free(o);
        free(oe);
        if (bad) { *why = "an event record node could not be added"; goto fail; }
    }
    if (pp.instantiate(&p->iexec, c, flags & PP_FLAGS_KEPT) != PP_SUCCESS) { p->iexec = NULL; *why = "the instrumented clone did not instantiate"; goto fail; }
    pp.graph_destroy(c);
    pp_map_free(&work);
    pp_map_free(&seen);
    free(all);
    free(cw);
    p->left = pp_replays_n;
    return p;
fail:
    pp.last_error();   /* our failed call is not the program's error */
    if (c) pp.graph_destroy(c);
    pp_map_free(&work);
    pp_map_free(&seen);
    free(all);
    free(cw);
    free(outs);
    pp_probe_free(p, reserved);
    return NULL;
}

static double pp_now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* Slot of exec (its own, or the empty one to take); -1 when the table is full. Under pp_mu. */
static int pp_slot(void *exec) {
    size_t i = pp_hash(exec, PP_SLOTS), tomb = (size_t)-1;
    for (int probe = 0; probe < PP_SLOTS; probe++, i = (i + 1) & (PP_SLOTS - 1)) {
        if (pp_key[i] == exec) return (int)i;
        if (!pp_key[i]) return (int)(tomb != (size_t)-1 ? tomb : i);
        if (!pp_val[i] && tomb == (size_t)-1) tomb = i;   /* a freed slot (key kept) */
    }
    return tomb != (size_t)-1 ? (int)tomb : -1;
}

static void pp_forget(void *exec, int destroyed);

void plprobe_instantiated(void *exec, void *graph, unsigned long long flags) {
    if (!pp_replays_n || !exec || !graph) return;
    if (!pp.ok) { pp_skip(pp_st.skip_why[0] ? pp_st.skip_why : "the runtime lacks a graph entry point"); return; }
    if (flags & PP_FLAG_DEVICE_LAUNCH) { pp_skip("instantiated for device launch"); return; }
    pp_forget(exec, 1);   /* an address reused: the old executable is gone */
    double t0 = pp_now_ms();
    int mode = 2;        /* cudaStreamCaptureModeRelaxed, then the thread's own mode back */
    if (pp.capture_mode) pp.capture_mode(&mode);
    const char *why = NULL;
    plprobe *p = pp_instrument(graph, flags, &why);
    if (pp.capture_mode) pp.capture_mode(&mode);
    double ms = pp_now_ms() - t0;
    if (!p) { pp_skip(why ? why : "?"); return; }
    p->exec = exec;
    pthread_mutex_lock(&pp_mu);
    int s = pp_slot(exec);
    if (s >= 0) {
        pp_key[s] = exec;
        pp_val[s] = p;
        atomic_fetch_add(&pp_left_n, p->left);
        pp_st.execs++;
        pp_st.instrument_ms += ms;
        pp_st.events = pp_events;
    }
    pthread_mutex_unlock(&pp_mu);
    if (s < 0) { pp_probe_free(p, 1); pp_skip("more than 16384 executables at once"); }
}

/* Takes exec's probe out of the table: freed now, or by the writer once it read the replay. */
static void pp_forget(void *exec, int destroyed) {
    plprobe *p = NULL;
    pthread_mutex_lock(&pp_mu);
    int s = pp_slot(exec);
    if (s >= 0 && pp_key[s] == exec && pp_val[s]) {
        p = pp_val[s];
        if (!p->stale) atomic_fetch_sub(&pp_left_n, p->left);   /* its replays left are no more */
        if (!destroyed) { if (!p->stale) pp_st.stale++; p->stale = 1; p = NULL; }
        else { pp_val[s] = NULL; p->stale = 1; if (p->busy) { p->gone = 1; p = NULL; } }
    }
    pthread_mutex_unlock(&pp_mu);
    if (!p)
        return;
    int mode = 2;   /* relaxed while our destroys run (another thread may be capturing) */
    if (pp.capture_mode) pp.capture_mode(&mode);
    pp_probe_free(p, 1);
    if (pp.capture_mode) pp.capture_mode(&mode);
}

void plprobe_exec_changed(void *exec) { if (pp_replays_n && exec) pp_forget(exec, 0); }
void plprobe_exec_destroyed(void *exec) { if (pp_replays_n && exec) pp_forget(exec, 1); }

void *plprobe_take(void *exec, plprobe **pr) {
    void *x = NULL;
    *pr = NULL;
    if (!pp_replays_n || atomic_load_explicit(&pp_left_n, memory_order_relaxed) <= 0) return NULL;   /* all probed */
    pthread_mutex_lock(&pp_mu);
    int s = pp_slot(exec);
    plprobe *p = s >= 0 && pp_key[s] == exec ? pp_val[s] : NULL;
    if (p && p->iexec && p->left > 0 && !p->busy && !p->stale) {
        p->busy = 1;
        p->left--;
        atomic_fetch_sub(&pp_left_n, 1);
        pp_st.launched++;
        x = p->iexec;
        *pr = p;
        atomic_fetch_add(&pp_busy_n, 1);
    }
    pthread_mutex_unlock(&pp_mu);
    return x;
}

static void pp_release(plprobe *p, int launched) {
    int gone;
    pthread_mutex_lock(&pp_mu);
    p->busy = 0;
    if (!launched) {
        p->left++;
        pp_st.launched--;
        if (!p->stale) atomic_fetch_add(&pp_left_n, 1);
    }
    gone = p->gone;
    pthread_mutex_unlock(&pp_mu);
    atomic_fetch_sub(&pp_busy_n, 1);
    if (gone) pp_probe_free(p, 1);
}

void plprobe_untake(plprobe *pr) { if (pr) pp_release(pr, 0); }

int plprobe_nodes(const plprobe *pr) { return pr ? pr->n : 0; }
int plprobe_pending(void) { return atomic_load(&pp_busy_n) > 0; }

int plprobe_read(plprobe *p, float *end_us, int cap) {
    int n = p->n, ok = n <= cap;
    for (int i = 0; ok && i < n; i++) {
        float ms = 0;
        if (pp.ev_elapsed(&ms, p->root, p->ev[i]) != PP_SUCCESS) { pp.last_error(); ok = 0; break; }
        end_us[i] = ms * 1e3f;
    }
    pthread_mutex_lock(&pp_mu);
    if (ok) pp_st.read++; else pp_st.lost++;
    pthread_mutex_unlock(&pp_mu);
    pp_release(p, 1);
    return ok ? n : -1;
}

/* ---------- the node table ---------- */

typedef struct { char *b; size_t n, cap; } pp_buf;
static int pp_put(pp_buf *b, const char *s, size_t n) {
    if (b->n + n + 1 > b->cap) {
        size_t c = b->cap ? b->cap : 4096;
        while (c < b->n + n + 1) c *= 2;
        char *x = realloc(b->b, c);
        if (!x) return -1;
        b->b = x;
        b->cap = c;
    }
    memcpy(b->b + b->n, s, n);
    b->n += n;
    b->b[b->n] = 0;
    return 0;
}
static int pp_puts(pp_buf *b, const char *s) { return pp_put(b, s, strlen(s)); }
static int pp_putf(pp_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int pp_putf(pp_buf *b, const char *fmt, ...) {
    char t[256];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(t, sizeof t, fmt, ap);
    va_end(ap);
    return k < 0 ? -1 : pp_put(b, t, (size_t)k < sizeof t ? (size_t)k : sizeof t - 1);
}
static int pp_put_str(pp_buf *b, const char *s) {   /* a JSON string */
    int rc = pp_put(b, "\"", 1);
    for (; *s && !rc; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') { char e[2] = { '\\', (char)ch }; rc = pp_put(b, e, 2); }
        else if (ch < 0x20) rc = pp_putf(b, "\\u%04x", ch);
        else rc = pp_put(b, (const char *)&ch, 1);
    }
    return rc ? rc : pp_put(b, "\"", 1);
}

int64_t plprobe_emit_table(plprobe *p, uint32_t exec_id, int pid, plprobe_emit_fn emit, void *user) {
    static pp_buf b;
    int64_t lines = 0;
    if (p->emitted) return 0;
    p->emitted = 1;
    /* names made since the last table (every id this table uses is among them or before) */
    pthread_mutex_lock(&pp_mu);
    uint32_t first = pp_names_emitted + 1, last = pp_n_names;
    /* in events of at most ~256 KiB (a reader takes lines up to 1 MiB) */
    for (uint32_t i = first; i <= last;) {
        b.n = 0;
        pp_putf(&b, "{\"ph\":\"M\",\"cat\":\"graph_probe\",\"name\":\"probe_names\",\"pid\":%d,\"tid\":0,\"ts\":0,"
                    "\"args\":{\"first\":%u,\"names\":[", pid, i);
        for (uint32_t j = i; i <= last && b.n < (256u << 10); i++) {
            if (i > j) pp_puts(&b, ",");
            pp_put_str(&b, pp_name[i]);
        }
        if (pp_puts(&b, "]}},\n") == 0 && b.b) { emit(user, b.b, (int)b.n); lines++; }
    }
    pp_names_emitted = last;
    pthread_mutex_unlock(&pp_mu);
    b.n = 0;
    pp_putf(&b, "{\"ph\":\"M\",\"cat\":\"graph_probe\",\"name\":\"probe_graph\",\"pid\":%d,\"tid\":0,\"ts\":0,"
                "\"args\":{\"graph_exec_id\":%u,\"nodes\":%d,\"type\":\"", pid, exec_id, p->n);
    pp_put(&b, p->type, (size_t)p->n);
    pp_puts(&b, "\",\"name\":[");
    for (int i = 0; i < p->n; i++) pp_putf(&b, i ? ",%u" : "%u", p->name_id[i]);
    pp_puts(&b, "],\"launch\":[");
    for (int i = 0; i < p->n * PP_LAUNCH_INTS; i++) pp_putf(&b, i ? ",%d" : "%d", p->launch[i]);
    pp_puts(&b, "],\"bytes\":[");
    for (int i = 0; i < p->n; i++) pp_putf(&b, i ? ",%lld" : "%lld", (long long)p->bytes[i]);
    pp_puts(&b, "],\"copy_kind\":\"");
    pp_put(&b, p->copy_kind, (size_t)p->n);
    pp_puts(&b, "\",\"pred_n\":[");
    for (int i = 0; i < p->n; i++) pp_putf(&b, i ? ",%d" : "%d", p->pred_off[i + 1] - p->pred_off[i]);
    pp_puts(&b, "],\"pred\":[");
    for (int i = 0; i < p->pred_off[p->n]; i++) pp_putf(&b, i ? ",%d" : "%d", p->pred[i]);
    if (pp_puts(&b, "]}},\n") == 0 && b.b) { emit(user, b.b, (int)b.n); lines++; }
    return lines;
}

void plprobe_get_stats(plprobe_stats *s) {
    pthread_mutex_lock(&pp_mu);
    *s = pp_st;
    s->events = pp_events;
    pthread_mutex_unlock(&pp_mu);
}

/* ---------- calibration ---------- */

static int pp_cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double plprobe_calibrate(void *stream, int n, int reps, char *why, size_t why_cap) {
    double out = -1;
    void *buf = NULL, *g = NULL, *x = NULL, *prev = NULL, *e0 = NULL, *e1 = NULL;
    plprobe *p = NULL;
    double *t0 = calloc((size_t)reps, sizeof *t0), *t1 = calloc((size_t)reps, sizeof *t1);
    why[0] = 0;
    if (!pp.ok || !pp.graph_create || !pp.add_memset || !pp.malloc_dev || !pp.free_dev || !pp.launch || !pp.ssync ||
        !pp.ev_record || !t0 || !t1) {
        snprintf(why, why_cap, "the runtime's graph or memset entry points are not available");
        goto done;
    }
    if (pp.malloc_dev(&buf, 256) != PP_SUCCESS || pp.graph_create(&g, 0) != PP_SUCCESS) {
        snprintf(why, why_cap, "cudaMalloc or cudaGraphCreate failed");
        goto done;
    }
    for (int i = 0; i < n; i++) {   /* a chain: each node waits for the one before (a decode graph's shape) */
        pp_memset m = { (char *)buf + 4 * (i % 64), 4, (unsigned)i, 4, 1, 1 };
        void *node = NULL;
        if (pp.add_memset(&node, g, prev ? &prev : NULL, prev ? 1 : 0, &m) != PP_SUCCESS) {
            snprintf(why, why_cap, "cudaGraphAddMemsetNode failed");
            goto done;
        }
        prev = node;
    }
    const char *w = NULL;
    p = pp_instrument(g, 0, &w);
    if (!p || pp.instantiate(&x, g, 0) != PP_SUCCESS || pp.ev_create(&e0) != PP_SUCCESS || pp.ev_create(&e1) != PP_SUCCESS) {
        snprintf(why, why_cap, "%s", w ? w : "the calibration graph did not instantiate");
        goto done;
    }
    for (int r = -3; r < reps; r++) {   /* alternating, after three of each as warm-up */
        for (int which = 0; which < 2; which++) {
            float ms = 0;
            pp.ev_record(e0, stream);
            pp.launch(which ? p->iexec : x, stream);
            pp.ev_record(e1, stream);
            pp.ssync(stream);
            if (r >= 0 && pp.ev_elapsed(&ms, e0, e1) == PP_SUCCESS) (which ? t1 : t0)[r] = ms * 1e3;
        }
    }
    qsort(t0, (size_t)reps, sizeof *t0, pp_cmp_d);
    qsort(t1, (size_t)reps, sizeof *t1, pp_cmp_d);
    out = (t1[reps / 2] - t0[reps / 2]) / n;
done:
    pp.last_error();
    if (x) pp.exec_destroy(x);
    if (g) pp.graph_destroy(g);
    if (buf) pp.free_dev(buf);
    if (e0) pp.ev_destroy(e0);
    if (e1) pp.ev_destroy(e1);
    pp_probe_free(p, 1);
    free(t0);
    free(t1);
    return out;
}
