// Logprobs on the device (launch_logprobs in kernels.hpp): for an output row whose spec asks for them, the
// pick's log-softmax and the n best alternatives, as engine/sampling's compute_logprobs makes them from the
// same logits: the max, the sum of exp(z - max) in double over kSamplerSumChunk-id chunks (a warp per
// chunk in the host's lane order, then the chunk sums in order by one thread), lse = max + log(sum), each value float(z - lse); the
// alternatives in the order (value descending, lower id first), found as n rounds of "the best entry after
// the previous one". As in sample.cu, the one possible difference is the last bit of a double exp or log.
// One block per output row; rows that ask for nothing return at once.
#include <cfloat>
#include <cstdint>

#include "cuda/cuda_check.hpp"
#include "cuda/kernels/kernels.hpp"
#include "cuda/kernels/launch.cuh"
#include "cuda/kernels/rank_select.cuh"

namespace strata {
namespace cuda {
namespace {

constexpr int kThreads = 1024;

__global__ void __launch_bounds__(kThreads) logprobs_kernel(const float* __restrict__ logits, int vocab,
                                                            const int32_t* __restrict__ specs,
                                                            const int* __restrict__ picks, float* __restrict__ out) {
  pdl_wait();
  pdl_launch_dependents();
  const int r = blockIdx.x;
  const int asked = specs[size_t(r) * kPickWords + kPickLogprobsWord];
  if (asked <= 0) return;
  const int n = min(asked - 1, kDeviceTopLogprobs);
  const float* z = logits + size_t(r) * vocab;
  float* o = out + size_t(r) * kLogprobWords;
  __shared__ double chunk[kDeviceSumChunks];
  __shared__ float red_v[kThreads / 32];
  __shared__ int red_i[kThreads / 32];
  __shared__ double lse_s;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;

  // The max (a NaN never wins, as std::max(m, NaN) keeps m).
  float m = -INFINITY;
  for (int i = tid; i < vocab; i += kThreads) m = fmaxf(m, z[i]);
#pragma unroll
  for (int s = 16; s >= 1; s /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, s));
  if (lane == 0) red_v[warp] = m;
  __syncthreads();
  m = -INFINITY;
  for (int w = 0; w < kThreads / 32; ++w) m = fmaxf(m, red_v[w]);
  const double md = double(m);
  const int n_chunks = (vocab + kSamplerSumChunk - 1) / kSamplerSumChunk;
  warp_chunk_sums(vocab, chunk, [&](int i) { return exp(double(z[i]) - md); });
  __syncthreads();
  if (tid == 0) {
    double s = 0.0;
    for (int c = 0; c < n_chunks; ++c) s += chunk[c];
    lse_s = md + log(s);
    const int pick = picks[r];
    o[0] = pick >= 0 && pick < vocab ? float(double(z[pick]) - lse_s) : 0.0f;
  }
  __syncthreads();
  const double lse = lse_s;

  // The n best, one round each.
  float pv = INFINITY;
  int pi = -1;
  for (int k = 0; k < n; ++k) {
    float bv;
    int bi;
    next_ranked<false>(z, vocab, pv, pi, red_v, red_i, bv, bi);  // -inf entries rank too, as on the host
    if (bi == 0x7fffffff) break;  // fewer entries than asked (n is capped at the vocabulary by the host)
    if (tid == 0) {
      o[1 + 2 * k] = __int_as_float(bi);
      o[2 + 2 * k] = float(double(bv) - lse);
    }
    pv = bv;
    pi = bi;
  }
}

}  // namespace

void launch_logprobs(const float* logits, int rows, int vocab, const int32_t* specs, const int* picks, float* out,
                     cudaStream_t stream) {
  if (rows <= 0 || vocab > kDeviceSampleMaxVocab) return;  // the host never asks for a larger vocabulary
  launch_kernel(logprobs_kernel, rows, kThreads, 0, stream, logits, vocab, specs, picks, out);
  STRATA_CUDA_CHECK_LAUNCH();
}

}  // namespace cuda
}  // namespace strata
