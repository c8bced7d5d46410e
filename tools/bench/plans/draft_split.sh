# device_call.sh plan: where a round's drafting time goes with the defaults (issue 6's draft-model row):
# `strata bench spec` at batch 1, `--spec off,plain,draft`, the shipped token draft, ROUNDS (4) times at 128
# tokens and once at 256, with the JSON's draft_seconds_ahead (rounds whose proposals all came from the
# stream, whose drafting time is waiting for the stream's last steps and the host's turn) beside
# draft_seconds (all rounds); then every GPU test.
$S $B info
. tools/bench/plans/lib.sh
MODES=off,plain,draft
for r in $(seq "${ROUNDS:-4}"); do
  spec_cfg default
done
r=t256
spec_cfg default TOKENS=256
$S $B test || true
