# device_call.sh plan of runs 119-120 (docs/PERFORMANCE.md): the cached-block GPU case as 8a2d48e set it up,
# the kernel bench's decode on strata-tiny (its batch builders were shared since its last run), then the
# feature-reading draft experiment (tools/train/eagle_draft.py: does a draft fed the target's hidden state
# accept enough for issue 6's 2x?), then, on an H200, issue 9's benchmark with what time is left.
$S $B info
. tools/bench/plans/lib.sh
TEST_FILTER="CUDA: rows read*" $S $B test || true
AB_LOG=tiny.log one tiny models/strata-tiny --gemm-min-rows 17 --batch 1,5 || true
# The one-layer feature draft (run 120's fc + MLP draft without attention accepted far less). One process: two
# side by side ran out of GPU memory in run 119 (each self-distils 2,048 sequences at once).
timeout "${EAGLE_TIMEOUT:-450}" python3 tools/train/eagle_draft.py --target models/strata-tiny --out "$OUT/eagle_attn" \
  --shipped-draft models/strata-tiny-draft --seconds "${EAGLE_SECONDS:-270}" --self-distill-seconds "${EAGLE_SD:-80}" \
  --corpus-mb "${EAGLE_MB:-160}" > "$OUT/eagle_attn.log" 2>&1 || echo "eagle_draft.py exited $?"
grep -E "check_levels|acceptance|eagle: step [0-9]*000 |Error|error" "$OUT/eagle_attn.log" | tail -14
issue9_on_h200 1
