# device_call.sh plan: a draft model's kernels launched without programmatic dependent launch
# (STRATA_DRAFT_PDL=0, an experiment switch of the build run 129 measured, in no commit: a committed build
# runs both arms with PDL) against with it (=1), ABBA over ROUNDS (4) pairs after an
# unrecorded warm-up: does a draft step's next kernel, resident early under PDL, hold SMs the target's verify
# window beside it wants? `strata bench spec` at batch 1, 128 tokens, `--spec off,plain,ngram,draft`, the
# shipped token draft; then both at 256 tokens; then issue 9's benchmark when the card is an H200.
$S $B info
. tools/bench/plans/lib.sh
MODES=off,plain,ngram,draft
spec_ab pdl STRATA_DRAFT_PDL=1 nopdl STRATA_DRAFT_PDL=0
MODES=off,plain,draft
r=t256
spec_cfg pdl TOKENS=256 STRATA_DRAFT_PDL=1
spec_cfg nopdl TOKENS=256 STRATA_DRAFT_PDL=0
issue9_on_h200 1
