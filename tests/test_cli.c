/* test_cli: bin/specsim as a user runs it (built by `make test` first). Bad input of every
 * kind exits 2 with a message naming the field and the value, never a crash; the same
 * seed gives the same bytes; a sweep's CSV does not depend on the number of workers or on
 * baseline sharing; the timeline is Chrome-trace JSON. Runs from the repository root. */
#include "check.h"
#include "tp4_model.h"
#include "specsim_bin.h"

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cjson/cJSON.h>

/* The binary under test: $SPECSIM, else <build>/bin/specsim next to this test's build
 * directory (make asan: build-asan/bin/specsim), else bin/specsim. */
static char specsim[512] = "bin/specsim";
#define SPECSIM "@B@"   /* sh() puts the binary here */

static char dir[64];

/* Runs cmd through the shell; returns its exit status (128+signal if killed) and its
 * stdout (and stderr when both is set) in a malloc'd string. */
static int sh(const char *cmd, int both, char **out)
{
    char full[4096];
    const char *s = strstr(cmd, SPECSIM);
    if (s)
        snprintf(full, sizeof full, "%.*s%s%s %s", (int)(s - cmd), cmd, specsim, s + 3,
                 both ? "2>&1" : "2>/dev/null");
    else
        snprintf(full, sizeof full, "%s %s", cmd, both ? "2>&1" : "2>/dev/null");
    return specsim_run_capture(full, out);
}

static void write_file(const char *name, const char *text)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    CHECK(specsim_write_text(path, text) == 0, "cannot write %s", path);
}



static char model_path[128];

/* cmd exits 2 and its output names want1 and want2. */
static void expect_exit_2(const char *cmd, const char *want1, const char *want2)
{
    char *out;
    int rc = sh(cmd, 1, &out);
    CHECK(rc == 2, "`%s` exited %d (want 2): %s", cmd, rc, out ? out : "");
    CHECK(out && strstr(out, want1) && strstr(out, want2),
          "`%s`: message \"%s\" should name \"%s\" and \"%s\"", cmd, out ? out : "", want1,
          want2);
    free(out);
}

