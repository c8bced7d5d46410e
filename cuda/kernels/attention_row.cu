// A one-row window's attention in one kernel (launch_attention_row in kernels.hpp): what qkv_rope,
// the split kernel and the split merge do for the row, fused, for the tolerance path's decode step (every
// kernel launch of a one-row window is a few microseconds of latency and little work). A block per (query
// head, split of kAttnSplit positions), so that each block's chain of dependent steps is short:
// - before pdl_wait() it asks L2 for the split's K and V rows written by earlier windows (they do not depend
//   on the previous kernel), then prepares its q head (qkv_rope.cuh's prepare_heads) and, in the split
//   holding the row's position, the new k and v as the arena rounds them; the group's first head stores them;
// - a thread per position computes the head's scores (fp32, dimensions in order, eight 16-byte K loads in
//   flight), one warp the split's softmax (attn::split_softmax); for P.V a position group of hd / 8 threads
//   reads each V row as 16-byte pieces (four rows in flight), each thread summing its positions in order,
//   then the groups are added in group order;
// - the last split block of a head to finish (a counter per head, reset by that block) merges the splits in
//   split order and writes the output.
// The group's heads read the same K/V rows (from L2 after the first). Deterministic for a row and its slot's
// KV, but not the fixed-order kernels' bits.
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
constexpr int kScoreLoads = 8;  // 16-byte K pieces a thread has in flight
constexpr int kValueRows = 4;   // V rows a P.V thread has in flight

// Eight consecutive values of an arena row (16-byte aligned when head_dim is a multiple of 8), loaded as is
// and widened exactly when used.
template <class T>
struct Pack8;
template <>
struct Pack8<__nv_bfloat16> {
  uint4 v;
  __device__ __forceinline__ void load(const __nv_bfloat16* r) { v = *reinterpret_cast<const uint4*>(r); }
  __device__ __forceinline__ void widen(float* o) const {
    float4 w[2];
    widen_bf16x8(v, w);
    o[0] = w[0].x, o[1] = w[0].y, o[2] = w[0].z, o[3] = w[0].w;
    o[4] = w[1].x, o[5] = w[1].y, o[6] = w[1].z, o[7] = w[1].w;
  }
};
template <>
struct Pack8<float> {
  float4 a, b;
  __device__ __forceinline__ void load(const float* r) {
    a = *reinterpret_cast<const float4*>(r);
    b = *reinterpret_cast<const float4*>(r + 4);
  }
  __device__ __forceinline__ void widen(float* o) const {
    o[0] = a.x, o[1] = a.y, o[2] = a.z, o[3] = a.w, o[4] = b.x, o[5] = b.y, o[6] = b.z, o[7] = b.w;
  }
};

// A value as the arena of type T holds it (store_kv's rounding).
template <class T>
__device__ __forceinline__ float as_stored(float v);
template <>
__device__ __forceinline__ float as_stored<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ float as_stored<__nv_bfloat16>(float v) {
  return __bfloat162float(to_bf16(v));
}

