// Where a (slot, position) K or V row lives in the KV arena. Kernels that read the arena through this one
// function keep working when the arena's layout changes (paged blocks with a per-slot block table): only
// kv_row changes.
#pragma once
#include <cstddef>

#include "cuda/kernels/kernels.hpp"

namespace strata {
namespace cuda {

// The kv_dim floats of (slot, pos) in the current layer: base is kv.k or kv.v.
// Layout today: [slot][layer][position][kv_dim], contiguous per slot.
__device__ __forceinline__ const float* kv_row(const float* base, const KvLayout& kv, int slot, int pos) {
  return base + size_t(slot) * kv.slot_stride + kv.layer_offset + size_t(pos) * size_t(kv.kv_dim);
}

}  // namespace cuda
}  // namespace strata
