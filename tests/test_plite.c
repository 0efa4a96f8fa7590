/* test_plite.c: specprof's lite mode (profiler/inject/plite.c) end to end on the CPU. This
 * program runs itself as a child with bin/libspecprof.so preloaded (and as its NVTX
 * injection) over a scripted CUDA runtime (tests/fakecudart.c: graph replays of set GPU
 * times, streams in order, events, pinned and pageable memory, a capturing stream), then
 * reads the child's trace: graph spans against the fake's GPU times within the err_us the
 * trace states, NVTX and phase of each launch, launches per range, the launch skipped while
 * capturing, copies and syncs with blocking, no CUPTI call at all, `specprof check`.
 * Needs libspecprof.so, built only where nvcc is found (profiler/profiler.mk sets
 * PLITE_LIB); elsewhere, and under ASan (a preloaded library must not come before the
 * sanitizer's runtime), it reports one skip. */
#include "check.h"
#if defined(PLITE_LIB) && !defined(__SANITIZE_ADDRESS__)
#include "fakecudart.h"
#include "ptrace_read.h"
#include <dirent.h>
#include <dlfcn.h>
#include <math.h>
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define A_NS 300000     /* graph A: 300 us on the GPU */
#define B_NS 1000000    /* graph B: 1 ms */
#define LOOP 20
#define PROBE_LOOP 10
/* The eager probe's scenarios: three named kernels of 3, 7 and 20 us launched with 40 us of
 * host work after each (a host-bound loop: the launch gaps are longer than the kernels), on a
 * fake GPU whose event records cost EAGER_EVENT_NS each. */
#define EAGER_GAP_US 40
#define EAGER_EVENT_NS 1000
#define EAGER_SEG 4            /* SPECPROF_PROBE_EAGER_SEGMENT of the eager_seg scenario */
#define EAGER_SEG_LAUNCHES 10
static const struct {
    const char *name, *demangled;
    int64_t ns;
    unsigned grid[3], block[3];
    unsigned smem;
} ek[3] = {
    { "_Z6k_normPfi", "k_norm(float*, int)", 3000, { 2, 1, 1 }, { 64, 1, 1 }, 0 },
    { "k_gemm", "k_gemm", 7000, { 4, 2, 1 }, { 128, 1, 1 }, 1024 },
    { "k_attn", "k_attn", 20000, { 8, 1, 1 }, { 256, 1, 1 }, 0 },
};

static char dir[256];
static char dev_r[4096], pageable_r[4096];

static void sleep_ms(int ms) { struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L }; nanosleep(&ts, NULL); }
static int64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
/* host work between launches: a spin, as a host-bound eager loop's Python */
static void spin_us(int us) { int64_t t = mono_ns() + (int64_t)us * 1000; while (mono_ns() < t) {} }

static void child_write(const char *name, const char *text) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", getenv("SPECPROF_DIR"), name);
    FILE *f = fopen(p, "w");
    if (f) { fputs(text, f); fclose(f); }
}

