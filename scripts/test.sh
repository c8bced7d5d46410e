#!/usr/bin/env bash
# One command from a fresh Debian 12 machine to a passing test suite: installs what is missing (Debian
# packages, the npm reference packages), builds everything and runs ctest. Tests labelled `gpu` run only
# where a GPU is visible; elsewhere they are skipped and the script says so.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh test
npm ci --prefix tests/node --no-audit --no-fund --loglevel=error
[ -f tests/deploy/package.json ] && npm ci --prefix tests/deploy --no-audit --no-fund --loglevel=error
scripts/setup-build.sh
# The request-parsing fuzzer (clang, ASan+UBSan) for a bounded time over the committed corpus; a crash fails
# the run. Before ctest, so that ctest's summary is the last thing printed.
echo "test.sh: fuzzing request parsing for 30 s"
fuzz/run_fuzz.sh 30 2>&1 | tail -n 20
exclude=()
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  echo "test.sh: GPU found: running the gpu-labelled tests too"
else
  echo "test.sh: no GPU visible: skipping the tests labelled gpu"
  exclude=(-LE gpu)
fi
ctest --test-dir build --output-on-failure -j"$(nproc)" --timeout 900 "${exclude[@]}"
