/* ptrace_read.c: line-oriented reader of specprof traces (see ptrace_read.h).
 * One JSON object per line; the reader never trusts the file to be complete: a process
 * killed with SIGKILL leaves whole lines and at most one cut line at the end. */
#include "ptrace_read.h"
#include "bounds.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* An event's ts or dur (us, 3 decimals) as ns, if within kind's range (bounds.h): 0, or -1
 * with the message in why. Absent or not a number: 0 ns. */
static int pr_us_to_ns(const pjson *v, const bnd_kind *kind, const char *field, int64_t *ns,
                       char *why, size_t whylen) {
    *ns = 0;
    if (!v || v->type != PJSON_NUM) return 0;
    if (v->is_int ? bnd_check_i64(kind, v->i, "", field, why, whylen)
                  : bnd_check(kind, v->num, "", field, why, whylen))
        return -1;
    *ns = v->milli;   /* exact for up to 3 decimals (pjson.h); within range: checked above */
    return 0;
}

static void pr_copy(char *dst, size_t cap, const char *src) {
    snprintf(dst, cap, "%s", src ? src : "");
}

static void pr_calib(const pjson *k, ptrace_calib *c);

static void pr_header(const pjson *a, ptrace_header *h) {
    memset(h, 0, sizeof *h);
    h->format_version = (int)pjson_get_int(a, "format_version", 0);
    pr_copy(h->tool_version, sizeof h->tool_version, pjson_get_str(a, "tool_version", ""));
    pr_copy(h->host, sizeof h->host, pjson_get_str(a, "host", ""));
    h->pid_os = pjson_get_int(a, "pid_os", 0);
    h->rank = (int)pjson_get_int(a, "rank", 0);
    h->world_size = (int)pjson_get_int(a, "world_size", 0);
    h->t0_ns = pjson_get_int(a, "t0_ns", 0);
    h->t0_unix_ns = pjson_get_int(a, "t0_unix_ns", 0);
    h->cupti_version = (int)pjson_get_int(a, "cupti_version", 0);
    h->cuda_driver_version = (int)pjson_get_int(a, "cuda_driver_version", 0);
    h->cuda_runtime_version = (int)pjson_get_int(a, "cuda_runtime_version", 0);
    h->nccl_version = (int)pjson_get_int(a, "nccl_version", 0);
    const pjson *d = pjson_get(a, "device");
    pr_copy(h->device.name, sizeof h->device.name, pjson_get_str(d, "name", ""));
    h->device.index = (int)pjson_get_int(d, "index", 0);
    h->device.sms = (int)pjson_get_int(d, "sms", 0);
    h->device.clock_khz = (int)pjson_get_int(d, "clock_khz", 0);
    h->device.mem_clock_khz = (int)pjson_get_int(d, "mem_clock_khz", 0);
    h->device.mem_bytes = pjson_get_int(d, "mem_bytes", 0);
    h->device.mem_bus_bits = (int)pjson_get_int(d, "mem_bus_bits", 0);
    h->device.l2_bytes = pjson_get_int(d, "l2_bytes", 0);
    h->device.cc_major = (int)pjson_get_int(d, "cc_major", 0);
    h->device.cc_minor = (int)pjson_get_int(d, "cc_minor", 0);
    pr_copy(h->device.pci_bus_id, sizeof h->device.pci_bus_id, pjson_get_str(d, "pci_bus_id", ""));
    const pjson *p = pjson_get(a, "peers");
    for (size_t i = 0; p && p->type == PJSON_ARR && i < p->len && h->n_peers < PTRACE_MAX_PEERS; i++) {
        const pjson *e = p->items[i];
        ptrace_peer *q = &h->peers[h->n_peers++];
        q->peer_dev = (int)pjson_get_int(e, "dev", -1);
        q->access = (int)pjson_get_int(e, "access", 0);
        q->native_atomics = (int)pjson_get_int(e, "native_atomics", 0);
        q->perf_rank = (int)pjson_get_int(e, "perf_rank", 0);
    }
    const pjson *ph = pjson_get(a, "nvtx_phases");
    for (size_t i = 0; ph && ph->type == PJSON_ARR && i < ph->len && h->n_phases < PTRACE_MAX_PHASES; i++)
        if (ph->items[i]->type == PJSON_STR)
            pr_copy(h->phases[h->n_phases++], sizeof h->phases[0], ph->items[i]->str);
    const pjson *cap = pjson_get(a, "capture");
    h->delay_s = pjson_get_num(cap, "delay_s", -1);
    h->duration_s = pjson_get_num(cap, "duration_s", -1);
    h->flush_ms = (int)pjson_get_int(cap, "flush_ms", 0);
    h->buffer_mb = (int)pjson_get_int(cap, "buffer_mb", 0);
    pr_copy(h->cmd, sizeof h->cmd, pjson_get_str(a, "cmd", ""));
    pr_copy(h->mode, sizeof h->mode, pjson_get_str(cap, "mode", "always"));
    h->window_ms = (int)pjson_get_int(cap, "window_ms", 0);
    h->period_ms = (int)pjson_get_int(cap, "period_ms", 0);
    h->shape_replays = (int)pjson_get_int(cap, "shape_replays", 0);
    h->window_max_ms = (int)pjson_get_int(cap, "window_max_ms", 0);
    pr_copy(h->between, sizeof h->between, pjson_get_str(cap, "between", "none"));
    pr_copy(h->records, sizeof h->records, pjson_get_str(cap, "records", "fit"));
    h->compressed = pjson_get_bool(cap, "compressed", 0);
    pr_copy(h->clock, sizeof h->clock, pjson_get_str(cap, "clock", ""));
    pr_copy(h->interposed, sizeof h->interposed, pjson_get_str(cap, "interposed", ""));
    pr_copy(h->capture_range, sizeof h->capture_range, pjson_get_str(cap, "capture_range", ""));
    pr_calib(pjson_get(a, "calibration"), &h->calib);
}

