/* scale: moves a workload model fitted from one model shape, tensor-parallel size and
 * weight format (an LLM preset: the traced one) to another (the target preset): per-layer
 * kernel groups multiply with the layer count of their kind (every, dense, MoE layer),
 * GEMMs with one rank's weights as TP splits them, attention with the rank's heads and KV
 * bytes, routed experts' memory terms with their bits per weight; the target's all-reduces
 * (2 per layer of tokens x hidden x 2 B) and LM-head all-gather are written as collectives
 * for the simulator's link model. Each scaled group's factors and their uncertainty go into
 * its `source` (docs/scale.md). Workload: one model of tens of groups, scaled once. */
#ifndef SCALE_H
#define SCALE_H
#include <stdio.h>
#include <stddef.h>
#include "wmodel.h"
#include "llmshape.h"

/* Relative uncertainty (1-sd-like half-width) of each kind of scaled term; a term moved by
 * several takes the root sum of squares. Sources in docs/scale.md. */
#define SCALE_UNC_LAYER   0.03  /* per-layer replication: specbench's layers are identical;
                                   3% = the median error of make validate's held-out
                                   predictions (docs/validation.md), until
                                   profiler/device/scale_check.sh measures it */
#define SCALE_UNC_GEMM    0.12  /* a GEMM of another shape: rms residual of cost = 3.2 us +
                                   bytes / 4081 GB/s over the 25 GEMM shapes of the committed
                                   H200 sweeps at 1 token (traces/calib/gemm_*.csv; max 31%) */
#define SCALE_UNC_BITS    0.40  /* weights in another format (int4, fp8): no such kernel
                                   was measured here; a dequantizing kernel reaches another
                                   fraction of the bandwidth than the traced bf16 one */
#define SCALE_UNC_WIDTH   0.20  /* an element-wise kernel over wider or narrower rows */
#define SCALE_UNC_MLA     0.30  /* MLA priced from specbench's GQA stand-in kernels */
#define SCALE_UNC_WAVE    0.50  /* the expert GEMM's waves: another kernel tiles otherwise */
#define SCALE_UNC_OTHER   0.50  /* a kernel the kind table does not know */
/* The per-call floor of a cuBLAS GEMM on the traced GPU: the intercept of the same fit
 * (relative least squares, 25 shapes, H200: 3.19 us + bytes / 4081 GB/s). The floor is
 * kept per call; only the part above it scales with the weights. */
#define SCALE_GEMM_FLOOR_US 3.2
#define SCALE_GEMM_BW_GBPS  4081.0

/* Kernel kinds (scale_kind_name): gemm, expert-gemm, attention, rope, norm, activation,
 * moe-token, embedding, sampling, small, copies, gpu-idle, unknown. */
#define SCALE_NKINDS 13

typedef struct {
    llm_shape from;            /* the traced shape (e.g. models/presets/specbench-kimi-tp8) */
    llm_shape to;              /* the target (e.g. models/presets/kimi-k2.5) */
    int    tp_from;            /* TP size the traced rank was cut for */
    int    tp_to;              /* TP size the result's rank is cut for */
    int    ranks_from;         /* processes of the traced run (the model's `ranks`) */
    int    ranks_to;           /* processes of the result (its `ranks`): tp_to for a real
                                  TP run; fewer (1) for one rank run alone, as specbench
                                  --gpus 1 does: no collectives, the LM head's shard only */
    double attn_x[WM_NPHASE];  /* multiplies the attention groups of each phase (a slower
                                  attention backend); 1: none */
    double kind_x[SCALE_NKINDS];   /* multiplies every group of a kind (scale_kind_find), in
                                      every phase (another kernel for it); 1: none */
    unsigned eager_phases;     /* bit p: phase p never runs from a CUDA graph */
    double host_add_us[WM_NPHASE]; /* added to each phase's host gap (a slower host: Python
                                      scheduling, a sync); 0: none */
    int    bound;              /* 0: nominal; -1 / +1: every scaled term at the low / high
                                  end of its uncertainty (all the same way: a worst case) */
} scale_opts;

/* Sets o to no change (tp 1, factors 1); from/to must be filled by the caller. */
void scale_opts_init(scale_opts *o);

typedef struct {
    int  groups_scaled;        /* groups whose cost changed */
    int  groups_same;          /* groups left as they were (nothing of theirs changed) */
    int  groups_unknown;       /* groups of no known kernel kind (scaled by layers only) */
    char unknown[256];         /* their names, comma-separated (cut) */
    int  sites_scaled, sites_unknown;   /* GEMM-sweep sites */
} scale_summary;

/* Scales m (caller-owned) in place from o->from at o->tp_from to o->to at o->tp_to: every
 * group's terms, counts and source, the GEMM sweep's sites, the collectives, ranks, MoE
 * shape, name and source. Fills s if not NULL. 0, or -1 with err (shapes that cannot be
 * scaled: dense <-> MoE, a TP size that does not divide the heads, a model whose MoE shape
 * is not the traced preset's). */
int scale_model(wm_model *m, const scale_opts *o, scale_summary *s, char *err, size_t errlen);

/* The kernel kind scale gives a group name ("gemm", "attention", "norm", ...). */
const char *scale_kind_name(const char *group);
/* Index of a kind name (0..SCALE_NKINDS-1), or -1; and the name of an index. */
int scale_kind_find(const char *kind);
const char *scale_kind_label(int kind);

/* Per phase, GPU time per forward (KV 0 and KV 1024 tokens per row at 1 query token per
 * row) at a few token counts: before, after, and after at the low/high ends (lo, hi: the
 * model scaled with bound -1/+1; NULL: no band). */
void scale_report(FILE *out, const wm_model *before, const wm_model *after, const wm_model *lo,
                  const wm_model *hi);

/* `specsim scale MODEL.json --llm TO --from FROM [--tp N] ... -o OUT.json` (scalecmd.c). */
int scalecmd_main(int argc, char **argv);
#endif
