/* ptrace_write.c: JSON-line formatting of trace events (see ptrace_write.h).
 * Written for the CUPTI writer thread: ~1 us per event, a bounded line, no malloc. */
#include "ptrace_write.h"
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

typedef struct { char *p; size_t len, cap; int overflow; } ptrace_sb;

static void sb_raw(ptrace_sb *b, const char *s, size_t n) {
    if (b->overflow) return;
    if (b->len + n + 1 > b->cap) { b->overflow = 1; return; }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

static void sb_s(ptrace_sb *b, const char *s) { sb_raw(b, s, strlen(s)); }

static void sb_f(ptrace_sb *b, const char *fmt, ...) {
    if (b->overflow) return;
    va_list ap; va_start(ap, fmt);
    int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= b->cap - b->len) { b->overflow = 1; return; }
    b->len += (size_t)n;
}

/* JSON string with quotes; cut at PTRACE_MAX_STR bytes (not inside a UTF-8 sequence). */
static void sb_str(ptrace_sb *b, const char *s) {
    if (!s) s = "";
    sb_raw(b, "\"", 1);
    size_t n = strlen(s), lim = n;
    int cut = 0;
    if (n > PTRACE_MAX_STR) {
        lim = PTRACE_MAX_STR;
        while (lim > 0 && ((unsigned char)s[lim] & 0xC0) == 0x80) lim--;
        cut = 1;
    }
    size_t run = 0;
    for (size_t i = 0; i < lim; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        sb_raw(b, s + run, i - run);
        run = i + 1;
        if (c == '"') sb_raw(b, "\\\"", 2);
        else if (c == '\\') sb_raw(b, "\\\\", 2);
        else if (c == '\n') sb_raw(b, "\\n", 2);
        else if (c == '\t') sb_raw(b, "\\t", 2);
        else if (c == '\r') sb_raw(b, "\\r", 2);
        else sb_f(b, "\\u%04x", c);
    }
    sb_raw(b, s + run, lim - run);
    if (cut) sb_raw(b, "...", 3);
    sb_raw(b, "\"", 1);
}

/* ns offset as microseconds with 3 decimals, exact. */
static void sb_us(ptrace_sb *b, int64_t ns) {
    const char *sign = "";
    uint64_t a;
    if (ns < 0) { sign = "-"; a = (uint64_t)(-(ns + 1)) + 1; } else a = (uint64_t)ns;
    sb_f(b, "%s%" PRIu64 ".%03u", sign, a / 1000, (unsigned)(a % 1000));
}

static void sb_event_head(ptrace_sb *b, const char *ph, const char *cat, const char *name,
                          const ptrace_ctx *c, int64_t tid, int64_t start_ns) {
    sb_f(b, "{\"ph\":\"%s\",\"cat\":\"%s\",\"name\":", ph, cat);
    sb_str(b, name);
    sb_f(b, ",\"pid\":%d,\"tid\":%" PRId64 ",\"ts\":", c->pid, tid);
    sb_us(b, start_ns - c->t0_ns);
}

static void sb_dur(ptrace_sb *b, int64_t start_ns, int64_t end_ns) {
    sb_s(b, ",\"dur\":");
    sb_us(b, end_ns >= start_ns ? end_ns - start_ns : 0);
}

static void sb_nccl(ptrace_sb *b, const ptrace_nccl *n) {
    sb_s(b, "{\"op\":"); sb_str(b, n->op);
    sb_s(b, ",\"redop\":"); sb_str(b, n->redop);
    sb_s(b, ",\"dtype\":"); sb_str(b, n->dtype);
    sb_f(b, ",\"count\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"comm_size\":%d,\"rank\":%d,"
            "\"root_or_peer\":%d,\"group_ops\":%d,\"seq\":%u,\"captured\":%s}",
         n->count, n->bytes, n->comm_size, n->rank, n->root_or_peer, n->group_ops, n->seq,
         n->captured ? "true" : "false");
}

static int sb_end_line(ptrace_sb *b) {
    sb_raw(b, ",\n", 2);
    return b->overflow ? -1 : (int)b->len;
}

#define SB_INIT(buf, cap) ptrace_sb sb = { buf, 0, cap, 0 }; if (cap) buf[0] = 0; if (!cap) return -1

int ptrace_write_open(char *buf, size_t cap) {
    SB_INIT(buf, cap);
    sb_s(&sb, "[\n");
    return sb.overflow ? -1 : (int)sb.len;
}

