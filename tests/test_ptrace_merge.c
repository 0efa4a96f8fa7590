/* test_ptrace_merge.c: `specprof merge` and `specprof check` logic (profiler/core/
 * ptrace_merge, ptrace_sum): two rank files with different t0 (one cut off by SIGKILL)
 * merge onto one clock with pid = rank; the summary counts and the graph-launch cycle. */
#include "check.h"
#include "ptrace_merge.h"
#include "ptrace_out.h"
#include "ptrace_read.h"
#include "ptrace_sum.h"
#include "ptrace_write.h"
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>

static char dir[256];

/* A rank file: 3 graph launches per iteration (exec ids 4,5,6) x iters, one kernel
 * each at +1000 ns; cut = leave it .part with half a line at the end. */
static void write_rank(int rank, int64_t t0, int iters, int cut) {
    ptrace_header h;
    memset(&h, 0, sizeof h);
    h.format_version = PTRACE_FORMAT_VERSION;
    h.rank = rank; h.world_size = 2; h.t0_ns = t0; h.pid_os = 100 + rank;
    snprintf(h.device.name, sizeof h.device.name, "GPU%d", rank);
    ptrace_ctx c = { rank, t0 };
    ptrace_out o;
    char err[256], line[4096];
    CHECK(ptrace_out_open(&o, dir, rank, 100 + rank, err, sizeof err) == 0, "%s", err);
    int n = ptrace_write_header(line, sizeof line, &c, &h);
    ptrace_out_write(&o, line, (size_t)n);
    uint32_t corr = 1;
    for (int it = 0; it < iters; it++)
        for (int g = 0; g < 3; g++, corr++) {
            int64_t t = t0 + (int64_t)(it * 3 + g) * 10000;
            ptrace_api a = { t, t + 500, "cudaGraphLaunch", corr, 311, 0, 7, (uint32_t)(4 + g), 0, 0, 0, NULL, 0, NULL};
            n = ptrace_write_api(line, sizeof line, &c, &a);
            ptrace_out_write(&o, line, (size_t)n);
            ptrace_api d = { t + 10, t + 400, "cuGraphLaunch", corr, 514, 1, 7, (uint32_t)(4 + g), 0, 0, 0, NULL, 0, NULL};
            n = ptrace_write_api(line, sizeof line, &c, &d);   /* same corr: counted once */
            ptrace_out_write(&o, line, (size_t)n);
            ptrace_kernel k;
            memset(&k, 0, sizeof k);
            k.start_ns = t + 1000; k.end_ns = t + 3000; k.name = g == 1 ? "gemm" : "ncclKernel";
            k.corr = corr; k.stream = 13; k.graph_id = (uint32_t)(1 + g); k.graph_node_id = 50 + (uint64_t)g;
            k.nvtx = g == 1 ? "verify bs=4" : ""; k.phase = g == 1 ? "verify" : "";
            if (g == 2) { k.has_nccl = 1; snprintf(k.nccl.op, sizeof k.nccl.op, "allreduce");
                          snprintf(k.nccl.dtype, sizeof k.nccl.dtype, "bfloat16"); k.nccl.bytes = 14336; k.nccl.captured = 1; }
            n = ptrace_write_kernel(line, sizeof line, &c, &k);
            ptrace_out_write(&o, line, (size_t)n);
        }
    if (cut) {
        ptrace_out_write(&o, "{\"ph\":\"X\",\"cat\":\"ker", 20);
        ptrace_out_abandon(&o);
        return;
    }
    ptrace_end e;
    memset(&e, 0, sizeof e);
    e.end_ns = t0 + 10000000; e.records = iters * 9; e.dropped_records = 3;
    snprintf(e.reason, sizeof e.reason, "exit");
    n = ptrace_write_end(line, sizeof line, &c, &e);
    ptrace_out_write(&o, line, (size_t)n);
    CHECK(ptrace_out_finish(&o, err, sizeof err) == 0, "%s", err);
}

