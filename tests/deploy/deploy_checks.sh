#!/usr/bin/env bash
# Offline checks of the deployment files; one check per ctest test (tests/deploy/CMakeLists.txt).
# usage: tests/deploy/deploy_checks.sh k8s-schema|k8s-policy|dockerfile|alerts|queries|docs|stage-runtime
#        tests/deploy/deploy_checks.sh live STRATA_BINARY
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
    node "$here/check_k8s_policy.mjs" "$work/strata.yaml" deploy/k8s/prometheus-adapter/config.yaml Dockerfile \
      deploy/prometheus/strata-alerts.yaml --self-test
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
  docs)
    need_node_modules
    render deploy/k8s >"$work/strata.yaml"
    node "$here/check_docs.mjs" docs/OPERATIONS.md "$work/strata.yaml"
    ;;
  stage-runtime)
    # The image's staging script on a real dynamically linked program: it copies what the program links,
    # leaves out the C library, and the staged copy runs against the staged libraries alone.
    need_tool ldd "Debian package libc-bin"
    prog=$(command -v curl || command -v ninja || command -v cmake)
    mkdir -p "$work/models/tiny" && echo '{}' >"$work/models/tiny/config.json"
    deploy/docker/stage-runtime.sh "$prog" "$work/stage" "$work/models/tiny"
    [[ -f "$work/stage/opt/strata/models/tiny/config.json" ]] || { echo "FAIL: the default model was not staged"; exit 1; }
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
  live)
    # The real binary, started the way the Deployment starts it: the flags it passes exist, the ConfigMap's
    # config loads, the probes answer, /metrics serves every metric deploy/ reads, the Secret's key file
    # guards the API, and SIGTERM drains and exits within --shutdown-timeout.
    bin=${2:-}
    [[ -n "$bin" && -x "$bin" ]] || skip "the strata binary is not built (got '${bin}')"
    need_tool curl "Debian package curl"
    need_tool python3 "Debian package python3"
    help=$("$bin" serve --help 2>&1) || { echo "FAIL: strata serve --help failed:"; echo "$help"; exit 1; }
    flags=$(grep -o -- '--[a-z][a-z-]*=' deploy/k8s/deployment.yaml | tr -d '=' | sort -u)
    for flag in $flags --host --model; do
      grep -q -- "$flag\b" <<<"$help" || { echo "FAIL: the manifests pass $flag, which strata serve --help does not list"; exit 1; }
    done
    echo "ok   strata serve accepts every flag the Deployment and the image pass:" $flags
    for key in $(grep -oE '^[a-z][a-z-]*:' deploy/k8s/strata-config.yaml | tr -d ':'); do
      grep -q -- "--$key\b" <<<"$help" || { echo "FAIL: strata-config.yaml sets $key, which is no strata serve option"; exit 1; }
    done
    echo "ok   every key of the ConfigMap's config is a strata serve option"
    sed 's/^device: .*/device: cpu/' deploy/k8s/strata-config.yaml >"$work/config.yaml"
    echo "sk-deploy-check-$$" >"$work/api-keys"
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    model_args=()
    [[ -n "${STRATA_DEPLOY_CHECK_MODEL:-}" ]] && model_args=(--model="$STRATA_DEPLOY_CHECK_MODEL")
    "$bin" serve --host=127.0.0.1 --port="$port" --config="$work/config.yaml" --api-key-file="$work/api-keys" \
      --shutdown-timeout=30 --log-format=json --device=cpu "${model_args[@]}" >"$work/server.log" 2>&1 &
    pid=$!
    trap 'kill "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
    url="http://127.0.0.1:$port"
    for _ in $(seq 1 240); do
      kill -0 "$pid" 2>/dev/null || { echo "FAIL: strata exited during start:"; tail -20 "$work/server.log"; exit 1; }
      [[ $(curl -s -o /dev/null -w '%{http_code}' "$url/health") == 200 ]] && break
      sleep 0.5
    done
    [[ $(curl -s -o /dev/null -w '%{http_code}' "$url/health") == 200 ]] || { echo "FAIL: /health not 200 after 120 s"; exit 1; }
    ready=0
    for _ in $(seq 1 40); do [[ $(curl -s -o /dev/null -w '%{http_code}' "$url/ready") == 200 ]] && { ready=1; break; }; sleep 0.5; done
    [[ $ready == 1 ]] || { echo "FAIL: /ready not 200 once /health is"; exit 1; }
    echo "ok   /health and /ready answer 200 after loading"
    code=$(curl -s -o /dev/null -w '%{http_code}' "$url/v1/models")
    [[ $code == 401 ]] || { echo "FAIL: /v1/models without a key answered $code, not 401"; exit 1; }
    code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer sk-deploy-check-$$" "$url/v1/models")
    [[ $code == 200 ]] || { echo "FAIL: /v1/models with the key from --api-key-file answered $code"; exit 1; }
    echo "ok   the key file guards /v1: 401 without the key, 200 with it"
    curl -fsS "$url/metrics" >"$work/metrics.txt"
    missing=0
    while read -r name type _; do
      [[ -z "$name" || "$name" == \#* ]] && continue
      grep -qE "^# TYPE $name $type\$" "$work/metrics.txt" || { echo "FAIL: /metrics has no $type $name"; missing=$((missing + 1)); }
    done <"$here/metrics.txt"
    [[ $missing -eq 0 ]] || exit 1
    echo "ok   /metrics serves every metric in tests/deploy/metrics.txt with its type"
    if command -v promtool >/dev/null; then
      promtool check metrics <"$work/metrics.txt" || { echo "FAIL: promtool check metrics"; exit 1; }
    fi
    kill -TERM "$pid"
    start=$(date +%s)
    while kill -0 "$pid" 2>/dev/null && (( $(date +%s) - start < 35 )); do sleep 0.2; done
    if kill -0 "$pid" 2>/dev/null; then echo "FAIL: still running 35 s after SIGTERM (--shutdown-timeout=30)"; exit 1; fi
    rc=0; wait "$pid" || rc=$?
    [[ $rc == 0 ]] || { echo "FAIL: exit status $rc after SIGTERM"; tail -5 "$work/server.log"; exit 1; }
    echo "ok   SIGTERM: idle server exits 0 within the shutdown timeout"
    ;;
  *)
    echo "usage: $0 k8s-schema|k8s-policy|dockerfile|alerts|queries|docs|stage-runtime | live STRATA_BINARY" >&2
    exit 2
    ;;
esac
