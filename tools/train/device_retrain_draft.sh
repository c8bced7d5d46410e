#!/bin/bash
# One GPU-machine call: retrain strata-tiny's draft against the shipped models/strata-tiny (retrain_draft.py)
# and bring it back through $OUT (draft.tgz.part-aa.., spec_section.md, retrain_report.json, retrain.log; the
# archive in parts of 15 MiB, under what one file back may hold).
#   bash tools/train/device_retrain_draft.sh [retrain_draft.py options, e.g. --draft-seconds 300 --draft-layers 2]
# TAG=name puts the run's work directory and its files under $OUT/name, so that two runs with different
# options can share one call (side by side: each is a small model and leaves most of the GPU idle);
# RETRAIN_TIMEOUT (560 s) bounds the run.
# Here: cat draft.tgz.part-* | tar xzf - -C models, and put spec_section.md in place of models/strata-tiny/README.md's
# "## Speculative decoding with strata-tiny-draft" section (tools/train/apply_draft.py does both).
set -uo pipefail
: "${OUT:?device_retrain_draft.sh writes into \$OUT}"
cd "$(dirname "$0")/../.."
tag=${TAG:-}
work=/tmp/strata-draft${tag:+-$tag}
dest=$OUT${tag:+/$tag}
mkdir -p "$dest"
timeout "${RETRAIN_TIMEOUT:-560}" python3 tools/train/retrain_draft.py --target models/strata-tiny --out "$work" "$@" \
  > "$dest/retrain.log" 2>&1
rc=$?
echo "device_retrain_draft.sh${tag:+ ($tag)}: retrain exited $rc after ${SECONDS}s"
if [ -f "$work/strata-tiny-draft/model.safetensors" ]; then
  tar czf - -C "$work" strata-tiny-draft | split -b 15m - "$dest/draft.tgz.part-"
  cp "$work/spec_section.md" "$work/retrain_report.json" "$dest/" 2>/dev/null
fi
grep -E "acceptance|loss|steps" "$dest/retrain.log" | tail -8
exit $rc
