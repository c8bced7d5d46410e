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
constexpr int kGroupMinRows = 32;  // windows of fewer rows keep a block per head (more blocks for few rows)

__global__ void __launch_bounds__(kThreads) qkv_rope_kernel(float* __restrict__ qkv, QkvRopeParams p, int group,
                                                            int q_groups, int kv_groups) {
  pdl_wait();
  pdl_launch_dependents();
  __shared__ float out[kQkvGroupHeads * kQkvMaxHeadDim];
  __shared__ float inv_s[kQkvGroupHeads];
  qkv_rope_block(qkv, p, blockIdx.x, blockIdx.y, group, q_groups, kv_groups, out, inv_s);
}

}  // namespace

void launch_qkv_rope(float* qkv, int rows, const QkvRopeParams& p, cudaStream_t stream) {
  if (rows <= 0) return;
  check_qkv_rope(p);
  // Many rows: groups of heads (fewer, fuller blocks: 8B 128 rows +2 %); few rows: a block per head of 128
  // threads, as before groups existed (a window of few rows has few blocks anyway).
  const int group = rows >= kGroupMinRows ? kQkvGroupHeads : 1;
  const int q_groups = (p.n_heads + group - 1) / group;
  const int kv_groups = (p.n_kv_heads + group - 1) / group;
  const dim3 grid(rows, q_groups + 2 * kv_groups);
  launch_kernel(qkv_rope_kernel, grid, group > 1 ? kThreads : kThreads / 2, 0, stream, qkv, p, group, q_groups,
                kv_groups);
  STRATA_CUDA_CHECK_LAUNCH();
}

}  // namespace cuda
}  // namespace strata
