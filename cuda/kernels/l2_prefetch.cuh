// The device side of an L2 prefetch (L2Prefetch, kernels.hpp): a kernel's threads spread pf's regions over
// themselves and issue cp.async.bulk.prefetch.L2 for their pieces, then go on; nothing waits for it.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>

#include "cuda/kernels/kernels.hpp"

namespace strata {
namespace cuda {

// Thread tid's share of pf's regions among `threads` issuing threads: consecutive 16-byte-aligned pieces of
// each (at least 4 KB, so some threads of a large grid have none).
__device__ __forceinline__ void issue_l2_prefetch(const L2Prefetch& pf, size_t threads, size_t tid) {
#pragma unroll
  for (int r = 0; r < L2Prefetch::kRegions; ++r) {
    const size_t bytes = pf.bytes[r];
    if (bytes == 0) continue;
    size_t piece = ((bytes + threads - 1) / threads + 15) / 16 * 16;
    if (piece < 4096) piece = 4096;  // a prompt window's many blocks: fewer, larger pieces
    const size_t start = tid * piece;
    if (start >= bytes) continue;
    const size_t n = bytes - start < piece ? bytes - start : piece;
    const char* a = static_cast<const char*>(pf.ptr[r]) + start;
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(a), "r"(unsigned(n)) : "memory");
  }
}

}  // namespace cuda
}  // namespace strata
