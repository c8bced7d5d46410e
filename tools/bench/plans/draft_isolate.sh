# device_call.sh plan: keeping a draft model's steps beside a verify window from slowing the window (issue 6's
# draft-model row). The draft's kernels in the remote memory-synchronization domain (STRATA_DRAFT_SYNC_DOMAIN=1),
# the draft on a green context of about 16 or 32 SMs and the target on the rest (STRATA_DRAFT_SMS), and both,
# against neither: `strata bench spec` at batch 1, 128 tokens, `--spec off,plain,draft`, the shipped token
# draft, ROUNDS (6) rounds after an unrecorded warm-up, the order of the settings reversed every other round;
# first the GPU test of output with both against output without speculation.
$S $B info
. tools/bench/plans/lib.sh
MODES=off,plain,draft
[ -n "${NO_TEST:-}" ] || TEST_FILTER="*own SMs*,*shipped draft*" $S $B test || true
# The partition's log lines and outputs, once.
(export STRATA_DRAFT_SMS=16 STRATA_DRAFT_SYNC_DOMAIN=1
 LD_LIBRARY_PATH=$B/lib timeout 60 "$B/strata" bench spec --model models/strata-tiny \
   --draft-model models/strata-tiny-draft --device cuda --batch 1 --spec off,draft --spec-k 4 --max-tokens 32 \
   --sampling greedy --prompts tools/bench/spec_prompts.json 2>&1 | grep -iE "green|SMs|error|fail|draft " |
   head -20 | tee "$OUT/partition_check.log") || true
r=warm
spec_cfg warm
cfgs=${CFGS:-"base dom sms16 sms32 sms16dom"}
for r in $(seq "${ROUNDS:-6}"); do
  order=$cfgs
  [ $((r % 2)) = 0 ] && order=$(echo $cfgs | tr ' ' '\n' | tac | tr '\n' ' ')
  for c in $order; do
    case $c in
      base) spec_cfg base ;;
      dom) spec_cfg dom STRATA_DRAFT_SYNC_DOMAIN=1 ;;
      sms16) spec_cfg sms16 STRATA_DRAFT_SMS=16 ;;
      sms32) spec_cfg sms32 STRATA_DRAFT_SMS=32 ;;
      sms16dom) spec_cfg sms16dom STRATA_DRAFT_SMS=16 STRATA_DRAFT_SYNC_DOMAIN=1 ;;
      sms24) spec_cfg sms24 STRATA_DRAFT_SMS=24 ;;
      sms48) spec_cfg sms48 STRATA_DRAFT_SMS=48 ;;
      sms66) spec_cfg sms66 STRATA_DRAFT_SMS=66 ;;
      d32) spec_cfg d32 STRATA_DRAFT_SMS=32 STRATA_DRAFT_SMS_TARGET=0 ;;
      d66) spec_cfg d66 STRATA_DRAFT_SMS=66 STRATA_DRAFT_SMS_TARGET=0 ;;
      d100) spec_cfg d100 STRATA_DRAFT_SMS=100 STRATA_DRAFT_SMS_TARGET=0 ;;
    esac
  done
done
