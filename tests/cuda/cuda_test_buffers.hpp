// Device buffers and bf16 rounding for the kernel-level GPU tests (the ones that call launchers directly).
#pragma once
#include <catch2/catch.hpp>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "engine/model/bf16.hpp"

#define CU(call) REQUIRE((call) == cudaSuccess)

namespace strata {
namespace cuda_test {

// `count` elements of T on the device; put/get copy a host vector to / from element `at` on.
template <typename T>
struct Dev {
  T* p = nullptr;
  size_t n = 0;
  explicit Dev(size_t count) : n(count) {
    CU(cudaMalloc(reinterpret_cast<void**>(&p), std::max<size_t>(count, 1) * sizeof(T)));
  }
  Dev(const Dev&) = delete;
  Dev& operator=(const Dev&) = delete;
  ~Dev() { cudaFree(p); }
  void put(const std::vector<T>& h, size_t at = 0) {
    REQUIRE(at + h.size() <= n);
    CU(cudaMemcpy(p + at, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  std::vector<T> get(size_t at = 0, size_t count = size_t(-1)) const {
    if (count == size_t(-1)) count = n - at;
    std::vector<T> h(count);
    CU(cudaMemcpy(h.data(), p + at, count * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
  }
};

// fp32 -> bf16 bits and back, as the device rounds (engine/model/bf16.hpp).
inline uint16_t bf16_rn(float f) { return bf16_bits(f); }
inline float bf16_value(uint16_t b) { return bf16_to_float(b); }

// The split-activation GEMM's pair for v (Bf16Out): hi = bf16(v), then the remainder's rounding bf16(v - hi).
inline uint16_t bf16_rem(float v) { return bf16_rn(v - bf16_value(bf16_rn(v))); }

}  // namespace cuda_test
}  // namespace strata
