/* pinject.h: state shared by the parts of libspecprof.so (CUPTI injection library):
 * pinject.c (entry points, CUPTI callbacks, the control/writer thread, signals),
 * precord.c (CUPTI activity records -> trace lines), pdevice.c (device facts),
 * pncclshim.c (the NCCL interposer). Everything here is internal to the library. */
#ifndef PINJECT_H
#define PINJECT_H
#include <stdint.h>
#include <stddef.h>
#include "pnccl.h"
#include "pnvtx.h"
#include "ptrace.h"

/* Per host thread (thread-local): NVTX stack and the NCCL call open on the thread. */
typedef struct {
    pnvtx_stack nvtx;
    pnccl_thread nccl;
    int64_t tid;
    int calib;                 /* specprof's calibration runs on this thread: its graphs are not the program's */
    int cap_depth, captures;   /* graph-capture API calls open, captures begun on this thread */
} pinject_tls;

pinject_tls *pinject_thread(void);

/* 1 while recording: CUPTI attached, capture window open, not in a forked child. */
int pinject_capturing(void);
/* 1 while host events (NVTX ranges, NCCL calls) are written: capturing and inside a
 * node-level window (or in always mode). */
int pinject_recording(void);
/* 1 when CUPTI is attached (callbacks on), whether or not the window is open. */
int pinject_attached(void);
/* 1 while CUPTI is attached to the process (not detached between windows, --between
 * detach): only then may CUPTI be called (any CUPTI call attaches it again). */
int pinject_cupti_live(void);
/* A program thread's CUPTI calls outside a CUPTI callback: 1 when CUPTI may be called now,
 * and it stays attached until pinject_cupti_release (a detach under way waits for it);
 * 0: do not call CUPTI (and do not release). */
int pinject_cupti_hold(void);
void pinject_cupti_release(void);
/* CUPTI's clock now (ns), read without calling CUPTI (CLOCK_MONOTONIC plus the offset
 * measured while attached). */
int64_t pinject_now_ns(void);
/* The formatting context (pid = rank, t0) of the open capture. */
const ptrace_ctx *pinject_ctx(void);
/* Queues a copy of one NCCL call for the writer thread (formatted there); counted as
 * dropped when the bounded queue is full. */
void pinject_host_nccl(const ptrace_ncclcall *n);

/* Lite mode (plite.c): starts the engine without CUPTI at the first interposed CUDA call. */
void pinject_lite_begin(void);
/* 1 in lite mode (no CUPTI call may be made). */
int pinject_lite(void);

/* Graph nodes CUPTI has reported created so far (all kinds, whole process). */
int64_t pinject_graph_nodes_seen(void);

pnvtx *pinject_nvtx(void);
pnccl_map *pinject_nccl(void);
/* Next NCCL call sequence number (from 1). */
uint32_t pinject_nccl_seq(void);
void pinject_nccl_called(void);

/* Prints "specprof: pid P: <msg>" on stderr and appends it to DIR/specprof.pid<P>.note. */
void pinject_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
