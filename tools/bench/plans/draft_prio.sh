# device_call.sh plan: the CUDA stream priorities (STRATA_CUDA_STREAM_PRIORITY=1: the target's stream at the
# device's greatest priority, the draft's at its least) against the defaults, for issue 6's draft-model row.
# `strata bench spec` at batch 1, 128 tokens, `--spec off,plain,draft`, the shipped token draft (and run 121's
# feature draft when .devcarry/feature121 is carried), ROUNDS (3) times in each of: the defaults, prio, prio
# with k 6, and the target's verify windows on the fused GEMV (STRATA_TARGET_FUSED_GEMV_ROWS=16); then the
# defaults and prio at 256 tokens, every GPU test, and issue 9's benchmark when the card is an H200.
$S $B info
. tools/bench/plans/lib.sh
draft_start
MODES=off,plain,draft
for r in $(seq "${ROUNDS:-3}"); do
  spec_cfg default SPEC_K=4
  spec_cfg prio STRATA_CUDA_STREAM_PRIORITY=1
  spec_cfg prio_k6 STRATA_CUDA_STREAM_PRIORITY=1 SPEC_K=6
  spec_cfg fg16 STRATA_TARGET_FUSED_GEMV_ROWS=16
done
r=t256
spec_cfg default TOKENS=256
spec_cfg prio TOKENS=256 STRATA_CUDA_STREAM_PRIORITY=1
$S $B test || true
issue9_on_h200 1
