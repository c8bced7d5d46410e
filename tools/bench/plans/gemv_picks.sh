# device_call.sh plan (run 94): the fused LM head's blocks each keep their best output of each row and a one-warp
# kernel picks among them (launch_argmax_parts), instead of one block a row passing over the 128k logits after
# it; STRATA_GEMV_PICKS=0 (the pass over the logits) and 1 alternated on this build. The new bit test, the
# fused GEMV's and the verify-window tests first, decode at 1B / 8B / strata-tiny, the whole suite last.
$S $B info
AB_LOG=ab_picks.log
. tools/bench/plans/lib.sh
TEST_FILTER="the fused GEMV*" $S $B test
TEST_FILTER="the device argmax*" $S $B test
TEST_FILTER="a verify window of T = 1..16 rows*" $S $B test
models_ready 1b 8b
for r in 1 2 3; do
  for v in 0 1; do STRATA_GEMV_PICKS=$v one "1b picks=$v r$r" /tmp/llama-1b --batch 1; done
  for v in 0 1; do STRATA_GEMV_PICKS=$v one "tiny picks=$v r$r" models/strata-tiny --batch 1; done
done
for v in 0 1; do STRATA_GEMV_PICKS=$v one "8b picks=$v" /tmp/llama-8b --batch 1; done
$S $B test
