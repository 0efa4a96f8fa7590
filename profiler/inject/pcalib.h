/* pcalib.h: measures, once at the start of a capture, what CUPTI adds to a launch on this
 * machine, so that `specsim fit` can take it out of host gaps and launch costs: the host
 * time of an empty kernel launch and of a 1-node and a PCALIB_GRAPH_NODES-node CUDA graph
 * launch, outside a window (specprof's between-window configuration), with graph-level
 * records (when asked) and inside a window (kernel records, API records, callbacks).
 * Runs on specprof's control thread in the program's primary context, on its own stream,
 * with the driver API found by dlsym (libspecprof links no libcuda). Workload: ~1000
 * launches of an empty kernel, a few ms. Its own records are named PCALIB_KERNEL_NAME and
 * come from the control thread; precord drops them. */
#ifndef PCALIB_H
#define PCALIB_H
#include "precord.h"
#include "ptrace.h"

#define PCALIB_KERNEL_NAME PRECORD_CALIB_KERNEL
#define PCALIB_GRAPH_NODES 16
#define PCALIB_LAUNCHES 200      /* timed launches per configuration (median taken) */

/* Switches specprof between its configurations; called on the calibrating thread. */
typedef struct {
    void (*window_on)(void);     /* node-level recording (kernels, copies, API records, callbacks) */
    void (*window_off)(void);    /* back to the between-window configuration */
    void (*graph_trace)(int on); /* graph-level records on/off (NULL when not used): turned off
                                    for the "nothing" part, on again after it */
    int (*capture_active)(void); /* 1 while any thread of the program captures a CUDA graph */
} pcalib_hooks;

/* Measures into *c (c->ok = 1) or says why not (c->ok = 0, c->why). Called in the
 * between-window configuration; returns in it, the window closed. dev: the device ordinal
 * of the program's first context. Never fails the program: every driver error ends the
 * calibration with a reason. */
void pcalib_run(int dev, const pcalib_hooks *h, ptrace_calib *c);

#endif
