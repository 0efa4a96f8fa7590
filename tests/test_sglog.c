/* test_sglog: SGLang server logs (models/sglog) and `specsim log` (sim/logcmd): every
 * Decode batch variant of the releases parses to the same fields, other lines are counted,
 * a log without Decode batch lines is refused, the alpha printed for an accept length
 * reproduces it through the closed form, and the predictions are what `specsim run` says
 * for the same batch, accept length and graph state. */
#include "check.h"
#include "phasemap.h"
#include "sglog.h"
#include "specsim_bin.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#define LOG "tests/data/sglang/server-eagle.log"

static char specsim[512];

static int sh(const char *cmd, char **out)
{
    char full[4096];
    snprintf(full, sizeof full, "%s %s 2>&1", specsim, cmd);
    return specsim_run_capture(full, out);
}

static void sglog_reads_every_release_variant(void)
{
    static const struct {
        const char *line;
        int bs, graph, dp, tp;
        double kv, len, rate, tok_s;
        long long iter;
    } cases[] = {
        {"[2025-11-03 10:01:01] Decode batch. #running-req: 1, #token: 58, token usage: 0.00, accept len: 3.10, "
         "cuda graph: True, gen throughput (token/s): 231.50, #queue-req: 0", 1, 1, -1, -1, 58, 3.10, -1, 231.50, -1},
        {"[2025-11-03 10:01:05 TP0] Decode batch, #running-req: 4, #token: 900, token usage: 0.01, accept len: 2.90, "
         "accept rate: 0.73, cuda graph: True, gen throughput (token/s): 780.00, #queue-req: 0", 4, 1, -1, 0, 900, 2.90, 0.73, 780, -1},
        {"(SGLangEngine pid=4711) [2025-11-03 10:01:06 DP6 TP6 EP6] Decode batch [1234], #running-req: 4, "
         "#full token: 1100, full token usage: 0.01, #swa token: 800, swa token usage: 0.01, accept len: 3.00, "
         "accept rate: 0.75, cuda graph: True, gen throughput (token/s): 800.00, #queue-req: 2", 4, 1, 6, 6, 1100, 3.0, 0.75, 800, 1234},
        {"[2025-11-03 10:01:10 TP0] Decode batch, #running-req: 200, #token: 40000, token usage: 0.40, "
         "cuda graph: False, gen throughput (token/s): 9000.00, #queue-req: 0", 200, 0, -1, 0, 40000, -1, -1, 9000, -1},
        {"[2025-11-03 10:01:10 DP0 TP0] Decode batch, #running-req: 8, #token: 4000, token usage: 0.40, "
         "pre-allocated usage: 0.10, #prealloc-req: 0, #transfer-req: 0, #retracted-req: 0, cuda graph: True, "
         "gen throughput (token/s): 1000.00, #queue-req: 0, est. decode TFLOPS/s (per GPU): 1.20", 8, 1, 0, 0, 4000, -1, -1, 1000, -1},
        /* early 2025 (scheduler.py log_decode_stats): no graph field, a trailing ", " */
        {"[2025-02-10 12:00:00 TP0] Decode batch. #running-req: 8, #token: 3000, token usage: 0.02, accept len: 2.81, "
         "gen throughput (token/s): 600.12, #queue-req: 0, ", 8, -1, -1, 0, 3000, 2.81, -1, 600.12, -1},
        /* 2026 (scheduler_components/metrics_reporter.py report_decode_stats): #cached-token, no
         * trailing ", ", MFU and device-timer fields after #queue-req */
        {"[2026-03-10 12:00:00 TP0] Decode batch, #running-req: 8, #cached-token: 0, #token: 3000, token usage: 0.02, "
         "accept len: 2.85, accept rate: 0.61, waiting-image-req: 0, cuda graph: True, gen throughput (token/s): "
         "640.00, #queue-req: 0, est. decode TFLOPS/s (per GPU): 1.20, est. read BW (GB/s per GPU): 800.00, "
         "est. write BW (GB/s per GPU): 10.00, fwd occupancy: 93.50%", 8, 1, -1, 0, 3000, 2.85, 0.61, 640, -1},
        /* 2026 HiSparse pool (PoolStats.get_decode_usage_msg_parts): no #token */
        {"[2026-03-10 12:00:01 TP0] Decode batch, #running-req: 8, #cached-token: 0, #gpu token: 2000, gpu token "
         "usage: 0.02, #cpu token: 1000, cpu token usage: 0.01, accept len: 2.86, accept rate: 0.62, npu graph: False, "
         "gen throughput (token/s): 650.00, #queue-req: 3", 8, 0, -1, 0, -1, 2.86, 0.62, 650, -1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sglog_interval iv;
        char err[200] = "";
        int r = sglog_parse_line(cases[i].line, strlen(cases[i].line), &iv, err, sizeof err);
        CHECK(r == 1, "case %zu: %d %s", i, r, err);
        CHECK(iv.running_req == cases[i].bs && iv.cuda_graph == cases[i].graph && iv.dp == cases[i].dp &&
              iv.tp == cases[i].tp && iv.iter == cases[i].iter, "case %zu: bs %d graph %d dp %d tp %d iter %lld", i,
              iv.running_req, iv.cuda_graph, iv.dp, iv.tp, (long long)iv.iter);
        CHECK(iv.kv_tokens == cases[i].kv && fabs(iv.accept_len - cases[i].len) < 1e-9 &&
              fabs(iv.accept_rate - cases[i].rate) < 1e-9 && fabs(iv.gen_tok_s - cases[i].tok_s) < 1e-9,
              "case %zu: kv %g len %g rate %g tok/s %g", i, iv.kv_tokens, iv.accept_len, iv.accept_rate, iv.gen_tok_s);
    }
    sglog_interval iv;
    char err[200];
    const char *other = "[2025-11-03 10:01:00] Prefill batch. #new-seq: 1, #new-token: 17, #running-req: 0";
    CHECK(sglog_parse_line(other, strlen(other), &iv, err, sizeof err) == 0, "prefill line is not a decode line");
    const char *bad = "[x] Decode batch, #running-req: x, cuda graph: True";
    CHECK(sglog_parse_line(bad, strlen(bad), &iv, err, sizeof err) == -1 && strstr(err, "#running-req") &&
          strstr(err, "\"x\""), "message '%s'", err);
    const char *bad2 = "[x] Decode batch, #running-req: 3, cuda graph: Maybe";
    CHECK(sglog_parse_line(bad2, strlen(bad2), &iv, err, sizeof err) == -1 && strstr(err, "cuda graph") &&
          strstr(err, "Maybe"), "message '%s'", err);
}

static void sglog_counts_lines_and_refuses_a_log_without_decode_lines(void)
{
    sglog g;
    char err[600];
    sglog_init(&g);
    CHECK(sglog_read(&g, LOG, 0, err, sizeof err) == 0, "%s", err);
    CHECK(g.lines == 11 && g.decode_lines == 6 && g.n == 5 && g.bad_lines == 1 && g.other_lines == 5,
          "lines %zu decode %zu intervals %zu bad %zu other %zu", g.lines, g.decode_lines, g.n, g.bad_lines,
          g.other_lines);
    CHECK(g.v_period == 2 && g.v_comma == 2 && g.v_iter == 1 && g.v_full_token == 1 && g.v_engine_prefix == 1 &&
          g.v_no_accept_rate == 2, "variants");
    if (g.n >= 5)   /* a log not read (the committed file missing): the checks above failed */
        CHECK(g.iv[0].line == 5 && g.iv[4].line == 10, "line numbers %zu %zu", g.iv[0].line, g.iv[4].line);
    const char *path = "/tmp/test_sglog_noline.log";
    FILE *f = fopen(path, "w");
    fputs("[2025-11-03 10:00:00] Load weight end.\nINFO: started\n", f);
    fclose(f);
    CHECK(sglog_read(&g, path, 1, err, sizeof err) == -1 && strstr(err, path) && strstr(err, "Decode batch") &&
          strstr(err, "2 lines"), "message '%s'", err);
    char *out, cmd[256];
    snprintf(cmd, sizeof cmd, "log %s", path);
    CHECK(sh(cmd, &out) == 2 && out && strstr(out, path), "specsim log exit 2: %s", out ? out : "");
    free(out);
    remove(path);
    sglog_free(&g);
}

/* strtod reads "nan" and "inf": a value SGLang never prints (f"{x:.2f}" of a count over a
 * positive time) is a damaged line, refused with its field, not a nan in the table. */
static void sglog_refuses_nan_and_inf(void)
{
    static const struct { const char *line, *field, *value; } cases[] = {
        {"[t TP0] Decode batch, #running-req: 4, #token: 900, token usage: 0.01, accept len: nan, "
         "accept rate: 0.73, cuda graph: True, gen throughput (token/s): 780.00, #queue-req: 0", "accept len", "nan"},
        {"[t TP0] Decode batch, #running-req: 4, #token: 900, token usage: 0.01, accept len: 3.00, "
         "accept rate: 0.73, cuda graph: True, gen throughput (token/s): inf, #queue-req: 0", "gen throughput", "inf"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sglog_interval iv;
        char err[200] = "";
        int r = sglog_parse_line(cases[i].line, strlen(cases[i].line), &iv, err, sizeof err);
        CHECK(r == -1 && strstr(err, cases[i].field) && strstr(err, cases[i].value), "case %zu: %d '%s'", i, r, err);
    }
}

/* report_decode_stats writes "cpu graph" on a CPU server and "npu graph" on Ascend
 * (scheduler_metrics_mixin.py, graph_backend): the same graph state as "cuda graph". */
static void sglog_reads_cpu_and_npu_graph(void)
{
    static const struct { const char *line; int graph; } cases[] = {
        {"[t] Decode batch, #running-req: 4, #token: 900, token usage: 0.01, cpu graph: False, "
         "gen throughput (token/s): 780.00, #queue-req: 0", 0},
        {"[t] Decode batch, #running-req: 4, #token: 900, token usage: 0.01, npu graph: True, "
         "gen throughput (token/s): 780.00, #queue-req: 0", 1},
        {"[t] Decode batch, #running-req: 4, #token: 900, token usage: 0.01, npu graph: False, "
         "gen throughput (token/s): 780.00, #queue-req: 0", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sglog_interval iv;
        char err[200] = "";
        int r = sglog_parse_line(cases[i].line, strlen(cases[i].line), &iv, err, sizeof err);
        CHECK(r == 1 && iv.cuda_graph == cases[i].graph, "case %zu: %d graph %d %s", i, r, iv.cuda_graph, err);
    }
}

#define DECODE_LINE "[2025-11-03 10:01:05 TP0] Decode batch, #running-req: 4, #token: 900, token usage: 0.01, " \
    "accept len: 2.90, accept rate: 0.73, cuda graph: True, gen throughput (token/s): 780.00, #queue-req: 0"

/* --log-requests-level 1..3 logs prompts untruncated: a 3 MB line between two Decode batch
 * lines is cut and counted, and the lines after it keep their numbers. */
static void sglog_reads_past_a_line_over_the_limit(void)
{
    const char *path = "/tmp/test_sglog_long.log";
    FILE *f = fopen(path, "w");
    fputs(DECODE_LINE "\n[2025-11-03 10:01:06] Receive: obj=GenerateReqInput(text='", f);
    for (int i = 0; i < 3 << 20; i++)
        fputc('x', f);
    fputs("')\n" DECODE_LINE "\n", f);
    fclose(f);
    sglog g;
    char err[600] = "";
    sglog_init(&g);
    CHECK(sglog_read(&g, path, 0, err, sizeof err) == 0, "%s", err);
    CHECK(g.n == 2 && g.lines == 3 && g.cut_lines == 1 && g.other_lines == 1 && g.bad_lines == 0,
          "intervals %zu lines %zu cut %zu other %zu bad %zu", g.n, g.lines, g.cut_lines, g.other_lines, g.bad_lines);
    CHECK(g.n == 2 && g.iv[1].line == 3 && fabs(g.iv[1].gen_tok_s - 780) < 1e-9, "line %zu tok/s %g",
          g.n == 2 ? g.iv[1].line : 0, g.n == 2 ? g.iv[1].gen_tok_s : 0);
    sglog_free(&g);
    remove(path);
}

/* logrotate's copytruncate empties the file while the server keeps its write offset: the
 * next line lands after a hole of NULs as long as the old file (here 2 MiB, past the 1 MiB
 * line limit). The line after the hole is read, not cut as a 2 MiB line and lost. */
static void sglog_reads_the_line_after_a_hole_of_nuls(void)
{
    const char *path = "/tmp/test_sglog_nul.log";
    FILE *f = fopen(path, "w");
    for (int i = 0; i < 2 << 20; i++)
        fputc(0, f);
    fputs(DECODE_LINE "\n" DECODE_LINE "\n", f);
    fclose(f);
    sglog g;
    char err[600] = "";
    sglog_init(&g);
    CHECK(sglog_read(&g, path, 0, err, sizeof err) == 0, "%s", err);
    CHECK(g.n == 2 && g.lines == 2 && g.cut_lines == 0 && g.nul_bytes == (size_t)2 << 20,
          "intervals %zu lines %zu cut %zu nul %zu", g.n, g.lines, g.cut_lines, g.nul_bytes);
    CHECK(g.n >= 1 && g.iv[0].line == 1 && fabs(g.iv[0].gen_tok_s - 780) < 1e-9, "line %zu tok/s %g",
          g.n ? g.iv[0].line : 0, g.n ? g.iv[0].gen_tok_s : 0);
    sglog_free(&g);
    remove(path);
}

/* A log copied while the server writes it ends inside a line: "gen throughput (token/s): 78"
 * of 780.00 must not count. A complete last line without a newline still does. */
static void sglog_leaves_out_a_last_line_cut_short(void)
{
    const char *path = "/tmp/test_sglog_cut.log";
    static const char *tails[] = {
        "[2025-11-03 10:01:06 TP0] Decode batch, #running-req: 4, #token: 900, token usage: 0.01, "
        "accept len: 2.", "[2025-11-03 10:01:06 TP0] Decode batch, #running-req: 4, #token: 9"};
    for (int t = 0; t < 2; t++) {
        FILE *f = fopen(path, "w");
        fputs(DECODE_LINE "\r\n", f);
        fputs(tails[t], f);
        fclose(f);
        sglog g;
        char err[600] = "";
        sglog_init(&g);
        CHECK(sglog_read(&g, path, 0, err, sizeof err) == 0, "%s", err);
        CHECK(g.n == 1 && g.bad_lines == 1 && strstr(g.first_bad, "line 2") && strstr(g.first_bad, "newline"),
              "tail %d: intervals %zu bad %zu '%s'", t, g.n, g.bad_lines, g.first_bad);
        sglog_free(&g);
    }
    FILE *f = fopen(path, "w");
    fputs(DECODE_LINE "\n" DECODE_LINE, f);
    fclose(f);
    sglog g;
    char err[600] = "";
    sglog_init(&g);
    CHECK(sglog_read(&g, path, 0, err, sizeof err) == 0 && g.n == 2 && g.bad_lines == 0, "complete: %zu %zu %s",
          g.n, g.bad_lines, err);
    sglog_free(&g);
    remove(path);
}

/* A .log.gz cut short (copied while gzip was writing it, or cut: no gzip trailer) was refused
 * ("gzip stream cut off") while the .log cut at the same place was read up to the cut. Cut at a
 * third, a half and 9/10 of its compressed bytes, and just before its 8-byte trailer, it reads as
 * the plain log holding what inflates up to the cut, cut back to its last whole line: the same
 * intervals, and the cut said once with the bytes read; a caller that cannot warn (--ctx-log)
 * still gets the refusal. */
static void sglog_reads_a_cut_gzip_log_up_to_its_last_whole_line(void)
{
    const char *gz = "/tmp/test_sglog_cut.log.gz", *plain = "/tmp/test_sglog_cut_plain.log";
    size_t cap = 1 << 20, tlen = 0;
    char *text = malloc(cap), *inflated = malloc(cap + 1);
    unsigned char *zbuf = malloc(cap);
    if (!text || !inflated || !zbuf) {
        CHECK(0, "out of memory");
        goto out;
    }
    tlen += (size_t)snprintf(text, cap, "[2025-11-03 10:00:00] server_args=ServerArgs(model_path='m', "
                             "speculative_num_steps=3, speculative_eagle_topk=1, speculative_num_draft_tokens=4)\n");
    for (int i = 0; i < 2000; i++)   /* seeded values: a log deflate cannot shrink to nothing */
        tlen += (size_t)snprintf(text + tlen, cap - tlen, "[2025-11-03 10:%02d:%02d TP0] Decode batch, #running-req: "
                                 "%d, #token: %d, token usage: 0.%02d, accept len: %d.%02d, cuda graph: True, gen "
                                 "throughput (token/s): %d.%02d, #queue-req: %d\n", i / 60 % 60, i % 60,
                                 1 + (i * 7919) % 160, (i * 104729) % 90000, i % 100, 1 + i % 3, (i * 31) % 100,
                                 (i * 613) % 9000, i % 100, i % 5);
    z_stream z;
    memset(&z, 0, sizeof z);
    deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
    z.next_in = (unsigned char *)text;
    z.avail_in = (uInt)tlen;
    z.next_out = zbuf;
    z.avail_out = (uInt)cap;
    deflate(&z, Z_FINISH);
    size_t zlen = cap - z.avail_out;
    deflateEnd(&z);
    int read_some = 0;
    for (int c = 0; c < 4; c++) {
        size_t cut = c == 3 ? zlen - 8 : zlen * (size_t)(c == 0 ? 3 : c == 1 ? 5 : 9) / 10;
        FILE *f = fopen(gz, "wb");
        fwrite(zbuf, 1, cut, f);
        fclose(f);
        /* what inflates from the cut bytes, back to its last whole line: the plain log */
        memset(&z, 0, sizeof z);
        inflateInit2(&z, 15 + 16);
        z.next_in = zbuf;
        z.avail_in = (uInt)cut;
        z.next_out = (unsigned char *)inflated;
        z.avail_out = (uInt)cap;
        inflate(&z, Z_SYNC_FLUSH);
        size_t il = cap - z.avail_out, whole = il;
        inflateEnd(&z);
        while (whole && inflated[whole - 1] != '\n')
            whole--;
        int cut_decode = memmem(inflated + whole, il - whole, "Decode batch", 12) != NULL;
        inflated[whole] = 0;
        f = fopen(plain, "w");
        fputs(inflated, f);
        fclose(f);
        sglog gp, gg;
        char errp[600] = "", err[600] = "";
        sglog_init(&gp);
        sglog_init(&gg);
        gg.read_to_cut = 1;
        int rp = sglog_read(&gp, plain, 0, errp, sizeof errp), rg = sglog_read(&gg, gz, 0, err, sizeof err);
        CHECK(rp == 0 && rg == 0, "cut at %zu of %zu compressed bytes (%zu of text): plain rc %d (%s), gzip rc %d "
              "(%s)", cut, zlen, il, rp, errp, rg, err);
        if (rp == 0 && rg == 0) {
            read_some++;
            int same = gg.n == gp.n && gg.lines == gp.lines && gg.bad_lines == 0 && gp.bad_lines == 0 &&
                       (gg.server_args != NULL) == (gp.server_args != NULL);
            for (size_t i = 0; same && i < gg.n; i++)
                same = gg.iv[i].line == gp.iv[i].line && gg.iv[i].running_req == gp.iv[i].running_req &&
                       gg.iv[i].kv_tokens == gp.iv[i].kv_tokens && gg.iv[i].gen_tok_s == gp.iv[i].gen_tok_s &&
                       gg.iv[i].queue_req == gp.iv[i].queue_req;
            CHECK(same, "cut %d: gzip %zu intervals, %zu lines, %zu bad; plain %zu, %zu, %zu", c, gg.n, gg.lines,
                  gg.bad_lines, gp.n, gp.lines, gp.bad_lines);
            CHECK(gg.gz_cut_files == 1 && gp.gz_cut_files == 0 && gg.gz_cut.lines == gg.lines &&
                  gg.gz_cut.text_bytes == whole && gg.gz_cut.dropped_bytes == il - whole &&
                  gg.gz_cut.file_bytes == cut && gg.gz_cut.dropped_decode == cut_decode,
                  "cut %d: gz_cut files %zu lines %zu text %llu (want %zu) dropped %llu (want %zu, decode %d) file "
                  "%llu (want %zu)", c, gg.gz_cut_files, gg.gz_cut.lines, gg.gz_cut.text_bytes, whole,
                  gg.gz_cut.dropped_bytes, il - whole, gg.gz_cut.dropped_decode, gg.gz_cut.file_bytes, cut);
            CHECK(c != 3 || (gg.n == 2000 && gg.gz_cut.dropped_bytes == 0), "trailer cut: %zu intervals", gg.n);
        }
        sglog_free(&gp);
        sglog_free(&gg);
        /* without read_to_cut: refused, naming the file */
        sglog_init(&gg);
        err[0] = 0;
        CHECK(sglog_read(&gg, gz, 0, err, sizeof err) == -1 && strstr(err, gz) && strstr(err, "cut off"),
              "cut %d, not read to the cut: %s", c, err);
        sglog_free(&gg);
        /* specsim log reads it and says so once, on stderr, with the bytes and the line */
        if (c == 1) {
            char *o = NULL, cmd[512], want[200];
            snprintf(cmd, sizeof cmd, "log %s --spec-shape 3,1,4", gz);
            snprintf(want, sizeof want, "warning: %s: the gzip stream ends without its trailer after %zu bytes", gz,
                     cut);
            int rc = sh(cmd, &o);
            const char *w = o ? strstr(o, want) : NULL;
            CHECK(rc == 0 && w && strstr(w, "last whole line (line ") && !strstr(w + 1, "warning:") &&
                  strstr(o, "# acceptance per batch size"), "rc %d: %s", rc, o ? o : "");
            free(o);
        }
    }
    CHECK(read_some == 4, "only %d of the cut files read", read_some);
    remove(gz);
    remove(plain);
out:
    free(text);
    free(inflated);
    free(zbuf);
}

/* With no server_args.json, the shape comes from the arguments the server logged at start-up
 * (logger.info(f"{server_args=}"), entrypoints/engine.py): a dataclass repr. */
static void log_reads_the_shape_from_the_logged_server_args(void)
{
    const char *dir = "/tmp/test_sglog_args", *path = "/tmp/test_sglog_args/server.log";
    static const char *args[] = {
        "speculative_algorithm='EAGLE', speculative_draft_model_path='lmsys/sglang-EAGLE-LLaMA3-Instruct-8B', "
        "speculative_num_steps=5, speculative_eagle_topk=4, speculative_num_draft_tokens=8, "
        "speculative_accept_threshold_single=1.0",
        "speculative_algorithm='EAGLE3', speculative_draft_model_path=None, speculative_num_steps=None, "
        "speculative_eagle_topk=None, speculative_num_draft_tokens=None"};
    static const char *want[] = {"steps 5, topk 4, draft_tokens 8", "speculative_num_steps: value null"};
    (void)!system("mkdir -p /tmp/test_sglog_args");
    for (int c = 0; c < 2; c++) {
        FILE *f = fopen(path, "w");
        fprintf(f, "[2025-11-03 10:00:00] server_args=ServerArgs(model_path='meta-llama/Llama-3.1-8B-Instruct', "
                "tokenizer_mode='auto', json_model_override_args='{}', tp_size=2, attn_tp_size=None, pp_size=1, "
                "%s, enable_torch_compile=False, torch_compile_max_bs=32, cuda_graph_max_bs=48, "
                "cuda_graph_bs=[1, 2, 4, 8, 16], disable_cuda_graph=False, disable_cuda_graph_padding=False)\n"
                DECODE_LINE "\n", args[c]);
        fclose(f);
        char *out, cmd[512];
        snprintf(cmd, sizeof cmd, "log %s", path);
        CHECK(sh(cmd, &out) == 0 && out && strstr(out, want[c]) && strstr(out, "server.log: line 1"),
              "case %d: %s", c, out ? out : "");
        free(out);
    }
    /* the captured list and tp_size come through: bs 4 pads to 4 with a graph */
    pm_shape sp;
    char err[300] = "";
    const char *line = "server_args=ServerArgs(tp_size=2, speculative_algorithm='EAGLE', speculative_num_steps=3, "
                       "speculative_eagle_topk=1, speculative_num_draft_tokens=4, cuda_graph_max_bs=48, "
                       "cuda_graph_bs=[1, 2, 4, 8, 16], disable_cuda_graph=False)";
    CHECK(phasemap_shape_repr(&sp, line, strlen(line), "x", err, sizeof err) == 0 && sp.known && sp.steps == 3 &&
          sp.tp_size == 2 && sp.ngraph_bs == 5 && sp.graph_bs[4] == 16 && sp.cuda_graph == 1,
          "%s: known %d steps %d tp %d graphs %d", err, sp.known, sp.steps, sp.tp_size, sp.ngraph_bs);
    remove(path);
    rmdir(dir);
}

/* The server's arguments are the line whose message is them, as SGLang logs them (f"{server_args=}"
 * after its "[time] " prefix). The text anywhere in a line was taken: a prompt logged by
 * --log-requests that quotes such a line, or a message that mentions it, logged before the
 * server's own line, gave the shape (steps 7 for 3). Every store of the line still reads. */
static void sglog_takes_the_server_args_only_from_the_servers_line(void)
{
#define SA "server_args=ServerArgs(model_path='m', speculative_algorithm='EAGLE', speculative_num_steps=%d, " \
           "speculative_eagle_topk=1, speculative_num_draft_tokens=4)"
    static const char *quoting[] = {
        "[2025-11-03 10:00:01] Receive: obj=GenerateReqInput(text=\"why? [2025-11-03 10:00:00] " SA "\", rid='a')",
        "[2025-11-03 10:00:01 TP0] Finish: obj=GenerateReqInput(rid='a'), out={'text': '" SA "'}",
        "{\"log\":\"[2025-11-03 10:00:01] Receive: obj=GenerateReqInput(text=\\\"" SA "\\\")\\n\",\"stream\":\"stdout\"}",
        "[2025-11-03 10:00:01] Scheduler hit an exception: bad " SA,
        "Traceback: " SA,
    };
    static const char *stores[] = {
        "[2025-11-03 10:00:00] " SA,
        SA,
        "[2025-11-03 10:00:00 TP0] " SA,
        "\033[36m(SGLangEngine pid=4711, ip=10.0.0.1)\033[0m [2025-11-03 10:00:00] " SA,
        "\033[32m[2025-11-03 10:00:00]\033[0m " SA,
        "{\"log\":\"[2025-11-03 10:00:00] " SA "\\n\",\"stream\":\"stderr\",\"time\":\"2025-11-03T10:00:00.1Z\"}",
        "2025-11-03T10:00:00.123456789Z stderr F [2025-11-03 10:00:00] " SA,
        "Nov 03 10:00:00 gpu7 python3[4711]: [2025-11-03 10:00:00] " SA,
    };
    const char *path = "/tmp/test_sglog_sa.log";
    for (size_t i = 0; i < sizeof quoting / sizeof quoting[0] + sizeof stores / sizeof stores[0]; i++) {
        int q = i < sizeof quoting / sizeof quoting[0];
        const char *first = q ? quoting[i] : stores[i - sizeof quoting / sizeof quoting[0]];
        FILE *f = fopen(path, "w");
        fprintf(f, first, 7);
        fputc('\n', f);
        if (q) {   /* then the server's own line */
            fprintf(f, "[2025-11-03 10:00:02] " SA, 3);
            fputc('\n', f);
        }
        fputs(DECODE_LINE "\n", f);
        fclose(f);
        sglog g;
        pm_shape sp;
        char err[600] = "";
        sglog_init(&g);
        memset(&sp, 0, sizeof sp);
        int rc = sglog_read(&g, path, 0, err, sizeof err);
        int shape = rc == 0 && g.server_args &&
                    phasemap_shape_repr(&sp, g.server_args, g.server_args_len, g.server_args_at, err, sizeof err) == 0;
        CHECK(shape && g.server_args_lines == 1 && strstr(g.server_args_at, q ? "line 2" : "line 1") &&
              sp.steps == (q ? 3 : 7), "%s line %zu: rc %d, %zu server_args lines, the one read at %s: steps %d (%s); "
              "want %s", q ? "quoting" : "stored", i, rc, g.server_args_lines, g.server_args_at, sp.steps, err,
              q ? "the server's line 2, steps 3" : "line 1, steps 7");
        sglog_free(&g);
    }
#undef SA
    remove(path);
}

/* An NGRAM server's server_args.json has speculative_num_steps null (server_args.py sets only
 * _eagle_topk and _num_draft_tokens for NGRAM): the acceptance table does not need the shape
 * and is printed, naming the field; --spec-shape gives the shape. Both exited 2. */
static void log_reads_a_log_beside_an_ngram_server_args(void)
{
    const char *dir = "/tmp/test_sglog_ngram", *path = "/tmp/test_sglog_ngram/server.log",
               *args = "/tmp/test_sglog_ngram/server_args.json";
    (void)!system("mkdir -p /tmp/test_sglog_ngram");
    FILE *f = fopen(args, "w");
    fputs("{\"tp_size\": 1, \"speculative_algorithm\": \"NGRAM\", \"speculative_num_steps\": null, "
          "\"speculative_eagle_topk\": 8, \"speculative_num_draft_tokens\": 12, \"cuda_graph_max_bs\": 48}", f);
    fclose(f);
    f = fopen(path, "w");
    fputs(DECODE_LINE "\n", f);
    fclose(f);
    char *out, cmd[512];
    snprintf(cmd, sizeof cmd, "log %s", path);
    CHECK(sh(cmd, &out) == 0 && out && strstr(out, "speculative_num_steps: value null") &&
          strstr(out, "--accept-len 2.90"), "no shape: %s", out ? out : "");
    free(out);
    snprintf(cmd, sizeof cmd, "log %s --spec-shape 3,8,12", path);
    CHECK(sh(cmd, &out) == 0 && out && strstr(out, "steps 3, topk 8, draft_tokens 12"), "--spec-shape: %s",
          out ? out : "");
    free(out);
    remove(path);
    remove(args);
    rmdir(dir);
}

/* The server's captured sizes reach the simulator whole: they went through the cuda-graph-bs
 * knob's 511 characters, and a list of 1..160 (532 characters) lost its sizes from ~155 on, so a
 * batch of 158 was predicted eager. With 1..160 it is predicted as with the list 4,158. */
static void log_predicts_with_every_captured_size_of_a_long_list(void)
{
    const char *dir = "/tmp/test_sglog_longlist", *path = "/tmp/test_sglog_longlist/server.log",
               *args = "/tmp/test_sglog_longlist/server_args.json";
    (void)!system("mkdir -p /tmp/test_sglog_longlist");
    FILE *f = fopen(path, "w");
    fputs("[t TP0] Decode batch, #running-req: 158, #token: 9000, accept len: 2.90, cuda graph: True, "
          "gen throughput (token/s): 9000.00, #queue-req: 0\n", f);
    fclose(f);
    double pred[2] = {-1, -2};
    for (int c = 0; c < 2; c++) {
        f = fopen(args, "w");
        fputs("{\"tp_size\": 1, \"speculative_algorithm\": \"EAGLE\", \"speculative_num_steps\": 3, "
              "\"speculative_eagle_topk\": 1, \"speculative_num_draft_tokens\": 4, \"cuda_graph_bs\": [", f);
        if (c == 0)
            for (int b = 1; b <= 160; b++)
                fprintf(f, "%s%d", b > 1 ? ", " : "", b);
        else
            fputs("4, 158", f);
        fputs("]}\n", f);
        fclose(f);
        char *out, cmd[512];
        snprintf(cmd, sizeof cmd, "log %s --model models/example-llama8b.json --iterations 100 --csv", path);
        int rc = sh(cmd, &out);
        const char *row = out ? strstr(out, "server.log,1,158,") : NULL;
        CHECK(rc == 0 && row && sscanf(row, "%*[^,],%*d,%*d,%*d,%*f,%*f,%lf", &pred[c]) == 1 &&
              strstr(row, "server.log,1,158,1,"), "list %d: exit %d: %s", c, rc, out ? out : "");
        free(out);
    }
    CHECK(pred[0] == pred[1], "bs 158 with the list 1..160: %.2f tok/s; with 4,158: %.2f", pred[0], pred[1]);
    remove(path);
    remove(args);
    rmdir(dir);
}

/* The alpha printed for bs 1 (accept len 3.15 = 1 + a + a^2 + a^3 for a 3-step chain) */
static void log_alpha_reproduces_the_accept_length(void)
{
    char *out;
    CHECK(sh("log " LOG, &out) == 0 && out, "exit");
    const char *row = out ? strstr(out, "\n      1 ") : NULL;
    double len = 0, a = 0;
    int n = 0;
    CHECK(row && sscanf(row, " %*d %d %lf %*f %*f %*f %lf", &n, &len, &a) == 3, "bs 1 row in:\n%s", out ? out : "");
    CHECK(n == 2 && fabs(len - 3.15) < 1e-9, "bs 1: %d intervals, len %g", n, len);
    CHECK_NEAR(1 + a + a * a + a * a * a, 3.15, 1e-3, 0);
    CHECK(out && strstr(out, "no accept rate 2") && strstr(out, "1 unparsable") && strstr(out, "steps 3, topk 1"),
          "report: %s", out ? out : "");
    free(out);
}

static void log_predictions_match_specsim_run(void)
{
    char *out, *run;
    CHECK(sh("log " LOG " --model models/example-llama8b.json --iterations 400", &out) == 0 && out, "exit: %s",
          out ? out : "");
    /* line 5: bs 1, graph, accept len 3.10 */
    const char *row = out ? strstr(out, "server-eagle.log:5 ") : NULL;
    double logged = 0, pred = 0, e = 0;
    CHECK(row && sscanf(row, "%*s %*d %*d %*f %lf %lf %lf", &logged, &pred, &e) == 3, "row: %s", out ? out : "");
    CHECK(logged == 231.5 && pred > 0 && fabs(e - 100 * (pred - logged) / logged) < 0.01, "logged %g pred %g err %g",
          logged, pred, e);
    CHECK(sh("run --model models/example-llama8b.json --iterations 400 --bs 1 --steps 3 --topk 1 "
             "--draft-tokens 4 --accept-len 3.10 --cuda-graph-bs sglang --cuda-graph-max-bs 160 --csv", &run) == 0 && run,
          "run: %s", run ? run : "");
    /* the run's first CSV row holds tok_s; find it by the header */
    double tok = -1;
    if (run) {
        /* the CSV header's column, not a word of a warning printed before it */
        char *hdr = strstr(run, ",tok_s,");
        if (hdr)
            hdr++;
        if (hdr) {
            char *ls = hdr;
            while (ls > run && ls[-1] != '\n')
                ls--;
            int col = 0;
            for (char *p = ls; p < hdr; p++)
                col += *p == ',';
            char *data = strchr(hdr, '\n');
            for (int c = 0; data && c < col; c++)
                data = strchr(data + 1, ',');
            if (data)
                tok = atof(data + 1);
        }
    }
    CHECK(fabs(tok - pred) <= 0.006 * pred + 0.01, "specsim log predicted %g, specsim run says %g", pred, tok);
    free(out);
    free(run);
}

/* An interval that logged a small share of the prediction was mostly idle: flagged, and
 * left out of the summary. */
static void log_flags_idle_intervals(void)
{
    const char *path = "/tmp/test_sglog_idle.log";
    FILE *f = fopen(path, "w");
    fputs("[t TP0] Decode batch, #running-req: 1, #token: 100, token usage: 0.00, accept len: 3.10, "
          "cuda graph: True, gen throughput (token/s): 700.00, #queue-req: 0\n"
          "[t TP0] Decode batch, #running-req: 1, #token: 140, token usage: 0.00, accept len: 3.10, "
          "cuda graph: True, gen throughput (token/s): 3.00, #queue-req: 0\n", f);
    fclose(f);
    char *out, cmd[512];
    snprintf(cmd, sizeof cmd, "log %s --spec-shape 3,1,4 --model models/example-llama8b.json --iterations 300", path);
    CHECK(sh(cmd, &out) == 0 && out && strstr(out, "1 intervals predicted") && strstr(out, "1 idle intervals") &&
          strstr(out, "  idle"), "output: %s", out ? out : "");
    free(out);
    remove(path);
}

/* An accept len at the draft's limit (4.00 at steps 3: every draft token accepted, to the
 * log's 2 decimals) is read 0.005 below it: the table suggested --accept-len 4.00, which the
 * simulator refuses, and --model exited 2. */
static void log_accept_len_at_the_limit_is_read_below_it(void)
{
    const char *path = "/tmp/test_sglog_limit.log";
    FILE *f = fopen(path, "w");
    for (int i = 0; i < 2; i++)
        fprintf(f, "[t TP0] Decode batch, #running-req: 4, #token: 900, accept len: %s, cuda graph: True, "
                "gen throughput (token/s): 780.00, #queue-req: 0\n", i ? "4.00" : "3.90");
    fclose(f);
    char *out, cmd[512];
    snprintf(cmd, sizeof cmd, "log %s --spec-shape 3,1,4 --model models/example-llama8b.json --iterations 300", path);
    CHECK(sh(cmd, &out) == 0 && out && strstr(out, "2 intervals predicted") &&
          strstr(out, "# 1 intervals logged accept len at the draft's limit") && !strstr(out, "--accept-len 4.00"),
          "output: %s", out ? out : "");
    free(out);
    remove(path);
}

/* DP attention: each DP rank logs its own batch ("[.. DP1 TP1 ..]"); the log says once how
 * many DP ranks it holds and that DP attention is not modelled; one DP rank's log says nothing. */
static void log_says_dp_ranks_once(void)
{
    const char *path = "/tmp/test_sglog_dp.log";
    FILE *f = fopen(path, "w");
    for (int i = 0; i < 12; i++)
        fprintf(f, "[t DP%d TP%d EP%d] Decode batch, #running-req: 4, #token: 400, token usage: 0.00, "
                "accept len: 2.50, cuda graph: True, gen throughput (token/s): 900.00, #queue-req: 0\n",
                i % 4, i % 4, i % 4);
    fclose(f);
    char *out, cmd[512];
    snprintf(cmd, sizeof cmd, "log %s --spec-shape 3,1,4 --model models/example-llama8b.json --iterations 200", path);
    CHECK(sh(cmd, &out) == 0 && out && strstr(out, "# dp ranks     4 (DP0..DP3)"), "output: %s", out ? out : "");
    const char *n1 = out ? strstr(out, "holds 4 DP ranks") : NULL;
    CHECK(n1 && !strstr(n1 + 1, "holds 4 DP ranks"), "the DP note not said exactly once: %s", out ? out : "");
    free(out);
    CHECK(sh("log " LOG " --spec-shape 3,1,4 --model models/example-llama8b.json --iterations 200", &out) == 0 &&
          out && !strstr(out, "DP ranks"), "a one-rank log mentions DP ranks: %s", out ? out : "");
    free(out);
    remove(path);
}

/* A model file that is not a model, or a knob out of range for a logged batch, is bad input:
 * exit 2 with the file and field (a JSON array as --model once exited 1, as a failed run). */
static void log_bad_model_exits_2(void)
{
    const char *path = "/tmp/test_sglog_badmodel.json";
    FILE *f = fopen(path, "w");
    fputs("[1, 2, 3]\n", f);
    fclose(f);
    const char *cmds[] = {
        "log tests/data/sglang/server-eagle.log --model /tmp/test_sglog_badmodel.json --iterations 50",
        "log tests/data/sglang/server-eagle.log --model /nonexistent/model.json --iterations 50",
    };
    const char *want[] = {"test_sglog_badmodel.json: field (top level)", "/nonexistent/model.json"};
    for (int i = 0; i < 2; i++) {
        char *out;
        int rc = sh(cmds[i], &out);
        CHECK(rc == 2 && out && strstr(out, want[i]), "`%s` exit %d (want 2): %s", cmds[i], rc,
              out ? out : "");
        free(out);
    }
    remove(path);
}

/* The acceptance table in one pass over the intervals: it scanned every interval for every
 * batch size up to the largest logged, and 1,000 lines at #running-req 999999999 (a count
 * the reader accepts) ran past 20 s. */
static void log_table_time_does_not_grow_with_the_batch_size(void)
{
    const char *path = "/tmp/test_sglog_bigbs.log";
    FILE *f = fopen(path, "w");
    for (int i = 0; i < 1000; i++)
        fprintf(f, "[t TP0] Decode batch, #running-req: %d, #token: 900, accept len: 2.90, cuda graph: True, "
                "gen throughput (token/s): 780.00, #queue-req: 0\n", i % 2 ? 999999999 : 4);
    fclose(f);
    char *out, cmd[1024];
    snprintf(cmd, sizeof cmd, "timeout 10 %s log %s --spec-shape 3,1,4 2>&1", specsim, path);
    int rc = specsim_run_capture(cmd, &out);
    CHECK(rc == 0 && out && strstr(out, "\n      4       500      2.900") &&
          strstr(out, "\n  999999999       500      2.900"), "exit %d (124: timed out): %s", rc, out ? out : "");
    free(out);
    remove(path);
}

/* CPU seconds of the children reaped so far. */
static double children_cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_CHILDREN, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* The intervals that share a batch size, graph state and accept length share one simulation,
 * found by hash. The key list was searched linearly per interval: 1e5 intervals with 15k keys
 * spent 42% of the run there. Two logs of 10k keys (each simulated once) and 200k intervals,
 * the repeats of one key in the first, spread over every key in the second: the same
 * simulations, lines and output, but the linear search scanned ~5e3 keys per repeat in the
 * second (CPU time 1.8-1.9x the first's; by hash 0.9-1.0x). */
static void log_interval_lookup_time_does_not_grow_with_the_keys(void)
{
    /* 40k keys and 200k lines: a linear search of the keys would make the spread file many
     * times slower (~1.8x at 10k keys, where a loaded machine once gave 1.50 against the
     * 1.35 bound); the fastest of three runs each */
    char paths[2][64];
    snprintf(paths[0], sizeof paths[0], "/tmp/test_sglog_keys_one.%d.log", (int)getpid());
    snprintf(paths[1], sizeof paths[1], "/tmp/test_sglog_keys_all.%d.log", (int)getpid());
    enum { NBS = 100, NLEN = 400, NREP = 4 };
    for (int w = 0; w < 2; w++) {
        FILE *f = fopen(paths[w], "w");
        if (!f) { CHECK(0, "cannot write %s", paths[w]); return; }
        for (int r = 0; r <= NREP; r++)
            for (int k = 0; k < NBS * NLEN; k++) {
                int key = r == 0 || w == 1 ? k : 0;
                fprintf(f, "[t TP0] Decode batch, #running-req: %d, accept len: %.2f, cuda graph: True, "
                        "gen throughput (token/s): 9000.00, #queue-req: 0\n", 1 + key % NBS,
                        1 + (key / NBS) / 100.0);
            }
        fclose(f);
    }
    double cpu[2] = {1e9, 1e9};
    for (int rep = 0; rep < 3; rep++)          /* the fastest of three runs each: a loaded machine */
        for (int w = 0; w < 2; w++) {
            char cmd[1024];
            snprintf(cmd, sizeof cmd, "%s log %s --spec-shape 3,1,4 --model models/example-llama8b.json "
                     "--iterations 1 --warmup 0 --csv > /dev/null 2>&1", specsim, paths[w]);
            double c0 = children_cpu_s();
            int rc = system(cmd);
            double c = children_cpu_s() - c0;
            CHECK(rc == 0, "`%s` exit %d", cmd, rc);
            cpu[w] = c < cpu[w] ? c : cpu[w];
        }
    CHECK(cpu[1] < 1.35 * cpu[0], "CPU %.2f s with the repeats spread over 40k keys, %.2f s with them on one key "
          "(ratio %.2f)", cpu[1], cpu[0], cpu[1] / cpu[0]);
    remove(paths[0]);
    remove(paths[1]);
}

/* An accept length below 1 is no acceptance (every verify keeps its bonus token): the line
 * is left out and named; "accept len: 0.50" was simulated at alpha 0 (a prediction for an
 * interval that logged none) and the table suggested --accept-len 0.50, which run refuses. */
static void sglog_refuses_an_accept_length_below_one(void)
{
    const char *bad[] = {"0.00", "0.50", "0.99"};
    for (int i = 0; i < 3; i++) {
        char line[300], err[200] = "";
        sglog_interval iv;
        snprintf(line, sizeof line, "[t TP0] Decode batch, #running-req: 4, #token: 900, accept len: %s, "
                 "cuda graph: True, gen throughput (token/s): 780.00, #queue-req: 0", bad[i]);
        int r = sglog_parse_line(line, strlen(line), &iv, err, sizeof err);
        CHECK(r == -1 && strstr(err, "field accept len") && strstr(err, bad[i]), "accept len %s: %d, %s", bad[i],
              r, err);
    }
    const char *ok = "[t TP0] Decode batch, #running-req: 4, #token: 900, accept len: 1.00, cuda graph: True, "
                     "gen throughput (token/s): 780.00, #queue-req: 0";
    sglog_interval iv;
    char err[200] = "";
    CHECK(sglog_parse_line(ok, strlen(ok), &iv, err, sizeof err) == 1 && iv.accept_len == 1, "1.00: %s", err);
}

/* A log whose Decode batch lines all fail to parse is refused, naming the first: it was
 * reported as "a server without speculative decoding" (exit 0). */
static void log_with_no_readable_line_is_refused(void)
{
    const char *path = "/tmp/test_sglog_allbad.log";
    FILE *f = fopen(path, "w");
    for (int i = 0; i < 3; i++)
        fprintf(f, "[t TP0] Decode batch, #running-req: 4, #token: 1e400, accept len: 2.90, cuda graph: True, "
                "gen throughput (token/s): 780.00, #queue-req: 0\n");
    fclose(f);
    char *out, cmd[1024];
    snprintf(cmd, sizeof cmd, "%s log %s --spec-shape 3,1,4 2>&1", specsim, path);
    int rc = specsim_run_capture(cmd, &out);
    CHECK(rc == 2 && out && strstr(out, "every one of the 3 \"Decode batch\" lines is unparsable") &&
          strstr(out, "test_sglog_allbad.log: line 1") && !strstr(out, "without speculative decoding"),
          "exit %d: %s", rc, out ? out : "");
    free(out);
    remove(path);
}

/* Every TP rank logs the batch of its DP rank with --enable-metrics-for-all-schedulers (late-2025
 * releases gate log_decode_stats on current_scheduler_metrics_enabled()), every PP stage logs
 * each batch: one interval per DP rank and log interval is kept, that of its lowest (PP, TP)
 * rank; DP ranks stay apart, and lines without a rank (a TP 1 server) all stay. */
static void log_keeps_one_rank_of_each_dp_rank(void)
{
    const char *path = "/tmp/test_sglog_ranks.log";
    FILE *f = fopen(path, "w");
    for (int t = 0; t < 8; t++)          /* DP attention, dp 2, tp 8: DP0 on TP0..3, DP1 on TP4..7 */
        fprintf(f, "[t DP%d TP%d EP%d] Decode batch, #running-req: %d, #token: 400, token usage: 0.00, "
                "accept len: %s, cuda graph: True, gen throughput (token/s): 90%d.00, #queue-req: 0\n",
                t / 4, t, t, t < 4 ? 4 : 6, t < 4 ? "2.50" : "3.00", t);
    for (int pp = 1; pp >= 0; pp--)      /* PP 2, TP 2: PP0 TP0 kept */
        for (int t = 0; t < 2; t++)
            fprintf(f, "[t PP%d TP%d] Decode batch, #running-req: 2, #token: 400, token usage: 0.00, "
                    "accept len: 2.00, cuda graph: True, gen throughput (token/s): 500.00, #queue-req: 0\n", pp, t);
    for (int i = 0; i < 2; i++)          /* TP 1: no rank in the prefix */
        fprintf(f, "[t] Decode batch, #running-req: 1, #token: 400, token usage: 0.00, accept len: 2.00, "
                "cuda graph: True, gen throughput (token/s): 200.00, #queue-req: 0\n");
    fclose(f);
    sglog g;
    char err[300] = "";
    sglog_init(&g);
    CHECK(sglog_read(&g, path, 0, err, sizeof err) == 0 && g.n == 14, "%s: %zu intervals", err, g.n);
    CHECK(sglog_drop_rank_copies(&g) == 9 && g.n == 5 && g.rank_copies == 9, "%zu kept, %zu left out", g.n,
          g.rank_copies);
    int seen = 0;
    for (size_t i = 0; i < g.n; i++)
        seen |= g.iv[i].dp == 0 && g.iv[i].tp == 0 ? 1 : g.iv[i].dp == 1 && g.iv[i].tp == 4 ? 2 :
                g.iv[i].pp == 0 && g.iv[i].tp == 0 ? 4 : g.iv[i].tp < 0 && g.iv[i].pp < 0 ? 8 : 16;
    CHECK(seen == 15, "kept ranks mask %d (want DP0 TP0, DP1 TP4, PP0 TP0 and the rank-less lines)", seen);
    sglog_free(&g);
    char *out, cmd[512];
    snprintf(cmd, sizeof cmd, "log %s --spec-shape 3,1,4", path);
    CHECK(sh(cmd, &out) == 0 && out && strstr(out, "# rank copies  9 lines left out") &&
          strstr(out, "over 5 intervals") && strstr(out, "\n      4         1      2.500") &&
          strstr(out, "\n      6         1      3.000"), "output: %s", out ? out : "");
    free(out);
    remove(path);
}

/* Lines as log collectors store them: Ray's coloured "(SGLangEngine pid=..)" prefix, a line
 * coloured whole (ESC [ .. m around the message), Docker's json-file driver ({"log":"..\n",..}:
 * the newline escaped, the value followed by a quote), kubelet's CRI prefix, journald's
 * prefix and Windows line ends: the same fields as the bare line. */
static void sglog_reads_coloured_and_collected_lines(void)
{
#define BARE "[2025-10-10 12:00:00 TP0] Decode batch, #running-req: 8, #token: 3000, token usage: 0.02, " \
             "accept len: 2.84, accept rate: 0.71, cuda graph: True, gen throughput (token/s): 630.00, #queue-req: 5"
    static const char *lines[] = {
        "\033[36m(SGLangEngine pid=4711, ip=10.0.0.1)\033[0m " BARE,
        "\033[32m" BARE "\033[0m",
        "{\"log\":\"" BARE "\\n\",\"stream\":\"stdout\",\"time\":\"2025-10-10T12:00:00.1Z\"}",
        "2025-10-10T12:00:00.123456789Z stdout F " BARE,
        "Oct 10 12:00:00 gpu7 python3[4711]: " BARE,
        BARE "\r",
    };
#undef BARE
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        sglog_interval iv;
        char err[200] = "";
        int r = sglog_parse_line(lines[i], strlen(lines[i]), &iv, err, sizeof err);
        CHECK(r == 1 && iv.running_req == 8 && iv.kv_tokens == 3000 && fabs(iv.accept_len - 2.84) < 1e-9 &&
              iv.cuda_graph == 1 && fabs(iv.gen_tok_s - 630) < 1e-9 && iv.queue_req == 5 && iv.tp == 0,
              "line %zu: %d %s: bs %d len %g tok/s %g queue %d tp %d", i, r, err, iv.running_req, iv.accept_len,
              iv.gen_tok_s, iv.queue_req, iv.tp);
    }
}

/* A Decode batch line is one whose message starts with "Decode batch" (after SGLang's "[time
 * TP0] " prefix and whatever a collector put before it). The text anywhere in a line was
 * counted: a prompt logged by --log-requests that quotes a log line (a repr in quotes), or a
 * message that merely mentions it, became a batch of 4 at 780 tok/s. */
static void sglog_counts_only_lines_whose_message_is_a_decode_batch(void)
{
#define Q "[2025-11-03 10:01:05 TP0] Decode batch, #running-req: 4, #token: 900, token usage: 0.01, " \
          "accept len: 2.90, cuda graph: True, gen throughput (token/s): 780.00, #queue-req: 0"
    static const char *quoted[] = {
        "[2025-11-03 10:01:06] Receive: obj=GenerateReqInput(text='why is it slow? " Q "', sampling_params={})",
        "[2025-11-03 10:01:06 TP0] Finish: obj=GenerateReqInput(rid='a'), out={'text': \"" Q "\"}",
        "{\"log\":\"[2025-11-03 10:01:06] Receive: obj=GenerateReqInput(text='" Q "')\\n\",\"stream\":\"stdout\"}",
        "[2025-11-03 10:01:06] Receive: obj=GenerateReqInput(text='x\\n" Q "\\n')",
        "[2025-11-03 10:01:06 TP0] Scheduler hit an exception: bad Decode batch, #running-req: 4, "
        "gen throughput (token/s): 780.00, #queue-req: 0",
        "Traceback: Decode batch, #running-req: 4, gen throughput (token/s): 780.00, #queue-req: 0",
    };
#undef Q
    for (size_t i = 0; i < sizeof quoted / sizeof quoted[0]; i++) {
        sglog_interval iv;
        char err[200] = "";
        int r = sglog_parse_line(quoted[i], strlen(quoted[i]), &iv, err, sizeof err);
        CHECK(r == 0, "line %zu read as a Decode batch line (%d, bs %d, %s): %s", i, r, iv.running_req, err,
              quoted[i]);
    }
    /* still read: a bare message, a kubectl --prefix tag, colour between prefix and message */
    static const char *kept[] = {
        "Decode batch, #running-req: 4, gen throughput (token/s): 780.00, #queue-req: 0",
        "  \033[32mDecode batch, #running-req: 4, gen throughput (token/s): 780.00, #queue-req: 0",
        "[pod/sglang-0/server] [2025-11-03 10:01:05 TP3] Decode batch, #running-req: 4, "
        "gen throughput (token/s): 780.00, #queue-req: 0",
        "\033[33m[2025-11-03 10:01:05 TP3]\033[0m Decode batch, #running-req: 4, "
        "gen throughput (token/s): 780.00, #queue-req: 0",
    };
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++) {
        sglog_interval iv;
        char err[200] = "";
        int r = sglog_parse_line(kept[i], strlen(kept[i]), &iv, err, sizeof err);
        CHECK(r == 1 && iv.running_req == 4 && iv.tp == (i >= 2 ? 3 : -1), "line %zu: %d %s: bs %d tp %d", i, r,
              err, iv.running_req, iv.tp);
    }
    /* a log of one batch line and a quoting prompt: one interval, one other line */
    const char *path = "/tmp/test_sglog_quoted.log";
    FILE *f = fopen(path, "w");
    fprintf(f, "%s\n%s\n", DECODE_LINE, quoted[0]);
    fclose(f);
    sglog g;
    char err[600] = "";
    sglog_init(&g);
    CHECK(sglog_read(&g, path, 0, err, sizeof err) == 0 && g.n == 1 && g.decode_lines == 1 && g.other_lines == 1 &&
          g.bad_lines == 0, "%s: intervals %zu decode %zu other %zu bad %zu", err, g.n, g.decode_lines,
          g.other_lines, g.bad_lines);
    sglog_free(&g);
    remove(path);
}

/* The ServerArgs repr is read as a Python literal: strings holding commas, parentheses, quotes
 * and '=' (json_model_override_args), reprs in fields (lora_paths=[LoRARef(..)] of 0.5.4,
 * sglang issue 12726), enums and sets do not move the fields; a line cut inside the repr (a
 * collector splitting a long line) is refused, naming the line, where it once read
 * cuda_graph_max_bs=16 of 160. */
static void server_args_repr_is_read_whole_and_a_cut_line_refused(void)
{
    const char *line = "[2025-11-03 10:00:00] server_args=ServerArgs(model_path='m', "
        "json_model_override_args='{\"note\": \"x, tp_size=1, (y)\", \"it\\'s\": [1, 2]}', "
        "served_model_name=\"it's, cuda_graph_max_bs=8\", lora_paths=[LoRARef(lora_id='a', "
        "lora_name='fr, tp_size=2', lora_path='/x(1)', pinned=False)], mode=<Mode.EAGLE: 2>, "
        "locked={('decode', 'max_bs')}, tp_size=8, speculative_algorithm='EAGLE3', speculative_num_steps=3, "
        "speculative_eagle_topk=1, speculative_num_draft_tokens=4, cuda_graph_max_bs=160, cuda_graph_bs=None, "
        "disable_cuda_graph=False, hicache_ratio=2.0, extra={'a': {'b': (1, 2)}, 3: None})";
    pm_shape sp;
    char err[400] = "";
    CHECK(phasemap_shape_repr(&sp, line, strlen(line), "server.log: line 1", err, sizeof err) == 0 &&
          sp.known && sp.steps == 3 && sp.topk == 1 && sp.draft_tokens == 4 && sp.tp_size == 8 &&
          sp.ngraph_bs > 0 && sp.graph_bs[sp.ngraph_bs - 1] == 160 && sp.cuda_graph == 1,
          "%s: known %d steps %d tp %d graphs %d (last %d)", err, sp.known, sp.steps, sp.tp_size, sp.ngraph_bs,
          sp.ngraph_bs ? sp.graph_bs[sp.ngraph_bs - 1] : 0);
    /* cut after "cuda_graph_max_bs=16" */
    const char *cutp = strstr(line, "cuda_graph_max_bs=160") + strlen("cuda_graph_max_bs=16");
    err[0] = 0;
    CHECK(phasemap_shape_repr(&sp, line, (size_t)(cutp - line), "server.log: line 1", err, sizeof err) == -1 &&
          strstr(err, "server.log: line 1") && strstr(err, "ends inside ServerArgs") &&
          strstr(err, "--server-args"), "cut line: %s", err);
    /* cut inside a string value */
    cutp = strstr(line, "fr, tp_size");
    err[0] = 0;
    CHECK(phasemap_shape_repr(&sp, line, (size_t)(cutp - line), "x", err, sizeof err) == -1 &&
          strstr(err, "ends inside ServerArgs"), "cut in a string: %s", err);
    /* specsim log says the shape was not read, and why */
    const char *path = "/tmp/test_sglog_cut.log";
    FILE *f = fopen(path, "w");
    fprintf(f, "%.*s\n" DECODE_LINE "\n", (int)(strstr(line, "cuda_graph_max_bs=160") + 20 - line), line);
    fclose(f);
    char *out, cmd[512];
    snprintf(cmd, sizeof cmd, "log %s", path);
    CHECK(sh(cmd, &out) == 0 && out && strstr(out, "# shape        not read from the log") &&
          strstr(out, "test_sglog_cut.log: line 1") && strstr(out, "ends inside ServerArgs"), "output: %s",
          out ? out : "");
    free(out);
    remove(path);
}

/* Releases before mid-2025 log no "cuda graph:" field (scheduler.py log_decode_stats,
 * "Decode batch. #running-req: N, #token: T, token usage: U, accept len: A, gen throughput
 * (token/s): G, #queue-req: Q, "): such an interval takes the server's graph state from its
 * arguments; a --disable-cuda-graph server's intervals were predicted with graphs. */
static void log_lines_without_a_graph_field_follow_the_server_args(void)
{
    const char *path = "/tmp/test_sglog_v1.log";
    for (int off = 0; off < 2; off++) {
        FILE *f = fopen(path, "w");
        fprintf(f, "[2025-02-10 11:59:00] server_args=ServerArgs(model_path='m', tp_size=1, "
                "speculative_algorithm='EAGLE', speculative_num_steps=3, speculative_eagle_topk=1, "
                "speculative_num_draft_tokens=4, cuda_graph_max_bs=160, disable_cuda_graph=%s)\n"
                "[2025-02-10 12:00:00] Decode batch. #running-req: 4, #token: 3000, token usage: 0.02, "
                "accept len: 2.81, gen throughput (token/s): 600.12, #queue-req: 0, \n", off ? "True" : "False");
        fclose(f);
        char *out, cmd[512];
        snprintf(cmd, sizeof cmd, "log %s --model models/example-llama8b.json --iterations 100 --csv", path);
        char want[64];
        snprintf(want, sizeof want, "%s,2,4,%d,2.81,600.12,", path, !off);
        CHECK(sh(cmd, &out) == 0 && out && strstr(out, want), "disable_cuda_graph %d: want %s in: %s", off, want,
              out ? out : "");
        free(out);
    }
    remove(path);
}

int main(int argc, char **argv)
{
    (void)argc;
    specsim_bin_find(argv[0], specsim, sizeof specsim);
    RUN(sglog_reads_every_release_variant);
    RUN(sglog_counts_lines_and_refuses_a_log_without_decode_lines);
    RUN(sglog_refuses_nan_and_inf);
    RUN(sglog_reads_cpu_and_npu_graph);
    RUN(sglog_reads_past_a_line_over_the_limit);
    RUN(sglog_reads_the_line_after_a_hole_of_nuls);
    RUN(sglog_leaves_out_a_last_line_cut_short);
    RUN(sglog_reads_a_cut_gzip_log_up_to_its_last_whole_line);
    RUN(log_reads_the_shape_from_the_logged_server_args);
    RUN(sglog_takes_the_server_args_only_from_the_servers_line);
    RUN(log_reads_a_log_beside_an_ngram_server_args);
    RUN(log_predicts_with_every_captured_size_of_a_long_list);
    RUN(log_alpha_reproduces_the_accept_length);
    RUN(log_predictions_match_specsim_run);
    RUN(log_flags_idle_intervals);
    RUN(log_bad_model_exits_2);
    RUN(log_says_dp_ranks_once);
    RUN(log_table_time_does_not_grow_with_the_batch_size);
    RUN(log_interval_lookup_time_does_not_grow_with_the_keys);
    RUN(log_with_no_readable_line_is_refused);
    RUN(log_accept_len_at_the_limit_is_read_below_it);
    RUN(sglog_refuses_an_accept_length_below_one);
    RUN(log_keeps_one_rank_of_each_dp_rank);
    RUN(sglog_reads_coloured_and_collected_lines);
    RUN(sglog_counts_only_lines_whose_message_is_a_decode_batch);
    RUN(server_args_repr_is_read_whole_and_a_cut_line_refused);
    RUN(log_lines_without_a_graph_field_follow_the_server_args);
    return check_done();
}
