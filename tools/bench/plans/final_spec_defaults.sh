# device_call.sh plan: the committed build as the server runs it, for issue 6's record: every GPU test, then
# `strata bench spec` at batch 1 and 8 (`--spec off,plain,ngram,draft`, k 4, 128 tokens, greedy), ROUNDS (3)
# times after an unrecorded warm-up, and once at 256 tokens; then issue 9's benchmark when the card is an H200.
$S $B info
$S $B test || true
. tools/bench/plans/lib.sh
MODES=off,plain,ngram,draft
r=warm
spec_cfg default TOKENS=128
for r in $(seq "${ROUNDS:-3}"); do spec_cfg default SPEC_BATCH=1,8; done
r=t256
spec_cfg default TOKENS=256
issue9_on_h200 1
