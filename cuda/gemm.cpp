#include "cuda/gemm.hpp"

#include "cuda/cuda_check.hpp"

namespace strata {
namespace cuda {

void gemm(cublasHandle_t handle, const DeviceMatrix& w, const void* x, int rows, float* y) {
  // Row-major W [n][k] is column-major k x n; row-major x [T][k] is column-major k x T. The column-major
  // product W^T(n x k) * x(k x T) is n x T, which is row-major y [T][n].
  const float one = 1.0f, zero = 0.0f;
  const int n = w.rows, k = w.cols;
  if (w.type == WType::BF16) {
    STRATA_CUBLAS_CHECK(cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, n, rows, k, &one, w.ptr, CUDA_R_16BF, k, x,
                                     CUDA_R_16BF, k, &zero, y, CUDA_R_32F, n, CUBLAS_COMPUTE_32F,
                                     CUBLAS_GEMM_DEFAULT));
  } else {
    STRATA_CUBLAS_CHECK(cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, n, rows, k, &one, w.ptr, CUDA_R_32F, k, x,
                                     CUDA_R_32F, k, &zero, y, CUDA_R_32F, n, CUBLAS_COMPUTE_32F_PEDANTIC,
                                     CUBLAS_GEMM_DEFAULT));
  }
}

}  // namespace cuda
}  // namespace strata
