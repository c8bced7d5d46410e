// bf16 rounding on the host: what the devices' __float2bfloat16_rn gives, as a float. The KV cache option
// (kv_cache_dtype bf16) rounds K and V with it on the CPU backend, so both backends store the same values.
#pragma once
#include <cstdint>
#include <cstring>

namespace strata {

// Round to nearest even, keeping infinities and NaN (as a quiet NaN).
inline float round_bf16(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  if ((b & 0x7f800000u) == 0x7f800000u) {
    if (b & 0x007fffffu) b = (b | 0x00400000u) & 0xffff0000u;  // NaN stays NaN
  } else {
    b = (b + 0x7fffu + ((b >> 16) & 1u)) & 0xffff0000u;  // finite: may round up to infinity, as the device does
  }
  std::memcpy(&f, &b, 4);
  return f;
}

}  // namespace strata
