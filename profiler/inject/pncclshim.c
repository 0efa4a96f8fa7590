/* pncclshim.c: an NCCL interposer inside libspecprof.so. The specprof launcher puts the
 * library in LD_PRELOAD, so a program's calls of ncclAllReduce & co. (through the PLT of
 * libnccl's users: the program, libtorch_cuda, ...) land here first; we note op, dtype,
 * element count, bytes, communicator size and rank and whether the stream is capturing a
 * CUDA graph, mark the call open on this thread while the real one (dlsym RTLD_NEXT)
 * runs, so the launches and graph nodes it makes are matched to it (pnccl), and emit one
 * host event per call. Why an interposer: the bytes are exact and known before the
 * launch; NCCL's NVTX payloads need the NVTX extension and its profiler plugin sees no
 * graph capture. Calls made through a dlopen(RTLD_LOCAL) handle bypass it (documented).
 * Declared without nccl.h (enums are int, handles pointers) so it builds without NCCL. */
#include "pinject.h"
#include "ptrace_write.h"
#include <cupti.h>
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int pshim_result;            /* ncclResult_t: ncclSuccess = 0, ncclSystemError = 2 */
typedef void *pshim_comm;            /* ncclComm_t */
typedef void *pshim_stream;          /* cudaStream_t == CUstream */
#define PSHIM_SYSTEM_ERROR 2

/* The real function: the next definition in the global scope (RTLD_NEXT); or, when the
 * program's libnccl is not in the global scope (a dependency of a library that Python
 * loaded with RTLD_LOCAL), the definition in that already-loaded libnccl itself; or
 * NCCL's profiling alias pnccl<Name> (NCCL exports every API twice for such wrappers). */
static void *pshim_next(const char *name) {
    void *p = dlsym(RTLD_NEXT, name);
    void *h = NULL;
    if (!p) {
        h = dlopen("libnccl.so.2", RTLD_LAZY | RTLD_NOLOAD);
        if (!h) h = dlopen("libnccl.so", RTLD_LAZY | RTLD_NOLOAD);
        if (h) p = dlsym(h, name);
    }
    if (!p) {
        char alias[64];
        snprintf(alias, sizeof alias, "p%s", name);
        p = h ? dlsym(h, alias) : NULL;
        if (!p) p = dlsym(RTLD_DEFAULT, alias);
    }
    return p;
}

typedef pshim_result (*pshim_count_fn)(pshim_comm, int *);
typedef int (*pshim_capturing_fn)(pshim_stream, int *);

static void pshim_describe(ptrace_nccl *c, const char *op, int redop, int dtype, size_t count, pshim_comm comm,
                           pshim_stream stream, int root_or_peer) {
    static pshim_count_fn comm_count, comm_rank;
    static pshim_capturing_fn is_capturing;
    static int looked;
    if (!looked) {
        comm_count = (pshim_count_fn)pshim_next("ncclCommCount");
        comm_rank = (pshim_count_fn)pshim_next("ncclCommUserRank");
        is_capturing = (pshim_capturing_fn)dlsym(RTLD_DEFAULT, "cuStreamIsCapturing");
        if (!is_capturing) {   /* cudart loads libcuda with RTLD_LOCAL: ask that object */
            void *cu = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
            if (cu) is_capturing = (pshim_capturing_fn)dlsym(cu, "cuStreamIsCapturing");
        }
        looked = 1;
    }
    memset(c, 0, sizeof *c);
    pnccl_describe(c, op, redop, dtype, (uint64_t)count);
    c->comm_size = -1;
    c->rank = -1;
    if (comm_count) comm_count(comm, &c->comm_size);
    if (comm_rank) comm_rank(comm, &c->rank);
    c->root_or_peer = root_or_peer;
    c->group_ops = 1;
    c->seq = pinject_nccl_seq();
    int st = 0;   /* CU_STREAM_CAPTURE_STATUS_NONE = 0, ACTIVE = 1 */
    if (is_capturing && is_capturing(stream, &st) == 0) c->captured = st == 1;
}

