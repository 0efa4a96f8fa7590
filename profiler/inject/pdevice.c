/* pdevice.c: device facts through the driver API (see pdevice.h). Called once per
 * process from the writer thread, after the first context exists. */
#include "pdevice.h"
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

typedef CUresult (*pd_get_attr_fn)(int *, CUdevice_attribute, CUdevice);
typedef CUresult (*pd_get_fn)(CUdevice *, int);
typedef CUresult (*pd_count_fn)(int *);
typedef CUresult (*pd_name_fn)(char *, int, CUdevice);
typedef CUresult (*pd_mem_fn)(size_t *, CUdevice);
typedef CUresult (*pd_ver_fn)(int *);
typedef CUresult (*pd_pci_fn)(char *, int, CUdevice);
typedef CUresult (*pd_peer_fn)(int *, CUdevice, CUdevice);
typedef CUresult (*pd_p2p_fn)(int *, CUdevice_P2PAttribute, CUdevice, CUdevice);
typedef int (*pd_rtver_fn)(int *);
typedef int (*pd_ncclver_fn)(int *);

static void *pd_sym(void *h, const char *name) {
    void *p = h ? dlsym(h, name) : NULL;
    return p ? p : dlsym(RTLD_DEFAULT, name);
}

/* A symbol of a library the program already loaded, also when it was loaded RTLD_LOCAL
 * (python extension modules); never loads anything. The handle stays referenced. */
static void *pd_loaded_sym(const char *name, const char *lib1, const char *lib2) {
    void *p = dlsym(RTLD_DEFAULT, name);
    const char *libs[2] = { lib1, lib2 };
    for (int i = 0; !p && i < 2; i++) {
        void *h = libs[i] ? dlopen(libs[i], RTLD_LAZY | RTLD_NOLOAD) : NULL;
        if (h) p = dlsym(h, name);
    }
    return p;
}

int pdevice_fill(ptrace_header *h, int dev) {
    void *cu = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    pd_get_attr_fn get_attr = (pd_get_attr_fn)pd_sym(cu, "cuDeviceGetAttribute");
    pd_get_fn get = (pd_get_fn)pd_sym(cu, "cuDeviceGet");
    pd_count_fn count = (pd_count_fn)pd_sym(cu, "cuDeviceGetCount");
    pd_name_fn name = (pd_name_fn)pd_sym(cu, "cuDeviceGetName");
    pd_mem_fn mem = (pd_mem_fn)pd_sym(cu, "cuDeviceTotalMem_v2");
    pd_ver_fn drv = (pd_ver_fn)pd_sym(cu, "cuDriverGetVersion");
    pd_pci_fn pci = (pd_pci_fn)pd_sym(cu, "cuDeviceGetPCIBusId");
    pd_peer_fn peer = (pd_peer_fn)pd_sym(cu, "cuDeviceCanAccessPeer");
    pd_p2p_fn p2p = (pd_p2p_fn)pd_sym(cu, "cuDeviceGetP2PAttribute");
    /* these two are only there when the program loaded them (a statically linked cudart
     * does not export its symbols: then the runtime version stays 0) */
    pd_rtver_fn rtver = (pd_rtver_fn)pd_loaded_sym("cudaRuntimeGetVersion", "libcudart.so.13", "libcudart.so.12");
    pd_ncclver_fn ncclver = (pd_ncclver_fn)pd_loaded_sym("ncclGetVersion", "libnccl.so.2", NULL);
    int v = 0;
    if (rtver && rtver(&v) == 0) h->cuda_runtime_version = v;
    v = 0;
    if (ncclver && ncclver(&v) == 0) h->nccl_version = v;
    if (!get_attr || !get) { if (cu) dlclose(cu); return -1; }
    if (drv && drv(&v) == CUDA_SUCCESS) h->cuda_driver_version = v;
    CUdevice d;
    if (get(&d, dev) != CUDA_SUCCESS) { if (cu) dlclose(cu); return -1; }
    h->device.index = dev;
    if (name) name(h->device.name, (int)sizeof h->device.name, d);
    size_t bytes = 0;
    if (mem && mem(&bytes, d) == CUDA_SUCCESS) h->device.mem_bytes = (int64_t)bytes;
    int a;
#define PD_ATTR(field, attr) do { a = 0; if (get_attr(&a, attr, d) == CUDA_SUCCESS) h->device.field = a; } while (0)
    PD_ATTR(sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    PD_ATTR(clock_khz, CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
    PD_ATTR(mem_clock_khz, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
    PD_ATTR(mem_bus_bits, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
    PD_ATTR(l2_bytes, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
    PD_ATTR(cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    PD_ATTR(cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
#undef PD_ATTR
    if (pci) pci(h->device.pci_bus_id, (int)sizeof h->device.pci_bus_id, d);
    int n = 0;
    if (count && count(&n) == CUDA_SUCCESS && peer) {
        for (int o = 0; o < n && h->n_peers < PTRACE_MAX_PEERS; o++) {
            if (o == dev) continue;
            CUdevice od;
            if (get(&od, o) != CUDA_SUCCESS) continue;
            ptrace_peer *p = &h->peers[h->n_peers++];
            memset(p, 0, sizeof *p);
            p->peer_dev = o;
            peer(&p->access, d, od);
            if (p2p) {
                p2p(&p->native_atomics, CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED, d, od);
                p2p(&p->perf_rank, CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK, d, od);
            }
        }
    }
    if (cu) dlclose(cu);
    return 0;
}
