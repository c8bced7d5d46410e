# device_call.sh plan (run 87): run 86's two changes apart, by measurement switches of that build only (the
# committed code keeps the early copies without a switch and has no early merge trigger):
# STRATA_ATTN_KV_PREWAIT (the tensor-core decode attention copies the K/V rows its window did not write before
# pdl_wait()) and STRATA_MERGE_EARLY (the split merge lets the o projection launch before its own wait), each
# 0 or 1, alternated at 1B, 8B and strata-tiny; the build before them (.devcarry/old.txz, 8613fe0) once a round.
$S $B info
mkdir -p .devcarry/old && tar xJf .devcarry/old.txz -C .devcarry/old
AB_LOG=ab_prewait.log
. tools/bench/plans/lib.sh
models_ready 1b 8b
for r in 1 2 3; do
  for m in /tmp/llama-1b /tmp/llama-8b; do
    [ "$m" = /tmp/llama-8b ] && [ $r = 3 ] && continue
    BENCH=.devcarry/old/strata_bench_cuda one "${m#/tmp/llama-} old r$r" $m --batch 1
    for v in "0 0" "1 0" "0 1" "1 1"; do
      set -- $v
      STRATA_ATTN_KV_PREWAIT=$1 STRATA_MERGE_EARLY=$2 one "${m#/tmp/llama-} prewait=$1 merge_early=$2 r$r" $m --batch 1
    done
  done
done
for v in "0 0" "1 0" "0 1" "1 1"; do
  set -- $v
  STRATA_ATTN_KV_PREWAIT=$1 STRATA_MERGE_EARLY=$2 one "tiny prewait=$1 merge_early=$2" models/strata-tiny --batch 1,5,8 \
    --gemm-min-rows 17
done
