# device_call.sh plan: the target's speculation path on the fused GEMV with the tensor-core attention
# (--fused-gemv-rows 16; STRATA_TARGET_FUSED_GEMV_ROWS=16 for strata bench spec) against the skinny kernel with
# the fixed-order attention (the default), alternated: the new path's bit tests first, then strata-tiny's
# windows and spec1, 1B's windows, the whole GPU suite.
$S $B info
TEST_FILTER="a verify window of T = 1..16 rows*" $S $B test
TEST_FILTER="attention: a row's bits alone*" $S $B test
for r in 1 2; do
  for v in "" "--fused-gemv-rows 16"; do
    echo "--- tiny round $r: $v"
    LD_LIBRARY_PATH=$B/lib timeout 120 "$B/strata_bench_cuda" --model models/strata-tiny --prompt 256 --tokens 256 \
      --prefill 16 --batch 1,2,5,8,16 --gemm-min-rows 17 $v 2>&1 | grep -E "^decode" | sed "s/^/[$v] /" | tee -a "$OUT/ab_tiny.log"
  done
  for f in 0 16; do
    echo "--- spec1 round $r: target fused gemv rows $f"
    STRATA_TARGET_FUSED_GEMV_ROWS=$f LD_LIBRARY_PATH=$B/lib timeout 120 "$B/strata" bench spec --model models/strata-tiny \
      --draft-model models/strata-tiny-draft --device cuda --batch 1 --spec off,plain,ngram,draft --spec-k 4 \
      --max-tokens 128 --sampling greedy --prompts tools/bench/spec_prompts.json --json "$OUT/spec1_f${f}_r$r.json" 2>&1 |
      grep -v " info " | sed "s/^/f$f r$r /" | tee -a "$OUT/ab_spec.log"
  done
done
AB_BATCH=1,4,8 VARIANTS="--gemm-min-rows 17;--gemm-min-rows 17 --fused-gemv-rows 16" AB_ROUNDS=1 $S $B ab1b
$S $B test
AB_BATCH=1,4,8 VARIANTS="--gemm-min-rows 17;--gemm-min-rows 17 --fused-gemv-rows 16" AB_ROUNDS=1 $S $B ab8b