/* Fallback for graph capture, used only while CUPTI has reported no graph node creation
 * at all in this process (if it does not report nodes added by stream capture): the
 * nodes of the capture graph are listed before and after the NCCL call (driver API
 * cuStreamGetCaptureInfo_v2 + cuGraphGetNodes, read-only) and the new ones belong to the
 * call. SPECPROF_CAPTURE_DIFF=0 turns it off. */
typedef CUresult (*pshim_capinfo_fn)(CUstream, CUstreamCaptureStatus *, cuuint64_t *, CUgraph *,
                                     const CUgraphNode **, size_t *);
typedef CUresult (*pshim_getnodes_fn)(CUgraph, CUgraphNode *, size_t *);
typedef struct { CUgraph graph; CUgraphNode *nodes; size_t n; int active; } pshim_snap;

static int pshim_ptr_cmp(const void *a, const void *b) {
    uintptr_t x = (uintptr_t)*(CUgraphNode const *)a, y = (uintptr_t)*(CUgraphNode const *)b;
    return x < y ? -1 : x > y;
}

static int pshim_graph_api(pshim_capinfo_fn *ci, pshim_getnodes_fn *gn) {
    static pshim_capinfo_fn capinfo;
    static pshim_getnodes_fn getnodes;
    static int looked, off;
    if (!looked) {
        const char *e = getenv("SPECPROF_CAPTURE_DIFF");
        off = e && !strcmp(e, "0");
        capinfo = (pshim_capinfo_fn)dlsym(RTLD_DEFAULT, "cuStreamGetCaptureInfo_v2");
        getnodes = (pshim_getnodes_fn)dlsym(RTLD_DEFAULT, "cuGraphGetNodes");
        void *cu = capinfo && getnodes ? NULL : dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
        if (cu) {
            capinfo = (pshim_capinfo_fn)dlsym(cu, "cuStreamGetCaptureInfo_v2");
            getnodes = (pshim_getnodes_fn)dlsym(cu, "cuGraphGetNodes");
        }
        looked = 1;
    }
    *ci = capinfo; *gn = getnodes;
    return !off && capinfo && getnodes;
}

/* Nodes of g, sorted by address, malloc'd; NULL (and *n = 0) on failure. */
static CUgraphNode *pshim_nodes(pshim_getnodes_fn getnodes, CUgraph graph, size_t *n) {
    *n = 0;
    size_t k = 0;
    if (getnodes(graph, NULL, &k) != CUDA_SUCCESS) return NULL;
    CUgraphNode *v = malloc((k ? k : 1) * sizeof *v);
    if (!v) return NULL;
    if (k && getnodes(graph, v, &k) != CUDA_SUCCESS) { free(v); return NULL; }
    qsort(v, k, sizeof *v, pshim_ptr_cmp);
    *n = k;
    return v;
}

static void pshim_snap_before(pshim_snap *s, pshim_stream stream, int captured) {
    memset(s, 0, sizeof *s);
    pshim_capinfo_fn capinfo;
    pshim_getnodes_fn getnodes;
    /* lite mode: no CUPTI node ids to link the nodes to, so no snapshot either */
    if (!captured || pinject_lite() || pinject_graph_nodes_seen() > 0 || !pshim_graph_api(&capinfo, &getnodes)) return;
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    cuuint64_t id = 0;
    CUgraph graph = NULL;
    const CUgraphNode *deps = NULL;
    size_t nd = 0;
    if (capinfo((CUstream)stream, &st, &id, &graph, &deps, &nd) != CUDA_SUCCESS || st != CU_STREAM_CAPTURE_STATUS_ACTIVE || !graph)
        return;
    s->nodes = pshim_nodes(getnodes, graph, &s->n);
    if (!s->nodes) return;
    s->graph = graph;
    s->active = 1;
}

