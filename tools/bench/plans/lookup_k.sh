# device_call.sh plan: k (--spec-k 4, 5, 6) for the draft model now that a round whose proposal prompt lookup
# made waits for nothing (run 128; committed in 1c30669), ROUNDS (3) rounds after an
# unrecorded warm-up, the order rotated each round; `strata bench spec` at batch 1, 128 tokens, `--spec
# off,plain,draft`, the shipped token draft; then k 4 and 6 at 256 tokens.
$S $B info
. tools/bench/plans/lib.sh
MODES=off,plain,draft
ROUNDS=${ROUNDS:-3} spec_rotate k%s SPEC_K 4 5 6
r=t256
for k in 4 6; do spec_cfg "k$k" SPEC_K=$k TOKENS=256; done
