/* test_sglog: SGLang server logs (models/sglog) and `specsim log` (sim/logcmd): every
 * Decode batch variant of the releases parses to the same fields, other lines are counted,
 * a log without Decode batch lines is refused, the alpha printed for an accept length
 * reproduces it through the closed form, and the predictions are what `specsim run` says
 * for the same batch, accept length and graph state. */
#include "check.h"
#include "sglog.h"
#include "specsim_bin.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

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

int main(int argc, char **argv)
{
    (void)argc;
    specsim_bin_find(argv[0], specsim, sizeof specsim);
    RUN(sglog_reads_every_release_variant);
    RUN(sglog_counts_lines_and_refuses_a_log_without_decode_lines);
    RUN(log_alpha_reproduces_the_accept_length);
    RUN(log_predictions_match_specsim_run);
    RUN(log_flags_idle_intervals);
    RUN(log_bad_model_exits_2);
    return check_done();
}
