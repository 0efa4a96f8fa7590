/* pdevice.h: device facts for the trace header (name, SMs, clocks, memory, L2, PCI id,
 * driver/runtime/NCCL versions, peer links), read through libcuda's driver API found
 * with dlsym, so that libspecprof.so links neither libcuda nor libcudart. */
#ifndef PDEVICE_H
#define PDEVICE_H
#include "ptrace.h"

/* Fills h->device, h->peers and the version fields for device ordinal dev. Fields it
 * cannot read stay 0 / "". Returns 0, or -1 when libcuda's entry points are not found. */
int pdevice_fill(ptrace_header *h, int dev);

#endif
