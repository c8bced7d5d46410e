# device_call.sh plan (run 114): issue 9's benchmark on the committed path (decode at batch 1, prefill of 512
# and 4096 tokens), then the fused GEMV's 32 x 4 launches (the o and down projections) as two blocks an SM of
# 16 x 4 (STRATA_GEMV_HALF=1: half-SM blocks can start beside the split merge's) against the committed layout,
# alternated at 1B and 8B; spec1 on the committed path; the fused GEMV's bit tests with the switch on, then the
# GPU suite.
$S $B info
. tools/bench/plans/lib.sh
models_ready 1b 8b
issue9 2
AB_LOG=ab.log
for r in 1 2 3; do
  for m in 1b 8b; do
    one "base $m r$r" /tmp/llama-$m
    STRATA_GEMV_HALF=1 one "half $m r$r" /tmp/llama-$m
  done
done
SPEC_ROUNDS=2 $S $B spec1
STRATA_GEMV_HALF=1 TEST_FILTER="the fused GEMV*" $S $B test
$S $B test
