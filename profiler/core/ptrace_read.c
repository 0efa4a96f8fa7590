/* ptrace_read.c: line-oriented reader of specprof traces (see ptrace_read.h).
 * One JSON object per line; the reader never trusts the file to be complete: a process
 * killed with SIGKILL leaves whole lines and at most one cut line at the end. */
#include "ptrace_read.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int64_t pr_us_to_ns(const pjson *v) {
    if (!v || v->type != PJSON_NUM) return 0;
    return v->milli;   /* exact for up to 3 decimals (pjson.h) */
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

/* The longest line a specprof trace can hold: a kernel name is cut at 4096 bytes
 * (ptrace_write.c), its args are a few hundred; anything near this is not a trace. */
#define PR_MAX_LINE_BYTES ((size_t)16 << 20)

static int pr_scan(psrc *src, const char *label, pjson_arena *keep, ptrace_scan_fn fn,
                   void *user, ptrace_info *info, char *err, size_t errlen) {
    memset(info, 0, sizeof *info);
    pjson_arena *scratch = keep ? NULL : pjson_arena_create();
    pjson_arena *a = keep ? keep : scratch;
    psrc_lines L;
    if (!a || psrc_lines_init(&L, src, PR_MAX_LINE_BYTES)) {
        pjson_arena_destroy(scratch);
        snprintf(err, errlen, "%s: out of memory", label);
        return -1;
    }
    int rc = 0, started = 0, pending_bad = 0, any_text = 0;
    size_t line_no = 0, pending_line = 0;
    char perr[128], pending_err[160] = "";
    const char *s0;
    size_t n0;
    int got;
    while ((got = psrc_lines_next(&L, &s0, &n0, err, errlen)) == 1) {
        const char *s = s0, *e = s0 + n0;
        line_no++;
        info->lines = line_no;
        while (s < e && (*s == ' ' || *s == '\t')) s++;
        const char *t = e;
        while (t > s && (t[-1] == ' ' || t[-1] == '\t' || t[-1] == '\r')) t--;
        if (t == s) continue;
        any_text = 1;
        /* a line that did not parse is the cut last line unless more text follows */
        if (pending_bad) {
            if (!info->bad_lines) {
                info->first_bad_line = pending_line;
                snprintf(info->first_bad_err, sizeof info->first_bad_err, "%s", pending_err);
            }
            info->bad_lines++;
            pending_bad = 0;
        }
        if (t - s == 1 && (*s == '[' || *s == ']')) { started = 1; continue; }
        if (!started && *s == '[') { s++; started = 1; }   /* "[{...}," on one line */
        if (!keep) pjson_arena_reset(a);
        pjson *ev = NULL;
        if (pjson_parse(a, s, (size_t)(t - s), 1, &ev, perr, sizeof perr) || ev->type != PJSON_OBJ) {
            pending_bad = 1;
            pending_line = line_no;
            snprintf(pending_err, sizeof pending_err, "%s", ev && ev->type != PJSON_OBJ ? "not an object" : perr);
            continue;
        }
        ptrace_event x;
        const char *ph = pjson_get_str(ev, "ph", "");
        x.ph = ph[0];
        x.cat = pjson_get_str(ev, "cat", "");
        x.name = pjson_get_str(ev, "name", "");
        x.pid = pjson_get_int(ev, "pid", 0);
        x.tid = pjson_get_int(ev, "tid", 0);
        x.ts_ns = pr_us_to_ns(pjson_get(ev, "ts"));
        x.dur_ns = pr_us_to_ns(pjson_get(ev, "dur"));
        x.args = pjson_get(ev, "args");
        x.line = line_no;
        if (!info->has_header && !info->merged) {
            if (x.ph == 'M' && !strcmp(x.name, "specprof_header")) {
                pr_header(x.args, &info->header);
                info->has_header = 1;
                if (info->header.format_version != PTRACE_FORMAT_VERSION) {
                    snprintf(err, errlen, "%s: line %zu: field format_version: value %d: this reader knows version %d",
                             label, line_no, info->header.format_version, PTRACE_FORMAT_VERSION);
                    rc = -1;
                    break;
                }
                continue;
            }
            if (x.ph == 'M' && !strcmp(x.name, "specprof_merged")) { info->merged = 1; continue; }
            snprintf(err, errlen, "%s: line %zu: not a specprof trace: first event is \"%s\", expected specprof_header",
                     label, line_no, x.name);
            rc = -1;
            break;
        }
        if (x.ph == 'M' && !strcmp(x.name, "specprof_end")) {
            pr_end(x.args, info->header.t0_ns, x.ts_ns, &info->end);
            info->complete = 1;
            continue;
        }
        if (info->merged && !info->has_header && x.ph == 'M' && !strcmp(x.name, "specprof_rank_header")) {
            pr_header(x.args, &info->header);
            info->has_header = 1;
        }
        info->events++;
        if (fn && fn(user, &x, info)) break;
    }
    if (got < 0) rc = -1;
    if (!rc && pending_bad) info->cut_last_line = 1;
    if (!rc && !info->has_header && !info->merged) {
        if (info->bad_lines || info->cut_last_line)
            snprintf(err, errlen, "%s: not a specprof trace: no line is a JSON event (line %zu: %s)", label,
                     info->bad_lines ? info->first_bad_line : pending_line,
                     info->bad_lines ? info->first_bad_err : pending_err);
        else
            snprintf(err, errlen, "%s: not a specprof trace: no specprof_header line%s", label,
                     any_text ? " (empty or cut off before its header was written)" : " (empty file)");
        rc = -1;
    }
    psrc_lines_free(&L);
    pjson_arena_destroy(scratch);
    return rc;
}