static void pshim_snap_after(pshim_snap *s, const ptrace_nccl *call) {
    if (!s->active) return;
    pshim_capinfo_fn capinfo;
    pshim_getnodes_fn getnodes;
    if (pinject_graph_nodes_seen() == 0 && pshim_graph_api(&capinfo, &getnodes) && pinject_cupti_hold()) {
        size_t n = 0, added = 0;
        CUgraphNode *now = pshim_nodes(getnodes, s->graph, &n);
        for (size_t i = 0; now && i < n; i++) {
            if (bsearch(&now[i], s->nodes, s->n, sizeof *s->nodes, pshim_ptr_cmp)) continue;
            uint64_t id = 0;
            if (cuptiGetGraphNodeId(now[i], &id) == CUPTI_SUCCESS && pnccl_map_add_node(pinject_nccl(), id, call) == 0) added++;
        }
        free(now);
        pinject_cupti_release();
        static int told;
        if (added && !told) {
            told = 1;
            pinject_note("CUPTI reported no graph node creation during stream capture: NCCL's graph nodes are found "
                         "by listing the capture graph before and after each call (cuGraphGetNodes)");
        }
    }
    free(s->nodes);
    s->nodes = NULL;
    s->active = 0;
}

typedef struct { int64_t t0; ptrace_nccl call; pshim_stream stream; pshim_snap snap; } pshim_open;

static void pshim_begin(pshim_open *o, const char *op, int redop, int dtype, size_t count, pshim_comm comm,
                        pshim_stream stream, int root_or_peer) {
    pshim_describe(&o->call, op, redop, dtype, count, comm, stream, root_or_peer);
    o->stream = stream;
    pshim_snap_before(&o->snap, stream, o->call.captured);
    o->t0 = pinject_now_ns();
    pnccl_call_enter(&pinject_thread()->nccl, &o->call);
}

static void pshim_end(pshim_open *o) {
    pinject_tls *t = pinject_thread();
    pnccl_call_exit(&t->nccl);
    pshim_snap_after(&o->snap, &o->call);
    pinject_nccl_called();
    if (!pinject_recording()) return;
    ptrace_ncclcall e = { o->t0, pinject_now_ns(), t->tid, (uint64_t)(uintptr_t)o->stream, o->call };
    pinject_host_nccl(&e);
}

#define PSHIM_REAL(fn_t, name) \
    static fn_t real; \
    if (!real) real = (fn_t)pshim_next(name); \
    if (!real) return PSHIM_SYSTEM_ERROR

typedef pshim_result (*pshim_allreduce_fn)(const void *, void *, size_t, int, int, pshim_comm, pshim_stream);
pshim_result ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, int datatype, int op,
                           pshim_comm comm, pshim_stream stream) {
    PSHIM_REAL(pshim_allreduce_fn, "ncclAllReduce");
    if (!pinject_attached()) return real(sendbuff, recvbuff, count, datatype, op, comm, stream);
    pshim_open o;
    pshim_begin(&o, "allreduce", op, datatype, count, comm, stream, -1);
    pshim_result rc = real(sendbuff, recvbuff, count, datatype, op, comm, stream);
    pshim_end(&o);
    return rc;
}

typedef pshim_result (*pshim_reducescatter_fn)(const void *, void *, size_t, int, int, pshim_comm, pshim_stream);
pshim_result ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount, int datatype, int op,
                               pshim_comm comm, pshim_stream stream) {
    PSHIM_REAL(pshim_reducescatter_fn, "ncclReduceScatter");
    if (!pinject_attached()) return real(sendbuff, recvbuff, recvcount, datatype, op, comm, stream);
    pshim_open o;
    pshim_begin(&o, "reducescatter", op, datatype, recvcount, comm, stream, -1);
    pshim_result rc = real(sendbuff, recvbuff, recvcount, datatype, op, comm, stream);
    pshim_end(&o);
    return rc;
}

