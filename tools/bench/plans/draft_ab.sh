# device_call.sh plan (run 116): strata bench spec at batch 1 (greedy, k 4, the spec1 prompts) with the
# shipped draft (models/strata-tiny-draft) and the retrained one (.devcarry/newdraft/strata-tiny-draft),
# alternated, three rounds; every mode's output is checked against `off` by the bench itself. On an H200,
# issue 9's benchmark too.
$S $B info
[ -d .devcarry/newdraft/strata-tiny-draft ] || { mkdir -p .devcarry/newdraft && tar xzf .devcarry/newdraft.tgz -C .devcarry/newdraft; }
for r in 1 2 3; do
  for d in models/strata-tiny-draft .devcarry/newdraft/strata-tiny-draft; do
    tag=$(basename "$(dirname "$d")")
    LD_LIBRARY_PATH=$B/lib timeout 120 "$B/strata" bench spec --model models/strata-tiny --draft-model "$d" \
      --device cuda --batch 1 --spec off,plain,draft --spec-k 4 --max-tokens 128 --sampling greedy \
      --prompts tools/bench/spec_prompts.json --json "$OUT/draft_${tag}_r$r.json" 2>&1 | grep -v " info " |
      sed "s#^#[$tag r$r] #" | tee -a "$OUT/draft_ab.log"
  done
done
# On an H200 (issue 9's card), issue 9's benchmark on the committed path too.
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  . tools/bench/plans/lib.sh
  models_ready 1b 8b
  issue9 2
fi
