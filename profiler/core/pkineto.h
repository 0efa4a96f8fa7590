/* pkineto.h: reads a torch.profiler / Kineto Chrome-trace JSON (pytorch/kineto
 * libkineto/src/output_json.cpp) event by event from a byte source, in bounded memory, and
 * hands out the same typed records as a specprof trace (ptrace.h): kernels, memcpy/memset,
 * the host's launch API calls, user_annotation ranges (host) and gpu_user_annotation spans
 * (GPU). Why: SGLang's /start_profile and `python -m sglang.profiler` write these, one per
 * rank; the fit reads both formats through one record model. docs/importers.md gives the
 * source of every field. Workload: 10^5..10^7 events, up to gigabytes; libc only. */
#ifndef PKINETO_H
#define PKINETO_H
#include <stddef.h>
#include "psrc.h"
#include "ptrace.h"

/* Record callbacks; each record (and its strings) is valid during the call only. Return
 * non-zero to stop. A NULL callback skips that kind. */
typedef struct {
    int (*kernel)(void *user, const ptrace_kernel *k);
    int (*mem)(void *user, const ptrace_mem *m);
    int (*api)(void *user, const ptrace_api *a);      /* launch/memcpy/memset calls only */
    int (*range)(void *user, const ptrace_range *r);  /* user_annotation: domain "", thread */
    int (*gpu_range)(void *user, const ptrace_range *r); /* gpu_user_annotation: domain
                                                         "gpu", thread = the stream */
    /* Every host-side event Kineto recorded (cpu_op, every cuda_runtime and cuda_driver call,
     * user_annotation): its thread and times, for taking the profiler's own host cost out
     * (timport.c). Not python_function (with_stack=True): the cost per event was measured
     * without them and does not apply (the Python tracer logs a two-word record per call,
     * pytorch/pytorch#67407); they are counted only. NULL: not reported (and cpu_op events
     * stay unparsed). */
    int (*host)(void *user, int64_t thread, int64_t start_ns, int64_t end_ns);
    void *user;
} pkineto_cb;

#define PKINETO_MAX_DEVICES 16
#define PKINETO_MAX_RANKS 64
#define PKINETO_MAX_KERNEL_NAME 8192   /* an attributed name longer than this keeps its suffix */

/* What a scan learnt about the file. */
typedef struct {
    ptrace_header hdr;        /* tool_version "kineto", host "", t0_ns = baseTimeNanoseconds
                                 (0 when absent: times are Kineto's own), rank/world_size
                                 from distributedInfo, device from deviceProperties (the
                                 device most kernels ran on), pid_os from the runtime calls */
    int    has_base_time;     /* baseTimeNanoseconds came before the first event */
    int    base_time_late;    /* it came after the events (Kineto before pytorch/kineto#1054,
                                 PyTorch 2.4..2.6): times stay Kineto's relative ones, t0_ns 0 */
    int    schema_version;    /* -1: absent */
    int    complete;          /* the JSON document ended with its closing brace */
    unsigned long long cut_bytes; /* a cut document: bytes of its last event, cut short and
                                     dropped (pjstream_info) */
    int    window_end;        /* the "Record Window End" marker was seen */
    int    has_dist_info;
    size_t events;            /* traceEvents elements */
    size_t kernels, mems, apis, apis_other, ranges, gpu_ranges;
    size_t cpu_ops, python_functions, flows, metadata, other;
    size_t nccl_kernels;      /* kernels with Collective name / In msg nelems / Group size */
    size_t graph_kernels;     /* kernels with a non-zero graph id */
    size_t attributed_kernels;/* names with SGLang's " [cpu_op, ...]" suffix, taken off */
    size_t bad_events;        /* elements that are not JSON objects, or X events without a
                                 time (skipped; the first one named in first_bad) */
    size_t nonfinite_events;  /* events read with inf / NaN values taken as null */
    char   first_bad[256];
    /* SGLang's --merge-profiles writes all ranks into merged-{id}.trace.json.gz with every
     * pid turned into a string "[TP00-DP00] 4242" (python/sglang/srt/utils/profile_merger.py,
     * _process_events): the first rank met (its files are sorted DP, EP, PP, TP: rank 0, whose
     * distributedInfo the file keeps) is read, the other ranks' events are counted only */
    char   merged_rank[48];   /* "TP00": the rank read; "" for a one-rank trace */
    int    merged_ranks;      /* ranks met (up to PKINETO_MAX_RANKS counted) */
    size_t merged_skipped;    /* events of the other ranks */
    int    ndev;
    struct { int id, sms, cc_major, cc_minor, regs_per_sm, smem_per_sm, max_threads_per_sm;
             long long mem_bytes; char name[96]; } dev[PKINETO_MAX_DEVICES];
    unsigned long long json_bytes, file_bytes;   /* read: uncompressed, from the file */
} pkineto_info;

/* 1 when the first bytes of a document look like a Kineto trace: an object whose first
 * members include schemaVersion, deviceProperties, traceEvents or displayTimeUnit. */
int pkineto_probe(const char *head, size_t len);

/* Scans the whole source. Returns 0 (also for a cut-off document: info->complete 0), or
 * -1 with err naming the source, the event and the field when the file is not a Kineto
 * trace. Does not judge content (a CPU-only profile scans fine: info->kernels is 0). */
int pkineto_scan(psrc *src, const pkineto_cb *cb, pkineto_info *info, char *err, size_t errlen);

/* PyTorch scalar type name ("BFloat16", "Float", ...) -> specprof's dtype name and bytes per
 * element; 0 bytes when unknown. Collective name ("allreduce", "_allgather_base",
 * "reduce_scatter_tensor_coalesced", ...) -> specprof's op. */
int pkineto_dtype(const char *torch_name, const char **name);
const char *pkineto_op(const char *collective, char *buf, size_t cap);
#endif
