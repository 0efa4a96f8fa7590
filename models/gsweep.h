/* gsweep: reads a GEMM sweep table (specbench --gemm-sweep, docs/fit.md) into the model's
 * wm_sweep, for `specsim fit --gemm-sweep FILE`. Workload: one CSV of ~10 sites x ~150 token
 * counts. */
#ifndef GSWEEP_H
#define GSWEEP_H
#include <stddef.h>
#include "wmodel.h"

/* CSV with a header naming (in any order) site, phases, per_forward, m, tokens, us (other
 * columns, e.g. preset, n, k, calls, device, are read when present: one preset and one
 * device per file). Every site must have every token count of the file; repeated
 * (site, tokens) rows are averaged. Returns 0, or -1 with "FILE: line L: field F: value V:
 * why" in err. */
int gsweep_load(wm_sweep *sw, const char *path, char *err, size_t errlen);
#endif
