/* test_phasemap: the naming profiles (models/phasemap) that turn foreign span names into the
 * fit's phase instances. SGLang's spans on the hand-made Kineto fixture; padding to the
 * captured batch sizes; the refusals (a speculative trace without its shape, spans that name
 * no phase); the user's phase map; and the end-to-end check: a synthetic workload written
 * once as a Kineto trace with SGLang's span names and once as records in specprof's words
 * fits to the same model. */
#include "check.h"
#include "fit.h"
#include "phasemap.h"
#include "timport.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FIXTURE "tests/data/kineto/sglang-eagle-tiny.trace.json"

static char tmpdir[64];

static int write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fputs(text, f);
    return fclose(f);
}

static const char *args_spec =
    "{\"model_path\": \"meta-llama/Llama-3.1-8B-Instruct\", \"tp_size\": 1, "
    "\"speculative_algorithm\": \"EAGLE3\", \"speculative_num_steps\": 3, "
    "\"speculative_eagle_topk\": 1, \"speculative_num_draft_tokens\": 4, "
    "\"cuda_graph_bs\": [1, 2, 4, 8], \"disable_cuda_graph\": false, \"version\": \"0.5.5\"}";

/* The committed Kineto fixture into t: 0, or -1 with a failed check naming it (t is then empty:
 * the test stops there rather than judge an empty trace, which some refusals would pass). */
static int load_fixture(fit_trace *t)
{
    char err[512] = "";
    int rc = timport_load(t, FIXTURE, NULL, NULL, err, sizeof err);
    CHECK(rc == 0, "%s", err);
    return rc;
}

static int has_range(const fit_trace *t, const char *name)
{
    for (size_t i = 0; i < t->nrng; i++)
        if (!strcmp(t->rng[i].name, name))
            return 1;
    return 0;
}

static void sglang_spans_become_phase_instances(void)
{
    char err[1024], path[200];
    fit_trace t;
    phasemap pm;
    pm_stats st;
    phasemap_init(&pm);
    snprintf(path, sizeof path, "%s/server_args.json", tmpdir);
    write_file(path, args_spec);
    CHECK(phasemap_shape_load(&pm.shape, path, err, sizeof err) == 0, "%s", err);
    CHECK(pm.shape.known && pm.shape.steps == 3 && pm.shape.topk == 1 && pm.shape.draft_tokens == 4 &&
          pm.shape.ngraph_bs == 4 && pm.shape.tp_size == 1, "shape");
    if (load_fixture(&t))
        return;
    CHECK(phasemap_apply(&pm, &t, &st, err, sizeof err) == 0, "%s", err);
    CHECK(!strcmp(st.profile, "sglang"), "auto chose %s", st.profile);
    /* per round: draft (batch from its round's verify), verify (its step folded in),
     * accept (verify_sample, batch from the verify before it), extend (step folded in) */
    CHECK(st.instances == 8 && st.per_phase[WM_DRAFT] == 2 && st.per_phase[WM_VERIFY] == 2 &&
          st.per_phase[WM_ACCEPT] == 2 && st.per_phase[WM_EXTEND] == 2, "instances %zu", st.instances);
    CHECK(st.folded == 4 && st.borrowed == 4 && st.ignored == 2, "folded %zu borrowed %zu ignored %zu (%s)",
          st.folded, st.borrowed, st.ignored, st.ignored_names);
    CHECK(t.nrng == 8, "ranges left %zu", t.nrng);
    /* bs 3 pads to 4 (captured 1, 2, 4, 8): verify 4 x 4 tokens, draft 4 x topk 1, extend
     * 4 x (steps + 1) */
    CHECK(has_range(&t, "verify tokens=16 bs=3 rows=4 ctx=0 graph=1 steps=3 topk=1"), "verify name: %s",
          t.nrng ? t.rng[1].name : "");
    CHECK(has_range(&t, "draft tokens=4 bs=3 rows=4 ctx=0 graph=1 steps=3 topk=1"), "draft name");
    /* sampling is eager over the real rows */
    CHECK(has_range(&t, "accept tokens=12 bs=3 rows=3 ctx=0 graph=0 steps=3 topk=1"), "accept name");
    CHECK(has_range(&t, "extend tokens=16 bs=3 rows=4 ctx=0 graph=1 steps=3 topk=1"), "extend name");
    /* the verify instance is the stage span (it holds the step span and its launch) */
    int64_t base = 1759000000000000000LL;
    int found = 0;
    for (size_t i = 0; i < t.nrng; i++)
        if (!strncmp(t.rng[i].name, "verify ", 7) && t.rng[i].start_ns == base + 1011000)
            found = 1;
    CHECK(found, "verify instance starts where the verify stage span does");
    fit_trace_free(&t);
    /* a per-row context (from the log's #token or --ctx) gives ctx = per_row * bs */
    phasemap_init(&pm);
    phasemap_shape_load(&pm.shape, path, err, sizeof err);
    pm.ctx_per_row = 1000;
    if (load_fixture(&t))
        return;
    CHECK(phasemap_apply(&pm, &t, &st, err, sizeof err) == 0 && st.ctx_from == 2 &&
          has_range(&t, "verify tokens=16 bs=3 rows=4 ctx=3000 graph=1 steps=3 topk=1"), "ctx: %s", err);
    fit_trace_free(&t);
    /* the server log's #token per running request wins over --ctx: bs 3 is not logged, so
     * the mean over its lines, (58/1 + 182/1 + 900/4 + 1100/4 + 40000/200) / 5 = 188, x 3 */
    CHECK(phasemap_option(&pm, "ctx-log", "tests/data/sglang/server-eagle.log", err, sizeof err) == 1, "%s", err);
    CHECK(fabs(pm.ctx_log_bs[4] - (225 + 275) / 2.0) < 1e-9 && fabs(pm.ctx_log_mean - 188) < 1e-9,
          "log ctx per row: bs 4 %g, mean %g", pm.ctx_log_bs[4], pm.ctx_log_mean);
    if (load_fixture(&t))
        return;
    CHECK(phasemap_apply(&pm, &t, &st, err, sizeof err) == 0 && st.ctx_from == 3 &&
          has_range(&t, "verify tokens=16 bs=3 rows=4 ctx=564 graph=1 steps=3 topk=1"), "log ctx: %s", err);
    fit_trace_free(&t);
}

