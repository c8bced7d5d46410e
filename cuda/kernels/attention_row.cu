// A one-row window's attention in one kernel (launch_attention_row in kernels.hpp): what qkv_rope,
// the split kernel and the split merge do for the row, fused, for the tolerance path's decode step (every
// kernel launch of a one-row window is a few microseconds of latency and little work). A block per (KV head,
// split of kAttnSplit positions), templated on the GQA group size rounded up to a power of two:
// - before pdl_wait() it asks L2 for the split's K and V rows written by earlier windows (they do not depend
//   on the previous kernel), then prepares the group's q heads side by side (qkv_rope.cuh's prepare_heads)
//   and, in the split holding the row's position, the new k and v, which it also stores into the arena;
// - a thread per position computes the scores of every head of the group (fp32, dimensions in order, eight
//   16-byte K loads in flight), a warp per head takes the split's softmax (attn::split_softmax); for P.V a
//   position group of hd / 8 threads reads each V row as 16-byte pieces (four rows in flight), every thread
//   summing its positions in order, then the groups are added in group order;
// - the last split block of a KV head to finish (a counter per KV head, reset by that block) merges the
//   splits in split order and writes the output.
// Latency is the whole cost here (a few dozen blocks, a few hundred KB): every phase keeps its loads
// independent so that they overlap. Deterministic for a row and its slot's KV, but not the fixed-order
// kernels' bits.
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

// GM: the group size G rounded up to a power of two (the register arrays' extent; heads t >= G are skipped).
template <class T, int GM>
__global__ void __launch_bounds__(kThreads) attention_row_kernel(float* __restrict__ qkv, QkvRopeParams qp,
                                                                 AttentionParams ap, int* __restrict__ counters) {
  __shared__ float q[GM][kMaxHeadDim];
  __shared__ float kv_new[2][kMaxHeadDim];  // the row's own k and v, as the arena holds them
  __shared__ float p[GM][kThreads];         // scores, then their exp
  __shared__ float red[kThreads * 8];       // one head's P.V partials: [position group][head_dim]
  __shared__ long long off[kThreads];       // the split's arena rows (elements from kv.k / kv.v), this KV head
  __shared__ float inv_s[GM];
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
  const int qo = g * G * hd;
  prepare_heads(qkv + qo, nullptr, qp.bias ? qp.bias + qo : nullptr, G, qp.q_norm, qp.eps, cs, sn, hd, &q[0][0],
                kMaxHeadDim, inv_s);
  if (has_new) {
    const int ko = q_dim + g * hd, vo = q_dim + kv_dim + g * hd;
    prepare_heads(qkv + ko, nullptr, qp.bias ? qp.bias + ko : nullptr, 1, qp.k_norm, qp.eps, cs, sn, hd, kv_new[0],
                  kMaxHeadDim, inv_s);
    prepare_heads(qkv + vo, nullptr, qp.bias ? qp.bias + vo : nullptr, 1, nullptr, qp.eps, nullptr, nullptr, hd,
                  kv_new[1], kMaxHeadDim, inv_s);
    const size_t at = kv_offset(kv, slot, pos) + head_off;
    for (int d = tid; d < hd; d += kThreads) {
      store_kv(kv, kv.k, at + d, kv_new[0][d]);
      store_kv(kv, kv.v, at + d, kv_new[1][d]);
    }
    // The arena keeps K/V as its type stores them: the row attends to those values, as every other row will.
    __syncthreads();
    for (int d = tid; d < hd; d += kThreads) {
      kv_new[0][d] = kv_value<T>(kv_row<T>(kv.k, kv, slot, pos) + head_off, d);
      kv_new[1][d] = kv_value<T>(kv_row<T>(kv.v, kv, slot, pos) + head_off, d);
    }
    __syncthreads();
  }

  // Scores: thread j takes position j0 + j for every head of the group.
  if (tid < n) {
    const int j = j0 + tid;
    const bool own = j == pos;
    const T* kr = kbase + off[tid];
    float s[GM];
#pragma unroll
    for (int t = 0; t < GM; ++t) s[t] = 0.0f;
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
        for (int e = 0; e < 8; ++e)
#pragma unroll
          for (int t = 0; t < GM; ++t)
            if (t < G) s[t] = fmaf(q[t][d + e], kd[e], s[t]);
      }
    }
