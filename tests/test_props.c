/* test_props: what-if answers a user relies on obey the physics whatever the fit: more
 * acceptance is never slower, the baseline ignores the speculative knobs, more KV context
 * never speeds decode, more concurrency never lowers the total or raises the per-request
 * rate, a faster link is never slower and more ranks never cheapen the collectives, and the
 * speedup's interval holds the ratio of the medians. Each compares sweep rows of bin/specsim
 * with a tolerance of both rows' stated precision (4 standard errors). Runs from the
 * repository root. On fitted models (2026-12-07, a longer check over llama8b, kimi-tp8 and
 * two scaled TP=8 models) the same properties held except where a fit's per-size graph
 * factors (docs/fit.md "Captured graph sizes") make a graph at one size dearer than padding
 * to the next or than eager: kimi-tp8 at 8 rows, a graph 0.76% slower than eager. */
#include "check.h"
#include "tp4_model.h"
#include "specsim_bin.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char specsim[512] = "bin/specsim";
static char dir[64];
/* tp4_model.h's 4-rank model, written here: all-reduces in every forward phase, no graph-size
 * factors (a fit's per-size factors may legitimately break graph monotonicity) */
static char tp4_path[128];

/* A sweep's CSV, parsed: ncol named columns, nrow rows of numbers (NAN: not a number). */
#define PROPS_MAX_COLS 128
#define PROPS_MAX_ROWS 64
typedef struct {
    int  ncol, nrow;
    char name[PROPS_MAX_COLS][32];
    double v[PROPS_MAX_ROWS][PROPS_MAX_COLS];
} props_tab;

/* Runs `specsim sweep ARGS --quiet --seed 1` and parses its CSV into *t (caller-owned).
 * Returns 0, or -1 (a failed check says why). */
static int props_sweep(const char *args, props_tab *t)
{
    char full[2048], *out = NULL;
    memset(t, 0, sizeof *t);
    snprintf(full, sizeof full, "%s sweep %s --quiet --seed 1 2>&1", specsim, args);
    int rc = specsim_run_capture(full, &out);
    CHECK(rc == 0 && out, "`%s` exited %d: %s", full, rc, out ? out : "");
    if (rc != 0 || !out) {
        free(out);
        return -1;
    }
    char *save = NULL, *line = strtok_r(out, "\n", &save);
    for (char *c = line, *next; c && t->ncol < PROPS_MAX_COLS; c = next) {
        next = strchr(c, ',');
        if (next)
            *next++ = '\0';
        snprintf(t->name[t->ncol++], sizeof t->name[0], "%s", c);
    }
    while ((line = strtok_r(NULL, "\n", &save)) && t->nrow < PROPS_MAX_ROWS) {
        int k = 0;
        for (char *c = line, *next; c && k < t->ncol; c = next, k++) {
            next = strchr(c, ',');
            if (next)
                *next++ = '\0';
            char *end;
            double x = strtod(c, &end);
            t->v[t->nrow][k] = end != c && *end == '\0' ? x : NAN;
        }
        t->nrow++;
    }
    free(out);
    return 0;
}

static int props_col(const props_tab *t, const char *name)
{
    for (int k = 0; k < t->ncol; k++)
        if (strcmp(t->name[k], name) == 0)
            return k;
    CHECK(0, "no column %s", name);
    return 0;
}

static double props_get(const props_tab *t, int row, const char *name)
{
    return t->v[row][props_col(t, name)];
}

/* Appends column `name` = num / den (the table has room: PROPS_MAX_COLS). */
static void props_add_ratio(props_tab *t, const char *name, const char *num, const char *den)
{
    if (t->ncol >= PROPS_MAX_COLS) {
        CHECK(0, "no room for column %s", name);
        return;
    }
    int k = t->ncol;
    for (int r = 0; r < t->nrow; r++)
        t->v[r][k] = props_get(t, r, num) / props_get(t, r, den);
    snprintf(t->name[k], sizeof t->name[0], "%s", name);
    t->ncol++;
}