static void cli_bad_input_exits_2(void)
{
    struct { const char *args, *want1, *want2; } cases[] = {
        /* the model file */
        {"--model %D/broken.json", "broken.json", "JSON"},
        {"--model %D/noverify.json", "noverify.json", "phases.verify"},
        {"--model %D/nonexistent.json", "nonexistent.json", "cannot open"},
        /* unknown knobs */
        {"--frobnicate 3", "--frobnicate", "unknown"},
        {"--config %D/unknown.json", "unknown.json", "field speculation_depth"},
        /* alpha outside [0, 1) */
        {"--alpha 1.0", "--alpha", "value 1.0"},
        {"--alpha -0.1", "--alpha", "value -0.1"},
        {"--alpha 0.7x", "--alpha", "0.7x"},
        {"--config %D/alpha.json", "alpha.json", "field alpha: value 1.5"},
        {"--acceptance alpha:1.2", "--acceptance", "1.2"},
        {"--acceptance frob:0.3", "--acceptance", "frob"},
        /* accept length: reachable, and not with an acceptance model */
        {"--steps 3 --accept-len 4", "--accept-len", "value 4"},
        {"--steps 3 --accept-len 0.5", "--accept-len", "value 0.5"},
        {"--accept-len 2 --alpha 0.6", "--accept-len", "not both"},
        /* the loop (docs/simulator.md): a known name; hf-assisted runs batch 1, a chain */
        {"--loop vllm", "--loop", "value vllm"},
        {"--loop hf-assisted --bs 2", "field concurrency: value 2", "batch 1"},
        {"--loop hf-assisted --steps 2 --topk 2 --draft-tokens 3", "field topk: value 2", "chain"},
        /* steps, topk, draft tokens */
        {"--steps 0", "--steps", "value 0"},
        {"--steps 2.5", "--steps", "2.5"},
        {"--topk 0", "--topk", "value 0"},
        {"--draft-tokens 1", "--draft-tokens", "value 1"},
        {"--steps 3 --draft-tokens 5", "--draft-tokens", "value 5"},
        {"--steps 2 --topk 2 --draft-tokens 6", "--draft-tokens", "value 6"},
        {"--config %D/chain.json", "chain.json", "draft-tokens"},
        /* a config's boolean for a number ("steps": true ran steps 1) and a knob given
         * twice (the last won) were taken in silence */
        {"--config %D/bool.json", "bool.json", "field steps: value true"},
        {"--config %D/twice.json", "twice.json", "field cuda_graph_bs: value \"4\": given twice"},
        /* a file name written as a number was opened as "3" ("3: cannot open") */
        {"--config %D/modelnum.json", "modelnum.json", "field model: value 3: a file name"},
        /* CUDA graphs, batch, ranks */
        {"--cuda-graph-bs ''", "--cuda-graph-bs", "empty"},
        {"--cuda-graph-bs 1,x,4", "--cuda-graph-bs", "\"x\""},
        {"--cuda-graph-bs 32,64 --cuda-graph-max-bs 16", "--cuda-graph-max-bs", "value 16"},
        {"--bs 0", "--bs", "value 0"},
        {"--concurrency -4", "--concurrency", "value -4"},
        {"--ranks 0", "--ranks", "value 0"},
        {"--ranks -2", "--ranks", "value -2"},
        /* other values */
        {"--output-len 0", "--output-len", "\"0\""},
        {"--output-len uniform:9:3", "--output-len", "uniform:9:3"},
        {"--link warp-drive", "--link", "warp-drive"},
        {"--link alpha=1,beta=-3", "--link", "beta=-3"},
        {"--allreduce butterfly", "--allreduce", "butterfly"},
        {"--jitter-scale -1", "--jitter-scale", "value -1"},
        {"--iterations 0", "--iterations", "value 0"},
        {"--precision 1", "--precision", "value 1"},
        {"--precision 0.01 --requests 20", "--precision", "finite benchmark"},
        {"--seconds -2", "--seconds", "value -2"},
        {"--steps", "--steps", "missing"},
        {"stray", "stray", "unexpected"},
        /* a sweep's options and a second output format were ignored in silence (--out wrote
         * nothing, exit 0) */
        {"--out %D/run.csv", "field --out", "specsim sweep"},
        {"--shard 1/2", "field --shard", "specsim sweep"},
        {"--jobs 3", "field --jobs", "specsim sweep"},
        {"--json --csv", "field --csv", "not with --json"},
    };
    char cmd[1024], args[512];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        /* %D: the test's temporary directory */
        const char *a = cases[i].args;
        char *o = args;
        while (*a && o < args + sizeof args - 64) {
            if (a[0] == '%' && a[1] == 'D') {
                o += sprintf(o, "%s", dir);
                a += 2;
            } else {
                *o++ = *a++;
            }
        }
        *o = '\0';
        int model_given = strstr(args, "--model") != NULL;
        snprintf(cmd, sizeof cmd, SPECSIM " run %s%s %s", model_given ? "" : "--model ",
                 model_given ? "" : model_path, args);
        expect_exit_2(cmd, cases[i].want1, cases[i].want2);
    }
    /* commands and sweeps */
    struct { const char *cmd, *want1, *want2; } more[] = {
        {SPECSIM " frob", "frob", "unknown command"},
        {SPECSIM " sweep --model %M", "--grid", "at least one"},
        {SPECSIM " sweep --model %M --grid steps=5..1", "--grid", "steps=5..1"},
        {SPECSIM " sweep --model %M --grid nope=1,2", "--grid", "nope=1,2"},
        {SPECSIM " sweep --model %M --grid alpha=0.5,1.2 --iterations 10", "alpha", "value 1.2"},
        {SPECSIM " sweep --model %M --grid steps=0..2 --iterations 10", "steps", "value 0"},
        {SPECSIM " run --model %M --grid steps=1..2", "--grid", "sweep"},
        {SPECSIM " sweep --model %M --grid steps=1..2 --shard 3/2", "--shard", "3/2"},
        {SPECSIM " sweep --model %M --grid steps=1..2 --shard 1", "--shard", "I/N"},
        /* a range of more values than an axis holds once said "expected seed=A..B" */
        {SPECSIM " sweep --model %M --grid seed=1..4000000", "seed=1..4000000", "4000000 values: at most 100000"},
        /* ignored in silence once: a sweep wrote CSV for --json, presets took any arguments */
        {SPECSIM " sweep --model %M --grid steps=1..2 --iterations 10 --json", "field --json", "writes CSV"},
        {SPECSIM " presets --frob", "field --frob", "no arguments"},
    };
    for (size_t i = 0; i < sizeof more / sizeof more[0]; i++) {
        char buf[1024];
        const char *m = strstr(more[i].cmd, "%M");
        if (m)
            snprintf(buf, sizeof buf, "%.*s%s%s", (int)(m - more[i].cmd), more[i].cmd, model_path,
                     m + 2);
        else
            snprintf(buf, sizeof buf, "%s", more[i].cmd);
        expect_exit_2(buf, more[i].want1, more[i].want2);
    }
}