static void ptrace_merge_aligns_ranks_and_reports_cut_files(void) {
    write_rank(0, 5000000, 4, 0);
    write_rank(1, 5000000 + 123456, 4, 1);   /* started 123.456 us later, killed */
    char out[400], err[512];
    snprintf(out, sizeof out, "%s/merged.json", dir);
    ptrace_merge_result r;
    FILE *rep = tmpfile();
    int rc = ptrace_merge_dir(dir, out, rep, &r, err, sizeof err);
    CHECK(rc == 0, "%s", err);
    CHECK(r.files == 2 && r.truncated == 1 && r.skipped == 0, "files %d truncated %d skipped %d", r.files, r.truncated, r.skipped);
    rewind(rep);
    char msg[4096] = "";
    size_t got = fread(msg, 1, sizeof msg - 1, rep);
    msg[got] = 0;
    fclose(rep);
    CHECK(strstr(msg, "TRUNCATED specprof.rank1.pid101.json.part") != NULL, "report: %s", msg);
    ptrace_file f;
    rc = ptrace_read_file(out, &f, err, sizeof err);
    CHECK(rc == 0, "%s", err);
    if (rc) return;
    CHECK(f.info.merged && f.info.complete && f.info.has_header && !f.info.bad_lines, "merged status");
    /* rank 1's first launch is at its t0 = 123456 ns after rank 0's t0 */
    int64_t first[2] = { -1, -1 };
    int kernels[2] = { 0, 0 };
    for (size_t i = 0; i < f.n_ev; i++) {
        const ptrace_event *e = &f.ev[i];
        if (e->pid < 0 || e->pid > 1) { CHECK(0, "pid %lld", (long long)e->pid); break; }
        if (!strcmp(e->cat, "api") && first[e->pid] < 0) first[e->pid] = e->ts_ns;
        if (!strcmp(e->cat, "kernel")) kernels[e->pid]++;
    }
    CHECK(first[0] == 0 && first[1] == 123456, "first launch rank0 %lld rank1 %lld", (long long)first[0], (long long)first[1]);
    CHECK(kernels[0] == 12 && kernels[1] == 12, "kernels %d %d", kernels[0], kernels[1]);
    /* the summary of a merged file still finds the cycle 4,5,6 */
    ptrace_sum s;
    ptrace_sum_init(&s);
    for (size_t i = 0; i < f.n_ev; i++) if (f.ev[i].pid == 0) ptrace_sum_add(&s, &f.ev[i]);
    ptrace_sum_finish(&s);
    CHECK(s.kernels == 12 && s.kernels_in_graphs == 12 && s.kernels_nccl == 4 && s.kernels_with_phase == 4,
          "sum kernels %lld graphs %lld nccl %lld phase %lld", (long long)s.kernels, (long long)s.kernels_in_graphs,
          (long long)s.kernels_nccl, (long long)s.kernels_with_phase);
    CHECK(s.n_launches == 12, "launches dedup by corr: %zu", s.n_launches);
    CHECK(s.cycle_period == 3 && s.cycle[0] == 4 && s.cycle[1] == 5 && s.cycle[2] == 6, "cycle %d", s.cycle_period);
    CHECK(s.n_graphs == 3 && s.n_nccl == 1 && s.nccl[0].n == 4 && strstr(s.nccl[0].name, "14336"), "tables");
    ptrace_sum_free(&s);
    ptrace_file_free(&f);
    char p[500];
    snprintf(p, sizeof p, "%s/specprof.rank0.pid100.json", dir); remove(p);
    snprintf(p, sizeof p, "%s/specprof.rank1.pid101.json.part", dir); remove(p);
    remove(out);
}


/* A rank file with a line holding -1e999 (the merge once echoed it as -inf, not JSON) and
 * -o a FIFO (once replaced by a regular file): the merged text comes through the FIFO, is
 * strict JSON without inf, and its end record's records are what it holds. */
