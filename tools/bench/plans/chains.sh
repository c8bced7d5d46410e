# device_call.sh plan: the first GPU run of the GEMV and skinny chains (issue 9's one-row layer tail as one
# kernel, issue 6's verify windows the same way), in order of what matters: their bit tests first (a wrong or
# hanging chain stops the call there), then 1B decode with and without them, speculation with them, the
# strata-tiny windows, 8B decode, and the whole GPU test suite last.
$S $B info chaintest
VARIANTS="--gemv-chain off;--gemv-chain on;--gemv-chain on --fused-row-attention on" AB_ROUNDS=2 $S $B ab1b
echo "--- spec1, chains off"
SPEC_ROUNDS=1 $S $B spec1
echo "--- spec1, chains on"
mkdir -p "$OUT/chains"
OUT=$OUT/chains STRATA_GEMV_CHAIN=1 STRATA_SKINNY_CHAIN=1 SPEC_ROUNDS=1 $S $B spec1
echo "--- strata-tiny windows, skinny chain off and on"
VARIANTS="--skinny-chain off;--skinny-chain on" AB_ROUNDS=2 AB_BATCH=1,5,8,16 BENCH_EXTRA="--gemm-min-rows 17" $S $B abtiny
VARIANTS="--gemv-chain off;--gemv-chain on" AB_ROUNDS=2 $S $B ab8b
$S $B test
