# device_call.sh plan: the feature draft's folded step (forward.cpp: fc split into fc_embed and fc_feature,
# the first norm in that matmul's residual epilogue, the features from the folded LM head) in one call.
# GPU tests of the feature path and of the new matvec epilogue; `strata bench spec` at batch 1 with run 121's
# feature draft (.devcarry/feature121) beside the shipped token draft, ROUNDS (2) times in turn; then
# eagle_draft.py going on from run 121's draft for EAGLE_SECONDS (150) and the bench again with the result;
# then every GPU test, and issue 9's benchmark when the card is an H200.
$S $B info
. tools/bench/plans/lib.sh
export PYTHONUNBUFFERED=1
TEST_FILTER="*feature*" $S $B test || true
TEST_FILTER="*token table*" $S $B test || true
[ -d .devcarry/feature121/strata-tiny-feature-draft ] && cp -r .devcarry/feature121/strata-tiny-feature-draft models/
spec() {  # spec TAG DRAFT...: each draft beside plain decoding, ROUNDS times in turn
  local tag=$1 r d
  shift
  for r in $(seq "${ROUNDS:-2}"); do
    for d in "$@"; do
      [ -d "models/$d" ] && spec_one "${tag}_${d}_r$r" "models/$d"
    done
  done
}
spec fold strata-tiny-feature-draft strata-tiny-draft
if [ -d models/strata-tiny-feature-draft ] && [ "${EAGLE_SECONDS:-150}" != 0 ]; then
  timeout "${EAGLE_TIMEOUT:-280}" python3 tools/train/eagle_draft.py --target models/strata-tiny --out "$OUT/feature" \
    --shipped-draft models/strata-tiny-draft --init models/strata-tiny-feature-draft --lr "${EAGLE_LR:-5e-4}" \
    --seconds "${EAGLE_SECONDS:-150}" --self-distill-seconds "${EAGLE_SD:-40}" --corpus-mb "${EAGLE_MB:-80}" \
    > "$OUT/feature_train.log" 2>&1 || echo "eagle_draft.py exited $?"
  grep -E "starting from|check_levels|acceptance:|Error|error" "$OUT/feature_train.log" | tail -6
  if [ -f "$OUT/feature/strata-tiny-feature-draft/config.json" ]; then
    cp -r "$OUT/feature/strata-tiny-feature-draft" models/strata-tiny-feature-draft-2
    spec more strata-tiny-feature-draft-2
  fi
fi
$S $B test || true
issue9_on_h200 1
