# device_call.sh plan (run 87): run 86's two changes apart, by measurement switches of that build only (the
# committed code keeps the early copies without a switch and has no early merge trigger):
# STRATA_ATTN_KV_PREWAIT (the tensor-core decode attention copies the K/V rows its window did not write before
# pdl_wait()) and STRATA_MERGE_EARLY (the split merge lets the o projection launch before its own wait), each
# 0 or 1, alternated at 1B, 8B and strata-tiny; the build before them (.devcarry/old.txz, 8613fe0) once a round.
$S $B info
mkdir -p .devcarry/old && tar xJf .devcarry/old.txz -C .devcarry/old
[ -f /tmp/llama-1b/config.json ] || python3 tools/bench/random_llama_gpu.py --shape 1b --out /tmp/llama-1b >/dev/null
[ -f /tmp/llama-8b/config.json ] || python3 tools/bench/random_llama_gpu.py --shape 8b --out /tmp/llama-8b >/dev/null
one() {  # label binary model flags...
  local label=$1 b=$2 m=$3; shift 3
  LD_LIBRARY_PATH=$B/lib timeout 150 "$b" --model "$m" --prompt 256 --tokens 256 --prefill 16 "$@" 2>&1 |
    grep -E "^decode" | sed "s#^#[$label] #" | tee -a "$OUT/ab_prewait.log"
}
for r in 1 2 3; do
  for m in /tmp/llama-1b /tmp/llama-8b; do
    [ "$m" = /tmp/llama-8b ] && [ $r = 3 ] && continue
    one "${m#/tmp/llama-} old r$r" .devcarry/old/strata_bench_cuda $m --batch 1
    for v in "0 0" "1 0" "0 1" "1 1"; do
      set -- $v
      STRATA_ATTN_KV_PREWAIT=$1 STRATA_MERGE_EARLY=$2 one "${m#/tmp/llama-} prewait=$1 merge_early=$2 r$r" "$B/strata_bench_cuda" $m --batch 1
    done
  done
done
for v in "0 0" "1 0" "0 1" "1 1"; do
  set -- $v
  STRATA_ATTN_KV_PREWAIT=$1 STRATA_MERGE_EARLY=$2 one "tiny prewait=$1 merge_early=$2" "$B/strata_bench_cuda" models/strata-tiny --batch 1,5,8 --gemm-min-rows 17
done
