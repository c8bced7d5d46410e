// The skinny matmul kernels on the GPU against each other: the fused gate/up + SwiGLU kernel must give the bits
// of the skinny matmul followed by the SwiGLU kernel, for every tile size, bf16 and fp32 weights.
#include <catch2/catch.hpp>
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "cuda/cuda_backend.hpp"
#include "cuda/device_buffer.hpp"
#include "cuda/kernels/kernels.hpp"

using namespace strata;
using namespace strata::cuda;

namespace {

uint16_t to_bf16_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

template <class T>
DeviceBuffer upload(const std::vector<T>& v) {
  DeviceBuffer b(v.size() * sizeof(T), "test buffer");
  REQUIRE(cudaMemcpy(b.get(), v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice) == cudaSuccess);
  return b;
}

std::vector<float> download(const DeviceBuffer& b, size_t n) {
  std::vector<float> v(n);
  REQUIRE(cudaMemcpy(v.data(), b.get(), n * 4, cudaMemcpyDeviceToHost) == cudaSuccess);
  return v;
}

}  // namespace

TEST_CASE("the fused gate/up + SwiGLU skinny kernel gives the bits of matvec then swiglu") {
  REQUIRE(CudaBackend::device_count() > 0);
  cudaStream_t st = nullptr;
  REQUIRE(cudaStreamCreate(&st) == cudaSuccess);
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (WType t : {WType::BF16, WType::F32}) {
    for (int rows : {1, 2, 3, 5, 8, 13, 16, 40}) {
      const int ff = 200, k = 264;  // k: a multiple of 8 that is not a multiple of 32 * 8 (a partial last batch)
      std::vector<float> x(size_t(rows) * k), wf(size_t(2) * ff * k);
      for (float& v : x) v = nd(rng);
      for (float& v : wf) v = nd(rng) * 0.1f;
      DeviceBuffer w;
      if (t == WType::BF16) {
        std::vector<uint16_t> wb(wf.size());
        for (size_t i = 0; i < wf.size(); ++i) wb[i] = to_bf16_bits(wf[i]);
        w = upload(wb);
      } else {
        w = upload(wf);
      }
      DeviceBuffer dx = upload(x);
      DeviceBuffer gu(size_t(rows) * 2 * ff * 4, "gu"), act(size_t(rows) * ff * 4, "act"),
          fused(size_t(rows) * ff * 4, "fused");
      launch_matvec(w.get(), t, 2 * ff, k, dx.get<float>(), rows, gu.get<float>(), st);
      launch_swiglu(gu.get<float>(), rows, ff, act.get<float>(), nullptr, st);
      launch_matvec_swiglu(w.get(), t, ff, k, dx.get<float>(), rows, fused.get<float>(), st);
      REQUIRE(cudaStreamSynchronize(st) == cudaSuccess);
      const std::vector<float> a = download(act, size_t(rows) * ff), b = download(fused, size_t(rows) * ff);
      INFO("rows " << rows << (t == WType::BF16 ? " bf16" : " f32"));
      REQUIRE(std::memcmp(a.data(), b.data(), a.size() * 4) == 0);
      // And the value is what it claims: silu(gate) * up within float rounding of a host computation.
      const std::vector<float> g = download(gu, size_t(rows) * 2 * ff);
      for (int r = 0; r < rows; ++r)
        for (int i = 0; i < ff; i += 37) {
          const float gate = g[size_t(r) * 2 * ff + i], up = g[size_t(r) * 2 * ff + ff + i];
          CHECK(b[size_t(r) * ff + i] == Approx(gate / (1.0f + std::exp(-gate)) * up).epsilon(1e-5).margin(1e-6));
        }
    }
  }
  cudaStreamDestroy(st);
}
