/* specsim_bin.h: what the tests that run commands share: where they find the binary under
 * test ($SPECSIM, else <build>/bin/specsim next to this test's build directory (make asan:
 * build-asan/bin/specsim), else bin/specsim), running a command line with its output
 * captured, and writing a fixture file. */
#ifndef SPECSIM_BIN_H
#define SPECSIM_BIN_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static inline void specsim_bin_find(const char *argv0, char *out, size_t len)
{
    const char *env = getenv("SPECSIM");
    const char *slash = strrchr(argv0, '/');
    snprintf(out, len, "bin/specsim");
    if (env && *env) {
        snprintf(out, len, "%s", env);
    } else if (slash && slash - argv0 > 6 && strncmp(slash - 6, "/tests", 6) == 0) {
        char cand[512];
        snprintf(cand, sizeof cand, "%.*s/bin/specsim", (int)(slash - 6 - argv0), argv0);
        if (access(cand, X_OK) == 0)
            snprintf(out, len, "%s", cand);
    }
}

/* 1, said on stderr, when the binary at path is not there to run (make test builds it). */
static inline int specsim_bin_missing(const char *path)
{
    if (access(path, X_OK) == 0)
        return 0;
    fprintf(stderr, "  %s not built: run make first (make test builds it)\n", path);
    return 1;
}

/* Runs `full` through the shell (the caller adds redirections); its output in *out (malloc'd,
 * NUL-terminated; NULL when popen fails) and its exit status, 128 + N after signal N. */
static inline int specsim_run_capture(const char *full, char **out)
{
    FILE *p = popen(full, "r");
    size_t n = 0, cap = 1 << 16;
    char *buf = malloc(cap);
    if (!p || !buf) {
        free(buf);
        if (p) pclose(p);
        *out = NULL;
        return -1;
    }
    size_t k;
    while ((k = fread(buf + n, 1, cap - n - 1, p)) > 0) {
        n += k;
        if (cap - n < 2) {
            char *grown = realloc(buf, cap *= 2);
            if (!grown) break;
            buf = grown;
        }
    }
    buf[n] = '\0';
    int st = pclose(p);
    *out = buf;
    if (WIFSIGNALED(st))
        return 128 + WTERMSIG(st);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Writes text to path; 0, or -1 when it cannot. */
static inline int specsim_write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fputs(text, f);
    return fclose(f) == 0 ? 0 : -1;
}
#endif
