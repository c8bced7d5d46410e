# device_call.sh plan: chains.sh cut to fit a call of about 300 s when device time runs short (the chains' bit
# tests, one round of 1B decode with and without them, spec1 with and without them, strata-tiny's windows).
$S $B info chaintest
VARIANTS="--gemv-chain off;--gemv-chain on;--gemv-chain on --fused-row-attention on" AB_ROUNDS=1 $S $B ab1b
echo "--- spec1, chains off"
SPEC_ROUNDS=1 $S $B spec1
echo "--- spec1, chains on"
mkdir -p "$OUT/chains"
OUT=$OUT/chains STRATA_GEMV_CHAIN=1 STRATA_SKINNY_CHAIN=1 SPEC_ROUNDS=1 $S $B spec1
VARIANTS="--skinny-chain off;--skinny-chain on" AB_ROUNDS=1 AB_BATCH=1,5,8 BENCH_EXTRA="--gemm-min-rows 17" $S $B abtiny
