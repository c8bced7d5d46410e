# device_call.sh plan of run 118 (docs/PERFORMANCE.md). After c68f7d6 (a slot keeps its own blocks when another
# sequence cached the same tokens): the GPU cases of speculation (the engine's, random verify windows against
# single rows, the cached-block case) and of the autotuned GEMM; then
# the bench that found the mismatch (run 115's retrained draft, in .devcarry/newdraft.tgz) and spec1's modes
# with the shipped draft, SPEC_ROUNDS times (default 2); then every GPU case; on an H200, issue 9's benchmark
# too.
$S $B info
. tools/bench/plans/lib.sh
TEST_FILTER="CUDA: *,*autotuned*" $S $B test || true
newdraft_ready
spec_drafts "${SPEC_ROUNDS:-2}" off,plain,ngram,draft spec_fix.log "$NEWDRAFT" models/strata-tiny-draft
TEST_FILTER="" $S $B test || true
issue9_on_h200 2
