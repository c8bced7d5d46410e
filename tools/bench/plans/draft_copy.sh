# device_call.sh plan (run 132): two strata-tiny drafts trained side by side (retrain_draft.py, from random
# weights, half of each batch from the target's own continuations, 30 % of those prompted for a copy of a
# corpus window): two layers at 384 (an induction step needs two layers: one to find where the current token
# occurred before, one to read what followed) and one layer at 384 (the shipped shape, same data). Each
# reports its acceptance on the bench's prompt classes beside the shipped draft's; then `strata bench spec`
# with the three drafts, rotated, two rounds. The new drafts' archives come back in $BACK.
#   DRAFT_SECONDS (270) / SD_SECONDS (75): each run's training / self-distillation budget.
$S $B info
. tools/bench/plans/lib.sh
train() {
  TAG=$1 RETRAIN_TIMEOUT=${RETRAIN_TIMEOUT:-480} bash tools/train/device_retrain_draft.sh \
    --draft-seconds "${DRAFT_SECONDS:-270}" --self-distill-seconds "${SD_SECONDS:-75}" --self-distill-frac 0.5 \
    --self-distill-copy-frac 0.3 --class-prompts tools/bench/spec_prompts.json --compare-draft models/strata-tiny-draft \
    "${@:2}" > "$OUT/train_$1.log" 2>&1
}
train l2 --draft-layers 2 &
sleep 20   # the corpora are built one after the other, not on the same cores at once
train l1 --draft-layers 1 &
wait
for t in l1 l2; do
  cat "$OUT/train_$t.log"
  grep -h "acceptance" "$OUT/$t/retrain.log" | tail -2 | cut -c1-900
  for f in "$OUT/$t"/draft.tgz.part-*; do
    [ -f "$f" ] && mv "$f" "$BACK/${t}_$(basename "$f")"   # not into out.tgz: 16 MiB a file comes back
  done
done
d1=/tmp/strata-draft-l1/strata-tiny-draft d2=/tmp/strata-draft-l2/strata-tiny-draft
[ -f $d1/config.json ] && [ -f $d2/config.json ] || exit 1
r=warm
spec_one shipped_warm models/strata-tiny-draft off,plain,ngram,draft
r=1
spec_one shipped_r1 models/strata-tiny-draft off,plain,draft
spec_one l2_r1 $d2 off,plain,draft
spec_one l1_r1 $d1 off,plain,draft
r=2
spec_one l1_r2 $d1 off,plain,draft
spec_one l2_r2 $d2 off,plain,draft
spec_one shipped_r2 models/strata-tiny-draft off,plain,draft
