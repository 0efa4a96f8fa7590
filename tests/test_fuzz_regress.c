/* test_fuzz_regress: every committed fuzz input, the seeds (tests/fuzz/<target>/) and the
 * inputs that once crashed a reader (tests/fuzz/regress/<target>/), through the same
 * target functions as the libFuzzer harnesses (tests/fuzz/targets.c; here in the normal and
 * the `make asan` builds) and through the binaries a user runs (specsim, specprof): each
 * must end in a clean refusal or a success, never a crash, a sanitizer report or a hang.
 * One child process per input, so that a crash names its file. Runs from the repo root. */
#include "check.h"
#include "specsim_bin.h"
#include "fuzz/targets.c"

#include <dirent.h>
#include <sys/wait.h>

static char specsim[512] = "bin/specsim", specprof[512] = "bin/specprof";

/* The command a user would run on an input of this target (%F the file, %S specsim, %P
 * specprof); exit 0, 1 or 2 is fine, a signal or a timeout is not. */
static const struct { const char *target, *cmd; } fz_cli[] = {
    {"trace", "%P check %F"},
    {"trace", "%S fit %F -o /dev/null --quiet"},
    {"model", "%S run --model %F --iterations 30 --concurrency 4 --quiet"},
    {"config", "%S run --config %F --model models/example-llama8b.json --iterations 30 --warmup 5 "
               "--requests 0 --concurrency 4 --link nvlink4-8gpu --timeline '' --quiet"},
    {"link", "%S run --model models/example-llama8b.json --ranks 2 --link %F --iterations 30 --quiet"},
    {"gsweep", "%S fit /nonexistent-trace.json --gemm-sweep %F -o /dev/null --quiet"},
    {"arsweep", "%S fit-allreduce %F -o /dev/null --quiet"},
    {"fit", "%S fit %F -o /dev/null --quiet"},
    {"kineto", "%S import %F"},
    {"kineto", "%S fit %F -o /dev/null --quiet"},
    {"sglog", "%S log %F"},
};

/* Runs fn on the file's bytes in a child; 0 when it returned. */
static int in_child(int (*fn)(const uint8_t *, size_t), const char *path)
{
    pid_t pid = fork();
    if (pid == 0) {
        FILE *f = fopen(path, "rb");
        if (!f)
            _exit(3);
        size_t cap = 1 << 16, n = 0;
        uint8_t *buf = malloc(cap);
        size_t r;
        while (buf && (r = fread(buf + n, 1, cap - n, f)) > 0) {
            n += r;
            if (n == cap)
                buf = realloc(buf, cap *= 2);
        }
        fclose(f);
        alarm(60);
        fz_init();
        fn(buf, n);
        free(buf);
        _exit(0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : (WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st));
}

static int run_cli(const char *tmpl, const char *file, char *cmd, size_t cap)
{
    char *o = cmd;
    o += snprintf(o, cap, "timeout 60 ");
    for (const char *p = tmpl; *p && o < cmd + cap - 600; p++) {
        if (p[0] == '%' && (p[1] == 'F' || p[1] == 'S' || p[1] == 'P')) {
            o += sprintf(o, "%s", p[1] == 'F' ? file : p[1] == 'S' ? specsim : specprof);
            p++;
        } else {
            *o++ = *p;
        }
    }
    snprintf(o, 32, " >/dev/null 2>&1");
    int st = system(cmd);
    if (WIFSIGNALED(st))
        return 128 + WTERMSIG(st);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Every file of dir through target t (and its commands when cli). Returns the count. */
static int run_dir(const fz_target *t, const char *dir, int cli)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int count = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.' || !strcmp(de->d_name, "README.md"))
            continue;
        char path[1024], cmd[4096];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        int rc = in_child(t->fn, path);
        CHECK(rc == 0, "%s: target %s ended with status %d (a crash or a broken invariant)", path,
              t->name, rc);
        for (size_t c = 0; cli && c < sizeof fz_cli / sizeof fz_cli[0]; c++) {
            if (strcmp(fz_cli[c].target, t->name))
                continue;
            int e = run_cli(fz_cli[c].cmd, path, cmd, sizeof cmd);
            CHECK(e == 0 || e == 1 || e == 2, "`%s` exited %d (want 0, 1 or 2)", cmd, e);
        }
        count++;
    }
    closedir(d);
    return count;
}

static void fuzz_seeds_and_regressions_end_cleanly(void)
{
    int seeds = 0, regress = 0;
    for (size_t i = 0; i < FZ_NTARGETS; i++) {
        char dir[256];
        snprintf(dir, sizeof dir, "tests/fuzz/%s", fz_targets[i].name);
        int n = run_dir(&fz_targets[i], dir, 0);
        CHECK(n > 0, "target %s has no seed corpus in %s", fz_targets[i].name, dir);
        seeds += n;
        snprintf(dir, sizeof dir, "tests/fuzz/regress/%s", fz_targets[i].name);
        regress += run_dir(&fz_targets[i], dir, 1);
    }
    printf("# %d seeds, %d regression inputs (each also through the binaries)\n", seeds, regress);
    CHECK(regress > 0, "no regression inputs found (run from the repository root)");
}

int main(int argc, char **argv)
{
    (void)argc;
    specsim_bin_find(argv[0], specsim, sizeof specsim);
    snprintf(specprof, sizeof specprof, "%.*sspecprof", (int)(strlen(specsim) - strlen("specsim")),
             specsim);
    RUN(fuzz_seeds_and_regressions_end_cleanly);
    return check_done();
}
