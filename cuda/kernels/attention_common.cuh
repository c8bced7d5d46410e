// What the two forms of the attention partial kernel share (attention.cu: the split staged whole;
// attention_batch.cu: K/V streamed through a ring): the cp.async helpers and the two pieces of arithmetic that
// must be the same in both for a row to get the same bits from either, the split's softmax and the final add
// of P.V's four position classes.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "cuda/kernels/kernels.hpp"

namespace strata {
namespace cuda {
namespace attn {

constexpr unsigned kFull = 0xffffffffu;
constexpr int kSplit = kAttnSplit;  // positions of one split: 4 per lane of a warp
static_assert(kSplit == 4 * 32, "the softmax holds four positions per lane");

__device__ __forceinline__ unsigned smem_u32(const void* p) { return unsigned(__cvta_generic_to_shared(p)); }
__device__ __forceinline__ void cp_async16(void* dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_u32(dst)), "l"(__cvta_generic_to_global(src))
               : "memory");
}
__device__ __forceinline__ void cp_async4(void* dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(smem_u32(dst)), "l"(__cvta_generic_to_global(src))
               : "memory");
}
__device__ __forceinline__ int load_now(const int* p) {
  int v;
  asm volatile("ld.global.s32 %0, [%1];\n" : "=r"(v) : "l"(__cvta_generic_to_global(p)) : "memory");
  return v;
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// One warp's softmax of one query vector over the first n (1..kSplit) scores of its row p of the split: lane
// holds positions lane + 32k; the max is exact, the sum is per lane in k order, then a butterfly. The scores
// are replaced by exp(score - max); (max, sum) go to part_ml[cell] from lane 0.
__device__ __forceinline__ void split_softmax(float* p, int n, int lane, float* part_ml, size_t cell) {
  float s[4];
  float m = -INFINITY;
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const int j = lane + 32 * k;
    s[k] = j < n ? p[j] : -INFINITY;
    m = fmaxf(m, s[k]);
  }
#pragma unroll
  for (int o = 16; o >= 1; o /= 2) m = fmaxf(m, __shfl_xor_sync(kFull, m, o));
  float sum = 0.0f;
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const int j = lane + 32 * k;
    if (j < n) {
      const float e = expf(s[k] - m);
      p[j] = e;
      sum = __fadd_rn(sum, e);
    }
  }
#pragma unroll
  for (int o = 16; o >= 1; o /= 2) sum = __fadd_rn(sum, __shfl_xor_sync(kFull, sum, o));
  if (lane == 0) {
    part_ml[cell * 2] = m;
    part_ml[cell * 2 + 1] = sum;
  }
}

// P.V of four dimensions: the four position classes j mod 4, held by four adjacent lanes, added as
// ((c0 + c1) + (c2 + c3)) by two butterflies (every lane gets the total).
__device__ __forceinline__ float4 add_position_classes(float4 o) {
#pragma unroll
  for (int x = 1; x <= 2; x *= 2) {
    o.x = __fadd_rn(o.x, __shfl_xor_sync(kFull, o.x, x));
    o.y = __fadd_rn(o.y, __shfl_xor_sync(kFull, o.y, x));
    o.z = __fadd_rn(o.z, __shfl_xor_sync(kFull, o.z, x));
    o.w = __fadd_rn(o.w, __shfl_xor_sync(kFull, o.w, x));
  }
  return o;
}

// Stores dimensions 4 d4 .. 4 d4 + 3 (those below hd) of a split's P.V to dst = part_acc + cell * hd + 4 d4.
template <bool kVec>
__device__ __forceinline__ void store_pv(float* dst, float4 o, int d4, int hd) {
  if (kVec) {
    *reinterpret_cast<float4*>(dst) = o;
  } else {
    const float ov[4] = {o.x, o.y, o.z, o.w};
#pragma unroll
    for (int e = 0; e < 4; ++e)
      if (4 * d4 + e < hd) dst[e] = ov[e];
  }
}

inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

// Throws strata::Error unless a bf16 arena can be read with 16-byte loads of 8 values (attention.cu).
void check_bf16_arena(const AttentionParams& a, bool vec);
// The second kernel of every split-wise attention form: merges each row's splits (attention.cu).
void launch_combine(const AttentionParams& a, cudaStream_t stream);

}  // namespace attn
}  // namespace cuda
}  // namespace strata
