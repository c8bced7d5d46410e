// Embedding gather: each row's token selects one table row, widened exactly to fp32 (the residual stream's
// type). Token ids were range-checked on the host before the window's metadata was uploaded.
#include <cuda_bf16.h>

#include <string>

#include "cuda/cuda_check.hpp"
#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/kernels.hpp"
#include "cuda/kernels/launch.cuh"

namespace strata {
namespace cuda {
namespace {

// Row r's token: the metadata's, or a chained step's pick (kept by the row's thread 0).
__device__ __forceinline__ int row_token(const int* tokens, const EmbedFeed& feed, int r) {
  if (r >= feed.n) return tokens[r];
  const int t = feed.picks[r];
  if (feed.kept && threadIdx.x == 0) feed.kept[r] = t;
  return t;
}

template <bool Fold>
__global__ void embedding_bf16(const __nv_bfloat16* __restrict__ table, int hidden, const int* __restrict__ tokens,
                               float* __restrict__ x, const float* __restrict__ norm, float* __restrict__ xn,
                               float* __restrict__ ss, EmbedFeed feed) {
  pdl_wait();
  pdl_launch_dependents();
  const int r = blockIdx.x;
  const __nv_bfloat16* src = table + size_t(row_token(tokens, feed, r)) * hidden;
  // Eight values a thread a step, every load of the row in flight at once (one two-byte load per step took
  // ~9 us for a 4096-wide row under Nsight). hidden is a multiple of 8 (launch_embedding checks).
  const uint4* s4 = reinterpret_cast<const uint4*>(src);
  float4* d4 = reinterpret_cast<float4*>(x + size_t(r) * hidden);
  if constexpr (!Fold) {
#pragma unroll 4
    for (int i = threadIdx.x; i < hidden / 8; i += blockDim.x) widen_bf16x8(s4[i], d4 + 2 * i);
  } else {
    // Fold: a thread's 8 values are half of a part of 16 (hidden is a multiple of 16, the block size even, so
    // the two threads of a part are neighbouring lanes, both active): its sum of squares in element order,
    // then the pair's two sums added, the even lane's first.
    const float4* n4 = reinterpret_cast<const float4*>(norm);
    float4* o4 = reinterpret_cast<float4*>(xn + size_t(r) * hidden);
    for (int i = threadIdx.x; i < hidden / 8; i += blockDim.x) {
      float4 v[2];
      widen_bf16x8(s4[i], v);
      d4[2 * i] = v[0], d4[2 * i + 1] = v[1];
      float sq = 0.0f;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float4 nw = n4[2 * i + h];
        o4[2 * i + h] = make_float4(__fmul_rn(nw.x, v[h].x), __fmul_rn(nw.y, v[h].y), __fmul_rn(nw.z, v[h].z),
                                    __fmul_rn(nw.w, v[h].w));
        sq = __fmaf_rn(v[h].x, v[h].x, sq);
        sq = __fmaf_rn(v[h].y, v[h].y, sq);
        sq = __fmaf_rn(v[h].z, v[h].z, sq);
        sq = __fmaf_rn(v[h].w, v[h].w, sq);
      }
      const float other = __shfl_xor_sync(__activemask(), sq, 1);
      if ((i & 1) == 0) ss[size_t(r) * (hidden / 16) + i / 2] = __fadd_rn(sq, other);
    }
  }
}

__global__ void embedding_f32(const float* __restrict__ table, int hidden, const int* __restrict__ tokens,
                              float* __restrict__ x, EmbedFeed feed) {
  pdl_wait();
  pdl_launch_dependents();
  const int r = blockIdx.x;
  const float* src = table + size_t(row_token(tokens, feed, r)) * hidden;
  for (int i = threadIdx.x; i < hidden; i += blockDim.x) x[size_t(r) * hidden + i] = src[i];
}

// A feature-reading model's input row: xcat[r] = [table[token r] widened; features[r]] (2 hidden values), the
// input of its fc matrix.
template <typename T>
__global__ void feature_input(const T* __restrict__ table, int hidden, const int* __restrict__ tokens,
                              const float* __restrict__ features, float* __restrict__ xcat, EmbedFeed feed) {
  pdl_wait();
  pdl_launch_dependents();
  const int r = blockIdx.x;
  const T* src = table + size_t(row_token(tokens, feed, r)) * hidden;
  float* dst = xcat + size_t(r) * 2 * hidden;
  const float* f = features + size_t(r) * hidden;
  for (int i = threadIdx.x; i < hidden; i += blockDim.x) {
    dst[i] = float(src[i]);
    dst[hidden + i] = f[i];
  }
}

}  // namespace

void launch_feature_input(const void* table, WType t, int hidden, const int* tokens, int rows, const float* features,
                          float* xcat, cudaStream_t stream, const EmbedFeed& feed) {
  if (rows <= 0) return;
  if (feed.n > 0 && (!feed.picks || feed.n > rows))
    throw Error("cuda feature input: a chained step's picks must cover at most the window's rows");
  if (t == WType::BF16)
    launch_kernel(feature_input<__nv_bfloat16>, rows, 256, 0, stream, static_cast<const __nv_bfloat16*>(table), hidden,
                  tokens, features, xcat, feed);
  else
    launch_kernel(feature_input<float>, rows, 256, 0, stream, static_cast<const float*>(table), hidden, tokens, features,
                  xcat, feed);
  STRATA_CUDA_CHECK_LAUNCH();
}

void launch_embedding(const void* table, WType t, int hidden, const int* tokens, int rows, float* x,
                      cudaStream_t stream, const float* norm, float* xn, float* ss, const EmbedFeed& feed) {
  if (rows <= 0) return;
  if (t == WType::BF16 && hidden % 8 != 0)
    throw Error("cuda embedding: hidden " + std::to_string(hidden) + " is not a multiple of 8");
  if (feed.n > 0 && (!feed.picks || feed.n > rows))
    throw Error("cuda embedding: a chained step's picks must cover at most the window's rows");
  if (norm && (t != WType::BF16 || hidden % 16 != 0 || !xn || !ss))
    throw Error("cuda embedding: the folded norm needs a bf16 table, hidden a multiple of 16, xn and ss");
  const auto* tb = static_cast<const __nv_bfloat16*>(table);
  if (t == WType::BF16 && norm)
    launch_kernel(embedding_bf16<true>, rows, 256, 0, stream, tb, hidden, tokens, x, norm, xn, ss, feed);
  else if (t == WType::BF16)
    launch_kernel(embedding_bf16<false>, rows, 256, 0, stream, tb, hidden, tokens, x, static_cast<const float*>(nullptr),
                  static_cast<float*>(nullptr), static_cast<float*>(nullptr), feed);
  else
    launch_kernel(embedding_f32, rows, 256, 0, stream, static_cast<const float*>(table), hidden, tokens, x, feed);
  STRATA_CUDA_CHECK_LAUNCH();
}

}  // namespace cuda
}  // namespace strata