static void cli_same_seed_same_bytes(void)
{
    char cmd[1024], *a, *b, *c;
    snprintf(cmd, sizeof cmd, SPECSIM " run --model %s --bs 6 --iterations 300 --seed 42 "
             "--output-len exp:100 --link pcie5-8gpu", model_path);
    CHECK(sh(cmd, 0, &a) == 0, "`%s` failed", cmd);
    CHECK(sh(cmd, 0, &b) == 0, "`%s` failed", cmd);
    CHECK(a && b && strcmp(a, b) == 0, "two runs with seed 42 differ");
    CHECK(a && strstr(a, "# speedup") && strstr(a, "\nspec ") && strstr(a, "\nbaseline "),
          "no results in:\n%s", a ? a : "");
    snprintf(cmd, sizeof cmd, SPECSIM " run --model %s --bs 6 --iterations 300 --seed 43 "
             "--output-len exp:100 --link pcie5-8gpu", model_path);
    CHECK(sh(cmd, 0, &c) == 0, "`%s` failed", cmd);
    CHECK(a && c && strcmp(a, c) != 0, "seeds 42 and 43 gave the same output");
    free(a), free(b), free(c);
    /* --json is JSON and deterministic too */
    snprintf(cmd, sizeof cmd, SPECSIM " run --model %s --bs 3 --iterations 200 --json", model_path);
    CHECK(sh(cmd, 0, &a) == 0 && sh(cmd, 0, &b) == 0, "json runs failed");
    CHECK(a && b && strcmp(a, b) == 0, "json output differs between runs");
    cJSON *j = a ? cJSON_Parse(a) : NULL;
    CHECK(j && cJSON_GetObjectItem(j, "spec") && cJSON_GetObjectItem(j, "speedup"),
          "not the expected JSON: %s", a ? a : "");
    cJSON_Delete(j);
    free(a), free(b);
}

/* --accept-len: the run uses the alpha whose chain gives that length, shown in the banner,
 * and its simulated accept length is that length */
static void cli_accept_len_sets_alpha(void)
{
    char cmd[1024], *out;
    snprintf(cmd, sizeof cmd, SPECSIM " run --model %s --steps 3 --accept-len 1.875 --iterations "
             "20000 --no-baseline --csv --quiet", model_path);
    CHECK(sh(cmd, 0, &out) == 0, "`%s` failed", cmd);
    CHECK(out && strstr(out, "alpha:0.5,"), "alpha 0.5 expected:\n%s", out ? out : "");
    const char *row = out ? strchr(out, '\n') : NULL;
    double acc = 0;
    if (row) {   /* accept_len is column 13 */
        const char *p = row + 1;
        for (int i = 1; i < 13 && p; i++) {
            p = strchr(p, ',');
            if (p)
                p++;
        }
        acc = p ? atof(p) : 0;
    }
    CHECK_NEAR(acc, 1.875, 0, 0.02);
    free(out);
}

/* A model that says what it was fitted from (verify up to 4 query tokens per row and 64
 * tokens a forward): a run past it warns on stderr, once per phase, and still runs (exit 0,
 * the same numbers); a run within it says nothing; a sweep warns once with the count. */
