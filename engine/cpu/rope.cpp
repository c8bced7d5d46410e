#include "engine/cpu/rope.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>

#include "engine/core/types.hpp"
#include "engine/model/bf16.hpp"

namespace strata {
namespace cpu {
namespace {

float round_to(DType t, float f) {
  if (t == DType::BF16) return round_bf16(f);
  if (t == DType::F16) {
#if defined(__FLT16_MAX__)
    return float(static_cast<_Float16>(f));
#else
    throw Error("rope: rounding frequencies to F16 needs a compiler with _Float16");
#endif
  }
  return f;
}

}  // namespace

std::vector<float> rope_inv_freq(const RopeConfig& rope, int head_dim, DType freq_dtype) {
  const int half = head_dim / 2;
  std::vector<float> inv(static_cast<size_t>(half));
  for (int i = 0; i < half; ++i)
    inv[size_t(i)] = float(1.0 / std::pow(rope.theta, double(2 * i) / double(head_dim)));
  if (rope.type == "llama3") {
    // Long wavelengths are slowed by `factor`, short ones kept, the band between interpolated smoothly.
    const double pi = 3.14159265358979323846;
    const double old_ctx = rope.original_max_position_embeddings;
    const double low_wavelen = old_ctx / rope.low_freq_factor;
    const double high_wavelen = old_ctx / rope.high_freq_factor;
    for (int i = 0; i < half; ++i) {
      const double f = inv[size_t(i)];
      const double wavelen = 2.0 * pi / f;
      double out;
      if (wavelen < high_wavelen) {
        out = f;
      } else if (wavelen > low_wavelen) {
        out = f / rope.factor;
      } else {
        const double smooth = (old_ctx / wavelen - rope.low_freq_factor) / (rope.high_freq_factor - rope.low_freq_factor);
        out = (1.0 - smooth) * f / rope.factor + smooth * f;
      }
      inv[size_t(i)] = float(out);
    }
  }
  for (float& f : inv) f = round_to(freq_dtype, f);
  return inv;
}

RopeTable::RopeTable(const RopeConfig& rope, int head_dim, int max_positions, DType freq_dtype)
    : half_(head_dim / 2) {
  const std::vector<float> inv = rope_inv_freq(rope, head_dim, freq_dtype);
  cos_.resize(size_t(max_positions) * half_);
  sin_.resize(size_t(max_positions) * half_);
  for (int p = 0; p < max_positions; ++p)
    for (int i = 0; i < half_; ++i) {
      const float angle = float(p) * inv[size_t(i)];  // fp32 product, as transformers forms it
      cos_[size_t(p) * half_ + i] = float(std::cos(double(angle)));
      sin_[size_t(p) * half_ + i] = float(std::sin(double(angle)));
    }
}

void RopeTable::apply(float* heads, int n_heads, int pos) const {
  const float* c = cos_.data() + size_t(pos) * half_;
  const float* s = sin_.data() + size_t(pos) * half_;
  for (int h = 0; h < n_heads; ++h) {
    float* x = heads + size_t(h) * 2 * half_;
    for (int i = 0; i < half_; ++i) {
      const float a = x[i], b = x[i + half_];
      x[i] = a * c[i] - b * s[i];
      x[i + half_] = b * c[i] + a * s[i];
    }
  }
}

}  // namespace cpu
}  // namespace strata
