# device_call.sh plan (run 108): run 105 again with five rounds (its three were inside the spread): spec1 with
# the draft model's windows on the fused GEMV (default) and on the skinny kernel (STRATA_DRAFT_SKINNY=1),
# alternated.
$S $B info
for r in 1 2 3 4 5; do
  mkdir -p "$OUT/fused_r$r" "$OUT/skinny_r$r"
  SPEC_ROUNDS=1 OUT="$OUT/fused_r$r" $S $B spec1 | sed "s/^/fused /"
  STRATA_DRAFT_SKINNY=1 SPEC_ROUNDS=1 OUT="$OUT/skinny_r$r" $S $B spec1 | sed "s/^/skinny /"
done