static void pr_calib(const pjson *k, ptrace_calib *c) {
    c->ok = pjson_get_bool(k, "ok", 0);
    pr_copy(c->why, sizeof c->why, pjson_get_str(k, "why", k ? "" : "not in this trace"));
    c->launches = (int)pjson_get_int(k, "launches", 0);
    c->graph_nodes = (int)pjson_get_int(k, "graph_nodes", 0);
    c->launch_off_us = pjson_get_num(k, "launch_off_us", 0);
    c->launch_on_us = pjson_get_num(k, "launch_on_us", 0);
    c->launch_clean_us = pjson_get_num(k, "launch_clean_us", 0);
    c->sweep_gap_us = pjson_get_num(k, "sweep_gap_us", 0);
    c->launch_off_swept_us = pjson_get_num(k, "launch_off_swept_us", 0);
    c->launch_on_swept_us = pjson_get_num(k, "launch_on_swept_us", 0);
    c->launch_clean_swept_us = pjson_get_num(k, "launch_clean_swept_us", 0);
    c->graph1_off_us = pjson_get_num(k, "graph1_off_us", 0);
    c->graph1_on_us = pjson_get_num(k, "graph1_on_us", 0);
    c->graphn_off_us = pjson_get_num(k, "graphn_off_us", 0);
    c->graphn_on_us = pjson_get_num(k, "graphn_on_us", 0);
    c->kernel_launch_us = pjson_get_num(k, "kernel_launch_us", 0);
    c->graph_launch_us = pjson_get_num(k, "graph_launch_us", 0);
    c->graph_node_us = pjson_get_num(k, "graph_node_us", 0);
    c->switch_on_us = pjson_get_num(k, "switch_on_us", 0);
    c->switch_off_us = pjson_get_num(k, "switch_off_us", 0);
    c->launch_after_us = pjson_get_num(k, "launch_after_us", 0);
    c->graphn_after_us = pjson_get_num(k, "graphn_after_us", 0);
    c->has_between = pjson_get(k, "graph_between_us") != NULL;
    c->graph1_between_us = pjson_get_num(k, "graph1_between_us", 0);
    c->graphn_between_us = pjson_get_num(k, "graphn_between_us", 0);
    c->graph_between_us = pjson_get_num(k, "graph_between_us", 0);
}

/* A duration or rate a file gives as a float: kept within +-1e9 (us or ppm), else 0. */
static double pr_us_bounded(double v) { return v > -1e9 && v < 1e9 ? v : 0; }

static void pr_end(const pjson *a, int64_t t0_ns, int64_t ts_ns, ptrace_end *e) {
    memset(e, 0, sizeof *e);
    e->dropped_records = pjson_get_int(a, "dropped_records", 0);
    e->dropped_host_events = pjson_get_int(a, "dropped_host_events", 0);
    e->records = pjson_get_int(a, "records", 0);
    pr_copy(e->reason, sizeof e->reason, pjson_get_str(a, "reason", ""));
    e->end_ns = pjson_get_int(a, "end_ns", t0_ns + ts_ns);
    e->nccl_calls = pjson_get_int(a, "nccl_calls", 0);
    e->nccl_graph_nodes = pjson_get_int(a, "nccl_graph_nodes", 0);
    e->nccl_matched = pjson_get_int(a, "nccl_matched", 0);
    e->nvtx_ranges = pjson_get_int(a, "nvtx_ranges", 0);
    e->graph_nodes_created = pjson_get_int(a, "graph_nodes_created", 0);
    e->graph_nodes_cloned = pjson_get_int(a, "graph_nodes_cloned", 0);
    const pjson *k = pjson_get(a, "calibration");
    /* lite mode: its counts, and its calibration (an object of other fields, "mode":"lite") */
    ptrace_lite *l = &e->lite;
    l->on = pjson_get(a, "graph_launches_timed") != NULL || !strcmp(pjson_get_str(k, "mode", ""), "lite");
    e->has_calib = k != NULL && !l->on;
    if (e->has_calib) pr_calib(k, &e->calib);
    if (l->on) {
        l->graph_launches = pjson_get_int(a, "graph_launches", 0);
        l->graph_timed = pjson_get_int(a, "graph_launches_timed", 0);
        l->graph_capturing = pjson_get_int(a, "graph_launches_capturing", 0);
        l->graph_failed = pjson_get_int(a, "graph_launches_failed", 0);
        l->graph_no_event = pjson_get_int(a, "graph_launches_no_event", 0);
        l->graph_pending = pjson_get_int(a, "graph_events_pending", 0);
        l->graph_lost = pjson_get_int(a, "graph_events_lost", 0);
        l->blocking_calls = pjson_get_int(a, "blocking_calls", 0);
        l->memcpy_calls = pjson_get_int(a, "memcpy_calls", 0);
        l->sync_calls = pjson_get_int(a, "sync_calls", 0);
        l->kernel_launches = pjson_get_int(a, "kernel_launches", 0);
        l->dropped = pjson_get_int(a, "lite_dropped", 0);
        l->anchors = pjson_get_int(a, "anchors", 0);
        l->anchor_err_max_us = pr_us_bounded(pjson_get_num(a, "anchor_err_max_us", 0));
        l->err_max_us = pr_us_bounded(pjson_get_num(a, "err_max_us", 0));
        l->drift_max_ppm = pr_us_bounded(pjson_get_num(a, "drift_max_ppm", 0));
        l->static_runtime = pjson_get_bool(a, "static_runtime", 0);
        pr_copy(l->capture_range, sizeof l->capture_range, pjson_get_str(a, "capture_range", ""));
        l->range_opens = pjson_get_int(a, "range_opens", 0);
        l->range_ns = pjson_get_int(a, "range_ns", 0);
        l->calib_ok = pjson_get_bool(k, "ok", 0);
        pr_copy(l->calib_why, sizeof l->calib_why, pjson_get_str(k, "why", k ? "" : "not in this trace"));
        l->calib_launches = (int)pjson_get_int(k, "launches", 0);
        l->graph_launch_real_us = pr_us_bounded(pjson_get_num(k, "graph_launch_real_us", 0));
        l->graph_launch_lite_us = pr_us_bounded(pjson_get_num(k, "graph_launch_lite_us", 0));
        l->graph_timing_us = pr_us_bounded(pjson_get_num(k, "graph_timing_us", 0));
        l->call_real_us = pr_us_bounded(pjson_get_num(k, "call_real_us", 0));
        l->call_lite_us = pr_us_bounded(pjson_get_num(k, "call_lite_us", 0));
        l->call_us = pr_us_bounded(pjson_get_num(k, "call_us", 0));
        const pjson *p = pjson_get(a, "probe");
        if (p && p->type == PJSON_OBJ) {
            int64_t r = pjson_get_int(p, "replays", 0);
            l->probe_replays = r > 0 && r <= 1000 ? (int)r : 0;
            l->probe_execs = pjson_get_int(p, "execs", 0);
            l->probe_skipped = pjson_get_int(p, "skipped", 0);
            l->probe_launched = pjson_get_int(p, "launched", 0);
            l->probe_written = pjson_get_int(p, "written", 0);
            l->probe_lost = pjson_get_int(p, "lost", 0);
            l->probe_stale = pjson_get_int(p, "stale", 0);
            l->probe_events = pjson_get_int(p, "events", 0);
            l->probe_instrument_ms = pr_us_bounded(pjson_get_num(p, "instrument_ms", 0));
            l->probe_event_us = pjson_get_num(p, "event_us", -1);
            if (!(l->probe_event_us >= -1 && l->probe_event_us < 1e6)) l->probe_event_us = -1;
            pr_copy(l->probe_skip_why, sizeof l->probe_skip_why, pjson_get_str(p, "skip_why", ""));
            pr_copy(l->probe_calib_why, sizeof l->probe_calib_why, pjson_get_str(p, "event_why", ""));
        }
        const pjson *ep = pjson_get(a, "eager_probe");
        if (ep && ep->type == PJSON_OBJ) {
            int64_t n = pjson_get_int(ep, "instances", 0);
            l->eager_instances = n > 0 && n <= 1000 ? (int)n : 0;
            l->eager_probed = pjson_get_int(ep, "probed", 0);
            l->eager_written = pjson_get_int(ep, "written", 0);
            l->eager_lost = pjson_get_int(ep, "lost", 0);
            l->eager_skipped = pjson_get_int(ep, "skipped", 0);
            l->eager_watchdog = pjson_get_int(ep, "watchdog", 0);
            l->eager_busy = pjson_get_int(ep, "busy", 0);   /* traces before 2026-12-07's sixteenth session: none */
            l->eager_keys = pjson_get_int(ep, "keys", 0);
            pr_copy(l->eager_skip_why, sizeof l->eager_skip_why, pjson_get_str(ep, "skip_why", ""));
        }
    }
    e->windows = pjson_get_int(a, "windows", 0);
    e->window_ns = pjson_get_int(a, "window_ns", 0);
    e->graph_trace_records = pjson_get_int(a, "graph_trace_records", 0);
    e->attaches = pjson_get_int(a, "attaches", 0);
    e->attach_ns = pjson_get_int(a, "attach_ns", 0);
    e->detaches = pjson_get_int(a, "detaches", 0);
    e->detach_ns = pjson_get_int(a, "detach_ns", 0);
    e->bytes_in = pjson_get_int(a, "bytes_in", 0);
    e->bytes = pjson_get_int(a, "bytes", 0);
}

