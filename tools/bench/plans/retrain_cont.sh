# device call (run 115): strata-tiny-draft trained on from the shipped draft for another 300 s (retrain_draft.py
# --init), with 70 % of each batch from strata-tiny's greedy continuations of new prompts; the acceptance
# measure's prompts are the first retrain's (--seed 1234).
#   OUT=... bash tools/bench/plans/retrain_cont.sh
[ -f models/strata-tiny/config.json ] || tar xJf .devcarry/models.txz
nvidia-smi --query-gpu=name --format=csv,noheader
RETRAIN_TIMEOUT=560 bash tools/train/device_retrain_draft.sh --init models/strata-tiny-draft --draft-lr 1e-3 \
  --warmup 30 --draft-seconds 300 --self-distill-seconds 110 --self-distill-frac 0.7 --self-distill-seed 8191
