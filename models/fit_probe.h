/* fit_probe.h: a lite capture's node probe (specprof --mode lite --probe-nodes N, traces/
 * FORMAT.md "Node probe") as node-level content for the fit: the probed replays' node times,
 * less the events' own cost, become kernel and copy records of a reference built from the
 * capture itself, so that its graph phases need no CUPTI capture (docs/fit.md 1c). Workload:
 * a few probed replays per graph executable (10-100 executables of 10^2-10^4 nodes) in a lite
 * trace of 10^4-10^6 records. */
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
} fit_probe_stats;

/* When path (the lite trace t was loaded from) holds probed replays: ref (initialised here,
 * caller frees with fit_trace_free) receives the phase instances of the capture whose every
 * graph launch was probed and that launched no eager kernel, with one record per work node of
 * each probed replay, and the lite trace t loses its probed instances (their host and GPU
 * times are the instrumented clone's). Each node's time is its event's end less the latest of
 * its predecessors' ends, less c, the events' own GPU cost per node: (median probed span -
 * median unprobed span of the same executable) / nodes, or the trace's calibration when the
 * executable has no unprobed replay. Returns 1 when ref was filled, 0 when the trace holds no
 * probe (ref untouched), -1 with err naming the file and field. */
int fit_probe_ref(fit_trace *t, const char *path, fit_trace *ref, fit_probe_stats *st, char *err, size_t errlen);

#endif
