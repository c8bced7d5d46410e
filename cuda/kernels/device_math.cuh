// Small device helpers shared by the kernels: exact bf16 widening/rounding and fixed-order reductions.
#pragma once
#include <cuda_bf16.h>
#include <cstdint>

namespace strata {
namespace cuda {

// bf16 -> fp32 is exact: the bf16 bits are the top half of the float.
__device__ __forceinline__ float bf16_lo(uint32_t u) { return __uint_as_float(u << 16); }
__device__ __forceinline__ float bf16_hi(uint32_t u) { return __uint_as_float(u & 0xffff0000u); }

__device__ __forceinline__ __nv_bfloat16 to_bf16(float f) { return __float2bfloat16_rn(f); }

// 8 consecutive bf16 values (16 bytes, the lower-indexed first) widened into d[0], d[1].
__device__ __forceinline__ void widen_bf16x8(const uint4& w, float4* d) {
  d[0] = make_float4(bf16_lo(w.x), bf16_hi(w.x), bf16_lo(w.y), bf16_hi(w.y));
  d[1] = make_float4(bf16_lo(w.z), bf16_hi(w.z), bf16_lo(w.w), bf16_hi(w.w));
}

// The RMSNorm scale of a row of n values whose squares sum to sum_sq: 1 / sqrt(mean + eps), rounded as the
// CPU backend rounds it (every kernel that norms a row computes it here).
__device__ __forceinline__ float rms_inv(float sum_sq, int n, float eps) {
  return 1.0f / sqrtf(__fadd_rn(__fdiv_rn(sum_sq, float(n)), eps));
}

// 16 bytes of weights that are read once per kernel: through the read-only path, not kept in L1.
__device__ __forceinline__ uint4 load_stream(const void* p) {
  uint4 r;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
               : "l"(p));
  return r;
}

// Two values as packed bf16 pairs (the lower-indexed value in the low half): hi = (rn(a), rn(b)) and
// rem = (rn(a - hi.a), rn(b - hi.b)), so a = hi + rem to about 16 significant bits. The one split that the
// split-activation GEMM inputs, the skinny matmul's activations and the tensor-core attention's q and P use.
__device__ __forceinline__ void split_bf16x2(float a, float b, uint32_t& hi, uint32_t& rem) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
  const __nv_bfloat162 r = __floats2bfloat162_rn(__fsub_rn(a, __low2float(h)), __fsub_rn(b, __high2float(h)));
  hi = *reinterpret_cast<const uint32_t*>(&h);
  rem = *reinterpret_cast<const uint32_t*>(&r);
}

// An input of the split-activation GEMM (forward.cpp): v's bf16 rounding at p[0] and, when rem_off != 0, the
// bf16 rounding of the remainder v - hi at p[rem_off], so hi + rem carries v to about 16 significant bits.
__device__ __forceinline__ void store_bf16_split(__nv_bfloat16* p, size_t rem_off, float v) {
  const __nv_bfloat16 h = to_bf16(v);
  p[0] = h;
  if (rem_off) p[rem_off] = to_bf16(__fsub_rn(v, __bfloat162float(h)));
}
// The same for two consecutive values (p 4-byte aligned).
__device__ __forceinline__ void store_bf16x2_split(__nv_bfloat16* p, size_t rem_off, float a, float b) {
  uint32_t hi, rem;
  split_bf16x2(a, b, hi, rem);
  *reinterpret_cast<uint32_t*>(p) = hi;
  if (rem_off) *reinterpret_cast<uint32_t*>(p + rem_off) = rem;
}

// Butterfly sum over a warp: every lane ends with the same value, and the pairing is fixed, so the result
// depends only on the 32 inputs.
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o >= 1; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Sum over a block of blockDim.x threads (a multiple of 32, at most 1024) in a fixed tree: warp butterflies,
// then the warp sums in warp order. `scratch` holds 32 floats. Every thread gets the result.
__device__ __forceinline__ float block_sum(float v, float* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  v = warp_sum(v);
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  float t = 0.0f;
  if (warp == 0) {
    t = lane < warps ? scratch[lane] : 0.0f;
    t = warp_sum(t);
    if (lane == 0) scratch[0] = t;
  }
  __syncthreads();
  return scratch[0];
}

// engine/sampling's argmax rule as an order: v at id i beats the best so far (bv at bi) when it is larger,
// or equal with a lower id; NaN never wins (every comparison with it is false). Its winner is unique, so any
// reduction order gives the same pick.
__device__ __forceinline__ bool pick_better(float v, int i, float bv, int bi) {
  return v > bv || (v == bv && i < bi);
}

}  // namespace cuda
}  // namespace strata
