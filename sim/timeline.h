/* timeline: writes the simulated run as Chrome Trace Event JSON (Perfetto and
 * chrome://tracing open it): one process per rank (and per baseline rank), one thread for
 * the host and one for the GPU stream, an "X" event per span (sim.h sim_span). Streamed to
 * the file as spans arrive; --timeline-iterations keeps files small. */
#ifndef TIMELINE_H
#define TIMELINE_H
#include <stdio.h>
#include <stddef.h>
#include "sim.h"

typedef struct {
    FILE *f;                 /* owned: closed by timeline_close */
    int   nevents;
    int   pid_base;          /* added to the rank: spec ranks 1.., baseline ranks 1001.. */
    int   err;
} timeline;

/* Opens path for writing. 0 or -1 with err. */
int  timeline_open(timeline *t, const char *path, char *err, size_t errlen);
/* Names the processes and threads of `ranks` ranks under pid_base ("spec rank 0", ...) and
 * makes pid_base the base of the spans that follow. */
void timeline_process(timeline *t, int pid_base, const char *label, int ranks);
/* sim_hooks.on_span callback: ctx is a timeline*. */
void timeline_span(void *ctx, const sim_span *s);
/* Ends the JSON and closes the file. 0 or -1 with err (a write failed). */
int  timeline_close(timeline *t, const char *path, char *err, size_t errlen);
#endif