/* Rows lo, lo+step, .. (n of them) must not let `key` fall (dir +1) or rise (dir -1) by more
 * than the two rows' stated precision (column prec, in %). */
static void props_monotone(const props_tab *t, int lo, int step, int n, const char *key,
                           const char *prec, int dir, const char *what)
{
    for (int i = 1; i < n; i++) {
        int a = lo + (i - 1) * step, b = lo + i * step;
        double va = props_get(t, a, key), vb = props_get(t, b, key);
        double tol = (props_get(t, a, prec) + props_get(t, b, prec)) / 100;
        if (dir > 0)
            CHECK(vb >= va * (1 - tol), "%s: %s row %d %.3f -> row %d %.3f (tol %.3f%%)", what,
                  key, a, va, b, vb, 100 * tol);
        else
            CHECK(vb <= va * (1 + tol), "%s: %s row %d %.3f -> row %d %.3f (tol %.3f%%)", what,
                  key, a, va, b, vb, 100 * tol);
    }
}

static void props_alpha_never_lowers_tok_s(void)
{
    props_tab t;
    if (props_sweep("--grid concurrency=1,8 --grid steps=1,4 --grid alpha=0,0.3,0.6,0.8,0.95", &t))
        return;
    CHECK(t.nrow == 20, "%d rows", t.nrow);
    for (int g = 0; g < 4; g++)
        props_monotone(&t, 5 * g, 1, 5, "tok_s", "precision", +1, "more alpha");
    /* the baseline has no speculative knob: the same run for every alpha and steps */
    for (int r = 0; r < t.nrow; r++) {
        int first = r < 10 ? 0 : 10;
        CHECK(props_get(&t, r, "base_tok_s") == props_get(&t, first, "base_tok_s"),
              "row %d base_tok_s %.3f, row %d %.3f", r, props_get(&t, r, "base_tok_s"), first,
              props_get(&t, first, "base_tok_s"));
    }
}

static void props_longer_prompts_never_speed_decode(void)
{
    props_tab t;
    if (props_sweep("--grid concurrency=1,16 --grid prompt-len=16,1024,8192,32768", &t))
        return;
    for (int g = 0; g < 2; g++) {
        props_monotone(&t, 4 * g, 1, 4, "tok_s", "precision", -1, "longer prompt");
        props_monotone(&t, 4 * g, 1, 4, "base_tok_s", "base_precision", -1, "longer prompt");
    }
}

/* below saturation the total rises, and a request never gets faster with more company */
static void props_concurrency_total_up_per_request_down(void)
{
    props_tab t;
    if (props_sweep("--grid alpha=0,0.7 --grid concurrency=1,2,4,8,16,32", &t))
        return;
    props_add_ratio(&t, "per_req", "tok_s", "bs");     /* req_tok_s is noisier than stated */
    props_add_ratio(&t, "base_per_req", "base_tok_s", "base_bs");
    for (int g = 0; g < 2; g++) {
        props_monotone(&t, 6 * g, 1, 6, "tok_s", "precision", +1, "more concurrency");
        props_monotone(&t, 6 * g, 1, 6, "per_req", "precision", -1, "more concurrency");
        props_monotone(&t, 6 * g, 1, 6, "base_per_req", "base_precision", -1, "more concurrency");
    }
}

/* each preset is faster than the one before it in latency, bandwidth and floor */
static void props_faster_link_never_slower(void)
{
    char args[512];
    props_tab t;
    snprintf(args, sizeof args, "--model %s --grid allreduce=ring,tree,oneshot,custom --grid "
             "concurrency=1,16 --grid link=pcie5-8gpu-default,pcie5-8gpu,nvlink4-8gpu", tp4_path);
    if (props_sweep(args, &t))
        return;
    CHECK(t.nrow == 24, "%d rows", t.nrow);
    for (int g = 0; g < 8; g++) {
        props_monotone(&t, 3 * g, 1, 3, "tok_s", "precision", +1, "faster link");
        props_monotone(&t, 3 * g, 1, 3, "base_tok_s", "base_precision", +1, "faster link");
        props_monotone(&t, 3 * g, 1, 3, "comm", "precision", -1, "faster link");
    }
}

