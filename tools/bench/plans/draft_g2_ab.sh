# device_call.sh plan (written for run 141, not yet run): the two-layer draft grown and trained in run 140
# (`TRAIN_TAGS=g2 ... plans/draft_copy.sh`; its archive as .devcarry/g2.tgz, unpacked to /tmp/strata-draft-g2)
# against the shipped one-layer draft, each with lookup's own proposals on matches of 1+ or 3+ tokens
# (--spec-draft-lookup-min 1 / 3), and g2 with 3 and --spec-draft-critical 2 (the CPU simulation's best: 81
# windows on the repetitive prompts against 90), rotated ROUNDS (3) times after a warm-up; then every GPU
# test and the two-layer draft at 256 tokens and at batch 1 and 8. Carry .devcarry with bin.txz, models.txz
# and g2.tgz (63.7 MiB with the tree, of the 64 a call carries: keep nothing else in it).
$S $B info
. tools/bench/plans/lib.sh
g2=/tmp/strata-draft-g2/strata-tiny-draft
if [ ! -f $g2/config.json ]; then mkdir -p /tmp/strata-draft-g2 && tar xzf .devcarry/g2.tgz -C /tmp/strata-draft-g2; fi
shipped=models/strata-tiny-draft
SPEC_LOOKUP_MIN=3 spec_one warm $g2 off,plain,draft
# one DRAFT MIN [CRITICAL]
one() {
  SPEC_LOOKUP_MIN=$2 SPEC_CRITICAL=${3:-} spec_one "$1_m$2${3:+_c$3}_r$r" "$([ "$1" = g2 ] && echo $g2 || echo $shipped)" \
    off,plain,draft
}
for r in $(seq "${ROUNDS:-3}"); do
  if [ $((r % 2)) = 1 ]; then one l1 1; one l1 3; one g2 1; one g2 3; one g2 3 2
  else one g2 3 2; one g2 3; one g2 1; one l1 3; one l1 1; fi
done
$S $B test || true
TOKENS=256 spec_one g2_t256 $g2 off,plain,ngram,draft
SPEC_BATCH=1,8 spec_one g2_b8 $g2 off,plain,ngram,draft
