/* ptrace_merge.c: per-rank traces -> one merged trace (see ptrace_merge.h).
 * Two passes per file (headers first, to find the common t0), each read streaming
 * (plain or gzip): memory is a few MiB whatever the files' sizes. */
#include "ptrace_merge.h"
#include "ptrace_out.h"
#include "ptrace_read.h"
#include "ptrace_write.h"
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MERGE_MAX_FILES 4096
#define MERGE_LINE_BYTES (64 * 1024)

typedef struct {
    char name[256];
    ptrace_info info;
    int ok, pid;
    int64_t shift_ns;
    dev_t dev;                /* of the input, to refuse an output that is one */
    ino_t ino;
} merge_file;

typedef struct {
    ptrace_out *out;
    int pid;
    int64_t shift_ns;
    char *line;
    int failed;
    long long events, records;   /* lines written; of which not metadata (what records counts) */
} merge_ctx;

static int merge_name_ok(const char *n) {
    size_t len = strlen(n);
    if (strncmp(n, "specprof.rank", 13)) return 0;
    static const char *ends[] = { ".json", ".json.part", ".json.gz", ".json.gz.part" };
    for (size_t i = 0; i < sizeof ends / sizeof ends[0]; i++) {
        size_t k = strlen(ends[i]);
        if (len > k && !strcmp(n + len - k, ends[i])) return 1;
    }
    return 0;
}

static int merge_cmp(const void *a, const void *b) {
    return strcmp(((const merge_file *)a)->name, ((const merge_file *)b)->name);
}

/* Writes ns as microseconds with 3 decimals. */
static int merge_us(char *buf, size_t cap, int64_t ns) {
    const char *sign = "";
    uint64_t a;
    if (ns < 0) { sign = "-"; a = (uint64_t)(-(ns + 1)) + 1; } else a = (uint64_t)ns;
    return snprintf(buf, cap, "%s%" PRIu64 ".%03u", sign, a / 1000, (unsigned)(a % 1000));
}

/* 1 when path names (is, or links to) input file i; its index in *which. */
static int merge_is_input(const char *path, const merge_file *files, int nf, int *which) {
    struct stat st;
    if (stat(path, &st)) return 0;
    for (int i = 0; i < nf; i++)
        if (files[i].dev == st.st_dev && files[i].ino == st.st_ino) { *which = i; return 1; }
    return 0;
}

/* The same capture twice (a copy, a link, a .part next to its finished file): one host,
 * process and t0. */
static int merge_same_capture(const ptrace_info *a, const ptrace_info *b) {
    return a->header.pid_os == b->header.pid_os && a->header.t0_ns == b->header.t0_ns &&
           !strcmp(a->header.host, b->header.host);
}

static int merge_emit(void *user, const ptrace_event *e, const ptrace_info *info) {
    (void)info;
    merge_ctx *c = user;
    char ts[40], dur[40];
    merge_us(ts, sizeof ts, e->ts_ns + c->shift_ns);
    merge_us(dur, sizeof dur, e->dur_ns);
    /* name and cat go through pjson_write's escaping by building small values */
    pjson vname = { .type = PJSON_STR, .str = e->name }, vcat = { .type = PJSON_STR, .str = e->cat };
    char name[PTRACE_MAX_STR * 2 + 8], cat[64];
    if (pjson_write(&vname, name, sizeof name) < 0) snprintf(name, sizeof name, "\"?\"");
    if (pjson_write(&vcat, cat, sizeof cat) < 0) snprintf(cat, sizeof cat, "\"?\"");
    int n = snprintf(c->line, MERGE_LINE_BYTES, "{\"ph\":\"%c\",\"cat\":%s,\"name\":%s,\"pid\":%d,\"tid\":%" PRId64
                     ",\"ts\":%s", e->ph ? e->ph : 'X', cat, name, c->pid, e->tid, ts);
    if (e->ph == 'X') n += snprintf(c->line + n, MERGE_LINE_BYTES - (size_t)n, ",\"dur\":%s", dur);
    if (e->ph == 'i') n += snprintf(c->line + n, MERGE_LINE_BYTES - (size_t)n, ",\"s\":\"p\"");
    if (e->args) {
        n += snprintf(c->line + n, MERGE_LINE_BYTES - (size_t)n, ",\"args\":");
        int w = pjson_write(e->args, c->line + n, MERGE_LINE_BYTES - (size_t)n - 8);
        if (w < 0) w = snprintf(c->line + n, MERGE_LINE_BYTES - (size_t)n, "{}");
        n += w;
    }
    n += snprintf(c->line + n, MERGE_LINE_BYTES - (size_t)n, "},\n");
    if (ptrace_out_write(c->out, c->line, (size_t)n)) { c->failed = 1; return 1; }
    c->events++;
    c->records += e->ph != 'M';
    return 0;
}