int ptrace_scan_buf(const char *text, size_t len, const char *label, ptrace_scan_fn fn,
                    void *user, ptrace_info *info, char *err, size_t errlen) {
    psrc_mem m;
    psrc_mem_init(&m, text, len, label);
    return pr_scan(&m.base, label, NULL, fn, user, info, err, errlen);
}

int ptrace_scan_src(psrc *src, ptrace_scan_fn fn, void *user, ptrace_info *info,
                    char *err, size_t errlen) {
    return pr_scan(src, src->label, NULL, fn, user, info, err, errlen);
}

int ptrace_probe(const char *head, size_t len) {
    static const char *names[] = {"\"specprof_header\"", "\"specprof_merged\""};
    const char *e = memchr(head, '\n', len);
    const char *first = head;
    /* the first event: line 1 is "[" then the event, or "[{...}," on one line */
    size_t i = 0;
    while (i < len && (head[i] == ' ' || head[i] == '\t' || head[i] == '\r' || head[i] == '\n')) i++;
    if (i >= len || head[i] != '[') return 0;
    first = head + i;
    e = memchr(first, '\n', len - i);
    if (e && (size_t)(e - first) <= 2) {     /* "[" alone: the event is the next line */
        const char *f2 = e + 1, *e2 = memchr(f2, '\n', len - (size_t)(f2 - head));
        first = f2;
        e = e2;
    }
    size_t n = e ? (size_t)(e - first) : len - (size_t)(first - head);
    for (size_t k = 0; k < 2; k++)
        if (memmem(first, n, names[k], strlen(names[k]))) return 1;
    return 0;
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
    psrc_mem m;
    psrc_mem_init(&m, text, len, label);
    if (pr_scan(&m.base, label, f->arena, pr_keep, f, &f->info, err, errlen)) {
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
    FILE *fp = fopen(path, "rb");
    if (!fp) { snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno)); return -1; }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        size_t r = fread(buf + n, 1, cap - n, fp);
        n += r;
        if (n < cap) break;
        char *nb = realloc(buf, cap * 2 + 1);
        if (!nb) { free(buf); buf = NULL; break; }
        buf = nb; cap *= 2;
    }
    int bad = ferror(fp);
    fclose(fp);
    if (!buf || bad) {
        free(buf);
        snprintf(err, errlen, "%s: %s", path, bad ? "read error" : "out of memory");
        return -1;
    }
    buf[n] = 0;
    *text = buf; *len = n;
    return 0;
}

int ptrace_read_file(const char *path, ptrace_file *f, char *err, size_t errlen) {
    char *text; size_t len;
    memset(f, 0, sizeof *f);
    if (ptrace_slurp(path, &text, &len, err, errlen)) return -1;
    int rc = ptrace_read_buf(text, len, path, f, err, errlen);
    free(text);
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
