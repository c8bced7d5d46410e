#!/usr/bin/env bash
# Installs the Debian 12 packages Strata builds and tests with, only when something is missing.
#   scripts/deps.sh build   what building strata needs
#   scripts/deps.sh test    that plus what the test suite needs (Node.js/npm, promtool, clang for the fuzzer)
set -euo pipefail
want=(cmake ninja-build g++ pkg-config libcpp-httplib-dev nlohmann-json3-dev libspdlog-dev prometheus-cpp-dev
      catch2 libcli11-dev libyaml-cpp-dev libpcre2-dev libssl-dev zlib1g-dev)
if [ "${1:-build}" = test ]; then
  want+=(nodejs npm prometheus clang libclang-rt-14-dev python3 curl)
fi
missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# nodejs/npm may come from outside Debian on some machines: a working `node` and `npm` count as present.
if command -v node >/dev/null && command -v npm >/dev/null; then
  missing=("${missing[@]/nodejs}"); missing=("${missing[@]/npm}")
fi
read -r -a missing <<< "${missing[*]}"
if [ "${#missing[@]}" -gt 0 ]; then
  echo "deps: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
