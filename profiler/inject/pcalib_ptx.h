/* pcalib_ptx.h: the empty kernel both launch calibrations time (pcalib.c inside the profiled
 * process, pclean.c in a process without CUPTI): PTX ISA 7.0 (CUDA 11.0, every driver since)
 * for sm_50 and up, JIT-compiled by the driver for whatever GPU this is. NAME: its entry. */
#ifndef PCALIB_PTX_H
#define PCALIB_PTX_H
#define PCALIB_PTX(NAME) ".version 7.0\n.target sm_50\n.address_size 64\n" \
                         ".visible .entry " NAME "()\n{\n\tret;\n}\n"
#define PCALIB_WARM 10       /* untimed launches first */
#define PCALIB_SYNC_EVERY 50 /* the stream synchronized after so many: the queue stays short */
#endif
