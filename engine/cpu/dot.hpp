// fp32 dot products with one fixed summation order, shared by every caller of the CPU backend.
//
// The order (the "16-lane order"): element i of the first n - n % 16 goes to lane i % 16, lanes accumulate
// with fused multiply-adds in increasing i; the n % 16 tail elements go to lanes 0.. in order; then lanes
// fold as l + (l + 8), then + 4, + 2, + 1. It depends on n alone — not on the thread that runs it, the rows
// beside it in a window, or whether the AVX2 or the portable path ran — which is what makes a row's logits
// bit-identical alone, in a batch, or inside a prompt chunk (DESIGN.md invariant 2).
#pragma once
#include <cmath>

namespace strata {
namespace cpu {

constexpr int kDotLanes = 16;

// The tail and the fold of the 16-lane order, from lanes already holding the main part's partial sums.
inline float dot_finish(float lanes[kDotLanes], const float* a, const float* b, int n) {
  const int main = n - n % kDotLanes;
  for (int i = main; i < n; ++i) lanes[i - main] = std::fma(a[i], b[i], lanes[i - main]);
  for (int w = kDotLanes / 2; w >= 1; w /= 2)
    for (int l = 0; l < w; ++l) lanes[l] = lanes[l] + lanes[l + w];
  return lanes[0];
}

// Y[r * y_stride + j] = dot(W[j * in ...], X[r * x_stride ...]) for j in [j_begin, j_end), every r < rows.
using MatmulKernel = void (*)(const float* W, int in, const float* X, int x_stride, int rows, float* Y,
                              int y_stride, int j_begin, int j_end);

void matmul_portable(const float* W, int in, const float* X, int x_stride, int rows, float* Y, int y_stride,
                     int j_begin, int j_end);
// Defined only when the AVX2 translation unit is built (x86-64); same bits as the portable kernel.
void matmul_avx2(const float* W, int in, const float* X, int x_stride, int rows, float* Y, int y_stride,
                 int j_begin, int j_end);

// Single dot products in the same 16-lane order (attention scores, RMSNorm sums of squares).
using DotKernel = float (*)(const float* a, const float* b, int n);
float dot_portable(const float* a, const float* b, int n);
float dot_avx2(const float* a, const float* b, int n);
DotKernel best_dot_kernel();

// The kernel for this machine: AVX2+FMA when the CPU has them, else the portable one.
MatmulKernel best_matmul_kernel();
const char* matmul_kernel_name(MatmulKernel k);

}  // namespace cpu
}  // namespace strata
