#include "engine/cpu/dot.hpp"

namespace strata {
namespace cpu {

float dot_portable(const float* a, const float* b, int n) {
  float lanes[kDotLanes] = {};
  const int main = n - n % kDotLanes;
  for (int i = 0; i < main; i += kDotLanes)
    for (int l = 0; l < kDotLanes; ++l) lanes[l] = std::fma(a[i + l], b[i + l], lanes[l]);
  return dot_finish(lanes, a, b, n);
}

void matmul_portable(const float* W, int in, const float* X, int x_stride, int rows, float* Y, int y_stride,
                     int j_begin, int j_end) {
  for (int j = j_begin; j < j_end; ++j)
    for (int r = 0; r < rows; ++r)
      Y[size_t(r) * y_stride + j] = dot_portable(W + size_t(j) * in, X + size_t(r) * x_stride, in);
}

}  // namespace cpu
}  // namespace strata
