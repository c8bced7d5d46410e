#!/usr/bin/env bash
# Runs every deployment check without ctest (the same checks as `ctest -L deploy`).
# Needs: node + `npm ci --prefix tests/deploy`, promtool (Debian package prometheus), kubectl (kustomize).
set -uo pipefail
cd "$(dirname "$0")/../.."
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
passed=0 failed=0 skipped=0
for check in k8s-schema k8s-policy dockerfile alerts queries docs stage-runtime; do
  tests/deploy/deploy_checks.sh "$check" >"$logs/$check.log" 2>&1
  rc=$?
  case $rc in
    0) passed=$((passed + 1)); echo "ok   $check" ;;
    77) skipped=$((skipped + 1)); echo "skip $check: $(grep -m1 SKIP "$logs/$check.log")" ;;
    *) failed=$((failed + 1)); echo "FAIL $check"; sed 's/^/     /' "$logs/$check.log" ;;
  esac
done
# The live check needs a built binary: STRATA_BIN, or build/strata from scripts/setup-build.sh.
tests/deploy/deploy_checks.sh live "${STRATA_BIN:-build/strata}" >"$logs/live.log" 2>&1
case $? in
  0) passed=$((passed + 1)); echo "ok   live" ;;
  77) skipped=$((skipped + 1)); echo "skip live: $(grep -m1 SKIP "$logs/live.log")" ;;
  *) failed=$((failed + 1)); echo "FAIL live"; sed 's/^/     /' "$logs/live.log" ;;
esac
echo "check_deploy: $passed passed, $failed failed, $skipped skipped"
[[ $failed -eq 0 ]]
