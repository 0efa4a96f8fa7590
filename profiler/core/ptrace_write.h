/* ptrace_write.h: formats specprof trace events (ptrace.h) as JSON lines
 * (traces/FORMAT.md). Pure formatting into a caller buffer: no allocation, no I/O, no
 * locks, so the CUPTI writer thread and the unit tests share one code path.
 * Each function returns the line length (excluding NUL) or -1 if cap is too small. Every
 * line ends with ",\n" except the end event, which ends with "\n]\n". */
#ifndef PTRACE_WRITE_H
#define PTRACE_WRITE_H
#include <stddef.h>
#include "ptrace.h"

/* Strings longer than this are cut (with "...") so that one event fits a 16 KiB line. */
#define PTRACE_MAX_STR 4096

int ptrace_write_open(char *buf, size_t cap);  /* "[\n" */
int ptrace_write_header(char *buf, size_t cap, const ptrace_ctx *c, const ptrace_header *h);
int ptrace_write_process_name(char *buf, size_t cap, const ptrace_ctx *c, const char *name);
int ptrace_write_thread_name(char *buf, size_t cap, const ptrace_ctx *c, int64_t tid, const char *name);
int ptrace_write_kernel(char *buf, size_t cap, const ptrace_ctx *c, const ptrace_kernel *k);
int ptrace_write_mem(char *buf, size_t cap, const ptrace_ctx *c, const ptrace_mem *m);
int ptrace_write_api(char *buf, size_t cap, const ptrace_ctx *c, const ptrace_api *a);
int ptrace_write_range(char *buf, size_t cap, const ptrace_ctx *c, const ptrace_range *r);
int ptrace_write_ncclcall(char *buf, size_t cap, const ptrace_ctx *c, const ptrace_ncclcall *n);
int ptrace_write_graphexec(char *buf, size_t cap, const ptrace_ctx *c, const ptrace_graphexec *g);
int ptrace_write_window(char *buf, size_t cap, const ptrace_ctx *c, const ptrace_window *w);
int ptrace_write_graphlaunch(char *buf, size_t cap, const ptrace_ctx *c, const ptrace_graphlaunch *g);
/* A probed graph replay: g's span and fields, end_us[0..n) (traces/FORMAT.md "Node probe"). */
int ptrace_write_graphprobe(char *buf, size_t cap, const ptrace_ctx *c, const ptrace_graphlaunch *g,
                            const float *end_us, int n);
/* A probed eager phase instance (traces/FORMAT.md "Eager probe"). */
int ptrace_write_eagerprobe(char *buf, size_t cap, const ptrace_ctx *c, const ptrace_eagerprobe *e);
int ptrace_write_end(char *buf, size_t cap, const ptrace_ctx *c, const ptrace_end *e);

/* NCCL function name for an op ("allreduce" -> "ncclAllReduce"); "nccl" + op otherwise. */
const char *ptrace_nccl_func_name(const char *op);

#endif
