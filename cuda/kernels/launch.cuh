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
#include "cuda/kernels/kernel_trace.hpp"

namespace strata {
namespace cuda {

inline bool pdl_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("STRATA_CUDA_PDL");
    return !(v && std::strcmp(v, "0") == 0);
  }();
  return on;
}

#ifdef STRATA_KERNEL_TRACE
// Each translation unit's pointer to the trace buffer (kernel_trace.hpp), null while no trace runs, and its
// setter. All of it has internal linkage: an inline setter with external linkage would be merged by the
// linker into one, which sets one unit's pointer for every registration.
namespace trace_tu {
namespace {
__constant__ KernelTraceRecord* buffer;
struct Registrar {
  static void set(KernelTraceRecord* b) { STRATA_CUDA_CHECK(cudaMemcpyToSymbol(buffer, &b, sizeof b)); }
  Registrar() { kernel_trace_register(&set); }
};
Registrar registrar;
}  // namespace
}  // namespace trace_tu

__device__ __forceinline__ uint64_t global_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Both are no-ops for a kernel launched without the PDL attribute. With STRATA_KERNEL_TRACE, thread 0 of
// each block records the block's arrival and the wait's end in the next free record (kernel_trace.hpp).
__device__ __forceinline__ void pdl_wait() {
  const uint64_t t0 = global_ns();
  KernelTraceRecord* const buf = trace_tu::buffer;
  const bool lead = buf && threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0;
  // The block's record slot: the first record's grid_id counts the blocks that arrived, the records follow
  // it. Taken after the wait, so that nothing but the clock read runs before it (an atomic there changed the
  // timing of the kernels it measured).
  asm volatile("griddepcontrol.wait;" ::: "memory");
  const uint64_t t1 = global_ns();
  unsigned long long slot = 0;
  if (lead) slot = atomicAdd(reinterpret_cast<unsigned long long*>(&buf[0].grid_id), 1ull);
  if (lead && slot < static_cast<unsigned long long>(kTraceRecords)) {
    uint64_t grid;
    unsigned sm;
    asm volatile("mov.u64 %0, %%gridid;" : "=l"(grid));
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    KernelTraceRecord& r = buf[1 + slot];
    r.grid_id = grid;
    r.start_ns = t0;
    r.release_ns = t1;
    r.block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    r.blocks = gridDim.x * gridDim.y * gridDim.z;
    r.sm = sm;
    r.threads = blockDim.x * blockDim.y * blockDim.z;
  }
}
#else
// Both are no-ops for a kernel launched without the PDL attribute.
__device__ __forceinline__ void pdl_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
#endif
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
