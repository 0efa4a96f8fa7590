/* ptrace_sum.c: one-pass summary of a trace (see ptrace_sum.h). */
#include "ptrace_sum.h"
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

void ptrace_sum_init(ptrace_sum *s) {
    memset(s, 0, sizeof *s);
    s->first_ns = INT64_MAX;
    s->last_ns = INT64_MIN;
}

void ptrace_sum_free(ptrace_sum *s) {
    if (!s) return;
    free(s->launches);
    s->launches = NULL;
    s->n_launches = s->cap_launches = 0;
}

static void sum_item(ptrace_sum *s, ptrace_sum_item *t, int *n, const char *name, int64_t dur_ns) {
    for (int i = 0; i < *n; i++)
        if (!strcmp(t[i].name, name)) { t[i].n++; t[i].total_ns += dur_ns; return; }
    if (*n == PTRACE_SUM_MAX) { s->table_overflow++; return; }
    snprintf(t[*n].name, sizeof t[*n].name, "%s", name);
    t[*n].n = 1;
    t[*n].total_ns = dur_ns;
    (*n)++;
}

static void sum_nccl(ptrace_sum *s, const ptrace_nccl *n, int64_t dur_ns) {
    char key[112];
    snprintf(key, sizeof key, "%s %s %" PRIu64 " B%s", n->op, n->dtype, n->bytes, n->captured ? " graph" : "");
    sum_item(s, s->nccl, &s->n_nccl, key, dur_ns);
}

void ptrace_sum_add(ptrace_sum *s, const ptrace_event *e) {
    if (e->ph == 'M') { s->meta++; return; }
    if (e->ts_ns < s->first_ns) s->first_ns = e->ts_ns;
    if (e->ts_ns + e->dur_ns > s->last_ns) s->last_ns = e->ts_ns + e->dur_ns;
    ptrace_kernel k;
    ptrace_mem m;
    ptrace_api a;
    ptrace_ncclcall nc;
    if (!ptrace_read_kernel(e, 0, &k)) {
        s->kernels++;
        if (k.graph_id || k.graph_node_id) {
            char g[32];
            snprintf(g, sizeof g, "graph %u", k.graph_id);
            s->kernels_in_graphs++;
            sum_item(s, s->graphs, &s->n_graphs, g, e->dur_ns);
        }
        if (k.nvtx[0]) s->kernels_with_nvtx++;
        if (k.phase[0]) s->kernels_with_phase++;
        sum_item(s, s->phases, &s->n_phases, k.phase[0] ? k.phase : "(none)", e->dur_ns);
        if (k.has_nccl) { s->kernels_nccl++; sum_nccl(s, &k.nccl, e->dur_ns); }
    } else if (!ptrace_read_mem(e, 0, &m)) {
        if (m.kind == PTRACE_MEMCPY) s->memcpys++; else s->memsets++;
        if (m.has_nccl) { s->mem_nccl++; sum_nccl(s, &m.nccl, e->dur_ns); }
    } else if (!ptrace_read_api(e, 0, &a)) {
        s->api++;
        if (!strncmp(a.name, "cudaGraphLaunch", 15) || !strncmp(a.name, "cuGraphLaunch", 13)) {
            if (s->n_launches == s->cap_launches && s->cap_launches < ((size_t)1 << 20)) {
                size_t nc2 = s->cap_launches ? s->cap_launches * 2 : 256;
                ptrace_sum_launch *nl = realloc(s->launches, nc2 * sizeof *nl);
                if (nl) { s->launches = nl; s->cap_launches = nc2; }
            }
            if (s->n_launches < s->cap_launches)
                s->launches[s->n_launches++] = (ptrace_sum_launch){ e->ts_ns, e->pid, a.corr, a.graph_exec_id };
            else s->table_overflow++;
        }
    } else if (!strcmp(e->cat, "nvtx") && e->ph == 'X') {
        s->nvtx_ranges++;
        sum_item(s, s->ranges, &s->n_ranges, e->name, e->dur_ns);
    } else if (!ptrace_read_ncclcall(e, 0, &nc)) {
        s->nccl_calls++;
        if (nc.call.captured) s->nccl_calls_captured++;
    } else if (!strcmp(e->cat, "graph")) {
        s->graph_execs++;
    } else if (!strcmp(e->cat, "window") && e->ph == 'X') {
        s->windows++;
        s->window_ns += e->dur_ns;
    } else if (!strcmp(e->cat, "graph_trace") && e->ph == 'X') {
        /* a graph launch recorded at graph level between windows: in the launch cycle too */
        ptrace_graphlaunch gl;
        s->graph_trace++;
        if (!ptrace_read_graphlaunch(e, 0, &gl)) {
            if (s->n_launches == s->cap_launches && s->cap_launches < ((size_t)1 << 20)) {
                size_t nc2 = s->cap_launches ? s->cap_launches * 2 : 256;
                ptrace_sum_launch *nl = realloc(s->launches, nc2 * sizeof *nl);
                if (nl) { s->launches = nl; s->cap_launches = nc2; }
            }
            if (s->n_launches < s->cap_launches)
                s->launches[s->n_launches++] = (ptrace_sum_launch){ e->ts_ns, e->pid, gl.corr, gl.graph_exec_id };
            else s->table_overflow++;
        }
    } else s->other++;
}

