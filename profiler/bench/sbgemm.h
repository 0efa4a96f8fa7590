/* sbgemm: the GEMM sweep of specbench (--gemm-sweep): every cuBLAS GEMM shape of a preset's
 * target layer, LM head and EAGLE-3 head, timed alone at each token count of a list, so that
 * `specsim fit --gemm-sweep` can price a GEMM at token counts no captured configuration ran
 * (cuBLAS picks its kernel per size: the cost is not a smooth function of the tokens).
 * Workload: ~10 shapes x ~150 token counts, a few seconds per preset. */
#ifndef SBGEMM_H
#define SBGEMM_H
#include "sbmodel.h"
#include <vector>

/* Times sb_gemm for every shape of sh (one rank's share) at every token count of tokens
 * and appends rows "preset,site,phases,per_forward,m,n,k,tokens,us,calls,device" to csv
 * (header written when the file is new; phases: the NVTX phases whose forwards call the
 * GEMM, ';'-separated; per_forward: calls per forward; m: "tokens", or "rows" for an LM
 * head over one token per row). Each point: one CUDA graph of `calls` GEMMs over rotating weight copies
 * (together at least 4x the L2 cache: weights stream from memory as in a forward), replayed
 * once to warm up and 3 times timed with CUDA events; us = per GEMM. A MoE preset adds
 * its two grouped expert GEMMs (moe_gu, moe_down: sbmoe.cu's k_moe_gemm), averaged over 8
 * random routings per token count. After each point the GPU idles rest x the point's time
 * (0: none), so that large GEMMs are not timed at the clocks of a GPU held at its power
 * limit by the sweep itself (docs/specbench.md). Exits on CUDA errors
 * (sbcheck.h); returns 0, or 1 when csv cannot be written. */
int sb_gemm_sweep(const sb_shape *sh, const char *preset, const std::vector<int> &tokens,
                  const char *csv, double rest, int quiet);
#endif
