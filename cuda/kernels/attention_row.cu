// A one-row window's attention in one kernel (launch_attention_row in kernels.hpp): what qkv_rope,
// the split kernel and the split merge do for the row, fused, for the tolerance path's decode step (every
// kernel launch of a one-row window is a few microseconds of latency and little work). A block per (KV head,
// split of kAttnSplit positions):
// - before pdl_wait() it asks L2 for the split's K and V rows written by earlier windows (they do not depend
//   on the previous kernel), then prepares the group's q heads (qkv_rope.cuh's prepare_head) and, in the
//   split holding the row's position, the new k and v, which it also stores into the arena;
// - a thread per position computes the scores of every head of the group (fp32, dimensions in order), a
//   warp per head takes the split's softmax (attn::split_softmax), a thread per dimension P.V in position
//   order; the split's (max, sum, P.V) go to the partial buffers;
// - the last split block of a KV head to finish (a counter per KV head, reset by that block) merges the
//   splits in split order and writes the output.
// Deterministic for a row and its slot's KV, but not the fixed-order kernels' bits.
#include <cuda_bf16.h>

#include "cuda/cuda_check.hpp"
#include "cuda/kernels/attention_common.cuh"
#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/kernels.hpp"
#include "cuda/kernels/kv_access.cuh"
#include "cuda/kernels/launch.cuh"
#include "cuda/kernels/qkv_rope.cuh"

