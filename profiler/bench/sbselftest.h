/* sbselftest: specbench --check. Runs on the GPU, on a model of the preset's per-layer
 * shapes (2 layers, small capacity): cuBLAS GEMM and the attention and MoE kernels
 * against CPU references (double accumulation over the same bf16 inputs), MoE routing
 * invariants, poisoned buffers (NaN pattern before each phase, every element read later
 * must have been written), and CUDA-graph replay against eager execution. */
#ifndef SBSELFTEST_H
#define SBSELFTEST_H
#include "sbmodel.h"

/* Prints one line per check; returns the number of failed checks. The model must have
 * rows_max >= 4, qlen_max >= 4 and max_ctx >= 1024. */
int sb_selftest(sb_model *m);
#endif