static void cli_warns_beyond_fitted_range(void)
{
    char *m = strdup(tp4_model_json), *v = m ? strstr(m, "\"verify\": {") : NULL;
    CHECK(v != NULL, "verify phase in the test model");
    if (!v) {
        free(m);
        return;
    }
    char text[8192];
    snprintf(text, sizeof text, "%.*s\"verify\": {\"fitted_q_max\": 4, \"fitted_tokens_max\": 64, %s",
             (int)(v - m), m, v + strlen("\"verify\": {"));
    free(m);
    write_file("model_fitted.json", text);
    char cmd[1024], *out;
    snprintf(cmd, sizeof cmd, SPECSIM " run --model %s/model_fitted.json --steps 5 --bs 8 "
             "--iterations 200 --csv --quiet", dir);
    CHECK(sh(cmd, 1, &out) == 0, "`%s` failed", cmd);
    CHECK(out && strstr(out, "specsim run: warning: model cli-tp4: phase verify: 6 query tokens "
                         "per row, fitted up to 4: its cost there is extrapolated"),
          "no warning:\n%s", out ? out : "");
    CHECK(out && !strstr(out, "phase draft"), "draft has no range, yet warned:\n%s", out ? out : "");
    free(out);
    snprintf(cmd, sizeof cmd, SPECSIM " run --model %s/model_fitted.json --steps 3 --bs 32 "
             "--iterations 200 --csv --quiet", dir);
    CHECK(sh(cmd, 1, &out) == 0, "`%s` failed", cmd);
    CHECK(out && strstr(out, "128 tokens a forward, fitted up to 64") &&
          !strstr(out, "query tokens per row"), "tokens warning expected:\n%s", out ? out : "");
    free(out);
    snprintf(cmd, sizeof cmd, SPECSIM " run --model %s/model_fitted.json --steps 3 --bs 4 "
             "--iterations 200 --csv --quiet", dir);
    CHECK(sh(cmd, 1, &out) == 0 && out && !strstr(out, "extrapolated"), "within the range, yet:\n%s",
          out ? out : "");
    free(out);
    snprintf(cmd, sizeof cmd, SPECSIM " sweep --model %s/model_fitted.json --grid steps=1..5 "
             "--bs 4 --iterations 200 --jobs 2 --no-baseline --out %s/beyond.csv", dir, dir);
    CHECK(sh(cmd, 1, &out) == 0, "`%s` failed", cmd);
    const char *w = out ? strstr(out, "phase verify: in 2 of 5 runs, up to 6 query tokens per "
                                      "row, fitted up to 4") : NULL;
    CHECK(w && !strstr(w + 1, "phase verify"), "one sweep warning expected:\n%s", out ? out : "");
    free(out);
}

/* A KV context more than twice the longest the traces held is said once for every phase with
 * a KV term (accept has none; the baseline's decode is priced by verify's groups), and not at
 * twice or less. */
static void cli_warns_once_beyond_fitted_kv(void)
{
    char text[8192];
    size_t n = 0;
    for (const char *s = tp4_model_json; *s && n + 64 < sizeof text; s++) {
        const char *ph[] = {"\"draft\": {", "\"verify\": {", "\"accept\": {", "\"extend\": {"};
        int hit = 0;
        for (int i = 0; i < 4; i++)
            if (strncmp(s, ph[i], strlen(ph[i])) == 0) {
                n += (size_t)snprintf(text + n, sizeof text - n, "%s\"fitted_kv_row_max\": 1000, ", ph[i]);
                s += strlen(ph[i]) - 1;
                hit = 1;
            }
        if (!hit)
            text[n++] = *s;
    }
    text[n] = 0;
    write_file("model_kv.json", text);
    char cmd[1024], *out;
    snprintf(cmd, sizeof cmd, SPECSIM " run --model %s/model_kv.json --steps 3 --bs 4 --prompt-len 8000 "
             "--output-len 64 --iterations 200 --csv --quiet", dir);
    CHECK(sh(cmd, 1, &out) == 0, "`%s` failed", cmd);
    const char *w = out ? strstr(out, "specsim run: warning: model cli-tp4: phases draft, verify, extend, decode: ") : NULL;
    const char *k = w ? strstr(w, "tokens of KV context a request, fitted up to 1000 (more than 2x that)") : NULL;
    CHECK(k && !strstr(k + 20, "KV context"), "one KV warning expected:\n%s", out ? out : "");
    free(out);
    snprintf(cmd, sizeof cmd, SPECSIM " run --model %s/model_kv.json --steps 3 --bs 4 --prompt-len 1900 "
             "--output-len 64 --iterations 200 --csv --quiet", dir);
    CHECK(sh(cmd, 1, &out) == 0 && out && !strstr(out, "extrapolated"), "within 2x, yet:\n%s",
          out ? out : "");
    free(out);
}

