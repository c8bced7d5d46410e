# device_call.sh plan: train the feature draft that ships with strata-tiny (tools/train/eagle_draft.py, the
# runs 119-120 recipe for longer) and bring back models' directory, log and report. Needs no binaries and no
# .devcarry: models/strata-tiny and models/strata-tiny-draft travel with the working tree.
timeout "${EAGLE_TIMEOUT:-520}" python3 tools/train/eagle_draft.py --target models/strata-tiny --out "$OUT/feature" \
  --shipped-draft models/strata-tiny-draft --seconds "${EAGLE_SECONDS:-320}" --self-distill-seconds "${EAGLE_SD:-70}" \
  --corpus-mb "${EAGLE_MB:-120}" > "$OUT/feature_train.log" 2>&1 || echo "eagle_draft.py exited $?"
grep -E "check_levels|acceptance|eagle: step [0-9]*000 |Error|error|done" "$OUT/feature_train.log" | tail -14
