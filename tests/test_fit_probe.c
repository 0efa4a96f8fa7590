/* test_fit_probe.c: models/fit_probe.c on small lite traces written here: a probed replay's
 * node times less the events' cost per node (from the executable's unprobed spans, else the
 * calibration) become the reference's records, laid out in dependency order; only instances
 * whose every graph launch was probed and that launched no eager kernel are taken; every
 * probed instance leaves the lite trace; a probe that cannot be priced and a broken node
 * table are refused by name. */
#include "check.h"
#include "fit.h"
#include "fit_probe.h"
#include "litefrom.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char path[256];

/* A lite trace: ranges "decode bs=1 ctx=100" on thread 7, each with one launch of executable 1
 * (k1 -> (k2 | k3) -> k4 -> k5; 61 us unprobed), the first probed (its events' ends 12, 34,
 * 19, 37, 69 us: 2 us of event per node), a later probed one inside a range that also launched
 * an eager kernel, the others timed. unprobed: how many timed launches; calib: the end
 * record's event_us; pred: the probe_graph's pred array. */
static void write_header(FILE *f)
{
    fprintf(f, "[\n{\"ph\":\"M\",\"cat\":\"meta\",\"name\":\"specprof_header\",\"pid\":0,\"tid\":0,\"ts\":0,\"args\":{"
               "\"format_version\":1,\"tool_version\":\"specprof 0.1\",\"host\":\"t\",\"pid_os\":7,\"rank\":0,"
               "\"world_size\":1,\"t0_ns\":1000000000000,\"t0_unix_ns\":1000000000000,\"cupti_version\":0,"
               "\"cuda_driver_version\":0,\"cuda_runtime_version\":13000,\"nccl_version\":0,\"device\":{\"name\":\"t\","
               "\"index\":0,\"sms\":132,\"clock_khz\":1980000,\"mem_clock_khz\":0,\"mem_bytes\":0,\"mem_bus_bits\":0,"
               "\"l2_bytes\":0,\"cc_major\":9,\"cc_minor\":0,\"pci_bus_id\":\"\"},\"peers\":[],\"nvtx_phases\":[\"decode\"],"
               "\"capture\":{\"mode\":\"lite\",\"records\":\"lite\",\"compressed\":false,\"clock\":\"CLOCK_REALTIME ns\"},"
               "\"calibration\":{\"ok\":false,\"why\":\"at the end (mode lite)\"},\"cmd\":\"t\"}},\n");
}

static void write_trace(int unprobed, double calib, const char *pred)
{
    FILE *f = fopen(path, "w");
    write_header(f);
    fprintf(f, "{\"ph\":\"M\",\"cat\":\"graph_probe\",\"name\":\"probe_names\",\"pid\":0,\"tid\":0,\"ts\":0,\"args\":"
               "{\"first\":1,\"names\":[\"k1\",\"k2\",\"k3\",\"k4\",\"k5\"]}},\n");
    fprintf(f, "{\"ph\":\"M\",\"cat\":\"graph_probe\",\"name\":\"probe_graph\",\"pid\":0,\"tid\":0,\"ts\":0,\"args\":"
               "{\"graph_exec_id\":1,\"nodes\":5,\"type\":\"KKKKK\",\"name\":[1,2,3,4,5],\"launch\":[%s],"
               "\"bytes\":[0,0,0,0,0],\"copy_kind\":\"-----\",\"pred_n\":[0,1,1,2,1],\"pred\":[%s]}},\n",
            "7,1,1,128,1,1,0,32, 7,1,1,128,1,1,0,32, 7,1,1,128,1,1,0,32, 7,1,1,128,1,1,0,32, 7,1,1,128,1,1,0,32", pred);
    int corr = 0;
    for (int i = 0; i < unprobed + 2; i++) {
        double r0 = 1000.0 + 1000.0 * i;            /* us after t0 */
        int probed = i == 0 || i == unprobed + 1, eager = i == unprobed + 1;
        corr++;
        fprintf(f, "{\"ph\":\"X\",\"cat\":\"api\",\"name\":\"cudaGraphLaunch\",\"pid\":0,\"tid\":7,\"ts\":%.3f,\"dur\":5.000,"
                   "\"args\":{\"corr\":%d,\"cbid\":311,\"thread\":7,\"driver\":false,\"graph_exec_id\":1,\"stream\":13%s}},\n",
                r0 + 10, corr, probed ? ",\"untimed\":\"probe\"" : "");
        if (probed)
            fprintf(f, "{\"ph\":\"X\",\"cat\":\"graph_probe\",\"name\":\"probe exec 1\",\"pid\":0,\"tid\":13,\"ts\":%.3f,"
                       "\"dur\":71.000,\"args\":{\"corr\":%d,\"dev\":0,\"stream\":13,\"graph_exec_id\":1,\"nvtx\":"
                       "\"decode bs=1 ctx=100\",\"phase\":\"decode\",\"err_us\":1.0,\"end_us\":[12.0,34.0,19.0,37.0,69.0]}},\n",
                    r0 + 20, corr);
        else
            fprintf(f, "{\"ph\":\"X\",\"cat\":\"graph_trace\",\"name\":\"graph exec 1\",\"pid\":0,\"tid\":13,\"ts\":%.3f,"
                       "\"dur\":61.000,\"args\":{\"corr\":%d,\"dev\":0,\"stream\":13,\"graph_id\":0,\"graph_exec_id\":1,"
                       "\"nvtx\":\"decode bs=1 ctx=100\",\"phase\":\"decode\",\"err_us\":1.0}},\n", r0 + 20, corr);
        fprintf(f, "{\"ph\":\"X\",\"cat\":\"api\",\"name\":\"cudaStreamSynchronize\",\"pid\":0,\"tid\":7,\"ts\":%.3f,"
                   "\"dur\":80.000,\"args\":{\"corr\":%d,\"cbid\":131,\"thread\":7,\"driver\":false,\"graph_exec_id\":0,"
                   "\"stream\":13,\"blocking\":true}},\n", r0 + 16, 1000 + corr);
        fprintf(f, "{\"ph\":\"X\",\"cat\":\"nvtx\",\"name\":\"decode bs=1 ctx=100\",\"pid\":0,\"tid\":7,\"ts\":%.3f,"
                   "\"dur\":200.000,\"args\":{\"domain\":\"\",\"thread\":7,\"kind\":\"push\",\"launches\":%d,"
                   "\"graph_launches\":1}},\n", r0, eager);
    }
    fprintf(f, "{\"ph\":\"M\",\"cat\":\"meta\",\"name\":\"specprof_end\",\"pid\":0,\"tid\":0,\"ts\":999999.0,\"args\":{"
               "\"dropped_records\":0,\"dropped_host_events\":0,\"records\":%d,\"reason\":\"exit\",\"graph_launches\":%d,"
               "\"probe\":{\"replays\":1,\"execs\":1,\"skipped\":0,\"launched\":2,\"written\":2,\"lost\":0,\"stale\":0,"
               "\"events\":6,\"instrument_ms\":0.1,\"event_us\":%.3f},\"calibration\":{\"ok\":true,\"mode\":\"lite\"}}}\n]\n",
            5 * (unprobed + 2), unprobed + 2, calib);
    fclose(f);
}

static int load(fit_trace *t)
{
    char err[512];
    int rc = fit_trace_load(t, path, err, sizeof err);
    CHECK(rc == 0, "load: %s", err);
    return rc;
}

static const ptrace_kernel *kern_named(const fit_trace *r, const char *name)
{
    for (size_t i = 0; i < r->nkern; i++)
        if (!strcmp(r->kern[i].name, name))
            return &r->kern[i];
    return NULL;
}

static const char *const knames[5] = { "k1", "k2", "k3", "k4", "k5" };
static const int64_t replay_start_ns = 1000000000000LL + 1020000;   /* the first probe's ts */

/* Each of k1..k5 in ref starts and ends want_s / want_e us after the first probed replay's start (1 ns). */
static void check_layout(const fit_trace *ref, const double *want_s, const double *want_e)
{
    for (int i = 0; i < 5; i++) {
        const ptrace_kernel *k = kern_named(ref, knames[i]);
        CHECK(k && llabs(k->start_ns - replay_start_ns - (int64_t)(want_s[i] * 1e3)) <= 1 &&
              llabs(k->end_ns - replay_start_ns - (int64_t)(want_e[i] * 1e3)) <= 1,
              "%s: %.3f..%.3f us after the replay's start, expected %.0f..%.0f", knames[i],
              k ? (k->start_ns - replay_start_ns) / 1e3 : -1.0, k ? (k->end_ns - replay_start_ns) / 1e3 : -1.0, want_s[i], want_e[i]);
    }
}

