#!/bin/bash
# Dry-runs train_tiny.py's logic end to end on a machine without a GPU, transformers or tokenizers: stand-ins
# for those two libraries (a byte tokenizer and a tiny causal model, here) and real torch on the CPU
# (Debian: apt-get install python3-torch python3-numpy). It checks the glue (shapes, files, report, cards),
# not the libraries' APIs or the model's quality: the GPU machine's --smoke run does that.
#   bash tools/train/dryrun/dry_run.sh [OUTDIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-/tmp/strata-train-dryrun}
rm -rf "$out"
PYTHONPATH="$here" PYTHONUNBUFFERED=1 /usr/bin/python3 "$here/../train_tiny.py" --out "$out" --smoke --device cpu \
  --minutes 0.05 --draft-seconds 2
for f in strata-tiny/config.json strata-tiny/golden.json strata-tiny/README.md strata-tiny/tokenizer.json \
         strata-tiny-draft/config.json train_report.json; do
  [ -f "$out/$f" ] || { echo "dry_run.sh: $out/$f is missing" >&2; exit 1; }
done
echo "dry_run.sh: ok"
