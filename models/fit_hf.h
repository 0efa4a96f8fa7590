/* fit_hf: the fit of the hf-assisted loop (Hugging Face transformers' generate with an
 * assistant_model, annotated by specprof_torch; docs/fit.md "The hf-assisted loop"). The loop
 * is host-bound (Python per op: an eager forward's host time is ~10x its GPU time), so every
 * phase's cost is what its NVTX ranges and the stretches between them last on the host, per
 * kernel launched there, and the GPU time of the same kernels. Workload: specprof traces of
 * batch-1 generates (plain and assisted), windowed or not, a few hundred ranges each. */
#ifndef FIT_HF_H
#define FIT_HF_H
#include <stdio.h>
#include <stddef.h>
#include "fit.h"
#include "wmodel.h"

/* One kind of stretch the fit measures (a forward, or the host work between two forwards),
 * over every trace: instances, median host time, median kernels, median GPU time, the
 * host time's quartiles. */
typedef struct {
    const char *what;          /* "decode forward", "decode -> decode", ... */
    int    n;
    double host_us, kernels, gpu_us, host_q1_us, host_q3_us;
} fit_hf_stat;

enum {
    FIT_HF_DECODE, FIT_HF_DECODE_GAP,     /* target forward of plain decode; the host between */
    FIT_HF_VERIFY, FIT_HF_VERIFY_GAP,     /* target verify; the host after the last draft */
    FIT_HF_CATCHUP,                       /* the draft's first forward of a round */
    FIT_HF_ACCEPT_GAP, FIT_HF_REJECT_GAP, /* verify -> catch-up: all accepted; one rejected */
    FIT_HF_DRAFT, FIT_HF_DRAFT_GAP,       /* the other draft forwards; the host before each */
    FIT_HF_NSTAT
};

typedef struct {
    fit_hf_stat st[FIT_HF_NSTAT];
    int    ranges, skipped;     /* helper ranges read; left out (outside a window, cut) */
    double verify_tokens_max;
    int    level_runs;          /* runs of the host (a generate inside a window) */
    double level_sd, within_sd; /* the host's log speed between and within them; 0: not fitted */
} fit_hf_report;

/* Fits the hf-assisted model from nt traces into *m (wm_init'ed here; name given or
 * "hf-assisted-<device>"). Needs decode, verify and draft ranges in specprof_torch's words
 * (decode/verify/draft/prefill/draft_prefill tokens=..). 0, or -1 with err naming the trace
 * and what is missing. Warnings (one line each) to log when not NULL. */
int fit_hf_run(const fit_trace *tr, int nt, const char *name, FILE *log, wm_model *m,
               fit_hf_report *rep, char *err, size_t errlen);
/* The report as a table with a units row (specsim fit prints it). */
void fit_hf_print(FILE *f, const fit_hf_report *rep);
#endif
