/* sbcheck: fail-fast checks for every CUDA, cuBLAS and NCCL call of specbench.
 * specbench is a measuring program, not a library: an error anywhere means the numbers
 * would be wrong, so each macro prints file:line, the call, the library's error string
 * and a hint, then exits 1 (bad input on the command line exits 2, elsewhere). */
#ifndef SBCHECK_H
#define SBCHECK_H
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#include <cublas_v2.h>

#define CK_CUDA(call) do {                                                          \
    cudaError_t ck_e_ = (call);                                                     \
    if (ck_e_ != cudaSuccess) {                                                     \
        fprintf(stderr, "%s:%d: CUDA error %s (%s) in %s\n", __FILE__, __LINE__,    \
                cudaGetErrorName(ck_e_), cudaGetErrorString(ck_e_), #call);          \
        exit(1);                                                                    \
    } } while (0)

/* After a kernel launch: catches bad launch configurations at once (asynchronous faults
 * surface at the next synchronising call, which is checked as well). */
#define CK_LAUNCH() CK_CUDA(cudaGetLastError())

#define CK_CUBLAS(call) do {                                                        \
    cublasStatus_t ck_s_ = (call);                                                  \
    if (ck_s_ != CUBLAS_STATUS_SUCCESS) {                                           \
        fprintf(stderr, "%s:%d: cuBLAS error %s (%s) in %s\n", __FILE__, __LINE__,  \
                cublasGetStatusName(ck_s_), cublasGetStatusString(ck_s_), #call);    \
        exit(1);                                                                    \
    } } while (0)

/* Built without NCCL (nccl_flags.sh found none): one GPU only. */
#ifdef SB_NO_NCCL
typedef struct sb_no_nccl *ncclComm_t;
#else
#include <nccl.h>
#define CK_NCCL(call) do {                                                          \
    ncclResult_t ck_r_ = (call);                                                    \
    if (ck_r_ != ncclSuccess) {                                                     \
        fprintf(stderr, "%s:%d: NCCL error %d (%s) in %s; hint: NCCL_DEBUG=INFO "   \
                "shows why\n", __FILE__, __LINE__, (int)ck_r_,                      \
                ncclGetErrorString(ck_r_), #call);                                  \
        exit(1);                                                                    \
    } } while (0)
#endif

/* A condition that must hold (shape limits, internal invariants). */
#define SB_REQUIRE(cond, ...) do {                                                  \
    if (!(cond)) {                                                                  \
        fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                             \
        fprintf(stderr, __VA_ARGS__);                                               \
        fprintf(stderr, "\n");                                                      \
        exit(2);                                                                    \
    } } while (0)
#endif
