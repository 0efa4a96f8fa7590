/* test_ptrace.c: the trace writer and reader (profiler/core/ptrace_*): synthetic events
 * are written through ptrace_out exactly as libspecprof writes them, read back, and
 * compared field by field; files cut at every byte offset must load what is complete
 * and report the cut, never crash. */
#include "check.h"
#include "ptrace_out.h"
#include "ptrace_read.h"
#include "ptrace_write.h"
#include "ptrace_sum.h"
#include "pjson.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint64_t rng_state = 0x9E3779B97F4A7C15ULL;  /* seeded: same events every run */
static uint64_t rnd(void) {
    rng_state ^= rng_state << 13; rng_state ^= rng_state >> 7; rng_state ^= rng_state << 17;
    return rng_state;
}
static int64_t rnd_in(int64_t lo, int64_t hi) { return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1)); }

static void fill_header(ptrace_header *h) {
    memset(h, 0, sizeof *h);
    h->format_version = PTRACE_FORMAT_VERSION;
    snprintf(h->tool_version, sizeof h->tool_version, "%s", PTRACE_TOOL_VERSION);
    snprintf(h->host, sizeof h->host, "node-7");
    h->pid_os = 4242; h->rank = 3; h->world_size = 8;
    h->t0_ns = 1700000000123456789LL; h->t0_unix_ns = 1733000000000000001LL;
    h->cupti_version = 130001; h->cuda_driver_version = 13000; h->cuda_runtime_version = 13000;
    h->nccl_version = 22809;
    snprintf(h->device.name, sizeof h->device.name, "NVIDIA H200");
    h->device.index = 3; h->device.sms = 132; h->device.clock_khz = 1980000; h->device.mem_clock_khz = 3201000;
    h->device.mem_bytes = 150754820096LL; h->device.mem_bus_bits = 6144; h->device.l2_bytes = 62914560;
    h->device.cc_major = 9; h->device.cc_minor = 0;
    snprintf(h->device.pci_bus_id, sizeof h->device.pci_bus_id, "0000:19:00.0");
    h->n_peers = 2;
    h->peers[0] = (ptrace_peer){ 0, 1, 1, 0 };
    h->peers[1] = (ptrace_peer){ 1, 1, 0, 2 };
    h->n_phases = 3;
    snprintf(h->phases[0], sizeof h->phases[0], "draft");
    snprintf(h->phases[1], sizeof h->phases[1], "verify");
    snprintf(h->phases[2], sizeof h->phases[2], "extend");
    h->delay_s = 1.5; h->duration_s = -1; h->flush_ms = 500; h->buffer_mb = 64;
    snprintf(h->cmd, sizeof h->cmd, "python3 -m sglang.launch_server --tp 8 \"quoted\"");
}

static void fill_nccl(ptrace_nccl *n, uint32_t seq) {
    memset(n, 0, sizeof *n);
    snprintf(n->op, sizeof n->op, "allreduce");
    snprintf(n->redop, sizeof n->redop, "sum");
    snprintf(n->dtype, sizeof n->dtype, "bfloat16");
    n->count = (uint64_t)rnd_in(1, 1 << 24);
    n->bytes = n->count * 2;
    n->comm_size = 8; n->rank = 3; n->root_or_peer = -1; n->group_ops = 1; n->seq = seq;
    n->captured = (int)(seq & 1);
}

static const char *names[] = {
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)",
    "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
    "kernel \"with quotes\" and \\backslash\\ and\ttab",
    "k\x01" "ctl",
    "caf\xc3\xa9_utf8",
};

static void fill_kernel(ptrace_kernel *k, int64_t t0, int i) {
    memset(k, 0, sizeof *k);
    k->start_ns = t0 + rnd_in(-5000, 5000000000LL);
    k->end_ns = k->start_ns + rnd_in(0, 10000000);
    k->name = names[i % 5];
    k->corr = (uint32_t)rnd_in(1, 4000000000LL);
    k->dev = (uint32_t)rnd_in(0, 7);
    k->stream = (uint32_t)rnd_in(7, 300);
    for (int d = 0; d < 3; d++) { k->grid[d] = (int32_t)rnd_in(1, 65535); k->block[d] = (int32_t)rnd_in(1, 1024); }
    k->smem_bytes = (int32_t)rnd_in(0, 232448);
    k->regs = (int32_t)rnd_in(8, 255);
    k->graph_id = (uint32_t)(i % 3 ? rnd_in(1, 100) : 0);
    k->graph_node_id = k->graph_id ? (uint64_t)rnd_in(1, 1LL << 40) : 0;
    k->nvtx = i % 4 ? "verify bs=8 tokens=32 graph=1" : "";
    k->phase = i % 4 ? "verify" : "";
    k->has_nccl = i % 5 == 1;
    if (k->has_nccl) fill_nccl(&k->nccl, (uint32_t)i);
}

typedef struct { char *buf; size_t len, cap; } sbuf;
static void sb_add(sbuf *b, const char *s, int n) {
    if (n < 0) return;
    if (b->len + (size_t)n + 1 > b->cap) { b->cap = (b->len + (size_t)n + 1) * 2; b->buf = realloc(b->buf, b->cap); }
    memcpy(b->buf + b->len, s, (size_t)n);
    b->len += (size_t)n;
    b->buf[b->len] = 0;
}

#define NK 60
static ptrace_header H;
static ptrace_kernel K[NK];
static ptrace_mem M[4];
static ptrace_api A[2];
static ptrace_range R[2];
static ptrace_ncclcall NC;
static ptrace_graphexec GE;
static ptrace_end E;