typedef pshim_result (*pshim_allgather_fn)(const void *, void *, size_t, int, pshim_comm, pshim_stream);
pshim_result ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount, int datatype,
                           pshim_comm comm, pshim_stream stream) {
    PSHIM_REAL(pshim_allgather_fn, "ncclAllGather");
    if (!pinject_attached()) return real(sendbuff, recvbuff, sendcount, datatype, comm, stream);
    pshim_open o;
    pshim_begin(&o, "allgather", -1, datatype, sendcount, comm, stream, -1);
    pshim_result rc = real(sendbuff, recvbuff, sendcount, datatype, comm, stream);
    pshim_end(&o);
    return rc;
}

typedef pshim_result (*pshim_broadcast_fn)(const void *, void *, size_t, int, int, pshim_comm, pshim_stream);
pshim_result ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count, int datatype, int root,
                           pshim_comm comm, pshim_stream stream) {
    PSHIM_REAL(pshim_broadcast_fn, "ncclBroadcast");
    if (!pinject_attached()) return real(sendbuff, recvbuff, count, datatype, root, comm, stream);
    pshim_open o;
    pshim_begin(&o, "broadcast", -1, datatype, count, comm, stream, root);
    pshim_result rc = real(sendbuff, recvbuff, count, datatype, root, comm, stream);
    pshim_end(&o);
    return rc;
}

typedef pshim_result (*pshim_reduce_fn)(const void *, void *, size_t, int, int, int, pshim_comm, pshim_stream);
pshim_result ncclReduce(const void *sendbuff, void *recvbuff, size_t count, int datatype, int op, int root,
                        pshim_comm comm, pshim_stream stream) {
    PSHIM_REAL(pshim_reduce_fn, "ncclReduce");
    if (!pinject_attached()) return real(sendbuff, recvbuff, count, datatype, op, root, comm, stream);
    pshim_open o;
    pshim_begin(&o, "reduce", op, datatype, count, comm, stream, root);
    pshim_result rc = real(sendbuff, recvbuff, count, datatype, op, root, comm, stream);
    pshim_end(&o);
    return rc;
}

typedef pshim_result (*pshim_send_fn)(const void *, size_t, int, int, pshim_comm, pshim_stream);
pshim_result ncclSend(const void *sendbuff, size_t count, int datatype, int peer, pshim_comm comm, pshim_stream stream) {
    PSHIM_REAL(pshim_send_fn, "ncclSend");
    if (!pinject_attached()) return real(sendbuff, count, datatype, peer, comm, stream);
    pshim_open o;
    pshim_begin(&o, "send", -1, datatype, count, comm, stream, peer);
    pshim_result rc = real(sendbuff, count, datatype, peer, comm, stream);
    pshim_end(&o);
    return rc;
}

typedef pshim_result (*pshim_recv_fn)(void *, size_t, int, int, pshim_comm, pshim_stream);
pshim_result ncclRecv(void *recvbuff, size_t count, int datatype, int peer, pshim_comm comm, pshim_stream stream) {
    PSHIM_REAL(pshim_recv_fn, "ncclRecv");
    if (!pinject_attached()) return real(recvbuff, count, datatype, peer, comm, stream);
    pshim_open o;
    pshim_begin(&o, "recv", -1, datatype, count, comm, stream, peer);
    pshim_result rc = real(recvbuff, count, datatype, peer, comm, stream);
    pshim_end(&o);
    return rc;
}

typedef pshim_result (*pshim_group_fn)(void);
pshim_result ncclGroupStart(void) {
    PSHIM_REAL(pshim_group_fn, "ncclGroupStart");
    if (pinject_attached()) pnccl_group_start(&pinject_thread()->nccl);
    return real();
}

pshim_result ncclGroupEnd(void) {
    PSHIM_REAL(pshim_group_fn, "ncclGroupEnd");
    if (!pinject_attached()) return real();
    pnccl_thread *t = &pinject_thread()->nccl;
    pnccl_group_end_enter(t);
    pshim_result rc = real();
    pnccl_group_end_exit(t);
    return rc;
}
