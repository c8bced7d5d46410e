# device_call.sh plan (run 89): the committed build (the RoPE step in the QKV GEMV's epilogue, the attention's
# early K/V copies) against the build before this session's changes (.devcarry/old.txz: strata_bench_cuda and
# strata at 8613fe0): the whole GPU suite first, then the benchmark (decode at batch 1, prefill of 512
# and 4096 tokens) alternated old / new at 1B and 8B (ROUNDS rounds, default 2), then spec1 on the new build.
$S $B info
$S $B test
mkdir -p .devcarry/old && tar xJf .devcarry/old.txz -C .devcarry/old
[ -f /tmp/llama-1b/config.json ] || python3 tools/bench/random_llama_gpu.py --shape 1b --out /tmp/llama-1b >/dev/null
[ -f /tmp/llama-8b/config.json ] || python3 tools/bench/random_llama_gpu.py --shape 8b --out /tmp/llama-8b >/dev/null
for r in $(seq "${ROUNDS:-2}"); do
  for m in 1b 8b; do
    for b in .devcarry/old "$B"; do
      echo "--- $m r$r $b" | tee -a "$OUT/bench_final.log"
      LD_LIBRARY_PATH=$B/lib timeout 200 "$b/strata_bench_cuda" --model /tmp/llama-$m --prompt 256 --tokens 256 \
        --prefill 512,4096 2>&1 | grep -E "^(copy|model|decode|prefill)" | tee -a "$OUT/bench_final.log"
    done
  done
done
SPEC_ROUNDS=2 $S $B spec1
