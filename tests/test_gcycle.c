/* test_gcycle: phases from the CUDA-graph launch cycle of a trace without annotations
 * (models/gcycle.c through phasemap's --graph-cycle and --shape). Synthetic records of an
 * EAGLE-like loop (draft graph, verify graph, eager accept that copies to the host, extend
 * graph with eager work after it, a pause, the next draft's input copy): the cycle found and
 * turned by the host's wait, the phases and their launch calls (the copy after the pause in
 * no phase); a launch out of the cycle; a batch-size bucket at a position;
 * Kineto-like launches without executable ids; the refusals (no cycle, a cycle of another
 * length than the order, no shape); options that name a trace. */
#include "check.h"
#include "fit.h"
#include "gcycle.h"
#include "phasemap.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define US 1000   /* ns */

typedef struct {
    fit_trace t;
    int64_t   ts;
    uint32_t  corr;
    int       exec_ids;   /* 0: graph launches carry no graph_exec_id (Kineto) */
} syn;

static void syn_init(syn *s, int exec_ids)
{
    memset(s, 0, sizeof *s);
    fit_trace_init(&s->t, "synthetic.json");
    s->ts = 1000 * US;
    s->corr = 1;
    s->exec_ids = exec_ids;
}

static void syn_api(syn *s, const char *name, uint32_t exec, int64_t dur_ns, int64_t *start)
{
    ptrace_api a = {s->ts, s->ts + dur_ns, name, s->corr, 0, 0, 1, exec, 0, 0, 0, NULL, 0, NULL};
    fit_trace_add_api(&s->t, &a);
    *start = s->ts;
    s->ts += dur_ns + 10 * US;
}

/* A graph launch of executable exec with nk kernels named kname (grids differ by exec). */
static int64_t syn_graph(syn *s, uint32_t exec, int nk, const char *kname)
{
    int64_t at;
    syn_api(s, "cudaGraphLaunch", s->exec_ids ? exec : 0, 20 * US, &at);
    for (int k = 0; k < nk; k++) {
        ptrace_kernel x;
        memset(&x, 0, sizeof x);
        x.start_ns = at + 30 * US + k * 10 * US;
        x.end_ns = x.start_ns + 8 * US;
        x.name = kname;
        x.corr = s->corr;
        x.grid[0] = (int32_t)exec * 8 + k;
        x.grid[1] = x.grid[2] = 1;
        x.block[0] = 128;
        x.block[1] = x.block[2] = 1;
        x.graph_id = 1;
        x.nvtx = x.phase = "";
        fit_trace_add_kernel(&s->t, &x);
    }
    s->corr++;
    return at;
}

static int64_t syn_eager(syn *s, const char *kname)
{
    int64_t at;
    syn_api(s, "cudaLaunchKernel", 0, 5 * US, &at);
    ptrace_kernel x;
    memset(&x, 0, sizeof x);
    x.start_ns = at + 6 * US;
    x.end_ns = x.start_ns + 3 * US;
    x.name = kname;
    x.corr = s->corr++;
    x.grid[0] = x.grid[1] = x.grid[2] = 1;
    x.block[0] = x.block[1] = x.block[2] = 1;
    x.nvtx = x.phase = "";
    fit_trace_add_kernel(&s->t, &x);
    return at;
}

/* The host reads the accepted tokens: a copy to the host that it waits for. */
static int64_t syn_dtoh(syn *s)
{
    int64_t at;
    syn_api(s, "cudaMemcpyAsync", 0, 40 * US, &at);
    ptrace_mem m;
    memset(&m, 0, sizeof m);
    m.kind = PTRACE_MEMCPY;
    m.start_ns = at + 30 * US;
    m.end_ns = at + 35 * US;
    m.copy_kind = "DtoH";
    m.bytes = 64;
    m.corr = s->corr++;
    m.nvtx = m.phase = "";
    fit_trace_add_mem(&s->t, &m);
    return at;
}

