// A grid-wide barrier for kernels whose blocks are all resident at once (the chain kernels of gemv.cu and
// matvec.cu: one block an SM, the grid no larger than the SM count).
#pragma once

namespace strata {
namespace cuda {

// A barrier over every block of the grid, reusable without a reset (count, then generation): the last block to
// arrive clears the count and bumps the generation the others wait on. Each block's writes before it are
// visible to every block after it (bar.sync, then a gpu-scope fence and atomic by thread 0, acquire loads on
// the other side). Only for a grid whose blocks are all resident at once: the chain kernel's one block an SM.
__device__ __forceinline__ unsigned ld_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ void grid_barrier(unsigned* bar) {
  __syncthreads();
  if (threadIdx.x == 0) {
    const unsigned gen = ld_acquire(bar + 1);
    __threadfence();
    if (atomicAdd(bar, 1u) == gridDim.x - 1) {
      atomicExch(bar, 0u);
      __threadfence();
      atomicAdd(bar + 1, 1u);
    } else {
      while (ld_acquire(bar + 1) == gen) {
      }
    }
    __threadfence();
  }
  __syncthreads();
}

}  // namespace cuda
}  // namespace strata