template <class T>
__global__ void __launch_bounds__(kThreads) attention_row_kernel(float* __restrict__ qkv, QkvRopeParams qp,
                                                                 AttentionParams ap, int* __restrict__ counters) {
  __shared__ float q[kMaxHeadDim];
  __shared__ float kv_new[2][kMaxHeadDim];  // the row's own k and v, as the arena holds them
  __shared__ float p[kThreads];             // scores, then their exp
  __shared__ float red[kThreads * 8];       // P.V partials: [position group][head_dim]
  __shared__ long long off[kThreads];       // the split's arena rows (elements from kv.k / kv.v), this KV head
  __shared__ float inv_s;
  __shared__ int last_block;
  const int tid = threadIdx.x, lane = tid & 31;
  const int h = blockIdx.x, sp = blockIdx.y;
  const int hd = ap.head_dim, half = hd / 2;
  const int G = ap.n_heads / ap.n_kv_heads, g = h / G;
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
    if (j < pos && h % G == 0) {
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
  const int qo = h * hd;
  prepare_heads(qkv + qo, nullptr, qp.bias ? qp.bias + qo : nullptr, 1, qp.q_norm, qp.eps, cs, sn, hd, q, hd,
                &inv_s);
  if (has_new) {
    const int ko = q_dim + g * hd, vo = q_dim + kv_dim + g * hd;
    prepare_heads(qkv + ko, nullptr, qp.bias ? qp.bias + ko : nullptr, 1, qp.k_norm, qp.eps, cs, sn, hd, kv_new[0],
                  hd, &inv_s);
    prepare_heads(qkv + vo, nullptr, qp.bias ? qp.bias + vo : nullptr, 1, nullptr, qp.eps, nullptr, nullptr, hd,
                  kv_new[1], hd, &inv_s);
    const size_t at = kv_offset(kv, slot, pos) + head_off;
    for (int d = tid; d < hd; d += kThreads) {
      if (h % G == 0) {
        store_kv(kv, kv.k, at + d, kv_new[0][d]);
        store_kv(kv, kv.v, at + d, kv_new[1][d]);
      }
      // The row attends to its k and v as the arena keeps them, as every other row will.
      kv_new[0][d] = as_stored<T>(kv_new[0][d]);
      kv_new[1][d] = as_stored<T>(kv_new[1][d]);
    }
    __syncthreads();
  }

  // Scores: thread j takes position j0 + j.
  if (tid < n) {
    const int j = j0 + tid;
    const bool own = j == pos;
    const T* kr = kbase + off[tid];
    float s = 0.0f;
    for (int d0 = 0; d0 < hd; d0 += 8 * kScoreLoads) {
      Pack8<T> pk[kScoreLoads];
#pragma unroll
      for (int b = 0; b < kScoreLoads; ++b)
        if (!own && d0 + 8 * b < hd) pk[b].load(kr + d0 + 8 * b);
#pragma unroll
      for (int b = 0; b < kScoreLoads; ++b) {
        const int d = d0 + 8 * b;
        if (d >= hd) break;
        float kd[8];
        if (own) {
#pragma unroll
          for (int e = 0; e < 8; ++e) kd[e] = kv_new[0][d + e];
        } else {
          pk[b].widen(kd);
        }
#pragma unroll
        for (int e = 0; e < 8; ++e) s = fmaf(q[d + e], kd[e], s);
      }
    }
    p[tid] = s * ap.scale;
  }
  __syncthreads();
  // The split's softmax by one warp: exp(score - max) in place, (max, sum) to the partials.
  if (tid < 32) attn::split_softmax(p, n, lane, ap.part_ml, size_t(h) * ap.max_splits + sp);
  __syncthreads();

  // P.V: C = hd / 8 threads cover a V row (eight dimensions each); position group pg takes positions
  // pg, pg + PG, ... in order.
  const int C = hd / 8, PG = kThreads / C;
  const int c = tid % C, pg = tid / C;
  if (pg < PG) {
    float acc[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[e] = 0.0f;
    for (int jb = pg; jb < n; jb += PG * kValueRows) {
      Pack8<T> pv[kValueRows];
#pragma unroll
      for (int u = 0; u < kValueRows; ++u) {
        const int jj = jb + u * PG;
        if (jj < n && j0 + jj != pos) pv[u].load(vbase + off[jj] + 8 * c);
      }
#pragma unroll
      for (int u = 0; u < kValueRows; ++u) {
        const int jj = jb + u * PG;
        if (jj >= n) break;
        float vd[8];
        if (j0 + jj == pos) {
#pragma unroll
          for (int e = 0; e < 8; ++e) vd[e] = kv_new[1][8 * c + e];
        } else {
          pv[u].widen(vd);
        }
        const float pj = p[jj];
#pragma unroll
        for (int e = 0; e < 8; ++e) acc[e] = fmaf(pj, vd[e], acc[e]);
      }
    }
#pragma unroll
    for (int e = 0; e < 8; ++e) red[pg * hd + 8 * c + e] = acc[e];
  }
  __syncthreads();
  // The position groups added in group order (PG * hd <= 8 kThreads floats).
  for (int d = tid; d < hd; d += kThreads) {
    float sum = red[d];
    for (int q2 = 1; q2 < PG; ++q2) sum = __fadd_rn(sum, red[q2 * hd + d]);
    ap.part_acc[(size_t(h) * ap.max_splits + sp) * hd + d] = sum;
  }

  // The last split of this head to finish merges them all.
  __threadfence();
  __syncthreads();
  if (tid == 0) {
    const int done = atomicAdd(&counters[h], 1);
    last_block = done == n_splits - 1;
    if (last_block) counters[h] = 0;  // every split has counted: ready for the next layer
  }
  __syncthreads();
  if (!last_block) return;
  __threadfence();
  const float* ml = ap.part_ml + size_t(h) * ap.max_splits * 2;
  for (int d = tid; d < hd; d += kThreads) {
    const float* pa = ap.part_acc + size_t(h) * ap.max_splits * hd + d;
    float M = -INFINITY;
    for (int s2 = 0; s2 < n_splits; ++s2) M = fmaxf(M, __ldcg(ml + 2 * s2));
    float L = 0.0f, out = 0.0f;
    for (int s2 = 0; s2 < n_splits; ++s2) {
      const float w = expf(__ldcg(ml + 2 * s2) - M);
      L = fmaf(__ldcg(ml + 2 * s2 + 1), w, L);
      out = fmaf(__ldcg(pa + size_t(s2) * hd), w, out);
    }
    ap.out[size_t(h) * hd + d] = out / L;
  }
}

}  // namespace

bool attention_row_supports(int n_heads, int n_kv_heads, int head_dim) {
  return n_kv_heads > 0 && n_heads % n_kv_heads == 0 && head_dim % 8 == 0 && head_dim <= kMaxHeadDim;
}

void launch_attention_row(float* qkv, const QkvRopeParams& qp, const AttentionParams& ap, int* counters,
                          cudaStream_t stream) {
  if (!attention_row_supports(ap.n_heads, ap.n_kv_heads, ap.head_dim))
    throw Error("cuda attention_row: " + std::to_string(ap.n_heads) + " heads over " +
                std::to_string(ap.n_kv_heads) + " KV heads of head_dim " + std::to_string(ap.head_dim) +
                " is not supported (query heads a multiple of the KV heads, head_dim a multiple of 8 up to 256)");
  if (ap.rows != 1) throw Error("cuda attention_row: a one-row window only, got " + std::to_string(ap.rows));
  const dim3 grid(ap.n_heads, ap.grid_splits);
  if (ap.kv.type == KvType::BF16)
    launch_kernel(attention_row_kernel<__nv_bfloat16>, grid, kThreads, 0, stream, qkv, qp, ap, counters);
  else
    launch_kernel(attention_row_kernel<float>, grid, kThreads, 0, stream, qkv, qp, ap, counters);
  STRATA_CUDA_CHECK_LAUNCH();
}

}  // namespace cuda
}  // namespace strata
