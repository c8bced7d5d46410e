#!/usr/bin/env bash
# Builds the request fuzzer with clang and runs it for a bounded time over the committed corpus.
# Usage: fuzz/run_fuzz.sh [seconds=60] [build-dir=build-fuzz]
# New interesting inputs go to a temporary directory, never into the repository's corpus.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
seconds="${1:-60}"
build="${2:-$root/build-fuzz}"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DSTRATA_FUZZ=ON -DSTRATA_TESTS=OFF -DSTRATA_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C "$build" fuzz_request
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
"$build/fuzz/fuzz_request" -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
  -dict="$root/fuzz/request.dict" "$scratch" "$root/fuzz/corpus/request"
