// RMSNorm with the residual add fused in front (launch_add_rmsnorm in kernels.hpp). One block per row; the
// sum of squares is each thread's strided partial sum in index order, then the block's fixed tree, so a row's
// norm depends on the row alone. The element-wise steps round as the CPU backend's do: v = x + (delta + bias),
// y = weight * (v * inv).
#include <cuda_bf16.h>

#include "cuda/cuda_check.hpp"
#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/kernels.hpp"
#include "cuda/kernels/launch.cuh"

namespace strata {
namespace cuda {
namespace {

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads) add_rmsnorm_kernel(float* __restrict__ x, const float* __restrict__ delta,
                                                               const float* __restrict__ bias,
                                                               const float* __restrict__ weight,
                                                               const int* __restrict__ row_map, int n, float eps,
                                                               bool write_back, float* __restrict__ y,
                                                               __nv_bfloat16* __restrict__ y16) {
  pdl_wait();
  pdl_launch_dependents();
  __shared__ float scratch[32];
  const int i_out = blockIdx.x;
  const int src = row_map ? row_map[i_out] : i_out;
  float* xr = x + size_t(src) * n;
  const float* dr = delta ? delta + size_t(src) * n : nullptr;
  float ss = 0.0f;
  for (int i = threadIdx.x; i < n; i += kThreads) {
    float v = xr[i];
    if (dr) v = __fadd_rn(v, bias ? __fadd_rn(dr[i], bias[i]) : dr[i]);
    if (write_back && dr) xr[i] = v;
    ss = __fmaf_rn(v, v, ss);
  }
  const float total = block_sum(ss, scratch);
  const float inv = 1.0f / sqrtf(__fadd_rn(__fdiv_rn(total, float(n)), eps));
  float* yr = y + size_t(i_out) * n;
  for (int i = threadIdx.x; i < n; i += kThreads) {
    float v = xr[i];
    if (dr && !write_back) v = __fadd_rn(v, bias ? __fadd_rn(dr[i], bias[i]) : dr[i]);
    const float o = __fmul_rn(weight[i], __fmul_rn(v, inv));
    yr[i] = o;
    if (y16) y16[size_t(i_out) * n + i] = to_bf16(o);
  }
}

}  // namespace

void launch_add_rmsnorm(float* x, const float* delta, const float* bias, const float* weight, const int* row_map,
                        int rows, int n, float eps, bool write_back, float* y, void* y16, cudaStream_t stream) {
  if (rows <= 0) return;
  launch_kernel(add_rmsnorm_kernel, rows, kThreads, 0, stream, x, delta, bias, weight, row_map, n, eps, write_back, y,
                                                    static_cast<__nv_bfloat16*>(y16));
  STRATA_CUDA_CHECK_LAUNCH();
}

}  // namespace cuda
}  // namespace strata
