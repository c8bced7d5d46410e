# device_call.sh plan: prompt lookup in the rounds that wait for drafts (--spec-draft-lookup: the n-gram
# drafter is asked first, and the draft model drafts ahead past what it found) on and off, for issue 6's
# draft-model row (run 127's first calls ran it on the prototype, where STRATA_DRAFT_LOOKUP=1 turned it on).
# `strata bench spec` at batch 1, 128 tokens, `--spec off,plain,ngram,draft`, the shipped token draft, ROUNDS
# (4) rounds in ABBA order after an unrecorded warm-up; then both at 256 tokens, and at batch 1 and 2 with
# seeded sampling too; with WITH_TESTS set, every GPU test after.
$S $B info
. tools/bench/plans/lib.sh
MODES=off,plain,ngram,draft
spec_ab base SPEC_LOOKUP=false lookup SPEC_LOOKUP=true
MODES=off,plain,draft
r=t256
spec_cfg base TOKENS=256 SPEC_LOOKUP=false
spec_cfg lookup TOKENS=256 SPEC_LOOKUP=true
r=b12
spec_cfg base SPEC_BATCH=1,2 SPEC_SAMPLING=greedy,seeded SPEC_LOOKUP=false
spec_cfg lookup SPEC_BATCH=1,2 SPEC_SAMPLING=greedy,seeded SPEC_LOOKUP=true
[ -z "${WITH_TESTS:-}" ] || $S $B test || true
