// Every CUDA runtime and cuBLAS call goes through these: a failure becomes a strata::Error naming the call,
// file:line and the library's own message, which the engine turns into request errors (never an abort).
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <string>

#include "engine/core/types.hpp"

namespace strata {
namespace cuda {

[[noreturn]] inline void throw_cuda(cudaError_t e, const char* call, const char* file, int line) {
  throw Error(std::string("cuda: ") + call + " failed at " + file + ":" + std::to_string(line) + ": " +
              cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

[[noreturn]] inline void throw_cublas(cublasStatus_t s, const char* call, const char* file, int line) {
  throw Error(std::string("cublas: ") + call + " failed at " + file + ":" + std::to_string(line) + ": " +
              cublasGetStatusName(s) + " (" + cublasGetStatusString(s) + ")");
}

}  // namespace cuda
}  // namespace strata

#define STRATA_CUDA_CHECK(call)                                                   \
  do {                                                                            \
    cudaError_t strata_cuda_err_ = (call);                                        \
    if (strata_cuda_err_ != cudaSuccess)                                          \
      ::strata::cuda::throw_cuda(strata_cuda_err_, #call, __FILE__, __LINE__);    \
  } while (0)

#define STRATA_CUBLAS_CHECK(call)                                                 \
  do {                                                                            \
    cublasStatus_t strata_cublas_st_ = (call);                                    \
    if (strata_cublas_st_ != CUBLAS_STATUS_SUCCESS)                               \
      ::strata::cuda::throw_cublas(strata_cublas_st_, #call, __FILE__, __LINE__); \
  } while (0)

// After a kernel launch: launch-configuration errors surface here, at the launch that caused them.
#define STRATA_CUDA_CHECK_LAUNCH() STRATA_CUDA_CHECK(cudaGetLastError())
