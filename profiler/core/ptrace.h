/* ptrace.h: the events of a specprof trace (traces/FORMAT.md), as C structs shared by
 * the writer (libspecprof.so, fed by CUPTI) and the reader (specprof check/merge, the
 * simulator's fit code). Times are CUPTI nanoseconds; the file stores microseconds
 * relative to the header's t0_ns with 3 decimals, so nanoseconds survive a round trip. */
#ifndef PTRACE_H
#define PTRACE_H
#include <stdint.h>

#define PTRACE_FORMAT_VERSION 1
#define PTRACE_TOOL_VERSION "specprof 0.1"
#define PTRACE_MAX_PEERS 16
#define PTRACE_MAX_PHASES 16

/* One NCCL call as the interposer saw it (op and dtype by NCCL's names without "nccl"). */
typedef struct {
    char op[16];          /* allreduce, reducescatter, allgather, broadcast, reduce, send, recv, group */
    char redop[8];        /* sum, prod, max, min, avg, custom; "" for non-reductions */
    char dtype[12];       /* int8, uint8, int32, uint32, int64, uint64, float16, float32, float64, bfloat16, fp8e4m3, fp8e5m2 */
    uint64_t count;       /* element count as passed (per rank for reducescatter/allgather) */
    uint64_t bytes;       /* count * sizeof(dtype) */
    int32_t comm_size, rank;
    int32_t root_or_peer; /* root (broadcast/reduce) or peer (send/recv), -1 otherwise */
    int32_t group_ops;    /* calls merged into this one by ncclGroupStart/End (1 when alone) */
    uint32_t seq;         /* call number in this process, from 1 */
    int captured;         /* issued while the stream was capturing a CUDA graph */
} ptrace_nccl;

typedef struct {
    int peer_dev, access, native_atomics, perf_rank;
} ptrace_peer;

/* What CUPTI adds to a launch on this machine, measured by specprof at the start of the
 * capture (profiler/inject/pcalib.c): median host time of an empty kernel launch and of a
 * 1-node and a graph_nodes-node CUDA graph launch with nothing recorded (off), with
 * graph-level records (between, when that mode is on) and inside a window (on). */
typedef struct {
    int ok;                      /* 0: not measured, why says why */
    char why[96];
    int launches, graph_nodes, has_between;
    double launch_off_us, launch_on_us;
    double graph1_off_us, graph1_on_us, graph1_between_us;
    double graphn_off_us, graphn_on_us, graphn_between_us;
    double kernel_launch_us;     /* on - off, per eager launch */
    double graph_launch_us;      /* per graph launch, beside the per-node part */
    double graph_node_us;        /* per node of a launched graph */
    double graph_between_us;     /* per graph launch with graph-level records only */
    double switch_on_us, switch_off_us;   /* opening and closing a window */
    /* the off configuration again after the window: whether what a window switched on
     * stays in a launch (docs/profiler.md) */
    double launch_after_us, graphn_after_us;
    /* the empty kernel's launch timed the same way by the specprof command in a process
     * without CUPTI (0: not measured): launch_on_us - launch_clean_us is what CUPTI costs a
     * launch, its attachment included, which the off arm inside the process also pays */
    double launch_clean_us;
    /* the same three with sweep_gap_us of host work between the timed launches (0: not
     * measured; profiler/inject/pcalib_ptx.h): a launch path the host's other work has evicted
     * from the caches, as in an interpreted program */
    double launch_off_swept_us, launch_on_swept_us, launch_clean_swept_us, sweep_gap_us;
} ptrace_calib;

typedef struct {
    int format_version;
    char tool_version[32];
    char host[64];
    int64_t pid_os;
    int rank, world_size;
    int64_t t0_ns;            /* CUPTI timestamp of the capture start */
    int64_t t0_unix_ns;       /* CLOCK_REALTIME at the same moment */
    int cupti_version, cuda_driver_version, cuda_runtime_version, nccl_version;
    struct {
        char name[96];
        int index, sms, clock_khz, mem_clock_khz, mem_bus_bits, cc_major, cc_minor;
        int64_t mem_bytes, l2_bytes;
        char pci_bus_id[32];
    } device;
    int n_peers;
    ptrace_peer peers[PTRACE_MAX_PEERS];
    int n_phases;
    char phases[PTRACE_MAX_PHASES][24];
    double delay_s, duration_s;  /* capture window as asked (<0: none) */
    int flush_ms, buffer_mb;
    char cmd[256];               /* the program's command line, truncated */
    /* what was recorded when (traces/FORMAT.md, "Windows"); "" / 0 in older traces */
    char mode[16];               /* "windows" or "always" ("" in traces before windows: always) */
    int window_ms, period_ms, shape_replays, window_max_ms;
    char between[8];             /* between windows: "none" or "graph" (graph-level records) */
    char records[16];            /* API records: "fit" (launches, copies, syncs) or "all"; "_api": on between windows too; "_driver": the driver API's only (SPECPROF_API_DOMAIN=driver) */
    int compressed;              /* 1: the file is gzip */
    char clock[48];              /* what t0_ns and every ts count: "CLOCK_REALTIME ns" ("" in older traces) */
    char interposed[512];        /* lite mode: the runtime entry points interposed ("" otherwise) */
    char capture_range[16];      /* lite mode: "profiler-api" (cudaProfilerStart..Stop only), else "" */
    ptrace_calib calib;
} ptrace_header;