static int sum_launch_cmp(const void *a, const void *b) {
    const ptrace_sum_launch *x = a, *y = b;
    if (x->ts_ns != y->ts_ns) return x->ts_ns < y->ts_ns ? -1 : 1;
    return x->corr < y->corr ? -1 : x->corr > y->corr;
}

int ptrace_sum_period(const uint32_t *seq, size_t n) {
    for (size_t p = 1; p <= PTRACE_SUM_CYCLE_MAX; p++) {
        if (n < 3 * p) break;
        size_t match = 0;
        for (size_t i = p; i < n; i++) match += seq[i] == seq[i - p];
        if (match * 10 >= (n - p) * 9) return (int)p;
    }
    return 0;
}

void ptrace_sum_finish(ptrace_sum *s) {
    if (!s->n_launches) return;
    qsort(s->launches, s->n_launches, sizeof *s->launches, sum_launch_cmp);
    /* a runtime launch and the driver call inside it share one correlation id */
    size_t w = 0;
    for (size_t i = 0; i < s->n_launches; i++) {
        int dup = 0;
        for (size_t j = w > 4 ? w - 4 : 0; j < w; j++)
            if (s->launches[j].corr == s->launches[i].corr && s->launches[j].pid == s->launches[i].pid) dup = 1;
        if (!dup) s->launches[w++] = s->launches[i];
    }
    s->n_launches = w;
    uint32_t *seq = malloc(w * sizeof *seq);
    if (!seq) return;
    for (size_t i = 0; i < w; i++) seq[i] = s->launches[i].exec_id;
    s->cycle_period = ptrace_sum_period(seq, w);
    for (int i = 0; i < s->cycle_period; i++) s->cycle[i] = seq[w - (size_t)s->cycle_period + (size_t)i];
    free(seq);
}

static void sum_print_items(FILE *f, const char *title, const ptrace_sum_item *t, int n) {
    if (!n) return;
    fprintf(f, "# %s\n#   count   total_us  name\n", title);
    for (int i = 0; i < n; i++)
        fprintf(f, "  %7" PRId64 " %10.3f  %s\n", t[i].n, (double)t[i].total_ns / 1e3, t[i].name);
}

