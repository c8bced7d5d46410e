# device_call.sh plan: the target's speculation path with the tensor-core attention (the default now) against
# the fixed-order kernel (STRATA_TARGET_ATTENTION_TC=0), alternated, on bench spec with its warm-up run twice
# (the timed pass's prompt-tail windows seen before timing); 1B and 8B decode and prefill; the GPU suite;
# spec-cuda (batch 1 and 8).
$S $B info
for r in 1 2; do
  for tc in 0 1; do
    echo "--- spec1 round $r: target attention tc $tc"
    STRATA_TARGET_ATTENTION_TC=$tc LD_LIBRARY_PATH=$B/lib timeout 120 "$B/strata" bench spec --model models/strata-tiny \
      --draft-model models/strata-tiny-draft --device cuda --batch 1 --spec off,plain,ngram,draft --spec-k 4 \
      --max-tokens 128 --sampling greedy --prompts tools/bench/spec_prompts.json --json "$OUT/spec1_tc${tc}_r$r.json" 2>&1 |
      grep -v " info " | sed "s/^/tc$tc r$r /" | tee -a "$OUT/ab_spec.log"
  done
done
$S $B bench1b bench8b test spec-cuda
