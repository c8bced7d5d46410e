// Built with -mavx2 -mfma (this file only) and entered only after a CPU check. Two ymm accumulators are
// lanes 0-7 and 8-15 of the 16-lane order in dot.hpp; blocks of four W rows share each load of x, which
// changes the memory traffic but not any element's order of operations.
#include <immintrin.h>

#include "engine/cpu/dot.hpp"

namespace strata {
namespace cpu {
namespace {

inline float finish(__m256 lo, __m256 hi, const float* a, const float* b, int n) {
  alignas(32) float lanes[kDotLanes];
  _mm256_store_ps(lanes, lo);
  _mm256_store_ps(lanes + 8, hi);
  return dot_finish(lanes, a, b, n);
}

}  // namespace

float dot_avx2(const float* a, const float* b, int n) {
  const int main = n - n % kDotLanes;
  __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
  for (int i = 0; i < main; i += kDotLanes) {
    lo = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), lo);
    hi = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), hi);
  }
  return finish(lo, hi, a, b, n);
}

void matmul_avx2(const float* W, int in, const float* X, int x_stride, int rows, float* Y, int y_stride,
                 int j_begin, int j_end) {
  const int main = in - in % kDotLanes;
  int j = j_begin;
  for (; j + 4 <= j_end; j += 4) {
    const float* w0 = W + size_t(j) * in;
    const float* w1 = w0 + in;
    const float* w2 = w1 + in;
    const float* w3 = w2 + in;
    for (int r = 0; r < rows; ++r) {
      const float* x = X + size_t(r) * x_stride;
      __m256 a0 = _mm256_setzero_ps(), b0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(),
             b1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(), b2 = _mm256_setzero_ps(),
             a3 = _mm256_setzero_ps(), b3 = _mm256_setzero_ps();
      for (int i = 0; i < main; i += kDotLanes) {
        const __m256 xl = _mm256_loadu_ps(x + i), xh = _mm256_loadu_ps(x + i + 8);
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(w0 + i), xl, a0);
        b0 = _mm256_fmadd_ps(_mm256_loadu_ps(w0 + i + 8), xh, b0);
        a1 = _mm256_fmadd_ps(_mm256_loadu_ps(w1 + i), xl, a1);
        b1 = _mm256_fmadd_ps(_mm256_loadu_ps(w1 + i + 8), xh, b1);
        a2 = _mm256_fmadd_ps(_mm256_loadu_ps(w2 + i), xl, a2);
        b2 = _mm256_fmadd_ps(_mm256_loadu_ps(w2 + i + 8), xh, b2);
        a3 = _mm256_fmadd_ps(_mm256_loadu_ps(w3 + i), xl, a3);
        b3 = _mm256_fmadd_ps(_mm256_loadu_ps(w3 + i + 8), xh, b3);
      }
      float* y = Y + size_t(r) * y_stride + j;
      y[0] = finish(a0, b0, w0, x, in);
      y[1] = finish(a1, b1, w1, x, in);
      y[2] = finish(a2, b2, w2, x, in);
      y[3] = finish(a3, b3, w3, x, in);
    }
  }
  for (; j < j_end; ++j) {
    const float* w = W + size_t(j) * in;
    for (int r = 0; r < rows; ++r) {
      const float* x = X + size_t(r) * x_stride;
      __m256 a = _mm256_setzero_ps(), b = _mm256_setzero_ps();
      for (int i = 0; i < main; i += kDotLanes) {
        a = _mm256_fmadd_ps(_mm256_loadu_ps(w + i), _mm256_loadu_ps(x + i), a);
        b = _mm256_fmadd_ps(_mm256_loadu_ps(w + i + 8), _mm256_loadu_ps(x + i + 8), b);
      }
      Y[size_t(r) * y_stride + j] = finish(a, b, w, x, in);
    }
  }
}

}  // namespace cpu
}  // namespace strata