/* Launch starts of one iteration's parts, for the checks. */
typedef struct { int64_t d, v, a0, a1_end, e, e_tail, prep; } syn_iter;

/* One iteration: draft graph, verify graph, eager accept (2 kernels and the copy to the host),
 * extend graph and one eager kernel after it. skip_draft leaves the draft out (a capture that
 * starts mid-iteration); verify_exec replaces verify's executable (a batch-size bucket);
 * stray: a graph launch of another executable after the accept. */
static syn_iter syn_round(syn *s, int skip_draft, uint32_t verify_exec, int stray)
{
    syn_iter it = {0};
    if (!skip_draft)
        it.d = syn_graph(s, 1, 3, "draft_layer");
    it.v = syn_graph(s, verify_exec, 5, "verify_layer");
    it.a0 = syn_eager(s, "sample");
    syn_eager(s, "accept");
    it.a1_end = syn_dtoh(s) + 40 * US;
    if (stray)
        syn_graph(s, 9, 2, "prefill_layer");
    it.e = syn_graph(s, 3, 4, "extend_layer");
    it.e_tail = syn_eager(s, "extend_bookkeeping");
    s->ts += 100 * US;              /* the scheduler's own work, then the next draft's input */
    syn_api(s, "cudaMemcpyAsync", 0, 5 * US, &it.prep);
    s->corr++;
    return it;
}

static int apply(syn *s, const char *order, const char *shape, pm_stats *st, char *err, size_t errlen)
{
    static phasemap pm;
    phasemap_init(&pm);
    if (order && phasemap_option(&pm, "graph-cycle", order, err, errlen) != 1)
        return -2;
    if (shape && phasemap_option(&pm, "shape", shape, err, errlen) != 1)
        return -2;
    if (phasemap_shape_for(&pm, "no-such-dir/synthetic.json", err, errlen))
        return -2;
    return phasemap_apply(&pm, &s->t, st, err, errlen);
}

static const ptrace_range *range_at(const fit_trace *t, int64_t start)
{
    for (size_t i = 0; i < t->nrng; i++)
        if (t->rng[i].start_ns == start)
            return &t->rng[i];
    return NULL;
}

