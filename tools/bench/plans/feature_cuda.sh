# device_call.sh plan: the feature draft on the GPU. The fixture from transformers (make_feature_draft_fixture.py,
# into the tree and $OUT), the GPU tests of the feature path and of speculation, then `strata bench spec` at
# batch 1 with the shipped token draft and with the feature draft (models/strata-tiny-feature-draft), each
# beside plain decoding in the same run, twice in turn.
$S $B info
. tools/bench/plans/lib.sh
PYTHONUNBUFFERED=1 timeout 120 python3 tools/fixtures/make_feature_draft_fixture.py --target tests/data/models/qwen3 \
  --out "$OUT/qwen3_feature_draft" > "$OUT/fixture.log" 2>&1 || echo "fixture script exited $?"
tail -3 "$OUT/fixture.log"
[ -f "$OUT/qwen3_feature_draft/golden.json" ] && cp "$OUT"/qwen3_feature_draft/* tests/data/models/qwen3_feature_draft/
TEST_FILTER="*feature*" $S $B test || true
TEST_FILTER="CUDA: strata-tiny's greedy output with its shipped*" $S $B test || true
for r in 1 2; do
  for d in strata-tiny-draft strata-tiny-feature-draft; do
    LD_LIBRARY_PATH=$B/lib timeout 150 "$B/strata" bench spec --model models/strata-tiny --draft-model "models/$d" \
      --device cuda --batch 1 --spec off,draft --spec-k 4 --max-tokens 128 --sampling greedy \
      --prompts tools/bench/spec_prompts.json --json "$OUT/spec_${d}_r$r.json" 2>&1 | grep -v " info " |
      sed "s#^#[$d r$r] #" | tee -a "$OUT/spec.log"
  done
done
