#!/usr/bin/env bash
# One command from a fresh Debian 12 machine to a running server: installs what is missing, builds strata and
# serves its embedded default model on http://127.0.0.1:8080 (extra arguments go to `strata serve`).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-build.sh --no-tests --target strata
exec build/strata serve "$@"