static void fit_probe_takes_node_times_less_the_event_cost(void)
{
    write_trace(3, 1.5, "0,0,1,2,3");
    fit_trace t, ref;
    fit_probe_stats st;
    char err[512] = "";
    if (load(&t))
        return;
    size_t nrng = t.nrng, napi = t.napi;
    int rc = fit_probe_ref(&t, path, &ref, &st, err, sizeof err);
    CHECK(rc == 1, "fit_probe_ref: %d (%s)", rc, err);
    if (rc != 1) { fit_trace_free(&t); return; }
    /* the cost from the executable's own spans: (71 - 61) / 5 = 2 us, not the calibration's 1.5 */
    CHECK(st.probes == 2 && st.execs == 1 && st.cost_from_spans == 1 && fabs(st.cost_median_us - 2.0) < 1e-9,
          "probes %zu execs %zu from spans %zu cost %.4f", st.probes, st.execs, st.cost_from_spans, st.cost_median_us);
    /* only the first probed instance: the second launched an eager kernel too */
    CHECK(st.instances == 1 && ref.nrng == 1 && st.records == 5 && ref.nkern == 5, "instances %zu ranges %zu records %zu kernels %zu",
          st.instances, ref.nrng, st.records, ref.nkern);
    /* each node: its end less its predecessors' latest, less 2 us; laid out from the replay's start */
    static const double want_s[5] = { 0, 10, 10, 30, 31 }, want_e[5] = { 10, 30, 15, 31, 61 };
    check_layout(&ref, want_s, want_e);
    for (int i = 0; i < 5; i++) {
        const ptrace_kernel *k = kern_named(&ref, knames[i]);
        if (!k) continue;
        CHECK(k->corr == 1 && k->graph_node_id == (uint64_t)i + 1 && k->grid[0] == 7 && k->block[0] == 128 && k->regs == 32 &&
              !strcmp(k->phase, "decode"), "%s: corr %u node %llu grid %d block %d regs %d phase %s", knames[i], k->corr,
              (unsigned long long)k->graph_node_id, k->grid[0], k->block[0], k->regs, k->phase);
    }
    /* the two probed instances left the lite trace, with their calls */
    CHECK(t.nrng == nrng - 2 && t.napi == napi - 4 && st.dropped == 2, "ranges %zu -> %zu, calls %zu -> %zu, dropped %zu",
          nrng, t.nrng, napi, t.napi, st.dropped);
    for (size_t i = 0; i < t.napi; i++)
        CHECK(t.api[i].corr != 1 && t.api[i].corr != 5, "the probed launch %u is still in the lite trace", t.api[i].corr);
    fit_trace_free(&ref);
    fit_trace_free(&t);
}

/* FIT_PROBE_GAP_US: each node after a predecessor starts that much after it, its time that
 * much shorter (the replay's length unchanged); a root node keeps its time. */
static void fit_probe_gap_leaves_idle_before_each_dependent_node(void)
{
    write_trace(3, 1.5, "0,0,1,2,3");
    fit_trace t, ref;
    fit_probe_stats st;
    char err[512] = "";
    if (load(&t))
        return;
    setenv("FIT_PROBE_GAP_US", "1", 1);
    int rc = fit_probe_ref(&t, path, &ref, &st, err, sizeof err);
    unsetenv("FIT_PROBE_GAP_US");
    CHECK(rc == 1, "fit_probe_ref: %d (%s)", rc, err);
    if (rc != 1) { fit_trace_free(&t); return; }
    static const double want_s[5] = { 0, 11, 11, 31, 32 }, want_e[5] = { 10, 30, 15, 31, 61 };
    check_layout(&ref, want_s, want_e);
    fit_trace_free(&ref);
    fit_trace_free(&t);
}

/* An executable never replayed unprobed: the calibration's cost per node. */
static void fit_probe_falls_back_to_the_calibration(void)
{
    write_trace(0, 1.5, "0,0,1,2,3");
    fit_trace t, ref;
    fit_probe_stats st;
    char err[512] = "";
    if (load(&t))
        return;
    int rc = fit_probe_ref(&t, path, &ref, &st, err, sizeof err);
    CHECK(rc == 1 && st.cost_from_spans == 0 && fabs(st.cost_median_us - 1.5) < 1e-9, "rc %d from spans %zu cost %.3f (%s)",
          rc, st.cost_from_spans, st.cost_median_us, err);
    const ptrace_kernel *k = rc == 1 ? kern_named(&ref, "k5") : NULL;
    CHECK(k && llabs((k->end_ns - k->start_ns) - 30500) <= 1, "k5 %.3f us, expected 32 - 1.5", k ? (k->end_ns - k->start_ns) / 1e3 : -1.0);
    if (rc == 1)
        fit_trace_free(&ref);
    fit_trace_free(&t);
    /* no calibration either: refused, naming the field */
    write_trace(0, -1, "0,0,1,2,3");
    if (load(&t))
        return;
    rc = fit_probe_ref(&t, path, &ref, &st, err, sizeof err);
    CHECK(rc == -1 && strstr(err, "specprof_end.probe.event_us") && strstr(err, path), "rc %d: %s", rc, err);
    fit_trace_free(&t);
}

static void fit_probe_refuses_a_broken_node_table(void)
{
    static const char *bad[][2] = { { "0,0,1,2,9", "args.pred" },      /* an index past the nodes */
                                    { "0,0,1,4,3", "cycle" } };          /* k4 after k5 after k4 */
    for (int i = 0; i < 2; i++) {
        write_trace(3, 1.5, bad[i][0]);
        fit_trace t, ref;
        fit_probe_stats st;
        char err[512] = "";
        if (load(&t))
            return;
        int rc = fit_probe_ref(&t, path, &ref, &st, err, sizeof err);
        CHECK(rc == -1 && strstr(err, bad[i][1]) && strstr(err, "line 4"), "pred %s: rc %d: %s", bad[i][0], rc, err);
        if (rc == 1)
            fit_trace_free(&ref);
        fit_trace_free(&t);
    }
}

/* ---- the eager probe ----------------------------------------------------------------------- */

#define EAGER_RANGE "decode tokens=1 bs=1 ctx=100 graph=0"
static const int64_t t0_ns = 1000000000000LL;

/* An eager_probe event's entries (traces/FORMAT.md "Eager probe"), host times from host0 (the
 * copy call's start, 5 us into the range), events from ts; one event costs 1 us:
 *   copy 640 B HtoD, 4 - 1 - 1 = 2 us;
 *   ka 16 - 5 - 1 = 10 us (5 - 4 - 1 = 0: nothing unseen before it);
 *   kb 29 - 21 - 1 = 7 us, after 21 - 16 - 1 = 4 us of unseen kernels;
 *   a release at 30 (30 - 29 - 1 = 0), then the host synchronizes;
 *   ka 63.5 - 60 - 1 = 2.5 us (60 - 30: after the release, the stream waited for the host);
 *   the end at 70, after 70 - 63.5 - 1 = 5.5 us of unseen kernels. */
static const char *const eager_k =
    "[1,-1,640,1,0,0,0,0,0,0.0,3.0,1.0,4.0],"
    "[0,0,4,1,1,128,1,1,0,10.0,14.0,5.0,16.0],"
    "[0,1,2,1,1,64,1,1,256,20.0,24.0,21.0,29.0],"
    "[2,-1,0,0,0,0,0,0,0,140.0,140.0,30.0,30.0],"
    "[0,0,4,1,1,128,1,1,0,170.0,174.0,60.0,63.5],"
    "[3,-1,0,0,0,0,0,0,0,180.0,180.0,70.0,70.0]";

/* A lite trace of 4 eager ranges EAGER_RANGE on thread 7 (200 us each, 1000 us apart), each
 * with a copy (5-8 us in) and a synchronize (150-170 us in); the first probed. args: the
 * eager_probe event's args after "thread":7 (NULL: the test's own), so that a test can break
 * one field. */
static const char *eager_graph_phase;   /* non-NULL: write_eager_trace adds a node-probed graph range
                                           of this phase, its first node named eager_graph_k1 */
static const char *eager_graph_k1 = "k1";

static int eager_dtoh;   /* 1: each range also makes a blocking device-to-host cudaMemcpy 100 us in */

