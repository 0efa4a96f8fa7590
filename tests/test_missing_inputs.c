/* test_missing_inputs: the test programs that read committed inputs (traces under traces/, logs
 * and fixtures under tests/data/) fail with their checks' messages when those are absent (a
 * checkout without them, or traces/ moved away for a while), and never crash: test_fit_nodes
 * ended on SIGSEGV (exit 139, no message) when its traces were absent, test_pkineto and
 * test_sglog when their fixtures were. Each such program (found by the paths in its source) is
 * run in a directory holding the repository's entries but traces/ and tests/data/. */
#include "check.h"
#include "specsim_bin.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char bindir[512];   /* where the test programs are, as given (relative to the root) */

/* 1 when a path under traces/ or tests/data/ starts a string or a word of a command line in the
 * source's code (comments aside) */
static int reads_committed_inputs(const char *src)
{
    FILE *f = fopen(src, "r");
    if (!f)
        return 0;
    char line[4096];
    int hit = 0;
    while (!hit && fgets(line, sizeof line, f)) {
        const char *p = line + strspn(line, " \t");
        if (!strncmp(p, "/*", 2) || !strncmp(p, "//", 2) || *p == '*')
            continue;
        static const char *const dirs[] = {"traces/", "tests/data/"};
        for (int k = 0; k < 2 && !hit; k++)
            for (const char *q = strstr(p, dirs[k]); q && !hit; q = strstr(q + 1, dirs[k]))
                hit = q > p && (q[-1] == '"' || q[-1] == ' ');
    }
    fclose(f);
    return hit;
}

/* dir: a link to every entry of the root but .*, traces and tests; tests/ holds a link to every
 * entry of tests/ but data. 0, or -1. */
static int make_root_without_inputs(const char *dir)
{
    char abs[4096], from[8192], to[8192];
    if (!getcwd(abs, sizeof abs))
        return -1;
    const char *sub[2] = {"", "tests/"};
    for (int s = 0; s < 2; s++) {
        snprintf(from, sizeof from, "%s/%s", abs, sub[s]);
        DIR *d = opendir(from);
        if (!d)
            return -1;
        struct dirent *e;
        while ((e = readdir(d))) {
            if (e->d_name[0] == '.' || (s == 0 && (!strcmp(e->d_name, "traces") || !strcmp(e->d_name, "tests"))) ||
                (s == 1 && !strcmp(e->d_name, "data")))
                continue;
            snprintf(from, sizeof from, "%s/%s%s", abs, sub[s], e->d_name);
            snprintf(to, sizeof to, "%s/%s%s", dir, sub[s], e->d_name);
            if (symlink(from, to)) {
                closedir(d);
                return -1;
            }
        }
        closedir(d);
        snprintf(to, sizeof to, "%s/tests", dir);
        if (s == 0 && mkdir(to, 0755))
            return -1;
    }
    return 0;
}

static void tests_without_committed_inputs_fail_without_crashing(void)
{
    char dir[] = "/tmp/test_missing_inputs.XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(0, "mkdtemp");
        return;
    }
    int ran = 0;
    if (make_root_without_inputs(dir)) {
        CHECK(0, "%s: cannot build a root without traces/ and tests/data/", dir);
        goto out;
    }
    DIR *d = opendir("tests");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        size_t n = strlen(e->d_name);
        char src[600], bin[1200], cmd[4096];
        if (strncmp(e->d_name, "test_", 5) || n < 3 || strcmp(e->d_name + n - 2, ".c") ||
            !strcmp(e->d_name, "test_missing_inputs.c"))
            continue;
        snprintf(src, sizeof src, "tests/%s", e->d_name);
        if (!reads_committed_inputs(src))
            continue;
        snprintf(bin, sizeof bin, "%s/%.*s", bindir, (int)(n - 2), e->d_name);
        if (access(bin, X_OK)) {
            CHECK(0, "%s not built (make test builds it)", bin);
            continue;
        }
        snprintf(cmd, sizeof cmd, "cd '%s' && '%s' 2>&1", dir, bin);
        char *out = NULL;
        int rc = specsim_run_capture(cmd, &out);
        const char *tot = out ? strstr(out, "\n@@ ") : NULL;
        int passed = -1, failed = -1;
        if (tot)
            sscanf(tot + 4, "%d %d", &passed, &failed);
        size_t ol = out ? strlen(out) : 0;
        CHECK(rc > 0 && rc < 128 && tot && failed > 0, "%s without traces/ and tests/data/: exit %d, %d passed, "
              "%d failed (want an exit of its own with its totals and failed checks); its output ends:\n%s", bin, rc,
              passed, failed, out ? out + (ol > 1500 ? ol - 1500 : 0) : "");
        free(out);
        ran++;
    }
    if (d)
        closedir(d);
    CHECK(ran >= 3, "only %d test programs found reading committed inputs", ran);
out:;
    char rm[128];
    snprintf(rm, sizeof rm, "rm -rf '%s'", dir);   /* links only: their targets stay */
    CHECK(system(rm) == 0, "%s", rm);
}

int main(int argc, char **argv)
{
    (void)argc;
    const char *slash = strrchr(argv[0], '/');
    snprintf(bindir, sizeof bindir, "%.*s", slash ? (int)(slash - argv[0]) : 1, slash ? argv[0] : ".");
    RUN(tests_without_committed_inputs_fail_without_crashing);
    return check_done();
}