typedef struct {
    int64_t start_ns, end_ns;
    const char *name;          /* demangled where possible */
    uint32_t corr, dev, stream;
    int32_t grid[3], block[3];
    int32_t smem_bytes;        /* static + dynamic shared memory per block */
    int32_t regs;              /* registers per thread */
    uint32_t graph_id;
    uint64_t graph_node_id;    /* 0 outside graphs */
    const char *nvtx, *phase;  /* "" when none */
    int has_nccl;
    ptrace_nccl nccl;
} ptrace_kernel;

typedef enum { PTRACE_MEMCPY, PTRACE_MEMSET } ptrace_mem_kind;

typedef struct {
    ptrace_mem_kind kind;
    int64_t start_ns, end_ns;
    const char *copy_kind;     /* HtoD, DtoH, DtoD, HtoH, PtoP, ... ; "" for memset */
    uint64_t bytes;
    uint32_t corr, dev, stream;
    uint32_t graph_id;
    uint64_t graph_node_id;
    const char *nvtx, *phase;
    int has_nccl;              /* NCCL on one rank copies instead of launching a kernel */
    ptrace_nccl nccl;
} ptrace_mem;

typedef struct {
    int64_t start_ns, end_ns;
    const char *name;          /* cudaLaunchKernel, cudaGraphLaunch, cuLaunchKernelEx, ... */
    uint32_t corr, cbid;
    int domain_driver;         /* 1: driver API, 0: runtime API */
    int64_t thread;
    uint32_t graph_exec_id;    /* graph launches: the launched executable graph, else 0 */
    /* lite mode's own api events (has_lite): the stream (cudaStreamGetId), and for copies the
     * bytes, kind and whether the host blocked (-1: not known); for graph launches why they
     * were not timed ("" when timed: capturing, failed, no_event) */
    int has_lite;
    uint64_t stream;
    int64_t bytes;
    const char *copy_kind;
    int blocking;
    const char *untimed;
} ptrace_api;

typedef struct {
    int64_t start_ns, end_ns;
    const char *name, *domain; /* domain "" for the default domain */
    int64_t thread;
    int push_pop;              /* 1: push/pop range; 0: start/end range */
    /* lite mode: kernel and graph launches made on the range's thread while it was open
     * (through the dynamic runtime), when has_launches */
    int has_launches;
    int64_t launches, graph_launches;
} ptrace_range;

typedef struct {
    int64_t start_ns, end_ns;
    int64_t thread;
    uint64_t stream;           /* the cudaStream_t handle value */
    ptrace_nccl call;
} ptrace_ncclcall;

typedef struct {
    int64_t ts_ns;
    uint32_t graph_id, graph_exec_id;
    int64_t nodes;             /* nodes in the instantiated graph, -1 unknown */
    int64_t thread;
} ptrace_graphexec;

/* Lite mode (traces/FORMAT.md "Lite mode"): what the interposer saw and what it costs, in
 * the end record. Counts are over the whole capture. */
typedef struct {
    int on;                          /* the trace is a lite one (mode lite) */
    int64_t graph_launches;          /* cudaGraphLaunch calls seen */
    int64_t graph_timed;             /* with a graph_trace event (event pair resolved) */
    int64_t graph_capturing;         /* not timed: the stream was capturing */
    int64_t graph_failed;            /* not timed: the launch returned an error */
    int64_t graph_no_event;          /* not timed: no event free in the pool, or another device */
    int64_t graph_pending;           /* events still not complete at the end (not written) */
    int64_t graph_lost;              /* event query/elapsed failed, or too many in flight */
    int64_t blocking_calls;          /* syncs, and copies that block the host */
    int64_t memcpy_calls, sync_calls;
    int64_t kernel_launches;         /* counted (cudaLaunchKernel*, not recorded one by one) */
    int64_t dropped;                 /* records lost: the queue was full */
    int64_t anchors;                 /* GPU-to-host clock anchors taken */
    double anchor_err_max_us;        /* the largest anchor half-width used */
    double err_max_us;               /* the largest err_us written on a graph_trace event */
    double drift_max_ppm;            /* GPU vs host clock rate between anchors, largest seen */
    int static_runtime;              /* NVTX ranges but no runtime call: cudart linked statically? */
    char interposed[512];            /* entry points interposed, comma-separated */
    /* --capture-range profiler-api: recorded only between cudaProfilerStart and Stop
     * ("" otherwise); the ranges opened and their summed length */
    char capture_range[16];
    int64_t range_opens, range_ns;
    /* calibration (at the end, on specprof's writer thread, the program's first device) */
    int calib_ok;
    char calib_why[96];
    int calib_launches;              /* timed calls per configuration (median taken) */
    double graph_launch_real_us;     /* an empty 1-node graph launch, straight to the runtime */
    double graph_launch_lite_us;     /* the same through the interposer (event pair, queue) */
    double graph_timing_us;          /* lite - real: what the fit takes out of each graph launch */
    double call_real_us, call_lite_us;   /* cudaStreamSynchronize of an idle stream, both ways */
    double call_us;                  /* lite - real: per interposed blocking call or copy */
    /* the node probe (--probe-nodes N, traces/FORMAT.md "Node probe"; probe_replays 0: off) */
    int probe_replays;               /* probed replays per executable */
    int64_t probe_execs, probe_skipped, probe_launched, probe_written, probe_lost, probe_stale, probe_events;
    char probe_skip_why[96];         /* the first instantiation not instrumented, why */
    double probe_instrument_ms;      /* the program's threads' time instrumenting, in all */
    double probe_event_us;           /* GPU cost of an event node per work node (calibration; -1 unknown) */
    char probe_calib_why[96];
    /* the eager probe (--probe-eager N, traces/FORMAT.md "Eager probe"; eager_instances 0: off) */
    int eager_instances;             /* probed instances per phase shape */
    int64_t eager_probed, eager_written, eager_lost, eager_skipped, eager_watchdog, eager_keys;
    int64_t eager_busy;              /* instances passed over while another was held */
    char eager_skip_why[96];
} ptrace_lite;