/* The message for a line past PR_LINE_MAX_BYTES: a binary file or /dev/zero, or JSON
 * re-written on one line (json.dump, jq -c: a bundled kernel extract, call 13, is one 23 MB
 * line), which once got "a binary file, /dev/zero?" too. */
static void pr_long_line(const char *path, size_t line, const char *buf, size_t have,
                         char *err, size_t errlen) {
    size_t i = 0;
    while (i < have && i < 64 && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\r')) i++;
    int json = i + 1 < have && (buf[i] == '[' || buf[i] == '{') &&
               (buf[i + 1] == '{' || buf[i + 1] == '"' || buf[i + 1] == ' ');
    snprintf(err, errlen, "%s: line %zu: longer than %zu bytes: not a specprof trace line (%s)", path,
             line, (size_t)BND_TRACE_LINE_BYTES,
             json ? "JSON written on one line: specprof writes one event per line; re-write it so, "
                    "e.g. jq -c '.[]', after a first line \"[\"" : "a binary file, /dev/zero?");
}

/* The line-by-line state of one scan, shared by the buffer and the streaming file readers. */
typedef struct {
    pjson_arena *a, *keep;
    ptrace_scan_fn fn;
    void *user;
    ptrace_info *info;
    const char *label;
    char *err;
    size_t errlen;
    int started, rc, stop;
    size_t line_no;
    size_t header_line;        /* the line of specprof_header (0: none yet) */
    int pending_bad;           /* the last non-blank line did not parse: cut, or bad if more follows */
    int gz;                    /* the input was gzip (its messages say so when it holds nothing) */
    size_t pending_line;
    char pending_err[160];
} pr_state;

static void pr_bad(pr_state *st, size_t line, const char *why) {
    ptrace_info *info = st->info;
    if (!info->bad_lines) {
        info->first_bad_line = line;
        snprintf(info->first_bad_err, sizeof info->first_bad_err, "%.*s", (int)sizeof info->first_bad_err - 1, why);
    }
    info->bad_lines++;
}

/* The header's t0_ns within bounds.h: 0, or -1 with err (the file is refused: every time
 * in it is relative to t0). */
static int pr_check_t0(pr_state *st, const pjson *args) {
    const pjson *t0 = pjson_get(args, "t0_ns");
    char where[200];
    snprintf(where, sizeof where, "%s: line %zu", st->label, st->line_no);
    if (t0 && t0->type == PJSON_NUM && !t0->is_int) {
        snprintf(st->err, st->errlen, "%s: field t0_ns: value %.10g: not an integer (ns)", where, t0->num);
        return -1;
    }
    return bnd_check_i64(&bnd_clock_ns, pjson_get_int(args, "t0_ns", 0), where, "t0_ns", st->err, st->errlen);
}

/* The end record's counts and times within bounds.h: 0, or -1 with why. */
static int pr_check_end(const pjson *a, char *why, size_t whylen) {
    static const char *const counts[] = { "dropped_records", "dropped_host_events", "records", "nccl_calls",
                                          "nccl_graph_nodes", "nccl_matched", "nvtx_ranges",
                                          "graph_nodes_created", "graph_nodes_cloned", "windows",
                                          "graph_trace_records", "attaches", "detaches", "bytes_in", "bytes",
                                          "graph_launches", "graph_launches_timed", "graph_launches_capturing",
                                          "graph_launches_failed", "graph_launches_no_event", "graph_events_pending",
                                          "graph_events_lost", "blocking_calls", "memcpy_calls", "sync_calls",
                                          "kernel_launches", "lite_dropped", "anchors" };
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
        if (bnd_check_i64(&bnd_records, pjson_get_int(a, counts[i], 0), "", counts[i], why, whylen)) return -1;
    if (pjson_get(a, "end_ns") && bnd_check_i64(&bnd_clock_ns, pjson_get_int(a, "end_ns", 0), "", "end_ns", why, whylen))
        return -1;
    static const char *const times[] = { "window_ns", "attach_ns", "detach_ns" };
    for (size_t i = 0; i < sizeof times / sizeof times[0]; i++)
        if (bnd_check_i64(&bnd_clock_ns, pjson_get_int(a, times[i], 0), "", times[i], why, whylen)) return -1;
    return 0;
}

static int pr_state_init(pr_state *st, const char *label, pjson_arena *keep, ptrace_scan_fn fn, void *user,
                         ptrace_info *info, char *err, size_t errlen) {
    memset(st, 0, sizeof *st);
    memset(info, 0, sizeof *info);
    st->keep = keep;
    st->a = keep ? keep : pjson_arena_create();
    st->fn = fn; st->user = user; st->info = info; st->label = label; st->err = err; st->errlen = errlen;
    info->records_promised = -1;
    if (!st->a) { snprintf(err, errlen, "%s: out of memory", label); return -1; }
    return 0;
}

/* One line s[0..e) without its '\n'. Returns 1 when the scan must stop. */
static int pr_line(pr_state *st, const char *s, const char *e) {
    ptrace_info *info = st->info;
    st->line_no++;
    info->lines = st->line_no;
    while (s < e && (*s == ' ' || *s == '\t')) s++;
    const char *t = e;
    while (t > s && (t[-1] == ' ' || t[-1] == '\t' || t[-1] == '\r')) t--;
    if (t == s) return 0;
    if (st->pending_bad) {   /* a line follows the one that did not parse: it was bad, not cut */
        pr_bad(st, st->pending_line, st->pending_err);
        st->pending_bad = 0;
    }
    if (t - s == 1 && (*s == '[' || *s == ']')) { st->started = 1; return 0; }
    if (!st->started && *s == '[') { s++; st->started = 1; }   /* "[{...}," on one line */
    if (!st->keep) pjson_arena_reset(st->a);
    pjson *ev = NULL;
    char perr[128];
    if (pjson_parse(st->a, s, (size_t)(t - s), 1, &ev, perr, sizeof perr) || ev->type != PJSON_OBJ) {
        st->pending_bad = 1;
        st->pending_line = st->line_no;
        snprintf(st->pending_err, sizeof st->pending_err, "%s", ev && ev->type != PJSON_OBJ ? "not an object" : perr);
        return 0;
    }
    ptrace_event x;
    const char *ph = pjson_get_str(ev, "ph", "");
    x.ph = ph[0];
    x.cat = pjson_get_str(ev, "cat", "");
    x.name = pjson_get_str(ev, "name", "");
    x.pid = pjson_get_int(ev, "pid", 0);
    x.tid = pjson_get_int(ev, "tid", 0);
    x.args = pjson_get(ev, "args");
    x.line = st->line_no;
    /* times within bounds.h, so that t0 + ts + dur cannot overflow anywhere downstream */
    char why[200];
    if (pr_us_to_ns(pjson_get(ev, "ts"), &bnd_ts_us, "ts", &x.ts_ns, why, sizeof why) ||
        pr_us_to_ns(pjson_get(ev, "dur"), &bnd_dur_us, "dur", &x.dur_ns, why, sizeof why)) {
        pr_bad(st, st->line_no, why + 2);   /* why starts ": field ..." (no file) */
        return 0;
    }
    if (!info->has_header && !info->merged) {
        if (x.ph == 'M' && !strcmp(x.name, "specprof_header")) {
            if (pr_check_t0(st, x.args)) { st->rc = -1; return 1; }
            pr_header(x.args, &info->header);
            info->has_header = 1;
            st->header_line = st->line_no;
            if (info->header.format_version != PTRACE_FORMAT_VERSION) {
                snprintf(st->err, st->errlen, "%s: line %zu: field format_version: value %d: this reader knows version %d",
                         st->label, st->line_no, info->header.format_version, PTRACE_FORMAT_VERSION);
                st->rc = -1;
                return 1;
            }
            return 0;
        }
        if (x.ph == 'M' && !strcmp(x.name, "specprof_merged")) { info->merged = 1; return 0; }
        snprintf(st->err, st->errlen, "%s: line %zu: not a specprof trace: first event is \"%s\", expected specprof_header",
                 st->label, st->line_no, x.name);
        st->rc = -1;
        return 1;
    }
    /* two traces in one file (cat a.json b.json, or two gzip members) once read as one,
     * the second's times taken against the first's t0, and said only "cut off" */
    if (x.ph == 'M' && !strcmp(x.name, "specprof_header") && !info->merged) {
        snprintf(st->err, st->errlen, "%s: line %zu: field name: value specprof_header: a second "
                 "trace header (the first on line %zu): two traces in one file (cat, or gzip "
                 "members)? give each trace as its own file", st->label, st->line_no,
                 st->header_line);
        st->rc = -1;
        return 1;
    }
    if (x.ph == 'M' && !strcmp(x.name, "specprof_end")) {
        if (pr_check_end(x.args, why, sizeof why)) { pr_bad(st, st->line_no, why + 2); return 0; }
        pr_end(x.args, info->header.t0_ns, x.ts_ns, &info->end);
        info->has_end = 1;
        /* --mode always calibrates at the end: the trace's calibration from there on */
        if (info->end.has_calib && !info->header.calib.ok) info->header.calib = info->end.calib;
        info->records_promised = pjson_get(x.args, "records") ? info->end.records : -1;
        return 0;
    }
    if (info->merged && !info->has_header && x.ph == 'M' && !strcmp(x.name, "specprof_rank_header")) {
        if (pr_check_t0(st, x.args)) { st->rc = -1; return 1; }
        pr_header(x.args, &info->header);
        info->has_header = 1;
    }
    info->events++;
    if (x.ph != 'M') info->records_seen++;
    if (st->fn && st->fn(st->user, &x, info)) { st->stop = 1; return 1; }
    return 0;
}

/* After the last line: the pending line was cut; no header means no trace. */
static int pr_state_end(pr_state *st, size_t len_seen) {
    ptrace_info *info = st->info;
    if (st->pending_bad && !st->stop && !st->rc) info->cut_last_line = 1;
    /* complete: the end record came, and the file holds the records it promises */
    info->complete = info->has_end && (info->records_promised < 0 || info->records_seen == info->records_promised);
    if (!st->rc && !info->has_header && !info->merged) {
        if (info->bad_lines || info->cut_last_line) {
            size_t l = info->bad_lines ? info->first_bad_line : st->pending_line;
            const char *why = info->bad_lines ? info->first_bad_err : st->pending_err;
            snprintf(st->err, st->errlen, "%s: not a specprof trace: no line is a JSON event (line %zu: %s)", st->label, l, why);
        } else
            snprintf(st->err, st->errlen, "%s: not a specprof trace: no specprof_header line%s", st->label,
                     len_seen ? " (empty or cut off before its header was written)"
                     : st->gz ? " (a gzip stream that holds no data)" : " (empty file)");
        st->rc = -1;
    }
    if (!st->keep) pjson_arena_destroy(st->a);
    st->a = NULL;
    return st->rc;
}

static int pr_scan(const char *text, size_t len, const char *label, pjson_arena *keep,
                   ptrace_scan_fn fn, void *user, ptrace_info *info, char *err, size_t errlen) {
    pr_state st;
    if (pr_state_init(&st, label, keep, fn, user, info, err, errlen)) return -1;
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *s = p, *e = memchr(p, '\n', (size_t)(end - p));
        if (!e) e = end;
        p = e < end ? e + 1 : end;
        if (pr_line(&st, s, e)) break;
    }
    return pr_state_end(&st, len);
}

