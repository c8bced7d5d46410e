# device_call.sh plan (run 96): the skinny kernel's folded windows (the speculation path's target windows) with
# the QKV projection carrying the RoPE step and the embedding / LM head folding the first and final norms,
# against the separate launches (STRATA_SKINNY_ROPE=0 STRATA_SKINNY_EDGE_FOLD=0) on this build. The new bit
# tests and the verify-window tests first; strata-tiny's speculation-path windows at 1 / 2 / 5 / 8 rows; spec1
# with the draft on the fused GEMV and on the skinny kernel (STRATA_DRAFT_SKINNY=1); the whole suite last.
$S $B info
AB_LOG=ab_skinny.log
. tools/bench/plans/lib.sh
TEST_FILTER="the skinny kernel's QKV*" $S $B test
TEST_FILTER="the embedding's folded*" $S $B test
TEST_FILTER="a verify window of T = 1..16 rows*" $S $B test
for r in 1 2; do
  STRATA_SKINNY_ROPE=0 STRATA_SKINNY_EDGE_FOLD=0 one "tiny old r$r" models/strata-tiny --batch 1,2,5,8 --gemm-min-rows 17
  one "tiny new r$r" models/strata-tiny --batch 1,2,5,8 --gemm-min-rows 17
  one "draft fused r$r" models/strata-tiny-draft --batch 1,2,5
  one "draft skinny r$r" models/strata-tiny-draft --batch 1,2,5 --gemm-min-rows 17
done
one "tiny plain" models/strata-tiny --batch 1
SPEC_ROUNDS=1 $S $B spec1
mkdir -p "$OUT/spec_skinny_draft" "$OUT/spec_old"
STRATA_DRAFT_SKINNY=1 SPEC_ROUNDS=1 OUT="$OUT/spec_skinny_draft" $S $B spec1
STRATA_SKINNY_ROPE=0 STRATA_SKINNY_EDGE_FOLD=0 SPEC_ROUNDS=1 OUT="$OUT/spec_old" $S $B spec1
$S $B test
