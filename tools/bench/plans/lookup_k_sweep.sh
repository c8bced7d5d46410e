# device_call.sh plan (run 134): --spec-lookup-k swept after run 133, where 15 (copies up to 16-row windows)
# cut the verify windows by a fifth to two fifths but made the draft model's windows slower and uneven
# (0.23-0.33 ms against 0.22; strata-tiny's target windows: 8 rows 0.177 ms, 12 0.213, 16 0.223). The
# speculation GPU tests first; then `strata bench spec --spec off,plain,ngram,draft` at --spec-lookup-k 4, 7
# (the cheap rows, no reach past them), 11 and 15, ROUNDS (4) rounds after a warm-up, the order rotated
# round by round; then 4, 7 and 15 at 256 tokens.
$S $B info
TEST_FILTER="CUDA:*" $S $B test || true
. tools/bench/plans/lib.sh
MODES=off,plain,ngram,draft
r=warm
spec_cfg warm SPEC_LOOKUP_K=15
orders=("4 7 11 15" "15 11 7 4" "7 15 4 11" "11 4 15 7")
for r in $(seq "${ROUNDS:-4}"); do
  for lk in ${orders[$(((r - 1) % 4))]}; do spec_cfg "lk$lk" SPEC_LOOKUP_K=$lk; done
done
r=t256
for lk in 4 7 15; do spec_cfg "lk$lk" SPEC_LOOKUP_K=$lk TOKENS=256; done
issue9_on_h200 1
