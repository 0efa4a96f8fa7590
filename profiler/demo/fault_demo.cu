// fault_demo.cu: small CUDA programs for specprof under faults (issue 17,
// profiler/device/faults.sh). Each mode launches kernels it counts and prints one line
//   FAULT_EXPECT {"mode":..., "pid":..., "kernels":N, ...}
// before it ends the way the mode says, so that a trace can be checked against it:
//   run      N kernels, exit 0
//   segv     N kernels (synchronized), then a wild store: dies by SIGSEGV
//   abort    N kernels (synchronized), then abort(): dies by SIGABRT
//   long     a kernel every 2 ms for S seconds, then exit 0 (keeps running while the disk
//            fills or the directory refuses the file); prints DONE
//   fork     N kernels, fork + exec of itself in mode child (M kernels), N more, wait
//   forkonly N kernels, fork of a child that never execs nor touches CUDA and exits, N more
//   child    M kernels (the exec'd child of fork)
//   threads  T host threads, each with its own stream, released together, each K kernels of
//            grid (t+1, 1, 1): the grid says which thread launched a kernel
//   fault_demo --mode MODE [--kernels N] [--child-kernels M] [--threads T] [--secs S]
#include <cuda_runtime.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <sys/wait.h>
#include <unistd.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); exit(1); } } while (0)

__global__ void k_mark(unsigned *counter) {
    if (threadIdx.x == 0) atomicAdd(counter, 1u);
}

static unsigned *g_counter;

static void launch(int n, int grid, cudaStream_t s) {
    for (int i = 0; i < n; i++) k_mark<<<grid, 32, 0, s>>>(g_counter);
    CK(cudaGetLastError());
}

static void setup(void) {
    CK(cudaSetDevice(0));
    CK(cudaMalloc(&g_counter, sizeof *g_counter));
    CK(cudaMemset(g_counter, 0, sizeof *g_counter));
    CK(cudaDeviceSynchronize());
}

static unsigned counted(void) {
    unsigned h = 0;
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(&h, g_counter, sizeof h, cudaMemcpyDeviceToHost));
    return h;
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* threads: released together by a barrier */
static pthread_barrier_t g_bar;
static int g_k;
static void *thread_main(void *arg) {
    int t = (int)(intptr_t)arg;
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    pthread_barrier_wait(&g_bar);
    launch(g_k, t + 1, s);
    CK(cudaStreamSynchronize(s));
    CK(cudaStreamDestroy(s));
    return NULL;
}

int main(int argc, char **argv) {
    const char *mode = "run";
    int n = 100, m = 50, threads = 32;
    double secs = 10;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--mode") && i + 1 < argc) mode = argv[++i];
        else if (!strcmp(argv[i], "--kernels") && i + 1 < argc) n = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--child-kernels") && i + 1 < argc) m = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--secs") && i + 1 < argc) secs = atof(argv[++i]);
        else {
            fprintf(stderr, "usage: fault_demo --mode run|segv|abort|long|fork|forkonly|child|threads "
                            "[--kernels N] [--child-kernels M] [--threads T] [--secs S]\n");
            return 2;
        }
    }
    setup();
    int pid = (int)getpid();
    if (!strcmp(mode, "run") || !strcmp(mode, "segv") || !strcmp(mode, "abort") || !strcmp(mode, "child")) {
        launch(strcmp(mode, "child") ? n : m, 1, 0);
        unsigned c = counted();
        printf("FAULT_EXPECT {\"mode\":\"%s\",\"pid\":%d,\"kernels\":%d,\"counted\":%u}\n", mode, pid,
               strcmp(mode, "child") ? n : m, c);
        fflush(stdout);
        sleep_ms(50);   /* the launches are in CUPTI's buffers; the end flushes them */
        if (!strcmp(mode, "segv")) {
            volatile uintptr_t wild = 8;
            *(volatile int *)wild = 1;
        }
        if (!strcmp(mode, "abort")) abort();
        return 0;
    }
    if (!strcmp(mode, "long")) {
        long k = 0;
        struct timespec t0, t;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        do {
            launch(1, 1, 0);
            k++;
            sleep_ms(2);
            clock_gettime(CLOCK_MONOTONIC, &t);
        } while ((double)(t.tv_sec - t0.tv_sec) + 1e-9 * (double)(t.tv_nsec - t0.tv_nsec) < secs);
        unsigned c = counted();
        printf("FAULT_EXPECT {\"mode\":\"long\",\"pid\":%d,\"kernels\":%ld,\"counted\":%u}\nDONE\n", pid, k, c);
        return c == (unsigned)k ? 0 : 1;
    }
    if (!strcmp(mode, "fork") || !strcmp(mode, "forkonly")) {
        launch(n, 1, 0);
        counted();
        fflush(stdout);
        pid_t c = fork();
        if (c < 0) { perror("fork"); return 1; }
        if (c == 0) {
            if (!strcmp(mode, "forkonly")) { sleep_ms(200); exit(0); }   /* no exec, no CUDA */
            char kk[16];
            snprintf(kk, sizeof kk, "%d", m);
            execl("/proc/self/exe", argv[0], "--mode", "child", "--kernels", "0", "--child-kernels", kk, (char *)NULL);
            perror("exec");
            _exit(127);
        }
        launch(n, 1, 0);
        unsigned got = counted();
        int st = 0;
        waitpid(c, &st, 0);
        printf("FAULT_EXPECT {\"mode\":\"%s\",\"pid\":%d,\"kernels\":%d,\"counted\":%u,\"child_pid\":%d,"
               "\"child_status\":%d}\n", mode, pid, 2 * n, got, (int)c, WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
        return 0;
    }
    if (!strcmp(mode, "threads")) {
        g_k = n;
        pthread_t th[1024];
        if (threads < 1 || threads > 1024) return 2;
        pthread_barrier_init(&g_bar, NULL, (unsigned)threads);
        for (int t = 0; t < threads; t++) pthread_create(&th[t], NULL, thread_main, (void *)(intptr_t)t);
        for (int t = 0; t < threads; t++) pthread_join(th[t], NULL);
        unsigned c = counted();
        printf("FAULT_EXPECT {\"mode\":\"threads\",\"pid\":%d,\"threads\":%d,\"kernels_per_thread\":%d,"
               "\"kernels\":%d,\"counted\":%u}\n", pid, threads, n, threads * n, c);
        return 0;
    }
    fprintf(stderr, "fault_demo: unknown mode %s\n", mode);
    return 2;
}
