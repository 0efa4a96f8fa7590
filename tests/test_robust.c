/* test_robust: nonsense in, a clear refusal out (issue 17), through the binaries as a user
 * runs them. Each case is one that a fuzzer once found doing something else: a number out
 * of proportion overflowing the simulator's ns (or wrapping a cast and making a slower
 * link faster), GSL aborting on a huge output length, a metric printed as inf, a warmup
 * longer than the run printing zeros with exit 0, a reader of /dev/zero never stopping, a
 * FIFO given as -o replaced by a regular file. Each must now exit 2 with the file or flag,
 * the field and the value, within seconds. Runs from the repository root. */
#include "check.h"
#include "specsim_bin.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char specsim[512] = "bin/specsim", specprof[512] = "bin/specprof";
static char dir[64];

/* Runs cmd (stderr too when both) with `timeout 60`; its exit status and output. */
static int sh(const char *cmd, int both, char **out)
{
    char full[4096];
    snprintf(full, sizeof full, "timeout 60 %s %s", cmd, both ? "2>&1" : "2>/dev/null");
    return specsim_run_capture(full, out);
}

static void write_file(const char *name, const char *text)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    CHECK(specsim_write_text(path, text) == 0, "cannot write %s", path);
}

/* A small model; VERIFY_BASE and GRAPH_LAUNCH are replaced (one verify cost, one launch). */
static const char *model_tmpl =
    "{\"specsim_model\": 1, \"name\": \"robust\", \"ranks\": 1,\n"
    " \"launch\": {\"graph_launch_us\": GRAPH_LAUNCH, \"eager_launch_us\": 4},\n"
    " \"phases\": {\n"
    "  \"draft\": {\"host_gap_us\": 5, \"groups\": [{\"name\": \"d\", \"count\": 10, \"base_us\": 40}]},\n"
    "  \"verify\": {\"host_gap_us\": 20, \"groups\": [{\"name\": \"v\", \"count\": 200,"
    " \"base_us\": VERIFY_BASE, \"per_token_us\": 1.0}],\n"
    "   \"collectives\": [{\"op\": \"allreduce\", \"count\": 64, \"bytes_per_token\": 8192}]},\n"
    "  \"accept\": {\"host_gap_us\": 8, \"groups\": [{\"name\": \"a\", \"count\": 5, \"base_us\": 15}]},\n"
    "  \"extend\": {\"host_gap_us\": 8, \"groups\": [{\"name\": \"e\", \"count\": 10, \"base_us\": 50}]}\n"
    " }}\n";

static void write_model(const char *name, const char *verify_base, const char *graph_launch)
{
    char text[4096], *o = text;
    for (const char *p = model_tmpl; *p && o < text + sizeof text - 64;) {
        if (!strncmp(p, "VERIFY_BASE", 11)) {
            o += sprintf(o, "%s", verify_base);
            p += 11;
        } else if (!strncmp(p, "GRAPH_LAUNCH", 12)) {
            o += sprintf(o, "%s", graph_launch);
            p += 12;
        } else {
            *o++ = *p++;
        }
    }
    *o = '\0';
    write_file(name, text);
}

/* cmd (%S: specsim, %P: specprof, %D: the directory) exits `want` and its output names
 * want1 and want2 (NULL: anything). */
static void expect(int want, const char *cmd, const char *want1, const char *want2)
{
    char full[2048], *o = full, *out = NULL;
    for (const char *p = cmd; *p && o < full + sizeof full - 600;) {
        if (p[0] == '%' && (p[1] == 'S' || p[1] == 'P' || p[1] == 'D')) {
            o += sprintf(o, "%s", p[1] == 'S' ? specsim : p[1] == 'P' ? specprof : dir);
            p += 2;
        } else {
            *o++ = *p++;
        }
    }
    *o = '\0';
    int rc = sh(full, 1, &out);
    CHECK(rc == want, "`%s` exited %d (want %d): %.600s", full, rc, want, out ? out : "");
    CHECK(out && (!want1 || strstr(out, want1)) && (!want2 || strstr(out, want2)),
          "`%s`: output \"%.600s\" should name \"%s\" and \"%s\"", full, out ? out : "",
          want1 ? want1 : "", want2 ? want2 : "");
    free(out);
}

