// SM partitions for a draft model beside its target (CudaBackendOptions::sm_partition): the device's SMs split
// once per process into a group of N for the draft and the rest for the target, each backend's stream on a
// green context over its part, so a draft's steps beside a verify window never hold an SM a target kernel's
// block waits for. Device memory, pinned host memory, events and graphs work across them as on the primary
// context; only where a kernel's blocks may run changes.
#pragma once
#include <cuda_runtime_api.h>

namespace strata {
namespace cuda {

struct PartitionStream {
  cudaStream_t stream = nullptr;
  int sms = 0;           // the SMs the stream's kernels may use
  void* green = nullptr;  // the green context (CUgreenCtx), owned
};

// A stream with `priority` on the part of `device` that `part` names: > 0 a group of at least `part` SMs
// (rounded up to the device's partition granularity), < 0 the SMs left after a group of -part. The split is
// made once for each group size, so a draft (part N) and its target (part -N) get disjoint SMs. Throws
// strata::Error where the driver has no green context streams (before CUDA 12.5) or the split fails.
PartitionStream make_partition_stream(int device, int part, int priority);
// Destroys the stream and its green context.
void destroy_partition_stream(PartitionStream& p);

}  // namespace cuda
}  // namespace strata