/* ---- streaming from a file: plain JSON or gzip (one or more members), in bounded memory ---- */

#define PR_CHUNK_BYTES ((size_t)1 << 20)     /* read(2) and inflate output granularity */
#define PR_LINE_MAX_BYTES ((size_t)BND_TRACE_LINE_BYTES) /* a longer line stops the read (bounds.h) */

typedef struct {
    FILE *fp;
    int gz;                    /* 1: gzip input */
    z_stream z;
    int z_live, z_ended;       /* inflate initialised; the current member ended */
    unsigned char *in;
    size_t in_len;
    int eof;
    ptrace_info *info;
} pr_src;

/* Reads up to cap decompressed bytes into out. Returns the count, 0 at the end of input
 * (also at a cut-off or damaged gzip stream, noted in info), -1 on a read error. */
static long pr_src_read(pr_src *r, char *out, size_t cap) {
    if (!r->gz) {
        size_t n = fread(out, 1, cap, r->fp);
        if (!n && ferror(r->fp)) return -1;
        return (long)n;
    }
    r->z.next_out = (Bytef *)out;
    r->z.avail_out = (uInt)cap;
    while (r->z.avail_out == cap) {
        if (r->z.avail_in == 0 && !r->eof) {
            size_t n = fread(r->in, 1, PR_CHUNK_BYTES, r->fp);
            if (!n && ferror(r->fp)) return -1;
            if (!n) r->eof = 1;
            r->z.next_in = r->in;
            r->z.avail_in = (uInt)n;
        }
        if (r->z.avail_in == 0 && r->eof) {
            if (!r->z_ended) r->info->cut_compressed = 1;   /* no gzip trailer: cut off mid-stream */
            break;
        }
        if (r->z_ended) {   /* another gzip member follows (concatenated files) */
            inflateReset(&r->z);
            r->z_ended = 0;
        }
        int zr = inflate(&r->z, Z_NO_FLUSH);
        if (zr == Z_STREAM_END) { r->z_ended = 1; continue; }
        if (zr == Z_BUF_ERROR && r->eof) { r->info->cut_compressed = 1; break; }
        if (zr != Z_OK && zr != Z_BUF_ERROR) {
            snprintf(r->info->compressed_err, sizeof r->info->compressed_err, "zlib: %s",
                     r->z.msg ? r->z.msg : "inflate failed");
            r->info->cut_compressed = 1;
            r->eof = 1;
            r->z.avail_in = 0;
            break;
        }
    }
    return (long)(cap - r->z.avail_out);
}