/* Writes the full synthetic trace through ptrace_out into path; returns the bytes. */
static void write_trace(const char *dir, char *path, size_t pathcap, sbuf *all) {
    fill_header(&H);
    ptrace_ctx c = { H.rank, H.t0_ns };
    char line[16384], err[256];
    ptrace_out o;
    CHECK(ptrace_out_open(&o, dir, H.rank, 4242, err, sizeof err) == 0, "%s", err);
    snprintf(path, pathcap, "%s", o.path_final);
    sb_add(all, "[\n", 2);
#define EMIT(expr) do { int n_ = (expr); CHECK(n_ > 0, "formatting %s failed", #expr); \
        if (n_ > 0) { CHECK(ptrace_out_write(&o, line, (size_t)n_) == 0, "write"); sb_add(all, line, n_); } } while (0)
    EMIT(ptrace_write_header(line, sizeof line, &c, &H));
    EMIT(ptrace_write_process_name(line, sizeof line, &c, "rank 3"));
    EMIT(ptrace_write_thread_name(line, sizeof line, &c, 7, "stream 7"));
    for (int i = 0; i < NK; i++) { fill_kernel(&K[i], H.t0_ns, i); EMIT(ptrace_write_kernel(line, sizeof line, &c, &K[i])); }
    const char *kinds[] = { "HtoD", "DtoH", "DtoD", "" };
    for (int i = 0; i < 4; i++) {
        ptrace_mem *m = &M[i];
        memset(m, 0, sizeof *m);
        m->kind = i == 3 ? PTRACE_MEMSET : PTRACE_MEMCPY;
        m->start_ns = H.t0_ns + 1000 * i + 7; m->end_ns = m->start_ns + 333;
        m->copy_kind = kinds[i]; m->bytes = (uint64_t)rnd_in(1, 1LL << 33);
        m->corr = (uint32_t)(100 + i); m->dev = 3; m->stream = 14;
        m->graph_id = i == 2 ? 5 : 0; m->graph_node_id = i == 2 ? 77 : 0;
        m->nvtx = "accept"; m->phase = "accept";
        m->has_nccl = i == 2;
        if (m->has_nccl) fill_nccl(&m->nccl, 9);
        EMIT(ptrace_write_mem(line, sizeof line, &c, m));
    }
    A[0] = (ptrace_api){ H.t0_ns + 10, H.t0_ns + 2010, "cudaGraphLaunch", 555, 311, 0, 123456, 4, 0, 0, 0, NULL, 0, NULL };
    A[1] = (ptrace_api){ H.t0_ns + 20, H.t0_ns + 20, "cuLaunchKernelEx", 556, 652, 1, 123457, 0, 0, 0, 0, NULL, 0, NULL };
    for (int i = 0; i < 2; i++) EMIT(ptrace_write_api(line, sizeof line, &c, &A[i]));
    R[0] = (ptrace_range){ H.t0_ns - 1000, H.t0_ns + 99999, "verify bs=8 tokens=32", "", 123456, 1, 0, 0, 0 };
    R[1] = (ptrace_range){ H.t0_ns + 5, H.t0_ns + 6, "ncclAllReduce", "NCCL", 123457, 0, 0, 0, 0 };
    for (int i = 0; i < 2; i++) EMIT(ptrace_write_range(line, sizeof line, &c, &R[i]));
    memset(&NC, 0, sizeof NC);
    NC.start_ns = H.t0_ns + 50; NC.end_ns = H.t0_ns + 900; NC.thread = 123456; NC.stream = 0x7f00deadbeefULL;
    fill_nccl(&NC.call, 12);
    EMIT(ptrace_write_ncclcall(line, sizeof line, &c, &NC));
    GE = (ptrace_graphexec){ H.t0_ns + 3, 2, 4, 1234, 123456 };
    EMIT(ptrace_write_graphexec(line, sizeof line, &c, &GE));
    memset(&E, 0, sizeof E);
    E.dropped_records = 17; E.dropped_host_events = 2; E.records = NK + 10; E.end_ns = H.t0_ns + 9999999;
    E.nccl_calls = 5; E.nccl_graph_nodes = 4; E.nccl_matched = 12; E.nvtx_ranges = 2;
    E.graph_nodes_created = 31; E.graph_nodes_cloned = 62;
    snprintf(E.reason, sizeof E.reason, "signal SIGTERM");
    EMIT(ptrace_write_end(line, sizeof line, &c, &E));
#undef EMIT
    CHECK(ptrace_out_finish(&o, err, sizeof err) == 0, "%s", err);
}

static void check_kernel_eq(const ptrace_kernel *a, const ptrace_kernel *b, int i) {
    CHECK(a->start_ns == b->start_ns, "kernel %d start %lld vs %lld", i, (long long)a->start_ns, (long long)b->start_ns);
    CHECK(a->end_ns == b->end_ns, "kernel %d end %lld vs %lld", i, (long long)a->end_ns, (long long)b->end_ns);
    CHECK(!strcmp(a->name, b->name), "kernel %d name '%s' vs '%s'", i, a->name, b->name);
    CHECK(a->corr == b->corr && a->dev == b->dev && a->stream == b->stream, "kernel %d corr/dev/stream", i);
    for (int d = 0; d < 3; d++)
        CHECK(a->grid[d] == b->grid[d] && a->block[d] == b->block[d], "kernel %d dim %d", i, d);
    CHECK(a->smem_bytes == b->smem_bytes && a->regs == b->regs, "kernel %d smem/regs", i);
    CHECK(a->graph_id == b->graph_id && a->graph_node_id == b->graph_node_id, "kernel %d graph %u/%llu vs %u/%llu",
          i, a->graph_id, (unsigned long long)a->graph_node_id, b->graph_id, (unsigned long long)b->graph_node_id);
    CHECK(!strcmp(a->nvtx, b->nvtx) && !strcmp(a->phase, b->phase), "kernel %d nvtx '%s' phase '%s'", i, b->nvtx, b->phase);
    CHECK(a->has_nccl == b->has_nccl, "kernel %d has_nccl %d vs %d", i, a->has_nccl, b->has_nccl);
    if (a->has_nccl && b->has_nccl)
        CHECK(!memcmp(&a->nccl, &b->nccl, sizeof a->nccl) ||
              (!strcmp(a->nccl.op, b->nccl.op) && !strcmp(a->nccl.dtype, b->nccl.dtype) && a->nccl.count == b->nccl.count &&
               a->nccl.bytes == b->nccl.bytes && a->nccl.comm_size == b->nccl.comm_size && a->nccl.rank == b->nccl.rank &&
               a->nccl.seq == b->nccl.seq && a->nccl.captured == b->nccl.captured && a->nccl.group_ops == b->nccl.group_ops),
              "kernel %d nccl differs", i);
}

