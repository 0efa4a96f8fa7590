/* pnccl.h: matches NCCL calls to the GPU work they launch, so that kernel (and memcpy)
 * records carry the call's op, dtype, count and bytes.
 * Eager: while an NCCL call is open on a thread, each launch API on that thread (by its
 * CUPTI correlation id) belongs to the call. Graphs: inside stream capture ncclAllReduce
 * adds graph nodes instead, and replays never call NCCL again, so nodes created on the
 * thread while the call is open belong to it; cudaGraphInstantiate clones them and the
 * executed node's graphNodeId is the clone's, so clones inherit the mapping.
 * Groups: calls between ncclGroupStart and ncclGroupEnd launch at the outermost
 * ncclGroupEnd, as one fused launch: they are merged into one entry (group_ops = n).
 * Workload: a few NCCL calls per layer per forward (10^2..10^4 per second), graph
 * instantiation clones 10^3..10^5 nodes once; lookups once per GPU record. */
#ifndef PNCCL_H
#define PNCCL_H
#include <stddef.h>
#include <stdint.h>
#include "ptrace.h"

/* Per host thread; caller-owned (thread-local in the injection library). */
typedef struct {
    int depth;            /* ncclGroupStart nesting */
    int open;             /* launches on this thread now belong to `cur` */
    ptrace_nccl cur;
    int pending;          /* calls queued inside the current group */
    ptrace_nccl group;    /* their merge */
} pnccl_thread;

void pnccl_thread_init(pnccl_thread *t);
void pnccl_call_enter(pnccl_thread *t, const ptrace_nccl *c);  /* before the real call */
void pnccl_call_exit(pnccl_thread *t);                         /* after it returned */
void pnccl_group_start(pnccl_thread *t);
void pnccl_group_end_enter(pnccl_thread *t);                   /* before the real ncclGroupEnd */
void pnccl_group_end_exit(pnccl_thread *t);
/* The call owning launches on this thread now, or NULL. */
const ptrace_nccl *pnccl_thread_current(const pnccl_thread *t);

/* Fills op/redop/dtype names and bytes from NCCL's enum values (nccl.h 2.28: ncclSum=0..
 * ncclAvg=4, ncclInt8=0..ncclFloat8e5m2=11). Returns 0, or -1 for an unknown dtype
 * (dtype "unknown", bytes 0). */
int pnccl_describe(ptrace_nccl *c, const char *op, int redop, int dtype, uint64_t count);
/* Bytes per element of an NCCL dtype enum value, 0 if unknown. */
int pnccl_dtype_bytes(int dtype);

typedef struct {
    int64_t corr_added, nodes_added, clones_added, found, full;
    int64_t nodes_live, calls_kept;
} pnccl_stats;

/* Shared by all threads (has its own lock). Created with 2^corr_log2 eager slots and
 * 2^node_log2 graph-node slots; destroy accepts NULL. */
typedef struct pnccl_map pnccl_map;
pnccl_map *pnccl_map_create(unsigned corr_log2, unsigned node_log2);
void pnccl_map_destroy(pnccl_map *m);
/* An eager launch with correlation id corr happened while c was open. */
void pnccl_map_add_corr(pnccl_map *m, uint32_t corr, const ptrace_nccl *c);
/* A graph node was created while c was open. 0, or -1 when the table is full. */
int pnccl_map_add_node(pnccl_map *m, uint64_t node_id, const ptrace_nccl *c);
/* Node orig was cloned into clone: 1 if orig belonged to a call (clone now does too),
 * 0 if not, -1 when full. */
int pnccl_map_clone_node(pnccl_map *m, uint64_t orig_id, uint64_t clone_id);
/* A node is destroyed: forget it. */
void pnccl_map_forget_node(pnccl_map *m, uint64_t node_id);
/* Forgets every launch correlation id (CUPTI attached again: its ids may repeat). */
void pnccl_map_forget_corrs(pnccl_map *m);
/* The call behind a GPU record: by graph node when node_id != 0, else by corr.
 * 1 and *out, or 0 when none. */
int pnccl_map_find(pnccl_map *m, uint32_t corr, uint64_t node_id, ptrace_nccl *out);
void pnccl_map_stats(pnccl_map *m, pnccl_stats *s);

#endif
