/* test_importcmd: the CLI around the importers (models/importcmd.c `specsim import`,
 * models/fitcmd.c `specsim fit` on foreign traces): what import reports for the Kineto
 * fixture, and the refusals with file, field and value and exit status 2 (a CPU-only
 * Kineto profile, a speculative trace without its shape, spans that name no phase). */
#include "check.h"
#include "specsim_bin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#define FIXTURE "tests/data/kineto/sglang-eagle-tiny.trace.json"

static char specsim[512], tmpdir[64];

static int sh(const char *cmd, char **out)
{
    char full[4096];
    snprintf(full, sizeof full, "%s %s 2>&1", specsim, cmd);
    return specsim_run_capture(full, out);
}

static void write_file(const char *path, const char *text)
{
    CHECK(specsim_write_text(path, text) == 0, "cannot write %s", path);
}

static void import_reports_records_and_phases(void)
{
    char *out;
    CHECK(sh("import " FIXTURE " --spec-shape 3,1,4 --cuda-graph-bs 1,2,4,8 --instances 8", &out) == 0 && out,
          "exit: %s", out ? out : "");
    CHECK(out && strstr(out, "kineto") && strstr(out, "16 kernels") && strstr(out, "NVIDIA H200") &&
          strstr(out, "draft 2, verify 2, accept 2, extend 2") && strstr(out, "\"IDLE\"") &&
          strstr(out, "verify tokens=16 bs=3 rows=4"), "output: %s", out ? out : "");
    free(out);
}

static void expect_2(const char *cmd, const char *w1, const char *w2)
{
    char *out;
    int rc = sh(cmd, &out);
    CHECK(rc == 2 && out && strstr(out, w1) && strstr(out, w2), "`%s` exit %d (want 2), output \"%s\" should name "
          "\"%s\" and \"%s\"", cmd, rc, out ? out : "", w1, w2);
    free(out);
}

static void foreign_traces_are_refused_with_exit_2(void)
{
    char cpu[128], nophase[128], cmd[512];
    snprintf(cpu, sizeof cpu, "%s/cpu-only.json", tmpdir);
    write_file(cpu, "{\"schemaVersion\": 1, \"traceEvents\": [\n"
               "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1, \"tid\": 1, \"ts\": 1.000, \"dur\": 2.000}\n"
               "]}\n");
    snprintf(nophase, sizeof nophase, "%s/nophase.json", tmpdir);
    write_file(nophase, "{\"schemaVersion\": 1, \"traceEvents\": [\n"
               "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"forward_pass\", \"pid\": 1, \"tid\": 1, \"ts\": 0.000, \"dur\": 9.000},\n"
               "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1, \"tid\": 1, \"ts\": 1.000, \"dur\": 2.000, \"args\": {\"correlation\": 1}},\n"
               "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, \"ts\": 4.000, \"dur\": 2.000, \"args\": {\"correlation\": 1}}\n"
               "]}\n");
    snprintf(cmd, sizeof cmd, "fit %s -o %s/m.json", cpu, tmpdir);
    expect_2(cmd, "cpu-only.json", "CPU-only");
    snprintf(cmd, sizeof cmd, "import %s", cpu);
    expect_2(cmd, "field traceEvents", "cpu_op");
    /* the fixture's directory has no server_args.json: no speculative shape */
    snprintf(cmd, sizeof cmd, "fit %s -o %s/m.json", FIXTURE, tmpdir);
    expect_2(cmd, FIXTURE, "speculative_num_steps");
    snprintf(cmd, sizeof cmd, "fit %s -o %s/m.json", nophase, tmpdir);
    expect_2(cmd, "nophase.json", "forward_pass");
    snprintf(cmd, sizeof cmd, "fit %s -o %s/m.json --profile vllm", FIXTURE, tmpdir);
    expect_2(cmd, "--profile", "vllm");
    snprintf(cmd, sizeof cmd, "import %s --server-args %s", FIXTURE, cpu);
    expect_2(cmd, "cpu-only.json", "not a server_args.json");   /* a trace, not server args (it was read
                                                                    * as a baseline server's) */
}

/* --instances once went through atoi: -1, abc, 3x and 1e300 printed the report, exit 0 */
static void import_instances_must_be_a_count(void)
{
    const char *bad[] = {"-1", "abc", "3x", "1e300", "99999999999999999999", ""};
    char cmd[512];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(cmd, sizeof cmd, "import " FIXTURE " --spec-shape 3,1,4 --instances '%s'", bad[i]);
        char want[64];
        snprintf(want, sizeof want, "value \"%s\"", bad[i]);
        expect_2(cmd, "field --instances", want);
    }
}

/* The speculative shape: a server_args.json draft-token count of 1e300 once became
 * -2147483648 (and 2.5 became 2), --spec-shape 3,1,99 a tree with more nodes than it has;
 * each printed the report, exit 0. */
