# device_call.sh plan (run 93, on the H200 run 92 found): issue 9's benchmark (decode at batch 1, prefill of
# 512 and 4096 tokens) for the build before this session's changes (.devcarry/old.txz, 8613fe0) and this one
# (STRATA_O_PREFETCH_KB unset: off, the committed path), alternated at 1B and 8B, then spec1.
$S $B info
mkdir -p .devcarry/old && tar xJf .devcarry/old.txz -C .devcarry/old
for m in 1b 8b; do
  for b in .devcarry/old "$B" .devcarry/old "$B"; do
    echo "--- $m $b" | tee -a "$OUT/bench_h200.log"
    LD_LIBRARY_PATH=$B/lib timeout 200 "$b/strata_bench_cuda" --model /tmp/llama-$m --prompt 256 --tokens 256 \
      --prefill 512,4096 2>&1 | grep -E "^(copy|decode|prefill)" | tee -a "$OUT/bench_h200.log"
  done
done
SPEC_ROUNDS=1 $S $B spec1
