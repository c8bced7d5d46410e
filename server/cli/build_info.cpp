#include "server/cli/build_info.hpp"

namespace strata {

const char* strata_version() { return STRATA_VERSION; }

bool built_with_cuda() {
#ifdef STRATA_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

}  // namespace strata
