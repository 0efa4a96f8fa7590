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

/* An event's ts or dur (us, 3 decimals) as ns, if within kind's range (bounds.h): 0, or -1
 * with the message in why. Absent or not a number: 0 ns. */
static int pr_us_to_ns(const pjson *v, const bnd_kind *kind, const char *field, int64_t *ns,
                       char *why, size_t whylen) {
    *ns = 0;
    if (!v || v->type != PJSON_NUM) return 0;
    if (v->is_int ? bnd_check_i64(kind, v->i, "", field, why, whylen)
                  : bnd_check(kind, v->num, "", field, why, whylen))
        return -1;
    *ns = v->is_int ? v->i * 1000 : (int64_t)llround(v->num * 1000.0);
    return 0;
}

static void pr_copy(char *dst, size_t cap, const char *src) {
    snprintf(dst, cap, "%s", src ? src : "");
}

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
}

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
}

/* The scan of one input, line by line: from memory (ptrace_scan_buf) or from a stream
 * (ptrace_scan_stream, memory bounded by the longest line). A line that does not parse is
 * held back until the next non-blank line shows it was not the last (a last line cut
 * mid-write is dropped and reported, not counted as bad). */
typedef struct {
    const char *label;
    pjson_arena *keep, *a;
    ptrace_scan_fn fn;
    void *user;
    ptrace_info *info;
    char *err;
    size_t errlen;
    int started, stop, rc;
    size_t line_no;
    int pend;                 /* a line that did not parse, not yet known to be the last */
    size_t pend_line;
    char pend_err[128];
} pr_state;

static void pr_bad(pr_state *S, size_t line, const char *why) {
    ptrace_info *info = S->info;
    if (!info->bad_lines) {
        info->first_bad_line = line;
        snprintf(info->first_bad_err, sizeof info->first_bad_err, "%.*s",
                 (int)sizeof info->first_bad_err - 1, why);
    }
    info->bad_lines++;
}

/* The header's t0_ns within bounds.h: 0, or -1 with err (the file is refused: every time
 * in it is relative to t0). */
static int pr_check_t0(pr_state *S, const pjson *args) {
    const pjson *t0 = pjson_get(args, "t0_ns");
    char where[200];
    snprintf(where, sizeof where, "%s: line %zu", S->label, S->line_no);
    if (t0 && t0->type == PJSON_NUM && !t0->is_int) {
        snprintf(S->err, S->errlen, "%s: field t0_ns: value %.10g: not an integer (ns)", where, t0->num);
        return -1;
    }
    return bnd_check_i64(&bnd_clock_ns, pjson_get_int(args, "t0_ns", 0), where, "t0_ns", S->err, S->errlen);
}

/* The end record's counts and end_ns within bounds.h: 0, or -1 with why. */
static int pr_check_end(const pjson *a, char *why, size_t whylen) {
    static const char *const counts[] = { "dropped_records", "dropped_host_events", "records", "nccl_calls",
                                          "nccl_graph_nodes", "nccl_matched", "nvtx_ranges",
                                          "graph_nodes_created", "graph_nodes_cloned" };
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
        if (bnd_check_i64(&bnd_records, pjson_get_int(a, counts[i], 0), "", counts[i], why, whylen)) return -1;
    if (pjson_get(a, "end_ns") && bnd_check_i64(&bnd_clock_ns, pjson_get_int(a, "end_ns", 0), "", "end_ns", why, whylen))
        return -1;
    return 0;
}