static char tmpdir[256];
static sbuf whole;
static char trace_path[1100];

static void setup(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/test_ptrace.%d/sub/dir", (int)getpid());
    write_trace(tmpdir, trace_path, sizeof trace_path, &whole);
}

static void ptrace_roundtrips_every_field(void) {
    ptrace_file f;
    char err[512];
    CHECK(access(trace_path, R_OK) == 0, "renamed file %s missing", trace_path);
    int rc = ptrace_read_file(trace_path, &f, err, sizeof err);
    CHECK(rc == 0, "%s", err);
    if (rc) return;
    const ptrace_header *h = &f.info.header;
    CHECK(f.info.has_header && f.info.complete && !f.info.cut_last_line && !f.info.bad_lines, "status");
    CHECK(h->rank == H.rank && h->world_size == H.world_size && h->pid_os == H.pid_os, "rank/world/pid");
    CHECK(h->t0_ns == H.t0_ns && h->t0_unix_ns == H.t0_unix_ns, "t0 %lld", (long long)h->t0_ns);
    CHECK(!strcmp(h->device.name, H.device.name) && h->device.sms == 132 && h->device.mem_bytes == H.device.mem_bytes,
          "device %s", h->device.name);
    CHECK(h->device.cc_major == 9 && h->device.l2_bytes == H.device.l2_bytes && !strcmp(h->device.pci_bus_id, "0000:19:00.0"),
          "device details");
    CHECK(h->cupti_version == 130001 && h->nccl_version == 22809, "versions");
    CHECK(h->n_peers == 2 && h->peers[1].perf_rank == 2 && h->peers[0].native_atomics == 1, "peers %d", h->n_peers);
    CHECK(h->n_phases == 3 && !strcmp(h->phases[1], "verify"), "phases");
    CHECK(h->delay_s == 1.5 && h->duration_s == -1 && h->flush_ms == 500, "capture");
    CHECK(!strcmp(h->cmd, H.cmd), "cmd '%s'", h->cmd);
    int nk = 0, nm = 0, na = 0, nr = 0, nn = 0, ng = 0, nmeta = 0;
    for (size_t i = 0; i < f.n_ev; i++) {
        const ptrace_event *e = &f.ev[i];
        ptrace_kernel k; ptrace_mem m; ptrace_api a; ptrace_range r; ptrace_ncclcall n; ptrace_graphexec g;
        CHECK(e->pid == H.rank, "pid %lld", (long long)e->pid);
        if (!ptrace_read_kernel(e, h->t0_ns, &k)) { if (nk < NK) check_kernel_eq(&K[nk], &k, nk); nk++; }
        else if (!ptrace_read_mem(e, h->t0_ns, &m)) {
            const ptrace_mem *w = &M[nm++];
            CHECK(m.kind == w->kind && m.start_ns == w->start_ns && m.end_ns == w->end_ns && m.bytes == w->bytes, "mem %d", nm);
            CHECK(!strcmp(m.copy_kind, w->copy_kind) && m.graph_node_id == w->graph_node_id && m.has_nccl == w->has_nccl,
                  "mem %d kind '%s'", nm, m.copy_kind);
            CHECK(e->tid == w->stream, "mem tid");
        } else if (!ptrace_read_api(e, h->t0_ns, &a)) {
            const ptrace_api *w = &A[na++];
            CHECK(!strcmp(a.name, w->name) && a.corr == w->corr && a.cbid == w->cbid && a.thread == w->thread &&
                  a.domain_driver == w->domain_driver && a.graph_exec_id == w->graph_exec_id &&
                  a.start_ns == w->start_ns && a.end_ns == w->end_ns, "api %d", na);
        } else if (!ptrace_read_range(e, h->t0_ns, &r)) {
            const ptrace_range *w = &R[nr++];
            CHECK(!strcmp(r.name, w->name) && !strcmp(r.domain, w->domain) && r.thread == w->thread &&
                  r.push_pop == w->push_pop && r.start_ns == w->start_ns && r.end_ns == w->end_ns,
                  "range %d: '%s' %lld", nr, r.name, (long long)r.start_ns);
        } else if (!ptrace_read_ncclcall(e, h->t0_ns, &n)) {
            nn++;
            CHECK(n.start_ns == NC.start_ns && n.end_ns == NC.end_ns && n.stream == NC.stream && n.thread == NC.thread,
                  "nccl call times/stream");
            CHECK(!strcmp(n.call.op, "allreduce") && n.call.count == NC.call.count && n.call.bytes == NC.call.bytes &&
                  n.call.seq == 12 && n.call.captured == 0 && n.call.comm_size == 8, "nccl call args");
        } else if (!ptrace_read_graphexec(e, h->t0_ns, &g)) {
            ng++;
            CHECK(g.ts_ns == GE.ts_ns && g.graph_id == 2 && g.graph_exec_id == 4 && g.nodes == 1234, "graphexec");
        } else if (e->ph == 'M') nmeta++;
    }
    CHECK(nk == NK && nm == 4 && na == 2 && nr == 2 && nn == 1 && ng == 1 && nmeta == 2,
          "counts k%d m%d a%d r%d n%d g%d meta%d", nk, nm, na, nr, nn, ng, nmeta);
    CHECK(f.info.end.dropped_records == 17 && f.info.end.records == NK + 10 && !strcmp(f.info.end.reason, "signal SIGTERM"),
          "end %lld '%s'", (long long)f.info.end.dropped_records, f.info.end.reason);
    CHECK(f.info.end.nccl_matched == 12 && f.info.end.end_ns == E.end_ns && f.info.end.nccl_calls == 5 &&
          f.info.end.nccl_graph_nodes == 4 && f.info.end.nvtx_ranges == 2 && f.info.end.dropped_host_events == 2 &&
          f.info.end.graph_nodes_created == 31 && f.info.end.graph_nodes_cloned == 62, "end extras");
    ptrace_file_free(&f);
}

