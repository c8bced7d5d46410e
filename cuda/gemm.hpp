// cuBLAS GEMM for windows too wide for the skinny kernel (prompt chunks): y[T][n] = x[T][k] * W[n][k]^T with
// fp32 accumulation. bf16 weights take bf16 activations (cuBLAS has no bf16 x fp32 product); fp32 weights
// take the fp32 activations with plain fp32 math (no TF32), so exact-weight models stay exact.
#pragma once
#include <cublas_v2.h>

#include "cuda/device_weights.hpp"

namespace strata {
namespace cuda {

// x is bf16 [rows][w.cols] for bf16 weights, fp32 for fp32 weights.
void gemm(cublasHandle_t handle, const DeviceMatrix& w, const void* x, int rows, float* y);

}  // namespace cuda
}  // namespace strata
