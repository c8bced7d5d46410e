#include "engine/cpu/dot.hpp"

namespace strata {
namespace cpu {

MatmulKernel best_matmul_kernel() {
#if defined(STRATA_CPU_HAVE_AVX2)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return &matmul_avx2;
#endif
  return &matmul_portable;
}

DotKernel best_dot_kernel() {
#if defined(STRATA_CPU_HAVE_AVX2)
  return best_matmul_kernel() == &matmul_avx2 ? &dot_avx2 : &dot_portable;
#else
  return &dot_portable;
#endif
}

const char* matmul_kernel_name(MatmulKernel k) {
#if defined(STRATA_CPU_HAVE_AVX2)
  if (k == &matmul_avx2) return "avx2-fma";
#endif
  return "portable";
}

}  // namespace cpu
}  // namespace strata
