/* specsim_bin.h: where the tests that run the CLI find the binary under test: $SPECSIM,
 * else <build>/bin/specsim next to this test's build directory (make asan:
 * build-asan/bin/specsim), else bin/specsim. Shared by test_cli.c and test_arfit.c. */
#ifndef SPECSIM_BIN_H
#define SPECSIM_BIN_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
#endif
