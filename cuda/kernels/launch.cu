// The registry of streams in the remote memory-synchronization domain (kernels.hpp, launch.cuh).
#include <algorithm>
#include <mutex>
#include <vector>

#include "cuda/cuda_check.hpp"
#include "cuda/kernels/kernels.hpp"

namespace strata {
namespace cuda {
namespace {

std::mutex remote_mu;
std::vector<cudaStream_t> remote_streams;  // a draft backend's stream or two: a scan is enough

bool device_has_domains() {
  static const bool has = [] {
    int dev = 0, n = 1;
    STRATA_CUDA_CHECK(cudaGetDevice(&dev));
    STRATA_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMemSyncDomainCount, dev));
    return n > 1;
  }();
  return has;
}

}  // namespace

void set_remote_sync_domain(cudaStream_t stream, bool remote) {
  if (stream == nullptr || !device_has_domains()) return;
  std::lock_guard<std::mutex> lock(remote_mu);
  auto it = std::find(remote_streams.begin(), remote_streams.end(), stream);
  if (remote && it == remote_streams.end()) remote_streams.push_back(stream);
  if (!remote && it != remote_streams.end()) remote_streams.erase(it);
}

bool remote_sync_domain(cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(remote_mu);
  return std::find(remote_streams.begin(), remote_streams.end(), stream) != remote_streams.end();
}

}  // namespace cuda
}  // namespace strata