static void cli_config_file_sets_knobs(void)
{
    char cmd[1024], *out;
    write_file("cfg.json", "{\"steps\": 2, \"alpha\": 0.6, \"cuda_graph_bs\": [1,2,4],"
                           " \"iterations\": 100}");
    snprintf(cmd, sizeof cmd, SPECSIM " run --model %s --config %s/cfg.json --topk 1", model_path, dir);
    CHECK(sh(cmd, 0, &out) == 0, "`%s` failed", cmd);
    CHECK(out && strstr(out, "# steps                2   <- ") && strstr(out, "cfg.json"),
          "banner does not show steps from the file:\n%s", out ? out : "");
    CHECK(out && strstr(out, "alpha:0.6"), "acceptance from the file missing");
    CHECK(out && strstr(out, "# cuda-graph-bs        1,2,4"), "graph list from the file missing");
    free(out);
    /* flags override the file, wherever they stand */
    snprintf(cmd, sizeof cmd, SPECSIM " run --model %s --steps 4 --config %s/cfg.json", model_path, dir);
    CHECK(sh(cmd, 0, &out) == 0, "`%s` failed", cmd);
    CHECK(out && strstr(out, "# steps                4   <- command line"), "flag did not win:\n%s",
          out ? out : "");
    free(out);
}

static void cli_sweep_csv_independent_of_jobs(void)
{
    char cmd[1024], *a, *b, *c;
    const char *grid = "--grid steps=1..3 --grid alpha=0.6,0.8 --grid concurrency=1,5 "
                       "--iterations 150 --quiet";
    snprintf(cmd, sizeof cmd, SPECSIM " sweep --model %s %s --jobs 1", model_path, grid);
    CHECK(sh(cmd, 0, &a) == 0, "`%s` failed", cmd);
    snprintf(cmd, sizeof cmd, SPECSIM " sweep --model %s %s --jobs 2", model_path, grid);
    CHECK(sh(cmd, 0, &b) == 0, "`%s` failed", cmd);
    snprintf(cmd, sizeof cmd, SPECSIM " sweep --model %s %s --jobs 3 --baseline-reuse 0",
             model_path, grid);
    CHECK(sh(cmd, 0, &c) == 0, "`%s` failed", cmd);
    CHECK(a && b && strcmp(a, b) == 0, "CSV differs between 1 and 2 workers");
    /* a baseline does not read the speculative knobs: sharing it changes nothing */
    CHECK(a && c && strcmp(a, c) == 0, "CSV differs with baseline sharing off");
    int lines = 0;
    for (const char *p = a; p && *p; p++)
        lines += *p == '\n';
    CHECK(lines == 1 + 12, "%d lines, want a header and 12 rows", lines);
    CHECK(a && strncmp(a, "steps,alpha,concurrency,tok_s,", 30) == 0, "header: %.60s", a ? a : "");
    CHECK(a && strstr(a, ",speedup,speedup_p10,speedup_p50,speedup_p90\n") &&
          strstr(a, "\n1,0.6,1,") && strstr(a, "\n3,0.8,5,"),
          "rows not in grid order:\n%s", a ? a : "");
    free(a), free(b), free(c);
}

/* --shard I/N: the N parts' rows, concatenated in order, are the whole sweep's, whatever the
 * parts' workers; a speculative axis outermost puts a part's baselines in an earlier part. */
