# device_call.sh plan (run 113): the fused GEMV asking for up to 3 more weight steps a warp into shared memory
# before pdl_wait() (default), 1, or none beyond its two register buffers (STRATA_GEMV_PREFETCH=0, the build
# before), alternated at 1B, 8B and strata-tiny; the GEMV tests first, the whole suite last. Slower at 1B
# and 8B; the code is at the commit "the fused GEMV asks for up to 3 more weight steps", reverted.
$S $B info
. tools/bench/plans/lib.sh
models_ready 1b 8b
TEST_FILTER="the fused GEMV*" $S $B test
AB_LOG=ab.log
for r in 1 2; do
  for m in 1b 8b; do
    STRATA_GEMV_PREFETCH=0 one "pf0 $m r$r" /tmp/llama-$m
    one "pf3 $m r$r" /tmp/llama-$m
    STRATA_GEMV_PREFETCH=1 one "pf1 $m r$r" /tmp/llama-$m
  done
  STRATA_GEMV_PREFETCH=0 one "pf0 tiny r$r" models/strata-tiny
  one "pf3 tiny r$r" models/strata-tiny
done
$S $B test
