# device_call.sh plan (run 110): reads moved ahead of pdl_wait(): the fused GEMV's o / down residual values
# (STRATA_GEMV_RESIDUAL_EARLY), its RoPE epilogue's table entries and KV cells (STRATA_GEMV_ROPE_EARLY), and
# the skinny QKV + RoPE kernel's table rows and KV cells at head_dim 64 (STRATA_SKINNY_ROPE_EARLY); each 0
# is the old place. Alternated against all three off; the split merge in one block a row
# (STRATA_COMBINE_WARPS=32, uncommitted, dropped) once more on top; then spec1 with all off and all on; then
# the GPU suite.
$S $B info
. tools/bench/plans/lib.sh
models_ready 1b 8b
TEST_FILTER="the fused GEMV's RoPE epilogue*" $S $B test
TEST_FILTER="the skinny kernel's QKV*" $S $B test
off() { STRATA_GEMV_RESIDUAL_EARLY=0 STRATA_GEMV_ROPE_EARLY=0 STRATA_SKINNY_ROPE_EARLY=0 "$@"; }
AB_LOG=ab.log
for r in 1 2; do
  for m in 1b 8b; do
    off one "off $m r$r" /tmp/llama-$m
    one "on $m r$r" /tmp/llama-$m
    STRATA_GEMV_ROPE_EARLY=0 one "residual-only $m r$r" /tmp/llama-$m
    STRATA_COMBINE_WARPS=32 one "on+combine32 $m r$r" /tmp/llama-$m
  done
  off one "off tiny-skinny r$r" models/strata-tiny --batch 1,5 --gemm-min-rows 17
  one "on tiny-skinny r$r" models/strata-tiny --batch 1,5 --gemm-min-rows 17
  off one "off tiny-fused r$r" models/strata-tiny
  one "on tiny-fused r$r" models/strata-tiny
done
for r in 1 2; do
  mkdir -p "$OUT/off_r$r" "$OUT/on_r$r"
  off env SPEC_ROUNDS=1 OUT="$OUT/off_r$r" $S $B spec1 | sed "s/^/off /"
  SPEC_ROUNDS=1 OUT="$OUT/on_r$r" $S $B spec1 | sed "s/^/on /"
done
$S $B test
