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

// Elements from the arena's base (kv.k or kv.v) to the kv_dim values of (slot, pos) in the current layer.
__device__ __forceinline__ size_t kv_offset(const KvLayout& kv, int slot, int pos) {
  return kv.layer_offset + kv_cell(kv, slot, pos) * size_t(kv.kv_dim);
}

// The row itself, base being kv.k or kv.v seen as the arena's element type T (float or __nv_bfloat16).
template <class T>
__device__ __forceinline__ const T* kv_row(const void* base, const KvLayout& kv, int slot, int pos) {
  return static_cast<const T*>(base) + kv_offset(kv, slot, pos);
}
template <class T>
__device__ __forceinline__ T* kv_row(void* base, const KvLayout& kv, int slot, int pos) {
  return static_cast<T*>(base) + kv_offset(kv, slot, pos);
}

}  // namespace cuda
}  // namespace strata