static void ptrace_file_is_strict_json_when_complete(void) {
    /* a complete file is one JSON array: parse it whole */
    pjson_arena *a = pjson_arena_create();
    pjson *v;
    char err[256];
    int rc = pjson_parse(a, whole.buf, whole.len, 0, &v, err, sizeof err);
    CHECK(rc == 0, "complete trace is not strict JSON: %s", err);
    if (!rc) CHECK(v->type == PJSON_ARR && v->len == (size_t)NK + 14, "array of %zu events", v->len);
    pjson_arena_destroy(a);
}

static void ptrace_ts_keeps_nanoseconds(void) {
    char line[1024];
    ptrace_ctx c = { 0, 1000000 };
    ptrace_kernel k;
    memset(&k, 0, sizeof k);
    k.name = "k"; k.nvtx = ""; k.phase = "";
    int64_t starts[] = { 1000000, 999999, 1000001, 1000000 - 123456789, 1000000 + 9007199254740LL, 0 };
    for (size_t i = 0; i < sizeof starts / sizeof starts[0]; i++) {
        k.start_ns = starts[i]; k.end_ns = starts[i] + 1;
        int n = ptrace_write_kernel(line, sizeof line, &c, &k);
        CHECK(n > 0, "format");
        char hdr[2048];
        ptrace_header h; fill_header(&h); h.t0_ns = c.t0_ns;
        int hn = ptrace_write_header(hdr, sizeof hdr, &c, &h);
        char text[4096];
        snprintf(text, sizeof text, "[\n%.*s%.*s", hn, hdr, n, line);
        ptrace_file f; char err[256];
        int rc = ptrace_read_buf(text, strlen(text), "ts", &f, err, sizeof err);
        CHECK(rc == 0 && f.n_ev == 1, "%s", err);
        if (rc == 0 && f.n_ev == 1) {
            ptrace_kernel r;
            ptrace_read_kernel(&f.ev[0], f.info.header.t0_ns, &r);
            CHECK(r.start_ns == k.start_ns && r.end_ns == k.end_ns, "start %lld read %lld", (long long)k.start_ns,
                  (long long)r.start_ns);
            CHECK(!f.info.complete, "no end event: truncated");
        }
        ptrace_file_free(&f);
    }
}

static void ptrace_rejects_non_traces_with_location(void) {
    const char *bad[] = { "", "[\n", "not json at all\n", "[\n{\"ph\":\"X\",\"name\":\"k\",\"cat\":\"kernel\"},\n",
                          "{\"traceEvents\":[]}" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ptrace_file f; char err[256] = "";
        int rc = ptrace_read_buf(bad[i], strlen(bad[i]), "bad.json", &f, err, sizeof err);
        CHECK(rc == -1, "input %zu accepted", i);
        CHECK(strstr(err, "bad.json") != NULL && strstr(err, "specprof") != NULL, "message '%s'", err);
    }
    /* a newer format version is refused with field and value */
    char hdr[2048];
    ptrace_header h; fill_header(&h); h.format_version = 99;
    ptrace_ctx c = { 0, 0 };
    int n = ptrace_write_header(hdr, sizeof hdr, &c, &h);
    ptrace_file f; char err[256] = "";
    CHECK(n > 0 && ptrace_read_buf(hdr, (size_t)n, "v99.json", &f, err, sizeof err) == -1, "v99 accepted");
    CHECK(strstr(err, "format_version") && strstr(err, "99"), "message '%s'", err);
}

/* The SIGKILL case: the file ends anywhere. Every cut must load (or be refused cleanly
 * when the header itself is incomplete), load a prefix of the events, and report. */