static void ptrace_merge_writes_a_fifo_and_no_infinity(void) {
    char sub[256], fifo[400], got[400], err[512], rank[400];
    snprintf(sub, sizeof sub, "%.240s/fifo", dir);
    CHECK(ptrace_out_mkdirs(sub, err, sizeof err) == 0, "%s", err);
    char keep[256];
    snprintf(keep, sizeof keep, "%s", dir);
    snprintf(dir, sizeof dir, "%s", sub);
    write_rank(0, 5000000, 2, 0);
    snprintf(dir, sizeof dir, "%s", keep);
    /* add the bad line before the end record */
    snprintf(rank, sizeof rank, "%s/specprof.rank0.pid100.json", sub);
    FILE *f = fopen(rank, "r");
    char text[65536];
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    if (f) fclose(f);
    text[n] = 0;
    char *end = strstr(text, "{\"ph\":\"M\",\"cat\":\"meta\",\"name\":\"specprof_end\"");
    CHECK(end != NULL, "no end record");
    if (!end) return;
    f = fopen(rank, "w");
    fwrite(text, 1, (size_t)(end - text), f);
    fputs("{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"x\",\"pid\":0,\"tid\":7,\"ts\":1,\"dur\":1,\"args\":{\"v\":-1e999}},\n", f);
    fputs(end, f);
    fclose(f);
    snprintf(fifo, sizeof fifo, "%s/merged.fifo", sub);
    snprintf(got, sizeof got, "%s/got.json", sub);
    CHECK(mkfifo(fifo, 0600) == 0, "mkfifo");
    pid_t pid = fork();
    if (pid == 0) {
        int in = open(fifo, O_RDONLY), out = open(got, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        char buf[4096];
        ssize_t r;
        while (in >= 0 && (r = read(in, buf, sizeof buf)) > 0) if (write(out, buf, (size_t)r) != r) _exit(1);
        _exit(0);
    }
    ptrace_merge_result r;
    int rc = ptrace_merge_dir(sub, fifo, NULL, &r, err, sizeof err);
    CHECK(rc == 0, "%s", err);
    int st;
    waitpid(pid, &st, 0);
    struct stat sb;
    CHECK(stat(fifo, &sb) == 0 && S_ISFIFO(sb.st_mode), "the FIFO was replaced");
    char part[450];
    snprintf(part, sizeof part, "%s.part", fifo);
    CHECK(access(part, F_OK) != 0, "a .part file next to the FIFO");
    f = fopen(got, "r");
    n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    if (f) fclose(f);
    text[n] = 0;
    CHECK(n > 100 && !strstr(text, "inf") && !strstr(text, "nan"), "merged text: %.300s", text);
    ptrace_file m;
    CHECK(ptrace_read_buf(text, n, "merged", &m, err, sizeof err) == 0 && m.info.merged && m.info.complete &&
          !m.info.bad_lines && m.info.records_seen == 2 * 9, "merged: complete %d seen %lld promised %lld bad %zu: %s",
          m.info.complete, (long long)m.info.records_seen, (long long)m.info.records_promised, m.info.bad_lines, err);
    ptrace_file_free(&m);
    remove(rank); remove(fifo); remove(got); rmdir(sub);
}

static void ptrace_merge_of_empty_dir_fails_with_message(void) {
    char err[512] = "", out[400];
    ptrace_merge_result r;
    snprintf(out, sizeof out, "%s/merged.json", dir);
    CHECK(ptrace_merge_dir(dir, out, NULL, &r, err, sizeof err) == -1 && strstr(err, "no specprof trace files"), "'%s'", err);
    CHECK(ptrace_merge_dir("/nonexistent/dir", out, NULL, &r, err, sizeof err) == -1 && strstr(err, "/nonexistent/dir"),
          "'%s'", err);
}

static void ptrace_sum_period_finds_smallest_cycle(void) {
    uint32_t a[] = { 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3 };
    CHECK(ptrace_sum_period(a, 12) == 3, "period 3");
    uint32_t b[] = { 7, 7, 7, 7, 7 };
    CHECK(ptrace_sum_period(b, 5) == 1, "period 1");
    uint32_t c[] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    CHECK(ptrace_sum_period(c, 8) == 0, "no period");
    /* draft graph replayed steps-1 = 2 times, then verify, then extend: period 4 */
    uint32_t d[] = { 1, 1, 2, 3, 1, 1, 2, 3, 1, 1, 2, 3, 1, 1, 2, 3 };
    CHECK(ptrace_sum_period(d, 16) == 4, "spec-decode cycle");
    uint32_t e[] = { 1, 2, 1, 2, 1, 2, 1, 9, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2 };   /* one glitch */
    CHECK(ptrace_sum_period(e, 22) == 2, "tolerates a glitch");
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/test_ptrace_merge.%d", (int)getpid());
    char err[256];
    if (ptrace_out_mkdirs(dir, err, sizeof err)) { fprintf(stderr, "%s\n", err); return 1; }
    RUN(ptrace_merge_aligns_ranks_and_reports_cut_files);
    RUN(ptrace_merge_writes_a_fifo_and_no_infinity);
    RUN(ptrace_merge_of_empty_dir_fails_with_message);
    RUN(ptrace_sum_period_finds_smallest_cycle);
    rmdir(dir);
    return check_done();
}
