// Kernel launches with programmatic dependent launch (PDL, sm_90): the next kernel of a window is launched
// while the current one is still running its last blocks, and waits in pdl_wait() until the current one has
// finished and its writes are visible. That hides the launch latency and ramp-up between the ~10 small kernels
// of every layer, which dominates decode at small batch. Every kernel launched this way calls pdl_wait() before
// it touches global memory, so each kernel still sees all of its predecessors' results (the wait is transitive:
// a predecessor completes only after its own wait returned). STRATA_CUDA_PDL=0 turns it off (plain launches).
#pragma once
#include <cuda_runtime_api.h>

#include <cstdlib>
#include <cstring>

#include "cuda/cuda_check.hpp"

namespace strata {
namespace cuda {

inline bool pdl_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("STRATA_CUDA_PDL");
    return !(v && std::strcmp(v, "0") == 0);
  }();
  return on;
}

// Both are no-ops for a kernel launched without the PDL attribute.
__device__ __forceinline__ void pdl_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
// Lets the next kernel's launch begin once every block of this one has started (called at a block's start,
// so the dependent grid can take SMs as this grid's last wave drains).
__device__ __forceinline__ void pdl_launch_dependents() { asm volatile("griddepcontrol.launch_dependents;" :::); }

template <class... Params, class... Args>
void launch_kernel(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                   Args&&... args) {
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cfg.attrs = attr;
  cfg.numAttrs = pdl_enabled() ? 1 : 0;
  STRATA_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, static_cast<Params>(args)...));
}

}  // namespace cuda
}  // namespace strata