/* g_sk= rides on DECODE step spans only (an eager draft's forwards): the verify and the
 * draft-extend of the same round take it; the next round's own value is not borrowed back */
static void sglang_round_shares_its_kv_context(void)
{
    char err[512];
    fit_trace t;
    phasemap pm;
    pm_stats st;
    phasemap_init(&pm);
    phasemap_shape_flag(&pm.shape, "2,1,3", err, sizeof err);
    fit_trace_init(&t, "round.json");
    static const struct { int64_t a, b; const char *n; } sp[] = {
        {1000, 2000, "draft"}, {1100, 1900, "step[DECODE bs=2 g_sqsq=2 g_sqsk=500 g_sk=500]"},
        {2000, 3000, "verify"}, {2100, 2900, "step[TARGET_VERIFY bs=2]"},
        {3000, 4000, "draft_extend"}, {3100, 3900, "step[DRAFT_EXTEND bs=2]"},
        {4000, 5000, "draft"}, {4100, 4900, "step[DECODE bs=2 g_sqsq=2 g_sqsk=504 g_sk=504]"},
        {5000, 6000, "verify"}, {5100, 5900, "step[TARGET_VERIFY bs=2]"},
    };
    for (size_t i = 0; i < sizeof sp / sizeof sp[0]; i++) {
        ptrace_range r = {sp[i].a, sp[i].b, sp[i].n, "", 5, 1, 0, 0, 0};
        fit_trace_add_range(&t, &r);
    }
    /* no verify_sample spans: each verify stage is split at its step span's end into verify
     * and accept (draft, verify, accept, extend, draft, verify, accept) */
    CHECK(phasemap_apply(&pm, &t, &st, err, sizeof err) == 0 && st.instances == 7 && st.folded == 5 &&
          st.split == 2, "%s (%zu instances, %zu split)", err, st.instances, st.split);
    CHECK(t.nrng == 7 && strstr(t.rng[1].name, "verify ") && strstr(t.rng[1].name, " ctx=500 ") &&
          strstr(t.rng[3].name, "extend ") && strstr(t.rng[3].name, " ctx=500 ") &&
          strstr(t.rng[5].name, " ctx=504 "), "names: %s | %s | %s", t.nrng > 1 ? t.rng[1].name : "",
          t.nrng > 3 ? t.rng[3].name : "", t.nrng > 5 ? t.rng[5].name : "");
    CHECK(t.nrng == 7 && strncmp(t.rng[2].name, "accept tokens=6 bs=2 rows=2 ctx=500 graph=0", 43) == 0 &&
          t.rng[1].end_ns == 2900 && t.rng[2].start_ns == 2900 && t.rng[2].end_ns == 3000,
          "accept %s %lld..%lld", t.nrng > 2 ? t.rng[2].name : "", t.nrng > 2 ? (long long)t.rng[2].start_ns : 0LL,
          t.nrng > 2 ? (long long)t.rng[2].end_ns : 0LL);
    fit_trace_free(&t);
}

static void sglang_padding_follows_the_captured_sizes(void)
{
    pm_shape s;
    memset(&s, 0, sizeof s);
    s.cuda_graph = 1;
    phasemap_sglang_graph_bs(&s, 512);
    int g;
    /* shared/FACTS.md: 1..8, 10..32 step 2, 40..64 step 4, 72..256 step 8, 272.. step 16 */
    CHECK(s.graph_bs[0] == 1 && s.graph_bs[7] == 8 && s.graph_bs[8] == 10, "head %d %d %d",
          s.graph_bs[0], s.graph_bs[7], s.graph_bs[8]);
    CHECK(phasemap_pad(&s, 9, &g) == 10 && g == 1, "9 -> 10");
    CHECK(phasemap_pad(&s, 33, &g) == 40 && g == 1, "33 -> 40");
    CHECK(phasemap_pad(&s, 65, &g) == 72, "65 -> 72");
    CHECK(phasemap_pad(&s, 257, &g) == 272, "257 -> 272");
    CHECK(phasemap_pad(&s, 512, &g) == 512 && g == 1, "512 captured");
    CHECK(phasemap_pad(&s, 513, &g) == 513 && g == 0, "above the max: eager");
    s.cuda_graph = 0;
    CHECK(phasemap_pad(&s, 3, &g) == 3 && g == 0, "graphs off");
    char err[256];
    CHECK(phasemap_graph_flag(&s, "max:160", err, sizeof err) == 0 && s.graph_bs[s.ngraph_bs - 1] == 160,
          "max:160 ends at %d", s.ngraph_bs ? s.graph_bs[s.ngraph_bs - 1] : -1);
    CHECK(phasemap_graph_flag(&s, "8,1,4", err, sizeof err) == 0 && s.ngraph_bs == 3 && s.graph_bs[0] == 1,
          "list sorted");
    CHECK(phasemap_graph_flag(&s, "1,x", err, sizeof err) == -1 && strstr(err, "--cuda-graph-bs"), "%s", err);
}

