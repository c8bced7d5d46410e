#!/usr/bin/env bash
# Usage: stage-runtime.sh BINARY STAGING_DIR [DEFAULT_MODEL_DIR]
#
# Lays out what the runtime image needs under STAGING_DIR/opt/strata: bin/<binary> and lib/ with every shared
# library the binary resolves to, except the C library (the runtime image has the same Debian 12 glibc) and
# the NVIDIA driver (the NVIDIA container toolkit mounts the host's libcuda at run time; a copy would not match
# the host's kernel module). The build and runtime images are both Debian 12, so a copied library is the very
# file the binary was linked and tested against.
#
# DEFAULT_MODEL_DIR (the repository's models/strata-tiny), when it exists, goes to opt/strata/models/, where the
# binary looks for its built-in model (<executable>/../models/strata-tiny), so `strata serve` without --model
# works in the image as it does in a checkout.
#
# Fails, naming the library, when the binary needs a library that cannot be found: an image that would only
# fail on its first start is worse than a build that fails now.
set -euo pipefail

if [[ $# -lt 2 || $# -gt 3 ]]; then
  echo "usage: $0 BINARY STAGING_DIR [DEFAULT_MODEL_DIR]" >&2
  exit 2
fi
binary=$1
staging=$2
default_model=${3:-}
if [[ ! -x "$binary" ]]; then
  echo "stage-runtime: '$binary' is not an executable file" >&2
  exit 1
fi

# Libraries that must come from the machine that runs the image, never from the build.
provided_at_run_time() {
  case "$1" in
    linux-vdso.so.*|ld-linux*.so.*|libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*) return 0 ;;
    libcuda.so.*|libnvidia-*.so.*|libnvidia-ml.so.*) return 0 ;;
    *) return 1 ;;
  esac
}

mkdir -p "$staging/opt/strata/bin" "$staging/opt/strata/lib"
install -m 0755 "$binary" "$staging/opt/strata/bin/$(basename "$binary")"

missing=()
copied=0
while read -r line; do
  # ldd lines: "libfoo.so.1 => /path/libfoo.so.1 (0x...)", "libbar.so.2 => not found", or "/lib64/ld-linux..."
  name=${line%% *}
  provided_at_run_time "$(basename "$name")" && continue
  if [[ "$line" == *"=> not found"* ]]; then
    missing+=("$name")
    continue
  fi
  [[ "$line" == *"=>"* ]] || continue
  path=$(sed -E 's/.*=> ([^ ]+) .*/\1/' <<<"$line")
  cp -L "$path" "$staging/opt/strata/lib/$name"
  copied=$((copied + 1))
done < <(ldd "$binary")

if [[ ${#missing[@]} -gt 0 ]]; then
  echo "stage-runtime: $binary needs libraries that are not installed: ${missing[*]}" >&2
  exit 1
fi
model_note=""
if [[ -n "$default_model" && -f "$default_model/config.json" ]]; then
  mkdir -p "$staging/opt/strata/models"
  cp -r "$default_model" "$staging/opt/strata/models/$(basename "$default_model")"
  model_note=" and the default model $(basename "$default_model")"
fi
echo "stage-runtime: staged $(basename "$binary"), $copied libraries$model_note under $staging/opt/strata"
