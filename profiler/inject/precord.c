/* precord.c: CUPTI activity records -> trace lines (see precord.h).
 * Record layouts are the ones of the CUPTI headers this was built with
 * (CUpti_ActivityKernel10, Memcpy6, Memset4, API, GraphTrace2); pinject.c refuses a libcupti older
 * than those headers, so the layouts match what CUPTI fills in. */
#include "precord.h"
#include "ptrace_write.h"
#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PRECORD_LINE_BYTES 16384
#define PRECORD_LAUNCHES 4096       /* graph launches remembered for their exec id */
#define PRECORD_DEMANGLED 4096      /* distinct kernel names cached */
#define PRECORD_STREAMS 4096        /* stream ids that get a track name */

/* corr << 32 | exec per slot, one atomic word: the graph-launch callback writes it on the
 * program's thread without a lock, the writer thread reads it. */
static _Atomic uint64_t precord_launch[PRECORD_LAUNCHES];
static _Atomic int64_t precord_skip_tid = -1;

void precord_note_graph_launch(uint32_t corr, uint32_t graph_exec_id) {
    atomic_store_explicit(&precord_launch[corr % PRECORD_LAUNCHES], (uint64_t)corr << 32 | graph_exec_id,
                          memory_order_relaxed);
}

static uint32_t precord_launch_exec(uint32_t corr) {
    uint64_t v = atomic_load_explicit(&precord_launch[corr % PRECORD_LAUNCHES], memory_order_relaxed);
    return (uint32_t)(v >> 32) == corr ? (uint32_t)v : 0;
}

void precord_forget_launches(void) {
    for (int i = 0; i < PRECORD_LAUNCHES; i++) atomic_store_explicit(&precord_launch[i], 0, memory_order_relaxed);
}

/* The id written for CUPTI's correlation id c. */
static uint32_t precord_corr(precord_stats *st, uint32_t c) {
    if (!c) return 0;
    uint32_t w = c + st->corr_base;
    if (w > st->corr_max) st->corr_max = w;
    return w;
}

void precord_skip_thread(int64_t tid) { atomic_store(&precord_skip_tid, tid); }

/* The calibration's stream: its graph-level records are dropped (their graphId is not the
 * captured graph's, and launches outside windows pass no callback, so the stream tells). */
static _Atomic uint32_t precord_skip_stream_id = UINT32_MAX;

void precord_skip_stream(uint32_t stream_id) { atomic_store(&precord_skip_stream_id, stream_id); }

typedef char *(*precord_cxa_fn)(const char *, char *, size_t *, int *);
static struct { char *mangled, *demangled; } precord_dm[PRECORD_DEMANGLED];

const char *precord_demangle(const char *mangled) {
    static precord_cxa_fn cxa;
    static int looked;
    if (!looked) { cxa = (precord_cxa_fn)dlsym(RTLD_DEFAULT, "__cxa_demangle"); looked = 1; }
    if (!mangled) return "?";
    if (!cxa || mangled[0] != '_' || mangled[1] != 'Z') return mangled;
    uint32_t h = 2166136261u;
    for (const char *p = mangled; *p; p++) h = (h ^ (unsigned char)*p) * 16777619u;
    unsigned slot = h % PRECORD_DEMANGLED;
    if (precord_dm[slot].mangled && !strcmp(precord_dm[slot].mangled, mangled)) return precord_dm[slot].demangled;
    int status = 0;
    char *d = cxa(mangled, NULL, NULL, &status);
    if (!d || status != 0) { free(d); return mangled; }
    char *m = strdup(mangled);
    if (!m) { free(d); return mangled; }
    free(precord_dm[slot].mangled);
    free(precord_dm[slot].demangled);
    precord_dm[slot].mangled = m;
    precord_dm[slot].demangled = d;
    return d;
}

/* API name without CUPTI's version suffix ("cudaLaunchKernel_v7000" -> "cudaLaunchKernel"). */
static const char *precord_api_name(int driver, uint32_t cbid) {
    static char *names[2][1024];
    if (cbid >= 1024) return driver ? "driver_api" : "runtime_api";
    if (!names[driver][cbid]) {
        const char *n = NULL;
        if (cuptiGetCallbackName(driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &n) != CUPTI_SUCCESS || !n)
            return driver ? "driver_api" : "runtime_api";
        char *s = strdup(n);
        if (!s) return n;
        char *v = strstr(s, "_v");
        if (v && v[2] >= '0' && v[2] <= '9' && strspn(v + 2, "0123456789") == strlen(v + 2)) *v = 0;
        names[driver][cbid] = s;
    }
    return names[driver][cbid];
}

