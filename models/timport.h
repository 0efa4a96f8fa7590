/* timport: trace importers, chosen by the file's content (not its name), that fill the fit's
 * record model (fit_trace: kernels, copies, launch calls, ranges). Two are known: specprof's
 * own format (traces/FORMAT.md) and torch.profiler/Kineto Chrome-trace JSON (as SGLang's
 * /start_profile writes it), each plain or gzip-compressed, both streamed in bounded memory.
 * docs/importers.md gives the source of every field. Workload: a handful to tens of files of
 * up to gigabytes. */
#ifndef TIMPORT_H
#define TIMPORT_H
#include <stddef.h>
#include "fit.h"
#include "psrc.h"

/* What a load saw, for the report and for the phase naming step (phasemap.h). */
typedef struct {
    int    discard;                /* in: records are read and counted, not kept (measures
                                      the reader alone: specsim import --scan-only) */
    int    instances_max;          /* in: > 0: a specprof trace loads capped to that many
                                      phase instances per phase and configuration
                                      (fit_sample_load); 0: whole */
    const char *importer;          /* the importer's name ("specprof", "kineto") */
    int    compressed;             /* gzip */
    unsigned long long file_bytes, json_bytes;
    size_t events;                 /* events in the file */
    size_t skipped;                /* events of kinds the fit does not use (cpu_op, ...) */
    size_t gpu_ranges;             /* Kineto gpu_user_annotation spans (counted, not used) */
    size_t graph_inferred;         /* GPU records marked as graph work by their launch's
                                      correlation id (Kineto without graph ids) */
    size_t nccl_kernels;
    size_t kernels, mems, apis, ranges;   /* records read (also when discarded) */
    size_t host_events;            /* Kineto: host events it recorded (cpu_op, runtime, ...) */
    size_t python_functions;       /* Kineto: python_function events (with_stack=True): not
                                      host events above, their cost (~0.1 us an event,
                                      traces/torch/pyfunc) stays in */
    double host_cost_per_event_us; /* the profiler's host cost taken out per event (0: none) */
    double host_cost_us;           /* of which on the busiest thread, in all */
    int    complete;               /* the file ended as its writer ends it */
    unsigned long long cut_bytes;  /* Kineto, cut: the bytes of its last event, cut short and
                                      dropped */
    int    cut_compressed;         /* the gzip stream ended without its trailer (an incomplete
                                      copy): read up to the cut, as a plain file cut there */
    char   merged_rank[48];        /* Kineto: a merged trace of several ranks: the rank read */
    int    merged_ranks;
    size_t merged_skipped;         /* events of the other ranks, skipped */
    size_t bad_events;             /* Kineto: events skipped (not JSON, no time) */
    char   bad_first[256];         /* the first of them: event, field, value */
    size_t nonfinite_events;       /* Kineto: events read with inf/NaN values taken as null */
    int    base_time_late;         /* Kineto: baseTimeNanoseconds after the events (relative
                                      times kept) */
    size_t gpu_with_call;          /* Kineto: GPU records whose launch call is in the file */
    size_t gpu_before_call;        /* of which start before the call starts: the GPU and CPU
                                      clocks disagree (by at least gpu_lead_max_ns) */
    int64_t gpu_lead_max_ns;
} timport_stats;

/* An importer: probe looks at the first bytes of the (decompressed) file; load initialises t
 * (named by the path) and fills it, from the file at path or from src, the same file opened
 * as a byte source (plain or inflated); on failure it leaves t freed. */
typedef struct {
    const char *name;
    int (*probe)(const char *head, size_t len);
    int (*load)(const char *path, psrc *src, fit_trace *t, timport_stats *st, char *err,
                size_t errlen);
} timport_ops;

/* The table, in probing order, ending with a NULL name. */
extern const timport_ops timport_table[];
/* The importer named name, or NULL. */
const timport_ops *timport_find(const char *name);

/* Loads path into t (fit_trace_init'ed here; fit_trace_free releases it) with the importer
 * whose probe accepts the file's first bytes, or the one named by force (NULL: by content).
 * st may be NULL (else its discard is read). Returns 0, or -1 with err naming the file, the field and the value: not a
 * known format (and what its first bytes are), a Kineto trace without GPU events (a
 * CPU-only profile), a merged specprof file. */
int timport_load(fit_trace *t, const char *path, const char *force, timport_stats *st,
                 char *err, size_t errlen);
/* Appends src's records to dst as if one capture held both (several captures of one
 * program: a kernel group may then be missing from some of them, as in one trace that holds
 * several batch sizes). src's correlation ids are shifted past dst's, and its times past
 * dst's last record when they overlap. dst keeps its header. 0, or -1 when out of memory. */
int timport_append(fit_trace *dst, const fit_trace *src, char *err, size_t errlen);

/* Says on stderr, as `cmd: warning: path: ...`, that a Kineto trace was cut off (the events
 * read, the JSON bytes, the partial event dropped; a gzip stream without its trailer);
 * nothing for a whole one or a specprof trace (its reader says so itself). */
void timport_warn_cut(const char *cmd, const char *path, const timport_stats *st);
/* Says on stderr, as `cmd: warning: path: ...`, that st counted GPU records starting before
 * their launch call (the trace's GPU and CPU clocks disagree); nothing when none did. */
void timport_warn_clocks(const char *cmd, const char *path, const timport_stats *st);
#endif
