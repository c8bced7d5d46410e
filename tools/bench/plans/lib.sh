# Sourced by the A/B plans: the random 1B / 8B checkpoints (made once a machine), and one decode run.
# models_ready SHAPE...: /tmp/llama-SHAPE from tools/bench/random_llama_gpu.py unless it is there.
models_ready() {
  local s
  for s in "$@"; do
    [ -f /tmp/llama-$s/config.json ] || python3 tools/bench/random_llama_gpu.py --shape "$s" --out /tmp/llama-$s >/dev/null
  done
}
# one LABEL MODEL FLAGS...: a strata_bench_cuda decode run ($BENCH, default $B's) whose decode lines, tagged
# [LABEL], go to the screen and to $OUT/$AB_LOG.
one() {
  local label=$1 m=$2; shift 2
  LD_LIBRARY_PATH=$B/lib timeout 150 "${BENCH:-$B/strata_bench_cuda}" --model "$m" --prompt 256 --tokens 256 \
    --prefill 16 "$@" 2>&1 | grep -E "^decode" | sed "s#^#[$label] #" | tee -a "$OUT/$AB_LOG"
}
# issue9 ROUNDS: issue 9's benchmark (decode at batch 1, prefill of 512 and 4096 tokens) at 1B and 8B, ROUNDS
# times in turn, to $OUT/bench_issue9.log (the models from models_ready).
issue9() {
  local r m
  for r in $(seq "$1"); do
    for m in 1b 8b; do
      echo "--- issue9 $m r$r" | tee -a "$OUT/bench_issue9.log"
      LD_LIBRARY_PATH=$B/lib timeout 200 "$B/strata_bench_cuda" --model /tmp/llama-$m --prompt 256 --tokens 256 \
        --prefill 512,4096 2>&1 | grep -E "^(copy|gemm|decode|prefill)" | tee -a "$OUT/bench_issue9.log"
    done
  done
}
# issue9_on_h200 ROUNDS: issue9 ROUNDS (after models_ready 1b 8b) when the card is an H200, issue 9's card.
issue9_on_h200() {
  nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || return 0
  models_ready 1b 8b
  issue9 "$1"
}
# NEWDRAFT: run 115's retrained strata-tiny draft, unpacked from .devcarry/newdraft.tgz by newdraft_ready.
NEWDRAFT=.devcarry/newdraft/strata-tiny-draft
newdraft_ready() {
  [ -d "$NEWDRAFT" ] || { mkdir -p .devcarry/newdraft && tar xzf .devcarry/newdraft.tgz -C .devcarry/newdraft; }
}
# spec_one LABEL DRAFT [MODES] [LOG]: one `strata bench spec` at batch ${SPEC_BATCH:-1} (${SPEC_SAMPLING:-greedy}, k ${SPEC_K:-4},
# ${TOKENS:-128} tokens, the spec prompts, --spec-draft-critical $SPEC_CRITICAL, --spec-draft-lookup
# $SPEC_LOOKUP, --spec-lookup-k $SPEC_LOOKUP_K and --spec-draft-lookup-min $SPEC_LOOKUP_MIN where set) with the draft model
# DRAFT, modes MODES (off,draft); lines tagged [LABEL], to the screen and $OUT/LOG (spec.log), JSON rows to
# $OUT/spec_LABEL.json. The caller's environment (STRATA_*) passes through.
spec_one() {
  local label=$1 d=$2 modes=${3:-off,draft} log=${4:-spec.log}
  LD_LIBRARY_PATH=$B/lib timeout 120 "$B/strata" bench spec --model models/strata-tiny --draft-model "$d" \
    ${SPEC_CRITICAL:+--spec-draft-critical "$SPEC_CRITICAL"} ${SPEC_LOOKUP:+--spec-draft-lookup "$SPEC_LOOKUP"} \
    ${SPEC_LOOKUP_K:+--spec-lookup-k "$SPEC_LOOKUP_K"} ${SPEC_LOOKUP_MIN:+--spec-draft-lookup-min "$SPEC_LOOKUP_MIN"} \
    --device cuda --batch "${SPEC_BATCH:-1}" --spec "$modes" --spec-k "${SPEC_K:-4}" --max-tokens "${TOKENS:-128}" --sampling "${SPEC_SAMPLING:-greedy}" \
    --prompts tools/bench/spec_prompts.json --json "$OUT/spec_$label.json" 2>&1 | grep -v " info " |
    sed "s#^#[$label] #" | tee -a "$OUT/$log"
}
# spec_drafts ROUNDS MODES LOG DRAFT...: spec_one with each DRAFT in turn, ROUNDS times, labelled by the draft's
# parent folder and the round.
spec_drafts() {
  local rounds=$1 modes=$2 log=$3 r d
  shift 3
  for r in $(seq "$rounds"); do
    for d in "$@"; do
      spec_one "$(basename "$(dirname "$d")")_r$r" "$d" "$modes" "$log"
    done
  done
}
# draft_start: the GPU tests of chains, drafts and features, and run 121's feature draft (.devcarry/feature121)
# into models/ when it was carried.
draft_start() {
  TEST_FILTER="*chain*,*draft*,*feature*" $S $B test || true
  if [ -d .devcarry/feature121/strata-tiny-feature-draft ]; then
    cp -r .devcarry/feature121/strata-tiny-feature-draft models/
  fi
}
# spec_cfg LABEL SETTING...: spec_one with the shipped token draft and, when draft_start found it, run 121's
# feature draft, each labelled DRAFT_LABEL_r$r, with the settings (VAR=value: SPEC_K, SPEC_CRITICAL,
# SPEC_BATCH, SPEC_SAMPLING, SPEC_LOOKUP, TOKENS, STRATA_*) exported, modes ${MODES:-off,draft}.
spec_cfg() {
  local label=$1 d
  shift
  for d in strata-tiny-draft strata-tiny-feature-draft; do
    if [ -d "models/$d" ]; then ([ $# -eq 0 ] || export "$@"; spec_one "${d}_${label}_r$r" "models/$d" "${MODES:-off,draft}"); fi
  done
}
# spec_ab LABEL_A SETTING_A LABEL_B SETTING_B: spec_cfg once unrecorded (warm-up), then ROUNDS (4) rounds of the
# two settings (one VAR=value each), the order alternated round by round (ABBA): run 125 found the setting
# run second in a round favoured.
spec_ab() {
  r=warm
  spec_cfg warm
  for r in $(seq "${ROUNDS:-4}"); do
    if [ $((r % 2)) = 1 ]; then
      spec_cfg "$1" "$2"
      spec_cfg "$3" "$4"
    else
      spec_cfg "$3" "$4"
      spec_cfg "$1" "$2"
    fi
  done
}
# spec_rounds FN ORDER...: ROUNDS (4) rounds; round r calls FN with each value of the ORDER numbered (r - 1) modulo
# their count (each ORDER a space-separated list of values), r set for the labels.
spec_rounds() {
  local fn=$1 v
  shift
  local orders=("$@")
  for r in $(seq "${ROUNDS:-4}"); do
    for v in ${orders[$(((r - 1) % ${#orders[@]}))]}; do "$fn" "$v"; done
  done
}
# spec_rotate LABEL_FMT VAR A B C: spec_cfg once unrecorded (warm-up, as spec_ab), then ROUNDS (4) rounds of
# spec_cfg with VAR set to each of A, B and C, the order changed round by round (the six orders in turn),
# each labelled LABEL_FMT (printf) of the value.
spec_rotate() {
  local fmt=$1 var=$2 v
  local orders=("$3 $4 $5" "$5 $4 $3" "$4 $5 $3" "$3 $5 $4" "$5 $3 $4" "$4 $3 $5")
  r=warm
  spec_cfg warm
  for r in $(seq "${ROUNDS:-4}"); do
    for v in ${orders[$(((r - 1) % 6))]}; do
      # shellcheck disable=SC2059
      spec_cfg "$(printf "$fmt" "$v")" "$var=$v"
    done
  done
}
