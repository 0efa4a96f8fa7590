/* carry: moves a workload model fitted on one GPU to another by roofline scaling, with the
 * change and its uncertainty stated: weight-, expert- and KV-reading terms scale with memory
 * bandwidth, the per-token term above the knee with tensor FLOP/s, the knee with the ridge
 * point, latency-bound kernels, GPU idle, host gaps and launch costs not at all. Hardware
 * comes from models/presets/<name>.json (docs/fit.md, "Carrying a model"). */
#ifndef CARRY_H
#define CARRY_H
#include <stdio.h>
#include <stddef.h>
#include "wmodel.h"

typedef struct {
    char   name[64];              /* preset name ("h200-sxm") */
    char   gpu[128];              /* "NVIDIA H200 SXM" */
    char   match[4][64];          /* substrings of a trace's device name that select it */
    int    nmatch;
    double mem_bw_gbps;           /* datasheet memory bandwidth */
    double bf16_tflops;           /* datasheet dense BF16 tensor FLOP/s */
    int    sms;                   /* streaming multiprocessors (0: not in the preset) */
    char   path[256];             /* the preset file */
} carry_hw;

/* Loads a hardware preset: a path (contains '/' or ends in .json) or a name looked up as
 * DIR/<name>.json with DIR = $SPECSIM_PRESETS or models/presets. 0 or -1 with err. */
int carry_hw_load(carry_hw *h, const char *name, char *err, size_t errlen);
/* The preset whose "match" strings occur in device (a trace's GPU name). 0 or -1. */
int carry_hw_for_device(carry_hw *h, const char *device, char *err, size_t errlen);
/* Both ends of a carry, for --carry-to/--carry-from: from the preset `from` (NULL: the one
 * matching device) to `to`. 0 or -1 with err naming the flag ("field --carry-to: ..."). */
int carry_hw_ends(carry_hw *from_hw, carry_hw *to_hw, const char *device, const char *from, const char *to,
                  char *err, size_t errlen);

/* Relative uncertainty of each kind of term once carried (1 sd-like half-width):
 * the fraction of peak a kernel reaches differs between GPUs. */
#define CARRY_UNC_BW       0.10  /* measured copy efficiency: 90% of 4.8 TB/s on the H200
                                    (shared/FACTS.md); GDDR7 boards unmeasured here */
#define CARRY_UNC_FLOPS    0.20  /* measured GEMM efficiency: 78-81% of 989 TFLOP/s on the
                                    H200 (shared/FACTS.md); other shapes and tensor-core
                                    generations differ more */
#define CARRY_UNC_LATENCY  0.50  /* kernels under CARRY_LATENCY_US per launch: launch and
                                    scheduling bound, not roofline; kept as measured */
#define CARRY_LATENCY_US   4.0   /* per launch: a kernel this short is latency-bound (a few us
                                    of launch + ramp on Hopper-class GPUs: the smallest
                                    kernels in specbench traces) */

typedef struct {
    double bw_factor;             /* multiplies memory-bound terms: bw_from / bw_to */
    double flops_factor;          /* multiplies compute-bound terms: flops_from / flops_to */
    double knee_factor;           /* multiplies knees: ridge_to / ridge_from */
    double sm_factor;             /* multiplies wave capacities: sms_to / sms_from (1 when a
                                     preset lacks sms) */
    int    groups_memory, groups_latency, groups_kept;  /* how groups were treated */
} carry_factors;

/* Scales m (caller-owned) from `from` to `to`; renames it, sets device and appends the
 * change to source; marks the groups whose base it kept (latency_bound) and sets m->unc
 * to the CARRY_UNC_* above (in quadrature with what m already had). Fills f if not NULL.
 * 0, or -1 with err (bad preset numbers). */
int carry_model(wm_model *m, const carry_hw *from, const carry_hw *to, carry_factors *f,
                char *err, size_t errlen);

/* Adds group g's cost for one forward at (tokens, kv, q query tokens per row) to *mem
 * (bases of groups not latency_bound, experts, KV, waves, GEMM sweep), *comp (per-token
 * slopes) and *lat (bases of latency_bound groups): the kinds of m->unc. */
void carry_split(const wm_model *m, const wm_group *g, double tokens, double kv, double q,
                 double *mem, double *comp, double *lat);

/* Writes a table to out: per phase, GPU time per forward at a few token counts before and
 * after, with the low/high band from the CARRY_UNC_* above. */
void carry_report(FILE *out, const wm_model *before, const wm_model *after);
#endif
