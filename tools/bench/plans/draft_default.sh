# device_call.sh plan: issue 6's draft-model row with the defaults (drafting ahead on CUDA, the stream,
# --spec-draft-critical 1, k 4) against plain decoding. `strata bench spec` at batch 1, 128 tokens,
# `--spec off,plain,draft`, with the shipped token draft and run 121's feature draft (.devcarry/feature121),
# ROUNDS (3) times in each of: the defaults, no cap (critical 0), no drafting ahead, and k 6 with the
# defaults; then the defaults at batch 1 and 8 with n-gram too, the same at 256 tokens, every GPU test, and
# issue 9's benchmark when the card is an H200.
$S $B info
. tools/bench/plans/lib.sh
draft_start
# One configuration: settings, then a label; each runs with both drafts.
cfg() {
  local label=$1 d
  shift
  for d in strata-tiny-draft strata-tiny-feature-draft; do
    if [ -d "models/$d" ]; then (export "$@"; spec_one "${d}_${label}_r$r" "models/$d" "${MODES:-off,plain,draft}"); fi
  done
}
for r in $(seq "${ROUNDS:-3}"); do
  cfg default SPEC_K=4
  cfg c0 SPEC_CRITICAL=0
  cfg a0 STRATA_DRAFT_AHEAD=0
  cfg k6 SPEC_K=6
done
r=b18
cfg default SPEC_BATCH=1,8 MODES=off,plain,ngram,draft
r=t256
cfg default TOKENS=256
$S $B test || true
issue9_on_h200 1
