# device_call.sh plan (run 104): the committed skinny path (weights asked for before pdl_wait() again): the
# whole GPU suite; the draft model's windows on the fused GEMV and on the skinny kernel; spec1 with the draft on
# each (STRATA_DRAFT_SKINNY=1).
$S $B info
. tools/bench/plans/lib.sh
AB_LOG=ab_final.log
$S $B test
for r in 1 2; do
  one "draft fused r$r" models/strata-tiny-draft --batch 1,2,5
  one "draft skinny r$r" models/strata-tiny-draft --batch 1,2,5 --gemm-min-rows 17
  one "tiny skinny r$r" models/strata-tiny --batch 1,5 --gemm-min-rows 17
  one "tiny fused r$r" models/strata-tiny --batch 1
done
SPEC_ROUNDS=2 $S $B spec1
mkdir -p "$OUT/spec_skinny_draft"
STRATA_DRAFT_SKINNY=1 SPEC_ROUNDS=1 OUT="$OUT/spec_skinny_draft" $S $B spec1
