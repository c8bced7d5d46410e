#!/usr/bin/env bash
# Runs every offline deployment check without ctest (the same checks as `ctest -L deploy`).
# Needs: node + `npm ci --prefix tests/deploy`, promtool (Debian package prometheus), kubectl (kustomize).
set -uo pipefail
cd "$(dirname "$0")/../.."
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
passed=0 failed=0 skipped=0
for check in k8s-schema k8s-policy dockerfile alerts queries stage-runtime; do
  tests/deploy/deploy_checks.sh "$check" >"$logs/$check.log" 2>&1
  rc=$?
  case $rc in
    0) passed=$((passed + 1)); echo "ok   $check" ;;
    77) skipped=$((skipped + 1)); echo "skip $check: $(grep -m1 SKIP "$logs/$check.log")" ;;
    *) failed=$((failed + 1)); echo "FAIL $check"; sed 's/^/     /' "$logs/$check.log" ;;
  esac
done
echo "check_deploy: $passed passed, $failed failed, $skipped skipped"
[[ $failed -eq 0 ]]