namespace strata {
namespace cuda {
namespace {

constexpr int kThreads = kAttnSplit;  // a thread per position of the split
constexpr int kMaxHeadDim = 256;
constexpr int kMaxGroup = 16;  // query heads per KV head

// Eight consecutive values of an arena row from element d (a multiple of 8; rows are 16-byte aligned when
// head_dim is a multiple of 8), widened exactly.
template <class T>
__device__ __forceinline__ void kv_values8(const T* row, int d, float* out);
template <>
__device__ __forceinline__ void kv_values8<float>(const float* row, int d, float* out) {
  const float4 a = *reinterpret_cast<const float4*>(row + d), b = *reinterpret_cast<const float4*>(row + d + 4);
  out[0] = a.x, out[1] = a.y, out[2] = a.z, out[3] = a.w, out[4] = b.x, out[5] = b.y, out[6] = b.z, out[7] = b.w;
}
template <>
__device__ __forceinline__ void kv_values8<__nv_bfloat16>(const __nv_bfloat16* row, int d, float* out) {
  float4 w[2];
  widen_bf16x8(*reinterpret_cast<const uint4*>(row + d), w);
  out[0] = w[0].x, out[1] = w[0].y, out[2] = w[0].z, out[3] = w[0].w;
  out[4] = w[1].x, out[5] = w[1].y, out[6] = w[1].z, out[7] = w[1].w;
}

template <class T>
__device__ __forceinline__ float kv_value(const T* row, int d);
template <>
__device__ __forceinline__ float kv_value<float>(const float* row, int d) {
  return row[d];
}
template <>
__device__ __forceinline__ float kv_value<__nv_bfloat16>(const __nv_bfloat16* row, int d) {
  return __bfloat162float(row[d]);
}

template <class T>
__global__ void __launch_bounds__(kThreads) attention_row_kernel(float* __restrict__ qkv, QkvRopeParams qp,
                                                                 AttentionParams ap, int* __restrict__ counters) {
  __shared__ float q[kMaxGroup][kMaxHeadDim];
  __shared__ float k_new[kMaxHeadDim], v_new[kMaxHeadDim], work[kMaxHeadDim];
  __shared__ float p[kMaxGroup][kThreads];  // scores, then their exp
  __shared__ long long off[kThreads];  // the split's arena rows (elements from kv.k / kv.v), this KV head
  __shared__ float inv_s;
  __shared__ int last_block;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = blockIdx.x, sp = blockIdx.y;
  const int hd = ap.head_dim, half = hd / 2;
  const int G = ap.n_heads / ap.n_kv_heads;
  const int pos = ap.pos[0], slot = ap.slot[0];
  const int n_splits = pos / kAttnSplit + 1;
  if (sp >= n_splits) return;  // the grid covers the graph's largest position
  const int j0 = sp * kAttnSplit, n = min(kAttnSplit, pos + 1 - j0);
  const bool has_new = sp == n_splits - 1;  // this split holds the row's own position
  const KvLayout& kv = ap.kv;
  const size_t head_off = size_t(g) * hd;

  // The split's K and V rows from earlier windows, fetched into L2 while the previous kernel finishes (the
  // block table and the row's position are this window's metadata, copied before the graph's kernels).
  const T* kbase = static_cast<const T*>(kv.k);
  const T* vbase = static_cast<const T*>(kv.v);
  if (tid < n) {
    const int j = j0 + tid;
    off[tid] = static_cast<long long>(kv_offset(kv, slot, j) + head_off);
    if (j < pos) {
      for (int b = 0; b < hd * int(sizeof(T)); b += 128) {
        asm volatile("prefetch.global.L2 [%0];" ::"l"(reinterpret_cast<const char*>(kbase + off[tid]) + b));
        asm volatile("prefetch.global.L2 [%0];" ::"l"(reinterpret_cast<const char*>(vbase + off[tid]) + b));
      }
    }
  }
  pdl_wait();  // q, k and v are the previous kernel's output
  pdl_launch_dependents();

  const int q_dim = ap.n_heads * hd, kv_dim = ap.n_kv_heads * hd;
  const float* cs = qp.cos + size_t(pos) * half;
  const float* sn = qp.sin + size_t(pos) * half;
  for (int t = 0; t < G; ++t) {
    const int off = (g * G + t) * hd;
    prepare_head(qkv + off, nullptr, qp.bias ? qp.bias + off : nullptr, qp.q_norm, qp.eps, cs, sn, hd, q[t], work,
                 &inv_s);
  }
  if (has_new) {
    const int ko = q_dim + g * hd, vo = q_dim + kv_dim + g * hd;
    prepare_head(qkv + ko, nullptr, qp.bias ? qp.bias + ko : nullptr, qp.k_norm, qp.eps, cs, sn, hd, k_new, work,
                 &inv_s);
    prepare_head(qkv + vo, nullptr, qp.bias ? qp.bias + vo : nullptr, nullptr, qp.eps, nullptr, nullptr, hd, v_new,
                 work, &inv_s);
    const size_t at = kv_offset(kv, slot, pos) + head_off;
    for (int d = tid; d < hd; d += kThreads) {
      store_kv(kv, kv.k, at + d, k_new[d]);
      store_kv(kv, kv.v, at + d, v_new[d]);
    }
    // The arena keeps K/V as its type stores them: the row attends to those values, as every other row will.
    __syncthreads();
    for (int d = tid; d < hd; d += kThreads) {
      k_new[d] = kv_value<T>(kv_row<T>(kv.k, kv, slot, pos) + head_off, d);
      v_new[d] = kv_value<T>(kv_row<T>(kv.v, kv, slot, pos) + head_off, d);
    }
    __syncthreads();
  }

  // Scores: thread j takes position j0 + j for every head of the group.
  if (tid < n) {
    const int j = j0 + tid;
    const T* kr = kbase + off[tid];
    float s[kMaxGroup];
#pragma unroll
    for (int t = 0; t < kMaxGroup; ++t) s[t] = 0.0f;
    for (int d0 = 0; d0 < hd; d0 += 8) {
      float kd[8];
      if (j == pos) {
#pragma unroll
        for (int e = 0; e < 8; ++e) kd[e] = k_new[d0 + e];
      } else {
        kv_values8<T>(kr, d0, kd);
      }
#pragma unroll
      for (int e = 0; e < 8; ++e)
#pragma unroll
        for (int t = 0; t < kMaxGroup; ++t)
          if (t < G) s[t] = fmaf(q[t][d0 + e], kd[e], s[t]);
    }
#pragma unroll
    for (int t = 0; t < kMaxGroup; ++t)
      if (t < G) p[t][tid] = s[t] * ap.scale;
  }
  __syncthreads();
  // The split's softmax, a warp per head: exp(score - max) in place, (max, sum) to the partials.
  for (int t = warp; t < G; t += kThreads / 32) {
    const int h = g * G + t;
    attn::split_softmax(p[t], n, lane, ap.part_ml, size_t(h) * ap.max_splits + sp);
  }
  __syncthreads();
  // P.V: a thread per dimension, positions in order.
  for (int d = tid; d < hd; d += kThreads) {
    float acc[kMaxGroup];
#pragma unroll
    for (int t = 0; t < kMaxGroup; ++t) acc[t] = 0.0f;
    for (int jj = 0; jj < n; ++jj) {
      const int j = j0 + jj;
      const float vd = j == pos ? v_new[d] : kv_value<T>(vbase + off[jj], d);
#pragma unroll
      for (int t = 0; t < kMaxGroup; ++t)
        if (t < G) acc[t] = fmaf(p[t][jj], vd, acc[t]);
    }
#pragma unroll
    for (int t = 0; t < kMaxGroup; ++t)
      if (t < G) ap.part_acc[(size_t(g * G + t) * ap.max_splits + sp) * hd + d] = acc[t];
  }

  // The last split of this KV head to finish merges them all.
  __threadfence();
  __syncthreads();
  if (tid == 0) {
    const int done = atomicAdd(&counters[g], 1);
    last_block = done == n_splits - 1;
    if (last_block) counters[g] = 0;  // every split has counted: ready for the next layer
  }
  __syncthreads();
  if (!last_block) return;
  __threadfence();
  for (int t = 0; t < G; ++t) {
    const int h = g * G + t;
    const float* ml = ap.part_ml + size_t(h) * ap.max_splits * 2;
    float M = -INFINITY;
    for (int s2 = 0; s2 < n_splits; ++s2) M = fmaxf(M, __ldcg(ml + 2 * s2));
    for (int d = tid; d < hd; d += kThreads) {
      float L = 0.0f, out = 0.0f;
      for (int s2 = 0; s2 < n_splits; ++s2) {
        const float w = expf(__ldcg(ml + 2 * s2) - M);
        L = fmaf(__ldcg(ml + 2 * s2 + 1), w, L);
        out = fmaf(__ldcg(ap.part_acc + (size_t(h) * ap.max_splits + s2) * hd + d), w, out);
      }
      ap.out[size_t(h) * hd + d] = out / L;
    }
  }
}

}  // namespace

bool attention_row_supports(int n_heads, int n_kv_heads, int head_dim) {
  return n_kv_heads > 0 && n_heads % n_kv_heads == 0 && n_heads / n_kv_heads <= kMaxGroup && head_dim % 8 == 0 &&
         head_dim <= kMaxHeadDim;
}

void launch_attention_row(float* qkv, const QkvRopeParams& qp, const AttentionParams& ap, int* counters,
                          cudaStream_t stream) {
  if (!attention_row_supports(ap.n_heads, ap.n_kv_heads, ap.head_dim))
    throw Error("cuda attention_row: " + std::to_string(ap.n_heads) + " heads over " +
                std::to_string(ap.n_kv_heads) + " KV heads of head_dim " + std::to_string(ap.head_dim) +
                " is not supported (at most 16 query heads per KV head, head_dim a multiple of 8 up to 256)");
  if (ap.rows != 1) throw Error("cuda attention_row: a one-row window only, got " + std::to_string(ap.rows));
  const dim3 grid(ap.n_kv_heads, ap.grid_splits);
  if (ap.kv.type == KvType::BF16)
    launch_kernel(attention_row_kernel<__nv_bfloat16>, grid, kThreads, 0, stream, qkv, qp, ap, counters);
  else
    launch_kernel(attention_row_kernel<float>, grid, kThreads, 0, stream, qkv, qp, ap, counters);
  STRATA_CUDA_CHECK_LAUNCH();
}

}  // namespace cuda
}  // namespace strata
