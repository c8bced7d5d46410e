# device_call.sh plan: the draft model's stream (DraftModelDrafter drafting ahead, Backend::extend_ahead) on the
# GPU. The GPU tests of chains, drafts and features; then `strata bench spec` at batch 1 with the shipped token
# draft and run 121's feature draft (.devcarry/feature121), ROUNDS (2) times, in each of: no drafting ahead,
# drafting ahead (the stream), and the stream with at most 2 and 1 drafts on a waiting round
# (--spec-draft-critical), at k 4 and 6; then every GPU test, and issue 9's benchmark when the card is an H200.
$S $B info
. tools/bench/plans/lib.sh
draft_start
# One configuration: STRATA_* settings, then a label; each runs with both drafts.
cfg() {
  local label=$1 d
  shift
  for d in strata-tiny-draft strata-tiny-feature-draft; do
    if [ -d "models/$d" ]; then (export "$@"; spec_one "${d}_${label}_r$r" "models/$d"); fi
  done
}
for r in $(seq "${ROUNDS:-2}"); do
  cfg a0 STRATA_DRAFT_AHEAD=0
  cfg a1 STRATA_DRAFT_AHEAD=1 SPEC_CRITICAL=0
  cfg c2 STRATA_DRAFT_AHEAD=1 SPEC_CRITICAL=2
  cfg c1 STRATA_DRAFT_AHEAD=1 SPEC_CRITICAL=1
  cfg k6a1 SPEC_K=6 STRATA_DRAFT_AHEAD=1 SPEC_CRITICAL=0
  cfg k6c2 SPEC_K=6 STRATA_DRAFT_AHEAD=1 SPEC_CRITICAL=2
done
$S $B test || true
issue9_on_h200 1
