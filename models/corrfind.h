/* corrfind: the first record of a CUDA correlation id in an array sorted by it. GPU records
 * carry the id of the launch call that made them (a graph launch's kernels share its id); the
 * fit (fit_instances.c) and the graph-cycle namer (gcycle.c) join them to their calls through
 * arrays of their own record type sorted by (id, time) and want the earliest call of an id: a
 * lower bound, which bsearch does not promise. Workload: 10^3..10^6 calls, one search per GPU
 * record. */
#ifndef CORRFIND_H
#define CORRFIND_H
#include <stddef.h>
#include <stdint.h>

/* base: n records of stride bytes, sorted by the uint32_t correlation id at byte offset off of
 * each (ties in the caller's order). The first record whose id is corr, or NULL. */
const void *corrfind_first(const void *base, size_t n, size_t stride, size_t off, uint32_t corr);
#endif
