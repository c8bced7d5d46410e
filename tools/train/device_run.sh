#!/bin/bash
# The one GPU-machine call for strata-tiny: a --smoke run of every stage, then the full run, then the models
# packed into $OUT for the trip back (at most 8 files of 16 MiB, 64 MiB in all: this leaves 7).
#   bash tools/train/device_run.sh [train_tiny.py options for the full run, e.g. --minutes 3.5]
# $OUT then holds: smoke.log, train.log, train_report.json, strata-tiny.tgz.part-aa.. (about 4 parts).
# Here: cat strata-tiny.tgz.part-* | tar xzf - -C models   (-> models/strata-tiny, models/strata-tiny-draft)
set -uo pipefail
: "${OUT:?device_run.sh writes into \$OUT}"
cd "$(dirname "$0")/../.."
nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv,noheader 2>&1 | head -2
python3 -c "import torch, transformers, tokenizers, numpy; print('torch', torch.__version__, 'transformers',
  transformers.__version__, 'tokenizers', tokenizers.__version__, 'numpy', numpy.__version__)"
if ! timeout 150 bash tools/train/train_all.sh /tmp/strata-smoke --smoke > "$OUT/smoke.log" 2>&1; then
  echo "device_run.sh: the smoke run failed after ${SECONDS}s; no full run"
  tail -60 "$OUT/smoke.log"
  exit 1
fi
echo "device_run.sh: smoke run ok after ${SECONDS}s"
grep -E "tokens:|loss|acceptance|golden:|sizes" "$OUT/smoke.log" | tail -12
timeout 480 bash tools/train/train_all.sh /tmp/strata-tiny "$@" > "$OUT/train.log" 2>&1
rc=$?
echo "device_run.sh: full run exited $rc after ${SECONDS}s"
bash tools/train/pack.sh /tmp/strata-tiny "$OUT" || rc=1
tail -45 "$OUT/train.log"
exit $rc
