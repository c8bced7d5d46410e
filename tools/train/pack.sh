#!/bin/bash
# Packs a finished training OUTDIR for the trip back from the GPU machine, whose $OUT returns at most 8 files
# of at most 16 MiB each and 64 MiB in all: one gzipped tar split into 15 MiB parts.
#   bash tools/train/pack.sh OUTDIR DEST      -> DEST/strata-tiny.tgz.part-aa, -ab, ...
# Unpack here with: cat DEST/strata-tiny.tgz.part-* | tar xzf - -C models
set -euo pipefail
src=${1:?usage: pack.sh OUTDIR DEST}
dest=${2:?usage: pack.sh OUTDIR DEST}
for f in strata-tiny/config.json strata-tiny/model.safetensors strata-tiny-draft/config.json \
         strata-tiny-draft/model.safetensors; do
  [ -f "$src/$f" ] || { echo "pack.sh: $src/$f is missing" >&2; exit 1; }
done
# A run whose golden failed still ships its models (train_report.json says what failed).
[ -f "$src/strata-tiny/golden.json" ] || echo "pack.sh: warning: no strata-tiny/golden.json" >&2
mkdir -p "$dest"
tar czf - -C "$src" strata-tiny strata-tiny-draft | split -b 15M -a 2 - "$dest/strata-tiny.tgz.part-"
[ -f "$src/train_report.json" ] && cp "$src/train_report.json" "$dest/train_report.json"
total=$(cat "$dest"/strata-tiny.tgz.part-* | wc -c)
parts=$(ls "$dest"/strata-tiny.tgz.part-* | wc -l)
echo "pack.sh: $parts parts, $total bytes"
if [ "$total" -gt $((60 * 1024 * 1024)) ] || [ "$parts" -gt 5 ]; then
  # Parts that cannot all come back are worse than none: drop them so the report and logs still do.
  rm -f "$dest"/strata-tiny.tgz.part-*
  echo "pack.sh: too big to come back from the device machine (limit 64 MiB, 8 files); parts removed" >&2
  exit 1
fi