static void ptrace_truncated_at_every_offset_loads_prefix(void) {
    ptrace_file full;
    char err[512];
    CHECK(ptrace_read_buf(whole.buf, whole.len, "full", &full, err, sizeof err) == 0, "%s", err);
    size_t hdr_end = (size_t)(strchr(strchr(whole.buf, '\n') + 1, '\n') - whole.buf) + 1; /* after header line */
    size_t prev = 0;
    int refused = 0, cut_seen = 0, bad = 0;
    for (size_t off = 0; off <= whole.len; off++) {
        ptrace_file f;
        char *copy = malloc(off + 1);
        memcpy(copy, whole.buf, off);
        copy[off] = 0;
        int rc = ptrace_read_buf(copy, off, "cut", &f, err, sizeof err);
        if (rc) {
            refused++;
            if (off >= hdr_end) { bad++; CHECK(0, "offset %zu after the header refused: %s", off, err); }
            free(copy);
            continue;
        }
        if (f.n_ev < prev) { bad++; CHECK(0, "offset %zu: %zu events, fewer than %zu before", off, f.n_ev, prev); }
        prev = f.n_ev;
        for (size_t i = 0; i < f.n_ev && i < full.n_ev; i++)
            if (f.ev[i].line != full.ev[i].line || strcmp(f.ev[i].name, full.ev[i].name)) {
                bad++; CHECK(0, "offset %zu: event %zu differs", off, i); break;
            }
        if (off < whole.len - 3 && f.info.complete) { bad++; CHECK(0, "offset %zu reported complete", off); }
        if (f.info.cut_last_line) cut_seen++;
        if (f.info.bad_lines) { bad++; CHECK(0, "offset %zu: %zu bad lines", off, f.info.bad_lines); }
        ptrace_file_free(&f);
        free(copy);
        if (bad > 5) break;
    }
    CHECK(refused > 0 && refused <= (int)hdr_end, "refused %d (header ends at %zu)", refused, hdr_end);
    CHECK(cut_seen > 100, "cut last line reported only %d times", cut_seen);
    CHECK(prev == full.n_ev, "full length loads %zu of %zu", prev, full.n_ev);
    ptrace_file_free(&full);
}

static void ptrace_bad_middle_line_is_skipped_and_reported(void) {
    sbuf b = { 0 };
    const char *nl = strchr(strchr(whole.buf, '\n') + 1, '\n') + 1;   /* after "[" and header */
    sb_add(&b, whole.buf, (int)(nl - whole.buf));
    sb_add(&b, "{\"ph\":\"X\", garbage\n", 19);
    sb_add(&b, nl, (int)(whole.len - (size_t)(nl - whole.buf)));
    ptrace_file f; char err[256];
    CHECK(ptrace_read_buf(b.buf, b.len, "mid", &f, err, sizeof err) == 0, "%s", err);
    CHECK(f.info.bad_lines == 1 && f.info.first_bad_line == 3 && f.info.complete, "bad %zu at %zu",
          f.info.bad_lines, f.info.first_bad_line);
    CHECK(f.n_ev == (size_t)NK + 12, "events %zu", f.n_ev);
    ptrace_file_free(&f);
    free(b.buf);
}

static void ptrace_part_file_stays_when_not_finished(void) {
    char dir[300], err[256];
    snprintf(dir, sizeof dir, "%s/part", tmpdir);
    ptrace_out o;
    CHECK(ptrace_out_open(&o, dir, 5, 99, err, sizeof err) == 0, "%s", err);
    CHECK(strstr(o.path_part, "specprof.rank5.pid99.json.part") != NULL, "name %s", o.path_part);
    ptrace_out_abandon(&o);
    CHECK(access(o.path_part, F_OK) == 0 && access(o.path_final, F_OK) != 0, "part kept, no final");
    ptrace_file f;
    CHECK(ptrace_read_file(o.path_part, &f, err, sizeof err) == -1 && strstr(err, "cut off before its header"),
          "header-less part: '%s'", err);
    remove(o.path_part);
}

/* A process that execs keeps its pid: the new image's file once took the old image's name
 * and truncated its .part (the records written before the exec were lost); a later run into
 * the same directory with a pid reused wrote over a finished file. Now the second gets -2,
 * the third -3, and the first is left as it was. */
static void ptrace_out_never_writes_over_a_file_of_the_same_pid(void) {
    char dir[300], err[256];
    snprintf(dir, sizeof dir, "%s/samepid", tmpdir);
    ptrace_out a, b, c;
    CHECK(ptrace_out_open(&a, dir, 0, 98, err, sizeof err) == 0, "%s", err);
    ptrace_out_write(&a, "{\"first\":1},\n", 13);
    ptrace_out_abandon(&a);                      /* exec: no exit handler, the .part stays */
    CHECK(ptrace_out_open(&b, dir, 0, 98, err, sizeof err) == 0, "%s", err);
    CHECK(strstr(b.path_part, "specprof.rank0.pid98-2.json.part") != NULL, "second name %s", b.path_part);
    CHECK(ptrace_out_finish(&b, err, sizeof err) == 0, "%s", err);
    CHECK(ptrace_out_open(&c, dir, 0, 98, err, sizeof err) == 0, "%s", err);
    CHECK(strstr(c.path_part, "specprof.rank0.pid98-3.json.part") != NULL, "third name %s", c.path_part);
    ptrace_out_abandon(&c);
    char text[64] = "";
    FILE *f = fopen(a.path_part, "r");
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    if (f) fclose(f);
    text[n] = 0;
    CHECK(!strcmp(text, "[\n{\"first\":1},\n"), "the first file now holds \"%s\"", text);
    remove(a.path_part); remove(b.path_final); remove(c.path_part); rmdir(dir);
}

static void ptrace_long_names_are_cut_not_overflowed(void) {
    char *longname = malloc(20000);
    memset(longname, 'x', 19999);
    longname[19999] = 0;
    ptrace_kernel k;
    memset(&k, 0, sizeof k);
    k.name = longname; k.nvtx = ""; k.phase = "";
    char line[16384];
    ptrace_ctx c = { 0, 0 };
    int n = ptrace_write_kernel(line, sizeof line, &c, &k);
    CHECK(n > 0 && n < (int)sizeof line, "len %d", n);
    CHECK(strstr(line, "xxx...\"") != NULL, "cut marker");
    CHECK(ptrace_write_kernel(line, 100, &c, &k) == -1, "small buffer must fail");
    free(longname);
}


