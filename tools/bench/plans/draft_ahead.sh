# device_call.sh plan: drafting ahead (DraftModelDrafter, Backend::run_chain_ahead) on the GPU. The GPU tests of
# chains, drafts and features; then `strata bench spec` at batch 1 with the shipped token draft and run 121's
# feature draft (.devcarry/feature121), each with STRATA_DRAFT_AHEAD=0 and =1 in turn, ROUNDS (2) times; then
# every GPU test, and issue 9's benchmark when the card is an H200.
$S $B info
. tools/bench/plans/lib.sh
draft_start
for r in $(seq "${ROUNDS:-2}"); do
  for d in strata-tiny-draft strata-tiny-feature-draft; do
    for a in 0 1; do
      [ -d "models/$d" ] && STRATA_DRAFT_AHEAD=$a spec_one "${d}_ahead${a}_r$r" "models/$d"
    done
  done
done
$S $B test || true
issue9_on_h200 1
