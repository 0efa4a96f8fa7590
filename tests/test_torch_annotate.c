/* test_torch_annotate: the Python helper profiler/python/specprof_torch (NVTX phase ranges
 * around PyTorch forwards) and `specprof --torch-annotate`. A C test cannot call Python, so
 * it runs tests/torch_annotate_check.py and compares what it prints with the range names
 * the fit reads (traces/FORMAT.md "Phases"). Python: $SPECPROF_TEST_PYTHON alone, else the first
 * of python3 and /usr/bin/python3 that imports torch, else the first that runs (then only
 * the torch-free string builder and spec parser are checked); none: skipped. */
#include "check.h"
#include "specsim_bin.h"

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char python[256];      /* "" when none was found */
static int have_torch;
static char specprof[512] = "bin/specprof";

/* Runs cmd through the shell (stderr too when both); returns the exit status and the output
 * in a malloc'd string (caller frees). */
static int sh(const char *cmd, int both, char **out)
{
    char full[4096];
    snprintf(full, sizeof full, "( %s ) %s", cmd, both ? "2>&1" : "2>/dev/null");
    return specsim_run_capture(full, out);
}

static int runs(const char *py, const char *code)
{
    char cmd[512], *out;
    snprintf(cmd, sizeof cmd, "%s -c '%s' >/dev/null", py, code);
    int rc = sh(cmd, 0, &out);
    free(out);
    return rc == 0;
}

static void find_python(void)
{
    const char *env = getenv("SPECPROF_TEST_PYTHON");
    const char *cand[] = {env && *env ? env : "python3", "/usr/bin/python3"};
    for (int i = 0; i < (env && *env ? 1 : 2) && !have_torch; i++) {
        if (!runs(cand[i], "import sys"))
            continue;
        if (!python[0])
            snprintf(python, sizeof python, "%s", cand[i]);
        if (runs(cand[i], "import torch")) {
            snprintf(python, sizeof python, "%s", cand[i]);
            have_torch = 1;
        }
    }
}

/* Output of `python tests/torch_annotate_check.py MODE` (malloc'd), its status in *rc. */
static char *check_py(const char *mode, int *rc)
{
    char cmd[1024], *out;
    snprintf(cmd, sizeof cmd, "%s tests/torch_annotate_check.py %s", python, mode);
    *rc = sh(cmd, 0, &out);
    return out;
}

/* Every line of want appears in got, in order. */
static void expect_lines(const char *got, const char *const *want, int n, const char *what)
{
    const char *at = got ? got : "";
    for (int i = 0; i < n; i++) {
        const char *f = strstr(at, want[i]);
        CHECK(f != NULL, "%s: expected the line\n    %s\n  (in order) in the output:\n%s", what, want[i],
              got ? got : "(none)");
        if (!f)
            return;
        at = f + strlen(want[i]);
    }
}

static void torch_annotate_ranges_have_the_fit_words(void)
{
    if (!python[0]) {
        printf("  skip: no python3\n");
        return;
    }
    int rc;
    char *out = check_py("builder", &rc);
    static const char *const want[] = {
        "range target 1 1 517: decode tokens=1 bs=1 rows=1 ctx=517 graph=0\n",
        "range target 1 5 517: verify tokens=5 bs=1 rows=1 ctx=517 graph=0\n",
        "range target 1 64 0: prefill tokens=64 bs=1 rows=1 ctx=0 graph=0\n",
        "range target 4 1 100: decode tokens=4 bs=4 rows=4 ctx=400 graph=0\n",
        "range draft 1 2 130: draft tokens=2 bs=1 rows=1 ctx=130 graph=0\n",
        "range draft 1 64 0: draft_prefill tokens=64 bs=1 rows=1 ctx=0 graph=0\n",
        "range draft 2 1 7: draft tokens=2 bs=2 rows=2 ctx=14 graph=0\n",
        "range extend 3 4 10: extend tokens=12 bs=3 rows=3 ctx=30 graph=0\n",
        "torch imported: False\n",   /* the builder imports no torch */
    };
    CHECK(rc == 0, "builder exited %d", rc);
    expect_lines(out, want, (int)(sizeof want / sizeof want[0]), "builder");
    free(out);
}

