# device_call.sh plan (run 128): what a round whose proposal prompt lookup made waits for (STRATA_LOOKUP_MODE, an
# experiment switch of the build run 128 measured, in no commit: on a committed build every setting runs
# `defer`): `wait` for its chain's first window (run 127), `now` (its chain launched at once, all
# steps ahead, nothing waited for), `defer` (the same chain launched after the target's verify window, in
# while_verifying). ROUNDS (4) rounds after an unrecorded warm-up, the order rotated each round; `strata bench
# spec` at batch 1, 128 tokens, `--spec off,plain,ngram,draft`, the shipped token draft; then each at 256
# tokens and at batch 1 and 2 greedy and seeded. Issue 9's benchmark first when the card is an H200; with
# WITH_TESTS set, every GPU test last.
$S $B info
. tools/bench/plans/lib.sh
issue9_on_h200 1
MODES=off,plain,ngram,draft
spec_rotate %s STRATA_LOOKUP_MODE wait now defer
MODES=off,plain,draft
r=t256
for m in wait defer; do spec_cfg "$m" TOKENS=256 STRATA_LOOKUP_MODE=$m; done
r=b12
for m in wait defer; do spec_cfg "$m" SPEC_BATCH=1,2 SPEC_SAMPLING=greedy,seeded STRATA_LOOKUP_MODE=$m; done
[ -z "${WITH_TESTS:-}" ] || $S $B test || true