/* Times out of bounds.h's ranges: once summed into int64 overflow (UBSan, ptrace_read.c,
 * ptrace_sum.c, ptrace_merge.c, the fit). A header's t0 refuses the file; an event's ts or
 * dur makes its line bad (skipped, counted, named). */
static void ptrace_refuses_times_out_of_range(void) {
    char hdr[2048], text[8192], err[256];
    ptrace_header h; fill_header(&h);
    ptrace_ctx c = { 0, 0 };
    h.t0_ns = 9223372036854775000LL;
    int n = ptrace_write_header(hdr, sizeof hdr, &c, &h);
    snprintf(text, sizeof text, "[\n%.*s", n, hdr);
    ptrace_file f;
    CHECK(ptrace_read_buf(text, strlen(text), "t0.json", &f, err, sizeof err) == -1 &&
          strstr(err, "t0.json: line 2: field t0_ns: value 9223372036854775000: out of range"), "message '%s'", err);
    fill_header(&h);
    n = ptrace_write_header(hdr, sizeof hdr, &c, &h);
    snprintf(text, sizeof text, "[\n%.*s"
             "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"a\",\"pid\":0,\"tid\":7,\"ts\":9223372036854775,\"dur\":1},\n"
             "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"b\",\"pid\":0,\"tid\":7,\"ts\":1e300,\"dur\":1},\n"
             "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"c\",\"pid\":0,\"tid\":7,\"ts\":5,\"dur\":-5},\n"
             "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"d\",\"pid\":0,\"tid\":7,\"ts\":5,\"dur\":1e999},\n"
             "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"e\",\"pid\":0,\"tid\":7,\"ts\":-9.2e15,\"dur\":1},\n"
             "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"ok\",\"pid\":0,\"tid\":7,\"ts\":-1e12,\"dur\":1e12},\n"
             "{\"ph\":\"M\",\"cat\":\"meta\",\"name\":\"specprof_end\",\"pid\":0,\"tid\":0,\"ts\":9,\"args\":"
             "{\"records\":1e300,\"reason\":\"exit\"}}\n]\n", n, hdr);
    CHECK(ptrace_read_buf(text, strlen(text), "ts.json", &f, err, sizeof err) == 0, "%s", err);
    CHECK(f.n_ev == 1 && !strcmp(f.ev[0].name, "ok") && f.ev[0].ts_ns == -1000000000000000LL, "events %zu", f.n_ev);
    CHECK(f.info.bad_lines == 6 && f.info.first_bad_line == 3 && strstr(f.info.first_bad_err, "field ts: value "
          "9223372036854775: out of range"), "bad %zu at %zu: %s", f.info.bad_lines, f.info.first_bad_line,
          f.info.first_bad_err);
    CHECK(!f.info.has_end && !f.info.complete, "an end record promising 1e300 records taken");
    ptrace_file_free(&f);
}

/* Two traces in one file (cat a.json b.json, or gzip's concatenated members) once read as
 * one: the second's events against the first's t0, twice the instances, said only "cut
 * off". Refused at the second header, with the line of each. */
static void ptrace_refuses_two_traces_in_one_file(void) {
    char hdr[2048], one[4096], two[8192], err[512] = "";
    ptrace_header h; fill_header(&h);
    ptrace_ctx c = { 0, h.t0_ns };
    int n = ptrace_write_header(hdr, sizeof hdr, &c, &h);
    snprintf(one, sizeof one, "[\n%.*s"
             "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,\"ts\":1,\"dur\":1},\n"
             "{\"ph\":\"M\",\"cat\":\"meta\",\"name\":\"specprof_end\",\"pid\":0,\"tid\":0,\"ts\":9,\"args\":"
             "{\"records\":1,\"dropped_records\":0,\"reason\":\"exit\"}}\n]\n", n, hdr);
    snprintf(two, sizeof two, "%s%s", one, one);
    ptrace_file f;
    CHECK(ptrace_read_buf(one, strlen(one), "one.json", &f, err, sizeof err) == 0, "one trace: %s", err);
    ptrace_file_free(&f);
    int rc = ptrace_read_buf(two, strlen(two), "two.json", &f, err, sizeof err);
    CHECK(rc == -1, "two traces in one file read as one (rc %d)", rc);
    CHECK(strstr(err, "two.json: line 7") && strstr(err, "a second trace header (the first on line 2)"),
          "message '%s'", err);
    if (rc == 0) ptrace_file_free(&f);
}