/* Scans fp (a file: plain or gzip, told by its first two bytes and rewound; a stream that
 * cannot be rewound: plain, detect 0). path names it in messages. */
static int pr_scan_fp(FILE *fp, int detect, const char *path, pjson_arena *keep, ptrace_scan_fn fn, void *user,
                      ptrace_info *info, char *err, size_t errlen) {
    pr_src r;
    memset(&r, 0, sizeof r);
    r.fp = fp;
    pr_state st;
    if (pr_state_init(&st, path, keep, fn, user, info, err, errlen)) return -1;
    r.info = info;
    if (detect) {
        int c1 = getc(r.fp), c2 = c1 == EOF ? EOF : getc(r.fp);
        r.gz = c1 == 0x1f && c2 == 0x8b;
        st.gz = r.gz;
        rewind(r.fp);
    }
    size_t cap = 4 * PR_CHUNK_BYTES, have = 0, seen = 0;
    char *buf = malloc(cap);
    if (r.gz) {
        r.in = malloc(PR_CHUNK_BYTES);
        if (r.in && inflateInit2(&r.z, 15 + 32) == Z_OK) r.z_live = 1;   /* 15 + 32: gzip or zlib header */
    }
    if (!buf || (r.gz && !r.z_live)) {
        snprintf(err, errlen, "%s: out of memory", path);
        st.rc = -1;
        goto done;
    }
    for (;;) {
        if (cap - have < PR_CHUNK_BYTES) {
            if (cap >= PR_LINE_MAX_BYTES) {
                pr_long_line(path, st.line_no + 1, buf, have, err, errlen);
                st.rc = -1;
                goto done;
            }
            char *nb = realloc(buf, cap * 2);
            if (!nb) { snprintf(err, errlen, "%s: out of memory", path); st.rc = -1; goto done; }
            buf = nb; cap *= 2;
        }
        long n = pr_src_read(&r, buf + have, cap - have);
        if (n < 0) { snprintf(err, errlen, "%s: read error: %s", path, strerror(errno)); st.rc = -1; goto done; }
        seen += (size_t)n;
        if (seen > (size_t)BND_TRACE_FILE_BYTES) {   /* an endless input stops (bounds.h) */
            snprintf(err, errlen, "%s: larger than %lld bytes: not a specprof trace (bounds.h)", path,
                     (long long)BND_TRACE_FILE_BYTES);
            st.rc = -1;
            goto done;
        }
        int last = n == 0;
        have += (size_t)n;
        /* hand over whole lines; keep the tail */
        char *p = buf, *end = buf + have;
        for (;;) {
            char *e = memchr(p, '\n', (size_t)(end - p));
            if (!e) break;
            if (pr_line(&st, p, e)) goto done;
            p = e + 1;
        }
        if (last) {
            if (p < end && pr_line(&st, p, end)) goto done;
            break;
        }
        have = (size_t)(end - p);
        memmove(buf, p, have);
        if (have > PR_LINE_MAX_BYTES) {   /* a line this long is not a trace's (/dev/zero, a binary file) */
            pr_long_line(path, st.line_no + 1, buf, have, err, errlen);
            st.rc = -1;
            goto done;
        }
        /* a big buffer is given back once its long line is gone */
        if (cap > 4 * PR_CHUNK_BYTES && have < PR_CHUNK_BYTES) {
            char *nb = realloc(buf, 4 * PR_CHUNK_BYTES);
            if (nb) { buf = nb; cap = 4 * PR_CHUNK_BYTES; }
        }
    }
done:
    free(buf);
    free(r.in);
    if (r.z_live) inflateEnd(&r.z);
    if (st.rc) st.pending_bad = 0;
    return pr_state_end(&st, seen);
}