static void write_eager_trace(const char *args)
{
    FILE *f = fopen(path, "w");
    write_header(f);
    for (int i = 0; eager_dtoh && i < 4; i++)
        fprintf(f, "{\"ph\":\"X\",\"cat\":\"api\",\"name\":\"cudaMemcpy\",\"pid\":0,\"tid\":7,\"ts\":%.3f,\"dur\":9.000,"
                   "\"args\":{\"corr\":%d,\"cbid\":31,\"thread\":7,\"driver\":false,\"graph_exec_id\":0,\"stream\":0,\"bytes\":8,"
                   "\"copy_kind\":\"DtoH\",\"blocking\":true}},\n", 1100.0 + 1000.0 * i, 300 + i);
    if (eager_graph_phase) {   /* write_trace's executable 1, its one launch probed, at 5000 us */
        fprintf(f, "{\"ph\":\"M\",\"cat\":\"graph_probe\",\"name\":\"probe_names\",\"pid\":0,\"tid\":0,\"ts\":0,\"args\":"
                   "{\"first\":1,\"names\":[\"%s\",\"k2\",\"k3\",\"k4\",\"k5\"]}},\n", eager_graph_k1);
        fprintf(f, "{\"ph\":\"M\",\"cat\":\"graph_probe\",\"name\":\"probe_graph\",\"pid\":0,\"tid\":0,\"ts\":0,\"args\":"
                   "{\"graph_exec_id\":1,\"nodes\":5,\"type\":\"KKKKK\",\"name\":[1,2,3,4,5],\"pred_n\":[0,1,1,2,1],"
                   "\"pred\":[0,0,1,2,3]}},\n");
        fprintf(f, "{\"ph\":\"X\",\"cat\":\"api\",\"name\":\"cudaGraphLaunch\",\"pid\":0,\"tid\":7,\"ts\":5010.000,"
                   "\"dur\":5.000,\"args\":{\"corr\":1,\"cbid\":311,\"thread\":7,\"driver\":false,\"graph_exec_id\":1,"
                   "\"stream\":13,\"untimed\":\"probe\"}},\n");
        fprintf(f, "{\"ph\":\"X\",\"cat\":\"graph_probe\",\"name\":\"probe exec 1\",\"pid\":0,\"tid\":13,\"ts\":5020.000,"
                   "\"dur\":71.000,\"args\":{\"corr\":1,\"dev\":0,\"stream\":13,\"graph_exec_id\":1,\"nvtx\":"
                   "\"%s tokens=1 bs=1 ctx=100 graph=1\",\"phase\":\"%s\",\"err_us\":1.0,\"end_us\":[12.0,34.0,19.0,37.0,"
                   "69.0]}},\n", eager_graph_phase, eager_graph_phase);
        fprintf(f, "{\"ph\":\"X\",\"cat\":\"nvtx\",\"name\":\"%s tokens=1 bs=1 ctx=100 graph=1\",\"pid\":0,\"tid\":7,"
                   "\"ts\":5000.000,\"dur\":200.000,\"args\":{\"domain\":\"\",\"thread\":7,\"kind\":\"push\",\"launches\":0,"
                   "\"graph_launches\":1}},\n", eager_graph_phase);
    }
    for (int i = 0; i < 4; i++) {
        double r0 = 1000.0 + 1000.0 * i;   /* us after t0 */
        fprintf(f, "{\"ph\":\"X\",\"cat\":\"api\",\"name\":\"cudaMemcpyAsync\",\"pid\":0,\"tid\":7,\"ts\":%.3f,\"dur\":3.000,"
                   "\"args\":{\"corr\":%d,\"cbid\":41,\"thread\":7,\"driver\":false,\"graph_exec_id\":0,\"stream\":13,"
                   "\"bytes\":640,\"copy_kind\":\"HtoD\",\"blocking\":false}},\n", r0 + 5, 100 + i);
        fprintf(f, "{\"ph\":\"X\",\"cat\":\"api\",\"name\":\"cudaStreamSynchronize\",\"pid\":0,\"tid\":7,\"ts\":%.3f,"
                   "\"dur\":20.000,\"args\":{\"corr\":%d,\"cbid\":131,\"thread\":7,\"driver\":false,\"graph_exec_id\":0,"
                   "\"stream\":13,\"blocking\":true}},\n", r0 + 150, 200 + i);
        fprintf(f, "{\"ph\":\"X\",\"cat\":\"nvtx\",\"name\":\"" EAGER_RANGE "\",\"pid\":0,\"tid\":7,\"ts\":%.3f,"
                   "\"dur\":200.000,\"args\":{\"domain\":\"\",\"thread\":7,\"kind\":\"push\",\"launches\":3,"
                   "\"graph_launches\":0}},\n", r0);
    }
    fprintf(f, "{\"ph\":\"X\",\"cat\":\"eager_probe\",\"name\":\"eager probe\",\"pid\":0,\"tid\":13,\"ts\":1160.000,"
               "\"dur\":70.000,\"args\":{\"dev\":0,\"stream\":13,\"thread\":7,");
    if (args)
        fputs(args, f);
    else
        fprintf(f, "\"nvtx\":\"" EAGER_RANGE "\",\"phase\":\"" EAGER_RANGE "\",\"host0_ns\":%lld,\"cost_us\":1.0,"
                   "\"names\":[\"ka\",\"kb\"],\"k\":[%s],\"other_streams\":0,\"lost\":0,\"watchdog\":0",
                (long long)(t0_ns + 1005000), eager_k);
    fprintf(f, "}},\n{\"ph\":\"M\",\"cat\":\"meta\",\"name\":\"specprof_end\",\"pid\":0,\"tid\":0,\"ts\":999999.0,\"args\":{"
               "\"dropped_records\":0,\"dropped_host_events\":0,\"records\":13,\"reason\":\"exit\",%s"
               "\"calibration\":{\"ok\":true,\"mode\":\"lite\"}}}\n]\n",
            eager_graph_phase ? "\"probe\":{\"replays\":1,\"execs\":1,\"skipped\":0,\"launched\":1,\"written\":1,"
                                "\"lost\":0,\"stale\":0,\"events\":5,\"instrument_ms\":0.1,\"event_us\":2.0}," : "");
    fclose(f);
}

/* fit_probe_ref on the trace as written: 1 with ref and the stats, or -1 with err; t loaded. */
static int eager_ref(fit_trace *t, fit_trace *ref, fit_probe_stats *st, char *err, size_t errlen)
{
    if (load(t))
        return -2;
    int rc = fit_probe_ref(t, path, ref, st, err, errlen);
    if (rc != 1)
        fit_trace_free(t);
    return rc;
}

/* eager_ref on the trace as written, checked to have made a reference: 0 with t and ref to
 * free, -1 (the check failed, nothing to free). */
static int eager_ref_ok(fit_trace *t, fit_trace *ref, fit_probe_stats *st)
{
    char err[512] = "";
    int rc = eager_ref(t, ref, st, err, sizeof err);
    CHECK(rc == 1, "fit_probe_ref: %d (%s)", rc, err);
    return rc == 1 ? 0 : -1;
}

static int cmp_kern_start(const void *a, const void *b)
{
    const ptrace_kernel *x = a, *y = b;
    return (x->start_ns > y->start_ns) - (x->start_ns < y->start_ns);
}

/* (a) and (b): the kernel entries' times are a - b - cost, in stream order, with their names
 * and launch configurations; a gap beyond one event's cost is "(unseen kernels)" (also before
 * the end), the gap after a release is not; the copy is on its copy call. */
static void fit_probe_eager_kernels_are_the_event_pairs_less_the_cost(void)
{
    /* the probe's times whole: no queue gap taken out, no launch latency (test below) */
    setenv("FIT_PROBE_EAGER_GAP_US", "0", 1);
    setenv("FIT_PROBE_LAUNCH_US", "0", 1);
    write_eager_trace(NULL);
    fit_trace t, ref;
    fit_probe_stats st;
    if (eager_ref_ok(&t, &ref, &st))
        return;
    static const char *const name[5] = { "ka", "(unseen kernels)", "kb", "ka", "(unseen kernels)" };
    static const double dur_us[5] = { 10, 4, 7, 2.5, 5.5 };
    CHECK(ref.nkern == 5 && st.eager_records == 6 && st.eager_unseen == 2, "kernels %zu records %zu unseen %zu",
          ref.nkern, st.eager_records, st.eager_unseen);
    qsort(ref.kern, ref.nkern, sizeof *ref.kern, cmp_kern_start);
    for (size_t i = 0; i < ref.nkern && i < 5; i++) {
        const ptrace_kernel *k = &ref.kern[i];
        CHECK(!strcmp(k->name, name[i]) && llabs(k->end_ns - k->start_ns - (int64_t)(dur_us[i] * 1e3)) <= 1,
              "kernel %zu: %s of %.3f us, expected %s of %.1f", i, k->name, (k->end_ns - k->start_ns) / 1e3, name[i], dur_us[i]);
        CHECK(i == 0 || k->start_ns >= ref.kern[i - 1].end_ns, "kernel %zu starts before the one before it ends", i);
        CHECK(k->stream == 13 && !strcmp(k->phase, "decode"), "kernel %zu: stream %u phase %s", i, k->stream, k->phase);
    }
    if (ref.nkern == 5)
        CHECK(ref.kern[2].grid[0] == 2 && ref.kern[2].block[0] == 64 && ref.kern[2].smem_bytes == 256,
              "kb: grid %d block %d smem %d", ref.kern[2].grid[0], ref.kern[2].block[0], ref.kern[2].smem_bytes);
    /* laid out from the calls, back to back: ka from its call's end (14 us after host0) */
    int64_t host0 = t0_ns + 1005000;
    if (ref.nkern == 5)
        CHECK(ref.kern[0].start_ns == host0 + 14000 && ref.kern[1].start_ns == ref.kern[0].end_ns &&
              ref.kern[2].start_ns == ref.kern[1].end_ns && ref.kern[3].start_ns == host0 + 174000,
              "starts %.3f %.3f %.3f %.3f us after host0", (ref.kern[0].start_ns - host0) / 1e3,
              (ref.kern[1].start_ns - host0) / 1e3, (ref.kern[2].start_ns - host0) / 1e3, (ref.kern[3].start_ns - host0) / 1e3);
    CHECK(ref.nmem == 1 && ref.mem[0].corr == 100 && llabs(ref.mem[0].end_ns - ref.mem[0].start_ns - 2000) <= 1 &&
          ref.mem[0].bytes == 640 && !strcmp(ref.mem[0].copy_kind, "HtoD"), "copies %zu (corr %u, %lld ns)", ref.nmem,
          ref.nmem ? ref.mem[0].corr : 0, ref.nmem ? (long long)(ref.mem[0].end_ns - ref.mem[0].start_ns) : 0LL);
    CHECK(st.eager_probes == 1 && fabs(st.eager_cost_median_us - 1.0) < 1e-12, "probes %zu cost %g", st.eager_probes,
          st.eager_cost_median_us);
    fit_trace_free(&ref);
    fit_trace_free(&t);
    unsetenv("FIT_PROBE_EAGER_GAP_US");
    unsetenv("FIT_PROBE_LAUNCH_US");
}

/* The layout as CUPTI records eager work (docs/fit.md 1c "Eager probe"): the queue gap g taken
 * out of every probed time and left idle after the GPU's previous end, a launch-bound record
 * starting L after its call's end. g 0.5, L 2: ka at 14 + 2 = 16 for 9.5 us; the unseen kernels
 * (their call at 20: 22) queued at 25.5 + 0.5 = 26 for 3.5; kb (call end 24: 26) queued at 29.5
 * + 0.5 = 30 for 6.5; after the release ka at 174 + 2 = 176 for 2.0; the copy 1.5 us. */
