// Ranking a row of logits the way engine/sampling does (value descending, lower id first among equals), for
// the device's picks (sample.cu) and logprobs (logprobs.cu): the comparison, and a block-wide step that finds
// the best entry strictly after a previous one, so k steps give the k best in order whatever the reduction
// order. Also the host's chunked whole-vocabulary sums (warp_chunk_sums) and their chunk count.
#pragma once
#include <cuda_runtime_api.h>

#include "cuda/kernels/kernels.hpp"
#include "engine/sampling/sampler.hpp"

namespace strata {
namespace cuda {

constexpr int kDeviceSumChunks = kDeviceSampleMaxVocab / kSamplerSumChunk;

// Chunk sums of f(i) over ids [0, vocab) in engine/sampling's ChunkedSum / LaneSum order (chunked_sum.hpp), a
// warp per chunk: lane l adds ids l, l + 32, ... of the chunk in order, then the butterfly; chunk[c] gets
// chunk c's sum. Every warp of the block calls it; f(i) returns the double to add (0.0 for none).
template <class F>
__device__ __forceinline__ void warp_chunk_sums(int vocab, double* chunk, F&& f) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  const int n_chunks = (vocab + kSamplerSumChunk - 1) / kSamplerSumChunk;
  for (int c = warp; c < n_chunks; c += warps) {
    const int e = min(vocab, (c + 1) * kSamplerSumChunk);
    double acc = 0.0;
    for (int i = c * kSamplerSumChunk + lane; i < e; i += 32) acc += f(i);
#pragma unroll
    for (int o = 16; o >= 1; o /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if (lane == 0) chunk[c] = acc;
  }
}

__device__ __forceinline__ bool ranks_before(float v, int i, float bv, int bi) {
  return v > bv || (v == bv && i < bi);
}

// The entry of z[0 .. vocab) ranked right after (pv, pi) (pv = +inf, pi = -1 for the first), with kFiniteOnly
// skipping non-finite values; bi = 0x7fffffff when there is none. Every thread of the block calls it and gets
// the answer; red_v / red_i are blockDim.x / 32 entries of shared scratch.
template <bool kFiniteOnly>
__device__ __forceinline__ void next_ranked(const float* __restrict__ z, int vocab, float pv, int pi, float* red_v,
                                            int* red_i, float& bv, int& bi) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  bv = -INFINITY;
  bi = 0x7fffffff;
  for (int i = threadIdx.x; i < vocab; i += blockDim.x) {
    const float v = z[i];
    const bool after_prev = v < pv || (v == pv && i > pi);
    if ((!kFiniteOnly || isfinite(v)) && after_prev && ranks_before(v, i, bv, bi)) bv = v, bi = i;
  }
#pragma unroll
  for (int o = 16; o >= 1; o /= 2) {
    const float ov = __shfl_xor_sync(0xffffffffu, bv, o);
    const int oi = __shfl_xor_sync(0xffffffffu, bi, o);
    if (ranks_before(ov, oi, bv, bi)) bv = ov, bi = oi;
  }
  __syncthreads();  // every thread has read the previous step's scratch
  if (lane == 0) red_v[warp] = bv, red_i[warp] = bi;
  __syncthreads();
  bv = -INFINITY;
  bi = 0x7fffffff;
  for (int w = 0; w < warps; ++w)
    if (ranks_before(red_v[w], red_i[w], bv, bi)) bv = red_v[w], bi = red_i[w];
}

}  // namespace cuda
}  // namespace strata
