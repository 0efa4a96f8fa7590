/* fakecudart.h: a CUDA runtime for CPU-only tests of specprof's lite mode (tests/fakecudart.c,
 * built as build/tests/libfakecudart.so). The runtime entry points keep the real ABI with
 * plain types (handles are pointers, enums ints); the fake_* helpers script the GPU: a graph
 * executable runs for the time it was made with, a stream runs its work in order on a clock
 * that is CLOCK_MONOTONIC, events take the stream's time when the work before them is done.
 * A stream can be held (the eager probe's cuStreamWaitValue32 on a mapped host flag): its
 * work waits until the host writes the flag, then runs back to back from the moment the fake
 * notices the write (its next call, from any thread). */
#ifndef FAKECUDART_H
#define FAKECUDART_H
#include <stddef.h>
#include <stdint.h>

typedef struct { unsigned x, y, z; } fake_dim3;

int cudaGraphLaunch(void *exec, void *stream);
int cudaMemcpy(void *dst, const void *src, size_t n, int kind);
int cudaMemcpyAsync(void *dst, const void *src, size_t n, int kind, void *stream);
int cudaStreamSynchronize(void *stream);
int cudaDeviceSynchronize(void);
int cudaLaunchKernel(const void *f, fake_dim3 grid, fake_dim3 block, void **args, size_t smem, void *stream);
int cudaStreamCreateWithPriority(void **stream, unsigned flags, int priority);
int cudaProfilerStart(void);
int cudaProfilerStop(void);
int cudaEventCreate(void **ev);
int cudaEventRecord(void *ev, void *stream);
int cudaEventQuery(void *ev);
int cudaMalloc(void **p, size_t n);
int cudaFree(void *p);

/* The eager probe (profiler/inject/pleager.c). A kernel function named name (cudaFuncGetName
 * gives the name back) that runs ns on the GPU; its cudaLaunchKernel costs the host 5 us and
 * the kernel reaches the GPU when the call returns. Its runs are counted by name
 * (fake_kernel_runs) and logged in the order they ran (fake_run_order: names, space-separated;
 * its length is returned). */
const void *fake_kernel_fn(const char *name, int64_t ns);
int fake_run_order(char *buf, size_t cap);
/* GPU time of each event record from now on (default 0: an event takes no time), so that a
 * chain of events shows the event's cost as a real GPU's does. */
void fake_set_event_ns(int64_t ns);
/* on 0: cuStreamWaitValue32 is accepted and does nothing (a test's proof that its check
 * needs the hold); 1: the default. */
void fake_set_hold(int on);
/* cuStreamWaitValue32 calls; cudaEventRecord calls on stream; operations queued on stream
 * behind a hold not yet released (0: not held). */
int fake_waits(void);
int fake_event_records(void *stream);
int fake_held(void *stream);

/* A graph with nodes (the node probe's tests): a new one, a kernel node of ns GPU time named
 * name (the name stands for its function: cudaFuncGetName returns it) after deps, a memory
 * allocation node (which the probe must leave alone). cudaGraphInstantiate of such a graph
 * gives an executable whose replay runs each node when its dependencies ended. */
void *fake_graph_new(void);
void *fake_graph_kernel(void *g, const char *name, int64_t ns, void *const *deps, int nd);
void *fake_graph_alloc_node(void *g);
/* The edge from -> to becomes programmatic (cudaGraphDependencyTypeProgrammatic): asked for
 * without edge data, the node's dependencies are refused (cudaErrorLossyQuery), as CUDA does. */
void fake_graph_programmatic(void *g, void *from, void *to);
/* Replays that ran the kernel named name (the program's executable or a clone of it). */
int fake_kernel_runs(const char *name);
int cudaGraphInstantiate(void **exec, void *graph, unsigned long long flags);
int cudaGraphExecUpdate(void *exec, void *graph, void *info);
int cudaGraphExecDestroy(void *exec);
/* A graph executable whose replay takes gpu_ns on the GPU. */
void *fake_graph_exec(int64_t gpu_ns);
/* The stream captures (launches on it record nothing) while on is 1. */
void fake_set_capturing(void *stream, int on);
/* ptr is page-locked host memory from now on (cudaPointerGetAttributes says so). */
void fake_pin(void *ptr);
/* GPU start (CLOCK_MONOTONIC ns) of the i-th graph replay the fake ran (capture excluded);
 * -1 when there is none. */
int64_t fake_graph_start_ns(int i);
/* The time of the last event recorded on that replay's stream before it (an event on an idle
 * stream takes its record call's time: a span timed by events starts there); 0 when none. */
int64_t fake_graph_event_ns(int i);
/* Calls a capturing stream refused (cudaStreamGetId on it): each would end a real capture. */
int fake_capture_broken(void);
/* cudaProfilerStart (stop 0) or cudaProfilerStop (stop 1) calls that reached the runtime. */
int fake_profiler_calls(int stop);
/* CUPTI entry points called in this process (the fake defines them ahead of libcupti). */
int fake_cupti_calls(void);

#endif