static void fit_probe_eager_layout_leaves_the_gap_and_the_latency_idle(void)
{
    setenv("FIT_PROBE_EAGER_GAP_US", "0.5", 1);
    setenv("FIT_PROBE_LAUNCH_US", "2", 1);
    write_eager_trace(NULL);
    fit_trace t, ref;
    fit_probe_stats st;
    char err[512] = "";
    int rc = eager_ref(&t, &ref, &st, err, sizeof err);
    unsetenv("FIT_PROBE_EAGER_GAP_US");
    unsetenv("FIT_PROBE_LAUNCH_US");
    CHECK(rc == 1 && ref.nkern == 5, "fit_probe_ref: %d (%s), %zu kernels", rc, err, rc == 1 ? ref.nkern : 0);
    if (rc != 1)
        return;
    qsort(ref.kern, ref.nkern, sizeof *ref.kern, cmp_kern_start);
    static const double start_us[5] = { 16, 26, 30, 176, 0 }, dur_us[5] = { 9.5, 3.5, 6.5, 2.0, 5.0 };
    int64_t host0 = t0_ns + 1005000;
    for (size_t i = 0; i < ref.nkern && i < 4; i++)
        CHECK(llabs(ref.kern[i].start_ns - host0 - (int64_t)(start_us[i] * 1e3)) <= 1 &&
              llabs(ref.kern[i].end_ns - ref.kern[i].start_ns - (int64_t)(dur_us[i] * 1e3)) <= 1,
              "kernel %zu (%s): %.3f us after host0 for %.3f us, expected %.1f for %.1f", i, ref.kern[i].name,
              (ref.kern[i].start_ns - host0) / 1e3, (ref.kern[i].end_ns - ref.kern[i].start_ns) / 1e3, start_us[i],
              dur_us[i]);
    CHECK(ref.nmem == 1 && llabs(ref.mem[0].end_ns - ref.mem[0].start_ns - 1500) <= 1, "copy of %lld ns",
          ref.nmem ? (long long)(ref.mem[0].end_ns - ref.mem[0].start_ns) : 0LL);
    fit_trace_free(&ref);
    fit_trace_free(&t);
}

/* A blocking device-to-host copy in a probed instance has no entry (the probe releases the
 * stream before it) and still gets a copy record ending at its call's end (the host waited
 * for the GPU there), on its call's corr, between the kernels it came between. Without it,
 * call 34's graph loop from its probes alone priced accept's and sample's wait for the GPU as
 * 541-596 us a kernel launch (held out 1.94% / 33.60%; with it 0.97% / 5.21%). */
static void fit_probe_eager_blocking_copy_ends_at_its_call(void)
{
    eager_dtoh = 1;
    write_eager_trace(NULL);
    eager_dtoh = 0;
    fit_trace t, ref;
    fit_probe_stats st;
    if (eager_ref_ok(&t, &ref, &st))
        return;
    const ptrace_mem *m = NULL;
    for (size_t i = 0; i < ref.nmem; i++)
        if (ref.mem[i].corr == 300)
            m = &ref.mem[i];
    CHECK(st.eager_blocking_copies == 1 && m && !strcmp(m->copy_kind, "DtoH") && m->bytes == 8 &&
              m->end_ns == t0_ns + 1109000 && m->end_ns > m->start_ns,
          "blocking copies %zu, record %s (end %lld us after the range)", st.eager_blocking_copies, m ? "found" : "missing",
          m ? (long long)(m->end_ns - t0_ns - 1000000) / 1000 : -1LL);
    /* in stream order: after the kernels launched before it (t0 20 us in), before the next */
    for (size_t i = 0; m && i < ref.nkern; i++)
        CHECK(ref.kern[i].end_ns <= m->start_ns || ref.kern[i].start_ns >= m->end_ns, "kernel %s overlaps the copy",
              ref.kern[i].name);
    fit_trace_free(&ref);
    fit_trace_free(&t);
}

/* (c): the probed instance leaves the lite trace with its calls; the reference holds its range,
 * its own copy and synchronize, a cudaLaunchKernel per kernel entry at the probe's host times
 * and a driver cuLaunchKernel per unseen gap, each kernel on its call's correlation id. */
static void fit_probe_eager_instance_becomes_a_reference(void)
{
    write_eager_trace(NULL);
    fit_trace t, ref;
    fit_probe_stats st;
    char err[512] = "";
    if (load(&t))
        return;
    size_t nrng = t.nrng, napi = t.napi;
    fit_trace_free(&t);
    int rc = eager_ref(&t, &ref, &st, err, sizeof err);
    CHECK(rc == 1, "fit_probe_ref: %d (%s)", rc, err);
    if (rc != 1)
        return;
    CHECK(t.nrng == nrng - 1 && t.napi == napi - 2 && st.dropped == 1 && st.eager_dropped == 1,
          "ranges %zu -> %zu, calls %zu -> %zu, dropped %zu (eager %zu)", nrng, t.nrng, napi, t.napi, st.dropped,
          st.eager_dropped);
    for (size_t i = 0; i < t.napi; i++)
        CHECK(t.api[i].corr != 100 && t.api[i].corr != 200, "the probed instance's call %u is still in the lite trace",
              t.api[i].corr);
    CHECK(ref.nrng == 1 && st.eager_instances == 1 && !strcmp(ref.rng[0].name, EAGER_RANGE) &&
          ref.rng[0].start_ns == t0_ns + 1000000, "reference ranges %zu, instances %zu", ref.nrng, st.eager_instances);
    size_t rt = 0, drv = 0, own = 0;
    int64_t host0 = t0_ns + 1005000;
    for (size_t i = 0; i < ref.napi; i++) {
        const ptrace_api *a = &ref.api[i];
        CHECK(a->thread == 7 && a->start_ns >= ref.rng[0].start_ns && a->end_ns <= ref.rng[0].end_ns,
              "call %s outside the range", a->name);
        if (!strcmp(a->name, "cudaLaunchKernel")) {
            rt++;
            CHECK(a->cbid == 211 && !a->domain_driver && a->corr > 200, "cudaLaunchKernel: cbid %u driver %d corr %u",
                  a->cbid, a->domain_driver, a->corr);
            CHECK(a->start_ns == host0 + 10000 || a->start_ns == host0 + 20000 || a->start_ns == host0 + 170000,
                  "a launch at %.3f us after host0", (a->start_ns - host0) / 1e3);
        } else if (!strcmp(a->name, "cuLaunchKernel")) {
            drv++;
            CHECK(a->cbid == 307 && a->domain_driver && (a->start_ns == host0 + 20000 || a->start_ns == host0 + 180000),
                  "cuLaunchKernel: cbid %u driver %d at %.3f us", a->cbid, a->domain_driver, (a->start_ns - host0) / 1e3);
        } else {
            own += a->corr == 100 || a->corr == 200;
        }
        size_t nk = 0;
        for (size_t q = 0; q < ref.nkern; q++)
            nk += ref.kern[q].corr == a->corr;
        if (strstr(a->name, "LaunchKernel"))
            CHECK(nk == 1, "%s corr %u: %zu kernels", a->name, a->corr, nk);
    }
    CHECK(rt == 3 && drv == 2 && own == 2 && ref.napi == 7, "calls: %zu cudaLaunchKernel, %zu cuLaunchKernel, %zu "
          "the lite's own, %zu in all", rt, drv, own, ref.napi);
    fit_trace_free(&ref);
    fit_trace_free(&t);
}

/* (f): an instance that launched kernels on other streams while probed leaves the lite trace
 * (its host times are the probe's) but is no reference: its other streams' kernels are unknown. */
static void fit_probe_eager_incomplete_instance_is_dropped_not_used(void)
{
  for (int wd = 0; wd < 2; wd++) {   /* kernels on other streams; a hold the watchdog released */
    char args[1024];
    snprintf(args, sizeof args, "\"nvtx\":\"" EAGER_RANGE "\",\"phase\":\"" EAGER_RANGE "\",\"host0_ns\":%lld,"
             "\"cost_us\":1.0,\"names\":[\"ka\",\"kb\"],\"k\":[%s],\"other_streams\":%d,\"lost\":0,\"watchdog\":%d",
             (long long)(t0_ns + 1005000), eager_k, wd ? 0 : 2, wd);
    write_eager_trace(args);
    fit_trace t, ref;
    fit_probe_stats st;
    if (eager_ref_ok(&t, &ref, &st))
        return;
    CHECK(st.eager_dropped == 1 && st.eager_incomplete == 1 && st.eager_instances == 0 && ref.nrng == 0 &&
          ref.nkern == 0 && t.nrng == 3, "watchdog %d: dropped %zu incomplete %zu used %zu; reference %zu ranges %zu "
          "kernels; lite %zu ranges", wd, st.eager_dropped, st.eager_incomplete, st.eager_instances, ref.nrng, ref.nkern,
          t.nrng);
    fit_trace_free(&ref);
    fit_trace_free(&t);
  }
}

/* An eager instance's unseen kernels (cuBLAS's GEMMs in torchbench, launched past the
 * interposer) are named as a GEMM, the fit's "gemm" group, where a probed replay of the same
 * phase holds a GEMM node, so that the phase's graph and eager instances share the GEMMs' group
 * (H100 call 34: verify's gemm group 0 in its eager cells, fitted flat at 21 us, the groups 1.9 ms
 * short of the measured totals); not for another phase's GEMMs, nor where the graph has none. */
