# device_call.sh plan: what chains_short.sh leaves out of chains.sh, for a second call on the warm machine
# (8B decode with the GEMV chain off and on, then the whole GPU test suite).
$S $B info
VARIANTS="--gemv-chain off;--gemv-chain on;--gemv-chain on --fused-row-attention on" AB_ROUNDS=2 $S $B ab8b
$S $B test
