// The seeded sample on the device, for rows whose top_k is in [1, kDeviceTopKMax] and whose logits no
// processor rewrites (the host decides, see cuda_backend.cpp). It reproduces engine/sampling's
// sampling_candidates + draw_candidate + philox_uniform step for step:
// - candidates: the top_k finite logits in the order (value descending, lower id first), found as top_k
//   rounds of "the best item strictly after the previous one in that order" — the same set and order the
//   host's nth_element + sort yields, whatever the reduction order;
// - weights exp((z - z_max) / T) in double, top_p over their running sum, min_p against the top weight,
//   normalization over the kept ones, the cumulative walk to u — one thread, in the host's order;
// - u from Philox4x32-10 keyed by the seed, counter = the row's position.
// The only possible difference is the last bit of a double exp (CUDA's versus the C library's), which moves a
// draw only when u falls within ~1e-16 of a candidate boundary.
#include <cfloat>
#include <cstdint>

#include "cuda/cuda_check.hpp"
#include "cuda/kernels/kernels.hpp"
#include "cuda/kernels/launch.cuh"

namespace strata {
namespace cuda {
namespace {

constexpr int kThreads = 1024;

__device__ __forceinline__ bool before(float v, int i, float bv, int bi) { return v > bv || (v == bv && i < bi); }

__device__ double philox_uniform_dev(uint64_t seed, uint64_t position) {
  uint32_t c0 = uint32_t(position), c1 = uint32_t(position >> 32), c2 = 0u, c3 = 0u;
  uint32_t k0 = uint32_t(seed), k1 = uint32_t(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    const uint32_t hi0 = __umulhi(0xD2511F53u, c0), lo0 = 0xD2511F53u * c0;
    const uint32_t hi1 = __umulhi(0xCD9E8D57u, c2), lo1 = 0xCD9E8D57u * c2;
    const uint32_t n0 = hi1 ^ c1 ^ k0, n1 = lo1, n2 = hi0 ^ c3 ^ k1, n3 = lo0;
    c0 = n0, c1 = n1, c2 = n2, c3 = n3;
  }
  const uint64_t bits = (uint64_t(c1) << 32 | c0) >> 11;
  return double(bits) * (1.0 / 9007199254740992.0);
}

__global__ void __launch_bounds__(kThreads) sample_kernel(const float* __restrict__ logits, int vocab,
                                                          const int32_t* __restrict__ specs, int* __restrict__ picks) {
  pdl_wait();
  pdl_launch_dependents();
  const int32_t* spec = specs + size_t(blockIdx.x) * kPickWords;
  if (spec[0] != 1) return;  // greedy or host-picked row: the argmax (or the host) answers
  const int top_k = spec[1];
  const float temperature = __int_as_float(spec[2]);
  const float top_p = __int_as_float(spec[3]);
  const float min_p = __int_as_float(spec[4]);
  const uint64_t seed = uint64_t(uint32_t(spec[5])) | (uint64_t(uint32_t(spec[6])) << 32);
  const uint32_t pos = uint32_t(spec[7]);

  __shared__ float cand_v[kDeviceTopKMax];
  __shared__ int cand_i[kDeviceTopKMax];
  __shared__ float red_v[kThreads / 32];
  __shared__ int red_i[kThreads / 32];
  const float* z = logits + size_t(blockIdx.x) * vocab;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  float pv = INFINITY;
  int pi = -1;
  int n = 0;
  for (; n < top_k; ++n) {
    float bv = -INFINITY;
    int bi = 0x7fffffff;
    for (int i = threadIdx.x; i < vocab; i += kThreads) {
      const float v = z[i];
      const bool after_prev = v < pv || (v == pv && i > pi);
      if (isfinite(v) && after_prev && before(v, i, bv, bi)) bv = v, bi = i;
    }
#pragma unroll
    for (int o = 16; o >= 1; o /= 2) {
      const float ov = __shfl_xor_sync(0xffffffffu, bv, o);
      const int oi = __shfl_xor_sync(0xffffffffu, bi, o);
      if (before(ov, oi, bv, bi)) bv = ov, bi = oi;
    }
    if (lane == 0) red_v[warp] = bv, red_i[warp] = bi;
    __syncthreads();
    if (warp == 0) {
      bv = red_v[lane];
      bi = red_i[lane];
#pragma unroll
      for (int o = 16; o >= 1; o /= 2) {
        const float ov = __shfl_xor_sync(0xffffffffu, bv, o);
        const int oi = __shfl_xor_sync(0xffffffffu, bi, o);
        if (before(ov, oi, bv, bi)) bv = ov, bi = oi;
      }
      if (lane == 0) {
        cand_v[n] = bv;
        cand_i[n] = bi;
      }
    }
    __syncthreads();
    pv = cand_v[n];
    pi = cand_i[n];
    __syncthreads();  // red_* are rewritten next round
    if (pi == 0x7fffffff) break;  // no finite logit left
  }
  if (threadIdx.x != 0) return;
  if (n == 0) return;  // nothing finite: the host rule is the argmax, already in picks
  double w[kDeviceTopKMax];
  const double inv_t = 1.0 / double(temperature);
  const double z_max = cand_v[0];
  double total = 0.0;
  for (int i = 0; i < n; ++i) {
    w[i] = exp((double(cand_v[i]) - z_max) * inv_t);
    total += w[i];
  }
  int keep = n;
  if (top_p < 1.0f) {
    const double target = double(top_p) * total;
    double cum = 0.0;
    for (int i = 0; i < n; ++i) {
      cum += w[i];
      if (cum >= target) {
        keep = i + 1;
        break;
      }
    }
  }
  if (min_p > 0.0f) {
    int m = 0;
    while (m < keep && w[m] >= double(min_p)) ++m;
    keep = m > 1 ? m : 1;
  }
  double kept = 0.0;
  for (int i = 0; i < keep; ++i) kept += w[i];
  const double u = philox_uniform_dev(seed, uint64_t(pos));
  double cum = 0.0;
  int pick = cand_i[keep - 1];  // u within rounding of 1
  for (int i = 0; i < keep; ++i) {
    cum += w[i] / kept;
    if (u < cum) {
      pick = cand_i[i];
      break;
    }
  }
  picks[blockIdx.x] = pick;
}

}  // namespace

void launch_sample(const float* logits, int rows, int vocab, const int32_t* specs, int* picks, cudaStream_t stream) {
  if (rows <= 0) return;
  launch_kernel(sample_kernel, rows, kThreads, 0, stream, logits, vocab, specs, picks);
  STRATA_CUDA_CHECK_LAUNCH();
}

}  // namespace cuda
}  // namespace strata
