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
# The draft alone, retrained against the target just made (retrain_draft.py), and installed by apply_draft.py
# into a copy of the tree's layout.
PYTHONPATH="$here" PYTHONUNBUFFERED=1 /usr/bin/python3 "$here/../retrain_draft.py" --target "$out/strata-tiny" \
  --out "$out/retrain" --smoke --device cpu --corpus-mb 3 --draft-seconds 2 --draft-layers 2 --draft-hidden 128 \
  --draft-intermediate 256 --tokens-per-step 16384 --self-distill-seconds 1 --self-distill-copy-frac 0.5 \
  --class-prompts "$here/../../bench/spec_prompts.json" --compare-draft "$out/strata-tiny-draft"
/usr/bin/python3 -c "import json, sys; r = json.load(open(sys.argv[1])); c = r['class_acceptance']; \
assert set(c) == {'new', 'strata-tiny-draft'} and set(c['new']) == {'novel', 'repetitive'}, c; \
assert r['draft']['self_distillation']['copy_sequences'] > 0, r['draft']['self_distillation']" \
  "$out/retrain/retrain_report.json"
for f in retrain/strata-tiny-draft/config.json retrain/strata-tiny-draft/README.md retrain/spec_section.md \
         retrain/retrain_report.json; do
  [ -f "$out/$f" ] || { echo "dry_run.sh: $out/$f is missing" >&2; exit 1; }
done
# Training continued from that draft (--init) with one layer more (--grow-layers, which checks that the grown
# draft starts with the given one's logits), brought back in parts as device_retrain_draft.sh packs it.
PYTHONPATH="$here" PYTHONUNBUFFERED=1 /usr/bin/python3 "$here/../retrain_draft.py" --target "$out/strata-tiny" \
  --out "$out/retrain2" --smoke --device cpu --corpus-mb 3 --draft-seconds 2 --init "$out/retrain/strata-tiny-draft" \
  --grow-layers 1 --warmup 2 --draft-lr 1e-3 --tokens-per-step 16384 --self-distill-seconds 1 --self-distill-seed 99
grep -q "continued from the draft" "$out/retrain2/strata-tiny-draft/README.md"
/usr/bin/python3 -c "import json, sys; c = json.load(open(sys.argv[1])); assert c['num_hidden_layers'] == 3, c" \
  "$out/retrain2/strata-tiny-draft/config.json"
mkdir -p "$out/tree/tools/train" "$out/tree/models" "$out/back"
cp "$here/../apply_draft.py" "$out/tree/tools/train/"
cp -r "$out/strata-tiny" "$out/strata-tiny-draft" "$out/tree/models/"
tar czf - -C "$out/retrain2" strata-tiny-draft | split -b 4k - "$out/back/draft.tgz.part-"
cp "$out/retrain2/spec_section.md" "$out/back/"
/usr/bin/python3 "$out/tree/tools/train/apply_draft.py" "$out/back"
cmp "$out/tree/models/strata-tiny-draft/README.md" "$out/retrain2/strata-tiny-draft/README.md"
cmp "$out/tree/models/strata-tiny-draft/model.safetensors" "$out/retrain2/strata-tiny-draft/model.safetensors"
grep -q "$(head -3 "$out/retrain2/spec_section.md" | tail -1)" "$out/tree/models/strata-tiny/README.md"
# The feature-reading draft experiment (eagle_draft.py) against that target, compared with its token draft.
PYTHONPATH="$here" PYTHONUNBUFFERED=1 /usr/bin/python3 "$here/../eagle_draft.py" --target "$out/strata-tiny" \
  --out "$out/eagle" --smoke --device cpu --corpus-mb 3 --seconds 3 --self-distill-seconds 1 \
  --shipped-draft "$out/strata-tiny-draft"
/usr/bin/python3 -c "import json, sys; r = json.load(open(sys.argv[1]))['acceptance']; assert r['eagle']['rounds'] > 0 and r['shipped']['rounds'] > 0, r" \
  "$out/eagle/eagle_report.json"
grep -q '"StrataFeatureDraft"' "$out/eagle/strata-tiny-feature-draft/config.json"
echo "dry_run.sh: ok"
