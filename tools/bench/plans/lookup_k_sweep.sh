# device_call.sh plan (run 134): --spec-lookup-k swept after run 133, where 15 (copies up to 16-row windows)
# cut the verify windows by a fifth to two fifths but made the draft model's windows slower and uneven
# (0.23-0.33 ms against 0.22; strata-tiny's target windows: 8 rows 0.177 ms, 12 0.213, 16 0.223). One
# suspect: the draft's chain windows that feed a long catch-up and a long copy (17-42 rows in the CPU
# simulation) take cuBLAS, whose algorithms are timed on first use of each row count; `c1` is 15 with one
# candidate (STRATA_GEMM_CANDIDATES=1, nothing timed). The speculation GPU tests first; then `strata bench
# spec --spec off,plain,ngram,draft` at --spec-lookup-k 4, 7 (the cheap rows, no reach past them), 15, c1 and
# z4 (15 with a switch only run 134's binaries had, in no commit, STRATA_LOOKUP_LAZY=4: a lookup proposal of 4+
# tokens runs no draft chain beside its window, the draft catching up when it next drafts), ROUNDS (4) rounds
# after a warm-up, the order rotated round by round; then 4, 7, 15 and z4 at 256 tokens.
$S $B info
TEST_FILTER="CUDA:*" $S $B test || true
. tools/bench/plans/lib.sh
MODES=off,plain,ngram,draft
r=warm
spec_cfg warm SPEC_LOOKUP_K=15
cfg() {
  case $1 in
    c1) spec_cfg c1 SPEC_LOOKUP_K=15 STRATA_GEMM_CANDIDATES=1 ;;
    z4) spec_cfg z4 SPEC_LOOKUP_K=15 STRATA_LOOKUP_LAZY=4 ;;
    *) spec_cfg "lk$1" SPEC_LOOKUP_K="$1" ;;
  esac
}
spec_rounds cfg "4 7 15 c1 z4" "z4 c1 15 7 4" "7 z4 4 c1 15" "15 4 z4 7 c1"
r=t256
export TOKENS=256
for v in 4 7 15 z4; do cfg "$v"; done
unset TOKENS
issue9_on_h200 1