/* Numbers out of proportion: refused where they enter, with the range. */
static void robust_numbers_out_of_range_exit_2(void)
{
    write_model("ok.json", "900", "7");
    write_model("cost1e300.json", "1e300", "7");
    write_model("launch1e300.json", "900", "1e300");
    write_file("slowlink.json", "{\"specsim_link\": 1, \"latency_us\": 1e300, \"bw_gbps\": 40, "
               "\"floor_us\": 10}");
    write_file("thinlink.json", "{\"specsim_link\": 1, \"latency_us\": 5, \"bw_gbps\": 1e-300, "
               "\"floor_us\": 10}");
    write_file("explen.json", "{\"output_len\": \"exp:1e12\"}");
    /* a key given twice: cJSON kept the first, silently (a model file refuses it) */
    write_file("twicelink.json", "{\"specsim_link\": 1, \"latency_us\": 5, \"bw_gbps\": 40, "
               "\"floor_us\": 10, \"bw_gbps\": 4}");
    const struct { const char *cmd, *w1, *w2; } c[] = {
        /* a verify costing 1e300 us once ran faster than the example (the ns sum wrapped) */
        {"%S run --model %D/cost1e300.json", "cost1e300.json: field phases.verify.groups[0].base_us: "
         "value 1e+300", "out of range"},
        /* negative TPOT from a 1e300 graph launch */
        {"%S run --model %D/launch1e300.json", "field launch.graph_launch_us: value 1e+300",
         "[0, 10000000] us"},
        /* a slower link made the run 119x faster */
        {"%S run --model %D/ok.json --ranks 4 --link alpha=1e308,beta=40", "alpha=1e308",
         "out of range"},
        {"%S run --model %D/ok.json --ranks 4 --link %D/slowlink.json", "field latency_us: value 1e+300",
         "out of range"},
        {"%S run --model %D/ok.json --ranks 4 --link %D/thinlink.json", "field bw_gbps: value 1e-300",
         "[0.001, 100000] GB/s"},
        {"%S run --model %D/ok.json --ranks 4 --link %D/twicelink.json", "twicelink.json: field bw_gbps",
         "given twice"},
        {"%S run --model %D/ok.json --graph-launch-us 1e300", "--graph-launch-us", "value 1e300"},
        /* pad + 1 overflowed the cost cache's size */
        {"%S run --model %D/ok.json --cuda-graph-bs 2147483647", "2147483647", "[1, 65536]"},
        {"%S run --model %D/ok.json --cuda-graph-bs sglang:2147483647", "sglang:2147483647",
         "[1, 65536]"},
        {"%S run --model %D/ok.json --concurrency 100000", "--concurrency", "value 100000"},
        /* GSL aborted in gsl_rng_uniform_int (n > 2^32) */
        {"%S run --model %D/ok.json --output-len exp:1e12", "exp:1e12", "out of range"},
        {"%S run --model %D/ok.json --output-len 5000000000", "5000000000", "out of range"},
        {"%S run --model %D/ok.json --output-len uniform:1:5000000000", "uniform:1:5000000000",
         "out of range"},
        {"%S run --model %D/ok.json --config %D/explen.json", "explen.json: field output-len",
         "exp:1e12"},
        {"%S sweep --model %D/ok.json --iterations 10 --grid output-len=512,exp:1e12", "output-len",
         "exp:1e12"},
        /* grid ranges: lo + i * step and hi - lo overflowed */
        {"%S sweep --model %D/ok.json --iterations 10 --grid seed=9223372036854775806..9223372036854775807",
         "seed", "out of range"},
        {"%S run --model %D/ok.json --prompt-len 1e10", "--prompt-len", "value 1e10"},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
        expect(2, c[i].cmd, c[i].w1, c[i].w2);
    /* a step of 2^63 - 1 is one value, not an overflow */
    expect(0, "%S sweep --model %D/ok.json --iterations 10 --no-baseline --quiet "
              "--grid topk=1..1:9223372036854775807", "topk", NULL);
}

/* Results a user sees are finite, with throughput; else a clear refusal. */
static void robust_no_result_is_an_error(void)
{
    write_model("zero.json", "0", "0");
    write_file("zero2.json",
               "{\"specsim_model\": 1, \"name\": \"zero\", \"phases\": {"
               "\"verify\": {\"groups\": [{\"name\": \"v\", \"count\": 1, \"base_us\": 0}]},"
               "\"accept\": {\"groups\": [{\"name\": \"a\", \"count\": 1, \"base_us\": 0}]},"
               "\"draft\": {\"groups\": [{\"name\": \"d\", \"count\": 1, \"base_us\": 0}]},"
               "\"extend\": {\"groups\": [{\"name\": \"e\", \"count\": 1, \"base_us\": 0}]}}}");
    /* a model of all zeros printed req_tok_s inf, then "no throughput" without the file */
    expect(2, "%S run --model %D/zero2.json --iterations 50", "zero2.json: field phases",
           "every phase costs 0 us");
    expect(2, "%S run --model %D/zero2.json --iterations 50 --json", "zero2.json: field phases", NULL);
    expect(2, "%S sweep --model %D/zero2.json --iterations 50 --grid steps=1,2", "zero2.json: field phases", NULL);
    /* a window in which no request finished: per-request metrics from the running ones,
     * said on stderr (also for --csv and --json, where only the partial column showed it) */
    write_model("ok.json", "900", "7");
    expect(0, "%S run --model %D/ok.json --output-len 100000 --iterations 50 --csv",
           "warning: spec: no request finished in the measured window (50 iterations)", NULL);
    expect(0, "%S sweep --model %D/ok.json --output-len 100000 --iterations 50 --grid steps=1,2",
           "warning: in 3 of 3 runs no request finished", NULL);
    /* a warmup longer than a finite run printed every metric 0 and speedup 0.0000 */
    write_model("ok.json", "900", "7");
    expect(2, "%S run --model %D/ok.json --requests 5 --warmup 100000", "field warmup: value 100000",
           "no measured window");
    expect(2, "%S sweep --model %D/ok.json --requests 5 --warmup 100000 --grid steps=1,2",
           "configuration 0 (steps=1", "no measured window");
    /* a benchmark shorter than one iteration: --seconds 1e-9 printed "tok_s_p90 is inf ...
     * the model's costs are degenerate", 1e-5 a p90 of 1.3e8 tok/s with exit 0 */
    expect(2, "%S run --model %D/ok.json --iterations 50 --seconds 1e-9", "field seconds: value 1e-09",
           "shorter than one iteration");
    expect(2, "%S run --model %D/ok.json --iterations 50 --seconds 1e-5", "field seconds: value 1e-05",
           "shorter than one iteration");
    expect(2, "%S sweep --model %D/ok.json --iterations 50 --seconds 1e-5 --grid steps=1,2",
           "field seconds: value 1e-05", "shorter than one iteration");
    expect(0, "%S run --model %D/ok.json --iterations 50 --seconds 0.3", "tok_s_p10", NULL);
    /* the engine's own limits, for values each within its range: 1e6 us per 1000 KV tokens
     * x 1e9 tokens of context is 1e12 us a verify (in ns below 2^53, but 2400 of them pass
     * 73 years); at concurrency 10, 1e13 us for one verify is past the limit of one
     * duration */
    write_file("kvslow.json",
               "{\"specsim_model\": 1, \"name\": \"kv\", \"phases\": {"
               "\"verify\": {\"groups\": [{\"name\": \"v\", \"count\": 1, \"base_us\": 10,"
               " \"per_kv_ktoken_us\": 1e6}]},"
               "\"accept\": {\"groups\": [{\"name\": \"a\", \"count\": 1, \"base_us\": 10}]},"
               "\"extend\": {\"groups\": [{\"name\": \"e\", \"count\": 1, \"base_us\": 10}]}}}");
    expect(2, "%S run --model %D/kvslow.json --prompt-len 1e9 --output-len 1000000000 --iterations 100000 "
              "--warmup 0 --no-baseline --steps 1", "horizon", NULL);
    expect(2, "%S run --model %D/kvslow.json --prompt-len 1e9 --concurrency 10 --iterations 10 "
              "--no-baseline --steps 1", "limit", "one duration");
}

/* Every reader stops at its cap: /dev/zero once read 2.2 GB in 4 s. */
static void robust_readers_stop_on_dev_zero(void)
{
    write_model("ok.json", "900", "7");
    const struct { const char *cmd, *w1, *w2; } c[] = {
        {"%P check /dev/zero", "/dev/zero: line 1: longer than 1048576 bytes", NULL},
        {"%S run --model /dev/zero", "/dev/zero", "larger than"},
        {"%S run --model %D/ok.json --config /dev/zero", "/dev/zero", "larger than"},
        {"%S run --model %D/ok.json --ranks 2 --link /dev/zero", "/dev/zero", "larger than"},
        {"%S fit-allreduce /dev/zero -o %D/l.json", "/dev/zero", "longer than"},
        /* the preset readers read 1 MiB and said "invalid JSON" (of a directory too) */
        {"%S scale models/example-llama8b.json --from specbench-llama8b --llm /dev/zero -o %D/s.json",
         "field --llm: /dev/zero: larger than", NULL},
        {"%S scale models/example-llama8b.json --from /tmp --llm llama-3.1-70b -o %D/s.json",
         "field --from: /tmp", "Is a directory"},
        {"%S fit --from-model models/example-llama8b.json --carry-to /dev/zero -o %D/c.json",
         "field --carry-to", "/dev/zero: larger than"},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
        expect(2, c[i].cmd, c[i].w1, c[i].w2);
}

/* A specprof trace re-written on one line (json.dump, jq -c; the bundled call 13 kernel
 * extract is one 23 MB line) was called "a binary file, /dev/zero?": it is named as JSON on
 * one line, with the way to one event per line. */
static void robust_one_line_json_trace_is_named(void)
{
    const char *ev = "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,"
                     "\"ts\":1.000,\"dur\":1.000},";
    size_t n = 1 + 1200000 / strlen(ev) * strlen(ev) + 64, len = 0;
    char *text = malloc(n + 256);
    CHECK(text != NULL, "out of memory");
    if (!text)
        return;
    len += (size_t)sprintf(text, "[{\"ph\":\"M\",\"cat\":\"meta\",\"name\":\"specprof_header\","
                                 "\"pid\":0,\"tid\":0,\"ts\":0,\"args\":{\"format_version\":1}},");
    while (len + strlen(ev) < n) {
        memcpy(text + len, ev, strlen(ev));
        len += strlen(ev);
    }
    strcpy(text + len - 1, "]");
    write_file("oneline.json", text);
    free(text);
    expect(2, "%S import %D/oneline.json", "oneline.json: line 1: longer than 1048576 bytes",
           "JSON written on one line");
    expect(2, "%S fit %D/oneline.json -o %D/m.json", "oneline.json", "jq -c");
}

/* A main job says a warning once: the fit of a torch trace said "measured spread ... capped"
 * in 22 lines, one per group; now one line with the count and the largest. */
static void robust_fit_says_capped_spreads_once(void)
{
    expect(0, "%S fit traces/torch/calib/calib_torch-dense.json.gz -o %D/torch.json --quiet 2>&1 | "
              "grep -c 'measured spread' | sed 's/^/spread lines: /'", "spread lines: 1\n", NULL);
    expect(0, "%S fit traces/torch/calib/calib_torch-dense.json.gz -o %D/torch.json --quiet",
           "warning: 22 groups: measured spread of their cost capped at 0.30", "the largest");
}

/* -o given a FIFO: written through it, not replaced by a regular file (fit --carry-to goes
 * through wm_save like fit, fit-allreduce through its own writer). */
static void robust_output_to_a_fifo_stays_a_fifo(void)
{
    char fifo[128], got[128], cmd[1024], *out = NULL;
    snprintf(fifo, sizeof fifo, "%s/out.fifo", dir);
    snprintf(got, sizeof got, "%s/got.json", dir);
    const char *writers[] = {
        "%s fit --from-model models/example-llama8b.json --carry-to models/presets/h200-sxm.json "
        "--quiet -o %s",
        "%s fit-allreduce --quiet tests/data/arsweep-3size.csv -o %s",
        /* scale read its FIFO back and hung (-o /dev/stdout | jq) */
        "%s scale models/example-llama8b.json --from specbench-llama8b --llm llama-3.1-70b "
        "--quiet -o %s",
    };
    for (size_t i = 0; i < sizeof writers / sizeof writers[0]; i++) {
        unlink(fifo);
        unlink(got);
        CHECK(mkfifo(fifo, 0600) == 0, "mkfifo %s", fifo);
        /* a reader at the other end, as `specsim ... -o /dev/stdout | jq` would have */
        char rd[512];
        snprintf(rd, sizeof rd, "timeout 30 cat %s > %s &", fifo, got);
        CHECK(system(rd) == 0, "reader");
        char tail[600];
        snprintf(tail, sizeof tail, writers[i], specsim, fifo);
        snprintf(cmd, sizeof cmd, "%s", tail);
        int rc = sh(cmd, 1, &out);
        CHECK(rc == 0, "`%s` exited %d: %s", cmd, rc, out ? out : "");
        free(out);
        /* a writer that failed before opening the FIFO (its input missing) left the reader
         * waiting 30 s for one, holding the output of whoever runs this test: an end of file */
        for (int w = 0; rc != 0 && w < 50; w++) {
            int fd = open(fifo, O_WRONLY | O_NONBLOCK);   /* ENXIO until the reader opens it */
            if (fd >= 0) {
                close(fd);
                break;
            }
            usleep(20000);
        }
        struct stat st;
        CHECK(stat(fifo, &st) == 0 && S_ISFIFO(st.st_mode), "`%s`: the FIFO was replaced", cmd);
        for (int w = 0; w < 100; w++) {   /* the reader finishes once the writer closed */
            if (stat(got, &st) == 0 && st.st_size > 0)
                break;
            usleep(20000);
        }
        CHECK(stat(got, &st) == 0 && st.st_size > 100, "`%s`: nothing came through the FIFO", cmd);
    }
    unlink(fifo);
    /* -o /dev/null: written, not read back ("does not load back: the file is empty", exit 2) */
    expect(0, "%S scale models/example-llama8b.json --from specbench-llama8b --llm llama-3.1-70b "
              "--quiet -o /dev/null && echo scaled", "scaled", NULL);
}


/* fit-allreduce on a line of 2 points for 2 parameters wrote null standard errors and
 * said nothing: it says which could not be estimated and why, on stderr and in the file. */
static void robust_fit_allreduce_says_what_it_cannot_estimate(void)
{
    expect(0, "%S fit-allreduce --quiet tests/data/arsweep-3size.csv -o %D/l3.json",
           "warning: latency_sd_us, bw_sd_gbps not estimable: the line holds 2 points for its 2 "
           "parameters", "floor_sd_us not estimable");
    expect(0, "cat %D/l3.json", "\"sd_note\":", "\"bw_sd_gbps\":\tnull");
}


/* The fit: an under-determined group (4 measurements, 5 terms) once reached the solver and
 * left a -nan model at -o (exit 2) or an all-zero one (exit 0): it was refused (2026-12-03),
 * and since 2026-12-04 (torchbench's accept "(gpu idle in phase)" group, seen in 4 of 15
 * configurations, made the whole fit fail) the terms the measurements cannot determine are
 * left out, said once, and the model is finite. A range's tokens=1e30 was fitted;
 * forwards=1e9 overflowed an int; /dev/zero read without bound: each is refused with the
 * range, and nothing is left at -o (an existing file stays as it was). */
static void robust_fit_refuses_and_leaves_no_file(void)
{
    char path[160];
    snprintf(path, sizeof path, "%s/fit.json", dir);
    unlink(path);
    expect(0, "%S fit tests/data/fit-underdetermined.json -o %D/fit.json --quiet",
           "phase verify: group k0 gemm: seen in 3 configurations", "1 term(s) left out");
    expect(1, "grep -ci nan %D/fit.json", "0", NULL);
    unlink(path);
    write_file("fit.json", "old");
    expect(2, "%S fit tests/fuzz/regress/fit/range-tokens-1e30.json -o %D/fit.json --quiet",
           "field tokens: value 1e+30: out of range", "[0, 1000000000] tokens");
    expect(2, "%S fit tests/fuzz/regress/fit/range-forwards-1e9.json -o %D/fit.json --quiet",
           "field forwards: value 1000000000: out of range", NULL);
    expect(2, "%S fit /dev/zero -o %D/fit.json --quiet", "/dev/zero: not a trace this reader knows", NULL);
    expect(0, "cat %D/fit.json", "old", NULL);
    /* a bad --carry-to was found after the whole fit (its tables printed); --carry-from
     * without --carry-to was ignored */
    expect(0, "%S fit traces/torch/calib/calib_torch-dense.json.gz -o %D/fit.json --carry-to nonexist "
              "2>&1 | grep -c 'GPU time per forward' | sed 's/^/fit tables: /'", "fit tables: 0\n", NULL);
    expect(2, "%S fit traces/torch/calib/calib_torch-dense.json.gz -o %D/fit.json --carry-to nonexist",
           "field --carry-to: hardware preset nonexist", "cannot open");
    expect(2, "%S fit traces/torch/calib/calib_torch-dense.json.gz -o %D/fit.json --carry-from h200-sxm",
           "field --carry-from: value h200-sxm", "only with --carry-to");
    /* -o a directory, or in one that does not exist: found before the fit, not after it
     * ("cannot rename into place: Is a directory", exit 1) */
    expect(2, "%S fit traces/torch/calib/calib_torch-dense.json.gz -o %D", "field --out:",
           "a directory");
    expect(0, "%S fit traces/torch/calib/calib_torch-dense.json.gz -o %D/none/m.json 2>&1 | "
              "grep -c 'GPU time per forward' | sed 's/^/fit tables: /'", "fit tables: 0\n", NULL);
    expect(2, "%S scale models/example-llama8b.json --from specbench-llama8b --llm llama-3.1-70b "
              "-o %D/none/s.json", "field --out:", "cannot write in");
    /* the first 1000 bytes of a capture (a header, no phase): qsort got NULL (make asan) */
    expect(2, "gzip -dc traces/calib/calib_llama8b.json.gz | head -c 1000 > %D/head.json; "
              "%S fit %D/head.json -o %D/fit.json --quiet", "head.json: no phase instance", NULL);
}

/* specprof merge, output onto an input: -o the .part of a cut rank file read its own output
 * without end (59 GB in 10 minutes; here the file size limit and timeout stop it at once), -o
 * the rank file itself replaced it by the merge. Both refused, the input left as it was. A
 * capture met twice (a copy, a link) had its events twice; a skipped rank file (another
 * format version) gave exit 0. Now: merged once, exit 1 with the file named. */
static void robust_specprof_merge_refuses_its_inputs_and_copies(void)
{
    expect(0, "mkdir -p %D/m && cp traces/demo/c_demo.json %D/m/specprof.rank0.pid1.json.part && echo ok", "ok", NULL);
    expect(2, "sh -c 'ulimit -f 20000; exec timeout 10 %P merge %D/m -o %D/m/specprof.rank0.pid1.json'",
           "/m/specprof.rank0.pid1.json: is (or is written through) the input", "rank0.pid1.json.part;");
    expect(2, "%P merge %D/m -o %D/m/specprof.rank0.pid1.json.part", "is (or is written through) the input", NULL);
    /* -o a directory or "": the whole merge ran, then "rename ... Is a directory", a .part left */
    expect(2, "%P merge %D/m -o %D/m", "/m\": a directory; give a file name", NULL);
    expect(2, "%P merge %D/m -o ''", "-o \"\": empty", NULL);
    expect(0, "cmp traces/demo/c_demo.json %D/m/specprof.rank0.pid1.json.part && ls %D/m && ls -a %D . | grep part | wc -l",
           "rank0.pid1.json.part\n0\n", NULL);
    expect(2, "%P merge %D/m %D/m", "expected one directory", "got 2 arguments");
    expect(1, "cp traces/demo/c_demo.json %D/m/specprof.rank0.pid2.json && %P merge %D/m",
           "skip specprof.rank0.pid2.json: the same capture as specprof.rank0.pid1.json.part", "1 skipped");
    expect(0, "%P check %D/m/merged.json", "1203 records", NULL);
    expect(1, "rm %D/m/specprof.rank0.pid1.json.part; sed '2s/\"format_version\":1/\"format_version\":7/; "
              "2s/\"pid_os\":1063/\"pid_os\":1064/' traces/demo/c_demo.json > %D/m/specprof.rank1.pid3.json && "
              "%P merge %D/m", "rank1.pid3.json: line 2: field format_version: value 7", "1 file in");
}

/* specprof's own options, refused before the command runs (exit 2, the option and value):
 * --delay "" and nan ran with no delay; --signal-start 9 (SIGKILL: specprof was killed by
 * it) and 15 (forwarded as a termination, never a start) were taken; --phases a,,b was
 * replaced by the default phases in every process, with a note from each; an -o too long
 * lost its reason in a cut message; an -o directory not writable ran the command to write
 * nothing. A command that cannot run got the list of reasons why no
 * trace was written; now one line and the shell's 127/126. */
static void robust_specprof_launcher_refuses_bad_options(void)
{
    /* make asan: the launcher dlopens libspecprof.so once to check it loads, and the C++
     * runtime that brings keeps a 72 KiB pool for the process's life (tests/lsan.supp); a
     * malloc's full stack is needed to see its _dl_init frame */
    setenv("ASAN_OPTIONS", "fast_unwind_on_malloc=0", 1);
    setenv("LSAN_OPTIONS", "suppressions=tests/lsan.supp:print_suppressions=0", 1);
    const struct { const char *cmd, *w1, *w2; } c[] = {
        {"%P --delay '' -o %D/sp -- true", "--delay: value \"\"", "0..1e7"},
        {"%P --duration nan -o %D/sp -- true", "--duration: value \"nan\"", NULL},
        {"%P --flush-ms '' -o %D/sp -- true", "--flush-ms: value \"\"", "10..600000"},
        {"%P --signal-start=9 -o %D/sp -- true", "--signal-start: value \"9\"", "cannot be caught"},
        {"%P --signal-stop=15 -o %D/sp -- true", "--signal-stop: value \"15\"", "forwards it"},
        {"%P --signal-start=11 -o %D/sp -- true", "--signal-start: value \"11\"", "a fault"},
        {"%P --phases a,,b -o %D/sp -- true", "--phases: value \"a,,b\"", "1..23 characters"},
        {"%P --phases abcdefghijklmnopqrstuvwxyz -o %D/sp -- true", "--phases", "1..23 characters"},
        {"%P -o %D/$(head -c 1200 /dev/zero | tr '\\0' a) -- true", "bytes, at most 1023): /tmp/", NULL},
        /* a directory there but not writable (for root too): the command ran, nothing written */
        {"%P -o /proc/sys -- true", "-o /proc/sys: cannot write there", NULL},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
        expect(2, c[i].cmd, c[i].w1, c[i].w2);
    expect(0, "%P --signal-start=USR1 --phases draft,verify -o %D/sp -- true 2>&1 | grep -c 'cannot\\|value' "
              "| sed 's/^/refusals: /'", "refusals: 0", NULL);
    expect(127, "%P -o %D/sp -- %D/no-such-program", "/no-such-program: No such file or directory", NULL);
    expect(0, "%P -o %D/sp -- %D/no-such-program 2>&1 | grep -c 'Possible reasons' | sed 's/^/reasons: /'",
           "reasons: 0", NULL);
    expect(126, "%P -o %D/sp -- %D", "Permission denied", NULL);
    unsetenv("ASAN_OPTIONS");
    unsetenv("LSAN_OPTIONS");
}

/* specprof check on a torch.profiler (Kineto) trace, plain or gzip: refused (not a capture)
 * and pointed to the reader that takes it, specsim import / fit. */
static void robust_specprof_check_points_kineto_to_specsim(void)
{
    expect(2, "%P check tests/data/kineto/sglang-eagle-tiny.trace.json", "is a torch.profiler (Kineto) trace",
           "specsim fit tests/data/kineto/sglang-eagle-tiny.trace.json");
    expect(2, "gzip -c tests/data/kineto/sglang-eagle-tiny.trace.json > %D/k.json.gz && %P check %D/k.json.gz",
           "k.json.gz is a torch.profiler (Kineto) trace", "specsim import");
    expect(2, "%P check /dev/null 2>&1; %P check /dev/null 2>&1 | grep -c Kineto | sed 's/^/kineto: /'; exit 2",
           "kineto: 0", NULL);
}

int main(int argc, char **argv)
{
    (void)argc;
    specsim_bin_find(argv[0], specsim, sizeof specsim);
    snprintf(specprof, sizeof specprof, "%.*sspecprof", (int)(strlen(specsim) - strlen("specsim")),
             specsim);
    snprintf(dir, sizeof dir, "/tmp/specsim-robust-XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    RUN(robust_numbers_out_of_range_exit_2);
    RUN(robust_no_result_is_an_error);
    RUN(robust_readers_stop_on_dev_zero);
    RUN(robust_one_line_json_trace_is_named);
    RUN(robust_fit_says_capped_spreads_once);
    RUN(robust_output_to_a_fifo_stays_a_fifo);
    RUN(robust_fit_allreduce_says_what_it_cannot_estimate);
    RUN(robust_fit_refuses_and_leaves_no_file);
    RUN(robust_specprof_merge_refuses_its_inputs_and_copies);
    RUN(robust_specprof_launcher_refuses_bad_options);
    RUN(robust_specprof_check_points_kineto_to_specsim);
    char rm[128];
    snprintf(rm, sizeof rm, "rm -rf %s", dir);
    if (system(rm) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return check_done();
}
