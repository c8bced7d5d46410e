// Element types of checkpoint tensors and their exact widening to fp32.
#include <cstring>

#include "engine/model/weights.hpp"

namespace strata {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "F32";
    case DType::F16: return "F16";
    case DType::BF16: return "BF16";
  }
  return "?";
}

size_t dtype_size(DType t) { return t == DType::F32 ? 4 : 2; }

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

namespace {

float bf16_to_f32(uint16_t h) {
  // bf16 is the top half of an fp32: widening is a shift, exact for every value including NaN/inf.
  uint32_t bits = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

float f16_to_f32(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else {
      // Subnormal half: renormalize so the fp32 carries the same value exactly.
      int e = -1;
      do {
        man <<= 1;
        ++e;
      } while ((man & 0x400u) == 0);
      man &= 0x3ffu;
      bits = sign | uint32_t(127 - 15 - e) << 23 | man << 13;
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | man << 13;  // inf or NaN (payload kept)
  } else {
    bits = sign | (exp + (127 - 15)) << 23 | man << 13;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

}  // namespace

std::vector<float> TensorView::to_f32() const {
  size_t n = size_t(numel());
  std::vector<float> out(n);
  const unsigned char* p = static_cast<const unsigned char*>(data);
  // memcpy per element: tensor data inside a safetensors file need not be aligned.
  switch (dtype) {
    case DType::F32:
      if (n) std::memcpy(out.data(), p, n * 4);
      break;
    case DType::BF16:
      for (size_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        out[i] = bf16_to_f32(h);
      }
      break;
    case DType::F16:
      for (size_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        out[i] = f16_to_f32(h);
      }
      break;
  }
  return out;
}

}  // namespace strata
