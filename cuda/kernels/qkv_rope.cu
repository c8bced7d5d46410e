// The step between the QKV matmul and attention, per row and group of up to 8 heads of one kind (launch_qkv_rope
// in kernels.hpp): the heads prepared side by side as qkv_rope.cuh's prepare_heads does it (bias, q/k norm,
// RoPE; each head's bits as if it were alone), then k and v into the KV cell the slot's block table gives for
// the row's position (kv_offset), rounded to bf16 when the arena stores bf16. Windows of 32+ rows group the
// heads (6 blocks a row of the 8B shape instead of 48).
#include "cuda/cuda_check.hpp"
#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/kernels.hpp"
#include "cuda/kernels/kv_access.cuh"
#include "cuda/kernels/launch.cuh"
#include "cuda/kernels/qkv_rope.cuh"

namespace strata {
namespace cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxHeadDim = 256;
constexpr int kGroupHeads = 8;  // at most this many heads of one kind (q, k or v) a block prepares side by side
constexpr int kGroupMinRows = 32;  // windows of fewer rows keep a block per head (more blocks for few rows)

// Block (r, grp): row r's heads of group grp (`group` heads); the q heads come in q_groups groups, then the k
// heads and the v heads in kv_groups each, so a group never mixes kinds. Head h of a row starts at h *
// head_dim in every kind (q | k | v are consecutive runs of heads).
__global__ void __launch_bounds__(kThreads) qkv_rope_kernel(float* __restrict__ qkv, QkvRopeParams p, int group,
                                                            int q_groups, int kv_groups) {
  pdl_wait();
  pdl_launch_dependents();
  __shared__ float out[kGroupHeads * kMaxHeadDim];
  __shared__ float inv_s[kGroupHeads];
  const int r = blockIdx.x, grp = blockIdx.y;
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
                out, hd, inv_s);
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

}  // namespace

void launch_qkv_rope(float* qkv, int rows, const QkvRopeParams& p, cudaStream_t stream) {
  if (rows <= 0) return;
  if (p.head_dim > kMaxHeadDim || p.head_dim % 2 != 0)
    throw Error("cuda qkv_rope: head_dim " + std::to_string(p.head_dim) + " must be even and at most " +
                std::to_string(kMaxHeadDim));
  // Many rows: groups of heads (fewer, fuller blocks: 8B 128 rows +2 %); few rows: a block per head of 128
  // threads, as before groups existed (a window of few rows has few blocks anyway).
  const int group = rows >= kGroupMinRows ? kGroupHeads : 1;
  const int q_groups = (p.n_heads + group - 1) / group;
  const int kv_groups = (p.n_kv_heads + group - 1) / group;
  const dim3 grid(rows, q_groups + 2 * kv_groups);
  launch_kernel(qkv_rope_kernel, grid, group > 1 ? kThreads : kThreads / 2, 0, stream, qkv, p, group, q_groups,
                kv_groups);
  STRATA_CUDA_CHECK_LAUNCH();
}

}  // namespace cuda
}  // namespace strata