static int pr_scan_file(const char *path, pjson_arena *keep, ptrace_scan_fn fn, void *user, ptrace_info *info,
                        char *err, size_t errlen) {
    FILE *fp = fopen(path, "rb");
    if (!fp) { memset(info, 0, sizeof *info); snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno)); return -1; }
    int rc = pr_scan_fp(fp, 1, path, keep, fn, user, info, err, errlen);
    fclose(fp);
    return rc;
}

int ptrace_scan_file(const char *path, ptrace_scan_fn fn, void *user, ptrace_info *info, char *err, size_t errlen) {
    return pr_scan_file(path, NULL, fn, user, info, err, errlen);
}

int ptrace_scan_stream(FILE *fp, const char *label, ptrace_scan_fn fn, void *user, ptrace_info *info,
                       char *err, size_t errlen) {
    return pr_scan_fp(fp, 0, label, NULL, fn, user, info, err, errlen);
}

int ptrace_scan_buf(const char *text, size_t len, const char *label, ptrace_scan_fn fn,
                    void *user, ptrace_info *info, char *err, size_t errlen) {
    return pr_scan(text, len, label, NULL, fn, user, info, err, errlen);
}

static int pr_keep(void *user, const ptrace_event *ev, const ptrace_info *info) {
    (void)info;
    ptrace_file *f = user;
    if (f->n_ev == f->cap_ev) {
        size_t nc = f->cap_ev ? f->cap_ev * 2 : 1024;
        ptrace_event *ne = realloc(f->ev, nc * sizeof *ne);
        if (!ne) return 1;
        f->ev = ne; f->cap_ev = nc;
    }
    f->ev[f->n_ev++] = *ev;
    return 0;
}

int ptrace_read_buf(const char *text, size_t len, const char *label, ptrace_file *f,
                    char *err, size_t errlen) {
    memset(f, 0, sizeof *f);
    f->arena = pjson_arena_create();
    if (!f->arena) { snprintf(err, errlen, "%s: out of memory", label); return -1; }
    if (pr_scan(text, len, label, f->arena, pr_keep, f, &f->info, err, errlen)) {
        ptrace_file_free(f);
        return -1;
    }
    if (f->n_ev != f->info.events) {
        snprintf(err, errlen, "%s: out of memory after %zu events", label, f->n_ev);
        ptrace_file_free(f);
        return -1;
    }
    return 0;
}

int ptrace_slurp(const char *path, char **text, size_t *len, char *err, size_t errlen) {
    /* the whole file in memory: capped like every reader (bounds.h); the streaming readers
     * above are what a large trace should go through */
    return bnd_read_file(path, (long)BND_TRACE_FILE_BYTES, "a specprof trace", text, len, err, errlen);
}

