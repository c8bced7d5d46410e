# device_call.sh plan, all of the feature draft's GPU work in one call (calls are scarce): the GPU tests of the
# feature path, a shorter training of strata-tiny's feature draft (eagle_draft.py, into
# models/strata-tiny-feature-draft here and $OUT), then `strata bench spec` at batch 1, plain decoding beside
# the feature draft and beside the shipped token draft, ROUNDS (2) times in turn.
$S $B info
. tools/bench/plans/lib.sh
export PYTHONUNBUFFERED=1
TEST_FILTER="*feature*" $S $B test || true
timeout "${EAGLE_TIMEOUT:-330}" python3 tools/train/eagle_draft.py --target models/strata-tiny --out "$OUT/feature" \
  --shipped-draft models/strata-tiny-draft --seconds "${EAGLE_SECONDS:-200}" --self-distill-seconds "${EAGLE_SD:-45}" \
  --corpus-mb "${EAGLE_MB:-100}" > "$OUT/feature_train.log" 2>&1 || echo "eagle_draft.py exited $?"
grep -E "check_levels|acceptance:|Error|error" "$OUT/feature_train.log" | tail -6
[ -f "$OUT/feature/strata-tiny-feature-draft/config.json" ] && cp -r "$OUT/feature/strata-tiny-feature-draft" models/
for r in $(seq "${ROUNDS:-2}"); do
  for d in strata-tiny-feature-draft strata-tiny-draft; do
    [ -d "models/$d" ] && spec_one "${d}_r$r" "models/$d"
  done
done
