// SwiGLU between the MLP's two matmuls: act = gate / (1 + exp(-gate)) * up, rounded step by step as the CPU
// backend computes it (silu first, then the product).
#include <cuda_bf16.h>

#include "cuda/cuda_check.hpp"
#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/kernels.hpp"
#include "cuda/kernels/launch.cuh"

namespace strata {
namespace cuda {
namespace {

__global__ void swiglu_kernel(const float* __restrict__ gu, int ff, float* __restrict__ act,
                              __nv_bfloat16* __restrict__ act16) {
  pdl_wait();
  pdl_launch_dependents();
  const int r = blockIdx.y;
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= ff) return;
  const float g = gu[size_t(r) * 2 * ff + i], u = gu[size_t(r) * 2 * ff + ff + i];
  const float s = __fdiv_rn(g, __fadd_rn(1.0f, expf(-g)));
  const float a = __fmul_rn(s, u);
  act[size_t(r) * ff + i] = a;
  if (act16) act16[size_t(r) * ff + i] = to_bf16(a);
}

}  // namespace

void launch_swiglu(const float* gu, int rows, int ff, float* act, void* act16, cudaStream_t stream) {
  if (rows <= 0) return;
  const dim3 grid((ff + 255) / 256, rows);
  launch_kernel(swiglu_kernel, grid, 256, 0, stream, gu, ff, act, static_cast<__nv_bfloat16*>(act16));
  STRATA_CUDA_CHECK_LAUNCH();
}

}  // namespace cuda
}  // namespace strata