static void fit_probe_eager_unseen_kernels_join_the_phase_graphs_gemms(void)
{
    static const struct { const char *phase, *k1, *want; } c[] = {
        { "decode", "sm90_xmma_gemm_bf16bf16_bf16f32", "(unseen kernels: cublas gemm)" },
        { "draft", "sm90_xmma_gemm_bf16bf16_bf16f32", "(unseen kernels)" },
        { "decode", "k1", "(unseen kernels)" },
    };
    for (int i = 0; i < 3; i++) {
        eager_graph_phase = c[i].phase;
        eager_graph_k1 = c[i].k1;
        write_eager_trace(NULL);
        eager_graph_phase = NULL;
        eager_graph_k1 = "k1";
        fit_trace t, ref;
        fit_probe_stats st;
        char err[512] = "";
        int rc = eager_ref(&t, &ref, &st, err, sizeof err);
        CHECK(rc == 1, "case %d: fit_probe_ref: %d (%s)", i, rc, err);
        if (rc != 1)
            continue;
        size_t unseen = 0, named = 0;
        for (size_t k = 0; k < ref.nkern; k++)
            if (ref.kern[k].name[0] == '(') {
                unseen++;
                named += !strcmp(ref.kern[k].name, c[i].want);
            }
        CHECK(st.instances == 1 && st.eager_instances == 1 && st.eager_unseen == 2 && unseen == 2 && named == 2,
              "case %d (graph of %s, first node %s): graph instances %zu, eager %zu, unseen %zu records, %zu of them "
              "named %s", i, c[i].phase, c[i].k1, st.instances, st.eager_instances, unseen, named, c[i].want);
        fit_trace_free(&ref);
        fit_trace_free(&t);
    }
}

/* The end entry is taken at the range's pop hook, after the range's own end time (specbench,
 * call 35: 4-5 us): the unseen kernels before it got a cuLaunchKernel call after the range,
 * which the lite fit matched to the range after it (decode's host gap -51 s). Every call the
 * reference holds lies inside its range. */
static void fit_probe_eager_calls_stay_inside_their_range(void)
{
    char args[2048];
    static const char *const late_k =
        "[1,-1,640,1,0,0,0,0,0,0.0,3.0,1.0,4.0],"
        "[0,0,4,1,1,128,1,1,0,10.0,14.0,5.0,16.0],"
        "[0,1,2,1,1,64,1,1,256,20.0,24.0,21.0,29.0],"
        "[2,-1,0,0,0,0,0,0,0,140.0,140.0,30.0,30.0],"
        "[0,0,4,1,1,128,1,1,0,170.0,174.0,60.0,63.5],"
        "[3,-1,0,0,0,0,0,0,0,205.0,205.0,70.0,70.0]";   /* 1005 + 205 us: 10 us past the range's end */
    snprintf(args, sizeof args, "\"nvtx\":\"" EAGER_RANGE "\",\"phase\":\"" EAGER_RANGE "\",\"host0_ns\":%lld,"
             "\"cost_us\":1.0,\"names\":[\"ka\",\"kb\"],\"k\":[%s],\"other_streams\":0,\"lost\":0,\"watchdog\":0",
             (long long)(t0_ns + 1005000), late_k);
    write_eager_trace(args);
    fit_trace t, ref;
    fit_probe_stats st;
    if (eager_ref_ok(&t, &ref, &st))
        return;
    CHECK(st.eager_instances == 1, "%zu eager instances", st.eager_instances);
    size_t outside = 0;
    for (size_t a = 0; a < ref.napi; a++) {
        int in = 0;
        for (size_t r = 0; r < ref.nrng && !in; r++)
            in = ref.rng[r].thread == ref.api[a].thread && ref.api[a].start_ns >= ref.rng[r].start_ns &&
                 ref.api[a].end_ns <= ref.rng[r].end_ns;
        if (!in)
            CHECK(0, "call %s corr %u at %.1f us is in no range", ref.api[a].name, ref.api[a].corr,
                  (ref.api[a].start_ns - t0_ns) / 1e3);
        outside += !in;
    }
    CHECK(outside == 0 && st.eager_unseen == 2, "%zu calls outside, %zu unseen", outside, st.eager_unseen);
    fit_trace_free(&ref);
    fit_trace_free(&t);
}

/* ---- mixed instances: a graph replay and eager kernels in one range --------------------------- */

#define MIX_RANGE "decode tokens=1 bs=1 ctx=100 graph=1"

/* A lite trace of 4 ranges MIX_RANGE on thread 7 (300 us each, 1000 us apart), each launching
 * a graph at 10 us (5 us call, its replay from 20 us) and then, from host0 = 50 us, two eager
 * kernels: ka (call 10-14 us from host0; events 5, 16: 10 us) and kb (call 20-24; events 17,
 * 25: 7 us), the end at 26 (nothing unseen). The graph is executable 1 (write_trace's: k1..k5, 71 us probed,
 * 61 unprobed) or, where exec2[i], executable 2 (no node table, never probed). graph[i]: the
 * launch node-probed; eager[i]: the range eager-probed. */
static void write_mixed_trace(const int *graph, const int *eager, const int *exec2)
{
    FILE *f = fopen(path, "w");
    write_header(f);
    fprintf(f, "{\"ph\":\"M\",\"cat\":\"graph_probe\",\"name\":\"probe_names\",\"pid\":0,\"tid\":0,\"ts\":0,\"args\":"
               "{\"first\":1,\"names\":[\"k1\",\"k2\",\"k3\",\"k4\",\"k5\"]}},\n");
    fprintf(f, "{\"ph\":\"M\",\"cat\":\"graph_probe\",\"name\":\"probe_graph\",\"pid\":0,\"tid\":0,\"ts\":0,\"args\":"
               "{\"graph_exec_id\":1,\"nodes\":5,\"type\":\"KKKKK\",\"name\":[1,2,3,4,5],\"pred_n\":[0,1,1,2,1],"
               "\"pred\":[0,0,1,2,3]}},\n");
    for (int i = 0; i < 4; i++) {
        double r0 = 1000.0 + 1000.0 * i;
        int x = exec2[i] ? 2 : 1;
        fprintf(f, "{\"ph\":\"X\",\"cat\":\"api\",\"name\":\"cudaGraphLaunch\",\"pid\":0,\"tid\":7,\"ts\":%.3f,\"dur\":5.000,"
                   "\"args\":{\"corr\":%d,\"cbid\":311,\"thread\":7,\"driver\":false,\"graph_exec_id\":%d,\"stream\":13%s}},\n",
                r0 + 10, i + 1, x, graph[i] ? ",\"untimed\":\"probe\"" : "");
        if (graph[i])
            fprintf(f, "{\"ph\":\"X\",\"cat\":\"graph_probe\",\"name\":\"probe exec 1\",\"pid\":0,\"tid\":13,\"ts\":%.3f,"
                       "\"dur\":71.000,\"args\":{\"corr\":%d,\"dev\":0,\"stream\":13,\"graph_exec_id\":1,\"nvtx\":"
                       "\"" MIX_RANGE "\",\"phase\":\"decode\",\"err_us\":1.0,\"end_us\":[12.0,34.0,19.0,37.0,69.0]}},\n",
                    r0 + 20, i + 1);
        else
            fprintf(f, "{\"ph\":\"X\",\"cat\":\"graph_trace\",\"name\":\"graph exec %d\",\"pid\":0,\"tid\":13,\"ts\":%.3f,"
                       "\"dur\":61.000,\"args\":{\"corr\":%d,\"dev\":0,\"stream\":13,\"graph_id\":0,\"graph_exec_id\":%d,"
                       "\"nvtx\":\"" MIX_RANGE "\",\"phase\":\"decode\",\"err_us\":1.0}},\n", x, r0 + 20, i + 1, x);
        if (eager[i])
            fprintf(f, "{\"ph\":\"X\",\"cat\":\"eager_probe\",\"name\":\"eager probe\",\"pid\":0,\"tid\":13,\"ts\":%.3f,"
                       "\"dur\":30.000,\"args\":{\"dev\":0,\"stream\":13,\"thread\":7,\"nvtx\":\"" MIX_RANGE "\",\"phase\":"
                       "\"" MIX_RANGE "\",\"host0_ns\":%lld,\"cost_us\":1.0,\"names\":[\"ka\",\"kb\"],\"k\":["
                       "[0,0,4,1,1,128,1,1,0,10.0,14.0,5.0,16.0],[0,1,2,1,1,64,1,1,0,20.0,24.0,17.0,25.0],"
                       "[3,-1,0,0,0,0,0,0,0,40.0,40.0,26.0,26.0]],\"other_streams\":0,\"lost\":0,\"watchdog\":0}},\n",
                    r0 + 100, (long long)(t0_ns + (int64_t)((r0 + 50) * 1e3)));
        fprintf(f, "{\"ph\":\"X\",\"cat\":\"nvtx\",\"name\":\"" MIX_RANGE "\",\"pid\":0,\"tid\":7,\"ts\":%.3f,"
                   "\"dur\":300.000,\"args\":{\"domain\":\"\",\"thread\":7,\"kind\":\"push\",\"launches\":2,"
                   "\"graph_launches\":1}},\n", r0);
    }
    fprintf(f, "{\"ph\":\"M\",\"cat\":\"meta\",\"name\":\"specprof_end\",\"pid\":0,\"tid\":0,\"ts\":999999.0,\"args\":{"
               "\"dropped_records\":0,\"dropped_host_events\":0,\"records\":20,\"reason\":\"exit\",\"graph_launches\":4,"
               "\"probe\":{\"replays\":1,\"execs\":1,\"skipped\":0,\"launched\":2,\"written\":2,\"lost\":0,\"stale\":0,"
               "\"events\":6,\"instrument_ms\":0.1,\"event_us\":1.5},\"calibration\":{\"ok\":true,\"mode\":\"lite\"}}}\n]\n");
    fclose(f);
}

