# Sourced by the A/B plans: the random 1B / 8B checkpoints (made once a machine), and one decode run.
# models_ready SHAPE...: /tmp/llama-SHAPE from tools/bench/random_llama_gpu.py unless it is there.
models_ready() {
  local s
  for s in "$@"; do
    [ -f /tmp/llama-$s/config.json ] || python3 tools/bench/random_llama_gpu.py --shape "$s" --out /tmp/llama-$s >/dev/null
  done
}
# one LABEL MODEL FLAGS...: a strata_bench_cuda decode run ($BENCH, default $B's) whose decode lines, tagged
# [LABEL], go to the screen and to $OUT/$AB_LOG.
one() {
  local label=$1 m=$2; shift 2
  LD_LIBRARY_PATH=$B/lib timeout 150 "${BENCH:-$B/strata_bench_cuda}" --model "$m" --prompt 256 --tokens 256 \
    --prefill 16 "$@" 2>&1 | grep -E "^decode" | sed "s#^#[$label] #" | tee -a "$OUT/$AB_LOG"
}
# issue9 ROUNDS: issue 9's benchmark (decode at batch 1, prefill of 512 and 4096 tokens) at 1B and 8B, ROUNDS
# times in turn, to $OUT/bench_issue9.log (the models from models_ready).
issue9() {
  local r m
  for r in $(seq "$1"); do
    for m in 1b 8b; do
      echo "--- issue9 $m r$r" | tee -a "$OUT/bench_issue9.log"
      LD_LIBRARY_PATH=$B/lib timeout 200 "$B/strata_bench_cuda" --model /tmp/llama-$m --prompt 256 --tokens 256 \
        --prefill 512,4096 2>&1 | grep -E "^(copy|gemm|decode|prefill)" | tee -a "$OUT/bench_issue9.log"
    done
  done
}