static void cli_sweep_shards_concatenate_to_the_whole(void)
{
    char cmd[1024], *whole, *part;
    const char *grid = "--grid steps=1..3 --grid concurrency=1,5 --grid alpha=0.6,0.8 "
                       "--iterations 120 --quiet";
    snprintf(cmd, sizeof cmd, SPECSIM " sweep --model %s %s", model_path, grid);
    CHECK(sh(cmd, 0, &whole) == 0, "`%s` failed", cmd);
    size_t cap = 1 << 16, len = 0;
    char *cat = calloc(1, cap);
    int parts = 5;                 /* 12 configurations: parts of 2 and 3 */
    for (int i = 1; i <= parts && cat; i++) {
        snprintf(cmd, sizeof cmd, SPECSIM " sweep --model %s %s --shard %d/%d --jobs %d",
                 model_path, grid, i, parts, 1 + i % 2);
        CHECK(sh(cmd, 0, &part) == 0, "`%s` failed", cmd);
        const char *rows = part ? strchr(part, '\n') : NULL;   /* each part has the header */
        if (i == 1 && part)
            rows = part;
        else if (rows)
            rows++;
        if (rows && len + strlen(rows) < cap) {
            memcpy(cat + len, rows, strlen(rows) + 1);
            len += strlen(rows);
        }
        free(part);
    }
    CHECK(whole && cat && strcmp(whole, cat) == 0, "parts differ from the whole:\n%s\n---\n%s",
          whole ? whole : "", cat ? cat : "");
    free(whole);
    free(cat);
}

/* A part larger than a block (SWEEP_BLOCK, 16384) runs and writes block by block, its
 * memory bounded: its rows are those of the same grid run in two parts of one block each,
 * with the speculative axis outermost so that the second block's baselines are those of
 * configurations in the first (run again there, seeded: the same runs). */
static void cli_sweep_blocks_equal_the_parts(void)
{
    char cmd[1024], *whole = NULL, *p1 = NULL, *p2 = NULL;
    const char *grid = "--grid steps=1..2 --grid concurrency=1..100 --grid prompt-len=100..199 "
                       "--iterations 1 --warmup 0 --precision 0 --intervals 0 --output-len 4 --quiet";
    snprintf(cmd, sizeof cmd, SPECSIM " sweep --model %s %s 2>/dev/null", model_path, grid);
    CHECK(sh(cmd, 0, &whole) == 0, "`%s` failed", cmd);
    snprintf(cmd, sizeof cmd, SPECSIM " sweep --model %s %s --shard 1/2 2>/dev/null", model_path,
             grid);
    CHECK(sh(cmd, 0, &p1) == 0, "`%s` failed", cmd);
    snprintf(cmd, sizeof cmd, SPECSIM " sweep --model %s %s --shard 2/2 2>/dev/null", model_path,
             grid);
    CHECK(sh(cmd, 0, &p2) == 0, "`%s` failed", cmd);
    int lines = 0;
    for (const char *q = whole; q && *q; q++)
        lines += *q == '\n';
    CHECK(lines == 1 + 20000, "%d lines, want a header and 20000 rows", lines);
    const char *rows2 = p2 ? strchr(p2, '\n') : NULL;
    size_t n1 = p1 ? strlen(p1) : 0;
    CHECK(whole && p1 && rows2 && strncmp(whole, p1, n1) == 0 &&
          strcmp(whole + n1, rows2 + 1) == 0, "the whole sweep's rows differ from its parts'");
    free(whole), free(p1), free(p2);
}

