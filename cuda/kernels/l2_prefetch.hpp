// Weights a later kernel of the window reads, prefetched into the L2 by an earlier kernel whose own work
// leaves the HBM idle (the step between the q/k/v matmul and attention, then attention itself: at batch 1 they
// move almost no bytes, while the o and gate/up matmuls after them stream tens of megabytes). The prefetch is
// a hint (cp.async.bulk.prefetch.L2): it changes no value, only where the matmul's loads find their bytes.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "cuda/kernels/kernels.hpp"

namespace strata {
namespace cuda {

// launch_qkv_rope, whose blocks also spread the prefetch of pf's regions over their threads after the q/k/v
// matmul has finished (they issue it and go on; nothing waits for it).
void launch_qkv_rope(float* qkv, int rows, const QkvRopeParams& p, const L2Prefetch& pf, cudaStream_t stream);

}  // namespace cuda
}  // namespace strata
