/* pclean.h: the launch calibration's clean arm. specprof's in-process calibration (pcalib.c)
 * compares launches with recording on and off inside the profiled process, and an attached
 * CUPTI costs the off arm too (H100 calls 25 and 26: 0.53-0.63 us read where a process
 * without CUPTI launched 1.8-2.4 us faster, docs/profiler.md "The calibration's blind spot").
 * So the specprof command times the same empty kernel's launch the same way (PCALIB_WARM
 * untimed, PCALIB_LAUNCHES timed, the median) in a child process with no CUPTI before it
 * starts the program, and hands it over (SPECPROF_CLEAN_LAUNCH_US) for the trace's
 * calibration (`launch_clean_us`). Driver API by dlopen of libcuda.so.1: no CUDA at build. */
#ifndef PCLEAN_H
#define PCLEAN_H
#include <stddef.h>

/* The median launch time in us of an empty kernel on device 0 (as the program sees the devices)
 * in a child process without CUPTI, at most timeout_s; > 0, or -1 with why (a sentence).
 * *swept_us: the same with host work between the launches (pcalib_ptx.h's swept arm; handed
 * over as SPECPROF_CLEAN_SWEPT_US), 0 when not measured. */
double pclean_launch_us(double timeout_s, double *swept_us, char *why, size_t whylen);

#endif
