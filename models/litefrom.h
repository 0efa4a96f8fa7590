/* litefrom: the --mode lite capture a node-level specprof trace stands for (`specsim
 * lite-from IN OUT`; docs/fit.md "Lite captures"): for tests and offline checks of the lite
 * fit on committed node-level traces. */
#ifndef LITEFROM_H
#define LITEFROM_H
#include <stddef.h>
#include "ptrace.h"

typedef struct {
    size_t ranges, graph_launches, graph_traces, blocking;
    size_t no_records;         /* graph launches without kernel records: no graph_trace */
    size_t records_dropped;    /* kernels, copies, sets */
    size_t calls_dropped;      /* eager launch calls and other API records */
} litefrom_stats;

/* Reads the specprof trace in (plain or gzip, mode always) twice, streaming, and writes out
 * (".gz": compressed). 0, or -1 with err naming the file (not a node-level capture, I/O). */
int litefrom_convert(const char *in, const char *out, litefrom_stats *st, char *err, size_t errlen);
/* The calls a lite capture records (traces/FORMAT.md "Lite mode"), besides NVTX ranges: graph
 * launches (an executable id, or the runtime/driver graph launch by name) and the calls that
 * block the host (copies, stream/device/event synchronizes). fit_nodes.c fills the rest. */
int litefrom_is_graph(const ptrace_api *a);
int litefrom_is_blocking(const ptrace_api *a);
/* argv[0] is "lite-from". Exit 0, or 2 with the message. */
int litefrom_main(int argc, char **argv);
#endif
