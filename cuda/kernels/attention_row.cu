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
#include "cuda/kernels/attention_row.cuh"
#include "cuda/kernels/kernels.hpp"
#include "cuda/kernels/launch.cuh"

namespace strata {
namespace cuda {
namespace {

using row_attn::kThreads;

template <class T>
__global__ void __launch_bounds__(kThreads) attention_row_kernel(float* __restrict__ qkv, QkvRopeParams qp,
                                                                 AttentionParams ap, int* __restrict__ counters) {
  __shared__ __align__(16) char scratch[row_attn::kScratchBytes];
  row_attn::item<T>(qkv, qp, ap, counters, blockIdx.x, blockIdx.y, threadIdx.x, row_attn::carve(scratch),
                    [] { __syncthreads(); },
                    [] {
                      pdl_wait();  // q, k and v are the previous kernel's output
                      pdl_launch_dependents();
                    });
}

}  // namespace

bool attention_row_supports(int n_heads, int n_kv_heads, int head_dim) {
  return n_kv_heads > 0 && n_heads % n_kv_heads == 0 && head_dim % 8 == 0 && head_dim <= row_attn::kMaxHeadDim;
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
