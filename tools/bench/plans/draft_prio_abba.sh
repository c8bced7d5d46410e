# device_call.sh plan: the stream priorities on (STRATA_CUDA_STREAM_PRIORITY=1) and off (=0) in ABBA order,
# ROUNDS (4) pairs after one unrecorded warm-up run, because run 125's first two calls each favoured the
# setting run second in a round. `strata bench spec` at batch 1, 128 tokens, `--spec off,plain,draft`, the
# shipped token draft.
$S $B info
. tools/bench/plans/lib.sh
MODES=off,plain,draft
spec_ab prio STRATA_CUDA_STREAM_PRIORITY=1 noprio STRATA_CUDA_STREAM_PRIORITY=0