void ptrace_sum_print(FILE *f, const ptrace_sum *s, const ptrace_info *info, const char *label) {
    const ptrace_header *h = &info->header;
    fprintf(f, "# %s\n", label);
    if (info->merged) fprintf(f, "merged file (specprof merge)\n");
    fprintf(f, "format %d, %s, host %s, pid %" PRId64 ", rank %d of %d\n", h->format_version, h->tool_version,
            h->host, h->pid_os, h->rank, h->world_size);
    fprintf(f, "device %d: %s, %d SMs, cc %d.%d, %.1f GiB, driver %d, runtime %d, cupti %d, nccl %d\n",
            h->device.index, h->device.name, h->device.sms, h->device.cc_major, h->device.cc_minor,
            (double)h->device.mem_bytes / (1024.0 * 1024 * 1024), h->cuda_driver_version,
            h->cuda_runtime_version, h->cupti_version, h->nccl_version);
    if (info->complete)
        fprintf(f, "complete: end reason \"%s\", %" PRId64 " records, %" PRId64 " dropped by CUPTI, %" PRId64
                   " host events dropped\n", info->end.reason, info->end.records, info->end.dropped_records,
                info->end.dropped_host_events);
    else if (info->has_end)
        fprintf(f, "INCOMPLETE: %" PRId64 " of the %" PRId64 " records the end record promises are in the file "
                   "(end reason \"%s\"; lines lost or added after it was written)\n", info->records_seen,
                info->records_promised, info->end.reason);
    else
        fprintf(f, "TRUNCATED: no specprof_end (process killed or still running); %zu events loaded%s\n",
                info->events, info->cut_last_line ? ", last line cut mid-write and dropped" : "");
    if (info->bad_lines)
        fprintf(f, "WARNING: %zu lines did not parse (first: line %zu: %s)\n", info->bad_lines,
                info->first_bad_line, info->first_bad_err);
    if (info->cut_compressed)
        fprintf(f, "TRUNCATED gzip stream: read up to where it stops%s%s\n", info->compressed_err[0] ? ": " : "",
                info->compressed_err);
    if (s->first_ns <= s->last_ns)
        fprintf(f, "span %.3f ms (%.3f .. %.3f ms after t0)\n", (double)(s->last_ns - s->first_ns) / 1e6,
                (double)s->first_ns / 1e6, (double)s->last_ns / 1e6);
    if (!strcmp(h->mode, "windows"))
        fprintf(f, "capture: windows (%d ms every %d ms, %d replays per shape, at most %d ms; between: %s; API records %s): "
                   "%" PRId64 " windows, %.3f ms node-level; %" PRId64 " graph-level launch records\n",
                h->window_ms, h->period_ms, h->shape_replays, h->window_max_ms, h->between, h->records, s->windows,
                (double)s->window_ns / 1e6, s->graph_trace);
    else if (!strcmp(h->mode, "lite")) {
        const ptrace_lite *l = &info->end.lite;
        fprintf(f, "capture: lite (no CUPTI in the process; runtime calls interposed, graph launches timed by CUDA events; "
                   "clock %s): %" PRId64 " graph_trace events\n", h->clock[0] ? h->clock : "?", s->graph_trace);
        if (info->has_end && l->on) {
            fprintf(f, "lite: graph launches %" PRId64 ", timed %" PRId64 ", not timed: capturing %" PRId64 ", failed %"
                       PRId64 ", no event %" PRId64 "; pending at the end %" PRId64 ", lost %" PRId64 "\n",
                    l->graph_launches, l->graph_timed, l->graph_capturing, l->graph_failed, l->graph_no_event,
                    l->graph_pending, l->graph_lost);
            fprintf(f, "lite: blocking calls %" PRId64 " (copies %" PRId64 ", syncs %" PRId64 "), kernel launches counted %"
                       PRId64 ", dropped %" PRId64 "; %" PRId64 " clock anchors (half-width <= %.3f us), graph start error <= "
                       "%.3f us, GPU clock rate within %.1f ppm\n",
                    l->blocking_calls, l->memcpy_calls, l->sync_calls, l->kernel_launches, l->dropped, l->anchors,
                    l->anchor_err_max_us, l->err_max_us, l->drift_max_ppm);
            if (l->calib_ok)
                fprintf(f, "calibration (lite): %.3f us per graph launch (event pair; an empty graph %.3f -> %.3f us), "
                           "%.3f us per interposed call\n", l->graph_timing_us, l->graph_launch_real_us,
                        l->graph_launch_lite_us, l->call_us);
            else fprintf(f, "calibration (lite): none (%s)\n", l->calib_why);
            if (l->probe_replays > 0) {
                fprintf(f, "node probe: %d replays an executable; %" PRId64 " executables instrumented (%.1f ms), %" PRId64
                           " not%s%s%s; %" PRId64 " probed replays launched, %" PRId64 " written, %" PRId64 " lost, %" PRId64
                           " executables changed by the program (not probed after); ",
                        l->probe_replays, l->probe_execs, l->probe_instrument_ms, l->probe_skipped,
                        l->probe_skip_why[0] ? " (first: " : "", l->probe_skip_why, l->probe_skip_why[0] ? ")" : "",
                        l->probe_launched, l->probe_written, l->probe_lost, l->probe_stale);
                if (l->probe_event_us >= 0) fprintf(f, "an event node costs %.3f us a node\n", l->probe_event_us);
                else fprintf(f, "event node cost not measured (%s)\n", l->probe_calib_why[0] ? l->probe_calib_why : "no calibration");
            }
            if (l->eager_instances > 0)
                fprintf(f, "eager probe: %d instances a phase shape; %" PRId64 " shapes, %" PRId64 " instances probed, %"
                           PRId64 " written, %" PRId64 " lost, %" PRId64 " released by the watchdog, %" PRId64 " not%s%s%s; %"
                           PRId64 " passed over while another was held\n",
                        l->eager_instances, l->eager_keys, l->eager_probed, l->eager_written, l->eager_lost,
                        l->eager_watchdog, l->eager_skipped, l->eager_skip_why[0] ? " (first: " : "", l->eager_skip_why,
                        l->eager_skip_why[0] ? ")" : "", l->eager_busy);
            if (l->static_runtime)
                fprintf(f, "WARNING: NVTX ranges but no CUDA runtime call through a shared libcudart: the program seems to "
                           "link the runtime statically; lite mode cannot see it (build with -cudart shared, or --mode always)\n");
            if (l->capture_range[0]) {
                fprintf(f, "capture range %s: %" PRId64 " range%s opened, %.3f ms recorded\n", l->capture_range,
                        l->range_opens, l->range_opens == 1 ? "" : "s", (double)l->range_ns / 1e6);
                if (!l->range_opens)
                    fprintf(f, "WARNING: --capture-range %s but the program never called cudaProfilerStart: nothing "
                               "was recorded (torch.cuda.profiler.start() around the part to record, or no "
                               "--capture-range)\n", l->capture_range);
            }
        }
    }
    else fprintf(f, "capture: always (every record all the time; API records %s)\n", h->records);
    if (info->complete && (info->end.attaches || info->end.detaches))
        fprintf(f, "CUPTI detached %" PRId64 " times between windows (%.3f ms on the program's threads), attached again %"
                   PRId64 " times (%.3f ms on specprof's thread)\n", info->end.detaches, (double)info->end.detach_ns / 1e6,
                info->end.attaches, (double)info->end.attach_ns / 1e6);
    if (!strcmp(h->mode, "lite")) {}
    else if (h->calib.ok)
        fprintf(f, "calibration: CUPTI adds %.3f us per kernel launch, %.3f us per graph launch + %.3f us per node inside "
                   "windows%s", h->calib.kernel_launch_us, h->calib.graph_launch_us, h->calib.graph_node_us,
                h->calib.has_between ? "" : "\n");
    if (h->calib.ok && h->calib.has_between)
        fprintf(f, ", %.3f us per graph launch between them\n", h->calib.graph_between_us);
    if (h->calib.ok && h->calib.launch_clean_us > 0)
        fprintf(f, "calibration: a kernel launch costs %.3f us here, %.3f us in a process without CUPTI: %.3f us of CUPTI\n",
                h->calib.launch_on_us, h->calib.launch_clean_us, h->calib.launch_on_us - h->calib.launch_clean_us);
    if (h->calib.ok && h->calib.launch_on_swept_us > 0) {
        fprintf(f, "calibration: with %.0f us of host work between launches: %.3f us a launch here, %.3f with "
                   "records off", h->calib.sweep_gap_us, h->calib.launch_on_swept_us, h->calib.launch_off_swept_us);
        if (h->calib.launch_clean_swept_us > 0)
            fprintf(f, ", %.3f without CUPTI: %.3f us of CUPTI\n", h->calib.launch_clean_swept_us,
                    h->calib.launch_on_swept_us - h->calib.launch_clean_swept_us);
        else
            fprintf(f, ": %.3f us of CUPTI\n", h->calib.launch_on_swept_us - h->calib.launch_off_swept_us);
    }
    if (!h->calib.ok && strcmp(h->mode, "lite")) fprintf(f, "calibration: none (%s)\n", h->calib.why);
    if (info->complete && info->end.records > 0 && info->end.bytes > 0)
        fprintf(f, "file: %" PRId64 " bytes on disk (%s) for %" PRId64 " records: %.1f bytes per record (%.1f uncompressed)\n",
                info->end.bytes, h->compressed ? "gzip" : "plain", info->end.records,
                (double)info->end.bytes / (double)info->end.records, (double)info->end.bytes_in / (double)info->end.records);
    fprintf(f, "kernels %" PRId64 " (in graphs %" PRId64 ", nccl %" PRId64 ", with nvtx %" PRId64
               ", with phase %" PRId64 ")\n", s->kernels, s->kernels_in_graphs, s->kernels_nccl,
            s->kernels_with_nvtx, s->kernels_with_phase);
    fprintf(f, "memcpy %" PRId64 ", memset %" PRId64 " (nccl %" PRId64 "), api %" PRId64 ", graph launches %zu, "
               "graph instantiations %" PRId64 "\n", s->memcpys, s->memsets, s->mem_nccl, s->api,
            s->n_launches, s->graph_execs);
    fprintf(f, "nvtx ranges %" PRId64 ", nccl calls %" PRId64 " (captured %" PRId64 ")\n", s->nvtx_ranges,
            s->nccl_calls, s->nccl_calls_captured);
    sum_print_items(f, "kernels per graph", s->graphs, s->n_graphs);
    sum_print_items(f, "kernels per phase", s->phases, s->n_phases);
    sum_print_items(f, "nvtx ranges", s->ranges, s->n_ranges);
    sum_print_items(f, "nccl GPU records (op dtype bytes)", s->nccl, s->n_nccl);
    if (s->cycle_period) {
        fprintf(f, "graph launch cycle: period %d, graph_exec ids:", s->cycle_period);
        for (int i = 0; i < s->cycle_period; i++) fprintf(f, " %u", s->cycle[i]);
        fprintf(f, "\n");
    } else if (s->n_launches) fprintf(f, "graph launch cycle: none found in %zu launches\n", s->n_launches);
    if (s->table_overflow) fprintf(f, "note: %" PRId64 " items beyond the summary tables\n", s->table_overflow);
}

