/* precord.h: turns CUPTI activity buffers (kernel, memcpy, memset, runtime/driver API
 * records) into trace lines (traces/FORMAT.md), adding the NVTX range and phase of the
 * launch (pnvtx) and the NCCL call behind NCCL's GPU work (pnccl). Runs on the writer
 * thread only, except precord_note_graph_launch (any thread). */
#ifndef PRECORD_H
#define PRECORD_H
#include <stddef.h>
#include <stdint.h>
#include "pnccl.h"
#include "pnvtx.h"
#include "ptrace.h"

typedef void (*precord_emit_fn)(void *user, const char *line, int n);

typedef struct {
    int64_t records;       /* lines written */
    int64_t nccl_matched;  /* GPU records that carry an nccl object */
    int64_t unknown;       /* records of kinds we do not write */
    int64_t incomplete;    /* GPU records without valid times (forced flush mid-kernel) */
    int64_t graph_trace;   /* graph-level launch records written (of records) */
    int64_t calib_dropped; /* records of specprof's own calibration, not written */
    /* correlation ids written are CUPTI's plus corr_base (set when CUPTI is attached again,
     * which may count from 1 again), so that they stay unique in the trace; corr_max: the
     * largest written */
    uint32_t corr_base, corr_max;
} precord_stats;

/* Kernel records of this name (pcalib.h's kernel) are specprof's own: dropped. */
#define PRECORD_CALIB_KERNEL "specprof_calib"

/* Parses one completed buffer and emits its lines. */
void precord_buffer(uint8_t *buf, size_t valid_bytes, const ptrace_ctx *ctx, pnvtx *nvtx,
                    pnccl_map *nccl, precord_emit_fn emit, void *user, precord_stats *st);

/* A graph launch API was entered with this correlation id (callback thread; lock-free). */
void precord_note_graph_launch(uint32_t corr, uint32_t graph_exec_id);
/* Forgets the graph launches noted so far (CUPTI attached again: its ids may repeat). */
void precord_forget_launches(void);
/* API records of this OS thread (specprof's calibrating control thread) are dropped. */
void precord_skip_thread(int64_t tid);
/* Graph-level records on this CUPTI stream id (the calibration's) are dropped. */
void precord_skip_stream(uint32_t stream_id);

/* Demangled kernel name (cached); the mangled name when no demangler is loaded. */
const char *precord_demangle(const char *mangled);

#endif
