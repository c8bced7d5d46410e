// The body of launch_attention_row (attention_row.cu) as a device step on one (query head, split) work item
// of kThreads threads, its kernel running a block an item. See attention_row.cu for what it does.
#pragma once
#include <cuda_bf16.h>

#include "cuda/kernels/attention_common.cuh"
#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/kernels.hpp"
#include "cuda/kernels/kv_access.cuh"
#include "cuda/kernels/qkv_rope.cuh"

namespace strata {
namespace cuda {
namespace row_attn {

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


// An item's shared memory: q and the row's own k and v ([kMaxHeadDim] each), the scores ([kThreads]), the P.V
// partials ([kThreads * 8]), the split's arena rows ([kThreads]), one float and one int of scratch.
struct Scratch {
  float* q;
  float* k_new;
  float* v_new;
  float* p;
  float* red;
  long long* off;
  float* inv;
  int* last;
};
constexpr size_t kScratchBytes = (3 * kMaxHeadDim + kThreads + kThreads * 8 + 2) * 4 + kThreads * 8;

// Carves an item's scratch from `base` (kScratchBytes, 8-byte aligned).
__device__ __forceinline__ Scratch carve(char* base) {
  Scratch s;
  s.off = reinterpret_cast<long long*>(base);
  float* f = reinterpret_cast<float*>(base + kThreads * 8);
  s.q = f;
  s.k_new = f + kMaxHeadDim;
  s.v_new = f + 2 * kMaxHeadDim;
  s.p = f + 3 * kMaxHeadDim;
  s.red = s.p + kThreads;
  s.inv = s.red + kThreads * 8;
  s.last = reinterpret_cast<int*>(s.inv + 1);
  return s;
}

// Work item (query head h, split sp) of a one-row window, by kThreads threads numbered tid, which sync() holds
// together. wait() runs between the L2 prefetch of the split's earlier K/V rows (metadata only) and the first
// read of q/k/v.
template <class T, class Sync, class Wait>
__device__ __forceinline__ void item(float* qkv, const QkvRopeParams& qp, const AttentionParams& ap, int* counters,
                                     int h, int sp, int tid, const Scratch sm, Sync sync, Wait wait) {
  const int lane = tid & 31;
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
    sm.off[tid] = static_cast<long long>(kv_offset(kv, slot, j) + head_off);
    if (j < pos && h % G == 0) {
      for (int b = 0; b < hd * int(sizeof(T)); b += 128) {
        asm volatile("prefetch.global.L2 [%0];" ::"l"(reinterpret_cast<const char*>(kbase + sm.off[tid]) + b));
        asm volatile("prefetch.global.L2 [%0];" ::"l"(reinterpret_cast<const char*>(vbase + sm.off[tid]) + b));
      }
    }
  }
  wait();  // q, k and v are the previous kernel's output

  const int q_dim = ap.n_heads * hd, kv_dim = ap.n_kv_heads * hd;
  const float* cs = qp.cos + size_t(pos) * half;
  const float* sn = qp.sin + size_t(pos) * half;
  const int qo = h * hd;
  prepare_heads_synced(qkv + qo, nullptr, qp.bias ? qp.bias + qo : nullptr, 1, qp.q_norm, qp.eps, cs, sn, hd, sm.q,
                       hd, sm.inv, tid, kThreads, sync);
  if (has_new) {
    const int ko = q_dim + g * hd, vo = q_dim + kv_dim + g * hd;
    prepare_heads_synced(qkv + ko, nullptr, qp.bias ? qp.bias + ko : nullptr, 1, qp.k_norm, qp.eps, cs, sn, hd,
                         sm.k_new, hd, sm.inv, tid, kThreads, sync);
    prepare_heads_synced(qkv + vo, nullptr, qp.bias ? qp.bias + vo : nullptr, 1, nullptr, qp.eps, nullptr, nullptr,
                         hd, sm.v_new, hd, sm.inv, tid, kThreads, sync);
    const size_t at = kv_offset(kv, slot, pos) + head_off;
    for (int d = tid; d < hd; d += kThreads) {
      if (h % G == 0) {
        store_kv(kv, kv.k, at + d, sm.k_new[d]);
        store_kv(kv, kv.v, at + d, sm.v_new[d]);
      }
      // The row attends to its k and v as the arena keeps them, as every other row will.
      sm.k_new[d] = as_stored<T>(sm.k_new[d]);
      sm.v_new[d] = as_stored<T>(sm.v_new[d]);
    }
    sync();
  }

  // Scores: thread j takes position j0 + j.
  if (tid < n) {
    const int j = j0 + tid;
    const bool own = j == pos;
    const T* kr = kbase + sm.off[tid];
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
          for (int e = 0; e < 8; ++e) kd[e] = sm.k_new[d + e];
        } else {
          pk[b].widen(kd);
        }
#pragma unroll
        for (int e = 0; e < 8; ++e) s = fmaf(sm.q[d + e], kd[e], s);
      }
    }
    sm.p[tid] = s * ap.scale;
  }
  sync();
  // The split's softmax by one warp: exp(score - max) in place, (max, sum) to the partials.
  if (tid < 32) attn::split_softmax(sm.p, n, lane, ap.part_ml, size_t(h) * ap.max_splits + sp);
  sync();

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
        if (jj < n && j0 + jj != pos) pv[u].load(vbase + sm.off[jj] + 8 * c);
      }
#pragma unroll
      for (int u = 0; u < kValueRows; ++u) {
        const int jj = jb + u * PG;
        if (jj >= n) break;
        float vd[8];
        if (j0 + jj == pos) {
#pragma unroll
          for (int e = 0; e < 8; ++e) vd[e] = sm.v_new[8 * c + e];
        } else {
          pv[u].widen(vd);
        }
        const float pj = sm.p[jj];
#pragma unroll
        for (int e = 0; e < 8; ++e) acc[e] = fmaf(pj, vd[e], acc[e]);
      }
    }
#pragma unroll
    for (int e = 0; e < 8; ++e) sm.red[pg * hd + 8 * c + e] = acc[e];
  }
  sync();
  // The position groups added in group order (PG * hd <= 8 kThreads floats).
  for (int d = tid; d < hd; d += kThreads) {
    float sum = sm.red[d];
    for (int q2 = 1; q2 < PG; ++q2) sum = __fadd_rn(sum, sm.red[q2 * hd + d]);
    ap.part_acc[(size_t(h) * ap.max_splits + sp) * hd + d] = sum;
  }

  // The last split of this head to finish merges them all.
  __threadfence();
  sync();
  if (tid == 0) {
    const int done = atomicAdd(&counters[h], 1);
    *sm.last = done == n_splits - 1;
    if (*sm.last) counters[h] = 0;  // every split has counted: ready for the next layer
  }
  sync();
  if (!*sm.last) return;
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

}  // namespace row_attn
}  // namespace cuda
}  // namespace strata