/* `specprof check` once called a file with 1 of its 1203 records "complete". */
static void ptrace_counts_records_against_the_end(void) {
    char hdr[2048], text[8192], err[256];
    ptrace_header h; fill_header(&h);
    ptrace_ctx c = { 0, h.t0_ns };
    int n = ptrace_write_header(hdr, sizeof hdr, &c, &h);
    snprintf(text, sizeof text, "[\n%.*s"
             "{\"ph\":\"M\",\"cat\":\"meta\",\"name\":\"process_name\",\"pid\":0,\"tid\":0,\"ts\":0,\"args\":{\"name\":\"r\"}},\n"
             "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,\"ts\":1,\"dur\":1},\n"
             "{\"ph\":\"M\",\"cat\":\"meta\",\"name\":\"specprof_end\",\"pid\":0,\"tid\":0,\"ts\":9,\"args\":"
             "{\"records\":1203,\"dropped_records\":0,\"reason\":\"exit\"}}\n]\n", n, hdr);
    ptrace_sum s;
    ptrace_info info;
    ptrace_sum_init(&s);
    CHECK(ptrace_scan_buf(text, strlen(text), "one.json", NULL, NULL, &info, err, sizeof err) == 0, "%s", err);
    CHECK(info.has_end && !info.complete && info.records_seen == 1 && info.records_promised == 1203,
          "has_end %d complete %d seen %lld promised %lld", info.has_end, info.complete,
          (long long)info.records_seen, (long long)info.records_promised);
    FILE *o = tmpfile();
    ptrace_sum_print(o, &s, &info, "one.json");
    ptrace_sum_print_json(o, &s, &info, "one.json");
    rewind(o);
    char out[4096] = "";
    size_t got = fread(out, 1, sizeof out - 1, o);
    out[got] = 0;
    fclose(o);
    CHECK(strstr(out, "INCOMPLETE: 1 of the 1203 records") && !strstr(out, "complete: end reason") &&
          strstr(out, "\"complete\":false") && strstr(out, "\"records\":1,\"records_promised\":1203"),
          "check output: %s", out);
    ptrace_sum_free(&s);
    /* the written file holds what it promises: NK + 10 records, 2 metadata lines */
    ptrace_file f;
    CHECK(ptrace_read_buf(whole.buf, whole.len, "whole", &f, err, sizeof err) == 0 && f.info.complete &&
          f.info.records_seen == NK + 10 && f.info.records_promised == NK + 10, "whole: seen %lld",
          (long long)f.info.records_seen);
    ptrace_file_free(&f);
    /* one record line gone: incomplete, with both numbers */
    const char *k = strstr(whole.buf, "\"cat\":\"kernel\"");
    const char *b = k, *e = strchr(k, '\n') + 1;
    while (b > whole.buf && b[-1] != '\n') b--;
    sbuf cut = { 0 };
    sb_add(&cut, whole.buf, (int)(b - whole.buf));
    sb_add(&cut, e, (int)(whole.len - (size_t)(e - whole.buf)));
    CHECK(ptrace_read_buf(cut.buf, cut.len, "lost", &f, err, sizeof err) == 0 && f.info.has_end && !f.info.complete &&
          f.info.records_seen == NK + 9, "a lost line: complete %d seen %lld", f.info.complete,
          (long long)f.info.records_seen);
    ptrace_file_free(&f);
    free(cut.buf);
}

static int count_ev(void *user, const ptrace_event *e, const ptrace_info *info) {
    (void)e; (void)info;
    (*(size_t *)user)++;
    return 0;
}

/* The stream reader (chunks of 1 MiB, a line may span two) sees what the buffer reader
 * sees, also cut anywhere; a line over the cap refuses the input at once. */
