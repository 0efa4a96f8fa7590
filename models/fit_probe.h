/* fit_probe.h: a lite capture's node and eager probes (specprof --mode lite --probe-nodes N,
 * --probe-eager N; traces/FORMAT.md "Node probe", "Eager probe") as node-level content for the
 * fit: the probed replays' node times and the probed eager kernels' times, less the events' own
 * cost, become kernel and copy records of a reference built from the capture itself, so that
 * its phases need no CUPTI capture (docs/fit.md 1c). Workload:
 * a few probed replays per graph executable (10-100 executables of 10^2-10^4 nodes) and a few
 * eager instances per phase shape (10^2-10^3 entries each) in a lite trace of 10^4-10^6 records. */
#ifndef FIT_PROBE_H
#define FIT_PROBE_H
#include <stddef.h>
#include "fit.h"

typedef struct {
    size_t probes;             /* graph_probe events read */
    size_t execs;              /* executables with a node table and a probe */
    size_t instances;          /* phase instances taken into the reference (every graph launch
                                  probed, no eager kernel launch) */
    size_t records;            /* kernel, copy and memset records made */
    size_t dropped;            /* phase instances of the lite trace dropped: a probed launch's
                                  host and GPU times are the instrumented clone's */
    size_t cost_from_spans;    /* executables whose events' cost per node came from their own
                                  unprobed spans; the others took the calibration's */
    double cost_median_us;     /* the events' cost per node, median over executables */
    /* the eager probe (--probe-eager N, traces/FORMAT.md "Eager probe") */
    size_t eager_probes;       /* eager_probe events read */
    size_t eager_instances;    /* phase instances taken into the reference from them */
    size_t eager_dropped;      /* their ranges dropped from the lite trace (each probed one) */
    size_t eager_incomplete;   /* probed but not taken: kernels on other streams, entries lost,
                                  no kernel, a graph launch in the range, too many calls */
    size_t eager_no_range;     /* no phase range of their thread and name holds them */
    size_t eager_records;      /* kernel and copy records made (unseen ones included) */
    size_t eager_unseen;       /* of them, "(unseen kernels)": a gap between two entries */
    size_t eager_copies_skipped;   /* copy entries matching no copy call of the range */
    size_t eager_blocking_copies;  /* blocking copy calls no entry timed: a nominal record each */
    double eager_cost_median_us;   /* one event's GPU cost, median over the events read */
    /* mixed instances (graph launches and eager kernels in one range: both probes' records) */
    size_t mixed_own;          /* eager instances taken whose every graph launch was node-probed
                                  in the same instance (the union of the two probes) */
    size_t mixed_donor;        /* taken with a graph launch's nodes from the executable's probed
                                  replay in another instance (nearest in time) */
    size_t mixed_unprobed;     /* not taken: a graph launch whose executable was never probed, or
                                  unprobed and untimed in the instance (in eager_incomplete) */
    size_t mixed_records;      /* the graph parts' node records */
    size_t mixed_shifted;      /* graph parts moved later than their measured start by more than
                                  1 us so as not to overlap the eager records before them */
    double mixed_shift_max_us; /* the largest such move */
} fit_probe_stats;

/* When path (the lite trace t was loaded from) holds probed replays or eager probes: ref (initialised here,
 * caller frees with fit_trace_free) receives the phase instances of the capture whose every
 * graph launch was probed and that launched no eager kernel, with one record per work node of
 * each probed replay, and the lite trace t loses its probed instances (their host and GPU
 * times are the instrumented clone's). Each node's time is its event's end less the latest of
 * its predecessors' ends, less c, the events' own GPU cost per node: (median probed span -
 * median unprobed span of the same executable) / nodes, or the trace's calibration when the
 * executable has no unprobed replay. An eager probe's instance (all its kernels on one stream,
 * no graph launch, none lost) joins ref as a node-level capture would hold it: the range, the
 * lite trace's own calls in it, a cudaLaunchKernel call per kernel entry at the probe's host
 * times, a kernel per entry of a - b - cost_us, an "(unseen kernels)" kernel with a
 * cuLaunchKernel call per gap between entries beyond one event's cost, a copy per copy entry
 * matched to the range's copy calls; the GPU records laid out from their calls as CUPTI records
 * them, with a queue gap and a launch latency the probe cannot see
 * (docs/fit.md 1c "Eager probe"). A mixed instance (graph launches and eager kernels in one range)
 * whose eager probe is complete joins ref with both parts: each graph launch's node records from
 * its own node probe (the union) or else from the executable's probed replay nearest in time in
 * another instance (a composite), laid out from the launch's measured start on the eager records'
 * GPU timeline, on the launch's corr; a launch whose executable was never probed, and the instance
 * is not taken. Returns 1 when ref was filled, 0 when the trace holds no
 * probe (ref untouched), -1 with err naming the file, line, field and value. */
int fit_probe_ref(fit_trace *t, const char *path, fit_trace *ref, fit_probe_stats *st, char *err, size_t errlen);

#endif
