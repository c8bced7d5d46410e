// The 16-lane summation order: both kernels give the same bits, for any length, any blocking of output rows.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <random>

#include "engine/cpu/dot.hpp"

using namespace strata::cpu;

namespace {

std::vector<float> randoms(size_t n, unsigned seed) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, 4) == 0; }

}  // namespace

TEST_CASE("the portable dot product is close to a double-precision reference") {
  for (int n : {1, 7, 16, 17, 64, 100, 769}) {
    auto a = randoms(size_t(n), 1), b = randoms(size_t(n), 2);
    double ref = 0;
    for (int i = 0; i < n; ++i) ref += double(a[size_t(i)]) * b[size_t(i)];
    CHECK(dot_portable(a.data(), b.data(), n) == Approx(ref).margin(1e-4 * std::sqrt(double(n))));
  }
  CHECK(dot_portable(nullptr, nullptr, 0) == 0.0f);
}

TEST_CASE("the portable dot product follows the 16-lane order exactly") {
  // Values chosen so a different association rounds differently: lane sums of 1e8 and 1.
  std::vector<float> a(40, 1.0f), b(40, 1.0f);
  a[0] = 1e8f;
  a[16] = -1e8f;
  // Lanes: lane 0 gets 1e8 + (-1e8) -> 0 then the tail element 32 (+1): 1; other lanes hold 2 or 3.
  // Left-to-right summation would lose the small terms against 1e8 before cancelling.
  float lanes[16];
  for (int l = 0; l < 16; ++l) {
    lanes[l] = 0;
    for (int i = l; i < 32; i += 16) lanes[l] = std::fma(a[size_t(i)], b[size_t(i)], lanes[l]);
  }
  for (int i = 32; i < 40; ++i) lanes[i - 32] = std::fma(a[size_t(i)], b[size_t(i)], lanes[i - 32]);
  for (int w = 8; w >= 1; w /= 2)
    for (int l = 0; l < w; ++l) lanes[l] += lanes[l + w];
  CHECK(same_bits(dot_portable(a.data(), b.data(), 40), lanes[0]));
  CHECK(dot_portable(a.data(), b.data(), 40) == 38.0f);
}

#if defined(STRATA_CPU_HAVE_AVX2)
TEST_CASE("AVX2 and portable kernels produce identical bits") {
  if (best_matmul_kernel() != &matmul_avx2) {
    WARN("CPU lacks AVX2/FMA: only the portable kernel is exercised");
    return;
  }
  for (int in : {1, 5, 16, 31, 48, 64, 129, 768}) {
    const int out = 11, rows = 3;
    auto W = randoms(size_t(out) * in, unsigned(in)), X = randoms(size_t(rows) * in, unsigned(in) + 7);
    std::vector<float> y1(size_t(rows) * out), y2(size_t(rows) * out);
    matmul_portable(W.data(), in, X.data(), in, rows, y1.data(), out, 0, out);
    matmul_avx2(W.data(), in, X.data(), in, rows, y2.data(), out, 0, out);
    for (size_t i = 0; i < y1.size(); ++i) {
      INFO("in=" << in << " element " << i);
      CHECK(same_bits(y1[i], y2[i]));
    }
    for (int j = 0; j < out; ++j)
      CHECK(same_bits(dot_avx2(W.data() + size_t(j) * in, X.data(), in), y1[size_t(j)]));
  }
}
#endif

TEST_CASE("a matmul element does not depend on how output rows are split or how many input rows run") {
  const int in = 100, out = 13;
  auto W = randoms(size_t(out) * in, 3), X = randoms(size_t(5) * in, 4);
  MatmulKernel k = best_matmul_kernel();
  std::vector<float> whole(size_t(5) * out), pieces(size_t(5) * out), single(static_cast<size_t>(out));
  k(W.data(), in, X.data(), in, 5, whole.data(), out, 0, out);
  for (int b = 0; b < out; b += 3) k(W.data(), in, X.data(), in, 5, pieces.data(), out, b, std::min(out, b + 3));
  k(W.data(), in, X.data() + 2 * in, in, 1, single.data(), out, 0, out);
  for (int j = 0; j < out; ++j) {
    for (int r = 0; r < 5; ++r) CHECK(same_bits(whole[size_t(r) * out + j], pieces[size_t(r) * out + j]));
    CHECK(same_bits(single[size_t(j)], whole[size_t(2) * out + j]));
  }
}
