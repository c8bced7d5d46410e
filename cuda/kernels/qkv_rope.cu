// The step between the QKV matmul and attention, per row and head (launch_qkv_rope in kernels.hpp): bias
// (Qwen2), the per-head RMSNorm of q and k (Qwen3), rotate-half RoPE from the CPU backend's cos/sin table,
// then k and v into the KV cell the slot's block table gives for the row's position (kv_offset), rounded to
// bf16 when the arena stores bf16. The rotation is spelled with explicitly rounded
// products (no contraction into FMAs) so it gives the CPU's bits for the same inputs.
#include "cuda/cuda_check.hpp"
#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/kernels.hpp"
#include "cuda/kernels/kv_access.cuh"
#include "cuda/kernels/launch.cuh"

namespace strata {
namespace cuda {
namespace {

constexpr int kThreads = 128;
constexpr int kMaxHeadDim = 256;

// One K or V value into the arena at element i: as is (fp32) or rounded to nearest (bf16).
__device__ __forceinline__ void store_kv(const KvLayout& kv, void* base, size_t i, float v) {
  if (kv.type == KvType::BF16) static_cast<__nv_bfloat16*>(base)[i] = to_bf16(v);
  else static_cast<float*>(base)[i] = v;
}

__global__ void __launch_bounds__(kThreads) qkv_rope_kernel(float* __restrict__ qkv, QkvRopeParams p) {
  pdl_wait();
  pdl_launch_dependents();
  __shared__ float head[kMaxHeadDim];
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
  for (int d = threadIdx.x; d < hd; d += kThreads) {
    const float v = xr ? __fadd_rn(x[d], xr[d]) : x[d];
    head[d] = p.bias ? __fadd_rn(v, p.bias[offset + d]) : v;
  }
  __syncthreads();
  const int pos = p.pos[r];
  const int slot = p.slot[r];
  if (is_q || is_k) {
    const float* nw = is_q ? p.q_norm : p.k_norm;
    if (nw) {
      if (threadIdx.x == 0) {
        float ss = 0.0f;
        for (int d = 0; d < hd; ++d) ss = __fmaf_rn(head[d], head[d], ss);
        inv_s = 1.0f / sqrtf(__fadd_rn(__fdiv_rn(ss, float(hd)), p.eps));
      }
      __syncthreads();
      const float inv = inv_s;
      for (int d = threadIdx.x; d < hd; d += kThreads) head[d] = __fmul_rn(nw[d], __fmul_rn(head[d], inv));
      __syncthreads();
    }
    const float* c = p.cos + size_t(pos) * half;
    const float* s = p.sin + size_t(pos) * half;
    const size_t k_at = is_q ? 0 : kv_offset(p.kv, slot, pos) + size_t(h - p.n_heads) * hd;
    for (int i = threadIdx.x; i < half; i += kThreads) {
      const float a = head[i], b = head[i + half];
      const float r0 = __fsub_rn(__fmul_rn(a, c[i]), __fmul_rn(b, s[i]));
      const float r1 = __fadd_rn(__fmul_rn(b, c[i]), __fmul_rn(a, s[i]));
      if (is_q) {
        x[i] = r0;
        x[i + half] = r1;
      } else {
        store_kv(p.kv, p.kv.k, k_at + i, r0);
        store_kv(p.kv, p.kv.k, k_at + i + half, r1);
      }
    }
  } else {
    const size_t v_at = kv_offset(p.kv, slot, pos) + size_t(h - p.n_heads - p.n_kv_heads) * hd;
    for (int d = threadIdx.x; d < hd; d += kThreads) store_kv(p.kv, p.kv.v, v_at + d, head[d]);
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
