# device_call.sh plan: issue 6's draft-model row with the stream priorities (STRATA_CUDA_STREAM_PRIORITY=1: the
# target's stream at the device's greatest priority, the draft's at its least) against without them, and the
# draft settings chosen before the priorities (critical 1, k 4) against their neighbours under them.
# `strata bench spec` at batch 1, 128 tokens, `--spec off,plain,draft`, the shipped token draft, ROUNDS (4)
# times in each of: priorities, none, and with priorities critical 0, critical 2, k 5, k 6; then priorities
# and none at 256 tokens, and priorities at batch 8 with every drafter. (Run 125 ran it on a build with the
# priorities on by default, the first setting labelled `default`.)
$S $B info
. tools/bench/plans/lib.sh
MODES=off,plain,draft
for r in $(seq "${ROUNDS:-4}"); do
  spec_cfg prio STRATA_CUDA_STREAM_PRIORITY=1
  spec_cfg noprio STRATA_CUDA_STREAM_PRIORITY=0
  spec_cfg crit0 SPEC_CRITICAL=0 STRATA_CUDA_STREAM_PRIORITY=1
  spec_cfg crit2 SPEC_CRITICAL=2 STRATA_CUDA_STREAM_PRIORITY=1
  spec_cfg k5 SPEC_K=5 STRATA_CUDA_STREAM_PRIORITY=1
  spec_cfg k6 SPEC_K=6 STRATA_CUDA_STREAM_PRIORITY=1
done
r=t256
spec_cfg prio TOKENS=256 STRATA_CUDA_STREAM_PRIORITY=1
spec_cfg noprio TOKENS=256 STRATA_CUDA_STREAM_PRIORITY=0
r=b8
MODES=off,plain,ngram,draft spec_cfg prio SPEC_BATCH=1,8 STRATA_CUDA_STREAM_PRIORITY=1
