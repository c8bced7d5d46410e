# device_call.sh plan: the draft model's stream (DraftModelDrafter drafting ahead, Backend::extend_ahead) on the
# GPU. The GPU tests of chains, drafts and features; then `strata bench spec` at batch 1 with the shipped token
# draft and run 121's feature draft (.devcarry/feature121), ROUNDS (2) times, in each of: no drafting ahead,
# drafting ahead (the stream), and the stream with at most 2 and 1 drafts on a waiting round
# (--spec-draft-critical), at k 4 and 6; then every GPU test, and issue 9's benchmark when the card is an H200.
$S $B info
. tools/bench/plans/lib.sh
draft_start
for r in $(seq "${ROUNDS:-2}"); do
  spec_cfg a0 STRATA_DRAFT_AHEAD=0
  spec_cfg a1 STRATA_DRAFT_AHEAD=1 SPEC_CRITICAL=0
  spec_cfg c2 STRATA_DRAFT_AHEAD=1 SPEC_CRITICAL=2
  spec_cfg c1 STRATA_DRAFT_AHEAD=1 SPEC_CRITICAL=1
  spec_cfg k6a1 SPEC_K=6 STRATA_DRAFT_AHEAD=1 SPEC_CRITICAL=0
  spec_cfg k6c2 SPEC_K=6 STRATA_DRAFT_AHEAD=1 SPEC_CRITICAL=2
done
$S $B test || true
issue9_on_h200 1