int ptrace_merge_dir(const char *dir, const char *out_path, FILE *report,
                     ptrace_merge_result *res, char *err, size_t errlen) {
    memset(res, 0, sizeof *res);
    DIR *d = opendir(dir);
    if (!d) { snprintf(err, errlen, "%s: cannot open directory: %s", dir, strerror(errno)); return -1; }
    merge_file *files = calloc(MERGE_MAX_FILES, sizeof *files);
    char *line = malloc(MERGE_LINE_BYTES);
    int nf = 0, rc = -1;
    ptrace_out out = { .fd = -1 };
    if (!files || !line) { snprintf(err, errlen, "%s: out of memory", dir); closedir(d); goto done; }
    struct dirent *de;
    while ((de = readdir(d)) && nf < MERGE_MAX_FILES)
        if (merge_name_ok(de->d_name)) snprintf(files[nf++].name, sizeof files[0].name, "%s", de->d_name);
    closedir(d);
    qsort(files, (size_t)nf, sizeof *files, merge_cmp);
    int64_t t0 = INT64_MAX;
    char path[1400], perr[512];
    for (int i = 0; i < nf; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i].name);
        struct stat st;
        if (!stat(path, &st)) { files[i].dev = st.st_dev; files[i].ino = st.st_ino; }
        if (ptrace_scan_file(path, NULL, NULL, &files[i].info, perr, sizeof perr) || files[i].info.merged) {
            if (report && files[i].info.merged) fprintf(report, "skip %s/%s: a merged file (specprof merge output)\n", dir,
                                                        files[i].name);
            else if (report) fprintf(report, "skip %s\n", perr);
            res->skipped++;
        } else {
            files[i].ok = 1;
        }
    }
    /* a capture met twice is merged once (its events would count twice): the complete copy,
     * else the longer one */
    for (int i = 0; i < nf; i++)
        for (int j = 0; j < i && files[i].ok; j++) {
            if (!files[j].ok || !merge_same_capture(&files[i].info, &files[j].info)) continue;
            const ptrace_info *a = &files[i].info, *b = &files[j].info;
            int keep_i = a->complete != b->complete ? a->complete : a->events > b->events;
            int drop = keep_i ? j : i;
            files[drop].ok = 0;
            res->skipped++;
            if (report) fprintf(report, "skip %s: the same capture as %s (host %s, pid %" PRId64 ", t0_ns %" PRId64 ")\n",
                                files[drop].name, files[keep_i ? i : j].name, a->header.host, a->header.pid_os,
                                a->header.t0_ns);
        }
    for (int i = 0; i < nf; i++)
        if (files[i].ok && files[i].info.header.t0_ns < t0) t0 = files[i].info.header.t0_ns;
    int nok = 0;
    for (int i = 0; i < nf; i++) nok += files[i].ok;
    if (!nok) { snprintf(err, errlen, "%s: no specprof trace files (specprof.rank*.pid*.json[.gz][.part])", dir); goto done; }
    /* pid = rank; a rank seen twice (two processes without RANK on one device) gets 1000+i */
    for (int i = 0; i < nf; i++) {
        if (!files[i].ok) continue;
        files[i].pid = files[i].info.header.rank;
        for (int j = 0; j < i; j++)
            if (files[j].ok && files[j].pid == files[i].pid) {
                files[i].pid = 1000 + i;
                if (report) fprintf(report, "note: %s repeats rank %d: shown as pid %d\n", files[i].name,
                                    files[i].info.header.rank, files[i].pid);
                break;
            }
        files[i].shift_ns = files[i].info.header.t0_ns - t0;
    }
    /* the output (or its .part while written) must not be an input: written over while
     * read, the merge read its own output without end (a 59 GB file in 10 minutes) */
    {
        char part[1100];
        int w = -1;
        snprintf(part, sizeof part, "%s.part", out_path);
        struct stat st;
        if (!*out_path || (!stat(out_path, &st) && S_ISDIR(st.st_mode))) {   /* rename failed at the end, a .part left */
            snprintf(err, errlen, "-o \"%s\": %s; give a file name (e.g. %s/merged.json.gz)", out_path,
                     *out_path ? "a directory" : "empty", *out_path ? out_path : dir);
            goto done;
        }
        if (merge_is_input(out_path, files, nf, &w) || merge_is_input(part, files, nf, &w)) {
            snprintf(err, errlen, "-o %s: is (or is written through) the input %s/%s; choose an output "
                     "that is not a rank file", out_path, dir, files[w].name);
            goto done;
        }
    }
    if (ptrace_out_open_path(&out, out_path, err, errlen)) goto done;
    char *hdr = line;
    long long total_records = 0, dropped = 0;
    {
        /* the merged meta event: one entry per file */
        size_t n = 0;
        n += (size_t)snprintf(hdr + n, MERGE_LINE_BYTES - n,
                              "{\"ph\":\"M\",\"cat\":\"meta\",\"name\":\"specprof_merged\",\"pid\":0,\"tid\":0,\"ts\":0,"
                              "\"args\":{\"format_version\":%d,\"t0_ns\":%" PRId64 ",\"files\":[", PTRACE_FORMAT_VERSION, t0);
        int first = 1;
        for (int i = 0; i < nf && n < MERGE_LINE_BYTES - 512; i++) {
            if (!files[i].ok) continue;
            const ptrace_info *fi = &files[i].info;
            n += (size_t)snprintf(hdr + n, MERGE_LINE_BYTES - n,
                                  "%s{\"file\":\"%s\",\"rank\":%d,\"pid\":%d,\"pid_os\":%" PRId64 ",\"t0_ns\":%" PRId64
                                  ",\"shift_ns\":%" PRId64 ",\"events\":%zu,\"complete\":%s,\"cut_last_line\":%s}",
                                  first ? "" : ",", files[i].name, fi->header.rank, files[i].pid, fi->header.pid_os,
                                  fi->header.t0_ns, files[i].shift_ns, fi->events, fi->complete ? "true" : "false",
                                  fi->cut_last_line ? "true" : "false");
            first = 0;
        }
        n += (size_t)snprintf(hdr + n, MERGE_LINE_BYTES - n, "]}},\n");
        if (ptrace_out_write(&out, hdr, n)) { snprintf(err, errlen, "%s: write failed", out.path_part); goto done; }
    }
    for (int i = 0; i < nf; i++) {
        if (!files[i].ok) continue;
        snprintf(path, sizeof path, "%s/%s", dir, files[i].name);
        merge_ctx c = { &out, files[i].pid, files[i].shift_ns, line, 0, 0, 0 };
        ptrace_ctx pc = { files[i].pid, files[i].info.header.t0_ns };
        const ptrace_info *fi = &files[i].info;
        /* the rank's header, renamed so that the merged file has one specprof_header-free start */
        int n = ptrace_write_header(line, MERGE_LINE_BYTES, &pc, &fi->header);
        char *at = n > 0 ? strstr(line, "\"specprof_header\"") : NULL;
        if (at) {
            char rest[MERGE_LINE_BYTES / 2];
            snprintf(rest, sizeof rest, "%s", at + strlen("\"specprof_header\""));
            snprintf(at, MERGE_LINE_BYTES - (size_t)(at - line), "\"specprof_rank_header\"%s", rest);
            ptrace_out_write(&out, line, strlen(line));
        }
        char pname[96];
        snprintf(pname, sizeof pname, "rank %d (pid %" PRId64 ")%s", fi->header.rank, fi->header.pid_os,
                 fi->complete ? "" : " cut off");
        n = ptrace_write_process_name(line, MERGE_LINE_BYTES, &pc, pname);
        if (n > 0) ptrace_out_write(&out, line, (size_t)n);
        ptrace_info again;
        if (ptrace_scan_file(path, merge_emit, &c, &again, perr, sizeof perr) && report)
            fprintf(report, "skip %s (vanished or changed between passes)\n", perr);
        if (c.failed) { snprintf(err, errlen, "%s: write failed: %s", out.path_part, strerror(errno)); goto done; }
        if (fi->complete) {
            char ts[40];
            merge_us(ts, sizeof ts, fi->end.end_ns - fi->header.t0_ns + files[i].shift_ns);
            n = snprintf(line, MERGE_LINE_BYTES,
                         "{\"ph\":\"M\",\"cat\":\"meta\",\"name\":\"specprof_rank_end\",\"pid\":%d,\"tid\":0,\"ts\":%s,"
                         "\"args\":{\"dropped_records\":%" PRId64 ",\"records\":%" PRId64 ",\"reason\":\"%s\"}},\n",
                         files[i].pid, ts, fi->end.dropped_records, fi->end.records, fi->end.reason);
            ptrace_out_write(&out, line, (size_t)n);
            dropped += fi->end.dropped_records;
        } else {
            res->truncated++;
            if (report && fi->has_end)
                fprintf(report, "INCOMPLETE %s: %lld of the %lld records its end record promises, %zu events merged\n",
                        files[i].name, (long long)fi->records_seen, (long long)fi->records_promised, fi->events);
            else if (report)
                fprintf(report, "TRUNCATED %s: no specprof_end, %zu events merged%s\n", files[i].name,
                        fi->events, fi->cut_last_line ? ", last line cut mid-write" : "");
        }
        if (report) fprintf(report, "merged %s: rank %d as pid %d, shift %.3f us, %lld events\n", files[i].name,
                            fi->header.rank, files[i].pid, (double)files[i].shift_ns / 1e3, c.events);
        total_records += c.records;
        res->events += c.events;
        res->files++;
    }
    {
        ptrace_end e;
        memset(&e, 0, sizeof e);
        e.records = total_records;
        e.dropped_records = dropped;
        e.end_ns = t0;
        snprintf(e.reason, sizeof e.reason, "merged %d files, %d truncated", res->files, res->truncated);
        ptrace_ctx pc = { 0, t0 };
        int n = ptrace_write_end(line, MERGE_LINE_BYTES, &pc, &e);
        if (n < 0 || ptrace_out_write(&out, line, (size_t)n)) { snprintf(err, errlen, "%s: write failed", out.path_part); goto done; }
    }
    if (ptrace_out_finish(&out, err, errlen)) goto done;
    rc = 0;
done:
    if (rc && out.fd >= 0) ptrace_out_discard(&out);   /* nothing half-written at -o */
    free(files);
    free(line);
    return rc;
}