static void gcycle_finds_the_cycle_and_names_the_phases(void)
{
    syn s;
    syn_init(&s, 1);
    syn_iter it[6];
    for (int i = 0; i < 6; i++)       /* the capture starts at a verify */
        it[i] = syn_round(&s, i == 0, 2, 0);
    pm_stats st;
    char err[1024] = "";
    int rc = apply(&s, "draft,verify+accept,extend", "rows=3,steps=3", &st, err, sizeof err);
    CHECK(rc == 0, "%s", err);
    CHECK(!strcmp(st.profile, "cycle"), "profile %s", st.profile);
    CHECK(st.cycle.period == 3 && st.cycle.launches == 17 && st.cycle.by_exec, "period %d launches %zu",
          st.cycle.period, st.cycle.launches);
    /* turned by the host's wait: the launch the copy to the host follows is verify's */
    CHECK(st.cycle.aligned_by_wait && st.cycle.cycle[0] == 1 && st.cycle.cycle[1] == 2 &&
          st.cycle.cycle[2] == 3, "aligned %d cycle %u %u %u", st.cycle.aligned_by_wait,
          st.cycle.cycle[0], st.cycle.cycle[1], st.cycle.cycle[2]);
    CHECK(st.per_phase[WM_DRAFT] == 5 && st.per_phase[WM_VERIFY] == 6 && st.per_phase[WM_ACCEPT] == 6 &&
          st.per_phase[WM_EXTEND] == 6 && st.cycle.out_of_cycle == 0,
          "draft %zu verify %zu accept %zu extend %zu out %zu", st.per_phase[WM_DRAFT],
          st.per_phase[WM_VERIFY], st.per_phase[WM_ACCEPT], st.per_phase[WM_EXTEND], st.cycle.out_of_cycle);
    const ptrace_range *v = range_at(&s.t, it[0].v);
    CHECK(v && !strcmp(v->name, "verify tokens=12 bs=3 rows=3 ctx=0 graph=1 steps=3 topk=1"),
          "first launch: %s", v ? v->name : "(none)");
    /* accept: the eager calls after verify's graph, up to the next graph launch */
    const ptrace_range *a = range_at(&s.t, it[2].a0);
    CHECK(a && !strcmp(a->name, "accept tokens=12 bs=3 rows=3 ctx=0 graph=0 steps=3 topk=1") &&
          a->end_ns == it[2].a1_end, "accept: %s end %lld vs %lld", a ? a->name : "(none)",
          a ? (long long)a->end_ns : 0LL, (long long)it[2].a1_end);
    /* extend keeps the eager work after its graph up to the longest pause; the copy after
     * that pause prepares the next draft: in no phase */
    const ptrace_range *e = range_at(&s.t, it[2].e);
    CHECK(e && !strncmp(e->name, "extend tokens=12 ", 17) && e->end_ns == it[2].e_tail + 5 * US,
          "extend: %s end %lld vs %lld", e ? e->name : "(none)", e ? (long long)e->end_ns : 0LL,
          (long long)(it[2].e_tail + 5 * US));
    int in_range = 0;
    for (size_t i = 0; i < s.t.nrng; i++)
        in_range |= s.t.rng[i].start_ns <= it[2].prep && s.t.rng[i].end_ns >= it[2].prep;
    CHECK(!in_range && st.cycle.between == 5, "the next draft's input copy in a phase (%d), %zu between",
          in_range, st.cycle.between);
    /* draft is steps-1 forwards of rows*topk */
    const ptrace_range *d = range_at(&s.t, it[3].d);
    CHECK(d && !strcmp(d->name, "draft tokens=3 bs=3 rows=3 ctx=0 graph=1 steps=3 topk=1"), "draft: %s",
          d ? d->name : "(none)");
    /* the last graph launch: its own call only (the capture may stop anywhere after it) */
    const ptrace_range *last = range_at(&s.t, it[5].e);
    CHECK(last && last->end_ns == it[5].e + 20 * US, "last extend");
    fit_trace_free(&s.t);
}

static void gcycle_leaves_a_launch_out_of_the_cycle(void)
{
    syn s;
    syn_init(&s, 1);
    syn_iter it[16];     /* one stray launch costs 4 of the cycle's matches: >= 90% kept */
    for (int i = 0; i < 16; i++)
        it[i] = syn_round(&s, 0, 2, i == 3);
    pm_stats st;
    char err[1024] = "";
    int rc = apply(&s, "draft,verify+accept,extend", "rows=4,steps=2", &st, err, sizeof err);
    CHECK(rc == 0, "%s", err);
    CHECK(st.cycle.out_of_cycle == 1 && st.cycle.buckets == 0, "out %zu buckets %zu",
          st.cycle.out_of_cycle, st.cycle.buckets);
    CHECK(st.per_phase[WM_DRAFT] == 16 && st.per_phase[WM_VERIFY] == 16 && st.per_phase[WM_EXTEND] == 16,
          "draft %zu verify %zu extend %zu", st.per_phase[WM_DRAFT], st.per_phase[WM_VERIFY],
          st.per_phase[WM_EXTEND]);
    const ptrace_range *e = range_at(&s.t, it[3].e);
    CHECK(e && !strncmp(e->name, "extend ", 7), "the extend after the stray launch: %s",
          e ? e->name : "(none)");
    fit_trace_free(&s.t);
}

