# device_call.sh plan: issue 6's draft-model row with the defaults (drafting ahead on CUDA, the stream,
# --spec-draft-critical 1, k 4) against plain decoding. `strata bench spec` at batch 1, 128 tokens,
# `--spec off,plain,draft`, with the shipped token draft and run 121's feature draft (.devcarry/feature121),
# ROUNDS (3) times in each of: the defaults, the defaults with the target's CUDA stream at the device's
# greatest priority and the draft's at its least (STRATA_CUDA_STREAM_PRIORITY=1), no cap (critical 0), no
# drafting ahead, and k 6 with the defaults; then the defaults at batch 1 and 8 with n-gram too, the same at
# 256 tokens, every GPU test, and issue 9's benchmark when the card is an H200.
$S $B info
. tools/bench/plans/lib.sh
draft_start
MODES=off,plain,draft
for r in $(seq "${ROUNDS:-3}"); do
  spec_cfg default SPEC_K=4
  spec_cfg prio STRATA_CUDA_STREAM_PRIORITY=1
  spec_cfg c0 SPEC_CRITICAL=0
  spec_cfg a0 STRATA_DRAFT_AHEAD=0
  spec_cfg k6 SPEC_K=6
done
r=b18
MODES=off,plain,ngram,draft spec_cfg default SPEC_BATCH=1,8
r=t256
spec_cfg default TOKENS=256
$S $B test || true
issue9_on_h200 1