int ptrace_read_file(const char *path, ptrace_file *f, char *err, size_t errlen) {
    memset(f, 0, sizeof *f);
    f->arena = pjson_arena_create();
    if (!f->arena) { snprintf(err, errlen, "%s: out of memory", path); return -1; }
    if (pr_scan_file(path, f->arena, pr_keep, f, &f->info, err, errlen)) {
        ptrace_file_free(f);
        return -1;
    }
    if (f->n_ev != f->info.events) {
        snprintf(err, errlen, "%s: out of memory after %zu events", path, f->n_ev);
        ptrace_file_free(f);
        return -1;
    }
    return 0;
}

void ptrace_file_free(ptrace_file *f) {
    if (!f) return;
    free(f->ev);
    pjson_arena_destroy(f->arena);
    memset(f, 0, sizeof *f);
}

int ptrace_read_nccl(const pjson *o, ptrace_nccl *n) {
    memset(n, 0, sizeof *n);
    if (!o || o->type != PJSON_OBJ || !pjson_get(o, "op")) return -1;
    pr_copy(n->op, sizeof n->op, pjson_get_str(o, "op", ""));
    pr_copy(n->redop, sizeof n->redop, pjson_get_str(o, "redop", ""));
    pr_copy(n->dtype, sizeof n->dtype, pjson_get_str(o, "dtype", ""));
    n->count = (uint64_t)pjson_get_int(o, "count", 0);
    n->bytes = (uint64_t)pjson_get_int(o, "bytes", 0);
    n->comm_size = (int32_t)pjson_get_int(o, "comm_size", 0);
    n->rank = (int32_t)pjson_get_int(o, "rank", 0);
    n->root_or_peer = (int32_t)pjson_get_int(o, "root_or_peer", -1);
    n->group_ops = (int32_t)pjson_get_int(o, "group_ops", 1);
    n->seq = (uint32_t)pjson_get_int(o, "seq", 0);
    n->captured = pjson_get_bool(o, "captured", 0);
    return 0;
}

static void pr_int3(const pjson *arr, int32_t out[3]) {
    for (int i = 0; i < 3; i++) {
        const pjson *v = pjson_at(arr, (size_t)i);
        out[i] = v && v->type == PJSON_NUM ? (int32_t)v->i : 0;
    }
}

int ptrace_read_kernel(const ptrace_event *e, int64_t t0_ns, ptrace_kernel *k) {
    memset(k, 0, sizeof *k);
    if (e->ph != 'X' || strcmp(e->cat, "kernel")) return -1;
    const pjson *a = e->args;
    k->start_ns = t0_ns + e->ts_ns;
    k->end_ns = k->start_ns + e->dur_ns;
    k->name = e->name;
    k->corr = (uint32_t)pjson_get_int(a, "corr", 0);
    k->dev = (uint32_t)pjson_get_int(a, "dev", 0);
    k->stream = (uint32_t)pjson_get_int(a, "stream", 0);
    pr_int3(pjson_get(a, "grid"), k->grid);
    pr_int3(pjson_get(a, "block"), k->block);
    k->smem_bytes = (int32_t)pjson_get_int(a, "smem", 0);
    k->regs = (int32_t)pjson_get_int(a, "regs", 0);
    k->graph_id = (uint32_t)pjson_get_int(a, "graph_id", 0);
    k->graph_node_id = (uint64_t)pjson_get_int(a, "graph_node_id", 0);
    k->nvtx = pjson_get_str(a, "nvtx", "");
    k->phase = pjson_get_str(a, "phase", "");
    k->has_nccl = ptrace_read_nccl(pjson_get(a, "nccl"), &k->nccl) == 0;
    return 0;
}

int ptrace_read_mem(const ptrace_event *e, int64_t t0_ns, ptrace_mem *m) {
    memset(m, 0, sizeof *m);
    if (e->ph != 'X') return -1;
    if (!strcmp(e->cat, "memcpy")) m->kind = PTRACE_MEMCPY;
    else if (!strcmp(e->cat, "memset")) m->kind = PTRACE_MEMSET;
    else return -1;
    const pjson *a = e->args;
    m->start_ns = t0_ns + e->ts_ns;
    m->end_ns = m->start_ns + e->dur_ns;
    m->copy_kind = pjson_get_str(a, "copy_kind", "");
    m->bytes = (uint64_t)pjson_get_int(a, "bytes", 0);
    m->corr = (uint32_t)pjson_get_int(a, "corr", 0);
    m->dev = (uint32_t)pjson_get_int(a, "dev", 0);
    m->stream = (uint32_t)pjson_get_int(a, "stream", 0);
    m->graph_id = (uint32_t)pjson_get_int(a, "graph_id", 0);
    m->graph_node_id = (uint64_t)pjson_get_int(a, "graph_node_id", 0);
    m->nvtx = pjson_get_str(a, "nvtx", "");
    m->phase = pjson_get_str(a, "phase", "");
    m->has_nccl = ptrace_read_nccl(pjson_get(a, "nccl"), &m->nccl) == 0;
    return 0;
}

int ptrace_read_api(const ptrace_event *e, int64_t t0_ns, ptrace_api *x) {
    memset(x, 0, sizeof *x);
    if (e->ph != 'X' || strcmp(e->cat, "api")) return -1;
    const pjson *a = e->args;
    x->start_ns = t0_ns + e->ts_ns;
    x->end_ns = x->start_ns + e->dur_ns;
    x->name = e->name;
    x->corr = (uint32_t)pjson_get_int(a, "corr", 0);
    x->cbid = (uint32_t)pjson_get_int(a, "cbid", 0);
    x->thread = pjson_get_int(a, "thread", e->tid);
    x->domain_driver = pjson_get_bool(a, "driver", 0);
    x->graph_exec_id = (uint32_t)pjson_get_int(a, "graph_exec_id", 0);
    x->blocking = -1;
    if (pjson_get(a, "stream")) {   /* lite mode's interposed calls */
        x->has_lite = 1;
        x->stream = (uint64_t)pjson_get_int(a, "stream", 0);
        x->bytes = pjson_get_int(a, "bytes", 0);
        if (x->bytes < 0) x->bytes = 0;
        x->copy_kind = pjson_get(a, "copy_kind") ? pjson_get_str(a, "copy_kind", "") : NULL;
        if (pjson_get(a, "blocking")) x->blocking = pjson_get_bool(a, "blocking", 0);
        x->untimed = pjson_get(a, "untimed") ? pjson_get_str(a, "untimed", "") : NULL;
    }
    return 0;
}

