// Where a (slot, position) K or V row lives in the paged KV arena (KvLayout in kernels.hpp): every kernel
// that reads or writes the arena goes through kv_row, so the block-table lookup is written once.
#pragma once
#include <cstddef>

#include "cuda/kernels/kernels.hpp"

namespace strata {
namespace cuda {

// The cell of (slot, pos): the slot's block table names the physical block of each block_size positions.
__device__ __forceinline__ size_t kv_cell(const KvLayout& kv, int slot, int pos) {
  const int32_t block = kv.block_table[size_t(slot) * size_t(kv.table_stride) + size_t(pos / kv.block_size)];
  return size_t(block) * size_t(kv.block_size) + size_t(pos % kv.block_size);
}

// The kv_dim floats of (slot, pos) in the current layer: base is kv.k or kv.v.
__device__ __forceinline__ const float* kv_row(const float* base, const KvLayout& kv, int slot, int pos) {
  return base + kv.layer_offset + kv_cell(kv, slot, pos) * size_t(kv.kv_dim);
}
__device__ __forceinline__ float* kv_row(float* base, const KvLayout& kv, int slot, int pos) {
  return base + kv.layer_offset + kv_cell(kv, slot, pos) * size_t(kv.kv_dim);
}

}  // namespace cuda
}  // namespace strata
