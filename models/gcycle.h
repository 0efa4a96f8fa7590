/* gcycle: phases of a trace without any annotation, from its CUDA-graph launch cycle. A
 * speculative-decoding server replays its graphs in a fixed order per iteration (SGLang
 * EAGLE: draft, verify for the batch-size bucket, draft-extend; eager sampling between), so
 * given that order from the user each graph launch gets its phase by its position in the
 * cycle found in the trace (docs/importers.md, "Without any annotation"). Workload: one
 * configuration per trace, 10^1..10^5 graph launches, cycles of 1 to 16 launches. */
#ifndef GCYCLE_H
#define GCYCLE_H
#include <stddef.h>
#include <stdint.h>
#include "fit.h"

#define GC_POS_MAX 16                /* = PTRACE_SUM_CYCLE_MAX (ptrace_sum.h): specprof check's */

/* One position of the cycle: the phase of its graph launch and, optionally, the phase of the
 * eager work after it up to the next graph launch (tail < 0: that work is the graph phase's). */
typedef struct {
    int phase;
    int tail;
} gc_pos;

/* The user's order: "draft,verify+accept,extend" (positions separated by ',', '+PHASE' names
 * the eager phase after a position). */
typedef struct {
    int    npos;
    gc_pos pos[GC_POS_MAX];
    char   text[160];
} gc_order;

/* The shape of the one configuration a trace holds: "rows=R,steps=S[,topk=K][,draft_tokens=T]
 * [,ctx=C]" (C: KV tokens per row); -1 where not given. */
typedef struct {
    int    rows, steps, topk, draft_tokens;
    double ctx_per_row;
    char   text[160];
} gc_shape;

/* What gcycle_apply found, for the report. */
typedef struct {
    size_t   launches;        /* graph launches on the launching thread */
    size_t   other_thread;    /* graph launches on other threads (not used) */
    int      period;          /* the cycle's length */
    uint32_t cycle[GC_POS_MAX];   /* its ids by position of the order */
    int      by_exec;         /* 1: ids are graph_exec_id; 0: signatures of the launches'
                                 kernels (names and grids: Kineto writes no exec id) */
    int      aligned_by_wait; /* 1: the position after which the host reads the GPU's
                                 results (a copy to the host, a synchronize) is the order's
                                 accept/sample position; 0: the first launch is the order's
                                 first position */
    size_t   out_of_cycle;    /* launches placed at no position (their work is in no phase) */
    size_t   buckets;         /* executables beside the cycle's own at a position */
    size_t   between;         /* launch calls after the longest pause before a graph launch
                                 (the next phase's preparation): in no phase */
    size_t   instances;
    size_t   per_phase[WM_NPHASE];
} gc_stats;

/* Called per instance found: its phase, graph (1) or eager (0), the launch calls' time range
 * on the launching thread. 0, or -1 to stop (err filled by the callee). */
typedef int (*gc_emit_fn)(void *user, int phase, int graph, int64_t start_ns, int64_t end_ns,
                          int64_t thread);

/* 0 or -1 with err naming the field and the value. */
int gcycle_order_parse(gc_order *o, const char *v, char *err, size_t errlen);
int gcycle_shape_parse(gc_shape *s, const char *v, char *err, size_t errlen);

/* The period of ids[0..n): smallest p <= GC_POS_MAX with ids[i] = ids[i-p] for >= 90% of
 * the launches and at least 3 cycles (ptrace_sum_period, what specprof check prints); 0: none. */
int gcycle_period(const uint32_t *ids, size_t n);

/* Finds t's graph launch cycle and calls emit for every instance, in time order: per graph
 * launch placed in the cycle, one instance of its position's phase (graph=1) whose range
 * runs from its launch call to the last launch call of the thread before the next graph
 * launch (the trace's last one: its own call only; the work after it is cut wherever the
 * capture stopped), or, where the position names an eager
 * phase, to its own launch call's end and then one instance of the eager phase (graph=0)
 * over the calls after it (none when there are none). Refuses (-1, err naming t's file, the field and the value): fewer than 3 graph
 * launches, no cycle, a cycle whose length differs from o's. st may be NULL. */
int gcycle_apply(const fit_trace *t, const gc_order *o, gc_emit_fn emit, void *user,
                 gc_stats *st, char *err, size_t errlen);
#endif
