// The CUDA backend's measurement overrides: environment variables read once by the code they tune, for the
// kernel benchmarks' comparisons (docs/PERFORMANCE.md names each where it is used).
#pragma once
#include <cstdlib>

namespace strata {
namespace cuda {

// The integer value of `name`, or `fallback` when it is unset, empty or outside [lo, hi].
inline int env_int(const char* name, int lo, int hi, int fallback) {
  const char* e = std::getenv(name);
  if (!e || !*e) return fallback;
  const int v = std::atoi(e);
  return v >= lo && v <= hi ? v : fallback;
}

}  // namespace cuda
}  // namespace strata