/* "calibration":{...}: the header's, or the end record's when it ran at the end. */
static void ptrace_write_calib(ptrace_sb *b, const ptrace_calib *k) {
    sb_f(b, "\"calibration\":{\"ok\":%s", k->ok ? "true" : "false");
    if (k->ok)
        sb_f(b, ",\"launches\":%d,\"graph_nodes\":%d,\"launch_off_us\":%.3f,\"launch_on_us\":%.3f,"
                  "\"graph1_off_us\":%.3f,\"graph1_on_us\":%.3f,\"graphn_off_us\":%.3f,\"graphn_on_us\":%.3f,"
                  "\"kernel_launch_us\":%.3f,\"graph_launch_us\":%.3f,\"graph_node_us\":%.3f,"
                  "\"switch_on_us\":%.1f,\"switch_off_us\":%.1f,\"launch_after_us\":%.3f,\"graphn_after_us\":%.3f",
             k->launches, k->graph_nodes, k->launch_off_us, k->launch_on_us, k->graph1_off_us, k->graph1_on_us,
             k->graphn_off_us, k->graphn_on_us, k->kernel_launch_us, k->graph_launch_us, k->graph_node_us,
             k->switch_on_us, k->switch_off_us, k->launch_after_us, k->graphn_after_us);
    if (k->ok && k->launch_clean_us > 0)
        sb_f(b, ",\"launch_clean_us\":%.3f", k->launch_clean_us);
    if (k->ok && k->launch_on_swept_us > 0)
        sb_f(b, ",\"sweep_gap_us\":%.1f,\"launch_off_swept_us\":%.3f,\"launch_on_swept_us\":%.3f",
             k->sweep_gap_us, k->launch_off_swept_us, k->launch_on_swept_us);
    if (k->ok && k->launch_on_swept_us > 0 && k->launch_clean_swept_us > 0)
        sb_f(b, ",\"launch_clean_swept_us\":%.3f", k->launch_clean_swept_us);
    if (k->ok && k->has_between)
        sb_f(b, ",\"graph1_between_us\":%.3f,\"graphn_between_us\":%.3f,\"graph_between_us\":%.3f",
             k->graph1_between_us, k->graphn_between_us, k->graph_between_us);
    if (!k->ok) { sb_s(b, ",\"why\":"); sb_str(b, k->why); }
    sb_s(b, "}");
}

