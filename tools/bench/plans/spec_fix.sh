# device_call.sh plan, written for run 118 and not yet run (the device time ran out). After c68f7d6 (a slot
# keeps its own blocks when another sequence cached the same tokens): the GPU cases of speculation (the
# engine's, random verify windows against single rows, the cached-block case) and of the autotuned GEMM; then
# the bench that found the mismatch (run 115's retrained draft, in .devcarry/newdraft.tgz) and spec1's modes
# with the shipped draft, SPEC_ROUNDS times (default 2); then every GPU case; on an H200, issue 9's benchmark
# too.
$S $B info
TEST_FILTER="CUDA: *,*autotuned*" $S $B test || true
[ -d .devcarry/newdraft/strata-tiny-draft ] || { mkdir -p .devcarry/newdraft && tar xzf .devcarry/newdraft.tgz -C .devcarry/newdraft; }
for r in $(seq "${SPEC_ROUNDS:-2}"); do
  for d in .devcarry/newdraft/strata-tiny-draft models/strata-tiny-draft; do
    tag=$(basename "$(dirname "$d")")
    LD_LIBRARY_PATH=$B/lib timeout 120 "$B/strata" bench spec --model models/strata-tiny --draft-model "$d" \
      --device cuda --batch 1 --spec off,plain,ngram,draft --spec-k 4 --max-tokens 128 --sampling greedy \
      --prompts tools/bench/spec_prompts.json --json "$OUT/spec_${tag}_r$r.json" 2>&1 | grep -v " info " |
      sed "s#^#[$tag r$r] #" | tee -a "$OUT/spec_fix.log"
  done
done
TEST_FILTER="" $S $B test || true
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  . tools/bench/plans/lib.sh
  models_ready 1b 8b
  issue9 2
fi