static void refusals_name_file_field_and_value(void)
{
    char err[1024], path[200];
    fit_trace t;
    phasemap pm;
    /* a speculative trace and no shape */
    phasemap_init(&pm);
    if (load_fixture(&t))
        return;
    CHECK(phasemap_apply(&pm, &t, NULL, err, sizeof err) == -1 && strstr(err, FIXTURE) &&
          strstr(err, "speculative_num_steps") && strstr(err, "step[") == NULL ? 1 :
          strstr(err, "speculative_num_steps") != NULL, "message '%s'", err);
    fit_trace_free(&t);
    /* server_args.json of a speculative server without its shape (NGRAM leaves
     * speculative_num_steps None): read, the shape unknown; the trace that needs it is
     * refused naming the file, the field and the value; --spec-shape completes it */
    snprintf(path, sizeof path, "%s/args-noshape.json", tmpdir);
    write_file(path, "{\"tp_size\": 8, \"speculative_algorithm\": \"NGRAM\", \"speculative_num_steps\": null, "
               "\"speculative_eagle_topk\": 8, \"speculative_num_draft_tokens\": 12}");
    phasemap_init(&pm);
    CHECK(phasemap_shape_load(&pm.shape, path, err, sizeof err) == 0 && !pm.shape.known &&
          strstr(pm.shape.missing, "speculative_num_steps") && strstr(pm.shape.missing, "value null"),
          "%s / missing '%s'", err, pm.shape.missing);
    if (load_fixture(&t))
        return;
    CHECK(phasemap_apply(&pm, &t, NULL, err, sizeof err) == -1 && strstr(err, "args-noshape.json") &&
          strstr(err, "field speculative_num_steps") && strstr(err, "value null"), "message '%s'", err);
    CHECK(phasemap_shape_flag(&pm.shape, "3,1,4", err, sizeof err) == 0 && pm.shape.known && !pm.shape.missing[0] &&
          phasemap_apply(&pm, &t, NULL, err, sizeof err) == 0, "with --spec-shape: %s", err);
    fit_trace_free(&t);
    /* a tp_size that is no rank count (1e300 went through (int): undefined) is refused */
    snprintf(path, sizeof path, "%s/args-tp.json", tmpdir);
    write_file(path, "{\"tp_size\": 1e300, \"speculative_algorithm\": null}");
    phasemap_init(&pm);
    CHECK(phasemap_shape_load(&pm.shape, path, err, sizeof err) == -1 && strstr(err, "args-tp.json") &&
          strstr(err, "field tp_size") && strstr(err, "1e+300"), "message '%s'", err);
    /* disable_cuda_graph or cuda_graph_bs written as strings were ignored */
    snprintf(path, sizeof path, "%s/args-types.json", tmpdir);
    write_file(path, "{\"tp_size\": 1, \"disable_cuda_graph\": \"true\"}");
    CHECK(phasemap_shape_load(&pm.shape, path, err, sizeof err) == -1 && strstr(err, "field disable_cuda_graph") &&
          strstr(err, "\"true\""), "message '%s'", err);
    write_file(path, "{\"tp_size\": 1, \"cuda_graph_bs\": \"1,2,4\"}");
    CHECK(phasemap_shape_load(&pm.shape, path, err, sizeof err) == -1 && strstr(err, "field cuda_graph_bs") &&
          strstr(err, "\"1,2,4\""), "message '%s'", err);
    /* JSON of another kind (the object nested one level down) was read as a baseline server */
    write_file(path, "{\"server_args\": {\"tp_size\": 1}}");
    CHECK(phasemap_shape_load(&pm.shape, path, err, sizeof err) == -1 && strstr(err, "args-types.json") &&
          strstr(err, "not a server_args.json") && strstr(err, "first field: server_args"), "message '%s'", err);
    /* a baseline server's args: the shape stays unknown, the trace is refused naming it */
    snprintf(path, sizeof path, "%s/args-base.json", tmpdir);
    write_file(path, "{\"tp_size\": 1, \"speculative_algorithm\": null, \"cuda_graph_max_bs\": 160}");
    phasemap_init(&pm);
    CHECK(phasemap_shape_load(&pm.shape, path, err, sizeof err) == 0 && !pm.shape.known &&
          pm.shape.ngraph_bs > 0, "%s", err);
    if (load_fixture(&t))
        return;
    CHECK(phasemap_apply(&pm, &t, NULL, err, sizeof err) == -1 && strstr(err, "args-base.json") &&
          strstr(err, "speculative_num_steps"), "message '%s'", err);
    fit_trace_free(&t);
    /* spans that name no phase */
    fit_trace_init(&t, "foo.json");
    ptrace_range r = {1000, 2000, "forward_pass", "", 1, 1, 0, 0, 0};
    fit_trace_add_range(&t, &r);
    phasemap_init(&pm);
    CHECK(phasemap_apply(&pm, &t, NULL, err, sizeof err) == -1 && strstr(err, "foo.json") &&
          strstr(err, "field name") && strstr(err, "forward_pass"), "message '%s'", err);
    t.nrng = 0;
    CHECK(phasemap_apply(&pm, &t, NULL, err, sizeof err) == -1 && strstr(err, "no annotation spans"),
          "message '%s'", err);
    fit_trace_free(&t);
    CHECK(phasemap_set_profile(&pm, "vllm", err, sizeof err) == -1 && strstr(err, "vllm"), "%s", err);
    CHECK(phasemap_load_map(&pm, "verify=x {nope}", err, sizeof err) == -1 && strstr(err, "{nope}"), "%s", err);
    CHECK(phasemap_load_map(&pm, "bogus=3", err, sizeof err) == -1 && strstr(err, "bogus"), "%s", err);
}

/* profile_by_stage writes the prefill forwards to {id}-TP-N-EXTEND.trace.json.gz: a trace of
 * step[EXTEND ..] spans only is named as such (it was "give --profile sglang|specprof"). */