int ptrace_write_header(char *buf, size_t cap, const ptrace_ctx *c, const ptrace_header *h) {
    SB_INIT(buf, cap);
    sb_f(&sb, "{\"ph\":\"M\",\"cat\":\"meta\",\"name\":\"specprof_header\",\"pid\":%d,\"tid\":0,\"ts\":0,\"args\":{", c->pid);
    sb_f(&sb, "\"format_version\":%d,\"tool_version\":", h->format_version);
    sb_str(&sb, h->tool_version);
    sb_s(&sb, ",\"host\":"); sb_str(&sb, h->host);
    sb_f(&sb, ",\"pid_os\":%" PRId64 ",\"rank\":%d,\"world_size\":%d,\"t0_ns\":%" PRId64
              ",\"t0_unix_ns\":%" PRId64 ",\"cupti_version\":%d,\"cuda_driver_version\":%d,"
              "\"cuda_runtime_version\":%d,\"nccl_version\":%d,",
         h->pid_os, h->rank, h->world_size, h->t0_ns, h->t0_unix_ns, h->cupti_version,
         h->cuda_driver_version, h->cuda_runtime_version, h->nccl_version);
    sb_s(&sb, "\"device\":{\"name\":"); sb_str(&sb, h->device.name);
    sb_f(&sb, ",\"index\":%d,\"sms\":%d,\"clock_khz\":%d,\"mem_clock_khz\":%d,\"mem_bytes\":%" PRId64
              ",\"mem_bus_bits\":%d,\"l2_bytes\":%" PRId64 ",\"cc_major\":%d,\"cc_minor\":%d,\"pci_bus_id\":",
         h->device.index, h->device.sms, h->device.clock_khz, h->device.mem_clock_khz,
         h->device.mem_bytes, h->device.mem_bus_bits, h->device.l2_bytes, h->device.cc_major,
         h->device.cc_minor);
    sb_str(&sb, h->device.pci_bus_id);
    sb_s(&sb, "},\"peers\":[");
    for (int i = 0; i < h->n_peers && i < PTRACE_MAX_PEERS; i++)
        sb_f(&sb, "%s{\"dev\":%d,\"access\":%d,\"native_atomics\":%d,\"perf_rank\":%d}", i ? "," : "",
             h->peers[i].peer_dev, h->peers[i].access, h->peers[i].native_atomics, h->peers[i].perf_rank);
    sb_s(&sb, "],\"nvtx_phases\":[");
    for (int i = 0; i < h->n_phases && i < PTRACE_MAX_PHASES; i++) {
        if (i) sb_s(&sb, ",");
        sb_str(&sb, h->phases[i]);
    }
    sb_s(&sb, "],\"capture\":{\"delay_s\":");
    sb_f(&sb, "%.3f,\"duration_s\":%.3f,\"flush_ms\":%d,\"buffer_mb\":%d,\"mode\":",
         h->delay_s, h->duration_s, h->flush_ms, h->buffer_mb);
    sb_str(&sb, h->mode[0] ? h->mode : "always");
    sb_f(&sb, ",\"window_ms\":%d,\"period_ms\":%d,\"shape_replays\":%d,\"window_max_ms\":%d,\"between\":",
         h->window_ms, h->period_ms, h->shape_replays, h->window_max_ms);
    sb_str(&sb, h->between[0] ? h->between : "none");
    sb_s(&sb, ",\"records\":");
    sb_str(&sb, h->records[0] ? h->records : "fit");
    sb_f(&sb, ",\"compressed\":%s", h->compressed ? "true" : "false");
    if (h->clock[0]) { sb_s(&sb, ",\"clock\":"); sb_str(&sb, h->clock); }
    if (h->interposed[0]) { sb_s(&sb, ",\"interposed\":"); sb_str(&sb, h->interposed); }
    if (h->capture_range[0]) { sb_s(&sb, ",\"capture_range\":"); sb_str(&sb, h->capture_range); }
    sb_s(&sb, "},");
    ptrace_write_calib(&sb, &h->calib);
    sb_s(&sb, ",\"cmd\":");
    sb_str(&sb, h->cmd);
    sb_s(&sb, "}}");
    return sb_end_line(&sb);
}

int ptrace_write_process_name(char *buf, size_t cap, const ptrace_ctx *c, const char *name) {
    SB_INIT(buf, cap);
    sb_f(&sb, "{\"ph\":\"M\",\"cat\":\"meta\",\"name\":\"process_name\",\"pid\":%d,\"tid\":0,\"ts\":0,\"args\":{\"name\":", c->pid);
    sb_str(&sb, name);
    sb_s(&sb, "}}");
    return sb_end_line(&sb);
}

int ptrace_write_thread_name(char *buf, size_t cap, const ptrace_ctx *c, int64_t tid, const char *name) {
    SB_INIT(buf, cap);
    sb_f(&sb, "{\"ph\":\"M\",\"cat\":\"meta\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%" PRId64 ",\"ts\":0,\"args\":{\"name\":",
         c->pid, tid);
    sb_str(&sb, name);
    sb_s(&sb, "}}");
    return sb_end_line(&sb);
}

static void sb_where(ptrace_sb *b, uint32_t graph_id, uint64_t node, const char *nvtx, const char *phase) {
    sb_f(b, ",\"graph_id\":%u,\"graph_node_id\":%" PRIu64 ",\"nvtx\":", graph_id, node);
    sb_str(b, nvtx);
    sb_s(b, ",\"phase\":");
    sb_str(b, phase);
}

int ptrace_write_kernel(char *buf, size_t cap, const ptrace_ctx *c, const ptrace_kernel *k) {
    SB_INIT(buf, cap);
    sb_event_head(&sb, "X", "kernel", k->name, c, k->stream, k->start_ns);
    sb_dur(&sb, k->start_ns, k->end_ns);
    sb_f(&sb, ",\"args\":{\"corr\":%u,\"dev\":%u,\"stream\":%u,\"grid\":[%d,%d,%d],\"block\":[%d,%d,%d],"
              "\"smem\":%d,\"regs\":%d",
         k->corr, k->dev, k->stream, k->grid[0], k->grid[1], k->grid[2], k->block[0], k->block[1],
         k->block[2], k->smem_bytes, k->regs);
    sb_where(&sb, k->graph_id, k->graph_node_id, k->nvtx, k->phase);
    if (k->has_nccl) { sb_s(&sb, ",\"nccl\":"); sb_nccl(&sb, &k->nccl); }
    sb_s(&sb, "}}");
    return sb_end_line(&sb);
}

