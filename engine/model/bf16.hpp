// bf16 rounding on the host, as the devices' __float2bfloat16_rn does it: round to nearest even, infinities
// kept, NaN kept as a quiet NaN. The one host rounding for weight upload (cuda/device_weights.cpp), RoPE
// frequencies of a half-precision reference (engine/cpu/rope.cpp), the bf16 KV cache option of the CPU backend
// (which stores the values the CUDA backend's bf16 arena holds) and the GPU tests' host references.
#pragma once
#include <cstdint>
#include <cstring>

namespace strata {

inline uint16_t bf16_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  if ((b & 0x7f800000u) == 0x7f800000u && (b & 0x007fffffu)) return uint16_t((b >> 16) | 0x40u);  // quiet NaN
  return uint16_t((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);  // finite: may round up to infinity
}

inline float bf16_to_float(uint16_t h) {
  const uint32_t b = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

inline float round_bf16(float f) { return bf16_to_float(bf16_bits(f)); }

}  // namespace strata
