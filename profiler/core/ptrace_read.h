/* ptrace_read.h: loads a specprof trace (traces/FORMAT.md), also one cut off by SIGKILL:
 * whole lines load, a last line cut mid-write is dropped and reported, a missing
 * specprof_end marks the file as truncated. Libc only (pjson), for libspecsim.a and the
 * specprof CLI. Two modes: ptrace_read_* keeps every event (small and medium traces);
 * ptrace_scan_* hands events one at a time to a callback in bounded memory. */
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
} ptrace_info;

/* Every number a reader turns into time is bounded (bounds.h): the header's t0_ns (else
 * the file is refused), each event's ts and dur and the end record's counts (else the line
 * is counted as bad and skipped), so that no sum of times overflows downstream. */

/* Called for each event; return non-zero to stop. The event (and its args) is valid
 * only during the call. */
typedef int (*ptrace_scan_fn)(void *user, const ptrace_event *ev, const ptrace_info *info);

/* Scans text[0..len); label names the input in messages. Returns 0 (also for a cut-off
 * file: see info), or -1 with err when the input is not a specprof trace at all. */
int ptrace_scan_buf(const char *text, size_t len, const char *label, ptrace_scan_fn fn,
                    void *user, ptrace_info *info, char *err, size_t errlen);
/* The same from a stream (a file, a pipe from gzip -dc), read in chunks: memory is bounded
 * by the longest line, BND_TRACE_LINE_BYTES (a longer one refuses the input: /dev/zero
 * stops there), and at most BND_TRACE_FILE_BYTES are read. label names the input. */
int ptrace_scan_stream(FILE *fp, const char *label, ptrace_scan_fn fn, void *user,
                       ptrace_info *info, char *err, size_t errlen);
/* ptrace_scan_stream of the file at path. */
int ptrace_scan_file(const char *path, ptrace_scan_fn fn, void *user, ptrace_info *info,
                     char *err, size_t errlen);

/* Every event kept in memory. Caller-owned; ptrace_file_free releases it. */
typedef struct {
    ptrace_info info;
    ptrace_event *ev;
    size_t n_ev, cap_ev;
    pjson_arena *arena;
} ptrace_file;

int ptrace_read_buf(const char *text, size_t len, const char *label, ptrace_file *f,
                    char *err, size_t errlen);
int ptrace_read_file(const char *path, ptrace_file *f, char *err, size_t errlen);  /* streams */
void ptrace_file_free(ptrace_file *f);

/* Reads a whole file (at most BND_TRACE_FILE_BYTES) into a malloc'd NUL-terminated buffer;
 * 0 or -1 with err. The scan_stream/scan_file readers need no such buffer. */
int ptrace_slurp(const char *path, char **text, size_t *len, char *err, size_t errlen);

/* Typed views of one event (absolute CUPTI times: t0_ns + ts). Strings point into the
 * event's args. Each returns 0, or -1 when the event is not of that kind. */
int ptrace_read_kernel(const ptrace_event *e, int64_t t0_ns, ptrace_kernel *k);
int ptrace_read_mem(const ptrace_event *e, int64_t t0_ns, ptrace_mem *m);
int ptrace_read_api(const ptrace_event *e, int64_t t0_ns, ptrace_api *a);
int ptrace_read_range(const ptrace_event *e, int64_t t0_ns, ptrace_range *r);
int ptrace_read_ncclcall(const ptrace_event *e, int64_t t0_ns, ptrace_ncclcall *n);
int ptrace_read_graphexec(const ptrace_event *e, int64_t t0_ns, ptrace_graphexec *g);
/* The nccl object of a kernel/memcpy args, or of an nccl event's args. 0 or -1. */
int ptrace_read_nccl(const pjson *obj, ptrace_nccl *n);

#endif
