// The greedy pick on the device, with engine/sampling's argmax_token rule: the largest value, the lowest id
// among equals, NaN never wins (every comparison with it is false), token 0 when no value is above -inf.
// The winner of a max with that tie rule is unique, so the reduction order cannot change the answer.
#include <cfloat>

#include "cuda/cuda_check.hpp"
#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/kernels.hpp"
#include "cuda/kernels/launch.cuh"

namespace strata {
namespace cuda {
namespace {

constexpr int kThreads = 1024;

// The warp's best (value, id) by pick_better, in every lane.
__device__ __forceinline__ void warp_pick(float& bv, int& bi) {
#pragma unroll
  for (int o = 16; o >= 1; o /= 2) {
    const float ov = __shfl_xor_sync(0xffffffffu, bv, o);
    const int oi = __shfl_xor_sync(0xffffffffu, bi, o);
    if (pick_better(ov, oi, bv, bi)) bv = ov, bi = oi;
  }
}

__global__ void __launch_bounds__(kThreads) argmax_kernel(const float* __restrict__ logits, int vocab,
                                                          int* __restrict__ picks) {
  pdl_wait();
  pdl_launch_dependents();
  __shared__ float sv[kThreads / 32];
  __shared__ int si[kThreads / 32];
  const float* z = logits + size_t(blockIdx.x) * vocab;
  float bv = -INFINITY;
  int bi = 0x7fffffff;
  if (vocab % 4 == 0) {  // rows 16-byte aligned: four values a load, four loads of a thread in flight
    const float4* z4 = reinterpret_cast<const float4*>(z);
#pragma unroll 4
    for (int j = threadIdx.x; j < vocab / 4; j += kThreads) {
      const float4 v = z4[j];
      const int i = 4 * j;
      if (pick_better(v.x, i, bv, bi)) bv = v.x, bi = i;
      if (pick_better(v.y, i + 1, bv, bi)) bv = v.y, bi = i + 1;
      if (pick_better(v.z, i + 2, bv, bi)) bv = v.z, bi = i + 2;
      if (pick_better(v.w, i + 3, bv, bi)) bv = v.w, bi = i + 3;
    }
  } else {
    for (int i = threadIdx.x; i < vocab; i += kThreads) {
      const float v = z[i];
      if (pick_better(v, i, bv, bi)) bv = v, bi = i;
    }
  }
  warp_pick(bv, bi);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) sv[warp] = bv, si[warp] = bi;
  __syncthreads();
  if (warp == 0) {
    bv = lane < kThreads / 32 ? sv[lane] : -INFINITY;
    bi = lane < kThreads / 32 ? si[lane] : 0x7fffffff;
    warp_pick(bv, bi);
    // Only -inf (or NaN) everywhere leaves bv at -inf: the host rule answers token 0 then.
    if (lane == 0) picks[blockIdx.x] = bv > -INFINITY ? bi : 0;
  }
}

// A warp a row: lanes take the row's candidates in turn, then a butterfly; the rule's winner is unique.
__global__ void __launch_bounds__(32) argmax_parts_kernel(const float* __restrict__ value,
                                                          const int* __restrict__ index, int parts,
                                                          int* __restrict__ picks) {
  pdl_wait();
  pdl_launch_dependents();
  const int lane = threadIdx.x;
  float bv = -INFINITY;
  int bi = 0x7fffffff;
  for (int j = lane; j < parts; j += 32) {
    const float v = __ldcg(value + size_t(blockIdx.x) * parts + j);
    const int i = __ldcg(index + size_t(blockIdx.x) * parts + j);
    if (pick_better(v, i, bv, bi)) bv = v, bi = i;
  }
  warp_pick(bv, bi);
  if (lane == 0) picks[blockIdx.x] = bv > -INFINITY ? bi : 0;
}

}  // namespace

void launch_argmax_parts(const float* value, const int* index, int parts, int rows, int* picks,
                         cudaStream_t stream) {
  if (rows <= 0) return;
  launch_kernel(argmax_parts_kernel, rows, 32, 0, stream, value, index, parts, picks);
  STRATA_CUDA_CHECK_LAUNCH();
}

void launch_argmax(const float* logits, int rows, int vocab, int* picks, cudaStream_t stream) {
  if (rows <= 0) return;
  launch_kernel(argmax_kernel, rows, kThreads, 0, stream, logits, vocab, picks);
  STRATA_CUDA_CHECK_LAUNCH();
}

}  // namespace cuda
}  // namespace strata