/* One line [s, t) of the input (without its newline). Sets S->stop to end the scan. */
static void pr_line(pr_state *S, const char *s, const char *t) {
    ptrace_info *info = S->info;
    S->line_no++;
    info->lines = S->line_no;
    while (s < t && (*s == ' ' || *s == '\t')) s++;
    while (t > s && (t[-1] == ' ' || t[-1] == '\t' || t[-1] == '\r')) t--;
    if (t == s) return;
    if (S->pend) { pr_bad(S, S->pend_line, S->pend_err); S->pend = 0; }   /* it was not the last */
    if (t - s == 1 && (*s == '[' || *s == ']')) { S->started = 1; return; }
    if (!S->started && *s == '[') { s++; S->started = 1; }   /* "[{...}," on one line */
    if (!S->keep) pjson_arena_reset(S->a);
    pjson *ev = NULL;
    char perr[128];
    if (pjson_parse(S->a, s, (size_t)(t - s), 1, &ev, perr, sizeof perr) || ev->type != PJSON_OBJ) {
        S->pend = 1;
        S->pend_line = S->line_no;
        snprintf(S->pend_err, sizeof S->pend_err, "%s", ev && ev->type != PJSON_OBJ ? "not an object" : perr);
        return;
    }
    ptrace_event x;
    char why[200];
    const char *ph = pjson_get_str(ev, "ph", "");
    x.ph = ph[0];
    x.cat = pjson_get_str(ev, "cat", "");
    x.name = pjson_get_str(ev, "name", "");
    x.pid = pjson_get_int(ev, "pid", 0);
    x.tid = pjson_get_int(ev, "tid", 0);
    x.args = pjson_get(ev, "args");
    x.line = S->line_no;
    /* times within bounds.h, so that t0 + ts + dur cannot overflow anywhere downstream */
    if (pr_us_to_ns(pjson_get(ev, "ts"), &bnd_ts_us, "ts", &x.ts_ns, why, sizeof why) ||
        pr_us_to_ns(pjson_get(ev, "dur"), &bnd_dur_us, "dur", &x.dur_ns, why, sizeof why)) {
        pr_bad(S, S->line_no, why + 2);   /* why starts ": field ..." (no file) */
        return;
    }
    if (!info->has_header && !info->merged) {
        if (x.ph == 'M' && !strcmp(x.name, "specprof_header")) {
            if (pr_check_t0(S, x.args)) { S->rc = -1; S->stop = 1; return; }
            pr_header(x.args, &info->header);
            info->has_header = 1;
            if (info->header.format_version != PTRACE_FORMAT_VERSION) {
                snprintf(S->err, S->errlen, "%s: line %zu: field format_version: value %d: this reader knows version %d",
                         S->label, S->line_no, info->header.format_version, PTRACE_FORMAT_VERSION);
                S->rc = -1;
                S->stop = 1;
            }
            return;
        }
        if (x.ph == 'M' && !strcmp(x.name, "specprof_merged")) { info->merged = 1; return; }
        snprintf(S->err, S->errlen, "%s: line %zu: not a specprof trace: first event is \"%s\", expected specprof_header",
                 S->label, S->line_no, x.name);
        S->rc = -1;
        S->stop = 1;
        return;
    }
    if (x.ph == 'M' && !strcmp(x.name, "specprof_end")) {
        if (pr_check_end(x.args, why, sizeof why)) { pr_bad(S, S->line_no, why + 2); return; }
        pr_end(x.args, info->header.t0_ns, x.ts_ns, &info->end);
        info->has_end = 1;
        info->records_promised = pjson_get(x.args, "records") ? info->end.records : -1;
        return;
    }
    if (info->merged && !info->has_header && x.ph == 'M' && !strcmp(x.name, "specprof_rank_header")) {
        if (pr_check_t0(S, x.args)) { S->rc = -1; S->stop = 1; return; }
        pr_header(x.args, &info->header);
        info->has_header = 1;
    }
    info->events++;
    if (x.ph != 'M') info->records_seen++;
    if (S->fn && S->fn(S->user, &x, info)) S->stop = 1;
}

