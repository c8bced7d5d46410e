# device_call.sh plan: the L2 prefetch of each layer's o and gate/up weights during the RoPE step and attention
# (--l2-prefetch-mb; STRATA_L2_PREFETCH_MB for the tests) against none, alternated: 1B and 8B batch-1 decode,
# the GPU tests with it on, then strata-tiny (it must change no bits: picks_fnv must match across variants).
$S $B info
ab() {  # model, MB values, rounds
  for round in $(seq "$3"); do
    for mb in $2; do
      echo "--- $1 round $round: --l2-prefetch-mb $mb"
      LD_LIBRARY_PATH=$B/lib timeout 120 $B/strata_bench_cuda --model "$1" --prompt 256 --tokens 256 --prefill 16 \
        --l2-prefetch-mb "$mb" ${AB_BATCH:+--batch $AB_BATCH} 2>&1 | grep -E "^model=|decode" | tee -a "$OUT/ab_l2.log"
    done
  done
}
python3 tools/bench/random_llama_gpu.py --shape 1b --out /tmp/llama-1b
ab /tmp/llama-1b "0 16 32" 2
python3 tools/bench/random_llama_gpu.py --shape 8b --out /tmp/llama-8b
ab /tmp/llama-8b "0 16 32" 1
STRATA_L2_PREFETCH_MB=16 $S $B test
ab models/strata-tiny "0 4" 1
