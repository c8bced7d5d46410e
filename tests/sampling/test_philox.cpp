// Philox4x32-10 against Random123's published known-answer vectors, and the uniform built from it.
#include <catch2/catch.hpp>
#include <set>

#include "engine/sampling/philox.hpp"

using namespace strata;

TEST_CASE("Philox4x32-10 reproduces Random123's known-answer vectors") {
  CHECK(philox4x32_10({0, 0, 0, 0}, {0, 0}) == PhiloxCounter{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8});
  CHECK(philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}) ==
        PhiloxCounter{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd});
  CHECK(philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}) ==
        PhiloxCounter{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1});
}

TEST_CASE("the uniform for (seed, position) is the documented 53-bit view of Philox's first two words") {
  // seed 0, position 0 is the all-zero known-answer vector: words 0x6627e8d5, 0xe169c58d.
  const uint64_t bits = ((uint64_t(0xe169c58d) << 32) | 0x6627e8d5u) >> 11;
  CHECK(philox_uniform(0, 0) == double(bits) / 9007199254740992.0);
  // seed words are (low, high), position words (low, high, 0, 0).
  const PhiloxCounter w = philox4x32_10({7, 1, 0, 0}, {0x89abcdef, 0x01234567});
  CHECK(philox_uniform(0x0123456789abcdefull, (uint64_t(1) << 32) | 7) ==
        double(((uint64_t(w[1]) << 32 | w[0]) >> 11)) / 9007199254740992.0);
}

TEST_CASE("uniforms are a pure function of (seed, position), in [0, 1), and differ across both") {
  std::set<double> seen;
  for (uint64_t seed : {0ull, 1ull, 42ull, 0xffffffffffffffffull})
    for (uint64_t pos = 0; pos < 200; ++pos) {
      const double u = philox_uniform(seed, pos);
      CHECK(u == philox_uniform(seed, pos));
      CHECK(u >= 0.0);
      CHECK(u < 1.0);
      seen.insert(u);
    }
  CHECK(seen.size() == 800);
}

TEST_CASE("uniforms over positions are evenly spread (10 bins, chi-square)") {
  const int n = 20000, bins = 10;
  int count[bins] = {};
  for (int p = 0; p < n; ++p) ++count[int(philox_uniform(1234, uint64_t(p)) * bins)];
  double chi2 = 0;
  for (int b = 0; b < bins; ++b) chi2 += (count[b] - n / bins) * double(count[b] - n / bins) / (n / bins);
  CHECK(chi2 < 27.9);  // p = 0.001 for 9 degrees of freedom
}