static void cli_timeline_is_chrome_trace(void)
{
    char cmd[1024], path[256], *out;
    snprintf(path, sizeof path, "%s/tl.json", dir);
    snprintf(cmd, sizeof cmd, SPECSIM " run --model %s --bs 3 --iterations 30 --timeline %s "
             "--timeline-iterations 2", model_path, path);
    CHECK(sh(cmd, 0, &out) == 0, "`%s` failed", cmd);
    free(out);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL, "no timeline written");
    if (!f)
        return;
    static char buf[8 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    cJSON *j = cJSON_Parse(buf);
    CHECK(j != NULL, "timeline is not JSON");
    cJSON *ev = cJSON_GetObjectItem(j, "traceEvents");
    CHECK(cJSON_IsArray(ev), "no traceEvents array");
    int x = 0, meta = 0, pids[2048] = {0}, gpu = 0, host = 0, coll = 0, bad = 0;
    cJSON *e;
    cJSON_ArrayForEach(e, ev) {
        const char *ph = cJSON_GetStringValue(cJSON_GetObjectItem(e, "ph"));
        int pid = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(e, "pid"));
        if (ph && strcmp(ph, "M") == 0) {
            meta++;
            continue;
        }
        if (!ph || strcmp(ph, "X") || !cJSON_IsNumber(cJSON_GetObjectItem(e, "ts")) ||
            !cJSON_IsNumber(cJSON_GetObjectItem(e, "dur")) ||
            cJSON_GetNumberValue(cJSON_GetObjectItem(e, "dur")) < 0) {
            bad++;
            continue;
        }
        x++;
        if (pid >= 0 && pid < 2048)
            pids[pid] = 1;
        int tid = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(e, "tid"));
        gpu += tid == 2;
        host += tid == 1;
        const char *cat = cJSON_GetStringValue(cJSON_GetObjectItem(e, "cat"));
        coll += cat && strcmp(cat, "collective") == 0;
    }
    CHECK(bad == 0, "%d malformed events", bad);
    CHECK(x > 50 && gpu > 0 && host > 0 && coll > 0, "%d X events (%d gpu, %d host, %d "
          "collective)", x, gpu, host, coll);
    CHECK(meta >= 4 * 4 * 2, "%d metadata events (want names for 4 ranks x 2 runs)", meta);
    CHECK(pids[1] && pids[4] && pids[1001] && pids[1004], "spec ranks 1..4 and baseline "
          "ranks 1001..1004 expected");
    cJSON_Delete(j);
}

static void cli_help_lists_every_knob(void)
{
    char *out;
    CHECK(sh(SPECSIM " run --help", 0, &out) == 0, "run --help failed");
    static const char *knobs[] = {"--model", "--config", "--acceptance", "--alpha", "--accept-len", "--steps",
        "--topk", "--draft-tokens", "--bs", "--concurrency", "--requests", "--iterations",
        "--output-len", "--prompt-len", "--cuda-graph-bs", "--cuda-graph-max-bs",
        "--eager-launch-us", "--graph-launch-us", "--ranks", "--link", "--allreduce",
        "--jitter-scale", "--seed", "--warmup", "--timeline", "--json", "--csv", "--quiet",
        "--no-baseline", "--sync-segments"};
    for (size_t i = 0; i < sizeof knobs / sizeof knobs[0]; i++)
        CHECK(out && strstr(out, knobs[i]), "run --help does not list %s", knobs[i]);
    free(out);
    CHECK(sh(SPECSIM " help", 0, &out) == 0 && out && strstr(out, "sweep"), "help");
    free(out);
    CHECK(sh(SPECSIM " presets", 0, &out) == 0 && out && strstr(out, "pcie5-8gpu"), "presets");
    free(out);
}

/* A window too short for 3 batch means has no standard error: its precision column reads 0,
 * which looked like "known exactly"; the run says so once per mode. */
static void cli_too_short_window_says_its_precision_is_unknown(void)
{
    char cmd[1024], *out;
    snprintf(cmd, sizeof cmd, SPECSIM " run --model %s --quiet --iterations 2 --warmup 0 --precision 0", model_path);
    int rc = sh(cmd, 1, &out);
    const char *w = "is too short to know its tok/s's precision";
    const char *a = out ? strstr(out, w) : NULL, *b = a ? strstr(a + 1, w) : NULL;
    CHECK(rc == 0 && a && b && !strstr(b + 1, w) && strstr(out, "spec: the measured window (2 iterations)"),
          "exit %d: %s", rc, out ? out : "");
    free(out);
    snprintf(cmd, sizeof cmd, SPECSIM " run --model %s --quiet", model_path);
    rc = sh(cmd, 1, &out);
    CHECK(rc == 0 && out && !strstr(out, w), "a default run warned: %s", out ? out : "");
    free(out);
}

