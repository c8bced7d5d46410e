#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>

#include "engine/model/weights.hpp"

using namespace strata;

namespace {

std::vector<float> widen(DType t, std::vector<uint16_t> halves) {
  TensorView v;
  v.dtype = t;
  v.shape = {int64_t(halves.size())};
  v.data = halves.data();
  v.nbytes = halves.size() * 2;
  return v.to_f32();
}

}  // namespace

TEST_CASE("bf16 widens to the fp32 whose top half it is") {
  auto f = widen(DType::BF16, {0x3f80, 0xc000, 0x0000, 0x8000, 0x7f80, 0x3eaa});
  CHECK(f[0] == 1.0f);
  CHECK(f[1] == -2.0f);
  CHECK(f[2] == 0.0f);
  CHECK(std::signbit(f[3]));
  CHECK(std::isinf(f[4]));
  CHECK(f[5] == 0.33203125f);
}

TEST_CASE("f16 widens exactly, including subnormals, the largest normal, inf and NaN") {
  auto f = widen(DType::F16, {0x3c00, 0xc000, 0x7bff, 0x0001, 0x03ff, 0x0400, 0xfc00, 0x7e00, 0x3555});
  CHECK(f[0] == 1.0f);
  CHECK(f[1] == -2.0f);
  CHECK(f[2] == 65504.0f);
  CHECK(f[3] == std::ldexp(1.0f, -24));           // smallest subnormal
  CHECK(f[4] == std::ldexp(1023.0f, -24));        // largest subnormal
  CHECK(f[5] == std::ldexp(1.0f, -14));           // smallest normal
  CHECK((std::isinf(f[6]) && f[6] < 0));
  CHECK(std::isnan(f[7]));
  CHECK(f[8] == 0.333251953125f);
}

TEST_CASE("f32 tensors are copied bit for bit from unaligned data") {
  unsigned char buf[1 + 8];
  float a = 1.5f, b = -3.25e-7f;
  std::memcpy(buf + 1, &a, 4);
  std::memcpy(buf + 5, &b, 4);
  TensorView v;
  v.dtype = DType::F32;
  v.shape = {2};
  v.data = buf + 1;
  v.nbytes = 8;
  auto f = v.to_f32();
  CHECK(f[0] == a);
  CHECK(f[1] == b);
  CHECK(dtype_size(DType::BF16) == 2);
  CHECK(std::string(dtype_name(DType::F16)) == "F16");
}