static const char *precord_copy_kind(uint8_t k) {
    static const char *n[] = { "unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA", "AtoD", "DtoA", "DtoD", "HtoH", "PtoP" };
    return k < sizeof n / sizeof n[0] ? n[k] : "unknown";
}

static unsigned char precord_stream_named[PRECORD_STREAMS / 8];

static void precord_stream_track(uint32_t stream, const ptrace_ctx *ctx, precord_emit_fn emit, void *user, char *line) {
    if (stream >= PRECORD_STREAMS || (precord_stream_named[stream / 8] & (1u << (stream % 8)))) return;
    precord_stream_named[stream / 8] |= (unsigned char)(1u << (stream % 8));
    char name[32];
    snprintf(name, sizeof name, "stream %u", stream);
    int n = ptrace_write_thread_name(line, PRECORD_LINE_BYTES, ctx, stream, name);
    if (n > 0) emit(user, line, n);
}

/* The fields CUpti_ActivityMemcpy6 and CUpti_ActivityMemset4 share, by the same names. */
#define PRECORD_MEM_COMMON(m, r) do { \
    (m).bytes = (r)->bytes; (m).corr = (r)->correlationId; (m).dev = (r)->deviceId; \
    (m).stream = (r)->streamId; (m).graph_id = (r)->graphId; (m).graph_node_id = (r)->graphNodeId; \
    } while (0)

/* A copy or set record, its common fields filled: NVTX range and NCCL call of its launch,
 * then its trace line. nv/ph are the caller's PNVTX_NAME_MAX and 24-byte buffers. */
static int precord_mem_line(ptrace_mem *m, const ptrace_ctx *ctx, pnvtx *nvtx, pnccl_map *nccl,
                            precord_emit_fn emit, void *user, precord_stats *st, char *line,
                            char *nv, char *ph) {
    pnvtx_lookup(nvtx, m->corr, nv, PNVTX_NAME_MAX, ph, 24);
    m->nvtx = nv; m->phase = ph;
    m->has_nccl = pnccl_map_find(nccl, m->corr, m->graph_node_id, &m->nccl);
    if (m->has_nccl) st->nccl_matched++;
    m->corr = precord_corr(st, m->corr);
    precord_stream_track(m->stream, ctx, emit, user, line);
    return ptrace_write_mem(line, PRECORD_LINE_BYTES, ctx, m);
}