/* A run whose known part will take minutes says so 2 s in: a warm-up under --precision
 * (--warmup 1e9: 10 min) and a finite --requests (1e9: hours) once ran without a word.
 * Killed after 6 s (timeout exits 124). */
static void cli_long_runs_say_so(void)
{
    struct { const char *args, *want; } cases[] = {
        {"--warmup 1000000000", "note: --warmup 1000000000 will take about"},
        {"--requests 1000000000 --precision 0", "note: --requests 1000000000 will take about"},
        {"--precision 1e-9 --iterations 1000000000", "at the latest at --iterations 1000000000: up to about"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char cmd[1024], *out;
        snprintf(cmd, sizeof cmd, "timeout 6 " SPECSIM " run --model %s --quiet %s", model_path,
                 cases[i].args);
        int rc = sh(cmd, 1, &out);
        CHECK(rc == 124 && out && strstr(out, cases[i].want), "`%s` exited %d (want 124, "
              "killed) saying \"%s\" (want \"%s\")", cmd, rc, out ? out : "", cases[i].want);
        free(out);
    }
}

/* `specsim help` names every command main() dispatches (lite-from was missing from it). */
static void cli_help_lists_every_command(void)
{
    char *out;
    CHECK(sh(SPECSIM " help", 0, &out) == 0, "help failed");
    static const char *cmds[] = {"run", "sweep", "presets", "fit", "scale", "fit-allreduce",
        "import", "lite-from", "log", "help"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        char want[64];
        snprintf(want, sizeof want, "  specsim %s ", cmds[i]);
        CHECK(out && strstr(out, want), "specsim help does not list the command %s", cmds[i]);
    }
    free(out);
}

int main(int argc, char **argv)
{
    (void)argc;
    specsim_bin_find(argv[0], specsim, sizeof specsim);
    if (specsim_bin_missing(specsim)) {
        CHECK(0, "no %s", specsim);
        return check_done();
    }
    strcpy(dir, "/tmp/specsim-cli-XXXXXX");
    if (!mkdtemp(dir)) {
        CHECK(0, "mkdtemp failed");
        return check_done();
    }
    write_file("model.json", tp4_model_json);
    snprintf(model_path, sizeof model_path, "%s/model.json", dir);
    write_file("broken.json", "{\"specsim_model\": 1, \"name\": \"x\", \"phases\": {");
    write_file("noverify.json", "{\"specsim_model\": 1, \"name\": \"x\", \"phases\": {\"accept\":"
               " {\"groups\": [{\"name\": \"a\", \"count\": 1, \"base_us\": 1}]}}}");
    write_file("unknown.json", "{\"steps\": 2, \"speculation_depth\": 4}");
    write_file("alpha.json", "{\"alpha\": 1.5}");
    write_file("chain.json", "{\"steps\": 3, \"draft_tokens\": 7}");
    write_file("bool.json", "{\"steps\": true, \"baseline\": true}");
    write_file("modelnum.json", "{\"model\": 3}");
    write_file("twice.json", "{\"cuda-graph-bs\": \"1,2\", \"cuda_graph_bs\": \"4\"}");
    RUN(cli_bad_input_exits_2);
    RUN(cli_same_seed_same_bytes);
    RUN(cli_config_file_sets_knobs);
    RUN(cli_accept_len_sets_alpha);
    RUN(cli_warns_beyond_fitted_range);
    RUN(cli_warns_once_beyond_fitted_kv);
    RUN(cli_sweep_csv_independent_of_jobs);
    RUN(cli_sweep_shards_concatenate_to_the_whole);
    RUN(cli_sweep_blocks_equal_the_parts);
    RUN(cli_timeline_is_chrome_trace);
    RUN(cli_help_lists_every_knob);
    RUN(cli_help_lists_every_command);
    RUN(cli_long_runs_say_so);
    RUN(cli_too_short_window_says_its_precision_is_unknown);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "  could not remove %s\n", dir);
    return check_done();
}