/* The kernels of ref on correlation id corr named k1..k5 (the graph part) and others (eager):
 * how many of each, the graph part's latest end and the eager part's earliest start. */
static void mixed_parts(const fit_trace *ref, uint32_t corr, size_t *ng, size_t *ne, int64_t *gend, int64_t *estart)
{
    *ng = *ne = 0;
    *gend = INT64_MIN;
    *estart = INT64_MAX;
    for (size_t i = 0; i < ref->nkern; i++) {
        const ptrace_kernel *k = &ref->kern[i];
        if (k->name[0] == 'k' && k->name[1] >= '1' && k->name[1] <= '5') {
            *ng += k->corr == corr;
            *gend = k->end_ns > *gend ? k->end_ns : *gend;
        } else {
            (*ne)++;
            *estart = k->start_ns < *estart ? k->start_ns : *estart;
        }
    }
}

/* The union: range 0 node-probed and eager-probed is one reference instance with both record
 * sets, its graph's nodes on its launch's corr from the replay's start, its eager kernels after
 * them on the one GPU timeline; range 1 node-probed only (its eager kernels unknown) and range 2
 * eager-probed only, its executable never node-probed (its replay unknown), are not taken; all
 * three leave the lite trace. */
static void fit_probe_mixed_instance_takes_both_probes_and_only_both(void)
{
    static const int graph[4] = { 1, 1, 0, 0 }, eager[4] = { 1, 0, 1, 0 }, exec2[4] = { 0, 0, 1, 0 };
    setenv("FIT_PROBE_EAGER_GAP_US", "0.5", 1);
    setenv("FIT_PROBE_LAUNCH_US", "2", 1);
    write_mixed_trace(graph, eager, exec2);
    fit_trace t, ref;
    fit_probe_stats st;
    char err[512] = "";
    int rc = eager_ref(&t, &ref, &st, err, sizeof err);
    unsetenv("FIT_PROBE_EAGER_GAP_US");
    unsetenv("FIT_PROBE_LAUNCH_US");
    CHECK(rc == 1, "fit_probe_ref: %d (%s)", rc, err);
    if (rc != 1)
        return;
    CHECK(ref.nrng == 1 && ref.rng[0].start_ns == t0_ns + 1000000 && st.eager_instances == 1 && st.instances == 0 &&
          st.mixed_own == 1 && st.mixed_donor == 0 && st.mixed_unprobed == 1 && st.mixed_records == 5,
          "reference ranges %zu (first at %lld), eager instances %zu, graph-only %zu, mixed own %zu donor %zu unprobed "
          "%zu records %zu", ref.nrng, ref.nrng ? (long long)ref.rng[0].start_ns : -1LL, st.eager_instances, st.instances,
          st.mixed_own, st.mixed_donor, st.mixed_unprobed, st.mixed_records);
    size_t ng, ne;
    int64_t gend, estart;
    mixed_parts(&ref, 1, &ng, &ne, &gend, &estart);
    CHECK(ng == 5 && ne == 2 && ref.nkern == 7, "graph part %zu kernels on corr 1, eager part %zu, %zu in all", ng, ne,
          ref.nkern);
    /* the graph from its replay's start (1020 us): k5 ends at 61 us (event cost (71 - 61) / 5 = 2 a node);
     * ka's call ends at 1064, + L = 1066, before the graph's end: queued, g = 0.5 after it */
    const ptrace_kernel *k1 = kern_named(&ref, "k1"), *ka = kern_named(&ref, "ka");
    CHECK(k1 && k1->start_ns == t0_ns + 1020000 && gend == t0_ns + 1081000, "k1 from %.3f us, the graph's end %.3f us",
          k1 ? (k1->start_ns - t0_ns) / 1e3 : -1.0, (gend - t0_ns) / 1e3);
    CHECK(ka && estart == ka->start_ns && ka->start_ns == gend + 500 && ka->end_ns - ka->start_ns == 9500,
          "ka at %.3f us for %.3f, the graph's end %.3f", ka ? (ka->start_ns - t0_ns) / 1e3 : -1.0,
          ka ? (ka->end_ns - ka->start_ns) / 1e3 : -1.0, (gend - t0_ns) / 1e3);
    size_t graph_calls = 0;
    for (size_t i = 0; i < ref.napi; i++)
        graph_calls += ref.api[i].graph_exec_id != 0;
    CHECK(graph_calls == 1 && st.dropped == 3 && t.nrng == 1, "graph launch calls in the reference %zu; dropped %zu, "
          "lite ranges left %zu", graph_calls, st.dropped, t.nrng);
    fit_trace_free(&ref);
    fit_trace_free(&t);
}

/* The composite: range 1 eager-probed, its replay not node-probed, takes its graph part from
 * range 0's probed replay of the same executable, on its own launch's corr, from its own
 * replay's measured start (2020 us). */
static void fit_probe_mixed_instance_takes_the_executables_probe_from_another(void)
{
    static const int graph[4] = { 1, 0, 0, 0 }, eager[4] = { 0, 1, 0, 0 }, exec2[4] = { 0, 0, 0, 0 };
    write_mixed_trace(graph, eager, exec2);
    fit_trace t, ref;
    fit_probe_stats st;
    if (eager_ref_ok(&t, &ref, &st))
        return;
    size_t ng, ne;
    int64_t gend, estart;
    mixed_parts(&ref, 2, &ng, &ne, &gend, &estart);
    const ptrace_kernel *k1 = kern_named(&ref, "k1");
    CHECK(ref.nrng == 1 && ref.rng[0].start_ns == t0_ns + 2000000 && st.mixed_donor == 1 && st.mixed_own == 0 &&
          ng == 5 && ne == 2 && k1 && k1->start_ns == t0_ns + 2020000 && estart > gend,
          "reference ranges %zu, donor %zu own %zu, graph part %zu kernels on corr 2 (k1 at %.3f us), eager %zu "
          "(from %.3f, the graph's end %.3f)", ref.nrng, st.mixed_donor, st.mixed_own, ng,
          k1 ? (k1->start_ns - t0_ns) / 1e3 : -1.0, ne, (estart - t0_ns) / 1e3, (gend - t0_ns) / 1e3);
    fit_trace_free(&ref);
    fit_trace_free(&t);
}

/* (e): a malformed eager_probe event is refused, naming the file, the line, the field and its
 * value. */
static void fit_probe_eager_refuses_a_malformed_event(void)
{
    static const struct { const char *cost, *names, *entry, *field, *value; } bad[] = {
        { "-1.0", "[\"ka\",\"kb\"]", "[0,0,4,1,1,128,1,1,0,10.0,14.0,5.0,16.0]", "args.cost_us", "value -1" },
        { "1.0", "[\"ka\",\"kb\"]", "[7,0,4,1,1,128,1,1,0,10.0,14.0,5.0,16.0]", "args.k[0]", "value [7,0,4" },
        { "1.0", "[\"ka\",\"kb\"]", "[0,5,4,1,1,128,1,1,0,10.0,14.0,5.0,16.0]", "args.k[0]", "value [0,5,4" },
        { "1.0", "[\"ka\",\"kb\"]", "[0,0,4,1,1,128,1,1,0,10.0,14.0,5.0,3.0]", "args.k[0]", "b <= a" },
        { "1.0", "\"ka\"", "[0,0,4,1,1,128,1,1,0,10.0,14.0,5.0,16.0]", "args.names", "value \"ka\"" },
        { "1.0", "[\"ka\",\"kb\"]", "[0,0,4,1,1]", "args.k[0]", "13 numbers" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char args[1024];
        snprintf(args, sizeof args, "\"nvtx\":\"\",\"phase\":\"" EAGER_RANGE "\",\"host0_ns\":%lld,\"cost_us\":%s,"
                 "\"names\":%s,\"k\":[%s],\"other_streams\":0,\"lost\":0", (long long)(t0_ns + 1005000), bad[i].cost,
                 bad[i].names, bad[i].entry);
        write_eager_trace(args);
        fit_trace t, ref;
        fit_probe_stats st;
        char err[512] = "";
        int rc = eager_ref(&t, &ref, &st, err, sizeof err);
        CHECK(rc == -1 && strstr(err, path) && strstr(err, "line 15") && strstr(err, bad[i].field) &&
              strstr(err, bad[i].value), "case %zu: rc %d: %s", i, rc, err);
        if (rc == 1) {
            fit_trace_free(&ref);
            fit_trace_free(&t);
        }
    }
    /* a field missing */
    write_eager_trace("\"phase\":\"" EAGER_RANGE "\"");
    fit_trace t, ref;
    fit_probe_stats st;
    char err[512] = "";
    int rc = eager_ref(&t, &ref, &st, err, sizeof err);
    CHECK(rc == -1 && strstr(err, "args.host0_ns") && strstr(err, "(missing)"), "rc %d: %s", rc, err);
    if (rc == 1) {
        fit_trace_free(&ref);
        fit_trace_free(&t);
    }
}

/* ---- (d): a lite trace of eager phases fitted from its eager probes alone -------------------- */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* A GPU record of the always trace: its call, times, and what the probe sees of it. */
typedef struct {
    int64_t s, e;
    size_t call;       /* index into the trace's api */
    const ptrace_kernel *k;
    const ptrace_mem *m;
} grec;

static const fit_trace *grec_t;
static int cmp_grec(const void *a, const void *b)
{
    const grec *x = a, *y = b;
    if (x->s != y->s)
        return x->s < y->s ? -1 : 1;
    return (x->e > y->e) - (x->e < y->e);
}

static int cmp_api_start(const void *a, const void *b)
{
    const ptrace_api *x = &grec_t->api[*(const size_t *)a], *y = &grec_t->api[*(const size_t *)b];
    return (x->start_ns > y->start_ns) - (x->start_ns < y->start_ns);
}

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++)
        if (*s == '"' || *s == '\\')
            fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            fputc(' ', f);
        else
            fputc(*s, f);
    fputc('"', f);
}