void precord_buffer(uint8_t *buf, size_t valid_bytes, const ptrace_ctx *ctx, pnvtx *nvtx,
                    pnccl_map *nccl, precord_emit_fn emit, void *user, precord_stats *st) {
    static char line[PRECORD_LINE_BYTES];
    char nv[PNVTX_NAME_MAX], ph[24];
    CUpti_Activity *rec = NULL;
    while (cuptiActivityGetNextRecord(buf, valid_bytes, &rec) == CUPTI_SUCCESS) {
        int n = -1;
        switch (rec->kind) {
        case CUPTI_ACTIVITY_KIND_KERNEL:
        case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
            const CUpti_ActivityKernel10 *r = (const CUpti_ActivityKernel10 *)rec;
            if (r->name && !strcmp(r->name, PRECORD_CALIB_KERNEL)) { st->calib_dropped++; continue; }
            if (!r->start || r->end < r->start) { st->incomplete++; continue; }   /* forced flush mid-kernel */
            ptrace_kernel k;
            memset(&k, 0, sizeof k);
            k.start_ns = (int64_t)r->start; k.end_ns = (int64_t)r->end;
            k.name = precord_demangle(r->name);
            k.corr = r->correlationId; k.dev = r->deviceId; k.stream = r->streamId;
            k.grid[0] = r->gridX; k.grid[1] = r->gridY; k.grid[2] = r->gridZ;
            k.block[0] = r->blockX; k.block[1] = r->blockY; k.block[2] = r->blockZ;
            k.smem_bytes = r->staticSharedMemory + r->dynamicSharedMemory;
            k.regs = r->registersPerThread;
            k.graph_id = r->graphId; k.graph_node_id = r->graphNodeId;
            pnvtx_lookup(nvtx, r->correlationId, nv, sizeof nv, ph, sizeof ph);
            k.nvtx = nv; k.phase = ph;
            k.has_nccl = pnccl_map_find(nccl, r->correlationId, r->graphNodeId, &k.nccl);
            if (k.has_nccl) st->nccl_matched++;
            k.corr = precord_corr(st, r->correlationId);
            precord_stream_track(r->streamId, ctx, emit, user, line);
            n = ptrace_write_kernel(line, sizeof line, ctx, &k);
            break;
        }
        case CUPTI_ACTIVITY_KIND_MEMCPY: {
            const CUpti_ActivityMemcpy6 *r = (const CUpti_ActivityMemcpy6 *)rec;
            if (!r->start || r->end < r->start) { st->incomplete++; continue; }
            ptrace_mem m;
            memset(&m, 0, sizeof m);
            m.kind = PTRACE_MEMCPY;
            m.start_ns = (int64_t)r->start; m.end_ns = (int64_t)r->end;
            m.copy_kind = precord_copy_kind(r->copyKind);
            PRECORD_MEM_COMMON(m, r);
            n = precord_mem_line(&m, ctx, nvtx, nccl, emit, user, st, line, nv, ph);
            break;
        }
        case CUPTI_ACTIVITY_KIND_MEMSET: {
            const CUpti_ActivityMemset4 *r = (const CUpti_ActivityMemset4 *)rec;
            if (!r->start || r->end < r->start) { st->incomplete++; continue; }
            ptrace_mem m;
            memset(&m, 0, sizeof m);
            m.kind = PTRACE_MEMSET;
            m.start_ns = (int64_t)r->start; m.end_ns = (int64_t)r->end;
            m.copy_kind = "";
            PRECORD_MEM_COMMON(m, r);
            n = precord_mem_line(&m, ctx, nvtx, nccl, emit, user, st, line, nv, ph);
            break;
        }
        case CUPTI_ACTIVITY_KIND_RUNTIME:
        case CUPTI_ACTIVITY_KIND_DRIVER: {
            const CUpti_ActivityAPI *r = (const CUpti_ActivityAPI *)rec;
            if ((int64_t)r->threadId == atomic_load(&precord_skip_tid)) { st->calib_dropped++; continue; }
            /* a call in flight when its records were switched on or off has no start (seen on the H200) */
            if (!r->start || r->end < r->start) { st->incomplete++; continue; }
            ptrace_api a;
            memset(&a, 0, sizeof a);
            a.domain_driver = rec->kind == CUPTI_ACTIVITY_KIND_DRIVER;
            a.start_ns = (int64_t)r->start; a.end_ns = (int64_t)r->end;
            a.name = precord_api_name(a.domain_driver, r->cbid);
            a.corr = r->correlationId; a.cbid = r->cbid; a.thread = r->threadId;
            a.graph_exec_id = precord_launch_exec(r->correlationId);
            a.corr = precord_corr(st, r->correlationId);
            n = ptrace_write_api(line, sizeof line, ctx, &a);
            break;
        }
        case CUPTI_ACTIVITY_KIND_GRAPH_TRACE: {
            const CUpti_ActivityGraphTrace2 *r = (const CUpti_ActivityGraphTrace2 *)rec;
            if (r->streamId == atomic_load_explicit(&precord_skip_stream_id, memory_order_relaxed)) { st->calib_dropped++; continue; }
            if (!r->start || r->end < r->start) { st->incomplete++; continue; }
            ptrace_graphlaunch gl;
            memset(&gl, 0, sizeof gl);
            gl.start_ns = (int64_t)r->start; gl.end_ns = (int64_t)r->end;
            gl.corr = r->correlationId; gl.dev = r->deviceId; gl.stream = r->streamId; gl.graph_id = r->graphId;
            gl.graph_exec_id = precord_launch_exec(r->correlationId);
            pnvtx_lookup(nvtx, r->correlationId, nv, sizeof nv, ph, sizeof ph);
            gl.nvtx = nv; gl.phase = ph;
            gl.corr = precord_corr(st, r->correlationId);
            precord_stream_track(r->streamId, ctx, emit, user, line);
            n = ptrace_write_graphlaunch(line, sizeof line, ctx, &gl);
            if (n > 0) st->graph_trace++;
            break;
        }
        default:
            st->unknown++;
            continue;
        }
        if (n > 0) { emit(user, line, n); st->records++; }
    }
}
