# device_call.sh plan (run 116): strata bench spec at batch 1 (greedy, k 4, the spec1 prompts) with the
# shipped draft (models/strata-tiny-draft) and the retrained one (.devcarry/newdraft/strata-tiny-draft),
# alternated, three rounds; every mode's output is checked against `off` by the bench itself. On an H200,
# issue 9's benchmark too.
$S $B info
. tools/bench/plans/lib.sh
newdraft_ready
spec_drafts 3 off,plain,draft draft_ab.log models/strata-tiny-draft "$NEWDRAFT"
issue9_on_h200 2