#pragma unroll
    for (int t = 0; t < GM; ++t)
      if (t < G) p[t][tid] = s[t] * ap.scale;
  }
  __syncthreads();
  // The split's softmax, a warp per head: exp(score - max) in place, (max, sum) to the partials.
  for (int t = warp; t < G; t += kThreads / 32) {
    const int h = g * G + t;
    attn::split_softmax(p[t], n, lane, ap.part_ml, size_t(h) * ap.max_splits + sp);
  }
  __syncthreads();

  // P.V: C = hd / 8 threads cover a V row (eight dimensions each); position group pg takes positions
  // pg, pg + PG, ... in order.
  const int C = hd / 8, PG = kThreads / C;
  const int c = tid % C, pg = tid / C;
  float acc[GM][8];
#pragma unroll
  for (int t = 0; t < GM; ++t)
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[t][e] = 0.0f;
  if (pg < PG) {
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
#pragma unroll
        for (int t = 0; t < GM; ++t) {
          if (t < G) {
            const float pj = p[t][jj];
#pragma unroll
            for (int e = 0; e < 8; ++e) acc[t][e] = fmaf(pj, vd[e], acc[t][e]);
          }
        }
      }
    }
  }
  // The position groups added in group order, a head at a time (PG * hd <= 8 kThreads floats).
#pragma unroll
  for (int t = 0; t < GM; ++t) {
    if (t >= G) break;
    if (pg < PG) {
#pragma unroll
      for (int e = 0; e < 8; ++e) red[pg * hd + 8 * c + e] = acc[t][e];
    }
    __syncthreads();
    for (int d = tid; d < hd; d += kThreads) {
      float sum = red[d];
      for (int q2 = 1; q2 < PG; ++q2) sum = __fadd_rn(sum, red[q2 * hd + d]);
      ap.part_acc[(size_t(g * G + t) * ap.max_splits + sp) * hd + d] = sum;
    }
    __syncthreads();
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
  // A thread per (head of the group, dimension); the splits' (max, sum) and P.V read in split order.
  for (int e = tid; e < G * hd; e += kThreads) {
    const int t = e / hd, d = e - t * hd, h = g * G + t;
    const float* ml = ap.part_ml + size_t(h) * ap.max_splits * 2;
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

template <class T>
void launch_for(int G, dim3 grid, cudaStream_t stream, float* qkv, const QkvRopeParams& qp,
                const AttentionParams& ap, int* counters) {
  if (G <= 1) launch_kernel(attention_row_kernel<T, 1>, grid, kThreads, 0, stream, qkv, qp, ap, counters);
  else if (G <= 2) launch_kernel(attention_row_kernel<T, 2>, grid, kThreads, 0, stream, qkv, qp, ap, counters);
  else if (G <= 4) launch_kernel(attention_row_kernel<T, 4>, grid, kThreads, 0, stream, qkv, qp, ap, counters);
  else if (G <= 8) launch_kernel(attention_row_kernel<T, 8>, grid, kThreads, 0, stream, qkv, qp, ap, counters);
  else launch_kernel(attention_row_kernel<T, 16>, grid, kThreads, 0, stream, qkv, qp, ap, counters);
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
  const int G = ap.n_heads / ap.n_kv_heads;
  if (ap.kv.type == KvType::BF16) launch_for<__nv_bfloat16>(G, grid, stream, qkv, qp, ap, counters);
  else launch_for<float>(G, grid, stream, qkv, qp, ap, counters);
  STRATA_CUDA_CHECK_LAUNCH();
}

}  // namespace cuda
}  // namespace strata
