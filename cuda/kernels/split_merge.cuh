// The merge of one row's attention splits for one head, by one warp: the arithmetic of attention_combine
// (attention.cu), which runs it as a kernel of its own, and of the fused GEMV (gemv.cu), which runs it while
// staging the o matmul's input so that no kernel boundary sits between attention and the o matmul. One
// function, so both give a row the same bits.
//
// Lane l holds dims d = l + 32 e (e < kDims). The weights, the sum of weights and the merge run in split
// order: M is the exact max of the splits' maxima; the sum of weights is, per lane, the splits s = l, l + 32,
// ... (fmaf), then a butterfly; each dim's sum is the splits in order (fmaf). kBatch splits' partials are
// loaded together (the first batch with the (m, l) pairs, so a row of up to kBatch splits waits for one round
// trip); it changes which loads are in flight together, never a number. Entries past the row's splits (up to
// max_splits) are read, in bounds, and ignored. Reads go through the L2 (the partials are the previous kernel's
// output, read once).
#pragma once
#include <cuda_runtime_api.h>

#include "cuda/kernels/kernels.hpp"

namespace strata {
namespace cuda {

template <int kDims, int kBatch>
__device__ __forceinline__ void merge_splits(const SplitMerge& a, int r, int h, int lane, float (&o)[kDims]) {
  static_assert(32 % kBatch == 0, "a batch never straddles 32 splits");
  constexpr unsigned kAll = 0xffffffffu;
  const int hd = a.head_dim;
  const size_t cell0 = (size_t(r) * a.n_heads + h) * a.max_splits;
  const float* acc = a.part_acc + cell0 * hd;
  const float* ml = a.part_ml + cell0 * 2;  // (m, l) of split s at 2 s

  float v[kBatch][kDims];
  const int nfirst = min(kBatch, a.max_splits);
#pragma unroll
  for (int k = 0; k < kBatch; ++k)
#pragma unroll
    for (int e = 0; e < kDims; ++e) {
      const int d = lane + 32 * e;
      v[k][e] = k < nfirst && d < hd ? __ldcg(acc + size_t(k) * hd + d) : 0.0f;
    }
  const float m0 = lane < a.max_splits ? __ldcg(ml + 2 * lane) : -INFINITY;
  const float l0 = lane < a.max_splits ? __ldcg(ml + 2 * lane + 1) : 0.0f;
  const int ns = a.pos[r] / kAttnSplit + 1;

  float M = lane < ns ? m0 : -INFINITY;
  for (int sp = lane + 32; sp < ns; sp += 32) M = fmaxf(M, __ldcg(ml + 2 * sp));
#pragma unroll
  for (int off = 16; off >= 1; off /= 2) M = fmaxf(M, __shfl_xor_sync(kAll, M, off));
  float Lsum = 0.0f, wc = 0.0f;  // wc: the weight of split (lane + 32 * chunk)
  if (lane < ns) {
    wc = expf(m0 - M);
    Lsum = __fmaf_rn(l0, wc, Lsum);
  }
  for (int sp = lane + 32; sp < ns; sp += 32)
    Lsum = __fmaf_rn(__ldcg(ml + 2 * sp + 1), expf(__ldcg(ml + 2 * sp) - M), Lsum);
#pragma unroll
  for (int off = 16; off >= 1; off /= 2) Lsum = __fadd_rn(Lsum, __shfl_xor_sync(kAll, Lsum, off));

  float out[kDims];
#pragma unroll
  for (int e = 0; e < kDims; ++e) out[e] = 0.0f;
  for (int sp0 = 0; sp0 < ns; sp0 += kBatch) {  // warp-uniform
    if (sp0 > 0) {
      if ((sp0 & 31) == 0) {
        const int s2 = sp0 + lane;
        wc = s2 < ns ? expf(__ldcg(ml + 2 * s2) - M) : 0.0f;
      }
#pragma unroll
      for (int k = 0; k < kBatch; ++k)
#pragma unroll
        for (int e = 0; e < kDims; ++e) {
          const int d = lane + 32 * e, sp = sp0 + k;
          v[k][e] = sp < ns && d < hd ? __ldcg(acc + size_t(sp) * hd + d) : 0.0f;
        }
    }
#pragma unroll
    for (int k = 0; k < kBatch; ++k) {
      if (sp0 + k < ns) {  // warp-uniform
        const float w = __shfl_sync(kAll, wc, (sp0 + k) & 31);
#pragma unroll
        for (int e = 0; e < kDims; ++e) out[e] = __fmaf_rn(v[k][e], w, out[e]);
      }
    }
  }
#pragma unroll
  for (int e = 0; e < kDims; ++e) o[e] = lane + 32 * e < hd ? __fdiv_rn(out[e], Lsum) : 0.0f;
}

}  // namespace cuda
}  // namespace strata
