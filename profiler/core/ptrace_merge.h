/* ptrace_merge.h: `specprof merge DIR`: joins the per-rank files of one run
 * (DIR/specprof.rank<R>.pid<P>.json, or .json.part when cut off) into DIR/merged.json,
 * pid = rank, with every file's times shifted onto the earliest t0_ns (CUPTI timestamps
 * of processes on one host share a clock). Truncated files are merged as far as they
 * go and reported. Layout of the output: traces/FORMAT.md, "Merged files". */
#ifndef PTRACE_MERGE_H
#define PTRACE_MERGE_H
#include <stdio.h>

typedef struct {
    int files, truncated, skipped;  /* merged, of which cut off; not specprof traces */
    long long events;
} ptrace_merge_result;

/* Writes out_path (through out_path.part); progress and problems go to report (may be
 * NULL). Returns 0, or -1 with err (no trace file, unwritable output). */
int ptrace_merge_dir(const char *dir, const char *out_path, FILE *report,
                     ptrace_merge_result *res, char *err, size_t errlen);

#endif
