# device_call.sh plan (run 105): spec1 with the draft model's windows on the fused GEMV (the default) and on the
# skinny kernel (STRATA_DRAFT_SKINNY=1), alternated, three rounds each.
$S $B info
for r in 1 2 3; do
  mkdir -p "$OUT/fused_r$r" "$OUT/skinny_r$r"
  SPEC_ROUNDS=1 OUT="$OUT/fused_r$r" $S $B spec1 | sed "s/^/fused /"
  STRATA_DRAFT_SKINNY=1 SPEC_ROUNDS=1 OUT="$OUT/skinny_r$r" $S $B spec1 | sed "s/^/skinny /"
done