static void torch_annotate_spec_names_the_bad_item(void)
{
    if (!python[0]) {
        printf("  skip: no python3\n");
        return;
    }
    int rc;
    char *out = check_py("spec", &rc);
    static const char *const want[] = {
        "spec [LlamaForCausalLM#1=target,LlamaForCausalLM#2=draft]: [('LlamaForCausalLM', 1, 'target'), "
        "('LlamaForCausalLM', 2, 'draft')]\n",
        "spec [Tiny=draft]: [('Tiny', 0, 'draft')]\n",
        "spec [*ForCausalLM#2=draft]: [('*ForCausalLM', 2, 'draft')]\n",
        "spec []: error: --torch-annotate: empty spec",
        "spec [Tiny]: error: --torch-annotate: item \"Tiny\": expected PATTERN=ROLE",
        "spec [Tiny=Draft]: error: --torch-annotate: item \"Tiny=Draft\": role \"Draft\"",
        "spec [Tiny#0=target]: error: --torch-annotate: item \"Tiny#0=target\": instance \"#0\"",
        "spec [Tiny#x=target]: error: --torch-annotate: item \"Tiny#x=target\": instance \"#x\"",
        "spec [=target]: error: --torch-annotate: item \"=target\": pattern \"\"",
        "spec [Tiny=target,,]: error: --torch-annotate: item \"\": expected PATTERN=ROLE",
        "spec [A b=target]: error: --torch-annotate: item \"A b=target\": pattern \"A b\"",
    };
    CHECK(rc == 0, "spec exited %d", rc);
    expect_lines(out, want, (int)(sizeof want / sizeof want[0]), "spec");
    free(out);
}

/* The forwards of a tiny CPU model called the ways Hugging Face calls one: the cache's
 * get_seq_length(), a legacy tuple cache, only a mask, a cache whose length is a tensor
 * (not read: the mask instead), inputs_embeds; nested annotated modules open one range;
 * a forward that raises still pops; an unreadable input opens none; remove() stops it. */
static void torch_annotate_hooks_read_shape_and_cache(void)
{
    if (!have_torch) {
        printf("  skip: no python3 with torch (the string builder is checked above)\n");
        return;
    }
    int rc;
    char *out = check_py("model", &rc);
    static const char *const want[] = {
        "pushed: prefill tokens=16 bs=1 rows=1 ctx=0 graph=0\n",
        "pushed: decode tokens=1 bs=1 rows=1 ctx=16 graph=0\n",
        "pushed: verify tokens=5 bs=1 rows=1 ctx=17 graph=0\n",
        "pushed: verify tokens=6 bs=2 rows=2 ctx=18 graph=0\n",
        "pushed: verify tokens=4 bs=1 rows=1 ctx=26 graph=0\n",
        "pushed: verify tokens=2 bs=1 rows=1 ctx=10 graph=0\n",
        "pushed: decode tokens=3 bs=3 rows=3 ctx=120 graph=0\n",
        "pushed: draft_prefill tokens=16 bs=1 rows=1 ctx=0 graph=0\n",
        "pushed: draft tokens=2 bs=1 rows=1 ctx=17 graph=0\n",
        "pushed: draft tokens=1 bs=1 rows=1 ctx=19 graph=0\n",
        "pushed: verify tokens=3 bs=1 rows=1 ctx=5 graph=0\n",
        "pushed: decode tokens=1 bs=1 rows=1 ctx=19 graph=0\n",
        "pushed: decode tokens=1 bs=1 rows=1 ctx=20 graph=0\n",
        "depth after: 0\n",
        "counts target: [('decode', 4), ('prefill', 1), ('verify', 4)]\n",
        "counts draft: [('draft', 2), ('draft_prefill', 1)]\n",
        "annotate error: specprof_torch.annotate: phase \"Verify\"",
    };
    CHECK(rc == 0, "model exited %d:\n%s", rc, out ? out : "");
    expect_lines(out, want, (int)(sizeof want / sizeof want[0]), "model");
    CHECK(out && !strstr(out, "ctx=21"), "a range after remove():\n%s", out ? out : "");
    CHECK(out && !strstr(out, "pushed: draft tokens=3"), "the nested module opened its own range:\n%s",
          out ? out : "");
    free(out);
}

/* specprof --torch-annotate through site/sitecustomize.py: the first Tiny built is the
 * target, the second the draft, the third is not annotated. */
