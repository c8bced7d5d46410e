# device_call.sh plan: strata-tiny's speculation path three ways, alternated: the skinny kernel with the
# fixed-order attention (--attention-tc off), the skinny kernel with the tensor-core attention, the fused GEMV
# with it (--fused-gemv-rows 16); spec1 the same through STRATA_TARGET_ATTENTION_TC / _FUSED_GEMV_ROWS; the
# fused GEMV's kernels at 1 and 8 rows under Nsight Compute (isolated durations); the GPU suite.
$S $B info
TEST_FILTER="a verify window of T = 1..16 rows*" $S $B test
for r in 1 2; do
  for v in "--attention-tc off" "" "--fused-gemv-rows 16"; do
    echo "--- tiny round $r: $v"
    LD_LIBRARY_PATH=$B/lib timeout 120 "$B/strata_bench_cuda" --model models/strata-tiny --prompt 256 --tokens 256 \
      --prefill 16 --batch 1,2,5,8 --gemm-min-rows 17 $v 2>&1 | grep -E "^decode" | sed "s/^/[$v] /" | tee -a "$OUT/ab_tiny.log"
  done
  for cfg in "0 0" "0 1" "16 1"; do
    set -- $cfg
    echo "--- spec1 round $r: target fused gemv rows $1, attention tc $2"
    STRATA_TARGET_FUSED_GEMV_ROWS=$1 STRATA_TARGET_ATTENTION_TC=$2 LD_LIBRARY_PATH=$B/lib timeout 120 "$B/strata" bench spec \
      --model models/strata-tiny --draft-model models/strata-tiny-draft --device cuda --batch 1 --spec off,plain,ngram,draft \
      --spec-k 4 --max-tokens 128 --sampling greedy --prompts tools/bench/spec_prompts.json \
      --json "$OUT/spec1_f$1_tc$2_r$r.json" 2>&1 | grep -v " info " | sed "s/^/f$1 tc$2 r$r /" | tee -a "$OUT/ab_spec.log"
  done
done
for br in 0 8; do
  STRATA_GEMV_BLOCK_ROWS=$br LD_LIBRARY_PATH=$B/lib timeout 150 ncu --profile-from-start off --clock-control none \
    --metrics gpu__time_duration.sum --csv --print-units base "$B/strata_bench_cuda" --model models/strata-tiny \
    --prompt 256 --tokens 8 --prefill 16 --batch 1,8 --profile --gemm-min-rows 17 --fused-gemv-rows 16 \
    >"$OUT/ncu_tiny_br$br.csv" 2>"$OUT/ncu_tiny_br$br.err"
  python3 tools/bench/ncu_summary.py "$OUT/ncu_tiny_br$br.csv" --top 12 | tee "$OUT/ncu_tiny_br$br.txt"
done
$S $B test
