#!/usr/bin/env bash
# Offline checks of the deployment files; one check per ctest test (tests/deploy/CMakeLists.txt).
# usage: tests/deploy/deploy_checks.sh k8s-schema|k8s-policy|dockerfile|alerts|queries|stage-runtime
# Exit 77 (skipped) only when a tool the check needs is not installed, saying which.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"

skip() { echo "SKIP: $*"; exit 77; }
need_tool() { command -v "$1" >/dev/null || skip "$1 is not installed ($2)"; }
need_node_modules() {
  need_tool node "Debian package nodejs"
  [[ -d "$here/node_modules/kubernetes-models" && -d "$here/node_modules/dockerfilelint" ]] || {
    echo "FAIL: tests/deploy/node_modules is missing: run npm ci --prefix tests/deploy"
    exit 1
  }
}
render() { # kustomize the manifests the way `kubectl apply -k` would
  need_tool kubectl "it renders the kustomizations offline"
  kubectl kustomize "$1"
}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

case "${1:-}" in
  k8s-schema)
    need_node_modules
    render deploy/k8s >"$work/strata.yaml"
    render deploy/k8s/prometheus-adapter >"$work/adapter.yaml"
    node "$here/validate_k8s.mjs" "$work/strata.yaml" "$work/adapter.yaml"
    # The validator must refuse each broken manifest, for the reason its first line states.
    bad=0
    for f in "$here"/invalid/*.yaml; do
      expect=$(sed -n '1s/^# expect: //p' "$f")
      if out=$(node "$here/validate_k8s.mjs" "$f"); then
        echo "FAIL: $(basename "$f") was accepted"; bad=$((bad + 1))
      elif ! grep -qF -- "$expect" <<<"$out"; then
        echo "FAIL: $(basename "$f") refused, but not with '$expect':"; echo "$out"; bad=$((bad + 1))
      else
        echo "ok   refused $(basename "$f"): $expect"
      fi
    done
    [[ $bad -eq 0 ]]
    ;;
  k8s-policy)
    need_node_modules
    render deploy/k8s >"$work/strata.yaml"
    node "$here/check_k8s_policy.mjs" "$work/strata.yaml" deploy/k8s/prometheus-adapter/config.yaml Dockerfile --self-test
    ;;
  dockerfile)
    need_node_modules
    node "$here/lint_dockerfile.mjs" Dockerfile .dockerignore --self-test
    "$here/node_modules/.bin/dockerfilelint" --config "$here" Dockerfile
    ;;
  alerts)
    need_tool promtool "Debian package prometheus"
    promtool check rules deploy/prometheus/strata-alerts.yaml
    promtool test rules "$here/strata-alerts.test.yaml"
    # Every alert's runbook must lead to a section of the operations guide.
    for anchor in $(grep -o 'OPERATIONS.md#[a-z0-9-]*' deploy/prometheus/strata-alerts.yaml | cut -d'#' -f2 | sort -u); do
      grep -q "<a id=\"$anchor\"></a>" docs/OPERATIONS.md || { echo "FAIL: docs/OPERATIONS.md has no section #$anchor"; exit 1; }
      echo "ok   runbook docs/OPERATIONS.md#$anchor exists"
    done
    ;;
  queries)
    need_node_modules
    need_tool promtool "Debian package prometheus"
    node "$here/check_queries.mjs" deploy/grafana/strata-dashboard.json deploy/k8s/prometheus-adapter/config.yaml \
      deploy/prometheus/strata-alerts.yaml --self-test
    ;;
  stage-runtime)
    # The image's staging script on a real dynamically linked program: it copies what the program links,
    # leaves out the C library, and the staged copy runs against the staged libraries alone.
    need_tool ldd "Debian package libc-bin"
    prog=$(command -v curl || command -v ninja || command -v cmake)
    deploy/docker/stage-runtime.sh "$prog" "$work/stage"
    name=$(basename "$prog")
    for lib in $(ldd "$prog" | awk '/=> \// {print $1}'); do
      case "$lib" in libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*) 
        [[ ! -e "$work/stage/opt/strata/lib/$lib" ]] || { echo "FAIL: staged the C library $lib"; exit 1; } ;;
      *) [[ -e "$work/stage/opt/strata/lib/$lib" ]] || { echo "FAIL: $lib was not staged"; exit 1; } ;;
      esac
    done
    LD_LIBRARY_PATH="$work/stage/opt/strata/lib" ldd "$work/stage/opt/strata/bin/$name" >"$work/ldd.txt"
    if grep -v -E 'linux-vdso|ld-linux|lib(c|m|pthread|dl|rt)\.so' "$work/ldd.txt" | grep -v -F "$work/stage/opt/strata/lib/"; then
      echo "FAIL: the staged $name resolves the libraries above outside the staging directory"; exit 1
    fi
    LD_LIBRARY_PATH="$work/stage/opt/strata/lib" "$work/stage/opt/strata/bin/$name" --version >/dev/null
    # A binary that needs a library the machine lacks must stop the image build, naming the library.
    need_tool cc "the C compiler builds the program with a missing library"
    echo 'int strata_gone(void) { return 7; }' >"$work/gone.c"
    echo 'int strata_gone(void); int main(void) { return strata_gone(); }' >"$work/main.c"
    cc -shared -fPIC -o "$work/libstrata-missing.so.7" "$work/gone.c" -Wl,-soname,libstrata-missing.so.7
    cc -o "$work/needs-missing" "$work/main.c" "$work/libstrata-missing.so.7"
    rm "$work/libstrata-missing.so.7"
    if deploy/docker/stage-runtime.sh "$work/needs-missing" "$work/stage2" 2>"$work/err.txt"; then
      echo "FAIL: staged a binary whose library is missing"; exit 1
    fi
    grep -q "libstrata-missing.so.7" "$work/err.txt" || { echo "FAIL: the error does not name the library:"; cat "$work/err.txt"; exit 1; }
    echo "ok   staged $name; refused a binary needing libstrata-missing.so.7"
    ;;
  *)
    echo "usage: $0 k8s-schema|k8s-policy|dockerfile|alerts|queries|stage-runtime" >&2
    exit 2
    ;;
esac