int ptrace_read_range(const ptrace_event *e, int64_t t0_ns, ptrace_range *r) {
    memset(r, 0, sizeof *r);
    if (e->ph != 'X' || strcmp(e->cat, "nvtx")) return -1;
    r->start_ns = t0_ns + e->ts_ns;
    r->end_ns = r->start_ns + e->dur_ns;
    r->name = e->name;
    r->domain = pjson_get_str(e->args, "domain", "");
    r->thread = pjson_get_int(e->args, "thread", e->tid);
    r->push_pop = !strcmp(pjson_get_str(e->args, "kind", "push"), "push");
    r->has_launches = pjson_get(e->args, "launches") != NULL;   /* lite mode */
    r->launches = pjson_get_int(e->args, "launches", 0);
    r->graph_launches = pjson_get_int(e->args, "graph_launches", 0);
    if (r->launches < 0) r->launches = 0;
    if (r->graph_launches < 0) r->graph_launches = 0;
    return 0;
}

int ptrace_read_ncclcall(const ptrace_event *e, int64_t t0_ns, ptrace_ncclcall *n) {
    memset(n, 0, sizeof *n);
    if (e->ph != 'X' || strcmp(e->cat, "nccl")) return -1;
    n->start_ns = t0_ns + e->ts_ns;
    n->end_ns = n->start_ns + e->dur_ns;
    n->thread = pjson_get_int(e->args, "thread", e->tid);
    n->stream = (uint64_t)pjson_get_int(e->args, "stream", 0);
    return ptrace_read_nccl(e->args, &n->call);
}

int ptrace_read_graphexec(const ptrace_event *e, int64_t t0_ns, ptrace_graphexec *g) {
    memset(g, 0, sizeof *g);
    if (e->ph != 'i' || strcmp(e->cat, "graph")) return -1;
    g->ts_ns = t0_ns + e->ts_ns;
    g->graph_id = (uint32_t)pjson_get_int(e->args, "graph_id", 0);
    g->graph_exec_id = (uint32_t)pjson_get_int(e->args, "graph_exec_id", 0);
    g->nodes = pjson_get_int(e->args, "nodes", -1);
    g->thread = pjson_get_int(e->args, "thread", e->tid);
    return 0;
}

int ptrace_read_window(const ptrace_event *e, int64_t t0_ns, ptrace_window *w) {
    memset(w, 0, sizeof *w);
    if (e->ph != 'X' || strcmp(e->cat, "window")) return -1;
    w->start_ns = t0_ns + e->ts_ns;
    w->end_ns = w->start_ns + e->dur_ns;
    pr_copy(w->reason, sizeof w->reason, pjson_get_str(e->args, "reason", ""));
    w->attach_us = pjson_get_num(e->args, "attach_us", 0);
    if (!(w->attach_us >= 0 && w->attach_us < 1e9)) w->attach_us = 0;   /* bounded: 0 to 1000 s */
    return 0;
}

/* The fields a graph_trace and a graph_probe event share (a replay's span and launch). */
static void pr_graph_span(const ptrace_event *e, int64_t t0_ns, ptrace_graphlaunch *g) {
    const pjson *a = e->args;
    g->start_ns = t0_ns + e->ts_ns;
    g->end_ns = g->start_ns + e->dur_ns;
    g->corr = (uint32_t)pjson_get_int(a, "corr", 0);
    g->dev = (uint32_t)pjson_get_int(a, "dev", 0);
    g->stream = (uint32_t)pjson_get_int(a, "stream", 0);
    g->graph_id = (uint32_t)pjson_get_int(a, "graph_id", 0);
    g->graph_exec_id = (uint32_t)pjson_get_int(a, "graph_exec_id", 0);
    g->nvtx = pjson_get_str(a, "nvtx", "");
    g->phase = pjson_get_str(a, "phase", "");
    g->err_us = pr_us_bounded(pjson_get_num(a, "err_us", 0));
    if (g->err_us < 0) g->err_us = 0;
}

int ptrace_read_graphlaunch(const ptrace_event *e, int64_t t0_ns, ptrace_graphlaunch *g) {
    memset(g, 0, sizeof *g);
    if (e->ph != 'X' || strcmp(e->cat, "graph_trace")) return -1;
    pr_graph_span(e, t0_ns, g);
    return 0;
}

int ptrace_read_graphprobe(const ptrace_event *e, int64_t t0_ns, ptrace_graphlaunch *g, const pjson **end_us) {
    memset(g, 0, sizeof *g);
    *end_us = NULL;
    if (e->ph != 'X' || strcmp(e->cat, "graph_probe")) return -1;
    const pjson *v = pjson_get(e->args, "end_us");
    if (!v || v->type != PJSON_ARR) return -1;
    pr_graph_span(e, t0_ns, g);
    *end_us = v;
    return (int)v->len;
}

int ptrace_probe(const char *head, size_t len) {
    static const char *names[] = {"\"specprof_header\"", "\"specprof_merged\""};
    /* the first event: line 1 is "[" then the event, or "[{...}," on one line */
    size_t i = 0;
    while (i < len && (head[i] == ' ' || head[i] == '\t' || head[i] == '\r' || head[i] == '\n')) i++;
    if (i >= len || head[i] != '[') return 0;
    const char *first = head + i, *e = memchr(first, '\n', len - i);
    if (e && (size_t)(e - first) <= 2) {     /* "[" alone: the event is the next line */
        first = e + 1;
        e = memchr(first, '\n', len - (size_t)(first - head));
    }
    size_t n = e ? (size_t)(e - first) : len - (size_t)(first - head);
    for (size_t k = 0; k < 2; k++)
        if (memmem(first, n, names[k], strlen(names[k]))) return 1;
    return 0;
}
