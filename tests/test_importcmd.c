/* test_importcmd: the CLI around the importers (models/importcmd.c `specsim import`,
 * models/fitcmd.c `specsim fit` on foreign traces): what import reports for the Kineto
 * fixture, and the refusals with file, field and value and exit status 2 (a CPU-only
 * Kineto profile, a speculative trace without its shape, spans that name no phase). */
#include "check.h"
#include "specsim_bin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
    expect_2(cmd, "cpu-only.json", "speculative_num_steps");   /* a baseline server's args */
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
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd)) {}
    return check_done();
}