static void import_refuses_an_impossible_spec_shape(void)
{
    const struct { const char *steps, *topk, *draft, *w1, *w2; } c[] = {
        {"3", "1", "1e300", "field speculative_num_draft_tokens", "value 1e+300"},
        {"3", "1", "2.5", "field speculative_num_draft_tokens", "value 2.5"},
        {"3", "1", "99", "field speculative_num_draft_tokens", "steps * topk + 1 = 4"},
        {"3000000000", "1", "4", "field speculative_num_steps", "value 3000000000"},
        {"3", "1e300", "4", "field speculative_eagle_topk", "value 1e+300"},
    };
    char args[160], cmd[512];
    snprintf(args, sizeof args, "%s/server_args.json", tmpdir);
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        char text[512];
        snprintf(text, sizeof text, "{\"speculative_algorithm\": \"EAGLE3\", "
                 "\"speculative_num_steps\": %s, \"speculative_eagle_topk\": %s, "
                 "\"speculative_num_draft_tokens\": %s}\n", c[i].steps, c[i].topk, c[i].draft);
        write_file(args, text);
        snprintf(cmd, sizeof cmd, "import " FIXTURE " --server-args %s", args);
        expect_2(cmd, c[i].w1, c[i].w2);
    }
    snprintf(args, sizeof args, "%s/server_args.json", tmpdir);
    write_file(args, "{\"cuda_graph_bs\": [1, 2, 1e300], \"speculative_algorithm\": null}\n");
    snprintf(cmd, sizeof cmd, "import " FIXTURE " --spec-shape 3,1,4 --server-args %s", args);
    expect_2(cmd, "field cuda_graph_bs", "value 1e+300");
    expect_2("import " FIXTURE " --spec-shape 3,1,99", "--spec-shape (draft tokens)", "value 99");
    expect_2("log tests/data/sglang/server-eagle.log --spec-shape 2,2,9", "--spec-shape", "value 9");
}

/* A deviceProperties entry without numSms and computeMajor (or with 0) printed "0 SMs, cc 0.0"
 * as if measured: the line says which field of which file is missing or 0 */
static void import_names_a_device_field_it_lacks(void)
{
    char path[128], *out;
    snprintf(path, sizeof path, "%s/dev", tmpdir);   /* no server_args.json beside it */
    CHECK(mkdir(path, 0755) == 0, "mkdir %s", path);
    snprintf(path, sizeof path, "%s/dev/nosms.json", tmpdir);
    write_file(path, "{\"schemaVersion\": 1, \"deviceProperties\": [{\"id\": 0, \"name\": \"NVIDIA H200\", "
               "\"numSms\": 0}], \"traceEvents\": [\n"
               "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, \"ts\": 4.000, \"dur\": 2.000, "
               "\"args\": {\"device\": 0, \"correlation\": 1}}\n]}\n");
    char cmd[256];
    snprintf(cmd, sizeof cmd, "import %s", path);
    sh(cmd, &out);
    CHECK(out && strstr(out, "NVIDIA H200") && strstr(out, "nosms.json: field deviceProperties numSms, computeMajor missing or 0") && !strstr(out, "0 SMs") &&
          !strstr(out, "cc 0.0"), "output: %s", out ? out : "");
    free(out);
}

/* A Kineto trace cut off inside traceEvents was reported by the fit as "cut off (no
 * specprof_end)", a marker no Kineto file has */
static void fit_says_how_a_kineto_trace_was_cut(void)
{
    char path[128], cmd[512], *out = NULL;
    size_t n = 0;
    FILE *f = fopen(FIXTURE, "rb");
    char *text = NULL;
    if (f) {
        text = malloc(1 << 20);
        n = text ? fread(text, 1, (1 << 20) - 1, f) : 0;
        fclose(f);
    }
    CHECK(text && n > 0, "read %s", FIXTURE);
    if (!text)
        return;
    text[n] = 0;
    char *end = strstr(text, "Record Window End");   /* cut inside the last event */
    CHECK(end != NULL, "fixture has no Record Window End");
    if (end)
        *end = 0;
    snprintf(path, sizeof path, "%s/cut", tmpdir);   /* no server_args.json beside it */
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/cut/cut.trace.json", tmpdir);
    write_file(path, text);
    free(text);
    snprintf(cmd, sizeof cmd, "fit %s -o %s/m.json --spec-shape 3,1,4 --cuda-graph-bs 1,2,4,8", path, tmpdir);
    sh(cmd, &out);
    CHECK(out && strstr(out, "cut.trace.json: cut off (the Kineto document ends inside traceEvents)") &&
          !strstr(out, "specprof_end"), "output: %s", out ? out : "");
    free(out);
}

int main(int argc, char **argv)
{
    (void)argc;
    specsim_bin_find(argv[0], specsim, sizeof specsim);
    snprintf(tmpdir, sizeof tmpdir, "/tmp/test_importcmd.XXXXXX");
    if (!mkdtemp(tmpdir))
        return 1;
    RUN(import_reports_records_and_phases);
    RUN(foreign_traces_are_refused_with_exit_2);
    RUN(import_instances_must_be_a_count);
    RUN(import_refuses_an_impossible_spec_shape);
    RUN(import_names_a_device_field_it_lacks);
    RUN(fit_says_how_a_kineto_trace_was_cut);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd)) {}
    return check_done();
}
