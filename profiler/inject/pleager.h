/* pleager.h: lite mode's eager probe: GPU times of eagerly launched kernels without CUPTI
 * (issues 15 and 20, docs/profiler.md "The eager probe", traces/FORMAT.md "Eager probe").
 * For the first N instances of each eager phase shape (the phase range's name less its ctx=
 * words) the instance's stream is held at its first kernel launch (cuStreamWaitValue32 on a
 * host flag), an event is recorded before and after each kernel launch the interposer sees
 * on it, and the hold is released at the range's pop, before a blocking call, every
 * PE_SEGMENT launches and by the writer after PE_WATCHDOG_MS: the queued kernels then run back
 * to back, so an event pair holds its kernel and not the host's launch gap. One instance is
 * probed at a time; nothing is done on any other launch but a thread-local comparison.
 * Workload: eager loops of 10^3-10^5 launches a second, 10-1000 phase shapes, a few probed
 * instances of each. */
#ifndef PLEAGER_H
#define PLEAGER_H
#include <stddef.h>
#include <stdint.h>
#include "pnvtx.h"
#include "ptrace.h"

#define PLEAGER_MAX_ENTRIES 4096   /* entries of one instance (launches past it: `lost`) */

/* Probed instances per phase shape (SPECPROF_PROBE_EAGER; 0 switches the probe off); sym: the
 * real runtime's entry point by name (plite's lookup); nvtx: the range names. */
void pleager_init(void *(*sym)(const char *), int instances, pnvtx *nvtx);
int pleager_instances(void);

/* Program thread, the capture open. A kernel launch on stream (per_thread: a _ptsz entry
 * point, whose NULL stream is the thread's) is about to be made: returns the entry to close
 * with pleager_after, or -1 when this launch is not probed (then nothing was done). */
int pleager_before(void *stream, int per_thread, const void *func, const unsigned grid[3], const unsigned block[3],
                   size_t smem);
/* A DtoD copy of bytes (kind: cudaMemcpyKind) on stream, asynchronous: as pleager_before. */
int pleager_before_copy(void *stream, int per_thread, uint64_t bytes, int kind);
void pleager_after(int entry, int rc);
/* Program thread: a call that may wait for the GPU (a sync, a copy but DtoD) is about to be
 * made: a held stream is released first. */
void pleager_blocking(void);
/* Program thread: a range was popped, or recording stopped: a probed instance that ended is
 * closed (its end event recorded, its stream released). */
void pleager_popped(void);
void pleager_stop_thread(void);
/* Writer thread: the capture ends: no instance is probed or held from now on (a hold in place
 * is released; an instance open on a program thread ends at its next call). */
void pleager_stop(void);

/* Writer thread. Releases a hold older than the watchdog's limit; 1 while an instance is held
 * or waits to be read (the writer polls sooner then). */
int pleager_poll(int64_t now_ns);
/* A closed instance whose events completed, for the writer to write; NULL when none. After
 * pleager_read it must be given back with pleager_done. */
typedef ptrace_eagerentry pleager_entry;   /* traces/FORMAT.md "Eager probe" */
typedef struct {
    ptrace_eagerprobe p;        /* the event as written, but its GPU span on the host clock
                                   (start_ns, end_ns, err_us: the writer's, through its anchor) */
    int dev;
    double span_us;             /* from the first event to the last */
    void *first_event;          /* for the writer's anchor */
} pleager_view;
/* 1 and *v filled: an instance to write; 0 none ready; -1 one could not be read (counted lost,
 * given back). The view is valid until pleager_done. */
int pleager_read(pleager_view *v);
void pleager_done(void);

typedef struct {
    int instances;              /* N per phase shape */
    int64_t probed, lost, skipped, watchdog, keys;
    int64_t busy;               /* instances of a shape still short of N passed over: another was held */
    char skip_why[96];
} pleager_stats;
void pleager_get_stats(pleager_stats *s);

#endif
