# device_call.sh plan (run 109): the split merge as one block a row (STRATA_COMBINE_WARPS unset; 4 = the old
# eight blocks of 4 heads) and the fused GEMV's o / down projections reading their residual values before
# pdl_wait() (STRATA_GEMV_RESIDUAL_EARLY unset; 0 = after it), alternated at 1B and 8B, both, neither and each
# alone; then strata-tiny's windows on both paths, and the GPU suite. (The combine switch was measured
# uncommitted here and in run 110 and dropped: within the spread.)
$S $B info
. tools/bench/plans/lib.sh
models_ready 1b 8b
TEST_FILTER="the fused GEMV matches*" $S $B test
AB_LOG=ab.log
for r in 1 2; do
  for m in 1b 8b; do
    STRATA_COMBINE_WARPS=4 STRATA_GEMV_RESIDUAL_EARLY=0 one "old $m r$r" /tmp/llama-$m
    one "new $m r$r" /tmp/llama-$m
    STRATA_COMBINE_WARPS=4 one "residual-only $m r$r" /tmp/llama-$m
    STRATA_GEMV_RESIDUAL_EARLY=0 one "combine-only $m r$r" /tmp/llama-$m
  done
  STRATA_COMBINE_WARPS=4 STRATA_GEMV_RESIDUAL_EARLY=0 one "old tiny-skinny r$r" models/strata-tiny --batch 1,5 --gemm-min-rows 17
  one "new tiny-skinny r$r" models/strata-tiny --batch 1,5 --gemm-min-rows 17
  STRATA_COMBINE_WARPS=4 STRATA_GEMV_RESIDUAL_EARLY=0 one "old tiny-fused r$r" models/strata-tiny
  one "new tiny-fused r$r" models/strata-tiny
done
$S $B test
