// Heads of a row between the QKV matmul and attention, as a block-wide device step shared by
// qkv_rope.cu (every row and head of a window) and attention_row.cu (a one-row window's attention, which
// prepares its own q, k and v): bias (Qwen2), the per-head RMSNorm (Qwen3, q and k), rotate-half RoPE from
// the CPU backend's cos/sin table (q and k). The rotation is spelled with explicitly rounded products (no
// contraction into FMAs) so it gives the CPU's bits for the same inputs.
#pragma once
#include <cuda_bf16.h>

#include <string>

#include "cuda/cuda_check.hpp"

#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/kernels.hpp"
#include "cuda/kernels/kv_access.cuh"

namespace strata {
namespace cuda {

// Rotate-half RoPE of one pair (a at i, b at i + hd / 2) by the table's (c, s), with rounded products.
__device__ __forceinline__ void rotate_pair(float a, float b, float c, float s, float* lo, float* hi) {
  *lo = __fsub_rn(__fmul_rn(a, c), __fmul_rn(b, s));
  *hi = __fadd_rn(__fmul_rn(b, c), __fmul_rn(a, s));
}

// A position's rows of the RoPE cos and sin tables.
struct CosSin {
  const float* c;
  const float* s;
};

// The steps after a head's values are in shared memory: heads t = 0 .. count - 1 at out + t * out_stride,
// RMS-normed with norm when it is set (Qwen3), then rotated when rotate is set, head t by the cos/sin table
// rows table(t) gives (a CosSin). inv (shared, count floats) is scratch. Threads tid = 0 .. nthreads
// - 1 call it together, sync() holding them together; it ends with a sync after each step it takes. Each
// element and each head's sum of squares is one thread's, in order, so no value depends on nthreads or on
// which heads share the call.
template <class Table, class Sync>
__device__ __forceinline__ void norm_rotate_heads(int count, const float* norm, float eps, bool rotate, Table table,
                                                  int hd, float* out, int out_stride, float* inv, int tid,
                                                  int nthreads, Sync sync) {
  if (norm) {
    for (int t = tid; t < count; t += nthreads) {
      const float* o = out + t * out_stride;
      float ss = 0.0f;
      for (int d = 0; d < hd; ++d) ss = __fmaf_rn(o[d], o[d], ss);
      inv[t] = rms_inv(ss, hd, eps);
    }
    sync();
    for (int e = tid; e < count * hd; e += nthreads) {
      const int t = e / hd, d = e - t * hd;
      float& o = out[t * out_stride + d];
      o = __fmul_rn(norm[d], __fmul_rn(o, inv[t]));
    }
    sync();
  }
  if (rotate) {
    const int half = hd / 2;
    for (int e = tid; e < count * half; e += nthreads) {
      const int t = e / half, i = e - t * half;
      const auto cs_sn = table(t);
      float* o = out + t * out_stride;
      rotate_pair(o[i], o[i + half], cs_sn.c[i], cs_sn.s[i], &o[i], &o[i + half]);
    }
    sync();
  }
}

// count heads of hd values each, consecutive from x (xr: the split GEMM's remainder products, or null; bias:
// the heads' biases, or null); norm: the RMSNorm weight, or null; cs/sn: the row position's cos/sin table
// rows, or null for v (no rotation). Head t's result goes to out + t * out_stride (shared memory); inv
// (shared, count floats) is scratch. Threads tid = 0 .. nthreads - 1 call it together, sync() holding them
// together; it ends with a sync. The heads are prepared side by side (one sync per step for all of them),
// each exactly as a head on its own (norm_rotate_heads).
template <class Sync>
__device__ __forceinline__ void prepare_heads_synced(const float* x, const float* xr, const float* bias, int count,
                                                     const float* norm, float eps, const float* cs, const float* sn,
                                                     int hd, float* out, int out_stride, float* inv, int tid,
                                                     int nthreads, Sync sync) {
  for (int e = tid; e < count * hd; e += nthreads) {
    const int t = e / hd, d = e - t * hd;
    const float xe = __ldcg(x + e);  // through the L2 (ld.global.cg): each value is read once
    const float v = xr ? __fadd_rn(xe, xr[e]) : xe;
    out[t * out_stride + d] = bias ? __fadd_rn(v, bias[e]) : v;
  }
  sync();
  norm_rotate_heads(count, norm, eps, cs != nullptr, [&](int) { return CosSin{cs, sn}; }, hd, out, out_stride,
                    inv, tid, nthreads, sync);
}

// prepare_heads_synced by every thread of the block.
__device__ __forceinline__ void prepare_heads(const float* x, const float* xr, const float* bias, int count,
                                              const float* norm, float eps, const float* cs, const float* sn, int hd,
                                              float* out, int out_stride, float* inv) {
  prepare_heads_synced(x, xr, bias, count, norm, eps, cs, sn, hd, out, out_stride, inv, int(threadIdx.x),
                       int(blockDim.x), [] { __syncthreads(); });
}

// Where head `head` of a row's q | k | v heads (a k or v head) starts in its arena (kv.k or kv.v).
__device__ __forceinline__ size_t kv_head_at(const QkvRopeParams& p, int head, int slot, int pos) {
  const bool is_k = head < p.n_heads + p.n_kv_heads;
  return kv_offset(p.kv, slot, pos) + size_t(head - p.n_heads - (is_k ? 0 : p.n_kv_heads)) * size_t(p.head_dim);
}

// One K or V value into the arena at element i: as is (fp32) or rounded to nearest (bf16).
__device__ __forceinline__ void store_kv(const KvLayout& kv, void* base, size_t i, float v) {
  if (kv.type == KvType::BF16) static_cast<__nv_bfloat16*>(base)[i] = to_bf16(v);
  else static_cast<float*>(base)[i] = v;
}

constexpr int kQkvMaxHeadDim = 256;
constexpr int kQkvGroupHeads = 8;  // at most this many heads of one kind (q, k or v) a block prepares side by side

inline void check_qkv_rope(const QkvRopeParams& p) {
  if (p.head_dim > kQkvMaxHeadDim || p.head_dim % 2 != 0)
    throw Error("cuda qkv_rope: head_dim " + std::to_string(p.head_dim) + " must be even and at most " +
                std::to_string(kQkvMaxHeadDim));
}

// Row r's heads of group grp (`group` heads, at most kQkvGroupHeads): the q heads come in q_groups groups, then
// the k heads and the v heads in kv_groups each, so a group never mixes kinds. Head h of a row starts at h *
// head_dim in every kind (q | k | v are consecutive runs of heads). The heads are prepared side by side as
// prepare_heads does it (bias, q/k norm, RoPE; each head's bits as if it were alone), then q goes back in
// place and k and v into the KV cell the slot's block table gives for the row's position (kv_offset), rounded
// to bf16 when the arena stores bf16. out: group * head_dim floats of shared memory, inv: group floats. Every
// thread of the block calls it (launch_qkv_rope's blocks).
__device__ __forceinline__ void qkv_rope_block(float* qkv, const QkvRopeParams& p, int r, int grp, int group,
                                               int q_groups, int kv_groups, float* out, float* inv) {
  const int hd = p.head_dim, half = hd / 2;
  const int q_dim = p.n_heads * hd, kv_dim = p.n_kv_heads * hd;
  const int qkv_dim = q_dim + 2 * kv_dim;
  const bool is_q = grp < q_groups, is_k = !is_q && grp < q_groups + kv_groups;
  const int first = is_q ? grp * group
                    : is_k ? p.n_heads + (grp - q_groups) * group
                           : p.n_heads + p.n_kv_heads + (grp - q_groups - kv_groups) * group;
  const int end = is_q ? p.n_heads : is_k ? p.n_heads + p.n_kv_heads : p.n_heads + 2 * p.n_kv_heads;
  const int count = min(group, end - first);
  const int offset = first * hd;
  float* x = qkv + size_t(r) * qkv_dim + offset;
  const float* xr = p.qkv_rem ? p.qkv_rem + size_t(r) * qkv_dim + offset : nullptr;
  const int pos = p.pos[r];
  const int slot = p.slot[r];
  const bool rotate = is_q || is_k;
  prepare_heads(x, xr, p.bias ? p.bias + offset : nullptr, count, is_q ? p.q_norm : is_k ? p.k_norm : nullptr, p.eps,
                rotate ? p.cos + size_t(pos) * half : nullptr, rotate ? p.sin + size_t(pos) * half : nullptr, hd,
                out, hd, inv);
  if (is_q) {
    for (int e = threadIdx.x; e < count * hd; e += blockDim.x) x[e] = out[e];
  } else {
    void* base = is_k ? p.kv.k : p.kv.v;
    for (int t = 0; t < count; ++t) {
      const size_t at = kv_head_at(p, first + t, slot, pos);
      for (int d = threadIdx.x; d < hd; d += blockDim.x) store_kv(p.kv, base, at + d, out[t * hd + d]);
    }
  }
}

}  // namespace cuda
}  // namespace strata
