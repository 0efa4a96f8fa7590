/* pclean.c: see pclean.h. The child exits after writing one number; the parent never loads
 * the driver (a CUDA-initialized process must not fork a CUDA program). */
#include "pclean.h"
#include "inject/pcalib.h"
#include "inject/pcalib_ptx.h"
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The driver API's types as its ABI has them (cuda.h is not needed to build specprof) */
typedef int pc_res;
typedef void *pc_h;
typedef struct {
    pc_res (*init)(unsigned);
    pc_res (*dev_get)(int *, int);
    pc_res (*retain)(pc_h *, int);
    pc_res (*release)(int);
    pc_res (*push)(pc_h);
    pc_res (*pop)(pc_h *);
    pc_res (*mod_load)(pc_h *, const void *);
    pc_res (*mod_fn)(pc_h *, pc_h, const char *);
    pc_res (*mod_unload)(pc_h);
    pc_res (*st_create)(pc_h *, unsigned);
    pc_res (*st_destroy)(pc_h);
    pc_res (*st_sync)(pc_h);
    pc_res (*launch)(pc_h, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, pc_h, void **,
                     void **);
} pc_api;

static volatile unsigned pc_sink;   /* keeps the sweep's work */

/* Median launch time (us) of PCALIB_LAUNCHES launches, or -5 when a launch failed; buf: the
 * swept arm's buffer (pcalib_ptx.h), NULL for launches back to back. */
static double pc_time(const pc_api *a, pc_h fn, pc_h st, unsigned char *buf) {
    static int64_t v[PCALIB_LAUNCHES];
    size_t pos = 0;
    pc_res r = 0;
    for (int i = -PCALIB_WARM; i < PCALIB_LAUNCHES && !r; i++) {   /* as pcalib_time */
        int64_t t0 = pcalib_now_ns();
        r = a->launch(fn, 1, 1, 1, 1, 1, 1, 0, st, NULL, NULL);
        int64_t t1 = pcalib_now_ns();
        if (i >= 0) v[i] = t1 - t0;
        if (buf) pc_sink += pcalib_sweep(buf, &pos, (int64_t)(PCALIB_SWEEP_GAP_US * 1e3), pcalib_now_ns);
        if (i % PCALIB_SYNC_EVERY == PCALIB_SYNC_EVERY - 1 && !r) r = a->st_sync(st);
    }
    if (!r) r = a->st_sync(st);
    if (r) return -5;
    return pcalib_median_us(v, PCALIB_LAUNCHES);
}

/* In the child: the back-to-back and the swept medians in us (us[1] 0 when the buffer could not
 * be had), or a negative CUresult-derived code in us[0]. */
static void pc_measure(double us[2]) {
    us[1] = 0;
    void *cu = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!cu) { us[0] = -1; return; }
    pc_api a;
    struct { void **slot; const char *name; } t[] = {
        {(void **)&a.init, "cuInit"}, {(void **)&a.dev_get, "cuDeviceGet"},
        {(void **)&a.retain, "cuDevicePrimaryCtxRetain"}, {(void **)&a.release, "cuDevicePrimaryCtxRelease_v2"},
        {(void **)&a.push, "cuCtxPushCurrent_v2"}, {(void **)&a.pop, "cuCtxPopCurrent_v2"},
        {(void **)&a.mod_load, "cuModuleLoadData"}, {(void **)&a.mod_fn, "cuModuleGetFunction"},
        {(void **)&a.mod_unload, "cuModuleUnload"}, {(void **)&a.st_create, "cuStreamCreate"},
        {(void **)&a.st_destroy, "cuStreamDestroy_v2"}, {(void **)&a.st_sync, "cuStreamSynchronize"},
        {(void **)&a.launch, "cuLaunchKernel"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (!(*t[i].slot = dlsym(cu, t[i].name))) { us[0] = -2; return; }
    static const char ptx[] = PCALIB_PTX("specprof_clean_probe");
    int dev = 0;
    pc_h ctx = NULL, mod = NULL, fn = NULL, st = NULL, popped;
    if (a.init(0) || a.dev_get(&dev, 0) || a.retain(&ctx, dev) || a.push(ctx)) { us[0] = -3; return; }
    if (a.mod_load(&mod, ptx) || a.mod_fn(&fn, mod, "specprof_clean_probe") || a.st_create(&st, 1 /* non-blocking */)) {
        us[0] = -4;
        return;
    }
    us[0] = pc_time(&a, fn, st, NULL);
    unsigned char *buf = us[0] > 0 ? malloc(PCALIB_SWEEP_BYTES) : NULL;
    if (buf) {
        memset(buf, 1, PCALIB_SWEEP_BYTES);
        double sw = pc_time(&a, fn, st, buf);
        us[1] = sw > 0 ? sw : 0;
        free(buf);
    }
    a.st_destroy(st);
    a.mod_unload(mod);
    a.pop(&popped);
    a.release(dev);
}

double pclean_launch_us(double timeout_s, double *swept_us, char *why, size_t whylen) {
    *swept_us = 0;
    int fd[2];
    if (pipe(fd)) { snprintf(why, whylen, "pipe: %s", strerror(errno)); return -1; }
    pid_t pid = fork();
    if (pid < 0) { snprintf(why, whylen, "fork: %s", strerror(errno)); close(fd[0]); close(fd[1]); return -1; }
    if (pid == 0) {
        close(fd[0]);
        unsetenv("CUDA_INJECTION64_PATH");   /* a CUPTI-free process, whatever the caller's environment */
        double us[2];
        pc_measure(us);
        ssize_t w = write(fd[1], us, sizeof us);
        _exit(w == (ssize_t)sizeof us ? 0 : 1);
    }
    close(fd[1]);
    double us[2] = {-1, 0};
    struct pollfd p = {fd[0], POLLIN, 0};
    int ready;
    while ((ready = poll(&p, 1, (int)(timeout_s * 1000))) < 0 && errno == EINTR) {}
    ssize_t got = ready > 0 ? read(fd[0], us, sizeof us) : 0;
    close(fd[0]);
    if (ready <= 0) kill(pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {}
    if (ready == 0) { snprintf(why, whylen, "no answer in %.0f s", timeout_s); return -1; }
    if (got != (ssize_t)sizeof us || !(us[0] > 0)) {
        static const char *const step[] = {"", "libcuda.so.1 not found", "a driver entry point not found",
                                           "no device 0 or context", "module or stream", "a launch failed"};
        int k = got == (ssize_t)sizeof us && us[0] < 0 && us[0] >= -5 ? (int)-us[0] : 0;
        snprintf(why, whylen, "%s", k ? step[k] : "the probe process ended without a number");
        return -1;
    }
    *swept_us = us[1] > 0 && us[1] < 1e6 ? us[1] : 0;
    return us[0];
}
