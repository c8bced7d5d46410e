# device_call.sh plan (written for run 131, not yet run): the whole-context decode attention (a block per
# (tile, kv head) that merges its splits itself, no combine kernel; same bits) against the split kernel and
# its merge, by the switch STRATA_ATTN_WHOLE (1: on where it fits; 0, the build's default: the split kernel
# everywhere). Its bit test first (it stops the plan when it fails); decode on strata-tiny's speculation and
# plain paths, then at 1B (batch 1 and 16), the order alternated round by round (on an H200, issue 9's
# benchmark before the 1B rounds); `strata bench spec` in ABBA order after a warm-up; then every GPU test.
# Ordered by what a short call should bring back first.
$S $B info
TEST_FILTER="tensor-core attention*" $S $B test | tee "$OUT/test_whole.log"
grep -q "All tests passed" "$OUT/test_cuda.log"
. tools/bench/plans/lib.sh
AB_LOG=ab_whole.log
order() { [ $(($1 % 2)) = 1 ] && echo "0 1" || echo "1 0"; }
for r in 1 2; do
  for v in $(order $r); do
    STRATA_ATTN_WHOLE=$v one "whole=$v tiny-skinny r$r" models/strata-tiny --batch 1,5 --gemm-min-rows 17
    STRATA_ATTN_WHOLE=$v one "whole=$v tiny-fused r$r" models/strata-tiny
  done
done
models_ready 1b
STRATA_ATTN_WHOLE=1 issue9_on_h200 1  # for issue 9's record when the card is an H200
for r in $(seq "${AB_ROUNDS:-2}"); do
  for v in $(order $r); do STRATA_ATTN_WHOLE=$v one "whole=$v 1b r$r" /tmp/llama-1b --batch 1,16; done
done
MODES=off,plain,ngram,draft
ROUNDS=${ROUNDS:-2} spec_ab split STRATA_ATTN_WHOLE=0 whole STRATA_ATTN_WHOLE=1
$S $B test