static void gcycle_places_a_batch_bucket_at_its_position(void)
{
    syn s;
    syn_init(&s, 1);
    syn_iter it[16];
    for (int i = 0; i < 16; i++)
        it[i] = syn_round(&s, 0, i == 4 ? 7 : 2, 0);
    pm_stats st;
    char err[1024] = "";
    int rc = apply(&s, "draft,verify+accept,extend", "rows=4,steps=2", &st, err, sizeof err);
    CHECK(rc == 0, "%s", err);
    CHECK(st.cycle.buckets == 1 && st.cycle.out_of_cycle == 0 && st.per_phase[WM_VERIFY] == 16,
          "buckets %zu out %zu verify %zu", st.cycle.buckets, st.cycle.out_of_cycle, st.per_phase[WM_VERIFY]);
    const ptrace_range *v = range_at(&s.t, it[4].v);
    CHECK(v && !strncmp(v->name, "verify ", 7), "bucket launch: %s", v ? v->name : "(none)");
    fit_trace_free(&s.t);
}

static void gcycle_identifies_launches_by_their_kernels_without_exec_ids(void)
{
    syn s;
    syn_init(&s, 0);
    syn_iter it[5];
    for (int i = 0; i < 5; i++)
        it[i] = syn_round(&s, 0, 2, 0);
    pm_stats st;
    char err[1024] = "";
    int rc = apply(&s, "draft,verify+accept,extend", "rows=4,steps=2", &st, err, sizeof err);
    CHECK(rc == 0, "%s", err);
    CHECK(!st.cycle.by_exec && st.cycle.period == 3 && st.per_phase[WM_DRAFT] == 5, "by_exec %d period %d",
          st.cycle.by_exec, st.cycle.period);
    const ptrace_range *d = range_at(&s.t, it[1].d);
    CHECK(d && !strncmp(d->name, "draft ", 6), "draft: %s", d ? d->name : "(none)");
    fit_trace_free(&s.t);
}

static void gcycle_refuses_a_trace_without_a_cycle(void)
{
    syn s;
    syn_init(&s, 1);
    for (uint32_t e = 1; e <= 12; e++)   /* every launch another executable */
        syn_graph(&s, e, 2, "k");
    pm_stats st;
    char err[1024] = "";
    int rc = apply(&s, "draft,verify+accept,extend", "rows=4,steps=2", &st, err, sizeof err);
    CHECK(rc == -1 && strstr(err, "synthetic.json") && strstr(err, "no graph launch cycle") &&
          strstr(err, "graph_exec_id"), "rc %d: %s", rc, err);
    fit_trace_free(&s.t);
    /* fewer than 3 graph launches (an eager trace) */
    syn_init(&s, 1);
    syn_graph(&s, 1, 2, "k");
    syn_eager(&s, "k");
    rc = apply(&s, "decode+sample", "rows=4", &st, err, sizeof err);
    CHECK(rc == -1 && strstr(err, "field cudaGraphLaunch") && strstr(err, "value 1 graph launches"),
          "rc %d: %s", rc, err);
    fit_trace_free(&s.t);
}

/* torchbench's calibration trace: each configuration captures its own graphs */
static void gcycle_refuses_configurations_one_after_another(void)
{
    syn s;
    syn_init(&s, 1);
    for (int i = 0; i < 12; i++) {
        uint32_t b = i < 6 ? 0 : 10;
        syn_graph(&s, b + 1, 3, "draft_layer");
        syn_graph(&s, b + 2, 5, "verify_layer");
        syn_dtoh(&s);
        syn_graph(&s, b + 3, 4, "extend_layer");
    }
    pm_stats st;
    char err[1024] = "";
    int rc = apply(&s, "draft,verify+accept,extend", "rows=4,steps=2", &st, err, sizeof err);
    CHECK(rc == -1 && strstr(err, "field graph_exec_id: value 11") && strstr(err, "several configurations"),
          "rc %d: %s", rc, err);
    fit_trace_free(&s.t);
}

static void gcycle_refuses_an_order_of_another_length(void)
{
    syn s;
    syn_init(&s, 1);
    for (int i = 0; i < 5; i++)
        syn_round(&s, 0, 2, 0);
    pm_stats st;
    char err[1024] = "";
    int rc = apply(&s, "draft,verify+accept", "rows=4,steps=2", &st, err, sizeof err);
    CHECK(rc == -1 && strstr(err, "field --graph-cycle") && strstr(err, "value draft,verify+accept") &&
          strstr(err, "repeat every 3"), "rc %d: %s", rc, err);
    fit_trace_free(&s.t);
}