static void sglang_prefill_stage_trace_is_named(void)
{
    char err[1024];
    fit_trace t;
    phasemap pm;
    fit_trace_init(&t, "123-TP-0-EXTEND.trace.json.gz");
    ptrace_range r1 = {1000, 2000, "step[EXTEND bs=1 toks=17]", "", 1, 1, 0, 0, 0};
    ptrace_range r2 = {3000, 4000, "step[EXTEND bs=2 toks=900]", "", 1, 1, 0, 0, 0};
    fit_trace_add_range(&t, &r1);
    fit_trace_add_range(&t, &r2);
    phasemap_init(&pm);
    CHECK(phasemap_set_profile(&pm, "sglang", err, sizeof err) == 0, "%s", err);
    CHECK(phasemap_apply(&pm, &t, NULL, err, sizeof err) == -1 && strstr(err, "123-TP-0-EXTEND") &&
          strstr(err, "prefill-stage trace") && strstr(err, "step[EXTEND bs=1"), "message '%s'", err);
    fit_trace_free(&t);
}

static void phase_map_rules_capture_shapes(void)
{
    char err[512];
    fit_trace t;
    phasemap pm;
    pm_stats st;
    /* a plain program: its own span names carry the batch and the tokens */
    phasemap_init(&pm);
    CHECK(phasemap_load_map(&pm, "verify=my_verify n={bs} q={tokens}*; accept=my_sample*; rows=2; ctx=100",
                            err, sizeof err) == 0, "%s", err);
    fit_trace_init(&t, "plain.json");
    ptrace_range a = {1000, 2000, "my_verify n=5 q=20 (cuda)", "", 1, 1, 0, 0, 0};
    ptrace_range b = {2000, 3000, "my_sample", "", 1, 1, 0, 0, 0};
    ptrace_range c = {3000, 4000, "other", "", 1, 1, 0, 0, 0};
    fit_trace_add_range(&t, &a);
    fit_trace_add_range(&t, &b);
    fit_trace_add_range(&t, &c);
    /* accept has no {tokens} and no shape: refused naming the rule */
    CHECK(phasemap_apply(&pm, &t, &st, err, sizeof err) == -1 && strstr(err, "my_sample") &&
          strstr(err, "field tokens"), "message '%s'", err);
    phasemap_init(&pm);
    CHECK(phasemap_load_map(&pm, "steps=3; topk=1; draft_tokens=4", err, sizeof err) == -1 &&
          strstr(err, "no PHASE=PATTERN rule"), "no rule: %s", err);
    phasemap_init(&pm);
    CHECK(phasemap_load_map(&pm, "verify=my_verify n={bs} q={tokens}*\naccept=my_sample*\nrows=2\nctx=100\n"
                            "steps=3\ntopk=1\ndraft_tokens=4\n", err, sizeof err) == 0, "%s", err);
    CHECK(phasemap_apply(&pm, &t, &st, err, sizeof err) == 0 && st.instances == 2 && st.ignored == 1, "%s", err);
    CHECK(has_range(&t, "verify tokens=20 bs=5 rows=5 ctx=500 steps=3 topk=1"), "verify: %s", t.nrng ? t.rng[0].name : "");
    CHECK(has_range(&t, "accept tokens=8 bs=2 rows=2 ctx=200 steps=3 topk=1"), "accept: %s", t.nrng > 1 ? t.rng[1].name : "");
    fit_trace_free(&t);
    /* vLLM-style names carry no batch: one capture per batch size, given in the map */
    phasemap_init(&pm);
    CHECK(phasemap_load_map(&pm, "verify=gpu_model_runner: forward;accept=gpu_model_runner: sample;"
                            "draft=gpu_model_runner: draft;rows=8;steps=3;topk=1;draft_tokens=4;"
                            "draft.forwards=3", err, sizeof err) == 0, "%s", err);
    fit_trace_init(&t, "vllm.json");
    ptrace_range v = {1000, 2000, "gpu_model_runner: forward", "", 1, 1, 0, 0, 0};
    ptrace_range d = {2000, 3000, "gpu_model_runner: draft", "", 1, 1, 0, 0, 0};
    fit_trace_add_range(&t, &v);
    fit_trace_add_range(&t, &d);
    CHECK(phasemap_apply(&pm, &t, &st, err, sizeof err) == 0 && st.instances == 2, "%s", err);
    CHECK(has_range(&t, "verify tokens=32 bs=8 rows=8 ctx=0 steps=3 topk=1"), "vllm verify: %s", t.rng[0].name);
    CHECK(has_range(&t, "draft tokens=8 bs=8 rows=8 ctx=0 steps=3 topk=1 forwards=3"), "vllm draft: %s",
          t.nrng > 1 ? t.rng[1].name : "");
    fit_trace_free(&t);
}

/* ---- end to end: the same workload through both formats ------------------------------------- */

typedef struct {
    FILE *f;                 /* Kineto JSON */
    fit_trace *t;            /* records in specprof's words */
    int first;
    uint32_t corr;
    int64_t host, gpu;       /* ns */
} e2e;