typedef struct {
    int64_t dropped_records;   /* CUPTI records lost (cuptiActivityGetNumDroppedRecords) */
    int64_t dropped_host_events;
    int64_t records;           /* events written, header and end excluded */
    char reason[48];           /* exit, signal SIGTERM, duration, signal SIGUSR2, ... */
    int64_t end_ns;            /* CUPTI timestamp when the capture ended */
    int64_t nccl_calls, nccl_graph_nodes, nccl_matched;
    int64_t nvtx_ranges;
    int64_t graph_nodes_created, graph_nodes_cloned;   /* all graph nodes CUPTI reported */
    int64_t windows;           /* node-level windows written */
    int64_t window_ns;         /* their summed length */
    int64_t graph_trace_records;   /* graph-level launch records written */
    /* --between detach: CUPTI attached again for a window (attaches, their summed time on
     * specprof's thread) and detached after one (on the program's thread, at an API exit) */
    int64_t attaches, attach_ns, detaches, detach_ns;
    int64_t bytes_in, bytes;   /* trace bytes before the end event: uncompressed, on disk */
    int has_calib;             /* the calibration ran at the end (--mode always: a calibration at
                                  the start would switch recording off under the program) */
    ptrace_calib calib;        /* valid when has_calib */
    ptrace_lite lite;          /* lite mode's counts and calibration (lite.on) */
} ptrace_end;

/* A node-level window: from start to end every kernel, copy, set and recorded API call
 * is in the trace (traces/FORMAT.md). reason: start, time, shape, calibration, always. */
typedef struct {
    int64_t start_ns, end_ns;
    char reason[16];
    double attach_us;          /* CUPTI attached again to open it (--between detach); 0: it was attached */
} ptrace_window;

/* One graph launch recorded at graph level (CUPTI_ACTIVITY_KIND_GRAPH_TRACE): the GPU
 * span of the whole graph, outside node-level windows. */
typedef struct {
    int64_t start_ns, end_ns;
    uint32_t corr, dev, stream, graph_id, graph_exec_id;
    const char *nvtx, *phase;  /* of the launch, as for kernels */
    double err_us;             /* lite mode: bound on the start's error on the host clock; 0 otherwise */
} ptrace_graphlaunch;

/* Lite mode's eager probe (traces/FORMAT.md "Eager probe"): one entry of a probed instance. */
typedef struct {
    int type;                  /* 0 kernel, 1 copy, 2 release, 3 end */
    int name;                  /* kernels: index into the instance's names, -1 not named */
    unsigned grid[3], block[3];
    uint64_t smem_or_bytes;    /* kernels: dynamic shared memory; copies: bytes */
    int copy_kind;             /* copies: cudaMemcpyKind */
    double t0_us, t1_us;       /* the call on the host clock, from host0_ns */
    double b_us, a_us;         /* its before and after events on the GPU, from the first event */
} ptrace_eagerentry;

/* A probed eager phase instance. */
typedef struct {
    int64_t start_ns, end_ns;  /* the events' GPU span on the host clock (through an anchor) */
    double err_us;             /* bound on start_ns's error, as a graph launch's */
    uint32_t dev, stream;
    int64_t thread, host0_ns;
    const char *nvtx, *phase;
    double cost_us;            /* one event's GPU cost (the start's chain) */
    int other_streams, lost, watchdog;
    int n;
    const ptrace_eagerentry *e;
    int nnames;
    const char *const *names;
} ptrace_eagerprobe;

/* Fixed context for formatting: which pid the events go to and the time origin. */
typedef struct { int pid; int64_t t0_ns; } ptrace_ctx;

#endif
