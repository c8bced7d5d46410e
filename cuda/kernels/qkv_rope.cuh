// Heads of a row between the QKV matmul and attention, as a block-wide device step shared by
// qkv_rope.cu (every row and head of a window) and attention_row.cu (a one-row window's attention, which
// prepares its own q, k and v): bias (Qwen2), the per-head RMSNorm (Qwen3, q and k), rotate-half RoPE from
// the CPU backend's cos/sin table (q and k). The rotation is spelled with explicitly rounded products (no
// contraction into FMAs) so it gives the CPU's bits for the same inputs.
#pragma once
#include <cuda_bf16.h>

#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/kernels.hpp"
#include "cuda/kernels/kv_access.cuh"

namespace strata {
namespace cuda {

// Rotate-half RoPE of one pair (a at i, b at i + hd / 2) by the table's (c, s), with rounded products.
__device__ __forceinline__ void rotate_pair(float a, float b, float c, float s, float* lo, float* hi) {
  *lo = __fsub_rn(__fmul_rn(a, c), __fmul_rn(b, s));
  *hi = __fadd_rn(__fmul_rn(b, c), __fmul_rn(a, s));
}

// count heads of hd values each, consecutive from x (xr: the split GEMM's remainder products, or null; bias:
// the heads' biases, or null); norm: the RMSNorm weight, or null; cs/sn: the row position's cos/sin table
// rows, or null for v (no rotation). Head t's result goes to out + t * out_stride (shared memory); inv
// (shared, count floats) is scratch. Every thread of the block calls it; it ends with a barrier. The heads are
// prepared side by side (one barrier per step for all of them), each exactly as a head on its own.
__device__ __forceinline__ void prepare_heads(const float* x, const float* xr, const float* bias, int count,
                                              const float* norm, float eps, const float* cs, const float* sn, int hd,
                                              float* out, int out_stride, float* inv) {
  for (int e = threadIdx.x; e < count * hd; e += blockDim.x) {
    const int t = e / hd, d = e - t * hd;
    const float v = xr ? __fadd_rn(x[e], xr[e]) : x[e];
    out[t * out_stride + d] = bias ? __fadd_rn(v, bias[e]) : v;
  }
  __syncthreads();
  if (norm) {
    for (int t = threadIdx.x; t < count; t += blockDim.x) {
      const float* o = out + t * out_stride;
      float ss = 0.0f;
      for (int d = 0; d < hd; ++d) ss = __fmaf_rn(o[d], o[d], ss);
      inv[t] = 1.0f / sqrtf(__fadd_rn(__fdiv_rn(ss, float(hd)), eps));
    }
    __syncthreads();
    for (int e = threadIdx.x; e < count * hd; e += blockDim.x) {
      const int t = e / hd, d = e - t * hd;
      float& o = out[t * out_stride + d];
      o = __fmul_rn(norm[d], __fmul_rn(o, inv[t]));
    }
    __syncthreads();
  }
  if (cs) {
    const int half = hd / 2;
    for (int e = threadIdx.x; e < count * half; e += blockDim.x) {
      const int t = e / half, i = e - t * half;
      float* o = out + t * out_stride;
      rotate_pair(o[i], o[i + half], cs[i], sn[i], &o[i], &o[i + half]);
    }
    __syncthreads();
  }
}

// Where head `head` of a row's q | k | v heads (a k or v head) starts in its arena (kv.k or kv.v).
__device__ __forceinline__ size_t kv_head_at(const QkvRopeParams& p, int head, int slot, int pos) {
  const bool is_k = head < p.n_heads + p.n_kv_heads;
  return kv_offset(p.kv, slot, pos) + size_t(head - p.n_heads - (is_k ? 0 : p.n_kv_heads)) * size_t(p.head_dim);
}

// One K or V value into the arena at element i: as is (fp32) or rounded to nearest (bf16).
__device__ __forceinline__ void store_kv(const KvLayout& kv, void* base, size_t i, float v) {
  if (kv.type == KvType::BF16) static_cast<__nv_bfloat16*>(base)[i] = to_bf16(v);
  else static_cast<float*>(base)[i] = v;
}

}  // namespace cuda
}  // namespace strata
