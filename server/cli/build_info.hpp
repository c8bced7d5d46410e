// What this binary is: version and whether the CUDA backend is compiled in (for `strata version`, the
// startup log and the strata_build_info metric).
#pragma once

namespace strata {

const char* strata_version();
bool built_with_cuda();

}  // namespace strata
