#include "cuda/green_context.hpp"

#include <cuda.h>  // the driver's types; its functions come through cudaGetDriverEntryPointByVersion

#include <map>
#include <mutex>
#include <string>

#include "cuda/cuda_check.hpp"
#include "engine/core/types.hpp"  // strata::Error

namespace strata {
namespace cuda {
namespace {

// A driver function by name, without linking the driver library (the runtime finds it).
template <class F>
F driver_fn(const char* name) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  const cudaError_t e = cudaGetDriverEntryPointByVersion(name, &fn, CUDA_VERSION, cudaEnableDefault, &found);
  if (e != cudaSuccess || found != cudaDriverEntryPointSuccess || fn == nullptr)
    throw Error(std::string("cuda: the driver has no ") + name + " (green context streams need CUDA 12.5 or newer)");
  return reinterpret_cast<F>(fn);
}

void check(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) throw Error(std::string("cuda: ") + what + " failed (CUresult " + std::to_string(int(r)) + ")");
}

// One split of a device's SMs: a group of at least n and the rest.
struct Split {
  CUdevResource group{};
  CUdevResource rest{};
};

const Split& split_for(int device, int n) {
  static std::mutex mu;
  static std::map<std::pair<int, int>, Split> splits;
  std::lock_guard<std::mutex> lock(mu);
  auto it = splits.find({device, n});
  if (it != splits.end()) return it->second;
  auto get_device = driver_fn<decltype(&cuDeviceGet)>("cuDeviceGet");
  auto get_resource = driver_fn<decltype(&cuDeviceGetDevResource)>("cuDeviceGetDevResource");
  auto split_by_count = driver_fn<decltype(&cuDevSmResourceSplitByCount)>("cuDevSmResourceSplitByCount");
  CUdevice dev = 0;
  check(get_device(&dev, device), "cuDeviceGet");
  CUdevResource all{};
  check(get_resource(dev, &all, CU_DEV_RESOURCE_TYPE_SM), "cuDeviceGetDevResource");
  Split s;
  unsigned groups = 1;
  check(split_by_count(&s.group, &groups, &all, &s.rest, 0, unsigned(n)), "cuDevSmResourceSplitByCount");
  if (groups != 1 || s.rest.sm.smCount == 0)
    throw Error("cuda: cannot split the device's " + std::to_string(all.sm.smCount) + " SMs into a group of " +
                std::to_string(n) + " and the rest");
  return splits.emplace(std::make_pair(device, n), s).first->second;
}

}  // namespace

PartitionStream make_partition_stream(int device, int part, int priority) {
  if (part == 0) throw Error("cuda: make_partition_stream needs a part (> 0 a group, < 0 the rest)");
  const Split& s = split_for(device, part > 0 ? part : -part);
  CUdevResource r = part > 0 ? s.group : s.rest;
  auto get_device = driver_fn<decltype(&cuDeviceGet)>("cuDeviceGet");
  auto generate = driver_fn<decltype(&cuDevResourceGenerateDesc)>("cuDevResourceGenerateDesc");
  auto create = driver_fn<decltype(&cuGreenCtxCreate)>("cuGreenCtxCreate");
  auto stream_create = driver_fn<decltype(&cuGreenCtxStreamCreate)>("cuGreenCtxStreamCreate");
  auto destroy = driver_fn<decltype(&cuGreenCtxDestroy)>("cuGreenCtxDestroy");
  CUdevice dev = 0;
  check(get_device(&dev, device), "cuDeviceGet");
  CUdevResourceDesc desc{};
  check(generate(&desc, &r, 1), "cuDevResourceGenerateDesc");
  CUgreenCtx green = nullptr;
  check(create(&green, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM), "cuGreenCtxCreate");
  CUstream stream = nullptr;
  const CUresult sr = stream_create(&stream, green, CU_STREAM_NON_BLOCKING, priority);
  if (sr != CUDA_SUCCESS) {
    destroy(green);
    check(sr, "cuGreenCtxStreamCreate");
  }
  PartitionStream p;
  p.stream = reinterpret_cast<cudaStream_t>(stream);
  p.sms = int(r.sm.smCount);
  p.green = green;
  return p;
}

void destroy_partition_stream(PartitionStream& p) {
  if (p.stream) (void)cudaStreamDestroy(p.stream);
  if (p.green) driver_fn<decltype(&cuGreenCtxDestroy)>("cuGreenCtxDestroy")(static_cast<CUgreenCtx>(p.green));
  p = PartitionStream{};
}

}  // namespace cuda
}  // namespace strata