static void sum_json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') { fputc('\\', f); fputc(c, f); }
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

static void sum_json_items(FILE *f, const char *key, const ptrace_sum_item *t, int n) {
    fprintf(f, ",\"%s\":[", key);
    for (int i = 0; i < n; i++) {
        fprintf(f, "%s{\"name\":", i ? "," : "");
        sum_json_str(f, t[i].name);
        fprintf(f, ",\"n\":%" PRId64 ",\"total_ns\":%" PRId64 "}", t[i].n, t[i].total_ns);
    }
    fprintf(f, "]");
}

void ptrace_sum_print_json(FILE *f, const ptrace_sum *s, const ptrace_info *info, const char *label) {
    fprintf(f, "{\"file\":");
    sum_json_str(f, label);
    fprintf(f, ",\"rank\":%d,\"device\":", info->header.rank);
    sum_json_str(f, info->header.device.name);
    fprintf(f, ",\"complete\":%s,\"merged\":%s,\"cut_last_line\":%s,\"bad_lines\":%zu,\"events\":%zu",
            info->complete ? "true" : "false", info->merged ? "true" : "false",
            info->cut_last_line ? "true" : "false", info->bad_lines, info->events);
    fprintf(f, ",\"has_end\":%s,\"records\":%" PRId64 ",\"records_promised\":%" PRId64,
            info->has_end ? "true" : "false", info->records_seen, info->records_promised);
    fprintf(f, ",\"end_reason\":");
    sum_json_str(f, info->has_end ? info->end.reason : "");
    fprintf(f, ",\"dropped_records\":%" PRId64, info->has_end ? info->end.dropped_records : -1);
    fprintf(f, ",\"kernels\":%" PRId64 ",\"kernels_in_graphs\":%" PRId64 ",\"kernels_nccl\":%" PRId64
               ",\"kernels_with_nvtx\":%" PRId64 ",\"kernels_with_phase\":%" PRId64 ",\"memcpy\":%" PRId64
               ",\"memset\":%" PRId64 ",\"mem_nccl\":%" PRId64 ",\"api\":%" PRId64 ",\"graph_launches\":%zu"
               ",\"graph_execs\":%" PRId64 ",\"nvtx_ranges\":%" PRId64 ",\"nccl_calls\":%" PRId64
               ",\"nccl_calls_captured\":%" PRId64,
            s->kernels, s->kernels_in_graphs, s->kernels_nccl, s->kernels_with_nvtx, s->kernels_with_phase,
            s->memcpys, s->memsets, s->mem_nccl, s->api, s->n_launches, s->graph_execs, s->nvtx_ranges,
            s->nccl_calls, s->nccl_calls_captured);
    const ptrace_header *h = &info->header;
    const ptrace_calib *k = &h->calib;
    fprintf(f, ",\"mode\":");
    sum_json_str(f, h->mode);
    fprintf(f, ",\"between\":");
    sum_json_str(f, h->between);
    fprintf(f, ",\"windows\":%" PRId64 ",\"window_ns\":%" PRId64 ",\"graph_trace\":%" PRId64
               ",\"records\":%" PRId64 ",\"bytes\":%" PRId64 ",\"bytes_in\":%" PRId64 ",\"end_ns\":%" PRId64
               ",\"t0_ns\":%" PRId64 ",\"cut_compressed\":%s,\"attaches\":%" PRId64 ",\"attach_ns\":%" PRId64
               ",\"detaches\":%" PRId64 ",\"detach_ns\":%" PRId64,
            s->windows, s->window_ns, s->graph_trace, info->complete ? info->end.records : -1,
            info->complete ? info->end.bytes : -1, info->complete ? info->end.bytes_in : -1,
            info->complete ? info->end.end_ns : -1, h->t0_ns, info->cut_compressed ? "true" : "false",
            info->end.attaches, info->end.attach_ns, info->end.detaches, info->end.detach_ns);
    fprintf(f, ",\"calibration\":{\"ok\":%s,\"kernel_launch_us\":%.3f,\"graph_launch_us\":%.3f,\"graph_node_us\":%.3f"
               ",\"graph_between_us\":%.3f,\"launch_off_us\":%.3f,\"launch_on_us\":%.3f,\"graphn_off_us\":%.3f"
               ",\"graphn_on_us\":%.3f,\"graphn_between_us\":%.3f,\"switch_on_us\":%.1f,\"switch_off_us\":%.1f"
               ",\"launch_after_us\":%.3f,\"graphn_after_us\":%.3f,\"why\":",
            k->ok ? "true" : "false", k->kernel_launch_us, k->graph_launch_us, k->graph_node_us, k->graph_between_us,
            k->launch_off_us, k->launch_on_us, k->graphn_off_us, k->graphn_on_us, k->graphn_between_us,
            k->switch_on_us, k->switch_off_us, k->launch_after_us, k->graphn_after_us);
    sum_json_str(f, k->why);
    fprintf(f, "}");
    if (info->has_end && info->end.lite.on) {
        const ptrace_lite *l = &info->end.lite;
        fprintf(f, ",\"lite\":{\"graph_launches\":%" PRId64 ",\"timed\":%" PRId64 ",\"capturing\":%" PRId64
                   ",\"failed\":%" PRId64 ",\"no_event\":%" PRId64 ",\"pending\":%" PRId64 ",\"lost\":%" PRId64
                   ",\"blocking_calls\":%" PRId64 ",\"memcpy_calls\":%" PRId64 ",\"sync_calls\":%" PRId64
                   ",\"kernel_launches\":%" PRId64 ",\"err_max_us\":%.3f,\"static_runtime\":%s,\"calib_ok\":%s"
                   ",\"graph_timing_us\":%.3f,\"call_us\":%.3f}",
                l->graph_launches, l->graph_timed, l->graph_capturing, l->graph_failed, l->graph_no_event, l->graph_pending,
                l->graph_lost, l->blocking_calls, l->memcpy_calls, l->sync_calls, l->kernel_launches, l->err_max_us,
                l->static_runtime ? "true" : "false", l->calib_ok ? "true" : "false", l->graph_timing_us, l->call_us);
    }
    sum_json_items(f, "graphs", s->graphs, s->n_graphs);
    sum_json_items(f, "phases", s->phases, s->n_phases);
    sum_json_items(f, "ranges", s->ranges, s->n_ranges);
    sum_json_items(f, "nccl", s->nccl, s->n_nccl);
    fprintf(f, ",\"cycle\":[");
    for (int i = 0; i < s->cycle_period; i++) fprintf(f, "%s%u", i ? "," : "", s->cycle[i]);
    fprintf(f, "]}\n");
}
