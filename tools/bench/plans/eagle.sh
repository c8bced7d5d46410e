# device_call.sh plan of run 119 (docs/PERFORMANCE.md): the cached-block GPU case as 8a2d48e set it up (not
# yet run), the kernel bench's decode on strata-tiny (its batch builders were shared since its last run), then
# the feature-reading draft experiment (tools/train/eagle_draft.py: does a draft fed the target's hidden state
# accept enough for issue 6's 2x?), then, on an H200, issue 9's benchmark with what time is left.
$S $B info
. tools/bench/plans/lib.sh
TEST_FILTER="CUDA: rows read*" $S $B test || true
AB_LOG=tiny.log one tiny models/strata-tiny --gemm-min-rows 17 --batch 1,5 || true
# Two drafts side by side (each a small model that leaves most of the GPU idle): one decoder layer, and fc plus
# the MLP alone (no attention: about half a step's kernels).
for v in attn mlp; do
  flag=; [ $v = mlp ] && flag=--no-attention
  timeout "${EAGLE_TIMEOUT:-450}" python3 tools/train/eagle_draft.py --target models/strata-tiny --out "$OUT/eagle_$v" \
    --shipped-draft models/strata-tiny-draft --seconds "${EAGLE_SECONDS:-270}" --self-distill-seconds "${EAGLE_SD:-80}" \
    --corpus-mb "${EAGLE_MB:-160}" $flag > "$OUT/eagle_$v.log" 2>&1 &
done
wait
for v in attn mlp; do
  echo "--- eagle $v"
  grep -E "check_levels|acceptance|eagle: step [0-9]*000 |Error|error" "$OUT/eagle_$v.log" | tail -14
done
issue9_on_h200 1
