# device_call.sh plan (run 132): strata-tiny drafts trained side by side (retrain_draft.py, half of each batch
# from the target's own continuations, 30 % of those prompted for a copy of a corpus window): l2, two layers at
# 384 from random weights (an induction step needs two layers: one to find where the current token occurred
# before, one to read what followed); g2, the shipped draft grown by one layer that starts as no change
# (--init --grow-layers 1); l1, one layer at 384 from random weights (the shipped shape, same data). Each
# reports its acceptance on the bench's prompt classes beside the shipped draft's; then `strata bench spec`
# with the drafts, rotated. The new drafts' archives come back in $BACK.
#   DRAFT_SECONDS (270) / SD_SECONDS (75): each run's training / self-distillation budget; TRAIN_TAGS ("g2";
#   run 140's "l2 g2 l1" side by side ran out of an H100's 80 GB) which drafts to train; ROUNDS (2) of the bench.
$S $B info
. tools/bench/plans/lib.sh
train() {
  TAG=$1 RETRAIN_TIMEOUT=${RETRAIN_TIMEOUT:-480} bash tools/train/device_retrain_draft.sh \
    --draft-seconds "${DRAFT_SECONDS:-270}" --self-distill-seconds "${SD_SECONDS:-75}" --self-distill-frac 0.5 \
    --self-distill-copy-frac 0.3 --class-prompts tools/bench/spec_prompts.json --compare-draft models/strata-tiny-draft \
    "${@:2}" > "$OUT/train_$1.log" 2>&1
}
tags=${TRAIN_TAGS:-g2}   # lN: N layers from random weights; gN: the shipped draft grown to N layers
for t in $tags; do
  case $t in
    l*) train "$t" --draft-layers "${t#l}" & ;;
    g*) train "$t" --init models/strata-tiny-draft --grow-layers $((${t#g} - 1)) --draft-lr 1e-3 --warmup 30 & ;;
  esac
  sleep 20   # the corpora are built one after the other, not on the same cores at once
done
wait
for t in $tags; do
  cat "$OUT/train_$t.log"
  grep -h "acceptance" "$OUT/$t/retrain.log" | tail -2 | cut -c1-900
  for f in "$OUT/$t"/draft.tgz.part-*; do
    if [ -f "$f" ]; then mv "$f" "$BACK/${t}_$(basename "$f")"; fi   # not in out.tgz: 16 MiB a file comes back
  done
done
drafts=(models/strata-tiny-draft)
for t in $tags; do
  d=/tmp/strata-draft-$t/strata-tiny-draft
  [ -f "$d/config.json" ] || { echo "draft_copy.sh: no $t draft came out of training"; exit 1; }
  drafts+=("$d")
done
label() { case $1 in models/*) echo shipped ;; *) basename "$(dirname "$1")" | sed 's/strata-draft-//' ;; esac; }
[ "${ROUNDS:-2}" -gt 0 ] || exit 0
spec_one shipped_warm models/strata-tiny-draft off,plain,ngram,draft
for r in $(seq "${ROUNDS:-2}"); do
  order=("${drafts[@]}")
  [ $((r % 2)) = 0 ] && order=($(printf '%s\n' "${drafts[@]}" | tac))
  for d in "${order[@]}"; do spec_one "$(label "$d")_r$r" "$d" off,plain,draft; done
done
