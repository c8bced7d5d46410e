// Rotary embeddings: transformers' frequencies, llama3's three bands, and the rotate-half pairing.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>

#include "engine/cpu/rope.hpp"

using namespace strata;
using namespace strata::cpu;

TEST_CASE("default rope frequencies are theta^(-2i/d)") {
  RopeConfig r;
  r.theta = 10000.0;
  auto f = rope_inv_freq(r, 8);
  REQUIRE(f.size() == 4);
  for (int i = 0; i < 4; ++i) CHECK(f[size_t(i)] == Approx(std::pow(10000.0, -2.0 * i / 8)).epsilon(1e-7));
}

TEST_CASE("llama3 scaling keeps high frequencies, divides low ones by factor, blends the band between") {
  RopeConfig r;
  r.type = "llama3";
  r.theta = 500000.0;
  r.factor = 8.0;
  r.low_freq_factor = 1.0;
  r.high_freq_factor = 4.0;
  r.original_max_position_embeddings = 64;  // wavelengths above 64 are low, below 16 high
  RopeConfig plain = r;
  plain.type = "default";
  const auto base = rope_inv_freq(plain, 16), scaled = rope_inv_freq(r, 16);
  const double pi = 3.14159265358979323846;
  int low = 0, high = 0, mid = 0;
  for (size_t i = 0; i < base.size(); ++i) {
    const double wavelen = 2 * pi / base[i];
    if (wavelen < 16) {
      CHECK(scaled[i] == base[i]);
      ++high;
    } else if (wavelen > 64) {
      CHECK(scaled[i] == Approx(base[i] / 8.0).epsilon(1e-6));
      ++low;
    } else {
      const double s = (64 / wavelen - 1.0) / 3.0;
      CHECK(scaled[i] == Approx((1 - s) * base[i] / 8.0 + s * base[i]).epsilon(1e-6));
      ++mid;
    }
  }
  CHECK(high > 0);
  CHECK(low > 0);
  CHECK(mid > 0);
}

TEST_CASE("rotation pairs dimension i with i + d/2, is the identity at position 0 and keeps norms") {
  RopeConfig r;
  RopeTable t(r, 4, 8);
  std::vector<float> x{1, 2, 3, 4};
  t.apply(x.data(), 1, 0);
  CHECK(x == std::vector<float>{1, 2, 3, 4});
  std::vector<float> y{1, 0, 0, 0};
  t.apply(y.data(), 1, 3);
  CHECK(y[0] == Approx(std::cos(3.0)));
  CHECK(y[2] == Approx(std::sin(3.0)));  // theta^0 = 1: angle 3 on the first pair
  CHECK(y[1] == 0.0f);
  std::vector<float> z{0.3f, -1.2f, 2.0f, 0.7f, 1, 1, 1, 1};
  double before = 0, after = 0;
  for (float v : z) before += v * v;
  t.apply(z.data(), 2, 5);
  for (float v : z) after += v * v;
  CHECK(after == Approx(before).epsilon(1e-6));
}

TEST_CASE("frequencies rounded to a half precision are the nearest representable values") {
  RopeConfig r;
  r.theta = 1000000.0;
  const auto f32 = rope_inv_freq(r, 32), bf = rope_inv_freq(r, 32, DType::BF16), h = rope_inv_freq(r, 32, DType::F16);
  int changed = 0;
  for (size_t i = 0; i < f32.size(); ++i) {
    CHECK(std::fabs(bf[i] - f32[i]) <= std::ldexp(std::fabs(f32[i]), -8));  // bf16: 8 significant bits
    CHECK(std::fabs(h[i] - f32[i]) <= std::max(std::ldexp(std::fabs(f32[i]), -11), std::ldexp(1.0f, -25)));
    uint32_t bits;
    std::memcpy(&bits, &bf[i], 4);
    CHECK((bits & 0xffffu) == 0);
    changed += bf[i] != f32[i];
  }
  CHECK(changed > 0);
}
