// RAII device allocation. Allocation failure is a strata::Error naming what was being allocated and its size,
// so a budget that does not fit is refused with a clear message instead of crashing later.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>
#include <utility>

#include "cuda/cuda_check.hpp"

namespace strata {
namespace cuda {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(size_t bytes, const std::string& what) : bytes_(bytes) {
    if (bytes == 0) return;
    cudaError_t e = cudaMalloc(&ptr_, bytes);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();  // clear the non-sticky allocation error
      ptr_ = nullptr;
      throw Error("cuda: cannot allocate " + what + " (" + std::to_string(double(bytes) / 1e9) +
                  " GB): " + cudaGetErrorString(e));
    }
  }
  ~DeviceBuffer() {
    if (ptr_) cudaFree(ptr_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      if (ptr_) cudaFree(ptr_);
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

// Page-locked host memory: the graphs' first node copies window metadata from it, and picks come back into it.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  PinnedBuffer(size_t bytes, const std::string& what) : bytes_(bytes) {
    if (bytes == 0) return;
    cudaError_t e = cudaMallocHost(&ptr_, bytes);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      ptr_ = nullptr;
      throw Error("cuda: cannot allocate pinned " + what + " (" + std::to_string(bytes) + " bytes): " +
                  cudaGetErrorString(e));
    }
  }
  ~PinnedBuffer() {
    if (ptr_) cudaFreeHost(ptr_);
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  PinnedBuffer(PinnedBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept {
    if (this != &o) {
      if (ptr_) cudaFreeHost(ptr_);
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

}  // namespace cuda
}  // namespace strata
