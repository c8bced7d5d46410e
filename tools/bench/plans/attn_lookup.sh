# device_call.sh plan: the fixed-order attention's K/V row lookups before pdl_wait() (this build) against
# the build before it (.devcarry/old.txz, carried by hand): strata-tiny's
# speculation-path windows (--gemm-min-rows 17) at 1, 5 and 8 rows and spec1, alternated, then the whole
# GPU suite.
$S $B info
tar xJf .devcarry/old.txz -C .devcarry && old=.devcarry/old
for r in 1 2; do
  for b in "$old" "$B"; do
    echo "--- $b round $r"
    LD_LIBRARY_PATH=$B/lib timeout 120 "$b/strata_bench_cuda" --model models/strata-tiny --prompt 256 --tokens 256 \
      --prefill 16 --batch 1,5,8 --gemm-min-rows 17 2>&1 | grep -E "^decode" | tee -a "$OUT/ab_attn.log"
    LD_LIBRARY_PATH=$B/lib timeout 120 "$b/strata" bench spec --model models/strata-tiny \
      --draft-model models/strata-tiny-draft --device cuda --batch 1 --spec off,plain,draft --spec-k 4 \
      --max-tokens 128 --sampling greedy --prompts tools/bench/spec_prompts.json 2>&1 | grep -v " info " |
      tee -a "$OUT/ab_attn_spec.log"
  done
done
$S $B test
