// One head of a row between the QKV matmul and attention, as a block-wide device step shared by
// qkv_rope.cu (every row and head of a window) and attention_row.cu (a one-row window's attention, which
// prepares its own q, k and v): bias (Qwen2), the per-head RMSNorm (Qwen3, q and k), rotate-half RoPE from
// the CPU backend's cos/sin table (q and k). The rotation is spelled with explicitly rounded products (no
// contraction into FMAs) so it gives the CPU's bits for the same inputs.
#pragma once
#include <cuda_bf16.h>

#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/kernels.hpp"

namespace strata {
namespace cuda {

// x: the head's hd values in the qkv row (xr: the split GEMM's remainder products, or null; bias: the
// head's bias, or null); norm: the RMSNorm weight, or null; cs/sn: the row position's cos/sin table rows,
// or null for v (no rotation). out (shared memory, hd floats) gets the result; work (shared, hd floats) and
// inv (shared) are scratch. Every thread of the block calls it; it ends with a barrier.
__device__ __forceinline__ void prepare_head(const float* x, const float* xr, const float* bias, const float* norm,
                                             float eps, const float* cs, const float* sn, int hd, float* out,
                                             float* work, float* inv) {
  for (int d = threadIdx.x; d < hd; d += blockDim.x) {
    const float v = xr ? __fadd_rn(x[d], xr[d]) : x[d];
    work[d] = bias ? __fadd_rn(v, bias[d]) : v;
  }
  __syncthreads();
  if (norm) {
    if (threadIdx.x == 0) {
      float ss = 0.0f;
      for (int d = 0; d < hd; ++d) ss = __fmaf_rn(work[d], work[d], ss);
      *inv = 1.0f / sqrtf(__fadd_rn(__fdiv_rn(ss, float(hd)), eps));
    }
    __syncthreads();
    const float iv = *inv;
    for (int d = threadIdx.x; d < hd; d += blockDim.x) work[d] = __fmul_rn(norm[d], __fmul_rn(work[d], iv));
    __syncthreads();
  }
  const int half = hd / 2;
  if (cs) {
    for (int i = threadIdx.x; i < half; i += blockDim.x) {
      const float a = work[i], b = work[i + half];
      out[i] = __fsub_rn(__fmul_rn(a, cs[i]), __fmul_rn(b, sn[i]));
      out[i + half] = __fadd_rn(__fmul_rn(b, cs[i]), __fmul_rn(a, sn[i]));
    }
  } else {
    for (int d = threadIdx.x; d < hd; d += blockDim.x) out[d] = work[d];
  }
  __syncthreads();
}

// One K or V value into the arena at element i: as is (fp32) or rounded to nearest (bf16).
__device__ __forceinline__ void store_kv(const KvLayout& kv, void* base, size_t i, float v) {
  if (kv.type == KvType::BF16) static_cast<__nv_bfloat16*>(base)[i] = to_bf16(v);
  else static_cast<float*>(base)[i] = v;
}

}  // namespace cuda
}  // namespace strata
