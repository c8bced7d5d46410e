# device_call.sh plan: the target's stream at the device's greatest priority and the draft's at its least
# (STRATA_CUDA_STREAM_PRIORITY=1) against both at the default priority (=0, the default), with the draft model's
# defaults (drafting ahead, --spec-draft-critical 1, k 4). `strata bench spec` at batch 1, 128 tokens,
# `--spec off,plain,draft`, both drafts, ROUNDS (3) times alternating, after the CUDA tests of chains and drafts.
$S $B info
. tools/bench/plans/lib.sh
draft_start
MODES=off,plain,draft
for r in $(seq "${ROUNDS:-3}"); do
  spec_cfg prio STRATA_CUDA_STREAM_PRIORITY=1
  spec_cfg noprio STRATA_CUDA_STREAM_PRIORITY=0
done
issue9_on_h200 1