int ptrace_write_mem(char *buf, size_t cap, const ptrace_ctx *c, const ptrace_mem *m) {
    SB_INIT(buf, cap);
    char name[48];
    if (m->kind == PTRACE_MEMCPY) snprintf(name, sizeof name, "memcpy %s", m->copy_kind ? m->copy_kind : "");
    else snprintf(name, sizeof name, "memset");
    sb_event_head(&sb, "X", m->kind == PTRACE_MEMCPY ? "memcpy" : "memset", name, c, m->stream, m->start_ns);
    sb_dur(&sb, m->start_ns, m->end_ns);
    sb_f(&sb, ",\"args\":{\"corr\":%u,\"dev\":%u,\"stream\":%u,\"bytes\":%" PRIu64 ",\"copy_kind\":",
         m->corr, m->dev, m->stream, m->bytes);
    sb_str(&sb, m->kind == PTRACE_MEMCPY ? m->copy_kind : "");
    sb_where(&sb, m->graph_id, m->graph_node_id, m->nvtx, m->phase);
    if (m->has_nccl) { sb_s(&sb, ",\"nccl\":"); sb_nccl(&sb, &m->nccl); }
    sb_s(&sb, "}}");
    return sb_end_line(&sb);
}

int ptrace_write_api(char *buf, size_t cap, const ptrace_ctx *c, const ptrace_api *a) {
    SB_INIT(buf, cap);
    sb_event_head(&sb, "X", "api", a->name, c, a->thread, a->start_ns);
    sb_dur(&sb, a->start_ns, a->end_ns);
    sb_f(&sb, ",\"args\":{\"corr\":%u,\"cbid\":%u,\"thread\":%" PRId64 ",\"driver\":%s,\"graph_exec_id\":%u",
         a->corr, a->cbid, a->thread, a->domain_driver ? "true" : "false", a->graph_exec_id);
    if (a->has_lite) {   /* lite mode's interposed calls (traces/FORMAT.md "Lite mode") */
        sb_f(&sb, ",\"stream\":%" PRIu64, a->stream);
        if (a->copy_kind) {
            sb_f(&sb, ",\"bytes\":%" PRId64 ",\"copy_kind\":", a->bytes);
            sb_str(&sb, a->copy_kind);
        }
        if (a->blocking >= 0) sb_f(&sb, ",\"blocking\":%s", a->blocking ? "true" : "false");
        if (a->untimed) { sb_s(&sb, ",\"untimed\":"); sb_str(&sb, a->untimed); }
    }
    sb_s(&sb, "}}");
    return sb_end_line(&sb);
}

int ptrace_write_range(char *buf, size_t cap, const ptrace_ctx *c, const ptrace_range *r) {
    SB_INIT(buf, cap);
    sb_event_head(&sb, "X", "nvtx", r->name, c, r->thread, r->start_ns);
    sb_dur(&sb, r->start_ns, r->end_ns);
    sb_s(&sb, ",\"args\":{\"domain\":");
    sb_str(&sb, r->domain);
    sb_f(&sb, ",\"thread\":%" PRId64 ",\"kind\":\"%s\"", r->thread, r->push_pop ? "push" : "start");
    if (r->has_launches)
        sb_f(&sb, ",\"launches\":%" PRId64 ",\"graph_launches\":%" PRId64, r->launches, r->graph_launches);
    sb_s(&sb, "}}");
    return sb_end_line(&sb);
}