static void kj(e2e *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void kj(e2e *s, const char *fmt, ...)
{
    va_list ap;
    fputs(s->first ? "\n  " : ",\n  ", s->f);
    s->first = 0;
    va_start(ap, fmt);
    vfprintf(s->f, fmt, ap);
    va_end(ap);
}

static void e_range(e2e *s, const char *kname, const char *sname, int64_t a, int64_t b)
{
    kj(s, "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"%s\", \"pid\": 9, \"tid\": 77, "
       "\"ts\": %lld.%03lld, \"dur\": %lld.%03lld, \"args\": {\"External id\": 1}}", kname,
       (long long)(a / 1000), (long long)(a % 1000), (long long)((b - a) / 1000), (long long)((b - a) % 1000));
    if (sname) {
        ptrace_range r = {a, b, sname, "", 77, 1, 0, 0, 0};
        fit_trace_add_range(s->t, &r);
    }
}

static void e_api(e2e *s, const char *name, int64_t a, int64_t b, uint32_t corr)
{
    kj(s, "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"%s\", \"pid\": 9, \"tid\": 77, "
       "\"ts\": %lld.%03lld, \"dur\": %lld.%03lld, \"args\": {\"cbid\": 211, \"correlation\": %u}}", name,
       (long long)(a / 1000), (long long)(a % 1000), (long long)((b - a) / 1000), (long long)((b - a) % 1000), corr);
    ptrace_api x = {a, b, name, corr, 211, 0, 77, 0, 0, 0, 0, NULL, 0, NULL};
    fit_trace_add_api(s->t, &x);
}

static void e_kernel(e2e *s, const char *name, int64_t a, int64_t b, uint32_t corr, int graph)
{
    kj(s, "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"%s\", \"pid\": 0, \"tid\": 7, "
       "\"ts\": %lld.%03lld, \"dur\": %lld.%03lld, \"args\": {\"device\": 0, \"stream\": 7, "
       "\"correlation\": %u, \"registers per thread\": 32, \"shared memory\": 0, \"grid\": [1, 1, 1], "
       "\"block\": [128, 1, 1]}}", name, (long long)(a / 1000), (long long)(a % 1000),
       (long long)((b - a) / 1000), (long long)((b - a) % 1000), corr);
    ptrace_kernel k;
    memset(&k, 0, sizeof k);
    k.start_ns = a;
    k.end_ns = b;
    k.name = name;
    k.corr = corr;
    k.stream = 7;
    k.block[0] = 128;
    k.grid[0] = k.grid[1] = k.grid[2] = 1;
    k.regs = 32;
    k.graph_id = graph;
    k.nvtx = k.phase = "";
    fit_trace_add_kernel(s->t, &k);
}

/* One phase: a graph launch (or eager launches) of kernels costing base + slope * tokens. */
static void e_phase(e2e *s, int graph, int nk, const char *const *names, const double *base,
                    const double *slope, double tokens, uint64_t *rng)
{
    uint32_t corr = ++s->corr;
    int64_t a0 = s->host;
    if (graph) {
        e_api(s, "cudaGraphLaunch", a0, a0 + 8000, corr);
        s->host = a0 + 8000;
    }
    int64_t g = s->gpu > s->host + 3000 ? s->gpu : s->host + 3000;
    for (int i = 0; i < nk; i++) {
        if (!graph) {
            corr = ++s->corr;
            e_api(s, "cudaLaunchKernel", s->host, s->host + 4000, corr);
            s->host += 5000;
            if (g < s->host)
                g = s->host;
        }
        *rng ^= *rng << 13; *rng ^= *rng >> 7; *rng ^= *rng << 17;
        double noise = 1 + 0.01 * ((double)(*rng % 2001) / 1000.0 - 1);
        int64_t d = (int64_t)llround((base[i] + slope[i] * tokens) * 1000.0 * noise);
        e_kernel(s, names[i], g, g + d, corr, graph);
        g += d + 500;
    }
    s->gpu = g;
}

static int e2e_write(const char *path, fit_trace *t, int bs, int iters, uint64_t seed)
{
    static const char *const dn[] = {"void draft_gemm<64>(float*)", "void draft_attn<64>(float*)"};
    static const double db[] = {6, 3}, ds[] = {0.05, 0.02};
    static const char *const vn[] = {"void qkv_gemm<128>(float*)", "void attn_fwd<128>(float*)",
                                     "void mlp_gemm<128>(float*)"};
    static const double vb[] = {10, 8, 20}, vs[] = {0.2, 0.05, 0.3};
    static const char *const an[] = {"void accept_kernel(int*)", "void gather_kernel(int*)"};
    static const double ab[] = {4, 2}, as[] = {0.005, 0.002};
    e2e s = {fopen(path, "w"), t, 1, 0, 1000000, 0};
    if (!s.f)
        return -1;
    fprintf(s.f, "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [{\"id\": 0, \"name\": \"Synthetic GPU\", "
            "\"numSms\": 132, \"computeMajor\": 9, \"computeMinor\": 0, \"totalGlobalMem\": 1000}],\n"
            "  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": 0,\n  \"traceEvents\": [");
    int rows = bs <= 1 ? 1 : bs <= 2 ? 2 : bs <= 4 ? 4 : 8;   /* captured 1, 2, 4, 8 */
    char kname[64], sname[200];
    uint64_t rng = seed;
    for (int it = 0; it < iters; it++) {
        /* draft: a stage span without a step span (its graph bypasses model_runner.forward) */
        int64_t r0 = s.host;
        s.host += 15000;
        e_phase(&s, 1, 2, dn, db, ds, rows * 1.0, &rng);
        s.host += 2000;
        snprintf(sname, sizeof sname, "draft tokens=%d bs=%d rows=%d ctx=0 graph=1 steps=3 topk=1", rows, bs, rows);
        e_range(&s, "draft", sname, r0, s.host);
        /* verify: the stage span holds the step span */
        r0 = s.host;
        s.host += 10000;
        int64_t s0 = s.host;
        s.host += 1000;
        e_phase(&s, 1, 3, vn, vb, vs, rows * 4.0, &rng);
        s.host += 1000;
        snprintf(kname, sizeof kname, "step[TARGET_VERIFY bs=%d]", bs);
        e_range(&s, kname, NULL, s0, s.host);
        s.host += 500;
        snprintf(sname, sizeof sname, "verify tokens=%d bs=%d rows=%d ctx=0 graph=1 steps=3 topk=1", rows * 4, bs, rows);
        e_range(&s, "verify", sname, r0, s.host);
        /* verify_sample: eager kernels, the host waits for them */
        r0 = s.host;
        s.host += 5000;
        e_phase(&s, 0, 2, an, ab, as, rows * 4.0, &rng);
        if (s.host < s.gpu + 2000)
            s.host = s.gpu + 2000;
        snprintf(sname, sizeof sname, "accept tokens=%d bs=%d rows=%d ctx=0 graph=0 steps=3 topk=1", bs * 4, bs, bs);
        e_range(&s, "verify_sample", sname, r0, s.host);
        /* draft_extend with its step span */
        r0 = s.host;
        s.host += 20000;
        s0 = s.host;
        e_phase(&s, 1, 2, dn, db, ds, rows * 4.0, &rng);
        s.host += 1000;
        snprintf(kname, sizeof kname, "step[DRAFT_EXTEND bs=%d]", bs);
        e_range(&s, kname, NULL, s0, s.host);
        snprintf(sname, sizeof sname, "extend tokens=%d bs=%d rows=%d ctx=0 graph=1 steps=3 topk=1", rows * 4, bs, rows);
        e_range(&s, "draft_extend", sname, r0, s.host);
    }
    fprintf(s.f, "\n  ],\n  \"traceName\": \"%s\"\n}\n", path);
    return fclose(s.f);
}

static void kineto_with_sglang_spans_fits_like_specprof_words(void)
{
    enum { NT = 5 };
    static const int bss[NT] = {1, 2, 3, 5, 8};
    fit_trace direct[NT], imported[NT];
    char err[2048], path[200];
    phasemap pm;
    phasemap_init(&pm);
    snprintf(path, sizeof path, "%s/server_args.json", tmpdir);
    write_file(path, args_spec);
    CHECK(phasemap_shape_find(&pm.shape, path, path, sizeof path, err, sizeof err) == 1, "found %s", err);
    for (int i = 0; i < NT; i++) {
        char label[200];
        snprintf(label, sizeof label, "%s/bs%d-TP-0.trace.json", tmpdir, bss[i]);
        fit_trace_init(&direct[i], label);
        direct[i].has_header = 1;
        snprintf(direct[i].hdr.device.name, sizeof direct[i].hdr.device.name, "Synthetic GPU");
        direct[i].hdr.device.sms = 132;
        direct[i].hdr.device.cc_major = 9;
        direct[i].hdr.device.mem_bytes = 1000;
        e2e_write(label, &direct[i], bss[i], 40, 12345u + (unsigned)i);
        CHECK(timport_load(&imported[i], label, NULL, NULL, err, sizeof err) == 0, "%s", err);
        pm_stats st;
        CHECK(phasemap_apply(&pm, &imported[i], &st, err, sizeof err) == 0 && st.instances == 160, "%s (%zu)",
              err, st.instances);
        /* the imported trace says CUPTI measured it; the direct one must too for the same fit */
        direct[i].hdr.cupti_version = imported[i].hdr.cupti_version;
        direct[i].hdr.format_version = imported[i].hdr.format_version;
    }
    fit_opts o = {.name = "e2e"};
    static fit_result ra, rb;
    CHECK(fit_run(direct, NT, &o, &ra, err, sizeof err) == 0, "direct: %s", err);
    CHECK(fit_run(imported, NT, &o, &rb, err, sizeof err) == 0, "imported: %s", err);
    int ngroups = 0, differ = 0;
    for (int p = 0; p < WM_NPHASE; p++) {
        const wm_phase_model *a = &ra.model.phase[p], *b = &rb.model.phase[p];
        CHECK(a->ngroups == b->ngroups, "phase %s: %d vs %d groups", wm_phase_name[p], a->ngroups, b->ngroups);
        for (int g = 0; g < a->ngroups && g < b->ngroups; g++, ngroups++) {
            const wm_group *x = &a->groups[g], *y = &b->groups[g];
            double d = fabs(x->base_us - y->base_us) + fabs(x->per_token_us - y->per_token_us) +
                       fabs(x->per_token_all_us - y->per_token_all_us);
            if (d > 1e-9 * (1 + fabs(x->base_us)) || strcmp(x->name, y->name) || x->count != y->count) {
                differ++;
                fprintf(stderr, "  %s/%s: base %.9g vs %.9g per_token %.9g vs %.9g\n", wm_phase_name[p],
                        x->name, x->base_us, y->base_us, x->per_token_us, y->per_token_us);
            }
        }
        CHECK(fabs(a->host_gap_us - b->host_gap_us) < 1e-9, "phase %s host gap %.9g vs %.9g", wm_phase_name[p],
              a->host_gap_us, b->host_gap_us);
    }
    CHECK(ngroups >= 9 && differ == 0, "%d groups, %d differ", ngroups, differ);
    CHECK(ra.model.phase[WM_VERIFY].ngroups > 0 && rb.model.phase[WM_ACCEPT].ngroups > 0, "phases present");
    CHECK(fabs(ra.model.graph_launch_us - rb.model.graph_launch_us) < 1e-9, "launch %.9g vs %.9g",
          ra.model.graph_launch_us, rb.model.graph_launch_us);
    fit_result_free(&ra);
    fit_result_free(&rb);
    for (int i = 0; i < NT; i++) {
        fit_trace_free(&direct[i]);
        fit_trace_free(&imported[i]);
    }
}

/* phasemap_apply (profile auto, shape 3,1,4) on a trace FILE of a "verify" stage holding one
 * step span named step: its status, err its message. */
static int apply_verify_step(const char *file, const char *step_name, char *err, size_t errlen)
{
    fit_trace t;
    phasemap pm;
    fit_trace_init(&t, file);
    ptrace_range stage = {1000, 9000, "verify", "", 1, 1, 0, 0, 0};
    ptrace_range step = {2000, 8000, step_name, "", 1, 1, 0, 0, 0};
    fit_trace_add_range(&t, &stage);
    fit_trace_add_range(&t, &step);
    phasemap_init(&pm);
    int rc = phasemap_shape_flag(&pm.shape, "3,1,4", err, errlen) ? -2 : phasemap_apply(&pm, &t, NULL, err, errlen);
    fit_trace_free(&t);
    return rc;
}

/* A step span's bs= that is no batch size (not whole, negative, past BND_ROWS_MAX) is refused
 * naming the span, the field and the value. bs=99999999999 went through (int) (undefined;
 * INT_MIN here), was taken for an IDLE batch and the trace was refused as "no span names a
 * phase ... e.g. draft, verify"; bs=3.5 was read as 3. */
static void sglang_step_batch_out_of_range_is_named(void)
{
    static const char *bad[] = {"99999999999", "3.5", "-3", "70000"};
    for (int i = 0; i < 4; i++) {
        char err[1024] = "", name[80];
        snprintf(name, sizeof name, "step[TARGET_VERIFY bs=%s]", bad[i]);
        CHECK(apply_verify_step("bs.json", name, err, sizeof err) == -1 && strstr(err, "bs.json") &&
              strstr(err, "field bs") && strstr(err, bad[i]), "bs=%s: message '%s'", bad[i], err);
    }
}

/* A SGLang trace none of whose spans became a phase and none a prefill step (a step whose bs=
 * is a full-width digit is read as no step) was refused as "only prefill forward spans (0,
 * e.g. )": it says no span names a phase. */
static void sglang_trace_without_phases_names_its_spans(void)
{
    char err[1024] = "";
    CHECK(apply_verify_step("idle.json", "step[TARGET_VERIFY bs=\xef\xbc\x93]", err, sizeof err) == -1 &&
          strstr(err, "idle.json") && !strstr(err, "only prefill") && !strstr(err, "e.g. )"), "message '%s'", err);
}

/* 2026 releases keep the decode graphs in cuda_graph_config.decode {backend, max_bs, bs}
 * (model_executor/cuda_graph_config.py; --cuda-graph-max-bs became an alias of
 * --cuda-graph-max-bs-decode): server_args.json (dataclasses.asdict, nested) and the logged
 * repr (CudaGraphConfig(decode=PhaseConfig(..))) give the captured list, a decode max, or
 * graphs off. They were ignored: SGLang's default list (to 512) stood for --cuda-graph-max-bs
 * 128, and a disabled decode graph read as on. */
static void server_args_reads_the_decode_cuda_graph_config(void)
{
    char err[512] = "", path[200];
    pm_shape sh;
    snprintf(path, sizeof path, "%s/args-2026.json", tmpdir);
    write_file(path, "{\"model_path\": \"m\", \"tp_size\": 8, \"speculative_algorithm\": null, "
               "\"cuda_graph_config\": {\"decode\": {\"backend\": \"full\", \"max_bs\": 128, \"bs\": null, "
               "\"tc_compiler\": \"eager\", \"full_prefill_max_req\": null}, \"prefill\": {\"backend\": "
               "\"breakable\", \"max_bs\": null, \"bs\": [1, 2], \"tc_compiler\": \"eager\", "
               "\"full_prefill_max_req\": null}}, \"cuda_graph_max_bs_decode\": null, \"disable_cuda_graph\": false}");
    CHECK(phasemap_shape_load(&sh, path, err, sizeof err) == 0 && sh.cuda_graph == 1 && sh.ngraph_bs > 0 &&
          sh.graph_bs[sh.ngraph_bs - 1] == 128, "%s: graph %d, %d sizes, last %d", err, sh.cuda_graph, sh.ngraph_bs,
          sh.ngraph_bs ? sh.graph_bs[sh.ngraph_bs - 1] : 0);
    write_file(path, "{\"model_path\": \"m\", \"cuda_graph_config\": {\"decode\": {\"backend\": \"disabled\", "
               "\"max_bs\": 64, \"bs\": [1, 2, 4, 8]}}}");
    CHECK(phasemap_shape_load(&sh, path, err, sizeof err) == 0 && sh.cuda_graph == 0 && sh.ngraph_bs == 4 &&
          sh.graph_bs[3] == 8, "%s: graph %d, %d sizes", err, sh.cuda_graph, sh.ngraph_bs);
    write_file(path, "{\"model_path\": \"m\", \"cuda_graph_max_bs_decode\": 48, \"disable_decode_cuda_graph\": true}");
    CHECK(phasemap_shape_load(&sh, path, err, sizeof err) == 0 && sh.cuda_graph == 0 && sh.ngraph_bs > 0 &&
          sh.graph_bs[sh.ngraph_bs - 1] == 48, "%s: graph %d, last %d", err, sh.cuda_graph,
          sh.ngraph_bs ? sh.graph_bs[sh.ngraph_bs - 1] : 0);
    write_file(path, "{\"model_path\": \"m\", \"cuda_graph_config\": {\"decode\": {\"max_bs\": \"128\"}}}");
    CHECK(phasemap_shape_load(&sh, path, err, sizeof err) == -1 && strstr(err, "args-2026.json") &&
          strstr(err, "field cuda_graph_config.decode.max_bs") && strstr(err, "\"128\""), "message '%s'", err);
    const char *line = "[2026-03-01 10:00:00] server_args=ServerArgs(model_path='m', tp_size=8, "
        "cuda_graph_config=CudaGraphConfig(decode=PhaseConfig(backend='full', max_bs=128, bs=[1, 2, 4, 8, 16, 24, "
        "32, 64, 96, 128], tc_compiler='eager', full_prefill_max_req=None), prefill=PhaseConfig(backend='breakable', "
        "max_bs=None, bs=[1], tc_compiler='eager', full_prefill_max_req=None)), cuda_graph_max_bs_decode=128, "
        "speculative_algorithm='EAGLE3', speculative_num_steps=3, speculative_eagle_topk=1, "
        "speculative_num_draft_tokens=4)";
    CHECK(phasemap_shape_repr(&sh, line, strlen(line), "server.log: line 1", err, sizeof err) == 0 && sh.known &&
          sh.cuda_graph == 1 && sh.ngraph_bs == 10 && sh.graph_bs[9] == 128 && sh.graph_bs[6] == 32,
          "%s: %d sizes", err, sh.ngraph_bs);
}

/* More than 512 cuda_graph_bs entries were cut to the first 512 in silence (a list of 600 was
 * read as 1..512, and a batch of 600 ran eagerly in the fit's padding): every entry is read, a
 * size given twice counts once (SGLang captures sorted(set(..))), and more distinct sizes than
 * the simulator holds are refused naming the file, the field and the count; as is a
 * cuda_graph_max_bs whose default list is that long (above 7632). */
static void server_args_refuses_more_captured_sizes_than_it_holds(void)
{
    char err[512] = "", path[200], doc[8192];
    pm_shape sh;
    snprintf(path, sizeof path, "%s/args-long.json", tmpdir);
    for (int distinct = 600; distinct >= 300; distinct -= 300) {   /* 600 entries: 600 or 300 sizes */
        int n = snprintf(doc, sizeof doc, "{\"model_path\": \"m\", \"cuda_graph_bs\": [");
        for (int i = 0; i < 600; i++)
            n += snprintf(doc + n, sizeof doc - (size_t)n, "%s%d", i ? ", " : "", 600 - i % distinct);
        snprintf(doc + n, sizeof doc - (size_t)n, "]}");
        write_file(path, doc);
        err[0] = 0;
        int rc = phasemap_shape_load(&sh, path, err, sizeof err);
        if (distinct == 600)
            CHECK(rc == -1 && strstr(err, "args-long.json") && strstr(err, "field cuda_graph_bs") &&
                  strstr(err, "600 entries, 600 distinct (1..600)") && strstr(err, "more than 512"),
                  "600 sizes: rc %d, %d sizes (last %d): '%s'", rc, sh.ngraph_bs,
                  sh.ngraph_bs ? sh.graph_bs[sh.ngraph_bs - 1] : 0, err);
        else
            CHECK(rc == 0 && sh.ngraph_bs == 300 && sh.graph_bs[0] == 301 && sh.graph_bs[299] == 600, "300 sizes "
                  "twice: rc %d %s: %d sizes, %d..%d", rc, err, sh.ngraph_bs, sh.graph_bs[0],
                  sh.ngraph_bs ? sh.graph_bs[sh.ngraph_bs - 1] : 0);
    }
    write_file(path, "{\"model_path\": \"m\", \"cuda_graph_max_bs\": 10000}");
    err[0] = 0;
    CHECK(phasemap_shape_load(&sh, path, err, sizeof err) == -1 && strstr(err, "field cuda_graph_max_bs") &&
          strstr(err, "value 10000") && strstr(err, "more than 512"), "max 10000: '%s'", err);
    write_file(path, "{\"model_path\": \"m\", \"cuda_graph_max_bs\": 7632}");
    CHECK(phasemap_shape_load(&sh, path, err, sizeof err) == 0 && sh.ngraph_bs == 512 &&
          sh.graph_bs[511] == 7632, "max 7632: %s: %d sizes", err, sh.ngraph_bs);
    /* the flag: a size given twice counts once, past 512 sizes is said so */
    char flag[4096];
    int n = 0;
    for (int i = 1; i <= 513; i++)
        n += snprintf(flag + n, sizeof flag - (size_t)n, "%s%d", i > 1 ? "," : "", i);
    CHECK(phasemap_graph_flag(&sh, flag, err, sizeof err) == -1 && strstr(err, "more than 512"), "513: '%s'", err);
    CHECK(phasemap_graph_flag(&sh, "8,1,4,8,1", err, sizeof err) == 0 && sh.ngraph_bs == 3 && sh.graph_bs[2] == 8,
          "8,1,4,8,1: %d sizes", sh.ngraph_bs);
}

int main(void)
{
    /* these tests compare times exactly: keep Kineto's times as they are (test_pkineto
     * checks the profiler-cost step) */
    setenv("KINETO_HOST_EVENT_US", "0", 1);
    snprintf(tmpdir, sizeof tmpdir, "/tmp/test_phasemap.XXXXXX");
    if (!mkdtemp(tmpdir))
        return 1;
    RUN(sglang_spans_become_phase_instances);
    RUN(sglang_round_shares_its_kv_context);
    RUN(sglang_padding_follows_the_captured_sizes);
    RUN(refusals_name_file_field_and_value);
    RUN(sglang_prefill_stage_trace_is_named);
    RUN(phase_map_rules_capture_shapes);
    RUN(kineto_with_sglang_spans_fits_like_specprof_words);
    RUN(sglang_step_batch_out_of_range_is_named);
    RUN(sglang_trace_without_phases_names_its_spans);
    RUN(server_args_reads_the_decode_cuda_graph_config);
    RUN(server_args_refuses_more_captured_sizes_than_it_holds);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd)) {}
    return check_done();
}
