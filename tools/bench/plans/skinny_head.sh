# device_call.sh plan (run 97): the folded skinny LM head's 16-output tiles a block (STRATA_SKINNY_HEAD_TILES 1,
# 2, 4; same bits), on strata-tiny's speculation-path windows, alternated, three rounds; then spec1 (the
# default, 4) and the new bit tests.
$S $B info
AB_LOG=ab_head.log
. tools/bench/plans/lib.sh
TEST_FILTER="the embedding's folded*" $S $B test
for r in 1 2 3; do
  for t in 1 2 4; do STRATA_SKINNY_HEAD_TILES=$t one "tiny tiles=$t r$r" models/strata-tiny --batch 1,5,8 --gemm-min-rows 17; done
done
SPEC_ROUNDS=2 $S $B spec1
