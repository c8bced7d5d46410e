# device_call.sh plan (run 131; the code it measures is at 5470d80, removed after it): who merges the
# tensor-core attention's splits, by STRATA_ATTN_MERGE: 0 the split merge kernel after the split kernel
# (the build's default); 1 the whole-context kernel (a block per (tile, kv head) computes every split and
# merges them; short contexts); 2 the split kernel's blocks as a cluster that merges through distributed
# shared memory (up to 8 splits). Same bits every way (run 112's last-block merge, a different way to the
# same end, was slower: its fences, count and serial merge). The bit tests first (they stop the plan when
# they fail); decode on strata-tiny's speculation and plain paths; `strata bench spec` (the three in a
# rotated order after a warm-up); on an H200 issue 9's benchmark; 1B decode at batch 1 and 4, 8B at batch
# 1; then every GPU test. Ordered by what a short call should bring back first.
$S $B info
TEST_FILTER="tensor-core attention*" $S $B test | tee "$OUT/test_merge.log"
grep -q "All tests passed" "$OUT/test_cuda.log"
. tools/bench/plans/lib.sh
AB_LOG=ab_merge.log
orders=("0 1 2" "2 1 0" "1 2 0" "0 2 1")
for r in $(seq "${AB_ROUNDS:-4}"); do
  for v in ${orders[$(((r - 1) % 4))]}; do
    STRATA_ATTN_MERGE=$v one "merge=$v tiny-skinny r$r" models/strata-tiny --batch 1,5 --gemm-min-rows 17
    STRATA_ATTN_MERGE=$v one "merge=$v tiny-fused r$r" models/strata-tiny
  done
done
MODES=off,plain,ngram,draft
ROUNDS=${ROUNDS:-4} spec_rotate "merge%s" STRATA_ATTN_MERGE 0 1 2
STRATA_ATTN_MERGE=2 issue9_on_h200 1  # for issue 9's record when the card is an H200
models_ready 1b 8b
for r in $(seq "${AB_ROUNDS:-4}"); do
  for v in ${orders[$(((r - 1) % 4))]}; do STRATA_ATTN_MERGE=$v one "merge=$v 1b r$r" /tmp/llama-1b --batch 1,4; done
done
for r in 1 2; do
  for v in ${orders[$((r - 1))]}; do STRATA_ATTN_MERGE=$v one "merge=$v 8b r$r" /tmp/llama-8b; done
done
$S $B test