static void props_more_ranks_more_comm(void)
{
    char args[512];
    props_tab t;
    snprintf(args, sizeof args, "--model %s --link alpha=2,beta=100 --grid allreduce=ring,tree,"
             "oneshot,twoshot --grid concurrency=1,16 --grid ranks=1,2,4,8", tp4_path);
    if (props_sweep(args, &t))
        return;
    for (int g = 0; g < 8; g++) {
        CHECK(props_get(&t, 4 * g, "comm") == 0, "row %d: comm %.3f at one rank", 4 * g,
              props_get(&t, 4 * g, "comm"));
        for (int i = 1; i < 3; i++)
            CHECK(props_get(&t, 4 * g + i + 1, "comm") > props_get(&t, 4 * g + i, "comm"),
                  "rows %d, %d: comm %.3f -> %.3f with more ranks", 4 * g + i, 4 * g + i + 1,
                  props_get(&t, 4 * g + i, "comm"), props_get(&t, 4 * g + i + 1, "comm"));
        props_monotone(&t, 4 * g, 1, 4, "base_tok_s", "base_precision", -1, "more ranks");
    }
}

/* p10 <= p50 <= p90, and the speedup's interval holds the ratio of the medians */
static void props_intervals_hold_the_ratio(void)
{
    props_tab t;
    if (props_sweep("--grid seconds=0,0.5 --grid concurrency=1,8 --grid alpha=0,0.5,0.9", &t))
        return;
    for (int r = 0; r < t.nrow; r++) {
        const char *m[3][3] = {{"tok_s_p10", "tok_s_p50", "tok_s_p90"},
                               {"base_tok_s_p10", "base_tok_s_p50", "base_tok_s_p90"},
                               {"speedup_p10", "speedup_p50", "speedup_p90"}};
        for (int k = 0; k < 3; k++)
            CHECK(props_get(&t, r, m[k][0]) <= props_get(&t, r, m[k][1]) &&
                  props_get(&t, r, m[k][1]) <= props_get(&t, r, m[k][2]),
                  "row %d: %s %.4f %.4f %.4f", r, m[k][1], props_get(&t, r, m[k][0]),
                  props_get(&t, r, m[k][1]), props_get(&t, r, m[k][2]));
        double ratio = props_get(&t, r, "tok_s_p50") / props_get(&t, r, "base_tok_s_p50");
        CHECK(ratio >= props_get(&t, r, "speedup_p10") - 1e-4 &&
              ratio <= props_get(&t, r, "speedup_p90") + 1e-4,
              "row %d: ratio of medians %.4f outside [%.4f, %.4f]", r, ratio,
              props_get(&t, r, "speedup_p10"), props_get(&t, r, "speedup_p90"));
    }
}

int main(int argc, char **argv)
{
    (void)argc;
    specsim_bin_find(argv[0], specsim, sizeof specsim);
    if (specsim_bin_missing(specsim)) {
        CHECK(0, "no %s", specsim);
        return check_done();
    }
    strcpy(dir, "/tmp/specsim-props-XXXXXX");
    if (!mkdtemp(dir)) {
        CHECK(0, "mkdtemp failed");
        return check_done();
    }
    snprintf(tp4_path, sizeof tp4_path, "%s/tp4.json", dir);
    CHECK(specsim_write_text(tp4_path, tp4_model_json) == 0, "cannot write %s", tp4_path);
    RUN(props_alpha_never_lowers_tok_s);
    RUN(props_longer_prompts_never_speed_decode);
    RUN(props_concurrency_total_up_per_request_down);
    RUN(props_faster_link_never_slower);
    RUN(props_more_ranks_more_comm);
    RUN(props_intervals_hold_the_ratio);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "  could not remove %s\n", dir);
    return check_done();
}