static void pr_begin(pr_state *S, const char *label, pjson_arena *keep, ptrace_scan_fn fn, void *user,
                     ptrace_info *info, char *err, size_t errlen) {
    memset(S, 0, sizeof *S);
    memset(info, 0, sizeof *info);
    info->records_promised = -1;
    S->label = label;
    S->keep = keep;
    S->a = keep ? keep : pjson_arena_create();
    S->fn = fn;
    S->user = user;
    S->info = info;
    S->err = err;
    S->errlen = errlen;
    if (!S->a) { snprintf(err, errlen, "%s: out of memory", label); S->rc = -1; S->stop = 1; }
}

static int pr_end_scan(pr_state *S, size_t bytes) {
    ptrace_info *info = S->info;
    if (S->pend) info->cut_last_line = 1;   /* only blank lines followed it */
    /* complete: the end record came, and it holds what it promises */
    info->complete = info->has_end && (info->records_promised < 0 || info->records_seen == info->records_promised);
    if (!S->rc && !info->has_header && !info->merged) {
        if (info->bad_lines)
            snprintf(S->err, S->errlen, "%s: not a specprof trace: no line is a JSON event (line %zu: %s)", S->label,
                     info->first_bad_line, info->first_bad_err);
        else if (info->cut_last_line)
            snprintf(S->err, S->errlen, "%s: not a specprof trace: no line is a JSON event (line %zu: %s)", S->label,
                     S->pend_line, S->pend_err);
        else
            snprintf(S->err, S->errlen, "%s: not a specprof trace: no specprof_header line%s", S->label,
                     bytes ? " (empty or cut off before its header was written)" : " (empty file)");
        S->rc = -1;
    }
    if (!S->keep) pjson_arena_destroy(S->a);
    return S->rc;
}

static int pr_scan(const char *text, size_t len, const char *label, pjson_arena *keep,
                   ptrace_scan_fn fn, void *user, ptrace_info *info, char *err, size_t errlen) {
    pr_state S;
    pr_begin(&S, label, keep, fn, user, info, err, errlen);
    const char *p = text, *end = text + len;
    while (p < end && !S.stop) {
        const char *e = memchr(p, '\n', (size_t)(end - p));
        if (!e) e = end;
        pr_line(&S, p, e);
        p = e < end ? e + 1 : end;
    }
    if (S.stop) S.pend = 0;   /* stopped early (by the callback or an error): nothing is "last" */
    return pr_end_scan(&S, len);
}

int ptrace_scan_buf(const char *text, size_t len, const char *label, ptrace_scan_fn fn,
                    void *user, ptrace_info *info, char *err, size_t errlen) {
    return pr_scan(text, len, label, NULL, fn, user, info, err, errlen);
}

/* Chunks of the stream go into buf (64 KiB, grown while a line needs more); a line may
 * span chunks, never more than BND_TRACE_LINE_BYTES. */
#define PR_CHUNK_BYTES ((size_t)1 << 20)

