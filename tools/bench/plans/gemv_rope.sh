# device_call.sh plan (run 88): the fused GEMV's QKV projection doing the RoPE step in its epilogue (pairs of
# rows (i, i + head_dim / 2) a task), that build: STRATA_GEMV_ROPE=1 (where its gemv_rope_fits said the pairs
# keep as many SMs streaming: 1B, not 8B or strata-tiny), 0 (the separate step) and 2 (the epilogue wherever it
# applies; what the committed build does by default, where the switch is 0 or 1) alternated on one binary.
# Its bit test and the verify-window test first, decode at 1B / strata-tiny / 8B, the 1B timeline, spec1 with
# the default and with 2, the whole suite last.
$S $B info
AB_LOG=ab_rope.log
. tools/bench/plans/lib.sh
TEST_FILTER="the fused GEMV*" $S $B test
TEST_FILTER="a verify window of T = 1..16 rows*" $S $B test
models_ready 1b 8b
for r in 1 2 3; do
  for v in 0 1; do STRATA_GEMV_ROPE=$v one "1b rope=$v r$r" /tmp/llama-1b --batch 1; done
  for v in 0 2; do STRATA_GEMV_ROPE=$v one "tiny rope=$v r$r" models/strata-tiny --batch 1; done
done
for v in 0 2; do STRATA_GEMV_ROPE=$v one "8b rope=$v" /tmp/llama-8b --batch 1; done
$S $B trace1b
SPEC_ROUNDS=1 $S $B spec1
mkdir -p "$OUT/rope2" && STRATA_GEMV_ROPE=2 OUT=$OUT/rope2 SPEC_ROUNDS=1 $S $B spec1
$S $B test