static int is_sync(const ptrace_api *a)
{
    return !strncmp(a->name, "cudaStreamSynchronize", 21) || !strncmp(a->name, "cudaDeviceSynchronize", 21) ||
           (!strncmp(a->name, "cudaMemcpy", 10) && strncmp(a->name, "cudaMemcpyAsync", 15));
}

/* The eager_probe event a probe of range r of the always trace t would write, to f: the
 * stream held, each record run back to back; a runtime kernel launch or copy an entry, any
 * other record (the driver's launches: cuBLAS; memsets) unseen, in the gap before the next
 * entry; a release before each synchronize, after which the stream waits 50 us for the host.
 * An entry's GPU time is its record's duration and the GPU's queue gap before it (what the
 * events hold of an eager kernel: the median gap between queued records, gap_us); one event
 * costs cost_us. recs: t's records sorted by corr (by_corr) for lookups. */
static void write_probe_of(FILE *f, const fit_trace *t, const ptrace_range *r, const grec *by_corr, size_t nrec,
                           double gap_us, double cost_us)
{
    size_t *calls = malloc((t->napi + 1) * sizeof *calls), nc = 0;
    for (size_t i = 0; i < t->napi; i++)
        if (t->api[i].thread == r->thread && t->api[i].start_ns >= r->start_ns && t->api[i].end_ns <= r->end_ns)
            calls[nc++] = i;
    grec_t = t;
    qsort(calls, nc, sizeof *calls, cmp_api_start);
    int64_t host0 = r->start_ns, ts_ns = r->start_ns;   /* host clock == the trace's */
    const char **names = malloc((nc + 1) * sizeof *names);
    size_t nn = 0;
    char *k = malloc(200 * (2 * nc + 2) + 1);
    size_t kl = 0;
    double cur = 0, pend = 0;   /* the last event's time from ts; unseen time waiting */
    for (size_t c = 0; c < nc; c++) {
        const ptrace_api *a = &t->api[calls[c]];
        double t0 = (a->start_ns - host0) / 1e3, t1 = (a->end_ns - host0) / 1e3;
        if (is_sync(a)) {   /* released: the unseen work before it stays in the gap */
            cur += cost_us + pend;
            pend = 0;
            kl += sprintf(k + kl, "%s[2,-1,0,0,0,0,0,0,0,%.3f,%.3f,%.3f,%.3f]", kl ? "," : "", t0, t0, cur, cur);
            cur += 50;
        }
        size_t lo = 0, hi = nrec;   /* the call's records */
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            uint32_t cm = by_corr[mid].k ? by_corr[mid].k->corr : by_corr[mid].m->corr;
            if (cm < a->corr)
                lo = mid + 1;
            else
                hi = mid;
        }
        for (size_t q = lo; q < nrec; q++) {
            const grec *g = &by_corr[q];
            if ((g->k ? g->k->corr : g->m->corr) != a->corr)
                break;
            double p_us = (g->e - g->s) / 1e3 + gap_us;
            int seen_k = g->k && !strncmp(a->name, "cudaLaunchKernel", 16);
            int seen_c = g->m && g->m->kind == PTRACE_MEMCPY && !strncmp(a->name, "cudaMemcpy", 10);
            if (!seen_k && !seen_c) {
                pend += p_us;
                continue;
            }
            double b = cur + cost_us + pend, ae = b + p_us + cost_us;
            if (seen_k) {
                size_t ni = 0;
                while (ni < nn && strcmp(names[ni], g->k->name))
                    ni++;
                if (ni == nn)
                    names[nn++] = g->k->name;
                kl += sprintf(k + kl, "%s[0,%zu,%d,%d,%d,%d,%d,%d,%d,%.3f,%.3f,%.3f,%.3f]", kl ? "," : "", ni,
                              g->k->grid[0], g->k->grid[1], g->k->grid[2], g->k->block[0], g->k->block[1],
                              g->k->block[2], g->k->smem_bytes, t0, t1, b, ae);
            } else {
                static const char *const kinds[] = { "HtoH", "HtoD", "DtoH", "DtoD", "Default" };
                int kd = 4;
                for (int i = 0; i < 5; i++)
                    if (!strcmp(g->m->copy_kind, kinds[i]))
                        kd = i;
                kl += sprintf(k + kl, "%s[1,-1,%llu,%d,0,0,0,0,0,%.3f,%.3f,%.3f,%.3f]", kl ? "," : "",
                              (unsigned long long)g->m->bytes, kd, t0, t1, b, ae);
            }
            cur = ae;
            pend = 0;
        }
    }
    double te = (r->end_ns - host0) / 1e3;
    cur += cost_us + pend;
    kl += sprintf(k + kl, "%s[3,-1,0,0,0,0,0,0,0,%.3f,%.3f,%.3f,%.3f]", kl ? "," : "", te, te, cur, cur);
    fprintf(f, "{\"ph\":\"X\",\"cat\":\"eager_probe\",\"name\":\"eager probe\",\"pid\":0,\"tid\":7,\"ts\":%.3f,\"dur\":%.3f,"
               "\"args\":{\"dev\":0,\"stream\":7,\"thread\":%lld,\"nvtx\":", (ts_ns - t->hdr.t0_ns) / 1e3, cur,
            (long long)r->thread);
    json_str(f, r->name);
    fputs(",\"phase\":", f);
    json_str(f, r->name);
    fprintf(f, ",\"host0_ns\":%lld,\"cost_us\":%.3f,\"names\":[", (long long)host0, cost_us);
    for (size_t i = 0; i < nn; i++) {
        if (i)
            fputc(',', f);
        json_str(f, names[i]);
    }
    fprintf(f, "],\"k\":[%s],\"other_streams\":0,\"lost\":0,\"watchdog\":0}},\n", k);
    free(k);
    free(names);
    free(calls);
}

static int cmp_grec_corr(const void *a, const void *b)
{
    const grec *x = a, *y = b;
    uint32_t cx = x->k ? x->k->corr : x->m->corr, cy = y->k ? y->k->corr : y->m->corr;
    if (cx != cy)
        return cx < cy ? -1 : 1;
    return cmp_grec(a, b);
}

/* The lite-equivalent of always (specsim lite-from) with an eager probe of the first
 * per_shape instances of each shape (the range's name less ctx=) inserted before its end
 * record, into out. 0, or -1. */
static int write_lite_with_probes(const char *always, const char *out, int per_shape, double cost_us)
{
    char err[1024];
    litefrom_stats ls;
    fit_trace t;
    if (litefrom_convert(always, out, &ls, err, sizeof err) || fit_trace_load(&t, always, err, sizeof err)) {
        fprintf(stderr, "  %s\n", err);
        return -1;
    }
    size_t nrec = t.nkern + t.nmem;
    grec *g = malloc((nrec + 1) * sizeof *g);
    int64_t *gaps = malloc((nrec + 1) * sizeof *gaps);
    size_t ng = 0, n = 0;
    for (size_t i = 0; i < t.nkern; i++)
        g[n++] = (grec){ t.kern[i].start_ns, t.kern[i].end_ns, 0, &t.kern[i], NULL };
    for (size_t i = 0; i < t.nmem; i++)
        g[n++] = (grec){ t.mem[i].start_ns, t.mem[i].end_ns, 0, NULL, &t.mem[i] };
    /* the GPU's gap between queued records (one stream): a record starting within 5 us of the
     * one before it ended was queued behind it (torchbench's eager kernels: ~1-2 us) */
    qsort(g, n, sizeof *g, cmp_grec);
    for (size_t i = 1; i < n; i++)
        if (g[i].s >= g[i - 1].e && g[i].s - g[i - 1].e < 5000)
            gaps[ng++] = g[i].s - g[i - 1].e;
    qsort(gaps, ng, sizeof *gaps, cmp_i64);
    double gap_us = ng ? gaps[ng / 2] / 1e3 : 0;
    qsort(g, n, sizeof *g, cmp_grec_corr);
    /* the ranges to probe: the first per_shape of each shape, by start */
    size_t *ri = malloc((t.nrng + 1) * sizeof *ri), nr = 0;
    for (size_t i = 0; i < t.nrng; i++)
        ri[i] = i;
    for (size_t i = 1; i < t.nrng; i++)   /* insertion sort by start: ~600 ranges */
        for (size_t j = i; j > 0 && t.rng[ri[j]].start_ns < t.rng[ri[j - 1]].start_ns; j--) {
            size_t x = ri[j];
            ri[j] = ri[j - 1];
            ri[j - 1] = x;
        }
    FILE *in = fopen(out, "r");
    char *text = NULL;
    size_t len = 0;
    if (in) {
        fseek(in, 0, SEEK_END);
        len = (size_t)ftell(in);
        fseek(in, 0, SEEK_SET);
        text = malloc(len + 1);
        len = fread(text, 1, len, in);
        text[len] = 0;
        fclose(in);
    }
    char *end = text ? strstr(text, "{\"ph\":\"M\",\"cat\":\"meta\",\"name\":\"specprof_end\"") : NULL;
    FILE *o = end ? fopen(out, "w") : NULL;
    int rc = o ? 0 : -1;
    if (o) {
        fwrite(text, 1, (size_t)(end - text), o);
        char (*key)[256] = malloc((t.nrng + 1) * sizeof *key);
        int *cnt = calloc(t.nrng + 1, sizeof *cnt);
        size_t nk = 0;
        for (size_t q = 0; q < t.nrng; q++) {
            const ptrace_range *r = &t.rng[ri[q]];
            char sh[256];
            const char *c = strstr(r->name, " ctx=");
            snprintf(sh, sizeof sh, "%.*s%s", c ? (int)(c - r->name) : (int)strlen(r->name), r->name,
                     c ? c + 5 + strspn(c + 5, "0123456789") : "");
            size_t j = 0;
            while (j < nk && strcmp(key[j], sh))
                j++;
            if (j == nk)
                snprintf(key[nk++], sizeof *key, "%s", sh);
            if (cnt[j]++ < per_shape) {
                write_probe_of(o, &t, r, g, n, gap_us, cost_us);
                nr++;
            }
        }
        /* the end record promises the probes too */
        long long recs = 0;
        const char *rp = strstr(end, "\"records\":");
        if (rp && sscanf(rp + 10, "%lld", &recs) == 1) {
            fwrite(end, 1, (size_t)(rp + 10 - end), o);
            fprintf(o, "%lld", recs + (long long)nr);
            fputs(rp + 10 + strspn(rp + 10, "0123456789"), o);
        } else {
            fputs(end, o);
        }
        fclose(o);
        free(key);
        free(cnt);
    }
    free(text);
    free(ri);
    free(gaps);
    free(g);
    fit_trace_free(&t);
    return rc;
}

