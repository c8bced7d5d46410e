// Philox4x32-10 (Salmon et al., "Parallel Random Numbers: As Easy as 1, 2, 3", SC11): a counter-based
// generator, so the random number for (seed, position) is a pure function of the two. That is what lets a
// seeded request draw the same tokens alone, in a batch, or under speculative decoding (DESIGN.md inv. 1).
#pragma once
#include <array>
#include <cstdint>

namespace strata {

using PhiloxCounter = std::array<uint32_t, 4>;
using PhiloxKey = std::array<uint32_t, 2>;

// Ten rounds of the Philox 4x32 bijection of `counter` under `key` (Random123's philox4x32_R(10, ...)).
PhiloxCounter philox4x32_10(PhiloxCounter counter, PhiloxKey key);

// The uniform in [0, 1) of a row at `position` of a request with `seed`: key = (seed low, seed high),
// counter = (position low, position high, 0, 0); the first two output words make a 53-bit double
// ((word1 << 32 | word0) >> 11) * 2^-53. Every backend must use exactly this.
double philox_uniform(uint64_t seed, uint64_t position);

}  // namespace strata
