/* ptrace_sum.h: a summary of one specprof trace for `specprof check`: event counts by
 * kind, kernels per CUDA graph, per NVTX range name and per phase, NCCL kernels by
 * call shape, and the order of graph launches with its repeating cycle, which is how
 * phases are found in a program that emits no NVTX ranges (docs/specprof.md).
 * Workload: one pass over up to 10^7 events; memory bounded by the table sizes below
 * plus 16 bytes per graph launch (at most 2^20 launches kept). */
#ifndef PTRACE_SUM_H
#define PTRACE_SUM_H
#include <stdio.h>
#include "ptrace_read.h"

#define PTRACE_SUM_MAX 64
#define PTRACE_SUM_CYCLE_MAX 16

typedef struct { char name[112]; int64_t n, total_ns; } ptrace_sum_item;
typedef struct { int64_t ts_ns, pid; uint32_t corr, exec_id; } ptrace_sum_launch;

typedef struct {
    int64_t kernels, kernels_in_graphs, kernels_nccl, kernels_with_nvtx, kernels_with_phase;
    int64_t memcpys, memsets, mem_nccl, api, nvtx_ranges, nccl_calls, nccl_calls_captured;
    int64_t graph_execs, meta, other;
    int64_t windows, window_ns, graph_trace;  /* node-level windows, their length, graph-level launch records */
    int64_t first_ns, last_ns;            /* relative to t0; first > last when empty */
    int n_graphs;  ptrace_sum_item graphs[PTRACE_SUM_MAX];  /* name "graph <id>" */
    int n_ranges;  ptrace_sum_item ranges[PTRACE_SUM_MAX];  /* NVTX range names */
    int n_phases;  ptrace_sum_item phases[PTRACE_SUM_MAX];  /* kernels by phase (n, GPU ns) */
    int n_nccl;    ptrace_sum_item nccl[PTRACE_SUM_MAX];    /* NCCL GPU records by "op dtype bytes" */
    int64_t table_overflow;               /* items not kept because a table was full */
    ptrace_sum_launch *launches;          /* graph launches (deduplicated by corr after finish) */
    size_t n_launches, cap_launches;
    int cycle_period;                     /* 0: no cycle found */
    uint32_t cycle[PTRACE_SUM_CYCLE_MAX]; /* graph_exec ids of one cycle, in launch order */
} ptrace_sum;

void ptrace_sum_init(ptrace_sum *s);
void ptrace_sum_free(ptrace_sum *s);
void ptrace_sum_add(ptrace_sum *s, const ptrace_event *e);
/* Sorts and deduplicates the graph launches (by rank and corr; a merged file's ranks are
 * interleaved in time, so check a rank file for its own cycle) and looks for the smallest period p <= 16
 * with seq[i] == seq[i-p] for >= 90% of i (and at least 3 cycles). */
void ptrace_sum_finish(ptrace_sum *s);
/* Smallest period of seq[0..n) as above, 0 if none; exposed for tests. */
int ptrace_sum_period(const uint32_t *seq, size_t n);

void ptrace_sum_print(FILE *f, const ptrace_sum *s, const ptrace_info *info, const char *label);
void ptrace_sum_print_json(FILE *f, const ptrace_sum *s, const ptrace_info *info, const char *label);

#endif
