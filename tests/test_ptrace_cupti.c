/* test_ptrace_cupti.c: synthetic CUPTI activity records (CUpti_ActivityKernel10,
 * Memcpy6, Memset4, API) in a buffer, through the injection library's converter
 * (profiler/inject/precord.c, compiled in here) and the trace writer, parsed back and
 * compared field by field; with the NVTX and NCCL links set up the way the callbacks do.
 * Needs CUPTI's headers and libcupti (no GPU): built with -DPTRACE_HAVE_CUPTI by
 * profiler/profiler.mk where they exist; elsewhere it reports one skip. */
#include "check.h"
#ifdef PTRACE_HAVE_CUPTI
#include "precord.c"
#include "ptrace_read.h"
#include <stdlib.h>

typedef struct { char *buf; size_t len, cap; } sbuf;
static void collect(void *user, const char *line, int n) {
    sbuf *b = user;
    if (b->len + (size_t)n + 1 > b->cap) { b->cap = (b->len + (size_t)n + 1) * 2; b->buf = realloc(b->buf, b->cap); }
    memcpy(b->buf + b->len, line, (size_t)n);
    b->len += (size_t)n;
    b->buf[b->len] = 0;
}

static uint8_t buffer[1 << 16] __attribute__((aligned(8)));

static void precord_cupti_records_roundtrip(void) {
    const int64_t t0 = 1000000000LL;
    char err[256];
    pnvtx *nv = pnvtx_create(8, 12, NULL, err, sizeof err);
    pnccl_map *nc = pnccl_map_create(8, 8);
    pnvtx_stack st;
    memset(&st, 0, sizeof st);
    /* the callbacks' view: corr 10 = cudaGraphLaunch inside "verify bs=8", graph node 77
     * created while ncclAllReduce (bf16, 7168 elements) was open, corr 20 = eager launch
     * inside NCCL's own call outside any range */
    pnvtx_push(nv, &st, "verify bs=8 tokens=32", 0, t0);
    pnvtx_on_launch(nv, &st, 10);
    pnvtx_closed cl;
    pnvtx_pop(nv, &st, 0, t0 + 5, &cl);
    pnvtx_on_launch(nv, &st, 20);
    ptrace_nccl call;
    memset(&call, 0, sizeof call);
    pnccl_describe(&call, "allreduce", 0, 9, 7168);
    call.comm_size = 8; call.rank = 1; call.seq = 3; call.captured = 1; call.group_ops = 1;
    pnccl_map_add_node(nc, 77, &call);
    pnccl_map_clone_node(nc, 77, 177);
    call.seq = 4; call.captured = 0;
    pnccl_map_add_corr(nc, 20, &call);
    precord_note_graph_launch(10, 6);

    size_t off = 0;
    CUpti_ActivityKernel10 *k = (CUpti_ActivityKernel10 *)(buffer + off);
    memset(k, 0, sizeof *k);
    k->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k->start = (uint64_t)t0 + 1234; k->end = (uint64_t)t0 + 5678; k->deviceId = 2; k->streamId = 13;
    k->gridX = 132; k->gridY = 2; k->gridZ = 1; k->blockX = 256; k->blockY = 1; k->blockZ = 1;
    k->staticSharedMemory = 1024; k->dynamicSharedMemory = 49152; k->registersPerThread = 96;
    k->correlationId = 10; k->graphId = 5; k->graphNodeId = 177;
    k->name = "_Z7k_scalePfif";
    off += sizeof *k;
    CUpti_ActivityKernel10 *k2 = (CUpti_ActivityKernel10 *)(buffer + off);
    memset(k2, 0, sizeof *k2);
    k2->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k2->start = (uint64_t)t0 + 9000; k2->end = (uint64_t)t0 + 9500; k2->streamId = 14; k2->correlationId = 20;
    k2->gridX = k2->gridY = k2->gridZ = k2->blockX = k2->blockY = k2->blockZ = 1;
    k2->name = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL";
    off += sizeof *k2;
    CUpti_ActivityMemcpy6 *m = (CUpti_ActivityMemcpy6 *)(buffer + off);
    memset(m, 0, sizeof *m);
    m->kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    m->copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOH; m->bytes = 4; m->start = (uint64_t)t0 + 6000; m->end = (uint64_t)t0 + 7000;
    m->deviceId = 2; m->streamId = 13; m->correlationId = 21;
    off += sizeof *m;
    CUpti_ActivityMemset4 *s = (CUpti_ActivityMemset4 *)(buffer + off);
    memset(s, 0, sizeof *s);
    s->kind = CUPTI_ACTIVITY_KIND_MEMSET;
    s->bytes = 1 << 20; s->start = (uint64_t)t0 + 100; s->end = (uint64_t)t0 + 200; s->streamId = 13;
    s->correlationId = 10; s->graphId = 5; s->graphNodeId = 178;
    off += sizeof *s;
    CUpti_ActivityAPI *a = (CUpti_ActivityAPI *)(buffer + off);
    memset(a, 0, sizeof *a);
    a->kind = CUPTI_ACTIVITY_KIND_RUNTIME;
    a->cbid = CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000;
    a->start = (uint64_t)t0 + 50; a->end = (uint64_t)t0 + 950; a->threadId = 4321; a->correlationId = 10;
    off += sizeof *a;

    ptrace_ctx ctx = { 1, t0 };
    sbuf out = { 0 };
    precord_stats ps;
    memset(&ps, 0, sizeof ps);
    ptrace_header h;
    memset(&h, 0, sizeof h);
    h.format_version = PTRACE_FORMAT_VERSION; h.rank = 1; h.t0_ns = t0;
    char line[4096];
    collect(&out, "[\n", 2);
    collect(&out, line, ptrace_write_header(line, sizeof line, &ctx, &h));
    precord_buffer(buffer, off, &ctx, nv, nc, collect, &out, &ps);
    CHECK(ps.records == 5 && ps.nccl_matched == 2 && ps.unknown == 0, "records %lld nccl %lld unknown %lld",
          (long long)ps.records, (long long)ps.nccl_matched, (long long)ps.unknown);
    ptrace_file f;
    int rc = ptrace_read_buf(out.buf, out.len, "synthetic", &f, err, sizeof err);
    CHECK(rc == 0, "%s", err);
    if (rc) { free(out.buf); return; }
    int kernels = 0, memcpys = 0, memsets = 0, apis = 0, tracks = 0;
    for (size_t i = 0; i < f.n_ev; i++) {
        const ptrace_event *e = &f.ev[i];
        ptrace_kernel rk; ptrace_mem rm; ptrace_api ra;
        if (!ptrace_read_kernel(e, t0, &rk)) {
            if (rk.corr == 10) {
                CHECK(rk.start_ns == t0 + 1234 && rk.end_ns == t0 + 5678, "kernel times");
                CHECK(rk.dev == 2 && rk.stream == 13 && rk.grid[0] == 132 && rk.grid[1] == 2 && rk.block[0] == 256,
                      "kernel dims");
                CHECK(rk.smem_bytes == 1024 + 49152 && rk.regs == 96, "smem %d regs %d", rk.smem_bytes, rk.regs);
                CHECK(rk.graph_id == 5 && rk.graph_node_id == 177, "graph ids");
                CHECK(!strcmp(rk.nvtx, "verify bs=8 tokens=32") && !strcmp(rk.phase, "verify"), "nvtx '%s' '%s'", rk.nvtx, rk.phase);
                CHECK(rk.has_nccl && rk.nccl.seq == 3 && rk.nccl.bytes == 14336 && rk.nccl.captured, "nccl via cloned node");
                /* demangled when a C++ runtime is loaded, else the mangled name */
                CHECK(!strcmp(rk.name, "k_scale(float*, int, float)") || !strcmp(rk.name, "_Z7k_scalePfif"), "name '%s'", rk.name);
            } else {
                CHECK(rk.corr == 20 && rk.has_nccl && rk.nccl.seq == 4 && !rk.nccl.captured && rk.nvtx[0] == 0,
                      "eager NCCL kernel by corr");
            }
            kernels++;
        } else if (!ptrace_read_mem(e, t0, &rm)) {
            if (rm.kind == PTRACE_MEMCPY) {
                memcpys++;
                CHECK(!strcmp(rm.copy_kind, "DtoH") && rm.bytes == 4 && rm.corr == 21 && !rm.has_nccl, "memcpy");
            } else {
                memsets++;
                CHECK(rm.bytes == 1 << 20 && rm.graph_node_id == 178 && !rm.has_nccl && !strcmp(rm.phase, "verify"),
                      "memset in graph: phase '%s'", rm.phase);
            }
        } else if (!ptrace_read_api(e, t0, &ra)) {
            apis++;
            CHECK(!strcmp(ra.name, "cudaGraphLaunch") && ra.thread == 4321 && ra.corr == 10 && ra.graph_exec_id == 6 &&
                  !ra.domain_driver && ra.start_ns == t0 + 50 && ra.end_ns == t0 + 950, "api '%s' exec %u", ra.name,
                  ra.graph_exec_id);
        } else if (e->ph == 'M' && !strcmp(e->name, "thread_name")) tracks++;
    }
    CHECK(kernels == 2 && memcpys == 1 && memsets == 1 && apis == 1 && tracks == 2, "k%d c%d s%d a%d tracks %d",
          kernels, memcpys, memsets, apis, tracks);
    ptrace_file_free(&f);
    free(out.buf);
    pnvtx_destroy(nv);
    pnccl_map_destroy(nc);
}

int main(void) {
    RUN(precord_cupti_records_roundtrip);
    return check_done();
}
#else
int main(void) {
    (void)check_cur_failed;
    printf("skip test_ptrace_cupti: built without CUPTI headers (profiler/profiler.mk sets PTRACE_HAVE_CUPTI)\n");
    return check_done();
}
#endif