/* One line per graph replay the fake ran: what at(i) says of it. */
static void child_write_replays(const char *name, int64_t (*at)(int)) {
    static char buf[65536];
    size_t n = 0;
    buf[0] = 0;
    for (int i = 0; fake_graph_start_ns(i) >= 0 && n + 32 < sizeof buf; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%lld\n", (long long)at(i));
    child_write(name, buf);
}

/* ---------- the eager probe's scenarios (SPECPROF_PROBE_EAGER, profiler/inject/pleager.c) ---------- */

static const void *ek_fn[3];

static void eager_launch(int i, void *s) {
    fake_dim3 g = { ek[i].grid[0], ek[i].grid[1], ek[i].grid[2] }, b = { ek[i].block[0], ek[i].block[1], ek[i].block[2] };
    cudaLaunchKernel(ek_fn[i], g, b, NULL, ek[i].smem, s);
}

/* One phase instance: n launches of the kernels in turn on s, EAGER_GAP_US of host work after each. */
static void eager_instance(const char *name, void *s, int n) {
    nvtxRangePushA(name);
    for (int i = 0; i < n; i++) {
        eager_launch(i % 3, s);
        spin_us(EAGER_GAP_US);
    }
    nvtxRangePop();
}

/* What the fake saw, for the parent: the named kernels in the order they ran; the holds, the
 * event records on the program's stream and what is still held there. */
static void eager_write_fake(void *s1) {
    static char buf[8192];
    fake_run_order(buf, sizeof buf);
    child_write("run_order", buf);
    snprintf(buf, sizeof buf, "%d %d %d %d\n", fake_waits(), fake_event_records(s1), fake_held(s1), fake_capture_broken());
    child_write("fake_counts", buf);
}

static void *eager_busy_thread(void *s2) {
    nvtxRangePushA("verify bs=1");
    eager_launch(2, s2);
    spin_us(EAGER_GAP_US);
    nvtxRangePop();
    return NULL;
}

static int child_eager(const char *scenario, void *s1) {
    fake_dim3 d3 = { 1, 1, 1 };
    for (int i = 0; i < 3; i++) ek_fn[i] = fake_kernel_fn(ek[i].name, ek[i].ns);
    fake_set_event_ns(EAGER_EVENT_NS);
    cudaLaunchKernel(NULL, d3, d3, NULL, 0, s1);   /* the first call: the writer starts */
    sleep_ms(100);
    if (!strcmp(scenario, "eager") || !strcmp(scenario, "eager_off") || !strcmp(scenario, "eager_nohold")) {
        if (!strcmp(scenario, "eager_nohold")) fake_set_hold(0);   /* the proof that (a) needs the hold */
        eager_instance("decode bs=1 ctx=100", s1, 3);   /* probed (N=1) */
        cudaStreamSynchronize(s1);
        sleep_ms(30);
        eager_instance("decode bs=1 ctx=101", s1, 3);   /* the same shape: not probed */
        cudaStreamSynchronize(s1);
    } else if (!strcmp(scenario, "eager_shapes")) {     /* N=2: two shapes, four instances each */
        for (int i = 0; i < 4; i++)
            for (int bs = 1; bs <= 2; bs++) {
                char name[64];
                snprintf(name, sizeof name, "decode bs=%d ctx=%d", bs, 100 + 10 * i + bs);
                eager_instance(name, s1, 3);
                cudaStreamSynchronize(s1);
                sleep_ms(30);   /* the writer reads an instance before the next is probed (one at a time) */
            }
    } else if (!strcmp(scenario, "eager_block")) {      /* blocking calls inside the probed instance */
        static char dev[64], dev2[64], host[64];
        nvtxRangePushA("decode bs=1 ctx=7");
        eager_launch(0, s1);
        spin_us(EAGER_GAP_US);
        cudaMemcpyAsync(dev2, dev, sizeof dev2, 3, s1); /* device to device, async: timed, nothing released */
        cudaStreamSynchronize(s1);                      /* would wait for ever on a held stream */
        eager_launch(1, s1);
        spin_us(EAGER_GAP_US);
        cudaMemcpy(host, dev, sizeof host, 2);          /* DtoH, synchronous: waits for s1 too (legacy stream) */
        eager_launch(2, s1);
        spin_us(EAGER_GAP_US);
        void *m = NULL;                                 /* cudaFree waits for the device (torch.cuda.graph() */
        cudaMalloc(&m, 64);                             /* empties the allocator's cache so): released first, */
        cudaFree(m);                                    /* not by the watchdog 50 ms later */
        nvtxRangePop();
        cudaStreamSynchronize(s1);
    } else if (!strcmp(scenario, "eager_watchdog") || !strcmp(scenario, "eager_late")) {
        /* a wait the interposer does not see; eager_late: after the capture ended (SPECPROF_DURATION_S) */
        if (!strcmp(scenario, "eager_late")) sleep_ms(400);
        void *ev = NULL;
        cudaEventCreate(&ev);
        nvtxRangePushA("decode bs=1 ctx=7");
        eager_launch(2, s1);
        cudaEventRecord(ev, s1);                        /* not interposed: the probe cannot release for it */
        int64_t t0 = mono_ns();
        while (cudaEventQuery(ev) != 0 && mono_ns() - t0 < 5000000000LL) {}
        int64_t waited = mono_ns() - t0;
        eager_launch(0, s1);                            /* after the watchdog: the instance has ended */
        spin_us(EAGER_GAP_US);
        nvtxRangePop();
        cudaStreamSynchronize(s1);
        char buf[64];
        snprintf(buf, sizeof buf, "%lld\n", (long long)waited);
        child_write("waited_ns", buf);
    } else if (!strcmp(scenario, "eager_streams")) {    /* another stream; a capturing stream */
        void *s2 = NULL, *s3 = NULL;
        cudaStreamCreateWithPriority(&s2, 0, 0);
        cudaStreamCreateWithPriority(&s3, 0, 0);
        nvtxRangePushA("decode bs=1 ctx=7");
        eager_launch(0, s1);
        spin_us(EAGER_GAP_US);
        eager_launch(1, s2);                            /* another stream: counted, not timed */
        spin_us(EAGER_GAP_US);
        eager_launch(2, s1);
        spin_us(EAGER_GAP_US);
        nvtxRangePop();
        cudaStreamSynchronize(s1);
        cudaStreamSynchronize(s2);
        sleep_ms(30);
        fake_set_capturing(s3, 1);
        eager_instance("verify bs=1", s3, 3);           /* captured into a graph: not probed */
        fake_set_capturing(s3, 0);
        sleep_ms(30);
        eager_instance("verify bs=1", s1, 3);           /* the shape's probe is still free: probed */
        cudaStreamSynchronize(s1);
    } else if (!strcmp(scenario, "eager_busy")) {       /* another thread's instance while one is held */
        void *s2 = NULL;
        pthread_t th;
        cudaStreamCreateWithPriority(&s2, 0, 0);
        nvtxRangePushA("decode bs=1 ctx=7");
        eager_launch(0, s1);                            /* probed: the one slot held */
        spin_us(EAGER_GAP_US);
        pthread_create(&th, NULL, eager_busy_thread, s2);   /* its instance finds the slot held */
        pthread_join(th, NULL);
        eager_launch(1, s1);
        spin_us(EAGER_GAP_US);
        nvtxRangePop();
        cudaStreamSynchronize(s1);
        cudaStreamSynchronize(s2);
    } else if (!strcmp(scenario, "eager_seg")) {        /* SPECPROF_PROBE_EAGER_SEGMENT=4 */
        eager_instance("decode bs=1 ctx=7", s1, EAGER_SEG_LAUNCHES);
        cudaStreamSynchronize(s1);
    } else return 2;
    sleep_ms(50);   /* the writer reads the last instance (the final drain would wait for it too) */
    eager_write_fake(s1);
    return 0;
}

/* The scripted program (runs with libspecprof.so preloaded, lite mode). */
static int child(const char *scenario) {
    void *s1 = NULL;
    cudaStreamCreateWithPriority(&s1, 0, 0);
    void *a = fake_graph_exec(A_NS), *b = fake_graph_exec(B_NS);
    fake_dim3 d3 = { 1, 1, 1 };
    if (!strcmp(scenario, "range_none")) {  /* --capture-range, and no cudaProfilerStart */
        nvtxRangePushA("decode bs=1");
        cudaGraphLaunch(a, s1);
        cudaStreamSynchronize(s1);
        nvtxRangePop();
        return 0;
    }
    if (!strcmp(scenario, "range")) {       /* --capture-range profiler-api */
        cudaLaunchKernel(NULL, d3, d3, NULL, 0, s1);   /* the first call: the writer starts */
        sleep_ms(100);                                  /* and fills the event pool */
        nvtxRangePushA("decode bs=1");                  /* before any start: nothing */
        cudaGraphLaunch(a, s1);
        cudaStreamSynchronize(s1);
        nvtxRangePop();
        nvtxRangePushA("sample bs=1");                  /* begins outside, ends inside: cut */
        cudaProfilerStart();
        nvtxRangePop();
        nvtxRangePushA("verify bs=2");                  /* inside */
        cudaGraphLaunch(b, s1);
        cudaStreamSynchronize(s1);
        nvtxRangePop();
        cudaProfilerStop();
        nvtxRangePushA("decode bs=4");                  /* after the stop: nothing */
        cudaGraphLaunch(a, s1);
        cudaMemcpy(pageable_r, dev_r, 64, 2);
        nvtxRangePop();
        cudaProfilerStop();                             /* a stop without a start: nothing */
        cudaProfilerStart();
        cudaProfilerStart();                            /* nested: one range */
        nvtxRangePushA("decode bs=3");                  /* inside the second range */
        cudaLaunchKernel(NULL, d3, d3, NULL, 0, s1);
        cudaLaunchKernel(NULL, d3, d3, NULL, 0, s1);
        cudaGraphLaunch(a, s1);
        cudaStreamSynchronize(s1);
        nvtxRangePop();
        cudaProfilerStop();
        char buf[64];
        snprintf(buf, sizeof buf, "%d %d\n", fake_profiler_calls(0), fake_profiler_calls(1));
        child_write("profiler_calls", buf);
        return 0;
    }
    if (!strcmp(scenario, "probe")) {       /* SPECPROF_PROBE_REPLAYS=2: the node probe */
        cudaLaunchKernel(NULL, d3, d3, NULL, 0, s1);   /* the writer starts and fills the event pool */
        sleep_ms(100);
        void *g = fake_graph_new();                     /* k1 -> (k2 | k3) -> k4 -> k5 */
        void *k1 = fake_graph_kernel(g, "k1", 10000, NULL, 0);
        void *k2 = fake_graph_kernel(g, "k2", 20000, &k1, 1);
        void *k3 = fake_graph_kernel(g, "k3", 5000, &k1, 1);
        void *j[2] = { k2, k3 };
        void *k4 = fake_graph_kernel(g, "k4", 1000, j, 2);
        void *k5 = fake_graph_kernel(g, "k5", 30000, &k4, 1);
        fake_graph_programmatic(g, k4, k5);             /* as cuBLAS's kernels on Hopper: kept as is */
        void *ga = fake_graph_new();                    /* a graph the probe must leave alone */
        fake_graph_kernel(ga, "ka", 1000, NULL, 0);
        fake_graph_alloc_node(ga);
        void *x = NULL, *y = NULL, *z = NULL;
        cudaGraphInstantiate(&x, g, 0);
        cudaGraphInstantiate(&y, g, 0);
        cudaGraphExecUpdate(y, g, NULL);                /* changed by the program: never probed */
        cudaGraphInstantiate(&z, ga, 0);
        for (int i = 0; i < PROBE_LOOP; i++) {
            nvtxRangePushA("decode bs=1");
            cudaGraphLaunch(x, s1);
            cudaGraphLaunch(y, s1);
            cudaGraphLaunch(z, s1);
            cudaStreamSynchronize(s1);
            nvtxRangePop();
            sleep_ms(15);
        }
        cudaDeviceSynchronize();
        char buf[256];
        snprintf(buf, sizeof buf, "%d %d %d %d %d %d\n", fake_kernel_runs("k1"), fake_kernel_runs("k2"),
                 fake_kernel_runs("k3"), fake_kernel_runs("k4"), fake_kernel_runs("k5"), fake_kernel_runs("ka"));
        child_write("kernel_runs", buf);
        return 0;
    }
    if (!strcmp(scenario, "probe_gone")) {  /* an executable destroyed while its probed replay runs */
        cudaLaunchKernel(NULL, d3, d3, NULL, 0, s1);
        sleep_ms(100);
        void *g = fake_graph_new();
        void *k1 = fake_graph_kernel(g, "k1", 200000, NULL, 0);   /* 200 us: still running at the destroy */
        fake_graph_kernel(g, "k2", 1000, &k1, 1);
        void *x = NULL, *y = NULL;
        cudaGraphInstantiate(&x, g, 0);
        nvtxRangePushA("decode bs=1");
        cudaGraphLaunch(x, s1);                         /* probed */
        cudaGraphExecDestroy(x);                        /* its clone outlives it until the writer read it */
        cudaStreamSynchronize(s1);
        nvtxRangePop();
        sleep_ms(50);
        cudaGraphInstantiate(&y, g, 0);                 /* may take x's address: a new executable */
        nvtxRangePushA("decode bs=1");
        cudaGraphLaunch(y, s1);                         /* probed too */
        cudaStreamSynchronize(s1);
        nvtxRangePop();
        sleep_ms(50);
        return 0;
    }
    if (!strncmp(scenario, "eager", 5)) return child_eager(scenario, s1);
    if (!strcmp(scenario, "nvtx_only")) {   /* a program whose runtime calls we never see */
        nvtxRangePushA("decode bs=1");
        nvtxRangePop();
        return 0;
    }
    nvtxRangePushA("decode bs=1");
    for (int i = 0; i < 3; i++) cudaLaunchKernel(NULL, d3, d3, NULL, 0, s1);
    /* the writer thread fills the event pool after the first CUDA call: launches in the
     * first milliseconds are not timed (no_event), as in a real program's warm-up */
    sleep_ms(100);
    cudaGraphLaunch(a, s1);
    cudaStreamSynchronize(s1);
    nvtxRangePop();
    nvtxRangePushA("verify bs=1");
    nvtxRangePushA("attention");
    cudaGraphLaunch(b, s1);
    cudaGraphLaunch(a, s1);      /* starts when b ends */
    nvtxRangePop();
    nvtxRangePop();
    static char dev[4096], pageable[4096], pinned[4096];
    fake_pin(pinned);
    cudaMemcpyAsync(pageable, dev, 4096, 2, s1);   /* device to pageable host: the host waits */
    cudaMemcpyAsync(pinned, dev, 1024, 2, s1);     /* to pinned memory: it does not */
    cudaMemcpy(dev, pageable, 512, 1);              /* a synchronous copy: it waits */
    cudaStreamSynchronize(s1);
    void *s2 = NULL;                                /* a stream never seen before, capturing */
    cudaStreamCreateWithPriority(&s2, 0, 0);
    fake_set_capturing(s2, 1);
    cudaGraphLaunch(a, s2);                         /* recorded into a graph: not timed */
    cudaMemcpyAsync(pageable, dev, 64, 2, s2);      /* captured: nothing waits */
    fake_set_capturing(s2, 0);
    for (int i = 0; i < LOOP; i++) {                /* over several writer passes (flush 40 ms) */
        cudaGraphLaunch(a, s1);
        sleep_ms(8);
    }
    cudaDeviceSynchronize();
    char buf[65536];
    child_write_replays("fake_starts", fake_graph_start_ns);
    child_write_replays("fake_events", fake_graph_event_ns);
    snprintf(buf, sizeof buf, "%d\n", fake_cupti_calls());
    child_write("cupti_calls", buf);
    snprintf(buf, sizeof buf, "%d\n", fake_capture_broken());
    child_write("capture_broken", buf);
    return 0;
}

/* Runs this program as the child of scenario sub; its trace goes to dir/sub. */
static int run_child(const char *sub) {
    char d[400];
    snprintf(d, sizeof d, "%s/%s", dir, sub);
    mkdir(dir, 0777);
    mkdir(d, 0777);
    fflush(stdout);
    pid_t p = fork();
    if (p == 0) {
        setenv("SPECPROF_DIR", d, 1);
        setenv("SPECPROF_MODE", "lite", 1);
        setenv("SPECPROF_FLUSH_MS", "40", 1);
        setenv("SPECPROF_QUIET", "1", 1);
        setenv("LD_PRELOAD", PLITE_LIB, 1);
        setenv("NVTX_INJECTION64_PATH", PLITE_LIB, 1);
        unsetenv("CUDA_INJECTION64_PATH");
        if (!strncmp(sub, "probe", 5)) setenv("SPECPROF_PROBE_REPLAYS", "2", 1);
        else unsetenv("SPECPROF_PROBE_REPLAYS");
        if (!strncmp(sub, "range", 5)) setenv("SPECPROF_CAPTURE_RANGE", "profiler-api", 1);
        else unsetenv("SPECPROF_CAPTURE_RANGE");
        if (!strncmp(sub, "eager", 5) && strcmp(sub, "eager_off"))
            setenv("SPECPROF_PROBE_EAGER", !strcmp(sub, "eager_shapes") ? "2" : "1", 1);
        else unsetenv("SPECPROF_PROBE_EAGER");
        if (!strcmp(sub, "eager_late")) setenv("SPECPROF_DURATION_S", "0.2", 1);
        else unsetenv("SPECPROF_DURATION_S");
        if (!strcmp(sub, "eager_seg")) {
            char seg[16];
            snprintf(seg, sizeof seg, "%d", EAGER_SEG);
            setenv("SPECPROF_PROBE_EAGER_SEGMENT", seg, 1);
        } else unsetenv("SPECPROF_PROBE_EAGER_SEGMENT");
        char *argv[] = { "test_plite", "child", (char *)sub, NULL };
        execv("/proc/self/exe", argv);
        _exit(127);
    }
    int st = 0;
    waitpid(p, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int trace_path(const char *sub, char *path, size_t cap) {
    char d[400];
    snprintf(d, sizeof d, "%s/%s", dir, sub);
    DIR *dd = opendir(d);
    if (!dd) return -1;
    struct dirent *de;
    path[0] = 0;
    while ((de = readdir(dd)))
        if (!strncmp(de->d_name, "specprof.rank", 13)) snprintf(path, cap, "%s/%s", d, de->d_name);
    closedir(dd);
    return path[0] ? 0 : -1;
}

static long read_long(const char *sub, const char *name, long *out, int max) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s/%s", dir, sub, name);
    FILE *f = fopen(p, "r");
    if (!f) return -1;
    int n = 0;
    while (n < max && fscanf(f, "%ld", &out[n]) == 1) n++;
    fclose(f);
    return n;
}

static int cmp_corr(const void *a, const void *b) {
    const ptrace_graphlaunch *x = a, *y = b;
    return x->corr < y->corr ? -1 : x->corr > y->corr;
}

static ptrace_file full;
static int full_ok;
static char full_path[800];

static void plite_child_runs_and_writes_a_lite_trace(void) {
    int rc = run_child("full");
    CHECK(rc == 0, "child exit %d", rc);
    char err[512];
    if (trace_path("full", full_path, sizeof full_path)) { CHECK(0, "no trace in %s/full", dir); return; }
    CHECK(!strstr(full_path, ".part"), "trace %s not finished", full_path);
    if (ptrace_read_file(full_path, &full, err, sizeof err)) { CHECK(0, "%s", err); return; }
    full_ok = 1;
    const ptrace_info *in = &full.info;
    CHECK(in->complete, "trace complete %d (records %lld of %lld)", in->complete, (long long)in->records_seen,
          (long long)in->records_promised);
    CHECK(!strcmp(in->header.mode, "lite"), "mode '%s'", in->header.mode);
    CHECK(!strcmp(in->header.clock, "CLOCK_REALTIME ns"), "clock '%s'", in->header.clock);
    CHECK(strstr(in->header.interposed, "cudaGraphLaunch") != NULL, "interposed '%s'", in->header.interposed);
}

static void plite_makes_no_cupti_call(void) {
    long n[1] = { -1 };
    CHECK(read_long("full", "cupti_calls", n, 1) == 1 && n[0] == 0, "CUPTI calls in the lite process: %ld", n[0]);
}

/* Nothing but cudaStreamIsCapturing is asked about a capturing stream (a refused call ends
 * the program's capture: seen as a PyTorch failure in the H200 smoke call). */
static void plite_leaves_captures_alone(void) {
    long n[1] = { -1 };
    CHECK(read_long("full", "capture_broken", n, 1) == 1 && n[0] == 0, "calls refused by a capturing stream: %ld", n[0]);
}

/* Graph spans of the child run into dir/sub (its trace tr), sorted by correlation id into g;
 * how many miss the fake's GPU span (1 us) or its start (the two events' stated err_us), each
 * printed; -1 when the counts of launches disagree. */
static int spans_off(const ptrace_file *tr, const char *sub, ptrace_graphlaunch *g, int *n_out) {
    int n = 0;
    for (size_t i = 0; i < tr->n_ev && n < 64; i++)
        if (!ptrace_read_graphlaunch(&tr->ev[i], tr->info.header.t0_ns, &g[n])) n++;
    *n_out = n;
    CHECK(n == LOOP + 3, "%s: %d graph_trace events, expected %d", sub, n, LOOP + 3);
    qsort(g, (size_t)n, sizeof g[0], cmp_corr);
    long fake[64], ev[64];
    long nf = read_long(sub, "fake_starts", fake, 64), ne = read_long(sub, "fake_events", ev, 64);
    CHECK(nf == LOOP + 3 && ne == nf, "%s: %ld replays in the fake, %ld start events", sub, nf, ne);
    if (n != LOOP + 3 || nf != LOOP + 3 || ne != nf) return -1;
    int off = 0;
    for (int i = 0; i < n; i++) {
        /* the span runs from the start event (on an idle stream: its record call's time, the
         * host's delay before the launch included) to the GPU's end */
        CHECK(ev[i] > 0 && ev[i] <= fake[i], "launch %d: start event %ld, GPU start %ld", i, ev[i], fake[i]);
        int64_t gpu = i == 1 ? B_NS : A_NS, want = gpu + (fake[i] - ev[i]);
        CHECK(g[i].graph_exec_id == (i == 1 ? 2u : 1u), "launch %d: graph_exec_id %u", i, g[i].graph_exec_id);
        CHECK(g[i].err_us > 0 && g[i].err_us < 100, "launch %d: err_us %.3f", i, g[i].err_us);
        double d_trace = (double)(g[i].start_ns - g[0].start_ns), d_gpu = (double)(ev[i] - ev[0]);
        double bound_ns = (g[i].err_us + g[0].err_us) * 1e3;
        int bad_dur = llabs((g[i].end_ns - g[i].start_ns) - want) > 1000, bad_start = fabs(d_trace - d_gpu) > bound_ns;
        if (bad_dur || bad_start) {
            off++;
            printf("     %s launch %d: dur %lld ns (GPU %lld after its start event), start +%.0f ns after the "
                   "first (events +%.0f, bound %.0f)\n", sub, i, (long long)(g[i].end_ns - g[i].start_ns),
                   (long long)want, d_trace, d_gpu, bound_ns);
        }
    }
    return off;
}

/* Graph spans: each runs from its start event to the GPU's end, so its duration is the fake's
 * GPU time plus the host's delay between the start event's record and the launch (an event on
 * an idle stream takes its record call's time, on a real GPU as on the fake: the fake says when
 * it was recorded); starts, relative to the first, are the start events' within the two events'
 * stated err_us. Until 2026-12-07 the durations were held to the GPU time alone within 1 us,
 * which a slow moment of the host between the two calls (1.5 us on the CI-like VM, 5 of 23
 * launches in each of three runs) broke. A thread descheduled elsewhere (the end event recorded
 * after the GPU finished) still lengthens a span: up to 2 of the 23 may miss, and a run with more
 * is repeated, up to twice, in a fresh child: a defect misplaces spans in every run, a
 * descheduled thread in one. */
static void plite_graph_spans_match_the_gpu_within_err(void) {
    if (!full_ok) { CHECK(0, "no trace"); return; }
    ptrace_graphlaunch g[64];
    int n = 0;
    int off = spans_off(&full, "full", g, &n);
    if (off < 0) return;
    for (int again = 1; again <= 2 && off > 2; again++) {
        char sub[32], path[800], err[512];
        snprintf(sub, sizeof sub, "full_again%d", again);
        printf("     %d of %d launches off: the child runs again (%s)\n", off, n, sub);
        ptrace_file tr;
        int rc = run_child(sub);
        CHECK(rc == 0, "%s: child exit %d", sub, rc);
        if (rc || trace_path(sub, path, sizeof path)) { CHECK(0, "no trace in %s/%s", dir, sub); return; }
        if (ptrace_read_file(path, &tr, err, sizeof err)) { CHECK(0, "%s", err); return; }
        ptrace_graphlaunch g2[64];
        int n2 = 0;
        off = spans_off(&tr, sub, g2, &n2);
        ptrace_file_free(&tr);
        if (off < 0) return;
    }
    CHECK(off <= 2, "%d of %d launches off their GPU span or start, in each of 3 runs", off, n);
    /* b then a back to back: a starts where b ends */
    CHECK(llabs(g[2].start_ns - g[1].end_ns) <= (int64_t)((g[1].err_us + g[2].err_us) * 1e3) + 1000,
          "second launch starts %lld ns after the first ends", (long long)(g[2].start_ns - g[1].end_ns));
    CHECK(!strcmp(g[0].nvtx, "decode bs=1") && !strcmp(g[0].phase, "decode"), "first: nvtx '%s' phase '%s'", g[0].nvtx,
          g[0].phase);
    CHECK(!strcmp(g[1].nvtx, "attention") && !strcmp(g[1].phase, "verify"), "second: nvtx '%s' phase '%s'", g[1].nvtx,
          g[1].phase);
    CHECK(!g[5].nvtx[0] && !g[5].phase[0], "loop launch: nvtx '%s' phase '%s'", g[5].nvtx, g[5].phase);
}

static void plite_ranges_count_their_launches(void) {
    if (!full_ok) { CHECK(0, "no trace"); return; }
    int seen = 0;
    for (size_t i = 0; i < full.n_ev; i++) {
        ptrace_range r;
        if (ptrace_read_range(&full.ev[i], 0, &r)) continue;
        CHECK(r.has_launches, "range %s without launches", r.name);
        if (!strcmp(r.name, "decode bs=1")) {
            seen++;
            CHECK(r.launches == 3 && r.graph_launches == 1, "decode: %lld launches, %lld graph", (long long)r.launches,
                  (long long)r.graph_launches);
        } else if (!strcmp(r.name, "verify bs=1") || !strcmp(r.name, "attention")) {
            seen++;
            CHECK(r.launches == 0 && r.graph_launches == 2, "%s: %lld launches, %lld graph", r.name, (long long)r.launches,
                  (long long)r.graph_launches);
        }
    }
    CHECK(seen == 3, "%d of the 3 ranges", seen);
}

static void plite_records_copies_syncs_and_the_capturing_launch(void) {
    if (!full_ok) { CHECK(0, "no trace"); return; }
    int graphs = 0, capturing = 0, pageable = 0, pinned = 0, captured = 0, sync_copy = 0, ssync = 0, dsync = 0;
    for (size_t i = 0; i < full.n_ev; i++) {
        ptrace_api a;
        if (ptrace_read_api(&full.ev[i], 0, &a)) continue;
        CHECK(a.has_lite, "api %s without the lite fields", a.name);
        if (!strcmp(a.name, "cudaGraphLaunch")) {
            graphs++;
            if (a.untimed && !strcmp(a.untimed, "capturing")) capturing++;
            CHECK(a.cbid == 311 || a.cbid > 0, "cbid %u", a.cbid);
        } else if (!strcmp(a.name, "cudaMemcpyAsync")) {
            CHECK(a.copy_kind && !strcmp(a.copy_kind, "DtoH"), "copy kind %s", a.copy_kind ? a.copy_kind : "(none)");
            if (a.bytes == 4096) { pageable++; CHECK(a.blocking == 1, "pageable copy: blocking %d", a.blocking); }
            if (a.bytes == 1024) { pinned++; CHECK(a.blocking == 0, "pinned copy: blocking %d", a.blocking); }
            if (a.bytes == 64) { captured++; CHECK(a.blocking == 0 && a.stream == 0, "captured copy: blocking %d stream %llu",
                                                   a.blocking, (unsigned long long)a.stream); }
            else CHECK(a.stream == 13, "copy stream %llu (cudaStreamGetId)", (unsigned long long)a.stream);
        } else if (!strcmp(a.name, "cudaMemcpy")) {
            sync_copy++;
            CHECK(a.blocking == 1 && a.bytes == 512 && !strcmp(a.copy_kind, "HtoD"), "cudaMemcpy: blocking %d bytes %lld",
                  a.blocking, (long long)a.bytes);
        } else if (!strcmp(a.name, "cudaStreamSynchronize")) {
            ssync++;
            CHECK(a.blocking == 1, "sync blocking %d", a.blocking);
        } else if (!strcmp(a.name, "cudaDeviceSynchronize")) dsync++;
    }
    CHECK(graphs == LOOP + 4, "%d graph launch api events", graphs);
    CHECK(capturing == 1, "%d launches marked capturing", capturing);
    CHECK(pageable == 1 && pinned == 1 && captured == 1 && sync_copy == 1, "copies: pageable %d pinned %d captured %d sync %d",
          pageable, pinned, captured, sync_copy);
    CHECK(ssync == 2 && dsync == 1, "syncs: stream %d device %d", ssync, dsync);
    const ptrace_lite *l = &full.info.end.lite;
    CHECK(l->on, "no lite counts in the end record");
    CHECK(l->graph_launches == LOOP + 4 && l->graph_timed == LOOP + 3 && l->graph_capturing == 1,
          "end: %lld launches, %lld timed, %lld capturing", (long long)l->graph_launches, (long long)l->graph_timed,
          (long long)l->graph_capturing);
    CHECK(l->graph_pending == 0 && l->graph_lost == 0 && l->graph_failed == 0 && l->dropped == 0,
          "end: pending %lld lost %lld failed %lld dropped %lld", (long long)l->graph_pending, (long long)l->graph_lost,
          (long long)l->graph_failed, (long long)l->dropped);
    CHECK(l->kernel_launches == 3 && l->memcpy_calls == 4 && l->sync_calls == 3 && l->blocking_calls == 5,
          "end: kernels %lld copies %lld syncs %lld blocking %lld", (long long)l->kernel_launches,
          (long long)l->memcpy_calls, (long long)l->sync_calls, (long long)l->blocking_calls);
    CHECK(l->anchors >= 2, "%lld anchors", (long long)l->anchors);
    CHECK(l->calib_ok && l->graph_timing_us > 0 && l->graph_launch_real_us >= 1.9,
          "calibration ok %d (%s): real %.3f lite %.3f us", l->calib_ok, l->calib_why, l->graph_launch_real_us,
          l->graph_launch_lite_us);
    CHECK(!l->static_runtime, "static runtime suspected");
}

/* Runs cmd (its output into out, NUL-terminated); its exit status, -1 when it could not run. */
static int run_cmd(const char *cmd, char *out, size_t cap) {
    FILE *p = popen(cmd, "r");
    size_t n = p ? fread(out, 1, cap - 1, p) : 0;
    out[n] = 0;
    return p ? pclose(p) : -1;
}

static void plite_trace_passes_specprof_check(void) {
    if (!full_ok) { CHECK(0, "no trace"); return; }
    char cmd[1200], out[8192];
    snprintf(cmd, sizeof cmd, "%s check %s 2>&1", SPECPROF_BIN, full_path);
    int rc = run_cmd(cmd, out, sizeof out);
    CHECK(rc == 0, "specprof check exit %d:\n%s", rc, out);
    CHECK(strstr(out, "capture: lite") && strstr(out, "lite: graph launches 24, timed 23, not timed: capturing 1"),
          "check output:\n%s", out);
    /* specprof merge takes a lite file as any other, its graph_trace events too */
    snprintf(cmd, sizeof cmd, "%s merge %s/full 2>&1 && %s check %s/full/merged.json.gz 2>&1", SPECPROF_BIN, dir,
             SPECPROF_BIN, dir);
    rc = run_cmd(cmd, out, sizeof out);
    CHECK(rc == 0 && strstr(out, "merged file") && strstr(out, "23 graph_trace events"), "merge, check (exit %d):\n%s", rc, out);
}

static void plite_says_when_the_runtime_is_static(void) {
    int rc = run_child("nvtx_only");
    CHECK(rc == 0, "child exit %d", rc);
    char path[800], err[512];
    ptrace_file f;
    if (trace_path("nvtx_only", path, sizeof path)) { CHECK(0, "no trace"); return; }
    if (ptrace_read_file(path, &f, err, sizeof err)) { CHECK(0, "%s", err); return; }
    CHECK(f.info.complete && f.info.end.lite.on && f.info.end.lite.static_runtime, "complete %d static_runtime %d",
          f.info.complete, f.info.end.lite.static_runtime);
    int ranges = 0;
    for (size_t i = 0; i < f.n_ev; i++) { ptrace_range r; if (!ptrace_read_range(&f.ev[i], 0, &r)) ranges++; }
    CHECK(ranges == 1, "%d nvtx events", ranges);
    ptrace_file_free(&f);
}

/* --capture-range profiler-api: only what lies between cudaProfilerStart and Stop is written
 * (ranges begun before a start are cut), the calls still reach the runtime, and the trace says
 * how many ranges it holds. */
static void plite_capture_range_records_only_inside(void) {
    int rc = run_child("range");
    CHECK(rc == 0, "child exit %d", rc);
    char path[800], err[512];
    ptrace_file f;
    if (trace_path("range", path, sizeof path)) { CHECK(0, "no trace"); return; }
    if (ptrace_read_file(path, &f, err, sizeof err)) { CHECK(0, "%s", err); return; }
    const ptrace_lite *l = &f.info.end.lite;
    CHECK(f.info.complete && l->on, "complete %d lite %d", f.info.complete, l->on);
    CHECK(!strcmp(f.info.header.capture_range, "profiler-api") && !strcmp(l->capture_range, "profiler-api"),
          "capture_range header \"%s\" end \"%s\"", f.info.header.capture_range, l->capture_range);
    CHECK(l->range_opens == 2 && l->range_ns > 0, "range_opens %lld range_ns %lld", (long long)l->range_opens,
          (long long)l->range_ns);
    char names[8][64];
    int nr = 0, launches3 = -1, gl = 0, syncs = 0, copies = 0;
    for (size_t i = 0; i < f.n_ev; i++) {
        ptrace_range r;
        ptrace_graphlaunch g;
        ptrace_api a;
        if (!ptrace_read_range(&f.ev[i], 0, &r)) {
            if (nr < 8) snprintf(names[nr], sizeof names[nr], "%s", r.name);
            nr++;
            if (!strcmp(r.name, "decode bs=3")) launches3 = (int)r.launches;
        } else if (!ptrace_read_graphlaunch(&f.ev[i], 0, &g)) gl++;
        else if (!ptrace_read_api(&f.ev[i], 0, &a)) {
            if (strstr(a.name, "Synchronize")) syncs++;
            else if (strstr(a.name, "Memcpy")) copies++;
        }
    }
    CHECK(nr == 2 && !strcmp(names[0], "verify bs=2") && !strcmp(names[1], "decode bs=3"), "%d ranges: %s, %s", nr,
          nr > 0 ? names[0] : "-", nr > 1 ? names[1] : "-");
    CHECK(launches3 == 2, "decode bs=3 launches %d", launches3);
    CHECK(gl == 2 && syncs == 2 && copies == 0, "graph launches %d, syncs %d, copies %d written", gl, syncs, copies);
    long pc[2] = { 0, 0 };
    CHECK(read_long("range", "profiler_calls", pc, 2) == 2 && pc[0] == 3 && pc[1] == 3,
          "profiler calls that reached the runtime: start %ld stop %ld", pc[0], pc[1]);
    ptrace_file_free(&f);
    /* specprof check says what the range held, and warns when no range was ever opened */
    char cmd[1200], out[8192];
    snprintf(cmd, sizeof cmd, "%s check %s 2>&1", SPECPROF_BIN, path);
    run_cmd(cmd, out, sizeof out);
    CHECK(strstr(out, "capture range profiler-api: 2 ranges opened") && !strstr(out, "never called"), "check:\n%s", out);
    rc = run_child("range_none");
    CHECK(rc == 0, "child exit %d", rc);
    if (trace_path("range_none", path, sizeof path)) { CHECK(0, "no trace (range_none)"); return; }
    snprintf(cmd, sizeof cmd, "%s check %s 2>&1", SPECPROF_BIN, path);
    run_cmd(cmd, out, sizeof out);
    CHECK(strstr(out, "0 ranges opened") && strstr(out, "never called cudaProfilerStart"), "check:\n%s", out);
}

/* This test binary's path into buf (the launcher runs it as a child): 0, or -1 with the
 * check failed. */
static int self_exe(char *buf, size_t n) {
    ssize_t k = readlink("/proc/self/exe", buf, n - 1);
    if (k <= 0) { CHECK(0, "no /proc/self/exe"); return -1; }
    buf[k] = 0;
    return 0;
}

/* The launcher over 20 processes: each wrote the same note ("device facts unavailable" here,
 * where there is no libcuda) and specprof repeated it 20 times after the run, and listed
 * every file; now the note once with the count, at most 16 files and how many more. */
static void plite_launcher_says_a_repeated_note_once(void) {
    char cmd[1600], out[16384], self[600];
    if (self_exe(self, sizeof self)) return;
    snprintf(cmd, sizeof cmd, "timeout 60 %s -o %s/many --mode lite --quiet -- sh -c 'for i in $(seq 20); do %s child "
             "range_none & done; wait' 2>&1", SPECPROF_BIN, dir, self);
    int rc = run_cmd(cmd, out, sizeof out);
    int notes = 0, traces = 0;
    for (const char *p = out; (p = strstr(p, "specprof: note from")); p++) notes++;
    for (const char *p = out; (p = strstr(p, "specprof: trace ")); p++) traces++;
    CHECK(rc == 0 && strstr(out, "20 complete and 0 cut-off"), "exit %d:\n%s", rc, out);
    CHECK(notes == 1 && strstr(out, "and 19 more: device facts unavailable"), "%d note lines:\n%s", notes, out);
    CHECK(traces == 16 && strstr(out, "... and 4 more trace files"), "%d trace lines:\n%s", traces, out);
}

/* A second run into the same directory within the same second: the first run's trace was
 * listed as the second's ("1 complete", for a command that wrote nothing). */
static void plite_launcher_lists_only_this_runs_files(void) {
    char cmd[1600], out[8192], self[600];
    if (self_exe(self, sizeof self)) return;
    snprintf(cmd, sizeof cmd, "timeout 60 %s -o %s/again --mode lite --quiet -- %s child range_none 2>&1 && "
             "timeout 60 %s -o %s/again --mode lite --quiet -- true 2>&1", SPECPROF_BIN, dir, self, SPECPROF_BIN, dir);
    int rc = run_cmd(cmd, out, sizeof out);
    const char *second = strstr(out, "command true");
    CHECK(rc == 0 && second && strstr(second, "no trace file was written") && !strstr(second, "1 complete"),
          "exit %d:\n%s", rc, out);
}

/* specprof's default: lite mode with both probes at 3 (a trace the fit takes alone); a program
 * that holds CUDA code (a .nv_fatbin section) but does not load libcudart.so, as nvcc's
 * default static runtime builds it, is recorded in always mode with a note, since lite would see
 * nothing of it; asking it for a lite-only option says why it cannot. */
static void plite_default_is_lite_with_both_probes(void) {
    char cmd[2000], out[8192], self[600], path[800], err[512];
    if (self_exe(self, sizeof self)) return;
    snprintf(cmd, sizeof cmd, "timeout 60 %s -o %s/default -- %s child range_none 2>&1", SPECPROF_BIN, dir, self);
    int rc = run_cmd(cmd, out, sizeof out);
    CHECK(rc == 0 && strstr(out, "# specprof: mode lite") && strstr(out, "node probe: each graph executable's first 3") &&
          strstr(out, "eager probe: the first 3 instances"), "exit %d:\n%s", rc, out);
    ptrace_file f;
    if (trace_path("default", path, sizeof path)) { CHECK(0, "no trace in %s/default", dir); return; }
    if (ptrace_read_file(path, &f, err, sizeof err)) { CHECK(0, "%s", err); return; }
    CHECK(f.info.end.lite.on && f.info.end.lite.probe_replays == 3 && f.info.end.lite.eager_instances == 3,
          "lite %d probe_replays %d eager_instances %d", f.info.end.lite.on, f.info.end.lite.probe_replays,
          f.info.end.lite.eager_instances);
    ptrace_file_free(&f);
    /* a program with device code and a static runtime: cc builds one with a .nv_fatbin section */
    char src[700];
    snprintf(src, sizeof src, "%s/static.c", dir);
    FILE *sf = fopen(src, "w");
    if (!sf) { CHECK(0, "cannot write %s", src); return; }
    fputs("int main(void) { return 0; }\n"
          "__attribute__((section(\".nv_fatbin\"), used)) static const char fb[16] = \"fatbin\";\n", sf);
    fclose(sf);
    snprintf(cmd, sizeof cmd, "cc -o %s/static_cuda %s 2>&1", dir, src);
    rc = run_cmd(cmd, out, sizeof out);
    if (rc != 0) { CHECK(0, "cc: %s", out); return; }
    snprintf(cmd, sizeof cmd, "timeout 60 %s -o %s/static -- %s/static_cuda 2>&1", SPECPROF_BIN, dir, dir);
    rc = run_cmd(cmd, out, sizeof out);
    CHECK(rc == 0 && strstr(out, "# specprof: mode always") && strstr(out, "static_cuda holds CUDA code but does not "
          "load libcudart.so") && !strstr(out, "node probe:"), "exit %d:\n%s", rc, out);
    snprintf(cmd, sizeof cmd, "timeout 60 %s -o %s/static --probe-eager 2 -- %s/static_cuda 2>&1", SPECPROF_BIN, dir, dir);
    rc = run_cmd(cmd, out, sizeof out);
    CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 2 && strstr(out, "static_cuda: holds CUDA code") &&
          strstr(out, "--mode always"), "exit %d:\n%s", rc, out);
    /* --mode always on the same program: no note, no probes */
    snprintf(cmd, sizeof cmd, "timeout 60 %s -o %s/static --mode always -- %s/static_cuda 2>&1", SPECPROF_BIN, dir, dir);
    rc = run_cmd(cmd, out, sizeof out);
    CHECK(rc == 0 && !strstr(out, "holds CUDA code") && !strstr(out, "probe:"), "exit %d:\n%s", rc, out);
}

/* The node probe (SPECPROF_PROBE_REPLAYS=2): of three executables, the first is probed in its
 * first two replays, each node's end from its event (the fake's event nodes cost 2 us each,
 * so the ends are known exactly; a programmatic edge stays in place); the one the program changed (cudaGraphExecUpdate) and the
 * one with a memory allocation node are never probed; every kernel ran once per replay
 * whichever executable ran; the node table names each kernel and its predecessors; specprof
 * check reports the probe; the end's calibration measures the fake's 2 us a node. */
static void plite_probe_times_each_node_and_runs_the_same_kernels(void) {
    int rc = run_child("probe");
    CHECK(rc == 0, "child exit %d", rc);
    long runs[6] = { 0 };
    CHECK(read_long("probe", "kernel_runs", runs, 6) == 6, "no kernel_runs");
    for (int i = 0; i < 5; i++) CHECK(runs[i] == 2 * PROBE_LOOP, "k%d ran %ld times, expected %d", i + 1, runs[i], 2 * PROBE_LOOP);
    CHECK(runs[5] == PROBE_LOOP, "ka ran %ld times, expected %d", runs[5], PROBE_LOOP);
    char path[800], err[512];
    ptrace_file f;
    if (trace_path("probe", path, sizeof path)) { CHECK(0, "no trace"); return; }
    if (ptrace_read_file(path, &f, err, sizeof err)) { CHECK(0, "%s", err); return; }
    const ptrace_lite *l = &f.info.end.lite;
    CHECK(f.info.complete && l->probe_replays == 2 && l->probe_execs == 2 && l->probe_skipped == 1 &&
          l->probe_stale == 1 && l->probe_launched == 2 && l->probe_written == 2 && l->probe_lost == 0,
          "end: complete %d replays %d execs %lld skipped %lld stale %lld launched %lld written %lld lost %lld",
          f.info.complete, l->probe_replays, (long long)l->probe_execs, (long long)l->probe_skipped,
          (long long)l->probe_stale, (long long)l->probe_launched, (long long)l->probe_written, (long long)l->probe_lost);
    CHECK(strstr(l->probe_skip_why, "memory allocation") != NULL, "skip_why '%s'", l->probe_skip_why);
    CHECK(l->probe_event_us > 1.99 && l->probe_event_us < 2.1, "calibrated event cost %.3f us a node (fake: 2 + 2/64)",
          l->probe_event_us);
    /* each end: its own 2 us event and those before it on its path; k5 follows k4 over the
     * programmatic edge the probe left in place, not k4's event */
    static const double want[5] = { 12, 34, 19, 37, 67 };
    int probes = 0, traces = 0, table = 0, names = 0, untimed = 0;
    uint32_t probed_exec = 0;
    for (size_t i = 0; i < f.n_ev; i++) {
        const ptrace_event *e = &f.ev[i];
        ptrace_graphlaunch g;
        ptrace_api a;
        const pjson *end = NULL;
        if (ptrace_read_graphprobe(e, 0, &g, &end) >= 0) {
            probes++;
            CHECK(!probed_exec || probed_exec == g.graph_exec_id, "probes of executables %u and %u", probed_exec, g.graph_exec_id);
            probed_exec = g.graph_exec_id;
            CHECK(end->len == 5 && !strcmp(g.phase, "decode"), "probe: %zu nodes, phase '%s'", end->len, g.phase);
            for (size_t k = 0; k < end->len && k < 5; k++)
                CHECK(fabs(pjson_at(end, k)->num - want[k]) < 0.01, "node %zu ends at %.1f us, expected %.0f", k,
                      pjson_at(end, k)->num, want[k]);
            /* the clone's 61 us and its events' 8 on the path (k5's is after the end), and the host's
             * time between the first event's record and the launch (the fake's clock is the host's) */
            CHECK(g.end_ns - g.start_ns >= 69000 && g.end_ns - g.start_ns < 90000, "probed span %lld ns, expected 69 us",
                  (long long)(g.end_ns - g.start_ns));
        } else if (!ptrace_read_graphlaunch(e, 0, &g)) {
            traces++;
        } else if (!ptrace_read_api(e, 0, &a) && a.untimed && !strcmp(a.untimed, "probe")) {
            untimed++;
        } else if (!strcmp(e->cat, "graph_probe") && !strcmp(e->name, "probe_graph")) {
            table++;
            const pjson *ty = pjson_get(e->args, "type"), *pn = pjson_get(e->args, "pred_n"), *pr = pjson_get(e->args, "pred");
            CHECK(ty && ty->type == PJSON_STR && !strcmp(ty->str, "KKKKK"), "type %s", ty && ty->str ? ty->str : "-");
            static const int want_n[5] = { 0, 1, 1, 2, 1 }, want_p[5] = { 0, 0, 1, 2, 3 };
            CHECK(pn && pn->len == 5 && pr && pr->len == 5, "pred_n/pred lengths %zu %zu", pn ? pn->len : 0, pr ? pr->len : 0);
            const pjson *la = pjson_get(e->args, "launch");   /* the fake's kernels: 7 blocks of 128, 32 registers */
            static const int want_l[8] = { 7, 1, 1, 128, 1, 1, 0, 32 };
            CHECK(la && la->len == 40, "launch: %zu values", la ? la->len : 0);
            for (size_t k = 0; la && la->len == 40 && k < 8; k++)
                CHECK(pjson_at(la, 32 + k)->i == want_l[k], "node 4 launch[%zu] %lld, expected %d", k,
                      (long long)pjson_at(la, 32 + k)->i, want_l[k]);
            for (size_t k = 0; pn && pr && pn->len == 5 && pr->len == 5 && k < 5; k++)
                CHECK(pjson_at(pn, k)->i == want_n[k] && pjson_at(pr, k)->i == want_p[k], "node %zu: pred_n %lld pred %lld", k,
                      (long long)pjson_at(pn, k)->i, (long long)pjson_at(pr, k)->i);
        } else if (!strcmp(e->cat, "graph_probe") && !strcmp(e->name, "probe_names")) {
            const pjson *nm = pjson_get(e->args, "names");
            names += nm ? (int)nm->len : 0;
            for (size_t k = 0; nm && k < nm->len; k++) {
                char want_name[32];
                snprintf(want_name, sizeof want_name, "k%zu", k + 1);
                CHECK(!strcmp(pjson_at(nm, k)->str, want_name), "name %zu '%s'", k, pjson_at(nm, k)->str);
            }
        }
    }
    CHECK(probes == 2 && untimed == 2, "%d graph_probe events, %d launches marked untimed probe; expected 2", probes, untimed);
    CHECK(traces == 3 * PROBE_LOOP - 2, "%d graph_trace events, expected %d", traces, 3 * PROBE_LOOP - 2);
    CHECK(table == 1 && names == 5, "%d node tables, %d names; expected 1 and 5", table, names);
    char cmd[1200], out[8192];
    snprintf(cmd, sizeof cmd, "%s check %s 2>&1", SPECPROF_BIN, path);
    rc = run_cmd(cmd, out, sizeof out);
    CHECK(rc == 0 && strstr(out, "node probe: 2 replays an executable; 2 executables instrumented") &&
          strstr(out, "2 probed replays launched, 2 written, 0 lost, 1 executables changed"),
          "specprof check (exit %d):\n%s", rc, out);
    ptrace_file_free(&f);
}

/* An executable the program destroys while its probed replay still runs: the probe is read
 * and freed by the writer afterwards (no crash, nothing lost), and an executable made after it
 * (perhaps at the same address) is probed as a new one. */
static void plite_probe_survives_a_destroyed_executable(void) {
    int rc = run_child("probe_gone");
    CHECK(rc == 0, "child exit %d", rc);
    char path[800], err[512];
    ptrace_file f;
    if (trace_path("probe_gone", path, sizeof path)) { CHECK(0, "no trace"); return; }
    if (ptrace_read_file(path, &f, err, sizeof err)) { CHECK(0, "%s", err); return; }
    const ptrace_lite *l = &f.info.end.lite;
    CHECK(f.info.complete && l->probe_execs == 2 && l->probe_launched == 2 && l->probe_written == 2 && l->probe_lost == 0,
          "complete %d execs %lld launched %lld written %lld lost %lld", f.info.complete, (long long)l->probe_execs,
          (long long)l->probe_launched, (long long)l->probe_written, (long long)l->probe_lost);
    ptrace_file_free(&f);
}

/* ---------- the eager probe (SPECPROF_PROBE_EAGER): traces/FORMAT.md "Eager probe" ---------- */

/* Runs scenario sub and reads its trace into f: 0, or -1 with a check failed. */
static int eager_load(const char *sub, ptrace_file *f) {
    int rc = run_child(sub);
    CHECK(rc == 0, "%s: child exit %d (70: the fake runtime saw a sync wait for ever on a held stream)", sub, rc);
    char path[800], err[512];
    if (trace_path(sub, path, sizeof path)) { CHECK(0, "%s: no trace", sub); return -1; }
    if (ptrace_read_file(path, f, err, sizeof err)) { CHECK(0, "%s: %s", sub, err); return -1; }
    CHECK(f->info.complete, "%s: trace not complete", sub);
    return 0;
}

/* The eager_probe events of f into ev (at most max); their count. */
static int eager_events(const ptrace_file *f, const ptrace_event **ev, int max) {
    int n = 0;
    for (size_t i = 0; i < f->n_ev; i++)
        if (f->ev[i].ph == 'X' && f->ev[i].cat && !strcmp(f->ev[i].cat, "eager_probe") && f->ev[i].args) {
            if (n < max) ev[n] = &f->ev[i];
            n++;
        }
    return n;
}

/* The name the trace gives ek[i]: demangled where the process has __cxa_demangle (a C program
 * has not, unless something loaded libstdc++), as the probe's precord_demangle does. */
static const char *ek_name(int i) { return dlsym(RTLD_DEFAULT, "__cxa_demangle") ? ek[i].demangled : ek[i].name; }

/* Walks an eager_probe event's entries: types[t] counts type t, order (when not NULL, room for
 * 64) gets one letter a type (K kernel, C copy, R release, E end); the j-th kernel entry is
 * checked against ek[kidx[j]] (name, grid, block, shared memory) and its time a - b - cost_us
 * against the kernel's modelled GPU time: within 0.2 us when exact. Returns the largest
 * |time - modelled| in us over the kernels; -1 when the event is malformed. */
static double eager_walk(const ptrace_event *e, const int *kidx, int nk, int types[4], char *order, int exact) {
    const pjson *k = pjson_get(e->args, "k"), *names = pjson_get(e->args, "names");
    double cost = pjson_get_num(e->args, "cost_us", -1), worst = 0;
    memset(types, 0, 4 * sizeof *types);
    if (!k || k->type != PJSON_ARR || !names || names->type != PJSON_ARR) { CHECK(0, "eager_probe without k or names"); return -1; }
    int j = 0;
    for (size_t i = 0; i < k->len; i++) {
        const pjson *x = pjson_at(k, i);
        if (x->type != PJSON_ARR || x->len != 13) { CHECK(0, "entry %zu: %zu values", i, x->len); return -1; }
        int t = (int)pjson_at(x, 0)->i;
        if (t < 0 || t > 3) { CHECK(0, "entry %zu: type %d", i, t); return -1; }
        types[t]++;
        if (order && i < 63) { order[i] = "KCRE"[t]; order[i + 1] = 0; }
        double b = pjson_at(x, 11)->num, a = pjson_at(x, 12)->num;
        if (t >= 2) CHECK(a == b, "entry %zu (type %d): b %.3f a %.3f, one event", i, t, b, a);
        if (t != 0) continue;
        if (j >= nk) { CHECK(0, "entry %zu: kernel %d, %d expected", i, j + 1, nk); return -1; }
        int ki = kidx[j++];
        int64_t ni = pjson_at(x, 1)->i;
        const char *nm = ni >= 0 && (size_t)ni < names->len ? pjson_at(names, (size_t)ni)->str : "(none)";
        CHECK(!strcmp(nm, ek_name(ki)), "entry %zu: name '%s', expected '%s'", i, nm, ek_name(ki));
        for (int d = 0; d < 3; d++)
            CHECK(pjson_at(x, 2 + d)->i == ek[ki].grid[d] && pjson_at(x, 5 + d)->i == ek[ki].block[d],
                  "entry %zu: grid/block[%d] %lld %lld, expected %u %u", i, d, (long long)pjson_at(x, 2 + d)->i,
                  (long long)pjson_at(x, 5 + d)->i, ek[ki].grid[d], ek[ki].block[d]);
        CHECK(pjson_at(x, 8)->i == ek[ki].smem, "entry %zu: smem %lld", i, (long long)pjson_at(x, 8)->i);
        double us = a - b - cost, want = (double)ek[ki].ns / 1e3;
        if (fabs(us - want) > worst) worst = fabs(us - want);
        if (exact)
            CHECK(fabs(us - want) <= 0.2, "entry %zu (%s): a %.3f - b %.3f - cost %.3f = %.3f us, modelled %.3f", i, nm, a,
                  b, cost, us, want);
    }
    CHECK(j == nk, "%d kernel entries, expected %d", j, nk);
    return worst;
}

static const int ek_cycle[EAGER_SEG_LAUNCHES] = { 0, 1, 2, 0, 1, 2, 0, 1, 2, 0 };

/* Reads the fake's counts of scenario sub: holds, event records on the program's stream,
 * operations still held there, calls a capturing stream refused. */
static int eager_fake_counts(const char *sub, long c[4]) {
    int n = (int)read_long(sub, "fake_counts", c, 4);
    CHECK(n == 4, "%s: fake_counts has %d values", sub, n);
    return n == 4 ? 0 : -1;
}

/* (a) A host-bound instance (40 us of host work after each launch, kernels of 3, 7 and 20 us):
 * each kernel's a - b - cost_us is its modelled GPU time within 0.2 us, its name, grid, block
 * and shared memory as launched, and the GPU ran the instance back to back (one event's cost
 * between one kernel's after event and the next's before event, 45 us apart on the host).
 * The same program with the fake's hold switched off (cuStreamWaitValue32 accepted, nothing
 * held: scenario eager_nohold) misses by the launch's host time (5 us in the fake), i.e. this
 * test fails without the hold: that run's error is checked to be over 1 us. */
static void plite_eager_times_each_kernel_not_its_launch_gap(void) {
    ptrace_file f;
    if (eager_load("eager", &f)) return;
    const ptrace_event *ev[8];
    int n = eager_events(&f, ev, 8);
    CHECK(n == 1, "%d eager_probe events, expected 1 (N=1, one shape)", n);
    if (n >= 1) {
        const ptrace_event *e = ev[0];
        const char *phase = pjson_get_str(e->args, "phase", ""), *nvtx = pjson_get_str(e->args, "nvtx", "");
        CHECK(!strcmp(phase, "decode bs=1 ctx=100") && !strcmp(nvtx, "decode bs=1 ctx=100"), "phase '%s' nvtx '%s'", phase, nvtx);
        CHECK(pjson_get_int(e->args, "stream", -1) == 13, "stream %lld (the program's s1: 13)",
              (long long)pjson_get_int(e->args, "stream", -1));
        CHECK(pjson_get_int(e->args, "watchdog", -1) == 0 && pjson_get_int(e->args, "other_streams", -1) == 0 &&
              pjson_get_int(e->args, "lost", -1) == 0, "watchdog %lld other_streams %lld lost %lld",
              (long long)pjson_get_int(e->args, "watchdog", -1), (long long)pjson_get_int(e->args, "other_streams", -1),
              (long long)pjson_get_int(e->args, "lost", -1));
        double cost = pjson_get_num(e->args, "cost_us", -1);
        CHECK(fabs(cost - EAGER_EVENT_NS / 1e3) < 0.01, "cost_us %.3f, the fake's event %.3f", cost, EAGER_EVENT_NS / 1e3);
        int types[4];
        char order[64] = "";
        double worst = eager_walk(e, ek_cycle, 3, types, order, 1);
        CHECK(worst >= 0 && !strcmp(order, "KKKE"), "entries %s, expected KKKE", order);
        /* back to back from the chain of 8 events: the first b 8 events after the first event,
         * each b one event after the previous a; the span to the end event: 8 + 3 x 2 events and
         * the kernels' 30 us (44 us) */
        const pjson *k = pjson_get(e->args, "k");
        for (size_t i = 0; k && i < k->len && i < 3; i++) {
            const pjson *x = pjson_at(k, i);
            double b = pjson_at(x, 11)->num, prev_a = i ? pjson_at(pjson_at(k, i - 1), 12)->num : 7.0;
            double host_gap = i ? pjson_at(x, 9)->num - pjson_at(pjson_at(k, i - 1), 9)->num : 0;
            CHECK(fabs(b - prev_a - 1.0) < 0.01, "entry %zu: b %.3f, the previous a %.3f: not back to back", i, b, prev_a);
            CHECK(!i || host_gap >= EAGER_GAP_US + 5, "entry %zu: launched %.3f us after the previous", i, host_gap);
            CHECK(pjson_at(x, 10)->num - pjson_at(x, 9)->num >= 4.9, "entry %zu: call %.3f..%.3f us (the fake's launch: 5 us)",
                  i, pjson_at(x, 9)->num, pjson_at(x, 10)->num);
        }
        CHECK(e->dur_ns == 44000, "span %lld ns, expected 44000", (long long)e->dur_ns);
    }
    const ptrace_lite *l = &f.info.end.lite;
    CHECK(l->eager_instances == 1 && l->eager_probed == 1 && l->eager_written == 1 && l->eager_lost == 0 &&
          l->eager_skipped == 0 && l->eager_watchdog == 0 && l->eager_keys == 1,
          "end: instances %d probed %lld written %lld lost %lld skipped %lld (%s) watchdog %lld keys %lld", l->eager_instances,
          (long long)l->eager_probed, (long long)l->eager_written, (long long)l->eager_lost, (long long)l->eager_skipped,
          l->eager_skip_why, (long long)l->eager_watchdog, (long long)l->eager_keys);
    ptrace_file_free(&f);
    if (eager_load("eager_nohold", &f)) return;
    n = eager_events(&f, ev, 8);
    CHECK(n == 1, "eager_nohold: %d eager_probe events", n);
    if (n >= 1) {
        int types[4];
        double worst = eager_walk(ev[0], ek_cycle, 3, types, NULL, 0);
        CHECK(worst > 1.0, "without the hold the kernels still read within %.3f us: the check above would not see it", worst);
    }
    ptrace_file_free(&f);
}

/* (b) The program's kernels run once each, in the order launched, probed or not (the fake
 * logs each named kernel when it runs; a held one when its stream is released): every
 * single-stream scenario the other eager tests ran. */
static void plite_eager_runs_each_kernel_once_in_order(void) {
    static const int after_watchdog[2] = { 2, 0 };
    static const struct { const char *sub; int n; const int *k; } sc[] = {
        { "eager", 6, NULL }, { "eager_off", 6, NULL }, { "eager_nohold", 6, NULL }, { "eager_shapes", 24, NULL },
        { "eager_block", 3, NULL }, { "eager_seg", EAGER_SEG_LAUNCHES, NULL }, { "eager_watchdog", 2, after_watchdog },
        { "eager_late", 2, after_watchdog },
    };
    for (size_t i = 0; i < sizeof sc / sizeof sc[0]; i++) {
        char want[2048] = "", got[2048] = "", p[512];
        size_t w = 0;
        for (int j = 0; j < sc[i].n; j++)
            w += (size_t)snprintf(want + w, sizeof want - w, "%s%s", j ? " " : "", ek[sc[i].k ? sc[i].k[j] : j % 3].name);
        snprintf(p, sizeof p, "%s/%s/run_order", dir, sc[i].sub);
        FILE *fp = fopen(p, "r");
        size_t r = fp ? fread(got, 1, sizeof got - 1, fp) : 0;
        got[r] = 0;
        if (fp) fclose(fp);
        CHECK(!strcmp(got, want), "%s: kernels ran\n    '%s', launched\n    '%s'", sc[i].sub, got, want);
        long c[4];
        if (!eager_fake_counts(sc[i].sub, c)) CHECK(c[2] == 0, "%s: %ld operations still held at the end", sc[i].sub, c[2]);
    }
}

/* (c) N=2 instances of each phase shape: "decode bs=1 ctx=.." is one shape whatever its ctx,
 * "decode bs=2 ctx=.." another; four instances of each, two of each probed, every probed
 * kernel timed right; the end record's counts agree. */
static void plite_eager_probes_n_instances_per_shape(void) {
    ptrace_file f;
    if (eager_load("eager_shapes", &f)) return;
    const ptrace_event *ev[16];
    int n = eager_events(&f, ev, 16), bs[3] = { 0, 0, 0 };
    for (int i = 0; i < n && i < 16; i++) {
        const char *phase = pjson_get_str(ev[i]->args, "phase", "");
        int b = 0, ctx = 0;
        CHECK(sscanf(phase, "decode bs=%d ctx=%d", &b, &ctx) == 2 && b >= 1 && b <= 2 && ctx % 10 == b, "phase '%s'", phase);
        if (b >= 1 && b <= 2) bs[b]++;
        int types[4];
        char order[64] = "";
        eager_walk(ev[i], ek_cycle, 3, types, order, 1);
        CHECK(!strcmp(order, "KKKE"), "%s: entries %s", phase, order);
        for (int j = 0; j < i; j++) CHECK(strcmp(phase, pjson_get_str(ev[j]->args, "phase", "")), "%s probed twice", phase);
    }
    CHECK(n == 4 && bs[1] == 2 && bs[2] == 2, "%d eager_probe events: %d of bs=1, %d of bs=2; expected 2 and 2", n, bs[1], bs[2]);
    const ptrace_lite *l = &f.info.end.lite;
    CHECK(l->eager_instances == 2 && l->eager_probed == 4 && l->eager_written == 4 && l->eager_lost == 0 && l->eager_keys == 2,
          "end: instances %d probed %lld written %lld lost %lld keys %lld", l->eager_instances, (long long)l->eager_probed,
          (long long)l->eager_written, (long long)l->eager_lost, (long long)l->eager_keys);
    ptrace_file_free(&f);
}

/* The one eager_probe event of f, its entries walked (eager_walk: kernels against ek[kidx[j]],
 * exact times) and their letters checked against want; NULL when there is not exactly one. */
static const ptrace_event *eager_one(const ptrace_file *f, const int *kidx, int nk, const char *want) {
    const ptrace_event *ev[8];
    int n = eager_events(f, ev, 8);
    CHECK(n == 1, "%d eager_probe events", n);
    if (n != 1) return NULL;
    int types[4];
    char order[64] = "";
    eager_walk(ev[0], kidx, nk, types, order, 1);
    CHECK(!strcmp(order, want), "entries %s, expected %s", order, want);
    return ev[0];
}

/* (d) A cudaStreamSynchronize and a synchronous device-to-host cudaMemcpy inside a probed
 * instance: the hold is released before each (else the fake's sync waits for ever and exits
 * 70), each leaves a release entry, and the kernels after them are still timed right. An
 * async device-to-device copy before them is an entry of its own (type 1: bytes, kind 3). */
static void plite_eager_releases_before_blocking_calls(void) {
    ptrace_file f;
    if (eager_load("eager_block", &f)) return;
    const ptrace_event *e = eager_one(&f, ek_cycle, 3, "KCRKRKRE");
    if (e) {
        const pjson *k = pjson_get(e->args, "k"), *c = k && k->len > 1 ? pjson_at(k, 1) : NULL;
        CHECK(c && c->len == 13 && pjson_at(c, 2)->i == 64 && pjson_at(c, 3)->i == 3, "copy entry: bytes %lld kind %lld",
              c && c->len == 13 ? (long long)pjson_at(c, 2)->i : -1LL, c && c->len == 13 ? (long long)pjson_at(c, 3)->i : -1LL);
        CHECK(pjson_get_int(e->args, "watchdog", -1) == 0, "watchdog %lld", (long long)pjson_get_int(e->args, "watchdog", -1));
    }
    ptrace_file_free(&f);
}

/* (e) The program waits inside the instance where the interposer cannot see it (spinning on
 * cudaEventQuery of its own event, recorded after a held kernel): the watchdog (a thread of
 * its own) releases the hold after 50 ms, the event says watchdog 1, the held kernel is timed right,
 * the launch after the release is not probed (the instance ended), the program completes. */
static void plite_eager_watchdog_releases_an_unseen_wait(void) {
    ptrace_file f;
    if (eager_load("eager_watchdog", &f)) return;
    long waited[1] = { -1 };
    CHECK(read_long("eager_watchdog", "waited_ns", waited, 1) == 1 && waited[0] >= 45000000L && waited[0] < 3000000000L,
          "the program waited %.1f ms for its event (the watchdog: 50 ms)", waited[0] / 1e6);
    const ptrace_event *e = eager_one(&f, (const int[]){ 2 }, 1, "KE");
    if (e) CHECK(pjson_get_int(e->args, "watchdog", -1) == 1, "watchdog %lld", (long long)pjson_get_int(e->args, "watchdog", -1));
    const ptrace_lite *l = &f.info.end.lite;
    CHECK(l->eager_watchdog == 1 && l->eager_written == 1, "end: watchdog %lld written %lld", (long long)l->eager_watchdog,
          (long long)l->eager_written);
    ptrace_file_free(&f);
}

/* The capture ends (SPECPROF_DURATION_S 0.2 s) before the program's first phase instance,
 * which waits where the interposer cannot see (as in (e)): nothing is held after the end, since
 * no writer is left to release a hold. Until 2026-12-07 the instance was probed and held with
 * no watchdog running: the program waited for ever (here: 5 s, the child's own limit). */
static void plite_eager_holds_nothing_after_the_capture_ended(void) {
    ptrace_file f;
    if (eager_load("eager_late", &f)) return;
    long waited[1] = { -1 }, c[4];
    CHECK(read_long("eager_late", "waited_ns", waited, 1) == 1 && waited[0] >= 0 && waited[0] < 1000000000L,
          "the program waited %.1f ms for a 20 us kernel after the capture ended", waited[0] / 1e6);
    if (!eager_fake_counts("eager_late", c)) CHECK(c[0] == 0, "%ld holds after the capture ended", c[0]);
    const ptrace_event *ev[8];
    int n = eager_events(&f, ev, 8);
    CHECK(n == 0 && f.info.end.lite.eager_probed == 0, "%d eager_probe events, %lld probed", n,
          (long long)f.info.end.lite.eager_probed);
    ptrace_file_free(&f);
}

/* (f) A launch on a second stream inside the instance is counted (other_streams) and not
 * timed; an instance on a capturing stream is not probed (skip_why says so; nothing but
 * cudaStreamIsCapturing is asked of it) and leaves the shape's probe to the next instance. */
static void plite_eager_other_streams_and_captures(void) {
    ptrace_file f;
    if (eager_load("eager_streams", &f)) return;
    const ptrace_event *ev[8];
    int n = eager_events(&f, ev, 8);
    CHECK(n == 2, "%d eager_probe events, expected 2", n);
    for (int i = 0; i < n && i < 2; i++) {
        const char *phase = pjson_get_str(ev[i]->args, "phase", "");
        int types[4];
        char order[64] = "";
        int decode = !strcmp(phase, "decode bs=1 ctx=7");
        CHECK(decode || !strcmp(phase, "verify bs=1"), "phase '%s'", phase);
        eager_walk(ev[i], decode ? (const int[]){ 0, 2 } : ek_cycle, decode ? 2 : 3, types, order, 1);
        CHECK(!strcmp(order, decode ? "KKE" : "KKKE"), "%s: entries %s", phase, order);
        CHECK(pjson_get_int(ev[i]->args, "other_streams", -1) == decode, "%s: other_streams %lld", phase,
              (long long)pjson_get_int(ev[i]->args, "other_streams", -1));
    }
    const ptrace_lite *l = &f.info.end.lite;
    CHECK(l->eager_probed == 2 && l->eager_written == 2 && l->eager_skipped == 1 && strstr(l->eager_skip_why, "capturing"),
          "end: probed %lld written %lld skipped %lld skip_why '%s'", (long long)l->eager_probed, (long long)l->eager_written,
          (long long)l->eager_skipped, l->eager_skip_why);
    long c[4];
    if (!eager_fake_counts("eager_streams", c)) CHECK(c[3] == 0, "calls refused by the capturing stream: %ld", c[3]);
    ptrace_file_free(&f);
}

/* (g) SPECPROF_PROBE_EAGER_SEGMENT=4 and 10 launches: a release after every 4 (two), and
 * every kernel still timed right across them. */
static void plite_eager_segments_release_every_n_launches(void) {
    ptrace_file f;
    if (eager_load("eager_seg", &f)) return;
    eager_one(&f, ek_cycle, EAGER_SEG_LAUNCHES, "KKKKRKKKKRKKE");
    long c[4];
    if (!eager_fake_counts("eager_seg", c)) CHECK(c[0] == 3, "%ld holds, expected 3 (one a segment)", c[0]);
    ptrace_file_free(&f);
}

/* One slot: an instance of a shape still short of N that starts while another thread's is
 * held is not probed, and the end record counts it (busy): "the first N" are the first N that
 * found the slot free, which the trace now says. */
static void plite_eager_counts_instances_passed_over(void) {
    ptrace_file f;
    if (eager_load("eager_busy", &f)) return;
    const ptrace_lite *l = &f.info.end.lite;
    CHECK(l->eager_probed == 1 && l->eager_busy == 1 && l->eager_keys == 2, "probed %lld busy %lld keys %lld",
          (long long)l->eager_probed, (long long)l->eager_busy, (long long)l->eager_keys);
    char cmd[1200], out[8192], path[800];
    if (!trace_path("eager_busy", path, sizeof path)) {
        snprintf(cmd, sizeof cmd, "%s check %s 2>&1", SPECPROF_BIN, path);
        run_cmd(cmd, out, sizeof out);
        CHECK(strstr(out, "1 passed over while another was held"), "check:\n%s", out);
    }
    ptrace_file_free(&f);
}

/* (h) Without SPECPROF_PROBE_EAGER nothing changes: no eager_probe event or end object, no
 * hold, no event recorded on the program's stream; with it, exactly the probed instance's
 * events: the chain of 8, two a kernel, the end. */
static void plite_eager_off_changes_nothing(void) {
    ptrace_file f;
    if (eager_load("eager_off", &f)) return;
    const ptrace_event *ev[8];
    int n = eager_events(&f, ev, 8);
    CHECK(n == 0 && f.info.end.lite.eager_instances == 0, "%d eager_probe events, end instances %d", n,
          f.info.end.lite.eager_instances);
    long c[4];
    if (!eager_fake_counts("eager_off", c)) CHECK(c[0] == 0 && c[1] == 0, "off: %ld holds, %ld event records on the stream", c[0], c[1]);
    if (!eager_fake_counts("eager", c))
        CHECK(c[0] == 1 && c[1] == 8 + 2 * 3 + 1, "on: %ld holds, %ld event records on the stream, expected 1 and 15", c[0], c[1]);
    ptrace_file_free(&f);
}

int main(int argc, char **argv) {
    if (argc >= 3 && !strcmp(argv[1], "child")) return child(argv[2]);
    snprintf(dir, sizeof dir, "/tmp/test_plite.%d", (int)getpid());
    RUN(plite_child_runs_and_writes_a_lite_trace);
    RUN(plite_makes_no_cupti_call);
    RUN(plite_leaves_captures_alone);
    RUN(plite_graph_spans_match_the_gpu_within_err);
    RUN(plite_ranges_count_their_launches);
    RUN(plite_records_copies_syncs_and_the_capturing_launch);
    RUN(plite_trace_passes_specprof_check);
    RUN(plite_says_when_the_runtime_is_static);
    RUN(plite_capture_range_records_only_inside);
    RUN(plite_launcher_says_a_repeated_note_once);
    RUN(plite_launcher_lists_only_this_runs_files);
    RUN(plite_default_is_lite_with_both_probes);
    RUN(plite_probe_times_each_node_and_runs_the_same_kernels);
    RUN(plite_probe_survives_a_destroyed_executable);
    RUN(plite_eager_times_each_kernel_not_its_launch_gap);
    RUN(plite_eager_probes_n_instances_per_shape);
    RUN(plite_eager_releases_before_blocking_calls);
    RUN(plite_eager_watchdog_releases_an_unseen_wait);
    RUN(plite_eager_holds_nothing_after_the_capture_ended);
    RUN(plite_eager_other_streams_and_captures);
    RUN(plite_eager_segments_release_every_n_launches);
    RUN(plite_eager_counts_instances_passed_over);
    RUN(plite_eager_off_changes_nothing);
    RUN(plite_eager_runs_each_kernel_once_in_order);   /* after the scenarios above ran */
    if (full_ok) ptrace_file_free(&full);
    if (!check_tests_failed && !getenv("TEST_PLITE_KEEP")) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        if (system(cmd)) {}
    }
    return check_done();
}
#else
int main(void) {
    (void)check_cur_failed;
    printf("skip test_plite: needs libspecprof.so (built where nvcc is found; PLITE_LIB set by profiler/profiler.mk) "
           "and no ASan\n");
    return check_done();
}
#endif
