/* ptrace_read.h: loads a specprof trace (traces/FORMAT.md), plain JSON or gzip, also one
 * cut off by SIGKILL: whole lines load, a last line cut mid-write is dropped and reported,
 * a gzip stream without its trailer is read up to where it stops, a missing specprof_end
 * marks the file as truncated. Libc and zlib only (pjson), for libspecsim.a and the
 * specprof CLI. Two modes: ptrace_read_* keeps every event (small and medium traces);
 * ptrace_scan_* hands events one at a time to a callback in bounded memory (a few MiB
 * whatever the file's size: ptrace_scan_file reads and decompresses it in 1 MiB pieces). */
#ifndef PTRACE_READ_H
#define PTRACE_READ_H
#include <stddef.h>
#include <stdio.h>
#include "pjson.h"
#include "ptrace.h"

typedef struct {
    char ph;                  /* 'X', 'M', 'i', ... */
    const char *cat, *name;
    int64_t pid, tid;
    int64_t ts_ns, dur_ns;    /* relative to the header's t0_ns, exact to the ns */
    const pjson *args;        /* the args object, or NULL */
    size_t line;              /* 1-based line in the file */
} ptrace_event;

/* What a read learnt about the file as a whole. */
typedef struct {
    int has_header;
    ptrace_header header;
    int merged;               /* first event is specprof_merged (specprof merge output) */
    int has_end;              /* a specprof_end record was read */
    int complete;             /* has_end, and the file holds the records it promises:
                                 records_seen == records_promised (when it gives one) */
    ptrace_end end;           /* valid when has_end */
    int64_t records_promised; /* the end record's records; -1: no end, or it gives none */
    int64_t records_seen;     /* events other than metadata (ph M): what records counts */
    int cut_last_line;        /* the last line did not parse (cut off mid-write): dropped */
    size_t bad_lines;         /* other lines that did not parse (skipped) */
    size_t first_bad_line;
    char first_bad_err[160];
    size_t lines, events;     /* lines read; events handed out (header/end excluded) */
    int cut_compressed;       /* gzip input ended without its trailer (or was damaged) */
    char compressed_err[96];  /* zlib's message when the gzip data was damaged, else "" */
} ptrace_info;

/* Every number a reader turns into time is bounded (models/bounds.h): the header's t0_ns
 * (else the file is refused), each event's ts and dur and the end record's counts (else the
 * line is counted as bad and skipped), so that no sum of times overflows downstream. */

/* Called for each event; return non-zero to stop. The event (and its args) is valid
 * only during the call. */
typedef int (*ptrace_scan_fn)(void *user, const ptrace_event *ev, const ptrace_info *info);

/* Scans text[0..len); label names the input in messages. Returns 0 (also for a cut-off
 * file: see info), or -1 with err when the input is not a specprof trace at all. */
int ptrace_scan_buf(const char *text, size_t len, const char *label, ptrace_scan_fn fn,
                    void *user, ptrace_info *info, char *err, size_t errlen);

/* Streams the file at path (plain or gzip, found by its first two bytes) through fn:
 * memory stays bounded by the longest line (at most BND_TRACE_LINE_BYTES, 1 MiB: a longer
 * one refuses the input, /dev/zero stops there) plus 6 MiB of buffers; at most
 * BND_TRACE_FILE_BYTES (64 GiB) are read.
 * Returns 0 (also for a cut-off file: see info), -1 with err when it cannot be read or is
 * not a specprof trace. */
int ptrace_scan_file(const char *path, ptrace_scan_fn fn, void *user, ptrace_info *info, char *err, size_t errlen);
/* The same from a stream that is read once (a pipe, fmemopen): plain JSON only; label
 * names it in messages. */
int ptrace_scan_stream(FILE *fp, const char *label, ptrace_scan_fn fn, void *user,
                       ptrace_info *info, char *err, size_t errlen);

/* 1 when the first bytes of a file look like a specprof trace: the first event (line 1 "["
 * and line 2, or "[{...}," on line 1) is specprof_header or specprof_merged. */
int ptrace_probe(const char *head, size_t len);

/* Every event kept in memory. Caller-owned; ptrace_file_free releases it. */
typedef struct {
    ptrace_info info;
    ptrace_event *ev;
    size_t n_ev, cap_ev;
    pjson_arena *arena;
} ptrace_file;

int ptrace_read_buf(const char *text, size_t len, const char *label, ptrace_file *f,
                    char *err, size_t errlen);
/* Reads path streaming (plain or gzip), keeping every event. */
int ptrace_read_file(const char *path, ptrace_file *f, char *err, size_t errlen);
void ptrace_file_free(ptrace_file *f);

/* Reads a whole file (at most BND_TRACE_FILE_BYTES) into a malloc'd NUL-terminated buffer;
 * 0 or -1 with err. The scan readers need no such buffer. */
int ptrace_slurp(const char *path, char **text, size_t *len, char *err, size_t errlen);

/* Typed views of one event (absolute CUPTI times: t0_ns + ts). Strings point into the
 * event's args. Each returns 0, or -1 when the event is not of that kind. */
int ptrace_read_kernel(const ptrace_event *e, int64_t t0_ns, ptrace_kernel *k);
int ptrace_read_mem(const ptrace_event *e, int64_t t0_ns, ptrace_mem *m);
int ptrace_read_api(const ptrace_event *e, int64_t t0_ns, ptrace_api *a);
int ptrace_read_range(const ptrace_event *e, int64_t t0_ns, ptrace_range *r);
int ptrace_read_ncclcall(const ptrace_event *e, int64_t t0_ns, ptrace_ncclcall *n);
int ptrace_read_graphexec(const ptrace_event *e, int64_t t0_ns, ptrace_graphexec *g);
int ptrace_read_window(const ptrace_event *e, int64_t t0_ns, ptrace_window *w);
int ptrace_read_graphlaunch(const ptrace_event *e, int64_t t0_ns, ptrace_graphlaunch *g);
/* A graph_probe event (lite mode's node probe): g as for graph_trace (the instrumented
 * replay's span), *end_us its array of node ends (us from the root event). Returns the node
 * count, or -1 when the event is not one. */
int ptrace_read_graphprobe(const ptrace_event *e, int64_t t0_ns, ptrace_graphlaunch *g, const pjson **end_us);
/* The nccl object of a kernel/memcpy args, or of an nccl event's args. 0 or -1. */
int ptrace_read_nccl(const pjson *obj, ptrace_nccl *n);

#endif