static void torch_annotate_autoload_by_build_order(void)
{
    if (!have_torch) {
        printf("  skip: no python3 with torch\n");
        return;
    }
    char cmd[2048], *out;
    snprintf(cmd, sizeof cmd,
             "SPECPROF_LIB=/nonexistent %s -o /tmp/test_torch_annotate.%d --torch-annotate "
             "'Tiny#1=target,Tiny#2=draft' -- %s tests/torch_annotate_check.py autoload; "
             "rm -rf /tmp/test_torch_annotate.%d",
             specprof, (int)getpid(), python, (int)getpid());
    int rc = sh(cmd, 1, &out);
    static const char *const want[] = {
        "# specprof: torch-annotate Tiny#1=target,Tiny#2=draft",
        "specprof_torch: annotating Tiny #1 as target",
        "specprof_torch: annotating Tiny #2 as draft",
        "pushed: verify tokens=5 bs=1 rows=1 ctx=9 graph=0\n",
        "pushed: draft tokens=2 bs=1 rows=1 ctx=9 graph=0\n",
        "annotated: [('Tiny #1', 'target'), ('Tiny #2', 'draft')]\n",
        "specprof_torch: Tiny #1 as target: verify 1",
    };
    CHECK(rc == 0, "specprof exited %d:\n%s", rc, out ? out : "");
    expect_lines(out, want, (int)(sizeof want / sizeof want[0]), "autoload");
    CHECK(out && !strstr(out, "Tiny #3") && !strstr(out, "tokens=3"), "the third Tiny was annotated:\n%s",
          out ? out : "");
    free(out);
}

static void specprof_torch_annotate_refuses_a_bad_spec(void)
{
    static const char *const bad[] = {"Tiny", "Tiny#0=target", "A b=draft", "Tiny=Draft", "x=target,", "=draft"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char cmd[1024], *out;
        snprintf(cmd, sizeof cmd, "SPECPROF_LIB=/nonexistent %s -o /tmp/test_torch_annotate.%d --torch-annotate '%s' "
                 "-- true; s=$?; rm -rf /tmp/test_torch_annotate.%d; exit $s", specprof, (int)getpid(), bad[i],
                 (int)getpid());
        int rc = sh(cmd, 1, &out);
        CHECK(rc == 2, "spec \"%s\": exit %d, expected 2:\n%s", bad[i], rc, out ? out : "");
        CHECK(out && strstr(out, "--torch-annotate: item \""), "spec \"%s\": no message naming the item:\n%s",
              bad[i], out ? out : "");
        free(out);
    }
    char cmd[1024], *out;
    snprintf(cmd, sizeof cmd, "SPECPROF_LIB=/nonexistent SPECPROF_PYTHON_DIR=/nonexistent %s -o /tmp/test_torch_annotate.%d "
             "--torch-annotate 'A=draft' -- true; s=$?; rm -rf /tmp/test_torch_annotate.%d; exit $s", specprof,
             (int)getpid(), (int)getpid());
    int rc = sh(cmd, 1, &out);
    CHECK(rc == 2 && out && strstr(out, "/nonexistent: no specprof_torch/__init__.py"),
          "missing helper directory: exit %d:\n%s", rc, out ? out : "");
    free(out);
}

int main(int argc, char **argv)
{
    const char *env = getenv("SPECPROF");
    const char *slash = strrchr(argv[0], '/');
    if (env && *env)
        snprintf(specprof, sizeof specprof, "%s", env);
    else if (argc > 0 && slash && slash - argv[0] > 6 && strncmp(slash - 6, "/tests", 6) == 0) {
        char cand[512];
        snprintf(cand, sizeof cand, "%.*s/bin/specprof", (int)(slash - 6 - argv[0]), argv[0]);
        if (access(cand, X_OK) == 0)
            snprintf(specprof, sizeof specprof, "%s", cand);
    }
    find_python();
    printf("# python: %s%s; specprof: %s\n", python[0] ? python : "(none)", have_torch ? " (with torch)" : "",
           specprof);
    RUN(torch_annotate_ranges_have_the_fit_words);
    RUN(torch_annotate_spec_names_the_bad_item);
    RUN(torch_annotate_hooks_read_shape_and_cache);
    RUN(torch_annotate_autoload_by_build_order);
    RUN(specprof_torch_annotate_refuses_a_bad_spec);
    return check_done();
}