const char *ptrace_nccl_func_name(const char *op) {
    static const struct { const char *op, *fn; } t[] = {
        {"allreduce", "ncclAllReduce"}, {"reducescatter", "ncclReduceScatter"},
        {"allgather", "ncclAllGather"}, {"broadcast", "ncclBroadcast"}, {"reduce", "ncclReduce"},
        {"send", "ncclSend"}, {"recv", "ncclRecv"}, {"group", "ncclGroup"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (!strcmp(op, t[i].op)) return t[i].fn;
    return "nccl";
}

int ptrace_write_ncclcall(char *buf, size_t cap, const ptrace_ctx *c, const ptrace_ncclcall *n) {
    SB_INIT(buf, cap);
    sb_event_head(&sb, "X", "nccl", ptrace_nccl_func_name(n->call.op), c, n->thread, n->start_ns);
    sb_dur(&sb, n->start_ns, n->end_ns);
    sb_s(&sb, ",\"args\":{\"op\":"); sb_str(&sb, n->call.op);
    sb_s(&sb, ",\"redop\":"); sb_str(&sb, n->call.redop);
    sb_s(&sb, ",\"dtype\":"); sb_str(&sb, n->call.dtype);
    sb_f(&sb, ",\"count\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"comm_size\":%d,\"rank\":%d,\"root_or_peer\":%d,"
              "\"group_ops\":%d,\"seq\":%u,\"captured\":%s,\"stream\":%" PRIu64 ",\"thread\":%" PRId64 "}}",
         n->call.count, n->call.bytes, n->call.comm_size, n->call.rank, n->call.root_or_peer,
         n->call.group_ops, n->call.seq, n->call.captured ? "true" : "false", n->stream, n->thread);
    return sb_end_line(&sb);
}

int ptrace_write_graphexec(char *buf, size_t cap, const ptrace_ctx *c, const ptrace_graphexec *g) {
    SB_INIT(buf, cap);
    sb_event_head(&sb, "i", "graph", "graph_instantiate", c, g->thread, g->ts_ns);
    sb_f(&sb, ",\"s\":\"p\",\"args\":{\"graph_id\":%u,\"graph_exec_id\":%u,\"nodes\":%" PRId64 ",\"thread\":%" PRId64 "}}",
         g->graph_id, g->graph_exec_id, g->nodes, g->thread);
    return sb_end_line(&sb);
}

int ptrace_write_window(char *buf, size_t cap, const ptrace_ctx *c, const ptrace_window *w) {
    SB_INIT(buf, cap);
    sb_event_head(&sb, "X", "window", "specprof_window", c, 0, w->start_ns);
    sb_dur(&sb, w->start_ns, w->end_ns);
    sb_s(&sb, ",\"args\":{\"reason\":");
    sb_str(&sb, w->reason);
    if (w->attach_us > 0) sb_f(&sb, ",\"attach_us\":%.1f", w->attach_us);
    sb_s(&sb, "}}");
    return sb_end_line(&sb);
}

/* A graph replay's event up to its err_us (the args object left open): graph_trace's and
 * graph_probe's (which has no graph_id). */
static void sb_graph_span(ptrace_sb *b, const char *cat, const char *what, const ptrace_ctx *c,
                          const ptrace_graphlaunch *g, int with_graph_id) {
    char name[48];
    snprintf(name, sizeof name, "%s %u", what, g->graph_exec_id);
    sb_event_head(b, "X", cat, name, c, g->stream, g->start_ns);
    sb_dur(b, g->start_ns, g->end_ns);
    sb_f(b, ",\"args\":{\"corr\":%u,\"dev\":%u,\"stream\":%u,", g->corr, g->dev, g->stream);
    if (with_graph_id) sb_f(b, "\"graph_id\":%u,", g->graph_id);
    sb_f(b, "\"graph_exec_id\":%u,\"nvtx\":", g->graph_exec_id);
    sb_str(b, g->nvtx);
    sb_s(b, ",\"phase\":");
    sb_str(b, g->phase);
    if (g->err_us > 0) sb_f(b, ",\"err_us\":%.3f", g->err_us);
}

int ptrace_write_graphlaunch(char *buf, size_t cap, const ptrace_ctx *c, const ptrace_graphlaunch *g) {
    SB_INIT(buf, cap);
    sb_graph_span(&sb, "graph_trace", "graph exec", c, g, 1);
    sb_s(&sb, "}}");
    return sb_end_line(&sb);
}

/* A probed replay (lite mode's node probe): the instrumented replay's span and each work
 * node's end in us from its root event (0.1 us: the events resolve ~0.5 us). */
int ptrace_write_graphprobe(char *buf, size_t cap, const ptrace_ctx *c, const ptrace_graphlaunch *g,
                            const float *end_us, int n) {
    SB_INIT(buf, cap);
    sb_graph_span(&sb, "graph_probe", "probe exec", c, g, 0);
    sb_s(&sb, ",\"end_us\":[");
    for (int i = 0; i < n; i++) sb_f(&sb, i ? ",%.1f" : "%.1f", (double)end_us[i]);
    sb_s(&sb, "]}}");
    return sb_end_line(&sb);
}

int ptrace_write_eagerprobe(char *buf, size_t cap, const ptrace_ctx *c, const ptrace_eagerprobe *e) {
    SB_INIT(buf, cap);
    sb_event_head(&sb, "X", "eager_probe", "eager probe", c, e->stream, e->start_ns);
    sb_dur(&sb, e->start_ns, e->end_ns);
    sb_f(&sb, ",\"args\":{\"dev\":%u,\"stream\":%u,\"thread\":%" PRId64 ",\"nvtx\":", e->dev, e->stream, e->thread);
    sb_str(&sb, e->nvtx);
    sb_s(&sb, ",\"phase\":");
    sb_str(&sb, e->phase);
    sb_f(&sb, ",\"host0_ns\":%" PRId64 ",\"cost_us\":%.3f", e->host0_ns, e->cost_us);
    if (e->err_us > 0) sb_f(&sb, ",\"err_us\":%.3f", e->err_us);
    sb_f(&sb, ",\"other_streams\":%d,\"lost\":%d,\"watchdog\":%d,\"names\":[", e->other_streams, e->lost,
         e->watchdog);
    for (int i = 0; i < e->nnames; i++) {
        if (i) sb_s(&sb, ",");
        sb_str(&sb, e->names[i]);
    }
    sb_s(&sb, "],\"k\":[");
    for (int i = 0; i < e->n; i++) {
        const ptrace_eagerentry *x = &e->e[i];
        sb_f(&sb, "%s[%d,%d,", i ? "," : "", x->type, x->type == 0 ? x->name : -1);
        if (x->type == 0)
            sb_f(&sb, "%u,%u,%u,%u,%u,%u,%" PRIu64, x->grid[0], x->grid[1], x->grid[2], x->block[0], x->block[1],
                 x->block[2], x->smem_or_bytes);
        else if (x->type == 1)   /* a copy: its bytes and cudaMemcpyKind where a kernel has its grid */
            sb_f(&sb, "%" PRIu64 ",%d,0,0,0,0,0", x->smem_or_bytes, x->copy_kind);
        else
            sb_s(&sb, "0,0,0,0,0,0,0");
        sb_f(&sb, ",%.3f,%.3f,%.3f,%.3f]", x->t0_us, x->t1_us, x->b_us, x->a_us);
    }
    sb_s(&sb, "]}}");
    return sb_end_line(&sb);
}

/* Lite mode's part of the end record: counts, then its own calibration object. */
static void ptrace_write_lite(ptrace_sb *b, const ptrace_lite *l) {
    sb_f(b, ",\"graph_launches\":%" PRId64 ",\"graph_launches_timed\":%" PRId64
             ",\"graph_launches_capturing\":%" PRId64 ",\"graph_launches_failed\":%" PRId64
             ",\"graph_launches_no_event\":%" PRId64 ",\"graph_events_pending\":%" PRId64
             ",\"graph_events_lost\":%" PRId64 ",\"blocking_calls\":%" PRId64 ",\"memcpy_calls\":%" PRId64
             ",\"sync_calls\":%" PRId64 ",\"kernel_launches\":%" PRId64 ",\"lite_dropped\":%" PRId64
             ",\"anchors\":%" PRId64 ",\"anchor_err_max_us\":%.3f,\"err_max_us\":%.3f,\"drift_max_ppm\":%.3f"
             ",\"static_runtime\":%s,",
         l->graph_launches, l->graph_timed, l->graph_capturing, l->graph_failed, l->graph_no_event,
         l->graph_pending, l->graph_lost, l->blocking_calls, l->memcpy_calls, l->sync_calls, l->kernel_launches,
         l->dropped, l->anchors, l->anchor_err_max_us, l->err_max_us, l->drift_max_ppm,
         l->static_runtime ? "true" : "false");
    if (l->probe_replays > 0) {
        sb_f(b, "\"probe\":{\"replays\":%d,\"execs\":%" PRId64 ",\"skipped\":%" PRId64 ",\"launched\":%" PRId64
                ",\"written\":%" PRId64 ",\"lost\":%" PRId64 ",\"stale\":%" PRId64 ",\"events\":%" PRId64
                ",\"instrument_ms\":%.3f,\"event_us\":%.3f",
             l->probe_replays, l->probe_execs, l->probe_skipped, l->probe_launched, l->probe_written, l->probe_lost,
             l->probe_stale, l->probe_events, l->probe_instrument_ms, l->probe_event_us);
        if (l->probe_skip_why[0]) { sb_s(b, ",\"skip_why\":"); sb_str(b, l->probe_skip_why); }
        if (l->probe_calib_why[0]) { sb_s(b, ",\"event_why\":"); sb_str(b, l->probe_calib_why); }
        sb_s(b, "},");
    }
    if (l->eager_instances > 0) {
        sb_f(b, "\"eager_probe\":{\"instances\":%d,\"probed\":%" PRId64 ",\"written\":%" PRId64 ",\"lost\":%" PRId64
                ",\"skipped\":%" PRId64 ",\"watchdog\":%" PRId64 ",\"keys\":%" PRId64 ",\"busy\":%" PRId64,
             l->eager_instances, l->eager_probed, l->eager_written, l->eager_lost, l->eager_skipped, l->eager_watchdog,
             l->eager_keys, l->eager_busy);
        if (l->eager_skip_why[0]) { sb_s(b, ",\"skip_why\":"); sb_str(b, l->eager_skip_why); }
        sb_s(b, "},");
    }
    if (l->capture_range[0]) {
        sb_s(b, "\"capture_range\":");
        sb_str(b, l->capture_range);
        sb_f(b, ",\"range_opens\":%" PRId64 ",\"range_ns\":%" PRId64 ",", l->range_opens, l->range_ns);
    }
    sb_f(b, "\"calibration\":{\"ok\":%s,\"mode\":\"lite\"", l->calib_ok ? "true" : "false");
    if (l->calib_ok)
        sb_f(b, ",\"launches\":%d,\"graph_launch_real_us\":%.3f,\"graph_launch_lite_us\":%.3f,"
                 "\"graph_timing_us\":%.3f,\"call_real_us\":%.3f,\"call_lite_us\":%.3f,\"call_us\":%.3f",
             l->calib_launches, l->graph_launch_real_us, l->graph_launch_lite_us, l->graph_timing_us,
             l->call_real_us, l->call_lite_us, l->call_us);
    else { sb_s(b, ",\"why\":"); sb_str(b, l->calib_why); }
    sb_s(b, "}");
}

int ptrace_write_end(char *buf, size_t cap, const ptrace_ctx *c, const ptrace_end *e) {
    SB_INIT(buf, cap);
    sb_f(&sb, "{\"ph\":\"M\",\"cat\":\"meta\",\"name\":\"specprof_end\",\"pid\":%d,\"tid\":0,\"ts\":", c->pid);
    sb_us(&sb, e->end_ns - c->t0_ns);
    sb_f(&sb, ",\"args\":{\"dropped_records\":%" PRId64 ",\"dropped_host_events\":%" PRId64
              ",\"records\":%" PRId64 ",\"reason\":",
         e->dropped_records, e->dropped_host_events, e->records);
    sb_str(&sb, e->reason);
    sb_f(&sb, ",\"end_ns\":%" PRId64 ",\"nccl_calls\":%" PRId64 ",\"nccl_graph_nodes\":%" PRId64
              ",\"nccl_matched\":%" PRId64 ",\"nvtx_ranges\":%" PRId64 ",\"graph_nodes_created\":%" PRId64
              ",\"graph_nodes_cloned\":%" PRId64 ",\"windows\":%" PRId64 ",\"window_ns\":%" PRId64
              ",\"graph_trace_records\":%" PRId64 ",\"attaches\":%" PRId64 ",\"attach_ns\":%" PRId64
              ",\"detaches\":%" PRId64 ",\"detach_ns\":%" PRId64 ",\"bytes_in\":%" PRId64 ",\"bytes\":%" PRId64,
         e->end_ns, e->nccl_calls, e->nccl_graph_nodes, e->nccl_matched, e->nvtx_ranges, e->graph_nodes_created,
         e->graph_nodes_cloned, e->windows, e->window_ns, e->graph_trace_records, e->attaches, e->attach_ns,
         e->detaches, e->detach_ns, e->bytes_in, e->bytes);
    if (e->lite.on) ptrace_write_lite(&sb, &e->lite);
    else if (e->has_calib) { sb_s(&sb, ","); ptrace_write_calib(&sb, &e->calib); }
    sb_s(&sb, "}}\n]\n");
    return sb.overflow ? -1 : (int)sb.len;
}
