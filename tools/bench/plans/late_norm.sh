# device_call.sh plan: the fused GEMV's input norm applied late (STRATA_GEMV_LATE_NORM=1: rows staged as
# norm * x, sums scaled by 1 / rms at the end) against the default, alternated: 1B and 8B batch-1 decode,
# then the GPU tests with it on.
$S $B info
ab() {  # model, rounds
  for round in $(seq "$2"); do
    for v in 0 1; do
      echo "--- $1 round $round: STRATA_GEMV_LATE_NORM=$v"
      STRATA_GEMV_LATE_NORM=$v LD_LIBRARY_PATH=$B/lib timeout 120 $B/strata_bench_cuda --model "$1" --prompt 256 \
        --tokens 256 --prefill 16 2>&1 | grep -E "^model=|decode" | tee -a "$OUT/ab_late_norm.log"
    done
  done
}
python3 tools/bench/random_llama_gpu.py --shape 1b --out /tmp/llama-1b
ab /tmp/llama-1b 2
python3 tools/bench/random_llama_gpu.py --shape 8b --out /tmp/llama-8b
ab /tmp/llama-8b 1
STRATA_GEMV_LATE_NORM=1 $S $B test