static void ptrace_stream_reads_like_the_buffer(void) {
    char err[256], err2[256];
    for (size_t off = 0; off <= whole.len; off += off < 2000 ? 1 : 37) {
        ptrace_info a, b;
        size_t na = 0, nb = 0;
        int ra = ptrace_scan_buf(whole.buf, off, "cut", count_ev, &na, &a, err, sizeof err);
        FILE *fp = fmemopen(whole.buf, off ? off : 1, "r");
        if (!off) { fclose(fp); fp = fopen("/dev/null", "r"); }
        int rb = ptrace_scan_stream(fp, "cut", count_ev, &nb, &b, err2, sizeof err2);
        fclose(fp);
        CHECK(ra == rb && na == nb && a.complete == b.complete && a.cut_last_line == b.cut_last_line &&
              a.bad_lines == b.bad_lines && a.records_seen == b.records_seen && (ra || a.header.t0_ns == b.header.t0_ns),
              "offset %zu: buf rc %d n %zu cut %d, stream rc %d n %zu cut %d (%s / %s)", off, ra, na, a.cut_last_line,
              rb, nb, b.cut_last_line, err, err2);
        if (ra != rb || na != nb) break;
    }
    /* 3 MiB of records: lines across chunk boundaries */
    const char *k = strstr(whole.buf, "{\"ph\":\"X\",\"cat\":\"kernel\"");
    const char *ke = strchr(k, '\n') + 1, *end = strstr(whole.buf, "{\"ph\":\"M\",\"cat\":\"meta\",\"name\":\"specprof_end\"");
    sbuf big = { 0 };
    sb_add(&big, whole.buf, (int)(end - whole.buf));
    int reps = 0;
    while (big.len < (3u << 20)) { sb_add(&big, k, (int)(ke - k)); reps++; }
    sb_add(&big, end, (int)(whole.len - (size_t)(end - whole.buf)));
    size_t na = 0, nb = 0;
    ptrace_info a, b;
    FILE *fp = fmemopen(big.buf, big.len, "r");
    CHECK(ptrace_scan_buf(big.buf, big.len, "big", count_ev, &na, &a, err, sizeof err) == 0 &&
          ptrace_scan_stream(fp, "big", count_ev, &nb, &b, err, sizeof err) == 0, "%s", err);
    fclose(fp);
    CHECK(na == nb && na == (size_t)NK + 12 + (size_t)reps && !b.bad_lines && b.records_seen == NK + 10 + reps,
          "big: %zu vs %zu events (%d added), bad %zu", na, nb, reps, b.bad_lines);
    free(big.buf);
    /* a line longer than BND_TRACE_LINE_BYTES (1 MiB) */
    sbuf longl = { 0 };
    const char *hdr_end = strchr(strchr(whole.buf, '\n') + 1, '\n') + 1;
    sb_add(&longl, whole.buf, (int)(hdr_end - whole.buf));
    for (int i = 0; i < (1 << 21) / 64; i++) sb_add(&longl, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", 64);
    fp = fmemopen(longl.buf, longl.len, "r");
    CHECK(ptrace_scan_stream(fp, "long.json", NULL, NULL, &b, err, sizeof err) == -1 &&
          strstr(err, "long.json: line 3: longer than 1048576 bytes"), "message '%s'", err);
    fclose(fp);
    free(longl.buf);
}

/* JSON never holds inf: 1e999 is refused by the parser, and the writer turns a non-finite
 * number (built in code) into null. `specprof merge` once echoed -1e999 as -inf. */
static void pjson_refuses_and_never_writes_infinity(void) {
    pjson_arena *a = pjson_arena_create();
    pjson *v = NULL;
    char err[128], out[64];
    CHECK(pjson_parse(a, "{\"x\":-1e999}", 12, 0, &v, err, sizeof err) == -1 && strstr(err, "out of range"),
          "-1e999 parsed: %s", err);
    CHECK(pjson_parse(a, "[1e300, -9.3e18, 1e-999]", 24, 0, &v, err, sizeof err) == 0 && v->len == 3 &&
          v->items[0]->i == INT64_MAX && v->items[1]->i == INT64_MIN && v->items[2]->num == 0, "%s", err);
    pjson inf = { .type = PJSON_NUM, .num = INFINITY };
    CHECK(pjson_write(&inf, out, sizeof out) == 4 && !strcmp(out, "null"), "inf written as %s", out);
    pjson_arena_destroy(a);
}

/* --mode always calibrates at the end (a calibration at the start switched recording off
 * under the program: the H200 fault table lost every kernel of a short program); the end
 * record carries it, and the reader gives it to the header. */
static void ptrace_calibration_from_the_end_record(void) {
    char hdr[4096], end[4096], text[16384], err[256];
    ptrace_header h; fill_header(&h);
    snprintf(h.mode, sizeof h.mode, "always");
    snprintf(h.calib.why, sizeof h.calib.why, "at the end (mode always)");
    ptrace_ctx c = { 0, h.t0_ns };
    int n = ptrace_write_header(hdr, sizeof hdr, &c, &h);
    ptrace_end e;
    memset(&e, 0, sizeof e);
    e.records = 1;
    e.end_ns = h.t0_ns + 9000;
    snprintf(e.reason, sizeof e.reason, "exit");
    e.has_calib = 1;
    e.calib.ok = 1; e.calib.launches = 200; e.calib.kernel_launch_us = 3.622; e.calib.graph_node_us = 0.921;
    int m = ptrace_write_end(end, sizeof end, &c, &e);
    CHECK(n > 0 && m > 0, "write: %d %d", n, m);
    snprintf(text, sizeof text, "[\n%.*s"
             "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,\"ts\":1,\"dur\":1},\n%.*s",
             n, hdr, m, end);
    ptrace_file f;
    CHECK(ptrace_read_buf(text, strlen(text), "always.json", &f, err, sizeof err) == 0, "%s", err);
    CHECK(f.info.complete && f.info.end.has_calib && f.info.header.calib.ok && f.info.header.calib.launches == 200 &&
          f.info.header.calib.kernel_launch_us > 3.6219 && f.info.header.calib.kernel_launch_us < 3.6221 &&
          f.info.header.calib.graph_node_us > 0.9209, "calib ok %d launches %d kernel %.4f",
          f.info.header.calib.ok, f.info.header.calib.launches, f.info.header.calib.kernel_launch_us);
    ptrace_file_free(&f);
    /* without one (the program died by a signal): the header's reason stays */
    m = ptrace_write_end(end, sizeof end, &c, &(ptrace_end){ .records = 1, .end_ns = h.t0_ns + 9000, .reason = "signal SIGSEGV" });
    snprintf(text, sizeof text, "[\n%.*s"
             "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,\"ts\":1,\"dur\":1},\n%.*s",
             n, hdr, m, end);
    CHECK(ptrace_read_buf(text, strlen(text), "segv.json", &f, err, sizeof err) == 0, "%s", err);
    CHECK(!f.info.end.has_calib && !f.info.header.calib.ok && strstr(f.info.header.calib.why, "at the end"),
          "why %s", f.info.header.calib.why);
    ptrace_file_free(&f);
}

int main(void) {
    setup();
    RUN(ptrace_roundtrips_every_field);
    RUN(ptrace_file_is_strict_json_when_complete);
    RUN(ptrace_ts_keeps_nanoseconds);
    RUN(ptrace_rejects_non_traces_with_location);
    RUN(ptrace_truncated_at_every_offset_loads_prefix);
    RUN(ptrace_bad_middle_line_is_skipped_and_reported);
    RUN(ptrace_part_file_stays_when_not_finished);
    RUN(ptrace_out_never_writes_over_a_file_of_the_same_pid);
    RUN(ptrace_long_names_are_cut_not_overflowed);
    RUN(ptrace_refuses_times_out_of_range);
    RUN(ptrace_counts_records_against_the_end);
    RUN(ptrace_refuses_two_traces_in_one_file);
    RUN(ptrace_stream_reads_like_the_buffer);
    RUN(ptrace_calibration_from_the_end_record);
    RUN(pjson_refuses_and_never_writes_infinity);
    remove(trace_path);
    char d[400];
    snprintf(d, sizeof d, "%s/part", tmpdir); rmdir(d);
    rmdir(tmpdir);
    snprintf(d, sizeof d, "/tmp/test_ptrace.%d/sub", (int)getpid()); rmdir(d);
    snprintf(d, sizeof d, "/tmp/test_ptrace.%d", (int)getpid()); rmdir(d);
    free(whole.buf);
    return check_done();
}