static void gcycle_refuses_a_missing_shape(void)
{
    syn s;
    syn_init(&s, 1);
    for (int i = 0; i < 5; i++)
        syn_round(&s, 0, 2, 0);
    pm_stats st;
    char err[1024] = "";
    int rc = apply(&s, "draft,verify+accept,extend", NULL, &st, err, sizeof err);
    CHECK(rc == -1 && strstr(err, "synthetic.json") && strstr(err, "field --shape: missing"), "rc %d: %s", rc, err);
    rc = apply(&s, "draft,verify+accept,extend", "rows=4", &st, err, sizeof err);
    CHECK(rc == -1 && strstr(err, "value rows=4: steps: missing") && strstr(err, "phase draft"),
          "rc %d: %s", rc, err);
    rc = apply(&s, "draft,verify+accept,extend", "steps=2", &st, err, sizeof err);
    CHECK(rc == -1 && strstr(err, "rows: missing"), "rc %d: %s", rc, err);
    /* bad words */
    rc = apply(&s, "draft,verify+acept,extend", "rows=4,steps=2", &st, err, sizeof err);
    CHECK(rc == -2 && strstr(err, "field --graph-cycle") && strstr(err, "acept"), "rc %d: %s", rc, err);
    rc = apply(&s, "draft,verify,extend", "rows=4,steps=2,bs=3", &st, err, sizeof err);
    CHECK(rc == -2 && strstr(err, "field --shape") && strstr(err, "bs=3"), "rc %d: %s", rc, err);
    fit_trace_free(&s.t);
}

static void gcycle_options_name_their_trace(void)
{
    static phasemap pm;
    char err[512];
    phasemap_init(&pm);
    CHECK(phasemap_option(&pm, "shape", "a.json:rows=2,steps=1", err, sizeof err) == 1, "%s", err);
    CHECK(phasemap_option(&pm, "shape", "rows=8", err, sizeof err) == 1, "%s", err);
    CHECK(phasemap_option(&pm, "graph-cycle", "dir/b.json:decode+sample", err, sizeof err) == 1, "%s", err);
    phasemap_shape_for(&pm, "no-such/a.json", err, sizeof err);
    CHECK(pm.shp_on && pm.cyc_shape.rows == 2 && pm.cyc_shape.steps == 1 && !pm.cyc_on, "a.json: rows %d cyc %d",
          pm.cyc_shape.rows, pm.cyc_on);
    phasemap_shape_for(&pm, "no-such/xa.json", err, sizeof err);
    CHECK(pm.shp_on && pm.cyc_shape.rows == 8 && !pm.cyc_on, "xa.json: rows %d", pm.cyc_shape.rows);
    phasemap_shape_for(&pm, "x/dir/b.json", err, sizeof err);
    CHECK(pm.cyc_on && pm.cyc_order.npos == 1 && pm.cyc_order.pos[0].phase == WM_DECODE &&
          pm.cyc_order.pos[0].tail == WM_SAMPLE && pm.cyc_shape.rows == 8, "b.json: cyc %d", pm.cyc_on);
}

int main(void)
{
    RUN(gcycle_finds_the_cycle_and_names_the_phases);
    RUN(gcycle_leaves_a_launch_out_of_the_cycle);
    RUN(gcycle_places_a_batch_bucket_at_its_position);
    RUN(gcycle_identifies_launches_by_their_kernels_without_exec_ids);
    RUN(gcycle_refuses_a_trace_without_a_cycle);
    RUN(gcycle_refuses_configurations_one_after_another);
    RUN(gcycle_refuses_an_order_of_another_length);
    RUN(gcycle_refuses_a_missing_shape);
    RUN(gcycle_options_name_their_trace);
    return check_done();
}