/* (d): torchbench's eager loop (call 7, H200, every phase eager, one stream) made lite
 * (specsim lite-from) with eager probes of 2 instances per shape computed from its kernel
 * records, fitted without --nodes (C), against the fit of the always trace itself (A) and of
 * the same lite trace with the always trace as --nodes (B, the probed instances left out as in
 * C): the fit goes through on the probes alone (every probe used, unseen kernels found:
 * cuBLAS's driver launches and the memsets) and every phase's modelled GPU time per cell is
 * printed (TEST_VERBOSE=1). Before 2026-12-07's layout (each instance's records from its own
 * empty GPU, copies of a lite-from trace unmatched, no queue gap or launch latency) C came out
 * 3-16% low (accept -75% to +70%, extend at 480 tokens +26%), its "(gpu idle in phase)" groups
 * ~0. Now, with the probe layout's two numbers at their defaults (1.2 us, 2.0 us: what the
 * probe cannot see), C is within 6% of A and B on every cell (measured: -5.3% to +4.1%; with
 * call 7's own CUPTI numbers, FIT_PROBE_EAGER_GAP_US=1.15 FIT_PROBE_LAUNCH_US=2.17, -5.2% to
 * +4.5%, most cells within 3%); not within 2% (docs/fit.md 1c: sample's blocking copy, the
 * unseen kernels' per-kernel gaps). */
static void fit_probe_eager_lite_fit_matches_the_always_fit(void)
{
    const char *src = "traces/torch/call7/eager/calib_torch-dense_always_eager.json.gz";
    char lite[300], err[1024];
    snprintf(lite, sizeof lite, "%s.lite.json", path);
    fit_trace a, t, ref;
    fit_result ra, rb, rc_;
    fit_opts o = {0};
    fit_probe_stats st;
    fit_nodes_stats ns;
    int oka = fit_trace_load(&a, src, err, sizeof err) == 0;
    if (oka) {
        oka = fit_run(&a, 1, &o, &ra, err, sizeof err) == 0;
        fit_trace_free(&a);
    }
    CHECK(oka, "the always fit: %s", err);
    if (!oka)
        return;
    int okb = write_lite_with_probes(src, lite, 2, 1.2) == 0 && fit_trace_load(&t, lite, err, sizeof err) == 0;
    CHECK(okb, "the lite trace: %s", err);
    if (!okb) {
        fit_result_free(&ra);
        return;
    }
    /* B: the always trace as --nodes, the probed instances left out as in C */
    int rc = fit_probe_ref(&t, lite, &ref, &st, err, sizeof err);
    if (rc == 1)
        fit_trace_free(&ref);
    fit_trace al;
    okb = rc == 1 && fit_trace_load(&al, src, err, sizeof err) == 0;
    if (okb) {
        okb = fit_nodes_fill(&t, &al, 1, NULL, &ns, err, sizeof err) == 0 && fit_run(&t, 1, &o, &rb, err, sizeof err) == 0;
        fit_trace_free(&al);
    }
    fit_trace_free(&t);
    CHECK(okb, "the lite fit with --nodes: %s", err);
    /* C: the probes alone */
    int okc = fit_trace_load(&t, lite, err, sizeof err) == 0;
    rc = okc ? fit_probe_ref(&t, lite, &ref, &st, err, sizeof err) : -1;
    CHECK(rc == 1 && st.eager_instances == st.eager_probes && st.eager_probes >= 100 && st.eager_unseen > 1000 &&
          st.eager_copies_skipped == 0, "fit_probe_ref %d: %zu of %zu used, %zu unseen, %zu copies unmatched (%s)", rc,
          st.eager_instances, st.eager_probes, st.eager_unseen, st.eager_copies_skipped, err);
    okc = rc == 1 && fit_nodes_fill(&t, &ref, 1, NULL, &ns, err, sizeof err) == 0 && fit_run(&t, 1, &o, &rc_, err, sizeof err) == 0;
    CHECK(okc, "the lite fit: %s", err);
    if (rc == 1)
        fit_trace_free(&ref);
    if (rc >= 0)
        fit_trace_free(&t);
    double worst = 0;
    for (int p = 0; okb && okc && p < WM_NPHASE; p++) {
        const fit_phase_res *x = &ra.phase[p], *y = &rc_.phase[p], *z = &rb.phase[p];
        CHECK(x->present == y->present && x->present == z->present, "phase %s", wm_phase_name[p]);
        for (int c = 0; x->present && y->present && z->present && c < x->ncells; c++)
            for (int d = 0; d < y->ncells; d++)
                for (int e = 0; e < z->ncells; e++)
                    if (y->total[d].tokens == x->total[c].tokens && y->total[d].q_per_row == x->total[c].q_per_row &&
                        z->total[e].tokens == x->total[c].tokens && z->total[e].q_per_row == x->total[c].q_per_row) {
                        double ca = y->total[d].fit_us / x->total[c].fit_us - 1, cb = y->total[d].fit_us / z->total[e].fit_us - 1;
                        if (getenv("TEST_VERBOSE"))
                            printf("  %s %5.0f tokens: always (A) %9.1f us, --nodes (B) %9.1f us, probe (C) %9.1f us: "
                                   "C-A %+.2f%%, C-B %+.2f%%\n", wm_phase_name[p], x->total[c].tokens, x->total[c].fit_us,
                                   z->total[e].fit_us, y->total[d].fit_us, 100 * ca, 100 * cb);
                        worst = fmax(worst, fmax(fabs(ca), fabs(cb)));
                        CHECK_NEAR(y->total[d].fit_us, x->total[c].fit_us, 0, 0.06);
                        CHECK_NEAR(y->total[d].fit_us, z->total[e].fit_us, 0, 0.06);
                    }
    }
    if (getenv("TEST_VERBOSE"))
        printf("  worst |C-A|, |C-B|: %.2f%%\n", 100 * worst);
    /* the idle the probe's layout leaves (queue gaps, launch latency) reaches the gap group */
    for (int p = 0; okc && p < WM_NPHASE; p++) {
        const wm_phase_model *pm = &rc_.model.phase[p];
        if (!pm->present || p == WM_ACCEPT || p == WM_SAMPLE)
            continue;
        const wm_group *gap = &pm->groups[pm->ngroups - 1];
        CHECK(gap->base_us > 10, "phase %s: %s base %.2f us (the always fit's: 100-640)", wm_phase_name[p], gap->name,
              gap->base_us);
    }
    fit_result_free(&ra);
    if (okb)
        fit_result_free(&rb);
    if (okc)
        fit_result_free(&rc_);
    if (!getenv("TEST_KEEP"))
        unlink(lite);
}

int main(void)
{
    snprintf(path, sizeof path, "/tmp/test_fit_probe.%d.json", (int)getpid());
    RUN(fit_probe_takes_node_times_less_the_event_cost);
    RUN(fit_probe_gap_leaves_idle_before_each_dependent_node);
    RUN(fit_probe_falls_back_to_the_calibration);
    RUN(fit_probe_refuses_a_broken_node_table);
    RUN(fit_probe_eager_kernels_are_the_event_pairs_less_the_cost);
    RUN(fit_probe_eager_layout_leaves_the_gap_and_the_latency_idle);
    RUN(fit_probe_eager_instance_becomes_a_reference);
    RUN(fit_probe_eager_blocking_copy_ends_at_its_call);
    RUN(fit_probe_eager_incomplete_instance_is_dropped_not_used);
    RUN(fit_probe_eager_refuses_a_malformed_event);
    RUN(fit_probe_eager_unseen_kernels_join_the_phase_graphs_gemms);
    RUN(fit_probe_eager_calls_stay_inside_their_range);
    RUN(fit_probe_mixed_instance_takes_both_probes_and_only_both);
    RUN(fit_probe_mixed_instance_takes_the_executables_probe_from_another);
    RUN(fit_probe_eager_lite_fit_matches_the_always_fit);
    unlink(path);
    return check_done();
}
