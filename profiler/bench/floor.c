/* floor.c: libfloor.so, the least an always-on CUPTI tracer can cost: a bare injection
 * library (CUDA_INJECTION64_PATH) that subscribes, enables kernel activity only and
 * drops every record after counting it. docs/profiler.md measures specprof against it.
 * Knobs (environment), to take the cost apart on the same loop:
 *   FLOOR_API=1     also every runtime API activity record (CUPTI_ACTIVITY_KIND_RUNTIME)
 *   FLOOR_CB=1      also an empty callback on every runtime API (the callback domain)
 *   FLOOR_KERNEL=0  no kernel activity (subscriber only, or API records/callbacks alone)
 *   FLOOR_OUT=FILE  append "records <n> kernel <k> api <a> dropped <d>" at exit
 * Buffers: 8 MiB from malloc, freed when CUPTI hands them back; no flush thread (CUPTI
 * completes a buffer when it is full), so nothing runs per record on any thread but the
 * count. Workload: ~10^4-10^6 records/s. */
#include <cupti.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#define FLOOR_BUF_BYTES ((size_t)8 << 20)

static atomic_llong floor_records, floor_kernels, floor_api, floor_dropped;
static CUpti_SubscriberHandle floor_sub;

static void CUPTIAPI floor_request(uint8_t **buf, size_t *size, size_t *max_records) {
    *buf = aligned_alloc(8, FLOOR_BUF_BYTES);
    *size = *buf ? FLOOR_BUF_BYTES : 0;
    *max_records = 0;
}

static void CUPTIAPI floor_complete(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size, size_t valid) {
    (void)size;
    CUpti_Activity *r = NULL;
    long long n = 0, k = 0, a = 0;
    while (buf && cuptiActivityGetNextRecord(buf, valid, &r) == CUPTI_SUCCESS) {
        n++;
        k += r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
        a += r->kind == CUPTI_ACTIVITY_KIND_RUNTIME;
    }
    size_t d = 0;
    if (cuptiActivityGetNumDroppedRecords(ctx, stream, &d) == CUPTI_SUCCESS) atomic_fetch_add(&floor_dropped, (long long)d);
    atomic_fetch_add(&floor_records, n);
    atomic_fetch_add(&floor_kernels, k);
    atomic_fetch_add(&floor_api, a);
    free(buf);
}

static void CUPTIAPI floor_callback(void *ud, CUpti_CallbackDomain dom, CUpti_CallbackId cbid, const void *data) {
    (void)ud; (void)dom; (void)cbid; (void)data;
}

static int floor_env(const char *name, int dflt) {
    const char *v = getenv(name);
    return v && *v ? atoi(v) : dflt;
}

static void floor_exit(void) {
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    const char *out = getenv("FLOOR_OUT");
    FILE *f = out && *out ? fopen(out, "a") : stderr;
    if (!f) return;
    fprintf(f, "records %lld kernel %lld api %lld dropped %lld\n", (long long)atomic_load(&floor_records),
            (long long)atomic_load(&floor_kernels), (long long)atomic_load(&floor_api), (long long)atomic_load(&floor_dropped));
    if (f != stderr) fclose(f);
}

__attribute__((visibility("default"))) int InitializeInjection(void) {
    if (cuptiSubscribe(&floor_sub, (CUpti_CallbackFunc)floor_callback, NULL) != CUPTI_SUCCESS) {
        fprintf(stderr, "libfloor: cuptiSubscribe failed (another CUPTI client?): nothing traced\n");
        return 1;
    }
    if (cuptiActivityRegisterCallbacks(floor_request, floor_complete) != CUPTI_SUCCESS) return 1;
    if (floor_env("FLOOR_KERNEL", 1)) cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    if (floor_env("FLOOR_API", 0)) cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME);
    if (floor_env("FLOOR_CB", 0)) cuptiEnableDomain(1, floor_sub, CUPTI_CB_DOMAIN_RUNTIME_API);
    atexit(floor_exit);
    return 1;
}
