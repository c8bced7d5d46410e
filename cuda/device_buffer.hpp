// RAII device and page-locked host allocations. Allocation failure is a strata::Error naming what was being
// allocated and its size, so a budget that does not fit is refused with a clear message instead of crashing
// later.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>
#include <utility>

#include "cuda/cuda_check.hpp"

namespace strata {
namespace cuda {

// One owned allocation of `bytes` from Kind's allocator (Kind::alloc / Kind::free / Kind::what), movable and
// not copyable.
template <class Kind>
class OwnedBuffer {
 public:
  OwnedBuffer() = default;
  OwnedBuffer(size_t bytes, const std::string& what) : bytes_(bytes) {
    if (bytes == 0) return;
    cudaError_t e = Kind::alloc(&ptr_, bytes);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();  // clear the non-sticky allocation error
      ptr_ = nullptr;
      throw Error(std::string("cuda: cannot allocate ") + Kind::what + what + " (" + std::to_string(bytes) +
                  " bytes, " + std::to_string(double(bytes) / 1e9) + " GB): " + cudaGetErrorString(e));
    }
  }
  ~OwnedBuffer() {
    if (ptr_) Kind::free(ptr_);
  }
  OwnedBuffer(const OwnedBuffer&) = delete;
  OwnedBuffer& operator=(const OwnedBuffer&) = delete;
  OwnedBuffer(OwnedBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  OwnedBuffer& operator=(OwnedBuffer&& o) noexcept {
    if (this != &o) {
      if (ptr_) Kind::free(ptr_);
      ptr_ = std::exchange(o.ptr_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  template <class T = void>
  T* get() const {
    return static_cast<T*>(ptr_);
  }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

struct DeviceMemory {
  static constexpr const char* what = "";
  static cudaError_t alloc(void** p, size_t bytes) { return cudaMalloc(p, bytes); }
  static void free(void* p) { (void)cudaFree(p); }
};

// Page-locked host memory: the graphs' first node copies window metadata from it, and picks come back into it.
struct PinnedMemory {
  static constexpr const char* what = "pinned ";
  static cudaError_t alloc(void** p, size_t bytes) { return cudaMallocHost(p, bytes); }
  static void free(void* p) { (void)cudaFreeHost(p); }
};

using DeviceBuffer = OwnedBuffer<DeviceMemory>;
using PinnedBuffer = OwnedBuffer<PinnedMemory>;

}  // namespace cuda
}  // namespace strata