static int pr_scan_fp(FILE *fp, const char *label, pjson_arena *keep, ptrace_scan_fn fn, void *user,
                      ptrace_info *info, char *err, size_t errlen) {
    pr_state S;
    pr_begin(&S, label, keep, fn, user, info, err, errlen);
    /* the buffer grows to BND_TRACE_LINE_BYTES + a chunk only when a line needs it */
    size_t cap = (size_t)64 << 10, cap_max = (size_t)BND_TRACE_LINE_BYTES + PR_CHUNK_BYTES;
    char *buf = S.stop ? NULL : malloc(cap);
    size_t beg = 0, end = 0;
    long long total = 0;
    int eof = 0;
    if (!buf && !S.stop) { snprintf(err, errlen, "%s: out of memory", label); S.rc = -1; S.stop = 1; }
    while (!S.stop) {
        char *nl = memchr(buf + beg, '\n', end - beg);
        if (nl) {
            pr_line(&S, buf + beg, nl);
            beg = (size_t)(nl - buf) + 1;
            continue;
        }
        if (end - beg > (size_t)BND_TRACE_LINE_BYTES) {
            snprintf(err, errlen, "%s: line %zu: longer than %ld bytes: not a specprof trace (a binary file, "
                     "/dev/zero?)", label, S.line_no + 1, (long)BND_TRACE_LINE_BYTES);
            S.rc = -1;
            S.stop = 1;
            S.pend = 0;
            break;
        }
        if (eof) {
            if (end > beg) pr_line(&S, buf + beg, buf + end);   /* the last line, without newline */
            break;
        }
        if (beg > 0) { memmove(buf, buf + beg, end - beg); end -= beg; beg = 0; }
        if (end == cap && cap < cap_max) {
            size_t nc = 2 * cap < cap_max ? 2 * cap : cap_max;
            char *nb = realloc(buf, nc);
            if (!nb) { snprintf(err, errlen, "%s: out of memory", label); S.rc = -1; S.stop = 1; S.pend = 0; break; }
            buf = nb;
            cap = nc;
        }
        size_t r = fread(buf + end, 1, cap - end, fp);
        end += r;
        total += (long long)r;
        if (total > BND_TRACE_FILE_BYTES) {
            snprintf(err, errlen, "%s: larger than %lld bytes: not a specprof trace (bounds.h)", label,
                     (long long)BND_TRACE_FILE_BYTES);
            S.rc = -1;
            S.stop = 1;
            S.pend = 0;
            break;
        }
        if (r == 0) {
            if (ferror(fp)) {
                snprintf(err, errlen, "%s: read error: %s", label, strerror(errno));
                S.rc = -1;
                S.stop = 1;
                S.pend = 0;
                break;
            }
            eof = 1;
        }
    }
    free(buf);
    if (S.stop && S.rc == 0) S.pend = 0;
    return pr_end_scan(&S, (size_t)total);
}

int ptrace_scan_stream(FILE *fp, const char *label, ptrace_scan_fn fn, void *user,
                       ptrace_info *info, char *err, size_t errlen) {
    return pr_scan_fp(fp, label, NULL, fn, user, info, err, errlen);
}

int ptrace_scan_file(const char *path, ptrace_scan_fn fn, void *user, ptrace_info *info,
                     char *err, size_t errlen) {
    memset(info, 0, sizeof *info);
    FILE *fp = fopen(path, "rb");
    if (!fp) { snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno)); return -1; }
    int rc = pr_scan_fp(fp, path, NULL, fn, user, info, err, errlen);
    fclose(fp);
    return rc;
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

static int pr_read(const char *text, size_t len, FILE *fp, const char *label, ptrace_file *f,
                   char *err, size_t errlen) {
    memset(f, 0, sizeof *f);
    f->arena = pjson_arena_create();
    if (!f->arena) { snprintf(err, errlen, "%s: out of memory", label); return -1; }
    int rc = fp ? pr_scan_fp(fp, label, f->arena, pr_keep, f, &f->info, err, errlen)
                : pr_scan(text, len, label, f->arena, pr_keep, f, &f->info, err, errlen);
    if (rc) {
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

int ptrace_read_buf(const char *text, size_t len, const char *label, ptrace_file *f,
                    char *err, size_t errlen) {
    return pr_read(text, len, NULL, label, f, err, errlen);
}

int ptrace_slurp(const char *path, char **text, size_t *len, char *err, size_t errlen) {
    /* the whole file in memory: capped like every reader (bounds.h); the streaming
     * readers above are what a large trace should go through */
    return bnd_read_file(path, (long)BND_TRACE_FILE_BYTES, "a specprof trace", text, len, err, errlen);
}

int ptrace_read_file(const char *path, ptrace_file *f, char *err, size_t errlen) {
    memset(f, 0, sizeof *f);
    FILE *fp = fopen(path, "rb");
    if (!fp) { snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno)); return -1; }
    int rc = pr_read(NULL, 0, fp, path, f, err, errlen);
    fclose(fp);
    return rc;
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
