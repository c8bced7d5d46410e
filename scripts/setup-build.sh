#!/usr/bin/env bash
# Builds strata (and the tests unless --no-tests) into build/. CUDA is built when nvcc is found
# (--cuda on|off|auto). Usage: scripts/setup-build.sh [--cuda auto|on|off] [--no-tests] [--target T]
set -euo pipefail
cd "$(dirname "$0")/.."
cuda=AUTO; tests=ON; target=all
while [ $# -gt 0 ]; do
  case "$1" in
    --cuda) cuda=$(echo "$2" | tr a-z A-Z); shift 2;;
    --no-tests) tests=OFF; shift;;
    --target) target="$2"; shift 2;;
    *) echo "build.sh: unknown argument $1" >&2; exit 2;;
  esac
done
scripts/deps.sh build
[ -x /usr/local/cuda/bin/nvcc ] && export PATH="/usr/local/cuda/bin:$PATH"
launcher=""; command -v ccache >/dev/null && launcher="-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTRATA_CUDA="$cuda" -DSTRATA_TESTS="$tests" $launcher >/dev/null
ninja -C build -j"$(nproc)" "$target"
