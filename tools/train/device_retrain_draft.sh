#!/bin/bash
# One GPU-machine call: retrain strata-tiny's draft against the shipped models/strata-tiny (retrain_draft.py)
# and bring it back through $OUT (draft.tgz, spec_section.md, retrain_report.json, retrain.log).
#   bash tools/train/device_retrain_draft.sh [retrain_draft.py options, e.g. --draft-seconds 300 --draft-layers 2]
# Here: tar xzf draft.tgz -C models, and put spec_section.md in place of models/strata-tiny/README.md's
# "## Speculative decoding with strata-tiny-draft" section (tools/train/apply_draft.py does both).
set -uo pipefail
: "${OUT:?device_retrain_draft.sh writes into \$OUT}"
cd "$(dirname "$0")/../.."
work=/tmp/strata-draft
timeout 560 python3 tools/train/retrain_draft.py --target models/strata-tiny --out "$work" "$@" > "$OUT/retrain.log" 2>&1
rc=$?
echo "device_retrain_draft.sh: retrain exited $rc after ${SECONDS}s"
if [ -f "$work/strata-tiny-draft/model.safetensors" ]; then
  tar czf "$OUT/draft.tgz" -C "$work" strata-tiny-draft
  cp "$work/spec_section.md" "$work/retrain_report.json" "$OUT/" 2>/dev/null
fi
grep -E "acceptance|loss|steps" "$OUT/retrain.log" | tail -8
exit $rc
