#!/bin/bash
# The whole strata-tiny training run on the GPU machine: corpus, tokenizer, target, draft, goldens, cards.
#   bash tools/train/train_all.sh OUTDIR [--smoke] [train_tiny.py options]
# Writes OUTDIR/strata-tiny, OUTDIR/strata-tiny-draft, OUTDIR/train_report.json, OUTDIR/train.log.
set -euo pipefail
out=${1:?usage: train_all.sh OUTDIR [--smoke] [options]}
shift
mkdir -p "$out"
export PYTHONUNBUFFERED=1
export TOKENIZERS_PARALLELISM=true
here=$(cd "$(dirname "$0")" && pwd)
python3 "$here/train_tiny.py" --out "$out" "$@" 2>&1 | tee "$out/train.log"
