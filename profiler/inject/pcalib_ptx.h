/* pcalib_ptx.h: the empty kernel both launch calibrations time (pcalib.c inside the profiled
 * process, pclean.c in a process without CUPTI): PTX ISA 7.0 (CUDA 11.0, every driver since)
 * for sm_50 and up, JIT-compiled by the driver for whatever GPU this is. NAME: its entry. */
#ifndef PCALIB_PTX_H
#define PCALIB_PTX_H
#define PCALIB_PTX(NAME) ".version 7.0\n.target sm_50\n.address_size 64\n" \
                         ".visible .entry " NAME "()\n{\n\tret;\n}\n"
#define PCALIB_WARM 10       /* untimed launches first */
#define PCALIB_SYNC_EVERY 50 /* the stream synchronized after so many: the queue stays short */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

/* The clock both calibrations time launches with (ns). */
static inline int64_t pcalib_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static inline int pcalib_cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The median of t[0..n) ns in us (t is sorted). */
static inline double pcalib_median_us(int64_t *t, size_t n) {
    qsort(t, n, sizeof t[0], pcalib_cmp_i64);
    return (double)t[n / 2] / 1e3;
}

/* The swept arms (ptrace_calib launch_*_swept_us): each timed launch followed, untimed, by
 * PCALIB_SWEEP_GAP_US of host work that reads and writes a PCALIB_SWEEP_BYTES buffer, as an
 * interpreter between two launches evicts what the launch path had in the caches (an eager
 * PyTorch loop launches a kernel every ~15 us: torchbench, docs/profiler.md). The back-to-back
 * arms keep the launch path in the caches and read a fraction of what such a program pays. */
#define PCALIB_SWEEP_BYTES ((size_t)8 << 20)
#define PCALIB_SWEEP_GAP_US 15.0
/* gap_ns of that work on buf from *pos on (the walk carries over); now: the caller's clock in
 * ns. Returns a value the caller keeps so that the work is not optimized away. */
static inline unsigned pcalib_sweep(unsigned char *buf, size_t *pos, int64_t gap_ns, int64_t (*now)(void)) {
    int64_t until = now() + gap_ns;
    unsigned acc = 0;
    size_t p = *pos;
    while (now() < until)
        for (int j = 0; j < 64; j++, p = (p + 4096 + 64) % PCALIB_SWEEP_BYTES) {
            acc += buf[p];
            buf[p] = (unsigned char)acc;
        }
    *pos = p;
    return acc;
}
#endif
