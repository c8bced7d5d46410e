// SwiGLU between the MLP's two matmuls: act = gate / (1 + exp(-gate)) * up, rounded step by step as the CPU
// backend computes it (silu first, then the product). Also the split GEMM's logits add (launch_add).
#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>

#include "cuda/cuda_check.hpp"
#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/kernels.hpp"
#include "cuda/kernels/launch.cuh"

namespace strata {
namespace cuda {
namespace {

__device__ __forceinline__ float swiglu_one(float g, float u) {
  const float s = __fdiv_rn(g, __fadd_rn(1.0f, expf(-g)));
  return __fmul_rn(s, u);
}

// V values a thread: 4 (16-byte loads and stores) when ff is a multiple of 4, else 1.
template <int V>
__global__ void swiglu_kernel(const float* __restrict__ gu, const float* __restrict__ gu_rem, int ff,
                              float* __restrict__ act, __nv_bfloat16* __restrict__ act16, size_t rem_off) {
  pdl_wait();
  pdl_launch_dependents();
  const int r = blockIdx.y;
  const int i = V * (blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= ff) return;
  const size_t gi = size_t(r) * 2 * ff + i, ai = size_t(r) * ff + i;
  if (V == 4) {
    float4 g = *reinterpret_cast<const float4*>(gu + gi), u = *reinterpret_cast<const float4*>(gu + gi + ff);
    if (gu_rem) {
      const float4 gr = *reinterpret_cast<const float4*>(gu_rem + gi), ur = *reinterpret_cast<const float4*>(gu_rem + gi + ff);
      g = make_float4(__fadd_rn(g.x, gr.x), __fadd_rn(g.y, gr.y), __fadd_rn(g.z, gr.z), __fadd_rn(g.w, gr.w));
      u = make_float4(__fadd_rn(u.x, ur.x), __fadd_rn(u.y, ur.y), __fadd_rn(u.z, ur.z), __fadd_rn(u.w, ur.w));
    }
    const float4 a = make_float4(swiglu_one(g.x, u.x), swiglu_one(g.y, u.y), swiglu_one(g.z, u.z), swiglu_one(g.w, u.w));
    if (act) *reinterpret_cast<float4*>(act + ai) = a;
    if (act16) {
      store_bf16x2_split(act16 + ai, rem_off, a.x, a.y);
      store_bf16x2_split(act16 + ai + 2, rem_off, a.z, a.w);
    }
  } else {
    float g = gu[gi], u = gu[gi + ff];
    if (gu_rem) {
      g = __fadd_rn(g, gu_rem[gi]);
      u = __fadd_rn(u, gu_rem[gi + ff]);
    }
    const float a = swiglu_one(g, u);
    if (act) act[ai] = a;
    if (act16) store_bf16_split(act16 + ai, rem_off, a);
  }
}

__global__ void add_kernel(float* __restrict__ y, const float* __restrict__ b, size_t n) {
  pdl_wait();
  pdl_launch_dependents();
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    y[i] = __fadd_rn(y[i], b[i]);
}

// Reads every 16-byte word (the xor of them lands in the buffer only on an impossible match, so the loads
// stay): the GEMM autotuner's L2 flush, which leaves no dirty lines to write back during the timed GEMM.
__global__ void read_kernel(uint4* __restrict__ p, size_t n, unsigned magic) {
  unsigned acc = 0;
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    const uint4 v = p[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == magic) p[0].x = acc;
}

}  // namespace

void launch_read(void* p, size_t bytes, cudaStream_t stream) {
  if (bytes < 16) return;
  read_kernel<<<1024, 256, 0, stream>>>(static_cast<uint4*>(p), bytes / 16, 0x9e3779b9u);
  STRATA_CUDA_CHECK_LAUNCH();
}

void launch_swiglu(const float* gu, const float* gu_rem, int rows, int ff, float* act, Bf16Out act16,
                   cudaStream_t stream) {
  if (rows <= 0) return;
  const size_t rem_off = act16.split ? size_t(rows) * size_t(ff) : size_t(0);
  __nv_bfloat16* a16 = static_cast<__nv_bfloat16*>(act16.p);
  // 16-byte accesses need ff and every buffer (the remainder rows' offset included) 16-byte aligned.
  auto aligned = [](const void* p, uintptr_t n) { return (reinterpret_cast<uintptr_t>(p) & (n - 1)) == 0; };
  const bool vec = ff % 4 == 0 && aligned(gu, 16) && (!gu_rem || aligned(gu_rem, 16)) && (!act || aligned(act, 16)) &&
                   (!a16 || aligned(a16, 8));
  if (vec) {
    const dim3 grid((ff / 4 + 255) / 256, rows);
    launch_kernel(swiglu_kernel<4>, grid, 256, 0, stream, gu, gu_rem, ff, act, a16, rem_off);
  } else {
    const dim3 grid((ff + 255) / 256, rows);
    launch_kernel(swiglu_kernel<1>, grid, 256, 0, stream, gu, gu_rem, ff, act, a16, rem_off);
  }
  STRATA_CUDA_CHECK_LAUNCH();
}

void launch_add(float* y, const float* b, size_t n, cudaStream_t stream) {
  if (n == 0) return;
  const size_t blocks = std::min<size_t>((n + 255) / 256, 1024);
  launch_kernel(add_kernel, dim3(unsigned(blocks)), 256, 0, stream, y, b, n);
  STRATA_CUDA_CHECK_LAUNCH();
}

}  // namespace cuda
}  // namespace strata
