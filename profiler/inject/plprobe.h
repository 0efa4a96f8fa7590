/* plprobe.h: lite mode's node probe: per-node GPU times of a program's CUDA graphs without
 * CUPTI (issues 15 and 20, docs/profiler.md "The node probe"). At each instantiation the
 * graph is cloned and an event record node is put after every work node (its outgoing edges
 * moved onto the event) plus one root event before the roots; the clone is instantiated
 * beside the program's executable. For an executable's first replays inside the capture the
 * interposed cudaGraphLaunch launches the instrumented clone instead (the same nodes, the
 * same memory: the program computes the same), and the writer reads each node's end from its
 * event. Workload: 10-500 graphs of 10^2-10^4 nodes instantiated at start-up, each probed a
 * few times; nothing per node on any other replay. */
#ifndef PLPROBE_H
#define PLPROBE_H
#include <stddef.h>
#include <stdint.h>

typedef struct plprobe plprobe;   /* one instrumented executable; owned by this module */

/* Probed replays per executable (SPECPROF_PROBE_REPLAYS, default 5; 0 switches the probe
 * off); sym: the real runtime's entry point by name (plite's lookup). */
void plprobe_init(void *(*sym)(const char *), int replays);
int plprobe_replays(void);

/* Program thread, after the program's own instantiation of graph as exec succeeded (flags:
 * the instantiation's). Builds the instrumented clone, or counts why not. Never changes the
 * program's error state. */
void plprobe_instantiated(void *exec, void *graph, unsigned long long flags);
/* The program changed exec's nodes (cudaGraphExecUpdate, cudaGraphExec*SetParams,
 * cudaGraphNodeSetEnabled): its clone would run the old ones, so it is never launched again. */
void plprobe_exec_changed(void *exec);
/* The program destroys exec: its clone goes too (now, or after the writer read its replay). */
void plprobe_exec_destroyed(void *exec);

/* Program thread, in a graph launch inside the capture: the instrumented executable to launch
 * instead of exec, with *pr its probe (marked busy until the writer read it), or NULL. */
void *plprobe_take(void *exec, plprobe **pr);
/* The substituted launch failed: pr is free again and the replay not counted. */
void plprobe_untake(plprobe *pr);

/* Writer thread. A probed replay whose launch's end event completed: its node ends, in us
 * from its root event, into end_us (plprobe_nodes(pr) of them); pr is released. Returns the
 * node count, or -1 (an event could not be read: counted lost). */
int plprobe_read(plprobe *pr, float *end_us, int cap);
int plprobe_nodes(const plprobe *pr);
/* The executable's node table as trace lines (once per probe: later calls write nothing):
 * kernel names not seen before (a probe_names event), then a probe_graph event. */
typedef void (*plprobe_emit_fn)(void *user, const char *line, int n);
int64_t plprobe_emit_table(plprobe *pr, uint32_t exec_id, int pid, plprobe_emit_fn emit, void *user);
/* 1 while a probed replay waits to be read (the writer polls sooner then). */
int plprobe_pending(void);

/* Counts over the capture (specprof_end's probe object). */
typedef struct {
    int replays_per_exec;
    int64_t execs;                 /* instantiations instrumented */
    int64_t skipped;               /* instantiations not instrumented, and the first reason */
    char skip_why[96];
    int64_t launched, read, lost, stale, events;
    double instrument_ms;          /* the program's threads' time spent instrumenting */
} plprobe_stats;
void plprobe_get_stats(plprobe_stats *s);

/* What an event node costs the GPU per work node, measured at the end on the writer's stream:
 * a chain of n 4-byte memset nodes replayed as is and instrumented (medians of reps replays),
 * (instrumented - original) / n in us; -1 when it could not be measured (why says so). */
double plprobe_calibrate(void *stream, int n, int reps, char *why, size_t why_cap);

#endif
