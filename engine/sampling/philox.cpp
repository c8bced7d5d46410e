#include "engine/sampling/philox.hpp"

namespace strata {
namespace {

constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;  // round multipliers
constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u; // key schedule increments

inline void mulhilo(uint32_t a, uint32_t b, uint32_t* hi, uint32_t* lo) {
  uint64_t p = uint64_t(a) * b;
  *hi = uint32_t(p >> 32);
  *lo = uint32_t(p);
}

}  // namespace

PhiloxCounter philox4x32_10(PhiloxCounter c, PhiloxKey k) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k[0] += kWeyl0;
      k[1] += kWeyl1;
    }
    uint32_t hi0, lo0, hi1, lo1;
    mulhilo(kMul0, c[0], &hi0, &lo0);
    mulhilo(kMul1, c[2], &hi1, &lo1);
    c = {hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0};
  }
  return c;
}

double philox_uniform(uint64_t seed, uint64_t position) {
  PhiloxCounter out = philox4x32_10({uint32_t(position), uint32_t(position >> 32), 0u, 0u},
                                    {uint32_t(seed), uint32_t(seed >> 32)});
  uint64_t bits = (uint64_t(out[1]) << 32 | out[0]) >> 11;
  return double(bits) * (1.0 / 9007199254740992.0);  // 2^-53
}

}  // namespace strata
