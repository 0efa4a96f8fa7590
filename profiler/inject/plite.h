/* plite.h: specprof's lite mode (--mode lite): no CUPTI in the measured process. The CUDA
 * runtime's graph launches, copies and blocking syncs are interposed by symbol (libspecprof.so
 * is LD_PRELOADed), each graph launch is timed on the GPU by a CUDA event pair, and kernel
 * launches are only counted per thread. Why: CUPTI merely initialized makes every graph launch
 * cost ~0.17 us a node (docs/profiler.md, the gtrace calls). Workload: 10^2..10^4 graph
 * launches and blocking calls a second, 10^5 kernel launches a second (counted only). */
#ifndef PLITE_H
#define PLITE_H
#include <stdint.h>
#include "pnvtx.h"
#include "ptrace.h"

typedef void (*plite_emit_fn)(void *user, const char *line, int n);

/* 1 when SPECPROF_MODE is lite (read once, in the library's constructor or at the first call). */
int plite_enabled(void);
/* Starts lite mode: the interposed calls record from now on. wake: asks the writer thread to
 * run (a device's event pool wants filling). Called once, by pinject's lite init. */
void plite_start(pnvtx *nvtx, void (*wake)(void));
/* 1 once a CUDA runtime call went through the interposer; *dev: the device it was made on. */
int plite_cuda_seen(int *dev);

/* Writer thread: formats what the program's threads queued (api events, graph launches whose
 * events completed, as graph_trace events) through emit; refills the event pools; returns the
 * lines written. final: the end (every completed launch is written, the rest counted pending). */
int64_t plite_drain(const ptrace_ctx *ctx, plite_emit_fn emit, void *user, int final);
/* Writer thread, at the end: what the interposer costs per graph launch (event pair) and per
 * interposed call, on the program's first device; into l (calib_ok or calib_why). */
void plite_calibrate(ptrace_lite *l);
/* --capture-range profiler-api (SPECPROF_CAPTURE_RANGE): 1 when on. plite_range_open_since:
 * 1 when the range (cudaProfilerStart..Stop) is open and opened at or before start_ns, so that
 * an NVTX range that began at start_ns lies wholly inside it. */
int plite_range_mode(void);
int plite_range_open_since(int64_t start_ns);
/* The calling thread's kernel and graph launches so far (the NVTX ranges' launches). */
void plite_thread_counts(uint64_t c[2]);
/* An NVTX range was popped on this thread (the eager probe closes an instance that ended). */
void plite_popped(void);
/* 1 while a probed graph replay waits for the writer (it polls every few ms then). */
int plite_probe_pending(void);
/* Counts so far (end record), and the names of the interposed entry points. */
void plite_stats(ptrace_lite *l);

#endif
