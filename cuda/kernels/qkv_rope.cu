// The step between the QKV matmul and attention, per row and head (launch_qkv_rope in kernels.hpp): the
// head prepared as qkv_rope.cuh's prepare_heads does it (bias, q/k norm, RoPE), then k and v into the KV cell
// the slot's block table gives for the row's position (kv_offset), rounded to bf16 when the arena stores
// bf16.
#include "cuda/cuda_check.hpp"
#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/kernels.hpp"
#include "cuda/kernels/kv_access.cuh"
#include "cuda/kernels/launch.cuh"
#include "cuda/kernels/qkv_rope.cuh"

namespace strata {
namespace cuda {
namespace {

constexpr int kThreads = 128;
constexpr int kMaxHeadDim = 256;

__global__ void __launch_bounds__(kThreads) qkv_rope_kernel(float* __restrict__ qkv, QkvRopeParams p) {
  pdl_wait();
  pdl_launch_dependents();
  __shared__ float out[kMaxHeadDim];
  __shared__ float inv_s;
  const int r = blockIdx.x, h = blockIdx.y;
  const int hd = p.head_dim, half = hd / 2;
  const int q_dim = p.n_heads * hd, kv_dim = p.n_kv_heads * hd;
  const int qkv_dim = q_dim + 2 * kv_dim;
  // Heads [0, n_heads) are q, then n_kv_heads of k, then n_kv_heads of v.
  const bool is_q = h < p.n_heads, is_k = !is_q && h < p.n_heads + p.n_kv_heads;
  const int offset = is_q ? h * hd : is_k ? q_dim + (h - p.n_heads) * hd : q_dim + kv_dim + (h - p.n_heads - p.n_kv_heads) * hd;
  float* x = qkv + size_t(r) * qkv_dim + offset;
  const float* xr = p.qkv_rem ? p.qkv_rem + size_t(r) * qkv_dim + offset : nullptr;
  const int pos = p.pos[r];
  const int slot = p.slot[r];
  const bool rotate = is_q || is_k;
  prepare_heads(x, xr, p.bias ? p.bias + offset : nullptr, 1, is_q ? p.q_norm : is_k ? p.k_norm : nullptr, p.eps,
                rotate ? p.cos + size_t(pos) * half : nullptr, rotate ? p.sin + size_t(pos) * half : nullptr, hd,
                out, hd, &inv_s);
  if (is_q) {
    for (int d = threadIdx.x; d < hd; d += kThreads) x[d] = out[d];
  } else {
    void* base = is_k ? p.kv.k : p.kv.v;
    const size_t at = kv_head_at(p, h, slot, pos);
    for (int d = threadIdx.x; d < hd; d += kThreads) store_kv(p.kv, base, at + d, out[d]);
  }
}

}  // namespace

void launch_qkv_rope(float* qkv, int rows, const QkvRopeParams& p, cudaStream_t stream) {
  if (rows <= 0) return;
  if (p.head_dim > kMaxHeadDim || p.head_dim % 2 != 0)
    throw Error("cuda qkv_rope: head_dim " + std::to_string(p.head_dim) + " must be even and at most " +
                std::to_string(kMaxHeadDim));
  const dim3 grid(rows, p.n_heads + 2 * p.n_kv_heads);
  launch_kernel(qkv_rope_kernel, grid, kThreads, 0, stream, qkv, p);
  STRATA_CUDA_CHECK_LAUNCH();
}

}  // namespace cuda
}  // namespace strata
